"""nn.utils.parametrize, parametrizations.weight_norm / spectral_norm and the older weight_norm against torch's:
state-dict keys and values, outputs, gradients of the originals, assignment through right_inverse, chaining,
caching, removal, reprs and refusals."""
import warnings

import numpy as np
import pytest
import torch
import torch.nn as tnn
from torch.nn.utils import parametrize as tP

import seqlab
from seqlab import nn
from seqlab.nn.utils import parametrizations as P
from seqlab.nn.utils import parametrize as sP

RNG = np.random.default_rng(0)


def _pair_linear(i=3, o=4):
    t = tnn.Linear(i, o).double()
    s = nn.Linear(i, o)
    s.to(dtype=np.float64)
    s.load_state_dict({k: v.numpy() for k, v in t.state_dict().items()})
    return s, t


def _load(s, t):
    s.load_state_dict({k: v.detach().numpy() for k, v in t.state_dict().items()})


def _run(s, t, shape=(5, 3)):
    x = RNG.standard_normal(shape)
    ys, yt = s(seqlab.tensor(x)), t(torch.tensor(x))
    np.testing.assert_allclose(ys.data, yt.detach().numpy(), rtol=1e-10, atol=1e-12)
    g = RNG.standard_normal(ys.shape)
    ys.backward(seqlab.tensor(g))
    yt.backward(torch.tensor(g))
    sp, tp = dict(s.named_parameters()), dict(t.named_parameters())
    assert list(sp) == list(tp)
    for k in sp:
        np.testing.assert_allclose(sp[k].grad, tp[k].grad.numpy(), rtol=1e-9, atol=1e-11, err_msg=k)


class Symmetric(nn.Module):
    def forward(self, X):
        return X.triu() + X.triu(1).transpose(-1, -2)

    def right_inverse(self, A):
        return A.triu()


class TSymmetric(tnn.Module):
    def forward(self, X):
        return X.triu() + X.triu(1).transpose(-1, -2)

    def right_inverse(self, A):
        return A.triu()


class Scale(nn.Module):
    def forward(self, X):
        return X * 2.0


class TScale(tnn.Module):
    def forward(self, X):
        return X * 2.0


@pytest.mark.parametrize("dim", [0, 1, None, -1])
def test_weight_norm_matches_torch(dim):
    s, t = _pair_linear()
    P.weight_norm(s, dim=dim)
    tnn.utils.parametrizations.weight_norm(t, dim=dim)
    assert list(s.state_dict()) == list(t.state_dict())
    for k, v in t.state_dict().items():
        np.testing.assert_allclose(s.state_dict()[k], v.numpy(), rtol=1e-12, err_msg=k)
    assert type(s).__name__ == "ParametrizedLinear" and repr(s) == repr(t)
    _run(s, t)


def test_weight_norm_on_a_gru_weight_and_state_dict_from_torch():
    t = tnn.GRU(3, 4, batch_first=True).double()
    s = nn.GRU(3, 4)
    s.to(dtype=np.float64)
    tnn.utils.parametrizations.weight_norm(t, "weight_hh_l0")
    P.weight_norm(s, "weight_hh_l0")
    _load(s, t)
    x = RNG.standard_normal((2, 5, 3))
    ys, yt = s(seqlab.tensor(x))[0], t(torch.tensor(x))[0]
    np.testing.assert_allclose(ys.data, yt.detach().numpy(), rtol=1e-10, atol=1e-12)
    ys.sum().backward()
    yt.sum().backward()
    np.testing.assert_allclose(s.parametrizations.weight_hh_l0.original1.grad,
                               t.parametrizations.weight_hh_l0.original1.grad.numpy(), rtol=1e-9, atol=1e-11)


@pytest.mark.parametrize("mode", ["train", "eval"])
def test_spectral_norm_matches_torch_with_its_power_iteration(mode):
    s, t = _pair_linear(5, 4)
    P.spectral_norm(s)
    tnn.utils.parametrizations.spectral_norm(t)
    assert list(s.state_dict()) == list(t.state_dict())
    _load(s, t)  # the same start for u and v (each library draws its own)
    getattr(s, mode)()
    getattr(t, mode)()
    for _ in range(3):
        s.zero_grad()
        t.zero_grad()
        _run(s, t, (3, 5))
        np.testing.assert_allclose(s.parametrizations.weight[0]._u.data,
                                   t.parametrizations.weight[0]._u.numpy(), rtol=1e-10, atol=1e-12)
    sigma = np.linalg.svd(s.weight.data, compute_uv=False)[0]
    assert abs(sigma - 1.0) < 0.05  # the weight is normalised to spectral norm ~1


def test_spectral_norm_of_a_vector_and_refusals():
    s = nn.Linear(3, 1)
    P.spectral_norm(s, "bias")
    np.testing.assert_allclose(np.abs(s.bias.data), 1.0)
    with pytest.raises(IndexError, match="Dimension out of range"):
        P.spectral_norm(nn.Linear(3, 4), dim=2)
    with pytest.raises(ValueError, match="n_power_iterations"):
        P.spectral_norm(nn.Linear(3, 4), n_power_iterations=0)
    with pytest.raises(ValueError, match="no parameter or buffer with name 'kernel'"):
        P.weight_norm(nn.Linear(3, 4), "kernel")


