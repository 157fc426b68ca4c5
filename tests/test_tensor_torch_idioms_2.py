"""More torch idioms from porting torch's tutorials, each compared with torch on the same inputs: var/std's
positional `unbiased`, the dtypes of where/full, requires_grad_ on integer tensors, item assignment and
masked_fill_, f-strings of tensors, sorting (sort/topk/argsort), cumsum, `//` and `%`, new_*/*_like, and the
top-level `seqlab.*` functions."""
import numpy as np
import pytest
import torch
from helpers import check_op, const, same_as_torch

import seqlab

RNG = np.random.default_rng(1)


def _pair(*shape, requires_grad=False, dtype=np.float32):
    a = RNG.standard_normal(shape).astype(dtype)
    return seqlab.tensor(a.copy(), requires_grad=requires_grad), torch.tensor(a.copy(), requires_grad=requires_grad)


_same = same_as_torch


# ---- 1. var / std: torch's argument positions --------------------------------------------------------------
VAR_CALLS = {  # the arguments, passed alike to seqlab and torch
    "dim,unbiased=False": ((1, False), {}),
    "dim,unbiased=True": ((1, True), {}),
    "dim,unbiased,keepdim": ((1, False, True), {}),
    "unbiased-only": ((False,), {}),
    "dims-tuple": (((0, 2), False), {}),
    "keywords": ((), {"dim": -1, "unbiased": False, "keepdim": True}),
    "correction=0": ((), {"correction": 0}),
    "dim,correction=2,keepdim": ((1,), {"correction": 2, "keepdim": True}),
    "default": ((), {}),
}


@pytest.mark.parametrize("op", ["var", "std"])
@pytest.mark.parametrize("name", list(VAR_CALLS))
def test_var_and_std_take_torchs_positional_unbiased_and_correction(op, name):
    args, kw = VAR_CALLS[name]
    check_op(lambda x: getattr(x, op)(*args, **kw), lambda x: getattr(x, op)(*args, **kw), [(3, 4, 2)])


def test_var_refuses_unbiased_and_correction_together_as_torch():
    s, t = _pair(3, 4)
    with pytest.raises(TypeError):
        t.var(1, unbiased=True, correction=0)
    with pytest.raises(TypeError, match="unbiased or correction, not both"):
        s.var(1, unbiased=True, correction=0)
    with pytest.raises(TypeError, match="unbiased or correction, not both"):
        s.std(1, False, correction=0)


@pytest.mark.parametrize("call", ["std()", "std(1, unbiased=False)", "std(0)", "std_mean(1)"])
def test_std_of_a_constant_row_has_a_zero_gradient_as_torch(call):
    """An audit found nan where torch gives 0: √var's gradient 1/(2·std) at std = 0 (torch masks it)."""
    a = np.array([[2.0, 2.0, 2.0], [1.0, 2.0, 4.0]], np.float32)
    grads = []
    for lib in (seqlab, torch):
        x = lib.tensor(a, requires_grad=True)
        y = lib.std_mean(x, 1)[0] if call == "std_mean(1)" else eval(f"x.{call}")  # noqa: S307 - the cases above
        y.sum().backward()
        grads.append(np.asarray(x.grad))
    assert np.isfinite(grads[0]).all()
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-5, atol=1e-6)


# ---- 2. where: torch's result dtypes ---------------------------------------------------------------------------
COND = np.array([[True, False, True], [False, True, False]])
I64 = np.array([[1, 2, 3], [4, 5, 6]])
F32 = np.array([[0.5, 1.5, 2.5], [3.5, 4.5, 5.5]], np.float32)
F64 = F32.astype(np.float64) * 3
WHERE_CASES = {  # (input, other): numbers as they are, arrays as tensors
    "float,float": (1.0, 0.0), "int,int": (1, 0), "bool,bool": (True, False), "int,float": (1, 0.5),
    "bool,int": (True, 2), "i64,float": (I64, 0.5), "f32,int": (F32, 2), "f32,float": (F32, -1.5),
    "f64,float": (F64, 0.25), "i64,f32": (I64, F32), "f32,f64": (F32, F64), "0d-f64,f32": (np.float64(7.0), F32),
    "float,f32": (2.5, F32), "bool-tensor,int": (COND, 3), "int,i64": (7, I64),
}


