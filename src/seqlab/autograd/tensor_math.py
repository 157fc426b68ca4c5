"""`MathMethods`: torch's element-wise math, comparisons and predicates on `Tensor`, as a mixin.

`class Tensor(MathMethods)` gets them; a method Tensor defines itself wins. Differentiable methods are one
primitive (`ops/pointwise.py`, `ops/elementwise.py`) or a composition of Tensor methods; comparisons and
predicates return bool tensors with no gradient. Operands promote as the arithmetic operators do
(`Tensor._promoted`: bool < integer < float, a number takes the tensor's dtype unless of a higher kind).
`TOPLEVEL` names the `torch.*` functions defined at the bottom (`seqlab.isnan(x)` is `x.isnan()`).

This module must not import `seqlab.autograd.tensor` at the top (that module imports this one): the Tensor
class is fetched when a method first runs (`_tensor_class`).
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from seqlab import backend
from seqlab.autograd import engine
from seqlab.autograd import versions as _versions
from seqlab.autograd.function import Function, no_grad
from seqlab.autograd.ops import elementwise as E
from seqlab.autograd.ops import pointwise as P

_SCALARS = (int, float, bool, np.number, np.bool_)
_KIND_RANK = {"b": 0, "i": 1, "u": 1, "f": 2, "c": 3}  # bool < integer < float < complex
_Tensor = None


def _tensor_class():
    """seqlab's Tensor (not `type(self)`: a Parameter's results are plain tensors)."""
    global _Tensor
    if _Tensor is None:
        from seqlab.autograd.tensor import Tensor

        _Tensor = Tensor
    return _Tensor


def _data(x):
    return x.data if isinstance(x, _tensor_class()) else x


def _bool_tensor(arr):
    """A bool array (or NumPy scalar, from a 0-d op) as a tensor that requires no grad."""
    return _tensor_class()._from_op(backend.xp_of(arr).asarray(arr), None)


class GradFn:
    """`tensor.grad_fn`: the op that made a tensor, named as torch names it (`name()` is "MulBackward0" for
    seqlab's `Mul`), with `next_functions` (one `(node, 0)` per input: a GradFn, an `AccumulateGrad` for a
    leaf, or None for an input that needs no gradient). After `backward()` has freed the graph the op is
    forgotten: "FreedBackward0"."""

    __slots__ = ("_fn",)

    def __init__(self, fn) -> None:
        self._fn = fn

    def name(self) -> str:
        return "FreedBackward0" if engine._is_freed(self._fn) else f"{type(self._fn).__name__}Backward0"

    @property
    def next_functions(self) -> tuple:
        if self._fn is engine.FREED:
            return ()
        out = []
        for parent, needs in zip(self._fn.parents, self._fn.needs_input_grad):
            node = None if not needs else GradFn(parent) if isinstance(parent, Function) else AccumulateGrad(parent)
            out.append((node, 0))
        return tuple(out)

    def __eq__(self, other) -> bool:
        return isinstance(other, GradFn) and other._fn is self._fn

    def __hash__(self) -> int:
        return id(self._fn)

    def __repr__(self) -> str:
        return f"<{self.name()} object at {hex(id(self._fn))}>"


class AccumulateGrad:
    """In `next_functions`, the node that adds a gradient into a leaf's `.grad` (`variable` is the leaf)."""

    __slots__ = ("variable",)

    def __init__(self, variable) -> None:
        self.variable = variable

    def name(self) -> str:
        return "AccumulateGrad"

    @property
    def next_functions(self) -> tuple:
        return ()

    def __repr__(self) -> str:
        return f"<AccumulateGrad object at {hex(id(self.variable))}>"


