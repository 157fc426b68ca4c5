"""Packed sequences (seqlab.nn.utils.rnn) against torch.nn.utils.rnn, and RNN/LSTM/GRU run on them.

Packing: the PackedSequence fields (data, batch_sizes, sorted/unsorted indices) equal torch's, pad_packed_sequence
gives torch's padded batch and lengths (batch_first both ways, enforce_sorted both ways, total_length), and the
gradients through pack -> pad equal torch's and central differences (helpers.check_op). Layers: torch's weights
loaded into seqlab's layer, the same packed batch through both: the same packed output, h_n (c_n) in the
caller's order, and the same gradients for the input, the initial state and every weight (float64, rel 1e-9).
"""
from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch
from helpers import assert_close, check_op, same_as_torch
from torch.nn.utils import rnn as trnn

import seqlab
from seqlab import backend, nn
from seqlab.nn.utils import rnn

LENGTHS = {True: [5, 4, 4, 2, 1], False: [2, 5, 1, 4, 4]}  # decreasing (enforce_sorted) / shuffled, with a tie
T_MAX, B = 5, 5


def padded(rest=(3,), batch_first=False, seed=0) -> np.ndarray:
    shape = (B, T_MAX + 1) + rest if batch_first else (T_MAX + 1, B) + rest  # one step longer than any length
    return np.random.default_rng(seed).standard_normal(shape)


def same_indices(s, t, what):
    if t is None:
        assert s is None, f"{what}: torch has None, seqlab {s}"
    else:
        same_as_torch(s, t)


# ---- packing and padding ---------------------------------------------------------------------------------
@pytest.mark.parametrize("batch_first,enforce_sorted,rest", list(itertools.product((False, True), (True, False),
                                                                                    ((), (3,), (2, 3)))))
def test_pack_padded_sequence_fields_equal_torch(batch_first, enforce_sorted, rest):
    x = padded(rest, batch_first)
    lengths = LENGTHS[enforce_sorted]
    p = rnn.pack_padded_sequence(seqlab.tensor(x), lengths, batch_first=batch_first, enforce_sorted=enforce_sorted)
    tp = trnn.pack_padded_sequence(torch.tensor(x), lengths, batch_first=batch_first, enforce_sorted=enforce_sorted)
    assert isinstance(p, rnn.PackedSequence) and isinstance(p, tuple) and p._fields == tp._fields
    assert p.data.shape == (sum(lengths),) + rest
    same_as_torch(p.data, tp.data)
    same_as_torch(p.batch_sizes, tp.batch_sizes)  # int64 (T,)
    same_indices(p.sorted_indices, tp.sorted_indices, "sorted_indices")
    same_indices(p.unsorted_indices, tp.unsorted_indices, "unsorted_indices")


@pytest.mark.parametrize("lengths_as", [list, np.array, seqlab.tensor, torch.tensor])
def test_lengths_as_list_array_or_tensor(lengths_as):
    x = padded()
    p = rnn.pack_padded_sequence(seqlab.tensor(x), lengths_as(LENGTHS[False]), enforce_sorted=False)
    tp = trnn.pack_padded_sequence(torch.tensor(x), LENGTHS[False], enforce_sorted=False)
    same_as_torch(p.data, tp.data)
    same_as_torch(p.sorted_indices, tp.sorted_indices)


@pytest.mark.parametrize("batch_first,enforce_sorted,total_length,padding_value",
                         list(itertools.product((False, True), (True, False), (None, 8), (0.0, -2.5))))
