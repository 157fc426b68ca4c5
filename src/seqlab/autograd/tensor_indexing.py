"""`IndexingMethods`: torch's selection, shape, linear-algebra and statistics methods of `Tensor`, as a mixin;
and their `torch.*` functions.

`IndexingMethods` (a base of Tensor, with no state: `__slots__ = ()`) joins four mixins:

- `SelectMethods` (tensor_select.py): index_select, masked_select/masked_scatter, take, take_along_dim, nonzero,
  unique; scatter, scatter_add, index_add/copy/fill, index_put, put, and their in-place forms.
- `ShapeMethods` (tensor_shape.py): roll, fliplr/flipud, flip, tile, repeat, repeat_interleave, narrow, select,
  unbind, unflatten, movedim, sum_to_size, unfold, mT.
- `LinalgMethods` (tensor_linalg.py): diagonal, diag, diag_embed, trace, tril/triu, outer, dot, mv, addmm, addmv,
  baddbmm, cross, kron.
- `StatsMethods` (tensor_stats.py): cumsum/cumprod/cummax/cummin, prod/var/std/all/any, logsumexp, nansum,
  nanmean, amin, aminmax, count_nonzero, median, kthvalue, mode, diff, argsort/sort/topk, bincount, histc.

Nearly every method is a composition of differentiable ops Tensor already has (indexing, gather, cat/stack, where,
arithmetic, reductions), so it needs no backward. Two ops needed primitives: writing into a copy
(`ops/scatter.IndexPut`, behind scatter, index_add/copy/fill, index_put, put, diag and diag_embed) and a running
product whose gradient is right through zeros (`ops/scan.CumProd`).

Below, the `torch.*` functions (`TOPLEVEL`, re-exported by `seqlab/__init__.py`): most call the method of the same
name on their first argument; var_mean, std_mean, searchsorted, bucketize, meshgrid, broadcast_to,
broadcast_tensors, cartesian_prod, block_diag, linspace and logspace are functions only.

Errors follow seqlab's classes: a dtype is a TypeError, a shape or argument value a ValueError, a dim or index out
of range an IndexError (torch raises RuntimeError for several of these).

This module must not import `seqlab.autograd.tensor` when it loads (tensor.py imports it): the Tensor class and
`seqlab.creation` are imported inside the functions that need them.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from seqlab import backend
from seqlab.autograd.ops import elementwise as E
from seqlab.autograd.tensor_common import _as_tensor, _broadcast, _index_array, _no_grad, _tensor_class
from seqlab.autograd.tensor_linalg import LinalgMethods
from seqlab.autograd.tensor_select import SelectMethods
from seqlab.autograd.tensor_shape import ShapeMethods
from seqlab.autograd.tensor_stats import StatsMethods


class IndexingMethods(SelectMethods, ShapeMethods, LinalgMethods, StatsMethods):
    """Indexing, selection, scatter, linear-algebra, shape and statistics methods of `Tensor`, as torch's."""

    __slots__ = ()


# ---- torch.* functions --------------------------------------------------------------------------------------
def _input(name: str, x):
    tensor_cls = _tensor_class()
    if isinstance(x, tensor_cls):
        return x
    if hasattr(x, "dtype") and hasattr(x, "shape"):  # an array (a parameter's .grad)
        return tensor_cls(x)
    raise TypeError(f"{name}(): argument 'input' must be Tensor, not {type(x).__name__}")


def _method_function(name: str):
    """torch.<name>(input, *args, **kwargs): input.<name>(*args, **kwargs)."""
    def fn(input, *args, **kwargs):  # noqa: A002 (torch's name)
        return getattr(_input(name, input), name)(*args, **kwargs)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"torch.{name}(input, ...): `input.{name}(...)`."
    return fn


# the torch functions that are the Tensor method of the same name, called on their first argument
_METHOD_FUNCTIONS = [
    "index_select", "masked_select", "masked_scatter", "nonzero", "argwhere", "unique", "take", "take_along_dim",
    "scatter", "scatter_add", "index_add", "index_fill", "index_copy", "index_put", "put",
    "roll", "fliplr", "flipud", "tile", "narrow", "select", "unflatten", "movedim", "moveaxis",
    "diagonal", "diag", "diag_embed", "trace", "outer", "ger", "dot", "vdot", "mv", "addmm", "addmv", "baddbmm",
    "cross", "kron", "cumprod", "cummax", "cummin", "logsumexp", "nansum", "nanmean", "amin", "amax", "aminmax",
    "count_nonzero", "median", "nanmedian", "kthvalue", "mode", "diff", "bincount", "histc",
    "gather", "flip", "chunk", "split", "unbind", "tensor_split", "hsplit", "vsplit", "dsplit", "swapaxes", "swapdims",
    "ravel", "adjoint", "msort",
]
globals().update({_name: _method_function(_name) for _name in _METHOD_FUNCTIONS})


