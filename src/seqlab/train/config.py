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
from typing import Any, Callable, ClassVar, Mapping

from seqlab.errors import ConfigError

OPTIMIZERS = ("adamw", "adam", "sgd")
SCHEDULES = ("constant", "warmup_linear", "warmup_cosine", "inverse_sqrt")

# Settings that may change when a run is resumed: they steer the run, not the numbers it computes
# (gradient_checkpointing changes them only by rounding, and is what a run short of memory needs).
RESUMABLE_KEYS = frozenset({"max_minutes", "checkpoint_every", "keep_checkpoints", "log_every",
                            "gradient_checkpointing"})


@dataclass(frozen=True)
class Bound:
    """The numbers a setting may take: finite, and within `min` .. `max` (an end left out when None,
    excluded when open). `note` says what a boundary value means, e.g. '0 = all'."""

    min: float | None = None
    max: float | None = None
    open_min: bool = False
    open_max: bool = False
    note: str = ""

    def holds(self, value: float) -> bool:
        if not math.isfinite(value):
            return False
        if self.min is not None and not (value > self.min if self.open_min else value >= self.min):
            return False
        return self.max is None or (value < self.max if self.open_max else value <= self.max)

    def text(self) -> str:
        """'>= 1', '> 0', 'in [0, 1)', '<= 5', or '' for no bound; no note."""
        lo, hi = self.min, self.max
        if lo is not None and hi is not None:
            return f"in {'(' if self.open_min else '['}{lo:g}, {hi:g}{')' if self.open_max else ']'}"
        if lo is not None:
            return f"{'>' if self.open_min else '>='} {lo:g}"
        if hi is not None:
            return f"{'<' if self.open_max else '<='} {hi:g}"
        return ""


# The bounds most settings need.
COUNT = Bound(1)                           # sizes, layers, heads, steps
LIMIT = Bound(0, note="0 = all")           # "the first N examples only"
PROBABILITY = Bound(0, 1)                  # dropout


def setting_choices(cls: type) -> dict[str, tuple[str, ...]]:
    """The allowed values of each string setting of a config class: its CHOICES merged over its bases."""
    return _merged(cls, "CHOICES")


def _merged(cls: type, name: str) -> dict:
    """The class attribute `name` (a dict) of `cls` merged over its bases, the subclass's entries winning."""
    merged: dict = {}
    for c in reversed(cls.__mro__):
        merged.update(vars(c).get(name, {}))
    return merged


def check_settings(config: Any) -> None:
    """ConfigError naming the first setting of `config` outside its class's BOUNDS, CHOICES or DIVISIBLE
    (each merged over the class's bases, so a task's Config adds to TrainConfig's), or turning on
    gradient checkpointing for a task whose model has none (GRADIENT_CHECKPOINTING = False)."""
    for name, bound in _merged(type(config), "BOUNDS").items():
        value = getattr(config, name)
        if not bound.holds(value):
            note = f" ({bound.note})" if bound.note else ""
            # an interval ("in [0, 1)") says it is finite; an open end (">= 0") does not: inf is not "no limit"
            finite = "a finite number" if not math.isfinite(value) and None in (bound.min, bound.max) else ""
            rule = " ".join(part for part in (finite, bound.text()) if part)
            raise ConfigError(f"{name} must be {rule}{note}, got {value}")
    for name, allowed in setting_choices(type(config)).items():
        if getattr(config, name) not in allowed:
            raise ConfigError(f"{name} must be one of {', '.join(allowed)}, got {getattr(config, name)!r}")
    for width, heads in _merged(type(config), "DIVISIBLE").items():
        if getattr(config, width) % getattr(config, heads):
            raise ConfigError(f"{width} ({getattr(config, width)}) must be divisible by {heads} "
                              f"({getattr(config, heads)})")
    if config.gradient_checkpointing and type(config).GRADIENT_CHECKPOINTING is False:
        raise ConfigError(no_gradient_checkpointing(type(config)))


def no_gradient_checkpointing(cls: type) -> str:
    """The refusal of gradient_checkpointing = true for the task whose Config is `cls`, naming the tasks that
    have it (read from the registry, so the list cannot go stale)."""
    from seqlab.train.tasks import TASKS, get_task

    task = next((name for name, module in TASKS.items() if module == cls.__module__), None)
    able = [name for name in TASKS if getattr(get_task(name).Config, "GRADIENT_CHECKPOINTING", None) is True]
    who = f"task {task!r}" if task else cls.__name__
    return (f"gradient_checkpointing: the model of {who} has no gradient checkpointing; the GPT and BERT "
            f"tasks have it ({', '.join(able)})")


def check_rope_heads(config: Any, width: str, heads: str, positional: str = "positional") -> None:
    """RoPE rotates pairs of features within each head: refuse an odd head dimension before a model is built."""
    if getattr(config, positional) == "rope" and (getattr(config, width) // getattr(config, heads)) % 2:
        raise ConfigError(f"{positional} = 'rope' needs an even head dimension {width} / {heads}, got "
                          f"{getattr(config, width) // getattr(config, heads)}")


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
    gradient_checkpointing: bool = False  # recompute each layer's activations in backward (GPT and BERT models)

    # Checked on every construction (defaults, --config, --set, --print-config): a task's Config declares
    # its own BOUNDS and CHOICES, which add to these.
    BOUNDS: ClassVar[dict[str, Bound]] = {
        "seed": Bound(0), **dict.fromkeys(("max_steps", "batch_size", "grad_accum", "keep_checkpoints",
                                           "log_every"), COUNT),
        **dict.fromkeys(("eval_every", "checkpoint_every", "patience", "warmup_steps", "lr", "weight_decay",
                         "min_lr", "clip_grad_norm", "max_minutes", "momentum"), Bound(0)),
        "beta1": Bound(0, 1, open_max=True), "beta2": Bound(0, 1, open_max=True),
        "ema_decay": Bound(0, 1, open_max=True, note="0 = no weight averaging"),
    }
    CHOICES: ClassVar[dict[str, tuple[str, ...]]] = {
        "optimizer": OPTIMIZERS, "schedule": SCHEDULES, "metric_mode": ("min", "max")}
    # {width: heads}: settings whose first must be a multiple of the second (d_model and nhead)
    DIVISIBLE: ClassVar[dict[str, str]] = {}
    # Whether the task's model has gradient checkpointing: every registered task says True or False, so that
    # gradient_checkpointing = true is refused with the settings, before a run folder or vocabulary is made;
    # None (a TrainConfig used directly) leaves the check to the Trainer.
    GRADIENT_CHECKPOINTING: ClassVar[bool | None] = None

    def __post_init__(self) -> None:
        check_settings(self)

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
