"""`Tensor`: an array of the active array module plus what autograd needs.

The data is a plain NumPy (or CuPy) array in `.data`; gradients accumulate
in `.grad`, also a plain array. Every differentiable method is one call to a
primitive `Function` (see `ops/`) or a composition of them.

This module holds the core, what every forward and backward pass calls: construction, basic properties,
autograd, arithmetic, comparisons, the common reductions (sum, mean, max/min) and shape ops (reshape, permute,
expand, indexing, split, gather). The rest of torch's Tensor methods come from mixin bases, one theme a module:
tensor_inplace (zero_, `t[i] = v`, add_, `+=`, exp_, ...), tensor_convert (to, float, type, new_*, is_cuda,
grad_fn), tensor_math (tensor_compare, tensor_pointwise: comparisons, predicates, element-wise math) and
tensor_indexing (tensor_select, tensor_shape, tensor_linalg, tensor_stats: selection and scatter, shapes,
diagonals and products, running ops, reductions, sorting).
"""
from __future__ import annotations

import math
import warnings
from typing import Any, Sequence

import numpy as np

from seqlab import backend
from seqlab.autograd import engine
from seqlab.autograd import tensor_convert, tensor_inplace, tensor_shape, tensor_stats
from seqlab.autograd.function import Function, is_grad_enabled
from seqlab.autograd.ops import activation as A
from seqlab.autograd.ops import elementwise as E
from seqlab.devices import CPU, CUDA
from seqlab.errors import ShapeError
from seqlab.autograd.ops import matmul as M
from seqlab.autograd.ops import movement as V
from seqlab.autograd.ops import reduce as R
from seqlab.autograd.ops.reduce import normalize_dim, normalize_dims
from seqlab.autograd.tensor_common import _dim_or_axis
from seqlab.autograd.torch_errors import DtypeError
from seqlab.autograd.tensor_convert import ConversionMethods
from seqlab.autograd.tensor_indexing import IndexingMethods
from seqlab.autograd.tensor_inplace import InPlaceMethods
from seqlab.autograd.tensor_math import MathMethods
from seqlab.autograd.tensor_extra import ExtraMethods
from seqlab.autograd.tensor_linalg_special import LinalgSpecialMethods
from seqlab.autograd.tensor_more import MoreMethods
from seqlab.autograd.tensor_stats import MinMaxResult, MinResult
from seqlab.autograd.tensor_convert import _size  # noqa: F401  (re-exported: importable from here, as before)
from seqlab.autograd.tensor_stats import SortResult, TopkResult, ValuesIndices  # noqa: F401  (re-exported, as _size)


_NO_DATA = object()  # Tensor() with no argument


def _is_size(n) -> bool:
    """A dimension for torch's legacy `Tensor(2, 3)`: a Python int (not a bool), nonnegative."""
    return type(n) is int and n >= 0


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


def _is_one(v) -> bool:
    """Whether an `alpha`/`value` argument is the integer 1 (the default: nothing to scale; a float 1.0 is
    still checked against integer tensors, as torch)."""
    return isinstance(v, (int, np.integer)) and v == 1


def _is_bool(x) -> bool:
    """A bool tensor, array or Python/NumPy bool (what torch's subtraction refuses)."""
    return isinstance(x, (bool, np.bool_)) or getattr(x, "dtype", None) == np.bool_


