"""nn.BatchNorm1d / nn.BatchNorm2d and batch_norm against torch: outputs, gradients and running statistics."""
import re

import numpy as np
import pytest
import torch
from helpers import assert_close, check_op

import seqlab
from seqlab import Tensor, backend, nn
from seqlab.nn.batchnorm import batch_norm
from seqlab.optim import Adam

SHAPES = [("BatchNorm1d", (8, 3)), ("BatchNorm1d", (4, 3, 5)), ("BatchNorm2d", (4, 3, 5, 6))]
TOL = {"float64": dict(rtol=1e-9, atol=1e-11), "float32": dict(rtol=1e-5, atol=1e-5)}


def _pair(cls: str, dtype: str = "float64", seed: int = 0, **kwargs):
    """The same layer in seqlab and torch, torch's random weight, bias and running stats loaded into seqlab."""
    t = getattr(torch.nn, cls)(3, **kwargs).to(getattr(torch, dtype))
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        if t.affine:
            t.weight.copy_(torch.randn(3, generator=g) + 1)
            if t.bias is not None:
                t.bias.copy_(torch.randn(3, generator=g))
        if t.track_running_stats:
            t.running_mean.copy_(torch.randn(3, generator=g))
            t.running_var.copy_(torch.rand(3, generator=g) + 0.5)
    s = getattr(nn, cls)(3, dtype=np.dtype(dtype), **kwargs)
    s.load_state_dict({k: v.numpy() for k, v in t.state_dict().items()})
    return s, t


def _close(s, t, dtype: str, what: str) -> None:
    a = s.numpy() if isinstance(s, Tensor) else np.asarray(s)
    assert_close(a, t.detach().numpy(), what=what, **TOL[dtype])


def _same_buffers(s, t, dtype: str) -> None:
    for name in ("running_mean", "running_var"):
        _close(getattr(s, name), getattr(t, name), dtype, name)
    assert s.num_batches_tracked.dtype == np.int64 and s.num_batches_tracked.shape == ()
    assert int(s.num_batches_tracked.item()) == int(t.num_batches_tracked)


def _step(s, t, shape, dtype: str, rng, grad: bool = True) -> None:
    """One forward (and backward with a random cotangent) of both layers on the same input; all compared."""
    x = rng.standard_normal(shape) * 2 + 0.5
    xs = Tensor(x.astype(dtype), requires_grad=grad)
    xt = torch.tensor(x, dtype=getattr(torch, dtype), requires_grad=grad)
    ys, yt = s(xs), t(xt)
    _close(ys, yt, dtype, "output")
    if not grad:
        return
    cot = rng.standard_normal(shape)
    (ys * Tensor(cot.astype(dtype))).sum().backward()
    (yt * torch.tensor(cot, dtype=getattr(torch, dtype))).sum().backward()
    _close(xs.grad, xt.grad, dtype, "grad of input")
    for (name, sp), (_, tp) in zip(s.named_parameters(), t.named_parameters()):
        _close(sp.grad, tp.grad, dtype, f"grad of {name}")
        sp.grad, tp.grad = None, None


# ---- train and eval against torch -----------------------------------------------------------------
@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("cls,shape", SHAPES)
def test_training_steps_then_eval_match_torch(cls, shape, dtype):
    s, t = _pair(cls, dtype)
    rng = np.random.default_rng(1)
    for _ in range(3):
        _step(s, t, shape, dtype, rng)
        _same_buffers(s, t, dtype)
    assert int(s.num_batches_tracked.item()) == 3
    s.eval(), t.eval()
    _step(s, t, shape, dtype, rng)  # running statistics normalise; gradients to input, weight and bias
    _same_buffers(s, t, dtype)  # unchanged in eval


@pytest.mark.parametrize("cls,shape", SHAPES)
def test_momentum_none_is_a_cumulative_average(cls, shape):
    s, t = _pair(cls, momentum=None)
    rng = np.random.default_rng(2)
    for _ in range(3):
        _step(s, t, shape, "float64", rng)
        _same_buffers(s, t, "float64")
    assert "momentum=None" in repr(s)


