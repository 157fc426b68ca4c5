"""`seqlab.testing`: torch.testing's `assert_close` and `make_tensor`.

`assert_close(actual, expected)` passes when every element satisfies torch's rule
|actual - expected| <= atol + rtol * |expected| (equal infinities match; NaNs only with `equal_nan`), with
tolerances chosen by dtype as torch's when neither is given:

    dtype       rtol     atol
    float16     1e-3     1e-5
    float32     1.3e-6   1e-5
    float64     1e-7     1e-7
    complex64   1.3e-6   1e-5
    complex128  1e-7     1e-7
    other       0        0      (integers and bools compare exactly)

Inputs are seqlab Tensors, NumPy arrays, Python or NumPy numbers and bools, None, and sequences or mappings
of these (compared item by item; a failure names the item, "[0]['w']"). Shapes always have to agree,
dtypes and devices unless check_dtype / check_device is False (then both are promoted / moved to the CPU),
strides only with check_stride. Failures raise AssertionError with torch's message; the names are
seqlab's (`seqlab.float32`, `seqlab.Size([2, 3])` where torch writes `torch.float32`, `torch.Size(...)`).
seqlab has only dense (strided) tensors, so `check_layout` has nothing to compare.
"""
from __future__ import annotations

import cmath
import collections.abc
import math

import numpy as np

from seqlab import backend
from seqlab import random as _random
from seqlab.autograd.tensor import Tensor
from seqlab.typeinfo import Size, as_dtype

__all__ = ["assert_close", "make_tensor"]

_PRECISIONS = {np.dtype(np.float16): (1e-3, 1e-5), np.dtype(np.float32): (1.3e-6, 1e-5),
               np.dtype(np.float64): (1e-7, 1e-7), np.dtype(np.complex64): (1.3e-6, 1e-5),
               np.dtype(np.complex128): (1e-7, 1e-7)}
_NUMBER_DTYPES = {int: np.dtype(np.int64), float: np.dtype(np.float64), complex: np.dtype(np.complex128)}


class _Failure(Exception):
    """A failed comparison: the exception type and message to raise, and the item it is about."""

    def __init__(self, kind: type, msg: str, item: tuple = ()):
        super().__init__(msg)
        self.kind, self.msg, self.item = kind, msg, item

    def to_error(self, msg=None) -> Exception:
        if isinstance(msg, str):
            return self.kind(msg)
        text = self.msg
        if self.item:
            text += f"\n\nThe failure occurred for item {''.join(str([k]) for k in self.item)}"
        return self.kind(msg(text) if callable(msg) else text)


class _Unsupported(Exception):
    pass


def _dtype_name(dtype) -> str:
    return f"seqlab.{np.dtype(dtype).name}"


def _tolerances(dtypes, rtol, atol, item) -> tuple:
    if (rtol is None) != (atol is None):
        raise _Failure(ValueError, "Both 'rtol' and 'atol' must be either specified or omitted, but got no "
                                   f"{'rtol' if rtol is None else 'atol'}.", item)
    if rtol is not None:
        return rtol, atol
    rtols, atols = zip(*[_PRECISIONS.get(np.dtype(d), (0.0, 0.0)) for d in dtypes])
    return max(rtols), max(atols)


def _diff_msg(kind: str, diff, idx, tol, equality: bool) -> str:
    msg = f"{kind.title()} difference: {diff}" if idx is None else f"Greatest {kind} difference: {diff} at index {idx}"
    return msg + ("" if equality else f" (up to {tol} allowed)") + "\n"


def _mismatch_msg(identifier: str, extra: str, abs_diff, abs_idx, atol, rel_diff, rel_idx, rtol) -> str:
    equality = rtol == 0 and atol == 0
    msg = f"{identifier} are not {'equal' if equality else 'close'}!\n\n{extra.strip()}\n"
    msg += _diff_msg("absolute", abs_diff, abs_idx, atol, equality)
    msg += _diff_msg("relative", rel_diff, rel_idx, rtol, equality)
    return msg.strip()


def _scalar_msg(actual, expected, rtol, atol) -> str:
    abs_diff = abs(actual - expected)
    rel_diff = float("inf") if expected == 0 else abs_diff / abs(expected)
    return _mismatch_msg("Scalars", f"Expected {expected} but got {actual}.", abs_diff, None, atol, rel_diff, None,
                         rtol)


