"""Tensor constructors and multi-tensor ops: `seqlab.tensor`, `zeros`, `cat`, `stack`, `where`; and the
`torch.*` functions that are a Tensor method (`seqlab.exp(x)` is `x.exp()`)."""
from __future__ import annotations

import builtins  # this module defines torch's sum, max, min, pow, abs

import numpy as np

from seqlab import backend
from seqlab.autograd.ops import elementwise as E
from seqlab.autograd.ops import movement as V
from seqlab.autograd.ops.reduce import normalize_dim
from seqlab.autograd.tensor import _KIND_RANK, Tensor, _arr, _dim_or_axis
from seqlab.errors import ShapeError


def _dtype(dtype):
    return np.dtype(dtype) if dtype is not None else np.dtype(backend.default_dtype())


def tensor(data, dtype=None, requires_grad: bool = False, device: str | None = None) -> Tensor:
    """A new leaf tensor holding a copy of `data` (a list, number, array or tensor), as torch.tensor, which
    always copies: writing to the result never changes the array or tensor it came from. `as_tensor` and
    `from_numpy` share memory instead. (The `Tensor(...)` constructor, which hot paths use, does not copy.)"""
    src = data.data if isinstance(data, Tensor) else data
    out = Tensor._of(data, requires_grad=requires_grad, dtype=dtype, device=device)
    if hasattr(src, "shape") and hasattr(src, "dtype") and _may_share_memory(out.data, src):
        out.data = out.data.copy(order="K")  # the layout kept (a transposed array stays F-ordered: same BLAS path)
    return out


def _may_share_memory(arr, src) -> bool:
    """Whether `arr` (made from the array `src`) may be `src`'s memory: not when it is on another device."""
    xp = backend.xp_of(arr)
    if xp is not np and backend.xp_of(src) is not xp:
        return False
    may = getattr(xp, "may_share_memory", None)
    return True if may is None else bool(may(arr, src))


def as_tensor(data, dtype=None, device=None) -> Tensor:
    """torch.as_tensor: `data` as a tensor, sharing its memory where no conversion is needed. A tensor of
    that dtype and device is returned itself (else `data.to(device, dtype)`, which autograd records); a
    NumPy (or CuPy) array of that dtype on that device is shared, as `from_numpy`; lists, numbers and
    arrays that need another dtype or device give a new tensor."""
    if isinstance(data, Tensor):
        return data.to(device=device, dtype=dtype)
    return Tensor._of(data, dtype=dtype, device=device)


def _shape(shape, size=None, name: str = "zeros"):
    """A shape given as `f(2, 3)`, `f((2, 3))` or torch's keyword `f(size=(2, 3))` (not both)."""
    if size is not None:
        if shape:
            raise TypeError(f"{name}() got a shape {shape} and size={size!r}; pass one")
        return (size,) if isinstance(size, (int, np.integer)) else tuple(size)
    return tuple(shape[0]) if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else tuple(shape)


def zeros(*shape, size=None, dtype=None, requires_grad=False, device=None) -> Tensor:
    xp = backend.get_xp(device)
    return Tensor(xp.zeros(_shape(shape, size, "zeros"), dtype=_dtype(dtype)), requires_grad=requires_grad)


def ones(*shape, size=None, dtype=None, requires_grad=False, device=None) -> Tensor:
    xp = backend.get_xp(device)
    return Tensor(xp.ones(_shape(shape, size, "ones"), dtype=_dtype(dtype)), requires_grad=requires_grad)


def empty(*shape, size=None, dtype=None, requires_grad=False, device=None) -> Tensor:
    """torch.empty: its values are unspecified there; here zeros."""
    xp = backend.get_xp(device)
    return Tensor(xp.zeros(_shape(shape, size, "empty"), dtype=_dtype(dtype)), requires_grad=requires_grad)


