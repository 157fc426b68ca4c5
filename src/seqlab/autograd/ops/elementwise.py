"""Element-wise primitives. Inputs may broadcast; the engine undoes it.

Each `backward_graph` is its `backward` written with Tensor ops, for create_graph=True (higher_order.py).
"""
from __future__ import annotations

import numpy as np

from seqlab import kernels
from seqlab.autograd.function import Function
from seqlab.autograd.higher_order import constant, graph_input, graph_output
from seqlab.backend import xp_of


class Add(Function):
    def forward(self, a, b):
        fast = kernels.add(a, b)  # a model's residual adds, on more than one thread
        return a + b if fast is None else fast

    def backward(self, grad):
        return grad, grad

    def backward_graph(self, g):
        return g, g


class Sub(Function):
    def forward(self, a, b):
        return a - b

    def backward(self, grad):
        return grad, -grad

    def backward_graph(self, g):
        return g, (-g if self.needs_input_grad[1] else None)


class Clone(Function):
    """A copy with its own memory (the input's layout kept, as torch's clone); the gradient passes through.
    It saves nothing, so the input may be changed in place after it (torch's recipe before an Embedding
    with max_norm renormalizes its weight)."""

    def forward(self, a):
        return clone_array(a)

    def backward(self, grad):
        return (grad,)

    def backward_graph(self, g):
        return (g,)


def clone_array(a):
    """A copy of `a` in its own memory, laid out as torch's clone(preserve_format): a dense array's strides
    kept (a transpose stays a transpose), a broadcast one (a stride 0) made contiguous."""
    if 0 in getattr(a, "strides", ()):
        return a.copy(order="C")
    return a.copy(order="K")


class Mul(Function):
    def forward(self, a, b):
        needs = self.needs_input_grad
        if True in needs:  # only the operand a gradient reads: the other may change in place afterwards
            self.save_for_backward(a if needs[1] else None, b if needs[0] else None)
        return a * b

    def backward(self, grad):
        a, b = self.saved
        return (grad * b if self.needs_input_grad[0] else None,
                grad * a if self.needs_input_grad[1] else None)

    def backward_graph(self, g):
        a, b = self.saved
        return (g * graph_input(self, 1, b) if self.needs_input_grad[0] else None,
                g * graph_input(self, 0, a) if self.needs_input_grad[1] else None)


class Div(Function):
    def forward(self, a, b):
        self.save_for_backward(a, b)
        return a / b

    def backward(self, grad):
        a, b = self.saved
        ga = grad / b
        gb = -ga * a / b if self.needs_input_grad[1] else None
        return ga, gb

    def backward_graph(self, g):
        a, b = self.saved
        a, b = graph_input(self, 0, a), graph_input(self, 1, b)
        ga = g / b
        gb = -ga * a / b if self.needs_input_grad[1] else None
        return ga, gb


class RoundedDiv(Function):
    """a / b rounded down ("floor": Python's and NumPy's floor_divide, exact, where floor(a / b) can be one
    more) or toward zero ("trunc"), torch.div's rounding modes. Piecewise constant: both gradients are 0, as
    torch's (a primitive so that they are exactly 0, also where b is 0)."""

    def forward(self, a, b, mode: str):
        xp = xp_of(b if isinstance(a, np.generic) else a)
        if mode == "floor":
            return xp.asarray(xp.floor_divide(a, b))
        if xp.result_type(a, b).kind == "f":
            return xp.asarray(xp.trunc(a / b))
        q = xp.floor_divide(a, b)  # integers: floor, then up by one where a negative quotient was not exact
        return xp.asarray(q + ((q < 0) & (q * b != a)))

    def backward(self, grad):
        zero = xp_of(grad).zeros_like(grad)
        return tuple(zero if need else None for need in self.needs_input_grad)

    def backward_graph(self, g):
        zero = constant(xp_of(g.data).zeros_like(g.data))
        return tuple(zero if need else None for need in self.needs_input_grad)


class Neg(Function):
    def forward(self, a):
        return -a

    def backward(self, grad):
        return (-grad,)

    def backward_graph(self, g):
        return (-g,)


