"""torch's names for dtypes' limits, shapes and tensor types: `seqlab.finfo`, `iinfo`, `Size`, the
`seqlab.FloatTensor`-style type names, and `set_default_dtype` / `get_default_dtype`.

    seqlab.finfo(seqlab.float32).eps           # 1.1920928955078125e-07, as torch.finfo's
    x.shape == seqlab.Size([2, 3])              # a shape is a plain tuple; Size is one too
    seqlab.LongTensor([1, 2])                   # tensor([1, 2]) in int64
    x.type(seqlab.LongTensor)                   # x in int64
"""
from __future__ import annotations

import math
import operator

import numpy as np

from seqlab import backend
from seqlab.autograd.tensor import Tensor
from seqlab.autograd.tensor_convert import _TYPE_NAMES


def as_dtype(dtype) -> np.dtype:
    """`dtype` as NumPy's dtype, from any way seqlab's `dtype=` takes one: seqlab.float32 (NumPy's scalar
    type), a np.dtype, a name ('float32') or torch's dtype (torch.float32). seqlab.bfloat16 says why not."""
    return np.dtype(backend.from_torch_name(dtype))


def _fmt(value) -> str:
    return f"{value:g}"  # torch's repr shows 6 significant digits: eps=1.19209e-07


class finfo:
    """torch.finfo: the limits of a floating-point dtype (the default float dtype when none is given), as
    Python floats: bits, eps (the gap between 1 and the next number), max, min, tiny = smallest_normal (the
    smallest positive normal number), resolution (10 ** -decimal digits) and dtype (its name)."""

    def __init__(self, type=None):  # noqa: A002  (torch's argument name)
        dt = as_dtype(backend.default_dtype() if type is None else type)
        if dt.kind != "f":
            raise TypeError(f"finfo() requires a floating point dtype, got {dt.name}; use seqlab.iinfo for "
                            f"integer dtypes")
        info = np.finfo(dt)
        self.bits = int(info.bits)
        self.eps = float(info.eps)
        self.max = float(info.max)
        self.min = float(info.min)
        self.tiny = self.smallest_normal = float(info.smallest_normal)
        self.resolution = 10.0 ** -int(info.precision)
        self.dtype = dt.name

    def __repr__(self) -> str:
        return (f"finfo(resolution={_fmt(self.resolution)}, min={_fmt(self.min)}, max={_fmt(self.max)}, "
                f"eps={_fmt(self.eps)}, smallest_normal={_fmt(self.smallest_normal)}, tiny={_fmt(self.tiny)}, "
                f"dtype={self.dtype})")


class iinfo:
    """torch.iinfo: the limits of an integer dtype as Python ints: bits, max, min and dtype (its name).
    bool is not an integer dtype here (as torch)."""

    def __init__(self, type):  # noqa: A002  (torch's argument name)
        dt = as_dtype(type)
        if dt.kind not in "iu":
            raise TypeError(f"iinfo() requires an integer dtype, got {dt.name}; use seqlab.finfo for "
                            f"floating point dtypes")
        info = np.iinfo(dt)
        self.bits, self.max, self.min, self.dtype = int(info.bits), int(info.max), int(info.min), dt.name

    def __repr__(self) -> str:
        return f"iinfo(min={_fmt(self.min)}, max={_fmt(self.max)}, dtype={self.dtype})"


class Size(tuple):
    """torch.Size: a tuple of ints that is a shape. `Tensor.shape` stays a plain tuple (it is read on every
    op), and compares equal: `x.shape == seqlab.Size([2, 3])`. Slicing a Size, or adding a tuple to it,
    gives a Size."""

    def __new__(cls, sizes=()):
        out = []
        for i, v in enumerate(sizes):
            try:
                out.append(operator.index(v))
            except TypeError:
                raise TypeError(f"Size() takes an iterable of ints (item {i} is {type(v).__name__})") from None
        return super().__new__(cls, out)

    def numel(self) -> int:
        """The number of elements of a tensor of this shape (1 for Size([]))."""
        return math.prod(self)

    def __getitem__(self, index):
        out = super().__getitem__(index)
        return Size(out) if isinstance(index, slice) else out

    def __add__(self, other):
        if not isinstance(other, tuple):
            return NotImplemented
        return Size(tuple(self) + tuple(other))

    def __radd__(self, other):
        if not isinstance(other, tuple):
            return NotImplemented
        return Size(tuple(other) + tuple(self))

    def __repr__(self) -> str:
        return f"seqlab.Size({list(self)})"

    __str__ = __repr__


# ---- torch's tensor type names: seqlab.FloatTensor, LongTensor, ... -------------------------------------------
class _TensorType(type):
    """The class of `seqlab.FloatTensor` and its siblings: calling one builds a tensor of its dtype, and
    isinstance() asks whether a tensor has that dtype (on the CPU, as torch's)."""

    def __call__(cls, *args, device=None):
        if not args:
            data = np.zeros(0, dtype=cls.dtype)  # LongTensor(): an empty tensor
        elif isinstance(args[0], Size) or all(isinstance(a, (int, np.integer)) and not isinstance(a, bool)
                                              for a in args):
            shape = tuple(args[0]) if isinstance(args[0], Size) else args
            data = np.zeros(shape, dtype=cls.dtype)  # FloatTensor(2, 3): that shape (torch's values are unset)
        elif len(args) == 1:
            data = args[0]  # FloatTensor([1, 2]): these values
        else:
            raise TypeError(f"{cls.__name__}() takes sizes (ints) or one sequence of values, got {args!r}")
        return Tensor._of(data, dtype=cls.dtype, device=device)

    def __instancecheck__(cls, obj) -> bool:
        return isinstance(obj, Tensor) and obj.dtype == cls.dtype and obj.device == "cpu"

    def __repr__(cls) -> str:
        return f"<class 'seqlab.{cls.__name__}'>"


TENSOR_TYPES = {name: _TensorType(name, (), {"dtype": dtype, "__module__": "seqlab"})
                for dtype, name in _TYPE_NAMES.items()}
FloatTensor, DoubleTensor, HalfTensor = (TENSOR_TYPES[n] for n in ("FloatTensor", "DoubleTensor", "HalfTensor"))
LongTensor, IntTensor, ShortTensor, CharTensor, ByteTensor, BoolTensor = (
    TENSOR_TYPES[n] for n in ("LongTensor", "IntTensor", "ShortTensor", "CharTensor", "ByteTensor", "BoolTensor"))


# ---- the default float dtype (Python floats, seqlab.zeros, randn, nn layers' parameters) ------------------------
def set_default_dtype(d) -> None:
    """Make `d` (float32, the default, or float64) the dtype of new float tensors, as torch.set_default_dtype."""
    backend.set_default_dtype(as_dtype(d))


def get_default_dtype():
    """The default float dtype: seqlab.float32 unless set_default_dtype changed it."""
    return backend.default_dtype()
