"""nn layers of issue 2 §4 against torch.nn: same state_dict, same outputs, same gradients, same init."""
import math

import numpy as np
import pytest
import torch
from helpers import check_module

import seqlab
from seqlab import nn


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("x_shape", [(5,), (4, 5), (2, 3, 5)])
def test_linear(dtype, bias, x_shape):
    check_module(nn.Linear(5, 3, bias=bias), torch.nn.Linear(5, 3, bias=bias), [x_shape], dtype=dtype)


@pytest.mark.parametrize("padding_idx", [None, 2])
def test_embedding(padding_idx):
    ids = np.array([[0, 2, 2, 5], [5, 1, 2, 0]])
    for dtype in ("float64", "float32"):
        check_module(nn.Embedding(6, 3, padding_idx=padding_idx), torch.nn.Embedding(6, 3, padding_idx=padding_idx),
                     [ids], dtype=dtype)


@pytest.mark.parametrize("shape, kw", [(4, {}), ((3, 4), {}), (4, {"eps": 1e-3}), (4, {"bias": False}),
                                       (4, {"elementwise_affine": False})])
def test_layer_norm(shape, kw):
    inputs = [(2, 3, 4)]
    s, t = nn.LayerNorm(shape, **kw), torch.nn.LayerNorm(shape, **kw)
    with torch.no_grad():  # non-trivial affine parameters
        for p in t.parameters():
            p.add_(torch.randn_like(p) * 0.3)
    check_module(s, t, inputs)
    check_module(s, t, inputs, dtype="float32")


def test_rms_norm():
    t = torch.nn.RMSNorm(6, eps=1e-6)
    with torch.no_grad():
        t.weight.add_(torch.randn(6) * 0.3)
    check_module(nn.RMSNorm(6, eps=1e-6), t, [(2, 3, 6)])


def test_rms_norm_over_two_dims_and_without_affine():
    t = torch.nn.RMSNorm((3, 6), eps=1e-5)
    with torch.no_grad():
        t.weight.add_(torch.randn(3, 6) * 0.3)
    check_module(nn.RMSNorm((3, 6), eps=1e-5), t, [(2, 3, 6)])
    check_module(nn.RMSNorm(6, elementwise_affine=False), torch.nn.RMSNorm(6, elementwise_affine=False), [(2, 3, 6)])
    assert list(dict(nn.RMSNorm(6, elementwise_affine=False).named_parameters())) == []
    assert repr(nn.RMSNorm(6)) == repr(torch.nn.RMSNorm(6))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_rms_norm_default_eps_is_the_dtypes_as_torch(dtype):
    """eps=None: the input dtype's machine epsilon, which shows on inputs whose mean square is near it."""
    x = (np.random.default_rng(0).standard_normal((2, 6)) * 3e-4).astype(dtype)
    got = nn.RMSNorm(6)(seqlab.tensor(x)).numpy()
    want = torch.nn.RMSNorm(6, dtype=getattr(torch, np.dtype(dtype).name))(torch.from_numpy(x)).detach().numpy()
    np.testing.assert_allclose(got, want, rtol=1e-6 if dtype == np.float32 else 1e-12)
    assert not np.allclose(got, nn.RMSNorm(6, eps=1e-6)(seqlab.tensor(x)).numpy(), rtol=1e-3)  # eps matters here


def test_dropout_module_in_eval_and_p0():
    check_module(nn.Dropout(0.0), torch.nn.Dropout(0.0), [(3, 4)])
    check_module(nn.Dropout(0.7).eval(), torch.nn.Dropout(0.7).eval(), [(3, 4)])


def _mlp(lib):
    return lib.Sequential(lib.Linear(4, 8), lib.ReLU(), lib.Linear(8, 8), lib.GELU(approximate="tanh"),
                          lib.LayerNorm(8), lib.Linear(8, 8), lib.Tanh(), lib.Linear(8, 3), lib.Sigmoid(),
                          lib.Linear(3, 2), lib.SiLU(), lib.Dropout(0.0), lib.Softmax(dim=-1))


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_sequential_mlp(dtype):
    check_module(_mlp(nn), _mlp(torch.nn), [(5, 4)], dtype=dtype)


