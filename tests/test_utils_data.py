"""seqlab.utils.data against torch.utils.data: same batches, same collation, same split sizes, same errors."""
import subprocess
import sys
from collections import namedtuple

import numpy as np
import pytest
import torch
import torch.utils.data as tdata

import seqlab
from seqlab import nn
from seqlab.utils.data import (BatchSampler, DataLoader, Dataset, SequentialSampler, Subset, TensorDataset,
                               default_collate, random_split)

Pair = namedtuple("Pair", ["x", "y"])


def assert_same(ours, theirs, where="batch"):
    """`ours` (seqlab) has torch's structure, container types, dtypes, shapes and values."""
    if isinstance(theirs, torch.Tensor):
        assert isinstance(ours, seqlab.Tensor), f"{where}: {type(ours).__name__}, torch has a Tensor"
        assert str(ours.dtype) == str(theirs.dtype).removeprefix("torch."), f"{where}: {ours.dtype} vs {theirs.dtype}"
        assert ours.shape == tuple(theirs.shape), f"{where}: {ours.shape} vs {tuple(theirs.shape)}"
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy(), err_msg=where)
        return
    assert type(ours) is type(theirs), f"{where}: {type(ours).__name__} vs torch's {type(theirs).__name__}"
    if isinstance(theirs, dict):
        assert list(ours) == list(theirs), where
        for k in theirs:
            assert_same(ours[k], theirs[k], f"{where}[{k!r}]")
    elif isinstance(theirs, (list, tuple)):
        assert len(ours) == len(theirs), where
        for i, (a, b) in enumerate(zip(ours, theirs)):
            assert_same(a, b, f"{where}[{i}]")
    else:
        assert ours == theirs, where


def both_datasets(n=10):
    x = np.arange(n * 3, dtype=np.float32).reshape(n, 3)
    y = np.arange(n) % 4
    return TensorDataset(x, y), tdata.TensorDataset(torch.from_numpy(x), torch.from_numpy(y))


@pytest.mark.parametrize("n", [10, 12])
@pytest.mark.parametrize("batch_size", [1, 3, 4, 12, 15])
@pytest.mark.parametrize("drop_last", [False, True])
def test_sequential_batches_equal_torchs(n, batch_size, drop_last):
    s_ds, t_ds = both_datasets(n)
    s = DataLoader(s_ds, batch_size=batch_size, drop_last=drop_last)
    t = tdata.DataLoader(t_ds, batch_size=batch_size, drop_last=drop_last)
    assert len(s) == len(t)
    s_batches, t_batches = list(s), list(t)
    assert len(s_batches) == len(t_batches)
    for i, (a, b) in enumerate(zip(s_batches, t_batches)):
        assert_same(a, b, f"batch {i}")


@pytest.mark.parametrize("batch_size, drop_last", [(4, False), (4, True), (5, False), (1, False)])
def test_shuffled_batches_have_torchs_shapes_and_each_sample_once(batch_size, drop_last):
    n = 22
    data = TensorDataset(np.arange(n), np.arange(n) * 10)
    s = DataLoader(data, batch_size=batch_size, shuffle=True, drop_last=drop_last)
    t = tdata.DataLoader(tdata.TensorDataset(torch.arange(n), torch.arange(n) * 10), batch_size=batch_size,
                         shuffle=True, drop_last=drop_last)
    assert len(s) == len(t)
    epochs = []
    for _ in range(2):
        batches = list(s)
        assert [tuple(b[0].shape) for b in batches] == [tuple(b[0].shape) for b in t]
        seen = np.concatenate([b[0].numpy() for b in batches])
        for ids, tens in batches:  # rows stay together
            np.testing.assert_array_equal(tens.numpy(), ids.numpy() * 10)
        if not drop_last:
            assert sorted(seen.tolist()) == list(range(n))  # every sample exactly once
        else:
            assert len(set(seen.tolist())) == len(seen) == n - n % batch_size
        epochs.append(seen.tolist())
    assert epochs[0] != epochs[1]  # a new order each epoch
    assert epochs[0] != list(range(len(epochs[0])))


def _order(loader):
    return [int(i) for b in loader for i in b.numpy()]


