"""`seqlab.func`: torch.func's function transforms — grad, grad_and_value, vjp, jvp, linearize, jacrev, jacfwd,
hessian, vmap — and functional_call / stack_module_state, for per-sample gradients, Jacobians of a model's
loss with respect to a dict of its parameters, and higher derivatives.

    params = {k: v.detach() for k, v in model.named_parameters()}
    loss = lambda p, x, t: F.cross_entropy(functional_call(model, p, (x,)), t)
    per_sample = [grad(loss)(params, x[i:i+1], t[i:i+1]) for i in range(len(x))]   # dicts of gradients

How it maps onto seqlab's autograd (a tape, not torch's levels of wrapped tensors): each transform runs the
function on fresh inputs — a detached copy that requires grad, or, where the caller's own graph must reach the
input (it requires grad and grad mode is on), a differentiable alias of it — and differentiates with
`autograd.grad`. The result keeps a graph (`create_graph=True`) only when it can be differentiated further: when
grad mode is on and the function's graph reaches a tensor that requires grad from outside this call (a caller's
input, an enclosing transform's input, a module's parameter); otherwise it is computed as plain arrays and
detached, as torch's results are. That is what lets transforms nest: `grad(grad(f))`, `jacfwd(jacrev(f))`
(= `hessian`), `vmap(grad(f))`, a gradient penalty `grad(f)(x).norm()` whose `.backward()` reaches the
parameters. A second derivative needs each op on the way to have a differentiable backward
(`autograd.higher_order.supported_ops()`).

Differences from torch, by design of a NumPy tape:
- no forward mode: `jvp`, `linearize` and `jacfwd` compute the same values in reverse mode (jvp by the
  double-backward trick, jacfwd one row per output element, as jacrev);
- `vmap` is a Python loop over the batch (one call of the function per element, the results stacked): the
  same values and gradients as torch's, no speed-up; `chunk_size` is accepted and changes nothing; an empty
  batch is refused (there is no call to learn the output's structure from); an output with `out_dims=None`
  must be the same in every call (torch asks that it not depend on the batch);
- `randomness="error"` (vmap, jacfwd) is checked after each call, by whether the default generator advanced.
"""
from __future__ import annotations

import functools

from seqlab import backend
from seqlab.autograd import engine
from seqlab.autograd.function import Function, enable_grad, is_grad_enabled
from seqlab.autograd.grad import grad as _autograd_grad
from seqlab.autograd.tensor import Tensor
from seqlab.func_vmap import _RANDOM_ERROR, _check_randomness, _rng_state, vmap
from seqlab.nn.utils.stateless import _functional_call, _merge
from seqlab.utils._pytree import tree_flatten, tree_map, tree_unflatten

__all__ = ["functional_call", "stack_module_state", "grad", "grad_and_value", "vjp", "jvp", "linearize", "jacrev",
           "jacfwd", "hessian", "vmap"]


def functional_call(module, parameter_and_buffer_dicts, args=None, kwargs: dict | None = None, *,
                    tie_weights: bool = True, strict: bool = False):
    """`module(*args, **kwargs)` with the given tensors (a dict by state-dict name, or a tuple of dicts with
    distinct keys) in place of its parameters and buffers, as torch.func.functional_call; the module's own are
    back afterwards, also when the forward raises. See `seqlab.nn.utils.stateless` for tied weights, strict and
    parametrized tensors."""
    return _functional_call(module, _merge(parameter_and_buffer_dicts), args, kwargs, tie_weights=tie_weights,
                            strict=strict)


def stack_module_state(models) -> tuple[dict, dict]:
    """(params, buffers): each parameter and buffer of the models (same class, same mode) stacked along a new
    first dim, as torch.func.stack_module_state; the stacked parameters are new leaves that require grad."""
    from seqlab.creation import stack

    models = list(models)
    if not models:
        raise RuntimeError("stack_module_state: Expected at least one model, got 0.")
    if len({m.training for m in models}) != 1:
        raise RuntimeError("stack_module_state: Expected all models to have the same training/eval mode.")
    if len({type(m) for m in models}) != 1:
        raise RuntimeError("stack_module_state: Expected all models to be of the same class.")

    def stacked(tensors: list, name: str) -> Tensor:
        flags = {t.requires_grad for t in tensors}
        if len(flags) != 1:
            raise RuntimeError(f"Expected {name} from each model to have the same .requires_grad")
        return stack([t.detach() for t in tensors]).requires_grad_(flags.pop())

    params = [dict(m.named_parameters()) for m in models]
    buffers = [dict(m.named_buffers()) for m in models]
    return ({k: stacked([p[k] for p in params], k) for k in params[0]},
            {k: stacked([b[k] for b in buffers], k).requires_grad_(False) for k in buffers[0]})


