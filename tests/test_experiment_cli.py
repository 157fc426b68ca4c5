"""`seqlab experiment NAME --set KEY=VALUE`: declared settings, one validation path, progress on stderr.

Every experiment declares its settings (`seqlab.experiments.common.Setting`); an unknown key, a wrong
type or an impossible value is a one-line usage error (exit 2) before anything runs, and the defaults
(full and --quick) are the ones the experiments always had. A --quick run prints a line per phase or
configuration on stderr; ``--progress`` adds tqdm bars, ``--no-progress`` drops both, and neither
changes a result.
"""
from __future__ import annotations

import importlib
import json
import os
import types
from pathlib import Path

import pytest

from seqlab.cli.main import main
from seqlab.errors import ConfigError
from seqlab.experiments import EXPERIMENTS
from seqlab.experiments.common import describe, settings_for

DATA = Path(os.environ.get("SEQLAB_DATA") or Path(__file__).resolve().parents[2] / "shared" / "data")
KINDS = ["none", "sinusoidal", "learned", "rope", "alibi"]


def _cli(capsys, *argv) -> tuple[int, str, str]:
    code = main(["experiment", *map(str, argv)])
    cap = capsys.readouterr()
    return code, cap.out, cap.err


def _module(name: str):
    return importlib.import_module(EXPERIMENTS[name])


def _settings(name: str, quick: bool, **options) -> dict:
    return settings_for(_module(name), types.SimpleNamespace(quick=quick, options=options))


# ---------------------------------------------------------------- validation

@pytest.mark.parametrize("name", list(EXPERIMENTS))
def test_unknown_key_is_a_usage_error_naming_the_valid_keys(name, tmp_path, capsys):
    out = tmp_path / "o"
    code, _, err = _cli(capsys, name, "--quick", "--out", out, "--set", "foo=1")
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: unknown setting 'foo' for {name}; valid settings: ")
    for s in _module(name).SETTINGS:
        assert s.name in lines[0]
    assert not out.exists()  # refused before the output folder is made or anything runs


@pytest.mark.parametrize("name", list(EXPERIMENTS))
@pytest.mark.parametrize("quick", [False, True])
def test_declared_defaults_resolve(name, quick):
    """Every default (full and --quick) passes its own declared checks."""
    s = _settings(name, quick)
    assert [x.name for x in _module(name).SETTINGS] == list(s)


@pytest.mark.parametrize("argv, message", [
    (["gradient-flow", "--set", "distance=abc"], "--set: distance expects int, got 'abc'"),
    (["gradient-flow", "--set", "hidden=1.5"], "hidden expects int"),
    (["long-range", "--set", "ks=5,x"], "ks expects a comma-separated list of int, got '5,x'"),
    (["heads", "--set", "bert=maybe"], "bert expects bool, got 'maybe'"),
    (["bottleneck", "--set", "minutes=soon"], "max_minutes expects float, got 'soon'"),
    (["bert-vs-gpt", "--set", "progress=loud"], "progress expects auto, true or false"),
    (["attention-cost", "--set", f"max_len=__import__('os').getcwd()"], "max_len expects int"),
])
def test_a_wrong_type_is_a_one_line_usage_error(argv, message, tmp_path, capsys):
    code, _, err = _cli(capsys, *argv, "--quick", "--out", tmp_path / "o")
    assert code == 2 and len(err.strip().splitlines()) == 1 and message in err, err


@pytest.mark.parametrize("argv, message", [
    (["gradient-flow", "--set", "distance=0"], "--set: distance must be >= 1, got 0"),
    (["long-range", "--set", "ks=0,5"], "each of ks must be >= 1, got 0,5"),
    (["bottleneck", "--set", "minutes=0"], "max_minutes must be > 0, got 0.0"),
    (["bottleneck", "--set", "cell=rnn"], "cell must be one of gru, lstm; got 'rnn'"),
    (["bottleneck", "--set", "minutes=3", "--set", "max_minutes=4"], "minutes and max_minutes both set max_minutes"),
    (["positional-ablation", "--set", "kinds=none,bogus"], "each of kinds must be one of none, sinusoidal"),
    (["positional-ablation", "--set", "train_len=3"], "train_len must be >= 4, got 3"),
    (["positional-ablation", "--set", "heads=3"], "positional-ablation: d_model (16) must be a multiple of heads (3)"),
    (["positional-ablation", "--set", "d_model=6"], "rope needs an even head dimension d_model / heads, got 3"),
    (["positional-ablation", "--set", "test_lens=4"], "the largest of test_lens (4) must be >= train_len (8)"),
    (["attention-cost", "--set", "max_plain_gib=nan"], "max_plain_gib must be >= 0, got nan"),
    (["heads", "--set", "batch=500"], "batch (500) must be <= train_n (400)"),
    (["bert-vs-gpt", "--set", "noise_density=1"], "noise_density must be in (0, 1), got 1.0"),
    (["bert-vs-gpt", "--set", "num_layers=1"], "num_layers must be >= 2, got 1"),
])
def test_an_impossible_value_is_a_one_line_usage_error(argv, message, tmp_path, capsys):
    code, _, err = _cli(capsys, *argv, "--quick", "--out", tmp_path / "o")
    assert code == 2 and len(err.strip().splitlines()) == 1 and message in err, err
    assert not (tmp_path / "o").exists()


