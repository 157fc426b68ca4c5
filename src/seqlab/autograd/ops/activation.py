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


# Numerical Recipes' Chebyshev fit of erfc (fractional error < 1.2e-7 in exact arithmetic)
_NR_ERFC = (-1.26551223, 1.00002368, 0.37409196, 0.09678418, -0.18628806, 0.27886807, -1.13520398,
            1.48851587, -0.82215223, 0.17087277)
_BLOCK = 1 << 16


def normal_cdf(x):
    """Φ(x) = ½(1 + erf(x/√2)), the standard normal CDF.

    float64 (and CuPy) use SciPy's erf. float32 on NumPy uses the fast path
    `normal_cdf_float32`, held to SciPy by a test (within float32 precision).
    """
    if x.dtype == np.float32 and xp_of(x) is np:
        return normal_cdf_float32(x)
    return 0.5 * (1 + erf(x / _SQRT_2))


def normal_cdf_float32(x: np.ndarray, gelu_out: np.ndarray | None = None) -> np.ndarray:
    """Φ(x) in float32, ~2x faster than SciPy's float32 erf, relative error ~1e-5 in the far tail.

    Plain formula: ½(1 + erf(x/√2)). Here Φ(−|x|) = ½·erfc(|x|/√2) with
    erfc(z) = t·exp(−z² + P(t)), t = 1/(1 + z/2), P the degree-9 polynomial
    of Numerical Recipes (6.2); Φ(|x|) = 1 − Φ(−|x|). Computed in blocks that
    stay in cache, with the temporaries reused in place. With `gelu_out`
    (a C-contiguous float32 array shaped like x), also writes GELU(x) = x·Φ(x)
    there, block by block while the block is in cache.
    """
    f = np.float32
    out = np.empty(x.shape, dtype=x.dtype)  # C order, so reshape(-1) is a view (empty_like keeps x's strides)
    fx, fo = x.reshape(-1), out.reshape(-1)
    fg = gelu_out.reshape(-1) if gelu_out is not None else None
    for start in range(0, fx.size, _BLOCK):
        xb = fx[start:start + _BLOCK]
        z = np.abs(xb)
        z *= f(1 / _SQRT_2)                     # z = |x| / √2
        t = z * f(0.5)
        t += f(1)
        np.reciprocal(t, out=t)                 # t = 1 / (1 + z/2)
        p = t * f(_NR_ERFC[9])
        for c in _NR_ERFC[8:0:-1]:              # Horner
            p += f(c)
            p *= t
        p += f(_NR_ERFC[0])
        z *= z
        p -= z
        np.exp(p, out=p)
        p *= t
        p *= f(0.5)                             # Φ(−|x|)
        ob = fo[start:start + _BLOCK]
        # Φ(x) = p for x < 0, 1 − p for x ≥ 0, as p + [x ≥ 0]·(1 − 2p): arithmetic, because a
        # masked copy (np.where, copyto(where=)) on a random sign pattern mispredicts a branch
        # per element and cost 3x the whole rest of this function
        np.multiply(p, f(-2), out=ob)
        ob += f(1)                              # 1 − 2p
        np.multiply(ob, xb >= 0, out=ob)
        ob += p
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
        if a.dtype == np.float32 and xp is np:  # the blocked float32 kernels (plain formulas below)
            out = np.empty(a.shape, dtype=a.dtype)
            self.cdf = normal_cdf_float32(a, gelu_out=out)
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
