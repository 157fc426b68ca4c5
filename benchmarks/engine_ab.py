"""One benchmark with one of seqlab's engine switches off and on, and torch, alternated in one process.

    python benchmarks/engine_ab.py encoder-train --rounds 6                  # NumPy's BLAS vs MKL
    python benchmarks/engine_ab.py gpt-train --switch kernels                # NumPy's row passes vs Numba's
    python benchmarks/engine_ab.py bert-infer --data-dir ../shared/data
    python benchmarks/engine_ab.py encoder-train --switch fused-ff           # the feed-forward's 3 ops vs 1
    python benchmarks/engine_ab.py gpt-train --threads 2 --switch small-batches  # attention's products
    python benchmarks/engine_ab.py gpt-train --threads 2 --switch min-parallel   # parallel kernels from 2^15 / 2^19
    python benchmarks/engine_ab.py bert-infer --threads 2 --switch sums --data-dir ../shared/data  # adds, biases
    python benchmarks/engine_ab.py gpt-train --switch short-attention        # attention a head at a time
    python benchmarks/engine_ab.py encoder-train --threads 2 --switch gemm-split  # products shared out by the pool

Builds the benchmark's models once (as `seqlab bench` does: same weights and
inputs, `--threads` for every library, default 1), then in each round times
`--steps` steps of seqlab with the switch off, with it on, and of torch, after
one untimed step each (the two seqlab sides swap places every other round).
`--switch blas` (the default) moves seqlab's products from NumPy's BLAS to MKL
(`seqlab.mkl.use`; needs `pip install 'seqlab[mkl]'`);
`--switch kernels` moves LayerNorm, the softmax, GELU, dropout (and its masks)
and the Adam update from NumPy to the compiled kernels (`seqlab.kernels.use`; needs `pip install
'seqlab[numba]'`); `--switch fused-ff` runs a feed-forward's bias, activation and dropout as
three ops or as one (`F.bias_act_dropout`, through `seqlab.nn.linear.FUSE_FEED_FORWARD`);
`--switch small-batches` runs batches of small products (attention's, per head) on NumPy, one BLAS call
per matrix, or on MKL's batched GEMM where `seqlab.mkl.matmul` chooses it (needs MKL);
`--switch min-parallel` hands arrays to the kernels' parallel twins from 2^15 values or from 2^19
(sets `seqlab.kernels.MIN_PARALLEL`; without it `kernels.min_parallel()` is 2^15 on OpenMP and on
Numba's TBB layer where the pool runs the products too (beside NumPy's OpenBLAS), else 2^19; matters on
two threads or more); `--switch sums` runs a model's residual adds and
Linear's bias on NumPy (one thread) or on the kernels' parallel twins (`seqlab.kernels.PARALLEL_SUMS`;
matters on two threads or more); `--switch short-attention` runs attention by batched products and the
softmax kernel, or a head at a time in one compiled pass (`seqlab.kernels.SHORT_ATTENTION`);
`--switch gemm-split` runs large 2-D products on OpenBLAS's own threads or shares them out by the
kernels' pool, OpenBLAS on one thread in each part (`seqlab.kernels.GEMM_SPLIT`; matters on two threads
or more beside NumPy's OpenBLAS). Prints the
median wall time of each and the two ratios to
torch, then the switch's effect paired by round: the median of each round's on − off difference and
in how many rounds "on" was faster. Alternating in one process keeps a VM's drift out of the comparison,
which two separate `seqlab bench` runs do not.
"""
from __future__ import annotations

import argparse
import statistics
import time

from _cli import check_data_dir, fail, positive_int, run_main

from seqlab import kernels, mkl
from seqlab.bench.harness import set_threads
from seqlab.bench.memory import MODULES, build
from seqlab.nn import linear


