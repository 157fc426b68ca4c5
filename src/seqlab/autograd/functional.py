"""`seqlab.autograd.functional`: torch.autograd.functional's vjp, jvp, jacobian, hessian, vhp and hvp.

Same signatures, return structures and errors as torch's, built on `autograd.grad` (reverse mode, with
`create_graph=True` for the second-order ones):

- the inputs are detached copies that require grad (or, with `create_graph=True` and an input that requires
  grad, a differentiable view of it), so the function's own graph is separate from the caller's;
- a result is a single Tensor when `inputs` (for the jacobian also the function's outputs) is a single
  Tensor, a tuple when it is a tuple, and the jacobian of tuple outputs and inputs is a tuple (one per
  output) of tuples (one per input) of Tensors of shape `output.shape + input.shape`;
- an output that does not depend on an input gives zeros (`strict=False`) or torch's error (`strict=True`);
- the results require no grad unless `create_graph=True`, which lets them be differentiated again.

seqlab has no forward-mode AD and no vmap: `jvp` and `hvp` use the double-backward trick (as torch's), the
jacobian is computed one row at a time; `vectorize=True` is accepted and computes the same rows through
`autograd.grad(..., is_grads_batched=True)`, which is itself a loop here (no speed-up). A `strategy` or
`outer_jacobian_strategy` of "forward-mode" is refused with NotImplementedError.
"""
from __future__ import annotations

from seqlab import backend
from seqlab.autograd.function import enable_grad, is_grad_enabled, set_grad_enabled
from seqlab.autograd.grad import _zeros
from seqlab.autograd.grad import grad as _grad
from seqlab.autograd.ops import movement as _V
from seqlab.autograd.tensor import Tensor

__all__ = ["vjp", "jvp", "jacobian", "hessian", "hvp", "vhp"]

_STRATEGIES = ("forward-mode", "reverse-mode")


# ---- helpers (torch's, one for one) ----------------------------------------------------------------
def _as_tuple(inp, arg_name: str, fn_name: str):
    """(whether `inp` was a tuple, `inp` as a tuple of Tensors); torch's TypeError for anything else."""
    is_tuple = isinstance(inp, tuple)
    inp = inp if is_tuple else (inp,)
    for i, el in enumerate(inp):
        if not isinstance(el, Tensor):
            where = f"the value at index {i}" if is_tuple else f"the given {arg_name}"
            raise TypeError(f"The {arg_name} given to {fn_name} must be either a Tensor or a tuple of Tensors but "
                            f"{where} has type {type(el)}.")
    return is_tuple, inp


def _tuple_postprocess(res, to_unpack):
    """Undo `_as_tuple`: `to_unpack` is one flag, or (outer, inner) flags for a nested tuple."""
    if isinstance(to_unpack, tuple):
        if not to_unpack[1]:
            res = tuple(el[0] for el in res)
        if not to_unpack[0]:
            res = res[0]
    elif not to_unpack:
        res = res[0]
    return res


def _grad_preprocess(inputs, create_graph: bool, need_graph: bool) -> tuple:
    """New Tensor objects for the inputs (so the function's own captures of the caller's tensors stay
    apart): a differentiable view where the caller's graph must be kept, else a detached copy."""
    res = []
    for inp in inputs:
        if create_graph and inp.requires_grad:
            res.append(inp.view_as(inp))
        else:
            res.append(inp.detach().requires_grad_(need_graph))
    return tuple(res)


def _grad_postprocess(inputs, create_graph: bool) -> tuple:
    """Detach the results (nested tuples too) unless the caller asked for their graph."""
    if isinstance(inputs[0], Tensor):
        return inputs if create_graph else tuple(inp.detach() for inp in inputs)
    return tuple(_grad_postprocess(inp, create_graph) for inp in inputs)


def _validate_v(v, other, is_other_tuple: bool) -> None:
    if len(other) != len(v):
        if is_other_tuple:
            raise RuntimeError(f"v is a tuple of invalid length: should be {len(other)} but got {len(v)}.")
        raise RuntimeError("The given v should contain a single Tensor.")
    for idx, (el_v, el_other) in enumerate(zip(v, other)):
        if tuple(el_v.shape) != tuple(el_other.shape):
            prepend = f"Entry {idx} in " if is_other_tuple else ""
            raise RuntimeError(f"{prepend}v has invalid size: should be {tuple(el_other.shape)} but got "
                               f"{tuple(el_v.shape)}.")