def _scalar_dtype(value) -> np.dtype:
    """torch's dtype for a Python (or NumPy) scalar on its own: bool, int64, or the default float dtype."""
    if isinstance(value, (bool, np.bool_)):
        return np.dtype(bool)
    if isinstance(value, (int, np.integer)):
        return np.dtype(np.int64)
    if isinstance(value, (float, np.floating)):
        return np.dtype(backend.default_dtype())
    raise TypeError(f"expected a number (bool, int or float), got {type(value).__name__}")


def full(size, fill_value, dtype=None, requires_grad=False, device=None) -> Tensor:
    """A tensor of `size` filled with `fill_value`, in `dtype` or the value's (as torch: an int gives int64,
    a bool bool, a float the default float dtype)."""
    xp = backend.get_xp(device)
    size = (size,) if isinstance(size, (int, np.integer)) else tuple(size)
    if isinstance(fill_value, Tensor):
        fill_value = fill_value.item()
    dtype = np.dtype(dtype) if dtype is not None else _scalar_dtype(fill_value)
    return Tensor(xp.full(size, fill_value, dtype=dtype), requires_grad=requires_grad)


def _like(input, dtype, device):
    """The array module and dtype of a tensor like `input` (its own unless given)."""
    return backend.get_xp(device or input.device), (np.dtype(dtype) if dtype is not None else input.dtype)


def zeros_like(input: Tensor, dtype=None, requires_grad: bool = False, device=None) -> Tensor:
    xp, dt = _like(input, dtype, device)
    return Tensor(xp.zeros(input.shape, dtype=dt), requires_grad=requires_grad)


def ones_like(input: Tensor, dtype=None, requires_grad: bool = False, device=None) -> Tensor:
    xp, dt = _like(input, dtype, device)
    return Tensor(xp.ones(input.shape, dtype=dt), requires_grad=requires_grad)


def full_like(input: Tensor, fill_value, dtype=None, requires_grad: bool = False, device=None) -> Tensor:
    """`input`'s shape filled with `fill_value`, in input's dtype unless given (the value is cast, as torch)."""
    xp, dt = _like(input, dtype, device)
    return Tensor(xp.full(input.shape, fill_value, dtype=dt), requires_grad=requires_grad)


def empty_like(input: Tensor, *, dtype=None, requires_grad: bool = False, device=None) -> Tensor:
    """torch.empty_like: its values are unspecified there; here zeros (as seqlab.empty)."""
    return zeros_like(input, dtype=dtype, requires_grad=requires_grad, device=device)


def eye(n: int, m: int | None = None, dtype=None, requires_grad: bool = False, device=None) -> Tensor:
    """The n×m identity (m = n by default), in the default float dtype unless given."""
    xp = backend.get_xp(device)
    return Tensor(xp.eye(n, n if m is None else m, dtype=_dtype(dtype)), requires_grad=requires_grad)


def from_numpy(ndarray: np.ndarray) -> Tensor:
    """A tensor that shares `ndarray`'s memory and dtype (as torch.from_numpy): a change to one shows in the
    other."""
    if not isinstance(ndarray, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(ndarray).__name__})")
    return Tensor._from_op(ndarray, None)


