"""gemm: the float32 matrix-multiply rate of NumPy's BLAS (and torch's), the ceiling of every benchmark.

Shapes: encoder-train's three products (tokens 2,048 × d 256 against the
q/k/v, feed-forward-in and feed-forward-out matrices) and a square 1,024.
A rate is 2·m·k·n / seconds (multiply-adds count as two FLOPs).
"""
from __future__ import annotations

import numpy as np

NAME = "gemm"
DESCRIPTION = "float32 GEMM rate (GFLOP/s) of NumPy's BLAS and torch at encoder-train's shapes and 1,024³"

SHAPES = ((2048, 256, 768), (2048, 256, 1024), (2048, 1024, 256), (1024, 1024, 1024))  # (m, k, n)


def operands(m: int, k: int, n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.standard_normal((m, k)).astype(np.float32), rng.standard_normal((k, n)).astype(np.float32)


def flops(m: int, k: int, n: int) -> float:
    return 2.0 * m * k * n


def build(m: int, k: int, n: int):
    """(numpy fn, torch fn) computing the same (m, k) @ (k, n) product into a preallocated output."""
    import torch

    a, b = operands(m, k, n)
    out = np.empty((m, n), dtype=np.float32)
    ta, tb = torch.from_numpy(a), torch.from_numpy(b)
    tout = torch.empty(m, n)
    return (lambda: np.matmul(a, b, out=out)), (lambda: torch.matmul(ta, tb, out=tout))


def numpy_rate(rounds: int = 5) -> float:
    """The best NumPy float32 GEMM rate (FLOP/s) over `SHAPES`, each the median of `rounds` timings."""
    import statistics
    import time

    best = 0.0
    for m, k, n in SHAPES:
        a, b = operands(m, k, n)
        out = np.empty((m, n), dtype=np.float32)
        np.matmul(a, b, out=out)
        times = []
        for _ in range(rounds):
            start = time.perf_counter()
            for _ in range(3):
                np.matmul(a, b, out=out)
            times.append((time.perf_counter() - start) / 3)
        best = max(best, flops(m, k, n) / statistics.median(times))
    return best
