"""Linear-algebra primitives on batches of matrices (..., n, n): inverse, determinant, log |det|, solve and the
pseudo-inverse, for `seqlab.linalg` (the factorizations, cholesky/qr/svd/eigh, are in ops/decomp.py).

Primitives because no composition of element-wise ops computes them, and differentiating LAPACK's pivoted steps
would be slow and unstable; each backward is the closed form of matrix calculus for real matrices (Giles 2008,
"An extended collection of matrix derivative results", §2.2):

    X = A⁻¹            Ā = −Xᵀ X̄ Xᵀ
    d = det A          Ā = d̄ · d · A⁻ᵀ  = d̄ · adj(A)ᵀ          (adj(A)ᵀ from the SVD where d = 0: finite at any rank)
    l = log |det A|    Ā = l̄ · A⁻ᵀ
    X = A⁻¹ B          B̄ = A⁻ᵀ X̄,   Ā = −B̄ Xᵀ
    P = A⁺             Ā = −Pᵀ P̄ Pᵀ + (I − AP) P̄ᵀ P Pᵀ + Pᵀ P P̄ᵀ (I − PA)   (Golub & Pereyra 1973; rank kept)

Errors are torch's: a singular matrix is a `LinAlgError` (a RuntimeError) whose message names the batch element
and LAPACK's pivot, as torch.linalg's. Each `backward_graph` is its `backward` written with Tensor ops, for
create_graph=True (higher_order.py).
"""
from __future__ import annotations

import contextlib

import numpy as np

from seqlab.autograd.function import Function
from seqlab.autograd.higher_order import constant, graph_input, graph_output
from seqlab.backend import to_numpy, xp_of
from seqlab.autograd.torch_errors import ArgumentError, DtypeError  # noqa: F401 (linalg's errors, imported from here)
from seqlab.errors import SeqlabError


class LinAlgError(SeqlabError, RuntimeError):
    """torch.linalg.LinAlgError: the matrix cannot be inverted, solved with or factorized (singular, not
    positive-definite). A RuntimeError, as torch's."""


def mT(a):  # noqa: N802 (torch's name)
    """The last two dims swapped: a batch of matrices transposed."""
    return a.swapaxes(-1, -2)


# ---- LAPACK's `info`: which matrix of a batch failed, and where ------------------------------------------------
def lapack_info(a, routine: str) -> np.ndarray:
    """LAPACK's `info` for each matrix of the batch `a` (an int32 NumPy array of the batch shape), computed on the
    host: getrf's is the 1-based index of the first zero pivot of U (0: invertible), potrf's the order of the first
    leading minor that is not positive-definite (0: factorized). For torch's messages and the `info` of
    inv_ex / solve_ex / cholesky_ex; the fast paths never call it."""
    from scipy.linalg import lapack

    host = np.ascontiguousarray(to_numpy(a))
    flat = host.reshape((-1,) + host.shape[-2:])
    fn = lapack.get_lapack_funcs(routine, (flat,))
    if routine == "getrf":
        infos = [fn(m)[2] for m in flat]
    else:  # potrf, lower triangle (as numpy's and torch's cholesky read it)
        infos = [fn(m, lower=1)[1] for m in flat]
    return np.asarray(infos, dtype=np.int32).reshape(host.shape[:-2])


_FAILURES = {
    "getrf_inv": "The diagonal element {info} is zero, the inversion could not be completed because the input "
                 "matrix is singular.",
    "getrf_solve": "The solver failed because the input matrix is singular.",
    "potrf": "The factorization could not be completed because the input is not positive-definite (the leading "
             "minor of order {info} is not positive-definite).",
}


def raise_on_info(name: str, info: np.ndarray, kind: str) -> None:
    """Raise torch's LinAlgError for the first matrix whose `info` is not 0 (nothing when all are 0)."""
    bad = np.flatnonzero(info.reshape(-1))
    if bad.size == 0:
        return
    k = int(bad[0])
    where = f"(Batch element {k}): " if info.ndim else ""
    raise LinAlgError(f"{name}: {where}{_FAILURES[kind].format(info=int(info.reshape(-1)[k]))}")


