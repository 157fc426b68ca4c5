"""Each benchmark's seqlab and torch models compute the same thing on the same weights.

Small sizes (the benchmark code with a smaller config); dropout 0 so the two
libraries' random masks do not enter. float64 first (agreement to rounding),
then float32 (the fast paths the benchmarks actually time).
"""
from __future__ import annotations

import numpy as np
import pytest

from seqlab.bench import encoder_train, gpt_train

SMALL_ENCODER = encoder_train.EncoderTrainConfig(vocab_size=97, d_model=32, nhead=4, num_layers=2,
                                                 dim_feedforward=64, seq_len=12, batch=5, dropout=0.0, min_len=4)
SMALL_GPT = gpt_train.GPTTrainConfig(vocab_size=65, block_size=16, n_embd=32, n_layer=2, n_head=4, batch=3)


def _three_steps(mod, config, dtype):
    """Losses of three training steps of each library: the first checks the forward, the next two
    the gradients and AdamW's update."""
    fs, ft, model, twin = mod.build(config, seed=3, dtype=dtype)
    return [fs() for _ in range(3)], [ft() for _ in range(3)], model, twin


@pytest.mark.parametrize("mod, config", [(encoder_train, SMALL_ENCODER), (gpt_train, SMALL_GPT)],
                         ids=["encoder-train", "gpt-train"])
def test_same_losses_float64(mod, config):
    ls, lt, model, twin = _three_steps(mod, config, "float64")
    np.testing.assert_allclose(ls, lt, rtol=1e-9)
    assert ls[0] != ls[2]  # the optimizer did move the weights
    tw = dict(twin.named_parameters())
    for name, p in model.named_parameters():  # and moved them the same way
        np.testing.assert_allclose(p.data, tw[name].detach().numpy(), rtol=1e-7, atol=1e-9, err_msg=name)


@pytest.mark.parametrize("mod, config", [(encoder_train, SMALL_ENCODER), (gpt_train, SMALL_GPT)],
                         ids=["encoder-train", "gpt-train"])
def test_same_losses_float32(mod, config):
    ls, lt, model, _ = _three_steps(mod, config, "float32")
    assert all(p.data.dtype == np.float32 for p in model.parameters())
    np.testing.assert_allclose(ls, lt, rtol=2e-4)


def test_encoder_train_inputs_and_flops():
    x = encoder_train.make_inputs(SMALL_ENCODER, seed=1)
    assert x["ids"].shape == (5, 12) and x["real"].dtype == bool
    assert (x["ids"][~x["real"]] == 0).all() and (x["ids"][x["real"]] > 0).all()  # padding exactly where not real
    c = encoder_train.EncoderTrainConfig()
    # q/k/v/out 4d², FF 2·d·ff, scores + weighted sum 2·T·d per token and layer; x2 per MAC, x3 for backward
    per_token = 4 * 256 ** 2 + 2 * 256 * 1024 + 2 * 64 * 256
    assert encoder_train.train_flops(c) == 3 * 2 * 4 * 32 * 64 * per_token


def test_gpt_batch_is_shifted_by_one():
    x, y = gpt_train.make_batch(SMALL_GPT, seed=2)
    assert x.shape == y.shape == (3, 16)
    np.testing.assert_array_equal(x[:, 1:], y[:, :-1])