# ---- the common machinery: fresh inputs, whether a result keeps a graph, gradients with zeros ---------------
def _fresh(x, outer_grad: bool) -> Tensor:
    """The input a transform differentiates with respect to: an alias in the caller's graph where that graph
    must reach `x`, else a detached copy; both require grad."""
    if not isinstance(x, Tensor):
        raise ValueError(f"Thing passed to transform API must be Tensor, got {type(x)}")
    if outer_grad and x.requires_grad:
        return x.view_as(x)
    return x.detach().requires_grad_(True)


def _reaches_outside(tensors, fresh: list) -> bool:
    """Whether the graph of `tensors` reaches a tensor requiring grad other than the fresh leaves: then a result
    computed from it must keep its graph (create_graph), for the caller to differentiate further."""
    if any(t._ctx is not None for t in fresh):  # an alias of a caller's tensor
        return True
    inside = {id(t) for t in fresh}
    stack = [t if t._ctx is None else t._ctx for t in tensors if isinstance(t, Tensor) and t.requires_grad]
    seen = set()
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if not isinstance(node, Function):
            if id(node) not in inside:
                return True
            continue
        if engine._is_freed(node):
            return True
        stack.extend(p for p, needs in zip(node.parents, node.needs_input_grad) if needs and p is not None)
    return False


def _keep_or_detach(tree, fresh: list, outer_grad: bool):
    """A returned value (the function's output, aux: tensors only, as torch's): keeps its graph only where the
    caller may need it."""
    def one(t):
        if not isinstance(t, Tensor):
            raise RuntimeError(f"Expected tensors, got unsupported type {type(t)}")
        if not (outer_grad and t.requires_grad and _reaches_outside([t], fresh)):
            return t.detach()
        return t
    return tree_map(one, tree)


def _zeros(x: Tensor) -> Tensor:
    return Tensor._from_op(backend.xp_of(x.data).zeros_like(x.data), None)


def _vjp(outputs: list, inputs: list, cotangents: list, create_graph: bool, retain_graph: bool) -> list:
    """Σ cotangent · d(output)/d(input) for each input, zeros where no output depends on it (torch.func's rule)."""
    pairs = [(o, c) for o, c in zip(outputs, cotangents) if o.requires_grad]
    if not pairs:
        return [_zeros(x) for x in inputs]
    res = _autograd_grad([o for o, _ in pairs], inputs, [c for _, c in pairs], retain_graph=retain_graph,
                         create_graph=create_graph, allow_unused=True)
    return [_zeros(x) if g is None else g for g, x in zip(res, inputs)]


def _argnums(argnums, n: int):
    """argnums checked and made non-negative (torch.func's RuntimeErrors)."""
    def one(a) -> int:
        if not isinstance(a, int):
            raise RuntimeError(f"argnum must be int, got: {type(a)}")
        if not -n <= a < n:
            raise RuntimeError(f"Got argnum={a}, but only {n} positional inputs")
        return a % n

    if isinstance(argnums, int):
        return one(argnums)
    if not isinstance(argnums, tuple):
        raise RuntimeError(f"argnums must be int or Tuple[int, ...], got: {type(argnums)}")
    if not argnums:
        raise RuntimeError("argnums must be non-empty")
    if len(set(argnums)) != len(argnums):
        raise RuntimeError(f"argnums elements must be unique, got {argnums}")
    return tuple(one(a) for a in argnums)


def _prepare(args: tuple, argnums, outer_grad: bool):
    """(args with fresh tensors at argnums, the flat fresh leaves, their spec: an argument's structure for an
    int argnums, the tuple of the arguments' for a tuple)."""
    argnums = _argnums(argnums, len(args))
    args = list(args)
    for a in (argnums,) if isinstance(argnums, int) else argnums:
        args[a] = tree_map(lambda x: _fresh(x, outer_grad), args[a])
    diff = args[argnums] if isinstance(argnums, int) else tuple(args[a] for a in argnums)
    fresh, spec = tree_flatten(diff)
    return tuple(args), fresh, spec


def _split_aux(output, has_aux: bool, api: str):
    if not has_aux:
        return output, None
    if not (isinstance(output, tuple) and len(output) == 2):
        raise RuntimeError(f"{api}: output of function f should be a tuple: (output, aux) if has_aux is True")
    return output


