"""Training configuration: one validated dataclass per task, filled from defaults, TOML and --set.

Every task's ``Config`` subclasses `TrainConfig`, so the trainer's settings
(steps, batch size, optimizer, schedule, evaluation, checkpoints, early
stopping, time budget) and the task's own (model sizes, vocabulary, data)
live in one flat namespace: ``--set lr=3e-4 --set d_model=256``. Values are
converted by the field's type, never evaluated; an unknown key is an error
that names it and lists the valid ones.
"""
from __future__ import annotations

import dataclasses
import math
import tomllib
import typing
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping

from seqlab.errors import ConfigError

OPTIMIZERS = ("adamw", "adam", "sgd")
SCHEDULES = ("constant", "warmup_linear", "warmup_cosine", "inverse_sqrt")

# Settings that may change when a run is resumed: they steer the run, not the numbers it computes.
RESUMABLE_KEYS = frozenset({"max_minutes", "checkpoint_every", "keep_checkpoints", "log_every"})


@dataclass
class TrainConfig:
    """The trainer's settings; tasks subclass it and change the defaults."""

    seed: int = 0                     # model init, dropout and data order
    max_steps: int = 1000             # optimizer steps (each of grad_accum micro-batches)
    batch_size: int = 32              # examples per micro-batch
    grad_accum: int = 1               # micro-batches per optimizer step
    optimizer: str = "adamw"          # adamw | adam | sgd
    lr: float = 1e-3                  # peak learning rate
    weight_decay: float = 0.01        # applied to matrices only (>= 2-D), as nanoGPT and HF do
    beta1: float = 0.9
    beta2: float = 0.999
    momentum: float = 0.0             # sgd only
    schedule: str = "constant"        # constant | warmup_linear | warmup_cosine | inverse_sqrt
    warmup_steps: int = 0
    min_lr: float = 0.0               # warmup_cosine decays to this
    clip_grad_norm: float = 1.0       # 0 = no clipping
    eval_every: int = 100             # steps between evaluations (0 = only at the end)
    checkpoint_every: int = 100       # steps between checkpoints (0 = only at the end / on Ctrl-C)
    keep_checkpoints: int = 2         # older checkpoint folders are deleted
    log_every: int = 1                # steps between rows of metrics.jsonl
    metric: str = "val_loss"          # evaluation metric for the best checkpoint and early stopping
    metric_mode: str = "min"          # min | max
    patience: int = 0                 # evaluations without improvement before stopping (0 = never)
    max_minutes: float = 0.0          # training time budget, summed over resumes (0 = none)
    ema_decay: float = 0.0            # evaluate an EMA of the weights, e.g. 0.999 (0 = off; see Trainer)

    def __post_init__(self) -> None:
        for name in ("max_steps", "batch_size", "grad_accum", "keep_checkpoints", "log_every"):
            if getattr(self, name) < 1:
                raise ConfigError(f"{name} must be >= 1, got {getattr(self, name)}")
        for name in ("eval_every", "checkpoint_every", "patience", "warmup_steps"):
            if getattr(self, name) < 0:
                raise ConfigError(f"{name} must be >= 0, got {getattr(self, name)}")
        for name in ("lr", "weight_decay", "min_lr", "clip_grad_norm", "max_minutes", "momentum"):
            v = getattr(self, name)
            if not (math.isfinite(v) and v >= 0):
                raise ConfigError(f"{name} must be a finite number >= 0, got {v}")
        if not (0 <= self.beta1 < 1 and 0 <= self.beta2 < 1):
            raise ConfigError(f"beta1 and beta2 must be in [0, 1), got {self.beta1}, {self.beta2}")
        if not 0 <= self.ema_decay < 1:  # also refuses NaN
            raise ConfigError(f"ema_decay must be in [0, 1) (0 = no weight averaging), got {self.ema_decay}")
        if self.optimizer not in OPTIMIZERS:
            raise ConfigError(f"optimizer must be one of {', '.join(OPTIMIZERS)}, got {self.optimizer!r}")
        if self.schedule not in SCHEDULES:
            raise ConfigError(f"schedule must be one of {', '.join(SCHEDULES)}, got {self.schedule!r}")
        if self.metric_mode not in ("min", "max"):
            raise ConfigError(f"metric_mode must be 'min' or 'max', got {self.metric_mode!r}")

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


# ---------------------------------------------------------------- building configs

def field_types(cls: type) -> dict[str, type]:
    """Field name -> Python type (int, float, bool or str) of a config dataclass."""
    hints = typing.get_type_hints(cls)
    return {f.name: hints[f.name] for f in dataclasses.fields(cls)}


