"""Attention a head at a time in one compiled pass (`kernels.short_attention_forward` / `_backward`, the
vector tiles of `_numba_kernels._tile_kernel`): the values and gradients of float64 plain attention and of
the batched float32 path, with every mask kind the kernel takes, dropout, odd lengths, strided and packed
heads, both thread counts; where it declines, the batched path runs."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import seqlab
from seqlab import functional as F
from seqlab import kernels

pytestmark = pytest.mark.skipif(kernels.library() != "numba", reason="the compiled attention needs Numba")

F32 = 2e-5  # float32 against float64: a wrong mask, row or tile differs by 1e-2 or more


def _mask(kind, B, T, rng):
    """A bool attn_mask (True = may attend) of each kind the kernel takes, or None."""
    if kind == "none":
        return None
    if kind == "causal":
        return np.tril(np.ones((T, T), bool))[None, None]
    if kind == "padding":  # (B, 1, 1, T): each sequence's tail padded, one sequence whole
        m = np.ones((B, 1, 1, T), bool)
        for b in range(1, B):
            m[b, ..., T - 3 * b:] = False
        return m
    m = rng.random((B, 1, T, T)) > 0.3  # holes anywhere, one query row with no key at all
    m[:, :, 0, 0] = True
    m[0, 0, 2, :] = False
    return m


def _attend(x, g, heads, mask, p, dtype, seed=0, packed=True):
    """(out, weights, d x) of attention on x (B, T, 3E), through attention_qkv (packed) or on q, k, v views."""
    seqlab.manual_seed(seed)
    t = seqlab.tensor(x.astype(dtype), requires_grad=True)
    if packed:
        out, w = F.attention_qkv(t, heads, attn_mask=mask, dropout_p=p)
    else:
        B, T, E3 = x.shape
        q, k, v = (part.reshape(B, T, heads, E3 // (3 * heads)).transpose(1, 2) for part in t.split(E3 // 3, 2))
        out, w = F.attention(q, k, v, attn_mask=mask, dropout_p=p)
    (out * seqlab.tensor(g.astype(dtype))).sum().backward()
    return out.numpy(), w.numpy(), np.asarray(t.grad)


@pytest.fixture
def short_on(monkeypatch):
    """Counts the kernel's forward calls (so a test knows the compiled path ran)."""
    calls = []
    real = kernels.short_attention_forward

    def spy(*a, **kw):
        calls.append(a[0].shape)
        return real(*a, **kw)

    monkeypatch.setattr(kernels, "short_attention_forward", spy)
    return calls


@pytest.mark.parametrize("B,T,H,D", [(2, 64, 2, 32), (3, 45, 2, 16), (2, 17, 1, 16), (1, 130, 2, 32),
                                     (2, 16, 2, 32), (2, 9, 1, 16)])
@pytest.mark.parametrize("kind", ["none", "causal", "padding", "holes"])
def test_values_and_gradients_match_float64_attention(B, T, H, D, kind, short_on):
    rng = np.random.default_rng(T + D)
    x = rng.standard_normal((B, T, 3 * H * D)).astype(np.float32)
    g = rng.standard_normal((B, H, T, D)).astype(np.float32)
    mask = _mask(kind, B, T, rng)
    got = _attend(x, g, H, mask, 0.0, np.float32)
    assert bool(short_on) == (kind != "none"), "on one thread the compiled path runs where a mask hides keys"
    want = _attend(x, g, H, mask, 0.0, np.float64)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, atol=F32 * max(1.0, np.abs(b).max()), rtol=0)


@pytest.mark.parametrize("kind", ["causal", "holes"])
def test_dropout_and_separate_views_match_the_batched_path(kind, monkeypatch):
    """With dropout 0.2 (the same keep mask: one seed) and q, k, v as three strided views: the batched
    float32 path's values, to float32 rounding; a row with every key blocked gives 0 in both."""
    rng = np.random.default_rng(5)
    B, T, H, D = 2, 40, 2, 16
    x = rng.standard_normal((B, T, 3 * H * D)).astype(np.float32)
    g = rng.standard_normal((B, H, T, D)).astype(np.float32)
    mask = _mask(kind, B, T, rng)
    for packed in (True, False):
        fast = _attend(x, g, H, mask, 0.2, np.float32, seed=3, packed=packed)
        monkeypatch.setattr(kernels, "SHORT_ATTENTION", False)
        slow = _attend(x, g, H, mask, 0.2, np.float32, seed=3, packed=packed)
        monkeypatch.setattr(kernels, "SHORT_ATTENTION", True)
        for a, b in zip(fast, slow):
            np.testing.assert_allclose(a, b, atol=1e-5, rtol=1e-5)
        if kind == "holes":
            assert not fast[0][0, :, 2].any() and not fast[1][0, :, 2].any()


