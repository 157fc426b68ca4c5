"""T5: random transformers models load into seqlab with the same logits, loss, gradients and tokens.

Compared in float64. transformers computes T5's RMS-norm variance in float32
even for float64 weights, so values and gradients agree to ~1e-7 relative.
"""
from __future__ import annotations

import numpy as np
import pytest
from models_helpers import grads_match, hf_save

import seqlab
from seqlab.models import AutoModel, T5Config, T5ForConditionalGeneration
from seqlab.models.t5 import relative_position_bucket

CONFIGS = {
    # original T5: ReLU feed-forward, head tied to the embeddings (and the d_model^-0.5 rescale)
    "relu-tied": dict(vocab_size=61, d_model=16, d_kv=6, d_ff=24, num_layers=2, num_heads=3,
                      feed_forward_proj="relu", relative_attention_num_buckets=8, relative_attention_max_distance=20),
    # T5 v1.1: gated GELU, no rescale; more decoder than encoder layers
    "gated-gelu": dict(vocab_size=53, d_model=12, d_kv=4, d_ff=20, num_layers=1, num_decoder_layers=2, num_heads=2,
                       feed_forward_proj="gated-gelu", tie_word_embeddings=False),
}
COMMON = dict(dropout_rate=0.0, decoder_start_token_id=0, pad_token_id=0, eos_token_id=1)


def make_pair(T, torch, tmp_path, name, untie_head=False, **extra):
    torch.manual_seed(sum(map(ord, name)))
    cfg = dict(CONFIGS[name], **COMMON, **extra)
    hf = T.T5ForConditionalGeneration(T.T5Config(**cfg)).double()
    if untie_head:  # a separate output matrix in the file (T5 v1.1 checkpoints): seqlab must untie
        hf.lm_head.weight = torch.nn.Parameter(torch.randn_like(hf.shared.weight))
    folder = hf_save(hf, tmp_path)
    return hf.eval(), AutoModel.from_pretrained(folder, dtype=np.float64)


