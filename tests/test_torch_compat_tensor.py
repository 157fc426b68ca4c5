"""Tensor-class gaps a review found against torch 2.13: each case runs the same thing in seqlab and torch and
compares values, dtypes, gradients and error-vs-no-error."""
import numpy as np
import pytest

import seqlab as L

torch = pytest.importorskip("torch")

DTYPES = {np.dtype(np.float32): torch.float32, np.dtype(np.float64): torch.float64,
          np.dtype(np.int64): torch.int64, np.dtype(np.int32): torch.int32, np.dtype(np.uint8): torch.uint8,
          np.dtype(bool): torch.bool}


def _same(ours, theirs, tol=1e-6):
    """Equal values, shapes and dtypes (tuples item by item)."""
    if isinstance(theirs, (tuple, list)):
        assert len(ours) == len(theirs)
        for a, b in zip(ours, theirs):
            _same(a, b, tol)
        return
    if not isinstance(theirs, torch.Tensor):
        assert type(ours) is type(theirs) and ours == theirs, (ours, theirs)
        return
    assert isinstance(ours, L.Tensor), type(ours)
    assert DTYPES[ours.dtype] == theirs.dtype, (ours.dtype, theirs.dtype)
    np.testing.assert_allclose(ours.numpy(), theirs.detach().numpy(), rtol=tol, atol=tol, equal_nan=True)


def _both(fn, *arrays, grad: bool = False):
    """fn(lib, *tensors) in seqlab and torch; with grad, the inputs require grad and their gradients of
    result.sum() are compared too. An error in one must be an error in the other."""
    outs, errors, grads = [], [], []
    for lib, make in ((L, lambda a: L.tensor(a, requires_grad=grad)),
                      (torch, lambda a: torch.tensor(a, requires_grad=grad))):
        inputs = [make(a) for a in arrays]
        try:
            out = fn(lib, *inputs)
        except Exception as e:  # noqa: BLE001 (the kind is compared below: error or not)
            outs.append(None)
            errors.append(e)
            continue
        errors.append(None)
        outs.append(out)
        if grad:
            (out if not isinstance(out, (tuple, list)) else sum(o.sum() for o in out)).sum().backward()
            grads.append([t.grad for t in inputs])
    assert (errors[0] is None) == (errors[1] is None), errors
    if errors[0] is None:
        _same(outs[0], outs[1])
        for g_ours, g_torch in zip(*grads) if grad else ():
            g_ours = np.zeros_like(g_torch.numpy()) if g_ours is None else np.asarray(g_ours)
            np.testing.assert_allclose(g_ours, g_torch.numpy(), rtol=1e-6, atol=1e-6)
    return errors[0]


def _lib_dtype(lib, name):
    return getattr(lib, name)


INTS = [1, 2, 4]
FLOATS = [1.5, -2.5, 3.0]


# ---- 1. reductions of integer and bool tensors -----------------------------------------------------------
@pytest.mark.parametrize("op", [
    lambda t: t.mean(), lambda t: (t > 1).mean(), lambda t: t.mean(0), lambda t: t.std(), lambda t: t.var(),
    lambda t: t.std(0), lambda t: t.var(unbiased=False), lambda t: t.norm(), lambda t: (t > 1).norm(),
], ids=["mean", "bool-mean", "mean-dim", "std", "var", "std-dim", "var-biased", "norm", "bool-norm"])
def test_float_only_reductions_refuse_integer_tensors(op):
    err = _both(lambda lib, t: op(t), INTS)
    assert isinstance(err, TypeError) and "floating point" in str(err) and "\n" not in str(err)


def test_mean_with_a_float_dtype_works_and_an_integer_dtype_is_refused():
    _both(lambda lib, t: t.mean(dtype=lib.float32), INTS)
    assert isinstance(_both(lambda lib, t: t.mean(dtype=lib.int64), INTS), TypeError)
    _both(lambda lib, t: t.float().mean(), INTS)  # the float path is unchanged


def test_integer_sums_and_products_are_int64():
    """uint8 sums in int64 (NumPy: uint64); the other integer dtypes and bool already did, and still do."""
    for dtype in ["uint8", "int64", "int32", "bool"]:
        for op in [lambda t: t.sum(), lambda t: t.sum(0), lambda t: t.prod(), lambda t: t.cumsum(0),
                   lambda t: t.cumprod(0)]:
            _both(lambda lib, t: op(t.to(_lib_dtype(lib, dtype))), [1, 0, 3])


