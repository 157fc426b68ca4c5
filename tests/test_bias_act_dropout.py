"""F.bias_act_dropout: a feed-forward's bias, activation and dropout in one compiled pass, held to the
three ops it replaces (the same dropout mask, the same values up to float32 rounding), to torch, and
in the layers that use it."""
import numpy as np
import pytest
import torch

import seqlab
import seqlab.functional as F
from seqlab import kernels
from seqlab.autograd.ops import fused
from seqlab.hub.config import HF_ACTIVATIONS

HAVE_NUMBA = kernels.use("auto") == "numba"
kernels.use(None)
needs_numba = pytest.mark.skipif(not HAVE_NUMBA, reason="Numba is not installed")

ACTS = {"relu": F.relu, "gelu": F.gelu, "gelu_tanh": lambda h: F.gelu(h, approximate="tanh")}


def arrays(*shape, seed=0):
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(shape) * 2).astype(np.float32)
    b = rng.standard_normal(shape[-1]).astype(np.float32)
    g = rng.standard_normal(shape).astype(np.float32)
    return x, b, g


def run(fn, x, b, g, seed=3):
    """fn(x, b) on fresh leaves with seqlab's generator at `seed`: (output, dx, db, the op that made it)."""
    xt, bt = seqlab.tensor(x, requires_grad=True), seqlab.tensor(b, requires_grad=True)
    seqlab.manual_seed(seed)
    y = fn(xt, bt)
    op = type(y._ctx)  # (backward frees it)
    (y * seqlab.tensor(g)).sum().backward()
    return np.array(y.data), np.array(xt.grad), np.array(bt.grad), op


def composed(act, p, training=True):
    return lambda x, b: F.dropout(ACTS[act](x + b), p, training)


@pytest.fixture
def numba_on():
    assert kernels.use("numba") == "numba"
    yield
    kernels.use(None)


