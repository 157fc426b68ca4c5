"""`ExtraStatsMethods`: torch's inner, diagflat, rot90, dist, cov, corrcoef, quantile/nanquantile,
unique_consecutive and is_nonzero on `Tensor`, as a mixin (a base of `tensor_extra.ExtraMethods`).

All compose Tensor ops (tensordot, diag, flip/transpose, norm, matmul, gather, where), so their gradients are
torch's without a backward of their own; unique_consecutive and is_nonzero give no gradient (torch has none).
Errors are `torch_errors`' classes (seqlab's TypeError/ValueError and torch's RuntimeError at once).

This module must not import `seqlab.autograd.tensor` when it loads (that module imports this one).
"""
from __future__ import annotations

import math
import warnings

import numpy as np

from seqlab import backend
from seqlab.autograd.ops import elementwise as E
from seqlab.autograd.ops.reduce import normalize_dim
from seqlab.autograd.tensor_common import _SCALARS, _no_grad, _tensor_class
from seqlab.autograd.torch_errors import ArgumentError, DtypeError, must_be_tensor, not_implemented

_INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


def _lerp(a, b, w):
    """a + w·(b − a), as torch's lerp computes it (from the nearer end: b − (b − a)(1 − w) for w >= 0.5, so
    lerp(a, inf, 0.5) is NaN as torch's); w an array or a tensor. Gradients 1 − w, w and b − a."""
    w_t = w if isinstance(w, _tensor_class()) else _no_grad(w)
    with np.errstate(invalid="ignore"):
        return E.Where.apply(w_t.data < 0.5, a + w_t * (b - a), b - (b - a) * (1 - w_t))


def _weights(name: str, kind: str, w, n: int):
    """fweights / aweights of cov, checked as torch checks them: a tensor of ≤ 1 dim, one per observation,
    integers (fweights) or floats (aweights), none negative."""
    if not isinstance(w, _tensor_class()):
        raise TypeError(f"cov(): argument '{name}' must be Tensor, not {type(w).__name__}")
    if w.ndim > 1:
        raise ArgumentError(f"cov(): expected {name} to have one or fewer dimensions but got {name} with {w.ndim} "
                            f"dimensions")
    if w.dtype.kind not in kind:
        what = "integral" if kind == "iu" else "floating point"
        raise DtypeError(f"cov(): expected {name} to have {what} dtype but got {name} with {w.dtype} dtype")
    if w.numel() != n:
        raise ArgumentError(f"cov(): expected {name} to have the same numel as there are observations in the input "
                            f"but got {w.numel()} != {n}")
    if w.numel() and bool((w.data < 0).any()):
        raise ArgumentError(f"cov(): {name} cannot be negative")
    return w.reshape(-1)


def _weight_of_q(q, weight, below, factor, fixed):
    """The linear interpolation weight q·factor − below as a tensor of q (Q,), so that quantile's gradient
    reaches q as torch's does: (b − a)·factor; `weight` (the same values) where `fixed` overrode the rank."""
    rank = q * _no_grad(backend.xp_of(weight).asarray(factor, dtype=weight.dtype))  # (..., Q)
    return E.Where.apply(backend.xp_of(weight).broadcast_to(fixed, weight.shape), weight,
                         rank - _no_grad(below.astype(weight.dtype)))