@pytest.mark.parametrize("bounds", [dict(max=2.5), dict(min=2.5), dict(min=1, max=2.5), dict(min=0.5, max=0.7)])
def test_clamp_of_an_integer_tensor_promotes_as_arithmetic(bounds):
    _both(lambda lib, t: t.clamp(**bounds), INTS)
    _both(lambda lib, t: (t > 1).clamp(**bounds), INTS)
    _both(lambda lib, t: t.clamp(max=2), INTS)  # an integer bound keeps int64 (it did)


def test_clamp_result_stays_float32_in_later_math():
    _both(lambda lib, t: t.clamp(max=2.5) * lib.ones(3), INTS)
    _both(lambda lib, t: t.float().clamp(max=np.float64(0.5)), INTS)  # a NumPy float64 bound is a number too


def test_clamp_tensor_bounds_and_gradients():
    _both(lambda lib, t: t.clamp(min=-2.0, max=1.5), FLOATS, grad=True)
    _both(lambda lib, t: t.clamp(max=lib.tensor(2.5)), INTS)
    _both(lambda lib, t: t.clamp(max=lib.tensor([2.5], dtype=lib.float64)), [1.0, 2.0, 4.0])
    _both(lambda lib, t, m: t.clamp(min=m), FLOATS, [0.0, -3.0, 3.0], grad=True)  # the bound gets its gradient
    assert _both(lambda lib, t: t.clamp(), FLOATS) is not None  # no bound: refused, as torch
    # in place: an integer tensor keeps its dtype, or refuses a float result (as before)
    assert _both(lambda lib, t: t.clone().clamp_(max=2.5), INTS) is not None
    _both(lambda lib, t: t.clone().clamp_(max=2), INTS)
    _both(lambda lib, t: t.clone().clamp_(min=lib.tensor([0.0, 2.5, 5.0])), FLOATS)  # a tensor bound, in place


# ---- 2. Python builtins ----------------------------------------------------------------------------------
def test_abs_and_unary_plus():
    _both(lambda lib, t: abs(t), [-1, 2, -4])
    _both(lambda lib, t: abs(t), FLOATS, grad=True)
    _both(lambda lib, t: +t, FLOATS, grad=True)
    _both(lambda lib, t: +t, INTS)
    x = L.tensor(FLOATS)
    assert +x is x  # as torch: the tensor itself
    assert isinstance(_both(lambda lib, t: +(t > 1), INTS), TypeError)


def test_comparison_with_none():
    for lib in (L, torch):
        x = lib.tensor(INTS)
        assert (x == None) is False  # noqa: E711 (the point)
        assert (x != None) is True  # noqa: E711
    _both(lambda lib, t: t == 2, INTS)  # elementwise comparisons are unchanged
    _both(lambda lib, t: t != lib.tensor([1, 0, 4]), INTS)


@pytest.mark.parametrize("value", [2, 5, 2.0, True, np.int64(3), "tensor-row", "tensor-missing"])
def test_contains(value):
    answers = []
    for lib in (L, torch):
        v = {"tensor-row": lib.tensor([1, 2]), "tensor-missing": lib.tensor([2, 1])}.get(value, value) \
            if isinstance(value, str) else value
        answers.append(v in lib.tensor([[1, 2], [3, 4]]))
    assert type(answers[0]) is bool and answers[0] == answers[1]


def test_contains_refuses_other_types():
    with pytest.raises(TypeError, match="only supports a Tensor or a number"):
        "a" in L.tensor(INTS)  # noqa: B015
    with pytest.raises(RuntimeError):
        "a" in torch.tensor(INTS)  # noqa: B015


# ---- 3. copy_ broadcasts ---------------------------------------------------------------------------------
@pytest.mark.parametrize("dst,src", [((2, 3), (3,)), ((2, 3), (1, 3)), ((2, 3), (2, 1)), ((2, 3), ()),
                                     ((2, 3), (2,)), ((3,), (2, 3)), ((3,), (1, 1, 3))])
