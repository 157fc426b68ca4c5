"""`MoreMethods`: the rest of torch.Tensor's methods that learners' scripts meet, as a mixin of `Tensor` (its last
base, so every method defined before wins); and their `torch.*` functions (`TOPLEVEL`).

It joins `MoreOpsMethods` (tensor_more_ops.py: tan/asinh/..., gcd/lcm, ldexp/frexp/nextafter, renorm,
scatter_reduce/index_reduce, *_scatter, addr/addbmm, histogram, Tensor linear algebra) and adds here:

- the in-place forms of element-wise, comparison, bitwise, norm and product methods (sin_, atan2_, eq_,
  bitwise_and_, renorm_, addmm_, scatter_reduce_, ...), each the out-of-place method written into this tensor
  by `InPlaceMethods._replace_` (so refused for a tensor that requires grad under grad mode, the result's dtype
  cast to this one's, a float result into an integer tensor refused, as torch), and transpose_/swapdims_;
- the small predicates and views of a real tensor (is_cpu, is_signed, H, conj, real, imag, ...), byte/char;
- the in-place random fills log_normal_, cauchy_, geometric_ (seqlab's generator, as exponential_), bernoulli
  and multinomial (seqlab.sampling's);
- resize_/resize_as_, torch's legacy `new`, apply_/map_ (Python callables, element by element), and
  register_post_accumulate_grad_hook (run by the engine after a leaf's .grad is accumulated).
"""
from __future__ import annotations

import numpy as np

from seqlab import backend
from seqlab.autograd import engine
from seqlab.autograd import versions as _versions
from seqlab.autograd.tensor_common import _as_tensor, _bool_tensor, _tensor_class
from seqlab.autograd.tensor_math import _function
from seqlab.autograd.tensor_more_ops import FrexpResult, HistogramResult, MoreOpsMethods, TriangularSolveResult
from seqlab.autograd.torch_errors import ArgumentError, DtypeError, not_implemented


def _in_place_of(method: str, name: str | None = None):
    """`self.<method>(...)` written into this tensor: torch's `<method>_`."""
    name = name or method + "_"

    def fn(self, *args, **kwargs):
        return self._replace_(name, lambda: getattr(self, method)(*args, **kwargs), *args, *kwargs.values())

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"In place: `self.{method}(...)` written into this tensor, which keeps its dtype and shape."
    return fn


_IN_PLACE = [
    # element-wise, one operand
    "sin", "cos", "tan", "asin", "acos", "atan", "arcsin", "arccos", "arctan", "sinh", "cosh", "asinh", "acosh",
    "atanh", "arcsinh", "arccosh", "arctanh", "log1p", "log2", "log10", "expm1", "exp2", "erf", "logit", "rsqrt",
    "reciprocal", "square", "sign", "sgn", "frac", "fix", "negative", "deg2rad", "rad2deg",
    "logical_not", "bitwise_not",
    # element-wise, two operands
    "atan2", "arctan2", "hypot", "fmod", "remainder", "floor_divide", "xlogy", "copysign", "heaviside", "ldexp",
    "logical_and", "logical_or", "logical_xor", "bitwise_and", "bitwise_or", "bitwise_left_shift",
    "bitwise_right_shift", "gcd", "lcm", "nextafter",
    "eq", "ne", "lt", "le", "gt", "ge", "greater", "greater_equal", "less", "less_equal", "not_equal",
    # norms, products added to self, reductions into places
    "renorm", "addmm", "addmv", "baddbmm", "addbmm", "addr", "scatter_reduce", "index_reduce",
]


