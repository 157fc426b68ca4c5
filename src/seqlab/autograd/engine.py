"""Reverse-mode traversal: an iterative topological sort, then one pass back.

The graph's nodes are Functions (one per recorded op; each stands for the
tensor it made) and leaf tensors, whose `.grad` is filled in. No node holds
an intermediate tensor, so an array that no backward saved is freed as soon
as the forward pass drops it (as in torch, whose graph links grad_fns).
Iterative on purpose (micrograd's recursive sort overflows the stack on an
RNN unrolled over thousands of steps). The pass frees the graph as it goes:
each Function, once its backward has run, drops what it saved and is marked
freed, and the tensor it made (if still alive) forgets it; backpropagating
through a freed graph again is an error (as in torch) instead of a silent
zero gradient.

Gradients reaching one tensor from several uses are summed into one buffer.
A buffer the engine allocated itself ("owned") is added to in place; an
array that came from an op's backward may be shared (Add hands the same
array to both inputs), so it is copied before the first in-place add.

`run_graph` is the general pass behind `autograd.grad`, `backward(inputs=...)` and detect_anomaly:
several roots, gradients captured for chosen tensors instead of accumulated into leaves, a NaN check
after each op. `run_backward`, the plain backward of every training step, keeps its own loop, so
none of that costs it anything per node. `autograd.grad(create_graph=True)` takes neither: its pass, whose
gradients are Tensors with a graph, is `higher_order.run_graph_differentiable`.

The first backward of a process also asks malloc to keep freed memory for
the next step instead of returning it to the OS (see `memory.py`).
"""
from __future__ import annotations

import contextlib
import sys

import numpy as np

from seqlab.autograd import versions as _versions
from seqlab.backend import xp_of
from seqlab.autograd.function import Function, IndexGrad, unbroadcast
from seqlab.autograd.memory import retain_freed_memory_once


