"""Row kernels compiled by Numba; `seqlab.kernels` imports this module only when Numba is chosen.

Each `_..._rows` function is the loop a textbook would write, for rows lo..hi,
so a row is read from memory once and its passes run in cache, where NumPy
makes one pass over the whole array per operation (element-wise kernels,
`_..._values`, take flat blocks of values the same way). float32 in, float32
out, float32 sums (as NumPy's). `fastmath` here allows only reordering sums
into SIMD lanes and fusing a multiply and an add ("reassoc", "contract"):
results match the NumPy path within float32 rounding, −inf and NaN behave as
there, and divisions stay divisions (so a softmax computed again from its
saved row statistics is bitwise the forward's); Adam's update takes no
fastmath at all and is NumPy's formula bitwise, and dropout's masks are
integer hashes of a counter (SplitMix64, seqlab.random), the NumPy formula's
bits. The plain NumPy formulas are
in seqlab.autograd.ops.fused and .activation; tests/test_kernels.py holds
each kernel to them and to float64.

The softmax and GELU need e^x inside their loops. NumPy's exp is a whole-array
pass and Numba's a call to the C library for each value, which stops the loop
from being vectorised; `_exp` is e^x written out (a power of two from its bits
times a short series, within 2 ulp), which the compiler inlines and
vectorises with the rest of the loop.

Every kernel comes twice: `name(...)` runs the blocks one after another,
`name_parallel(...)` hands them to Numba's thread pool (`prange`). Both cut
the rows into the same blocks of `ROWS` (`FLAT` values for the element-wise
kernels) and LayerNorm's backward sums its per-block partial weight gradients
in block order, so the two give the same values bitwise, on any number of
threads. (The two sums `add_parallel` and `add_rows_parallel` have no serial
twin: on one thread NumPy's loop is the same.)

Attention on short sequences (`short_attention_forward` / `_backward`) goes
one step further: a whole head's products, softmax and gradients in one
pass, its matrix products on a small vector tile written as LLVM IR (see its
section below); its parallel twin shares out whole heads, each computed as
on one thread.

Compiled on first use and cached next to this file (or in Numba's user cache
folder when that is read-only), so later processes load them in milliseconds.
"""
from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import carray, njit, prange
from numba.core import cgutils, types
from numba.extending import intrinsic

ROWS = 32  # rows per block
FLAT = 1 << 14  # values per block of dropout's flat arrays
_FAST = {"reassoc", "contract"}
_jit = njit(cache=True, nogil=True, fastmath=_FAST)
_jit_parallel = njit(cache=True, nogil=True, fastmath=_FAST, parallel=True)
# error_model="numpy": a division is a plain division (Numba's default Python model tests every divisor
# for zero first, and a loop with that test in it is not vectorised)
_jit_sums = njit(cache=True, nogil=True, fastmath=_FAST, error_model="numpy")
_jit_sums_parallel = njit(cache=True, nogil=True, fastmath=_FAST, error_model="numpy", parallel=True)


@_jit
def _blocks(n, size):  # pragma: no cover - compiled
    """How many blocks of `size` cover n."""
    return (n + size - 1) // size


# ---- LayerNorm -----------------------------------------------------------------------------

@_jit
def _layer_norm_forward_rows(x, w, b, eps, y, mean, rstd, lo, hi):  # pragma: no cover - compiled
    """Per row: μ = mean(x), r = 1/√(mean((x − μ)²) + eps), y = (x − μ)·r·w + b; μ and r kept. Backward
    computes x̂ = (x − μ)·r again from x: storing it here as well would be a second output as large as y
    (to memory not in cache, inside a model: about as long as the rest of the kernel)."""
    d = x.shape[1]
    inv_d = np.float32(1.0) / np.float32(d)
    for i in range(lo, hi):
        s = np.float32(0.0)
        for j in range(d):
            s += x[i, j]
        mu = s * inv_d
        v = np.float32(0.0)
        for j in range(d):
            c = x[i, j] - mu
            v += c * c
        r = np.float32(1.0) / np.sqrt(v * inv_d + eps)
        mean[i] = mu
        rstd[i] = r
        for j in range(d):
            h = (x[i, j] - mu) * r
            y[i, j] = h * w[j] + b[j]


@_jit
def layer_norm_forward(x, w, b, eps, y, mean, rstd):  # pragma: no cover - compiled
    """x, y (N, D); w, b (D,); mean, rstd (N,)."""
    n = x.shape[0]
    for c in range(_blocks(n, ROWS)):
        _layer_norm_forward_rows(x, w, b, eps, y, mean, rstd, c * ROWS, min(n, (c + 1) * ROWS))


@_jit_parallel
def layer_norm_forward_parallel(x, w, b, eps, y, mean, rstd):  # pragma: no cover - compiled
    n = x.shape[0]
    for c in prange(_blocks(n, ROWS)):
        _layer_norm_forward_rows(x, w, b, eps, y, mean, rstd, c * ROWS, min(n, (c + 1) * ROWS))


@_jit
def _layer_norm_backward_rows(g, x, mean, rstd, w, gx, gw, gb, lo, hi):  # pragma: no cover - compiled
    """Per row, with x̂ = (x − μ)·r (as the forward computed it) and ĝ = g ⊙ w:
    gx = r·(ĝ − mean(ĝ) − x̂·mean(ĝ ⊙ x̂)); and gw += g ⊙ x̂, gb += g."""
    d = g.shape[1]
    inv_d = np.float32(1.0) / np.float32(d)
    for i in range(lo, hi):
        mu = mean[i]
        r = rstd[i]
        s1 = np.float32(0.0)
        s2 = np.float32(0.0)
        for j in range(d):
            h = (x[i, j] - mu) * r
            gh = g[i, j] * w[j]
            s1 += gh
            s2 += gh * h
            gw[j] += g[i, j] * h
            gb[j] += g[i, j]
        m1 = s1 * inv_d
        m2 = s2 * inv_d
        for j in range(d):
            h = (x[i, j] - mu) * r
            gx[i, j] = (g[i, j] * w[j] - m1 - h * m2) * r


@_jit
def _sum_blocks(partial, out):  # pragma: no cover - compiled
    """out = Σ over the first axis of `partial`, in block order."""
    for c in range(partial.shape[0]):
        for j in range(partial.shape[1]):
            out[j] += partial[c, j]


# ---- column sums (a bias's gradient) ------------------------------------------------------------------
# NumPy's einsum("ij->j") on a C-order array: 33 us at (768, 384) and 59 at (2048, 256), against 21 and 31
# here, where each block of rows is summed down its columns on whole vectors. No parallel twin: on two
# threads gpt-train's twelve a step took 0.62 ms shared out, 0.22 on one (likely: the rows are in the cache
# of the core whose op wrote them).

@_jit
def _column_sums_rows(a, out, lo, hi):  # pragma: no cover - compiled
    """out += Σ a[lo:hi] over the rows, in row order."""
    for i in range(lo, hi):
        row = a[i]
        for j in range(out.shape[0]):
            out[j] += row[j]


@_jit
def column_sums(a, out):  # pragma: no cover - compiled
    """a (N, D); out (D,) zeroed by the caller."""
    n, d = a.shape
    nb = _blocks(n, ROWS)
    pb = np.zeros((nb, d), np.float32)
    for c in range(nb):
        _column_sums_rows(a, pb[c], c * ROWS, min(n, (c + 1) * ROWS))
    _sum_blocks(pb, out)


@_jit
def layer_norm_backward(g, x, mean, rstd, w, gx, gw, gb):  # pragma: no cover - compiled
    """g, x, gx (N, D); mean, rstd (N,); w, gw, gb (D,), gw and gb zeroed by the caller."""
    n, d = g.shape
    nb = _blocks(n, ROWS)
    pw = np.zeros((nb, d), np.float32)  # each block's own Σ g ⊙ x̂ and Σ g
    pb = np.zeros((nb, d), np.float32)
    for c in range(nb):
        _layer_norm_backward_rows(g, x, mean, rstd, w, gx, pw[c], pb[c], c * ROWS, min(n, (c + 1) * ROWS))
    _sum_blocks(pw, gw)
    _sum_blocks(pb, gb)


@_jit_parallel
def layer_norm_backward_parallel(g, x, mean, rstd, w, gx, gw, gb):  # pragma: no cover - compiled
    n, d = g.shape
    nb = _blocks(n, ROWS)
    pw = np.zeros((nb, d), np.float32)
    pb = np.zeros((nb, d), np.float32)
    for c in prange(nb):
        _layer_norm_backward_rows(g, x, mean, rstd, w, gx, pw[c], pb[c], c * ROWS, min(n, (c + 1) * ROWS))
    _sum_blocks(pw, gw)
    _sum_blocks(pb, gb)


# ---- e^x, inlined -----------------------------------------------------------------------------
# Element-wise, so no sums to reorder: "contract" only, which keeps exp's two-part ln 2 below exact
# (the flags stay with these functions' instructions where they are inlined into a caller's loop).
_jit_values = njit(cache=True, nogil=True, fastmath={"contract"}, error_model="numpy")
_f = np.float32
_ONE, _HALF = _f(1.0), _f(0.5)
_LOG2E = _f(1.4426950408889634)
_LN2_HI = _f(0.693359375)  # ln 2 = HI + LO with HI's 9 significant bits: k·HI is exact for |k| < 2^15
_LN2_LO = _f(-2.12194440e-4)
_EXP_MIN, _EXP_MAX = _f(-87.0), _f(88.0)  # 2^k stays a normal float32 for k in [-126, 127]


@intrinsic
def _float32_from_bits(typingctx, bits):
    """The float32 whose IEEE 754 bits are the int32 `bits` (a bit cast: no instruction in the loop)."""
    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], context.get_value_type(types.float32))

    return types.float32(types.int32), codegen


@_jit_values
def _exp_in_range(v):  # pragma: no cover - compiled
    """e^v in float32, within 2 ulp, for −87 ≤ v ≤ 88 only: `_exp` without its range checks, for callers
    whose argument cannot leave that range (GELU's Φ: |v| < 24).

    v = k·ln 2 + r with k an integer and |r| ≤ ½ ln 2, e^r by its Taylor series to r⁷ (the next term
    is < 5e-9 relative), 2^k built from its bits.
    """
    k = np.floor(v * _LOG2E + _HALF)
    r = v - k * _LN2_HI - k * _LN2_LO
    p = _ONE + r * (_ONE + r * (_HALF + r * (_f(1 / 6) + r * (_f(1 / 24) + r * (_f(1 / 120) + r * (
        _f(1 / 720) + r * _f(1 / 5040)))))))
    return p * _float32_from_bits((np.int32(k) + np.int32(127)) << 23)


@_jit_values
def _exp(v):  # pragma: no cover - compiled
    """e^v in float32, within 2 ulp for −87 ≤ v ≤ 88; 0 below, inf above, NaN for NaN.
    NumPy's and Numba's exp are calls the compiler cannot vectorise; this inlines."""
    under = v < _EXP_MIN
    over = v > _EXP_MAX
    e = _exp_in_range(_EXP_MIN if under else (_EXP_MAX if over else v))
    return _f(0.0) if under else (_f(np.inf) if over else e)


# ---- softmax ---------------------------------------------------------------------------------

@_jit_values
def _exp_at_most_0(v):  # pragma: no cover - compiled
    """`_exp` for v ≤ 0 (the softmax's x − max): 0 below −87, NaN for NaN, without the check above 88."""
    under = v < _EXP_MIN
    e = _exp_in_range(_EXP_MIN if under else v)
    return _f(0.0) if under else e


@_jit
def _row_max(row, k):  # pragma: no cover - compiled
    """max(row[0..k]), NaN ignored unless it is row[0] (a row with a NaN gives NaN anyway, through its sum).

    Four running maxima, merged at the end: one chain of compares is bound by each compare's latency, and
    the compiler does not vectorise a max without being told there are no NaN. A max is exact, so the
    order gives the same value (the ±0 tie aside, which e^(x − max) does not see).
    """
    if k < 8:
        mx = row[0]
        for j in range(1, k):
            mx = row[j] if row[j] > mx else mx
        return mx
    a, b, c, d = row[0], row[1], row[2], row[3]
    j = 4
    while j + 4 <= k:
        a = row[j] if row[j] > a else a
        b = row[j + 1] if row[j + 1] > b else b
        c = row[j + 2] if row[j + 2] > c else c
        d = row[j + 3] if row[j + 3] > d else d
        j += 4
    while j < k:
        a = row[j] if row[j] > a else a
        j += 1
    a = b if b > a else a
    c = d if d > c else c
    return c if c > a else a


