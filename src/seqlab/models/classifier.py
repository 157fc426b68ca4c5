"""A Transformer encoder text classifier trained from scratch (the chapter's exercise 1, SST-2).

    ids (B, T) -> Embedding · √d_model (+ position) -> TransformerEncoder
               -> mean over real tokens (attention_mask = 1) -> Dropout -> Linear -> logits (B, num_labels)

Position comes from one option, ``positional``: 'sinusoidal', 'learned',
'rope', 'alibi' or 'none' (see nn/positional.py). The model takes Hugging
Face's ``attention_mask`` (1 = real token, 0 = padding).
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np

from seqlab import backend
from seqlab import functional as F
from seqlab.autograd.tensor import Tensor
from seqlab.models._common import as_array, token_ids
from seqlab.nn import init
from seqlab.nn.dropout import Dropout
from seqlab.nn.linear import Linear
from seqlab.nn.module import Module
from seqlab.nn.norm import LayerNorm
from seqlab.nn.positional import POSITIONAL_KINDS, positional_encoding
from seqlab.nn.sparse import Embedding
from seqlab.nn.transformer import TransformerEncoder, TransformerEncoderLayer
from seqlab.models.outputs import SequenceClassifierOutput


POOLINGS = ("mean", "max", "first")


@dataclass
class ClassifierConfig:
    vocab_size: int
    num_labels: int = 2
    d_model: int = 128           # width of every token vector
    nhead: int = 4               # attention heads (d_model / nhead per head)
    num_layers: int = 2          # encoder layers
    dim_feedforward: int = 512   # hidden width of each feed-forward block
    dropout: float = 0.1
    max_len: int = 512           # longest sequence the positional table covers
    positional: str = "sinusoidal"  # 'sinusoidal' | 'learned' | 'rope' | 'alibi' | 'none'
    norm_first: bool = True      # Pre-LN trains more stably from scratch; False = the paper's Post-LN
    activation: str = "gelu"
    pad_token_id: int = 0
    pooling: str = "mean"        # 'mean' or 'max' over real tokens, or 'first' (the [CLS] position)

    def __post_init__(self) -> None:
        if self.vocab_size < 1 or self.num_labels < 1:
            raise ValueError(f"vocab_size ({self.vocab_size}) and num_labels ({self.num_labels}) must be >= 1")
        if self.d_model % self.nhead:
            raise ValueError(f"d_model ({self.d_model}) must be divisible by nhead ({self.nhead})")
        if self.positional not in POSITIONAL_KINDS:
            raise ValueError(f"positional must be one of {', '.join(POSITIONAL_KINDS)}, got {self.positional!r}")
        if self.pooling not in POOLINGS:
            raise ValueError(f"pooling must be one of {', '.join(POOLINGS)}, got {self.pooling!r}")
        if not 0 <= self.pad_token_id < self.vocab_size:
            raise ValueError(f"pad_token_id {self.pad_token_id} is outside the vocabulary (size {self.vocab_size})")

    def to_dict(self) -> dict:
        return asdict(self)


class TransformerClassifier(Module):
    """Sequence classification with a from-scratch Transformer encoder.

    Parameters: ``embedding``, ``pos_encoder`` (``pe`` buffer / ``weight`` for
    the additive kinds), ``encoder.layers.N...`` (torch's names), ``encoder.norm``
    (Pre-LN only), ``classifier``.
    """

    def __init__(self, config: ClassifierConfig):
        super().__init__()
        c = self.config = config
        self.embedding = Embedding(c.vocab_size, c.d_model, padding_idx=c.pad_token_id)
        init.normal_(self.embedding.weight, 0.0, c.d_model ** -0.5)  # × √d below gives unit-scale vectors
        self.embedding.weight.data[c.pad_token_id] = 0
        self.pos_encoder = positional_encoding(c.positional, c.d_model, c.nhead, c.max_len)
        self.embed_dropout = Dropout(c.dropout)
        layer = TransformerEncoderLayer(c.d_model, c.nhead, c.dim_feedforward, c.dropout, c.activation,
                                        norm_first=c.norm_first)
        self.encoder = TransformerEncoder(layer, c.num_layers, LayerNorm(c.d_model) if c.norm_first else None)
        self.dropout = Dropout(c.dropout)
        self.classifier = Linear(c.d_model, c.num_labels)

    def features(self, input_ids, attention_mask=None, *, output_attentions: bool = False):
        """Encoder output (B, T, d) (and per-layer (B, H, T, T) weights with ``output_attentions``)."""
        ids = as_array(input_ids)
        if ids.ndim != 2:
            raise ValueError(f"input_ids must be (batch, length), got shape {ids.shape}")
        B, T = ids.shape
        x = self.embedding(ids) * math.sqrt(self.config.d_model)  # (B, T, d)
        mask = _real_tokens(attention_mask, ids.shape, x.device)
        x = self.embed_dropout(self.pos_encoder.embed(x))  # (B, T, d)
        kpm = None if mask is None else ~mask  # (B, T) True = padding, as torch
        extra = self.pos_encoder.attn_kwargs(T, T)
        return self.encoder(x, src_key_padding_mask=kpm, output_attentions=output_attentions, **extra)

    def forward(self, input_ids, attention_mask=None, labels=None, *,
                output_attentions: bool = False) -> SequenceClassifierOutput:
        """input_ids (B, T) ints; attention_mask (B, T), 1 = real token (default: all real);
        labels (B,) class ids, optional.

        Returns a `SequenceClassifierOutput`: logits (B, num_labels), loss
        (cross-entropy) when labels are given, attentions (a tuple over layers of
        (B, H, T, T)) with ``output_attentions``.
        """
        h = self.features(input_ids, attention_mask, output_attentions=output_attentions)
        weights = None
        if output_attentions:
            h, weights = h
        mask = _real_tokens(attention_mask, h.shape[:2], h.device)
        if self.config.pooling == "first":
            pooled = h[:, 0]  # (B, d) the [CLS] position
        elif self.config.pooling == "max":  # max over time, per feature, of the real tokens (Kim's CNN)
            pooled = h if mask is None else h.masked_fill(~mask[:, :, None], -np.inf)
            pooled = pooled.amax(dim=1)  # (B, d)
        elif mask is None:
            pooled = h.mean(dim=1)  # (B, d)
        else:
            m = Tensor(mask.astype(h.dtype)[:, :, None])  # (B, T, 1)
            count = backend.xp_of(mask).maximum(mask.sum(axis=1, keepdims=True), 1).astype(h.dtype)  # (B, 1)
            pooled = (h * m).sum(dim=1) / count  # (B, d) mean over real tokens only
        logits = self.classifier(self.dropout(pooled))  # (B, num_labels)
        loss = None
        if labels is not None:
            lab = token_ids(labels, "labels")  # TypeError for float labels: never truncated to class ids
            loss = F.cross_entropy(logits, lab.reshape(-1))
        return SequenceClassifierOutput(loss=loss, logits=logits,
                                        attentions=tuple(weights) if weights is not None else None)


def _real_tokens(attention_mask, shape, device: str) -> np.ndarray | None:
    """HF attention_mask (1 = real) as a bool array (B, T) on `device`, or None when absent."""
    if attention_mask is None:
        return None
    m = attention_mask.data if isinstance(attention_mask, Tensor) else backend.from_torch(attention_mask)
    m = backend.get_xp().asarray(m) if not hasattr(m, "shape") else m
    if tuple(m.shape) != tuple(shape):
        raise ValueError(f"attention_mask has shape {tuple(m.shape)} but input_ids has shape {tuple(shape)}")
    return backend.to_device(m, device).astype(bool)
