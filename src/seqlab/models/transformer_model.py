"""The chapter's `TransformerModel` (section 3.1): embeddings × √d_model + sinusoidal encoding + encoder + output layer.

The attribute names are those of the chapter's PyTorch listing, so its
state_dict loads directly:

    embedding             nn.Embedding(vocab_size, d_model)
    pos_encoder.pe        the sinusoidal table, a registered buffer (1, max_len, d_model)
    transformer_encoder   nn.TransformerEncoder(nn.TransformerEncoderLayer(d_model, nhead, dim_feedforward), num_layers)
    fc_out                nn.Linear(d_model, vocab_size)

The listing's encoder layer is torch's default Post-LN layer (ReLU, dropout
0.1); seqlab's is always batch-first, so the PyTorch equivalent is built with
``batch_first=True``.
"""
from __future__ import annotations

import math

from seqlab.nn.linear import Linear
from seqlab.nn.module import Module
from seqlab.nn.positional import PositionalEncoding
from seqlab.nn.sparse import Embedding
from seqlab.nn.transformer import TransformerEncoder, TransformerEncoderLayer


class TransformerModel(Module):
    """Token ids (B, T) -> logits (B, T, vocab_size) through a Transformer encoder."""

    def __init__(self, vocab_size: int, d_model: int = 512, nhead: int = 8, num_layers: int = 6,
                 dim_feedforward: int = 2048, max_len: int = 512, dropout: float = 0.1):
        super().__init__()
        if d_model % nhead:
            raise ValueError(f"d_model ({d_model}) must be divisible by nhead ({nhead})")
        self.d_model = d_model
        self.embedding = Embedding(vocab_size, d_model)
        self.pos_encoder = PositionalEncoding(d_model, max_len)
        layer = TransformerEncoderLayer(d_model, nhead, dim_feedforward, dropout, batch_first=True)
        self.transformer_encoder = TransformerEncoder(layer, num_layers)
        self.fc_out = Linear(d_model, vocab_size)

    def forward(self, src, src_mask=None, src_key_padding_mask=None, *, output_attentions: bool = False):
        """src: int ids (B, T). src_mask (T, T): bool True = blocked or float added (e.g. causal);
        src_key_padding_mask (B, T): True = padding.

        Returns logits (B, T, vocab_size); with ``output_attentions`` also a
        list over layers of (B, H, T, T) weights.
        """
        x = self.embedding(src) * math.sqrt(self.d_model)  # (B, T, d), the paper's §3.4 scaling
        x = self.pos_encoder(x)  # (B, T, d) + PE
        out = self.transformer_encoder(x, mask=src_mask, src_key_padding_mask=src_key_padding_mask,
                                       output_attentions=output_attentions)
        if output_attentions:
            out, weights = out
            return self.fc_out(out), weights  # (B, T, V), [(B, H, T, T)] * num_layers
        return self.fc_out(out)  # (B, T, V)
