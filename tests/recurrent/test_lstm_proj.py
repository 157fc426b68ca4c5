"""LSTM with projections (`proj_size`) vs torch.nn.LSTM: outputs, states and every gradient.

torch's state_dict is loaded into seqlab's layer, the same input (and initial state, and lengths through
torch's pack_padded_sequence) runs through both, every output is pulled back with a random cotangent, and
the values, the input/state gradients and each parameter's gradient are compared by name: float64 at
rel 1e-9, float32 at float32's rounding. Both paths are checked (the fused ProjectedLSTMScan and the
composed cells) and held to each other; then names, shapes, init, torch's errors and the device path.
"""
from __future__ import annotations

import numpy as np
import pytest
import torch
from helpers import assert_close

import seqlab
from seqlab import backend, nn
from seqlab.nn.utils import rnn

# torch's CPU LSTM says once that its oneDNN backend lacks projections and it runs its own loop instead
pytestmark = pytest.mark.filterwarnings("ignore:LSTM with projections is not supported with oneDNN")

B, T, I, H, P = 3, 6, 4, 5, 3
TOL = {np.float64: {"rtol": 1e-9, "scale_atol": 1e-12}, np.float32: {"rtol": 1e-4, "scale_atol": 2e-5}}


def run_pair(num_layers=1, bidirectional=False, with_state=False, lengths=None, fused=True, dtype=np.float64,
             dropout=0.0, bias=True, steps=T, proj=P, seed=0):
    """torch's LSTM(proj_size) and seqlab's on torch's weights, forward + backward on both (seqlab in eval mode
    when dropout > 0, torch likewise)."""
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    kw = {"num_layers": num_layers, "bias": bias, "dropout": dropout, "bidirectional": bidirectional,
          "proj_size": proj}
    tm = torch.nn.LSTM(I, H, batch_first=True, **kw).to(torch.float64 if dtype == np.float64 else torch.float32)
    sm = nn.LSTM(I, H, fused=fused, **kw).to(dtype)
    sm.load_state_dict(tm.state_dict())
    if dropout:
        tm.eval()
        sm.eval()
    D = 2 if bidirectional else 1
    x = rng.standard_normal((B, steps, I)).astype(dtype)
    states = [rng.standard_normal((num_layers * D, B, n)).astype(dtype) for n in (proj, H)]
    xt, xs = torch.tensor(x, requires_grad=True), seqlab.tensor(x, requires_grad=True)
    st = [torch.tensor(s, requires_grad=True) for s in states]
    ss = [seqlab.tensor(s, requires_grad=True) for s in states]
    t_in = xt if lengths is None else torch.nn.utils.rnn.pack_padded_sequence(
        xt, torch.tensor(lengths), batch_first=True, enforce_sorted=False)
    t_out, t_state = tm(t_in, tuple(st) if with_state else None)
    if lengths is not None:
        t_out, _ = torch.nn.utils.rnn.pad_packed_sequence(t_out, batch_first=True, total_length=steps)
    s_out, s_state = sm(xs, tuple(ss) if with_state else None, lengths=lengths)
    t_outs, s_outs = [t_out, *t_state], [s_out, *s_state]
    cot = [rng.standard_normal(tuple(o.shape)).astype(dtype) for o in t_outs]
    sum(((o * torch.tensor(c)).sum() for o, c in zip(t_outs, cot))).backward()
    sum(((o * seqlab.tensor(c)).sum() for o, c in zip(s_outs, cot))).backward()
    return {"t_outs": t_outs, "s_outs": s_outs, "xt": xt, "xs": xs, "st": st, "ss": ss, "tm": tm, "sm": sm,
            "dtype": dtype}


def close(a, e, what, dtype):
    a = a.numpy() if isinstance(a, seqlab.Tensor) else np.asarray(a)
    e = e.detach().numpy() if isinstance(e, torch.Tensor) else np.asarray(e)
    assert a.dtype == dtype, f"{what}: dtype {a.dtype}"
    assert_close(a, e, what=what, **TOL[dtype])


