"""`seqlab.special`: torch.special's element-wise functions, with gradients (and second derivatives).

    import seqlab
    x = seqlab.linspace(0.1, 3, 5, requires_grad=True)
    seqlab.special.gammaln(x).sum().backward()      # x.grad is digamma(x)

As torch's: integer and bool inputs give float32 (the default float dtype), float32 and float64 keep theirs.
The functions seqlab already had are the same objects here (erf, expit = sigmoid, logit, xlogy, log_softmax,
softmax, logsumexp, expm1, log1p, round); the rest are SciPy's special functions on NumPy arrays and
cupyx.scipy.special's on CuPy arrays, each with its derivative (`autograd/ops/special.py`).
"""
from __future__ import annotations

import math

import numpy as np

from seqlab import backend
from seqlab.autograd.ops import special as S
from seqlab.autograd.ops.linalg import ArgumentError
from seqlab.autograd.tensor import Tensor
from seqlab.autograd.tensor_indexing import logsumexp
from seqlab.autograd.tensor_math import erf, expm1, log1p, logit, round, xlogy  # noqa: A004 (torch's round)
from seqlab.creation import log_softmax, softmax
from seqlab.creation import sigmoid as expit

__all__ = ["erf", "erfc", "erfinv", "erfcx", "expit", "logit", "xlogy", "xlog1py", "gammaln", "digamma", "psi",
           "polygamma", "multigammaln", "log_softmax", "softmax", "logsumexp", "sinc", "entr", "ndtr", "ndtri",
           "log_ndtr", "i0", "i0e", "i1", "i1e", "expm1", "exp2", "log1p", "round"]


def _floating(name: str, input) -> Tensor:  # noqa: A002 (torch's name)
    """`input` as a float tensor: integers and bools in the default float dtype (float32), as torch's."""
    if not isinstance(input, Tensor):
        if not (hasattr(input, "dtype") and hasattr(input, "shape")):
            raise TypeError(f"special_{name}(): argument 'input' (position 1) must be Tensor, not "
                            f"{type(input).__name__}")
        input = Tensor(input)
    return input._float_input()


def _unary(name: str, op, doc: str):
    def fn(input):  # noqa: A002
        return op.apply(_floating(name, input))

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    return fn


erfc = _unary("erfc", S.Erfc, "1 − erf(x), without the cancellation for large x.")
erfinv = _unary("erfinv", S.Erfinv, "The inverse of erf on (−1, 1): ±inf at ±1, NaN outside.")
erfcx = _unary("erfcx", S.Erfcx, "The scaled complementary error function e^{x²}·erfc(x).")
gammaln = _unary("gammaln", S.Lgamma, "log |Γ(x)| (torch.lgamma); its gradient is digamma(x).")
sinc = _unary("sinc", S.Sinc, "The normalized sinc: sin(πx)/(πx), 1 at 0.")
entr = _unary("entr", S.Entr, "The entropy term −x·log(x): 0 at 0, −inf for x < 0.")
ndtr = _unary("ndtr", S.Ndtr, "The standard normal CDF Φ(x).")
ndtri = _unary("ndtri", S.Ndtri, "The inverse of the standard normal CDF, Φ⁻¹(p): ±inf at 1 and 0, NaN outside.")
log_ndtr = _unary("log_ndtr", S.LogNdtr, "log Φ(x), accurate far into the left tail.")
i0 = _unary("i0", S.I0, "The modified Bessel function of the first kind, order 0.")
i0e = _unary("i0e", S.I0e, "e^{−|x|}·i0(x), which does not overflow.")
i1 = _unary("i1", S.I1, "The modified Bessel function of the first kind, order 1.")
i1e = _unary("i1e", S.I1e, "e^{−|x|}·i1(x), which does not overflow.")
exp2 = _unary("exp2", S.Exp2, "2^x.")


def digamma(input) -> Tensor:  # noqa: A002
    """ψ(x) = d/dx log Γ(x): −inf at 0, NaN at the negative integers (as torch's)."""
    return S.Polygamma.apply(_floating("digamma", input), n=0)


psi = digamma


def polygamma(n: int, input) -> Tensor:  # noqa: A002
    """ψ⁽ⁿ⁾(x), the n-th derivative of digamma (n = 0: digamma itself)."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
        raise TypeError(f"special_polygamma(): argument 'n' (position 1) must be int, not {type(n).__name__}")
    if n < 0:
        raise ArgumentError("polygamma(n, x) does not support negative n.")
    return S.Polygamma.apply(_floating("polygamma", input), n=int(n))


def multigammaln(input, p: int) -> Tensor:  # noqa: A002
    """The log of the multivariate gamma function of dimension p: p(p−1)/4·log π + Σ_{i<p} lgamma(x − i/2)
    (inf where x ≤ (p−1)/2 reaches a pole, as torch 2's)."""
    if isinstance(p, bool) or not isinstance(p, (int, np.integer)):
        raise TypeError(f"special_multigammaln(): argument 'p' (position 2) must be int, not {type(p).__name__}")
    if p < 1:
        raise ArgumentError("p has to be greater than or equal to 1")
    x = _floating("multigammaln", input)
    shifts = backend.xp_of(x.data).arange(p, dtype=x.dtype) * x.dtype.type(-0.5)  # 0, −1/2, ..., −(p−1)/2
    terms = S.Lgamma.apply(x.unsqueeze(-1) + Tensor._from_op(shifts, None))  # (..., p)
    return terms.sum(-1) + p * (p - 1) / 4 * math.log(math.pi)


def xlog1py(input, other) -> Tensor:  # noqa: A002
    """input·log1p(other), 0 where input is 0 (unless other is NaN); either may be a number, as torch's."""
    if not isinstance(input, Tensor) and not isinstance(other, Tensor):
        raise TypeError(f"special_xlog1py(): expected a tensor as input or other, got {type(input).__name__} and "
                        f"{type(other).__name__}")
    if isinstance(input, Tensor):
        x, y = input._float_operands(other, "xlog1py")
    else:
        y, x = other._float_operands(input, "xlog1py")
    xp = backend.xp_of((x if isinstance(x, Tensor) else y).data)
    x, y = (t if isinstance(t, Tensor) else Tensor._from_op(xp.asarray(t), None) for t in (x, y))
    return S.Xlog1py.apply(x, y)
