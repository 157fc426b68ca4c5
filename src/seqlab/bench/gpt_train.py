"""gpt-train: one training iteration of nanoGPT's CPU configuration.

4 layers, 4 heads, 128 dims, block 64, batch 12, vocabulary 65 (characters),
dropout 0, AdamW (nanoGPT's: lr 1e-3, betas (0.9, 0.99), weight decay 0.1 on
matrices only). seqlab's GPT-2 `GPT` against the same model written as
nanoGPT writes it in torch (fused causal SDPA); both keep GPT-2's biases and
tanh GELU, and tie the head to the token embedding.

`--size large` (for a GPU) is nanoGPT's GPT-2 small: 12 layers, 12 heads,
768 dims, block 1,024, vocabulary 50,304 (GPT-2's 50,257 padded to a
multiple of 64), batch 8: 124M parameters (`param_count`).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from seqlab.bench.device import seqlab_input, torch_input, where

NAME = "gpt-train"


@dataclass
class GPTTrainConfig:
    vocab_size: int = 65
    block_size: int = 64
    n_embd: int = 128
    n_layer: int = 4
    n_head: int = 4
    batch: int = 12
    lr: float = 1e-3
    betas: tuple = (0.9, 0.99)
    weight_decay: float = 0.1


SIZES = {
    "default": GPTTrainConfig(),
    "large": GPTTrainConfig(vocab_size=50304, block_size=1024, n_embd=768, n_layer=12, n_head=12, batch=8,
                            lr=6e-4, betas=(0.9, 0.95)),  # nanoGPT's GPT-2 settings
}


def describe(c: GPTTrainConfig, size: str = "default", device: str = "cpu") -> str:
    """The printed description, with the size and device unless the default size on the CPU."""
    return (f"one training iteration: GPT {c.n_layer} layers, {c.n_head} heads, {c.n_embd} dims, "
            f"block {c.block_size}, batch {c.batch}, vocab {c.vocab_size}, AdamW" + where(size, device))


DESCRIPTION = describe(SIZES["default"])


def param_count(c: GPTTrainConfig) -> int:
    """Parameters of the model, the tied head counted once: token and position embeddings, per layer
    two LayerNorms (4C), q/k/v (3C² + 3C), the attention output (C² + C) and the MLP (8C² + 5C), ln_f."""
    C = c.n_embd
    return c.vocab_size * C + c.block_size * C + c.n_layer * (12 * C * C + 13 * C) + 2 * C


def train_flops(c: GPTTrainConfig) -> float:
    """Multiply-adds ×2 of the matrix products of one iteration, forward F and backward 2F (nanoGPT's
    `estimate_mfu` count): per token and layer 12C² for the projections and MLP and 2·T·C for the
    scores and the weighted sum (the whole T × T square, as both libraries compute it), plus C·V for
    the head."""
    C, T = c.n_embd, c.block_size
    per_token = c.n_layer * (12 * C * C + 2 * T * C) + C * c.vocab_size
    return 3.0 * 2 * c.batch * T * per_token


def make_batch(c: GPTTrainConfig, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """x, y (B, T): random windows of a random character stream, y shifted by one (as nanoGPT's get_batch)."""
    rng = np.random.default_rng(seed)
    data = rng.integers(0, c.vocab_size, 10_000)
    starts = rng.integers(0, len(data) - c.block_size - 1, c.batch)
    x = np.stack([data[i:i + c.block_size] for i in starts])          # (B, T)
    y = np.stack([data[i + 1:i + 1 + c.block_size] for i in starts])  # (B, T)
    return x.astype(np.int64), y.astype(np.int64)


def build(c: GPTTrainConfig | None = None, seed: int = 0, dtype: str = "float32", device: str = "cpu"):
    """(seqlab step, torch step, seqlab model, torch model); a step returns the loss as a float.
    `device` "cuda": both models and their inputs on the GPU."""
    import torch

    import seqlab
    from seqlab import functional as F
    from seqlab.bench.torch_models import copy_to_torch, decay_groups, torch_gpt
    from seqlab.models.gpt import GPT, GPTConfig
    from seqlab.optim import AdamW

    c = c or GPTTrainConfig()
    seqlab.manual_seed(seed)
    cfg = GPTConfig(vocab_size=c.vocab_size, n_positions=c.block_size, n_embd=c.n_embd, n_layer=c.n_layer,
                    n_head=c.n_head, resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0, bos_token_id=0,
                    eos_token_id=0)
    model = GPT(cfg).train()
    twin = torch_gpt(c.vocab_size, c.block_size, c.n_embd, c.n_layer, c.n_head).train()
    copy_to_torch(model, twin)
    if dtype == "float64":  # for the tests: the two then agree to rounding in float64
        model.double()
        twin.double()
    model.to(device)  # the same weights, now on the device (a no-op on "cpu")
    twin.to(device)
    opt = AdamW(decay_groups(model.named_parameters(), c.weight_decay), lr=c.lr, betas=c.betas)
    topt = torch.optim.AdamW(decay_groups(twin.named_parameters(), c.weight_decay), lr=c.lr, betas=c.betas)
    x_np, y_np = make_batch(c, seed)
    x, y = seqlab_input(x_np, device), seqlab_input(y_np, device)
    tx, ty = torch_input(x_np, device), torch_input(y_np, device)
    V = c.vocab_size

    def seqlab_step() -> float:
        opt.zero_grad()
        logits = model(x).logits                                          # (B, T, V)
        loss = F.cross_entropy(logits.reshape(-1, V), y.reshape(-1))
        loss.backward()
        opt.step()
        return float(loss.item())

    def torch_step() -> float:
        topt.zero_grad(set_to_none=True)
        logits = twin(tx)                                                 # (B, T, V)
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, V), ty.reshape(-1))
        loss.backward()
        topt.step()
        return float(loss.item())

    return seqlab_step, torch_step, model, twin


def profiled_step(c: GPTTrainConfig | None = None, seed: int = 0):
    """A seqlab step split into phases for the profiler: returns step(prof)."""
    from seqlab import functional as F
    from seqlab.bench.torch_models import decay_groups
    from seqlab.optim import AdamW

    c = c or GPTTrainConfig()
    _, _, model, _ = build(c, seed)
    opt = AdamW(decay_groups(model.named_parameters(), c.weight_decay), lr=c.lr, betas=c.betas)
    x, y = make_batch(c, seed)

    def step(prof) -> None:
        opt.zero_grad()
        with prof.phase("forward"):
            logits = model(x).logits
            loss = F.cross_entropy(logits.reshape(-1, c.vocab_size), y.reshape(-1))
        with prof.phase("backward"):
            loss.backward()
        with prof.phase("optimizer"):
            opt.step()

    return step