@pytest.mark.parametrize("momentum", [0.0, 0.5, 1.0])
def test_other_momenta(momentum):
    s, t = _pair("BatchNorm1d", momentum=momentum)
    rng = np.random.default_rng(3)
    for _ in range(2):
        _step(s, t, (6, 3), "float64", rng)
        _same_buffers(s, t, "float64")


@pytest.mark.parametrize("cls,shape", SHAPES)
def test_affine_false_has_no_parameters(cls, shape):
    s, t = _pair(cls, affine=False)
    assert s.weight is None and s.bias is None and list(s.parameters()) == []
    assert list(s.state_dict()) == list(t.state_dict()) == ["running_mean", "running_var", "num_batches_tracked"]
    rng = np.random.default_rng(4)
    for _ in range(3):
        _step(s, t, shape, "float64", rng)
    _same_buffers(s, t, "float64")
    s.eval(), t.eval()
    _step(s, t, shape, "float64", rng)


@pytest.mark.parametrize("cls,shape", SHAPES)
def test_bias_false_keeps_the_weight_only(cls, shape):
    s, t = _pair(cls, bias=False)
    assert s.bias is None and [n for n, _ in s.named_parameters()] == ["weight"]
    assert list(s.state_dict()) == list(t.state_dict())
    rng = np.random.default_rng(10)
    _step(s, t, shape, "float64", rng)
    _same_buffers(s, t, "float64")
    s.reset_parameters()
    np.testing.assert_array_equal(s.weight.numpy(), 1)


@pytest.mark.parametrize("cls,shape", SHAPES)
def test_without_running_stats_batch_statistics_always(cls, shape):
    s, t = _pair(cls, track_running_stats=False)
    assert s.running_mean is None and s.running_var is None and s.num_batches_tracked is None
    assert list(s.state_dict()) == list(t.state_dict()) == ["weight", "bias"]
    rng = np.random.default_rng(5)
    _step(s, t, shape, "float64", rng)
    s.eval(), t.eval()
    _step(s, t, shape, "float64", rng)  # eval normalises with the batch too
    assert list(s.buffers()) == []


def test_eval_takes_a_batch_of_one():
    s, t = _pair("BatchNorm1d")
    s.eval(), t.eval()
    _step(s, t, (1, 3), "float64", np.random.default_rng(6))


# ---- state dict ------------------------------------------------------------------------------------
@pytest.mark.parametrize("cls", ["BatchNorm1d", "BatchNorm2d"])
def test_loads_torch_state_dict_with_its_keys_and_dtypes(cls):
    t = getattr(torch.nn, cls)(4)
    t(torch.randn(5, 4, *(() if cls == "BatchNorm1d" else (2, 3))))  # trained one step: non-trivial buffers
    s = getattr(nn, cls)(4)
    fresh = s.state_dict()
    assert list(fresh) == list(t.state_dict())
    assert {k: (v.dtype, v.shape) for k, v in fresh.items()} == \
        {k: (np.dtype(str(v.dtype).replace("torch.", "")), tuple(v.shape)) for k, v in t.state_dict().items()}
    s.load_state_dict(t.state_dict())  # torch tensors straight in
    for k, v in t.state_dict().items():
        np.testing.assert_array_equal(s.state_dict()[k], v.numpy(), err_msg=k)
    assert s.num_batches_tracked.item() == 1


def test_torch_signature_device_and_dtype_positional():
    s = nn.BatchNorm2d(5, 1e-3, 0.2, True, True, "cpu", np.float64)
    t = torch.nn.BatchNorm2d(5, 1e-3, 0.2, True, True, "cpu", torch.float64)
    assert s.eps == t.eps and s.momentum == t.momentum and s.weight.device == "cpu"
    assert s.weight.dtype == s.running_var.dtype == np.float64 and s.num_batches_tracked.dtype == np.int64
    assert nn.BatchNorm1d(3, device=torch.device("cpu")).running_mean.device == "cpu"


def test_to_double_casts_running_stats_not_the_counter():
    s = nn.BatchNorm1d(3).double()
    assert s.running_mean.dtype == s.running_var.dtype == s.weight.dtype == np.float64
    assert s.num_batches_tracked.dtype == np.int64


