"""Run folders: start, resume, reload for inference and describe a registered task's run.

A run folder holds ``config.json`` (task, settings, model config; written
when the run starts), the task's artifacts (e.g. ``tokenizer/``),
``checkpoints/``, ``best/``, ``metrics.jsonl``, ``curves.png`` and, once
training returns, ``summary.json``.

Which weights: with ``ema_decay > 0`` every evaluation the trainer reports
is of the moving average of the weights, and so are ``best/`` and what
`load_run` loads (``best``: best/model.safetensors; ``latest``: the latest
checkpoint's ema.safetensors over its model.safetensors) and what the
task's `finish` sees after training (e.g. the exported model).
"""
from __future__ import annotations

import dataclasses
import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping

import seqlab
from seqlab.errors import CheckpointError, ConfigError
from seqlab.folders import make_folder, missing_folders, remove_if_empty
from seqlab.train.checkpoint import (Checkpoint, latest_checkpoint, load_best, load_checkpoint, read_json,
                                     write_json_atomic)
from seqlab.train.config import RESUMABLE_KEYS, build_config, make_optimizer, make_schedule
from seqlab.train.loop import Trainer, TrainResult
from seqlab.train.tasks import get_task
from seqlab.train.tasks.base import Task
from seqlab.train.tasks.text import TOKENIZER_DIR

RUN_FORMAT = "seqlab-run/1"
RUN_CONFIG = "config.json"
SUMMARY = "summary.json"


@dataclass
class Run:
    """A run folder read back: its task module, settings and (for inference) the loaded task."""

    run_dir: Path
    task_name: str
    config: Any
    record: dict                      # config.json
    task: Task | None = None
    checkpoint: str | None = None     # which weights the model holds ("best" / "step-000100")
    step: int | None = None


def _writable(out: Path) -> None:
    make_folder(out)
    if not os.access(out, os.W_OK | os.X_OK):
        raise CheckpointError(f"the output folder {out} is not writable")


def _run_record(run_dir: Path) -> dict:
    path = run_dir / RUN_CONFIG
    if not path.exists():
        latest = latest_checkpoint(run_dir)
        if latest is None:
            raise CheckpointError(f"{run_dir} is not a seqlab run folder ({RUN_CONFIG} is missing)")
        path = latest / "config.json"
    record = read_json(path)
    if not isinstance(record.get("task"), str) or not isinstance(record.get("config"), dict):
        raise CheckpointError(f"{path}: expected the keys 'task' and 'config'")
    return record


class _Undo:
    """What a new run writes into its folder before training starts, so that a failure there leaves the folder
    as it was: the entries the run adds are removed again, then the folders it created while empty.

    A vocabulary left by an earlier start that failed before its first checkpoint (built from other settings,
    perhaps) is moved aside, not reused unseen: the run builds its own, and the old one comes back if the run
    fails before training (and is deleted once it starts). Only the process that writes (rank 0) touches files.
    """

    def __init__(self, out: Path, created: list[Path], owner: bool = True):
        self.out, self.created, self.owner = out, created, owner
        self.stale: Path | None = None
        if owner and (out / TOKENIZER_DIR).exists():
            self.stale = out / f".stale-{TOKENIZER_DIR}-{os.getpid()}"
            shutil.rmtree(self.stale, ignore_errors=True)
            os.replace(out / TOKENIZER_DIR, self.stale)
        self.before = set(os.listdir(out)) if owner else set()  # the stale vocabulary among them, under its new name

    def revert(self) -> None:
        if self.owner:
            for name in set(os.listdir(self.out)) - self.before:
                path = self.out / name
                if path.is_dir() and not path.is_symlink():
                    shutil.rmtree(path, ignore_errors=True)
                else:
                    path.unlink(missing_ok=True)
            if self.stale is not None:
                os.replace(self.stale, self.out / TOKENIZER_DIR)
        remove_if_empty(self.created)

    def commit(self) -> None:
        if self.stale is not None:
            shutil.rmtree(self.stale, ignore_errors=True)


def resolve_config(task_name: str, layers: Iterable[tuple[Mapping[str, Any], str]]) -> Any:
    return build_config(get_task(task_name).Config, *layers)


