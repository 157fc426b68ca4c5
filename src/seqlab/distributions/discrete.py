"""Discrete distributions: Categorical, OneHotCategorical, Bernoulli, Binomial, Multinomial, Poisson.

Each takes `probs` or `logits` (not both) where torch does; the other is derived on first read. Categorical
logits are normalised (logits − logsumexp(logits)), probs divided by their sum, as torch's.
"""
from __future__ import annotations

import numpy as np

from seqlab.autograd.tensor import Tensor
from seqlab.creation import arange, eye, where
from seqlab.distributions import constraints
from seqlab.distributions.distribution import (Distribution, broadcast_all, from_numpy, generator, lazy_property,
                                               logits_to_probs, nan_like, probs_to_logits)
from seqlab.functional import one_hot, softplus
from seqlab.sampling import multinomial
from seqlab.typeinfo import Size, finfo


def _one_of(probs, logits) -> None:
    if (probs is None) == (logits is None):
        raise ValueError("Either `probs` or `logits` must be specified, but not both.")


def _np(t: Tensor) -> np.ndarray:
    from seqlab import backend

    return backend.to_numpy(t.data)


class Categorical(Distribution):
    """One of K categories (0 .. K−1) per batch element; `probs`/`logits` of shape batch_shape + (K,)."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.independent(constraints.real, 1)}
    has_enumerate_support = True
    _expand_params = {"probs": 1, "logits": 1}

    def __init__(self, probs: Tensor | None = None, logits: Tensor | None = None, validate_args=None):
        _one_of(probs, logits)
        if probs is not None:
            if probs.ndim < 1:
                raise ValueError("`probs` parameter must be at least one-dimensional.")
            self.probs = probs / probs.sum(-1, keepdim=True)
        else:
            if logits.ndim < 1:
                raise ValueError("`logits` parameter must be at least one-dimensional.")
            self.logits = logits - logits.logsumexp(-1, keepdim=True)
        self._param = self.probs if probs is not None else self.logits
        self._num_events = self._param.shape[-1]
        super().__init__(self._param.shape[:-1], (), validate_args)

    def expand(self, batch_shape, _instance=None):
        new = super().expand(batch_shape, _instance)
        new._param = new.probs if "probs" in new.__dict__ else new.logits
        return new

    @lazy_property
    def logits(self) -> Tensor:
        return probs_to_logits(self.probs)

    @lazy_property
    def probs(self) -> Tensor:
        return logits_to_probs(self.logits)

    @property
    def param_shape(self) -> Size:
        return Size(self._param.shape)

    @property
    def support(self):
        return constraints.integer_interval(0, self._num_events - 1)

    @property
    def mean(self) -> Tensor:
        return nan_like(self._param, self.batch_shape)

    @property
    def mode(self) -> Tensor:
        return self.probs.argmax(-1)

    @property
    def variance(self) -> Tensor:
        return nan_like(self._param, self.batch_shape)

    def sample(self, sample_shape=()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        n = int(np.prod(shape[:len(shape) - len(self.batch_shape)], dtype=np.int64))
        rows = self.probs.detach().reshape(-1, self._num_events)  # (B, K)
        draws = multinomial(rows, n, True, generator=generator())  # (B, n)
        return draws.T.reshape(tuple(shape))  # sample_shape + batch_shape

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        value = value.long().unsqueeze(-1)  # (..., 1)
        shape = np.broadcast_shapes(tuple(value.shape[:-1]), tuple(self.logits.shape[:-1]))
        value = value.expand(shape + (1,))
        logits = self.logits.expand(shape + (self._num_events,))
        return logits.gather(-1, value).squeeze(-1)

    def entropy(self) -> Tensor:
        logits = self.logits.clamp(min=finfo(self.logits.dtype).min)  # −inf logits (probs 0) add 0, not NaN
        return -(logits * self.probs).sum(-1)

    def enumerate_support(self, expand: bool = True) -> Tensor:
        values = arange(self._num_events).reshape((-1,) + (1,) * len(self.batch_shape))
        return values.expand((-1,) + tuple(self.batch_shape)) if expand else values


class OneHotCategorical(Distribution):
    """A Categorical whose draws are one-hot vectors: event_shape (K,)."""

    arg_constraints = Categorical.arg_constraints
    support = constraints.one_hot
    has_enumerate_support = True

    def __init__(self, probs: Tensor | None = None, logits: Tensor | None = None, validate_args=None):
        self._categorical = Categorical(probs, logits, validate_args=validate_args)
        super().__init__(self._categorical.batch_shape, self._categorical.param_shape[-1:], validate_args=False)
        if validate_args is not None:
            self._validate_args = validate_args

    def expand(self, batch_shape, _instance=None):
        return self._expanded(batch_shape, _categorical=self._categorical.expand(batch_shape))

    @property
    def probs(self) -> Tensor:
        return self._categorical.probs

    @property
    def logits(self) -> Tensor:
        return self._categorical.logits

    @property
    def mean(self) -> Tensor:
        return self.probs

    @property
    def mode(self) -> Tensor:
        return one_hot(self.probs.argmax(-1), self.event_shape[-1]).to(self.probs.dtype)

    @property
    def variance(self) -> Tensor:
        return self.probs * (1 - self.probs)

    def sample(self, sample_shape=()) -> Tensor:
        return one_hot(self._categorical.sample(sample_shape), self.event_shape[-1]).to(self.probs.dtype)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return self._categorical.log_prob(value.argmax(-1))

    def entropy(self) -> Tensor:
        return self._categorical.entropy()

    def enumerate_support(self, expand: bool = True) -> Tensor:
        n = self.event_shape[0]
        values = eye(n, dtype=self.probs.dtype).reshape((n,) + (1,) * len(self.batch_shape) + (n,))
        return values.expand((n,) + tuple(self.batch_shape) + (n,)) if expand else values

    def __repr__(self) -> str:
        return repr(self._categorical).replace("Categorical", "OneHotCategorical", 1)


class _BinaryParams(Distribution):
    """Shared by Bernoulli and Binomial: a success probability given as `probs` or `logits`."""

    _expand_params = {"probs": 0, "logits": 0, "total_count": 0}

    @lazy_property
    def logits(self) -> Tensor:
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self) -> Tensor:
        return logits_to_probs(self.logits, is_binary=True)

    @property
    def _param(self) -> Tensor:
        return self.__dict__["probs"] if "probs" in self.__dict__ else self.__dict__["logits"]

    @property
    def param_shape(self) -> Size:
        return Size(self._param.shape)


class Bernoulli(_BinaryParams):
    """1 with probability `probs` (= sigmoid(`logits`)), else 0; draws in the parameter's float dtype."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.boolean
    has_enumerate_support = True

    def __init__(self, probs=None, logits=None, validate_args=None):
        _one_of(probs, logits)
        if probs is not None:
            (self.probs,) = broadcast_all(probs)
        else:
            (self.logits,) = broadcast_all(logits)
        super().__init__(self._param.shape, (), validate_args)

    @property
    def mean(self) -> Tensor:
        return self.probs

    @property
    def mode(self) -> Tensor:
        mode = (self.probs >= 0.5).to(self.probs.dtype)
        return where(self.probs == 0.5, nan_like(self.probs, self.probs.shape), mode)

    @property
    def variance(self) -> Tensor:
        return self.probs * (1 - self.probs)

    def sample(self, sample_shape=()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        p = np.broadcast_to(_np(self.probs), shape)
        return from_numpy(generator().random(shape) < p, self._param)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        # log p = −softplus(−l), log(1 − p) = −softplus(l): exact for logits of any size
        return -(value * softplus(-logits) + (1 - value) * softplus(logits))

    def entropy(self) -> Tensor:
        logits, probs = broadcast_all(self.logits, self.probs)
        return probs * softplus(-logits) + (1 - probs) * softplus(logits)

    def enumerate_support(self, expand: bool = True) -> Tensor:
        values = arange(2, dtype=self._param.dtype).reshape((-1,) + (1,) * len(self.batch_shape))
        return values.expand((-1,) + tuple(self.batch_shape)) if expand else values


class Binomial(_BinaryParams):
    """The number of successes in `total_count` Bernoulli(probs) trials."""

    arg_constraints = {"total_count": constraints.nonnegative_integer, "probs": constraints.unit_interval,
                       "logits": constraints.real}
    has_enumerate_support = True

    def __init__(self, total_count=1, probs=None, logits=None, validate_args=None):
        _one_of(probs, logits)
        if probs is not None:
            self.total_count, self.probs = broadcast_all(total_count, probs)
            self.total_count = self.total_count.to(self.probs.dtype)
        else:
            self.total_count, self.logits = broadcast_all(total_count, logits)
            self.total_count = self.total_count.to(self.logits.dtype)
        super().__init__(self._param.shape, (), validate_args)

    @property
    def support(self):
        return constraints.integer_interval(0, self.total_count)

    @property
    def mean(self) -> Tensor:
        return self.total_count * self.probs

    @property
    def mode(self) -> Tensor:
        return ((self.total_count + 1) * self.probs).floor().clamp(max=self.total_count)

    @property
    def variance(self) -> Tensor:
        return self.total_count * self.probs * (1 - self.probs)

    def sample(self, sample_shape=()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        n = np.broadcast_to(_np(self.total_count).astype(np.int64), shape)
        p = np.broadcast_to(_np(self.probs).astype(np.float64), shape)
        return from_numpy(generator().binomial(n, p), self._param)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        n, k, logits = self.total_count, value, self.logits
        # log C(n, k) + k·l − n·softplus(l)   (p = sigmoid(l): p^k (1−p)^(n−k) = e^{k l} / (1 + e^l)^n)
        log_choose = (n + 1).lgamma() - (k + 1).lgamma() - (n - k + 1).lgamma()
        return log_choose + k * logits - n * softplus(logits)

    def entropy(self) -> Tensor:
        values = self.enumerate_support(False)  # (N + 1, 1, ...)
        log_prob = self.log_prob(values)
        return -(log_prob.exp() * log_prob).sum(0)

    def enumerate_support(self, expand: bool = True) -> Tensor:
        counts = _np(self.total_count)
        n = int(counts.max()) if counts.size else 0
        if counts.size and not np.all(counts == n):
            raise NotImplementedError("Inhomogeneous total count not supported by `enumerate_support`.")
        values = arange(1 + n, dtype=self._param.dtype).reshape((-1,) + (1,) * len(self.batch_shape))
        return values.expand((-1,) + tuple(self.batch_shape)) if expand else values


class Multinomial(Distribution):
    """Counts of each of K categories in `total_count` Categorical(probs) draws: event_shape (K,)."""

    arg_constraints = Categorical.arg_constraints

    def __init__(self, total_count: int = 1, probs=None, logits=None, validate_args=None):
        if not isinstance(total_count, (int, np.integer)):
            raise NotImplementedError("inhomogeneous total_count is not supported")
        self.total_count = int(total_count)
        self._categorical = Categorical(probs=probs, logits=logits, validate_args=validate_args)
        super().__init__(self._categorical.batch_shape, self._categorical.param_shape[-1:], validate_args=False)
        if validate_args is not None:
            self._validate_args = validate_args

    def expand(self, batch_shape, _instance=None):
        return self._expanded(batch_shape, total_count=self.total_count,
                              _categorical=self._categorical.expand(batch_shape))

    @property
    def support(self):
        return constraints.multinomial(self.total_count)

    @property
    def probs(self) -> Tensor:
        return self._categorical.probs

    @property
    def logits(self) -> Tensor:
        return self._categorical.logits

    @property
    def mean(self) -> Tensor:
        return self.probs * self.total_count

    @property
    def variance(self) -> Tensor:
        return self.total_count * self.probs * (1 - self.probs)

    def sample(self, sample_shape=()) -> Tensor:
        shape = self._extended_shape(sample_shape)  # sample_shape + batch_shape + (K,)
        if self.total_count == 0:
            return from_numpy(np.zeros(shape), self.probs)
        outer = tuple(shape[:len(shape) - len(self.batch_shape) - 1])
        draws = self._categorical.sample((self.total_count,) + outer)  # (N,) + sample_shape + batch_shape
        return one_hot(draws, self.event_shape[0]).sum(0).to(self.probs.dtype)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        # a category of probability 0 counted 0 times contributes 0·log 0 = 0, not NaN
        logits = where((value == 0) & (logits == -np.inf), 0.0, logits)
        log_factorial_n = (value.sum(-1) + 1).lgamma()
        log_factorial_xs = (value + 1).lgamma().sum(-1)
        return log_factorial_n - log_factorial_xs + (logits * value).sum(-1)

    def entropy(self) -> Tensor:
        # H = N·H(cat) − log N! + Σ_i E[log X_i!], X_i ~ Binomial(N, p_i)
        n = self.total_count
        binomial = Binomial(n, probs=self.probs, validate_args=False)
        ks = binomial.enumerate_support(False)[1:]  # (N, 1, ..., 1)
        expected = (binomial.log_prob(ks).exp() * (ks + 1).lgamma()).sum(0).sum(-1)
        return n * self._categorical.entropy() - float(np.log(np.arange(1, n + 1)).sum()) + expected

    def __repr__(self) -> str:
        return repr(self._categorical).replace("Categorical", "Multinomial", 1)


class Poisson(Distribution):
    """Counts with mean `rate`; draws in the rate's float dtype."""

    arg_constraints = {"rate": constraints.nonnegative}
    support = constraints.nonnegative_integer
    _expand_params = {"rate": 0}

    def __init__(self, rate, validate_args=None):
        (self.rate,) = broadcast_all(rate)
        super().__init__(self.rate.shape, (), validate_args)

    @property
    def mean(self) -> Tensor:
        return self.rate

    @property
    def mode(self) -> Tensor:
        return self.rate.floor()

    @property
    def variance(self) -> Tensor:
        return self.rate

    def sample(self, sample_shape=()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        return from_numpy(generator().poisson(np.broadcast_to(_np(self.rate).astype(np.float64), shape)), self.rate)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        rate, value = broadcast_all(self.rate, value)
        return value.xlogy(rate) - rate - (value + 1).lgamma()
