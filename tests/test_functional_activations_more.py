"""More activations (seqlab.functional_activations, re-exported by seqlab.functional): values and gradients
against torch and central differences, torch's gradient at each kink, errors, and the device path."""
import numpy as np
import pytest
import torch
import torch.nn.functional as TF
from helpers import check_op

import seqlab
import seqlab.functional as F
from seqlab import backend

RNG = np.random.default_rng(0)
X = RNG.standard_normal((4, 6)) * 3          # spans every branch of every function below
X3 = RNG.standard_normal((2, 3, 5)) * 3


@pytest.mark.parametrize("name, kwargs", [
    ("elu", {}), ("elu", {"alpha": 0.5}), ("selu", {}), ("celu", {}), ("celu", {"alpha": 2.0}),
    ("softplus", {}), ("softplus", {"beta": 2.0, "threshold": 3.0}), ("softsign", {}),
    ("hardtanh", {}), ("hardtanh", {"min_val": -2.0, "max_val": 0.5}), ("relu6", {}), ("hardswish", {}),
    ("mish", {}), ("tanhshrink", {}), ("softshrink", {}), ("softshrink", {"lambd": 1.5}), ("hardshrink", {}),
    ("hardshrink", {"lambd": 1.5}), ("softmin", {"dim": 1}), ("softmin", {"dim": 0}), ("glu", {}),
    ("glu", {"dim": 0}), ("rrelu", {}), ("rrelu", {"lower": 0.2, "upper": 0.4}),
])
@pytest.mark.parametrize("x", [X, X3], ids=["2d", "3d"])
def test_matches_torch(name, kwargs, x):
    if name == "glu" and x.shape[kwargs.get("dim", -1)] % 2:
        x = x[..., :4]
    check_op(lambda a: getattr(F, name)(a, **kwargs), lambda a: getattr(TF, name)(a, **kwargs), [x])


def test_hardsigmoid_matches_torch():
    """torch's float64 backward multiplies by 1/6 rounded to float32 (1.0f / 6.0f): hence rtol64 = 1e-7."""
    check_op(F.hardsigmoid, TF.hardsigmoid, [X], rtol64=1e-7)
    check_op(F.hardsigmoid, TF.hardsigmoid, [X3], rtol64=1e-7)


@pytest.mark.parametrize("name, points, kwargs", [
    ("hardtanh", [-1.0, 1.0, 0.0], {}),
    ("relu6", [0.0, 6.0, 3.0], {}),
    ("hardsigmoid", [-3.0, 3.0, 0.0], {}),
    ("hardswish", [-3.0, 3.0, 0.0], {}),
    ("softshrink", [-0.5, 0.5, 0.0], {}),
    ("hardshrink", [-0.5, 0.5, 0.0], {}),
    ("elu", [0.0], {"alpha": 2.0}),
    ("selu", [0.0], {}),
    ("celu", [0.0], {"alpha": 2.0}),
    ("softplus", [1.5, 1.5000001], {"beta": 2.0, "threshold": 3.0}),   # βx = threshold: the formula's side
    ("rrelu", [0.0], {}),
])
def test_gradient_at_the_kinks_is_torchs(name, points, kwargs):
    """At a kink there is no derivative: torch picks one side (or 0), and so does seqlab."""
    x = np.array(points)
    check_op(lambda a: getattr(F, name)(a, **kwargs), lambda a: getattr(TF, name)(a, **kwargs), [x],
             gradcheck_=False, rtol64=1e-7)


def test_elu_family_is_exact_near_zero_in_float32():
    """expm1, not exp(x) − 1: at x = −1e-6 the latter loses every digit in float32."""
    x = np.array([-1e-6, -1e-4, -3e-3], dtype=np.float32)
    for name in ("elu", "selu", "celu"):
        ours = getattr(F, name)(seqlab.tensor(x)).numpy()
        theirs = getattr(TF, name)(torch.from_numpy(x)).numpy()
        np.testing.assert_allclose(ours, theirs, rtol=2e-7, err_msg=name)


def test_exponential_branches_stay_finite_for_large_inputs():
    x = seqlab.tensor(np.array([-1e4, 1e4, 800.0]), requires_grad=True)
    for fn in (F.elu, F.selu, F.celu, F.softplus, F.mish):
        x.grad = None
        y = fn(x)
        y.sum().backward()
        assert np.all(np.isfinite(y.numpy())) and np.all(np.isfinite(x.grad)), fn.__name__
        xt = torch.tensor(x.numpy(), requires_grad=True)
        getattr(TF, fn.__name__)(xt).sum().backward()
        np.testing.assert_allclose(x.grad, xt.grad.numpy(), rtol=1e-12, err_msg=fn.__name__)


