"""Tensor constructors and multi-tensor ops: `seqlab.tensor`, `zeros`, `cat`, `stack`, `where`."""
from __future__ import annotations

import numpy as np

from seqlab import backend
from seqlab import random as _random
from seqlab.autograd.ops import elementwise as E
from seqlab.autograd.ops import movement as V
from seqlab.autograd.ops.reduce import normalize_dim
from seqlab.autograd.tensor import _KIND_RANK, Tensor, _arr


def _dtype(dtype):
    return np.dtype(dtype) if dtype is not None else np.dtype(backend.default_dtype())


def tensor(data, dtype=None, requires_grad: bool = False, device: str | None = None) -> Tensor:
    return Tensor(data, requires_grad=requires_grad, dtype=dtype, device=device)


def _shape(shape):
    return tuple(shape[0]) if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else tuple(shape)


def zeros(*shape, dtype=None, requires_grad=False, device=None) -> Tensor:
    xp = backend.get_xp(device)
    return Tensor(xp.zeros(_shape(shape), dtype=_dtype(dtype)), requires_grad=requires_grad)


def ones(*shape, dtype=None, requires_grad=False, device=None) -> Tensor:
    xp = backend.get_xp(device)
    return Tensor(xp.ones(_shape(shape), dtype=_dtype(dtype)), requires_grad=requires_grad)


def full(shape, value, dtype=None, requires_grad=False, device=None) -> Tensor:
    xp = backend.get_xp(device)
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    return Tensor(xp.full(shape, value, dtype=_dtype(dtype)), requires_grad=requires_grad)


def arange(start, end=None, step=1, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    """Integers give int64, floats the default float dtype (as torch)."""
    xp = backend.get_xp(device)
    if end is None:
        start, end = 0, start
    arr = xp.arange(start, end, step, dtype=np.dtype(dtype) if dtype else None)
    if dtype is None and arr.dtype.kind == "f":
        arr = arr.astype(backend.default_dtype())
    return Tensor(arr, requires_grad=requires_grad)


def randn(*shape, dtype=None, requires_grad=False, generator: np.random.Generator | None = None,
          device=None) -> Tensor:
    gen = generator or _random.default_generator()
    arr = gen.standard_normal(_shape(shape)).astype(_dtype(dtype))
    return Tensor(backend.to_device(arr, device or backend.get_device()), requires_grad=requires_grad)


def rand(*shape, dtype=None, requires_grad=False, generator=None, device=None) -> Tensor:
    gen = generator or _random.default_generator()
    arr = gen.random(_shape(shape)).astype(_dtype(dtype))
    return Tensor(backend.to_device(arr, device or backend.get_device()), requires_grad=requires_grad)


def cat(tensors, dim: int = 0) -> Tensor:
    tensors = [t if isinstance(t, Tensor) else Tensor(t) for t in tensors]
    if not tensors:
        raise ValueError("cat() needs at least one tensor")
    nd = tensors[0].ndim
    if nd == 0:
        raise ValueError("cat(): zero-dimensional tensor (at position 0) cannot be concatenated")
    d = normalize_dim(dim, nd)
    for t in tensors[1:]:
        if t.ndim != nd or any(a != b for i, (a, b) in enumerate(zip(t.shape, tensors[0].shape)) if i != d):
            raise ValueError(f"cat along dim {dim}: shapes {[x.shape for x in tensors]} differ outside that dim")
    return V.Cat.apply(*_one_dtype(tensors), dim=d)


def stack(tensors, dim: int = 0) -> Tensor:
    tensors = [t if isinstance(t, Tensor) else Tensor(t) for t in tensors]
    shapes = {t.shape for t in tensors}
    if len(shapes) != 1:
        raise ValueError(f"stack needs tensors of one shape, got {[t.shape for t in tensors]}")
    return V.Stack.apply(*_one_dtype(tensors), dim=normalize_dim(dim, tensors[0].ndim, extra=1))


def _one_dtype(tensors: list) -> list:
    """The tensors in torch's result dtype for cat and stack: the highest kind (bool < integer < float)
    wins and the widest dtype within it, so float32 beside int64 stays float32 (NumPy: float64)."""
    top = max(_KIND_RANK.get(t.dtype.kind, 2) for t in tensors)
    dtype = np.result_type(*[t.dtype for t in tensors if _KIND_RANK.get(t.dtype.kind, 2) == top])
    return [t._cast(dtype) for t in tensors]


def where(condition, x, y) -> Tensor:
    """Elements of x where `condition` (bool) is True, else of y."""
    cond = _arr(condition)
    if not isinstance(x, Tensor) and not isinstance(y, Tensor):
        return Tensor(backend.xp_of(cond).where(cond, x, y))
    ref = x if isinstance(x, Tensor) else y
    cond = backend.to_device(cond, ref.device)  # a host condition for GPU tensors: copied there
    xa = x if isinstance(x, Tensor) else ref._other(x)
    ya = y if isinstance(y, Tensor) else ref._other(y)
    return E.Where.apply(cond, xa, ya)


def maximum(a, b) -> Tensor:
    return E.Maximum.apply(a, b)


def no_grad_tensor(arr) -> Tensor:
    return Tensor._from_op(arr, None)
