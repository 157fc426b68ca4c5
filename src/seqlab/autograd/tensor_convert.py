"""`ConversionMethods`: a tensor in another dtype or on another device, new tensors like it, and the small
properties that describe it, as a mixin of `Tensor`: to/cpu/cuda, astype/float/long/.../type/type_as, contiguous,
new_full/new_zeros/new_ones/new_tensor/new_empty, is_floating_point/is_cuda/element_size/..., grad_fn.

The methods that were Tensor's own name `Tensor` as a global, as they did in tensor.py; that module binds it here
once it has defined it (it imports this module first, for Tensor's bases, so this one cannot import it).
"""
from __future__ import annotations

import numpy as np

from seqlab import backend
from seqlab.autograd import engine
from seqlab.autograd import versions as _versions
from seqlab.autograd.function import Function
from seqlab.autograd.tensor_common import _tensor_class

Tensor = None  # bound by seqlab.autograd.tensor (see above)


# torch's names for tensor types (`x.type()`), here with "seqlab." in front: 'seqlab.FloatTensor'
_TYPE_NAMES = {np.dtype(np.float32): "FloatTensor", np.dtype(np.float64): "DoubleTensor",
               np.dtype(np.float16): "HalfTensor", np.dtype(np.int64): "LongTensor", np.dtype(np.int32): "IntTensor",
               np.dtype(np.int16): "ShortTensor", np.dtype(np.int8): "CharTensor", np.dtype(np.uint8): "ByteTensor",
               np.dtype(bool): "BoolTensor"}


def _size(size: tuple) -> tuple:
    """A shape given as `f(2, 3)` or `f((2, 3))`."""
    return tuple(size[0]) if len(size) == 1 and isinstance(size[0], (tuple, list)) else tuple(size)


class GradFn:
    """`tensor.grad_fn`: the op that made a tensor, named as torch names it (`name()` is "MulBackward0" for
    seqlab's `Mul`), with `next_functions` (one `(node, 0)` per input: a GradFn, an `AccumulateGrad` for a
    leaf, or None for an input that needs no gradient). After `backward()` has freed the graph the op is
    forgotten: "FreedBackward0"."""

    __slots__ = ("_fn",)

    def __init__(self, fn) -> None:
        self._fn = fn

    def name(self) -> str:
        return "FreedBackward0" if engine._is_freed(self._fn) else f"{type(self._fn).__name__}Backward0"

    @property
    def next_functions(self) -> tuple:
        if self._fn is engine.FREED:
            return ()
        out = []
        for parent, needs in zip(self._fn.parents, self._fn.needs_input_grad):
            node = None if not needs else GradFn(parent) if isinstance(parent, Function) else AccumulateGrad(parent)
            out.append((node, 0))
        return tuple(out)

    def __eq__(self, other) -> bool:
        return isinstance(other, GradFn) and other._fn is self._fn

    def __hash__(self) -> int:
        return id(self._fn)

    def __repr__(self) -> str:
        return f"<{self.name()} object at {hex(id(self._fn))}>"


class AccumulateGrad:
    """In `next_functions`, the node that adds a gradient into a leaf's `.grad` (`variable` is the leaf)."""

    __slots__ = ("variable",)

    def __init__(self, variable) -> None:
        self.variable = variable

    def name(self) -> str:
        return "AccumulateGrad"

    @property
    def next_functions(self) -> tuple:
        return ()

    def __repr__(self) -> str:
        return f"<AccumulateGrad object at {hex(id(self.variable))}>"


