"""`MathMethods`: torch's comparisons, predicates and element-wise math on `Tensor`, as a mixin; and their
`torch.*` functions.

`MathMethods` (a base of Tensor, with no state: `__slots__ = ()`) joins `CompareMethods` (tensor_compare.py: eq/lt,
isclose, isnan/signbit, logical_*) and `PointwiseMethods` (tensor_pointwise.py: sgn, floor/round, log1p/sinh/erf,
atan2/hypot/xlogy/fmod, clamp_min, lerp, nan_to_num). Their in-place forms (exp_, clamp_, ...) are in
tensor_inplace.py; the small properties (is_floating_point, is_cuda, element_size, grad_fn, ...) in
tensor_convert.py. `TOPLEVEL` names the `torch.*` functions defined below (`seqlab.isnan(x)` is `x.isnan()`).

This module must not import `seqlab.autograd.tensor` at the top (that module imports this one): the Tensor
class is fetched when a function first runs (`_tensor_class`).
"""
from __future__ import annotations

from seqlab import backend
from seqlab.autograd.tensor_common import _tensor_class
from seqlab.autograd.tensor_compare import CompareMethods
from seqlab.autograd.tensor_pointwise import PointwiseMethods


class MathMethods(CompareMethods, PointwiseMethods):
    """torch.Tensor's element-wise math, comparisons and predicates."""

    __slots__ = ()


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
