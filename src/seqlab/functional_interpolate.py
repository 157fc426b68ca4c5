"""`F.interpolate` (and the deprecated `F.upsample*`) with torch's names, arguments, sizes and errors.

Every mode but 'nearest' is *separable* and *linear*: output position i along a spatial dim is a weighted sum of
a few input positions along that dim, with weights that depend on the sizes only. So each dim is one product
with a constant (out, in) matrix, and a 2-d resize is

    y = W_h @ x @ W_wᵀ                     (x (N, C, H, W); W_h (oh, H), W_w (ow, W))

whose gradient is the products' (dx = W_hᵀ @ dy @ W_w), second derivatives included: no hand-written backward.
The matrices follow torch's source-index rules (ATen's UpSample.h, re-derived here):

- align_corners=True: src = i · (in − 1)/(out − 1) (corner pixel centres meet);
- otherwise src = (i + ½) · scale − ½ (pixel areas meet), scale = 1/scale_factor when one was given (and not
  recomputed), else in/out; 'linear' clamps src at 0, 'bicubic' does not;
- linear: the two neighbours ⌊src⌋, ⌊src⌋ + 1 with weights 1 − t, t (t = src − ⌊src⌋);
- bicubic: the four neighbours ⌊src⌋ − 1 … ⌊src⌋ + 2, clamped to the edge, with Keys' cubic convolution weights
  (a = −0.75, as torch and OpenCV);
- area: the adaptive average pool's windows [⌊i·in/out⌋, ⌈(i+1)·in/out⌉);
- antialias (bilinear, bicubic; Pillow's resampling): when shrinking by s, the filter (triangle, or Keys' cubic
  with a = −0.5) is stretched s times and each row of weights normalised to sum to 1.

'nearest' and 'nearest-exact' copy one input position per output position, src = ⌊i · scale⌋ or
⌊(i + ½) · scale⌋ computed in float32 as torch does (which matters at exact ties); they are index ops whose
gradient scatters back.
"""
from __future__ import annotations

import math
import warnings

import numpy as np

from seqlab import backend
from seqlab.autograd.ops.conv import adaptive_bounds
from seqlab.autograd.tensor import Tensor
from seqlab.autograd.torch_errors import ArgumentError, not_implemented

__all__ = ["interpolate", "upsample", "upsample_nearest", "upsample_bilinear"]

_MODES = ("nearest", "linear", "bilinear", "bicubic", "trilinear", "area", "nearest-exact")
_LINEAR_NDIM = {"linear": 3, "bilinear": 4, "trilinear": 5}
_AXES = {1: "W", 2: "HW", 3: "DHW"}


def _t(x) -> Tensor:
    return x if isinstance(x, Tensor) else Tensor._of(x)


def _is_integer(v) -> bool:
    """torch's _is_integer: an int (not a bool), a NumPy integer, or an integer tensor."""
    if isinstance(v, Tensor):
        return np.dtype(v.dtype).kind in "iu"
    return isinstance(v, (int, np.integer)) and not isinstance(v, bool)


