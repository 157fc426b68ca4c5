"""Seq2Seq with attention: wiring, masking, gradients, and a short training run on a toy task."""
from __future__ import annotations

import numpy as np
import pytest

import seqlab
from seqlab.creation import cat
from seqlab.data import pad_batch
from seqlab.models.seq2seq import Seq2Seq, Seq2SeqConfig
from seqlab.optim import Adam

V = 12


def tiny(attention="additive", cell="gru", dropout=0.0, **kw):
    seqlab.manual_seed(0)
    cfg = Seq2SeqConfig(V, V, emb_dim=8, enc_hidden=6, dec_hidden=12, attn_dim=5, attention=attention, cell=cell,
                        dropout=dropout, **kw)
    return Seq2Seq(cfg)


def reverse_batch(rng, n, lo=3, hi=8):
    """Source: random tokens + </s>; target: the tokens reversed."""
    src = [rng.integers(3, V, rng.integers(lo, hi)) for _ in range(n)]
    s, _ = pad_batch([np.r_[x, 2] for x in src], 0)
    t, _ = pad_batch([np.r_[1, x[::-1], 2] for x in src], 0)
    return s, t[:, :-1], t[:, 1:], src


@pytest.mark.parametrize("attention", ["additive", "dot", "general", "none"])
@pytest.mark.parametrize("cell", ["gru", "lstm"])
def test_shapes_attention_rows_and_padding(attention, cell):
    m = tiny(attention, cell).double()
    m.eval()
    rng = np.random.default_rng(0)
    src, tgt_in, _, _ = reverse_batch(rng, 4)
    logits, attn = m(src, tgt_in, return_attention=True)
    assert logits.shape == tgt_in.shape + (V,)
    if attention == "none":
        assert attn is None
    else:
        w = attn.numpy()
        assert w.shape == tgt_in.shape + (src.shape[1],)
        np.testing.assert_allclose(w.sum(-1), 1.0, rtol=1e-12)
        assert np.all(w[np.broadcast_to((src == 0)[:, None, :], w.shape)] == 0)   # padding gets no weight
    # more padding columns change nothing
    wider = np.concatenate([src, np.zeros((src.shape[0], 3), dtype=src.dtype)], axis=1)
    np.testing.assert_allclose(m(wider, tgt_in).numpy(), logits.numpy(), rtol=1e-12, atol=1e-13)


def test_decoder_equals_plain_cell_loop():
    """The split input projection (all y_t in one matmul) equals GRUCell([y_{t−1}; c_t], s_{t−1}) step by step."""
    m = tiny().double()
    rng = np.random.default_rng(1)
    src, tgt_in, _, _ = reverse_batch(rng, 3)
    memory, (s,) = m.encode(src)
    emb = m.tgt_embedding(tgt_in)
    outs = []
    for t in range(tgt_in.shape[1]):
        ctx, _ = m.attention(s, memory["outputs"], key_padding_mask=memory["pad"])
        s = m.decoder(cat([emb[:, t], ctx], dim=-1), s)
        o = m.pre_output(cat([s, ctx, emb[:, t]], dim=-1)).tanh()
        outs.append(m.generator(o).numpy())
    np.testing.assert_allclose(m(src, tgt_in).numpy(), np.stack(outs, 1), rtol=1e-10, atol=1e-12)


def test_gradients_match_central_differences():
    m = tiny("general", "lstm").double()
    rng = np.random.default_rng(2)
    src, tgt_in, tgt_out, _ = reverse_batch(rng, 2, 2, 4)
    loss = m.loss(src, tgt_in, tgt_out)
    loss.backward()
    params = dict(m.named_parameters())
    for name in ("encoder.weight_hh_l0_reverse", "decoder.weight_ih", "attention.W_a.weight", "bridge.bias",
                 "tgt_embedding.weight", "pre_output.weight"):
        p = params[name]
        idx = tuple(rng.integers(0, s) for s in p.shape)
        if name == "tgt_embedding.weight":
            idx = (int(tgt_in[0, 1]),) + idx[1:]
        old, eps = p.data[idx], 1e-6
        p.data[idx] = old + eps
        up = m.loss(src, tgt_in, tgt_out).item()
        p.data[idx] = old - eps
        down = m.loss(src, tgt_in, tgt_out).item()
        p.data[idx] = old
        # central differences carry ~1e-10 of round-off
        assert p.grad[idx] == pytest.approx((up - down) / (2 * eps), rel=1e-5, abs=2e-9), name


def test_training_on_reversal_learns_and_decodes():
    """Loss falls; greedy and beam decoding reverse most held-out sequences; beam 1 == greedy."""
    seqlab.manual_seed(0)
    cfg = Seq2SeqConfig(V, V, emb_dim=24, enc_hidden=24, dec_hidden=48, attn_dim=24, dropout=0.0)
    m = Seq2Seq(cfg)
    opt = Adam(m.parameters(), lr=5e-3)
    rng = np.random.default_rng(0)
    losses = []
    for _ in range(150):
        src, tgt_in, tgt_out, _ = reverse_batch(rng, 32, 2, 6)
        loss = m.loss(src, tgt_in, tgt_out)
        m.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert np.mean(losses[-10:]) < 0.25 * np.mean(losses[:10])
    m.eval()
    src, _, _, seqs = reverse_batch(np.random.default_rng(9), 40, 2, 6)
    greedy = m.generate(src)
    beam = m.generate(src, beam_size=3)
    acc = lambda out: np.mean([o == list(x[::-1]) for o, x in zip(out, seqs)])
    assert acc(greedy) > 0.6 and acc(beam) > 0.6
    assert m.generate(src, beam_size=1) == greedy


def test_dropout_only_in_training_and_tied_output():
    m = tiny(dropout=0.5)
    assert m.generator.weight is m.tgt_embedding.weight
    rng = np.random.default_rng(3)
    src, tgt_in, _, _ = reverse_batch(rng, 2)
    assert not np.allclose(m(src, tgt_in).numpy(), m(src, tgt_in).numpy())
    m.eval()
    np.testing.assert_array_equal(m(src, tgt_in).numpy(), m(src, tgt_in).numpy())


def test_config_errors():
    with pytest.raises(ValueError, match="attention must be one of"):
        Seq2SeqConfig(5, 5, attention="bahdanau")
    with pytest.raises(ValueError, match="dec_hidden == 2 \\* enc_hidden"):
        Seq2SeqConfig(5, 5, enc_hidden=4, dec_hidden=6, attention="dot")
    with pytest.raises(ValueError, match="all-padding"):
        tiny().encode(np.zeros((2, 3), dtype=np.int64))