def test_matches_torch_sdpa_causal_forward_and_backward():
    rng = np.random.default_rng(11)
    B, T, H, D = 3, 64, 4, 32
    q, k, v, g = (rng.standard_normal((B, H, T, D)).astype(np.float32) for _ in range(4))
    ts = [seqlab.tensor(a, requires_grad=True) for a in (q, k, v)]
    out, _ = F.attention(*ts, is_causal=True)
    (out * seqlab.tensor(g)).sum().backward()
    tt = [torch.tensor(a, requires_grad=True) for a in (q, k, v)]
    ref = torch.nn.functional.scaled_dot_product_attention(*tt, is_causal=True)
    (ref * torch.tensor(g)).sum().backward()
    np.testing.assert_allclose(out.numpy(), ref.detach().numpy(), atol=1e-5, rtol=0)
    for a, b in zip(ts, tt):
        np.testing.assert_allclose(np.asarray(a.grad), b.grad.numpy(), atol=2e-5, rtol=0)


@pytest.mark.parametrize("threads", [1, 2])
def test_threads_give_the_same_values_bitwise(threads, monkeypatch):
    """The parallel twin shares whole heads out: every head's values are the one-thread values, bitwise."""
    rng = np.random.default_rng(2)
    B, T, H, D = 3, 33, 3, 16
    x = rng.standard_normal((B, T, 3 * H * D)).astype(np.float32)
    g = rng.standard_normal((B, H, T, D)).astype(np.float32)
    mask = _mask("causal", B, T, rng)
    one = _attend(x, g, H, mask, 0.1, np.float32, seed=1)
    monkeypatch.setattr(kernels, "MIN_PARALLEL", 0)
    old = kernels._threads
    kernels.set_threads(threads)
    try:
        many = _attend(x, g, H, mask, 0.1, np.float32, seed=1)
    finally:
        kernels.set_threads(old)
    for a, b in zip(one, many):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("tq", [1, 3])
def test_a_few_queries_without_a_mask_take_the_kernel(tq, short_on):
    """Generation with a KV cache: one new query against every cached key, no mask."""
    rng = np.random.default_rng(7)
    q = rng.standard_normal((2, 2, tq, 16)).astype(np.float32)
    k, v = (rng.standard_normal((2, 2, 37, 16)).astype(np.float32) for _ in range(2))
    out, w = F.attention(*(seqlab.tensor(a) for a in (q, k, v)))
    assert short_on
    s = q @ k.swapaxes(-1, -2) / 4.0
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    np.testing.assert_allclose(w.numpy(), p, atol=1e-6, rtol=0)
    np.testing.assert_allclose(out.numpy(), p @ v, atol=1e-5, rtol=0)


def test_need_weights_false_gives_none_and_the_same_output():
    rng = np.random.default_rng(4)
    x = seqlab.tensor(rng.standard_normal((2, 48, 3 * 32)).astype(np.float32))
    out, w = F.attention_qkv(x, 2, is_causal=True)
    out2, w2 = F.attention_qkv(x, 2, is_causal=True, need_weights=False)
    assert w is not None and w2 is None
    np.testing.assert_array_equal(out.numpy(), out2.numpy())


@pytest.mark.parametrize("case", ["head dim 24", "no mask, one thread", "float bias", "float64", "too long"])
def test_declines_where_it_does_not_apply(case, monkeypatch):
    """Each case runs the batched path (the kernel is not called) and still gives attention's values; the
    same arguments with only the case's cause taken away do run the kernel (a causal mask, one thread)."""
    called = []
    monkeypatch.setattr(kernels, "short_attention_forward", lambda *a, **kw: called.append(1))
    monkeypatch.setattr(kernels, "_threads", 1)
    rng = np.random.default_rng(0)
    B, H, T, D, dtype = 2, 2, 40, 16, np.float32
    mask = np.tril(np.ones((T, T), bool))
    base = [np.empty((B, H, T, D), np.float32) for _ in range(3)]
    assert kernels.short_attention_plan(*base, None, ~mask, None) is not None
    if case == "head dim 24":
        D = 24
    elif case == "no mask, one thread":
        mask = None
    elif case == "float bias":
        mask = rng.standard_normal((T, T)).astype(np.float32)
    elif case == "float64":
        dtype = np.float64
    else:
        monkeypatch.setattr(kernels, "SHORT_MAX_KEYS", T - 1)
    q, k, v = (seqlab.tensor(rng.standard_normal((B, H, T, D)).astype(dtype)) for _ in range(3))
    out, w = F.attention(q, k, v, attn_mask=mask)
    assert not called
    s = q.numpy() @ k.numpy().swapaxes(-1, -2) / np.sqrt(D)
    if mask is not None:
        s = s + mask if mask.dtype != bool else np.where(mask, s, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    np.testing.assert_allclose(out.numpy(), p @ v.numpy(), atol=1e-5, rtol=0)


def test_gpt_generation_and_attentions_through_the_kernel(short_on):
    """A GPT whose heads the kernel takes (D 16 < T): output_attentions still returns every layer's
    weights (rows summing to 1, causal), and greedy generation with the cache equals generation without."""
    from seqlab.models.gpt import GPT, GPTConfig

    seqlab.manual_seed(0)
    cfg = GPTConfig(vocab_size=50, n_positions=64, n_embd=32, n_layer=2, n_head=2, resid_pdrop=0.0,
                    embd_pdrop=0.0, attn_pdrop=0.0, bos_token_id=0, eos_token_id=0)
    model = GPT(cfg).eval()
    ids = np.random.default_rng(0).integers(0, 50, (2, 24))
    res = model(ids, output_attentions=True)
    assert short_on
    for w in res.attentions:
        w = w.numpy()
        np.testing.assert_allclose(w.sum(-1), 1.0, atol=1e-5)
        assert not np.triu(w, 1).any()
    with seqlab.no_grad():
        a = model.generate(ids[:, :20], max_new_tokens=8, do_sample=False, use_cache=True)
        b = model.generate(ids[:, :20], max_new_tokens=8, do_sample=False, use_cache=False)
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_cross_attention_with_padding_matches_float64():
    """Queries and keys of different lengths (a decoder attending to an encoder's padded output)."""
    rng = np.random.default_rng(9)
    B, H, Tq, Tk, D = 3, 2, 23, 40, 16
    arrays = [rng.standard_normal((B, H, t, D)) for t in (Tq, Tk, Tk)]
    g = rng.standard_normal((B, H, Tq, D))
    mask = np.ones((B, 1, 1, Tk), bool)
    mask[1, ..., 25:] = False
    mask[2, ..., 1:] = False
    got, want = [], []
    for dtype, into in ((np.float32, got), (np.float64, want)):
        ts = [seqlab.tensor(a.astype(dtype), requires_grad=True) for a in arrays]
        out, w = F.attention(*ts, attn_mask=mask)
        (out * seqlab.tensor(g.astype(dtype))).sum().backward()
        into += [out.numpy(), w.numpy()] + [np.asarray(t.grad) for t in ts]
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, atol=F32 * max(1.0, np.abs(b).max()), rtol=0)


