"""Small layers torch users reach for: Unflatten, Bilinear, distances, padding and channel dropout.

Names, constructor arguments, parameter names and reprs are torch.nn's (2.13), so torch state dicts load.
The functions behind them with torch.nn.functional's names (`bilinear`, `dropout1d`, `dropout2d`,
`alpha_dropout`, `feature_alpha_dropout`) live here too, and `seqlab.functional` re-exports them.
"""
from __future__ import annotations

import math
import warnings

import numpy as np

from seqlab import creation
from seqlab import functional as F
from seqlab.autograd.ops.reduce import normalize_dim
from seqlab.autograd.tensor import Tensor
from seqlab.backend import xp_of
from seqlab.functional_activations import SELU_ALPHA, SELU_SCALE
from seqlab.nn import init
from seqlab.nn.module import Module, Parameter, takes_device

__all__ = ["bilinear", "dropout1d", "dropout2d", "alpha_dropout", "feature_alpha_dropout", "Unflatten",
           "Bilinear", "CosineSimilarity", "PairwiseDistance", "ConstantPad1d", "ConstantPad2d", "ConstantPad3d",
           "ZeroPad1d", "ZeroPad2d", "ZeroPad3d", "ReflectionPad1d", "ReflectionPad2d", "ReplicationPad1d",
           "ReplicationPad2d", "Dropout1d", "Dropout2d", "AlphaDropout", "FeatureAlphaDropout"]


# ---- functions ------------------------------------------------------------------------------------
def bilinear(input1: Tensor, input2: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """y_o = x1ᵀ W_o x2 + b_o for each output o: x1 (..., in1), x2 (..., in2), weight (out, in1, in2),
    bias (out,) -> (..., out). One matrix product with x1, then a product and a sum with x2."""
    x1, x2, w = F._t(input1), F._t(input2), F._t(weight)
    if w.ndim != 3:
        raise ValueError(f"bilinear(): weight must be (out_features, in1_features, in2_features), got shape {w.shape}")
    if x1.ndim == 0 or x1.shape[:-1] != x2.shape[:-1]:
        raise ValueError(f"bilinear(): input batch dimensions do not match: got {x1.shape} and {x2.shape}")
    out, in1, in2 = w.shape
    for k, (x, n) in enumerate(((x1, in1), (x2, in2)), 1):
        if x.shape[-1] != n:
            raise ValueError(f"bilinear(): input{k} size does not match weight size: got {x.shape[-1]} but "
                             f"expected {n} (input{k} shape {x.shape}, weight shape {w.shape})")
    h = x1 @ w.permute(1, 0, 2).reshape(in1, out * in2)                     # (..., out·in2)
    h = h.reshape(x1.shape[:-1] + (out, in2))                               # (..., out, in2)
    y = (h * x2.unsqueeze(-2)).sum(-1)                                      # (..., out)
    return y if bias is None else y + bias


def _check_p(p: float) -> None:
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def _feature_dropout(x: Tensor, p: float, training: bool, generator, alpha: bool) -> Tensor:
    """Dropout of whole channels: one keep/drop draw per (sample, channel) of an (N, C, ...) input, shared by
    the channel's positions (torch's feature_dropout); `alpha` then applies `alpha_dropout`'s affine map."""
    if x.ndim < 2:
        raise ValueError(f"Feature dropout requires at least 2 dimensions in the input, got shape {x.shape}")
    return _dropout_with_mask(x, p, training, generator, x.shape[:2] + (1,) * (x.ndim - 2), alpha)


def _dropout_with_mask(x: Tensor, p: float, training: bool, generator, mask_shape: tuple, alpha: bool) -> Tensor:
    if not training or p == 0.0 or x.numel() == 0:
        return x
    if p == 1.0:
        return x * 0.0
    keep = F._keep_mask(xp_of(x.data), mask_shape, p, x.dtype, generator)   # bool, True = keep
    if not alpha:
        return x * Tensor(keep.astype(x.dtype) / x.dtype.type(1 - p))
    # Klambauer et al. 2017, "Self-Normalizing Neural Networks", §Alpha-dropout: a dropped unit is set to
    # SELU's saturation value −λα instead of 0, then a·(·) + b restores mean 0 and variance 1
    saturation = SELU_ALPHA * SELU_SCALE
    a = 1.0 / math.sqrt((saturation ** 2 * p + 1) * (1 - p))
    kept = creation.where(keep, x, -saturation)                             # keep broadcasts to x
    return kept * a + a * saturation * p


def dropout1d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False,  # noqa: A002
              *, generator: np.random.Generator | None = None) -> Tensor:
    """Zero whole channels of an (N, C, L) or (C, L) input with probability p, scale the rest by 1/(1 − p)."""
    _check_p(p)
    x = F._t(input)
    if x.ndim not in (2, 3):
        raise ValueError(f"dropout1d: Expected 2D or 3D input, but received a {x.ndim}D input (shape {x.shape}). "
                         "Note that dropout1d exists to provide channel-wise dropout on inputs with 1 spatial "
                         "dimension, a channel dimension, and an optional batch dimension (i.e. 2D or 3D inputs).")
    if x.ndim == 2 and training and p > 0.0:  # (C, L): one sample
        return _feature_dropout(x.unsqueeze(0), p, training, generator, alpha=False).squeeze(0)
    return _feature_dropout(x, p, training, generator, alpha=False)