def test_copy_broadcasts_the_source(dst, src):
    source = np.arange(int(np.prod(src)), dtype=np.float32).reshape(src) + 1
    err = _both(lambda lib, d, s: d.copy_(s), np.zeros(dst, np.float32), source)
    if err is not None:
        assert isinstance(err, ValueError) and "does not broadcast" in str(err)


def test_copy_casts_to_the_destination_dtype():
    _both(lambda lib, d, s: d.copy_(s), np.zeros((2, 3), np.int64), [1.7, 2.2, 3.9])


# ---- 4. methods ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["add", "sub"])
def test_add_sub_alpha(name):
    for a, b, alpha in [(INTS, INTS, 2), (FLOATS, FLOATS, 2), (FLOATS, FLOATS, 0.5), (INTS, FLOATS, 2.5),
                        (INTS, INTS, 2.5), (INTS, INTS, 1.0), (INTS, 1.5, 2), (FLOATS, 3, -1)]:
        if isinstance(b, list):
            err = _both(lambda lib, x, y: getattr(x, name)(y, alpha=alpha), a, b)
        else:
            err = _both(lambda lib, x: getattr(x, name)(b, alpha=alpha), a)
        if err is not None:  # a float alpha for integer tensors
            assert isinstance(err, TypeError) and "alpha" in str(err)


def test_add_sub_alpha_gradients_and_bools():
    _both(lambda lib, x, y: x.add(y, alpha=2) * x.sub(y, alpha=0.5), FLOATS, [0.5, 1.0, -2.0], grad=True)
    _both(lambda lib, x: (x > 1).add(x > 2, alpha=2), INTS)


def test_add_sub_alpha_in_place_and_out_of_place_agree():
    _both(lambda lib, x, y: x.clone().add_(y, alpha=2), INTS, INTS)
    _both(lambda lib, x, y: x.clone().sub_(y, alpha=0.5), FLOATS, FLOATS)
    assert _both(lambda lib, x, y: x.clone().add_(y, alpha=2.5), INTS, INTS) is not None
    for lib in (L, torch):
        x, y = lib.tensor(FLOATS), lib.tensor([2.0, 3.0, 4.0])
        assert x.clone().add_(y, alpha=-3).tolist() == x.add(y, alpha=-3).tolist()


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # true division by 0 (NumPy warns, torch doesn't)
@pytest.mark.parametrize("mode", [None, "trunc", "floor"])
@pytest.mark.parametrize("a,b", [([7, -7, 7, -7], [2, 2, -2, -2]), ([7.0, -7.0, 1.0, 0.5], [2.0, 2.0, 0.1, -0.3]),
                                 ([7, -7, 7, -7], [2.5, 2.5, -2.5, -2.5]), ([1.0, -1.0, 0.0], [0.0, 0.0, 0.0])])
def test_div_rounding_mode(mode, a, b):
    _both(lambda lib, x, y: x.div(y, rounding_mode=mode), a, b)
    _both(lambda lib, x: x.div(3, rounding_mode=mode), a)


@pytest.mark.parametrize("mode", ["trunc", "floor"])
def test_div_rounding_mode_errors_and_gradient(mode):
    assert _both(lambda lib, x: x.div(0, rounding_mode=mode), INTS) is not None  # integer division by zero
    assert _both(lambda lib, x: (x > 1).div(x > 2, rounding_mode=mode), INTS) is not None
    assert isinstance(_both(lambda lib, x: x.div(2, rounding_mode="round"), INTS), ValueError)
    _both(lambda lib, x, y: x.div(y, rounding_mode=mode) + x * y, FLOATS, [2.0, 0.0, -1.5], grad=True)  # 0, also at 0


def test_div_in_place_with_rounding_mode():
    _both(lambda lib, x: x.clone().div_(2, rounding_mode="floor"), [7, -7, 3])
    _both(lambda lib, x: x.clone().div_(-2.0, rounding_mode="trunc"), FLOATS)
    assert _both(lambda lib, x: x.clone().div_(2.5, rounding_mode="trunc"), INTS) is not None
    assert _both(lambda lib, x: x.clone().div_(2), INTS) is not None


def test_tensor_where():
    _both(lambda lib, x: x.where(x > 0, 0.0), FLOATS, grad=True)
    _both(lambda lib, x: x.where(x > 1, 0.5), INTS)
    _both(lambda lib, x, y: x.where(x > 0, y), FLOATS, [9.0, 8.0, 7.0], grad=True)


