"""Activation checkpointing, as `torch.utils.checkpoint`: trade compute for memory.

`checkpoint(fn, *args)` runs `fn` without recording a graph, so none of the activations inside it are
kept for backward; only its inputs are. When the backward pass reaches it, `fn` runs again on the same
inputs, this time recording a graph, and the gradient flows back through that recomputation. A Transformer
block's forward is done about twice, and the memory of a step holds one block's activations instead of
every block's.

The random stream is put back before the recomputation (``preserve_rng_state=True``, the default), so
dropout draws the same masks both times and the gradients are those of the forward that ran.

Both of torch's kinds are here. Options of torch's non-reentrant kind: ``context_fn`` is honoured (its two
context managers wrap the forward and the recomputation), ``determinism_check`` ('default' or 'none'; the
shapes and dtypes are always checked, since the recomputation's gradients are cut by them), ``debug`` and
``early_stop`` are accepted and change nothing.

``use_reentrant=False`` (torch's recommended kind): the forward runs `fn` once in grad mode, only to see
what it reads from outside its arguments (the parameters, and any tensor made earlier that a closure
reaches), then drops that graph. Those tensors become inputs of the checkpoint's node, with the arguments;
its backward recomputes `fn` and returns the gradients of all of them, as any op's backward does. So
``autograd.grad`` and ``backward(inputs=...)`` work through it, for the arguments and for the parameters
inside, and hooks and ``retain_grad`` on those tensors run once, in the caller's pass, as torch's.
``autograd.grad(..., create_graph=True)`` goes through it too (`_Checkpoint.backward_graph`): second and
third derivatives, e.g. a gradient penalty on a checkpointed model. An input met twice (passed twice, or
passed and read by closure) gets its gradient once. Outputs that depend on nothing requiring grad come back
without a graph, as torch's. The forward's bookkeeping is per thread: `fn` must record its ops on the
calling thread (work handed to another thread is not seen, and its parameters would get no gradient).

``use_reentrant=True`` or left out (torch's reentrant kind, transformers' default for
``gradient_checkpointing_enable``): `fn` runs without a graph; the recomputation runs its own backward
pass, which adds the gradients of the parameters used inside `fn` straight into their ``.grad``. As
torch's reentrant checkpoint:

- ``autograd.grad`` and ``backward(inputs=...)`` through a checkpoint raise a RuntimeError when they reach
  it (the parameters inside are no inputs of the checkpoint, so they cannot be chosen, and their ``.grad``
  would change behind the call's back); ``autograd.grad(..., create_graph=True)`` is refused too. When
  only parameters inside are asked for, the checkpoint is not on the way to them and never runs: they come
  out unused (an error, or None with ``allow_unused=True``), as in torch. Plain ``loss.backward()`` is what
  it is for (``retain_graph=True`` and a second backward add the gradients again, as torch).
- Every tensor with a graph that `fn` uses must come in as an argument: a non-leaf tensor reached by a
  closure breaks backward (torch fails there as well). Leaves (parameters) by closure are fine.

Both kinds:

- Hooks on tensors made inside `fn` run in the recomputation's backward; register them where the tensor
  requires grad (``if h.requires_grad:``): in the first forward nothing inside does, and ``register_hook``
  raises there. ``retain_grad()`` fills the recomputation's tensor, not the one the first forward made.
- ``fn`` returns a Tensor or a tuple (or list; returned as a tuple). Floating-point tensors in it carry
  gradients, in their own dtypes; integer and bool tensors come back without a graph, and anything else
  (None, a number) as it is. A tensor returned unchanged, or a view of an input, shares the input's memory.

Where it differs from torch's, on purpose:

- Reentrant: it also works when no input requires grad (the first block's input may be a plain tensor):
  the parameters inside still get their gradients (torch's leaves them None, with a warning).
- Reentrant: keyword arguments are passed (torch's reentrant variant refuses them); tensors among them are
  inputs as the positional ones.
- A dict (or any other non-tuple) result is refused with a TypeError (torch's returns it cut off the graph).
- In-place changes are refused at backward, with a RuntimeError, not only for the inputs (as torch, and as
  seqlab's engine does for every op) but also for what `fn` reads besides them, such as its parameters,
  when changed by counted in-place ops (``mul_``, ``copy_``, ``zero_``...) between the forward and the
  backward: the recomputation would use the new values (torch 2.x computes that wrong gradient
  silently). Changes through ``.data`` (as optimizers make) are not counted, as in torch; changes `fn`
  itself makes each time it runs are its own.
- A recomputation that returns other shapes or dtypes than the forward did (a function that is not
  deterministic but for the random stream) is refused, naming both.
"""
from __future__ import annotations

