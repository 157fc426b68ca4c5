"""torch's top-level functions, Tensor methods, dtype names and keyword aliases that d2l-style code uses
(`import seqlab as torch`), each compared with torch on the same inputs: values, dtypes and gradients."""
import builtins

import numpy as np
import pytest
import torch
from helpers import check_op, const, same_as_torch

import seqlab

RNG = np.random.default_rng(3)


_same = same_as_torch


def _both(arr):
    return seqlab.tensor(arr.copy()), torch.tensor(arr.copy())


# ---- 1. top-level functions: values and gradients ------------------------------------------------------------
def _lib_case(call):
    """The same call against either library: `call(lib, *tensors)`."""
    return (lambda *a: call(seqlab, *a)), (lambda *a: call(torch, *a))


FUNCS = {  # name: (call(lib, *inputs), inputs, domain)
    "sin": (lambda L, x: L.sin(x), [(3, 4)], "real"),
    "cos": (lambda L, x: L.cos(x), [(3, 4)], "real"),
    "method-sin-cos": (lambda L, x: x.sin() * x.cos(), [(2, 5)], "real"),
    "pow-tensor-int": (lambda L, x: L.pow(x, 3), [(3, 4)], "real"),
    "pow-tensor-float": (lambda L, x: L.pow(x, 0.5), [(3, 4)], "positive"),
    "pow-number-tensor": (lambda L, x: L.pow(10000, x / 4), [(6,)], "real"),
    "pow-float-number-tensor": (lambda L, x: L.pow(2.5, x), [(2, 3)], "real"),
    "pow-tensor-tensor": (lambda L, x, y: L.pow(x, y), [(3, 4), (4,)], "positive"),
    "sum": (lambda L, x: L.sum(x), [(3, 4)], "real"),
    "sum-dim-keepdim": (lambda L, x: L.sum(x, 1, True), [(3, 4)], "real"),
    "sum-dims": (lambda L, x: L.sum(x, (0, 2)), [(2, 3, 4)], "real"),
    "sum-axis": (lambda L, x: L.sum(x, axis=-1), [(2, 3, 4)], "real"),
    "mean": (lambda L, x: L.mean(x), [(3, 4)], "real"),
    "mean-dim": (lambda L, x: L.mean(x, dim=0, keepdim=True), [(3, 4)], "real"),
    "max": (lambda L, x: L.max(x), [(3, 4)], "real"),
    "max-dim": (lambda L, x: L.max(x, 1), [(3, 4)], "real"),
    "max-dim-keepdim": (lambda L, x: L.max(x, dim=0, keepdim=True), [(3, 4)], "real"),
    "max-other": (lambda L, x, y: L.max(x, y), [(3, 4), (4,)], "real"),
    "min": (lambda L, x: L.min(x), [(3, 4)], "real"),
    "min-dim": (lambda L, x: L.min(x, -1), [(3, 4)], "real"),
    "min-other": (lambda L, x, y: L.min(x, y), [(3, 4), (3, 1)], "real"),
    "minimum": (lambda L, x, y: L.minimum(x, y), [(3, 4), (3, 4)], "real"),
    "unsqueeze": (lambda L, x: L.unsqueeze(x, 1), [(3, 4)], "real"),
    "squeeze": (lambda L, x: L.squeeze(x), [(3, 1, 4, 1)], "real"),
    "squeeze-dim": (lambda L, x: L.squeeze(x, 1), [(3, 1, 4, 1)], "real"),
    "squeeze-dims": (lambda L, x: L.squeeze(x, (1, 3)), [(3, 1, 4, 1)], "real"),
    "transpose": (lambda L, x: L.transpose(x, 0, 2), [(2, 3, 4)], "real"),
    "swapaxes": (lambda L, x: x.swapaxes(0, -1), [(2, 3, 4)], "real"),
    "swapdims": (lambda L, x: x.swapdims(1, 2), [(2, 3, 4)], "real"),
    "permute": (lambda L, x: L.permute(x, (2, 0, 1)), [(2, 3, 4)], "real"),
    "reshape": (lambda L, x: L.reshape(x, (4, -1)), [(2, 3, 4)], "real"),
    "flatten": (lambda L, x: L.flatten(x), [(2, 3, 4)], "real"),
    "flatten-start": (lambda L, x: L.flatten(x, 1), [(2, 3, 4)], "real"),
    "clamp": (lambda L, x: L.clamp(x, -0.5, 0.5), [(3, 4)], "real"),
    "clamp-min": (lambda L, x: L.clamp(x, min=0.1), [(3, 4)], "real"),
    "clip-max": (lambda L, x: L.clip(x, max=0.2), [(3, 4)], "real"),
    "abs": (lambda L, x: L.abs(x), [(3, 4)], "real"),
    "sqrt": (lambda L, x: L.sqrt(x), [(3, 4)], "positive"),
    "exp-log-tanh-sigmoid": (lambda L, x: L.exp(x) + L.log(x) + L.tanh(x) + L.sigmoid(x), [(3, 4)], "positive"),
    "matmul": (lambda L, a, b: L.matmul(a, b), [(2, 3, 4), (4, 5)], "real"),
    "bmm": (lambda L, a, b: L.bmm(a, b), [(2, 3, 4), (2, 4, 5)], "real"),
    "repeat_interleave-flat": (lambda L, x: L.repeat_interleave(x, 2), [(2, 3)], "real"),
    "repeat_interleave-dim0": (lambda L, x: L.repeat_interleave(x, 3, dim=0), [(2, 3)], "real"),
    "repeat_interleave-dim-neg": (lambda L, x: L.repeat_interleave(x, 2, -1), [(2, 3)], "real"),
    "repeat_interleave-counts": (lambda L, x: L.repeat_interleave(x, L.tensor([2, 0, 1]), dim=1), [(2, 3)], "real"),
    "repeat_interleave-one-count": (lambda L, x: L.repeat_interleave(x, L.tensor([2]), dim=0), [(2, 3)], "real"),
    "repeat_interleave-0d-count": (lambda L, x: L.repeat_interleave(x, L.tensor(3)), [(4,)], "real"),
    "repeat_interleave-method": (lambda L, x: x.repeat_interleave(2, 1), [(2, 3)], "real"),
}


