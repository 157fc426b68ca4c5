"""`seqlab.distributions`: torch.distributions' probability distributions, with its API.

    from seqlab.distributions import Categorical, Normal, kl_divergence
    d = Categorical(logits=logits)               # (B, V) next-token logits
    token = d.sample()                           # (B,), from seqlab's generator (seqlab.manual_seed)
    loss = -d.log_prob(token)                    # REINFORCE-style score
    z = Normal(mu, sigma).rsample()              # reparameterised: gradients reach mu and sigma
    kl = kl_divergence(Normal(mu, sigma), Normal(0.0, 1.0))   # the VAE's KL term

Values, entropies and KL divergences match torch's on the same parameters; draws come from seqlab's
generator, so they repeat under `seqlab.manual_seed` but differ from torch's.
"""
from seqlab.distributions import constraints
from seqlab.distributions.continuous import Exponential, Laplace, LogNormal, Normal, Uniform
from seqlab.distributions.gamma import Beta, Dirichlet, Gamma
from seqlab.distributions.discrete import Bernoulli, Binomial, Categorical, Multinomial, OneHotCategorical, Poisson
from seqlab.distributions.distribution import Distribution
from seqlab.distributions.kl import kl_divergence, register_kl
from seqlab.distributions.multivariate import Independent, MixtureSameFamily, MultivariateNormal

__all__ = ["Bernoulli", "Beta", "Binomial", "Categorical", "Dirichlet", "Distribution", "Exponential", "Gamma",
           "Independent", "Laplace", "LogNormal", "MixtureSameFamily", "Multinomial", "MultivariateNormal", "Normal",
           "OneHotCategorical", "Poisson", "Uniform", "constraints", "kl_divergence", "register_kl"]