class MoreMethods(MoreOpsMethods):
    """The methods of this module and of tensor_more_ops.py (the in-place forms of `_IN_PLACE` are set below)."""

    __slots__ = ()

    # ---- in-place forms that are not `_replace_` of their method ----------------------------------------------
    def float_power_(self, exponent):
        """In place: self ** exponent, for a float64 tensor only (float_power's result is float64, as torch)."""
        if self.dtype != np.float64:
            raise DtypeError(f"the base given to float_power_ has dtype {self.dtype} but the operation's result "
                             f"requires dtype float64 (as torch)")
        return self._replace_("float_power_", lambda: self.float_power(exponent), exponent)

    def cumsum_(self, dim: int, *, dtype=None):
        if self.dtype.kind == "b":
            raise not_implemented("cumsum_", self.dtype, "number")
        return self._replace_("cumsum_", lambda: self.cumsum(dim, dtype=dtype))

    def cumprod_(self, dim: int, *, dtype=None):
        if self.dtype.kind == "b":
            raise not_implemented("cumprod_", self.dtype, "number")
        return self._replace_("cumprod_", lambda: self.cumprod(dim, dtype=dtype))

    def absolute_(self):
        if self.dtype.kind == "b":
            raise not_implemented("absolute_", self.dtype, "number")
        return self._replace_("absolute_", self.abs)

    def multiply(self, other):
        return self * other

    def multiply_(self, other):
        return self.mul_(other)

    def subtract_(self, other, *, alpha=1):
        return self.sub_(other, alpha=alpha)

    def divide_(self, other, *, rounding_mode: str | None = None):
        return self.div_(other, rounding_mode=rounding_mode)

    def true_divide_(self, other):
        return self.div_(other)

    def transpose_(self, dim0: int, dim1: int):
        return self._reshape_("transpose_", lambda: self.transpose(dim0, dim1))

    def swapaxes_(self, axis0: int, axis1: int):
        return self._reshape_("swapaxes_", lambda: self.transpose(axis0, axis1))

    def swapdims_(self, dim0: int, dim1: int):
        return self._reshape_("swapdims_", lambda: self.transpose(dim0, dim1))

    # ---- predicates and the views of a real tensor -------------------------------------------------------------
    @property
    def is_cpu(self) -> bool:
        return self.device == "cpu"

    def is_inference(self) -> bool:
        """False: seqlab.inference_mode records no graph, as no_grad, and marks no tensor."""
        return False

    def is_same_size(self, other) -> bool:
        return self.shape == tuple(other.shape)

    def is_signed(self) -> bool:
        """True for floating-point and signed integer dtypes (False for uint8 and bool), as torch."""
        return self.dtype.kind in "fic"

    def isreal(self):
        """True everywhere for a real tensor (a bool tensor)."""
        return _bool_tensor(backend.xp_of(self.data).ones(self.shape, dtype=bool))

    @property
    def output_nr(self) -> int:
        """The index of this tensor among its op's outputs: 0 (each seqlab op makes one tensor)."""
        return 0

    @property
    def H(self):  # noqa: N802 (torch's name)
        """The conjugate transpose of a matrix: its transpose for a real one (a 0-d tensor as it is)."""
        if self.ndim not in (0, 2):
            raise ArgumentError(f"tensor.H is only supported on matrices (2-D tensors). Got {self.ndim}-D tensor. "
                                f"For batches of matrices use mH (as torch)")
        return self if self.ndim == 0 else self.mT

    def conj(self):
        """The complex conjugate: a real tensor itself."""
        return self

    def resolve_conj(self):
        return self

    def resolve_neg(self):
        return self

    def is_conj(self) -> bool:
        return False

    def is_neg(self) -> bool:
        return False

    @property
    def real(self):
        """The real part: a real tensor itself."""
        return self

    @property
    def imag(self):
        raise DtypeError("imag is not implemented for tensors with non-complex dtypes.")

    def byte(self):
        return self.to(dtype=np.uint8)

    def char(self):
        return self.to(dtype=np.int8)

    # ---- random: in-place fills and draws from seqlab's generator ----------------------------------------------
    def log_normal_(self, mean: float = 1.0, std: float = 2.0, *, generator=None):
        """In place: e^N(mean, std²)."""
        if not std > 0:
            raise ArgumentError(f"log_normal_ expects std > 0.0, but found std={std}")
        return self._fill_random_("log_normal_", lambda g, shape: g.lognormal(mean, std, shape), generator)

    def cauchy_(self, median: float = 0.0, sigma: float = 1.0, *, generator=None):
        """In place: draws from the Cauchy distribution at `median` of scale `sigma`."""
        if not sigma > 0:
            raise ArgumentError(f"cauchy_ expects sigma > 0.0, but found sigma={sigma}")
        return self._fill_random_("cauchy_", lambda g, shape: median + sigma * g.standard_cauchy(shape), generator)

    def geometric_(self, p: float, *, generator=None):
        """In place: the number of Bernoulli(p) trials up to the first success (1, 2, ...); any number dtype."""
        if not 0 < p < 1:
            raise ArgumentError(f"geometric_ expects p to be in (0, 1), but got p={p}")
        return self._fill_random_("geometric_", lambda g, shape: g.geometric(p, shape), generator,
                                  floats_only=False)

    def bernoulli(self, p=None, *, generator=None):
        """1 with probability self (each element in [0, 1]; or p), else 0, in self's dtype: seqlab.bernoulli."""
        from seqlab.sampling import bernoulli

        return bernoulli(self, p, generator=generator)

    def multinomial(self, num_samples: int, replacement: bool = False, *, generator=None):
        from seqlab.sampling import multinomial

        return multinomial(self, num_samples, replacement, generator=generator)

    def hardshrink(self, lambd: float = 0.5):
        from seqlab import functional as F

        return F.hardshrink(self, lambd)

    def prelu(self, weight):
        from seqlab import functional as F

        return F.prelu(self, weight)

    # ---- memory: resize, torch's legacy constructor, Python callables -------------------------------------------
    def resize_(self, *sizes, memory_format=None):
        """In place: this tensor takes shape `sizes`, keeping its first elements in C order (zeros after them,
        where torch leaves memory uninitialized). Refused for a tensor that requires grad, as torch."""
        sizes = tuple(sizes[0]) if len(sizes) == 1 and isinstance(sizes[0], (tuple, list)) else sizes
        if self.requires_grad:
            raise RuntimeError("cannot resize variables that require grad")
        if any(int(s) < 0 for s in sizes):
            raise ArgumentError(f"resize_: negative dimension in {sizes}")
        xp = backend.xp_of(self.data)
        flat, new = self.data.reshape(-1), xp.zeros(int(np.prod(sizes, dtype=np.int64)), dtype=self.dtype)
        n = min(flat.size, new.size)
        new[:n] = flat[:n]
        self.data = new.reshape(sizes)
        _versions.bump(self.data)
        return self

    def resize_as_(self, other, memory_format=None):
        return self.resize_(tuple(other.shape))

    def new(self, *args, dtype=None, device=None):
        """torch's legacy constructor, in this tensor's dtype and device: `new()` empty, `new(2, 3)` or
        `new(seqlab.Size(...))` of that shape (zeros here, uninitialized in torch), `new(data)` a copy of a
        list, `new(tensor)` that tensor (its dtype must be this one's)."""
        T = _tensor_class()
        from seqlab.typeinfo import Size

        if dtype is not None and np.dtype(dtype) != self.dtype:
            raise TypeError(f"new(): dtype {np.dtype(dtype)} differs from the tensor's {self.dtype} (as torch)")
        if not args:
            return self.new_zeros((0,), device=device)
        if all(isinstance(a, (int, np.integer)) and not isinstance(a, bool) for a in args):
            return self.new_zeros(tuple(int(a) for a in args), device=device)
        if len(args) == 1 and isinstance(args[0], Size):
            return self.new_zeros(tuple(args[0]), device=device)
        if len(args) == 1 and isinstance(args[0], T):
            if args[0].dtype != self.dtype:
                raise TypeError(f"new(): expected a tensor of dtype {self.dtype}, got {args[0].dtype} (as torch)")
            return T._from_op(args[0].data, None)
        if len(args) == 1:
            return self.new_tensor(args[0], device=device)
        raise TypeError(f"new() takes sizes, a Size, a sequence of data or a tensor, got {args!r}")

    def _map_into(self, name: str, values) -> "MoreMethods":
        if backend.device_of(self.data) != "cpu":
            raise TypeError(f"{name} is only implemented on CPU tensors (as torch)")
        self._in_place(name)
        self.data[...] = np.asarray(values, dtype=object).reshape(self.shape).astype(self.dtype)
        _versions.bump(self.data)
        return self

    def apply_(self, callable):  # noqa: A002 (torch's name)
        """In place: each element x replaced by callable(x), a Python number (slow, CPU only, as torch)."""
        return self._map_into("apply_", [callable(x) for x in self.data.reshape(-1).tolist()])

    def map_(self, tensor, callable):  # noqa: A002
        """In place: each element x replaced by callable(x, y), y the element of `tensor` (broadcast) there."""
        other = np.broadcast_to(backend.to_numpy(_as_tensor(tensor, self).data), self.shape)
        pairs = zip(self.data.reshape(-1).tolist(), other.reshape(-1).tolist())
        return self._map_into("map_", [callable(x, y) for x, y in pairs])

    # ---- hooks -------------------------------------------------------------------------------------------------
    def register_post_accumulate_grad_hook(self, hook) -> "engine.HookHandle":
        """Call `hook(tensor)` after backward has accumulated this leaf's gradient into its `.grad` (as torch);
        its return value is ignored. Returns a handle whose `remove()` takes the hook off."""
        if not self.requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        if self._ctx is not None:
            raise RuntimeError("post accumulate grad hooks cannot be registered on non-leaf tensors")
        hooks = getattr(self, "_post_acc_hooks", None)
        if hooks is None:
            hooks = self._post_acc_hooks = []
        hooks.append(hook)
        return engine.HookHandle(hooks, hook)


