"""Convolution and pooling with torch.nn.functional's names and signatures (re-exported by `seqlab.functional`).

Inputs are batch-first, channels second, as torch: (N, C, L) for the 1-d ops (a TextCNN convolves (B, E, T),
the embeddings transposed), (N, C, H, W) for the 2-d ones; an unbatched (C, L) or (C, H, W) input gives an
unbatched output. The arithmetic lives in `seqlab.autograd.ops.conv` and `.conv_transpose`; this file checks
arguments (with torch's messages where they help), turns torch's padding conventions into per-side paddings and
composes the adaptive average pools from two products with constant averaging matrices.
"""
from __future__ import annotations

import math

import numpy as np

from seqlab import backend
from seqlab.autograd.ops.conv import (AdaptiveMaxPool1d, AvgPoolNd, ConvNd, MaxPoolNd, adaptive_bounds,
                                      pool_output_size)
from seqlab.autograd.ops.conv_transpose import ConvTransposeNd
from seqlab.autograd.tensor import Tensor

__all__ = ["conv1d", "conv2d", "conv_transpose1d", "conv_transpose2d",
           "max_pool1d", "max_pool2d", "avg_pool1d", "avg_pool2d", "adaptive_avg_pool1d",
           "adaptive_avg_pool2d", "adaptive_max_pool1d"]


def _t(x) -> Tensor:
    return x if isinstance(x, Tensor) else Tensor._of(x)


def ntuple(value, n: int, name: str, fn: str) -> tuple:
    """An int, or a list/tuple of 1 or n ints, as an n-tuple (torch's _single/_pair, and its expanding of [k])."""
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return (int(value),) * n
    if (isinstance(value, (tuple, list)) and len(value) in (1, n)
            and all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in value)):
        return tuple(int(v) for v in value) * (n // len(value))
    raise ValueError(f"{fn}() {name} must be an int or a tuple of {n} ints, got {value!r}")


def _batched(input, n: int, fn: str) -> tuple[Tensor, bool]:
    """(x as (N, C, *S), whether it came batched): a (C, *S) input gets a batch dim of 1."""
    x = _t(input)
    if x.ndim not in (n + 1, n + 2):
        raise ValueError(f"Expected {n + 1}D (unbatched) or {n + 2}D (batched) input to {fn}, but got input of "
                         f"size: {list(x.shape)}")
    if np.dtype(x.dtype).kind != "f":
        raise TypeError(f"{fn} expects floating-point input, got dtype {x.dtype}")
    return (x, True) if x.ndim == n + 2 else (x.unsqueeze(0), False)  # (N, C, *S)


def _size(shape: tuple) -> str:
    return "x".join(str(s) for s in shape)


# ---- convolution --------------------------------------------------------------------------------
def conv1d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1, padding=0, dilation=1,
           groups: int = 1) -> Tensor:
    """Cross-correlate (N, C_in, L) with weight (C_out, C_in/groups, kL) → (N, C_out, L_out), as torch.

    padding: an int or (p,) on both sides, 'valid' (none) or 'same' (L_out = L, stride 1 only; an odd total
    puts the extra cell after, as torch). L_out = ⌊(L + 2p − dilation·(kL − 1) − 1) / stride⌋ + 1.
    """
    return _conv("conv1d", 1, input, weight, bias, stride, padding, dilation, groups)


def conv2d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1, padding=0, dilation=1,
           groups: int = 1) -> Tensor:
    """Cross-correlate (N, C_in, H, W) with weight (C_out, C_in/groups, kH, kW) → (N, C_out, H_out, W_out),
    as torch; stride, padding and dilation are ints or pairs (padding also 'valid' or 'same')."""
    return _conv("conv2d", 2, input, weight, bias, stride, padding, dilation, groups)


