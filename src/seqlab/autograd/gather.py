"""`gather_grads`: one callback once all the gradients of several tensors are in (nn.Module's backward hooks).

torch's full backward hook needs, per module call, one moment in the backward pass when the gradients
reaching every tensor of a group (the module's inputs, or its outputs) are complete, and before any of
them flows on, so that a hook can see them all and replace them. torch does it with one identity node of
several outputs. A seqlab Function has one output, so the group is joined through a node of several
inputs instead:

    tensors t_1..t_n ──► _Gather (n inputs, a 0-d placeholder out) ──► _Alias_i (t_i's values) ──► the rest

Every alias is made from the gather node, so the engine's order (a node runs after every node that uses
its output) runs `_Gather.backward` after each alias's backward, that is after each alias's gradient is
complete (summed over all its uses). Each alias hands its gradient to the gather node and returns a
zero for the placeholder; the gather node then calls `on_grads` once with all of them and returns what
it gives back, one gradient per t_i, to the engine. Aliases no gradient reached give None.
"""
from __future__ import annotations

from typing import Callable

from seqlab.backend import xp_of
from seqlab.autograd.function import Function


class _Gather(Function):
    """The join: its inputs are the group's tensors, its output a 0-d placeholder the aliases are made from."""

    def forward(self, *arrays):
        self.slots = [None] * len(arrays)  # each alias's gradient, filled in by its backward
        self.shapes = [a.shape for a in arrays]
        return xp_of(arrays[0]).zeros((), dtype=arrays[0].dtype)

    def _run(self, graph: bool) -> tuple:
        from seqlab.autograd.tensor import Tensor

        grads, self.slots = self.slots, [None] * len(self.slots)  # a retained graph starts afresh next pass
        seen = tuple(None if g is None else g if graph else Tensor._from_op(g, None) for g in grads)
        out = self.on_grads(seen)
        if out is None:
            out = seen
        if len(out) != len(grads):  # the callback's own invariant (nn.Module checks what a user's hook returns)
            raise RuntimeError(f"gather_grads: on_grads returned {len(out)} gradients for {len(grads)} tensors")
        result = []
        for g, shape in zip(out, self.shapes):
            if g is None:
                result.append(None)
                continue
            if graph:
                g = g if isinstance(g, Tensor) else Tensor._from_op(g, None)
            else:
                # a view: the engine's _fresh sees through it whether anyone else (a hook that kept
                # grad_input) still holds the array, before it adds into it in place
                g = (g.data if isinstance(g, Tensor) else g).view()
            if tuple(g.shape) != tuple(shape):
                raise RuntimeError(f"a backward hook returned a gradient of shape {tuple(g.shape)} for a tensor "
                                   f"of shape {tuple(shape)}")
            result.append(g)
        return tuple(result)

    def backward(self, grad):
        return self._run(graph=False)

    def backward_graph(self, g):
        return self._run(graph=True)


class _Alias(Function):
    """t_i's values (the same array), made from the placeholder: its gradient goes to the gather node."""

    def forward(self, placeholder, value, gather: _Gather, index: int):
        self.gather, self.index = gather, index
        return value

    def backward(self, grad):
        self.gather.slots[self.index] = grad
        return xp_of(grad).zeros((), dtype=self.gather.out_dtype)

    def backward_graph(self, g):
        from seqlab.autograd.tensor import Tensor

        self.gather.slots[self.index] = g
        return Tensor._from_op(xp_of(g.data).zeros((), dtype=self.gather.out_dtype), None)


def gather_grads(tensors: list, on_grads: Callable) -> list:
    """Aliases of `tensors` (each requires grad, with grad mode on): the same values, for the caller to use
    instead. In a backward pass that reaches any of them, `on_grads(grads)` is called once, after every
    alias's gradient is complete and before any flows on: `grads` is a tuple with one Tensor per tensor
    (None where no gradient reached its alias); it returns None (the gradients flow on as they are) or a
    sequence of as many Tensors, arrays or None (no gradient) that flow on to `tensors` instead.
    With create_graph=True the Tensors carry their graph."""
    placeholder, gather = _Gather.apply_with_fn(*tensors)
    gather.on_grads = on_grads
    return [_Alias.apply(placeholder, value=t.data, gather=gather, index=i) for i, t in enumerate(tensors)]
