"""Activations beyond the chapter's, with torch.nn.functional's names, arguments and defaults.

`seqlab.functional` re-exports every public name here, so ``F.elu(x)`` works as in torch. Each function
is composed of differentiable Tensor ops, so autograd derives its gradient (its second one too); ELU's and
CELU's eˣ − 1 is the `Expm1` op of ops/pointwise.py, for precision (exp(x) − 1 cancels for small x). Where a function has a kink, the composition
is arranged so that the gradient at the kink is torch's (comments say how). `inplace=` is accepted for
torch compatibility and ignored: a new tensor is returned, as `F.relu` does.
"""
from __future__ import annotations

import warnings

import numpy as np

from seqlab import random as _random
from seqlab.autograd.ops import fused as Fu
from seqlab.autograd.ops.pointwise import Expm1
from seqlab.autograd.ops.reduce import normalize_dim
from seqlab.autograd.tensor import Tensor
from seqlab.backend import xp_of
from seqlab.functional import _softmax_input, _t, leaky_relu, logsigmoid, sigmoid, softmax, where

__all__ = ["elu", "selu", "celu", "softplus", "softsign", "hardtanh", "relu6", "hardsigmoid", "hardswish", "mish",
           "softmin", "glu", "tanhshrink", "softshrink", "hardshrink", "rrelu", "gumbel_softmax", "prelu",
           "threshold"]

# SELU's constants (Klambauer et al. 2017, eq. 14): the fixed point of mean 0 and variance 1
SELU_ALPHA = 1.6732632423543772848170429916717
SELU_SCALE = 1.0507009873554804934193349852946


def _negative_part(x: Tensor) -> Tensor:
    """x with its positive entries set to 0: the argument of the exponential branches, which for a large
    positive x would overflow to inf in the branch `where` does not take (and its gradient, 0 · inf, would
    be NaN). x = 0 is kept, gradient and all, so the exponential branch supplies the gradient there."""
    return x.masked_fill(x.data > 0, 0.0)


def elu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:  # noqa: A002 (torch's names)
    """ELU(x) = x for x > 0, α(eˣ − 1) otherwise (Clevert et al. 2016); the gradient at 0 is α, as torch's."""
    x = _t(input)
    return where(x.data > 0, x, Expm1.apply(_negative_part(x)) * alpha)


def selu(input: Tensor, inplace: bool = False) -> Tensor:  # noqa: A002
    """SELU(x) = scale · ELU(x, α) with SELU's α ≈ 1.6733 and scale ≈ 1.0507."""
    return elu(input, SELU_ALPHA) * SELU_SCALE


def celu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:  # noqa: A002
    """CELU(x) = max(0, x) + min(0, α(e^(x/α) − 1)) (Barron 2017): ELU made continuously differentiable."""
    if alpha == 0:
        raise ValueError("celu: alpha cannot be 0 (CELU divides x by it)")
    x = _t(input)
    return where(x.data > 0, x, Expm1.apply(_negative_part(x) / alpha) * alpha)


