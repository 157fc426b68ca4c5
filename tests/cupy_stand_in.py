"""A stand-in for CuPy on the CPU, so the GPU code path runs in CI without a GPU.

seqlab's device code is the NumPy code with `xp` = CuPy, and what breaks it on
a real GPU is code that quietly assumes NumPy: passing a device array to a
NumPy function (or to Numba, MKL, SciPy), mixing a host array into device
arithmetic, setting NumPy-only flags, taking a path that `xp is np` guards for
the wrong reason. CuPy refuses all of these with a TypeError or an
AttributeError; this module's arrays refuse them the same way, while doing
the arithmetic with NumPy underneath (so results match the CPU's to rounding).

What it copies from CuPy (https://docs.cupy.dev/en/stable/reference/ndarray.html):
- no implicit conversion either way: `np.asarray(device_array)` raises, and a
  NumPy array given to a device function, operator or ufunc raises
  ("Unsupported type"; a 0-d one too, which CuPy may take as a scalar: seqlab
  never passes one); Python and NumPy scalars are fine;
- NumPy's functions called on device arrays dispatch to the device module
  (NEP 13/18), as CuPy's `__array_ufunc__` / `__array_function__` do;
- reductions and single elements are 0-d device arrays, not host scalars;
  `float()`, `int()`, `bool()` and `.item()` copy them to the host;
- `asarray`/`array` copy host data to the device (never a view of it), and
  `asnumpy`/`.get()` copy back;
- `flags` has `c_contiguous`, `f_contiguous` and `owndata`, and no
  `writeable`; there is no `ctypes` nor `__array_interface__`;
- the module is named "cupy", with `cuda` (Device, runtime, streams),
  `get_default_memory_pool()`, `random.default_rng` and `cupyx.scipy.special.erf`.

What it does not copy: speed, asynchrony, CuPy's exact coverage of NumPy's API
(any NumPy function is accepted here), cuRAND's random streams, and CuPy's
behaviour on out-of-bounds indices. Indexing with host integer arrays, and
setting items at them from a host array, are allowed, as in CuPy; setting a
slice from a host array is refused (CuPy fills slices from scalars and device
arrays only), and so are Python lists as operands. Keyword arguments CuPy's
functions lack are refused where seqlab met one (`_CUPY_LACKS`).
"""
from __future__ import annotations

import sys
import types

import numpy as np

_REFUSE = ("Implicit conversion to a NumPy array is not allowed. "
           "Please use `.get()` to construct a NumPy array explicitly.")


def _dev(x):
    """The NumPy array behind a device argument; host arrays are refused."""
    if isinstance(x, ndarray):
        return x._a
    if isinstance(x, np.ndarray):
        raise TypeError(f"Unsupported type {type(x)}")
    if isinstance(x, (list, tuple)):
        return type(x)(_dev(v) for v in x)
    return x


def _operand(x):
    """An operand of an operator or ufunc, unchanged: a Python list is refused (CuPy takes arrays and scalars
    there; functions such as concatenate take lists of arrays)."""
    if isinstance(x, list):
        raise TypeError(f"Unsupported type {type(x)}")
    return x


def _has_array_index(key) -> bool:
    return any(isinstance(k, (ndarray, np.ndarray, list)) for k in (key if isinstance(key, tuple) else (key,)))


def _loose(x):
    """As `_dev`, but host arrays pass (indices and values of item assignment, as CuPy allows)."""
    if isinstance(x, ndarray):
        return x._a
    if isinstance(x, tuple):
        return tuple(_loose(v) for v in x)
    return x


def _wrap(r):
    if isinstance(r, np.ndarray):
        return ndarray(r)
    if isinstance(r, np.generic):  # CuPy never hands back a host scalar: a 0-d device array
        return ndarray(np.asarray(r))
    if isinstance(r, tuple):
        return tuple(_wrap(v) for v in r)
    if isinstance(r, list):
        return [_wrap(v) for v in r]
    return r


def _call(fn, args, kwargs):
    return _wrap(fn(*_dev(tuple(args)), **{k: _dev(v) for k, v in kwargs.items()}))


# keyword arguments NumPy's function takes and CuPy's does not (the ones seqlab has run into)
_CUPY_LACKS = {"indices": {"sparse"}}


class _Flags:
    __slots__ = ("c_contiguous", "f_contiguous", "owndata")  # no `writeable`: setting it raises, as on CuPy

    def __init__(self, a):
        self.c_contiguous = a.flags.c_contiguous
        self.f_contiguous = a.flags.f_contiguous
        self.owndata = a.flags.owndata