def _check_requires_grad(inputs, input_type: str, strict: bool) -> None:
    """torch's strict-mode errors for an output (or gradient, jacobian, hessian) that needs no gradient."""
    if not strict:
        return
    for i, inp in enumerate(inputs):
        if inp is None:  # only for grad_inputs
            raise RuntimeError(f"The output of the user-provided function is independent of input {i}. This is "
                               "not allowed in strict mode.")
        if inp.requires_grad:
            continue
        if input_type == "hessian":
            raise RuntimeError(f"The hessian of the user-provided function with respect to input {i} is "
                               "independent of the input. This is not allowed in strict mode. You should ensure "
                               "that your function is thrice differentiable and that the hessian depends on the "
                               "inputs.")
        if input_type == "jacobian":
            raise RuntimeError("While computing the hessian, found that the jacobian of the user-provided function "
                               f"with respect to input {i} is independent of the input. This is not allowed in "
                               "strict mode. You should ensure that your function is twice differentiable and "
                               "that the jacobian depends on the inputs (this would be violated by a linear "
                               "function for example).")
        if input_type == "grad_inputs":
            raise RuntimeError(f"The gradient with respect to input {i} is independent of the inputs of the "
                               "user-provided function. This is not allowed in strict mode.")
        raise RuntimeError(f"Output {i} of the user-provided function does not require gradients. The outputs "
                           "must be computed in a differentiable manner from the input when running in strict "
                           "mode.")


def _autograd_grad(outputs: tuple, inputs: tuple, grad_outputs=None, create_graph: bool = False,
                   retain_graph: bool | None = None, is_grads_batched: bool = False) -> tuple:
    """`autograd.grad` that skips outputs needing no gradient (None when none is left) and gives None
    for an input no output reaches."""
    if grad_outputs is None:
        grad_outputs = (None,) * len(outputs)
    pairs = [(out, g) for out, g in zip(outputs, grad_outputs) if out is not None and out.requires_grad]
    if not pairs:
        return (None,) * len(inputs)
    return _grad([p[0] for p in pairs], list(inputs), [p[1] for p in pairs], allow_unused=True,
                 create_graph=create_graph, retain_graph=retain_graph, is_grads_batched=is_grads_batched)


def _zeros_like(t: Tensor) -> Tensor:
    return _zeros(t, False)


_FILL_ERRORS = {
    "back": "The output of the user-provided function is independent of input {i}. This is not allowed in "
            "strict mode.",
    "back_trick": "The gradient with respect to the input is independent of entry {i} in the grad_outputs when "
                  "using the double backward trick to compute forward mode gradients. This is not allowed in "
                  "strict mode.",
    "double_back": "The jacobian of the user-provided function is independent of input {i}. This is not allowed "
                   "in strict mode.",
    "double_back_trick": "The hessian of the user-provided function is independent of entry {i} in the "
                         "grad_jacobian. This is not allowed in strict mode as it prevents from using the double "
                         "backward trick to replace forward mode AD.",
}


def _fill_in_zeros(grads, refs, strict: bool, create_graph: bool, stage: str) -> tuple:
    """None gradients as zeros shaped as `refs`, or torch's strict-mode error for the stage."""
    res = []
    for i, g in enumerate(grads):
        if g is None:
            if strict:
                raise RuntimeError(_FILL_ERRORS[stage].format(i=i))
            g = _zeros_like(refs[i])
        elif strict and create_graph and not g.requires_grad:
            what = "hessian" if "double" in stage else "jacobian"
            raise RuntimeError(f"The {what} of the user-provided function is independent of input {i}. This is "
                               "not allowed in strict mode when create_graph=True.")
        res.append(g)
    return tuple(res)


_V_NONE = "The vector v can only be None if {} a single Tensor with a single element."
_V_NONE_INPUT = _V_NONE.format("the input to the user-provided function is")


def _v_or_scalar(v, other, is_other_tuple: bool, create_graph: bool, fn_name: str, none_message: str):
    """`v` as a tuple matching `other`; None only where `other` is one Tensor of one element (then ones)."""
    if v is not None:
        _, v = _as_tuple(v, "v", fn_name)
        v = _grad_preprocess(v, create_graph=create_graph, need_graph=False)
        _validate_v(v, other, is_other_tuple)
        return v
    if len(other) != 1 or other[0].numel() != 1:
        raise RuntimeError(none_message)
    return None