@pytest.mark.parametrize("name", ["max", "min"])
def test_max_min_with_a_tensor_is_elementwise(name):
    _both(lambda lib, x, y: getattr(x, name)(y), FLOATS, [1.5, 0.0, 5.0], grad=True)  # a tie splits the gradient
    _both(lambda lib, x: getattr(x, name)(lib.tensor([2, 2, 2])), INTS)
    _both(lambda lib, x: getattr(x, name)(lib.tensor([2.5, 2.5, 2.5])), INTS)
    _both(lambda lib, x: getattr(x, name)(0), [[1.0, 5.0], [3.0, 2.0]], grad=True)  # a dim is still a dim


@pytest.mark.parametrize("value", [1, 2, 0.5])
def test_addcmul_addcdiv(value):
    _both(lambda lib, x, a, b: x.addcmul(a, b, value=value), FLOATS, [0.5, 2.0, -1.0], [3.0, 1.0, 2.0], grad=True)
    _both(lambda lib, x, a, b: x.addcdiv(a, b, value=value), FLOATS, [0.5, 2.0, -1.0], [3.0, 1.0, 2.0], grad=True)
    _both(lambda lib, x: x.addcmul(x.float(), x, value=value), INTS)
    _both(lambda lib, x: x.addcdiv(x.float(), x, value=value), INTS)
    _both(lambda lib, x: x.float().addcmul(x, x.double().reshape(3, 1), value=value), INTS)  # broadcast, float64


def test_addcmul_addcdiv_integers():
    _both(lambda lib, x: x.addcmul(x, x, value=2), INTS)
    _both(lambda lib, x: x.addcmul(x, x, value=2.5), INTS)  # torch truncates the value to the integer dtype
    err = _both(lambda lib, x: x.float().addcdiv(x > 1, x, value=2), INTS)
    assert isinstance(err, TypeError) and "integer division" in str(err)


def test_addcmul_addcdiv_in_place():
    _both(lambda lib, x, a, b: x.clone().addcmul_(a, b, value=0.5), FLOATS, FLOATS, [2.0, 3.0, 4.0])
    _both(lambda lib, x, a, b: x.clone().addcdiv_(a, b, value=-2), FLOATS, FLOATS, [2.0, 3.0, 4.0])
    assert _both(lambda lib, x: x.clone().addcmul_(x.float(), x), INTS) is not None  # float into an int tensor
    assert _both(lambda lib, x: lib.zeros(3).addcmul_(x.float().reshape(3, 1), x.float()), INTS) is not None


def test_lerp_and_pow_in_place():
    _both(lambda lib, x, e: x.clone().lerp_(e, 0.25), FLOATS, [0.0, 1.0, 2.0])
    _both(lambda lib, x, e, w: x.clone().lerp_(e, w), FLOATS, [0.0, 1.0, 2.0], [0.5, 0.1, 1.0])
    assert _both(lambda lib, x: x.clone().lerp_(x, 0.5), INTS) is not None
    _both(lambda lib, x: x.clone().pow_(2), FLOATS)
    _both(lambda lib, x: x.clone().pow_(2), INTS)
    _both(lambda lib, x, p: x.clone().pow_(p), [1.0, 2.0, 3.0], [2.0, 0.5, 1.0])
    assert _both(lambda lib, x: x.clone().pow_(2.5), INTS) is not None


def test_ipow_is_in_place_outside_the_graph_and_rebinds_inside():
    for lib in (L, torch):
        x = lib.tensor(FLOATS)
        y = x
        y **= 2
        assert y is x
        np.testing.assert_allclose(np.asarray(x.tolist()), np.asarray(FLOATS) ** 2)
    x = L.tensor(FLOATS, requires_grad=True)
    y = x * 1
    y **= 2  # a tensor of a graph: out of place, so the gradient flows (torch: in place, same gradient)
    y.sum().backward()
    np.testing.assert_allclose(x.grad, 2 * np.asarray(FLOATS, np.float32))
    with pytest.raises(RuntimeError, match="pow_"):
        L.tensor(FLOATS, requires_grad=True).pow_(2)  # a leaf that requires grad: refused, as torch


