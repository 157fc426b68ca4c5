"""Batch normalisation (Ioffe & Szegedy, 2015), as torch.nn.BatchNorm1d / BatchNorm2d and F.batch_norm.

Each channel c of the input (N, C, *) is normalised over the batch and every position:

    y = (x − E[x]) / √(Var[x] + eps) · weight[c] + bias[c]

In training the statistics are the batch's (biased variance, the paper's Algorithm 1), and the running
estimates used at evaluation are updated with the *unbiased* batch variance (Algorithm 2, step 10):

    running = (1 − momentum) · running + momentum · batch

The gradient comes from composing differentiable Tensor ops (mean, mul, rsqrt); the running-stat update is
plain array arithmetic, outside the graph, in place on the buffers' arrays (NumPy or CuPy).
"""
from __future__ import annotations

from seqlab import backend, creation
from seqlab.autograd.tensor import Tensor
from seqlab.backend import xp_of
from seqlab.nn import init
from seqlab.nn.module import Module, Parameter

__all__ = ["batch_norm", "BatchNorm1d", "BatchNorm2d"]


def _array(t):
    """The array behind a Tensor (a buffer), or the array itself."""
    return t.data if isinstance(t, Tensor) else t


def batch_norm(input: Tensor, running_mean, running_var, weight: Tensor | None = None, bias: Tensor | None = None,
               training: bool = False, momentum: float = 0.1, eps: float = 1e-5) -> Tensor:
    """Normalise each channel (dim 1) of `input` (N, C, *) over every other dim, as torch.nn.functional.batch_norm.

    training=True: the batch's mean and biased variance normalise, and `running_mean` / `running_var` (C,)
    (Tensors or arrays, or None) are updated in place with the batch mean and *unbiased* variance:
    running = (1 − momentum) · running + momentum · batch. training=False: the running statistics normalise.
    `weight` and `bias` (C,) scale and shift the result when given.
    """
    x = input if isinstance(input, Tensor) else Tensor._of(input)
    if x.ndim < 2:
        raise ValueError(f"batch_norm expects input of shape (N, C, *), got shape {x.shape}")
    C = x.shape[1]
    for name, t in (("running_mean", running_mean), ("running_var", running_var), ("weight", weight),
                    ("bias", bias)):
        if t is not None and tuple(t.shape) != (C,):
            raise ValueError(f"input has {C} channels (shape {x.shape}) but {name} has shape {tuple(t.shape)}")
    if eps < 0 or (training and eps == 0):  # torch's checks: a zero-variance channel would divide by 0
        raise ValueError(f"batch_norm eps must be {'positive during training' if training else 'non-negative'}, "
                         f"but got {eps}")
    dims = (0,) + tuple(range(2, x.ndim))  # every dim but the channels
    stat_shape = (1, C) + (1,) * (x.ndim - 2)  # (1, C, 1, ...): broadcasts against the input
    if training:
        n = x.numel() // C if C else 0  # values per channel
        if n <= 1:
            raise ValueError(f"Expected more than 1 value per channel when training, got input size {x.shape}")
        mean = x.mean(dims, keepdim=True)  # (1, C, 1, ...)
        centered = x - mean
        var = (centered * centered).mean(dims, keepdim=True)  # biased: normalise by the batch's own spread
        y = centered * (var + eps).rsqrt()
        _update_running(running_mean, mean.data.reshape(C), momentum)
        _update_running(running_var, var.data.reshape(C) * (n / (n - 1)), momentum)  # unbiased estimate
    else:
        if running_mean is None or running_var is None:
            raise ValueError("batch_norm needs running_mean and running_var when training=False "
                             "(a module with track_running_stats=False normalises with batch statistics)")
        mean, var = _array(running_mean), _array(running_var)
        inv_std = 1.0 / xp_of(var).sqrt(var + eps)  # constants: no graph through the running statistics
        y = (x - Tensor(mean.reshape(stat_shape))) * Tensor(inv_std.reshape(stat_shape))
    if weight is not None:
        y = y * weight.reshape(stat_shape)
    if bias is not None:
        y = y + bias.reshape(stat_shape)
    return y