class ExtraStatsMethods:
    """torch.Tensor's inner, diagflat, rot90, dist, cov, corrcoef, quantile, nanquantile, unique_consecutive and
    is_nonzero."""

    __slots__ = ()

    # ---- products, diagonals, rotations, distances ---------------------------------------------------------
    def inner(self, other):
        """Σ over the last dims of self and other of their products: shape self.shape[:-1] + other.shape[:-1]
        (a 0-d operand: plain multiplication)."""
        if not isinstance(other, _tensor_class()):
            raise must_be_tensor("inner", "other", other)
        if self.ndim == 0 or other.ndim == 0:
            return self * other
        if self.dtype != other.dtype:
            raise DtypeError(f"inner(): both inputs should have same dtype, got {self.dtype} and {other.dtype}")
        if self.dtype.kind == "b":
            raise not_implemented("inner", self.dtype, "integer and floating-point")
        if self.shape[-1] != other.shape[-1]:
            raise ArgumentError(f"inner() the last dimension must match on both input tensors but got shapes "
                                f"{list(self.shape)} and {list(other.shape)}")
        k, m, n = self.shape[-1], math.prod(self.shape[:-1]), math.prod(other.shape[:-1])
        out = self.reshape(m, k) @ other.reshape(n, k).T  # (m, n); zeros when k = 0
        return out.reshape(self.shape[:-1] + other.shape[:-1])

    def diagflat(self, offset: int = 0):
        """The flattened tensor on the `offset`-th diagonal of a square matrix, zeros elsewhere."""
        return self.reshape(-1).diag(offset)

    def rot90(self, k: int = 1, dims=(0, 1)):
        """Rotated by 90° k times in the plane of `dims`, from the first dim toward the second (as torch and
        NumPy); a copy, as torch's."""
        if not isinstance(k, (int, np.integer)) or isinstance(k, (bool, np.bool_)):
            raise TypeError(f"rot90(): argument 'k' (position 2) must be int, not {type(k).__name__}")
        dims = list(dims)
        if len(dims) != 2:
            raise ArgumentError(f"expected total rotation dims == 2, but got dims = {len(dims)} (rot90)")
        if self.ndim < 2:
            raise ArgumentError(f"expected total dims >= 2, but got total dims = {self.ndim} (rot90)")
        d0, d1 = normalize_dim(dims[0], self.ndim), normalize_dim(dims[1], self.ndim)
        if d0 == d1:
            raise ArgumentError(f"expected rotation dims to be different, but got dim0 = {d0} and dim1 = {d1} "
                                f"(rot90)")
        k = int(k) % 4
        if k == 1:
            return self.flip(d1).transpose(d0, d1)
        if k == 2:
            return self.flip([d0, d1])
        if k == 3:
            return self.flip(d0).transpose(d0, d1)
        return self.clone()

    def dist(self, other, p=2):
        """‖self − other‖_p over all elements, broadcast (p = inf: the largest |difference|, 0: how many
        differ); gradient 0 where the difference is 0, as torch's norm."""
        if not isinstance(other, _tensor_class()):
            raise must_be_tensor("dist", "other", other, position=1)
        if isinstance(p, (bool, np.bool_)) or not isinstance(p, _SCALARS):
            raise TypeError(f"dist(): argument 'p' (position 2) must be Number, not {type(p).__name__}")
        a, b = self._promoted(other)
        if a.dtype.kind == "b":
            raise DtypeError("Subtraction, the `-` operator, with two bool tensors is not supported (dist(), as "
                             "torch)")
        if a.dtype.kind != "f":
            raise DtypeError(f"dist(): input dtype should be floating point, got {a.dtype} (as torch's norm)")
        try:
            np.broadcast_shapes(a.shape, b.shape)
        except ValueError:
            raise ArgumentError(f"dist(): shapes {a.shape} and {b.shape} do not broadcast") from None
        with np.errstate(divide="ignore", invalid="ignore"):  # p < 0 at a zero difference: 0 ** p = inf
            return (a - b).norm(float(p))

    # ---- covariance and correlation --------------------------------------------------------------------------
    def cov(self, *, correction: int = 1, fweights=None, aweights=None):
        """The covariance matrix of the variables in the rows (observations in the columns; a 1-D tensor is one
        variable), as numpy.cov: Σ_k w_k (x_ik − x̄_i)(x_jk − x̄_j) / (Σ w − correction·(Σ w·a / Σ w)), with
        w = fweights · aweights (integer repeat counts, float weights). Squeezed: one variable gives a 0-d
        tensor. Gradients for self and aweights."""
        if not isinstance(correction, (int, np.integer)) or isinstance(correction, (bool, np.bool_)):
            raise TypeError(f"cov(): argument 'correction' must be int, not {type(correction).__name__}")
        if self.ndim > 2:
            raise ArgumentError(f"cov(): expected input to have two or fewer dimensions but got an input with "
                                f"{self.ndim} dimensions")
        if self.dtype.kind == "b":
            raise DtypeError("cov(): bool dtype is not supported for input")
        x = self if self.ndim == 2 else self.reshape(1, -1)  # (V variables, N observations)
        n = x.shape[1]
        if self.dtype.kind == "f":
            dtype = self.dtype
        elif aweights is not None and getattr(aweights, "dtype", np.dtype(int)).kind == "f":
            dtype = aweights.dtype  # an integer input takes the float weights' dtype, as torch's
        else:
            dtype = np.dtype(backend.default_dtype())
        x = x._cast(dtype)
        w = aw = None
        if fweights is not None:
            w = _weights("fweights", "iu", fweights, n)._cast(dtype)
        if aweights is not None:
            aw = _weights("aweights", "f", aweights, n)._cast(dtype)
            w = aw if w is None else w * aw
        with np.errstate(divide="ignore", invalid="ignore"):
            if w is None:
                avg = x.mean(1)  # (V,)
                norm = n - correction
            else:
                w_sum = w.sum()
                if float(w_sum.item()) == 0:
                    raise ArgumentError("cov(): weights sum to zero, can't be normalized")
                avg = (x * w).sum(1) / w_sum  # (V,)
                norm = w_sum - correction if aw is None else w_sum - correction * (w * aw).sum() / w_sum
            if float(norm) <= 0:
                warnings.warn("cov(): degrees of freedom is <= 0. Correction should be strictly less than the "
                              "number of observations.", UserWarning, stacklevel=2)
                norm = 0
            xm = x - avg.unsqueeze(1)  # (V, N)
            c = xm @ (xm if w is None else xm * w).T  # (V, V)
            return (c / norm).squeeze()

    def corrcoef(self):
        """Pearson's correlation coefficients of the rows: cov / (σ_i σ_j), clipped to [−1, 1] (NaN for a
        constant row), as torch's."""
        if self.ndim > 2:
            raise ArgumentError(f"corrcoef(): expected input to have two or fewer dimensions but got an input with "
                                f"{self.ndim} dimensions")
        c = self.cov()
        with np.errstate(divide="ignore", invalid="ignore"):
            if c.ndim == 0:
                return c / c
            std = c.diagonal().sqrt()  # (V,)
            c = c / std.unsqueeze(1)
            c = c / std.unsqueeze(0)
            return c.clamp(-1, 1)

    # ---- quantiles ---------------------------------------------------------------------------------------------
    def _quantile(self, name: str, q, dim, keepdim: bool, interpolation: str, ignore_nan: bool):
        T = _tensor_class()
        if self.dtype not in (np.float32, np.float64):
            raise DtypeError(f"{name}() input tensor must be either float or double dtype, got {self.dtype}")
        if self.numel() == 0:
            raise ArgumentError(f"{name}() input tensor must be non-empty")
        if interpolation not in _INTERPOLATIONS:
            raise ArgumentError(f"{name}() interpolation must be one of linear, lower, higher, midpoint or nearest, "
                                f"but got {interpolation}")
        xp = backend.xp_of(self.data)
        if isinstance(q, T):
            if q.ndim > 1:
                raise ArgumentError(f"{name}() q must be a scalar or 1D tensor")
            if q.dtype != self.dtype:
                raise DtypeError(f"{name}() q tensor must be same dtype as the input tensor ({q.dtype} and "
                                 f"{self.dtype})")
            qs, one_q = backend.to_device(q.data, self.device).reshape(-1), q.ndim == 0
            if not bool(((qs >= 0) & (qs <= 1)).all()):
                raise ArgumentError(f"{name}() q values must be in the range [0, 1]")
        elif isinstance(q, _SCALARS) and not isinstance(q, (bool, np.bool_)):
            if not 0 <= q <= 1:
                raise ArgumentError(f"{name}() q must be in the range [0, 1] but got {q}")
            qs, one_q = xp.asarray([q], dtype=self.dtype), True
        else:
            raise TypeError(f"{name}(): argument 'q' must be float or Tensor, not {type(q).__name__}")
        if dim is None or self.ndim == 0:
            if dim is not None:
                normalize_dim(dim, 0)
            x = self.reshape(-1)  # (n,)
            kept = (1,) * self.ndim if keepdim and dim is None else ()
        else:
            d = normalize_dim(dim, self.ndim)
            x = self.movedim(d, -1)  # (..., n)
            kept = tuple(1 if i == d else s for i, s in enumerate(self.shape) if keepdim or i != d)
        n, dt = x.shape[-1], self.dtype.type
        order = xp.argsort(x.data, axis=-1, kind="stable")  # NaN last
        is_nan = xp.isnan(x.data)
        lead = x.shape[:-1]
        # the rank of each quantile among the sorted values, in self's dtype as torch's: (..., Q)
        if ignore_nan:
            count = (~is_nan).sum(axis=-1, keepdims=True)  # (..., 1)
            factor = (count - 1).astype(self.dtype)
            fixed = count == 0  # all NaN: the last, a NaN
        else:
            factor = dt(n - 1)
            fixed = is_nan.any(axis=-1, keepdims=True)  # a NaN: the result is NaN
        ranks = xp.where(fixed, dt(n - 1), xp.broadcast_to(qs * factor, lead + qs.shape))  # (..., Q)
        if interpolation in ("lower", "higher", "nearest"):
            ranks = {"lower": xp.floor, "higher": xp.ceil, "nearest": xp.rint}[interpolation](ranks)  # rint: to even
        below = xp.floor(ranks).astype(np.int64)
        out = x.gather(-1, _no_grad(xp.take_along_axis(order, below, axis=-1)))  # (..., Q)
        if interpolation in ("linear", "midpoint"):
            above = xp.ceil(ranks).astype(np.int64)
            weight = ranks - below.astype(self.dtype) if interpolation == "linear" else xp.full_like(ranks, 0.5)
            if interpolation == "linear" and isinstance(q, T) and q.requires_grad:
                weight = _weight_of_q(q.reshape(-1), weight, below, factor, fixed)  # its gradient reaches q
            out = _lerp(out, x.gather(-1, _no_grad(xp.take_along_axis(order, above, axis=-1))), weight)
        out = out.movedim(-1, 0) if out.ndim > 1 else out  # (Q, ...)
        return out.reshape(((() if one_q else (qs.shape[0],)) + kept))

    def quantile(self, q, dim=None, keepdim: bool = False, *, interpolation: str = "linear"):
        """The q-th quantiles (q a number or a 1-D tensor of self's dtype, in [0, 1]) over `dim` (all elements by
        default), a NaN giving NaN; a tensor q puts its dim first. interpolation between the two sorted values
        around rank q·(n − 1): 'linear', 'lower', 'higher', 'midpoint' or 'nearest' (halves to even). The
        gradient goes to the values used."""
        return self._quantile("quantile", q, dim, keepdim, interpolation, ignore_nan=False)

    def nanquantile(self, q, dim=None, keepdim: bool = False, *, interpolation: str = "linear"):
        """`quantile` of the non-NaN values (NaN where all are NaN)."""
        return self._quantile("nanquantile", q, dim, keepdim, interpolation, ignore_nan=True)

    # ---- runs and truth ----------------------------------------------------------------------------------------
    def unique_consecutive(self, return_inverse: bool = False, return_counts: bool = False, dim: int | None = None):
        """The first element (or slice along `dim`) of each run of equal ones (NaNs never equal), with
        `return_inverse` which run each element (slice) is in, with `return_counts` the runs' lengths. No
        gradient."""
        xp = backend.xp_of(self.data)
        if dim is None:
            flat = self.data.reshape(-1)
            n, rows = flat.shape[0], flat
        else:
            if self.ndim == 0:
                raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions (unique_consecutive)")
            d = normalize_dim(dim, self.ndim)
            n = self.shape[d]
            if n and self.numel() == 0:
                raise ArgumentError("There are 0 sized dimensions, and they aren't selected, so unique cannot be "
                                    "applied (unique_consecutive)")
            rows = xp.moveaxis(self.data, d, 0).reshape(n, -1) if n else None  # (n, rest)
        new = xp.ones(n, dtype=bool)  # where a run starts
        if n > 1:
            differs = rows[1:] != rows[:-1]
            new[1:] = differs if dim is None else differs.any(axis=1)
        starts = xp.nonzero(new)[0].astype(np.int64)
        if dim is None:
            values = flat[starts]
            inverse = (xp.cumsum(new) - 1).astype(np.int64).reshape(self.shape)
        else:
            values = xp.take(self.data, starts, axis=d)
            inverse = (xp.cumsum(new) - 1).astype(np.int64)
        counts = xp.diff(xp.concatenate([starts, xp.asarray([n], dtype=np.int64)])) if n else starts
        out = [_no_grad(xp.asarray(values))]
        if return_inverse:
            out.append(_no_grad(inverse))
        if return_counts:
            out.append(_no_grad(counts))
        return out[0] if len(out) == 1 else tuple(out)

    def is_nonzero(self) -> bool:
        """Whether the one element is not 0 (NaN is not 0), as `bool(t)`; refused for any other size."""
        size = self.numel()
        if size != 1:
            what = "no values" if size == 0 else "more than one value"
            raise ArgumentError(f"Boolean value of Tensor with {what} is ambiguous (is_nonzero(), shape {self.shape})")
        return bool(self.data.reshape(()).item() != 0)
