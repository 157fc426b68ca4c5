"""RNNCell / LSTMCell / GRUCell vs torch in float64: values and every gradient."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from helpers import assert_close

import seqlab
from seqlab import nn

B, I, H = 3, 4, 5
CELLS = {
    "rnn_tanh": (nn.RNNCell, torch.nn.RNNCell, {}),
    "rnn_relu": (nn.RNNCell, torch.nn.RNNCell, {"nonlinearity": "relu"}),
    "lstm": (nn.LSTMCell, torch.nn.LSTMCell, {}),
    "gru": (nn.GRUCell, torch.nn.GRUCell, {}),
}


@pytest.mark.parametrize("kind", list(CELLS))
@pytest.mark.parametrize("with_state", [False, True])
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("batched", [True, False])
def test_cell_matches_torch(kind, with_state, bias, batched):
    cls, tcls, kw = CELLS[kind]
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    tc = tcls(I, H, bias=bias, **kw).double()
    sc = cls(I, H, bias=bias, **kw).double()
    sc.load_state_dict(tc.state_dict())
    lead = (B,) if batched else ()
    x = rng.standard_normal(lead + (I,))
    states = [rng.standard_normal(lead + (H,)) for _ in range(2 if kind == "lstm" else 1)]
    xt, xs = torch.tensor(x, requires_grad=True), seqlab.tensor(x, dtype=np.float64, requires_grad=True)
    st = [torch.tensor(s, requires_grad=True) for s in states]
    ss = [seqlab.tensor(s, dtype=np.float64, requires_grad=True) for s in states]
    pack = (lambda v: tuple(v)) if kind == "lstm" else (lambda v: v[0])
    t_out = tc(xt, pack(st) if with_state else None)
    s_out = sc(xs, pack(ss) if with_state else None)
    t_outs = list(t_out) if kind == "lstm" else [t_out]
    s_outs = list(s_out) if kind == "lstm" else [s_out]
    cot = [rng.standard_normal(tuple(o.shape)) for o in t_outs]
    sum((o * torch.tensor(c)).sum() for o, c in zip(t_outs, cot)).backward()
    sum((o * seqlab.tensor(c, dtype=np.float64)).sum() for o, c in zip(s_outs, cot)).backward()
    for a, e in zip(s_outs, t_outs):
        assert_close(a.numpy(), e.detach().numpy(), rtol=1e-9, scale_atol=1e-12, what="output")
    assert_close(xs.grad, xt.grad.numpy(), rtol=1e-9, scale_atol=1e-12, what="d x")
    if with_state:
        for a, e in zip(ss, st):
            assert_close(a.grad, e.grad.numpy(), rtol=1e-9, scale_atol=1e-12, what="d state")
    tp = dict(tc.named_parameters())
    assert [n for n, _ in sc.named_parameters()] == list(tp)
    for n, p in sc.named_parameters():
        assert_close(p.grad, tp[n].grad.numpy(), rtol=1e-9, scale_atol=1e-12, what=n)


def test_cell_errors():
    with pytest.raises(ValueError, match=r"\(B, 4\)"):
        nn.GRUCell(I, H)(seqlab.zeros(2, 3))
    with pytest.raises(ValueError, match=r"expected \(2, 5\)"):
        nn.RNNCell(I, H)(seqlab.zeros(2, I), seqlab.zeros(2, 4))
