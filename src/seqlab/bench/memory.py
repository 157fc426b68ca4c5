"""Peak memory of a benchmark's step, seqlab and torch each measured in a fresh Python process.

The model benchmarks (encoder-train, gpt-train, bert-infer, gpt-generate) are
timed in one process that holds both libraries; their memory is measured
apart, one process per (benchmark, library), the same way for both:

1. build both models and inputs with the benchmark's own `build` (the same
   weights as the timed run), hand freed memory back to the OS and note the
   resident set;
2. run the library's step once (a training step's first also allocates the
   optimizer's moments; one-time imports and kernel set-up happen here too):
   `first_peak` is the high-water mark above step 1;
3. hand freed memory back again (glibc malloc_trim, so a step cannot reuse
   pages already resident and look smaller than it is), note the resident
   set, reset the high-water mark (Linux /proc/self/clear_refs, "5"), run
   `steps` more steps: `step_peak` is the high-water mark above that, every
   page a steady-state step touches beyond the weights, gradients and
   optimizer state it starts from. This is the figure the issue's target
   ("peak memory no higher than PyTorch's") is read against.

`compare` repeats this in three processes per library and reports medians:
where the allocator puts things moves a process's peak by about 1 MiB. The
processes run glibc's malloc on one arena (`ONE_ARENA`), so memory that other
threads used is handed back before step 3 too; `python -m seqlab.bench.memory`
run by hand measures in such a process as well.

Linux only (the high-water mark comes from /proc); elsewhere the peaks are None.
"""
from __future__ import annotations

import argparse
import gc
import json
import os
import subprocess
import sys

from seqlab.bench import bert_infer, encoder_train, gpt_generate, gpt_train

MODULES = {m.NAME: m for m in (encoder_train, gpt_train, bert_infer, gpt_generate)}  # each: build() -> (seqlab fn, torch fn, ...)


def build(name: str, data_dir=None) -> tuple:
    """`MODULES[name].build()`: (seqlab step, torch step, ...); bert-infer reads its sentences from `data_dir`."""
    return MODULES[name].build(data_dir=data_dir) if name == "bert-infer" else MODULES[name].build()
SIDES = ("seqlab", "torch")
# glibc's malloc on one arena in the measuring processes, both libraries. A thread's allocations otherwise go
# to an arena of its own, which malloc_trim does not hand back: memory that threads (seqlab's batch split,
# seqlab.batch_threads) used in one step stays resident, the next step reuses it, and the high-water mark
# above the settled resident set missed it (bert-infer on two threads read 7.7 MiB where one arena reads
# 33.7, and tracemalloc 24 MiB of arrays; the unsplit forward reads 34.5 either way).
ONE_ARENA = {"MALLOC_ARENA_MAX": "1"}


def status_kb(field: str) -> int | None:
    """A field of /proc/self/status in KiB ("VmRSS", "VmHWM"), or None where there is none."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def release_free_memory() -> None:
    """Hand memory freed so far back to the OS (glibc malloc_trim), so the measured run cannot
    reuse pages that are already resident and look smaller than it is."""
    import ctypes

    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # not glibc
        pass


def reset_peak() -> bool:
    """Reset this process's resident-set high-water mark (VmHWM); False where Linux does not allow it."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def settled_rss_kb() -> int | None:
    """The resident set after a garbage collection and `release_free_memory`."""
    gc.collect()
    release_free_memory()
    return status_kb("VmRSS")


def peak_above_kb(base_kb: int | None, can_reset: bool) -> int | None:
    """VmHWM minus `base_kb` (KiB), or None if either is unknown."""
    hwm = status_kb("VmHWM")
    return hwm - base_kb if can_reset and hwm is not None and base_kb is not None else None


