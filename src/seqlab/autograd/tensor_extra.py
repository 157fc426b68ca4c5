"""`ExtraMethods`: more of torch's Tensor methods, as a mixin of `Tensor`; and their `torch.*` functions.

`ExtraMethods` (no state: `__slots__ = ()`) joins `ExtraPointwiseMethods` (below: logaddexp/logaddexp2,
logcumsumexp, exp2, float_power, fmax/fmin, copysign, heaviside, deg2rad/rad2deg, positive, the bitwise ops and
the shift operators `<<`, `>>`) and `ExtraStatsMethods` (tensor_extra_stats.py: inner, diagflat, rot90, dist,
cov, corrcoef, quantile/nanquantile, unique_consecutive, is_nonzero). `TOPLEVEL` names their `torch.*`
functions (`seqlab.fmax(a, b)` is `a.fmax(b)`), re-exported by `seqlab/__init__.py`.

Results take torch's dtypes: operands promote as the arithmetic operators do (`Tensor._promoted`), integer and
bool tensors give the default float dtype where torch's op is float-only (exp2, copysign, deg2rad), and
float_power is always float64. Differentiable methods compose Tensor ops, or call a primitive of `ops/extra.py`
where that is needed for stability (logaddexp, logcumsumexp) or for torch's gradient (copysign). Bitwise ops
and heaviside carry no gradient (torch has none for them). Errors are `torch_errors`' classes: seqlab's
TypeError/ValueError and torch's RuntimeError (NotImplementedError) at once.

This module must not import `seqlab.autograd.tensor` when it loads (that module imports this one).
"""
from __future__ import annotations

import math

import numpy as np

from seqlab import backend
from seqlab.autograd.ops import elementwise as E
from seqlab.autograd.ops import extra as X
from seqlab.autograd.ops.reduce import normalize_dim
from seqlab.autograd.tensor_common import _SCALARS, _data, _no_grad, _tensor_class
from seqlab.autograd.tensor_extra_stats import ExtraStatsMethods
from seqlab.autograd.tensor_math import _function
from seqlab.autograd.torch_errors import ArgumentError, DtypeError, must_be_tensor, not_implemented


def _tensor_other(name: str, other, arg: str = "other"):
    """`other` if it is a Tensor: torch's fmax, logaddexp, heaviside take no numbers there."""
    if not isinstance(other, _tensor_class()):
        raise must_be_tensor(name, arg, other)
    return other


def _shift(xp, a, s, left: bool):
    """a << s or a >> s as torch's: a shift by a negative amount or by the bit width or more gives 0 (left)
    or the sign fill, −1 or 0 (right); C leaves those undefined."""
    a, s = xp.asarray(a), xp.asarray(s)
    dt = np.result_type(a.dtype, s.dtype)
    a = a.astype(dt, copy=False)
    bits = dt.itemsize * 8
    bad = (s < 0) | (s >= bits)
    s = xp.clip(s, 0, bits - 1).astype(dt)
    if left:
        return xp.where(bad, dt.type(0), xp.left_shift(a, s)).astype(dt, copy=False)
    fill = xp.where(a < 0, dt.type(-1), dt.type(0)) if dt.kind == "i" else xp.zeros_like(a)
    return xp.where(bad, fill, xp.right_shift(a, s)).astype(dt, copy=False)


_BITWISE = {  # name: (xp function of two arrays, whether bool operands are refused)
    "bitwise_and": (lambda xp, a, b: xp.bitwise_and(a, b), False),
    "bitwise_or": (lambda xp, a, b: xp.bitwise_or(a, b), False),
    "bitwise_xor": (lambda xp, a, b: xp.bitwise_xor(a, b), False),
    "bitwise_left_shift": (lambda xp, a, b: _shift(xp, a, b, left=True), True),
    "bitwise_right_shift": (lambda xp, a, b: _shift(xp, a, b, left=False), True),
}


