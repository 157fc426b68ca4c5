"""Primitives of tensor_more.py: tan and the inverse hyperbolic functions, and scatter_reduce (behind
scatter_reduce and index_reduce).

tan, asinh, acosh and atanh are primitives for precision: log(a + √(a² + 1)) cancels for negative a, and sin/cos
rounds twice. scatter_reduce is one because its amax/amin/prod gradients need the forward's result and the
count of ties per place, which no composition of the existing ops gives without a dense one-hot array.
"""
from __future__ import annotations

import numpy as np

from seqlab.autograd.function import Function
from seqlab.autograd.higher_order import graph_input, graph_output
from seqlab.autograd.ops.elementwise import Sqrt
from seqlab.backend import xp_of


class Tan(Function):
    """tan a; d/da = 1 + tan² a."""

    def forward(self, a):
        out = xp_of(a).tan(a)
        self.save_for_backward(out)
        return out

    def backward(self, grad):
        (out,) = self.saved
        return (grad * (1 + out * out),)

    def backward_graph(self, g):
        out = graph_output(self, self.saved[0])
        return (g * (1 + out * out),)


class Asinh(Function):
    """arsinh a; d/da = 1 / √(a² + 1)."""

    def forward(self, a):
        self.save_for_backward(a)
        return xp_of(a).arcsinh(a)

    def backward(self, grad):
        (a,) = self.saved
        return (grad / xp_of(grad).sqrt(a * a + 1),)

    def backward_graph(self, g):
        a = graph_input(self, 0, self.saved[0])
        return (g / Sqrt.apply(a * a + 1),)


class Acosh(Function):
    """arcosh a on [1, ∞); d/da = 1 / √((a − 1)(a + 1))."""

    def forward(self, a):
        self.save_for_backward(a)
        return xp_of(a).arccosh(a)

    def backward(self, grad):
        (a,) = self.saved
        return (grad / xp_of(grad).sqrt((a - 1) * (a + 1)),)

    def backward_graph(self, g):
        a = graph_input(self, 0, self.saved[0])
        return (g / Sqrt.apply((a - 1) * (a + 1)),)


class Atanh(Function):
    """artanh a on (−1, 1); d/da = 1 / (1 − a²)."""

    def forward(self, a):
        self.save_for_backward(a)
        return xp_of(a).arctanh(a)

    def backward(self, grad):
        (a,) = self.saved
        return (grad / (1 - a * a),)

    def backward_graph(self, g):
        a = graph_input(self, 0, self.saved[0])
        return (g / (1 - a * a),)


REDUCTIONS = ("sum", "prod", "mean", "amax", "amin")


class ScatterReduce(Function):
    """A copy of `a` with each `values[j]` reduced into the place `index[j]` (a tuple of coordinate arrays that
    broadcast to values' shape), by sum, prod, mean, amax or amin; `include_self` says whether a's own value at a
    place takes part (a place nothing is scattered to keeps it either way). Integer means round down, as torch.

    Gradients, as torch's: sum and mean pass the gradient (divided by the count for mean) to every member of a
    place; amax/amin split it evenly among the members equal to the result; prod gives each member the product of
    the others (0 where two or more members are 0)."""

    def forward(self, a, values, index, reduce: str, include_self: bool = True):
        xp = xp_of(a)
        self.index, self.reduce, self.include_self = index, reduce, include_self
        values = xp.broadcast_to(values, xp.broadcast_shapes(*[i.shape for i in index], values.shape)) \
            if index else values
        out = a.copy()
        if reduce in ("sum", "mean"):
            if not include_self:
                out[index] = 0
            xp.add.at(out, index, values)
            if reduce == "mean":
                count = xp.ones(a.shape, dtype=np.int64)
                if not include_self:
                    count[index] = 0
                xp.add.at(count, index, 1)
                count = xp.maximum(count, 1)
                self.count = count
                out = (out // count) if a.dtype.kind in "biu" else (out / count)
                out = out.astype(a.dtype, copy=False)
        elif reduce == "prod":
            if not include_self:
                out[index] = 1
            xp.multiply.at(out, index, values)
        else:
            ufunc = xp.maximum if reduce == "amax" else xp.minimum
            if not include_self:
                kind = a.dtype.kind
                out[index] = (-np.inf if reduce == "amax" else np.inf) if kind == "f" else \
                    (np.iinfo(a.dtype).min if reduce == "amax" else np.iinfo(a.dtype).max) if kind in "iu" else \
                    (reduce == "amin")
            ufunc.at(out, index, values)
        self.save_for_backward(a, values, out)
        return out

    def _self_member(self, a):
        """Whether a's element at each place takes part in its reduction."""
        member = np.ones(a.shape, dtype=bool)
        if not self.include_self:
            member[self.index] = False
        return member

    def backward(self, grad):
        a, values, out = self.saved
        xp = xp_of(grad)
        index, member = self.index, self._self_member(a)
        if self.reduce in ("sum", "mean"):
            g = grad / self.count if self.reduce == "mean" else grad
            return xp.where(member, g, 0).astype(grad.dtype), g[index]
        if self.reduce == "prod":
            zeros = xp.where(member & (a == 0), 1, 0)  # zero members per place
            xp.add.at(zeros, index, (values == 0).astype(zeros.dtype))
            nonzero = xp.where(member & (a != 0), a, 1).astype(a.dtype)  # product of the nonzero members
            xp.multiply.at(nonzero, index, xp.where(values == 0, 1, values).astype(a.dtype))

            def others(x, z, p, g):  # product of the other members of x's place, times the gradient
                with np.errstate(divide="ignore", invalid="ignore"):
                    return g * xp.where(x != 0, xp.where(z > 0, 0, p / xp.where(x == 0, 1, x)),
                                        xp.where(z == 1, p, 0))

            ga = xp.where(member, others(a, zeros, nonzero, grad), 0).astype(grad.dtype)
            return ga, others(values, zeros[index], nonzero[index], grad[index])
        hit_a = member & (a == out)
        ties = hit_a.astype(grad.dtype)
        hit_v = values == out[index]
        xp.add.at(ties, index, hit_v.astype(grad.dtype))
        g = grad / xp.maximum(ties, 1)
        return xp.where(hit_a, g, 0).astype(grad.dtype), xp.where(hit_v, g[index], 0).astype(grad.dtype)
