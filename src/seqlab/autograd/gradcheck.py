"""`gradcheck` and `gradgradcheck`: torch.autograd's checks of a backward against finite differences.

The Jacobian of each output with respect to each input that requires grad is computed twice:

- numerically, by central differences: every element of the input in turn is moved by -eps and +eps (in
  place, then put back exactly), and column k of the Jacobian is (f(x + eps e_k) - f(x - eps e_k)) / (2 eps);
- analytically, one row per output element through backward: the vector-Jacobian product with a one-hot
  grad_output e_k is row k of J (`autograd.grad(..., retain_graph=True)`), run twice to see that the
  backward gives the same answer again (`nondet_tol`).

Both are held as (input.numel(), output.numel()) matrices, as torch's, and compared with torch's rule
|analytical - numerical| <= atol + rtol * |numerical|. A mismatch raises `GradcheckError` (a RuntimeError)
with torch's message ("Jacobian mismatch for output i with respect to input j," and both matrices).

`fast_mode=True` (torch's, pytorch issue 53876) compares one number per (input, output) pair instead of
whole matrices: v^T J u, with u and v random unit vectors drawn from a generator of its own; numerically
J u is one central difference along u, analytically v^T J is one backward. atol is scaled by
sum(u) * sum(v) as torch's, and a failure recomputes the slow Jacobians for the message.

`gradgradcheck` checks the second derivative by running `gradcheck` on the function that returns the first
one (`autograd.grad(..., create_graph=True)`), the grad_outputs being inputs too.

seqlab has no forward-mode AD and no vmap, so check_forward_ad, check_batched_grad,
check_batched_forward_grad (and gradgradcheck's check_fwd_over_rev) are refused with NotImplementedError
rather than silently skipped. Dense tensors only: `masked` changes nothing, as in torch for dense inputs.
"""
from __future__ import annotations

import warnings

import numpy as np

from seqlab.autograd.grad import grad as _grad
from seqlab.autograd.tensor import Tensor

__all__ = ["gradcheck", "gradgradcheck", "GradcheckError"]


class GradcheckError(RuntimeError):
    """Raised by gradcheck and gradgradcheck when a check fails (as torch.autograd.gradcheck.GradcheckError)."""


_FAST_FAIL_SLOW_OK = (
    "Fast gradcheck failed but element-wise differences are small. This means that the\n"
    "test might've passed in slow_mode!\n\n"
    "If the test manually invokes gradcheck/gradgradcheck, then call gradcheck/gradgradcheck\n"
    "with `fast_mode=False` as a keyword argument.")


def _as_tuple(x) -> tuple:
    if isinstance(x, tuple):
        return x
    return tuple(x) if isinstance(x, list) else (x,)


def _differentiable(outputs) -> tuple:
    return tuple(o for o in _as_tuple(outputs) if isinstance(o, Tensor) and o.requires_grad)


def _is_float(o) -> bool:
    return isinstance(o, Tensor) and np.dtype(o.dtype).kind in "fc"


def _wrap(array) -> Tensor:
    return Tensor._from_op(np.asarray(array), None)


def _refuse_unsupported(**flags) -> None:
    for name, why in (("check_forward_ad", "forward-mode AD"), ("check_batched_grad", "vmap"),
                      ("check_batched_forward_grad", "vmap and forward-mode AD"),
                      ("check_fwd_over_rev", "forward-mode AD")):
        if flags.get(name):
            raise NotImplementedError(f"{name}=True needs {why}, which seqlab does not have; pass {name}=False")