def test_in_place_with_an_operand_that_requires_grad_is_refused():
    e = L.tensor(FLOATS, requires_grad=True)
    with pytest.raises(RuntimeError, match="lerp_: the operand requires grad"):
        L.zeros(3).lerp_(e, 0.5)
    with pytest.raises(RuntimeError, match="addcmul_: the operand requires grad"):
        L.zeros(3).addcmul_(e, e)


@pytest.mark.parametrize("fn", [lambda lib, x: (x > 1) ^ (x > 2), lambda lib, x: True ^ (x > 1),
                                lambda lib, x: x ^ 3, lambda lib, x: 3 ^ x, lambda lib, x: (x > 1) ^ 2,
                                lambda lib, x: (x > 1) ^ x, lambda lib, x: x.int() ^ x,
                                lambda lib, x: x.int() ^ lib.tensor(3), lambda lib, x: x.bitwise_xor(5)],
                         ids=["bool", "rbool", "int", "rint", "bool-int", "bool-tensor", "int32-int64", "0d", "method"])
def test_xor(fn):
    _both(fn, INTS)


def test_xor_refuses_floats_and_ixor():
    assert isinstance(_both(lambda lib, x: x.float() ^ 1, INTS), TypeError)
    assert isinstance(_both(lambda lib, x: x ^ 1.5, INTS), TypeError)
    for lib in (L, torch):
        b = lib.tensor([True, False, True])
        c = b
        c ^= lib.tensor([True, True, False])
        assert c is b and b.tolist() == [False, True, True]
    _both(lambda lib, x: x.clone().__ixor__(6), INTS)
    assert _both(lambda lib, x: (x > 1).__ixor__(2), INTS) is not None  # int into a bool tensor


@pytest.mark.parametrize("arg", [2, 3, 5, 7, [1, 5], (1, 5), [-2], [3, -5], [5, 2, 9], [], "t-sections", "t-indices"])
def test_tensor_split(arg):
    def fn(lib, x):
        a = {"t-sections": lib.tensor(3), "t-indices": lib.tensor([1, 5])}.get(arg, arg) \
            if isinstance(arg, str) else arg
        return x.tensor_split(a)
    _both(fn, list(range(7)))
    _both(lambda lib, x: x.tensor_split(arg if not isinstance(arg, str) else 2, dim=1),
          np.arange(14.0).reshape(2, 7), grad=True)


def test_tensor_split_keywords_and_errors():
    _both(lambda lib, x: x.tensor_split(sections=2), [0, 1, 2])
    _both(lambda lib, x: x.tensor_split(indices=[1]), [0, 1, 2])
    _both(lambda lib, x: x.tensor_split(2, -1), np.arange(6).reshape(2, 3))
    assert isinstance(_both(lambda lib, x: x.tensor_split(0), INTS), ValueError)
    assert isinstance(_both(lambda lib, x: x.sum().tensor_split(2), INTS), ValueError)
    assert isinstance(_both(lambda lib, x: x.tensor_split(lib.tensor([1.0])), INTS), TypeError)


@pytest.mark.parametrize("method, dtype", [("float", "float32"), ("double", "float64"), ("half", "float16"),
                                           ("long", "int64"), ("int", "int32"), ("short", "int16"),
                                           ("bool", "bool")])
def test_dtype_methods_return_the_tensor_itself_when_it_has_the_dtype(method, dtype):
    """torch's x.float() is x.to(float32): x itself when it is float32 already (an in-place change shows in
    both), a new tensor otherwise; a float result keeps the graph, an integer one has none."""
    for lib in (L, torch):
        x = lib.zeros(3, dtype=getattr(lib, dtype))
        assert getattr(x, method)() is x, (lib.__name__, method)
        other = lib.zeros(3, dtype=lib.float64 if dtype != "float64" else lib.float32, requires_grad=True)
        y = getattr(other, method)()
        assert y is not other and str(y.dtype).replace("torch.", "") == dtype
        assert y.requires_grad == (dtype.startswith("float")), (lib.__name__, method)
    w = L.ones(2, requires_grad=True)
    (w.double() * 3).sum().backward()
    assert w.grad.tolist() == [3.0, 3.0]



