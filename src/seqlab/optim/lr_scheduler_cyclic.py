"""torch.optim.lr_scheduler's PolynomialLR, MultiplicativeLR, ChainedScheduler and CyclicLR, on
`lr_scheduler.LRScheduler` (its rules and state format: plain numbers, strings and lists, no callables).
`seqlab.optim.lr_scheduler` exports them with the others."""
from __future__ import annotations

import math
from typing import Callable

from seqlab.optim.lr_scheduler import (LRScheduler, _check_int, _check_number,
                                       _check_optimizer, _CyclesMomentum, _HoldsSchedulers, _per_group,
                                       _per_group_lambdas)
from seqlab.optim.optimizer import Optimizer

__all__ = ["PolynomialLR", "MultiplicativeLR", "ChainedScheduler", "CyclicLR"]


class PolynomialLR(LRScheduler):
    """Decays the lrs to 0 over `total_iters` steps: base_lr · (1 − t/total_iters)^power, then keeps them,
    in torch's chainable form (each step scales the current lr by ((1 − t/T) / (1 − (t − 1)/T))^power)."""

    _state_keys = LRScheduler._state_keys + ("total_iters", "power")

    def __init__(self, optimizer: Optimizer, total_iters: int = 5, power: float = 1.0, last_epoch: int = -1):
        _check_int("PolynomialLR", "total_iters", total_iters, 1)
        _check_number("PolynomialLR", "power", power)
        self.total_iters, self.power = total_iters, power
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        self._warn_get_lr()
        if self._is_initial or self.last_epoch > self.total_iters:
            return [g["lr"] for g in self.optimizer.param_groups]
        factor = ((1.0 - self.last_epoch / self.total_iters)
                  / (1.0 - (self.last_epoch - 1) / self.total_iters)) ** self.power
        return [g["lr"] * factor for g in self.optimizer.param_groups]

    def _get_closed_form_lr(self) -> list[float]:
        return [base * (1.0 - min(self.total_iters, self.last_epoch) / self.total_iters) ** self.power
                for base in self.base_lrs]


class MultiplicativeLR(LRScheduler):
    """Multiplies each group's lr by lr_lambda(step) at every step after the first (torch's MultiplicativeLR).

    `lr_lambda`: one function of the step, or a list with one per parameter group. As LambdaLR, the functions
    are not saved in `state_dict` (they are code); the counters and lrs are."""

    def __init__(self, optimizer: Optimizer, lr_lambda: Callable[[int], float] | list, last_epoch: int = -1):
        _check_optimizer("MultiplicativeLR", optimizer)
        self.lr_lambdas = _per_group_lambdas(optimizer, lr_lambda)
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        self._warn_get_lr()
        if self._is_initial:
            return [g["lr"] for g in self.optimizer.param_groups]
        return [g["lr"] * f(self.last_epoch)
                for f, g in zip(self.lr_lambdas, self.optimizer.param_groups, strict=True)]


class ChainedScheduler(_HoldsSchedulers, LRScheduler):
    """Steps every scheduler of `schedulers` (on one optimizer) at each `step()`, in order, so their factors
    compose: `ChainedScheduler([ConstantLR(opt, 0.1, 20), ExponentialLR(opt, 0.9)])`."""

    _state_keys = ("_last_lr",)

    def __init__(self, schedulers, optimizer: Optimizer | None = None):
        name = "ChainedScheduler"
        schedulers = list(schedulers)
        if len(schedulers) < 1:
            raise ValueError(f"{name} expects at least one scheduler to be chained, but got no scheduler.")
        optimizer = optimizer or schedulers[0].optimizer
        _check_optimizer(name, optimizer)
        self._check_schedulers(name, schedulers, optimizer)
        self._schedulers = schedulers
        self.optimizer = optimizer
        self._last_lr = [g["lr"] for g in optimizer.param_groups]

    def step(self) -> None:
        for s in self._schedulers:
            s.step()
        self._last_lr = [g["lr"] for g in self.optimizer.param_groups]



