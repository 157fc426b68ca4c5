"""Bad inputs are refused with the argument named, never broadcast or cast silently: SDPA masks of another
dtype than bool/float or of a shape that does not broadcast to the scores; model masks, labels, position and
token-type ids of the wrong shape; float class labels; a 2-D input to the sinusoidal encoding."""
from __future__ import annotations

import numpy as np
import pytest

import seqlab
import seqlab.functional as F
from seqlab.models import BertConfig, BertModel, ClassifierConfig, GPTConfig, T5Config, T5ForConditionalGeneration
from seqlab.models import TransformerClassifier
from seqlab.models.gpt import GPT
from seqlab.nn.positional import SinusoidalPositionalEncoding

IDS = np.array([[5, 6, 7, 8, 9], [8, 9, 3, 4, 0]])  # (2, 5)
MASK = np.array([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]])


def _sdpa(mask, L=3, S=3):
    rng = np.random.default_rng(0)
    q, k, v = (rng.standard_normal((2, 2, n, 4)) for n in (L, S, S))
    return q, k, v, F.scaled_dot_product_attention(seqlab.tensor(q), seqlab.tensor(k), seqlab.tensor(v),
                                                   attn_mask=mask)


# ---- 1. F.scaled_dot_product_attention masks ----------------------------------------------------------
def test_sdpa_masks_bool_and_float_match_torch_and_other_dtypes_or_shapes_are_refused(torch):
    m = np.array([[1, 1, 0], [1, 0, 0], [1, 1, 1]])                       # (L, S), True = may attend
    q, k, v, out_bool = _sdpa(m.astype(bool))
    tq, tk, tv = (torch.tensor(a) for a in (q, k, v))
    ref = torch.nn.functional.scaled_dot_product_attention(tq, tk, tv, attn_mask=torch.tensor(m.astype(bool)))
    np.testing.assert_allclose(out_bool.numpy(), ref.numpy(), rtol=1e-10, atol=1e-12)
    fmask = np.random.default_rng(1).standard_normal((3, 3))              # float: added to the scores
    _, _, _, out_float = _sdpa(fmask)
    ref = torch.nn.functional.scaled_dot_product_attention(tq, tk, tv, attn_mask=torch.tensor(fmask))
    np.testing.assert_allclose(out_float.numpy(), ref.numpy(), rtol=1e-10, atol=1e-12)
    # a list of bools and a torch bool tensor are bool masks, not +1.0 / +0.0
    for same in (m.astype(bool).tolist(), torch.tensor(m.astype(bool)), seqlab.tensor(m.astype(bool))):
        np.testing.assert_array_equal(_sdpa(same)[3].numpy(), out_bool.numpy())
    # an int 0/1 mask is neither bool nor float: refused, as torch
    for bad in (seqlab.tensor(m), m, m.tolist(), torch.tensor(m)):
        with pytest.raises(TypeError, match="attn_mask must be bool .* got dtype int64"):
            _sdpa(bad)
    # a shape that does not broadcast to the scores (B, H, L, S) = (2, 2, 3, 3)
    with pytest.raises(ValueError, match=r"attn_mask has shape \(3, 2\).*scores' shape \(2, 2, 3, 3\)"):
        _sdpa(np.ones((3, 2), dtype=bool))
    with pytest.raises(ValueError, match=r"attn_mask has shape \(4, 1, 3, 3\).*\(2, 2, 3, 3\)"):
        _sdpa(np.zeros((4, 1, 3, 3)))                                      # would widen the batch


# ---- 2. GPT / T5 attention masks must be (batch, seq) ---------------------------------------------------
def _gpt():
    seqlab.manual_seed(0)
    return GPT(GPTConfig(vocab_size=30, n_positions=16, n_embd=8, n_layer=1, n_head=2)).eval()


def _t5():
    seqlab.manual_seed(0)
    return T5ForConditionalGeneration(T5Config(vocab_size=30, d_model=8, d_kv=4, d_ff=16, num_layers=1,
                                               num_decoder_layers=1, num_heads=2, dropout_rate=0.0)).eval()


