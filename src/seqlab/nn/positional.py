"""Positional information for attention, which by itself ignores order (the chapter's 7.4.3, Q4).

Four ways, one interface, so a model picks one with ``positional="..."``:

- ``sinusoidal``: PE(pos, 2i) = sin(pos / 10000^{2i/d}), PE(pos, 2i+1) = cos(pos / 10000^{2i/d}),
  added to the token embeddings (Vaswani et al., 2017, §3.5).
- ``learned``: a learned vector per absolute position, added (BERT, GPT-2).
- ``rope``: queries and keys rotated by a position-dependent angle, so q·k
  depends only on the offset between positions (Su et al., 2021, RoFormer).
- ``alibi``: a per-head penalty −m_h·|i − j| added to the attention scores
  (Press et al., 2022, "Train short, test long").
- ``none``: no position at all: the encoder is then permutation-equivariant.

Every module has ``embed(x, offset)`` (add to the embeddings; the identity
for rope / alibi / none) and ``attn_kwargs(L, S, offset)`` (the extra
arguments for self-attention: ``rotary`` or ``position_bias``; empty for the
additive kinds).
"""
from __future__ import annotations

import math

import numpy as np

from seqlab import backend, creation
from seqlab import functional as F
from seqlab.autograd.tensor import Tensor
from seqlab.nn import init
from seqlab.nn.module import Module, Parameter

POSITIONAL_KINDS = ("sinusoidal", "learned", "rope", "alibi", "none")


