"""Convolution and pooling layers, as torch.nn's: Conv1d/2d, ConvTranspose1d/2d, MaxPool1d/2d, AvgPool1d/2d,
AdaptiveAvgPool1d/2d, AdaptiveMaxPool1d (d2l's chapter 7, and Kim (2014)'s TextCNN: Conv1d over (B, E, T), then
max over time).

Arguments, attribute names, `weight` (C_out, C_in/groups, *kernel_size) — (C_in, C_out/groups, *kernel_size) for
the transposed ones — and `bias` (C_out,), default init and reprs are torch's, so
`load_state_dict(torch_conv.state_dict())` works; the arithmetic is `seqlab.functional_conv`. A padding_mode other
than 'zeros' pads with F.pad(mode=...) first and convolves with no padding, as torch.
"""
from __future__ import annotations

import math

from seqlab import creation
from seqlab import functional as F
from seqlab import functional_conv as FC
from seqlab.autograd.tensor import Tensor
from seqlab.nn import init
from seqlab.nn.module import Module, Parameter, takes_device

__all__ = ["Conv1d", "Conv2d", "ConvTranspose1d", "ConvTranspose2d",
           "MaxPool1d", "MaxPool2d", "AvgPool1d", "AvgPool2d", "AdaptiveAvgPool1d",
           "AdaptiveAvgPool2d", "AdaptiveMaxPool1d"]

_PADDING_MODES = ("zeros", "reflect", "replicate", "circular")  # torch's; the transposed convs take 'zeros' only


