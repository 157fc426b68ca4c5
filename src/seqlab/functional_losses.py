"""More losses and distances with torch.nn.functional's names, arguments and defaults.

`seqlab.functional` re-exports every public name here (``F.l1_loss(x, y)``). Each loss computes one
value per element (or per row) and reduces it by `reduction`: 'mean' (default), 'sum' or 'none'
(`kl_div` also takes 'batchmean'). torch's deprecated `size_average` and `reduce`, where torch still
takes them, override `reduction` with torch's warning. Everything is composed of differentiable Tensor
ops except `binary_cross_entropy`, whose primitive keeps torch's clamped logs and finite gradient at
probabilities 0 and 1 (see `BinaryCrossEntropy`).
"""
from __future__ import annotations

import math
import warnings

import numpy as np

from seqlab import backend
from seqlab.autograd.function import Function
from seqlab.autograd.higher_order import constant, graph_input
from seqlab.autograd.tensor import Tensor, _arr
from seqlab.backend import xp_of
from seqlab.creation import minimum
from seqlab.functional import _lp_norm, _reduce, _t, logsigmoid, where

__all__ = ["l1_loss", "smooth_l1_loss", "huber_loss", "binary_cross_entropy", "kl_div", "poisson_nll_loss",
           "gaussian_nll_loss", "margin_ranking_loss", "hinge_embedding_loss", "cosine_embedding_loss",
           "triplet_margin_loss", "soft_margin_loss", "multilabel_soft_margin_loss", "pairwise_distance"]

REDUCTIONS = ("mean", "sum", "none")


# ---- arguments -------------------------------------------------------------------------------------
def legacy_reduction(size_average: bool | None, reduce: bool | None, reduction: str, stacklevel: int = 3) -> str:
    """`reduction`, or what torch's deprecated `size_average` / `reduce` pair says when either is given
    (torch's `_Reduction.legacy_get_string`, with its warning): reduce=False is 'none', else
    size_average=False is 'sum', else 'mean'."""
    if size_average is None and reduce is None:
        return reduction
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    ret = "mean" if size_average and reduce else "sum" if reduce else "none"
    warnings.warn(f"size_average and reduce args will be deprecated, please use reduction='{ret}' instead.",
                  UserWarning, stacklevel=stacklevel)
    return ret


def check_reduction(reduction: str, allowed: tuple = REDUCTIONS) -> str:
    """`reduction` itself, or a ValueError naming the ones allowed."""
    if reduction not in allowed:
        names = ", ".join(repr(r) for r in allowed[:-1]) + f" or {allowed[-1]!r}"
        raise ValueError(f"reduction must be {names}, got {reduction!r}")
    return reduction


def _as_tensor(value, like: Tensor, cast: bool = True) -> Tensor:
    """`value` as a Tensor beside `like`: a Tensor stays itself (its gradient flows); an array, list or torch
    tensor moves to like's device and, with `cast`, takes its dtype."""
    if isinstance(value, Tensor):
        return value
    arr = backend.to_device(_arr(backend.from_torch(value)), like.device)
    return Tensor(arr.astype(like.dtype) if cast else arr)


def _target(name: str, input, target) -> tuple[Tensor, Tensor]:
    """(input, target) as Tensors; a target of another shape is broadcast, with torch's warning."""
    x = _t(input)
    y = _as_tensor(target, x)
    if y.shape != x.shape:
        warnings.warn(f"{name}: using a target size {y.shape} that is different to the input size {x.shape}. "
                      "This will likely lead to incorrect results due to broadcasting. "
                      "Please ensure they have the same size.", UserWarning, stacklevel=3)
    return x, y


def _same_size_weight(weight, x: Tensor) -> Tensor:
    w = _as_tensor(weight, x)
    if w.shape != x.shape:
        raise ValueError(f"Weights and input must have the same size, got weight {w.shape} and input {x.shape}")
    return w


