"""Ops that move or select elements: reshape, permute, expand, index, cat, stack."""
from __future__ import annotations

import numpy as np

from seqlab.autograd.function import Function
from seqlab.backend import xp_of


class Reshape(Function):
    def forward(self, a, shape):
        self.shape = a.shape
        return a.reshape(shape)

    def backward(self, grad):
        return (grad.reshape(self.shape),)


class Permute(Function):
    def forward(self, a, dims):
        self.dims = dims
        return a.transpose(dims)

    def backward(self, grad):
        inverse = tuple(int(i) for i in np.argsort(self.dims))
        return (grad.transpose(inverse),)


class Expand(Function):
    """A broadcast view; the engine's unbroadcast sums the gradient back."""

    def forward(self, a, shape):
        return xp_of(a).broadcast_to(a, shape)

    def backward(self, grad):
        return (grad,)


def _is_basic(index) -> bool:
    """True when `index` only slices (no integer arrays): no element is picked twice."""
    items = index if isinstance(index, tuple) else (index,)
    return all(i is None or i is Ellipsis or isinstance(i, (int, slice, np.integer)) for i in items)


class GetItem(Function):
    """a[index]; integer-array indices scatter-add their gradient (repeats accumulate)."""

    def forward(self, a, index):
        self.shape, self.dtype, self.index = a.shape, a.dtype, index
        return a[index]

    def backward(self, grad):
        xp = xp_of(grad)
        out = xp.zeros(self.shape, dtype=grad.dtype)
        if _is_basic(self.index):
            out[self.index] = grad
        elif xp is np:
            np.add.at(out, self.index, grad)
        else:  # pragma: no cover - CuPy spells it differently
            xp.add.at(out, self.index, grad)
        return (out,)


class Cat(Function):
    def forward(self, *arrays, dim=0):
        self.dim = dim
        self.sizes = [a.shape[dim] for a in arrays]
        return xp_of(arrays[0]).concatenate(arrays, axis=dim)

    def backward(self, grad):
        splits = np.cumsum(self.sizes)[:-1]
        return tuple(xp_of(grad).split(grad, splits, axis=self.dim))


class Stack(Function):
    def forward(self, *arrays, dim=0):
        self.dim = dim
        return xp_of(arrays[0]).stack(arrays, axis=dim)

    def backward(self, grad):
        xp = xp_of(grad)
        return tuple(xp.take(grad, i, axis=self.dim) for i in range(grad.shape[self.dim]))
