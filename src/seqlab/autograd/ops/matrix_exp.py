"""exp(A) of each matrix of a batch (..., n, n), for `seqlab.linalg.matrix_exp`, with its gradient.

Forward: scaling and squaring with the [13/13] Padé approximant (Higham 2005, "The scaling and squaring method
for the matrix exponential revisited", Alg. 2.3): A is divided by 2^s so that ‖A/2^s‖₁ ≤ θ₁₃, then

    exp(B) ≈ (V − U)⁻¹ (V + U),   U = B · Σ_odd b_k B^(k−1),   V = Σ_even b_k B^k,   exp(A) = exp(B)^(2^s)

with s chosen per matrix of the batch. float32 input is computed in float64 and rounded once at the end.

Backward: the gradient of ⟨Ḡ, exp(A)⟩ is the Fréchet derivative of exp at Aᵀ in the direction Ḡ, which is the
top-right block of the exponential of a block matrix (Najfeld & Havel 1995; Higham 2008, Functions of
Matrices, Thm. 3.6):

    exp([[Aᵀ, Ḡ], [0, Aᵀ]]) = [[exp(Aᵀ), L(Aᵀ, Ḡ)], [0, exp(Aᵀ)]],   Ā = L(Aᵀ, Ḡ)

so the backward is this op again on a 2n × 2n matrix, and `backward_graph` writes the same with Tensor ops,
which makes every higher derivative another matrix exponential.
"""
from __future__ import annotations

import numpy as np

from seqlab.autograd.function import Function
from seqlab.autograd.higher_order import constant, graph_input
from seqlab.backend import xp_of

# Higham (2005), Table 2.3: the [13/13] Padé coefficients b_0 .. b_13 and θ₁₃, the largest ‖B‖₁ at which the
# approximant is accurate to double precision
_B13 = (64764752532480000.0, 32382376266240000.0, 7771770303897600.0, 1187353796428800.0, 129060195264000.0,
        10559470521600.0, 670442572800.0, 33522128640.0, 1323241920.0, 40840800.0, 960960.0, 16380.0, 182.0, 1.0)
_THETA13 = 5.371920351148152


def _norm1(a, xp):
    """‖a‖₁ (the largest column sum of |a|) of each matrix: shape (...)."""
    return xp.abs(a).sum(axis=-2).max(axis=-1)


def expm(a):
    """exp(a) for a float array of matrices (..., n, n), by Padé [13/13] with scaling and squaring."""
    xp = xp_of(a)
    if a.size == 0:
        return a.copy()
    work = a.astype(np.float64) if a.dtype != np.float64 else a
    norms = _norm1(work, xp)
    finite = xp.isfinite(norms)
    ratio = xp.where(finite, norms, 0) / _THETA13
    s = xp.where(ratio > 1, xp.ceil(xp.log2(xp.maximum(ratio, 1))), 0).astype(np.int64)  # (...)
    b = work / (2.0 ** s)[..., None, None]
    n = a.shape[-1]
    eye = xp.broadcast_to(xp.eye(n, dtype=np.float64), b.shape)
    b2 = b @ b
    b4 = b2 @ b2
    b6 = b4 @ b2
    c = _B13
    u = b @ (b6 @ (c[13] * b6 + c[11] * b4 + c[9] * b2) + c[7] * b6 + c[5] * b4 + c[3] * b2 + c[1] * eye)
    v = b6 @ (c[12] * b6 + c[10] * b4 + c[8] * b2) + c[6] * b6 + c[4] * b4 + c[2] * b2 + c[0] * eye
    r = xp.linalg.solve(v - u, v + u)
    for k in range(int(s.max()) if s.size else 0):  # each matrix squared s_i times
        r = xp.where((s > k)[..., None, None], r @ r, r)
    return r.astype(a.dtype, copy=False)


def _block(at, g, xp):
    """[[Aᵀ, G], [0, Aᵀ]] (..., 2n, 2n) from arrays."""
    top = xp.concatenate([at, g], axis=-1)
    bottom = xp.concatenate([xp.zeros_like(at), at], axis=-1)
    return xp.concatenate([top, bottom], axis=-2)


class MatrixExp(Function):
    """exp(A) of each matrix; Ā = L(Aᵀ, Ḡ), the top-right block of exp([[Aᵀ, Ḡ], [0, Aᵀ]])."""

    def forward(self, a):
        self.save_for_backward(a)
        return expm(a)

    def backward(self, grad):
        (a,) = self.saved
        xp = xp_of(a)
        if a.size == 0:
            return (xp.zeros_like(a),)
        n = a.shape[-1]
        at = a.swapaxes(-1, -2)
        # L is linear in Ḡ: scale Ḡ to about ‖A‖ so the block's norm (hence its squarings) follows A, not Ḡ
        gn = _norm1(grad, xp)
        scale = xp.where(gn > 0, xp.maximum(_norm1(a, xp), 1) / xp.where(gn > 0, gn, 1), 1)[..., None, None]
        big = expm(_block(at, grad * scale.astype(grad.dtype), xp))
        return ((big[..., :n, n:] / scale).astype(a.dtype, copy=False),)

    def backward_graph(self, g):
        from seqlab.autograd.ops import movement as V

        (a,) = self.saved
        n = a.shape[-1]
        at = graph_input(self, 0, a).mT
        zeros = constant(xp_of(a).zeros_like(a))
        top = V.Cat.apply(at, g, dim=at.ndim - 1)
        bottom = V.Cat.apply(zeros, at, dim=at.ndim - 1)
        big = MatrixExp.apply(V.Cat.apply(top, bottom, dim=at.ndim - 2))
        return (big[..., :n, n:],)
