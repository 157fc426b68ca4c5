"""`seqlab demo` (make demo), step 0: an MLP learns two spirals by backpropagation (issue 2 §1, the chapter's 7.1).

The rest of the tour (issue 10) is tested in test_tour.py.
"""
import numpy as np

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
    assert "--minutes must be > 0, got 0.0" in capsys.readouterr().err
