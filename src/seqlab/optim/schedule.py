"""Learning-rate schedules: lr = initial_lr · factor(step), like torch's LambdaLR."""
from __future__ import annotations

import math
from typing import Callable

from seqlab.optim.optimizer import Optimizer


class LambdaLR:
    """Sets each group's lr to initial_lr · lr_lambda(step); step 0 is applied at construction."""

    def __init__(self, optimizer: Optimizer, lr_lambda, last_epoch: int = -1):
        """`lr_lambda`: one function of the step, or a list with one per parameter group (as torch)."""
        n = len(optimizer.param_groups)
        if isinstance(lr_lambda, (list, tuple)):
            if len(lr_lambda) != n:
                raise ValueError(f"expected {n} lr_lambdas (one per parameter group), got {len(lr_lambda)}")
            self.lr_lambdas = list(lr_lambda)
        else:
            self.lr_lambdas = [lr_lambda] * n
        self.optimizer, self.lr_lambda = optimizer, lr_lambda
        for g in optimizer.param_groups:
            g.setdefault("initial_lr", g["lr"])
        self.last_epoch = last_epoch
        self.step()

    def step(self) -> None:
        self.last_epoch += 1
        for g, f in zip(self.optimizer.param_groups, self.lr_lambdas):
            g["lr"] = g["initial_lr"] * f(self.last_epoch)

    def get_last_lr(self) -> list[float]:
        return [g["lr"] for g in self.optimizer.param_groups]

    def state_dict(self) -> dict:
        return {"last_epoch": self.last_epoch}

    def load_state_dict(self, state: dict) -> None:
        self.last_epoch = int(state["last_epoch"]) - 1
        self.step()


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
