"""`Tensor`: an array of the active array module plus what autograd needs.

The data is a plain NumPy (or CuPy) array in `.data`; gradients accumulate
in `.grad`, also a plain array. Every differentiable method is one call to a
primitive `Function` (see `ops/`) or a composition of them.
"""
from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from seqlab import backend
from seqlab.autograd import engine
from seqlab.autograd import versions as _versions
from seqlab.autograd.function import Function, is_grad_enabled
from seqlab.autograd.ops import activation as A
from seqlab.autograd.ops import elementwise as E
from seqlab.devices import CPU, CUDA
from seqlab.autograd.ops import matmul as M
from seqlab.autograd.ops import movement as V
from seqlab.autograd.ops import reduce as R
from seqlab.autograd.ops.reduce import normalize_dim, normalize_dims
from seqlab.autograd.tensor_indexing import IndexingMethods
from seqlab.autograd.tensor_math import MathMethods


def _to_array(data: Any, dtype=None, device: str | None = None):
    """Turn Python numbers, lists and arrays into an array of the right module and dtype."""
    if isinstance(data, Tensor):
        data = data.data
    xp = backend.get_xp(device) if device is not None else None
    is_array = hasattr(data, "dtype") and hasattr(data, "shape")
    if xp is None:
        xp = backend.xp_of(data) if is_array else backend.get_xp()
    if dtype is not None:
        return xp.asarray(data, dtype=np.dtype(dtype))
    arr = xp.asarray(data)
    if not is_array and arr.dtype.kind == "f":
        arr = arr.astype(backend.default_dtype())  # Python floats become float32
    elif arr.dtype.kind in "iu" and arr.dtype != np.int64 and not is_array:
        arr = arr.astype(np.int64)
    return arr


def _arr(x):
    return x.data if isinstance(x, Tensor) else x


_KIND_RANK = {"b": 0, "i": 1, "u": 1, "f": 2}  # torch's promotion categories: bool < integer < float


# torch's names for tensor types (`x.type()`), here with "seqlab." in front: 'seqlab.FloatTensor'
_TYPE_NAMES = {np.dtype(np.float32): "FloatTensor", np.dtype(np.float64): "DoubleTensor",
               np.dtype(np.float16): "HalfTensor", np.dtype(np.int64): "LongTensor", np.dtype(np.int32): "IntTensor",
               np.dtype(np.int16): "ShortTensor", np.dtype(np.int8): "CharTensor", np.dtype(np.uint8): "ByteTensor",
               np.dtype(bool): "BoolTensor"}


def _dim_or_axis(name: str, dim, axis, default=None):
    """`dim`, or torch's NumPy-style alias `axis` (x.sum(axis=1)); both at once is a TypeError, as torch."""
    if axis is None:
        return default if dim is None else dim
    if dim is not None:
        raise TypeError(f"{name}() got both dim={dim!r} and its alias axis={axis!r}; pass one")
    return axis


