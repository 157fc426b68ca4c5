"""Learning-rate schedulers with torch.optim.lr_scheduler's names, arguments and lr sequences.

`LRScheduler` is torch's base: a fresh scheduler (`last_epoch=-1`) records each group's lr as its
'initial_lr' (where it has none yet) and takes those as `base_lrs`; construction applies step 0; each
`step()` then sets every group's lr to `get_lr()`'s value for the next step and `get_last_lr()` returns
them. As in torch, most schedulers are *chainable*: `get_lr()` scales the groups' current lrs (so two
schedulers on one optimizer compose, and an lr changed by hand carries on), not `base_lrs`; the closed form
(`_get_closed_form_lr`) is used where torch uses it: by the deprecated `step(epoch)` and by `SequentialLR`
at its milestones. The values are torch's, operation for operation, so they agree to the last bit.

`state_dict()` is a dict of plain numbers, strings and lists (JSON-safe: no pickling, no callables) holding
the attributes torch keeps under the same names, so a torch scheduler's state loads too.
`load_state_dict()` restores them and, unlike torch, also puts the saved lrs (`_last_lr`) back into the
optimizer's groups, so a schedule resumes exactly even when only its own state was restored (torch takes
the lrs from the optimizer's state; loading both, in either order, gives the same values).
"""
from __future__ import annotations

import math
import numbers
import warnings
from bisect import bisect_right
from collections import Counter
from typing import Callable

from seqlab.optim.optimizer import Optimizer

__all__ = ["LRScheduler", "LambdaLR", "StepLR", "MultiStepLR", "ConstantLR", "LinearLR", "ExponentialLR",
           "SequentialLR", "CosineAnnealingLR", "ReduceLROnPlateau", "CosineAnnealingWarmRestarts", "OneCycleLR",
           "PolynomialLR", "MultiplicativeLR", "ChainedScheduler", "CyclicLR"]

EPOCH_DEPRECATION_WARNING = (
    "The epoch parameter in `scheduler.step()` was not necessary and is being deprecated where possible (as in "
    "torch). Please use `scheduler.step()` to step the scheduler. If epoch is given, the closed form is used "
    "instead of the chainable form, where available.")


# ---- argument checks: one-line ValueErrors ---------------------------------------------------------------
def _is_int(v) -> bool:
    return isinstance(v, numbers.Integral) and not isinstance(v, bool)


def _is_number(v) -> bool:
    return isinstance(v, numbers.Real) and not isinstance(v, bool) and math.isfinite(v)


def _check_int(owner: str, name: str, v, low: int) -> None:
    if not _is_int(v) or v < low:
        kind = "a positive integer" if low == 1 else f"an integer >= {low}"
        raise ValueError(f"{owner}: {name} must be {kind}, got {v!r}")


def _check_number(owner: str, name: str, v, low: float | None = None, high: float | None = None,
                  low_open: bool = False, high_open: bool = False) -> None:
    ok = _is_number(v)
    if ok and low is not None:
        ok = v > low if low_open else v >= low
    if ok and high is not None:
        ok = v < high if high_open else v <= high
    if not ok:
        if low is not None and high is not None:
            rng = f"in {'(' if low_open else '['}{low}, {high}{')' if high_open else ']'}"
        elif low is not None:
            rng = f"{'>' if low_open else '>='} {low}"
        elif high is not None:
            rng = f"{'<' if high_open else '<='} {high}"
        else:
            rng = ""
        raise ValueError(f"{owner}: {name} must be a finite number{' ' + rng if rng else ''}, got {v!r}")


def _check_optimizer(owner: str, optimizer) -> None:
    if not isinstance(optimizer, Optimizer):
        raise TypeError(f"{owner}: {type(optimizer).__name__} is not a seqlab Optimizer")


def _per_group(owner: str, name: str, optimizer: Optimizer, value) -> list:
    """One value per parameter group: a list/tuple of exactly that many, or one value for all (torch's
    `_format_param`)."""
    n = len(optimizer.param_groups)
    if isinstance(value, (list, tuple)):
        if len(value) != n:
            raise ValueError(f"{owner}: {name} must have one value per parameter group: got {len(value)}, "
                             f"the optimizer has {n}")
        return list(value)
    return [value] * n


