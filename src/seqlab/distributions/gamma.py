"""The Gamma family: Gamma, Dirichlet and Beta, whose draws are (normalised) Gamma draws. Their rsample is
reparameterised by implicit differentiation of the Gamma CDF (gamma_sampler.py), so gradients reach the
concentrations (and the rate) as in torch.
"""
from __future__ import annotations

from seqlab.autograd.tensor import Tensor
from seqlab.creation import stack, where
from seqlab.distributions import constraints
from seqlab.distributions.distribution import Distribution, broadcast_all
from seqlab.distributions.gamma_sampler import StandardGamma
from seqlab.functional import one_hot
from seqlab.typeinfo import finfo


class Gamma(Distribution):
    """Density rate^α x^(α−1) e^(−rate·x) / Γ(α), α = `concentration`. rsample: implicit reparameterisation."""

    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True
    _expand_params = {"concentration": 0, "rate": 0}

    def __init__(self, concentration, rate, validate_args=None):
        self.concentration, self.rate = broadcast_all(concentration, rate)
        super().__init__(self.concentration.shape, (), validate_args)

    @property
    def mean(self) -> Tensor:
        return self.concentration / self.rate

    @property
    def mode(self) -> Tensor:
        return ((self.concentration - 1) / self.rate).clamp(min=0)

    @property
    def variance(self) -> Tensor:
        return self.concentration / self.rate ** 2

    def rsample(self, sample_shape=()) -> Tensor:
        alpha = self.concentration.expand(tuple(self._extended_shape(sample_shape)))
        x = StandardGamma.apply(alpha) / self.rate
        return x.clamp(min=finfo(x.dtype).tiny)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        a, r = self.concentration, self.rate
        return a.xlogy(r) + (a - 1).xlogy(value) - r * value - a.lgamma()

    def entropy(self) -> Tensor:
        a = self.concentration
        return a - self.rate.log() + a.lgamma() + (1 - a) * a.digamma()


class Dirichlet(Distribution):
    """Probability vectors with density Γ(Σα)/ΠΓ(α_i) · Π x_i^(α_i − 1): event_shape (K,)."""

    arg_constraints = {"concentration": constraints.independent(constraints.positive, 1)}
    support = constraints.simplex
    has_rsample = True
    _expand_params = {"concentration": 1}

    def __init__(self, concentration: Tensor, validate_args=None):
        if concentration.ndim < 1:
            raise ValueError("`concentration` parameter must be at least one-dimensional.")
        self.concentration = concentration
        super().__init__(concentration.shape[:-1], concentration.shape[-1:], validate_args)

    @property
    def mean(self) -> Tensor:
        return self.concentration / self.concentration.sum(-1, keepdim=True)

    @property
    def mode(self) -> Tensor:
        c1 = (self.concentration - 1).clamp(min=0.0)
        mode = c1 / c1.sum(-1, keepdim=True)
        # every α < 1: the density peaks at the corner of the largest α
        corner = one_hot(self.concentration.argmax(-1), self.concentration.shape[-1]).to(mode.dtype)
        return where((self.concentration < 1).all(-1, keepdim=True), corner, mode)

    @property
    def variance(self) -> Tensor:
        c0 = self.concentration.sum(-1, keepdim=True)
        return self.concentration * (c0 - self.concentration) / (c0 ** 2 * (c0 + 1))

    def rsample(self, sample_shape=()) -> Tensor:
        alpha = self.concentration.expand(tuple(self._extended_shape(sample_shape)))
        g = StandardGamma.apply(alpha)
        tiny = finfo(g.dtype).tiny
        return (g / g.sum(-1, keepdim=True)).clamp(min=tiny, max=1 - finfo(g.dtype).eps)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        c = self.concentration
        return (c - 1).xlogy(value).sum(-1) + c.sum(-1).lgamma() - c.lgamma().sum(-1)

    def entropy(self) -> Tensor:
        c = self.concentration
        k, a0 = c.shape[-1], c.sum(-1)
        return c.lgamma().sum(-1) - a0.lgamma() - (k - a0) * a0.digamma() - ((c - 1) * c.digamma()).sum(-1)


class Beta(Distribution):
    """Density x^(a−1) (1 − x)^(b−1) / B(a, b), a = `concentration1`, b = `concentration0`; rsample = X/(X + Y),
    X ~ Gamma(a), Y ~ Gamma(b)."""

    arg_constraints = {"concentration1": constraints.positive, "concentration0": constraints.positive}
    support = constraints.unit_interval
    has_rsample = True
    _expand_params = {"concentration1": 0, "concentration0": 0}

    def __init__(self, concentration1, concentration0, validate_args=None):
        self.concentration1, self.concentration0 = broadcast_all(concentration1, concentration0)
        super().__init__(self.concentration1.shape, (), validate_args)

    @property
    def mean(self) -> Tensor:
        return self.concentration1 / (self.concentration1 + self.concentration0)

    @property
    def mode(self) -> Tensor:
        a, b = self.concentration1, self.concentration0
        return Dirichlet(stack([a, b], -1), validate_args=False).mode[..., 0]

    @property
    def variance(self) -> Tensor:
        a, b = self.concentration1, self.concentration0
        total = a + b
        return a * b / (total ** 2 * (total + 1))

    def rsample(self, sample_shape=()) -> Tensor:
        shape = tuple(self._extended_shape(sample_shape))
        alpha = stack([self.concentration1.expand(shape), self.concentration0.expand(shape)], -1)  # (..., 2)
        g = StandardGamma.apply(alpha)
        x = g[..., 0] / g.sum(-1)
        return x.clamp(min=finfo(x.dtype).tiny, max=1 - finfo(x.dtype).eps)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        a, b = self.concentration1, self.concentration0
        return (a - 1).xlogy(value) + (b - 1).xlogy(1 - value) + (a + b).lgamma() - a.lgamma() - b.lgamma()

    def entropy(self) -> Tensor:
        a, b = self.concentration1, self.concentration0
        log_beta = a.lgamma() + b.lgamma() - (a + b).lgamma()
        return log_beta - (a - 1) * a.digamma() - (b - 1) * b.digamma() + (a + b - 2) * (a + b).digamma()
