"""What the pretrained-style models return, and the key/value cache they fill.

Outputs are dataclasses read by attribute (``out.logits``), with the field
names of transformers' output classes; fields a model does not compute are
None. ``out["logits"]`` works too, and as in transformers ``out[0]`` and
``out.to_tuple()`` give the fields that are set, in transformers' order
(seqlab's own extras, such as a language model's ``last_hidden_state``, are
left out, so the positions mean what they mean there).
"""
from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

import numpy as np

from seqlab import backend
from seqlab import functional as F
from seqlab.autograd.tensor import Tensor
from seqlab.models._common import as_array


def _extra(default=None):
    """A field transformers' output class does not have: by name only, not in `to_tuple()`."""
    return field(default=default, metadata={"hf": False})


@dataclass
class ModelOutput:
    def __getitem__(self, key: str | int | slice) -> Any:
        if isinstance(key, (int, slice)):
            return self.to_tuple()[key]
        if not isinstance(key, str):
            raise TypeError(f"index outputs by field name (one of {self.keys()}) or position, got {key!r}")
        return getattr(self, key)

    def keys(self) -> list[str]:
        """The names of the fields that are set."""
        return [f.name for f in fields(self) if getattr(self, f.name) is not None]

    def to_tuple(self) -> tuple:
        """The values of the fields that are set, in transformers' order (transformers' `to_tuple`)."""
        return tuple(getattr(self, f.name) for f in fields(self)
                     if f.metadata.get("hf", True) and getattr(self, f.name) is not None)


@dataclass
class BaseModelOutput(ModelOutput):
    """last_hidden_state (B, T, C); pooler_output (B, C) for BERT; attentions: per layer (B, H, T, T)."""

    last_hidden_state: Tensor = None
    pooler_output: Tensor | None = None
    hidden_states: tuple | None = None
    attentions: tuple | None = None


@dataclass
class MaskedLMOutput(ModelOutput):
    """logits (B, T, V); loss over the positions whose label is not -100."""

    loss: Tensor | None = None
    logits: Tensor = None
    hidden_states: tuple | None = None
    attentions: tuple | None = None
    last_hidden_state: Tensor | None = _extra()


@dataclass
class SequenceClassifierOutput(ModelOutput):
    """logits (B, num_labels)."""

    loss: Tensor | None = None
    logits: Tensor = None
    hidden_states: tuple | None = None
    attentions: tuple | None = None


@dataclass
class CausalLMOutput(ModelOutput):
    """logits (B, T, V); loss of predicting token t+1 from tokens <= t; past_key_values: a `KVCache`."""

    loss: Tensor | None = None
    logits: Tensor = None
    past_key_values: "KVCache | None" = None
    hidden_states: tuple | None = None
    attentions: tuple | None = None
    last_hidden_state: Tensor | None = _extra()


@dataclass
class Seq2SeqLMOutput(ModelOutput):
    """logits (B, Tdec, V); attentions per layer: decoder (B, H, Tdec, Tdec), cross (B, H, Tdec, Tenc)."""

    loss: Tensor | None = None
    logits: Tensor = None
    past_key_values: "EncoderDecoderCache | None" = None
    decoder_hidden_states: tuple | None = None
    decoder_attentions: tuple | None = None
    cross_attentions: tuple | None = None
    encoder_last_hidden_state: Tensor | None = None
    encoder_hidden_states: tuple | None = None
    encoder_attentions: tuple | None = None


# ---- what generate(..., return_dict_in_generate=True) returns: NumPy arrays, transformers' field names --------
# N = batch · num_return_sequences rows for greedy search and sampling, batch · num_beams rows for the per-step
# arrays of beam search; V = the vocabulary. `scores` and `logits` hold one array per generated step.
@dataclass
class GenerateDecoderOnlyOutput(ModelOutput):
    """A GPT's greedy search or sampling: sequences (N, T + n) int64; scores: per step the scores (N, V) float32
    the token was chosen from (after the logits processors and, when sampling, temperature / top-k / top-p;
    output_scores=True); logits: per step the model's raw scores (N, V) float32 (output_logits=True)."""

    sequences: np.ndarray = None
    scores: tuple | None = None
    logits: tuple | None = None


@dataclass
class GenerateEncoderDecoderOutput(ModelOutput):
    """T5's greedy search or sampling: sequences (N, 1 + n) start with the decoder start token; scores and logits
    as in `GenerateDecoderOnlyOutput`."""

    sequences: np.ndarray = None
    scores: tuple | None = None
    logits: tuple | None = None


@dataclass
class GenerateBeamDecoderOnlyOutput(ModelOutput):
    """A GPT's beam search: sequences (B · num_return_sequences, T + n), best first per prompt; sequences_scores
    (B · num_return_sequences,) float32: each hypothesis' summed log-probability / n^length_penalty
    (output_scores=True); scores: per step the processed log-probabilities (B · num_beams, V) of every running
    beam (output_scores=True); logits: per step the raw scores (B · num_beams, V) (output_logits=True);
    beam_indices (B · num_return_sequences, n) int64: for each new token, the row of that step's scores (and
    logits) it was chosen from, -1 after the hypothesis ended."""

    sequences: np.ndarray = None
    sequences_scores: np.ndarray | None = None
    scores: tuple | None = None
    logits: tuple | None = None
    beam_indices: np.ndarray | None = None


