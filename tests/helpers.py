"""One way to prove an op or a module: central differences, and PyTorch on the same numbers.

    from helpers import check_op, check_module       # tests/ is on sys.path
    check_op(lambda a, b: a * b, lambda a, b: a * b, [(3, 4), (4,)])
    check_module(seqlab_layer, torch_layer, [x])

`check_op(fn_seqlab, fn_torch, inputs)`:
  * inputs: a list whose items are shapes (tuples -> float draws from N(0, 1)),
    NumPy arrays (float arrays are differentiable, integer/bool arrays are passed
    as they are), `const(array)` (a float array that is not differentiated) or
    plain Python values (passed unchanged);
  * float64: the analytic gradient equals central differences, and forward and
    backward equal torch's to `rtol64` (1e-9);
  * float32: forward and backward equal torch's to `rtol32` (1e-5) with an atol
    scaled by the largest value compared (`atol32` · max(1, max|expected|));
  * outputs may be a tensor or any nesting of tuples/lists/dicts; non-float
    outputs (indices) must be equal; every float output is pulled back with a
    random cotangent so all of them are checked.

`check_module(seqlab_module, torch_module, inputs)` loads
`torch_module.state_dict()` into the seqlab module (strict) and compares the
outputs, the input gradients and every parameter gradient by name.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

import seqlab
from seqlab import Tensor

try:
    import torch
except ImportError:  # pragma: no cover - torch is a test dependency
    torch = None

__all__ = ["check_op", "check_module", "gradcheck", "const", "assert_close", "same_as_torch", "to_torch",
           "to_seqlab", "flatten_outputs", "DTYPES"]

DTYPES = {"float64": np.float64, "float32": np.float32}


@dataclass
class const:
    """A float array passed to both functions without asking for its gradient."""

    array: np.ndarray


# ---- comparison ---------------------------------------------------------------------------
def same_as_torch(s, t) -> None:
    """seqlab tensor `s` equals torch tensor `t`: shape, dtype and values (floats to 1e-6)."""
    a, b = s.numpy(), t.detach().numpy()
    assert a.dtype == b.dtype, (a.dtype, b.dtype)
    assert a.shape == b.shape, (a.shape, b.shape)
    if a.dtype.kind == "f":
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)
    else:
        np.testing.assert_array_equal(a, b)


def assert_close(actual, expected, rtol: float, atol: float | None = None, scale_atol: float = 0.0,
                 floor: float = 0.0, what: str = "value") -> None:
    """|actual − expected| <= atol + rtol·|expected| element-wise.

    atol defaults to `scale_atol` · max(floor, max|expected|): a norm-relative
    allowance for entries that cancel to ~0 (check_op and check_module use
    floor=1, so tensors of tiny values, e.g. a gradient that is exactly 0 in
    exact arithmetic and rounding noise in torch, are compared in absolute terms).
    """
    a = np.asarray(actual)
    e = np.asarray(expected)
    if a.shape != e.shape:
        raise AssertionError(f"{what}: shape {a.shape} != expected {e.shape}")
    if e.dtype.kind not in "fc":
        np.testing.assert_array_equal(a, e, err_msg=what)
        return
    if atol is None:
        finite = np.abs(e[np.isfinite(e)])
        atol = scale_atol * max(floor, float(finite.max()) if finite.size else 0.0) + 1e-300
    np.testing.assert_allclose(a.astype(np.float64), e.astype(np.float64), rtol=rtol, atol=atol,
                               err_msg=what, equal_nan=True)


def flatten_outputs(out) -> list:
    """Leaves of a nest of tuples/lists/dicts (dict values in order); None is dropped."""
    if out is None:
        return []
    if isinstance(out, dict):
        return [x for v in out.values() for x in flatten_outputs(v)]
    if isinstance(out, (list, tuple)):
        return [x for v in out for x in flatten_outputs(v)]
    return [out]


def _np(x) -> np.ndarray:
    if isinstance(x, Tensor):
        return x.numpy()
    if torch is not None and isinstance(x, torch.Tensor):
        return x.detach().cpu().numpy()
    return np.asarray(x)


def to_seqlab(x, dtype=None, requires_grad: bool = False):
    """An array as a seqlab Tensor (float arrays cast to `dtype` when given)."""
    arr = np.asarray(x)
    if dtype is not None and arr.dtype.kind == "f":
        arr = arr.astype(dtype)
    return Tensor(arr, requires_grad=requires_grad)


def to_torch(x, dtype=None, requires_grad: bool = False):
    arr = np.asarray(x)
    if dtype is not None and arr.dtype.kind == "f":
        arr = arr.astype(dtype)
    t = torch.from_numpy(np.array(arr, order="C", copy=True))
    return t.requires_grad_(requires_grad) if requires_grad else t


def _convert_kwargs(kwargs: dict | None, conv: Callable, dtype) -> dict:
    out = {}
    for k, v in (kwargs or {}).items():
        if isinstance(v, np.ndarray):
            v = conv(v, dtype)
        elif isinstance(v, const):
            v = conv(v.array, dtype)
        out[k] = v
    return out


# ---- inputs ---------------------------------------------------------------------------------
def _draw_inputs(inputs: Sequence, rng: np.random.Generator, domain: str) -> tuple[list, list[bool]]:
    """(values, differentiable) with float64 arrays for every float input."""
    values, diff = [], []
    for spec in inputs:
        if isinstance(spec, tuple) and all(isinstance(s, (int, np.integer)) for s in spec):
            x = rng.standard_normal(spec)
            if domain == "positive":
                x = np.abs(x) + 0.5
            elif domain == "unit":  # (-0.9, 0.9), for ops defined on (-1, 1)
                x = np.tanh(x) * 0.9
            values.append(np.asarray(x, dtype=np.float64))
            diff.append(True)
        elif isinstance(spec, const):
            values.append(const(np.asarray(spec.array)))
            diff.append(False)
        elif isinstance(spec, (np.ndarray, np.generic)):
            spec = np.asarray(spec)
            is_float = spec.dtype.kind == "f"
            values.append(spec.astype(np.float64) if is_float else spec)
            diff.append(is_float)
        else:
            values.append(spec)
            diff.append(False)
    return values, diff


def _args(values, diff, dtype, convert):
    """The op's arguments for one library: `convert` is to_seqlab or to_torch."""
    args = []
    for v, d in zip(values, diff):
        if isinstance(v, const):
            args.append(convert(v.array, dtype))
        elif isinstance(v, np.ndarray):
            args.append(convert(v, dtype, requires_grad=d))
        else:
            args.append(v)
    return args