@pytest.mark.parametrize("name", list(WHERE_CASES))
def test_where_gives_torchs_dtype(name):
    a, b = WHERE_CASES[name]

    def conv(v, lib):
        if isinstance(v, np.ndarray):
            return seqlab.tensor(v) if lib is seqlab else torch.tensor(v)
        if isinstance(v, np.float64):  # a 0-d float64 tensor
            return lib.tensor(float(v), dtype=lib.float64)
        return v
    got = seqlab.where(seqlab.tensor(COND), conv(a, seqlab), conv(b, seqlab))
    want = torch.where(torch.tensor(COND), conv(a, torch), conv(b, torch))
    _same(got, want)


def test_where_gradient_reaches_tensors_of_two_dtypes_as_torch():
    x32 = RNG.standard_normal((2, 3)).astype(np.float32)
    x64 = RNG.standard_normal((2, 3))
    s32, s64 = seqlab.tensor(x32, requires_grad=True), seqlab.tensor(x64, requires_grad=True)
    t32, t64 = torch.tensor(x32, requires_grad=True), torch.tensor(x64, requires_grad=True)
    w = RNG.standard_normal((2, 3))
    so, to = seqlab.where(seqlab.tensor(COND), s32, s64), torch.where(torch.tensor(COND), t32, t64)
    _same(so, to)
    (so * seqlab.tensor(w)).sum().backward()
    (to * torch.tensor(w)).sum().backward()
    _same(seqlab.tensor(s32.grad), t32.grad)
    _same(seqlab.tensor(s64.grad), t64.grad)


def test_where_with_a_number_keeps_the_gradient():
    check_op(lambda x, c: seqlab.where(c, x, 0.5), lambda x, c: torch.where(c, x, 0.5), [(2, 3), COND])
    check_op(lambda x, c: seqlab.where(c, 2, x), lambda x, c: torch.where(c, 2, x), [(2, 3), COND])


# ---- 3. full: the fill value's dtype ---------------------------------------------------------------------------
@pytest.mark.parametrize("value,dtype", [(3, None), (True, None), (2.5, None), (3, "float64"), (1.5, "int64"),
                                         (0, "bool"), (-2, "int32")])
def test_full_takes_the_value_s_dtype_as_torch(value, dtype):
    got = seqlab.full((2, 3), value, dtype=None if dtype is None else np.dtype(dtype))
    want = torch.full((2, 3), value, dtype=None if dtype is None else getattr(torch, dtype))
    _same(got, want)
    _same(seqlab.full(size=(2,), fill_value=value), torch.full(size=(2,), fill_value=value))  # torch's names


# ---- 4. requires_grad_ on integer and bool tensors ---------------------------------------------------------
@pytest.mark.parametrize("values", [[1, 2], [True, False]])
def test_requires_grad_on_a_non_float_tensor_raises_as_the_constructor(values):
    with pytest.raises(RuntimeError, match="only Tensors of floating point dtype can require gradients"):
        torch.tensor(values).requires_grad_()
    s = seqlab.tensor(values)
    with pytest.raises(TypeError, match="only floating-point tensors can require gradients"):
        s.requires_grad_()
    with pytest.raises(TypeError, match="only floating-point tensors can require gradients"):
        seqlab.tensor(values, requires_grad=True)
    assert not s.requires_grad
    assert s.requires_grad_(False) is s and not s.requires_grad  # as torch: switching it off is fine
    assert not torch.tensor(values).requires_grad_(False).requires_grad
    f = seqlab.tensor([1.0, 2.0])
    assert f.requires_grad_() is f and f.requires_grad


# ---- 5. item assignment -----------------------------------------------------------------------------------------
SETITEM_CASES = {  # (dtype of the tensor, index, value); arrays in either become tensors
    "int-row": (np.float32, 1, 2.5),
    "mask": (np.float32, "mask", 0),
    "column-tensor": (np.float32, (slice(None), 0), np.array([7.0, 8.0], np.float32)),
    "float64-value-into-float32": (np.float32, (0, slice(1, 3)), np.array([1 / 3, 2 / 3])),
    "float-into-int": (np.int64, (1, 2), 2.7),
    "index-tensor": (np.float32, np.array([1, 0]), np.array([[1.0, 2.0, 3.0]], np.float32)),
    "broadcast-row": (np.float32, slice(None), np.array([1.0, 2.0, 3.0], np.float32)),
    "bool-tensor": (np.bool_, (0, 0), False),
    "ellipsis-scalar-tensor": (np.float32, Ellipsis, np.float32(4.25)),
}


