"""A non-finite step stops training with the step named, and the last good checkpoint survives.

tests/train/test_trainer.py holds a NaN loss (the toy task's fault injection) and tests/train/test_kill.py
kill -9 at random moments and the exact resume, tests/train/test_cli.py the NaN through `seqlab train`
(one line, exit 1); here the other non-finite kinds, through the Trainer with
a one-parameter model: +inf and -inf losses, and a finite loss whose gradient is not finite.
"""
from __future__ import annotations

import numpy as np
import pytest

from seqlab import nn
from seqlab.train import NonFiniteLossError, Trainer, TrainConfig, load_checkpoint, make_optimizer, read_metrics


class One(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(np.array([1.0, 2.0], dtype=np.float32))


def _loss(poison: str, at: int):
    def loss_fn(model, step):
        w = model.w
        if step != at:
            return ((w - 3.0) ** 2).sum()
        if poison == "inf loss":
            return (w * float("inf")).sum()
        if poison == "-inf loss":
            return (w * float("-inf")).sum()
        return (w * 0.0).sqrt().sum()  # loss 0, gradient 0.5/sqrt(0)·0: not finite
    return loss_fn


@pytest.mark.filterwarnings("ignore:divide by zero:RuntimeWarning", "ignore:invalid value:RuntimeWarning")
@pytest.mark.parametrize("poison, what", [("inf loss", "loss is inf"), ("-inf loss", "loss is -inf"),
                                          ("bad gradient", "gradient norm is nan")])
def test_non_finite_step_stops_named_and_keeps_the_last_good_checkpoint(tmp_path, poison, what):
    config = TrainConfig(max_steps=20, checkpoint_every=5, eval_every=0, optimizer="sgd", lr=0.1,
                         clip_grad_norm=1.0)
    model = One()
    batches = lambda epoch, rng: iter(range(1, 1000))  # noqa: E731 - the batch is the step number
    trainer = Trainer(model, make_optimizer(config), batches, _loss(poison, 7), config, tmp_path)
    with pytest.raises(NonFiniteLossError) as e:
        trainer.fit()
    assert e.value.step == 7 and f"{what} at step 7" in str(e.value) and "(step 5) is kept" in str(e.value)
    ckpt = load_checkpoint(tmp_path)
    assert ckpt.step == 5 and np.all(np.isfinite(ckpt.model_state["w"]))
    assert np.all(np.isfinite(model.w.numpy()))  # the bad step changed nothing
    event = read_metrics(tmp_path / "metrics.jsonl")[-1]
    assert event["step"] == 7 and event["event"].startswith("non-finite")