class ConversionMethods:
    """torch.Tensor's conversions (to, float, type, contiguous), new_* constructors and small properties."""

    __slots__ = ()

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

    # As torch's: each is `self.to(dtype)`, so a tensor that has the dtype already is returned itself (no copy).
    def float(self) -> "Tensor":
        return self.to(dtype=np.float32)

    def double(self) -> "Tensor":
        return self.to(dtype=np.float64)

    def half(self) -> "Tensor":
        return self.to(dtype=np.float16)

    def long(self) -> "Tensor":
        return self.to(dtype=np.int64)

    def int(self) -> "Tensor":
        """int32, as torch's .int() (.long() is int64)."""
        return self.to(dtype=np.int32)

    def short(self) -> "Tensor":
        return self.to(dtype=np.int16)

    def bool(self) -> "Tensor":
        return self.to(dtype=bool)

    def type(self, dtype=None):
        """No argument: the type's name as torch's ('seqlab.FloatTensor', 'seqlab.cuda.LongTensor'). With a
        dtype, a dtype name ('float64'), a type name ('torch.LongTensor') or a type (seqlab.LongTensor, torch's
        too): this tensor in that dtype (itself when it has it already)."""
        if dtype is None:
            name = _TYPE_NAMES.get(self.dtype, f"{self.dtype}Tensor")
            return f"seqlab.cuda.{name}" if self.device == "cuda" else f"seqlab.{name}"
        if isinstance(dtype, type) and dtype.__name__ in _TYPE_NAMES.values():
            dtype = dtype.__name__  # seqlab.LongTensor or torch.LongTensor: by its name
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

    def type_as(self, other: "Tensor") -> "Tensor":
        """This tensor in `other`'s dtype and on its device: itself when it already is (as torch's)."""
        return self.to(other.device, other.dtype)

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

    # ---- small properties and constructors ----------------------------------------------------------------
    def is_floating_point(self) -> bool:
        return self.dtype.kind == "f"

    def is_complex(self) -> bool:
        return self.dtype.kind == "c"

    def is_contiguous(self, memory_format=None) -> bool:
        """Whether the array is in C order (a transposed or expanded view is not, as torch)."""
        return bool(getattr(self.data.flags, "c_contiguous", True))

    @property
    def is_cuda(self) -> bool:
        return self.device == "cuda"

    def get_device(self) -> int:
        """-1 on the CPU, the GPU's index (0) on the GPU, as torch."""
        return 0 if self.device == "cuda" else -1

    def element_size(self) -> int:
        """Bytes per element."""
        return self.dtype.itemsize

    @property
    def itemsize(self) -> int:
        return self.dtype.itemsize

    @property
    def nbytes(self) -> int:
        """Bytes of the elements this tensor shows (numel × itemsize; a view's, not its base's)."""
        return self.numel() * self.dtype.itemsize

    def stride(self, dim: int | None = None):
        """Elements to step in memory for one step along each dim (a tuple), or along `dim`: torch's strides,
        NumPy's in elements rather than bytes (0 along an expanded dim; negative along a reversed slice,
        which torch cannot make)."""
        strides = tuple(s // self.dtype.itemsize for s in self.data.strides)
        if dim is None:
            return strides
        if not -self.ndim <= dim < max(self.ndim, 1):
            raise IndexError(f"Dimension out of range (expected to be in range of [{-max(self.ndim, 1)}, "
                             f"{max(self.ndim, 1) - 1}], but got {dim})")
        return strides[dim] if self.ndim else 1

    def data_ptr(self) -> int:
        """The address of the first element (two tensors that share memory from the same place have the same)."""
        return _address(self.data)

    def storage_offset(self) -> int:
        """Elements between the start of the memory this tensor views and its first element."""
        return (_address(self.data) - _address(_versions._root(self.data))) // self.dtype.itemsize

    def nelement(self) -> int:
        return self.numel()

    def ndimension(self) -> int:
        return self.ndim

    def new_tensor(self, data, dtype=None, device=None, requires_grad: bool = False):
        """A copy of `data` as a new leaf tensor, in this tensor's dtype and device unless given (as torch:
        `long_tensor.new_tensor([1.5])` is int64)."""
        T = _tensor_class()
        arr = backend.from_torch(data.data if isinstance(data, T) else data)
        arr = backend.to_device(arr if hasattr(arr, "shape") else np.asarray(arr), device or self.device)
        return T(arr.astype(np.dtype(dtype) if dtype is not None else self.dtype, copy=True),
                 requires_grad=requires_grad)

    def new_empty(self, *size, dtype=None, device=None, requires_grad: bool = False):
        """torch's values are unspecified here; seqlab's are zeros (as seqlab.empty)."""
        return self.new_zeros(*size, dtype=dtype, device=device, requires_grad=requires_grad)

    @property
    def grad_fn(self):
        """None for a leaf, else a `GradFn` naming the op that made this tensor ("MulBackward0")."""
        return None if self._ctx is None else GradFn(self._ctx)


def _address(arr) -> int:
    """The address of an array's first element: NumPy's or CuPy's."""
    if isinstance(arr, np.ndarray):
        return int(arr.__array_interface__["data"][0])
    return int(arr.data.ptr)