def test_an_empty_list_and_a_uint8_tensor_index_as_torchs():
    """x[[]] takes no rows (NumPy would read the empty list as a float array and refuse it); a uint8 tensor is
    a mask, as torch reads it (with a warning there and here), not a list of row numbers; both for reading,
    writing and the gradient."""
    import warnings
    a = np.arange(12.0, dtype=np.float32).reshape(3, 4)
    for index, warns in ((lambda lib: [], False), (lambda lib: lib.tensor([1, 0, 1], dtype=lib.uint8), True)):
        got = []
        for lib in (L, torch):
            x = lib.tensor(a, requires_grad=True)
            z = lib.zeros(3, 4)
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                y = x[index(lib)]
                if not warns:  # torch refuses to write through a uint8 mask (masked_fill_ takes bool only)
                    z[index(lib)] = 1.0
            assert len([w for w in caught if "uint8" in str(w.message)]) == (1 if warns else 0), lib.__name__
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # torch's backward warns about the uint8 index once more
                (y * 2).sum().backward()
            got.append((tuple(y.shape), np.asarray(y.tolist()), np.asarray(x.grad if lib is L else x.grad.numpy()),
                        np.asarray(z.tolist())))
        (s1, v1, g1, z1), (s2, v2, g2, z2) = got
        assert s1 == s2
        np.testing.assert_array_equal(v1.reshape(s1), v2.reshape(s2))
        np.testing.assert_array_equal(g1, g2)
        np.testing.assert_array_equal(z1, z2)
    with pytest.warns(UserWarning, match="uint8"):
        assert L.tensor(a)[L.tensor([1, 0, 1], dtype=L.uint8)].shape == (2, 4)  # rows 0 and 2, not 1, 0, 1
    z = L.zeros(3, 4)
    with pytest.warns(UserWarning, match="uint8"):
        z[L.tensor([1, 0, 1], dtype=L.uint8)] = 1.0  # seqlab writes through it as the mask it reads
    assert z.sum().item() == 8.0


@pytest.mark.parametrize("take", [
    lambda x: x, lambda x: x[1:, ::2], lambda x: x.t(), lambda x: x[:, 2], lambda x: x.unsqueeze(1).expand(3, 2, 4),
    lambda x: x.reshape(2, 6)[1], lambda x: x[2, 3], lambda x: x.permute(1, 0)[1:3],
], ids=["whole", "sliced", "t", "column", "expanded", "reshaped row", "0-d", "permuted slice"])
def test_strides_offsets_and_sizes_as_torchs(take):
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    ours, theirs = take(L.tensor(a)), take(torch.tensor(a))
    assert ours.stride() == theirs.stride()
    for d in range(-ours.ndim, ours.ndim):
        assert ours.stride(d) == theirs.stride(d)
    assert ours.storage_offset() == theirs.storage_offset()
    assert (ours.nbytes, ours.itemsize) == (theirs.nbytes, theirs.itemsize)
    with pytest.raises(IndexError, match="Dimension"):
        ours.stride(max(ours.ndim, 1))
    with pytest.raises(IndexError, match="Dimension"):
        theirs.stride(max(theirs.ndim, 1))


def test_data_ptr_says_where_the_first_element_lies():
    x = L.zeros(4, 3)
    assert x.data_ptr() == x[0].data_ptr() == x.view(12).data_ptr()
    assert x[1].data_ptr() - x.data_ptr() == 3 * x.element_size()
    assert x.clone().data_ptr() != x.data_ptr()


def test_retain_grad_and_retains_grad_as_torchs():
    for lib in (L, torch):
        with pytest.raises(RuntimeError, match="can't retain_grad on Tensor that has requires_grad=False"):
            lib.zeros(2).retain_grad()
    a, ta = L.ones(2, requires_grad=True), torch.ones(2, requires_grad=True)
    b, tb = a * 3, ta * 3
    for x, tx in ((a, ta), (b, tb)):
        assert x.retains_grad == tx.retains_grad
        x.retain_grad()
        tx.retain_grad()
        assert x.retains_grad == tx.retains_grad  # a leaf: False, it keeps its .grad anyway
    (b * b).sum().backward()
    (tb * tb).sum().backward()
    np.testing.assert_allclose(b.grad, tb.grad.numpy())
    np.testing.assert_allclose(a.grad, ta.grad.numpy())