# ---- regression --------------------------------------------------------------------------------------
def l1_loss(input: Tensor, target, size_average=None, reduce=None, reduction: str = "mean",  # noqa: A002
            weight=None) -> Tensor:
    """|x − y|. With `weight` (the input's shape) each term is scaled and 'mean' divides by Σ weight, as torch."""
    reduction = check_reduction(legacy_reduction(size_average, reduce, reduction))
    x, y = _target("l1_loss", input, target)
    loss = (x - y).abs()
    if weight is None:
        return _reduce(loss, reduction)
    w = _same_size_weight(weight, x)
    loss = loss * w
    return loss.sum() / w.sum() if reduction == "mean" else _reduce(loss, reduction)


def smooth_l1_loss(input: Tensor, target, size_average=None, reduce=None, reduction: str = "mean",  # noqa: A002
                   beta: float = 1.0) -> Tensor:
    """0.5 d² / β where |d| < β, else |d| − 0.5 β (d = x − y; Girshick 2015, Fast R-CNN eq. 3);
    β = 0 is l1_loss."""
    reduction = check_reduction(legacy_reduction(size_average, reduce, reduction))
    if beta < 0:
        raise ValueError(f"smooth_l1_loss does not support negative values for beta, got {beta}")
    x, y = _target("smooth_l1_loss", input, target)
    d = x - y
    a = d.abs()
    if beta == 0:  # the quadratic branch would divide by 0
        return _reduce(a, reduction)
    return _reduce(where(a.data < beta, 0.5 * d * d / beta, a - 0.5 * beta), reduction)


def huber_loss(input: Tensor, target, reduction: str = "mean", delta: float = 1.0,  # noqa: A002
               weight=None) -> Tensor:
    """0.5 d² where |d| < δ, else δ(|d| − 0.5 δ) (Huber 1964): smooth_l1_loss(β = δ) times δ. `weight` (the
    input's shape) scales each term; 'mean' is then the plain mean, as torch."""
    check_reduction(reduction)
    if delta <= 0:
        raise ValueError(f"huber_loss does not support non-positive values for delta, got {delta}")
    x, y = _target("huber_loss", input, target)
    d = x - y
    a = d.abs()
    loss = where(a.data < delta, 0.5 * d * d, delta * (a - 0.5 * delta))
    if weight is not None:
        loss = loss * _same_size_weight(weight, x)
    return _reduce(loss, reduction)


# ---- probabilities and counts ----------------------------------------------------------------------
class BinaryCrossEntropy(Function):
    """−w·[y·log x + (1 − y)·log(1 − x)] element-wise, on probabilities x, as torch's kernel.

    A primitive for stability: each log is clamped at −100, so x = 0 or 1 (a saturated float32 sigmoid)
    gives a finite loss, and the gradient is w·(x − y) / max(x(1 − x), 1e-12); composed from Log and
    Clamp it would be 0 · ∞ = NaN there. The target's gradient is w·(log(1 − x) − log x), unclamped
    (±inf at x = 0 or 1), as torch's. `w` (broadcast to x) gets no gradient, as in torch.
    """

    def forward(self, x, y, w):
        xp = xp_of(x)
        with np.errstate(divide="ignore"):  # log 0 = −inf, clamped next
            loss = -(y * xp.maximum(xp.log(x), -100) + (1 - y) * xp.maximum(xp.log1p(-x), -100))
        self.save_for_backward(x, y, w)
        return loss if w is None else loss * w

    def backward(self, grad):
        x, y, w = self.saved
        xp = xp_of(x)
        g = grad if w is None else grad * w
        gx = g * (x - y) / xp.maximum(x * (1 - x), x.dtype.type(1e-12)) if self.needs_input_grad[0] else None
        gy = None
        if self.needs_input_grad[1]:
            with np.errstate(divide="ignore"):
                gy = g * (xp.log1p(-x) - xp.log(x))
        return gx, gy, None


    def backward_graph(self, g):
        """`backward` with Tensor ops, for create_graph=True: the same clamped denominator (so x = 0 or 1
        keeps a finite first gradient; its derivatives there follow the clamp)."""
        x, y, w = self.saved
        xt, yt = graph_input(self, 0, x), graph_input(self, 1, y)
        if w is not None:
            g = g * constant(w)
        gx = g * (xt - yt) / (xt * (1 - xt)).clamp(min=1e-12) if self.needs_input_grad[0] else None
        gy = None
        if self.needs_input_grad[1]:
            with np.errstate(divide="ignore"):
                gy = g * ((-xt).log1p() - xt.log())
        return gx, gy, None