@pytest.mark.parametrize("name", list(SETITEM_CASES))
def test_setitem_matches_torch(name):
    dtype, index, value = SETITEM_CASES[name]
    base = (RNG.standard_normal((2, 3)) * 5).astype(dtype)
    s, t = seqlab.tensor(base.copy()), torch.tensor(base.copy())

    def conv(v, lib):
        if isinstance(v, str):
            return conv(base > 0 if dtype != np.bool_ else base, lib)
        if isinstance(v, tuple):
            return tuple(conv(i, lib) for i in v)
        if isinstance(v, (np.ndarray, np.generic)):
            return seqlab.tensor(v) if lib is seqlab else torch.tensor(v)
        return v
    alias = s
    s[conv(index, seqlab)] = conv(value, seqlab)
    t[conv(index, torch)] = conv(value, torch)
    assert alias is s
    _same(s, t)
    assert not np.array_equal(s.numpy(), base) or name == "bool-tensor"


def test_setitem_under_no_grad_changes_a_parameter_as_torch():
    s, t = _pair(2, 3, requires_grad=True)
    with seqlab.no_grad():
        s[0] = 0.0
        s[:, 1] = seqlab.tensor([5.0, 6.0])
    with torch.no_grad():
        t[0] = 0.0
        t[:, 1] = torch.tensor([5.0, 6.0])
    assert s.requires_grad and s.is_leaf
    _same(s, t)
    (s * s).sum().backward()
    (t * t).sum().backward()
    np.testing.assert_allclose(s.grad, t.grad.numpy(), rtol=1e-6)


def test_setitem_into_a_leaf_that_requires_grad_raises_one_line_as_torch():
    leaf = seqlab.tensor([1.0, 2.0, 3.0], requires_grad=True)
    for change in (lambda: leaf.__setitem__(1, 0.0), lambda: leaf.masked_fill_(leaf > 1, 0.0)):
        with pytest.raises(RuntimeError, match="leaf tensor that requires grad") as err:
            change()
        assert "no_grad" in str(err.value) and "\n" not in str(err.value)
        np.testing.assert_array_equal(leaf.numpy(), [1.0, 2.0, 3.0])  # nothing written
    with pytest.raises(RuntimeError, match="read-only"):
        seqlab.zeros(3).expand(2, 3)[0, 0] = 1.0


def _assign_in_graph(lib, x, w):
    """Assignments into tensors of a graph, as torch code writes them (d2l's masked softmax among them)."""
    y = x * 2
    y[0] = w  # a value that requires grad
    y[:, 1] = 5.0  # a number
    y[y > 1] = -1.0  # a mask
    y.masked_fill_(y < -0.5, 0.25)
    scores = (y @ x.T).reshape(-1)  # d2l: X = X.reshape(-1, n); X[~mask] = -1e6; softmax
    keep = lib.tensor([True, False, True] * 3)
    scores[~keep] = -1e6
    z = lib.zeros(3)
    z[1] = w[2]  # into a tensor outside the graph: it joins it
    return (scores.reshape(3, 3).softmax(-1) * y[:, :3]).sum() + (z * z).sum()


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_setitem_and_masked_fill_in_the_graph_are_recorded_as_torch(dtype):
    """In a graph, an assignment is recorded as torch records it: later ops see the written values and the
    gradient goes to the written value and, at the places left alone, to the tensor written into."""
    x_s, x_t = _pair(3, 4, requires_grad=True, dtype=dtype)
    w_s, w_t = _pair(4, requires_grad=True, dtype=dtype)
    out_s, out_t = _assign_in_graph(seqlab, x_s, w_s), _assign_in_graph(torch, x_t, w_t)
    out_s.backward()
    out_t.backward()
    tol = dict(rtol=1e-5, atol=1e-6) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(out_s.item(), out_t.item(), **tol)
    np.testing.assert_allclose(x_s.grad, x_t.grad.numpy(), **tol)
    np.testing.assert_allclose(w_s.grad, w_t.grad.numpy(), **tol)


def test_an_assignment_in_the_graph_writes_a_copy():
    """The documented difference: seqlab writes into a copy, so a tensor that shared the memory before the
    write (a reshape, a slice) keeps the old values, where torch's view would see the new ones. The gradient
    of each follows the values it holds."""
    x = seqlab.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * 1.0
    row = y[1:]  # shares y's memory until the write
    y[1] = 10.0
    assert y.tolist() == [1.0, 10.0, 3.0] and row.tolist() == [2.0, 3.0]
    (y.sum() + row.sum()).backward()
    assert x.grad.tolist() == [1.0, 1.0, 2.0]


