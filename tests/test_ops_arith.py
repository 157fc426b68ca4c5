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
