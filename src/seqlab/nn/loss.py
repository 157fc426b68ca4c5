"""Loss modules with torch.nn's names and arguments: ``criterion = nn.CrossEntropyLoss(); loss = criterion(logits, y)``.

Each holds its options and calls the function of the same name in
`seqlab.functional`; a class `weight` (and BCE's `pos_weight`) is a buffer,
so it moves with `.to(device)` and sits in the state dict under torch's name.
"""
from __future__ import annotations

from seqlab import functional as F
from seqlab.functional import _no_reduction_string
from seqlab.functional_losses import legacy_reduction
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
    """`F.cross_entropy`: logits (N, C) or (N, C, d...) against class indices or class probabilities.
    torch's deprecated `size_average` / `reduce` (positional slots 2 and 4, as torch's) override `reduction`,
    with torch's warning."""

    def __init__(self, weight=None, size_average=None, ignore_index: int = -100, reduce=None,
                 reduction: str = "mean", label_smoothing: float = 0.0) -> None:
        _no_reduction_string("CrossEntropyLoss", size_average, reduce)
        super().__init__(legacy_reduction(size_average, reduce, reduction))
        if not 0.0 <= label_smoothing <= 1.0:
            raise ValueError(f"label_smoothing must be in [0, 1], got {label_smoothing}")
        self._weight_buffer("weight", weight)
        self.ignore_index, self.label_smoothing = ignore_index, label_smoothing

    def forward(self, input, target):
        return F.cross_entropy(input, target, self.weight, ignore_index=self.ignore_index,
                               reduction=self.reduction, label_smoothing=self.label_smoothing)


class NLLLoss(_Loss):
    """`F.nll_loss`: log-probabilities (N, C) or (N, C, d...) against class indices. torch's deprecated
    `size_average` / `reduce` (positional slots 2 and 4) override `reduction`, with torch's warning."""

    def __init__(self, weight=None, size_average=None, ignore_index: int = -100, reduce=None,
                 reduction: str = "mean") -> None:
        _no_reduction_string("NLLLoss", size_average, reduce)
        super().__init__(legacy_reduction(size_average, reduce, reduction))
        self._weight_buffer("weight", weight)
        self.ignore_index = ignore_index

    def forward(self, input, target):
        return F.nll_loss(input, target, self.weight, ignore_index=self.ignore_index, reduction=self.reduction)


class MSELoss(_Loss):
    """`F.mse_loss`: mean (or sum) of squared differences. torch's deprecated `size_average` / `reduce`
    override `reduction`, with torch's warning."""

    def __init__(self, size_average=None, reduce=None, reduction: str = "mean") -> None:
        _no_reduction_string("MSELoss", size_average, reduce)
        super().__init__(legacy_reduction(size_average, reduce, reduction))

    def forward(self, input, target):  # noqa: A002 (torch's names)
        return F.mse_loss(input, target, reduction=self.reduction)


class BCEWithLogitsLoss(_Loss):
    """`F.binary_cross_entropy_with_logits`: a sigmoid and binary cross-entropy in one stable step.

    torch's arguments and order: `weight` (broadcast to the input, scaling each term) and `pos_weight` are
    buffers under torch's names (absent from the state dict when None, as torch's); the deprecated
    `size_average` / `reduce` override `reduction`, with torch's warning."""

    def __init__(self, weight=None, size_average=None, reduce=None, reduction: str = "mean",
                 pos_weight=None) -> None:
        if isinstance(weight, str):
            raise TypeError(f"BCEWithLogitsLoss: weight must be a tensor, got the string {weight!r}; torch's order "
                            f"is (weight, size_average, reduce, reduction, pos_weight): pass reduction={weight!r} "
                            f"by keyword")
        _no_reduction_string("BCEWithLogitsLoss", size_average, reduce)
        super().__init__(legacy_reduction(size_average, reduce, reduction))
        self._weight_buffer("weight", weight)
        self._weight_buffer("pos_weight", pos_weight)

    def forward(self, input, target):  # noqa: A002
        return F.binary_cross_entropy_with_logits(input, target, self.weight, reduction=self.reduction,
                                                  pos_weight=self.pos_weight)