class ExtraPointwiseMethods:
    """torch.Tensor's log-add-exp, exp2, float_power, fmax/fmin, copysign, heaviside, angle conversions,
    positive and bitwise ops."""

    __slots__ = ()

    # ---- log-sum-exp forms: float only, as torch ----------------------------------------------------------------
    def _logaddexp(self, name: str, other, base2: bool):
        a, b = self._promoted(_tensor_other(name, other))
        if a.dtype.kind != "f":
            raise not_implemented(name, a.dtype, "floating-point")
        return X.LogAddExp.apply(a, b, base2=base2)

    def logaddexp(self, other):
        """log(e^self + e^other), broadcast, without overflow (1000 and 1000 give 1000.6931)."""
        return self._logaddexp("logaddexp", other, base2=False)

    def logaddexp2(self, other):
        """log₂(2^self + 2^other), broadcast, without overflow."""
        return self._logaddexp("logaddexp2", other, base2=True)

    def logcumsumexp(self, dim: int):
        """The running log Σ e^x along `dim`, stably (a running logaddexp, never e^x itself)."""
        if self.dtype.kind != "f":
            raise not_implemented("logcumsumexp", self.dtype, "floating-point")
        d = normalize_dim(dim, self.ndim)
        if self.ndim == 0:
            return X.LogCumSumExp.apply(self.reshape(1), dim=0).reshape(())
        return X.LogCumSumExp.apply(self, dim=d)

    # ---- powers and angles ------------------------------------------------------------------------------------
    def exp2(self):
        """2 ** self; integer and bool tensors give the default float dtype."""
        return 2 ** self._float_input()

    def float_power(self, exponent):
        """self ** exponent in float64, whatever the dtypes (as torch); the gradient reaches a float32 self as
        float32."""
        f64 = np.dtype(np.float64)
        x = self._cast(f64)
        if isinstance(exponent, _tensor_class()):
            exponent = exponent._cast(f64)
        elif isinstance(exponent, (bool, np.bool_)):
            exponent = int(exponent)
        elif not isinstance(exponent, _SCALARS):
            raise TypeError(f"float_power(): argument 'exponent' must be Tensor or Number, not "
                            f"{type(exponent).__name__}")
        with np.errstate(divide="ignore", invalid="ignore"):  # 0 ** −1 = inf, (−8) ** 0.5 = NaN, quietly as torch
            return x ** exponent

    def deg2rad(self):
        """self · π/180; integer and bool tensors give the default float dtype."""
        return self._float_input() * (math.pi / 180)

    def rad2deg(self):
        """self · 180/π."""
        return self._float_input() * (180 / math.pi)

    def positive(self):
        """self itself (as torch's); a bool tensor is refused."""
        if self.dtype.kind == "b":
            raise DtypeError("The `+` operator, on a bool tensor is not supported (positive(), as torch)")
        return self

    # ---- NaN-aware extremes, sign, step ---------------------------------------------------------------------------
    def _fextreme(self, other, name: str, keep):
        a, b = self._promoted(_tensor_other(name, other))
        xp = backend.xp_of(a.data)
        take_a = keep(a.data, b.data)
        if a.dtype.kind == "f":
            take_a = take_a | xp.isnan(b.data)  # a NaN loses to a number; two NaNs give NaN
        return E.Where.apply(take_a, a, b)  # the gradient goes to the one taken (self at a tie), as torch's

    def fmax(self, other):
        """The element-wise max, broadcast, a NaN ignored where the other is a number (`maximum` propagates it)."""
        return self._fextreme(other, "fmax", lambda a, b: a >= b)

    def fmin(self, other):
        """The element-wise min, ignoring NaNs as fmax does."""
        return self._fextreme(other, "fmin", lambda a, b: a <= b)

    def copysign(self, other):
        """|self| with the sign of other (a tensor or a number; −0.0 counts as negative); integers give the default
        float dtype. Gradient: ±1 for self (0 where self is 0), 0 for other, as torch's."""
        return X.Copysign.apply(*self._float_operands(other, "copysign"))

    def heaviside(self, values):
        """The step function: 0 where self < 0, `values` where self == 0, 1 where self > 0 (and 0 for NaN, as
        torch's); `values` a tensor of self's dtype, broadcast. No gradient."""
        values = _tensor_other("heaviside", values, "values")
        if values.dtype != self.dtype:
            raise ArgumentError(f"heaviside is not yet implemented for tensors with different dtypes (input "
                                f"{self.dtype}, values {values.dtype}; as torch)")
        xp = backend.xp_of(self.data)
        out = xp.where(self.data == 0, values.data, self.data > 0)
        return _no_grad(xp.asarray(out).astype(self.dtype, copy=False))

    # ---- bitwise: bool and integer tensors, no gradient ----------------------------------------------------------
    def _bitwise(self, other, name: str, reverse: bool = False):
        fn, no_bool = _BITWISE[name]
        if self.dtype.kind in "iu" and isinstance(other, (int, np.integer)) and not isinstance(other, bool):
            other = np.array(other, dtype=np.int64).astype(self.dtype)[()]  # wrapped into the dtype (-1: 255)
        a, b = self._promoted(other)
        if a.dtype.kind not in "biu" or (no_bool and a.dtype.kind == "b"):
            raise not_implemented(name, a.dtype, "integer" if no_bool else "bool and integer")
        if reverse:
            a, b = b, a
        xp = backend.xp_of(self.data)
        return _no_grad(xp.asarray(fn(xp, _data(a), _data(b))))

    def bitwise_and(self, other):
        return self._bitwise(other, "bitwise_and")

    def bitwise_or(self, other):
        return self._bitwise(other, "bitwise_or")

    def bitwise_left_shift(self, other):
        """self · 2^other for integers (wrapping), 0 for a shift past the width."""
        return self._bitwise(other, "bitwise_left_shift")

    def bitwise_right_shift(self, other):
        """self // 2^other, arithmetic (the sign fills in)."""
        return self._bitwise(other, "bitwise_right_shift")

    def bitwise_not(self):
        """~self: logical not of a bool tensor, the bits flipped for integers."""
        if self.dtype.kind not in "biu":
            raise not_implemented("bitwise_not", self.dtype)
        xp = backend.xp_of(self.data)
        return _no_grad(xp.asarray(xp.invert(self.data)))

    def __lshift__(self, other):
        return self._bitwise(other, "bitwise_left_shift")

    def __rlshift__(self, other):
        return self._bitwise(other, "bitwise_left_shift", reverse=True)

    def __rshift__(self, other):
        return self._bitwise(other, "bitwise_right_shift")

    def __rrshift__(self, other):
        return self._bitwise(other, "bitwise_right_shift", reverse=True)

    def __rand__(self, other):  # `5 & t` (Tensor defines & and |, and | reflected)
        return self._bitwise(other, "bitwise_and", reverse=True)


