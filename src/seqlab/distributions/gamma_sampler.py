"""Reparameterised Gamma(α, 1) draws: the draw from NumPy, the gradient dx/dα by implicit differentiation.

A draw x = F⁻¹(u; α) of the CDF F(x; α) = P(α, x) (the regularised lower incomplete gamma) holds
F(x; α) = u fixed as α moves, so (Figurnov, Mohamed and Mnih, "Implicit Reparameterization Gradients",
NeurIPS 2018, eq. 6)

    dx/dα = −(∂F/∂α) / (∂F/∂x),     ∂F/∂x = x^(α−1) e^(−x) / Γ(α)   (the density)

∂F/∂α has no closed form in SciPy; a central difference in α of SciPy's gammainc (or of −gammaincc in the
upper tail, where 1 − F keeps its digits) gives it to about 1e-9 relative in float64. Beta and Dirichlet
draws are normalised Gamma draws, so their rsample gradients follow by the chain rule.
"""
from __future__ import annotations

import numpy as np

from seqlab import backend
from seqlab.autograd.function import Function
from seqlab.distributions.distribution import generator


def _dF_dalpha(alpha: np.ndarray, x: np.ndarray) -> np.ndarray:
    """∂P(α, x)/∂α by a central difference with step 1e-5·α (P's own error is ~1e-15)."""
    import scipy.special as sp

    h = 1e-5 * np.maximum(alpha, 1e-3)
    upper = x > alpha  # there P ≈ 1: differentiate Q = 1 − P, which keeps its relative precision
    with np.errstate(all="ignore"):
        dp = (sp.gammainc(alpha + h, x) - sp.gammainc(alpha - h, x)) / (2 * h)
        dq = (sp.gammaincc(alpha + h, x) - sp.gammaincc(alpha - h, x)) / (2 * h)
    return np.where(upper, -dq, dp)


def standard_gamma_grad(alpha: np.ndarray, x: np.ndarray) -> np.ndarray:
    """dx/dα of a Gamma(α, 1) draw x, held at its CDF value (float64 arrays)."""
    import scipy.special as sp

    with np.errstate(all="ignore"):
        log_density = (alpha - 1) * np.log(x) - x - sp.gammaln(alpha)
        return -_dF_dalpha(alpha, x) / np.exp(log_density)


class StandardGamma(Function):
    """x ~ Gamma(α, 1) element-wise (α of any shape); backward: grad · dx/dα."""

    def forward(self, alpha):
        a = backend.to_numpy(alpha).astype(np.float64)
        tiny = np.finfo(alpha.dtype).tiny
        x = np.maximum(generator().standard_gamma(a), tiny)  # as torch: a draw that underflows is tiny, not 0
        self.save_for_backward(a, x)
        return backend.to_device(x.astype(alpha.dtype), backend.device_of(alpha))

    def backward(self, grad):
        a, x = self.saved
        dx = standard_gamma_grad(a, x)
        return (grad * backend.to_device(dx.astype(grad.dtype), backend.device_of(grad)),)
