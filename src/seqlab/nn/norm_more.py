"""Group, instance and local response normalisation, and BatchNorm3d, as torch.nn's.

Each normalises the same way, (x − mean) / √(var + eps) with the biased variance, over a different set of
values of an input (N, C, *):

- group norm: the C / G channels of each of G groups, with every position, per sample;
- instance norm: each channel of each sample over its positions alone (group norm with G = C, plus
  optional running statistics, as torch's);
- local response norm: x / (k + α/n · Σ x²)^β, the sum over the n channels around each one.

The gradients come from composing Tensor ops (mean, mul, rsqrt), as batch norm's do (batchnorm.py).
"""
from __future__ import annotations

import warnings

from seqlab import backend, creation
from seqlab import functional as F
from seqlab.autograd.tensor import Tensor
from seqlab.nn import init
from seqlab.nn.batchnorm import _array, _BatchNorm, _update_running
from seqlab.nn.module import Module, Parameter, takes_device

__all__ = ["group_norm", "instance_norm", "local_response_norm", "GroupNorm", "InstanceNorm1d", "InstanceNorm2d",
           "InstanceNorm3d", "LocalResponseNorm", "BatchNorm3d"]


def _tensor(x) -> Tensor:
    return x if isinstance(x, Tensor) else Tensor._of(x)


def _normalize(x: Tensor, dims: tuple, eps: float) -> tuple[Tensor, Tensor, Tensor]:
    """((x − mean) / √(var + eps), mean, biased var) over `dims`, keepdim."""
    mean = x.mean(dims, keepdim=True)
    centered = x - mean
    var = (centered * centered).mean(dims, keepdim=True)
    return centered * (var + eps).rsqrt(), mean, var


def _affine(y: Tensor, weight, bias, channels: int) -> Tensor:
    """y · weight + bias, each (C,) broadcast along dim 1 of y (N, C, *)."""
    shape = (1, channels) + (1,) * (y.ndim - 2)
    if weight is not None:
        y = y * weight.reshape(shape)
    if bias is not None:
        y = y + bias.reshape(shape)
    return y


def group_norm(input: Tensor, num_groups: int, weight: Tensor | None = None, bias: Tensor | None = None,  # noqa: A002
               eps: float = 1e-5) -> Tensor:
    """Normalise (N, C, *) over each group of C / num_groups channels (with every position), per sample;
    then weight and bias (C,) per channel, as torch.nn.functional.group_norm."""
    x = _tensor(input)
    if x.ndim < 2:
        raise RuntimeError(f"Expected at least 2 dimensions for input tensor but received {x.ndim}")
    N, C = x.shape[:2]
    if num_groups <= 0 or C % num_groups:
        raise RuntimeError(f"Expected number of channels in input to be divisible by num_groups, but got input "
                           f"of shape {list(x.shape)} and num_groups={num_groups}")
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and tuple(t.shape) != (C,):
            raise RuntimeError(f"Expected {name} to be a vector of size equal to the number of channels in input, "
                               f"but got {name} of shape {list(t.shape)} and input of shape {list(x.shape)}")
    if N * (C // num_groups) * (x.numel() // max(N * C, 1)) == 1:  # torch's check (its product, not per group)
        raise ValueError(f"Expected more than 1 value per channel when training, got input size {list(x.shape)}")
    grouped = x.reshape(N, num_groups, -1)  # (N, G, C/G · positions)
    y = _normalize(grouped, (2,), eps)[0].reshape(x.shape)
    return _affine(y, weight, bias, C)


def instance_norm(input: Tensor, running_mean=None, running_var=None, weight: Tensor | None = None,  # noqa: A002
                  bias: Tensor | None = None, use_input_stats: bool = True, momentum: float = 0.1,
                  eps: float = 1e-5) -> Tensor:
    """Normalise each channel of each sample of (N, C, *) over its positions, as
    torch.nn.functional.instance_norm.

    use_input_stats=True: the instance's own mean and biased variance; `running_mean` / `running_var` (C,),
    when given, are updated in place with their average over the batch (the variance unbiased), as batch
    norm's are. use_input_stats=False: the running statistics normalise instead.
    """
    x = _tensor(input)
    if x.ndim < 3:
        raise ValueError(f"instance_norm expects input of shape (N, C, *) with at least one position, got shape "
                         f"{x.shape}")
    C = x.shape[1]
    for name, t in (("running_mean", running_mean), ("running_var", running_var), ("weight", weight),
                    ("bias", bias)):
        if t is not None and tuple(t.shape) != (C,):
            raise ValueError(f"input has {C} channels (shape {x.shape}) but {name} has shape {tuple(t.shape)}")
    dims = tuple(range(2, x.ndim))
    if use_input_stats:
        positions = x.numel() // max(x.shape[0] * C, 1)
        if positions <= 1:
            raise ValueError(f"Expected more than 1 spatial element when training, got input size {list(x.shape)}")
        y, mean, var = _normalize(x, dims, eps)
        _update_running(running_mean, mean.data.reshape(x.shape[0], C).mean(0), momentum)
        unbiased = var.data.reshape(x.shape[0], C) * (positions / (positions - 1))
        _update_running(running_var, unbiased.mean(0), momentum)
    else:
        if running_mean is None or running_var is None:
            raise ValueError("Expected running_mean and running_var to be defined when use_input_stats is false")
        shape = (1, C) + (1,) * (x.ndim - 2)
        mean, var = _array(running_mean), _array(running_var)
        inv_std = 1.0 / backend.xp_of(var).sqrt(var + eps)  # constants: no graph through the statistics
        y = (x - Tensor(mean.reshape(shape))) * Tensor(inv_std.reshape(shape))
    return _affine(y, weight, bias, C)


def local_response_norm(input: Tensor, size: int, alpha: float = 1e-4, beta: float = 0.75,  # noqa: A002
                        k: float = 1.0) -> Tensor:
    """x / (k + α · mean of x² over the `size` channels around each one)^β, as
    torch.nn.functional.local_response_norm: the window runs from c − size//2 to c + (size − 1)//2, channels
    outside the input count as 0, and the mean divides by `size` at the edges too."""
    x = _tensor(input)
    if x.ndim < 3:
        raise ValueError(f"Expected 3D or higher dimensionality input (got {x.ndim} dimensions)")
    if x.numel() == 0:
        return x
    sq = x * x
    C = x.shape[1]
    lead, trail = size // 2, (size - 1) // 2
    pad = [0, 0] * (x.ndim - 2) + [lead, trail]  # F.pad lists the last dim first: only dim 1 is padded
    padded = F.pad(sq, pad)
    window = padded[:, 0:C]
    for j in range(1, size):  # `size` shifted copies of the channels, summed: the window's sum
        window = window + padded[:, j:j + C]
    div = (window * (alpha / size) + k) ** beta
    return x / div


@takes_device
class GroupNorm(Module):
    """torch.nn.GroupNorm(num_groups, num_channels, eps=1e-5, affine=True, *, bias=True): `group_norm` with a
    learned weight (1s) and bias (0s) per channel."""

    def __init__(self, num_groups: int, num_channels: int, eps: float = 1e-5, affine: bool = True, dtype=None, *,
                 bias: bool = True):
        super().__init__()
        if num_groups <= 0 or num_channels % num_groups:
            raise ValueError(f"num_channels ({num_channels}) must be divisible by num_groups ({num_groups})")
        self.num_groups, self.num_channels, self.eps, self.affine = num_groups, num_channels, eps, affine
        if affine:
            self.weight = Parameter(creation.ones(num_channels, dtype=dtype))
            if bias:
                self.bias = Parameter(creation.zeros(num_channels, dtype=dtype))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)

    def reset_parameters(self) -> None:
        if self.weight is not None:
            init.ones_(self.weight)
        if self.bias is not None:
            init.zeros_(self.bias)

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}, "
                f"bias={self.bias is not None}")