def test_gpt_and_t5_attention_masks_of_another_batch_or_rank_are_refused():
    gpt, t5 = _gpt(), _t5()
    ok = gpt(IDS, attention_mask=MASK).logits.numpy()                     # valid input still works
    assert ok.shape == (2, 5, 30)
    for bad in (MASK[:1], MASK[0]):
        with pytest.raises(ValueError, match=rf"attention_mask has shape {re_shape(bad.shape)} but input_ids "
                                             r"\(2, 5\): expected \(2, 5\)"):
            gpt(IDS, attention_mask=bad)
        with pytest.raises(ValueError, match=rf"attention_mask has shape {re_shape(bad.shape)} but input_ids "
                                             r"\(2, 5\): expected \(2, 5\)"):
            t5(IDS, attention_mask=bad, decoder_input_ids=IDS[:, :3])
        with pytest.raises(ValueError, match=rf"attention_mask has shape {re_shape(bad[..., :3].shape)} but "
                                             r"input_ids \(2, 3\): expected \(2, 3\)"):
            t5(IDS, attention_mask=MASK, decoder_input_ids=IDS[:, :3], decoder_attention_mask=bad[..., :3])
    enc = t5.encoder(IDS, MASK)                                            # reused encoder output, wrong mask
    with pytest.raises(ValueError, match=r"encoder_attention_mask .* has shape \(1, 5\) .* need \(2, 5\)"):
        t5(attention_mask=MASK[:1], decoder_input_ids=IDS[:, :3], encoder_outputs=enc)


def re_shape(shape) -> str:
    return "\\" + str(tuple(shape))[:-1] + "\\)"


# ---- 3. TransformerClassifier labels --------------------------------------------------------------------
def test_classifier_refuses_float_labels_instead_of_truncating_them():
    seqlab.manual_seed(0)
    model = TransformerClassifier(ClassifierConfig(vocab_size=30, d_model=8, nhead=2, num_layers=1,
                                                   dim_feedforward=16, dropout=0.0))
    assert np.isfinite(model(IDS, MASK, labels=np.array([0, 1])).loss.item())  # integer labels still train
    with pytest.raises(TypeError, match="labels must be integers, got dtype float64"):
        model(IDS, MASK, labels=np.array([0.7, 1.9]))


# ---- 4. other inputs named with their shape ---------------------------------------------------------------
def test_wrongly_shaped_ids_labels_and_positional_inputs_are_named():
    seqlab.manual_seed(0)
    bert = BertModel(BertConfig(vocab_size=30, hidden_size=8, num_hidden_layers=1, num_attention_heads=2,
                                intermediate_size=16, max_position_embeddings=16)).eval()
    assert bert(IDS, token_type_ids=np.zeros_like(IDS)).last_hidden_state.shape == (2, 5, 8)
    with pytest.raises(ValueError, match=r"token_type_ids has shape \(2, 4\) but input_ids \(2, 5\)"):
        bert(IDS, token_type_ids=np.zeros((2, 4), np.int64))

    gpt = _gpt()
    pos = np.arange(5)
    want = gpt(IDS).logits.numpy()                                         # default positions 0..4
    for valid in (pos[None], np.stack([pos, pos]), pos):
        np.testing.assert_array_equal(gpt(IDS, position_ids=valid).logits.numpy(), want)
    with pytest.raises(ValueError, match=r"position_ids has shape \(2, 4\) but input_ids \(2, 5\): expected"):
        gpt(IDS, position_ids=np.zeros((2, 4), np.int64))
    with pytest.raises(ValueError, match=r"position_ids has shape \(3, 5\)"):
        gpt(IDS, position_ids=np.zeros((3, 5), np.int64))
    assert np.isfinite(gpt(IDS, labels=IDS).loss.item())
    with pytest.raises(ValueError, match=r"labels has shape \(5,\) but input_ids \(2, 5\)"):
        gpt(IDS, labels=IDS[0])

    t5 = _t5()
    assert np.isfinite(t5(IDS, MASK, labels=IDS[:, :3]).loss.item())
    with pytest.raises(ValueError, match=r"labels has shape \(1, 3\) but input_ids has batch size 2: "
                                         r"expected \(2, target length\)"):
        t5(IDS, MASK, labels=IDS[:1, :3])
    with pytest.raises(ValueError, match=r"labels has shape \(2, 4\) but decoder_input_ids \(2, 3\)"):
        t5(IDS, MASK, decoder_input_ids=IDS[:, :3], labels=IDS[:, :4])

    pe = SinusoidalPositionalEncoding(8, max_len=16)
    x = np.random.default_rng(0).standard_normal((2, 5, 8)).astype(np.float32)
    np.testing.assert_allclose(pe(seqlab.tensor(x)).numpy(), x + pe.pe.numpy()[:, :5], rtol=1e-6)
    with pytest.raises(ValueError, match=r"x has shape \(5, 8\) but SinusoidalPositionalEncoding expects "
                                         r"\(batch, seq, d_model\)"):
        pe(seqlab.tensor(x[0]))
