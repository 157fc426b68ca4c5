"""Fused CUDA kernels for CuPy arrays: what `seqlab.kernels` does with Numba on the CPU, on the GPU.

Composed from CuPy's array operations, a softmax over attention scores is
nine kernels, each a pass through GPU memory (the scale, the mask, the max,
a guard, the shift, exp, the sum, a guard, the division), and its backward
four more; on an H200, gpt-train at GPT-2 small's size spent half its step
in such element-wise passes (benchmarks/gpu_profile.py, docs/results.md).
The kernels here do each of these steps as one kernel:

- `softmax_rows`: softmax(s · scale + bias) over the last axis, the bias
  (an attention mask's −inf and 0, or a position bias) broadcast along
  every axis, with the row max and sum returned or taken back (so backward
  computes the weights again without the two reductions); `softmax_backward`;
- `attention_weights`: the scores' product, then that softmax with the
  scale and the mask folded in;
- `log_softmax_rows` and `cross_entropy_backward` (the head's logits, one
  row of the vocabulary per token);
- `layer_norm_forward` / `layer_norm_backward`, and `column_sums` (the bias
  and LayerNorm weight gradients: a deterministic two-stage sum, where
  CuPy's einsum went through cuBLAS's matrix-vector product);
- `dropout`, `adam` (one pass per parameter instead of ~14) and GELU
  (`gelu_forward`, `gelu_backward`; erf or tanh form).

In the row kernels a warp (32 threads) owns each row: the row's reductions
are warp shuffles, no shared memory, and a row is read twice and written
once (the column sums use blocks of 32 columns; the element-wise kernels a
grid-stride loop). Each function
returns None when the arrays are not CuPy float32 in C order (or
``SEQLAB_KERNELS=numpy`` switches the kernels off), and the caller then
runs the composed formula, which the tests hold every kernel to
(tests/test_cuda_kernels.py, on a machine with a GPU); tests/test_cuda_source.py
compiles the source with NVRTC on every test run, GPU or not.
"""
from __future__ import annotations

import functools

import numpy as np

_FLOAT32 = np.dtype(np.float32)
_WARPS = 8            # rows per block of the row kernels (256 threads)
_THREADS = 256        # threads per block of the element-wise kernels
_MAX_BLOCKS = 1 << 16  # element-wise kernels loop over the rest (grid-stride)