def test_settings_outside_the_cli_raise_config_error():
    with pytest.raises(ConfigError, match="unknown setting 'foo' for heads"):
        _settings("heads", True, foo="1")
    with pytest.raises(ConfigError, match="distance must be >= 1"):
        _settings("gradient-flow", True, distance=0)


# ---------------------------------------------------------------- the settings the experiments always had

def test_defaults_are_unchanged():
    assert _settings("gradient-flow", False) == {"distance": 200, "hidden": 64, "sequences": 8}
    assert _settings("gradient-flow", True) == {"distance": 50, "hidden": 32, "sequences": 4}
    assert _settings("long-range", False) == {"ks": [5, 10, 20, 50, 100], "steps": 1000, "budget": 6400}
    assert _settings("long-range", True) == {"ks": [5, 20], "steps": 60, "budget": 6400}
    assert _settings("attention-cost", False) == {"max_len": 16384, "window": 256, "chunk": 1024,
                                                  "max_plain_gib": 2.0, "repeats": 1, "head_dim": 64}
    assert _settings("attention-cost", True) == {"max_len": 1024, "window": 64, "chunk": 256,
                                                 "max_plain_gib": 2.0, "repeats": 1, "head_dim": 64}
    assert _settings("positional-ablation", False) == {
        "steps": 800, "train_len": 16, "test_lens": [16, 32, 64], "d_model": 64, "heads": 4, "layers": 2,
        "lr": 3e-3, "batch": 64, "eval_n": 1000, "vocab": 12, "tasks": ["order", "adjacent"], "kinds": KINDS}
    assert _settings("positional-ablation", True) == {
        "steps": 30, "train_len": 8, "test_lens": [8, 16], "d_model": 16, "heads": 2, "layers": 1,
        "lr": 3e-3, "batch": 32, "eval_n": 128, "vocab": 12, "tasks": ["order", "adjacent"], "kinds": KINDS}
    assert _settings("positional-ablation", True, train_len="10")["test_lens"] == [10, 20]  # derived default
    assert _settings("heads", False) == {"steps": 600, "d_model": 128, "layers": 4, "heads": 4, "lr": 1e-3,
                                         "batch": 32, "train_n": 20000, "n_examples": 100, "bert": True}
    assert _settings("heads", True) == {"steps": 15, "d_model": 32, "layers": 2, "heads": 2, "lr": 1e-3,
                                        "batch": 16, "train_n": 400, "n_examples": 8, "bert": False}
    from seqlab.experiments.bert_vs_gpt import FULL, QUICK

    assert _settings("bert-vs-gpt", False) == FULL
    assert _settings("bert-vs-gpt", True) == {**FULL, **QUICK}


def test_bottleneck_declares_the_trainers_own_defaults():
    import dataclasses
    import inspect

    from seqlab.experiments.bottleneck import SETTINGS
    from seqlab.models.seq2seq import Seq2SeqConfig
    from seqlab.translation import train_rnn_translation

    defaults = {p.name: p.default for p in inspect.signature(train_rnn_translation).parameters.values()}
    defaults.update({f.name: f.default for f in dataclasses.fields(Seq2SeqConfig)})
    for s in SETTINGS:
        if s.name != "max_minutes":  # the experiment's own budget, 20 min (the trainer's is 60)
            assert defaults[s.name] == s.default, s.name


@pytest.mark.parametrize("argv, expected", [
    ([], dict(max_minutes=20.0, epochs=30, batch_size=64, vocab_size=8000, beam_size=5)),
    (["--set", "minutes=12"], dict(max_minutes=12.0, epochs=30, batch_size=64, vocab_size=8000, beam_size=5)),
    (["--set", "max_minutes=12", "--set", "lr=1e-3"],
     dict(max_minutes=12.0, epochs=30, batch_size=64, vocab_size=8000, beam_size=5, lr=1e-3)),
    (["--quick", "--set", "max_steps=12", "--set", "eval_limit=30"],
     dict(max_minutes=0.5, max_steps=12, epochs=4, batch_size=32, vocab_size=400, train_limit=300, eval_limit=30,
          beam_size=1, log_every=5, emb_dim=32, enc_hidden=32, dec_hidden=64, attn_dim=32)),
])
def test_bottleneck_passes_the_same_settings_as_before(argv, expected, tmp_path, capsys, monkeypatch):
    """`--set minutes=12` (the docs' command) still means 12 minutes per model; nothing else changes."""
    import seqlab.translation

    calls = []

    class Stop(Exception):
        pass

    def fake(data_dir, out_dir, **kwargs):
        calls.append(kwargs)
        raise Stop("stop")

    monkeypatch.setattr(seqlab.translation, "train_rnn_translation", fake)
    code, _, err = _cli(capsys, "bottleneck", "--out", tmp_path / "o", *argv)
    assert code == 1 and "Stop: stop" in err
    kwargs = calls[0]
    assert kwargs.pop("attention") == "none" and kwargs.pop("seed") == 0 and kwargs.pop("progress") is False
    assert kwargs == expected and list(kwargs) == list(expected)
    assert "[bottleneck] training Seq2Seq without attention" in err


