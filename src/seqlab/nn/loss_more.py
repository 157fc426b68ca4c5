"""More loss modules with torch.nn's names and constructor arguments: ``nn.L1Loss()(pred, y)``.

Each holds its options and calls the function of the same name in `seqlab.functional` (see
`seqlab.functional_losses`). torch's deprecated `size_average` / `reduce` are taken where torch takes them
and override `reduction`, with torch's warning. A class `weight` is a buffer, under torch's name. The
repr follows seqlab's losses: the reduction is shown when it is not 'mean' (torch shows nothing).
"""
from __future__ import annotations

from seqlab import functional as F
from seqlab.functional_losses import REDUCTIONS, check_reduction, legacy_reduction
from seqlab.nn.loss import _Loss
from seqlab.nn.module import Module

__all__ = ["L1Loss", "SmoothL1Loss", "HuberLoss", "BCELoss", "KLDivLoss", "PoissonNLLLoss", "GaussianNLLLoss",
           "MarginRankingLoss", "HingeEmbeddingLoss", "CosineEmbeddingLoss", "TripletMarginLoss", "SoftMarginLoss",
           "MultiLabelSoftMarginLoss"]


class _LegacyLoss(_Loss):
    """A loss whose constructor takes torch's deprecated `size_average` and `reduce` before `reduction`."""

    reductions = REDUCTIONS

    def __init__(self, size_average=None, reduce=None, reduction: str = "mean") -> None:
        Module.__init__(self)  # not _Loss's: it checks `reduction` against the three reductions only
        self.reduction = check_reduction(legacy_reduction(size_average, reduce, reduction, stacklevel=4),
                                         self.reductions)


class L1Loss(_LegacyLoss):
    """`F.l1_loss`: mean (or sum) of |input − target|."""

    def forward(self, input, target):  # noqa: A002 (torch's names)
        return F.l1_loss(input, target, reduction=self.reduction)


class SmoothL1Loss(_LegacyLoss):
    """`F.smooth_l1_loss`: quadratic below `beta`, linear above."""

    def __init__(self, size_average=None, reduce=None, reduction: str = "mean", beta: float = 1.0) -> None:
        super().__init__(size_average, reduce, reduction)
        if beta < 0:
            raise ValueError(f"smooth_l1_loss does not support negative values for beta, got {beta}")
        self.beta = beta

    def forward(self, input, target):  # noqa: A002
        return F.smooth_l1_loss(input, target, reduction=self.reduction, beta=self.beta)


class HuberLoss(_Loss):
    """`F.huber_loss`: quadratic below `delta`, delta-scaled linear above."""

    def __init__(self, reduction: str = "mean", delta: float = 1.0) -> None:
        super().__init__(reduction)
        if delta <= 0:
            raise ValueError(f"huber_loss does not support non-positive values for delta, got {delta}")
        self.delta = delta

    def forward(self, input, target):  # noqa: A002
        return F.huber_loss(input, target, reduction=self.reduction, delta=self.delta)


class BCELoss(_LegacyLoss):
    """`F.binary_cross_entropy` on probabilities (after a sigmoid); `BCEWithLogitsLoss` takes logits, stabler."""

    def __init__(self, weight=None, size_average=None, reduce=None, reduction: str = "mean") -> None:
        super().__init__(size_average, reduce, reduction)
        self._weight_buffer("weight", weight)

    def forward(self, input, target):  # noqa: A002
        return F.binary_cross_entropy(input, target, weight=self.weight, reduction=self.reduction)


class KLDivLoss(_LegacyLoss):
    """`F.kl_div`: input log-probabilities, target probabilities (or log-probabilities with `log_target`);
    reduction='batchmean' is the KL divergence itself."""

    reductions = ("mean", "batchmean", "sum", "none")

    def __init__(self, size_average=None, reduce=None, reduction: str = "mean", log_target: bool = False) -> None:
        super().__init__(size_average, reduce, reduction)
        self.log_target = log_target

    def forward(self, input, target):  # noqa: A002
        return F.kl_div(input, target, reduction=self.reduction, log_target=self.log_target)


