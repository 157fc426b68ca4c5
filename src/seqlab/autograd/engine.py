"""Reverse-mode traversal: an iterative topological sort, then one pass back.

Iterative on purpose (micrograd's recursive sort overflows the stack on an
RNN unrolled over thousands of steps). After the pass the graph is freed:
each non-leaf tensor forgets its creator, so the arrays saved for backward
can be reclaimed; backpropagating through a freed graph again is an error
(as in torch) instead of a silent zero gradient.

Gradients reaching one tensor from several uses are summed into one buffer.
A buffer the engine allocated itself ("owned") is added to in place; an
array that came from an op's backward may be shared (Add hands the same
array to both inputs), so it is copied before the first in-place add.

The first backward of a process also asks malloc to keep freed memory for
the next step instead of returning it to the OS (see `memory.py`).
"""
from __future__ import annotations

import sys

import numpy as np

from seqlab.autograd.function import IndexGrad, unbroadcast
from seqlab.autograd.memory import retain_freed_memory_once


class _Freed:
    """Stands in for the creator of a tensor whose graph was freed by backward()."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<freed graph>"


FREED = _Freed()


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
        if fn is FREED:
            raise RuntimeError("trying to backward through a graph a second time: backward() freed it; "
                               "pass retain_graph=True to the first call, or detach() the tensor you reuse")
        if fn is not None:
            for parent, needs in zip(fn.parents, fn.needs_input_grad):
                if needs and id(parent) not in visited:
                    stack.append((parent, False))
    return order


def _fresh(arr) -> bool:
    """True when `arr` owns its memory, or is a view (a reshape) of an array nothing else holds."""
    base = getattr(arr, "base", 0)
    if base is None:
        return True
    # CPython: the view, our local name and getrefcount's argument; anything more is another holder
    return isinstance(arr, np.ndarray) and isinstance(base, np.ndarray) and base.base is None \
        and sys.getrefcount(base) <= 3


def _accumulate(grads: dict, owned: set, key: int, pg, dtype, exclusive: bool = False) -> None:
    """grads[key] += pg, allocating or copying only when needed.

    `exclusive`: nothing else holds `pg` (a fresh result of an op's backward),
    so it may become the buffer itself.
    """
    prev = grads.get(key)
    if isinstance(pg, IndexGrad):
        if prev is None:
            grads[key] = pg.dense(dtype)
        else:
            if key not in owned:
                prev = prev.astype(dtype, copy=True)
                grads[key] = prev
            pg.add_into(prev)
        owned.add(key)
        return
    if isinstance(pg, np.generic):  # a NumPy scalar from a 0-d op: keep arrays (writable) only
        pg = np.asarray(pg)
        exclusive = True
    if pg.dtype != dtype:
        pg = pg.astype(dtype)
        exclusive = True
    if prev is None:
        grads[key] = pg
        if exclusive:
            owned.add(key)
    elif key in owned:
        prev += pg
    else:
        grads[key] = prev + pg
        owned.add(key)


def run_backward(root, grad, retain_graph: bool = False) -> None:
    retain_freed_memory_once()
    order = topological_order(root)
    grads = {id(root): grad}
    owned: set[int] = set()  # keys whose buffer the engine allocated (safe to add to in place)
    for node in reversed(order):
        key = id(node)
        g = grads.pop(key, None)
        is_owned = key in owned
        owned.discard(key)
        fn = node._ctx
        if fn is not None and not retain_graph:
            node._ctx = FREED  # drop the graph (and the arrays it saved) as we go
        if g is None:
            continue
        if fn is None:  # a leaf: accumulate into .grad
            if node.grad is None:
                # a copy unless the engine owns it: backward may hand one array to several inputs
                node.grad = g if is_owned else g.copy()
            else:
                node.grad = node.grad + g
            continue
        if node._retains_grad:
            node.grad = g.copy() if node.grad is None else node.grad + g
        parent_grads = fn.backward(g)
        if not isinstance(parent_grads, tuple):
            parent_grads = (parent_grads,)
        handed = [id(pg) for pg in parent_grads if pg is not None]
        for parent, needs, pg in zip(fn.parents, fn.needs_input_grad, parent_grads):
            if not needs or pg is None:
                continue
            exclusive = False
            if not isinstance(pg, IndexGrad):
                # a fresh array (not a view, not the incoming gradient, not handed to two inputs)
                # needs no defensive copy; with retain_graph the op may still hold it
                exclusive = (not retain_graph and pg is not g and handed.count(id(pg)) == 1
                             and _fresh(pg))
                out = unbroadcast(pg, parent.data.shape)
                # a broadcast summed away gives a new array (a reshape of a fresh sum)
                exclusive = exclusive if out is pg else _fresh(out)
                pg = out
            _accumulate(grads, owned, id(parent), pg, parent.data.dtype, exclusive)
