"""The training loop: loss falls, accumulation, exact resume, Ctrl-C, NaN stop, early stopping, time budget."""
import os
import signal

import numpy as np
import pytest

import seqlab
from seqlab import functional as F
from seqlab import nn, optim
from seqlab.train import NonFiniteLossError, Trainer, TrainConfig, load_checkpoint, read_metrics
from seqlab.train.checkpoint import load_best

from trainhelp import logged_losses, toy, interrupt_at


def test_loss_falls_and_everything_is_written(tmp_path):
    result = toy(tmp_path, max_steps=60, eval_every=30)
    losses = [v for _, v in result.losses]
    assert np.mean(losses[-10:]) < 0.5 * np.mean(losses[:10])
    assert result.last_eval["val_acc"] > 0.9 and result.stopped == "max_steps"
    for name in ("config.json", "metrics.jsonl", "curves.png", "summary.json", "best/model.safetensors"):
        assert (tmp_path / name).exists(), name
    assert load_checkpoint(tmp_path).step == 60
    rows = read_metrics(tmp_path / "metrics.jsonl")
    assert [r["step"] for r in rows if r.get("eval")] == [30, 60]
    assert all(r["tokens_per_s"] > 0 for r in rows if "tokens_per_s" in r)


def test_gradient_accumulation_equals_one_big_batch():
    """Two micro-batches of 4 with accumulation take the same SGD step as one batch of 8 (float64)."""
    rng = np.random.default_rng(0)
    X, Y = rng.normal(size=(8, 3)), rng.normal(size=(8, 2))

    def run(accum):
        seqlab.manual_seed(0)
        model = nn.Linear(3, 2).double()
        size = 8 // accum
        cfg = TrainConfig(max_steps=3, grad_accum=accum, batch_size=size, clip_grad_norm=0, eval_every=0,
                          checkpoint_every=0, optimizer="sgd", lr=0.1, weight_decay=0)
        batches = lambda epoch, rng: [(X[i:i + size], Y[i:i + size]) for i in range(0, 8, size)]
        loss = lambda m, b: F.mse_loss(m(seqlab.tensor(b[0])), seqlab.tensor(b[1]))
        Trainer(model, lambda m: optim.SGD(m.parameters(), lr=0.1), batches, loss, cfg).fit()
        return model.weight.data.copy()

    np.testing.assert_allclose(run(2), run(1), rtol=1e-12, atol=0)


SETTINGS = dict(max_steps=40, n_train=200, grad_accum=2, batch_size=16, checkpoint_every=7, eval_every=10,
                dropout=0.3, schedule="warmup_cosine", warmup_steps=5, patience=0)


def test_resume_continues_exactly(tmp_path):
    """Interrupted at step 13 (mid-epoch, between checkpoints) then resumed: the same losses and weights."""
    full = toy(tmp_path / "full", **SETTINGS)
    part = toy(tmp_path / "part", callbacks=[interrupt_at(13)], **SETTINGS)
    assert part.stopped == "interrupted" and part.step == 13
    assert load_checkpoint(tmp_path / "part").step == 13          # Ctrl-C saved a checkpoint
    rest = toy(tmp_path / "part", resume=True)
    assert [s for s, _ in rest.losses] == list(range(14, 41))
    assert part.losses + rest.losses == full.losses               # exact, per step
    assert logged_losses(tmp_path / "part") == logged_losses(tmp_path / "full")
    a, b = load_checkpoint(tmp_path / "full"), load_checkpoint(tmp_path / "part")
    for k in a.model_state:
        np.testing.assert_array_equal(a.model_state[k], b.model_state[k])
    assert rest.last_eval == full.last_eval and rest.best == full.best


def test_resume_from_an_older_checkpoint_drops_later_metric_rows(tmp_path):
    """A kill after step 12 leaves checkpoint 7; resuming redoes 8.. and metrics.jsonl holds each step once."""
    full = toy(tmp_path / "full", **SETTINGS)
    toy(tmp_path / "part", callbacks=[interrupt_at(12)], **SETTINGS)
    ckpts = tmp_path / "part" / "checkpoints"
    (ckpts / "latest").write_text("step-000007\n")  # as if killed before the Ctrl-C save
    rest = toy(tmp_path / "part", resume=True)
    assert rest.losses[0][0] == 8
    assert logged_losses(tmp_path / "part") == dict(full.losses)


def test_sigint_saves_a_checkpoint_and_stops(tmp_path):
    def cb(trainer, row):
        if row["step"] == 5:
            os.kill(os.getpid(), signal.SIGINT)
    before = signal.getsignal(signal.SIGINT)
    result = toy(tmp_path, callbacks=[cb], max_steps=50, checkpoint_every=0)
    assert result.stopped == "interrupted" and result.step == 5
    assert load_checkpoint(tmp_path).step == 5
    assert signal.getsignal(signal.SIGINT) is before  # the handler is put back


def test_nan_loss_stops_with_the_step_named_and_keeps_the_checkpoint(tmp_path):
    with pytest.raises(NonFiniteLossError) as e:
        toy(tmp_path, max_steps=50, checkpoint_every=10, nan_at_step=25)
    assert e.value.step == 25
    assert "loss is nan at step 25" in str(e.value) and "(step 20)" in str(e.value)
    ckpt = load_checkpoint(tmp_path)
    assert ckpt.step == 20 and all(np.isfinite(v).all() for v in ckpt.model_state.values())
    rows = read_metrics(tmp_path / "metrics.jsonl")
    assert rows[-1] == {"step": 25, "event": "non-finite loss", "loss": None}


def test_early_stopping_and_best_weights(tmp_path):
    result = toy(tmp_path, max_steps=100, eval_every=10, lr=0.0, patience=2)  # lr 0: nothing improves
    assert result.stopped == "early_stopping" and result.step == 30 and result.best_step == 10
    assert load_best(tmp_path)[1]["step"] == 10


def test_time_budget(tmp_path):
    result = toy(tmp_path, max_steps=10_000, max_minutes=0.002, eval_every=0)
    assert result.stopped == "time_budget" and 0 < result.step < 10_000
    assert load_checkpoint(tmp_path).step == result.step and result.last_eval  # evaluated and saved at the end


def test_a_spent_time_budget_refuses_a_plain_resume_and_a_larger_one_continues(tmp_path):
    """Budgets add up over resumes, so `--resume` alone after a budget stop could take no step: it is refused
    (nothing written) with the way on; a larger budget continues the run."""
    from seqlab.errors import ConfigError

    first = toy(tmp_path, max_steps=10_000, max_minutes=0.002, eval_every=0, log_every=1000, checkpoint_every=0)
    assert first.stopped == "time_budget" and 0 < first.step < 1000  # stopped at a step it did not log
    ckpt = load_checkpoint(tmp_path)
    assert ckpt.state["last_loss"] == first.losses[-1][1] == first.final_loss  # the checkpoint keeps it
    with pytest.raises(ConfigError, match=rf"time budget of 0.002 min is spent \(.* step {first.step} of 10000\).*"
                                          r"a larger --max-minutes, or --max-minutes 0"):
        toy(tmp_path, resume=True)
    assert load_checkpoint(tmp_path).step == first.step
    more = toy(tmp_path, resume=True, max_minutes=0.02)
    assert more.stopped == "time_budget" and more.step > first.step and more.losses[0][0] == first.step + 1
