"""GPT-2: random transformers models load into seqlab with the same logits, loss, gradients and tokens.

Compared in float64. transformers computes the causal-LM loss in float32
(it upcasts logits with `.float()`), so loss and gradients agree to ~1e-7
relative, not 1e-12.
"""
from __future__ import annotations

import numpy as np
import pytest
from models_helpers import grads_match, hf_save

import seqlab
from seqlab.hub.keymap import GPT2_TRANSPOSED
from seqlab.models import GPT, AutoModel, GPTConfig, GPTForSequenceClassification
from seqlab.models.generation import filter_logits

CONFIGS = {
    "small": dict(vocab_size=97, n_positions=64, n_embd=32, n_layer=2, n_head=4),
    "relu-inner-unscaled": dict(vocab_size=50, n_positions=48, n_embd=24, n_layer=3, n_head=2, n_inner=40,
                                activation_function="relu", scale_attn_by_inverse_layer_idx=True),
    "untied-erf": dict(vocab_size=61, n_positions=40, n_embd=16, n_layer=1, n_head=1, activation_function="gelu",
                       tie_word_embeddings=False),
}
NO_DROPOUT = dict(resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0, bos_token_id=1, eos_token_id=2, pad_token_id=0)


def make_pair(T, torch, tmp_path, name, cls="GPT2LMHeadModel", **extra):
    torch.manual_seed(sum(map(ord, name)))
    cfg = T.GPT2Config(**CONFIGS[name], **NO_DROPOUT, **extra)
    hf = getattr(T, cls)(cfg).double()
    if not cfg.tie_word_embeddings and cls == "GPT2LMHeadModel":
        with torch.no_grad():  # make the untied head really differ from the embeddings
            hf.lm_head.weight.normal_(0, 0.02)
    folder = hf_save(hf, tmp_path)
    ours = AutoModel.from_pretrained(folder, dtype=np.float64)
    return hf.eval(), ours, folder