def _is_float_out(x) -> bool:
    return _np(x).dtype.kind == "f"


def _cotangents(outputs: list, rng: np.random.Generator) -> list:
    """A fixed random weight for every float output (None for the others)."""
    return [rng.standard_normal(_np(o).shape) if _is_float_out(o) else None for o in outputs]


def _seqlab_scalar(outputs, weights):
    total = None
    for o, w in zip(outputs, weights):
        if w is None or not isinstance(o, Tensor) or not o.requires_grad:
            continue
        term = (o * Tensor(w.astype(o.dtype))).sum()
        total = term if total is None else total + term
    return total


def _torch_scalar(outputs, weights):
    total = None
    for o, w in zip(outputs, weights):
        if w is None or not isinstance(o, torch.Tensor) or not o.requires_grad:
            continue
        term = (o * torch.from_numpy(w.astype(_np(o).dtype))).sum()
        total = term if total is None else total + term
    return total


# ---- central differences ------------------------------------------------------------------
def gradcheck(fn: Callable, values: list, diff: list[bool], kwargs: dict | None = None, *, eps: float = 1e-6,
              rtol: float = 1e-5, atol: float = 1e-7, max_elements: int = 12, directions: int = 2,
              seed: int = 0) -> None:
    """Analytic gradients of Σ w·fn(inputs) against central differences, in float64.

    Checks up to `max_elements` entries of every differentiable input one by
    one, plus `directions` random directions through all inputs at once.
    """
    rng = np.random.default_rng(seed + 1)
    kw64 = _convert_kwargs(kwargs, to_seqlab, np.float64)

    def run(vals, grad: bool):
        args = [to_seqlab(v, np.float64, requires_grad=grad and d) if isinstance(v, np.ndarray)
                else (to_seqlab(v.array, np.float64) if isinstance(v, const) else v)
                for v, d in zip(vals, diff)]
        if grad:
            return args, flatten_outputs(fn(*args, **kw64))
        with seqlab.no_grad():
            return args, flatten_outputs(fn(*args, **kw64))

    args, outs = run(values, True)
    weights = _cotangents(outs, rng)
    loss = _seqlab_scalar(outs, weights)
    if loss is None:
        raise AssertionError("gradcheck: no output requires grad")
    loss.backward()
    analytic = [a.grad if (d and isinstance(a, Tensor)) else None for a, d in zip(args, diff)]

    def f(vals) -> float:
        _, o = run(vals, False)
        return float(sum((_np(x).astype(np.float64) * w).sum() for x, w in zip(o, weights) if w is not None))

    for i, (v, d) in enumerate(zip(values, diff)):
        if not d:
            continue
        g = analytic[i]
        assert g is not None, f"input {i} got no gradient"
        assert g.shape == v.shape, f"input {i}: gradient shape {g.shape} != input shape {v.shape}"
        flat_idx = np.arange(v.size)
        if v.size > max_elements:
            flat_idx = rng.choice(v.size, max_elements, replace=False)
        for j in flat_idx:
            idx = np.unravel_index(j, v.shape)
            plus = [x.copy() if isinstance(x, np.ndarray) else x for x in values]
            minus = [x.copy() if isinstance(x, np.ndarray) else x for x in values]
            plus[i][idx] += eps
            minus[i][idx] -= eps
            num = (f(plus) - f(minus)) / (2 * eps)
            assert abs(num - g[idx]) <= atol + rtol * abs(num), \
                f"input {i} element {idx}: analytic {g[idx]!r} vs numeric {num!r}"
    for _ in range(directions):
        dirs = [rng.standard_normal(v.shape) if d else None for v, d in zip(values, diff)]
        plus = [np.asarray(v + eps * u) if u is not None else v for v, u in zip(values, dirs)]
        minus = [np.asarray(v - eps * u) if u is not None else v for v, u in zip(values, dirs)]
        num = (f(plus) - f(minus)) / (2 * eps)
        ana = float(sum((g * u).sum() for g, u in zip(analytic, dirs) if u is not None))
        assert abs(num - ana) <= atol * 10 + rtol * abs(num), f"directional derivative: analytic {ana} vs numeric {num}"