def test_shuffle_follows_manual_seed_read_when_the_epoch_starts():
    loader = DataLoader(list(range(50)), batch_size=8, shuffle=True)
    seqlab.manual_seed(3)  # after the loader is built
    first = _order(loader)
    seqlab.manual_seed(3)
    assert _order(loader) == first
    seqlab.manual_seed(4)
    assert _order(loader) != first
    assert sorted(first) == list(range(50))


def test_shuffle_with_an_explicit_generator_leaves_seqlabs_alone():
    data = list(range(30))
    a = DataLoader(data, batch_size=4, shuffle=True, generator=np.random.default_rng(9))
    b = DataLoader(data, batch_size=4, shuffle=True, generator=np.random.default_rng(9))
    seqlab.manual_seed(0)
    state = seqlab.random.get_state()
    assert _order(a) == _order(b)
    assert seqlab.random.get_state() == state
    assert _order(a) != _order(DataLoader(data, batch_size=4, shuffle=True, generator=np.random.default_rng(10)))


SAMPLES = [
    (np.array([1.5, 2.0]), 3, 0.25, True, "a"),
    {"ids": np.array([1, 2, 3]), "label": 1, "meta": {"w": np.float32(0.5)}},
    Pair(np.ones((2, 2), dtype=np.float64), [1, 2]),
    [np.int32(4), np.array(7.0)],
    2.5,
    7,
]


@pytest.mark.parametrize("sample", SAMPLES, ids=lambda s: type(s).__name__)
def test_default_collation_equals_torchs(sample):
    rng = np.random.default_rng(0)

    def jitter(s):  # samples of the same structure with different numbers
        if isinstance(s, np.ndarray):
            return (s + rng.integers(0, 5, s.shape)).astype(s.dtype)
        if isinstance(s, dict):
            return {k: jitter(v) for k, v in s.items()}
        if isinstance(s, tuple) and hasattr(s, "_fields"):
            return type(s)(*(jitter(v) for v in s))
        if isinstance(s, (list, tuple)):
            return type(s)(jitter(v) for v in s)
        if isinstance(s, (bool, str, np.bool_)):
            return s
        return type(s)(s + rng.integers(0, 5))

    data = [sample] + [jitter(sample) for _ in range(6)]
    s_batches = list(DataLoader(data, batch_size=3))
    t_batches = list(tdata.DataLoader(data, batch_size=3))
    assert len(s_batches) == len(t_batches) == 3
    for i, (a, b) in enumerate(zip(s_batches, t_batches)):
        assert_same(a, b, f"batch {i}")


def test_collating_tensors_stacks_them():
    rows = [seqlab.tensor([[1.0, 2.0]]) * k for k in range(3)]
    ours = default_collate(rows)
    theirs = tdata.default_collate([torch.tensor([[1.0, 2.0]]) * k for k in range(3)])
    assert_same(ours, theirs)


def test_collation_errors_as_torchs():
    with pytest.raises(RuntimeError, match="equal size"):
        default_collate([[1, 2], [3]])
    with pytest.raises(TypeError, match="found <class 'object'>"):
        default_collate([object(), object()])
    with pytest.raises(TypeError, match="found <U1"):
        default_collate([np.array(["a"]), np.array(["b"])])


def test_batch_size_none_yields_converted_samples_as_torch():
    s_ds, t_ds = both_datasets(4)
    s, t = list(DataLoader(s_ds, batch_size=None)), list(tdata.DataLoader(t_ds, batch_size=None))
    assert len(s) == len(t) == 4
    for a, b in zip(s, t):
        assert_same(a, b)
    arrays = [(np.array([i, i + 1]), i) for i in range(3)]
    for a, b in zip(DataLoader(arrays, batch_size=None), tdata.DataLoader(arrays, batch_size=None)):
        assert_same(a, b)


def test_sampler_and_batch_sampler_as_torchs():
    s_ds, t_ds = both_datasets(10)
    order = [7, 2, 9, 0, 4]
    for a, b in zip(DataLoader(s_ds, batch_size=2, sampler=order), tdata.DataLoader(t_ds, batch_size=2, sampler=order)):
        assert_same(a, b)
    batches = [[3, 1], [8], [0, 5, 6]]
    s, t = DataLoader(s_ds, batch_sampler=batches), tdata.DataLoader(t_ds, batch_sampler=batches)
    assert len(s) == len(t) == 3
    for a, b in zip(s, t):
        assert_same(a, b)
    for drop_last in (False, True):
        ours = BatchSampler(SequentialSampler(range(10)), 3, drop_last)
        theirs = tdata.BatchSampler(tdata.SequentialSampler(range(10)), 3, drop_last)
        assert list(ours) == list(theirs) and len(ours) == len(theirs)


