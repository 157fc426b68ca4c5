"""shakespeare-gpt: a character-level GPT on tiny Shakespeare with nanoGPT's CPU settings.

nanoGPT (config/train_shakespeare_char.py, with its README's CPU command):
4 layers, 4 heads, 128 dims, block 64, batch 12, 2,000 iterations, AdamW
(β2 = 0.99, weight decay 0.1 on matrices), lr 1e-3 with 100 warm-up steps
and cosine decay to 1e-4, gradient clipping 1.0, dropout 0, a 90/10
contiguous split, and the loss estimated on `eval_iters` random batches per
split. nanoGPT reports val loss 1.88 for these settings; the floor is 1.89.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import numpy as np

from seqlab import functional as F
from seqlab.train.config import COUNT, PROBABILITY, Bound, TrainConfig
from seqlab.train.tasks.base import Task, model_output, require
from seqlab.train.tasks.text import run_tokenizer

NAME = "shakespeare-gpt"
DESCRIPTION = "character-level GPT on tiny Shakespeare (nanoGPT's CPU settings)"


@dataclass
class Config(TrainConfig):
    max_steps: int = 2000
    batch_size: int = 12
    lr: float = 1e-3
    min_lr: float = 1e-4
    schedule: str = "warmup_cosine"
    warmup_steps: int = 100
    beta2: float = 0.99
    weight_decay: float = 0.1
    clip_grad_norm: float = 1.0
    eval_every: int = 250
    checkpoint_every: int = 250
    log_every: int = 10
    metric: str = "val_loss"
    metric_mode: str = "min"
    # what the task's evaluation returns: a misspelled metric is refused before training, not at the first evaluation
    CHOICES: ClassVar = {"metric": ("val_loss", "train_loss")}
    DIVISIBLE: ClassVar = {"n_embd": "n_head"}
    GRADIENT_CHECKPOINTING: ClassVar = True  # GPT
    block_size: int = 64
    n_layer: int = 4
    n_head: int = 4
    n_embd: int = 128
    dropout: float = 0.0
    eval_iters: int = 20          # batches per split for the loss estimate
    train_frac: float = 0.9
    sample_chars: int = 500       # written to RUN_DIR/sample.txt after training (0 = none)
    temperature: float = 0.8

    BOUNDS: ClassVar = {**dict.fromkeys(("block_size", "n_layer", "n_head", "n_embd", "eval_iters"), COUNT),
                        "dropout": PROBABILITY, "train_frac": Bound(0, 1, open_min=True, open_max=True),
                        "sample_chars": Bound(0, note="0 = no sample"), "temperature": Bound(0, open_min=True)}


def lm_loss(logits, targets) -> object:
    """Mean next-token cross-entropy: logits (B, T, V), targets (B, T)."""
    B, T, V = logits.shape
    return F.cross_entropy(logits.reshape(B * T, V), np.asarray(targets).reshape(B * T))  # (B·T, V) vs (B·T,)


def lm_evaluate(model, splits: dict[str, np.ndarray], block: int, batch: int, iters: int, seed: int) -> dict:
    """nanoGPT's estimate_loss: mean loss over `iters` random batches per split (fixed windows each time)."""
    from seqlab.data import causal_lm_windows

    out = {}
    for name, ids in splits.items():
        rng = np.random.default_rng((seed, 7))
        losses = []
        for _ in range(iters):
            x, y = causal_lm_windows(ids, block, batch, rng)  # (B, T) each
            losses.append(float(lm_loss(model_output(model(x)), y).data))
        out[f"{name}_loss"] = float(np.mean(losses))
    return out


def sample(model, prompt_ids: list[int], n: int, temperature: float, seed: int) -> list[int]:
    """n tokens sampled after the prompt (softmax with temperature, every token a candidate), no end token.

    Each step reads the last n_positions tokens (``generate(slide=True)``),
    as nanoGPT's sampler does, so the text can be longer than a block.
    """
    out = model.generate(np.array([prompt_ids], dtype=np.int64), max_new_tokens=n, do_sample=True,
                         temperature=temperature, top_k=0, seed=seed, slide=True, eos_token_id=[])
    return [int(i) for i in out[0, len(prompt_ids):]]


def build(config: Config, run_dir: Path | None = None, data_dir: Path | None = None, training: bool = True) -> Task:
    GPT = require("seqlab.models.gpt", "GPT", NAME)
    GPTConfig = require("seqlab.models.gpt", "GPTConfig", NAME)
    data = require("seqlab.data", None, NAME)
    text = data.load_shakespeare(data_dir) if training else None
    tok = run_tokenizer(run_dir, (lambda: data.CharTokenizer(text)) if training else None, task=NAME)
    model = GPT(GPTConfig(vocab_size=tok.vocab_size, n_positions=config.block_size, n_embd=config.n_embd,
                          n_layer=config.n_layer, n_head=config.n_head, resid_pdrop=config.dropout,
                          embd_pdrop=config.dropout, attn_pdrop=config.dropout))
    task = Task(model=model, model_config=model.config.to_dict())
    if not training:
        return task
    ids = np.array(tok.encode(text), dtype=np.int64)
    train_ids, val_ids = data.train_val_split(ids, config.train_frac)

    def batches(epoch: int, rng: np.random.Generator):  # endless random windows: the steps decide the length
        while True:
            x, y = data.causal_lm_windows(train_ids, config.block_size, config.batch_size, rng)  # (B, T) each
            yield x, y

    def loss_fn(model, batch):
        x, y = batch
        return lm_loss(model_output(model(x)), y), {"tokens": int(x.size)}

    def finish(model, out_dir: Path) -> dict:
        if not config.sample_chars:
            return {}
        text_out = tok.decode(sample(model, tok.encode("\n"), config.sample_chars, config.temperature,
                                     config.seed))
        (Path(out_dir) / "sample.txt").write_text(text_out, encoding="utf-8")
        return {"sample": str(Path(out_dir) / "sample.txt")}

    task.batches, task.loss_fn, task.finish = batches, loss_fn, finish
    task.evaluate = lambda m: lm_evaluate(m, {"train": train_ids, "val": val_ids}, config.block_size,
                                          config.batch_size, config.eval_iters, config.seed)
    task.info = {"characters": len(text), "vocab_size": tok.vocab_size, "train_tokens": len(train_ids),
                 "val_tokens": len(val_ids)}
    return task