def _device_errors(xp):
    """CuPy reports a failed factorization only inside `cupyx.errstate(linalg="raise")` (by default it returns
    whatever cuSOLVER left); NumPy always raises."""
    if xp is np:
        return contextlib.nullcontext()
    import cupyx

    errstate = getattr(cupyx, "errstate", None)  # the CuPy stand-in of the tests has none (NumPy raises there)
    return errstate(linalg="raise") if errstate is not None else contextlib.nullcontext()


def checked(compute, a, name: str, routine: str, kind: str):
    """compute() (an xp.linalg call on `a`), raising torch's LinAlgError where a matrix is singular or not
    positive-definite: NumPy raises its own, and CuPy under `_device_errors` (then LAPACK's info, on the host,
    says which matrix and where); a non-finite result on the device is checked the same way (a NaN input that
    LAPACK takes is returned as it is)."""
    xp = xp_of(a)
    try:
        with _device_errors(xp):
            out = compute()
    except np.linalg.LinAlgError:
        raise_on_info(name, lapack_info(a, routine), kind)
        raise  # pragma: no cover - LAPACK refused without an info (not seen)
    if xp is not np and not bool(xp.isfinite(out).all()):
        raise_on_info(name, lapack_info(a, routine), kind)
    return out


def masked(a, bad):
    """`a` with the identity in place of the matrices where `bad` (a bool array of the batch shape) holds: what
    the *_ex functions invert or factorize, so one bad matrix does not stop the others."""
    xp = xp_of(a)
    bad = xp.asarray(bad)[..., None, None]
    return xp.where(bad, xp.eye(a.shape[-1], dtype=a.dtype), a), bad


def checked_or_nan(compute, a, name: str, routine: str, kind: str, singular=None):
    """compute(a) checked as `checked` does; or, given `singular` (the *_ex functions), compute on `a` with
    those matrices masked out (`masked`) and NaN in their place instead of an error."""
    if singular is None:
        return checked(lambda: compute(a), a, name, routine, kind)
    safe, bad = masked(a, singular)
    return xp_of(a).where(bad, a.dtype.type(np.nan), compute(safe))


# ---- packing: one Function with several outputs (Q and R, U, S and Vh, ...) returns them in one array --------
def pack(*arrays, batch: tuple):
    """The arrays, each (*batch, ...), flattened after the batch dims and joined: one output of a Function, which
    the caller splits again with differentiable slices (`unpack`), so each part gets its own gradient."""
    xp = xp_of(arrays[0])
    flat = [x.reshape(batch + (-1,)) for x in arrays]
    return xp.concatenate(flat, axis=-1)


def unpack(packed, batch: tuple, shapes: list):
    """`pack`'s parts again: slices of `packed` (an array or a Tensor) reshaped to batch + each of `shapes`."""
    parts, start = [], 0
    for shape in shapes:
        size = int(np.prod(shape, dtype=np.int64))
        parts.append(packed[..., start:start + size].reshape(batch + tuple(shape)))
        start += size
    return parts


# ---- inverse, determinant ------------------------------------------------------------------------------------
def _others_product(s):
    """∏_{j≠i} s_j for each i along the last axis, without dividing (right where some s_j = 0)."""
    xp = xp_of(s)
    ones = xp.ones(s.shape[:-1] + (1,), dtype=s.dtype)
    left = xp.cumprod(xp.concatenate([ones, s[..., :-1]], axis=-1), axis=-1)  # s_0 ··· s_{i−1}
    right = xp.flip(xp.cumprod(xp.flip(xp.concatenate([s[..., 1:], ones], axis=-1), -1), axis=-1), -1)
    return left * right  # (s_0 ··· s_{i−1}) · (s_{i+1} ··· s_{n−1})


