"""Positional encodings: the chapter's sinusoid, learned, RoPE, ALiBi; permutation-equivariance without them."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import seqlab
from seqlab import nn
from seqlab.models import ClassifierConfig, TransformerClassifier
from seqlab.nn.positional import alibi_slopes, sinusoidal_table


@pytest.mark.parametrize("d", [8, 7])
def test_sinusoidal_is_the_chapters_formula(d):
    pe = sinusoidal_table(30, d)
    for pos in range(30):
        for i in range(d):
            # PE(pos, 2i) = sin(pos / 10000^{2i/d}),  PE(pos, 2i+1) = cos(pos / 10000^{2i/d})
            two_i = i - (i % 2)
            angle = pos / 10000 ** (two_i / d)
            want = math.sin(angle) if i % 2 == 0 else math.cos(angle)
            assert abs(pe[pos, i] - want) < 1e-12


def test_sinusoidal_module_adds_the_table_with_offset(rng):
    enc = nn.SinusoidalPositionalEncoding(6, max_len=20, dtype=np.float64)
    assert list(enc.state_dict()) == ["pe"] and enc.pe.shape == (1, 20, 6)
    x = seqlab.tensor(rng.standard_normal((2, 5, 6)))
    np.testing.assert_allclose(enc(x).numpy() - x.numpy(), np.broadcast_to(sinusoidal_table(20, 6)[:5], (2, 5, 6)))
    np.testing.assert_allclose(enc(x, offset=3).numpy() - x.numpy(), np.broadcast_to(sinusoidal_table(20, 6)[3:8], (2, 5, 6)))
    with pytest.raises(ValueError, match="max_len=20"):
        enc(seqlab.tensor(np.zeros((1, 21, 6))))


def test_learned_positions_get_gradients_only_where_used(rng):
    enc = nn.LearnedPositionalEmbedding(10, 4).double()
    x = seqlab.tensor(rng.standard_normal((2, 3, 4)), requires_grad=True)
    enc(x, offset=2).sum().backward()
    g = enc.weight.grad
    assert np.all(g[2:5] == 2.0) and not g[:2].any() and not g[5:].any()


def _rope_reference(x: np.ndarray, base: float = 10000.0) -> np.ndarray:
    """Llama's rotate-half RoPE from transformers, positions 0..T−1 (an independent implementation)."""
    from transformers.models.llama.modeling_llama import apply_rotary_pos_emb

    T, D = x.shape[-2], x.shape[-1]
    inv = 1.0 / (base ** (torch.arange(0, D, 2, dtype=torch.float64) / D))
    freqs = torch.outer(torch.arange(T, dtype=torch.float64), inv)
    emb = torch.cat([freqs, freqs], dim=-1)
    q, _ = apply_rotary_pos_emb(torch.tensor(x), torch.tensor(x), emb.cos(), emb.sin(), unsqueeze_dim=0)
    return q.numpy()


def test_rope_matches_transformers_and_is_relative(rng, cmp):
    rope = nn.RotaryEmbedding(8, max_len=64).double()
    x = rng.standard_normal((2, 3, 10, 8))
    cmp.close(rope.rotate(seqlab.tensor(x)), _rope_reference(x), 1e-12, "RoPE vs transformers")
    q, k = rng.standard_normal(8), rng.standard_normal(8)

    def score(m, n):  # ⟨R_m q, R_n k⟩
        qq = rope.rotate(seqlab.tensor(q[None, :]), offset=m).numpy()[0]
        kk = rope.rotate(seqlab.tensor(k[None, :]), offset=n).numpy()[0]
        return qq @ kk

    assert abs(score(3, 1) - score(20, 18)) < 1e-12  # depends on m − n only
    assert abs(score(3, 1) - score(1, 3)) > 1e-6  # and on its sign
    np.testing.assert_allclose(np.linalg.norm(rope.rotate(seqlab.tensor(x)).numpy(), axis=-1),
                               np.linalg.norm(x, axis=-1), rtol=1e-12)  # a rotation keeps lengths


