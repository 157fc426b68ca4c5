"""Attention a head at a time (compiled) against the batched products, op alone, at a few shapes.

    python benchmarks/short_attention.py                      # gpt-train's, MiniLM's, encoder-train's, longer
    python benchmarks/short_attention.py --threads 2          # the same, the heads shared between two threads
    python benchmarks/short_attention.py --shape 12,4,64,32 --mask causal --repeats 50
    python benchmarks/short_attention.py --cold               # inputs out of cache, as inside a step

Times `F.attention_qkv` forward, and forward + backward, on `--threads` threads, with
`seqlab.kernels.SHORT_ATTENTION` off (batched products and the softmax kernel)
and on (`kernels.short_attention_forward` / `_backward`), alternated in
rounds; medians in ms and the ratio on / off. The input stays in cache
between calls; a step's attention reads it from memory: `--cold` sweeps
64 MiB through the caches before each call (and between forward and
backward), and `python benchmarks/engine_ab.py gpt-train --switch
short-attention` times the two inside the step.
"""
from __future__ import annotations

import argparse
import statistics
import time

from _cli import fail, positive_int, run_main

# (B, H, T, D, mask, dropout): gpt-train's heads, MiniLM's on 32 SST-2 sentences padded to the longest (the
# row with no mask: their whole lengths), encoder-train's (padded tails, lengths 16..64, dropout 0.1: Tk = D,
# so backward keeps the weights), longer causal ones
DEFAULT_SHAPES = [(12, 4, 64, 32, "causal", 0.0), (32, 12, 44, 32, "none", 0.0), (32, 4, 64, 64, "padding", 0.1),
                  (8, 4, 128, 32, "causal", 0.0), (4, 6, 256, 64, "causal", 0.0)]
MASKS = ("none", "causal", "padding")


def _shape(text: str) -> tuple[int, int, int, int]:
    try:
        parts = tuple(int(p) for p in text.split(","))
    except ValueError:
        parts = ()
    if len(parts) != 4 or min(parts) < 1:
        raise argparse.ArgumentTypeError(f"expected B,H,T,D (four positive integers), got {text!r}")
    return parts


def _probability(text: str) -> float:
    try:
        p = float(text)
    except ValueError:
        p = -1.0
    if not 0.0 <= p < 1.0:
        raise argparse.ArgumentTypeError(f"expected a dropout probability in [0, 1), got {text!r}")
    return p


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--shape", type=_shape, help="B,H,T,D (default: four shapes)")
    p.add_argument("--mask", choices=MASKS, default="none",
                   help="with --shape: none, causal, or padding (each sequence's tail hidden, lengths T/4..T)")
    p.add_argument("--dropout", type=_probability, default=0.0, help="with --shape: dropout on the weights (default 0)")
    p.add_argument("--threads", type=positive_int, default=1, help="BLAS and kernel threads (default 1)")
    p.add_argument("--repeats", type=positive_int, default=20, help="calls per side and round (default 20)")
    p.add_argument("--rounds", type=positive_int, default=5, help="alternated rounds (default 5)")
    p.add_argument("--cold", action="store_true",
                   help="64 MiB swept through the caches before each timed call, and again between forward and "
                        "backward (as in a step, where attention's inputs come from memory); each call timed alone")
    a = p.parse_args(argv)

    import numpy as np

    import seqlab
    from seqlab import functional as F
    from seqlab import kernels
    from seqlab.bench.harness import set_threads

    if kernels.library() != "numba":
        fail("needs Numba: pip install 'seqlab[numba]'")
    set_threads(a.threads)
    shapes = [a.shape + (a.mask, a.dropout)] if a.shape else DEFAULT_SHAPES
    junk = np.ones(16 << 20, np.float32)  # 64 MiB, more than the caches hold

    def sweep():
        junk[::16] += 1.0  # one write a cache line: every line of it passes through the caches
    print("| B, H, T, D | mask | forward off / on ms | ratio | forward + backward off / on ms | ratio |")
    print("|---|---|---|---|---|---|")
    for B, H, T, D, kind, p_drop in shapes:
        rng = np.random.default_rng(0)
        x = seqlab.tensor(rng.standard_normal((B, T, 3 * H * D)).astype(np.float32), requires_grad=True)
        g = seqlab.tensor(rng.standard_normal((B, H, T, D)).astype(np.float32))
        mask = None  # True = may attend (torch SDPA's bool mask)
        if kind == "padding":
            lengths = rng.integers(max(1, T // 4), T + 1, B)
            lengths[0] = T
            mask = (np.arange(T) < lengths[:, None])[:, None, None, :]
        causal = kind == "causal"
        label = kind + (f", dropout {p_drop:g}" if p_drop else "")
        block = np.triu(np.ones((T, T), bool), 1) if causal else None if mask is None else ~mask  # True = hidden
        keep = np.ones((B, H, T, T), bool) if p_drop else None
        if kernels.short_attention_plan(*(np.empty((B, H, T, D), np.float32) for _ in range(3)), None, block,
                                        keep) is None:
            print(f"| {B}, {H}, {T}, {D} | {label} | (the compiled path does not take this shape) | | | |")
            continue

        def forward():
            with seqlab.no_grad():
                F.attention_qkv(x, H, attn_mask=mask, dropout_p=p_drop, is_causal=causal, need_weights=False)

        def both():
            out, _ = F.attention_qkv(x, H, attn_mask=mask, dropout_p=p_drop, is_causal=causal, need_weights=False)
            (out * g).sum().backward()
            x.grad = None

        def cold_forward():
            sweep()
            t0 = time.perf_counter()
            forward()
            return time.perf_counter() - t0

        def cold_both():  # the forward's time and the backward's, each on memory swept out of the caches
            sweep()
            t0 = time.perf_counter()
            out, _ = F.attention_qkv(x, H, attn_mask=mask, dropout_p=p_drop, is_causal=causal, need_weights=False)
            spent = time.perf_counter() - t0
            loss = (out * g).sum()
            sweep()
            t0 = time.perf_counter()
            loss.backward()
            spent += time.perf_counter() - t0
            x.grad = None
            return spent

        times = {(f, on): [] for f in ("forward", "both") for on in (False, True)}
        for _ in range(a.rounds):
            for on in (False, True):
                kernels.SHORT_ATTENTION = on
                for name, fn, cold in (("forward", forward, cold_forward), ("both", both, cold_both)):
                    fn()
                    if a.cold:
                        spent = sum(cold() for _ in range(a.repeats))
                    else:
                        t0 = time.perf_counter()
                        for _ in range(a.repeats):
                            fn()
                        spent = time.perf_counter() - t0
                    times[name, on].append(spent / a.repeats * 1e3)
        kernels.SHORT_ATTENTION = True
        med = {key: statistics.median(v) for key, v in times.items()}
        print(f"| {B}, {H}, {T}, {D} | {label} | {med['forward', False]:.2f} / {med['forward', True]:.2f} | "
              f"{med['forward', True] / med['forward', False]:.2f} | {med['both', False]:.2f} / "
              f"{med['both', True]:.2f} | {med['both', True] / med['both', False]:.2f} |")

if __name__ == "__main__":
    run_main(main)
