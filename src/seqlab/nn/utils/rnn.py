"""Padded and packed batches of variable-length sequences, as `torch.nn.utils.rnn`.

A padded batch is (T, B, *) (torch's default) or (B, T, *) with `batch_first`, plus the lengths. A
`PackedSequence` keeps only the real steps: the batch is sorted by decreasing length and its rows are laid out
time-major, step 0 of every sequence, then step 1 of those still running, …  For lengths (3, 1, 2):

    padded (B, T)     a0 a1 a2        sorted: a (3), c (2), b (1)      data       a0 c0 b0 | a1 c1 | a2
                      b0 .  .                                          batch_sizes    3    |   2   |  1
                      c0 c1 .         sorted_indices (0, 2, 1)

`batch_sizes[t]` counts the sequences still running at step t. Packing and unpacking are one gather each
(an integer-array index), so the gradient flows back to the data through them. seqlab's recurrent layers take
a `PackedSequence` as torch's do, or the padded batch with `lengths=` (see `seqlab.nn.LSTM`).
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from seqlab import creation
from seqlab.autograd.tensor import Tensor
from seqlab.backend import device_of, from_torch, to_numpy, xp_of
from seqlab.errors import SeqlabError

__all__ = ["PackedSequence", "invert_permutation", "pack_padded_sequence", "pack_sequence", "pad_packed_sequence",
           "pad_sequence", "unpack_sequence", "unpad_sequence"]


class PackingError(SeqlabError, ValueError, RuntimeError):
    """Lengths that cannot be packed. torch raises RuntimeError here and seqlab's user errors are ValueErrors:
    this is both, so either `except` catches it."""


class _PackedFields(NamedTuple):
    data: Tensor                      # (sum(lengths), *): the sorted batch's real steps, time-major
    batch_sizes: Tensor               # (T,) int64 on the host: how many sequences run at step t
    sorted_indices: Tensor | None     # (B,) int64: the j-th longest sequence is sorted_indices[j] (None: sorted)
    unsorted_indices: Tensor | None   # (B,) int64: the inverse permutation, back to the caller's order


class PackedSequence(_PackedFields):
    """torch's PackedSequence: a named tuple (data, batch_sizes, sorted_indices, unsorted_indices).

    Made by `pack_padded_sequence` or `pack_sequence`, read back by `pad_packed_sequence`. `data` may be on
    any device and of any dtype; the indices live on its device and `batch_sizes` always on the host.
    """

    __slots__ = ()

    def __new__(cls, data, batch_sizes=None, sorted_indices=None, unsorted_indices=None):
        if batch_sizes is None:  # torch also takes PackedSequence((data, batch_sizes))
            if not (isinstance(data, (tuple, list)) and len(data) == 2):
                raise TypeError("PackedSequence takes (data, batch_sizes, ...) or ((data, batch_sizes), ...)")
            data, batch_sizes = data
        if isinstance(batch_sizes, Tensor) and device_of(batch_sizes.data) != "cpu":
            raise ValueError("batch_sizes should always be on CPU; make a PackedSequence with pack_sequence or "
                             "pack_padded_sequence")
        if unsorted_indices is None:
            unsorted_indices = invert_permutation(sorted_indices)
        return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)

    def to(self, *args, **kwargs) -> PackedSequence:
        """`data.to(...)` (device and/or dtype, as Tensor.to); the indices follow data's device, batch_sizes
        stays on the host. Itself when data does not change."""
        data = self.data.to(*args, **kwargs)
        if data is self.data:
            return self

        def move(t):
            return None if t is None else t.to(device_of(data.data))
        return type(self)(data, self.batch_sizes, move(self.sorted_indices), move(self.unsorted_indices))

    def cpu(self) -> PackedSequence:
        return self.to("cpu")

    def cuda(self) -> PackedSequence:
        return self.to("cuda")

    def float(self) -> PackedSequence:
        return self.to(dtype=np.float32)

    def double(self) -> PackedSequence:
        return self.to(dtype=np.float64)

    def half(self) -> PackedSequence:
        return self.to(dtype=np.float16)

    def long(self) -> PackedSequence:
        return self.to(dtype=np.int64)

    def int(self) -> PackedSequence:
        return self.to(dtype=np.int32)

    @property
    def is_cuda(self) -> bool:
        return device_of(self.data.data) != "cpu"


def invert_permutation(permutation: Tensor | None) -> Tensor | None:
    """The inverse of a permutation (B,): out[permutation[j]] = j; None stays None. On permutation's device."""
    if permutation is None:
        return None
    perm = _host_array(permutation)
    inverse = np.empty_like(perm)
    inverse[perm] = np.arange(perm.size, dtype=perm.dtype)
    xp = xp_of(permutation.data) if isinstance(permutation, Tensor) else np
    return Tensor(xp.asarray(inverse))


