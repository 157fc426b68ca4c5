"""Tensor methods for picking, writing, reshaping and multiplying, as torch's; and their `torch.*` functions.

`IndexingMethods` is a base class of `Tensor` with no state of its own (`__slots__ = ()`). Nearly every method is
a composition of differentiable ops Tensor already has (indexing, gather, cat/stack, where, arithmetic,
reductions), so it needs no backward: `x.index_select(0, i)` is `x[i]`, `x.roll(1)` two slices joined, `x.unfold`
a stack of strided slices, `x.diagonal()` an integer index, `x.logsumexp(d)` log(Σ exp(x − max)) + max. Two ops
needed primitives: writing into a copy (`ops/scatter.IndexPut`, behind scatter, index_add/copy/fill, index_put,
put, diag and diag_embed) and a running product whose gradient is right through zeros (`ops/scan.CumProd`).

Results that are indices or counts (nonzero, unique, bincount, histc, searchsorted, count_nonzero) carry no
gradient, as torch's. Values picked by an index (median, kthvalue, mode, cummax/cummin) are gathered, so their
gradient goes back to the picked places. In-place writes (`scatter_`, `index_add_`, `index_put_`, ...) check the
graph as `t[i] = v` does (`Tensor._check_assign`) and count the change (`versions.bump`).

Errors follow seqlab's classes: a dtype is a TypeError, a shape or argument value a ValueError, a dim or index out
of range an IndexError (torch raises RuntimeError for several of these).

This module must not import `seqlab.autograd.tensor` when it loads (tensor.py imports it): the Tensor class and
`seqlab.creation` are imported inside the functions that need them.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from seqlab import backend
from seqlab.autograd import versions as _versions
from seqlab.autograd.ops import scan as S
from seqlab.autograd.ops.reduce import Max, normalize_dim, normalize_dims
from seqlab.autograd.ops.scatter import IndexPut, put_into


# ---- helpers ------------------------------------------------------------------------------------------------
def _tensor_class():
    from seqlab.autograd.tensor import Tensor

    return Tensor


def _no_grad(arr):
    """A tensor of `arr` outside the graph (indices, counts)."""
    return _tensor_class()._from_op(arr, None)


def _as_tensor(x, like=None):
    """`x` as a Tensor: itself, or an array, list or number on `like`'s device."""
    tensor_cls = _tensor_class()
    if isinstance(x, tensor_cls):
        return x
    from seqlab.autograd.tensor import _to_array

    return tensor_cls(_to_array(x, device=like.device if like is not None else None))


def _along(dim: int, sl) -> tuple:
    """An index that applies `sl` along `dim` (everything before it whole)."""
    return (slice(None),) * dim + (sl,)


def _index_array(t, name: str, index, what: str = "index"):
    """`index` (a Tensor, an array, a list or an int) as an integer array on `t`'s device."""
    arr = index.data if isinstance(index, _tensor_class()) else index
    if not hasattr(arr, "dtype"):
        arr = np.asarray(arr)
        if arr.size == 0 and arr.dtype.kind == "f":  # [] reads as float64
            arr = arr.astype(np.int64)
    if arr.dtype.kind not in "iu":
        raise TypeError(f"{name}(): {what} must hold integers (int64 or int32), got dtype {arr.dtype}")
    return backend.to_device(arr, t.device)


def _check_range(name: str, idx, size: int, dim: int, negative: bool = False) -> None:
    """IndexError unless every index is in [0, size) (or [-size, size) where negatives count from the end)."""
    if idx.size == 0:
        return
    lo, hi = int(idx.min()), int(idx.max())
    if hi >= size or lo < (-size if negative else 0):
        raise IndexError(f"{name}(): index {hi if hi >= size else lo} is out of bounds for dimension {dim} "
                         f"with size {size}")


def _same_dtype(name: str, t, other, what: str = "source") -> None:
    if other.dtype != t.dtype:
        raise TypeError(f"{name}(): self ({t.dtype}) and {what} ({other.dtype}) must have the same dtype (as "
                        f"torch); cast one with .to(dtype)")


def _value(t, name: str, value):
    """A fill value: a number in `t`'s dtype, or a 0-d tensor (it may carry a gradient) in `t`'s dtype."""
    if isinstance(value, _tensor_class()):
        if value.ndim != 0:
            raise ValueError(f"{name}() only supports a 0-dimensional value tensor, but got one with "
                             f"{value.ndim} dimensions (shape {value.shape})")
        return value._cast(t.dtype) if value.requires_grad else backend.to_device(value.data, t.device).astype(
            t.dtype)
    if not isinstance(value, (int, float, bool, np.number, np.bool_)):
        raise TypeError(f"{name}(): value must be a number or a 0-d tensor, got {type(value).__name__}")
    return t.dtype.type(value)


def _broadcast(name: str, *shapes) -> tuple:
    try:
        return tuple(np.broadcast_shapes(*[tuple(s) for s in shapes]))
    except ValueError:
        raise ValueError(f"{name}(): shapes {', '.join(str(tuple(s)) for s in shapes)} do not broadcast") from None


def _size_args(size: tuple) -> tuple:
    """A shape given as `f(2, 3)` or `f((2, 3))`."""
    return tuple(size[0]) if len(size) == 1 and isinstance(size[0], (tuple, list)) else tuple(size)


class _ReturnType(tuple):
    """A named pair as torch.return_types: (values, indices), or (min, max) for aminmax."""

    __slots__ = ()
    kind, fields = "", ("values", "indices")

    def __new__(cls, first, second):
        return super().__new__(cls, (first, second))

    def __repr__(self) -> str:
        a, b = self.fields
        return f"seqlab.return_types.{self.kind}(\n{a}={self[0]!r},\n{b}={self[1]!r})"


def _return_type(kind: str, fields=("values", "indices")):
    """A _ReturnType named `kind` whose two items are also the attributes `fields`."""
    names = {f: property(lambda self, k=k: self[k]) for k, f in enumerate(fields)}
    return type(kind, (_ReturnType,), {"kind": kind, "fields": fields, "__slots__": (), **names})


_RESULTS = {k: _return_type(k) for k in ("cummax", "cummin", "median", "nanmedian", "kthvalue", "mode")}
_RESULTS["aminmax"] = _return_type("aminmax", ("min", "max"))


def _diag_index(rows: int, cols: int, offset: int, xp):
    """(row, col) int64 arrays of the `offset`-th diagonal of a rows × cols matrix (above: offset > 0)."""
    if offset >= 0:
        n = max(min(rows, cols - offset), 0)
        r = xp.arange(n, dtype=np.int64)
        return r, r + offset
    n = max(min(rows + offset, cols), 0)
    c = xp.arange(n, dtype=np.int64)
    return c - offset, c


