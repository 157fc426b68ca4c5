"""More torch.* functions that have no Tensor method: atleast_1d/2d/3d, column_stack, dstack, row_stack,
trapezoid/trapz, cdist, pdist; dtype promotion (result_type, promote_types, can_cast); broadcast_shapes;
is_floating_point, is_complex, detach; and the default generator's seed (seed, initial_seed).

The tensor ones compose Tensor ops, so gradients flow as torch's; cdist and pdist end in `ops/extra.PNormRows`,
whose gradient is torch's cdist's (0 at a zero distance, not NaN). Errors are `torch_errors`' classes (seqlab's
TypeError/ValueError and torch's RuntimeError at once).

dtypes are NumPy's (`seqlab.float32` is `np.float32`); result_type and promote_types return a `np.dtype`, as
`Tensor.dtype` is one, and follow torch's rules, not NumPy's: categories bool < integer < float < complex, the
higher category wins whatever the width (int64 with float16 is float16), and in result_type a tensor with dims
outranks a 0-d tensor, which outranks a Python number, unless the lower-ranked one is of a higher category.
"""
from __future__ import annotations

import numbers

import numpy as np

from seqlab import backend
from seqlab import random as _random
from seqlab.autograd.ops.extra import PNormRows
from seqlab.autograd.ops.reduce import normalize_dim
from seqlab.autograd.tensor import Tensor
from seqlab.autograd.torch_errors import ArgumentError, DtypeError, must_be_tensor
from seqlab.creation import cat
from seqlab.toplevel import vstack
from seqlab.typeinfo import Size

__all__ = ["atleast_1d", "atleast_2d", "atleast_3d", "column_stack", "dstack", "row_stack", "trapezoid", "trapz",
           "cdist", "pdist", "result_type", "promote_types", "can_cast", "broadcast_shapes", "is_floating_point",
           "is_complex", "detach", "seed", "initial_seed"]

_NUMBERS = (numbers.Number, np.number, np.bool_)


def _tensor(name: str, x, arg: str = "input", position: int = 1) -> Tensor:
    if not isinstance(x, Tensor):
        raise must_be_tensor(name, arg, x, position)
    return x


