"""Embedding: a lookup table of learned vectors."""
from __future__ import annotations

import numpy as np

from seqlab import backend, creation
from seqlab import functional as F
from seqlab.nn import init
from seqlab.nn.module import Module, Parameter, takes_device



def _as_array(embeddings):
    """A seqlab Tensor's, torch tensor's or array's values as an array (NumPy or CuPy)."""
    from seqlab.autograd.tensor import Tensor

    arr = embeddings.data if isinstance(embeddings, Tensor) else backend.from_torch(embeddings)
    if backend.xp_of(arr) is np:
        arr = np.asarray(arr)
    return arr


def _pretrained(embeddings):
    """`from_pretrained`'s table as an array (a copy), 2-D or a ValueError."""
    arr = _as_array(embeddings)
    if len(arr.shape) != 2:
        raise ValueError(f"embeddings must be 2-D (num_embeddings, embedding_dim), got shape {tuple(arr.shape)}")
    return arr.copy()


class _Rows:
    """What Embedding and EmbeddingBag share: a `weight` of rows ~ N(0, 1), the `padding_idx` row 0."""

    def reset_parameters(self) -> None:
        init.normal_(self.weight)
        if self.padding_idx is not None:
            self.weight.data[self.padding_idx] = 0


@takes_device
class Embedding(_Rows, Module):
    """ids (...) -> vectors (..., embedding_dim); `weight` (num_embeddings, embedding_dim) ~ N(0, 1).

    torch's arguments (see `F.embedding`): `padding_idx` (that row starts at 0 and gets no gradient),
    `max_norm` / `norm_type` (rows looked up are renormalized in place in `weight`), `scale_grad_by_freq`.
    `sparse=True` is refused (seqlab's gradients are dense). `_weight` (num_embeddings, embedding_dim) is
    taken as the weight (not initialised; a seqlab Tensor's array is shared, as torch shares `_weight`'s
    storage), `_freeze=True` makes it not require grad.
    """

    def __init__(self, num_embeddings: int, embedding_dim: int, padding_idx: int | None = None,
                 max_norm: float | None = None, norm_type: float = 2.0, scale_grad_by_freq: bool = False,
                 sparse: bool = False, _weight=None, _freeze: bool = False, device=None, dtype=None):
        super().__init__()
        if sparse:
            raise NotImplementedError("Embedding: " + F.SPARSE_REFUSED)
        padding_idx = F.padding_row(padding_idx, num_embeddings)
        self.num_embeddings, self.embedding_dim, self.padding_idx = num_embeddings, embedding_dim, padding_idx
        self.max_norm, self.norm_type, self.scale_grad_by_freq = max_norm, norm_type, scale_grad_by_freq
        self.sparse = sparse
        if _weight is None:
            self.weight = Parameter(creation.zeros(num_embeddings, embedding_dim, dtype=dtype),
                                    requires_grad=not _freeze)
            self.reset_parameters()
        else:  # as torch: taken as it is (no initialisation, the padding row too; `dtype` is not applied)
            from seqlab.autograd.tensor import Tensor

            if isinstance(_weight, Tensor):
                arr = _weight.data  # shared, on its device
            else:  # an array, a list or a torch tensor: on the active device (`with backend.device("cuda")`)
                arr = backend.to_device(_as_array(_weight), backend.device_of_module(backend.get_xp()))
            if tuple(arr.shape) != (num_embeddings, embedding_dim):
                raise ValueError(f"_weight has shape {tuple(arr.shape)}, expected (num_embeddings, embedding_dim) "
                                 f"= ({num_embeddings}, {embedding_dim})")
            self.weight = Parameter(arr, requires_grad=not _freeze)
        if device is not None:  # given by position; by keyword `takes_device` moves the layer
            self.to(backend.from_torch_name(device))

    @classmethod
    def from_pretrained(cls, embeddings, freeze: bool = True, padding_idx: int | None = None,
                        max_norm: float | None = None, norm_type: float = 2.0, scale_grad_by_freq: bool = False,
                        sparse: bool = False) -> "Embedding":
        """An Embedding holding `embeddings` (num_embeddings, embedding_dim) as they are (a copy; the padding
        row too), frozen unless `freeze=False`; the other arguments as the constructor's."""
        arr = _pretrained(embeddings)
        return cls(arr.shape[0], arr.shape[1], padding_idx=padding_idx, max_norm=max_norm, norm_type=norm_type,
                   scale_grad_by_freq=scale_grad_by_freq, sparse=sparse, _weight=arr, _freeze=freeze)

    def forward(self, input):  # noqa: A002 (torch's name)
        return F.embedding(input, self.weight, self.padding_idx, self.max_norm, self.norm_type,
                           self.scale_grad_by_freq)

    def extra_repr(self) -> str:
        s = f"{self.num_embeddings}, {self.embedding_dim}"
        if self.padding_idx is not None:
            s += f", padding_idx={self.padding_idx}"
        if self.max_norm is not None:
            s += f", max_norm={self.max_norm}"
        if self.norm_type != 2:
            s += f", norm_type={self.norm_type}"
        if self.scale_grad_by_freq is not False:
            s += f", scale_grad_by_freq={self.scale_grad_by_freq}"
        return s


