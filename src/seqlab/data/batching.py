"""Turning token sequences into NumPy batches: padding, bucketing, MLM masks, LM windows.

Every random choice takes an explicit ``rng: np.random.Generator`` so a seed
given by the caller fixes the data order; nothing here reads global state.
Ids are int64 (what embedding lookups and cross-entropy targets expect);
attention masks follow Hugging Face: 1 = real token, 0 = padding.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

import numpy as np

S = TypeVar("S", np.ndarray, str, list)  # train_val_split returns what it is given

IGNORE_INDEX = -100  # label value that cross-entropy skips (torch's ignore_index default)


def pad_batch(
    seqs: Sequence[Sequence[int] | np.ndarray],
    pad_id: int,
    max_length: int | None = None,
    side: str = "right",
) -> tuple[np.ndarray, np.ndarray]:
    """Pad variable-length id sequences into one array.

    Returns ``(ids, mask)``, both int64 of shape (B, T), where T is
    ``max_length`` if given, else the longest sequence; ``mask`` is 1 on real
    tokens. ``side="left"`` puts the padding first (for decoder-only
    generation, so the last column is every row's newest token). A sequence
    longer than ``max_length`` is an error: truncate it first, on purpose.
    """
    if side not in ("right", "left"):
        raise ValueError(f"side must be 'right' or 'left', got {side!r}")
    lengths = [len(s) for s in seqs]
    longest = max(lengths, default=0)
    T = longest if max_length is None else max_length
    if longest > T:
        i = lengths.index(longest)
        raise ValueError(f"sequence {i} has {longest} tokens > max_length {T}; truncate it first")

    ids = np.full((len(seqs), T), pad_id, dtype=np.int64)  # (B, T)
    mask = np.zeros((len(seqs), T), dtype=np.int64)       # (B, T)
    for i, (s, n) in enumerate(zip(seqs, lengths)):
        if n == 0:
            continue
        cols = slice(0, n) if side == "right" else slice(T - n, T)
        ids[i, cols] = np.asarray(s, dtype=np.int64)
        mask[i, cols] = 1
    return ids, mask


def bucket_batches(
    lengths: Sequence[int] | np.ndarray,
    batch_size: int,
    rng: np.random.Generator | None = None,
    shuffle: bool = True,
    bucket_size_multiplier: int = 50,
) -> list[np.ndarray]:
    """Split example indices into batches of similar length, so padding stays small.

    Indices are (optionally) shuffled, cut into chunks of
    ``batch_size * bucket_size_multiplier``, sorted by length inside each chunk
    and cut into batches; then the batch order is shuffled. Sorting within a
    chunk, not globally, keeps some randomness in which examples meet
    (torchtext's BucketIterator idea). Every index appears in exactly one
    batch; only the last batch of a chunk may be smaller than ``batch_size``.
    ``shuffle=False`` gives a deterministic, length-sorted order (evaluation).
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    if bucket_size_multiplier < 1:
        raise ValueError(f"bucket_size_multiplier must be >= 1, got {bucket_size_multiplier}")
    if shuffle and rng is None:
        raise ValueError("shuffle=True needs rng=np.random.default_rng(seed) (no hidden global state)")
    lengths = np.asarray(lengths)
    n = len(lengths)
    order = rng.permutation(n) if shuffle else np.arange(n)  # type: ignore[union-attr]
    chunk = batch_size * bucket_size_multiplier

    batches: list[np.ndarray] = []
    for start in range(0, n, chunk):
        idx = order[start:start + chunk]
        idx = idx[np.argsort(lengths[idx], kind="stable")]  # stable: ties keep the shuffled order
        batches.extend(idx[b:b + batch_size] for b in range(0, len(idx), batch_size))
    if shuffle:
        batches = [batches[i] for i in rng.permutation(len(batches))]  # type: ignore[union-attr]
    return batches


def mlm_mask(
    ids: np.ndarray,
    rng: np.random.Generator,
    vocab_size: int,
    mask_token_id: int,
    special_mask: np.ndarray | None = None,
    prob: float = 0.15,
) -> tuple[np.ndarray, np.ndarray]:
    """BERT's masked-LM corruption (Devlin et al., 2019, section 3.1).

    ``ids`` (B, T) int; ``special_mask`` (B, T), true where a token must never
    be chosen ([CLS], [SEP], padding). Each other token is chosen with
    probability ``prob``; a chosen token becomes [MASK] 80% of the time, a
    uniformly random id 10%, and stays unchanged 10% — so the model cannot
    learn that only [MASK] positions matter.

    Returns ``(inputs, labels)``, int64 (B, T): ``labels`` holds the original
    id where a token was chosen and ``IGNORE_INDEX`` (-100) elsewhere.
    """
    if not 0.0 <= prob <= 1.0:
        raise ValueError(f"prob must be in [0, 1], got {prob}")
    ids = np.asarray(ids, dtype=np.int64)
    if special_mask is None:
        special = np.zeros(ids.shape, dtype=bool)
    else:
        special = np.asarray(special_mask).astype(bool)
        if special.shape != ids.shape:
            raise ValueError(f"special_mask has shape {special.shape} but ids have shape {ids.shape}")

    chosen = (rng.random(ids.shape) < prob) & ~special              # (B, T)
    labels = np.where(chosen, ids, IGNORE_INDEX)                      # (B, T)
    to_mask = chosen & (rng.random(ids.shape) < 0.8)                  # 80% of chosen
    # Half of the remaining 20% -> 10% of chosen get a random token.
    to_random = chosen & ~to_mask & (rng.random(ids.shape) < 0.5)
    inputs = ids.copy()
    inputs[to_mask] = mask_token_id
    inputs[to_random] = rng.integers(0, vocab_size, size=int(to_random.sum()))
    return inputs, labels


def causal_lm_windows(
    tokens: np.ndarray | Sequence[int],
    block_size: int,
    batch_size: int,
    rng: np.random.Generator,
) -> tuple[np.ndarray, np.ndarray]:
    """Random next-token training windows, as in nanoGPT's ``get_batch``.

    ``tokens`` is a 1-D id stream. Returns ``(x, y)`` int64 (B, block_size)
    with ``y[:, t] == x[:, t + 1]`` inside the stream: each row starts at a
    uniformly random offset.
    """
    tokens = np.asarray(tokens)
    if tokens.ndim != 1:
        raise ValueError(f"tokens must be 1-D, got shape {tokens.shape}")
    if len(tokens) <= block_size:
        raise ValueError(f"need more than block_size={block_size} tokens, got {len(tokens)}")
    starts = rng.integers(0, len(tokens) - block_size, size=batch_size)  # (B,)
    offsets = np.arange(block_size)                                      # (T,)
    x = tokens[starts[:, None] + offsets].astype(np.int64)               # (B, T)
    y = tokens[starts[:, None] + offsets + 1].astype(np.int64)           # (B, T)
    return x, y


def train_val_split(tokens: S, frac: float = 0.9) -> tuple[S, S]:
    """First ``frac`` of a sequence (array, list or str) for training, the rest for validation.

    A contiguous split, not a shuffled one: for a text stream, shuffling
    would leak overlapping windows into the validation set.
    """
    if not 0.0 < frac < 1.0:
        raise ValueError(f"frac must be in (0, 1), got {frac}")
    n = int(len(tokens) * frac)
    return tokens[:n], tokens[n:]


__all__ = ["IGNORE_INDEX", "bucket_batches", "causal_lm_windows", "mlm_mask", "pad_batch", "train_val_split"]