import contextlib
import copy
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from seqlab import random as _random
from seqlab.autograd import engine
from seqlab.autograd import function as _function
from seqlab.autograd import higher_order
from seqlab.autograd import versions as _versions
from seqlab.autograd.function import Function, enable_grad, is_grad_enabled, no_grad
from seqlab.autograd.higher_order import graph_input
from seqlab.autograd.tensor import Tensor
from seqlab.backend import xp_of

__all__ = ["checkpoint", "checkpoint_sequential"]


def _rng_state() -> tuple:
    """The host stream's state and a copy of the GPU stream (None until a GPU draw made one)."""
    gpu = _random._gpu_generator
    return copy.deepcopy(_random._generator.bit_generator.state), (None if gpu is None else copy.deepcopy(gpu))


def _set_rng_state(state: tuple) -> None:
    host, gpu = state
    _random._generator.bit_generator.state = copy.deepcopy(host)
    _random._gpu_generator = None if gpu is None else copy.deepcopy(gpu)


def _outputs(out, where: str) -> tuple[list, bool]:
    """fn's result as a list (a tuple's or list's items, anything kept in place) and whether it was one Tensor."""
    if isinstance(out, Tensor):
        return [out], True
    if isinstance(out, (tuple, list)):
        return list(out), False
    raise TypeError(f"checkpoint: {where} must return a Tensor or a tuple of Tensors (other items are passed "
                    f"through), got {type(out).__name__}")


_CARRIED = object()  # in _Checkpoint.passed: an output that comes back out of the node's own output


def _differentiable(o) -> bool:
    """A floating-point Tensor: an output the checkpoint carries a gradient for (others come back as they are)."""
    return isinstance(o, Tensor) and o.dtype.kind == "f"


_TARGETED = ("checkpoint(use_reentrant=True or left out) is not compatible with autograd.grad() or "
             "backward(inputs=...), as torch's reentrant checkpoint is not: pass use_reentrant=False (for a "
             "model: gradient_checkpointing_enable({'use_reentrant': False})). Here the recomputation's own "
             "backward pass would put the "
             "gradients of the parameters used inside the checkpointed function into their .grad, and none of "
             "them can be returned or chosen from outside. Call backward() without inputs, or run without "
             "checkpoints (call the function directly; model.gradient_checkpointing_disable())")


def _check_unchanged(starts: list, since: int, until: int) -> None:
    """RuntimeError if an array that the recomputation's graph reads (a leaf's, such as a parameter's, or one
    an op saved) was changed in place between the checkpointed forward (clock `since`) and the
    recomputation (clock `until`): the recomputation would have used the new values, a gradient of a
    forward that never ran. Without a checkpoint the engine's version check refuses the same backward.
    Changes the function itself makes while it runs (after `until`) are its own business."""
    for node in engine.topological_order(*starts):
        arrays = node.saved if isinstance(node, Function) else (node.data,)
        for arr in arrays:
            if not hasattr(arr, "shape"):
                continue
            root = _versions._root(arr)
            entry = _versions._changed.get(id(root))
            if entry is not None and entry[0]() is root and since < entry[2] <= until:
                what = f"an op's saved array ({type(node).__name__})" if isinstance(node, Function) else \
                    "a tensor that requires grad (a parameter?)"
                raise RuntimeError(
                    f"checkpoint: {what} of shape {tuple(arr.shape)}, used inside the checkpointed function, "
                    f"was changed in place (zero_, fill_, copy_, mul_ and the like) after the checkpointed "
                    f"forward and before its backward: the recomputation would use the new values. Change it "
                    f"after backward(), or change a clone()")


