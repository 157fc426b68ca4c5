"""Continuous scalar distributions: Normal, LogNormal, Uniform, Exponential, Laplace (Gamma, Beta and Dirichlet
are in gamma.py). Each rsample is reparameterised (a deterministic function of the parameters and
parameter-free noise), so gradients reach the parameters.
"""
from __future__ import annotations

import math

import numpy as np

from seqlab.autograd.tensor import Tensor
from seqlab.distributions import constraints
from seqlab.distributions.distribution import Distribution, broadcast_all, from_numpy, generator, nan_like
from seqlab.typeinfo import finfo

_LOG_SQRT_2PI = math.log(math.sqrt(2 * math.pi))


def _standard_normal(shape, like: Tensor) -> Tensor:
    return from_numpy(generator().standard_normal(tuple(shape)), like)


def _uniform(shape, like: Tensor) -> Tensor:
    """U[0, 1) in like's dtype (rounded down below 1: float32 rounding must not reach 1)."""
    u = generator().random(tuple(shape)).astype(like.dtype)
    return from_numpy(np.minimum(u, np.nextafter(like.dtype.type(1), like.dtype.type(0))), like)


class _LocationScale(Distribution):
    """What Normal and Laplace share: a real location `loc` (the mean and the mode) and a positive `scale`,
    broadcast together; reparameterised draws."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True
    _expand_params = {"loc": 0, "scale": 0}

    def __init__(self, loc, scale, validate_args=None):
        self.loc, self.scale = broadcast_all(loc, scale)
        super().__init__(self.loc.shape, (), validate_args)

    @property
    def mean(self) -> Tensor:
        return self.loc

    @property
    def mode(self) -> Tensor:
        return self.loc


class Normal(_LocationScale):
    """N(loc, scale²). rsample = loc + scale·ε, ε ~ N(0, 1)."""

    @property
    def stddev(self) -> Tensor:
        return self.scale

    @property
    def variance(self) -> Tensor:
        return self.scale ** 2

    def rsample(self, sample_shape=()) -> Tensor:
        eps = _standard_normal(self._extended_shape(sample_shape), self.loc)
        return self.loc + eps * self.scale

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        # log N(x; μ, σ²) = −(x − μ)²/(2σ²) − log σ − log √(2π)
        return -((value - self.loc) ** 2) / (2 * self.variance) - self.scale.log() - _LOG_SQRT_2PI

    def cdf(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return 0.5 * (1 + ((value - self.loc) / (self.scale * math.sqrt(2))).erf())

    def icdf(self, value: Tensor) -> Tensor:
        return self.loc + self.scale * (2 * value - 1).erfinv() * math.sqrt(2)

    def entropy(self) -> Tensor:
        return 0.5 + 0.5 * math.log(2 * math.pi) + self.scale.log()


class LogNormal(Distribution):
    """exp(X), X ~ Normal(loc, scale): `loc` and `scale` are the log's mean and standard deviation."""

    arg_constraints = Normal.arg_constraints
    support = constraints.positive
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None):
        self.base_dist = Normal(loc, scale, validate_args=validate_args)
        super().__init__(self.base_dist.batch_shape, (), validate_args=False)
        if validate_args is not None:
            self._validate_args = validate_args

    def expand(self, batch_shape, _instance=None):
        return self._expanded(batch_shape, base_dist=self.base_dist.expand(batch_shape))

    @property
    def loc(self) -> Tensor:
        return self.base_dist.loc

    @property
    def scale(self) -> Tensor:
        return self.base_dist.scale

    @property
    def mean(self) -> Tensor:
        return (self.loc + self.scale ** 2 / 2).exp()

    @property
    def mode(self) -> Tensor:
        return (self.loc - self.scale ** 2).exp()

    @property
    def variance(self) -> Tensor:
        s2 = self.scale ** 2
        return s2.expm1() * (2 * self.loc + s2).exp()

    def rsample(self, sample_shape=()) -> Tensor:
        return self.base_dist.rsample(sample_shape).exp()

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        y = value.log()  # change of variables: p(x) = p_N(log x) / x
        return self.base_dist.log_prob(y) - y

    def cdf(self, value: Tensor) -> Tensor:
        return self.base_dist.cdf(value.log())

    def icdf(self, value: Tensor) -> Tensor:
        return self.base_dist.icdf(value).exp()

    def entropy(self) -> Tensor:
        return self.base_dist.entropy() + self.loc

    def __repr__(self) -> str:
        return repr(self.base_dist).replace("Normal", "LogNormal", 1)


