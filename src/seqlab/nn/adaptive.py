"""Adaptive softmax (Grave et al. 2017, "Efficient softmax approximation for GPUs"), as
torch.nn.AdaptiveLogSoftmaxWithLoss: a softmax over a large vocabulary that spends little on rare words.

The classes, sorted by frequency, are cut into a head shortlist [0, c₀) and tail clusters [cᵢ₋₁, cᵢ). The head
scores the shortlist words and one entry per cluster; cluster i scores its own words through a projection to
in_features // div_valueⁱ⁺¹ dims (§4.2: rarer words get fewer dims). A word w of cluster i has (§4.1, eq. 4)

    log p(w | h) = log p_head(cluster i | h) + log p_i(w | h),

a shortlist word just log p_head(w | h). `forward(input, target)` evaluates the tail of each row's own cluster
only, which is where the speed comes from; `log_prob` gives all n_classes log-probabilities.
"""
from __future__ import annotations

from collections import namedtuple
from collections.abc import Sequence

import numpy as np

from seqlab import backend, creation
from seqlab import functional as F
from seqlab.autograd.function import no_grad
from seqlab.autograd.tensor import Tensor
from seqlab.autograd.torch_errors import ArgumentError
from seqlab.nn.container import ModuleList, Sequential
from seqlab.nn.linear import Linear
from seqlab.nn.module import Module, takes_device

__all__ = ["AdaptiveLogSoftmaxWithLoss"]

_ASMoutput = namedtuple("_ASMoutput", ["output", "loss"])  # torch's name: output (N,), loss (scalar)


def _target_array(target) -> np.ndarray:
    """The class ids as a host integer array (a Tensor's array, an array, or a list of ints)."""
    arr = target.data if isinstance(target, Tensor) else target
    arr = backend.to_numpy(arr) if hasattr(arr, "shape") else np.asarray(arr)
    if arr.dtype.kind not in "iu":
        raise TypeError(f"AdaptiveLogSoftmaxWithLoss expects integer class ids as target, got dtype {arr.dtype}")
    return arr.astype(np.int64, copy=False)


