"""Sentence classification shared by every classifier task: batches, loss, accuracy, predictions.

A task supplies `encode` (sentences -> id lists) and `forward`
(model, ids (B, T), mask (B, T)) -> logits (B, C)); this file does the rest
the same way for all of them, so `seqlab eval` works for any classifier.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from seqlab import functional as F
from seqlab.train.tasks.base import Task, model_output

Encode = Callable[[Sequence[str]], list[list[int]]]
Forward = Callable[[Any, np.ndarray, np.ndarray], Any]


def default_forward(model: Any, ids: np.ndarray, mask: np.ndarray) -> Any:
    """Hugging Face's calling convention: model(input_ids, attention_mask=mask (1 = real)) -> logits."""
    return model_output(model(ids, attention_mask=mask))


def pad(seqs: Sequence[Sequence[int]], pad_id: int) -> tuple[np.ndarray, np.ndarray]:
    """Right-pad id lists: (ids, mask), int64 (B, T), mask 1 = real token."""
    T = max(1, max(len(s) for s in seqs))
    ids = np.full((len(seqs), T), pad_id, dtype=np.int64)  # (B, T)
    mask = np.zeros((len(seqs), T), dtype=np.int64)        # (B, T)
    for i, s in enumerate(seqs):
        ids[i, :len(s)] = s
        mask[i, :len(s)] = 1
    return ids, mask


def bucketed_order(lengths: np.ndarray, batch_size: int, rng: np.random.Generator, chunk: int = 50) -> list[np.ndarray]:
    """Shuffled batches of similar length: shuffle, sort inside chunks of chunk·batch_size, shuffle batches."""
    order = rng.permutation(len(lengths))
    batches: list[np.ndarray] = []
    for start in range(0, len(order), batch_size * chunk):
        idx = order[start:start + batch_size * chunk]
        idx = idx[np.argsort(lengths[idx], kind="stable")]
        batches.extend(idx[b:b + batch_size] for b in range(0, len(idx), batch_size))
    return [batches[i] for i in rng.permutation(len(batches))]


class TextClassification:
    """Sentences and integer labels -> the trainer's batches, loss, evaluation and predictions."""

    def __init__(self, encode: Encode, pad_id: int, batch_size: int, max_len: int,
                 forward: Forward = default_forward, eval_batch_size: int = 128):
        self.encode, self.pad_id, self.batch_size, self.max_len = encode, pad_id, batch_size, max_len
        self.forward, self.eval_batch_size = forward, eval_batch_size

    def ids(self, sentences: Sequence[str]) -> list[list[int]]:
        return [s[:self.max_len] for s in self.encode(list(sentences))]

    def batches(self, sentences: Sequence[str], labels: Sequence[int]) -> Callable[[int, np.random.Generator], list]:
        """The factory (epoch, rng) -> batches of {"ids", "mask", "labels"}, bucketed by length."""
        ids = self.ids(sentences)
        y = np.asarray(labels, dtype=np.int64)
        lengths = np.array([len(s) for s in ids])

        def factory(epoch: int, rng: np.random.Generator):
            for idx in bucketed_order(lengths, self.batch_size, rng):
                x, mask = pad([ids[i] for i in idx], self.pad_id)
                yield {"ids": x, "mask": mask, "labels": y[idx]}
        return factory

    def loss_fn(self, model: Any, batch: dict) -> tuple[Any, dict]:
        logits = self.forward(model, batch["ids"], batch["mask"])  # (B, C)
        return F.cross_entropy(logits, batch["labels"]), {"tokens": int(batch["mask"].sum())}

    def _logits(self, model: Any, ids: list[list[int]]) -> np.ndarray:
        """Logits (N, C) in the input order, computed in length-sorted batches (less padding)."""
        from seqlab import backend, no_grad

        order = np.argsort([len(s) for s in ids], kind="stable")
        out: list[np.ndarray] = [None] * len(ids)  # type: ignore[list-item]
        with no_grad():
            for b in range(0, len(order), self.eval_batch_size):
                idx = order[b:b + self.eval_batch_size]
                x, mask = pad([ids[i] for i in idx], self.pad_id)
                logits = backend.to_numpy(self.forward(model, x, mask).data)  # (B, C)
                for row, i in zip(logits, idx):
                    out[i] = row
        return np.stack(out).astype(np.float64)  # (N, C)

    def evaluate(self, sentences: Sequence[str], labels: Sequence[int], prefix: str = "val") -> Callable[[Any], dict]:
        """(model) -> {"val_loss", "val_acc"} on the given examples."""
        ids = self.ids(sentences)
        y = np.asarray(labels, dtype=np.int64)

        def run(model: Any) -> dict[str, float]:
            logits = self._logits(model, ids)                                        # (N, C)
            z = logits - logits.max(axis=1, keepdims=True)
            logp = z - np.log(np.exp(z).sum(axis=1, keepdims=True))                  # (N, C)
            return {f"{prefix}_loss": float(-logp[np.arange(len(y)), y].mean()),
                    f"{prefix}_acc": float((logits.argmax(1) == y).mean())}
        return run

    def predict(self, model: Any, sentences: Sequence[str]) -> np.ndarray:
        """Predicted labels (N,) int64."""
        was_training = model.training
        model.eval()
        try:
            return self._logits(model, self.ids(sentences)).argmax(1).astype(np.int64)
        finally:
            model.train(was_training)

    def task(self, model: Any, model_config: dict, train: Sequence[tuple[str, int]] | None = None,
             dev: Sequence[tuple[str, int]] = (), info: dict | None = None) -> Task:
        """The trainer's Task for `model`: `predict` always; with `train` rows [(sentence, label)] (None:
        inference only) also batches, loss, evaluation on `dev` and their sizes, then `info`, in `task.info`."""
        task = Task(model=model, model_config=model_config, predict=self.predict)
        if train is not None:
            task.batches = self.batches([s for s, _ in train], [y for _, y in train])
            task.loss_fn = self.loss_fn
            task.evaluate = self.evaluate([s for s, _ in dev], [y for _, y in dev])
            task.info = {"train_examples": len(train), "dev_examples": len(dev), **(info or {})}
        return task
