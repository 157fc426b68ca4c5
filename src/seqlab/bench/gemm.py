"""gemm: the float32 matrix-multiply rate of seqlab's BLAS (and torch's), the ceiling of every benchmark.

seqlab's BLAS is NumPy's, or MKL's where `seqlab.mkl` sends products to it
(the `mkl` package installed): the products go through `seqlab.mkl.matmul`
as the models' do.

Shapes: encoder-train's three products (tokens 2,048 × d 256 against the
q/k/v, feed-forward-in and feed-forward-out matrices) and a square 1,024.
A rate is 2·m·k·n / seconds (multiply-adds count as two FLOPs).
"""
from __future__ import annotations

import numpy as np

from seqlab.mkl import matmul

NAME = "gemm"
DESCRIPTION = "float32 GEMM rate (GFLOP/s) of seqlab's BLAS and torch at encoder-train's shapes and 1,024³"

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
    return (lambda: matmul(a, b, out=out)), (lambda: torch.matmul(ta, tb, out=tout))


def numpy_rates(rounds: int = 9) -> tuple[float, float]:
    """The float32 GEMM rate of seqlab's BLAS (FLOP/s), by wall time and by process CPU time: the best over
    `SHAPES` and over `rounds` timings of 3 products each.

    The best timing, not the median: this is the ceiling a step's share is measured against, and on a
    shared machine a median can catch the other core busy (one 2-thread run measured half the 2-thread
    rate, which put encoder-train above 100% of it).
    """
    import time

    best_wall = best_cpu = 0.0
    for m, k, n in SHAPES:
        a, b = operands(m, k, n)
        out = np.empty((m, n), dtype=np.float32)
        matmul(a, b, out=out)
        walls, cpus = [], []
        for _ in range(rounds):
            w0, c0 = time.perf_counter(), time.process_time()
            for _ in range(3):
                matmul(a, b, out=out)
            walls.append((time.perf_counter() - w0) / 3)
            cpus.append((time.process_time() - c0) / 3)
        best_wall = max(best_wall, flops(m, k, n) / min(walls))
        best_cpu = max(best_cpu, flops(m, k, n) / min(cpus))
    return best_wall, best_cpu


def paired_fractions(step, step_flops: float, rounds: int = 7) -> list[float]:
    """Each round: one call of `step` (`step_flops` of products), then at once the best GEMM rate over `SHAPES`
    (one timing of 3 products each); the step's FLOP/s over that rate, one fraction a round.

    `numpy_rates` measures the rate once, after the benchmark: on a machine whose speed drifts from minute to
    minute, its best timing and the step's median come from different minutes. A round's two timings come
    from the same one, so the drift cancels in their fraction.
    """
    import time

    cases = []
    for m, k, n in SHAPES:
        a, b = operands(m, k, n)
        out = np.empty((m, n), dtype=np.float32)
        matmul(a, b, out=out)
        cases.append((a, b, out, flops(m, k, n)))
    fractions = []
    for _ in range(rounds):
        w0 = time.perf_counter()
        step()
        step_rate = step_flops / (time.perf_counter() - w0)
        best = 0.0
        for a, b, out, f in cases:
            w0 = time.perf_counter()
            for _ in range(3):
                matmul(a, b, out=out)
            best = max(best, 3 * f / (time.perf_counter() - w0))
        fractions.append(step_rate / best)
    return fractions