# ndarray methods CuPy has too (called with device arguments, results on the device)
_METHODS = {
    "all", "any", "argmax", "argmin", "argsort", "astype", "clip", "conj", "copy", "cumsum",
    "dot", "fill", "flatten", "max", "mean", "min", "nonzero", "prod", "ravel", "repeat", "reshape", "round",
    "sort", "squeeze", "std", "sum", "swapaxes", "take", "trace", "transpose", "var", "view",
}
_ATTRS = {"shape", "dtype", "ndim", "size", "itemsize", "nbytes", "strides"}


class ndarray:  # noqa: N801 - CuPy's name
    """A device array: a NumPy array that will not be mixed with host arrays."""

    __slots__ = ("_a",)
    __array_priority__ = 100

    def __init__(self, a):
        self._a = a

    # ---- the NumPy protocols: conversion refused, NumPy's functions dispatched here
    def __array__(self, *args, **kwargs):
        raise TypeError(_REFUSE)

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        return _call(getattr(ufunc, method), tuple(_operand(x) for x in inputs), kwargs)

    def __array_function__(self, func, types_, args, kwargs):
        return _call(func, args, kwargs)

    # ---- attributes
    def __getattr__(self, name):
        if name in _ATTRS:
            return getattr(self._a, name)
        if name in _METHODS:
            method = getattr(self._a, name)
            return lambda *args, **kwargs: _call(method, args, kwargs)
        raise AttributeError(f"'cupy.ndarray' object has no attribute {name!r}")

    def diagonal(self, offset=0, axis1=0, axis2=1):
        return diagonal(self, offset, axis1, axis2)

    @property
    def T(self):  # noqa: N802 - NumPy's name
        return ndarray(self._a.T)

    @property
    def flags(self):
        return _Flags(self._a)

    @property
    def base(self):
        return None if self._a.base is None else ndarray(self._a.base)

    @property
    def device(self):
        return cuda.Device(0)

    def get(self, stream=None, order="C", out=None):
        return np.array(self._a, order=order)

    def item(self):
        return self._a.item()

    def tolist(self):
        return self._a.tolist()

    def __repr__(self):
        return repr(self._a).replace("array(", "cupy.array(", 1)

    # ---- host scalars, explicitly
    def __float__(self):
        return float(self._a)

    def __int__(self):
        return int(self._a)

    def __bool__(self):
        return bool(self._a)

    def __len__(self):
        return len(self._a)

    def __iter__(self):
        return (_wrap(v) for v in self._a)

    # ---- items
    def __getitem__(self, key):
        return _wrap(self._a[_loose(key)])

    def __setitem__(self, key, value):
        if isinstance(value, np.ndarray) and value.ndim > 0 and not _has_array_index(key):
            # CuPy fills a slice with `fill`, which takes scalars and device arrays only
            raise ValueError("non-scalar numpy.ndarray cannot be used for fill")
        self._a[_loose(key)] = _loose(value)

    # ---- operators: device operands only
    def _op(name):  # noqa: N805 - a helper that builds methods
        def op(self, other):
            return _wrap(getattr(self._a, name)(_dev(_operand(other))))
        op.__name__ = name
        return op

    def _iop(name):  # noqa: N805
        def op(self, other):
            getattr(self._a, name)(_dev(_operand(other)))
            return self
        op.__name__ = name
        return op

    for _n in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "and", "or", "xor",
               "lshift", "rshift"):
        locals()[f"__{_n}__"] = _op(f"__{_n}__")
        locals()[f"__r{_n}__"] = _op(f"__r{_n}__")
        locals()[f"__i{_n}__"] = _iop(f"__i{_n}__")
    for _n in ("lt", "le", "gt", "ge", "eq", "ne"):
        locals()[f"__{_n}__"] = _op(f"__{_n}__")
    del _n, _op, _iop
    __hash__ = None

    def __neg__(self):
        return ndarray(-self._a)

    def __pos__(self):
        return ndarray(+self._a)

    def __abs__(self):
        return ndarray(abs(self._a))

    def __invert__(self):
        return ndarray(~self._a)


# ---- the module -------------------------------------------------------------------------------

class _UFunc:
    """A NumPy ufunc taking device arrays: call, .at, .reduce, .outer, .accumulate."""

    def __init__(self, uf):
        self._uf = uf
        self.__name__ = uf.__name__

    def __call__(self, *args, **kwargs):
        if "out" in kwargs and not isinstance(kwargs["out"], tuple):
            kwargs["out"] = (kwargs["out"],)
        return _call(self._uf, tuple(_operand(x) for x in args), kwargs)

    def __getattr__(self, name):
        method = getattr(self._uf, name)
        if not callable(method):
            return method
        return lambda *args, **kwargs: _call(method, args, kwargs)


def asarray(a, dtype=None, order=None, copy=None):
    if isinstance(a, ndarray):
        return a if dtype is None or a.dtype == dtype else a.astype(dtype)
    return ndarray(np.array(a, dtype=dtype, order=order or "K", copy=True))  # host → device: a copy


