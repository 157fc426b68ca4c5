"""`InPlaceMethods`: what changes a tensor's own memory, as a mixin of `Tensor`: zero_, fill_, copy_,
assignment (`t[i] = v`, masked_fill_), in-place arithmetic (add_, `x += y`, ...) and the in-place forms of the
element-wise and shape methods (exp_, clamp_, tril_, unsqueeze_, ...).

The in-place forms of the selection methods (scatter_, index_add_, masked_scatter_, ...) sit beside their
out-of-place forms in tensor_select.py.

These methods name `Tensor` and tensor.py's `_arr`, `_index_arrays` and `_KIND_RANK` (torch's promotion kinds)
as globals, as they did where they were written (tensor.py, tensor_math.py); tensor.py binds those names here
once it has defined them (it imports this module first, for Tensor's bases, so this one cannot import it).
"""
from __future__ import annotations

import weakref
from typing import Any, Callable

import numpy as np

from seqlab import backend
from seqlab import random as _random
from seqlab.autograd import versions as _versions
from seqlab.autograd.function import is_grad_enabled, no_grad

Tensor = _arr = _index_arrays = _KIND_RANK = None  # bound by seqlab.autograd.tensor (see above)


class InPlaceMethods:
    """torch.Tensor's in-place methods: zero_/fill_/copy_, assignment, add_/`+=` and exp_..t_."""

    __slots__ = ()

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

    def fill_diagonal_(self, fill_value, wrap: bool = False) -> "Tensor":
        """In place: `fill_value` on the main diagonal (every dim the same size above 2 dims; a tall matrix
        with `wrap` starts again N + 1 rows down, as torch's and NumPy's)."""
        self._in_place("fill_diagonal_")
        if self.ndim < 2 or (self.ndim > 2 and len(set(self.shape)) != 1):
            raise ValueError(f"fill_diagonal_: dimensions must be larger than 1 and all of equal length above 2 "
                             f"dims, got shape {self.shape}")
        backend.xp_of(self.data).fill_diagonal(self.data, fill_value, wrap=wrap)
        _versions.bump(self.data)
        return self

    def copy_(self, other) -> "Tensor":
        """In place: the values of `other` (broadcast to this tensor's shape, as torch), cast to its dtype."""
        self._in_place("copy_")
        src = backend.to_device(np.asarray(other) if not hasattr(other, "shape") else _arr(other), self.device)
        if not backend.broadcasts_to(tuple(src.shape), self.shape):
            raise ValueError(f"copy_: a source of shape {tuple(src.shape)} does not broadcast to the tensor's "
                             f"shape {self.shape}")
        self.data[...] = src
        _versions.bump(self.data)
        return self

    # In-place random fills (torch's init idioms: `w.normal_(0, 0.02)`, `b.uniform_(-k, k)`), drawn from
    # seqlab's generator (`seqlab.manual_seed`) or `generator`, cast to the tensor's dtype; outside the graph,
    # refused for a tensor that requires grad while gradients are recorded, as fill_.
    def _fill_random_(self, name: str, draw, generator, floats_only: bool = True) -> "Tensor":
        self._in_place(name)
        if floats_only and self.dtype.kind != "f":
            raise TypeError(f"{name} needs a floating-point tensor, got dtype {self.dtype} (as torch)")
        values = draw(generator or _random.default_generator(), self.shape)
        self.data[...] = backend.to_device(values.astype(self.dtype, copy=False), self.device)
        _versions.bump(self.data)
        return self

    def normal_(self, mean: float = 0.0, std: float = 1.0, *, generator=None) -> "Tensor":
        """In place: draws from N(mean, std²)."""
        if std < 0:
            raise ValueError(f"normal_ expects std >= 0.0, but found std {std}")
        return self._fill_random_("normal_", lambda g, shape: g.normal(mean, std, shape), generator)

    def uniform_(self, a: float = 0.0, b: float = 1.0, *, generator=None) -> "Tensor":
        """In place: draws from U[a, b) (torch's `uniform_(from, to)`)."""
        if a > b:
            raise ValueError(f"uniform_ expects to return a [from, to) range, but found from={a} > to={b}")
        return self._fill_random_("uniform_", lambda g, shape: a + (b - a) * g.random(shape), generator)

    def exponential_(self, lambd: float = 1.0, *, generator=None) -> "Tensor":
        """In place: draws from the exponential distribution of rate `lambd` (mean 1 / lambd)."""
        if not lambd > 0:
            raise ValueError(f"exponential_ expects lambda > 0.0, but found lambda={lambd}")
        return self._fill_random_("exponential_", lambda g, shape: g.exponential(1.0 / lambd, shape), generator)

    def bernoulli_(self, p=0.5, *, generator=None) -> "Tensor":
        """In place: 1 with probability `p` (a number, or a tensor that broadcasts to this one), else 0; any
        dtype (bool: True/False)."""
        probs = backend.to_numpy(_arr(p)) if hasattr(p, "shape") else p
        if np.any(np.asarray(probs) < 0) or np.any(np.asarray(probs) > 1):
            raise ValueError(f"bernoulli_ expects p to be in [0, 1], but got p={p}")
        return self._fill_random_("bernoulli_", lambda g, shape: g.random(shape) < probs, generator,
                                  floats_only=False)

    def random_(self, *bounds, to: int | None = None, generator=None) -> "Tensor":
        """In place: integers uniform in [from, to): `random_(to)`, `random_(from, to)` or `random_()`, which
        draws from [0, 2**mantissa bits] for a float dtype (every integer it holds exactly) and
        [0, max] of an integer dtype, as torch."""
        if len(bounds) > 2 or (to is not None and len(bounds) > 1):
            raise TypeError("random_() takes (), (to) or (from, to)")
        if len(bounds) == 2:
            low, high = bounds
        elif len(bounds) == 1:
            low, high = (0, bounds[0]) if to is None else (bounds[0], to)
        else:
            low, high = 0, to
        if high is not None and low >= high:
            raise ValueError(f"random_ expects 'from' to be less than 'to', but got from={low} >= to={high}")
        kind = self.dtype.kind
        top = (1 if kind == "b" else int(np.iinfo(self.dtype).max) if kind in "iu"
               else 2 ** (np.finfo(self.dtype).nmant + 1))  # the largest value random_() may draw
        if kind in "iu" and (low < np.iinfo(self.dtype).min or (high is not None and high - 1 > top)):
            raise ValueError(f"random_: [{low}, {high}) is out of bounds for {self.dtype}")
        return self._fill_random_(
            "random_", lambda g, shape: g.integers(low, top if high is None else high - 1, shape, dtype=np.int64,
                                                   endpoint=True), generator, floats_only=False)

    # Assignment into a tensor: `t[1] = 2.5`, `t[mask] = 0`, `t[:, 0] = other`, `t.masked_fill_(mask, v)`. The
    # value is cast to the tensor's dtype (as torch). Under grad mode, `t[i] = v` and masked_fill_ into a tensor
    # of a graph (or of a value that requires grad) are recorded (`_become`); the other assignments
    # (masked_scatter_, index_put_, ...) refuse there, rather than drop a gradient (`_check_assign`). Outside
    # the graph the write is in place, and a backward that saved the array raises (versions).
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

    def _records_assignment(self, name: str, value) -> bool:
        """Whether an assignment into this tensor is recorded in the graph (see `_become`): under grad mode,
        into a tensor that is part of a graph, or of a value that requires grad. Into a leaf that requires
        grad it is an error, as torch's."""
        if not is_grad_enabled():
            return False
        value_grad = isinstance(value, Tensor) and value.requires_grad
        if self.requires_grad and self._ctx is None:
            raise RuntimeError(f"{name}: a leaf tensor that requires grad cannot be changed in place (as torch); "
                               f"assign under seqlab.no_grad() (e.g. to set parameters), or change a clone()")
        return self.requires_grad or value_grad

    def _become(self, new) -> None:
        """Record an assignment as torch does for its users: this tensor becomes `new`, the op that wrote a
        copy of it, so later ops see the written values and backward sends the gradient through the
        write (to the value, and to the old tensor at the places left unwritten).

        The write goes to a copy: tensors that shared this one's memory before it (taken with view,
        reshape or slicing) keep the old values, where torch's views would see the new ones."""
        old = self._ctx
        if hasattr(old, "out_ref"):  # an op (not None, nor a freed graph's marker)
            old.out_ref = None  # the old op's output is no longer this tensor (as detach_)
        new._ctx.out_ref = weakref.ref(self)
        self.data, self._ctx, self.requires_grad = new.data, new._ctx, True

    def __setitem__(self, index, value) -> None:
        if self._records_assignment("t[index] = value", value):
            from seqlab.autograd.ops.scatter import IndexPut

            v = value if isinstance(value, Tensor) else self._value_array(value)
            self._become(IndexPut.apply(self, v, index=_index_arrays(index, self.device)))
            return
        self._check_assign("t[index] = value", value)
        self.data[_index_arrays(index, self.device)] = self._value_array(value)
        _versions.bump(self.data)

    def masked_fill_(self, mask, value) -> "Tensor":
        """In place: `value` where `mask` (bool, broadcastable to the tensor's shape) is True."""
        if self._records_assignment("masked_fill_", value):
            self._become(self.masked_fill(mask, value))
            return self
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
        from seqlab.autograd.tensor import check_bool_subtraction
        check_bool_subtraction(self, other)
        return self._arith_(backend.xp_of(self.data).subtract, "sub_", other, alpha)

    def mul_(self, other) -> "Tensor":
        return self._arith_(backend.xp_of(self.data).multiply, "mul_", other)

    def div_(self, other, *, rounding_mode: str | None = None) -> "Tensor":
        """In place: self / other, or with rounding_mode "trunc" or "floor" the rounded quotient (see div),
        which an integer tensor may take."""
        if rounding_mode is not None:
            return self._replace_("div_", lambda: self.div(other, rounding_mode=rounding_mode), other)
        return self._arith_(backend.xp_of(self.data).true_divide, "div_", other, true_divide=True)

    def bitwise_xor_(self, other) -> "Tensor":
        """In place: self ^ other, for bool and integer tensors."""
        if self.dtype.kind not in "biu" or (isinstance(other, (float, np.floating)) or
                                            getattr(other, "dtype", np.dtype(bool)).kind not in "biu"):
            raise TypeError(f"bitwise_xor_ (^=) is not implemented for {self.dtype} tensors or float operands (as "
                            f"torch); it takes bool and integer tensors")
        return self._arith_(backend.xp_of(self.data).bitwise_xor, "bitwise_xor_", other)

    @staticmethod
    def _operand_grad(name: str, other) -> None:
        if isinstance(other, Tensor) and other.requires_grad and is_grad_enabled():
            raise RuntimeError(f"{name}: the operand requires grad, and seqlab records no in-place op, so its "
                               f"gradient would be lost; write the out-of-place `x = x.{name[:-1]}(y)` instead")

    def _arith_(self, ufunc, name: str, other, alpha=1, true_divide: bool = False) -> "Tensor":
        self._in_place(name)
        self._operand_grad(name, other)
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
        # torch's rule was checked above (no float into an integer tensor): within it the result is cast back to
        # the tensor's dtype as torch casts it, e.g. a uint8 tensor += an int64 one
        ufunc(self.data, src, out=self.data, casting="unsafe")
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

    def __ipow__(self, o):
        return NotImplemented if self._rebinds(o) else self.pow_(o)

    def __ixor__(self, o):
        return NotImplemented if self._rebinds(o) else self.bitwise_xor_(o)

    # ---- in place from the out-of-place op: refused, as zero_/add_ above, while the tensor is in a graph ---
    def _replace_(self, name: str, compute: Callable[[], Any], *operands):
        """Write compute() (the out-of-place op) into this tensor's memory; its dtype and shape stay. An
        operand that requires grad is refused under grad mode, as add_'s."""
        self._in_place(name)
        for other in operands:
            self._operand_grad(name, other)
        if not getattr(getattr(self.data, "flags", None), "writeable", True):
            raise RuntimeError(f"{name}: this tensor's array is read-only (a broadcast view, as from expand(), "
                               f"where elements share memory, or an array marked read-only); change a clone()")
        with no_grad():
            out = compute()
        if _KIND_RANK.get(out.dtype.kind, 3) > _KIND_RANK.get(self.dtype.kind, 3):
            raise RuntimeError(f"{name}: result type {out.dtype} can't be cast to the tensor's dtype "
                               f"{self.dtype} (as torch); use the out-of-place {name[:-1]}() or .float() first")
        if tuple(out.shape) != self.shape:
            raise ValueError(f"{name}: the result has shape {tuple(out.shape)} but the tensor has shape "
                             f"{self.shape} (an in-place op keeps the tensor's shape)")
        self.data[...] = out.data
        _versions.bump(self.data)
        return self

    def exp_(self):
        return self._replace_("exp_", self.exp)

    def log_(self):
        return self._replace_("log_", self.log)

    def sqrt_(self):
        return self._replace_("sqrt_", self.sqrt)

    def relu_(self):
        return self._replace_("relu_", self.relu)

    def abs_(self):
        return self._replace_("abs_", self.abs)

    def neg_(self):
        return self._replace_("neg_", self.__neg__)

    def tanh_(self):
        return self._replace_("tanh_", self.tanh)

    def sigmoid_(self):
        return self._replace_("sigmoid_", self.sigmoid)

    def floor_(self):
        return self._replace_("floor_", self.floor)

    def ceil_(self):
        return self._replace_("ceil_", self.ceil)

    def trunc_(self):
        return self._replace_("trunc_", self.trunc)

    def round_(self, *, decimals: int = 0):
        return self._replace_("round_", lambda: self.round(decimals=decimals))

    def clamp_(self, min=None, max=None):  # noqa: A002 (torch's names)
        return self._replace_("clamp_", lambda: self.clamp(min, max))

    clip_ = clamp_

    def clamp_min_(self, min):  # noqa: A002
        return self._replace_("clamp_min_", lambda: self.clamp_min(min))

    def clamp_max_(self, max):  # noqa: A002
        return self._replace_("clamp_max_", lambda: self.clamp_max(max))

    def pow_(self, exponent):
        return self._replace_("pow_", lambda: self.pow(exponent), exponent)

    def lerp_(self, end, weight):
        return self._replace_("lerp_", lambda: self.lerp(end, weight), end, weight)

    def addcmul_(self, tensor1, tensor2, *, value=1):
        return self._replace_("addcmul_", lambda: self.addcmul(tensor1, tensor2, value=value), tensor1, tensor2)

    def addcdiv_(self, tensor1, tensor2, *, value=1):
        return self._replace_("addcdiv_", lambda: self.addcdiv(tensor1, tensor2, value=value), tensor1, tensor2)

    def nan_to_num_(self, nan: float = 0.0, posinf: float | None = None, neginf: float | None = None):
        return self._replace_("nan_to_num_", lambda: self.nan_to_num(nan, posinf, neginf))

    def tril_(self, diagonal: int = 0):
        return self._replace_("tril_", lambda: self.tril(diagonal))

    def triu_(self, diagonal: int = 0):
        return self._replace_("triu_", lambda: self.triu(diagonal))

    # shape changes in place: this tensor's array becomes a view of the new shape (other tensors sharing the
    # memory keep theirs, as torch); the values do not change, so no version is counted
    def _reshape_(self, name: str, compute: Callable[[], Any]):
        self._in_place(name)
        with no_grad():
            self.data = compute().data
        return self

    def unsqueeze_(self, dim: int):
        return self._reshape_("unsqueeze_", lambda: self.unsqueeze(dim))

    def squeeze_(self, dim=None):
        return self._reshape_("squeeze_", lambda: self.squeeze(dim))

    def t_(self):
        return self._reshape_("t_", self.t)