def coerce(key: str, value: Any, kind: type, source: str) -> Any:
    """Convert a TOML value or a --set string to the field's type; ConfigError naming the key otherwise."""
    def bad(why: str = "") -> ConfigError:
        return ConfigError(f"{source}: {key} expects {kind.__name__}, got {value!r}{why}")

    if isinstance(value, str) and kind is not str:
        text = value.strip()
        if kind is bool:
            low = text.lower()
            if low in ("true", "1", "yes", "on"):
                return True
            if low in ("false", "0", "no", "off"):
                return False
            raise bad()
        try:
            value = float(text) if kind is float or not text.lstrip("+-").isdigit() else int(text)
        except ValueError:
            raise bad() from None
    if kind is bool:
        if isinstance(value, bool):
            return value
        raise bad()
    if kind is int:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise bad()
        if isinstance(value, float) and not value.is_integer():
            raise bad(" (not a whole number)")
        return int(value)
    if kind is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise bad()
        return float(value)
    if kind is str:
        if not isinstance(value, str):
            raise bad()
        return value
    raise bad()  # pragma: no cover - configs only hold the four kinds above


def check_keys(cls: type, keys, source: str) -> None:
    valid = field_types(cls)
    for key in keys:
        if key not in valid:
            raise ConfigError(f"unknown setting {key!r} in {source}; valid settings: {', '.join(sorted(valid))}")


def build_config(cls: type, *layers: tuple[Mapping[str, Any], str]) -> Any:
    """The dataclass `cls` from its defaults overridden by each (values, source name) layer in turn."""
    types = field_types(cls)
    values: dict[str, Any] = {}
    for mapping, source in layers:
        check_keys(cls, mapping, source)
        for key, value in mapping.items():
            values[key] = coerce(key, value, types[key], source)
    return cls(**values)


def read_toml(path: str | Path) -> dict[str, Any]:
    """A TOML file's settings; tables (e.g. ``[model]``, ``[train]``) only group keys and are flattened."""
    path = Path(path)
    try:
        with path.open("rb") as f:
            data = tomllib.load(f)
    except OSError as e:
        raise ConfigError(f"cannot read config file {path}: {e.strerror or e}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise ConfigError(f"{path}: not valid TOML ({e})") from None
    flat: dict[str, Any] = {}
    for key, value in data.items():
        items = value.items() if isinstance(value, dict) else [(key, value)]
        for k, v in items:
            if isinstance(v, dict):
                raise ConfigError(f"{path}: table [{key}.{k}] is nested too deeply; use flat keys or one level of tables")
            if k in flat:
                raise ConfigError(f"{path}: setting {k!r} is given twice")
            flat[k] = v
    return flat


def parse_set(items: list[str]) -> dict[str, str]:
    """``["lr=3e-4", "d_model=256"]`` -> ``{"lr": "3e-4", "d_model": "256"}`` (strings; typed later)."""
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"--set expects KEY=VALUE, got {item!r}")
        out[key.strip()] = value.strip()
    return out


def to_toml(values: Mapping[str, Any]) -> str:
    """Flat settings as TOML text (what --config reads back)."""
    import json

    def fmt(v: Any) -> str:
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, float):
            return repr(v) if math.isfinite(v) else ("nan" if v != v else ("inf" if v > 0 else "-inf"))
        return json.dumps(v) if isinstance(v, str) else str(v)
    return "".join(f"{k} = {fmt(v)}\n" for k, v in values.items())


# ---------------------------------------------------------------- optimizer and schedule

def make_optimizer(config: TrainConfig, lr_scale: Callable[[str], float] | None = None) -> Callable[[Any], Any]:
    """A factory model -> optimizer; weight decay only on parameters with >= 2 dims (no biases, norms).

    `lr_scale(name)` multiplies the learning rate of the parameter called `name` (layer-wise decay);
    parameters that share a scale share a group, the largest scale first (the group the bar shows).
    """
    from seqlab import optim

    def factory(model):
        named = list(model.named_parameters()) if lr_scale else [("", p) for p in model.parameters()]
        keyed: dict[tuple[float, bool], list] = {}
        for name, p in named:
            keyed.setdefault((lr_scale(name) if lr_scale else 1.0, p.ndim >= 2), []).append(p)
        groups = [{"params": ps, "weight_decay": config.weight_decay if decay else 0.0,
                   "lr": config.lr * scale}
                  for (scale, decay), ps in sorted(keyed.items(), key=lambda kv: (-kv[0][0], not kv[0][1]))]
        if config.optimizer == "sgd":
            return optim.SGD(groups, lr=config.lr, momentum=config.momentum)
        cls = optim.AdamW if config.optimizer == "adamw" else optim.Adam
        return cls(groups, lr=config.lr, betas=(config.beta1, config.beta2))
    return factory


def make_schedule(config: TrainConfig, d_model: int | None = None) -> Callable[[int], float]:
    """The learning-rate factor of step s (multiplies config.lr), from config.schedule."""
    from seqlab import optim

    if config.schedule == "constant":
        return optim.constant()
    if config.schedule == "warmup_linear":
        return optim.warmup_linear(config.warmup_steps, config.max_steps)
    if config.schedule == "warmup_cosine":
        return optim.warmup_cosine(config.warmup_steps, config.max_steps, config.min_lr / config.lr if config.lr else 0.0)
    # The Transformer paper's schedule already carries d_model^-0.5: lr then acts as a multiplier.
    return optim.inverse_sqrt(d_model or 512, max(1, config.warmup_steps))
