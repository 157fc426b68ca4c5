"""Mixed precision's two names, for scripts written for torch: `autocast` and `GradScaler`.

seqlab computes in float32 throughout (NumPy has no bfloat16, and the chapter's models train fine in
float32), so `autocast` runs its block unchanged: silently when `enabled=False` (what scripts pass on a
CPU), with one warning when enabled, because torch would then compute in lower precision and the numbers
would differ. `GradScaler` is torch's loss scaler, working: it multiplies the loss, unscales the gradients,
skips the step when one is inf or NaN, and adjusts the scale, as torch's does with float32 gradients.
"""
from __future__ import annotations

import functools
import math
import warnings
from typing import Any

import numpy as np

from seqlab.backend import xp_of

_warned = False


class autocast:  # noqa: N801  (torch's name)
    """``with seqlab.autocast(device_type="cuda", dtype=seqlab.bfloat16):`` runs the block in float32.

    A context manager and a decorator, as torch's (``torch.amp.autocast``, ``torch.autocast``,
    ``torch.cuda.amp.autocast``)."""

    def __init__(self, device_type: str = "cuda", dtype: Any = None, enabled: bool = True,
                 cache_enabled: bool | None = None):
        self.device_type, self.dtype, self.enabled = device_type, dtype, bool(enabled)

    def __enter__(self) -> "autocast":
        global _warned
        if self.enabled and not _warned:
            _warned = True
            warnings.warn("seqlab has no mixed precision: autocast runs its block in float32, so values differ "
                          "from torch's float16/bfloat16 autocast (pass enabled=False to silence this)",
                          UserWarning, stacklevel=2)
        return self

    def __exit__(self, *exc) -> None:
        return None

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapped(*args, **kwargs):
            with self:
                return fn(*args, **kwargs)
        return wrapped


class GradScaler:
    """torch's dynamic loss scaling: ``scaler.scale(loss).backward(); scaler.step(opt); scaler.update()``.

    The loss is multiplied by `scale`; `step` first divides every gradient by it (`unscale_`, once per
    optimizer and iteration) and skips the optimizer's step when any gradient is inf or NaN. `update` then
    halves the scale (`backoff_factor`) after a skipped step, or doubles it (`growth_factor`) after
    `growth_interval` steps in a row without one. With `enabled=False` every method passes through.
    """

    def __init__(self, device: str = "cuda", init_scale: float = 2.0 ** 16, growth_factor: float = 2.0,
                 backoff_factor: float = 0.5, growth_interval: int = 2000, enabled: bool = True):
        if not growth_factor > 1.0:
            raise ValueError(f"GradScaler: growth_factor must be > 1.0, got {growth_factor}")
        if not 0.0 < backoff_factor < 1.0:
            raise ValueError(f"GradScaler: backoff_factor must be in (0, 1), got {backoff_factor}")
        self._enabled = bool(enabled)
        self._scale, self._init_scale = float(init_scale), float(init_scale)
        self._growth_factor, self._backoff_factor = float(growth_factor), float(backoff_factor)
        self._growth_interval, self._growth_tracker = int(growth_interval), 0
        self._found_inf: dict[int, bool] = {}  # id(optimizer) -> an inf or NaN among its gradients, this iteration

    def is_enabled(self) -> bool:
        return self._enabled

    def get_scale(self) -> float:
        return self._scale if self._enabled else 1.0

    def scale(self, outputs):
        """`outputs` (a tensor, or a list/tuple of them) times the scale."""
        if not self._enabled:
            return outputs
        if isinstance(outputs, (list, tuple)):
            return type(outputs)(self.scale(o) for o in outputs)
        return outputs * np.float32(self._scale)

    def unscale_(self, optimizer) -> None:
        """Divide the optimizer's gradients by the scale, in place (before clipping them, say)."""
        if not self._enabled:
            return
        if id(optimizer) in self._found_inf:
            raise RuntimeError("unscale_() has already been called on this optimizer since the last update().")
        inv = 1.0 / self._scale
        found = False
        for group in optimizer.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                p.grad *= p.grad.dtype.type(inv)
                found = found or not bool(xp_of(p.grad).isfinite(p.grad).all())
        self._found_inf[id(optimizer)] = found

    def step(self, optimizer, *args, **kwargs):
        """`optimizer.step()` on unscaled gradients, unless one is inf or NaN (then None, and no step)."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if id(optimizer) not in self._found_inf:
            self.unscale_(optimizer)
        if self._found_inf[id(optimizer)]:
            return None
        return optimizer.step(*args, **kwargs)

    def update(self, new_scale: float | None = None) -> None:
        """Adjust the scale from this iteration's steps (or set it to `new_scale`); start a new iteration."""
        if not self._enabled:
            return
        if new_scale is not None:
            self._scale = float(new_scale)
        elif any(self._found_inf.values()):
            self._scale *= self._backoff_factor
            self._growth_tracker = 0
        else:
            self._growth_tracker += 1
            if self._growth_tracker == self._growth_interval:
                grown = self._scale * self._growth_factor
                self._scale = grown if math.isfinite(np.float32(grown)) else self._scale
                self._growth_tracker = 0
        self._found_inf = {}

    def state_dict(self) -> dict:
        if not self._enabled:
            return {}
        return {"scale": self._scale, "growth_factor": self._growth_factor, "backoff_factor": self._backoff_factor,
                "growth_interval": self._growth_interval, "_growth_tracker": self._growth_tracker}

    def load_state_dict(self, state: dict) -> None:
        if not self._enabled:
            return
        if not state:
            raise RuntimeError("The source state dict is empty, possibly because it was saved from a disabled "
                               "instance of GradScaler.")
        self._scale = float(state["scale"])
        self._growth_factor, self._backoff_factor = float(state["growth_factor"]), float(state["backoff_factor"])
        self._growth_interval, self._growth_tracker = int(state["growth_interval"]), int(state["_growth_tracker"])