@pytest.mark.parametrize("name", list(FUNCS))
def test_top_level_function_matches_torch(name):
    call, inputs, domain = FUNCS[name]
    check_op(*_lib_case(call), inputs, domain=domain)


def test_max_and_min_of_two_tensors_split_tied_gradients_as_torch():
    a = np.array([[1.0, 2.0, 3.0], [0.5, -1.0, 4.0]])
    b = np.array([1.0, 0.0, 3.0])  # ties at [0, 0], [0, 2]
    for op in ("max", "min"):
        check_op(lambda x, y, op=op: getattr(seqlab, op)(x, y), lambda x, y, op=op: getattr(torch, op)(x, y),
                 [a, b], gradcheck_=False)


def test_max_with_dim_is_a_named_pair_as_torch():
    x = RNG.standard_normal((3, 4)).astype(np.float32)
    (s, t) = _both(x)
    sv, si = seqlab.max(s, 1)
    r = torch.max(t, 1)
    _same(sv, r.values)
    _same(si, r.indices)
    _same(seqlab.min(s, dim=0).indices, torch.min(t, dim=0).indices)


# ---- 1b. dtypes of the new functions, as torch's --------------------------------------------------------------
DTYPE_CASES = {  # name: call(lib) -> tensor
    "sin-of-int": lambda L: L.sin(L.arange(4)),
    "cos-of-bool": lambda L: L.cos(L.tensor([True, False])),
    "pow-10000-int-arange": lambda L: L.pow(10000, L.arange(0, 4)),
    "pow-10000-float-arange": lambda L: L.pow(10000, L.arange(0, 8, 2, dtype=L.float32) / 8),
    "pow-float-base-int-exponents": lambda L: L.pow(2.5, L.arange(0, 4)),
    "pow-int-tensor-float": lambda L: L.pow(L.arange(3), 2.0),
    "pow-int-tensor-int": lambda L: L.pow(L.arange(3), 2),
    "pow-bool-tensor-int": lambda L: L.pow(L.tensor([True, False]), 2),
    "pow-int-tensor-float-tensor": lambda L: L.pow(L.arange(3), L.tensor([1.0, 2.0, 0.5])),
    "pow-float-tensor-int-tensor": lambda L: L.pow(L.tensor([[1.0, 5.0], [3.0, 2.0]]), L.tensor([1, 2])),
    "sum-int32": lambda L: L.sum(L.tensor([1, 2], dtype=L.int32)),
    "sum-bool": lambda L: L.sum(L.tensor([True, False, True])),
    "sum-dtype": lambda L: L.sum(L.ones(2, 3), dtype=L.float64),
    "mean-dtype": lambda L: L.mean(L.ones(2, 3), 1, dtype=L.float64),
    "max-int-float": lambda L: L.max(L.tensor([1, 5]), L.tensor([2.0, 2.0])),
    "min-int-int": lambda L: L.min(L.tensor([[1, 5], [3, 2]]), L.tensor([2, 2])),
    "maximum-int-float": lambda L: L.maximum(L.tensor([1, 5]), L.tensor([2.5, 2.0])),
    "repeat_interleave-int": lambda L: L.repeat_interleave(L.tensor([1, 2]), 3),
    "repeat_interleave-indices": lambda L: L.repeat_interleave(L.tensor([1, 2, 0, 3])),
    "clamp-int": lambda L: L.clamp(L.tensor([1, 5, -3]), 0, 3),
}