@dataclass
class GenerateBeamEncoderDecoderOutput(ModelOutput):
    """T5's beam search: the fields of `GenerateBeamDecoderOnlyOutput`, sequences starting with the decoder
    start token."""

    sequences: np.ndarray = None
    sequences_scores: np.ndarray | None = None
    scores: tuple | None = None
    logits: tuple | None = None
    beam_indices: np.ndarray | None = None


def classification_loss(logits: Tensor, labels, problem_type: str | None) -> Tensor:
    """transformers' rule: one label -> MSE; integer labels -> cross-entropy; float multi-hot -> BCE."""
    lab = as_array(labels)  # NumPy's or CuPy's, on its device
    n = logits.shape[-1]
    if problem_type is None:
        problem_type = ("regression" if n == 1 else
                        "single_label_classification" if lab.dtype.kind in "iu" else "multi_label_classification")
    if problem_type == "regression":
        target = lab.astype(logits.dtype).reshape(logits.shape[0], -1)
        return F.mse_loss(logits.reshape(logits.shape[0], -1), target)
    if problem_type == "single_label_classification":
        return F.cross_entropy(logits.reshape(-1, n), lab.astype(np.int64).reshape(-1))
    return F.binary_cross_entropy_with_logits(logits, lab.astype(logits.dtype))



class KVCache:
    """Keys and values of the positions already seen, per layer, each (B, H, T, D).

    The arrays live in buffers that double when full, so appending one
    position copies one position (amortised), not the whole history: the
    cost of a new token is its attention over T keys plus a constant. With
    `capacity` (generation knows prompt + new tokens) the first buffer has
    room for that many positions and never grows: no copy, and no doubling
    slack in memory. The cache stores plain arrays (no graph): it is for
    inference.
    """

    def __init__(self, capacity: int = 0) -> None:
        self.capacity = capacity
        self._k: list = []
        self._v: list = []
        self._len: list[int] = []

    def __len__(self) -> int:
        return len(self._k)

    def get_seq_length(self, layer: int = 0) -> int:
        return self._len[layer] if layer < len(self._len) else 0

    def update(self, layer: int, k: Tensor, v: Tensor) -> tuple[Tensor, Tensor]:
        """Append k, v (B, H, t, D) to `layer`; return all keys and values so far (B, H, T + t, D)."""
        ka, va = k.data, v.data
        t = ka.shape[2]
        if layer == len(self._k):
            xp = backend.xp_of(ka)
            cap = max(self.capacity, t) if self.capacity else max(2 * t, 64)
            self._k.append(xp.empty(ka.shape[:2] + (cap,) + ka.shape[3:], dtype=ka.dtype))
            self._v.append(xp.empty(va.shape[:2] + (cap,) + va.shape[3:], dtype=va.dtype))
            self._len.append(0)
        elif layer > len(self._k):
            raise ValueError(f"cache has {len(self._k)} layers; cannot update layer {layer}")
        n = self._len[layer]
        if n + t > self._k[layer].shape[2]:
            self._k[layer] = _grow(self._k[layer], n, n + t)
            self._v[layer] = _grow(self._v[layer], n, n + t)
        self._k[layer][:, :, n:n + t] = ka
        self._v[layer][:, :, n:n + t] = va
        self._len[layer] = n + t
        return Tensor(self._k[layer][:, :, :n + t]), Tensor(self._v[layer][:, :, :n + t])

    def get(self, layer: int) -> tuple[Tensor, Tensor]:
        n = self._len[layer]
        return Tensor(self._k[layer][:, :, :n]), Tensor(self._v[layer][:, :, :n])

    def reorder(self, index) -> None:
        """Keep rows `index` of the batch (beam search picks which beams continue)."""
        for i in range(len(self._k)):
            n = self._len[i]
            for store in (self._k, self._v):
                old = store[i]
                store[i] = backend.xp_of(old).empty((len(index),) + old.shape[1:], dtype=old.dtype)
                store[i][:, :, :n] = old[index, :, :n]


def _grow(buf, n: int, need: int):
    """A buffer with room for `need` positions (doubling), holding the first n of `buf`."""
    xp = backend.xp_of(buf)
    cap = max(need, 2 * buf.shape[2])
    new = xp.empty(buf.shape[:2] + (cap,) + buf.shape[3:], dtype=buf.dtype)
    new[:, :, :n] = buf[:, :, :n]
    return new


class EncoderDecoderCache:
    """T5's decoder cache: a growing self-attention `KVCache` and the cross-attention keys/values.

    Cross-attention keys and values depend only on the encoder output, so
    they are computed on the first decoder step and reused afterwards.
    """

    def __init__(self) -> None:
        self.self_attention = KVCache()
        self.cross_attention: list[tuple[Tensor, Tensor]] = []

    def get_seq_length(self, layer: int = 0) -> int:
        return self.self_attention.get_seq_length(layer)

    def reorder(self, index) -> None:
        self.self_attention.reorder(index)
        self.cross_attention = [(Tensor(k.data[index]), Tensor(v.data[index])) for k, v in self.cross_attention]


def check_cache(cache, kind: type) -> None:
    """TypeError unless `cache` is None or a seqlab `kind` (a transformers cache or a tuple of torch tensors
    cannot serve: its keys and values are torch's)."""
    if cache is not None and not isinstance(cache, kind):
        raise TypeError(f"past_key_values must be a seqlab {kind.__name__} (the past_key_values of an earlier "
                        f"output with use_cache=True), got {type(cache).__name__}")
