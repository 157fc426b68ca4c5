"""Constraints: the sets a distribution's parameters and values live in, as torch.distributions.constraints.

    from seqlab.distributions import constraints
    constraints.positive.check(seqlab.tensor([1.0, -2.0]))   # tensor([True, False])

`check(value)` returns a bool tensor of value's shape less the constraint's `event_dim` rightmost dims (a
simplex is checked per vector). `is_discrete` and `event_dim` say what kind of set it is.
"""
from __future__ import annotations

import numpy as np

from seqlab import backend
from seqlab.autograd.tensor import Tensor

__all__ = ["Constraint", "boolean", "dependent", "dependent_property", "greater_than", "greater_than_eq",
           "half_open_interval", "independent", "integer_interval", "interval", "is_dependent", "less_than",
           "lower_cholesky", "lower_triangular", "multinomial", "nonnegative", "nonnegative_integer", "one_hot",
           "positive", "positive_definite", "positive_integer", "positive_semidefinite", "real", "real_vector",
           "simplex", "square", "symmetric", "unit_interval"]


def _array(value):
    """A tensor's (or number's) values as a NumPy array, for checking: no gradient, no graph."""
    if isinstance(value, Tensor):
        return backend.to_numpy(value.data)
    return np.asarray(value)


def _result(mask) -> Tensor:
    return Tensor(np.asarray(mask, dtype=bool))


class Constraint:
    """A set of values. Subclasses define `_check(array) -> bool array`."""

    is_discrete = False
    event_dim = 0

    def check(self, value) -> Tensor:
        return _result(self._check(_array(value)))

    def _check(self, x):  # pragma: no cover - abstract
        raise NotImplementedError

    def __repr__(self) -> str:
        return type(self).__name__.lstrip("_") + "()"


class _Dependent(Constraint):
    """A placeholder whose set depends on other parameters (Uniform's low and high): never checked itself."""

    def __init__(self, *, is_discrete: bool = False, event_dim: int = 0):
        self.is_discrete, self.event_dim = is_discrete, event_dim

    def __call__(self, *, is_discrete: bool = False, event_dim: int = 0) -> "_Dependent":
        return _Dependent(is_discrete=is_discrete, event_dim=event_dim)

    def check(self, value):
        raise ValueError("Cannot determine validity of dependent constraint")


def is_dependent(constraint) -> bool:
    return isinstance(constraint, _Dependent)


class dependent_property(property, _Dependent):
    """A property that is also a dependent constraint: `support` of distributions whose set depends on their
    parameters (read on an instance: the actual constraint; on the class: a dependent placeholder)."""

    def __init__(self, fn=None, *, is_discrete: bool = False, event_dim: int = 0):
        property.__init__(self, fn)
        _Dependent.__init__(self, is_discrete=is_discrete, event_dim=event_dim)

    def __call__(self, fn):
        return dependent_property(fn, is_discrete=self.is_discrete, event_dim=self.event_dim)


class _Real(Constraint):
    def _check(self, x):
        return x == x  # everything but NaN


class _Boolean(Constraint):
    is_discrete = True

    def _check(self, x):
        return (x == 0) | (x == 1)


class _OneHot(Constraint):
    is_discrete, event_dim = True, 1

    def _check(self, x):
        return ((x == 0) | (x == 1)).all(-1) & (x.sum(-1) == 1)


class _Bounded(Constraint):
    """A set given by bounds (numbers or tensors, broadcast against the value)."""

    _fields: tuple = ()

    def __repr__(self) -> str:
        args = ", ".join(f"{f}={getattr(self, f)}" for f in self._fields)
        return f"{type(self).__name__.lstrip('_')}({args})"


class _IntegerInterval(_Bounded):
    is_discrete, _fields = True, ("lower_bound", "upper_bound")

    def __init__(self, lower_bound, upper_bound):
        self.lower_bound, self.upper_bound = lower_bound, upper_bound

    def _check(self, x):
        return (x % 1 == 0) & (_array(self.lower_bound) <= x) & (x <= _array(self.upper_bound))


class _IntegerGreaterThanEq(_Bounded):
    is_discrete, _fields = True, ("lower_bound",)

    def __init__(self, lower_bound):
        self.lower_bound = lower_bound

    def _check(self, x):
        return (x % 1 == 0) & (x >= _array(self.lower_bound))


class _GreaterThan(_Bounded):
    _fields = ("lower_bound",)

    def __init__(self, lower_bound):
        self.lower_bound = lower_bound

    def _check(self, x):
        return x > _array(self.lower_bound)


class _GreaterThanEq(_GreaterThan):
    def _check(self, x):
        return x >= _array(self.lower_bound)