class _FlagSwitch:
    """A switch that sets one module-level flag, with a library's use() and describe(): `values` maps each
    of its two choices to the flag's value and to how reports name it; use(None) puts the flag back.
    `needs`: checked before the "on" choice (the second) is taken; `before`: called with every choice."""

    def __init__(self, owner, flag: str, values: dict, needs=None, before=None):
        self.owner, self.flag, self.values = owner, flag, values
        self.default = getattr(owner, flag)
        self.needs, self.before = needs, before

    def use(self, choice: str | None) -> str:
        if self.before is not None:
            self.before(choice)
        if choice == list(self.values)[1] and self.needs is not None:
            self.needs()
        setattr(self.owner, self.flag, self.default if choice is None else self.values[choice][0])
        return self.current()

    def current(self) -> str:
        """The choice the flag's value is, or 'default' (a default that is neither choice)."""
        value = getattr(self.owner, self.flag)
        return next((c for c, (v, _) in self.values.items() if v == value), "default")

    def describe(self) -> str:
        current = self.current()
        return self.values[current][1] if current in self.values else f"{self.flag} at its default"


def _require_kernels(what: str):
    def check() -> None:
        if kernels.library() != "numba":
            raise RuntimeError(f"{what} needs the compiled kernels")
    return check


# the fused-ff switch: a feed-forward's bias, activation and dropout as three ops or one
_FUSED_FEED_FORWARD = _FlagSwitch(linear, "FUSE_FEED_FORWARD",
                                  {"ops": (False, "three ops"), "fused": (True, "one op (F.bias_act_dropout)")},
                                  needs=_require_kernels("F.bias_act_dropout"))
# small-batches, both sides on MKL (an error when it is not installed): batches of small products on
# NumPy (one BLAS call per matrix) or, where seqlab.mkl.matmul chooses it, on MKL's batched GEMM
_SMALL_BATCHES = _FlagSwitch(mkl, "BATCH_SMALL_PRODUCTS",
                             {"numpy": (False, "NumPy, one product per matrix"), "mkl": (True, "MKL's batched GEMM")},
                             before=lambda choice: mkl.use(None if choice is None else "mkl"))
# min-parallel: the kernels' parallel twins from 2^15 values or from 2^19 (the defaults on Numba's OpenMP and
# TBB layers)
_MIN_PARALLEL = _FlagSwitch(kernels, "MIN_PARALLEL",
                            {"2^15": (1 << 15, "parallel twins from 32,768 values"),
                             "2^19": (1 << 19, "parallel twins from 524,288 values")},
                            needs=_require_kernels("the parallel twins"))
# sums: residual adds and Linear's bias on NumPy's one thread, or on the kernels' parallel twins
_SUMS = _FlagSwitch(kernels, "PARALLEL_SUMS",
                    {"numpy": (False, "adds and biases on NumPy"), "parallel": (True, "adds and biases in parallel")},
                    needs=_require_kernels("the parallel twins"))

# short-attention: attention by batched products and the softmax kernel, or a head at a time in one compiled
# pass (seqlab.kernels.SHORT_ATTENTION; where it applies: D < T <= 1,024, head dims multiples of 16)
_SHORT_ATTENTION = _FlagSwitch(kernels, "SHORT_ATTENTION",
                               {"batched": (False, "batched products"), "heads": (True, "a head at a time")},
                               needs=_require_kernels("short attention"))
# gemm-split: large 2-D products on OpenBLAS's own threads, or cut into parts by the kernels' pool, each part
# on OpenBLAS with one thread (seqlab.kernels.GEMM_SPLIT; where it applies: see kernels.gemm_split)
_GEMM_SPLIT = _FlagSwitch(kernels, "GEMM_SPLIT",
                          {"openblas": (False, "OpenBLAS's threads"), "pool": (True, "parts on the kernels' pool")},
                          needs=_require_kernels("the products' split"))


