"""The last of torch.nn.functional's losses, with torch's names, arguments, defaults and errors:
`ctc_loss` (connectionist temporal classification, a primitive: `seqlab.autograd.ops.ctc`), and
`multi_margin_loss`, `multilabel_margin_loss`, `triplet_margin_with_distance_loss`, composed of Tensor ops.

`seqlab.functional` re-exports every public name here. Errors are of the type torch raises: ValueError
for a bad argument value torch checks in Python (reduction, p, margin), RuntimeError for shapes, lengths
and labels torch's kernels refuse, TypeError for arguments of the wrong kind.
"""
from __future__ import annotations

import operator

import numpy as np

from seqlab import backend
from seqlab.autograd.ops.ctc import CTC
from seqlab.autograd.tensor import Tensor, _arr
from seqlab.creation import minimum
from seqlab.functional import _reduce, _t, where
from seqlab.functional_losses import _as_tensor, check_reduction, legacy_reduction, pairwise_distance

__all__ = ["ctc_loss", "multi_margin_loss", "multilabel_margin_loss", "triplet_margin_with_distance_loss"]

# torch's names of the scalar types, for its "expected scalar type Long but found Float"
_TORCH_TYPE = {"int64": "Long", "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte", "bool": "Bool",
               "float16": "Half", "float32": "Float", "float64": "Double"}


def _host(value) -> np.ndarray:
    """A target or lengths argument (Tensor, array, torch tensor, list) as a NumPy array on the host."""
    return backend.to_numpy(_arr(backend.from_torch(value)))


def _shape(shape) -> str:
    return "[" + ", ".join(str(s) for s in shape) + "]"


def _class_indices(target, name: str) -> np.ndarray:
    """Integer class labels as int64 on the host; floats and bools are refused as torch's kernels do."""
    y = _host(target)
    if y.dtype.kind not in "iu":
        raise RuntimeError(f"{name}: expected scalar type Long but found {_TORCH_TYPE.get(y.dtype.name, y.dtype.name)}"
                           f" (the target holds class indices)")
    return y.astype(np.int64)


def _vector_or_matrix(x: Tensor) -> None:
    if x.ndim > 2 or (x.ndim >= 1 and x.shape[-1] == 0):
        raise RuntimeError(f"Expected non-empty vector or matrix with optional 0-dim batch size, but got: "
                           f"{_shape(x.shape)}")


def _on(array: np.ndarray, like: Tensor):
    return backend.to_device(array, like.device)


# ---- ctc_loss ----------------------------------------------------------------------------------------
def _lengths(name: str, value, n: int) -> np.ndarray:
    """input_lengths / target_lengths as an (N,) int64 host array: a tensor (any shape with N integer
    elements) or a list/tuple of ints, as torch's ctc_loss takes them."""
    if isinstance(value, (list, tuple)):
        out = []
        for i, v in enumerate(value):
            try:
                out.append(operator.index(v))
            except TypeError:
                raise TypeError(f"ctc_loss(): argument '{name}' must be a tuple of ints, but got "
                                f"{type(v).__name__} at position {i}") from None
        arr = np.asarray(out, dtype=np.int64)
    else:
        arr = _host(value)
        if arr.dtype.kind not in "iu":
            raise RuntimeError(f"{name} must be integral, got dtype {arr.dtype}")
        arr = arr.reshape(-1).astype(np.int64)
    if arr.size != n:
        raise RuntimeError(f"{name} must be of size batch_size ({n}), got {arr.size} values")
    if arr.size and arr.min() < 0:
        raise RuntimeError(f"Expected {name} to have value at least 0, but got value {int(arr.min())}")
    return arr


