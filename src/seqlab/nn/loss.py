"""Loss modules with torch.nn's names and arguments: ``criterion = nn.CrossEntropyLoss(); loss = criterion(logits, y)``.

Each holds its options and calls the function of the same name in
`seqlab.functional`; a class `weight` (and BCE's `pos_weight`) is a buffer,
so it moves with `.to(device)` and sits in the state dict under torch's name.
"""
from __future__ import annotations

from seqlab import functional as F
from seqlab.nn.module import Module


class _Loss(Module):
    def __init__(self, reduction: str = "mean") -> None:
        super().__init__()
        if reduction not in ("mean", "sum", "none"):
            raise ValueError(f"reduction must be 'mean', 'sum' or 'none', got {reduction!r}")
        self.reduction = reduction

    def _weight_buffer(self, name: str, value) -> None:
        self.register_buffer(name, None if value is None else F._t(value))

    def extra_repr(self) -> str:
        return "" if self.reduction == "mean" else f"reduction={self.reduction!r}"


class CrossEntropyLoss(_Loss):
    """`F.cross_entropy`: logits (N, C) or (N, C, d...) against class indices or class probabilities."""

    def __init__(self, weight=None, ignore_index: int = -100, reduction: str = "mean",
                 label_smoothing: float = 0.0) -> None:
        super().__init__(reduction)
        if not 0.0 <= label_smoothing <= 1.0:
            raise ValueError(f"label_smoothing must be in [0, 1], got {label_smoothing}")
        self._weight_buffer("weight", weight)
        self.ignore_index, self.label_smoothing = ignore_index, label_smoothing

    def forward(self, input, target):
        return F.cross_entropy(input, target, self.weight, ignore_index=self.ignore_index,
                               reduction=self.reduction, label_smoothing=self.label_smoothing)


class NLLLoss(_Loss):
    """`F.nll_loss`: log-probabilities (N, C) or (N, C, d...) against class indices."""

    def __init__(self, weight=None, ignore_index: int = -100, reduction: str = "mean") -> None:
        super().__init__(reduction)
        self._weight_buffer("weight", weight)
        self.ignore_index = ignore_index

    def forward(self, input, target):
        return F.nll_loss(input, target, self.weight, ignore_index=self.ignore_index, reduction=self.reduction)


class MSELoss(_Loss):
    """`F.mse_loss`: mean (or sum) of squared differences."""

    def forward(self, input, target):
        return F.mse_loss(input, target, reduction=self.reduction)


class BCEWithLogitsLoss(_Loss):
    """`F.binary_cross_entropy_with_logits`: a sigmoid and binary cross-entropy in one stable step."""

    def __init__(self, reduction: str = "mean", pos_weight=None) -> None:
        super().__init__(reduction)
        self._weight_buffer("pos_weight", pos_weight)

    def forward(self, input, target):
        return F.binary_cross_entropy_with_logits(input, target, reduction=self.reduction,
                                                  pos_weight=self.pos_weight)
