"""Anomaly detection, as `torch.autograd.detect_anomaly`: while on, backward checks what every op's
backward returned and raises at the first NaN, naming the op (its Function class) and which of its
gradients it was, instead of letting the NaN reach the parameters.

The check lives in engine.run_graph; engine.run_backward tests one module flag per call and takes that
path only while the check is on, so it costs nothing otherwise. Unlike torch, no traceback of the
forward call is recorded (seqlab's ops keep none).
"""
from __future__ import annotations

import functools
import warnings

from seqlab.autograd import engine

_enabled = False
_check_nan = True


def is_anomaly_enabled() -> bool:
    return _enabled


def is_anomaly_check_nan_enabled() -> bool:
    return _check_nan


def _set(mode: bool, check_nan: bool) -> None:
    global _enabled, _check_nan
    _enabled, _check_nan = bool(mode), bool(check_nan)
    engine._check_nan = _enabled and _check_nan


class set_detect_anomaly:
    """Switches anomaly detection on or off at once; in a ``with`` (or as a decorator) the previous
    mode comes back after (as torch)."""

    def __init__(self, mode: bool, check_nan: bool = True) -> None:
        self._prev = (_enabled, _check_nan)
        self.mode, self.check_nan = bool(mode), bool(check_nan)
        _set(self.mode, self.check_nan)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        _set(*self._prev)
        return False

    def __call__(self, fn):
        _set(*self._prev)  # as a decorator it changes nothing until the function runs
        mode, check_nan = self.mode, self.check_nan

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with set_detect_anomaly(mode, check_nan):
                return fn(*args, **kwargs)

        return wrapper


class detect_anomaly:
    """Context manager and decorator: anomaly detection on inside, the previous mode after. Warns on
    creation that it slows backward down (torch's words; Python shows a warning once per call site)."""

    def __init__(self, check_nan: bool = True) -> None:
        self.check_nan = bool(check_nan)
        warnings.warn("Anomaly Detection has been enabled. This mode will increase the runtime and should "
                      "only be enabled for debugging.", stacklevel=2)

    def __enter__(self):
        self._prev = (_enabled, _check_nan)
        _set(True, self.check_nan)
        return self

    def __exit__(self, *exc):
        _set(*self._prev)
        return False

    def __call__(self, fn):
        check_nan = self.check_nan

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with set_detect_anomaly(True, check_nan):  # it warned when the decorator was made
                return fn(*args, **kwargs)

        return wrapper
