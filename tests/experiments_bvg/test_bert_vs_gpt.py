"""Exercise 3 (`seqlab experiment bert-vs-gpt`): the quick run end to end, and the span-corruption objective.

The quick run checks the pipeline and the report (files, one table row per
model, accuracies in [0, 1], MLM and CLM models of the same size); the
numbers themselves come from the full run recorded in docs/results.md.
"""
from __future__ import annotations

import contextlib
import io
import json
import os
import re
import types
from pathlib import Path

import numpy as np
import pytest

from seqlab.errors import ConfigError
from seqlab.experiments.bert_vs_gpt import FULL, NAMES, settings, span_corrupt

DATA = Path(os.environ.get("SEQLAB_DATA") or Path(__file__).resolve().parents[3] / "shared" / "data")


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory):
    """`seqlab experiment bert-vs-gpt --quick` through the CLI, once for the module."""
    from seqlab.cli.main import main

    if not (DATA / "sst2" / "dev.tsv").is_file():
        pytest.skip(f"shared datasets not found at {DATA} (set SEQLAB_DATA)")
    out = tmp_path_factory.mktemp("bvg")
    err = io.StringIO()
    with contextlib.redirect_stderr(err):  # the progress lines, for test_quick_run_reports_its_phases
        code = main(["experiment", "bert-vs-gpt", "--quick", "--out", str(out), "--data-dir", str(DATA)])
    (out / "stderr.txt").write_text(err.getvalue())
    return code, out, json.loads((out / "results.json").read_text())


def test_quick_run_writes_report_plot_and_results(quick_run):
    code, out, results = quick_run
    assert code == 0
    for name in ("report.md", "results.json", "dev_accuracy.png", "dev_accuracy_time.png"):
        assert (out / name).is_file(), name
    assert (out / "dev_accuracy.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    for run in ("pretrain_mlm", "pretrain_clm", "pretrain_t5"):
        assert (out / run / "pretrained" / "model.safetensors").is_file(), run
    assert results["quick"] is True and set(results["models"]) == set(NAMES)


def test_quick_run_reports_its_phases(quick_run):
    """One line per pretraining and fine-tuning on stderr, with its budget (no bars: not a terminal)."""
    _, out, _ = quick_run
    err = (out / "stderr.txt").read_text()
    for line in ("[bert-vs-gpt] building the corpus", "[bert-vs-gpt] pretraining BERT (masked LM) on ",
                 "[bert-vs-gpt] pretraining GPT (causal LM): 15 pretraining steps",
                 "[bert-vs-gpt] pretraining T5 (span corruption): 15 pretraining steps",
                 *(f"[bert-vs-gpt] fine-tuning {NAMES[k]} on 300 SST-2 sentences: 8 fine-tuning steps" for k in NAMES)):
        assert line in err, (line, err)
    assert "step/s" not in err  # the trainer's bars stay off when stderr is not a terminal


def test_report_table_has_one_row_per_model_with_accuracies_in_range(quick_run):
    _, out, results = quick_run
    report = (out / "report.md").read_text()
    rows = [ln for ln in report.splitlines() if ln.startswith("| ") and not ln.startswith("| model")]
    assert sorted(r.split(" | ")[0][2:] for r in rows) == sorted(NAMES.values())
    for row in rows:
        acc, best = (float(c) for c in row.strip("| ").split(" | ")[-2:])
        assert 0.0 <= acc <= best <= 1.0, row
    for key, m in results["models"].items():
        ft = m["finetune"]
        assert 0.0 <= ft["dev_acc"] <= 1.0 and 0.0 <= ft["best_dev_acc"] <= 1.0, key
        assert ft["curve"] and all(0.0 <= c["val_acc"] <= 1.0 for c in ft["curve"]), key
        assert [c["step"] for c in ft["curve"]] == sorted({c["step"] for c in ft["curve"]}), key
        assert ft["curve"][-1]["val_acc"] == ft["dev_acc"], key


def test_same_size_and_same_budget(quick_run):
    """MLM and CLM models within 5% in parameters (T5 within 15%); every run used the same step budget."""
    from seqlab.models.bert import BertForMaskedLM
    from seqlab.models.gpt import GPT

    _, out, results = quick_run
    s, m = results["settings"], results["models"]
    p_mlm, p_clm, p_t5 = (m[k]["pretrain"]["parameters"] for k in ("bert", "gpt", "t5"))
    assert abs(p_mlm - p_clm) / max(p_mlm, p_clm) < 0.05
    assert abs(p_t5 - p_mlm) / p_mlm < 0.15
    assert BertForMaskedLM.from_pretrained(out / "pretrain_mlm" / "pretrained").num_parameters() == p_mlm
    assert GPT.from_pretrained(out / "pretrain_clm" / "pretrained").num_parameters() == p_clm
    assert {m[k]["pretrain"]["steps"] for k in ("bert", "gpt", "t5")} == {s["pretrain_steps"]}
    assert {v["finetune"]["steps"] for v in m.values()} == {s["finetune_steps"]}
    assert m["minilm"]["finetune"]["parameters"] > 100 * p_mlm
    report = (out / "report.md").read_text()
    assert re.search(rf"MLM {p_mlm:,}, CLM {p_clm:,}", report)


@pytest.mark.parametrize("n", [1, 2, 3, 7, 20, 63])
def test_span_corruption_round_trips(n):
    """Filling each sentinel of the input with its span from the target gives the sentence back."""
    rng = np.random.default_rng(n)
    ids = list(rng.integers(10, 100, size=n))
    sentinel0, eos = 1000, 2
    for _ in range(20):
        inp, tgt = span_corrupt(ids, rng, 0.15, 3.0, sentinel0, 8, eos)
        assert inp[-1] == eos and tgt[-1] == eos
        spans, current = {}, None
        for t in tgt[:-1]:
            if t >= sentinel0:
                current = t
                spans[current] = []
            else:
                spans[current].append(t)
        sentinels = [t for t in inp if t >= sentinel0]
        assert sentinels == sorted(spans) and len(set(sentinels)) == len(sentinels)
        rebuilt = [x for t in inp[:-1] for x in (spans[t] if t >= sentinel0 else [t])]
        assert rebuilt == ids
        noise = sum(len(v) for v in spans.values())
        assert noise == (n if n == 1 else int(np.clip(round(0.15 * n), 1, n - 1)))


def test_settings_overrides_are_typed_and_checked():
    args = types.SimpleNamespace(quick=False, options={"pretrain_minutes": "1.5", "num_layers": "6", "minilm": "false"})
    s = settings(args)
    assert s["pretrain_minutes"] == 1.5 and s["num_layers"] == 6 and s["minilm"] is False
    assert s["d_model"] == FULL["d_model"]
    with pytest.raises(ConfigError, match="unknown setting 'layers'"):
        settings(types.SimpleNamespace(quick=True, options={"layers": 3}))
    assert settings(types.SimpleNamespace(quick=True, options={"progress": "false"}))["progress"] is False
    assert settings(types.SimpleNamespace(quick=True, options={}))["progress"] == "auto"
    for bad, message in (({"sentinels": "1"}, "sentinels must be >= 2"),
                         ({"dropout": "1"}, r"dropout must be in \[0, 1\)"),
                         ({"d_model": "30"}, r"d_model \(30\) must be a multiple of nhead \(4\)"),
                         ({"max_len": "x"}, "max_len expects int")):
        with pytest.raises(ConfigError, match=message):
            settings(types.SimpleNamespace(quick=False, options=bad))
