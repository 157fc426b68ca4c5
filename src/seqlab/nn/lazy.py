"""Lazy convolutions and norms, as torch.nn's LazyConv1d/2d, LazyConvTranspose1d/2d, LazyBatchNorm1d/2d/3d and
LazyInstanceNorm1d/2d/3d: the input channel count is read from the first input (d2l builds its CNNs this way).

They follow `nn.LazyLinear` (linear.py): until the first forward, `in_channels` / `num_features` is 0 and each
parameter and running-statistic buffer is a placeholder holding no numbers (shape (0,)). The first forward
reads the channels (dim 1, or dim 0 of an unbatched input), gives those same objects their arrays, draws them
as the eager layer would from seqlab's generator at that moment, and turns the module into its eager class
(`cls_to_become`, as torch: then `type(m) is nn.Conv2d`). Loading a state dict before the first forward takes
the shapes from the checkpoint (`materialize_from_state_dict`, which `Module.load_state_dict` calls).
"""
from __future__ import annotations

import numpy as np

from seqlab import backend, creation
from seqlab.autograd.torch_errors import ArgumentError
from seqlab.nn.batchnorm import BatchNorm1d, BatchNorm2d
from seqlab.nn.conv import Conv1d, Conv2d, ConvTranspose1d, ConvTranspose2d
from seqlab.nn.module import Parameter, takes_device
from seqlab.nn.norm_more import BatchNorm3d, InstanceNorm1d, InstanceNorm2d, InstanceNorm3d

__all__ = ["LazyConv1d", "LazyConv2d", "LazyConvTranspose1d", "LazyConvTranspose2d", "LazyBatchNorm1d",
           "LazyBatchNorm2d", "LazyBatchNorm3d", "LazyInstanceNorm1d", "LazyInstanceNorm2d", "LazyInstanceNorm3d"]


def _check_float(module, input) -> None:
    if not hasattr(input, "shape") or not hasattr(input, "dtype"):
        raise TypeError(f"{type(module).__name__} expects a Tensor (or an array), got {type(input).__name__}")
    if np.dtype(input.dtype).kind != "f":
        raise TypeError(f"{type(module).__name__} expects floating-point input, got dtype {input.dtype}")


class _LazyMixin:
    """What every lazy layer shares: the first forward materialises, becomes `cls_to_become`, then runs it."""

    cls_to_become: type | None = None

    def _materialize(self, channels: int) -> None:  # pragma: no cover - each lazy base defines it
        raise NotImplementedError

    def _channels_of(self, input) -> int:  # pragma: no cover - each lazy base defines it
        raise NotImplementedError

    def initialize_parameters(self, input) -> None:
        """Size the placeholders for `input`'s channels and draw them (torch's name; forward calls it)."""
        if not self.has_uninitialized_params():
            return
        _check_float(self, input)
        channels = self._channels_of(input)
        if channels <= 0:
            raise ValueError(f"{type(self).__name__} reads its channels from the input, but input has shape "
                             f"{tuple(input.shape)}")
        self._materialize(channels)

    def forward(self, input, *args, **kwargs):  # noqa: A002
        eager = self.cls_to_become
        self.initialize_parameters(input)  # the module is its eager class from here on
        return eager.forward(self, input, *args, **kwargs)


