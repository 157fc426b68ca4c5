"""Transformer layers, stacks and nn.Transformer against torch (batch_first=True, float64, dropout 0)."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import seqlab
from seqlab import functional as F
from seqlab import nn

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")  # torch: mixed mask types are deprecated

D, NH, FF, B, T, S = 8, 2, 16, 3, 5, 6
VARIANTS = [  # (norm_first, activation, bias)
    (False, "relu", True),
    (True, "gelu", True),
    (False, "gelu", False),
]


def _kpm(n: int) -> np.ndarray:
    m = np.zeros((B, n), dtype=bool)
    m[1, -2:] = True  # padding at the end of the second sequence
    return m


def _t(a):
    return None if a is None else torch.tensor(a)


def _copy(sm, tm):
    sm.double()
    sm.load_state_dict(tm.state_dict())
    return sm


def _layer_pair(name: str, norm_first: bool, activation: str, bias: bool):
    """(ours, torch's) nn.`name` in float64 holding torch's weights; their state_dict keys must be the same."""
    torch.manual_seed(0)
    kw = dict(dim_feedforward=FF, dropout=0.0, activation=activation, norm_first=norm_first, bias=bias)
    tm = getattr(torch.nn, name)(D, NH, batch_first=True, **kw).double()
    sm = _copy(getattr(nn, name)(D, NH, **kw), tm)
    assert list(sm.state_dict()) == list(tm.state_dict())
    return sm, tm


def _backward_matches(rng, cmp, so, to, grads: dict, *modules):
    """Backpropagate one random cotangent through both outputs; compare the `grads` {what: (ours, torch's)}
    inputs' gradients and every parameter gradient of each (ours, torch's) module pair."""
    g = rng.standard_normal(tuple(so.shape))
    to.backward(torch.tensor(g))
    so.backward(g)
    for what, (s, t) in grads.items():
        cmp.close(s.grad, t.grad, what=what)
    for sm, tm in modules:
        cmp.grads(sm, tm)


@pytest.mark.parametrize("norm_first,activation,bias", VARIANTS)
def test_encoder_layer(norm_first, activation, bias, rng, cmp, inputs):
    sm, tm = _layer_pair("TransformerEncoderLayer", norm_first, activation, bias)
    (sx,), (tx,) = inputs(rng, (B, T, D))
    mask = np.triu(np.full((T, T), -np.inf), k=1)
    kpm = _kpm(T)
    to = tm(tx, src_mask=_t(mask), src_key_padding_mask=_t(kpm), is_causal=True)
    so = sm(sx, src_mask=mask, src_key_padding_mask=kpm, is_causal=True)
    cmp.close(so, to, what="encoder layer output")
    _backward_matches(rng, cmp, so, to, {"input grad": (sx, tx)}, (sm, tm))


@pytest.mark.parametrize("norm_first,activation,bias", VARIANTS)
def test_decoder_layer(norm_first, activation, bias, rng, cmp, inputs):
    sm, tm = _layer_pair("TransformerDecoderLayer", norm_first, activation, bias)
    (sy, sm_mem), (ty, tm_mem) = inputs(rng, (B, T, D), (B, S, D))
    tgt_mask = torch.nn.Transformer.generate_square_subsequent_mask(T, dtype=torch.float64)
    mem_mask = rng.random((T, S)) < 0.2  # bool, True = blocked
    mem_mask[:, 0] = False
    to = tm(ty, tm_mem, tgt_mask=tgt_mask, memory_mask=_t(mem_mask), tgt_key_padding_mask=_t(_kpm(T)),
            memory_key_padding_mask=_t(_kpm(S)), tgt_is_causal=True)
    so = sm(sy, sm_mem, tgt_mask=tgt_mask.numpy(), memory_mask=mem_mask, tgt_key_padding_mask=_kpm(T),
            memory_key_padding_mask=_kpm(S), tgt_is_causal=True)
    cmp.close(so, to, what="decoder layer output")
    _backward_matches(rng, cmp, so, to, {"tgt grad": (sy, ty), "memory grad": (sm_mem, tm_mem)}, (sm, tm))


@pytest.mark.parametrize("norm_first", [False, True])
def test_stacks(norm_first, rng, cmp, inputs):
    torch.manual_seed(0)
    kw = dict(dim_feedforward=FF, dropout=0.0, norm_first=norm_first)
    t_enc = torch.nn.TransformerEncoder(torch.nn.TransformerEncoderLayer(D, NH, batch_first=True, **kw), 2,
                                        norm=torch.nn.LayerNorm(D), enable_nested_tensor=False).double()
    t_dec = torch.nn.TransformerDecoder(torch.nn.TransformerDecoderLayer(D, NH, batch_first=True, **kw), 2,
                                        norm=torch.nn.LayerNorm(D)).double()
    s_enc = _copy(nn.TransformerEncoder(nn.TransformerEncoderLayer(D, NH, **kw), 2, norm=nn.LayerNorm(D)), t_enc)
    s_dec = _copy(nn.TransformerDecoder(nn.TransformerDecoderLayer(D, NH, **kw), 2, norm=nn.LayerNorm(D)), t_dec)
    assert list(s_enc.state_dict()) == list(t_enc.state_dict())
    assert list(s_dec.state_dict()) == list(t_dec.state_dict())
    assert s_enc.layers[0].linear1.weight is not s_enc.layers[1].linear1.weight  # deep copies, as torch
    (sx, sy), (tx, ty) = inputs(rng, (B, S, D), (B, T, D))
    t_mem = t_enc(tx, src_key_padding_mask=_t(_kpm(S)))
    s_mem = s_enc(sx, src_key_padding_mask=_kpm(S))
    cmp.close(s_mem, t_mem, what="encoder stack")
    causal = torch.nn.Transformer.generate_square_subsequent_mask(T, dtype=torch.float64)
    to = t_dec(ty, t_mem, tgt_mask=causal, memory_key_padding_mask=_t(_kpm(S)))
    so = s_dec(sy, s_mem, tgt_mask=causal.numpy(), memory_key_padding_mask=_kpm(S))
    cmp.close(so, to, what="decoder stack")
    _backward_matches(rng, cmp, so, to, {"src grad": (sx, tx), "tgt grad": (sy, ty)}, (s_enc, t_enc), (s_dec, t_dec))


@pytest.mark.parametrize("norm_first,activation", [(False, "relu"), (True, "gelu")])
def test_full_transformer(norm_first, activation, rng, cmp, inputs):
    torch.manual_seed(0)
    kw = dict(d_model=D, nhead=NH, num_encoder_layers=2, num_decoder_layers=2, dim_feedforward=FF, dropout=0.0,
              activation=activation, norm_first=norm_first)
    tm = torch.nn.Transformer(batch_first=True, **kw).double()
    sm = _copy(nn.Transformer(**kw), tm)
    assert list(sm.state_dict()) == list(tm.state_dict())
    (src, tgt), (t_src, t_tgt) = inputs(rng, (B, S, D), (B, T, D))
    causal = torch.nn.Transformer.generate_square_subsequent_mask(T, dtype=torch.float64)
    to = tm(t_src, t_tgt, tgt_mask=causal, src_key_padding_mask=_t(_kpm(S)), tgt_key_padding_mask=_t(_kpm(T)),
            memory_key_padding_mask=_t(_kpm(S)), tgt_is_causal=True)
    so = sm(src, tgt, tgt_mask=causal.numpy(), src_key_padding_mask=_kpm(S), tgt_key_padding_mask=_kpm(T),
            memory_key_padding_mask=_kpm(S), tgt_is_causal=True)
    cmp.close(so, to, what="nn.Transformer output")
    _backward_matches(rng, cmp, so, to, {"src grad": (src, t_src), "tgt grad": (tgt, t_tgt)}, (sm, tm))


def test_transformer_init_is_xavier():
    sm = nn.Transformer(d_model=16, nhead=2, num_encoder_layers=1, num_decoder_layers=1, dim_feedforward=32)
    w = sm.encoder.layers[0].linear1.weight.numpy()  # (32, 16)
    bound = np.sqrt(6.0 / (16 + 32))
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.8 * bound


def test_callable_activation(rng, cmp, inputs):
    torch.manual_seed(0)
    tm = torch.nn.TransformerEncoderLayer(D, NH, FF, 0.0, activation=lambda x: torch.nn.functional.gelu(x, approximate="tanh"),
                                          batch_first=True).double()
    sm = _copy(nn.TransformerEncoderLayer(D, NH, FF, 0.0, activation=lambda x: F.gelu(x, "tanh")), tm)
    (sx,), (tx,) = inputs(rng, (B, T, D))
    cmp.close(sm(sx), tm(tx), what="tanh-gelu layer")


def test_generate_square_subsequent_mask_matches_torch():
    for n in (1, 4, 7):
        ours = nn.generate_square_subsequent_mask(n).numpy()
        theirs = torch.nn.Transformer.generate_square_subsequent_mask(n).numpy()
        np.testing.assert_array_equal(ours, theirs)
        assert ours.dtype == np.float32


def test_output_attentions_returns_the_layers_weights(rng, cmp):
    enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(D, NH, FF, 0.0), 2).double()
    x = seqlab.tensor(rng.standard_normal((B, T, D)))
    kpm = _kpm(T)
    plain = enc(x, src_key_padding_mask=kpm)
    out, weights = enc(x, src_key_padding_mask=kpm, output_attentions=True)
    cmp.close(out, plain.numpy(), 0.0, "output with and without weights")
    assert len(weights) == 2 and weights[0].shape == (B, NH, T, T)
    _, w0 = enc.layers[0].self_attn(x, x, x, key_padding_mask=kpm, average_attn_weights=False)
    cmp.close(weights[0], w0.numpy(), 1e-12, "layer 0 weights")  # Post-LN: layer 0 attends over x itself
    w = weights[1].numpy()
    np.testing.assert_allclose(w.sum(-1), 1.0, atol=1e-12)
    assert np.all(w[1, :, :, -2:] == 0)  # padded keys get no attention

    dec = nn.TransformerDecoder(nn.TransformerDecoderLayer(D, NH, FF, 0.0), 2).double()
    mem = seqlab.tensor(rng.standard_normal((B, S, D)))
    y, self_w, cross_w = dec(x, mem, tgt_is_causal=True, memory_key_padding_mask=_kpm(S), output_attentions=True)
    assert y.shape == (B, T, D) and len(self_w) == len(cross_w) == 2
    assert self_w[0].shape == (B, NH, T, T) and cross_w[0].shape == (B, NH, T, S)
    assert np.all(np.triu(self_w[1].numpy(), k=1) == 0)


def test_batch_first_false_is_rejected():
    with pytest.raises(ValueError, match="batch-first"):
        nn.TransformerEncoderLayer(D, NH, batch_first=False)
    with pytest.raises(ValueError, match="batch-first"):
        nn.Transformer(d_model=D, nhead=NH, batch_first=False)
    with pytest.raises(ValueError, match="activation"):
        nn.TransformerEncoderLayer(D, NH, activation="swish")