def interpolate(input: Tensor, size=None, scale_factor=None, mode: str = "nearest",  # noqa: A002
                align_corners: bool | None = None, recompute_scale_factor: bool | None = None,
                antialias: bool = False) -> Tensor:
    """Resize the spatial dims of x (N, C, L), (N, C, H, W) or (N, C, D, H, W) to `size`, or by `scale_factor`
    (output size ⌊in · s⌋), as torch.nn.functional.interpolate.

    mode: 'nearest' | 'nearest-exact' (any of the three ranks), 'linear' (3-D), 'bilinear' | 'bicubic' (4-D),
    'trilinear' (5-D), 'area' (adaptive average pooling, any rank). align_corners (linear modes only; default
    False) maps the corner pixels' centres onto each other. With a scale_factor, the source positions use 1/s
    unless recompute_scale_factor=True, which uses in/out as if the size had been given. antialias=True
    (bilinear and bicubic) low-pass filters when shrinking, as Pillow.
    """
    x = _t(input)
    if mode in ("nearest", "area", "nearest-exact"):
        if align_corners is not None:
            raise ValueError("align_corners option can only be set with the interpolating modes: "
                             "linear | bilinear | bicubic | trilinear")
    elif align_corners is None:
        align_corners = False
    dim = x.ndim - 2
    sizes, scales = _output_sizes(x, dim, size, scale_factor, mode, recompute_scale_factor)
    if mode == "lanczos":
        raise NotImplementedError("interpolate(mode='lanczos') is not implemented in seqlab; mode='bicubic' with "
                                  "antialias=True is the nearest it has")
    if antialias and not (mode in ("bilinear", "bicubic") and x.ndim == 4):
        raise ValueError("Anti-alias option is restricted to bilinear, bicubic, and lanczos modes and requires a "
                         "4-D tensor as input")
    if x.ndim not in (3, 4, 5) or mode not in _MODES or (mode == "bicubic" and x.ndim != 4):
        if mode in _LINEAR_NDIM and x.ndim in (3, 4, 5):
            raise NotImplementedError(f"Got {x.ndim}D input, but {mode} mode needs {_LINEAR_NDIM[mode]}D input")
        raise NotImplementedError(f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {x.ndim}D) for the "
                                  f"modes: nearest | linear | bilinear | bicubic | trilinear | area | nearest-exact "
                                  f"(got {mode})")
    if mode in _LINEAR_NDIM and x.ndim != _LINEAR_NDIM[mode]:
        raise NotImplementedError(f"Got {x.ndim}D input, but {mode} mode needs {_LINEAR_NDIM[mode]}D input")
    kind = np.dtype(x.dtype).kind
    if kind != "f" and not (mode.startswith("nearest") and np.dtype(x.dtype) == np.uint8):
        raise not_implemented(f"interpolate(mode={mode!r})", x.dtype, "floating-point (and, for the nearest "
                              "modes, uint8)")
    spatial = x.shape[2:]
    if mode == "area":
        return _area(x, sizes)
    _check_sizes(x, spatial, sizes)
    if mode.startswith("nearest"):
        return _nearest(x, sizes, scales, exact=mode == "nearest-exact")
    y = x
    for d in range(dim):
        n_in, n_out, scale = spatial[d], sizes[d], None if scales is None else scales[d]
        if antialias:
            w = _antialias_weights(n_in, n_out, scale, align_corners, cubic=mode == "bicubic")
        elif mode == "bicubic":
            w = _cubic_weights(n_in, n_out, scale, align_corners, x.dtype)
        else:
            w = _linear_weights(n_in, n_out, scale, align_corners, x.dtype)
        if w is not None:
            y = _along(y, 2 + d, w)
    return x.clone() if y is x else y


# ---- sizes --------------------------------------------------------------------------------------
def _output_sizes(x: Tensor, dim: int, size, scale_factor, mode: str, recompute) -> tuple[list, list | None]:
    """(output sizes, the scale factors the source positions use, or None for in/out), as torch's checks."""
    spatial = list(x.shape[2:])
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    if size is not None:
        if isinstance(size, (list, tuple)):
            if len(size) != dim:
                raise ValueError(f"Input and output must have the same number of spatial dimensions, but got input "
                                 f"with spatial dimensions of {spatial} and output size of {size}. Please provide "
                                 f"input tensor in (N, C, d1, d2, ...,dK) format and output size in (o1, o2, ...,oK) "
                                 f"format.")
            values = list(size)
        else:
            values = [size] * dim
        if not all(_is_integer(v) for v in values):
            raise TypeError(f"expected size to be one of int or Tuple[int] or Tuple[int, int] or Tuple[int, int, int],"
                            f" but got size with types {[type(v) for v in values]}")
        if recompute:
            raise ValueError("recompute_scale_factor is not meaningful with an explicit size.")
        return [int(v) for v in values], None
    if scale_factor is None:
        raise ValueError("either size or scale_factor should be defined")
    if isinstance(scale_factor, (list, tuple)):
        if len(scale_factor) != dim:
            raise ValueError(f"Input and scale_factor must have the same number of spatial dimensions, but got input "
                             f"with spatial dimensions of {spatial} and scale_factor of shape {scale_factor}. Please "
                             f"provide input tensor in (N, C, d1, d2, ...,dK) format and scale_factor in (s1, s2, "
                             f"...,sK) format.")
        scales = [float(s) for s in scale_factor]
    else:
        scales = [float(scale_factor)] * dim
    sizes = [int(n * s) for n, s in zip(spatial, scales)]  # ⌊in · s⌋ (truncated toward 0, as torch)
    if recompute or mode == "area":
        return sizes, None
    return sizes, scales