# ---- host-side bookkeeping: lengths, batch sizes, the rows to gather --------------------------------------
def _host_array(x) -> np.ndarray:
    """A Tensor, torch tensor, array or list as a NumPy array (copied from the GPU when needed)."""
    x = from_torch(x)
    return to_numpy(x.data if isinstance(x, Tensor) else x)


def _lengths_array(lengths, batch: int) -> np.ndarray:
    """`lengths` (a list, NumPy array or CPU Tensor of B integers) as int64 (B,), checked as torch does."""
    if isinstance(lengths, Tensor) and device_of(lengths.data) != "cpu":
        raise PackingError(f"'lengths' argument should be a 1D CPU int64 tensor, but got {lengths.ndim}D "
                           f"{device_of(lengths.data)} {lengths.dtype} tensor")
    arr = _host_array(lengths)
    if arr.ndim != 1:
        raise PackingError(f"'lengths' argument should be a 1D CPU int64 tensor, but got {arr.ndim}D array "
                           f"of shape {arr.shape}")
    if arr.dtype.kind == "f" and np.all(arr == np.floor(arr)):
        arr = arr.astype(np.int64)  # torch casts lengths to int64
    if arr.size and arr.dtype.kind not in "iu":
        raise TypeError(f"lengths must be integers, got dtype {arr.dtype}")
    if arr.size != batch:
        raise PackingError(f"Expected `len(lengths)` to be equal to batch_size, but got {arr.size} "
                           f"(batch_size={batch})")
    return arr.astype(np.int64)


def _sorted_lengths(batch_sizes) -> np.ndarray:
    """(B,) lengths in sorted (decreasing) order, read off the batch sizes: sequence j runs while bs[t] > j."""
    bs = _host_array(batch_sizes).astype(np.int64)                      # (T,)
    batch = int(bs[0]) if bs.size else 0
    return (bs[None, :] > np.arange(batch)[:, None]).sum(1)            # (B,)


def _pack_rows(input: Tensor, sorted_lengths: np.ndarray, order: np.ndarray | None, batch_first: bool) -> Tensor:
    """The real steps of `input` (T, B, *) or (B, T, *), sorted batch, time-major: one gather -> (N, *).

    `order[j]` is the batch index of the j-th longest sequence (None: the batch is sorted already)."""
    steps = int(sorted_lengths[0])
    running = np.arange(steps)[:, None] < sorted_lengths[None, :]       # (T', B): step t of sorted seq j is real
    t, j = np.nonzero(running)                                          # (N,) each, t-major: the packed order
    b = j if order is None else order[j]                                # batch index in the caller's order
    return input[(b, t) if batch_first else (t, b)]                     # (N, *)


def _check_padded(input, batch_first: bool, what: str) -> tuple[int, int]:
    """(T, B) of a padded batch, or a ValueError naming its shape."""
    if not isinstance(input, Tensor):
        raise TypeError(f"{what} expects a Tensor, got {type(input).__name__}")
    if input.ndim < 2:
        layout = "(B, T, *)" if batch_first else "(T, B, *)"
        raise ValueError(f"{what} expects input {layout} with at least 2 dims, got shape {input.shape}")
    T, B = (input.shape[1], input.shape[0]) if batch_first else input.shape[:2]
    if T == 0 or B == 0:
        raise PackingError(f"Cannot pack empty tensors (input shape {input.shape}).")
    return T, B