def adjugate_t(a):
    """adj(A)ᵀ = ∂ det A / ∂A, from the SVD A = U diag(s) Vᵀ: det(U)·det(Vᵀ)·U diag(∏_{j≠i} s_j) Vᵀ. Finite for
    every A (nonzero at rank n − 1, zero below), where det(A)·A⁻ᵀ is 0·∞ at a singular one."""
    xp = xp_of(a)
    u, s, vh = xp.linalg.svd(a)
    sign = xp.linalg.det(u) * xp.linalg.det(vh)  # ±1 each: orthogonal factors
    return sign[..., None, None] * ((u * _others_product(s)[..., None, :]) @ vh)


def inverse_t_and_adjugate(a, singular):
    """(A⁻ᵀ with the identity's for the singular matrices, adj(A)ᵀ where `singular` holds, else None)."""
    xp = xp_of(a)
    if not bool(singular.any()):
        return mT(xp.linalg.inv(a)), None
    safe, _ = masked(a, singular)
    return mT(xp.linalg.inv(safe)), adjugate_t(a)


class Inv(Function):
    """A⁻¹ of each matrix. `singular` (inv_ex): a bool array of the batch shape; those matrices come out NaN
    instead of raising (torch's hold whatever LAPACK left: not values to read). Ā = −Xᵀ X̄ Xᵀ."""

    def forward(self, a, name: str = "linalg.inv", singular=None):
        out = checked_or_nan(xp_of(a).linalg.inv, a, name, "getrf", "getrf_inv", singular)
        self.save_for_backward(out)
        return out

    def backward(self, grad):
        xt = mT(self.saved[0])
        return (-(xt @ grad @ xt),)

    def backward_graph(self, g):
        xt = graph_output(self, self.saved[0]).mT
        return (-(xt @ g @ xt),)


class Det(Function):
    """det A of each matrix (LU, as torch's). Ā = d̄·d·A⁻ᵀ where d ≠ 0, and d̄·adj(A)ᵀ (SVD) where d = 0 exactly:
    the derivative there, finite (torch 2.13 gives 0 for an exactly singular matrix). Its backward_graph uses
    A⁻¹, so a second derivative at a singular matrix raises LinAlgError."""

    def forward(self, a):
        out = xp_of(a).linalg.det(a)
        self.save_for_backward(a, out)
        return out

    def backward(self, grad):
        a, det = self.saved
        xp = xp_of(a)
        singular = det == 0
        inv_t, adj_t = inverse_t_and_adjugate(a, singular)
        cof = det[..., None, None] * inv_t
        if adj_t is not None:
            cof = xp.where(singular[..., None, None], adj_t, cof)
        return (grad[..., None, None] * cof,)

    def backward_graph(self, g):
        a, det = self.saved
        d = graph_output(self, det)
        x = graph_input(self, 0, a)
        return ((g * d).unsqueeze(-1).unsqueeze(-1) * Inv.apply(x).mT,)


class LogAbsDet(Function):
    """log |det A| of each matrix; the sign (no gradient, as torch's) is kept in `self.sign` (slogdet). Ā = l̄·A⁻ᵀ,
    ±inf at a singular matrix (adj(A)ᵀ / 0), as torch's."""

    def forward(self, a):
        sign, out = xp_of(a).linalg.slogdet(a)
        self.sign = sign
        self.save_for_backward(a)
        return out

    def backward(self, grad):
        (a,) = self.saved
        xp = xp_of(a)
        singular = self.sign == 0
        inv_t, adj_t = inverse_t_and_adjugate(a, singular)
        if adj_t is not None:
            with np.errstate(divide="ignore", invalid="ignore"):
                inv_t = xp.where(singular[..., None, None], adj_t / a.dtype.type(0), inv_t)
        return (grad[..., None, None] * inv_t,)

    def backward_graph(self, g):
        x = graph_input(self, 0, self.saved[0])
        return (g.unsqueeze(-1).unsqueeze(-1) * Inv.apply(x).mT,)


