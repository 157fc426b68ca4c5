"""Tensor.register_hook as torch's: hooks see a tensor's gradient during backward, may replace it, run before a
leaf's .grad is filled and before retain_grad stores a non-leaf's, and come off with handle.remove()."""
import numpy as np
import pytest
import torch

import seqlab
from seqlab import nn


def _run(lib):
    """One graph with hooks on a leaf and two non-leaves; returns what the hooks saw and the gradients."""
    x = lib.tensor([1.0, -2.0, 3.0], dtype=lib.float64, requires_grad=True)
    w = lib.tensor([[0.5, 1.0, -1.0], [2.0, 0.0, 1.0]], dtype=lib.float64, requires_grad=True)
    h = x * 2
    seen = []
    h.register_hook(lambda g: seen.append(("h", g.tolist())))
    h.register_hook(lambda g: g * 10)           # replaces h's gradient from here on
    h.retain_grad()
    y = w @ h.tanh()
    y.register_hook(lambda g: seen.append(("y", g.tolist())))
    handle = x.register_hook(lambda g: g + 1)   # a leaf: before .grad is filled
    removed = w.register_hook(lambda g: g * 0)
    removed.remove()
    (y ** 2).sum().backward()
    grad = (lambda t: np.asarray(t.grad.tolist()))
    return seen, grad(h), grad(x), grad(w), handle


def test_hooks_see_and_replace_gradients_as_torchs():
    s_seen, s_h, s_x, s_w, _ = _run(seqlab)
    t_seen, t_h, t_x, t_w, _ = _run(torch)
    assert [name for name, _ in s_seen] == [name for name, _ in t_seen] == ["y", "h"]
    for (_, a), (_, b) in zip(s_seen, t_seen):
        np.testing.assert_allclose(a, b, rtol=1e-12)
    for a, b in ((s_h, t_h), (s_x, t_x), (s_w, t_w)):
        np.testing.assert_allclose(a, b, rtol=1e-12)


def test_a_removed_hook_no_longer_runs_and_twice_is_harmless():
    x = seqlab.tensor([1.0, 2.0], requires_grad=True)
    calls = []
    handle = x.register_hook(lambda g: calls.append(1))
    (x * 3).sum().backward()
    handle.remove()
    handle.remove()
    (x * 3).sum().backward()
    assert calls == [1] and x.grad.tolist() == [6.0, 6.0]


def test_hooks_collect_the_gradient_at_every_step_of_an_rnn():
    """The chapter's vanishing-gradient picture: dL/dh_t for every t, from hooks on the hidden states."""
    seqlab.manual_seed(0)
    cell, T = nn.RNNCell(4, 8), 12
    x = seqlab.randn(2, T, 4)
    h, norms = seqlab.zeros(2, 8), {}
    for t in range(T):
        h = cell(x[:, t], h)
        h.register_hook(lambda g, t=t: norms.__setitem__(t, float(np.linalg.norm(g.numpy()))))
    h.sum().backward()
    assert sorted(norms) == list(range(T))
    assert norms[0] < norms[T - 1]  # the gradient shrinks going back in time


def test_errors():
    with pytest.raises(RuntimeError, match="doesn't require gradient"):
        seqlab.ones(2).register_hook(lambda g: g)
    x = seqlab.ones(2, requires_grad=True)
    y = x * 2
    y.register_hook(lambda g: g[:1])
    with pytest.raises(RuntimeError, match=r"shape \(1,\), expected \(2,\)"):
        y.sum().backward()
    z = x * 3
    z.sum().backward()
    with pytest.raises(RuntimeError, match="already freed"):
        z.register_hook(lambda g: g)
