"""Double backward (`autograd.grad(..., create_graph=True)`) through nn.RNN (tanh, relu), nn.LSTM (with and without
proj_size) and nn.GRU, whose layers run as the fused scans of `seqlab.nn.rnn_kernels`, held to torch in float64.

torch's weights are loaded into seqlab's layer and the same batch goes through both (stacked, bidirectional, with
given h0 (c0), without biases, and as a PackedSequence of unequal lengths): the first derivatives w.r.t. the input
and the initial states (with create_graph=True), the second (the gradient of Σ v·g, a Hessian-vector product,
w.r.t. the input, the states and every parameter) and the third (the same once more) equal torch's. Then a
WGAN-GP gradient penalty on small LSTM / GRU critics gives torch's parameter gradients, float32 stays float32, and
the `lengths=` path equals the composed cells'.
"""
from __future__ import annotations

import numpy as np
import pytest
import torch
from helpers import wgan_gp_loss
from torch.nn.utils import rnn as trnn

import seqlab
from seqlab import nn
from seqlab.autograd import higher_order
from seqlab.nn.utils import rnn as srnn

TOL = {"rtol": 1e-9, "atol": 1e-12}
B, T, IN, H, P = 3, 5, 4, 5, 3
LENGTHS = [3, 5, 1]  # unsorted, one of length 1: the packed batch has steps past each sequence's end


def _np(t):
    if t is None or isinstance(t, np.ndarray):  # a .grad is an array in seqlab
        return t
    return np.asarray(t.detach().numpy() if isinstance(t, torch.Tensor) else t.numpy())


def _pair(kind: str, dtype="float64", **kw):
    """(seqlab's layer, torch's) with torch's weights: kind is rnn_tanh, rnn_relu, lstm or gru."""
    torch.manual_seed(0)
    if kind.startswith("rnn_"):
        kw["nonlinearity"] = kind[4:]
    cls = {"rnn": "RNN", "lstm": "LSTM", "gru": "GRU"}[kind.split("_")[0]]
    t = getattr(torch.nn, cls)(IN, H, batch_first=True, **kw).to(getattr(torch, dtype))
    s = getattr(nn, cls)(IN, H, batch_first=True, **kw).to(dtype=np.dtype(dtype))
    s.load_state_dict({k: v.detach().numpy() for k, v in t.state_dict().items()})
    return s, t


def _states(kind, kw, with_state, rng):
    if not with_state:
        return []
    L, D = kw.get("num_layers", 1), 2 if kw.get("bidirectional") else 1
    h0 = rng.standard_normal((L * D, B, kw.get("proj_size") or H))
    return [h0, rng.standard_normal((L * D, B, H))] if kind == "lstm" else [h0]


def _derivatives(lib, module, x, states, packed, third=True):
    """[g..., h..., t...]: g = ∂(Σ w·outputs)/∂(x, states) with create_graph=True, h = ∂(Σ v·g)/∂(x, states,
    parameters), t = ∂(Σ u·h)/∂(the same); outputs are the output sequence (packed data), h_n and c_n; w, v, u
    random and the same for both libraries; None where a derivative is 0 everywhere (torch's unused)."""
    rng = np.random.default_rng(7)
    dt = getattr(lib, "float64")
    x = lib.tensor(x, dtype=dt, requires_grad=True)
    states = [lib.tensor(s, dtype=dt, requires_grad=True) for s in states]
    params = [p for _, p in sorted(module.named_parameters(), key=lambda item: item[0])]
    inp = x
    if packed:
        pack = trnn.pack_padded_sequence if lib is torch else srnn.pack_padded_sequence
        inp = pack(x, LENGTHS, batch_first=True, enforce_sorted=False)
    hx = None if not states else states[0] if len(states) == 1 else tuple(states)
    out, h_n = module(inp, hx)
    outs = [out.data if packed else out] + (list(h_n) if isinstance(h_n, tuple) else [h_n])
    loss = sum((o * lib.tensor(rng.standard_normal(tuple(o.shape)), dtype=dt)).sum() for o in outs)
    wrt = [x] + states
    g = lib.autograd.grad(loss, wrt, create_graph=True)
    s = sum((gi * lib.tensor(rng.standard_normal(tuple(gi.shape)), dtype=dt)).sum() for gi in g)
    every = wrt + params
    h = lib.autograd.grad(s, every, create_graph=third, allow_unused=True)
    if not third:
        return [*g, *h]
    us = [lib.tensor(rng.standard_normal(tuple(e.shape)), dtype=dt) for e in every]  # drawn for a None too
    s = sum((hi * u).sum() for hi, u in zip(h, us) if hi is not None)
    t = lib.autograd.grad(s, every, allow_unused=True) if s.requires_grad else [None] * len(every)
    return [*g, *h, *t]


