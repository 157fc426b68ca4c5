"""Linear layers (the chapter's 7.1.1: y = W x + b)."""
from __future__ import annotations

import math

import numpy as np

from seqlab import functional as F
from seqlab import creation
from seqlab.autograd.tensor import Tensor
from seqlab.nn import init
from seqlab.nn.module import Module, Parameter, takes_device


@takes_device
class Linear(Module):
    """y = x Wᵀ + b; `weight` (out_features, in_features), `bias` (out_features,), as torch.

    x (..., in_features) -> (..., out_features).
    """

    def __init__(self, in_features: int, out_features: int, bias: bool = True, dtype=None):
        super().__init__()
        if in_features <= 0 or out_features <= 0:
            raise ValueError(f"Linear needs positive sizes, got in_features={in_features}, out_features={out_features}")
        self.in_features, self.out_features = in_features, out_features
        self.weight = Parameter(creation.zeros(out_features, in_features, dtype=dtype))
        if bias:
            self.bias = Parameter(creation.zeros(out_features, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        # torch: kaiming_uniform(a=√5) for W, U(−1/√fan_in, 1/√fan_in) for b
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            bound = 1 / math.sqrt(self.in_features)
            init.uniform_(self.bias, -bound, bound)

    def forward(self, x: Tensor) -> Tensor:
        if not hasattr(x, "shape") or not hasattr(x, "dtype"):
            raise TypeError(f"Linear expects a Tensor (or an array), got {type(x).__name__}")
        if np.dtype(x.dtype).kind != "f":  # torch refuses too; NumPy would promote ids to float64 silently
            raise TypeError(f"Linear expects floating-point input, got dtype {x.dtype} (token ids go through an "
                            f"Embedding first; else convert, e.g. x.float())")
        if x.ndim == 0 or x.shape[-1] != self.in_features:
            raise ValueError(f"x has shape {x.shape} but the layer expects last dim {self.in_features}")
        return F.linear(x, self.weight, self.bias)

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"


FUSE_FEED_FORWARD = True  # False: `feed_forward_in` runs three ops (benchmarks/engine_ab.py --switch fused-ff)


def feed_forward_in(x: Tensor, linear: Linear, activation, p: float = 0.0, training: bool = True) -> Tensor:
    """dropout(activation(linear(x)), p), a feed-forward block's first half. Where `activation` has a
    fused form (`F.fused_activation`: ReLU, the exact or the tanh GELU) and `linear` a bias, the bias,
    the activation and dropout are one op after the product (`F.linear_act_dropout`); else three."""
    name = F.fused_activation(activation) if FUSE_FEED_FORWARD else None
    if name is None or linear.bias is None:
        return F.dropout(activation(linear(x)), p, training)
    return F.linear_act_dropout(x, linear.weight, linear.bias, name, p, training)


class Identity(Module):
    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, x):
        return x


class Flatten(Module):
    """Dims start_dim .. end_dim as one (torch's defaults: all but the batch dim)."""

    def __init__(self, start_dim: int = 1, end_dim: int = -1):
        super().__init__()
        self.start_dim, self.end_dim = start_dim, end_dim

    def forward(self, x):
        return x.flatten(self.start_dim, self.end_dim)

    def extra_repr(self) -> str:
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"
