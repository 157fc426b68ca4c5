"""Random tensors, as torch's: `randn`, `rand`, `randint`, `randperm`, `normal`, `bernoulli`, `multinomial`
and the `*_like` draws. Every one draws from seqlab's generator (`seqlab.manual_seed`) unless given a
`generator=` (a `seqlab.Generator` or any NumPy Generator), on the CPU, then moves the values to the device."""
from __future__ import annotations

import numpy as np

from seqlab import backend
from seqlab import random as _random
from seqlab.autograd.function import is_grad_enabled
from seqlab.autograd.ops import elementwise as E
from seqlab.autograd.tensor import Tensor, _arr
from seqlab.creation import _dtype, _like, _need_tensor, _shape



def _float_like(name: str, input: Tensor, dtype) -> tuple:
    xp, dt = _like(input, backend.from_torch_name(dtype), None)
    if dt.kind != "f":
        raise TypeError(f"{name} needs a floating-point dtype, got {dt} (as torch; randint_like gives integers)")
    return xp, dt


def rand_like(input: Tensor, *, generator=None, dtype=None, requires_grad: bool = False, device=None) -> Tensor:
    """Uniform [0, 1) numbers of `input`'s shape, in its dtype unless given, from seqlab's generator."""
    _, dt = _float_like("rand_like", input, dtype)
    return rand(input.shape, generator=generator, dtype=dt, requires_grad=requires_grad, device=device or input.device)


def randn_like(input: Tensor, *, generator=None, dtype=None, requires_grad: bool = False, device=None) -> Tensor:
    """N(0, 1) draws of `input`'s shape, in its dtype unless given, from seqlab's generator."""
    _, dt = _float_like("randn_like", input, dtype)
    return randn(input.shape, generator=generator, dtype=dt, requires_grad=requires_grad,
                 device=device or input.device)


def randint_like(input: Tensor, low: int = 0, high: int | None = None, *, generator=None, dtype=None,
                 requires_grad: bool = False, device=None) -> Tensor:
    """Integers uniform in [low, high) of `input`'s shape and dtype (unless given): `randint_like(x, high)`
    or `randint_like(x, low, high)`, as torch."""
    if high is None:
        low, high = 0, low
    dt = np.dtype(backend.from_torch_name(dtype)) if dtype is not None else input.dtype
    return randint(low, high, input.shape, generator=generator, dtype=dt, requires_grad=requires_grad,
                   device=device or input.device)


def randperm(n: int, *, generator=None, dtype=None, requires_grad: bool = False, device=None) -> Tensor:
    """A random permutation of 0 .. n-1 (int64 unless `dtype`), from seqlab's generator or `generator`."""
    if n < 0:
        raise ValueError(f"randperm: n must be non-negative, got {n}")
    arr = (generator or _random.default_generator()).permutation(n)
    arr = arr.astype(np.dtype(backend.from_torch_name(dtype)) if dtype is not None else np.int64)
    return Tensor(backend.to_device(arr, device or backend.get_device()), requires_grad=requires_grad)


def bernoulli(input: Tensor, p: float | None = None, *, generator=None) -> Tensor:
    """1 with probability `input` (element-wise, each in [0, 1]; or `p` for every element), else 0, in
    input's dtype, as torch.bernoulli. No gradient flows."""
    x = _need_tensor("bernoulli", input)
    probs = backend.to_numpy(x.data) if p is None else p
    if np.any(np.asarray(probs) < 0) or np.any(np.asarray(probs) > 1):
        raise ValueError("bernoulli: probabilities must be in [0, 1]")
    draws = (generator or _random.default_generator()).random(x.shape) < probs
    return Tensor(backend.to_device(draws.astype(x.dtype), x.device))


def randn(*shape, size=None, dtype=None, requires_grad=False, generator: np.random.Generator | None = None,
          device=None) -> Tensor:
    gen = generator or _random.default_generator()
    arr = gen.standard_normal(_shape(shape, size, "randn")).astype(_dtype(dtype))
    return Tensor(backend.to_device(arr, device or backend.get_device()), requires_grad=requires_grad)


def rand(*shape, size=None, dtype=None, requires_grad=False, generator=None, device=None) -> Tensor:
    gen = generator or _random.default_generator()
    arr = gen.random(_shape(shape, size, "rand")).astype(_dtype(dtype))
    return Tensor(backend.to_device(arr, device or backend.get_device()), requires_grad=requires_grad)


def randint(*args, low=None, high=None, size=None, generator: np.random.Generator | None = None, dtype=None,
            device=None, requires_grad: bool = False) -> Tensor:
    """Integers uniform in [low, high) of `size`, int64 unless `dtype` says otherwise: torch's
    `randint(high, size)` and `randint(low, high, size)`, seeded by `seqlab.manual_seed`."""
    args = list(args)
    if size is None and args:
        size = args.pop()
    if high is None and args:
        high = args.pop()
    if low is None:
        low = args.pop() if args else 0
    if args or size is None or high is None:
        raise TypeError("randint() takes (high, size) or (low, high, size)")
    if low >= high:
        raise ValueError(f"randint expects low < high, got low={low} and high={high}")
    gen = generator or _random.default_generator()
    size = (size,) if isinstance(size, (int, np.integer)) else tuple(size)
    arr = gen.integers(low, high, size=size, dtype=np.int64)
    if dtype is not None:
        arr = arr.astype(np.dtype(dtype))
    return Tensor(backend.to_device(arr, device or backend.get_device()), requires_grad=requires_grad)