def _last_backward(outputs, is_outputs_tuple: bool, grads_of, wrt, v, refs, is_result_tuple: bool, strict: bool,
                   create_graph: bool, stage: str):
    """The functions' common end: the backward of `grads_of` w.r.t. `wrt` along `v` (recorded only with
    create_graph), zeros (or torch's strict error) where nothing was reached, and (outputs, result)
    detached and unpacked as the caller's tuples were."""
    with set_grad_enabled(True if create_graph else is_grad_enabled()):
        grad_res = _autograd_grad(grads_of, wrt, v, create_graph=create_graph)
        result = _fill_in_zeros(grad_res, refs, strict, create_graph, stage)
    outputs = _grad_postprocess(outputs, create_graph)
    result = _grad_postprocess(result, create_graph)
    return _tuple_postprocess(outputs, is_outputs_tuple), _tuple_postprocess(result, is_result_tuple)


# ---- public API --------------------------------------------------------------------------------------
def vjp(func, inputs, v=None, create_graph: bool = False, strict: bool = False):
    """(func(*inputs), v · J): the vector-Jacobian product at `inputs`, as torch.autograd.functional.vjp.

    `v` has the outputs' shapes (optional for a single one-element output); the product has the inputs'.
    Returns (output, vjp), each a Tensor or a tuple as `func`'s output and `inputs` are.
    """
    with enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "vjp")
        inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
        outputs = func(*inputs)
        is_outputs_tuple, outputs = _as_tuple(outputs, "outputs of the user-provided function", "vjp")
        _check_requires_grad(outputs, "outputs", strict=strict)
        v = _v_or_scalar(v, outputs, is_outputs_tuple, create_graph, "vjp",
                         _V_NONE.format("the user-provided function returns"))
    return _last_backward(outputs, is_outputs_tuple, outputs, inputs, v, inputs, is_inputs_tuple, strict,
                          create_graph, "back")


def jvp(func, inputs, v=None, create_graph: bool = False, strict: bool = False):
    """(func(*inputs), J · v): the Jacobian-vector product at `inputs`, as torch.autograd.functional.jvp.

    `v` has the inputs' shapes (optional for a single one-element input); the product has the outputs'.
    Computed as torch does, by the double-backward trick: the vjp's graph with respect to a grad_output
    (zeros that require grad; the vjp is linear in it) is differentiated along `v`. Returns (output, jvp),
    each a Tensor or a tuple as `func`'s output is.
    """
    with enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jvp")
        inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
        v = _v_or_scalar(v, inputs, is_inputs_tuple, create_graph, "jvp", _V_NONE_INPUT)
        outputs = func(*inputs)
        is_outputs_tuple, outputs = _as_tuple(outputs, "outputs of the user-provided function", "jvp")
        _check_requires_grad(outputs, "outputs", strict=strict)
        grad_outputs = tuple(_zeros_like(out).requires_grad_(True) for out in outputs)
        grad_inputs = _autograd_grad(outputs, inputs, grad_outputs, create_graph=True)
        _check_requires_grad(grad_inputs, "grad_inputs", strict=strict)
    return _last_backward(outputs, is_outputs_tuple, grad_inputs, grad_outputs, v, outputs, is_outputs_tuple,
                          strict, create_graph, "back_trick")


def _no_forward_mode(name: str, strategy: str) -> None:
    """torch's AssertionError for an unknown strategy; NotImplementedError for forward mode."""
    if strategy not in _STRATEGIES:
        hint = (' Hint: If your function has more outputs than inputs, "forward-mode" tends to be more performant. '
                'Otherwise, prefer to use "reverse-mode".') if name == "strategy" else ""
        raise AssertionError(f'Expected strategy to be either "forward-mode" or "reverse-mode".{hint}')
    if strategy == "forward-mode":
        raise NotImplementedError(f'{name}="forward-mode": seqlab has no forward-mode AD; use '
                                  f'{name}="reverse-mode" (the default), which gives the same result.')