@takes_device
class AdaptiveLogSoftmaxWithLoss(Module):
    """torch.nn.AdaptiveLogSoftmaxWithLoss(in_features, n_classes, cutoffs, div_value=4.0, head_bias=False).

    `head`: Linear(in_features, cutoffs[0] + n_clusters, bias=head_bias); `tail[i]`:
    Sequential(Linear(in_features, hsz, bias=False), Linear(hsz, osz, bias=False)) with
    hsz = in_features // div_value**(i + 1) and osz the cluster's class count — torch's names and shapes.

    forward(input (N, in_features) or (in_features,), target (N,) or ()) → (output, loss): output the
    log-probability of each row's target, loss = −mean(output). log_prob(input) → (N, n_classes);
    predict(input) → (N,) class ids, log_prob(input).argmax(1) computed without the tails where the head's best
    entry is a shortlist word.
    """

    def __init__(self, in_features: int, n_classes: int, cutoffs: Sequence[int], div_value: float = 4.0,
                 head_bias: bool = False, dtype=None) -> None:
        super().__init__()
        cutoffs = list(cutoffs)
        if len(cutoffs) == 0:
            raise ValueError("cutoffs should be a sequence of length larger than 0")
        if (cutoffs != sorted(cutoffs) or min(cutoffs) <= 0 or max(cutoffs) > n_classes - 1
                or len(set(cutoffs)) != len(cutoffs) or any(int(c) != c for c in cutoffs)):
            raise ValueError("cutoffs should be a sequence of unique, positive integers sorted in an increasing "
                             f"order, where each value is between 1 and n_classes-1 (got cutoffs={cutoffs}, "
                             f"n_classes={n_classes})")
        self.in_features, self.n_classes = in_features, n_classes
        self.cutoffs = [int(c) for c in cutoffs] + [n_classes]  # torch keeps n_classes as the last cutoff
        self.div_value, self.head_bias = div_value, head_bias
        self.shortlist_size = self.cutoffs[0]
        self.n_clusters = len(self.cutoffs) - 1
        self.head_size = self.shortlist_size + self.n_clusters
        self.head = Linear(in_features, self.head_size, bias=head_bias, dtype=dtype)
        self.tail = ModuleList()
        for i in range(self.n_clusters):
            hsz = int(in_features // (div_value ** (i + 1)))  # §4.2: cluster i projects to d / kⁱ⁺¹ dims
            osz = self.cutoffs[i + 1] - self.cutoffs[i]
            if hsz <= 0:
                raise ValueError(f"div_value={div_value} leaves tail cluster {i} no hidden dims: in_features // "
                                 f"div_value**{i + 1} = {hsz} (use a smaller div_value or fewer cutoffs)")
            self.tail.append(Sequential(Linear(in_features, hsz, bias=False, dtype=dtype),
                                        Linear(hsz, osz, bias=False, dtype=dtype)))

    def reset_parameters(self) -> None:
        self.head.reset_parameters()
        for i2h, h2o in self.tail:
            i2h.reset_parameters()
            h2o.reset_parameters()

    def forward(self, input_: Tensor, target_) -> _ASMoutput:  # torch's names: input_, target_
        x, tgt = F._t(input_), _target_array(target_)
        if tgt.ndim == 1:
            if x.ndim == 0 or x.shape[0] != tgt.shape[0]:
                raise ArgumentError(f"Input and target should have the same size in the batch dimension "
                                    f"(input {x.shape}, target {tgt.shape})")
            if x.ndim != 2:
                raise ArgumentError(f"1D target tensor expects 2D input tensors, but found inputs with size "
                                    f"{x.shape}")
        elif tgt.ndim == 0:
            if x.ndim != 1:
                raise ArgumentError(f"0D target tensor expects 1D input tensors, but found inputs with size "
                                    f"{x.shape}")
        else:
            raise ArgumentError(f"0D or 1D target tensor expected, multi-target not supported (target {tgt.shape})")
        batched = tgt.ndim == 1
        if not batched:
            x, tgt = x.unsqueeze(0), tgt.reshape(1)  # (1, in_features), (1,)
        N = tgt.shape[0]
        if N and (tgt.min() < 0 or tgt.max() >= self.n_classes):
            raise ArgumentError(f"Target values should be in [0, {self.n_classes - 1}], but values in range "
                                f"[{tgt.min()}, {tgt.max()}] were found. ")
        head_entry = tgt.copy()  # the head entry each row reads: its word, or its cluster's slot
        output = creation.zeros(N, dtype=x.dtype, device=x.device)  # (N,) log p_i(w | h), 0 for shortlist rows
        for i in range(self.n_clusters):
            lo, hi = self.cutoffs[i], self.cutoffs[i + 1]
            rows = np.nonzero((tgt >= lo) & (tgt < hi))[0]
            if rows.size == 0:
                continue
            head_entry[rows] = self.shortlist_size + i
            cluster_logprob = F.log_softmax(self.tail[i](x[rows]), dim=1)         # (n_i, hi − lo)
            local = cluster_logprob.gather(1, (tgt[rows] - lo)[:, None])           # (n_i, 1)
            output = output.index_add(0, rows, local.reshape(rows.size))           # (N,)
        head_logprob = F.log_softmax(self.head(x), dim=1)                          # (N, head_size)
        output = output + head_logprob.gather(1, head_entry[:, None]).reshape(N)   # eq. 4: head + cluster terms
        loss = (-output).mean()
        return _ASMoutput(output if batched else output.squeeze(0), loss)

    def _full_log_prob(self, x: Tensor, head_output: Tensor) -> Tensor:
        """(N, n_classes) log-probabilities of x (N, in_features) from its head logits (N, head_size)."""
        head_logprob = F.log_softmax(head_output, dim=1)                          # (N, head_size)
        pieces = [head_logprob[:, :self.shortlist_size]]                          # (N, c₀)
        for i, cluster in enumerate(self.tail):
            slot = self.shortlist_size + i
            cluster_logprob = F.log_softmax(cluster(x), dim=1)                    # (N, cᵢ₊₁ − cᵢ)
            pieces.append(cluster_logprob + head_logprob[:, slot:slot + 1])       # eq. 4
        return creation.cat(pieces, dim=1)                                         # (N, n_classes)

    def _rows(self, input, name: str) -> tuple[Tensor, bool]:
        x = F._t(input)
        if x.ndim not in (1, 2):
            raise ValueError(f"{name} expects input (N, {self.in_features}) or ({self.in_features},), got shape "
                             f"{x.shape}")
        return (x, True) if x.ndim == 2 else (x.unsqueeze(0), False)

    def log_prob(self, input: Tensor) -> Tensor:  # noqa: A002
        """log p(class | input) for every class: (N, in_features) → (N, n_classes); (in_features,) → (n_classes,)."""
        x, batched = self._rows(input, "log_prob")
        out = self._full_log_prob(x, self.head(x))
        return out if batched else out.squeeze(0)

    def predict(self, input: Tensor) -> Tensor:  # noqa: A002
        """The most probable class of each row: (N, in_features) → (N,) int64; (in_features,) → ().

        Equals log_prob(input).argmax(1): where the head's best entry is a shortlist word w, no tail word can
        beat it (log p(v) = log p_head(cluster) + log p_i(v) ≤ log p_head(cluster) ≤ log p_head(w)), so only
        the other rows need the tails."""
        x, batched = self._rows(input, "predict")
        with no_grad():  # class ids: nothing to differentiate
            head_output = self.head(x)                                            # (N, head_size)
            best = backend.to_numpy(head_output.data.argmax(1)).astype(np.int64) # (N,)
            rows = np.nonzero(best >= self.shortlist_size)[0]
            if rows.size:
                full = self._full_log_prob(x[rows], head_output[rows])            # (n, n_classes)
                best[rows] = backend.to_numpy(full.data.argmax(1))
        out = Tensor(backend.to_device(best, x.device))
        return out if batched else out.squeeze(0)