def test_rope_gradient_matches_torch_autograd(rng, cmp):
    from transformers.models.llama.modeling_llama import apply_rotary_pos_emb

    rope = nn.RotaryEmbedding(6).double()
    x = rng.standard_normal((2, 4, 6))
    g = rng.standard_normal((2, 4, 6))
    sx = seqlab.tensor(x, requires_grad=True)
    rope.rotate(sx).backward(g)
    tx = torch.tensor(x, requires_grad=True)
    cos, sin = torch.tensor(rope.cos.numpy()[:4]), torch.tensor(rope.sin.numpy()[:4])
    out, _ = apply_rotary_pos_emb(tx, tx.detach(), cos, sin, unsqueeze_dim=0)
    out.backward(torch.tensor(g))
    cmp.close(sx.grad, tx.grad, 1e-12, "RoPE grad")


def _alibi_reference_slopes(n):
    """get_slopes from the ALiBi authors' code (Press et al., 2022)."""
    def power_of_2(n):
        start = 2 ** (-2 ** -(math.log2(n) - 3))
        return [start * start ** i for i in range(n)]
    if math.log2(n).is_integer():
        return power_of_2(n)
    closest = 2 ** math.floor(math.log2(n))
    return power_of_2(closest) + _alibi_reference_slopes(2 * closest)[0::2][: n - closest]


@pytest.mark.parametrize("heads", [1, 4, 8, 12, 6])
def test_alibi_slopes_match_the_paper(heads):
    np.testing.assert_allclose(alibi_slopes(heads), _alibi_reference_slopes(heads), rtol=1e-12)


def test_alibi_bias():
    alibi = nn.ALiBi(4)
    b = alibi.bias(3, 5, offset=2, dtype=np.float64)  # (1, H, L, S)
    assert b.shape == (1, 4, 3, 5)
    m = alibi_slopes(4)
    for h in range(4):
        for i in range(3):
            for j in range(5):
                assert b[0, h, i, j] == pytest.approx(-m[h] * abs(i + 2 - j))


def test_positional_option():
    kinds = {"sinusoidal": nn.SinusoidalPositionalEncoding, "learned": nn.LearnedPositionalEmbedding,
             "rope": nn.RotaryEmbedding, "alibi": nn.ALiBi}
    for kind, cls in kinds.items():
        assert isinstance(nn.positional_encoding(kind, 16, 4, 32), cls)
    assert nn.positional_encoding("rope", 16, 4).dim == 4  # per-head dimension
    assert nn.positional_encoding("none", 16, 4).attn_kwargs(3, 3) == {}
    with pytest.raises(ValueError, match="positional must be one of"):
        nn.positional_encoding("relative", 16, 4)


def test_encoder_without_positions_is_permutation_equivariant(rng):
    enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(16, 4, 32, dropout=0.0), 3).double()
    x = rng.standard_normal((2, 9, 16))
    kpm = np.zeros((2, 9), dtype=bool)
    kpm[1, [2, 7]] = True
    perm = rng.permutation(9)
    with seqlab.no_grad():
        out = enc(seqlab.tensor(x), src_key_padding_mask=kpm).numpy()
        out_p = enc(seqlab.tensor(x[:, perm]), src_key_padding_mask=kpm[:, perm]).numpy()
    assert np.abs(out_p - out[:, perm]).max() < 1e-12  # f(Px) = P f(x)


@pytest.mark.parametrize("kind", ["none", "sinusoidal", "learned", "rope", "alibi"])
def test_classifier_order_sensitivity(kind, rng):
    seqlab.manual_seed(0)
    model = TransformerClassifier(ClassifierConfig(vocab_size=30, d_model=16, nhead=2, num_layers=2,
                                                   dim_feedforward=32, dropout=0.0, positional=kind)).double()
    ids = rng.integers(1, 30, size=(2, 10))
    perm = rng.permutation(10)
    with seqlab.no_grad():
        h, hp = model.features(ids).numpy(), model.features(ids[:, perm]).numpy()
        logits, logits_p = model(ids).logits.numpy(), model(ids[:, perm]).logits.numpy()
    gap = np.abs(hp - h[:, perm]).max()
    if kind == "none":
        assert gap < 1e-12 and np.abs(logits - logits_p).max() < 1e-12  # mean pooling: invariant
    else:
        assert gap > 1e-4  # position information breaks the symmetry
