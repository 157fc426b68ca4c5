"""`autograd.grad`: gradients of outputs with respect to chosen tensors, returned instead of accumulated.

As `torch.autograd.grad`: no tensor's `.grad` changes (a non-leaf that called `retain_grad()` on the way
excepted, as in torch), the inputs may be intermediate results, and only the ops between the outputs and
the inputs run (engine.run_graph).

With `create_graph=True` the gradients are Tensors with a graph of their own (double backward: a gradient
penalty, a Hessian-vector product, a third derivative), computed by each op's differentiable
`backward_graph` (higher_order.run_graph_differentiable); the graph is then kept unless
`retain_graph=False`, as torch. An op without one is refused, naming it. `Tensor.backward(create_graph=True)`
stays refused: a `.grad` is a plain array in seqlab, so it could hold no graph.
"""
from __future__ import annotations

from collections.abc import Sequence

from seqlab import backend
from seqlab.autograd import engine, higher_order
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
    `create_graph`: the results carry a graph (they require grad where they depend on something that
    does), so they can enter a further loss, `.backward()` or another `grad` (higher derivatives).
    """
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
    root_grads = _root_grads(outputs, grad_outputs)
    if create_graph:
        return _grad_graph(outputs, root_grads, grad_outputs, bool(retain_graph), inputs, allow_unused,
                           materialize_grads)
    grads = engine.run_graph(outputs, root_grads, bool(retain_graph), inputs)
    # one tensor named twice: two results, not two views of one array
    return _results(inputs, grads, allow_unused, materialize_grads,
                    lambda g, again: Tensor._from_op(g.copy() if again else g, None))


def _results(inputs: list, grads: list, allow_unused: bool, materialize_grads: bool, wrap) -> tuple:
    """One result per input: `wrap(gradient, already_returned)`, or for an input no output reached torch's
    error, None (allow_unused) or zeros (materialize_grads)."""
    result, seen = [], set()
    for i, (t, g) in enumerate(zip(inputs, grads)):
        if g is None:
            if not allow_unused:
                raise RuntimeError(f"The differentiated Tensor at index {i} appears to not have been used in "
                                   "the graph. Set allow_unused=True if this is the desired behavior.")
            result.append(Tensor._from_op(backend.xp_of(t.data).zeros_like(t.data), None)
                          if materialize_grads else None)
        else:
            result.append(wrap(g, id(g) in seen))
            seen.add(id(g))
    return tuple(result)


def _grad_graph(outputs: list, root_grads: list, grad_outputs, retain_graph: bool, inputs: list,
                allow_unused: bool, materialize_grads: bool) -> tuple:
    """`grad` with create_graph=True: the gradients as Tensors with a graph. A grad_output that is a
    Tensor is used as it is (cast to its output's dtype if needed), so one that requires grad is
    differentiated through too, as torch."""
    given = [None] * len(outputs) if grad_outputs is None else \
        [grad_outputs] if isinstance(grad_outputs, Tensor) else list(grad_outputs)
    roots = []
    for out, g, arr in zip(outputs, given, root_grads):
        if isinstance(g, Tensor) and g.requires_grad:
            roots.append(g if g.dtype == out.dtype else g.astype(out.dtype))
        else:
            roots.append(Tensor._from_op(arr, None))
    grads = higher_order.run_graph_differentiable(outputs, roots, retain_graph, inputs)
    # one gradient handed to two results (an input named twice, a root grad): two tensors
    return _results(inputs, grads, allow_unused, materialize_grads, lambda g, again: g.clone() if again else g)
