"""MultivariateNormal, Independent and MixtureSameFamily: distributions over vectors built from others."""
from __future__ import annotations

import math

import numpy as np

from seqlab import linalg
from seqlab.autograd.tensor import Tensor
from seqlab.distributions import constraints
from seqlab.distributions.discrete import Categorical
from seqlab.distributions.distribution import (Distribution, _shape_str, from_numpy, generator, lazy_property,
                                               sum_rightmost)


def batch_mahalanobis(L: Tensor, x: Tensor) -> Tensor:
    """xᵀ (L Lᵀ)⁻¹ x = |L⁻¹ x|² for L of shape (..., n, n) and x of shape (..., n), batch dims broadcast.
    Only L's lower triangle is read (a triangular solve), so only it gets a gradient, as torch's."""
    y = linalg.solve(L.tril(), x.unsqueeze(-1)).squeeze(-1)  # (..., n)
    return (y ** 2).sum(-1)


class MultivariateNormal(Distribution):
    """N(loc, Σ) over vectors of size n, Σ given as `covariance_matrix`, `precision_matrix` (Σ⁻¹) or
    `scale_tril` (L with Σ = L Lᵀ, lower triangular, positive diagonal); exactly one of them.
    rsample = loc + L ε, ε ~ N(0, I)."""

    arg_constraints = {"loc": constraints.real_vector, "covariance_matrix": constraints.positive_definite,
                       "precision_matrix": constraints.positive_definite, "scale_tril": constraints.lower_cholesky}
    support = constraints.real_vector
    has_rsample = True
    _expand_params = {"loc": 1, "covariance_matrix": 2, "precision_matrix": 2, "scale_tril": 2}

    def __init__(self, loc: Tensor, covariance_matrix=None, precision_matrix=None, scale_tril=None,
                 validate_args=None):
        if loc.ndim < 1:
            raise ValueError("loc must be at least one-dimensional.")
        given = [m for m in (covariance_matrix, precision_matrix, scale_tril) if m is not None]
        if len(given) != 1:
            raise ValueError("Exactly one of covariance_matrix or precision_matrix or scale_tril may be specified.")
        name = ("scale_tril" if scale_tril is not None else
                "covariance_matrix" if covariance_matrix is not None else "precision_matrix")
        matrix = given[0]
        if matrix.ndim < 2:
            raise ValueError(f"{name} matrix must be at least two-dimensional, with optional leading batch "
                             f"dimensions")
        batch_shape = np.broadcast_shapes(tuple(matrix.shape[:-2]), tuple(loc.shape[:-1]))
        n = loc.shape[-1]
        setattr(self, name, matrix.expand(batch_shape + (n, n)))
        self.loc = loc.expand(batch_shape + (n,))
        super().__init__(batch_shape, (n,), validate_args)
        if scale_tril is not None:
            self._unbroadcasted_scale_tril = scale_tril
        elif covariance_matrix is not None:
            self._unbroadcasted_scale_tril = linalg.cholesky(covariance_matrix)
        else:  # Σ = P⁻¹
            self._unbroadcasted_scale_tril = linalg.cholesky(linalg.inv(precision_matrix))

    @lazy_property
    def scale_tril(self) -> Tensor:
        L = self._unbroadcasted_scale_tril
        return L.expand(tuple(self.batch_shape) + tuple(L.shape[-2:]))

    @lazy_property
    def covariance_matrix(self) -> Tensor:
        L = self._unbroadcasted_scale_tril
        return (L @ L.mT).expand(tuple(self.batch_shape) + tuple(L.shape[-2:]))

    @lazy_property
    def precision_matrix(self) -> Tensor:
        L = self._unbroadcasted_scale_tril
        return linalg.inv(L @ L.mT).expand(tuple(self.batch_shape) + tuple(L.shape[-2:]))

    @property
    def mean(self) -> Tensor:
        return self.loc

    @property
    def mode(self) -> Tensor:
        return self.loc

    @property
    def variance(self) -> Tensor:
        return (self._unbroadcasted_scale_tril ** 2).sum(-1).expand(tuple(self.batch_shape + self.event_shape))

    def rsample(self, sample_shape=()) -> Tensor:
        eps = from_numpy(generator().standard_normal(tuple(self._extended_shape(sample_shape))), self.loc)
        return self.loc + (self._unbroadcasted_scale_tril @ eps.unsqueeze(-1)).squeeze(-1)

    def _half_log_det(self) -> Tensor:
        return self._unbroadcasted_scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        n = self.event_shape[0]
        m = batch_mahalanobis(self._unbroadcasted_scale_tril, value - self.loc)
        return -0.5 * (n * math.log(2 * math.pi) + m) - self._half_log_det()

    def entropy(self) -> Tensor:
        n = self.event_shape[0]
        h = 0.5 * n * (1.0 + math.log(2 * math.pi)) + self._half_log_det()
        return h.expand(tuple(self.batch_shape)) if self.batch_shape else h


