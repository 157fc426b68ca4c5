"""Fixtures for `seqlab attention`: tiny random models saved as folders.

The tiny models (2 layers, 2 heads, width 16) are seqlab's own classes with
random weights: the tests check that the command runs them and draws what
they return, not what they have learned.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

TEXTS = ["the cat sat on the mat", "a dog ran in the park", "the bird sang a song",
         "ein hund lief im park", "die katze sass auf der matte"] * 4


@pytest.fixture(scope="session")
def bpe_tokenizer():
    """A byte-level BPE trained on a few sentences: <pad> = 0, <s> = 1, </s> = 2 (the Translator's ids)."""
    from seqlab.data import Tokenizer

    return Tokenizer.train_bpe(TEXTS, 300, special_tokens=("<pad>", "<s>", "</s>"), min_frequency=1)


@pytest.fixture(scope="session")
def model_dirs(tmp_path_factory, bpe_tokenizer) -> dict[str, Path]:
    """Folders of tiny random models: "gpt" and "t5" (Hugging Face format, save_pretrained),
    "translator" and "seq2seq" (seqlab model folders: config.json + model.safetensors + tokenizer/)."""
    import seqlab
    from safetensors.numpy import save_file
    from seqlab import backend
    from seqlab.models.gpt import GPT, GPTConfig
    from seqlab.models.seq2seq import Seq2Seq, Seq2SeqConfig
    from seqlab.models.t5 import T5Config, T5ForConditionalGeneration
    from seqlab.models.translator import Translator, TranslatorConfig

    root = tmp_path_factory.mktemp("models")
    tok, V = bpe_tokenizer, bpe_tokenizer.vocab_size
    seqlab.manual_seed(0)
    dirs = {name: root / name for name in ("gpt", "t5", "translator", "seq2seq")}
    GPT(GPTConfig(vocab_size=V, n_embd=16, n_layer=2, n_head=2, n_positions=64)).save_pretrained(dirs["gpt"])
    T5ForConditionalGeneration(T5Config(vocab_size=V, d_model=16, d_kv=8, d_ff=32, num_layers=2, num_heads=2,
                                        pad_token_id=0, eos_token_id=2, decoder_start_token_id=0)
                               ).save_pretrained(dirs["t5"])
    for name in ("gpt", "t5"):
        tok.save(dirs[name])
    natives = {"translator": Translator(TranslatorConfig(V, V, d_model=16, nhead=2, num_encoder_layers=2,
                                                         num_decoder_layers=2, dim_feedforward=32, max_len=64)),
               "seq2seq": Seq2Seq(Seq2SeqConfig(V, V, emb_dim=8, enc_hidden=8, dec_hidden=16, attn_dim=8))}
    for name, model in natives.items():
        dirs[name].mkdir()
        save_file({k: np.ascontiguousarray(backend.to_numpy(v)) for k, v in model.state_dict().items()},
                  str(dirs[name] / "model.safetensors"))
        (dirs[name] / "config.json").write_text(json.dumps(model.config.to_dict()), encoding="utf-8")
        tok.save(dirs[name] / "tokenizer")
    return dirs