@_jit_sums
def _softmax_rows(s, m, t, have_stats, bias, brow, lo, hi):  # pragma: no cover - compiled
    """Per row, in place: s = e^(s − max) / Σ e^(s − max) (`_exp`), the max and the sum stored in m and t;
    a row of −inf only gives 0s (max 0, sum 1). `have_stats`: m and t are given and used (no reductions),
    so the same row gives the same values bitwise. `bias` (R, K) with rows: row i first gets
    bias[brow[i]] added (a mask's −inf, a position bias) while the row is in cache: with `stats` inside the
    loop of e^x, else in a loop of its own (inside the max's four chains, its stores made that loop slower)."""
    k = s.shape[1]
    with_bias = bias.shape[0] != 0
    for i in range(lo, hi):
        row = s[i]
        if have_stats:
            mx = m[i]
            if with_bias:
                br = bias[brow[i]]
                for j in range(k):
                    row[j] = _exp_at_most_0((row[j] + br[j]) - mx)
            else:
                for j in range(k):
                    row[j] = _exp_at_most_0(row[j] - mx)
            total = t[i]
        else:
            if with_bias:
                br = bias[brow[i]]
                for j in range(k):
                    row[j] += br[j]
            mx = _row_max(row, k)
            if mx == -np.inf:
                mx = _f(0.0)
            m[i] = mx
            total = _f(0.0)
            for j in range(k):
                e = _exp_at_most_0(row[j] - mx)
                row[j] = e
                total += e
            if total == 0:
                total = _ONE
            t[i] = total
        for j in range(k):
            row[j] /= total


@_jit_sums
def softmax(s, m, t, have_stats, bias, brow):  # pragma: no cover - compiled
    """s (N, K) in place; m, t (N,); bias (R, K) and brow (N,) ints, or bias of shape (0, K): none."""
    n = s.shape[0]
    for c in range(_blocks(n, ROWS)):
        _softmax_rows(s, m, t, have_stats, bias, brow, c * ROWS, min(n, (c + 1) * ROWS))


@_jit_sums_parallel
def softmax_parallel(s, m, t, have_stats, bias, brow):  # pragma: no cover - compiled
    n = s.shape[0]
    for c in prange(_blocks(n, ROWS)):
        _softmax_rows(s, m, t, have_stats, bias, brow, c * ROWS, min(n, (c + 1) * ROWS))


# ---- log-softmax and the cross-entropy's gradient ----------------------------------------------
# `fused.log_softmax_array` (LogSoftmax, CrossEntropy's forward) and `CrossEntropy.backward` on NumPy run five
# to eight passes over the (N, C) logits (max, subtract, exp, sum, log, subtract; exp, index, scale); these
# make one pass a row that reads it three times while it is in cache.

@_jit_sums
def _log_softmax_rows(x, out, lo, hi):  # pragma: no cover - compiled
    """Per row: out = (x − max) − log Σ e^(x − max). A row holding a NaN or +inf, or only −inf, gives NaN
    throughout, as the NumPy formula does (its sum is NaN)."""
    k = x.shape[1]
    for i in range(lo, hi):
        row, o = x[i], out[i]
        mx = _row_max(row, k)
        total = _f(0.0)
        for j in range(k):
            total += _exp_at_most_0(row[j] - mx)
        lse = np.log(total)
        for j in range(k):
            o[j] = (row[j] - mx) - lse


@_jit_sums
def log_softmax(x, out):  # pragma: no cover - compiled
    """x, out (N, C) float32."""
    n = x.shape[0]
    for c in range(_blocks(n, ROWS)):
        _log_softmax_rows(x, out, c * ROWS, min(n, (c + 1) * ROWS))


@_jit_sums_parallel
def log_softmax_parallel(x, out):  # pragma: no cover - compiled
    n = x.shape[0]
    for c in prange(_blocks(n, ROWS)):
        _log_softmax_rows(x, out, c * ROWS, min(n, (c + 1) * ROWS))


@_jit_sums
def _cross_entropy_grad_rows(logp, target, scale, eps_c, one_eps, out, lo, hi):  # pragma: no cover - compiled
    """Per row i: out = (e^logp − ε/C, and − (1 − ε) at target[i]) · scale[i], in NumPy's order of operations
    (`CrossEntropy.backward`); eps_c = ε/C and one_eps = 1 − ε as float32, ε/C skipped when 0."""
    k = logp.shape[1]
    for i in range(lo, hi):
        row, o, s = logp[i], out[i], scale[i]
        for j in range(k):
            v = _exp(row[j])
            if eps_c != 0:
                v -= eps_c
            o[j] = v * s
        t = target[i]
        v = _exp(row[t])
        if eps_c != 0:
            v -= eps_c
        o[t] = (v - one_eps) * s


@_jit_sums
def cross_entropy_backward(logp, target, scale, eps_c, one_eps, out):  # pragma: no cover - compiled
    """logp, out (N, C) float32; target (N,) int64, each in 0..C − 1; scale (N,) float32."""
    n = logp.shape[0]
    for c in range(_blocks(n, ROWS)):
        _cross_entropy_grad_rows(logp, target, scale, eps_c, one_eps, out, c * ROWS, min(n, (c + 1) * ROWS))


@_jit_sums_parallel
def cross_entropy_backward_parallel(logp, target, scale, eps_c, one_eps, out):  # pragma: no cover - compiled
    n = logp.shape[0]
    for c in prange(_blocks(n, ROWS)):
        _cross_entropy_grad_rows(logp, target, scale, eps_c, one_eps, out, c * ROWS, min(n, (c + 1) * ROWS))


@_jit
def _softmax_backward_rows(g, w, scale, out, lo, hi):  # pragma: no cover - compiled
    """Per row: out = w ⊙ (g − Σ g ⊙ w) · scale, the softmax's input gradient (scale 1: exactly that;
    attention folds its 1/√d in here). `out` may be `g`."""
    k = g.shape[1]
    for i in range(lo, hi):
        t = np.float32(0.0)
        for j in range(k):
            t += g[i, j] * w[i, j]
        for j in range(k):
            out[i, j] = (g[i, j] - t) * w[i, j] * scale


@_jit
def softmax_backward(g, w, scale, out):  # pragma: no cover - compiled
    n = g.shape[0]
    for c in range(_blocks(n, ROWS)):
        _softmax_backward_rows(g, w, scale, out, c * ROWS, min(n, (c + 1) * ROWS))


@_jit_parallel
def softmax_backward_parallel(g, w, scale, out):  # pragma: no cover - compiled
    n = g.shape[0]
    for c in prange(_blocks(n, ROWS)):
        _softmax_backward_rows(g, w, scale, out, c * ROWS, min(n, (c + 1) * ROWS))


# ---- dropout ---------------------------------------------------------------------------------

@_jit
def _scale_kept_values(x, keep, scale, out, lo, hi):  # pragma: no cover - compiled
    """Dropout's x ⊙ keep · 1/(1 − p) on values lo..hi of flat arrays (keep bool; `out` may be `x`):
    the NumPy path's values bitwise, x·1·s = x·s with keep in {0, 1} (and NaN·0 stays NaN, as there)."""
    xs, ks, outs = x[lo:hi], keep[lo:hi], out[lo:hi]  # slices: a loop from 0 is one LLVM vectorises (4x)
    for i in range(xs.shape[0]):
        outs[i] = xs[i] * np.float32(ks[i]) * scale


@_jit
def scale_kept(x, keep, scale, out):  # pragma: no cover - compiled
    n = x.shape[0]
    for c in range(_blocks(n, FLAT)):
        _scale_kept_values(x, keep, scale, out, c * FLAT, min(n, (c + 1) * FLAT))


@_jit_parallel
def scale_kept_parallel(x, keep, scale, out):  # pragma: no cover - compiled
    n = x.shape[0]
    for c in prange(_blocks(n, FLAT)):
        _scale_kept_values(x, keep, scale, out, c * FLAT, min(n, (c + 1) * FLAT))


# ---- sums on several threads: a model's residual adds and Linear's bias -----------------------------
# Parallel only: on one thread NumPy's own loops do the same in the same time (seqlab.kernels.add).

@_jit
def _add_values(a, b, out, lo, hi):  # pragma: no cover - compiled
    """out = a + b on values lo..hi of flat arrays (one float32 addition each: NumPy's values bitwise)."""
    as_, bs, outs = a[lo:hi], b[lo:hi], out[lo:hi]
    for i in range(as_.shape[0]):
        outs[i] = as_[i] + bs[i]


@_jit_parallel
def add_parallel(a, b, out):  # pragma: no cover - compiled
    n = a.shape[0]
    for c in prange(_blocks(n, FLAT)):
        _add_values(a, b, out, c * FLAT, min(n, (c + 1) * FLAT))


@_jit
def _add_rows(y, b, lo, hi):  # pragma: no cover - compiled
    """y[i] += b for rows lo..hi."""
    for i in range(lo, hi):
        ys = y[i]
        for j in range(ys.shape[0]):
            ys[j] += b[j]


@_jit_parallel
def add_rows_parallel(y, b):  # pragma: no cover - compiled
    """y (N, F) += b (F,), in place."""
    n = y.shape[0]
    for c in prange(_blocks(n, ROWS)):
        _add_rows(y, b, c * ROWS, min(n, (c + 1) * ROWS))


# ---- dropout's keep masks: SplitMix64 words of a counter (seqlab.random's module docstring) ----------
_GAMMA = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)
_S27, _S30, _S31 = np.uint64(27), np.uint64(30), np.uint64(31)
_LOW32 = np.uint64(0xFFFFFFFF)


@_jit
def _splitmix(z):  # pragma: no cover - compiled
    """SplitMix64's output mix of the state z (all arithmetic modulo 2⁶⁴)."""
    z = (z ^ (z >> _S30)) * _MIX1
    z = (z ^ (z >> _S27)) * _MIX2
    return z ^ (z >> _S31)


@_jit
def _mask_words(key, lo, words):  # pragma: no cover - compiled
    """words[j] = word lo + j of the mask keyed by `key`: SplitMix64's mix of key + (lo + j + 1)·γ.

    Read as uint32 (`words.view(np.uint32)`), value 2j is word j's low 32 bits and value 2j + 1 its high
    ones (the machine is little-endian, as every one Numba runs on): so the values come in the mask's
    order with no shuffle, and this loop and the caller's comparison each vectorise on their own. The
    state steps by γ (an add) instead of multiplying the counter. Half the time of the interleaved loop
    that split each word as it went (docs/results.md, 2026-12-07 evening)."""
    z = key + np.uint64(lo) * _GAMMA
    for j in range(words.shape[0]):
        z += _GAMMA
        words[j] = _splitmix(z)


@_jit
def _keep_words(key, threshold, out, lo, hi):  # pragma: no cover - compiled
    """Words lo..hi of the mask keyed by `key`: out[2j] and out[2j + 1] = its low and high 32 bits ≥ threshold."""
    o = out[2 * lo:2 * hi]  # a slice: the loop runs from 0, which LLVM vectorises
    words = np.empty(hi - lo, np.uint64)
    _mask_words(key, lo, words)
    u = words.view(np.uint32)
    for j in range(o.shape[0]):
        o[j] = u[j] >= threshold