def check_pair(r, with_state):
    dt = r["dtype"]
    for k, (a, e) in enumerate(zip(r["s_outs"], r["t_outs"])):
        close(a, e, ["output", "h_n", "c_n"][k], dt)
    close(r["xs"].grad, r["xt"].grad, "d input", dt)
    if with_state:
        for k, (a, e) in enumerate(zip(r["ss"], r["st"])):
            close(a.grad, e.grad, ["d h0", "d c0"][k], dt)
    t_params = dict(r["tm"].named_parameters())
    assert [n for n, _ in r["sm"].named_parameters()] == list(t_params), "parameter names and order as torch's"
    for n, p in r["sm"].named_parameters():
        close(p.grad, t_params[n].grad, f"d {n}", dt)


CASES = {  # (num_layers, bidirectional, with_state, lengths, dropout)
    "one-layer": (1, False, False, None, 0.0),
    "two-layers-bidirectional": (2, True, False, None, 0.0),
    "given-hx": (1, False, True, None, 0.0),
    "two-layers-bidirectional-hx": (2, True, True, None, 0.0),
    "lengths": (1, False, True, (6, 2, 4), 0.0),
    "lengths-two-layers-bidirectional": (2, True, True, (3, 6, 1), 0.0),
    "dropout-eval": (3, True, False, (6, 2, 4), 0.4),
}


@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=["float64", "float32"])
@pytest.mark.parametrize("fused", [True, False], ids=["fused", "composed"])
@pytest.mark.parametrize("case", list(CASES))
def test_lstm_proj_matches_torch(case, fused, dtype):
    layers, bidirectional, with_state, lengths, dropout = CASES[case]
    r = run_pair(layers, bidirectional, with_state, lengths, fused, dtype, dropout)
    D = 2 if bidirectional else 1
    out, h_n, c_n = r["s_outs"]
    assert out.shape == (B, T, D * P) and h_n.shape == (layers * D, B, P) and c_n.shape == (layers * D, B, H)
    check_pair(r, with_state)


def test_without_bias_and_proj_of_one():
    check_pair(run_pair(2, True, True, (6, 6, 6), bias=False, proj=1), True)


def test_bptt_over_300_steps():
    r = run_pair(1, True, True, None, steps=300)
    check_pair(r, True)
    assert np.abs(r["xs"].grad[:, 0]).max() > 0


@pytest.mark.parametrize("lengths", [None, (6, 3, 5)])
def test_fused_kernel_equals_composed_cells(lengths):
    """STYLE 14: ProjectedLSTMScan is held to the plain composition, values and gradients."""
    fused = run_pair(2, True, True, lengths, fused=True, seed=3)
    plain = run_pair(2, True, True, lengths, fused=False, seed=3)
    for a, e in zip(fused["s_outs"], plain["s_outs"]):
        assert_close(a.numpy(), e.numpy(), rtol=1e-12, scale_atol=1e-14)
    for a, e in zip([fused["xs"], *fused["ss"]], [plain["xs"], *plain["ss"]]):
        assert_close(a.grad, e.grad, rtol=1e-12, scale_atol=1e-14)
    for (n, p), (_, q) in zip(fused["sm"].named_parameters(), plain["sm"].named_parameters()):
        assert_close(p.grad, q.grad, rtol=1e-12, scale_atol=1e-14, what=n)


@pytest.mark.parametrize("enforce_sorted", [True, False])
def test_packed_sequence_in_packed_out(enforce_sorted):
    """A PackedSequence through the layer: the packed output and (h_n, c_n) equal torch's, and the gradients."""
    lengths = [6, 4, 1] if enforce_sorted else [4, 6, 1]
    torch.manual_seed(0)
    tm = torch.nn.LSTM(I, H, num_layers=2, bidirectional=True, proj_size=P, batch_first=True).double()
    sm = nn.LSTM(I, H, num_layers=2, bidirectional=True, proj_size=P).double()
    sm.load_state_dict(tm.state_dict())
    x = np.random.default_rng(1).standard_normal((B, T, I))
    xt, xs = torch.tensor(x, requires_grad=True), seqlab.tensor(x, requires_grad=True)
    tp = torch.nn.utils.rnn.pack_padded_sequence(xt, lengths, batch_first=True, enforce_sorted=enforce_sorted)
    sp = rnn.pack_padded_sequence(xs, lengths, batch_first=True, enforce_sorted=enforce_sorted)
    t_out, (t_h, t_c) = tm(tp)
    s_out, (s_h, s_c) = sm(sp)
    assert isinstance(s_out, rnn.PackedSequence) and s_out.data.shape == (sum(lengths), 2 * P)
    for a, e, what in ((s_out.data, t_out.data, "packed output"), (s_h, t_h, "h_n"), (s_c, t_c, "c_n")):
        close(a, e, what, np.float64)
    (t_out.data.sum() + (t_h * t_h).sum() + (t_c * t_c).sum()).backward()
    (s_out.data.sum() + (s_h * s_h).sum() + (s_c * s_c).sum()).backward()
    close(xs.grad, xt.grad, "d input", np.float64)
    t_params = dict(tm.named_parameters())
    for n, p in sm.named_parameters():
        close(p.grad, t_params[n].grad, f"d {n}", np.float64)


