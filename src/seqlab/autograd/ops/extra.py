"""The primitives behind tensor_extra.py: log-add-exp and its running form, copysign, and the p-norm of rows
that cdist and pdist take.

Each is a primitive for stability or because torch's gradient is not the composed one:

- logaddexp(a, b) = m + log1p(e^−|a−b|), m = max(a, b): log(e^a + e^b) overflows for a = 1000. Its gradient is
  the softmax pair 1 / (1 + e^(b−a)), 1 / (1 + e^(a−b)) (base 2 for logaddexp2: 2^ in place of e^).
- logcumsumexp: the running logaddexp (a Hillis–Steele scan: `ops/scan.running`), and the gradient
  dL/dx_i = Σ_{j≥i} g_j e^(x_i − r_j) computed as a reverse running log-sum-exp of log|g_j| − r_j, split by
  the sign of g, so no e^r is ever formed (the formula of TensorFlow's and torch's logcumsumexp gradients).
- copysign(a, b): d/da = copysign(a, b) / a (0 at a = 0), d/db = 0, as torch's.
- PNormRows: ‖d‖_p over the last dim with torch's cdist gradient, which differs from the composed norm's:
  0 at a zero distance (not NaN), and for p = ∞ every coordinate that reaches the max gets the whole gradient
  (amax would split it).
"""
from __future__ import annotations

import math

import numpy as np

from seqlab.autograd.function import Function
from seqlab.autograd.higher_order import constant, graph_input
from seqlab.autograd.ops import scan as S
from seqlab.backend import xp_of

_LN2 = math.log(2.0)


def logaddexp(xp, a, b, base2: bool = False):
    """log(e^a + e^b) (log2(2^a + 2^b) with `base2`) without overflow; equal infinities give themselves (not
    NaN), a NaN gives NaN."""
    with np.errstate(invalid="ignore", over="ignore"):
        m = xp.maximum(a, b)
        d = -xp.abs(a - b)  # NaN for inf − inf
        tail = xp.log1p(xp.exp2(d)) / _LN2 if base2 else xp.log1p(xp.exp(d))
        return xp.where(xp.isinf(a) & (a == b), a, m + tail)


class LogAddExp(Function):
    """log(e^a + e^b), broadcast; d/da = 1 / (1 + e^(b − a)), d/db = 1 / (1 + e^(a − b))."""

    def forward(self, a, b, base2: bool = False):
        self.base2 = base2
        out = logaddexp(xp_of(a if hasattr(a, "shape") else b), a, b, base2)
        self.save_for_backward(a, b)
        return out

    def _weights(self, a, b):
        xp = xp_of(a if hasattr(a, "shape") else b)
        power = xp.exp2 if self.base2 else xp.exp
        with np.errstate(over="ignore", invalid="ignore"):
            return 1 / (1 + power(b - a)), 1 / (1 + power(a - b))

    def backward(self, grad):
        wa, wb = self._weights(*self.saved)
        return grad * wa, grad * wb

    def backward_graph(self, g):
        a, b = self.saved
        x, y = graph_input(self, 0, a), graph_input(self, 1, b)
        with np.errstate(over="ignore", invalid="ignore"):
            if self.base2:
                return g / (1 + 2.0 ** (y - x)), g / (1 + 2.0 ** (x - y))
            return g / (1 + (y - x).exp()), g / (1 + (x - y).exp())


def log_cum_sum_exp(a, dim: int, reverse: bool = False):
    """The running log Σ e^x along `dim` (from the end with `reverse`)."""
    xp = xp_of(a)
    if reverse:
        return xp.flip(S.running(xp.flip(a, dim), lambda u, v: logaddexp(xp, u, v), dim), dim)
    return S.running(a, lambda u, v: logaddexp(xp, u, v), dim)