def _check_inputs(inputs: tuple) -> list:
    """The (position, tensor) of each input that requires grad; torch's warning for one that is not
    float64, torch's error for one with a stride-0 dimension (its elements could not be moved one by one)."""
    diff = []
    for idx, inp in enumerate(inputs):
        if not (isinstance(inp, Tensor) and inp.requires_grad):
            continue
        if np.dtype(inp.dtype) not in (np.float64, np.complex128):
            warnings.warn(f"Input #{idx} requires gradient and is not a double precision floating point or complex. "
                          "This check will likely fail if all the inputs are not of double precision floating point "
                          "or complex. ", UserWarning, stacklevel=4)
        arr = inp.data
        if not all(st != 0 or sz <= 1 for st, sz in zip(arr.strides, arr.shape)):
            raise RuntimeError(f"The {idx}th input has a dimension with stride 0. gradcheck only supports inputs that "
                               "are non-overlapping to be able to compute the numerical gradients correctly. You "
                               "should call .contiguous on the input before passing it to gradcheck.")
        if not arr.flags.writeable:
            raise RuntimeError(f"The {idx}th input's array is read-only: gradcheck moves its elements in place to "
                               "compute numerical gradients; pass a copy (.clone())")
        diff.append((idx, inp))
    if not diff:
        raise ValueError("gradcheck expects at least one input tensor to require gradient, but none of them have "
                         "requires_grad=True.")
    return diff


def _evaluate(func, inputs: tuple) -> list:
    """The function's outputs as arrays (copies), None for an output that is not a float tensor."""
    return [np.array(o.data) if _is_float(o) else None for o in _as_tuple(func(*inputs))]


def _central_difference(func, inputs, arr, where, step) -> list:
    """(f(x + step) - f(x - step)) / (2 |step|) per output, `step` added to arr[where] in place and taken away
    again exactly (the original values are copied back)."""
    orig = np.array(arr[where])
    arr[where] = orig - step
    before = _evaluate(func, inputs)
    arr[where] = orig + step
    after = _evaluate(func, inputs)
    arr[where] = orig
    return [None if a is None else (b - a) for a, b in zip(before, after)]


def _numerical_jacobians(func, inputs: tuple, diff_inputs: list, eps: float, func_out) -> list:
    """[input][output] -> (input.numel(), output.numel()) array, in the output's dtype (None for an output
    that is not a float tensor)."""
    outs = _as_tuple(func_out)
    result = []
    for _, t in diff_inputs:
        arr = t.data
        jac = [np.zeros((arr.size, o.numel()), dtype=o.dtype) if _is_float(o) else None for o in outs]
        for k, pos in enumerate(np.ndindex(arr.shape)):  # row-major: row k is flat index k, as the analytical
            for j, d in zip(jac, _central_difference(func, inputs, arr, pos, eps)):
                if j is not None:
                    j[k] = (d / (2 * eps)).reshape(-1)
        result.append(jac)
    return result


def _vjps(output: Tensor, tensors: list, grad_output) -> list:
    """One vector-Jacobian product per tensor (zeros where the output does not depend on it)."""
    grads = _grad([output], tensors, [grad_output], retain_graph=True, allow_unused=True)
    return [np.zeros(t.shape, t.dtype) if g is None else g.data for g, t in zip(grads, tensors)]


def _check_vjp_attributes(vjps: list, tensors: list, check_grad_dtypes: bool) -> None:
    for g, t in zip(vjps, tensors):
        if check_grad_dtypes and g.dtype != np.dtype(t.dtype):
            raise GradcheckError("Gradient has dtype mismatch")
        if tuple(g.shape) != tuple(t.shape):
            raise GradcheckError("Analytical gradient has incorrect size")


def _not_reentrant(nondet_tol: float) -> GradcheckError:
    return GradcheckError("Backward is not reentrant, i.e., running backward with same input and grad_output "
                          "multiple times gives different values, although analytical gradient matches numerical "
                          f"gradient.The tolerance for nondeterminism was {nondet_tol}.")


def _analytical_jacobians(output: Tensor, tensors: list, nondet_tol: float, check_grad_dtypes: bool) -> list:
    """[input] -> (input.numel(), output.numel()) array: column k is the backward of the one-hot e_k."""
    runs = []
    for _ in range(2):  # twice: a backward must give the same answer again (torch's reentrancy check)
        jac = [np.zeros((t.numel(), output.numel()), dtype=t.dtype) for t in tensors]
        for k in range(output.numel()):
            onehot = np.zeros(output.shape, dtype=output.dtype)
            onehot.flat[k] = 1
            vjps = _vjps(output, tensors, onehot)
            _check_vjp_attributes(vjps, tensors, check_grad_dtypes)
            for j, g in zip(jac, vjps):
                j[:, k] = g.reshape(-1)
        runs.append(jac)
    for a, b in zip(*runs):
        if a.size and np.max(np.abs(a - b)) > nondet_tol:
            raise _not_reentrant(nondet_tol)
    return runs[0]