def jacobian(func, inputs, create_graph: bool = False, strict: bool = False, vectorize: bool = False,
             strategy: str = "reverse-mode"):
    """The Jacobian of `func` at `inputs`, as torch.autograd.functional.jacobian.

    One Tensor of shape `output.shape + input.shape` for one output and one input; a tuple over the inputs
    (or the outputs) where that one is a tuple; a tuple over the outputs of tuples over the inputs where both
    are. Computed in reverse mode, one `autograd.grad` per output element. `vectorize=True` is accepted (as
    torch, not with `strict=True`): the rows then come from one `autograd.grad(..., is_grads_batched=True)`
    call, which in seqlab is a loop too. `strategy="forward-mode"` raises NotImplementedError (seqlab has
    no forward-mode AD).
    """
    _no_forward_mode("strategy", strategy)
    with enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jacobian")
        inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
        outputs = func(*inputs)
        is_outputs_tuple, outputs = _as_tuple(outputs, "outputs of the user-provided function", "jacobian")
        _check_requires_grad(outputs, "outputs", strict=strict)
        if vectorize:
            if strict:
                raise RuntimeError("torch.autograd.functional.jacobian: `strict=True` and `vectorized=True` are "
                                   "not supported together. Please either set `strict=False` or "
                                   "`vectorize=False`.")
            jac = _jacobian_batched(outputs, inputs, create_graph)
        else:
            jac = tuple(_jacobian_rows(i, out, inputs, create_graph, strict) for i, out in enumerate(outputs))
        jac = _grad_postprocess(jac, create_graph)
        return _tuple_postprocess(jac, (is_outputs_tuple, is_inputs_tuple))


def _one_hot(out: Tensor, j: int):
    xp = backend.xp_of(out.data)
    e = xp.zeros(out.data.size, dtype=out.dtype)
    e[j] = 1
    return e.reshape(out.shape)


def _jacobian_rows(i: int, out: Tensor, inputs: tuple, create_graph: bool, strict: bool) -> tuple:
    """The Jacobians of output `out` (number i) with respect to each input: one backward per element of
    `out` (along a one-hot grad_output: torch takes the element itself, the same gradient)."""
    rows = [[] for _ in inputs]
    if out.requires_grad:
        for j in range(out.numel()):
            vj = _grad([out], list(inputs), [_one_hot(out, j)], retain_graph=True, create_graph=create_graph,
                       allow_unused=True)
            for k, (row, g, inp) in enumerate(zip(rows, vj, inputs)):
                if g is None:
                    if strict:
                        raise RuntimeError(f"Output {i} of the user-provided function is independent of input {k}. "
                                           "This is not allowed in strict mode.")
                    g = _zeros_like(inp)
                elif strict and create_graph and not g.requires_grad:
                    raise RuntimeError(f"The jacobian of the user-provided function is independent of input {i}. "
                                       "This is not allowed in strict mode when create_graph=True.")
                row.append(g)
    else:  # an output that needs no gradient (strict=False): its Jacobian is zero
        rows = [[_zeros_like(inp)] * out.numel() for inp in inputs]
    return tuple(_stack_rows(row, tuple(out.shape) + tuple(inp.shape), inp) for row, inp in zip(rows, inputs))


def _stack_rows(row: list, shape: tuple, inp: Tensor) -> Tensor:
    if not row:  # an output with no elements
        xp = backend.xp_of(inp.data)
        return Tensor._from_op(xp.zeros(shape, dtype=inp.dtype), None)
    if any(r.requires_grad for r in row):
        return _V.Stack.apply(*row, dim=0).reshape(shape)
    xp = backend.xp_of(inp.data)
    return Tensor._from_op(xp.stack([r.data for r in row]).reshape(shape), None)


def _jacobian_batched(outputs: tuple, inputs: tuple, create_graph: bool) -> tuple:
    """vectorize=True: the rows for all outputs from one `grad(..., is_grads_batched=True)` along the
    standard basis split over the flattened outputs (torch's construction), then split back per output."""
    numels = [out.numel() for out in outputs]
    total = sum(numels)
    flat, basis, start = [], [], 0
    for out, n in zip(outputs, numels):
        xp = backend.xp_of(out.data)
        e = xp.zeros((total, n), dtype=out.dtype)
        e[start:start + n] = xp.eye(n, dtype=out.dtype)
        start += n
        flat.append(out.reshape(-1) if out.requires_grad else out)
        basis.append(e)
    vj = list(_autograd_grad(tuple(flat), inputs, tuple(basis), create_graph=create_graph, is_grads_batched=True))
    per_input = []
    for g, inp in zip(vj, inputs):
        if g is None:
            g = Tensor._from_op(backend.xp_of(inp.data).zeros((total,) + tuple(inp.shape), dtype=inp.dtype), None)
        parts, start = [], 0
        for out, n in zip(outputs, numels):
            parts.append(g[start:start + n].reshape(tuple(out.shape) + tuple(inp.shape)))
            start += n
        per_input.append(parts)
    return tuple(zip(*per_input))


