"""sst2-transformer: the chapter's exercise 1, a Transformer encoder classifier trained from scratch on SST-2.

WordPiece vocabulary trained on the training split (HF tokenizers), then
seqlab.models.classifier.TransformerClassifier: embeddings · √d + sinusoidal
positions -> Pre-LN encoder -> mean over real tokens -> linear.
Reference target: dev accuracy >= 0.82 within 20 minutes on 2 cores.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from seqlab.train.config import TrainConfig
from seqlab.train.tasks.base import Task, require
from seqlab.train.tasks.classify import TextClassification
from seqlab.train.tasks.text import run_tokenizer, sst2_splits

NAME = "sst2-transformer"
DESCRIPTION = "SST-2 sentiment, Transformer encoder from scratch (exercise 1)"


@dataclass
class Config(TrainConfig):
    max_steps: int = 8000
    batch_size: int = 64
    lr: float = 3e-4
    weight_decay: float = 0.1     # SST-2 overfits within minutes: regularise hard
    schedule: str = "warmup_cosine"
    warmup_steps: int = 400
    min_lr: float = 1e-5
    eval_every: int = 100         # the dev peak comes early; the best checkpoint keeps it
    checkpoint_every: int = 250
    log_every: int = 10
    metric: str = "val_acc"
    metric_mode: str = "max"
    max_minutes: float = 20.0
    vocab_size: int = 10000       # WordPiece vocabulary trained on the training split
    max_len: int = 64             # tokens per sentence ([CLS] ... [SEP]); longer ones are cut
    d_model: int = 128
    nhead: int = 4
    num_layers: int = 2
    dim_feedforward: int = 512
    dropout: float = 0.3
    positional: str = "rope"      # 0.822 dev vs 0.815 with sinusoidal (docs/results.md)
    pooling: str = "mean"
    max_train_examples: int = 0   # 0 = all 67,349 rows (smaller for quick runs)
    max_dev_examples: int = 0


def build(config: Config, run_dir: Path | None = None, data_dir: Path | None = None, training: bool = True) -> Task:
    TransformerClassifier = require("seqlab.models.classifier", "TransformerClassifier", NAME)
    ClassifierConfig = require("seqlab.models.classifier", "ClassifierConfig", NAME)
    train, dev = sst2_splits(data_dir, config.max_train_examples, config.max_dev_examples, NAME) if training else ([], [])
    Tokenizer = require("seqlab.data", "Tokenizer", NAME)
    tok = run_tokenizer(run_dir, (lambda: Tokenizer.train_wordpiece([s for s, _ in train], config.vocab_size))
                        if training else None, task=NAME)
    model = TransformerClassifier(ClassifierConfig(
        vocab_size=tok.vocab_size, num_labels=2, d_model=config.d_model, nhead=config.nhead,
        num_layers=config.num_layers, dim_feedforward=config.dim_feedforward, dropout=config.dropout,
        max_len=config.max_len, positional=config.positional, pooling=config.pooling,
        pad_token_id=tok.pad_token_id))
    clf = TextClassification(tok.encode_batch, tok.pad_token_id, config.batch_size, config.max_len)
    model_config = {**model.config.to_dict(), "num_classes": 2}
    task = Task(model=model, model_config=model_config, predict=clf.predict)
    if training:
        task.batches = clf.batches([s for s, _ in train], [y for _, y in train])
        task.loss_fn = clf.loss_fn
        task.evaluate = clf.evaluate([s for s, _ in dev], [y for _, y in dev])
        task.info = {"train_examples": len(train), "dev_examples": len(dev), "vocab_size": tok.vocab_size}
    return task
