"""The chapter's claims about gradient flow, measured; and each experiment's quick run end to end."""
from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

from seqlab.cli.main import main
from seqlab.experiments.gradient_flow import REGIMES, exploding_training, gradient_ratios

DATA = Path(os.environ.get("SEQLAB_DATA") or Path(__file__).resolve().parents[2].parent / "shared" / "data")


@pytest.fixture(scope="module")
def flow():
    """‖∂L/∂h_(T−d)‖ / ‖∂L/∂h_(T−1)‖, d = 0..50, in the experiment's linear regime (tanh′ = 1)."""
    names = ("rnn rho=0.9", "rnn rho=1.1", "lstm chrono", "gru chrono", "lstm default")
    return {n: gradient_ratios(n, distance=50, hidden=32, sequences=4, input_scale=REGIMES["linear"])
            for n in names}


def test_contractive_rnn_vanishes(flow):
    """Spectral radius 0.9: the gradient at distance 50 is below 1e-2 of distance 1 (0.9^49 ≈ 5.7e-3)."""
    r = flow["rnn rho=0.9"]
    assert r[50] < 1e-2
    assert r[50] == pytest.approx(0.9 ** 49, rel=1e-3)   # W_hh = 0.9·Q: exactly ρ^(d−1) near the origin
    assert np.all(np.diff(r[1:]) < 0)


def test_expansive_rnn_grows(flow):
    r = flow["rnn rho=1.1"]
    assert r[10] > 1 and r[50] > r[10] and r[50] > 50
    assert r[50] == pytest.approx(1.1 ** 49, rel=1e-3)   # the inputs are small enough for tanh′ = 1 throughout


def test_gated_cells_keep_far_more_than_the_contractive_rnn(flow):
    for name in ("lstm chrono", "gru chrono"):
        assert flow[name][50] > 5 * flow["rnn rho=0.9"][50], name


def test_default_gates_forget(flow):
    """At torch's init the gates sit near ½: without open gates the LSTM vanishes too (reported, not hidden)."""
    assert flow["lstm default"][50] < flow["rnn rho=0.9"][50]


def test_clipping_keeps_exploding_training_finite():
    """Without clipping the gradient norm explodes within 40 steps: past 1e9 (from ~20), or already inf/NaN
    (where float32 overflows moves with the sums' rounding: the first non-finite loss came at step 35 on
    earlier code, at 42 now); with clipping every step stays finite and the loss falls."""
    plain = exploding_training(None, steps=40)
    clipped = exploding_training(1.0, steps=40)
    assert plain["grad_norms"][0] < 100 and not plain["max_grad_norm"] < 1e9
    assert clipped["nonfinite_steps"] == 0 and clipped["final_loss"] < 1.0 and clipped["max_grad_norm"] < 1e3


def _run_cli(*argv) -> int:
    return main(["experiment", *argv])


def test_gradient_flow_quick_cli(tmp_path, capsys):
    assert _run_cli("gradient-flow", "--quick", "--out", str(tmp_path), "--set", "distance=30") == 0
    assert "rnn rho=0.9" in capsys.readouterr().out
    res = json.loads((tmp_path / "results.json").read_text())
    assert res["curves"]["linear"]["rnn rho=1.1"][30] > 1
    for name in ("report.md", "gradient_flow_linear.png", "gradient_flow_driven.png", "exploding_loss.png"):
        assert (tmp_path / name).stat().st_size > 0


def test_long_range_quick_cli(tmp_path):
    assert _run_cli("long-range", "--quick", "--out", str(tmp_path), "--set", "ks=4", "--set", "steps=60") == 0
    res = json.loads((tmp_path / "results.json").read_text())
    assert res["accuracy"]["rnn"]["4"]["accuracy"] > 0.5          # a short dependency is learnt (chance 0.125)
    assert all(v > 0 for v in res["tokens_per_s"].values())
    budgets = [res["sizes"][k] for k in ("rnn", "lstm", "gru")]
    assert budgets[0] > budgets[2] > budgets[1]                   # equal budget: fewer gates, more units
    assert (tmp_path / "long_range_accuracy.png").stat().st_size > 0
    assert (tmp_path / "long_range_throughput.png").stat().st_size > 0


@pytest.mark.skipif(not (DATA / "multi30k" / "train.de").is_file(), reason="Multi30k not found (set SEQLAB_DATA)")
def test_bottleneck_quick_cli(tmp_path):
    assert _run_cli("bottleneck", "--quick", "--out", str(tmp_path), "--data-dir", str(DATA),
                    "--set", "max_steps=12", "--set", "eval_limit=30") == 0
    res = json.loads((tmp_path / "results.json").read_text())
    for name in ("none", "additive"):
        run = res["runs"][name]
        assert 0.0 <= run["test2016_bleu"] <= 100.0
        assert sum(b["sentences"] for b in run["by_length"]) == 30
        assert run["steps"] == 12
    assert (tmp_path / "bleu_by_length.png").stat().st_size > 0
    assert (tmp_path / "model_additive" / "alignment.png").stat().st_size > 0