# ---- at least n dims, and stacking -------------------------------------------------------------------------
def _atleast(name: str, tensors: tuple, n: int, grow):
    """One tensor: it with at least n dims (itself if it has them, else a view). Several, or one sequence: a
    tuple of them."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        items, one = list(tensors[0]), False
    else:
        items, one = list(tensors), len(tensors) == 1
    for i, t in enumerate(items):
        if not isinstance(t, Tensor):
            raise TypeError(f"{name}(): expected Tensor as element {i}, but got {type(t).__name__}")
    out = tuple(t if t.ndim >= n else t.reshape(grow(t.shape)) for t in items)
    return out[0] if one else out


def atleast_1d(*tensors):
    """A 0-d tensor as shape (1,); others as they are."""
    return _atleast("atleast_1d", tensors, 1, lambda s: (1,))


def atleast_2d(*tensors):
    """0-d as (1, 1), 1-D (n,) as a row (1, n)."""
    return _atleast("atleast_2d", tensors, 2, lambda s: (1,) + (s or (1,)))


def atleast_3d(*tensors):
    """0-d as (1, 1, 1), 1-D (n,) as (1, n, 1), 2-D (m, n) as (m, n, 1) (as torch and NumPy)."""
    return _atleast("atleast_3d", tensors, 3, lambda s: (1, 1, 1) if not s else (1, s[0], 1) if len(s) == 1
                    else s + (1,))


def _stack_list(name: str, tensors) -> list[Tensor]:
    if not isinstance(tensors, (list, tuple)):
        raise TypeError(f"{name}(): argument 'tensors' (position 1) must be tuple of Tensors, not "
                        f"{type(tensors).__name__}")
    if not tensors:
        raise ArgumentError(f"{name} expects a non-empty TensorList")
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            raise TypeError(f"{name}(): expected Tensor as element {i} in argument 0, but got {type(t).__name__}")
    return list(tensors)


def _cat(name: str, tensors: list, dim: int) -> Tensor:
    try:
        return cat(tensors, dim)  # in torch's result dtype (float32 beside int64 stays float32)
    except ValueError as e:
        raise ArgumentError(f"{name}(): {e}") from None


def column_stack(tensors) -> Tensor:
    """Joined along dim 1, 0-d and 1-D tensors as columns (n, 1) first (as torch.column_stack)."""
    ts = _stack_list("column_stack", tensors)
    return _cat("column_stack", [t.reshape(-1, 1) if t.ndim < 2 else t for t in ts], 1)


def dstack(tensors) -> Tensor:
    """Joined along dim 2 (depth), each made `atleast_3d` first."""
    ts = _stack_list("dstack", tensors)
    return _cat("dstack", list(atleast_3d(ts)), 2)


def row_stack(tensors) -> Tensor:
    """torch's other name for vstack (its shape errors a RuntimeError too, as torch's)."""
    try:
        return vstack(tensors)
    except ValueError as e:
        raise ArgumentError(f"row_stack(): {e}") from None


# ---- integration --------------------------------------------------------------------------------------------
def trapezoid(y: Tensor, x: Tensor | None = None, *, dx=None, dim: int = -1) -> Tensor:
    """∫ y along `dim` by the trapezoid rule: Σ_i (x_{i+1} − x_i)(y_i + y_{i+1}) / 2 at sample points `x` (a
    1-D tensor of one point per sample, or a tensor that broadcasts with y), or with a constant spacing `dx`
    (1 by default). Integer y gives the default float dtype. Gradients for y and x."""
    y = _tensor("trapezoid", y, "y")
    if x is not None and dx is not None:
        raise TypeError("trapezoid() takes x or dx, not both")
    if y.ndim == 0:
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions (trapezoid)")
    d = normalize_dim(dim, y.ndim)
    n = y.shape[d]
    if n == 0:  # zeros in y's dtype, outside the graph, as torch's
        shape = y.shape[:d] + y.shape[d + 1:]
        return Tensor(backend.xp_of(y.data).zeros(shape, dtype=y.dtype))
    if y.dtype.kind == "b":
        raise DtypeError("trapezoid: received a bool input for `y`, but bool is not supported")
    if x is None:
        dx = 1 if dx is None else dx
        if isinstance(dx, (bool, np.bool_)) or not isinstance(dx, _NUMBERS):
            raise TypeError(f"trapezoid(): argument 'dx' must be a number, not {type(dx).__name__}")
        yf = y._float_input()
        return (yf.sum(d) - (yf.select(d, 0) + yf.select(d, n - 1)) * 0.5) * dx  # Σ y − (y₀ + y_last)/2, times dx
    x = _tensor("trapezoid", x, "x", position=2)
    if x.ndim == 1:
        if x.shape[0] != n:
            raise ArgumentError(f"trapezoid: There must be one `x` value for each sample point (x has "
                                f"{x.shape[0]}, y has {n} along dim {dim})")
        x = x.reshape((1,) * d + (n,) + (1,) * (y.ndim - 1 - d))  # along y's dim d
    elif x.ndim < y.ndim:
        x = x.reshape((1,) * (y.ndim - x.ndim) + x.shape)
    if x.ndim > y.ndim:
        raise ArgumentError(f"trapezoid: x has {x.ndim} dims but y only {y.ndim}")
    m = x.shape[d]
    spacing = x.narrow(d, 1, max(m - 1, 0)) - x.narrow(d, 0, max(m - 1, 0))  # (..., m − 1, ...)
    pairs = y.narrow(d, 1, max(n - 1, 0)) + y.narrow(d, 0, max(n - 1, 0))  # (..., n − 1, ...)
    try:
        np.broadcast_shapes(spacing.shape, pairs.shape)
    except ValueError:
        raise ArgumentError(f"trapezoid: x of shape {x.shape} does not broadcast with y of shape {y.shape} along "
                            f"dim {dim}") from None
    return (spacing * pairs).sum(d) / 2


trapz = trapezoid  # torch's older name


# ---- distances ----------------------------------------------------------------------------------------------
_CDIST_MODES = ("use_mm_for_euclid_dist_if_necessary", "use_mm_for_euclid_dist", "donot_use_mm_for_euclid_dist")


def _check_p(name: str, p) -> float:
    if isinstance(p, (bool, np.bool_)) or not isinstance(p, _NUMBERS):
        raise TypeError(f"{name}(): p must be a number, not {type(p).__name__}")
    if not p >= 0:
        raise ArgumentError(f"{name} only supports non-negative p values, got {p}")
    return float(p)


def cdist(x1: Tensor, x2: Tensor, p: float = 2.0,
          compute_mode: str = "use_mm_for_euclid_dist_if_necessary") -> Tensor:
    """The p-norm distance between each row of x1 (..., P, M) and each row of x2 (..., R, M): (..., P, R), the
    batch dims broadcast. p = 0 counts differing coordinates, p = inf takes the largest |difference|. For p = 2
    torch's compute_mode picks between the direct differences and ‖a‖² − 2a·b + ‖b‖² through one matrix
    product (faster, less exact near 0; by default when P or R > 25), and so does this one. The gradient is 0
    at a zero distance."""
    x1, x2 = _tensor("cdist", x1, "x1"), _tensor("cdist", x2, "x2", 2)
    for label, t in (("X1", x1), ("X2", x2)):
        if t.dtype.kind != "f":
            raise DtypeError(f"cdist only supports floating-point dtypes, {label} got: {t.dtype}")
    if x1.dtype != x2.dtype:
        raise DtypeError(f"cdist(): expected both inputs to have the same dtype, got X1 {x1.dtype} and X2 {x2.dtype}")
    for label, t in (("X1", x1), ("X2", x2)):
        if t.ndim < 2:
            raise ArgumentError(f"cdist only supports at least 2D tensors, {label} got: {t.ndim}D")
    if x1.shape[-1] != x2.shape[-1]:
        raise ArgumentError(f"X1 and X2 must have the same number of columns. X1: {x1.shape[-1]} X2: {x2.shape[-1]}")
    p = _check_p("cdist", p)
    if compute_mode not in _CDIST_MODES:
        raise ValueError(f"{compute_mode} is not a valid value for compute_mode")
    try:
        batch = tuple(np.broadcast_shapes(x1.shape[:-2], x2.shape[:-2]))
    except ValueError:
        raise ArgumentError(f"cdist(): batch dims of {x1.shape} and {x2.shape} do not broadcast") from None
    (P, M), R = x1.shape[-2:], x2.shape[-2]
    a, b = x1.expand(batch + (P, M)), x2.expand(batch + (R, M))
    use_mm = p == 2 and (compute_mode == "use_mm_for_euclid_dist"
                         or (compute_mode == _CDIST_MODES[0] and (P > 25 or R > 25)))
    if use_mm:
        # one product of [−2a, ‖a‖², 1] and [b, 1, ‖b‖²]: −2a·b + ‖a‖² + ‖b‖², clamped at 1e-30 so the square
        # root's gradient is 0 (as torch's) where rounding makes it 0 or negative
        na, nb = (a * a).sum(-1, keepdim=True), (b * b).sum(-1, keepdim=True)  # (..., P, 1), (..., R, 1)
        xp = backend.xp_of(a.data)
        left = cat([a * -2, na, Tensor(xp.ones(na.shape, dtype=a.dtype))], -1)  # (..., P, M + 2)
        right = cat([b, Tensor(xp.ones(nb.shape, dtype=b.dtype)), nb], -1)  # (..., R, M + 2)
        return (left @ right.transpose(-1, -2)).clamp_min(1e-30).sqrt()  # (..., P, R)
    diff = a.unsqueeze(-2) - b.unsqueeze(-3)  # (..., P, R, M)
    return PNormRows.apply(diff, p=p)


def pdist(input: Tensor, p: float = 2) -> Tensor:  # noqa: A002 (torch's name)
    """The p-norm distance between every pair of rows i < j of input (N, M), in the order (0, 1), (0, 2), ...,
    (1, 2), ...: N(N − 1)/2 values, gradients as cdist's."""
    x = _tensor("pdist", input)
    if x.ndim != 2:
        raise ArgumentError(f"pdist only supports 2D tensors, got: {x.ndim}D")
    if x.dtype.kind != "f":
        raise DtypeError(f"pdist only supports floating-point dtypes, got {x.dtype}")
    p = _check_p("pdist", p)
    i, j = np.triu_indices(x.shape[0], 1)
    return PNormRows.apply(x[i] - x[j], p=p)  # (N(N − 1)/2,)


