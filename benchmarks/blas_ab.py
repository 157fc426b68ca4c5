"""One benchmark with seqlab's products on NumPy's BLAS, on MKL, and torch, alternated in one process.

    python benchmarks/blas_ab.py encoder-train --rounds 6
    python benchmarks/blas_ab.py bert-infer --data-dir ../shared/data

Builds the benchmark's models once (as `seqlab bench` does: same weights and
inputs, `--threads` for every library, default 1), then in each round times `--steps`
steps of seqlab on NumPy's BLAS (`seqlab.mkl.use("numpy")`), of seqlab on MKL
(`use("mkl")`) and of torch, after one untimed step each. Prints the median
wall time of each and the two ratios to torch. Alternating in one process
keeps a VM's drift out of the comparison, which two separate `seqlab bench`
runs do not. Needs the `mkl` package (`pip install 'seqlab[mkl]'`).
"""
from __future__ import annotations

import argparse
import statistics
import time

from _cli import check_data_dir, fail, positive_int, run_main

from seqlab import mkl
from seqlab.bench.harness import set_threads
from seqlab.bench.memory import MODULES

SIDES = ("numpy", "mkl", "torch")


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("name", choices=sorted(MODULES))
    p.add_argument("--rounds", type=positive_int, default=6, help="alternating rounds (default 6)")
    p.add_argument("--steps", type=positive_int, default=3, help="timed steps per side and round (default 3)")
    p.add_argument("--threads", type=positive_int, default=1, help="threads for every library (default 1)")
    p.add_argument("--data-dir", default=None, help="dataset folder (bert-infer's SST-2 sentences)")
    a = p.parse_args(argv)
    if a.name == "bert-infer":
        check_data_dir(a.data_dir)
    if mkl.mkl_path() is None:
        fail("MKL's library was not found: pip install 'seqlab[mkl]'")
    set_threads(a.threads)
    module = MODULES[a.name]
    built = module.build(data_dir=a.data_dir) if a.name == "bert-infer" else module.build()
    steps = {"numpy": built[0], "mkl": built[0], "torch": built[1]}
    times: dict[str, list[float]] = {side: [] for side in SIDES}
    try:
        for _ in range(a.rounds):
            for side in SIDES:
                if side != "torch":
                    mkl.use(side)
                    set_threads(a.threads)  # MKL, loaded anew by use(), takes the count too
                steps[side]()
                for _ in range(a.steps):
                    t0 = time.perf_counter()
                    steps[side]()
                    times[side].append(time.perf_counter() - t0)
    finally:
        mkl.use(None)
    med = {side: statistics.median(ts) * 1e3 for side, ts in times.items()}
    print(f"{a.name}, {a.threads} thread{'s' if a.threads > 1 else ''}, {a.rounds} rounds x {a.steps} steps, medians: seqlab on NumPy's BLAS "
          f"{med['numpy']:.1f} ms, seqlab on {mkl.describe()} {med['mkl']:.1f} ms, torch {med['torch']:.1f} ms; "
          f"seqlab / torch {med['numpy'] / med['torch']:.2f} (NumPy's BLAS), {med['mkl'] / med['torch']:.2f} (MKL)")


if __name__ == "__main__":
    run_main(main)