def _mismatch(analytical, numerical, output_idx: int, input_idx: int) -> str:
    return (f"Jacobian mismatch for output {output_idx:d} with respect to input {input_idx:d},\n"
            f"numerical:{_wrap(numerical)}\nanalytical:{_wrap(analytical)}\n")


def _no_differentiable_outputs(numerical: list) -> None:
    for per_output in numerical:
        for n in per_output:
            if n is not None and np.any(n != 0):
                raise GradcheckError("Numerical gradient for function expected to be zero")


def _slow_check(func, func_out, inputs, diff_inputs, outputs, eps, rtol, atol, nondet_tol, check_grad_dtypes):
    numerical = _numerical_jacobians(func, inputs, diff_inputs, eps, func_out)
    if not outputs:
        return _no_differentiable_outputs(numerical)
    keep = [i for i, o in enumerate(_as_tuple(func_out)) if isinstance(o, Tensor) and o.requires_grad]
    tensors = [t for _, t in diff_inputs]
    for i, o in enumerate(outputs):
        analytical = _analytical_jacobians(o, tensors, nondet_tol, check_grad_dtypes)
        for j, a in enumerate(analytical):
            n = numerical[j][keep[i]]
            if not np.allclose(a, n, rtol=rtol, atol=atol):
                raise GradcheckError(_mismatch(a, n, i, j))


def _unit_random(shape, dtype, rng) -> np.ndarray:
    vec = rng.random(int(np.prod(shape, dtype=np.int64))).astype(dtype)
    norm = np.linalg.norm(vec)
    return vec / norm if norm > 0 else vec


def _fast_check(func, func_out, inputs, diff_inputs, outputs, eps, rtol, atol, nondet_tol, check_grad_dtypes):
    rng = np.random.default_rng(0)  # a generator of its own: the user's seeded streams are left alone
    tensors = [t for _, t in diff_inputs]
    all_u = [_unit_random(t.shape, t.dtype, rng) for t in tensors]
    all_v = [_unit_random(o.shape, o.dtype, rng) for o in outputs]
    keep = [i for i, o in enumerate(_as_tuple(func_out)) if isinstance(o, Tensor) and o.requires_grad]
    numerical = []  # [input][output]: v^T (J u), J u by one central difference along u
    for t, u in zip(tensors, all_u):
        diffs = _central_difference(func, inputs, t.data, Ellipsis, (eps * u).reshape(t.shape))
        if not outputs:
            if any(d is not None and np.any(d != 0) for d in diffs):
                raise GradcheckError("Numerical gradient for function expected to be zero")
            continue
        numerical.append([np.dot(v, diffs[keep[i]].reshape(-1) / (2 * eps)) for i, v in enumerate(all_v)])
    if not outputs:
        return
    for i, (o, v) in enumerate(zip(outputs, all_v)):
        runs = []
        for _ in range(2):
            vjps = _vjps(o, tensors, v.reshape(o.shape))
            _check_vjp_attributes(vjps, tensors, check_grad_dtypes)
            runs.append(vjps)
        for a, b in zip(*runs):
            if a.size and np.max(np.abs(a - b)) > nondet_tol:
                raise _not_reentrant(nondet_tol)
        for j, (vj, u) in enumerate(zip(runs[0], all_u)):
            a, n = np.dot(vj.reshape(-1), u), numerical[j][i]
            if not np.allclose(a, n, rtol=rtol, atol=atol * float(u.sum()) * float(v.sum())):
                raise GradcheckError(_mismatch(a, n, i, j) + _slow_report(func, inputs, diff_inputs, o, keep[i],
                                                                          j, rtol, atol, eps))


