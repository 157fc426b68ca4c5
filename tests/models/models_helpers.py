"""Helpers shared by the model tests (tests/models is on sys.path when pytest runs them)."""
from __future__ import annotations

import numpy as np


def hf_save(model, folder) -> str:
    """Save a transformers model into `folder` (a str for both libraries)."""
    model.save_pretrained(str(folder))
    return str(folder)


def grads_match(seqlab_model, hf_model, rel: float, transposed=()) -> dict:
    """Largest relative gradient difference per parameter name, asserting each is <= rel."""
    hf_params = dict(hf_model.named_parameters())
    worst = {}
    for name, p in seqlab_model.named_parameters():
        assert name in hf_params, f"{name} has no transformers counterpart"
        g_ref = hf_params[name].grad.detach().numpy()
        if name.endswith(tuple(transposed)):
            g_ref = g_ref.T
        assert p.grad is not None, f"{name} got no gradient"
        err = np.abs(p.grad - g_ref).max() / max(np.abs(g_ref).max(), 1e-12)
        worst[name] = err
        assert err <= rel, f"gradient of {name} differs by {err:.2e} (relative)"
    return worst


# ---- tiny GPT-2 and T5 for the generation tests (test_generation_options.py, test_generation_outputs.py) ----
GEN_GPT_CFG = dict(vocab_size=50, n_positions=64, n_embd=16, n_layer=2, n_head=2, resid_pdrop=0.0, embd_pdrop=0.0,
                   attn_pdrop=0.0, bos_token_id=1, eos_token_id=2, pad_token_id=0)
GEN_T5_CFG = dict(vocab_size=40, d_model=16, d_kv=4, d_ff=24, num_layers=2, num_heads=2, feed_forward_proj="relu",
                  relative_attention_num_buckets=8, relative_attention_max_distance=20, dropout_rate=0.0,
                  decoder_start_token_id=0, pad_token_id=0, eos_token_id=1)


def gpt_batch():
    """Three prompts of 8, 5 and 7 tokens, left-padded to 8 with id 0."""
    rng = np.random.default_rng(0)
    ids = rng.integers(3, GEN_GPT_CFG["vocab_size"], (3, 8))
    mask = np.ones_like(ids)
    mask[1, :3] = 0
    mask[2, :1] = 0
    return np.where(mask == 1, ids, 0), mask


def t5_batch():
    """Three sources of 9, 6 and 4 tokens, right-padded with id 0."""
    rng = np.random.default_rng(3)
    ids = rng.integers(2, GEN_T5_CFG["vocab_size"], (3, 9))
    mask = np.ones_like(ids)
    mask[1, 6:] = 0
    mask[2, 4:] = 0
    return np.where(mask == 1, ids, 0), mask
