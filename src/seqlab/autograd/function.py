"""`Function`: one differentiable primitive, forward and backward side by side.

A Function works on raw arrays. `Function.apply` unwraps tensors, runs
`forward`, and, when gradients are wanted, records the Function as the output
tensor's creator so `Tensor.backward` can call its `backward` later.

Broadcasting is undone in one place (`unbroadcast`, called by the engine),
never inside an op's backward.
"""
from __future__ import annotations

import functools
import threading
import weakref
from typing import Any

import numpy as np

from seqlab.autograd import versions as _versions
from seqlab.errors import ShapeError

_state = threading.local()  # per thread: `enabled` (grad mode), `recorded` (utils.checkpoint's list of ops)


def is_grad_enabled() -> bool:
    return getattr(_state, "enabled", True)


def _set_enabled(mode: bool) -> None:
    _state.enabled = bool(mode)


class no_grad:
    """Context manager (and decorator) that records no graph, as `torch.no_grad`. As a decorator it is
    written `@no_grad()` or bare, `@no_grad` (torch 2's), and so are `enable_grad` and `inference_mode`."""

    _bare_decorator = True  # set_grad_enabled(mode) needs its mode: not a decorator without parentheses

    def __new__(cls, *args, **kwargs):
        if cls._bare_decorator and len(args) == 1 and not kwargs and callable(args[0]):
            return cls()(args[0])  # `@no_grad` on a function: the function wrapped, as `@no_grad()` gives
        return super().__new__(cls)

    def __init__(self) -> None:
        pass

    def __enter__(self):
        self._prev = is_grad_enabled()
        _set_enabled(False)
        return self

    def __exit__(self, *exc):
        _set_enabled(self._prev)
        return False

    def __call__(self, fn):
        kind = type(self)  # enable_grad as a decorator too

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with kind():
                return fn(*args, **kwargs)

        return wrapper


class enable_grad(no_grad):
    """Records the graph again inside a `no_grad` block, as `torch.enable_grad`."""

    def __enter__(self):
        self._prev = is_grad_enabled()
        _set_enabled(True)
        return self


class set_grad_enabled(no_grad):
    """As `torch.set_grad_enabled(mode)`: switches recording on or off at once, and used in a ``with``
    (``with set_grad_enabled(phase == "train"):``) or as a decorator puts the previous mode back after."""

    _bare_decorator = False

    def __init__(self, mode: bool) -> None:
        self._prev, self.mode = is_grad_enabled(), bool(mode)
        _set_enabled(self.mode)

    def __enter__(self):
        return self

    def __call__(self, fn):
        mode = self.mode
        _set_enabled(self._prev)  # as a decorator it changes nothing until the function runs

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with set_grad_enabled(mode):
                return fn(*args, **kwargs)

        return wrapper


class inference_mode(no_grad):
    """`torch.inference_mode(mode=True)`: here the same as `no_grad` (no graph is recorded), or nothing with
    mode=False; a context manager and a decorator."""

    def __init__(self, mode: bool = True) -> None:
        self.mode = bool(mode)

    def __enter__(self):
        self._prev = is_grad_enabled()
        if self.mode:
            _set_enabled(False)
        return self

    def __call__(self, fn):
        mode = self.mode

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with inference_mode(mode):
                return fn(*args, **kwargs)

        return wrapper


