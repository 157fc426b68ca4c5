"""Linear's three products (forward, dx, dW) at a model's shapes, seqlab's against torch's, warm.

    python benchmarks/linear_products.py [--rows 768] [--layers 128x384,128x128,128x512,512x128]
                                         [--threads 1] [--rounds 5] [--calls 200]

The default is gpt-train's step: 12 × 64 = 768 rows through c_attn (128 → 384),
the attention's c_proj (128 → 128) and the MLP (128 → 512, 512 → 128). Each
layer's weight W is (out, in) as nn.Linear stores it; the three products are
the ones `seqlab.autograd.ops.matmul.Linear` makes: y = x·Wᵀ, dx = g·W and
dW = gᵀ·x, through seqlab's `mm` (MKL where seqlab uses it, else NumPy's BLAS)
and `torch.mm` on the same arrays and threads. Every product is checked
against torch's first. Rounds alternate the two libraries, each round timing
`--calls` calls of one and then of the other; a line gives the medians over
rounds (µs a product), seqlab's GFLOP/s and the ratio, and a last line the sums.
These are the products alone and warm in cache: inside a step they are slower
for both libraries (`benchmarks/gemm_in_step.py` times them there).
"""
from __future__ import annotations

import argparse

from _cli import positive_int, run_main


def layers_arg(text: str) -> list[tuple[int, int]]:
    """argparse type: IN x OUT pairs separated by commas ("128x384,512x128"), each size >= 1."""
    pairs = []
    for part in text.split(","):
        sizes = part.strip().lower().split("x")
        if len(sizes) != 2:
            raise argparse.ArgumentTypeError(f"expected IN x OUT pairs such as 128x384, got {part.strip()!r}")
        pairs.append((positive_int(sizes[0]), positive_int(sizes[1])))
    return pairs


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rows", type=positive_int, default=768, help="rows of x: batch × sequence (default 768)")
    p.add_argument("--layers", type=layers_arg, default=[(128, 384), (128, 128), (128, 512), (512, 128)],
                   help="the Linear layers as IN x OUT pairs (default gpt-train's: 128x384,128x128,128x512,512x128)")
    p.add_argument("--threads", type=positive_int, default=1, help="BLAS and torch threads (default 1)")
    p.add_argument("--rounds", type=positive_int, default=5, help="alternating rounds (default 5)")
    p.add_argument("--calls", type=positive_int, default=200, help="timed calls a round and library (default 200)")
    args = p.parse_args(argv)

    import statistics
    import time

    import numpy as np
    import torch

    from seqlab import mkl
    from seqlab.bench.harness import set_threads
    from seqlab.blas import openblas_kernels
    from seqlab.mkl import matmul as mm

    threads = set_threads(args.threads)
    rng = np.random.default_rng(0)

    def per_call_us(fn) -> float:
        fn()  # warm: the operands in cache, MKL's buffers allocated
        start = time.perf_counter()
        for _ in range(args.calls):
            fn()
        return (time.perf_counter() - start) / args.calls * 1e6

    blas = mkl.describe() if mkl.library() == "mkl" else (openblas_kernels() or "NumPy's BLAS")
    print(f"Linear's products at {args.rows} rows; {threads} thread(s); seqlab's products on {blas}; "
          f"median of {args.rounds} alternating rounds of {args.calls} calls")
    print("| layer (in → out) | product | seqlab µs | GFLOP/s | torch µs | seqlab / torch |")
    print("| --- | --- | --- | --- | --- | --- |")
    total_seqlab = total_torch = 0.0
    for fan_in, fan_out in args.layers:
        x = rng.standard_normal((args.rows, fan_in), dtype=np.float32)
        g = rng.standard_normal((args.rows, fan_out), dtype=np.float32)
        w = rng.standard_normal((fan_out, fan_in), dtype=np.float32)
        tx, tg, tw = (torch.from_numpy(a) for a in (x, g, w))
        cases = [("y = x·Wᵀ", lambda: mm(x, w.T), lambda: torch.mm(tx, tw.t())),
                 ("dx = g·W", lambda: mm(g, w), lambda: torch.mm(tg, tw)),
                 ("dW = gᵀ·x", lambda: mm(g.T, x), lambda: torch.mm(tg.t(), tx))]
        flops = 2.0 * args.rows * fan_in * fan_out
        for what, ours, theirs in cases:
            assert np.allclose(ours(), theirs().numpy(), rtol=1e-4, atol=1e-3), what
            rounds = [(per_call_us(ours), per_call_us(theirs)) for _ in range(args.rounds)]
            seqlab_us = statistics.median(r[0] for r in rounds)
            torch_us = statistics.median(r[1] for r in rounds)
            total_seqlab += seqlab_us
            total_torch += torch_us
            print(f"| {fan_in} → {fan_out} | {what} | {seqlab_us:.0f} | {flops / seqlab_us / 1e3:.0f} "
                  f"| {torch_us:.0f} | {seqlab_us / torch_us:.2f} |")
    print(f"| all | sum | {total_seqlab:.0f} | | {total_torch:.0f} | {total_seqlab / total_torch:.2f} |")


if __name__ == "__main__":
    run_main(main)