def _tensor_outputs(output, api: str) -> tuple[list, object]:
    flat, spec = tree_flatten(output)
    if not flat:
        raise RuntimeError(f"{api}: Expected f to be a function that has non-empty output (got output = {output})")
    for o in flat:
        if not isinstance(o, Tensor):
            raise RuntimeError(f"{api}: expected f(*primals) to return only tensors, got unsupported type {type(o)}")
        if o.dtype.kind != "f":
            raise RuntimeError(f"{api}: All outputs of f must be floating-point or complex Tensors, got Tensor with "
                               f"dtype {o.dtype}")
    return flat, spec


# ---- grad, grad_and_value ------------------------------------------------------------------------------------
def grad_and_value(func, argnums=0, has_aux: bool = False):
    """A function returning (gradient, value) of the scalar function `func` with respect to the argument(s)
    `argnums` (an int: that argument's structure — a Tensor, or a dict/tuple of them; a tuple: a tuple of
    those), as torch.func.grad_and_value. With has_aux, func returns (value, aux) and the result is
    (gradient, (value, aux))."""
    api = "grad_and_value(f)(*args)"

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        outer = is_grad_enabled()
        with enable_grad():
            args, fresh, spec = _prepare(args, argnums, outer)
            output, aux = _split_aux(func(*args, **kwargs), has_aux, api)
            if not isinstance(output, Tensor):
                raise RuntimeError(f"{api}: Expected f(*args) to return a Tensor, got {type(output)}")
            if output.ndim != 0:
                raise RuntimeError(f"{api}: Expected f(*args) to return a scalar Tensor, got tensor with "
                                   f"{output.ndim} dims. Maybe you wanted to use the vjp or jacrev APIs instead?")
            create_graph = outer and _reaches_outside([output], fresh)
            value = output if create_graph else output.detach()
            aux = _keep_or_detach(aux, fresh, outer)  # before the backward frees the graph
            grads = _vjp([output], fresh, [None], create_graph, retain_graph=create_graph)
        grads = tree_unflatten(grads, spec)
        return (grads, (value, aux)) if has_aux else (grads, value)

    return wrapper


def grad(func, argnums=0, has_aux: bool = False):
    """A function returning the gradient of the scalar function `func` with respect to argument(s) `argnums`, as
    torch.func.grad (with has_aux: (gradient, aux)). Composes: `grad(grad(f))(x)` is f''(x)."""
    inner = grad_and_value(func, argnums, has_aux)

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        grads, value = inner(*args, **kwargs)
        return (grads, value[1]) if has_aux else grads

    return wrapper


# ---- vjp, jvp, linearize -------------------------------------------------------------------------------------
def vjp(func, *primals, has_aux: bool = False):
    """(func(*primals), vjp_fn[, aux]), as torch.func.vjp: `vjp_fn(cotangents)` (cotangents shaped as the
    output, same structure) returns the tuple of cotangent · Jacobian, one per primal, shaped as the primals.
    vjp_fn may be called many times (the graph is kept while it lives)."""
    api = "vjp(f, *primals)"
    outer = is_grad_enabled()
    with enable_grad():
        fresh_primals = tree_map(lambda x: _fresh(x, outer), primals)
        fresh, primals_spec = tree_flatten(fresh_primals)
        output, aux = _split_aux(func(*fresh_primals), has_aux, api)
        flat_out, out_spec = _tensor_outputs(output, api)
        outside = outer and _reaches_outside(flat_out, fresh)

    def vjp_fn(cotangents, retain_graph: bool = True, create_graph: bool | None = None):
        flat_ct, ct_spec = tree_flatten(cotangents)
        if ct_spec != out_spec:
            raise RuntimeError(f"Expected pytree structure of cotangents to be the same as pytree structure of outputs "
                               f"to the function. cotangents: {ct_spec!r}, primal output: {out_spec!r}")
        graph = is_grad_enabled() if create_graph is None else create_graph
        graph = graph and (outside or any(isinstance(c, Tensor) and c.requires_grad for c in flat_ct))
        with enable_grad():
            grads = _vjp(flat_out, fresh, flat_ct, graph, retain_graph=retain_graph)
        return tree_unflatten(grads, primals_spec)

    result = (_keep_or_detach(output, fresh, outer), vjp_fn)
    return result + (_keep_or_detach(aux, fresh, outer),) if has_aux else result


