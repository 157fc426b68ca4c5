"""Helpers the pretrained-style models (BERT, GPT-2, T5) share: token-id checks, transformers' normal init and
gradient checkpointing of a stack of layers."""
from __future__ import annotations

import warnings
from typing import Callable

import numpy as np

from seqlab import backend, nn
from seqlab import functional as F
from seqlab.autograd.function import is_grad_enabled
from seqlab.autograd.tensor import Tensor
from seqlab.utils.checkpoint import checkpoint


def as_array(x):
    """The array of a Tensor; a NumPy or CuPy array as it is (on its device: NumPy would refuse to
    convert a CuPy array); anything else (lists, scalars) as a NumPy array."""
    if isinstance(x, Tensor):
        return x.data
    return x if backend.xp_of(x) is not np else np.asarray(x)


def token_ids(x, name: str = "token ids") -> np.ndarray:
    """Integer ids (a Tensor or array-like) as an int64 array, on the device they are on; TypeError for
    any other dtype."""
    arr = as_array(x)
    if arr.dtype.kind not in "iu":
        raise TypeError(f"{name} must be integers, got dtype {arr.dtype}")
    return arr.astype(np.int64, copy=False)


def mask_values(x, name: str = "attention_mask") -> np.ndarray:
    """A 1 = attend / 0 = padding mask as an int64 array (on its device): integers, bools or floats holding
    0 and 1, as transformers takes them; TypeError for anything else."""
    arr = as_array(x)
    if arr.dtype.kind == "b":
        return arr.astype(np.int64)
    if arr.dtype.kind == "f":
        if not bool(((arr == 0) | (arr == 1)).all()):
            raise TypeError(f"{name} holds values other than 0 and 1 (1 = attend, 0 = padding)")
        return arr.astype(np.int64)
    return token_ids(arr, name)


def ids_or_embeds(input_ids, inputs_embeds) -> tuple[np.ndarray | None, Tensor | None, int, int]:
    """(ids, embeds, B, T) for a model that takes token ids or, as transformers' models do, their vectors
    (B, T, C) in place of its word embeddings; exactly one of the two."""
    if (input_ids is None) == (inputs_embeds is None):
        raise ValueError("give input_ids or inputs_embeds, exactly one of them")
    if input_ids is not None:
        ids = batch_ids(input_ids)
        return ids, None, ids.shape[0], ids.shape[1]
    emb = inputs_embeds if isinstance(inputs_embeds, Tensor) else Tensor(backend.from_torch(inputs_embeds))
    if emb.ndim != 3 or emb.shape[1] == 0:
        raise ValueError(f"inputs_embeds must be (batch, time, hidden), got shape {tuple(emb.shape)}")
    return None, emb, emb.shape[0], emb.shape[1]


def position_values(position_ids, B: int, T: int, limit: int) -> np.ndarray:
    """position_ids as (B or 1, T) ints below `limit` (a (T,) vector: the same for every row, as transformers)."""
    pos = token_ids(position_ids, "position_ids")
    if pos.ndim == 1 and pos.shape[0] == T:
        pos = pos[None, :]
    if pos.ndim != 2 or pos.shape[1] != T or pos.shape[0] not in (1, B):
        raise ValueError(f"position_ids has shape {pos.shape} but input_ids ({B}, {T}): expected ({B}, {T}), "
                         f"(1, {T}) or ({T},)")
    if pos.size and (int(pos.max()) >= limit or int(pos.min()) < 0):
        raise ValueError(f"position {int(pos.max()) if int(pos.max()) >= limit else int(pos.min())} is outside "
                         f"the model's {limit} positions")
    return pos


def batch_ids(input_ids) -> np.ndarray:
    """`token_ids` of a (batch, time) input; ValueError for any other rank or no tokens."""
    ids = token_ids(input_ids, "input_ids")
    if ids.ndim != 2:
        raise ValueError(f"input_ids must be (batch, time), got shape {ids.shape}")
    if ids.shape[1] == 0:
        raise ValueError(f"input_ids has no tokens (shape {ids.shape})")
    return ids