def arange(start, end=None, step=1, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    """Integers give int64, floats the default float dtype (as torch)."""
    xp = backend.get_xp(device)
    if end is None:
        start, end = 0, start
    arr = xp.arange(start, end, step, dtype=np.dtype(dtype) if dtype else None)
    if dtype is None and arr.dtype.kind == "f":
        arr = arr.astype(backend.default_dtype())
    return Tensor(arr, requires_grad=requires_grad)


def cat(tensors, dim: int | None = None, *, axis: int | None = None) -> Tensor:
    """Join along `dim` (or torch's alias `axis`; 0 by default)."""
    dim = _dim_or_axis("cat", dim, axis, default=0)
    tensors = [t if isinstance(t, Tensor) else Tensor._of(t) for t in tensors]
    if not tensors:
        raise ValueError("cat() needs at least one tensor")
    nd = tensors[0].ndim
    if nd == 0:
        raise ValueError("cat(): zero-dimensional tensor (at position 0) cannot be concatenated")
    d = normalize_dim(dim, nd)
    for t in tensors[1:]:
        if t.ndim != nd or any(a != b for i, (a, b) in enumerate(zip(t.shape, tensors[0].shape)) if i != d):
            raise ShapeError(f"cat along dim {dim}: shapes {[x.shape for x in tensors]} differ outside that dim")
    return V.Cat.apply(*_one_dtype(tensors), dim=d)


def stack(tensors, dim: int | None = None, *, axis: int | None = None) -> Tensor:
    dim = _dim_or_axis("stack", dim, axis, default=0)
    tensors = [t if isinstance(t, Tensor) else Tensor._of(t) for t in tensors]
    shapes = {t.shape for t in tensors}
    if len(shapes) != 1:
        raise ShapeError(f"stack needs tensors of one shape, got {[t.shape for t in tensors]}")
    return V.Stack.apply(*_one_dtype(tensors), dim=normalize_dim(dim, tensors[0].ndim, extra=1))


def _one_dtype(tensors: list) -> list:
    """The tensors in torch's result dtype for cat and stack: the highest kind (bool < integer < float)
    wins and the widest dtype within it, so float32 beside int64 stays float32 (NumPy: float64)."""
    top = builtins.max(_KIND_RANK.get(t.dtype.kind, 2) for t in tensors)
    dtype = np.result_type(*[t.dtype for t in tensors if _KIND_RANK.get(t.dtype.kind, 2) == top])
    return [t._cast(dtype) for t in tensors]


_SCALARS = (int, float, bool, np.number, np.bool_)


_NOT_GIVEN = object()


def where(condition, input=_NOT_GIVEN, other=_NOT_GIVEN) -> Tensor:
    """`where(condition)` alone: the indices of its nonzero elements, one int64 tensor per dim (as
    `nonzero(condition, as_tuple=True)`, as torch).

    Elements of `input` where `condition` (bool) is True, else of `other`, in torch's result dtype (the
    promotion of `Tensor._promoted`: two numbers give bool, int64 or the default float dtype; a number
    beside a tensor takes its dtype unless of a higher kind; between tensors the higher kind wins)."""
    if input is _NOT_GIVEN and other is _NOT_GIVEN:
        return (condition if isinstance(condition, Tensor) else Tensor._of(condition)).nonzero(as_tuple=True)
    if input is _NOT_GIVEN or other is _NOT_GIVEN:
        raise TypeError("where() takes a condition alone, or a condition, input and other")
    cond = _arr(condition)
    if not hasattr(cond, "dtype"):
        cond = np.asarray(cond)
    if isinstance(input, _SCALARS) and isinstance(other, _SCALARS):
        kind = builtins.max(_KIND_RANK[_scalar_dtype(v).kind] for v in (input, other))
        dtype = (np.dtype(bool), np.dtype(np.int64), np.dtype(backend.default_dtype()))[kind]
        xp = backend.xp_of(cond)
        return Tensor(xp.where(cond, xp.asarray(input, dtype=dtype), xp.asarray(other, dtype=dtype)))
    if isinstance(input, Tensor) or not isinstance(other, Tensor):
        a, b = (input if isinstance(input, Tensor) else Tensor._of(input))._promoted(other)
    else:
        b, a = other._promoted(input)
    ref = a if isinstance(a, Tensor) else b
    cond = backend.to_device(cond, ref.device)  # a host condition for GPU tensors: copied there
    return E.Where.apply(cond, a, b)


def maximum(input, other) -> Tensor:
    """Element-wise max in torch's result dtype (`Tensor._promoted`); ties split the gradient."""
    a, b = (input if isinstance(input, Tensor) else Tensor._of(input))._promoted(other)
    return E.Maximum.apply(a, b)


def minimum(input, other) -> Tensor:
    """Element-wise min: −maximum(−a, −b) for floats (exact, ties split the gradient as torch's), the
    arrays' min for integers and bools (no gradient)."""
    a, b = (input if isinstance(input, Tensor) else Tensor._of(input))._promoted(other)
    if a.dtype.kind == "f":
        return -E.Maximum.apply(-a, -b)
    return Tensor(backend.xp_of(a.data).minimum(a.data, _arr(b)))


def no_grad_tensor(arr) -> Tensor:
    return Tensor._from_op(arr, None)


# ---- torch.* functions that call the Tensor method of the same name ------------------------------------------
def _need_tensor(name: str, input) -> Tensor:
    if not isinstance(input, Tensor):
        raise TypeError(f"{name}(): argument 'input' must be Tensor, not {type(input).__name__}")
    return input


def exp(input: Tensor) -> Tensor:
    return _need_tensor("exp", input).exp()


def log(input: Tensor) -> Tensor:
    return _need_tensor("log", input).log()


def sqrt(input: Tensor) -> Tensor:
    return _need_tensor("sqrt", input).sqrt()


def abs(input: Tensor) -> Tensor:  # noqa: A001 (torch's name)
    return _need_tensor("abs", input).abs()


def tanh(input: Tensor) -> Tensor:
    return _need_tensor("tanh", input).tanh()


def sigmoid(input: Tensor) -> Tensor:
    return _need_tensor("sigmoid", input).sigmoid()


def relu(input: Tensor) -> Tensor:
    return _need_tensor("relu", input).relu()


def softmax(input: Tensor, dim: int, dtype=None) -> Tensor:
    """torch.softmax: `dim` is required; `dtype` casts the input first (`seqlab.functional.softmax`)."""
    from seqlab import functional as F

    return F.softmax(_need_tensor("softmax", input), dim, dtype=dtype)


def log_softmax(input: Tensor, dim: int, dtype=None) -> Tensor:
    from seqlab import functional as F

    return F.log_softmax(_need_tensor("log_softmax", input), dim, dtype=dtype)


def argmax(input: Tensor, dim=None, keepdim: bool = False) -> Tensor:
    return _need_tensor("argmax", input).argmax(dim, keepdim)


def argmin(input: Tensor, dim=None, keepdim: bool = False) -> Tensor:
    return _need_tensor("argmin", input).argmin(dim, keepdim)


def topk(input: Tensor, k: int, dim: int = -1, largest: bool = True, sorted: bool = True):  # noqa: A002
    return _need_tensor("topk", input).topk(k, dim, largest, sorted)


def sort(input: Tensor, dim: int = -1, descending: bool = False, stable: bool = False):
    return _need_tensor("sort", input).sort(dim, descending, stable=stable)


def argsort(input: Tensor, dim: int = -1, descending: bool = False, stable: bool = False) -> Tensor:
    return _need_tensor("argsort", input).argsort(dim, descending, stable=stable)


def cumsum(input: Tensor, dim: int, *, dtype=None) -> Tensor:
    return _need_tensor("cumsum", input).cumsum(dim, dtype=dtype)


def matmul(input: Tensor, other: Tensor) -> Tensor:
    return _need_tensor("matmul", input).matmul(other)


def mm(input: Tensor, mat2: Tensor) -> Tensor:
    return _need_tensor("mm", input).mm(mat2)


def bmm(input: Tensor, mat2: Tensor) -> Tensor:
    return _need_tensor("bmm", input).bmm(mat2)


def tril(input: Tensor, diagonal: int = 0) -> Tensor:
    return _need_tensor("tril", input).tril(diagonal)


def triu(input: Tensor, diagonal: int = 0) -> Tensor:
    return _need_tensor("triu", input).triu(diagonal)


# ---- more torch.* functions: math, reductions, shapes --------------------------------------------------------
def sin(input: Tensor) -> Tensor:
    return _need_tensor("sin", input).sin()


def cos(input: Tensor) -> Tensor:
    return _need_tensor("cos", input).cos()


def pow(input, exponent) -> Tensor:  # noqa: A001 (torch's name)
    """torch.pow: tensor ** number, tensor ** tensor, or number ** tensor (`pow(10000, t)`)."""
    if isinstance(input, Tensor):
        return input ** exponent
    if isinstance(exponent, Tensor) and isinstance(input, _SCALARS):
        return input ** exponent
    raise TypeError(f"pow(): expected a tensor and a number or two tensors, got {type(input).__name__} and "
                    f"{type(exponent).__name__}")


def clamp(input: Tensor, min=None, max=None) -> Tensor:  # noqa: A002 (torch's names)
    return _need_tensor("clamp", input).clamp(min, max)


clip = clamp


def _reduction_input(name: str, input) -> Tensor:
    """A tensor, or an array (seqlab's `p.grad` is a NumPy array: `torch.sum(p.grad ** 2)`) as one."""
    if isinstance(input, Tensor):
        return input
    if hasattr(input, "dtype") and hasattr(input, "shape"):
        return Tensor._of(input)
    raise TypeError(f"{name}(): argument 'input' must be Tensor (or an array), not {type(input).__name__}")


def sum(input, dim=None, keepdim: bool = False, *, dtype=None, axis=None) -> Tensor:  # noqa: A001
    return _reduction_input("sum", input).sum(dim, keepdim, dtype=dtype, axis=axis)


def mean(input, dim=None, keepdim: bool = False, *, dtype=None, axis=None) -> Tensor:
    return _reduction_input("mean", input).mean(dim, keepdim, dtype=dtype, axis=axis)


def prod(input, dim=None, keepdim: bool = False, *, dtype=None, axis=None) -> Tensor:
    return _reduction_input("prod", input).prod(dim, keepdim, dtype=dtype, axis=axis)


def _is_other(x) -> bool:
    return isinstance(x, Tensor) or isinstance(x, np.ndarray)


def max(input, dim=None, keepdim: bool = False, *, axis=None):  # noqa: A001
    """torch.max: max(x) the largest value; max(x, dim) (values, indices); max(x, other) `maximum`."""
    x = _reduction_input("max", input)
    if _is_other(dim):
        return maximum(x, dim)
    return x.max(dim, keepdim, axis=axis)


def min(input, dim=None, keepdim: bool = False, *, axis=None):  # noqa: A001
    """torch.min: min(x), min(x, dim) -> (values, indices), min(x, other) `minimum`."""
    x = _reduction_input("min", input)
    if _is_other(dim):
        return minimum(x, dim)
    return x.min(dim, keepdim, axis=axis)


def numel(input: Tensor) -> int:
    return _need_tensor("numel", input).numel()


def is_tensor(obj) -> bool:
    return isinstance(obj, Tensor)


def unsqueeze(input: Tensor, dim: int) -> Tensor:
    return _need_tensor("unsqueeze", input).unsqueeze(dim)


def squeeze(input: Tensor, dim=None) -> Tensor:
    return _need_tensor("squeeze", input).squeeze(dim)


def transpose(input: Tensor, dim0: int, dim1: int) -> Tensor:
    return _need_tensor("transpose", input).transpose(dim0, dim1)


def permute(input: Tensor, dims) -> Tensor:
    return _need_tensor("permute", input).permute(dims)


def reshape(input: Tensor, shape) -> Tensor:
    return _need_tensor("reshape", input).reshape(shape)


def flatten(input: Tensor, start_dim: int = 0, end_dim: int = -1) -> Tensor:
    return _need_tensor("flatten", input).flatten(start_dim, end_dim)


def repeat_interleave(input: Tensor, repeats=None, dim=None, *, output_size=None) -> Tensor:
    """torch.repeat_interleave(x, repeats, dim=None); with one integer tensor, the indices 0, 1, ... each
    repeated as often as it says (`repeat_interleave(tensor([1, 2]))` is [0, 1, 1])."""
    x = _need_tensor("repeat_interleave", input)
    if repeats is None:
        if x.ndim != 1 or x.dtype.kind not in "iu":
            raise ValueError(f"repeat_interleave(repeats): repeats must be a 1-D integer tensor, got dtype "
                             f"{x.dtype} and shape {x.shape}")
        return arange(x.shape[0], device=x.device).repeat_interleave(x, 0, output_size=output_size)
    return x.repeat_interleave(repeats, dim, output_size=output_size)

