"""toy-classifier: synthetic sentiment sentences and a bag-of-words MLP, trained in seconds.

It exercises the whole training machinery (resume, checkpoints, NaN stop,
Ctrl-C, `seqlab eval`) with nothing but seqlab.nn: sentences mix filler words
with positive and negative words, the label says which kind is in the
majority, and the model averages word embeddings (padding masked out) and
applies a two-layer MLP with dropout.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, Sequence

import numpy as np

from seqlab import nn
from seqlab.train.config import COUNT, PROBABILITY, Bound, TrainConfig
from seqlab.train.tasks.base import Task
from seqlab.train.tasks.classify import TextClassification

NAME = "toy-classifier"
DESCRIPTION = "synthetic sentiment sentences, bag-of-words MLP (seconds; for tests and demos)"

POSITIVE = ("good", "great", "fine", "lovely", "superb", "fun", "moving", "smart", "charming", "solid")
NEGATIVE = ("bad", "awful", "dull", "boring", "weak", "messy", "flat", "tired", "silly", "poor")
FILLER = ("the", "a", "movie", "film", "plot", "actor", "story", "is", "was", "and", "very", "quite",
          "this", "scene", "cast", "ending", "script", "its", "with", "but")
PAD, UNK = "[PAD]", "[UNK]"
VOCAB = (PAD, UNK) + tuple(sorted(POSITIVE + NEGATIVE + FILLER))


@dataclass
class Config(TrainConfig):
    max_steps: int = 80
    batch_size: int = 32
    lr: float = 0.01
    eval_every: int = 20
    checkpoint_every: int = 20
    metric: str = "val_acc"
    metric_mode: str = "max"
    # what the task's evaluation returns: a misspelled metric is refused before training, not at the first evaluation
    CHOICES: ClassVar = {"metric": ("val_acc", "val_loss")}
    dim: int = 16                 # word embedding size
    hidden: int = 32              # MLP hidden units
    dropout: float = 0.1
    n_train: int = 2000
    n_dev: int = 300
    data_seed: int = 1234         # the synthetic data set (independent of `seed`)
    nan_at_step: int = 0          # fault injection for tests: the loss of this step is NaN (0 = never)

    GRADIENT_CHECKPOINTING: ClassVar = False  # a bag-of-words MLP
    BOUNDS: ClassVar = {**dict.fromkeys(("dim", "hidden", "n_train", "n_dev"), COUNT), "dropout": PROBABILITY,
                        "data_seed": Bound(0), "nan_at_step": Bound(0, note="0 = never")}


class BagOfWords(nn.Module):
    """ids (B, T), mask (B, T) -> logits (B, C): masked mean of embeddings, Linear-ReLU-Dropout-Linear."""

    def __init__(self, vocab_size: int, dim: int, hidden: int, num_classes: int = 2, dropout: float = 0.1):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, dim, padding_idx=0)
        self.fc1 = nn.Linear(dim, hidden)
        self.drop = nn.Dropout(dropout)
        self.fc2 = nn.Linear(hidden, num_classes)

    def forward(self, input_ids, attention_mask=None):
        from seqlab import Tensor

        x = self.embed(input_ids)                                     # (B, T, D)
        mask = np.ones(x.shape[:2]) if attention_mask is None else np.asarray(attention_mask)
        m = Tensor(mask[..., None].astype(x.dtype))                   # (B, T, 1)
        pooled = (x * m).sum(dim=1) / m.sum(dim=1).clamp(min=1.0)     # (B, D)
        return self.fc2(self.drop(self.fc1(pooled).relu()))          # (B, C)


def make_data(n: int, rng: np.random.Generator) -> tuple[list[str], list[int]]:
    """n sentences of 4-12 words; label 1 when positive words outnumber negative ones."""
    sentences, labels = [], []
    while len(sentences) < n:
        n_pos, n_neg = rng.integers(0, 4, size=2)
        if n_pos == n_neg:
            continue
        words = list(rng.choice(FILLER, size=int(rng.integers(3, 9))))
        words += list(rng.choice(POSITIVE, size=int(n_pos))) + list(rng.choice(NEGATIVE, size=int(n_neg)))
        rng.shuffle(words)
        sentences.append(" ".join(words))
        labels.append(int(n_pos > n_neg))
    return sentences, labels


def encode(sentences: Sequence[str]) -> list[list[int]]:
    index = {w: i for i, w in enumerate(VOCAB)}
    return [[index.get(w, 1) for w in s.lower().split()] or [1] for s in sentences]


def build(config: Config, run_dir: Path | None = None, data_dir: Path | None = None, training: bool = True) -> Task:
    model = BagOfWords(len(VOCAB), config.dim, config.hidden, 2, config.dropout)
    clf = TextClassification(encode, pad_id=0, batch_size=config.batch_size, max_len=64)
    model_config = {"vocab_size": len(VOCAB), "dim": config.dim, "hidden": config.hidden, "num_classes": 2,
                    "dropout": config.dropout}
    task = Task(model=model, model_config=model_config, predict=clf.predict)
    if not training:
        return task
    rng = np.random.default_rng(config.data_seed)
    train_x, train_y = make_data(config.n_train, rng)
    dev_x, dev_y = make_data(config.n_dev, rng)
    plain = clf.batches(train_x, train_y)
    n_batches = -(-len(train_x) // config.batch_size)

    def batches(epoch: int, rng: np.random.Generator):
        for i, batch in enumerate(plain(epoch, rng)):
            step = (epoch * n_batches + i) // config.grad_accum + 1
            yield {**batch, "poison": step == config.nan_at_step}

    def loss_fn(model, batch):
        loss, stats = clf.loss_fn(model, batch)
        return (loss * float("nan") if batch["poison"] else loss), stats

    task.batches, task.loss_fn, task.evaluate = batches, loss_fn, clf.evaluate(dev_x, dev_y)
    task.info = {"train_examples": len(train_x), "dev_examples": len(dev_x), "vocab_size": len(VOCAB)}
    return task
