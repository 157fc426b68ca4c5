"""Connectionist temporal classification (Graves et al. 2006): the loss of a sequence model trained without
alignments, as one primitive with a hand-written backward.

Why a primitive: the loss is a sum over every alignment of the target with the T frames, computed by a
dynamic programme over time (the forward variable α). Composed from Tensor ops it would record T steps of
log-sum-exp and gather ops and walk them all back; the forward-backward identity below gives the whole
gradient from α and β at once, in the same O(T·N·L) work as the forward.

Notation (one sample): log-probabilities lp (T, C); the target l (length S) extended with blanks,
l' = (b, l1, b, l2, …, lS, b) of length L = 2S + 1. A frame may stay on its label, move to the next one, or
skip a blank between two different labels (s − 2 → s where l'_s ≠ b and l'_s ≠ l'_{s−2}), so repeated
labels need a blank between them. In log space, with ⊕ = log-sum-exp:

    α_0(0) = lp_0(b),   α_0(1) = lp_0(l1)
    α_t(s) = lp_t(l'_s) + [α_{t−1}(s) ⊕ α_{t−1}(s−1) ⊕ α_{t−1}(s−2) if the skip is allowed]
    loss   = −(α_{T−1}(L−1) ⊕ α_{T−1}(L−2))                           (Graves et al. 2006, eqs. 6-8)

β is the same recursion run backwards from the two end states (and, as α, includes lp_t(l'_s)). Then
α_t(s) + β_t(s) − lp_t(l'_s) + loss is the log-probability γ_t(s) that frame t sits on state s, and
torch's gradient with respect to the log-probabilities is

    ∂loss/∂lp_t(c) = exp(lp_t(c)) − Σ_{s : l'_s = c} γ_t(s)                     (Graves et al. 2006, eq. 16)

for t < the sample's input length (0 after it). That is the gradient with respect to the *logits* when
lp = log_softmax(logits), which is what torch returns for the log-probabilities too; chained through
log_softmax it gives the same logit gradient as the exact one (−Σ γ), since Σ_c exp(lp_t(c)) = 1 = Σ_s γ_t(s).
As torch's, it is NaN at frames t < the input length of a sample whose loss is infinite (no alignment) and
wherever lp_t(c) = −inf; `zero_infinity` makes such a sample's loss and gradient 0.

Everything is vectorised over the batch and the extended-label axis; only time is a Python loop. Arrays
are NumPy or CuPy (`xp_of`).
"""
from __future__ import annotations

import numpy as np

from seqlab.autograd.function import Function
from seqlab.backend import xp_of


def _logsumexp3(a, b, c):
    """a ⊕ b ⊕ c element-wise, −inf where all three are (no NaN from −inf − (−inf))."""
    xp = xp_of(a)
    m = xp.maximum(xp.maximum(a, b), c)
    m = xp.where(m == -np.inf, 0, m)
    with np.errstate(divide="ignore"):  # log 0 = −inf where every term is −inf
        return m + xp.log(xp.exp(a - m) + xp.exp(b - m) + xp.exp(c - m))


def _shift(a, k: int):
    """a moved k places to the right along the last axis, −inf coming in: out[..., s] = a[..., s − k]."""
    xp = xp_of(a)
    if k >= a.shape[-1]:
        return xp.full_like(a, -np.inf)
    pad = xp.full(a.shape[:-1] + (k,), -np.inf, dtype=a.dtype)
    return xp.concatenate([pad, a[..., :-k]], axis=-1)


def _unshift(a, k: int):
    """a moved k places to the left along the last axis, −inf coming in: out[..., s] = a[..., s + k]."""
    xp = xp_of(a)
    if k >= a.shape[-1]:
        return xp.full_like(a, -np.inf)
    pad = xp.full(a.shape[:-1] + (k,), -np.inf, dtype=a.dtype)
    return xp.concatenate([a[..., k:], pad], axis=-1)


def extended_labels(targets, blank: int):
    """(l', skip): the targets (N, S) with blanks around and between, (N, 2S + 1); and where the skip
    s − 2 → s is allowed (a label different from the one before it), (N, 2S + 1) bool."""
    xp = xp_of(targets)
    n, s = targets.shape
    ext = xp.full((n, 2 * s + 1), blank, dtype=targets.dtype)          # (N, L)
    ext[:, 1::2] = targets
    skip = xp.zeros(ext.shape, dtype=bool)
    if s > 1:
        skip[:, 3::2] = targets[:, 1:] != targets[:, :-1]
    return ext, skip


