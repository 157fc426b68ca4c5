"""torch.* functions that learners call and that have no one-line home elsewhere: arithmetic with torch's
arguments (`add(input, other, alpha=1)`, `div(..., rounding_mode=)`), reductions and norms, stacking,
`isin`, `tril_indices`/`triu_indices`, `tensordot`, `tan`, and the default generator's state.

Each is composed from Tensor ops, so gradients flow where torch's do without a backward of its own.
"""
from __future__ import annotations

import copy
import math
import numbers

import numpy as np

from seqlab import backend
from seqlab import random as _random
from seqlab.autograd.tensor import Tensor
from seqlab.creation import _need_tensor, cat

__all__ = ["add", "sub", "subtract", "mul", "multiply", "div", "divide", "neg", "clone", "all", "any", "std",
           "var", "norm", "t", "rsqrt", "reciprocal", "masked_fill", "concat", "concatenate", "hstack", "vstack",
           "isin", "tril_indices", "triu_indices", "tensordot", "cosine_similarity", "tan", "get_rng_state",
           "set_rng_state"]

_NUMBERS = (numbers.Number, np.number, np.bool_)


# ---- arithmetic: torch.add(input, other, alpha=1) is input + alpha·other ------------------------------------
def _check_operands(name: str, input, other) -> None:
    if not isinstance(input, Tensor) and not isinstance(other, Tensor):
        raise TypeError(f"{name}(): expected a tensor as input or other, got {type(input).__name__} and "
                        f"{type(other).__name__}")


def _first_tensor(name: str, input, other) -> tuple[Tensor, object]:
    """(input, other) with input a Tensor: a number first (`add(2, t)`) becomes a tensor of the pair's
    result dtype, so the Tensor method applies torch's rules to both."""
    _check_operands(name, input, other)
    return (input, other) if isinstance(input, Tensor) else _tensors(name, input, other)


def add(input, other, *, alpha=1) -> Tensor:
    """input + alpha·other (torch.add; `Tensor.add`)."""
    a, b = _first_tensor("add", input, other)
    return a.add(b, alpha=alpha)


def sub(input, other, *, alpha=1) -> Tensor:
    """input − alpha·other (torch.sub; `Tensor.sub`)."""
    a, b = _first_tensor("sub", input, other)
    return a.sub(b, alpha=alpha)


subtract = sub


def mul(input, other) -> Tensor:
    _check_operands("mul", input, other)
    return input * other


multiply = mul


def _tensors(name: str, input, other) -> tuple[Tensor, Tensor]:
    """(input, other) as two tensors in torch's result dtype (`Tensor._promoted`)."""
    _check_operands(name, input, other)
    if isinstance(input, Tensor):
        a, b = input._promoted(other)
    else:
        b, a = other._promoted(input)
    xp = backend.xp_of((a if isinstance(a, Tensor) else b).data)
    a, b = (x if isinstance(x, Tensor) else Tensor._of(xp.asarray(x)) for x in (a, b))
    return a, b


def div(input, other, *, rounding_mode: str | None = None) -> Tensor:
    """torch.div (`Tensor.div`): input / other (true division: integers give the default float dtype), or
    rounded: rounding_mode='trunc' toward zero, 'floor' down (Python's `//`), with gradient 0 and integer
    operands staying integers."""
    a, b = _first_tensor("div", input, other)
    return a.div(b, rounding_mode=rounding_mode)


divide = div


def neg(input: Tensor) -> Tensor:
    return -_need_tensor("neg", input)


def clone(input: Tensor, *, memory_format=None) -> Tensor:
    """A copy with its own memory; gradients flow through it. `memory_format` is accepted (one layout here)."""
    return _need_tensor("clone", input).clone()


# ---- reductions and norms ------------------------------------------------------------------------------------
def all(input: Tensor, dim=None, keepdim: bool = False) -> Tensor:  # noqa: A001 (torch's name)
    return _need_tensor("all", input).all(dim, keepdim)


def any(input: Tensor, dim=None, keepdim: bool = False) -> Tensor:  # noqa: A001 (torch's name)
    return _need_tensor("any", input).any(dim, keepdim)


def var(input: Tensor, dim=None, unbiased: bool | None = None, keepdim: bool = False, *, correction=None) -> Tensor:
    """torch.var(input, dim=None, *, correction=1, keepdim=False), var(input, dim, unbiased, keepdim) and
    var(input, unbiased): the divisor is n − correction (unbiased: 1, biased: 0)."""
    return _need_tensor("var", input).var(dim, unbiased, keepdim, correction=correction)


def std(input: Tensor, dim=None, unbiased: bool | None = None, keepdim: bool = False, *, correction=None) -> Tensor:
    """The square root of `var`, with var's arguments."""
    return _need_tensor("std", input).std(dim, unbiased, keepdim, correction=correction)


