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
"""
from __future__ import annotations

import argparse
import resource
import statistics
import time

from _cli import check_data_dir, run_main

import seqlab
from seqlab.bench.harness import set_threads
from seqlab.bench.memory import MODULES


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("name", choices=sorted(MODULES))
    p.add_argument("--steps", type=int, default=20, help="timed steps (default 20)")
    p.add_argument("--warmup", type=int, default=3, help="untimed steps first (default 3)")
    p.add_argument("--data-dir", default=None, help="dataset folder (bert-infer's SST-2 sentences)")
    a = p.parse_args(argv)
    if a.steps < 1 or a.warmup < 0:
        p.error("--steps must be >= 1 and --warmup >= 0")
    if a.name == "bert-infer":
        check_data_dir(a.data_dir)
    set_threads(1)
    module = MODULES[a.name]
    built = module.build(data_dir=a.data_dir) if a.name == "bert-infer" else module.build()
    step = built[0]  # (seqlab step, torch step, ...): only seqlab's is timed
    for _ in range(a.warmup):
        step()
    times = []
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(a.steps):
        t0 = time.process_time()
        step()
        times.append((time.process_time() - t0) * 1e3)
    faults = (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults) / a.steps
    print(f"{a.name}: median {statistics.median(times):.1f} ms CPU per step "
          f"(min {min(times):.1f}, max {max(times):.1f}; {a.steps} steps, 1 thread; {faults:,.0f} page faults "
          f"a step; seqlab from {seqlab.__file__})")


if __name__ == "__main__":
    run_main(main)
