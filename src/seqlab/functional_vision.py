"""Vision layers' functions with torch.nn.functional's names (re-exported by `seqlab.functional`): pixel_shuffle
and pixel_unshuffle (sub-pixel convolution, Shi et al. 2016), channel_shuffle (ShuffleNet), unfold / fold (im2col
/ col2im), adaptive_max_pool2d, lp_pool1d/2d and max_unpool1d/2d. `interpolate` lives in functional_interpolate.py.

All but unfold/fold are composed of differentiable ops (reshapes, permutes, gather, scatter, pooling, powers), so
their gradients, second ones included, need no code here; unfold and fold are one pair of Functions
(autograd/ops/fold.py), each the other's backward. Errors carry torch's messages; where torch raises a
RuntimeError, the error is also seqlab's ValueError / TypeError (autograd/torch_errors.py).
"""
from __future__ import annotations

import math

import numpy as np

from seqlab import backend
from seqlab import functional_conv as FC
from seqlab.autograd.ops.conv import adaptive_bounds
from seqlab.autograd.ops.fold import Col2Im, Im2Col
from seqlab.autograd.tensor import Tensor
from seqlab.autograd.torch_errors import ArgumentError, DtypeError, not_implemented

__all__ = ["pixel_shuffle", "pixel_unshuffle", "channel_shuffle", "native_channel_shuffle", "unfold", "fold",
           "adaptive_max_pool2d", "adaptive_max_pool2d_with_indices", "lp_pool1d", "lp_pool2d", "max_unpool1d",
           "max_unpool2d"]


def _t(x) -> Tensor:
    return x if isinstance(x, Tensor) else Tensor._of(x)


def _int_arg(fn: str, name: str, value, position: int = 2) -> int:
    if not isinstance(value, (int, np.integer)) or isinstance(value, bool):
        raise TypeError(f"{fn}(): argument '{name}' (position {position}) must be int, not {type(value).__name__}")
    return int(value)


def _float_input(fn: str, x: Tensor) -> None:
    if np.dtype(x.dtype).kind != "f":
        raise not_implemented(fn, x.dtype, "floating-point")


