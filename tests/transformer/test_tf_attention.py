"""nn.MultiheadAttention against torch.nn.MultiheadAttention(batch_first=True): outputs, weights, gradients."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import seqlab
from seqlab import nn
from seqlab.errors import CheckpointError

E, H, B, L, S = 8, 2, 3, 5, 6

CASES = {
    "self": dict(self_attn=True),
    "key_padding": dict(kpm=True),
    "causal": dict(self_attn=True, causal=True, kpm=True),
    "bool_mask_2d": dict(bool_mask=True),
    "float_mask_3d": dict(float_mask3=True, kpm=True),
    "kdim_vdim": dict(kdim=5, vdim=7, kpm=True, bool_mask=True),
    "no_bias": dict(bias=False, kpm=True),
    "bias_kv_zero_attn": dict(add_bias_kv=True, add_zero_attn=True, kpm=True, bool_mask=True),
}


def _masks(case: dict, rng, Lq: int, Sk: int):
    kpm = am = None
    if case.get("kpm"):
        kpm = np.zeros((B, Sk), dtype=bool)
        kpm[1, -2:] = True  # the second sequence has two padding keys
        kpm[2, -1] = True
    if case.get("bool_mask"):
        am = rng.random((Lq, Sk)) < 0.3  # True = blocked
        am[:, 0] = False  # every query keeps at least one key
    if case.get("float_mask3"):
        am = rng.standard_normal((B * H, Lq, Sk))
    if case.get("causal"):
        am = np.triu(np.full((Lq, Sk), -np.inf), k=1)
    return kpm, am


def _mha_pair(name: str, rng):
    """torch's and seqlab's MultiheadAttention for CASES[name] with the same weights, their (q, k, v) inputs
    (requiring grad; one tensor three times for self-attention), the masks and is_causal."""
    case = CASES[name]
    kdim, vdim = case.get("kdim"), case.get("vdim")
    kw = dict(bias=case.get("bias", True), add_bias_kv=case.get("add_bias_kv", False),
              add_zero_attn=case.get("add_zero_attn", False), kdim=kdim, vdim=vdim)
    torch.manual_seed(0)
    tm = torch.nn.MultiheadAttention(E, H, batch_first=True, **kw).double()
    sm = nn.MultiheadAttention(E, H, **kw).double()
    sm.load_state_dict(tm.state_dict())
    Sk = L if case.get("self_attn") else S
    q = rng.standard_normal((B, L, E))
    k = q if case.get("self_attn") else rng.standard_normal((B, Sk, kdim or E))
    v = q if case.get("self_attn") else rng.standard_normal((B, Sk, vdim or E))
    kpm, am = _masks(case, rng, L, Sk)
    tq, sq = torch.tensor(q, requires_grad=True), seqlab.tensor(q, requires_grad=True)
    if case.get("self_attn"):
        t_in, s_in = (tq, tq, tq), (sq, sq, sq)
    else:
        t_in = (tq, torch.tensor(k, requires_grad=True), torch.tensor(v, requires_grad=True))
        s_in = (sq, seqlab.tensor(k, requires_grad=True), seqlab.tensor(v, requires_grad=True))
    return tm, sm, t_in, s_in, kpm, am, bool(case.get("causal"))


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("average", [True, False])
@pytest.mark.parametrize("name", list(CASES))
def test_mha_matches_torch(name, average, rng, cmp):
    tm, sm, (tq, tk, tv), (sq, sk, sv), kpm, am, causal = _mha_pair(name, rng)
    g = rng.standard_normal((B, L, E))
    to, tw = tm(tq, tk, tv, key_padding_mask=None if kpm is None else torch.tensor(kpm),
                attn_mask=None if am is None else torch.tensor(am), average_attn_weights=average, is_causal=causal)
    so, sw = sm(sq, sk, sv, key_padding_mask=kpm, attn_mask=am, average_attn_weights=average, is_causal=causal)
    cmp.close(so, to, what="output")
    cmp.close(sw, tw, what="weights")
    assert sw.shape == ((B, L, tw.shape[-1]) if average else (B, H, L, tw.shape[-1]))
    to.backward(torch.tensor(g))
    so.backward(g)
    cmp.close(sq.grad, tq.grad, what="query grad")
    if not CASES[name].get("self_attn"):
        cmp.close(sk.grad, tk.grad, what="key grad")
        cmp.close(sv.grad, tv.grad, what="value grad")
    cmp.grads(sm, tm)


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("average", [True, False])
@pytest.mark.parametrize("name", list(CASES))
def test_mha_weights_carry_gradients_as_torchs(name, average, rng, cmp):
    """A loss on the output and on the weights: the same gradients as torch's (its weights are part of the
    graph); weights_grad=False gives the same weights, detached, from the fused op."""
    tm, sm, (tq, tk, tv), (sq, sk, sv), kpm, am, causal = _mha_pair(name, rng)
    to, tw = tm(tq, tk, tv, key_padding_mask=None if kpm is None else torch.tensor(kpm),
                attn_mask=None if am is None else torch.tensor(am), average_attn_weights=average, is_causal=causal)
    so, sw = sm(sq, sk, sv, key_padding_mask=kpm, attn_mask=am, average_attn_weights=average, is_causal=causal)
    assert sw.requires_grad
    gw = rng.standard_normal(tuple(tw.shape))
    ((to * to).sum() + (tw * torch.tensor(gw)).sum()).backward()
    ((so * so).sum() + (sw * gw).sum()).backward()
    cmp.close(sq.grad, tq.grad, what="query grad")
    if not CASES[name].get("self_attn"):
        cmp.close(sk.grad, tk.grad, what="key grad")
        cmp.close(sv.grad, tv.grad, what="value grad")
    cmp.grads(sm, tm)
    _, detached = sm(sq, sk, sv, key_padding_mask=kpm, attn_mask=am, average_attn_weights=average,
                     is_causal=causal, weights_grad=False)
    assert not detached.requires_grad
    np.testing.assert_allclose(detached.numpy(), sw.numpy(), rtol=1e-12, atol=1e-14)


def test_mha_weights_with_gradients_keep_the_fully_masked_row_rule():
    """A query whose keys are all padding: weights and output 0 and finite gradients, as the fused op."""
    sm = nn.MultiheadAttention(E, H).double()
    x = seqlab.tensor(np.random.default_rng(0).standard_normal((2, 3, E)), requires_grad=True)
    kpm = np.array([[False, False, False], [True, True, True]])
    out, w = sm(x, x, x, key_padding_mask=kpm)
    assert np.array_equal(w.numpy()[1], np.zeros((3, 3))) and np.isfinite(out.numpy()).all()
    ((out * out).sum() + (w * w).sum()).backward()
    assert np.isfinite(x.grad).all()
    _, fused = sm(x, x, x, key_padding_mask=kpm, weights_grad=False)
    np.testing.assert_allclose(fused.numpy(), w.numpy(), rtol=1e-12, atol=1e-14)


def test_state_dict_keys_and_order_match_torch():
    for kw in ({}, {"kdim": 3, "vdim": 5}, {"bias": False}, {"add_bias_kv": True}):
        tm = torch.nn.MultiheadAttention(E, H, batch_first=True, **kw)
        sm = nn.MultiheadAttention(E, H, **kw)
        assert list(sm.state_dict()) == list(tm.state_dict())
        assert [tuple(v.shape) for v in sm.state_dict().values()] == [tuple(v.shape) for v in tm.state_dict().values()]


def test_init_matches_torch_statistics():
    sm = nn.MultiheadAttention(64, 4)
    bound = np.sqrt(6.0 / (64 + 3 * 64))  # Xavier-uniform over the packed (3E, E) matrix, as torch
    w = sm.in_proj_weight.numpy()
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.9 * bound
    assert not sm.in_proj_bias.numpy().any() and not sm.out_proj.bias.numpy().any()


def test_is_causal_without_mask_builds_the_causal_mask(rng, cmp):
    sm = nn.MultiheadAttention(E, H).double()
    x = seqlab.tensor(rng.standard_normal((B, L, E)))
    a, wa = sm(x, x, x, is_causal=True, average_attn_weights=False)
    b, wb = sm(x, x, x, attn_mask=nn.generate_square_subsequent_mask(L, dtype=np.float64), average_attn_weights=False)
    cmp.close(a, b.numpy(), 1e-12, "causal output")
    assert np.all(np.triu(wa.numpy(), k=1) == 0)  # no weight on future keys
    cmp.close(wa, wb.numpy(), 1e-12, "causal weights")


def test_unbatched_matches_torch(rng, cmp):
    torch.manual_seed(1)
    tm = torch.nn.MultiheadAttention(E, H, batch_first=True).double()
    sm = nn.MultiheadAttention(E, H).double()
    sm.load_state_dict(tm.state_dict())
    q, k = rng.standard_normal((L, E)), rng.standard_normal((S, E))
    to, tw = tm(torch.tensor(q), torch.tensor(k), torch.tensor(k))
    so, sw = sm(seqlab.tensor(q), seqlab.tensor(k), seqlab.tensor(k))
    assert so.shape == (L, E) and sw.shape == (L, S)
    cmp.close(so, to, what="unbatched output")
    cmp.close(sw, tw, what="unbatched weights")


def test_need_weights_false_returns_none(rng):
    sm = nn.MultiheadAttention(E, H)
    x = seqlab.tensor(rng.standard_normal((B, L, E)).astype(np.float32))
    out, w = sm(x, x, x, need_weights=False)
    assert w is None and out.shape == (B, L, E) and out.dtype == np.float32


def test_bad_arguments_are_clear_errors(rng):
    with pytest.raises(ValueError, match="batch_first=False"):
        nn.MultiheadAttention(E, H, batch_first=False)
    with pytest.raises(ValueError, match="divisible"):
        nn.MultiheadAttention(10, 3)
    # torch's default layout (L, B, E) with a (B, S) padding mask: the error says the inputs look time-major
    tm = seqlab.tensor(rng.standard_normal((L, B, E)).astype(np.float32))
    with pytest.raises(ValueError, match=r"look time-major \(L, B, E\)"):
        nn.MultiheadAttention(E, H)(tm, tm, tm, key_padding_mask=np.zeros((B, L), bool))
    sm = nn.MultiheadAttention(E, H)
    x = seqlab.tensor(rng.standard_normal((B, L, E)).astype(np.float32))
    with pytest.raises(ValueError, match=r"expects last dim 8"):
        sm(seqlab.tensor(np.zeros((B, L, 4), np.float32)), x, x)
    with pytest.raises(ValueError, match="key_padding_mask has shape"):
        sm(x, x, x, key_padding_mask=np.zeros((B, L + 1), bool))
    with pytest.raises(ValueError, match="attn_mask has shape"):
        sm(x, x, x, attn_mask=np.zeros((L, L + 2), bool))
    with pytest.raises(CheckpointError, match="in_proj_weight"):
        sm.load_state_dict({"in_proj_weight": np.zeros((3, 3))}, strict=False)


def test_dropout_only_in_training(rng):
    seqlab.manual_seed(0)
    sm = nn.MultiheadAttention(E, H, dropout=0.5)
    x = seqlab.tensor(rng.standard_normal((B, L, E)).astype(np.float32))
    a, _ = sm(x, x, x)
    b, _ = sm(x, x, x)
    assert not np.allclose(a.numpy(), b.numpy())  # different dropout masks
    sm.eval()
    c, _ = sm(x, x, x)
    d, _ = sm(x, x, x)
    np.testing.assert_array_equal(c.numpy(), d.numpy())


def test_mha_weights_with_gradients_draw_the_fused_ops_dropout():
    """In training, the composed attention drops the same weights as the fused op from the same seed."""
    sm = nn.MultiheadAttention(8, 2, dropout=0.3).double().train()
    x = seqlab.tensor(np.random.default_rng(0).standard_normal((2, 5, 8)), requires_grad=True)
    seqlab.manual_seed(3)
    out, w = sm(x, x, x)
    seqlab.manual_seed(3)
    fused_out, fused_w = sm(x, x, x, weights_grad=False)
    assert w.requires_grad and not fused_w.requires_grad
    np.testing.assert_allclose(out.numpy(), fused_out.numpy(), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(w.numpy(), fused_w.numpy(), rtol=1e-12, atol=1e-14)


@pytest.mark.filterwarnings("ignore::UserWarning")  # torch: a bool key_padding_mask beside a float attn_mask
@pytest.mark.parametrize("case", [{}, {"kpm": True}, {"three_d": True, "kpm": True}, {"kdim": 6},
                                  {"cross": True}, {"bias_kv": True}, {"zero_attn": True}])
def test_a_float_attn_mask_that_requires_grad_gets_torchs_gradient(case):
    """A learned additive mask (a relative-position bias, say) passed as attn_mask: its gradient is torch's,
    on the packed self-attention path, with other key sizes, beside a padding mask and with the appended
    bias_k / zero-attention key column."""
    rng = np.random.default_rng(7)
    kdim = case.get("kdim")
    torch.manual_seed(0)
    kw = dict(batch_first=True, kdim=kdim, vdim=kdim, add_bias_kv=case.get("bias_kv", False),
              add_zero_attn=case.get("zero_attn", False))
    ours, theirs = nn.MultiheadAttention(E, H, **kw).double(), torch.nn.MultiheadAttention(E, H, **kw).double()
    ours.load_state_dict(theirs.state_dict())
    x, kv = rng.standard_normal((B, L, E)), rng.standard_normal((B, L, kdim or E))
    m = rng.standard_normal((B * H, L, L) if case.get("three_d") else (L, L))
    pad = np.zeros((B, L), dtype=bool)
    pad[1, -2:] = True
    got = []
    for lib, mod in ((seqlab, ours), (torch, theirs)):
        q = lib.tensor(x, dtype=lib.float64, requires_grad=True)
        cross = kdim or case.get("cross") or case.get("bias_kv") or case.get("zero_attn")
        k = lib.tensor(kv, dtype=lib.float64, requires_grad=True) if cross else q
        mask = lib.tensor(m, dtype=lib.float64, requires_grad=True)
        out, _ = mod(q, k, k, attn_mask=mask, key_padding_mask=lib.tensor(pad) if case.get("kpm") else None)
        (out ** 2).sum().backward()
        got.append((np.asarray(out.tolist()), np.asarray(mask.grad.tolist())))
    np.testing.assert_allclose(got[0][0], got[1][0], rtol=1e-9, atol=1e-10)
    assert np.abs(got[1][1]).max() > 1e-3  # torch's mask gradient is not zero here
    np.testing.assert_allclose(got[0][1], got[1][1], rtol=1e-9, atol=1e-10)