# ---- the op check ------------------------------------------------------------------------------
def check_op(fn_seqlab: Callable, fn_torch: Callable | None, inputs: Sequence, kwargs: dict | None = None, *,
             torch_kwargs: dict | None = None, domain: str = "real", seed: int = 0,
             dtypes: Sequence[str] = ("float64", "float32"), grad: bool = True, gradcheck_: bool = True,
             rtol64: float = 1e-9, rtol32: float = 1e-5, atol32: float = 1e-5, atol64: float = 1e-12,
             gc_rtol: float = 1e-5, gc_atol: float = 1e-7, max_elements: int = 12) -> None:
    """Prove `fn_seqlab` by central differences (float64) and against `fn_torch` (float64, float32).

    `kwargs` go to both functions (NumPy arrays in them become tensors of the
    run's dtype; use `torch_kwargs` where torch's differ). `domain` shapes the
    random draws: 'real' (N(0,1)), 'positive' (|N| + 0.5) or 'unit' (−0.9, 0.9).
    """
    rng = np.random.default_rng(seed)
    values, diff = _draw_inputs(inputs, rng, domain)
    grad = grad and any(diff)
    if grad and gradcheck_:
        gradcheck(fn_seqlab, values, diff, kwargs, rtol=gc_rtol, atol=gc_atol, max_elements=max_elements,
                  seed=seed)
    if fn_torch is None:
        return
    assert torch is not None, "torch is needed to compare with PyTorch"
    for name in dtypes:
        dt = DTYPES[name]
        rtol, scale = (rtol64, atol64) if name == "float64" else (rtol32, atol32)
        s_args = _args(values, diff, dt, to_seqlab)
        t_args = _args(values, diff, dt, to_torch)
        s_out = flatten_outputs(fn_seqlab(*s_args, **_convert_kwargs(kwargs, to_seqlab, dt)))
        t_kw = torch_kwargs if torch_kwargs is not None else kwargs
        t_out = flatten_outputs(fn_torch(*t_args, **_convert_kwargs(t_kw, to_torch, dt)))
        assert len(s_out) == len(t_out), f"{len(s_out)} outputs vs torch's {len(t_out)}"
        for k, (a, b) in enumerate(zip(s_out, t_out)):
            if _is_float_out(b):
                assert _np(a).dtype == _np(b).dtype, f"output {k} dtype {_np(a).dtype} vs torch {_np(b).dtype}"
            assert_close(_np(a), _np(b), rtol, scale_atol=scale, floor=1.0, what=f"{name} output {k}")
        if not grad:
            continue
        weights = _cotangents(t_out, np.random.default_rng(seed + 7))
        s_loss, t_loss = _seqlab_scalar(s_out, weights), _torch_scalar(t_out, weights)
        if t_loss is None:
            continue
        assert s_loss is not None, "torch's output needs grad but seqlab's does not"
        s_loss.backward()
        t_loss.backward()
        for i, (sa, ta, d) in enumerate(zip(s_args, t_args, diff)):
            if not d:
                continue
            tg = ta.grad
            sg = sa.grad
            if tg is None:
                assert sg is None or not np.any(sg), f"input {i}: torch gives no gradient, seqlab does"
                continue
            assert sg is not None, f"{name} input {i}: no gradient"
            assert sg.dtype == _np(tg).dtype, f"{name} input {i}: gradient dtype {sg.dtype} vs {_np(tg).dtype}"
            assert_close(sg, _np(tg), rtol, scale_atol=scale, floor=1.0, what=f"{name} grad of input {i}")