def batch(vocab: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    ids = rng.integers(2, vocab, (3, 9))
    mask = np.ones_like(ids)
    mask[1, 6:] = 0
    mask[2, 4:] = 0
    labels = rng.integers(2, vocab, (3, 7))
    labels[0, 5:] = -100
    return np.where(mask == 1, ids, 0), mask, labels


def test_relative_position_buckets_equal_transformers(T, torch):
    from transformers.models.t5.modeling_t5 import T5Attention

    rel = torch.arange(-700, 700)[None, :]
    for bidirectional in (True, False):
        for nb, md in ((32, 128), (8, 20), (16, 64), (64, 256)):
            ref = T5Attention._relative_position_bucket(rel, bidirectional, nb, md).numpy()
            np.testing.assert_array_equal(relative_position_bucket(rel.numpy(), bidirectional, nb, md), ref)


@pytest.mark.parametrize("name, untie", [("relu-tied", False), ("gated-gelu", False), ("gated-gelu", True)])
def test_logits_loss_attentions_and_gradients(T, torch, tmp_path, name, untie):
    hf, ours = make_pair(T, torch, tmp_path, name, untie_head=untie, attn_implementation="eager")
    assert isinstance(ours, T5ForConditionalGeneration)
    assert (ours.lm_head.weight is not ours.shared.weight) == untie
    assert ours.config.scale_decoder_outputs == (name == "relu-tied")
    hf.train()  # dropout is 0; train mode only so both build a graph
    ids, mask, labels = batch(CONFIGS[name]["vocab_size"])
    out = ours(ids, mask, labels=labels, output_attentions=True)
    r = hf(input_ids=torch.tensor(ids), attention_mask=torch.tensor(mask), labels=torch.tensor(labels),
           output_attentions=True)
    np.testing.assert_allclose(out.logits.numpy(), r.logits.detach().numpy(), rtol=1e-5, atol=1e-5)
    assert abs(out.loss.item() - r.loss.item()) <= 1e-6 * abs(r.loss.item())
    for ours_w, ref_w in ((out.encoder_attentions, r.encoder_attentions),
                          (out.decoder_attentions, r.decoder_attentions),
                          (out.cross_attentions, r.cross_attentions)):
        assert len(ours_w) == len(ref_w)
        for a, c in zip(ours_w, ref_w):
            np.testing.assert_allclose(a.numpy(), c.detach().numpy(), atol=1e-6)
    out.loss.backward()
    r.loss.backward()
    grads_match(ours, hf, rel=1e-5)


@pytest.mark.parametrize("name", ["relu-tied", "gated-gelu"])
def test_greedy_and_beam_generation_equal_transformers(T, torch, tmp_path, name):
    hf, ours = make_pair(T, torch, tmp_path, name, num_decoder_layers=None)  # transformers' cache needs equal depth
    ids, mask, _ = batch(CONFIGS[name]["vocab_size"], seed=3)
    with torch.no_grad():
        greedy = hf.generate(torch.tensor(ids), attention_mask=torch.tensor(mask), max_new_tokens=20,
                             do_sample=False).numpy()
        beam = hf.generate(torch.tensor(ids), attention_mask=torch.tensor(mask), max_new_tokens=12,
                           do_sample=False, num_beams=3).numpy()
    got = ours.generate(ids, mask, max_new_tokens=20)
    assert got.shape == greedy.shape and got[0, 0] == 0  # starts with decoder_start_token_id
    np.testing.assert_array_equal(got, greedy)
    np.testing.assert_array_equal(ours.generate(ids, mask, max_new_tokens=20, use_cache=False), got)
    np.testing.assert_array_equal(ours.generate(ids, mask, max_new_tokens=12, num_beams=3), beam)
    np.testing.assert_array_equal(ours.generate(ids, mask, max_new_tokens=12, num_beams=3, use_cache=False), beam)
    with pytest.raises(ValueError, match="slide=True is for a GPT"):  # relative positions have no limit
        ours.generate(ids, mask, max_new_tokens=2, slide=True)


def test_beam_search_with_an_emitted_end_token(T, torch, tmp_path):
    hf, ours = make_pair(T, torch, tmp_path, "relu-tied")
    ids, mask, _ = batch(61, seed=5)
    stop = int(np.bincount(ours.generate(ids, mask, max_new_tokens=12)[:, 1:].ravel()).argmax())
    kw = dict(max_new_tokens=12, num_beams=4, eos_token_id=stop, length_penalty=0.7)
    with torch.no_grad():
        ref = hf.generate(torch.tensor(ids), attention_mask=torch.tensor(mask), do_sample=False, **kw).numpy()
    got = ours.generate(ids, mask, **kw)
    assert got.shape == ref.shape and (got[:, 1:] == stop).any()
    # after a hypothesis ends, seqlab fills with pad_token_id; transformers' beam search fills with
    # `pad_token_id or eos_token_id`, i.e. with eos when the pad id is 0 (falsy): compare up to the end
    ended = np.cumsum(got[:, 1:] == stop, axis=1) - (got[:, 1:] == stop) > 0    # strictly after the first stop
    np.testing.assert_array_equal(np.where(ended, -1, got[:, 1:]), np.where(ended, -1, ref[:, 1:]))
    assert (got[:, 1:][ended] == 0).all() and (ref[:, 1:][ended] == stop).all()


@pytest.mark.parametrize("tie", [True, False])
def test_save_pretrained_loads_in_transformers(T, torch, tmp_path, tie):
    seqlab.manual_seed(11)
    ours = T5ForConditionalGeneration(T5Config(vocab_size=40, d_model=16, d_kv=4, d_ff=32, num_layers=2,
                                               num_heads=2, tie_word_embeddings=tie,
                                               feed_forward_proj="relu" if tie else "gated-gelu")).eval()
    ours.save_pretrained(tmp_path)
    ref = T.T5ForConditionalGeneration.from_pretrained(str(tmp_path)).eval()
    ids, mask, labels = batch(40, seed=2)
    with torch.no_grad():
        r = ref(input_ids=torch.tensor(ids), attention_mask=torch.tensor(mask), labels=torch.tensor(labels))
        gen = ref.generate(torch.tensor(ids), attention_mask=torch.tensor(mask), max_new_tokens=8,
                           do_sample=False).numpy()
    out = ours(ids, mask, labels=labels)
    np.testing.assert_allclose(out.logits.numpy(), r.logits.numpy(), rtol=1e-5, atol=1e-5)
    assert abs(out.loss.item() - r.loss.item()) <= 1e-5 * abs(r.loss.item())
    np.testing.assert_array_equal(ours.generate(ids, mask, max_new_tokens=8), gen)
