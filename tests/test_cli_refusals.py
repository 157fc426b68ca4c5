"""A refused `seqlab train` / `seqlab demo` writes nothing, and says why in one line (a learner walkthrough).

- every setting a task's model cannot take (gradient checkpointing, heads that do not divide the width, RoPE
  with an odd head dimension, dot attention of unequal sizes, a non-finite time budget) is refused with the
  settings, before a run folder, dataset or vocabulary is touched;
- a run that still fails before training starts takes back what it wrote, and only that;
- `--minutes` / `--max-minutes` refuse inf and nan; `demo` draws bars by `train`'s rule; its training bars
  end at 100% when a training reaches max_steps before its budget.
"""
import argparse
import json
import os
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from seqlab.cli import _args, demo
from seqlab.cli import train as train_cli
from seqlab.errors import ConfigError
from seqlab.train import runs
from seqlab.train.tasks import TASKS, get_task

DATA = Path(os.environ.get("SEQLAB_DATA") or Path(__file__).resolve().parents[2] / "shared" / "data")


def _one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    return lines[0]


# ---- refused with the settings, before anything is read or written ------------------------------------
@pytest.mark.parametrize("task, sets, words", [
    ("sst2-lstm", ["gradient_checkpointing=true"],
     ["gradient_checkpointing: the model of task 'sst2-lstm' has no gradient checkpointing", "shakespeare-gpt"]),
    ("toy-classifier", ["gradient_checkpointing=1"], ["task 'toy-classifier' has no gradient checkpointing"]),
    ("multi30k-transformer", ["gradient_checkpointing=yes"], ["'multi30k-transformer' has no gradient"]),
    ("sst2-transformer", ["d_model=30"], ["d_model (30) must be divisible by nhead (4)"]),
    ("sst2-transformer", ["d_model=12", "nhead=4"], ["positional = 'rope' needs an even head dimension", "got 3"]),
    ("shakespeare-gpt", ["n_embd=30"], ["n_embd (30) must be divisible by n_head (4)"]),
    ("clm-pretrain", ["d_model=30"], ["d_model (30) must be divisible by nhead (4)"]),
    ("mlm-pretrain", ["d_model=30"], ["d_model (30) must be divisible by nhead (4)"]),
    ("multi30k-transformer", ["positional=rope", "d_model=12"], ["even head dimension d_model / nhead, got 3"]),
    ("multi30k-rnn", ["attention=dot", "dec_hidden=100"], ["attention = 'dot' needs dec_hidden == 2 * enc_hidden"]),
    ("toy-classifier", ["max_minutes=inf"], ["max_minutes must be a finite number >= 0, got inf"]),
    ("toy-classifier", ["max_minutes=nan"], ["max_minutes must be a finite number >= 0, got nan"]),
])
def test_a_setting_the_model_cannot_take_is_refused_before_anything_is_written(cli, tmp_path, task, sets, words):
    empty = tmp_path / "no-data"  # had the task read its dataset first, the error would be "not found"
    empty.mkdir()
    out = tmp_path / "runs" / "r4"
    argv = ["train", task, "--out", out, "--data-dir", empty, "--no-progress"]
    for s in sets:
        argv += ["--set", s]
    code, _, err = cli(*argv)
    line = _one_line(err)
    assert code == 2 and all(w in line for w in words), line
    assert not (tmp_path / "runs").exists()
    code, _, err = cli("train", task, "--print-config", *[a for s in sets for a in ("--set", s)])
    assert code == 2 and all(w in _one_line(err) for w in words)  # the settings file it would print is refused too


def test_a_refusal_leaves_an_existing_folder_as_it_was(cli, tmp_path):
    out = tmp_path / "r4"
    (out / "tokenizer").mkdir(parents=True)
    (out / "tokenizer" / "vocab.txt").write_text("left by an earlier start")
    (out / "notes.txt").write_text("mine")
    code, _, err = cli("train", "sst2-lstm", "--out", out, "--set", "gradient_checkpointing=true")
    assert code == 2 and "gradient_checkpointing" in err
    assert sorted(p.name for p in out.iterdir()) == ["notes.txt", "tokenizer"]
    assert (out / "tokenizer" / "vocab.txt").read_text() == "left by an earlier start"


def test_a_resume_that_turns_on_what_the_model_lacks_is_refused_before_loading(cli, tmp_path):
    out = tmp_path / "toy"
    assert cli("train", "toy-classifier", "--out", out, "--set", "max_steps=2", "--no-progress")[0] == 0
    before = {p.name: p.stat().st_mtime_ns for p in out.iterdir()}
    code, _, err = cli("train", "toy-classifier", "--out", out, "--resume", "--set", "gradient_checkpointing=true")
    assert code == 2 and "has no gradient checkpointing" in _one_line(err)
    assert {p.name: p.stat().st_mtime_ns for p in out.iterdir()} == before


