"""Model configs as dataclasses that read and write Hugging Face `config.json` files.

A config subclass declares the HF field names with their HF defaults and
validates them in `__post_init__`. Keys it does not know (``architectures``,
``transformers_version``, ``_name_or_path``, ...) are kept in `extra` and
written back unchanged, so a folder survives a load/save round trip.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Callable, ClassVar

from seqlab import functional as F
from seqlab.errors import ConfigError


def _gelu_tanh(x):
    return F.gelu(x, approximate="tanh")


_gelu_tanh.fused_activation = "gelu_tanh"  # F.fused_activation: F.bias_act_dropout computes it too

# HF `hidden_act` / `activation_function` names -> the function (transformers' ACT2FN).
HF_ACTIVATIONS: dict[str, Callable] = {
    "gelu": F.gelu,                   # exact: x Φ(x) with erf (BERT)
    "gelu_new": _gelu_tanh,           # tanh approximation (GPT-2, T5 v1.1)
    "gelu_pytorch_tanh": _gelu_tanh,
    "relu": F.relu,
    "silu": F.silu,
    "swish": F.silu,
    "tanh": F.tanh,
}

_HF_BASE_KEYS = ("num_labels", "id2label", "label2id")


def activation(name: str) -> Callable:
    """The activation function that transformers calls `name`."""
    if not isinstance(name, str) or name not in HF_ACTIVATIONS:
        raise ConfigError(f"unknown activation {name!r}; supported: {', '.join(HF_ACTIVATIONS)}")
    return HF_ACTIVATIONS[name]


@dataclass
class HFConfig:
    """Base class: `from_dict` / `to_dict` / `from_json_file` / `to_json_file`, extras kept.

    Subclasses set `model_type` (checked against the file's) and may set
    `aliases`, HF's ``attribute_map`` (e.g. ``hidden_size -> n_embd``).
    """

    model_type: ClassVar[str] = ""
    aliases: ClassVar[dict[str, str]] = {}

    extra: dict = field(default_factory=dict, repr=False, compare=False)

    # ---- reading and writing ------------------------------------------------
    @classmethod
    def from_dict(cls, d: dict[str, Any], **overrides: Any) -> "HFConfig":
        """A config from a `config.json` dict; `overrides` win over the file."""
        if not isinstance(d, dict):
            raise ConfigError(f"a config must be a JSON object, got {type(d).__name__}")
        # aliases resolved in the file and in the overrides apart, so an override by either name wins
        d = {**cls._canonical(d), **cls._canonical(overrides)}
        mt = d.pop("model_type", None)
        if mt is not None and cls.model_type and mt != cls.model_type:
            raise ConfigError(f"config has model_type {mt!r} but {cls.__name__} is for {cls.model_type!r}")
        names = cls._field_names()
        if "num_labels" in names and "num_labels" not in d and isinstance(d.get("id2label"), dict):
            d["num_labels"] = len(d["id2label"])
        kwargs = {k: d.pop(k) for k in list(d) if k in names}
        return cls(**kwargs, extra=d)

    @classmethod
    def _canonical(cls, d: dict[str, Any]) -> dict[str, Any]:
        """`d` with HF's alternative names (``hidden_size`` on GPT-2) under the field's own; the field's
        own name wins where a dict has both."""
        out = dict(d)
        for alias, name in cls.aliases.items():
            if alias in out:
                value = out.pop(alias)
                out.setdefault(name, value)
        return out

    @classmethod
    def _field_names(cls) -> set[str]:
        return {f.name for f in fields(cls) if f.init and f.name != "extra"}

    @classmethod
    def accepts(cls, key: str) -> bool:
        """Whether `key` names one of this config's fields (or an alias of one, or HF's label maps)."""
        return key in cls._field_names() or key in cls.aliases or key in _HF_BASE_KEYS

    def to_dict(self) -> dict[str, Any]:
        """The `config.json` dict: extras, then every field, then `model_type`."""
        has_labels = any(f.name == "num_labels" for f in fields(self))
        out = {k: v for k, v in self.extra.items() if not (has_labels and k in _HF_BASE_KEYS)}
        for f in fields(self):
            if f.name != "extra":
                out[f.name] = getattr(self, f.name)
        if "num_labels" in out:  # HF stores the label count as id2label
            n = out.pop("num_labels")
            id2label = self.extra.get("id2label")
            if not (isinstance(id2label, dict) and len(id2label) == n):
                id2label = {str(i): f"LABEL_{i}" for i in range(n)}
            out["id2label"] = {str(k): v for k, v in id2label.items()}
            out["label2id"] = {v: int(k) for k, v in id2label.items()}
        out["model_type"] = self.model_type
        return out

    @classmethod
    def from_json_file(cls, path: str | Path, **overrides: Any) -> "HFConfig":
        try:
            d = json.loads(Path(path).read_text(encoding="utf-8"))
        except json.JSONDecodeError as e:
            raise ConfigError(f"{path}: not valid JSON ({e})") from None
        return cls.from_dict(d, **overrides)

    def to_json_file(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(self.to_dict(), indent=2, sort_keys=True) + "\n", encoding="utf-8")

    def __getattr__(self, name: str) -> Any:  # HF's attribute_map: config.hidden_size on GPT-2
        aliases = type(self).aliases
        if name in aliases:
            return getattr(self, aliases[name])
        raise AttributeError(f"{type(self).__name__!r} has no attribute {name!r}")

    def __setattr__(self, name: str, value: Any) -> None:  # and config.hidden_size = 32 sets n_embd
        object.__setattr__(self, type(self).aliases.get(name, name), value)

    # ---- validation helpers for __post_init__ -------------------------------
    def _positive(self, *names: str) -> None:
        for n in names:
            v = getattr(self, n)
            if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
                raise ConfigError(f"{type(self).__name__}.{n} must be a positive int, got {v!r}")

    def _probability(self, *names: str) -> None:
        for n in names:
            v = getattr(self, n)
            if v is not None and not (isinstance(v, (int, float)) and 0.0 <= v <= 1.0):
                raise ConfigError(f"{type(self).__name__}.{n} must be a probability in [0, 1], got {v!r}")

    def _divisible(self, a: str, b: str) -> None:
        if getattr(self, a) % getattr(self, b):
            raise ConfigError(f"{a} ({getattr(self, a)}) must be divisible by {b} ({getattr(self, b)})")

    def _one_of(self, name: str, allowed) -> None:
        v = getattr(self, name)
        if not isinstance(v, (str, int, float, bool, type(None))) or v not in allowed:  # a JSON list or object
            raise ConfigError(f"{type(self).__name__}.{name} must be one of {sorted(allowed)}, got {v!r}")

    def _problem_type(self) -> None:
        allowed = (None, "regression", "single_label_classification", "multi_label_classification")
        if getattr(self, "problem_type", None) not in allowed:
            raise ConfigError(f"problem_type must be one of {allowed}, got {self.problem_type!r}")