def test_pad_packed_sequence_equals_torch(batch_first, enforce_sorted, total_length, padding_value):
    x = padded((3,), batch_first)
    lengths = LENGTHS[enforce_sorted]
    p = rnn.pack_padded_sequence(seqlab.tensor(x), lengths, batch_first=batch_first, enforce_sorted=enforce_sorted)
    tp = trnn.pack_padded_sequence(torch.tensor(x), lengths, batch_first=batch_first, enforce_sorted=enforce_sorted)
    out, lens = rnn.pad_packed_sequence(p, batch_first=batch_first, padding_value=padding_value,
                                        total_length=total_length)
    t_out, t_lens = trnn.pad_packed_sequence(tp, batch_first=batch_first, padding_value=padding_value,
                                             total_length=total_length)
    same_as_torch(out, t_out)
    same_as_torch(lens, t_lens)  # int64, the caller's order
    steps = total_length or T_MAX
    assert out.shape == ((B, steps, 3) if batch_first else (steps, B, 3))
    # the round trip: the real steps come back where they were, padding everywhere else
    o = out.numpy() if batch_first else out.numpy().transpose(1, 0, 2)         # (B, T, 3)
    xb = x if batch_first else x.transpose(1, 0, 2)
    for b, n in enumerate(lengths):
        np.testing.assert_array_equal(o[b, :n], xb[b, :n])
        assert np.all(o[b, n:] == padding_value)


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("enforce_sorted", [True, False])
def test_gradient_through_pack_and_pad(batch_first, enforce_sorted):
    """pad(pack(x)) and pack(x).data: torch's values and gradients (float64, float32), central differences."""
    lengths = LENGTHS[enforce_sorted]
    shape = (B, T_MAX + 1, 3) if batch_first else (T_MAX + 1, B, 3)

    def round_trip(lib):
        def fn(x):
            p = lib.pack_padded_sequence(x, lengths, batch_first=batch_first, enforce_sorted=enforce_sorted)
            return p.data, lib.pad_packed_sequence(p, batch_first=batch_first, padding_value=1.5, total_length=7)[0]
        return fn
    check_op(round_trip(rnn), round_trip(trnn), [shape])


@pytest.mark.parametrize("enforce_sorted", [True, False])
def test_pack_sequence_and_unpack_sequence_equal_torch(enforce_sorted):
    lengths = LENGTHS[enforce_sorted]
    rng = np.random.default_rng(1)
    seqs = [rng.standard_normal((n, 2)) for n in lengths]
    p = rnn.pack_sequence([seqlab.tensor(s) for s in seqs], enforce_sorted=enforce_sorted)
    tp = trnn.pack_sequence([torch.tensor(s) for s in seqs], enforce_sorted=enforce_sorted)
    same_as_torch(p.data, tp.data)
    same_as_torch(p.batch_sizes, tp.batch_sizes)
    same_indices(p.sorted_indices, tp.sorted_indices, "sorted_indices")
    back = rnn.unpack_sequence(p)
    assert [tuple(s.shape) for s in back] == [(n, 2) for n in lengths]
    for s, t in zip(back, trnn.unpack_sequence(tp)):
        same_as_torch(s, t)

    def fn(lib):
        return lambda *xs: lib.unpack_sequence(lib.pack_sequence(list(xs), enforce_sorted=enforce_sorted))
    check_op(fn(rnn), fn(trnn), [(n, 2) for n in lengths])  # gradients reach every sequence


@pytest.mark.parametrize("batch_first", [False, True])
def test_unpad_sequence_equals_torch_and_leaves_its_input_alone(batch_first):
    x = padded((2,), batch_first)
    xs, xt = seqlab.tensor(x), torch.tensor(x)
    lengths = LENGTHS[False]
    out = rnn.unpad_sequence(xs, seqlab.tensor(lengths), batch_first=batch_first)
    t_out = trnn.unpad_sequence(xt, torch.tensor(lengths), batch_first=batch_first)
    assert len(out) == B
    for s, t in zip(out, t_out):
        same_as_torch(s, t)
    assert xs.shape == x.shape  # torch transposes a time-major input in place; seqlab does not
    check_op(lambda a: rnn.unpad_sequence(a, lengths, batch_first=batch_first),
             lambda a: trnn.unpad_sequence(a.clone(), torch.tensor(lengths), batch_first=batch_first),
             [x.shape])