@takes_device
class EmbeddingBag(_Rows, Module):
    """Bags of ids -> one vector each (B, embedding_dim): the sum, mean (default) or max of the bag's rows, as
    torch's; what the PyTorch text-classification tutorial feeds its linear layer. `forward(input, offsets,
    per_sample_weights)` as `F.embedding_bag`: `input` (B, N), or 1-D with `offsets` where each bag starts.
    `weight` (num_embeddings, embedding_dim) ~ N(0, 1), the `padding_idx` row 0 (left out of every bag)."""

    def __init__(self, num_embeddings: int, embedding_dim: int, max_norm: float | None = None,
                 norm_type: float = 2.0, scale_grad_by_freq: bool = False, mode: str = "mean", sparse: bool = False,
                 _weight=None, include_last_offset: bool = False, padding_idx: int | None = None,
                 device=None, dtype=None):
        super().__init__()
        if mode not in ("sum", "mean", "max"):
            raise ValueError("mode has to be one of sum, mean or max")
        if sparse or scale_grad_by_freq:
            F.embedding_bag(np.zeros((1, 1), np.int64), creation.zeros(1, 1), sparse=sparse,
                            scale_grad_by_freq=scale_grad_by_freq)  # its error
        table = Embedding(num_embeddings, embedding_dim, padding_idx=padding_idx, _weight=_weight, dtype=dtype)
        self.weight = table.weight
        self.num_embeddings, self.embedding_dim, self.padding_idx = num_embeddings, embedding_dim, table.padding_idx
        self.max_norm, self.norm_type, self.scale_grad_by_freq = max_norm, norm_type, scale_grad_by_freq
        self.mode, self.sparse, self.include_last_offset = mode, sparse, include_last_offset
        if device is not None:
            self.to(backend.from_torch_name(device))

    @classmethod
    def from_pretrained(cls, embeddings, freeze: bool = True, max_norm: float | None = None, norm_type: float = 2.0,
                        scale_grad_by_freq: bool = False, mode: str = "mean", sparse: bool = False,
                        include_last_offset: bool = False, padding_idx: int | None = None) -> "EmbeddingBag":
        """An EmbeddingBag holding `embeddings` (a copy), frozen unless `freeze=False`."""
        arr = _pretrained(embeddings)
        bag = cls(arr.shape[0], arr.shape[1], max_norm, norm_type, scale_grad_by_freq, mode, sparse, arr,
                  include_last_offset, padding_idx)
        bag.weight.requires_grad = not freeze
        return bag

    def forward(self, input, offsets=None, per_sample_weights=None):  # noqa: A002 (torch's name)
        return F.embedding_bag(input, self.weight, offsets, self.max_norm, self.norm_type, self.scale_grad_by_freq,
                               self.mode, self.sparse, per_sample_weights, self.include_last_offset,
                               self.padding_idx)

    def extra_repr(self) -> str:
        s = f"{self.num_embeddings}, {self.embedding_dim}, mode='{self.mode}'"
        if self.padding_idx is not None:
            s += f", padding_idx={self.padding_idx}"
        if self.max_norm is not None:
            s += f", max_norm={self.max_norm}"
        return s

