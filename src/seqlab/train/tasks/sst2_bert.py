"""sst2-bert: fine-tune the pretrained MiniLM (all-MiniLM-L6-v2, BERT architecture) on SST-2.

BertForSequenceClassification.from_pretrained("minilm", num_labels=2): the
pretrained encoder plus a fresh linear head, MiniLM's own uncased WordPiece
vocabulary. The head reads the mean of the last hidden states over real tokens
(`pooling = "mean"`, the sentence embedding all-MiniLM-L6-v2 was trained to
produce) or, as HF's BertForSequenceClassification does, the pooled [CLS]
vector (`pooling = "cls"`). Reference target: dev accuracy >= 0.90.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from seqlab.embed import mean_pool
from seqlab.train.config import LIMIT, Bound, TrainConfig, make_optimizer
from seqlab.train.tasks.base import Task, model_output, require
from seqlab.train.tasks.classify import TextClassification
from seqlab.train.tasks.text import sst2_splits

NAME = "sst2-bert"
DESCRIPTION = "SST-2 sentiment, fine-tuned pretrained MiniLM (BERT)"


@dataclass
class Config(TrainConfig):
    max_steps: int = 2000
    batch_size: int = 32
    lr: float = 5e-5
    weight_decay: float = 0.01
    schedule: str = "warmup_linear"
    warmup_steps: int = 200
    clip_grad_norm: float = 1.0
    eval_every: int = 250
    checkpoint_every: int = 250
    log_every: int = 10
    metric: str = "val_acc"
    metric_mode: str = "max"
    pretrained: str = "minilm"    # a known name or an HF BERT folder
    max_len: int = 66             # [CLS] + 64 word pieces + [SEP]
    pooling: str = "mean"         # 'mean' over real tokens, or 'cls' (HF's pooler on [CLS])
    freeze_word_embeddings: bool = False  # keep the 30,522 x 384 pretrained word vectors as they are
    layer_lr_decay: float = 1.0   # < 1: layer-wise lr decay, each layer down from the head gets this factor more
    max_train_examples: int = 0
    max_dev_examples: int = 0

    BOUNDS: ClassVar = {"max_len": Bound(3, note="[CLS] + at least one word piece + [SEP]"),
                        "layer_lr_decay": Bound(0, 1, open_min=True, note="1 = no decay"),
                        "max_train_examples": LIMIT, "max_dev_examples": LIMIT}
    CHOICES: ClassVar = {"metric": ("val_acc", "val_loss"), "pooling": ("mean", "cls")}
    GRADIENT_CHECKPOINTING: ClassVar = True  # BERT


def layer_lr_scale(num_layers: int, decay: float):
    """name -> lr factor for layer-wise decay (as in ELECTRA): the head and pooler 1, encoder layer i
    (0 = lowest) decay^(num_layers - i), the embeddings decay^(num_layers + 1)."""
    def scale(name: str) -> float:
        if name.startswith("bert.embeddings."):
            return decay ** (num_layers + 1)
        if name.startswith("bert.encoder.layer."):
            return decay ** (num_layers - int(name.split(".")[3]))
        return 1.0
    return scale


def build(config: Config, run_dir: Path | None = None, data_dir: Path | None = None, training: bool = True) -> Task:
    Bert = require("seqlab.models.bert", "BertForSequenceClassification", NAME)
    Tokenizer = require("seqlab.data", "Tokenizer", NAME)
    model = Bert.from_pretrained(config.pretrained, num_labels=2)
    if config.freeze_word_embeddings:  # half the parameters; no gradient, no optimizer update
        model.bert.embeddings.word_embeddings.weight.requires_grad_(False)
    tok = Tokenizer.from_pretrained(config.pretrained)
    sep = tok.convert_tokens_to_ids("[SEP]")

    def encode(sentences):  # cut to max_len keeping [SEP] last, as truncation=True does
        return [ids if len(ids) <= config.max_len else ids[:config.max_len - 1] + [sep]
                for ids in tok.encode_batch(list(sentences))]

    def forward(model, ids, mask):
        if config.pooling == "cls":
            return model_output(model(ids, attention_mask=mask))
        h = model.bert(ids, attention_mask=mask).last_hidden_state           # (B, T, C)
        return model.classifier(model.dropout(mean_pool(h, mask)))           # (B, 2)

    clf = TextClassification(encode, tok.pad_token_id, config.batch_size, config.max_len, forward=forward,
                             eval_batch_size=64)
    model_config = {**(model.config.to_dict() if hasattr(model.config, "to_dict") else {}),
                    "pretrained": config.pretrained, "num_classes": 2}
    task = Task(model=model, model_config=model_config, predict=clf.predict)
    if config.layer_lr_decay != 1.0:
        task.optimizer_factory = make_optimizer(
            config, lr_scale=layer_lr_scale(model.config.num_hidden_layers, config.layer_lr_decay))
    if training:
        train, dev = sst2_splits(data_dir, config.max_train_examples, config.max_dev_examples, NAME)
        task.batches = clf.batches([s for s, _ in train], [y for _, y in train])
        task.loss_fn = clf.loss_fn
        task.evaluate = clf.evaluate([s for s, _ in dev], [y for _, y in dev])
        task.info = {"train_examples": len(train), "dev_examples": len(dev), "vocab_size": tok.vocab_size}
    return task
