"""Activation checkpointing, as `torch.utils.checkpoint`: trade compute for memory.

`checkpoint(fn, *args)` runs `fn` without recording a graph, so none of the activations inside it are
kept for backward; only its inputs are. When the backward pass reaches it, `fn` runs again on the same
inputs, this time recording a graph, and the gradient flows back through that recomputation. A Transformer
block's forward is done about twice, and the memory of a step holds one block's activations instead of
every block's.

The random stream is put back before the recomputation (``preserve_rng_state=True``, the default), so
dropout draws the same masks both times and the gradients are those of the forward that ran.

This is torch's *reentrant* variant (``use_reentrant=True``): the recomputation runs its own backward
pass, which adds the gradients of the parameters used inside `fn` straight into their ``.grad``. As with
torch's reentrant checkpoint, those parameters are therefore not reached by ``autograd.grad`` or by
``backward(inputs=...)``; plain ``loss.backward()`` is what it is for. Unlike torch's, it also works when
no input requires grad (the first block's input may be a plain tensor): the parameters inside still get
their gradients. ``use_reentrant`` is accepted for torch code and changes nothing.
"""
from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from typing import Any

from seqlab import random as _random
from seqlab.autograd import engine
from seqlab.autograd.function import Function, enable_grad, is_grad_enabled, no_grad
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
    """fn's result as a list of Tensors (None kept in place) and whether it was one Tensor."""
    if isinstance(out, Tensor):
        return [out], True
    if isinstance(out, (tuple, list)) and all(o is None or isinstance(o, Tensor) for o in out) \
            and any(o is not None for o in out):
        return list(out), False
    raise TypeError(f"checkpoint: {where} must return a Tensor or a tuple of Tensors (None allowed), "
                    f"got {type(out).__name__}")


class _Checkpoint(Function):
    """One node standing for all of `fn`: its output is fn's output, or every output of fn raveled
    and joined (`checkpoint` cuts them apart again), so the node has a single output as any op.

    Its inputs are fn's positional arguments, then the values of its keyword arguments (`names` says
    which keyword each of those is), then maybe a dummy leaf that is never passed to fn."""

    def forward(self, *arrays, run, is_tensor, names, n_call, preserve_rng_state):
        self.run, self.is_tensor, self.names, self.n_call = run, is_tensor, names, n_call
        self.rng = _rng_state() if preserve_rng_state else None
        self.save_for_backward(*arrays)
        with no_grad():
            outs, self.single = _outputs(self._call(arrays, False), "the function")
        self.layout = [None if o is None else o.shape for o in outs]
        tensors = [o.data for o in outs if o is not None]
        dtypes = {t.dtype for t in tensors}
        if len(dtypes) > 1:
            raise TypeError(f"checkpoint: the function's outputs must share one dtype, got {sorted(map(str, dtypes))}")
        if self.single:
            return tensors[0]
        return xp_of(tensors[0]).concatenate([t.reshape(-1) for t in tensors])

    def _call(self, arrays, leaves: bool):
        """fn on the saved inputs: each Tensor rebuilt from its array (for the recomputation, as a leaf that
        requires grad where the original did; kept in self.leaves), the other arguments as they were."""
        values = []
        for i, (a, was_tensor) in enumerate(zip(arrays[:self.n_call], self.is_tensor)):
            if was_tensor:
                a = Tensor._from_op(a, None)
                if leaves and self.needs_input_grad[i]:
                    a.requires_grad = True
            values.append(a)
        self.leaves = values
        n_pos = self.n_call - len(self.names)
        return self.run(*values[:n_pos], **dict(zip(self.names, values[n_pos:])))

    def backward(self, grad):
        current = None
        if self.rng is not None:
            current = _rng_state()
            _set_rng_state(self.rng)
        try:
            with enable_grad():
                outs, _ = _outputs(self._call(self.saved, True), "the function")
        finally:
            if current is not None:
                _set_rng_state(current)
        grads = [grad] if self.single else _cut(grad, self.layout)
        pairs = [(o, g) for o, g in zip(outs, grads) if o is not None and o.requires_grad]
        if pairs:  # the recomputation's own backward: the parameters inside get their .grad here
            engine.run_graph([o for o, _ in pairs], [g for _, g in pairs])
        found = [a.grad if isinstance(a, Tensor) and a.requires_grad else None for a in self.leaves]
        return tuple(found) + (None,) * (len(self.needs_input_grad) - len(found))


def _cut(joined, layout: list) -> list:
    """The pieces of a joined 1-d array (or Tensor), one per output shape in `layout` (None kept)."""
    pieces, start = [], 0
    for shape in layout:
        if shape is None:
            pieces.append(None)
            continue
        n = 1
        for s in shape:
            n *= s
        pieces.append(joined[start:start + n].reshape(shape))
        start += n
    return pieces


def checkpoint(function: Callable, *args: Any, use_reentrant: bool | None = None,
               preserve_rng_state: bool = True, **kwargs: Any):
    """``function(*args, **kwargs)`` without keeping its activations for backward; they are recomputed
    when backward reaches it (see the module's docstring). Returns what ``function`` returns: a Tensor or
    a tuple of Tensors (None allowed). When grad is off (``no_grad``) it is a plain call.

    Every tensor with a graph that `function` uses must come in through `args` or `kwargs`: one it
    reaches by a closure is not recorded by the checkpoint."""
    del use_reentrant  # torch's two variants give the same gradients here
    if not is_grad_enabled():
        return function(*args, **kwargs)
    names = tuple(kwargs)
    inputs = list(args) + list(kwargs.values())
    is_tensor = tuple(isinstance(a, Tensor) for a in inputs)
    n_call = len(inputs)
    if not any(isinstance(a, Tensor) and a.requires_grad for a in inputs):
        # a leaf that requires grad, so the node is recorded and its backward runs for the parameters inside
        inputs.append(Tensor(0.0, requires_grad=True))
    out, fn = _Checkpoint.apply_with_fn(*inputs, run=function, is_tensor=is_tensor, names=names, n_call=n_call,
                                        preserve_rng_state=preserve_rng_state)
    return out if fn.single else tuple(_cut(out, fn.layout))


def checkpoint_sequential(functions: Sequence[Callable] | Any, segments: int, input: Tensor, *,
                          use_reentrant: bool | None = None, preserve_rng_state: bool = True):
    """As torch's: ``functions`` (a Sequential or a list of callables) in `segments` runs of
    ``len(functions) // segments`` each, every run but the last under `checkpoint`, so only the runs'
    boundaries are kept for backward; the last run (with the remainder) is a plain call."""
    fns = list(functions.children()) if hasattr(functions, "children") else list(functions)
    if isinstance(segments, bool) or not isinstance(segments, int) or segments < 1:
        raise ValueError(f"segments must be an int >= 1, got {segments!r}")

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