def sinusoidal_table(max_len: int, d_model: int) -> np.ndarray:
    """(max_len, d_model) float64: PE(pos, 2i) = sin(pos / 10000^{2i/d}), PE(pos, 2i+1) = cos(pos / 10000^{2i/d})."""
    pos = np.arange(max_len, dtype=np.float64)[:, None]  # (T, 1)
    two_i = np.arange(0, d_model, 2, dtype=np.float64)  # (⌈d/2⌉,) the even indices 2i
    angle = pos / np.power(10000.0, two_i / d_model)  # (T, ⌈d/2⌉)
    pe = np.zeros((max_len, d_model))
    pe[:, 0::2] = np.sin(angle)
    pe[:, 1::2] = np.cos(angle[:, : d_model // 2])  # an odd d has one fewer cosine column
    return pe


class _Positional(Module):
    """The shared interface (see the module docstring)."""

    kind = "none"

    def embed(self, x: Tensor, offset: int = 0) -> Tensor:
        return x

    def attn_kwargs(self, q_len: int, k_len: int | None = None, offset: int = 0) -> dict:
        return {}


class NoPositionalEncoding(_Positional):
    """No position information (`positional="none"`)."""

    def forward(self, x: Tensor, offset: int = 0) -> Tensor:
        return x


def _check_len(name: str, needed: int, max_len: int) -> None:
    if needed > max_len:
        raise ValueError(f"sequence needs positions up to {needed} but {name} was built with max_len={max_len}; "
                         f"build it with a larger max_len")


class SinusoidalPositionalEncoding(_Positional):
    """x + PE[offset : offset + T], the chapter's formula; buffer ``pe`` (1, max_len, d_model).

    x (B, T, d_model) -> (B, T, d_model). `pe` is a persistent buffer, as in
    the chapter's listing (``register_buffer('pe', pe)``), so it is in the
    state_dict under ``pe``.
    """

    kind = "sinusoidal"

    def __init__(self, d_model: int, max_len: int = 5000, dropout: float = 0.0, dtype=None):
        super().__init__()
        self.d_model, self.max_len, self.p = d_model, max_len, dropout
        dt = np.dtype(dtype) if dtype is not None else np.dtype(backend.default_dtype())
        self.register_buffer("pe", Tensor(sinusoidal_table(max_len, d_model)[None].astype(dt)))  # (1, T, d)

    def forward(self, x: Tensor, offset: int = 0) -> Tensor:
        if len(x.shape) != 3:
            raise ValueError(f"x has shape {tuple(x.shape)} but SinusoidalPositionalEncoding expects "
                             f"(batch, seq, d_model) = (B, T, {self.d_model})")
        T = x.shape[1]
        _check_len("SinusoidalPositionalEncoding", offset + T, self.max_len)
        if x.shape[-1] != self.d_model:
            raise ValueError(f"x has shape {x.shape} but the encoding has d_model={self.d_model}")
        x = x + self.pe.data[:, offset:offset + T].astype(x.dtype, copy=False)  # (B, T, d)
        return F.dropout(x, self.p, self.training)

    embed = forward

    def extra_repr(self) -> str:
        return f"d_model={self.d_model}, max_len={self.max_len}"


PositionalEncoding = SinusoidalPositionalEncoding  # the chapter's name


class LearnedPositionalEmbedding(_Positional):
    """x + weight[offset : offset + T]; ``weight`` (max_len, d_model) ~ N(0, 0.02²) (GPT-2, BERT)."""

    kind = "learned"

    def __init__(self, max_len: int, d_model: int, dropout: float = 0.0, dtype=None):
        super().__init__()
        self.max_len, self.d_model, self.p = max_len, d_model, dropout
        self.weight = Parameter(creation.zeros(max_len, d_model, dtype=dtype))
        init.normal_(self.weight, 0.0, 0.02)

    def forward(self, x: Tensor, offset: int = 0) -> Tensor:
        T = x.shape[1]
        _check_len("LearnedPositionalEmbedding", offset + T, self.max_len)
        x = x + self.weight[offset:offset + T]  # (B, T, d) + (T, d)
        return F.dropout(x, self.p, self.training)

    embed = forward

    def extra_repr(self) -> str:
        return f"max_len={self.max_len}, d_model={self.d_model}"


class RotaryEmbedding(_Positional):
    """RoPE: rotate each pair of channels of q and k by angle pos · θ_i, θ_i = base^{−2i/D}.

    With the "rotate-half" pairing (channel i with i + D/2, as GPT-NeoX and
    Llama): x' = x · cos + rotate_half(x) · sin, rotate_half(x) = [−x₂, x₁].
    Then ⟨q'_m, k'_n⟩ depends on m − n only. q (..., L, D), k (..., S, D).
    cos/sin tables are non-persistent buffers (not in the state_dict).
    """

    kind = "rope"

    def __init__(self, dim: int, max_len: int = 2048, base: float = 10000.0, dtype=None):
        super().__init__()
        if dim % 2:
            raise ValueError(f"RoPE needs an even head dimension, got {dim}")
        self.dim, self.max_len, self.base = dim, max_len, base
        inv_freq = base ** (-np.arange(0, dim, 2, dtype=np.float64) / dim)  # (D/2,) θ_i
        angle = np.arange(max_len, dtype=np.float64)[:, None] * inv_freq[None]  # (T, D/2)
        angle = np.concatenate([angle, angle], axis=-1)  # (T, D): channel i and i + D/2 share θ_i
        dt = np.dtype(dtype) if dtype is not None else np.float64  # cast to the input's dtype when used
        self.register_buffer("cos", Tensor(np.cos(angle).astype(dt)), persistent=False)
        self.register_buffer("sin", Tensor(np.sin(angle).astype(dt)), persistent=False)

    def rotate(self, x: Tensor, offset: int = 0) -> Tensor:
        """x (..., T, D) rotated for positions offset .. offset + T − 1."""
        T, D = x.shape[-2], x.shape[-1]
        if D != self.dim:
            raise ValueError(f"x has shape {x.shape} but this RotaryEmbedding rotates head dim {self.dim}")
        _check_len("RotaryEmbedding", offset + T, self.max_len)
        cos = self.cos.data[offset:offset + T].astype(x.dtype, copy=False)  # (T, D)
        sin = self.sin.data[offset:offset + T].astype(x.dtype, copy=False)  # (T, D)
        x1, x2 = x[..., : D // 2], x[..., D // 2:]  # (..., T, D/2) each
        rotated = creation.cat([-x2, x1], dim=-1)  # (..., T, D) rotate_half
        return x * cos + rotated * sin

    def forward(self, q: Tensor, k: Tensor, q_offset: int = 0, k_offset: int = 0) -> tuple[Tensor, Tensor]:
        return self.rotate(q, q_offset), self.rotate(k, k_offset)

    def attn_kwargs(self, q_len: int, k_len: int | None = None, offset: int = 0) -> dict:
        if offset:
            return {"rotary": lambda q, k: self(q, k, offset, 0)}
        return {"rotary": self}

    def extra_repr(self) -> str:
        return f"dim={self.dim}, max_len={self.max_len}, base={self.base}"


def alibi_slopes(num_heads: int) -> np.ndarray:
    """m_h for h = 1..H: 2^(−8h/H) when H is a power of two, else the paper's interleaving."""
    def power_of_2(n: int) -> list[float]:
        start = 2 ** (-8.0 / n)
        return [start ** (i + 1) for i in range(n)]

    if math.log2(num_heads).is_integer():
        return np.array(power_of_2(num_heads))
    closest = 2 ** math.floor(math.log2(num_heads))
    extra = power_of_2(2 * closest)[0::2][: num_heads - closest]
    return np.array(power_of_2(closest) + extra)


class ALiBi(_Positional):
    """Attention with Linear Biases: score(i, j) += −m_h · |i − j|.

    The paper's causal form is −m_h · (i − j) for j ≤ i; for a causal mask the
    two agree on every visible key, and the symmetric form also serves the
    bidirectional encoder. No parameters.
    """

    kind = "alibi"

    def __init__(self, num_heads: int):
        super().__init__()
        self.num_heads = num_heads
        self.slopes = alibi_slopes(num_heads)  # (H,)

    def bias(self, q_len: int, k_len: int | None = None, offset: int = 0, dtype=None, xp=np) -> np.ndarray:
        """(1, H, L, S) array: −m_h · |(offset + i) − j|."""
        k_len = q_len if k_len is None else k_len
        i = xp.arange(offset, offset + q_len)[:, None]  # (L, 1)
        j = xp.arange(k_len)[None, :]  # (1, S)
        dist = xp.abs(i - j).astype(np.float64)  # (L, S)
        slopes = xp.asarray(self.slopes)[:, None, None]  # (H, 1, 1)
        dt = np.dtype(dtype) if dtype is not None else np.dtype(backend.default_dtype())
        return (-slopes * dist[None])[None].astype(dt)  # (1, H, L, S)

    forward = bias

    def attn_kwargs(self, q_len: int, k_len: int | None = None, offset: int = 0, dtype=None) -> dict:
        return {"position_bias": self.bias(q_len, k_len, offset, dtype)}

    def extra_repr(self) -> str:
        return f"num_heads={self.num_heads}"


def positional_encoding(kind: str, d_model: int, nhead: int, max_len: int = 512, dropout: float = 0.0,
                        dtype=None) -> _Positional:
    """The module for ``positional=kind``: one of 'sinusoidal', 'learned', 'rope', 'alibi', 'none'."""
    if kind == "sinusoidal":
        return SinusoidalPositionalEncoding(d_model, max_len, dropout, dtype=dtype)
    if kind == "learned":
        return LearnedPositionalEmbedding(max_len, d_model, dropout, dtype=dtype)
    if kind == "rope":
        return RotaryEmbedding(d_model // nhead, max_len, dtype=dtype)
    if kind == "alibi":
        return ALiBi(nhead)
    if kind == "none":
        return NoPositionalEncoding()
    raise ValueError(f"positional must be one of {', '.join(POSITIONAL_KINDS)}, got {kind!r}")