@needs_numba
@pytest.mark.parametrize("act", list(ACTS))
@pytest.mark.parametrize("p", [0.0, 0.3])
def test_one_op_gives_the_three_ops_values_mask_and_gradients(numba_on, act, p):
    x, b, g = arrays(4, 37, 64)  # 148 rows: four blocks of 32 and a short one
    y1, dx1, db1, op = run(lambda x, b: F.bias_act_dropout(x, b, act, p), x, b, g)
    y0, dx0, db0, _ = run(composed(act, p), x, b, g)
    assert op is fused.BiasActDropout
    np.testing.assert_array_equal(y1 == 0, y0 == 0)  # the same mask (and ReLU's zeros)
    if p:
        assert 0.2 < np.mean(y1 == 0) - (np.mean(x + b <= 0) if act == "relu" else 0) * 0.7 < 0.4
    np.testing.assert_allclose(y1, y0, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(dx1, dx0, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(db1, db0, rtol=1e-5, atol=1e-4)


@needs_numba
@pytest.mark.parametrize("act,torch_act", [("relu", torch.relu), ("gelu", torch.nn.functional.gelu),
                                           ("gelu_tanh", lambda h: torch.nn.functional.gelu(h, approximate="tanh"))])
def test_without_dropout_it_matches_torch(numba_on, act, torch_act):
    x, b, g = arrays(6, 50)  # 6 rows: one short block
    y, dx, db, op = run(lambda x, b: F.bias_act_dropout(x, b, act), x, b, g)
    assert op is fused.BiasActDropout
    xt, bt = torch.tensor(x, requires_grad=True), torch.tensor(b, requires_grad=True)
    yt = torch_act(xt + bt)
    (yt * torch.tensor(g)).sum().backward()
    np.testing.assert_allclose(y, yt.detach().numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(dx, xt.grad.numpy(), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(db, bt.grad.numpy(), rtol=1e-4, atol=1e-4)


@needs_numba
def test_an_odd_width_with_dropout_takes_the_three_ops_with_the_same_mask(numba_on):
    x, b, g = arrays(5, 7)  # a mask word would straddle two rows
    y1, dx1, _, op = run(lambda x, b: F.bias_act_dropout(x, b, "gelu", 0.5), x, b, g)
    y0, dx0, _, _ = run(composed("gelu", 0.5), x, b, g)
    assert op is not fused.BiasActDropout
    np.testing.assert_array_equal(y1, y0)
    np.testing.assert_array_equal(dx1, dx0)
    y, *_, op = run(lambda x, b: F.bias_act_dropout(x, b, "gelu"), x, b, g)  # without dropout: the kernel
    assert op is fused.BiasActDropout


@pytest.mark.parametrize("act", list(ACTS))
def test_without_the_kernels_it_is_the_three_ops(act):
    x, b, g = arrays(3, 8)
    kernels.use("numpy")
    try:
        y1, dx1, db1, op = run(lambda x, b: F.bias_act_dropout(x, b, act, 0.25), x, b, g)
        y0, dx0, db0, _ = run(composed(act, 0.25), x, b, g)
    finally:
        kernels.use(None)
    assert op is not fused.BiasActDropout
    for a, c in ((y1, y0), (dx1, dx0), (db1, db0)):
        np.testing.assert_array_equal(a, c)


@needs_numba
def test_backward_runs_after_the_kernels_are_switched_off(numba_on):
    x, b, g = arrays(4, 16)
    xt, bt = seqlab.tensor(x, requires_grad=True), seqlab.tensor(b, requires_grad=True)
    seqlab.manual_seed(1)
    y = F.bias_act_dropout(xt, bt, "gelu", 0.5)
    kernels.use("numpy")
    (y * seqlab.tensor(g)).sum().backward()
    kernels.use("numba")
    _, dx0, db0, _ = run(composed("gelu", 0.5), x, b, g, seed=1)
    np.testing.assert_allclose(np.array(xt.grad), dx0, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.array(bt.grad), db0, rtol=1e-5, atol=1e-5)


@needs_numba
def test_eval_mode_and_p_one_and_bad_arguments(numba_on):
    x, b, g = arrays(3, 10)
    y, *_ = run(lambda x, b: F.bias_act_dropout(x, b, "gelu", 0.9, training=False), x, b, g)
    y0, *_ = run(lambda x, b: F.gelu(x + b), x, b, g)
    np.testing.assert_allclose(y, y0, rtol=1e-6, atol=1e-7)
    y, dx, _, _ = run(lambda x, b: F.bias_act_dropout(x, b, "relu", 1.0), x, b, g)
    assert not y.any() and not dx.any()
    with pytest.raises(ValueError, match="activation must be one of"):
        F.bias_act_dropout(x, b, "swish")
    with pytest.raises(ValueError, match=r"dropout probability must be in \[0, 1\]"):
        F.bias_act_dropout(x, b, "gelu", 1.5)


def test_fused_activation_names_only_what_the_kernel_computes():
    assert F.fused_activation(F.relu) == "relu" and F.fused_activation(F.gelu) == "gelu"
    assert F.fused_activation(HF_ACTIVATIONS["gelu_new"]) == "gelu_tanh"
    assert F.fused_activation(HF_ACTIVATIONS["gelu"]) == "gelu"
    assert F.fused_activation(F.silu) is None and F.fused_activation(lambda h: F.gelu(h)) is None


@needs_numba
@pytest.mark.parametrize("activation", ["gelu", "relu"])
def test_encoder_layer_is_the_same_with_the_fused_feed_forward(numba_on, activation):
    seqlab.manual_seed(0)
    layer = seqlab.nn.TransformerEncoderLayer(16, 2, 32, dropout=0.2, activation=activation)
    x, _, g = arrays(3, 5, 16)

    def step(act):
        layer.activation = act
        layer.zero_grad()
        y, dx, _, _ = run(lambda xt, _b: layer(xt), x, np.zeros(16, np.float32), g)
        return y, dx, np.array(layer.linear1.bias.grad), np.array(layer.linear1.weight.grad)

    fused_run = step(ACTS[activation])
    plain_run = step(lambda h: ACTS[activation](h))  # not recognised: the three ops
    for a, c in zip(fused_run, plain_run):
        np.testing.assert_allclose(a, c, rtol=1e-5, atol=1e-5)


@needs_numba
def test_gpt_mlp_uses_the_fused_op_and_gives_the_same_gradients(numba_on, monkeypatch):
    from seqlab.models.gpt import GPT, GPTConfig

    seqlab.manual_seed(0)
    model = GPT(GPTConfig(vocab_size=40, n_positions=16, n_embd=16, n_layer=1, n_head=2))
    ids = np.random.default_rng(0).integers(0, 40, (2, 8))
    calls = []
    real = fused.BiasActDropout.forward
    monkeypatch.setattr(fused.BiasActDropout, "forward", lambda self, *a, **k: (calls.append(k), real(self, *a, **k))[1])

    def grads():
        seqlab.manual_seed(5)  # the same dropout masks both times
        model.zero_grad()
        model(ids, labels=ids).loss.backward()
        return {n: np.array(p.grad) for n, p in model.named_parameters()}

    with_fused = grads()
    assert [c["activation"] for c in calls] == ["gelu_tanh"]
    model.transformer.h[0].mlp.act = lambda h: F.gelu(h, approximate="tanh")
    plain = grads()
    assert len(calls) == 1
    for name, grad in with_fused.items():
        np.testing.assert_allclose(grad, plain[name], rtol=1e-4, atol=1e-6, err_msg=name)


@needs_numba
def test_the_layers_switch_to_three_ops_when_asked(numba_on, monkeypatch):
    from seqlab.nn import linear

    layer = seqlab.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.1, activation="gelu")
    calls = []
    real = fused.BiasActDropout.forward
    monkeypatch.setattr(fused.BiasActDropout, "forward", lambda self, *a, **k: (calls.append(1), real(self, *a, **k))[1])
    x = seqlab.tensor(arrays(2, 3, 8)[0])
    layer(x)
    assert len(calls) == 1
    monkeypatch.setattr(linear, "FUSE_FEED_FORWARD", False)  # benchmarks/engine_ab.py --switch fused-ff
    layer(x)
    assert len(calls) == 1