def warn_feature_rank(name: str, ndim: int, spatial: int) -> None:
    """torch's deprecation warning for channel-wise dropout over `spatial` dims on an input of another rank
    than spatial + 1 (unbatched) or spatial + 2; it points at the caller of `name`."""
    if ndim not in (spatial + 1, spatial + 2):
        warnings.warn(f"{name}: Received a {ndim}-D input to {name}, which is deprecated and will result in an "
                      "error in a future release. To retain the behavior and silence this warning, please use "
                      f"dropout instead. Note that {name} exists to provide channel-wise dropout on inputs with "
                      f"{spatial} spatial dimensions, a channel dimension, and an optional batch dimension (i.e. "
                      f"{spatial + 1}D or {spatial + 2}D inputs).", UserWarning, stacklevel=3)


def dropout2d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False,  # noqa: A002
              *, generator: np.random.Generator | None = None) -> Tensor:
    """Zero whole channels of an (N, C, H, W) input with probability p, scale the rest by 1/(1 − p).

    As torch, a 3-D input is read as (N, C, L) (dropout1d's behaviour), with torch's warning, and other
    ranks are dropped channel-wise along dim 1 with its deprecation warning."""
    _check_p(p)
    x = F._t(input)
    warn_feature_rank("dropout2d", x.ndim, 2)
    if x.ndim == 3:
        warnings.warn("dropout2d: Received a 3D input to dropout2d and assuming that channel-wise 1D dropout "
                      "behavior is desired - input is interpreted as shape (N, C, L), where C is the channel dim. "
                      "This behavior will change in a future release to interpret the input as one without a batch "
                      "dimension, i.e. shape (C, H, W). To maintain the 1D channel-wise dropout behavior, please "
                      "switch to using dropout1d instead.", UserWarning, stacklevel=2)
    return _feature_dropout(x, p, training, generator, alpha=False)


def alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False, inplace: bool = False,  # noqa: A002
                  *, generator: np.random.Generator | None = None) -> Tensor:
    """Dropout that keeps a SELU network's mean 0 and variance 1: each element is dropped with probability p
    to SELU's saturation value −λα ≈ −1.7581, then the whole is mapped by a·x + b (a, b from p).
    Note torch's default: `training=False`, the identity."""
    _check_p(p)
    x = F._t(input)
    return _dropout_with_mask(x, p, training, generator, x.shape, alpha=True)


def feature_alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False, inplace: bool = False,  # noqa: A002
                          *, generator: np.random.Generator | None = None) -> Tensor:
    """`alpha_dropout` of whole channels (dim 1), one draw per (sample, channel)."""
    _check_p(p)
    return _feature_dropout(F._t(input), p, training, generator, alpha=True)


# ---- modules --------------------------------------------------------------------------------------
class Unflatten(Module):
    """Dim `dim` of the input unfolded into `unflattened_size` (one entry may be −1): Flatten's inverse."""

    def __init__(self, dim: int, unflattened_size) -> None:
        super().__init__()
        if not isinstance(dim, int) or isinstance(dim, bool):
            raise TypeError(f"invalid dim {dim!r}: an int (named dims are not supported)")
        if not isinstance(unflattened_size, (tuple, list)):
            raise TypeError(f"unflattened_size must be tuple of ints, got {type(unflattened_size).__name__}")
        for i, s in enumerate(unflattened_size):
            if not isinstance(s, int) or isinstance(s, bool):
                raise TypeError(f"unflattened_size must be tuple of ints, but found element of type "
                                f"{type(s).__name__} at pos {i}")
        self.dim, self.unflattened_size = dim, unflattened_size

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        x = F._t(input)
        d = normalize_dim(self.dim, x.ndim)
        sizes = list(self.unflattened_size)
        known = int(np.prod([s for s in sizes if s != -1]))
        if sizes.count(-1) > 1 or (-1 in sizes and (known == 0 or x.shape[d] % known)) or \
                (-1 not in sizes and known != x.shape[d]):
            raise ValueError(f"unflatten: Provided sizes {sizes} don't multiply up to the size of dim {d} "
                             f"({x.shape[d]}) in the input tensor (shape {x.shape})")
        if -1 in sizes:
            sizes[sizes.index(-1)] = x.shape[d] // known
        return x.reshape(x.shape[:d] + tuple(sizes) + x.shape[d + 1:])

    def extra_repr(self) -> str:
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"


