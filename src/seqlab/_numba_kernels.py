"""Row kernels compiled by Numba; `seqlab.kernels` imports this module only when Numba is chosen.

Each kernel is the loop a textbook would write for one row, so a row is read
from memory once and its passes run in cache, where NumPy makes one pass over
the whole array per operation. float32 in, float32 out, float32 sums (as
NumPy's). `fastmath` here allows only reordering sums into SIMD lanes and
fusing a multiply and an add ("reassoc", "contract"): results match the NumPy
path within float32 rounding, −inf and NaN behave as there, and divisions
stay divisions (so a softmax computed again from its saved row statistics is
bitwise the forward's). The plain NumPy formulas are in seqlab.autograd.ops.fused;
tests/test_kernels.py holds each kernel to them.

Compiled on first use and cached next to this file (or in Numba's user cache
folder when that is read-only), so later processes load them in milliseconds.
"""
from __future__ import annotations

import numpy as np
from numba import njit

_FAST = {"reassoc", "contract"}
_jit = njit(cache=True, nogil=True, fastmath=_FAST)


@_jit
def layer_norm_forward(x, w, b, eps, y, xhat, rstd):  # pragma: no cover - compiled; held by tests/test_kernels.py
    """Per row: μ = mean(x), r = 1/√(mean((x − μ)²) + eps), x̂ = (x − μ)·r, y = x̂·w + b.

    x, y, xhat (N, D); w, b (D,); rstd (N,). `xhat` may be `y` (nothing keeps x̂).
    """
    n, d = x.shape
    inv_d = np.float32(1.0) / np.float32(d)
    for i in range(n):
        s = np.float32(0.0)
        for j in range(d):
            s += x[i, j]
        mu = s * inv_d
        v = np.float32(0.0)
        for j in range(d):
            c = x[i, j] - mu
            v += c * c
        r = np.float32(1.0) / np.sqrt(v * inv_d + eps)
        rstd[i] = r
        for j in range(d):
            h = (x[i, j] - mu) * r
            xhat[i, j] = h
            y[i, j] = h * w[j] + b[j]


@_jit
def layer_norm_backward(g, xhat, rstd, w, gx, gw, gb):  # pragma: no cover - compiled
    """Per row, with ĝ = g ⊙ w: gx = r·(ĝ − mean(ĝ) − x̂·mean(ĝ ⊙ x̂)); and gw += g ⊙ x̂, gb += g.

    g, xhat, gx (N, D); rstd (N,); w, gw, gb (D,), gw and gb zeroed by the caller.
    """
    n, d = g.shape
    inv_d = np.float32(1.0) / np.float32(d)
    for i in range(n):
        s1 = np.float32(0.0)
        s2 = np.float32(0.0)
        for j in range(d):
            gh = g[i, j] * w[j]
            s1 += gh
            s2 += gh * xhat[i, j]
            gw[j] += g[i, j] * xhat[i, j]
            gb[j] += g[i, j]
        m1 = s1 * inv_d
        m2 = s2 * inv_d
        r = rstd[i]
        for j in range(d):
            gx[i, j] = (g[i, j] * w[j] - m1 - xhat[i, j] * m2) * r


@_jit
def subtract_row_max(s, m):  # pragma: no cover - compiled
    """Per row: m = max(s) (0 for a row of −inf only), s −= m in place. s (N, K), m (N,)."""
    n, k = s.shape
    for i in range(n):
        mx = s[i, 0]
        for j in range(1, k):
            v = s[i, j]
            if v > mx:
                mx = v
        if mx == -np.inf:
            mx = np.float32(0.0)
        m[i] = mx
        for j in range(k):
            s[i, j] -= mx


@_jit
def subtract_rows(s, m):  # pragma: no cover - compiled
    """s −= m in place, row by row (the max saved by `subtract_row_max`)."""
    n, k = s.shape
    for i in range(n):
        mx = m[i]
        for j in range(k):
            s[i, j] -= mx


@_jit
def divide_by_row_sum(e, t, have_sums):  # pragma: no cover - compiled
    """Per row: t = Σ e (1 where that is 0: a row of zeros stays 0) unless `have_sums`, then e /= t in place."""
    n, k = e.shape
    for i in range(n):
        if have_sums:
            total = t[i]
        else:
            total = np.float32(0.0)
            for j in range(k):
                total += e[i, j]
            if total == 0:
                total = np.float32(1.0)
            t[i] = total
        for j in range(k):
            e[i, j] /= total


@_jit
def softmax_backward(g, w, out):  # pragma: no cover - compiled
    """Per row: out = w ⊙ (g − Σ g ⊙ w), the softmax's input gradient. `out` may be `g`."""
    n, k = g.shape
    for i in range(n):
        t = np.float32(0.0)
        for j in range(k):
            t += g[i, j] * w[i, j]
        for j in range(k):
            out[i, j] = (g[i, j] - t) * w[i, j]


@_jit
def scale_kept(x, keep, scale, out):  # pragma: no cover - compiled
    """Dropout's x ⊙ keep · 1/(1 − p) (flat arrays, keep bool; `out` may be `x`): the NumPy path's
    values bitwise, x·1·s = x·s with keep in {0, 1} (and NaN·0 stays NaN, as there)."""
    for i in range(x.shape[0]):
        out[i] = x[i] * np.float32(keep[i]) * scale