def test_setitem_on_an_array_saved_for_backward_makes_backward_raise_as_torch():
    w_s, w_t = _pair(3, requires_grad=True)
    x_s, x_t = _pair(3)
    y_s, y_t = (w_s * x_s).sum(), (w_t * x_t).sum()  # Mul saves x for w's gradient
    x_s[0] = 10.0
    x_t[0] = 10.0
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y_t.backward()
    with pytest.raises(RuntimeError, match="changed in place"):
        y_s.backward()


def test_masked_fill_in_place_matches_torch():
    s, t = _pair(2, 3)
    mask = np.array([True, False, True])  # broadcast over the rows
    alias = s
    assert s.masked_fill_(seqlab.tensor(mask), -1.5) is alias
    t.masked_fill_(torch.tensor(mask), -1.5)
    _same(s, t)
    si, ti = seqlab.tensor([[1, 2], [3, 4]]), torch.tensor([[1, 2], [3, 4]])
    m2 = np.array([[True, False], [False, True]])
    si.masked_fill_(seqlab.tensor(m2), seqlab.tensor(9.7))  # a 0-d tensor value, cast to the int dtype
    ti.masked_fill_(torch.tensor(m2), torch.tensor(9.7))
    _same(si, ti)
    with pytest.raises(ValueError, match=r"mask of shape \(3, 3\) does not broadcast to the tensor's shape \(2, 3\)"):
        s.masked_fill_(seqlab.tensor(np.ones((3, 3), bool)), 0.0)
    with pytest.raises(TypeError, match="bool mask"):
        s.masked_fill_(seqlab.tensor([1, 0, 1]), 0.0)
    leaf = seqlab.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf tensor that requires grad"):
        leaf.masked_fill_(seqlab.tensor(mask), 0.0)
    with seqlab.no_grad():
        leaf.masked_fill_(seqlab.tensor(mask), 0.0)
    assert leaf.tolist() == [0.0, 1.0, 0.0] and leaf.requires_grad


# ---- 6. f-strings and round() ---------------------------------------------------------------------------------
def test_format_of_a_tensor():
    loss_s, loss_t = seqlab.tensor(0.123456), torch.tensor(0.123456)
    assert f"{loss_s:.4f}" == f"{loss_t:.4f}" == "0.1235"
    assert f"{seqlab.tensor(3):>4d}" == f"{torch.tensor(3):>4d}" == "   3"
    assert f"{seqlab.tensor([2.5]):.2f}" == "2.50"  # one element with dims: torch formats only 0-d
    s = seqlab.tensor([[1.0, 2.0], [3.0, 4.0]])
    assert f"{s}" == str(s) == repr(s) and "{}".format(s) == str(s)
    with pytest.raises(TypeError, match=r"shape \(2, 2\)"):
        f"{s:.2f}"


def test_round_of_a_one_element_tensor():
    assert round(seqlab.tensor(2.5)) == round(2.5) == 2
    assert round(seqlab.tensor([3.14159]), 2) == round(float(np.float32(3.14159)), 2)
    assert isinstance(round(seqlab.tensor(1.6)), int)
    with pytest.raises(TypeError, match="one element"):
        round(seqlab.tensor([1.0, 2.0]))


# ---- 7. methods ---------------------------------------------------------------------------------------------------
def test_t_and_view_as_as_torch():
    check_op(lambda x: x.t(), lambda x: x.t(), [(2, 3)])
    check_op(lambda x: x.t(), lambda x: x.t(), [(3,)])
    check_op(lambda x, y: x.view_as(y), lambda x, y: x.view_as(y), [(2, 6), const(np.zeros((3, 4)))])
    with pytest.raises(RuntimeError, match="t\\(\\) expects a tensor with <= 2 dimensions, but self is 3D"):
        torch.zeros(2, 2, 2).t()
    with pytest.raises(ValueError, match="t\\(\\) expects a tensor with <= 2 dimensions, but self is 3D"):
        seqlab.zeros(2, 2, 2).t()


