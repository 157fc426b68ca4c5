"""`orthogonal`: a weight kept orthogonal (QᵀQ = I, or QQᵀ = I for a wide one) as a parametrization, as
torch.nn.utils.parametrizations.orthogonal.

    orthogonal(linear)                            # linear.weight = Q(original), always orthogonal
    orthogonal(rnn, "weight_hh_l0", orthogonal_map="cayley")

An unconstrained matrix X (the original) is mapped onto the orthogonal matrices (Lezcano-Casado & Martínez-Rubio
2019, "Cheap orthogonal constraints in neural networks"), the n × k weight handled as a tall matrix (a wide one
transposed):

    "matrix_exp"   Q = exp(A)[:, :k],  A = L − Lᵀ skew-symmetric, L the lower triangle of X (padded to n × n)
    "cayley"       Q = (I − A/2)⁻¹ (I + A/2)[:, :k]   (the Cayley transform of the same A)
    "householder"  Q = H₁ ⋯ H_k[:, :k] · diag(sign),   H_i = I − τ_i v_i v_iᵀ, v_i column i of X below the
                   diagonal with a unit on it, τ_i = 2 / ‖v_i‖², the signs the diagonal of X (±1)

The default is "matrix_exp" for a square weight and "householder" otherwise (torch's choice). With
`use_trivialization=True` (the default, "dynamic trivialization", ibid. §5) the map is taken around a base point:
Q = base · map(X), the orthogonal `base` a buffer (`parametrizations.weight.0.base`) and X starting at the point
the map sends to the identity (−I), so the weight at registration is the orthogonal matrix nearest in the QR
sense to the weight it had: the Q of W = QR with R's diagonal positive. Assigning `module.weight = Q` (Q
orthogonal) moves the base to Q. With `use_trivialization=False` X is the map's own coordinate: assignment works
only for "householder" (through a QR factorization); the other maps raise NotImplementedError, as torch's.

State-dict keys are torch's (`parametrizations.weight.original`, `parametrizations.weight.0.base`), so torch's
orthogonal checkpoints load and give the same weight.
"""
from __future__ import annotations

import numpy as np

from seqlab import backend
from seqlab.autograd.tensor import Tensor
from seqlab.nn.module import Module
from seqlab.nn.utils.parametrize import register_parametrization

__all__ = ["orthogonal", "householder_product"]

_MAPS = ("matrix_exp", "cayley", "householder")


def householder_product(A: Tensor, tau: Tensor) -> Tensor:
    """The first k columns of H₁ H₂ ⋯ H_k, H_i = I − τ_i v_i v_iᵀ with v_i = column i of A below the diagonal and 1
    on it (LAPACK's orgqr; torch.linalg.householder_product). A: (..., n, k), n ≥ k; tau: (..., k). Composed of
    Tensor ops, so it is differentiable (k rank-one updates)."""
    from seqlab.creation import eye

    n, k = A.shape[-2], A.shape[-1]
    V = A.tril(-1) + eye(n, k, dtype=A.dtype, device=A.device)  # (..., n, k), unit diagonal
    Q = eye(n, dtype=A.dtype, device=A.device).expand(*A.shape[:-2], n, n)
    for i in range(k):  # Q ← Q H_i
        v = V[..., :, i:i + 1]  # (..., n, 1)
        Q = Q - (Q @ v) @ (v.mT * tau[..., i:i + 1, None])
    return Q[..., :, :k]


def _host(x) -> np.ndarray:
    return backend.to_numpy(x.data if isinstance(x, Tensor) else x)


def _qr_positive(a: np.ndarray) -> np.ndarray:
    """Q of a = QR (reduced), each column's sign flipped so that R's diagonal is positive (a zero one left)."""
    q, r = np.linalg.qr(a)
    signs = np.sign(np.diagonal(r, axis1=-2, axis2=-1))
    return q * np.where(signs == 0, 1, signs)[..., None, :]


def _is_orthogonal(q: np.ndarray) -> bool:
    """QᵀQ = I to torch's tolerance (atol 10·n·eps of the dtype, rtol 1e-5)."""
    n, k = q.shape[-2], q.shape[-1]
    atol = 10.0 * n * np.finfo(q.dtype).eps
    return bool(np.allclose(q.swapaxes(-1, -2) @ q, np.eye(k, dtype=q.dtype), rtol=1e-5, atol=atol))


def _to(arr: np.ndarray, like: Tensor) -> Tensor:
    return Tensor._from_op(backend.to_device(np.ascontiguousarray(arr.astype(like.dtype)), like.device), None)