# ---- rearranging channels and pixels ----------------------------------------------------------------------
def pixel_shuffle(input: Tensor, upscale_factor: int) -> Tensor:  # noqa: A002
    """(*, C·r², H, W) → (*, C, H·r, W·r): out[c, h·r + i, w·r + j] = in[c·r² + i·r + j, h, w], as torch."""
    x, r = _t(input), _int_arg("pixel_shuffle", "upscale_factor", upscale_factor)
    if x.ndim < 3:
        raise ArgumentError(f"pixel_shuffle expects input to have at least 3 dimensions, but got input with {x.ndim} "
                            f"dimension(s)")
    if r <= 0:
        raise ArgumentError(f"pixel_shuffle expects a positive upscale_factor, but got {r}")
    *lead, c, h, w = x.shape
    if c % (r * r):
        raise ArgumentError(f"pixel_shuffle expects its input's 'channel' dimension to be divisible by the square of "
                            f"upscale_factor, but input.size(-3)={c} is not divisible by {r * r}")
    n = len(lead)
    y = x.reshape(*lead, c // (r * r), r, r, h, w)  # (*, C, r, r, H, W)
    y = y.permute(*range(n), n, n + 3, n + 1, n + 4, n + 2)  # (*, C, H, r, W, r)
    return y.reshape(*lead, c // (r * r), h * r, w * r)


def pixel_unshuffle(input: Tensor, downscale_factor: int) -> Tensor:  # noqa: A002
    """(*, C, H·r, W·r) → (*, C·r², H, W), pixel_shuffle's inverse, as torch."""
    x, r = _t(input), _int_arg("pixel_unshuffle", "downscale_factor", downscale_factor)
    if x.ndim < 3:
        raise ArgumentError(f"pixel_unshuffle expects input to have at least 3 dimensions, but got input with "
                            f"{x.ndim} dimension(s)")
    if r <= 0:
        raise ArgumentError(f"pixel_unshuffle expects a positive downscale_factor, but got {r}")
    *lead, c, h, w = x.shape
    for name, size, d in (("height", h, -2), ("width", w, -1)):
        if size % r:
            raise ArgumentError(f"pixel_unshuffle expects {name} to be divisible by downscale_factor, but "
                                f"input.size({d})={size} is not divisible by {r}")
    n = len(lead)
    y = x.reshape(*lead, c, h // r, r, w // r, r)  # (*, C, H, r, W, r)
    y = y.permute(*range(n), n, n + 2, n + 4, n + 1, n + 3)  # (*, C, r, r, H, W)
    return y.reshape(*lead, c * r * r, h // r, w // r)


def channel_shuffle(input: Tensor, groups: int) -> Tensor:  # noqa: A002
    """(N, C, *) with its channels, read as a (groups, C/groups) grid, transposed: channel j·(C/groups) + k moves
    to k·groups + j (ShuffleNet's mixing across grouped convolutions), as torch."""
    x, g = _t(input), _int_arg("channel_shuffle", "groups", groups)
    if x.ndim <= 2:
        raise ArgumentError(f"channel_shuffle expects input with > 2 dims, but got input with sizes {list(x.shape)}")
    if g <= 0:
        raise ArgumentError(f"Number of groups to divide channels in must be positive. Value of groups:{g}")
    n, c, *rest = x.shape
    if c % g:
        raise ArgumentError(f"Number of channels must be divisible by groups. Got {c} channels and {g} groups.")
    return x.reshape(n, g, c // g, *rest).transpose(1, 2).reshape(x.shape)  # (N, C/g, g, *) flattened


native_channel_shuffle = channel_shuffle  # torch's other name for the same op


# ---- im2col / col2im ------------------------------------------------------------------------------------------
def _pair(fn: str, name: str, value) -> tuple[int, int]:
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return int(value), int(value)
    value = tuple(value)
    if len(value) != 2:
        raise ArgumentError(f"It is expected {name} equals to 2, but got size {len(value)}")
    return int(value[0]), int(value[1])


def _block_args(fn: str, kernel_size, dilation, padding, stride) -> tuple:
    kernel, dilation = _pair(fn, "kernel_size", kernel_size), _pair(fn, "dilation", dilation)
    padding, stride = _pair(fn, "padding", padding), _pair(fn, "stride", stride)
    for what, (a, b), least, label in (("kernel size", kernel, 1, "kernel"), ("stride", stride, 1, "stride"),
                                       ("dilation", dilation, 1, "dilation"), ("padding", padding, 0, "pad")):
        if min(a, b) < least:
            raise ArgumentError(f"{what} should be {'greater than zero' if least else 'non-negative'}, but got "
                                f"{label}_height: {a} {label}_width: {b}")
    return kernel, dilation, padding, stride


def _blocks(size: tuple, kernel: tuple, dilation: tuple, padding: tuple, stride: tuple) -> tuple:
    return tuple((n + 2 * p - d * (k - 1) - 1) // s + 1 for n, k, d, p, s in zip(size, kernel, dilation, padding,
                                                                                 stride))


def unfold(input: Tensor, kernel_size, dilation=1, padding=0, stride=1) -> Tensor:  # noqa: A002
    """im2col: (N, C, H, W) (or (C, H, W)) → (N, C·kH·kW, L), column l holding the l-th sliding block (row-major
    over the blocks, channel-major inside a column), as torch; L = Π ⌊(size + 2p − d·(k − 1) − 1)/s⌋ + 1."""
    x = _t(input)
    kernel, dilation, padding, stride = _block_args("unfold", kernel_size, dilation, padding, stride)
    if x.ndim not in (3, 4) or 0 in x.shape[-3:]:
        raise ArgumentError(f"Expected 3D or 4D (batch mode) tensor with possibly 0 batch size and other non-zero "
                            f"dimensions for input, but got: {list(x.shape)}")
    _float_input("unfold", x)
    blocks = _blocks(x.shape[-2:], kernel, dilation, padding, stride)
    if min(blocks) < 1:
        raise ArgumentError(f"Given input with spatial size {tuple(x.shape[-2:])}, kernel_size={kernel}, dilation="
                            f"{dilation}, padding={padding}, calculated shape of the array of sliding blocks as "
                            f"{blocks}, but its components must be at least one.")
    batched = x.ndim == 4
    y = Im2Col.apply(x if batched else x.unsqueeze(0), kernel=kernel, dilation=dilation,
                     padding=tuple((p, p) for p in padding), stride=stride)  # (N, C·K, L)
    return y if batched else y.squeeze(0)


def fold(input: Tensor, output_size, kernel_size, dilation=1, padding=0, stride=1) -> Tensor:  # noqa: A002
    """col2im: (N, C·kH·kW, L) (or (C·kH·kW, L)) → (N, C, *output_size), each column added back at its block
    (overlaps sum), as torch: unfold's adjoint, so fold(unfold(x)) is x times the blocks covering each cell."""
    x = _t(input)
    size = _pair("fold", "output_size", output_size)
    kernel, dilation, padding, stride = _block_args("fold", kernel_size, dilation, padding, stride)
    if x.ndim not in (2, 3) or 0 in x.shape[-2:]:
        raise ArgumentError(f"Expected 2D or 3D (batch mode) tensor for input with possibly 0 batch size and non-zero "
                            f"dimensions for input, but got: {list(x.shape)}")
    _float_input("fold", x)
    d = x.ndim - 2  # the channel dim
    K = math.prod(kernel)
    if x.shape[d] % K:
        raise ArgumentError(f"Expected size of input's dimension {d} to be divisible by the product of kernel_size, "
                            f"but got input.size({d})={x.shape[d]} and kernel_size={kernel}.")
    blocks = _blocks(size, kernel, dilation, padding, stride)
    if min(blocks) < 1 or math.prod(blocks) != x.shape[d + 1]:
        raise ArgumentError(f"Given output_size={size}, kernel_size={kernel}, dilation={dilation}, padding={padding}, "
                            f"stride={stride}, expected size of input's dimension {d + 1} to match the calculated "
                            f"number of sliding blocks {blocks[0]} * {blocks[1]} = {blocks[0] * blocks[1]}, but got "
                            f"input.size({d + 1})={x.shape[d + 1]}.")
    batched = x.ndim == 3
    y = Col2Im.apply(x if batched else x.unsqueeze(0), output_size=size, kernel=kernel, dilation=dilation,
                     padding=tuple((p, p) for p in padding), stride=stride)  # (N, C, *output_size)
    return y if batched else y.squeeze(0)


# ---- pooling --------------------------------------------------------------------------------------------------
def adaptive_max_pool2d(input: Tensor, output_size, return_indices: bool = False):  # noqa: A002
    """(N, C, H, W) → (N, C, oh, ow): the max of each of torch's adaptive windows, rows [⌊i·H/oh⌋, ⌈(i+1)·H/oh⌉)
    times columns likewise (None keeps a dim); return_indices adds each maximum's flat position h·W + w (int64).

    The windows are gathered with the short ones repeating their last row/column (a repeat never beats the
    first maximum, which torch picks among ties); the output is then x.gather at the winners, whose gradient
    scatters back (adding where overlapping windows share a maximum)."""
    fn = "adaptive_max_pool2d"
    x = _t(input)
    if x.ndim not in (3, 4):
        raise ArgumentError(f"{fn}(): Expected 3D or 4D tensor, but got: {list(x.shape)}")
    _float_input(fn, x)
    batched = x.ndim == 4
    x4 = x if batched else x.unsqueeze(0)  # (N, C, H, W)
    N, C, H, W = x4.shape
    for d, size in enumerate(x.shape[-2:]):
        if size == 0:
            raise ArgumentError(f"{fn}(): Expected input to have non-zero size for non-batch dimensions, but input "
                                f"has sizes {list(x.shape)} with dimension {x.ndim - 2 + d} being empty")
    oh, ow = FC._output_size(output_size, 2, (H, W), fn, x.shape)
    where = _adaptive_argmax2d(x4.data, oh, ow)  # (N, C, oh·ow)
    y = x4.reshape(N, C, H * W).gather(2, where).reshape(N, C, oh, ow)
    if not return_indices:
        return y if batched else y.squeeze(0)
    indices = Tensor(where.reshape(N, C, oh, ow))
    return (y, indices) if batched else (y.squeeze(0), indices[0])


def adaptive_max_pool2d_with_indices(input: Tensor, output_size, return_indices: bool = False):  # noqa: A002
    """torch's name for adaptive_max_pool2d(..., return_indices=True): (values, indices)."""
    return adaptive_max_pool2d(input, output_size, return_indices=True)


def _adaptive_argmax2d(a, oh: int, ow: int):
    """Each adaptive window's first maximum (row-major) as a flat position in its (H, W) plane: (N, C, oh·ow)."""
    xp = backend.xp_of(a)
    N, C, H, W = a.shape
    (hs, he), (ws, we) = adaptive_bounds(H, oh), adaptive_bounds(W, ow)
    kh = int((he - hs).max()) if oh else 1
    kw = int((we - ws).max()) if ow else 1
    rows = np.minimum(hs[:, None] + np.arange(kh), he[:, None] - 1)  # (oh, kh), host
    cols = np.minimum(ws[:, None] + np.arange(kw), we[:, None] - 1)  # (ow, kw)
    flat = (rows[:, None, :, None] * W + cols[None, :, None, :]).reshape(oh * ow, kh * kw)  # (oh·ow, kh·kw)
    flat = backend.to_device(flat, backend.device_of(a))
    arg = a.reshape(N, C, H * W)[..., flat].argmax(axis=-1)  # (N, C, oh·ow): the window's first maximum
    return flat[xp.arange(oh * ow), arg].astype(xp.int64)


def lp_pool1d(input: Tensor, norm_type: float, kernel_size: int, stride=None,  # noqa: A002
              ceil_mode: bool = False) -> Tensor:
    """(Σ_window x^p)^(1/p) over windows of kernel_size along L, as torch: avg_pool of x^p times the window
    size, then the p-th root; p = inf is the max of |x|. As torch, no padding and (p not an integer) NaN for
    negative inputs."""
    if not isinstance(kernel_size, (int, np.integer)) or isinstance(kernel_size, bool):
        raise TypeError(f"lp_pool1d(): kernel_size must be an int, got {kernel_size!r}")
    return _lp_pool(FC.avg_pool1d, FC.max_pool1d, input, norm_type, kernel_size, int(kernel_size), stride, ceil_mode)


def lp_pool2d(input: Tensor, norm_type: float, kernel_size, stride=None,  # noqa: A002
              ceil_mode: bool = False) -> Tensor:
    """lp_pool1d over kH x kW windows of (N, C, H, W), as torch."""
    kernel = FC.ntuple(kernel_size, 2, "kernel_size", "lp_pool2d")
    return _lp_pool(FC.avg_pool2d, FC.max_pool2d, input, norm_type, kernel_size, math.prod(kernel), stride,
                    ceil_mode)


def _lp_pool(avg_pool, max_pool, input, norm_type, kernel_size, cells: int, stride, ceil_mode) -> Tensor:
    x = _t(input)
    if norm_type == math.inf:
        return max_pool(x.abs(), kernel_size, stride, 0, 1, ceil_mode)
    if norm_type == -math.inf:
        return -max_pool(-x.abs(), kernel_size, stride, 0, 1, ceil_mode)
    out = avg_pool(x.pow(norm_type), kernel_size, stride, 0, ceil_mode)
    # sign · relu(|·|) is the mean itself, with torch's gradient: 0 where the mean is 0
    return ((out.sign() * out.abs().relu()) * cells).pow(1.0 / norm_type)


def _unpool_size(fn: str, x: Tensor, kernel: tuple, stride: tuple, padding: tuple, output_size) -> tuple:
    """torch's _unpool_output_size: (in − 1)·s + k − 2p per dim, or output_size (batch and channel sizes, if given,
    dropped) when it lies strictly within stride of that."""
    n = len(kernel)
    default = [(size - 1) * s + k - 2 * p for size, k, s, p in zip(x.shape[-n:], kernel, stride, padding)]
    if output_size is None:
        sizes = default
    else:
        shown = output_size[2:] if len(output_size) == n + 2 else output_size
        if len(shown) != n:
            raise ValueError(f"output_size should be a sequence containing {n} or {n + 2} elements, but it has a "
                             f"length of '{len(shown)}'")
        for d in range(n):
            lo, hi = default[d] - stride[d], default[d] + stride[d]
            if not lo < shown[d] < hi:
                raise ValueError(f'invalid output_size "{shown}" (dim {d} must be between {lo} and {hi})')
        sizes = [int(s) for s in shown]
    for d, s in enumerate(sizes):
        if s < 0:
            raise ValueError(f"max_unpooling: output_size must contain non-negative spatial dimensions, but got "
                             f"output_size[{d}]={s}")
    return tuple(sizes)


def max_unpool1d(input: Tensor, indices: Tensor, kernel_size, stride=None, padding=0,  # noqa: A002
                 output_size=None) -> Tensor:
    """max_pool1d's partial inverse: (N, C, L) values put at their `indices` (max_pool1d(..., return_indices=True))
    in zeros of (N, C, L_out), L_out = (L − 1)·stride + kernel_size − 2·padding (or output_size), as torch."""
    return _max_unpool("max_unpool1d", 1, input, indices, kernel_size, stride, padding, output_size)


def max_unpool2d(input: Tensor, indices: Tensor, kernel_size, stride=None, padding=0,  # noqa: A002
                 output_size=None) -> Tensor:
    """max_pool2d's partial inverse: (N, C, H, W) values put at their flat `indices` h·W_out + w in zeros of
    (N, C, H_out, W_out), each as max_unpool1d's L_out, as torch (the gradient gathers at the indices)."""
    return _max_unpool("max_unpool2d", 2, input, indices, kernel_size, stride, padding, output_size)


def _max_unpool(fn: str, n: int, input, indices, kernel_size, stride, padding, output_size) -> Tensor:
    x, idx = _t(input), _t(indices)
    kernel = FC.ntuple(kernel_size, n, "kernel_size", fn)
    stride = kernel if stride is None else FC.ntuple(stride, n, "stride", fn)
    padding = FC.ntuple(padding, n, "padding", fn)
    out = _unpool_size(fn, x, kernel, stride, padding, output_size)
    if x.ndim not in (n + 1, n + 2):
        raise ArgumentError(f"Input to {fn} should be a {n + 1}d or {n + 2}d Tensor, but got a tensor with {x.ndim} "
                            f"dimensions.")
    _float_input(fn, x)
    if np.dtype(idx.dtype) != np.int64:
        raise DtypeError(f"elements in indices should be type int64 but got: {idx.dtype}")
    if idx.shape != x.shape:
        raise ArgumentError(f"Expected shape of indices to be same as that of the input tensor ({list(x.shape)}) but "
                            f"got indices tensor with shape: {list(idx.shape)}")
    plane = math.prod(out)
    flat = idx.data.reshape(-1)
    bad = (flat < 0) | (flat >= plane)
    if flat.size and bool(bad.any()):
        first = int(flat[int(backend.xp_of(flat).argmax(bad))])
        raise ArgumentError(f"Found an invalid max index: {first} (output volumes are of size "
                            f"{'x'.join(map(str, out))})")
    batched = x.ndim == n + 2
    xb = x if batched else x.unsqueeze(0)  # (N, C, *S)
    N, C = xb.shape[:2]
    x3 = xb.reshape(N, C, math.prod(xb.shape[2:]))  # (N, C, Π S)
    where = idx.data.reshape(x3.shape)  # (N, C, Π S)
    y = x3.new_zeros((N, C, plane)).scatter(2, where, x3).reshape((N, C) + out)  # (N, C, *out)
    return y if batched else y.squeeze(0)
