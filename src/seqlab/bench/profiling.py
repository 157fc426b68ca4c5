"""`seqlab bench NAME --profile`: time per op type of a benchmark's seqlab step (and torch's, for reference)."""
from __future__ import annotations

from contextlib import nullcontext
from typing import Callable

from seqlab.autograd.profile import OpProfiler


class _NoPhases:
    """Stands in for a profiler during warm-up steps."""

    def phase(self, name: str):
        return nullcontext()


def profile_step(step: Callable, steps: int = 3, warmup: int = 1, clock: str = "wall") -> tuple[OpProfiler, int]:
    """Run `step(prof)` `warmup` times untimed, then `steps` times under an `OpProfiler` with `clock`."""
    for _ in range(warmup):
        step(_NoPhases())
    with OpProfiler(clock) as prof:
        for _ in range(steps):
            step(prof)
    return prof, steps


def torch_op_table(fn: Callable[[], object], steps: int = 3, top: int = 15) -> str:
    """torch.profiler's self-CPU time per aten op of `fn`, for comparison."""
    import torch

    fn()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as p:
        for _ in range(steps):
            fn()
    return p.key_averages().table(sort_by="self_cpu_time_total", row_limit=top)
