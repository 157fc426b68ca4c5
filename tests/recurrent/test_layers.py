"""RNN / LSTM / GRU vs torch in float64: outputs, final states and every gradient.

Each case loads torch's state_dict, runs the same input (optionally with an
initial state and with variable lengths through torch's pack_padded_sequence),
pulls every output back with a random cotangent and compares the values, the
input/state gradients and each parameter's gradient by name (rel <= 1e-9).
Both paths are checked: the fused kernel (default) and the composed cells.
"""
from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch
from helpers import assert_close

import seqlab
from seqlab import nn

RTOL = 1e-9
B, T, I, H = 3, 6, 4, 5
LAYERS = {"rnn_tanh": (nn.RNN, torch.nn.RNN, {}), "rnn_relu": (nn.RNN, torch.nn.RNN, {"nonlinearity": "relu"}),
          "lstm": (nn.LSTM, torch.nn.LSTM, {}), "gru": (nn.GRU, torch.nn.GRU, {})}


def close(a, e, what):
    a = a.numpy() if isinstance(a, seqlab.Tensor) else np.asarray(a)
    e = e.detach().numpy() if isinstance(e, torch.Tensor) else np.asarray(e)
    assert_close(a, e, rtol=RTOL, scale_atol=1e-12, what=what)


def run_pair(mode, num_layers, bidirectional, with_state, lengths, fused=True, steps=T, batch=B, bias=True,
             seed=0):
    """Build both layers on torch's weights, run forward + backward; return both sides' results."""
    cls, tcls, kw = LAYERS[mode]
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    tm = tcls(I, H, num_layers=num_layers, bias=bias, batch_first=True, bidirectional=bidirectional, **kw).double()
    sm = cls(I, H, num_layers=num_layers, bias=bias, bidirectional=bidirectional, fused=fused, **kw).double()
    sm.load_state_dict(tm.state_dict())
    D = 2 if bidirectional else 1
    x = rng.standard_normal((batch, steps, I))
    states = [rng.standard_normal((num_layers * D, batch, H)) for _ in range(2 if mode == "lstm" else 1)]
    xt, xs = torch.tensor(x, requires_grad=True), seqlab.tensor(x, dtype=np.float64, requires_grad=True)
    st = [torch.tensor(s, requires_grad=True) for s in states]
    ss = [seqlab.tensor(s, dtype=np.float64, requires_grad=True) for s in states]
    pack = (lambda v: tuple(v)) if mode == "lstm" else (lambda v: v[0])
    t_in = xt if lengths is None else torch.nn.utils.rnn.pack_padded_sequence(
        xt, torch.tensor(lengths), batch_first=True, enforce_sorted=False)
    t_out, t_state = tm(t_in, pack(st) if with_state else None)
    if lengths is not None:
        t_out, _ = torch.nn.utils.rnn.pad_packed_sequence(t_out, batch_first=True, total_length=steps)
    s_out, s_state = sm(xs, pack(ss) if with_state else None, lengths=lengths)
    t_outs = [t_out] + (list(t_state) if mode == "lstm" else [t_state])
    s_outs = [s_out] + (list(s_state) if mode == "lstm" else [s_state])
    cot = [rng.standard_normal(tuple(o.shape)) for o in t_outs]
    sum(((o * torch.tensor(c)).sum() for o, c in zip(t_outs, cot))).backward()
    sum(((o * seqlab.tensor(c, dtype=np.float64)).sum() for o, c in zip(s_outs, cot))).backward()
    return dict(t_outs=t_outs, s_outs=s_outs, xt=xt, xs=xs, st=st, ss=ss, tm=tm, sm=sm)