@pytest.mark.parametrize("values", [[2, 4, -1], [True, False]])
def test_reciprocal_of_integers_and_bools_is_the_default_float(values):
    _same(L.tensor(values).reciprocal(), torch.tensor(values).reciprocal())
    _same(L.reciprocal(L.tensor(values)), torch.reciprocal(torch.tensor(values)))


@pytest.mark.parametrize("p", [0, float("-inf")])
@pytest.mark.parametrize("dim,keepdim", [(None, False), (1, True), ((0, 1), False), (-1, False)])
def test_norm_zero_counts_nonzeros_and_minus_inf_takes_the_smallest(p, dim, keepdim):
    a = np.array([[0.0, 1.5, -2.0, np.inf], [0.0, 0.0, 3.0, -0.5]], dtype=np.float32)
    x, t = L.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    y, ty = x.norm(p, dim, keepdim), t.norm(p, dim, keepdim)
    _same(y, ty)
    y.sum().backward()
    ty.sum().backward()
    want = np.zeros_like(a) if t.grad is None else t.grad.numpy()  # p = 0: torch leaves no gradient, seqlab zeros
    np.testing.assert_array_equal(x.grad, want)


@pytest.mark.parametrize("values", [[[1, -2], [0, 3]], [[True, False]], [[0.5, -1.5]]])
@pytest.mark.parametrize("name", ["sigmoid", "tanh"])
def test_functional_sigmoid_and_tanh_promote_as_torchs(name, values):
    import torch.nn.functional as TF

    import seqlab.nn.functional as SF

    _same(getattr(SF, name)(L.tensor(values)), getattr(TF, name)(torch.tensor(values)))
    _same(getattr(SF, name)(input=L.tensor(values)), getattr(TF, name)(input=torch.tensor(values)))


@pytest.mark.parametrize("call", [lambda F, x: F.silu(x, False), lambda F, x: F.silu(input=x, inplace=False),
                                  lambda F, x: F.leaky_relu(x, 0.2, False),
                                  lambda F, x: F.leaky_relu(input=x, negative_slope=0.1, inplace=False)])
def test_silu_and_leaky_relu_take_torchs_arguments(call):
    import torch.nn.functional as TF

    import seqlab.nn.functional as SF

    a = np.array([[-1.5, 0.0, 2.0]], dtype=np.float32)
    _same(call(SF, L.tensor(a)), call(TF, torch.tensor(a)))


def test_dropout_and_silu_take_torchs_inplace_argument():
    import torch.nn.functional as TF

    import seqlab.nn.functional as SF

    a = np.ones((4, 5), dtype=np.float32)
    _same(SF.dropout(L.tensor(a), 0.5, False, False), TF.dropout(torch.tensor(a), 0.5, False, False))
    _same(SF.dropout(input=L.tensor(a), p=0.3, training=False, inplace=False),
          TF.dropout(input=torch.tensor(a), p=0.3, training=False, inplace=False))
    kept = SF.dropout(L.tensor(a), 0.5, True, False, generator=np.random.default_rng(0)).numpy()
    assert set(np.unique(kept)) <= {0.0, 2.0} and 0 < (kept == 0).sum() < a.size
    _same(L.nn.SiLU(inplace=True)(L.tensor(a)), torch.nn.SiLU(inplace=False)(torch.tensor(a)))


def test_adam_with_decoupled_weight_decay_is_adamw_as_torchs():
    a = np.random.default_rng(0).standard_normal((3, 2)).astype(np.float32)
    ours, theirs = L.nn.Parameter(L.tensor(a)), torch.nn.Parameter(torch.tensor(a))
    opt = L.optim.Adam([ours], lr=0.1, weight_decay=0.5, decoupled_weight_decay=True)
    topt = torch.optim.Adam([theirs], lr=0.1, weight_decay=0.5, decoupled_weight_decay=True)
    for _ in range(3):
        for p, o in ((ours, opt), (theirs, topt)):
            o.zero_grad()
            (p ** 2).sum().backward()
            o.step()
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=1e-6, atol=1e-7)
    assert not L.optim.Adam([L.nn.Parameter(L.tensor(a))], weight_decay=0.5).decoupled  # default: L2, torch's


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.uint8, np.int64])
@pytest.mark.parametrize("number", [np.float64(1.5), np.int64(3), np.float32(2.0), 2, 0.5])
def test_numpy_numbers_count_as_python_numbers_in_pow_and_bitwise_ops(dtype, number):
    a = np.array([[1, 2], [3, 4]], dtype=dtype)
    _same(L.tensor(a) ** number, torch.tensor(a) ** number)
    if np.dtype(dtype).kind in "iu" and isinstance(number, (int, np.integer)):
        _same(L.tensor(a) & number, torch.tensor(a) & number)
        _same(L.tensor(a) | number, torch.tensor(a) | number)


