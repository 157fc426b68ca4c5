"""Ops that move or select elements: reshape, permute, expand, index, cat, stack.

Each `backward_graph` is its `backward` written with Tensor ops, for create_graph=True (higher_order.py):
the gradient of a selection is a write into zeros (`scatter.IndexPut`), whose own gradient selects again.
"""
from __future__ import annotations

import numpy as np

from seqlab.autograd.function import Function, IndexGrad
from seqlab.autograd.ops.scatter import IndexPut
from seqlab.backend import xp_of


class Reshape(Function):
    def forward(self, a, shape):
        self.shape = a.shape
        return a.reshape(shape)

    def backward(self, grad):
        return (grad.reshape(self.shape),)

    def backward_graph(self, g):
        return (Reshape.apply(g, shape=self.shape),)


class Permute(Function):
    def forward(self, a, dims):
        self.dims = dims
        return a.transpose(dims)

    def backward(self, grad):
        return (grad.transpose(_inverse(self.dims)),)

    def backward_graph(self, g):
        return (Permute.apply(g, dims=_inverse(self.dims)),)


def _inverse(dims) -> tuple:
    """The permutation that undoes `dims` (np.argsort's, in plain Python: after a large product has
    pushed the interpreter out of the caches, NumPy's call took ~40 us in gpt-train's step, this ~8)."""
    return tuple(sorted(range(len(dims)), key=dims.__getitem__))


class Diagonal(Function):
    """a.diagonal(offset, dim1, dim2): a view, as torch's (writing into it writes into `a`); the diagonal is the
    last dim. Its gradient is `DiagonalScatter`: the incoming gradient on that diagonal of zeros."""

    def forward(self, a, offset, dim1, dim2):
        self.shape, self.where = a.shape, (offset, dim1, dim2)
        return _writable_diagonal(a, offset, dim1, dim2)

    def backward(self, grad):
        return (_onto_diagonal(grad, self.shape, *self.where),)

    def backward_graph(self, g):
        return (DiagonalScatter.apply(g, shape=self.shape, offset=self.where[0], dim1=self.where[1],
                                      dim2=self.where[2]),)


class DiagonalScatter(Function):
    """zeros(shape) with `g` on its (offset, dim1, dim2) diagonal: `Diagonal`'s gradient, and the other way round."""

    def forward(self, g, shape, offset, dim1, dim2):
        self.where = (offset, dim1, dim2)
        return _onto_diagonal(g, shape, offset, dim1, dim2)

    def backward(self, grad):
        return (xp_of(grad).diagonal(grad, *self.where).copy(),)

    def backward_graph(self, g):
        return (Diagonal.apply(g, offset=self.where[0], dim1=self.where[1], dim2=self.where[2]),)


def _onto_diagonal(g, shape, offset, dim1, dim2):
    out = xp_of(g).zeros(shape, dtype=g.dtype)
    _writable_diagonal(out, offset, dim1, dim2)[...] = g
    return out


def _writable_diagonal(a, offset, dim1, dim2):
    """The diagonal view of `a`; NumPy's is read-only (its documented plan is to make it writable), so it is made
    writable where `a` is."""
    view = xp_of(a).diagonal(a, offset, dim1, dim2)
    if isinstance(view, np.ndarray) and not view.flags.writeable and a.flags.writeable:
        view.flags.writeable = True
    return view


class Expand(Function):
    """A broadcast view; the engine's unbroadcast sums the gradient back."""

    def forward(self, a, shape):
        return xp_of(a).broadcast_to(a, shape)

    def backward(self, grad):
        return (grad,)

    def backward_graph(self, g):
        return (g,)  # the engine sums the broadcast dims back (unbroadcast_graph)


def _is_basic(index) -> bool:
    """True when `index` only slices (no integer arrays): no element is picked twice."""
    items = index if isinstance(index, tuple) else (index,)
    return all(i is None or i is Ellipsis or isinstance(i, (int, slice, np.integer)) for i in items)


class GetItem(Function):
    """a[index]; integer-array indices scatter-add their gradient (repeats accumulate).

    The gradient is handed to the engine as an `IndexGrad` (values + index),
    which adds it into the input's gradient buffer in place.
    """

    def forward(self, a, index):
        self.shape, self.index = a.shape, index
        out = a[index]
        if isinstance(out, np.generic):  # one element: NumPy hands a copy, torch a 0-d view (`x[0, 1].fill_(5)`)
            out = a[(index if isinstance(index, tuple) else (index,)) + (Ellipsis,)]
        return out

    def backward(self, grad):
        return (IndexGrad(self.shape, self.index, grad, _is_basic(self.index)),)

    def backward_graph(self, g):
        zeros = xp_of(g.data).zeros(self.shape, dtype=g.dtype)
        return (IndexPut.apply(zeros, g, index=self.index, mode=None if _is_basic(self.index) else "add"),)


class Cat(Function):
    def forward(self, *arrays, dim=0):
        self.dim = dim
        self.sizes = [a.shape[dim] for a in arrays]
        return xp_of(arrays[0]).concatenate(arrays, axis=dim)

    def backward(self, grad):
        splits = np.cumsum(self.sizes)[:-1].tolist()  # a list: CuPy takes no NumPy array here
        return tuple(xp_of(grad).split(grad, splits, axis=self.dim))

    def backward_graph(self, g):
        lead, start, pieces = (slice(None),) * (self.dim % g.ndim), 0, []
        for n in self.sizes:
            pieces.append(GetItem.apply(g, index=lead + (slice(start, start + n),)))
            start += n
        return tuple(pieces)


class Stack(Function):
    def forward(self, *arrays, dim=0):
        self.dim = dim
        return xp_of(arrays[0]).stack(arrays, axis=dim)

    def backward(self, grad):
        xp = xp_of(grad)
        return tuple(xp.take(grad, i, axis=self.dim) for i in range(grad.shape[self.dim]))

    def backward_graph(self, g):
        lead = (slice(None),) * (self.dim % g.ndim)
        return tuple(GetItem.apply(g, index=lead + (i,)) for i in range(g.shape[self.dim]))


class Gather(Function):
    """out[i][j][k] = a[i][index[i][j][k]][k] along `dim` (torch.gather); repeats scatter-add back."""

    def forward(self, a, index, dim):
        self.shape, self.index, self.dim = a.shape, index, dim
        # torch lets index be smaller than `a` off `dim`; NumPy wants them to match: crop `a`
        crop = tuple(slice(None) if d == dim else slice(0, n) for d, n in enumerate(index.shape))
        return xp_of(a).take_along_axis(a[crop], index, axis=dim)

    def backward(self, grad):
        xp = xp_of(grad)
        # full coordinates: `index` along dim, the position itself along every other axis
        nd = self.index.ndim  # an open mesh, as np.indices(sparse=True) (which CuPy's indices lacks)
        coords = [xp.arange(n).reshape((1,) * d + (n,) + (1,) * (nd - d - 1)) for d, n in enumerate(self.index.shape)]
        coords[self.dim] = self.index
        return IndexGrad(self.shape, tuple(coords), grad, basic=False), None

    def backward_graph(self, g):
        xp = xp_of(g.data)
        nd = self.index.ndim
        coords = [xp.arange(n).reshape((1,) * d + (n,) + (1,) * (nd - d - 1)) for d, n in enumerate(self.index.shape)]
        coords[self.dim] = self.index
        return IndexPut.apply(xp.zeros(self.shape, dtype=g.dtype), g, index=tuple(coords), mode="add"), None