def check_pair(r, with_state):
    for k, (a, e) in enumerate(zip(r["s_outs"], r["t_outs"])):
        close(a, e, ["output", "h_n", "c_n"][k])
    close(r["xs"].grad, r["xt"].grad, "d input")
    if with_state:
        for k, (a, e) in enumerate(zip(r["ss"], r["st"])):
            close(a.grad, e.grad, ["d h0", "d c0"][k])
    t_params = dict(r["tm"].named_parameters())
    names = [n for n, _ in r["sm"].named_parameters()]
    assert names == list(t_params), "parameter names and order must be torch's"
    for n, p in r["sm"].named_parameters():
        close(p.grad, t_params[n].grad, f"d {n}")


CASES = list(itertools.product(LAYERS, (1, 2), (False, True), (False, True), (None, (6, 2, 4))))


@pytest.mark.parametrize("mode,num_layers,bidirectional,with_state,lengths", CASES)
def test_layer_matches_torch(mode, num_layers, bidirectional, with_state, lengths):
    check_pair(run_pair(mode, num_layers, bidirectional, with_state, lengths), with_state)


@pytest.mark.parametrize("mode", list(LAYERS))
@pytest.mark.parametrize("lengths", [None, (6, 1, 3)])
def test_composed_path_matches_torch(mode, lengths):
    """The readable reference (composed cells, every op recorded) gives the same numbers."""
    check_pair(run_pair(mode, 2, True, True, lengths, fused=False), True)


@pytest.mark.parametrize("mode", list(LAYERS))
def test_fused_kernel_equals_composed_cells(mode):
    """STYLE 14: the fused kernel is held to the plain composition, values and gradients."""
    fused = run_pair(mode, 2, True, True, (6, 3, 5), fused=True, seed=3)
    plain = run_pair(mode, 2, True, True, (6, 3, 5), fused=False, seed=3)
    for a, e in zip(fused["s_outs"], plain["s_outs"]):
        assert_close(a.numpy(), e.numpy(), rtol=1e-12, scale_atol=1e-14)
    assert_close(fused["xs"].grad, plain["xs"].grad, rtol=1e-12, scale_atol=1e-14)
    for (n, p), (_, q) in zip(fused["sm"].named_parameters(), plain["sm"].named_parameters()):
        assert_close(p.grad, q.grad, rtol=1e-12, scale_atol=1e-14, what=n)


@pytest.mark.parametrize("mode", ["rnn_tanh", "gru", "lstm"])
def test_without_bias_and_lengths_all_full(mode):
    r = run_pair(mode, 1, True, False, (T, T, T), bias=False)
    check_pair(r, False)
    assert "bias_ih_l0" not in r["sm"].state_dict()


@pytest.mark.parametrize("mode", ["lstm", "gru"])
def test_bptt_over_1000_steps(mode):
    """Backpropagation through 1,000 steps: no recursion limit, gradients equal torch's."""
    r = run_pair(mode, 1, False, True, None, steps=1000, batch=2)
    check_pair(r, True)
    assert np.abs(r["xs"].grad[:, 0]).max() > 0  # the gradient reached the first step


def test_bptt_1000_steps_composed_graph():
    """The composed path records ~10 nodes a step; the iterative backward walks 1,000 steps of them."""
    r = run_pair("rnn_tanh", 1, False, True, None, fused=False, steps=1000, batch=2)
    check_pair(r, True)


@pytest.mark.parametrize("mode", list(LAYERS))
def test_state_dict_names_shapes_and_init(mode):
    cls, tcls, kw = LAYERS[mode]
    seqlab.manual_seed(0)
    sm = cls(I, H, num_layers=2, bidirectional=True, **kw)
    tm = tcls(I, H, num_layers=2, batch_first=True, bidirectional=True, **kw)
    assert [(k, tuple(v.shape)) for k, v in sm.state_dict().items()] == \
           [(k, tuple(v.shape)) for k, v in tm.state_dict().items()]
    bound = 1 / np.sqrt(H)
    for name, p in sm.named_parameters():
        assert p.dtype == np.float32
        assert np.abs(p.data).max() <= bound, name           # U(−1/√H, 1/√H), as torch
        assert p.data.std() > bound / 3, name                 # not constant