@pytest.mark.parametrize("name", list(DTYPE_CASES))
def test_dtype_and_values_match_torch(name):
    _same(DTYPE_CASES[name](seqlab), DTYPE_CASES[name](torch))


def test_numel_and_is_tensor_as_torch():
    s, t = _both(np.zeros((2, 3, 4), np.float32))
    assert seqlab.numel(s) == torch.numel(t) == 24
    for obj_s, obj_t in [(s, t), (3, 3), (np.zeros(2), np.zeros(2)), ([1.0], [1.0])]:
        assert seqlab.is_tensor(obj_s) == torch.is_tensor(obj_t)


def test_pow_of_two_numbers_refuses_as_torch():
    with pytest.raises(TypeError):
        torch.pow(2, 3)
    with pytest.raises(TypeError, match="pow"):
        seqlab.pow(2, 3)


# ---- 1c. reductions take NumPy arrays (seqlab's p.grad), other functions stay strict -------------------------
@pytest.mark.parametrize("op", ["sum", "mean", "max", "min"])
def test_reductions_take_a_numpy_array(op):
    a = RNG.standard_normal((3, 4)).astype(np.float32)
    _same(getattr(seqlab, op)(a), getattr(torch, op)(torch.from_numpy(a)))
    _same(getattr(seqlab, op)(a, 1)[0] if op in ("max", "min") else getattr(seqlab, op)(a, 1),
          getattr(torch, op)(torch.from_numpy(a), 1)[0] if op in ("max", "min")
          else getattr(torch, op)(torch.from_numpy(a), 1))


def test_d2l_grad_clipping_norm_over_numpy_grads_equals_torchs():
    """d2l's grad_clipping: torch.sqrt(sum(torch.sum(p.grad ** 2) for p in params)), p.grad an array here."""
    arrays = [RNG.standard_normal(s) for s in [(4, 3), (3,), (2, 2, 2)]]
    s_params = [seqlab.tensor(a, requires_grad=True) for a in arrays]
    t_params = [torch.tensor(a, requires_grad=True) for a in arrays]
    builtins.sum(((p * p).sum() * 3 for p in s_params), seqlab.zeros(())).backward()
    builtins.sum(((p * p).sum() * 3 for p in t_params), torch.zeros(())).backward()
    s_norm = seqlab.sqrt(builtins.sum(seqlab.sum(p.grad ** 2) for p in s_params))
    t_norm = torch.sqrt(builtins.sum(torch.sum(p.grad ** 2) for p in t_params))
    _same(s_norm, t_norm)