def var_mean(input, dim=None, unbiased: bool | None = None, keepdim: bool = False, *, correction=None):  # noqa: A002
    """(var, mean) over `dim`, with var's arguments (`unbiased`, or `correction`; a bool `dim` is `unbiased`)."""
    x = _input("var_mean", input)
    if isinstance(dim, (bool, np.bool_)):
        dim, unbiased = None, bool(dim)
    return x.var(dim, unbiased, keepdim, correction=correction), x.mean(dim, keepdim)


def std_mean(input, dim=None, unbiased: bool | None = None, keepdim: bool = False, *, correction=None):  # noqa: A002
    """(std, mean) over `dim`, with std's arguments."""
    var, mean = var_mean(input, dim, unbiased, keepdim, correction=correction)
    return E.Sqrt.apply(var, zero_at_zero=True), mean  # a 0 gradient where std is 0, as Tensor.std


def searchsorted(sorted_sequence, input, *, out_int32: bool = False, right: bool = False,  # noqa: A002
                 side: str | None = None, sorter=None):
    """Where each value of `input` would go in the innermost dim of `sorted_sequence` to keep it sorted: the
    first such place (side "left"), or after equal elements (right=True / side="right"). A sorted_sequence of
    more dims searches row by row (its leading dims match input's). int64 (int32 with out_int32), no gradient."""
    seq = _as_tensor(sorted_sequence)
    if isinstance(input, _tensor_class()) and input.device != seq.device:  # host boundaries for a GPU input
        seq = _tensor_class()(backend.to_device(seq.data, "cuda"))
    if side is not None and side not in ("left", "right"):
        raise ValueError(f"searchsorted(): side can only be 'left' or 'right', got {side!r}")
    if side is not None and right and side == "left":
        raise ValueError("searchsorted(): side and right can't be set to opposites, got side of left while "
                         "right was True")
    side = side or ("right" if right else "left")
    s = seq.data
    xp = backend.xp_of(s)
    if sorter is not None:
        s = xp.take_along_axis(s, _index_array(seq, "searchsorted", sorter, "sorter"), axis=-1)
    scalar = isinstance(input, (int, float, np.number))
    v = xp.asarray(input, dtype=s.dtype) if scalar else backend.to_device(_as_tensor(input, seq).data, seq.device)
    if s.ndim == 0:
        raise ValueError("searchsorted(): sorted_sequence must have at least 1 dim, got a 0-dim tensor")
    if s.ndim == 1:
        out = xp.searchsorted(s, v, side=side)
    else:
        if scalar or v.ndim != s.ndim or v.shape[:-1] != s.shape[:-1]:
            raise ValueError(f"searchsorted(): boundaries tensor should be 1 dimension or the first N-1 "
                             f"dimensions of boundaries tensor and input value tensor must match, but we got "
                             f"boundaries tensor {tuple(s.shape)} and input value tensor {tuple(v.shape)}")
        rows_s, rows_v = s.reshape(-1, s.shape[-1]), v.reshape(-1, v.shape[-1])
        out = xp.stack([xp.searchsorted(rows_s[i], rows_v[i], side=side) for i in range(rows_s.shape[0])])
        out = out.reshape(v.shape)
    return _no_grad(xp.asarray(out).astype(np.int32 if out_int32 else np.int64))


def bucketize(input, boundaries, *, out_int32: bool = False, right: bool = False):  # noqa: A002
    """The bucket of each element of `input` among the 1-D sorted `boundaries`: i with
    boundaries[i-1] < x <= boundaries[i] (right=True: boundaries[i-1] <= x < boundaries[i])."""
    b = _as_tensor(boundaries)
    if b.ndim != 1:
        raise ValueError(f"bucketize(): boundaries tensor must be 1 dimension, but got dim({b.ndim})")
    return searchsorted(b, input, out_int32=out_int32, right=right)


