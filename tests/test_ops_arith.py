"""Arithmetic ops (issue 2 §3): central differences and PyTorch, shapes drawn by hypothesis."""
import numpy as np
import pytest
import torch
from helpers import check_op, const
from hypothesis import given, settings
from hypothesis.extra import numpy as hnp

import seqlab

FEW = settings(max_examples=15, deadline=None)
pairs = hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=3, min_side=1, max_side=4)
one = hnp.array_shapes(min_dims=0, max_dims=3, min_side=1, max_side=4)


@pytest.mark.parametrize("op", ["add", "sub", "mul"])
@FEW
@given(shapes=pairs)
def test_binary_broadcasting(op, shapes):
    f = {"add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b}[op]
    check_op(f, f, list(shapes.input_shapes))


@FEW
@given(shapes=pairs)
def test_div_broadcasting(shapes):
    a_shape, b_shape = shapes.input_shapes
    rng = np.random.default_rng(1)
    b = np.abs(rng.standard_normal(b_shape)) + 0.5
    check_op(lambda a, b: a / b, lambda a, b: a / b, [a_shape, b])


@FEW
@given(shapes=hnp.mutually_broadcastable_shapes(signature="(m?,n),(n,p?)->(m?,p?)", max_dims=4, max_side=4))
def test_matmul_broadcasting(shapes):
    check_op(lambda a, b: a @ b, lambda a, b: a @ b, list(shapes.input_shapes))


@pytest.mark.parametrize("shapes", [[(5,), (5,)], [(5,), (5, 3)], [(4, 5), (5,)], [(2, 3, 4), (4, 2)],
                                    [(1, 3, 4), (2, 4, 2)], [(4,), (2, 4, 3)], [(2, 1, 3, 4), (5, 4, 2)]])
def test_matmul_cases(shapes):
    check_op(lambda a, b: a.matmul(b), torch.matmul, shapes)


@pytest.mark.parametrize("name, fn_s, fn_t, domain", [
    ("neg", lambda x: -x, lambda x: -x, "real"),
    ("abs", lambda x: x.abs(), torch.abs, "real"),
    ("exp", lambda x: x.exp(), torch.exp, "real"),
    ("log", lambda x: x.log(), torch.log, "positive"),
    ("sqrt", lambda x: x.sqrt(), torch.sqrt, "positive"),
    ("rsqrt", lambda x: x.rsqrt(), torch.rsqrt, "positive"),
    ("reciprocal", lambda x: x.reciprocal(), torch.reciprocal, "positive"),
    ("pow3", lambda x: x ** 3, lambda x: x ** 3, "real"),
    ("pow_half", lambda x: x ** 0.5, lambda x: x ** 0.5, "positive"),
    ("pow_neg", lambda x: x ** -1.5, lambda x: x ** -1.5, "positive"),
    ("rpow", lambda x: 2.0 ** x, lambda x: 2.0 ** x, "real"),
    ("rsub", lambda x: 3.0 - x, lambda x: 3.0 - x, "real"),
    ("rdiv", lambda x: 3.0 / x, lambda x: 3.0 / x, "positive"),
    ("radd_scalar", lambda x: 1.5 + x * 2, lambda x: 1.5 + x * 2, "real"),
    ("clamp_both", lambda x: x.clamp(-0.5, 0.7), lambda x: x.clamp(-0.5, 0.7), "real"),
    ("clamp_min", lambda x: x.clamp(min=0.1), lambda x: x.clamp(min=0.1), "real"),
    ("clamp_max", lambda x: x.clamp(max=-0.2), lambda x: x.clamp(max=-0.2), "real"),
])
@FEW
@given(shape=one)
def test_unary(name, fn_s, fn_t, domain, shape):
    check_op(fn_s, fn_t, [shape], domain=domain)


@FEW
@given(shapes=pairs)
def test_tensor_power(shapes):
    a_shape, b_shape = shapes.input_shapes
    a = np.abs(np.random.default_rng(2).standard_normal(a_shape)) + 0.5
    check_op(lambda a, b: a ** b, lambda a, b: a ** b, [a, b_shape])


@FEW
@given(shapes=pairs)
def test_maximum(shapes):
    check_op(seqlab.maximum, torch.maximum, list(shapes.input_shapes))


def test_maximum_ties_split_the_gradient():
    x = np.array([1.0, 2.0, 3.0])
    check_op(seqlab.maximum, torch.maximum, [x, x.copy()], gradcheck_=False)


@FEW
@given(shapes=hnp.mutually_broadcastable_shapes(num_shapes=3, max_dims=3, max_side=4))
def test_where(shapes):
    c_shape, a_shape, b_shape = shapes.input_shapes
    cond = np.random.default_rng(3).random(c_shape) > 0.5
    check_op(seqlab.where, torch.where, [cond, a_shape, b_shape])


def test_where_with_scalar_branch():
    cond = np.array([[True, False, True]])
    check_op(lambda c, a: seqlab.where(c, a, 0.0), lambda c, a: torch.where(c, a, 0.0), [cond, (2, 3)])


@FEW
@given(shapes=pairs)
def test_masked_fill(shapes):
    x_shape, m_shape = shapes.input_shapes
    out_shape = np.broadcast_shapes(x_shape, m_shape)
    if out_shape != tuple(x_shape):  # torch's masked_fill needs the mask to broadcast to x
        m_shape = x_shape
    mask = np.random.default_rng(4).random(m_shape) > 0.5
    check_op(lambda x, m: x.masked_fill(m, -3.0), lambda x, m: x.masked_fill(m, -3.0), [x_shape, mask])


def test_masked_fill_minus_inf_then_softmax():
    mask = np.array([[False, True, False, True]])
    check_op(lambda x, m: x.masked_fill(m, float("-inf")).softmax(-1),
             lambda x, m: x.masked_fill(m, float("-inf")).softmax(-1), [(3, 4), mask])


def test_shared_input_accumulates():
    check_op(lambda a: a * a + a.exp() * a, lambda a: a * a + a.exp() * a, [(3, 2)])


def test_float32_stays_float32_with_python_scalars():
    x = seqlab.randn(3, requires_grad=True)
    y = (x * 2.5 + 1) / 3.0 - 0.5
    y = 2 ** y + y ** 2
    assert y.dtype == np.float32
    y.sum().backward()
    assert x.grad.dtype == np.float32


def test_mixed_dtypes_promote_like_torch():
    a = seqlab.randn(3, dtype=np.float32, requires_grad=True)
    b = seqlab.randn(3, dtype=np.float64, requires_grad=True)
    c = a * b
    assert c.dtype == (torch.ones(3, dtype=torch.float32) * torch.ones(3, dtype=torch.float64)).numpy().dtype
    c.sum().backward()
    assert a.grad.dtype == np.float32 and b.grad.dtype == np.float64


def _t(x):
    return torch.from_numpy(np.asarray(x))


_PROMOTION_CASES = [
    (np.float32, np.array([1, 3, 2])),             # a float tensor times an int64 one stays float32
    (np.float64, np.array([1, 3, 2], np.int32)),
    (np.int64, np.array([0.5, 1.5, 2.5], np.float32)),
    (np.int64, np.array([True, True, True])),     # (no zeros: the division cases divide by them)
    (np.float32, np.array(2.0)),                   # a 0-d float64 tensor does not widen a float32 one
    (np.int64, 0.5), (np.int64, 2), (np.bool_, 3), (np.bool_, 1.5), (np.float32, 2), (np.int32, 7),
]
_OPS = ["add", "sub", "mul", "truediv", "radd", "rsub", "rmul", "rtruediv"]


def _with_bool(a_dtype, b) -> bool:
    return a_dtype == np.bool_ or getattr(b, "dtype", None) == np.bool_


@pytest.mark.parametrize("a_dtype, b, op", [(a, b, op) for a, b in _PROMOTION_CASES for op in _OPS
                                            if not (op in ("sub", "rsub") and _with_bool(a, b))])  # torch refuses
def test_result_dtypes_follow_torchs_promotion_not_numpys(a_dtype, b, op):
    """NumPy would make float32 · int64 float64 and int64 · 0.5 or int64 / 2 float64; torch keeps float32."""
    a_np = np.array([1, 2, 3]).astype(a_dtype)
    a, a_t = seqlab.tensor(a_np), _t(a_np)
    other = seqlab.tensor(b) if isinstance(b, np.ndarray) else b
    other_t = _t(b) if isinstance(b, np.ndarray) else b
    got = getattr(a, f"__{op}__")(other)
    want = getattr(a_t, f"__{op}__")(other_t)
    assert got.dtype == want.numpy().dtype, (got.dtype, want.dtype)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)