class _Checkpoint(Function):
    """One node standing for all of `fn`: its output is fn's floating-point output, or all of them raveled
    and joined in their common dtype (`checkpoint` cuts them apart and casts them back), so the node has a
    single output as any op. fn's other results (integer or bool tensors, None, anything else in its
    tuple) are no part of it: `checkpoint` returns them as the forward made them, without a graph.

    Its inputs are fn's positional arguments, then the values of its keyword arguments (`names` says
    which keyword each of those is), then maybe a dummy leaf that is never passed to fn."""

    def forward(self, *arrays, run, is_tensor, names, n_call, preserve_rng_state, contexts=None, found=None):
        self.run, self.is_tensor, self.names, self.n_call = run, is_tensor, names, n_call
        self.recompute_context = None if contexts is None else contexts[1]
        self.save_for_backward(*arrays)  # notes the clock: the engine refuses backward if one changes in place
        self.externals = None
        self.no_graph_backward = "a reentrant checkpoint; checkpoint(..., use_reentrant=False) has one"
        if found is not None:  # non-reentrant: fn ran already (`_discover`), in grad mode
            self.rng, outs, self.externals = found.rng, found.outs, found.externals
            self.no_graph_backward = None
            self.single = found.single
        else:
            self.rng = _rng_state() if preserve_rng_state else None
            with (contextlib.nullcontext() if contexts is None else contexts[0]), no_grad():  # entered in grad mode
                outs, self.single = _outputs(self._call(arrays, False)[1], "the function")
        self.forward_clock = _versions._clock  # what changes in place after this, _check_unchanged catches
        # what the forward returns: _CARRIED for an output the node carries, else the output itself (popped by
        # `checkpoint` at once, so the node holds none of them until backward)
        # the outputs the node carries: floating-point ones (non-reentrant: those that depend on something
        # that requires grad, as torch's; the others come back without a graph)
        self.carry = found.carry if found is not None else [_differentiable(o) for o in outs]
        self.passed = [_CARRIED if c else o for o, c in zip(outs, self.carry)]
        tensors = [o.data for o, c in zip(outs, self.carry) if c]
        self.layout = [(t.shape, t.dtype) for t in tensors]
        if not tensors:  # nothing to differentiate: an empty output, so the node is one as any other
            return np.zeros(0)
        if self.single:
            return tensors[0]
        xp = xp_of(tensors[0])
        dtype = xp.result_type(*[t.dtype for t in tensors])
        return xp.concatenate([t.reshape(-1).astype(dtype, copy=False) for t in tensors])

    def _call(self, arrays, leaves: bool, graph: bool = False):
        """(the arguments, fn's result) on the saved inputs: each Tensor rebuilt from its array (for the
        recomputation, as a leaf that requires grad where the original did; with `graph`, as the input at
        its place in the graph, for a double backward), the others as they were."""
        values = []
        for i, (a, was_tensor) in enumerate(zip(arrays[:self.n_call], self.is_tensor)):
            if was_tensor:
                if graph and self.needs_input_grad[i]:
                    a = graph_input(self, i, a)
                else:
                    a = Tensor._from_op(a, None)
                    if leaves and self.needs_input_grad[i]:
                        a.requires_grad = True
            values.append(a)
        n_pos = self.n_call - len(self.names)
        return values, self.run(*values[:n_pos], **dict(zip(self.names, values[n_pos:])))

    def _recompute(self, grad, graph: bool = False):
        """fn run again in grad mode on the saved inputs, with the forward's random stream: (its arguments,
        [(output, its gradient)] for the outputs that require grad). `grad`: the node's output gradient (an
        array, or a Tensor with `graph`), cut into the outputs' pieces."""
        until = _versions._clock
        current = None
        if self.rng is not None:
            current = _rng_state()
            _set_rng_state(self.rng)
        context = self.recompute_context  # entered again by each recomputation (retain_graph), as torch's
        try:
            with enable_grad(), (contextlib.nullcontext() if context is None else context):
                values, out = self._call(self.saved, True, graph)
                outs, _ = _outputs(out, "the function")
        finally:
            if current is not None:
                _set_rng_state(current)
        outs = [o for o, c in zip(outs, self.carry) if c and isinstance(o, Tensor)]
        got = [(tuple(o.shape), o.dtype) for o in outs]
        if got != [(tuple(s), d) for s, d in self.layout]:
            raise RuntimeError(f"checkpoint: the recomputation in backward returned {got} (shape, dtype) but the "
                               f"forward returned {self.layout}: the function must compute the same both times")
        grads = [grad] if self.single else [g if g.dtype == d else g.astype(d) for g, (_, d) in
                                             zip(_cut(grad, [s for s, _ in self.layout]), self.layout)]
        pairs = [(o, g) for o, g in zip(outs, grads) if o.requires_grad]
        if pairs:
            starts = [o if o._ctx is None else o._ctx for o, _ in pairs]
            if until != self.forward_clock:  # something was changed in place since the forward
                _check_unchanged(starts, self.forward_clock, until)
        return values, pairs

    def backward(self, grad):
        if engine.targeted() and self.externals is None:
            raise RuntimeError(_TARGETED)
        leaves, pairs = self._recompute(grad)
        if self.externals is not None:
            return self._input_grads(pairs, leaves)
        if pairs:  # the recomputation's own backward: the parameters inside get their .grad here
            engine.run_graph([o for o, _ in pairs], [g for _, g in pairs])
        found = [a.grad if isinstance(a, Tensor) and a.requires_grad else None for a in leaves]
        return tuple(found) + (None,) * (len(self.needs_input_grad) - len(found))

    def _input_grads(self, pairs: list, leaves: list) -> tuple:
        """Non-reentrant: the gradients of the node's inputs (fn's arguments, then the tensors from outside
        that fn read, `externals`) from a pass over the recomputation that stops at them, as any op's
        backward returns its inputs' gradients: the caller's pass adds them into .grad, or returns them
        (autograd.grad), and runs their hooks, once. Nothing else is touched."""
        n, need = self.n_call, self.needs_input_grad
        args = [a if isinstance(a, Tensor) and a.requires_grad else None for a in leaves]
        ext = [t if need[n + i] else None for i, t in enumerate(self.externals)]
        return self._gather(args + ext, pairs, lambda targets: engine.run_graph(
            [o for o, _ in pairs], [g for _, g in pairs], targets=targets, counted=False), ext)

    def _gather(self, wanted: list, pairs: list, run, stops: list) -> tuple:
        """The node's input gradients: `run(targets)` on the distinct tensors of `wanted` (an input named twice,
        or a tensor both passed and read by closure, is one target: its whole gradient goes to its first place,
        None to the others, and the caller's pass adds them up once), `stops` (and the targets) being where the
        pass ends (`engine.stopping_at`)."""
        keys, targets, first = [], [], {}
        for t in wanted:
            key = None if t is None else id(t if t._ctx is None else t._ctx)
            keys.append(key)
            if key is not None and key not in first:
                first[key] = len(targets)
                targets.append(t)
        got = [None] * len(targets)
        if pairs and targets:
            with engine.stopping_at([t for t in stops if t is not None]):
                got = run(targets)
        grads, given = [], set()
        for key in keys:
            grads.append(None if key is None or key in given else got[first[key]])
            given.add(key)
        return tuple(grads) + (None,) * (len(self.needs_input_grad) - len(grads))

    def backward_graph(self, g):
        """Non-reentrant only (create_graph=True): fn recomputed on its arguments at their place in the graph
        (and reading its outside tensors, which are in the graph already), and that recomputation
        differentiated by the double-backward engine, stopping at the node's inputs; the gradients carry a
        graph through the recomputation, which this keeps (as torch's non-reentrant checkpoint does)."""
        values, pairs = self._recompute(g, graph=True)
        n, need = self.n_call, self.needs_input_grad
        args = [v if need[i] and isinstance(v, Tensor) else None for i, v in enumerate(values)]
        ext = [t if need[n + i] else None for i, t in enumerate(self.externals)]
        return self._gather(args + ext, pairs, lambda targets: higher_order.run_graph_differentiable(
            [o for o, _ in pairs], [gg for _, gg in pairs], True, targets), args + ext)