@pytest.mark.parametrize("op", ["all", "any"])
@pytest.mark.parametrize("args", [(), (0,), (1, True), (-1,), ((0, 1),)])
def test_all_and_any_as_torch(op, args):
    for data in ([[1.0, 0.0, 2.0], [3.0, 4.0, 5.0]], [[0, 0, 0], [0, 0, 0]], [[True, True], [True, False]],
                 [[1, 2], [3, 4]]):
        got = getattr(seqlab.tensor(data), op)(*args)
        want = getattr(torch.tensor(data), op)(*args)
        _same(got, want)


@pytest.mark.parametrize("k,dim,largest", [(2, -1, True), (1, 0, True), (3, 1, False), (4, -1, False), (0, 1, True)])
def test_topk_values_indices_and_gradient_as_torch(k, dim, largest):
    check_op(lambda x: x.topk(k, dim, largest), lambda x: x.topk(k, dim, largest), [(3, 4)])
    check_op(lambda x: seqlab.topk(x, k, dim=dim, largest=largest),
             lambda x: torch.topk(x, k, dim=dim, largest=largest), [(3, 4)])
    s, t = _pair(3, 4)
    rs, rt = s.topk(k, dim=dim, largest=largest), t.topk(k, dim=dim, largest=largest)
    _same(rs.values, rt.values)
    _same(rs.indices, rt.indices)


def test_topk_k_out_of_range_raises():
    with pytest.raises(RuntimeError, match="selected index k out of range"):
        torch.zeros(2, 3).topk(4)
    with pytest.raises(ValueError, match="selected index k out of range"):
        seqlab.zeros(2, 3).topk(4)


@pytest.mark.parametrize("dim,descending", [(-1, False), (0, True), (1, True), (0, False)])
def test_sort_and_argsort_as_torch(dim, descending):
    check_op(lambda x: x.sort(dim, descending), lambda x: x.sort(dim, descending), [(3, 4)])
    check_op(lambda x: seqlab.sort(x, dim=dim, descending=descending),
             lambda x: torch.sort(x, dim=dim, descending=descending), [(3, 4)])
    s, t = _pair(3, 4)
    _same(s.argsort(dim, descending), t.argsort(dim, descending))
    _same(seqlab.argsort(s, dim=dim, descending=descending), torch.argsort(t, dim=dim, descending=descending))
    rs = s.sort(dim=dim, descending=descending)
    _same(rs.values, t.sort(dim=dim, descending=descending).values)


def test_sort_keeps_ties_in_order_as_torchs_stable_sort():
    data = np.array([[2, 1, 2, 1, 3, 1], [0, 0, 5, 0, 5, 0]])
    for descending in (False, True):
        for s, t in [(seqlab.tensor(data), torch.tensor(data)),
                     (seqlab.tensor(data.astype(np.float32)), torch.tensor(data.astype(np.float32))),
                     (seqlab.tensor(data > 1), torch.tensor(data > 1))]:
            rs, rt = s.sort(descending=descending), t.sort(descending=descending, stable=True)
            _same(rs.values, rt.values)
            _same(rs.indices, rt.indices)


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_cumsum_with_gradient_as_torch(dim):
    check_op(lambda x: x.cumsum(dim), lambda x: x.cumsum(dim), [(3, 4)])
    check_op(lambda x: seqlab.cumsum(x, dim), lambda x: torch.cumsum(x, dim), [(2, 3, 2)])


def test_cumsum_dtypes_as_torch():
    for data in ([[1, 2], [3, 4]], [[True, False], [True, True]]):
        _same(seqlab.tensor(data).cumsum(1), torch.tensor(data).cumsum(1))
    _same(seqlab.tensor(np.array([1, 2], np.int32)).cumsum(0), torch.tensor(np.array([1, 2], np.int32)).cumsum(0))
    _same(seqlab.tensor([1, 2, 3]).cumsum(0, dtype=np.float64), torch.tensor([1, 2, 3]).cumsum(0, dtype=torch.float64))
    _same(seqlab.tensor(2.5).cumsum(0), torch.tensor(2.5).cumsum(0))