def test_every_task_says_whether_its_model_has_gradient_checkpointing(tmp_path):
    """The declaration the early refusal reads (Config.GRADIENT_CHECKPOINTING) matches the model each task
    builds (the models built for inference over tiny vocabularies, no dataset)."""
    from seqlab.data import CharTokenizer, Tokenizer
    from seqlab.models import translator
    from seqlab.train.config import build_config

    texts = ["a good film", "a bad movie", "das ist gut", "this is fine"] * 5
    for name in TASKS:
        module = get_task(name)
        run_dir = tmp_path / name
        if name == "shakespeare-gpt":
            CharTokenizer("abcdef \n").save(run_dir / "tokenizer")
        elif name.startswith("multi30k"):
            translator.build_tokenizer(texts, 300).save(run_dir / "tokenizer")
        elif name not in ("toy-classifier", "sst2-bert"):  # these two bring their own vocabulary
            Tokenizer.train_wordpiece(texts, 100).save(run_dir / "tokenizer")
        model = module.build(build_config(module.Config), run_dir, None, False).model
        declared = module.Config.GRADIENT_CHECKPOINTING
        assert declared is hasattr(model, "gradient_checkpointing_enable"), (name, type(model).__name__)


# ---- what fails later still takes back what it wrote ---------------------------------------------------
def _refusing_trainer(*args, **kwargs):
    raise ConfigError("refused by the trainer")


@pytest.mark.skipif(not (DATA / "sst2").is_dir(), reason=f"shared datasets not found at {DATA}")
def test_a_failure_after_the_vocabulary_is_built_removes_what_the_run_wrote(tmp_path, monkeypatch):
    monkeypatch.setattr(runs, "Trainer", _refusing_trainer)  # a refusal that only the built model could give
    small = ({"max_train_examples": 200, "max_dev_examples": 20, "vocab_size": 200}, "test")
    out = tmp_path / "runs" / "r4"
    with pytest.raises(ConfigError, match="refused by the trainer"):
        runs.train("sst2-lstm", out, [small], data_dir=DATA)
    assert not (tmp_path / "runs").exists()  # tokenizer/ (built) and the folders it made: all gone
    # a folder that existed keeps what it held, an earlier start's vocabulary included, and nothing else
    (out / "tokenizer").mkdir(parents=True)
    (out / "tokenizer" / "vocab.txt").write_text("earlier")
    (out / "notes.txt").write_text("mine")
    with pytest.raises(ConfigError):
        runs.train("sst2-lstm", out, [small], data_dir=DATA)
    assert sorted(p.name for p in out.iterdir()) == ["notes.txt", "tokenizer"]
    assert [p.name for p in (out / "tokenizer").iterdir()] == ["vocab.txt"]
    assert (out / "tokenizer" / "vocab.txt").read_text() == "earlier"


def test_a_run_that_starts_replaces_an_earlier_starts_vocabulary(tmp_path):
    out = tmp_path / "toy"
    (out / "tokenizer").mkdir(parents=True)
    (out / "tokenizer" / "vocab.txt").write_text("from other settings")
    result = runs.train("toy-classifier", out, [({"max_steps": 2, "eval_every": 0}, "test")])
    assert result.step == 2
    assert not (out / "tokenizer").exists() and not [p for p in out.iterdir() if p.name.startswith(".")]
    assert json.loads((out / "config.json").read_text())["task"] == "toy-classifier"


# ---- time budgets: finite numbers ---------------------------------------------------------------------
MAX = "--max-minutes: must be a finite number >= 0"


@pytest.mark.parametrize("argv, words", [
    (["train", "toy-classifier", "--out", "OUT", "--max-minutes", "inf"], f"{MAX}, got inf"),
    (["train", "toy-classifier", "--out", "OUT", "--max-minutes", "nan"], f"{MAX}, got nan"),
    (["train", "toy-classifier", "--out", "OUT", "--max-minutes", "-1"], f"{MAX}, got -1"),
    (["train", "toy-classifier", "--out", "OUT", "--max-minutes", "soon"], "--max-minutes: expects a number"),
    (["demo", "--out", "OUT", "--minutes", "inf"], "--minutes: must be a finite number > 0, got inf"),
    (["demo", "--out", "OUT", "--minutes", "1e999"], "--minutes: must be a finite number > 0, got inf"),
    (["demo", "--out", "OUT", "--minutes", "nan"], "--minutes: must be a finite number > 0, got nan"),
    (["demo", "--out", "OUT", "--minutes", "0"], "--minutes: must be a finite number > 0, got 0"),
])
def test_a_time_budget_must_be_a_finite_number(cli, tmp_path, argv, words):
    out = tmp_path / "out"
    code, _, err = cli(*[out if a == "OUT" else a for a in argv])
    assert code == 2 and words in _one_line(err)
    assert not out.exists()