def test_ties_keep_their_order_and_match_torch_up_to_16_sequences():
    """A stable sort: torch's too for up to 16 sequences (past that its order among ties is unspecified)."""
    lengths = [2, 3, 2, 3, 1, 3, 2, 1, 3, 2, 2, 3, 1, 1, 3, 2]
    x = np.random.default_rng(2).standard_normal((3, 16, 2))
    p = rnn.pack_padded_sequence(seqlab.tensor(x), lengths, enforce_sorted=False)
    tp = trnn.pack_padded_sequence(torch.tensor(x), lengths, enforce_sorted=False)
    np.testing.assert_array_equal(p.sorted_indices.numpy(), np.argsort(-np.array(lengths), kind="stable"))
    same_as_torch(p.sorted_indices, tp.sorted_indices)
    same_as_torch(p.data, tp.data)
    lengths = list(np.random.default_rng(3).integers(1, 4, 40))  # many ties: still the same padded batch back
    x = np.random.default_rng(4).standard_normal((3, 40, 2))
    out, lens = rnn.pad_packed_sequence(rnn.pack_padded_sequence(seqlab.tensor(x), lengths, enforce_sorted=False))
    t_out, t_lens = trnn.pad_packed_sequence(trnn.pack_padded_sequence(torch.tensor(x), lengths,
                                                                       enforce_sorted=False))
    same_as_torch(out, t_out)
    same_as_torch(lens, t_lens)


def test_invert_permutation_and_constructor_equal_torch():
    perm = [3, 0, 4, 1, 2]
    same_as_torch(rnn.invert_permutation(seqlab.tensor(perm)), trnn.invert_permutation(torch.tensor(perm)))
    assert rnn.invert_permutation(None) is None
    data, bs = seqlab.tensor(np.arange(6.0)), seqlab.tensor([2, 2, 1, 1])
    p = rnn.PackedSequence(data, bs, seqlab.tensor([1, 0]))           # unsorted_indices derived, as torch
    np.testing.assert_array_equal(p.unsorted_indices.numpy(), [1, 0])
    q = rnn.PackedSequence((data, bs))                                 # torch's other form
    assert q.data is data and q.batch_sizes is bs and q.sorted_indices is None
    d, b_s, s_i, _ = p                                                 # a named tuple
    assert d is data and b_s is bs and s_i is p.sorted_indices


def test_to_float_double_keep_the_layout():
    x = padded((3,))
    p = rnn.pack_padded_sequence(seqlab.tensor(x), LENGTHS[False], enforce_sorted=False)
    f = p.float()
    assert isinstance(f, rnn.PackedSequence) and f.data.dtype == np.float32 and f.batch_sizes is p.batch_sizes
    np.testing.assert_array_equal(f.sorted_indices.numpy(), p.sorted_indices.numpy())
    np.testing.assert_allclose(f.data.numpy(), p.data.numpy().astype(np.float32))
    assert f.double().data.dtype == np.float64 and p.double() is p and p.to("cpu") is p
    assert p.to(seqlab.float32).data.dtype == np.float32 and not p.is_cuda


# ---- errors ------------------------------------------------------------------------------------------------
def torch_message(fn) -> str:
    with pytest.raises((RuntimeError, ValueError)) as e:
        fn()
    return str(e.value)


def test_unsorted_lengths_with_enforce_sorted_is_torchs_error():
    x = padded()
    want = torch_message(lambda: trnn.pack_padded_sequence(torch.tensor(x), LENGTHS[False]))
    with pytest.raises(RuntimeError) as e:  # a ValueError too (seqlab's convention)
        rnn.pack_padded_sequence(seqlab.tensor(x), LENGTHS[False])
    assert str(e.value) == want and isinstance(e.value, ValueError)
    with pytest.raises(ValueError, match="sorted in decreasing order"):
        rnn.pack_sequence([seqlab.zeros(2), seqlab.zeros(3)])