def norm(input: Tensor, p="fro", dim=None, keepdim: bool = False, dtype=None) -> Tensor:
    """torch.norm: the vector p-norm (Σ|x|^p)^(1/p) over `dim` (all elements by default); 'fro' is p = 2,
    inf the largest |x|, -inf the smallest, 0 the count of nonzero elements (gradient 0). `dtype` casts
    first. The nuclear norm ('nuc') is not supported."""
    x = _need_tensor("norm", input)
    if dtype is not None:
        x = x.to(dtype=dtype)
    if x.dtype.kind not in "fc":
        raise TypeError(f"norm(): expected a floating point tensor as input, got dtype {x.dtype}")
    if isinstance(dim, list):
        dim = tuple(dim)
    if p == "fro":
        p = 2
    if isinstance(p, str) or not isinstance(p, _NUMBERS):
        raise ValueError(f"norm(): p must be a number, 'fro' or inf, got {p!r} (the nuclear norm is not supported)")
    if p == math.inf:
        return x.abs().amax(dim, keepdim)
    if p == -math.inf:
        return x.abs().amin(dim, keepdim)
    if p == 0:
        nonzero = Tensor((x.data != 0).astype(x.dtype))  # NaN counts, as torch's
        return (x.abs().sign() * 0 + nonzero).sum(dim, keepdim)  # sign's gradient is 0: torch's for p = 0
    return x.norm(p, dim, keepdim)


# ---- pointwise -------------------------------------------------------------------------------------------------
def _floating(name: str, input) -> Tensor:
    """The tensor, integers and bools in the default float dtype (as torch's float-only functions)."""
    x = _need_tensor(name, input)
    return x if x.dtype.kind in "fc" else x.to(dtype=backend.default_dtype())


def rsqrt(input: Tensor) -> Tensor:
    return _floating("rsqrt", input).rsqrt()


def reciprocal(input: Tensor) -> Tensor:
    return _floating("reciprocal", input).reciprocal()


def tan(input: Tensor) -> Tensor:
    """sin x / cos x; its gradient (cos² + sin²)/cos² = 1 + tan² x, as torch's."""
    x = _floating("tan", input)
    return x.sin() / x.cos()


def t(input: Tensor) -> Tensor:
    return _need_tensor("t", input).t()


def masked_fill(input: Tensor, mask, value) -> Tensor:
    return _need_tensor("masked_fill", input).masked_fill(mask, value)


# ---- joining -----------------------------------------------------------------------------------------------
concat = concatenate = cat


def _tensor_list(name: str, tensors) -> list[Tensor]:
    if isinstance(tensors, Tensor) or not hasattr(tensors, "__iter__"):
        raise TypeError(f"{name}(): expected a sequence of tensors, got {type(tensors).__name__}")
    tensors = [t if isinstance(t, Tensor) else Tensor._of(t) for t in tensors]
    if not tensors:
        raise ValueError(f"{name}(): expects a non-empty sequence of tensors")
    return tensors


def hstack(tensors) -> Tensor:
    """Joined along dim 1, or dim 0 when they are 1-D (0-d tensors count as 1-D), as torch.hstack."""
    ts = [x.reshape(1) if x.ndim == 0 else x for x in _tensor_list("hstack", tensors)]
    return cat(ts, 0 if ts[0].ndim == 1 else 1)


def vstack(tensors) -> Tensor:
    """Joined along dim 0, 1-D tensors (length n) as rows (1, n) and 0-d ones as (1, 1), as torch.vstack."""
    ts = [x.reshape(1, -1) if x.ndim < 2 else x for x in _tensor_list("vstack", tensors)]
    return cat(ts, 0)


# ---- sets and index helpers (no gradient) ----------------------------------------------------------------
def isin(elements, test_elements, *, assume_unique: bool = False, invert: bool = False) -> Tensor:
    """A bool tensor shaped as `elements`: whether each is among `test_elements` (either may be a number)."""
    if not isinstance(elements, Tensor) and not isinstance(test_elements, Tensor):
        raise TypeError(f"isin(): expected a tensor as elements or test_elements, got "
                        f"{type(elements).__name__} and {type(test_elements).__name__}")
    ref = elements if isinstance(elements, Tensor) else test_elements
    xp = backend.xp_of(ref.data)
    e, s = (backend.to_device(x.data, ref.device) if isinstance(x, Tensor) else xp.asarray(x)
            for x in (elements, test_elements))
    return Tensor(xp.asarray(xp.isin(e, s, assume_unique=assume_unique, invert=invert)))


def _triangle_indices(name: str, row: int, col: int, offset: int, dtype, device, lower: bool) -> Tensor:
    for arg, v in (("row", row), ("col", col), ("offset", offset)):
        if not isinstance(v, (int, np.integer)) or isinstance(v, bool):
            raise TypeError(f"{name}(): {arg} must be an int, got {type(v).__name__}")
    if row < 0 or col < 0:
        raise ValueError(f"{name}(): row and col must be >= 0, got row={row}, col={col}")
    dtype = np.dtype(np.int64 if dtype is None else dtype)
    if dtype.kind not in "iu":
        raise TypeError(f"{name}(): dtype must be an integer type, got {dtype}")
    rows, cols = (np.tril_indices if lower else np.triu_indices)(row, offset, col)  # row-major order, as torch
    xp = backend.get_xp(device)
    return Tensor(xp.asarray(np.stack([rows, cols]).astype(dtype)))  # (2, N)