# ---- the module check --------------------------------------------------------------------------
def check_module(seqlab_module, torch_module, inputs: Sequence, kwargs: dict | None = None, *,
                 torch_kwargs: dict | None = None, dtype: str = "float64", rtol: float | None = None,
                 atol: float | None = None, seed: int = 0, grad: bool = True,
                 select: Callable | None = None, select_torch: Callable | None = None,
                 name_map: Callable[[str], str] | None = None) -> tuple[list, list]:
    """Same weights, same inputs: same outputs, input gradients and parameter gradients.

    `inputs` as for `check_op` (shapes draw floats; integer arrays pass as they
    are). Both modules are cast to `dtype` first. `select`/`select_torch` pick
    the comparable part of each output (default: every leaf of the output nest).
    `name_map` maps a seqlab parameter name to torch's (default: the same).
    Returns the flattened (seqlab, torch) outputs.
    """
    assert torch is not None, "torch is needed to compare with PyTorch"
    dt = DTYPES[dtype]
    rtol = rtol if rtol is not None else (1e-9 if dtype == "float64" else 1e-5)
    scale = atol if atol is not None else (1e-12 if dtype == "float64" else 1e-5)
    floor = 1.0
    torch_module = torch_module.to(torch.float64 if dtype == "float64" else torch.float32)
    seqlab_module.to(dtype=dt)
    seqlab_module.load_state_dict({k: v.detach().cpu().numpy() for k, v in torch_module.state_dict().items()})
    for p in seqlab_module.parameters():
        p.grad = None
    torch_module.zero_grad(set_to_none=True)

    rng = np.random.default_rng(seed)
    values, diff = _draw_inputs(inputs, rng, "real")
    s_args = _args(values, diff, dt, to_seqlab)
    t_args = _args(values, diff, dt, to_torch)
    s_raw = seqlab_module(*s_args, **_convert_kwargs(kwargs, to_seqlab, dt))
    t_kw = torch_kwargs if torch_kwargs is not None else kwargs
    t_raw = torch_module(*t_args, **_convert_kwargs(t_kw, to_torch, dt))
    s_out = flatten_outputs(select(s_raw) if select else s_raw)
    t_out = flatten_outputs((select_torch or select)(t_raw) if (select_torch or select) else t_raw)
    assert len(s_out) == len(t_out), f"{len(s_out)} outputs vs torch's {len(t_out)}"
    for k, (a, b) in enumerate(zip(s_out, t_out)):
        assert_close(_np(a), _np(b), rtol, scale_atol=scale, floor=floor, what=f"output {k}")
    if not grad:
        return s_out, t_out
    weights = _cotangents(t_out, np.random.default_rng(seed + 7))
    s_loss, t_loss = _seqlab_scalar(s_out, weights), _torch_scalar(t_out, weights)
    assert s_loss is not None and t_loss is not None, "no output requires grad"
    s_loss.backward()
    t_loss.backward()
    for i, (sa, ta, d) in enumerate(zip(s_args, t_args, diff)):
        if d and ta.grad is not None:
            assert sa.grad is not None, f"input {i}: no gradient"
            assert_close(sa.grad, _np(ta.grad), rtol, scale_atol=scale, floor=floor, what=f"grad of input {i}")
    t_params = dict(torch_module.named_parameters())
    s_params = dict(seqlab_module.named_parameters())
    mapped = {(name_map(n) if name_map else n): p for n, p in s_params.items()}
    assert set(mapped) == set(t_params), \
        f"parameter names differ: only seqlab {sorted(set(mapped) - set(t_params))}, " \
        f"only torch {sorted(set(t_params) - set(mapped))}"
    for n, tp in t_params.items():
        sp = mapped[n]
        if tp.grad is None:
            assert sp.grad is None or not np.any(sp.grad), f"{n}: torch gives no gradient, seqlab does"
            continue
        assert sp.grad is not None, f"parameter {n}: no gradient"
        assert_close(sp.grad, _np(tp.grad), rtol, scale_atol=scale, floor=floor, what=f"grad of {n}")
    return s_out, t_out


def wgan_gp_loss(lib, critic, real, fake, alpha, lam: float = 10.0):
    """The WGAN-GP critic loss (Gulrajani et al. 2017, eq. 3) in `lib` (seqlab or torch): D(fake) − D(real) +
    λ (‖∂D/∂x̂‖ − 1)², the gradient's norm over each whole sample at x̂ = α·real + (1 − α)·fake, taken with
    autograd.grad(create_graph=True) so the loss's backward differentiates through it (double backward)."""
    x_hat = (alpha * real + (1 - alpha) * fake).requires_grad_(True)
    g, = lib.autograd.grad(critic(x_hat).sum(), x_hat, create_graph=True)
    penalty = ((g.reshape(g.shape[0], -1).norm(2, dim=1) - 1) ** 2).mean()
    return critic(fake).mean() - critic(real).mean() + lam * penalty
