"""The six matrix products of attention's forward and backward, as seqlab lays them out, against torch.

    python benchmarks/attention_products.py [--shape 32,4,64,64] [--threads 1] [--repeats 100] [--small-batches numpy]

`--shape` is B,H,T,D (default: encoder-train's attention). `--small-batches
numpy` keeps every small product on NumPy where MKL is in use (see
`seqlab.mkl.BATCH_SMALL_PRODUCTS`). q, k, v and the
output's gradient are (B, H, T, D) views of (B, T, H, D) arrays, the heads
interleaved as `nn.MultiheadAttention` splits them; the (B, H, T, T) weights
are contiguous; outputs that merge heads again are written interleaved, as
`autograd/ops/fused.py` writes them. Each line: the median microseconds of
the product through seqlab's `mm` (NumPy's BLAS, one product per head) and
of torch.matmul on the same arrays and threads, with seqlab's GFLOP/s. The
layout column says which operand BLAS reads transposed (N = as stored,
T = transposed). A last line times q·kᵀ with kᵀ first copied into a
contiguous (B, H, D, T) array, so the product reads both operands as stored.
The figures are in docs/results.md ("Where encoder-train's step goes").
"""
from __future__ import annotations

import argparse

from _cli import positive_int, run_main


def shape_arg(text: str) -> tuple[int, int, int, int]:
    """argparse type: B,H,T,D, four integers >= 1."""
    parts = text.split(",")
    if len(parts) != 4:
        raise argparse.ArgumentTypeError(f"expected B,H,T,D (four integers), got {text!r}")
    return tuple(positive_int(p) for p in parts)


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--shape", type=shape_arg, default=(32, 4, 64, 64), help="B,H,T,D (default 32,4,64,64)")
    p.add_argument("--threads", type=positive_int, default=1, help="BLAS and torch threads (default 1)")
    p.add_argument("--repeats", type=positive_int, default=100, help="timed calls per figure (default 100)")
    p.add_argument("--small-batches", choices=("mkl", "numpy"), default="mkl",
                   help="with MKL in use: batches of small products where seqlab.mkl.matmul chooses MKL's "
                        "batched GEMM (mkl, the default), or always NumPy, one product per matrix")
    args = p.parse_args(argv)

    import numpy as np
    import torch
    from elementwise_threads import median_ms

    from seqlab import mkl
    from seqlab.bench.harness import set_threads
    from seqlab.blas import openblas_kernels
    from seqlab.mkl import matmul as mm

    mkl.BATCH_SMALL_PRODUCTS = args.small_batches == "mkl"
    threads = set_threads(args.threads)
    B, H, T, D = args.shape
    rng = np.random.default_rng(0)

    def heads():  # (B, H, T, D) view of a (B, T, H, D) array
        return rng.standard_normal((B, T, H, D)).astype(np.float32).swapaxes(1, 2)

    q, k, v, g = heads(), heads(), heads(), heads()
    w = rng.random((B, H, T, T)).astype(np.float32)  # weights, or their gradient
    scores = np.empty((B, H, T, T), np.float32)
    merged = np.empty((B, T, H, D), np.float32).swapaxes(1, 2)  # written as the heads interleave
    k_t = np.empty((B, H, D, T), np.float32)

    def copy_then_nn():
        np.copyto(k_t, k.swapaxes(-1, -2))
        return mm(q, k_t, out=scores)

    cases = [  # (what, layout, seqlab call, torch operands, output)
        ("forward  scores = q·kᵀ", "N·T", lambda: mm(q, k.swapaxes(-1, -2), out=scores), (q, k.swapaxes(-1, -2)), scores),
        ("forward  out = P·v", "N·N", lambda: mm(w, v, out=merged), (w, v), merged),
        ("backward dv = Pᵀ·g", "T·N", lambda: mm(w.swapaxes(-1, -2), g, out=merged), (w.swapaxes(-1, -2), g), merged),
        ("backward dP = g·vᵀ", "N·T", lambda: mm(g, v.swapaxes(-1, -2), out=scores), (g, v.swapaxes(-1, -2)), scores),
        ("backward dq = dS·k", "N·N", lambda: mm(w, k, out=merged), (w, k), merged),
        ("backward dk = dSᵀ·q", "T·N", lambda: mm(w.swapaxes(-1, -2), q, out=merged), (w.swapaxes(-1, -2), q), merged),
        ("forward  kᵀ copied, then q·kᵀ", "N·N", copy_then_nn, None, scores),
    ]
    blas = f"{mkl.describe()}, small batches on {args.small_batches}" if mkl.library() == "mkl" else (
        openblas_kernels() or "NumPy BLAS")
    print(f"attention products at B,H,T,D = {B},{H},{T},{D}; {threads} thread(s); {blas}; "
          f"median of {args.repeats} calls")
    print("| product | layout | seqlab µs | GFLOP/s | torch µs | seqlab / torch |")
    print("| --- | --- | --- | --- | --- | --- |")
    flops = 2.0 * B * H * T * T * D
    for what, layout, ours, operands, out in cases:
        seqlab_us = median_ms(ours, args.repeats) * 1e3
        if operands is None:
            print(f"| {what} | {layout} | {seqlab_us:.0f} | {flops / seqlab_us / 1e3:.0f} | | |")
            continue
        ta, tb = (torch.from_numpy(x) for x in operands)
        tout = torch.empty(out.shape)
        assert np.allclose(out, torch.matmul(ta, tb).numpy(), rtol=1e-4, atol=1e-3), what
        torch_us = median_ms(lambda: torch.matmul(ta, tb, out=tout), args.repeats) * 1e3
        print(f"| {what} | {layout} | {seqlab_us:.0f} | {flops / seqlab_us / 1e3:.0f} | {torch_us:.0f} "
              f"| {seqlab_us / torch_us:.2f} |")


if __name__ == "__main__":
    run_main(main)
