"""Hand-written backward passes that earn their place by stability or speed.

Each has the plain formula in its docstring; tests hold every one to the
same computation composed from primitive ops.
"""
from __future__ import annotations

import numpy as np

from seqlab.autograd.function import Function
from seqlab.backend import xp_of


def softmax_array(x, dim):
    xp = xp_of(x)
    m = x.max(axis=dim, keepdims=True)
    m = xp.where(xp.isfinite(m), m, 0)  # rows of -inf only: exp gives 0, not NaN
    e = xp.exp(x - m)
    s = e.sum(axis=dim, keepdims=True)
    return e / xp.where(s == 0, 1, s)


def log_softmax_array(x, dim):
    """x − max − log Σ exp(x − max): finite for logits of any magnitude."""
    m = x.max(axis=dim, keepdims=True)
    shifted = x - m
    return shifted - xp_of(x).log(xp_of(x).exp(shifted).sum(axis=dim, keepdims=True))


class Softmax(Function):
    """y = exp(x) / Σ exp(x);  dx = y ⊙ (g − Σ g⊙y)."""

    def forward(self, x, dim=-1):
        self.dim = dim
        y = softmax_array(x, dim)
        self.save_for_backward(y)
        return y

    def backward(self, grad):
        (y,) = self.saved
        gy = grad * y
        return (gy - y * gy.sum(axis=self.dim, keepdims=True),)


class LogSoftmax(Function):
    """y = x − log Σ exp(x);  dx = g − exp(y) Σ g."""

    def forward(self, x, dim=-1):
        self.dim = dim
        y = log_softmax_array(x, dim)
        self.save_for_backward(y)
        return y

    def backward(self, grad):
        (y,) = self.saved
        return (grad - xp_of(y).exp(y) * grad.sum(axis=self.dim, keepdims=True),)


class CrossEntropy(Function):
    """Softmax cross-entropy on logits (N, C) with integer targets (N,).

    loss_i = (1 − ε)·(−log p_i[y_i]) + ε·mean_c(−log p_i[c]),  p = softmax(logits);
    d loss_i / d logits_i = p_i − q_i with q_i = (1 − ε)·onehot(y_i) + ε/C.
    Rows whose target is `ignore_index` contribute nothing; 'mean' divides by
    the number of the others (as torch).
    """

    def forward(self, logits, target, ignore_index=-100, label_smoothing=0.0, reduction="mean"):
        xp = xp_of(logits)
        n, c = logits.shape
        logp = log_softmax_array(logits, 1)
        valid = target != ignore_index
        safe_target = xp.where(valid, target, 0)
        nll = -xp.take_along_axis(logp, safe_target[:, None], axis=1)[:, 0]
        if label_smoothing:
            nll = (1 - label_smoothing) * nll - label_smoothing * logp.mean(axis=1)
        nll = nll * valid
        self.count = int(valid.sum())
        self.saved = (logp, safe_target, valid)
        self.eps, self.reduction, self.c = label_smoothing, reduction, c
        if reduction == "none":
            return nll
        total = nll.sum()
        if reduction == "sum":
            return total
        # an all-ignored batch gives NaN in torch (0/0); keep it
        return total / self.count if self.count else total * np.nan

    def backward(self, grad):
        logp, target, valid = self.saved
        xp = xp_of(logp)
        g = xp.exp(logp)
        if self.eps:
            g -= self.eps / self.c
        g[xp.arange(g.shape[0]), target] -= 1 - self.eps
        if self.reduction == "none":
            scale = grad * valid
        elif self.reduction == "sum":
            scale = grad * valid
        else:
            scale = grad * valid / max(self.count, 1)
        return g * scale.astype(g.dtype)[:, None], None


