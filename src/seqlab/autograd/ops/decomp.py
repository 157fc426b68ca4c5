"""Matrix factorizations with gradients, on batches (..., m, n): Cholesky, QR, SVD and the symmetric
eigendecomposition, for `seqlab.linalg`. Several outputs (Q and R, U, S and Vh, ...) leave a Function as one
packed array (`ops/linalg.pack`) that seqlab.linalg splits with slices, so each output has its own gradient and
an unused one contributes zeros.

The backward formulas, real matrices, with Ā the gradient of the input and X̄ of an output X:

    Cholesky  A = L Lᵀ          Φ(X) = tril(X) with its diagonal halved;  S = L⁻ᵀ Φ(Lᵀ L̄) L⁻¹,  Ā = (S + Sᵀ)/2
                                (Murray 2016, "Differentiation of the Cholesky decomposition", eq. 10)
    QR        A = Q R, m ≥ n    M = R R̄ᵀ − Q̄ᵀ Q;  Ā = (Q̄ + Q·copyltu(M)) R⁻ᵀ,  copyltu(M) = tril(M) + tril(M, −1)ᵀ
              m < n             A = [X | Y], R = [U | V]:  Ȳ = Q V̄, and X̄ by the square case with Q̄ + Y V̄ᵀ
                                (Walter & Lehmann 2018; Liao et al. 2019, "Differentiable programming tensor networks")
    SVD       A = U S Vᵀ        F_ij = 1/(s_j² − s_i²) (0 on the diagonal), k = min(m, n) columns:
                                Ā = U [diag(S̄) + (F∘(UᵀŪ − ŪᵀU)) S + S (F∘(VᵀV̄ − V̄ᵀV))] Vᵀ
                                    + (I − UUᵀ) Ū S⁻¹ Vᵀ + U S⁻¹ V̄ᵀ (I − VVᵀ)      (Townsend 2016)
    eigh      A = V Λ Vᵀ        F_ij = 1/(λ_j − λ_i) (0 on the diagonal):  G = V (diag(Λ̄) + F∘(VᵀV̄)) Vᵀ,
                                Ā = (G + Gᵀ)/2 (symmetrized, as torch's)

As torch's, the singular vectors and eigenvectors are defined up to sign, so only a loss that does not depend on
that choice has a well-defined gradient, and repeated singular values / eigenvalues make F infinite. Only the
Cholesky factor has a backward_graph (create_graph=True); the others refuse it, naming the op.
"""
from __future__ import annotations

import numpy as np

from seqlab.autograd.function import Function
from seqlab.autograd.higher_order import graph_output
from seqlab.autograd.ops.linalg import Inv, checked_or_nan, mT, pack, unpack
from seqlab.backend import xp_of


def _eye_mask(n: int, xp):
    return xp.eye(n, dtype=bool)


def _antisymmetric_inverse_gaps(values):
    """F_ij = 1/(v_j − v_i) for i ≠ j, 0 on the diagonal (inf where two values are equal, as torch's)."""
    xp = xp_of(values)
    gaps = values[..., None, :] - values[..., :, None]
    diag = _eye_mask(values.shape[-1], xp)
    with np.errstate(divide="ignore"):
        return xp.where(diag, values.dtype.type(0), 1 / xp.where(diag, values.dtype.type(1), gaps))


class Cholesky(Function):
    """The lower factor L of A = L Lᵀ (A's lower triangle read, as torch's). `singular` (cholesky_ex): the
    matrices that are not positive-definite come out NaN instead of raising."""

    def forward(self, a, name: str = "linalg.cholesky", singular=None):
        out = checked_or_nan(xp_of(a).linalg.cholesky, a, name, "potrf", "potrf", singular)
        self.save_for_backward(out)
        return out

    def backward(self, grad):
        (low,) = self.saved
        xp = xp_of(low)
        phi = xp.tril(mT(low) @ grad)
        phi = phi - 0.5 * phi * _eye_mask(low.shape[-1], xp)  # Φ: the diagonal halved
        low_inv = xp.linalg.inv(low)
        s = mT(low_inv) @ phi @ low_inv
        return (0.5 * (s + mT(s)),)

    def backward_graph(self, g):
        low = graph_output(self, self.saved[0])
        phi = (low.mT @ g).tril()
        phi = phi - 0.5 * phi.diagonal(0, -2, -1).diag_embed()
        low_inv = Inv.apply(low)
        s = low_inv.mT @ phi @ low_inv
        return (0.5 * (s + s.mT),)


