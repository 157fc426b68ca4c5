"""Would splitting NumPy's element-wise work over Python threads pay on this machine?

NumPy's ufunc loops release the GIL, so two threads can each run half of a
pass. This measures, before building anything on it, what that gives for the
passes seqlab's training step is made of: plain ufunc passes over a whole
2 M-element float32 array and over cache-sized blocks, the blocked exact-GELU
kernel, LayerNorm forward and dropout split by rows. Each line: median
milliseconds on one thread, on two, and the speed-up.

    python benchmarks/elementwise_threads.py [--repeats 100]

seqlab's BLAS is held to one thread throughout; the two threads are Python's.
The figures are in docs/results.md ("Where a training step's time goes").
"""
from __future__ import annotations

import argparse
import statistics
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from seqlab.autograd.ops.activation import normal_cdf_float32
from seqlab.autograd.ops.fused import LayerNorm
from seqlab.backend import CACHE_BLOCK
from seqlab.blas import blas_threads

from _cli import positive_int, run_main


def median_ms(fn, repeats: int = 100) -> float:
    fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def split_rows(pool: ThreadPoolExecutor, work, rows: int) -> None:
    """work(lo, hi) on two halves of range(rows): the second half on the pool, the first here."""
    half = rows // 2
    other = pool.submit(work, half, rows)
    work(0, half)
    other.result()


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=positive_int, default=100, help="timed calls per figure (default 100)")
    args = p.parse_args(argv)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2048, 1024)).astype(np.float32)      # one FF activation of encoder-train
    out = np.empty_like(x)
    flat_x, flat_out = x.reshape(-1), out.reshape(-1)
    n = flat_x.size
    h = rng.standard_normal((2048, 256)).astype(np.float32)       # one residual stream of encoder-train
    keep = rng.random(x.shape) >= 0.1
    scale = np.float32(1 / 0.9)
    cases = []

    for name, ufunc in (("tanh", np.tanh), ("exp", np.exp), ("sqrt", lambda a, out: np.sqrt(np.abs(a, out=out), out=out)),
                        ("multiply", lambda a, out: np.multiply(a, a, out=out))):
        for label, block in (("whole halves", n), (f"blocks of {CACHE_BLOCK:,}", CACHE_BLOCK)):
            def work(lo, hi, ufunc=ufunc, block=block):
                for i in range(lo, hi, block):
                    j = min(i + block, hi)
                    ufunc(flat_x[i:j], out=flat_out[i:j])
            cases.append((f"{name}, 2 M values, {label}", lambda w=work: w(0, n), lambda w=work: split_rows(pool, w, n)))

    def gelu(lo, hi):
        normal_cdf_float32(x[lo:hi], gelu_out=out[lo:hi], keep_cdf=False)
    cases.append(("exact GELU kernel (blocked), 2048 x 1024", lambda: gelu(0, 2048), lambda: split_rows(pool, gelu, 2048)))

    def layer_norm(lo, hi):
        LayerNorm().forward(h[lo:hi])
    cases.append(("LayerNorm forward, 2048 x 256", lambda: layer_norm(0, 2048),
                  lambda: split_rows(pool, layer_norm, 2048)))

    def dropout(lo, hi):
        np.multiply(x[lo:hi], keep[lo:hi], out=out[lo:hi])
        out[lo:hi] *= scale
    cases.append(("dropout, 2048 x 1024", lambda: dropout(0, 2048), lambda: split_rows(pool, dropout, 2048)))

    with blas_threads(1), ThreadPoolExecutor(1) as pool:
        print(f"{'pass':<48} {'1 thread ms':>12} {'2 threads ms':>13} {'speed-up':>9}")
        for name, one, two in cases:
            t1, t2 = median_ms(one, args.repeats), median_ms(two, args.repeats)
            print(f"{name:<48} {t1:>12.3f} {t2:>13.3f} {t1 / t2:>8.2f}x")


if __name__ == "__main__":
    run_main(main)