def train(task_name: str | None, out: str | Path, layers: Iterable[tuple[Mapping[str, Any], str]] = (), *,
          resume: bool = False, data_dir: str | Path | None = None, progress: bool | str = False,
          distributed: Any = None, callbacks: Iterable = ()) -> TrainResult:
    """Train `task_name` into `out` (layers: (settings, source) overriding the task's defaults).

    With ``resume=True`` the settings come from the run folder; layers may
    change only `RESUMABLE_KEYS` (anything else must equal the saved value),
    and without `data_dir` the run's own dataset folder is used again.
    `progress` is the `Trainer`'s: True (a bar, lines above it), "lines" or False.
    """
    out = Path(out)
    layers = list(layers)
    ckpt: Checkpoint | None = None
    undo: _Undo | None = None  # what a new run wrote, removed again if it fails before training starts
    if resume:
        if latest_checkpoint(out) is None:
            raise CheckpointError(f"--resume: {out} has no checkpoint to resume from "
                                  f"({out / 'checkpoints' / 'latest'} is missing)")
        record = _run_record(out)
        if task_name is not None and task_name != record["task"]:
            raise ConfigError(f"conflicting options: task {task_name!r} but {out} is a {record['task']!r} run")
        task_name = record["task"]
        saved = record["config"]
        if data_dir is None and record.get("data_dir") and Path(record["data_dir"]).is_dir():
            data_dir = record["data_dir"]  # the dataset folder the run was started with
        changes: dict[str, Any] = {}
        module = get_task(task_name)
        # A setting newer than the run (e.g. ema_decay) counts as its default, the value the run had.
        defaults = dataclasses.asdict(module.Config())
        for values, source in layers:
            typed = build_config(module.Config, (saved, f"{out / RUN_CONFIG}"), (values, source)).to_dict()
            for key in values:
                before = saved.get(key, defaults.get(key))
                if typed[key] != before and key not in RESUMABLE_KEYS:
                    raise ConfigError(f"conflicting options: {source} sets {key}={typed[key]!r} but the run was "
                                      f"started with {key}={before!r}; a resumed run keeps its settings "
                                      f"(only {', '.join(sorted(RESUMABLE_KEYS))} may change)")
                changes[key] = typed[key]
        config = resolve_config(task_name, [(saved, str(out / RUN_CONFIG)), (changes, "overrides")])
        ckpt = load_checkpoint(out)
        fixed = lambda d: {k: v for k, v in {**defaults, **d}.items() if k not in RESUMABLE_KEYS}  # noqa: E731
        if ckpt.config.get("task") != task_name or fixed(ckpt.config.get("config", {})) != fixed(saved):
            raise CheckpointError(f"{ckpt.path}/config.json does not match {out / RUN_CONFIG}; refusing to resume")
        _check_budget_left(config, ckpt)
    else:
        if task_name is None:
            raise ConfigError("a task name is needed to start a run")
        config = resolve_config(task_name, layers)  # every setting checked before anything is written
        created = missing_folders(out)  # removed again if the run fails before it starts, while still empty
        _writable(out)
        latest = latest_checkpoint(out)
        if latest is not None:
            raise ConfigError(f"{out} already holds a run (checkpoint {latest.name}); pass --resume to continue it "
                              f"or choose another --out")
        undo = _Undo(out, created, owner=distributed is None or distributed.is_main)
    try:
        module = get_task(task_name)
        seqlab.manual_seed(config.seed)
        if distributed is not None and not distributed.is_main:
            distributed.barrier()  # data-parallel: rank 0 creates the run's artifacts (vocabulary) first ...
        task = module.build(config, out, Path(data_dir) if data_dir else None, True)
        if distributed is not None and distributed.is_main:
            distributed.barrier()  # ... and the other ranks read them back
        if task.batches is None or task.loss_fn is None:
            raise ConfigError(f"task {task_name!r} cannot be trained (no batches or loss)")
        record = {"format": RUN_FORMAT, "task": task_name, "config": config.to_dict(),
                  "model_config": task.model_config, "info": task.info,
                  "parameters": int(task.model.num_parameters()),
                  "data_dir": str(Path(data_dir).resolve()) if data_dir else None}  # --resume needs no --data-dir
        d_model = task.model_config.get("d_model") if isinstance(task.model_config, dict) else None
        # the Trainer refuses what it cannot do (e.g. gradient checkpointing) before config.json is written
        trainer = Trainer(task.model, task.optimizer_factory or make_optimizer(config), task.batches, task.loss_fn,
                          config, out, schedule=task.schedule or make_schedule(config, d_model),
                          evaluate=task.evaluate, run_config={k: record[k] for k in ("task", "config", "model_config")},
                          distributed=distributed, progress=progress, callbacks=callbacks)
        write_json_atomic(out / RUN_CONFIG, record)
    except BaseException:
        if undo is not None:
            undo.revert()
        raise
    if undo is not None:
        undo.commit()
    result = trainer.fit(resume=ckpt)
    extra: dict[str, Any] = {}
    if task.finish is not None and result.stopped != "interrupted" and trainer.dist.is_main:
        if trainer.ema is not None:  # the weights every evaluation reported are the ones finish uses
            trainer.ema.copy_to_params()
        task.progress = progress is True  # finish's bars (beam search over the test set) with the trainer's
        extra = task.finish(task.model, out) or {}
        result.extra = dict(extra)
    if trainer.dist.is_main:
        summary = {k: v for k, v in dataclasses.asdict(result).items() if k != "losses"}
        summary.update(task=task_name, checkpoint=str(result.checkpoint) if result.checkpoint else None, **extra)
        write_json_atomic(out / SUMMARY, json.loads(json.dumps(summary, default=str)))
    return result


