"""Running (cumulative) ops along one dim: cumprod with a gradient that is right through zeros, and the running
max/min's indices behind cummax/cummin and mode.

CumProd is a primitive because no composition of the other ops gives its gradient honestly: exp(cumsum(log x))
breaks at zeros and negative numbers, and a product of shifted copies is O(n²). Its backward is torch's
(`cumprod_backward` in FunctionsManual.cpp), for y_j = x_0 ··· x_j:

    dL/dx_i = Σ_{j≥i} g_j · ∏_{k≤j, k≠i} x_k
            = (Σ_{j≥i} g_j y_j) / x_i                        for i before the first zero (x_i ≠ 0)
            = Σ_{j≥i} g_j y'_j,  y' = cumprod(x, x_i := 1)   for i the first zero
            = 0                                              after it (x_z = 0 sits in every product)
"""
from __future__ import annotations

import numpy as np

from seqlab.autograd.function import Function
from seqlab.autograd.higher_order import constant, graph_input, graph_output
from seqlab.autograd.ops.movement import Cat, GetItem, Stack
from seqlab.backend import xp_of


def _along(dim: int, ndim: int, sl) -> tuple:
    """An index that applies `sl` along `dim` and takes everything elsewhere."""
    return (slice(None),) * dim + (sl,) + (slice(None),) * (ndim - dim - 1)


def _reverse_cumsum(t, dim: int):
    xp = xp_of(t)
    return xp.flip(xp.cumsum(xp.flip(t, dim), axis=dim), dim)


def running(a, op, dim: int):
    """The inclusive scan of the binary ufunc `op` (maximum, minimum, ...) along `dim`, in ⌈log2 n⌉ whole-array
    steps (Hillis–Steele): NumPy's `op.accumulate` is not on every CuPy, and a Python loop over n elements is
    n kernel launches on a GPU."""
    out = a.copy()
    n, k = a.shape[dim], 1
    while k < n:
        out[_along(dim, a.ndim, slice(k, None))] = op(out[_along(dim, a.ndim, slice(k, None))],
                                                      out[_along(dim, a.ndim, slice(0, n - k))])
        k *= 2
    return out


def positions(shape: tuple, dim: int, xp):
    """0, 1, ..., n-1 along `dim`, shaped to broadcast against an array of `shape`."""
    n = shape[dim]
    return xp.arange(n, dtype=np.int64).reshape((1,) * dim + (n,) + (1,) * (len(shape) - dim - 1))


def running_extreme_index(a, dim: int, use_min: bool):
    """int64 indices of the running max (min) along `dim`, as torch's cummax/cummin: a tie moves the index to
    the later element, and a NaN takes over (and only a later NaN moves it on)."""
    xp = xp_of(a)
    run = running(a, xp.minimum if use_min else xp.maximum, dim)  # NaN propagates, as torch's values
    hit = a == run
    if a.dtype.kind in "fc":
        hit = hit | xp.isnan(a)
    cand = xp.where(hit, positions(a.shape, dim, xp), -1)
    return running(cand, xp.maximum, dim)


class CumProd(Function):
    """Running product along `dim` (bool and integer inputs multiply in int64, as torch.cumprod)."""

    def forward(self, a, dim):
        self.dim = dim
        out = xp_of(a).cumprod(a, axis=dim, dtype=np.int64 if a.dtype.kind in "biu" else a.dtype)
        if any(self.needs_input_grad):
            self.save_for_backward(a, out)
        return out

    def backward(self, grad):
        a, y = self.saved
        d = self.dim
        xp = xp_of(a)
        zero = a == 0
        zeros_so_far = xp.cumsum(zero, axis=d)
        before = zeros_so_far == 0  # no zero at or before i: divide by x_i safely
        g = _reverse_cumsum(grad * y, d) / xp.where(before, a, a.dtype.type(1))
        g = xp.where(before, g, a.dtype.type(0))
        first = zero & (zeros_so_far == 1)
        if bool(first.any()):
            y1 = xp.cumprod(xp.where(first, a.dtype.type(1), a), axis=d)  # the product with the first zero left out
            g = xp.where(first, _reverse_cumsum(grad * y1, d), g)
        return (g,)

    def backward_graph(self, g):
        """The backward above with Tensor ops. Without zeros in x it is the same formula, (Σ_{j≥i} g_j y_j) / x_i.
        With zeros, the piecewise one (0 after the first zero) has the right value but not the right
        derivative (x_i's gradient after the first zero z still depends on x_z), so, as torch does in this
        case, a formula that holds for every x instead: dL/dx_i = E_i · S_i, E_i = x_0 ··· x_{i−1} (a CumProd,
        differentiable again) and S_i = Σ_{j≥i} g_j x_{i+1} ··· x_j, made from the last position back by
        S_i = g_i + x_{i+1} · S_{i+1} (one step per position along `dim`)."""
        from seqlab.autograd.ops.reduce import CumSum  # reduce imports this module

        a, y = self.saved
        d = self.dim % a.ndim
        n = a.shape[d]
        x = graph_input(self, 0, a)
        if not bool((a == 0).any()):
            flip = _along(d, a.ndim, slice(None, None, -1))
            rsum = GetItem.apply(CumSum.apply(GetItem.apply(g * graph_output(self, y), index=flip), dim=d), index=flip)
            return (rsum / x,)
        one = constant(xp_of(a).ones(a.shape[:d] + (1,) + a.shape[d + 1:], dtype=a.dtype))
        shifted = Cat.apply(one, GetItem.apply(x, index=_along(d, a.ndim, slice(0, n - 1))), dim=d)
        before = CumProd.apply(shifted, dim=d)                   # E_i = x_0 ··· x_{i−1}
        rest = [GetItem.apply(g, index=_along(d, a.ndim, n - 1))]  # S_{n−1} = g_{n−1}
        for i in range(n - 2, -1, -1):
            rest.append(GetItem.apply(g, index=_along(d, a.ndim, i))
                        + GetItem.apply(x, index=_along(d, a.ndim, i + 1)) * rest[-1])
        return (before * Stack.apply(*reversed(rest), dim=d),)