def _tensor_msg(actual: np.ndarray, expected: np.ndarray, matches: np.ndarray, rtol, atol) -> str:
    total, bad = matches.size, matches.size - int(matches.sum())
    extra = f"Mismatched elements: {bad} / {total} ({bad / total:.1%})"
    a, e, ok = actual.reshape(-1), expected.reshape(-1), matches.reshape(-1)
    if a.dtype.kind not in "fc":  # integers and bools: differences as int64, relative ones as float32 (torch's)
        a, e = a.astype(np.int64), e.astype(np.int64)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        abs_diff = np.abs(a - e)
        abs_diff[ok] = 0
        if a.dtype.kind not in "fc":
            rel_diff = abs_diff.astype(np.float32) / np.abs(e).astype(np.float32)
        else:
            rel_diff = abs_diff / np.abs(e)
    rel_diff[ok] = 0

    def where(flat: int) -> tuple:
        return tuple(int(i) for i in np.unravel_index(flat, matches.shape))

    i_abs, i_rel = int(np.argmax(abs_diff)), int(np.argmax(rel_diff))
    return _mismatch_msg("Tensor-likes", extra, abs_diff[i_abs].item(), where(i_abs), atol, rel_diff[i_rel].item(),
                         where(i_rel), rtol)


def _isclose(actual: np.ndarray, expected: np.ndarray, rtol, atol, equal_nan: bool) -> np.ndarray:
    close = actual == expected
    floating = actual.dtype.kind in "fc"
    if equal_nan and floating:
        close |= np.isnan(actual) & np.isnan(expected)
    if rtol == 0 and atol == 0:
        return close
    if not floating:  # torch computes the tolerance of integers in the default float dtype
        actual, expected = actual.astype(np.float32), expected.astype(np.float32)
    with np.errstate(invalid="ignore", over="ignore"):
        error = np.abs(actual - expected)
        close |= np.isfinite(error) & (error <= atol + rtol * np.abs(expected))
    return close


class _NonePair:
    def __init__(self, actual, expected, item, **options):
        if not (actual is None or expected is None):
            raise _Unsupported
        self.actual, self.expected, self.item = actual, expected, item

    def compare(self):
        if not (self.actual is None and self.expected is None):
            raise _Failure(AssertionError, f"None mismatch: {self.actual} is not {self.expected}", self.item)


class _BoolPair:
    def __init__(self, actual, expected, item, **options):
        if not all(isinstance(x, (bool, np.bool_)) for x in (actual, expected)):
            raise _Unsupported
        self.actual, self.expected, self.item = bool(actual), bool(expected), item

    def compare(self):
        if self.actual is not self.expected:
            raise _Failure(AssertionError, f"Booleans mismatch: {self.actual} is not {self.expected}", self.item)


class _NumberPair:
    def __init__(self, actual, expected, item, *, rtol, atol, equal_nan, check_dtype, **options):
        if not all(isinstance(x, (int, float, complex, np.number)) for x in (actual, expected)):
            raise _Unsupported
        self.actual, self.expected = (x.item() if isinstance(x, np.number) else x for x in (actual, expected))
        self.item, self.equal_nan, self.check_dtype = item, equal_nan, check_dtype
        self.rtol, self.atol = _tolerances([_NUMBER_DTYPES[type(x)] for x in (self.actual, self.expected)], rtol,
                                           atol, item)

    def compare(self):
        a, e = self.actual, self.expected
        if self.check_dtype and type(a) is not type(e):
            raise _Failure(AssertionError, f"The (d)types do not match: {type(a)} != {type(e)}.", self.item)
        if a == e or (self.equal_nan and cmath.isnan(a) and cmath.isnan(e)):
            return
        diff = abs(a - e)
        if cmath.isfinite(diff) and diff <= self.atol + self.rtol * abs(e):
            return
        raise _Failure(AssertionError, _scalar_msg(a, e, self.rtol, self.atol), self.item)


