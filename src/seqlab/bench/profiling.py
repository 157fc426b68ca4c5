"""`seqlab bench NAME --profile`: time per op type of a benchmark's seqlab step (and torch's, for reference)."""
from __future__ import annotations

from contextlib import nullcontext
from typing import Callable

from seqlab.autograd.profile import OpProfiler


class _NoPhases:
    """Stands in for a profiler during warm-up steps."""

    def phase(self, name: str):
        return nullcontext()


# Untimed steps before any profile, as many as the benchmarks' own warm-up (`harness.compare`): a
# model's first two steps still page-fault while the allocator's pool grows (encoder-train's second
# step ~5,600 minor faults and 30% slower, its third none), which one warm-up step left in the table.
WARMUP_STEPS = 2


def profile_step(step: Callable, steps: int = 3, warmup: int = WARMUP_STEPS,
                 clock: str = "wall") -> tuple[OpProfiler, int]:
    """Run `step(prof)` `warmup` times untimed, then `steps` times under an `OpProfiler` with `clock`."""
    for _ in range(warmup):
        step(_NoPhases())
    with OpProfiler(clock) as prof:
        for _ in range(steps):
            step(prof)
    return prof, steps


def torch_op_table(fn: Callable[[], object], steps: int = 3, top: int = 15, warmup: int = WARMUP_STEPS) -> str:
    """torch.profiler's self-CPU time per aten op of `fn` (after `warmup` untimed calls), for comparison."""
    import torch

    for _ in range(warmup):
        fn()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as p:
        for _ in range(steps):
            fn()
    return p.key_averages().table(sort_by="self_cpu_time_total", row_limit=top)
