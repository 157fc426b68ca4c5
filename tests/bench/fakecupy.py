"""A strict CPU stand-in for CuPy, so the `--device cuda` code path runs in CI without a GPU.

Its arrays are `DeviceArray`, a NumPy subclass that behaves as CuPy's arrays do
where it matters for finding bugs: an operation that mixes a device array with
a plain NumPy array (anything but a scalar or a 0-d array) raises TypeError,
and every result of an operation on device arrays is a device array. The
module has only the CuPy names seqlab uses; any other raises AttributeError,
as a name CuPy lacks would (the `cuda` namespace holds `Device` and
`runtime`, nothing else).

What it cannot catch: `np.asarray` of a device array (a NumPy subclass
converts silently where CuPy raises) and `isinstance(x, np.ndarray)` checks,
which a DeviceArray passes. Use with the `fake_cupy` fixture of conftest.py.
"""
from __future__ import annotations

import types

import numpy as np


class DeviceArray(np.ndarray):
    """An array "on the device"."""

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        outs = kwargs.get("out", ())
        refuse_host_arrays(inputs + tuple(outs), f"{ufunc.__name__}.{method}")
        inputs = to_host(inputs)
        if outs:
            kwargs["out"] = to_host(tuple(outs))
        result = getattr(ufunc, method)(*inputs, **kwargs)
        if outs:
            return outs[0] if len(outs) == 1 else outs
        return to_device(result)

    def __array_function__(self, func, types_, args, kwargs):
        refuse_host_arrays(tuple(args) + tuple(kwargs.values()), func.__name__)
        return to_device(func(*to_host(args), **to_host(kwargs)))


def refuse_host_arrays(values, where: str) -> None:
    for v in values:
        if isinstance(v, (tuple, list)):
            refuse_host_arrays(tuple(v), where)
        elif isinstance(v, np.ndarray) and not isinstance(v, DeviceArray) and v.ndim > 0:
            raise TypeError(f"{where}: a NumPy array of shape {v.shape} mixed with device arrays "
                            "(CuPy refuses this)")


def to_host(value):
    if isinstance(value, DeviceArray):
        return value.view(np.ndarray)
    if isinstance(value, (tuple, list)):
        return type(value)(to_host(v) for v in value)
    if isinstance(value, dict):
        return {k: to_host(v) for k, v in value.items()}
    return value


def to_device(value):
    if isinstance(value, np.generic):
        return np.asarray(value).view(DeviceArray)
    if isinstance(value, np.ndarray):
        return value.view(DeviceArray)
    if isinstance(value, (tuple, list)):
        return type(value)(to_device(v) for v in value)
    return value


class _Device:
    synchronized = 0

    def synchronize(self) -> None:
        _Device.synchronized += 1


class _Generator:
    def __init__(self, seed=None):
        self._rng = np.random.default_rng(seed)

    def random(self, size=None, dtype=np.float64):
        return to_device(self._rng.random(size, dtype=dtype))


def make_module() -> types.ModuleType:
    """A fresh fake `cupy` module (its `cuda.Device` counts synchronizations)."""
    cp = types.ModuleType("cupy")
    cp.ndarray = DeviceArray

    def asarray(a, dtype=None):
        if isinstance(a, DeviceArray):
            return a if dtype is None or a.dtype == dtype else a.astype(dtype)
        return np.array(a, dtype=dtype).view(DeviceArray)

    cp.asarray = asarray
    cp.asnumpy = lambda a: np.array(to_host(a))
    cp.random = types.SimpleNamespace(default_rng=_Generator)
    _Device.synchronized = 0
    cp.cuda = types.SimpleNamespace(Device=_Device, runtime=types.SimpleNamespace(getDeviceCount=lambda: 1))

    def numpy_function(name):
        f = getattr(np, name)  # AttributeError for a name NumPy lacks too
        if isinstance(f, np.ufunc) or not callable(f):
            return f

        def on_device(*args, **kwargs):
            refuse_host_arrays(tuple(args) + tuple(kwargs.values()), name)
            return to_device(f(*to_host(args), **to_host(kwargs)))
        return on_device

    cp.__getattr__ = numpy_function
    return cp


def make_cupyx_special() -> types.ModuleType:
    from scipy.special import erf

    special = types.ModuleType("cupyx.scipy.special")
    special.erf = lambda x: to_device(erf(to_host(x)))
    return special