def token_labels(labels, shape: tuple, name: str = "labels") -> np.ndarray:
    """Integer labels of one per token, of the input's shape (B, T); ValueError for another shape."""
    lab = token_ids(labels, name)
    if lab.shape != tuple(shape):
        raise ValueError(f"{name} has shape {lab.shape} but input_ids {tuple(shape)}: expected the same "
                         f"(batch, seq) shape")
    return lab


def row_labels(labels, rows: int, name: str = "labels") -> np.ndarray:
    """Integer labels of one per row, (B,) or (B, 1) as transformers takes them, as (B,); ValueError otherwise."""
    lab = token_ids(labels, name)
    if lab.shape not in ((rows,), (rows, 1)):
        raise ValueError(f"{name} has shape {lab.shape} but the batch has {rows} rows: expected ({rows},)")
    return lab.reshape(rows)


def span_loss(start: Tensor, end: Tensor, start_positions, end_positions) -> Tensor:
    """Extractive QA's loss on start and end scores (B, T): the mean of the two cross-entropies over the tokens.
    As transformers, positions are clipped to [0, T]: one past the input (an answer truncated away) is T, which
    is ignored; a negative one counts as position 0."""
    B, T = start.shape
    s = row_labels(start_positions, B, "start_positions").clip(0, T)
    e = row_labels(end_positions, B, "end_positions").clip(0, T)
    return (F.cross_entropy(start, s, ignore_index=T) + F.cross_entropy(end, e, ignore_index=T)) / 2


def init_normal_(model: nn.Module, std: float, std_of: Callable[[str, float], float] | None = None) -> None:
    """transformers' init: N(0, std) for Linear and Embedding weights, zero biases, zero padding rows.

    `std_of(name, std)` gives a module its own std (GPT-2 scales the residual projections).
    LayerNorms keep their (1, 0) from construction.
    """
    for name, m in model.named_modules():
        if isinstance(m, (nn.Linear, nn.Embedding)):
            nn.init.normal_(m.weight, 0.0, std_of(name, std) if std_of is not None else std)
            if isinstance(m, nn.Embedding) and m.padding_idx is not None:
                m.weight.data[m.padding_idx] = 0
        if isinstance(m, nn.Linear) and m.bias is not None:
            nn.init.zeros_(m.bias)


def checkpointing(stack: nn.Module) -> dict | None:
    """`seqlab.utils.checkpoint`'s options when the layer stack's gradient checkpointing is on
    (`model.gradient_checkpointing_enable()`) and applies now: in training, while a graph is recorded.
    None otherwise."""
    if stack.gradient_checkpointing and stack.training and is_grad_enabled():
        return stack.checkpoint_options
    return None


def cache_or_checkpoints(stack: nn.Module, use_cache: bool) -> bool:
    """`use_cache`, unless the stack's layers run under checkpoints now: then False, with transformers'
    warning (a cache written in the forward would be written again by each recomputation)."""
    if use_cache and checkpointing(stack) is not None:
        warnings.warn("`use_cache=True` is incompatible with gradient checkpointing. Setting `use_cache=False`.",
                      UserWarning, stacklevel=3)
        return False
    return use_cache


def call_layer(stack: nn.Module, layer: Callable, *args, keep_weights: bool = False):
    """``layer(*args)`` -> (hidden, attention weights), under activation checkpointing where
    `checkpointing(stack)` says so; there the weights are None unless `keep_weights` (they would be
    copied out of the checkpoint for nothing)."""
    options = checkpointing(stack)
    if options is None:
        return layer(*args)
    if keep_weights:
        return checkpoint(layer, *args, **options)
    return checkpoint(lambda *a: layer(*a)[0], *args, **options), None
