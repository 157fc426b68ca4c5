"""Dropout: active in train() mode, the identity in eval() mode."""
from __future__ import annotations

from seqlab import functional as F
from seqlab.nn.module import Module


class Dropout(Module):
    """Inverted dropout (see `F.dropout`); `inplace` is accepted for torch compatibility and ignored."""

    def __init__(self, p: float = 0.5, inplace: bool = False):
        super().__init__()
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"dropout probability must be in [0, 1], got {p}")
        self.p = p

    def forward(self, input):  # noqa: A002 (torch's name)
        return F.dropout(input, self.p, self.training)

    def extra_repr(self) -> str:
        return f"p={self.p}"