def tril_indices(row: int, col: int, offset: int = 0, *, dtype=None, device=None, layout=None) -> Tensor:
    """The (2, N) indices of the lower triangle of a row × col matrix (on and below the `offset` diagonal),
    row by row, int64 by default."""
    return _triangle_indices("tril_indices", row, col, offset, dtype, device, lower=True)


def triu_indices(row: int, col: int, offset: int = 0, *, dtype=None, device=None, layout=None) -> Tensor:
    """The (2, N) indices of the upper triangle (on and above the `offset` diagonal), row by row."""
    return _triangle_indices("triu_indices", row, col, offset, dtype, device, lower=False)


# ---- tensordot -------------------------------------------------------------------------------------------
def _dims_list(name: str, dims, ndim: int) -> list[int]:
    if not isinstance(dims, (list, tuple)):
        raise TypeError(f"{name}(): each of the two dim lists must be a list of ints, got {dims!r}")
    out = []
    for d in dims:
        if not -ndim <= d < ndim:
            raise ValueError(f"{name}(): dim {d} is out of range for a tensor of {ndim} dims")
        out.append(int(d) % ndim)
    if len(set(out)) != len(out):
        raise ValueError(f"{name}(): dims {dims} repeat a dimension")
    return out


def tensordot(a: Tensor, b: Tensor, dims=2) -> Tensor:
    """Σ over paired dims of a and b of their products: `dims` an int n (a's last n with b's first n), a
    pair of lists ([dims of a], [dims of b]) or a (2, k) tensor. The free dims of a, then of b, remain.
    Computed as one matrix product of a and b permuted and flattened, so gradients flow to both."""
    a, b = _need_tensor("tensordot", a), _need_tensor("tensordot", b)
    if isinstance(dims, Tensor):
        dims = dims.tolist() if dims.numel() > 1 else int(dims.item())
    if isinstance(dims, (int, np.integer)) and not isinstance(dims, bool):
        if dims < 0:
            raise ValueError(f"tensordot expects dims >= 0, but got dims={dims}")
        if dims > min(a.ndim, b.ndim):
            raise ValueError(f"tensordot expects dims <= the dims of both tensors ({a.ndim} and {b.ndim}), "
                             f"got dims={dims}")
        dims_a, dims_b = list(range(a.ndim - dims, a.ndim)), list(range(dims))
    elif isinstance(dims, (tuple, list)) and len(dims) == 2:
        dims_a, dims_b = _dims_list("tensordot", dims[0], a.ndim), _dims_list("tensordot", dims[1], b.ndim)
    else:
        raise TypeError(f"tensordot expects dims to be an int, a pair of lists of ints or a tensor, got {dims!r}")
    if len(dims_a) != len(dims_b):
        raise ValueError(f"tensordot: both dim lists should have the same length, got {dims_a} and {dims_b}")
    for da, db in zip(dims_a, dims_b):
        if a.shape[da] != b.shape[db]:
            raise ValueError(f"tensordot: contracted dimensions need to match, but first has size {a.shape[da]} "
                             f"in dim {da} and second has size {b.shape[db]} in dim {db}")
    free_a = [d for d in range(a.ndim) if d not in dims_a]
    free_b = [d for d in range(b.ndim) if d not in dims_b]
    k = math.prod(a.shape[d] for d in dims_a)
    out_shape = tuple(a.shape[d] for d in free_a) + tuple(b.shape[d] for d in free_b)
    m = a.permute(free_a + dims_a).reshape(-1, k)   # (free of a, contracted)
    n = b.permute(dims_b + free_b).reshape(k, -1)   # (contracted, free of b)
    return (m @ n).reshape(out_shape)


def cosine_similarity(x1: Tensor, x2: Tensor, dim: int = 1, eps: float = 1e-8) -> Tensor:
    """torch.cosine_similarity: `seqlab.functional.cosine_similarity`."""
    from seqlab import functional as F

    return F.cosine_similarity(x1, x2, dim=dim, eps=eps)


# ---- the default generator's state -----------------------------------------------------------------------
def get_rng_state() -> dict:
    """The default generator's state (`seqlab.random`: a NumPy bit generator's state, a dict of plain numbers
    and strings, not torch's ByteTensor); `set_rng_state` takes it back."""
    return copy.deepcopy(_random.get_state())


def set_rng_state(new_state: dict) -> None:
    """Restores a state `get_rng_state` gave: the draws after it repeat."""
    current = _random.get_state()
    if not isinstance(new_state, dict) or new_state.get("bit_generator") != current.get("bit_generator"):
        got = new_state.get("bit_generator") if isinstance(new_state, dict) else type(new_state).__name__
        raise TypeError(f"set_rng_state expects a state that seqlab.get_rng_state() returned (a dict for "
                        f"{current.get('bit_generator')}), got {got}")
    _random.set_state(copy.deepcopy(new_state))