def test_unbatched_sequence_as_torch():
    torch.manual_seed(0)
    tm = torch.nn.LSTM(I, H, num_layers=2, proj_size=P, batch_first=True).double()
    sm = nn.LSTM(I, H, num_layers=2, proj_size=P).double()
    sm.load_state_dict(tm.state_dict())
    rng = np.random.default_rng(2)
    x, h0, c0 = rng.standard_normal((T, I)), rng.standard_normal((2, P)), rng.standard_normal((2, H))
    t_out, (t_h, t_c) = tm(torch.tensor(x), (torch.tensor(h0), torch.tensor(c0)))
    s_out, (s_h, s_c) = sm(seqlab.tensor(x), (seqlab.tensor(h0), seqlab.tensor(c0)))
    assert s_out.shape == (T, P) and s_h.shape == (2, P) and s_c.shape == (2, H)
    for a, e, what in ((s_out, t_out, "output"), (s_h, t_h, "h_n"), (s_c, t_c, "c_n")):
        close(a, e, what, np.float64)


def test_state_dict_names_shapes_flat_weights_and_init():
    seqlab.manual_seed(0)
    sm = nn.LSTM(I, H, num_layers=2, bidirectional=True, proj_size=P)
    tm = torch.nn.LSTM(I, H, num_layers=2, batch_first=True, bidirectional=True, proj_size=P)
    assert [(k, tuple(v.shape)) for k, v in sm.state_dict().items()] == \
           [(k, tuple(v.shape)) for k, v in tm.state_dict().items()]
    assert sm._flat_weights_names == tm._flat_weights_names
    assert [p.shape for p in sm._flat_weights] == [tuple(p.shape) for p in tm._flat_weights]
    assert sm.weight_hr_l1_reverse.shape == (P, H) and sm.weight_hh_l0.shape == (4 * H, P)
    assert sm.weight_ih_l1.shape == (4 * H, 2 * P)             # the next layer reads D·proj_size features
    assert sm.proj_size == P and nn.LSTM(I, H).proj_size == 0 and nn.GRU(I, H).proj_size == 0
    bound = 1 / np.sqrt(H)                                     # every weight U(−1/√hidden_size, ·), W_hr too
    for name, p in sm.named_parameters():
        assert p.dtype == np.float32
        assert np.abs(p.data).max() <= bound, name
        assert p.data.std() > bound / 3, name


def test_load_torch_state_dict_and_back():
    torch.manual_seed(0)
    tm = torch.nn.LSTM(I, H, num_layers=2, bidirectional=True, proj_size=P, batch_first=True, bias=False)
    sm = nn.LSTM(I, H, num_layers=2, bidirectional=True, proj_size=P, bias=False)
    sm.load_state_dict(tm.state_dict())
    for k, v in tm.state_dict().items():
        np.testing.assert_array_equal(np.asarray(sm.state_dict()[k]), v.numpy(), err_msg=k)
    tm2 = torch.nn.LSTM(I, H, num_layers=2, bidirectional=True, proj_size=P, batch_first=True, bias=False)
    tm2.load_state_dict({k: torch.tensor(np.asarray(v)) for k, v in sm.state_dict().items()})
    x = torch.randn(B, T, I)
    torch.testing.assert_close(tm2(x)[0], tm(x)[0])
    with pytest.raises((KeyError, RuntimeError, ValueError)):  # a checkpoint without weight_hr does not fit
        nn.LSTM(I, H, proj_size=P).load_state_dict(torch.nn.LSTM(I, H, batch_first=True).state_dict())