def test_elementwise_functions_stay_strict_about_arrays_as_torch():
    a = np.ones(3)
    for name in ("sin", "exp", "unsqueeze"):
        args = (a, 0) if name == "unsqueeze" else (a,)
        with pytest.raises(TypeError):
            getattr(torch, name)(*args)
        with pytest.raises(TypeError, match="must be Tensor"):
            getattr(seqlab, name)(*args)


# ---- 1d. repeat_interleave: refusals as torch's -----------------------------------------------------------------
RI_ERRORS = {  # name: (call(lib), seqlab's exception)
    "count-mismatch": (lambda L: L.repeat_interleave(L.ones(2, 2), L.tensor([1, 2, 3])), ValueError),
    "negative-int": (lambda L: L.repeat_interleave(L.ones(2, 2), -1), ValueError),
    "negative-count": (lambda L: L.repeat_interleave(L.ones(2, 2), L.tensor([1, -1]), dim=0), ValueError),
    "float-counts": (lambda L: L.repeat_interleave(L.ones(2, 2), L.tensor([1.0, 1.0]), dim=0), TypeError),
    "list-counts": (lambda L: L.repeat_interleave(L.ones(2, 2), [1, 2], dim=0), TypeError),
    "2d-counts": (lambda L: L.repeat_interleave(L.ones(2, 2), L.tensor([[1, 2]]), dim=0), ValueError),
    "dim-out-of-range": (lambda L: L.repeat_interleave(L.ones(2, 2), 2, dim=2), IndexError),
}


@pytest.mark.parametrize("name", list(RI_ERRORS))
def test_repeat_interleave_refuses_what_torch_refuses(name):
    call, exc = RI_ERRORS[name]
    with pytest.raises(Exception):  # noqa: B017 (torch's types vary: RuntimeError, TypeError, ...)
        call(torch)
    with pytest.raises(exc):
        call(seqlab)


def test_repeat_interleave_output_size_as_torch():
    s, t = _both(np.arange(6.0, dtype=np.float32).reshape(2, 3))
    _same(seqlab.repeat_interleave(s, 2, dim=0, output_size=4), torch.repeat_interleave(t, 2, dim=0, output_size=4))
    with pytest.raises(ValueError, match="output_size"):
        seqlab.repeat_interleave(s, 2, dim=0, output_size=5)


# ---- 1e. normal -----------------------------------------------------------------------------------------------
NORMAL_FORMS = {  # name: call(lib): the same arguments, compared for shape and dtype
    "numbers-size": lambda L: L.normal(0, 1, (2, 3)),
    "numbers-size-keyword": lambda L: L.normal(mean=0.0, std=0.01, size=(4,)),
    "numbers-dtype": lambda L: L.normal(2.0, 0.5, (3,), dtype=L.float64),
    "tensor-mean": lambda L: L.normal(L.zeros(2, 3)),
    "tensor-mean-float-std": lambda L: L.normal(L.zeros(2, 3, dtype=L.float64), 2.0),
    "float-mean-tensor-std": lambda L: L.normal(0.0, L.ones(4)),
    "tensor-mean-tensor-std": lambda L: L.normal(L.zeros(2, 1), L.ones(3)),
}


@pytest.mark.parametrize("name", list(NORMAL_FORMS))
def test_normal_forms_give_torchs_shape_and_dtype(name):
    s, t = NORMAL_FORMS[name](seqlab), NORMAL_FORMS[name](torch)
    assert s.shape == tuple(t.shape)
    assert s.numpy().dtype == t.numpy().dtype


def test_normal_draws_have_the_asked_mean_and_std_and_follow_manual_seed():
    seqlab.manual_seed(5)
    a = seqlab.normal(3.0, 0.5, size=(200_000,)).numpy()
    assert abs(a.mean() - 3.0) < 0.01 and abs(a.std() - 0.5) < 0.01
    m = seqlab.tensor(np.array([-5.0, 0.0, 5.0]))
    b = np.stack([seqlab.normal(m, seqlab.tensor([0.1, 1.0, 2.0])).numpy() for _ in range(20_000)])
    np.testing.assert_allclose(b.mean(0), [-5, 0, 5], atol=0.05)
    np.testing.assert_allclose(b.std(0), [0.1, 1.0, 2.0], rtol=0.03)
    seqlab.manual_seed(7)
    first = seqlab.normal(0.0, 1.0, (5,)).numpy()
    seqlab.manual_seed(7)
    np.testing.assert_array_equal(seqlab.normal(0.0, 1.0, (5,)).numpy(), first)