def qr_shapes(m: int, n: int, mode: str) -> list:
    """The shapes of (Q, R) of an m × n matrix in `mode` ('r': Q is empty, as torch's)."""
    k = min(m, n)
    if mode == "complete":
        return [(m, m), (m, n)]
    if mode == "r":
        return [(0,), (k, n)]
    return [(m, k), (k, n)]


class QR(Function):
    """Q and R of A = QR (LAPACK's signs, as torch's), packed; mode 'reduced', 'complete' or 'r'."""

    def forward(self, a, mode: str = "reduced"):
        xp = xp_of(a)
        batch = a.shape[:-2]
        self.mode, self.shape = mode, a.shape[-2:]
        if mode == "r":
            r = xp.linalg.qr(a, mode="r")
            q = xp.zeros(batch + (0,), dtype=a.dtype)
        else:
            q, r = xp.linalg.qr(a, mode=mode)
        self.save_for_backward(a, q, r)
        return pack(q, r, batch=batch)

    def backward(self, grad):
        a, q, r = self.saved
        m, n = self.shape
        if self.mode == "r":
            raise RuntimeError("The derivative of linalg.qr depends on Q, which is not computed when mode='r'. "
                               "Please use linalg.qr(A, mode='reduced') if you are going to differentiate through "
                               "linalg.qr.")
        if self.mode == "complete" and m > n:
            raise RuntimeError("The QR decomposition is not differentiable when mode='complete' and nrows > ncols.")
        gq, gr = unpack(grad, a.shape[:-2], qr_shapes(m, n, self.mode))
        if m >= n:
            return (_qr_tall_backward(q, r, gq, gr),)
        xp = xp_of(a)
        y, v_bar = a[..., m:], gr[..., m:]  # A = [X | Y], R = [U | V]
        gx = _qr_tall_backward(q, r[..., :m], gq + y @ mT(v_bar), gr[..., :m])
        return (xp.concatenate([gx, q @ v_bar], axis=-1),)


def _qr_tall_backward(q, r, gq, gr):
    """Ā for A = QR with R square (m ≥ n, reduced): (Q̄ + Q·copyltu(M)) R⁻ᵀ, M = R R̄ᵀ − Q̄ᵀ Q."""
    xp = xp_of(q)
    mm = r @ mT(gr) - mT(gq) @ q
    copyltu = xp.tril(mm) + mT(xp.tril(mm, -1))
    b = gq + q @ copyltu
    return mT(xp.linalg.solve(r, mT(b)))  # b R⁻ᵀ


def svd_shapes(m: int, n: int, full_matrices: bool) -> list:
    k = min(m, n)
    return [(m, m if full_matrices else k), (k,), (n if full_matrices else k, n)]


class SVD(Function):
    """U, S and Vh of A = U diag(S) Vh (S descending), packed. With full_matrices, the columns past min(m, n)
    get no gradient (they do not take part in A; torch's drops theirs too)."""

    def forward(self, a, full_matrices: bool = True):
        xp = xp_of(a)
        u, s, vh = xp.linalg.svd(a, full_matrices=full_matrices)
        self.full, self.shape = full_matrices, a.shape[-2:]
        self.save_for_backward(u, s, vh)
        return pack(u, s, vh, batch=a.shape[:-2])

    def backward(self, grad):
        u, s, vh = self.saved
        m, n = self.shape
        gu, gs, gvh = unpack(grad, s.shape[:-1], svd_shapes(m, n, self.full))
        return (svd_backward(u, s, vh, gu, gs, gvh),)