class Pow(Function):
    """a ** p for a constant exponent p (a tensor exponent: `PowTensor`).

    The gradient p·a^(p−1) is 0 for p = 0 (torch's; the formula reads 0·0^(−1) = NaN at a = 0).
    `zero_at_zero`: also 0 where a = 0 (a norm's subgradient at the zero vector, as torch's norm).
    """

    def forward(self, a, p, zero_at_zero: bool = False):
        self.save_for_backward(a)
        self.p, self.zero_at_zero = p, zero_at_zero
        return a ** p

    def backward(self, grad):
        (a,) = self.saved
        p = self.p
        xp = xp_of(grad)
        if p == 0:
            return xp.zeros_like(grad), None
        if self.zero_at_zero:
            safe = xp.where(a == 0, a.dtype.type(1), a)
            return xp.where(a == 0, grad.dtype.type(0), grad * p * safe ** (p - 1)), None
        return grad * p * a ** (p - 1), None

    def backward_graph(self, g):
        (a,) = self.saved
        p = self.p
        if p == 0:
            return constant(xp_of(a).zeros(g.shape, dtype=g.dtype)), None
        x = graph_input(self, 0, a)
        if self.zero_at_zero:
            at_zero = a == 0
            safe = Where.apply(at_zero, a.dtype.type(1), x)
            return Where.apply(at_zero, g.dtype.type(0), g * p * Pow.apply(safe, p - 1)), None
        return g * p * Pow.apply(x, p - 1), None


class PowTensor(Function):
    """a ** b, both tensors (broadcast), computed as a power, not exp(b·log a): a negative base with an
    integer exponent has its value ((−2)² = 4) and gradient, 0 ** 0 = 1, as in torch.

    d/da = b·a^(b−1) (0 where b = 0); d/db = a^b·log a, 0 where a = 0 and b >= 0 (torch's convention;
    NaN for a negative base, whose log is not real).
    """

    def forward(self, a, b):
        xp = xp_of(a)
        out = xp.power(a, b)
        self.save_for_backward(a, b, out)
        return out

    def backward(self, grad):
        a, b, out = self.saved
        xp = xp_of(grad)
        zero = grad.dtype.type(0)
        ga = gb = None
        if self.needs_input_grad[0]:
            with np.errstate(divide="ignore", invalid="ignore"):
                ga = xp.where(b == 0, zero, grad * b * xp.power(a, b - 1))
        if self.needs_input_grad[1]:
            with np.errstate(divide="ignore", invalid="ignore"):
                gb = xp.where((a == 0) & (b >= 0), zero, grad * out * xp.log(a))
        return ga, gb

    def backward_graph(self, g):
        a, b, out = self.saved
        x, y = graph_input(self, 0, a), graph_input(self, 1, b)
        zero = g.dtype.type(0)
        ga = gb = None
        with np.errstate(divide="ignore", invalid="ignore"):
            if self.needs_input_grad[0]:
                ga = Where.apply(b == 0, zero, g * y * PowTensor.apply(x, y - 1))
            if self.needs_input_grad[1]:
                gb = Where.apply((a == 0) & (b >= 0), zero, g * graph_output(self, out) * Log.apply(x))
        return ga, gb


class Exp(Function):
    def forward(self, a):
        out = xp_of(a).exp(a)
        self.save_for_backward(out)
        return out

    def backward(self, grad):
        return (grad * self.saved[0],)

    def backward_graph(self, g):
        return (g * graph_output(self, self.saved[0]),)


class Log(Function):
    def forward(self, a):
        self.save_for_backward(a)
        return xp_of(a).log(a)

    def backward(self, grad):
        return (grad / self.saved[0],)

    def backward_graph(self, g):
        return (g / graph_input(self, 0, self.saved[0]),)


class Sin(Function):
    """sin a; d/da = cos a."""

    def forward(self, a):
        self.save_for_backward(a)
        return xp_of(a).sin(a)

    def backward(self, grad):
        return (grad * xp_of(grad).cos(self.saved[0]),)

    def backward_graph(self, g):
        return (g * Cos.apply(graph_input(self, 0, self.saved[0])),)


class Cos(Function):
    """cos a; d/da = −sin a."""

    def forward(self, a):
        self.save_for_backward(a)
        return xp_of(a).cos(a)

    def backward(self, grad):
        return (-grad * xp_of(grad).sin(self.saved[0]),)

    def backward_graph(self, g):
        return (-g * Sin.apply(graph_input(self, 0, self.saved[0])),)