def test_a_float_tensor_meeting_an_int_one_keeps_its_gradient_dtype():
    x = seqlab.randn(3, requires_grad=True)
    mask = seqlab.tensor(np.array([1, 0, 1]))
    (x * mask).sum().backward()
    assert x.grad.dtype == np.float32 and np.array_equal(x.grad, [1, 0, 1])


def test_power_with_a_tensor_exponent_takes_negative_bases_and_zero_to_the_zero():
    """(−2)² = 4 with gradient −4 and 0⁰ = 1 as in torch (exp(b·log a) gave NaN for both)."""
    a_np, b_np = np.array([-2.0, 3.0, 0.0, 0.0, 2.0]), np.array([2.0, 2.0, 0.0, 3.0, -1.0])
    a, b = seqlab.tensor(a_np, requires_grad=True), seqlab.tensor(b_np, requires_grad=True)
    at, bt = _t(a_np).requires_grad_(), _t(b_np).requires_grad_()
    y, yt = a ** b, at ** bt
    np.testing.assert_allclose(y.numpy(), yt.detach().numpy())
    y.sum().backward()
    yt.sum().backward()
    np.testing.assert_allclose(a.grad, at.grad.numpy())
    finite = a_np > 0  # torch's d/db at a negative base is NaN (log of a negative number), ours too
    np.testing.assert_allclose(b.grad[finite], bt.grad.numpy()[finite])
    assert np.isnan(b.grad[0]) and np.isnan(bt.grad.numpy()[0])
    assert b.grad[2] == bt.grad.numpy()[2] == 0 and b.grad[3] == bt.grad.numpy()[3] == 0
    base = seqlab.tensor(np.array([1.0, 2.0]), requires_grad=True)
    z, zt = 2 ** base, 2 ** _t(np.array([1.0, 2.0])).requires_grad_()
    np.testing.assert_allclose(z.numpy(), zt.detach().numpy())


