"""gpt-generate: 256 new tokens, greedy, with the KV cache, from the same small random GPT-2.

The model is gpt-train's size (4 layers, 4 heads, 128 dims, vocabulary 65;
512 positions). seqlab's `GPT.generate` against transformers'
`GPT2LMHeadModel.generate` on the same weights (seqlab writes its model with
`save_pretrained`, transformers reads that folder), the same 8-token prompt,
greedy decoding, no end-of-sequence token so both make all 256 tokens.
Both must produce the same tokens; the benchmark checks it.
"""
from __future__ import annotations

import tempfile

import numpy as np

NAME = "gpt-generate"
DESCRIPTION = "256 new tokens (greedy, KV cache), GPT 4 layers, 4 heads, 128 dims, vocab 65, 8-token prompt"


def build(new_tokens: int = 256, prompt_len: int = 8, batch: int = 1, seed: int = 0):
    """(seqlab fn, torch fn, equal tokens?) — each fn returns the ids (batch, prompt_len + new_tokens)."""
    import torch
    import transformers

    import seqlab
    from seqlab.models.gpt import GPT, GPTConfig

    transformers.logging.set_verbosity_error()
    transformers.utils.logging.disable_progress_bar()
    seqlab.manual_seed(seed)
    cfg = GPTConfig(vocab_size=65, n_positions=512, n_embd=128, n_layer=4, n_head=4, resid_pdrop=0.0,
                    embd_pdrop=0.0, attn_pdrop=0.0, bos_token_id=None, eos_token_id=None, pad_token_id=0)
    model = GPT(cfg).eval()
    with tempfile.TemporaryDirectory() as tmp:
        model.save_pretrained(tmp)
        twin = transformers.GPT2LMHeadModel.from_pretrained(tmp).eval()
    twin.generation_config.eos_token_id = None
    twin.generation_config.pad_token_id = 0
    prompt = np.random.default_rng(seed).integers(0, cfg.vocab_size, (batch, prompt_len)).astype(np.int64)
    t_prompt = torch.from_numpy(prompt)
    t_mask = torch.ones_like(t_prompt)

    def seqlab_fn():
        return model.generate(prompt, max_new_tokens=new_tokens, do_sample=False, use_cache=True)

    def torch_fn():
        with torch.inference_mode():
            return twin.generate(t_prompt, attention_mask=t_mask, max_new_tokens=new_tokens,
                                 min_new_tokens=new_tokens, do_sample=False, use_cache=True)

    same = bool(np.array_equal(seqlab_fn(), torch_fn().numpy()))
    return seqlab_fn, torch_fn, same