class _Found:
    """What `_discover` found: whether fn returned one Tensor, its outputs (detached), which of them carry a
    gradient, the tensors from outside and the rng state."""

    def __init__(self, single, outs, carry, externals, rng):
        self.single, self.outs, self.carry, self.externals, self.rng = single, outs, carry, externals, rng


def _discover(function, inputs: list, is_tensor: tuple, names: tuple, n_call: int, preserve_rng_state: bool,
              contexts) -> _Found:
    """The non-reentrant forward: fn runs once in grad mode on detached copies of its tensor arguments,
    recording a graph only to find what it reads from outside (leaves that require grad, such as the
    parameters, and tensors made by earlier ops, reached by a closure); the graph is then dropped, so none
    of fn's activations are kept. Those tensors become inputs of the checkpoint's node, as torch's
    non-reentrant checkpoint finds them through its saved-tensor hooks."""
    rng = _rng_state() if preserve_rng_state else None
    values = []
    for a, t in zip(inputs[:n_call], is_tensor):
        if t:  # a fresh leaf, requiring grad where the argument does: fn sees what it would see without us
            leaf = Tensor._from_op(a.data, None)
            leaf.requires_grad = a.requires_grad and a.dtype.kind == "f"
            a = leaf
        values.append(a)
    ours_leaves = {id(v) for v in values if isinstance(v, Tensor)}
    n_pos = n_call - len(names)
    state = _function._state  # per thread: while `recorded` is a list there, each op recorded is added to it
    outer, recorded = getattr(state, "recorded", None), []
    state.recorded = recorded
    try:
        with (contextlib.nullcontext() if contexts is None else contexts[0]), enable_grad():
            result = function(*values[:n_pos], **dict(zip(names, values[n_pos:])))
    finally:
        state.recorded = outer
    outs, _ = _outputs(result, "the function")
    ours = {id(f) for f in recorded}
    recorded.clear()
    external: dict = {}
    stack = []

    def meet(t_or_fn, tensor):
        """A node of the graph: ours to walk through, or an end from outside (kept by its tensor)."""
        if id(t_or_fn) in ours_leaves:  # an argument: an input of the node already
            return
        if isinstance(t_or_fn, Function) and id(t_or_fn) in ours:
            stack.append(t_or_fn)
            return
        if isinstance(t_or_fn, Function):
            tensor = t_or_fn.out_ref() if t_or_fn.out_ref is not None else None
            if tensor is None:
                raise RuntimeError("checkpoint: the function reads a tensor made outside it by an op whose output "
                                   "nothing holds any more; pass that tensor as an argument")
        external.setdefault(id(t_or_fn), tensor)

    for o in outs:
        if _differentiable(o) and o.requires_grad:
            meet(o if o._ctx is None else o._ctx, o)
    seen = set()
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        for parent, needs in zip(node.parents, node.needs_input_grad):
            if needs and parent is not None:
                meet(parent, parent if isinstance(parent, Tensor) else None)
    carry = [_differentiable(o) and o.requires_grad for o in outs]
    outs = [o.detach() if _differentiable(o) else o for o in outs]  # the graph goes with the tensors
    return _Found(isinstance(result, Tensor), outs, carry, list(external.values()), rng)