class _LessThan(_Bounded):
    _fields = ("upper_bound",)

    def __init__(self, upper_bound):
        self.upper_bound = upper_bound

    def _check(self, x):
        return x < _array(self.upper_bound)


class _Interval(_Bounded):
    _fields = ("lower_bound", "upper_bound")

    def __init__(self, lower_bound, upper_bound):
        self.lower_bound, self.upper_bound = lower_bound, upper_bound

    def _check(self, x):
        return (_array(self.lower_bound) <= x) & (x <= _array(self.upper_bound))


class _HalfOpenInterval(_Interval):
    def _check(self, x):
        return (_array(self.lower_bound) <= x) & (x < _array(self.upper_bound))


class _Simplex(Constraint):
    """Non-negative vectors summing to 1 (to within 1e-6, as torch)."""

    event_dim = 1

    def _check(self, x):
        return (x >= 0).all(-1) & (np.abs(x.sum(-1) - 1) < 1e-6)


class _Multinomial(Constraint):
    """Non-negative integer count vectors summing to at most `upper_bound`."""

    is_discrete, event_dim = True, 1

    def __init__(self, upper_bound):
        self.upper_bound = upper_bound

    def _check(self, x):
        return (x >= 0).all(-1) & (x.sum(-1) <= _array(self.upper_bound))


class _Independent(Constraint):
    """`base` on each element, reduced with `all` over the `reinterpreted_batch_ndims` rightmost dims."""

    def __init__(self, base_constraint: Constraint, reinterpreted_batch_ndims: int):
        self.base_constraint, self.reinterpreted_batch_ndims = base_constraint, reinterpreted_batch_ndims
        self.is_discrete = base_constraint.is_discrete
        self.event_dim = base_constraint.event_dim + reinterpreted_batch_ndims

    def _check(self, x):
        ok = np.asarray(self.base_constraint._check(x))
        n = self.reinterpreted_batch_ndims
        return ok.reshape(ok.shape[:ok.ndim - n] + (-1,)).all(-1) if n else ok

    def __repr__(self) -> str:
        return f"IndependentConstraint({self.base_constraint!r}, {self.reinterpreted_batch_ndims})"


class _Square(Constraint):
    event_dim = 2

    def _check(self, x):
        return np.full(x.shape[:-2], x.shape[-1] == x.shape[-2], dtype=bool)


class _Symmetric(_Square):
    def _check(self, x):
        if x.shape[-1] != x.shape[-2]:
            return np.zeros(x.shape[:-2], dtype=bool)
        return np.isclose(x, np.swapaxes(x, -1, -2), atol=1e-6).all((-2, -1))


class _LowerTriangular(Constraint):
    event_dim = 2

    def _check(self, x):
        return (np.tril(x) == x).reshape(x.shape[:-2] + (-1,)).all(-1)


class _LowerCholesky(Constraint):
    """Lower-triangular with a positive diagonal."""

    event_dim = 2

    def _check(self, x):
        tril = (np.tril(x) == x).reshape(x.shape[:-2] + (-1,)).all(-1)
        return tril & (np.diagonal(x, axis1=-2, axis2=-1) > 0).all(-1)


class _PositiveDefinite(_Symmetric):
    def _check(self, x):
        sym = _Symmetric._check(self, x)
        if x.shape[-1] != x.shape[-2]:
            return sym
        return sym & (np.linalg.eigvalsh(x) > 0).all(-1)


class _PositiveSemidefinite(_Symmetric):
    def _check(self, x):
        sym = _Symmetric._check(self, x)
        if x.shape[-1] != x.shape[-2]:
            return sym
        return sym & (np.linalg.eigvalsh(x) >= 0).all(-1)


dependent = _Dependent()
real = _Real()
real_vector = _Independent(real, 1)
boolean = _Boolean()
one_hot = _OneHot()
nonnegative_integer = _IntegerGreaterThanEq(0)
positive_integer = _IntegerGreaterThanEq(1)
integer_interval = _IntegerInterval
positive = _GreaterThan(0.0)
nonnegative = _GreaterThanEq(0.0)
greater_than = _GreaterThan
greater_than_eq = _GreaterThanEq
less_than = _LessThan
unit_interval = _Interval(0.0, 1.0)
interval = _Interval
half_open_interval = _HalfOpenInterval
simplex = _Simplex()
multinomial = _Multinomial
independent = _Independent
square = _Square()
symmetric = _Symmetric()
lower_triangular = _LowerTriangular()
lower_cholesky = _LowerCholesky()
positive_definite = _PositiveDefinite()
positive_semidefinite = _PositiveSemidefinite()