def _sorted_order(t, dim: int):
    """Stable ascending argsort along `dim` (NaN last, as torch's ordering for median and kthvalue)."""
    return backend.xp_of(t.data).argsort(t.data, axis=dim, kind="stable")


def _pick(t, dim: int, idx, keepdim: bool, kind: str):
    """(values, indices) of `t` at the int64 indices `idx` (keepdim shape) along `dim`; the values gathered so
    their gradient goes back to the picked places."""
    values = t.gather(dim, _no_grad(idx))
    if not keepdim:
        values, idx = values.squeeze(dim), idx.squeeze(dim)
    return _RESULTS[kind](values, _no_grad(idx.astype(np.int64)))


def _float_required(t, name: str):
    if t.dtype.kind not in "fc":
        raise TypeError(f"{name}(): expected a floating point tensor, got dtype {t.dtype}")


# ---- the methods --------------------------------------------------------------------------------------------
class IndexingMethods:
    """Indexing, selection, scatter, linear-algebra and shape methods of `Tensor`, as torch's."""

    __slots__ = ()

    # ---- picking elements: reads, whose gradient scatters back (GetItem, Gather) ------------------------------
    def index_select(self, dim: int, index) -> Any:
        """The slices at `index` (a 1-D integer tensor) along `dim`; repeats allowed, their gradients add."""
        d = normalize_dim(dim, self.ndim)
        idx = _index_array(self, "index_select", index)
        if idx.ndim > 1:
            raise ValueError(f"index_select(): index must be 0- or 1-dimensional, got shape {tuple(idx.shape)}")
        n = self.shape[d] if self.ndim else 1
        if idx.size and (int(idx.min()) < 0 or int(idx.max()) >= n):
            raise IndexError(f"index_select(): index out of range in self: indices from {int(idx.min())} to "
                             f"{int(idx.max())} for dim {dim} of size {n} (shape {self.shape})")
        if self.ndim == 0:
            return self.clone()
        return self[_along(d, idx.reshape(-1))]  # (..., len(index), ...)

    def masked_select(self, mask) -> Any:
        """The elements where `mask` (bool, broadcastable with self) is True, as a 1-D tensor in row-major order."""
        m = self._bool_mask("masked_select", mask)
        shape = _broadcast("masked_select", self.shape, m.shape)
        xp = backend.xp_of(m)
        flat = xp.nonzero(xp.broadcast_to(m, shape).reshape(-1))[0]
        return self.expand(shape).reshape(-1)[flat]  # (number of True,)

    def masked_scatter(self, mask, source) -> Any:
        """self with the places where `mask` is True filled, in row-major order, by source's first elements."""
        from seqlab.creation import where

        m = self._bool_mask("masked_scatter", mask)
        src = _as_tensor(source, self)
        _same_dtype("masked_scatter", self, src)
        shape = _broadcast("masked_scatter", self.shape, m.shape)
        xp = backend.xp_of(m)
        mb = xp.broadcast_to(m, shape)
        n = int(mb.sum())
        if src.numel() < n:
            raise ValueError(f"masked_scatter(): source has {src.numel()} elements (shape {src.shape}) but the "
                             f"mask has {n} True places")
        if n == 0:
            return self.expand(shape).clone()
        pos = xp.cumsum(mb.reshape(-1)) - 1  # the k-th True place reads source's k-th element
        pos = xp.where(mb.reshape(-1), pos, 0).reshape(shape)
        return where(mb, src.reshape(-1)[pos], self.expand(shape))

    def masked_scatter_(self, mask, source) -> Any:
        """In place: `masked_scatter` with the mask broadcast to self's shape."""
        m = self._bool_mask("masked_scatter_", mask)
        if not backend.broadcasts_to(tuple(m.shape), self.shape):
            raise ValueError(f"masked_scatter_(): the mask of shape {tuple(m.shape)} does not broadcast to the "
                             f"tensor's shape {self.shape} (an in-place op keeps the tensor's shape)")
        self._check_assign("masked_scatter_", source)
        src = _as_tensor(source, self)
        _same_dtype("masked_scatter_", self, src)
        mb = backend.xp_of(self.data).broadcast_to(m, self.shape)
        n = int(mb.sum())
        if src.numel() < n:
            raise ValueError(f"masked_scatter_(): source has {src.numel()} elements (shape {src.shape}) but "
                             f"the mask has {n} True places")
        self.data[mb] = self._value_array(src).reshape(-1)[:n]
        _versions.bump(self.data)
        return self

    def take(self, index) -> Any:
        """self as if flattened, at `index` (any shape; negative counts from the end): a tensor of index's shape."""
        idx = _index_array(self, "take", index)
        n = self.numel()
        if idx.size and (int(idx.max()) >= n or int(idx.min()) < -n):
            bad = int(idx.max()) if int(idx.max()) >= n else int(idx.min())
            raise IndexError(f"take(): out of range: tried to access index {bad} on a tensor of {n} elements")
        return self.reshape(-1)[idx]  # index's shape

    def take_along_dim(self, indices, dim: int | None = None) -> Any:
        """`gather` with indices broadcast against self off `dim`; without `dim`, both flattened."""
        idx = _index_array(self, "take_along_dim", indices, "indices")
        if dim is None:
            x, idx, d = self.reshape(-1), idx.reshape(-1), 0
        else:
            d = normalize_dim(dim, self.ndim)
            if idx.ndim != self.ndim:
                raise ValueError(f"take_along_dim(): input and indices should have the same number of "
                                 f"dimensions, but got {self.ndim} dimensions (shape {self.shape}) and "
                                 f"{idx.ndim} (shape {tuple(idx.shape)})")
            off = _broadcast("take_along_dim", self.shape[:d] + self.shape[d + 1:],
                             tuple(idx.shape[:d]) + tuple(idx.shape[d + 1:]))
            x = self.expand(off[:d] + (self.shape[d],) + off[d:])
            idx = backend.xp_of(idx).broadcast_to(idx, off[:d] + (idx.shape[d],) + off[d:])
        n = x.shape[d] if x.ndim else 1
        _check_range("take_along_dim", idx, n, d, negative=True)
        return x.gather(d, idx % n if idx.size else idx)

    def nonzero(self, *, as_tuple: bool = False) -> Any:
        """int64 indices of the nonzero elements: an (n, ndim) tensor, or with `as_tuple` one 1-D tensor per dim."""
        xp = backend.xp_of(self.data)
        if self.ndim == 0:  # as torch: shape (0 or 1, 0); as a tuple, one index tensor
            k = int(bool(self.data != 0))
            return (_no_grad(xp.zeros(k, dtype=np.int64)),) if as_tuple else _no_grad(xp.zeros((k, 0), np.int64))
        idx = xp.nonzero(self.data)
        if as_tuple:
            return tuple(_no_grad(i.astype(np.int64)) for i in idx)
        return _no_grad(xp.stack(idx, axis=1).astype(np.int64))  # (n, ndim)

    def argwhere(self) -> Any:
        """`nonzero()`: an (n, ndim) int64 tensor."""
        return self.nonzero()

    def unique(self, sorted: bool = True, return_inverse: bool = False, return_counts: bool = False,
               dim: int | None = None):
        """The distinct values (sorted, also when sorted=False, which lets torch pick any order), or the
        distinct slices along `dim`; with `return_inverse` where each input element (slice) went, with
        `return_counts` how often each occurs. NaNs are not merged (torch's). No gradient, as torch."""
        xp = backend.xp_of(self.data)
        if dim is None:
            flat = self.data.reshape(-1)
            nan = self.dtype.kind == "f" and bool(xp.isnan(flat).any())
            kw = {"equal_nan": False} if nan else {}  # NumPy merges NaNs by default; torch does not
            values, inverse, counts = xp.unique(flat, return_inverse=True, return_counts=True, **kw)
            inverse = inverse.reshape(self.shape)
        else:
            d = normalize_dim(dim, self.ndim)
            values, inverse, counts = xp.unique(self.data, return_inverse=True, return_counts=True, axis=d)
            inverse = inverse.reshape(-1)
        out = [_no_grad(values)]
        if return_inverse:
            out.append(_no_grad(inverse.astype(np.int64)))
        if return_counts:
            out.append(_no_grad(counts.astype(np.int64)))
        return out[0] if len(out) == 1 else tuple(out)

    # ---- writing elements: IndexPut into a copy, or into self.data in place ---------------------------------
    def _scatter_plan(self, name: str, dim: int, index, src, value, reduce):
        """(index tuple, values, mode) of scatter(dim, index, src | value, reduce=)."""
        if (src is None) == (value is None):
            raise TypeError(f"{name}(): pass one of src (a tensor) or value (a number)")
        if reduce not in (None, "add", "multiply"):
            raise ValueError(f"{name}(): reduce argument must be either add or multiply, got {reduce!r}")
        if src is not None and not isinstance(src, (_tensor_class(), np.ndarray, list)):
            src, value = None, src  # scatter(dim, index, 2.5): torch's value overload, positionally
        d = normalize_dim(dim, self.ndim)
        idx = _index_array(self, name, index)
        nd = max(self.ndim, 1)
        idx = idx.reshape(1) if idx.ndim == 0 and nd == 1 else idx
        if idx.ndim != nd:
            raise ValueError(f"{name}(): index should have the same number of dimensions as self, got shapes "
                             f"{tuple(idx.shape)} and {self.shape}")
        shape = self.shape or (1,)
        if src is not None:
            src = _as_tensor(src, self)
            _same_dtype(name, self, src, "src")
            src = src.reshape(1) if src.ndim == 0 and nd == 1 else src
            if src.ndim != nd:
                raise ValueError(f"{name}(): src should have the same number of dimensions as self, got shapes "
                                 f"{src.shape} and {self.shape}")
        too_big = any(i > s for k, (i, s) in enumerate(zip(idx.shape, shape)) if k != d) or (
            src is not None and any(i > s for i, s in zip(idx.shape, src.shape)))
        if too_big:
            raise ValueError(f"{name}(): expected index {tuple(idx.shape)} to be no larger than self {self.shape} "
                             f"apart from dimension {d}" + (f" and no larger than src {src.shape}" if src is not
                                                            None else ""))
        _check_range(name, idx, shape[d], d)
        xp = backend.xp_of(idx)
        coords = [S.positions(idx.shape, k, xp) for k in range(nd)]  # an open mesh: every place of `index`
        coords[d] = idx
        if self.ndim == 0:
            coords = []  # a 0-d tensor: index is all zeros, the only place is ()
        if src is not None:
            values = src[tuple(slice(0, n) for n in idx.shape)]  # torch reads src where index has elements
            values = values.reshape(()) if self.ndim == 0 else values
        else:
            values = _value(self, name, value)
        return tuple(coords), values, reduce

    def scatter(self, dim: int, index, src=None, value=None, *, reduce: str | None = None) -> Any:
        """out[..., index[i, j, ...], ...] = src[i, j, ...] along `dim` (or = value); `reduce` "add" or
        "multiply" combines instead. Gradients: self's, except at the written places; src's, gathered back."""
        coords, values, mode = self._scatter_plan("scatter", dim, index, src, value, reduce)
        return IndexPut.apply(self, values, index=coords, mode=mode)

    def scatter_(self, dim: int, index, src=None, value=None, *, reduce: str | None = None) -> Any:
        coords, values, mode = self._scatter_plan("scatter_", dim, index, src, value, reduce)
        return self._put_(coords, values, mode, "scatter_")

    def scatter_add(self, dim: int, index, src) -> Any:
        """scatter with repeats adding up: out[..., index[i, j], ...] += src[i, j]."""
        coords, values, _ = self._scatter_plan("scatter_add", dim, index, src, None, "add")
        return IndexPut.apply(self, values, index=coords, mode="add")

    def scatter_add_(self, dim: int, index, src) -> Any:
        coords, values, _ = self._scatter_plan("scatter_add_", dim, index, src, None, "add")
        return self._put_(coords, values, "add", "scatter_add_")

    def _put_(self, index, values, mode, name: str) -> Any:
        """In place: self.data[index] = values (or add/multiply), with the checks of `t[i] = v`."""
        self._check_assign(name, values)
        put_into(self.data, index, self._value_array(values), mode)
        _versions.bump(self.data)
        return self

    def _index_plan(self, name: str, dim: int, index, source=None, negative: bool = False):
        """(index tuple, d) of index_add/index_copy/index_fill: the slices at a 1-D `index` along `dim`, and a
        source of self's shape with len(index) along dim (checked when given)."""
        d = normalize_dim(dim, self.ndim)
        idx = _index_array(self, name, index)
        if idx.ndim > 1:
            raise ValueError(f"{name}(): index should be 0- or 1-dimensional, got shape {tuple(idx.shape)}")
        idx = idx.reshape(-1)
        n = self.shape[d] if self.ndim else 1
        _check_range(name, idx, n, d, negative)
        if source is not None:
            want = self.shape[:d] + (idx.shape[0],) + self.shape[d + 1:] if self.ndim else ()
            if source.shape != want and not (self.ndim == 0 and source.shape == (1,)):
                raise ValueError(f"{name}(): source has shape {source.shape} but self {self.shape} with "
                                 f"{idx.shape[0]} indices along dim {d} takes {want}")
        return (_along(d, idx) if self.ndim else ()), d

    def _index_source(self, name: str, source):
        src = _as_tensor(source, self)
        _same_dtype(name, self, src)
        return src

    def index_add(self, dim: int, index, source, *, alpha=1) -> Any:
        """self with alpha · source's slices added at `index` along `dim` (repeats add up)."""
        src = self._index_source("index_add", source)
        index, _ = self._index_plan("index_add", dim, index, src)
        values = src if alpha == 1 else src * self.dtype.type(alpha)
        return IndexPut.apply(self, values.reshape(()) if self.ndim == 0 else values, index=index, mode="add")

    def index_add_(self, dim: int, index, source, *, alpha=1) -> Any:
        src = self._index_source("index_add_", source)
        self._check_assign("index_add_", src)
        index, _ = self._index_plan("index_add_", dim, index, src)
        values = src.data if alpha == 1 else src.data * self.dtype.type(alpha)
        return self._put_(index, values.reshape(()) if self.ndim == 0 else values, "add", "index_add_")

    def index_copy(self, dim: int, index, source) -> Any:
        """self with its slices at `index` along `dim` replaced by source's, in order."""
        src = self._index_source("index_copy", source)
        index, _ = self._index_plan("index_copy", dim, index, src)
        return IndexPut.apply(self, src.reshape(()) if self.ndim == 0 else src, index=index)

    def index_copy_(self, dim: int, index, source) -> Any:
        src = self._index_source("index_copy_", source)
        index, _ = self._index_plan("index_copy_", dim, index, src)
        return self._put_(index, src.reshape(()) if self.ndim == 0 else src, None, "index_copy_")

    def index_fill(self, dim: int, index, value) -> Any:
        """self with its slices at `index` along `dim` set to `value` (a number, or a 0-d tensor whose gradient
        is the sum over the filled places); negative indices count from the end."""
        index, _ = self._index_plan("index_fill", dim, index, negative=True)
        return IndexPut.apply(self, _value(self, "index_fill", value), index=index)

    def index_fill_(self, dim: int, index, value) -> Any:
        index, _ = self._index_plan("index_fill_", dim, index, negative=True)
        return self._put_(index, _value(self, "index_fill_", value), None, "index_fill_")

    def _index_put_plan(self, name: str, indices, values):
        """(index tuple, values) of index_put: one integer or bool tensor per leading dim; a bool one stands for
        its nonzero() (as in t[mask]); values broadcast to the indexed shape."""
        if not isinstance(indices, (tuple, list)):
            raise TypeError(f"{name}(): indices must be a tuple of tensors, got {type(indices).__name__}")
        parts = []
        for i in indices:
            arr = i.data if isinstance(i, _tensor_class()) else i
            arr = np.asarray(arr) if not hasattr(arr, "dtype") else arr
            if arr.dtype == bool:
                arr = backend.to_device(arr, self.device)
                parts.extend(backend.xp_of(arr).nonzero(arr))
            else:
                parts.append(_index_array(self, name, arr, "indices"))
        if len(parts) > self.ndim:
            raise IndexError(f"{name}(): too many indices for tensor of dimension {self.ndim} "
                             f"(got {len(parts)})")
        for k, p in enumerate(parts):
            _check_range(name, p, self.shape[k], k, negative=True)
        indexed = _broadcast(name, *[p.shape for p in parts]) + self.shape[len(parts):]
        if isinstance(values, (int, float, bool, np.number, np.bool_)):
            return tuple(parts), self.dtype.type(values)
        values = _as_tensor(values, self)
        _same_dtype(name, self, values, "values")
        if not backend.broadcasts_to(values.shape, indexed):
            raise ValueError(f"{name}(): shape mismatch: values of shape {values.shape} cannot be broadcast to "
                             f"the indexed shape {indexed}")
        if values.ndim > len(indexed):  # leading 1s only (it broadcasts): drop them for the gradient's sake
            values = values.reshape(values.shape[values.ndim - len(indexed):])
        return tuple(parts), values

    def index_put(self, indices, values, accumulate: bool = False) -> Any:
        """A copy with `values` written at `indices` (a tuple of index tensors, as `t[indices] = values`);
        `accumulate` adds instead, repeats adding up."""
        index, values = self._index_put_plan("index_put", indices, values)
        return IndexPut.apply(self, values, index=index, mode="add" if accumulate else None)

    def index_put_(self, indices, values, accumulate: bool = False) -> Any:
        index, values = self._index_put_plan("index_put_", indices, values)
        return self._put_(index, values, "add" if accumulate else None, "index_put_")

    def _flat_plan(self, name: str, index, source):
        """(index tuple, values) of put: `index` into self as if flattened, negatives from the end."""
        idx = _index_array(self, name, index)
        src = _as_tensor(source, self)
        _same_dtype(name, self, src)
        if idx.size != src.numel():
            raise ValueError(f"{name}(): expected source and index to have the same number of elements, "
                             f"got {src.numel()} and {idx.size}")
        n = self.numel()
        _check_range(name, idx, n, 0, negative=True)
        xp = backend.xp_of(idx)
        coords = xp.unravel_index(idx.reshape(-1) % max(n, 1), self.shape) if self.ndim else ()
        return tuple(coords), src.reshape(-1) if self.ndim else src.reshape(())

    def put(self, index, source, accumulate: bool = False) -> Any:
        """A copy with source's elements written at `index` into the flattened tensor (or added: accumulate)."""
        index, values = self._flat_plan("put", index, source)
        return IndexPut.apply(self, values, index=index, mode="add" if accumulate else None)

    def put_(self, index, source, accumulate: bool = False) -> Any:
        index, values = self._flat_plan("put_", index, source)
        return self._put_(index, values, "add" if accumulate else None, "put_")

    # ---- shapes ---------------------------------------------------------------------------------------------
    def roll(self, shifts, dims=None) -> Any:
        """Elements shifted along `dims` (or the flattened tensor), wrapping around: two slices joined by cat."""
        from seqlab.creation import cat

        shifts = (shifts,) if isinstance(shifts, (int, np.integer)) else tuple(shifts)
        if dims is None:
            if len(shifts) != 1:
                raise ValueError(f"roll(): without dims takes one shift, got shifts={shifts}")
            return self.reshape(-1).roll(shifts[0], 0).reshape(self.shape)
        dims = (dims,) if isinstance(dims, (int, np.integer)) else tuple(dims)
        if len(shifts) != len(dims):
            raise ValueError(f"roll(): shifts and dimensions must align. shifts: {len(shifts)}, dims: {len(dims)}")
        x = self
        for s, dim in zip(shifts, dims):
            d = normalize_dim(dim, self.ndim)
            n = x.shape[d] if x.ndim else 1
            s = int(s) % n if n else 0
            if s and x.ndim:
                x = cat([x[_along(d, slice(n - s, None))], x[_along(d, slice(0, n - s))]], d)
        return x if x is not self else self.clone()

    def fliplr(self) -> Any:
        """Columns reversed (dim 1); needs at least 2 dims."""
        if self.ndim < 2:
            raise ValueError(f"fliplr(): input must be >= 2-d, got shape {self.shape}")
        return self.flip(1)

    def flipud(self) -> Any:
        """Rows reversed (dim 0); needs at least 1 dim."""
        if self.ndim < 1:
            raise ValueError(f"flipud(): input must be >= 1-d, got shape {self.shape}")
        return self.flip(0)

    def tile(self, *dims) -> Any:
        """`repeat` with `dims` padded by 1s in front when shorter than the tensor's dims."""
        dims = _size_args(dims)
        return self.repeat((1,) * (self.ndim - len(dims)) + dims)

    def narrow(self, dim: int, start, length: int) -> Any:
        """The `length` elements from `start` (negative counts from the end) along `dim`: a slice (a view)."""
        d = normalize_dim(dim, self.ndim)
        if self.ndim == 0:
            raise ValueError("narrow() cannot be applied to a 0-dim tensor")
        n, start = self.shape[d], int(start)
        if not -n <= start <= n:
            raise IndexError(f"narrow(): start out of range (expected to be in range of [{-n}, {n}], but got "
                             f"{start})")
        start = start + n if start < 0 else start
        if length < 0 or start + length > n:
            raise ValueError(f"narrow(): start ({start}) + length ({length}) exceeds dimension size ({n})"
                             if length >= 0 else f"narrow(): length must be non-negative, got {length}")
        return self[_along(d, slice(start, start + length))]

    def select(self, dim: int, index: int) -> Any:
        """The slice at `index` along `dim`, that dim removed (`x.select(1, i)` is `x[:, i]`)."""
        if self.ndim == 0:
            raise IndexError("select() cannot be applied to a 0-dim tensor")
        d = normalize_dim(dim, self.ndim)
        n, index = self.shape[d], int(index)
        if not -n <= index < n:
            raise IndexError(f"select(): index {index} out of range for tensor of size {list(self.shape)} at "
                             f"dimension {dim}")
        return self[_along(d, index)]

    def unflatten(self, dim: int, sizes) -> Any:
        """Dim `dim` split into `sizes` (one may be -1)."""
        d = normalize_dim(dim, self.ndim)
        sizes = tuple(int(s) for s in sizes)
        n = self.shape[d]
        known = math.prod(s for s in sizes if s != -1)
        if not sizes or sizes.count(-1) > 1 or (-1 not in sizes and known != n) or (
                -1 in sizes and (known == 0 or n % known)):
            raise ValueError(f"unflatten(): provided sizes {list(sizes)} don't multiply up to the size of dim "
                             f"{dim} ({n}) in the input tensor (shape {self.shape})")
        sizes = tuple(n // known if s == -1 else s for s in sizes)
        return self.reshape(self.shape[:d] + sizes + self.shape[d + 1:])

    def reshape_as(self, other) -> Any:
        """self reshaped to other's shape."""
        return self.reshape(other.shape)

    def movedim(self, source, destination) -> Any:
        """Dims `source` moved to the places `destination` (ints or sequences), the others kept in order."""
        src = (source,) if isinstance(source, (int, np.integer)) else tuple(source)
        dst = (destination,) if isinstance(destination, (int, np.integer)) else tuple(destination)
        if len(src) != len(dst):
            raise ValueError(f"movedim(): invalid source or destination dims: source ({list(src)} dims) should "
                             f"contain the same number of dims as destination ({list(dst)} dims)")
        src = [normalize_dim(s, self.ndim) for s in src]
        dst = [normalize_dim(s, self.ndim) for s in dst]
        if len(set(src)) != len(src) or len(set(dst)) != len(dst):
            raise ValueError(f"movedim(): repeated dim in source {list(src)} or destination {list(dst)}")
        order = [None] * self.ndim
        for s, t in zip(src, dst):
            order[t] = s
        rest = iter(i for i in range(self.ndim) if i not in src)
        return self.permute([o if o is not None else next(rest) for o in order]) if self.ndim else self

    moveaxis = movedim

    def sum_to_size(self, *size) -> Any:
        """Summed down to `size`, a shape that broadcasts to self's (the gradient of an expand, as torch)."""
        size = _size_args(size)
        if not backend.broadcasts_to(size, self.shape):
            raise ValueError(f"sum_to_size(): size {list(size)} is not expandable to size {list(self.shape)}")
        lead = self.ndim - len(size)
        x = self.sum(tuple(range(lead))) if lead else self
        dims = tuple(i for i, s in enumerate(size) if s == 1 and x.shape[i] != 1)
        return x.sum(dims, keepdim=True) if dims else x

    def unfold(self, dimension: int, size: int, step: int) -> Any:
        """Sliding windows of `size` every `step` along `dimension`: that dim becomes the window count
        (n − size) // step + 1 and a last dim of `size` is added. A stack of `size` strided slices, so the
        gradient of overlapping windows adds up without a primitive of its own."""
        from seqlab.creation import stack

        if self.ndim == 0:
            return self.reshape(1).unfold(0, size, step).reshape(size)
        d = normalize_dim(dimension, self.ndim)
        n = self.shape[d]
        if size > n or size < 0:
            raise ValueError(f"unfold(): maximum size for tensor at dimension {d} is {n} but size is {size}")
        if step <= 0:
            raise ValueError(f"unfold(): step is {step} but must be > 0")
        count = (n - size) // step + 1
        if size == 0:  # empty windows: nothing to differentiate
            xp = backend.xp_of(self.data)
            return _no_grad(xp.zeros(self.shape[:d] + (count,) + self.shape[d + 1:] + (0,), dtype=self.dtype))
        span = step * (count - 1) + 1
        windows = [self[_along(d, slice(k, k + span, step))] for k in range(size)]  # each (..., count, ...)
        return stack(windows, -1)  # (..., count, ..., size)

    # ---- diagonals ------------------------------------------------------------------------------------------
    def diagonal(self, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Any:
        """The `offset`-th diagonal of the (dim1, dim2) planes, as a last dim; those two dims removed."""
        if self.ndim < 2:
            raise ValueError(f"diagonal(): needs at least 2 dims, got shape {self.shape}")
        d1, d2 = normalize_dim(dim1, self.ndim), normalize_dim(dim2, self.ndim)
        if d1 == d2:
            raise ValueError(f"diagonal(): diagonal dimensions cannot be identical {dim1}, {dim2}")
        rest = [i for i in range(self.ndim) if i not in (d1, d2)]
        batch = tuple(self.shape[i] for i in rest)
        rows, cols = _diag_index(self.shape[d1], self.shape[d2], offset, backend.xp_of(self.data))
        x = self.permute(rest + [d1, d2]).reshape((math.prod(batch), self.shape[d1], self.shape[d2]))
        return x[:, rows, cols].reshape(batch + (rows.shape[0],))  # (..., L)

    def diag(self, diagonal: int = 0) -> Any:
        """A 1-D tensor: the square matrix with it on the `diagonal`-th diagonal. A matrix: that diagonal."""
        if self.ndim == 2:
            return self.diagonal(diagonal)
        if self.ndim != 1:
            raise ValueError(f"diag(): supports 1D or 2D tensors, got {self.ndim}D (shape {self.shape})")
        return self.diag_embed(diagonal)

    def diag_embed(self, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Any:
        """The last dim put on the `offset`-th diagonal of new (dim1, dim2) planes, zeros elsewhere."""
        if self.ndim == 0:
            raise ValueError("diag_embed(): needs at least 1 dim, got a 0-dim tensor")
        nd = self.ndim + 1
        d1, d2 = normalize_dim(dim1, nd), normalize_dim(dim2, nd)
        if d1 == d2:
            raise ValueError(f"diag_embed(): diagonal dimensions cannot be identical {dim1}, {dim2}")
        n = self.shape[-1] + abs(offset)
        xp = backend.xp_of(self.data)
        rows, cols = _diag_index(n, n, offset, xp)
        base = _no_grad(xp.zeros(self.shape[:-1] + (n, n), dtype=self.dtype))
        out = IndexPut.apply(base, self, index=(Ellipsis, rows, cols))  # (..., n, n)
        order, rest = [None] * nd, iter(range(nd - 2))
        order[d1], order[d2] = nd - 2, nd - 1
        order = [o if o is not None else next(rest) for o in order]
        return out if order == list(range(nd)) else out.permute(order)

    def trace(self) -> Any:
        """The sum of a matrix's main diagonal."""
        if self.ndim != 2:
            raise ValueError(f"trace(): expected a matrix, but got a tensor with {self.ndim} dims "
                             f"(shape {self.shape})")
        return self.diagonal().sum()

    # ---- products -------------------------------------------------------------------------------------------
    def _vectors(self, name: str, other):
        other = _as_tensor(other, self)
        if self.ndim != 1 or other.ndim != 1:
            raise ValueError(f"{name}(): expects 1-D tensors, got shapes {self.shape} and {other.shape}")
        return other

    def outer(self, vec2) -> Any:
        """out[i, j] = self[i] · vec2[j]."""
        vec2 = self._vectors("outer", vec2)
        return self.reshape(-1, 1) * vec2.reshape(1, -1)  # (n, m)

    ger = outer

    def dot(self, other) -> Any:
        """Σ self[i] · other[i] of two 1-D tensors of one size and dtype."""
        other = self._vectors("dot", other)
        _same_dtype("dot", self, other, "other")
        if self.shape != other.shape:
            raise ValueError(f"dot(): inconsistent tensor size, expected tensor [{self.shape[0]}] and src "
                             f"[{other.shape[0]}] to have the same number of elements")
        return self @ other

    vdot = dot  # the same for real tensors (seqlab has no complex dtypes)

    def mv(self, vec) -> Any:
        """Matrix (n, m) times vector (m,): shape (n,)."""
        vec = _as_tensor(vec, self)
        if self.ndim != 2 or vec.ndim != 1 or self.shape[1] != vec.shape[0]:
            raise ValueError(f"mv(): size mismatch, got input {self.shape}, vec {vec.shape}")
        _same_dtype("mv", self, vec, "vec")
        return self @ vec

    def _add_product(self, name: str, product, beta, alpha) -> Any:
        """beta · self + alpha · product, with self broadcast to the product's shape (ignored when beta = 0)."""
        if not backend.broadcasts_to(self.shape, product.shape):
            raise ValueError(f"{name}(): self of shape {self.shape} does not broadcast to the product's shape "
                             f"{product.shape}")
        scaled = product if alpha == 1 else product * alpha
        if beta == 0:  # as torch: self is not read (a nan in it does not propagate)
            return scaled
        return scaled + (self if beta == 1 else self * beta)

    def addmm(self, mat1, mat2, *, beta=1, alpha=1) -> Any:
        """beta · self + alpha · (mat1 @ mat2) for matrices mat1 (n, k), mat2 (k, m)."""
        return self._add_product("addmm", _as_tensor(mat1, self).mm(_as_tensor(mat2, self)), beta, alpha)

    def addmv(self, mat, vec, *, beta=1, alpha=1) -> Any:
        """beta · self + alpha · (mat @ vec) for a matrix (n, m) and a vector (m,)."""
        return self._add_product("addmv", _as_tensor(mat, self).mv(vec), beta, alpha)

    def baddbmm(self, batch1, batch2, *, beta=1, alpha=1) -> Any:
        """beta · self + alpha · bmm(batch1, batch2) for (b, n, k) and (b, k, m)."""
        return self._add_product("baddbmm", _as_tensor(batch1, self).bmm(_as_tensor(batch2, self)), beta, alpha)

    def cross(self, other, dim: int | None = None) -> Any:
        """The cross product of 3-vectors along `dim` (inputs broadcast). Without `dim`, torch's old default:
        the first dim of size 3."""
        from seqlab.creation import stack

        other = _as_tensor(other, self)
        shape = _broadcast("cross", self.shape, other.shape)
        if dim is None:
            dim = next((i for i, s in enumerate(shape) if s == 3), None)
            if dim is None:
                raise ValueError(f"cross(): no dimension of size 3 in input (shape {shape}); pass dim")
        d = normalize_dim(dim, len(shape))
        if shape[d] != 3:
            raise ValueError(f"cross(): inputs dimension {dim} must have length 3, got shapes {self.shape} and "
                             f"{other.shape}")
        a, b = self.expand(shape), other.expand(shape)
        a0, a1, a2 = (a.select(d, i) for i in range(3))
        b0, b1, b2 = (b.select(d, i) for i in range(3))
        return stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], d)

    def kron(self, other) -> Any:
        """The Kronecker product: block (i, j, ...) is self[i, j, ...] · other."""
        other = _as_tensor(other, self)
        nd = max(self.ndim, other.ndim)
        a = self.reshape((1,) * (nd - self.ndim) + self.shape)
        b = other.reshape((1,) * (nd - other.ndim) + other.shape)
        out = a.reshape([x for s in a.shape for x in (s, 1)]) * b.reshape([x for s in b.shape for x in (1, s)])
        return out.reshape(tuple(p * q for p, q in zip(a.shape, b.shape)))  # (a0·b0, a1·b1, ...)

    # ---- running ops ----------------------------------------------------------------------------------------
    def cumprod(self, dim: int, *, dtype=None) -> Any:
        """Running product along `dim`, with a gradient that is right through zeros (ops/scan.CumProd)."""
        x = self if dtype is None else self.astype(dtype)
        if x.ndim == 0:
            normalize_dim(dim, 0)
            return S.CumProd.apply(x.reshape(1), dim=0).reshape(())
        return S.CumProd.apply(x, dim=normalize_dim(dim, x.ndim))

    def _cum_extreme(self, dim: int, use_min: bool):
        d = normalize_dim(dim, self.ndim)
        kind = "cummin" if use_min else "cummax"
        if self.ndim == 0:
            return _RESULTS[kind](self.clone(), _no_grad(backend.xp_of(self.data).zeros((), np.int64)))
        idx = S.running_extreme_index(self.data, d, use_min)
        return _RESULTS[kind](self.gather(d, _no_grad(idx)), _no_grad(idx))

    def cummax(self, dim: int):
        """(values, indices) of the running max along `dim`; ties take the later index (as torch)."""
        return self._cum_extreme(dim, use_min=False)

    def cummin(self, dim: int):
        """(values, indices) of the running min along `dim`; ties take the later index (as torch)."""
        return self._cum_extreme(dim, use_min=True)

    # ---- reductions -----------------------------------------------------------------------------------------
    def logsumexp(self, dim, keepdim: bool = False) -> Any:
        """log Σ exp(x) over `dim` (an int or a tuple), stably: m + log Σ exp(x − m) with m the max (held
        constant; the gradient is softmax either way)."""
        x = self._float_input()
        dims = normalize_dims(dim, x.ndim)
        xp = backend.xp_of(x.data)
        m = x.data.max(axis=dims, keepdims=True) if x.data.size else xp.zeros([1] * x.ndim, x.dtype)
        m = xp.where(xp.isfinite(m), m, x.dtype.type(0))  # all -inf (or an inf): shift by 0
        with np.errstate(divide="ignore"):  # log(0) = -inf where every element is -inf, as torch
            out = (x - m).exp().sum(dims, keepdim=True).log() + m
        return out if keepdim else out.reshape(tuple(s for i, s in enumerate(x.shape) if i not in dims))

    def nansum(self, dim=None, keepdim: bool = False, *, dtype=None) -> Any:
        """`sum` with NaNs counted as zero (they get no gradient)."""
        x = self if dtype is None else self.astype(dtype)
        if x.dtype.kind != "f":
            return x.sum(dim, keepdim)
        return x.masked_fill(backend.xp_of(x.data).isnan(x.data), 0).sum(dim, keepdim)

    def nanmean(self, dim=None, keepdim: bool = False, *, dtype=None) -> Any:
        """The mean of the non-NaN elements (NaN where there is none)."""
        x = self if dtype is None else self.astype(dtype)
        _float_required(x, "nanmean")
        xp = backend.xp_of(x.data)
        count = (~xp.isnan(x.data)).sum(axis=normalize_dims(dim, x.ndim), keepdims=keepdim).astype(x.dtype)
        with np.errstate(invalid="ignore", divide="ignore"):
            return x.nansum(dim, keepdim) / _no_grad(count)

    def amin(self, dim=None, keepdim: bool = False) -> Any:
        """The min over `dim` (None: all, an int or a tuple); ties share the gradient equally (as torch)."""
        return Max.apply(self, dim=dim, keepdim=keepdim, use_min=True)

    def aminmax(self, *, dim: int | None = None, keepdim: bool = False):
        """(min, max) over `dim` (or all elements)."""
        if self.numel() == 0:
            raise ValueError(f"aminmax(): cannot compute on an empty tensor (shape {self.shape})")
        return _RESULTS["aminmax"](self.amin(dim, keepdim), self.amax(dim, keepdim))

    def count_nonzero(self, dim=None) -> Any:
        """How many elements are nonzero over `dim` (None: all, an int or a tuple): int64, no gradient."""
        dims = normalize_dims(dim, self.ndim)
        return _no_grad((self.data != 0).sum(axis=dims).astype(np.int64))

    def _median_all(self, ignore_nan: bool) -> Any:
        """The lower median of all elements; its gradient split equally over the elements equal to it (as
        torch's median())."""
        flat = self.reshape(-1)
        xp = backend.xp_of(flat.data)
        is_nan = xp.isnan(flat.data) if flat.dtype.kind == "f" else None
        n = flat.numel() - (int(is_nan.sum()) if ignore_nan and is_nan is not None else 0)
        if n == 0:
            if flat.dtype.kind != "f":
                raise ValueError("median(): cannot compute the median of an empty integer tensor")
            return _no_grad(xp.asarray(np.nan, dtype=flat.dtype))
        if is_nan is not None and not ignore_nan and bool(is_nan.any()):
            return flat[int(xp.argmax(is_nan))]  # NaN, as torch
        v = flat.data[_sorted_order(flat, 0)[(n - 1) // 2]]
        if flat.dtype.kind != "f":
            return _no_grad(xp.asarray(v))
        return flat.masked_fill(flat.data != v, -np.inf).amax()

    def _median_dim(self, dim: int, keepdim: bool, ignore_nan: bool, kind: str):
        d = normalize_dim(dim, self.ndim)
        xp = backend.xp_of(self.data)
        if self.ndim == 0:
            return _RESULTS[kind](self.clone(), _no_grad(xp.zeros((), np.int64)))
        if self.shape[d] == 0:
            raise IndexError(f"{kind}(): expected reduction dim {d} to have non-zero size (shape {self.shape})")
        order = _sorted_order(self, d)
        n = self.shape[d]
        if self.dtype.kind == "f":
            is_nan = xp.isnan(self.data)
            valid = n - is_nan.sum(axis=d, keepdims=True)
            k = xp.maximum((valid - 1) // 2, 0) if ignore_nan else (n - 1) // 2
        else:
            k = (n - 1) // 2
        k = xp.broadcast_to(xp.asarray(k, dtype=np.int64), tuple(1 if i == d else s for i, s in
                                                                  enumerate(self.shape)))
        idx = xp.take_along_axis(order, k, axis=d)
        if self.dtype.kind == "f" and not ignore_nan:  # a slice with a NaN: its (first) NaN, as torch
            idx = xp.where(is_nan.any(axis=d, keepdims=True), xp.argmax(is_nan, axis=d, keepdims=True), idx)
        return _pick(self, d, idx, keepdim, kind)

    def median(self, dim: int | None = None, keepdim: bool = False):
        """Without `dim`: the lower median of all elements (of an even count, the smaller middle one), NaN if
        any. With `dim`: (values, indices) along it."""
        if dim is None:
            return self._median_all(ignore_nan=False)
        return self._median_dim(dim, keepdim, ignore_nan=False, kind="median")

    def nanmedian(self, dim: int | None = None, keepdim: bool = False):
        """`median` of the non-NaN elements."""
        if dim is None:
            return self._median_all(ignore_nan=True)
        return self._median_dim(dim, keepdim, ignore_nan=True, kind="nanmedian")

    def kthvalue(self, k: int, dim: int = -1, keepdim: bool = False):
        """(values, indices) of the k-th smallest (k from 1) along `dim`."""
        d = normalize_dim(dim, self.ndim)
        n = self.shape[d] if self.ndim else 1
        if not 1 <= k <= n:
            raise ValueError(f"kthvalue(): selected number k={k} out of range for dimension {dim} of size {n}")
        if self.ndim == 0:
            return _RESULTS["kthvalue"](self.clone(), _no_grad(backend.xp_of(self.data).zeros((), np.int64)))
        idx = _sorted_order(self, d)[_along(d, slice(k - 1, k))]
        return _pick(self, d, idx, keepdim, "kthvalue")

    def mode(self, dim: int = -1, keepdim: bool = False):
        """(values, indices): the most frequent value along `dim` (the smallest of equally frequent ones) and
        the index of its last occurrence, as torch."""
        d = normalize_dim(dim, self.ndim)
        xp = backend.xp_of(self.data)
        if self.ndim == 0:
            return _RESULTS["mode"](self.clone(), _no_grad(xp.zeros((), np.int64)))
        n = self.shape[d]
        if n == 0:
            raise IndexError(f"mode(): expected reduction dim {d} to have non-zero size (shape {self.shape})")
        s = xp.sort(self.data, axis=d)
        new_run = xp.ones(s.shape, dtype=bool)
        new_run[_along(d, slice(1, None))] = s[_along(d, slice(1, None))] != s[_along(d, slice(0, n - 1))]
        pos = S.positions(s.shape, d, xp)
        run_start = S.running(xp.where(new_run, pos, 0), xp.maximum, d)
        best = xp.argmax(pos - run_start, axis=d, keepdims=True)  # the first longest run: the smallest value
        hit = xp.flip(self.data == xp.take_along_axis(s, best, axis=d), d)
        last = (n - 1) - xp.argmax(hit, axis=d, keepdims=True)
        return _pick(self, d, last, keepdim, "mode")

    def diff(self, n: int = 1, dim: int = -1, prepend=None, append=None) -> Any:
        """The n-th forward difference along `dim` (x[i+1] − x[i], n times; bool tensors: !=), after joining
        `prepend` and `append` (tensors of self's dims) on either side."""
        from seqlab.creation import cat

        if self.ndim == 0:
            raise ValueError("diff(): expects input to be at least one-dimensional")
        d = normalize_dim(dim, self.ndim)
        parts = [_as_tensor(p, self) for p in (prepend, self, append) if p is not None]
        for p in parts:
            if p.ndim != self.ndim:
                raise ValueError(f"diff(): expects prepend or append to have the same dims as input, got shapes "
                                 f"{p.shape} and {self.shape}")
        x = cat(parts, d) if len(parts) > 1 else self
        for _ in range(n):
            m = x.shape[d]
            hi, lo = x[_along(d, slice(1, None))], x[_along(d, slice(0, max(m - 1, 0)))]
            x = _no_grad(hi.data != lo.data) if x.dtype == bool else hi - lo
        return x

    # ---- counting (no gradient) ------------------------------------------------------------------------------
    def bincount(self, weights=None, minlength: int = 0) -> Any:
        """How often each value 0..max occurs in a 1-D non-negative integer tensor (or the sum of `weights`
        there): int64 counts, or weights' float dtype (float64 for integer weights), as torch."""
        xp = backend.xp_of(self.data)
        if self.ndim != 1 or self.dtype.kind not in "iu" or (self.numel() and int(self.data.min()) < 0):
            raise ValueError(f"bincount(): only supports 1-d non-negative integral inputs, got dtype {self.dtype} "
                             f"and shape {self.shape}")
        if minlength < 0:
            raise ValueError(f"bincount(): minlength should be >= 0, got {minlength}")
        if weights is None:
            return _no_grad(xp.bincount(self.data, minlength=minlength).astype(np.int64))
        w = _as_tensor(weights, self)
        if w.shape != self.shape:
            raise ValueError(f"bincount(): weights should have the same shape as input, got {w.shape} and "
                             f"{self.shape}")
        dtype = w.dtype if w.dtype.kind == "f" else np.dtype(np.float64)
        return _no_grad(xp.bincount(self.data, weights=w.data, minlength=minlength).astype(dtype))

    def histc(self, bins: int = 100, min=0, max=0) -> Any:  # noqa: A002 (torch's names)
        """Counts in `bins` equal-width bins over [min, max] (min = max: the data's range), in self's dtype;
        elements outside (and NaN) are ignored, max itself goes into the last bin."""
        _float_required(self, "histc")
        if bins <= 0:
            raise ValueError(f"histc(): bins must be > 0, got {bins}")
        xp = backend.xp_of(self.data)
        a = self.data.reshape(-1)
        lo, hi = float(min), float(max)
        if lo == hi and a.size:
            lo, hi = float(a.min()), float(a.max())
        if lo == hi:  # as torch: a range of width 2 around a single value
            lo, hi = lo - 1, hi + 1
        if lo > hi:
            raise ValueError(f"histc(): max must be larger than min, got min={min}, max={max}")
        v = a[(a >= lo) & (a <= hi)]
        idx = ((v - lo) * bins / (hi - lo)).astype(np.int64)
        idx = xp.minimum(idx, bins - 1)  # max itself: into the last bin
        return _no_grad(xp.bincount(idx, minlength=bins).astype(self.dtype))


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
    "gather", "flip", "chunk", "split", "unbind",
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
    return var.sqrt(), mean


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