def hessian(func, inputs, create_graph: bool = False, strict: bool = False, vectorize: bool = False,
            outer_jacobian_strategy: str = "reverse-mode"):
    """The Hessian of the scalar function `func` at `inputs`, as torch.autograd.functional.hessian: the
    Jacobian of its Jacobian, both in reverse mode. One Tensor of shape `input.shape * 2` for one input; for
    a tuple of inputs a tuple of tuples, `[i][j]` of shape `inputs[i].shape + inputs[j].shape`.
    `vectorize=True` is accepted (a loop, see `jacobian`); `outer_jacobian_strategy="forward-mode"` raises
    NotImplementedError (seqlab has no forward-mode AD).
    """
    is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "hessian")
    _no_forward_mode("outer_jacobian_strategy", outer_jacobian_strategy)

    def ensure_single_output_function(*inp):
        return _scalar_output(func, inp, strict, "hessian")[1][0].squeeze()

    def jac_func(*inp):
        jac = jacobian(ensure_single_output_function, inp, create_graph=True)
        _check_requires_grad(jac, "jacobian", strict=strict)
        return jac

    res = jacobian(jac_func, inputs, create_graph=create_graph, strict=strict, vectorize=vectorize)
    return _tuple_postprocess(res, (is_inputs_tuple, is_inputs_tuple))


def _scalar_output(func, inputs: tuple, strict: bool, fn_name: str):
    outputs = func(*inputs)
    is_outputs_tuple, outputs = _as_tuple(outputs, "outputs of the user-provided function", fn_name)
    _check_requires_grad(outputs, "outputs", strict=strict)
    if is_outputs_tuple or not isinstance(outputs[0], Tensor):
        raise RuntimeError(f"The function given to {fn_name} should return a single Tensor")
    if outputs[0].numel() != 1:
        raise RuntimeError(f"The Tensor returned by the function given to {fn_name} should contain a single "
                           "element")
    return is_outputs_tuple, outputs


def _gradient_of_scalar(func, inputs, v, create_graph: bool, strict: bool, fn_name: str) -> tuple:
    """vhp's and hvp's common start, inside enable_grad: the inputs (as a tuple, with a graph), v, the scalar
    output of func and its gradient with a graph (the Jacobian); (is_inputs_tuple, inputs, v,
    is_outputs_tuple, outputs, jac)."""
    is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", fn_name)
    inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
    v = _v_or_scalar(v, inputs, is_inputs_tuple, create_graph, fn_name, _V_NONE_INPUT)
    is_outputs_tuple, outputs = _scalar_output(func, inputs, strict, fn_name)
    jac = _autograd_grad(outputs, inputs, create_graph=True)
    _check_requires_grad(jac, "jacobian", strict=strict)
    return is_inputs_tuple, inputs, v, is_outputs_tuple, outputs, jac


def vhp(func, inputs, v=None, create_graph: bool = False, strict: bool = False):
    """(func(*inputs), v · H): the vector-Hessian product of the scalar function `func`, as
    torch.autograd.functional.vhp (a backward through the gradient, which has a graph). `v` has the inputs'
    shapes (optional for a single one-element input). Returns (output, vhp), vhp a Tensor or a tuple as
    `inputs` is.
    """
    with enable_grad():
        is_inputs_tuple, inputs, v, is_outputs_tuple, outputs, jac = _gradient_of_scalar(func, inputs, v, create_graph,
                                                                                         strict, "vhp")
    return _last_backward(outputs, is_outputs_tuple, jac, inputs, v, inputs, is_inputs_tuple, strict, create_graph,
                          "double_back")


def hvp(func, inputs, v=None, create_graph: bool = False, strict: bool = False):
    """(func(*inputs), H · v): the Hessian-vector product of the scalar function `func`, as
    torch.autograd.functional.hvp: by the double-backward trick on top of the gradient's graph (a third
    backward), so it is slower than `vhp`, which equals it for a twice continuously differentiable function.
    Returns (output, hvp), hvp a Tensor or a tuple as `inputs` is.
    """
    with enable_grad():
        is_inputs_tuple, inputs, v, is_outputs_tuple, outputs, jac = _gradient_of_scalar(func, inputs, v, create_graph,
                                                                                         strict, "hvp")
        grad_jac = tuple(_zeros_like(inp).requires_grad_(True) for inp in inputs)
        double_back = _autograd_grad(jac, inputs, grad_jac, create_graph=True)
        _check_requires_grad(jac, "hessian", strict=strict)
    return _last_backward(outputs, is_outputs_tuple, double_back, grad_jac, v, inputs, is_inputs_tuple, strict,
                          create_graph, "double_back_trick")
