"""`seqlab demo` (make demo), step 0: an MLP learns two spirals by backpropagation (issue 2 §1, the chapter's 7.1).

The rest of the tour (issue 10) is tested in test_tour.py.
"""
import argparse
import time

import numpy as np
import pytest

from seqlab.cli import demo
from seqlab.cli.main import main


def test_spirals_are_two_balanced_interleaved_classes():
    X, y = demo.make_spirals(100, seed=3)
    assert X.shape == (200, 2) and X.dtype == np.float32 and y.dtype == np.int64
    assert np.bincount(y).tolist() == [100, 100]
    # interleaved: no straight line separates them (a least-squares linear classifier fails)
    A = np.c_[X, np.ones(len(X))]
    w = np.linalg.lstsq(A, 2.0 * y - 1, rcond=None)[0]
    assert ((A @ w > 0) == y).mean() < 0.8
    np.testing.assert_array_equal(demo.make_spirals(100, seed=3)[0], X)  # seeded


def test_mlp_reaches_097_accuracy_with_a_small_budget():
    seen = []
    res = demo.train_mlp(steps=250, seed=0, on_step=lambda step, loss: seen.append(step))
    assert seen == list(range(250))
    assert res.losses[-1] < res.losses[0] / 20  # the loss falls
    assert res.train_accuracy >= 0.97
    assert res.test_accuracy >= 0.97  # on a fresh draw of the spirals


def test_demo_command_prints_progress_and_writes_the_picture(tmp_path, capsys):
    out = tmp_path / "demo"
    assert main(["demo", "--out", str(out), "--steps", "mlp", "--mlp-steps", "20"]) == 0
    text = capsys.readouterr().out
    assert "loss" in text and "accuracy" in text and "[1/1]" in text
    # not "1 steps"; and no "about 4.5 minutes" for a tour without its two training steps (it takes seconds)
    assert "first-run tour: 1 step without training, in under a minute," in text
    assert f"MLP decision boundary  {out / 'mlp_decision_boundary.png'}" in text  # the closing summary
    png = out / "mlp_decision_boundary.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and (out / "mlp_loss.png").is_file()


def test_demo_rejects_unknown_steps(tmp_path, capsys):
    assert main(["demo", "--out", str(tmp_path), "--steps", "nope"]) == 2  # a usage error
    assert "unknown demo step(s) nope" in capsys.readouterr().err


def test_steps_are_a_list_with_unique_names():
    names = [s.name for s in demo.STEPS]
    assert names == ["mlp", "bert", "attention", "sentiment", "gpt"]  # the tour's order (issue 10)


def test_demo_rejects_a_budget_of_no_time(tmp_path, capsys):
    assert main(["demo", "--out", str(tmp_path), "--minutes", "0"]) == 2
    assert "--minutes: must be a finite number > 0, got 0" in capsys.readouterr().err


def test_demo_stops_on_a_data_dir_that_does_not_exist(tmp_path, capsys):
    """A mistyped --data-dir is an error (as in seqlab train), not a reason to train the synthetic tasks."""
    missing = tmp_path / "nosuchdir"
    assert main(["demo", "--out", str(tmp_path / "demo"), "--data-dir", str(missing), "--steps", "sentiment",
                 "--minutes", "0.05"]) == 1
    captured = capsys.readouterr()
    assert captured.err == f"error: data folder {missing} does not exist or is not a folder\n"
    assert "SYNTHETIC" not in captured.out and not (tmp_path / "demo").exists()


def test_plurals_and_durations_read_right():
    assert demo._plural(1, "step") == "1 step" and demo._plural(45, "step") == "45 steps"
    assert demo._duration(118) == "2.0 min" and demo._duration(90) == "1.5 min"  # the default tour's
    assert demo._duration(27) == "27 s" and demo._duration(2.0) == "2.0 s" and demo._duration(0.5) == "0.5 s"


def _late_context(minutes: float, spent_s: float) -> demo.Context:
    """The tour of every step with --minutes `minutes`, `spent_s` seconds in (mlp, bert and attention done)."""
    args = argparse.Namespace(minutes=minutes)
    return demo.Context(args, None, [s.name for s in demo.STEPS], start=time.monotonic() - spent_s)


def test_a_small_budget_still_trains_each_step_for_half_its_share():
    from seqlab import tour

    # --minutes 1 with 25 s spent before SST-2: the reserves of the steps after it (12 + 20 + 20 s) take the
    # rest, which used to leave the 2 s floor ("training for 0.0 min"); now half its 44 % share.
    minutes, over = demo._minutes_for(_late_context(1.0, 25), "sentiment")
    assert minutes == pytest.approx(0.5 * tour.plan(1.0)["sentiment"], rel=1e-3) and over
    assert demo._duration(minutes * 60) == "13 s"
    minutes, over = demo._minutes_for(_late_context(1.0, 70), "gpt")  # past the budget already
    assert minutes == pytest.approx(0.5 * tour.plan(1.0)["gpt"], rel=1e-3) and over


def test_the_default_tour_keeps_its_plan():
    from seqlab import tour

    # 4.5 minutes, 30 s spent: SST-2 gets what the steps after it leave (240 - 122 s), GPT its 1.5 minutes
    minutes, over = demo._minutes_for(_late_context(4.5, 30), "sentiment")
    assert minutes * 60 == pytest.approx(240 - 122, abs=0.5) and not over
    assert demo._duration(minutes * 60) == "2.0 min"
    minutes, over = demo._minutes_for(_late_context(4.5, 160), "gpt")
    assert minutes == pytest.approx(tour.plan(4.5)["gpt"]) and not over