def _conv(fn: str, n: int, input, weight, bias, stride, padding, dilation, groups) -> Tensor:
    x, batched = _batched(input, n, fn)
    weight = _t(weight)
    if weight.ndim != n + 2:
        raise ValueError(f"{fn} expects weight of shape (out_channels, in_channels/groups, {n}-d kernel), got "
                         f"shape {weight.shape}")
    stride, dilation = ntuple(stride, n, "stride", fn), ntuple(dilation, n, "dilation", fn)
    if min(stride) <= 0:
        raise ValueError(f"non-positive stride is not supported, got stride={stride}")
    if min(dilation) <= 0:
        raise ValueError(f"non-positive dilation is not supported, got dilation={dilation}")
    if not isinstance(groups, (int, np.integer)) or groups <= 0:
        raise ValueError(f"non-positive groups is not supported, got groups={groups!r}")
    c_out, c_group, kernel = weight.shape[0], weight.shape[1], weight.shape[2:]
    if c_out % groups:
        raise ValueError(f"Given groups={groups}, expected weight to be divisible by {groups} at dimension 0, but "
                         f"got weight of size {list(weight.shape)} instead")
    if x.shape[1] != c_group * groups:
        raise ValueError(f"Given groups={groups}, weight of size {list(weight.shape)}, expected input"
                         f"{list(x.shape)} to have {c_group * groups} channels, but got {x.shape[1]} channels instead")
    if bias is not None and tuple(bias.shape) != (c_out,):
        raise ValueError(f"Given weight of size {list(weight.shape)}, expected bias to be 1-dimensional with "
                         f"{c_out} elements, but got bias of size {list(bias.shape)} instead")
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and t.dtype != x.dtype:
            raise TypeError(f"Input type ({x.dtype}) and {name} type ({t.dtype}) should be the same")
    pads = _conv_padding(padding, n, kernel, dilation, stride, fn)
    padded = tuple(s + lo + hi for s, (lo, hi) in zip(x.shape[2:], pads))
    span = tuple(d * (k - 1) + 1 for k, d in zip(kernel, dilation))  # the dilated kernel's extent
    if any(p < k for p, k in zip(padded, span)):
        raise ValueError(f"Calculated padded input size per channel: ({' x '.join(map(str, padded))}). Kernel size: "
                         f"({' x '.join(map(str, span))}). Kernel size can't be greater than actual input size")
    args = (x, weight) if bias is None else (x, weight, bias)
    y = ConvNd.apply(*args, stride=stride, padding=pads, dilation=dilation, groups=int(groups))
    return y if batched else y.squeeze(0)


def _conv_padding(padding, n: int, kernel: tuple, dilation: tuple, stride: tuple, fn: str) -> tuple:
    """torch's padding argument as (before, after) per spatial dim."""
    if isinstance(padding, str):
        if padding == "valid":
            return ((0, 0),) * n
        if padding != "same":
            raise ValueError(f"Invalid padding string {padding!r}, should be one of {{'valid', 'same'}}")
        if any(s != 1 for s in stride):
            raise ValueError("padding='same' is not supported for strided convolutions")
        totals = [d * (k - 1) for k, d in zip(kernel, dilation)]  # L_out = L + total − d·(k − 1) = L
        return tuple((t // 2, t - t // 2) for t in totals)
    pads = ntuple(padding, n, "padding", fn)
    if min(pads) < 0:
        raise ValueError(f"negative padding is not supported, got padding={pads}")
    return tuple((p, p) for p in pads)


# ---- transposed convolution ---------------------------------------------------------------------
def conv_transpose1d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1, padding=0,
                     output_padding=0, groups: int = 1, dilation=1) -> Tensor:
    """The transposed convolution (conv1d's adjoint) of (N, C_in, L) with weight (C_in, C_out/groups, kL) →
    (N, C_out, L_out), as torch (note groups before dilation, as torch's signature):

        L_out = (L − 1)·stride − 2·padding + dilation·(kL − 1) + output_padding + 1,

    output_padding (smaller than stride or dilation) adding cells at the far end only."""
    return _conv_transpose("conv_transpose1d", 1, input, weight, bias, stride, padding, output_padding, groups,
                           dilation)


def conv_transpose2d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1, padding=0,
                     output_padding=0, groups: int = 1, dilation=1) -> Tensor:
    """The transposed convolution of (N, C_in, H, W) with weight (C_in, C_out/groups, kH, kW) →
    (N, C_out, H_out, W_out), each dim as conv_transpose1d's L_out, as torch; arguments ints or pairs."""
    return _conv_transpose("conv_transpose2d", 2, input, weight, bias, stride, padding, output_padding, groups,
                           dilation)