# ---- convolutions ---------------------------------------------------------------------------------------------
class _LazyConvMixin(_LazyMixin):
    """`in_channels` 0 and placeholder `weight` / `bias` until the first input (N, C_in, *spatial) or
    (C_in, *spatial)."""

    def _lazy_init(self, dtype) -> None:
        self.in_channels = 0  # as torch, until the first forward
        self.weight = Parameter(creation.zeros(0, dtype=dtype))
        if self.bias is not None:
            self.bias = Parameter(creation.zeros(0, dtype=dtype))

    def has_uninitialized_params(self) -> bool:
        return self.in_channels == 0

    def reset_parameters(self) -> None:
        if not self.has_uninitialized_params():  # pragma: no cover - the layer is eager by then
            super().reset_parameters()

    def _channels_of(self, input) -> int:
        n = self._n
        if len(input.shape) not in (n + 1, n + 2):
            raise ArgumentError(f"Expected {n + 1}D (unbatched) or {n + 2}D (batched) input to "
                                f"{type(self).__name__}, but got input of size: {tuple(input.shape)}")
        return int(input.shape[1] if len(input.shape) == n + 2 else input.shape[0])

    def _materialize(self, in_channels: int) -> None:
        if in_channels % self.groups:
            raise ValueError(f"in_channels must be divisible by groups, got in_channels={in_channels}, "
                             f"groups={self.groups}")
        self.in_channels = in_channels
        lead = (in_channels, self.out_channels // self.groups) if self.transposed else \
            (self.out_channels, in_channels // self.groups)
        xp = backend.xp_of(self.weight.data)
        self.weight.data = xp.zeros(lead + tuple(self.kernel_size), dtype=self.weight.dtype)
        if self.bias is not None:
            self.bias.data = xp.zeros(self.out_channels, dtype=self.bias.dtype)
        self.__class__ = self.cls_to_become
        self.reset_parameters()  # the eager layer's init: kaiming_uniform(a=√5), bias U(±1/√fan_in)

    def materialize_from_state_dict(self, state_dict, prefix: str = "") -> None:
        """Size the layer from `state_dict[prefix + "weight"]` (load_state_dict copies the values in after); a
        missing or misshapen weight leaves it lazy, and loading then reports it by name."""
        shape = tuple(getattr(state_dict.get(prefix + "weight"), "shape", ()))
        if len(shape) != self._n + 2 or shape[2:] != tuple(self.kernel_size) or 0 in shape:
            return
        if self.transposed:
            fits, in_channels = shape[1] * self.groups == self.out_channels, shape[0]
        else:
            fits, in_channels = shape[0] == self.out_channels, shape[1] * self.groups
        if fits:
            self._materialize(in_channels)


@takes_device
class LazyConv1d(_LazyConvMixin, Conv1d):
    """torch.nn.LazyConv1d(out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, bias=True,
    padding_mode='zeros'): a Conv1d whose in_channels is read from the first input."""

    cls_to_become = Conv1d

    def __init__(self, out_channels: int, kernel_size, stride=1, padding=0, dilation=1, groups: int = 1,
                 bias: bool = True, padding_mode: str = "zeros", dtype=None) -> None:
        Conv1d.__init__(self, 0, out_channels, kernel_size, stride, padding, dilation, groups, bias, padding_mode,
                        dtype=dtype)
        self._lazy_init(dtype)


@takes_device
class LazyConv2d(_LazyConvMixin, Conv2d):
    """torch.nn.LazyConv2d(out_channels, kernel_size, ...): a Conv2d whose in_channels is read from the first
    input."""

    cls_to_become = Conv2d

    def __init__(self, out_channels: int, kernel_size, stride=1, padding=0, dilation=1, groups: int = 1,
                 bias: bool = True, padding_mode: str = "zeros", dtype=None) -> None:
        Conv2d.__init__(self, 0, out_channels, kernel_size, stride, padding, dilation, groups, bias, padding_mode,
                        dtype=dtype)
        self._lazy_init(dtype)


@takes_device
class LazyConvTranspose1d(_LazyConvMixin, ConvTranspose1d):
    """torch.nn.LazyConvTranspose1d(out_channels, kernel_size, stride=1, padding=0, output_padding=0, groups=1,
    bias=True, dilation=1, padding_mode='zeros'): a ConvTranspose1d whose in_channels is read from the first
    input; forward(input, output_size=None) as ConvTranspose1d's."""

    cls_to_become = ConvTranspose1d

    def __init__(self, out_channels: int, kernel_size, stride=1, padding=0, output_padding=0, groups: int = 1,
                 bias: bool = True, dilation=1, padding_mode: str = "zeros", dtype=None) -> None:
        ConvTranspose1d.__init__(self, 0, out_channels, kernel_size, stride, padding, output_padding, groups, bias,
                                 dilation, padding_mode, dtype=dtype)
        self._lazy_init(dtype)


@takes_device
class LazyConvTranspose2d(_LazyConvMixin, ConvTranspose2d):
    """torch.nn.LazyConvTranspose2d(out_channels, kernel_size, ...): a ConvTranspose2d whose in_channels is read
    from the first input."""

    cls_to_become = ConvTranspose2d

    def __init__(self, out_channels: int, kernel_size, stride=1, padding=0, output_padding=0, groups: int = 1,
                 bias: bool = True, dilation=1, padding_mode: str = "zeros", dtype=None) -> None:
        ConvTranspose2d.__init__(self, 0, out_channels, kernel_size, stride, padding, output_padding, groups, bias,
                                 dilation, padding_mode, dtype=dtype)
        self._lazy_init(dtype)


# ---- norms ----------------------------------------------------------------------------------------------------
class _LazyNormMixin(_LazyMixin):
    """`num_features` 0 until the first input; `weight` / `bias` (affine) and `running_mean` / `running_var`
    (track_running_stats) are the eager layer's, built with 0 features: (0,) placeholders, sized then."""

    def has_uninitialized_params(self) -> bool:
        return self.num_features == 0

    def reset_parameters(self) -> None:
        if not self.has_uninitialized_params():  # pragma: no cover - the layer is eager by then
            super().reset_parameters()

    def _channels_of(self, input) -> int:
        self._check_input_dim(input)  # the eager layer's rank check and message
        return int(input.shape[1])

    def _materialize(self, num_features: int) -> None:
        self.num_features = num_features
        for name in ("weight", "bias", "running_mean", "running_var"):
            t = getattr(self, name)
            if t is not None:
                t.data = backend.xp_of(t.data).zeros(num_features, dtype=t.dtype)
        self.__class__ = self.cls_to_become
        self.reset_parameters()  # weight 1, bias 0, running mean 0 and variance 1, no batches tracked

    def materialize_from_state_dict(self, state_dict, prefix: str = "") -> None:
        """Size the layer from the checkpoint's `weight` or `running_mean` (whichever the layer keeps); without
        either it stays lazy, and loading reports the keys missing."""
        for name in ("weight", "running_mean"):
            if getattr(self, name) is not None and prefix + name in state_dict:
                shape = tuple(getattr(state_dict[prefix + name], "shape", ()))
                if len(shape) == 1 and shape[0] > 0:
                    self._materialize(shape[0])
                return


class LazyBatchNorm1d(_LazyNormMixin, BatchNorm1d):
    """torch.nn.LazyBatchNorm1d(eps=1e-5, momentum=0.1, affine=True, track_running_stats=True, *, bias=True): a
    BatchNorm1d whose num_features is read from the first input (N, C) or (N, C, L)."""

    cls_to_become = BatchNorm1d

    def __init__(self, eps: float = 1e-5, momentum: float | None = 0.1, affine: bool = True,
                 track_running_stats: bool = True, device=None, dtype=None, *, bias: bool = True) -> None:
        BatchNorm1d.__init__(self, 0, eps, momentum, affine, track_running_stats, device, dtype, bias=bias)


class LazyBatchNorm2d(_LazyNormMixin, BatchNorm2d):
    """torch.nn.LazyBatchNorm2d(...): a BatchNorm2d whose num_features is read from the first input (N, C, H, W)."""

    cls_to_become = BatchNorm2d

    def __init__(self, eps: float = 1e-5, momentum: float | None = 0.1, affine: bool = True,
                 track_running_stats: bool = True, device=None, dtype=None, *, bias: bool = True) -> None:
        BatchNorm2d.__init__(self, 0, eps, momentum, affine, track_running_stats, device, dtype, bias=bias)


class LazyBatchNorm3d(_LazyNormMixin, BatchNorm3d):
    """torch.nn.LazyBatchNorm3d(...): a BatchNorm3d whose num_features is read from the first input
    (N, C, D, H, W)."""

    cls_to_become = BatchNorm3d

    def __init__(self, eps: float = 1e-5, momentum: float | None = 0.1, affine: bool = True,
                 track_running_stats: bool = True, device=None, dtype=None, *, bias: bool = True) -> None:
        BatchNorm3d.__init__(self, 0, eps, momentum, affine, track_running_stats, device, dtype, bias=bias)


class _LazyInstanceNormMixin(_LazyNormMixin):
    """As torch's lazy instance norms: affine=True and track_running_stats=True by default (the eager
    InstanceNorms default to False for both). The channels of an unbatched input (C, *) are its dim 0."""

    def _channels_of(self, input) -> int:
        self._check_input_dim(input)
        return int(input.shape[0] if len(input.shape) == self._dims + 1 else input.shape[1])


class LazyInstanceNorm1d(_LazyInstanceNormMixin, InstanceNorm1d):
    """torch.nn.LazyInstanceNorm1d(eps=1e-5, momentum=0.1, affine=True, track_running_stats=True, *, bias=True):
    an InstanceNorm1d whose num_features is read from the first input (N, C, L) or (C, L)."""

    cls_to_become = InstanceNorm1d

    def __init__(self, eps: float = 1e-5, momentum: float | None = 0.1, affine: bool = True,
                 track_running_stats: bool = True, device=None, dtype=None, *, bias: bool = True) -> None:
        InstanceNorm1d.__init__(self, 0, eps, momentum, affine, track_running_stats, device, dtype, bias=bias)


class LazyInstanceNorm2d(_LazyInstanceNormMixin, InstanceNorm2d):
    """torch.nn.LazyInstanceNorm2d(...): an InstanceNorm2d whose num_features is read from the first input
    (N, C, H, W) or (C, H, W)."""

    cls_to_become = InstanceNorm2d

    def __init__(self, eps: float = 1e-5, momentum: float | None = 0.1, affine: bool = True,
                 track_running_stats: bool = True, device=None, dtype=None, *, bias: bool = True) -> None:
        InstanceNorm2d.__init__(self, 0, eps, momentum, affine, track_running_stats, device, dtype, bias=bias)


class LazyInstanceNorm3d(_LazyInstanceNormMixin, InstanceNorm3d):
    """torch.nn.LazyInstanceNorm3d(...): an InstanceNorm3d whose num_features is read from the first input
    (N, C, D, H, W) or (C, D, H, W)."""

    cls_to_become = InstanceNorm3d

    def __init__(self, eps: float = 1e-5, momentum: float | None = 0.1, affine: bool = True,
                 track_running_stats: bool = True, device=None, dtype=None, *, bias: bool = True) -> None:
        InstanceNorm3d.__init__(self, 0, eps, momentum, affine, track_running_stats, device, dtype, bias=bias)