class Tensor(MathMethods, IndexingMethods):
    """An n-dimensional array that records the operations applied to it."""

    __slots__ = ("data", "grad", "requires_grad", "_ctx", "_retains_grad", "__weakref__")
    __array_priority__ = 1000  # so `ndarray + Tensor` calls Tensor.__radd__

    def __init__(self, data: Any, requires_grad: bool = False, dtype=None, device: str | None = None):
        self.data = _to_array(data, dtype, device)
        if requires_grad and self.data.dtype.kind not in "fc":
            raise TypeError(f"only floating-point tensors can require gradients, got dtype {self.data.dtype}")
        self.grad = None
        self.requires_grad = bool(requires_grad)
        self._ctx = None
        self._retains_grad = False

    @classmethod
    def _from_op(cls, data, ctx) -> "Tensor":
        t = cls.__new__(cls)
        t.data, t.grad, t._ctx, t._retains_grad = data, None, ctx, False
        t.requires_grad = ctx is not None
        return t

    # ---- basic properties -------------------------------------------------
    @property
    def shape(self) -> tuple:
        return self.data.shape

    @property
    def ndim(self) -> int:
        return self.data.ndim

    @property
    def dtype(self):
        return self.data.dtype

    @property
    def device(self) -> "device":
        """`seqlab.device("cpu")` or `device("cuda")`: equal to those strings too."""
        return CPU if backend.device_of(self.data) == "cpu" else CUDA

    @property
    def is_leaf(self) -> bool:
        return self._ctx is None

    def size(self, dim: int | None = None):
        return self.data.shape if dim is None else self.data.shape[normalize_dim(dim, self.ndim)]

    def dim(self) -> int:
        return self.data.ndim

    def numel(self) -> int:
        return int(self.data.size)

    def __len__(self) -> int:
        return len(self.data)

    def __repr__(self) -> str:
        grad = ", requires_grad=True" if self.requires_grad else ""
        body = np.array2string(backend.to_numpy(self.data), precision=4, separator=", ", threshold=50)
        return f"tensor({body}, dtype={self.data.dtype}{grad})"

    def __array__(self, dtype=None, copy=None):
        arr = backend.to_numpy(self.data)
        return arr.astype(dtype) if dtype is not None else arr

    def numpy(self) -> np.ndarray:
        if self.requires_grad and is_grad_enabled() and self._ctx is not None:
            pass  # torch refuses; returning the values is harmless here
        return backend.to_numpy(self.data)

    def item(self):
        if self.data.size != 1:
            raise ValueError(f"item() needs a tensor with one element, got shape {self.shape}")
        return self.data.reshape(()).item()

    def tolist(self):
        return backend.to_numpy(self.data).tolist()

    def __bool__(self):
        return bool(self.item())

    def __float__(self):
        return float(self.item())

    def __int__(self):
        return int(self.item())

    def __index__(self):  # as torch: a one-element integer (or bool) tensor can index a list, a slice, range()
        if self.data.size != 1 or self.dtype.kind not in "biu":
            raise TypeError(f"only integer tensors of a single element can be converted to an index, "
                            f"got dtype {self.dtype} and shape {self.shape}")
        return int(self.item())

    def __hash__(self):
        return id(self)

    def __format__(self, spec: str) -> str:
        """f"{t}" is str(t); a number format (f"{loss:.4f}") formats a one-element tensor's value. (torch
        formats only 0-d tensors so; a one-element tensor with dims is accepted here too.)"""
        if not spec:
            return str(self)
        if self.data.size != 1:
            raise TypeError(f"unsupported format string {spec!r} for a tensor of shape {self.shape}: only a "
                            f"one-element tensor takes a number format; format t.tolist() or an element")
        return format(self.item(), spec)

    def __round__(self, ndigits: int | None = None):
        """round() of a one-element tensor's value: a Python number, as round() of it (torch's Tensor
        defines no __round__)."""
        if self.data.size != 1:
            raise TypeError(f"round() needs a tensor with one element, got shape {self.shape}")
        return round(self.item(), ndigits)

    # ---- autograd ---------------------------------------------------------
    def backward(self, gradient: Any = None, retain_graph: bool = False) -> None:
        """Accumulate d(self)/d(leaf) into every leaf's `.grad`.

        `gradient` is required for non-scalar tensors (as torch). The graph
        is freed afterwards unless `retain_graph`.
        """
        if not self.requires_grad:
            raise RuntimeError("backward() on a tensor that does not require grad "
                               "(no input had requires_grad=True, or it was computed under no_grad)")
        xp = backend.xp_of(self.data)
        if gradient is None:
            if self.data.size != 1:
                raise RuntimeError(f"backward() without a gradient needs a scalar, got shape {self.shape}")
            grad = xp.ones(self.shape, dtype=self.dtype)
        else:
            grad = xp.asarray(_arr(gradient), dtype=self.dtype)
            if grad.shape != self.shape:
                raise ValueError(f"gradient has shape {grad.shape} but the tensor has shape {self.shape}")
        engine.run_backward(self, grad, retain_graph=retain_graph)

    def retain_grad(self) -> None:
        self._retains_grad = True

    def detach(self) -> "Tensor":
        return Tensor._from_op(self.data, None)

    def detach_(self) -> "Tensor":
        """In place: this tensor leaves the graph (a leaf that requires no grad) and is returned. As torch,
        a view refuses: here a tensor recorded as made by reshape/view, permute/transpose, expand or slicing
        (one made under no_grad records nothing and is detached)."""
        ctx = self._ctx
        if isinstance(ctx, (V.Reshape, V.Permute, V.Expand)) or (isinstance(ctx, V.GetItem)
                                                                  and V._is_basic(ctx.index)):
            raise RuntimeError(f"Can't detach views in-place (this tensor was made by the view op "
                               f"{type(ctx).__name__}). Use detach() instead (as torch)")
        if isinstance(ctx, Function):
            ctx.out_ref = None  # a later backward through the graph must not hand this tensor its creator back
        self._ctx, self.requires_grad, self._retains_grad = None, False, False
        return self

    def requires_grad_(self, mode: bool = True) -> "Tensor":
        if mode and self.data.dtype.kind not in "fc":  # as the constructor (torch: RuntimeError, same words)
            raise TypeError(f"only floating-point tensors can require gradients, got dtype {self.data.dtype}")
        self.requires_grad = bool(mode)
        return self

    # In-place changes. Under grad mode a tensor that requires grad refuses them (a leaf's would go unseen
    # by the graph, as torch refuses; seqlab records no in-place ops, so a non-leaf's would too); under
    # no_grad they are counted, and a backward that would read the old values raises (autograd/versions.py).
    def _in_place(self, name: str) -> None:
        if self.requires_grad and is_grad_enabled():
            what = "a leaf tensor that requires grad" if self._ctx is None else "a tensor that is part of a graph"
            raise RuntimeError(f"{name}: {what} cannot be changed in place while gradients are recorded; "
                               f"do it under seqlab.no_grad() (e.g. to set parameters), or change a clone()")

    def zero_(self) -> "Tensor":
        self._in_place("zero_")
        self.data[...] = 0
        _versions.bump(self.data)
        return self

    def fill_(self, value) -> "Tensor":
        self._in_place("fill_")
        self.data[...] = value if not hasattr(value, "shape") else backend.to_device(_arr(value), self.device)
        _versions.bump(self.data)
        return self

    def copy_(self, other) -> "Tensor":
        self._in_place("copy_")
        src = backend.to_device(np.asarray(other) if not hasattr(other, "shape") else _arr(other), self.device)
        if tuple(src.shape) != self.shape:
            raise ValueError(f"copy_: source has shape {tuple(src.shape)} but the tensor has shape {self.shape}")
        self.data[...] = src
        _versions.bump(self.data)
        return self

    # Assignment into a tensor: `t[1] = 2.5`, `t[mask] = 0`, `t[:, 0] = other`, `t.masked_fill_(mask, v)`. The
    # value is cast to the tensor's dtype (as torch). torch records these in the graph; seqlab does not, so
    # while gradients are recorded it refuses a tensor that requires grad (a leaf or one in a graph) and a
    # value that requires grad, rather than drop a gradient. A backward that saved the array raises (versions).
    def _check_assign(self, name: str, value) -> None:
        if is_grad_enabled() and (self.requires_grad or (isinstance(value, Tensor) and value.requires_grad)):
            what = ("the value requires grad" if not self.requires_grad else
                    "a leaf tensor that requires grad" if self._ctx is None else "a tensor that is part of a graph")
            raise RuntimeError(f"{name}: {what}, and seqlab records no in-place assignment; build the result "
                               f"out of place (seqlab.where, masked_fill, cat), or assign under seqlab.no_grad()")
        if not getattr(getattr(self.data, "flags", None), "writeable", True):
            raise RuntimeError(f"{name}: this tensor's array is read-only (a broadcast view, as from expand(), "
                               f"where elements share memory, or an array marked read-only); change a clone()")

    def _value_array(self, value):
        """`value` (a Tensor, an array, a list or a number) as an array or scalar on this tensor's device."""
        if isinstance(value, Tensor):
            return backend.to_device(value.data, self.device)
        if isinstance(value, (int, float, bool, np.number, np.bool_)):
            return value
        return backend.to_device(value if hasattr(value, "shape") else np.asarray(value), self.device)

    def __setitem__(self, index, value) -> None:
        self._check_assign("t[index] = value", value)
        self.data[_index_arrays(index, self.device)] = self._value_array(value)
        _versions.bump(self.data)

    def masked_fill_(self, mask, value) -> "Tensor":
        """In place: `value` where `mask` (bool, broadcastable to the tensor's shape) is True."""
        self._check_assign("masked_fill_", value)
        m = self._bool_mask("masked_fill_", mask)
        if not backend.broadcasts_to(tuple(m.shape), self.shape):
            raise ValueError(f"masked_fill_: the mask of shape {tuple(m.shape)} does not broadcast to the "
                             f"tensor's shape {self.shape} (an in-place op keeps the tensor's shape)")
        if isinstance(value, Tensor) and value.ndim != 0:
            raise ValueError(f"masked_fill_ only supports a 0-dimensional value tensor, got {value.ndim} dimensions")
        v = value.item() if isinstance(value, Tensor) else value
        self.data[backend.xp_of(self.data).broadcast_to(m, self.shape)] = self.dtype.type(v)
        _versions.bump(self.data)
        return self

    # In-place arithmetic, as torch's: `p -= lr * p.grad` under no_grad changes p itself. The result keeps
    # self's dtype and shape: `other` (a Tensor, an array or a number) broadcasts to self's shape, and an
    # op whose result would need a higher kind (a float into an integer tensor, any `/` into one) refuses.
    def add_(self, other, alpha=1) -> "Tensor":
        return self._arith_(backend.xp_of(self.data).add, "add_", other, alpha)

    def sub_(self, other, alpha=1) -> "Tensor":
        return self._arith_(backend.xp_of(self.data).subtract, "sub_", other, alpha)

    def mul_(self, other) -> "Tensor":
        return self._arith_(backend.xp_of(self.data).multiply, "mul_", other)

    def div_(self, other) -> "Tensor":
        return self._arith_(backend.xp_of(self.data).true_divide, "div_", other, true_divide=True)

    def _arith_(self, ufunc, name: str, other, alpha=1, true_divide: bool = False) -> "Tensor":
        self._in_place(name)
        if isinstance(other, Tensor) and other.requires_grad and is_grad_enabled():
            raise RuntimeError(f"{name}: the operand requires grad, and seqlab records no in-place op, so its "
                               f"gradient would be lost; write the out-of-place `x = x.{name[:-1]}(y)` instead")
        kind_self = _KIND_RANK.get(self.dtype.kind, 2)
        if isinstance(other, (int, float, bool, np.number, np.bool_)):
            src, shape = other, ()
            kind = 0 if isinstance(other, (bool, np.bool_)) else 2 if isinstance(other, (float, np.floating)) else 1
            if kind_self == 2 and kind != 0:
                src = self.dtype.type(other)  # as torch: a number takes a float tensor's dtype
        else:
            src = _arr(other)
            src = backend.to_device(src if hasattr(src, "dtype") else np.asarray(src), self.device)
            kind, shape = _KIND_RANK.get(src.dtype.kind, 2), tuple(src.shape)
        if true_divide:
            kind = 2
        if kind > kind_self:
            raise RuntimeError(f"{name}: the result would be a {'float' if kind == 2 else 'integer'}, which "
                               f"can't be cast to the tensor's dtype {self.dtype} (as torch); change a "
                               f"tensor of a wider dtype, or use the out-of-place op")
        if not backend.broadcasts_to(shape, self.shape):
            raise ValueError(f"{name}: an operand of shape {shape} does not broadcast to the tensor's shape "
                             f"{self.shape} (an in-place op keeps the tensor's shape)")
        if alpha != 1:
            if kind_self < 2 and isinstance(alpha, (float, np.floating)):
                raise RuntimeError(f"{name}: alpha must be an integer for an integer tensor (as torch), "
                                   f"got {alpha!r}")
            src = src * (self.dtype.type(alpha) if kind_self == 2 else alpha)
        if not getattr(getattr(self.data, "flags", None), "writeable", True):
            raise RuntimeError(f"{name}: this tensor's array is read-only (a broadcast view, as from expand(), "
                               f"where elements share memory, or an array marked read-only); change a clone()")
        ufunc(self.data, src, out=self.data)
        _versions.bump(self.data)
        return self

    # `x += y`: in place where `add_` would be allowed, and for a tensor in a graph (or an operand that
    # requires grad) under grad mode the out-of-place op (Python falls back to `x = x + y` on
    # NotImplemented), so `x = self.ln(x); x += residual` keeps its gradient. A leaf that requires grad
    # refuses, as torch.
    def _rebinds(self, other) -> bool:
        if not is_grad_enabled():
            return False
        if self.requires_grad:
            return self._ctx is not None  # a leaf: add_ refuses
        return isinstance(other, Tensor) and other.requires_grad

    def __iadd__(self, o):
        return NotImplemented if self._rebinds(o) else self.add_(o)

    def __isub__(self, o):
        return NotImplemented if self._rebinds(o) else self.sub_(o)

    def __imul__(self, o):
        return NotImplemented if self._rebinds(o) else self.mul_(o)

    def __itruediv__(self, o):
        return NotImplemented if self._rebinds(o) else self.div_(o)

    # ---- conversion -------------------------------------------------------
    def to(self, *args, device=None, dtype=None, non_blocking: bool = False, copy: bool = False) -> "Tensor":
        """As torch's: `to("cuda")`, `to(seqlab.float64)`, `to(device, dtype)`, `to(other_tensor)` (its device
        and dtype), keywords too. This tensor itself when nothing changes, unless `copy=True`.
        `non_blocking` is accepted and changes nothing (copies to and from the GPU complete in order)."""
        device, dtype = backend.to_args(args, device, dtype)
        out = self
        if device is not None and backend.device_of(self.data) != device:
            out = Tensor(backend.to_device(self.data, device), requires_grad=self.requires_grad)
        if dtype is not None and np.dtype(dtype) != out.dtype:
            out = out.astype(dtype)
        if copy and out is self:
            out = self.clone()
        return out

    def cpu(self) -> "Tensor":
        return self.to("cpu")

    def cuda(self) -> "Tensor":
        return self.to("cuda")

    def astype(self, dtype) -> "Tensor":
        """This tensor in `dtype`; a float result keeps the gradient, an integer or bool one has none."""
        from seqlab.autograd.ops.cast import Cast

        dtype = np.dtype(dtype)
        if dtype.kind not in "fc":
            return Tensor._from_op(self.data.astype(dtype), None)
        return Cast.apply(self, dtype=dtype)

    def float(self) -> "Tensor":
        return self.astype(np.float32)

    def double(self) -> "Tensor":
        return self.astype(np.float64)

    def long(self) -> "Tensor":
        return Tensor(self.data.astype(np.int64))

    def bool(self) -> "Tensor":
        return Tensor(self.data.astype(bool))

    def int(self) -> "Tensor":
        """int32, as torch's .int() (.long() is int64)."""
        return Tensor(self.data.astype(np.int32))

    def short(self) -> "Tensor":
        return Tensor(self.data.astype(np.int16))

    def half(self) -> "Tensor":
        return self.astype(np.float16)

    def type(self, dtype=None):
        """No argument: the type's name as torch's ('seqlab.FloatTensor', 'seqlab.cuda.LongTensor'). With a
        dtype, a dtype name ('float64') or a type name ('torch.LongTensor'): this tensor in that dtype (itself
        when it has it already)."""
        if dtype is None:
            name = _TYPE_NAMES.get(self.dtype, f"{self.dtype}Tensor")
            return f"seqlab.cuda.{name}" if self.device == "cuda" else f"seqlab.{name}"
        if isinstance(dtype, str):
            short_name = dtype.rsplit(".", 1)[-1]
            by_name = {v: k for k, v in _TYPE_NAMES.items()}
            if short_name in by_name:
                dtype = by_name[short_name]
            else:
                try:
                    dtype = np.dtype(dtype)
                except TypeError:
                    raise ValueError(f"invalid type: {dtype!r} (a dtype such as seqlab.float64, its name "
                                     f"'float64', or a type name such as 'torch.LongTensor')") from None
        return self.to(dtype)

    def contiguous(self) -> "Tensor":
        """Itself when its array is in C order, else a C-ordered copy that keeps the gradient (as torch)."""
        flags = getattr(self.data, "flags", None)
        if flags is None or flags.c_contiguous:
            return self
        return self.reshape(-1).reshape(self.shape)  # (the flat reshape copies in C order)

    # ---- new tensors like this one: its dtype and device unless given (torch's new_*) ----------------------
    def new_full(self, size, fill_value, *, dtype=None, device=None, requires_grad: bool = False) -> "Tensor":
        size = (size,) if isinstance(size, (int, np.integer)) else tuple(size)
        xp = backend.get_xp(device or self.device)
        arr = xp.full(size, fill_value, dtype=np.dtype(dtype) if dtype is not None else self.dtype)
        return Tensor(arr, requires_grad=requires_grad)

    def new_zeros(self, *size, dtype=None, device=None, requires_grad: bool = False) -> "Tensor":
        return self.new_full(_size(size), 0, dtype=dtype, device=device, requires_grad=requires_grad)

    def new_ones(self, *size, dtype=None, device=None, requires_grad: bool = False) -> "Tensor":
        return self.new_full(_size(size), 1, dtype=dtype, device=device, requires_grad=requires_grad)

    # ---- arithmetic -------------------------------------------------------
    def _other(self, x):
        if isinstance(x, Tensor):
            return x
        if isinstance(x, (int, float, bool, np.number)) and self.dtype.kind == "f":
            return self.dtype.type(x)  # keep float32 float32
        return _to_array(x, device=self.device)

    def _promoted(self, x, true_divide: bool = False):
        """(self, x) as operands of an arithmetic op, with torch's result dtype rather than NumPy's.

        Kinds rank bool < integer < float. Between tensors (and arrays) the higher kind's dtype wins, so a
        float32 tensor times an int64 one stays float32 (NumPy: float64); within a kind the wider dtype
        wins, except that a 0-d tensor takes the dtype of one with dims. A Python or NumPy scalar takes the
        tensor's dtype unless it is of a higher kind: then a float scalar makes an integer or bool tensor
        the default float dtype (float32), an int makes a bool tensor int64. `true_divide`: integers divide
        into the default float dtype, as torch's `/`. Only a float operand can carry a gradient, and a cast
        of one keeps it (`astype`).
        """
        a, b = self, x
        scalar = isinstance(b, (int, float, bool, np.number))
        if not scalar and not isinstance(b, Tensor):
            b = Tensor(_to_array(b, device=self.device))
        kind_b = (2 if isinstance(b, (float, np.floating)) else 0 if isinstance(b, (bool, np.bool_)) else 1) \
            if scalar else _KIND_RANK.get(b.dtype.kind, 2)
        kind_a = _KIND_RANK.get(a.dtype.kind, 2)
        if scalar:
            if kind_b > kind_a:
                a = a._cast(np.dtype(backend.default_dtype()) if kind_b == 2 else np.dtype(np.int64))
            b = a.dtype.type(b)
        elif kind_a != kind_b:
            if kind_a < kind_b:
                a = a._cast(b.dtype)
            else:
                b = b._cast(a.dtype)
        elif a.dtype != b.dtype and (a.ndim == 0) != (b.ndim == 0):  # a 0-d tensor does not widen one with dims
            if a.ndim == 0:
                a = a._cast(b.dtype)
            else:
                b = b._cast(a.dtype)
        if true_divide and a.dtype.kind != "f" and (scalar or b.dtype.kind != "f"):
            float_dtype = np.dtype(backend.default_dtype())
            a = a._cast(float_dtype)
            b = float_dtype.type(b) if scalar else b._cast(float_dtype)
        return a, b

    def _cast(self, dtype) -> "Tensor":
        """This tensor in `dtype` for an op's operands: itself when the dtype matches, through `astype` (the
        gradient flows back) when it requires one, else a plain copy."""
        if self.dtype == dtype:
            return self
        if self.requires_grad:
            return self.astype(dtype)
        return Tensor(self.data.astype(dtype))

    def __add__(self, o):
        return E.Add.apply(*self._promoted(o))

    def __radd__(self, o):
        a, b = self._promoted(o)
        return E.Add.apply(b, a)

    def __sub__(self, o):
        return E.Sub.apply(*self._promoted(o))

    def __rsub__(self, o):
        a, b = self._promoted(o)
        return E.Sub.apply(b, a)

    def __mul__(self, o):
        return E.Mul.apply(*self._promoted(o))

    def __rmul__(self, o):
        a, b = self._promoted(o)
        return E.Mul.apply(b, a)

    def __truediv__(self, o):
        return E.Div.apply(*self._promoted(o, true_divide=True))

    def __rtruediv__(self, o):
        a, b = self._promoted(o, true_divide=True)
        return E.Div.apply(b, a)

    # `//` (floor_divide) and `%` (remainder, the divisor's sign), in torch's result dtype (`_promoted`). `//` is
    # piecewise constant: its result carries no gradient (torch's raises "not implemented" in backward); `%`
    # has torch's gradient. An integer divisor of 0 raises, as torch.
    def _int_div_operands(self, o, name: str, reverse: bool):
        a, b = self._promoted(o)
        if reverse:
            a, b = b, a
        da, db = _arr(a), _arr(b)
        kinds = {np.asarray(x).dtype.kind if not hasattr(x, "dtype") else x.dtype.kind for x in (da, db)}
        if kinds == {"b"}:
            raise TypeError(f"{name} of two bool operands is not supported (as torch)")
        if kinds <= {"i", "u"} and not bool((db != 0).all()):
            raise RuntimeError(f"ZeroDivisionError: integer {name} by zero (as torch)")
        return a, b

    def _floor_divide(self, o, reverse: bool) -> "Tensor":
        a, b = self._int_div_operands(o, "floor_divide", reverse)
        xp = backend.xp_of(self.data)
        with np.errstate(divide="ignore", invalid="ignore"):  # a float divisor of 0: ±inf or nan, as torch
            return Tensor._from_op(xp.asarray(xp.floor_divide(_arr(a), _arr(b))), None)

    def __floordiv__(self, o):
        return self._floor_divide(o, reverse=False)

    def __rfloordiv__(self, o):
        return self._floor_divide(o, reverse=True)

    def __mod__(self, o):
        with np.errstate(divide="ignore", invalid="ignore"):
            return E.Remainder.apply(*self._int_div_operands(o, "remainder", reverse=False))

    def __rmod__(self, o):
        with np.errstate(divide="ignore", invalid="ignore"):
            return E.Remainder.apply(*self._int_div_operands(o, "remainder", reverse=True))

    floor_divide = __floordiv__
    remainder = __mod__

    def __neg__(self):
        return E.Neg.apply(self)

    def __pow__(self, p):
        if isinstance(p, Tensor):
            return E.PowTensor.apply(*self._promoted(p))
        x = self
        if isinstance(p, (float, np.floating)) and self.dtype.kind not in "fc":  # as torch: int ** 2.0 is float32
            x = self._cast(np.dtype(backend.default_dtype()))
        elif self.dtype.kind == "b" and not isinstance(p, (bool, np.bool_)):
            x = self._cast(np.dtype(np.int64))
        return E.Pow.apply(x, p)

    def __rpow__(self, base):
        b, a = self._promoted(base)  # base ** self: the scalar base in the promoted dtype
        return E.PowTensor.apply(Tensor(backend.get_xp(self.device).asarray(a, dtype=b.dtype)), b)

    def __matmul__(self, o):
        o = o if isinstance(o, Tensor) else Tensor(o)
        _check_matmul(self.shape, o.shape)
        return M.MatMul.apply(self, o)

    def __rmatmul__(self, o):
        return Tensor(o).__matmul__(self)

    matmul = __matmul__

    def mm(self, mat2) -> "Tensor":
        """Matrix product of two 2-D tensors (no broadcasting, as torch.mm)."""
        mat2 = mat2 if isinstance(mat2, Tensor) else Tensor(mat2)
        if self.ndim != 2 or mat2.ndim != 2:
            raise ValueError(f"mm expects two matrices, got shapes {self.shape} and {mat2.shape}; "
                             f"matmul (@) takes other shapes")
        return self @ mat2

    def bmm(self, mat2) -> "Tensor":
        """Batched matrix product of (b, n, k) and (b, k, m) tensors (no broadcasting, as torch.bmm)."""
        mat2 = mat2 if isinstance(mat2, Tensor) else Tensor(mat2)
        if self.ndim != 3 or mat2.ndim != 3 or self.shape[0] != mat2.shape[0]:
            raise ValueError(f"bmm expects two 3-D tensors with the same batch size, got shapes {self.shape} "
                             f"and {mat2.shape}; matmul (@) broadcasts")
        return self @ mat2
    add = __add__
    sub = __sub__
    mul = __mul__
    div = __truediv__
    pow = __pow__
    neg = __neg__

    def exp(self):
        return E.Exp.apply(self._float_input())

    def log(self):
        return E.Log.apply(self._float_input())

    def sqrt(self):
        return E.Sqrt.apply(self._float_input())

    def rsqrt(self):
        return self.sqrt().reciprocal()

    def reciprocal(self):
        return E.Div.apply(self.dtype.type(1), self)

    def abs(self):
        return E.Abs.apply(self)

    def clamp(self, min=None, max=None):
        return E.Clamp.apply(self, lo=min, hi=max)

    clip = clamp

    def sigmoid(self):
        return A.Sigmoid.apply(self._float_input())

    def _float_input(self) -> "Tensor":
        """Itself, or for an integer or bool tensor its values in the default float dtype (torch's sin(int))."""
        return self if self.dtype.kind in "fc" else self._cast(np.dtype(backend.default_dtype()))

    def sin(self):
        return E.Sin.apply(self._float_input())

    def cos(self):
        return E.Cos.apply(self._float_input())

    def tanh(self):
        return A.Tanh.apply(self._float_input())

    def relu(self):
        return A.ReLU.apply(self)

    def _bool_mask(self, name: str, mask):
        m = _arr(mask)
        if not hasattr(m, "dtype"):
            m = np.asarray(m)
        if m.dtype != bool:
            raise TypeError(f"{name} expects a bool mask, got dtype {m.dtype}")
        return backend.to_device(m, self.device)  # a host mask for a GPU tensor: copied there

    def masked_fill(self, mask, value) -> "Tensor":
        """Fill `value` where `mask` (bool, broadcastable) is True."""
        m = self._bool_mask("masked_fill", mask)
        try:
            np.broadcast_shapes(tuple(m.shape), self.shape)
        except ValueError:
            raise ValueError(f"masked_fill: the mask of shape {tuple(m.shape)} does not broadcast with the "
                             f"tensor's shape {self.shape}") from None
        if isinstance(value, Tensor):
            if value.ndim != 0:
                raise ValueError(f"masked_fill only supports a 0-dimensional value tensor, got {value.ndim} dimensions")
            if value.requires_grad and is_grad_enabled():  # the value's gradient: the sum over the filled places
                from seqlab.creation import where

                return where(m, value._cast(self.dtype), self)
            value = value.item()
        return E.MaskedFill.apply(self, m, value)

    def clone(self) -> "Tensor":
        """A copy with its own memory; gradients flow through it (as torch)."""
        if self.requires_grad and is_grad_enabled():
            return self * self.dtype.type(1)
        return Tensor(self.data.copy())

    def type_as(self, other: "Tensor") -> "Tensor":
        return self.astype(other.dtype)

    def tril(self, diagonal: int = 0) -> "Tensor":
        """Zero above the `diagonal`-th diagonal of the last two dims."""
        xp = backend.xp_of(self.data)
        keep = xp.tril(xp.ones(self.shape[-2:], dtype=bool), k=diagonal)
        return E.MaskedFill.apply(self, ~keep, 0)

    def triu(self, diagonal: int = 0) -> "Tensor":
        xp = backend.xp_of(self.data)
        keep = xp.triu(xp.ones(self.shape[-2:], dtype=bool), k=diagonal)
        return E.MaskedFill.apply(self, ~keep, 0)

    def norm(self, p: float = 2, dim=None, keepdim: bool = False) -> "Tensor":
        """(Σ|x|^p)^(1/p) over `dim` (all elements by default)."""
        # at the zero vector the gradient is 0, as torch's (the formulas' chain rule reads 0 · inf = NaN there)
        if p == 2:
            return E.Sqrt.apply((self * self).sum(dim, keepdim), zero_at_zero=True)
        if p == 1:
            return self.abs().sum(dim, keepdim)
        if p == float("inf"):
            return self.abs().amax(dim, keepdim)
        powers = E.Pow.apply(self.abs(), p, zero_at_zero=True)  # p < 1: 0, not inf, at a zero element
        return E.Pow.apply(powers.sum(dim, keepdim), 1.0 / p, zero_at_zero=True)

    # ---- comparisons (no gradient) ---------------------------------------
    def __eq__(self, o):  # noqa: D105
        return Tensor(self.data == _arr(o))

    def __ne__(self, o):
        return Tensor(self.data != _arr(o))

    def __lt__(self, o):
        return Tensor(self.data < _arr(o))

    def __le__(self, o):
        return Tensor(self.data <= _arr(o))

    def __gt__(self, o):
        return Tensor(self.data > _arr(o))

    def __ge__(self, o):
        return Tensor(self.data >= _arr(o))

    def __invert__(self):
        return Tensor(~self.data)

    def __and__(self, o):
        return Tensor(self.data & _arr(o))

    def __or__(self, o):
        return Tensor(self.data | _arr(o))

    # ---- reductions -------------------------------------------------------
    # `axis=` is torch's alias for `dim` in every reduction below (x.sum(axis=1)); `dtype=` casts first.
    def sum(self, dim=None, keepdim: bool = False, *, dtype=None, axis=None):
        x = self if dtype is None else self.astype(dtype)
        return R.Sum.apply(x, dim=_dim_or_axis("sum", dim, axis), keepdim=keepdim)

    def prod(self, dim=None, keepdim: bool = False, *, dtype=None, axis=None):
        """Product of all elements, or along one `dim` (torch takes a single dim here); with gradient."""
        x = self if dtype is None else self.astype(dtype)
        dim = _dim_or_axis("prod", dim, axis)
        if dim is None:
            return R.Prod.apply(x.reshape(-1), dim=0)
        return R.Prod.apply(x, dim=normalize_dim(dim, x.ndim), keepdim=keepdim)

    def mean(self, dim=None, keepdim: bool = False, *, dtype=None, axis=None):
        x = self if dtype is None else self.astype(dtype)
        return R.Mean.apply(x, dim=_dim_or_axis("mean", dim, axis), keepdim=keepdim)

    def var(self, dim=None, unbiased: bool | None = None, keepdim: bool = False, *, correction=None, axis=None):
        """torch's signatures: `var(dim=None, unbiased=True, keepdim=False)`, `var(dim, *, correction=1,
        keepdim=False)` (the divisor is n − correction: unbiased is 1, biased 0) and `var(unbiased)`."""
        dim = _dim_or_axis("var", dim, axis)
        if isinstance(dim, (bool, np.bool_)):  # var(False): torch's `var(unbiased)`
            if unbiased is not None:
                raise TypeError("var(): a bool first argument is `unbiased`, and unbiased was given again")
            dim, unbiased = None, bool(dim)
        if unbiased is not None and correction is not None:
            raise TypeError("var(): pass unbiased or correction, not both (as torch)")
        corr = correction if correction is not None else 1 if unbiased is None else int(bool(unbiased))
        return R.Var.apply(self, dim=dim, keepdim=keepdim, correction=corr)

    def std(self, dim=None, unbiased: bool | None = None, keepdim: bool = False, *, correction=None, axis=None):
        """The square root of `var`, with var's arguments."""
        return self.var(_dim_or_axis("std", dim, axis), unbiased, keepdim, correction=correction).sqrt()

    def max(self, dim=None, keepdim: bool = False, *, axis=None):
        """Without `dim`: the max value. With `dim`: (values, indices) as torch."""
        return _minmax(self, _dim_or_axis("max", dim, axis), keepdim, use_min=False)

    def min(self, dim=None, keepdim: bool = False, *, axis=None):
        return _minmax(self, _dim_or_axis("min", dim, axis), keepdim, use_min=True)

    def amax(self, dim=None, keepdim: bool = False, *, axis=None):
        return R.Max.apply(self, dim=_dim_or_axis("amax", dim, axis), keepdim=keepdim)

    def argmax(self, dim=None, keepdim: bool = False, *, axis=None):
        return _argminmax(self, _dim_or_axis("argmax", dim, axis), keepdim, use_min=False)

    def argmin(self, dim=None, keepdim: bool = False, *, axis=None):
        return _argminmax(self, _dim_or_axis("argmin", dim, axis), keepdim, use_min=True)

    def all(self, dim=None, keepdim: bool = False, *, axis=None) -> "Tensor":
        """Whether every element (along `dim`: an int or a tuple) is nonzero, a bool tensor (no gradient)."""
        dims = normalize_dims(_dim_or_axis("all", dim, axis), self.ndim)
        return Tensor._from_op(backend.xp_of(self.data).asarray(self.data.all(axis=dims, keepdims=keepdim)), None)

    def any(self, dim=None, keepdim: bool = False, *, axis=None) -> "Tensor":
        dims = normalize_dims(_dim_or_axis("any", dim, axis), self.ndim)
        return Tensor._from_op(backend.xp_of(self.data).asarray(self.data.any(axis=dims, keepdims=keepdim)), None)

    def cumsum(self, dim=None, *, dtype=None, axis=None) -> "Tensor":
        """Running sum along `dim`, with gradient; bool and integer tensors sum in int64 (as torch)."""
        dim = _dim_or_axis("cumsum", dim, axis)
        if dim is None:
            raise TypeError("cumsum() missing required argument 'dim' (or its alias 'axis')")
        x = self if dtype is None else self.astype(dtype)
        if x.ndim == 0:
            normalize_dim(dim, 0)
            return R.CumSum.apply(x.reshape(1), dim=0).reshape(())
        return R.CumSum.apply(x, dim=normalize_dim(dim, x.ndim))

    # ---- sorting: values through `gather`, so their gradient goes back to the places they came from --------
    def argsort(self, dim: int = -1, descending: bool = False, stable: bool = False) -> "Tensor":
        """Indices that sort along `dim`; ties keep their order (stable, whatever `stable` says)."""
        return Tensor._from_op(_sort_indices(self, dim, descending), None)

    def sort(self, dim: int = -1, descending: bool = False, stable: bool = False):
        """(values, indices) sorted along `dim`, as torch.sort; the values carry the gradient."""
        idx = Tensor._from_op(_sort_indices(self, dim, descending), None)
        return SortResult(self.clone() if self.ndim == 0 else self.gather(dim, idx), idx)

    def topk(self, k: int, dim: int = -1, largest: bool = True, sorted: bool = True):
        """(values, indices) of the `k` largest (or smallest) along `dim`, in order (also with sorted=False,
        which lets torch return any order); the values carry the gradient."""
        d = normalize_dim(dim, self.ndim)
        n = self.shape[d] if self.ndim else 1
        if not 0 <= k <= n:
            raise ValueError(f"topk: selected index k out of range: k={k} for dim {dim} of size {n} "
                             f"(shape {self.shape})")
        idx = _sort_indices(self, d, largest)
        if self.ndim == 0:
            return TopkResult(self.clone(), Tensor._from_op(idx, None))  # as torch, for k 0 or 1
        idx = Tensor._from_op(idx[(slice(None),) * d + (slice(0, k),)], None)
        return TopkResult(self.gather(d, idx), idx)

    # ---- shape ------------------------------------------------------------
    def reshape(self, *shape):
        shape = tuple(shape[0]) if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else shape
        _check_reshape(self.shape, shape)
        return V.Reshape.apply(self, shape=shape)

    view = reshape

    def view_as(self, other: "Tensor") -> "Tensor":
        return self.reshape(other.shape)

    def t(self) -> "Tensor":
        """The transpose of a matrix; a tensor of fewer dims as it is (as torch)."""
        if self.ndim > 2:
            raise ValueError(f"t() expects a tensor with <= 2 dimensions, but self is {self.ndim}D "
                             f"(shape {self.shape}); use transpose(dim0, dim1) or mT")
        return self.T

    def flatten(self, start_dim: int = 0, end_dim: int = -1):
        s, e = normalize_dim(start_dim, self.ndim), normalize_dim(end_dim, self.ndim)
        if s > e:
            raise ValueError(f"flatten(): start_dim {start_dim} cannot come after end_dim {end_dim} "
                             f"(shape {self.shape})")
        shape = self.shape[:s] + (-1,) + self.shape[e + 1:]
        return self.reshape(shape)

    def permute(self, *dims):
        dims = tuple(dims[0]) if len(dims) == 1 and isinstance(dims[0], (tuple, list)) else dims
        if len(dims) != self.ndim:
            raise ValueError(f"permute dims {dims} are not a permutation of {self.ndim} dims")
        norm = tuple(normalize_dim(d, self.ndim) for d in dims)
        if sorted(norm) != list(range(self.ndim)):
            raise ValueError(f"permute dims {dims} are not a permutation of {self.ndim} dims")
        return V.Permute.apply(self, dims=norm)

    def transpose(self, dim0: int, dim1: int):
        dim0, dim1 = normalize_dim(dim0, self.ndim), normalize_dim(dim1, self.ndim)
        dims = list(range(self.ndim))
        if self.ndim:
            dims[dim0], dims[dim1] = dims[dim1], dims[dim0]
        return V.Permute.apply(self, dims=tuple(dims))

    swapaxes = swapdims = transpose  # torch's (and NumPy's) other names

    @property
    def T(self):
        return V.Permute.apply(self, dims=tuple(reversed(range(self.ndim))))

    def unsqueeze(self, dim: int):
        d = normalize_dim(dim, self.ndim, extra=1)
        return V.Reshape.apply(self, shape=self.shape[:d] + (1,) + self.shape[d:])

    def squeeze(self, dim=None):
        if dim is None:
            shape = tuple(s for s in self.shape if s != 1)
        else:
            dims = normalize_dims(dim, self.ndim)
            shape = tuple(s for i, s in enumerate(self.shape) if not (i in dims and s == 1))
        return V.Reshape.apply(self, shape=shape)

    def expand(self, *shape):
        shape = tuple(shape[0]) if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else shape
        lead = len(shape) - self.ndim
        full = tuple(self.shape[i - lead] if (s == -1 and i >= lead) else s for i, s in enumerate(shape))
        return V.Expand.apply(self, shape=full)

    def expand_as(self, other):
        return self.expand(other.shape)

    def __getitem__(self, index):
        index = _index_arrays(index, self.device)
        return V.GetItem.apply(self, index=index)

    def split(self, split_size, dim: int = 0):
        """Pieces of `split_size` along `dim` (or of the sizes in a list), as torch."""
        if self.ndim == 0:
            raise ValueError("split expects at least a 1-dimensional tensor")
        d = normalize_dim(dim, self.ndim)
        n = self.shape[d]
        if isinstance(split_size, (int, np.integer)):
            if split_size < 0:
                raise ValueError(f"split expects split_size be non-negative, but got split_size={split_size}")
            if split_size == 0 and n != 0:
                raise ValueError(f"split_size can only be 0 if dimension size is 0, "
                                 f"but got dimension size of {n}")
            sizes = [split_size] * (n // split_size) + ([n % split_size] if n % split_size else []) \
                if split_size else [0]
        else:
            sizes = list(split_size)
        if sum(sizes) != n:
            raise ValueError(f"split sizes {sizes} do not add up to {n} (dim {dim} of shape {self.shape})")
        out, start = [], 0
        for s in sizes:
            index = (slice(None),) * d + (slice(start, start + s),)
            out.append(self[index])
            start += s
        return tuple(out)

    def unbind(self, dim: int = 0):
        """The slices along `dim`, that dim removed (as torch.unbind)."""
        if self.ndim == 0:
            raise ValueError("unbind() needs at least a 1-dimensional tensor")
        d = normalize_dim(dim, self.ndim)
        return tuple(self[(slice(None),) * d + (i,)] for i in range(self.shape[d]))

    def flip(self, dims):
        dims = (dims,) if isinstance(dims, int) else tuple(dims)
        norm = [normalize_dim(d, self.ndim) for d in dims]
        if len(set(norm)) != len(norm):
            raise ValueError(f"flip: dims {dims} name a dim more than once")
        if self.ndim == 0:
            return self[...]
        index = [slice(None)] * self.ndim
        for d in norm:
            index[d] = slice(None, None, -1)
        return self[tuple(index)]

    def gather(self, dim: int, index) -> "Tensor":
        """out[..., j, ...] = self[..., index[..., j, ...], ...] along `dim` (torch.gather)."""
        idx = _arr(index)
        if not hasattr(idx, "dtype"):
            idx = np.asarray(idx)
        if idx.dtype.kind not in "iu":
            raise TypeError(f"gather index must hold integers, got dtype {idx.dtype}")
        if idx.ndim != self.ndim:
            raise ValueError(f"gather index has {idx.ndim} dims but the tensor has {self.ndim} (shape {self.shape})")
        return V.Gather.apply(self, _index_arrays(idx, self.device), dim=normalize_dim(dim, self.ndim))

    def repeat(self, *sizes):
        """Tile the tensor `sizes[i]` times along dim i (as torch.repeat; new leading dims allowed)."""
        sizes = tuple(sizes[0]) if len(sizes) == 1 and isinstance(sizes[0], (tuple, list)) else sizes
        if len(sizes) < self.ndim:
            raise ValueError(f"repeat needs at least {self.ndim} sizes for shape {self.shape}, got {sizes}")
        shape = (1,) * (len(sizes) - self.ndim) + self.shape
        inter, target = [], []
        for r, s in zip(sizes, shape):
            inter += [1, s]
            target += [r, s]
        out = self.reshape(inter).expand(*target)  # (r0, s0, r1, s1, ...)
        return out.reshape(tuple(r * s for r, s in zip(sizes, shape)))

    def repeat_interleave(self, repeats, dim=None, *, output_size=None) -> "Tensor":
        """Each element (or slice along `dim`) `repeats` times in a row: an int, or a 1-D integer tensor of
        one count per slice (or one for all). Without `dim` the tensor is flattened first (as torch). Picked
        by an integer index, so the gradient of the copies adds up."""
        x = self.reshape(-1) if dim is None or self.ndim == 0 else self
        d = normalize_dim(0 if dim is None else dim, x.ndim)
        n = x.shape[d]
        if isinstance(repeats, (bool, np.bool_)) or not isinstance(repeats, (int, np.integer, Tensor, np.ndarray)):
            raise TypeError(f"repeat_interleave(): repeats must be an int or an integer tensor, "
                            f"got {type(repeats).__name__}")
        counts = backend.to_numpy(_arr(repeats)) if not isinstance(repeats, (int, np.integer)) else np.asarray(repeats)
        if counts.dtype.kind not in "iu":
            raise TypeError(f"repeat_interleave(): repeats must hold integers, got dtype {counts.dtype}")
        if counts.ndim > 1:
            raise ValueError(f"repeat_interleave(): repeats must be 0-dim or 1-dim, got shape {counts.shape}")
        if counts.size == 1:
            counts = np.full(n, counts.reshape(()), dtype=np.int64)
        if counts.shape[0] != n:
            raise ValueError(f"repeat_interleave(): repeats has {counts.shape[0]} counts but the input has "
                             f"{n} slices along dim {d} (shape {x.shape})")
        if (counts < 0).any():
            raise ValueError("repeat_interleave(): repeats must be non-negative")
        idx = np.repeat(np.arange(n, dtype=np.int64), counts)
        if output_size is not None and output_size != idx.size:
            raise ValueError(f"repeat_interleave(): output_size={output_size} but the repeats make {idx.size}")
        return x[(slice(None),) * d + (idx,)]  # (..., Σ repeats, ...)

    def chunk(self, chunks: int, dim: int = 0):
        if chunks <= 0:
            raise ValueError(f"chunk expects `chunks` to be greater than 0, got: {chunks}")
        if self.ndim == 0:
            raise ValueError("chunk expects at least a 1-dimensional tensor")
        n = self.shape[normalize_dim(dim, self.ndim)]
        size = -(-n // chunks)
        return self.split(size, dim)

    def softmax(self, dim=None, *, dtype=None, axis=None):
        """Along `dim` (or `axis`; the last by default)."""
        from seqlab import functional as F

        return F.softmax(self, _dim_or_axis("softmax", dim, axis, default=-1), dtype=dtype)

    def log_softmax(self, dim=None, *, dtype=None, axis=None):
        from seqlab import functional as F

        return F.log_softmax(self, _dim_or_axis("log_softmax", dim, axis, default=-1), dtype=dtype)


def _keep(arr, dim, keepdim):
    return arr if not keepdim else backend.xp_of(arr).expand_dims(arr, dim)


def _argminmax(t: Tensor, dim, keepdim, use_min):
    arg = t.data.argmin if use_min else t.data.argmax
    if dim is None:
        return Tensor(arg())
    dim = normalize_dim(dim, t.ndim)
    if t.ndim == 0:  # as torch: index 0
        return Tensor(arg())
    return Tensor(_keep(arg(axis=dim), dim, keepdim))


def _minmax(t: Tensor, dim, keepdim, use_min):
    if dim is None:
        return R.Max.apply(t, dim=None, keepdim=False, use_min=use_min)
    if not isinstance(dim, int):
        raise TypeError(f"max/min with dim takes one int dim (as torch), got {dim!r}; use amax for several")
    dim = normalize_dim(dim, t.ndim)
    if t.ndim == 0:  # as torch: the value itself, at index 0
        pair = MinResult if use_min else MinMaxResult
        return pair(R.Max.apply(t, dim=None, keepdim=False, use_min=use_min), Tensor(t.data.argmax()))
    values = R.MaxDim.apply(t, dim=dim, keepdim=keepdim, use_min=use_min)
    idx = t.data.argmin(axis=dim) if use_min else t.data.argmax(axis=dim)
    return (MinResult if use_min else MinMaxResult)(values, Tensor(_keep(idx, dim, keepdim)))


def _size(size: tuple) -> tuple:
    """A shape given as `f(2, 3)` or `f((2, 3))`."""
    return tuple(size[0]) if len(size) == 1 and isinstance(size[0], (tuple, list)) else tuple(size)


def _sort_indices(t: Tensor, dim, descending: bool):
    """int64 indices that sort `t` along `dim`, stably: ties keep their order, also descending (the stable
    ascending sort of the reversed array, reversed)."""
    xp = backend.xp_of(t.data)
    d = normalize_dim(dim, t.ndim)
    if t.ndim == 0:
        return xp.zeros((), dtype=np.int64)
    if not descending:
        return xp.argsort(t.data, axis=d, kind="stable").astype(np.int64, copy=False)
    idx = xp.argsort(xp.flip(t.data, axis=d), axis=d, kind="stable")
    return ((t.shape[d] - 1) - xp.flip(idx, axis=d)).astype(np.int64, copy=False)


class ValuesIndices(tuple):
    """(values, indices), as torch.return_types.max/min/sort/topk: a pair with `.values` and `.indices`."""

    kind = "max"

    def __new__(cls, values, indices):
        return super().__new__(cls, (values, indices))

    @property
    def values(self):
        return self[0]

    @property
    def indices(self):
        return self[1]

    def __repr__(self) -> str:
        return f"seqlab.return_types.{self.kind}(\nvalues={self[0]!r},\nindices={self[1]!r})"


class MinMaxResult(ValuesIndices):
    kind = "max"


class MinResult(MinMaxResult):
    kind = "min"


class SortResult(ValuesIndices):
    kind = "sort"


class TopkResult(ValuesIndices):
    kind = "topk"




def _index_arrays(index, device: str):
    """An index with its Tensors and lists as arrays, each array on `device` (host index arrays are copied
    to the GPU for a GPU tensor, whose gradient adds into them there)."""
    def one(i):
        i = i.data if isinstance(i, Tensor) else (np.asarray(i) if isinstance(i, list) else i)
        return backend.to_device(i, device) if getattr(i, "ndim", 0) else i

    return tuple(one(i) for i in index) if isinstance(index, tuple) else one(index)


def _check_matmul(a: Sequence[int], b: Sequence[int]) -> None:
    if len(a) == 0 or len(b) == 0:
        raise ValueError(f"matmul needs tensors with at least 1 dimension, got shapes {tuple(a)} and {tuple(b)}")
    k_a = a[-1]
    k_b = b[0] if len(b) == 1 else b[-2]
    if k_a != k_b:
        raise ValueError(f"matmul shape mismatch: {tuple(a)} @ {tuple(b)} "
                         f"(inner dims {k_a} and {k_b} differ)")
    if len(a) > 2 or len(b) > 2:
        try:
            np.broadcast_shapes(tuple(a[:-2]), tuple(b[:-2]))
        except ValueError:
            raise ValueError(f"matmul shape mismatch: {tuple(a)} @ {tuple(b)} (batch dims "
                             f"{tuple(a[:-2])} and {tuple(b[:-2])} do not broadcast)") from None


def _check_reshape(shape, new_shape) -> None:
    size = math.prod(shape)  # Python ints: np.prod costs microseconds per call, on every reshape
    known = [s for s in new_shape if s != -1]
    if new_shape.count(-1) > 1:
        raise ValueError(f"reshape {tuple(new_shape)}: only one dimension can be -1")
    prod = math.prod(known)
    if (-1 in new_shape and (prod == 0 or size % prod)) or (-1 not in new_shape and prod != size):
        raise ValueError(f"cannot reshape a tensor of shape {tuple(shape)} ({size} elements) "
                         f"into {tuple(new_shape)}")