class LogCumSumExp(Function):
    """r_j = log Σ_{k≤j} e^(x_k) along `dim`; dL/dx_i = Σ_{j≥i} g_j e^(x_i − r_j) (see the module docstring).
    As torch's, a position whose running sum is still e^−∞ (every x so far −∞) or already e^∞ gets NaN."""

    def forward(self, a, dim: int):
        self.dim = dim
        out = log_cum_sum_exp(a, dim)
        self.save_for_backward(a, out)
        return out

    def backward(self, grad):
        a, out = self.saved
        xp = xp_of(grad)
        lowest = grad.dtype.type(np.finfo(grad.dtype).min)  # log 0, kept finite so that −∞ − (−∞) stays out
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            log_abs = xp.log(xp.abs(grad))
            parts = []
            for mask in (grad > 0, grad < 0):
                logs = xp.where(mask, log_abs, lowest) - out
                parts.append(xp.exp(log_cum_sum_exp(logs, self.dim, reverse=True) + a))
            return (parts[0] - parts[1],)


class Copysign(Function):
    """|a| with the sign of b (broadcast); d/da = out / a (±1; 0 at a = 0), d/db = 0."""

    def forward(self, a, b):
        xp = xp_of(a if hasattr(a, "shape") else b)
        out = xp.copysign(a, b)
        self.save_for_backward(a, out)
        return out

    def _ratio(self):
        a, out = self.saved
        xp = xp_of(out)
        with np.errstate(divide="ignore", invalid="ignore"):
            return xp.where(a == 0, out.dtype.type(0), out / a)

    def backward(self, grad):
        gb = xp_of(grad).zeros_like(grad) if self.needs_input_grad[1] else None
        return grad * self._ratio(), gb

    def backward_graph(self, g):
        gb = constant(xp_of(g.data).zeros_like(g.data)) if self.needs_input_grad[1] else None
        return g * constant(self._ratio().astype(g.dtype, copy=False)), gb


class PNormRows(Function):
    """‖d‖_p over the last dim of d (…, M) → (…): p = 0 counts the nonzero coordinates, p = ∞ takes the largest
    |d_k|. The gradient is torch's cdist's: 0 where the norm is 0 (and for p < 2 where d_k = 0), 0 for p = 0,
    sign(d_k) for p = 1, and for p = ∞ sign(d_k) at every k with |d_k| = ‖d‖ (not split between ties)."""

    def forward(self, d, p: float):
        xp = xp_of(d)
        self.p = p
        ad = xp.abs(d)
        if p == 0:
            out = (d != 0).sum(axis=-1).astype(d.dtype)
        elif p == 1:
            out = ad.sum(axis=-1)
        elif p == 2:
            out = xp.sqrt((d * d).sum(axis=-1))
        elif p == math.inf:
            out = ad.max(axis=-1) if d.shape[-1] else xp.zeros(d.shape[:-1], d.dtype)
        else:
            out = (ad ** p).sum(axis=-1) ** (1.0 / p)
        self.save_for_backward(d, xp.asarray(out))
        return out

    def backward(self, grad):
        d, out = self.saved
        xp = xp_of(grad)
        p, zero = self.p, d.dtype.type(0)
        g, n = grad[..., None], out[..., None]
        if p == 0:
            return (xp.zeros_like(d),)
        if p == 1:
            return (g * xp.sign(d),)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            if p == 2:
                return (xp.where(n == 0, zero, g * d / n),)
            if p == math.inf:
                return (g * xp.sign(d) * (xp.abs(d) == n),)
            ad = xp.abs(d)
            if p < 2:  # |d|^(p − 1) is inf (p < 1) or its factor d^(p − 2) would be (1 < p < 2) at d = 0
                scaled = xp.sign(d) * ad ** (p - 1) / n ** (p - 1)
                return (xp.where((n == 0) | (d == 0), zero, g * scaled),)
            return (xp.where(n == 0, zero, g * d * ad ** (p - 2) / n ** (p - 1)),)


__all__ = ["LogAddExp", "LogCumSumExp", "Copysign", "PNormRows", "logaddexp", "log_cum_sum_exp"]