def test_normal_of_tensors_that_require_grad_gives_a_zero_gradient_as_torch():
    grads = []
    for L in (seqlab, torch):
        m = L.zeros(2, 3, requires_grad=True)
        s = L.ones(3, requires_grad=True)
        out = L.normal(m, s)
        assert out.requires_grad
        (out * 2).sum().backward()
        grads.append((np.asarray(m.grad), np.asarray(s.grad)))
    for (gs, gt) in zip(*grads):
        assert gs.shape == gt.shape and gs.dtype == gt.dtype
        np.testing.assert_array_equal(gs, gt)


@pytest.mark.parametrize("call", [lambda L: L.normal(0.0, -1.0, (2,)),
                                  lambda L: L.normal(L.zeros(2), L.tensor([1.0, -1.0])),
                                  lambda L: L.normal(0.0, 1.0),
                                  lambda L: L.normal(L.zeros(2, dtype=L.long), 1.0)])
def test_normal_refuses_what_torch_refuses(call):
    with pytest.raises(Exception):  # noqa: B017
        call(torch)
    with pytest.raises((ValueError, TypeError)):
        call(seqlab)


# ---- 2. Tensor methods: detach_, type, int/short/half ---------------------------------------------------------
def test_detach_in_place_as_torch():
    out = []
    for L in (seqlab, torch):
        a = L.tensor([1.0, 2.0], requires_grad=True)
        b = a * 2
        c = b * 3
        assert b.detach_() is b
        c.sum().backward()  # the graph already built still reaches a (as torch)
        d = b * 3  # a new use of b is cut off
        leaf = L.tensor([1.0], requires_grad=True).detach_()
        out.append((np.asarray(a.grad), b.requires_grad, b.is_leaf, d.requires_grad, leaf.requires_grad))
    (ga, *rest_s), (gt, *rest_t) = out
    np.testing.assert_array_equal(ga, gt)
    assert rest_s == rest_t == [False, True, False, False]


@pytest.mark.parametrize("make_view", [lambda x: (x * 1).reshape(6), lambda x: (x * 1)[0], lambda x: (x * 1).t(),
                                       lambda x: (x * 1).unsqueeze(0), lambda x: (x * 1).expand(4, 2, 3)])
def test_detach_in_place_refuses_a_view_as_torch(make_view):
    arr = RNG.standard_normal((2, 3))
    with pytest.raises(RuntimeError, match="views in-place"):
        make_view(torch.tensor(arr, requires_grad=True)).detach_()
    with pytest.raises(RuntimeError, match="views in-place"):
        make_view(seqlab.tensor(arr, requires_grad=True)).detach_()


TYPE_DTYPES = ["float32", "float64", "float16", "int64", "int32", "int16", "int8", "uint8", "bool"]


@pytest.mark.parametrize("dtype", TYPE_DTYPES)
def test_type_names_are_torchs_with_seqlabs_prefix(dtype):
    s = seqlab.zeros(2, dtype=getattr(seqlab, dtype))
    t = torch.zeros(2, dtype=getattr(torch, dtype))
    assert s.type() == t.type().replace("torch.", "seqlab.")


@pytest.mark.parametrize("target", ["float64", "int32", "int64", "bool", "torch.LongTensor", "torch.DoubleTensor",
                                    "torch.IntTensor"])
def test_type_with_a_dtype_casts_as_torch(target):
    x = np.array([[1.5, -2.25], [0.0, 3.0]], np.float32)
    s, t = _both(x)
    if target.startswith("torch."):
        _same(s.type(target), t.type(target))
        _same(s.type(target.replace("torch.", "seqlab.")), t.type(target))
    else:
        _same(s.type(getattr(seqlab, target)), t.type(getattr(torch, target)))
        _same(s.type(target), t.type(getattr(torch, target)))  # a dtype name, too
    assert s.type(seqlab.float32) is s  # the same dtype: itself, as torch
    with pytest.raises(ValueError, match="invalid type"):
        s.type("nonsense")