class MathMethods:
    """torch.Tensor's element-wise math, comparisons, predicates, in-place variants and small properties."""

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

    def sgn(self):
        """−1, 0 or 1 by the sign (0 for NaN; a bool tensor as it is), with a zero gradient: torch's sign (and
        sgn, which differs for complex tensors only)."""
        if self.dtype.kind == "b":
            return self.clone()
        if self.dtype.kind in "iu":
            return _tensor_class()._from_op(backend.xp_of(self.data).sign(self.data), None)
        return P.Step.apply(self, fn="sign")

    sign = sgn  # Tensor's own `sign` (NaN for NaN, no gradient) wins over this one while it is there

    # ---- rounding: gradient 0, as torch ------------------------------------------------------------------
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

    # ---- in place: as zero_/add_ in tensor.py, refused while the tensor is recorded in a graph -------------
    def _replace_(self, name: str, compute: Callable[[], Any]):
        """Write compute() (the out-of-place op) into this tensor's memory; its dtype and shape stay."""
        self._in_place(name)
        if not getattr(getattr(self.data, "flags", None), "writeable", True):
            raise RuntimeError(f"{name}: this tensor's array is read-only (a broadcast view, as from expand(), "
                               f"where elements share memory, or an array marked read-only); change a clone()")
        with no_grad():
            out = compute()
        if _KIND_RANK.get(out.dtype.kind, 3) > _KIND_RANK.get(self.dtype.kind, 3):
            raise RuntimeError(f"{name}: result type {out.dtype} can't be cast to the tensor's dtype "
                               f"{self.dtype} (as torch); use the out-of-place {name[:-1]}() or .float() first")
        if tuple(out.shape) != self.shape:
            raise ValueError(f"{name}: the result has shape {tuple(out.shape)} but the tensor has shape "
                             f"{self.shape} (an in-place op keeps the tensor's shape)")
        self.data[...] = out.data
        _versions.bump(self.data)
        return self

    def exp_(self):
        return self._replace_("exp_", self.exp)

    def log_(self):
        return self._replace_("log_", self.log)

    def sqrt_(self):
        return self._replace_("sqrt_", self.sqrt)

    def relu_(self):
        return self._replace_("relu_", self.relu)

    def abs_(self):
        return self._replace_("abs_", self.abs)

    def neg_(self):
        return self._replace_("neg_", self.__neg__)

    def tanh_(self):
        return self._replace_("tanh_", self.tanh)

    def sigmoid_(self):
        return self._replace_("sigmoid_", self.sigmoid)

    def floor_(self):
        return self._replace_("floor_", self.floor)

    def ceil_(self):
        return self._replace_("ceil_", self.ceil)

    def trunc_(self):
        return self._replace_("trunc_", self.trunc)

    def round_(self, *, decimals: int = 0):
        return self._replace_("round_", lambda: self.round(decimals=decimals))

    def clamp_(self, min=None, max=None):  # noqa: A002 (torch's names)
        return self._replace_("clamp_", lambda: self.clamp(min, max))

    clip_ = clamp_

    def clamp_min_(self, min):  # noqa: A002
        return self._replace_("clamp_min_", lambda: self.clamp_min(min))

    def clamp_max_(self, max):  # noqa: A002
        return self._replace_("clamp_max_", lambda: self.clamp_max(max))

    def nan_to_num_(self, nan: float = 0.0, posinf: float | None = None, neginf: float | None = None):
        return self._replace_("nan_to_num_", lambda: self.nan_to_num(nan, posinf, neginf))

    def tril_(self, diagonal: int = 0):
        return self._replace_("tril_", lambda: self.tril(diagonal))

    def triu_(self, diagonal: int = 0):
        return self._replace_("triu_", lambda: self.triu(diagonal))

    # shape changes in place: this tensor's array becomes a view of the new shape (other tensors sharing the
    # memory keep theirs, as torch); the values do not change, so no version is counted
    def _reshape_(self, name: str, compute: Callable[[], Any]):
        self._in_place(name)
        with no_grad():
            self.data = compute().data
        return self

    def unsqueeze_(self, dim: int):
        return self._reshape_("unsqueeze_", lambda: self.unsqueeze(dim))

    def squeeze_(self, dim=None):
        return self._reshape_("squeeze_", lambda: self.squeeze(dim))

    def t_(self):
        return self._reshape_("t_", self.t)

    # ---- small properties and constructors ----------------------------------------------------------------
    def is_floating_point(self) -> bool:
        return self.dtype.kind == "f"

    def is_complex(self) -> bool:
        return self.dtype.kind == "c"

    def is_contiguous(self, memory_format=None) -> bool:
        """Whether the array is in C order (a transposed or expanded view is not, as torch)."""
        return bool(getattr(self.data.flags, "c_contiguous", True))

    @property
    def is_cuda(self) -> bool:
        return self.device == "cuda"

    def get_device(self) -> int:
        """-1 on the CPU, the GPU's index (0) on the GPU, as torch."""
        return 0 if self.device == "cuda" else -1

    def element_size(self) -> int:
        """Bytes per element."""
        return self.dtype.itemsize

    def nelement(self) -> int:
        return self.numel()

    def ndimension(self) -> int:
        return self.ndim

    def new_tensor(self, data, dtype=None, device=None, requires_grad: bool = False):
        """A copy of `data` as a new leaf tensor, in this tensor's dtype and device unless given (as torch:
        `long_tensor.new_tensor([1.5])` is int64)."""
        T = _tensor_class()
        arr = backend.from_torch(data.data if isinstance(data, T) else data)
        arr = backend.to_device(arr if hasattr(arr, "shape") else np.asarray(arr), device or self.device)
        return T(arr.astype(np.dtype(dtype) if dtype is not None else self.dtype, copy=True),
                 requires_grad=requires_grad)

    def new_empty(self, *size, dtype=None, device=None, requires_grad: bool = False):
        """torch's values are unspecified here; seqlab's are zeros (as seqlab.empty)."""
        return self.new_zeros(*size, dtype=dtype, device=device, requires_grad=requires_grad)

    @property
    def mT(self):  # noqa: N802 (torch's name)
        """The last two dims swapped (a batch of matrices transposed)."""
        if self.ndim < 2:
            raise RuntimeError(f"tensor.mT is only supported on matrices or batches of matrices. "
                               f"Got {self.ndim}-D tensor.")
        return self.transpose(-2, -1)

    @property
    def grad_fn(self):
        """None for a leaf, else a `GradFn` naming the op that made this tensor ("MulBackward0")."""
        return None if self._ctx is None else GradFn(self._ctx)