class LayerNorm(Function):
    """y = (x − μ)/√(σ² + eps) · w + b over the last `nd` dims (biased σ², as torch).

    With x̂ the normalised input and r = 1/√(σ² + eps):
    dx = r · (ĝ − mean(ĝ) − x̂ · mean(ĝ ⊙ x̂)) where ĝ = g ⊙ w.
    """

    def forward(self, x, weight=None, bias=None, nd=1, eps=1e-5):
        axes = tuple(range(x.ndim - nd, x.ndim))
        mu = x.mean(axis=axes, keepdims=True)
        xc = x - mu
        var = (xc * xc).mean(axis=axes, keepdims=True)
        rstd = 1 / xp_of(x).sqrt(var + eps)
        xhat = xc * rstd
        self.axes, self.saved = axes, (xhat, rstd, weight)
        self.has_bias = bias is not None
        y = xhat * weight if weight is not None else xhat.copy()
        if bias is not None:
            y += bias
        return y

    def backward(self, grad):
        xhat, rstd, w = self.saved
        axes = self.axes
        batch_axes = tuple(range(grad.ndim - len(axes)))
        gw = (grad * xhat).sum(axis=batch_axes) if w is not None and self.needs_input_grad[1] else None
        gb = grad.sum(axis=batch_axes) if self.has_bias and self.needs_input_grad[2] else None
        gx = None
        if self.needs_input_grad[0]:
            gh = grad * w if w is not None else grad
            gx = rstd * (gh - gh.mean(axis=axes, keepdims=True)
                         - xhat * (gh * xhat).mean(axis=axes, keepdims=True))
        return gx, gw, gb


class Embedding(Function):
    """out = weight[ids]; the gradient of a row is the sum over the positions that used it."""

    def forward(self, weight, ids, padding_idx=None):
        self.shape, self.ids, self.padding_idx = weight.shape, ids, padding_idx
        return weight[ids]

    def backward(self, grad):
        xp = xp_of(grad)
        gw = xp.zeros(self.shape, dtype=grad.dtype)
        flat = self.ids.reshape(-1)
        g2 = grad.reshape(-1, self.shape[1])
        if xp is np:
            np.add.at(gw, flat, g2)
        else:  # pragma: no cover - needs a GPU
            xp.add.at(gw, flat, g2)
        if self.padding_idx is not None:
            gw[self.padding_idx] = 0
        return gw, None


class Dropout(Function):
    """Inverted dropout: out = x ⊙ m / (1 − p), m ~ Bernoulli(1 − p)."""

    def forward(self, x, keep_mask=None, p=0.5):
        scale = x.dtype.type(1.0 / (1.0 - p))
        self.mask = keep_mask * scale
        return x * self.mask

    def backward(self, grad):
        return grad * self.mask, None


class Attention(Function):
    """out = softmax(q kᵀ · scale + mask) v, one fused op with weights kept for backward.

    q (..., Tq, D), k (..., Tk, D), v (..., Tk, Dv); `block` is a boolean array
    (True = may NOT attend) and `bias` a float array added to the scores; both
    broadcast to (..., Tq, Tk). A row with every key blocked gets all-zero
    weights, so its output and gradients are 0 rather than NaN.

    Backward, with P the weights and P' = P ⊙ keep / (1 − p) after dropout:
    dv = P'ᵀ g;  dP = (g vᵀ) ⊙ keep / (1 − p);  dS = P ⊙ (dP − Σ dP ⊙ P);
    dq = dS k · scale;  dk = dSᵀ q · scale;  d bias = dS.
    """

    def forward(self, q, k, v, bias=None, block=None, scale=1.0, keep_mask=None, p=0.0):
        xp = xp_of(q)
        s = q @ k.swapaxes(-1, -2)  # (..., Tq, Tk)
        if scale != 1.0:
            s *= q.dtype.type(scale)
        if bias is not None:
            s = s + bias
        if block is not None:
            s = xp.where(block, q.dtype.type(-np.inf), s)
        w = softmax_array(s, -1)
        self.weights = w
        wd = w
        if keep_mask is not None:
            self.drop = keep_mask * q.dtype.type(1.0 / (1.0 - p))
            wd = w * self.drop
        else:
            self.drop = None
        self.saved = (q, k, v, wd)
        self.scale = scale
        return wd @ v

    def backward(self, grad):
        q, k, v, wd = self.saved
        w = self.weights
        gv = wd.swapaxes(-1, -2) @ grad if self.needs_input_grad[2] else None
        gw = grad @ v.swapaxes(-1, -2)
        if self.drop is not None:
            gw *= self.drop
        gs = w * (gw - (gw * w).sum(axis=-1, keepdims=True))
        gq = gk = None
        if self.needs_input_grad[0]:
            gq = gs @ k
            if self.scale != 1.0:
                gq *= q.dtype.type(self.scale)
        if self.needs_input_grad[1]:
            gk = gs.swapaxes(-1, -2) @ q
            if self.scale != 1.0:
                gk *= q.dtype.type(self.scale)
        gbias = gs if len(self.needs_input_grad) > 3 and self.needs_input_grad[3] else None
        return gq, gk, gv, gbias, None
