"""sst2-lstm: the BiLSTM baseline on SST-2, same data, vocabulary and budget as sst2-transformer.

Embedding -> bidirectional seqlab.nn.LSTM over the real tokens (lengths) ->
[forward final state; backward final state] of the top layer -> Dropout -> Linear.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import numpy as np

from seqlab.train.config import COUNT, LIMIT, PROBABILITY
from seqlab.train.tasks.base import Task, require
from seqlab.train.tasks.sst2_scratch import ScratchConfig, build_scratch_task

NAME = "sst2-lstm"
DESCRIPTION = "SST-2 sentiment, bidirectional LSTM baseline"


@dataclass
class Config(ScratchConfig):
    max_steps: int = 6000
    lr: float = 2e-3
    weight_decay: float = 0.01
    warmup_steps: int = 100
    clip_grad_norm: float = 5.0
    eval_every: int = 250
    vocab_size: int = 10000
    max_len: int = 64
    embed_dim: int = 128
    hidden_size: int = 128
    num_layers: int = 1
    dropout: float = 0.3
    max_train_examples: int = 0
    max_dev_examples: int = 0

    BOUNDS: ClassVar = {**dict.fromkeys(("vocab_size", "max_len", "embed_dim", "hidden_size", "num_layers"), COUNT),
                        "dropout": PROBABILITY, "max_train_examples": LIMIT, "max_dev_examples": LIMIT}


def make_model(vocab_size: int, embed_dim: int, hidden_size: int, num_layers: int, dropout: float, pad_id: int):
    from seqlab import cat, nn

    LSTM = require("seqlab.nn", "LSTM", NAME)

    class BiLSTMClassifier(nn.Module):
        """ids (B, T), attention_mask (B, T) -> logits (B, 2)."""

        def __init__(self):
            super().__init__()
            self.embedding = nn.Embedding(vocab_size, embed_dim, padding_idx=pad_id)
            self.lstm = LSTM(embed_dim, hidden_size, num_layers, batch_first=True, bidirectional=True,
                             dropout=dropout if num_layers > 1 else 0.0)
            self.dropout = nn.Dropout(dropout)
            self.classifier = nn.Linear(2 * hidden_size, 2)

        def forward(self, input_ids, attention_mask=None):
            ids = np.asarray(input_ids)
            lengths = np.asarray(attention_mask).sum(1) if attention_mask is not None else None  # (B,)
            x = self.dropout(self.embedding(ids))                      # (B, T, E)
            _, (h_n, _) = self.lstm(x, lengths=lengths)                 # h_n (L·2, B, H)
            h = cat([h_n[-2], h_n[-1]], dim=-1)                         # (B, 2H) top layer, both directions
            return self.classifier(self.dropout(h))                    # (B, 2)

    return BiLSTMClassifier()


def build(config: Config, run_dir: Path | None = None, data_dir: Path | None = None, training: bool = True) -> Task:
    require("seqlab.nn", "LSTM", NAME)  # before any data is read

    def model_and_config(tok):
        model = make_model(tok.vocab_size, config.embed_dim, config.hidden_size, config.num_layers, config.dropout,
                           tok.pad_token_id)
        return model, {"vocab_size": tok.vocab_size, "embed_dim": config.embed_dim, "hidden_size": config.hidden_size,
                       "num_layers": config.num_layers, "bidirectional": True, "num_classes": 2}
    return build_scratch_task(config, run_dir, data_dir, training, NAME, model_and_config)