def test_float32_forward_is_float32_and_close_to_torch():
    tm = torch.nn.LSTM(I, H, batch_first=True, bidirectional=True)
    sm = nn.LSTM(I, H, bidirectional=True)
    sm.load_state_dict(tm.state_dict())
    x = np.random.default_rng(0).standard_normal((B, T, I)).astype(np.float32)
    out, (h, c) = sm(seqlab.tensor(x), lengths=[6, 2, 5])
    assert out.dtype == np.float32 and h.dtype == np.float32
    pk = torch.nn.utils.rnn.pack_padded_sequence(torch.tensor(x), torch.tensor([6, 2, 5]), batch_first=True,
                                                 enforce_sorted=False)
    t_out, (t_h, _) = tm(pk)
    t_out, _ = torch.nn.utils.rnn.pad_packed_sequence(t_out, batch_first=True, total_length=T)
    np.testing.assert_allclose(out.numpy(), t_out.detach().numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(h.numpy(), t_h.detach().numpy(), rtol=1e-5, atol=1e-6)


def test_padding_is_zero_and_ignored():
    """Outputs past a length are 0 and changing padded inputs changes nothing."""
    sm = nn.GRU(I, H, bidirectional=True).double()
    rng = np.random.default_rng(1)
    x = rng.standard_normal((B, T, I))
    lengths = np.array([6, 2, 4])
    out1, h1 = sm(seqlab.tensor(x), lengths=lengths)
    x2 = x.copy()
    x2[1, 2:] = 100.0
    out2, h2 = sm(seqlab.tensor(x2), lengths=seqlab.tensor(lengths))
    assert np.all(out1.numpy()[1, 2:] == 0)
    np.testing.assert_array_equal(out1.numpy(), out2.numpy())
    np.testing.assert_array_equal(h1.numpy(), h2.numpy())


def test_dropout_between_layers_only_in_training():
    seqlab.manual_seed(0)
    sm = nn.LSTM(I, H, num_layers=2, dropout=0.5).double()
    x = seqlab.tensor(np.random.default_rng(0).standard_normal((B, T, I)))
    a = sm(x)[0].numpy()
    b = sm(x)[0].numpy()
    assert not np.allclose(a, b)          # two training passes draw different masks
    sm.eval()
    np.testing.assert_array_equal(sm(x)[0].numpy(), sm(x)[0].numpy())


def test_user_errors_name_the_values():
    with pytest.raises(ValueError, match="batch_first=False"):
        nn.GRU(I, H, batch_first=False)
    with pytest.raises(ValueError, match="nonlinearity"):
        nn.RNN(I, H, nonlinearity="sigmoid")
    # torch's default layout (T, B, I) with torch's state (L, B, H): the error says the input looks time-major
    with pytest.raises(ValueError, match=r"x looks time-major .* pass x.transpose\(0, 1\)"):
        nn.GRU(I, H)(seqlab.zeros(7, 3, I), seqlab.zeros(1, 3, H))
    with pytest.raises(ValueError, match=r"expected \(1, 2, 5\) \(num_layers \* num_directions, B, hidden_size\)$"):
        nn.GRU(I, 5)(seqlab.zeros(2, 3, I), seqlab.zeros(1, 4, 5))     # no hint where the shapes say nothing
    m = nn.LSTM(I, H)
    with pytest.raises(ValueError, match=r"\(B, T, 4\)"):
        m(seqlab.zeros(2, 3, 7))
    with pytest.raises(ValueError, match="lengths must lie in 1..3"):
        m(seqlab.zeros(2, 3, I), lengths=[3, 0])
    with pytest.raises(ValueError, match=r"expected \(1, 2, 5\)"):
        m(seqlab.zeros(2, 3, I), (seqlab.zeros(2, 2, H), seqlab.zeros(1, 2, H)))
    with pytest.raises(TypeError, match="tuple"):
        m(seqlab.zeros(2, 3, I), seqlab.zeros(1, 2, H))
