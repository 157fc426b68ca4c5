"""`MoreOpsMethods`: the out-of-place Tensor methods of `MoreMethods` (tensor_more.py): tan and the inverse
hyperbolic functions, gcd/lcm, ldexp, frexp, nextafter, renorm, scatter_reduce and index_reduce, the *_scatter
ops, addr/addbmm, split_with_sizes, narrow_copy, histogram and the linear algebra torch keeps on Tensor
(matrix_exp, cholesky_solve, cholesky_inverse, triangular_solve).

Results take torch's dtypes and gradients: differentiable methods are a primitive of `ops/more.py` or a
composition of Tensor ops; gcd, lcm, frexp, nextafter and histogram carry no gradient (torch has none).

This module must not import `seqlab.autograd.tensor` when it loads (that module imports this one).
"""
from __future__ import annotations

import numpy as np

from seqlab import backend
from seqlab.autograd.ops import elementwise as E
from seqlab.autograd.ops import more as O
from seqlab.autograd.ops import scan as S
from seqlab.autograd.ops.reduce import normalize_dim
from seqlab.autograd.ops.scatter import IndexPut
from seqlab.autograd.tensor_common import _along, _as_tensor, _index_array, _no_grad, _tensor_class, return_type
from seqlab.autograd.torch_errors import ArgumentError, DtypeError, not_implemented

_result = return_type  # torch.return_types' named tuples


FrexpResult = _result("frexp", "mantissa exponent")
HistogramResult = _result("histogram", "hist bin_edges")
TriangularSolveResult = _result("triangular_solve", "solution cloned_coefficient")


def _float_only(t, name: str):
    if t.dtype.kind != "f":
        raise not_implemented(name, t.dtype, "floating-point")


