"""torch.utils.data's datasets (map-style and iterable), samplers and DataLoader, in this process (no worker
processes).

    from seqlab.utils.data import DataLoader, TensorDataset, random_split
    data = TensorDataset(X, y)                       # X (N, ...), y (N,): Tensors or NumPy arrays
    train, val = random_split(data, [0.8, 0.2])
    for X_batch, y_batch in DataLoader(train, batch_size=32, shuffle=True):
        ...                                          # (32, ...), (32,); the last batch may be smaller

Batches are torch's: the same boundaries and shapes for the same
`batch_size`/`drop_last`, and `default_collate` stacks samples as torch's
does (a tuple of fields becomes a list of stacked Tensors, Python floats
become float64, ints int64, strings stay a list). Shuffled orders come from
a NumPy generator: `generator=` if given, else seqlab's (`seqlab.manual_seed`),
read when each epoch starts; they are reproducible, not torch's orders.
"""
from __future__ import annotations

import collections.abc
import copy
import math
import warnings
from typing import Any, Callable, Iterable, Iterator, Sequence

import numpy as np

from seqlab import backend, creation
from seqlab import random as _random
from seqlab.autograd.tensor import Tensor

__all__ = ["Dataset", "IterableDataset", "TensorDataset", "Subset", "ConcatDataset", "ChainDataset", "random_split",
           "DataLoader", "default_collate", "default_convert", "get_worker_info", "Sampler", "SequentialSampler",
           "RandomSampler", "SubsetRandomSampler", "WeightedRandomSampler", "BatchSampler"]


# ---- datasets ------------------------------------------------------------------------------------
class Dataset:
    """A map-style dataset: `dataset[i]` is sample i, `len(dataset)` how many there are. Any object with
    these two methods (a list of tuples too) is one to DataLoader; subclass this to say so."""

    def __getitem__(self, index):
        raise NotImplementedError(f"{type(self).__name__} must define __getitem__")

    def __len__(self) -> int:
        raise NotImplementedError(f"{type(self).__name__} must define __len__")

    def __add__(self, other) -> "ConcatDataset":
        return ConcatDataset([self, other])


class IterableDataset:
    """A stream of samples: define `__iter__` (a generator over a file, windows cut from a text, ...).
    DataLoader batches consecutive samples; it takes no shuffle or sampler for it (order is the stream's),
    as torch's. `a + b` chains two streams (`ChainDataset`)."""

    def __iter__(self):
        raise NotImplementedError(f"{type(self).__name__} must define __iter__")

    def __add__(self, other) -> "ChainDataset":
        return ChainDataset([self, other])


class ConcatDataset(Dataset):
    """Map-style datasets one after another: index i of the whole is index i − cumulative_sizes[k − 1] of
    dataset k (negative indices count from the end)."""

    def __init__(self, datasets: Iterable) -> None:
        self.datasets = list(datasets)
        if not self.datasets:
            raise ValueError("datasets should not be an empty iterable")
        for d in self.datasets:
            if isinstance(d, IterableDataset):
                raise TypeError("ConcatDataset does not support IterableDataset (use ChainDataset)")
        self.cumulative_sizes = np.cumsum([len(d) for d in self.datasets]).tolist()

    def __len__(self) -> int:
        return self.cumulative_sizes[-1]

    def __getitem__(self, index):
        n = len(self)
        if index < 0:
            if -index > n:
                raise ValueError("absolute value of index should not exceed dataset length")
            index += n
        if index >= n:
            raise IndexError(f"index {index} is out of range for a ConcatDataset of {n} samples")
        k = int(np.searchsorted(self.cumulative_sizes, index, side="right"))
        return self.datasets[k][index - (self.cumulative_sizes[k - 1] if k else 0)]


class ChainDataset(IterableDataset):
    """Iterable datasets one after another."""

    def __init__(self, datasets: Iterable) -> None:
        self.datasets = list(datasets)

    def __iter__(self):
        for d in self.datasets:
            if not isinstance(d, IterableDataset):
                raise TypeError("ChainDataset only supports IterableDataset")
            yield from d

    def __len__(self) -> int:
        return sum(len(d) for d in self.datasets)