def _padded_targets(targets, target_lengths: np.ndarray, n: int) -> np.ndarray:
    """The targets as a padded (N, S) int64 host array: a padded (N, S) one as it is, a concatenated 1-D one
    (sum(target_lengths) labels) cut into rows."""
    tg = _host(targets)
    if tg.ndim not in (1, 2):
        raise RuntimeError(f"Expected 1 to 2 dimensions, but got {tg.ndim}-dimensional tensor for argument #2 "
                           f"'targets'")
    tg = tg.astype(np.int64)
    longest = int(target_lengths.max()) if n else 0
    if tg.ndim == 2:
        if tg.shape[0] != n:
            raise RuntimeError(f"Expected tensor to have size {n} at dimension 0, but got size {tg.shape[0]} for "
                               f"argument #2 'targets'")
        if tg.shape[1] < longest:
            raise RuntimeError(f"Expected tensor to have size at least {longest} at dimension 1, but got size "
                               f"{tg.shape[1]} for argument #2 'targets'")
        return tg
    total = int(target_lengths.sum())
    if tg.shape[0] != total:
        raise RuntimeError(f"Expected tensor to have size {total} at dimension 0, but got size {tg.shape[0]} for "
                           f"argument #2 'targets' (the concatenated targets, sum(target_lengths) labels)")
    padded = np.zeros((n, longest), dtype=np.int64)
    starts = np.concatenate([[0], np.cumsum(target_lengths)[:-1]]).astype(np.int64)
    for i, (start, length) in enumerate(zip(starts, target_lengths)):
        padded[i, :length] = tg[start:start + length]
    return padded


def ctc_loss(log_probs: Tensor, targets, input_lengths, target_lengths, blank: int = 0, reduction: str = "mean",
             zero_infinity: bool = False) -> Tensor:
    """The connectionist temporal classification loss (Graves et al. 2006): −log of the total probability of
    every alignment of each target with its frames; see `seqlab.autograd.ops.ctc` for the recursion.

    log_probs: (T, N, C) log-probabilities (log_softmax over C), or (T, C) for one sequence.
    targets: padded class indices (N, S), S ≥ max(target_lengths), or all targets concatenated, 1-D of
    length sum(target_lengths); labels beyond a target's length are ignored. Repeated labels need a blank
    frame between them. input_lengths, target_lengths: (N,) integer tensors, or lists/tuples of ints (both
    the same kind). blank: the blank's class index, in [0, C).
    reduction: 'mean' divides each loss by its target length (at least 1) and averages over the batch, 'sum'
    adds, 'none' gives (N,) (a 0-d tensor for unbatched input). A target no alignment fits (too short an
    input) has loss inf; `zero_infinity` makes it 0, its gradient 0.
    The gradient with respect to log_probs is torch's: exp(log_probs) − the state posteriors.
    """
    reduction = check_reduction(reduction)
    if isinstance(blank, bool) or isinstance(blank, (float, np.floating)):
        raise TypeError(f"ctc_loss(): argument 'blank' must be int, not {type(blank).__name__}")
    blank = operator.index(blank)
    if not isinstance(zero_infinity, (bool, np.bool_)):
        raise TypeError(f"ctc_loss(): argument 'zero_infinity' must be bool, not {type(zero_infinity).__name__}")
    if isinstance(input_lengths, (list, tuple)) != isinstance(target_lengths, (list, tuple)):
        raise TypeError(f"ctc_loss(): input_lengths and target_lengths must both be tensors or both be lists/tuples "
                        f"of ints, got {type(input_lengths).__name__} and {type(target_lengths).__name__}")
    lp = _t(log_probs)
    if lp.dtype not in (np.float32, np.float64):
        raise NotImplementedError(f'"ctc_loss" not implemented for {lp.dtype} log_probs (float32 or float64)')
    if lp.ndim not in (2, 3):
        raise RuntimeError(f"Expected 3-dimensional tensor, but got {lp.ndim}-dimensional tensor for argument #1 "
                           f"'log_probs' ((T, N, C), or (T, C) unbatched)")
    batched = lp.ndim == 3
    if not batched:
        lp = lp.unsqueeze(1)                                                   # (T, 1, C)
    t_max, n, c = lp.shape
    if lp.numel() == 0:
        raise RuntimeError(f"log_probs tensor must not be empty, got shape {lp.shape if batched else (t_max, c)}")
    if not 0 <= blank < c:
        raise RuntimeError(f"blank must be in label range [0, {c}), got {blank}")
    il = _lengths("input_lengths", input_lengths, n)
    tl = _lengths("target_lengths", target_lengths, n)
    if il.max() > t_max:
        raise RuntimeError(f"Expected input_lengths to have value at most {t_max}, but got value {int(il.max())}")
    tg = _padded_targets(targets, tl, n)                                       # (N, S)
    used = np.arange(tg.shape[1])[None, :] < tl[:, None]
    bad = used & ((tg < 0) | (tg >= c))
    if bad.any():
        raise IndexError(f"ctc_loss: target label {int(tg[bad][0])} is out of bounds for {c} classes")
    nll = CTC.apply(lp, _on(tg, lp), _on(il, lp), _on(tl, lp), blank=blank, zero_infinity=bool(zero_infinity))
    if reduction == "mean":
        per_label = nll / _on(np.maximum(tl, 1).astype(lp.dtype), lp)         # (N,)
        return per_label.mean()
    if reduction == "sum":
        return nll.sum()
    return nll if batched else nll.reshape(())