class MoreOpsMethods:
    """torch.Tensor's tan/asinh/acosh/atanh, gcd/lcm, ldexp/frexp/nextafter, renorm, scatter_reduce and
    index_reduce, *_scatter, addr/addbmm, histogram and Tensor linear algebra."""

    __slots__ = ()

    # ---- element-wise ----------------------------------------------------------------------------------------------
    def tan(self):
        return O.Tan.apply(self._float_input())

    def asinh(self):
        return O.Asinh.apply(self._float_input())

    def acosh(self):
        return O.Acosh.apply(self._float_input())

    def atanh(self):
        return O.Atanh.apply(self._float_input())

    arcsinh, arccosh, arctanh = asinh, acosh, atanh

    def _integer_pair(self, other, name: str):
        a, b = self._promoted(other)
        if a.dtype.kind not in "iu":
            raise not_implemented(name, a.dtype, "integer")
        return backend.xp_of(a.data), a.data, getattr(b, "data", b)

    def gcd(self, other):
        """The greatest common divisor, element-wise (non-negative), of integer tensors."""
        xp, a, b = self._integer_pair(other, "gcd")
        return _no_grad(xp.asarray(xp.gcd(a, b)))

    def lcm(self, other):
        """The least common multiple, element-wise (non-negative), of integer tensors."""
        xp, a, b = self._integer_pair(other, "lcm")
        return _no_grad(xp.asarray(xp.lcm(a, b)))

    def ldexp(self, other):
        """self · 2^other; integer operands give the default float dtype (gradients for both, as torch's)."""
        a, b = self._float_operands(_as_tensor(other, self), "ldexp")
        return a * (2.0 ** b)

    def frexp(self):
        """(mantissa, exponent) with self = mantissa · 2^exponent, |mantissa| in [0.5, 1); exponent int32."""
        if self.dtype.kind != "f":
            raise DtypeError(f"frexp() only supports floating-point dtypes, got {self.dtype} (as torch)")
        xp = backend.xp_of(self.data)
        m, e = xp.frexp(self.data)
        return FrexpResult(_no_grad(xp.asarray(m)), _no_grad(xp.asarray(e).astype(np.int32)))

    def nextafter(self, other):
        """The next float after self toward other, element-wise (float tensors only)."""
        a, b = self._promoted(other)
        _float_only(a, "nextafter")
        xp = backend.xp_of(a.data)
        return _no_grad(xp.asarray(xp.nextafter(a.data, getattr(b, "data", b))).astype(a.dtype, copy=False))

    def renorm(self, p, dim: int, maxnorm):
        """Each slice along `dim` whose p-norm exceeds `maxnorm` scaled to norm `maxnorm` (by maxnorm / (norm +
        1e-7), as torch); gradients through the norm too."""
        from seqlab import linalg

        _float_only(self, "renorm")
        if p <= 0:
            raise ArgumentError(f"renorm: non-positive-norm not supported, got p={p}")
        if maxnorm < 0:
            raise ArgumentError(f"renorm: expected maxnorm to be >= 0 but got {maxnorm}")
        if self.ndim <= 1:
            raise ArgumentError(f"renorm: input needs at least 2 dimensions, got {self.ndim} dimensions")
        d = normalize_dim(dim, self.ndim)
        norm = linalg.vector_norm(self, ord=p, dim=tuple(i for i in range(self.ndim) if i != d), keepdim=True)
        factor = E.Where.apply(norm.data > maxnorm, maxnorm / (norm + 1e-7), self.dtype.type(1))
        return self * factor

    # ---- reductions into places ----------------------------------------------------------------------------------
    def _reduce_plan(self, name: str, reduce: str, allowed):
        if reduce not in allowed:
            raise ArgumentError(f"{name}(): reduce argument must be one of {', '.join(allowed)}, got {reduce!r}")

    def scatter_reduce(self, dim: int, index, src, reduce: str, *, include_self: bool = True):
        """self with each src[i, j, ...] reduced into place index[i, j, ...] along `dim` by "sum", "prod", "mean",
        "amax" or "amin" (with self's own value unless include_self=False); gradients as torch's."""
        reduce = {"max": "amax", "min": "amin"}.get(reduce, reduce)  # torch's older names, still taken
        self._reduce_plan("scatter_reduce", reduce, O.REDUCTIONS)
        if not isinstance(src, _tensor_class()):
            raise TypeError(f"scatter_reduce(): argument 'src' must be Tensor, not {type(src).__name__}")
        coords, values, _ = self._scatter_plan("scatter_reduce", dim, index, src, None, None)
        return O.ScatterReduce.apply(self, values, index=coords, reduce=reduce, include_self=include_self)

    def index_reduce(self, dim: int, index, source, reduce: str, *, include_self: bool = True):
        """self with each slice source[..., i, ...] along `dim` reduced into slice index[i] by "prod", "mean",
        "amax" or "amin" (with self's own values unless include_self=False)."""
        self._reduce_plan("index_reduce", reduce, ("prod", "mean", "amax", "amin"))
        source = _as_tensor(source, self)
        if source.dtype != self.dtype:
            raise DtypeError(f"index_reduce(): self ({self.dtype}) and source ({source.dtype}) must have the same "
                             f"dtype (as torch)")
        d = normalize_dim(dim, max(self.ndim, 1))
        idx = _index_array(self, "index_reduce", index)
        if idx.ndim > 1:
            raise ArgumentError(f"index_reduce(): index should be a vector, got shape {tuple(idx.shape)}")
        idx = idx.reshape(-1)
        src_shape, self_shape = source.shape or (1,), self.shape or (1,)
        if len(src_shape) != len(self_shape) or any(a != b for k, (a, b) in enumerate(zip(src_shape, self_shape))
                                                    if k != d):
            raise ArgumentError(f"index_reduce(): source {source.shape} must match self {self.shape} apart from "
                                f"dimension {d}")
        if src_shape[d] != idx.shape[0]:
            raise ArgumentError(f"index_reduce(): index has {idx.shape[0]} entries but source has {src_shape[d]} "
                                f"along dimension {d}")
        if idx.size and (int(idx.max()) >= self_shape[d] or int(idx.min()) < -self_shape[d]):
            raise IndexError(f"index_reduce(): index out of range for dimension {d} with size {self_shape[d]}")
        idx = idx % self_shape[d]
        xp = backend.xp_of(idx)
        coords = [S.positions(src_shape, k, xp) for k in range(len(src_shape))]
        coords[d] = idx.reshape((-1,) + (1,) * (len(src_shape) - d - 1))
        if self.ndim == 0:
            coords, source = [], source.reshape(())
        return O.ScatterReduce.apply(self, source, index=tuple(coords), reduce=reduce, include_self=include_self)

    # ---- writes of a whole region: self's copy with src there (gradients: src's from the region, self's
    # elsewhere) ---------------------------------------------------------------------------------------------------
    def _region_scatter(self, name: str, index: tuple, src):
        src = _as_tensor(src, self)._cast(self.dtype)  # as torch: src is copied in, cast to self's dtype
        want = tuple(backend.xp_of(self.data).empty(self.shape, dtype=np.int8)[index].shape)
        if src.shape != want:
            raise ArgumentError(f"{name}(): expected src to have a size equal to the slice of self: {want}, got "
                                f"{src.shape}")
        return IndexPut.apply(self, src, index=index)

    def slice_scatter(self, src, dim: int = 0, start=None, end=None, step: int = 1):
        """self with self[..., start:end:step, ...] (along `dim`) replaced by src."""
        if step <= 0:
            raise ArgumentError(f"slice_scatter(): slice step must be positive, got {step}")
        return self._region_scatter("slice_scatter", _along(normalize_dim(dim, self.ndim),
                                                            slice(start, end, step)), src)

    def select_scatter(self, src, dim: int, index: int):
        """self with self.select(dim, index) replaced by src."""
        d = normalize_dim(dim, self.ndim)
        n = self.shape[d]
        if not -n <= index < n:
            raise IndexError(f"select_scatter(): index {index} out of range for tensor of size {list(self.shape)} "
                             f"at dimension {dim}")
        return self._region_scatter("select_scatter", _along(d, int(index)), src)

    def diagonal_scatter(self, src, offset: int = 0, dim1: int = 0, dim2: int = 1):
        """self with self.diagonal(offset, dim1, dim2) replaced by src."""
        d1, d2 = normalize_dim(dim1, self.ndim), normalize_dim(dim2, self.ndim)
        if d1 == d2:
            raise ArgumentError(f"diagonal_scatter(): dim1 and dim2 cannot be the same dimension, got {dim1}")
        moved = self.movedim((d1, d2), (-2, -1))  # (..., n1, n2)
        n1, n2 = moved.shape[-2:]
        length = max(0, min(n1 + min(offset, 0), n2 - max(offset, 0)))
        pos = np.arange(length)
        index = (Ellipsis, pos - min(offset, 0), pos + max(offset, 0))
        out = moved._region_scatter("diagonal_scatter", index, src)
        return out.movedim((-2, -1), (d1, d2))

    # ---- products added to self --------------------------------------------------------------------------------
    def addr(self, vec1, vec2, *, beta=1, alpha=1):
        """beta · self + alpha · outer(vec1, vec2)."""
        vec1, vec2 = _as_tensor(vec1, self), _as_tensor(vec2, self)
        if vec1.ndim != 1 or vec2.ndim != 1:
            raise ArgumentError(f"addr(): vec1 and vec2 must be 1-D, got {vec1.ndim}-D and {vec2.ndim}-D")
        return self._add_product("addr", vec1.outer(vec2), beta, alpha)

    def addbmm(self, batch1, batch2, *, beta=1, alpha=1):
        """beta · self + alpha · Σ_b batch1[b] @ batch2[b] for (b, n, k) and (b, k, m)."""
        batch1, batch2 = _as_tensor(batch1, self), _as_tensor(batch2, self)
        if batch1.ndim != 3 or batch2.ndim != 3:
            raise ArgumentError(f"addbmm(): batch1 and batch2 must be 3-D, got shapes {batch1.shape} and "
                                f"{batch2.shape}")
        return self._add_product("addbmm", batch1.bmm(batch2).sum(0), beta, alpha)

    # ---- shapes ------------------------------------------------------------------------------------------------
    def split_with_sizes(self, split_sizes, dim: int = 0):
        return self.split(list(split_sizes), dim)

    unsafe_split_with_sizes = split_with_sizes

    def unsafe_split(self, split_size, dim: int = 0):
        return self.split(split_size, dim)

    def unsafe_chunk(self, chunks: int, dim: int = 0):
        return self.chunk(chunks, dim)

    def narrow_copy(self, dim: int, start, length: int):
        return self.narrow(dim, start, length).clone()

    # ---- histogram -------------------------------------------------------------------------------------------
    def histogram(self, bins=100, *, range=None, weight=None, density: bool = False):  # noqa: A002 (torch's)
        """(hist, bin_edges) of self's values: `bins` equal bins over `range` (min and max by default) or the
        edges in a 1-D tensor; each value counts 1 (or its `weight`); `density` divides by the total times the
        bin width. Float tensors only; hist and edges in self's dtype."""
        if self.dtype.kind != "f":
            raise not_implemented("histogram", self.dtype, "floating-point")
        x = backend.to_numpy(self.data).ravel()
        if isinstance(bins, _tensor_class()):
            if bins.ndim != 1 or bins.numel() < 1:
                raise ArgumentError(f"histogram(): bins must be a 1-D tensor with at least one edge, got shape "
                                    f"{bins.shape}")
            edges = backend.to_numpy(bins.data).astype(np.float64)
        else:
            if int(bins) <= 0:
                raise ArgumentError(f"histogram(): bins must be > 0, but got {bins}")
            lo, hi = (float(x.min()), float(x.max())) if range is None and x.size else range or (0.0, 0.0)
            if lo > hi:
                raise ArgumentError(f"histogram(): max must be larger than min, got range ({lo}, {hi})")
            if lo == hi:
                lo, hi = lo - 0.5, hi + 0.5  # as torch (and NumPy) with a single value
            edges = np.linspace(lo, hi, int(bins) + 1, dtype=self.dtype).astype(np.float64)
        w = None if weight is None else backend.to_numpy(_as_tensor(weight, self).data).ravel()
        hist, _ = np.histogram(x.astype(np.float64), edges, weights=w, density=density)
        xp = backend.xp_of(self.data)
        to = lambda a: _no_grad(backend.to_device(xp.asarray(a).astype(self.dtype), self.device))  # noqa: E731
        return HistogramResult(to(hist), to(edges))

    # ---- linear algebra: through seqlab.linalg ---------------------------------------------------------------
    def matrix_exp(self):
        from seqlab import linalg

        return linalg.matrix_exp(self)

    def cholesky_solve(self, input2, upper: bool = False):
        """X with A X = self, A = L Lᵀ given its Cholesky factor L = input2 (or A = Uᵀ U with upper)."""
        from seqlab import linalg

        L = _as_tensor(input2, self)
        A = L.mT @ L if upper else L @ L.mT
        return linalg.solve(A, self)

    def cholesky_inverse(self, upper: bool = False):
        """A⁻¹ for A = L Lᵀ, self being L (or A = Uᵀ U with upper)."""
        from seqlab import linalg

        A = self.mT @ self if upper else self @ self.mT
        return linalg.inv(A)

    def triangular_solve(self, A, upper: bool = True, transpose: bool = False, unitriangular: bool = False):
        """(X, A's clone) with T X = self, T the upper (or lower) triangle of A, its diagonal taken as ones with
        unitriangular, transposed with transpose. A's gradient is triangular, as torch's."""
        from seqlab import linalg

        A = _as_tensor(A, self)
        T = A.triu() if upper else A.tril()
        if unitriangular:
            T = T.triu(1) if upper else T.tril(-1)
            eye = backend.xp_of(T.data).eye(T.shape[-1], dtype=T.dtype)
            T = T + eye
        if transpose:
            T = T.mT
        return TriangularSolveResult(linalg.solve(T, self), A.clone())
