"""`CompareMethods`: torch's comparisons, predicates and logical ops on `Tensor`, as a mixin (a base of
`MathMethods`, tensor_math.py).

They return bool tensors with no gradient. Comparisons promote their operands as the arithmetic operators do
(`Tensor._promoted`: bool < integer < float, a number takes the tensor's dtype unless of a higher kind).
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from seqlab import backend
from seqlab.autograd.tensor_common import _SCALARS, _bool_tensor, _data, _tensor_class


class CompareMethods:
    """torch.Tensor's comparisons (eq, lt, isclose, ...), predicates (isnan, signbit, ...) and logical ops."""

    __slots__ = ()

    # ---- comparisons: bool tensors, no gradient ------------------------------------------------------------
    def _compare(self, other, ufunc: str):
        """`ufunc` ("equal", "less", ...) of self and other, compared in their promoted dtype (as torch:
        float32 == int64 compares in float32; a float number beside an integer tensor in float32)."""
        T = _tensor_class()
        a, b = self.detach()._promoted(other.detach() if isinstance(other, T) else other)
        xp = backend.xp_of(a.data)
        return _bool_tensor(getattr(xp, ufunc)(a.data, _data(b)))

    def eq(self, other):
        return self._compare(other, "equal")

    def ne(self, other):
        return self._compare(other, "not_equal")

    def gt(self, other):
        return self._compare(other, "greater")

    def lt(self, other):
        return self._compare(other, "less")

    def ge(self, other):
        return self._compare(other, "greater_equal")

    def le(self, other):
        return self._compare(other, "less_equal")

    greater, less, greater_equal, less_equal, not_equal = gt, lt, ge, le, ne

    def equal(self, other) -> bool:
        """True when `other` has the same shape and the same values (in the promoted dtype; NaN is unequal)."""
        if not isinstance(other, _tensor_class()):
            raise TypeError(f"equal(): argument 'other' must be Tensor, not {type(other).__name__}")
        if self.shape != other.shape:
            return False
        return bool(self._compare(other, "equal").data.all())

    def isclose(self, other, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False):
        """|self − other| <= atol + rtol·|other| element-wise (equal infinities are close; NaNs only with
        `equal_nan`). As torch, `other` is a tensor of the same dtype."""
        if not isinstance(other, _tensor_class()):
            raise TypeError(f"isclose(): argument 'other' must be Tensor, not {type(other).__name__}")
        if other.dtype != self.dtype:
            raise RuntimeError(f"isclose(): the tensors' dtypes differ, {self.dtype} and {other.dtype} (torch: "
                               f"'{self.dtype} did not match {other.dtype}'); cast one with .to(dtype)")
        if rtol < 0 or atol < 0:
            raise RuntimeError(f"isclose(): rtol and atol must be greater than or equal to zero, got rtol={rtol} "
                               f"and atol={atol}")
        xp = backend.xp_of(self.data)
        if self.dtype.kind == "b":
            return _bool_tensor(xp.equal(self.data, other.data))
        return _bool_tensor(xp.isclose(self.data, other.data, rtol=rtol, atol=atol, equal_nan=equal_nan))

    def allclose(self, other, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False) -> bool:
        """Whether every element `isclose` (a Python bool)."""
        return bool(self.isclose(other, rtol, atol, equal_nan).data.all())

    # ---- predicates ------------------------------------------------------------------------------------------
    def _where_float(self, fn: Callable, otherwise: bool):
        """fn(data) for a float tensor; for integers and bools (never NaN nor infinite) all `otherwise`."""
        xp = backend.xp_of(self.data)
        if self.dtype.kind in "fc":
            return _bool_tensor(fn(xp, self.data))
        return _bool_tensor(xp.full(self.shape, otherwise, dtype=bool))

    def isnan(self):
        return self._where_float(lambda xp, a: xp.isnan(a), False)

    def isinf(self):
        return self._where_float(lambda xp, a: xp.isinf(a), False)

    def isfinite(self):
        return self._where_float(lambda xp, a: xp.isfinite(a), True)

    def isposinf(self):
        return self._where_float(lambda xp, a: a == np.inf, False)

    def isneginf(self):
        return self._where_float(lambda xp, a: a == -np.inf, False)

    def signbit(self):
        """True where the sign bit is set: negative numbers and −0.0."""
        if self.dtype.kind in "iu":
            return _bool_tensor(self.data < 0)
        return self._where_float(lambda xp, a: xp.signbit(a), False)

    def _other_array(self, other):
        """`other` (a Tensor, an array, a list or a number) as an array or scalar on this tensor's device."""
        if isinstance(other, _tensor_class()):
            return other.data
        if isinstance(other, _SCALARS):
            return other
        return backend.to_device(other if hasattr(other, "shape") else np.asarray(other), self.device)

    def logical_and(self, other):
        """Element-wise `and` of truth values (nonzero is True), broadcast; a bool tensor."""
        return _bool_tensor(backend.xp_of(self.data).logical_and(self.data, self._other_array(other)))

    def logical_or(self, other):
        return _bool_tensor(backend.xp_of(self.data).logical_or(self.data, self._other_array(other)))

    def logical_xor(self, other):
        return _bool_tensor(backend.xp_of(self.data).logical_xor(self.data, self._other_array(other)))

    def logical_not(self):
        return _bool_tensor(backend.xp_of(self.data).logical_not(self.data))