# ---------------------------------------------------------------- --help

def test_help_lists_the_experiments_settings_with_defaults(capsys):
    with pytest.raises(SystemExit) as e:
        main(["experiment", "gradient-flow", "--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    assert "settings of gradient-flow" in out
    row = next(line for line in out.splitlines() if line.strip().startswith("distance"))
    assert row.split()[1:6] == ["int", ">=", "1", "200", "50"]
    with pytest.raises(SystemExit):
        main(["experiment", "bottleneck", "-h"])
    assert "max_minutes (minutes)" in capsys.readouterr().out


@pytest.mark.parametrize("name", list(EXPERIMENTS))
def test_every_setting_is_described(name):
    table = describe(EXPERIMENTS[name])
    for s in _module(name).SETTINGS:
        assert any(line.split()[0] == s.name for line in table.splitlines()[2:]), s.name


# ---------------------------------------------------------------- progress on stderr

QUICK_RUNS = {
    "gradient-flow": (["--set", "distance=3", "--set", "hidden=2", "--set", "sequences=1"],
                      ["[gradient-flow] gradient ratios: 2 regimes x 7 models, distance 3",
                       "[gradient-flow] exploding gradients: tanh RNN (rho = 1.5) on the adding problem, 60 SGD"]),
    "long-range": (["--set", "ks=2", "--set", "steps=2"],
                   ["[long-range] rnn (hidden", "[long-range] gru+gate-bias (hidden",
                    "copy-first-token at k = 2 (2 Adam steps each)", "[long-range] training throughput"]),
    "positional-ablation": (["--set", "steps=2", "--set", "tasks=order", "--set", "kinds=none,rope"],
                            ["[positional-ablation] permutation check",
                             "[positional-ablation] task order, positional none: 1-layer encoder, d_model 16, 2 AdamW",
                             "[positional-ablation] task order, positional rope"]),
    "attention-cost": (["--set", "max_len=128"],
                       ["[attention-cost] forward + backward of plain, memory-efficient, sliding-window attention "
                        "at T = 128"]),
    "heads": (["--set", "steps=2", "--set", "n_examples=2", "--data-dir", DATA],
              ["[heads] training a 2-layer, 2-head, d_model 32 classifier on 400 SST-2 sentences: 2 AdamW steps",
               "[heads] attention statistics of the classifier on 2 SST-2 dev sentences"]),
}


@pytest.mark.parametrize("name", list(QUICK_RUNS))
def test_quick_run_prints_a_line_per_phase_on_stderr(name, tmp_path, capsys):
    if name == "heads" and not (DATA / "sst2" / "train.tsv").is_file():
        pytest.skip(f"SST-2 not found under {DATA}")
    argv, expected = QUICK_RUNS[name]
    code, out, err = _cli(capsys, name, "--quick", "--out", tmp_path, *argv)
    assert code == 0
    for line in expected:
        assert line in err, (line, err)
    assert f"[{name}]" not in out  # the table alone on stdout


def test_progress_flags_change_the_output_not_the_results(tmp_path, capsys):
    argv, _ = QUICK_RUNS["positional-ablation"]
    results, errs = {}, {}
    for flag in ("--progress", "--no-progress"):
        code, _, errs[flag] = _cli(capsys, "positional-ablation", "--quick", "--out", tmp_path / flag, flag, *argv)
        assert code == 0
        results[flag] = json.loads((tmp_path / flag / "results.json").read_text())
        for run in results[flag]["runs"]:
            run.pop("seconds")
    assert "order/rope:" in errs["--progress"] and "|" in errs["--progress"]  # tqdm bars
    assert "[positional-ablation]" not in errs["--no-progress"] and "|" not in errs["--no-progress"]
    assert results["--progress"] == results["--no-progress"]


def test_the_reports_reproduce_line_is_the_command_that_ran(capsys, tmp_path):
    """The report's "Reproduce" line is one runnable command: --quick, the seed and every --set inside it."""
    out = tmp_path / "cost"
    code, _, err = _cli(capsys, "attention-cost", "--out", out, "--quick", "--seed", "3", "--set", "max_len=256",
                        "--set", "window=32", "--no-progress")
    assert code == 0, err
    expected = "seqlab experiment attention-cost --out DIR --quick --seed 3 --set max_len=256 --set window=32"
    assert f"Reproduce: `{expected}`." in (out / "report.md").read_text()
    assert json.loads((out / "results.json").read_text())["command"] == expected
    plain = types.SimpleNamespace(quick=False, seed=0, options={})
    assert importlib.import_module("seqlab.experiments.common").command_line(
        _module("heads"), plain) == "seqlab experiment heads --out DIR"
