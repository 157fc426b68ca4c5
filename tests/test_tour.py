"""The first-run tour (issue 10): `seqlab demo` runs 3.2, the attention viewer, SST-2 and GPT training.

The tour runs twice with a budget of seconds: on the shared data (every
file and the summary checked), and with no data and no download possible
(the synthetic tasks, said so on screen).
"""
import json
import os
import socket
from pathlib import Path

import numpy as np
import pytest

from seqlab import tour
from seqlab.cli.main import main

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"
PNG = b"\x89PNG\r\n\x1a\n"


def shared_data() -> Path:
    root = Path(os.environ.get("SEQLAB_DATA") or SHARED)
    if not (root / "sst2" / "dev.tsv").is_file() or not (root / "tinyshakespeare" / "input.txt").is_file():
        pytest.skip(f"the shared datasets are not in {root}")
    return root


def closed_port() -> int:
    """A local port nothing listens on (bound, then released): connecting there is refused at once."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# ---- the time plan and the synthetic data ------------------------------------------------------------
def test_plan_gives_two_and_one_and_a_half_minutes_of_training_out_of_four_and_a_half():
    assert tour.plan(4.5) == pytest.approx({"sentiment": 2.0, "gpt": 1.5})
    assert tour.plan(9.0)["sentiment"] == pytest.approx(4.0)
    with pytest.raises(ValueError, match="> 0 minutes"):
        tour.plan(0)


def test_fit_minutes_cuts_the_plan_so_the_later_steps_still_fit():
    assert tour.fit_minutes(2.0, left_s=600, later_s=100) == pytest.approx(2.0)        # ahead: the plan
    assert tour.fit_minutes(2.0, left_s=150, later_s=90) == pytest.approx(1.0)         # behind: what is left
    assert tour.fit_minutes(2.0, left_s=10, later_s=90, floor_s=3) == pytest.approx(0.05)  # never below the floor
    assert tour.fit_minutes(2.0, left_s=10, later_s=90) == pytest.approx(1.0)  # by default: half the plan
    assert tour.fit_minutes(0.02, left_s=0, later_s=90) == pytest.approx(tour.MIN_TRAIN_S / 60)  # or MIN_TRAIN_S


def test_synthetic_reviews_are_labelled_by_negation_aware_polarity():
    from seqlab.train.tasks.toy_classifier import NEGATIVE, POSITIVE

    rows = tour.synthetic_reviews(400, seed=5)
    assert rows == tour.synthetic_reviews(400, seed=5) and len(rows) == 400
    negated = 0
    for sentence, label in rows:
        words, score = sentence.split(), 0
        for i, w in enumerate(words):
            sign = 1 if w in POSITIVE else -1 if w in NEGATIVE else 0
            if sign and i and words[i - 1] in tour.NEGATORS:
                sign, negated = -sign, negated + 1
            score += sign
        assert score != 0 and label == int(score > 0), sentence
    assert negated > 50                                    # word order matters in many sentences
    assert 0.3 < np.mean([y for _, y in rows]) < 0.7       # both classes


def test_synthetic_play_is_a_seeded_play_shaped_text():
    text = tour.synthetic_play(5000, seed=3)
    assert len(text) == 5000 and text == tour.synthetic_play(5000, seed=3) != tour.synthetic_play(5000, seed=4)
    first = text.split("\n\n")[0].splitlines()
    assert first[0].endswith(":") and first[0][:-1].isupper() and len(first) >= 2


def current_blas_threads():
    with tour.blas_threads(None) as n:
        return n


def test_blas_threads_are_set_inside_the_block_and_put_back_after():
    before = current_blas_threads()
    if before is None:
        pytest.skip("NumPy's BLAS exports no known thread setter")
    with tour.blas_threads(1) as n:
        assert n == current_blas_threads() == 1
    assert current_blas_threads() == before
    with pytest.raises(ValueError, match=">= 1, got 0"):
        with tour.blas_threads(0):
            pass


# ---- the whole tour -------------------------------------------------------------------------------------
@pytest.fixture
def quick(monkeypatch):
    """Seconds, not minutes: half-second trainings, a slice of SST-2, a short loss estimate and sample."""
    monkeypatch.setattr(tour, "MIN_TRAIN_S", 0.5)
    monkeypatch.setitem(tour.SENTIMENT_SETTINGS, "max_train_examples", 3000)
    monkeypatch.setitem(tour.SENTIMENT_SETTINGS, "max_dev_examples", 200)
    monkeypatch.setitem(tour.GPT_SETTINGS, "eval_iters", 2)
    monkeypatch.setitem(tour.GPT_SETTINGS, "sample_chars", 40)


def test_tour_on_the_shared_data_writes_every_file_and_a_summary(tmp_path, monkeypatch, capsys, quick):
    monkeypatch.setenv("SEQLAB_DATA", str(shared_data()))
    monkeypatch.setenv("SEQLAB_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(tour, "MIN_SHARE", 0.0)  # half-second trainings: this test checks the files, not the plan
    out = tmp_path / "demo"
    threads = current_blas_threads()
    assert main(["demo", "--out", str(out), "--minutes", "0.1", "--mlp-steps", "20"]) == 0
    text = capsys.readouterr().out
    assert current_blas_threads() == threads  # the tour's one BLAS thread does not outlive it
    assert threads is None or "NumPy's BLAS on 1 thread(s)" in text
    assert "first-run tour: 5 steps in about 0.1 minutes," in text  # the budget, with training steps in the tour

    # 1. the chapter's 3.2, with shapes and self-checks that all pass
    assert "[5/5]" in text and "FAIL" not in text and "SYNTHETIC" not in text
    assert "[CLS] natural language processing is fascinating . [SEP]" in text
    assert "last_hidden_state: (1, 8, 384)" in text and "pooler_output:     (1, 384)" in text
    for check in ("shapes", "pooler", "padding", "similarity"):
        assert f"ok    {check}" in text
    # 2. the viewer: an offline HTML page and a PNG
    html = (out / "attention.html").read_text(encoding="utf-8")
    assert "<html" in html.lower() and "http://" not in html and "https://" not in html
    assert (out / "attention.png").read_bytes()[:8] == PNG and (out / "heads.csv").is_file()
    assert (out / "mlp_decision_boundary.png").read_bytes()[:8] == PNG
    # 3. and 4. the two runs, on the real data
    results = json.loads((out / "tour.json").read_text(encoding="utf-8"))
    sent, gpt = results["sentiment"], results["gpt"]
    assert sent["source"] == "SST-2" and sent["examples"] == 3000 and sent["data_error"] is None
    assert 0 <= sent["dev_acc"] <= 1 and f"dev accuracy {sent['dev_acc']:.3f}" in text
    assert json.loads((out / "sst2-transformer" / "summary.json").read_text())["task"] == "sst2-transformer"
    assert gpt["source"] == "tiny Shakespeare" and gpt["steps"] >= 1 and np.isfinite(gpt["val_loss"])
    sample = (out / "shakespeare-gpt" / "sample.txt").read_text(encoding="utf-8")
    assert len(sample) == 40 and gpt["line"] in sample and f"sampled line: {gpt['line']!r}" in text
    assert results["bert"]["ok"] is True and results["failed_checks"] == []
    # 5. the summary names every file it wrote, and the commands to try next
    summary = text[text.index("Written to"):]
    for path in (out / "attention.html", out / "attention.png", out / "sst2-transformer",
                 out / "shakespeare-gpt" / "sample.txt", out / "tour.json"):
        assert str(path) in summary
    assert "Try next" in summary and f"--model {out / 'sst2-transformer'} " in summary
    assert f"seqlab info {out / 'sst2-transformer'}" in summary and f"--model {out / 'shakespeare-gpt'} " in summary


def test_without_data_or_network_the_tour_trains_synthetic_tasks_and_says_so(tmp_path, monkeypatch, capsys, quick):
    empty, cache = tmp_path / "data", tmp_path / "cache"
    empty.mkdir()
    port = closed_port()
    monkeypatch.setenv("SEQLAB_DATA", str(empty))
    monkeypatch.setenv("SEQLAB_CACHE", str(cache))
    monkeypatch.setenv("SEQLAB_DATA_URL", f"http://127.0.0.1:{port}")
    out = tmp_path / "demo"
    stale = out / "synthetic-sentiment" / "checkpoints"  # an earlier tour's run is replaced, not resumed
    stale.mkdir(parents=True)
    (stale / "latest").write_text("step-000099")
    assert main(["demo", "--out", str(out), "--steps", "sentiment,gpt", "--minutes", "0.05"]) == 0
    text = capsys.readouterr().out
    assert text.count("could not be had") == 2 and f"127.0.0.1:{port}" in text
    assert "SYNTHETIC sentiment task" in text and "SYNTHETIC play text" in text
    assert "on the SYNTHETIC task" in text  # the accuracy line says it too
    assert "0.0 min" not in text and "training for 0.7 s" in text  # half of SST-2's 44 % of 3 s, in seconds
    results = json.loads((out / "tour.json").read_text(encoding="utf-8"))
    assert results["sentiment"]["source"] == results["gpt"]["source"] == "synthetic"
    assert (out / "synthetic-sentiment" / "best").is_dir() and not (out / "sst2-transformer").exists()
    assert (out / "synthetic-gpt" / "sample.txt").read_text(encoding="utf-8")
    assert not any(p.is_file() for p in cache.rglob("*"))  # nothing half-downloaded was left behind
    assert "train sst2-transformer --data-dir DIR" in text  # where to get the real thing
    assert (out / "synthetic-sentiment" / "checkpoints" / "latest").read_text() != "step-000099"



def test_a_partial_tour_updates_its_steps_in_tour_json_and_keeps_the_others(tmp_path, capsys):
    out = tmp_path / "demo"
    out.mkdir()
    (out / "tour.json").write_text(json.dumps({"gpt": {"line": "ROMEO: earlier"}, "mlp": {"steps": 1}}))
    assert main(["demo", "--out", str(out), "--steps", "mlp", "--mlp-steps", "5"]) == 0
    results = json.loads((out / "tour.json").read_text(encoding="utf-8"))
    assert results["gpt"] == {"line": "ROMEO: earlier"} and results["mlp"]["steps"] == 5
    (out / "tour.json").write_text("{not json")                         # an unreadable one is replaced
    assert main(["demo", "--out", str(out), "--steps", "mlp", "--mlp-steps", "5"]) == 0
    assert "gpt" not in json.loads((out / "tour.json").read_text(encoding="utf-8"))