@pytest.mark.parametrize("lengths", [[3, 0, 2, 1, 1], [3, 2, 2, 1, -1]])
def test_a_length_of_zero_is_torchs_error(lengths):
    x = padded()
    want = torch_message(lambda: trnn.pack_padded_sequence(torch.tensor(x), lengths, enforce_sorted=False))
    with pytest.raises(ValueError) as e:
        rnn.pack_padded_sequence(seqlab.tensor(x), lengths, enforce_sorted=False)
    assert str(e.value).startswith(want)


@pytest.mark.parametrize("batch_first", [False, True])
def test_lengths_longer_than_the_padded_length_are_refused(batch_first):
    """torch reads past its buffer here; seqlab names the length and the padded length."""
    x = padded(batch_first=batch_first)                                # T = 6
    with pytest.raises(ValueError, match=r"at most the padded length 6 .*got a length of 7"):
        rnn.pack_padded_sequence(seqlab.tensor(x), [7, 3, 2, 2, 1], batch_first=batch_first)


def test_other_errors_quote_the_values():
    x = seqlab.tensor(padded())                                        # (6, 5, 3)
    want = torch_message(lambda: trnn.pack_padded_sequence(torch.tensor(padded()), [3, 2]))
    with pytest.raises(ValueError) as e:
        rnn.pack_padded_sequence(x, [3, 2])
    assert str(e.value) == want                                         # "... but got 2 (batch_size=5)"
    with pytest.raises(ValueError, match=r"at least 2 dims, got shape \(4,\)"):
        rnn.pack_padded_sequence(seqlab.zeros(4), [4])
    with pytest.raises(ValueError, match="Cannot pack empty tensors"):
        rnn.pack_padded_sequence(seqlab.zeros(3, 0, 2), [])
    with pytest.raises(TypeError, match="integers"):
        rnn.pack_padded_sequence(x, [2.5, 2, 1, 1, 1])
    p = rnn.pack_padded_sequence(x, [5, 4, 4, 2, 1])
    tp = trnn.pack_padded_sequence(torch.tensor(padded()), [5, 4, 4, 2, 1])
    want = torch_message(lambda: trnn.pad_packed_sequence(tp, total_length=3))
    with pytest.raises(ValueError) as e:
        rnn.pad_packed_sequence(p, total_length=3)
    assert str(e.value) == want
    with pytest.raises(TypeError, match="expects a PackedSequence, got Tensor"):
        rnn.pad_packed_sequence(x)


def test_layer_errors_on_packed_input():
    p = rnn.pack_padded_sequence(seqlab.tensor(padded((4,))), LENGTHS[True])
    with pytest.raises(ValueError, match="carries its own lengths"):
        nn.GRU(4, 3)(p, lengths=LENGTHS[True])
    with pytest.raises(ValueError, match=r"packed data of shape \(N, 2\), got \(16, 4\)"):
        nn.LSTM(2, 3)(p)
    with pytest.raises(ValueError, match=r"h0 has shape \(1, 4, 3\), expected \(1, 5, 3\)"):
        nn.RNN(4, 3)(p, seqlab.zeros(1, 4, 3))


# ---- RNN / LSTM / GRU on packed input, against torch on torch's weights -------------------------------------
LAYERS = {"rnn": (nn.RNN, torch.nn.RNN), "lstm": (nn.LSTM, torch.nn.LSTM), "gru": (nn.GRU, torch.nn.GRU)}
I, H = 3, 4


def close(a, e, what):
    a = a.numpy() if isinstance(a, seqlab.Tensor) else np.asarray(a)
    assert_close(a, e.detach().numpy(), rtol=1e-9, scale_atol=1e-12, what=what)


