"""`ShapeMethods`: torch's shape methods beyond the core ones of tensor.py (reshape, permute, transpose,
expand, indexing, split, chunk), as a mixin of `Tensor` (a base of `IndexingMethods`, tensor_indexing.py): roll,
fliplr/flipud, flip, tile, repeat, repeat_interleave, narrow, select, unbind, unflatten, reshape_as, movedim,
sum_to_size, unfold, ravel, hsplit/vsplit/dsplit, broadcast_to, mT/mH/adjoint.

Each is a composition of differentiable ops Tensor already has (indexing, cat/stack, reshape, expand), so it needs
no backward: `x.roll(1)` is two slices joined, `x.unfold` a stack of strided slices.

The methods that were Tensor's own (unbind, flip, repeat, repeat_interleave) name `Tensor` and `_arr` as globals,
as they did in tensor.py; that module binds those names here once it has defined them (it imports this module
first, for Tensor's bases, so this one cannot import it).
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from seqlab import backend
from seqlab.autograd.ops.reduce import normalize_dim
from seqlab.autograd.tensor_common import _along, _no_grad

Tensor = _arr = None  # bound by seqlab.autograd.tensor (see above)


def _size_args(size: tuple) -> tuple:
    """A shape given as `f(2, 3)` or `f((2, 3))`."""
    return tuple(size[0]) if len(size) == 1 and isinstance(size[0], (tuple, list)) else tuple(size)


class ShapeMethods:
    """torch.Tensor's shape methods beyond the core ones: roll, flip, tile, repeat, narrow, select, unbind,
    unflatten, movedim, unfold, ..."""

    __slots__ = ()

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

    def unbind(self, dim: int = 0):
        """The slices along `dim`, that dim removed (as torch.unbind)."""
        if self.ndim == 0:
            raise ValueError("unbind() needs at least a 1-dimensional tensor")
        d = normalize_dim(dim, self.ndim)
        return tuple(self[(slice(None),) * d + (i,)] for i in range(self.shape[d]))

    def flip(self, dims):
        dims = (dims,) if isinstance(dims, int) else tuple(dims)
        norm = [normalize_dim(d, self.ndim) for d in dims]
        if len(set(norm)) != len(norm):
            raise ValueError(f"flip: dims {dims} name a dim more than once")
        if self.ndim == 0:
            return self.clone()
        index = [slice(None)] * self.ndim
        for d in norm:
            index[d] = slice(None, None, -1)
        return self[tuple(index)].clone()  # torch's flip copies (the reversed slice alone is a view)

    def repeat(self, *sizes):
        """Tile the tensor `sizes[i]` times along dim i (as torch.repeat; new leading dims allowed)."""
        sizes = tuple(sizes[0]) if len(sizes) == 1 and isinstance(sizes[0], (tuple, list)) else sizes
        if len(sizes) < self.ndim:
            raise ValueError(f"repeat needs at least {self.ndim} sizes for shape {self.shape}, got {sizes}")
        shape = (1,) * (len(sizes) - self.ndim) + self.shape
        inter, target = [], []
        for r, s in zip(sizes, shape):
            inter += [1, s]
            target += [r, s]
        out = self.reshape(inter).expand(*target)  # (r0, s0, r1, s1, ...)
        out = out.reshape(tuple(r * s for r, s in zip(sizes, shape)))
        if all(r == 1 for r in sizes) or any(st == 0 and n > 1 for st, n in zip(out.data.strides, out.shape)):
            out = out.clone()  # the reshape needed no copy, so it is a view of this tensor: torch's repeat copies
        return out

    def repeat_interleave(self, repeats, dim=None, *, output_size=None) -> "Tensor":
        """Each element (or slice along `dim`) `repeats` times in a row: an int, or a 1-D integer tensor of
        one count per slice (or one for all). Without `dim` the tensor is flattened first (as torch). Picked
        by an integer index, so the gradient of the copies adds up."""
        x = self.reshape(-1) if dim is None or self.ndim == 0 else self
        d = normalize_dim(0 if dim is None else dim, x.ndim)
        n = x.shape[d]
        if isinstance(repeats, (bool, np.bool_)) or not isinstance(repeats, (int, np.integer, Tensor, np.ndarray)):
            raise TypeError(f"repeat_interleave(): repeats must be an int or an integer tensor, "
                            f"got {type(repeats).__name__}")
        counts = backend.to_numpy(_arr(repeats)) if not isinstance(repeats, (int, np.integer)) else np.asarray(repeats)
        if counts.dtype.kind not in "iu":
            raise TypeError(f"repeat_interleave(): repeats must hold integers, got dtype {counts.dtype}")
        if counts.ndim > 1:
            raise ValueError(f"repeat_interleave(): repeats must be 0-dim or 1-dim, got shape {counts.shape}")
        if counts.size == 1:
            counts = np.full(n, counts.reshape(()), dtype=np.int64)
        if counts.shape[0] != n:
            raise ValueError(f"repeat_interleave(): repeats has {counts.shape[0]} counts but the input has "
                             f"{n} slices along dim {d} (shape {x.shape})")
        if (counts < 0).any():
            raise ValueError("repeat_interleave(): repeats must be non-negative")
        idx = np.repeat(np.arange(n, dtype=np.int64), counts)
        if output_size is not None and output_size != idx.size:
            raise ValueError(f"repeat_interleave(): output_size={output_size} but the repeats make {idx.size}")
        return x[(slice(None),) * d + (idx,)]  # (..., Σ repeats, ...)

    def ravel(self) -> Any:
        """The elements as a 1-D tensor: a view when the layout allows, else a copy (`reshape(-1)`, as torch's)."""
        return self.reshape(-1)

    def _split_at(self, name: str, dim: int, least: int, indices_or_sections) -> tuple:
        """hsplit/vsplit/dsplit: `tensor_split` along `dim`, where sections (an int) must divide the dim."""
        if self.ndim < least:
            raise ValueError(f"{name} requires a tensor with at least {least} dimension, but got a tensor with "
                             f"{self.ndim} dimensions")
        if isinstance(indices_or_sections, (int, np.integer)):
            n = self.shape[dim]
            if indices_or_sections == 0 or n % indices_or_sections:
                raise ValueError(f"{name} attempted to split along dimension {dim}, but the size of the dimension "
                                 f"{n} is not divisible by the split_size {indices_or_sections}")
        return self.tensor_split(indices_or_sections, dim)

    def hsplit(self, indices_or_sections) -> tuple:
        """Pieces along dim 1 (dim 0 of a 1-D tensor): `tensor_split`, with sections that divide the dim."""
        return self._split_at("hsplit", 0 if self.ndim == 1 else 1, 1, indices_or_sections)

    def vsplit(self, indices_or_sections) -> tuple:
        """Pieces along dim 0 of a tensor of at least 2 dims."""
        return self._split_at("vsplit", 0, 2, indices_or_sections)

    def dsplit(self, indices_or_sections) -> tuple:
        """Pieces along dim 2 of a tensor of at least 3 dims."""
        return self._split_at("dsplit", 2, 3, indices_or_sections)

    def broadcast_to(self, shape) -> Any:
        """`seqlab.broadcast_to(self, shape)`: a view (-1 keeps a dim)."""
        from seqlab.autograd.tensor_indexing import broadcast_to

        return broadcast_to(self, shape)

    def adjoint(self) -> Any:
        """The last two dims swapped: `mT` (the conjugate too, which real tensors do not need)."""
        return self.mT

    @property
    def mH(self):  # noqa: N802 (torch's name)
        """`mT`: real tensors are their own conjugates."""
        return self.mT

    @property
    def mT(self):  # noqa: N802 (torch's name)
        """The last two dims swapped (a batch of matrices transposed)."""
        if self.ndim < 2:
            raise RuntimeError(f"tensor.mT is only supported on matrices or batches of matrices. "
                               f"Got {self.ndim}-D tensor.")
        return self.transpose(-2, -1)