class CyclicLR(_CyclesMomentum, LRScheduler):
    """Cyclical learning rates (Smith 2017, "Cyclical Learning Rates for Training Neural Networks", §3.1): the lr
    goes from `base_lr` up to `max_lr` over `step_size_up` steps and back over `step_size_down` (default: as
    many), the amplitude scaled per cycle c or per step t:

        cycle = ⌊1 + t/total⌋,  x = 1 + t/total − cycle  (the position in the cycle, 0 … 1)
        s = x/r rising (x ≤ r = step_size_up/total), else (x − 1)/(r − 1)
        lr = base_lr + (max_lr − base_lr) · s · f,  f = 1 ('triangular'), 1/2^(cycle−1) ('triangular2'),
             gamma^t ('exp_range'), or scale_fn(cycle or t) as `scale_mode` says

    Step it after every batch. With `cycle_momentum` (default) SGD's momentum or Adam's β1 moves the other way,
    from `max_momentum` down to `base_momentum` (max_momentum − (max − base)·s·f). A custom `scale_fn` is not
    saved in `state_dict` (it is code)."""

    _state_keys = LRScheduler._state_keys + ("max_lrs", "total_size", "step_ratio", "mode", "gamma", "scale_mode",
                                             "cycle_momentum", "use_beta1", "base_momentums", "max_momentums")

    def __init__(self, optimizer: Optimizer, base_lr, max_lr, step_size_up: int = 2000,
                 step_size_down: int | None = None, mode: str = "triangular", gamma: float = 1.0,
                 scale_fn: Callable[[float], float] | None = None, scale_mode: str = "cycle",
                 cycle_momentum: bool = True, base_momentum=0.8, max_momentum=0.9, last_epoch: int = -1):
        name = "CyclicLR"
        _check_optimizer(name, optimizer)
        self.optimizer = optimizer
        base_lrs = _per_group(name, "base_lr", optimizer, base_lr)
        self.max_lrs = _per_group(name, "max_lr", optimizer, max_lr)
        for key, values in (("base_lr", base_lrs), ("max_lr", self.max_lrs)):
            for v in values:
                _check_number(name, key, v, low=0)
        _check_int(name, "step_size_up", step_size_up, 1)
        if step_size_down is not None:
            _check_int(name, "step_size_down", step_size_down, 0)
        if mode not in ("triangular", "triangular2", "exp_range") and scale_fn is None:
            raise ValueError(f"{name}: mode must be 'triangular', 'triangular2' or 'exp_range' (or give scale_fn), "
                             f"got {mode!r}")
        if scale_mode not in ("cycle", "iterations"):
            raise ValueError(f"{name}: scale_mode must be 'cycle' or 'iterations', got {scale_mode!r}")
        _check_number(name, "gamma", gamma, low=0)
        if last_epoch == -1:
            for lr, g in zip(base_lrs, optimizer.param_groups):
                g["lr"] = lr
        up = float(step_size_up)
        down = float(step_size_down) if step_size_down is not None else up
        self.total_size = up + down
        self.step_ratio = up / self.total_size
        self.mode, self.gamma, self.scale_mode = mode, gamma, scale_mode
        self._scale_fn_custom = scale_fn
        self._init_scale_fn()
        self.cycle_momentum = bool(cycle_momentum)
        if self.cycle_momentum:
            if "momentum" not in optimizer.defaults and "betas" not in optimizer.defaults:
                raise ValueError(f"{name}: cycle_momentum=True needs an optimizer with momentum or betas "
                                 f"(SGD, Adam, AdamW); {type(optimizer).__name__} has neither")
            self.use_beta1 = "betas" in optimizer.defaults
            self.base_momentums = _per_group(name, "base_momentum", optimizer, base_momentum)
            self.max_momentums = _per_group(name, "max_momentum", optimizer, max_momentum)
            for key, values in (("base_momentum", self.base_momentums), ("max_momentum", self.max_momentums)):
                for v in values:
                    _check_number(name, key, v, low=0, high=1)
            if last_epoch == -1:
                for m, b, g in zip(self.max_momentums, self.base_momentums, optimizer.param_groups, strict=True):
                    self._set_momentum(g, m)
                    g["max_momentum"] = m
                    g["base_momentum"] = b
        super().__init__(optimizer, last_epoch)
        self.base_lrs = base_lrs  # after the base's step 0, as torch (which took the groups' 'initial_lr')

    def _init_scale_fn(self) -> None:
        """The built-in modes fix the scale mode (triangular ones per cycle, exp_range per step), as torch."""
        if self._scale_fn_custom is not None:
            return
        if self.mode in ("triangular", "triangular2"):
            self.scale_mode = "cycle"
        elif self.mode == "exp_range":
            self.scale_mode = "iterations"

    def scale_fn(self, x: float) -> float:
        if self._scale_fn_custom is not None:
            return self._scale_fn_custom(x)
        if self.mode == "triangular":
            return 1.0
        if self.mode == "triangular2":
            return 1 / (2.0 ** (x - 1))
        return self.gamma ** x  # exp_range

    def get_lr(self) -> list[float]:
        """The lrs for `last_epoch`; with cycle_momentum also sets the groups' momentum (or β1), as torch."""
        self._warn_get_lr()
        cycle = math.floor(1 + self.last_epoch / self.total_size)
        x = 1.0 + self.last_epoch / self.total_size - cycle
        if x <= self.step_ratio:
            scale_factor = x / self.step_ratio
        else:
            scale_factor = (x - 1) / (self.step_ratio - 1)
        f = self.scale_fn(cycle if self.scale_mode == "cycle" else self.last_epoch)
        lrs = [base + (top - base) * scale_factor * f for base, top in zip(self.base_lrs, self.max_lrs, strict=True)]
        if self.cycle_momentum:
            for g, b, m in zip(self.optimizer.param_groups, self.base_momentums, self.max_momentums, strict=True):
                self._set_momentum(g, m - (m - b) * scale_factor * f)
        return lrs

    def _restored(self) -> None:
        self._init_scale_fn()  # scale_fn is code, not state