@pytest.mark.parametrize("kwargs", [
    dict(batch_size=0), dict(batch_size=-2), dict(batch_size=None, drop_last=True),
    dict(sampler=[0, 1], shuffle=True), dict(batch_sampler=[[0]], batch_size=2),
    dict(batch_sampler=[[0]], drop_last=True),
])
def test_bad_arguments_are_value_errors_as_torchs(kwargs):
    s_ds, t_ds = both_datasets(4)
    with pytest.raises(ValueError):
        tdata.DataLoader(t_ds, **kwargs)
    with pytest.raises(ValueError):
        DataLoader(s_ds, **kwargs)


def test_workers_warn_and_load_in_this_process_and_zero_is_fine():
    s_ds, _ = both_datasets(4)
    with pytest.warns(UserWarning, match="num_workers=4 is ignored"):
        loader = DataLoader(s_ds, batch_size=2, num_workers=4)  # d2l's loaders pass 4: loaded here, same batches
    assert [b[0].numpy().tolist() for b in loader] == [b[0].numpy().tolist() for b in DataLoader(s_ds, batch_size=2)]
    for bad in (-1, 1.5, True):
        with pytest.raises(ValueError, match="non-negative int"):
            DataLoader(s_ds, batch_size=2, num_workers=bad)
    assert len(list(DataLoader(s_ds, batch_size=2, num_workers=0, pin_memory=True))) == 2
    with pytest.raises(TypeError, match="numpy.random.Generator"):
        DataLoader(s_ds, shuffle=True, generator=42)
    with pytest.raises(TypeError, match="map-style dataset"):
        DataLoader(iter(range(3)))


def test_tensor_dataset_rows_are_torchs():
    x = np.random.default_rng(0).normal(size=(5, 2, 3))
    y = np.arange(5)
    ours = TensorDataset(seqlab.tensor(x), y)
    theirs = tdata.TensorDataset(torch.tensor(x), torch.tensor(y))
    assert len(ours) == len(theirs) == 5
    for i in (0, 3, -1):
        assert isinstance(ours[i], tuple)
        assert_same(list(ours[i]), list(theirs[i]), f"row {i}")
    with pytest.raises(IndexError):
        ours[5]


def test_tensor_dataset_rows_keep_the_graph_of_tensors_that_require_grad():
    w = seqlab.randn(4, 2, requires_grad=True)
    data = TensorDataset(w, np.arange(4))
    (data[2][0] * 3).sum().backward()
    expected = np.zeros((4, 2), dtype=np.float32)
    expected[2] = 3
    np.testing.assert_array_equal(w.grad, expected)


def test_tensor_dataset_errors_name_the_shapes():
    with pytest.raises(ValueError, match=r"same first dim.*\(10, 3\), \(9,\)"):
        TensorDataset(np.zeros((10, 3)), np.zeros(9))
    with pytest.raises(TypeError, match="argument 1 is list"):
        TensorDataset(np.zeros(3), [1, 2, 3])
    with pytest.raises(ValueError, match="at least one"):
        TensorDataset()
    with pytest.raises(ValueError, match="0-d"):
        TensorDataset(np.float32(1.0))


@pytest.mark.parametrize("n, lengths", [
    (10, [0.3, 0.3, 0.4]), (11, [0.5, 0.5]), (7, [0.1, 0.2, 0.7]), (100, [0.333, 0.333, 0.334]),
    (10, [3, 7]), (5, [0, 5]),
])
def test_random_split_sizes_equal_torchs_and_cover_the_dataset(n, lengths):
    splits = random_split(list(range(n)), lengths)
    theirs = tdata.random_split(list(range(n)), lengths)
    assert [len(s) for s in splits] == [len(s) for s in theirs]
    assert all(isinstance(s, Subset) for s in splits)
    items = [s[i] for s in splits for i in range(len(s))]
    assert sorted(items) == list(range(n))