@_jit
def _keep_last(key, threshold, out):  # pragma: no cover - compiled
    """An odd-sized mask's last element: the low half of one more word."""
    n = out.shape[0]
    if n % 2:
        out[n - 1] = np.uint32(_splitmix(key + np.uint64(n // 2 + 1) * _GAMMA) & _LOW32) >= threshold


@_jit
def keep_mask(key, threshold, out):  # pragma: no cover - compiled
    """out (bool, flat) = the mask keyed by `key` (uint64), kept where a draw ≥ `threshold` (uint32)."""
    w = out.shape[0] // 2
    for c in range(_blocks(w, FLAT)):
        _keep_words(key, threshold, out, c * FLAT, min(w, (c + 1) * FLAT))
    _keep_last(key, threshold, out)


@_jit_parallel
def keep_mask_parallel(key, threshold, out):  # pragma: no cover - compiled
    w = out.shape[0] // 2
    for c in prange(_blocks(w, FLAT)):
        _keep_words(key, threshold, out, c * FLAT, min(w, (c + 1) * FLAT))
    _keep_last(key, threshold, out)


@_jit
def _dropout_words(x, key, threshold, scale, out, lo, hi):  # pragma: no cover - compiled
    """Dropout of values 2·lo..2·hi with the mask keyed by `key` made on the fly: x·keep·scale, as scale_kept."""
    xs, o = x[2 * lo:2 * hi], out[2 * lo:2 * hi]
    words = np.empty(hi - lo, np.uint64)
    _mask_words(key, lo, words)
    u = words.view(np.uint32)
    zero = np.float32(0.0)
    for j in range(o.shape[0]):  # x · (scale or 0) is x · keep · scale bitwise, keep being 1 or 0
        o[j] = xs[j] * (scale if u[j] >= threshold else zero)


@_jit
def _dropout_last(x, key, threshold, scale, out):  # pragma: no cover - compiled
    n = x.shape[0]
    if n % 2:
        keep = np.uint32(_splitmix(key + np.uint64(n // 2 + 1) * _GAMMA) & _LOW32) >= threshold
        out[n - 1] = x[n - 1] * np.float32(keep) * scale


@_jit
def keyed_dropout(x, key, threshold, scale, out):  # pragma: no cover - compiled
    """out = x ⊙ keep · scale (flat; `out` may be `x`) for the mask keyed by `key`, which is never stored."""
    w = x.shape[0] // 2
    for c in range(_blocks(w, FLAT)):
        _dropout_words(x, key, threshold, scale, out, c * FLAT, min(w, (c + 1) * FLAT))
    _dropout_last(x, key, threshold, scale, out)


@_jit_parallel
def keyed_dropout_parallel(x, key, threshold, scale, out):  # pragma: no cover - compiled
    w = x.shape[0] // 2
    for c in prange(_blocks(w, FLAT)):
        _dropout_words(x, key, threshold, scale, out, c * FLAT, min(w, (c + 1) * FLAT))
    _dropout_last(x, key, threshold, scale, out)


# ---- GELU ------------------------------------------------------------------------------------
# Φ(x) ≈ ½(1 + tanh(x·P(x²))) = 1/(1 + e^(−2x·P(x²))), |x| ≤ _CDF_CLIP: the coefficients of P and the clip
# are seqlab.autograd.ops.activation's _TANH_CDF and _TANH_CLIP (a test holds them equal; repeated here
# because Numba's cache would not notice a change made in another file)
_P0, _P1, _P2, _P3, _P4, _P5, _P6, _P7 = (_f(7.97885152e-01), _f(3.63319829e-02), _f(-3.11358445e-05),
                                          _f(-5.60600982e-05), _f(4.14346443e-06), _f(-1.52702770e-07),
                                          _f(2.83479384e-09), _f(-2.07066159e-11))
_CDF_CLIP = _f(6.5)
_INV_SQRT_2PI = _f(0.3989422804014327)
_TINY_SQUARE = _f(2.0 ** -120)  # activation._TINY_SQUARE: below it y = x·Φ(x) may be subnormal and y/x not Φ
_A = _f(0.7978845608028654)  # √(2/π): tanh GELU's u = x·(A + B·x²)
_B = _f(0.7978845608028654 * 0.044715)


@_jit_values
def _normal_cdf(x):  # pragma: no cover - compiled
    """Φ(x) = 1/(1 + e^(−2c·P(c²))), c = x clipped to ±6.5, and 0 below −6.5 (as the NumPy path,
    where ½(1 + tanh) is 0 there); absolute error < 1.5e-7."""
    c = min(max(x, -_CDF_CLIP), _CDF_CLIP)
    s = c * c
    p = ((((((_P7 * s + _P6) * s + _P5) * s + _P4) * s + _P3) * s + _P2) * s + _P1) * s + _P0
    cdf = _ONE / (_ONE + _exp_in_range(_f(-2.0) * c * p))  # |2c·P(c²)| < 24 for |c| ≤ 6.5: no range checks
    return _f(0.0) if x < -_CDF_CLIP else cdf


@_jit_values
def _gelu_erf_values(x, out, lo, hi):  # pragma: no cover - compiled
    """out = x·Φ(x) on values lo..hi of flat arrays."""
    xs, outs = x[lo:hi], out[lo:hi]  # slices: loops from 0, which LLVM vectorises (as in dropout)
    for i in range(xs.shape[0]):
        outs[i] = xs[i] * _normal_cdf(xs[i])


@_jit_values
def _gelu_erf_grad_values(x, g, out, lo, hi):  # pragma: no cover - compiled
    """out = g·(Φ(x) + x·φ(x)), φ(x) = e^(−x²/2)/√(2π)."""
    xs, gs, outs = x[lo:hi], g[lo:hi], out[lo:hi]
    for i in range(xs.shape[0]):
        v = xs[i]
        outs[i] = gs[i] * (_normal_cdf(v) + v * _INV_SQRT_2PI * _exp(-_HALF * v * v))


@_jit_values
def _gelu_erf_grad_from_output_values(x, y, g, out, lo, hi):  # pragma: no cover - compiled
    """out = g·(Φ(x) + x·φ(x)) with Φ(x) = y/x from GELU's output y = x·Φ(x) (½ where x² < _TINY_SQUARE,
    as the NumPy path): one division in place of Φ's fit, its e^x and its division."""
    xs, ys, gs, outs = x[lo:hi], y[lo:hi], g[lo:hi], out[lo:hi]
    for i in range(xs.shape[0]):
        v = xs[i]
        s = v * v
        cdf = ys[i] / v if s >= _TINY_SQUARE else _HALF
        outs[i] = gs[i] * (cdf + v * _INV_SQRT_2PI * _exp_at_most_0(-_HALF * s))


@_jit_values
def _gelu_tanh_values(x, out, lo, hi):  # pragma: no cover - compiled
    """out = x·h, h = ½(1 + tanh u) = 1/(1 + e^(−2u)), u = √(2/π)(x + 0.044715x³) (h = 0 where e^(−2u) = inf)."""
    xs, outs = x[lo:hi], out[lo:hi]
    for i in range(xs.shape[0]):
        v = xs[i]
        outs[i] = v * (_ONE / (_ONE + _exp(_f(-2.0) * v * (_A + _B * v * v))))


@_jit_values
def _gelu_tanh_grad_values(x, g, out, lo, hi):  # pragma: no cover - compiled
    """out = g·h·(1 + 2x·u'·(1 − h)), u' = √(2/π)(1 + 3·0.044715x²), with 1 − h = e·h for e = e^(−2u) ≤ 1
    (no cancellation where h is near 1) and 1 − h itself above (no inf·0 where e overflows)."""
    xs, gs, outs = x[lo:hi], g[lo:hi], out[lo:hi]
    for i in range(xs.shape[0]):
        v = xs[i]
        s = v * v
        e = _exp(_f(-2.0) * v * (_A + _B * s))
        h = _ONE / (_ONE + e)
        rest = e * h if e <= _ONE else _ONE - h
        outs[i] = gs[i] * h * (_ONE + _f(2.0) * v * (_A + _f(3.0) * _B * s) * rest)


@_jit
def _gelu_forward_block(x, tanh, out, lo, hi):  # pragma: no cover - compiled
    if tanh:
        _gelu_tanh_values(x, out, lo, hi)
    else:
        _gelu_erf_values(x, out, lo, hi)


@_jit
def _gelu_backward_block(x, g, tanh, out, lo, hi):  # pragma: no cover - compiled
    if tanh:
        _gelu_tanh_grad_values(x, g, out, lo, hi)
    else:
        _gelu_erf_grad_values(x, g, out, lo, hi)


@_jit
def gelu_forward(x, tanh, out):  # pragma: no cover - compiled
    """out = GELU(x) on flat float32 arrays; `tanh`: the tanh approximation, else the exact (erf) form."""
    n = x.shape[0]
    for c in range(_blocks(n, FLAT)):
        _gelu_forward_block(x, tanh, out, c * FLAT, min(n, (c + 1) * FLAT))


@_jit_parallel
def gelu_forward_parallel(x, tanh, out):  # pragma: no cover - compiled
    n = x.shape[0]
    for c in prange(_blocks(n, FLAT)):
        _gelu_forward_block(x, tanh, out, c * FLAT, min(n, (c + 1) * FLAT))


@_jit
def gelu_backward(x, g, tanh, out):  # pragma: no cover - compiled
    """out = g · GELU'(x) on flat float32 arrays (`out` may be `g`)."""
    n = x.shape[0]
    for c in range(_blocks(n, FLAT)):
        _gelu_backward_block(x, g, tanh, out, c * FLAT, min(n, (c + 1) * FLAT))


@_jit_parallel
def gelu_backward_parallel(x, g, tanh, out):  # pragma: no cover - compiled
    n = x.shape[0]
    for c in prange(_blocks(n, FLAT)):
        _gelu_backward_block(x, g, tanh, out, c * FLAT, min(n, (c + 1) * FLAT))


@_jit
def gelu_erf_backward_from_output(x, y, g, out):  # pragma: no cover - compiled
    """out = g · GELU'(x) for the exact GELU, given its output y (flat float32 arrays; `out` may be `g`)."""
    n = x.shape[0]
    for c in range(_blocks(n, FLAT)):
        _gelu_erf_grad_from_output_values(x, y, g, out, c * FLAT, min(n, (c + 1) * FLAT))


@_jit_parallel
def gelu_erf_backward_from_output_parallel(x, y, g, out):  # pragma: no cover - compiled
    n = x.shape[0]
    for c in prange(_blocks(n, FLAT)):
        _gelu_erf_grad_from_output_values(x, y, g, out, c * FLAT, min(n, (c + 1) * FLAT))


# ---- Adam / AdamW ----------------------------------------------------------------------------
# no fastmath at all: each value goes through the NumPy path's float32 operations in its order, unfused,
# so the update is bitwise seqlab.optim.Adam's NumPy formula
_jit_exact = njit(cache=True, nogil=True, error_model="numpy")
_jit_exact_parallel = njit(cache=True, nogil=True, error_model="numpy", parallel=True)


@_jit_exact
def _adam_values(p, g, m, v, c, lo, hi):  # pragma: no cover - compiled
    """One Adam(W) step on values lo..hi, in place. c = float32 (decay, l2, 1 − β1, β2, 1 − β2, √(1 − β2ᵗ),
    eps, lr/(1 − β1ᵗ)): decay multiplies θ first (AdamW; 1 for none), l2 adds l2·θ to the gradient (Adam)."""
    ps, gs, ms, vs = p[lo:hi], g[lo:hi], m[lo:hi], v[lo:hi]  # slices: loops from 0 vectorise
    decay, l2, one_b1, b2, one_b2, bc2, eps, step = c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]
    for i in range(ps.shape[0]):
        x = ps[i] * decay
        gi = gs[i] + l2 * ps[i] if l2 != 0 else gs[i]  # the branch is the same for every i: hoisted
        mi = ms[i] + (gi - ms[i]) * one_b1
        vi = vs[i] * b2 + (gi * gi) * one_b2
        ms[i] = mi
        vs[i] = vi
        ps[i] = x - (mi / (np.sqrt(vi) / bc2 + eps)) * step


@_jit_exact
def adam(p, g, m, v, c):  # pragma: no cover - compiled
    """Flat float32 parameter, gradient, m and v; `c` as `_adam_values` takes it."""
    n = p.shape[0]
    for b in range(_blocks(n, FLAT)):
        _adam_values(p, g, m, v, c, b * FLAT, min(n, (b + 1) * FLAT))


@_jit_exact_parallel
def adam_parallel(p, g, m, v, c):  # pragma: no cover - compiled
    n = p.shape[0]
    for b in prange(_blocks(n, FLAT)):
        _adam_values(p, g, m, v, c, b * FLAT, min(n, (b + 1) * FLAT))


# Several parameters in one call (`seqlab.optim.Adam`'s step over a group): one call instead of one per
# parameter (each ~5 us of Python and dispatch, 52 a step for gpt-train's model), and on more than one
# thread every parameter's blocks shared out, the small ones too. The arrays come as addresses: a tuple
# of arrays would compile once per parameter count, and a typed list costs more to build than it saves.

@intrinsic
def _float32_pointer(typingctx, address):
    """The int64 address as a float32 pointer (for `carray`)."""
    def codegen(context, builder, signature, args):
        return builder.inttoptr(args[0], context.get_value_type(signature.return_type))

    return types.CPointer(types.float32)(types.int64), codegen


@_jit_exact
def _adam_blocks(sizes):  # pragma: no cover - compiled
    """Rows (parameter, lo, hi): each parameter's values in blocks of `FLAT`, parameters in order."""
    total = 0
    for j in range(sizes.shape[0]):
        total += _blocks(sizes[j], FLAT)
    out = np.empty((total, 3), np.int64)
    r = 0
    for j in range(sizes.shape[0]):
        n = sizes[j]
        for b in range(_blocks(n, FLAT)):
            out[r, 0], out[r, 1], out[r, 2] = j, b * FLAT, min(n, (b + 1) * FLAT)
            r += 1
    return out


@_jit_exact
def _adam_block(table, sizes, c, block):  # pragma: no cover - compiled
    """`_adam_values` on one row of `_adam_blocks`: parameter j's values lo..hi."""
    j, lo, hi = block[0], block[1], block[2]
    n = sizes[j]
    _adam_values(carray(_float32_pointer(table[j, 0]), n), carray(_float32_pointer(table[j, 1]), n),
                 carray(_float32_pointer(table[j, 2]), n), carray(_float32_pointer(table[j, 3]), n), c, lo, hi)


@_jit_exact
def adam_many(table, sizes, c):  # pragma: no cover - compiled
    """`adam` on several parameters: table (n, 4) int64, row j the addresses of parameter j's flat float32
    values, gradient, m and v, each of sizes[j] values; `c` as `_adam_values` takes it, the same for all.
    Each value gets `adam`'s operations, so the same bits."""
    blocks = _adam_blocks(sizes)
    for i in range(blocks.shape[0]):
        _adam_block(table, sizes, c, blocks[i])


@_jit_exact_parallel
def adam_many_parallel(table, sizes, c):  # pragma: no cover - compiled
    blocks = _adam_blocks(sizes)
    for i in prange(blocks.shape[0]):
        _adam_block(table, sizes, c, blocks[i])


# ---- the embedding's gradient ----------------------------------------------------------------
EMBEDDING_BLOCKS = 8  # the parallel twin's blocks of output rows


@_jit_exact
def _embedding_add_rows(ids, g, out, lo, hi):  # pragma: no cover - compiled
    """out[ids[n]] += g[n] for n = 0, 1, ... in order, where lo ≤ ids[n] < hi: each value is summed in the
    order np.add.at sums it, so the same bits; no fastmath, so no other order."""
    d = g.shape[1]
    for n in range(ids.shape[0]):
        r = ids[n]
        if lo <= r < hi:
            row = out[r]
            src = g[n]
            for j in range(d):
                row[j] += src[j]


@_jit_exact
def embedding_backward(ids, g, out):  # pragma: no cover - compiled
    """out (rows, D), zeros on entry, += g (N, D)'s rows at ids (N,)."""
    _embedding_add_rows(ids, g, out, 0, out.shape[0])


@_jit_exact_parallel
def embedding_backward_parallel(ids, g, out):  # pragma: no cover - compiled
    rows = out.shape[0]
    size = _blocks(rows, EMBEDDING_BLOCKS)
    for c in prange(EMBEDDING_BLOCKS):  # threads own disjoint rows (each scans all ids): no two write one value
        _embedding_add_rows(ids, g, out, c * size, min(rows, (c + 1) * size))


# ---- the feed-forward's middle: bias, activation and dropout in one pass ----------------------
# act (v) and its derivative given y = act(v), one value each; the erf GELU takes Φ(v) = y/v from y (as
# `_gelu_erf_grad_from_output_values`), the tanh GELU computes its factor again (as `_gelu_tanh_grad_values`)

@_jit_values
def _relu_value(v):  # pragma: no cover - compiled
    return _f(0.0) if v <= _f(0.0) else v  # NaN stays NaN, as np.maximum(v, 0)


@_jit_values
def _relu_grad(v, y):  # pragma: no cover - compiled
    return _ONE if v > _f(0.0) else _f(0.0)


@_jit_values
def _gelu_erf_value(v):  # pragma: no cover - compiled
    return v * _normal_cdf(v)


@_jit_values
def _gelu_erf_grad(v, y):  # pragma: no cover - compiled
    s = v * v
    cdf = y / v if s >= _TINY_SQUARE else _HALF
    return cdf + v * _INV_SQRT_2PI * _exp_at_most_0(-_HALF * s)


@_jit_values
def _gelu_tanh_value(v):  # pragma: no cover - compiled
    return v * (_ONE / (_ONE + _exp(_f(-2.0) * v * (_A + _B * v * v))))


@_jit_values
def _gelu_tanh_grad(v, y):  # pragma: no cover - compiled
    s = v * v
    e = _exp(_f(-2.0) * v * (_A + _B * s))
    h = _ONE / (_ONE + e)
    rest = e * h if e <= _ONE else _ONE - h
    return h * (_ONE + _f(2.0) * v * (_A + _f(3.0) * _B * s) * rest)


@_jit
def _keep_scale_row(key, threshold, scale, i, keep, words):  # pragma: no cover - compiled
    """keep[j] = scale where row i's value j is kept, else 0: the mask keyed by `key` of the flat array
    (as `_keep_words`: word w keeps values 2w and 2w + 1; rows of even length, so row i starts at word
    i·F/2). x · (keep · scale) is x · keep · scale bitwise, keep being 0 or 1. `words`: F/2 uint64 of
    scratch."""
    _mask_words(key, i * words.shape[0], words)
    u = words.view(np.uint32)
    zero = _f(0.0)
    for j in range(keep.shape[0]):
        keep[j] = scale if u[j] >= threshold else zero


def _bias_act_rows(value, grad):
    """The forward and backward row loops of `bias_act_dropout` for one activation, its `value` and
    `grad` compiled into each loop (a branch on the activation inside the loop would stop it vectorising).

    forward, rows lo..hi: out = value(z + b) ⊙ keep · scale, the keep mask keyed by `key` made on the fly
    as `keyed_dropout` makes it for the flat array; threshold 0: no mask (scale 1).
    backward: gz = g ⊙ keep · scale · grad(h, y) with h = z + b again (the same float32 sum) and
    y = value(h) = out / scale where kept, the only places grad is needed (elsewhere keep is 0); gb += gz.
    """
    @_jit_values
    def forward(z, b, key, threshold, scale, out, lo, hi):  # pragma: no cover - compiled
        if threshold == 0:
            for i in range(lo, hi):
                zs, outs = z[i], out[i]
                for j in range(zs.shape[0]):
                    outs[j] = value(zs[j] + b[j])
            return
        keep = np.empty(z.shape[1], np.float32)  # a row's keep · scale, made first: both loops vectorise
        words = np.empty(z.shape[1] // 2, np.uint64)
        for i in range(lo, hi):
            _keep_scale_row(key, threshold, scale, i, keep, words)
            zs, outs = z[i], out[i]
            for j in range(zs.shape[0]):
                outs[j] = value(zs[j] + b[j]) * keep[j]

    @_jit_values
    def backward(g, z, b, out, key, threshold, scale, gz, gb, lo, hi):  # pragma: no cover - compiled
        if threshold == 0:
            for i in range(lo, hi):
                gs, zs, outs, gzs = g[i], z[i], out[i], gz[i]
                for j in range(gs.shape[0]):
                    d = gs[j] * grad(zs[j] + b[j], outs[j])
                    gzs[j] = d
                    gb[j] += d
            return
        keep = np.empty(g.shape[1], np.float32)
        words = np.empty(g.shape[1] // 2, np.uint64)
        inv = _ONE / scale
        for i in range(lo, hi):
            _keep_scale_row(key, threshold, scale, i, keep, words)
            gs, zs, outs, gzs = g[i], z[i], out[i], gz[i]
            for j in range(gs.shape[0]):
                d = gs[j] * keep[j] * grad(zs[j] + b[j], outs[j] * inv)
                gzs[j] = d
                gb[j] += d

    return forward, backward


# activation codes (seqlab.kernels.ACTIVATIONS names them)
_RELU, _GELU_ERF, _GELU_TANH = 0, 1, 2
_relu_forward, _relu_backward = _bias_act_rows(_relu_value, _relu_grad)
_gelu_erf_forward, _gelu_erf_backward = _bias_act_rows(_gelu_erf_value, _gelu_erf_grad)
_gelu_tanh_forward, _gelu_tanh_backward = _bias_act_rows(_gelu_tanh_value, _gelu_tanh_grad)


@_jit
def _bias_act_block(z, b, act, key, threshold, scale, out, lo, hi):  # pragma: no cover - compiled
    if act == _GELU_ERF:
        _gelu_erf_forward(z, b, key, threshold, scale, out, lo, hi)
    elif act == _GELU_TANH:
        _gelu_tanh_forward(z, b, key, threshold, scale, out, lo, hi)
    else:
        _relu_forward(z, b, key, threshold, scale, out, lo, hi)


@_jit
def bias_act_dropout(z, b, act, key, threshold, scale, out):  # pragma: no cover - compiled
    """z, out (N, F); b (F,): out = dropout(act(z + b)) (`_bias_act_rows`); threshold 0: no dropout."""
    n = z.shape[0]
    for c in range(_blocks(n, ROWS)):
        _bias_act_block(z, b, act, key, threshold, scale, out, c * ROWS, min(n, (c + 1) * ROWS))


@_jit_parallel
def bias_act_dropout_parallel(z, b, act, key, threshold, scale, out):  # pragma: no cover - compiled
    n = z.shape[0]
    for c in prange(_blocks(n, ROWS)):
        _bias_act_block(z, b, act, key, threshold, scale, out, c * ROWS, min(n, (c + 1) * ROWS))


@_jit
def _bias_act_grad_block(g, z, b, out, act, key, threshold, scale, gz, gb, lo, hi):  # pragma: no cover
    if act == _GELU_ERF:
        _gelu_erf_backward(g, z, b, out, key, threshold, scale, gz, gb, lo, hi)
    elif act == _GELU_TANH:
        _gelu_tanh_backward(g, z, b, out, key, threshold, scale, gz, gb, lo, hi)
    else:
        _relu_backward(g, z, b, out, key, threshold, scale, gz, gb, lo, hi)


@_jit
def bias_act_dropout_backward(g, z, b, out, act, key, threshold, scale, gz, gb):  # pragma: no cover - compiled
    """g, z, out, gz (N, F); b, gb (F,), gb zeroed by the caller: the gradients of `bias_act_dropout`'s z and b."""
    n, f = g.shape
    nb = _blocks(n, ROWS)
    pb = np.zeros((nb, f), np.float32)  # each block's own Σ gz, summed in block order below
    for c in range(nb):
        _bias_act_grad_block(g, z, b, out, act, key, threshold, scale, gz, pb[c], c * ROWS, min(n, (c + 1) * ROWS))
    _sum_blocks(pb, gb)


@_jit_parallel
def bias_act_dropout_backward_parallel(g, z, b, out, act, key, threshold, scale, gz, gb):  # pragma: no cover
    n, f = g.shape
    nb = _blocks(n, ROWS)
    pb = np.zeros((nb, f), np.float32)
    for c in prange(nb):
        _bias_act_grad_block(g, z, b, out, act, key, threshold, scale, gz, pb[c], c * ROWS, min(n, (c + 1) * ROWS))
    _sum_blocks(pb, gb)


# ---- memory-efficient attention: one (query block × key block) tile -------------------------------------
# The tiles of `seqlab.nn.efficient_attention.ChunkedAttention`: s (R, bq, bk) holds one block of raw scores
# q·kⱼᵀ (R: the batch and head dims merged); rows i0.., keys j0... A causal / sliding-window mask is a range
# of visible keys per row (`_visible`), so no mask array is made or read. Each row is one pass in cache where
# NumPy makes about eight over the whole tile (scale, mask, max, subtract, exp, sum, rescale).

@_jit
def _visible(qi, j0, bk, causal, window):  # pragma: no cover - compiled
    """The visible keys [a, b) of query qi within the tile's keys j0..j0+bk−1, in tile columns (a ≥ b: none).
    causal hides keys after qi; window ≥ 0 hides keys more than `window` before qi (and after, when not causal)."""
    a, b = 0, bk
    if causal:
        b = min(b, qi + 1 - j0)
    if window >= 0:
        a = max(a, qi - window - j0)
        if not causal:
            b = min(b, qi + window + 1 - j0)
    a = min(a, bk)  # a row whose window ends before the tile: none visible
    return a, max(a, b)


@_jit_sums
def flash_forward_tile(s, m, ell, acc, scale, i0, j0, causal, window):  # pragma: no cover - compiled
    """One key block of the online softmax, in place. s (R, bq, bk) raw scores → p = e^{s·scale − m'} (0 where
    hidden); m, ell (R, bq) the running max and Σ e^{s − m}, acc (R, bq, Dv) the running Σ p v, both rescaled
    by e^{m − m'} here (the caller then adds p @ vⱼ to acc). A row hidden so far keeps m = −inf, ℓ = 0.
    The visible keys are taken as a slice (`seen`) indexed from 0: a loop from a bound of unknown sign
    would test each index for wrapping around and not be vectorised (10x slower)."""
    rows, bq, bk = s.shape
    dv = acc.shape[2]
    for r in range(rows):
        for i in range(bq):
            row = s[r, i]
            a, b = _visible(i0 + i, j0, bk, causal, window)
            seen = row[a:b]
            k = seen.shape[0]
            for j in range(k):
                seen[j] = seen[j] * scale
            mx = m[r, i]
            m_new = mx
            if k > 0:
                bmax = _row_max(seen, k)
                if bmax > m_new or bmax != bmax:  # a NaN score: NaN out, as NumPy's maximum
                    m_new = bmax
            m_safe = m_new if m_new != -np.inf else _f(0.0)
            total = _f(0.0)
            for j in range(k):
                e = _exp_at_most_0(seen[j] - m_safe)
                seen[j] = e
                total += e
            row[:a] = _f(0.0)
            row[b:] = _f(0.0)
            corr = _exp_at_most_0(mx - m_safe)  # e^{m − m'}: 0 while the row was hidden (m = −inf)
            ell[r, i] = ell[r, i] * corr + total
            if corr != _ONE:
                out = acc[r, i]
                for d in range(dv):
                    out[d] *= corr
            m[r, i] = m_new


@_jit_sums
def flash_weights_tile(s, lse, scale, i0, j0, causal, window):  # pragma: no cover - compiled
    """Backward's weights again, in place: s (R, bq, bk) raw scores → P = e^{s·scale − lse} (0 where hidden);
    lse (R, bq) the forward's log Σ e^s per row (+inf for a row with every key hidden: P = 0)."""
    rows, bq, bk = s.shape
    for r in range(rows):
        for i in range(bq):
            row = s[r, i]
            a, b = _visible(i0 + i, j0, bk, causal, window)
            seen = row[a:b]
            top = lse[r, i]
            for j in range(seen.shape[0]):
                seen[j] = _exp_at_most_0(seen[j] * scale - top)
            row[:a] = _f(0.0)
            row[b:] = _f(0.0)


@_jit_sums
def flash_ds_tile(ds, p, d, scale):  # pragma: no cover - compiled
    """dS = (dP − D) ⊙ P · scale in place in ds (R, bq, bk) = dP; p the tile's weights, d (R, bq) = Σ dO ⊙ O."""
    rows, bq, bk = ds.shape
    for r in range(rows):
        for i in range(bq):
            di = d[r, i]
            drow, prow = ds[r, i], p[r, i]
            for j in range(bk):
                drow[j] = (drow[j] - di) * prow[j] * scale


# ---- short attention: a whole head in one compiled pass ---------------------------------------------
# `seqlab.autograd.ops.fused.Attention` on sequences a little longer than the head dim (GPT's 64 keys on
# 32 dims, MiniLM's 44 on 32): each head's scores, softmax and weighted sum, and in backward its five
# products, run on buffers the size of one head, which stay in cache, where NumPy's batched products and
# the softmax kernel make one pass over the whole (B, H, T, T) array each. Keys a row cannot see after its
# last visible one (a causal mask's upper triangle, a padded batch's tail) are not multiplied at all.
#
# The products go through `_tile`: C[R × 16] = alpha · A[R × K] · B[K × 16] with R rows of 16 float32 lanes
# held in vector registers over the whole K loop (the BLAS's own way; Numba's loops keep their running
# sums in memory, which ran these products at a quarter of the speed). It is written as LLVM IR: one load
# of B's row, R broadcasts of A's values and R fused multiply-adds per step of k, in k's order, so a tile's
# values do not depend on where it sits. On a CPU without 16-lane vectors the compiler splits each into
# two or four. A row's softmax passes run on whole vectors too (`_weights_row`, the `_lanes_*` intrinsics).
#
# Before the first head of each batch row, the row's q, k, v and output (in backward also g and dq, dk, dv)
# are read once from start to end (`_read_ahead`): a head's rows lie 1,536 bytes apart in a packed q/k/v
# (GPT's), so the kernels' own reads, two lines a row, waited on memory one row at a time when the forward
# had left them out of cache; a sequential sweep, which the CPU's prefetchers run ahead of, took that
# backward from 1.10 ms to 0.78 at GPT's heads (docs/results.md).

LANES = 16  # columns of a tile: the head dims and the padded key count are multiples of it


def _tile_kernel(R):
    """The `_tile` intrinsic for R rows (4, and 1 for a last odd row)."""
    @intrinsic
    def tile(typingctx, a, sar, sac, b, sb, c, sc, K, alpha):
        """C = alpha · A · B: A(r, k) the float32 at byte address a + 4(r·sar + k·sac), B's row k the 16
        float32 at b + 4k·sb, C's row r at c + 4r·sc (addresses int64, strides in float32s)."""
        i64 = types.int64
        sig = types.void(i64, i64, i64, i64, i64, i64, i64, i64, types.float32)

        def codegen(context, builder, signature, args):
            a, sar, sac, b, sb, c, sc, K, alpha = args
            f32, li64, li32 = ir.FloatType(), ir.IntType(64), ir.IntType(32)
            vec = ir.VectorType(f32, LANES)
            fma = cgutils.get_or_insert_function(builder.module, ir.FunctionType(vec, [vec, vec, vec]),
                                                 f"llvm.fma.v{LANES}f32")
            A, B, C = (builder.inttoptr(x, f32.as_pointer()) for x in (a, b, c))
            every_lane = ir.Constant(ir.VectorType(li32, LANES), [0] * LANES)

            def splat(x):
                v = builder.insert_element(ir.Constant(vec, ir.Undefined), x, ir.Constant(li32, 0))
                return builder.shuffle_vector(v, ir.Constant(vec, ir.Undefined), every_lane)

            entry = builder.block
            head = builder.append_basic_block("tile.k")
            body = builder.append_basic_block("tile.body")
            done = builder.append_basic_block("tile.done")
            builder.branch(head)
            builder.position_at_end(head)
            k = builder.phi(li64)
            k.add_incoming(ir.Constant(li64, 0), entry)
            acc = []
            for _ in range(R):
                phi = builder.phi(vec)
                phi.add_incoming(ir.Constant(vec, [0.0] * LANES), entry)
                acc.append(phi)
            builder.cbranch(builder.icmp_signed("<", k, K), body, done)
            builder.position_at_end(body)
            row = builder.load(builder.bitcast(builder.gep(B, [builder.mul(k, sb)]), vec.as_pointer()), align=4)
            at_k = builder.mul(k, sac)
            summed = []
            for r in range(R):
                x = builder.load(builder.gep(A, [builder.add(builder.mul(ir.Constant(li64, r), sar), at_k)]),
                                 align=4)
                summed.append(builder.call(fma, [splat(x), row, acc[r]]))
            k.add_incoming(builder.add(k, ir.Constant(li64, 1)), body)
            for r in range(R):
                acc[r].add_incoming(summed[r], body)
            builder.branch(head)
            builder.position_at_end(done)
            scale = splat(alpha)
            for r in range(R):
                out = builder.bitcast(builder.gep(C, [builder.mul(ir.Constant(li64, r), sc)]), vec.as_pointer())
                builder.store(builder.fmul(acc[r], scale), out, align=4)
            return context.get_dummy_value()

        return sig, codegen

    return tile


_tile4 = _tile_kernel(4)
_tile1 = _tile_kernel(1)


@_jit
def _gemm(a, sar, sac, b, sb, c, sc, rows, cols, K, alpha):  # pragma: no cover - compiled
    """C[rows × cols] = alpha · A[rows × K] · B[K × cols] by tiles (addresses and strides as `_tile_kernel`'s);
    cols a multiple of `LANES`. Every address the caller passes must hold what these bounds read and write."""
    r = 0
    while r < rows:
        if r + 4 <= rows:
            for j in range(cols // LANES):
                _tile4(a + 4 * r * sar, sar, sac, b + 4 * LANES * j, sb, c + 4 * (r * sc + LANES * j), sc, K, alpha)
            r += 4
        else:
            for j in range(cols // LANES):
                _tile1(a + 4 * r * sar, sar, sac, b + 4 * LANES * j, sb, c + 4 * (r * sc + LANES * j), sc, K, alpha)
            r += 1


@_jit
def _address(x):  # pragma: no cover - compiled
    """x's data address as an int64 (Numba types it uint64, and uint64 + int64 is float64 there)."""
    return np.int64(x.ctypes.data)


@intrinsic
def _read_lines(typingctx, lo, hi):
    """Reads one 4-byte word in every 64-byte line from address lo up to hi (each word wholly below hi), in
    order: a sequential sweep, which the CPU's prefetchers run ahead of, bringing the lines into the caches.
    The words' sum goes to an empty assembler statement, so the compiler keeps every read (`llvm.prefetch`
    hints instead ran slower: the CPU may drop them when its miss buffers are full)."""
    def codegen(context, builder, signature, args):
        lo, hi = args
        hi = builder.sub(hi, ir.Constant(_I64, 3))  # a word starting before hi - 3 ends by hi
        entry = builder.block
        head, body, done = (builder.append_basic_block(f"read.{x}") for x in ("head", "body", "done"))
        builder.branch(head)
        builder.position_at_end(head)
        at = builder.phi(_I64)
        at.add_incoming(lo, entry)
        acc = builder.phi(_I32)
        acc.add_incoming(ir.Constant(_I32, 0), entry)
        builder.cbranch(builder.icmp_signed("<", at, hi), body, done)
        builder.position_at_end(body)
        word = builder.load(builder.inttoptr(at, _I32.as_pointer()), align=4)
        at.add_incoming(builder.add(at, ir.Constant(_I64, 64)), body)
        acc.add_incoming(builder.add(acc, word), body)
        builder.branch(head)
        builder.position_at_end(done)
        builder.asm(ir.FunctionType(ir.VoidType(), [_I32]), "", "r", [acc], side_effect=True)
        return context.get_dummy_value()

    return types.void(types.int64, types.int64), codegen


@_jit
def _span(x):  # pragma: no cover - compiled
    """(first, end, bytes): the byte addresses x's elements lie between (end exclusive) and how many bytes
    the elements take; (0, 0, 0) when x is empty."""
    lo = hi = _address(x)
    for n, st in zip(x.shape, x.strides):
        if n == 0:
            return 0, 0, 0
        if st > 0:
            hi += (n - 1) * st
        else:
            lo += (n - 1) * st
    return lo, hi + x.itemsize, x.size * x.itemsize


@_jit
def _sweeps(a, b, c, d):  # pragma: no cover - compiled
    """The byte ranges `_read_ahead` sweeps for the arrays a, b, c, d, as rows (first, end) of an int64
    array: their spans, those that overlap (q, k and v of one packed array) merged into one, an array passed
    twice counted once, and a range more than twice the size of its arrays' elements left out: there a
    sweep would read mostly memory no one uses (a KV cache's keys: each head's rows followed by room for
    more)."""
    spans = [_span(a), _span(b), _span(c), _span(d)]
    spans.sort()
    out = np.empty((4, 2), np.int64)
    n = 0
    lo, hi, used = spans[0]
    for i in range(1, 5):
        if i < 4 and spans[i][0] < hi:  # overlaps the range so far
            hi = max(hi, spans[i][1])
            used += 0 if spans[i] == spans[i - 1] else spans[i][2]
            continue
        if lo < hi <= lo + 2 * used:
            out[n, 0], out[n, 1] = lo, hi
            n += 1
        if i < 4:
            lo, hi, used = spans[i]
    return out[:n]


@_jit
def _read_ahead(a, b, c, d):  # pragma: no cover - compiled
    """Brings the memory of the float32 arrays a, b, c, d (one batch row's q, k, v and out, say) into the
    caches by sequential sweeps (`_sweeps`, `_read_lines`) before a kernel reads them head by head: rows
    1,536 bytes apart, read two lines at a time, each waited for, ran the short attention kernels at half
    speed on memory not in cache."""
    ranges = _sweeps(a, b, c, d)
    for i in range(ranges.shape[0]):
        _read_lines(ranges[i, 0], ranges[i, 1])


@_jit
def _mask_rows(block, tk):  # pragma: no cover - compiled
    """Per row of `block` (R, Tk), True = blocked: how many keys up to its last visible one (0: none), and
    whether a key before that one is blocked (a hole the softmax must mask itself)."""
    n_rows = block.shape[0]
    seen = np.empty(n_rows, np.int64)
    holes = np.zeros(n_rows, np.bool_)
    for r in range(n_rows):
        row = block[r]
        n = tk
        while n > 0 and row[n - 1]:
            n -= 1
        seen[r] = n
        for j in range(n):
            if row[j]:
                holes[r] = True
                break
    return seen, holes


@intrinsic
def _transpose16(typingctx, src, ss, dst, sd):
    """The 16 × 16 float32 block at address src (rows ss float32s apart, each 16 contiguous) written
    transposed at dst (rows sd apart): 16 vector loads, four rounds of 16 two-vector shuffles (round h
    swaps the off-diagonal h × h blocks of every 2h × 2h block), 16 vector stores."""
    def codegen(context, builder, signature, args):
        b = builder
        src, ss, dst, sd = args
        L = _Lanes(b)
        rows = [L.load(b.add(src, b.mul(ir.Constant(_I64, 4 * i), ss)), ir.Constant(_I64, 0)) for i in range(LANES)]
        h = LANES // 2
        while h:
            low = [c if not c & h else LANES + c - h for c in range(LANES)]  # A's where c's h-bit is 0, else B's
            high = [c + h if not c & h else LANES + c for c in range(LANES)]
            new = list(rows)
            for i in range(LANES):
                if not i & h:
                    a, c = rows[i], rows[i + h]
                    new[i] = b.shuffle_vector(a, c, ir.Constant(_IVEC, low))
                    new[i + h] = b.shuffle_vector(a, c, ir.Constant(_IVEC, high))
            rows = new
            h //= 2
        for i in range(LANES):
            L.store(rows[i], b.add(dst, b.mul(ir.Constant(_I64, 4 * i), sd)), ir.Constant(_I64, 0))
        return context.get_dummy_value()

    return types.void(types.int64, types.int64, types.int64, types.int64), codegen


@_jit
def _transpose_into(x, out):  # pragma: no cover - compiled
    """out[:, :T] = xᵀ for x (T, D), e.g. a head's keys (a strided view, rows contiguous); out (D, ≥ T),
    rows contiguous. Whole 16 × 16 blocks on vectors (`_transpose16`) where D is a multiple of 16, the
    rest value by value."""
    t, dims = x.shape
    full = t // LANES * LANES if dims % LANES == 0 and x.strides[1] == 4 and out.strides[1] == 4 else 0
    sx, so = x.strides[0] // 4, out.strides[0] // 4
    for j0 in range(0, full, LANES):
        for d0 in range(0, dims, LANES):
            _transpose16(_address(x) + 4 * (j0 * sx + d0), sx, _address(out) + 4 * (d0 * so + j0), so)
    for j in range(full, t):
        row = x[j]
        for d in range(dims):
            out[d, j] = row[d]


# ---- a softmax row's passes on whole vectors -------------------------------------------------------------
# A head's rows are short (GPT's causal rows 1 to 64 keys), and Numba's loops over them ran mostly in their
# scalar tails: the compiler vectorises a loop by 64 values at a time and leaves the rest to a scalar loop.
# These intrinsics run a row's passes on whole chunks of `LANES` values instead, with the lanes past the
# row's visible keys masked (read as −inf or 0) rather than filled first. Sums and maxima combine the lanes
# in a fixed tree, so a row's values do not depend on where it sits. Chunks are read and written whole:
# the caller's row must hold every chunk it names (the kernels' own buffers, rows padded to 16).
# One row's passes wait on each other (its max before its exponentials, their sum before the division),
# so a tile's four rows go through them together (`_lanes_weights4`), each row's work in the others'
# shadow (gpt-train's attention, warm, a layer: forward 0.36 → 0.31 ms, backward, which makes the weights
# again the same way, 0.69 → 0.64), each row's bits unchanged. A head's keys (and in backward its values)
# are transposed for the products 16 × 16 at a time on vectors (`_transpose16`): backward ~0.04 ms less.

_F32, _I32, _I64 = ir.FloatType(), ir.IntType(32), ir.IntType(64)
_VEC, _IVEC = ir.VectorType(_F32, LANES), ir.VectorType(_I32, LANES)


class _Lanes:
    """Vector helpers for one intrinsic's builder."""

    def __init__(self, builder):
        self.b = builder

    def const(self, x):
        return ir.Constant(_VEC, [float(np.float32(x))] * LANES)

    def splat(self, x, vec=_VEC):
        b = self.b
        one = b.insert_element(ir.Constant(vec, ir.Undefined), x, ir.Constant(_I32, 0))
        return b.shuffle_vector(one, ir.Constant(vec, ir.Undefined), ir.Constant(_IVEC, [0] * LANES))

    def call(self, name, *args):
        fn = cgutils.get_or_insert_function(self.b.module, ir.FunctionType(_VEC, [_VEC] * len(args)),
                                            f"llvm.{name}.v{LANES}f32")
        return self.b.call(fn, list(args))

    def _at(self, address, chunk):  # chunk `chunk` of the float32 row at the int64 address
        b = self.b
        base = b.inttoptr(address, _F32.as_pointer())
        return b.bitcast(b.gep(base, [b.mul(chunk, ir.Constant(_I64, LANES))]), _VEC.as_pointer())

    def load(self, address, chunk):
        return self.b.load(self._at(address, chunk), align=4)

    def store(self, v, address, chunk):
        self.b.store(v, self._at(address, chunk), align=4)

    def visible(self, chunk, nv):
        """The lanes of `chunk` before value nv."""
        b = self.b
        first = b.trunc(b.mul(chunk, ir.Constant(_I64, LANES)), _I32)
        lane = b.add(self.splat(first, _IVEC), ir.Constant(_IVEC, list(range(LANES))))
        return b.icmp_signed("<", lane, self.splat(b.trunc(nv, _I32), _IVEC))

    def combine(self, v, op):
        """op over the lanes as a fixed tree (halves, then quarters, ...), to one float32."""
        b, n = self.b, LANES
        while n > 1:
            n //= 2
            half = ir.VectorType(_I32, n)
            v = op(b.shuffle_vector(v, v, ir.Constant(half, list(range(n)))),
                   b.shuffle_vector(v, v, ir.Constant(half, list(range(n, 2 * n)))))
        return b.extract_element(v, ir.Constant(_I32, 0))

    def larger(self, a, c):  # max(a, c) lane by lane, a kept where c is NaN
        return self.b.select(self.b.fcmp_ordered(">", c, a), c, a)

    def exp_at_most_0(self, v):
        """`_exp_at_most_0` on a vector: the same steps, each multiply-add fused."""
        b = self.b
        under = b.fcmp_ordered("<", v, self.const(_EXP_MIN))
        x = b.select(under, self.const(_EXP_MIN), v)
        k = self.call("floor", self.call("fma", x, self.const(_LOG2E), self.const(_HALF)))
        r = self.call("fma", b.fneg(k), self.const(_LN2_HI), x)
        r = self.call("fma", b.fneg(k), self.const(_LN2_LO), r)
        p = self.const(1 / 5040)
        for c in (1 / 720, 1 / 120, 1 / 24, 1 / 6, 0.5, 1.0, 1.0):
            p = self.call("fma", p, r, self.const(c))
        bits = b.shl(b.add(b.fptosi(k, _IVEC), ir.Constant(_IVEC, [127] * LANES)), ir.Constant(_IVEC, [23] * LANES))
        return b.select(under, self.const(0.0), b.fmul(p, b.bitcast(bits, _VEC)))

    def loop(self, n, inits, body):
        """for c in range(n): accs = body(c, accs); returns the last accs."""
        b = self.b
        entry = b.block
        head, loop, done = (b.append_basic_block(f"lanes.{x}") for x in ("head", "body", "done"))
        b.branch(head)
        b.position_at_end(head)
        c = b.phi(_I64)
        c.add_incoming(ir.Constant(_I64, 0), entry)
        accs = []
        for x in inits:
            accs.append(b.phi(x.type))
            accs[-1].add_incoming(x, entry)
        b.cbranch(b.icmp_signed("<", c, n), loop, done)
        b.position_at_end(loop)
        new = body(c, accs)
        end = b.block
        c.add_incoming(b.add(c, ir.Constant(_I64, 1)), end)
        for acc, x in zip(accs, new):
            acc.add_incoming(x, end)
        b.branch(head)
        b.position_at_end(done)
        return accs

    def chunks(self, n):
        """How many chunks cover n values."""
        return self.b.sdiv(self.b.add(n, ir.Constant(_I64, LANES - 1)), ir.Constant(_I64, LANES))


@intrinsic
def _lanes_max(typingctx, a, nv):
    """max of the nv float32 at address a, NaN ignored (−inf for nv = 0)."""
    def codegen(context, builder, signature, args):
        a, nv = args
        L = _Lanes(builder)
        low = L.const(-np.inf)
        (m,) = L.loop(L.chunks(nv), [low],
                      lambda c, acc: [L.larger(acc[0], builder.select(L.visible(c, nv), L.load(a, c), low))])
        return L.combine(m, L.larger)

    return types.float32(types.int64, types.int64), codegen


@intrinsic
def _lanes_exp(typingctx, a, nv, nvp, mx):
    """a[j] = e^(a[j] − mx) for j < nv (`_exp_at_most_0`), 0 for nv ≤ j < nvp (a multiple of 16); returns
    the values' sum."""
    def codegen(context, builder, signature, args):
        a, nv, nvp, mx = args
        L = _Lanes(builder)
        m = L.splat(mx)

        def body(c, acc):
            e = builder.select(L.visible(c, nv), L.exp_at_most_0(builder.fsub(L.load(a, c), m)), L.const(0.0))
            L.store(e, a, c)
            return [builder.fadd(acc[0], e)]

        (t,) = L.loop(L.chunks(nvp), [L.const(0.0)], body)
        return L.combine(t, builder.fadd)

    return types.float32(types.int64, types.int64, types.int64, types.float32), codegen


@intrinsic
def _lanes_div(typingctx, a, nv, nvp, total):
    """a[j] /= total for j < nv, a[j] = 0 for nv ≤ j < nvp (a multiple of 16): a hidden key's weight is 0
    even in a row whose sum is NaN."""
    def codegen(context, builder, signature, args):
        a, nv, nvp, total = args
        L = _Lanes(builder)
        t = L.splat(total)

        def body(c, acc):
            L.store(builder.select(L.visible(c, nv), builder.fdiv(L.load(a, c), t), L.const(0.0)), a, c)
            return []

        L.loop(L.chunks(nvp), [], body)
        return context.get_dummy_value()

    return types.void(types.int64, types.int64, types.int64, types.float32), codegen


@intrinsic
def _lanes_fill(typingctx, a, lo, hi, value):
    """a[j] = value for lo ≤ j < hi (both multiples of 16)."""
    def codegen(context, builder, signature, args):
        a, lo, hi, value = args
        L = _Lanes(builder)
        v = L.splat(value)
        first = builder.sdiv(lo, ir.Constant(_I64, LANES))

        def body(c, acc):
            L.store(v, a, builder.add(first, c))
            return []

        L.loop(builder.sub(L.chunks(hi), first), [], body)
        return context.get_dummy_value()

    return types.void(types.int64, types.int64, types.int64, types.float32), codegen


@intrinsic
def _lanes_softmax_grad(typingctx, p, dp, ds, nv, nvp, scale):
    """ds[j] = p[j] · (dp[j] − Σ_i<nv dp[i]·p[i]) · scale for j < nv, 0 for nv ≤ j < nvp (a multiple of 16)."""
    def codegen(context, builder, signature, args):
        p, dp, ds, nv, nvp, scale = args
        L = _Lanes(builder)
        zero = L.const(0.0)

        def dot(c, acc):
            x = builder.fmul(L.load(dp, c), L.load(p, c))
            return [builder.fadd(acc[0], builder.select(L.visible(c, nv), x, zero))]

        (total,) = L.loop(L.chunks(nvp), [zero], dot)
        d, s = L.splat(L.combine(total, builder.fadd)), L.splat(scale)

        def grad(c, acc):
            x = builder.fmul(builder.fmul(L.load(p, c), builder.fsub(L.load(dp, c), d)), s)
            L.store(builder.select(L.visible(c, nv), x, zero), ds, c)
            return []

        L.loop(L.chunks(nvp), [], grad)
        return context.get_dummy_value()

    return types.void(types.int64, types.int64, types.int64, types.int64, types.int64, types.float32), codegen


def _weights4_kernel(given):
    """The `_lanes_weights4` intrinsic (`given` False: each row's max and sum found and stored) or
    `_lanes_weights4_given` (True: read from `stats`, the forward's)."""
    @intrinsic
    def weights4(typingctx, a, stride, nv0, nv1, nv2, nv3, stats):
        """`_weights_row` on four rows at once, each row's passes in the others' shadow: row r's nv_r
        scores at address a + 4r·stride (stride in float32s), its max and sum at stats[r] and stats[4 + r]
        (float32, at address `stats`). Every lane of the four rows' chunks up to the longest row's is
        written: the weights where visible, else 0. Each row's values, max and sum are `_weights_row`'s,
        bitwise: the same operations lane by lane, the same trees (a chunk past a row's keys adds −inf to
        its max and 0 to its sum, which change neither)."""
        i64 = types.int64
        sig = types.void(i64, i64, i64, i64, i64, i64, i64)

        def codegen(context, builder, signature, args):
            b = builder
            a, stride, *nvs, stats = args
            L = _Lanes(b)
            rows = [b.add(a, b.mul(ir.Constant(_I64, 4 * r), stride)) for r in range(4)]
            st = b.inttoptr(stats, _F32.as_pointer())
            slot = [b.gep(st, [ir.Constant(_I64, r)]) for r in range(8)]
            longest = nvs[0]
            for nv in nvs[1:]:
                longest = b.select(b.icmp_signed(">", nv, longest), nv, longest)
            chunks = L.chunks(longest)
            zero = ir.Constant(_F32, 0.0)
            if given:
                mx = [b.load(slot[r]) for r in range(4)]
            else:
                low = L.const(-np.inf)
                found = L.loop(chunks, [low] * 4, lambda c, acc: [
                    L.larger(acc[r], b.select(L.visible(c, nvs[r]), L.load(rows[r], c), low)) for r in range(4)])
                mx = []
                for r in range(4):
                    m = L.combine(found[r], L.larger)
                    m = b.select(b.fcmp_ordered("==", m, ir.Constant(_F32, -np.inf)), zero, m)
                    b.store(m, slot[r])
                    mx.append(m)
            ms = [L.splat(m) for m in mx]

            def exps(c, acc):
                out = []
                for r in range(4):
                    e = b.select(L.visible(c, nvs[r]), L.exp_at_most_0(b.fsub(L.load(rows[r], c), ms[r])),
                                 L.const(0.0))
                    L.store(e, rows[r], c)
                    out.append(b.fadd(acc[r], e))
                return out

            sums = L.loop(chunks, [L.const(0.0)] * 4, exps)
            if given:
                totals = [b.load(slot[4 + r]) for r in range(4)]
            else:
                totals = []
                for r in range(4):
                    t = L.combine(sums[r], b.fadd)
                    t = b.select(b.fcmp_ordered("==", t, zero), ir.Constant(_F32, 1.0), t)
                    b.store(t, slot[4 + r])
                    totals.append(t)
            ts = [L.splat(t) for t in totals]

            def divide(c, acc):
                for r in range(4):
                    L.store(b.select(L.visible(c, nvs[r]), b.fdiv(L.load(rows[r], c), ts[r]), L.const(0.0)),
                            rows[r], c)
                return []

            L.loop(chunks, [], divide)
            return context.get_dummy_value()

        return sig, codegen

    return weights4


_lanes_weights4 = _weights4_kernel(False)
_lanes_weights4_given = _weights4_kernel(True)


@_jit
def _padded(n):  # pragma: no cover - compiled
    """n rounded up to a multiple of `LANES`."""
    return (n + LANES - 1) // LANES * LANES


@_jit
def _hide(s, nv, block_row):  # pragma: no cover - compiled
    """s[j] = −inf for the j < nv that block_row blocks (a row's holes)."""
    for j in range(nv):
        if block_row[j]:
            s[j] = -np.inf


@_jit_sums
def _weights_row(s, nv, block_row, holes, mx, total, have_stats):  # pragma: no cover - compiled
    """The softmax of s[:nv] in place, −inf first where `holes` and block_row is True, and s[nv:nvp] set to
    0 (nvp: nv rounded up to 16; s must hold that many); `have_stats`: mx and total are the forward's, so
    the same scores give the same weights bitwise. Returns (max, sum) as `_softmax_rows` stores them (a
    row with no visible key: 0 and 1)."""
    if holes:
        _hide(s, nv, block_row)
    a = _address(s)
    if not have_stats:
        mx = _lanes_max(a, nv)
        if mx == -np.inf:
            mx = _f(0.0)
    nvp = _padded(nv)
    e_sum = _lanes_exp(a, nv, nvp, mx)
    if not have_stats:
        total = _ONE if e_sum == 0 else e_sum
    _lanes_div(a, nv, nvp, total)
    return mx, total


@_jit_sums
def _short_forward_heads(q, k, v, scale, block, brow, seen, holes, keep, dropped, pscale, out, w, want_w, m, t,
                         lo, hi):  # pragma: no cover - compiled
    """Heads lo..hi (of B·H, in order) of `short_attention_forward`, on buffers of their own."""
    _, n_heads, tq, d = q.shape
    tk, dv = v.shape[2], v.shape[3]
    tkp = _padded(tk)
    kt = np.zeros((d, tkp), np.float32)  # the head's keys transposed: the scores' B, rows of 16 keys
    s = np.zeros((4, tkp), np.float32)  # four rows of scores, then of weights
    stats = np.empty(8, np.float32)  # four rows' max and sum (`_lanes_weights4`)
    vis = np.empty(tq, np.int64)
    masked = block.shape[0] != 0
    unmasked = np.zeros(1, np.bool_)  # the block row passed when there is no mask (not read)
    for bh in range(lo, hi):
        b, h = bh // n_heads, bh % n_heads
        if bh == lo or h == 0:
            _read_ahead(q[b, h:], k[b, h:], v[b, h:], out[b, h:])
        qh, vh, oh, mh, th = q[b, h], v[b, h], out[b, h], m[b, h], t[b, h]
        wh = w[b, h] if want_w else w[0, 0]
        kh = keep[b, h] if dropped else keep[0, 0]
        sq, sv, so = qh.strides[0] // 4, vh.strides[0] // 4, oh.strides[0] // 4
        _transpose_into(k[b, h], kt)
        for i in range(tq):
            vis[i] = seen[brow[bh * tq + i]] if masked else tk
        i0 = 0
        while i0 < tq:
            rows = 4 if i0 + 4 <= tq else 1
            n = 0
            for r in range(rows):
                n = max(n, vis[i0 + r])
            cols = _padded(n)
            if n > 0:  # the scores of keys 0..n (rounded up to a tile), the rest never seen
                _gemm(_address(qh) + 4 * i0 * sq, sq, 1, _address(kt), tkp, _address(s), tkp, rows, cols, d, scale)
            if rows == 4:  # the four rows' softmax at once (each row's bits as `_weights_row`'s), 0 up to cols
                for r in range(4):
                    mrow = brow[bh * tq + i0 + r] if masked else 0
                    if masked and holes[mrow]:
                        _hide(s[r], vis[i0 + r], block[mrow])
                _lanes_weights4(_address(s), tkp, vis[i0], vis[i0 + 1], vis[i0 + 2], vis[i0 + 3], _address(stats))
            for r in range(rows):
                i = i0 + r
                sr = s[r]
                nvp = _padded(vis[i])
                if rows == 4:
                    mh[i], th[i] = stats[r], stats[4 + r]
                else:
                    mrow = brow[bh * tq + i] if masked else 0
                    mh[i], th[i] = _weights_row(sr, vis[i], block[mrow] if masked else unmasked,
                                                masked and holes[mrow], _f(0.0), _ONE, False)
                    if nvp < cols:  # keys another row of the block sees: 0 here, for the weighted sum
                        _lanes_fill(_address(sr), nvp, cols, _f(0.0))
                if want_w:
                    wr = wh[i]
                    for j in range(min(nvp, tk)):
                        wr[j] = sr[j]
                    wr[nvp:] = _f(0.0)
                if dropped:
                    kr = kh[i]
                    for j in range(vis[i]):
                        sr[j] = sr[j] * kr[j] * pscale
            if n > 0:
                _gemm(_address(s), tkp, 1, _address(vh), sv, _address(oh) + 4 * i0 * so, so, rows, dv, n, _ONE)
            else:
                for r in range(rows):
                    oh[i0 + r] = _f(0.0)
            i0 += rows


@_jit_sums
def short_attention_forward(q, k, v, scale, block, brow, keep, dropped, pscale, out, w, want_w, m, t,
                            parts):  # pragma: no cover - compiled
    """out = softmax(q kᵀ · scale, −inf where blocked) v, head by head (see the section's comment).

    q (B, H, Tq, D), k (B, H, Tk, D), v (B, H, Tk, Dv), out (B, H, Tq, Dv): float32, each row contiguous, any
    other strides; D and Dv multiples of `LANES`. block (R, Tk) bool, True = blocked, score row i (of B·H·Tq)
    taking block[brow[i]]; R = 0: none. keep (B, H, Tq, Tk) bool, dropout's mask on the weights (`dropped`),
    kept ones scaled by `pscale`; `parts`: how many runs of whole heads the parallel twin shares out (the
    serial kernel ignores it). Writes the weights before dropout into w (B, H, Tq, Tk) when `want_w`, and
    each row's max and sum into m and t (B, H, Tq); a row with every key blocked gets weights and output 0."""
    seen, holes = _mask_rows(block, k.shape[2])
    _short_forward_heads(q, k, v, scale, block, brow, seen, holes, keep, dropped, pscale, out, w, want_w, m, t,
                         0, q.shape[0] * q.shape[1])


@_jit_sums_parallel
def short_attention_forward_parallel(q, k, v, scale, block, brow, keep, dropped, pscale, out, w, want_w, m,
                                     t, parts):  # pragma: no cover
    seen, holes = _mask_rows(block, k.shape[2])
    n = q.shape[0] * q.shape[1]
    parts = max(1, min(n, parts))
    for c in prange(parts):
        _short_forward_heads(q, k, v, scale, block, brow, seen, holes, keep, dropped, pscale, out, w, want_w, m, t,
                             c * n // parts, (c + 1) * n // parts)


@_jit_sums
def _short_backward_heads(q, k, v, g, scale, block, brow, seen, holes, keep, dropped, pscale, m, t, w, have_w,
                          dq, dk, dv, lo, hi):  # pragma: no cover - compiled
    """Heads lo..hi of `short_attention_backward`, on buffers of their own."""
    _, n_heads, tq, d = q.shape
    tk, dvn = v.shape[2], v.shape[3]
    tkp = _padded(tk)
    kt = np.zeros((d, tkp), np.float32)
    vt = np.zeros((dvn, tkp), np.float32)
    s = np.zeros((4, tkp), np.float32)  # four rows of scores, then weights
    stats = np.empty(8, np.float32)  # four rows' max and sum, the forward's (`_lanes_weights4_given`)
    gp = np.zeros((4, tkp), np.float32)  # four rows of dP = g vᵀ
    pd = np.zeros((tq, tkp), np.float32)  # the head's weights after dropout, for dv
    ds = np.zeros((tq, tkp), np.float32)  # the head's dS · scale, for dq and dk
    vis = np.empty(tq, np.int64)
    upto, after = np.empty(tq, np.int64), np.empty(tq, np.int64)  # the largest vis up to / from each query
    masked = block.shape[0] != 0
    unmasked = np.zeros(1, np.bool_)
    for bh in range(lo, hi):
        b, h = bh // n_heads, bh % n_heads
        if bh == lo or h == 0:
            _read_ahead(q[b, h:], k[b, h:], v[b, h:], g[b, h:])
            _read_ahead(dq[b, h:], dk[b, h:], dv[b, h:], dv[b, h:])
        qh, kh, vh, gh = q[b, h], k[b, h], v[b, h], g[b, h]
        dqh, dkh, dvh, mh, th = dq[b, h], dk[b, h], dv[b, h], m[b, h], t[b, h]
        keeph = keep[b, h] if dropped else keep[0, 0]
        wh = w[b, h] if have_w else w[0, 0]
        sq, sk, sg = qh.strides[0] // 4, kh.strides[0] // 4, gh.strides[0] // 4
        sdq, sdk, sdv = dqh.strides[0] // 4, dkh.strides[0] // 4, dvh.strides[0] // 4
        if not have_w:  # kᵀ for the scores, made again
            _transpose_into(kh, kt)
        _transpose_into(vh, vt)
        for i in range(tq):
            vis[i] = seen[brow[bh * tq + i]] if masked else tk
        i0 = 0
        while i0 < tq:  # rows of queries: the weights again, dS, and dq = dS k
            rows = 4 if i0 + 4 <= tq else 1
            n = 0
            for r in range(rows):
                n = max(n, vis[i0 + r])
            cols = _padded(n)
            if n > 0:
                if not have_w:  # the scores, in the rows their weights take: P's own (s where dropout wants P')
                    _gemm(_address(qh) + 4 * i0 * sq, sq, 1, _address(kt), tkp,
                          _address(s) if dropped else _address(pd) + 4 * i0 * tkp, tkp, rows, cols, d, scale)
                _gemm(_address(gh) + 4 * i0 * sg, sg, 1, _address(vt), tkp, _address(gp), tkp, rows, cols, dvn, _ONE)
            four = rows == 4 and not have_w
            if four:  # the four rows' weights again at once, as the forward made them
                for r in range(4):
                    i = i0 + r
                    stats[r], stats[4 + r] = mh[i], th[i]
                    mrow = brow[bh * tq + i] if masked else 0
                    if masked and holes[mrow]:
                        _hide(s[r] if dropped else pd[i], vis[i], block[mrow])
                _lanes_weights4_given(_address(s) if dropped else _address(pd) + 4 * i0 * tkp, tkp, vis[i0],
                                      vis[i0 + 1], vis[i0 + 2], vis[i0 + 3], _address(stats))
            for r in range(rows):
                i = i0 + r
                nv = vis[i]
                nvp = _padded(nv)
                p, dp, pdr, dsr = s[r] if dropped else pd[i], gp[r], pd[i], ds[i]
                if have_w:  # the forward's weights, kept
                    wr = wh[i]
                    for j in range(nv):
                        p[j] = wr[j]
                    for j in range(nv, nvp):
                        p[j] = _f(0.0)
                elif not four:
                    mrow = brow[bh * tq + i] if masked else 0
                    _weights_row(p, nv, block[mrow] if masked else unmasked, masked and holes[mrow], mh[i], th[i],
                                 True)
                if dropped:
                    kr = keeph[i]
                    for j in range(nv):
                        f = kr[j] * pscale
                        dp[j] *= f
                        pdr[j] = p[j] * f
                    for j in range(nv, nvp):
                        pdr[j] = _f(0.0)
                _lanes_softmax_grad(_address(p), _address(dp), _address(dsr), nv, nvp, scale)
                # past the row's keys P' and dS are 0: dk and dv below read whole columns of the head's rows
                _lanes_fill(_address(pdr), nvp, tkp, _f(0.0))
                _lanes_fill(_address(dsr), nvp, tkp, _f(0.0))
            if n > 0:
                _gemm(_address(ds) + 4 * i0 * tkp, tkp, 1, _address(kh), sk, _address(dqh) + 4 * i0 * sdq, sdq,
                      rows, d, n, _ONE)
            else:
                for r in range(rows):
                    dqh[i0 + r] = _f(0.0)
            i0 += rows
        # the queries that see key j0 lie between the first i whose vis[:i + 1] reaches past j0 and the last
        # whose vis[i:] does: both move one way as j0 grows, so one sweep finds them for every key block
        for i in range(tq):
            upto[i] = vis[i] if i == 0 else max(upto[i - 1], vis[i])
        for i in range(tq - 1, -1, -1):
            after[i] = vis[i] if i == tq - 1 else max(after[i + 1], vis[i])
        first, last = 0, tq
        j0 = 0
        while j0 < tk:  # rows of keys: dk = dSᵀ q and dv = P'ᵀ g over the queries that see them
            rows = 4 if j0 + 4 <= tk else 1
            while first < tq and upto[first] <= j0:
                first += 1
            while last > 0 and after[last - 1] <= j0:
                last -= 1
            if last > first:
                _gemm(_address(ds) + 4 * (first * tkp + j0), 1, tkp, _address(qh) + 4 * first * sq, sq,
                      _address(dkh) + 4 * j0 * sdk, sdk, rows, d, last - first, _ONE)
                _gemm(_address(pd) + 4 * (first * tkp + j0), 1, tkp, _address(gh) + 4 * first * sg, sg,
                      _address(dvh) + 4 * j0 * sdv, sdv, rows, dvn, last - first, _ONE)
            else:
                for r in range(rows):
                    dkh[j0 + r] = _f(0.0)
                    dvh[j0 + r] = _f(0.0)
            j0 += rows


@_jit_sums
def short_attention_backward(q, k, v, g, scale, block, brow, keep, dropped, pscale, m, t, w, have_w, dq, dk, dv,
                             parts):  # pragma: no cover - compiled
    """dq, dk, dv of `short_attention_forward` for the output's gradient g (B, H, Tq, Dv), written into
    dq, dk, dv (laid out as q, k, v may be: rows contiguous); m, t the forward's row max and sum. The
    weights are the forward's w (B, H, Tq, Tk, C-contiguous) when `have_w`, else made again from q and k as
    the forward made them (the same values bitwise)."""
    seen, holes = _mask_rows(block, k.shape[2])
    _short_backward_heads(q, k, v, g, scale, block, brow, seen, holes, keep, dropped, pscale, m, t, w, have_w,
                          dq, dk, dv, 0, q.shape[0] * q.shape[1])


@_jit_sums_parallel
def short_attention_backward_parallel(q, k, v, g, scale, block, brow, keep, dropped, pscale, m, t, w, have_w,
                                      dq, dk, dv, parts):  # pragma: no cover - compiled
    seen, holes = _mask_rows(block, k.shape[2])
    n = q.shape[0] * q.shape[1]
    parts = max(1, min(n, parts))
    for c in prange(parts):
        _short_backward_heads(q, k, v, g, scale, block, brow, seen, holes, keep, dropped, pscale, m, t, w, have_w,
                              dq, dk, dv, c * n // parts, (c + 1) * n // parts)


# ---- one matrix product shared between the kernels' threads, each part on NumPy's OpenBLAS ---------------
# On two or more threads OpenBLAS keeps its own worker threads and, after each product, they spin for a
# while waiting for the next one, on the cores the kernels' pool (TBB) wants for the ops in between. Here
# the pool itself cuts a product into parts, whole rows (or columns) of the output each, and every part is
# one call of OpenBLAS's cblas_sgemm while OpenBLAS is set to one thread (seqlab.kernels.gemm_split sets
# it, and puts the count back after): one pool on the cores, and no worker of OpenBLAS's left spinning.
# cblas_sgemm is called through its address (found with ctypes by seqlab.blas and passed in as an
# integer), so this module still caches: a function that held a ctypes function as a global would be
# compiled again in every process.

CBLAS_ROW_MAJOR = 101
CBLAS_NO_TRANS = 111
CBLAS_TRANS = 112


@intrinsic
def _cblas_sgemm(typingctx, fn, ta, tb, m, n, k, alpha, a, lda, b, ldb, c, ldc):
    """cblas_sgemm(RowMajor, ta, tb, m, n, k, alpha, a, lda, b, ldb, 0, c, ldc) at address `fn`, for an
    OpenBLAS built with 64-bit integers (ILP64: m, n, k and the leading dims int64; the enums int32)."""
    i64 = types.int64
    sig = types.void(i64, i64, i64, i64, i64, i64, types.float32, i64, i64, i64, i64, i64, i64)

    def codegen(context, builder, signature, args):
        fn, ta, tb, m, n, k, alpha, a, lda, b, ldb, c, ldc = args
        f32, li64, li32 = ir.FloatType(), ir.IntType(64), ir.IntType(32)
        ptr = f32.as_pointer()
        fnty = ir.FunctionType(ir.VoidType(), [li32, li32, li32, li64, li64, li64, f32, ptr, li64, ptr, li64,
                                               f32, ptr, li64])
        call = builder.inttoptr(fn, fnty.as_pointer())
        builder.call(call, [ir.Constant(li32, CBLAS_ROW_MAJOR), builder.trunc(ta, li32), builder.trunc(tb, li32),
                            m, n, k, alpha, builder.inttoptr(a, ptr), lda, builder.inttoptr(b, ptr), ldb,
                            ir.Constant(f32, 0.0), builder.inttoptr(c, ptr), ldc])
        return context.get_dummy_value()

    return sig, codegen


@_jit
def _cut(total, p, parts):  # pragma: no cover - compiled
    """Where part p of `parts` starts: total·p/parts rounded down to a multiple of 16 (0 and total at the ends)."""
    if p <= 0:
        return 0
    if p >= parts:
        return total
    return min(total, total * p // parts // 16 * 16)


@_jit
def _gemm_part(sgemm, ta, tb, m, n, k, alpha, a, lda, b, ldb, c, ldc, p, parts, by_rows):  # pragma: no cover
    """Part p of `parts` of C = alpha · op(A) · op(B) (see `gemm_parts`): one cblas_sgemm call, or nothing
    where the part is empty."""
    lo = _cut(m if by_rows else n, p, parts)
    hi = _cut(m if by_rows else n, p + 1, parts)
    if hi > lo:
        if by_rows:  # rows lo..hi of op(A): row lo of A, or column lo of the stored Aᵀ
            at = a + 4 * (lo * lda if ta == CBLAS_NO_TRANS else lo)
            _cblas_sgemm(sgemm, ta, tb, hi - lo, n, k, alpha, at, lda, b, ldb, c + 4 * lo * ldc, ldc)
        else:  # columns lo..hi of op(B)
            bt = b + 4 * (lo if tb == CBLAS_NO_TRANS else lo * ldb)
            _cblas_sgemm(sgemm, ta, tb, m, hi - lo, k, alpha, a, lda, bt, ldb, c + 4 * lo, ldc)


@_jit_parallel
def gemm_parts(sgemm, ta, tb, m, n, k, alpha, a, lda, b, ldb, c, ldc, parts, by_rows):  # pragma: no cover
    """C = alpha · op(A) · op(B) (m × n, row-major at address c, row stride ldc), op(A) m × k and op(B) k × n
    at addresses a and b as cblas_sgemm (at address `sgemm`) takes them (ta, tb: `CBLAS_NO_TRANS` or
    `CBLAS_TRANS`; lda, ldb their row strides as stored), in `parts` parts shared out by the pool: runs of
    rows of C (`by_rows`) or of its columns, starting at multiples of 16, each one cblas_sgemm call. Every
    element of C is made by exactly one call, from the same row and column as in the whole product.
    Addresses and strides must describe arrays the caller holds (seqlab.kernels.gemm_split checks). No
    serial twin, so no "_parallel" in the name: on one thread NumPy's own product is the serial version."""
    for p in prange(parts):
        _gemm_part(sgemm, ta, tb, m, n, k, alpha, a, lda, b, ldb, c, ldc, p, parts, by_rows)


@_jit_parallel
def gemm_two(sgemm, first, second, parts):  # pragma: no cover - compiled
    """Two independent products in one hand-off, each in `parts` parts as `gemm_parts` cuts them (with two
    threads: each whole, one per thread). `first` and `second`: int64 rows (ta, tb, m, n, k, a, lda, b,
    ldb, c, ldc, by_rows) as `gemm_parts` takes those arguments; alpha 1."""
    for i in prange(2 * parts):
        q = first if i < parts else second
        _gemm_part(sgemm, q[0], q[1], q[2], q[3], q[4], _ONE, q[5], q[6], q[7], q[8], q[9], q[10], i % parts,
                   parts, q[11] != 0)
