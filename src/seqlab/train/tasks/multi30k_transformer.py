"""multi30k-transformer: the Transformer encoder-decoder on Multi30k de→en (the chapter's 7.4).

Shared embeddings over a joint BPE vocabulary, Post-LN as in the paper,
Adam(β = (0.9, 0.98), ε = 1e-9) with the paper's schedule
lr · d^−0.5 · min(s^−0.5, s · warmup^−1.5) (§5.3), label smoothing 0.1 (§5.4).
Reference target: test2016 BLEU >= 33 within 90 minutes on 2 cores.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from seqlab.nn.positional import POSITIONAL_KINDS
from seqlab.train.config import COUNT, PROBABILITY, check_rope_heads
from seqlab.train.tasks.base import Task, require
from seqlab.train.tasks.translation import TranslationConfig, build_translation

NAME = "multi30k-transformer"
DESCRIPTION = "Multi30k German→English, Transformer encoder-decoder"


@dataclass
class Config(TranslationConfig):
    optimizer: str = "adam"
    lr: float = 0.2                   # multiplies the schedule (which already carries d_model^-0.5): peak 6.25e-4
    beta2: float = 0.98
    weight_decay: float = 0.0
    schedule: str = "inverse_sqrt"
    warmup_steps: int = 400           # 90 minutes on 2 cores give about 2,300 steps: a short warm-up
    eval_every: int = 500
    checkpoint_every: int = 500
    max_minutes: float = 90.0
    d_model: int = 256
    nhead: int = 4
    num_encoder_layers: int = 3
    num_decoder_layers: int = 3
    dim_feedforward: int = 1024
    dropout: float = 0.1
    positional: str = "sinusoidal"
    norm_first: bool = False

    BOUNDS: ClassVar = {**dict.fromkeys(("d_model", "nhead", "num_encoder_layers", "num_decoder_layers",
                                         "dim_feedforward"), COUNT), "dropout": PROBABILITY}
    CHOICES: ClassVar = {"positional": POSITIONAL_KINDS}
    DIVISIBLE: ClassVar = {"d_model": "nhead"}

    def __post_init__(self) -> None:
        super().__post_init__()
        check_rope_heads(self, "d_model", "nhead")


def build(config: Config, run_dir: Path | None = None, data_dir: Path | None = None, training: bool = True) -> Task:
    mod = require("seqlab.models.translator", None, NAME)

    def make_model(vocab_size: int):
        return mod.Translator(mod.TranslatorConfig(
            src_vocab_size=vocab_size, tgt_vocab_size=vocab_size, d_model=config.d_model, nhead=config.nhead,
            num_encoder_layers=config.num_encoder_layers, num_decoder_layers=config.num_decoder_layers,
            dim_feedforward=config.dim_feedforward, dropout=config.dropout, max_len=max(256, config.max_len),
            positional=config.positional, share_embeddings=True, norm_first=config.norm_first))

    def decode(model, src, beam_size: int, length_penalty: float):
        if beam_size == 1:
            return model.greedy_decode(src)
        return model.beam_search(src, beam_size=beam_size, length_penalty=length_penalty)

    def optimizer_factory(model):
        from seqlab.optim import Adam

        return Adam(model.parameters(), lr=config.lr, betas=(config.beta1, config.beta2), eps=1e-9,
                    weight_decay=config.weight_decay)

    task = build_translation(NAME, config, run_dir, data_dir, training, make_model, decode,
                             lambda model, b: model(b["src"], b["tgt_in"]))
    if config.optimizer == "adam":  # the paper's ε; other optimizers come from the settings as usual
        task.optimizer_factory = optimizer_factory
    return task
