"""`autograd.grad`: gradients of outputs with respect to chosen tensors, returned instead of accumulated.

As `torch.autograd.grad`: no tensor's `.grad` changes (a non-leaf that called `retain_grad()` on the way
excepted, as in torch), the inputs may be intermediate results, and only the ops between the outputs and
the inputs run (engine.run_graph). seqlab has no double backward, so `create_graph=True` is refused.
"""
from __future__ import annotations

from collections.abc import Sequence

from seqlab import backend
from seqlab.autograd import engine
from seqlab.autograd.tensor import Tensor


def _as_list(tensors, what: str) -> list:
    if isinstance(tensors, Tensor):
        return [tensors]
    tensors = list(tensors)
    for t in tensors:
        if not isinstance(t, Tensor):
            raise TypeError(f"{what} must be Tensors, got {type(t).__name__}")
    return tensors


def _root_grads(outputs: list, grad_outputs) -> list:
    """One array per output: its grad_output, or ones for a scalar output given None."""
    if grad_outputs is None:
        grad_outputs = [None] * len(outputs)
    else:
        grad_outputs = [grad_outputs] if isinstance(grad_outputs, Tensor) else list(grad_outputs)
    if len(grad_outputs) != len(outputs):
        raise RuntimeError(f"got {len(outputs)} tensors and {len(grad_outputs)} gradients")
    grads = []
    for i, (out, g) in enumerate(zip(outputs, grad_outputs)):
        xp = backend.xp_of(out.data)
        if g is None:
            if out.data.size != 1:
                raise RuntimeError("grad can be implicitly created only for scalar outputs")
            grads.append(xp.ones(out.shape, dtype=out.dtype))
            continue
        g = xp.asarray(g.data if isinstance(g, Tensor) else g, dtype=out.dtype)
        if g.shape != out.shape:
            raise RuntimeError(f"Mismatch in shape: grad_output[{i}] has a shape of {tuple(g.shape)} and "
                               f"output[{i}] has a shape of {tuple(out.shape)}.")
        grads.append(g)
    return grads


def grad(outputs: Tensor | Sequence[Tensor], inputs: Tensor | Sequence[Tensor],
         grad_outputs: Tensor | Sequence | None = None, retain_graph: bool | None = None,
         create_graph: bool = False, allow_unused: bool | None = None,
         materialize_grads: bool = False) -> tuple:
    """The sum over `outputs` of d(output)/d(input) · grad_output, one Tensor per input (as torch).

    `grad_outputs` (one per output) may be None for scalar outputs (ones). The graph is freed
    afterwards unless `retain_graph` (default: `create_graph`). An input no output depends on is an
    error unless `allow_unused` (then its gradient is None, or zeros with `materialize_grads`).
    """
    if create_graph:
        raise NotImplementedError(engine.NO_DOUBLE_BACKWARD)
    if materialize_grads and allow_unused is False:
        raise ValueError("Expected allow_unused to be True or not passed when materialize_grads=True, "
                         "but got: allow_unused=False.")
    allow_unused = materialize_grads if allow_unused is None else allow_unused
    retain_graph = create_graph if retain_graph is None else retain_graph
    outputs, inputs = _as_list(outputs, "outputs"), _as_list(inputs, "inputs")
    for i, out in enumerate(outputs):
        if not out.requires_grad:
            raise RuntimeError(f"element {i} of tensors does not require grad and does not have a grad_fn")
    if not all(t.requires_grad for t in inputs):
        raise RuntimeError("One of the differentiated Tensors does not require grad")
    grads = engine.run_graph(outputs, _root_grads(outputs, grad_outputs), bool(retain_graph), inputs)
    result, seen = [], set()
    for i, (t, g) in enumerate(zip(inputs, grads)):
        if g is None:
            if not allow_unused:
                raise RuntimeError(f"The differentiated Tensor at index {i} appears to not have been used in "
                                   "the graph. Set allow_unused=True if this is the desired behavior.")
            result.append(Tensor._from_op(backend.xp_of(t.data).zeros_like(t.data), None)
                          if materialize_grads else None)
        else:  # one tensor named twice: two results, not two views of one array
            result.append(Tensor._from_op(g.copy() if id(g) in seen else g, None))
            seen.add(id(g))
    return tuple(result)