@pytest.mark.parametrize("method", ["int", "short", "half", "long", "float", "double", "bool"])
def test_cast_methods_give_torchs_dtypes(method):
    s, t = _both(np.array([1.5, -2.0, 0.0], np.float32))
    _same(getattr(s, method)(), getattr(t, method)())


def test_half_keeps_the_gradient_and_an_integer_cast_drops_it_as_torch():
    results = []
    for L in (seqlab, torch):
        x = L.tensor([1.5, -2.0], requires_grad=True)
        h = x.half()
        (h.float() * L.tensor([2.0, 3.0])).sum().backward()
        results.append((np.asarray(x.grad), h.requires_grad, x.to(L.long).requires_grad, x.int().requires_grad,
                        x.type(L.int64).requires_grad))
    (gs, *fs), (gt, *ft) = results
    np.testing.assert_array_equal(gs, gt)
    assert fs == ft == [True, False, False, False]


# ---- 3. dtype names ---------------------------------------------------------------------------------------------
DTYPE_NAMES = ["long", "int", "short", "int8", "int16", "int32", "int64", "uint8", "bool", "float", "double", "half",
               "float16", "float32", "float64"]


@pytest.mark.parametrize("name", DTYPE_NAMES)
def test_dtype_names_are_torchs_in_every_constructor_and_cast(name):
    expected = torch.zeros(1, dtype=getattr(torch, name)).numpy().dtype
    dt = getattr(seqlab, name)
    assert np.dtype(dt) == expected
    assert seqlab.tensor([1, 0], dtype=dt).dtype == expected
    assert seqlab.zeros(2, dtype=dt).dtype == expected
    assert seqlab.ones(2, 2, dtype=dt).dtype == expected
    if name != "bool":  # torch has no bool arange
        assert seqlab.arange(3, dtype=dt).dtype == expected
    x = seqlab.tensor([1.0, 0.0])
    assert x.astype(dt).dtype == expected
    assert x.to(dt).dtype == expected
    assert seqlab.full((2,), 1, dtype=dt).dtype == expected
    assert x.dtype == seqlab.float32 and seqlab.arange(2).dtype == seqlab.long  # compares as torch's


def test_star_import_leaves_the_builtins_alone():
    ns = {}
    exec("from seqlab import *", ns)  # noqa: S102
    for name in ("int", "float", "bool", "sum", "max", "min", "pow"):
        assert name not in ns, name
    assert "long" in ns and "repeat_interleave" in ns


# ---- 4. axis= for dim, size= for a shape ------------------------------------------------------------------------
AXIS_METHODS = {  # name: call(x, **kw); each run with axis=1 here and in torch
    "sum": lambda x, **k: x.sum(**k), "mean": lambda x, **k: x.mean(**k), "std": lambda x, **k: x.std(**k),
    "var": lambda x, **k: x.var(**k), "softmax": lambda x, **k: x.softmax(**k),
    "log_softmax": lambda x, **k: x.log_softmax(**k), "cumsum": lambda x, **k: x.cumsum(**k),
    "amax": lambda x, **k: x.amax(**k), "max": lambda x, **k: x.max(**k), "min": lambda x, **k: x.min(**k),
    "argmax": lambda x, **k: (x * 1, x.argmax(**k)), "argmin": lambda x, **k: (x * 1, x.argmin(**k)),
    "sum-keepdim": lambda x, **k: x.sum(keepdim=True, **k), "top-sum": lambda x, **k: (seqlab if isinstance(
        x, seqlab.Tensor) else torch).sum(x, **k),
    "top-max": lambda x, **k: (seqlab if isinstance(x, seqlab.Tensor) else torch).max(x, **k),
    "top-mean": lambda x, **k: (seqlab if isinstance(x, seqlab.Tensor) else torch).mean(x, **k),
}