def run_json(module: str, args: list[str], timeout: float, env: dict | None = None) -> dict:
    """`python -c "from MODULE import main; main()" ARGS` in a fresh interpreter (a fixed argument
    list, no shell), with `env` added to this process's environment; its last stdout line parsed as
    JSON, or {"error": last stderr line}."""
    cmd = [sys.executable, "-c", f"from {module} import main; main()", *args]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env={**os.environ, **(env or {})})
    if proc.returncode != 0:
        return {"error": (proc.stderr.strip().splitlines() or ["no output"])[-1]}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def measure(name: str, side: str, steps: int = 2, threads: int | None = None, data_dir=None) -> dict:
    """In this process: peak memory (bytes) of `side`'s first step and of `steps` later ones (module doc)."""
    from seqlab.bench.harness import set_threads

    if name not in MODULES or side not in SIDES:
        raise ValueError(f"memory: benchmark one of {', '.join(MODULES)} and side one of {', '.join(SIDES)}, "
                         f"got {name!r}, {side!r}")
    n = set_threads(threads)
    built = build(name, data_dir)
    step = built[0] if side == "seqlab" else built[1]
    del built  # the step's closure holds its model and inputs; the other library's are freed before the baseline
    base = settled_rss_kb()
    ok = reset_peak()
    step()
    first = peak_above_kb(base, ok)
    warm = settled_rss_kb()
    ok = reset_peak()
    for _ in range(steps):
        step()
    later = peak_above_kb(warm, ok)
    kib = (lambda v: None if v is None else v * 1024)
    return {"name": name, "side": side, "steps": steps, "threads": n, "built_rss_bytes": kib(base),
            "state_bytes": kib(None if warm is None or base is None else warm - base),
            "first_peak_bytes": kib(first), "step_peak_bytes": kib(later)}


def measure_in_subprocess(name: str, side: str, steps: int = 2, threads: int | None = None, data_dir=None,
                          timeout: float = 900) -> dict:
    """`measure` in a fresh interpreter, so neither library's memory can hide the other's."""
    args = ["--name", name, "--side", side, "--steps", str(steps)]
    if threads is not None:
        args += ["--threads", str(threads)]
    if data_dir is not None:
        args += ["--data-dir", str(data_dir)]
    r = run_json("seqlab.bench.memory", args, timeout, env=ONE_ARENA)
    return {"name": name, "side": side, **r} if "error" in r else r


def compare(name: str, threads: int | None = None, steps: int = 2, data_dir=None, repeats: int = 3) -> dict:
    """{"seqlab": ..., "torch": ...}: `measure` in `repeats` fresh processes per library (alternating),
    the peaks their medians (a process's layout moves them by ~1 MiB), every run's in "runs"."""
    runs: dict[str, list] = {side: [] for side in SIDES}
    for _ in range(repeats):
        for side in SIDES:
            runs[side].append(measure_in_subprocess(name, side, steps, threads, data_dir))
    out = {}
    for side, rs in runs.items():
        failed = [r for r in rs if "error" in r]
        if failed:
            out[side] = failed[0]
            continue
        med = {key: _median([r[key] for r in rs]) for key in ("built_rss_bytes", "state_bytes", "first_peak_bytes",
                                                              "step_peak_bytes")}
        out[side] = {**rs[0], **med, "runs": rs}
    return out


def _median(values: list):
    """The median of the known values (None if none is known)."""
    known = sorted(v for v in values if v is not None)
    return known[len(known) // 2] if known else None


def mib(b: int | None) -> str:
    return "n/a" if b is None else f"{b / 2 ** 20:.1f}"


def note(mem: dict) -> str:
    """One line for the benchmark's notes: both libraries' step peaks (and first-step peaks)."""
    s, t = mem.get("seqlab", {}), mem.get("torch", {})
    if "error" in s or "error" in t:
        return f"peak memory: not measured ({s.get('error') or t.get('error')})"
    return (f"peak memory of a step above the weights, gradients and optimizer state it starts from (fresh process "
            f"per library, median of 3, see seqlab/bench/memory.py): seqlab {mib(s['step_peak_bytes'])} MiB, torch "
            f"{mib(t['step_peak_bytes'])} MiB; the first step, with the optimizer's state and one-time set-up: "
            f"seqlab {mib(s['first_peak_bytes'])} MiB, torch {mib(t['first_peak_bytes'])} MiB")


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description="one step-memory measurement (prints JSON)")
    p.add_argument("--name", choices=tuple(MODULES), required=True)
    p.add_argument("--side", choices=SIDES, required=True)
    p.add_argument("--steps", type=int, default=2)
    p.add_argument("--threads", type=int, default=None)
    p.add_argument("--data-dir", default=None)
    a = p.parse_args(argv)
    if os.environ.get("MALLOC_ARENA_MAX") != ONE_ARENA["MALLOC_ARENA_MAX"]:  # run by hand: measured as `compare`
        print(json.dumps(measure_in_subprocess(a.name, a.side, a.steps, a.threads, a.data_dir)))  # does it
        return
    print(json.dumps(measure(a.name, a.side, a.steps, a.threads, a.data_dir)))


if __name__ == "__main__":
    main()