class ExtraMethods(ExtraPointwiseMethods, ExtraStatsMethods):
    """The Tensor methods of this module and of tensor_extra_stats.py."""

    __slots__ = ()


# ---- torch.* functions -----------------------------------------------------------------------------------------
_METHOD_FUNCTIONS = [
    "logaddexp", "logaddexp2", "logcumsumexp", "exp2", "fmax", "fmin", "copysign", "heaviside", "deg2rad",
    "rad2deg", "positive", "bitwise_not", "inner", "diagflat", "rot90", "dist", "cov", "corrcoef", "quantile",
    "nanquantile", "unique_consecutive", "is_nonzero",
]
globals().update({_name: _function(_name) for _name in _METHOD_FUNCTIONS})


def _scalar_first(name: str, input, other):  # noqa: A002 (torch's name)
    """(tensor, number, reversed) for torch's functions that take a number as either operand."""
    T = _tensor_class()
    if isinstance(input, T):
        return input, other, False
    if isinstance(other, T) and isinstance(input, _SCALARS):
        return other, input, True
    if hasattr(input, "dtype") and hasattr(input, "shape"):  # an array (a parameter's .grad)
        return T(input), other, False
    raise TypeError(f"{name}(): expected a tensor as input or other, got {type(input).__name__} and "
                    f"{type(other).__name__}")


def _bitwise_function(name: str):
    def fn(input, other):  # noqa: A002
        t, o, reverse = _scalar_first(name, input, other)
        return t._bitwise(o, name, reverse=reverse)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"torch.{name}(input, other): either may be a number; bool and integer tensors only."
    return fn


bitwise_and = _bitwise_function("bitwise_and")
bitwise_or = _bitwise_function("bitwise_or")
bitwise_xor = _bitwise_function("bitwise_xor")  # here, not Tensor.bitwise_xor (`^`): torch's errors and scalars
bitwise_left_shift = _bitwise_function("bitwise_left_shift")
bitwise_right_shift = _bitwise_function("bitwise_right_shift")


def float_power(input, exponent):  # noqa: A002
    """input ** exponent in float64 (`Tensor.float_power`); input may be a number when exponent is a tensor."""
    t, o, reverse = _scalar_first("float_power", input, exponent)
    if reverse:
        return _tensor_class()(backend.xp_of(t.data).asarray(o, dtype=np.float64)).float_power(t)
    return t.float_power(o)


TOPLEVEL = _METHOD_FUNCTIONS + ["bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_left_shift",
                                "bitwise_right_shift", "float_power"]

__all__ = ["ExtraMethods", "TOPLEVEL", *TOPLEVEL]
