"""`LinalgSpecialMethods`: torch.Tensor's methods that are `torch.linalg` and `torch.special` functions under
their older names (det, logdet, slogdet, inverse, matrix_power, pinverse, svd, qr, cholesky; lgamma, digamma,
polygamma, erfinv, erfc, sinc, i0, mvlgamma) and the in-place forms of the element-wise ones (erfinv_, lgamma_,
...), as a mixin of `Tensor`; and their `torch.*` functions (`TOPLEVEL`).

Each delegates to seqlab.linalg or seqlab.special, imported when first called (this module loads while Tensor
is being defined, before those modules can). torch.svd, torch.qr and torch.cholesky keep torch's older
signatures: svd(some=True, compute_uv=True) returns V (not Vh), qr(some=True), cholesky(upper=False).
"""
from __future__ import annotations

from typing import Any

from seqlab.autograd.tensor_common import _tensor_class, return_type

SlogdetResult = return_type("slogdet", "sign logabsdet")
SVDResult = return_type("svd", "U S V")
QRResult = return_type("qr", "Q R")


def _linalg():
    from seqlab import linalg

    return linalg


def _special():
    from seqlab import special

    return special


class LinalgSpecialMethods:
    """torch.Tensor's determinant, inverse, decompositions and special functions (seqlab.linalg, seqlab.special)."""

    __slots__ = ()

    # ---- linear algebra ---------------------------------------------------------------------------------------
    def det(self) -> Any:
        return _linalg().det(self)

    def logdet(self) -> Any:
        """log det: NaN where det < 0, -inf where det = 0 (as torch's); the gradient is A⁻ᵀ where det > 0, and 0
        where det < 0."""
        from seqlab.autograd.ops.elementwise import Where

        sign, logabs = _linalg().slogdet(self)
        return Where.apply(sign.data < 0, logabs.dtype.type(float("nan")), logabs)

    def slogdet(self) -> Any:
        return SlogdetResult(*_linalg().slogdet(self))

    def inverse(self) -> Any:
        return _linalg().inv(self)

    def matrix_power(self, n: int) -> Any:
        return _linalg().matrix_power(self, n)

    def pinverse(self, rcond: float = 1e-15) -> Any:
        """The pseudo-inverse, singular values below rcond·σ_max counting as 0 (torch.linalg.pinv's rtol)."""
        return _linalg().pinv(self, rtol=rcond)

    def svd(self, some: bool = True, compute_uv: bool = True) -> Any:
        """torch.svd: (U, S, V) with self = U diag(S) Vᵀ (V, not linalg.svd's Vh); some=False: full U and V.
        compute_uv=False: U and V are zeros of the full shapes, as torch's."""
        linalg = _linalg()
        if not compute_uv:
            s = linalg.svdvals(self)
            xp_zeros = _zeros_like_shape(self)
            m, n = self.shape[-2:]
            return SVDResult(xp_zeros(self.shape[:-2] + (m, m)), s, xp_zeros(self.shape[:-2] + (n, n)))
        u, s, vh = linalg.svd(self, full_matrices=not some)
        return SVDResult(u, s, vh.mT)

    def qr(self, some: bool = True) -> Any:
        return QRResult(*_linalg().qr(self, "reduced" if some else "complete"))

    def cholesky(self, upper: bool = False) -> Any:
        return _linalg().cholesky(self, upper=upper)

    # ---- special functions --------------------------------------------------------------------------------------
    def lgamma(self) -> Any:
        return _special().gammaln(self)

    def digamma(self) -> Any:
        return _special().digamma(self)

    def polygamma(self, n: int) -> Any:
        return _special().polygamma(n, self)

    def erfinv(self) -> Any:
        return _special().erfinv(self)

    def erfc(self) -> Any:
        return _special().erfc(self)

    def sinc(self) -> Any:
        return _special().sinc(self)

    def i0(self) -> Any:
        return _special().i0(self)

    def mvlgamma(self, p: int) -> Any:
        return _special().multigammaln(self, p)

    # in place: the out-of-place result written into this tensor (InPlaceMethods._replace_: refused in a graph,
    # and for an integer tensor, whose dtype cannot hold the float result, as torch)
    def lgamma_(self) -> Any:
        return self._replace_("lgamma_", self.lgamma)

    def digamma_(self) -> Any:
        return self._replace_("digamma_", self.digamma)

    def polygamma_(self, n: int) -> Any:
        return self._replace_("polygamma_", lambda: self.polygamma(n))

    def erfinv_(self) -> Any:
        return self._replace_("erfinv_", self.erfinv)

    def erfc_(self) -> Any:
        return self._replace_("erfc_", self.erfc)

    def sinc_(self) -> Any:
        return self._replace_("sinc_", self.sinc)

    def i0_(self) -> Any:
        return self._replace_("i0_", self.i0)

    def mvlgamma_(self, p: int) -> Any:
        return self._replace_("mvlgamma_", lambda: self.mvlgamma(p))