def test_reset_running_stats_and_parameters():
    s, _ = _pair("BatchNorm1d")
    s(Tensor(np.random.default_rng(7).standard_normal((4, 3)).astype(np.float64)))
    mean_array = s.running_mean.data
    s.reset_running_stats()
    assert s.running_mean.data is mean_array  # in place, as torch's zero_()
    np.testing.assert_array_equal(s.running_mean.numpy(), 0)
    np.testing.assert_array_equal(s.running_var.numpy(), 1)
    assert s.num_batches_tracked.item() == 0
    assert not np.all(s.weight.numpy() == 1)
    s.reset_parameters()
    np.testing.assert_array_equal(s.weight.numpy(), 1)
    np.testing.assert_array_equal(s.bias.numpy(), 0)
    nn.BatchNorm1d(3, affine=False, track_running_stats=False).reset_parameters()  # nothing to reset


# ---- repr and errors -------------------------------------------------------------------------------
@pytest.mark.parametrize("kwargs", [{}, dict(eps=1e-3, momentum=None), dict(affine=False, track_running_stats=False),
                                    dict(bias=False)])
@pytest.mark.parametrize("cls", ["BatchNorm1d", "BatchNorm2d"])
def test_repr_as_torch(cls, kwargs):
    """torch (since 2.x, with its keyword-only `bias`) names bias= between affine= and track_running_stats=."""
    assert repr(getattr(nn, cls)(3, **kwargs)) == repr(getattr(torch.nn, cls)(3, **kwargs))
    assert repr(nn.BatchNorm1d(3)) == \
        "BatchNorm1d(3, eps=1e-05, momentum=0.1, affine=True, bias=True, track_running_stats=True)"