# ---- torch's functions ---------------------------------------------------------------------------------------
def pack_padded_sequence(input: Tensor, lengths, batch_first: bool = False,
                         enforce_sorted: bool = True) -> PackedSequence:
    """Pack a padded batch, input (T, B, *) or (B, T, *) with batch_first, of `lengths` (B,) on the host.

    enforce_sorted=True requires decreasing lengths (torch's ONNX-friendly path, sorted_indices None); False
    sorts them (a stable sort: equal lengths keep their order; torch's order among ties is unspecified past 16
    sequences) and records the permutation. Steps past a length are dropped; the gradient reaches the rest."""
    T, B = _check_padded(input, batch_first, "pack_padded_sequence")
    lengths = _lengths_array(lengths, B)                                # (B,)
    if lengths.min() <= 0:
        raise PackingError("Length of all samples has to be greater than 0, but found an element in 'lengths' "
                           f"that is <= 0 (lengths {lengths.tolist()})")
    if lengths.max() > T:
        raise PackingError(f"lengths must be at most the padded length {T} (input {input.shape}, "
                           f"batch_first={batch_first}), got a length of {lengths.max()}")
    if enforce_sorted:
        if np.any(np.diff(lengths) > 0):
            raise PackingError("`lengths` array must be sorted in decreasing order when `enforce_sorted` is True. "
                               "You can pass `enforce_sorted=False` to pack_padded_sequence and/or pack_sequence "
                               "to sidestep this requirement if you do not need ONNX exportability.")
        order, sorted_indices = None, None
    else:
        order = np.argsort(-lengths, kind="stable")                    # (B,) longest first
        sorted_indices = Tensor(xp_of(input.data).asarray(order))
    sorted_lengths = lengths if order is None else lengths[order]
    data = _pack_rows(input, sorted_lengths, order, batch_first)         # (N, *)
    batch_sizes = (sorted_lengths[None, :] > np.arange(sorted_lengths[0])[:, None]).sum(1)  # (T',)
    return PackedSequence(data, Tensor(batch_sizes.astype(np.int64)), sorted_indices)


def pad_packed_sequence(sequence: PackedSequence, batch_first: bool = False, padding_value: float = 0.0,
                        total_length: int | None = None) -> tuple[Tensor, Tensor]:
    """The padded batch back, (T, B, *) or (B, T, *) with batch_first, in the caller's original order, and
    the lengths (B,) int64 on the host. T is the longest length, or `total_length` when given (>= it)."""
    if not isinstance(sequence, PackedSequence):
        raise TypeError(f"pad_packed_sequence expects a PackedSequence, got {type(sequence).__name__}")
    data = sequence.data                                                # (N, *)
    sorted_lengths = _sorted_lengths(sequence.batch_sizes)              # (B,)
    steps = int(sorted_lengths[0]) if sorted_lengths.size else 0
    if total_length is not None:
        if total_length < steps:
            raise ValueError("Expected total_length to be at least the length of the longest sequence in input, "
                             f"but got total_length={total_length} and max sequence length being {steps}")
        steps = int(total_length)
    if int(sorted_lengths.sum()) != data.shape[0]:
        raise ValueError(f"batch_sizes add up to {int(sorted_lengths.sum())} rows but data has shape {data.shape}")
    B, N = sorted_lengths.size, data.shape[0]
    unsorted = (np.arange(B) if sequence.unsorted_indices is None
                else _host_array(sequence.unsorted_indices))            # (B,): sorted position of sequence b
    bs = _host_array(sequence.batch_sizes).astype(np.int64)
    offsets = np.concatenate([[0], np.cumsum(bs)])                       # (T'+1,): where step t starts in data
    t = np.arange(steps)[:, None]                                        # (T, 1)
    lengths = sorted_lengths[unsorted]                                   # (B,) in the caller's order
    real = t < lengths[None, :]                                          # (T, B)
    rows = np.where(real, offsets[np.minimum(t, len(bs))] + unsorted[None, :], N)  # (T, B); N = the padding row
    rows = rows.T if batch_first else rows                               # (B, T) with batch_first
    if not real.all():
        pad = Tensor(xp_of(data.data).full((1,) + tuple(data.shape[1:]), padding_value, dtype=data.dtype))
        data = creation.cat([data, pad], 0)                              # (N + 1, *)
    return data[rows], Tensor(lengths.astype(np.int64))                  # (T, B, *) or (B, T, *), (B,)