def _zeros_like_shape(t):
    from seqlab import backend

    xp = backend.xp_of(t.data)
    return lambda shape: _tensor_class()._from_op(xp.zeros(shape, dtype=t.dtype), None)


# ---- torch.* functions --------------------------------------------------------------------------------------------
TOPLEVEL = ["det", "logdet", "slogdet", "inverse", "matrix_power", "pinverse", "svd", "qr", "cholesky", "lgamma",
            "digamma", "polygamma", "erfinv", "erfc", "sinc", "i0", "mvlgamma"]


def _input(name: str, input):  # noqa: A002 (torch's name)
    T = _tensor_class()
    if isinstance(input, T):
        return input
    if hasattr(input, "dtype") and hasattr(input, "shape"):  # an array (seqlab's p.grad), as torch.* take tensors
        return T(input)
    raise TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")


def det(input) -> Any:  # noqa: A002
    return _input("det", input).det()


def logdet(input) -> Any:  # noqa: A002
    return _input("logdet", input).logdet()


def slogdet(input) -> Any:  # noqa: A002
    return _input("slogdet", input).slogdet()


def inverse(input) -> Any:  # noqa: A002
    return _input("inverse", input).inverse()


def matrix_power(input, n: int) -> Any:  # noqa: A002
    return _input("matrix_power", input).matrix_power(n)


def pinverse(input, rcond: float = 1e-15) -> Any:  # noqa: A002
    return _input("pinverse", input).pinverse(rcond)


def svd(input, some: bool = True, compute_uv: bool = True) -> Any:  # noqa: A002
    """torch.svd: (U, S, V), V not transposed (seqlab.linalg.svd returns Vh)."""
    return _input("svd", input).svd(some, compute_uv)


def qr(input, some: bool = True) -> Any:  # noqa: A002
    return _input("qr", input).qr(some)


def cholesky(input, upper: bool = False) -> Any:  # noqa: A002
    return _input("cholesky", input).cholesky(upper)


def lgamma(input) -> Any:  # noqa: A002
    return _input("lgamma", input).lgamma()


def digamma(input) -> Any:  # noqa: A002
    return _input("digamma", input).digamma()


def polygamma(n: int, input) -> Any:  # noqa: A002
    """torch.polygamma(n, input): n first, as torch's."""
    return _input("polygamma", input).polygamma(n)


def erfinv(input) -> Any:  # noqa: A002
    return _input("erfinv", input).erfinv()


def erfc(input) -> Any:  # noqa: A002
    return _input("erfc", input).erfc()


def sinc(input) -> Any:  # noqa: A002
    return _input("sinc", input).sinc()


def i0(input) -> Any:  # noqa: A002
    return _input("i0", input).i0()


def mvlgamma(input, p: int) -> Any:  # noqa: A002
    return _input("mvlgamma", input).mvlgamma(p)