def svd_backward(u, s, vh, gu, gs, gvh):
    """The SVD formula of the module docstring; gu and gvh may be None (only the singular values used)."""
    xp = xp_of(s)
    k = s.shape[-1]
    u, vh = u[..., :k], vh[..., :k, :]
    inner = gs[..., :, None] * _eye_mask(k, xp)  # diag(S̄)
    if gu is not None and not bool((gu == 0).all()):
        gu = gu[..., :k]
    else:
        gu = None
    if gvh is not None and not bool((gvh == 0).all()):
        gv, v = mT(gvh[..., :k, :]), mT(vh)
    else:
        gv = None
    if gu is None and gv is None:
        return (u * gs[..., None, :]) @ vh  # U diag(S̄) Vᵀ: no 1/(s_j² − s_i²) needed
    f = _antisymmetric_inverse_gaps(s * s)
    with np.errstate(divide="ignore", invalid="ignore"):
        if gu is not None:
            utgu = mT(u) @ gu
            inner = inner + (f * (utgu - mT(utgu))) * s[..., None, :]  # (F∘(UᵀŪ − ŪᵀU)) S
        if gv is not None:
            vtgv = mT(v) @ gv
            inner = inner + s[..., :, None] * (f * (vtgv - mT(vtgv)))  # S (F∘(VᵀV̄ − V̄ᵀV))
        ga = u @ inner @ vh
        if gu is not None and u.shape[-2] > k:  # (I − UUᵀ) Ū S⁻¹ Vᵀ: the part of Ū outside U's columns
            ga = ga + ((gu - u @ utgu) / s[..., None, :]) @ vh
        if gv is not None and vh.shape[-1] > k:  # U S⁻¹ V̄ᵀ (I − VVᵀ)
            ga = ga + u @ mT((gv - v @ vtgv) / s[..., None, :])
    return ga


class SVDVals(Function):
    """The singular values alone (descending); Ā = U diag(S̄) Vᵀ."""

    def forward(self, a):
        u, s, vh = xp_of(a).linalg.svd(a, full_matrices=False)
        self.save_for_backward(u, vh)
        return s

    def backward(self, grad):
        u, vh = self.saved
        return ((u * grad[..., None, :]) @ vh,)


class Eigh(Function):
    """Eigenvalues (ascending) and eigenvectors of a symmetric A (its `UPLO` triangle read), packed."""

    def forward(self, a, UPLO: str = "L"):  # noqa: N803 (torch's name)
        w, v = xp_of(a).linalg.eigh(a, UPLO=UPLO)
        self.save_for_backward(w, v)
        return pack(w, v, batch=a.shape[:-2])

    def backward(self, grad):
        w, v = self.saved
        n = w.shape[-1]
        gw, gv = unpack(grad, w.shape[:-1], [(n,), (n, n)])
        xp = xp_of(w)
        inner = gw[..., :, None] * _eye_mask(n, xp)  # diag(Λ̄)
        if bool((gv != 0).any()):
            with np.errstate(invalid="ignore"):
                inner = inner + _antisymmetric_inverse_gaps(w) * (mT(v) @ gv)
        ga = v @ inner @ mT(v)
        return (0.5 * (ga + mT(ga)),)  # symmetric, as torch's: A is taken as the symmetric matrix it stands for


class EigvalsH(Function):
    """The eigenvalues alone (ascending) of a symmetric A; Ā = V diag(Λ̄) Vᵀ."""

    def forward(self, a, UPLO: str = "L"):  # noqa: N803
        w, v = xp_of(a).linalg.eigh(a, UPLO=UPLO)
        self.save_for_backward(v)
        return w

    def backward(self, grad):
        (v,) = self.saved
        return ((v * grad[..., None, :]) @ mT(v),)