def binary_cross_entropy(input: Tensor, target, weight=None, size_average=None, reduce=None,  # noqa: A002
                         reduction: str = "mean") -> Tensor:
    """−[y log x + (1 − y) log(1 − x)] on probabilities x in [0, 1] (see `BinaryCrossEntropy`); `weight`
    broadcasts to the input and scales each term. From logits, `binary_cross_entropy_with_logits` is stabler."""
    reduction = check_reduction(legacy_reduction(size_average, reduce, reduction))
    x = _t(input)
    y = _as_tensor(target, x)
    if y.shape != x.shape:
        raise ValueError(f"Using a target size {y.shape} that is different to the input size {x.shape} is "
                         "deprecated. Please ensure they have the same size.")
    for name, t in (("input", x), ("target", y)):
        if bool((~((t.data >= 0) & (t.data <= 1))).any()):
            raise ValueError(f"all elements of {name} should be between 0 and 1")
    w = None
    if weight is not None:
        w = _as_tensor(weight, x).data
        if not backend.broadcasts_to(tuple(w.shape), x.shape):
            raise ValueError(f"weight of shape {tuple(w.shape)} does not broadcast to the input's shape {x.shape}")
    return _reduce(BinaryCrossEntropy.apply(x, y, w), reduction)


def _xlogy_self(t: Tensor) -> Tensor:
    """t · log t with 0 at t = 0 (torch's xlogy(t, t)); log(1) stands in at 0, so no 0 · (−∞) = NaN."""
    return t * where(t.data == 0, 1.0, t).log()


def kl_div(input: Tensor, target, size_average=None, reduce=None, reduction: str = "mean",  # noqa: A002
           log_target: bool = False) -> Tensor:
    """KL(target ‖ exp(input)) term by term, input holding log-probabilities: y (log y − x), or with
    `log_target` eʸ (y − x). 'batchmean' (the KL divergence itself) divides the sum by the batch size;
    'mean' by every element, with torch's warning."""
    if size_average is not None or reduce is not None:
        reduction = legacy_reduction(size_average, reduce, reduction)
    elif reduction == "mean":
        warnings.warn("reduction: 'mean' divides the total loss by both the batch size and the support size."
                      "'batchmean' divides only by the batch size, and aligns with the KL div math definition."
                      "'mean' will be changed to behave the same as 'batchmean' in the next major release.",
                      UserWarning, stacklevel=2)
    check_reduction(reduction, ("mean", "batchmean", "sum", "none"))
    x = _t(input)
    y = _as_tensor(target, x)
    loss = y.exp() * (y - x) if log_target else _xlogy_self(y) - y * x
    if reduction == "batchmean":
        return loss.sum() / x.shape[0] if x.ndim else loss.sum()
    return _reduce(loss, reduction)


def poisson_nll_loss(input: Tensor, target, log_input: bool = True, full: bool = False,  # noqa: A002
                     size_average=None, eps: float = 1e-8, reduce=None, reduction: str = "mean") -> Tensor:
    """The Poisson negative log-likelihood of counts y given the rate: eˣ − y·x with `log_input` (x = log rate),
    else x − y·log(x + eps). `full` adds Stirling's log y! ≈ y log y − y + ½ log(2πy) where y > 1."""
    reduction = check_reduction(legacy_reduction(size_average, reduce, reduction))
    x = _t(input)
    y = _as_tensor(target, x)
    loss = x.exp() - y * x if log_input else x - y * (x + eps).log()
    if full:
        small = y.data <= 1
        ys = y.masked_fill(small, 1.0)  # log(1) in place of log(y ≤ 1): those terms are dropped anyway
        stirling = ys * ys.log() - ys + 0.5 * (ys * (2 * math.pi)).log()
        loss = loss + stirling.masked_fill(small, 0.0)
    return _reduce(loss, reduction)