@pytest.mark.parametrize("cls,shape,message", [
    ("BatchNorm1d", (2, 3, 4, 5), "expected 2D or 3D input (got 4D input)"),
    ("BatchNorm1d", (3,), "expected 2D or 3D input (got 1D input)"),
    ("BatchNorm2d", (2, 3, 4), "expected 4D input (got 3D input)"),
])
def test_wrong_input_dims_raise_torch_message(cls, shape, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        getattr(torch.nn, cls)(3)(torch.zeros(shape))
    with pytest.raises(ValueError) as err:
        getattr(nn, cls)(3)(seqlab.zeros(shape))
    assert str(err.value) == message


@pytest.mark.parametrize("cls,shape", [("BatchNorm1d", (1, 3)), ("BatchNorm1d", (1, 3, 1)),
                                       ("BatchNorm2d", (1, 3, 1, 1))])
@pytest.mark.parametrize("track", [True, False])
def test_one_value_per_channel_in_training_raises(cls, shape, track):
    s = getattr(nn, cls)(3, track_running_stats=track)
    with pytest.raises(ValueError, match="Expected more than 1 value per channel when training, got input size"):
        s(seqlab.zeros(shape))
    if track:
        assert s.num_batches_tracked.item() == 0  # the refused batch is not counted
        np.testing.assert_array_equal(s.running_var.numpy(), 1)


@pytest.mark.parametrize("training,eps,message", [(True, 0.0, "positive during training, but got 0.0"),
                                                  (False, -1.0, "non-negative, but got -1.0")])
def test_eps_checked_as_torch(training, eps, message):
    x, rm, rv = np.zeros((2, 3)), np.zeros(3), np.ones(3)
    with pytest.raises(ValueError, match=message):
        torch.nn.functional.batch_norm(torch.tensor(x), torch.tensor(rm), torch.tensor(rv), training=training, eps=eps)
    with pytest.raises(ValueError, match=message):
        batch_norm(Tensor(x), rm, rv, training=training, eps=eps)


def test_channel_mismatch_names_both():
    with pytest.raises(ValueError, match=r"input has 4 channels \(shape \(2, 4\)\) but running_mean has shape \(3,\)"):
        nn.BatchNorm1d(3)(seqlab.zeros(2, 4))


def test_functional_eval_without_running_stats_raises():
    with pytest.raises(ValueError, match="needs running_mean and running_var"):
        batch_norm(seqlab.zeros(2, 3), None, None, training=False)


# ---- the functional form ---------------------------------------------------------------------------
@pytest.mark.parametrize("shape", [(6, 3), (3, 3, 4), (2, 3, 2, 3)])
def test_functional_training_grad_by_central_differences_and_torch(shape):
    check_op(lambda x, w, b: batch_norm(x, None, None, w, b, training=True),
             lambda x, w, b: torch.nn.functional.batch_norm(x, None, None, w, b, training=True),
             [shape, (3,), (3,)])


def test_functional_eval_grad_by_central_differences_and_torch():
    mean, var = np.array([0.5, -1.0, 2.0]), np.array([0.3, 1.5, 2.0])
    check_op(lambda x, w, b: batch_norm(x, Tensor(mean.astype(x.dtype)), Tensor(var.astype(x.dtype)), w, b),
             lambda x, w, b: torch.nn.functional.batch_norm(x, torch.tensor(mean, dtype=x.dtype),
                                                            torch.tensor(var, dtype=x.dtype), w, b),
             [(4, 3, 2), (3,), (3,)])


def test_functional_updates_arrays_in_place_as_torch():
    rng = np.random.default_rng(8)
    x = rng.standard_normal((5, 3, 4))
    rm, rv = np.zeros(3), np.ones(3)
    trm, trv = torch.zeros(3, dtype=torch.float64), torch.ones(3, dtype=torch.float64)
    y = batch_norm(Tensor(x), rm, rv, training=True, momentum=0.3, eps=1e-3)
    yt = torch.nn.functional.batch_norm(torch.tensor(x), trm, trv, training=True, momentum=0.3, eps=1e-3)
    _close(y, yt, "float64", "output")
    _close(rm, trm, "float64", "running_mean")
    _close(rv, trv, "float64", "running_var")


# ---- the device path: CuPy's stand-in on the CPU, and CuPy itself where a GPU is seen ------------------

def test_on_the_device_as_on_the_host(cuda):
    x = np.random.default_rng(9).standard_normal((4, 3, 5, 5)).astype(np.float32)
    results = []
    for device in ("cpu", "cuda"):
        m = nn.BatchNorm2d(3, momentum=None).to(device)
        xs = Tensor(backend.to_device(x, device), requires_grad=True)
        m(xs).sum().backward()
        m(xs * 2.0)
        m.eval()
        out = m(xs)
        assert out.device == device and backend.device_of(m.running_var.data) == device
        results.append([backend.to_numpy(a) for a in (out.data, xs.grad, m.weight.grad, m.running_mean.data,
                                                        m.running_var.data, m.num_batches_tracked.data)])
    for a, b in zip(*results):
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6)


# ---- it trains -------------------------------------------------------------------------------------
def test_mlp_with_batchnorm_fits_a_toy_problem():
    """Two noisy concentric rings, far from the origin: BatchNorm re-centres the inputs and the MLP separates them."""
    seqlab.manual_seed(0)
    rng = np.random.default_rng(0)
    n = 256
    labels = rng.integers(0, 2, n)
    angle = rng.uniform(0, 2 * np.pi, n)
    radius = 1.0 + labels + 0.1 * rng.standard_normal(n)
    x = np.stack([radius * np.cos(angle), radius * np.sin(angle)], 1) * 5 + 20  # (n, 2), badly scaled
    model = nn.Sequential(nn.Linear(2, 32), nn.BatchNorm1d(32), nn.ReLU(), nn.Linear(32, 2))
    opt = Adam(model.parameters(), lr=0.02)
    loss_fn = nn.CrossEntropyLoss()
    xs, ys = Tensor(x.astype(np.float32)), Tensor(labels)
    losses = []
    for epoch in range(60):
        for idx in np.array_split(rng.permutation(n), 4):  # mini-batches of 64
            loss = loss_fn(model(xs[idx]), ys[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
        losses.append(float(loss.item()))
    assert losses[-1] < 0.25 * losses[0], losses
    model.eval()
    accuracy = float((model(xs).numpy().argmax(1) == labels).mean())
    assert accuracy > 0.95, accuracy
    assert int(model[1].num_batches_tracked.item()) == 240