def test_mm_and_bmm_as_torch():
    check_op(lambda a, b: a.mm(b), lambda a, b: a.mm(b), [(2, 3), (3, 4)])
    check_op(lambda a, b: seqlab.mm(a, b), lambda a, b: torch.mm(a, b), [(2, 3), (3, 4)])
    check_op(lambda a, b: a.bmm(b), lambda a, b: a.bmm(b), [(2, 2, 3), (2, 3, 4)])
    check_op(lambda a, b: seqlab.bmm(a, b), lambda a, b: torch.bmm(a, b), [(2, 2, 3), (2, 3, 4)])
    check_op(lambda a, b: a.matmul(b), lambda a, b: a.matmul(b), [(2, 2, 3), (3,)])
    check_op(lambda a, b: seqlab.matmul(a, b), lambda a, b: torch.matmul(a, b), [(2, 2, 3), (3, 4)])
    for bad in [lambda lib: lib.zeros(2, 3).mm(lib.zeros(3)), lambda lib: lib.zeros(2, 2, 3).mm(lib.zeros(3, 2)),
                lambda lib: lib.zeros(2, 2, 3).bmm(lib.zeros(3, 3, 2)),
                lambda lib: lib.zeros(2, 3).bmm(lib.zeros(3, 2))]:
        with pytest.raises(RuntimeError):
            bad(torch)
        with pytest.raises(ValueError, match=r"\(.*\) and \(.*\)"):
            bad(seqlab)


# `//` and `%`: every pair of operand kinds, both orders
DIV_OPERANDS = {
    "i64": np.array([[-7, 7, 5], [-3, 8, 9]]), "f32": np.array([[-7.5, 7.25, 5.0], [-3.0, 0.5, 9.0]], np.float32),
    "f64": np.array([[2.5, -1.5, 3.0], [-2.0, 4.0, 1.25]]), "int": 2, "-int": -3, "float": 1.5, "-float": -0.75,
    "i32": np.array([[3, -2, 4], [5, 2, -7]], np.int32),
}
DIV_PAIRS = [("i64", "i64"), ("i64", "int"), ("i64", "-int"), ("i64", "float"), ("f32", "int"), ("f32", "-float"),
             ("f32", "i64"), ("f32", "f64"), ("i32", "i64"), ("int", "i32"), ("float", "i64"), ("-int", "f32"),
             ("i64", "f32")]


@pytest.mark.parametrize("op", ["//", "%"])
@pytest.mark.parametrize("left,right", DIV_PAIRS)
def test_floor_divide_and_remainder_values_and_dtypes_as_torch(op, left, right):
    def conv(name, lib):
        v = DIV_OPERANDS[name]
        return (seqlab.tensor(v) if lib is seqlab else torch.tensor(v)) if isinstance(v, np.ndarray) else v
    got = eval(f"a {op} b", {"a": conv(left, seqlab), "b": conv(right, seqlab)})
    want = eval(f"a {op} b", {"a": conv(left, torch), "b": conv(right, torch)})
    _same(got, want)


