"""Activation primitives (the chapter's 7.1.2), each with its derivative."""
from __future__ import annotations

import math

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


class GELU(Function):
    """GELU(x) = x Φ(x); approximate='tanh' uses 0.5x(1 + tanh(√(2/π)(x + 0.044715x³)))."""

    def forward(self, a, approximate="none"):
        xp = xp_of(a)
        self.approximate = approximate
        self.save_for_backward(a)
        if approximate == "tanh":
            t = xp.tanh(_SQRT_2_OVER_PI * (a + 0.044715 * a * a * a))
            self.t = t
            return 0.5 * a * (1 + t)
        cdf = 0.5 * (1 + erf(a / _SQRT_2))
        self.cdf = cdf
        return a * cdf

    def backward(self, grad):
        (x,) = self.saved
        xp = xp_of(x)
        if self.approximate == "tanh":
            t = self.t
            dinner = _SQRT_2_OVER_PI * (1 + 3 * 0.044715 * x * x)
            return (grad * (0.5 * (1 + t) + 0.5 * x * (1 - t * t) * dinner),)
        pdf = _INV_SQRT_2PI * xp.exp(-0.5 * x * x)
        return (grad * (self.cdf + x * pdf),)


class SiLU(Function):
    def forward(self, a):
        s = sigmoid_array(a)
        self.save_for_backward(a, s)
        return a * s

    def backward(self, grad):
        a, s = self.saved
        return (grad * s * (1 + a * (1 - s)),)
