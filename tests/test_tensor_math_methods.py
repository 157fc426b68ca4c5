"""Tensor's element-wise math, comparisons, predicates and in-place variants (`autograd/tensor_math.py`),
each against torch: values, result dtypes, broadcasting, and gradients (also by central differences)."""
import numpy as np
import pytest
import torch

import seqlab
from helpers import check_op, same_as_torch
from seqlab import backend
from seqlab.autograd import tensor_math

NAN, INF = float("nan"), float("inf")
SPECIAL = [-2.5, -1.5, -0.5, -0.0, 0.0, 0.5, 1.5, 2.5, 2.7, -0.2, INF, -INF, NAN]


def both(values, dtype=None):
    """The same values as a seqlab and a torch tensor."""
    arr = np.asarray(values, dtype=dtype)
    return seqlab.tensor(arr), torch.from_numpy(arr.copy())


# ---- comparisons ----------------------------------------------------------------------------------------
COMPARISONS = ["eq", "ne", "gt", "lt", "ge", "le", "greater", "less", "greater_equal", "less_equal", "not_equal"]
OPERANDS = [  # (self, other): broadcast, mixed kinds, numbers, a 0-d tensor, NaNs
    (np.array([[1.0, NAN, 3.0], [0.1, -1.0, 2.0]], np.float32), np.array([1.0, NAN, 2.0], np.float32)),
    (np.array([1.5, 2.0, -3.0], np.float32), np.array([1, 2, -4], np.int64)),
    (np.array([1, 2, 3], np.int64), 1.5),
    (np.array([0.1, 0.2], np.float32), 0.1),
    (np.array([1.0, 2.0], np.float64), np.array(2.0, np.float32)),
    (np.array([True, False]), np.array([[True], [False]])),
    (np.array([1, 0, 2], np.int32), True),
]


@pytest.mark.parametrize("name", COMPARISONS)
@pytest.mark.parametrize("case", range(len(OPERANDS)))
def test_comparisons_as_torch(name, case):
    a, b = OPERANDS[case]
    s_b = seqlab.tensor(b) if isinstance(b, np.ndarray) else b
    t_b = torch.from_numpy(b.copy()) if isinstance(b, np.ndarray) else b
    out = getattr(seqlab.tensor(a), name)(s_b)
    same_as_torch(out, getattr(torch.from_numpy(a.copy()), name)(t_b))
    assert not out.requires_grad


def test_comparison_of_a_tensor_that_requires_grad_has_no_grad():
    x = seqlab.tensor([1.0, 2.0], requires_grad=True)
    out = x.gt(seqlab.tensor([0.0, 3.0], requires_grad=True))
    assert out.tolist() == [True, False] and not out.requires_grad and out.grad_fn is None


@pytest.mark.parametrize("a, b", [([1, -2], [1.0, -2.0]), ([1.5, 2.0], [1.5, 2.0]), ([1.0, NAN], [1.0, NAN]),
                                  ([1, 2], [1, 2, 3]), ([[1, 2]], [1, 2]), ([1.0, 2.0], [1.0, 2.5])])
def test_equal_as_torch(a, b):
    (sa, ta), (sb, tb) = both(a), both(b)
    got = sa.equal(sb)
    assert got is torch.equal(ta, tb)
    assert tensor_math.equal(sa, sb) is got