def _check_sizes(x: Tensor, spatial: tuple, sizes: list) -> None:
    if min(spatial) <= 0 or min(sizes) <= 0:
        axes = _AXES[len(spatial)]
        show = ", ".join(f"{a}: {n}" for a, n in zip(axes, spatial))
        out = ", ".join(f"{a}: {n}" for a, n in zip(axes, sizes))
        sep = " and " if len(spatial) == 1 else " "
        raise ArgumentError(f"Input and output sizes should be greater than 0, but got input ({show}){sep}output "
                            f"({out})")
    if x.shape[1] == 0:
        raise ArgumentError(f"Non-empty {x.ndim}D data tensor expected but got a tensor with sizes {list(x.shape)}")


def _scale(n_in: int, n_out: int, scale_factor: float | None, ft) -> float:
    """torch's compute_scales_value: 1/scale_factor when one is given (computed in float64, then rounded to the
    working precision `ft`), else in/out in `ft`."""
    if scale_factor is not None and scale_factor > 0:
        return ft(1.0 / scale_factor)
    return ft(n_in) / ft(n_out)


def _source(n_in: int, n_out: int, scale_factor, align_corners: bool, cubic: bool, ft) -> np.ndarray:
    """The (fractional) input position each output position reads, in the working precision `ft` as torch."""
    i = np.arange(n_out, dtype=ft)
    if align_corners:
        step = ft(n_in - 1) / ft(n_out - 1) if n_out > 1 else ft(0)
        return step * i
    src = _scale(n_in, n_out, scale_factor, ft) * (i + ft(0.5)) - ft(0.5)
    return src if cubic else np.maximum(src, ft(0))


def _matrix(n_out: int, n_in: int, rows: np.ndarray, cols: np.ndarray, values: np.ndarray) -> np.ndarray:
    """The (n_out, n_in) matrix with values added at (rows, cols) (repeats add: clamped taps share a column)."""
    w = np.zeros((n_out, n_in), dtype=np.float64)
    np.add.at(w, (rows, cols), values)
    return w


def _linear_weights(n_in: int, n_out: int, scale_factor, align_corners: bool, dtype) -> np.ndarray | None:
    """Linear interpolation along one dim as an (out, in) matrix; None when it is the identity (equal sizes:
    torch copies then, whatever the scale factor)."""
    if n_in == n_out:
        return None
    ft = np.float32 if np.dtype(dtype) == np.float32 else np.float64
    src = _source(n_in, n_out, scale_factor, align_corners, False, ft)
    i0 = np.minimum(np.floor(src).astype(np.int64), n_in - 1)
    t = np.clip(src - i0, 0, 1)  # the weight of the right neighbour
    i1 = i0 + (i0 < n_in - 1)
    rows = np.arange(n_out)
    return _matrix(n_out, n_in, np.r_[rows, rows], np.r_[i0, i1], np.r_[ft(1) - t, t])


def _keys(x: np.ndarray, a: float) -> np.ndarray:
    """Keys' cubic convolution kernel (1981) at |x|: 1 − (a+3)|x|² + (a+2)|x|³ on [0, 1], a(|x|³ − 5|x|² + 8|x| − 4)
    on [1, 2), 0 beyond."""
    x = np.abs(x)
    near = ((a + 2) * x - (a + 3)) * x * x + 1
    far = ((a * x - 5 * a) * x + 8 * a) * x - 4 * a
    return np.where(x <= 1, near, np.where(x < 2, far, 0.0))