# ---- dtypes and shapes --------------------------------------------------------------------------------------
_CATEGORY = {"b": 0, "u": 1, "i": 1, "f": 2, "c": 3}


def _as_dtype(name: str, arg: str, position: int, t) -> np.dtype:
    """A dtype argument as np.dtype: seqlab's (NumPy's scalar types), np.dtype, torch's, or Python's bool, int,
    float, complex (as torch takes them). Strings are refused, as torch does."""
    t = backend.from_torch_name(t)
    if isinstance(t, np.dtype) or (isinstance(t, type) and issubclass(t, (np.generic, bool, int, float, complex))):
        dt = np.dtype(t)
        if dt.kind in _CATEGORY:
            return dt
    raise TypeError(f"{name}(): argument '{arg}' (position {position}) must be a dtype, not {type(t).__name__}")


def _promote(a: np.dtype, b: np.dtype) -> np.dtype:
    ca, cb = _CATEGORY[a.kind], _CATEGORY[b.kind]
    if ca == cb or {ca, cb} == {2, 3}:
        return np.result_type(a, b)  # the wider of a kind; a float beside a complex: a complex to hold both
    return a if ca > cb else b


def promote_types(type1, type2) -> np.dtype:
    """The smallest dtype both promote to, by torch's rules (uint8 with int8 is int16; int64 with float16 is
    float16)."""
    return _promote(_as_dtype("promote_types", "type1", 1, type1), _as_dtype("promote_types", "type2", 2, type2))


