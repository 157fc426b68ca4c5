"""Memory-efficient (chunked, online-softmax) and sliding-window attention equal plain attention."""
from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

import seqlab
from seqlab import functional as F
from seqlab.nn.efficient_attention import memory_efficient_attention, sliding_window_attention, sliding_window_mask

B, H, L, S, D, DV = 2, 2, 23, 19, 8, 5


def _run(fn, arrays, g):
    ts = [seqlab.tensor(a, requires_grad=True) for a in arrays]
    out = fn(*ts)
    out.backward(g)
    return [out.numpy()] + [t.grad for t in ts]


def _masks(rng):
    bool_mask = rng.random((B, 1, L, S)) < 0.6  # True = may attend
    bool_mask[0, 0, 4] = False  # one query with every key hidden: zeros, as F.attention
    return {
        "none": {},
        "causal": {"is_causal": True},
        "bool": {"attn_mask": bool_mask},
        "float": {"attn_mask": rng.standard_normal((L, S))},
    }


@pytest.mark.parametrize("chunks", [(3, 5), (7, 7), (64, 64)])
@pytest.mark.parametrize("mask", ["none", "causal", "bool", "float"])
def test_equals_plain_attention_forward_and_backward(mask, chunks, rng, cmp):
    kw = _masks(rng)[mask]
    arrays = [rng.standard_normal(s) for s in ((B, H, L, D), (B, H, S, D), (B, H, S, DV))]
    g = rng.standard_normal((B, H, L, DV))
    plain = _run(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, **kw), arrays, g)
    eff = _run(lambda q, k, v: memory_efficient_attention(q, k, v, chunk_size=chunks[1], q_chunk_size=chunks[0], **kw),
               arrays, g)
    for name, a, b in zip(("output", "dq", "dk", "dv"), eff, plain):
        cmp.close(a, b, 1e-9, f"{mask} {name}")
    if mask == "bool":
        assert not eff[0][0, 0, 4].any()  # the fully hidden row


@pytest.mark.parametrize("causal", [True, False])
@pytest.mark.parametrize("window", [0, 3, 40])
def test_sliding_window_equals_masked_plain_attention(causal, window, rng, cmp):
    arrays = [rng.standard_normal((B, L, D)) for _ in range(3)]
    g = rng.standard_normal((B, L, D))
    mask = sliding_window_mask(L, L, window, causal)
    plain = _run(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, attn_mask=mask), arrays, g)
    eff = _run(lambda q, k, v: sliding_window_attention(q, k, v, window, causal=causal, chunk_size=4), arrays, g)
    for name, a, b in zip(("output", "dq", "dk", "dv"), eff, plain):
        if window == 0 and name in ("dq", "dk"):  # one key per query: softmax is constant, gradients are 0
            assert np.abs(a).max() < 1e-12 and np.abs(b).max() < 1e-12
            continue
        cmp.close(a, b, 1e-9, f"window {window} {name}")


def test_float32_is_close_to_float64(rng):
    arrays = [rng.standard_normal((1, 300, 16)) for _ in range(3)]
    ref = memory_efficient_attention(*[seqlab.tensor(a) for a in arrays], is_causal=True, chunk_size=64).numpy()
    f32 = memory_efficient_attention(*[seqlab.tensor(a.astype(np.float32)) for a in arrays], is_causal=True,
                                     chunk_size=64)
    assert f32.dtype == np.float32
    assert np.abs(f32.numpy() - ref).max() < 1e-5


def test_memory_stays_linear(rng):
    T, d = 1024, 32
    arrays = [rng.standard_normal((1, T, d), dtype=np.float32) for _ in range(4)]

    def peak(fn) -> int:
        fn(*(seqlab.tensor(a, requires_grad=True) for a in arrays[:3])).backward(arrays[3])  # compiles first
        ts = [seqlab.tensor(a, requires_grad=True) for a in arrays[:3]]
        tracemalloc.start()
        fn(*ts).backward(arrays[3])
        p = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        return p

    plain = peak(lambda q, k, v: F.scaled_dot_product_attention(q, k, v))
    eff = peak(lambda q, k, v: memory_efficient_attention(q, k, v, chunk_size=256))
    assert plain > 2 * 4 * T * T  # at least two (T, T) float32 arrays
    assert eff < 4 * T * T / 2  # less than half of one (T, T) array


def test_bad_inputs(rng):
    q = seqlab.tensor(rng.standard_normal((2, 4, 8)))
    with pytest.raises(ValueError, match="last dims"):
        memory_efficient_attention(q, seqlab.tensor(rng.standard_normal((2, 4, 6))), q)
    with pytest.raises(ValueError, match="chunk sizes"):
        memory_efficient_attention(q, q, q, chunk_size=0)
    with pytest.raises(ValueError, match="window"):
        sliding_window_attention(q, q, q, window=-1)
