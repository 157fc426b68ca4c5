"""Convolution and pooling layers, as torch.nn's: Conv1d/2d, MaxPool1d/2d, AvgPool1d/2d, AdaptiveAvgPool1d/2d,
AdaptiveMaxPool1d (d2l's chapter 7, and Kim (2014)'s TextCNN: Conv1d over (B, E, T), then max over time).

Arguments, attribute names, `weight` (C_out, C_in/groups, *kernel_size) and `bias` (C_out,), default init and
reprs are torch's, so `load_state_dict(torch_conv.state_dict())` works; the arithmetic is `seqlab.functional_conv`.
"""
from __future__ import annotations

import math

from seqlab import creation
from seqlab import functional_conv as FC
from seqlab.autograd.tensor import Tensor
from seqlab.nn import init
from seqlab.nn.module import Module, Parameter, takes_device

__all__ = ["Conv1d", "Conv2d", "MaxPool1d", "MaxPool2d", "AvgPool1d", "AvgPool2d", "AdaptiveAvgPool1d",
           "AdaptiveAvgPool2d", "AdaptiveMaxPool1d"]

_PADDING_MODES = ("zeros", "reflect", "replicate", "circular")  # torch's; seqlab implements 'zeros'


class _ConvNd(Module):
    """What Conv1d and Conv2d share (torch's _ConvNd): checked arguments, parameters, init and repr."""

    _n = 1  # spatial dims

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
        if padding_mode != "zeros":
            raise ValueError(f"padding_mode={padding_mode!r} is not implemented in seqlab; 'zeros' is (pad with "
                             f"F.pad(x, ..., mode={padding_mode!r}) first and use padding=0)")
        self.in_channels, self.out_channels, self.groups = in_channels, out_channels, groups
        self.padding_mode = padding_mode
        self.transposed, self.output_padding = False, (0,) * n  # torch's attributes (no transposed conv here)
        self.weight = Parameter(creation.zeros(out_channels, in_channels // groups, *self.kernel_size, dtype=dtype))
        if bias:
            self.bias = Parameter(creation.zeros(out_channels, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        # torch: kaiming_uniform(a=√5), i.e. U(−1/√fan_in, 1/√fan_in), fan_in = C_in/groups · Π kernel_size
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in = self.in_channels // self.groups * math.prod(self.kernel_size)
            if fan_in:
                bound = 1 / math.sqrt(fan_in)
                init.uniform_(self.bias, -bound, bound)

    def extra_repr(self) -> str:
        s = f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}"
        if self.padding != (0,) * self._n:  # a string ('same', 'valid') is shown too, as torch
            s += f", padding={self.padding}"
        if self.dilation != (1,) * self._n:
            s += f", dilation={self.dilation}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        return s


@takes_device
class Conv1d(_ConvNd):
    """x (N, C_in, L) or (C_in, L) → (N, C_out, L_out), L_out = ⌊(L + 2p − d·(k − 1) − 1) / s⌋ + 1, as
    torch.nn.Conv1d. For text, x is the embeddings transposed: (B, T, E).transpose(1, 2) → (B, E, T)."""

    _n = 1

    def _conv_forward(self, input: Tensor, weight: Tensor, bias: Tensor | None) -> Tensor:
        return FC.conv1d(input, weight, bias, self.stride, self.padding, self.dilation, self.groups)

    def forward(self, input: Tensor) -> Tensor:
        return self._conv_forward(input, self.weight, self.bias)


@takes_device
class Conv2d(_ConvNd):
    """x (N, C_in, H, W) or (C_in, H, W) → (N, C_out, H_out, W_out), each as Conv1d's L_out, as torch.nn.Conv2d."""

    _n = 2

    def _conv_forward(self, input: Tensor, weight: Tensor, bias: Tensor | None) -> Tensor:
        return FC.conv2d(input, weight, bias, self.stride, self.padding, self.dilation, self.groups)

    def forward(self, input: Tensor) -> Tensor:
        return self._conv_forward(input, self.weight, self.bias)


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