class Sqrt(Function):
    """√a; `zero_at_zero`: the gradient is 0 where √a = 0 instead of inf (a 2-norm's subgradient at the
    zero vector, as torch's norm gives)."""

    def forward(self, a, zero_at_zero: bool = False):
        out = xp_of(a).sqrt(a)
        self.save_for_backward(out)
        self.zero_at_zero = zero_at_zero
        return out

    def backward(self, grad):
        (out,) = self.saved
        if not self.zero_at_zero:
            return (grad / (2 * out),)
        xp = xp_of(grad)
        return (xp.where(out == 0, grad.dtype.type(0), grad / (2 * xp.where(out == 0, out.dtype.type(1), out))),)

    def backward_graph(self, g):
        (out,) = self.saved
        y = graph_output(self, out)
        if not self.zero_at_zero:
            return (g / (2 * y),)
        at_zero = out == 0
        safe = Where.apply(at_zero, out.dtype.type(1), y)
        return (Where.apply(at_zero, g.dtype.type(0), g / (2 * safe)),)


class Abs(Function):
    def forward(self, a):
        self.save_for_backward(a)
        return xp_of(a).abs(a)

    def backward(self, grad):
        return (grad * xp_of(grad).sign(self.saved[0]),)

    def backward_graph(self, g):
        return (g * constant(xp_of(g.data).sign(self.saved[0]).astype(g.dtype, copy=False)),)


class Clamp(Function):
    """Gradient flows where min <= a <= max (torch passes it at the bounds too)."""

    def forward(self, a, lo=None, hi=None):
        xp = xp_of(a)
        self.save_for_backward(a)
        self.lo, self.hi = lo, hi
        return xp.clip(a, lo, hi)

    def _keep(self):
        """True where the input was inside [lo, hi] (bounds included): there the gradient passes."""
        (a,) = self.saved
        keep = xp_of(a).ones((), dtype=bool)
        if self.lo is not None:
            keep = keep & (a >= self.lo)
        if self.hi is not None:
            keep = keep & (a <= self.hi)
        return keep

    def backward(self, grad):
        return (grad * self._keep(),)

    def backward_graph(self, g):
        return (g * constant(self._keep().astype(g.dtype)),)


class Maximum(Function):
    """Element-wise max; ties split the gradient equally, as torch."""

    def forward(self, a, b):
        self.save_for_backward(a, b)
        return xp_of(a).maximum(a, b)

    def backward(self, grad):
        a, b = self.saved
        wa = (a > b) + 0.5 * (a == b)
        return grad * wa, grad * (1 - wa)

    def backward_graph(self, g):
        a, b = self.saved
        wa = ((a > b) + 0.5 * (a == b)).astype(g.dtype)
        return g * constant(wa), g * constant(1 - wa)


class Where(Function):
    def forward(self, cond, a, b):
        self.save_for_backward(cond)
        return xp_of(b if isinstance(a, np.generic) else a).where(cond, a, b)  # a may be a NumPy scalar

    def backward(self, grad):
        (cond,) = self.saved
        zero = grad.dtype.type(0)
        xp = xp_of(grad)
        return None, xp.where(cond, grad, zero), xp.where(cond, zero, grad)

    def backward_graph(self, g):
        (cond,) = self.saved
        zero = g.dtype.type(0)
        return (None, Where.apply(cond, g, zero) if self.needs_input_grad[1] else None,
                Where.apply(cond, zero, g) if self.needs_input_grad[2] else None)


class MaskedFill(Function):
    """out = a with `value` where mask is True; no gradient flows through filled places."""

    def forward(self, a, mask, value):
        self.save_for_backward(mask)
        return xp_of(a).where(mask, a.dtype.type(value), a)

    def backward(self, grad):
        (mask,) = self.saved
        return xp_of(grad).where(mask, grad.dtype.type(0), grad), None, None

    def backward_graph(self, g):
        (mask,) = self.saved
        return MaskedFill.apply(g, mask, 0), None, None


class Remainder(Function):
    """a % b with the divisor's sign (Python's and torch's `remainder`); the gradient is torch's:
    grad for a, −grad·floor(a / b) for b."""

    def forward(self, a, b):
        if len(self.needs_input_grad) > 1 and self.needs_input_grad[1]:
            self.save_for_backward(a, b)
        return xp_of(b if isinstance(a, np.generic) else a).remainder(a, b)

    def backward(self, grad):
        if not self.needs_input_grad[1]:
            return grad, None
        a, b = self.saved
        return (grad if self.needs_input_grad[0] else None), -grad * xp_of(grad).floor_divide(a, b)

    def backward_graph(self, g):
        if not self.needs_input_grad[1]:
            return g, None
        a, b = self.saved
        return (g if self.needs_input_grad[0] else None), -g * constant(xp_of(g.data).floor_divide(a, b))