class Independent(Distribution):
    """Treats the `reinterpreted_batch_ndims` rightmost batch dims of `base_distribution` as event dims:
    log_prob sums over them (a diagonal Normal over vectors is Independent(Normal(loc, scale), 1))."""

    arg_constraints: dict = {}

    def __init__(self, base_distribution: Distribution, reinterpreted_batch_ndims: int, validate_args=None):
        base_batch = tuple(base_distribution.batch_shape)
        if reinterpreted_batch_ndims > len(base_batch):
            raise ValueError(f"Expected reinterpreted_batch_ndims <= len(base_distribution.batch_shape), actual "
                             f"{reinterpreted_batch_ndims} vs {len(base_batch)}")
        self.base_dist, self.reinterpreted_batch_ndims = base_distribution, reinterpreted_batch_ndims
        split = len(base_batch) - reinterpreted_batch_ndims
        super().__init__(base_batch[:split], base_batch[split:] + tuple(base_distribution.event_shape),
                         validate_args)

    def expand(self, batch_shape, _instance=None):
        base = self.base_dist.expand(tuple(batch_shape) + tuple(self.event_shape[:self.reinterpreted_batch_ndims]))
        return self._expanded(batch_shape, base_dist=base, reinterpreted_batch_ndims=self.reinterpreted_batch_ndims)

    @property
    def has_rsample(self) -> bool:
        return self.base_dist.has_rsample

    @property
    def has_enumerate_support(self) -> bool:
        return False if self.reinterpreted_batch_ndims > 0 else self.base_dist.has_enumerate_support

    @property
    def support(self):
        s = self.base_dist.support
        return constraints.independent(s, self.reinterpreted_batch_ndims) if self.reinterpreted_batch_ndims else s

    @property
    def mean(self) -> Tensor:
        return self.base_dist.mean

    @property
    def mode(self) -> Tensor:
        return self.base_dist.mode

    @property
    def variance(self) -> Tensor:
        return self.base_dist.variance

    def sample(self, sample_shape=()) -> Tensor:
        return self.base_dist.sample(sample_shape)

    def rsample(self, sample_shape=()) -> Tensor:
        return self.base_dist.rsample(sample_shape)

    def log_prob(self, value: Tensor) -> Tensor:
        return sum_rightmost(self.base_dist.log_prob(value), self.reinterpreted_batch_ndims)

    def entropy(self) -> Tensor:
        return sum_rightmost(self.base_dist.entropy(), self.reinterpreted_batch_ndims)

    def enumerate_support(self, expand: bool = True) -> Tensor:
        if self.reinterpreted_batch_ndims > 0:
            raise NotImplementedError("Enumeration over cartesian product is not implemented")
        return self.base_dist.enumerate_support(expand=expand)

    def __repr__(self) -> str:
        return f"Independent({self.base_dist!r}, {self.reinterpreted_batch_ndims})"


