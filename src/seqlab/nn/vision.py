"""Vision layers with torch.nn's names, arguments, attributes and reprs (2.13): Upsample and its two fixed-mode
subclasses, PixelShuffle / PixelUnshuffle, ChannelShuffle, Fold / Unfold, AdaptiveMaxPool2d, LPPool1d/2d,
MaxUnpool1d/2d, and the padding layers F.pad has modes for (ReflectionPad3d, ReplicationPad3d, CircularPad1d/2d/3d).

None has parameters; each forward is the function of the same name in seqlab.functional_vision or
functional_interpolate (d2l's chapter 14: transposed convolutions, FCN; ShuffleNet; ESPCN's sub-pixel layer).
"""
from __future__ import annotations

from seqlab import functional_conv as FC
from seqlab import functional_interpolate as FI
from seqlab import functional_vision as FV
from seqlab.autograd.tensor import Tensor
from seqlab.nn.misc_layers import _PadNd
from seqlab.nn.module import Module

__all__ = ["Upsample", "UpsamplingNearest2d", "UpsamplingBilinear2d", "PixelShuffle", "PixelUnshuffle",
           "ChannelShuffle", "Fold", "Unfold", "AdaptiveMaxPool2d", "LPPool1d", "LPPool2d", "MaxUnpool1d",
           "MaxUnpool2d", "ReflectionPad3d", "ReplicationPad3d", "CircularPad1d", "CircularPad2d", "CircularPad3d"]


# ---- resizing -------------------------------------------------------------------------------------------------
class Upsample(Module):
    """`F.interpolate(x, size, scale_factor, mode, align_corners, recompute_scale_factor)` as a layer, as
    torch.nn.Upsample: scale_factor is kept as a float (or a tuple of floats); the repr shows it, or the size."""

    def __init__(self, size=None, scale_factor=None, mode: str = "nearest", align_corners: bool | None = None,
                 recompute_scale_factor: bool | None = None) -> None:
        super().__init__()
        self.name = type(self).__name__
        self.size = size
        if isinstance(scale_factor, tuple):
            self.scale_factor = tuple(float(s) for s in scale_factor)
        else:
            self.scale_factor = float(scale_factor) if scale_factor else None  # torch's: 0 reads as "not given"
        self.mode, self.align_corners, self.recompute_scale_factor = mode, align_corners, recompute_scale_factor

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return FI.interpolate(input, self.size, self.scale_factor, self.mode, self.align_corners,
                              recompute_scale_factor=self.recompute_scale_factor)

    def extra_repr(self) -> str:
        info = f"scale_factor={self.scale_factor!r}" if self.scale_factor is not None else f"size={self.size!r}"
        return f"{info}, mode={self.mode!r}"


class UpsamplingNearest2d(Upsample):
    """Upsample(size, scale_factor, mode='nearest') for (N, C, H, W), as torch's (which calls it deprecated)."""

    def __init__(self, size=None, scale_factor=None) -> None:
        super().__init__(size, scale_factor, mode="nearest")


class UpsamplingBilinear2d(Upsample):
    """Upsample(size, scale_factor, mode='bilinear', align_corners=True), as torch's: note align_corners=True,
    unlike F.interpolate's default."""

    def __init__(self, size=None, scale_factor=None) -> None:
        super().__init__(size, scale_factor, mode="bilinear", align_corners=True)


class PixelShuffle(Module):
    """(*, C·r², H, W) → (*, C, H·r, W·r) (`F.pixel_shuffle`): the sub-pixel convolution's upsampling."""

    def __init__(self, upscale_factor: int) -> None:
        super().__init__()
        self.upscale_factor = upscale_factor

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return FV.pixel_shuffle(input, self.upscale_factor)

    def extra_repr(self) -> str:
        return f"upscale_factor={self.upscale_factor}"


class PixelUnshuffle(Module):
    """(*, C, H·r, W·r) → (*, C·r², H, W) (`F.pixel_unshuffle`), PixelShuffle's inverse."""

    def __init__(self, downscale_factor: int) -> None:
        super().__init__()
        self.downscale_factor = downscale_factor

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return FV.pixel_unshuffle(input, self.downscale_factor)

    def extra_repr(self) -> str:
        return f"downscale_factor={self.downscale_factor}"


class ChannelShuffle(Module):
    """`F.channel_shuffle(x, groups)`: ShuffleNet's channel mixing between grouped convolutions."""

    def __init__(self, groups: int) -> None:
        super().__init__()
        self.groups = groups

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return FV.channel_shuffle(input, self.groups)

    def extra_repr(self) -> str:
        return f"groups={self.groups}"


# ---- sliding blocks -------------------------------------------------------------------------------------------
class Fold(Module):
    """`F.fold` (col2im): (N, C·kH·kW, L) → (N, C, *output_size), overlapping blocks summed."""

    def __init__(self, output_size, kernel_size, dilation=1, padding=0, stride=1) -> None:
        super().__init__()
        self.output_size, self.kernel_size = output_size, kernel_size
        self.dilation, self.padding, self.stride = dilation, padding, stride

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return FV.fold(input, self.output_size, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self) -> str:
        return (f"output_size={self.output_size}, kernel_size={self.kernel_size}, dilation={self.dilation}, "
                f"padding={self.padding}, stride={self.stride}")