def _plain(v):
    """A copy of a state value with tuples as lists (what JSON gives back)."""
    if isinstance(v, dict):
        return {k: _plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    return v


class LRScheduler:
    """torch.optim.lr_scheduler.LRScheduler: subclasses give `get_lr()` (the chainable rule) and, where torch
    has one, `_get_closed_form_lr()`.

    The base lrs are taken as torch takes them: a fresh schedule (`last_epoch=-1`) records each group's
    current lr as its 'initial_lr' where the group has none yet (so an lr changed after the optimizer was
    built counts, and a second schedule on the same optimizer reuses the first one's); a resumed one
    (`last_epoch >= 0`) needs every group's 'initial_lr' (KeyError otherwise). `base_lrs` is that list,
    fixed at construction and restored by `load_state_dict`.
    """

    _get_lr_called_within_step = False
    _is_initial = False
    #: the attributes `state_dict` saves (torch's names); subclasses add their own
    _state_keys: tuple[str, ...] = ("last_epoch", "base_lrs", "_step_count", "_last_lr")

    def __init__(self, optimizer: Optimizer, last_epoch: int = -1):
        owner = type(self).__name__
        _check_optimizer(owner, optimizer)
        _check_int(owner, "last_epoch", last_epoch, -1)
        self.optimizer = optimizer
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
        self._initial_step()

    def _initial_step(self) -> None:
        """Step 0 (or last_epoch + 1 when resuming), as torch's constructor takes it."""
        self._step_count = 0
        self._is_initial = True
        try:
            self.step()
        finally:
            self._is_initial = False

    def get_lr(self) -> list[float]:
        """The lrs for `last_epoch` (already advanced by `step`); call `get_last_lr()` to read the current ones."""
        raise NotImplementedError

    def get_last_lr(self) -> list[float]:
        """The lrs the last `step()` (or construction) set, one per parameter group."""
        return list(self._last_lr)

    def _warn_get_lr(self) -> None:
        if not self._get_lr_called_within_step:
            warnings.warn("To get the last learning rate computed by the scheduler, please use `get_last_lr()`.",
                          UserWarning, stacklevel=3)

    def step(self, epoch: int | None = None) -> None:
        """Advance one step (call it after `optimizer.step()`). `epoch` (deprecated, as in torch) jumps to that
        step with the closed form where there is one."""
        self._step_count += 1
        if epoch is not None:
            warnings.warn(EPOCH_DEPRECATION_WARNING, UserWarning, stacklevel=2)
        self._update_lr(epoch)

    def _update_lr(self, epoch: int | None = None) -> None:
        self._get_lr_called_within_step = True
        try:
            if epoch is None:
                self.last_epoch += 1
                values = self.get_lr()
            else:
                self.last_epoch = epoch
                closed = getattr(self, "_get_closed_form_lr", None)
                values = closed() if closed is not None else self.get_lr()
        finally:
            self._get_lr_called_within_step = False
        for g, lr in zip(self.optimizer.param_groups, values, strict=True):
            g["lr"] = lr
        self._last_lr = [g["lr"] for g in self.optimizer.param_groups]

    # ---- state ------------------------------------------------------------------------------------------
    def state_dict(self) -> dict:
        """The schedule's counters and settings under torch's attribute names: numbers, strings and lists."""
        return {k: _plain(getattr(self, k)) for k in self._state_keys if hasattr(self, k)}

    def load_state_dict(self, state: dict) -> None:
        """Restores what `state_dict` saved (keys it does not know, e.g. torch's private flags, are ignored)
        and sets the groups' lrs to the saved ones."""
        n = len(self.optimizer.param_groups)
        for key, what in (("base_lrs", "base lrs"), ("_last_lr", "lrs")):
            if key in state and len(state[key]) != n:
                raise ValueError(f"{type(self).__name__}: schedule state has {len(state[key])} {what}, the "
                                 f"optimizer has {n} parameter groups")
        self._load_keys(state)
        if "_last_lr" in state:
            for g, lr in zip(self.optimizer.param_groups, self._last_lr):
                g["lr"] = lr

    def _load_keys(self, state: dict) -> None:
        for k in self._state_keys:
            if k in state:
                v = _plain(state[k])
                setattr(self, k, int(v) if k in ("last_epoch", "_step_count") else v)


def _per_group_lambdas(optimizer: Optimizer, lr_lambda) -> list:
    """One function per parameter group: `lr_lambda` for each, or the list given (one per group, as torch)."""
    n = len(optimizer.param_groups)
    if isinstance(lr_lambda, (list, tuple)):
        if len(lr_lambda) != n:
            raise ValueError(f"expected {n} lr_lambdas (one per parameter group), got {len(lr_lambda)}")
        lambdas = list(lr_lambda)
    else:
        lambdas = [lr_lambda] * n
    for f in lambdas:
        if not callable(f):
            raise TypeError(f"lr_lambda should be a function, but got {type(f).__name__}")
    return lambdas


class LambdaLR(LRScheduler):
    """Sets each group's lr to base_lr · lr_lambda(step); step 0 is applied at construction (torch's LambdaLR).

    `lr_lambda`: one function of the step, or a list with one per parameter group (as torch). Not chainable:
    the lr depends on the step alone, so `load_state_dict` recomputes it for the saved step.
    """

    def __init__(self, optimizer: Optimizer, lr_lambda: Callable[[int], float] | list, last_epoch: int = -1):
        _check_optimizer("LambdaLR", optimizer)
        self.lr_lambdas = _per_group_lambdas(optimizer, lr_lambda)
        self.lr_lambda = lr_lambda
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        self._warn_get_lr()
        return [base * f(self.last_epoch) for f, base in zip(self.lr_lambdas, self.base_lrs, strict=True)]

    def load_state_dict(self, state: dict) -> None:
        """Restores `last_epoch` and `base_lrs` (as torch) and sets the groups' lrs for that step. A state
        saved without base_lrs (older checkpoints) takes them from the groups' 'initial_lr', as those
        checkpoints' optimizer states carry it."""
        n = len(self.optimizer.param_groups)
        if "base_lrs" in state:
            if len(state["base_lrs"]) != n:
                raise ValueError(f"schedule state has {len(state['base_lrs'])} base lrs, the optimizer has "
                                 f"{n} parameter groups")
            base_lrs = [float(b) for b in state["base_lrs"]]
        else:
            base_lrs = [g.get("initial_lr", base) for g, base in zip(self.optimizer.param_groups, self.base_lrs)]
        self._load_keys({k: v for k, v in state.items() if k not in ("base_lrs", "_last_lr")})
        self.base_lrs = base_lrs
        self.last_epoch = int(state["last_epoch"])
        self._get_lr_called_within_step = True
        try:
            values = self.get_lr()
        finally:
            self._get_lr_called_within_step = False
        for g, lr in zip(self.optimizer.param_groups, values):
            g["lr"] = lr
        self._last_lr = [g["lr"] for g in self.optimizer.param_groups]


class StepLR(LRScheduler):
    """Multiplies the lrs by `gamma` every `step_size` steps: base_lr · gamma^(step // step_size)."""

    _state_keys = LRScheduler._state_keys + ("step_size", "gamma")

    def __init__(self, optimizer: Optimizer, step_size: int, gamma: float = 0.1, last_epoch: int = -1):
        _check_int("StepLR", "step_size", step_size, 1)
        _check_number("StepLR", "gamma", gamma, low=0)
        self.step_size, self.gamma = step_size, gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        self._warn_get_lr()
        if self.last_epoch == 0 or self.last_epoch % self.step_size != 0:
            return [g["lr"] for g in self.optimizer.param_groups]
        return [g["lr"] * self.gamma for g in self.optimizer.param_groups]

    def _get_closed_form_lr(self) -> list[float]:
        return [base * self.gamma ** (self.last_epoch // self.step_size) for base in self.base_lrs]


class MultiStepLR(LRScheduler):
    """Multiplies the lrs by `gamma` at each milestone (a milestone given n times: by gamma^n)."""

    _state_keys = LRScheduler._state_keys + ("milestones", "gamma")

    def __init__(self, optimizer: Optimizer, milestones, gamma: float = 0.1, last_epoch: int = -1):
        if not isinstance(milestones, (list, tuple, range, set, frozenset)) or \
                not all(_is_int(m) and m >= 0 for m in milestones):
            raise ValueError(f"MultiStepLR: milestones must be a list of integers >= 0, got {milestones!r}")
        _check_number("MultiStepLR", "gamma", gamma, low=0)
        self.milestones = Counter(int(m) for m in milestones)
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        self._warn_get_lr()
        if self.last_epoch not in self.milestones:
            return [g["lr"] for g in self.optimizer.param_groups]
        return [g["lr"] * self.gamma ** self.milestones[self.last_epoch] for g in self.optimizer.param_groups]

    def _get_closed_form_lr(self) -> list[float]:
        milestones = sorted(self.milestones.elements())
        return [base * self.gamma ** bisect_right(milestones, self.last_epoch) for base in self.base_lrs]

    def state_dict(self) -> dict:
        """`milestones` as a sorted list, a milestone repeated as often as given (torch keeps a Counter)."""
        state = super().state_dict()
        state["milestones"] = sorted(self.milestones.elements())
        return state

    def _load_keys(self, state: dict) -> None:
        super()._load_keys(state)
        if "milestones" in state:  # a list (ours) or a {milestone: count} dict (torch's Counter)
            m = state["milestones"]
            self.milestones = Counter({int(k): int(c) for k, c in m.items()} if isinstance(m, dict)
                                      else [int(x) for x in m])


class ConstantLR(LRScheduler):
    """Multiplies the lrs by `factor` until step `total_iters`, then restores them."""

    _state_keys = LRScheduler._state_keys + ("factor", "total_iters")

    def __init__(self, optimizer: Optimizer, factor: float = 1.0 / 3, total_iters: int = 5, last_epoch: int = -1):
        # torch accepts factor 0 but divides by it at total_iters (ZeroDivisionError); refused here
        _check_number("ConstantLR", "factor", factor, low=0, high=1, low_open=True)
        _check_int("ConstantLR", "total_iters", total_iters, 1)
        self.factor, self.total_iters = factor, total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        self._warn_get_lr()
        if self.last_epoch == 0:
            return [g["lr"] * self.factor for g in self.optimizer.param_groups]
        if self.last_epoch != self.total_iters:
            return [g["lr"] for g in self.optimizer.param_groups]
        return [g["lr"] * (1.0 / self.factor) for g in self.optimizer.param_groups]

    def _get_closed_form_lr(self) -> list[float]:
        return [base * (self.factor + (self.last_epoch >= self.total_iters) * (1 - self.factor))
                for base in self.base_lrs]


class LinearLR(LRScheduler):
    """Scales the lrs by a factor going linearly from `start_factor` to `end_factor` over `total_iters` steps."""

    _state_keys = LRScheduler._state_keys + ("start_factor", "end_factor", "total_iters")

    def __init__(self, optimizer: Optimizer, start_factor: float = 1.0 / 3, end_factor: float = 1.0,
                 total_iters: int = 5, last_epoch: int = -1):
        _check_number("LinearLR", "start_factor", start_factor, low=0, high=1, low_open=True)
        _check_number("LinearLR", "end_factor", end_factor, low=0, high=1)
        _check_int("LinearLR", "total_iters", total_iters, 1)
        self.start_factor, self.end_factor, self.total_iters = start_factor, end_factor, total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        self._warn_get_lr()
        if self.last_epoch == 0:
            return [g["lr"] * self.start_factor for g in self.optimizer.param_groups]
        if self._is_initial or self.last_epoch > self.total_iters:
            return [g["lr"] for g in self.optimizer.param_groups]
        d = self.end_factor - self.start_factor
        return [g["lr"] * (1.0 + d / (self.total_iters * self.start_factor + (self.last_epoch - 1) * d))
                for g in self.optimizer.param_groups]

    def _get_closed_form_lr(self) -> list[float]:
        return [base * (self.start_factor + (self.end_factor - self.start_factor)
                        * min(self.total_iters, self.last_epoch) / self.total_iters) for base in self.base_lrs]


class ExponentialLR(LRScheduler):
    """Multiplies the lrs by `gamma` every step."""

    _state_keys = LRScheduler._state_keys + ("gamma",)

    def __init__(self, optimizer: Optimizer, gamma: float, last_epoch: int = -1):
        _check_number("ExponentialLR", "gamma", gamma, low=0)
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        self._warn_get_lr()
        if self._is_initial:  # resuming: the constructor's step keeps the loaded lrs
            return [g["lr"] for g in self.optimizer.param_groups]
        return [g["lr"] * self.gamma for g in self.optimizer.param_groups]

    def _get_closed_form_lr(self) -> list[float]:
        return [base * self.gamma ** self.last_epoch for base in self.base_lrs]


class CosineAnnealingLR(LRScheduler):
    """Cosine annealing from the base lr to `eta_min` over `T_max` steps, then back up (no restarts), in torch's
    recursive form: η ← η_min + (η − η_min)·(1 + cos(π t/T_max)) / (1 + cos(π (t−1)/T_max)), which follows
    η_min + (base − η_min)(1 + cos(π t/T_max))/2 while nothing else changes the lr."""

    _state_keys = LRScheduler._state_keys + ("T_max", "eta_min")

    def __init__(self, optimizer: Optimizer, T_max: int, eta_min: float = 0.0, last_epoch: int = -1):
        _check_int("CosineAnnealingLR", "T_max", T_max, 1)
        _check_number("CosineAnnealingLR", "eta_min", eta_min, low=0)
        self.T_max, self.eta_min = T_max, eta_min
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        self._warn_get_lr()
        groups = self.optimizer.param_groups
        if self._is_initial:
            return [g["lr"] for g in groups]
        if self._step_count == 1 and self.last_epoch > 0:
            return [self.eta_min + (base - self.eta_min) * (1 + math.cos(self.last_epoch * math.pi / self.T_max)) / 2
                    for base in self.base_lrs]
        if (self.last_epoch - 1 - self.T_max) % (2 * self.T_max) == 0:  # the trough: cos' ratio would be 0/0
            return [g["lr"] + (base - self.eta_min) * (1 - math.cos(math.pi / self.T_max)) / 2
                    for base, g in zip(self.base_lrs, groups, strict=True)]
        return [(1 + math.cos(math.pi * self.last_epoch / self.T_max))
                / (1 + math.cos(math.pi * (self.last_epoch - 1) / self.T_max)) * (g["lr"] - self.eta_min)
                + self.eta_min for g in groups]

    def _get_closed_form_lr(self) -> list[float]:
        return [self.eta_min + (base - self.eta_min) * (1 + math.cos(math.pi * self.last_epoch / self.T_max)) / 2
                for base in self.base_lrs]


class CosineAnnealingWarmRestarts(LRScheduler):
    """SGDR: η_min + (base − η_min)(1 + cos(π T_cur/T_i))/2, restarting (T_cur = 0) every T_i steps, T_i
    starting at `T_0` and multiplied by `T_mult` at each restart. `step(epoch)` takes fractional epochs (e.g.
    `epoch + i / iters_per_epoch`), as torch's."""

    _state_keys = LRScheduler._state_keys + ("T_0", "T_i", "T_mult", "eta_min", "T_cur")

    def __init__(self, optimizer: Optimizer, T_0: int, T_mult: int = 1, eta_min: float = 0.0,
                 last_epoch: int = -1):
        _check_int("CosineAnnealingWarmRestarts", "T_0", T_0, 1)
        _check_int("CosineAnnealingWarmRestarts", "T_mult", T_mult, 1)
        _check_number("CosineAnnealingWarmRestarts", "eta_min", eta_min, low=0)
        self.T_0, self.T_i, self.T_mult, self.eta_min = T_0, T_0, T_mult, eta_min
        self.T_cur = last_epoch
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        self._warn_get_lr()
        return [self.eta_min + (base - self.eta_min) * (1 + math.cos(math.pi * self.T_cur / self.T_i)) / 2
                for base in self.base_lrs]

    def step(self, epoch: float | None = None) -> None:
        if epoch is None and self.last_epoch < 0:
            epoch = 0
        if epoch is None:
            epoch = self.last_epoch + 1
            self.T_cur = self.T_cur + 1
            if self.T_cur >= self.T_i:
                self.T_cur = self.T_cur % self.T_i
                self.T_i = self.T_i * self.T_mult
        else:
            if not _is_number(epoch) or epoch < 0:
                raise ValueError(f"CosineAnnealingWarmRestarts: epoch must be a finite number >= 0, got {epoch!r}")
            if epoch >= self.T_0:
                if self.T_mult == 1:
                    self.T_cur = epoch % self.T_0
                else:
                    n = int(math.log((epoch / self.T_0 * (self.T_mult - 1) + 1), self.T_mult))
                    self.T_cur = epoch - self.T_0 * (self.T_mult ** n - 1) / (self.T_mult - 1)
                    self.T_i = self.T_0 * self.T_mult ** n
            else:
                self.T_i = self.T_0
                self.T_cur = epoch
        self.last_epoch = math.floor(epoch)
        self._get_lr_called_within_step = True
        try:
            values = self.get_lr()
        finally:
            self._get_lr_called_within_step = False
        for g, lr in zip(self.optimizer.param_groups, values, strict=True):
            g["lr"] = lr
        self._last_lr = [g["lr"] for g in self.optimizer.param_groups]


class _CyclesMomentum:
    """What OneCycleLR and CyclicLR share: the momentum (β1 for Adam-like optimizers) they cycle opposite
    the lr, set in a group, and set again for the step a loaded state restores."""

    cycle_momentum: bool
    use_beta1: bool

    def _set_momentum(self, group: dict, momentum: float) -> None:
        if self.use_beta1:
            group["betas"] = (momentum, *group["betas"][1:])
        else:
            group["momentum"] = momentum

    def load_state_dict(self, state: dict) -> None:
        """As the base, and sets the groups' momentum (or β1) for the restored step."""
        super().load_state_dict(state)
        self._restored()
        if self.cycle_momentum:
            self._get_lr_called_within_step = True
            try:
                self.get_lr()
            finally:
                self._get_lr_called_within_step = False

    def _restored(self) -> None:
        """What a subclass rebuilds from a loaded state before the momentum is set (nothing here)."""


class OneCycleLR(_CyclesMomentum, LRScheduler):
    """The 1cycle policy (Smith & Topin 2019; fastai's two phases, or the paper's three with
    `three_phase=True`): lr from max_lr/div_factor up to max_lr over pct_start of `total_steps`, then down to
    initial_lr/final_div_factor; with `cycle_momentum` (default), SGD's momentum or Adam's β1 goes the other
    way between max_momentum and base_momentum. Not chainable: each step's values are a function of the step.
    Stores 'initial_lr', 'max_lr', 'min_lr' (and 'max_momentum', 'base_momentum') in the groups, as torch."""

    _state_keys = LRScheduler._state_keys + ("total_steps", "_schedule_phases", "_anneal_func_type",
                                             "cycle_momentum", "use_beta1")

    def __init__(self, optimizer: Optimizer, max_lr, total_steps: int | None = None, epochs: int | None = None,
                 steps_per_epoch: int | None = None, pct_start: float = 0.3, anneal_strategy: str = "cos",
                 cycle_momentum: bool = True, base_momentum=0.85, max_momentum=0.95, div_factor: float = 25.0,
                 final_div_factor: float = 1e4, three_phase: bool = False, last_epoch: int = -1):
        name = "OneCycleLR"
        _check_optimizer(name, optimizer)
        self.optimizer = optimizer
        if total_steps is not None:
            _check_int(name, "total_steps", total_steps, 1)
            self.total_steps = int(total_steps)
        elif epochs is not None and steps_per_epoch is not None:
            _check_int(name, "epochs", epochs, 1)
            _check_int(name, "steps_per_epoch", steps_per_epoch, 1)
            self.total_steps = int(epochs) * int(steps_per_epoch)
        else:
            raise ValueError(f"{name}: give either total_steps or both epochs and steps_per_epoch")
        if isinstance(pct_start, bool) or not isinstance(pct_start, float) or not 0 <= pct_start <= 1:
            raise ValueError(f"{name}: pct_start must be a float in [0, 1], got {pct_start!r}")
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(f"{name}: anneal_strategy must be 'cos' or 'linear', got {anneal_strategy!r}")
        _check_number(name, "div_factor", div_factor, low=0, low_open=True)
        _check_number(name, "final_div_factor", final_div_factor, low=0, low_open=True)
        T = self.total_steps
        if three_phase:
            self._schedule_phases = [
                {"end_step": float(pct_start * T) - 1, "start_lr": "initial_lr", "end_lr": "max_lr",
                 "start_momentum": "max_momentum", "end_momentum": "base_momentum"},
                {"end_step": float(2 * pct_start * T) - 2, "start_lr": "max_lr", "end_lr": "initial_lr",
                 "start_momentum": "base_momentum", "end_momentum": "max_momentum"},
                {"end_step": T - 1, "start_lr": "initial_lr", "end_lr": "min_lr",
                 "start_momentum": "max_momentum", "end_momentum": "max_momentum"},
            ]
        else:
            self._schedule_phases = [
                {"end_step": float(pct_start * T) - 1, "start_lr": "initial_lr", "end_lr": "max_lr",
                 "start_momentum": "max_momentum", "end_momentum": "base_momentum"},
                {"end_step": T - 1, "start_lr": "max_lr", "end_lr": "min_lr",
                 "start_momentum": "base_momentum", "end_momentum": "max_momentum"},
            ]
        if self._schedule_phases[0]["end_step"] == 0:
            # torch divides by the empty first phase's length (ZeroDivisionError at construction)
            raise ValueError(f"{name}: pct_start * total_steps must not be 1 (the warm-up phase would be empty), "
                             f"got {pct_start} * {T}")
        self._anneal_func_type = anneal_strategy
        max_lrs = _per_group(name, "max_lr", optimizer, max_lr)
        for v in max_lrs:
            _check_number(name, "max_lr", v, low=0)
        if last_epoch == -1:
            for m, g in zip(max_lrs, optimizer.param_groups):
                g["initial_lr"] = m / div_factor
                g["max_lr"] = m
                g["min_lr"] = g["initial_lr"] / final_div_factor
        self.cycle_momentum = bool(cycle_momentum)
        if self.cycle_momentum:
            if "momentum" not in optimizer.defaults and "betas" not in optimizer.defaults:
                raise ValueError(f"{name}: cycle_momentum=True needs an optimizer with momentum or betas "
                                 f"(SGD, Adam, AdamW); {type(optimizer).__name__} has neither")
            self.use_beta1 = "betas" in optimizer.defaults
            max_ms = _per_group(name, "max_momentum", optimizer, max_momentum)
            base_ms = _per_group(name, "base_momentum", optimizer, base_momentum)
            for key, values in (("max_momentum", max_ms), ("base_momentum", base_ms)):
                for v in values:
                    _check_number(name, key, v, low=0, high=1)
            if last_epoch == -1:
                for m, b, g in zip(max_ms, base_ms, optimizer.param_groups, strict=True):
                    self._set_momentum(g, m)
                    g["max_momentum"] = m
                    g["base_momentum"] = b
        super().__init__(optimizer, last_epoch)

    @staticmethod
    def _annealing_cos(start, end, pct):
        """Cosine anneal from `start` to `end` as pct goes from 0.0 to 1.0."""
        return end + (start - end) / 2.0 * (math.cos(math.pi * pct) + 1)

    @staticmethod
    def _annealing_linear(start, end, pct):
        """Linearly anneal from `start` to `end` as pct goes from 0.0 to 1.0."""
        return (end - start) * pct + start

    def _anneal_func(self, start, end, pct):
        return (self._annealing_cos if self._anneal_func_type == "cos" else self._annealing_linear)(start, end, pct)

    def get_lr(self) -> list[float]:
        """The lrs for `last_epoch`; with cycle_momentum also sets the groups' momentum (or β1), as torch."""
        self._warn_get_lr()
        step_num = self.last_epoch
        if step_num > self.total_steps:
            raise ValueError(f"OneCycleLR: tried to step {step_num} times; the schedule has total_steps="
                             f"{self.total_steps}")
        lrs = []
        for g in self.optimizer.param_groups:
            start_step = 0.0
            for i, phase in enumerate(self._schedule_phases):
                end_step = phase["end_step"]
                if step_num <= end_step or i == len(self._schedule_phases) - 1:
                    pct = (step_num - start_step) / (end_step - start_step)
                    lr = self._anneal_func(g[phase["start_lr"]], g[phase["end_lr"]], pct)
                    if self.cycle_momentum:
                        momentum = self._anneal_func(g[phase["start_momentum"]], g[phase["end_momentum"]], pct)
                    break
                start_step = phase["end_step"]
            lrs.append(lr)
            if self.cycle_momentum:
                self._set_momentum(g, momentum)
        return lrs


class _HoldsSchedulers:
    """The state of a scheduler made of others (SequentialLR, ChainedScheduler): its own, with each
    scheduler's under '_schedulers'."""

    _schedulers: list

    @staticmethod
    def _check_schedulers(name: str, schedulers: list, optimizer: Optimizer) -> None:
        """Each one a seqlab LRScheduler of `optimizer`, none a ReduceLROnPlateau (as torch)."""
        for i, s in enumerate(schedulers):
            if isinstance(s, ReduceLROnPlateau):
                raise ValueError(f"{name} does not support ReduceLROnPlateau (its step needs a metric), got one "
                                 f"at index {i}")
            if not isinstance(s, LRScheduler):
                raise TypeError(f"{name}: schedulers[{i}] is a {type(s).__name__}, not a seqlab LRScheduler")
            if s.optimizer is not optimizer:
                raise ValueError(f"{name} expects all schedulers to belong to the same optimizer, but "
                                 f"schedulers[{i}] ({type(s).__name__}) has another one")

    def state_dict(self) -> dict:
        state = super().state_dict()
        state["_schedulers"] = [s.state_dict() for s in self._schedulers]
        return state

    def load_state_dict(self, state: dict) -> None:
        """Restores every scheduler's state, then its own (and the groups' lrs)."""
        subs = state.get("_schedulers")
        if subs is not None:
            if len(subs) != len(self._schedulers):
                raise ValueError(f"{type(self).__name__}: state has {len(subs)} schedulers, this one has "
                                 f"{len(self._schedulers)}")
            for s, sub in zip(self._schedulers, subs):
                s.load_state_dict(sub)
        super().load_state_dict({k: v for k, v in state.items() if k != "_schedulers"})


class SequentialLR(_HoldsSchedulers, LRScheduler):
    """Runs `schedulers[i]` from `milestones[i-1]` on (torch's SequentialLR): at a milestone the next scheduler
    starts from its step 0 in closed form (from the base lrs), then steps on as usual."""

    _state_keys = ("last_epoch", "_milestones", "_last_lr")

    def __init__(self, optimizer: Optimizer, schedulers: list, milestones: list, last_epoch: int = -1):
        name = "SequentialLR"
        _check_optimizer(name, optimizer)
        schedulers = list(schedulers)
        if len(schedulers) < 1:
            raise ValueError(f"{name} expects at least one scheduler, but got none")
        self._check_schedulers(name, schedulers, optimizer)
        milestones = list(milestones)
        if len(milestones) != len(schedulers) - 1:
            raise ValueError(f"{name} expects one milestone fewer than schedulers, got {len(schedulers)} "
                             f"schedulers and {len(milestones)} milestones")
        if not all(_is_int(m) for m in milestones):
            raise ValueError(f"{name}: milestones must be integers, got {milestones!r}")
        _check_int(name, "last_epoch", last_epoch, -1)
        self._schedulers = schedulers
        self._milestones = [int(m) for m in milestones]
        self.last_epoch = last_epoch + 1
        self.optimizer = optimizer
        for g in optimizer.param_groups:  # back to the initial lrs, before the sub-schedulers' first steps
            g["lr"] = g["initial_lr"]
        self.recursive_undo()  # undo the step each sub-scheduler took at its construction
        idx = bisect_right(self._milestones, 0)
        self._schedulers[idx]._initial_step()  # step 0 only for the one that runs at step 0
        self._last_lr = schedulers[idx].get_last_lr()

    def recursive_undo(self, sched=None) -> None:
        """Takes back the construction step of every (nested) sub-scheduler."""
        scheds = self if sched is None else sched
        if hasattr(scheds, "_schedulers"):
            for s in scheds._schedulers:
                self.recursive_undo(s)
        elif hasattr(scheds, "last_epoch"):
            scheds.last_epoch -= 1

    def step(self) -> None:
        self.last_epoch += 1
        idx = bisect_right(self._milestones, self.last_epoch)
        scheduler = self._schedulers[idx]
        if idx > 0 and self._milestones[idx - 1] == self.last_epoch:
            scheduler._update_lr(0)
        else:
            scheduler.step()
        self._last_lr = scheduler.get_last_lr()



class ReduceLROnPlateau(LRScheduler):
    """Multiplies the lrs by `factor` (not below `min_lr`; a change under `eps` is skipped) once a metric passed
    to `step(metric)` has not improved for more than `patience` steps, then waits `cooldown` steps before
    counting again. Improving: below best·(1 − threshold) ('min', 'rel'), best − threshold ('min', 'abs'),
    above best·(1 + threshold) ('max', 'rel') or best + threshold ('max', 'abs')."""

    _state_keys = ("factor", "min_lrs", "default_min_lr", "patience", "cooldown", "eps", "last_epoch",
                   "_last_lr", "mode", "threshold", "threshold_mode", "mode_worse", "best", "cooldown_counter",
                   "num_bad_epochs")

    def __init__(self, optimizer: Optimizer, mode: str = "min", factor: float = 0.1, patience: int = 10,
                 threshold: float = 1e-4, threshold_mode: str = "rel", cooldown: int = 0, min_lr=0,
                 eps: float = 1e-8):
        name = "ReduceLROnPlateau"
        _check_optimizer(name, optimizer)
        _check_number(name, "factor", factor, low=0, high=1, high_open=True)
        _check_int(name, "patience", patience, 0)
        _check_int(name, "cooldown", cooldown, 0)
        _check_number(name, "threshold", threshold, low=0)
        _check_number(name, "eps", eps, low=0)
        self.factor = factor
        self.optimizer = optimizer
        n = len(optimizer.param_groups)
        if isinstance(min_lr, (list, tuple)):
            if len(min_lr) != n:
                raise ValueError(f"{name}: expected {n} min_lrs (one per parameter group), got {len(min_lr)}")
            self.default_min_lr = None
            self.min_lrs = list(min_lr)
        else:
            self.default_min_lr = min_lr
            self.min_lrs = [min_lr] * n
        for v in self.min_lrs:
            _check_number(name, "min_lr", v, low=0)
        self.patience, self.cooldown, self.eps = patience, cooldown, eps
        self.last_epoch = 0
        self._last_lr = [g["lr"] for g in optimizer.param_groups]
        self._init_is_better(mode, threshold, threshold_mode)
        self._reset()

    def _reset(self) -> None:
        self.best = self.mode_worse
        self.cooldown_counter = 0
        self.num_bad_epochs = 0

    def step(self, metrics, epoch: int | None = None) -> None:
        """One evaluation's metric (a number, or a one-element array or tensor)."""
        current = float(metrics)
        if epoch is None:
            epoch = self.last_epoch + 1
        else:
            warnings.warn(EPOCH_DEPRECATION_WARNING, UserWarning, stacklevel=2)
        self.last_epoch = epoch
        if self._is_better(current, self.best):
            self.best = current
            self.num_bad_epochs = 0
        else:
            self.num_bad_epochs += 1
        if self.in_cooldown:
            self.cooldown_counter -= 1
            self.num_bad_epochs = 0  # bad epochs in cooldown do not count
        if self.num_bad_epochs > self.patience:
            self._reduce_lr()
            self.cooldown_counter = self.cooldown
            self.num_bad_epochs = 0
        self._last_lr = [g["lr"] for g in self.optimizer.param_groups]

    def _reduce_lr(self) -> None:
        if len(self.optimizer.param_groups) != len(self.min_lrs):
            if self.default_min_lr is None:
                raise RuntimeError(f"ReduceLROnPlateau: the optimizer has {len(self.optimizer.param_groups)} "
                                   f"parameter groups, {len(self.min_lrs)} when the scheduler was built (a group "
                                   f"added since?); set min_lrs to one per group")
            self.min_lrs = [self.default_min_lr] * len(self.optimizer.param_groups)
        for i, g in enumerate(self.optimizer.param_groups):
            old_lr = float(g["lr"])
            new_lr = max(old_lr * self.factor, self.min_lrs[i])
            if old_lr - new_lr > self.eps:
                g["lr"] = new_lr

    @property
    def in_cooldown(self) -> bool:
        return self.cooldown_counter > 0

    def _is_better(self, a: float, best: float) -> bool:
        if self.mode == "min" and self.threshold_mode == "rel":
            return a < best * (1.0 - self.threshold)
        if self.mode == "min" and self.threshold_mode == "abs":
            return a < best - self.threshold
        if self.mode == "max" and self.threshold_mode == "rel":
            return a > best * (self.threshold + 1.0)
        return a > best + self.threshold

    def _init_is_better(self, mode: str, threshold: float, threshold_mode: str) -> None:
        if mode not in ("min", "max"):
            raise ValueError(f"ReduceLROnPlateau: mode must be 'min' or 'max', got {mode!r}")
        if threshold_mode not in ("rel", "abs"):
            raise ValueError(f"ReduceLROnPlateau: threshold_mode must be 'rel' or 'abs', got {threshold_mode!r}")
        self.mode_worse = math.inf if mode == "min" else -math.inf
        self.mode, self.threshold, self.threshold_mode = mode, threshold, threshold_mode

    def load_state_dict(self, state: dict) -> None:
        super().load_state_dict(state)
        self._init_is_better(self.mode, self.threshold, self.threshold_mode)


# the four more in their own file (they build on the classes above)
from seqlab.optim.lr_scheduler_cyclic import ChainedScheduler, CyclicLR, MultiplicativeLR, PolynomialLR  # noqa: E402
