"""What a torch tutorial writes with torch.nn, run on seqlab.nn and compared with torch: containers edited in
place, Module.to with torch's devices and dtypes, load_state_dict's error type, nn.utils, and a few layers."""
import numpy as np
import pytest
import torch
from helpers import check_op

import seqlab
import seqlab.functional as F
from seqlab import nn


def _pair(n=4):
    ours = [nn.Linear(2, 2) for _ in range(n)]
    theirs = [torch.nn.Linear(2, 2) for _ in range(n)]
    return ours, theirs


def _names(module) -> list:
    return list(module.state_dict())


@pytest.mark.parametrize("kind", ["Sequential", "ModuleList"])
def test_numbered_containers_edit_in_place_and_renumber_as_torch(kind):
    (a, b, c, d), (ta, tb, tc, td) = _pair()
    ours = getattr(nn, kind)([a, b, c]) if kind == "ModuleList" else nn.Sequential(a, b, c)
    theirs = getattr(torch.nn, kind)([ta, tb, tc]) if kind == "ModuleList" else torch.nn.Sequential(ta, tb, tc)
    for edit in (lambda m, x: m.insert(1, x), lambda m, x: m.__delitem__(0), lambda m, x: m.pop(1),
                 lambda m, x: m.extend([x]), lambda m, x: m.__delitem__(slice(0, 1))):
        edit(ours, d)
        edit(theirs, td)
        assert _names(ours) == _names(theirs) and len(ours) == len(theirs)
    if kind == "Sequential":
        ours[0] = a
        theirs[0] = ta
        assert ours[0] is a and _names(ours) == _names(theirs)


def test_module_dict_takes_pairs_and_clears():
    (a, b), (ta, tb) = _pair(2)
    ours, theirs = nn.ModuleDict([("x", a), ("y", b)]), torch.nn.ModuleDict([("x", ta), ("y", tb)])
    assert _names(ours) == _names(theirs)
    ours.update([("z", nn.Linear(2, 2))])
    theirs.update([("z", torch.nn.Linear(2, 2))])
    assert _names(ours) == _names(theirs)
    ours.clear()
    theirs.clear()
    assert len(ours) == len(theirs) == 0


def test_module_to_takes_torchs_devices_and_dtypes():
    m = nn.Linear(3, 2)
    assert m.to(torch.device("cpu")) is m and m.weight.dtype == np.float32
    m.to(torch.float64)
    assert m.weight.dtype == np.float64 and m.to(torch.device("cpu"), torch.float32).weight.dtype == np.float32
    with pytest.raises(TypeError, match="floating-point dtypes only"):
        m.to(torch.long)


def test_a_state_dict_that_does_not_fit_is_a_runtime_error_as_in_torch():
    with pytest.raises(RuntimeError, match="error loading state_dict into Linear"):
        nn.Linear(3, 2).load_state_dict({"weight": np.zeros((2, 3), np.float32)})
    with pytest.raises(RuntimeError):
        torch.nn.Linear(3, 2).load_state_dict({"weight": torch.zeros(2, 3)})


def test_nn_utils_and_nn_functional_without_importing_them():
    import seqlab.nn as fresh

    assert fresh.functional is F and fresh.utils.clip_grad_norm_ is seqlab.optim.clip_grad_norm_
    assert fresh.utils.clip_grad_value_ is seqlab.optim.clip_grad_value_


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("side", ["right", "left"])
def test_pad_sequence_equals_torchs_with_gradients(batch_first, side):
    from seqlab.nn.utils.rnn import pad_sequence

    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal((n, 3)) for n in (4, 1, 3)]
    ours = [seqlab.tensor(a, requires_grad=True) for a in arrays]
    theirs = [torch.tensor(a, requires_grad=True) for a in arrays]
    a = pad_sequence(ours, batch_first=batch_first, padding_value=-1.0, padding_side=side)
    b = torch.nn.utils.rnn.pad_sequence(theirs, batch_first=batch_first, padding_value=-1.0, padding_side=side)
    np.testing.assert_array_equal(a.numpy(), b.detach().numpy())
    w = rng.standard_normal(tuple(b.shape))
    (a * seqlab.tensor(w)).sum().backward()
    (b * torch.tensor(w)).sum().backward()
    for s, t in zip(ours, theirs):
        np.testing.assert_allclose(s.grad, t.grad.numpy())


def test_leaky_relu_log_softmax_and_flatten_equal_torch():
    check_op(lambda x: F.leaky_relu(x, 0.2), lambda x: torch.nn.functional.leaky_relu(x, 0.2), [(3, 4)])
    check_op(lambda x: nn.LeakyReLU()(x), lambda x: torch.nn.LeakyReLU()(x), [(5,)])
    check_op(lambda x: nn.LogSoftmax(dim=1)(x), lambda x: torch.nn.LogSoftmax(dim=1)(x), [(2, 3, 4)])
    check_op(lambda x: nn.Flatten()(x), lambda x: torch.nn.Flatten()(x), [(2, 3, 4)])
    check_op(lambda x: nn.Flatten(0, 1)(x), lambda x: torch.nn.Flatten(0, 1)(x), [(2, 3, 4)])
    assert repr(nn.LeakyReLU(0.2)) == "LeakyReLU(negative_slope=0.2)"