class Unfold(Module):
    """`F.unfold` (im2col): (N, C, H, W) → (N, C·kH·kW, L), one column per sliding block."""

    def __init__(self, kernel_size, dilation=1, padding=0, stride=1) -> None:
        super().__init__()
        self.kernel_size, self.dilation, self.padding, self.stride = kernel_size, dilation, padding, stride

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return FV.unfold(input, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self) -> str:
        return (f"kernel_size={self.kernel_size}, dilation={self.dilation}, padding={self.padding}, "
                f"stride={self.stride}")


# ---- pooling --------------------------------------------------------------------------------------------------
class AdaptiveMaxPool2d(Module):
    """(N, C, H, W) → (N, C, *output_size) (None keeps a dim): the maxima of torch's adaptive windows, as
    torch.nn.AdaptiveMaxPool2d; return_indices adds their flat positions (what MaxUnpool2d reads)."""

    def __init__(self, output_size, return_indices: bool = False) -> None:
        super().__init__()
        self.output_size, self.return_indices = output_size, return_indices

    def forward(self, input: Tensor):  # noqa: A002
        return FV.adaptive_max_pool2d(input, self.output_size, self.return_indices)

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class _LPPoolNd(Module):
    def __init__(self, norm_type: float, kernel_size, stride=None, ceil_mode: bool = False) -> None:
        super().__init__()
        self.norm_type, self.kernel_size, self.stride, self.ceil_mode = norm_type, kernel_size, stride, ceil_mode

    def extra_repr(self) -> str:
        return (f"norm_type={self.norm_type}, kernel_size={self.kernel_size}, stride={self.stride}, "
                f"ceil_mode={self.ceil_mode}")


class LPPool1d(_LPPoolNd):
    """(Σ_window x^p)^(1/p) over windows along L (`F.lp_pool1d`); p = 1 is sum pooling, p = inf max pooling."""

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return FV.lp_pool1d(input, float(self.norm_type), self.kernel_size, self.stride, self.ceil_mode)


class LPPool2d(_LPPoolNd):
    """(Σ_window x^p)^(1/p) over kH x kW windows (`F.lp_pool2d`)."""

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return FV.lp_pool2d(input, float(self.norm_type), self.kernel_size, self.stride, self.ceil_mode)


class _MaxUnpoolNd(Module):
    _n = 1

    def __init__(self, kernel_size, stride=None, padding=0) -> None:
        super().__init__()
        n, fn = self._n, type(self).__name__
        self.kernel_size = FC.ntuple(kernel_size, n, "kernel_size", fn)
        self.stride = FC.ntuple(stride if stride is not None else kernel_size, n, "stride", fn)
        self.padding = FC.ntuple(padding, n, "padding", fn)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class MaxUnpool1d(_MaxUnpoolNd):
    """`F.max_unpool1d`: forward(x, indices, output_size=None) with MaxPool1d(return_indices=True)'s indices."""

    def forward(self, input: Tensor, indices: Tensor, output_size=None) -> Tensor:  # noqa: A002
        return FV.max_unpool1d(input, indices, self.kernel_size, self.stride, self.padding, output_size)


class MaxUnpool2d(_MaxUnpoolNd):
    """`F.max_unpool2d`: forward(x, indices, output_size=None) with MaxPool2d(return_indices=True)'s indices
    (SegNet's decoder)."""

    _n = 2

    def forward(self, input: Tensor, indices: Tensor, output_size=None) -> Tensor:  # noqa: A002
        return FV.max_unpool2d(input, indices, self.kernel_size, self.stride, self.padding, output_size)


# ---- padding (F.pad's modes) ----------------------------------------------------------------------------------
class ReflectionPad3d(_PadNd):
    """Mirrors the last three dims about their edges; padding (left, right, top, bottom, front, back)."""

    dims, mode = 3, "reflect"


class ReplicationPad3d(_PadNd):
    """Repeats the edge values of the last three dims; padding (left, right, top, bottom, front, back)."""

    dims, mode = 3, "replicate"


class _CircularPadNd(_PadNd):
    """Wraps around (the far edge's values pad the near side); torch checks the input's rank first."""

    mode = "circular"

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        ndim = input.ndim
        if ndim not in (self.dims + 1, self.dims + 2):
            raise ValueError(f"expected {self.dims + 1}D or {self.dims + 2}D input (got {ndim}D input)")
        return super().forward(input)


class CircularPad1d(_CircularPadNd):
    """Circular padding of the last dim of (N, C, L) or (C, L); padding (left, right)."""


class CircularPad2d(_CircularPadNd):
    """Circular padding of the last two dims; padding (left, right, top, bottom)."""

    dims = 2


class CircularPad3d(_CircularPadNd):
    """Circular padding of the last three dims; padding (left, right, top, bottom, front, back)."""

    dims = 3
