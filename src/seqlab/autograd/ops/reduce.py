"""Reductions. `dim` may be None (all), an int or a tuple, as in torch.

Each `backward_graph` is its `backward` written with Tensor ops, for create_graph=True (higher_order.py).
"""
from __future__ import annotations

import numpy as np

from seqlab.autograd.function import Function
from seqlab.autograd.higher_order import constant, graph_input
from seqlab.autograd.ops.movement import Cat, Expand, GetItem, Reshape
from seqlab.autograd.ops.scan import CumProd, _along
from seqlab.backend import xp_of


def normalize_dim(dim, ndim: int, extra: int = 0) -> int:
    """`dim` as a position in 0..ndim-1+extra (negative counts from the end), else IndexError as torch's.

    `extra=1` for ops that insert a dim (unsqueeze, stack): ndim + 1 places. A 0-d tensor takes dim 0
    or -1, as torch (a scalar counts as one dim there).
    """
    n = max(ndim + extra, 1)
    if not -n <= dim < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {dim}): "
                         f"dim {dim} is out of range for a tensor with {ndim} dimension{'s' if ndim != 1 else ''}")
    return dim % n


def normalize_dims(dim, ndim: int) -> tuple:
    """`dim` (None: all, an int or a sequence) as sorted non-negative positions; () for a 0-d tensor."""
    if dim is None:
        return tuple(range(ndim))
    dims = (dim,) if isinstance(dim, int) else tuple(dim)
    out = {normalize_dim(d, ndim) for d in dims}
    return tuple(sorted(out)) if ndim else ()


def _expand_back(grad, shape, dims, keepdim):
    """Reshape a reduced gradient so it broadcasts against the input `shape`."""
    if not keepdim:
        kept = list(grad.shape)
        for d in dims:
            kept.insert(d, 1)
        grad = grad.reshape(kept)
    return grad


def _expand_back_graph(g, dims, keepdim):
    """`_expand_back` on a Tensor: the reduced gradient with its reduced dims put back as 1s."""
    if keepdim:
        return g
    kept = list(g.shape)
    for d in dims:
        kept.insert(d, 1)
    return Reshape.apply(g, shape=tuple(kept))


class Sum(Function):
    def forward(self, a, dim=None, keepdim=False):
        self.shape, self.dims, self.keepdim = a.shape, normalize_dims(dim, a.ndim), keepdim
        return a.sum(axis=self.dims, keepdims=keepdim)

    def backward(self, grad):
        g = _expand_back(grad, self.shape, self.dims, self.keepdim)
        return (xp_of(g).broadcast_to(g, self.shape),)

    def backward_graph(self, g):
        return (Expand.apply(_expand_back_graph(g, self.dims, self.keepdim), shape=self.shape),)


class Mean(Function):
    def forward(self, a, dim=None, keepdim=False):
        self.shape, self.dims, self.keepdim = a.shape, normalize_dims(dim, a.ndim), keepdim
        self.count = 1
        for d in self.dims:
            self.count *= a.shape[d]
        return a.mean(axis=self.dims, keepdims=keepdim)

    def backward(self, grad):
        g = _expand_back(grad, self.shape, self.dims, self.keepdim) / self.count
        return (xp_of(g).broadcast_to(g, self.shape),)

    def backward_graph(self, g):
        return (Expand.apply(_expand_back_graph(g, self.dims, self.keepdim) / self.count, shape=self.shape),)


class Var(Function):
    """Variance with Bessel's correction `correction` (torch's default 1)."""

    def forward(self, a, dim=None, keepdim=False, correction=1):
        self.shape, self.dims, self.keepdim = a.shape, normalize_dims(dim, a.ndim), keepdim
        n = 1
        for d in self.dims:
            n *= a.shape[d]
        self.denom = max(n - correction, 0)
        self.centered = a - a.mean(axis=self.dims, keepdims=True)
        return (self.centered ** 2).sum(axis=self.dims, keepdims=keepdim) / self.denom

    def backward(self, grad):
        g = _expand_back(grad, self.shape, self.dims, self.keepdim)
        return (g * self._two_over_denom() * self.centered,)

    def backward_graph(self, g):
        # the variance does not change when x shifts: the centered input stands in for x (same graph, x's
        # creator), and centering it again gives the centered values with their dependence on x
        x = graph_input(self, 0, self.centered)
        centered = x - x.mean(self.dims, keepdim=True)
        return (_expand_back_graph(g, self.dims, self.keepdim) * self._two_over_denom() * centered,)

    def _two_over_denom(self) -> float:
        """2 / (N − correction); inf when that is 0 (one element, correction 1), so the gradient is NaN as torch's
        (and the variance itself, NaN) rather than a ZeroDivisionError."""
        return 2.0 / self.denom if self.denom else float("inf")