# ---- margins over classes ----------------------------------------------------------------------------
def multi_margin_loss(input: Tensor, target, p: int = 1, margin: float = 1.0, weight=None,  # noqa: A002
                      size_average=None, reduce=None, reduction: str = "mean") -> Tensor:
    """The multi-class hinge loss (Weston & Watkins 1999; Crammer & Singer 2001): for scores x (N, C) or (C,)
    and class y, Σ_{i ≠ y} w_y · max(0, margin − x_y + x_i)^p / C, with p = 1 or 2 and `weight` (C,) a
    per-class factor (no gradient, as torch's). 'none' gives one loss per target element."""
    reduction = check_reduction(legacy_reduction(size_average, reduce, reduction))
    if p != 1 and p != 2:
        raise ValueError("only p == 1 and p == 2 supported")
    x = _t(input)
    if weight is not None and _as_tensor(weight, x).ndim != 1:
        raise ValueError("weight must be one-dimensional")
    _vector_or_matrix(x)
    c = x.shape[-1] if x.ndim else 1
    x2 = x.reshape(-1, c)                                                      # (N, C)
    n = x2.shape[0]
    y = _class_indices(target, "multi_margin_loss")
    if y.ndim > 1 or y.size != n:
        raise RuntimeError(f"multi_margin_loss: target tensor should be 1-D with size equal to the number of input "
                           f"samples (batch size). Expected target size [{n}], but got {_shape(y.shape)}. Input has "
                           f"shape {_shape(x.shape)}.")
    if y.size and (y.min() < 0 or y.max() >= c):
        bad = int(y.max() if y.max() >= c else y.min())
        raise RuntimeError(f"target out of range: multi_margin_loss got class {bad} for {c} classes")
    rows, yd = _on(np.arange(n), x), _on(y.reshape(-1), x)
    z = margin - x2[rows, yd].unsqueeze(1) + x2                                # (N, C): margin − x_y + x_i
    h = where(z.data > 0, z, 0.0)                                              # no gradient at z = 0, as torch's
    if p == 2:
        h = h * h
    if weight is not None:
        w = _as_tensor(weight, x).data
        if w.size != c:
            raise RuntimeError(f"inconsistent weight size, expected {c} but got {_shape(w.shape)}")
        h = h * Tensor(w[yd].reshape(n, 1))                                    # w_y, a constant
    own = _on(np.arange(c)[None, :] == y.reshape(-1, 1), x)                    # (N, C): the i = y terms
    loss = h.masked_fill(own, 0.0).sum(1) / c                                  # (N,)
    return loss.reshape(y.shape) if reduction == "none" else _reduce(loss, reduction)