def _assert_same(got, want, what):
    assert len(got) == len(want)
    for i, (a, b) in enumerate(zip(got, want)):
        a, b = _np(a), _np(b)
        if a is None and b is None:
            continue
        a = np.zeros_like(b) if a is None else a
        b = np.zeros_like(a) if b is None else b
        np.testing.assert_allclose(a, b, **TOL, err_msg=f"{what}: derivative #{i}")


CASES = {
    "rnn_tanh-2layers-bidir-h0": ("rnn_tanh", dict(num_layers=2, bidirectional=True), True, False),
    "rnn_tanh-packed": ("rnn_tanh", dict(bidirectional=True), True, True),
    "rnn_relu-2layers-h0": ("rnn_relu", dict(num_layers=2), True, False),
    "rnn_relu-packed-bidir": ("rnn_relu", dict(bidirectional=True), False, True),
    "lstm": ("lstm", dict(), False, False),
    "lstm-2layers-bidir-h0c0": ("lstm", dict(num_layers=2, bidirectional=True), True, False),
    "lstm-packed-bidir-h0c0": ("lstm", dict(bidirectional=True), True, True),
    "lstm-no-bias-h0c0": ("lstm", dict(bias=False), True, False),
    "lstm-proj": ("lstm", dict(proj_size=P), False, False),
    "lstm-proj-2layers-bidir-h0c0": ("lstm", dict(proj_size=P, num_layers=2, bidirectional=True), True, False),
    "lstm-proj-packed-h0c0": ("lstm", dict(proj_size=P, bidirectional=True), True, True),
    "gru-h0": ("gru", dict(), True, False),
    "gru-2layers-bidir": ("gru", dict(num_layers=2, bidirectional=True), False, False),
    "gru-packed-2layers-h0": ("gru", dict(num_layers=2), True, True),
    "gru-no-bias-packed-bidir": ("gru", dict(bias=False, bidirectional=True), True, True),
}


@pytest.mark.parametrize("case", list(CASES))
def test_first_second_and_third_derivatives_equal_torchs(case):
    kind, kw, with_state, packed = CASES[case]
    s, t = _pair(kind, **kw)
    rng = np.random.default_rng(3)
    x = rng.standard_normal((B, T, IN))
    states = _states(kind, kw, with_state, rng)
    got = _derivatives(seqlab, s, x, states, packed)
    want = _derivatives(torch, t, x, states, packed)
    _assert_same(got, want, case)
    n = 1 + len(states)
    assert all(a is not None for a in got[:n])                         # the first derivatives
    assert sum(a is not None for a in got[n:]) >= n                    # second and third, not all vanished
    assert all(a is None or _np(a).dtype == np.float64 for a in got)


@pytest.mark.parametrize("kind,kw", [("lstm", dict(bidirectional=True, proj_size=P)), ("gru", dict()),
                                     ("rnn_tanh", dict(num_layers=2))])
