"""Reverse-mode traversal: an iterative topological sort, then one pass back.

Iterative on purpose (micrograd's recursive sort overflows the stack on an
RNN unrolled over thousands of steps). After the pass the graph is freed:
each non-leaf tensor forgets its creator, so the arrays saved for backward
can be reclaimed.
"""
from __future__ import annotations

from seqlab.autograd.function import unbroadcast


def topological_order(root) -> list:
    """Tensors reachable from `root` that need gradients, inputs before outputs."""
    order, visited = [], set()
    stack = [(root, False)]
    while stack:
        node, expanded = stack.pop()
        if expanded:
            order.append(node)
            continue
        if id(node) in visited:
            continue
        visited.add(id(node))
        stack.append((node, True))
        fn = node._ctx
        if fn is not None:
            for parent, needs in zip(fn.parents, fn.needs_input_grad):
                if needs and id(parent) not in visited:
                    stack.append((parent, False))
    return order


def run_backward(root, grad, retain_graph: bool = False) -> None:
    order = topological_order(root)
    grads = {id(root): grad}
    for node in reversed(order):
        g = grads.pop(id(node), None)
        fn = node._ctx
        if g is None:
            continue
        if fn is None:  # a leaf: accumulate into .grad
            if node.grad is None:
                # a copy: backward may hand the same array to several inputs
                node.grad = g.copy()
            else:
                node.grad = node.grad + g
            continue
        if node._retains_grad:
            node.grad = g.copy() if node.grad is None else node.grad + g
        parent_grads = fn.backward(g)
        if not isinstance(parent_grads, tuple):
            parent_grads = (parent_grads,)
        for parent, needs, pg in zip(fn.parents, fn.needs_input_grad, parent_grads):
            if not needs or pg is None:
                continue
            pg = unbroadcast(pg, parent.data.shape)
            if pg.dtype != parent.data.dtype:
                pg = pg.astype(parent.data.dtype)
            key = id(parent)
            prev = grads.get(key)
            grads[key] = pg if prev is None else prev + pg
        if not retain_graph:
            node._ctx = None