@takes_device
class Bilinear(Module):
    """y = x1ᵀ A x2 + b (`bilinear`): `weight` (out_features, in1_features, in2_features), `bias`
    (out_features,), both drawn from U(−1/√in1_features, 1/√in1_features), as torch."""

    def __init__(self, in1_features: int, in2_features: int, out_features: int, bias: bool = True,
                 dtype=None) -> None:
        super().__init__()
        if min(in1_features, in2_features, out_features) <= 0:
            raise ValueError(f"Bilinear needs positive sizes, got in1_features={in1_features}, "
                             f"in2_features={in2_features}, out_features={out_features}")
        self.in1_features, self.in2_features, self.out_features = in1_features, in2_features, out_features
        self.weight = Parameter(creation.zeros(out_features, in1_features, in2_features, dtype=dtype))
        if bias:
            self.bias = Parameter(creation.zeros(out_features, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        bound = 1 / math.sqrt(self.in1_features)
        init.uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input1: Tensor, input2: Tensor) -> Tensor:
        return bilinear(input1, input2, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
                f"out_features={self.out_features}, bias={self.bias is not None}")


class CosineSimilarity(Module):
    """`F.cosine_similarity(x1, x2, dim, eps)`."""

    def __init__(self, dim: int = 1, eps: float = 1e-8) -> None:
        super().__init__()
        self.dim, self.eps = dim, eps

    def forward(self, x1: Tensor, x2: Tensor) -> Tensor:
        return F.cosine_similarity(x1, x2, self.dim, self.eps)


class PairwiseDistance(Module):
    """`F.pairwise_distance(x1, x2, p, eps, keepdim)`: ‖x1 − x2 + eps‖_p along the last dim."""

    def __init__(self, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False) -> None:
        super().__init__()
        self.norm, self.eps, self.keepdim = p, eps, keepdim  # torch's attribute name for p: `norm`

    def forward(self, x1: Tensor, x2: Tensor) -> Tensor:
        return F.pairwise_distance(x1, x2, self.norm, self.eps, self.keepdim)


# ---- padding: `F.pad` with a fixed padding -----------------------------------------------------------
class _PadNd(Module):
    """Pads the last `dims` dims by `padding`: an int for every side, or (left, right, top, bottom, ...)."""

    dims = 1
    mode = "constant"

    def __init__(self, padding) -> None:
        super().__init__()
        self.padding = (padding,) * (2 * self.dims) if isinstance(padding, int) else tuple(padding)

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.pad(input, self.padding, self.mode)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class _ConstantPadNd(_PadNd):
    def __init__(self, padding, value: float) -> None:
        super().__init__(padding)
        self.value = value

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.pad(input, self.padding, "constant", self.value)

    def extra_repr(self) -> str:
        return f"padding={self.padding}, value={self.value}"


class ConstantPad1d(_ConstantPadNd):
    """Pads the last dim with `value`: (N, C, L) -> (N, C, L + left + right)."""


class ConstantPad2d(_ConstantPadNd):
    """Pads the last two dims with `value`; padding (left, right, top, bottom)."""

    dims = 2


class ConstantPad3d(_ConstantPadNd):
    """Pads the last three dims with `value`; padding (left, right, top, bottom, front, back)."""

    dims = 3


class ZeroPad1d(ConstantPad1d):
    def __init__(self, padding) -> None:
        super().__init__(padding, 0.0)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class ZeroPad2d(ConstantPad2d):
    def __init__(self, padding) -> None:
        super().__init__(padding, 0.0)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class ZeroPad3d(ConstantPad3d):
    def __init__(self, padding) -> None:
        super().__init__(padding, 0.0)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class ReflectionPad1d(_PadNd):
    """Mirrors the last dim about its edges (the edge itself not repeated): (N, C, L) or (C, L)."""

    mode = "reflect"


class ReflectionPad2d(_PadNd):
    """Mirrors the last two dims about their edges; padding (left, right, top, bottom)."""

    dims, mode = 2, "reflect"


class ReplicationPad1d(_PadNd):
    """Repeats the edge values of the last dim: (N, C, L) or (C, L)."""

    mode = "replicate"


class ReplicationPad2d(_PadNd):
    """Repeats the edge values of the last two dims; padding (left, right, top, bottom)."""

    dims, mode = 2, "replicate"


# ---- channel dropout ----------------------------------------------------------------------------
class _DropoutNd(Module):
    """`inplace` is accepted for torch compatibility (and its repr) and ignored."""

    def __init__(self, p: float = 0.5, inplace: bool = False) -> None:
        super().__init__()
        _check_p(p)
        self.p, self.inplace = p, inplace

    def extra_repr(self) -> str:
        return f"p={self.p}, inplace={self.inplace}"


class Dropout1d(_DropoutNd):
    """`dropout1d` in train() mode (whole channels of (N, C, L) or (C, L)); the identity in eval()."""

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return dropout1d(input, self.p, self.training)


class Dropout2d(_DropoutNd):
    """`dropout2d` in train() mode (whole channels of (N, C, H, W)); the identity in eval()."""

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return dropout2d(input, self.p, self.training)


class AlphaDropout(_DropoutNd):
    """`alpha_dropout` in train() mode (for SELU networks); the identity in eval()."""

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return alpha_dropout(input, self.p, self.training)


class FeatureAlphaDropout(_DropoutNd):
    """`feature_alpha_dropout` in train() mode; the identity in eval()."""

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return feature_alpha_dropout(input, self.p, self.training)