def run_packed_pair(mode, num_layers, bidirectional, enforce_sorted, with_state, fused=True, seed=0):
    """The same packed batch through torch's layer and seqlab's (torch's weights); backward from random
    cotangents on the packed output and the final states. Returns both sides' results."""
    cls, tcls = LAYERS[mode]
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    tm = tcls(I, H, num_layers=num_layers, batch_first=True, bidirectional=bidirectional).double()
    sm = cls(I, H, num_layers=num_layers, bidirectional=bidirectional, fused=fused).double()
    sm.load_state_dict(tm.state_dict())
    lengths = LENGTHS[enforce_sorted]
    x = rng.standard_normal((B, T_MAX, I))
    D = 2 if bidirectional else 1
    states = [rng.standard_normal((num_layers * D, B, H)) for _ in range(2 if mode == "lstm" else 1)]
    xt, xs = torch.tensor(x, requires_grad=True), seqlab.tensor(x, dtype=np.float64, requires_grad=True)
    st = [torch.tensor(s, requires_grad=True) for s in states]
    ss = [seqlab.tensor(s, dtype=np.float64, requires_grad=True) for s in states]
    hx = (lambda v: tuple(v) if mode == "lstm" else v[0]) if with_state else (lambda v: None)
    t_out, t_state = tm(trnn.pack_padded_sequence(xt, lengths, batch_first=True, enforce_sorted=enforce_sorted),
                        hx(st))
    s_out, s_state = sm(rnn.pack_padded_sequence(xs, lengths, batch_first=True, enforce_sorted=enforce_sorted),
                        hx(ss))
    assert isinstance(s_out, rnn.PackedSequence)
    t_all = [t_out.data] + (list(t_state) if mode == "lstm" else [t_state])
    s_all = [s_out.data] + (list(s_state) if mode == "lstm" else [s_state])
    cot = [rng.standard_normal(tuple(o.shape)) for o in t_all]
    sum((o * torch.tensor(c)).sum() for o, c in zip(t_all, cot)).backward()
    sum((o * seqlab.tensor(c, dtype=np.float64)).sum() for o, c in zip(s_all, cot)).backward()
    return {"t_out": t_out, "s_out": s_out, "t_all": t_all, "s_all": s_all, "xt": xt, "xs": xs, "st": st, "ss": ss,
            "tm": tm, "sm": sm}


CASES = list(itertools.product(LAYERS, (1, 2), (False, True), (True, False)))


@pytest.mark.parametrize("mode,num_layers,bidirectional,enforce_sorted", CASES)
def test_layer_on_packed_input_matches_torch(mode, num_layers, bidirectional, enforce_sorted):
    r = run_packed_pair(mode, num_layers, bidirectional, enforce_sorted, with_state=not enforce_sorted)
    s_out, t_out = r["s_out"], r["t_out"]
    same_as_torch(s_out.batch_sizes, t_out.batch_sizes)
    same_indices(s_out.sorted_indices, t_out.sorted_indices, "sorted_indices")
    same_indices(s_out.unsorted_indices, t_out.unsorted_indices, "unsorted_indices")
    for k, (a, e) in enumerate(zip(r["s_all"], r["t_all"])):
        close(a, e, ["output data", "h_n", "c_n"][k])             # h_n, c_n in the caller's order
    close(r["xs"].grad, r["xt"].grad, "d input")
    for k, (a, e) in enumerate(zip(r["ss"], r["st"])):
        if e.grad is not None:                                     # hx given (in the caller's order)
            close(a.grad, e.grad, ["d h0", "d c0"][k])
    t_params = dict(r["tm"].named_parameters())
    for n, p in r["sm"].named_parameters():
        close(p.grad, t_params[n].grad, f"d {n}")


@pytest.mark.parametrize("mode", list(LAYERS))
def test_composed_path_on_packed_input_matches_torch(mode):
    r = run_packed_pair(mode, 2, True, False, with_state=True, fused=False, seed=1)
    for k, (a, e) in enumerate(zip(r["s_all"], r["t_all"])):
        close(a, e, ["output data", "h_n", "c_n"][k])
    close(r["xs"].grad, r["xt"].grad, "d input")
    close(r["ss"][0].grad, r["st"][0].grad, "d h0")