def test_remainder_gradient_and_floor_divide_without_one():
    b = np.array([[0.7, -1.3, 2.1], [1.1, -0.6, 0.9]])
    check_op(lambda x, y: x % y, lambda x, y: x % y, [(2, 3), b])
    check_op(lambda x: x % 0.7, lambda x: x % 0.7, [(2, 3)])
    # number % tensor: torch's backward is "not implemented" for the divisor; seqlab's is −grad·floor(a/b),
    # proved by central differences (values against torch above)
    check_op(lambda x: 1.5 % x, None, [np.array([0.7, -0.4, 2.2])])
    x = seqlab.tensor([1.5, -2.5], requires_grad=True)
    assert not (x // 1.0).requires_grad  # piecewise constant; torch: requires_grad, backward not implemented
    with pytest.raises(RuntimeError, match="derivative for aten::floor_divide is not implemented"):
        (torch.tensor([1.5], requires_grad=True) // 1.0).sum().backward()


def test_integer_division_by_zero_raises_as_torch():
    for op in ("//", "%"):
        with pytest.raises(RuntimeError, match="ZeroDivisionError"):
            eval(f"a {op} 0", {"a": torch.tensor([1, 2])})
        with pytest.raises(RuntimeError, match="ZeroDivisionError"):
            eval(f"a {op} 0", {"a": seqlab.tensor([1, 2])})
        with pytest.raises(RuntimeError, match="ZeroDivisionError"):
            eval(f"a {op} b", {"a": seqlab.tensor([1, 2]), "b": seqlab.tensor([1, 0])})
    _same(seqlab.tensor([1.0, -1.0]) // 0, torch.tensor([1.0, -1.0]) // 0)  # floats: inf, as torch


@pytest.mark.parametrize("src", ["f32", "i64", "bool"])
def test_new_zeros_ones_full_as_torch(src):
    data = {"f32": np.ones((2, 2), np.float32), "i64": np.ones((2, 2), np.int64), "bool": np.ones((2, 2), bool)}[src]
    s, t = seqlab.tensor(data), torch.tensor(data)
    _same(s.new_zeros(2, 3), t.new_zeros(2, 3))
    _same(s.new_zeros((3,)), t.new_zeros((3,)))
    _same(s.new_ones((2, 1)), t.new_ones((2, 1)))
    _same(s.new_full((2,), 3.75), t.new_full((2,), 3.75))  # the value is cast to the tensor's dtype
    _same(s.new_full((2,), 3, dtype=np.float64), t.new_full((2,), 3, dtype=torch.float64))
    _same(s.new_ones(2, dtype=np.int64), t.new_ones(2, dtype=torch.int64))
    assert s.new_zeros(2, dtype=np.float32, requires_grad=True).requires_grad


# ---- 8. top-level functions ------------------------------------------------------------------------------------
@pytest.mark.parametrize("src", ["f32", "f64", "i64"])
def test_like_constructors_as_torch(src):
    data = {"f32": np.ones((2, 3), np.float32), "f64": np.ones((2, 3)), "i64": np.ones((2, 3), np.int64)}[src]
    s, t = seqlab.tensor(data), torch.tensor(data)
    _same(seqlab.zeros_like(s), torch.zeros_like(t))
    _same(seqlab.ones_like(s), torch.ones_like(t))
    _same(seqlab.full_like(s, 2.5), torch.full_like(t, 2.5))
    _same(seqlab.zeros_like(s, dtype=np.float64), torch.zeros_like(t, dtype=torch.float64))
    _same(seqlab.full_like(s, 7, dtype=np.int32), torch.full_like(t, 7, dtype=torch.int32))


def test_eye_as_torch():
    _same(seqlab.eye(3), torch.eye(3))
    _same(seqlab.eye(2, 4), torch.eye(2, 4))
    _same(seqlab.eye(3, dtype=np.int64), torch.eye(3, dtype=torch.int64))


def test_from_numpy_shares_memory_both_ways_as_torch():
    for arr in (np.arange(6, dtype=np.float64).reshape(2, 3), np.arange(4, dtype=np.int32)):
        s, t = seqlab.from_numpy(arr), torch.from_numpy(arr)
        _same(s, t)
        arr.flat[0] = 42
        assert s.numpy().flat[0] == 42 == t.numpy().flat[0]
        s[..., -1] = 7
        assert arr.flat[-1] == 7
    with pytest.raises(TypeError, match="expected np.ndarray"):
        torch.from_numpy([1, 2])
    with pytest.raises(TypeError, match="expected np.ndarray"):
        seqlab.from_numpy([1, 2])


def test_randint_signatures_range_dtype_and_seed():
    seqlab.manual_seed(3)
    a = seqlab.randint(2, 9, (4, 50))
    t = torch.randint(2, 9, (4, 50))
    assert a.dtype == np.int64 == t.numpy().dtype and a.shape == tuple(t.shape)
    assert a.numpy().min() >= 2 and a.numpy().max() <= 8 and len(np.unique(a.numpy())) == 7
    b = seqlab.randint(5, (100,))
    assert b.numpy().min() >= 0 and b.numpy().max() == 4
    assert seqlab.randint(5, size=(3,)).shape == tuple(torch.randint(5, size=(3,)).shape) == (3,)
    assert seqlab.randint(low=1, high=3, size=(2, 2)).shape == (2, 2)
    assert seqlab.randint(0, 4, (3,), dtype=np.float32).dtype == np.float32
    assert torch.randint(0, 4, (3,), dtype=torch.float32).dtype == torch.float32
    seqlab.manual_seed(3)
    np.testing.assert_array_equal(seqlab.randint(2, 9, (4, 50)).numpy(), a.numpy())
    with pytest.raises(ValueError, match="low < high"):
        seqlab.randint(3, 3, (2,))


def test_multinomial_shape_dtype_support_and_seed():
    probs = np.array([[0.0, 0.5, 0.0, 0.5], [0.1, 0.0, 0.9, 0.0]], np.float32)
    for replacement, n in ((True, 200), (False, 2)):
        seqlab.manual_seed(7)
        s = seqlab.multinomial(seqlab.tensor(probs), n, replacement=replacement)
        t = torch.multinomial(torch.tensor(probs), n, replacement=replacement)
        assert s.shape == tuple(t.shape) == (2, n) and s.dtype == np.int64 == t.numpy().dtype
        for row, p in zip(s.numpy(), probs):
            assert set(row.tolist()) <= set(np.flatnonzero(p).tolist())  # zero-probability classes never drawn
        if not replacement:
            assert all(len(set(r)) == n for r in s.numpy().tolist())
        seqlab.manual_seed(7)
        np.testing.assert_array_equal(seqlab.multinomial(seqlab.tensor(probs), n, replacement).numpy(), s.numpy())
    seqlab.manual_seed(0)
    draws = seqlab.multinomial(seqlab.tensor([1.0, 3.0]), 4000, replacement=True).numpy()  # unnormalised weights
    assert draws.shape == (4000,) and abs(draws.mean() - 0.75) < 0.03
    assert sorted(seqlab.multinomial(seqlab.tensor([0.2, 0.0, 0.8]), 2).tolist()) == [0, 2]
    for bad, err in [(([1.0, -1.0], 1, False), "element < 0"), (([0.0, 0.0], 1, False), "sum"),
                     (([0.5, 0.5], 3, False), "without replacement")]:
        with pytest.raises(RuntimeError):
            torch.multinomial(torch.tensor(bad[0]), bad[1], bad[2])
        with pytest.raises(ValueError, match=err):
            seqlab.multinomial(seqlab.tensor(bad[0]), bad[1], bad[2])


FUNCTIONS = {  # name: (seqlab call, torch call, domain)
    "exp": (lambda x: seqlab.exp(x), lambda x: torch.exp(x), "real"),
    "log": (lambda x: seqlab.log(x), lambda x: torch.log(x), "positive"),
    "sqrt": (lambda x: seqlab.sqrt(x), lambda x: torch.sqrt(x), "positive"),
    "abs": (lambda x: seqlab.abs(x), lambda x: torch.abs(x), "real"),
    "tanh": (lambda x: seqlab.tanh(x), lambda x: torch.tanh(x), "real"),
    "sigmoid": (lambda x: seqlab.sigmoid(x), lambda x: torch.sigmoid(x), "real"),
    "relu": (lambda x: seqlab.relu(x), lambda x: torch.relu(x), "real"),
    "softmax": (lambda x: seqlab.softmax(x, 0), lambda x: torch.softmax(x, 0), "real"),
    "log_softmax": (lambda x: seqlab.log_softmax(x, dim=-1), lambda x: torch.log_softmax(x, dim=-1), "real"),
    "softmax-dtype": (lambda x: seqlab.softmax(x, 1, dtype=np.float64),
                      lambda x: torch.softmax(x, 1, dtype=torch.float64), "real"),
    "argmax": (lambda x: (x * 1, seqlab.argmax(x)), lambda x: (x * 1, torch.argmax(x)), "real"),
    "argmin-dim": (lambda x: (x * 1, seqlab.argmin(x, dim=1, keepdim=True)),
                   lambda x: (x * 1, torch.argmin(x, dim=1, keepdim=True)), "real"),
    "tril": (lambda x: seqlab.tril(x, -1), lambda x: torch.tril(x, -1), "real"),
    "triu": (lambda x: seqlab.triu(x, diagonal=1), lambda x: torch.triu(x, diagonal=1), "real"),
}


@pytest.mark.parametrize("name", list(FUNCTIONS))
def test_top_level_functions_as_torch(name):
    fs, ft, domain = FUNCTIONS[name]
    check_op(fs, ft, [(3, 4)], domain=domain)


def test_top_level_functions_take_tensors_only_as_torch():
    with pytest.raises(TypeError, match="must be Tensor, not float"):
        torch.exp(1.0)
    with pytest.raises(TypeError, match="must be Tensor, not float"):
        seqlab.exp(1.0)


def test_set_grad_enabled_and_inference_mode_are_exported():
    assert seqlab.set_grad_enabled is seqlab.autograd.set_grad_enabled
    x = seqlab.ones(2, requires_grad=True)
    with seqlab.set_grad_enabled(False):
        assert not (x * 2).requires_grad
    assert (x * 2).requires_grad
    with seqlab.inference_mode():
        assert not (x * 2).requires_grad and not seqlab.is_grad_enabled()
    assert seqlab.is_grad_enabled()

    @seqlab.inference_mode()
    def f(v):
        return v * 2
    assert not f(x).requires_grad and seqlab.is_grad_enabled()
    with seqlab.inference_mode(False):
        assert (x * 2).requires_grad
