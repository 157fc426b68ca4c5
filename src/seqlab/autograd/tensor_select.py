"""`SelectMethods`: picking and writing elements by index or mask, as torch's, as a mixin of `Tensor` (a base
of `IndexingMethods`, tensor_indexing.py).

Reads (index_select, masked_select, take, take_along_dim) are integer indexing or `gather`, so their gradient
scatters back. Writes (scatter, index_add/copy/fill, index_put, put, masked_scatter) go into a copy through one
primitive, `ops/scatter.IndexPut`, whose gradient is a gather of the same index; their in-place forms (`scatter_`,
`index_add_`, ...) write into self.data, check the graph as `t[i] = v` does (`Tensor._check_assign`) and count
the change (`versions.bump`). Indices (nonzero, unique) carry no gradient, as torch's.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from seqlab import backend
from seqlab.autograd import versions as _versions
from seqlab.autograd.ops import scan as S
from seqlab.autograd.ops.reduce import normalize_dim
from seqlab.autograd.ops.scatter import IndexPut, put_into
from seqlab.autograd.tensor_common import (_along, _as_tensor, _broadcast, _index_array, _no_grad, _same_dtype,
                                           _tensor_class)


def _check_range(name: str, idx, size: int, dim: int, negative: bool = False) -> None:
    """IndexError unless every index is in [0, size) (or [-size, size) where negatives count from the end)."""
    if idx.size == 0:
        return
    lo, hi = int(idx.min()), int(idx.max())
    if hi >= size or lo < (-size if negative else 0):
        raise IndexError(f"{name}(): index {hi if hi >= size else lo} is out of bounds for dimension {dim} "
                         f"with size {size}")


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


class SelectMethods:
    """torch.Tensor's selection by index or mask (index_select, take, nonzero, unique, ...) and writes (scatter,
    index_add, index_put, put, masked_scatter, and their in-place forms)."""

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
