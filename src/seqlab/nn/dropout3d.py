"""Channel dropout for volumes, as torch.nn.Dropout3d and F.dropout3d (Tompson et al. 2015, "Efficient Object
Localization Using Convolutional Networks", §3.2: neighbouring positions of a feature map are correlated, so
dropping single elements barely regularises; dropping whole channels does).

Dropout1d and Dropout2d live in misc_layers.py; this file adds the 3-D member with their mask drawing.
"""
from __future__ import annotations

import numpy as np

from seqlab import functional as F
from seqlab.autograd.tensor import Tensor
from seqlab.nn.misc_layers import _check_p, _DropoutNd, _feature_dropout, warn_feature_rank

__all__ = ["dropout3d", "Dropout3d"]


def dropout3d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False,  # noqa: A002
              *, generator: np.random.Generator | None = None) -> Tensor:
    """Zero whole channels of an (N, C, D, H, W) or unbatched (C, D, H, W) input with probability p, scale the
    rest by 1/(1 − p): one draw per (sample, channel), shared by its D·H·W positions.

    As torch, any input that is not 5-D is taken as one unbatched sample (its dim 0 the channels), and a rank
    other than 4 or 5 gets torch's deprecation warning. `inplace` is accepted and ignored: use the result."""
    _check_p(p)
    x = F._t(input)
    warn_feature_rank("dropout3d", x.ndim, 3)
    if x.ndim == 5:
        return _feature_dropout(x, p, training, generator, alpha=False)
    return _feature_dropout(x.unsqueeze(0), p, training, generator, alpha=False).squeeze(0)  # a batch of one


class Dropout3d(_DropoutNd):
    """`dropout3d` in train() mode (whole channels of (N, C, D, H, W) or (C, D, H, W)); the identity in eval()."""

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return dropout3d(input, self.p, self.training)
