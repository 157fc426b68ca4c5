"""`PointwiseMethods`: torch's element-wise functions on `Tensor`, as a mixin (a base of `MathMethods`,
tensor_math.py): sign and rounding, smooth functions (log1p, sinh, asin, erf, logit, ...) and binary ones (atan2,
hypot, xlogy, fmod, clamp_min/clamp_max, lerp, nan_to_num, ...).

Differentiable methods are one primitive (`ops/pointwise.py`, `ops/elementwise.py`) or a composition of Tensor
methods. Operands promote as the arithmetic operators do (`Tensor._promoted`). Their in-place forms (floor_,
clamp_, ...) are in tensor_inplace.py.
"""
from __future__ import annotations

import numpy as np

from seqlab import backend
from seqlab.autograd.ops import elementwise as E
from seqlab.autograd.ops import pointwise as P
from seqlab.autograd.tensor_common import _SCALARS, _data, _tensor_class


class PointwiseMethods:
    """torch.Tensor's element-wise math: sign, rounding, smooth and binary functions."""

    __slots__ = ()

    # ---- sign and rounding: gradient 0, as torch ----------------------------------------------------------
    def sgn(self):
        """−1, 0 or 1 by the sign (0 for NaN; a bool tensor as it is), with a zero gradient: torch's sign (and
        sgn, which differs for complex tensors only)."""
        if self.dtype.kind == "b":
            return self.clone()
        if self.dtype.kind in "iu":
            return _tensor_class()._from_op(backend.xp_of(self.data).sign(self.data), None)
        return P.Step.apply(self, fn="sign")

    sign = sgn  # Tensor's own `sign` (NaN for NaN, no gradient) wins over this one while it is there

    def _step(self, fn: str, decimals: int = 0):
        if self.dtype.kind == "b":
            raise TypeError(f"{fn}() is not implemented for bool tensors (as torch); convert with .long() or "
                            f".float() first")
        if self.dtype.kind in "iu":
            if decimals:
                raise TypeError(f"round(decimals={decimals}) is not implemented for integer tensors (dtype "
                                f"{self.dtype}, as torch); convert with .float() first")
            return self.clone()  # an integer is its own floor, ceil, trunc and round
        return P.Step.apply(self, fn=fn, decimals=decimals)

    def floor(self):
        return self._step("floor")

    def ceil(self):
        return self._step("ceil")

    def trunc(self):
        """Rounded toward zero."""
        return self._step("trunc")

    fix = trunc

    def round(self, *, decimals: int = 0):
        """To the nearest integer (or `decimals` places), halves to even as torch: 2.5 -> 2, 3.5 -> 4."""
        return self._step("round", decimals)

    def frac(self):
        """self − trunc(self), the sign of self; gradient 1."""
        if self.dtype.kind not in "fc":
            raise TypeError(f"frac() is not implemented for {self.dtype} tensors (as torch)")
        return self - self.trunc()

    # ---- smooth functions: integer and bool tensors give the default float dtype, as torch ----------------
    def square(self):
        """self * self; a bool tensor gives int64 (as torch)."""
        return self ** 2

    def log1p(self):
        return P.Log1p.apply(self._float_input())

    def expm1(self):
        return P.Expm1.apply(self._float_input())

    def log2(self):
        return P.Log2.apply(self._float_input())

    def log10(self):
        return P.Log10.apply(self._float_input())

    def sinh(self):
        return P.Sinh.apply(self._float_input())

    def cosh(self):
        return P.Cosh.apply(self._float_input())

    def asin(self):
        return P.Asin.apply(self._float_input())

    def acos(self):
        return P.Acos.apply(self._float_input())

    def atan(self):
        return P.Atan.apply(self._float_input())

    arcsin, arccos, arctan = asin, acos, atan

    def erf(self):
        return P.Erf.apply(self._float_input())

    def logit(self, eps: float | None = None):
        """log(p / (1 − p)); with `eps`, p is first clamped to [eps, 1 − eps] (no gradient outside, as torch)."""
        p = self._float_input()
        if eps is not None:
            p = p.clamp_min(eps).clamp_max(1 - eps)
        return p.log() - (1 - p).log()

    # ---- binary ------------------------------------------------------------------------------------------
    def _float_operands(self, other, name: str, ints: bool = True):
        """(self, other) promoted, then in the default float dtype if both are integers or bools (atan2 of
        ints is float32, as torch); `ints=False` refuses them instead (as torch's hypot)."""
        a, b = self._promoted(other)
        if a.dtype.kind not in "fc":
            if not ints:
                raise TypeError(f"{name}() is not implemented for {a.dtype} tensors (as torch); convert with "
                                f".float() first")
            a = a._float_input()
            b = a.dtype.type(b) if isinstance(b, _SCALARS) else b._cast(a.dtype)
        return a, b

    def atan2(self, other):
        """The angle of the point (other, self) in (−π, π], broadcast."""
        return P.Atan2.apply(*self._float_operands(other, "atan2"))

    arctan2 = atan2

    def hypot(self, other):
        """√(self² + other²), broadcast, without overflow."""
        return P.Hypot.apply(*self._float_operands(other, "hypot", ints=False))

    def xlogy(self, other):
        """self · log(other), 0 where self is 0 (unless other is NaN), as torch.xlogy: the entropy term
        p·log p is 0 at p = 0. Gradients as torch's: log(other) for self (0 where self = 0 and other <= 0),
        self / other for other (0 where self = 0; torch's is NaN at self = other = 0)."""
        x, y = self._float_operands(other, "xlogy")
        T = _tensor_class()
        if not isinstance(y, T):
            y = T(backend.xp_of(x.data).asarray(y))
        no_log = (x.data == 0) & (y.data <= 0)  # broadcast shape; where log(y) is −inf or NaN and x is 0
        with np.errstate(divide="ignore", invalid="ignore"):
            return x * E.Where.apply(no_log, y.dtype.type(1), y).log()  # log(1) = 0 there

    def fmod(self, other):
        """C's remainder self − other·trunc(self / other), with self's sign (`remainder` has other's)."""
        a, b = self._int_div_operands(other, "fmod", reverse=False)
        with np.errstate(divide="ignore", invalid="ignore"):
            return P.Fmod.apply(a, b)

    def true_divide(self, other):
        return self / other

    def negative(self):
        return -self

    def absolute(self):
        return self.abs()

    def maximum(self, other):
        from seqlab.creation import maximum

        return maximum(self, other)

    def minimum(self, other):
        from seqlab.creation import minimum

        return minimum(self, other)

    def _clamp_one(self, bound, keep: str):
        """clamp_min (keep="greater_equal") or clamp_max (keep="less_equal"), the bound a number or a tensor
        (broadcast). The gradient goes to whichever was taken, self at a tie, as torch's."""
        a, b = self._promoted(bound)
        xp = backend.xp_of(a.data)
        kept = getattr(xp, keep)(a.data, _data(b))
        if a.dtype.kind == "f":
            kept = kept | xp.isnan(a.data)  # NaN stays NaN, as torch
        return E.Where.apply(kept, a, b)

    def clamp_min(self, min):  # noqa: A002 (torch's name)
        return self._clamp_one(min, "greater_equal")

    def clamp_max(self, max):  # noqa: A002
        return self._clamp_one(max, "less_equal")

    def lerp(self, end, weight):
        """self + weight·(end − self): `end` a tensor of self's dtype, `weight` a number or a tensor
        (broadcast); gradients for all three."""
        T = _tensor_class()
        if not isinstance(end, T):
            raise TypeError(f"lerp(): argument 'end' must be Tensor, not {type(end).__name__}")
        if self.dtype.kind != "f":
            raise TypeError(f"lerp() is not implemented for {self.dtype} tensors (as torch)")
        if end.dtype != self.dtype:
            raise RuntimeError(f"lerp(): expected dtype {self.dtype} for `end` but got dtype {end.dtype}")
        if isinstance(weight, T):
            weight = weight._cast(self.dtype)
        elif not isinstance(weight, _SCALARS):
            raise TypeError(f"lerp(): weight must be a number or a Tensor, not {type(weight).__name__}")
        return self + weight * (end - self)

    def nan_to_num(self, nan: float = 0.0, posinf: float | None = None, neginf: float | None = None):
        """NaN, +inf and −inf replaced by `nan`, `posinf` and `neginf` (by default 0 and the dtype's largest
        and smallest finite values); the gradient passes only where self is finite (as torch)."""
        if self.dtype.kind not in "fc":
            return self.clone()
        xp = backend.xp_of(self.data)
        filled = xp.nan_to_num(self.data, nan=nan, posinf=posinf, neginf=neginf)
        return E.Where.apply(xp.isfinite(self.data), self, filled)
