"""Learning-rate schedules: lr = base_lr · factor(step), like torch's LambdaLR (base_lr: the group's initial_lr)."""
from __future__ import annotations

import math
from typing import Callable

from seqlab.optim.optimizer import Optimizer


class LambdaLR:
    """Sets each group's lr to base_lr · lr_lambda(step); step 0 is applied at construction.

    The base lrs are taken as torch's schedulers take them: a fresh schedule (`last_epoch=-1`) records each
    group's current lr as its 'initial_lr' where the group has none yet (so an lr changed after the optimizer
    was built counts, and a second schedule on the same optimizer reuses the first one's); a resumed one
    (`last_epoch >= 0`) needs every group's 'initial_lr' (KeyError otherwise). `base_lrs` is that list,
    fixed at construction and restored by `load_state_dict`.
    """

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
        if last_epoch == -1:
            for g in optimizer.param_groups:
                g.setdefault("initial_lr", g["lr"])
        else:
            for i, g in enumerate(optimizer.param_groups):
                if "initial_lr" not in g:
                    raise KeyError(f"param 'initial_lr' is not specified in param_groups[{i}] when resuming an "
                                   f"optimizer (last_epoch={last_epoch}); build the schedule with last_epoch=-1 "
                                   f"or load an optimizer state that has it")
        self.base_lrs = [g["initial_lr"] for g in optimizer.param_groups]
        self.last_epoch = last_epoch
        self.step()

    def step(self) -> None:
        self.last_epoch += 1
        for g, base, f in zip(self.optimizer.param_groups, self.base_lrs, self.lr_lambdas):
            g["lr"] = base * f(self.last_epoch)

    def get_last_lr(self) -> list[float]:
        return [g["lr"] for g in self.optimizer.param_groups]

    def state_dict(self) -> dict:
        return {"last_epoch": self.last_epoch, "base_lrs": list(self.base_lrs)}

    def load_state_dict(self, state: dict) -> None:
        """Restores `last_epoch` and `base_lrs` (as torch) and sets the groups' lrs for that step. A state
        saved without base_lrs (older checkpoints) takes them from the groups' 'initial_lr', as those
        checkpoints' optimizer states carry it."""
        if "base_lrs" in state:
            base_lrs = [float(b) for b in state["base_lrs"]]
            if len(base_lrs) != len(self.optimizer.param_groups):
                raise ValueError(f"schedule state has {len(base_lrs)} base lrs, the optimizer has "
                                 f"{len(self.optimizer.param_groups)} parameter groups")
            self.base_lrs = base_lrs
        else:
            self.base_lrs = [g.get("initial_lr", base) for g, base in zip(self.optimizer.param_groups, self.base_lrs)]
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