def _cubic_weights(n_in: int, n_out: int, scale_factor, align_corners: bool, dtype) -> np.ndarray:
    """Bicubic interpolation along one dim: taps ⌊src⌋ − 1 … ⌊src⌋ + 2, clamped to [0, in − 1]. Unlike linear,
    equal sizes are no shortcut (as torch: a scale factor other than 1 still moves the source positions)."""
    ft = np.float32 if np.dtype(dtype) == np.float32 else np.float64
    src = _source(n_in, n_out, scale_factor, align_corners, True, ft)
    base = np.minimum(np.floor(src).astype(np.int64), n_in - 1)
    t = np.clip(src - base, 0, 1).astype(np.float64)
    rows = np.repeat(np.arange(n_out), 4)
    taps = base[:, None] + np.arange(-1, 3)  # (out, 4)
    weights = _keys(t[:, None] - np.arange(-1, 3), -0.75)  # distance of each tap from src
    return _matrix(n_out, n_in, rows, np.clip(taps, 0, n_in - 1).ravel(), weights.ravel())


def _antialias_weights(n_in: int, n_out: int, scale_factor, align_corners: bool, cubic: bool) -> np.ndarray | None:
    """Pillow's resampling: output i gathers the input cells whose centres lie within `support` = radius · max(s, 1)
    of its centre c = s·(i + ½), weighted by the filter stretched max(s, 1) times and normalised to sum 1
    (s = in/out, or 1/scale_factor; with align_corners, (in − 1)/(out − 1), the centres unchanged, as torch).
    None for equal sizes: torch's separable antialiased kernel leaves such a dim alone, whatever the scale."""
    if n_in == n_out:
        return None
    if align_corners:
        s = (n_in - 1) / (n_out - 1) if n_out > 1 else 0.0
    else:
        s = float(_scale(n_in, n_out, scale_factor, np.float64))
    radius = 2.0 if cubic else 1.0
    stretch = max(s, 1.0)
    w = np.zeros((n_out, n_in), dtype=np.float64)
    for i in range(n_out):
        c = s * (i + 0.5)
        lo = max(int(c - radius * stretch + 0.5), 0)
        hi = min(int(c + radius * stretch + 0.5), n_in)
        x = (np.arange(lo, hi) + 0.5 - c) / stretch  # each cell centre's distance from c, in filter units
        f = _keys(x, -0.5) if cubic else np.maximum(0.0, 1.0 - np.abs(x))
        total = f.sum()
        w[i, lo:hi] = f / total if total != 0 else f
    return w


# ---- applying the matrices and indices ----------------------------------------------------------
def _along(x: Tensor, axis: int, w: np.ndarray) -> Tensor:
    """x with dim `axis` (size in) mapped by the (out, in) matrix w: Σ_j w[i, j] · x[..., j, ...]."""
    wt = Tensor(backend.to_device(w.astype(x.dtype), x.device))
    if axis == x.ndim - 1:
        return x @ wt.transpose(0, 1)  # (..., out)
    lead, n, rest = math.prod(x.shape[:axis]), x.shape[axis], math.prod(x.shape[axis + 1:])
    y = wt @ x.reshape(lead, n, rest)  # (lead, out, rest)
    return y.reshape(x.shape[:axis] + (w.shape[0],) + x.shape[axis + 1:])


def _nearest_index(n_in: int, n_out: int, scale_factor, exact: bool, shortcuts: bool) -> np.ndarray:
    """torch's nearest source index: ⌊i · scale⌋ ('nearest', OpenCV's rule) or ⌊(i + ½) · scale⌋ ('nearest-exact',
    Pillow's and scikit-image's), in float32 arithmetic as ATen, capped at in − 1. With `shortcuts` (torch's 2-d
    'nearest' kernel, not its 1-d and 3-d ones), equal sizes copy and doubled sizes take i // 2, whatever the
    scale factor."""
    i = np.arange(n_out)
    if shortcuts and not exact and n_out == n_in:
        return i
    if shortcuts and not exact and n_out == 2 * n_in:
        return i >> 1
    scale = _scale(n_in, n_out, scale_factor, np.float32)
    pos = i.astype(np.float32) + np.float32(0.5) if exact else i.astype(np.float32)
    return np.minimum(np.floor(pos * scale).astype(np.int64), n_in - 1)


