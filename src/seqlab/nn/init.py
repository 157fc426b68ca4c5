"""Initialisers with torch.nn.init's names and formulas, drawing from seqlab's seeded generator."""
from __future__ import annotations

import math

import numpy as np

from seqlab import backend
from seqlab import random as _random
from seqlab.autograd.tensor import Tensor


def _fill(t: Tensor, values: np.ndarray) -> Tensor:
    t.data[...] = backend.to_device(values.astype(t.dtype), t.device)
    return t


def _gen(generator):
    return generator or _random.default_generator()


def fan_in_and_fan_out(t: Tensor) -> tuple[int, int]:
    """(fan_in, fan_out) of a weight of shape (out, in, *kernel): in · k and out · k, k the kernel's size."""
    if t.ndim < 2:
        raise ValueError(f"Fan in and fan out can not be computed for tensor with fewer than 2 dimensions "
                         f"(got shape {t.shape})")
    receptive = int(np.prod(t.shape[2:])) if t.ndim > 2 else 1
    return t.shape[1] * receptive, t.shape[0] * receptive


_calculate_fan_in_and_fan_out = fan_in_and_fan_out  # torch's private name, which init code calls


def uniform_(t: Tensor, a: float = 0.0, b: float = 1.0, generator=None) -> Tensor:
    return _fill(t, _gen(generator).uniform(a, b, t.shape))


def normal_(t: Tensor, mean: float = 0.0, std: float = 1.0, generator=None) -> Tensor:
    return _fill(t, _gen(generator).normal(mean, std, t.shape))


def trunc_normal_(t: Tensor, mean=0.0, std=1.0, a=-2.0, b=2.0, generator=None) -> Tensor:
    g = _gen(generator)
    vals = g.normal(mean, std, t.shape)
    bad = (vals < a) | (vals > b)
    while bad.any():
        vals[bad] = g.normal(mean, std, int(bad.sum()))
        bad = (vals < a) | (vals > b)
    return _fill(t, vals)


def constant_(t: Tensor, value: float) -> Tensor:
    t.data[...] = value
    return t


def zeros_(t: Tensor) -> Tensor:
    return constant_(t, 0.0)


def ones_(t: Tensor) -> Tensor:
    return constant_(t, 1.0)


def xavier_uniform_(t: Tensor, gain: float = 1.0, generator=None) -> Tensor:
    fan_in, fan_out = fan_in_and_fan_out(t)
    bound = gain * math.sqrt(6.0 / (fan_in + fan_out))
    return uniform_(t, -bound, bound, generator)


def xavier_normal_(t: Tensor, gain: float = 1.0, generator=None) -> Tensor:
    fan_in, fan_out = fan_in_and_fan_out(t)
    return normal_(t, 0.0, gain * math.sqrt(2.0 / (fan_in + fan_out)), generator)


def calculate_gain(nonlinearity: str, param: float | None = None) -> float:
    """torch.nn.init.calculate_gain: the gain that keeps activations' variance through `nonlinearity`."""
    if nonlinearity in ("linear", "conv1d", "conv2d", "conv3d", "sigmoid", "conv_transpose1d",
                        "conv_transpose2d", "conv_transpose3d"):
        return 1.0
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        slope = 0.01 if param is None else param
        return math.sqrt(2.0 / (1 + slope ** 2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"unsupported nonlinearity {nonlinearity!r}")


def _kaiming_fan(t: Tensor, mode: str) -> int:
    fan_in, fan_out = fan_in_and_fan_out(t)
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"mode must be 'fan_in' or 'fan_out', got {mode!r}")
    return fan_in if mode == "fan_in" else fan_out


def kaiming_uniform_(t: Tensor, a: float = 0.0, nonlinearity: str = "leaky_relu", generator=None,
                     mode: str = "fan_in") -> Tensor:
    """U(−b, b) with b = gain · √(3 / fan) (He et al. 2015), as torch (whose default a=0 gives gain √2)."""
    gain = calculate_gain(nonlinearity, a)
    bound = gain * math.sqrt(3.0 / _kaiming_fan(t, mode))
    return uniform_(t, -bound, bound, generator)


def kaiming_normal_(t: Tensor, a: float = 0.0, nonlinearity: str = "leaky_relu", generator=None,
                    mode: str = "fan_in") -> Tensor:
    gain = calculate_gain(nonlinearity, a)
    return normal_(t, 0.0, gain / math.sqrt(_kaiming_fan(t, mode)), generator)


def orthogonal_(t: Tensor, gain: float = 1.0, generator=None) -> Tensor:
    rows, cols = t.shape[0], int(np.prod(t.shape[1:]))
    flat = _gen(generator).normal(0.0, 1.0, (rows, cols))
    if rows < cols:
        flat = flat.T
    q, r = np.linalg.qr(flat)
    q *= np.sign(np.diag(r))
    if rows < cols:
        q = q.T
    return _fill(t, gain * q.reshape(t.shape))


def eye_(t: Tensor) -> Tensor:
    """The identity matrix (ones on the diagonal of a 2-d tensor, zeros elsewhere), as torch.nn.init.eye_:
    a Linear that starts by passing its input through."""
    if t.ndim != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    return _fill(t, np.eye(*t.shape))


def dirac_(t: Tensor, groups: int = 1) -> Tensor:
    """A convolution weight (out, in, *kernel) that starts as the identity, as torch.nn.init.dirac_: in each
    of `groups` blocks of out/groups output channels, channel d of the block reads input channel d at the
    kernel's centre (index k // 2 on each axis), for d < min(out/groups, in); zeros elsewhere."""
    if t.ndim not in (3, 4, 5):
        raise ValueError("Only tensors with 3, 4, or 5 dimensions are supported")
    if t.shape[0] % groups != 0:
        raise ValueError("dim 0 must be divisible by groups")
    per_group = t.shape[0] // groups
    d = np.arange(min(per_group, t.shape[1]))
    centre = tuple(k // 2 for k in t.shape[2:])
    values = np.zeros(t.shape)
    for g in range(groups):
        values[(g * per_group + d, d) + centre] = 1.0
    return _fill(t, values)
