"""Activation primitives (the chapter's 7.1.2), each with its derivative.

Each `backward_graph` is its `backward` written with Tensor ops, for create_graph=True (higher_order.py).
"""
from __future__ import annotations

import math

import numpy as np

from seqlab import kernels
from seqlab.autograd.function import Function
from seqlab.autograd.higher_order import constant, graph_input, graph_output
from seqlab.autograd.ops.elementwise import Exp
from seqlab.backend import CACHE_BLOCK, flat_blocks, xp_of
from seqlab.mkl import cdf_norm as mkl_cdf_norm
from seqlab.mkl import exp as mkl_exp

_SQRT_2 = math.sqrt(2.0)
_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)


def erf(x):
    """The error function on NumPy or CuPy arrays (SciPy's, exact to float64)."""
    xp = xp_of(x)
    if xp.__name__ == "cupy":  # pragma: no cover - needs a GPU
        from cupyx.scipy.special import erf as cupy_erf

        return cupy_erf(x)
    from scipy.special import erf as scipy_erf

    return scipy_erf(x)


def sigmoid_array(x):
    """1 / (1 + e^-x) without overflow for any x: the chapter clips x to [-500, 500];
    here e^-|x| never overflows, and the two branches are the same formula."""
    xp = xp_of(x)
    e = xp.exp(-xp.abs(x))
    return xp.where(x >= 0, 1 / (1 + e), e / (1 + e))


class Sigmoid(Function):
    def forward(self, a):
        out = sigmoid_array(a)
        self.save_for_backward(out)
        return out

    def backward(self, grad):
        (s,) = self.saved
        return (grad * s * (1 - s),)  # σ' = σ(1 − σ)

    def backward_graph(self, g):
        s = graph_output(self, self.saved[0])
        return (g * s * (1 - s),)


class Tanh(Function):
    def forward(self, a):
        out = xp_of(a).tanh(a)
        self.save_for_backward(out)
        return out

    def backward(self, grad):
        (t,) = self.saved
        return (grad * (1 - t * t),)  # tanh' = 1 − tanh²

    def backward_graph(self, g):
        t = graph_output(self, self.saved[0])
        return (g * (1 - t * t),)


class ReLU(Function):
    def forward(self, a):
        out = xp_of(a).maximum(a, 0)
        self.save_for_backward(out)
        return out

    def backward(self, grad):
        (out,) = self.saved
        return (grad * (out > 0),)

    def backward_graph(self, g):
        return (g * constant((self.saved[0] > 0).astype(g.dtype)),)


# Φ(x) ≈ ½(1 + tanh(x·P(x²))) for |x| ≤ _TANH_CLIP, P of degree 7 (coefficients from s⁰ up): a weighted
# least-squares fit of artanh(erf(x/√2))/x in s = x², reproduced by `fit_tanh_cdf` (tests re-run it)
_TANH_CDF = (7.97885152e-01, 3.63319829e-02, -3.11358445e-05, -5.60600982e-05, 4.14346443e-06, -1.52702770e-07,
             2.83479384e-09, -2.07066159e-11)
_TANH_CLIP = 6.5  # beyond it tanh(x·P) is ±1 in float32: Φ is exactly 0 or 1


def fit_tanh_cdf(degree: int = 7, clip: float = _TANH_CLIP, nodes: int = 4000) -> np.ndarray:
    """The coefficients of P in Φ(x) ≈ ½(1 + tanh(x·P(x²))), in float64, s⁰ first.

    P(s) = artanh(erf(x/√2))/x at Chebyshev nodes s = x² ∈ [0, clip²], fitted
    by least squares weighted by dΦ/dP = ½(1 − tanh²)·x, so what is minimised
    is the error in Φ itself.
    """
    s = (np.cos(np.pi * (np.arange(nodes) + 0.5) / nodes) + 1) / 2 * clip ** 2
    x = np.sqrt(s)
    y = np.arctanh(np.minimum(erf(x / _SQRT_2), 1 - 1e-16))
    p = np.where(x > 1e-8, y / np.maximum(x, 1e-300), np.sqrt(2 / np.pi))
    w = np.maximum(0.5 * (1 - np.tanh(y) ** 2) * x, 1e-6)
    return np.polynomial.polynomial.polyfit(s, p, degree, w=w)


