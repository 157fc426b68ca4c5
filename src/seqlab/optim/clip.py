"""Gradient clipping, in place, as torch.nn.utils."""
from __future__ import annotations

import math

import numpy as np

from seqlab.backend import xp_of


def clip_grad_norm_(parameters, max_norm: float, norm_type: float = 2.0, error_if_nonfinite: bool = False,
                    foreach: bool | None = None) -> float:
    """Scale all gradients together so their joint norm is at most `max_norm`; returns the norm before.

    As torch: every gradient is multiplied by min(1, max_norm / (total + 1e-6)), and a non-finite total
    norm is no exception: a NaN norm makes every gradient NaN, an infinite one makes the finite entries 0
    (and the infinite ones NaN), so a broken step shows instead of applying unclipped gradients. With
    `error_if_nonfinite=True` a non-finite norm raises RuntimeError instead, leaving the gradients as they are.

    Where torch returns a 0-d tensor, the norm is a Python float (0.0 when no parameter has a gradient)
    that also answers torch's `.item()`: callers compare and log it directly. `norm_type` may be 'inf'.
    `foreach` is accepted for torch compatibility (one implementation here). The same as
    `clip_grads_with_norm_(parameters, max_norm, get_total_norm(grads, norm_type, error_if_nonfinite))`.
    """
    grads = _grads(parameters)
    total = get_total_norm(grads, norm_type, error_if_nonfinite)
    _scale(grads, max_norm, total)
    return total


def get_total_norm(tensors, norm_type: float = 2.0, error_if_nonfinite: bool = False,
                   foreach: bool | None = None) -> float:
    """The `norm_type` norm of all of `tensors` (Tensors or arrays, e.g. the gradients) as one vector, as
    torch.nn.utils.get_total_norm; a float with `.item()` (see `clip_grad_norm_`), 0.0 for no tensors."""
    norm_type = float(norm_type)  # torch takes the string 'inf' too
    arrays = [t.data if hasattr(t, "requires_grad") else t for t in _one_or_many(tensors)]
    arrays = [a for a in arrays if a is not None]
    if not arrays:
        return Norm(0.0)
    if norm_type == math.inf:
        total = max(float(xp_of(g).abs(g).max()) if g.size else 0.0 for g in arrays)
    elif norm_type == 2.0:  # Σ g·g as one BLAS dot per gradient: no temporaries
        total = math.sqrt(sum(float(xp_of(g).vdot(g.ravel(), g.ravel())) for g in arrays))
    else:
        total = sum(float((xp_of(g).abs(g) ** norm_type).sum()) for g in arrays) ** (1.0 / norm_type)
    if error_if_nonfinite and not math.isfinite(total):
        raise RuntimeError(f"the total norm of order {norm_type} of the gradients is {total}, non-finite, so it "
                           f"cannot be clipped; to scale the gradients by it anyway (making them NaN or 0), set "
                           f"error_if_nonfinite=False")
    return Norm(total)


def clip_grads_with_norm_(parameters, max_norm: float, total_norm, foreach: bool | None = None) -> None:
    """Scale every gradient in place by min(1, max_norm / (total_norm + 1e-6)), given the norm already
    computed (`get_total_norm`), as torch.nn.utils.clip_grads_with_norm_."""
    _scale(_grads(parameters), max_norm, float(total_norm.item() if hasattr(total_norm, "item") else total_norm))


def _one_or_many(tensors) -> list:
    return [tensors] if hasattr(tensors, "shape") else list(tensors)  # one tensor (or array), as torch allows


def _grads(parameters) -> list:
    return [p.grad for p in _one_or_many(parameters) if p.grad is not None]


def _scale(grads: list, max_norm: float, total: float) -> None:
    coef = max_norm / (total + 1e-6)
    if not coef >= 1:  # also when coef is NaN (a NaN norm, or inf/inf): torch's clamp(coef, max=1) keeps NaN
        with np.errstate(invalid="ignore"):  # inf · 0 = NaN, silently, as in torch
            for g in grads:
                g *= coef


class Norm(float):
    """The total norm `clip_grad_norm_` returns: a float, with torch's `.item()`."""

    def item(self) -> float:
        return float(self)


def clip_grad_value_(parameters, clip_value: float) -> None:
    """Clamp every gradient entry to [−clip_value, clip_value], in place."""
    for p in _one_or_many(parameters):
        if p.grad is not None:
            xp_of(p.grad).clip(p.grad, -clip_value, clip_value, out=p.grad)
