"""`seqlab.linalg`: torch.linalg's functions on batches of matrices (..., m, n), with gradients.

    import seqlab
    A = seqlab.randn(4, 3, 3, dtype=seqlab.float64, requires_grad=True)
    sign, logabsdet = seqlab.linalg.slogdet(A)
    x = seqlab.linalg.solve(A, seqlab.ones(4, 3, dtype=seqlab.float64))

Values, result dtypes, argument names and errors follow torch.linalg: float32 and float64 only (an integer
matrix is refused, as torch's), a singular or non-positive-definite matrix raises `LinAlgError` (a RuntimeError)
naming the batch element, results with several parts are named tuples (`.sign`, `.logabsdet`; `.U`, `.S`, `.Vh`).
On CuPy arrays the same code runs cupy.linalg.

The inverse, determinant, solve, pseudo-inverse and the factorizations are primitives with the backward
formulas written out in `autograd/ops/linalg.py` and `autograd/ops/decomp.py`; everything else (norms,
matrix_power, lstsq, multi_dot, ...) is composed of them and Tensor ops, so its gradient needs nothing more.
"""
from __future__ import annotations

import math
import numbers

import numpy as np

from seqlab import backend
from seqlab.autograd.tensor_common import return_type
from seqlab.autograd.ops import decomp as D
from seqlab.autograd.ops import linalg as L
from seqlab.autograd.ops.linalg import ArgumentError, DtypeError, LinAlgError
from seqlab.autograd.ops.matrix_exp import MatrixExp
from seqlab.autograd.tensor import Tensor
from seqlab.creation import matmul

__all__ = ["LinAlgError", "vector_norm", "matrix_norm", "norm", "inv", "inv_ex", "det", "slogdet", "solve",
           "solve_ex", "cholesky", "cholesky_ex", "qr", "svd", "svdvals", "eigh", "eigvalsh", "pinv",
           "matrix_power", "matrix_rank", "cross", "diagonal", "multi_dot", "vecdot", "matmul", "lstsq", "matrix_exp"]

_result = return_type  # torch.return_types' named tuples


InvExResult = _result("linalg_inv_ex", "inverse info")
SlogdetResult = _result("linalg_slogdet", "sign logabsdet")
SolveExResult = _result("linalg_solve_ex", "result info")
CholeskyExResult = _result("linalg_cholesky_ex", "L info")
QRResult = _result("linalg_qr", "Q R")
SVDResult = _result("linalg_svd", "U S Vh")
EighResult = _result("linalg_eigh", "eigenvalues eigenvectors")
LstsqResult = _result("linalg_lstsq", "solution residuals rank singular_values")

_NUMBERS = (numbers.Number, np.number)
_TORCH_DTYPE = {"bool": "Bool", "uint8": "Byte", "int8": "Char", "int16": "Short", "int32": "Int", "int64": "Long",
                "float16": "Half", "float32": "Float", "float64": "Double", "complex64": "ComplexFloat",
                "complex128": "ComplexDouble"}


def _dtype_name(dtype) -> str:
    return _TORCH_DTYPE.get(np.dtype(dtype).name, str(dtype))


# ---- argument checks: torch's messages ----------------------------------------------------------------------
def _tensor(fn: str, x, arg: str = "A") -> Tensor:
    """`x` as a Tensor (an array is taken, as seqlab's other functions take `p.grad`); anything else refused."""
    if isinstance(x, Tensor):
        return x
    if hasattr(x, "dtype") and hasattr(x, "shape"):
        return Tensor._of(x)
    raise TypeError(f"{fn}(): argument '{arg}' must be Tensor, not {type(x).__name__}")


def _floating(name: str, x: Tensor) -> None:
    if x.dtype.kind != "f":
        raise DtypeError(f"{name}: Expected a floating point or complex tensor as input. Got {_dtype_name(x.dtype)}")
    if x.dtype.itemsize < 4:
        raise DtypeError(f"{name}: Low precision dtypes not supported. Got {_dtype_name(x.dtype)}")


