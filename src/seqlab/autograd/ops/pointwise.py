"""Element-wise math beyond `elementwise.py`: rounding, log1p/expm1, log2/log10, hyperbolic and inverse
trigonometric functions, erf, atan2, hypot and fmod (the methods of `tensor_pointwise.PointwiseMethods`).

Each is a primitive because composing it would lose precision, not because it must be: log(1 + a) rounds
1 + a first (log(1 + 1e-10) is 1.00000008e-10, not 1e-10), (e^a − e^−a)/2 cancels near 0, and log(a)/log(10)
misses exact powers (log(1000)/log(10) = 2.9999999999999996, log10(1000) = 3).

Each `backward_graph` is its `backward` written with Tensor ops, for create_graph=True (higher_order.py).
"""
from __future__ import annotations

import math

from seqlab.autograd.function import Function
from seqlab.autograd.higher_order import constant, graph_input, graph_output
from seqlab.autograd.ops.activation import erf
from seqlab.autograd.ops.elementwise import Exp, Sqrt
from seqlab.backend import xp_of

_LN2 = math.log(2.0)
_LN10 = math.log(10.0)
_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)


class Step(Function):
    """floor, ceil, trunc, round (half to even, `decimals` places) or sign: piecewise constant, so the gradient
    is 0 everywhere (torch's; the derivative at the jumps does not exist, and torch takes 0 there too)."""

    def forward(self, a, fn: str, decimals: int = 0):
        xp = xp_of(a)
        if fn == "round":
            return a.round(decimals)  # the method: CuPy has no `round` function, only `around`
        if fn == "sign":
            return xp.where(xp.isnan(a), a.dtype.type(0), xp.sign(a))  # torch's sign(NaN) is 0
        return getattr(xp, fn)(a)

    def backward(self, grad):
        return (xp_of(grad).zeros_like(grad),)

    def backward_graph(self, g):
        return (constant(xp_of(g.data).zeros_like(g.data)),)


class Log1p(Function):
    """log(1 + a); d/da = 1 / (1 + a)."""

    def forward(self, a):
        self.save_for_backward(a)
        return xp_of(a).log1p(a)

    def backward(self, grad):
        return (grad / (1 + self.saved[0]),)

    def backward_graph(self, g):
        return (g / (1 + graph_input(self, 0, self.saved[0])),)


class Expm1(Function):
    """e^a − 1; d/da = e^a = out + 1."""

    def forward(self, a):
        out = xp_of(a).expm1(a)
        self.save_for_backward(out)
        return out

    def backward(self, grad):
        return (grad * (self.saved[0] + 1),)

    def backward_graph(self, g):
        return (g * (graph_output(self, self.saved[0]) + 1),)


class Log2(Function):
    """log₂ a; d/da = 1 / (a·ln 2)."""

    def forward(self, a):
        self.save_for_backward(a)
        return xp_of(a).log2(a)

    def backward(self, grad):
        return (grad / (self.saved[0] * _LN2),)

    def backward_graph(self, g):
        return (g / (graph_input(self, 0, self.saved[0]) * _LN2),)


class Log10(Function):
    """log₁₀ a; d/da = 1 / (a·ln 10)."""

    def forward(self, a):
        self.save_for_backward(a)
        return xp_of(a).log10(a)

    def backward(self, grad):
        return (grad / (self.saved[0] * _LN10),)

    def backward_graph(self, g):
        return (g / (graph_input(self, 0, self.saved[0]) * _LN10),)


class Sinh(Function):
    """sinh a; d/da = cosh a."""

    def forward(self, a):
        self.save_for_backward(a)
        return xp_of(a).sinh(a)

    def backward(self, grad):
        return (grad * xp_of(grad).cosh(self.saved[0]),)

    def backward_graph(self, g):
        return (g * Cosh.apply(graph_input(self, 0, self.saved[0])),)


class Cosh(Function):
    """cosh a; d/da = sinh a."""

    def forward(self, a):
        self.save_for_backward(a)
        return xp_of(a).cosh(a)

    def backward(self, grad):
        return (grad * xp_of(grad).sinh(self.saved[0]),)

    def backward_graph(self, g):
        return (g * Sinh.apply(graph_input(self, 0, self.saved[0])),)