def get_worker_info():
    """None: seqlab's DataLoader loads in this process, as torch's main process sees it (an IterableDataset
    that shards by worker then reads everything)."""
    return None


class TensorDataset(Dataset):
    """Rows of tensors of one length: sample i is (tensors[0][i], tensors[1][i], ...), each a Tensor.

    NumPy arrays are taken as Tensors of their dtype (no copy).
    """

    def __init__(self, *tensors) -> None:
        if not tensors:
            raise ValueError("TensorDataset needs at least one tensor")
        converted = []
        for i, t in enumerate(tensors):
            if not isinstance(t, Tensor):
                if not (hasattr(t, "shape") and hasattr(t, "dtype")):
                    raise TypeError(f"TensorDataset takes Tensors or NumPy arrays; argument {i} is "
                                    f"{type(t).__name__}")
                t = Tensor(t)
            if t.ndim == 0:
                raise ValueError(f"TensorDataset: argument {i} is a 0-d tensor; each needs a first dim (the rows)")
            converted.append(t)
        lengths = {t.shape[0] for t in converted}
        if len(lengths) != 1:
            raise ValueError("TensorDataset needs tensors with the same first dim (one row per sample), got shapes "
                             + ", ".join(str(t.shape) for t in converted))
        self.tensors = tuple(converted)

    def __getitem__(self, index) -> tuple:
        # a row of a tensor outside any graph is its array's row (5x faster than the recorded t[index])
        return tuple(t[index] if t.requires_grad else Tensor._of(t.data[index]) for t in self.tensors)

    def __len__(self) -> int:
        return self.tensors[0].shape[0]


class Subset(Dataset):
    """The samples of `dataset` at `indices`, in that order."""

    def __init__(self, dataset, indices: Sequence[int]) -> None:
        self.dataset, self.indices = dataset, indices

    def __getitem__(self, index):
        if isinstance(index, list):
            return self.dataset[[self.indices[i] for i in index]]
        return self.dataset[self.indices[index]]

    def __len__(self) -> int:
        return len(self.indices)


def random_split(dataset, lengths: Sequence[int | float], generator: np.random.Generator | None = None
                 ) -> list[Subset]:
    """Disjoint random Subsets of the given lengths (torch's), which cover `dataset`.

    `lengths` are counts summing to len(dataset), or fractions summing to 1:
    each split gets floor(n · fraction) and the rest is dealt one at a time
    to the splits from the first (torch's rule, so the sizes are torch's).
    One permutation from `generator` (default: seqlab's) assigns the samples.
    """
    n = len(dataset)
    lengths = list(lengths)
    if math.isclose(sum(lengths), 1) and sum(lengths) <= 1:
        sizes = []
        for i, frac in enumerate(lengths):
            if not 0 <= frac <= 1:
                raise ValueError(f"random_split: fraction at index {i} is {frac}, not between 0 and 1")
            sizes.append(int(math.floor(n * frac)))
        for i in range(n - sum(sizes)):
            sizes[i % len(sizes)] += 1
        lengths = sizes
    if any(not isinstance(k, (int, np.integer)) or k < 0 for k in lengths):
        raise ValueError(f"random_split takes counts (ints >= 0) or fractions summing to 1, got {lengths}")
    if sum(lengths) != n:
        raise ValueError(f"random_split: lengths {lengths} sum to {sum(lengths)}, but the dataset has {n} samples")
    order = _generator(generator).permutation(n).tolist()
    splits, start = [], 0
    for k in lengths:
        splits.append(Subset(dataset, order[start:start + k]))
        start += k
    return splits


# ---- samplers: which indices, in which order -----------------------------------------------------
class Sampler:
    """Yields dataset indices; `len` is how many."""

    def __iter__(self) -> Iterator[int]:  # pragma: no cover - abstract
        raise NotImplementedError

    def __len__(self) -> int:  # pragma: no cover - abstract
        raise NotImplementedError