def _conv_transpose(fn: str, n: int, input, weight, bias, stride, padding, output_padding, groups,
                    dilation) -> Tensor:
    x, batched = _batched(input, n, fn)
    weight = _t(weight)
    if weight.ndim != n + 2:
        raise ValueError(f"{fn} expects weight of shape (in_channels, out_channels/groups, {n}-d kernel), got "
                         f"shape {weight.shape}")
    stride, dilation = ntuple(stride, n, "stride", fn), ntuple(dilation, n, "dilation", fn)
    padding = ntuple(padding, n, "padding", fn)
    output_padding = ntuple(output_padding, n, "output_padding", fn)
    if min(stride) <= 0:
        raise ValueError(f"non-positive stride is not supported, got stride={stride}")
    if min(dilation) <= 0:
        raise ValueError(f"non-positive dilation is not supported, got dilation={dilation}")
    if min(padding) < 0:
        raise ValueError(f"negative padding is not supported, got padding={padding}")
    if min(output_padding) < 0:
        raise ValueError(f"negative output_padding is not supported, got output_padding={output_padding}")
    if any(op >= max(s, d) for op, s, d in zip(output_padding, stride, dilation)):
        dims = ("width",) if n == 1 else ("height", "width")
        got = " ".join(f"{name}_{dim}: {v[i]}" for name, v in (("output_padding", output_padding),
                                                                 ("stride", stride), ("dilation", dilation))
                       for i, dim in enumerate(dims))
        raise ValueError(f"output padding must be smaller than either stride or dilation, but got {got}")
    if not isinstance(groups, (int, np.integer)) or groups <= 0:
        raise ValueError(f"non-positive groups is not supported, got groups={groups!r}")
    c_in, kernel = weight.shape[0], weight.shape[2:]
    c_out = weight.shape[1] * groups
    if c_in % groups:
        raise ValueError(f"Given groups={groups}, expected weight to be divisible by {groups} at dimension 0, but "
                         f"got weight of size {list(weight.shape)} instead")
    if x.shape[1] != c_in:
        raise ValueError(f"Given transposed=1, weight of size {list(weight.shape)}, expected input{list(x.shape)} "
                         f"to have {c_in} channels, but got {x.shape[1]} channels instead")
    if bias is not None and tuple(bias.shape) != (c_out,):
        raise ValueError(f"Given transposed=1, weight of size {list(weight.shape)}, expected bias to be "
                         f"1-dimensional with {c_out} elements, but got bias of size {list(bias.shape)} instead")
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and t.dtype != x.dtype:
            raise TypeError(f"Input type ({x.dtype}) and {name} type ({t.dtype}) should be the same")
    out = tuple((size - 1) * s - 2 * p + d * (k - 1) + op + 1
                for size, s, p, d, k, op in zip(x.shape[2:], stride, padding, dilation, kernel, output_padding))
    if min(x.shape[2:]) <= 0 or min(out) <= 0:
        raise ValueError(f"Given input size per channel: ({' x '.join(map(str, x.shape[2:]))}). Calculated output "
                         f"size per channel: ({' x '.join(map(str, out))}). Output size is too small")
    args = (x, weight) if bias is None else (x, weight, bias)
    y = ConvTransposeNd.apply(*args, stride=stride, padding=tuple((p, p) for p in padding), dilation=dilation,
                              groups=int(groups), out=out)
    return y if batched else y.squeeze(0)