def _check_tangents(api: str, primals, tangents) -> tuple[list, list, object]:
    if not isinstance(primals, tuple):
        raise RuntimeError(f"{api}: Expected primals to be a tuple. E.g. it should be valid to call f(*primals).")
    flat_p, p_spec = tree_flatten(primals)
    flat_t, t_spec = tree_flatten(tangents)
    if p_spec != t_spec:
        raise RuntimeError(f"{api}: Expected primals and tangents to have the same python structure. For example, "
                           f"if primals is a tuple of 3 tensors, tangents also must be. Got primals with structure "
                           f"{p_spec!r} and tangents with structure {t_spec!r}")
    for name, flat in (("primals", flat_p), ("tangents", flat_t)):
        if not flat:
            raise RuntimeError(f"{api}: Expected {name} to contain at least one Tensor.")
        for x in flat:
            if not isinstance(x, Tensor):
                raise RuntimeError(f"{api}: Expected {name} to only contain Tensors, got {type(x)}")
    for p, t in zip(flat_p, flat_t):
        if tuple(p.shape) != tuple(t.shape):
            raise RuntimeError(f"Trying to set a forward gradient that has a different size than that of the "
                               f"original Tensor, this is not supported. Tensor is of size {list(p.shape)} while "
                               f"the given forward gradient is of size {list(t.shape)}.")
    return flat_p, flat_t, p_spec


class _Linearized:
    """The first half of the double-backward trick: u ↦ Jᵀu as a graph (u: zeros that require grad, one per
    output, Jᵀu linear in them), so that J·t is its gradient with respect to u along t."""

    def __init__(self, outputs: list, inputs: list):
        self.outputs, self.inputs = outputs, inputs
        self.live = [i for i, o in enumerate(outputs) if o.requires_grad]
        self.dummies = {i: _zeros(outputs[i]).requires_grad_(True) for i in self.live}
        self.vjps: list = []
        if self.live:
            res = _autograd_grad([outputs[i] for i in self.live], inputs, [self.dummies[i] for i in self.live],
                                 retain_graph=True, create_graph=True, allow_unused=True)
            self.vjps = [(g, k) for k, g in enumerate(res) if g is not None and g.requires_grad]

    def jvp(self, tangents: list, create_graph: bool) -> list:
        """J·t for each output (zeros where no input reaches it)."""
        out = [None] * len(self.outputs)
        if self.vjps:
            targets = [self.dummies[i] for i in self.live]
            res = _autograd_grad([g for g, _ in self.vjps], targets, [tangents[k] for _, k in self.vjps],
                                 retain_graph=True, create_graph=create_graph, allow_unused=True)
            for i, r in zip(self.live, res):
                out[i] = r
        return [_zeros(o) if r is None else r for r, o in zip(out, self.outputs)]


def jvp(func, primals, tangents, *, strict: bool = False, has_aux: bool = False):
    """(func(*primals), J·tangents[, aux]), as torch.func.jvp (primals and tangents: tuples of the same
    structure and shapes). Reverse mode here, by the double-backward trick (two backward passes), so every op on
    the way needs a differentiable backward. `strict` is accepted, as torch's (which ignores it too)."""
    api = "jvp(f, primals, tangents)"
    flat_p, flat_t, p_spec = _check_tangents(api, primals, tangents)
    outer = is_grad_enabled()
    with enable_grad():
        fresh = [_fresh(p, outer) for p in flat_p]
        output, aux = _split_aux(func(*tree_unflatten(fresh, p_spec)), has_aux, api)
        flat_out, out_spec = _tensor_outputs(output, api)
        graph = outer and (_reaches_outside(flat_out, fresh) or any(t.requires_grad for t in flat_t))
        tangents_out = _Linearized(flat_out, fresh).jvp(flat_t, graph)
    result = (_keep_or_detach(output, fresh, outer), tree_unflatten(tangents_out, out_spec))
    return result + (_keep_or_detach(aux, fresh, outer),) if has_aux else result