def gaussian_nll_loss(input: Tensor, target, var, full: bool = False, eps: float = 1e-6,  # noqa: A002
                      reduction: str = "mean") -> Tensor:
    """½(log σ² + (x − y)² / σ²) (+ ½ log 2π with `full`), the Gaussian negative log-likelihood of y given
    mean x and variance `var`: one per element, or one shared along the last dim (var of shape (..., 1) or
    (...)), or a number. As torch, var is clamped to ≥ eps for the value only: the gradient flows as unclamped.
    """
    check_reduction(reduction)
    x = _t(input)
    y = _as_tensor(target, x)
    if isinstance(var, (int, float)) and not isinstance(var, bool):
        if var < 0:
            raise ValueError("var has negative entry/entries")
        v = x.new_full(x.shape, float(var))
    else:
        v = _as_tensor(var, x)
        if bool((v.data < 0).any()):
            raise ValueError("var has negative entry/entries")
    if v.shape != x.shape:
        if v.shape == x.shape[:-1]:  # one variance per row: (..., 1) broadcasts along the last dim
            v = v.unsqueeze(-1)
        elif not (v.ndim == x.ndim and sum(b for a, b in zip(x.shape, v.shape) if a != b) == 1):
            raise ValueError(f"var is of incorrect size: {v.shape} for an input of shape {x.shape}")
    held = v.detach()
    v = (v - held) + held.clamp(min=eps)  # the value max(var, eps); the gradient var's
    loss = 0.5 * (v.log() + (x - y) ** 2 / v)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce(loss, reduction)


# ---- margins and embeddings ------------------------------------------------------------------------
def margin_ranking_loss(input1: Tensor, input2: Tensor, target, margin: float = 0.0, size_average=None,
                        reduce=None, reduction: str = "mean") -> Tensor:
    """max(0, −y·(x1 − x2) + margin): y = 1 asks for x1 ranked above x2 by `margin`, y = −1 below."""
    reduction = check_reduction(legacy_reduction(size_average, reduce, reduction))
    x1, x2 = _t(input1), _t(input2)
    y = _as_tensor(target, x1)
    if not x1.ndim == x2.ndim == y.ndim:
        raise ValueError(f"margin_ranking_loss: all input tensors should have the same number of dimensions, got "
                         f"input1: {x1.shape}, input2: {x2.shape}, target: {y.shape}")
    return _reduce((-y * (x1 - x2) + margin).clamp(min=0.0), reduction)


def _labels(target, like: Tensor):
    """The ±1 labels of a target as an array on like's device (any dtype)."""
    return _as_tensor(target, like, cast=False).data


def hinge_embedding_loss(input: Tensor, target, margin: float = 1.0, size_average=None,  # noqa: A002
                         reduce=None, reduction: str = "mean") -> Tensor:
    """x where y = 1, max(0, margin − x) where y = −1 (x usually a distance), as torch's formula: a target
    that is neither gets both terms."""
    reduction = check_reduction(legacy_reduction(size_average, reduce, reduction))
    x = _t(input)
    y = _labels(target, x)
    return _reduce(where(y != 1, (margin - x).clamp(min=0.0), 0.0) + where(y != -1, x, 0.0), reduction)


def cosine_embedding_loss(input1: Tensor, input2: Tensor, target, margin: float = 0.0, size_average=None,
                          reduce=None, reduction: str = "mean") -> Tensor:
    """1 − cos(x1, x2) where y = 1, max(0, cos(x1, x2) − margin) where y = −1: rows of (N, D) inputs with an
    (N,) target, or two (D,) vectors with a 0-d one. cos = x1·x2 / √((|x1|² + 1e-12)(|x2|² + 1e-12)), as torch."""
    reduction = check_reduction(legacy_reduction(size_average, reduce, reduction))
    x1, x2 = _t(input1), _t(input2)
    y = _labels(target, x1)
    if y.ndim == 0 and not x1.ndim == x2.ndim == 1:
        raise ValueError(f"0D target tensor expects 1D input tensors, but found inputs with sizes {x1.shape} "
                         f"and {x2.shape}.")
    if y.ndim == 1 and not x1.ndim == x2.ndim == 2:
        raise ValueError(f"1D target tensor expects 2D input tensors, but found inputs with sizes {x1.shape} "
                         f"and {x2.shape}.")
    if y.ndim > 1:
        raise ValueError(f"0D or 1D target tensor expected, multi-target not supported (target shape "
                         f"{tuple(y.shape)})")
    if x1.shape != x2.shape or (y.ndim == 1 and y.shape[0] != x1.shape[0]):
        raise ValueError(f"cosine_embedding_loss: input1 {x1.shape} and input2 {x2.shape} must have the same "
                         f"shape, with one target per row (target shape {tuple(y.shape)})")
    d = x1.ndim - 1
    eps = 1e-12
    cos = (x1 * x2).sum(d) / (((x1 * x1).sum(d) + eps) * ((x2 * x2).sum(d) + eps)).sqrt()  # (N,) or ()
    loss = where(y == 1, 1 - cos, 0.0) + where(y == -1, (cos - margin).clamp(min=0.0), 0.0)
    return _reduce(loss, reduction)


