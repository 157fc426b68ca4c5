"""The torch-free half of data parallelism: sharding global batches, per-rank dropout streams, torchrun's env."""
from collections import namedtuple

import numpy as np
import pytest

import seqlab
import seqlab.random as srandom
from seqlab.errors import SeqlabError
from seqlab.train.distributed import (STOP_REASONS, RankRandomness, shard_batch, shard_bounds, stop_code,
                                      torchrun_env)


@pytest.mark.parametrize("rows,world", [(32, 2), (31, 2), (7, 3), (5, 4), (2, 2), (100, 7)])
def test_shards_cover_the_global_batch_once_in_order(rows, world):
    bounds = [shard_bounds(rows, r, world) for r in range(world)]
    assert bounds[0][0] == 0 and bounds[-1][1] == rows
    assert all(a[1] == b[0] for a, b in zip(bounds, bounds[1:]))  # contiguous, no overlap
    sizes = [hi - lo for lo, hi in bounds]
    assert max(sizes) - min(sizes) <= 1


def test_shard_batch_slices_every_batch_first_array_as_a_view_and_copies_the_rest():
    ids = np.arange(31 * 5).reshape(31, 5)
    batch = {"ids": ids, "mask": np.ones((31, 5)), "labels": np.arange(31), "poison": True, "step": 3}
    parts = [shard_batch(batch, r, 2) for r in range(2)]
    assert np.array_equal(np.concatenate([p["ids"] for p, _ in parts]), ids)
    assert np.array_equal(np.concatenate([p["labels"] for p, _ in parts]), np.arange(31))
    assert all(p["poison"] is True and p["step"] == 3 for p, _ in parts)
    assert np.shares_memory(parts[1][0]["ids"], ids)  # a view, not a copy
    # weights W n_r / N: the weighted per-rank means give the global mean
    assert [w for _, w in parts] == [2 * 15 / 31, 2 * 16 / 31]
    values = np.random.default_rng(0).random(31)
    weighted = sum(w * values[slice(*shard_bounds(31, r, 2))].mean() for r, (_, w) in enumerate(parts)) / 2
    assert weighted == pytest.approx(values.mean(), rel=1e-12)


def test_shard_batch_keeps_tuples_lists_and_namedtuples():
    Pair = namedtuple("Pair", "x y")
    x, y = np.arange(8).reshape(4, 2), np.arange(4)
    (sx, sy), w = shard_batch((x, y), 1, 2)
    assert np.array_equal(sx, x[2:]) and np.array_equal(sy, y[2:]) and w == 1.0
    part, _ = shard_batch(Pair(x, y), 0, 2)
    assert isinstance(part, Pair) and np.array_equal(part.y, y[:2])
    part, _ = shard_batch([x, {"y": y}], 0, 4)
    assert isinstance(part, list) and np.array_equal(part[1]["y"], y[:1])


def test_a_rank_without_rows_gets_a_zero_weight_row():
    batch = {"x": np.arange(3)}
    parts = [shard_batch(batch, r, 4) for r in range(4)]
    assert [w for _, w in parts] == [0.0, 4 / 3, 4 / 3, 4 / 3]
    assert len(parts[0][0]["x"]) == 1


def test_shard_batch_errors_name_the_problem():
    with pytest.raises(SeqlabError, match=r"different first \(batch\) dimensions \[3, 4\]"):
        shard_batch({"a": np.zeros((3, 2)), "b": np.zeros(4)}, 0, 2)
    with pytest.raises(SeqlabError, match="holds no arrays"):
        shard_batch({"a": 1}, 0, 2)


def test_rank_streams_differ_but_leave_one_global_state():
    """After a micro-batch the shared generator is one draw further on every rank, whatever each drew."""
    seqlab.manual_seed(5)
    start = srandom.get_state()
    masks, after = [], []
    for rank, draws in [(0, 7), (1, 3), (2, 1000)]:
        srandom.set_state(start)
        rr = RankRandomness(rank)
        rr.enter()
        masks.append(srandom.default_generator().random(draws))
        rr.leave()
        after.append(srandom.get_state())
    assert after[0] == after[1] == after[2]
    srandom.set_state(start)
    srandom.default_generator().integers(2**63)
    assert srandom.get_state() == after[0]  # exactly one draw
    assert not np.allclose(masks[0][:3], masks[1][:3])
    rr = RankRandomness(1)  # entering twice leaves the first stream first: two draws
    srandom.set_state(start)
    rr.enter()
    rr.enter()
    rr.leave()
    twice = srandom.get_state()
    srandom.set_state(start)
    for _ in range(2):
        srandom.default_generator().integers(2**63)
    assert srandom.get_state() == twice


def test_stop_codes_rank_interrupts_first():
    assert stop_code(None) == 0 and stop_code("") == 0
    codes = [stop_code(r) for r in STOP_REASONS]
    assert codes == sorted(codes, reverse=True) and min(codes) > stop_code("something else") > 0


def test_torchrun_env_is_read_only_when_present():
    assert torchrun_env({}) is None
    env = {"RANK": "1", "WORLD_SIZE": "2", "LOCAL_RANK": "1", "MASTER_ADDR": "10.0.0.1", "MASTER_PORT": "29500"}
    assert torchrun_env(env) == {"rank": 1, "world_size": 2, "local_rank": 1, "master_addr": "10.0.0.1",
                                 "master_port": 29500}
    with pytest.raises(SeqlabError, match="MASTER_ADDR"):
        torchrun_env({k: v for k, v in env.items() if k != "MASTER_ADDR"})
    with pytest.raises(SeqlabError, match="RANK=2 is not in"):
        torchrun_env({**env, "RANK": "2"})
