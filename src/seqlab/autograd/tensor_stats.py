"""`StatsMethods`: running ops, reductions, order statistics, sorting and counting, as torch's, as a mixin of
`Tensor` (a base of `IndexingMethods`, tensor_indexing.py): cumsum, cumprod, cummax/cummin; prod, var, std, all,
any, logsumexp, nansum, nanmean, amin, aminmax, count_nonzero, median/nanmedian, kthvalue, mode, diff; argsort,
sort, topk; bincount, histc. The reductions every layer uses (sum, mean, max/min, amax, argmax/argmin) are
Tensor's own (tensor.py).

Values picked by an index (median, kthvalue, mode, cummax/cummin, sort, topk) are gathered, so their gradient goes
back to the places they came from; indices and counts carry none. The running product has a primitive whose
gradient is right through zeros (`ops/scan.CumProd`).

The methods that were Tensor's own (cumsum, prod, var, std, all, any, argsort, sort, topk) name `Tensor` as a
global, as they did in tensor.py; that module binds it here once it has defined it (it imports this module first,
for Tensor's bases, so this one cannot import it).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from seqlab import backend
from seqlab.autograd.ops import elementwise as E
from seqlab.autograd.ops import reduce as R
from seqlab.autograd.ops import scan as S
from seqlab.autograd.ops.reduce import Max, normalize_dim, normalize_dims
from seqlab.autograd.tensor_common import _along, _as_tensor, _dim_or_axis, _no_grad

Tensor = None  # bound by seqlab.autograd.tensor (see above)


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


def _std_var_float(t, name: str):
    if t.dtype.kind not in "fc":
        raise TypeError(f"{name}(): std and var only support floating point and complex dtypes, got {t.dtype} (as "
                        f"torch); convert with .float() first")


def _sort_indices(t: Tensor, dim, descending: bool):
    """int64 indices that sort `t` along `dim`, stably: ties keep their order, also descending (the stable
    ascending sort of the reversed array, reversed)."""
    xp = backend.xp_of(t.data)
    d = normalize_dim(dim, t.ndim)
    if t.ndim == 0:
        return xp.zeros((), dtype=np.int64)
    if not descending:
        return xp.argsort(t.data, axis=d, kind="stable").astype(np.int64, copy=False)
    idx = xp.argsort(xp.flip(t.data, axis=d), axis=d, kind="stable")
    return ((t.shape[d] - 1) - xp.flip(idx, axis=d)).astype(np.int64, copy=False)


# max/min/sort/topk's pairs (tensor.py builds max and min; sort and topk are below)
ValuesIndices = _ReturnType
MinMaxResult, MinResult = _return_type("max"), _return_type("min")
SortResult, TopkResult = _return_type("sort"), _return_type("topk")


class StatsMethods:
    """torch.Tensor's running ops (cumsum, cumprod, cummax), reductions beyond sum/mean/max (prod, var, std, all,
    any, logsumexp, nansum, median, kthvalue, mode, ...), sorting (argsort, sort, topk) and counting (bincount,
    histc)."""

    __slots__ = ()

    # ---- running ops ----------------------------------------------------------------------------------------
    def cumsum(self, dim=None, *, dtype=None, axis=None) -> "Tensor":
        """Running sum along `dim`, with gradient; bool and integer tensors sum in int64 (as torch)."""
        dim = _dim_or_axis("cumsum", dim, axis)
        if dim is None:
            raise TypeError("cumsum() missing required argument 'dim' (or its alias 'axis')")
        x = self if dtype is None else self.astype(dtype)
        if x.ndim == 0:
            normalize_dim(dim, 0)
            return R.CumSum.apply(x.reshape(1), dim=0).reshape(())
        return R.CumSum.apply(x, dim=normalize_dim(dim, x.ndim))

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
    # `axis=` is torch's alias for `dim` in prod, var, std, all and any (as in tensor.py's sum, mean, max);
    # `dtype=` casts first.
    def prod(self, dim=None, keepdim: bool = False, *, dtype=None, axis=None):
        """Product of all elements, or along one `dim` (torch takes a single dim here); with gradient."""
        x = self if dtype is None else self.astype(dtype)
        dim = _dim_or_axis("prod", dim, axis)
        if dim is None:
            return R.Prod.apply(x.reshape(-1), dim=0)
        return R.Prod.apply(x, dim=normalize_dim(dim, x.ndim), keepdim=keepdim)

    def var(self, dim=None, unbiased: bool | None = None, keepdim: bool = False, *, correction=None, axis=None):
        """torch's signatures: `var(dim=None, unbiased=True, keepdim=False)`, `var(dim, *, correction=1,
        keepdim=False)` (the divisor is n − correction: unbiased is 1, biased 0) and `var(unbiased)`. Of a
        floating-point tensor, as torch."""
        _std_var_float(self, "var")
        dim = _dim_or_axis("var", dim, axis)
        if isinstance(dim, (bool, np.bool_)):  # var(False): torch's `var(unbiased)`
            if unbiased is not None:
                raise TypeError("var(): a bool first argument is `unbiased`, and unbiased was given again")
            dim, unbiased = None, bool(dim)
        if unbiased is not None and correction is not None:
            raise TypeError("var(): pass unbiased or correction, not both (as torch)")
        corr = correction if correction is not None else 1 if unbiased is None else int(bool(unbiased))
        return R.Var.apply(self, dim=dim, keepdim=keepdim, correction=corr)

    def std(self, dim=None, unbiased: bool | None = None, keepdim: bool = False, *, correction=None, axis=None):
        """The square root of `var`, with var's arguments; its gradient is 0 where it is 0 (a constant row), not
        nan, as torch's."""
        _std_var_float(self, "std")
        var = self.var(_dim_or_axis("std", dim, axis), unbiased, keepdim, correction=correction)
        return E.Sqrt.apply(var, zero_at_zero=True)

    def all(self, dim=None, keepdim: bool = False, *, axis=None) -> "Tensor":
        """Whether every element (along `dim`: an int or a tuple) is nonzero, a bool tensor (no gradient); of a
        uint8 tensor a uint8 one, as torch's."""
        dims = normalize_dims(_dim_or_axis("all", dim, axis), self.ndim)
        return self._truth(self.data.all(axis=dims, keepdims=keepdim))

    def any(self, dim=None, keepdim: bool = False, *, axis=None) -> "Tensor":
        dims = normalize_dims(_dim_or_axis("any", dim, axis), self.ndim)
        return self._truth(self.data.any(axis=dims, keepdims=keepdim))

    def _truth(self, result) -> "Tensor":
        """all/any's result: bool, or uint8 for a uint8 tensor (torch keeps that dtype)."""
        return Tensor._from_op(backend.xp_of(self.data).asarray(result, dtype=np.uint8 if self.dtype == np.uint8
                                                                else bool), None)

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

    # ---- sorting: values through `gather`, so their gradient goes back to the places they came from --------
    def argsort(self, dim: int = -1, descending: bool = False, stable: bool = False) -> "Tensor":
        """Indices that sort along `dim`; ties keep their order (stable, whatever `stable` says)."""
        return Tensor._from_op(_sort_indices(self, dim, descending), None)

    def msort(self) -> "Tensor":
        """The values sorted along dim 0 (`sort(0).values`)."""
        return self.sort(0).values

    def sort(self, dim: int = -1, descending: bool = False, stable: bool = False):
        """(values, indices) sorted along `dim`, as torch.sort; the values carry the gradient."""
        idx = Tensor._from_op(_sort_indices(self, dim, descending), None)
        return SortResult(self.clone() if self.ndim == 0 else self.gather(dim, idx), idx)

    def topk(self, k: int, dim: int = -1, largest: bool = True, sorted: bool = True):
        """(values, indices) of the `k` largest (or smallest) along `dim`, in order (also with sorted=False,
        which lets torch return any order); the values carry the gradient."""
        d = normalize_dim(dim, self.ndim)
        n = self.shape[d] if self.ndim else 1
        if not 0 <= k <= n:
            raise ValueError(f"topk: selected index k out of range: k={k} for dim {dim} of size {n} "
                             f"(shape {self.shape})")
        idx = _sort_indices(self, d, largest)
        if self.ndim == 0:
            return TopkResult(self.clone(), Tensor._from_op(idx, None))  # as torch, for k 0 or 1
        idx = Tensor._from_op(idx[(slice(None),) * d + (slice(0, k),)], None)
        return TopkResult(self.gather(d, idx), idx)

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
