"""Do seqlab's parallel kernels lose the second core to NumPy's BLAS right after a product?

OpenBLAS's worker threads keep spinning for a while after a threaded product
ends (2^OPENBLAS_THREAD_TIMEOUT cycles, 2^28 by default: ~0.1 s), waiting for
the next one. A parallel kernel that starts in that time (Numba's pool, here
the exact GELU's backward at encoder-train's feed-forward size) then shares a
core with a spinning thread. Each line: the median milliseconds of the
kernel on one thread and on two, alone and right after a two-thread GEMM.

    python benchmarks/blas_spin.py [--repeats 50]
    OPENBLAS_THREAD_TIMEOUT=4 python benchmarks/blas_spin.py   # workers sleep at once

Needs Numba and two cores. The figures are in docs/results.md ("Kernels for
GELU's backward, the softmax's max and the embedding's gradient").
"""
from __future__ import annotations

import argparse
import os
import statistics
import time

from _cli import fail, positive_int, run_main


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=positive_int, default=50, help="timed calls per figure (default 50)")
    args = p.parse_args(argv)

    import numpy as np

    from seqlab import kernels
    from seqlab.bench.harness import set_threads

    if kernels.library() != "numba":
        fail("needs Numba: pip install 'seqlab[numba]'")
    if set_threads(2) != 2:
        fail("needs two threads for NumPy's BLAS")
    rng = np.random.default_rng(0)
    x, g = (rng.standard_normal((2048, 1024)).astype(np.float32) for _ in range(2))
    y = kernels.gelu_forward(x)
    a, b = rng.standard_normal((2048, 256)).astype(np.float32), rng.standard_normal((256, 1024)).astype(np.float32)

    def median_ms(after_gemm: bool) -> float:
        kernels.gelu_backward(x, g, y=y)  # compiled, pool started
        times = []
        for _ in range(args.repeats):
            if after_gemm:
                a @ b  # two BLAS threads; the worker spins on when it is done
            start = time.perf_counter()
            kernels.gelu_backward(x, g, y=y)
            times.append(time.perf_counter() - start)
        return statistics.median(times) * 1e3

    time.sleep(0.5)  # the set-up's products are over and their workers asleep
    figures = {}
    for after_gemm in (False, True):  # every "alone" figure first: no product has run just before them
        for n in (1, 2):
            kernels.set_threads(n)
            figures[n, after_gemm] = median_ms(after_gemm)
    print(f"OPENBLAS_THREAD_TIMEOUT={os.environ.get('OPENBLAS_THREAD_TIMEOUT', 'unset')}; exact GELU backward, "
          f"(2048, 1024), median of {args.repeats} calls, ms")
    print("| kernel threads | alone | right after a 2-thread GEMM |")
    print("| --- | --- | --- |")
    for n in (1, 2):
        print(f"| {n} | {figures[n, False]:.2f} | {figures[n, True]:.2f} |")


if __name__ == "__main__":
    run_main(main)