class Max(Function):
    """Max over `dim`; the gradient goes to the maximal entries (split equally on ties,
    as torch's amax; torch.max(dim) picks one index — equal when there are no ties)."""

    def forward(self, a, dim=None, keepdim=False, use_min=False):
        self.shape, self.dims, self.keepdim = a.shape, normalize_dims(dim, a.ndim), keepdim
        out = a.min(axis=self.dims, keepdims=True) if use_min else a.max(axis=self.dims, keepdims=True)
        mask = a == out
        self.mask = mask / mask.sum(axis=self.dims, keepdims=True)
        return out if keepdim else out.reshape([s for i, s in enumerate(a.shape) if i not in self.dims])

    def backward(self, grad):
        g = _expand_back(grad, self.shape, self.dims, self.keepdim)
        return (g * self.mask,)

    def backward_graph(self, g):
        return (_expand_back_graph(g, self.dims, self.keepdim) * constant(self.mask.astype(g.dtype)),)


class MaxDim(Function):
    """Max (or min) along one `dim` with its index, as torch.max(x, dim): the whole
    gradient goes to the returned index (the first maximum), not split over ties."""

    def forward(self, a, dim, keepdim=False, use_min=False):
        xp = xp_of(a)
        self.shape, self.dim = a.shape, dim % a.ndim
        idx = xp.expand_dims(a.argmin(axis=self.dim) if use_min else a.argmax(axis=self.dim), self.dim)
        self.idx = idx
        out = xp.take_along_axis(a, idx, axis=self.dim)  # keepdim shape
        return out if keepdim else out.squeeze(self.dim)

    def backward(self, grad):
        xp = xp_of(grad)
        g = grad if grad.ndim == len(self.shape) else xp.expand_dims(grad, self.dim)
        out = xp.zeros(self.shape, dtype=grad.dtype)
        xp.put_along_axis(out, self.idx, g, axis=self.dim)
        return (out,)

    def backward_graph(self, g):
        xp = xp_of(g.data)
        onehot = xp.zeros(self.shape, dtype=g.dtype)  # 1 at the returned index
        xp.put_along_axis(onehot, self.idx, g.dtype.type(1), axis=self.dim)
        return (_expand_back_graph(g, (self.dim,), g.ndim == len(self.shape)) * constant(onehot),)


class CumSum(Function):
    """Running sum along `dim` (as torch.cumsum: bool and integer inputs sum in int64); the gradient is the
    running sum of the gradient taken from the far end."""

    def forward(self, a, dim):
        self.dim = dim
        return xp_of(a).cumsum(a, axis=dim, dtype=np.int64 if a.dtype.kind in "biu" else a.dtype)

    def backward(self, grad):
        xp = xp_of(grad)
        return (xp.flip(xp.cumsum(xp.flip(grad, self.dim), axis=self.dim), self.dim),)

    def backward_graph(self, g):
        flip = (slice(None),) * (self.dim % g.ndim) + (slice(None, None, -1),)
        return (GetItem.apply(CumSum.apply(GetItem.apply(g, index=flip), dim=self.dim), index=flip),)


class Prod(Function):
    """Product along `dim` (int inputs multiply in int64, as torch.prod). The gradient of x_i is the product
    of the others, taken as (product of those before i) × (product of those after i), so a zero among the
    inputs gives the right gradient instead of a division by it."""

    def forward(self, a, dim, keepdim=False):
        self.a, self.dim, self.keepdim = a, dim, keepdim
        return xp_of(a).prod(a, axis=dim, keepdims=keepdim, dtype=np.int64 if a.dtype.kind in "biu" else a.dtype)

    def backward(self, grad):
        a, d = self.a, self.dim
        xp = xp_of(a)
        one = xp.ones_like(xp.take(a, [0], axis=d))
        before = xp.cumprod(xp.concatenate([one, xp.take(a, xp.arange(a.shape[d] - 1), axis=d)], axis=d), axis=d)
        after = xp.flip(xp.cumprod(xp.flip(xp.concatenate([xp.take(a, xp.arange(1, a.shape[d]), axis=d), one],
                                                          axis=d), d), axis=d), d)
        g = grad if self.keepdim else xp.expand_dims(grad, d)
        return (g * before * after,)

    def backward_graph(self, g):
        """before × after with Tensor ops: x's running products from either end, shifted by one (CumProd,
        whose own backward_graph is exact through zeros)."""
        a = self.a
        d = self.dim % a.ndim
        x = graph_input(self, 0, a)
        one = constant(xp_of(a).ones(a.shape[:d] + (1,) + a.shape[d + 1:], dtype=a.dtype))
        n, flip = a.shape[d], _along(d, a.ndim, slice(None, None, -1))
        before = CumProd.apply(Cat.apply(one, GetItem.apply(x, index=_along(d, a.ndim, slice(0, n - 1))), dim=d), dim=d)
        after = Cat.apply(GetItem.apply(x, index=_along(d, a.ndim, slice(1, n))), one, dim=d)
        after = GetItem.apply(CumProd.apply(GetItem.apply(after, index=flip), dim=d), index=flip)
        g = g if self.keepdim else Reshape.apply(g, shape=a.shape[:d] + (1,) + a.shape[d + 1:])
        return (g * before * after,)