SOURCE = r"""
#define FULL_MASK 0xffffffffu
#define NEG_INF __int_as_float(0xff800000)

__device__ __forceinline__ float warp_max(float v) {
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(FULL_MASK, v, o));
    return v;
}

__device__ __forceinline__ float warp_sum(float v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(FULL_MASK, v, o);
    return v;
}

// One warp per row of x (rows, n); y may be x. s = x * alpha (+ bias[boff[row] + j * bstride]).
// stats_in: m_io and l_io hold each row's max and sum (from an earlier call on the same s), used as they are;
// else they are computed (a row of -inf only: max 0 and sum 1, so its softmax is 0) and, with stats_out, stored.
extern "C" __global__ void softmax_rows(const float* x, float* y, long long rows, int n, float alpha,
                                        const float* bias, const long long* boff, long long bstride, int has_bias,
                                        float* m_io, float* l_io, int stats_in, int stats_out) {
    long long row = (long long)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    if (row >= rows) return;
    int lane = threadIdx.x & 31;
    const float* xr = x + row * (long long)n;
    float* yr = y + row * (long long)n;
    const float* br = has_bias ? bias + boff[row] : bias;
    float m, l;
    if (stats_in) {
        m = m_io[row];
        l = l_io[row];
    } else {
        float mx = NEG_INF, sm = 0.f;  // this lane's running max and sum of exp(s - max)
        for (int j = lane; j < n; j += 32) {
            float s = xr[j] * alpha;
            if (has_bias) s += br[j * bstride];
            if (s > mx) {
                sm = sm * expf(mx - s) + 1.f;
                mx = s;
            } else if (s != NEG_INF) {
                sm += expf(s - mx);
            }
        }
        m = warp_max(mx);
        l = warp_sum(mx == NEG_INF ? 0.f : sm * expf(mx - m));
        if (m == NEG_INF) {
            m = 0.f;
            l = 1.f;
        }
        if (stats_out && lane == 0) {
            m_io[row] = m;
            l_io[row] = l;
        }
    }
    for (int j = lane; j < n; j += 32) {
        float s = xr[j] * alpha;
        if (has_bias) s += br[j * bstride];
        yr[j] = expf(s - m) / l;
    }
}

// out = w * (g - sum(g * w)) * scale over each row; out may be g.
extern "C" __global__ void softmax_backward(const float* g, const float* w, float* out, long long rows, int n,
                                            float scale) {
    long long row = (long long)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    if (row >= rows) return;
    int lane = threadIdx.x & 31;
    long long base = row * (long long)n;
    float d = 0.f;
    for (int j = lane; j < n; j += 32) d += g[base + j] * w[base + j];
    d = warp_sum(d);
    for (int j = lane; j < n; j += 32) out[base + j] = (g[base + j] - d) * w[base + j] * scale;
}

// y = x - max - log(sum(exp(x - max))) over each row.
extern "C" __global__ void log_softmax_rows(const float* x, float* y, long long rows, int n) {
    long long row = (long long)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    if (row >= rows) return;
    int lane = threadIdx.x & 31;
    long long base = row * (long long)n;
    float mx = NEG_INF, sm = 0.f;
    for (int j = lane; j < n; j += 32) {
        float s = x[base + j];
        if (s > mx) {
            sm = sm * expf(mx - s) + 1.f;
            mx = s;
        } else if (s != NEG_INF) {
            sm += expf(s - mx);
        }
    }
    float m = warp_max(mx);
    float l = warp_sum(mx == NEG_INF ? 0.f : sm * expf(mx - m));
    float lse = m + logf(l);
    for (int j = lane; j < n; j += 32) y[base + j] = x[base + j] - lse;
}

// out[row, j] = (exp(logp[row, j]) - eps_c - (j == target[row] ? one_minus_eps : 0)) * scale[row]
extern "C" __global__ void cross_entropy_backward(const float* logp, const long long* target, const float* scale,
                                                  float* out, long long rows, int n, float eps_c,
                                                  float one_minus_eps) {
    long long row = (long long)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    if (row >= rows) return;
    int lane = threadIdx.x & 31;
    long long base = row * (long long)n;
    long long t = target[row];
    float sc = scale[row];
    for (int j = lane; j < n; j += 32) {
        float v = expf(logp[base + j]) - eps_c;
        if (j == t) v -= one_minus_eps;
        out[base + j] = v * sc;
    }
}

// LayerNorm over each row of x (rows, d): mean, rstd = 1 / sqrt(var + eps) (biased var), y = (x - mean) * rstd * w + b.
extern "C" __global__ void layer_norm_forward(const float* x, const float* w, const float* b, float* y, float* mean,
                                              float* rstd, long long rows, int d, float eps) {
    long long row = (long long)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    if (row >= rows) return;
    int lane = threadIdx.x & 31;
    long long base = row * (long long)d;
    float inv_d = 1.f / (float)d;
    float s = 0.f;
    for (int j = lane; j < d; j += 32) s += x[base + j];
    float mu = warp_sum(s) * inv_d;
    float v = 0.f;
    for (int j = lane; j < d; j += 32) {
        float c = x[base + j] - mu;
        v += c * c;
    }
    float r = 1.f / sqrtf(warp_sum(v) * inv_d + eps);
    for (int j = lane; j < d; j += 32) y[base + j] = (x[base + j] - mu) * r * w[j] + b[j];
    if (lane == 0) {
        mean[row] = mu;
        rstd[row] = r;
    }
}

// LayerNorm's input gradient, each row: gh = g * w, xhat = (x - mean) * rstd,
// gx = (gh - mean(gh) - xhat * mean(gh * xhat)) * rstd.
extern "C" __global__ void layer_norm_backward(const float* g, const float* x, const float* mean, const float* rstd,
                                               const float* w, float* gx, long long rows, int d) {
    long long row = (long long)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    if (row >= rows) return;
    int lane = threadIdx.x & 31;
    long long base = row * (long long)d;
    float mu = mean[row], r = rstd[row], inv_d = 1.f / (float)d;
    float a = 0.f, c = 0.f;
    for (int j = lane; j < d; j += 32) {
        float gh = g[base + j] * w[j];
        a += gh;
        c += gh * (x[base + j] - mu) * r;
    }
    float m1 = warp_sum(a) * inv_d, m2 = warp_sum(c) * inv_d;
    for (int j = lane; j < d; j += 32) {
        float xhat = (x[base + j] - mu) * r;
        gx[base + j] = (g[base + j] * w[j] - m1 - xhat * m2) * r;
    }
}

// Column sums of g (rows, d) over one chunk of rows per blockIdx.y, into part_g[chunk, col]; with_xhat: also of
// g * xhat, xhat = (x - mean[row]) * rstd[row], into part_gx. Blocks of 32 x 8 threads: 32 columns, 8 row lanes.
extern "C" __global__ void column_sums(const float* g, const float* x, const float* mean, const float* rstd,
                                       long long rows, int d, int rows_per_chunk, int with_xhat, float* part_g,
                                       float* part_gx) {
    __shared__ float sg[8][33];
    __shared__ float sx[8][33];
    int col = blockIdx.x * 32 + threadIdx.x;
    long long start = (long long)blockIdx.y * rows_per_chunk;
    long long stop = start + rows_per_chunk < rows ? start + rows_per_chunk : rows;
    float a = 0.f, c = 0.f;
    if (col < d) {
        for (long long r = start + threadIdx.y; r < stop; r += 8) {
            float v = g[r * d + col];
            a += v;
            if (with_xhat) c += v * (x[r * d + col] - mean[r]) * rstd[r];
        }
    }
    sg[threadIdx.y][threadIdx.x] = a;
    sx[threadIdx.y][threadIdx.x] = c;
    __syncthreads();
    if (threadIdx.y == 0 && col < d) {
        a = 0.f;
        c = 0.f;
        for (int i = 0; i < 8; ++i) {
            a += sg[i][threadIdx.x];
            c += sx[i][threadIdx.x];
        }
        part_g[(long long)blockIdx.y * d + col] = a;
        if (with_xhat) part_gx[(long long)blockIdx.y * d + col] = c;
    }
}

// out = x * keep * scale (keep: bool); out may be x.
extern "C" __global__ void scale_kept(const float* x, const bool* keep, float scale, float* out, long long n) {
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
        out[i] = (x[i] * (float)keep[i]) * scale;
}

// One Adam(W) step, in place: as seqlab.optim.Adam._update (and the Numba kernel _adam_values).
extern "C" __global__ void adam(float* p, const float* g, float* m, float* v, long long n, float decay, float l2,
                                float one_b1, float b2, float one_b2, float bc2, float eps, float step) {
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x) {
        float pi = p[i];
        float gi = l2 != 0.f ? g[i] + l2 * pi : g[i];
        float mi = m[i] + (gi - m[i]) * one_b1;
        float vi = v[i] * b2 + (gi * gi) * one_b2;
        m[i] = mi;
        v[i] = vi;
        p[i] = pi * decay - (mi / (sqrtf(vi) / bc2 + eps)) * step;
    }
}

#define GELU_K 0.7978845608028654f  // sqrt(2 / pi)
#define GELU_C 0.044715f

// GELU: x * Phi(x) (tanh_form 0), or x * h with h = 0.5 (1 + tanh u) = 1 / (1 + exp(-2u)),
// u = sqrt(2/pi) (x + 0.044715 x^3): the logistic form keeps h accurate where it is tiny (x << 0), as the
// composed formula (activation._gelu_tanh_forward_block) does; exp(-2u) overflowing gives h = 0. out may be x.
__device__ __forceinline__ float gelu_h(float v) {
    return 1.f / (1.f + expf(-2.f * GELU_K * v * (1.f + GELU_C * v * v)));
}

extern "C" __global__ void gelu_forward(const float* x, float* out, long long n, int tanh_form) {
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x) {
        float v = x[i];
        out[i] = tanh_form ? v * gelu_h(v) : 0.5f * v * (1.f + erff(v * 0.7071067811865476f));
    }
}

// grad * GELU'(x); out may be grad. The tanh form: h + x h' with h' = 2 h (1 - h) u', and x (1 - h) = x - x h
// (exact where h >= 1/2), as the composed formula (activation._gelu_tanh_backward_block).
extern "C" __global__ void gelu_backward(const float* x, const float* grad, float* out, long long n, int tanh_form) {
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x) {
        float v = x[i], d;
        if (tanh_form) {
            float h = gelu_h(v);
            d = h * (1.f + 2.f * GELU_K * (1.f + 3.f * GELU_C * v * v) * (v - v * h));
        } else {
            d = 0.5f * (1.f + erff(v * 0.7071067811865476f)) + v * expf(-0.5f * v * v) * 0.3989422804014327f;
        }
        out[i] = grad[i] * d;
    }
}
"""


