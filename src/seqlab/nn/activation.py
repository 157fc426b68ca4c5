"""Activation modules (the chapter's 7.1.2)."""
from __future__ import annotations

from seqlab import functional as F
from seqlab.nn.module import Module


class ReLU(Module):
    def __init__(self, inplace: bool = False):  # `inplace` accepted for torch compatibility, ignored
        super().__init__()

    def forward(self, input):  # noqa: A002 (torch's name)
        return F.relu(input)


class GELU(Module):
    def __init__(self, approximate: str = "none"):
        super().__init__()
        self.approximate = approximate

    def forward(self, input):  # noqa: A002 (torch's name)
        return F.gelu(input, self.approximate)

    def extra_repr(self) -> str:
        return f"approximate={self.approximate!r}"


class Tanh(Module):
    def forward(self, input):  # noqa: A002 (torch's name)
        return F.tanh(input)


class Sigmoid(Module):
    def forward(self, input):  # noqa: A002 (torch's name)
        return F.sigmoid(input)


class SiLU(Module):
    def __init__(self, inplace: bool = False):
        super().__init__()
        self.inplace = inplace  # accepted for torch compatibility; a new tensor is returned

    def forward(self, input):  # noqa: A002 (torch's name)
        return F.silu(input)


class Softmax(Module):
    def __init__(self, dim: int = -1):
        super().__init__()
        self.dim = dim

    def forward(self, input):  # noqa: A002 (torch's name)
        return F.softmax(input, self.dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class LogSoftmax(Softmax):
    def forward(self, input):  # noqa: A002 (torch's name)
        return F.log_softmax(input, self.dim)


class LeakyReLU(Module):
    def __init__(self, negative_slope: float = 0.01, inplace: bool = False):  # `inplace` ignored, as ReLU's
        super().__init__()
        self.negative_slope = negative_slope

    def forward(self, input):  # noqa: A002 (torch's name)
        return F.leaky_relu(input, self.negative_slope)

    def extra_repr(self) -> str:
        return f"negative_slope={self.negative_slope}"