def test_layers_take_torchs_device_keyword():
    """device= as torch's layers take it ("cpu", a torch device); an unknown one is an error, not ignored."""
    for make in (lambda **kw: nn.Linear(3, 2, **kw), lambda **kw: nn.Embedding(5, 2, **kw),
                 lambda **kw: nn.LayerNorm(4, **kw), lambda **kw: nn.LSTM(3, 4, **kw),
                 lambda **kw: nn.GRUCell(3, 4, **kw), lambda **kw: nn.MultiheadAttention(4, 2, **kw),
                 lambda **kw: nn.TransformerEncoderLayer(4, 2, 8, **kw)):
        for device in ("cpu", torch.device("cpu")):
            m = make(device=device)
            assert all(p.device == "cpu" for p in m.parameters())
        with pytest.raises(ValueError, match="unknown device 'tpu'"):
            make(device="tpu")


def test_forward_hooks_see_and_replace_as_torchs():
    """register_forward_hook / _pre_hook: called with torch's arguments, a returned value replaces the output
    (or the input), handles remove them; the same activations torch's hooks collect, layer by layer."""
    torch.manual_seed(0)
    t_model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 2))
    s_model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2))
    s_model.load_state_dict(t_model.state_dict())
    x = np.random.default_rng(0).standard_normal((5, 3)).astype(np.float32)
    seen_s, seen_t = {}, {}
    handles = [m.register_forward_hook(lambda mod, args, out, n=n: seen_s.__setitem__(n, out.numpy()))
               for n, m in s_model.named_children()]
    for n, m in t_model.named_children():
        m.register_forward_hook(lambda mod, args, out, n=n: seen_t.__setitem__(n, out.detach().numpy()))
    s_model(seqlab.tensor(x))
    t_model(torch.from_numpy(x))
    assert list(seen_s) == list(seen_t) == ["0", "1", "2"]
    for n in seen_s:
        np.testing.assert_allclose(seen_s[n], seen_t[n], rtol=1e-5, atol=1e-6)
    for h in handles:
        h.remove()
    seen_s.clear()
    s_model(seqlab.tensor(x))
    assert seen_s == {}                                                     # removed
    with s_model[1].register_forward_hook(lambda mod, args, out: out * 0):
        assert np.all(s_model[1](seqlab.tensor(x)).numpy() == 0)           # a returned value replaces the output
    assert np.any(s_model[1](seqlab.tensor(x)).numpy() != 0)
    pre = s_model[0].register_forward_pre_hook(lambda mod, args: args[0] * 0)
    np.testing.assert_allclose(s_model[0](seqlab.tensor(x)).numpy(), np.broadcast_to(s_model[0].bias.numpy(), (5, 4)))
    pre.remove()


def test_get_submodule_state_dict_options_and_duplicates_as_torch():
    torch.manual_seed(0)
    t = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.Sequential(torch.nn.Linear(2, 3)))
    s = nn.Sequential(nn.Linear(2, 2), nn.Sequential(nn.Linear(2, 3)))
    assert type(s.get_submodule("1.0")) is nn.Linear and s.get_submodule("") is s
    assert t.get_submodule("1.0").out_features == s.get_submodule("1.0").out_features == 3
    with pytest.raises(AttributeError, match="no submodule '5'"):
        s.get_submodule("1.5")
    assert list(s.state_dict(prefix="model.")) == list(t.state_dict(prefix="model."))
    assert all(isinstance(v, seqlab.Tensor) for v in s.state_dict(keep_vars=True).values())
    tied = nn.Sequential(nn.Linear(2, 2), nn.Linear(2, 2))
    tied[1].weight = tied[0].weight
    t_tied = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.Linear(2, 2))
    t_tied[1].weight = t_tied[0].weight
    for dup in (True, False):
        assert [n for n, _ in tied.named_parameters(remove_duplicate=dup)] == \
            [n for n, _ in t_tied.named_parameters(remove_duplicate=dup)]


@pytest.mark.parametrize("kind", ["RNN", "LSTM", "GRU"])
def test_recurrent_layers_take_one_unbatched_sequence_as_torch(kind):
    """x (T, I) with states (L·D, H): outputs (T, D·H) and states (L·D, H), equal to torch's, gradients too."""
    torch.manual_seed(0)
    theirs = getattr(torch.nn, kind)(3, 4, num_layers=2, bidirectional=True)
    ours = getattr(nn, kind)(3, 4, num_layers=2, bidirectional=True)
    ours.load_state_dict(theirs.state_dict())
    rng = np.random.default_rng(0)
    x, h = rng.standard_normal((5, 3)), rng.standard_normal((4, 4))
    xs, xt = seqlab.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    ours.double()
    theirs.double()
    state_s = (seqlab.tensor(h), seqlab.tensor(h)) if kind == "LSTM" else seqlab.tensor(h)
    state_t = (torch.tensor(h), torch.tensor(h)) if kind == "LSTM" else torch.tensor(h)
    out_s, hn_s = ours(xs, state_s)
    out_t, hn_t = theirs(xt, state_t)
    assert tuple(out_s.shape) == tuple(out_t.shape) == (5, 8)
    np.testing.assert_allclose(out_s.numpy(), out_t.detach().numpy(), rtol=1e-10, atol=1e-12)
    first_s, first_t = (hn_s[0], hn_t[0]) if kind == "LSTM" else (hn_s, hn_t)
    np.testing.assert_allclose(first_s.numpy(), first_t.detach().numpy(), rtol=1e-10, atol=1e-12)
    out_s.sum().backward()
    out_t.sum().backward()
    np.testing.assert_allclose(xs.grad, xt.grad.numpy(), rtol=1e-9, atol=1e-12)
    with pytest.raises(ValueError, match="lengths is for a batch"):
        ours(xs, lengths=[5])
