"""The `--device cuda` code path, run without a GPU on a strict stand-in for CuPy (tests/cupy_stand_in.py).

A whole training step of each benchmark model (forward, backward, AdamW) on "cuda" must keep every
array on the device, never mix in a host array, and give the CPU's losses; the benchmark's
synchronize must use CuPy's API. On a real GPU, test_bench_device.py checks the same against torch.
"""
from __future__ import annotations

import numpy as np

import seqlab
import seqlab.functional as F
from seqlab import backend
from seqlab.bench import device, encoder_train, gpt_train
from seqlab.bench.torch_models import decay_groups
from seqlab.models.classifier import ClassifierConfig, TransformerClassifier
from seqlab.models.gpt import GPT, GPTConfig
from seqlab.optim import AdamW

ENCODER = encoder_train.EncoderTrainConfig(vocab_size=97, d_model=32, nhead=4, num_layers=2, dim_feedforward=64,
                                           seq_len=12, batch=5, dropout=0.0, min_len=4)
SMALL_GPT = gpt_train.GPTTrainConfig(vocab_size=65, block_size=16, n_embd=32, n_layer=2, n_head=4, batch=3)


def encoder_losses(dev: str, dropout: float = 0.0, steps: int = 3) -> list[float]:
    c = ENCODER
    seqlab.manual_seed(3)
    model = TransformerClassifier(ClassifierConfig(
        vocab_size=c.vocab_size, num_labels=2, d_model=c.d_model, nhead=c.nhead, num_layers=c.num_layers,
        dim_feedforward=c.dim_feedforward, dropout=dropout, max_len=c.seq_len, positional="sinusoidal",
        norm_first=False, activation="gelu", pooling="mean")).train()
    model.to(dev)
    opt = AdamW(model.parameters(), lr=c.lr, weight_decay=c.weight_decay)
    x = encoder_train.make_inputs(c, 3)
    ids, mask, labels = (device.seqlab_input(a, dev) for a in (x["ids"], x["real"].astype(np.int64), x["labels"]))
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        loss = model(ids, attention_mask=mask, labels=labels).loss
        loss.backward()
        opt.step()
        losses.append(float(loss.item()))
    assert all(backend.device_of(p.data) == dev for p in model.parameters())
    assert all(backend.device_of(p.grad) == dev for p in model.parameters() if p.grad is not None)
    return losses


def gpt_losses(dev: str, steps: int = 3) -> list[float]:
    c = SMALL_GPT
    seqlab.manual_seed(0)
    model = GPT(GPTConfig(vocab_size=c.vocab_size, n_positions=c.block_size, n_embd=c.n_embd, n_layer=c.n_layer,
                          n_head=c.n_head, resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0, bos_token_id=0,
                          eos_token_id=0)).train()
    model.to(dev)
    opt = AdamW(decay_groups(model.named_parameters(), c.weight_decay), lr=c.lr, betas=c.betas)
    xn, yn = gpt_train.make_batch(c, 0)
    x, y = device.seqlab_input(xn, dev), device.seqlab_input(yn, dev)
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        loss = F.cross_entropy(model(x).logits.reshape(-1, c.vocab_size), y.reshape(-1))
        loss.backward()
        opt.step()
        losses.append(float(loss.item()))
    assert all(backend.device_of(p.data) == dev for p in model.parameters())
    return losses


def test_synchronize_uses_cupys_api(fake_cupy):
    backend.synchronize("cuda")
    sync_seqlab, _ = device.syncs("cuda")
    sync_seqlab()
    assert fake_cupy.cuda.Device.synchronized == 2


def test_encoder_training_steps_on_the_device_give_the_cpu_losses(fake_cupy):
    cpu = encoder_losses("cpu")
    cuda = encoder_losses("cuda")
    np.testing.assert_allclose(cuda, cpu, rtol=1e-5)
    assert cpu[-1] < cpu[0]


def test_encoder_with_dropout_trains_on_the_device(fake_cupy):
    losses = encoder_losses("cuda", dropout=0.1)
    assert np.isfinite(losses).all()


def test_gpt_training_steps_on_the_device_give_the_cpu_losses(fake_cupy):
    cpu = gpt_losses("cpu")
    cuda = gpt_losses("cuda")
    np.testing.assert_allclose(cuda, cpu, rtol=1e-5)
    assert cpu[-1] < cpu[0]