def normal_cdf(x):
    """Φ(x) = ½(1 + erf(x/√2)), the standard normal CDF.

    float64 (and CuPy) use SciPy's erf. float32 on NumPy uses the fast path
    `normal_cdf_float32`, held to SciPy by a test (within float32 precision).
    """
    if x.dtype == np.float32 and xp_of(x) is np:
        return normal_cdf_float32(x)
    return 0.5 * (1 + erf(x / _SQRT_2))


def run_blocked(kernel, arrays: list, n_scratch: int = 0, block: int = CACHE_BLOCK) -> None:
    """kernel(*blocks, *scratch) on consecutive 1-D blocks of the flattened `arrays`.

    All `arrays` have the same size and are C-contiguous (outputs are written
    through the block views); `scratch` are block-sized temporaries allocated
    once. A NumPy ufunc pass over a block that stays in cache costs ~60% of a
    pass over a whole large array, and a kernel makes 7-9 passes. On CuPy the
    whole array is one block.
    """
    assert all(a.flags.c_contiguous for a in arrays), "run_blocked writes through views: C-contiguous only"
    blocks = flat_blocks(arrays, block)
    scratch = xp_of(arrays[0]).empty((n_scratch, blocks[0][0].size if blocks else 0), dtype=arrays[0].dtype)
    for bs in blocks:
        kernel(*bs, *(b[:bs[0].size] for b in scratch))


def _c_order(a):
    """`a` itself when C-contiguous, else a C-ordered copy (ascontiguousarray would make 0-d arrays 1-d)."""
    return a if a.flags.c_contiguous else a.copy(order="C")


def normal_cdf_float32(x: np.ndarray, gelu_out: np.ndarray | None = None, keep_cdf: bool = True):
    """Φ(x) in float32, ~5x faster than SciPy's float32 erf; absolute error < 1.2e-7.

    Plain formula: ½(1 + erf(x/√2)). Here ½(1 + tanh(x·P(x²))) with x
    clipped to ±6.5 and P the degree-7 polynomial `_TANH_CDF` (see
    `fit_tanh_cdf`): 20 array passes, with NumPy's vectorised tanh doing
    what erf would, instead of ~30 passes for an erfc fit (exp, reciprocal,
    a sign select). Far in the negative tail the error is absolute, not
    relative (Φ(−5) ≈ 2.9e-7 comes out within 3e-8), as in torch's float32
    GELU. Computed in blocks that stay in cache, in place (`run_blocked`).
    With `gelu_out` (a C-contiguous float32 array shaped like x), also writes
    GELU(x) = x·Φ(x) there, block by block while the block is in cache; with
    `keep_cdf=False` too, Φ only passes through one block-sized buffer and
    None is returned.
    """
    x = _c_order(x)
    if gelu_out is None:
        out = np.empty(x.shape, dtype=x.dtype)
        run_blocked(_normal_cdf_block, [x, out], n_scratch=2)
        return out
    if not keep_cdf:
        run_blocked(_gelu_erf_forward_block, [x, gelu_out], n_scratch=3)  # Φ in a scratch block
        return None
    out = np.empty(x.shape, dtype=x.dtype)
    run_blocked(_gelu_erf_forward_block, [x, gelu_out, out], n_scratch=2)
    return out


def _normal_cdf_block(x, cdf, c, s):
    """cdf = ½(1 + tanh(c·P(c²))), c = x clipped to ±6.5 (P: `_TANH_CDF`, Horner);  c, s: scratch."""
    if mkl_cdf_norm(x, cdf):                # MKL's vmsCdfNorm when seqlab uses MKL (seqlab.mkl): one pass
        return
    f = np.float32
    np.clip(x, f(-_TANH_CLIP), f(_TANH_CLIP), out=c)
    np.multiply(c, c, out=s)                # s = x²
    np.multiply(s, f(_TANH_CDF[7]), out=cdf)
    for a in _TANH_CDF[6:0:-1]:             # Horner
        cdf += f(a)
        cdf *= s
    cdf += f(_TANH_CDF[0])                  # P(x²)
    cdf *= c
    np.tanh(cdf, out=cdf)
    cdf *= f(0.5)
    cdf += f(0.5)                           # ½(1 + tanh(x·P(x²)))


