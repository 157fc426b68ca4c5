"""Double backward: the pass behind `autograd.grad(..., create_graph=True)`.

`engine.run_graph` computes gradients as arrays, with each op's array `backward`; nothing it does is
recorded. Here every gradient is a Tensor, computed under grad mode by the op's `backward_graph(g)`: the
same formula as its `backward`, written with Tensor operations (it sits next to the array one, in the op's
file), so the gradients come out with a graph of their own and can be differentiated again (a gradient
penalty, a Hessian-vector product, a third derivative).

What a `backward_graph` reads is rebuilt as graph-connected tensors: `graph_input(fn, i, array)` is the
op's i-th input (the leaf itself, or a tensor made by the input's creator Function, holding the array the
op saved), `graph_output(fn, array)` its output (made by `fn` itself). Differentiating a gradient
therefore runs back through the first graph too, as in torch: that is why `retain_graph` defaults to
True with `create_graph`. Gradients reaching one node are summed with Tensor addition, broadcasting is
undone with a Tensor sum (`unbroadcast_graph`, as `function.unbroadcast` for arrays).

An op without a `backward_graph` (written in the class that writes its `backward`) is refused before
anything runs, naming the op: never a gradient that silently lacks a term. The plain backward
(`engine.run_backward`, every training step) does not come here.
"""
from __future__ import annotations

import numpy as np

from seqlab.autograd import engine
from seqlab.autograd import function as _function
from seqlab.autograd import versions as _versions
from seqlab.autograd.function import Function, enable_grad


def _tensor():
    return _function._Tensor or _function._tensor_class()


def graph_input(fn: Function, i: int, array):
    """The i-th input of `fn` as a tensor in the graph: the leaf itself, a tensor made by the input's
    creator (holding `array`, the value fn saved), or, for an input that needs no gradient, the constant
    (a Tensor without a graph; a Python or NumPy scalar as it is)."""
    parent = fn.parents[i] if i < len(fn.parents) else None
    if parent is None:
        if array is None or isinstance(array, (int, float, bool, np.generic)):
            return array
        return _tensor()._from_op(array, None)
    if isinstance(parent, Function):
        return _tensor()._from_op(array, parent)
    return parent  # a leaf tensor stands for itself


def graph_output(fn: Function, array):
    """The output of `fn` (its value `array`, e.g. tanh's saved result) as a tensor made by `fn`."""
    return _tensor()._from_op(array, fn)


def constant(array):
    """`array` as a Tensor outside any graph (a mask or a factor a backward_graph multiplies by)."""
    return _tensor()._from_op(array, None)


def unbroadcast_graph(g, shape: tuple):
    """`g` (a Tensor) summed over the axes broadcasting expanded, back to `shape` (function.unbroadcast's rule)."""
    if g.shape == tuple(shape):
        return g
    extra = g.ndim - len(shape)
    axes = tuple(range(extra)) + tuple(
        i + extra for i, s in enumerate(shape) if s == 1 and g.shape[i + extra] != 1
    )
    if axes:
        g = g.sum(axes, keepdim=True)
    return g.reshape(tuple(shape))


def has_graph_backward(cls) -> bool:
    """True when `cls` (a Function class) has a `backward_graph` for the `backward` it runs: written in the
    same class, or in a subclass of the one that writes `backward` (an inherited one might not match)."""
    for klass in cls.__mro__:
        if "backward_graph" in klass.__dict__:
            return True
        if "backward" in klass.__dict__:
            return False
    return False


def supported_ops() -> list[str]:
    """The names of the Function classes that support create_graph=True (autograd/ops/ and whatever else
    has been imported)."""
    # some load lazily (cast, conv): imported here so theirs are listed too
    from seqlab.autograd.ops import (activation, cast, conv, conv_transpose, einsum,  # noqa: F401
                                     elementwise, fused, matmul, movement, pointwise, reduce, scan, scatter)
    names, stack = set(), [Function]
    while stack:
        cls = stack.pop()
        for sub in cls.__subclasses__():
            stack.append(sub)
            if has_graph_backward(sub):
                names.add(sub.__name__)
    return sorted(names)


def unsupported_message(fn) -> str:
    cls = type(fn)
    why = getattr(fn, "no_graph_backward", None)
    if why is not None:  # the class has one, but not for this kind of node (a reentrant checkpoint)
        return (f"create_graph=True: seqlab's op '{cls.__name__}' ({cls.__module__}) has no differentiable "
                f"backward here: {why}")
    return (f"create_graph=True: seqlab's op '{cls.__name__}' ({cls.__module__}) has no differentiable "
            f"backward yet (backward_graph); seqlab.autograd.higher_order.supported_ops() lists the "
            f"{len(supported_ops())} ops that have one")