@functools.lru_cache(maxsize=None)
def _module():
    import cupy

    return cupy.RawModule(code=SOURCE, options=("-std=c++17",))


def _kernel(name: str):
    return _module().get_function(name)


def _cupy(*arrays) -> bool:
    """Whether every array is an array of a CuPy that compiles kernels (the test suite's CPU stand-in for
    CuPy has no RawModule: its arrays take the composed formulas)."""
    from seqlab import backend

    cp = backend._cupy
    return cp is not None and hasattr(cp, "RawModule") and all(isinstance(a, cp.ndarray) for a in arrays)


def takes(*arrays) -> bool:
    """Whether the kernels run on these arrays: CuPy float32 in C order, not empty, kernels not switched off."""
    if not arrays or not _cupy(*arrays):
        return False
    if any(a.dtype != _FLOAT32 or not a.flags.c_contiguous or a.size == 0 for a in arrays):
        return False
    return _enabled()


def _enabled() -> bool:
    """False when ``SEQLAB_KERNELS=numpy`` (or `seqlab.kernels.use("numpy")`) asks for the composed formulas."""
    from seqlab import kernels  # (here: seqlab.kernels imports this module)

    return kernels._choice() != "numpy"


def _f(x) -> np.float32:
    return np.float32(x)


def _rows_launch(rows: int) -> tuple:
    return ((rows + _WARPS - 1) // _WARPS,), (32 * _WARPS,)


def _flat_launch(n: int) -> tuple:
    return (max(1, min((n + _THREADS - 1) // _THREADS, _MAX_BLOCKS)),), (_THREADS,)


@functools.lru_cache(maxsize=64)
def _row_offsets(shape: tuple, bias_shape: tuple, bias_strides: tuple):
    """Each row's first bias element (in elements from the bias's start) for a bias broadcast to `shape`."""
    import cupy

    lead = shape[:-1]
    offsets = cupy.zeros(lead, dtype=cupy.int64)
    pad = len(shape) - len(bias_shape)
    for axis, size in enumerate(lead):
        b_axis = axis - pad
        if b_axis < 0 or bias_shape[b_axis] == 1:
            continue
        view = [1] * len(lead)
        view[axis] = size
        offsets += cupy.arange(size, dtype=cupy.int64).reshape(view) * (bias_strides[b_axis] // 4)
    return cupy.ascontiguousarray(offsets).reshape(-1)


def _bias_args(shape: tuple, bias):
    """(bias array, row offsets, column stride) for `softmax_rows`; None when the bias does not broadcast."""
    if bias.dtype != _FLOAT32:
        bias = bias.astype(np.float32)
    if bias.ndim > len(shape) or any(b not in (1, s) for b, s in zip(bias.shape[::-1], shape[::-1])):
        return None
    col_stride = 0 if bias.shape[-1] == 1 and shape[-1] != 1 else bias.strides[-1] // 4
    return bias, _row_offsets(tuple(shape), tuple(bias.shape), tuple(bias.strides)), np.int64(col_stride)


def softmax_rows(s, stats: tuple | None = None, in_place: bool = True, bias=None, scale: float = 1.0):
    """softmax(s · scale + bias) over the last axis: (result, (max, sum)) as `seqlab.kernels.softmax_rows`
    (keepdims statistics); `stats` given: those are used. `bias` broadcasts to s (any axis); None when the
    kernels do not take the arrays."""
    if not takes(s) or s.ndim == 0 or (bias is not None and not _cupy(bias)):
        return None
    import cupy

    n = s.shape[-1]
    rows = s.size // n
    if bias is None:  # s stands in for the bias and its offsets, which the kernel then never reads
        b, offsets, col_stride, has_bias = s, s, np.int64(0), 0
    else:
        args = _bias_args(s.shape, bias)
        if args is None:
            return None
        (b, offsets, col_stride), has_bias = args, 1
    out = s if in_place else cupy.empty_like(s)
    if stats is None:
        m = cupy.empty(rows, dtype=np.float32)
        total = cupy.empty(rows, dtype=np.float32)
    else:
        m = cupy.ascontiguousarray(stats[0], dtype=np.float32).reshape(-1)
        total = cupy.ascontiguousarray(stats[1], dtype=np.float32).reshape(-1)
    _kernel("softmax_rows")(*_rows_launch(rows), (
        s, out, np.int64(rows), np.int32(n), _f(scale), b, offsets, col_stride, np.int32(has_bias), m, total,
        np.int32(stats is not None), np.int32(stats is None)))
    keep = s.shape[:-1] + (1,)
    return out, (m.reshape(keep), total.reshape(keep))


def attention_weights(q, k, bias=None, block=None, scale: float = 1.0, stats: tuple | None = None):
    """(softmax(q kᵀ · scale + bias), −inf where `block`), (max, sum)) as `fused.attention_weights` with
    `with_stats`: the product, then one kernel for the scale, the mask and the softmax. None when the
    kernels do not take q and k."""
    if not _cupy(q, k) or q.dtype != _FLOAT32 or k.dtype != _FLOAT32 or q.size == 0 or k.size == 0:
        return None  # (q and k may be views in any layout: the product takes them as they are)
    if not _enabled():
        return None
    import cupy

    last = bias
    if block is not None:
        neg = cupy.where(cupy.asarray(block), np.float32(-np.inf), np.float32(0))
        last = neg if bias is None else cupy.asarray(bias, dtype=np.float32) + neg
    if last is not None and not _cupy(last):
        last = cupy.asarray(last)
    s = cupy.matmul(q, k.swapaxes(-1, -2))  # (..., Tq, Tk), a new array: the softmax writes into it
    return softmax_rows(s, stats, in_place=True, bias=last, scale=scale)


def softmax_backward(g, w, out=None, scale: float = 1.0):
    """w ⊙ (g − Σ g ⊙ w) · scale over the last axis (into `out`, which may be `g`)."""
    if not takes(g, w) or g.shape != w.shape or (out is not None and not takes(out)):
        return None
    import cupy

    out = cupy.empty_like(g) if out is None else out
    n = g.shape[-1]
    rows = g.size // n
    _kernel("softmax_backward")(*_rows_launch(rows), (g, w, out, np.int64(rows), np.int32(n), _f(scale)))
    return out


def log_softmax_rows(x):
    """x − max − log Σ exp(x − max) over the last axis, as a new array (None when not taken)."""
    if not takes(x) or x.ndim == 0:
        return None
    import cupy

    out = cupy.empty_like(x)
    n = x.shape[-1]
    rows = x.size // n
    _kernel("log_softmax_rows")(*_rows_launch(rows), (x, out, np.int64(rows), np.int32(n)))
    return out


def cross_entropy_backward(logp, target, scale, eps: float = 0.0):
    """(exp(logp) − ε/C − (1 − ε)·onehot(target)) · scale[:, None] for logp (N, C), target (N,) int, and
    scale (N,) float (each row's loss weight): `CrossEntropy.backward`'s formula in one pass."""
    if not takes(logp) or logp.ndim != 2 or not _cupy(target, scale):
        return None
    import cupy

    rows, n = logp.shape
    out = cupy.empty_like(logp)
    target = cupy.ascontiguousarray(target, dtype=cupy.int64)
    scale = cupy.ascontiguousarray(scale, dtype=cupy.float32)
    _kernel("cross_entropy_backward")(*_rows_launch(rows), (
        logp, target, scale, out, np.int64(rows), np.int32(n), _f(eps / n), _f(1 - eps)))
    return out


def layer_norm_forward(x2, w, b, eps: float):
    """(y, μ (N, 1), r (N, 1)) as `seqlab.kernels.layer_norm_forward`, for CuPy arrays."""
    if not takes(x2) or x2.ndim != 2:
        return None
    import cupy

    rows, d = x2.shape
    w = cupy.ones(d, np.float32) if w is None else w
    b = cupy.zeros(d, np.float32) if b is None else b
    if not takes(w, b):
        return None
    y = cupy.empty_like(x2)
    mean = cupy.empty(rows, np.float32)
    rstd = cupy.empty(rows, np.float32)
    _kernel("layer_norm_forward")(*_rows_launch(rows), (
        x2, w, b, y, mean, rstd, np.int64(rows), np.int32(d), _f(eps)))
    return y, mean[:, None], rstd[:, None]


def _column_sums(g2, x2=None, mean=None, rstd=None):
    """Σ over the rows of g2 (N, D), and with x2, μ, r also Σ g2 ⊙ x̂: (gb, gw or None)."""
    import cupy

    rows, d = g2.shape
    rows_per_chunk = max(64, -(-rows // 1024))
    chunks = max(1, -(-rows // rows_per_chunk))
    part_g = cupy.empty((chunks, d), np.float32)
    with_xhat = x2 is not None
    part_gx = cupy.empty((chunks, d), np.float32) if with_xhat else part_g  # (without x̂: g2 and part_g stand
    # in below for the arrays the kernel then never reads)
    _kernel("column_sums")((-(-d // 32), chunks), (32, 8), (
        g2, x2 if with_xhat else g2, mean if with_xhat else g2, rstd if with_xhat else g2, np.int64(rows),
        np.int32(d), np.int32(rows_per_chunk), np.int32(with_xhat), part_g, part_gx))
    return part_g.sum(axis=0), part_gx.sum(axis=0) if with_xhat else None


def column_sums(a2):
    """Σ over the rows of a 2-D CuPy array (a bias gradient), deterministic; None when not taken."""
    if not takes(a2) or a2.ndim != 2:
        return None
    return _column_sums(a2)[0]


def layer_norm_backward(g2, x2, mean, rstd, w):
    """(gx, gw, gb) as `seqlab.kernels.layer_norm_backward`, for CuPy arrays."""
    if not takes(g2, x2) or g2.shape != x2.shape or g2.ndim != 2:
        return None
    import cupy

    rows, d = g2.shape
    mean = cupy.ascontiguousarray(mean, dtype=np.float32).reshape(-1)
    rstd = cupy.ascontiguousarray(rstd, dtype=np.float32).reshape(-1)
    w = cupy.ones(d, np.float32) if w is None else w
    if not takes(w):
        return None
    gx = cupy.empty_like(g2)
    _kernel("layer_norm_backward")(*_rows_launch(rows), (g2, x2, mean, rstd, w, gx, np.int64(rows), np.int32(d)))
    gb, gw = _column_sums(g2, x2, mean, rstd)
    return gx, gw, gb


def dropout(x, keep, scale, out=None):
    """x ⊙ keep · scale (into `out`, which may be `x`) for a bool CuPy `keep` of x's shape."""
    if (not takes(x) or not _cupy(keep) or keep.dtype != np.bool_ or keep.shape != x.shape
            or not keep.flags.c_contiguous or (out is not None and not takes(out))):
        return None
    import cupy

    out = cupy.empty_like(x) if out is None else out
    _kernel("scale_kept")(*_flat_launch(x.size), (x, keep, _f(scale), out, np.int64(x.size)))
    return out


def adam(p, g, m, v, consts) -> bool:
    """One Adam(W) step in place, `consts` as `seqlab.kernels.adam` takes them; False when not taken."""
    if not takes(p, g, m, v) or not p.shape == g.shape == m.shape == v.shape:
        return False
    _kernel("adam")(*_flat_launch(p.size), (p, g, m, v, np.int64(p.size), *(_f(c) for c in consts)))
    return True


def gelu_forward(x, approximate: str = "none", out=None):
    """GELU(x), erf or tanh form (into `out`, a new array when None)."""
    if not takes(x) or (out is not None and (not takes(out) or out.shape != x.shape)):
        return None
    import cupy

    out = cupy.empty_like(x) if out is None else out
    _kernel("gelu_forward")(*_flat_launch(x.size), (x, out, np.int64(x.size), np.int32(approximate == "tanh")))
    return out


def gelu_backward(x, grad, approximate: str = "none"):
    """grad · GELU'(x) as a new array."""
    if not takes(x, grad) or x.shape != grad.shape:
        return None
    import cupy

    out = cupy.empty_like(x)
    _kernel("gelu_backward")(*_flat_launch(x.size), (x, grad, out, np.int64(x.size),
                                                     np.int32(approximate == "tanh")))
    return out


__all__ = ["SOURCE", "adam", "attention_weights", "column_sums", "cross_entropy_backward", "dropout",
           "gelu_backward", "gelu_forward", "layer_norm_backward", "layer_norm_forward", "log_softmax_rows",
           "softmax_backward", "softmax_rows", "takes"]