def meshgrid(*tensors, indexing: str | None = None):
    """Coordinate grids of 1-D tensors: with indexing "ij" (the default, as torch's) grid k varies along dim k;
    "xy" swaps the first two dims (as NumPy's meshgrid). Expanded views, so gradients sum back."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    tensors = [_as_tensor(t) for t in tensors]
    indexing = indexing or "ij"
    if indexing not in ("ij", "xy"):
        raise ValueError(f"meshgrid(): indexing must be one of 'xy' or 'ij', got {indexing!r}")
    if any(t.ndim > 1 for t in tensors):
        raise ValueError(f"meshgrid(): expects 0D or 1D tensors, got shapes {[t.shape for t in tensors]}")
    if len({t.dtype for t in tensors}) > 1:
        raise TypeError(f"meshgrid(): expects all tensors to have the same dtype, got "
                        f"{[str(t.dtype) for t in tensors]}")
    sizes = [t.numel() for t in tensors]
    axes = list(range(len(tensors)))
    if indexing == "xy" and len(tensors) > 1:
        axes[0], axes[1] = 1, 0
        sizes[0], sizes[1] = sizes[1], sizes[0]
    out = []
    for t, ax in zip(tensors, axes):
        view = [1] * len(tensors)
        view[ax] = t.numel()
        out.append(t.reshape(view).expand(sizes))
    return tuple(out)


def broadcast_to(input, shape) -> Any:  # noqa: A002
    """`input.expand(shape)` (a view; -1 keeps a dim)."""
    x = _input("broadcast_to", input)
    shape = tuple(shape)
    lead = len(shape) - x.ndim
    full = tuple(x.shape[i - lead] if s == -1 and i >= lead else s for i, s in enumerate(shape))
    if lead < 0 or not backend.broadcasts_to(x.shape, full):
        raise ValueError(f"broadcast_to(): the shape {x.shape} cannot be broadcast to {shape}")
    return x.expand(full)


def broadcast_tensors(*tensors):
    """The tensors expanded to their common broadcast shape."""
    tensors = [_as_tensor(t) for t in tensors]
    shape = _broadcast("broadcast_tensors", *[t.shape for t in tensors])
    return tuple(t.expand(shape) for t in tensors)


def cartesian_prod(*tensors) -> Any:
    """Every combination of the 1-D tensors' elements, one per row (one tensor: itself)."""
    from seqlab.creation import stack

    if len(tensors) == 1:
        return _as_tensor(tensors[0])
    grids = meshgrid(*tensors, indexing="ij")
    return stack([g.reshape(-1) for g in grids], 1)  # (Π n_k, len(tensors))


def block_diag(*tensors) -> Any:
    """The tensors (0-d, 1-D as a row, or 2-D) as blocks along a diagonal, zeros elsewhere."""
    from seqlab.creation import _one_dtype, cat, zeros

    if not tensors:
        return zeros((1, 0))
    blocks = [_as_tensor(t) for t in tensors]
    for b in blocks:
        if b.ndim > 2:
            raise ValueError(f"block_diag(): input tensors must have 2 or fewer dimensions, got shape {b.shape}")
    blocks = [b.reshape(1, 1) if b.ndim == 0 else b.reshape(1, -1) if b.ndim == 1 else b for b in _one_dtype(blocks)]
    width = sum(b.shape[1] for b in blocks)
    rows, left = [], 0
    for b in blocks:
        r, c = b.shape
        pad = [zeros((r, left), dtype=b.dtype, device=b.device), b,
               zeros((r, width - left - c), dtype=b.dtype, device=b.device)]
        rows.append(cat(pad, 1))  # (r, width)
        left += c
    return cat(rows, 0)  # (Σ r, width)


def linspace(start, end, steps: int, *, dtype=None, device=None, requires_grad: bool = False) -> Any:
    """`steps` evenly spaced values from start to end inclusive (the default float dtype unless `dtype`)."""
    if steps < 0:
        raise ValueError(f"linspace(): number of steps must be non-negative, got {steps}")
    values = _linspace64(float(start), float(end), steps)
    dtype = np.dtype(dtype) if dtype is not None else np.dtype(backend.default_dtype())
    arr = backend.get_xp(device).asarray(np.trunc(values) if dtype.kind in "iu" else values).astype(dtype)
    return _tensor_class()(arr, requires_grad=requires_grad)


def _linspace64(start: float, end: float, steps: int) -> np.ndarray:
    """torch's formula, in float64: the first half counts up from start, the second down from end."""
    if steps == 1:
        return np.array([start])
    step = (end - start) / (steps - 1)
    i = np.arange(steps, dtype=np.float64)
    return np.where(i < steps // 2, start + i * step, end - (steps - 1 - i) * step)


def logspace(start, end, steps: int, base: float = 10.0, *, dtype=None, device=None,
             requires_grad: bool = False) -> Any:
    """base ** linspace(start, end, steps)."""
    if steps < 0:
        raise ValueError(f"logspace(): number of steps must be non-negative, got {steps}")
    values = np.power(float(base), _linspace64(float(start), float(end), steps))
    dtype = np.dtype(dtype) if dtype is not None else np.dtype(backend.default_dtype())
    arr = backend.get_xp(device).asarray(np.trunc(values) if dtype.kind in "iu" else values).astype(dtype)
    return _tensor_class()(arr, requires_grad=requires_grad)


# what `seqlab/__init__.py` re-exports (`from seqlab.autograd.tensor_indexing import TOPLEVEL` ...)
TOPLEVEL = _METHOD_FUNCTIONS + [
    "var_mean", "std_mean", "searchsorted", "bucketize", "meshgrid", "broadcast_to", "broadcast_tensors",
    "cartesian_prod", "block_diag", "linspace", "logspace",
]

__all__ = ["IndexingMethods", "TOPLEVEL", *TOPLEVEL]