class Solve(Function):
    """X = A⁻¹B for B a batch of matrices (..., n, k), the batch dims broadcast (the engine sums the gradients
    back). `singular` (solve_ex) as Inv's. B̄ = A⁻ᵀ X̄, Ā = −B̄ Xᵀ."""

    def forward(self, a, b, name: str = "torch.linalg.solve", singular=None):
        xp = xp_of(a)
        batch = tuple(np.broadcast_shapes(a.shape[:-2], b.shape[:-2]))
        a_ = xp.broadcast_to(a, batch + a.shape[-2:])
        b_ = xp.broadcast_to(b, batch + b.shape[-2:])
        if xp is not np:  # cupy.linalg.solve takes equal batch shapes; NumPy's reads the broadcast views as they are
            a_, b_ = xp.ascontiguousarray(a_), xp.ascontiguousarray(b_)
        if singular is None:
            out = checked(lambda: xp.linalg.solve(a_, b_), a_, name, "getrf", "getrf_solve")
        else:
            safe, bad = masked(a_, xp.broadcast_to(xp.asarray(singular), batch))
            out = xp.where(bad, a.dtype.type(np.nan), xp.linalg.solve(safe, b_))
        self.save_for_backward(a_, out)
        return out

    def backward(self, grad):
        a, x = self.saved
        gb = xp_of(grad).linalg.solve(mT(a), grad)
        return (-(gb @ mT(x)) if self.needs_input_grad[0] else None), gb

    def backward_graph(self, g):
        a, x = self.saved
        gb = Solve.apply(graph_input(self, 0, a).mT, g)
        return (-(gb @ graph_output(self, x).mT) if self.needs_input_grad[0] else None), gb


def pinv_array(a, atol, rtol, hermitian: bool):
    """A⁺ of each matrix: V diag(1/s) Uᵀ over the singular values s > max(atol, rtol·s_max) (the others count as
    0, as torch's and NumPy's); `hermitian`: from the eigendecomposition of the symmetric A. atol and rtol are
    numbers or arrays of the batch shape."""
    xp = xp_of(a)
    if hermitian:
        w, v = xp.linalg.eigh(a)
        size = xp.abs(w)
        keep = size > xp.maximum(atol, rtol * size.max(axis=-1))[..., None]
        inv_w = xp.where(keep, 1 / xp.where(keep, w, 1), 0).astype(a.dtype, copy=False)
        return (v * inv_w[..., None, :]) @ mT(v)
    u, s, vh = xp.linalg.svd(a, full_matrices=False)
    top = s[..., :1] if s.shape[-1] else xp.zeros(s.shape[:-1] + (1,), s.dtype)
    keep = s > xp.maximum(atol, rtol * top[..., 0])[..., None]
    inv_s = xp.where(keep, 1 / xp.where(keep, s, 1), 0).astype(a.dtype, copy=False)
    return (mT(vh) * inv_s[..., None, :]) @ mT(u)


class Pinv(Function):
    """The Moore–Penrose pseudo-inverse P = A⁺ (SVD, or eigh for a symmetric A), its gradient Golub and Pereyra's
    for a rank that does not change around A (torch's too):
        Ā = −Pᵀ P̄ Pᵀ + (I − AP) P̄ᵀ P Pᵀ + Pᵀ P P̄ᵀ (I − PA)."""

    def forward(self, a, atol=0.0, rtol=0.0, hermitian: bool = False):
        out = pinv_array(a, atol, rtol, hermitian)
        self.save_for_backward(a, out)
        return out

    @staticmethod
    def _gradient(a, p, g, eye_m, eye_n, t):
        """The formula above, on arrays or Tensors alike (`t` transposes the last two dims)."""
        pt = t(p)
        return -(pt @ g @ pt) + (eye_m - a @ p) @ t(g) @ (p @ pt) + (pt @ p) @ t(g) @ (eye_n - p @ a)

    def backward(self, grad):
        a, p = self.saved
        xp = xp_of(a)
        m, n = a.shape[-2:]
        return (self._gradient(a, p, grad, xp.eye(m, dtype=a.dtype), xp.eye(n, dtype=a.dtype), mT),)

    def backward_graph(self, g):
        a, p = self.saved
        xp = xp_of(a)
        m, n = a.shape[-2:]
        eye_m, eye_n = (constant(xp.eye(k, dtype=a.dtype)) for k in (m, n))
        return (self._gradient(graph_input(self, 0, a), graph_output(self, p), g, eye_m, eye_n, lambda t: t.mT),)