def multilabel_margin_loss(input: Tensor, target, size_average=None, reduce=None,  # noqa: A002
                           reduction: str = "mean") -> Tensor:
    """The multi-label hinge loss: for scores x (N, C) or (C,) and a target of the same shape listing the
    sample's classes, ended by the first −1, Σ_j Σ_{i ∉ targets} max(0, 1 − (x_{y_j} − x_i)) / C (a class
    listed twice counts twice, as in torch). 'none' gives (N,), or a 0-d loss for a vector."""
    reduction = check_reduction(legacy_reduction(size_average, reduce, reduction))
    x = _t(input)
    _vector_or_matrix(x)
    c = x.shape[-1] if x.ndim else 1
    y = _class_indices(target, "multilabel_margin_loss")
    if (x.ndim == 2 and y.shape != x.shape) or (x.ndim < 2 and (y.ndim > 1 or y.size != c)):
        raise RuntimeError(f"inconsistent target size: {_shape(y.shape)} for input of size: {_shape(x.shape)}")
    if y.size and (y.min() < -1 or y.max() >= c):
        raise RuntimeError(f"argument #2 'target' is out of range: labels must be in [-1, {c}), got "
                           f"{int(y.max() if y.max() >= c else y.min())}")
    x2 = x.reshape(-1, c)                                                      # (N, C)
    y2 = y.reshape(-1, c)
    n = x2.shape[0]
    listed = np.cumprod(y2 != -1, axis=1).astype(bool)                         # (N, C): before the first −1
    safe = np.where(listed, y2, 0)
    is_target = np.zeros((n, c), dtype=bool)                                   # (N, C): class i is listed
    np.logical_or.at(is_target, (np.repeat(np.arange(n), c), safe.reshape(-1)), listed.reshape(-1))
    rows = _on(np.arange(n)[:, None], x)
    x_listed = x2[rows, _on(safe, x)]                                          # (N, C): x_{y_j}
    z = 1.0 - x_listed.unsqueeze(2) + x2.unsqueeze(1)                          # (N, C_j, C_i)
    pairs = _on(listed[:, :, None] & ~is_target[:, None, :], x)                # (N, C_j, C_i)
    h = where(pairs & (z.data > 0), z, 0.0)                                    # no gradient at z = 0, as torch's
    loss = h.sum((1, 2)) / c                                                   # (N,)
    if reduction == "none":
        return loss if x.ndim == 2 else loss.reshape(())
    return _reduce(loss, reduction)


# ---- triplets with any distance ----------------------------------------------------------------------
def triplet_margin_with_distance_loss(anchor: Tensor, positive: Tensor, negative: Tensor, *,
                                      distance_function=None, margin: float = 1.0, swap: bool = False,
                                      reduction: str = "mean") -> Tensor:
    """max(0, margin + d(a, p) − d(a, n)) for any distance d(x1, x2) → Tensor (default `pairwise_distance`,
    the Euclidean one; e.g. ``lambda a, b: 1 - F.cosine_similarity(a, b)``). `swap` uses min(d(a, n), d(p, n))
    for the negative (Balntas et al. 2016)."""
    check_reduction(reduction)
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    a, pos, neg = _t(anchor), _t(positive), _t(negative)
    if not a.ndim == pos.ndim == neg.ndim:
        raise RuntimeError(f"The anchor, positive, and negative tensors are expected to have the same number of "
                           f"dimensions, but got: anchor {a.ndim}D, positive {pos.ndim}D, and negative {neg.ndim}D "
                           f"inputs")
    distance = pairwise_distance if distance_function is None else distance_function
    d_pos = distance(a, pos)
    d_neg = distance(a, neg)
    if swap:
        d_neg = minimum(d_neg, distance(pos, neg))
    return _reduce((margin + d_pos - d_neg).clamp(min=0.0), reduction)
