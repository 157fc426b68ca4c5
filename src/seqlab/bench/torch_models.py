"""The PyTorch twins of the benchmarked seqlab models, with the same parameter names.

Each twin's `state_dict()` has exactly the seqlab model's keys and shapes, so
weights copy either way with `load_state_dict`. torch is imported here only:
the benchmarks need it, seqlab itself does not.
"""
from __future__ import annotations

import math

import numpy as np


def torch_classifier(vocab_size: int, d_model: int, nhead: int, num_layers: int, dim_feedforward: int,
                     dropout: float, max_len: int, num_labels: int = 2, pad_token_id: int = 0):
    """seqlab's `TransformerClassifier` (post-LN, sinusoidal positions, masked mean pooling) in torch."""
    import torch
    from torch import nn

    from seqlab.nn.positional import sinusoidal_table

    class PositionalEncoding(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("pe", torch.from_numpy(sinusoidal_table(max_len, d_model)[None].astype(np.float32)))

    class Classifier(nn.Module):
        def __init__(self):
            super().__init__()
            self.embedding = nn.Embedding(vocab_size, d_model, padding_idx=pad_token_id)
            self.pos_encoder = PositionalEncoding()
            self.embed_dropout = nn.Dropout(dropout)
            layer = nn.TransformerEncoderLayer(d_model, nhead, dim_feedforward, dropout, activation="gelu",
                                               batch_first=True, norm_first=False)
            self.encoder = nn.TransformerEncoder(layer, num_layers, enable_nested_tensor=False)
            self.dropout = nn.Dropout(dropout)
            self.classifier = nn.Linear(d_model, num_labels)

        def forward(self, ids, real):
            """ids (B, T) long, real (B, T) bool (True = real token) -> logits (B, num_labels)."""
            T = ids.shape[1]
            x = self.embedding(ids) * math.sqrt(d_model) + self.pos_encoder.pe[:, :T]  # (B, T, d)
            h = self.encoder(self.embed_dropout(x), src_key_padding_mask=~real)        # (B, T, d)
            m = real.to(h.dtype)[:, :, None]                                           # (B, T, 1)
            pooled = (h * m).sum(1) / m.sum(1).clamp(min=1)                            # (B, d)
            return self.classifier(self.dropout(pooled))

    return Classifier()


def torch_gpt(vocab_size: int, n_positions: int, n_embd: int, n_layer: int, n_head: int):
    """seqlab's `GPT` (GPT-2: pre-LN, tanh GELU, tied head, no dropout) written as nanoGPT writes it:
    torch's fused causal SDPA for attention."""
    import torch
    from torch import nn
    from torch.nn import functional as TF

    class Attention(nn.Module):
        def __init__(self):
            super().__init__()
            self.c_attn = nn.Linear(n_embd, 3 * n_embd)
            self.c_proj = nn.Linear(n_embd, n_embd)

        def forward(self, x):
            B, T, C = x.shape
            q, k, v = self.c_attn(x).split(C, dim=2)
            q, k, v = (t.view(B, T, n_head, C // n_head).transpose(1, 2) for t in (q, k, v))  # (B, H, T, D)
            y = TF.scaled_dot_product_attention(q, k, v, is_causal=True)                        # (B, H, T, D)
            return self.c_proj(y.transpose(1, 2).reshape(B, T, C))

    class MLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.c_fc = nn.Linear(n_embd, 4 * n_embd)
            self.c_proj = nn.Linear(4 * n_embd, n_embd)

        def forward(self, x):
            return self.c_proj(TF.gelu(self.c_fc(x), approximate="tanh"))

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln_1, self.attn = nn.LayerNorm(n_embd), Attention()
            self.ln_2, self.mlp = nn.LayerNorm(n_embd), MLP()

        def forward(self, x):
            x = x + self.attn(self.ln_1(x))
            return x + self.mlp(self.ln_2(x))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.transformer = nn.ModuleDict(dict(
                wte=nn.Embedding(vocab_size, n_embd), wpe=nn.Embedding(n_positions, n_embd),
                h=nn.ModuleList([Block() for _ in range(n_layer)]), ln_f=nn.LayerNorm(n_embd)))
            self.lm_head = nn.Linear(n_embd, vocab_size, bias=False)
            self.lm_head.weight = self.transformer.wte.weight  # tied, as GPT-2

        def forward(self, ids):
            T = ids.shape[1]
            x = self.transformer.wte(ids) + self.transformer.wpe(torch.arange(T, device=ids.device))  # (B, T, C)
            for block in self.transformer.h:
                x = block(x)
            return self.lm_head(self.transformer.ln_f(x))                            # (B, T, V)

    return GPT()


def copy_to_torch(seqlab_model, torch_model) -> None:
    """Load the seqlab model's weights into its torch twin (every key must match)."""
    import torch

    state = {k: torch.from_numpy(np.array(v, copy=True)) for k, v in seqlab_model.state_dict().items()}
    torch_model.load_state_dict(state, strict=True)


def decay_groups(named_params, weight_decay: float) -> list[dict]:
    """nanoGPT's AdamW groups: matrices (dim >= 2) decay, biases and norms do not."""
    seen, decay, no_decay = set(), [], []
    for _, p in named_params:
        if id(p) in seen:
            continue
        seen.add(id(p))
        (decay if len(p.shape) >= 2 else no_decay).append(p)
    return [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