def test_random_split_is_reproducible_and_its_errors_say_why():
    data = list(range(20))
    seqlab.manual_seed(1)
    a = [s.indices for s in random_split(data, [5, 15])]
    seqlab.manual_seed(1)
    assert [s.indices for s in random_split(data, [5, 15])] == a
    assert [s.indices for s in random_split(data, [5, 15], generator=np.random.default_rng(1))] != \
        [list(range(5)), list(range(5, 20))]
    g = [s.indices for s in random_split(data, [0.5, 0.5], generator=np.random.default_rng(2))]
    assert g == [s.indices for s in random_split(data, [0.5, 0.5], generator=np.random.default_rng(2))]
    with pytest.raises(ValueError, match="sum to 19, but the dataset has 20"):
        random_split(data, [4, 15])
    with pytest.raises(ValueError):
        tdata.random_split(data, [4, 15])
    with pytest.raises(ValueError, match="fraction at index 0 is 1.5"):
        random_split(data, [1.5, -0.5])


def test_subset_and_custom_dataset_through_the_loader():
    class Squares(Dataset):
        def __len__(self):
            return 6

        def __getitem__(self, i):
            if not 0 <= i < 6:
                raise IndexError(i)
            return np.float32(i * i), i

    sub = Subset(Squares(), [5, 1, 3])
    assert len(sub) == 3 and sub[0] == (np.float32(25.0), 5)
    batches = list(DataLoader(sub, batch_size=2))
    assert_same(batches, list(tdata.DataLoader(tdata.Subset(Squares(), [5, 1, 3]), batch_size=2)))
    with pytest.raises(NotImplementedError, match="Empty must define __getitem__"):
        type("Empty", (Dataset,), {})()[0]