class Function:
    """Base class of every primitive op.

    Subclasses implement ``forward(*arrays, **params) -> array`` and
    ``backward(grad) -> tuple`` returning one gradient per input (``None``
    for inputs that need none). Arrays needed by backward are kept with
    ``save_for_backward`` (or as attributes).
    """

    parents: tuple = ()           # per input: its creator Function, the leaf Tensor itself, or None (no grad)
    needs_input_grad: tuple = ()
    saved: tuple = ()
    out_shape: tuple = ()         # shape, dtype and a weak reference of the output tensor (set when recorded)
    out_dtype = None
    out_ref = None

    def save_for_backward(self, *arrays: Any) -> None:
        self.saved = arrays
        self._saved_clock = _versions._clock  # backward checks that none was changed in place since

    def forward(self, *args, **kwargs):  # pragma: no cover - abstract
        raise NotImplementedError

    def backward(self, grad):  # pragma: no cover - abstract
        raise NotImplementedError

    @classmethod
    def apply(cls, *inputs, **params):
        return cls.apply_with_fn(*inputs, **params)[0]

    @classmethod
    def apply_with_fn(cls, *inputs, **params):
        """As `apply`, also returning the Function object (for values it computed on the way,
        such as attention weights), whether or not a graph was recorded."""
        Tensor = _Tensor or _tensor_class()  # a global, not an import statement: ~1 µs less per op

        fn = cls()
        arrays = [x.data if isinstance(x, Tensor) else x for x in inputs]
        needs = ()
        if getattr(_state, "enabled", True):  # is_grad_enabled(), inlined
            # set before forward, so a forward can skip keeping what no backward will read
            fn.needs_input_grad = needs = tuple([isinstance(x, Tensor) and x.requires_grad for x in inputs])
        try:
            out = fn.forward(*arrays, **params)
        except ValueError as e:  # NumPy's "could not be broadcast": torch raises a RuntimeError there
            if type(e) is ValueError and "broadcast" in str(e):
                raise ShapeError(f"{cls.__name__}: {e}") from None
            raise
        if isinstance(out, np.generic):  # NumPy reductions return scalars; keep 0-d arrays
            out = np.asarray(out)
        if True in needs:
            # the graph links Functions, not tensors: an input that an op made is represented by that op
            # (its creator), so the graph holds no intermediate tensor and no array that no backward
            # saved. A leaf (a parameter, a user's input) stands for itself: its .grad is filled in.
            fn.parents = tuple([(x if x._ctx is None else x._ctx) if need else None for x, need in zip(inputs, needs)])
            t = Tensor._from_op(out, fn)
            fn.out_shape, fn.out_dtype, fn.out_ref = out.shape, out.dtype, weakref.ref(t)
            recorded = getattr(_state, "recorded", None)
            if recorded is not None:  # a non-reentrant checkpoint on this thread notes the ops its function records
                recorded.append(fn)
            return t, fn
        return Tensor._from_op(out, None), fn


_Tensor = None  # seqlab.autograd.tensor.Tensor once loaded (that module imports this one, so not at the top)


def _tensor_class():
    global _Tensor
    from seqlab.autograd.tensor import Tensor

    _Tensor = Tensor
    return Tensor


class IndexGrad:
    """The gradient of `a[index]`: `values` at `index` of an otherwise-zero array of `shape`.

    Returned by GetItem.backward instead of a dense array so the engine adds
    it straight into the one gradient buffer of the input: slicing x[:, t]
    for t = 1..T then costs O(T · slice), not T full-size zero arrays.
    `basic` says the index picks no element twice (slices, ints, None, ...);
    otherwise repeats accumulate (scatter-add).
    """

    __slots__ = ("shape", "index", "values", "basic")

    def __init__(self, shape: tuple, index, values, basic: bool):
        self.shape, self.index, self.values, self.basic = shape, index, values, basic

    def add_into(self, buf) -> None:
        """buf[index] += values, with repeated indices accumulating."""
        if self.basic:
            buf[self.index] += self.values
        else:
            from seqlab.backend import xp_of

            xp_of(buf).add.at(buf, self.index, self.values)

    def dense(self, dtype):
        from seqlab.backend import xp_of

        buf = xp_of(self.values).zeros(self.shape, dtype=dtype)
        if self.basic:
            buf[self.index] = self.values
        else:
            self.add_into(buf)
        return buf


def unbroadcast(grad, shape: tuple):
    """Sum `grad` over the axes that broadcasting expanded, back to `shape`."""
    if grad.shape == shape:
        return grad
    extra = grad.ndim - len(shape)
    axes = tuple(range(extra)) + tuple(
        i + extra for i, s in enumerate(shape) if s == 1 and grad.shape[i + extra] != 1
    )
    if axes:
        grad = grad.sum(axis=axes, keepdims=True)
    return grad.reshape(shape)