def softplus(input: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:  # noqa: A002
    """(1/β) log(1 + e^(βx)), and x itself where βx > threshold (torch's switch, gradient 1 there).

    log(1 + eᶻ) = −log σ(−z): the stable log-sigmoid gives it for any z, exact for very negative z too.
    """
    x = _t(input)
    z = x * beta
    return where(z.data > threshold, x, -logsigmoid(-z) / beta)


def softsign(input: Tensor) -> Tensor:  # noqa: A002
    """x / (1 + |x|)."""
    x = _t(input)
    return x / (x.abs() + 1)


def hardtanh(input: Tensor, min_val: float = -1.0, max_val: float = 1.0,  # noqa: A002
             inplace: bool = False) -> Tensor:
    """x clamped to [min_val, max_val]. As torch's, the gradient is 0 at the bounds themselves (`clamp` passes
    it there), so the bounds are filled in with `masked_fill`, which passes none."""
    if min_val > max_val:
        raise ValueError(f"min_val cannot be greater than max_val, got min_val={min_val} and max_val={max_val}")
    x = _t(input)
    return x.masked_fill(x.data <= min_val, min_val).masked_fill(x.data >= max_val, max_val)


def threshold(input: Tensor, threshold: float, value: float, inplace: bool = False) -> Tensor:  # noqa: A002
    """x where x > threshold, else `value`; the gradient passes where x > threshold only, as torch's."""
    x = _t(input)
    return x.masked_fill(x.data <= threshold, value)  # NaN is not <= threshold: it stays NaN, as torch's


def relu6(input: Tensor, inplace: bool = False) -> Tensor:  # noqa: A002
    """min(max(0, x), 6) = hardtanh(x, 0, 6): gradient 0 at 0 and at 6, as torch's."""
    return hardtanh(input, 0.0, 6.0)


def hardsigmoid(input: Tensor, inplace: bool = False) -> Tensor:  # noqa: A002
    """relu6(x + 3) / 6: 0 for x ≤ −3, 1 for x ≥ 3, linear between (MobileNetV3's σ)."""
    return relu6(_t(input) + 3.0) / 6.0


def hardswish(input: Tensor, inplace: bool = False) -> Tensor:  # noqa: A002
    """x · hardsigmoid(x) (Howard et al. 2019, "Searching for MobileNetV3")."""
    x = _t(input)
    return x * hardsigmoid(x)


def mish(input: Tensor, inplace: bool = False) -> Tensor:  # noqa: A002
    """x · tanh(softplus(x)) (Misra 2019), softplus without torch's threshold switch, as torch's mish."""
    x = _t(input)
    return x * (-logsigmoid(-x)).tanh()


def softmin(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype=None) -> Tensor:  # noqa: A002
    """softmax(−x) along `dim`; `dim=None` is torch's deprecated implicit choice (with its warning), and
    `dtype` casts the input first, as `softmax`'s."""
    x, d = _softmax_input("softmin", input, dim, dtype, _stacklevel)
    return Fu.Softmax.apply(-x, dim=d)


def glu(input: Tensor, dim: int = -1) -> Tensor:  # noqa: A002
    """The gated linear unit (Dauphin et al. 2017): a · σ(b), a and b the two halves of x along `dim`."""
    x = _t(input)
    if x.ndim == 0:
        raise ValueError("glu does not support scalars because halving size must be even")
    d = normalize_dim(dim, x.ndim)
    if x.shape[d] % 2:
        raise ValueError(f"Halving dimension must be even, but dimension {d} is size {x.shape[d]} "
                         f"(input shape {x.shape})")
    a, b = x.chunk(2, d)                                                     # (..., n/2, ...) each
    return a * sigmoid(b)


def tanhshrink(input: Tensor) -> Tensor:  # noqa: A002
    """x − tanh(x)."""
    x = _t(input)
    return x - x.tanh()


def softshrink(input: Tensor, lambd: float = 0.5) -> Tensor:  # noqa: A002
    """x − λ for x > λ, x + λ for x < −λ, else 0: that is x − clamp(x, −λ, λ), whose gradient is 0 on
    [−λ, λ] bounds included (clamp passes it there), as torch's."""
    if lambd < 0:
        raise ValueError(f"softshrink: lambd must be >= 0, got {lambd}")
    x = _t(input)
    return x - x.clamp(-lambd, lambd)


def hardshrink(input: Tensor, lambd: float = 0.5) -> Tensor:  # noqa: A002
    """x where |x| > λ, else 0 (and gradient 0 on [−λ, λ], bounds included, as torch's)."""
    x = _t(input)
    return x.masked_fill((x.data >= -lambd) & (x.data <= lambd), 0.0)


def rrelu(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False,  # noqa: A002
          inplace: bool = False, *, generator: np.random.Generator | None = None) -> Tensor:
    """Randomized leaky ReLU (Xu et al. 2015): in training each x ≤ 0 gets its own slope drawn from
    U(lower, upper) (seqlab's generator, or `generator`); in eval the slope is (lower + upper) / 2."""
    if lower > upper:
        raise ValueError(f"Lower bound should be less than or equal to the upper bound, got lower={lower} "
                         f"and upper={upper}")
    x = _t(input)
    if not training:
        return leaky_relu(x, (lower + upper) / 2)
    u = _random.uniform_like(xp_of(x.data), x.shape, x.dtype, generator)
    slope = Tensor((lower + (upper - lower) * u).astype(x.dtype))
    return where(x.data > 0, x, x * slope)  # at 0 the slope is the gradient, as torch's


def gumbel_softmax(logits: Tensor, tau: float = 1.0, hard: bool = False, eps: float = 1e-10, dim: int = -1, *,
                   generator: np.random.Generator | None = None) -> Tensor:
    """A sample of the Gumbel-softmax distribution (Jang et al. 2017; Maddison et al. 2017):
    softmax((logits + g) / τ) along `dim`, g ~ Gumbel(0, 1) drawn from seqlab's generator (or `generator`).

    `hard=True` returns the one-hot of the sample's argmax, differentiated as the soft sample
    (straight-through: y_hard − y_soft.detach() + y_soft, as torch). `eps` is deprecated and unused, as torch's.
    """
    if eps != 1e-10:
        warnings.warn("`eps` parameter is deprecated and has no effect.", UserWarning, stacklevel=2)
    x = _t(logits)
    xp = xp_of(x.data)
    u = _random.uniform_like(xp, x.shape, np.float64, generator)            # [0, 1), drawn in float64
    gumbels = -xp.log(-xp.log1p(-u))                                         # −log E, E = −log(1 − u) ~ Exp(1)
    y_soft = softmax((x + Tensor(gumbels.astype(x.dtype))) / tau, dim)
    if not hard:
        return y_soft
    d = normalize_dim(dim, x.ndim)
    index = xp.expand_dims(xp.argmax(y_soft.data, axis=d), d)               # (..., 1, ...)
    positions = xp.arange(x.shape[d]).reshape(tuple(-1 if i == d else 1 for i in range(x.ndim)))
    y_hard = Tensor((positions == index).astype(x.dtype))                   # one 1 per slice, at the argmax
    return y_hard - y_soft.detach() + y_soft


def prelu(input: Tensor, weight: Tensor) -> Tensor:  # noqa: A002
    """x where x > 0, else weight · x, with one learned slope per channel (dim 1) or one for all
    (He et al. 2015); an input of fewer than 2 dims has one channel. The gradient at 0 is the slope's."""
    x, w = _t(input), _t(weight)
    if w.ndim > 1:
        raise ValueError(f"prelu: Expected `weight` to be a scalar or 1D tensor, but got: ndim = {w.ndim}")
    channels = x.shape[1] if x.ndim >= 2 else 1
    n = int(np.prod(w.shape))
    if n not in (1, channels):
        raise ValueError(f"Mismatch of parameter numbers and input channel size. Found parameter numbers = {n} "
                         f"and channel size = {channels} (input shape {x.shape}).")
    w = w.reshape(()) if n == 1 else w.reshape((channels,) + (1,) * (x.ndim - 2))  # (C, 1, ...): along dim 1
    return where(x.data > 0, x, w * x)

