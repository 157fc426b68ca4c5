"""KL(p ‖ q) = E_p[log p(x) − log q(x)] in closed form, for pairs registered with `register_kl`.

    @register_kl(Normal, Normal)
    def _kl_normal_normal(p, q): ...

`kl_divergence(p, q)` picks the most specific registered pair for (type(p), type(q)) along both classes' MROs;
an unregistered pair raises NotImplementedError, as torch's.
"""
from __future__ import annotations

import math

from seqlab.creation import where
from seqlab.distributions.continuous import Exponential, Laplace, LogNormal, Normal, Uniform
from seqlab.distributions.discrete import Bernoulli, Categorical, OneHotCategorical, Poisson
from seqlab.distributions.distribution import Distribution, sum_rightmost
from seqlab.distributions.gamma import Beta, Dirichlet, Gamma
from seqlab.distributions.multivariate import Independent, MultivariateNormal, batch_mahalanobis
from seqlab.functional import softplus
from seqlab import linalg

_KL_REGISTRY: dict = {}
_KL_CACHE: dict = {}


def register_kl(type_p: type, type_q: type):
    """Decorator registering `fn(p, q)` as KL(p ‖ q) for p of type_p and q of type_q (and their subclasses)."""
    if not (isinstance(type_p, type) and issubclass(type_p, Distribution)):
        raise TypeError(f"Expected type_p to be a Distribution subclass but got {type_p}")
    if not (isinstance(type_q, type) and issubclass(type_q, Distribution)):
        raise TypeError(f"Expected type_q to be a Distribution subclass but got {type_q}")

    def decorator(fn):
        _KL_REGISTRY[type_p, type_q] = fn
        _KL_CACHE.clear()
        return fn

    return decorator


def _dispatch(type_p: type, type_q: type):
    """The registered function whose (p, q) types are nearest to the given ones (sum of MRO distances)."""
    best, best_rank = None, None
    for (tp, tq), fn in _KL_REGISTRY.items():
        if issubclass(type_p, tp) and issubclass(type_q, tq):
            rank = type_p.__mro__.index(tp) + type_q.__mro__.index(tq)
            if best_rank is None or rank < best_rank:
                best, best_rank = fn, rank
    return best


def kl_divergence(p: Distribution, q: Distribution):
    """KL(p ‖ q), of shape batch_shape (the event dims are summed)."""
    key = (type(p), type(q))
    if key not in _KL_CACHE:
        _KL_CACHE[key] = _dispatch(*key)
    fn = _KL_CACHE[key]
    if fn is None:
        raise NotImplementedError(f"No KL(p || q) is implemented for p type {type(p).__name__} and q type "
                                  f"{type(q).__name__}")
    return fn(p, q)


def _infinite_where(mask, value):
    return where(mask, math.inf, value)


@register_kl(Normal, Normal)
def _kl_normal_normal(p, q):
    var_ratio = (p.scale / q.scale) ** 2
    t1 = ((p.loc - q.loc) / q.scale) ** 2
    return 0.5 * (var_ratio + t1 - 1 - var_ratio.log())


@register_kl(LogNormal, LogNormal)
def _kl_lognormal_lognormal(p, q):
    return _kl_normal_normal(p.base_dist, q.base_dist)


@register_kl(Categorical, Categorical)
def _kl_categorical_categorical(p, q):
    t = p.probs * (p.logits - q.logits)
    shape = tuple(t.shape)
    t = where((q.probs == 0).expand(shape), math.inf, t)  # p puts mass where q has none
    t = where((p.probs == 0).expand(shape), 0.0, t)  # 0 · log 0 = 0
    return t.sum(-1)


@register_kl(OneHotCategorical, OneHotCategorical)
def _kl_onehot_onehot(p, q):
    return _kl_categorical_categorical(p._categorical, q._categorical)