def test_repr_shows_proj_size_as_torch():
    kw = {"proj_size": P, "batch_first": True}
    assert repr(nn.LSTM(I, H, **kw)) == repr(torch.nn.LSTM(I, H, **kw)) == "LSTM(4, 5, proj_size=3, batch_first=True)"
    assert repr(nn.LSTM(I, H, num_layers=2, proj_size=P)).startswith("LSTM(4, 5, proj_size=3, num_layers=2")
    assert "proj_size" not in repr(nn.LSTM(I, H))


@pytest.mark.parametrize("proj_size", [-1, H, H + 2])
def test_torch_value_errors(proj_size):
    with pytest.raises(ValueError) as t_err:
        torch.nn.LSTM(I, H, proj_size=proj_size)
    with pytest.raises(ValueError) as s_err:
        nn.LSTM(I, H, proj_size=proj_size)
    assert str(s_err.value) == str(t_err.value)


@pytest.mark.parametrize("name", ["RNN", "GRU"])
def test_proj_size_on_rnn_or_gru_is_torchs_value_error(name):
    with pytest.raises(ValueError) as t_err:
        getattr(torch.nn, name)(I, H, proj_size=P)
    with pytest.raises(ValueError) as s_err:
        getattr(nn, name)(I, H, proj_size=P)
    assert str(s_err.value) == str(t_err.value)
    assert getattr(nn, name)(I, H, proj_size=0).hidden_size == H


def test_type_and_state_shape_errors():
    with pytest.raises(TypeError, match="proj_size should be of type int, got: float"):
        nn.LSTM(I, H, proj_size=2.5)
    m = nn.LSTM(I, H, proj_size=P)
    x = seqlab.zeros(2, T, I)
    with pytest.raises(ValueError, match=r"h0 has shape \(1, 2, 5\), expected \(1, 2, 3\) .*proj_size"):
        m(x, (seqlab.zeros(1, 2, H), seqlab.zeros(1, 2, H)))
    with pytest.raises(ValueError, match=r"c0 has shape \(1, 2, 3\), expected \(1, 2, 5\) .*hidden_size"):
        m(x, (seqlab.zeros(1, 2, P), seqlab.zeros(1, 2, P)))


def test_dropout_between_layers_only_in_training():
    seqlab.manual_seed(0)
    sm = nn.LSTM(I, H, num_layers=2, dropout=0.5, proj_size=P).double()
    x = seqlab.tensor(np.random.default_rng(0).standard_normal((B, T, I)))
    assert not np.allclose(sm(x)[0].numpy(), sm(x)[0].numpy())
    sm.eval()
    np.testing.assert_array_equal(sm(x)[0].numpy(), sm(x)[0].numpy())


@pytest.mark.parametrize("fused", [True, False], ids=["fused", "composed"])
def test_device_path(cuda, fused):
    """On device "cuda" (the CuPy stand-in here; CuPy itself where a GPU is): the same values and gradients as
    on the CPU, every array on the device."""
    x_host = np.random.default_rng(10).standard_normal((B, T, I)).astype(np.float32)
    lengths = np.array([6, 4, 2])  # on the host, as a user passes them
    results = []
    for device in ("cpu", "cuda"):
        seqlab.manual_seed(0)
        m = nn.LSTM(I, H, num_layers=2, bidirectional=True, proj_size=P, fused=fused).to(device)
        x = seqlab.tensor(x_host, requires_grad=True).to(device)
        out, (h, c) = m(x, lengths=lengths)
        assert out.device == h.device == c.device == device
        (out.sum() + (h * h).sum() + c.sum()).backward()
        if device == "cuda":
            assert all(backend.device_of(p.grad) == "cuda" for p in m.parameters())
        results.append([backend.to_numpy(a) for a in (out.data, h.data, c.data, x.grad)]
                       + [backend.to_numpy(p.grad) for p in m.parameters()])
    for a, b in zip(*results):
        np.testing.assert_allclose(b, a, rtol=1e-4, atol=1e-5)