# ---- max and average pooling --------------------------------------------------------------------
def max_pool1d(input: Tensor, kernel_size, stride=None, padding=0, dilation=1, ceil_mode: bool = False,
               return_indices: bool = False):
    """The max over windows of kernel_size along L of (N, C, L) (or (C, L)), padded with −inf, as torch;
    stride defaults to kernel_size. With return_indices, also each maximum's position along L (int64)."""
    return _max_pool("max_pool1d", 1, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


def max_pool2d(input: Tensor, kernel_size, stride=None, padding=0, dilation=1, ceil_mode: bool = False,
               return_indices: bool = False):
    """The max over kH x kW windows of (N, C, H, W) (or (C, H, W)), as torch; return_indices gives each
    maximum's flat position h·W + w in its input plane (what max_unpool2d reads)."""
    return _max_pool("max_pool2d", 2, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


def avg_pool1d(input: Tensor, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
               count_include_pad: bool = True) -> Tensor:
    """The mean over windows of kernel_size along L of (N, C, L), zero-padded, as torch: count_include_pad
    (default) divides by the window's cells including the padding, else by its input cells only."""
    return _avg_pool("avg_pool1d", 1, input, kernel_size, stride, padding, ceil_mode, count_include_pad, None)


def avg_pool2d(input: Tensor, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
               count_include_pad: bool = True, divisor_override: int | None = None) -> Tensor:
    """The mean over kH x kW windows of (N, C, H, W), as torch; divisor_override replaces every divisor."""
    return _avg_pool("avg_pool2d", 2, input, kernel_size, stride, padding, ceil_mode, count_include_pad,
                     divisor_override)


def _pool_geometry(fn: str, n: int, x: Tensor, kernel_size, stride, padding, dilation, ceil_mode: bool):
    """(kernel, stride, padding, dilation, out) as n-tuples, checked as torch checks them."""
    kernel = ntuple(kernel_size, n, "kernel_size", fn)
    stride = kernel if stride is None or (isinstance(stride, (tuple, list)) and not stride) else \
        ntuple(stride, n, "stride", fn)
    padding, dilation = ntuple(padding, n, "padding", fn), ntuple(dilation, n, "dilation", fn)
    for name, values, least in (("kernel_size", kernel, 1), ("stride", stride, 1), ("dilation", dilation, 1),
                                ("padding", padding, 0)):
        if min(values) < least:
            raise ValueError(f"{fn}() {name} must be {'non-negative' if least == 0 else 'greater than zero'}, "
                             f"but got {values if n > 1 else values[0]}")
    if any(p > k // 2 for p, k in zip(padding, kernel)):
        raise ValueError(f"{fn}() padding should be at most half of kernel size, but got padding="
                         f"{padding if n > 1 else padding[0]} and kernel_size={kernel if n > 1 else kernel[0]}")
    spatial = x.shape[2:]
    out = tuple(pool_output_size(*a, ceil_mode) for a in zip(spatial, kernel, stride, padding, dilation))
    if min(out) <= 0:
        c = x.shape[1]
        raise ValueError(f"Given input size: ({_size((c,) + spatial)}). Calculated output size: "
                         f"({_size((c,) + out)}). Output size is too small")
    return kernel, stride, padding, dilation, out


def _sides(spatial: tuple, kernel: tuple, stride: tuple, padding: tuple, dilation: tuple, out: tuple) -> tuple:
    """(before, after) per dim: `after` also covers ceil_mode's last, partial window."""
    return tuple((p, p + max(0, (o - 1) * s + d * (k - 1) + 1 - (n + 2 * p)))
                 for n, k, s, p, d, o in zip(spatial, kernel, stride, padding, dilation, out))


def _max_pool(fn, n, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices):
    x, batched = _batched(input, n, fn)
    kernel, stride, padding, dilation, out = _pool_geometry(fn, n, x, kernel_size, stride, padding, dilation,
                                                            ceil_mode)
    sides = _sides(x.shape[2:], kernel, stride, padding, dilation, out)
    y, op = MaxPoolNd.apply_with_fn(x, kernel_size=kernel, stride=stride, padding=sides, dilation=dilation)
    if not return_indices:
        return y if batched else y.squeeze(0)
    indices = Tensor(op.indices())  # (N, C, *out)
    return (y, indices) if batched else (y.squeeze(0), indices[0])


def _avg_pool(fn, n, input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override):
    x, batched = _batched(input, n, fn)
    kernel, stride, padding, _, out = _pool_geometry(fn, n, x, kernel_size, stride, padding, 1, ceil_mode)
    sides = _sides(x.shape[2:], kernel, stride, padding, (1,) * n, out)
    if divisor_override is not None:
        if divisor_override == 0:
            raise ValueError("divisor must be not zero")
        divisor = divisor_override
    else:
        # torch's avg_pool: a window [start, start + k) counts its cells up to the padding's end (L + p) with
        # count_include_pad, else its input cells only; ceil_mode's extra cells never count
        counts = []
        for size, k, s, p, o in zip(x.shape[2:], kernel, stride, padding, out):
            start = np.arange(o) * s - p
            end = np.minimum(start + k, size + p)
            counts.append(end - start if count_include_pad else np.minimum(end, size) - np.maximum(start, 0))
        divisor = math.prod(np.ix_(*counts))  # (*out): a window's count is the product of its dims'
        if np.all(divisor == math.prod(kernel)):
            divisor = math.prod(kernel)  # the usual case: one number
        else:
            divisor = backend.to_device(divisor.astype(x.dtype), x.device)
    y = AvgPoolNd.apply(x, kernel_size=kernel, stride=stride, padding=sides, divisor=divisor)
    return y if batched else y.squeeze(0)


# ---- adaptive pooling ---------------------------------------------------------------------------
def _output_size(output_size, n: int, spatial: tuple, fn: str, shape: tuple) -> tuple:
    """output_size as an n-tuple of ints (None: that dim's input size), checked as torch."""
    sizes = (output_size,) * n if isinstance(output_size, (int, np.integer)) or output_size is None else \
        tuple(output_size)
    if len(sizes) != n:
        raise ValueError(f"{fn}() argument 'output_size' should contain {('one int', 'two ints')[n - 1]} (got "
                         f"{len(sizes)})")
    sizes = tuple(s if s is None else int(s) for s in sizes)
    if any(s is not None and s < 0 for s in sizes):
        raise ValueError(f"{fn}: elements of output_size must be greater than or equal to 0 but received "
                         f"{sizes if n > 1 else sizes[0]}")
    for d, s in enumerate(spatial):
        if s == 0:
            raise ValueError(f"{fn}(): Expected input to have non-zero size for non-batch dimensions, but input "
                             f"has sizes {list(shape)} with dimension {len(shape) - n + d} being empty")
    return tuple(size if s is None else s for s, size in zip(sizes, spatial))


def _averaging(size: int, out: int, like: Tensor) -> Tensor:
    """The constant (size, out) matrix whose column i averages adaptive window i: x @ A pools the last dim."""
    start, end = adaptive_bounds(size, out)
    j = np.arange(size)[:, None]  # (size, 1)
    inside = (j >= start) & (j < end)  # (size, out)
    a = inside / np.maximum(end - start, 1)
    return Tensor(backend.to_device(a.astype(like.dtype), like.device))


def adaptive_avg_pool1d(input: Tensor, output_size) -> Tensor:
    """(N, C, L) → (N, C, out): output i is the mean of x[..., ⌊i·L/out⌋ : ⌈(i+1)·L/out⌉], as torch.

    Composed: a product with a constant averaging matrix (its gradient is the product's)."""
    fn = "adaptive_avg_pool1d"
    x, batched = _batched(input, 1, fn)
    (out,) = _output_size(output_size, 1, x.shape[2:], fn, _t(input).shape)
    y = x @ _averaging(x.shape[-1], out, x)  # (N, C, out)
    return y if batched else y.squeeze(0)


def adaptive_avg_pool2d(input: Tensor, output_size) -> Tensor:
    """(N, C, H, W) → (N, C, oh, ow) with torch's adaptive windows; output_size an int, or a pair whose None
    keeps that dim. A rectangle's mean is the mean over rows of the mean over columns, so two products."""
    fn = "adaptive_avg_pool2d"
    x, batched = _batched(input, 2, fn)
    oh, ow = _output_size(output_size, 2, x.shape[2:], fn, _t(input).shape)
    y = x @ _averaging(x.shape[-1], ow, x)  # (N, C, H, ow)
    y = (y.transpose(-1, -2) @ _averaging(x.shape[-2], oh, x)).transpose(-1, -2)  # (N, C, oh, ow)
    return y if batched else y.squeeze(0)


def adaptive_max_pool1d(input: Tensor, output_size, return_indices: bool = False):
    """(N, C, L) → (N, C, out): output i is the max of x[..., ⌊i·L/out⌋ : ⌈(i+1)·L/out⌉], as torch;
    output_size=1 is a TextCNN's max-over-time pooling. return_indices adds each maximum's position (int64)."""
    fn = "adaptive_max_pool1d"
    x, batched = _batched(input, 1, fn)
    (out,) = _output_size(output_size, 1, x.shape[2:], fn, _t(input).shape)
    y, op = AdaptiveMaxPool1d.apply_with_fn(x, output_size=out)
    if not return_indices:
        return y if batched else y.squeeze(0)
    indices = Tensor(op.indices())  # (N, C, out)
    return (y, indices) if batched else (y.squeeze(0), indices[0])
