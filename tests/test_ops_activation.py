"""Activations (the chapter's 7.1.2), softmax and log_softmax: exact, stable, equal to torch."""
import numpy as np
import pytest
import torch
import torch.nn.functional as TF
from helpers import check_op
from hypothesis import given, settings
from hypothesis.extra import numpy as hnp

import seqlab
import seqlab.functional as F

FEW = settings(max_examples=15, deadline=None)
shapes = hnp.array_shapes(min_dims=0, max_dims=3, min_side=1, max_side=5)


@pytest.mark.parametrize("name, fn_s, fn_t", [
    ("sigmoid", F.sigmoid, torch.sigmoid),
    ("sigmoid_method", lambda x: x.sigmoid(), lambda x: x.sigmoid()),
    ("tanh", F.tanh, torch.tanh),
    ("relu", F.relu, torch.relu),
    ("relu_method", lambda x: x.relu(), lambda x: x.relu()),
    ("gelu_erf", F.gelu, TF.gelu),
    ("gelu_tanh", lambda x: F.gelu(x, approximate="tanh"), lambda x: TF.gelu(x, approximate="tanh")),
    ("silu", F.silu, TF.silu),
    ("logsigmoid", F.logsigmoid, TF.logsigmoid),
])
@FEW
@given(shape=shapes)
def test_activation(name, fn_s, fn_t, shape):
    check_op(fn_s, fn_t, [shape])


def test_activations_on_wide_range():
    x = np.linspace(-12, 12, 49) + 0.01  # avoid the kink of relu at exactly 0
    for fs, ft in [(F.sigmoid, torch.sigmoid), (F.tanh, torch.tanh), (F.gelu, TF.gelu),
                   (lambda v: F.gelu(v, "tanh"), lambda v: TF.gelu(v, approximate="tanh")), (F.silu, TF.silu),
                   (F.logsigmoid, TF.logsigmoid)]:
        check_op(fs, ft, [x], max_elements=6)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_sigmoid_is_stable_beyond_500(dtype):
    x = seqlab.tensor(np.array([-1e4, -800.0, -501.0, 0.0, 501.0, 800.0, 1e4], dtype=dtype), requires_grad=True)
    with np.errstate(over="raise", invalid="raise", divide="raise"):  # no overflow, no NaN
        y = F.sigmoid(x)
        y.sum().backward()
    expected = torch.sigmoid(torch.from_numpy(x.numpy()))
    np.testing.assert_array_equal(y.numpy(), expected.numpy())
    assert np.all(np.isfinite(x.grad))
    assert y.numpy()[0] == 0.0 and y.numpy()[-1] == 1.0 and y.numpy()[3] == 0.5


def test_gelu_rejects_unknown_mode():
    with pytest.raises(ValueError, match="'fast'"):
        F.gelu(seqlab.randn(3), approximate="fast")


def test_gelu_modes_differ():
    x = seqlab.randn(100, dtype=np.float64)
    assert not np.allclose(F.gelu(x).numpy(), F.gelu(x, "tanh").numpy(), rtol=0, atol=1e-6)


@pytest.mark.parametrize("op", ["softmax", "log_softmax"])
@pytest.mark.parametrize("dim", [0, 1, -1])
@FEW
@given(shape=hnp.array_shapes(min_dims=2, max_dims=3, min_side=1, max_side=5))
def test_softmax(op, dim, shape):
    fs, ft = getattr(F, op), getattr(TF, op)
    check_op(lambda x: fs(x, dim), lambda x: ft(x, dim=dim), [shape])


def test_softmax_method():
    check_op(lambda x: x.softmax(1), lambda x: x.softmax(1), [(2, 3, 4)])
    check_op(lambda x: x.log_softmax(0), lambda x: x.log_softmax(0), [(2, 3, 4)])


@pytest.mark.parametrize("op", ["softmax", "log_softmax"])
def test_softmax_finite_at_1e4_float32(op):
    logits = np.array([[1e4, -1e4, 0.0, 1e4 - 1], [-1e4, -1e4, -1e4, -1e4 + 3]], dtype=np.float32)
    x = seqlab.tensor(logits, requires_grad=True)
    y = getattr(F, op)(x, -1)
    g = np.random.default_rng(0).standard_normal(logits.shape).astype(np.float32)
    y.backward(g)
    assert np.all(np.isfinite(y.numpy())) and np.all(np.isfinite(x.grad))
    xt = torch.tensor(logits, requires_grad=True)
    yt = getattr(TF, op)(xt, -1)
    yt.backward(torch.from_numpy(g))
    np.testing.assert_allclose(y.numpy(), yt.detach().numpy(), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(x.grad, xt.grad.numpy(), rtol=1e-5, atol=1e-6)


def test_softmax_row_of_minus_inf_gives_zeros_not_nan():
    x = seqlab.tensor(np.array([[-np.inf, -np.inf], [0.0, 1.0]]), requires_grad=True)
    y = F.softmax(x, -1)
    y.backward(np.ones((2, 2)))
    assert np.all(y.numpy()[0] == 0) and np.all(np.isfinite(x.grad))


def test_softmax_fused_backward_equals_composed():
    """The hand-written backward of Softmax against exp(x − max) / Σ exp(x − max) built from primitives."""
    rng = np.random.default_rng(5)
    x_np = rng.standard_normal((3, 7))
    g = rng.standard_normal((3, 7))
    x1, x2 = seqlab.tensor(x_np, requires_grad=True), seqlab.tensor(x_np, requires_grad=True)
    F.softmax(x1, -1).backward(g)
    e = (x2 - x2.amax(-1, keepdim=True).detach()).exp()
    (e / e.sum(-1, keepdim=True)).backward(g)
    np.testing.assert_allclose(x1.grad, x2.grad, rtol=1e-12, atol=1e-14)
    x3, x4 = seqlab.tensor(x_np, requires_grad=True), seqlab.tensor(x_np, requires_grad=True)
    F.log_softmax(x3, -1).backward(g)
    s = x4 - x4.amax(-1, keepdim=True).detach()
    (s - s.exp().sum(-1, keepdim=True).log()).backward(g)
    np.testing.assert_allclose(x3.grad, x4.grad, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("cls, tcls, kw", [("ReLU", "ReLU", {}), ("GELU", "GELU", {}),
                                           ("GELU", "GELU", {"approximate": "tanh"}), ("Tanh", "Tanh", {}),
                                           ("Sigmoid", "Sigmoid", {}), ("SiLU", "SiLU", {}),
                                           ("Softmax", "Softmax", {"dim": 1})])
def test_activation_modules(cls, tcls, kw):
    from helpers import check_module

    check_module(getattr(seqlab.nn, cls)(**kw), getattr(torch.nn, tcls)(**kw), [(2, 3, 4)])


def test_fast_float32_normal_cdf_equals_scipy():
    """The float32 fast path of Φ (exact GELU) against SciPy's ½(1 + erf(x/√2)) in float64."""
    from scipy.special import ndtr

    from seqlab.autograd.ops.activation import normal_cdf_float32

    x = np.concatenate([np.linspace(-15, 15, 300_001), np.random.default_rng(0).standard_normal(70_000)])
    x = x.astype(np.float32)
    ref = ndtr(x.astype(np.float64))
    ours = normal_cdf_float32(x)
    assert ours.dtype == np.float32 and ours.shape == x.shape
    np.testing.assert_allclose(ours, ref, rtol=2e-5, atol=3e-7)
    assert ours[0] < 1e-30 and ours[300_000] == 1.0  # Φ(−15), Φ(15) at float32's ends