def linearize(func, *primals):
    """(func(*primals), jvp_fn), as torch.func.linearize: `jvp_fn(*tangents)` is J·tangents at the primals, the
    function not run again (its graph and that of its vector-Jacobian product are kept while jvp_fn lives)."""
    outer = is_grad_enabled()
    with enable_grad():
        fresh_primals = tree_map(lambda x: _fresh(x, outer), primals)
        fresh, p_spec = tree_flatten(fresh_primals)
        output = func(*fresh_primals)
        flat_out, out_spec = _tensor_outputs(output, "linearize(f, *primals)")
        outside = outer and _reaches_outside(flat_out, fresh)
        lin = _Linearized(flat_out, fresh)

    def jvp_fn(*tangents):
        flat_t, t_spec = tree_flatten(tangents)
        if t_spec != p_spec:
            raise RuntimeError(f"Expected the tangents {t_spec!r} to have the same argspec as the primals {p_spec!r}")
        for i, (t, p) in enumerate(zip(flat_t, fresh)):
            if not isinstance(t, Tensor) or tuple(t.shape) != tuple(p.shape):
                shape = tuple(t.shape) if isinstance(t, Tensor) else type(t).__name__
                raise RuntimeError(f"tangent:{i} with shape {shape} in flattened pytree doesn't match the shape "
                                   f"{tuple(p.shape)} of the corresponding primal.")
        graph = is_grad_enabled() and (outside or any(t.requires_grad for t in flat_t))
        with enable_grad():
            return tree_unflatten(lin.jvp(flat_t, graph), out_spec)

    return _keep_or_detach(output, fresh, outer), jvp_fn


# ---- jacrev, jacfwd, hessian ---------------------------------------------------------------------------------
def _blocks(out: Tensor, inputs: list, create_graph: bool) -> list:
    """d(out)/d(input) for each input, of shape out.shape + input.shape: one backward per element of `out`."""
    shapes = [tuple(out.shape) + tuple(x.shape) for x in inputs]
    if not out.requires_grad or out.numel() == 0:
        return [Tensor._from_op(backend.xp_of(x.data).zeros(s, dtype=x.dtype), None) for x, s in zip(inputs, shapes)]
    xp = backend.xp_of(out.data)
    rows: list = [[] for _ in inputs]
    for j in range(out.numel()):
        e = xp.zeros(out.numel(), dtype=out.dtype)
        e[j] = 1
        res = _autograd_grad([out], inputs, [e.reshape(out.shape)], retain_graph=True, create_graph=create_graph,
                             allow_unused=True)
        for row, g, x in zip(rows, res, inputs):
            row.append(_zeros(x) if g is None else g)
    blocks = []
    for row, s in zip(rows, shapes):
        if any(r.requires_grad for r in row):
            from seqlab.creation import stack

            blocks.append(stack(row).reshape(s))
        else:
            blocks.append(Tensor._from_op(xp.stack([r.data for r in row]).reshape(s), None))
    return blocks


def _jacobian(api: str, func, argnums, has_aux: bool, args: tuple, kwargs: dict, randomness: str | None = None):
    outer = is_grad_enabled()
    with enable_grad():
        args, fresh, spec = _prepare(args, argnums, outer)
        state = _rng_state() if randomness == "error" else None
        output = func(*args, **kwargs)
        if state is not None and _rng_state() != state:
            raise RuntimeError(_RANDOM_ERROR)
        output, aux = _split_aux(output, has_aux, api)
        flat_out, out_spec = _tensor_outputs(output, api)
        graph = outer and _reaches_outside(flat_out, fresh)
        jac = tree_unflatten([tree_unflatten(_blocks(o, fresh, graph), spec) for o in flat_out], out_spec)
    return (jac, _keep_or_detach(aux, fresh, outer)) if has_aux else jac


def jacrev(func, argnums=0, *, has_aux: bool = False, chunk_size: int | None = None,
           _preallocate_and_copy: bool = False):
    """A function returning the Jacobian of `func` with respect to argument(s) `argnums`, as torch.func.jacrev:
    for each output (its structure kept), the input structure of blocks of shape output.shape + input.shape.
    One backward per output element; `chunk_size` is accepted (checked, as torch's) and changes nothing."""
    if not (chunk_size is None or chunk_size > 0):
        raise ValueError("jacrev: `chunk_size` should be greater than 0.")

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        return _jacobian("vjp(f, *primals)", func, argnums, has_aux, args, kwargs)

    return wrapper


def jacfwd(func, argnums=0, has_aux: bool = False, *, randomness: str = "error"):
    """torch.func.jacfwd: the same Jacobian as `jacrev`, computed here in reverse mode too (seqlab has no
    forward mode). `randomness="error"` (torch's default) refuses a function that draws random numbers."""
    _check_randomness(randomness)

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        return _jacobian("jvp(f, primals, tangents)", func, argnums, has_aux, args, kwargs, randomness)

    return wrapper


def hessian(func, argnums=0):
    """torch.func.hessian: the Jacobian of the Jacobian, `jacfwd(jacrev(func, argnums), argnums)`."""
    return jacfwd(jacrev(func, argnums), argnums)