class _TensorPair:
    def __init__(self, actual, expected, item, *, allow_subclasses, rtol, atol, equal_nan, check_device,
                 check_dtype, check_layout, check_stride, **options):
        related = isinstance(actual, type(expected)) or isinstance(expected, type(actual))
        if not related or (not allow_subclasses and type(actual) is not type(expected)):
            raise _Unsupported
        if not all(isinstance(x, (Tensor, np.ndarray)) for x in (actual, expected)):
            raise _Unsupported
        self.actual, self.expected = (x.data if isinstance(x, Tensor) else x for x in (actual, expected))
        self.item, self.equal_nan = item, equal_nan
        self.check_device, self.check_dtype, self.check_stride = check_device, check_dtype, check_stride
        self.rtol, self.atol = _tolerances([self.actual.dtype, self.expected.dtype], rtol, atol, item)

    def _attribute(self, name, a, e):
        raise _Failure(AssertionError, f"The values for attribute '{name}' do not match: {a} != {e}.", self.item)

    def compare(self):
        a, e = self.actual, self.expected
        if a.shape != e.shape:
            self._attribute("shape", Size(a.shape), Size(e.shape))
        if self.check_stride:
            sa, se = (tuple(s // x.itemsize for s in x.strides) for x in (a, e))
            if sa != se:
                self._attribute("stride()", sa, se)
        da, de = backend.device_of(a), backend.device_of(e)
        if self.check_device and da != de:
            self._attribute("device", da, de)
        if self.check_dtype and a.dtype != e.dtype:
            self._attribute("dtype", _dtype_name(a.dtype), _dtype_name(e.dtype))
        a, e = backend.to_numpy(a), backend.to_numpy(e)
        if a.dtype != e.dtype:
            from seqlab.toplevel_extra import promote_types

            common = np.dtype(promote_types(a.dtype, e.dtype))
            a, e = a.astype(common), e.astype(common)
        matches = _isclose(a, e, self.rtol, self.atol, self.equal_nan)
        if matches.all():
            return
        if a.shape == ():
            msg = _scalar_msg(a.item(), e.item(), self.rtol, self.atol)
        else:
            msg = _tensor_msg(a, e, matches, self.rtol, self.atol)
        raise _Failure(AssertionError, msg, self.item)


_PAIRS = (_NonePair, _BoolPair, _NumberPair, _TensorPair)


def _pairs(actual, expected, item: tuple, options: dict) -> list:
    """The leaves of two nested inputs, paired; torch's errors for mismatched lengths, keys or types."""
    seq = collections.abc.Sequence
    if isinstance(actual, seq) and isinstance(expected, seq) and not isinstance(actual, str) \
            and not isinstance(expected, str):
        if len(actual) != len(expected):
            raise _Failure(AssertionError, f"The length of the sequences mismatch: {len(actual)} != {len(expected)}",
                           item)
        return [p for i in range(len(actual)) for p in _pairs(actual[i], expected[i], (*item, i), options)]
    if isinstance(actual, collections.abc.Mapping) and isinstance(expected, collections.abc.Mapping):
        keys_a, keys_e = set(actual.keys()), set(expected.keys())
        if keys_a != keys_e:
            raise _Failure(AssertionError, "The keys of the mappings do not match:\n"
                                           f"Missing keys in the actual mapping: {sorted(keys_e - keys_a)}\n"
                                           f"Additional keys in the actual mapping: {sorted(keys_a - keys_e)}", item)
        try:
            keys = sorted(keys_a)
        except TypeError:
            keys = list(keys_a)
        return [p for k in keys for p in _pairs(actual[k], expected[k], (*item, k), options)]
    for pair in _PAIRS:
        try:
            return [pair(actual, expected, item, **options)]
        except _Unsupported:
            continue
    raise _Failure(TypeError, f"No comparison pair was able to handle inputs of type {type(actual)} and "
                              f"{type(expected)}.", item)


def assert_close(actual, expected, *, allow_subclasses: bool = True, rtol: float | None = None,
                 atol: float | None = None, equal_nan: bool = False, check_device: bool = True,
                 check_dtype: bool = True, check_layout: bool = True, check_stride: bool = False, msg=None) -> None:
    """Raise AssertionError unless `actual` and `expected` are close, as torch.testing.assert_close (see the
    module docstring for the tolerances). `msg` replaces the message (a str) or edits it (a callable)."""
    __tracebackhide__ = True
    options = dict(allow_subclasses=allow_subclasses, rtol=rtol, atol=atol, equal_nan=equal_nan,
                   check_device=check_device, check_dtype=check_dtype, check_layout=check_layout,
                   check_stride=check_stride)
    try:
        pairs = _pairs(actual, expected, (), options)  # all pairs first: a length or key error wins, as torch's
        for pair in pairs:
            pair.compare()
    except _Failure as failure:
        raise failure.to_error(msg) from None


def _bounds(low, high, dtype: np.dtype, lowest, highest, default_low, default_high) -> tuple:
    """torch's range rules: defaults by dtype, NaN and empty ranges refused, clamped to what the dtype holds."""
    low = default_low if low is None else low
    high = default_high if high is None else high
    if any(isinstance(v, float) and math.isnan(v) for v in (low, high)):
        raise ValueError(f"`low` and `high` cannot be NaN, but got low={low} and high={high}")
    if low == high and dtype.kind in "fc":
        raise ValueError("Passing `low==high` to `seqlab.testing.make_tensor` for floating or complex types is not "
                         "supported (torch deprecates it)")
    if low >= high:
        raise ValueError(f"`low` must be less than `high`, but got {low} >= {high}")
    if high < lowest or low >= highest:
        raise ValueError(f"The value interval specified by `low` and `high` is [{low}, {high}), but "
                         f"{_dtype_name(dtype)} only supports [{lowest}, {highest})")
    low, high = min(max(low, lowest), highest), min(max(high, lowest), highest)
    return (math.ceil(low), math.ceil(high)) if dtype.kind in "biu" else (low, high)


def make_tensor(*shape, dtype, device, low: float | None = None, high: float | None = None,
                requires_grad: bool = False, noncontiguous: bool = False, exclude_zero: bool = False) -> Tensor:
    """A Tensor of `shape` with values drawn uniformly from [low, high), as torch.testing.make_tensor.
    Default ranges: bool [0, 2), unsigned [0, 10), signed integers [-9, 10), floats and complex [-9, 9).
    `noncontiguous` gives a strided view (every second element of a last dimension twice as long);
    `exclude_zero` replaces zeros by 1 (integers) or the dtype's smallest normal number (floats).
    Values come from seqlab's generator, so `seqlab.manual_seed` repeats them."""
    if len(shape) == 1 and isinstance(shape[0], collections.abc.Sequence):
        shape = shape[0]
    shape = tuple(int(s) for s in shape)
    dt = as_dtype(dtype)
    if requires_grad and dt.kind in "biu":
        raise ValueError(f"`requires_grad=True` is not supported for boolean and integral dtypes, but got "
                         f"dtype={_dtype_name(dt)}")
    noncontiguous = noncontiguous and math.prod(shape) > 1
    full_shape = (*shape[:-1], 2 * shape[-1]) if noncontiguous else shape
    gen = _random.default_generator()
    if dt.kind == "b":
        low, high = _bounds(low, high, dt, 0, 2, 0, 2)
        arr = gen.integers(low, high, full_shape).astype(dt)
    elif dt.kind in "iu":
        info = np.iinfo(dt)
        low, high = _bounds(low, high, dt, int(info.min), int(info.max) + (dt != np.int64), -9, 10)
        arr = gen.integers(low, high, full_shape, dtype=np.int64 if dt != np.uint64 else np.uint64).astype(dt)
    elif dt.kind in "fc":
        info = np.finfo(dt)
        low, high = _bounds(low, high, dt, float(info.min), float(info.max), -9, 9)
        real = np.finfo(dt).dtype  # complex: real and imaginary parts drawn alike
        parts = 2 if dt.kind == "c" else 1
        # in float64, then rounded to the dtype; halved and doubled so that [finfo.min, finfo.max) cannot overflow
        draws = 2 * (low / 2 + (high / 2 - low / 2) * gen.random((*full_shape, parts)))
        draws = np.minimum(draws.astype(real), np.nextafter(real.type(high), real.type(low)))
        arr = draws[..., 0] if parts == 1 else (draws[..., 0] + 1j * draws[..., 1]).astype(dt)
        arr = arr.copy()  # contiguous (a 0-d one stays 0-d)
    else:
        raise TypeError(f"The requested dtype '{_dtype_name(dt)}' is not supported by seqlab.testing.make_tensor().")
    if noncontiguous:
        arr = arr[..., 1::2]  # offset by one, as torch's: also catches code that ignores a view's offset
    if exclude_zero:
        arr[arr == 0] = 1 if dt.kind in "biu" else np.finfo(dt).tiny
    t = Tensor._from_op(backend.to_device(arr, device) if device is not None else arr, None)
    if dt.kind in "fc":
        t.requires_grad = requires_grad
    return t
