"""BERT: the pretrained MiniLM equals transformers' BertModel; tiny heads match in values and gradients."""
from __future__ import annotations

import numpy as np
import pytest
from models_helpers import grads_match, hf_save

import seqlab
from seqlab import embed
from seqlab.models import AutoModel, BertConfig, BertForMaskedLM, BertForSequenceClassification, BertModel

SENTENCES = [
    "Natural language processing is fascinating.",
    "A man is eating food.",
    "A man is eating a piece of bread.",
    "The girl is carrying a baby.",
    "A woman is playing violin.",
    "Two men pushed carts through the woods.",
    "It's a charming and often affecting journey.",
    "unflinchingly bleak and desperate",
    "Café crème brûlée, naïve façade — accents everywhere!",
    "北京是中国的首都。",
    "Emoji 🤖 and URLs like https://example.com/a?b=c#d",
    "Numbers: 3.14159, 2,718 and 1e-10.",
    "Short.",
    "",
    "A much longer sentence that goes on and on, with commas, clauses, and a little bit of everything, "
    "so that the batch needs real padding for the shorter rows.",
    "The quick brown fox jumps over the lazy dog.",
    "Transformers replaced recurrent networks in most NLP tasks.",
    "I didn't like it; it wasn't good at all.",
]


@pytest.fixture(scope="module")
def minilm_pair(T, minilm_dir):
    """(seqlab MiniLM, transformers MiniLM with eager attention, tokenizer batch) in float32."""
    ours = BertModel.from_pretrained("minilm")
    ref = T.BertModel.from_pretrained(str(minilm_dir), attn_implementation="eager").eval()
    tok = T.AutoTokenizer.from_pretrained(str(minilm_dir))
    batch = tok(SENTENCES, padding=True, truncation=True, max_length=128, return_tensors="np")
    return ours, ref, batch


def test_minilm_equals_transformers_on_a_padded_batch(minilm_pair, torch):
    ours, ref, b = minilm_pair
    assert b["input_ids"].shape[0] >= 16 and (b["attention_mask"] == 0).any()
    out = ours(b["input_ids"], b["attention_mask"], b["token_type_ids"], output_attentions=True)
    with torch.no_grad():
        r = ref(**{k: torch.tensor(v) for k, v in b.items()}, output_attentions=True)
    assert out.last_hidden_state.dtype == np.float32
    real = b["attention_mask"].astype(bool)
    ours_h, ref_h = out.last_hidden_state.numpy(), r.last_hidden_state.numpy()
    np.testing.assert_allclose(ours_h[real], ref_h[real], rtol=0, atol=1e-4)
    # padding positions are computed the same way too, but they attend only to the few real tokens of
    # short rows and amplify float32 rounding layer by layer (in float64 both agree to 1e-13)
    np.testing.assert_allclose(ours_h[~real], ref_h[~real], rtol=0, atol=1e-3)
    np.testing.assert_allclose(out.pooler_output.numpy(), r.pooler_output.numpy(), rtol=0, atol=1e-4)
    assert len(out.attentions) == len(r.attentions) == 6
    for a, c in zip(out.attentions, r.attentions):
        assert a.shape == tuple(c.shape) == (len(SENTENCES), 12) + b["input_ids"].shape[1:] * 2
        a, c = a.numpy().transpose(0, 2, 1, 3), c.numpy().transpose(0, 2, 1, 3)  # (B, T_query, H, T_key)
        np.testing.assert_allclose(a[real], c[real], rtol=0, atol=1e-5)
        np.testing.assert_allclose(a[~real], c[~real], rtol=0, atol=1e-4)
    # sentence embeddings: mean pooling over real tokens, L2-normalised (sentence-transformers)
    mask = b["attention_mask"][:, :, None].astype(np.float32)
    ref_emb = (r.last_hidden_state.numpy() * mask).sum(1) / mask.sum(1)
    ref_emb /= np.linalg.norm(ref_emb, axis=1, keepdims=True)
    ours_emb = embed.l2_normalize(embed.mean_pool(out.last_hidden_state, b["attention_mask"])).numpy()
    cos = (ours_emb * ref_emb).sum(1) / np.linalg.norm(ours_emb, axis=1)
    assert cos.min() >= 0.99999


