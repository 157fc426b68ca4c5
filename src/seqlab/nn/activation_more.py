"""More activation modules, with torch.nn's names, constructor arguments and reprs (2.13's).

Each calls the function of the same name in `seqlab.functional` (see `seqlab.functional_activations`).
`inplace` is accepted for torch compatibility, kept for the repr, and ignored: a new tensor is returned.
"""
from __future__ import annotations

import warnings

from seqlab import creation
from seqlab import functional as F
from seqlab.nn import init as _init
from seqlab.nn.module import Module, Parameter, takes_device

__all__ = ["ELU", "SELU", "CELU", "Softplus", "Softsign", "Hardtanh", "ReLU6", "Hardsigmoid", "Hardswish", "Mish",
           "LogSigmoid", "Softmin", "GLU", "Tanhshrink", "Softshrink", "Hardshrink", "PReLU", "RReLU", "Threshold",
           "Softmax2d"]


def _inplace(inplace: bool) -> str:
    return ", inplace=True" if inplace else ""


class ELU(Module):
    def __init__(self, alpha: float = 1.0, inplace: bool = False) -> None:
        super().__init__()
        self.alpha, self.inplace = alpha, inplace

    def forward(self, input):  # noqa: A002 (torch's name)
        return F.elu(input, self.alpha)

    def extra_repr(self) -> str:
        return f"alpha={self.alpha}{_inplace(self.inplace)}"


class CELU(ELU):
    def forward(self, input):  # noqa: A002
        return F.celu(input, self.alpha)


class SELU(Module):
    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def forward(self, input):  # noqa: A002
        return F.selu(input)

    def extra_repr(self) -> str:
        return "inplace=True" if self.inplace else ""


class Softplus(Module):
    def __init__(self, beta: float = 1.0, threshold: float = 20.0) -> None:
        super().__init__()
        self.beta, self.threshold = beta, threshold

    def forward(self, input):  # noqa: A002
        return F.softplus(input, self.beta, self.threshold)

    def extra_repr(self) -> str:
        return f"beta={self.beta}, threshold={self.threshold}"


class Hardtanh(Module):
    """x clamped to [min_val, max_val]; `min_value` / `max_value` are torch's deprecated names for them."""

    def __init__(self, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False,
                 min_value: float | None = None, max_value: float | None = None) -> None:
        super().__init__()
        if min_value is not None:
            warnings.warn("keyword argument `min_value` is deprecated and renamed to `min_val`", FutureWarning,
                          stacklevel=2)
            min_val = min_value
        if max_value is not None:
            warnings.warn("keyword argument `max_value` is deprecated and renamed to `max_val`", FutureWarning,
                          stacklevel=2)
            max_val = max_value
        if max_val <= min_val:
            raise ValueError(f"Hardtanh needs max_val > min_val, got min_val={min_val} and max_val={max_val}")
        self.min_val, self.max_val, self.inplace = min_val, max_val, inplace

    def forward(self, input):  # noqa: A002
        return F.hardtanh(input, self.min_val, self.max_val)

    def extra_repr(self) -> str:
        return f"min_val={self.min_val}, max_val={self.max_val}{_inplace(self.inplace)}"


class Threshold(Module):
    """x where x > threshold, else `value` (`F.threshold`)."""

    def __init__(self, threshold: float, value: float, inplace: bool = False) -> None:
        super().__init__()
        self.threshold, self.value, self.inplace = threshold, value, inplace

    def forward(self, input):  # noqa: A002
        return F.threshold(input, self.threshold, self.value)

    def extra_repr(self) -> str:
        return f"threshold={self.threshold}, value={self.value}{_inplace(self.inplace)}"


class Softmax2d(Module):
    """The softmax over the channels at each position of (N, C, H, W) or (C, H, W): dim −3."""

    def forward(self, input):  # noqa: A002
        if input.ndim not in (3, 4):
            raise ValueError(f"Softmax2d: expected input to be 3D or 4D, got {input.ndim}D instead")
        return F.softmax(input, -3)


class ReLU6(Hardtanh):
    def __init__(self, inplace: bool = False) -> None:
        super().__init__(0.0, 6.0, inplace)

    def extra_repr(self) -> str:
        return "inplace=True" if self.inplace else ""


class _Stateless(Module):
    """An activation with no options but torch's `inplace`, which its repr does not show (as torch's)."""

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace


class Hardsigmoid(_Stateless):
    def forward(self, input):  # noqa: A002
        return F.hardsigmoid(input)


class Hardswish(_Stateless):
    def forward(self, input):  # noqa: A002
        return F.hardswish(input)


class Mish(_Stateless):
    def forward(self, input):  # noqa: A002
        return F.mish(input)


class LogSigmoid(Module):
    def forward(self, input):  # noqa: A002
        return F.logsigmoid(input)


class Softsign(Module):
    def forward(self, input):  # noqa: A002
        return F.softsign(input)


class Tanhshrink(Module):
    def forward(self, input):  # noqa: A002
        return F.tanhshrink(input)


class Softmin(Module):
    """softmax(−x) along `dim` (torch's default None is its deprecated implicit choice, with its warning)."""

    def __init__(self, dim: int | None = None) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, input):  # noqa: A002
        return F.softmin(input, self.dim, _stacklevel=5)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class GLU(Module):
    def __init__(self, dim: int = -1) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, input):  # noqa: A002
        return F.glu(input, self.dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class Softshrink(Module):
    def __init__(self, lambd: float = 0.5) -> None:
        super().__init__()
        self.lambd = lambd

    def forward(self, input):  # noqa: A002
        return F.softshrink(input, self.lambd)

    def extra_repr(self) -> str:
        return str(self.lambd)


class Hardshrink(Softshrink):
    def forward(self, input):  # noqa: A002
        return F.hardshrink(input, self.lambd)


class RReLU(Module):
    """Leaky ReLU with a random slope in U(lower, upper) per negative element in train(), (lower + upper) / 2
    in eval() (`F.rrelu`)."""

    def __init__(self, lower: float = 1.0 / 8, upper: float = 1.0 / 3, inplace: bool = False) -> None:
        super().__init__()
        self.lower, self.upper, self.inplace = lower, upper, inplace

    def forward(self, input):  # noqa: A002
        return F.rrelu(input, self.lower, self.upper, self.training)

    def extra_repr(self) -> str:
        return f"lower={self.lower}, upper={self.upper}{_inplace(self.inplace)}"


@takes_device
class PReLU(Module):
    """Leaky ReLU with learned slopes: `weight` (num_parameters,), one per channel (dim 1) or one shared,
    filled with `init` (torch's parameter name and default 0.25)."""

    def __init__(self, num_parameters: int = 1, init: float = 0.25, dtype=None) -> None:
        super().__init__()
        if num_parameters < 1:
            raise ValueError(f"PReLU needs num_parameters >= 1, got {num_parameters}")
        self.num_parameters, self.init = num_parameters, init
        self.weight = Parameter(creation.zeros(num_parameters, dtype=dtype))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        _init.constant_(self.weight, self.init)

    def forward(self, input):  # noqa: A002
        return F.prelu(input, self.weight)

    def extra_repr(self) -> str:
        return f"num_parameters={self.num_parameters}"
