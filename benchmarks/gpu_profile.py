"""Where a GPU training step's time goes: seqlab on CuPy and torch on CUDA, kernel by kernel.

    PYTHONPATH=src python3 benchmarks/gpu_profile.py [--size large] [--steps 2] [NAME ...]

For each benchmark (encoder-train, gpt-train) it builds both models as `seqlab bench --device cuda` does
(same weights and inputs), runs two untimed steps of each, then:

- the wall time of one synchronized step of each library;
- torch.profiler (CUPTI) over `--steps` steps of each: CUPTI records every kernel the process launches,
  CuPy's and cuBLAS's as well as torch's, so the table lists seqlab's kernels by name with their GPU time;
- the sum of the kernels' GPU time per step against the wall time: where the sum is near the wall time the
  step is bound by the GPU's work, where it is far below, by the launches (Python and CuPy overhead).

It needs a GPU, CuPy and a CUDA build of torch; benchmarks/gpu.sh runs it last, at the large sizes.
"""
from __future__ import annotations

import argparse
import time


def kernel_table(prof, steps: int, top: int) -> tuple[str, float]:
    """(the `top` kernels by GPU time per step, as text; the GPU time of all kernels per step in ms)."""
    totals: dict[str, list] = {}
    for e in prof.events():
        if str(getattr(e, "device_type", "")).endswith("CUDA"):
            t = e.device_time_total if hasattr(e, "device_time_total") else e.cuda_time_total
            row = totals.setdefault(e.name, [0, 0.0])
            row[0] += 1
            row[1] += t
    total_ms = sum(r[1] for r in totals.values()) / 1000 / steps or float("nan")
    lines = [f"{'ms/step':>8} {'share':>6} {'calls':>6}  kernel"]
    for name, (calls, us) in sorted(totals.items(), key=lambda kv: -kv[1][1])[:top]:
        ms = us / 1000 / steps
        lines.append(f"{ms:8.2f} {ms / total_ms:6.1%} {calls // steps:6d}  {name[:110]}")
    return "\n".join(lines), total_ms


def gemm_rates(shapes=((8192, 768, 3072), (8192, 3072, 768), (8192, 768, 2304), (8192, 768, 50304),
                        (768, 8192, 3072))) -> None:
    """float32 products (m, k) @ (k, n) on CuPy and torch, TFLOP/s each (the median of 10 after 3 warm-ups)."""
    import statistics

    import cupy
    import torch

    def rate(mm, sync, a, b, m, k, n):
        times = []
        for i in range(13):
            sync()
            t0 = time.perf_counter()
            mm(a, b)
            sync()
            if i >= 3:
                times.append(time.perf_counter() - t0)
        return 2 * m * k * n / statistics.median(times) / 1e12

    print("float32 products, TFLOP/s: (m, k, n)  cupy  torch")
    for m, k, n in shapes:
        a, b = cupy.random.rand(m, k, dtype=cupy.float32), cupy.random.rand(k, n, dtype=cupy.float32)
        ta, tb = torch.as_tensor(a, device="cuda"), torch.as_tensor(b, device="cuda")
        c = rate(cupy.matmul, cupy.cuda.Device().synchronize, a, b, m, k, n)
        t = rate(torch.mm, torch.cuda.synchronize, ta, tb, m, k, n)
        ct = rate(cupy.matmul, cupy.cuda.Device().synchronize, a.T.copy().T, b, m, k, n)
        print(f"({m}, {k}, {n})  {c:6.1f}  {t:6.1f}   cupy, a transposed: {ct:6.1f}", flush=True)


def main() -> None:
    import torch

    from seqlab.bench import encoder_train, gpt_train
    from seqlab.bench.device import cuda_problem, release, syncs

    mods = {"gpt-train": gpt_train, "encoder-train": encoder_train}
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("names", nargs="*", help=f"any of {', '.join(mods)} (default: both)")
    ap.add_argument("--size", default="large", choices=list(gpt_train.SIZES))
    ap.add_argument("--steps", type=int, default=2)
    ap.add_argument("--top", type=int, default=30)
    ap.add_argument("--gemm", action="store_true", help="first, CuPy's and torch's float32 product rates")
    args = ap.parse_args()
    unknown = [n for n in args.names if n not in mods]
    if unknown:
        ap.error(f"unknown benchmark {unknown[0]!r}; choose from {', '.join(mods)}")
    if cuda_problem():
        ap.error(cuda_problem())  # no GPU, CuPy or CUDA torch here: one line, not a traceback
    if args.gemm:
        gemm_rates()
    seqlab_sync, torch_sync = syncs("cuda")
    for name in args.names or list(mods):
        mod = mods[name]
        seqlab_step, torch_step, *_ = mod.build(mod.SIZES[args.size], device="cuda")
        for label, step, sync in (("seqlab", seqlab_step, seqlab_sync), ("torch", torch_step, torch_sync)):
            for _ in range(2):
                step()
            sync()
            t0 = time.perf_counter()
            step()
            sync()
            wall = (time.perf_counter() - t0) * 1000
            with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU,
                                                    torch.profiler.ProfilerActivity.CUDA]) as prof:
                for _ in range(args.steps):
                    step()
                sync()
            table, gpu_ms = kernel_table(prof, args.steps, args.top)
            print(f"\n===== {name} ({args.size}), {label}: wall {wall:.1f} ms/step, kernels {gpu_ms:.1f} ms/step "
                  f"({gpu_ms / wall:.0%} of the wall time)")
            print(table, flush=True)
        del seqlab_step, torch_step
        release()  # CuPy's pool and torch's cache back, before the next model


if __name__ == "__main__":
    main()