def _nearest(x: Tensor, sizes: list, scales, exact: bool) -> Tensor:
    y = x
    for d, (n_in, n_out) in enumerate(zip(x.shape[2:], sizes)):
        idx = _nearest_index(n_in, n_out, None if scales is None else scales[d], exact, shortcuts=x.ndim == 4)
        y = _take(y, 2 + d, idx)
    return x.clone() if y is x else y


def _take(x: Tensor, axis: int, idx: np.ndarray) -> Tensor:
    """x[..., idx, ...] along `axis`. The common patterns avoid an index op, whose backward scatters with
    add.at: each input repeated k times (an integer enlargement) is a broadcast, whose gradient is a sum; an
    evenly strided idx (an integer shrinking) is a slice."""
    n, m = x.shape[axis], len(idx)
    lead = (slice(None),) * axis
    if m == n and np.array_equal(idx, np.arange(n)):
        return x
    if m % n == 0 and np.array_equal(idx, np.arange(m) // (m // n)):
        k = m // n
        y = x.unsqueeze(axis + 1).expand(x.shape[:axis + 1] + (k,) + x.shape[axis + 1:])  # (..., n, k, ...)
        return y.reshape(x.shape[:axis] + (m,) + x.shape[axis + 1:])
    step = int(idx[1] - idx[0]) if m > 1 else 1
    if step > 0 and np.array_equal(idx, idx[0] + step * np.arange(m)):
        return x[lead + (slice(int(idx[0]), int(idx[0]) + step * (m - 1) + 1, step),)]
    return x[lead + (backend.to_device(idx, x.device),)]


def _area(x: Tensor, sizes: list) -> Tensor:
    """torch's mode='area': adaptive average pooling to `sizes`, one averaging matrix per dim."""
    from seqlab.functional_conv import _output_size

    dim = x.ndim - 2
    fn = f"adaptive_avg_pool{dim}d"
    if dim < 3:
        sizes = _output_size(sizes, dim, x.shape[2:], fn, x.shape)  # adaptive_avg_pool1d/2d's checks
    elif min(sizes) < 0 or min(x.shape[2:]) == 0:
        raise ValueError(f"{fn}(): output_size must be non-negative and the input non-empty in its spatial dims, "
                         f"got output_size {tuple(sizes)} for input of sizes {list(x.shape)}")
    y = x
    for d, (n_in, n_out) in enumerate(zip(x.shape[2:], sizes)):
        if n_in == n_out:
            continue
        start, end = adaptive_bounds(n_in, n_out)
        j = np.arange(n_in)
        inside = (j >= start[:, None]) & (j < end[:, None])  # (out, in)
        y = _along(y, 2 + d, inside / np.maximum(end - start, 1)[:, None])
    return x.clone() if y is x else y


# ---- torch's deprecated names -------------------------------------------------------------------
def upsample(input: Tensor, size=None, scale_factor=None, mode: str = "nearest",  # noqa: A002
             align_corners: bool | None = None) -> Tensor:
    """Deprecated (as torch): `interpolate(input, size, scale_factor, mode, align_corners)`, with a warning."""
    warnings.warn("`nn.functional.upsample` is deprecated. Use `nn.functional.interpolate` instead.",
                  stacklevel=2)
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input: Tensor, size=None, scale_factor=None) -> Tensor:  # noqa: A002
    """Deprecated (as torch): `interpolate(input, size, scale_factor, mode='nearest')`, with a warning."""
    warnings.warn("`nn.functional.upsample_nearest` is deprecated. Use `nn.functional.interpolate` instead.",
                  stacklevel=2)
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input: Tensor, size=None, scale_factor=None) -> Tensor:  # noqa: A002
    """Deprecated (as torch): `interpolate(input, size, scale_factor, mode='bilinear', align_corners=True)`."""
    warnings.warn("`nn.functional.upsample_bilinear` is deprecated. Use `nn.functional.interpolate` instead.",
                  stacklevel=2)
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)