for _method in _IN_PLACE:
    setattr(MoreMethods, _method + "_", _in_place_of(_method))
del _method


# ---- torch.* functions -----------------------------------------------------------------------------------------
_METHOD_FUNCTIONS = [
    "tan", "asinh", "acosh", "atanh", "arcsinh", "arccosh", "arctanh", "gcd", "lcm", "ldexp", "frexp", "nextafter",
    "renorm", "scatter_reduce", "index_reduce", "diagonal_scatter", "select_scatter", "slice_scatter", "addr",
    "addbmm", "split_with_sizes", "unsafe_split", "unsafe_chunk", "narrow_copy", "histogram", "matrix_exp",
    "cholesky_solve", "cholesky_inverse", "triangular_solve", "isreal", "conj", "resolve_conj", "resolve_neg",
    "is_conj", "is_neg", "is_same_size", "is_signed", "is_inference", "hardshrink",
]
globals().update({_name: _function(_name) for _name in _METHOD_FUNCTIONS})


def real(input):  # noqa: A002 (torch's name)
    """torch.real: a real tensor itself."""
    return _function("real", "resolve_conj")(input)


def imag(input):  # noqa: A002
    """torch.imag: refused for a real tensor, as torch."""
    return _as_tensor(input).imag


TOPLEVEL = _METHOD_FUNCTIONS + ["real", "imag"]

__all__ = ["MoreMethods", "TOPLEVEL", "FrexpResult", "HistogramResult", "TriangularSolveResult", *TOPLEVEL]
