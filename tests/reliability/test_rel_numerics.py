"""Numerics at the edges, in whole models: padding that masks every key of a row gives no NaN anywhere.

The ops are held elsewhere: softmax / log-softmax finite at ±1e4 in float32
(tests/test_ops_activation.py::test_softmax_finite_at_1e4_float32), cross-entropy
(tests/test_losses.py::test_cross_entropy_stable_for_huge_logits_float32), fully masked attention rows
(tests/test_attention_op.py::test_fully_masked_row_gives_zeros_and_finite_grads) and, with random shapes,
masks and magnitudes, test_rel_fuzz_ops.py here (LayerNorm of constant rows included). torch gives NaN
for a fully masked row; Hugging Face models avoid it with a large negative number instead of -inf.
"""
from __future__ import annotations

import numpy as np

import seqlab
from seqlab import nn

IDS = np.array([[5, 9, 12, 7, 3], [8, 4, 0, 0, 0]])


def _finite(*arrays) -> bool:
    return all(np.all(np.isfinite(np.asarray(a))) for a in arrays)


def test_bert_with_an_all_padding_example(models):
    from seqlab.models import BertModel

    bert = BertModel.from_pretrained(models.bert, dtype=np.float32)
    mask = np.array([[1, 1, 1, 1, 1], [0, 0, 0, 0, 0]])  # example 2: nothing to attend to
    out = bert(IDS, attention_mask=mask, output_attentions=True)
    assert _finite(out.last_hidden_state.numpy(), out.pooler_output.numpy(), *(w.numpy() for w in out.attentions))
    alone = bert(IDS[:1], attention_mask=mask[:1]).last_hidden_state.numpy()
    np.testing.assert_allclose(out.last_hidden_state.numpy()[:1], alone, rtol=1e-5, atol=1e-6)


def test_gpt_left_padding_masks_whole_rows_without_nan(models):
    from seqlab.models import GPT

    gpt = GPT.from_pretrained(models.gpt)
    ids = np.array([[0, 0, 0, 5, 9], [5, 9, 12, 7, 3]])
    mask = np.array([[0, 0, 0, 1, 1], [1, 1, 1, 1, 1]])  # the first three queries of row 1 see only padding
    out = gpt(ids, attention_mask=mask, output_attentions=True)
    assert _finite(out.logits.numpy(), *(w.numpy() for w in out.attentions))


def test_t5_with_an_all_padding_source(models):
    from seqlab.models import T5ForConditionalGeneration

    t5 = T5ForConditionalGeneration.from_pretrained(models.t5)
    src_mask = np.array([[1, 1, 1, 1, 1], [0, 0, 0, 0, 0]])
    out = t5(IDS, attention_mask=src_mask, decoder_input_ids=np.array([[0, 5], [0, 4]]), output_attentions=True)
    assert _finite(out.logits.numpy(), *(w.numpy() for w in out.cross_attentions))


def test_multihead_attention_with_an_all_padding_example_has_finite_gradients():
    seqlab.manual_seed(0)
    mha = nn.MultiheadAttention(8, 2, batch_first=True)
    x = seqlab.randn(2, 3, 8, requires_grad=True)
    pad = np.array([[False, False, True], [True, True, True]])  # True = padding; example 2 is all padding
    out, w = mha(x, x, x, key_padding_mask=pad)
    out.sum().backward()
    assert _finite(out.numpy(), w.numpy(), x.grad, *(p.grad for p in mha.parameters()))
    assert np.all(w.numpy()[1] == 0)  # no key: zero weights, not NaN


def test_float32_logits_of_1e4_through_a_classifier_loss_and_its_gradient():
    import seqlab.functional as F

    logits = seqlab.tensor(np.array([[1e4, -1e4, 0.0], [-1e4, -1e4, -1e4]], dtype=np.float32), requires_grad=True)
    for smoothing in (0.0, 0.1):
        loss = F.cross_entropy(logits, np.array([1, 2]), label_smoothing=smoothing)
        loss.backward()
        assert np.isfinite(loss.item()) and loss.item() > 1e3 and _finite(logits.grad)
        logits.grad = None