def multinomial(input: Tensor, num_samples: int, replacement: bool = False, *,
                generator: np.random.Generator | None = None) -> Tensor:
    """Category indices (int64) drawn from each row of `input`, weights that need not sum to 1 (1-D: one
    row; 2-D: one per row), `num_samples` per row, seeded by `seqlab.manual_seed`. With replacement,
    inverse-CDF draws; without, the `num_samples` smallest of E_i / w_i, E_i ~ Exp(1) (Efraimidis and
    Spirakis): successive draws in proportion to the weights left. Zero-weight categories come only
    after every positive one (as torch)."""
    w = backend.to_numpy(_arr(input) if hasattr(_arr(input), "dtype") else np.asarray(input))
    if w.dtype.kind != "f":
        raise TypeError(f"multinomial only supports floating-point dtypes for input, got {w.dtype}")
    if w.ndim not in (1, 2) or w.shape[-1] == 0:
        raise ValueError(f"multinomial expects a 1-D or 2-D tensor of weights with at least one category, "
                         f"got shape {w.shape}")
    rows = w.reshape(-1, w.shape[-1]).astype(np.float64)
    n = rows.shape[1]
    if not np.all(np.isfinite(rows)) or np.any(rows < 0):
        raise ValueError("multinomial: the probability tensor contains either inf, nan or an element < 0")
    if np.any(rows.sum(axis=1) <= 0):
        raise ValueError("multinomial: invalid distribution (a row's weights sum to 0)")
    if not replacement and num_samples > n:
        raise ValueError(f"multinomial: cannot draw {num_samples} samples from {n} categories without replacement")
    gen = generator or _random.default_generator()
    if replacement:
        cdf = np.cumsum(rows, axis=1)
        cdf /= cdf[:, -1:]  # the last entry exactly 1: a draw u < 1 never falls past it
        u = gen.random((rows.shape[0], num_samples))
        idx = np.stack([np.searchsorted(c, r, side="right") for c, r in zip(cdf, u)])
    else:
        with np.errstate(divide="ignore"):
            keys = gen.standard_exponential(rows.shape) / rows  # weight 0: inf, drawn last
        idx = np.argsort(keys, axis=1, kind="stable")[:, :num_samples]
    idx = idx.astype(np.int64).reshape(w.shape[:-1] + (num_samples,))
    return Tensor(backend.to_device(idx, input.device if isinstance(input, Tensor) else "cpu"))


def normal(mean=0.0, std=1.0, size=None, *, generator: np.random.Generator | None = None, dtype=None,
           device=None, requires_grad: bool = False) -> Tensor:
    """Draws from N(mean, std²), seeded by `seqlab.manual_seed`: `normal(0.0, 1.0, size)` with numbers (the
    default float dtype unless `dtype`), or a tensor `mean` and/or `std` (their broadcast shape and dtype).
    As torch, a tensor mean or std that requires grad gets a gradient of 0 (the draw is not
    reparameterized)."""
    gen = generator or _random.default_generator()
    tensors = [v for v in (mean, std) if isinstance(v, Tensor)]
    if not tensors:
        if size is None:
            raise TypeError("normal(): with a number mean and std, pass size (as torch)")
        if std < 0:
            raise ValueError(f"normal expects std >= 0.0, but found std {std}")
        arr = gen.normal(mean, std, _shape((), size, "normal")).astype(_dtype(dtype))
        return Tensor(backend.to_device(arr, device or backend.get_device()), requires_grad=requires_grad)
    if size is not None:
        raise TypeError("normal(): size goes only with a number mean and std; a tensor gives the shape")
    for t in tensors:
        if t.dtype.kind != "f":
            raise TypeError(f"normal(): a tensor mean or std must be floating point, got dtype {t.dtype}")
    out_dtype = np.result_type(*[t.dtype for t in tensors])
    m, s = (backend.to_numpy(_arr(v)).astype(np.float64) if isinstance(v, Tensor) else float(v) for v in (mean, std))
    if np.any(np.asarray(s) < 0):
        raise ValueError("normal expects all elements of std >= 0.0")
    shape = np.broadcast_shapes(np.shape(m), np.shape(s))
    arr = (m + s * gen.standard_normal(shape)).astype(out_dtype)
    out = Tensor(backend.to_device(arr, tensors[0].device))
    never = backend.xp_of(out.data).zeros(shape, dtype=bool)
    for t in tensors:  # a zero gradient for each input that requires one, as torch's
        if t.requires_grad and is_grad_enabled():
            out = E.Where.apply(never, t, out)
    return out