def test_reachable_as_torch_utils_data_after_import_seqlab():
    code = ("import seqlab as torch; from seqlab import utils; "
            "print(torch.utils.data.DataLoader.__module__, utils.data.TensorDataset.__name__)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["seqlab.utils.data", "TensorDataset"]


def test_d2l_linear_regression_with_lazy_linear_recovers_the_weights():
    # d2l 3.5 (concise linear regression), ported with `import seqlab as torch`
    rng = np.random.default_rng(0)
    w, b = np.array([2.0, -3.4]), 4.2
    X = rng.normal(size=(1000, 2)).astype(np.float32)
    y = (X @ w + b + rng.normal(0, 0.01, 1000)).astype(np.float32).reshape(-1, 1)
    seqlab.manual_seed(0)
    loader = seqlab.utils.data.DataLoader(seqlab.utils.data.TensorDataset(X, y), batch_size=10, shuffle=True)
    net = nn.LazyLinear(1)
    opt = seqlab.optim.SGD(net.parameters(), lr=0.03)  # before the first forward, as d2l does
    loss_fn = nn.MSELoss()
    for _ in range(3):
        for xb, yb in loader:
            loss = loss_fn(net(xb), yb)
            opt.zero_grad()
            loss.backward()
            opt.step()
    np.testing.assert_allclose(net.weight.numpy().ravel(), w, atol=0.01)
    np.testing.assert_allclose(net.bias.numpy(), [b], atol=0.01)


# ---- iterable datasets, concatenation, more samplers --------------------------------------------
def _streams(lib_data):
    class Windows(lib_data.IterableDataset):
        """(x, y) windows cut from a counting "text", as a language model's stream."""

        def __init__(self, n, sized=False):
            self.n, self.sized = n, sized

        def __iter__(self):
            for i in range(self.n):
                yield np.arange(i, i + 3), i + 3

        def __len__(self):
            if not self.sized:
                raise TypeError("no len")
            return self.n
    return Windows


@pytest.mark.parametrize("kw", [dict(batch_size=3), dict(batch_size=3, drop_last=True), dict(batch_size=None),
                                dict(batch_size=7), dict(batch_size=2, collate_fn=lambda b: len(b))])
def test_iterable_datasets_batch_as_torchs(kw):
    from seqlab.utils import data as sdata

    ours = list(DataLoader(_streams(sdata)(7), **kw))
    theirs = list(tdata.DataLoader(_streams(tdata)(7), **kw))
    assert len(ours) == len(theirs)
    for i, (a, b) in enumerate(zip(ours, theirs)):
        assert_same(a, b, f"batch {i}")
    chained = list(DataLoader(_streams(sdata)(2) + _streams(sdata)(3), batch_size=2))
    twin = list(tdata.DataLoader(_streams(tdata)(2) + _streams(tdata)(3), batch_size=2))
    for i, (a, b) in enumerate(zip(chained, twin)):
        assert_same(a, b, f"chained batch {i}")


def test_iterable_dataset_lengths_and_refusals_as_torchs():
    from seqlab.utils import data as sdata

    for data, lib in ((sdata, DataLoader), (tdata, tdata.DataLoader)):
        assert len(lib(_streams(data)(7, sized=True), batch_size=3)) == 3
        assert len(lib(_streams(data)(7, sized=True), batch_size=3, drop_last=True)) == 2
        with pytest.raises(TypeError):
            len(lib(_streams(data)(7), batch_size=3))
        for bad in (dict(shuffle=True), dict(sampler=[0, 1]), dict(batch_sampler=[[0]])):
            name = next(iter(bad))
            with pytest.raises(ValueError, match=f"expected unspecified {name} option"):
                lib(_streams(data)(7), **bad)
    assert sdata.get_worker_info() is None is tdata.get_worker_info()


def test_concat_dataset_as_torchs():
    from seqlab.utils import data as sdata

    parts = [[(1, 2.0)], [(3, 4.0), (5, 6.0)], [], [(7, 8.0)]]
    ours, theirs = sdata.ConcatDataset(parts), tdata.ConcatDataset(parts)
    assert len(ours) == len(theirs) == 4 and ours.cumulative_sizes == theirs.cumulative_sizes
    for i in range(-4, 4):
        assert ours[i] == theirs[i]
    for bad in (4, -5):
        with pytest.raises((IndexError, ValueError)):
            ours[bad]
    summed = TensorDataset(np.arange(3)) + TensorDataset(np.arange(10, 12))
    assert isinstance(summed, sdata.ConcatDataset) and [int(s[0]) for s in summed] == [0, 1, 2, 10, 11]
    for i, (a, b) in enumerate(zip(DataLoader(ours, batch_size=3), tdata.DataLoader(theirs, batch_size=3))):
        assert_same(a, b, f"batch {i}")
    with pytest.raises(ValueError, match="empty"):
        sdata.ConcatDataset([])
    with pytest.raises(TypeError, match="IterableDataset"):
        sdata.ConcatDataset([_streams(sdata)(2)])


def test_subset_random_sampler_permutes_the_given_indices():
    from seqlab.utils import data as sdata

    indices = [9, 4, 7, 1]
    sampler = sdata.SubsetRandomSampler(indices, generator=np.random.default_rng(0))
    first, second = list(sampler), list(sampler)
    assert sorted(first) == sorted(second) == sorted(indices) and len(sampler) == 4
    assert first != second or list(sampler) != first  # a new order each pass
    again = list(sdata.SubsetRandomSampler(indices, generator=np.random.default_rng(0)))
    assert again == first  # reproducible from the generator


def test_weighted_random_sampler_draws_by_weight_as_torchs():
    from seqlab.utils import data as sdata

    weights = [1.0, 0.0, 3.0, 4.0]
    draws = list(sdata.WeightedRandomSampler(weights, 40_000, generator=np.random.default_rng(1)))
    counts = np.bincount(draws, minlength=4) / len(draws)
    np.testing.assert_allclose(counts, np.array(weights) / 8, atol=0.01)  # torch's distribution
    assert counts[1] == 0
    distinct = list(sdata.WeightedRandomSampler(weights, 3, replacement=False, generator=np.random.default_rng(2)))
    assert sorted(distinct) == [0, 2, 3] and len(sdata.WeightedRandomSampler(weights, 5)) == 5
    balanced = DataLoader(TensorDataset(np.arange(4)), batch_size=2,
                          sampler=sdata.WeightedRandomSampler(weights, 6, generator=np.random.default_rng(3)))
    assert [len(b[0]) for b in balanced] == [2, 2, 2] and len(balanced) == 3
    for bad, match in (((weights, 0), "num_samples should be a positive integer"),
                       (([1.0, -1.0], 2), "non-negative"), ((weights, 4, False), "without replacement")):
        with pytest.raises(ValueError, match=match):
            sdata.WeightedRandomSampler(*bad)
    with pytest.raises(ValueError, match="num_samples should be a positive integer"):
        tdata.WeightedRandomSampler(weights, 0)