class SequentialSampler(Sampler):
    def __init__(self, data_source) -> None:
        self.data_source = data_source

    def __iter__(self) -> Iterator[int]:
        return iter(range(len(self.data_source)))

    def __len__(self) -> int:
        return len(self.data_source)


class RandomSampler(Sampler):
    """Each index once, in a new random order every pass, from `generator` (default: seqlab's, read at the
    start of each pass so `seqlab.manual_seed` set later still applies)."""

    def __init__(self, data_source, *, generator: np.random.Generator | None = None) -> None:
        self.data_source, self.generator = data_source, _check_generator(generator)

    def __iter__(self) -> Iterator[int]:
        return iter(_generator(self.generator).permutation(len(self.data_source)).tolist())

    def __len__(self) -> int:
        return len(self.data_source)


class SubsetRandomSampler(Sampler):
    """The given `indices`, in a new random order every pass (from `generator`, else seqlab's)."""

    def __init__(self, indices: Sequence[int], generator: np.random.Generator | None = None) -> None:
        self.indices, self.generator = indices, _check_generator(generator)

    def __iter__(self) -> Iterator[int]:
        order = _generator(self.generator).permutation(len(self.indices))
        return iter([self.indices[i] for i in order.tolist()])

    def __len__(self) -> int:
        return len(self.indices)


class WeightedRandomSampler(Sampler):
    """`num_samples` indices drawn with probabilities proportional to `weights` (one per sample; e.g. the
    inverse of each class's frequency, to balance classes), with replacement unless `replacement=False`,
    from `generator` (else seqlab's)."""

    def __init__(self, weights: Sequence[float], num_samples: int, replacement: bool = True,
                 generator: np.random.Generator | None = None) -> None:
        if isinstance(num_samples, bool) or not isinstance(num_samples, (int, np.integer)) or num_samples <= 0:
            raise ValueError(f"num_samples should be a positive integer value, but got num_samples={num_samples}")
        if not isinstance(replacement, bool):
            raise ValueError(f"replacement should be a boolean value, but got replacement={replacement}")
        w = np.asarray(backend.to_numpy(weights.data) if isinstance(weights, Tensor) else weights, dtype=np.float64)
        if w.ndim != 1:
            raise ValueError(f"weights should be a 1d sequence but given weights have shape {tuple(w.shape)}")
        if not np.all(np.isfinite(w)) or np.any(w < 0) or w.sum() <= 0:
            raise ValueError("weights must be finite, non-negative and not all zero")
        if not replacement and num_samples > np.count_nonzero(w):
            raise ValueError(f"cannot sample {num_samples} samples without replacement from "
                             f"{np.count_nonzero(w)} with a nonzero weight")
        self.weights, self.num_samples, self.replacement = w, int(num_samples), replacement
        self.generator = _check_generator(generator)

    def __iter__(self) -> Iterator[int]:
        p = self.weights / self.weights.sum()
        picks = _generator(self.generator).choice(len(p), size=self.num_samples, replace=self.replacement, p=p)
        return iter(picks.tolist())

    def __len__(self) -> int:
        return self.num_samples


class BatchSampler(Sampler):
    """Lists of `batch_size` indices from `sampler`; the last shorter one kept unless `drop_last`."""

    def __init__(self, sampler: Iterable[int], batch_size: int, drop_last: bool) -> None:
        _check_batch_size(batch_size)
        self.sampler, self.batch_size, self.drop_last = sampler, batch_size, drop_last

    def __iter__(self) -> Iterator[list[int]]:
        batch = []
        for i in self.sampler:
            batch.append(i)
            if len(batch) == self.batch_size:
                yield batch
                batch = []
        if batch and not self.drop_last:
            yield batch

    def __len__(self) -> int:
        n = len(self.sampler)  # type: ignore[arg-type]
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)


# ---- collation: a list of samples -> one batch ---------------------------------------------------
_COLLATE_ERROR = "default_collate: batch must contain Tensors, NumPy arrays, numbers, dicts or lists; found {}"