class _ConvNd(Module):
    """What the convolutions share (torch's _ConvNd): checked arguments, parameters, init and repr."""

    _n = 1  # spatial dims
    _transposed = False  # weight (C_in, C_out/groups, *k) instead of (C_out, C_in/groups, *k)

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0, dilation=1,
                 groups: int = 1, bias: bool = True, padding_mode: str = "zeros", dtype=None):
        super().__init__()
        n, fn = self._n, type(self).__name__
        if groups <= 0:
            raise ValueError("groups must be a positive integer")
        if in_channels % groups:
            raise ValueError(f"in_channels must be divisible by groups, got in_channels={in_channels}, "
                             f"groups={groups}")
        if out_channels % groups:
            raise ValueError(f"out_channels must be divisible by groups, got out_channels={out_channels}, "
                             f"groups={groups}")
        self.kernel_size = FC.ntuple(kernel_size, n, "kernel_size", fn)
        self.stride = FC.ntuple(stride, n, "stride", fn)
        self.dilation = FC.ntuple(dilation, n, "dilation", fn)
        if isinstance(padding, str):
            if padding not in ("valid", "same"):
                raise ValueError(f"Invalid padding string {padding!r}, should be one of {{'valid', 'same'}}")
            if padding == "same" and any(s != 1 for s in self.stride):
                raise ValueError("padding='same' is not supported for strided convolutions")
            self.padding = padding
        else:
            self.padding = FC.ntuple(padding, n, "padding", fn)
        if padding_mode not in _PADDING_MODES:
            raise ValueError(f"padding_mode must be one of {set(_PADDING_MODES)}, but got padding_mode="
                             f"{padding_mode!r}")
        self.in_channels, self.out_channels, self.groups = in_channels, out_channels, groups
        self.padding_mode = padding_mode
        self.transposed, self.output_padding = self._transposed, (0,) * n  # torch's attributes
        shape = (in_channels, out_channels // groups) if self.transposed else \
            (out_channels, in_channels // groups)
        self.weight = Parameter(creation.zeros(*shape, *self.kernel_size, dtype=dtype))
        if bias:
            self.bias = Parameter(creation.zeros(out_channels, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        # torch: kaiming_uniform(a=√5), i.e. U(−1/√fan_in, 1/√fan_in), fan_in = weight.shape[1] · Π kernel_size
        # (C_in/groups · Π k; for a transposed conv, whose weight is (C_in, C_out/groups, *k), C_out/groups · Π k)
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in = self.weight.shape[1] * math.prod(self.kernel_size)
            if fan_in:
                bound = 1 / math.sqrt(fan_in)
                init.uniform_(self.bias, -bound, bound)

    def extra_repr(self) -> str:
        s = f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}"
        if self.padding != (0,) * self._n:  # a string ('same', 'valid') is shown too, as torch
            s += f", padding={self.padding}"
        if self.dilation != (1,) * self._n:
            s += f", dilation={self.dilation}"
        if self.output_padding != (0,) * self._n:
            s += f", output_padding={self.output_padding}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += f", padding_mode={self.padding_mode}"
        return s

    def _pad_input(self, input: Tensor) -> tuple[Tensor, tuple | str]:
        """(input, padding) for the conv: with a padding_mode other than 'zeros', the input padded by F.pad in
        that mode (torch's _reversed_padding_repeated_twice: the last dim's (before, after) first) and padding
        0."""
        if self.padding_mode == "zeros":
            return input, self.padding
        sides = FC._conv_padding(self.padding, self._n, self.kernel_size, self.dilation, self.stride,
                                 type(self).__name__)  # (before, after) per spatial dim
        pads = [p for lo_hi in reversed(sides) for p in lo_hi]
        return F.pad(input, pads, mode=self.padding_mode), (0,) * self._n


@takes_device
class Conv1d(_ConvNd):
    """x (N, C_in, L) or (C_in, L) → (N, C_out, L_out), L_out = ⌊(L + 2p − d·(k − 1) − 1) / s⌋ + 1, as
    torch.nn.Conv1d. For text, x is the embeddings transposed: (B, T, E).transpose(1, 2) → (B, E, T)."""

    _n = 1

    def _conv_forward(self, input: Tensor, weight: Tensor, bias: Tensor | None) -> Tensor:
        input, padding = self._pad_input(input)
        return FC.conv1d(input, weight, bias, self.stride, padding, self.dilation, self.groups)

    def forward(self, input: Tensor) -> Tensor:
        return self._conv_forward(input, self.weight, self.bias)


@takes_device
class Conv2d(_ConvNd):
    """x (N, C_in, H, W) or (C_in, H, W) → (N, C_out, H_out, W_out), each as Conv1d's L_out, as torch.nn.Conv2d."""

    _n = 2

    def _conv_forward(self, input: Tensor, weight: Tensor, bias: Tensor | None) -> Tensor:
        input, padding = self._pad_input(input)
        return FC.conv2d(input, weight, bias, self.stride, padding, self.dilation, self.groups)

    def forward(self, input: Tensor) -> Tensor:
        return self._conv_forward(input, self.weight, self.bias)


class _ConvTransposeNd(_ConvNd):
    """What ConvTranspose1d and ConvTranspose2d share: torch's argument order (output_padding after padding,
    dilation after bias), padding as ints only, padding_mode 'zeros' only, and output_size= in forward."""

    _transposed = True

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0, output_padding=0,
                 groups: int = 1, bias: bool = True, dilation=1, padding_mode: str = "zeros", dtype=None):
        fn = type(self).__name__
        if padding_mode != "zeros":
            raise ValueError(f'Only "zeros" padding mode is supported for {fn}')
        padding = FC.ntuple(padding, self._n, "padding", fn)  # no 'same' / 'valid' for a transposed conv
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias,
                         padding_mode, dtype)
        self.output_padding = FC.ntuple(output_padding, self._n, "output_padding", fn)

    def _output_padding(self, input: Tensor, output_size) -> tuple:
        """torch's output_size: the output_padding that gives that output size (batch and channel dims, if
        given, are dropped); it must lie in [smallest, smallest + stride − 1]."""
        if output_size is None:
            return self.output_padding
        n = self._n
        lead = 2 if input.ndim == n + 2 else 1  # the non-spatial dims of the input: (N, C) or (C,)
        sizes = [int(s) for s in output_size]
        if len(sizes) == lead + n:
            sizes = sizes[lead:]
        if len(sizes) != n:
            raise ValueError(f"ConvTranspose{n}D: for {input.ndim}D input, output_size must have {n} or {lead + n} "
                             f"elements (got {len(output_size)})")
        spatial = list(input.shape[-n:])
        smallest = [(size - 1) * s - 2 * p + d * (k - 1) + 1 for size, s, p, d, k in
                    zip(spatial, self.stride, self.padding, self.dilation, self.kernel_size)]
        largest = [lo + s - 1 for lo, s in zip(smallest, self.stride)]
        if any(not lo <= want <= hi for want, lo, hi in zip(sizes, smallest, largest)):
            raise ValueError(f"requested an output size of {sizes}, but valid sizes range from {smallest} to "
                             f"{largest} (for an input of {spatial})")
        return tuple(want - lo for want, lo in zip(sizes, smallest))


@takes_device
class ConvTranspose1d(_ConvTransposeNd):
    """x (N, C_in, L) or (C_in, L) → (N, C_out, L_out), L_out = (L − 1)·s − 2p + d·(k − 1) + output_padding + 1,
    as torch.nn.ConvTranspose1d: conv1d's adjoint, the learned upsampling of a decoder (d2l 14.10).
    forward(x, output_size) picks the output_padding that gives output_size (one of the `stride` sizes a
    stride-s conv1d maps onto L)."""

    _n = 1

    def forward(self, input: Tensor, output_size=None) -> Tensor:
        output_padding = self._output_padding(input, output_size)
        return FC.conv_transpose1d(input, self.weight, self.bias, self.stride, self.padding, output_padding,
                                   self.groups, self.dilation)


@takes_device
class ConvTranspose2d(_ConvTransposeNd):
    """x (N, C_in, H, W) or (C_in, H, W) → (N, C_out, H_out, W_out), each as ConvTranspose1d's L_out, as
    torch.nn.ConvTranspose2d (FCN and U-Net upsampling); forward(x, output_size) as ConvTranspose1d's."""

    _n = 2

    def forward(self, input: Tensor, output_size=None) -> Tensor:
        output_padding = self._output_padding(input, output_size)
        return FC.conv_transpose2d(input, self.weight, self.bias, self.stride, self.padding, output_padding,
                                   self.groups, self.dilation)


# ---- pooling ------------------------------------------------------------------------------------
class _MaxPoolNd(Module):
    def __init__(self, kernel_size, stride=None, padding=0, dilation=1, return_indices: bool = False,
                 ceil_mode: bool = False):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if (stride is not None) else kernel_size  # torch's: `stride or kernel_size`
        self.padding, self.dilation = padding, dilation
        self.return_indices, self.ceil_mode = return_indices, ceil_mode

    def extra_repr(self) -> str:
        return (f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
                f"dilation={self.dilation}, ceil_mode={self.ceil_mode}")


class MaxPool1d(_MaxPoolNd):
    """The max over each window along L of (N, C, L), as torch.nn.MaxPool1d (stride defaults to kernel_size)."""

    def forward(self, input: Tensor):
        return FC.max_pool1d(input, self.kernel_size, self.stride, self.padding, self.dilation,
                             ceil_mode=self.ceil_mode, return_indices=self.return_indices)


class MaxPool2d(_MaxPoolNd):
    """The max over each kH x kW window of (N, C, H, W), as torch.nn.MaxPool2d."""

    def forward(self, input: Tensor):
        return FC.max_pool2d(input, self.kernel_size, self.stride, self.padding, self.dilation,
                             ceil_mode=self.ceil_mode, return_indices=self.return_indices)


class AvgPool1d(Module):
    """The mean over each window along L of (N, C, L), as torch.nn.AvgPool1d (which keeps its sizes as 1-tuples,
    hence its repr)."""

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
                 count_include_pad: bool = True):
        super().__init__()
        self.kernel_size = FC.ntuple(kernel_size, 1, "kernel_size", "AvgPool1d")
        self.stride = FC.ntuple(stride if stride is not None else kernel_size, 1, "stride", "AvgPool1d")
        self.padding = FC.ntuple(padding, 1, "padding", "AvgPool1d")
        self.ceil_mode, self.count_include_pad = ceil_mode, count_include_pad

    def forward(self, input: Tensor) -> Tensor:
        return FC.avg_pool1d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                             self.count_include_pad)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AvgPool2d(Module):
    """The mean over each kH x kW window of (N, C, H, W), as torch.nn.AvgPool2d."""

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
                 count_include_pad: bool = True, divisor_override: int | None = None):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if (stride is not None) else kernel_size
        self.padding, self.ceil_mode = padding, ceil_mode
        self.count_include_pad, self.divisor_override = count_include_pad, divisor_override

    def forward(self, input: Tensor) -> Tensor:
        return FC.avg_pool2d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                             self.count_include_pad, self.divisor_override)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class _AdaptivePool(Module):
    def __init__(self, output_size):
        super().__init__()
        self.output_size = output_size

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class AdaptiveAvgPool1d(_AdaptivePool):
    """(N, C, L) → (N, C, output_size): the means of torch's adaptive windows, as torch.nn.AdaptiveAvgPool1d."""

    def forward(self, input: Tensor) -> Tensor:
        return FC.adaptive_avg_pool1d(input, self.output_size)


class AdaptiveAvgPool2d(_AdaptivePool):
    """(N, C, H, W) → (N, C, *output_size) (None keeps a dim), as torch.nn.AdaptiveAvgPool2d; output_size=1 is
    global average pooling (d2l's NiN and ResNet heads)."""

    def forward(self, input: Tensor) -> Tensor:
        return FC.adaptive_avg_pool2d(input, self.output_size)


class AdaptiveMaxPool1d(_AdaptivePool):
    """(N, C, L) → (N, C, output_size): the maxima of torch's adaptive windows, as torch.nn.AdaptiveMaxPool1d;
    output_size=1 is a TextCNN's max-over-time pooling."""

    def __init__(self, output_size, return_indices: bool = False):
        super().__init__(output_size)
        self.return_indices = return_indices

    def forward(self, input: Tensor):
        return FC.adaptive_max_pool1d(input, self.output_size, self.return_indices)