def _matrix(name: str, A, square: bool = True, arg: str = "A") -> Tensor:
    """A float32/float64 batch of matrices (square unless told), or torch's RuntimeError."""
    A = _tensor(name.replace(".", "_"), A, arg)
    if A.ndim < 2:
        raise ArgumentError(f"{name}: The input tensor {arg} must have at least 2 dimensions.")
    _floating(name, A)
    if square and A.shape[-1] != A.shape[-2]:
        raise ArgumentError(f"{name}: {arg} must be batches of square matrices, but they are {A.shape[-2]} by "
                            f"{A.shape[-1]} matrices")
    return A


def _same_dtype(name: str, a: Tensor, b: Tensor, what: str = "A and B") -> None:
    if a.dtype != b.dtype:
        x, y = what.split(" and ")
        raise DtypeError(f"{name}: Expected {what} to have the same dtype, but found {x} of type "
                         f"{_dtype_name(a.dtype)} and {y} of type {_dtype_name(b.dtype)} instead")


def _no_grad(arr) -> Tensor:
    return Tensor._from_op(arr, None)


# ---- norms ---------------------------------------------------------------------------------------------------
def vector_norm(x, ord=2, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:  # noqa: A002 (torch's names)
    """(Σ|x|^ord)^(1/ord) over `dim` (every element by default); ord inf / -inf the largest / smallest |x|, 0
    the count of nonzero elements. `dtype` casts first (never narrowing, as torch). Its gradient at the zero
    vector is 0, as torch's."""
    name = "linalg.vector_norm"
    x = _tensor("linalg_vector_norm", x, "x")
    _floating(name, x)
    if isinstance(ord, (str, bool)) or not isinstance(ord, _NUMBERS):
        raise TypeError(f"linalg_vector_norm(): argument 'ord' must be Number, not {type(ord).__name__}")
    if dtype is not None:
        if np.promote_types(x.dtype, dtype) != np.dtype(dtype):
            raise ArgumentError(f"{name}: the dtype of the input ({_dtype_name(x.dtype)}) should be convertible "
                                f"without narrowing to the specified dtype ({_dtype_name(dtype)})")
        x = x.to(dtype=dtype)
    if isinstance(dim, list):
        dim = tuple(dim)
    return x.norm(float(ord), dim, keepdim)


def _matrix_ord_ok(ord) -> bool:  # noqa: A002
    if isinstance(ord, str):
        return ord in ("fro", "nuc")
    return isinstance(ord, _NUMBERS) and not isinstance(ord, bool) and ord in (math.inf, -math.inf, 1, -1, 2, -2)


def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim: bool = False, *, dtype=None) -> Tensor:  # noqa: A002
    """The matrix norm over the two dims `dim`: 'fro' (√Σa²), 'nuc' (Σ singular values), 2 / -2 (the largest /
    smallest singular value), inf / -inf (max / min row sum of |a|), 1 / -1 (max / min column sum)."""
    name = "linalg.matrix_norm"
    A = _tensor("linalg_matrix_norm", A)
    if A.ndim < 2:
        raise ArgumentError(f"{name}: The input tensor A must have at least 2 dimensions.")
    _floating(name, A)
    if dtype is not None:
        A = A.to(dtype=dtype)
    dims = (dim,) if isinstance(dim, int) else tuple(dim)
    if len(dims) != 2:
        raise ArgumentError(f"{name}: dim must be a 2-tuple. Got {' '.join(str(d) for d in dims)}")
    d0, d1 = (d % A.ndim if -A.ndim <= d < A.ndim else d for d in dims)
    if not (0 <= d0 < A.ndim and 0 <= d1 < A.ndim):
        raise ArgumentError(f"{name}: dim {dims} is out of range for a {A.ndim}-D tensor")
    if d0 == d1:
        raise ArgumentError(f"{name}: dims must be different. Got ({d0}, {d1})")
    if not _matrix_ord_ok(ord):
        raise ArgumentError(f"{name}: Order {ord} not supported.")
    kept = tuple(1 if i in (d0, d1) else s for i, s in enumerate(A.shape))  # the keepdim shape
    if ord == "fro":
        out = A.norm(2.0, (d0, d1), True)
    elif ord in ("nuc", 2, -2):
        s = svdvals(A.movedim((d0, d1), (-2, -1)))  # (..., k), descending
        out = (s.sum(-1) if ord == "nuc" else s[..., 0] if ord == 2 else s[..., -1]).reshape(kept)
    else:  # inf: the largest row sum (sum over the columns d1), 1: the largest column sum
        inner, outer = (d1, d0) if abs(ord) == math.inf else (d0, d1)
        sums = A.abs().sum(inner, keepdim=True)
        out = sums.amax(outer, keepdim=True) if ord > 0 else sums.amin(outer, keepdim=True)
    return out if keepdim else out.squeeze((d0, d1))


