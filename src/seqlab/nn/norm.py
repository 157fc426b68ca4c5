"""Normalisation layers."""
from __future__ import annotations

from seqlab import creation
from seqlab import functional as F
from seqlab.nn.module import Module, Parameter, takes_device


@takes_device
class LayerNorm(Module):
    """(x − mean) / √(var + eps) · weight + bias over the trailing `normalized_shape`, as torch.

    The chapter's listing computes (x − mean) / (std + eps) with no weight or
    bias; the two agree only approximately (see docs/chapter7.md).
    """

    def __init__(self, normalized_shape, eps: float = 1e-5, elementwise_affine: bool = True, bias: bool = True,
                 dtype=None):
        super().__init__()
        self.normalized_shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(creation.ones(self.normalized_shape, dtype=dtype))
            if bias:
                self.bias = Parameter(creation.zeros(self.normalized_shape, dtype=dtype))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)

    def forward(self, input):  # noqa: A002 (torch's name)
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:  # torch's, bias included
        return (f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}, "
                f"bias={self.bias is not None}")


@takes_device
class RMSNorm(Module):
    """x / √(mean(x²) + eps) · weight (T5's layer norm: no centring, no bias).

    `eps=None` (the default, as torch's) is the input dtype's machine epsilon
    (float32: 1.19e-7, float64: 2.2e-16); T5 passes its config's 1e-6.
    """

    def __init__(self, normalized_shape, eps: float | None = None, elementwise_affine: bool = True, dtype=None):
        super().__init__()
        self.normalized_shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
        self.eps, self.elementwise_affine = eps, elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(creation.ones(self.normalized_shape, dtype=dtype))
        else:
            self.register_parameter("weight", None)

    def forward(self, x):  # torch's RMSNorm names it x too
        return F.rms_norm(x, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self) -> str:
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"