def test_packed_output_pads_back_like_the_lengths_path():
    """The tutorial round trip: pack -> LSTM -> pad_packed_sequence equals the padded batch with lengths=."""
    m = nn.LSTM(I, H, bidirectional=True)
    x = seqlab.tensor(np.random.default_rng(5).standard_normal((B, T_MAX, I)))
    out, (h, c) = m(rnn.pack_padded_sequence(x, LENGTHS[False], batch_first=True, enforce_sorted=False))
    padded_out, lens = rnn.pad_packed_sequence(out, batch_first=True)
    ref, (h_ref, c_ref) = m(x, lengths=LENGTHS[False])
    np.testing.assert_allclose(padded_out.numpy(), ref.numpy(), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(h.numpy(), h_ref.numpy(), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(c.numpy(), c_ref.numpy(), rtol=1e-6, atol=1e-7)
    np.testing.assert_array_equal(lens.numpy(), LENGTHS[False])


# ---- the device path: CuPy's stand-in on the CPU (CuPy itself where a GPU is seen) -----------------------
def test_pack_and_pad_on_the_device(cuda):
    x = padded((3,), batch_first=True).astype(np.float32)
    results = []
    for device in ("cpu", "cuda"):
        xs = seqlab.Tensor(backend.to_device(x, device), requires_grad=True)
        p = rnn.pack_padded_sequence(xs, LENGTHS[False], batch_first=True, enforce_sorted=False)
        assert backend.device_of(p.data.data) == device and backend.device_of(p.sorted_indices.data) == device
        assert backend.device_of(p.batch_sizes.data) == "cpu" and p.is_cuda == (device == "cuda")
        out, lens = rnn.pad_packed_sequence(p, batch_first=True, padding_value=-1.0, total_length=7)
        assert out.device == device and backend.device_of(lens.data) == "cpu"
        seqs = rnn.unpack_sequence(p)
        (out * out).sum().backward()
        seqlab.manual_seed(0)
        m = nn.GRU(3, 2).to(device)                                    # the same weights on both devices
        y, h = m(p)
        assert backend.device_of(y.data.data) == device and h.device == device
        results.append([backend.to_numpy(a) for a in (p.data.data, out.data, xs.grad, seqs[1].data, y.data.data,
                                                        h.data, lens.data)])
    for a, b in zip(*results):
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(results[0][2][0, 2:], 0)  # no gradient past the length (2) of sequence 0


def test_packed_sequence_to_the_device_and_back(cuda):
    p = rnn.pack_sequence([seqlab.tensor([1.0, 2.0, 3.0]), seqlab.tensor([4.0])])
    q = rnn.pack_padded_sequence(seqlab.tensor(padded()), LENGTHS[False], enforce_sorted=False).to("cuda")
    assert q.is_cuda and backend.device_of(q.sorted_indices.data) == "cuda"
    assert backend.device_of(q.batch_sizes.data) == "cpu"
    back = q.cpu()
    assert not back.is_cuda and backend.device_of(back.unsorted_indices.data) == "cpu"
    np.testing.assert_array_equal(backend.to_numpy(p.cuda().data.data), [1.0, 4.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="should be a 1D CPU int64 tensor"):
        rnn.pack_padded_sequence(seqlab.tensor(padded()), seqlab.tensor(LENGTHS[True]).to("cuda"))


@pytest.mark.parametrize("kind", ["RNN", "LSTM", "GRU"])
def test_flat_weights_names_as_torch_for_d2ls_xavier_init(kind):
    """d2l's xavier_init_weights loops over `m._flat_weights_names` (torch's private attribute)."""
    kw = dict(num_layers=2, bidirectional=True, batch_first=True)
    s_rnn, t_rnn = getattr(nn, kind)(3, 4, **kw), getattr(torch.nn, kind)(3, 4, **kw)
    assert s_rnn._flat_weights_names == t_rnn._flat_weights_names
    for name in s_rnn._flat_weights_names:
        if "weight" in name:
            nn.init.xavier_uniform_(s_rnn._parameters[name])
    assert [p.shape for p in s_rnn._flat_weights] == [tuple(p.shape) for p in t_rnn._flat_weights]
