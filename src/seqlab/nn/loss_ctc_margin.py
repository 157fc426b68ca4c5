"""Loss modules for `seqlab.functional_losses_more`, with torch.nn's names and constructor arguments:
``ctc = nn.CTCLoss(blank=0); loss = ctc(log_probs, targets, input_lengths, target_lengths)``.

Each holds its options and calls the function of the same name in `seqlab.functional`. torch's deprecated
`size_average` / `reduce` are taken where torch takes them and override `reduction`, with torch's warning;
MultiMarginLoss's class `weight` is a buffer under torch's name. The repr follows seqlab's losses: options
that differ from the defaults are shown (torch shows none).
"""
from __future__ import annotations

from seqlab import functional as F
from seqlab.nn.loss import _Loss
from seqlab.nn.loss_more import _LegacyLoss
from seqlab.nn.misc_layers import PairwiseDistance

__all__ = ["CTCLoss", "MultiMarginLoss", "MultiLabelMarginLoss", "TripletMarginWithDistanceLoss"]


class CTCLoss(_Loss):
    """`F.ctc_loss`: called with (log_probs (T, N, C), targets, input_lengths, target_lengths)."""

    def __init__(self, blank: int = 0, reduction: str = "mean", zero_infinity: bool = False) -> None:
        super().__init__(reduction)
        self.blank, self.zero_infinity = blank, zero_infinity

    def forward(self, log_probs, targets, input_lengths, target_lengths):
        return F.ctc_loss(log_probs, targets, input_lengths, target_lengths, self.blank, self.reduction,
                          self.zero_infinity)

    def extra_repr(self) -> str:
        parts = [f"blank={self.blank}"] if self.blank != 0 else []
        parts += [super().extra_repr()] if self.reduction != "mean" else []
        parts += ["zero_infinity=True"] if self.zero_infinity else []
        return ", ".join(parts)


class MultiMarginLoss(_LegacyLoss):
    """`F.multi_margin_loss`: scores (N, C) against class indices (N,), the multi-class hinge loss."""

    def __init__(self, p: int = 1, margin: float = 1.0, weight=None, size_average=None, reduce=None,
                 reduction: str = "mean") -> None:
        super().__init__(size_average, reduce, reduction)
        if p != 1 and p != 2:
            raise ValueError("only p == 1 and p == 2 supported")
        self._weight_buffer("weight", weight)
        if self.weight is not None and self.weight.ndim != 1:
            raise ValueError(f"MultiMarginLoss: expected weight to be None or 1D tensor, got {self.weight.ndim}D "
                             f"instead")
        self.p, self.margin = p, margin

    def forward(self, input, target):  # noqa: A002 (torch's names)
        return F.multi_margin_loss(input, target, p=self.p, margin=self.margin, weight=self.weight,
                                   reduction=self.reduction)


class MultiLabelMarginLoss(_LegacyLoss):
    """`F.multilabel_margin_loss`: scores (N, C) against (N, C) class lists ended by −1."""

    def forward(self, input, target):  # noqa: A002
        return F.multilabel_margin_loss(input, target, reduction=self.reduction)


class TripletMarginWithDistanceLoss(_Loss):
    """`F.triplet_margin_with_distance_loss`: called with (anchor, positive, negative). The default distance
    is an `nn.PairwiseDistance()` submodule, as torch's; a distance given as a Module is a submodule too."""

    def __init__(self, *, distance_function=None, margin: float = 1.0, swap: bool = False,
                 reduction: str = "mean") -> None:
        super().__init__(reduction)
        if margin <= 0:
            raise ValueError(f"TripletMarginWithDistanceLoss: expected margin to be greater than 0, got {margin} "
                             f"instead")
        self.distance_function = distance_function if distance_function is not None else PairwiseDistance()
        self.margin, self.swap = margin, swap

    def forward(self, anchor, positive, negative):
        return F.triplet_margin_with_distance_loss(anchor, positive, negative,
                                                   distance_function=self.distance_function, margin=self.margin,
                                                   swap=self.swap, reduction=self.reduction)