class Uniform(Distribution):
    """Uniform on [low, high). rsample = low + (high − low)·u, u ~ U[0, 1)."""

    arg_constraints = {"low": constraints.dependent(is_discrete=False, event_dim=0),
                       "high": constraints.dependent(is_discrete=False, event_dim=0)}
    has_rsample = True
    _expand_params = {"low": 0, "high": 0}

    def __init__(self, low, high, validate_args=None):
        self.low, self.high = broadcast_all(low, high)
        super().__init__(self.low.shape, (), validate_args)
        if self._validate_args and not bool((self.low < self.high).all().item()):
            raise ValueError("Uniform is not defined when low>= high")

    @property
    def support(self):
        return constraints.interval(self.low, self.high)

    @property
    def mean(self) -> Tensor:
        return (self.high + self.low) / 2

    @property
    def mode(self) -> Tensor:
        return nan_like(self.high, self.batch_shape)

    @property
    def stddev(self) -> Tensor:
        return (self.high - self.low) / 12 ** 0.5

    @property
    def variance(self) -> Tensor:
        return (self.high - self.low) ** 2 / 12

    def rsample(self, sample_shape=()) -> Tensor:
        u = _uniform(self._extended_shape(sample_shape), self.low)
        return self.low + u * (self.high - self.low)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        inside = ((self.low <= value) & (self.high > value)).to(self.low.dtype)
        return inside.log() - (self.high - self.low).log()

    def cdf(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return ((value - self.low) / (self.high - self.low)).clamp(min=0, max=1)

    def icdf(self, value: Tensor) -> Tensor:
        return value * (self.high - self.low) + self.low

    def entropy(self) -> Tensor:
        return (self.high - self.low).log()


class Exponential(Distribution):
    """Density rate·e^(−rate·x) on x ≥ 0. rsample = E / rate, E ~ Exp(1)."""

    arg_constraints = {"rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True
    _expand_params = {"rate": 0}

    def __init__(self, rate, validate_args=None):
        (self.rate,) = broadcast_all(rate)
        super().__init__(self.rate.shape, (), validate_args)

    @property
    def mean(self) -> Tensor:
        return self.rate.reciprocal()

    @property
    def mode(self) -> Tensor:
        return self.rate * 0

    @property
    def stddev(self) -> Tensor:
        return self.rate.reciprocal()

    @property
    def variance(self) -> Tensor:
        return self.rate ** -2

    def rsample(self, sample_shape=()) -> Tensor:
        shape = tuple(self._extended_shape(sample_shape))
        return from_numpy(generator().standard_exponential(shape), self.rate) / self.rate

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return self.rate.log() - self.rate * value

    def cdf(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return 1 - (-self.rate * value).exp()

    def icdf(self, value: Tensor) -> Tensor:
        return -(-value).log1p() / self.rate

    def entropy(self) -> Tensor:
        return 1.0 - self.rate.log()


class Laplace(_LocationScale):
    """Density e^(−|x − loc|/scale) / (2·scale). rsample inverts the CDF at u ~ U(−1, 1)."""

    @property
    def stddev(self) -> Tensor:
        return math.sqrt(2) * self.scale

    @property
    def variance(self) -> Tensor:
        return 2 * self.scale ** 2

    def rsample(self, sample_shape=()) -> Tensor:
        eps = finfo(self.loc.dtype).eps
        u = _uniform(self._extended_shape(sample_shape), self.loc) * (2 - eps) - (1 - eps)  # in (−1, 1)
        return self.loc - self.scale * u.sign() * (-u.abs()).log1p()

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return -(2 * self.scale).log() - (value - self.loc).abs() / self.scale

    def cdf(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        z = value - self.loc
        return 0.5 - 0.5 * z.sign() * (-z.abs() / self.scale).expm1()

    def icdf(self, value: Tensor) -> Tensor:
        t = value - 0.5
        return self.loc - self.scale * t.sign() * (-2 * t.abs()).log1p()

    def entropy(self) -> Tensor:
        return 1 + (2 * self.scale).log()