def _slow_report(func, inputs, diff_inputs, output, out_pos, input_idx, rtol, atol, eps) -> str:
    """torch's second half of a fast-mode failure: the Jacobians of that pair, computed element-wise."""
    numerical = _numerical_jacobians(func, inputs, [diff_inputs[input_idx]], eps, func(*inputs))[0][out_pos]
    analytical = _analytical_jacobians(output, [diff_inputs[input_idx][1]], np.inf, False)[0]
    max_diff = np.max(np.abs(numerical - analytical)) if numerical.size else 0.0
    msg = ("\nThe above quantities relating the numerical and analytical jacobians are computed \n"
           "in fast mode. See: https://github.com/pytorch/pytorch/issues/53876 for more background \n"
           "about fast mode. Below, we recompute numerical and analytical jacobians in slow mode:\n\n"
           f"Numerical:\n {_wrap(numerical)}\nAnalytical:\n{_wrap(analytical)}\n\n"
           f"The max per-element difference (slow mode) is: {_wrap(max_diff)}.\n")
    if np.allclose(analytical, numerical, rtol=rtol, atol=atol):
        msg += _FAST_FAIL_SLOW_OK
    return msg


def _check_zero_grad_outputs(outputs: tuple, tensors: list, undefined: bool) -> None:
    """Backward with all-zero grad_outputs must give zero (or no) gradients. For check_undefined_grad, an
    'undefined' grad_output (torch's) is here an output left out of the backward, each in turn."""
    subsets = [list(outputs)]
    if undefined and len(outputs) > 1:
        subsets += [[o for k, o in enumerate(outputs) if k != skip] for skip in range(len(outputs))]
    for subset in subsets:
        zeros = [np.zeros(o.shape, o.dtype) for o in subset]
        try:
            grads = _grad(subset, tensors, zeros, retain_graph=True, allow_unused=True)
        except RuntimeError as e:
            if not undefined:
                raise
            raise GradcheckError("Expected backward function to handle undefined output grads. Please look at "
                                 "\"Notes about undefined output gradients\" in \"tools/autograd/derivatives.yaml\"") \
                from e
        for g, t in zip(grads, tensors):
            if g is None:
                continue
            if np.any(g.data != 0):
                raise GradcheckError(
                    "Expected all input grads to be undefined or zero when all output grads are undefined or zero. "
                    "Please look at \"Notes about undefined output gradients\" in "
                    "\"tools/autograd/derivatives.yaml\"" if undefined else "backward not multiplied by grad_output")
            if not undefined and g.dtype != t.dtype:
                raise GradcheckError("grad is incorrect type")
            if not undefined and tuple(g.shape) != tuple(t.shape):
                raise GradcheckError("grad is incorrect size")


def gradcheck(func, inputs, *, eps: float = 1e-6, atol: float = 1e-5, rtol: float = 1e-3,
              raise_exception: bool = True, nondet_tol: float = 0.0, check_undefined_grad: bool = True,
              check_grad_dtypes: bool = False, check_batched_grad: bool = False,
              check_batched_forward_grad: bool = False, check_forward_ad: bool = False,
              check_backward_ad: bool = True, fast_mode: bool = False, masked: bool | None = None) -> bool:
    """Check the gradients of `func(*inputs)` against central differences, for every input Tensor that
    requires grad (float64, or expect torch's warning and tolerance trouble). Returns True, or on a
    mismatch raises GradcheckError (False instead with raise_exception=False), as torch.autograd.gradcheck."""
    if not (check_forward_ad or check_backward_ad):
        raise AssertionError("Expected at least one of check_forward_ad or check_backward_ad to be True")
    if check_batched_grad and not check_backward_ad:
        raise AssertionError("Setting check_batched_grad=True requires check_backward_ad to be True")
    if check_batched_forward_grad and not check_forward_ad:
        raise AssertionError("Setting check_batched_forward_grad=True requires check_forward_ad to be True")
    _refuse_unsupported(check_forward_ad=check_forward_ad, check_batched_grad=check_batched_grad,
                        check_batched_forward_grad=check_batched_forward_grad)
    try:
        return _gradcheck(func, inputs, eps, atol, rtol, nondet_tol, check_undefined_grad, check_grad_dtypes,
                          fast_mode)
    except GradcheckError:
        if raise_exception:
            raise
        return False