@register_kl(Bernoulli, Bernoulli)
def _kl_bernoulli_bernoulli(p, q):
    # p log(p/q) + (1 − p) log((1 − p)/(1 − q)), with log p = −softplus(−l) and log(1 − p) = −softplus(l)
    t1 = p.probs * (softplus(-q.logits) - softplus(-p.logits))
    t1 = where(p.probs == 0, 0.0, _infinite_where(q.probs == 0, t1))
    t2 = (1 - p.probs) * (softplus(q.logits) - softplus(p.logits))
    t2 = where(p.probs == 1, 0.0, _infinite_where(q.probs == 1, t2))
    return t1 + t2


@register_kl(Uniform, Uniform)
def _kl_uniform_uniform(p, q):
    result = ((q.high - q.low) / (p.high - p.low)).log()
    return _infinite_where((q.low > p.low) | (q.high < p.high), result)


@register_kl(MultivariateNormal, MultivariateNormal)
def _kl_mvn_mvn(p, q):
    if p.event_shape != q.event_shape:
        raise ValueError("KL-divergence between two Multivariate Normals with different event shapes cannot be "
                         "computed")
    n = p.event_shape[0]
    half_log_det = q._half_log_det() - p._half_log_det()  # ½ log(|Σq| / |Σp|)
    Lq, Lp = q._unbroadcasted_scale_tril, p._unbroadcasted_scale_tril
    # tr(Σq⁻¹ Σp) = ‖Lq⁻¹ Lp‖²_F
    trace = (linalg.solve(Lq.tril(), Lp) ** 2).sum((-2, -1))
    mahalanobis = batch_mahalanobis(Lq, q.loc - p.loc)
    return half_log_det + 0.5 * (trace + mahalanobis - n)


@register_kl(Independent, Independent)
def _kl_independent_independent(p, q):
    if p.reinterpreted_batch_ndims != q.reinterpreted_batch_ndims:
        raise NotImplementedError("KL between Independents with different reinterpreted_batch_ndims")
    return sum_rightmost(kl_divergence(p.base_dist, q.base_dist), p.reinterpreted_batch_ndims)


@register_kl(Beta, Beta)
def _kl_beta_beta(p, q):
    a1, b1, a2, b2 = p.concentration1, p.concentration0, q.concentration1, q.concentration0
    s1, s2 = a1 + b1, a2 + b2
    t1 = a2.lgamma() + b2.lgamma() + s1.lgamma()
    t2 = a1.lgamma() + b1.lgamma() + s2.lgamma()
    return t1 - t2 + (a1 - a2) * a1.digamma() + (b1 - b2) * b1.digamma() + (s2 - s1) * s1.digamma()


@register_kl(Gamma, Gamma)
def _kl_gamma_gamma(p, q):
    ap, rp, aq, rq = p.concentration, p.rate, q.concentration, q.rate
    t1 = aq * (rp / rq).log()
    t2 = aq.lgamma() - ap.lgamma()
    t3 = (ap - aq) * ap.digamma()
    t4 = (rq - rp) * (ap / rp)
    return t1 + t2 + t3 + t4


@register_kl(Dirichlet, Dirichlet)
def _kl_dirichlet_dirichlet(p, q):
    cp, cq = p.concentration, q.concentration
    sp, sq = cp.sum(-1), cq.sum(-1)
    t1 = sp.lgamma() - sq.lgamma()
    t2 = (cp.lgamma() - cq.lgamma()).sum(-1)
    t4 = cp.digamma() - sp.digamma().unsqueeze(-1)
    return t1 - t2 + ((cp - cq) * t4).sum(-1)


@register_kl(Exponential, Exponential)
def _kl_exponential_exponential(p, q):
    ratio = q.rate / p.rate
    return -ratio.log() + ratio - 1


@register_kl(Laplace, Laplace)
def _kl_laplace_laplace(p, q):
    scale_ratio = p.scale / q.scale
    d = (p.loc - q.loc).abs()
    return -scale_ratio.log() + d / q.scale + scale_ratio * (-d / p.scale).exp() - 1


@register_kl(Poisson, Poisson)
def _kl_poisson_poisson(p, q):
    return p.rate * (p.rate.log() - q.rate.log()) - (p.rate - q.rate)
