"""Special functions for `seqlab.special`: SciPy's on NumPy arrays, cupyx.scipy.special's on CuPy arrays, each
with its derivative (the derivatives are special functions too, so each `backward_graph` differentiates again):

    erfc x   = 1 − erf x                       d/dx = −(2/√π) e^{−x²}
    erfinv y : erf(erfinv y) = y               d/dy = (√π/2) e^{erfinv(y)²}
    erfcx x  = e^{x²} erfc x                   d/dx = 2x·erfcx x − 2/√π
    lgamma x = log |Γ(x)|                      d/dx = ψ(x)
    ψ⁽ⁿ⁾(x)  (n = 0: digamma)                  d/dx = ψ⁽ⁿ⁺¹⁾(x)
    sinc x   = sin(πx)/(πx), 1 at 0            d/dx = (πx·cos πx − sin πx)/(πx²), 0 at 0 (torch's formula)
    entr x   = −x log x, 0 at 0, −inf below    d/dx = −(1 + log x)
    ndtr x   = Φ(x), the normal CDF            d/dx = φ(x) = e^{−x²/2}/√(2π)
    ndtri p  = Φ⁻¹(p)                          d/dp = √(2π) e^{ndtri(p)²/2}
    log_ndtr = log Φ(x)                        d/dx = e^{−x²/2 − log Φ(x)}/√(2π)   (no overflow far left)
    i0, i1   (modified Bessel, first kind)     i0' = i1,  i1' = i0 − i1/x  (1/2 at 0)
    i0e, i1e = e^{−|x|}·i0, e^{−|x|}·i1        i0e' = i1e − sgn(x)·i0e,  i1e' = i0e − i1e·(sgn(x) + 1/x)  (1/2 at 0)
    exp2 x   = 2^x                             d/dx = 2^x · ln 2

Primitives because each is a library routine (SciPy's), not a composition of seqlab's ops.
"""
from __future__ import annotations

import math

import numpy as np

from seqlab.autograd.function import Function
from seqlab.autograd.higher_order import constant, graph_input, graph_output
from seqlab.autograd.ops.elementwise import Where
from seqlab.backend import xp_of

_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)
_SQRT_PI_OVER_2 = math.sqrt(math.pi) / 2.0
_SQRT_2PI = math.sqrt(2.0 * math.pi)
_LN2 = math.log(2.0)


def _library(a):
    """scipy.special for a NumPy array, cupyx.scipy.special for a CuPy one."""
    if xp_of(a) is np:
        import scipy.special as sp
    else:  # a GPU's (the tests run it on the CuPy stand-in)
        import cupyx.scipy.special as sp
    return sp


def scipy_special(a, name: str):
    """The special function `name` applied to `a`, in a's dtype (SciPy computes some in float64)."""
    with np.errstate(all="ignore"):
        return getattr(_library(a), name)(a).astype(a.dtype, copy=False)


def polygamma_array(n: int, a):
    """ψ⁽ⁿ⁾(a): digamma for n = 0."""
    if n == 0:
        return scipy_special(a, "digamma")
    with np.errstate(all="ignore"):
        return _library(a).polygamma(n, a).astype(a.dtype, copy=False)


class _Unary(Function):
    """One SciPy function `fn` forward; the input and output saved for the derivative."""

    fn = ""

    def forward(self, a):
        out = scipy_special(a, self.fn)
        self.save_for_backward(a, out)
        return out

    def _inputs(self):
        """(x, y) as graph tensors, for backward_graph."""
        a, out = self.saved
        return graph_input(self, 0, a), graph_output(self, out)


class Erfc(_Unary):
    fn = "erfc"

    def backward(self, grad):
        a = self.saved[0]
        return (grad * -_TWO_OVER_SQRT_PI * xp_of(a).exp(-a * a),)

    def backward_graph(self, g):
        x, _ = self._inputs()
        return (g * -_TWO_OVER_SQRT_PI * (-x * x).exp(),)


class Erfinv(_Unary):
    fn = "erfinv"

    def backward(self, grad):
        out = self.saved[1]
        with np.errstate(over="ignore"):
            return (grad * _SQRT_PI_OVER_2 * xp_of(out).exp(out * out),)

    def backward_graph(self, g):
        _, y = self._inputs()
        return (g * _SQRT_PI_OVER_2 * (y * y).exp(),)