def _gelu_erf_forward_block(x, gelu, cdf, c, s):
    """cdf = Φ(x) (`_normal_cdf_block`), gelu = x·Φ(x)."""
    _normal_cdf_block(x, cdf, c, s)
    np.multiply(x, cdf, out=gelu)


def _gelu_tanh_forward_block(x, out, h):
    """h = ½(1 + tanh u) = 1/(1 + e^(−2u)), u = √(2/π)(x + 0.044715x³);  out = x·h.  (8 passes, in place.)

    The logistic form has the same number of passes as ½(1 + tanh u) and keeps
    h accurate relative to itself where it is tiny (x ≪ 0), instead of a
    difference of numbers near ±1; e^(−2u) overflowing to inf gives h = 0.
    """
    f, xp = x.dtype.type, xp_of(x)
    xp.multiply(x, x, out=h)
    h *= f(-2 * 0.044715 * _SQRT_2_OVER_PI)
    h += f(-2 * _SQRT_2_OVER_PI)
    h *= x                                   # −2u = −2x·√(2/π)(1 + 0.044715x²)
    if not mkl_exp(h, h):
        xp.exp(h, out=h)
    h += f(1)
    xp.reciprocal(h, out=h)                  # h = 1/(1 + e^(−2u))
    xp.multiply(x, h, out=out)


# |x| < 2^-60: h = ½(1 + tanh u) and Φ(x) are ½ to float64 precision, and y = x·h may be subnormal, so y/x
# would not give them back; the backward kernels test x² against this (x² is their first pass anyway)
_TINY_SQUARE = 2.0 ** -120


def _recover_factor(x, y, xsq, out) -> None:
    """out = y / x, the factor h or Φ(x) of GELU's output y = x·h, given x² in `xsq`; ½ where x ≈ 0.

    One rounding more than keeping the factor (y was rounded once): relative error < 2 ulp.
    """
    xp = xp_of(x)
    with np.errstate(divide="ignore", invalid="ignore"):  # x = 0 gives inf or nan, replaced next
        xp.divide(y, x, out=out)
    xp.copyto(out, x.dtype.type(0.5), where=xsq < x.dtype.type(_TINY_SQUARE))


def _gelu_tanh_backward_block(x, y, grad, out, h, tmp):
    """d/dx x·h = h + x·h', h = ½(1 + tanh u), h' = ½(1 − t²)·u' = 2h(1 − h)·u' (1 ± t = 2h, 2(1 − h)),
    u' = √(2/π)(1 + 3·0.044715x²). From the output y = x·h: h = y/x and x(1 − h) = x − y (exact in
    floating point where h ≥ ½), so  dx = g · h · (1 + 2u'·(x − y)).  (11 passes, in place.)"""
    f, xp = x.dtype.type, xp_of(x)
    xp.multiply(x, x, out=out)
    _recover_factor(x, y, out, h)
    out *= f(6 * 0.044715 * _SQRT_2_OVER_PI)
    out += f(2 * _SQRT_2_OVER_PI)            # 2u'
    xp.subtract(x, y, out=tmp)
    out *= tmp
    out += f(1)
    out *= h
    out *= grad


def _gelu_erf_backward_block(x, y, grad, out, cdf):
    """Φ(x) from the output (y/x), then d/dx x·Φ(x) = Φ(x) + x·φ(x), φ(x) = e^(−x²/2)/√(2π).  (10 passes, in place.)"""
    f, xp = x.dtype.type, xp_of(x)
    xp.multiply(x, x, out=out)
    if not mkl_cdf_norm(x, cdf):             # with MKL: Φ(x) itself, in one pass instead of three
        _recover_factor(x, y, out, cdf)
    out *= f(-0.5)
    if not mkl_exp(out, out):
        xp.exp(out, out=out)
    out *= f(_INV_SQRT_2PI)                  # φ(x)
    out *= x
    out += cdf
    out *= grad