ISCLOSE = [
    ([1.0, 1.00001, INF, -INF, NAN, 0.0], [1.0, 1.0, INF, INF, NAN, 1e-9], {}),
    ([1.0, 1.00001, INF, -INF, NAN, 0.0], [1.0, 1.0, INF, INF, NAN, 1e-9], {"equal_nan": True}),
    ([1.0, 1.1, 100.0], [1.05, 1.0, 101.0], {"rtol": 0.02, "atol": 0.0}),
    ([1.0, 1.1, 100.0], [1.05, 1.0, 101.0], {"rtol": 0.0, "atol": 0.06}),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("a, b, kw", ISCLOSE)
def test_isclose_and_allclose_as_torch(a, b, kw, dtype):
    (sa, ta), (sb, tb) = both(a, dtype), both(b, dtype)
    same_as_torch(sa.isclose(sb, **kw), torch.isclose(ta, tb, **kw))
    assert sa.allclose(sb, **kw) is torch.allclose(ta, tb, **kw)
    assert sa[:2].allclose(sb[:2], **kw) is torch.allclose(ta[:2], tb[:2], **kw)


def test_isclose_of_integers_and_bools_and_broadcast():
    (si, ti), (sb, tb) = both([[1, 2, 3]], np.int64), both([1, 2, 4], np.int64)
    same_as_torch(si.isclose(sb), torch.isclose(ti, tb))
    (s1, t1), (s2, t2) = both([True, False]), both([True, True])
    same_as_torch(s1.isclose(s2), torch.isclose(t1, t2))


def test_isclose_errors_as_torch():
    x = seqlab.tensor([1.0, 2.0])
    with pytest.raises(RuntimeError, match="float32 and float64"):
        x.isclose(x.double())
    with pytest.raises(TypeError, match="must be Tensor, not float"):
        x.isclose(1.0)
    with pytest.raises(RuntimeError, match="greater than or equal to zero"):
        x.isclose(x, rtol=-1.0)
    with pytest.raises(TypeError, match="must be Tensor, not list"):
        x.equal([1.0, 2.0])


# ---- predicates -------------------------------------------------------------------------------------------
PREDICATES = ["isnan", "isinf", "isfinite", "isposinf", "isneginf", "signbit", "logical_not", "sgn"]


@pytest.mark.parametrize("name", PREDICATES)
@pytest.mark.parametrize("values, dtype", [(SPECIAL, np.float32), (SPECIAL, np.float64),
                                           ([[3, -1], [0, 7]], np.int64), ([True, False], np.bool_)])
def test_predicates_as_torch(name, values, dtype):
    s, t = both(values, dtype)
    same_as_torch(getattr(s, name)(), getattr(torch, name)(t))
    same_as_torch(getattr(tensor_math, name)(s), getattr(torch, name)(t))


def test_sign_and_sgn_gradients_are_zero_as_torch():
    """torch's gradient is a zero tensor (one that cannot be read as an array): zeros here."""
    check_op(lambda a: a.sgn(), None, [(3, 4)])
    for fn in (lambda a: a.sgn(), tensor_math.sign):
        x = seqlab.tensor([[1.5, -2.0, 0.0]], requires_grad=True)
        out = fn(x)
        assert out.requires_grad and out.grad_fn.name() == "StepBackward0"
        out.sum().backward()
        np.testing.assert_array_equal(x.grad, np.zeros((1, 3), np.float32))
    s, t = both(SPECIAL, np.float32)
    same_as_torch(tensor_math.sign(s), torch.sign(t))  # torch's sign(NaN) is 0


@pytest.mark.parametrize("name", ["logical_and", "logical_or", "logical_xor"])
@pytest.mark.parametrize("a, b", [([[1.0, 0.0, NAN]], [[2], [0]]), ([True, False, True], [0.0, 0.0, -1.5]),
                                  ([0, 3, 0], [False, True, True])])
def test_logical_ops_as_torch(name, a, b):
    (sa, ta), (sb, tb) = both(a), both(b)
    same_as_torch(getattr(sa, name)(sb), getattr(torch, name)(ta, tb))


def test_logical_ops_take_numbers_and_lists():
    x = seqlab.tensor([0.0, 1.0, 2.0])
    assert x.logical_and(1).tolist() == [False, True, True]
    assert x.logical_xor([1, 1, 0]).tolist() == [True, False, True]


# ---- rounding: values (halves to even), int dtypes, zero gradients ------------------------------------------
@pytest.mark.parametrize("name", ["floor", "ceil", "trunc", "round", "frac", "fix"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_rounding_values_as_torch(name, dtype):
    s, t = both(SPECIAL, dtype)
    with np.errstate(invalid="ignore"):
        same_as_torch(getattr(s, name)(), getattr(torch, name)(t))


@pytest.mark.parametrize("decimals", [0, 1, 2, 3, -1])
def test_round_decimals_as_torch(decimals):
    s, t = both([1.2345, -1.2355, 125.0, 0.005, 2.5, -35.0], np.float64)
    same_as_torch(s.round(decimals=decimals), torch.round(t, decimals=decimals))


@pytest.mark.parametrize("name", ["floor", "ceil", "trunc", "round"])
def test_rounding_an_integer_tensor_is_a_copy(name):
    s, t = both([3, -2, 0], np.int64)
    out = getattr(s, name)()
    same_as_torch(out, getattr(torch, name)(t))
    assert out.data is not s.data


@pytest.mark.parametrize("name", ["floor", "ceil", "trunc", "round", "frac"])
def test_rounding_refuses_bools_as_torch(name):
    with pytest.raises(TypeError, match="not implemented for bool"):
        getattr(seqlab.tensor([True]), name)()


def test_round_decimals_and_frac_refuse_integers():
    with pytest.raises(TypeError, match="decimals=1"):
        seqlab.tensor([1, 2]).round(decimals=1)
    with pytest.raises(TypeError, match="int64"):
        seqlab.tensor([1, 2]).frac()


@pytest.mark.parametrize("name", ["floor", "ceil", "trunc", "round", "frac"])
def test_rounding_gradients(name):
    """Zero for floor/ceil/trunc/round, one for frac, as torch (and by central differences)."""
    check_op(lambda a: getattr(a, name)(), lambda a: getattr(a, name)(), [(3, 4)])


def test_round_decimals_gradient_is_zero():
    check_op(lambda a: a.round(decimals=2), lambda a: a.round(decimals=2), [(5,)])


# ---- smooth functions ------------------------------------------------------------------------------------------
UNARY = [("log1p", "positive"), ("expm1", "real"), ("log2", "positive"), ("log10", "positive"),
         ("sinh", "real"), ("cosh", "real"), ("asin", "unit"), ("acos", "unit"), ("atan", "real"),
         ("arcsin", "unit"), ("arccos", "unit"), ("arctan", "real"), ("erf", "real"), ("square", "real"),
         ("negative", "real"), ("absolute", "real")]


@pytest.mark.parametrize("name, domain", UNARY)
def test_unary_values_and_gradients(name, domain):
    check_op(lambda a: getattr(a, name)(), lambda a: getattr(a, name)(), [(3, 4)], domain=domain)


def test_log1p_and_expm1_are_exact_near_zero():
    x = seqlab.tensor([1e-10, -1e-12], dtype=np.float64)
    np.testing.assert_allclose(x.log1p().numpy(), [1e-10 - 5e-21, -1e-12 - 5e-25], rtol=1e-15)
    np.testing.assert_allclose(x.expm1().numpy(), [1e-10 + 5e-21, -1e-12 + 5e-25], rtol=1e-15)
    assert seqlab.tensor([1000.0, 8.0], dtype=np.float64).log10().tolist()[0] == 3.0


@pytest.mark.parametrize("eps", [None, 0.1])
def test_logit_values_and_gradients(eps):
    p = np.array([[0.05, 0.3, 0.5], [0.7, 0.92, 0.99]])  # eps = 0.1 clamps the ends: no gradient there
    check_op(lambda a: a.logit(eps=eps), lambda a: a.logit(eps=eps), [p])


FLOAT_OF_INTS = ["log1p", "expm1", "log2", "log10", "sinh", "cosh", "asin", "acos", "atan", "erf", "logit",
                 "square", "sgn", "negative", "absolute", "nan_to_num", "signbit", "isfinite"]


@pytest.mark.parametrize("name, values", [(n, [0, 1, 3]) for n in FLOAT_OF_INTS]
                         + [(n, [True, False]) for n in FLOAT_OF_INTS if n not in ("negative", "absolute")])
def test_result_dtypes_of_integer_and_bool_inputs_as_torch(name, values):  # torch refuses -bool and abs(bool)
    s, t = both(values)
    with np.errstate(invalid="ignore", divide="ignore"):
        same_as_torch(getattr(s, name)(), getattr(torch, name)(t))


# ---- binary: broadcasting, type promotion, gradients of both operands -------------------------------------------
BINARY = [
    ("atan2", lambda a, b: a.atan2(b), [(3, 4), (4,)]),
    ("arctan2", lambda a, b: a.arctan2(b), [(2, 1, 3), (4, 1)]),
    ("hypot", lambda a, b: a.hypot(b), [(3, 4), (3, 1)]),
    ("fmod", lambda a, b: a.fmod(b), [(3, 4), (4,)]),
    ("remainder", lambda a, b: a.remainder(b), [(3, 4), (4,)]),
    ("true_divide", lambda a, b: a.true_divide(b), [(3, 4), (4,)]),
    ("maximum", lambda a, b: a.maximum(b), [(3, 4), (4,)]),
    ("minimum", lambda a, b: a.minimum(b), [(3, 4), (4,)]),
    ("clamp_min", lambda a, b: a.clamp_min(b), [(3, 4), (4,)]),
    ("clamp_max", lambda a, b: a.clamp_max(b), [(3, 4), (4,)]),
]


@pytest.mark.parametrize("name, fn, shapes", BINARY, ids=[b[0] for b in BINARY])
def test_binary_values_and_gradients(name, fn, shapes):
    check_op(fn, fn, shapes)


WITH_A_NUMBER = [  # torch's atan2 and hypot take tensors only; seqlab takes a number too
    (lambda a: a.atan2(0.5), lambda a: a.atan2(torch.tensor(0.5, dtype=a.dtype))),
    (lambda a: a.hypot(-2.0), lambda a: a.hypot(torch.tensor(-2.0, dtype=a.dtype))),
    (lambda a: a.fmod(0.7), lambda a: a.fmod(0.7)), (lambda a: a.fmod(-0.7), lambda a: a.fmod(-0.7)),
    (lambda a: a.clamp_min(0.1), lambda a: a.clamp_min(0.1)),
    (lambda a: a.clamp_max(-0.2), lambda a: a.clamp_max(-0.2)),
    (lambda a: a.xlogy(3.0), lambda a: a.xlogy(3.0)), (lambda a: a.true_divide(4), lambda a: a.true_divide(4)),
]


@pytest.mark.parametrize("k", range(len(WITH_A_NUMBER)))
def test_binary_with_a_number(k):
    check_op(*WITH_A_NUMBER[k], [(3, 4)])


def test_xlogy_values_and_gradients_with_zeros_as_torch():
    """0·log(y) is 0 (also for y = 0 and y < 0), NaN for y = NaN; gradients as torch's where defined."""
    x = np.array([[0.0, 0.0, 0.0, 1.5], [2.0, 0.0, 0.7, 3.0]])
    y = np.array([[0.0, -1.0, NAN, 2.0], [0.5, 3.0, 1.2, 0.9]])
    s_x, s_y = seqlab.tensor(x, requires_grad=True), seqlab.tensor(y, requires_grad=True)
    t_x, t_y = torch.tensor(x, requires_grad=True), torch.tensor(y, requires_grad=True)
    same_as_torch(s_x.xlogy(s_y), torch.xlogy(t_x, t_y))
    s_x.xlogy(s_y).sum().backward()
    torch.xlogy(t_x, t_y).sum().backward()
    np.testing.assert_allclose(s_x.grad, t_x.grad.numpy(), equal_nan=True)
    defined = (x != 0) | (y != 0)  # torch: 0/0 = NaN for y where x = y = 0; seqlab 0 (the term is 0 near there)
    np.testing.assert_allclose(s_y.grad[defined], t_y.grad.numpy()[defined], equal_nan=True)
    pos = np.abs(np.random.default_rng(0).standard_normal((3, 4))) + 0.5
    check_op(lambda a, b: a.xlogy(b), lambda a, b: a.xlogy(b), [(3, 4), pos])


@pytest.mark.parametrize("name", ["atan2", "fmod", "xlogy", "clamp_min", "clamp_max", "maximum", "true_divide"])
@pytest.mark.parametrize("a, b", [([1, -2, 3], [2, 2, -2]), ([1, -2, 3], [0.5, 2.0, -1.5]),
                                  ([1.5, -2.0], np.array(2, np.int64)), ([[1.0, 2.0]], np.array([3.0], np.float64)),
                                  ([True, False], [2, 3])])
def test_binary_result_dtypes_as_torch(name, a, b):
    (sa, ta), (sb, tb) = both(a), both(b)
    with np.errstate(invalid="ignore", divide="ignore"):
        same_as_torch(getattr(sa, name)(sb), getattr(torch, name)(ta, tb))


@pytest.mark.parametrize("name, number", [("fmod", 2), ("fmod", 2.5), ("clamp_min", 0.5), ("clamp_max", 1),
                                          ("true_divide", 2), ("xlogy", 2)])
def test_integer_tensor_with_a_number_dtypes_as_torch(name, number):
    s, t = both([1, -2, 5], np.int64)
    same_as_torch(getattr(s, name)(number), getattr(torch, name)(t, number))


def test_fmod_by_integer_zero_raises_as_torch():
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        seqlab.tensor([1, 2]).fmod(0)
    same_as_torch(seqlab.tensor([1.0, -2.0]).fmod(0), torch.tensor([1.0, -2.0]).fmod(0))


def test_hypot_refuses_integers_as_torch():
    with pytest.raises(TypeError, match="hypot.*int64"):
        seqlab.tensor([3, 4]).hypot(seqlab.tensor([4, 3]))


def test_clamp_min_tensor_keeps_nan_as_torch():
    s, t = both([NAN, 1.0, -1.0], np.float32)
    (sb, tb) = both([0.0, 0.0, 0.0], np.float32)
    same_as_torch(s.clamp_min(sb), torch.clamp_min(t, tb))
    same_as_torch(s.clamp_max(sb), torch.clamp_max(t, tb))


# ---- lerp and nan_to_num -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("weight", [0.3, 0.8, -1.5])
def test_lerp_number_weight(weight):
    check_op(lambda a, b: a.lerp(b, weight), lambda a, b: a.lerp(b, weight), [(3, 4), (4,)])


def test_lerp_tensor_weight_broadcast():
    check_op(lambda a, b, w: a.lerp(b, w), lambda a, b, w: a.lerp(b, w), [(3, 4), (3, 4), (4,)])
    check_op(lambda a, b, w: tensor_math.lerp(a, b, w), lambda a, b, w: torch.lerp(a, b, w), [(2, 3), (3,), (2, 1)])


def test_lerp_errors_as_torch():
    x = seqlab.tensor([1.0, 2.0])
    with pytest.raises(RuntimeError, match="expected dtype float32 for `end` but got dtype float64"):
        x.lerp(x.double(), 0.5)
    with pytest.raises(TypeError, match="not implemented for int64"):
        seqlab.tensor([1, 2]).lerp(seqlab.tensor([1, 2]), 0.5)
    with pytest.raises(TypeError, match="'end' must be Tensor"):
        x.lerp(2.0, 0.5)


@pytest.mark.parametrize("kw", [{}, {"nan": 1.5}, {"posinf": 9.0, "neginf": -9.0}, {"nan": -1.0, "posinf": 2.0}])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_nan_to_num_values_and_gradient_as_torch(kw, dtype):
    arr = np.array([[NAN, 1.5, INF], [-INF, -0.5, 2.0]], dtype)
    s, t = seqlab.tensor(arr, requires_grad=True), torch.tensor(arr, requires_grad=True)
    out_s, out_t = s.nan_to_num(**kw), torch.nan_to_num(t, **kw)
    same_as_torch(out_s, out_t)
    g = np.arange(6, dtype=dtype).reshape(2, 3) + 1
    out_s.backward(g)
    out_t.backward(torch.from_numpy(g))
    np.testing.assert_array_equal(s.grad, t.grad.numpy())
    same_as_torch(tensor_math.nan_to_num(seqlab.tensor([1, 2]), nan=3.0), torch.nan_to_num(torch.tensor([1, 2])))


# ---- in place -------------------------------------------------------------------------------------------------
IN_PLACE = [("exp_", ()), ("log_", ()), ("sqrt_", ()), ("relu_", ()), ("abs_", ()), ("neg_", ()), ("tanh_", ()),
            ("sigmoid_", ()), ("floor_", ()), ("ceil_", ()), ("trunc_", ()), ("round_", ()), ("clamp_", (-0.5, 1.0)),
            ("clamp_min_", (0.2,)), ("clamp_max_", (0.2,)), ("nan_to_num_", ()), ("tril_", ()), ("triu_", (1,)),
            ("clip_", (None, 0.0))]


@pytest.mark.parametrize("name, args", IN_PLACE, ids=[n for n, _ in IN_PLACE])
def test_in_place_as_torch(name, args):
    arr = np.random.default_rng(1).standard_normal((3, 4)).astype(np.float32)
    s, t = seqlab.tensor(arr), torch.from_numpy(arr.copy())
    buffer = s.data
    with np.errstate(invalid="ignore"):
        out = getattr(s, name)(*args)
    getattr(t, name)(*args)
    assert out is s and s.data is buffer  # the same tensor, the same memory
    same_as_torch(s, t)


def test_round_decimals_in_place():
    s, t = both([1.2345, -2.5551], np.float64)
    s.round_(decimals=2)
    t.round_(decimals=2)
    same_as_torch(s, t)


def test_in_place_refusals():
    x = seqlab.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="exp_: a leaf tensor that requires grad"):
        x.exp_()
    with seqlab.no_grad():
        x.exp_()  # allowed, as torch (setting parameters)
    np.testing.assert_allclose(x.numpy(), np.exp([1.0, 2.0]).astype(np.float32))
    with pytest.raises(RuntimeError, match="result type float32 can't be cast to the tensor's dtype int64"):
        seqlab.tensor([1, 2]).exp_()
    with pytest.raises(RuntimeError, match="read-only"):
        seqlab.tensor([1.0]).expand(3).abs_()
    y = seqlab.tensor([1, -2])
    assert y.abs_().tolist() == [1, 2] and y.dtype == np.int64  # integers stay integers


def test_in_place_change_of_a_saved_array_makes_backward_raise():
    x = seqlab.tensor([0.5, 1.0], requires_grad=True)
    y = x * 2
    z = y.sin()  # saves y's array for its backward
    with seqlab.no_grad():
        y.exp_()
    with pytest.raises(RuntimeError):
        z.sum().backward()


@pytest.mark.parametrize("op", [lambda t: t.unsqueeze_(1), lambda t: t.unsqueeze_(-1), lambda t: t.squeeze_(),
                                lambda t: t.squeeze_(0), lambda t: t.t_()])
@pytest.mark.parametrize("shape", [(1, 3), (2, 1)])
def test_shape_changes_in_place_as_torch(op, shape):
    arr = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
    s, t = seqlab.tensor(arr), torch.from_numpy(arr.copy())
    assert op(s) is s
    op(t)
    same_as_torch(s, t)


def test_t_in_place_refuses_3d_and_shape_changes_of_graph_tensors():
    with pytest.raises(ValueError, match="<= 2 dimensions"):
        seqlab.zeros(2, 3, 4).t_()
    x = seqlab.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="unsqueeze_"):
        (x * 2).unsqueeze_(0)


# ---- properties and constructors ------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64, np.int32, np.bool_, np.float16, np.uint8])
def test_small_properties_as_torch(dtype):
    arr = np.zeros((2, 3), dtype)
    s, t = seqlab.tensor(arr), torch.from_numpy(arr)
    assert s.is_floating_point() is t.is_floating_point()
    assert s.is_complex() is t.is_complex()
    assert s.element_size() == t.element_size()
    assert s.nelement() == t.nelement() == 6 and s.ndimension() == t.ndimension() == 2
    assert s.is_cuda is t.is_cuda is False and s.get_device() == t.get_device() == -1


def test_is_contiguous_as_torch():
    s, t = seqlab.zeros(2, 3), torch.zeros(2, 3)
    for f in (lambda x: x, lambda x: x.t(), lambda x: x.transpose(0, 1), lambda x: x[:, 0], lambda x: x[0],
              lambda x: x.unsqueeze(0).expand(4, 2, 3), lambda x: x.reshape(3, 2)):
        assert f(s).is_contiguous() is f(t).is_contiguous()


def test_mT_as_torch():
    arr = np.arange(24.0).reshape(2, 3, 4)
    x = seqlab.tensor(arr, requires_grad=True)
    same_as_torch(x.mT, torch.from_numpy(arr).mT)
    (x.mT * seqlab.tensor(np.arange(24.0).reshape(2, 4, 3))).sum().backward()
    np.testing.assert_array_equal(x.grad, np.arange(24.0).reshape(2, 4, 3).transpose(0, 2, 1))
    with pytest.raises(RuntimeError, match="Got 1-D tensor"):
        seqlab.zeros(3).mT


def test_new_tensor_and_new_empty_as_torch():
    for base in ([1, 2], [1.0, 2.0]):
        s, t = both(base)
        for data in ([1.5, -2.0], [[3, 4]], 7):
            same_as_torch(s.new_tensor(data), t.new_tensor(data))
            same_as_torch(s.new_tensor(data, dtype=np.float64), t.new_tensor(data, dtype=torch.float64))
        assert s.new_empty(2, 3).shape == s.new_empty((2, 3)).shape == (2, 3)
        assert s.new_empty(2).dtype == s.dtype and s.new_empty(2, dtype=np.int32).dtype == np.int32
    src = seqlab.tensor([1.0, 2.0], requires_grad=True)
    copy = seqlab.tensor([0.0]).new_tensor(src, requires_grad=True)
    assert copy.requires_grad and copy.is_leaf and copy.data is not src.data
    copy.data[0] = 5.0
    assert src.tolist() == [1.0, 2.0]


def test_grad_fn_names_as_torch():
    s, t = seqlab.tensor([1.0, 2.0], requires_grad=True), torch.tensor([1.0, 2.0], requires_grad=True)
    assert s.grad_fn is None and t.grad_fn is None
    for f in (lambda x: x * 2, lambda x: x + 1, lambda x: x.exp(), lambda x: x.sin(), lambda x: x / 3):
        assert f(s).grad_fn.name() == f(t).grad_fn.name()
    y = s * 2
    (node, _), (none, _) = y.grad_fn.next_functions
    assert node.name() == "AccumulateGrad" and node.variable is s and none is None
    z = y.exp()
    assert z.grad_fn.next_functions[0][0] == y.grad_fn and "ExpBackward0" in repr(z.grad_fn)
    with seqlab.no_grad():
        assert (s * 2).grad_fn is None
    z.sum().backward()
    assert z.grad_fn.name() == "FreedBackward0" and z.grad_fn.next_functions == ()


# ---- torch.* functions ------------------------------------------------------------------------------------------
def test_every_toplevel_name_is_a_function_of_the_method():
    x = seqlab.tensor([[0.25, -0.5], [0.75, 0.1]], dtype=np.float64)
    other = seqlab.tensor([0.3, 0.2], dtype=np.float64)
    unary = {"isnan", "isinf", "isfinite", "isposinf", "isneginf", "signbit", "sign", "sgn", "logical_not",
             "floor", "ceil", "trunc", "fix", "round", "frac", "square", "log1p", "expm1", "log2", "log10",
             "sinh", "cosh", "asin", "acos", "atan", "arcsin", "arccos", "arctan", "erf", "logit", "negative",
             "absolute", "nan_to_num"}
    assert len(set(tensor_math.TOPLEVEL)) == len(tensor_math.TOPLEVEL)
    for name in tensor_math.TOPLEVEL:
        fn = getattr(tensor_math, name)
        assert fn.__name__ == name
        if name == "lerp":
            got, want = fn(x, other.expand(2, 2) * 1, 0.25), x.lerp(other.expand(2, 2) * 1, 0.25)
        elif name in unary:
            got, want = fn(x.abs()), getattr(x.abs(), name)()
        else:
            got, want = fn(x.abs(), other), getattr(x.abs(), name)(other)
        if isinstance(want, bool):
            assert got is want, name
        else:
            np.testing.assert_array_equal(got.numpy(), want.numpy(), err_msg=name)


def test_toplevel_functions_as_torch():
    s, t = both([[1.5, NAN, -2.5], [INF, 0.0, 3.5]], np.float32)
    for name in ("isnan", "isfinite", "floor", "round", "square", "log1p", "erf", "sign", "logical_not"):
        with np.errstate(invalid="ignore"):
            same_as_torch(getattr(tensor_math, name)(s), getattr(torch, name)(t))
    for name in ("eq", "ne", "gt", "lt", "ge", "le", "logical_and", "atan2", "clamp_min"):
        same_as_torch(getattr(tensor_math, name)(s, s[0]), getattr(torch, name)(t, t[0]))
    same_as_torch(tensor_math.eq(s, 1.5), torch.eq(t, 1.5))
    same_as_torch(tensor_math.xlogy(2, s), torch.xlogy(2, t))
    same_as_torch(tensor_math.xlogy(2.5, seqlab.tensor([1, 0])), torch.xlogy(2.5, torch.tensor([1, 0])))


def test_toplevel_functions_take_arrays_and_refuse_lists():
    grad = np.array([1.0, NAN, INF])  # seqlab's p.grad is an array: torch.isfinite(p.grad).all()
    assert tensor_math.isfinite(grad).tolist() == [True, False, False]
    assert not bool(tensor_math.isfinite(grad).all())
    with pytest.raises(TypeError, match="isnan\\(\\): argument 'input' must be Tensor, not list"):
        tensor_math.isnan([1.0])


def test_toplevel_names_are_reexported_by_seqlab():
    """Once seqlab/__init__.py re-exports TOPLEVEL, `seqlab.isnan` is this module's function."""
    missing = [name for name in tensor_math.TOPLEVEL if getattr(seqlab, name, None) is not getattr(tensor_math, name)]
    assert not missing, f"not re-exported by seqlab: {missing}"


def test_the_mixin_is_a_base_of_tensor():
    assert issubclass(seqlab.Tensor, tensor_math.MathMethods)
    assert tensor_math.MathMethods.__slots__ == ()
    assert not hasattr(seqlab.tensor([1.0]), "__dict__")  # Tensor stays slotted


# ---- the device path (the CuPy stand-in, or CuPy on a GPU) ---------------------------------------------------------

DEVICE_OPS = [
    lambda a, b: a.floor() + a.round(decimals=1) + a.frac(),
    lambda a, b: a.abs().log1p() + a.expm1() + a.abs().log2() + a.sinh() + a.cosh() + a.erf(),
    lambda a, b: (a * 0.3).asin() + (a * 0.3).acos() + a.atan() + a.sigmoid().logit(eps=0.01),
    lambda a, b: a.atan2(b) + a.hypot(b) + a.fmod(b) + a.xlogy(b.abs()) + a.hypot(2.0) + a.fmod(0.5),
    lambda a, b: a.lerp(b, 0.3) + a.lerp(b, b.sigmoid()) + a.clamp_min(b) + a.clamp_max(0.1) + a.square(),
    lambda a, b: (a / 0).nan_to_num(posinf=5.0, neginf=-4.0) + a.maximum(b) + a.minimum(b),
]


@pytest.mark.parametrize("k", range(len(DEVICE_OPS)))
def test_on_the_device(cuda, k):
    rng = np.random.default_rng(k)
    arrays = [rng.standard_normal((3, 4)), rng.standard_normal((4,))]
    cpu = [seqlab.tensor(a, requires_grad=True) for a in arrays]
    dev = [seqlab.tensor(backend.to_device(a, "cuda"), requires_grad=True) for a in arrays]
    with np.errstate(invalid="ignore", divide="ignore"):
        out_cpu, out_dev = DEVICE_OPS[k](*cpu), DEVICE_OPS[k](*dev)
    assert out_dev.device == "cuda"
    np.testing.assert_allclose(backend.to_numpy(out_dev.data), out_cpu.numpy(), rtol=1e-12, atol=1e-12)
    with np.errstate(invalid="ignore", divide="ignore"):
        out_cpu.sum().backward()
        out_dev.sum().backward()
    for c, d in zip(cpu, dev):
        assert (c.grad is None) == (d.grad is None)
        if c.grad is not None:
            assert backend.device_of(d.grad) == "cuda"
            np.testing.assert_allclose(backend.to_numpy(d.grad), c.grad, rtol=1e-12, atol=1e-12)


def test_predicates_and_in_place_on_the_device(cuda):
    arr = np.array([[1.5, NAN, -INF], [-0.0, 2.0, INF]])
    x = seqlab.tensor(backend.to_device(arr, "cuda"))
    y = seqlab.tensor(backend.to_device(arr[::-1].copy(), "cuda"))
    for name in ("isnan", "isinf", "isfinite", "isposinf", "isneginf", "signbit", "logical_not"):
        out = getattr(x, name)()
        assert out.device == "cuda" and out.dtype == bool
        np.testing.assert_array_equal(backend.to_numpy(out.data), getattr(np, name)(arr), err_msg=name)
    for name in ("eq", "lt", "ge", "logical_and", "isclose"):
        out = getattr(x, name)(y)
        assert out.device == "cuda" and out.dtype == bool
    assert x.lt(1.0).device == "cuda" and x.logical_or([1, 0, 0]).device == "cuda"
    assert x.equal(x.clone()) is False and x.nan_to_num().allclose(x.nan_to_num()) is True
    assert x.is_cuda and x.get_device() == 0 and x.new_tensor([1, 2]).device == "cuda"
    x.nan_to_num_(posinf=9.0).clamp_(-1.0, 1.0).tril_().unsqueeze_(0)
    assert x.shape == (1, 2, 3) and x.device == "cuda"
    np.testing.assert_array_equal(backend.to_numpy(x.data)[0], np.tril(np.clip(np.nan_to_num(arr, posinf=9.0),
                                                                               -1.0, 1.0)))