def _check_budget_left(config, ckpt: Checkpoint) -> None:
    """Refuse a resume that could take no step: the time budget, summed over the run's resumes, already spent."""
    spent = float(ckpt.state.get("elapsed_s", 0.0))
    step = int(ckpt.state.get("step", 0))
    if config.max_minutes and spent >= config.max_minutes * 60 and step < config.max_steps:
        raise ConfigError(f"the run's time budget of {config.max_minutes:g} min is spent ({spent / 60:.3g} min "
                          f"so far, step {step} of {config.max_steps}); budgets add up over resumes: resume with "
                          f"a larger --max-minutes, or --max-minutes 0 for no limit")


def load_run(run_dir: str | Path, which: str = "best", data_dir: str | Path | None = None) -> Run:
    """A run's task built for inference, its model holding the best (or latest) weights, in eval mode."""
    run_dir = Path(run_dir)
    if run_dir.exists() and not run_dir.is_dir():
        raise CheckpointError(f"{run_dir} is a file, not a run folder")
    if not run_dir.is_dir():
        raise CheckpointError(f"run folder {run_dir} does not exist")
    if which not in ("best", "latest"):
        raise ConfigError(f"checkpoint must be 'best' or 'latest', got {which!r}")
    record = _run_record(run_dir)
    module = get_task(record["task"])
    config = build_config(module.Config, (record["config"], str(run_dir / RUN_CONFIG)))
    seqlab.manual_seed(config.seed)
    task = module.build(config, run_dir, Path(data_dir) if data_dir else None, False)
    best = load_best(run_dir) if which == "best" else None
    if best is not None:
        state, info = best
        name, step = "best", info.get("step")
        task.model.load_state_dict(state)
    else:
        ckpt = load_checkpoint(run_dir, with_optimizer=False)
        name, step = ckpt.path.name, ckpt.step
        task.model.load_state_dict(ckpt.model_state)
        if ckpt.ema_state:  # the averaged weights, the ones the trainer evaluated (buffers stay the model's)
            unexpected = task.model.load_state_dict(ckpt.ema_state, strict=False).unexpected_keys
            if unexpected:
                raise CheckpointError(f"{ckpt.path / 'ema.safetensors'} holds weights the model does not have: "
                                      f"{', '.join(unexpected)}")
            name += " (EMA)"
    task.model.eval()
    return Run(run_dir, record["task"], config, record, task, name, step)


def describe(run_dir: str | Path) -> dict[str, Any]:
    """What `seqlab info` shows: task, settings, steps, best metric, parameter count, last evaluation."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise CheckpointError(f"run folder {run_dir} does not exist")
    record = _run_record(run_dir)
    out: dict[str, Any] = {"run_dir": str(run_dir), "task": record["task"], "config": record["config"],
                           "model_config": record.get("model_config"), "parameters": record.get("parameters"),
                           "info": record.get("info", {})}
    latest = latest_checkpoint(run_dir)
    if latest is not None:
        state = read_json(latest / "state.json")
        trainer = state.get("trainer", {})
        out.update(step=state.get("step"), epoch=trainer.get("epoch"), checkpoint=latest.name,
                   elapsed_s=trainer.get("elapsed_s"), last_eval=trainer.get("last_eval"))
    else:
        out.update(step=0, checkpoint=None)
    best = run_dir / "best" / "best.json"
    if best.exists():
        b = read_json(best)
        out["best"] = {"metric": b.get("metric"), "value": b.get("value"), "step": b.get("step")}
    if (run_dir / SUMMARY).exists():
        out["stopped"] = read_json(run_dir / SUMMARY).get("stopped")
    return out
