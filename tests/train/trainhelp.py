"""Helpers for the trainer tests (imported as a module: tests/train has no __init__.py)."""
from __future__ import annotations

from seqlab.train import runs
from seqlab.train.metrics import read_metrics, train_losses


def toy(out, resume: bool = False, callbacks=(), **settings):
    """Train toy-classifier into `out` with `settings` (quiet); returns the TrainResult."""
    layers = [(settings, "test")] if settings else []
    return runs.train(None if resume else "toy-classifier", out, layers, resume=resume, callbacks=callbacks)


def logged_losses(run_dir) -> dict[int, float]:
    return train_losses(read_metrics(run_dir / "metrics.jsonl"))


def interrupt_at(step):
    """A trainer callback that raises KeyboardInterrupt (as Ctrl-C would) after optimizer step `step`."""
    def cb(trainer, row):
        if row["step"] == step:
            raise KeyboardInterrupt
    return cb
