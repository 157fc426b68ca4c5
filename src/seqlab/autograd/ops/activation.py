"""Activation primitives (the chapter's 7.1.2), each with its derivative."""
from __future__ import annotations

import math

import numpy as np

from seqlab.autograd.function import Function
from seqlab.backend import xp_of

_SQRT_2 = math.sqrt(2.0)
_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)


def erf(x):
    """The error function on NumPy or CuPy arrays (SciPy's, exact to float64)."""
    xp = xp_of(x)
    if xp.__name__ == "cupy":  # pragma: no cover - needs a GPU
        from cupyx.scipy.special import erf as cupy_erf

        return cupy_erf(x)
    from scipy.special import erf as scipy_erf

    return scipy_erf(x)


def sigmoid_array(x):
    """1 / (1 + e^-x) without overflow for any x: the chapter clips x to [-500, 500];
    here e^-|x| never overflows, and the two branches are the same formula."""
    xp = xp_of(x)
    e = xp.exp(-xp.abs(x))
    return xp.where(x >= 0, 1 / (1 + e), e / (1 + e))


class Sigmoid(Function):
    def forward(self, a):
        out = sigmoid_array(a)
        self.save_for_backward(out)
        return out

    def backward(self, grad):
        (s,) = self.saved
        return (grad * s * (1 - s),)  # σ' = σ(1 − σ)


class Tanh(Function):
    def forward(self, a):
        out = xp_of(a).tanh(a)
        self.save_for_backward(out)
        return out

    def backward(self, grad):
        (t,) = self.saved
        return (grad * (1 - t * t),)  # tanh' = 1 − tanh²


class ReLU(Function):
    def forward(self, a):
        out = xp_of(a).maximum(a, 0)
        self.save_for_backward(out)
        return out

    def backward(self, grad):
        (out,) = self.saved
        return (grad * (out > 0),)


# Φ(x) ≈ ½(1 + tanh(x·P(x²))) for |x| ≤ _TANH_CLIP, P of degree 7 (coefficients from s⁰ up): a weighted
# least-squares fit of artanh(erf(x/√2))/x in s = x², reproduced by `fit_tanh_cdf` (tests re-run it)
_TANH_CDF = (7.97885152e-01, 3.63319829e-02, -3.11358445e-05, -5.60600982e-05, 4.14346443e-06, -1.52702770e-07,
             2.83479384e-09, -2.07066159e-11)
_TANH_CLIP = 6.5  # beyond it tanh(x·P) is ±1 in float32: Φ is exactly 0 or 1
_BLOCK = 1 << 16


def fit_tanh_cdf(degree: int = 7, clip: float = _TANH_CLIP, nodes: int = 4000) -> np.ndarray:
    """The coefficients of P in Φ(x) ≈ ½(1 + tanh(x·P(x²))), in float64, s⁰ first.

    P(s) = artanh(erf(x/√2))/x at Chebyshev nodes s = x² ∈ [0, clip²], fitted
    by least squares weighted by dΦ/dP = ½(1 − tanh²)·x, so what is minimised
    is the error in Φ itself.
    """
    s = (np.cos(np.pi * (np.arange(nodes) + 0.5) / nodes) + 1) / 2 * clip ** 2
    x = np.sqrt(s)
    y = np.arctanh(np.minimum(erf(x / _SQRT_2), 1 - 1e-16))
    p = np.where(x > 1e-8, y / np.maximum(x, 1e-300), np.sqrt(2 / np.pi))
    w = np.maximum(0.5 * (1 - np.tanh(y) ** 2) * x, 1e-6)
    return np.polynomial.polynomial.polyfit(s, p, degree, w=w)


def normal_cdf(x):
    """Φ(x) = ½(1 + erf(x/√2)), the standard normal CDF.

    float64 (and CuPy) use SciPy's erf. float32 on NumPy uses the fast path
    `normal_cdf_float32`, held to SciPy by a test (within float32 precision).
    """
    if x.dtype == np.float32 and xp_of(x) is np:
        return normal_cdf_float32(x)
    return 0.5 * (1 + erf(x / _SQRT_2))