class MixtureSameFamily(Distribution):
    """A mixture of K components of one family: `mixture_distribution` a Categorical over the K (batch_shape
    B), `component_distribution` of batch_shape B + (K,). log p(x) = logsumexp_k(log π_k + log p_k(x))."""

    arg_constraints: dict = {}
    has_rsample = False

    def __init__(self, mixture_distribution: Categorical, component_distribution: Distribution,
                 validate_args=None):
        if not isinstance(mixture_distribution, Categorical):
            raise ValueError("The Mixture distribution needs to be an instance of torch.distributions.Categorical")
        if not isinstance(component_distribution, Distribution):
            raise ValueError("The Component distribution need to be an instance of torch.distributions.Distribution")
        mix_batch, comp_batch = tuple(mixture_distribution.batch_shape), tuple(component_distribution.batch_shape)
        if len(comp_batch) < 1 or comp_batch[-1] != mixture_distribution._num_events:
            raise ValueError(f"`mixture_distribution component` ({mixture_distribution._num_events}) does not equal "
                             f"`component_distribution.batch_shape[-1]` ({comp_batch[-1] if comp_batch else None})")
        for a, b in zip(reversed(mix_batch), reversed(comp_batch[:-1])):
            if a != 1 and b != 1 and a != b:
                raise ValueError(f"`mixture_distribution.batch_shape` ({_shape_str(mix_batch)}) is not compatible "
                                 f"with `component_distribution.batch_shape`({_shape_str(comp_batch)})")
        self._mixture_distribution, self._component_distribution = mixture_distribution, component_distribution
        self._event_ndims = len(component_distribution.event_shape)
        super().__init__(comp_batch[:-1], component_distribution.event_shape, validate_args)

    @property
    def mixture_distribution(self) -> Categorical:
        return self._mixture_distribution

    @property
    def component_distribution(self) -> Distribution:
        return self._component_distribution

    @property
    def support(self):
        return self._component_distribution.support

    def _pad_mixture(self, x: Tensor) -> Tensor:
        """Mixture weights (..., K) → (..., K, 1, ..., 1), one 1 per event dim."""
        return x.reshape(tuple(x.shape) + (1,) * self._event_ndims)

    @property
    def mean(self) -> Tensor:
        probs = self._pad_mixture(self.mixture_distribution.probs)
        return (probs * self.component_distribution.mean).sum(-1 - self._event_ndims)

    @property
    def variance(self) -> Tensor:
        # law of total variance: E[Var(X | k)] + Var(E[X | k])
        probs = self._pad_mixture(self.mixture_distribution.probs)
        dim = -1 - self._event_ndims
        comp_mean = self.component_distribution.mean
        mean_cond_var = (probs * self.component_distribution.variance).sum(dim)
        var_cond_mean = (probs * (comp_mean - self.mean.unsqueeze(dim)) ** 2).sum(dim)
        return mean_cond_var + var_cond_mean

    def cdf(self, x: Tensor) -> Tensor:
        x = x.unsqueeze(-1 - self._event_ndims)
        return (self.component_distribution.cdf(x) * self.mixture_distribution.probs).sum(-1)

    def log_prob(self, x: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(x)
        x = x.unsqueeze(-1 - self._event_ndims)  # (..., 1, event)
        log_prob_x = self.component_distribution.log_prob(x)  # (..., K)
        log_mix = self.mixture_distribution.logits.log_softmax(-1)  # (B, K)
        return (log_prob_x + log_mix).logsumexp(-1)

    def sample(self, sample_shape=()) -> Tensor:
        sample_shape = (sample_shape,) if isinstance(sample_shape, int) else tuple(sample_shape)
        k = self.mixture_distribution.sample(sample_shape)  # sample_shape + B
        comp = self.component_distribution.sample(sample_shape)  # sample_shape + B + (K,) + event
        index = k.reshape(tuple(k.shape) + (1,) * (1 + self._event_ndims))
        index = index.expand(tuple(comp.shape[:comp.ndim - self._event_ndims - 1]) + (1,) +
                             tuple(self.event_shape))
        return comp.gather(comp.ndim - self._event_ndims - 1, index).squeeze(comp.ndim - self._event_ndims - 1)

    def __repr__(self) -> str:
        return (f"MixtureSameFamily(\n  {self.mixture_distribution!r},\n  {self.component_distribution!r})")