def _is_array(x) -> bool:
    return isinstance(x, np.ndarray) or backend.xp_of(x) is not np  # NumPy or CuPy


def default_collate(batch: Sequence) -> Any:
    """torch's default_collate: Tensors and arrays stacked on a new first dim, numbers into a 1-d Tensor
    (float -> float64, int -> int64, bool -> bool), strings left as they come; dicts, namedtuples, tuples and
    lists collated field by field (a tuple of fields becomes a list, as torch)."""
    elem = batch[0]
    if isinstance(elem, Tensor):
        return creation.stack(batch, 0)
    if _is_array(elem):
        if elem.dtype.kind in "SaUO":
            raise TypeError(_COLLATE_ERROR.format(elem.dtype))
        return Tensor(backend.xp_of(elem).stack(batch))
    if isinstance(elem, np.generic) and not isinstance(elem, (np.str_, np.bytes_)):
        return Tensor(np.array(batch))  # NumPy scalars keep their dtype
    if isinstance(elem, float):
        return Tensor(np.array(batch, dtype=np.float64))
    if isinstance(elem, int):  # bool too: [True, False] -> bool
        return Tensor(np.array(batch, dtype=bool if isinstance(elem, bool) else np.int64))
    if isinstance(elem, (str, bytes)):
        return batch
    if isinstance(elem, collections.abc.Mapping):
        return _rebuild(elem, {key: default_collate([d[key] for d in batch]) for key in elem})
    if isinstance(elem, collections.abc.Sequence):
        if any(len(b) != len(elem) for b in batch):
            raise RuntimeError(f"each element in list of batch should be of equal size, got sizes "
                               f"{[len(b) for b in batch]}")
        return _rebuild(elem, [default_collate(field) for field in zip(*batch)])
    raise TypeError(_COLLATE_ERROR.format(type(elem)))


def default_convert(data: Any) -> Any:
    """What DataLoader(batch_size=None) applies to each sample (torch's default_convert): NumPy arrays (not
    of strings) and NumPy scalars become Tensors, inside dicts, tuples and lists too; the rest stays."""
    if isinstance(data, Tensor):
        return data
    if _is_array(data):
        return data if data.dtype.kind in "SaUO" else Tensor._of(data)
    if isinstance(data, np.generic) and not isinstance(data, (np.str_, np.bytes_)):
        return Tensor(np.asarray(data))
    if isinstance(data, collections.abc.Mapping):
        return _rebuild(data, {key: default_convert(data[key]) for key in data})
    if isinstance(data, collections.abc.Sequence) and not isinstance(data, (str, bytes)):
        return _rebuild(data, [default_convert(d) for d in data])
    return data


def _rebuild(elem, values):
    """`values` (a dict for a mapping, a list for a sequence) in `elem`'s container type, as torch: a
    namedtuple stays one, a plain tuple becomes a list, other types are kept where they can be rebuilt."""
    if isinstance(elem, tuple):
        return type(elem)(*values) if hasattr(elem, "_fields") else values
    try:
        if isinstance(elem, (collections.abc.MutableMapping, collections.abc.MutableSequence)):
            clone = copy.copy(elem)  # keeps the container's type and any extra attributes
            for key, v in (values.items() if isinstance(values, dict) else enumerate(values)):
                clone[key] = v
            return clone
        return type(elem)(values)
    except TypeError:
        return values