def _cut(joined, shapes: list) -> list:
    """The pieces of a joined 1-d array (or Tensor), one per shape."""
    pieces, start = [], 0
    for shape in shapes:
        n = 1
        for s in shape:
            n *= s
        pieces.append(joined[start:start + n].reshape(shape))
        start += n
    return pieces


def checkpoint(function: Callable, *args: Any, use_reentrant: bool | None = None, context_fn: Callable | None = None,
               determinism_check: str = "default", debug: bool = False, early_stop: bool = True,
               preserve_rng_state: bool = True, **kwargs: Any):
    """``function(*args, **kwargs)`` without keeping its activations for backward; they are recomputed
    when backward reaches it (see the module's docstring). Returns what ``function`` returns: a Tensor or
    a tuple (its floating-point tensors with a graph, other items as they are). When grad is off
    (``no_grad``) it is a plain call.

    Every tensor with a graph that `function` uses must come in through `args` or `kwargs`: one it
    reaches by a closure is not recorded by the checkpoint, and breaks backward."""
    if use_reentrant is not False and (context_fn is not None or debug):
        raise ValueError("Passing `context_fn` or `debug` is only supported when use_reentrant=False.")
    del debug, early_stop  # options of torch's non-reentrant kind that change nothing here
    if determinism_check not in ("default", "none"):
        raise ValueError(f"determinism_check should be one of ['default', 'none'], but got {determinism_check!r}")
    if not is_grad_enabled():
        return function(*args, **kwargs)
    contexts = None
    if context_fn is not None:
        contexts = context_fn()
        if not (isinstance(contexts, tuple) and len(contexts) == 2):
            raise TypeError("checkpoint: context_fn must return two context managers (one for the forward, one for "
                            f"the recomputation), got {type(contexts).__name__}")
    names = tuple(kwargs)
    inputs = list(args) + list(kwargs.values())
    is_tensor = tuple(isinstance(a, Tensor) for a in inputs)
    n_call = len(inputs)
    found = None
    if use_reentrant is False:
        found = _discover(function, inputs, is_tensor, names, n_call, preserve_rng_state, contexts)
        inputs += found.externals
    elif not any(isinstance(a, Tensor) and a.requires_grad for a in inputs):
        # a leaf that requires grad, so the node is recorded and its backward runs for the parameters inside
        inputs.append(Tensor(0.0, requires_grad=True))
    out, fn = _Checkpoint.apply_with_fn(*inputs, run=function, is_tensor=is_tensor, names=names, n_call=n_call,
                                        preserve_rng_state=preserve_rng_state, contexts=contexts, found=found)
    passed, fn.passed = fn.passed, None
    if fn.single:
        return out if passed[0] is _CARRIED else passed[0]
    pieces, dtypes = iter(_cut(out, [s for s, _ in fn.layout])), iter([d for _, d in fn.layout])
    results = []
    for item in passed:
        if item is _CARRIED:
            piece, dtype = next(pieces), next(dtypes)
            item = piece if piece.dtype == dtype else piece.astype(dtype)
        results.append(item)
    return tuple(results)