def _update_running(running, batch_stat, momentum: float) -> None:
    """running ← (1 − momentum) · running + momentum · batch_stat, in place (the buffer keeps its array)."""
    if running is None:
        return
    arr = _array(running)
    arr[...] = (1.0 - momentum) * arr + momentum * batch_stat.astype(arr.dtype, copy=False)


class _BatchNorm(Module):
    """What BatchNorm1d and BatchNorm2d share (torch's _BatchNorm): parameters, buffers and forward.

    Parameters `weight` (C,) = 1 and `bias` (C,) = 0 (None when affine=False; torch's keyword-only
    bias=False drops the bias alone); buffers `running_mean` (C,) = 0,
    `running_var` (C,) = 1 and `num_batches_tracked` (int64, 0-d) = 0 (None when track_running_stats=False),
    under torch's names, so a torch state_dict loads.
    """

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1, affine: bool = True,
                 track_running_stats: bool = True, device=None, dtype=None, *, bias: bool = True):
        super().__init__()
        self.num_features = num_features
        self.eps = eps
        self.momentum = momentum
        self.affine = affine
        self.track_running_stats = track_running_stats
        if affine:
            self.weight = Parameter(creation.ones(num_features, dtype=dtype))
            if bias:
                self.bias = Parameter(creation.zeros(num_features, dtype=dtype))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        if track_running_stats:
            self.register_buffer("running_mean", creation.zeros(num_features, dtype=dtype))
            self.register_buffer("running_var", creation.ones(num_features, dtype=dtype))
            self.register_buffer("num_batches_tracked", creation.tensor(0, dtype="int64"))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)
        if device is not None:  # built on the host, then moved (torch's device names are read too)
            self.to(backend.from_torch_name(device))

    def reset_running_stats(self) -> None:
        """Running mean 0, running variance 1, no batches tracked (in place)."""
        if self.track_running_stats:
            self.running_mean.data[...] = 0
            self.running_var.data[...] = 1
            self.num_batches_tracked.data[...] = 0

    def reset_parameters(self) -> None:
        """Reset the running statistics, and weight to 1 and bias to 0 (in place)."""
        self.reset_running_stats()
        if self.affine:
            init.ones_(self.weight)
            if self.bias is not None:
                init.zeros_(self.bias)

    def _check_input_dim(self, x: Tensor) -> None:  # pragma: no cover - each subclass defines it
        raise NotImplementedError

    def forward(self, input: Tensor) -> Tensor:
        x = input if isinstance(input, Tensor) else Tensor._of(input)
        self._check_input_dim(x)
        momentum = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats:
            if x.numel() // max(x.shape[1], 1) <= 1:  # refused before counting the batch (torch counts it first)
                raise ValueError(f"Expected more than 1 value per channel when training, got input size {x.shape}")
            self.num_batches_tracked.data[...] += 1
            if self.momentum is None:  # cumulative moving average: the k-th batch weighs 1/k
                momentum = 1.0 / float(self.num_batches_tracked.data)
        # batch statistics in training, and in evaluation too when no running statistics are kept
        use_batch_stats = self.training or self.running_mean is None
        keep = not self.training or self.track_running_stats
        return batch_norm(x, self.running_mean if keep else None, self.running_var if keep else None,
                          self.weight, self.bias, use_batch_stats, momentum, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, affine={self.affine}, "
                f"bias={self.bias is not None}, track_running_stats={self.track_running_stats}")


class BatchNorm1d(_BatchNorm):
    """Batch norm over (N, C) or (N, C, L): statistics per channel over N (and L), as torch.nn.BatchNorm1d."""

    def _check_input_dim(self, x: Tensor) -> None:
        if x.ndim not in (2, 3):
            raise ValueError(f"expected 2D or 3D input (got {x.ndim}D input)")


class BatchNorm2d(_BatchNorm):
    """Batch norm over (N, C, H, W): statistics per channel over N, H and W, as torch.nn.BatchNorm2d."""

    def _check_input_dim(self, x: Tensor) -> None:
        if x.ndim != 4:
            raise ValueError(f"expected 4D input (got {x.ndim}D input)")