def pairwise_distance(x1: Tensor, x2: Tensor, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False) -> Tensor:
    """‖x1 − x2 + eps‖_p along the last dim (inputs broadcast), as torch's; eps keeps the norm of equal
    rows away from 0. p may be any p ≥ 0 or ±inf (see `normalize`'s norm)."""
    a, b = _t(x1), _t(x2)
    diff = a - b + eps
    if diff.ndim == 0:  # torch takes the last dim of a 0-d tensor as its only element
        return _lp_norm(diff.reshape(1), p, -1, keepdim=False)
    return _lp_norm(diff, p, -1, keepdim=keepdim)


def triplet_margin_loss(anchor: Tensor, positive: Tensor, negative: Tensor, margin: float = 1.0, p: float = 2,
                        eps: float = 1e-6, swap: bool = False, size_average=None, reduce=None,
                        reduction: str = "mean") -> Tensor:
    """max(0, margin + d(a, p) − d(a, n)), d = `pairwise_distance` (Schroff et al. 2015, FaceNet eq. 1);
    `swap` uses min(d(a, n), d(p, n)) for the negative (Balntas et al. 2016)."""
    reduction = check_reduction(legacy_reduction(size_average, reduce, reduction))
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    a, pos, neg = _t(anchor), _t(positive), _t(negative)
    if not a.ndim == pos.ndim == neg.ndim:
        raise ValueError(f"The anchor, positive, and negative tensors are expected to have the same number of "
                         f"dimensions, but got: anchor {a.ndim}D, positive {pos.ndim}D, and negative {neg.ndim}D "
                         f"inputs")
    d_pos = pairwise_distance(a, pos, p, eps)
    d_neg = pairwise_distance(a, neg, p, eps)
    if swap:
        d_neg = minimum(d_neg, pairwise_distance(pos, neg, p, eps))
    return _reduce((margin + d_pos - d_neg).clamp(min=0.0), reduction)


def soft_margin_loss(input: Tensor, target, size_average=None, reduce=None,  # noqa: A002
                     reduction: str = "mean") -> Tensor:
    """log(1 + e^(−y·x)) = −log σ(y·x) for labels y = ±1 (the logistic loss), stable for any y·x."""
    reduction = check_reduction(legacy_reduction(size_average, reduce, reduction))
    x = _t(input)
    y = _as_tensor(target, x)
    if not backend.broadcasts_to(y.shape, x.shape):
        raise ValueError(f"soft_margin_loss: target of shape {y.shape} does not broadcast to the input's "
                         f"shape {x.shape}")
    return _reduce(-logsigmoid(y * x), reduction)


def multilabel_soft_margin_loss(input: Tensor, target, weight=None, size_average=None, reduce=None,  # noqa: A002
                                reduction: str = "mean") -> Tensor:
    """−[y log σ(x) + (1 − y) log σ(−x)] averaged over the classes (the last dim), one value per sample;
    `weight` (broadcast to the input, e.g. (C,)) scales each class's term. Multi-label BCE with logits."""
    reduction = check_reduction(legacy_reduction(size_average, reduce, reduction))
    x = _t(input)
    y = _as_tensor(target, x)
    loss = -(y * logsigmoid(x) + (1 - y) * logsigmoid(-x))
    if weight is not None:
        loss = loss * _as_tensor(weight, x)
    return _reduce(loss.sum(-1) / x.shape[-1], reduction)                   # (N,) before the reduction