def test_register_parametrization_assignment_chaining_and_removal_as_torch():
    s, t = _pair_linear(4, 4)
    sP.register_parametrization(s, "weight", Symmetric())
    tP.register_parametrization(t, "weight", TSymmetric())
    np.testing.assert_allclose(s.weight.data, t.weight.detach().numpy())
    assert np.allclose(s.weight.data, s.weight.data.T)
    a = RNG.standard_normal((4, 4))
    a = a + a.T
    s.weight = seqlab.tensor(a)            # through right_inverse into the original
    with torch.no_grad():
        t.weight = torch.tensor(a)
    np.testing.assert_allclose(s.parametrizations.weight.original.data,
                               t.parametrizations.weight.original.detach().numpy())
    np.testing.assert_allclose(s.weight.data, a)
    sP.register_parametrization(s, "weight", Scale())  # chained after Symmetric
    tP.register_parametrization(t, "weight", TScale())
    assert repr(s).replace("Scale", "TScale").replace("(0): Symmetric", "(0): TSymmetric") == repr(t)
    _run(s, t, (2, 4))
    assert sP.is_parametrized(s) and sP.is_parametrized(s, "weight") and not sP.is_parametrized(s, "bias")
    assert sP.type_before_parametrizations(s) is nn.Linear
    original = s.parametrizations.weight.original
    sP.remove_parametrizations(s, "weight")
    tP.remove_parametrizations(t, "weight")
    assert type(s) is nn.Linear and not sP.is_parametrized(s)
    assert s.weight is original  # the same Parameter, now holding the parametrized value (an optimizer keeps it)
    np.testing.assert_allclose(s.weight.data, t.weight.detach().numpy())
    assert list(s.state_dict()) == list(t.state_dict())


def test_remove_with_leave_parametrized_false_and_several_originals():
    s = nn.Linear(3, 4)
    sP.register_parametrization(s, "weight", Scale())
    w = s.parametrizations.weight.original.data.copy()
    sP.remove_parametrizations(s, "weight", leave_parametrized=False)
    np.testing.assert_array_equal(s.weight.data, w)
    s2 = nn.Linear(3, 4)
    P.weight_norm(s2)
    expected = s2.weight.data.copy()
    with pytest.raises(ValueError, match="sequence of tensors"):
        sP.remove_parametrizations(s2, "weight", leave_parametrized=False)
    sP.remove_parametrizations(s2, "weight")
    assert isinstance(s2.weight, nn.Parameter)
    np.testing.assert_allclose(s2.weight.data, expected, rtol=1e-6)


def test_cached_computes_each_parametrized_tensor_once():
    calls = []

    class Counting(nn.Module):
        def forward(self, X):
            calls.append(1)
            return X * 1.0

    s = nn.Linear(3, 4)
    sP.register_parametrization(s, "weight", Counting())
    calls.clear()
    with sP.cached():
        a, b = s.weight, s.weight
        assert a is b
    assert len(calls) == 1
    s.weight
    assert len(calls) == 2


def test_optimizer_trains_the_originals():
    s = nn.Linear(3, 1)
    P.weight_norm(s)
    opt = seqlab.optim.SGD(s.parameters(), lr=0.1)
    before = s.parametrizations.weight.original1.data.copy()
    s(seqlab.randn(4, 3)).sum().backward()
    opt.step()
    assert not np.allclose(before, s.parametrizations.weight.original1.data)


def test_register_parametrization_refusals():
    with pytest.raises(ValueError, match="does not have a parameter, a buffer"):
        sP.register_parametrization(nn.Linear(3, 4), "kernel", Scale())

    class Shrink(nn.Module):
        def forward(self, X):
            return X[:1]

    with pytest.raises(ValueError, match="may not change the shape"):
        sP.register_parametrization(nn.Linear(3, 4), "weight", Shrink())
    sP.register_parametrization(nn.Linear(3, 4), "weight", Shrink(), unsafe=True)
    with pytest.raises(ValueError, match="does not have a parametrization"):
        sP.remove_parametrizations(nn.Linear(3, 4), "weight")


def test_legacy_weight_norm_as_torchs():
    s, t = _pair_linear()
    with pytest.warns(FutureWarning, match="deprecated"):
        nn.utils.weight_norm(s)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tnn.utils.weight_norm(t)
    assert list(s.state_dict()) == list(t.state_dict())  # bias, weight_g, weight_v
    _load(s, t)
    _run(s, t)
    with pytest.raises(RuntimeError, match="two weight_norm hooks"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            nn.utils.weight_norm(s)
    nn.utils.remove_weight_norm(s)
    tnn.utils.remove_weight_norm(t)
    assert list(s.state_dict()) == list(t.state_dict())
    np.testing.assert_allclose(s.weight.data, t.weight.detach().numpy(), rtol=1e-12)
    with pytest.raises(ValueError, match="not found"):
        nn.utils.remove_weight_norm(s)