class GELU(Function):
    """GELU(x) = x Φ(x); approximate='tanh' uses 0.5x(1 + tanh(√(2/π)(x + 0.044715x³))).

    d/dx x Φ(x) = Φ(x) + x φ(x), φ(x) = e^(−x²/2)/√(2π). Forward and backward
    run block by block (`run_blocked`); the kernels above hold the formulas.
    With Numba, float32 on the CPU runs them as one compiled pass instead
    (`seqlab.kernels.gelu_forward` / `gelu_backward`, the same Φ fit; backward
    also takes Φ(x) as y/x there).
    Backward keeps x and the output y = x·Φ(x) (or x·h, h = ½(1 + tanh u)),
    and gets Φ(x) (or h) back as y/x: the output is usually saved anyway by
    the layer that reads it (the feed-forward's second Linear), so GELU adds
    only x to what a training step holds, as torch's does; nothing under no_grad.
    """

    def forward(self, a, approximate="none"):
        xp = xp_of(a)
        a = _c_order(a)
        self.approximate = approximate
        out = xp.empty(a.shape, dtype=a.dtype)
        if any(self.needs_input_grad):       # only if a backward will read them
            self.save_for_backward(a, out)
        if kernels.gelu_forward(a, approximate, out=out) is not None:  # compiled, one pass (seqlab.kernels)
            return out
        if approximate == "tanh":
            with np.errstate(over="ignore"):  # e^(−2u) = inf far left of 0: h = 0, as it should be
                run_blocked(_gelu_tanh_forward_block, [a, out], n_scratch=1)
            return out
        if a.dtype == np.float32 and xp is np:  # the blocked float32 kernel (plain formula below)
            normal_cdf_float32(a, gelu_out=out, keep_cdf=False)
            return out
        xp.multiply(a, normal_cdf(a), out=out)
        return out

    def backward(self, grad):
        x, y = self.saved
        xp = xp_of(x)
        grad = _c_order(grad)
        fast = kernels.gelu_backward(x, grad, self.approximate, y=y)
        if fast is not None:
            return (fast,)
        out = xp.empty(x.shape, dtype=x.dtype)
        if self.approximate == "tanh":
            run_blocked(_gelu_tanh_backward_block, [x, y, grad, out], n_scratch=2)
        else:
            run_blocked(_gelu_erf_backward_block, [x, y, grad, out], n_scratch=1)
        return (out,)

    def backward_graph(self, g):
        return (g * gelu_derivative_graph(graph_input(self, 0, self.saved[0]), self.approximate),)


def gelu_derivative_graph(x, approximate: str = "none"):
    """GELU'(x) for a Tensor x, with Tensor ops (for create_graph=True): the kernels' formulas, plainly,
    Φ(x) + x·φ(x), or h + x·½(1 − t²)·u' for the tanh form. GELU's and BiasActDropout's backward_graph."""
    from seqlab.autograd.ops.pointwise import Erf  # pointwise imports this module

    if approximate == "tanh":
        u = (x + 0.044715 * x * x * x) * _SQRT_2_OVER_PI
        t = Tanh.apply(u)
        du = (1 + 3 * 0.044715 * x * x) * _SQRT_2_OVER_PI
        return 0.5 * (1 + t) + x * 0.5 * (1 - t * t) * du
    cdf = 0.5 * (1 + Erf.apply(x / _SQRT_2))
    pdf = Exp.apply(-0.5 * x * x) * _INV_SQRT_2PI
    return cdf + x * pdf


class SiLU(Function):
    def forward(self, a):
        s = sigmoid_array(a)
        self.save_for_backward(a, s)
        return a * s

    def backward(self, grad):
        a, s = self.saved
        return (grad * s * (1 + a * (1 - s)),)

    def backward_graph(self, g):
        a = graph_input(self, 0, self.saved[0])
        s = Sigmoid.apply(a)
        return (g * s * (1 + a * (1 - s)),)


class LogSigmoid(Function):
    """log σ(x) = min(x, 0) − log(1 + e^−|x|), finite for any x; d/dx = 1 − σ(x) = σ(−x)."""

    def forward(self, a):
        xp = xp_of(a)
        self.save_for_backward(a)
        return xp.minimum(a, 0) - xp.log1p(xp.exp(-xp.abs(a)))

    def backward(self, grad):
        (a,) = self.saved
        return (grad * sigmoid_array(-a),)

    def backward_graph(self, g):
        return (g * Sigmoid.apply(-graph_input(self, 0, self.saved[0])),)
