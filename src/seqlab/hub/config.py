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
_OUTPUT_FLAGS = ("output_attentions", "output_hidden_states")  # the models' forward reads them (in `extra`)


def activation(name: str) -> Callable:
    """The activation function that transformers calls `name`."""
    if not isinstance(name, str) or name not in HF_ACTIVATIONS:
        raise ConfigError(f"unknown activation {name!r}; supported: {', '.join(HF_ACTIVATIONS)}")
    return HF_ACTIVATIONS[name]


class _ConfigMeta(type):
    """Lets a config's constructor take transformers' label maps, `BertConfig(id2label={0: "neg", ...})`,
    which are not dataclass fields (they live in `extra`, see `HFConfig.id2label`)."""

    def __call__(cls, *args: Any, **kwargs: Any):
        maps = {k: kwargs.pop(k) for k in ("id2label", "label2id") if k in kwargs}
        obj = super().__call__(*args, **kwargs)
        for k, v in maps.items():
            setattr(obj, k, v)
        return obj


def _int_keys(id2label: Any, where: str) -> dict[int, Any]:
    """{int id: label} from a label map whose keys are ints or digit strings (JSON's)."""
    if not isinstance(id2label, dict):
        raise ConfigError(f"{where} must be a dict of class id -> label, got {type(id2label).__name__}")
    try:
        return {int(k): v for k, v in id2label.items()}
    except (TypeError, ValueError):
        raise ConfigError(f"{where} keys must be class ids (ints), got {list(id2label)[:3]}") from None


@dataclass
class HFConfig(metaclass=_ConfigMeta):
    """Base class: `from_dict` / `to_dict` / `from_json_file` / `to_json_file`, extras kept.

    Subclasses set `model_type` (checked against the file's) and may set
    `aliases`, HF's ``attribute_map`` (e.g. ``hidden_size -> n_embd``).

    `id2label` and `label2id` read and write as in transformers: `config.id2label[pred]` names a
    prediction ({int: str}, "LABEL_i" unless the file or you named them); setting `id2label` sets
    `num_labels` too, and a `num_labels` that no longer matches resets the names to "LABEL_i".
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
        if isinstance(d.get("id2label"), dict):  # JSON's keys are strings; transformers' are ints
            d["id2label"] = _int_keys(d["id2label"], "id2label")
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
            out.pop("num_labels")
            out["id2label"] = {str(k): v for k, v in self.id2label.items()}
            out["label2id"] = dict(self.label2id)
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

    @classmethod
    def from_pretrained(cls, name_or_path: str | Path, **overrides: Any) -> "HFConfig":
        """The ``config.json`` of a model folder (or a known name), as transformers' ``XConfig.from_pretrained``;
        `overrides` replace its fields."""
        from seqlab.hub.pretrained import CONFIG_NAME, read_config, resolve  # (pretrained imports this module)

        folder = resolve(name_or_path)
        try:
            return cls.from_dict(read_config(folder), **overrides)
        except ConfigError as e:
            raise ConfigError(f"{folder / CONFIG_NAME}: {e}") from None

    def save_pretrained(self, save_directory: str | Path) -> None:
        """Write ``config.json`` into `save_directory` (made if missing), as transformers' config does."""
        folder = Path(save_directory)
        folder.mkdir(parents=True, exist_ok=True)
        self.to_json_file(folder / "config.json")

    def __getattr__(self, name: str) -> Any:  # HF's attribute_map: config.hidden_size on GPT-2
        aliases = type(self).aliases
        if name in aliases:
            return getattr(self, aliases[name])
        if name in _OUTPUT_FLAGS and "extra" in self.__dict__:  # transformers' forward defaults (False)
            return bool(self.extra.get(name, False))
        if name == "id2label" and "extra" in self.__dict__:
            return self._id2label()
        if name == "label2id" and "extra" in self.__dict__:
            id2label = self._id2label()
            label2id = self.extra.get("label2id")
            if not (isinstance(label2id, dict) and set(label2id) == set(id2label.values())):
                label2id = self.extra["label2id"] = {v: k for k, v in id2label.items()}
            return label2id
        raise AttributeError(f"{type(self).__name__!r} has no attribute {name!r}")

    def _id2label(self) -> dict[int, Any]:
        """The stored {int: label} map (kept in `extra`, so edits in place are saved), made afresh as
        "LABEL_i" when there is none or its size is not num_labels."""
        id2label = self.extra.get("id2label")
        n = self.__dict__.get("num_labels")
        if not isinstance(id2label, dict) or (n is not None and len(id2label) != n):
            id2label = self.extra["id2label"] = {i: f"LABEL_{i}" for i in range(2 if n is None else n)}
            self.extra.pop("label2id", None)
        return id2label

    def __setattr__(self, name: str, value: Any) -> None:  # and config.hidden_size = 32 sets n_embd
        if name == "id2label":  # as transformers: the map sets the label count
            value = _int_keys(value, "id2label")
            self.extra["id2label"] = value
            self.extra.pop("label2id", None)
            if any(f.name == "num_labels" for f in fields(self)):
                object.__setattr__(self, "num_labels", len(value))
            return
        if name in _OUTPUT_FLAGS:  # read by the models' forward (seqlab.hub.pretrained._hf_forward)
            self.extra[name] = bool(value)
            return
        if name == "label2id":
            if not isinstance(value, dict):
                raise ConfigError(f"label2id must be a dict of label -> class id, got {type(value).__name__}")
            self.extra["label2id"] = {k: int(v) for k, v in value.items()}
            return
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