def _gradcheck(func, inputs, eps, atol, rtol, nondet_tol, check_undefined_grad, check_grad_dtypes, fast_mode):
    inputs = _as_tuple(inputs)
    diff_inputs = _check_inputs(inputs)
    func_out = func(*inputs)
    outputs = _differentiable(func_out)
    check = _fast_check if fast_mode else _slow_check
    check(func, func_out, inputs, diff_inputs, outputs, eps, rtol, atol, nondet_tol, check_grad_dtypes)
    tensors = [t for _, t in diff_inputs]
    if outputs:
        _check_zero_grad_outputs(outputs, tensors, undefined=False)  # torch's "backward not multiplied by grad_output"
        if check_undefined_grad:
            _check_zero_grad_outputs(_differentiable(func(*inputs)), tensors, undefined=True)
    return True


def gradgradcheck(func, inputs, grad_outputs=None, *, eps: float = 1e-6, atol: float = 1e-5, rtol: float = 1e-3,
                  gen_non_contig_grad_outputs: bool = False, raise_exception: bool = True, nondet_tol: float = 0.0,
                  check_undefined_grad: bool = True, check_grad_dtypes: bool = False, check_batched_grad: bool = False,
                  check_fwd_over_rev: bool = False, check_rev_over_rev: bool = True, fast_mode: bool = False,
                  masked: bool = False) -> bool:
    """Check second derivatives, as torch.autograd.gradgradcheck: `gradcheck` of the function
    (inputs, grad_outputs) -> autograd.grad(func(inputs), inputs, grad_outputs, create_graph=True).
    grad_outputs default to random tensors in [-1, 1) that require grad (testing.make_tensor)."""
    if not (check_fwd_over_rev or check_rev_over_rev):
        raise AssertionError("Expected at least one of check_fwd_over_rev or check_rev_over_rev to be True")
    if check_undefined_grad and not check_rev_over_rev:
        raise AssertionError("Setting check_undefined_grad=True requires check_rev_over_rev to be True")
    if check_batched_grad and not check_rev_over_rev:
        raise AssertionError("Setting check_batched_grad=True requires check_rev_over_rev to be True")
    _refuse_unsupported(check_fwd_over_rev=check_fwd_over_rev, check_batched_grad=check_batched_grad)
    inputs = _as_tuple(inputs)
    if grad_outputs is None:
        from seqlab.testing import make_tensor

        grad_outputs = tuple(
            make_tensor(o.shape, dtype=o.dtype if np.dtype(o.dtype).kind in "fc" else np.float64, device=o.device,
                        low=-1, high=1, requires_grad=True, noncontiguous=gen_non_contig_grad_outputs)
            for o in _differentiable(func(*inputs)))
    grad_outputs = _as_tuple(grad_outputs)
    n_out = len(grad_outputs)
    diff_inputs = {i for i, x in enumerate(inputs) if isinstance(x, Tensor) and x.requires_grad}

    def first_derivative(*args):
        args_in = args[:len(args) - n_out] if n_out else args
        outputs = _differentiable(func(*args_in))
        grads = _grad(outputs, [x for i, x in enumerate(args_in) if i in diff_inputs], list(args[len(args_in):]),
                      create_graph=True, allow_unused=True)
        return tuple(g for g in grads if g is not None)

    return gradcheck(first_derivative, inputs + grad_outputs, eps=eps, atol=atol, rtol=rtol,
                     raise_exception=raise_exception, nondet_tol=nondet_tol, check_undefined_grad=check_undefined_grad,
                     check_grad_dtypes=check_grad_dtypes, fast_mode=fast_mode, masked=masked)
