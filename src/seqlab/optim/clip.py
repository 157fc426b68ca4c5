"""Gradient clipping, in place, as torch.nn.utils."""
from __future__ import annotations

import math

import numpy as np

from seqlab.backend import xp_of


def clip_grad_norm_(parameters, max_norm: float, norm_type: float = 2.0, error_if_nonfinite: bool = False) -> float:
    """Scale all gradients together so their joint norm is at most `max_norm`; returns the norm before.

    As torch: every gradient is multiplied by min(1, max_norm / (total + 1e-6)), and a non-finite total
    norm is no exception: a NaN norm makes every gradient NaN, an infinite one makes the finite entries 0
    (and the infinite ones NaN), so a broken step shows instead of applying unclipped gradients. With
    `error_if_nonfinite=True` a non-finite norm raises RuntimeError instead, leaving the gradients as they are.

    Where torch returns a 0-d tensor, the norm is a Python float (0.0 when no parameter has a gradient)
    that also answers torch's `.item()`: callers compare and log it directly. `norm_type` may be 'inf'.
    """
    norm_type = float(norm_type)  # torch takes the string 'inf' too
    if hasattr(parameters, "grad"):  # one tensor, as torch allows
        parameters = [parameters]
    grads = [p.grad for p in parameters if p.grad is not None]
    if not grads:
        return Norm(0.0)
    if norm_type == math.inf:
        total = max(float(xp_of(g).abs(g).max()) for g in grads)
    elif norm_type == 2.0:  # Σ g·g as one BLAS dot per gradient: no temporaries
        total = math.sqrt(sum(float(xp_of(g).vdot(g.ravel(), g.ravel())) for g in grads))
    else:
        total = sum(float((xp_of(g).abs(g) ** norm_type).sum()) for g in grads) ** (1.0 / norm_type)
    if error_if_nonfinite and not math.isfinite(total):
        raise RuntimeError(f"the total norm of order {norm_type} of the gradients is {total}, non-finite, so it "
                           f"cannot be clipped; to scale the gradients by it anyway (making them NaN or 0), set "
                           f"error_if_nonfinite=False")
    coef = max_norm / (total + 1e-6)
    if not coef >= 1:  # also when coef is NaN (a NaN norm, or inf/inf): torch's clamp(coef, max=1) keeps NaN
        with np.errstate(invalid="ignore"):  # inf · 0 = NaN, silently, as in torch
            for g in grads:
                g *= coef
    return Norm(total)


class Norm(float):
    """The total norm `clip_grad_norm_` returns: a float, with torch's `.item()`."""

    def item(self) -> float:
        return float(self)


def clip_grad_value_(parameters, clip_value: float) -> None:
    """Clamp every gradient entry to [−clip_value, clip_value], in place."""
    if hasattr(parameters, "grad"):
        parameters = [parameters]
    for p in parameters:
        if p.grad is not None:
            xp_of(p.grad).clip(p.grad, -clip_value, clip_value, out=p.grad)