@pytest.mark.parametrize("name", list(AXIS_METHODS))
def test_axis_is_an_alias_of_dim_as_torch(name):
    f = AXIS_METHODS[name]
    check_op(lambda x: f(x, axis=1), lambda x: f(x, axis=1), [(3, 4, 2)])
    check_op(lambda x: f(x, axis=1), lambda x: f(x, dim=1), [(3, 4, 2)], gradcheck_=False)  # the same as dim


@pytest.mark.parametrize("name", ["any", "all"])
def test_any_all_take_axis(name):
    s, t = _both(np.array([[True, False], [True, True]]))
    _same(getattr(s, name)(axis=1), getattr(t, name)(axis=1))
    _same(getattr(s, name)(axis=0), getattr(t, name)(dim=0))


@pytest.mark.parametrize("name", ["sum", "mean", "max", "argmax", "std", "cumsum", "softmax"])
def test_dim_and_axis_together_is_a_type_error_as_torch(name):
    s, t = _both(np.ones((2, 3), np.float32))
    with pytest.raises(TypeError):
        getattr(t, name)(dim=0, axis=1)
    with pytest.raises(TypeError, match="alias"):
        getattr(s, name)(dim=0, axis=1)


def test_cat_and_stack_take_axis_as_torch():
    a, b = RNG.standard_normal((2, 3)), RNG.standard_normal((2, 3))
    for fn in ("cat", "stack"):
        check_op(lambda x, y, fn=fn: getattr(seqlab, fn)([x, y], axis=1),
                 lambda x, y, fn=fn: getattr(torch, fn)([x, y], axis=1), [a, b])
        with pytest.raises(TypeError):
            getattr(torch, fn)([torch.ones(2), torch.ones(2)], dim=0, axis=0)
        with pytest.raises(TypeError, match="alias"):
            getattr(seqlab, fn)([seqlab.ones(2), seqlab.ones(2)], dim=0, axis=0)


def test_cumsum_without_a_dim_is_a_type_error_as_torch():
    with pytest.raises(TypeError):
        torch.ones(3).cumsum()
    with pytest.raises(TypeError, match="dim"):
        seqlab.ones(3).cumsum()


@pytest.mark.parametrize("name", ["randn", "rand", "zeros", "ones", "empty"])
@pytest.mark.parametrize("size", [(2, 3), [4]])
def test_size_keyword_gives_the_shape_as_torch(name, size):
    s, t = getattr(seqlab, name)(size=size), getattr(torch, name)(size=size)
    assert s.shape == tuple(t.shape)
    assert s.numpy().dtype == t.numpy().dtype
    with pytest.raises(TypeError):
        getattr(torch, name)(2, size=(2, 3))
    with pytest.raises(TypeError, match="size"):
        getattr(seqlab, name)(2, size=(2, 3))


def test_full_takes_size_as_a_keyword():
    _same(seqlab.full(size=(2,), fill_value=1.5), torch.full(size=(2,), fill_value=1.5))


def test_empty_gives_torchs_dtype():
    assert seqlab.empty(2, 3, dtype=seqlab.long).dtype == torch.empty(2, 3, dtype=torch.long).numpy().dtype
    assert seqlab.empty((2, 3)).shape == tuple(torch.empty((2, 3)).shape)


def test_pow_from_d2l_positional_encoding_matches_torch():
    """d2l 11.6: X = arange(max_len).reshape(-1, 1) / pow(10000, arange(0, d, 2) / d)."""
    out = []
    for L in (seqlab, torch):
        x = L.arange(6, dtype=L.float32).reshape(-1, 1) / L.pow(10000, L.arange(0, 8, 2, dtype=L.float32) / 8)
        out.append(L.cat([L.sin(x), L.cos(x)], axis=1))
    _same(*out)


def test_pow_with_an_exponent_tensor_that_needs_no_grad_matches_torch():
    check_op(lambda x, e: seqlab.pow(x, e), lambda x, e: torch.pow(x, e), [(3,), const(np.array([1.0, 2.0, 3.0]))],
             domain="positive")
