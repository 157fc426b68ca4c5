"""The task registry: `seqlab train TASK` looks TASK up here (name -> module in this folder).

Each module exposes NAME, DESCRIPTION, a `Config` dataclass (subclass of
`TrainConfig`) and ``build(config, run_dir, data_dir, training) -> Task``;
see `seqlab.train.tasks.base`.
"""
from __future__ import annotations

import importlib
from types import ModuleType

from seqlab.errors import ConfigError
from seqlab.train.tasks.base import Task, TaskUnavailable

TASKS = {
    "toy-classifier": "seqlab.train.tasks.toy_classifier",
    "sst2-transformer": "seqlab.train.tasks.sst2_transformer",
    "sst2-lstm": "seqlab.train.tasks.sst2_lstm",
    "sst2-bert": "seqlab.train.tasks.sst2_bert",
    "shakespeare-gpt": "seqlab.train.tasks.shakespeare_gpt",
    "mlm-pretrain": "seqlab.train.tasks.mlm_pretrain",
    "clm-pretrain": "seqlab.train.tasks.clm_pretrain",
    "multi30k-rnn": "seqlab.train.tasks.multi30k_rnn",
    "multi30k-transformer": "seqlab.train.tasks.multi30k_transformer",
}


def get_task(name: str) -> ModuleType:
    """The task module registered as `name`; ConfigError listing the tasks otherwise."""
    if name not in TASKS:
        raise ConfigError(f"unknown task {name!r}; choose one of: {', '.join(TASKS)}")
    return importlib.import_module(TASKS[name])


__all__ = ["TASKS", "Task", "TaskUnavailable", "get_task"]
