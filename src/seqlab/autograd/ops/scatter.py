"""Writing into a copy: `out = a; out[index] = values` (or `+=`), the one primitive behind scatter, scatter_add,
index_add, index_copy, index_fill, index_put and put.

Why a primitive: every other op here reads elements (a gather, whose backward scatters); these write them, and
a write cannot be composed from reads without building a dense one-hot array per index. The backward is the
gather of the same index, so forward and backward are one line each:

    out[index] = values        d out / d a      = grad with grad[index] = 0   (those places were overwritten)
                               d out / d values = grad[index]
    out[index] += values       d out / d a      = grad
                               d out / d values = grad[index]

as torch's formulas for scatter/index_put (derivatives.yaml). Repeated places in `index` accumulate with
`mode="add"`; with plain assignment torch leaves the winner unspecified (here the last, as NumPy assigns).
A `values` array smaller than the indexed result broadcasts; the engine's `unbroadcast` sums its gradient back.
"""
from __future__ import annotations

from seqlab.autograd.function import Function
from seqlab.backend import xp_of

MODES = (None, "add", "multiply")


def put_into(out, index, values, mode=None) -> None:
    """out[index] = values (mode None), += values ("add": repeats add up) or *= values ("multiply"), in place."""
    if mode is None:
        out[index] = values
    elif mode == "add":
        xp_of(out).add.at(out, index, values)
    else:
        xp_of(out).multiply.at(out, index, values)


class IndexPut(Function):
    """A copy of `a` with `values` written (or added, or multiplied) at `index`, as torch's index_put."""

    def forward(self, a, values, index, mode=None):
        self.index, self.mode = index, mode
        out = a.copy()  # a copy also makes a broadcast (read-only) input writable
        put_into(out, index, values, mode)
        return out

    def backward(self, grad):
        if self.mode == "multiply":
            raise RuntimeError("the derivative of scatter with reduce='multiply' is not implemented (as torch); "
                               "compute it out of the graph (under seqlab.no_grad()) or build it from gather")
        ga = gv = None
        if self.needs_input_grad[0]:
            ga = grad
            if self.mode is None:  # the overwritten places took nothing from `a`
                ga = grad.copy()
                ga[self.index] = 0
        if self.needs_input_grad[1]:
            gv = grad[self.index]  # the indexed shape; the engine sums it back to the values' shape
        return ga, gv

    def backward_graph(self, g):
        from seqlab.autograd.ops.movement import GetItem  # movement imports this module

        if self.mode == "multiply":
            self.backward(g.data)  # its error
        ga = gv = None
        if self.needs_input_grad[0]:
            ga = g if self.mode == "add" else IndexPut.apply(g, g.dtype.type(0), index=self.index)
        if self.needs_input_grad[1]:
            gv = GetItem.apply(g, index=self.index)
        return ga, gv
