"""clm-pretrain: GPT-style causal-LM pretraining on a text corpus (same size, text and vocabulary as mlm-pretrain).

The sentences are joined into one id stream separated by [SEP]; each
example is a random window of `max_len` tokens and the model predicts
every next token (Radford et al., 2018).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from seqlab.train.tasks.base import Task, model_output, require
from seqlab.train.tasks.pretrain import PretrainConfig, corpus_and_tokenizer, save_pretrained
from seqlab.train.tasks.shakespeare_gpt import lm_evaluate, lm_loss

NAME = "clm-pretrain"
DESCRIPTION = "GPT-style causal-LM pretraining on SST-2 + Multi30k English (exercise 3)"


@dataclass
class Config(PretrainConfig):
    pass


def build(config: Config, run_dir: Path | None = None, data_dir: Path | None = None, training: bool = True) -> Task:
    GPT = require("seqlab.models.gpt", "GPT", NAME)
    GPTConfig = require("seqlab.models.gpt", "GPTConfig", NAME)
    data = require("seqlab.data", None, NAME)
    train, val, tok = corpus_and_tokenizer(config, run_dir, data_dir, training, NAME)
    model = GPT(GPTConfig(vocab_size=tok.vocab_size, n_positions=config.max_len, n_embd=config.d_model,
                          n_layer=config.num_layers, n_head=config.nhead, n_inner=config.dim_feedforward,
                          resid_pdrop=config.dropout, embd_pdrop=config.dropout, attn_pdrop=config.dropout,
                          bos_token_id=tok.cls_token_id, eos_token_id=tok.sep_token_id,
                          pad_token_id=tok.pad_token_id))
    task = Task(model=model, model_config=model.config.to_dict())
    if not training:
        return task
    sep = tok.sep_token_id

    def stream(lines) -> np.ndarray:
        return np.array([i for ids in tok.encode_batch(lines, add_special_tokens=False) for i in ids + [sep]],
                        dtype=np.int64)

    train_ids, val_ids = stream(train), stream(val)

    def batches(epoch: int, rng: np.random.Generator):
        while True:
            yield data.causal_lm_windows(train_ids, config.max_len, config.batch_size, rng)  # (B, T) each

    def loss_fn(model, batch):
        x, y = batch
        return lm_loss(model_output(model(x)), y), {"tokens": int(x.size)}

    task.batches, task.loss_fn = batches, loss_fn
    task.evaluate = lambda m: {"val_loss": lm_evaluate(m, {"val": val_ids}, config.max_len, config.batch_size,
                                                       config.eval_batches, config.seed)["val_loss"]}
    task.finish = lambda model, out: save_pretrained(model, tok, out)
    task.info = {"train_tokens": len(train_ids), "val_tokens": len(val_ids), "vocab_size": tok.vocab_size}
    return task