def test_encode_api_matches_transformers_embeddings(minilm_pair, torch, T, minilm_dir):
    _, ref, _ = minilm_pair
    v = embed.encode(SENTENCES[:6], batch_size=4)  # two batches, each padded on its own
    assert v.shape == (6, 384) and v.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-6)
    tok = T.AutoTokenizer.from_pretrained(str(minilm_dir))
    b = tok(SENTENCES[:6], padding=True, return_tensors="pt")
    with torch.no_grad():
        h = ref(**b).last_hidden_state.numpy()
    m = b["attention_mask"].numpy()[:, :, None]
    r = (h * m).sum(1) / m.sum(1)
    r /= np.linalg.norm(r, axis=1, keepdims=True)
    assert ((v * r).sum(1)).min() >= 0.99999
    ex = embed.similarity_example()
    assert ex["nearest"][0] == 1 and ex["nearest"][1] == 0  # the two "man eating" sentences pair up


def test_section_3_2_shapes():
    r = embed.section_3_2()
    assert r["tokens"][0] == "[CLS]" and r["tokens"][-1] == "[SEP]" and "fascinating" in r["tokens"]
    n = len(r["tokens"])
    assert r["last_hidden_state_shape"] == (1, n, 384) == r["last_hidden_state"].shape
    assert r["pooler_output_shape"] == (1, 384)
    assert np.abs(r["pooler_output"]).max() <= 1.0  # tanh


TINY = dict(vocab_size=64, hidden_size=16, num_hidden_layers=2, num_attention_heads=4, intermediate_size=24,
            max_position_embeddings=32, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)


@pytest.mark.parametrize("hf_name, ours_cls, act", [
    ("BertForMaskedLM", BertForMaskedLM, "gelu"),
    ("BertForSequenceClassification", BertForSequenceClassification, "gelu"),
    ("BertForSequenceClassification", BertForSequenceClassification, "relu"),
])
def test_tiny_bert_heads_match_values_loss_and_gradients(T, torch, tmp_path, hf_name, ours_cls, act):
    torch.manual_seed(0)
    hf = getattr(T, hf_name)(T.BertConfig(**TINY, hidden_act=act, num_labels=3)).double()
    folder = hf_save(hf, tmp_path)
    hf.train()  # dropout is 0: train mode only to get gradients through the same code
    ours = ours_cls.from_pretrained(folder, dtype=np.float64)
    assert ours.loading_info.missing_keys == []
    rng = np.random.default_rng(0)
    ids = rng.integers(1, 64, (3, 9))
    mask = np.ones_like(ids)
    mask[1, 6:] = 0
    tt = np.zeros_like(ids)
    tt[:, 5:] = 1
    if hf_name == "BertForMaskedLM":
        labels = np.where(rng.random(ids.shape) < 0.3, ids, -100)
    else:
        labels = rng.integers(0, 3, 3)
    out = ours(ids, mask, tt, labels=labels)
    r = hf(input_ids=torch.tensor(ids), attention_mask=torch.tensor(mask), token_type_ids=torch.tensor(tt),
           labels=torch.tensor(labels))
    np.testing.assert_allclose(out.logits.numpy(), r.logits.detach().numpy(), rtol=1e-9, atol=1e-12)
    assert abs(out.loss.item() - r.loss.item()) <= 1e-9 * abs(r.loss.item())
    out.loss.backward()
    r.loss.backward()
    grads_match(ours, hf, rel=1e-8)


def test_bert_round_trip_through_transformers(T, torch, tmp_path):
    seqlab.manual_seed(3)
    ours = BertForMaskedLM(BertConfig(**TINY)).eval()
    ours.save_pretrained(tmp_path)
    ref = T.BertForMaskedLM.from_pretrained(str(tmp_path)).eval()
    ids = np.random.default_rng(1).integers(1, 64, (2, 7))
    with torch.no_grad():
        r = ref(input_ids=torch.tensor(ids)).logits.numpy()
    np.testing.assert_allclose(ours(ids).logits.numpy(), r, rtol=0, atol=1e-5)
    again = AutoModel.from_pretrained(tmp_path)
    assert isinstance(again, BertForMaskedLM)
    assert again.cls.predictions.decoder.weight is again.bert.embeddings.word_embeddings.weight
    np.testing.assert_array_equal(again(ids).logits.numpy(), ours(ids).logits.numpy())
    # the body of the MLM loads into a bare BertModel (prefix stripped, pooler fresh and reported)
    body = BertModel.from_pretrained(tmp_path)
    assert "pooler.dense.weight" in body.loading_info.missing_keys
    assert any(k.startswith("cls.") for k in body.loading_info.unexpected_keys)
    np.testing.assert_array_equal(body(ids).last_hidden_state.numpy(), ours.bert(ids).last_hidden_state.numpy())