def test_frozen_weights_and_a_constant_input_derivatives_wrt_the_states_only(kind, kw):
    """Only h0 (c0) require grad: the scans' other inputs are constants in their double backward."""
    s, t = _pair(kind, **kw)
    res = []
    for lib, m in ((seqlab, s), (torch, t)):
        for p in m.parameters():
            p.requires_grad_(False)
        rng = np.random.default_rng(0)
        x = lib.tensor(rng.standard_normal((B, T, IN)))
        wrt = [lib.tensor(a, requires_grad=True) for a in _states(kind, kw, True, rng)]
        out, _ = m(x, wrt[0] if len(wrt) == 1 else tuple(wrt))
        g = lib.autograd.grad((out ** 2).sum(), wrt, create_graph=True)
        h = lib.autograd.grad(sum((gi ** 2).sum() for gi in g), wrt, create_graph=True)
        res.append([*g, *h, *lib.autograd.grad(sum((hi ** 2).sum() for hi in h), wrt)])
    _assert_same(res[0], res[1], f"{kind} states only")


@pytest.mark.parametrize("kind,kw", [("lstm", dict(num_layers=2, bidirectional=True)), ("lstm", dict(proj_size=P)),
                                     ("gru", dict())])
def test_a_training_step_keeps_no_input_projection_for_double_backward(kind, kw):
    """The scans do not keep xproj (B, T, G·H) alive for a double backward that may never come: they keep how
    it was made (x, W_ih, b_ih, which the projection's backward holds anyway) and make it again."""
    from seqlab.autograd import engine
    from seqlab.nn.rnn_kernels import ProjectedLSTMScan, RecurrentScan

    s, _ = _pair(kind, **kw)
    out, _ = s(seqlab.tensor(np.random.default_rng(0).standard_normal((B, T, IN)), requires_grad=True))
    scans = [f for f in engine.topological_order(out._ctx) if isinstance(f, (RecurrentScan, ProjectedLSTMScan))]
    assert len(scans) == s.num_layers * (2 if s.bidirectional else 1)
    for f in scans:
        assert f.graph_arrays[0] is None and len(f.xproj_from) == 3


def test_the_scans_are_listed_as_supported():
    ops = higher_order.supported_ops()
    assert "RecurrentScan" in ops and "ProjectedLSTMScan" in ops


# ---- WGAN-GP on a recurrent critic ------------------------------------------------------------------------
def _wgan_gp_step(lib, rnn, head, real, fake, alpha, lam=10.0):
    """WGAN-GP (Gulrajani et al. 2017): the critic's score is a Linear of the last layer's final h (both
    directions); the penalty is (‖∂D/∂x̂‖ − 1)² over each whole sample. Returns the loss and every parameter's
    gradient after .backward()."""
    params = [p for _, p in sorted(list(rnn.named_parameters()) + [("~" + n, p) for n, p in head.named_parameters()],
                                   key=lambda item: item[0])]
    dt = params[0].dtype
    real, fake, a = (lib.tensor(v, dtype=dt) for v in (real, fake, alpha))

    def critic(x):
        _, h_n = rnn(x)
        h_n = h_n[0] if isinstance(h_n, tuple) else h_n
        return head(lib.cat([h_n[-2], h_n[-1]], dim=-1))              # (B, 1)

    loss = wgan_gp_loss(lib, critic, real, fake, a, lam)
    loss.backward()
    return [loss] + [p.grad for p in params]


@pytest.mark.parametrize("kind,kw", [("lstm", dict(num_layers=2, bidirectional=True)),
                                     ("lstm", dict(bidirectional=True, proj_size=P)),
                                     ("gru", dict(bidirectional=True))])
def test_wgan_gp_on_a_recurrent_critic_gives_torchs_parameter_gradients(kind, kw):
    s, t = _pair(kind, **kw)
    R = 2 * (kw.get("proj_size") or H)
    t_head = torch.nn.Linear(R, 1).double()
    s_head = nn.Linear(R, 1).to(dtype=np.float64)
    s_head.load_state_dict({k: v.detach().numpy() for k, v in t_head.state_dict().items()})
    rng = np.random.default_rng(5)
    real, fake = rng.standard_normal((B, T, IN)), rng.standard_normal((B, T, IN)) + 0.5
    alpha = rng.uniform(size=(B, 1, 1))
    got = _wgan_gp_step(seqlab, s, s_head, real, fake, alpha)
    want = _wgan_gp_step(torch, t, t_head, real, fake, alpha)
    assert len(got) == len(want)
    for i, (a, b) in enumerate(zip(got, want)):
        np.testing.assert_allclose(_np(a), _np(b), **TOL, err_msg=f"#{i}")
    assert all(isinstance(p, np.ndarray) and p.dtype == np.float64 for p in got[1:])


