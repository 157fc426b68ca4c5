"""What sst2-transformer and sst2-lstm share: trainer defaults, the run's WordPiece vocabulary, the Task.

Both train from scratch on the same data, vocabulary and budget, so that
their dev accuracies compare; only the model differs.
"""
from __future__ import annotations

from typing import ClassVar

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from seqlab.train.config import TrainConfig
from seqlab.train.tasks.base import Task, require
from seqlab.train.tasks.classify import TextClassification
from seqlab.train.tasks.text import run_tokenizer, sst2_splits


@dataclass
class ScratchConfig(TrainConfig):
    """The trainer defaults of both tasks; each task's Config adds its model's fields."""

    batch_size: int = 64
    schedule: str = "warmup_cosine"
    min_lr: float = 1e-5
    checkpoint_every: int = 250
    log_every: int = 10
    metric: str = "val_acc"
    metric_mode: str = "max"
    # what the task's evaluation returns: a misspelled metric is refused before training, not at the first evaluation
    CHOICES: ClassVar = {"metric": ("val_acc", "val_loss")}
    GRADIENT_CHECKPOINTING: ClassVar = False  # TransformerClassifier and the BiLSTM have none
    max_minutes: float = 20.0


def build_scratch_task(config: Any, run_dir: Path | None, data_dir: Path | None, training: bool, task: str,
                       make_model: Callable[[Any], tuple[Any, dict]]) -> Task:
    """SST-2 rows, the run's WordPiece vocabulary (trained on the training sentences, else read from
    RUN_DIR/tokenizer), then `make_model(tokenizer) -> (model, model_config)` and its classification Task.

    `config` needs vocab_size, max_len, batch_size, max_train_examples and max_dev_examples.
    """
    train, dev = (sst2_splits(data_dir, config.max_train_examples, config.max_dev_examples, task) if training
                  else ([], []))
    Tokenizer = require("seqlab.data", "Tokenizer", task)
    tok = run_tokenizer(run_dir, (lambda: Tokenizer.train_wordpiece([s for s, _ in train], config.vocab_size))
                        if training else None, task=task)
    model, model_config = make_model(tok)
    clf = TextClassification(tok.encode_batch, tok.pad_token_id, config.batch_size, config.max_len)
    return clf.task(model, model_config, train if training else None, dev, info={"vocab_size": tok.vocab_size})
