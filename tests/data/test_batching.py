"""Padding, bucketing, MLM masking and LM windows."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from seqlab.data import IGNORE_INDEX, bucket_batches, causal_lm_windows, mlm_mask, pad_batch, train_val_split


def test_pad_batch_right():
    ids, mask = pad_batch([[5, 6, 7], [8], []], pad_id=0)
    assert ids.dtype == mask.dtype == np.int64
    np.testing.assert_array_equal(ids, [[5, 6, 7], [8, 0, 0], [0, 0, 0]])
    np.testing.assert_array_equal(mask, [[1, 1, 1], [1, 0, 0], [0, 0, 0]])


def test_pad_batch_left_and_max_length():
    ids, mask = pad_batch([np.array([5, 6]), [7]], pad_id=-1, max_length=4, side="left")
    np.testing.assert_array_equal(ids, [[-1, -1, 5, 6], [-1, -1, -1, 7]])
    np.testing.assert_array_equal(mask, [[0, 0, 1, 1], [0, 0, 0, 1]])


def test_pad_batch_errors():
    with pytest.raises(ValueError, match="sequence 1 has 3 tokens > max_length 2"):
        pad_batch([[1], [1, 2, 3]], 0, max_length=2)
    with pytest.raises(ValueError, match="side"):
        pad_batch([[1]], 0, side="middle")


@settings(max_examples=50, deadline=None)
@given(st.lists(st.lists(st.integers(0, 1000), max_size=12), max_size=8), st.sampled_from(["right", "left"]))
def test_pad_batch_keeps_every_token(seqs, side):
    ids, mask = pad_batch(seqs, pad_id=-7, side=side)
    assert ids.shape == mask.shape == (len(seqs), max(map(len, seqs), default=0))
    for row, m, s in zip(ids, mask, seqs):
        assert row[m == 1].tolist() == s
        assert (row[m == 0] == -7).all()


def test_bucket_batches_cover_every_index_once_and_reduce_padding():
    rng = np.random.default_rng(0)
    lengths = rng.integers(1, 200, size=5003)
    batches = bucket_batches(lengths, batch_size=32, rng=np.random.default_rng(1), bucket_size_multiplier=20)
    flat = np.concatenate(batches)
    assert sorted(flat.tolist()) == list(range(5003))
    assert all(len(b) <= 32 for b in batches)

    def padding(bs):
        return sum(int(lengths[b].max()) * len(b) - int(lengths[b].sum()) for b in bs)

    random = np.array_split(np.random.default_rng(2).permutation(5003), len(batches))
    assert padding(batches) < 0.2 * padding(random)


def test_bucket_batches_are_reproducible_and_shuffled():
    lengths = np.arange(1000) % 37
    a = bucket_batches(lengths, 10, rng=np.random.default_rng(7))
    b = bucket_batches(lengths, 10, rng=np.random.default_rng(7))
    c = bucket_batches(lengths, 10, rng=np.random.default_rng(8))
    assert all(np.array_equal(x, y) for x, y in zip(a, b))
    assert not all(np.array_equal(x, y) for x, y in zip(a, c))


def test_bucket_batches_without_shuffle_is_sorted_and_needs_no_rng():
    lengths = [5, 1, 4, 2, 3]
    batches = bucket_batches(lengths, 2, shuffle=False)
    assert [b.tolist() for b in batches] == [[1, 3], [4, 2], [0]]
    with pytest.raises(ValueError, match="rng"):
        bucket_batches(lengths, 2)


def test_mlm_mask_statistics():
    rng = np.random.default_rng(0)
    B, T, V, MASK = 512, 128, 1000, 3
    ids = rng.integers(10, V, size=(B, T))
    ids[:, 0], ids[:, -1] = 1, 2          # [CLS] ... [SEP]
    special = np.zeros((B, T), dtype=bool)
    special[:, [0, -1]] = True
    special[:, 100:] |= rng.random((B, 1)) < 0.3   # some rows padded from column 100

    inputs, labels = mlm_mask(ids, rng, V, MASK, special, prob=0.15)
    chosen = labels != IGNORE_INDEX
    assert inputs.dtype == labels.dtype == np.int64
    assert not chosen[special].any()                   # specials and padding are never chosen
    np.testing.assert_array_equal(inputs[special], ids[special])
    np.testing.assert_array_equal(labels[chosen], ids[chosen])
    np.testing.assert_array_equal(inputs[~chosen], ids[~chosen])

    rate = chosen.sum() / (~special).sum()
    assert abs(rate - 0.15) < 0.005
    n = chosen.sum()
    masked = (inputs == MASK) & chosen
    kept = (inputs == ids) & chosen
    randomised = chosen & ~masked & ~kept
    assert abs(masked.sum() / n - 0.8) < 0.01
    # A random draw equals the original id 1/V of the time, hence "kept" is ~10% + 0.01%.
    assert abs(kept.sum() / n - 0.1) < 0.01
    assert abs(randomised.sum() / n - 0.1) < 0.01
    assert inputs[randomised].min() >= 0 and inputs[randomised].max() < V


def test_mlm_mask_checks_shapes():
    with pytest.raises(ValueError, match="special_mask has shape"):
        mlm_mask(np.zeros((2, 3)), np.random.default_rng(0), 10, 1, np.zeros((2, 4)))


def test_causal_lm_windows():
    tokens = np.arange(1000) * 3
    x, y = causal_lm_windows(tokens, block_size=16, batch_size=64, rng=np.random.default_rng(0))
    assert x.shape == y.shape == (64, 16) and x.dtype == y.dtype == np.int64
    np.testing.assert_array_equal(y[:, :-1], x[:, 1:])
    np.testing.assert_array_equal(y[:, -1], x[:, -1] + 3)   # the next token of the stream
    np.testing.assert_array_equal(np.diff(x, axis=1), 3)    # contiguous windows
    assert len(np.unique(x[:, 0])) > 40                     # random offsets
    assert y.max() <= 999 * 3
    with pytest.raises(ValueError, match="more than block_size"):
        causal_lm_windows(tokens[:16], 16, 1, np.random.default_rng(0))


def test_causal_lm_windows_reach_the_last_token():
    tokens = np.arange(10)
    x, y = causal_lm_windows(tokens, 9, 50, np.random.default_rng(0))
    assert y.max() == 9 and x.min() == 0


def test_train_val_split():
    tr, va = train_val_split(np.arange(100), 0.9)
    assert tr.tolist() == list(range(90)) and va.tolist() == list(range(90, 100))
    assert train_val_split("abcdefghij", 0.8) == ("abcdefgh", "ij")
    with pytest.raises(ValueError):
        train_val_split([1, 2], 1.0)