class _Orthogonal(Module):
    """The parametrization: forward(X) is the orthogonal weight, right_inverse(Q) the X (and base) giving Q."""

    def __init__(self, weight: Tensor, orthogonal_map: str, *, use_trivialization: bool = True) -> None:
        super().__init__()
        self.shape = tuple(weight.shape)
        self.orthogonal_map = orthogonal_map
        self.use_trivialization = use_trivialization
        if use_trivialization:
            self.register_buffer("base", None)

    def forward(self, X: Tensor) -> Tensor:
        n, k = X.shape[-2], X.shape[-1]
        transposed = n < k
        if transposed:  # a wide matrix: work on its transpose, tall
            X = X.mT
            n, k = k, n
        if self.orthogonal_map == "householder":
            A = X.tril(-1)  # the reflectors' vectors, below the diagonal
            tau = 2.0 / (1.0 + (A * A).sum(-2))  # (..., k): each H_i a reflection
            # the signs come from X's diagonal (±1), not differentiated: torch casts it to int
            signs = X.data.diagonal(axis1=-2, axis2=-1).astype(np.int64).astype(X.dtype)
            Q = householder_product(A, tau) * Tensor._from_op(signs[..., None, :], None)
        else:
            from seqlab import linalg
            from seqlab.creation import cat, eye

            L = X.tril()
            if n != k:  # pad the tall n × k to n × n
                zeros = Tensor._from_op(backend.xp_of(X.data).zeros(X.shape[:-2] + (n, n - k), dtype=X.dtype), None)
                L = cat([L, zeros], dim=-1)
            A = L - L.mT  # skew-symmetric, (..., n, n)
            if self.orthogonal_map == "matrix_exp":
                Q = linalg.matrix_exp(A)
            else:
                Id = eye(n, dtype=X.dtype, device=X.device)
                Q = linalg.solve(Id - 0.5 * A, Id + 0.5 * A)
            if n != k:
                Q = Q[..., :, :k]
        base = self.__dict__["_buffers"].get("base")
        if base is not None:
            Q = base @ Q
        return Q.mT if transposed else Q

    def right_inverse(self, Q: Tensor) -> Tensor:
        if tuple(Q.shape) != self.shape:
            raise ValueError(f"Expected a matrix or batch of matrices of shape {self.shape}. Got a tensor of shape "
                             f"{tuple(Q.shape)}.")
        q = _host(Q)
        n, k = q.shape[-2], q.shape[-1]
        transposed = n < k
        if transposed:
            q = q.swapaxes(-1, -2)
            n, k = k, n
        if not self.use_trivialization:
            if self.orthogonal_map != "householder":
                raise NotImplementedError("It is not possible to assign to the matrix exponential or the Cayley "
                                          "parametrizations when use_trivialization=False.")
            h, tau = np.linalg.qr(q, mode="raw")  # LAPACK geqrf: R above the diagonal, the reflectors below
            packed = np.ascontiguousarray(h.swapaxes(-1, -2))  # (..., n, k)
            diag = np.sign(np.diagonal(packed, axis1=-2, axis2=-1))
            diag = np.where(tau == 0, -diag, diag)  # no reflection there: the map's sign flips it back
            idx = np.arange(k)
            packed[..., idx, idx] = diag
            return _to(packed.swapaxes(-1, -2) if transposed else packed, Q)
        if n == k:
            base = q.copy() if _is_orthogonal(q) else _qr_positive(q)
        else:  # complete the n × k columns to an n × n orthogonal matrix (its first k columns are Q's own)
            from seqlab import sampling

            extra = _host(sampling.randn(*q.shape[:-2], n, n - k, dtype=Q.dtype))
            base = _qr_positive(np.concatenate([q, extra], axis=-1))
        self.base = _to(base, Q)
        neg_eye = np.zeros(self.shape, dtype=q.dtype)  # the point that every map sends to the identity
        idx = np.arange(min(self.shape[-2:]))
        neg_eye[..., idx, idx] = -1
        return _to(neg_eye, Q)


def orthogonal(module: Module, name: str = "weight", orthogonal_map: str | None = None, *,
               use_trivialization: bool = True) -> Module:
    """Make `module.<name>` (a matrix or a batch of them) orthogonal through a parametrization, as torch's: the
    map "matrix_exp", "cayley" or "householder" (default: matrix_exp for a square weight, householder
    otherwise), around a moving base point unless `use_trivialization=False`. Returns the module."""
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if weight.ndim < 2:
        raise ValueError(f"Expected a matrix or batch of matrices. Got a tensor of {weight.ndim} dimensions.")
    if orthogonal_map is None:
        orthogonal_map = "matrix_exp" if weight.shape[-2] == weight.shape[-1] else "householder"
    if orthogonal_map not in _MAPS:
        raise ValueError(f'orthogonal_map has to be one of "matrix_exp", "cayley", "householder". Got: '
                         f"{orthogonal_map}")
    parametrization = _Orthogonal(weight, orthogonal_map, use_trivialization=use_trivialization)
    return register_parametrization(module, name, parametrization, unsafe=True)
