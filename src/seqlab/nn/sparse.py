"""Embedding: a lookup table of learned vectors."""
from __future__ import annotations

import numpy as np

from seqlab import backend, creation
from seqlab import functional as F
from seqlab.nn import init
from seqlab.nn.module import Module, Parameter, takes_device


@takes_device
class Embedding(Module):
    """ids (...) -> vectors (..., embedding_dim); `weight` (num_embeddings, embedding_dim) ~ N(0, 1)."""

    def __init__(self, num_embeddings: int, embedding_dim: int, padding_idx: int | None = None, dtype=None):
        super().__init__()
        if padding_idx is not None:
            if not -num_embeddings <= padding_idx < num_embeddings:
                raise ValueError(f"padding_idx {padding_idx} must be within num_embeddings ({num_embeddings})")
            padding_idx %= num_embeddings
        self.num_embeddings, self.embedding_dim, self.padding_idx = num_embeddings, embedding_dim, padding_idx
        self.weight = Parameter(creation.zeros(num_embeddings, embedding_dim, dtype=dtype))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        init.normal_(self.weight)
        if self.padding_idx is not None:
            self.weight.data[self.padding_idx] = 0

    @classmethod
    def from_pretrained(cls, embeddings, freeze: bool = True, padding_idx: int | None = None) -> "Embedding":
        """An Embedding holding `embeddings` (num_embeddings, embedding_dim), frozen unless `freeze=False`."""
        from seqlab.autograd.tensor import Tensor

        arr = embeddings.data if isinstance(embeddings, Tensor) else backend.from_torch(embeddings)
        if backend.xp_of(arr) is np:
            arr = np.asarray(arr)
        if len(arr.shape) != 2:
            raise ValueError(f"embeddings must be 2-D (num_embeddings, embedding_dim), got shape {tuple(arr.shape)}")
        emb = cls(arr.shape[0], arr.shape[1], padding_idx=padding_idx, dtype=arr.dtype)
        emb.weight.data[...] = backend.to_device(arr, emb.weight.device)  # CuPy fills only from its own arrays
        emb.weight.requires_grad = not freeze
        return emb

    def forward(self, ids):
        return F.embedding(ids, self.weight, self.padding_idx)

    def extra_repr(self) -> str:
        pad = f", padding_idx={self.padding_idx}" if self.padding_idx is not None else ""
        return f"{self.num_embeddings}, {self.embedding_dim}{pad}"
