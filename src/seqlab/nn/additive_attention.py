"""Attention for RNN encoder-decoders (the chapter's 7.3.1): Bahdanau's additive score
and Luong's dot and general scores, over every source position at once.

    additive (Bahdanau et al. 2015):  e_ts = v_aᵀ tanh(W_a [s_{t−1}; h_s])
    dot      (Luong et al. 2015):     e_ts = s_tᵀ h_s
    general  (Luong et al. 2015):     e_ts = s_tᵀ W_a h_s
    α_ts = softmax_s(e_ts),  c_t = Σ_s α_ts h_s

The chapter's listing loops over source positions for one example; here the
scores of all B examples, T_q queries and S source positions are one
broadcast: W_a [s; h] = W_q s + W_k h, so W_k h_s is computed once per
source sentence (`project_keys`) and reused at every decoder step.

Masks: `key_padding_mask` (B, S) bool, True = padding (as torch's
nn.MultiheadAttention); padded positions get weight 0. A row whose keys are
all padding gets all-zero weights and a zero context (not NaN).
"""
from __future__ import annotations

import numpy as np

from seqlab.autograd.tensor import Tensor
from seqlab.nn.linear import Linear
from seqlab.nn.module import Module


def attend(scores: Tensor, values: Tensor, key_padding_mask=None) -> tuple[Tensor, Tensor]:
    """softmax over the last dim of scores (B, Tq, S), padding masked; returns (context (B, Tq, V), weights)."""
    if key_padding_mask is not None:
        pad = key_padding_mask.data if isinstance(key_padding_mask, Tensor) else key_padding_mask
        if pad.dtype != bool:
            raise TypeError(f"key_padding_mask must be bool (True = padding), got dtype {pad.dtype}")
        if tuple(pad.shape) != (scores.shape[0], scores.shape[-1]):
            raise ValueError(f"key_padding_mask has shape {tuple(pad.shape)}, expected (B, S) = "
                             f"({scores.shape[0]}, {scores.shape[-1]})")
        scores = scores.masked_fill(pad[:, None, :], -np.inf)      # (B, Tq, S)
    weights = scores.softmax(dim=-1)                                # (B, Tq, S); all-padding rows -> 0
    return weights @ values, weights                                # (B, Tq, V)


class _ScoreAttention(Module):
    """forward(query (B, Q) or (B, Tq, Q), keys (B, S, K), values = keys, key_padding_mask (B, S) True = pad,
    projected_keys = project_keys(keys)) -> (context (B, [Tq,] V), weights (B, [Tq,] S))."""

    def project_keys(self, keys: Tensor) -> Tensor:  # pragma: no cover - abstract
        raise NotImplementedError

    def score(self, query: Tensor, projected_keys: Tensor) -> Tensor:  # pragma: no cover - abstract
        raise NotImplementedError

    def forward(self, query: Tensor, keys: Tensor, values: Tensor | None = None, key_padding_mask=None,
                projected_keys: Tensor | None = None) -> tuple[Tensor, Tensor]:
        if keys.ndim != 3:
            raise ValueError(f"keys must be (B, S, key_size), got shape {keys.shape}")
        single = query.ndim == 2
        q = query.unsqueeze(1) if single else query                 # (B, Tq, Q)
        if q.ndim != 3 or q.shape[0] != keys.shape[0]:
            raise ValueError(f"query must be (B, Q) or (B, Tq, Q) with B = {keys.shape[0]}, got {query.shape}")
        pk = self.project_keys(keys) if projected_keys is None else projected_keys
        scores = self.score(q, pk)                                  # (B, Tq, S)
        ctx, w = attend(scores, keys if values is None else values, key_padding_mask)
        return (ctx.squeeze(1), w.squeeze(1)) if single else (ctx, w)


class AdditiveAttention(_ScoreAttention):
    """Bahdanau attention, e_ts = v_aᵀ tanh(W_q s_t + W_k h_s + b), i.e. W_a = [W_q  W_k] on [s; h].

    Parameters: `query_proj.weight` (A, Q), `key_proj.weight` (A, K), `key_proj.bias` (A,),
    `v.weight` (1, A).
    """

    def __init__(self, query_size: int, key_size: int, hidden_size: int, bias: bool = True):
        super().__init__()
        self.query_size, self.key_size, self.hidden_size = query_size, key_size, hidden_size
        self.query_proj = Linear(query_size, hidden_size, bias=False)
        self.key_proj = Linear(key_size, hidden_size, bias=bias)
        self.v = Linear(hidden_size, 1, bias=False)

    def project_keys(self, keys: Tensor) -> Tensor:
        return self.key_proj(keys)                                  # (B, S, A): once per source

    def score(self, query: Tensor, projected_keys: Tensor) -> Tensor:
        q = self.query_proj(query).unsqueeze(2)                     # (B, Tq, 1, A)
        k = projected_keys.unsqueeze(1)                             # (B, 1, S, A)
        return self.v((q + k).tanh()).squeeze(-1)                   # (B, Tq, S)

    def extra_repr(self) -> str:
        return f"query_size={self.query_size}, key_size={self.key_size}, hidden_size={self.hidden_size}"


class LuongAttention(_ScoreAttention):
    """Luong's multiplicative scores: 'dot' e = sᵀ h (needs query_size == key_size) or
    'general' e = sᵀ W_a h with `W_a.weight` (Q, K)."""

    def __init__(self, query_size: int, key_size: int, score: str = "general"):
        super().__init__()
        if score not in ("dot", "general"):
            raise ValueError(f"score must be 'dot' or 'general', got {score!r}")
        if score == "dot" and query_size != key_size:
            raise ValueError(f"dot attention needs query_size == key_size, got {query_size} and {key_size}")
        self.query_size, self.key_size, self.kind = query_size, key_size, score
        if score == "general":
            self.W_a = Linear(key_size, query_size, bias=False)

    def project_keys(self, keys: Tensor) -> Tensor:
        return self.W_a(keys) if self.kind == "general" else keys   # (B, S, Q)

    def score(self, query: Tensor, projected_keys: Tensor) -> Tensor:
        return query @ projected_keys.transpose(1, 2)               # (B, Tq, S)

    def extra_repr(self) -> str:
        return f"query_size={self.query_size}, key_size={self.key_size}, score={self.kind!r}"
