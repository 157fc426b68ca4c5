"""`LinalgMethods`: diagonals, triangles and products of vectors and matrices, as torch's, as a mixin of
`Tensor` (a base of `IndexingMethods`, tensor_indexing.py): diagonal, diag, diag_embed, trace, tril, triu;
outer/ger, dot/vdot, mv, addmm, addmv, baddbmm, cross, kron. The matrix products themselves (matmul, `@`, mm, bmm)
are Tensor's own (tensor.py).

Compositions of differentiable ops (integer indexing, reshapes, masks, `@`), except diagonal, a view as torch's
(`ops/movement.Diagonal`), and diag_embed, which writes into zeros (`ops/scatter.IndexPut`).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from seqlab import backend
from seqlab.autograd.ops import elementwise as E
from seqlab.autograd.ops.movement import Diagonal
from seqlab.autograd.ops.reduce import normalize_dim
from seqlab.autograd.ops.scatter import IndexPut
from seqlab.autograd.tensor_common import _as_tensor, _broadcast, _no_grad, _same_dtype

if TYPE_CHECKING:  # tril/triu's annotations
    from seqlab.autograd.tensor import Tensor


def _diag_index(rows: int, cols: int, offset: int, xp):
    """(row, col) int64 arrays of the `offset`-th diagonal of a rows × cols matrix (above: offset > 0)."""
    if offset >= 0:
        n = max(min(rows, cols - offset), 0)
        r = xp.arange(n, dtype=np.int64)
        return r, r + offset
    n = max(min(rows + offset, cols), 0)
    c = xp.arange(n, dtype=np.int64)
    return c - offset, c


class LinalgMethods:
    """torch.Tensor's diagonals (diagonal, diag, trace), triangles (tril, triu) and vector and matrix products
    (outer, dot, mv, addmm, baddbmm, cross, kron)."""

    __slots__ = ()

    # ---- diagonals and triangles ----------------------------------------------------------------------------
    def diagonal(self, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Any:
        """The `offset`-th diagonal of the (dim1, dim2) planes, as a last dim; those two dims removed. A view, as
        torch's: `x.diagonal().fill_(0)` (under no_grad, or on a tensor outside a graph) zeroes x's diagonal."""
        if self.ndim < 2:
            raise ValueError(f"diagonal(): needs at least 2 dims, got shape {self.shape}")
        d1, d2 = normalize_dim(dim1, self.ndim), normalize_dim(dim2, self.ndim)
        if d1 == d2:
            raise ValueError(f"diagonal(): diagonal dimensions cannot be identical {dim1}, {dim2}")
        return Diagonal.apply(self, offset=int(offset), dim1=d1, dim2=d2)  # (..., L)

    def diag(self, diagonal: int = 0) -> Any:
        """A 1-D tensor: the square matrix with it on the `diagonal`-th diagonal. A matrix: that diagonal, as a
        new tensor (torch's diag copies; `diagonal` is the view)."""
        if self.ndim == 2:
            return self.diagonal(diagonal).clone()
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

    def tril(self, diagonal: int = 0) -> "Tensor":
        """Zero above the `diagonal`-th diagonal of the last two dims."""
        xp = backend.xp_of(self.data)
        keep = xp.tril(xp.ones(self.shape[-2:], dtype=bool), k=diagonal)
        return E.MaskedFill.apply(self, ~keep, 0)

    def triu(self, diagonal: int = 0) -> "Tensor":
        xp = backend.xp_of(self.data)
        keep = xp.triu(xp.ones(self.shape[-2:], dtype=bool), k=diagonal)
        return E.MaskedFill.apply(self, ~keep, 0)

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