def test_identity():
    x = seqlab.randn(3)
    assert nn.Identity(4, foo=1)(x) is x


# ---- default initialisation mirrors torch ----------------------------------------------------------------
def test_linear_init_bounds_and_spread():
    seqlab.manual_seed(0)
    lin = nn.Linear(256, 512)
    w, b = lin.weight.numpy(), lin.bias.numpy()
    bound = 1 / math.sqrt(256)  # kaiming_uniform(a=√5) gives U(−1/√fan_in, 1/√fan_in), as torch
    assert w.shape == (512, 256) and b.shape == (512,) and w.dtype == np.float32
    assert np.abs(w).max() <= bound and np.abs(b).max() <= bound
    t = torch.nn.Linear(256, 512)
    np.testing.assert_allclose(w.std(), t.weight.detach().numpy().std(), rtol=0.03)
    np.testing.assert_allclose(w.std(), bound / math.sqrt(3), rtol=0.02)


def test_embedding_init_is_standard_normal_with_zero_padding_row():
    seqlab.manual_seed(0)
    emb = nn.Embedding(1000, 64, padding_idx=3)
    w = emb.weight.numpy()
    assert np.all(w[3] == 0)
    assert abs(w.mean()) < 0.01 and abs(w.std() - 1) < 0.01


def test_layer_norm_init():
    ln = nn.LayerNorm(5)
    assert np.all(ln.weight.numpy() == 1) and np.all(ln.bias.numpy() == 0)


@pytest.mark.parametrize("fn, kw", [("xavier_uniform_", {}), ("xavier_normal_", {}), ("kaiming_uniform_", {}),
                                    ("kaiming_normal_", {"nonlinearity": "relu"}), ("normal_", {"std": 0.02}),
                                    ("uniform_", {"a": -0.1, "b": 0.1}), ("trunc_normal_", {"std": 0.02}),
                                    ("orthogonal_", {})])
def test_initialisers_match_torchs_distribution(fn, kw):
    """Same distribution as torch.nn.init (std within 3%), drawn from seqlab's seeded generator."""
    seqlab.manual_seed(1)
    w = seqlab.zeros(300, 200)
    getattr(nn.init, fn)(w, **kw)
    t = torch.zeros(300, 200)
    getattr(torch.nn.init, fn)(t, **kw)
    np.testing.assert_allclose(w.numpy().std(), t.numpy().std(), rtol=0.03)
    if fn == "orthogonal_":
        np.testing.assert_allclose(w.numpy().T @ w.numpy(), np.eye(200), atol=1e-5)
    if fn == "trunc_normal_":
        assert np.abs(w.numpy()).max() <= 2.0


def test_init_constants_and_errors():
    w = seqlab.zeros(3, 2)
    nn.init.ones_(w)
    assert np.all(w.numpy() == 1)
    nn.init.constant_(w, 0.5)
    assert np.all(w.numpy() == 0.5)
    nn.init.zeros_(w)
    assert np.all(w.numpy() == 0)
    with pytest.raises(ValueError, match=r"\(3,\)"):
        nn.init.xavier_uniform_(seqlab.zeros(3))
    assert nn.init.calculate_gain("tanh") == torch.nn.init.calculate_gain("tanh")


@pytest.mark.parametrize("bad, match", [
    ([[1.0, 2.0, 3.0]], "expects a Tensor \\(or an array\\), got list"),
    (np.ones((2, 3), np.int64), "floating-point input, got dtype int64"),
    (np.ones((2, 3), bool), "floating-point input, got dtype bool"),
])
def test_linear_refuses_what_torch_refuses(bad, match):
    """Integer, bool or list input is a TypeError, as in torch (NumPy would have promoted ids to float64)."""
    layer = nn.Linear(3, 2)
    with pytest.raises(TypeError, match=match):
        layer(bad)
    t = torch.nn.Linear(3, 2)
    with pytest.raises((TypeError, RuntimeError)):
        t(torch.tensor(bad) if not isinstance(bad, list) else bad)
