"""The `Distribution` base class and the helpers its subclasses share, as torch.distributions'.

Shapes: a draw of `d.sample(sample_shape)` has shape sample_shape + batch_shape + event_shape. batch_shape
indexes independent (not identically parameterised) distributions; event_shape is the shape of one draw
(() for a scalar, (k,) for a Dirichlet or a MultivariateNormal). `log_prob(value)` reduces the event dims.

Validation (on by default, as torch's under `python` without -O): each parameter is checked against
`arg_constraints` at construction and each value against `support` in `log_prob`/`cdf`; out-of-support
ones raise ValueError. `validate_args=False` or `Distribution.set_default_validate_args(False)` turns it off.
"""
from __future__ import annotations

import math
from numbers import Number

import numpy as np

from seqlab import backend
from seqlab import random as _random
from seqlab.autograd.function import no_grad
from seqlab.autograd.tensor import Tensor
from seqlab.creation import full, tensor
from seqlab.distributions import constraints
from seqlab.typeinfo import Size, finfo, get_default_dtype


class lazy_property:
    """Computed on first read, then cached on the instance (Categorical's `probs` from `logits`, or back)."""

    def __init__(self, fn):
        self.fn = fn
        self.__doc__ = fn.__doc__

    def __get__(self, instance, owner=None):
        if instance is None:
            return self
        value = self.fn(instance)
        instance.__dict__[self.fn.__name__] = value
        return value


def broadcast_all(*values) -> tuple:
    """The parameters as tensors of one broadcast shape: numbers become tensors of the tensors' dtype (the
    default float dtype if there is none), as torch's broadcast_all."""
    tensors = [v for v in values if isinstance(v, Tensor)]
    for v in values:
        if not isinstance(v, (Tensor, Number)):
            raise ValueError(f"Input arguments must all be instances of numbers.Number or Tensor, got "
                             f"{type(v).__name__}")
    dtype = np.result_type(*[t.dtype for t in tensors]) if tensors else get_default_dtype()
    if tensors and dtype.kind != "f":
        dtype = np.dtype(get_default_dtype())
    out = [v if isinstance(v, Tensor) else tensor(float(v), dtype=dtype) for v in values]
    shape = np.broadcast_shapes(*[tuple(t.shape) for t in out])
    return tuple(t if tuple(t.shape) == shape else t.expand(shape) for t in out)


def as_float(value, like: Tensor | None = None) -> Tensor:
    """A tensor argument as given; a number as a tensor (like's dtype, or the default)."""
    if isinstance(value, Tensor):
        return value
    return tensor(float(value), dtype=like.dtype if like is not None else get_default_dtype())


def clamp_probs(probs: Tensor) -> Tensor:
    """Probabilities kept in [eps, 1 − eps] of their dtype, so their logs stay finite."""
    eps = finfo(probs.dtype).eps
    return probs.clamp(min=eps, max=1 - eps)


def probs_to_logits(probs: Tensor, is_binary: bool = False) -> Tensor:
    """log p (categorical) or log p − log(1 − p) (binary), of clamped probabilities."""
    p = clamp_probs(probs)
    return p.log() - (-p).log1p() if is_binary else p.log()


def logits_to_probs(logits: Tensor, is_binary: bool = False) -> Tensor:
    """sigmoid (binary) or softmax over the last dim (categorical)."""
    return logits.sigmoid() if is_binary else logits.softmax(-1)


def sum_rightmost(value: Tensor, dim: int) -> Tensor:
    """Sum over the `dim` rightmost dims (none for dim 0)."""
    return value.reshape(tuple(value.shape[:value.ndim - dim]) + (-1,)).sum(-1) if dim > 0 else value


def generator() -> np.random.Generator:
    """seqlab's generator as it is now (manual_seed replaces it, so never cache it)."""
    return _random.default_generator()


def from_numpy(arr, like: Tensor, dtype=None) -> Tensor:
    """A NumPy draw as a tensor on like's device, in `dtype` (default: like's)."""
    arr = np.asarray(arr).astype(dtype or like.dtype, copy=False)
    return Tensor(backend.to_device(arr, like.device))


def _shape_str(shape) -> str:
    return f"({', '.join(str(s) for s in shape)}{',' if len(shape) == 1 else ''})"