class CTC(Function):
    """The CTC negative log-likelihood of each sample, (N,), from log-probabilities (T, N, C) (see the module
    docstring for the α-β formulas). `targets` (N, S) are padded class indices; `input_lengths` and
    `target_lengths` (N,) integer arrays on the same device; only log_probs gets a gradient."""

    def forward(self, log_probs, targets, input_lengths, target_lengths, blank=0, zero_infinity=False):
        xp = xp_of(log_probs)
        t_max, n, _ = log_probs.shape
        ext, skip = extended_labels(targets, blank)                    # (N, L)
        rows = xp.arange(n)[:, None]                                    # (N, 1)
        lp_ext = log_probs[:, rows, ext]                                # (T, N, L): lp_t(l'_s)
        alpha = xp.full(lp_ext.shape, -np.inf, dtype=log_probs.dtype)  # (T, N, L)
        alpha[0, :, :2] = lp_ext[0, :, :2]
        for t in range(1, t_max):
            prev = alpha[t - 1]
            skipped = xp.where(skip, _shift(prev, 2), -np.inf)
            alpha[t] = _logsumexp3(prev, _shift(prev, 1), skipped) + lp_ext[t]
        # the last frame of each sample, on the last label or the final blank
        last = alpha[xp.maximum(input_lengths - 1, 0), xp.arange(n)]   # (N, L)
        end = 2 * target_lengths                                        # (N,): the final blank
        on_blank = xp.take_along_axis(last, end[:, None], axis=1)[:, 0]
        on_label = xp.take_along_axis(last, xp.maximum(end - 1, 0)[:, None], axis=1)[:, 0]
        on_label = xp.where(target_lengths > 0, on_label, -np.inf)
        log_likelihood = xp.logaddexp(on_blank, on_label)
        # no frames: the empty target has probability 1, any other 0
        log_likelihood = xp.where(input_lengths == 0, xp.where(target_lengths == 0, 0, -np.inf), log_likelihood)
        nll = (-log_likelihood).astype(log_probs.dtype)                # (N,)
        self.infinite = xp.isinf(nll)
        if zero_infinity:
            nll = xp.where(self.infinite, 0, nll).astype(log_probs.dtype)
        if self.needs_input_grad and self.needs_input_grad[0]:
            self.save_for_backward(log_probs, lp_ext, alpha, nll, ext, skip, input_lengths, target_lengths)
            self.zero_infinity = zero_infinity
        return nll

    def backward(self, grad):
        log_probs, lp_ext, alpha, nll, ext, skip, input_lengths, target_lengths = self.saved
        xp = xp_of(log_probs)
        t_max, n, c = log_probs.shape
        beta = self._beta(lp_ext, skip, input_lengths, target_lengths)  # (T, N, L)
        loss = xp.where(self.infinite, np.inf, nll)[None, :, None]     # the true loss (not zeroed)
        with np.errstate(invalid="ignore", over="ignore"):  # −inf − (−inf): NaN, as torch's
            occupancy = xp.exp(alpha + beta - lp_ext + loss)           # (T, N, L): γ_t(s)
        # Σ_{s : l'_s = c} γ_t(s): one bincount over flat (t, n, c) indices
        flat = (xp.arange(t_max)[:, None, None] * n + xp.arange(n)[None, :, None]) * c + ext[None]  # (T, N, L)
        posterior = xp.bincount(flat.ravel(), weights=occupancy.ravel().astype(np.float64), minlength=t_max * n * c)
        posterior = posterior.reshape(t_max, n, c).astype(log_probs.dtype)  # (T, N, C)
        g = xp.exp(log_probs) - posterior
        valid = xp.arange(t_max)[:, None] < input_lengths[None, :]      # (T, N): frames inside the input
        nan = valid[..., None] & (self.infinite[None, :, None] | (log_probs == -np.inf))
        g = xp.where(nan, np.nan, g)
        if self.zero_infinity:
            valid = valid & ~self.infinite[None, :]
        g = xp.where(valid[..., None], g, 0) * grad.astype(log_probs.dtype)[None, :, None]
        return g.astype(log_probs.dtype), None, None, None

    @staticmethod
    def _beta(lp_ext, skip, input_lengths, target_lengths):
        """β_t(s), the log-probability of emitting frames t … T_n − 1 from state s at frame t (lp_t included),
        −inf at and after each sample's input length."""
        xp = xp_of(lp_ext)
        t_max, n, length = lp_ext.shape
        states = xp.arange(length)[None, :]                             # (1, L)
        end = 2 * target_lengths[:, None]                               # (N, 1)
        is_end = (states == end) | ((states == end - 1) & (end > 0))    # (N, L): the two states a path ends on
        skip_next = _unshift(skip, 2)                                   # s → s + 2 is allowed
        beta = xp.full(lp_ext.shape, -np.inf, dtype=lp_ext.dtype)       # (T, N, L)
        for t in range(t_max - 1, -1, -1):
            first = xp.where(is_end, lp_ext[t], -np.inf)                # frame t is the sample's last
            if t + 1 < t_max:
                nxt = beta[t + 1]
                skipped = xp.where(skip_next, _unshift(nxt, 2), -np.inf)
                later = _logsumexp3(nxt, _unshift(nxt, 1), skipped) + lp_ext[t]
            else:
                later = xp.full(first.shape, -np.inf, dtype=lp_ext.dtype)
            last_frame = (input_lengths - 1 == t)[:, None]
            inside = (t < input_lengths - 1)[:, None]
            beta[t] = xp.where(last_frame, first, xp.where(inside, later, -np.inf))
        return beta
