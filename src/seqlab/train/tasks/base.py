"""What a task gives the trainer (`Task`), and `require` for the layers a task imports lazily.

A task module (one per task, in this folder) exposes::

    NAME: str, DESCRIPTION: str
    Config            a dataclass subclassing seqlab.train.config.TrainConfig (the task's defaults)
    build(config, run_dir, data_dir, training) -> Task

`build` creates the run's artifacts (e.g. a vocabulary) in `run_dir` when
they are missing and reads them back otherwise, so resuming and `seqlab
eval` see the same ids. With ``training=False`` it loads no training data
(only what inference needs). It imports other layers' modules inside the
function, so the registry loads even when a model is not in this build.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np

from seqlab.errors import SeqlabError


class TaskUnavailable(SeqlabError):
    """A task needs a module or class that this build of seqlab does not have (yet)."""


@dataclass
class Task:
    model: Any                                              # a seqlab.nn.Module
    model_config: dict                                      # JSON-able description of the model
    batches: Callable[[int, np.random.Generator], Any] | None = None   # (epoch, rng) -> batches
    loss_fn: Callable[[Any, Any], Any] | None = None        # (model, batch) -> loss | (loss, stats)
    evaluate: Callable[[Any], dict[str, float]] | None = None
    predict: Callable[[Any, list[str]], np.ndarray] | None = None      # classifiers: sentences -> labels
    schedule: Callable[[int], float] | None = None          # None: from the config
    optimizer_factory: Callable[[Any], Any] | None = None   # None: from the config
    finish: Callable[[Any, Path], dict] | None = None       # after training, e.g. write a sample
    info: dict = field(default_factory=dict)                # sizes worth showing (vocabulary, examples)
    progress: bool = False                                  # set by the run: finish may show a bar (stderr)


def require(module: str, attr: str | None = None, task: str = "") -> Any:
    """Import `module` (and get `attr`), or raise TaskUnavailable saying what is missing."""
    who = f"task {task!r} needs " if task else "needs "
    try:
        mod = importlib.import_module(module)
    except ModuleNotFoundError as e:
        if e.name and (module == e.name or module.startswith(e.name + ".")):
            raise TaskUnavailable(f"{who}{module}, which this build of seqlab does not have") from None
        raise
    if attr is None:
        return mod
    if not hasattr(mod, attr):
        raise TaskUnavailable(f"{who}{module}.{attr}, which this build of seqlab does not have")
    return getattr(mod, attr)


def model_output(out: Any, name: str = "logits") -> Any:
    """The logits of a model's return value: a Tensor, an object with `.logits`, or a tuple."""
    if hasattr(out, name) and not hasattr(out, "backward"):
        return getattr(out, name)
    if isinstance(out, dict):
        return out[name]
    if isinstance(out, tuple):
        return out[0]
    return out