# ---- torch.* functions: each calls the method of the same name on its first argument ----------------------
TOPLEVEL = [
    "eq", "ne", "gt", "lt", "ge", "le", "greater", "less", "greater_equal", "less_equal", "not_equal",
    "equal", "isclose", "allclose",
    "isnan", "isinf", "isfinite", "isposinf", "isneginf", "signbit", "sign", "sgn",
    "logical_and", "logical_or", "logical_xor", "logical_not",
    "floor", "ceil", "trunc", "fix", "round", "frac",
    "square", "log1p", "expm1", "log2", "log10", "sinh", "cosh", "asin", "acos", "atan", "arcsin", "arccos",
    "arctan", "erf", "logit",
    "atan2", "arctan2", "hypot", "xlogy", "fmod", "remainder", "floor_divide", "true_divide", "negative",
    "absolute", "clamp_min", "clamp_max", "lerp", "nan_to_num",
]


def _function(name: str, method: str | None = None):
    """torch.<name>(input, *args, **kwargs): input.<method or name>(*args, **kwargs). An array (seqlab's
    `p.grad`) is taken as a tensor, so `seqlab.isfinite(p.grad).all()` works as torch's."""
    method = method or name

    def fn(input, *args, **kwargs):  # noqa: A002 (torch's name)
        T = _tensor_class()
        if not isinstance(input, T):
            if not (hasattr(input, "dtype") and hasattr(input, "shape")):
                raise TypeError(f"{name}(): argument 'input' must be Tensor, not {type(input).__name__}")
            input = T(input)
        return getattr(input, method)(*args, **kwargs)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"torch.{name}: `input.{method}(...)` (see Tensor.{method})."
    return fn


for _name in TOPLEVEL:
    globals()[_name] = _function(_name)
del _name
sign = _function("sign", "sgn")  # torch's sign, whatever Tensor.sign does (see MathMethods.sgn)


def xlogy(input, other):  # noqa: A002 (torch's name)
    """torch.xlogy: input · log(other), 0 where input is 0; either may be a number."""
    T = _tensor_class()
    if not isinstance(input, T) and isinstance(other, T):
        b, a = other._promoted(input)  # the number in the tensor's dtype (or the default float dtype)
        return T(backend.xp_of(b.data).asarray(a, dtype=b.dtype)).xlogy(b)
    return _function("xlogy")(input, other)