class _InstanceNorm(_BatchNorm):
    """What InstanceNorm1d/2d/3d share: batch norm's parameters and buffers (torch's defaults differ:
    affine=False, track_running_stats=False) and an unbatched input (C, *) taken as a batch of one."""

    _dims = 0  # positions' dims of a batched input

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1, affine: bool = False,
                 track_running_stats: bool = False, device=None, dtype=None, *, bias: bool = True):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype, bias=bias)

    def _check_input_dim(self, x: Tensor) -> None:
        if x.ndim not in (self._dims + 1, self._dims + 2):
            raise ValueError(f"expected {self._dims + 1}D or {self._dims + 2}D input (got {x.ndim}D input)")

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        x = _tensor(input)
        self._check_input_dim(x)
        unbatched = x.ndim == self._dims + 1
        feature_dim = 0 if unbatched else 1
        if x.shape[feature_dim] != self.num_features:
            if self.affine:
                raise ValueError(f"expected input's size at dim={feature_dim} to match num_features "
                                 f"({self.num_features}), but got: {x.shape[feature_dim]}.")
            warnings.warn(f"input's size at dim={feature_dim} does not match num_features ({self.num_features}), "
                          f"which is not used because affine=False", stacklevel=2)
        if unbatched:
            x = x.unsqueeze(0)
        use_input_stats = self.training or not self.track_running_stats
        y = instance_norm(x, self.running_mean, self.running_var, self.weight, self.bias, use_input_stats,
                          self.momentum if self.momentum is not None else 0.0, self.eps)
        return y.squeeze(0) if unbatched else y


class InstanceNorm1d(_InstanceNorm):
    """Instance norm over (N, C, L) or unbatched (C, L), as torch.nn.InstanceNorm1d."""

    _dims = 1


class InstanceNorm2d(_InstanceNorm):
    """Instance norm over (N, C, H, W) or unbatched (C, H, W), as torch.nn.InstanceNorm2d."""

    _dims = 2


class InstanceNorm3d(_InstanceNorm):
    """Instance norm over (N, C, D, H, W) or unbatched (C, D, H, W), as torch.nn.InstanceNorm3d."""

    _dims = 3


class LocalResponseNorm(Module):
    """torch.nn.LocalResponseNorm(size, alpha=1e-4, beta=0.75, k=1.0): `local_response_norm` (AlexNet's)."""

    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0):
        super().__init__()
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return local_response_norm(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self) -> str:
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"


class BatchNorm3d(_BatchNorm):
    """Batch norm over (N, C, D, H, W): statistics per channel over N, D, H and W, as torch.nn.BatchNorm3d."""

    def _check_input_dim(self, x: Tensor) -> None:
        if x.ndim != 5:
            raise ValueError(f"expected 5D input (got {x.ndim}D input)")