def array(a, dtype=None, copy=True, order="K", ndmin=0):
    if isinstance(a, ndarray):
        return ndarray(np.array(a._a, dtype=dtype, copy=copy, order=order, ndmin=ndmin))
    return ndarray(np.array(a, dtype=dtype, copy=True, order=order, ndmin=ndmin))


def ascontiguousarray(a, dtype=None):
    return ndarray(np.ascontiguousarray(_dev(a), dtype=dtype))


def diagonal(a, offset=0, axis1=0, axis2=1):
    """CuPy's diagonal is a view that can be written into; NumPy's is a read-only one."""
    view = np.diagonal(_dev(a), offset, axis1, axis2)
    view.flags.writeable = _dev(a).flags.writeable
    return ndarray(view)


def asnumpy(a, stream=None, order="C", out=None):
    return a.get() if isinstance(a, ndarray) else np.asarray(a, order=order)


class _Generator:
    """cupy.random.Generator's few methods, drawing with NumPy (not cuRAND's stream)."""

    def __init__(self, seed):
        self._g = np.random.default_rng(seed)

    def random(self, size=None, dtype=np.float64, out=None):
        return ndarray(np.asarray(self._g.random(size, dtype=dtype)))

    def standard_normal(self, size=None, dtype=np.float64, out=None):
        return ndarray(np.asarray(self._g.standard_normal(size, dtype=dtype)))

    def integers(self, low, high=None, size=None, dtype=np.int64, endpoint=False):
        return ndarray(np.asarray(self._g.integers(low, high, size, dtype=dtype, endpoint=endpoint)))


class _Stream:
    def synchronize(self):
        pass


class _Device:
    synchronized = 0  # calls of synchronize() since `install` (tests/bench checks the benchmark's)

    def __init__(self, device=0):
        self.id = int(device)

    def synchronize(self):
        _Device.synchronized += 1

    def use(self):
        pass


class _Pool:
    def free_all_blocks(self):
        pass

    def used_bytes(self):
        return 0

    def total_bytes(self):
        return 0


cuda = types.SimpleNamespace(
    Device=_Device,
    get_current_stream=lambda: _Stream(),
    runtime=types.SimpleNamespace(getDeviceCount=lambda: 1, runtimeGetVersion=lambda: 12080,
                                  driverGetVersion=lambda: 12080),
)


def _make_module():
    mod = types.ModuleType("cupy", "A stand-in for CuPy (tests/cupy_stand_in.py): NumPy arrays that refuse NumPy.")
    mod.__file__ = __file__
    names = {
        "ndarray": ndarray, "asarray": asarray, "array": array, "ascontiguousarray": ascontiguousarray,
        "asnumpy": asnumpy, "diagonal": diagonal, "cuda": cuda, "get_default_memory_pool": lambda: _Pool(),
        "random": types.SimpleNamespace(default_rng=lambda seed=None: _Generator(seed)),
        "__version__": "0.0-fake",
    }
    mod.__dict__.update(names)

    def __getattr__(name):  # everything else: NumPy's, on device arrays
        obj = getattr(np, name)
        if isinstance(obj, np.ufunc):
            return _UFunc(obj)
        if isinstance(obj, type) or not callable(obj):  # dtypes (float32, ...), constants (inf, pi)
            return obj

        def on_device(*args, **kwargs):
            lacks = _CUPY_LACKS.get(name, set()) & kwargs.keys()
            if lacks:
                raise TypeError(f"{name}() got an unexpected keyword argument {sorted(lacks)[0]!r}")
            return _call(obj, args, kwargs)
        return on_device

    mod.__getattr__ = __getattr__
    mod.get_array_module = lambda *args: mod if any(isinstance(a, ndarray) for a in args) else np
    return mod


cupy = _make_module()


def _erf(x):
    from scipy.special import erf

    return _call(erf, (x,), {})


cupyx = types.ModuleType("cupyx")
cupyx.scipy = types.ModuleType("cupyx.scipy")
cupyx.scipy.special = types.ModuleType("cupyx.scipy.special")
cupyx.scipy.special.erf = _erf
MODULES = {"cupy": cupy, "cupyx": cupyx, "cupyx.scipy": cupyx.scipy, "cupyx.scipy.special": cupyx.scipy.special}


def install(monkeypatch) -> types.ModuleType:
    """Make seqlab see this module as CuPy with one GPU (pytest's `monkeypatch` undoes it); returns it."""
    from seqlab import backend
    from seqlab import random as seqlab_random

    for name, module in MODULES.items():
        monkeypatch.setitem(sys.modules, name, module)
    monkeypatch.setattr(backend, "_cupy", cupy)
    monkeypatch.setattr(backend, "_CUDA_OK", True)
    monkeypatch.setattr(seqlab_random, "_gpu_generator", None)
    _Device.synchronized = 0
    return cupy
