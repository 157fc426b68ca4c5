"""multi30k-rnn: the RNN encoder-decoder with additive (Bahdanau) attention on Multi30k de→en (the chapter's 7.3.1).

Bidirectional GRU encoder, GRU decoder attending over all source positions
(seqlab.models.seq2seq), teacher forcing, label smoothing, beam search for
the test set. Reference target: test2016 BLEU >= 28 within 60 minutes on 2 cores.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from seqlab.errors import ConfigError
from seqlab.train.config import COUNT, PROBABILITY
from seqlab.train.tasks.base import Task, require
from seqlab.train.tasks.translation import TranslationConfig, build_translation

NAME = "multi30k-rnn"
DESCRIPTION = "Multi30k German→English, GRU encoder-decoder with additive attention"


@dataclass
class Config(TranslationConfig):
    batch_size: int = 64              # sentence pairs per batch
    lr: float = 1e-3
    weight_decay: float = 0.0
    schedule: str = "warmup_cosine"
    warmup_steps: int = 200
    min_lr: float = 1e-5
    max_steps: int = 5000             # the cosine's length; 60 minutes on 2 cores end it near step 3,600
    eval_every: int = 1000
    checkpoint_every: int = 1000
    max_minutes: float = 60.0
    emb_dim: int = 256
    enc_hidden: int = 256
    dec_hidden: int = 512
    attn_dim: int = 256
    attention: str = "additive"       # additive | dot | general | none (one fixed context vector)
    cell: str = "gru"                 # gru | lstm
    enc_layers: int = 1
    dropout: float = 0.3

    BOUNDS: ClassVar = {**dict.fromkeys(("emb_dim", "enc_hidden", "dec_hidden", "attn_dim", "enc_layers"), COUNT),
                        "dropout": PROBABILITY}
    CHOICES: ClassVar = {"attention": ("additive", "dot", "general", "none"), "cell": ("gru", "lstm")}

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.attention == "dot" and self.dec_hidden != 2 * self.enc_hidden:  # scores h_dec · h_enc (both directions)
            raise ConfigError(f"attention = 'dot' needs dec_hidden == 2 * enc_hidden, got dec_hidden={self.dec_hidden} "
                              f"and enc_hidden={self.enc_hidden}")


def build(config: Config, run_dir: Path | None = None, data_dir: Path | None = None, training: bool = True) -> Task:
    mod = require("seqlab.models.seq2seq", None, NAME)

    def make_model(vocab_size: int):
        return mod.Seq2Seq(mod.Seq2SeqConfig(
            src_vocab_size=vocab_size, tgt_vocab_size=vocab_size, emb_dim=config.emb_dim,
            enc_hidden=config.enc_hidden, dec_hidden=config.dec_hidden, attn_dim=config.attn_dim,
            attention=config.attention, cell=config.cell, enc_layers=config.enc_layers, dropout=config.dropout))

    def decode(model, src, beam_size: int, length_penalty: float):
        return model.generate(src, beam_size=beam_size, length_penalty=length_penalty)

    return build_translation(NAME, config, run_dir, data_dir, training, make_model, decode,
                             lambda model, b: model(b["src"], b["tgt_in"]))