def test_softplus_is_exact_far_left():
    """−log σ(−x) keeps e^x's digits where log(1 + e^x) would round to 0 in float32."""
    x = np.array([-30.0, -90.0], dtype=np.float32)
    ours = F.softplus(seqlab.tensor(x)).numpy()
    np.testing.assert_allclose(ours, np.exp(x.astype(np.float64)), rtol=1e-6)
    assert np.all(ours > 0)


def test_softmin_implicit_dim_warns_as_torch_and_takes_dtype():
    x = RNG.standard_normal((3, 4)).astype(np.float32)
    with pytest.warns(UserWarning, match="Implicit dimension choice for softmin"):
        ours = F.softmin(seqlab.tensor(x))
    with pytest.warns(UserWarning):
        theirs = TF.softmin(torch.from_numpy(x))
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6)
    out = F.softmin(seqlab.tensor(x), dim=-1, dtype=seqlab.float64)
    assert out.dtype == np.float64
    np.testing.assert_allclose(out.numpy(), TF.softmin(torch.from_numpy(x), -1, dtype=torch.float64).numpy(),
                               rtol=1e-12)


@pytest.mark.parametrize("xshape, wshape", [((2, 3), (3,)), ((2, 3, 4), (3,)), ((2, 3, 4, 2), (1,)), ((5,), (1,)),
                                            ((2, 3), ())])
def test_prelu_matches_torch(xshape, wshape):
    w = np.abs(RNG.standard_normal(wshape)) * 0.3
    check_op(F.prelu, TF.prelu, [xshape, w])


def test_prelu_gradient_at_zero_is_the_slope():
    check_op(F.prelu, TF.prelu, [np.array([[0.0, -1.0, 2.0]]), np.array([0.3])], gradcheck_=False)


def test_rrelu_training_draws_one_slope_per_negative_element():
    seqlab.manual_seed(0)
    x = seqlab.tensor(np.concatenate([-np.ones(20000), np.ones(10)]), requires_grad=True)
    y = F.rrelu(x, 0.1, 0.3, training=True)
    y.sum().backward()
    slopes = -y.numpy()[:20000]
    assert slopes.min() >= 0.1 and slopes.max() <= 0.3
    assert abs(slopes.mean() - 0.2) < 0.003 and abs(slopes.std() - 0.2 / np.sqrt(12)) < 0.003   # U(0.1, 0.3)
    np.testing.assert_array_equal(y.numpy()[20000:], 1.0)
    np.testing.assert_allclose(x.grad[:20000], slopes)                      # d(slope·x)/dx = slope
    seqlab.manual_seed(0)
    np.testing.assert_array_equal(F.rrelu(x, 0.1, 0.3, training=True).numpy(), y.numpy())


# ---- gumbel_softmax: random, so statistics and structure rather than torch's values -----------------
LOGITS = np.log(np.array([0.6, 0.3, 0.1]))


def test_gumbel_softmax_soft_samples_are_distributions():
    seqlab.manual_seed(0)
    y = F.gumbel_softmax(seqlab.tensor(np.tile(LOGITS, (4, 2, 1))), tau=0.5)
    assert y.shape == (4, 2, 3) and y.dtype == np.float64
    np.testing.assert_allclose(y.numpy().sum(-1), 1.0, rtol=1e-12)
    assert np.all(y.numpy() > 0)
    y0 = F.gumbel_softmax(seqlab.tensor(np.tile(LOGITS, (2, 1)).T.copy()), dim=0)   # classes along dim 0
    np.testing.assert_allclose(y0.numpy().sum(0), 1.0, rtol=1e-12)


def test_gumbel_softmax_hard_samples_follow_the_softmax():
    """The argmax of logits + Gumbel noise is a draw from softmax(logits) (the Gumbel-max trick)."""
    seqlab.manual_seed(0)
    y = F.gumbel_softmax(seqlab.tensor(np.tile(LOGITS, (20000, 1)).astype(np.float32)), hard=True).numpy()
    assert y.dtype == np.float32
    assert set(np.unique(y)) == {0.0, 1.0} and np.all(y.sum(-1) == 1.0)
    np.testing.assert_allclose(y.mean(0), [0.6, 0.3, 0.1], atol=0.012)