def test_the_budget_options_take_finite_numbers_and_say_so_in_their_help():
    from seqlab.cli.main import build_parser

    parser = build_parser()
    assert parser.parse_args(["train", "toy-classifier", "--max-minutes", "0"]).max_minutes == 0.0  # 0 = no limit
    assert parser.parse_args(["demo", "--minutes", "0.5"]).minutes == 0.5
    helps = {a.dest: a.help for name in ("train", "demo")
             for a in parser._subparsers._group_actions[0].choices[name]._actions}
    assert "finite number >= 0" in helps["max_minutes"] and "0 = no limit" in helps["max_minutes"]
    assert "finite number > 0" in helps["minutes"]


def test_demo_run_called_directly_refuses_an_infinite_budget(tmp_path):
    from seqlab.cli.main import UsageError

    args = argparse.Namespace(steps="mlp", minutes=float("inf"), out=tmp_path / "d")
    with pytest.raises(UsageError, match="--minutes must be a finite number > 0, got inf"):
        demo.run(args)
    assert not (tmp_path / "d").exists()


# ---- progress bars: one rule for train and demo --------------------------------------------------------
@pytest.mark.parametrize("tty", [True, False])
def test_train_and_demo_draw_a_bar_by_the_same_rule(monkeypatch, tty):
    monkeypatch.setattr(sys.stderr, "isatty", lambda: tty)
    assert _args.wants_bar(None) is tty and _args.wants_bar(True) and not _args.wants_bar(False)
    assert train_cli._progress(None) == (True if tty else "lines")
    assert train_cli._progress(False) == "lines" and train_cli._progress(True) is True


def _fake_mlp(monkeypatch, warmup_s: float = 0.0):
    """step_mlp without the real training and pictures: `warmup_s` before the first step (a compile)."""
    def train_mlp(steps, seed, on_step):
        time.sleep(warmup_s)
        for step in range(steps):
            on_step(step, 1.0 / (step + 1))
        return SimpleNamespace(model=None, losses=[1.0, 0.5], train_accuracy=1.0, test_accuracy=1.0, seconds=0.1)

    monkeypatch.setattr(demo, "train_mlp", train_mlp)
    monkeypatch.setattr(demo, "make_spirals", lambda seed: (None, None))
    monkeypatch.setattr(demo, "plot_decision_boundary", lambda model, X, y, path, title: path)
    monkeypatch.setattr(demo, "plot_loss", lambda losses, path: path)


@pytest.mark.parametrize("bars", [False, True])
def test_demo_draws_its_bars_only_where_train_would(monkeypatch, capsys, tmp_path, bars):
    _fake_mlp(monkeypatch)
    ctx = demo.Context(argparse.Namespace(mlp_steps=20, seed=0), tmp_path, ["mlp"], bars=bars)
    demo.step_mlp(ctx)
    out, err = capsys.readouterr()
    assert "step    20" in out  # the step lines are there either way
    assert ("MLP on two spirals" in err) is bars


def test_the_mlp_bar_clock_starts_after_the_first_step(monkeypatch, capsys, tmp_path):
    """The first step carries a compilation (seconds): the bar's elapsed time and rate leave it out."""
    _fake_mlp(monkeypatch, warmup_s=1.2)
    ctx = demo.Context(argparse.Namespace(mlp_steps=20, seed=0), tmp_path, ["mlp"], bars=True)
    demo.step_mlp(ctx)
    frames = [f for f in capsys.readouterr().err.replace("\r", "\n").splitlines() if "/20 [" in f]
    after = [f for f in frames if "| 0/20" not in f]
    assert after and all("[00:00<" in f for f in after), frames  # not 00:01, the warm-up's second


def _trainer(max_steps: int, now: list):
    return SimpleNamespace(config=SimpleNamespace(max_steps=max_steps), elapsed=lambda: now[0])


def test_a_training_bar_ends_at_100_percent_when_max_steps_comes_first():
    now = [0.0]
    bar = demo.TrainingBar("character GPT", 0.5)  # a 30 s budget
    trainer = _trainer(3, now)
    for step, t in [(1, 5.0), (2, 10.0), (3, 16.5)]:
        now[0] = t
        bar(trainer, {"step": step, "loss": 2.0})
    text = str(bar.bar)
    bar.close()
    assert text.startswith("character GPT: 100%|") and "16/16 s, step 3/3, loss 2.000" in text, text


def test_a_training_bar_stopped_by_its_budget_reads_the_budget():
    now = [0.0]
    bar = demo.TrainingBar("Transformer classifier", 0.5)
    trainer = _trainer(1000, now)
    for step, t in [(1, 12.0), (2, 31.0)]:
        now[0] = t
        bar(trainer, {"step": step, "loss": 0.5})
    text = str(bar.bar)
    bar.close()
    assert "100%|" in text and "30/30 s, step 2/1000" in text, text


def test_a_disabled_training_bar_draws_nothing(capsys):
    bar = demo.TrainingBar("character GPT", 0.5, enabled=False)
    bar(_trainer(1, [3.0]), {"step": 1, "loss": 1.0})
    bar.close()
    assert capsys.readouterr().err == ""
