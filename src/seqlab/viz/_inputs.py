"""Checks shared by every viz function: attention stacks, tokens, segments.

The viz layer knows nothing of autograd. An attention "stack" is the attention
of ONE example: a list over layers of arrays of shape (H, T_q, T_k), or one
array of shape (L, H, T_q, T_k); anything with ``__array__`` is accepted.
Row ``[l, h, i]`` is the softmax distribution of query ``i`` over the keys, so
it must be finite, non-negative and sum to 1.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import numpy as np

from seqlab.errors import SeqlabError

# Tokens that separate the two sentences of a pair (BERT, RoBERTa/BART, XLNet-style).
SEP_TOKENS: tuple[str, ...] = ("[SEP]", "</s>", "<sep>")

# Rows of a float32 softmax over a few thousand keys sum to 1 within ~1e-5;
# 1e-3 also lets weights rounded for display through.
ROW_SUM_ATOL = 1e-3


class VizError(SeqlabError, ValueError):
    """Attention weights, tokens or segments that cannot be drawn as given."""


def _fmt_shape(shape: tuple[int, ...]) -> str:
    return "(" + ", ".join(str(int(s)) for s in shape) + ("," if len(shape) == 1 else "") + ")"


def check_tokens(tokens: Any, name: str = "tokens") -> list[str]:
    """Return ``tokens`` as a list of str; a bare string is a user error."""
    if isinstance(tokens, (str, bytes)):
        raise TypeError(f"{name} must be a list of token strings, got a single {type(tokens).__name__} "
                        f"{str(tokens)[:40]!r}; split it into tokens first")
    try:
        out = [str(t) for t in tokens]
    except TypeError:
        raise TypeError(f"{name} must be a list of token strings, got {type(tokens).__name__}") from None
    if not out:
        raise VizError(f"{name} is empty; need at least one token")
    return out


def _layer_array(layer: Any, index: int, name: str) -> np.ndarray:
    """One layer as a float64 (H, T_q, T_k) array (copied from the GPU when it is there); a batch of one is
    squeezed."""
    from seqlab import backend

    a = np.asarray(backend.to_numpy(layer), dtype=np.float64)
    if a.ndim == 4:
        if a.shape[0] != 1:
            raise VizError(f"{name}[{index}] has shape {_fmt_shape(a.shape)}: a batch of {a.shape[0]} examples; "
                           f"the viewer shows one example, e.g. pass [a[0] for a in {name}]")
        a = a[0]
    if a.ndim != 3:
        raise VizError(f"{name}[{index}] has shape {_fmt_shape(a.shape)}; expected (H, T_q, T_k)")
    return a


def as_stack(attentions: Any, n_queries: int, n_keys: int, name: str = "attentions",
             atol: float = ROW_SUM_ATOL) -> np.ndarray:
    """Validate one attention stack and return it as float64 (L, H, T_q, T_k).

    ``attentions``: list over layers of (H, T_q, T_k) arrays (a leading batch
    dim of 1 is dropped, as in Hugging Face ``output_attentions``), or one
    (L, H, T_q, T_k) array. ``n_queries`` / ``n_keys``: number of query / key
    tokens. Raises `VizError` (a ValueError) naming the shape, layer or head.
    """
    if isinstance(attentions, dict):
        raise VizError(f"{name} is a dict with keys {sorted(attentions)}; this function takes one stack, "
                       f"e.g. {name}['cross'] with target_tokens")
    if isinstance(attentions, (list, tuple)):
        if not attentions:
            raise VizError(f"{name} is an empty list; expected one (H, T_q, T_k) array per layer")
        layers = [_layer_array(a, i, name) for i, a in enumerate(attentions)]
        for i, a in enumerate(layers):
            if a.shape != layers[0].shape:
                raise VizError(f"{name}[{i}] has shape {_fmt_shape(a.shape)} but {name}[0] has "
                               f"{_fmt_shape(layers[0].shape)}; every layer needs the same (H, T_q, T_k)")
        stack = np.stack(layers)
    else:
        stack = np.asarray(attentions, dtype=np.float64)
        if stack.ndim == 5 and stack.shape[1] == 1:
            stack = stack[:, 0]  # (L, 1, H, T_q, T_k) -> (L, H, T_q, T_k)
        if stack.ndim != 4:
            raise VizError(f"{name} has shape {_fmt_shape(stack.shape)}; expected (L, H, T_q, T_k) "
                           f"or a list over layers of (H, T_q, T_k) arrays (wrap one layer as [a])")
    L, H, Tq, Tk = stack.shape
    if (Tq, Tk) != (n_queries, n_keys):
        raise VizError(f"{name} has shape {_fmt_shape(stack.shape)} (L, H, T_q, T_k) but there are "
                       f"{n_queries} query and {n_keys} key tokens; expected ({L}, {H}, {n_queries}, {n_keys})")
    if H == 0 or L == 0:
        raise VizError(f"{name} has shape {_fmt_shape(stack.shape)}; need at least one layer and one head")
    _check_rows(stack, name, atol)
    return stack


def _check_rows(stack: np.ndarray, name: str, atol: float) -> None:
    """Every row must be a probability distribution over the keys."""
    bad = ~np.isfinite(stack)
    if bad.any():
        l, h, i, j = (int(v) for v in np.argwhere(bad)[0])
        raise VizError(f"{name} layer {l} head {h} has a non-finite weight {stack[l, h, i, j]} "
                       f"at query {i}, key {j} (a fully masked row?)")
    neg = stack < -atol
    if neg.any():
        l, h, i, j = (int(v) for v in np.argwhere(neg)[0])
        raise VizError(f"{name} layer {l} head {h} has a negative weight {stack[l, h, i, j]:.4g} "
                       f"at query {i}, key {j}; expected softmax probabilities")
    sums = stack.sum(axis=-1)  # (L, H, T_q)
    off = np.abs(sums - 1.0) > atol
    if off.any():
        l, h, i = (int(v) for v in np.argwhere(off)[0])
        raise VizError(f"{name} layer {l} head {h}: query row {i} sums to {sums[l, h, i]:.6g}, not 1 "
                       f"(tolerance {atol:g}; {int(off.sum())} rows off); rows must be softmax distributions")


def segment_ids(tokens: Sequence[str], segments: Sequence[int] | None = None,
                sep_index: int | Literal["auto"] | None = None) -> list[int] | None:
    """Segment id per token for a sentence pair, or None for a single segment.

    ``segments``: one int per token (like BERT's token_type_ids).
    ``sep_index``: index of the separator closing segment A; tokens up to and
    including it are segment 0, the rest segment 1. ``"auto"`` finds the first
    separator (one of `SEP_TOKENS`) that is not the last token.
    """
    n = len(tokens)
    if segments is not None and sep_index is not None:
        raise VizError("pass either segments or sep_index, not both")
    if segments is not None:
        seg = [int(s) for s in np.asarray(segments).reshape(-1)]
        if len(seg) != n:
            raise VizError(f"segments has {len(seg)} entries but there are {n} tokens")
        if min(seg) < 0:
            raise VizError(f"segments must be non-negative ints, got {min(seg)}")
        return seg if len(set(seg)) > 1 else None
    if sep_index is None:
        return None
    if sep_index == "auto":
        found = [i for i, t in enumerate(tokens[:-1]) if t in SEP_TOKENS]
        if not found:
            return None
        sep_index = found[0]
    if isinstance(sep_index, bool) or not isinstance(sep_index, (int, np.integer)):
        raise TypeError(f"sep_index must be an int or 'auto', got {sep_index!r}")
    if not 0 <= sep_index < n - 1:
        raise VizError(f"sep_index {sep_index} is out of range for {n} tokens; need 0 <= sep_index < {n - 1}")
    return [0] * (sep_index + 1) + [1] * (n - sep_index - 1)