@pytest.mark.parametrize("p", [2, 3, 0.5])
def test_norm_at_the_zero_vector_has_a_zero_gradient(p):
    a = seqlab.tensor(np.zeros(3), requires_grad=True)
    at = torch.zeros(3, dtype=torch.float64, requires_grad=True)
    a.norm(p).backward()
    at.norm(p).backward()
    np.testing.assert_array_equal(a.grad, at.grad.numpy())
    b = seqlab.tensor(np.array([3.0, -4.0, 0.0]), requires_grad=True)  # elsewhere the usual gradient
    bt = _t(np.array([3.0, -4.0, 0.0])).requires_grad_()
    b.norm(p).backward()
    bt.norm(p).backward()
    np.testing.assert_allclose(b.grad, bt.grad.numpy(), rtol=1e-12)


def test_power_zero_has_a_zero_gradient_at_zero():
    a = seqlab.tensor(np.array([0.0, 1.0, -2.0]), requires_grad=True)
    (a ** 0).sum().backward()
    assert np.array_equal(a.grad, [0.0, 0.0, 0.0])


def test_masked_fill_with_a_tensor_value_passes_its_gradient():
    m = np.array([True, False, True])
    v, vt = seqlab.tensor(np.array(2.0), requires_grad=True), torch.tensor(2.0, dtype=torch.float64, requires_grad=True)
    x = seqlab.tensor(np.array([1.0, 2.0, 3.0]), requires_grad=True)
    xt = _t(np.array([1.0, 2.0, 3.0])).requires_grad_()
    (x.masked_fill(m, v) * x).sum().backward()
    (xt.masked_fill(torch.tensor(m), vt) * xt).sum().backward()
    assert v.grad == vt.grad.item() == 4.0
    np.testing.assert_array_equal(x.grad, xt.grad.numpy())
    with pytest.raises(ValueError, match="0-dimensional value"):
        x.masked_fill(m, seqlab.tensor(np.ones(3)))


def test_constant_operand_gets_no_gradient():
    check_op(lambda a, b: a * b + b, lambda a, b: a * b + b, [(3, 4), const(np.ones((3, 4)))])


def test_batched_times_2d_fast_path_equals_numpy_matmul():
    """MatMul's one-GEMM path for (..., n, k) @ (k, m) against NumPy's plain stacked a @ b."""
    from seqlab.autograd.ops.matmul import _matmul

    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((3, 2, 5, 4)), rng.standard_normal((4, 6))
    np.testing.assert_allclose(_matmul(a, b), a @ b, rtol=1e-12)
    at = np.swapaxes(rng.standard_normal((3, 4, 5)), 1, 2)  # a non-contiguous batch
    np.testing.assert_allclose(_matmul(at, b), at @ b, rtol=1e-12)