def pack_sequence(sequences, enforce_sorted: bool = True) -> PackedSequence:
    """Pack a list of tensors (L_i, *): pad_sequence, then pack_padded_sequence with their lengths."""
    sequences = list(sequences)
    padded = pad_sequence(sequences)                                     # (T, B, *); checks the shapes
    lengths = [len(s) for s in sequences]
    return pack_padded_sequence(padded, lengths, enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences: PackedSequence) -> list[Tensor]:
    """The list of tensors (L_i, *) in the caller's order (the inverse of pack_sequence)."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)  # (B, T, *)
    return unpad_sequence(padded, lengths, batch_first=True)


def unpad_sequence(padded_sequences: Tensor, lengths, batch_first: bool = False) -> list[Tensor]:
    """The list of tensors (L_i, *) cut from a padded batch (T, B, *) or (B, T, *) with batch_first.

    Unlike torch's, it leaves `padded_sequences` as it is (torch transposes it in place when not batch_first)."""
    T, B = _check_padded(padded_sequences, batch_first, "unpad_sequence")
    lengths = _lengths_array(lengths, B)
    if lengths.size and (lengths.min() < 0 or lengths.max() > T):
        raise ValueError(f"lengths must lie in 0..{T} (the padded length), got {lengths.tolist()}")
    if batch_first:
        return [padded_sequences[b, :n] for b, n in enumerate(lengths.tolist())]      # each (L_b, *)
    return [padded_sequences[:n, b] for b, n in enumerate(lengths.tolist())]


def pad_sequence(sequences, batch_first: bool = False, padding_value: float = 0.0,
                 padding_side: str = "right") -> Tensor:
    """Tensors (L_i, *) stacked into (B, L_max, *) with batch_first, else (L_max, B, *) (torch's default),
    each padded with `padding_value` on the right (or the left); gradients flow back to each sequence."""
    if padding_side not in ("right", "left"):
        raise ValueError(f"padding_side must be 'right' or 'left', got {padding_side!r}")
    seqs = [s if isinstance(s, Tensor) else Tensor._of(s) for s in sequences]
    if not seqs:
        raise ValueError("pad_sequence needs at least one sequence")
    rest = {tuple(s.shape[1:]) for s in seqs}
    if len(rest) != 1 or any(s.ndim == 0 for s in seqs):
        raise ValueError(f"sequences must share every dim but the first, got shapes {[tuple(s.shape) for s in seqs]}")
    longest = max(s.shape[0] for s in seqs)
    rows = []
    for s in seqs:
        pad = Tensor(xp_of(s.data).full((longest - s.shape[0],) + tuple(s.shape[1:]), padding_value,
                                        dtype=s.dtype))                       # on the sequence's device
        rows.append(creation.cat([s, pad] if padding_side == "right" else [pad, s], 0) if pad.shape[0] else s)
    out = creation.stack(rows, 0)                                              # (B, L, *)
    return out if batch_first else out.transpose(0, 1)


def _pack_as(padded: Tensor, like: PackedSequence, batch_first: bool = False) -> PackedSequence:
    """`padded` (in the caller's order) packed exactly as `like`: same batch_sizes and indices. The recurrent
    layers use it to return their output packed as their input (a re-sort could reorder ties)."""
    order = None if like.sorted_indices is None else _host_array(like.sorted_indices)
    data = _pack_rows(padded, _sorted_lengths(like.batch_sizes), order, batch_first)   # (N, *)
    return PackedSequence(data, like.batch_sizes, like.sorted_indices, like.unsorted_indices)