def checkpoint_sequential(functions: Sequence[Callable] | Any, segments: int, input: Tensor, *,
                          use_reentrant: bool | None = None, preserve_rng_state: bool = True):
    """As torch's: ``functions`` (a Sequential or a list of callables) in `segments` runs of
    ``len(functions) // segments`` each, every run but the last under `checkpoint`, so only the runs'
    boundaries are kept for backward; the last run (with the remainder) is a plain call."""
    fns = list(functions.children()) if hasattr(functions, "children") else list(functions)
    if isinstance(segments, bool) or not isinstance(segments, int) or segments < 1:
        raise ValueError(f"segments must be an int >= 1, got {segments!r}")
    if segments > len(fns):  # torch fails here with "range() arg 3 must not be zero"
        raise ValueError(f"checkpoint_sequential: {segments} segments of {len(fns)} functions; segments must be at "
                         f"most the number of functions")

    def run_range(lo: int, hi: int):
        def run(x):
            for f in fns[lo:hi]:
                x = f(x)
            return x
        return run

    size, end = len(fns) // segments, 0
    for lo in range(0, size * (segments - 1), size):
        end = lo + size
        input = checkpoint(run_range(lo, end), input, use_reentrant=use_reentrant,
                           preserve_rng_state=preserve_rng_state)
    return run_range(end, len(fns))(input)