# ---- dtype, and the lengths= path against the composed cells ----------------------------------------------
@pytest.mark.parametrize("kind,kw", [("lstm", dict(proj_size=P, bidirectional=True)), ("gru", dict(num_layers=2)),
                                     ("rnn_tanh", dict(bidirectional=True))])
def test_float32_stays_float32_and_is_close_to_torch_in_float64(kind, kw):
    s32, _ = _pair(kind, dtype="float32", **kw)
    _, t64 = _pair(kind, **kw)
    x = np.random.default_rng(3).standard_normal((B, T, IN))
    xs = seqlab.tensor(x, dtype=seqlab.float32, requires_grad=True)
    out, _ = s32(xs)
    g, = seqlab.autograd.grad((out * out).sum(), xs, create_graph=True)
    params = [p for _, p in sorted(s32.named_parameters(), key=lambda item: item[0])]
    h = seqlab.autograd.grad((g * g).sum(), [xs] + params)
    assert g.dtype == seqlab.float32 and all(a.dtype == seqlab.float32 for a in h)
    xt = torch.tensor(x, requires_grad=True)
    out, _ = t64(xt)
    gt, = torch.autograd.grad((out * out).sum(), xt, create_graph=True)
    ht = torch.autograd.grad((gt * gt).sum(), [xt] + [p for _, p in sorted(t64.named_parameters(),
                                                                           key=lambda item: item[0])])
    for a, b in zip([g, *h], [gt, *ht]):
        np.testing.assert_allclose(_np(a), _np(b), rtol=1e-3, atol=1e-4)


@pytest.mark.parametrize("kind,kw", [("lstm", dict(proj_size=P, bidirectional=True)), ("gru", dict(num_layers=2)),
                                     ("rnn_relu", dict(bidirectional=True))])
def test_lengths_path_equals_the_composed_cells_to_third_order(kind, kw):
    """seqlab's own `lengths=` (a padded batch, no torch counterpart): the fused scans' double backward equals
    that of the same layer run by the composed cells (fused=False)."""
    rng = np.random.default_rng(11)
    x = rng.standard_normal((B, T, IN))
    results = []
    for fused in (True, False):
        s, _ = _pair(kind, **kw)
        s.fused = fused
        results.append(_derivatives(seqlab, _Lengths(s), x, _states(kind, kw, True, np.random.default_rng(1)),
                                    False))
    _assert_same(results[0], results[1], f"{kind} lengths")


class _Lengths:
    """`module` called with lengths=LENGTHS (what _derivatives calls as module(x, hx))."""

    def __init__(self, module):
        self.module = module

    def named_parameters(self):
        return self.module.named_parameters()

    def __call__(self, x, hx):
        return self.module(x, hx, lengths=np.array(LENGTHS))


@pytest.mark.parametrize("change", ["input", "weight_ih"])
def test_an_in_place_change_of_what_the_projection_read_is_refused_by_double_backward(change):
    """The double backward makes the input projection again from x and W_ih: changed in place after the
    forward, they would give derivatives at other values, so it refuses (as the version counters refuse any
    backward that would read a changed array); the first-order gradient, from the kept gates, still works."""
    s, _ = _pair("lstm")
    x = seqlab.tensor(np.random.default_rng(0).standard_normal((B, T, IN)), requires_grad=True)
    out, _ = s(x)
    with seqlab.no_grad():
        (x if change == "input" else s.weight_ih_l0).mul_(2)
    with pytest.raises(RuntimeError, match="RecurrentScan saved for backward .* was changed in place"):
        seqlab.autograd.grad((out ** 2).sum(), s.weight_hh_l0, create_graph=True)
    g, = seqlab.autograd.grad((out ** 2).sum(), s.weight_hh_l0)
    assert np.isfinite(g.numpy()).all()