def norm(A, ord=None, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:  # noqa: A002
    """torch.linalg.norm: a vector norm (`dim` an int, or ord=None over everything) or a matrix norm (`dim` a
    2-tuple, or a 2-D input with `ord`)."""
    name = "linalg.norm"
    A = _tensor("linalg_norm", A, "input")
    if dim is not None:
        dims = (dim,) if isinstance(dim, int) else tuple(dim)
        if isinstance(ord, str) or len(dims) == 2:
            return matrix_norm(A, "fro" if ord is None else ord, dims, keepdim, dtype=dtype)
        if len(dims) != 1:
            raise ArgumentError(f"{name}: If dim is specified, it must be of length 1 or 2. Got {list(dims)}")
        return vector_norm(A, 2 if ord is None else ord, dims, keepdim, dtype=dtype)
    if ord is None:
        return vector_norm(A, 2, None, keepdim, dtype=dtype)
    if A.ndim not in (1, 2):
        raise ArgumentError(f"{name}: If dim is not specified but ord is, the input must be 1D or 2D. Got "
                            f"{A.ndim}D.")
    if isinstance(ord, str) or A.ndim == 2:
        return matrix_norm(A, ord, (-2, -1), keepdim, dtype=dtype)
    return vector_norm(A, ord, None, keepdim, dtype=dtype)


# ---- inverse, determinant, solve ---------------------------------------------------------------------------
def inv(A) -> Tensor:
    """A⁻¹ of each matrix; a singular one raises LinAlgError (torch's message: the batch element and the pivot)."""
    return L.Inv.apply(_matrix("linalg.inv", A))


def inv_ex(A, *, check_errors: bool = False) -> InvExResult:
    """(inverse, info): info (int32, the batch shape) is LAPACK's, 0 where the matrix is invertible, else the
    1-based index of the zero pivot; those inverses hold NaN (torch's hold LAPACK's leftovers). check_errors:
    raise as inv does."""
    A = _matrix("linalg.inv_ex", A)
    info = L.lapack_info(A.data, "getrf")
    if check_errors:
        L.raise_on_info("linalg.inv_ex", info, "getrf_inv")
    xp = backend.xp_of(A.data)
    out = L.Inv.apply(A, singular=xp.asarray(info != 0))
    return InvExResult(out, _no_grad(xp.asarray(info)))


def det(A) -> Tensor:
    """det A of each matrix. Its gradient is the cofactor matrix adj(A)ᵀ, finite at singular matrices too."""
    return L.Det.apply(_matrix("linalg.det", A))


def slogdet(A) -> SlogdetResult:
    """(sign, logabsdet): det A = sign · exp(logabsdet), without overflow; sign is 0 and logabsdet -inf for a
    singular matrix. sign has no gradient."""
    A = _matrix("linalg.slogdet", A)
    logabs, fn = L.LogAbsDet.apply_with_fn(A)
    return SlogdetResult(_no_grad(fn.sign), logabs)


def _solve_operands(name: str, A, B, left: bool):
    """(A, B as a batch of matrices, whether B was a batch of vectors), torch's checks and its rule for when B is
    a vector: B is 1-D, or B's shape is A's without the last dim."""
    A = _matrix(name, A)
    B = _tensor(name.replace(".", "_"), B, "B")
    if B.ndim < 1:
        raise ArgumentError(f"{name}: The input tensor B must have at least 2 dimensions.")
    _same_dtype(name, A, B)
    vector = B.ndim == 1 or (B.ndim == A.ndim - 1 and B.shape == A.shape[:-1])
    Bm = B.unsqueeze(-1) if vector else B
    n = A.shape[-1]
    if (Bm.shape[-2] if left else Bm.shape[-1]) != n:
        eq = "AX = B" if left else "XA = B"
        raise ArgumentError(f"{name}: Incompatible shapes of A and B for the equation {eq} ({n}x{n} and "
                            f"{Bm.shape[-2]}x{Bm.shape[-1]})")
    try:
        np.broadcast_shapes(A.shape[:-2], Bm.shape[:-2])
    except ValueError:
        raise ArgumentError(f"{name}: the batch dims of A {A.shape} and B {B.shape} do not broadcast") from None
    return A, Bm, vector


def solve(A, B, *, left: bool = True) -> Tensor:
    """X with AX = B (left=False: XA = B), B a vector or matrix per batch element (batch dims broadcast); a
    singular A raises LinAlgError."""
    A, Bm, vector = _solve_operands("linalg.solve", A, B, left)
    if left:
        X = L.Solve.apply(A, Bm)
    else:  # XA = B  ⇔  Aᵀ Xᵀ = Bᵀ
        X = L.Solve.apply(A.mT, Bm.mT).mT
    return X.squeeze(-1) if vector else X


def solve_ex(A, B, *, left: bool = True, check_errors: bool = False) -> SolveExResult:
    """(result, info) as inv_ex's: info from A's LU; the results of singular systems hold NaN."""
    A, Bm, vector = _solve_operands("linalg.solve_ex", A, B, left)
    info = L.lapack_info(A.data, "getrf")
    if check_errors:
        L.raise_on_info("linalg.solve_ex", info, "getrf_solve")
    xp = backend.xp_of(A.data)
    bad = xp.asarray(info != 0)
    X = L.Solve.apply(A, Bm, singular=bad) if left else L.Solve.apply(A.mT, Bm.mT, singular=bad).mT
    return SolveExResult(X.squeeze(-1) if vector else X, _no_grad(xp.asarray(info)))


def cholesky(A, *, upper: bool = False) -> Tensor:
    """L with A = L Lᵀ, lower triangular (upper=True: Lᵀ); only A's lower triangle is read. A matrix that is not
    positive-definite raises LinAlgError naming the leading minor."""
    low = D.Cholesky.apply(_matrix("linalg.cholesky", A))
    return low.mT if upper else low


def cholesky_ex(A, *, upper: bool = False, check_errors: bool = False) -> CholeskyExResult:
    """(L, info): info the order of the first leading minor that is not positive-definite (0: factorized); those
    factors hold NaN."""
    A = _matrix("linalg.cholesky_ex", A)
    info = L.lapack_info(A.data, "potrf")
    if check_errors:
        L.raise_on_info("linalg.cholesky_ex", info, "potrf")
    xp = backend.xp_of(A.data)
    low = D.Cholesky.apply(A, singular=xp.asarray(info != 0))
    return CholeskyExResult(low.mT if upper else low, _no_grad(xp.asarray(info)))


# ---- factorizations ------------------------------------------------------------------------------------------
def qr(A, mode: str = "reduced") -> QRResult:
    """(Q, R) with A = QR: mode 'reduced' (Q m × k), 'complete' (Q m × m) or 'r' (R only, Q empty). Differentiable
    except for 'r' and for 'complete' with m > n, as torch's (the backward says why)."""
    if mode not in ("reduced", "complete", "r"):
        raise ArgumentError(f"qr received unrecognized mode '{mode}' but expected one of 'reduced' (default), "
                            f"'r', or 'complete'")
    A = _matrix("linalg.qr", A, square=False)
    batch, (m, n) = A.shape[:-2], A.shape[-2:]
    q, r = L.unpack(D.QR.apply(A, mode=mode), batch, D.qr_shapes(m, n, mode))
    if mode == "r":
        q = _no_grad(backend.xp_of(A.data).zeros((0,), dtype=A.dtype))
    return QRResult(q, r)


def svd(A, full_matrices: bool = True, *, driver=None) -> SVDResult:
    """(U, S, Vh) with A = U diag(S) Vh, S descending; full_matrices=False: U m × k and Vh k × n. The vectors are
    LAPACK's (signs as torch's on the CPU); differentiate only losses that do not depend on their signs."""
    A = _matrix("linalg.svd", A, square=False)
    _svd_driver(A, driver)
    batch, (m, n) = A.shape[:-2], A.shape[-2:]
    u, s, vh = L.unpack(D.SVD.apply(A, full_matrices=bool(full_matrices)), batch, D.svd_shapes(m, n, full_matrices))
    return SVDResult(u, s, vh)


def _svd_driver(A: Tensor, driver) -> None:
    if driver is not None and backend.xp_of(A.data) is np:
        raise ArgumentError("torch.linalg.svd: keyword argument `driver=` is only supported on CUDA inputs with "
                            "cuSOLVER backend.")


def svdvals(A, *, driver=None) -> Tensor:
    """The singular values, descending; gradient U diag(S̄) Vᵀ."""
    A = _matrix("linalg.svd", A, square=False)
    _svd_driver(A, driver)
    return D.SVDVals.apply(A)


def _uplo(UPLO: str) -> str:  # noqa: N803
    if UPLO not in ("L", "U"):
        raise ArgumentError(f"Expected UPLO argument to be 'L' or 'U', but got {UPLO}")
    return UPLO


def eigh(A, UPLO: str = "L") -> EighResult:  # noqa: N803 (torch's name)
    """(eigenvalues ascending, eigenvectors as columns) of a symmetric A, reading its lower (UPLO='L') or upper
    triangle. Gradients are finite for distinct eigenvalues; use losses that do not depend on the vectors' signs."""
    A = _matrix("linalg.eigh", A)
    n = A.shape[-1]
    w, v = L.unpack(D.Eigh.apply(A, UPLO=_uplo(UPLO)), A.shape[:-2], [(n,), (n, n)])
    return EighResult(w, v)


def eigvalsh(A, UPLO: str = "L") -> Tensor:  # noqa: N803
    """The eigenvalues (ascending) of a symmetric A; gradient V diag(Λ̄) Vᵀ."""
    return D.EigvalsH.apply(_matrix("linalg.eigh", A), UPLO=_uplo(UPLO))


# ---- pseudo-inverse, rank, powers ----------------------------------------------------------------------------
def _tolerances(A: Tensor, atol, rtol):
    """torch's (atol, rtol): numbers or arrays of the batch shape; rtol defaults to eps·max(m, n), or to 0 when a
    positive atol is given."""
    xp = backend.xp_of(A.data)

    def value(t):
        if isinstance(t, Tensor):
            return t.data.astype(A.dtype, copy=False)
        return A.dtype.type(t)

    if rtol is None:
        positive_atol = atol is not None and bool(xp.all(xp.asarray(value(atol)) > 0))
        rtol = 0.0 if positive_atol else np.finfo(A.dtype).eps * max(A.shape[-2:])
    return value(0.0 if atol is None else atol), value(rtol)


def pinv(A, *, atol=None, rtol=None, hermitian: bool = False) -> Tensor:
    """The Moore–Penrose pseudo-inverse; singular values at or below max(atol, rtol·σ_max) count as 0.
    hermitian=True: A is symmetric (eigh instead of the SVD)."""
    A = _matrix("linalg.pinv", A, square=False)
    atol, rtol = _tolerances(A, atol, rtol)
    return L.Pinv.apply(A, atol=atol, rtol=rtol, hermitian=bool(hermitian))


def matrix_rank(A, *, atol=None, rtol=None, hermitian: bool = False, tol=None) -> Tensor:
    """How many singular values exceed max(atol, rtol·σ_max) (int64, no gradient); `tol`: torch's older name of
    atol (with rtol 0)."""
    A = _matrix("linalg.matrix_rank", A, square=False)
    if tol is not None:
        atol, rtol = tol, 0.0
    atol, rtol = _tolerances(A, atol, rtol)
    xp = backend.xp_of(A.data)
    s = xp.abs(xp.linalg.eigvalsh(A.data)) if hermitian else xp.linalg.svd(A.data, compute_uv=False)
    top = s.max(axis=-1) if s.shape[-1] else xp.zeros(s.shape[:-1], s.dtype)
    return _no_grad((s > xp.maximum(atol, rtol * top)[..., None]).sum(axis=-1).astype(np.int64))


def matrix_power(A, n: int) -> Tensor:
    """A multiplied by itself n times (n = 0: the identity; n < 0: the inverse's power), by repeated squaring;
    integer matrices too for n >= 0, as torch's."""
    name = "linalg.matrix_power"
    A = _tensor("linalg_matrix_power", A)
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
        raise TypeError(f"linalg_matrix_power(): argument 'n' (position 2) must be int, not {type(n).__name__}")
    if A.ndim < 2:
        raise ArgumentError(f"{name}: The input tensor A must have at least 2 dimensions.")
    if A.shape[-1] != A.shape[-2]:
        raise ArgumentError(f"{name}: A must be batches of square matrices, but they are {A.shape[-2]} by "
                            f"{A.shape[-1]} matrices")
    if n == 0:
        xp = backend.xp_of(A.data)
        eye = xp.broadcast_to(xp.eye(A.shape[-1], dtype=A.dtype), A.shape)
        if not A.requires_grad:
            return _no_grad(eye.copy())
        return A.masked_fill(_no_grad(xp.ones(A.shape, dtype=bool)), 0) + _no_grad(eye)  # gradient 0, as torch's
    base = inv(A) if n < 0 else A
    n, out = abs(int(n)), None
    while n:  # binary exponentiation: A^13 = A^8 · A^4 · A
        if n & 1:
            out = base if out is None else out @ base
        n >>= 1
        if n:
            base = base @ base
    return out if out is not A else A.clone()


def matrix_exp(A) -> Tensor:
    """exp(A) = Σ Aᵏ/k! of each square matrix (Padé [13/13] with scaling and squaring, as torch's for float64;
    float32 is computed in float64 and rounded). Its gradient is the Fréchet derivative of exp, itself a
    matrix exponential (autograd/ops/matrix_exp.py), so higher derivatives work too."""
    return MatrixExp.apply(_matrix("linalg.matrix_exp", A))


# ---- products ------------------------------------------------------------------------------------------------
def cross(input, other, *, dim: int = -1) -> Tensor:  # noqa: A002 (torch's name)
    """The cross product of 3-vectors along `dim` (default the last), the inputs broadcast (same ndim, as torch)."""
    name = "linalg.cross"
    a, b = _tensor("linalg_cross", input, "input"), _tensor("linalg_cross", other, "other")
    if a.ndim != b.ndim:
        raise ArgumentError(f"{name}: inputs must have the same number of dimensions.")
    if a.dtype != b.dtype:
        raise DtypeError(f"expected scalar type {_dtype_name(a.dtype)} but found {_dtype_name(b.dtype)}")
    if not (-a.ndim <= dim < a.ndim) or a.shape[dim] != 3 or b.shape[dim] != 3:
        size = (a.shape[dim], b.shape[dim]) if -a.ndim <= dim < a.ndim else ("?", "?")
        raise ArgumentError(f"{name}: inputs dimension {dim} must have length 3. Got {size[0]} and {size[1]}")
    return a.cross(b, dim)


def diagonal(A, *, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:
    """The `offset`-th diagonal of the (dim1, dim2) matrices (the last two by default), as a view."""
    return _tensor("linalg_diagonal", A).diagonal(offset, dim1, dim2)


def vecdot(x, y, *, dim: int = -1) -> Tensor:
    """Σ x·y along `dim` (inputs broadcast): the dot product of vectors in a batch."""
    name = "linalg.vecdot"
    x, y = _tensor("linalg_vecdot", x, "x"), _tensor("linalg_vecdot", y, "y")
    _floating(name, x)
    _same_dtype(name, x, y, "x and y")
    try:
        shape = np.broadcast_shapes(x.shape, y.shape)
    except ValueError:
        raise ArgumentError(f"{name}: shapes {x.shape} and {y.shape} do not broadcast") from None
    if not -len(shape) <= dim < len(shape):
        raise ArgumentError(f"{name}: dim {dim} is out of range for shapes {x.shape} and {y.shape}")
    return (x * y).sum(dim)


def multi_dot(tensors) -> Tensor:
    """The product of a list of matrices; the first may be a row vector (1-D) and the last a column vector,
    as torch's (which also picks the cheapest order; here left to right, the same values up to rounding)."""
    name = "multi_dot()"
    ts = [_tensor("linalg_multi_dot", t, "tensors") for t in tensors]
    if len(ts) < 2:
        raise ArgumentError(f"{name}: expected at least 2 tensors but got {len(ts)}")
    for i, t in enumerate(ts):
        where = "the first tensor" if i == 0 else "the last tensor" if i == len(ts) - 1 else f"tensor {i}"
        if (0 < i < len(ts) - 1 and t.ndim != 2) or t.ndim not in (1, 2):
            must = "2D" if 0 < i < len(ts) - 1 else "1D or 2D"
            raise ArgumentError(f"{name}: {where} must be {must} but got {t.ndim}D")
        if t.dtype != ts[0].dtype:
            raise DtypeError(f"{name}: all tensors must have be the same dtype but tensor 0 is "
                             f"{_dtype_name(ts[0].dtype).lower()} and tensor {i} {_dtype_name(t.dtype).lower()}")
    row, col = ts[0].ndim == 1, ts[-1].ndim == 1
    mats = [ts[0].unsqueeze(0) if row else ts[0], *ts[1:-1], ts[-1].unsqueeze(-1) if col else ts[-1]]
    out = mats[0]
    for i, m in enumerate(mats[1:]):
        if out.shape[-1] != m.shape[0]:
            raise ArgumentError(f"{name}: tensors {i} and {i + 1} with shapes {list(ts[i].shape)} and "
                                f"{list(ts[i + 1].shape)} cannot be multiplied")
        out = out @ m
    if row:
        out = out.squeeze(0)
    return out.squeeze(-1) if col else out


# ---- least squares -------------------------------------------------------------------------------------------
def lstsq(A, B, rcond=None, *, driver=None) -> LstsqResult:
    """The least-squares (minimum-norm) solution X of AX ≈ B, through the pseudo-inverse, so it has torch's
    gradient. As torch's CPU drivers: `rank` for 'gelsy' (the default), 'gelsd' and 'gelss'; `singular_values`
    for 'gelsd' and 'gelss'; `residuals` (‖AX − B‖² per column) when m > n, A has full rank and the driver is not
    'gelsy'; otherwise those are empty. rcond: singular values below rcond·σ_max count as 0 (default eps·max(m, n))."""
    name = "torch.linalg.lstsq"
    if driver not in (None, "gels", "gelsy", "gelsd", "gelss"):
        raise ArgumentError(f"{name}: parameter `driver` should be one of (gels, gelsy, gelsd, gelss)")
    driver = driver or "gelsy"
    A, B = _tensor("linalg_lstsq", A, "A"), _tensor("linalg_lstsq", B, "B")
    if A.ndim < 2:
        raise ArgumentError(f"{name}: input must have at least 2 dimensions.")
    _floating(name, A)
    if A.dtype != B.dtype:
        raise DtypeError(f"{name}: Expected input and other to have the same dtype, but got input's dtype "
                         f"{_dtype_name(A.dtype)} and other's dtype {_dtype_name(B.dtype)}")
    vector = B.ndim == 1 or (B.ndim == A.ndim - 1 and B.shape == A.shape[:-1])
    Bm = B.unsqueeze(-1) if vector else B
    if Bm.ndim < 2 or Bm.shape[-2] != A.shape[-2]:
        raise ArgumentError(f"{name}: input.size(-2) should match other.size(-2)")
    m, n = A.shape[-2:]
    rtol = np.finfo(A.dtype).eps * max(m, n) if rcond is None else rcond
    X = pinv(A, rtol=rtol) @ Bm
    xp = backend.xp_of(A.data)
    empty = _no_grad(xp.zeros((0,), dtype=A.dtype))
    rank = matrix_rank(A, atol=0.0, rtol=rtol) if driver != "gels" else _no_grad(xp.zeros((0,), dtype=np.int64))
    values = _no_grad(xp.linalg.svd(A.data, compute_uv=False)) if driver in ("gelsd", "gelss") else empty
    residuals = empty
    if driver != "gelsy" and m > n:
        full = rank if driver != "gels" else matrix_rank(A, atol=0.0, rtol=rtol)
        if bool((full.data == n).all()):
            r = A.data @ X.data - Bm.data
            residuals = _no_grad((r * r).sum(axis=-2))
    return LstsqResult(X.squeeze(-1) if vector else X, residuals, rank, values)
