"""attention-long: peak memory and time of attention forward + backward at T = 4,096 and 16,384.

Four implementations on the same q, k, v (B=1, H=1, head dim 64, float32,
no mask) and the same upstream gradient:

    seqlab plain       F.scaled_dot_product_attention (keeps the (T, T) weights)
    seqlab efficient   nn.memory_efficient_attention (query blocks of 512, key blocks of 128, online softmax)
    torch plain        softmax(q kᵀ / √d) v written out in torch ops
    torch SDPA         torch.nn.functional.scaled_dot_product_attention (its CPU flash kernel)

How memory is measured, the same way for both libraries: each (implementation,
T) runs in a fresh Python process. After the inputs exist and a small warm-up
has run, the process returns freed memory to the OS (glibc malloc_trim, so
the run cannot reuse pages that are already resident), resets its
resident-set high-water mark (Linux /proc/self/clear_refs, "5") and records
its resident set; after one forward +
backward the peak is VmHWM minus that baseline: every page the computation
touched beyond its inputs, whichever allocator it came from. For seqlab the
peak of Python's tracemalloc (which sees NumPy's allocations) is reported too.
Times are medians of the runs after that one. As in `seqlab.bench.memory`, the
processes run glibc's malloc on one arena (`ONE_ARENA`): memory a worker thread
freed in an arena of its own would stay resident through malloc_trim, and the
measured run would reuse it unseen (seqlab's efficient attention shares its
query blocks out between threads; torch's kernels run on OpenMP threads).
"""
from __future__ import annotations

import argparse
import gc
import json
import statistics
import time

from seqlab.bench.memory import ONE_ARENA, peak_above_kb, reset_peak, run_json, settled_rss_kb

NAME = "attention-long"
DESCRIPTION = "attention forward + backward at T = 4,096 and 16,384 (B 1, H 1, head dim 64): peak memory and time"
IMPLS = ("seqlab plain", "seqlab efficient", "torch plain", "torch SDPA")
# (query, key) block sizes: two 512 x 128 score blocks live in backward. With 512 x 256 the peak was 0.5 MiB
# higher and tied torch SDPA's on two threads (5.6 vs 5.5 MiB at T = 4,096); 256 x 256 cost 2-thread time
EFFICIENT_CHUNKS = (512, 128)


def _make_fn(impl: str, T: int, heads: int, dim: int, seed: int = 0):
    """A function running one forward + backward of `impl` on fixed inputs (they stay alive in it)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    q, k, v, g = (rng.standard_normal((1, heads, T, dim), dtype=np.float32) for _ in range(4))  # no temporaries
    if impl.startswith("seqlab"):
        import seqlab
        from seqlab import functional as F
        from seqlab.nn.efficient_attention import memory_efficient_attention

        tq, tk, tv = (seqlab.Tensor(a, requires_grad=True) for a in (q, k, v))
        def efficient(a, b, c):
            return memory_efficient_attention(a, b, c, chunk_size=EFFICIENT_CHUNKS[1], q_chunk_size=EFFICIENT_CHUNKS[0])

        attend = F.scaled_dot_product_attention if impl == "seqlab plain" else efficient

        def run():
            for t in (tq, tk, tv):
                t.grad = None
            attend(tq, tk, tv).backward(g)
    else:
        import torch

        tq, tk, tv = (torch.from_numpy(a).requires_grad_() for a in (q, k, v))
        tg = torch.from_numpy(g)
        scale = dim ** -0.5

        def plain(a, b, c):
            return torch.softmax(a @ b.transpose(-1, -2) * scale, dim=-1) @ c

        attend = plain if impl == "torch plain" else torch.nn.functional.scaled_dot_product_attention

        def run():
            for t in (tq, tk, tv):
                t.grad = None
            attend(tq, tk, tv).backward(tg)
    return run


def measure(impl: str, T: int, heads: int = 1, dim: int = 64, repeats: int = 2, threads: int | None = None) -> dict:
    """In this process: peak extra resident memory (bytes) and median seconds of forward + backward."""
    import tracemalloc

    from seqlab.bench.harness import set_threads

    n = set_threads(threads)
    _make_fn(impl, 256, heads, dim)()  # load kernels, fill the allocator's small pools
    run = _make_fn(impl, T, heads, dim)
    base = settled_rss_kb()
    can_reset = reset_peak()
    traced = impl.startswith("seqlab")
    if traced:
        tracemalloc.start()
    start = time.perf_counter()
    run()
    first = time.perf_counter() - start
    tm_peak = tracemalloc.get_traced_memory()[1] if traced else None
    if traced:
        tracemalloc.stop()
    peak_kb = peak_above_kb(base, can_reset)
    peak = None if peak_kb is None else peak_kb * 1024
    times = []
    for _ in range(repeats):
        gc.collect()
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return {"impl": impl, "T": T, "heads": heads, "dim": dim, "threads": n, "peak_rss_bytes": peak,
            "tracemalloc_peak_bytes": tm_peak, "seconds": statistics.median(times) if times else first,
            "first_seconds": first}


def measure_in_subprocess(impl: str, T: int, heads: int = 1, dim: int = 64, repeats: int = 2,
                          threads: int | None = None, timeout: float = 1800) -> dict:
    """`measure` in a fresh interpreter, so one measurement's memory cannot hide another's."""
    args = ["--impl", impl, "--T", str(T), "--heads", str(heads), "--dim", str(dim), "--repeats", str(repeats)]
    if threads is not None:
        args += ["--threads", str(threads)]
    r = run_json("seqlab.bench.attention_long", args, timeout, env=ONE_ARENA)
    return {"impl": impl, "T": T, **r} if "error" in r else r


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description="one attention-long measurement (prints JSON)")
    p.add_argument("--impl", choices=IMPLS, required=True)
    p.add_argument("--T", type=int, required=True)
    p.add_argument("--heads", type=int, default=1)
    p.add_argument("--dim", type=int, default=64)
    p.add_argument("--repeats", type=int, default=2)
    p.add_argument("--threads", type=int, default=None)
    a = p.parse_args(argv)
    print(json.dumps(measure(a.impl, a.T, a.heads, a.dim, a.repeats, a.threads)))


if __name__ == "__main__":
    main()
