"""`autograd.grad`: gradients of outputs with respect to chosen tensors, returned instead of accumulated.

As `torch.autograd.grad`: no tensor's `.grad` changes (a non-leaf that called `retain_grad()` on the way
excepted, as in torch), the inputs may be intermediate results, and only the ops between the outputs and
the inputs run (engine.run_graph).

With `create_graph=True` the gradients are Tensors with a graph of their own (double backward: a gradient
penalty, a Hessian-vector product, a third derivative), computed by each op's differentiable
`backward_graph` (higher_order.run_graph_differentiable); the graph is then kept unless
`retain_graph=False`, as torch. An op without one is refused, naming it. `Tensor.backward(create_graph=True)`
stays refused: a `.grad` is a plain array in seqlab, so it could hold no graph.

`is_grads_batched=True` (as torch's): the first dimension of each grad_output is a batch of vectors, and
each result gets that leading dimension. torch vmaps the backward; here it is a loop, one backward per
vector with the graph retained in between (`_grad_batched`).
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
         create_graph: bool = False, allow_unused: bool | None = None, is_grads_batched: bool = False,
         materialize_grads: bool = False) -> tuple:
    """The sum over `outputs` of d(output)/d(input) · grad_output, one Tensor per input (as torch).

    `grad_outputs` (one per output) may be None for scalar outputs (ones). The graph is freed
    afterwards unless `retain_graph` (default: `create_graph`). An input no output depends on is an
    error unless `allow_unused` (then its gradient is None, or zeros with `materialize_grads`).
    `create_graph`: the results carry a graph (they require grad where they depend on something that
    does), so they can enter a further loss, `.backward()` or another `grad` (higher derivatives).
    `is_grads_batched`: each grad_output is a batch of vectors along its first dimension, and each result
    is the batch of their products, (B, *input.shape), as torch; computed by a loop over the batch (one
    backward each, the graph kept until the last; torch vmaps instead).
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
    if is_grads_batched:
        return _grad_batched(outputs, inputs, grad_outputs, retain_graph, create_graph, allow_unused,
                             materialize_grads)
    root_grads = _root_grads(outputs, grad_outputs)
    if create_graph:
        return _grad_graph(outputs, root_grads, grad_outputs, bool(retain_graph), inputs, allow_unused,
                           materialize_grads)
    grads = engine.run_graph(outputs, root_grads, bool(retain_graph), inputs)
    # one tensor named twice: two results, not two views of one array
    return _results(inputs, grads, allow_unused, materialize_grads,
                    lambda g, again: Tensor._from_op(g.copy() if again else g, None))


def _zeros(t, create_graph: bool):
    """materialize_grads' zeros for an input no output reached: requiring grad with create_graph, as torch's."""
    zeros = Tensor._from_op(backend.xp_of(t.data).zeros_like(t.data), None)
    zeros.requires_grad = create_graph
    return zeros


def _results(inputs: list, grads: list, allow_unused: bool, materialize_grads: bool, wrap,
             create_graph: bool = False) -> tuple:
    """One result per input: `wrap(gradient, already_returned)`, or for an input no output reached torch's
    error, None (allow_unused) or zeros (materialize_grads)."""
    result, seen = [], set()
    for i, (t, g) in enumerate(zip(inputs, grads)):
        if g is None:
            if not allow_unused:
                raise RuntimeError(f"The differentiated Tensor at index {i} appears to not have been used in "
                                   "the graph. Set allow_unused=True if this is the desired behavior.")
            result.append(_zeros(t, create_graph) if materialize_grads else None)
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
    return _results(inputs, grads, allow_unused, materialize_grads, lambda g, again: g.clone() if again else g,
                    create_graph=True)


def _grad_batched(outputs: list, inputs: list, grad_outputs, retain_graph: bool, create_graph: bool,
                  allow_unused: bool, materialize_grads: bool) -> tuple:
    """`grad(..., is_grads_batched=True)`: one `grad` per vector of the batch (the graph retained until the
    last, which keeps it only if asked), the results stacked along a new first dimension. With create_graph
    a grad_output that requires grad is sliced as a Tensor, so it is differentiated through, as torch.
    An input no output reaches gives None, or with materialize_grads zeros of the input's own shape (no
    batch dimension: torch's result)."""
    from seqlab.autograd.ops import movement as V

    given = [None] * len(outputs) if grad_outputs is None else \
        [grad_outputs] if isinstance(grad_outputs, Tensor) else list(grad_outputs)
    if len(given) != len(outputs):
        raise RuntimeError(f"got {len(outputs)} tensors and {len(given)} gradients")
    batched = []
    for i, (out, g) in enumerate(zip(outputs, given)):
        if g is None:
            raise RuntimeError(f"is_grads_batched=True needs a grad_output for each output, with the batch as its "
                               f"first dimension; grad_output[{i}] is None")
        if not isinstance(g, Tensor):
            g = backend.xp_of(out.data).asarray(g)
        if g.ndim == 0 or tuple(g.shape[1:]) != tuple(out.shape):
            raise RuntimeError("If `is_grads_batched=True`, we interpret the first dimension of each grad_output "
                               "as the batch dimension. The sizes of the remaining dimensions are expected to "
                               f"match the shape of corresponding output, but a mismatch was detected: "
                               f"grad_output[{i}] has a shape of {tuple(g.shape[1:])} and output[{i}] has a "
                               f"shape of {tuple(out.shape)}.")
        batched.append(g)
    sizes = [int(g.shape[0]) for g in batched]
    if len(set(sizes)) != 1:
        raise ValueError(f"is_grads_batched=True: expected all grad_outputs to have the same size in the batch "
                         f"dimension, got sizes {sizes}")
    if sizes[0] == 0:
        raise RuntimeError("is_grads_batched=True: the batch dimension of grad_outputs is empty")
    columns = [[] for _ in inputs]
    for b in range(sizes[0]):
        vectors = [g[b] if create_graph and isinstance(g, Tensor) and g.requires_grad else
                   (g.data if isinstance(g, Tensor) else g)[b] for g in batched]
        last = b == sizes[0] - 1
        res = grad(outputs, inputs, vectors, retain_graph=retain_graph if last else True,
                   create_graph=create_graph, allow_unused=allow_unused)
        for column, r in zip(columns, res):
            column.append(r)
    result = []
    for t, column in zip(inputs, columns):
        if column[0] is None:  # no output reaches t: the same for every vector
            result.append(_zeros(t, create_graph) if materialize_grads else None)
        elif create_graph:
            result.append(V.Stack.apply(*column, dim=0))
        else:
            result.append(Tensor._from_op(backend.xp_of(t.data).stack([r.data for r in column]), None))
    return tuple(result)