def left_padded_batch(vocab: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    ids = rng.integers(3, vocab, (3, 8))
    mask = np.ones_like(ids)
    mask[1, :3] = 0
    mask[2, :1] = 0
    return np.where(mask == 1, ids, 0), mask


@pytest.mark.parametrize("name", list(CONFIGS))
def test_logits_loss_attentions_and_gradients(T, torch, tmp_path, name):
    hf, ours, _ = make_pair(T, torch, tmp_path, name, attn_implementation="eager")
    assert isinstance(ours, GPT) and ours.loading_info.missing_keys == []
    assert (ours.lm_head.weight is ours.transformer.wte.weight) == CONFIGS[name].get("tie_word_embeddings", True)
    hf.train()  # dropout is 0; train mode so both build a graph the same way
    ids = np.random.default_rng(1).integers(0, CONFIGS[name]["vocab_size"], (2, 11))
    labels = ids.copy()
    labels[0, :4] = -100
    out = ours(ids, labels=labels, output_attentions=True)
    r = hf(torch.tensor(ids), labels=torch.tensor(labels), output_attentions=True)
    np.testing.assert_allclose(out.logits.numpy(), r.logits.detach().numpy(), rtol=1e-9, atol=1e-10)
    assert abs(out.loss.item() - r.loss.item()) <= 1e-6 * abs(r.loss.item())
    for a, c in zip(out.attentions, r.attentions, strict=True):
        np.testing.assert_allclose(a.numpy(), c.detach().numpy(), atol=1e-12)
    out.loss.backward()
    r.loss.backward()
    grads_match(ours, hf, rel=1e-5, transposed=GPT2_TRANSPOSED)


def test_float32_logits_within_1e_4(T, torch, tmp_path):
    torch.manual_seed(0)
    hf = T.GPT2LMHeadModel(T.GPT2Config(**CONFIGS["small"], **NO_DROPOUT)).eval()
    ours = GPT.from_pretrained(hf_save(hf, tmp_path))
    ids, mask = left_padded_batch(97)
    with torch.no_grad():
        r = hf(torch.tensor(ids), attention_mask=torch.tensor(mask)).logits.numpy()
    out = ours(ids, mask).logits.numpy()
    assert out.dtype == np.float32
    real = mask.astype(bool)  # a left-padding query sees no key: its row is padding in both
    np.testing.assert_allclose(out[real], r[real], rtol=0, atol=1e-4)


@pytest.mark.parametrize("name", ["small", "relu-inner-unscaled"])
def test_greedy_generation_equals_transformers(T, torch, tmp_path, name):
    hf, ours, _ = make_pair(T, torch, tmp_path, name)
    ids, mask = left_padded_batch(CONFIGS[name]["vocab_size"])
    kw = dict(attention_mask=torch.tensor(mask), max_new_tokens=20, do_sample=False)
    with torch.no_grad():
        ref = hf.generate(torch.tensor(ids), **kw).numpy()
    got = ours.generate(ids, mask, max_new_tokens=20)
    assert got.shape == ref.shape == (3, 28)
    np.testing.assert_array_equal(got, ref)
    np.testing.assert_array_equal(ours.generate(ids, mask, max_new_tokens=20, use_cache=False), got)
    # a stop token the model actually emits: rows end early and are padded, as transformers does
    stop = int(np.bincount(got[:, 8:].ravel()).argmax())
    with torch.no_grad():
        ref = hf.generate(torch.tensor(ids), eos_token_id=stop, pad_token_id=0, **kw).numpy()
    got = ours.generate(ids, mask, max_new_tokens=20, eos_token_id=stop, pad_token_id=0)
    np.testing.assert_array_equal(got, ref)
    assert (got[:, 8:] == stop).any()


def test_beam_search_equals_transformers(T, torch, tmp_path):
    hf, ours, _ = make_pair(T, torch, tmp_path, "small")
    ids, mask = left_padded_batch(97, seed=4)
    with torch.no_grad():
        ref = hf.generate(torch.tensor(ids), attention_mask=torch.tensor(mask), max_new_tokens=10,
                          do_sample=False, num_beams=3).numpy()
    np.testing.assert_array_equal(ours.generate(ids, mask, max_new_tokens=10, num_beams=3), ref)


def test_kv_cache_step_by_step_equals_full_forward():
    seqlab.manual_seed(0)
    m = GPT(GPTConfig(vocab_size=40, n_positions=200, n_embd=16, n_layer=2, n_head=2)).eval()
    ids = np.random.default_rng(0).integers(0, 40, (2, 150))  # > 64: the cache buffers must grow
    full = m(ids).logits.numpy()
    out = m(ids[:, :5], use_cache=True)
    cache, steps = out.past_key_values, [out.logits.numpy()]
    for t in range(5, 150):
        out = m(ids[:, t:t + 1], past_key_values=cache, use_cache=True)
        steps.append(out.logits.numpy())
    assert cache.get_seq_length() == 150
    np.testing.assert_allclose(np.concatenate(steps, 1), full, rtol=1e-5, atol=1e-5)


def test_generation_allocates_its_kv_cache_once(monkeypatch):
    """generate() sizes the cache for prompt + new tokens: its buffers are never grown (copied), and the
    tokens are those of the growing cache."""
    from seqlab.models import generation, outputs

    seqlab.manual_seed(0)
    m = GPT(GPTConfig(vocab_size=40, n_positions=300, n_embd=16, n_layer=2, n_head=2, eos_token_id=None)).eval()
    ids = np.random.default_rng(1).integers(0, 40, (2, 7))
    grown = []
    original = outputs._grow
    monkeypatch.setattr(outputs, "_grow", lambda *a: grown.append(a[2]) or original(*a))
    made = []
    monkeypatch.setattr(generation, "KVCache", lambda **kw: made.append(outputs.KVCache(**kw)) or made[-1])
    tokens = m.generate(ids, max_new_tokens=200)
    assert grown == [] and made[0].capacity == 207 and made[0]._k[0].shape[2] == 207
    growing = outputs.KVCache()  # the same generation, buffers doubling from 64
    out = m(ids, use_cache=True, past_key_values=growing)
    seq = np.concatenate([ids, out.logits.numpy()[:, -1:].argmax(-1)], 1)
    for _ in range(199):
        out = m(seq[:, -1:], use_cache=True, past_key_values=growing)
        seq = np.concatenate([seq, out.logits.numpy()[:, -1:].argmax(-1)], 1)
    assert grown  # the plain cache did grow
    np.testing.assert_array_equal(tokens, seq)


def test_sampling_controls():
    seqlab.manual_seed(0)
    m = GPT(GPTConfig(vocab_size=30, n_positions=64, n_embd=16, n_layer=1, n_head=2, eos_token_id=None)).eval()
    ids = np.array([[3, 4, 5]])
    greedy = m.generate(ids, max_new_tokens=10)
    assert np.array_equal(m.generate(ids, max_new_tokens=10, do_sample=True, top_k=1, seed=3), greedy)
    assert np.array_equal(m.generate(ids, max_new_tokens=10, do_sample=True, top_p=1e-6, seed=3), greedy)
    a = m.generate(ids, max_new_tokens=10, do_sample=True, temperature=2.0, seed=5)
    assert np.array_equal(a, m.generate(ids, max_new_tokens=10, do_sample=True, temperature=2.0, seed=5))
    draws = {tuple(m.generate(ids, max_new_tokens=10, do_sample=True, temperature=5.0, seed=s)[0]) for s in range(5)}
    assert len(draws) > 1
    with pytest.raises(ValueError, match="temperature"):
        m.generate(ids, do_sample=True, temperature=0.0)
    with pytest.raises(ValueError, match="exceeds the model's 64 positions"):
        m.generate(ids, max_new_tokens=100)


def test_filter_logits_top_k_and_top_p():
    x = np.log(np.array([[0.5, 0.3, 0.15, 0.05]], dtype=np.float32))
    assert np.isfinite(filter_logits(x, top_k=2)).sum() == 2
    keep = np.isfinite(filter_logits(x, top_p=0.7))          # 0.5 + 0.3 >= 0.7: two tokens
    np.testing.assert_array_equal(keep, [[True, True, False, False]])
    keep = np.isfinite(filter_logits(x, top_p=0.85))         # 0.8 < 0.85: a third token is needed
    np.testing.assert_array_equal(keep, [[True, True, True, False]])
    np.testing.assert_allclose(filter_logits(x, temperature=2.0), x / 2)


def test_sequence_classification_pools_last_real_token(T, torch, tmp_path):
    hf, ours, folder = make_pair(T, torch, tmp_path, "small", cls="GPT2ForSequenceClassification", num_labels=3)
    assert isinstance(ours, GPTForSequenceClassification)
    hf.train()
    rng = np.random.default_rng(2)
    ids = rng.integers(3, 97, (3, 7))
    ids[0, 5:] = 0  # right padding with pad_token_id 0
    mask = (ids != 0).astype(np.int64)
    labels = np.array([0, 2, 1])
    out = ours(ids, mask, labels=labels)
    r = hf(torch.tensor(ids), attention_mask=torch.tensor(mask), labels=torch.tensor(labels))
    np.testing.assert_allclose(out.logits.numpy(), r.logits.detach().numpy(), rtol=1e-9, atol=1e-12)
    out.loss.backward()
    r.loss.backward()
    grads_match(ours, hf, rel=1e-8, transposed=GPT2_TRANSPOSED)


@pytest.mark.parametrize("tie", [True, False])
def test_save_pretrained_loads_in_transformers(T, torch, tmp_path, tie):
    seqlab.manual_seed(7)
    ours = GPT(GPTConfig(vocab_size=50, n_positions=32, n_embd=16, n_layer=2, n_head=2, bos_token_id=1,
                         eos_token_id=2, tie_word_embeddings=tie)).eval()
    ours.save_pretrained(tmp_path)
    ref = T.GPT2LMHeadModel.from_pretrained(str(tmp_path)).eval()
    ids = np.random.default_rng(0).integers(0, 50, (2, 9))
    with torch.no_grad():
        r = ref(torch.tensor(ids)).logits.numpy()
        gen = ref.generate(torch.tensor(ids), max_new_tokens=20, do_sample=False).numpy()
    np.testing.assert_allclose(ours(ids).logits.numpy(), r, rtol=0, atol=1e-5)
    np.testing.assert_array_equal(ours.generate(ids, max_new_tokens=20), gen)


def _nanogpt_greedy(hf, torch, ids, mask, n):
    """nanoGPT's generate with transformers' GPT-2: each step reads the last n_positions tokens, from position 0."""
    W = hf.config.n_positions
    seq, m = torch.tensor(ids), torch.tensor(mask)
    for _ in range(n):
        win, wm = seq[:, -W:], m[:, -W:]
        pos = (wm.cumsum(-1) - 1).clamp(min=0)
        with torch.no_grad():
            nxt = hf(win, attention_mask=wm, position_ids=pos).logits[:, -1].argmax(-1, keepdim=True)
        seq, m = torch.cat([seq, nxt], 1), torch.cat([m, torch.ones_like(nxt)], 1)
    return seq.numpy()


def test_sliding_generation_equals_nanogpts_cropped_context_with_transformers(T, torch, tmp_path):
    """slide=True: past n_positions (64) each step reads the last 64 tokens, renumbered from 0. The tokens are
    those of transformers' GPT-2 run on the cropped windows, with and without the cache, for left-padded rows;
    a prompt longer than the model is read through its end. Without slide it is the transformers error."""
    hf, ours, _ = make_pair(T, torch, tmp_path, "small")
    ids, mask = left_padded_batch(97)
    ref = _nanogpt_greedy(hf, torch, ids, mask, 90)                     # 8 + 90 = 98 > 64
    got = ours.generate(ids, mask, max_new_tokens=90, slide=True)
    assert got.shape == (3, 98)
    np.testing.assert_array_equal(got, ref)
    np.testing.assert_array_equal(ours.generate(ids, mask, max_new_tokens=90, slide=True, use_cache=False), got)
    long = np.random.default_rng(5).integers(3, 97, (2, 70))            # the prompt alone outgrows the model
    got = ours.generate(long, max_new_tokens=6, slide=True)
    np.testing.assert_array_equal(got, _nanogpt_greedy(hf, torch, long, np.ones_like(long), 6))
    with pytest.raises(ValueError, match="exceeds the model's 64 positions; pass slide=True"):
        ours.generate(ids, mask, max_new_tokens=90)
    # a prompt that fits with its new tokens: slide changes nothing
    np.testing.assert_array_equal(ours.generate(ids, mask, max_new_tokens=20, slide=True),
                                  ours.generate(ids, mask, max_new_tokens=20))


def test_sliding_generation_samples_and_beams_the_same_with_and_without_the_cache():
    seqlab.manual_seed(0)
    m = GPT(GPTConfig(vocab_size=30, n_positions=16, n_embd=16, n_layer=2, n_head=2, eos_token_id=None)).eval()
    ids = np.random.default_rng(2).integers(0, 30, (2, 5))
    a = m.generate(ids, max_new_tokens=40, slide=True, do_sample=True, top_k=10, seed=3)
    b = m.generate(ids, max_new_tokens=40, slide=True, do_sample=True, top_k=10, seed=3, use_cache=False)
    assert a.shape == (2, 45)
    np.testing.assert_array_equal(a, b)
    beams = m.generate(ids, max_new_tokens=20, slide=True, num_beams=3)
    assert beams.shape == (2, 25)
    np.testing.assert_array_equal(beams, m.generate(ids, max_new_tokens=20, slide=True, num_beams=3,
                                                    use_cache=False))