@pytest.mark.parametrize("other", [lambda lib: lib.tensor([3, 300], dtype=lib.int64), lambda lib: np.int64(250),
                                   lambda lib: lib.tensor([1, 2], dtype=lib.int32)])
@pytest.mark.parametrize("op", ["add_", "mul_", "sub_"])
def test_in_place_arithmetic_casts_back_to_a_narrower_integer_dtype_as_torchs(op, other):
    ours, theirs = L.tensor([7, 200], dtype=L.uint8), torch.tensor([7, 200], dtype=torch.uint8)
    getattr(ours, op)(other(L))
    getattr(theirs, op)(other(torch))
    _same(ours, theirs)
    with pytest.raises(RuntimeError, match="can't be cast"):
        L.tensor([1, 2], dtype=L.uint8).add_(L.tensor([0.5, 1.0]))  # a float into an integer tensor: refused


@pytest.mark.parametrize("dtype", [np.uint8, np.int64, bool, np.float32])
@pytest.mark.parametrize("name", ["all", "any"])
def test_all_and_any_keep_uint8_as_torchs(dtype, name):
    a = np.array([[0, 1, 2], [3, 4, 5]], dtype=dtype)
    for args in ((), (1,), (0, True)):
        _same(getattr(L.tensor(a), name)(*args), getattr(torch.tensor(a), name)(*args))


def test_norm_dtype_and_msort_as_torchs():
    a = np.random.default_rng(0).standard_normal((4, 3)).astype(np.float32)
    _same(L.tensor(a).norm(2, 1, dtype=L.float64), torch.tensor(a).norm(2, 1, dtype=torch.float64))
    _same(L.tensor(a).msort(), torch.tensor(a).msort())
    _same(L.msort(L.tensor(a)), torch.msort(torch.tensor(a)))


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("call", [lambda x: x[:1].std(), lambda x: x[:1].var(), lambda x: x.reshape(1, 2).var(0)])
def test_variance_with_no_degrees_of_freedom_is_nan_with_a_nan_gradient_as_torchs(call):
    ours, theirs = L.tensor([1.0, 2.0], requires_grad=True), torch.tensor([1.0, 2.0], requires_grad=True)
    y, ty = call(ours), call(theirs)
    _same(y.detach(), ty.detach())
    y.sum().backward()
    ty.sum().backward()
    np.testing.assert_array_equal(ours.grad, theirs.grad.numpy())  # NaN where torch's is, not a ZeroDivisionError


# ---- subtraction and negation of bools: torch's refusals ------------------------------------------------
@pytest.mark.parametrize("expr", ["b - b", "b - 1", "1 - b", "b - 1.5", "i - b", "b - i", "i - True", "True - i",
                                  "b.sub(b)", "f - b", "f.sub_(b)", "i.sub_(b)", "lib.sub(i, b)", "-b", "b.neg()",
                                  "b.negative()", "lib.neg(b)"])
def test_bool_subtraction_and_negation_raise_torchs_error(expr):
    def run(lib):
        b, i = lib.tensor([True, False]), lib.tensor([1, 2])
        f = lib.tensor([0.5, 1.5])
        try:
            eval(expr)
        except RuntimeError as e:
            return str(e)
        return None

    expected = run(torch)
    assert expected is not None
    assert run(L) == expected


def test_numeric_subtraction_and_mask_inversion_still_work():
    b = L.tensor([True, False])
    assert (~b).tolist() == [False, True]
    assert b.logical_not().tolist() == [False, True]
    assert (b ^ b).tolist() == [False, False]
    assert (L.tensor([3, 4]) - 1).tolist() == [2, 3]
    assert (b.float() - 1).tolist() == [0.0, -1.0]