class Asin(Function):
    """arcsin a on [−1, 1]; d/da = 1 / √(1 − a²)."""

    def forward(self, a):
        self.save_for_backward(a)
        return xp_of(a).arcsin(a)

    def backward(self, grad):
        (a,) = self.saved
        return (grad / xp_of(grad).sqrt(1 - a * a),)

    def backward_graph(self, g):
        a = graph_input(self, 0, self.saved[0])
        return (g / Sqrt.apply(1 - a * a),)


class Acos(Function):
    """arccos a on [−1, 1]; d/da = −1 / √(1 − a²)."""

    def forward(self, a):
        self.save_for_backward(a)
        return xp_of(a).arccos(a)

    def backward(self, grad):
        (a,) = self.saved
        return (-grad / xp_of(grad).sqrt(1 - a * a),)

    def backward_graph(self, g):
        a = graph_input(self, 0, self.saved[0])
        return (-g / Sqrt.apply(1 - a * a),)


class Atan(Function):
    """arctan a; d/da = 1 / (1 + a²)."""

    def forward(self, a):
        self.save_for_backward(a)
        return xp_of(a).arctan(a)

    def backward(self, grad):
        (a,) = self.saved
        return (grad / (1 + a * a),)

    def backward_graph(self, g):
        a = graph_input(self, 0, self.saved[0])
        return (g / (1 + a * a),)


class Erf(Function):
    """erf a = (2/√π) ∫₀ᵃ e^(−t²) dt (SciPy's, as GELU's `activation.erf`); d/da = (2/√π)·e^(−a²)."""

    def forward(self, a):
        self.save_for_backward(a)
        return erf(a)

    def backward(self, grad):
        (a,) = self.saved
        return (grad * _TWO_OVER_SQRT_PI * xp_of(grad).exp(-a * a),)

    def backward_graph(self, g):
        a = graph_input(self, 0, self.saved[0])
        return (g * _TWO_OVER_SQRT_PI * Exp.apply(-a * a),)


class Atan2(Function):
    """The angle of the point (b, a), in (−π, π]; d/da = b / (a² + b²), d/db = −a / (a² + b²).
    `b` may be a NumPy scalar (a number beside a tensor)."""

    def forward(self, a, b):
        self.save_for_backward(a, b)
        return xp_of(a).arctan2(a, b)

    def backward(self, grad):
        a, b = self.saved
        r2 = a * a + b * b
        return (grad * b / r2 if self.needs_input_grad[0] else None,
                -grad * a / r2 if self.needs_input_grad[1] else None)

    def backward_graph(self, g):
        a, b = graph_input(self, 0, self.saved[0]), graph_input(self, 1, self.saved[1])
        r2 = a * a + b * b
        return (g * b / r2 if self.needs_input_grad[0] else None,
                -g * a / r2 if self.needs_input_grad[1] else None)


class Hypot(Function):
    """√(a² + b²) without overflow for large a, b (NumPy's hypot); d/da = a / out, d/db = b / out (NaN at
    a = b = 0, as torch's). `b` may be a NumPy scalar."""

    def forward(self, a, b):
        out = xp_of(a).hypot(a, b)
        self.save_for_backward(a, b, out)
        return out

    def backward(self, grad):
        a, b, out = self.saved
        return (grad * a / out if self.needs_input_grad[0] else None,
                grad * b / out if self.needs_input_grad[1] else None)

    def backward_graph(self, g):
        a, b, out = self.saved
        a, b, out = graph_input(self, 0, a), graph_input(self, 1, b), graph_output(self, out)
        return (g * a / out if self.needs_input_grad[0] else None,
                g * b / out if self.needs_input_grad[1] else None)


class Fmod(Function):
    """C's fmod: a − b·trunc(a / b), with the dividend's sign (`Remainder` takes the divisor's). torch's
    gradient: grad for a, −grad·trunc(a / b) for b. `b` may be a NumPy scalar."""

    def forward(self, a, b):
        if len(self.needs_input_grad) > 1 and self.needs_input_grad[1]:
            self.save_for_backward(a, b)
        return xp_of(a).fmod(a, b)

    def backward(self, grad):
        if not self.needs_input_grad[1]:
            return grad, None
        a, b = self.saved
        xp = xp_of(grad)
        return (grad if self.needs_input_grad[0] else None), -grad * xp.trunc(a / b)

    def backward_graph(self, g):
        if not self.needs_input_grad[1]:
            return g, None
        a, b = self.saved
        return (g if self.needs_input_grad[0] else None), -g * constant(xp_of(g.data).trunc(a / b))