class Erfcx(_Unary):
    fn = "erfcx"

    def backward(self, grad):
        a, out = self.saved
        with np.errstate(invalid="ignore"):
            return (grad * (2 * a * out - _TWO_OVER_SQRT_PI),)

    def backward_graph(self, g):
        x, y = self._inputs()
        return (g * (2 * x * y - _TWO_OVER_SQRT_PI),)


class Polygamma(Function):
    """ψ⁽ⁿ⁾(x): the digamma function for n = 0; lgamma's derivative and, with n + 1, its own."""

    def forward(self, a, n: int = 0):
        self.n = n
        self.save_for_backward(a)
        return polygamma_array(n, a)

    def backward(self, grad):
        return (grad * polygamma_array(self.n + 1, self.saved[0]),)

    def backward_graph(self, g):
        return (g * Polygamma.apply(graph_input(self, 0, self.saved[0]), n=self.n + 1),)


class Lgamma(_Unary):
    """log |Γ(x)|: +inf at −inf as torch's (SciPy's gammaln gives −inf there)."""

    fn = "gammaln"

    def forward(self, a):
        out = scipy_special(a, "gammaln")
        out = xp_of(a).where(a == -np.inf, a.dtype.type(np.inf), out)
        self.save_for_backward(a, out)
        return out

    def backward(self, grad):
        return (grad * polygamma_array(0, self.saved[0]),)

    def backward_graph(self, g):
        x, _ = self._inputs()
        return (g * Polygamma.apply(x, n=0),)


class Sinc(Function):
    """NaN at ±inf, as torch's (quietly)."""

    def forward(self, a):
        self.save_for_backward(a)
        with np.errstate(invalid="ignore"):
            return xp_of(a).sinc(a).astype(a.dtype, copy=False)

    def backward(self, grad):
        (a,) = self.saved
        xp = xp_of(a)
        zero = a == 0
        px = np.pi * xp.where(zero, a.dtype.type(1), a)
        with np.errstate(invalid="ignore"):
            d = (px * xp.cos(px) - xp.sin(px)) / (px * xp.where(zero, a.dtype.type(1), a))
        return (xp.where(zero, grad.dtype.type(0), grad * d),)

    def backward_graph(self, g):
        a = self.saved[0]
        zero = a == 0
        x = Where.apply(zero, a.dtype.type(1), graph_input(self, 0, a))
        px = np.pi * x
        d = (px * px.cos() - px.sin()) / (px * x)
        return (Where.apply(zero, g.dtype.type(0), g * d),)


class Entr(Function):
    """−x log x for x > 0, 0 at 0, −inf for x < 0 (NaN stays NaN), as torch's."""

    def forward(self, a):
        self.save_for_backward(a)
        xp = xp_of(a)
        with np.errstate(all="ignore"):
            out = xp.where(a > 0, -a * xp.log(xp.where(a > 0, a, 1)), a.dtype.type(0))
            out = xp.where(a < 0, a.dtype.type(-np.inf), out)
            return xp.where(xp.isnan(a), a, out).astype(a.dtype, copy=False)

    def backward(self, grad):
        a = self.saved[0]
        with np.errstate(all="ignore"):
            return (grad * -(1 + xp_of(a).log(a)),)

    def backward_graph(self, g):
        with np.errstate(all="ignore"):
            return (g * -(1 + graph_input(self, 0, self.saved[0]).log()),)


class Ndtr(_Unary):
    fn = "ndtr"

    def backward(self, grad):
        a = self.saved[0]
        return (grad * xp_of(a).exp(-0.5 * a * a) / _SQRT_2PI,)

    def backward_graph(self, g):
        x, _ = self._inputs()
        return (g * (-0.5 * x * x).exp() / _SQRT_2PI,)


class Ndtri(_Unary):
    fn = "ndtri"

    def backward(self, grad):
        out = self.saved[1]
        with np.errstate(over="ignore"):
            return (grad * _SQRT_2PI * xp_of(out).exp(0.5 * out * out),)

    def backward_graph(self, g):
        _, y = self._inputs()
        return (g * _SQRT_2PI * (0.5 * y * y).exp(),)


