"""Shared by mlm-pretrain and clm-pretrain: one corpus, one WordPiece vocabulary, one model size.

The chapter's exercise 3 compares an encoder pretrained with masked-LM and
a decoder pretrained as a causal LM of the same size on the same text with
the same budget; both tasks read these settings so a comparison changes one
thing only: the objective. After training each writes RUN_DIR/pretrained/,
a Hugging Face folder (config.json, model.safetensors, tokenizer files) that
`from_pretrained` of a classification head loads for fine-tuning.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from seqlab.train.config import COUNT, PROBABILITY, Bound, TrainConfig
from seqlab.train.tasks.text import corpus_lines, run_tokenizer

PRETRAINED_DIR = "pretrained"


@dataclass
class PretrainConfig(TrainConfig):
    max_steps: int = 3000
    batch_size: int = 64
    lr: float = 1e-3
    weight_decay: float = 0.01
    schedule: str = "warmup_cosine"
    warmup_steps: int = 200
    min_lr: float = 1e-5
    eval_every: int = 250
    checkpoint_every: int = 250
    log_every: int = 10
    metric: str = "val_loss"
    metric_mode: str = "min"
    # what the task's evaluation returns: a misspelled metric is refused before training, not at the first evaluation
    CHOICES: ClassVar = {"metric": ("val_loss",)}
    DIVISIBLE: ClassVar = {"d_model": "nhead"}
    GRADIENT_CHECKPOINTING: ClassVar = True  # BERT (mlm-pretrain) and GPT (clm-pretrain)
    corpus: str = "sst2+multi30k"   # 'sst2', 'multi30k' (English), joined with '+', or a UTF-8 file
    vocab_size: int = 8000
    max_len: int = 64               # tokens per example (MLM sentence / CLM window)
    d_model: int = 128
    nhead: int = 4
    num_layers: int = 2
    dim_feedforward: int = 512
    dropout: float = 0.1
    val_every_nth: int = 50         # every n-th line is held out for validation
    eval_batches: int = 20

    BOUNDS: ClassVar = {**dict.fromkeys(("vocab_size", "d_model", "nhead", "num_layers", "dim_feedforward",
                                         "eval_batches"), COUNT),
                        "max_len": Bound(2), "dropout": PROBABILITY,
                        "val_every_nth": Bound(2, note="every n-th line is held out")}


def corpus_and_tokenizer(config: PretrainConfig, run_dir: Path | None, data_dir: Path | None, training: bool,
                         task: str) -> tuple[list[str], list[str], Any]:
    """(train lines, val lines, tokenizer): every `val_every_nth` line goes to validation."""
    from seqlab.data import Tokenizer

    lines = corpus_lines(config.corpus, data_dir, task) if training else []
    val = lines[::config.val_every_nth]
    train = [ln for i, ln in enumerate(lines) if i % config.val_every_nth]
    tok = run_tokenizer(run_dir, (lambda: Tokenizer.train_wordpiece(train, config.vocab_size)) if training else None,
                        task=task)
    return train, val, tok


def save_pretrained(model: Any, tok: Any, out_dir: Path) -> dict:
    """RUN_DIR/pretrained/: the model's HF folder plus the run's tokenizer files."""
    if not hasattr(model, "save_pretrained"):
        return {}
    folder = Path(out_dir) / PRETRAINED_DIR
    model.save_pretrained(folder)
    tok.save(folder)
    return {"pretrained": str(folder)}


def chunked(n: int, batch_size: int, rng: np.random.Generator | None) -> list[np.ndarray]:
    order = rng.permutation(n) if rng is not None else np.arange(n)
    return [order[i:i + batch_size] for i in range(0, n, batch_size)]