# ---- the loader ----------------------------------------------------------------------------------
class DataLoader:
    """Batches of a map-style dataset or an IterableDataset, as torch.utils.data.DataLoader, loaded in this
    process.

    batch_size: samples per batch; None yields samples one by one (`default_convert`ed, not stacked).
    shuffle: a new order each epoch (each `iter(loader)`), from `generator` or else seqlab's generator.
    sampler / batch_sampler: any iterable of indices / of index lists, in place of the above (as torch).
    drop_last: drop the last batch when it is short. collate_fn: samples -> batch (`default_collate`).
    num_workers: seqlab starts no worker processes; a positive count warns and loads in this process.
    pin_memory: accepted and has no effect.
    """

    def __init__(self, dataset, batch_size: int | None = 1, shuffle: bool | None = None, sampler=None,
                 batch_sampler=None, num_workers: int = 0, collate_fn: Callable | None = None,
                 pin_memory: bool = False, drop_last: bool = False, *,
                 generator: np.random.Generator | None = None) -> None:
        stream = isinstance(dataset, IterableDataset)
        if not stream and not (hasattr(dataset, "__getitem__") and hasattr(dataset, "__len__")):
            raise TypeError(f"DataLoader takes a map-style dataset (with __getitem__ and __len__) or an "
                            f"IterableDataset, got {type(dataset).__name__}")
        if stream:
            for name, value in (("shuffle", shuffle), ("sampler", sampler), ("batch_sampler", batch_sampler)):
                if value not in (None, False):
                    raise ValueError(f"DataLoader with IterableDataset: expected unspecified {name} option, but "
                                     f"got {name}={value!r}")
        if isinstance(num_workers, bool) or not isinstance(num_workers, int) or num_workers < 0:
            raise ValueError(f"num_workers option should be a non-negative int; use num_workers=0 to disable "
                             f"multiprocessing (got {num_workers!r})")
        if num_workers > 0:  # d2l's and torch's examples pass 4: the same batches, loaded here
            warnings.warn(f"seqlab's DataLoader loads batches in this process: num_workers={num_workers} is "
                          f"ignored (the batches are the same; pass num_workers=0 to silence this)", stacklevel=2)
        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, "
                                 "and drop_last")
            batch_size, drop_last = None, False
        elif batch_size is None:
            if drop_last:
                raise ValueError("batch_size=None option disables auto-batching and is mutually exclusive with "
                                 "drop_last")
        else:
            _check_batch_size(batch_size)
        if sampler is None and not stream:
            generator = _check_generator(generator)
            sampler = RandomSampler(dataset, generator=generator) if shuffle else SequentialSampler(dataset)
        if stream:  # the stream's samples in order, `batch_size` at a time (`_Stream`)
            sampler = _Stream(dataset)
        if batch_size is not None and batch_sampler is None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)
        self.dataset, self.batch_size, self.drop_last, self.num_workers = dataset, batch_size, drop_last, 0
        self.sampler, self.batch_sampler, self.generator = sampler, batch_sampler, generator
        self.pin_memory = pin_memory
        self.collate_fn = collate_fn if collate_fn is not None else \
            default_collate if batch_sampler is not None else default_convert

    def __iter__(self) -> Iterator[Any]:
        # a stream's "indices" are its samples themselves (`_Stream`); a map-style dataset is indexed
        take = (lambda sample: sample) if isinstance(self.sampler, _Stream) else self.dataset.__getitem__
        if self.batch_sampler is None:  # no auto-batching: one sample at a time
            for i in self.sampler:
                yield self.collate_fn(take(i))
            return
        for indices in self.batch_sampler:
            yield self.collate_fn([take(i) for i in indices])

    def __len__(self) -> int:
        return len(self.batch_sampler if self.batch_sampler is not None else self.sampler)


class _Stream:
    """An IterableDataset's samples as DataLoader's "sampler": iterating yields the samples themselves; its
    length is the dataset's, where it has one (else len(loader) raises TypeError, as torch's)."""

    def __init__(self, dataset) -> None:
        self.dataset = dataset

    def __iter__(self):
        return iter(self.dataset)

    def __len__(self) -> int:
        return len(self.dataset)


def _check_batch_size(batch_size) -> None:
    if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)) or batch_size <= 0:
        raise ValueError(f"batch_size should be a positive integer value, but got batch_size={batch_size!r}")


def _check_generator(generator):
    if generator is not None and not isinstance(generator, np.random.Generator):
        raise TypeError(f"generator must be a numpy.random.Generator (e.g. np.random.default_rng(0)), got "
                        f"{type(generator).__name__}")
    return generator


def _generator(generator: np.random.Generator | None) -> np.random.Generator:
    return generator if generator is not None else _random.default_generator()
