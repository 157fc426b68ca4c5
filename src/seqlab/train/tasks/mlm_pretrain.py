"""mlm-pretrain: BERT-style masked-LM pretraining (Devlin et al., 2019, section 3.1) on a text corpus.

Each sentence becomes [CLS] ... [SEP]; 15% of its tokens are chosen, 80% of
them replaced by [MASK], 10% by a random token, 10% left alone, and the
model predicts the originals. Masks are drawn from the trainer's data
generator, so a resumed run sees the same masks.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import numpy as np

from seqlab import functional as F
from seqlab.train.tasks.base import Task, model_output, require
from seqlab.train.tasks.classify import pad
from seqlab.train.config import Bound
from seqlab.train.tasks.pretrain import PretrainConfig, chunked, corpus_and_tokenizer, save_pretrained

NAME = "mlm-pretrain"
DESCRIPTION = "BERT-style masked-LM pretraining on SST-2 + Multi30k English (exercise 3)"


@dataclass
class Config(PretrainConfig):
    mask_prob: float = 0.15

    BOUNDS: ClassVar = {"mask_prob": Bound(0, 1, open_min=True)}


def build(config: Config, run_dir: Path | None = None, data_dir: Path | None = None, training: bool = True) -> Task:
    Bert = require("seqlab.models.bert", "BertForMaskedLM", NAME)
    BertConfig = require("seqlab.models.bert", "BertConfig", NAME)
    data = require("seqlab.data", None, NAME)
    train, val, tok = corpus_and_tokenizer(config, run_dir, data_dir, training, NAME)
    model = Bert(BertConfig(vocab_size=tok.vocab_size, hidden_size=config.d_model, num_hidden_layers=config.num_layers,
                            num_attention_heads=config.nhead, intermediate_size=config.dim_feedforward,
                            hidden_dropout_prob=config.dropout, attention_probs_dropout_prob=config.dropout,
                            max_position_embeddings=config.max_len, pad_token_id=tok.pad_token_id))
    task = Task(model=model, model_config=model.config.to_dict())
    if not training:
        return task
    specials = np.array(sorted(set(tok.all_special_ids)), dtype=np.int64)
    vocab = tok.vocab_size

    def encode(lines):
        return [ids[:config.max_len - 1] + ids[-1:] if len(ids) > config.max_len else ids
                for ids in tok.encode_batch(lines)]

    train_ids, val_ids = encode(train), encode(val)

    def masked(ids_list, idx, rng):
        ids, mask = pad([ids_list[i] for i in idx], tok.pad_token_id)                  # (B, T) each
        special = np.isin(ids, specials) | (mask == 0)                                 # (B, T) never chosen
        inputs, labels = data.mlm_mask(ids, rng, vocab, tok.mask_token_id, special, config.mask_prob)
        return {"ids": inputs, "mask": mask, "labels": labels}

    def batches(epoch: int, rng: np.random.Generator):
        for idx in chunked(len(train_ids), config.batch_size, rng):
            yield masked(train_ids, idx, rng)

    def loss_fn(model, batch):
        labels = batch["labels"]
        if hasattr(model, "bert") and hasattr(model, "cls"):
            # The output layer only at the chosen ~15% of positions: the same loss, a fraction of the V-wide work.
            h = model.bert(batch["ids"], attention_mask=batch["mask"]).last_hidden_state  # (B, T, C)
            rows, cols = np.nonzero(labels != data.IGNORE_INDEX)                           # (N,) each
            logits = model.cls.predictions(h[rows, cols])                                  # (N, V)
            loss = F.cross_entropy(logits, labels[rows, cols])
        else:
            logits = model_output(model(batch["ids"], attention_mask=batch["mask"]))      # (B, T, V)
            B, T, V = logits.shape
            loss = F.cross_entropy(logits.reshape(B * T, V), labels.reshape(B * T))
        return loss, {"tokens": int(batch["mask"].sum())}

    def evaluate(model):
        rng = np.random.default_rng((config.seed, 11))  # the same masks at every evaluation
        losses = [float(loss_fn(model, masked(val_ids, idx, rng))[0].data)
                  for idx in chunked(len(val_ids), config.batch_size, None)[:config.eval_batches]]
        return {"val_loss": float(np.mean(losses))}

    task.batches, task.loss_fn, task.evaluate = batches, loss_fn, evaluate
    task.finish = lambda model, out: save_pretrained(model, tok, out)
    task.info = {"train_lines": len(train), "val_lines": len(val), "vocab_size": tok.vocab_size}
    return task
