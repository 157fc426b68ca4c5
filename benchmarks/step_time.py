"""seqlab's own step time for one benchmark: for comparing two versions of the code, not the libraries.

    PYTHONPATH=../old/src python benchmarks/step_time.py gpt-train --steps 30   # the old code
    python benchmarks/step_time.py gpt-train --steps 30                         # this checkout

Builds the benchmark's model as `seqlab bench` does (same weights and inputs),
runs a few warm-up steps, then prints the median and the range of `--steps`
steps' CPU time on one BLAS thread, the page faults a step took (memory the
OS had to hand the process afresh), and which seqlab it imported. CPU time of
the process moves less than wall time on a shared machine; alternate the two
versions several times and compare the medians (docs/results.md says how
large a difference has to be before it is claimed).

`--threads N` (N > 1) runs the step on N threads (NumPy's BLAS, MKL and the
kernels' parallel twins, as `seqlab bench --threads N`) and times wall time
instead: CPU time would count the threads' spinning as work. Only seqlab
runs in the process, so this isolates seqlab's own threads from torch's
(e.g. `NUMBA_THREADING_LAYER=omp` against `tbb`, set before Python starts).
"""
from __future__ import annotations

import argparse
import resource
import statistics
import time

from _cli import check_data_dir, run_main

import seqlab
from seqlab import kernels
from seqlab.bench.harness import set_threads
from seqlab.bench.memory import MODULES, build


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("name", choices=sorted(MODULES))
    p.add_argument("--steps", type=int, default=20, help="timed steps (default 20)")
    p.add_argument("--warmup", type=int, default=3, help="untimed steps first (default 3)")
    p.add_argument("--data-dir", default=None, help="dataset folder (bert-infer's SST-2 sentences)")
    p.add_argument("--threads", type=int, default=1,
                   help="threads for seqlab (default 1); more than one times wall time, not CPU time")
    a = p.parse_args(argv)
    if a.steps < 1 or a.warmup < 0:
        p.error("--steps must be >= 1 and --warmup >= 0")
    if a.threads < 1:
        p.error(f"--threads must be >= 1, got {a.threads}")
    if a.name == "bert-infer":
        check_data_dir(a.data_dir)
    set_threads(a.threads)
    clock, what = (time.process_time, "CPU") if a.threads == 1 else (time.perf_counter, "wall")
    built = build(a.name, a.data_dir)
    step = built[0]  # (seqlab step, torch step, ...): only seqlab's is timed
    for _ in range(a.warmup):
        step()
    times = []
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(a.steps):
        t0 = clock()
        step()
        times.append((clock() - t0) * 1e3)
    faults = (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults) / a.steps
    threads = "1 thread" if a.threads == 1 else f"{a.threads} threads, {kernels.describe()}"
    print(f"{a.name}: median {statistics.median(times):.1f} ms {what} per step "
          f"(min {min(times):.1f}, max {max(times):.1f}; {a.steps} steps, {threads}; {faults:,.0f} page faults "
          f"a step; seqlab from {seqlab.__file__})")


if __name__ == "__main__":
    run_main(main)