def normal_cdf_float32(x: np.ndarray, gelu_out: np.ndarray | None = None, keep_cdf: bool = True):
    """Φ(x) in float32, ~5x faster than SciPy's float32 erf; absolute error < 1.2e-7.

    Plain formula: ½(1 + erf(x/√2)). Here ½(1 + tanh(x·P(x²))) with x
    clipped to ±6.5 and P the degree-7 polynomial `_TANH_CDF` (see
    `fit_tanh_cdf`): 20 array passes, with NumPy's vectorised tanh doing
    what erf would, instead of ~30 passes for an erfc fit (exp, reciprocal,
    a sign select). Far in the negative tail the error is absolute, not
    relative (Φ(−5) ≈ 2.9e-7 comes out within 3e-8), as in torch's float32
    GELU. Computed in blocks that stay in cache, in place. With `gelu_out`
    (a C-contiguous float32 array shaped like x), also writes GELU(x) = x·Φ(x)
    there, block by block while the block is in cache; with `keep_cdf=False`
    too, Φ only passes through one block-sized buffer and None is returned.
    """
    f = np.float32
    fx = x.reshape(-1)
    fg = gelu_out.reshape(-1) if gelu_out is not None else None
    if fg is not None and not keep_cdf:
        out, fo = None, np.empty(min(_BLOCK, fx.size), dtype=x.dtype)  # one block, reused
    else:
        out = np.empty(x.shape, dtype=x.dtype)  # C order, so reshape(-1) is a view (empty_like keeps strides)
        fo = out.reshape(-1)
    cbuf, sbuf = np.empty((2, min(_BLOCK, fx.size)), dtype=x.dtype)  # block temporaries, allocated once
    for start in range(0, fx.size, _BLOCK):
        xb = fx[start:start + _BLOCK]
        ob = fo[start:start + _BLOCK] if out is not None else fo[:xb.size]
        c = np.clip(xb, f(-_TANH_CLIP), f(_TANH_CLIP), out=cbuf[:xb.size])
        sq = np.multiply(c, c, out=sbuf[:xb.size])  # s = x²
        np.multiply(sq, f(_TANH_CDF[7]), out=ob)
        for a in _TANH_CDF[6:0:-1]:             # Horner
            ob += f(a)
            ob *= sq
        ob += f(_TANH_CDF[0])                   # P(x²)
        ob *= c
        np.tanh(ob, out=ob)
        ob *= f(0.5)
        ob += f(0.5)                            # ½(1 + tanh(x·P(x²)))
        if fg is not None:
            np.multiply(xb, ob, out=fg[start:start + _BLOCK])  # x·Φ(x)
    return out


class GELU(Function):
    """GELU(x) = x Φ(x); approximate='tanh' uses 0.5x(1 + tanh(√(2/π)(x + 0.044715x³))).

    d/dx x Φ(x) = Φ(x) + x φ(x), φ(x) = e^(−x²/2)/√(2π).
    """

    def forward(self, a, approximate="none"):
        xp = xp_of(a)
        self.approximate = approximate
        self.save_for_backward(a)
        if approximate == "tanh":
            f = a.dtype.type
            t = xp.multiply(a, a, out=xp.empty_like(a))  # in place: t = tanh(√(2/π)(a + 0.044715a³))
            t *= f(0.044715)
            t += f(1)
            t *= a
            t *= f(_SQRT_2_OVER_PI)
            xp.tanh(t, out=t)
            self.t = t
            out = t + f(1)
            out *= a
            out *= f(0.5)
            return out
        if a.dtype == np.float32 and xp is np:  # the blocked float32 kernel (plain formula below)
            out = np.empty(a.shape, dtype=a.dtype)
            # Φ is kept only if a backward will read it (not under no_grad / for inference)
            self.cdf = normal_cdf_float32(a, gelu_out=out, keep_cdf=any(self.needs_input_grad))
            return out
        cdf = normal_cdf(a)
        self.cdf = cdf
        return a * cdf

    def backward(self, grad):
        (x,) = self.saved
        xp = xp_of(x)
        if self.approximate == "tanh":
            # d/dx = ½(1 + t) + ½x(1 − t²)·√(2/π)(1 + 3·0.044715x²), in place in two temporaries
            t, f = self.t, x.dtype.type
            d = xp.multiply(x, x, out=xp.empty_like(x))
            d *= f(3 * 0.044715 * _SQRT_2_OVER_PI)
            d += f(_SQRT_2_OVER_PI)                # √(2/π)(1 + 3·0.044715x²)
            s = xp.multiply(t, t, out=xp.empty_like(t))
            xp.subtract(f(1), s, out=s)
            s *= x
            s *= d
            s *= f(0.5)
            xp.multiply(t, f(0.5), out=d)
            d += f(0.5)
            s += d
            s *= grad
            return (s,)
        d = xp.multiply(x, x, out=xp.empty_like(x))  # in place from here: one temporary
        d *= x.dtype.type(-0.5)
        xp.exp(d, out=d)
        d *= x.dtype.type(_INV_SQRT_2PI)   # φ(x)
        d *= x
        d += self.cdf                      # Φ(x) + x φ(x)
        d *= grad
        return (d,)


class SiLU(Function):
    def forward(self, a):
        s = sigmoid_array(a)
        self.save_for_backward(a, s)
        return a * s

    def backward(self, grad):
        a, s = self.saved
        return (grad * s * (1 + a * (1 - s)),)


class LogSigmoid(Function):
    """log σ(x) = min(x, 0) − log(1 + e^−|x|), finite for any x; d/dx = 1 − σ(x) = σ(−x)."""

    def forward(self, a):
        xp = xp_of(a)
        self.save_for_backward(a)
        return xp.minimum(a, 0) - xp.log1p(xp.exp(-xp.abs(a)))

    def backward(self, grad):
        (a,) = self.saved
        return (grad * sigmoid_array(-a),)