class _Freed:
    """Stands in for the creator of a tensor whose graph was freed by backward()."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<freed graph>"


FREED = _Freed()
_SECOND_TIME = ("trying to backward through a graph a second time: backward() freed it; "
                "pass retain_graph=True to the first call, or detach() the tensor you reuse")
NO_DOUBLE_BACKWARD = ("backward(create_graph=True) is not supported: a .grad in seqlab is a plain array, which "
                      "holds no graph; for double backward use seqlab.autograd.grad(outputs, inputs, "
                      "create_graph=True), which returns the gradients as Tensors you can differentiate again")
_check_nan = False  # set by anomaly.set_detect_anomaly: every op's gradients are checked for NaN (run_graph)
_targeted = 0  # run_graph passes with `targets` now running (autograd.grad, backward(inputs=)); see targeted()


def targeted() -> bool:
    """True while a targeted pass (`run_graph` with `targets`: autograd.grad, backward(inputs=...)) is
    running, so an op's backward can refuse what it cannot do there (utils.checkpoint's recomputation)."""
    return _targeted > 0


def _is_freed(node) -> bool:
    return node is FREED or getattr(node, "_freed", False)


def topological_order(*roots) -> list:
    """Graph nodes reachable from the roots (Functions or leaf tensors) that need gradients, inputs first."""
    order, visited = [], set()
    stack = [(root, False) for root in reversed(roots)]
    while stack:
        node, expanded = stack.pop()
        if expanded:
            order.append(node)
            continue
        if id(node) in visited:
            continue
        if _is_freed(node):
            raise RuntimeError(_SECOND_TIME)
        visited.add(id(node))
        stack.append((node, True))
        if isinstance(node, Function):  # a leaf tensor has no inputs
            for parent, needs in zip(node.parents, node.needs_input_grad):
                if needs and id(parent) not in visited:
                    stack.append((parent, False))
    return order


class HookHandle:
    """What `Tensor.register_hook` returns: `remove()` takes the hook off (torch's RemovableHandle)."""

    def __init__(self, hooks: list, hook):
        self._hooks, self._hook = hooks, hook

    def remove(self) -> None:
        if self._hook in self._hooks:
            self._hooks.remove(self._hook)


def _run_hooks(hooks: list, g):
    """`g` after each hook of a tensor (registered with `register_hook`) has seen it, and maybe replaced it."""
    from seqlab.autograd.tensor import Tensor

    for hook in list(hooks):
        out = hook(Tensor._from_op(g, None))
        if out is None:
            continue
        new = out.data if isinstance(out, Tensor) else out
        if tuple(getattr(new, "shape", ())) != tuple(g.shape):
            raise RuntimeError(f"hook {getattr(hook, '__name__', hook)!r} returned a gradient of shape "
                               f"{tuple(getattr(new, 'shape', ()))}, expected {tuple(g.shape)}")
        g = new.astype(g.dtype, copy=False)
    return g


def _release(fn) -> None:
    """After fn's backward (no retain_graph): drop everything it saved, mark it freed, and make the
    tensor it created (if anyone still holds it) forget it."""
    t = fn.out_ref() if fn.out_ref is not None else None
    if t is not None:
        t._ctx = FREED
    fn.__dict__.clear()
    fn._freed = True


@contextlib.contextmanager
def stopping_at(tensors: list):
    """While a pass inside another op's backward runs (a non-reentrant checkpoint's, an RNN's double backward),
    each of `tensors` (a leaf, or one made by an op outside that pass) is an end of it: a pass with them as
    targets captures their gradients and goes no further, and their hooks and retain_grad are left for the
    caller's pass, which meets them next. Everything is put back afterwards."""
    kept, seen = [], set()
    for t in tensors:
        owner = t if t._ctx is None else t._ctx
        if id(owner) in seen:  # one tensor met twice: its state is kept once, before the first change
            continue
        seen.add(id(owner))
        kept.append((owner, getattr(owner, "_hooks", None), owner.needs_input_grad if t._ctx else None,
                     owner.out_ref if t._ctx else None))
        if getattr(owner, "_hooks", None) is not None:
            owner._hooks = None
        if t._ctx is not None:  # the walk stops here: the op behind is the caller's to run
            owner.needs_input_grad = (False,) * len(owner.needs_input_grad)
            owner.out_ref = None  # no retain_grad fill here
    try:
        yield
    finally:
        for owner, hooks, needs, ref in reversed(kept):
            if hooks is not None:
                owner._hooks = hooks
            if needs is not None:
                owner.needs_input_grad, owner.out_ref = needs, ref


def _fresh(arr) -> bool:
    """True when `arr` owns its memory, or is a view (a reshape) of an array nothing else holds."""
    base = getattr(arr, "base", 0)
    if base is None:
        return not isinstance(arr, np.ndarray) or arr.flags.writeable
    # a read-only view (np.broadcast_to's, as einsum's backward returns) can never be a buffer;
    # CPython: the view, our local name and getrefcount's argument; anything more is another holder
    return isinstance(arr, np.ndarray) and arr.flags.writeable and isinstance(base, np.ndarray) \
        and base.base is None and sys.getrefcount(base) <= 3


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


def run_backward(root, grad, retain_graph: bool = False, inputs=None) -> None:
    """Tensor.backward: accumulate into every leaf's .grad, or with `inputs` only into theirs (as torch).

    The loop below is the hot path (every training step); what it lacks (several roots, gradients
    captured for chosen tensors, the anomaly check) is in `run_graph`, so it pays nothing per node for them.
    """
    if inputs is not None or _check_nan:
        _backward_general(root, grad, retain_graph, inputs)
        return
    retain_freed_memory_once()
    start = root if root._ctx is None else root._ctx
    order = topological_order(start)
    grads = {id(start): grad}
    owned: set[int] = set()  # keys whose buffer the engine allocated (safe to add to in place)
    for node in reversed(order):
        key = id(node)
        g = grads.pop(key, None)
        is_owned = key in owned
        owned.discard(key)
        if not isinstance(node, Function):  # a leaf tensor: accumulate into .grad
            if g is None:
                continue
            hooks = getattr(node, "_hooks", None)
            if hooks:
                g, is_owned = _run_hooks(hooks, g), False
            if node.grad is None:
                # a copy unless the engine owns it: backward may hand one array to several inputs. As torch's
                # layout contract: a leaf in C order gets its .grad in C order (an op's backward may write
                # it strided, e.g. attention's dq in the heads-split layout), so optimizers see plain arrays
                node.grad = g if is_owned and (g.flags.c_contiguous or not node.data.flags.c_contiguous) \
                    else g.copy()
            else:
                _add_to_grad(node, g)
            post = getattr(node, "_post_acc_hooks", None)
            if post:
                _run_post_accumulate_hooks(post, node)
            continue
        fn = node
        if g is None:
            if not retain_graph:
                _release(fn)
            continue
        hooks = fn.__dict__.get("_hooks")
        if hooks:
            g = _run_hooks(hooks, g)
        made = fn.out_ref() if fn.out_ref is not None else None
        if made is not None and made._retains_grad:
            made.grad = g.copy() if made.grad is None else made.grad + g
        del made
        if _versions._clock:  # something was changed in place in this process: was it an array fn saved?
            _versions.check(fn)
        parent_grads = fn.backward(g)
        if not isinstance(parent_grads, tuple):
            parent_grads = (parent_grads,)
        handed = [id(pg) for pg in parent_grads if pg is not None]
        for parent, needs, pg in zip(fn.parents, fn.needs_input_grad, parent_grads):
            if not needs or pg is None:
                continue
            if isinstance(parent, Function):
                shape, dtype = parent.out_shape, parent.out_dtype
            else:  # a leaf tensor
                shape, dtype = parent.data.shape, parent.data.dtype
            exclusive = False
            if not isinstance(pg, IndexGrad):
                # a fresh array (not a view, not the incoming gradient, not handed to two inputs)
                # needs no defensive copy; with retain_graph the op may still hold it
                exclusive = (not retain_graph and pg is not g and handed.count(id(pg)) == 1
                             and _fresh(pg))
                out = unbroadcast(pg, shape)
                # a broadcast summed away gives a new array (a reshape of a fresh sum)
                exclusive = exclusive if out is pg else _fresh(out)
                pg = out
            _accumulate(grads, owned, id(parent), pg, dtype, exclusive)
        parent_grads = pg = g = None  # hold no gradient past its use
        if not retain_graph:
            _release(fn)


def _into_grad(t, g, is_owned: bool) -> None:
    """t.grad += g, as run_backward fills a leaf's .grad (a C-order copy unless the engine owns `g`), then its
    post-accumulate-grad hooks."""
    if t.grad is None:
        t.grad = g if is_owned and (g.flags.c_contiguous or not t.data.flags.c_contiguous) else g.copy()
    else:
        _add_to_grad(t, g)
    post = getattr(t, "_post_acc_hooks", None)
    if post:
        _run_post_accumulate_hooks(post, t)


def _add_to_grad(t, g) -> None:
    """t.grad += g in place, as torch accumulates: whoever holds the .grad array sees the sum. A new array where
    the sum cannot go in place (a .grad set by hand that is read-only, or of another shape or a narrower dtype)."""
    cur = t.grad
    xp = xp_of(cur)
    if type(cur) is type(g) and cur.shape == g.shape and cur.flags.writeable and xp.result_type(cur, g) == cur.dtype:
        xp.add(cur, g, out=cur)
    else:
        t.grad = cur + g


def _run_post_accumulate_hooks(hooks: list, leaf) -> None:
    """After `leaf.grad` has taken this backward's gradient: each hook of
    `register_post_accumulate_grad_hook` is called with the leaf (what it returns is ignored, as torch)."""
    for hook in list(hooks):
        hook(leaf)


def _raise_on_nan(fn, parent_grads) -> None:
    """detect_anomaly's check of what one op's backward returned (torch's words, seqlab's op name)."""
    for i, pg in enumerate(parent_grads):
        arr = pg.values if isinstance(pg, IndexGrad) else pg
        if arr is not None and bool(np.isnan(arr).any()):
            raise RuntimeError(f"Function '{type(fn).__name__}' returned nan values in its {i}th output.")


def _backward_general(root, grad, retain_graph: bool, inputs) -> None:
    """run_backward through run_graph: with `inputs`, only those tensors' .grad gets the gradient (a
    non-leaf's too, as torch); without, every leaf's (the anomaly check is on)."""
    if inputs is None:
        run_graph([root], [grad], retain_graph)
        return
    unique = list({id(t): t for t in inputs}.values())  # one tensor named twice gets its gradient once
    for t, g in zip(unique, run_graph([root], [grad], retain_graph, unique)):
        if g is not None and not (t._ctx is not None and t._retains_grad):  # retain_grad stored that one
            _into_grad(t, g, True)


def run_graph(roots: list, root_grads: list, retain_graph: bool = False, targets: list | None = None,
              counted: bool = True):
    """The general backward pass: several roots (tensors) with their gradients (arrays), the anomaly
    check, and `targets` (tensors, leaves or not): with them, their gradients are returned, one array per
    target (None: not reached), and no .grad of a leaf is touched.

    With targets, as torch's engine, only the ops on a path from a root to a target run, and only those
    are freed; hooks (and retain_grad) run on those paths only, a target's own hooks before its
    gradient is captured. A target's op runs only if a further target lies behind it.

    `counted=False`: a pass that a checkpoint runs inside the backward for its own inputs, which
    `targeted()` does not count (only the caller's autograd.grad / backward(inputs=) does).
    """
    global _targeted
    if targets is not None and counted:
        _targeted += 1
        try:
            return _run_graph(roots, root_grads, retain_graph, targets)
        finally:
            _targeted -= 1
    return _run_graph(roots, root_grads, retain_graph, targets)


def _run_graph(roots: list, root_grads: list, retain_graph: bool, targets: list | None):
    """run_graph's pass (see there)."""
    retain_freed_memory_once()
    starts = [r if r._ctx is None else r._ctx for r in roots]
    order = topological_order(*starts)
    grads: dict = {}
    owned: set[int] = set()
    for start, root, g in zip(starts, roots, root_grads):
        _accumulate(grads, owned, id(start), g, root.data.dtype)
    keys = wanted = runs = needed = None
    if targets is not None:
        keys = [id(t if t._ctx is None else t._ctx) for t in targets]  # a leaf stands for itself, else its op
        wanted, runs = set(keys), set()
        needed = set(wanted)  # the targets and every op with one behind it
        for node in order:  # inputs first: a node's parents are settled before the node
            if isinstance(node, Function) and any(needs and id(p) in needed
                                                   for p, needs in zip(node.parents, node.needs_input_grad)):
                runs.add(id(node))
                needed.add(id(node))
        order = [node for node in order if id(node) in needed]  # the rest neither runs nor is freed
    captured: dict = {}
    check_nan = _check_nan
    for node in reversed(order):
        key = id(node)
        g = grads.pop(key, None)
        is_owned = key in owned
        owned.discard(key)
        if not isinstance(node, Function):  # a leaf tensor
            if g is None:
                continue
            hooks = getattr(node, "_hooks", None)
            if hooks:
                g, is_owned = _run_hooks(hooks, g), False
            if targets is None:
                _into_grad(node, g, is_owned)
            else:
                captured[key] = g if is_owned else g.copy()
            continue
        fn = node
        runs_fn = runs is None or key in runs
        if g is None:
            if runs_fn and not retain_graph:
                _release(fn)
            continue
        hooks = fn.__dict__.get("_hooks")
        if hooks:
            g = _run_hooks(hooks, g)
        made = fn.out_ref() if fn.out_ref is not None else None
        if made is not None and made._retains_grad:
            made.grad = g.copy() if made.grad is None else made.grad + g
        del made
        if wanted is not None and key in wanted:
            captured[key] = g if is_owned and not hooks and not runs_fn else g.copy()
        if not runs_fn:
            continue
        if _versions._clock:
            _versions.check(fn)
        parent_grads = fn.backward(g)
        if not isinstance(parent_grads, tuple):
            parent_grads = (parent_grads,)
        if check_nan:
            _raise_on_nan(fn, parent_grads)
        handed = [id(pg) for pg in parent_grads if pg is not None]
        for parent, needs, pg in zip(fn.parents, fn.needs_input_grad, parent_grads):
            if not needs or pg is None or (needed is not None and id(parent) not in needed):
                continue
            if isinstance(parent, Function):
                shape, dtype = parent.out_shape, parent.out_dtype
            else:
                shape, dtype = parent.data.shape, parent.data.dtype
            exclusive = False
            if not isinstance(pg, IndexGrad):  # as in run_backward
                exclusive = (not retain_graph and pg is not g and handed.count(id(pg)) == 1
                             and _fresh(pg))
                out = unbroadcast(pg, shape)
                exclusive = exclusive if out is pg else _fresh(out)
                pg = out
            _accumulate(grads, owned, id(parent), pg, dtype, exclusive)
        parent_grads = pg = g = None
        if not retain_graph:
            _release(fn)
    return None if keys is None else [captured.get(key) for key in keys]
