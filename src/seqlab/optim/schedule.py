"""Learning-rate schedules: lr = base_lr · factor(step), for `LambdaLR` (base_lr: the group's initial_lr).

`LambdaLR` itself lives in `seqlab.optim.lr_scheduler` with torch's other schedulers; it is imported here too.
"""
from __future__ import annotations

import math
from typing import Callable

from seqlab.optim.lr_scheduler import LambdaLR

__all__ = ["LambdaLR", "constant", "warmup_linear", "warmup_cosine", "inverse_sqrt"]


def constant() -> Callable[[int], float]:
    return lambda step: 1.0


def warmup_linear(warmup_steps: int, total_steps: int) -> Callable[[int], float]:
    """Linear warm-up from 0 to 1 over `warmup_steps`, then linear decay to 0 at `total_steps`."""
    def f(step: int) -> float:
        if step < warmup_steps:
            return step / max(1, warmup_steps)
        return max(0.0, (total_steps - step) / max(1, total_steps - warmup_steps))
    return f


def warmup_cosine(warmup_steps: int, total_steps: int, min_ratio: float = 0.0) -> Callable[[int], float]:
    """Linear warm-up, then cosine decay from 1 to `min_ratio` at `total_steps` (nanoGPT's schedule)."""
    def f(step: int) -> float:
        if step < warmup_steps:
            return step / max(1, warmup_steps)
        if step >= total_steps:
            return min_ratio
        progress = (step - warmup_steps) / max(1, total_steps - warmup_steps)
        return min_ratio + (1 - min_ratio) * 0.5 * (1 + math.cos(math.pi * progress))
    return f


def inverse_sqrt(d_model: int, warmup_steps: int = 4000) -> Callable[[int], float]:
    """The Transformer paper's schedule (§5.3): d_model^−0.5 · min(s^−0.5, s · warmup^−1.5), s = step + 1."""
    def f(step: int) -> float:
        s = step + 1
        return d_model ** -0.5 * min(s ** -0.5, s * warmup_steps ** -1.5)
    return f
