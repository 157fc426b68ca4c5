"""Additive (Bahdanau) and Luong attention vs the formulas written in torch, float64."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from helpers import assert_close

import seqlab
from seqlab import nn

B, Tq, S, Q, K, A = 3, 2, 5, 4, 6, 7


def torch_reference(kind, params, q, k, pad):
    """e_ts written as the papers write it, for one query step at a time (the chapter's loop over s)."""
    if kind == "additive":
        W_a = torch.cat([params["query_proj.weight"], params["key_proj.weight"]], dim=1)  # (A, Q + K)
        e = torch.stack([torch.stack([
            params["v.weight"][0]
            @ torch.tanh(W_a @ torch.cat([q[:, t], k[:, s]], -1).T + params["key_proj.bias"][:, None])
            for s in range(S)], -1) for t in range(q.shape[1])], 1)                       # (B, Tq, S)
    elif kind == "dot":
        e = q @ k.transpose(1, 2)
    else:
        e = q @ (k @ params["W_a.weight"].T).transpose(1, 2)
    e = e.masked_fill(pad[:, None, :], float("-inf"))
    w = torch.softmax(e, -1)
    return w @ k, w


@pytest.mark.parametrize("kind", ["additive", "dot", "general"])
@pytest.mark.parametrize("single_query", [False, True])
def test_attention_matches_torch(kind, single_query):
    rng = np.random.default_rng(0)
    qsize = K if kind == "dot" else Q
    seqlab.manual_seed(0)
    layer = (nn.AdditiveAttention(qsize, K, A) if kind == "additive" else nn.LuongAttention(qsize, K, kind)).double()
    params = {n: torch.tensor(p.data, requires_grad=True) for n, p in layer.named_parameters()}
    q = rng.standard_normal((B, Tq, qsize))
    k = rng.standard_normal((B, S, K))
    pad = np.zeros((B, S), dtype=bool)
    pad[1, 3:] = True
    pad[2, 1:] = True
    if single_query:
        q = q[:, :1]
    qt, kt = torch.tensor(q, requires_grad=True), torch.tensor(k, requires_grad=True)
    ctx_t, w_t = torch_reference(kind, params, qt, kt, torch.tensor(pad))
    qs, ks = seqlab.tensor(q, requires_grad=True), seqlab.tensor(k, requires_grad=True)
    ctx_s, w_s = layer(qs[:, 0] if single_query else qs, ks, key_padding_mask=pad)
    if single_query:
        ctx_t, w_t = ctx_t[:, 0], w_t[:, 0]
    c1, c2 = rng.standard_normal(ctx_t.shape), rng.standard_normal(w_t.shape)
    ((ctx_t * torch.tensor(c1)).sum() + (w_t * torch.tensor(c2)).sum()).backward()
    ((ctx_s * c1).sum() + (w_s * c2).sum()).backward()
    assert_close(ctx_s.numpy(), ctx_t.detach().numpy(), rtol=1e-9, scale_atol=1e-12, what="context")
    assert_close(w_s.numpy(), w_t.detach().numpy(), rtol=1e-9, scale_atol=1e-12, what="weights")
    assert np.all(w_s.numpy()[1, ..., 3:] == 0) and np.all(w_s.numpy()[2, ..., 1:] == 0)
    assert_close(qs.grad, qt.grad.numpy(), rtol=1e-9, scale_atol=1e-12, what="d query")
    assert_close(ks.grad, kt.grad.numpy(), rtol=1e-9, scale_atol=1e-12, what="d keys")
    for n, p in layer.named_parameters():
        assert_close(p.grad, params[n].grad.numpy(), rtol=1e-9, scale_atol=1e-12, what=n)


def test_precomputed_keys_and_all_padding_row():
    layer = nn.AdditiveAttention(Q, K, A).double()
    rng = np.random.default_rng(1)
    q, k = seqlab.tensor(rng.standard_normal((B, Q))), seqlab.tensor(rng.standard_normal((B, S, K)))
    pad = np.zeros((B, S), dtype=bool)
    pad[0] = True
    ctx1, w1 = layer(q, k, key_padding_mask=pad)
    ctx2, w2 = layer(q, k, key_padding_mask=pad, projected_keys=layer.project_keys(k))
    np.testing.assert_array_equal(ctx1.numpy(), ctx2.numpy())
    assert np.all(w1.numpy()[0] == 0) and np.all(ctx1.numpy()[0] == 0)   # no NaN for an all-padding row
    np.testing.assert_allclose(w1.numpy()[1:].sum(-1), 1.0)


def test_attention_errors():
    with pytest.raises(ValueError, match="query_size == key_size"):
        nn.LuongAttention(4, 6, "dot")
    with pytest.raises(ValueError, match="'dot' or 'general'"):
        nn.LuongAttention(4, 4, "concat")
    layer = nn.AdditiveAttention(Q, K, A)
    with pytest.raises(TypeError, match="bool"):
        layer(seqlab.zeros(B, Q), seqlab.zeros(B, S, K), key_padding_mask=np.zeros((B, S)))
    with pytest.raises(ValueError, match=r"\(B, S\) = \(3, 5\)"):
        layer(seqlab.zeros(B, Q), seqlab.zeros(B, S, K), key_padding_mask=np.zeros((B, 4), dtype=bool))