def _as_tensor(g):
    return g if isinstance(g, _tensor()) else constant(g)


def _run_hooks_graph(hooks: list, g):
    """As engine._run_hooks, on a gradient that is a Tensor: a hook sees it (graph and all) and may replace it."""
    Tensor = _tensor()
    for hook in list(hooks):
        out = hook(g)
        if out is None:
            continue
        new = out if isinstance(out, Tensor) else Tensor._from_op(out, None)
        if tuple(new.shape) != tuple(g.shape):
            raise RuntimeError(f"hook {getattr(hook, '__name__', hook)!r} returned a gradient of shape "
                               f"{tuple(new.shape)}, expected {tuple(g.shape)}")
        g = new if new.dtype == g.dtype else new.astype(g.dtype)
    return g


def _add(grads: dict, key: int, g) -> None:
    prev = grads.get(key)
    grads[key] = g if prev is None else prev + g


def _retain(made, g) -> None:
    """retain_grad(): the tensor's .grad gets the value (an array, as always in seqlab), not the graph."""
    arr = g.data
    made.grad = arr.copy() if made.grad is None else made.grad + arr


def run_graph_differentiable(roots: list, root_grads: list, retain_graph: bool, targets: list) -> list:
    """engine.run_graph with `targets`, every gradient a Tensor with a graph (create_graph=True).

    `root_grads` are Tensors (a grad_output that requires grad is differentiated through too). Returns
    one Tensor per target, or None where the target was not reached. As run_graph: only the ops between
    the roots and the targets run (and only those are freed without `retain_graph`); hooks and
    retain_grad see the gradients on those paths.
    """
    starts = [r if r._ctx is None else r._ctx for r in roots]
    order = engine.topological_order(*starts)  # a freed graph: the "second time" error, before anything runs
    keys = [id(t if t._ctx is None else t._ctx) for t in targets]
    wanted, runs, needed = set(keys), set(), set(keys)
    for node in order:  # inputs first
        if isinstance(node, Function) and any(needs and id(p) in needed
                                               for p, needs in zip(node.parents, node.needs_input_grad)):
            runs.add(id(node))
            needed.add(id(node))
    order = [node for node in order if id(node) in needed]
    for node in order:  # refuse an op without a differentiable backward before computing (or freeing) anything
        if id(node) in runs and (not has_graph_backward(type(node)) or getattr(node, "no_graph_backward", None)):
            raise RuntimeError(unsupported_message(node))
    grads: dict = {}
    for start, root, g in zip(starts, roots, root_grads):
        _add(grads, id(start), g)
    captured: dict = {}
    with enable_grad():
        for node in reversed(order):
            key = id(node)
            g = grads.pop(key, None)
            if not isinstance(node, Function):  # a leaf tensor: a target (others are pruned above)
                if g is None:
                    continue
                hooks = getattr(node, "_hooks", None)
                if hooks:
                    g = _run_hooks_graph(hooks, g)
                captured[key] = g
                continue
            fn = node
            runs_fn = key in runs
            if g is None:
                if runs_fn and not retain_graph:
                    engine._release(fn)
                continue
            hooks = fn.__dict__.get("_hooks")
            if hooks:
                g = _run_hooks_graph(hooks, g)
            made = fn.out_ref() if fn.out_ref is not None else None
            if made is not None and made._retains_grad:
                _retain(made, g)
            del made
            if key in wanted:
                captured[key] = g
            if not runs_fn:
                continue
            if _versions._clock:
                _versions.check(fn)
            parent_grads = fn.backward_graph(g)
            if not isinstance(parent_grads, tuple):
                parent_grads = (parent_grads,)
            if engine._check_nan:
                engine._raise_on_nan(fn, tuple(None if pg is None else _as_tensor(pg).data for pg in parent_grads))
            for parent, needs, pg in zip(fn.parents, fn.needs_input_grad, parent_grads):
                if not needs or pg is None or id(parent) not in needed:
                    continue
                if isinstance(parent, Function):
                    shape, dtype = parent.out_shape, parent.out_dtype
                else:
                    shape, dtype = parent.data.shape, parent.data.dtype
                pg = unbroadcast_graph(_as_tensor(pg), shape)
                if pg.dtype != dtype:
                    pg = pg.astype(dtype)
                _add(grads, id(parent), pg)
            parent_grads = pg = g = None
            if not retain_graph:
                engine._release(fn)
    return [captured.get(key) for key in keys]