def test_gumbel_softmax_hard_is_straight_through():
    """The hard sample's gradient is the soft sample's: drawn from one seed, the two backwards agree."""
    w, x_np = RNG.standard_normal((5, 4)), RNG.standard_normal((5, 4))
    grads = []
    for hard in (False, True):
        x = seqlab.tensor(x_np, requires_grad=True)
        seqlab.manual_seed(3)
        y = F.gumbel_softmax(x, tau=0.7, hard=hard)
        (y * seqlab.tensor(w)).sum().backward()
        grads.append(x.grad)
    assert np.abs(grads[0]).max() > 0
    np.testing.assert_allclose(grads[1], grads[0], rtol=1e-12)


def test_gumbel_softmax_generator_tau_and_eps():
    x = seqlab.tensor(np.tile(LOGITS, (3, 1)))
    a = F.gumbel_softmax(x, generator=np.random.default_rng(5)).numpy()
    b = F.gumbel_softmax(x, generator=np.random.default_rng(5)).numpy()
    np.testing.assert_array_equal(a, b)
    cold = F.gumbel_softmax(x, tau=1e-3, generator=np.random.default_rng(5)).numpy()
    np.testing.assert_allclose(cold.max(-1), 1.0, atol=1e-6)                # τ → 0: one-hot already
    with pytest.warns(UserWarning, match="`eps` parameter is deprecated"):
        F.gumbel_softmax(x, eps=1e-5)


# ---- errors -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("call, match", [
    (lambda x: F.glu(x[:, :5]), r"Halving dimension must be even, but dimension 1 is size 5"),
    (lambda x: F.glu(x[0, 0]), "glu does not support scalars"),
    (lambda x: F.hardtanh(x, 2.0, 1.0), "min_val cannot be greater than max_val"),
    (lambda x: F.softshrink(x, -1.0), "lambd must be >= 0, got -1"),
    (lambda x: F.celu(x, 0.0), "alpha cannot be 0"),
    (lambda x: F.rrelu(x, 0.5, 0.1, training=True), "Lower bound should be less than or equal to the upper"),
    (lambda x: F.prelu(x, seqlab.ones(2)), r"parameter numbers = 2 and channel size = 6"),
    (lambda x: F.prelu(x, seqlab.ones(1, 1)), "scalar or 1D tensor, but got: ndim = 2"),
])
def test_errors_name_the_values(call, match):
    with pytest.raises(ValueError, match=match):
        call(seqlab.tensor(X))


# ---- the device path: CuPy's stand-in (and CuPy itself where a GPU is seen) ---------------------------

@pytest.mark.parametrize("fn", [F.elu, F.selu, F.softplus, F.hardtanh, F.hardswish, F.mish,
                                lambda x: F.glu(x, 0), lambda x: F.softmin(x, 1),
                                lambda x: F.prelu(x, seqlab.tensor(np.array([0.1, 0.2, 0.3, 0.4])).to(x.device))],
                         ids=["elu", "selu", "softplus", "hardtanh", "hardswish", "mish", "glu", "softmin", "prelu"])
def test_on_the_device_as_on_the_host(cuda, fn):
    x = RNG.standard_normal((4, 4)).astype(np.float32)
    w = np.arange(16.0, dtype=np.float32).reshape(4, 4)
    results = []
    for device in ("cpu", "cuda"):
        xs = seqlab.Tensor(backend.to_device(x, device), requires_grad=True)
        y = fn(xs)
        assert y.device == device
        (y * seqlab.Tensor(backend.to_device(w[:y.shape[0], :y.shape[1]], device))).sum().backward()
        results.append((backend.to_numpy(y.data), backend.to_numpy(xs.grad)))
    for a, b in zip(*results):
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6)


def test_random_activations_draw_on_the_device(cuda):
    """rrelu and gumbel_softmax draw their noise where the input lives (the device's own stream)."""
    x = seqlab.Tensor(backend.to_device(np.tile(LOGITS, (6, 1)).astype(np.float32), "cuda"), requires_grad=True)
    y = F.gumbel_softmax(x, hard=True)
    assert y.device == "cuda"
    np.testing.assert_array_equal(backend.to_numpy(y.data).sum(-1), 1.0)
    y.sum().backward()
    assert backend.device_of(x.grad) == "cuda"
    r = F.rrelu(x, training=True)                                           # every logit is negative
    slopes = backend.to_numpy(r.data) / backend.to_numpy(x.data)
    assert r.device == "cuda" and slopes.min() >= 1 / 8 and slopes.max() <= 1 / 3