# switch: (module whose use() flips it, its off and on choices, what "on" needs, how to install it)
SWITCHES = {
    "blas": (mkl, "numpy", "mkl", "MKL's library", "seqlab[mkl]"),
    "kernels": (kernels, "numpy", "numba", "Numba", "seqlab[numba]"),
    "fused-ff": (_FUSED_FEED_FORWARD, "ops", "fused", "Numba", "seqlab[numba]"),
    "small-batches": (_SMALL_BATCHES, "numpy", "mkl", "MKL's library", "seqlab[mkl]"),
    "min-parallel": (_MIN_PARALLEL, "2^15", "2^19", "Numba", "seqlab[numba]"),
    "sums": (_SUMS, "numpy", "parallel", "Numba", "seqlab[numba]"),
    "short-attention": (_SHORT_ATTENTION, "batched", "heads", "Numba", "seqlab[numba]"),
    "gemm-split": (_GEMM_SPLIT, "openblas", "pool", "Numba", "seqlab[numba]"),
}


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("name", choices=sorted(MODULES))
    p.add_argument("--switch", choices=sorted(SWITCHES), default="blas",
                   help="blas: NumPy's BLAS vs MKL (default); kernels: NumPy's row passes vs Numba's; "
                        "fused-ff: a feed-forward's bias, activation and dropout as three ops vs one; "
                        "small-batches: attention's small products on NumPy vs MKL's batched GEMM; "
                        "min-parallel: the kernels' parallel twins from 2^15 vs 2^19 values; "
                        "sums: residual adds and Linear's bias on NumPy vs the parallel twins; "
                        "short-attention: attention by batched products vs a head at a time, compiled; "
                        "gemm-split: large products on OpenBLAS's threads vs shared out by the kernels' pool")
    p.add_argument("--rounds", type=positive_int, default=6, help="alternating rounds (default 6)")
    p.add_argument("--steps", type=positive_int, default=3, help="timed steps per side and round (default 3)")
    p.add_argument("--threads", type=positive_int, default=1, help="threads for every library (default 1)")
    p.add_argument("--data-dir", default=None, help="dataset folder (bert-infer's SST-2 sentences)")
    a = p.parse_args(argv)
    if a.name == "bert-infer":
        check_data_dir(a.data_dir)
    module_, off, on, needs, extra = SWITCHES[a.switch]
    try:
        module_.use(on)
    except Exception:  # noqa: BLE001 - ConfigError: not installed
        fail(f"{needs} was not found: pip install '{extra}'")
    finally:
        module_.use(None)
    set_threads(a.threads)
    built = build(a.name, a.data_dir)
    sides = (off, on, "torch")
    steps = {off: built[0], on: built[0], "torch": built[1]}
    times: dict[str, list[float]] = {side: [] for side in sides}
    try:
        for r in range(a.rounds):
            for side in (sides if r % 2 == 0 else (on, off, "torch")):  # off first, then on first: no order bias
                if side != "torch":
                    module_.use(side)
                    set_threads(a.threads)  # MKL, loaded anew by use(), takes the count too
                steps[side]()
                for _ in range(a.steps):
                    t0 = time.perf_counter()
                    steps[side]()
                    times[side].append(time.perf_counter() - t0)
        module_.use(on)
        described = module_.describe()
    finally:
        module_.use(None)
    med = {side: statistics.median(ts) * 1e3 for side, ts in times.items()}
    print(f"{a.name}, {a.threads} thread{'s' if a.threads > 1 else ''}, {a.rounds} rounds x {a.steps} steps, "
          f"medians: seqlab with {a.switch} on {off} {med[off]:.1f} ms, on {described} {med[on]:.1f} ms, "
          f"torch {med['torch']:.1f} ms; seqlab / torch {med[off] / med['torch']:.2f} ({off}), "
          f"{med[on] / med['torch']:.2f} ({on})")
    # each round's own medians, paired: a VM's drift moves both sides of a round together
    per_round = {side: [statistics.median(ts[i * a.steps:(i + 1) * a.steps]) * 1e3 for i in range(a.rounds)]
                 for side, ts in times.items()}
    diffs = [b - x for x, b in zip(per_round[off], per_round[on])]
    print(f"paired by round: {on} − {off} median {statistics.median(diffs):+.1f} ms "
          f"({statistics.median(diffs) / statistics.median(per_round[off]) * 100:+.1f}%), {on} faster in "
          f"{sum(d < 0 for d in diffs)} of {a.rounds} rounds")


if __name__ == "__main__":
    run_main(main)