def can_cast(from_, to) -> bool:
    """Whether torch's casting rules allow from_ → to: yes within a category (narrowing too) and upward, not
    from float to integer, complex to float, or anything but bool to bool."""
    a, b = _as_dtype("can_cast", "from_", 1, from_), _as_dtype("can_cast", "to", 2, to)
    return _CATEGORY[a.kind] <= _CATEGORY[b.kind]


def _operand(x) -> tuple[int, np.dtype]:
    """(rank, dtype) of a result_type operand: 2 a tensor with dims, 1 a 0-d tensor, 0 a number (a float one in
    the default float dtype, as torch)."""
    if isinstance(x, Tensor):
        return (2 if x.ndim else 1), x.dtype
    if isinstance(x, (bool, np.bool_)):
        return 0, np.dtype(bool)
    if isinstance(x, (int, np.integer)):
        return 0, np.dtype(np.int64)
    if isinstance(x, (float, np.floating)):
        return 0, np.dtype(backend.default_dtype())
    if isinstance(x, (complex, np.complexfloating)):
        return 0, np.dtype(np.complex64 if backend.default_dtype() == np.float32 else np.complex128)
    raise TypeError(f"result_type(): expected a Tensor or a number, got {type(x).__name__}")


def _combine(higher, lower):
    """The dtype of operands of two ranks: the higher-ranked one's, unless the lower-ranked one is of a higher
    category (then its dtype; a complex beside floats takes the floats' precision, as torch)."""
    if higher is None or lower is None:
        return lower if higher is None else higher
    ch, cl = _CATEGORY[higher.kind], _CATEGORY[lower.kind]
    if cl <= ch:
        return higher
    return np.result_type(higher, np.complex64) if (ch, cl) == (2, 3) else lower


def result_type(tensor1, tensor2) -> np.dtype:
    """The dtype torch's arithmetic on the two operands gives (`a + b`): tensors or numbers."""
    best: dict[int, np.dtype] = {}
    for x in (tensor1, tensor2):
        rank, dt = _operand(x)
        best[rank] = dt if rank not in best else _promote(best[rank], dt)
    return np.dtype(_combine(best.get(2), _combine(best.get(1), best.get(0))))


def broadcast_shapes(*shapes) -> Size:
    """The shape tensors of these shapes broadcast to (an int n reads as (n,)), as a seqlab.Size."""
    parsed = []
    for s in shapes:
        if isinstance(s, (int, np.integer)) and not isinstance(s, (bool, np.bool_)):
            s = (int(s),)
        elif not isinstance(s, (tuple, list)) or not all(isinstance(v, (int, np.integer)) for v in s):
            raise ArgumentError(f"Input shapes should be of type ints, a tuple of ints, or a list of ints, got {s!r}")
        if any(v < 0 for v in s):
            raise ValueError(f"Attempting to broadcast a dimension with negative length! (shape {tuple(s)})")
        parsed.append(tuple(int(v) for v in s))
    try:
        return Size(np.broadcast_shapes(*parsed))
    except ValueError:
        raise ArgumentError(f"broadcast_shapes(): shapes {', '.join(map(str, parsed))} do not broadcast") from None


def is_floating_point(input: Tensor) -> bool:  # noqa: A002
    return _tensor("is_floating_point", input).is_floating_point()


def is_complex(input: Tensor) -> bool:  # noqa: A002
    return _tensor("is_complex", input).is_complex()


def detach(input: Tensor) -> Tensor:  # noqa: A002
    """The same values outside the graph (`Tensor.detach`)."""
    return _tensor("detach", input).detach()


# ---- the default generator's seed ----------------------------------------------------------------------------
def seed() -> int:
    """Reseeds the default generator (`seqlab.manual_seed`) from the OS's entropy and returns the seed."""
    new = int(np.random.SeedSequence().entropy % 2**64)
    _random.manual_seed(new)
    return new


def initial_seed() -> int:
    """The seed of the default generator: the last `manual_seed` (or `seed`); 0, seqlab's seed at import, before
    either (torch's default generator starts from a seed of its own)."""
    seed_seq = getattr(_random.default_generator().bit_generator, "seed_seq", None)
    entropy = getattr(seed_seq, "entropy", None)
    return int(entropy) if isinstance(entropy, (int, np.integer)) else 0

