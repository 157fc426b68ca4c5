"""encoder-train: one full training step of a post-LN Transformer encoder classifier.

vocab 8,000, d_model 256, 4 heads, 4 layers, feed-forward 1,024, GELU (erf),
post-LN, sequence 64, batch 32, sinusoidal positions, mean pooling over real
tokens + a 2-class head, AdamW, dropout 0.1: forward, cross-entropy,
backward, optimizer step. The torch twin (torch.nn.TransformerEncoder) gets
seqlab's initial weights, the same ids, padding, labels and optimizer
settings; the dropout masks differ (each library draws its own).

`--size large` (for a GPU) is BERT-base's shape: vocabulary 30,522, d_model
768, 12 heads, 12 layers, feed-forward 3,072, sequence 512, batch 16.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from seqlab.bench.device import seqlab_input, torch_input, where

NAME = "encoder-train"


@dataclass
class EncoderTrainConfig:
    vocab_size: int = 8000
    d_model: int = 256
    nhead: int = 4
    num_layers: int = 4
    dim_feedforward: int = 1024
    seq_len: int = 64
    batch: int = 32
    dropout: float = 0.1
    lr: float = 1e-3
    weight_decay: float = 0.01
    min_len: int = 16            # real lengths are drawn from [min_len, seq_len]; the rest is padding


SIZES = {
    "default": EncoderTrainConfig(),
    "large": EncoderTrainConfig(vocab_size=30522, d_model=768, nhead=12, num_layers=12, dim_feedforward=3072,
                                seq_len=512, batch=16, min_len=128),
}


def describe(c: EncoderTrainConfig, size: str = "default", device: str = "cpu") -> str:
    """The printed description, with the size and device unless the default size on the CPU."""
    return (f"one training step: post-LN encoder, {c.num_layers} layers, d {c.d_model}, FF {c.dim_feedforward}, "
            f"seq {c.seq_len}, batch {c.batch}, AdamW, dropout {c.dropout}"
            + where(size, device, f"{c.nhead} heads, vocab {c.vocab_size}"))


DESCRIPTION = describe(SIZES["default"])


def train_flops(c: EncoderTrainConfig) -> float:
    """Multiply-adds ×2 of the matrix products of one step: forward F, backward 2F (dX and dW).

    Per layer and token: q/k/v and output projections 4d², feed-forward 2·d·ff,
    scores and weighted sum 2·T·d. Element-wise work, the embedding and the
    2-class head are left out (they are not matrix products).
    """
    n = c.batch * c.seq_len
    per_layer = 2 * n * (4 * c.d_model ** 2 + 2 * c.d_model * c.dim_feedforward + 2 * c.seq_len * c.d_model)
    return 3.0 * c.num_layers * per_layer


def make_inputs(c: EncoderTrainConfig, seed: int = 0) -> dict:
    """ids (B, T) int64 with padding 0 after each row's length, real (B, T) bool, labels (B,)."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(c.min_len, c.seq_len + 1, c.batch)
    real = np.arange(c.seq_len)[None, :] < lengths[:, None]                       # (B, T)
    ids = np.where(real, rng.integers(1, c.vocab_size, (c.batch, c.seq_len)), 0)  # (B, T)
    return {"ids": ids.astype(np.int64), "real": real, "labels": rng.integers(0, 2, c.batch).astype(np.int64)}


def build(c: EncoderTrainConfig | None = None, seed: int = 0, dtype: str = "float32", device: str = "cpu"):
    """(seqlab step, torch step, seqlab model, torch model): each step is one full training step,
    returning the loss as a float. `device` "cuda": both models and their inputs on the GPU."""
    import torch

    import seqlab
    from seqlab.bench.torch_models import copy_to_torch, torch_classifier
    from seqlab.models.classifier import ClassifierConfig, TransformerClassifier
    from seqlab.optim import AdamW

    c = c or EncoderTrainConfig()
    seqlab.manual_seed(seed)
    cfg = ClassifierConfig(vocab_size=c.vocab_size, num_labels=2, d_model=c.d_model, nhead=c.nhead,
                           num_layers=c.num_layers, dim_feedforward=c.dim_feedforward, dropout=c.dropout,
                           max_len=c.seq_len, positional="sinusoidal", norm_first=False, activation="gelu",
                           pooling="mean")
    model = TransformerClassifier(cfg).train()
    twin = torch_classifier(c.vocab_size, c.d_model, c.nhead, c.num_layers, c.dim_feedforward, c.dropout,
                            c.seq_len).train()
    copy_to_torch(model, twin)
    if dtype == "float64":  # for the tests: the two then agree to rounding in float64
        model.double()
        twin.double()
    model.to(device)  # the same weights, now on the device (a no-op on "cpu")
    twin.to(device)
    opt = AdamW(model.parameters(), lr=c.lr, weight_decay=c.weight_decay)
    topt = torch.optim.AdamW(twin.parameters(), lr=c.lr, weight_decay=c.weight_decay)
    x = make_inputs(c, seed)
    ids, mask, labels = (seqlab_input(a, device) for a in (x["ids"], x["real"].astype(np.int64), x["labels"]))
    t_ids, t_real, t_labels = (torch_input(x[k], device) for k in ("ids", "real", "labels"))

    def seqlab_step() -> float:
        opt.zero_grad()
        loss = model(ids, attention_mask=mask, labels=labels).loss
        loss.backward()
        opt.step()
        return float(loss.item())

    def torch_step() -> float:
        topt.zero_grad()
        loss = torch.nn.functional.cross_entropy(twin(t_ids, t_real), t_labels)
        loss.backward()
        topt.step()
        return float(loss.item())

    return seqlab_step, torch_step, model, twin


def profiled_step(c: EncoderTrainConfig | None = None, seed: int = 0):
    """A seqlab step split into phases for the profiler: returns step(prof)."""
    from seqlab.models.classifier import ClassifierConfig  # noqa: F401  (import cost outside the timing)

    c = c or EncoderTrainConfig()
    _, _, model, _ = build(c, seed)
    from seqlab.optim import AdamW

    opt = AdamW(model.parameters(), lr=c.lr, weight_decay=c.weight_decay)
    x = make_inputs(c, seed)
    mask = x["real"].astype(np.int64)

    def step(prof) -> None:
        opt.zero_grad()
        with prof.phase("forward"):
            loss = model(x["ids"], attention_mask=mask, labels=x["labels"]).loss
        with prof.phase("backward"):
            loss.backward()
        with prof.phase("optimizer"):
            opt.step()

    return step