def check_bool_subtraction(a, b) -> None:
    """torch's refusal of `-` with a bool operand, before NumPy's (a TypeError for two bools) or its silent
    promotion of one bool to an integer (`1 - mask` gave 0/1 ints where torch raises)."""
    if _is_bool(a) and _is_bool(b):
        raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` or "
                           "`logical_xor()` operator instead.")
    if _is_bool(a) or _is_bool(b):
        raise RuntimeError("Subtraction, the `-` operator, with a bool tensor is not supported. If you are trying "
                           "to invert a mask, use the `~` or `logical_not()` operator instead.")


_check_bool_subtraction = check_bool_subtraction


class Tensor(InPlaceMethods, ConversionMethods, MathMethods, IndexingMethods, ExtraMethods, LinalgSpecialMethods,
             MoreMethods):
    """An n-dimensional array that records the operations applied to it."""

    __slots__ = ("data", "grad", "requires_grad", "_ctx", "_retains_grad", "_hooks", "_post_acc_hooks", "__weakref__")
    __array_priority__ = 1000  # so `ndarray + Tensor` calls Tensor.__radd__

    def __init__(self, data: Any = _NO_DATA, *sizes: int, requires_grad: bool = False, dtype=None,
                 device: str | None = None):
        """`Tensor(array_or_values)`; and torch's legacy constructor: `Tensor(2, 3)` (zeros of that shape: torch
        leaves the values unset), `Tensor()` (shape (0,)) and `Tensor([1, 2])` in the default float dtype, as
        in `nn.Parameter(torch.Tensor(out, in))`. An array keeps its dtype."""
        if sizes or data is _NO_DATA or type(data) is int:  # torch.Tensor(2, 3), Tensor(), Tensor(3)
            shape = () if data is _NO_DATA else (data, *sizes)
            if not all(_is_size(n) for n in shape):
                raise TypeError(f"Tensor() takes sizes (ints) or one array or sequence of values, got "
                                f"{(data, *sizes)!r}")
            data = np.zeros(shape or (0,), dtype=dtype or backend.default_dtype())
        elif dtype is None and isinstance(data, (list, tuple)):
            dtype = backend.default_dtype()  # torch.Tensor([1, 2]) is float32, as FloatTensor
        self._init(_to_array(data, dtype, device), requires_grad)

    @classmethod
    def _of(cls, data: Any, requires_grad: bool = False, dtype=None, device: str | None = None) -> "Tensor":
        """A tensor of `data` with its dtype inferred as `seqlab.tensor` does (a list of ints is int64, an int
        a 0-d int64), for seqlab's own code; `Tensor(...)` itself is torch's legacy constructor for those."""
        t = cls.__new__(cls)
        Tensor._init(t, _to_array(data, dtype, device), requires_grad)
        return t

    def _init(self, data, requires_grad: bool) -> None:
        self.data = data
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

    def __reversed__(self) -> "Tensor":
        """`reversed(x)`: x flipped along dim 0 (a 0-d tensor itself), as torch's (d2l's bidirectional RNN)."""
        return self if self.ndim == 0 else self.flip(0)

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
            raise ShapeError(f"item() needs a tensor with one element, got shape {self.shape}")
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

    def __contains__(self, element) -> bool:
        """`value in t`: whether any element of t equals `value` (a number, or a tensor compared with
        broadcasting), as torch's `(t == value).any()`."""
        if not isinstance(element, (Tensor, int, float, bool, np.number, np.bool_)):
            raise TypeError(f"Tensor.__contains__ only supports a Tensor or a number, got {type(element).__name__}")
        return bool((self == element).any())

    def __format__(self, spec: str) -> str:
        """f"{t}" of a 0-d tensor is its value's (as torch: '1.2345000505447388' for float32 1.2345), of others
        str(t); a number format (f"{loss:.4f}") formats a one-element tensor's value. (torch formats only 0-d
        tensors so; a one-element tensor with dims is accepted here too.)"""
        if not spec:
            return str(self.item()) if self.data.ndim == 0 else str(self)
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
    def backward(self, gradient: Any = None, retain_graph: bool | None = None, create_graph: bool = False,
                 inputs=None) -> None:
        """Accumulate d(self)/d(leaf) into every leaf's `.grad`, or with `inputs` (a tensor or a sequence)
        only into those tensors' `.grad` (a non-leaf's too), as torch.

        `gradient` is required for non-scalar tensors (as torch). The graph
        is freed afterwards unless `retain_graph`. `create_graph=True` is refused
        (NotImplementedError): a `.grad` here is a plain array, which holds no graph; double backward
        is `seqlab.autograd.grad(..., create_graph=True)`, which returns Tensors.
        """
        if create_graph:
            raise NotImplementedError(engine.NO_DOUBLE_BACKWARD)
        if inputs is not None:
            inputs = [inputs] if isinstance(inputs, Tensor) else list(inputs)
            if not inputs:
                raise RuntimeError("`inputs` argument to `backward()` cannot be empty.")
            if not all(t.requires_grad for t in inputs):
                raise RuntimeError("one of the tensors in `inputs` does not require grad")
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
        engine.run_backward(self, grad, retain_graph=bool(retain_graph), inputs=inputs)

    def retain_grad(self) -> None:
        """Keep this tensor's gradient in `.grad` after backward, though it is not a leaf (a leaf keeps its own)."""
        if not self.requires_grad:
            raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
        if self._ctx is not None:
            self._retains_grad = True

    @property
    def retains_grad(self) -> bool:
        """True for a non-leaf whose gradient backward will keep (`retain_grad()` was called), as torch's."""
        return self._retains_grad

    def register_hook(self, hook) -> "engine.HookHandle":
        """Call `hook(grad)` when backward computes this tensor's gradient (as torch): `grad` is a Tensor, and
        a returned Tensor or array replaces it from there on (None keeps it). For a leaf it runs before the
        gradient is added into `.grad`. Returns a handle whose `remove()` takes the hook off."""
        if not self.requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        owner = self if self._ctx is None else self._ctx  # a leaf itself, else the op that made it
        if engine._is_freed(owner):
            raise RuntimeError("cannot register a hook on a tensor whose graph backward() already freed")
        hooks = getattr(owner, "_hooks", None)
        if hooks is None:
            hooks = owner._hooks = []
        hooks.append(hook)
        return engine.HookHandle(hooks, hook)

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
        _check_bool_subtraction(self, o)
        return E.Sub.apply(*self._promoted(o))

    def __rsub__(self, o):
        _check_bool_subtraction(self, o)
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
        if self.dtype == np.bool_:  # NumPy's TypeError names its own function; torch's message says what to use
            raise RuntimeError("Negation, the `-` operator, on a bool tensor is not supported. If you are trying "
                               "to invert a mask, use the `~` or `logical_not()` operator instead.")
        return E.Neg.apply(self)

    def __pow__(self, p):
        if isinstance(p, Tensor):
            return E.PowTensor.apply(*self._promoted(p))
        if isinstance(p, np.generic):  # a NumPy number counts as a Python one, as torch: x ** np.float64(2) is float32
            p = p.item()
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
        o = o if isinstance(o, Tensor) else Tensor._of(o)
        _check_matmul(self.shape, o.shape)
        return M.MatMul.apply(self, o)

    def __rmatmul__(self, o):
        return Tensor._of(o).__matmul__(self)

    matmul = __matmul__

    def mm(self, mat2) -> "Tensor":
        """Matrix product of two 2-D tensors (no broadcasting, as torch.mm)."""
        mat2 = mat2 if isinstance(mat2, Tensor) else Tensor._of(mat2)
        if self.ndim != 2 or mat2.ndim != 2:
            raise ValueError(f"mm expects two matrices, got shapes {self.shape} and {mat2.shape}; "
                             f"matmul (@) takes other shapes")
        return self @ mat2

    def bmm(self, mat2) -> "Tensor":
        """Batched matrix product of (b, n, k) and (b, k, m) tensors (no broadcasting, as torch.bmm)."""
        mat2 = mat2 if isinstance(mat2, Tensor) else Tensor._of(mat2)
        if self.ndim != 3 or mat2.ndim != 3 or self.shape[0] != mat2.shape[0]:
            raise ValueError(f"bmm expects two 3-D tensors with the same batch size, got shapes {self.shape} "
                             f"and {mat2.shape}; matmul (@) broadcasts")
        return self @ mat2
    def __pos__(self):
        """`+t` is t itself, as torch's (which refuses a bool tensor)."""
        if self.dtype.kind == "b":
            raise TypeError("the unary + operator on a bool tensor is not supported (as torch)")
        return self

    def __abs__(self):
        return self.abs()

    def add(self, other, *, alpha=1):
        """self + alpha · other, as torch's add."""
        if _is_one(alpha):
            return self + other
        a, b = self._alpha_operands("add", other, alpha)
        return a + b

    def sub(self, other, *, alpha=1):
        """self − alpha · other, as torch's sub."""
        if _is_one(alpha):
            return self - other
        a, b = self._alpha_operands("sub", other, alpha)
        return a - b

    subtract = sub

    def _alpha_operands(self, name: str, other, alpha):
        """(self, alpha · other) promoted as `+` does. As torch: a float alpha is refused where the result is
        an integer or bool tensor, and a bool result takes alpha as a bool."""
        a, b = self._promoted(other)
        if a.dtype.kind not in "fc" and isinstance(alpha, (float, np.floating)):
            raise TypeError(f"{name}(): alpha must not be a floating point number for {a.dtype} operands (as "
                            f"torch), got alpha={alpha!r}")
        if a.dtype.kind == "b":
            alpha = bool(alpha)
        return a, b * alpha

    mul = __mul__
    pow = __pow__
    neg = __neg__

    def div(self, other, *, rounding_mode: str | None = None):
        """self / other (true division); rounding_mode "trunc" rounds the quotient toward zero and "floor"
        down (Python's //), in the operands' result dtype (integers stay integers), as torch's div. A rounded
        quotient is piecewise constant: its gradient is 0 for both operands (torch's)."""
        if rounding_mode is None:
            return self / other
        if rounding_mode not in ("trunc", "floor"):
            raise ValueError(f"div expected rounding_mode to be one of None, 'trunc', or 'floor' but found "
                             f"{rounding_mode!r}")
        a, b = self._int_div_operands(other, "div", reverse=False)
        with np.errstate(divide="ignore", invalid="ignore"):  # a float divisor of 0: ±inf or nan, as torch
            return E.RoundedDiv.apply(a, b, mode=rounding_mode)

    divide = div

    def addcmul(self, tensor1, tensor2, *, value=1):
        """self + value · tensor1 · tensor2, broadcast, in the three tensors' result dtype (as torch, which
        truncates a float `value` to an integer result's dtype)."""
        prod = tensor1 * tensor2 if isinstance(tensor1, Tensor) else Tensor._of(_to_array(tensor1)) * tensor2
        if _is_one(value):
            return self + prod
        if self.dtype.kind not in "fc" and prod.dtype.kind not in "fc" and isinstance(value, (float, np.floating)):
            value = int(value)
        return self + prod * value

    def addcdiv(self, tensor1, tensor2, *, value=1):
        """self + value · tensor1 / tensor2 (true division), broadcast, as torch; two integer (or bool)
        tensors are refused, as torch's (its old integer addcdiv rounded)."""
        t1 = tensor1 if isinstance(tensor1, Tensor) else Tensor._of(_to_array(tensor1))
        t2 = tensor2 if isinstance(tensor2, Tensor) else Tensor._of(_to_array(tensor2))
        if t1.dtype.kind not in "fc" and t2.dtype.kind not in "fc":
            raise TypeError(f"addcdiv(): integer division with addcdiv is not supported (tensor1 {t1.dtype}, "
                            f"tensor2 {t2.dtype}, as torch); convert one to a float dtype")
        q = t1 / t2
        return self + (q if _is_one(value) else q * value)

    def where(self, condition, y) -> "Tensor":
        """self where `condition` is True, else y: `seqlab.where(condition, self, y)`."""
        from seqlab.creation import where

        return where(condition, self, y)

    def exp(self):
        return E.Exp.apply(self._float_input())

    def log(self):
        return E.Log.apply(self._float_input())

    def sqrt(self):
        return E.Sqrt.apply(self._float_input())

    def rsqrt(self):
        return self.sqrt().reciprocal()

    def reciprocal(self):
        x = self._float_input()  # integers and bools: the default float dtype, as torch's
        return E.Div.apply(x.dtype.type(1), x)

    def abs(self):
        return E.Abs.apply(self)

    def clamp(self, min=None, max=None):
        """Each element limited to [min, max] (min > max: max everywhere), in torch's result dtype: an integer
        tensor with a float bound is the default float dtype, as `+` would make it. A tensor bound broadcasts
        and gets its gradient where it is taken (`clamp_min`, `clamp_max`)."""
        if min is None and max is None:
            raise ValueError("clamp: at least one of 'min' or 'max' must not be None (as torch)")
        if isinstance(min, Tensor) or isinstance(max, Tensor):
            out = self if min is None else self.clamp_min(min)
            return out if max is None else out.clamp_max(max)
        x = self
        for bound in (min, max):  # a number of a higher kind promotes the tensor, as in self + bound
            if bound is not None:
                x = x._promoted(bound)[0]
        lo, hi = (None if v is None else x.dtype.type(v) for v in (min, max))  # a number takes x's dtype
        return E.Clamp.apply(x, lo=lo, hi=hi)

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
            return E.Clone.apply(self)
        return Tensor(E.clone_array(self.data))

    def norm(self, p: float = 2, dim=None, keepdim: bool = False, dtype=None) -> "Tensor":
        """(Σ|x|^p)^(1/p) over `dim` (all elements by default), of a floating-point tensor (as torch); `dtype`
        casts it first."""
        if dtype is not None:
            return self.to(dtype=dtype).norm(p, dim, keepdim)
        if self.dtype.kind not in "fc":
            raise TypeError(f"norm(): expected a floating point or complex tensor, got dtype {self.dtype} (as "
                            f"torch); convert with .float() first")
        # at the zero vector the gradient is 0, as torch's (the formulas' chain rule reads 0 · inf = NaN there)
        if p == 2:
            return E.Sqrt.apply((self * self).sum(dim, keepdim), zero_at_zero=True)
        if p == 1:
            return self.abs().sum(dim, keepdim)
        if p == float("inf"):
            return self.abs().amax(dim, keepdim)
        if p == float("-inf"):
            return self.abs().amin(dim, keepdim)
        if p == 0:  # how many elements are not 0; its gradient is 0, as torch's (written so inf and NaN stay out)
            nonzero = (self.data != 0).sum(axis=normalize_dims(dim, self.ndim), keepdims=keepdim)
            count = Tensor(backend.xp_of(self.data).asarray(nonzero, dtype=self.dtype))
            return (self.masked_fill(self != 0, 0) * 0).sum(dim, keepdim) + count
        powers = E.Pow.apply(self.abs(), p, zero_at_zero=True)  # p < 1: 0, not inf, at a zero element
        return E.Pow.apply(powers.sum(dim, keepdim), 1.0 / p, zero_at_zero=True)

    # ---- comparisons (no gradient) ---------------------------------------
    # `t == None` is False and `t != None` True, as torch's (Python's answer once the tensor declines)
    def __eq__(self, o):  # noqa: D105
        return NotImplemented if o is None else Tensor._of(self.data == _arr(o))

    def __ne__(self, o):
        return NotImplemented if o is None else Tensor._of(self.data != _arr(o))

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
        return Tensor(self.data & _arr(o.item() if isinstance(o, np.generic) else o))  # a NumPy int: as a Python one

    def __or__(self, o):
        return Tensor(self.data | _arr(o.item() if isinstance(o, np.generic) else o))

    # `^` of bool and integer tensors, in torch's result dtype (`_promoted`: bool ^ 2 is int64); no gradient
    def _xor(self, o, reverse: bool) -> "Tensor":
        a, b = self._promoted(o)
        if a.dtype.kind not in "biu":
            raise TypeError(f"bitwise_xor (^) is not implemented for {a.dtype} tensors (as torch); it takes bool "
                            f"and integer tensors")
        a, b = (b, a) if reverse else (a, b)
        xp = backend.xp_of(self.data)
        return Tensor._from_op(xp.asarray(xp.bitwise_xor(_arr(a), _arr(b))), None)

    def __xor__(self, o):
        return self._xor(o, reverse=False)

    def __rxor__(self, o):
        return self._xor(o, reverse=True)

    bitwise_xor = __xor__

    # ---- reductions -------------------------------------------------------
    # `axis=` is torch's alias for `dim` in every reduction below (x.sum(axis=1)); `dtype=` casts first.
    def sum(self, dim=None, keepdim: bool = False, *, dtype=None, axis=None):
        """Bool and integer tensors sum in int64 (as torch; NumPy sums unsigned ones in uint64)."""
        x = self if dtype is None else self.astype(dtype)
        if x.dtype.kind == "u":
            x = x.astype(np.int64)
        return R.Sum.apply(x, dim=_dim_or_axis("sum", dim, axis), keepdim=keepdim)

    def mean(self, dim=None, keepdim: bool = False, *, dtype=None, axis=None):
        """Of a floating-point tensor (or with a float `dtype=`); an integer or bool one is refused, as torch."""
        x = self if dtype is None else self.astype(dtype)
        if x.dtype.kind not in "fc":
            what = "the input" if dtype is None else "dtype="
            raise DtypeError(f"mean(): could not infer output dtype: {what} must be a floating point or complex "
                            f"dtype, got {x.dtype} (as torch); pass dtype=seqlab.float32 or convert with .float()")
        return R.Mean.apply(x, dim=_dim_or_axis("mean", dim, axis), keepdim=keepdim)

    def max(self, dim=None, keepdim: bool = False, *, axis=None):
        """Without `dim`: the max value. With `dim`: (values, indices) as torch. With a tensor: the
        element-wise max (`maximum`)."""
        if isinstance(dim, Tensor):
            return self.maximum(dim)
        return _minmax(self, _dim_or_axis("max", dim, axis), keepdim, use_min=False)

    def min(self, dim=None, keepdim: bool = False, *, axis=None):
        if isinstance(dim, Tensor):
            return self.minimum(dim)
        return _minmax(self, _dim_or_axis("min", dim, axis), keepdim, use_min=True)

    def amax(self, dim=None, keepdim: bool = False, *, axis=None):
        return R.Max.apply(self, dim=_dim_or_axis("amax", dim, axis), keepdim=keepdim)

    def argmax(self, dim=None, keepdim: bool = False, *, axis=None):
        return _argminmax(self, _dim_or_axis("argmax", dim, axis), keepdim, use_min=False)

    def argmin(self, dim=None, keepdim: bool = False, *, axis=None):
        return _argminmax(self, _dim_or_axis("argmin", dim, axis), keepdim, use_min=True)

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

    def tensor_split(self, indices_or_sections=None, dim: int = 0, *, sections=None, indices=None):
        """Views along `dim`, as torch's: `sections` (an int) pieces as equal as can be (the first n % sections
        one longer), or pieces cut before each of `indices` (a list, or a 1-D int64 tensor; Python's slicing
        of out-of-range or decreasing ones: empty pieces)."""
        given = [v for v in (indices_or_sections, sections, indices) if v is not None]
        if len(given) != 1:
            raise TypeError("tensor_split() takes one of indices_or_sections, sections or indices")
        cut = given[0]
        if isinstance(cut, Tensor):
            if cut.dtype != np.int64 or cut.ndim > 1:
                raise TypeError(f"tensor_split expected tensor_indices_or_sections to be a 0-D or 1-D int64 "
                                f"tensor, got dtype {cut.dtype} and shape {cut.shape}")
            cut = cut.item() if cut.ndim == 0 else cut.tolist()
        if self.ndim == 0:
            raise ValueError("tensor_split expected at least a 1-dimensional tensor, but got a tensor with 0 dims")
        d = normalize_dim(dim, self.ndim)
        n = self.shape[d]
        if isinstance(cut, (int, np.integer)):
            if cut <= 0:
                raise ValueError(f"number of sections must be larger than 0, got {cut}")
            size, extra = divmod(n, int(cut))
            cut = [(size + 1) * i if i <= extra else size * i + extra for i in range(1, int(cut))]
        bounds = [0, *[int(i) for i in cut], None]
        return tuple(self[(slice(None),) * d + (slice(start, stop),)] for start, stop in zip(bounds, bounds[1:]))

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


def _index_arrays(index, device: str):
    """An index with its Tensors and lists as arrays, each array on `device` (host index arrays are copied
    to the GPU for a GPU tensor, whose gradient adds into them there)."""
    def one(i):
        if isinstance(i, Tensor):
            i = i.data
            if i.dtype == np.uint8:  # torch reads a uint8 tensor as a mask (deprecated there), not as indices
                warnings.warn("indexing with a uint8 tensor reads it as a mask, as torch does (which deprecates "
                              "it); use a bool tensor", UserWarning, stacklevel=4)
                i = i.astype(bool)
        elif isinstance(i, list):
            i = np.asarray(i) if i else np.zeros(0, dtype=np.int64)  # x[[]]: no rows, as torch (NumPy: float)
        return backend.to_device(i, device) if getattr(i, "ndim", 0) else i

    return tuple(one(i) for i in index) if isinstance(index, tuple) else one(index)


def _check_matmul(a: Sequence[int], b: Sequence[int]) -> None:
    if len(a) == 0 or len(b) == 0:
        raise ValueError(f"matmul needs tensors with at least 1 dimension, got shapes {tuple(a)} and {tuple(b)}")
    k_a = a[-1]
    k_b = b[0] if len(b) == 1 else b[-2]
    if k_a != k_b:
        raise ShapeError(f"matmul shape mismatch: {tuple(a)} @ {tuple(b)} "
                         f"(inner dims {k_a} and {k_b} differ)")
    if len(a) > 2 or len(b) > 2:
        try:
            np.broadcast_shapes(tuple(a[:-2]), tuple(b[:-2]))
        except ValueError:
            raise ShapeError(f"matmul shape mismatch: {tuple(a)} @ {tuple(b)} (batch dims "
                             f"{tuple(a[:-2])} and {tuple(b[:-2])} do not broadcast)") from None


def _check_reshape(shape, new_shape) -> None:
    size = math.prod(shape)  # Python ints: np.prod costs microseconds per call, on every reshape
    known = [s for s in new_shape if s != -1]
    if new_shape.count(-1) > 1:
        raise ValueError(f"reshape {tuple(new_shape)}: only one dimension can be -1")
    prod = math.prod(known)
    if (-1 in new_shape and (prod == 0 or size % prod)) or (-1 not in new_shape and prod != size):
        raise ShapeError(f"cannot reshape a tensor of shape {tuple(shape)} ({size} elements) "
                         f"into {tuple(new_shape)}")


# The methods moved out of the Tensor class into mixins name `Tensor`, and some of them this module's `_arr`,
# `_index_arrays` and `_KIND_RANK`, as globals, as they did here. Their modules cannot import this one when they
# load (it imports them first, for Tensor's bases), so it binds those names in them now.
for _module in (tensor_inplace, tensor_convert, tensor_shape, tensor_stats):
    _module.Tensor = Tensor
tensor_inplace._arr = tensor_shape._arr = _arr
tensor_inplace._index_arrays, tensor_inplace._KIND_RANK = _index_arrays, _KIND_RANK
del _module
