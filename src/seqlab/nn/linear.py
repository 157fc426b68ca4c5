"""Linear layers (the chapter's 7.1.1: y = W x + b)."""
from __future__ import annotations

import math

import numpy as np

from seqlab.errors import ShapeError
from seqlab import functional as F
from seqlab import backend, creation
from seqlab.autograd.tensor import Tensor
from seqlab.nn import init
from seqlab.nn.hooks import carries_hooks
from seqlab.nn.module import Module, Parameter, takes_device


@takes_device
class Linear(Module):
    """y = x Wᵀ + b; `weight` (out_features, in_features), `bias` (out_features,), as torch.

    x (..., in_features) -> (..., out_features).
    """

    def __init__(self, in_features: int, out_features: int, bias: bool = True, dtype=None):
        super().__init__()
        if in_features <= 0 or out_features <= 0:
            raise ValueError(f"Linear needs positive sizes, got in_features={in_features}, out_features={out_features}")
        self.in_features, self.out_features = in_features, out_features
        self.weight = Parameter(creation.zeros(out_features, in_features, dtype=dtype))
        if bias:
            self.bias = Parameter(creation.zeros(out_features, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        # torch: kaiming_uniform(a=√5) for W, U(−1/√fan_in, 1/√fan_in) for b
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            bound = 1 / math.sqrt(self.in_features)
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002 (torch's name)
        x = input
        if not hasattr(x, "shape") or not hasattr(x, "dtype"):
            raise TypeError(f"Linear expects a Tensor (or an array), got {type(x).__name__}")
        if np.dtype(x.dtype).kind != "f":  # torch refuses too; NumPy would promote ids to float64 silently
            raise TypeError(f"Linear expects floating-point input, got dtype {x.dtype} (token ids go through an "
                            f"Embedding first; else convert, e.g. x.float())")
        if x.ndim == 0 or x.shape[-1] != self.in_features:
            raise ShapeError(f"x has shape {x.shape} but the layer expects last dim {self.in_features}")
        return F.linear(x, self.weight, self.bias)

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"


@takes_device
class LazyLinear(Linear):
    """A Linear whose in_features is read from its first input (torch.nn.LazyLinear, d2l's layers).

    Until the first forward, `in_features` is 0 and `weight` and `bias` are
    placeholder Parameters holding no numbers (shape (0,)). The first forward
    sets in_features = x.shape[-1], gives those same Parameter objects their
    arrays, (out_features, in_features) and (out_features,), drawn as
    `Linear(in_features, out_features)` would draw them from seqlab's generator
    at that moment, and turns the module into a plain `Linear` (as torch: then
    `type(m) is nn.Linear`; a later input of another width is Linear's error).

    Since the Parameter objects stay the same, an optimizer built before the
    first forward updates the real weights (seqlab's optimizers read `p.data`
    at each step). Loading a state_dict into a layer not yet run takes the
    shapes from the checkpoint, as torch's; `nn.init` on a placeholder has
    nothing to fill yet (run one forward on a sample batch first, as d2l's `apply_init` does).
    """

    def __init__(self, out_features: int, bias: bool = True, dtype=None):
        Module.__init__(self)
        if out_features <= 0:
            raise ValueError(f"LazyLinear needs a positive out_features, got {out_features}")
        self.in_features, self.out_features = 0, out_features  # 0 until the first forward, as torch
        self.weight = Parameter(creation.zeros(0, dtype=dtype))
        if bias:
            self.bias = Parameter(creation.zeros(0, dtype=dtype))
        else:
            self.register_parameter("bias", None)

    def has_uninitialized_params(self) -> bool:
        return self.in_features == 0

    def reset_parameters(self) -> None:
        if not self.has_uninitialized_params():  # pragma: no cover - the layer is a Linear by then
            super().reset_parameters()

    def initialize_parameters(self, x) -> None:
        """Size `weight` and `bias` for x's last dim and draw them (torch's name; forward calls it)."""
        if not self.has_uninitialized_params():
            return
        if not hasattr(x, "shape") or len(x.shape) == 0 or x.shape[-1] == 0:
            raise ValueError(f"LazyLinear reads in_features from x's last dim, but x has shape "
                             f"{getattr(x, 'shape', None)}")
        self.in_features = int(x.shape[-1])
        xp = backend.xp_of(self.weight.data)
        self.weight.data = xp.zeros((self.out_features, self.in_features), dtype=self.weight.dtype)
        if self.bias is not None:
            self.bias.data = xp.zeros(self.out_features, dtype=self.bias.dtype)
        Linear.reset_parameters(self)
        self.__class__ = Linear

    def materialize_from_state_dict(self, state_dict, prefix: str = "") -> None:
        """Size `weight` and `bias` from `state_dict[prefix + "weight"]` (load_state_dict calls this; the values
        are copied in after). Without that key the layer stays lazy, and loading reports it missing."""
        w = state_dict.get(prefix + "weight")
        shape = tuple(getattr(w, "shape", ()))
        if len(shape) != 2 or shape[0] != self.out_features or shape[1] == 0:
            return  # load_state_dict then reports the mismatch by name
        self.initialize_parameters(np.empty((1, shape[1]), dtype=self.weight.dtype))

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002 (torch's name)
        if hasattr(input, "dtype") and np.dtype(input.dtype).kind == "f":  # else Linear.forward's type errors
            self.initialize_parameters(input)
        return Linear.forward(self, input)


FUSE_FEED_FORWARD = True  # False: `feed_forward_in` runs three ops (benchmarks/engine_ab.py --switch fused-ff)


def feed_forward_in(x: Tensor, linear: Linear, activation, p: float = 0.0, training: bool = True,
                    dropout: Module | None = None) -> Tensor:
    """dropout(activation(linear(x)), p), a feed-forward block's first half. Where `activation` has a
    fused form (`F.fused_activation`: ReLU, the exact or the tanh GELU) and `linear` a bias, the bias,
    the activation and dropout are one op after the product (`F.linear_act_dropout`); else three.
    `dropout`: the block's Dropout module, whose p and mode then apply. Where one of the modules carries
    a hook they are called one by one, so the hooks run as torch's (the same values and dropout draws)."""
    if dropout is not None:
        p, training = dropout.p, dropout.training
    name = F.fused_activation(activation) if FUSE_FEED_FORWARD else None
    if name is None or linear.bias is None or any(carries_hooks(m) for m in (linear, activation, dropout)):
        h = activation(linear(x))
        return dropout(h) if dropout is not None else F.dropout(h, p, training)
    return F.linear_act_dropout(x, linear.weight, linear.bias, name, p, training)


class Identity(Module):
    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, input):  # noqa: A002 (torch's name)
        return input


class Flatten(Module):
    """Dims start_dim .. end_dim as one (torch's defaults: all but the batch dim)."""

    def __init__(self, start_dim: int = 1, end_dim: int = -1):
        super().__init__()
        self.start_dim, self.end_dim = start_dim, end_dim

    def forward(self, input):  # noqa: A002 (torch's name)
        return input.flatten(self.start_dim, self.end_dim)

    def extra_repr(self) -> str:
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"