class LogNdtr(_Unary):
    fn = "log_ndtr"

    def backward(self, grad):
        a, out = self.saved
        with np.errstate(over="ignore", invalid="ignore"):
            return (grad * xp_of(a).exp(-0.5 * a * a - out) / _SQRT_2PI,)

    def backward_graph(self, g):
        x, y = self._inputs()
        return (g * (-0.5 * x * x - y).exp() / _SQRT_2PI,)


class I0(_Unary):
    fn = "i0"

    def backward(self, grad):
        return (grad * scipy_special(self.saved[0], "i1"),)

    def backward_graph(self, g):
        x, _ = self._inputs()
        return (g * I1.apply(x),)


class I0e(_Unary):
    fn = "i0e"

    def backward(self, grad):
        a, out = self.saved
        return (grad * (scipy_special(a, "i1e") - xp_of(a).sign(a) * out),)

    def backward_graph(self, g):
        x, y = self._inputs()
        return (g * (I1e.apply(x) - constant(xp_of(g.data).sign(self.saved[0])) * y),)


def _at_zero_half(a, grad, value_at_nonzero):
    """grad · (value_at_nonzero(x_safe)) with the limit 1/2 where x = 0 (i1' and i1e' there)."""
    xp = xp_of(a)
    zero = a == 0
    return xp.where(zero, grad * a.dtype.type(0.5), grad * value_at_nonzero(xp.where(zero, a.dtype.type(1), a)))


class I1(_Unary):
    fn = "i1"

    def backward(self, grad):
        a, out = self.saved
        return (_at_zero_half(a, grad, lambda x: scipy_special(a, "i0") - out / x),)

    def backward_graph(self, g):
        a = self.saved[0]
        zero = a == 0
        x, y = self._inputs()
        safe = Where.apply(zero, a.dtype.type(1), x)
        return (Where.apply(zero, 0.5 * g, g * (I0.apply(x) - y / safe)),)


class I1e(_Unary):
    fn = "i1e"

    def backward(self, grad):
        a, out = self.saved
        sign = xp_of(a).sign(a)
        return (_at_zero_half(a, grad, lambda x: scipy_special(a, "i0e") - out * (sign + 1 / x)),)

    def backward_graph(self, g):
        a = self.saved[0]
        zero = a == 0
        x, y = self._inputs()
        safe = Where.apply(zero, a.dtype.type(1), x)
        sign = constant(xp_of(g.data).sign(a))
        return (Where.apply(zero, 0.5 * g, g * (I0e.apply(x) - y * (sign + 1 / safe))),)


class Exp2(Function):
    def forward(self, a):
        out = xp_of(a).exp2(a)
        self.save_for_backward(out)
        return out

    def backward(self, grad):
        return (grad * self.saved[0] * _LN2,)

    def backward_graph(self, g):
        return (g * graph_output(self, self.saved[0]) * _LN2,)


class Xlog1py(Function):
    """x·log1p(y), 0 where x = 0 unless y is NaN (torch's: the entropy-like term is 0 at x = 0, even at y = −1).
    x̄ = log1p(y), 0 where x = 0 and y ≤ −1; ȳ = x / (1 + y) (NaN at x = 0, y = −1, as torch's)."""

    def forward(self, a, b):
        xp = xp_of(a)
        self.save_for_backward(a, b)
        with np.errstate(divide="ignore", invalid="ignore"):
            return xp.where((a == 0) & ~xp.isnan(b), a.dtype.type(0), a * xp.log1p(b))

    def backward(self, grad):
        a, b = self.saved
        xp = xp_of(grad)
        ga = gb = None
        with np.errstate(divide="ignore", invalid="ignore"):
            if self.needs_input_grad[0]:
                ga = xp.where((a == 0) & (b <= -1), grad.dtype.type(0), grad * xp.log1p(b))
            if len(self.needs_input_grad) > 1 and self.needs_input_grad[1]:
                gb = grad * a / (1 + b)
        return ga, gb

    def backward_graph(self, g):
        a, b = self.saved
        x, y = graph_input(self, 0, a), graph_input(self, 1, b)
        ga = gb = None
        with np.errstate(divide="ignore", invalid="ignore"):
            if self.needs_input_grad[0]:
                ga = Where.apply((a == 0) & (b <= -1), g.dtype.type(0), g * y.log1p())
            if len(self.needs_input_grad) > 1 and self.needs_input_grad[1]:
                gb = g * x / (1 + y)
        return ga, gb