class PoissonNLLLoss(_LegacyLoss):
    """`F.poisson_nll_loss`: counts against a predicted rate (its log with `log_input`)."""

    def __init__(self, log_input: bool = True, full: bool = False, size_average=None, eps: float = 1e-8,
                 reduce=None, reduction: str = "mean") -> None:
        super().__init__(size_average, reduce, reduction)
        self.log_input, self.full, self.eps = log_input, full, eps

    def forward(self, log_input, target):
        return F.poisson_nll_loss(log_input, target, log_input=self.log_input, full=self.full, eps=self.eps,
                                  reduction=self.reduction)


class GaussianNLLLoss(_Loss):
    """`F.gaussian_nll_loss`: called with (input, target, var)."""

    def __init__(self, *, full: bool = False, eps: float = 1e-6, reduction: str = "mean") -> None:
        super().__init__(reduction)
        self.full, self.eps = full, eps

    def forward(self, input, target, var):  # noqa: A002
        return F.gaussian_nll_loss(input, target, var, full=self.full, eps=self.eps, reduction=self.reduction)


class _MarginLoss(_LegacyLoss):
    def __init__(self, margin: float = 0.0, size_average=None, reduce=None, reduction: str = "mean") -> None:
        super().__init__(size_average, reduce, reduction)
        self.margin = margin


class MarginRankingLoss(_MarginLoss):
    """`F.margin_ranking_loss`: called with (input1, input2, target), target ±1."""

    def forward(self, input1, input2, target):
        return F.margin_ranking_loss(input1, input2, target, margin=self.margin, reduction=self.reduction)


class HingeEmbeddingLoss(_MarginLoss):
    """`F.hinge_embedding_loss`: input (a distance) against target ±1."""

    def __init__(self, margin: float = 1.0, size_average=None, reduce=None, reduction: str = "mean") -> None:
        super().__init__(margin, size_average, reduce, reduction)

    def forward(self, input, target):  # noqa: A002
        return F.hinge_embedding_loss(input, target, margin=self.margin, reduction=self.reduction)


class CosineEmbeddingLoss(_MarginLoss):
    """`F.cosine_embedding_loss`: called with (input1, input2, target), target ±1."""

    def forward(self, input1, input2, target):
        return F.cosine_embedding_loss(input1, input2, target, margin=self.margin, reduction=self.reduction)


class TripletMarginLoss(_MarginLoss):
    """`F.triplet_margin_loss`: called with (anchor, positive, negative)."""

    def __init__(self, margin: float = 1.0, p: float = 2.0, eps: float = 1e-6, swap: bool = False,
                 size_average=None, reduce=None, reduction: str = "mean") -> None:
        super().__init__(margin, size_average, reduce, reduction)
        if margin <= 0:
            raise ValueError(f"TripletMarginLoss: margin must be greater than 0, got {margin}")
        self.p, self.eps, self.swap = p, eps, swap

    def forward(self, anchor, positive, negative):
        return F.triplet_margin_loss(anchor, positive, negative, margin=self.margin, p=self.p, eps=self.eps,
                                     swap=self.swap, reduction=self.reduction)


class SoftMarginLoss(_LegacyLoss):
    """`F.soft_margin_loss`: the logistic loss log(1 + e^(−y·x)) for targets ±1."""

    def forward(self, input, target):  # noqa: A002
        return F.soft_margin_loss(input, target, reduction=self.reduction)


class MultiLabelSoftMarginLoss(_LegacyLoss):
    """`F.multilabel_soft_margin_loss`: (N, C) logits against (N, C) 0/1 labels, averaged over the classes."""

    def __init__(self, weight=None, size_average=None, reduce=None, reduction: str = "mean") -> None:
        super().__init__(size_average, reduce, reduction)
        self._weight_buffer("weight", weight)

    def forward(self, input, target):  # noqa: A002
        return F.multilabel_soft_margin_loss(input, target, weight=self.weight, reduction=self.reduction)