class Distribution:
    """Base class: subclasses set `arg_constraints`, `support`, and the methods they can compute."""

    has_rsample = False
    has_enumerate_support = False
    arg_constraints: dict = {}
    _validate_args = True

    @staticmethod
    def set_default_validate_args(value: bool) -> None:
        """Turn argument validation on or off for every distribution made afterwards without validate_args."""
        if value not in (True, False):
            raise ValueError(f"set_default_validate_args expects True or False, got {value!r}")
        Distribution._validate_args = bool(value)

    def __init__(self, batch_shape=(), event_shape=(), validate_args: bool | None = None):
        self._batch_shape, self._event_shape = Size(batch_shape), Size(event_shape)
        if validate_args is not None:
            self._validate_args = validate_args
        if self._validate_args:
            self._check_parameters()

    def _check_parameters(self) -> None:
        for name, constraint in self.arg_constraints.items():
            if constraints.is_dependent(constraint):
                continue
            if name not in self.__dict__ and isinstance(getattr(type(self), name, None), lazy_property):
                continue  # derived from another parameter, which was checked
            value = getattr(self, name)
            if not bool(np.all(backend.to_numpy(constraint.check(value).data))):
                raise ValueError(f"Expected parameter {name} ({type(value).__name__} of shape "
                                 f"{_shape_str(value.shape)}) of distribution {self!r} to satisfy the constraint "
                                 f"{constraint!r}, but found invalid values:\n{value}")

    # shapes ----------------------------------------------------------------------------------------------
    @property
    def batch_shape(self) -> Size:
        return self._batch_shape

    @property
    def event_shape(self) -> Size:
        return self._event_shape

    def _extended_shape(self, sample_shape=()) -> Size:
        if isinstance(sample_shape, (int, np.integer)):
            sample_shape = (int(sample_shape),)
        return Size(tuple(sample_shape) + tuple(self._batch_shape) + tuple(self._event_shape))

    # the expanded-parameter copy: subclasses list their parameters and each one's event ndim --------------
    _expand_params: dict = {}

    def expand(self, batch_shape, _instance=None) -> "Distribution":
        """The same distribution with its parameters broadcast to `batch_shape` (no copy of the data)."""
        batch_shape = Size(batch_shape)
        new = _instance if _instance is not None else type(self).__new__(type(self))
        for key, value in self.__dict__.items():
            if key in self._expand_params and isinstance(value, Tensor):
                event = tuple(value.shape[value.ndim - self._expand_params[key]:]) if self._expand_params[key] else ()
                value = value.expand(tuple(batch_shape) + event)
            new.__dict__.setdefault(key, value)
        Distribution.__init__(new, batch_shape, self._event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def _expanded(self, batch_shape, **fields) -> "Distribution":
        """A new instance of this class over `batch_shape` (same event shape and validation) holding `fields`:
        the `expand` of a distribution built on another (LogNormal on Normal, Multinomial on Categorical)."""
        new = type(self).__new__(type(self))
        new.__dict__.update(fields)
        Distribution.__init__(new, batch_shape, self._event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    # what subclasses provide -------------------------------------------------------------------------------
    @property
    def support(self):
        raise NotImplementedError

    @property
    def mean(self) -> Tensor:
        raise NotImplementedError(f"{type(self).__name__} does not implement mean")

    @property
    def mode(self) -> Tensor:
        raise NotImplementedError(f"{type(self).__name__} does not implement mode")

    @property
    def variance(self) -> Tensor:
        raise NotImplementedError(f"{type(self).__name__} does not implement variance")

    @property
    def stddev(self) -> Tensor:
        return self.variance.sqrt()

    def sample(self, sample_shape=()) -> Tensor:
        """A draw of shape sample_shape + batch_shape + event_shape, with no gradient."""
        with no_grad():
            return self.rsample(sample_shape)

    def rsample(self, sample_shape=()) -> Tensor:
        """A reparameterised draw: gradients flow back to the parameters."""
        raise NotImplementedError(f"{type(self).__name__} does not implement rsample")

    def sample_n(self, n: int) -> Tensor:
        return self.sample((n,))

    def log_prob(self, value: Tensor) -> Tensor:
        raise NotImplementedError(f"{type(self).__name__} does not implement log_prob")

    def cdf(self, value: Tensor) -> Tensor:
        raise NotImplementedError(f"{type(self).__name__} does not implement cdf")

    def icdf(self, value: Tensor) -> Tensor:
        raise NotImplementedError(f"{type(self).__name__} does not implement icdf")

    def entropy(self) -> Tensor:
        raise NotImplementedError(f"{type(self).__name__} does not implement entropy")

    def enumerate_support(self, expand: bool = True) -> Tensor:
        raise NotImplementedError(f"{type(self).__name__} does not implement enumerate_support")

    def perplexity(self) -> Tensor:
        return self.entropy().exp()

    # validation of values ------------------------------------------------------------------------------------
    def _validate_sample(self, value) -> None:
        if not isinstance(value, Tensor):
            raise ValueError("The value argument to log_prob must be a Tensor")
        shape, event = tuple(value.shape), tuple(self._event_shape)
        if shape[len(shape) - len(event):] != event or len(shape) < len(event):
            raise ValueError(f"The right-most size of value must match event_shape: {_shape_str(shape)} vs "
                             f"{_shape_str(event)}.")
        expected = tuple(self._batch_shape) + event
        for i, j in zip(reversed(shape), reversed(expected)):
            if i != 1 and j != 1 and i != j:
                raise ValueError(f"Value is not broadcastable with batch_shape+event_shape: {_shape_str(shape)} vs "
                                 f"{_shape_str(expected)}.")
        support = self.support
        if not bool(np.all(backend.to_numpy(support.check(value).data))):
            raise ValueError(f"Expected value argument ({type(value).__name__} of shape {_shape_str(shape)}) to be "
                             f"within the support ({support!r}) of the distribution {self!r}, but found invalid "
                             f"values:\n{value}")

    def __repr__(self) -> str:
        parts = []
        for name in self.arg_constraints:
            if name in self.__dict__ or not isinstance(getattr(type(self), name, None), lazy_property):
                value = getattr(self, name, None)
                if isinstance(value, Tensor):
                    shown = f"{value.item()}" if value.numel() == 1 else f"Size({list(value.shape)})"
                    parts.append(f"{name}: {shown}")
        return f"{type(self).__name__}({', '.join(parts)})"


def nan_like(value: Tensor, shape) -> Tensor:
    """A tensor of NaN of `shape`, in value's dtype (the mean of a Categorical, the mode of a Uniform)."""
    return full(tuple(shape), math.nan, dtype=value.dtype, device=value.device)