@pytest.mark.parametrize("T", [20, 12])  # 12 keys on 16 dims: the forward keeps its weights
def test_double_backward_through_the_compiled_path(T, monkeypatch):
    """create_graph=True: the gradient of a function of the first gradients equals the batched path's."""
    rng = np.random.default_rng(12)
    arrays = [rng.standard_normal((2, 2, T, 16)).astype(np.float32) for _ in range(3)]

    def second(short):
        monkeypatch.setattr(kernels, "SHORT_ATTENTION", short)
        ts = [seqlab.tensor(a, requires_grad=True) for a in arrays]
        out, _ = F.attention(*ts, is_causal=True)
        gq, gk, gv = seqlab.autograd.grad((out ** 2).sum(), ts, create_graph=True)
        ((gq * gk).sum() + (gv ** 2).sum()).backward()
        return [np.asarray(t.grad) for t in ts]

    for a, b in zip(second(True), second(False)):
        np.testing.assert_allclose(a, b, atol=1e-4, rtol=1e-4)


def test_keys_up_to_the_head_dim_keep_the_weights_for_backward(short_on):
    """Tk <= D (encoder-train's 64 keys on 64 dims): the forward keeps its weights, which the caller gets
    read-only, and backward reads them instead of making them again: the same gradients bitwise."""
    rng = np.random.default_rng(13)
    B, H, T, D = 3, 2, 20, 32
    q, k, v, g = (rng.standard_normal((B, H, T, D)).astype(np.float32) for _ in range(4))
    mask = np.ones((B, 1, 1, T), bool)
    mask[1, ..., 12:] = False
    ts = [seqlab.tensor(a, requires_grad=True) for a in (q, k, v)]
    out, w = F.attention(*ts, attn_mask=mask, dropout_p=0.0)
    assert short_on and not w.numpy().flags.writeable
    (out * seqlab.tensor(g)).sum().backward()
    plan = kernels.short_attention_plan(q, k, v, None, ~mask, None)
    assert plan is not None
    _, kept, stats = kernels.short_attention_forward(q, k, v, 1 / np.sqrt(D), plan, None, 1.0)
    again = kernels.short_attention_backward(q, k, v, g, 1 / np.sqrt(D), plan, None, 1.0, stats)
    read = kernels.short_attention_backward(q, k, v, g, 1 / np.sqrt(D), plan, None, 1.0, stats + (kept,))
    for a, b, t in zip(again, read, ts):
        np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(a, np.asarray(t.grad))
    np.testing.assert_array_equal(kept, w.numpy())


def test_whole_sequences_on_two_threads_take_the_kernel(short_on, monkeypatch):
    """No mask (nothing to skip), but more than one thread: the heads are shared between the threads; the
    values are those of one thread's batched path."""
    rng = np.random.default_rng(14)
    x = rng.standard_normal((2, 24, 3 * 2 * 16)).astype(np.float32)
    g = rng.standard_normal((2, 2, 24, 16)).astype(np.float32)
    one = _attend(x, g, 2, None, 0.0, np.float32)
    assert not short_on
    monkeypatch.setattr(kernels, "MIN_PARALLEL", 0)
    old = kernels._threads
    kernels.set_threads(2)
    try:
        two = _attend(x, g, 2, None, 0.0, np.float32)
    finally:
        kernels.set_threads(old)
    assert short_on or not kernels._parallel_ok()
    for a, b in zip(one, two):
        np.testing.assert_allclose(a, b, atol=1e-5, rtol=1e-5)
