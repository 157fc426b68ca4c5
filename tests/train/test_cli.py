"""`seqlab train / eval / info`: one line on stderr and exit 2 for usage errors, 1 for runtime errors."""
import json

import numpy as np
import pytest

from seqlab.train.runs import load_run

TOY = ["--set", "max_steps=30", "--set", "eval_every=15", "--no-progress"]


@pytest.fixture(scope="module")
def toy_run(tmp_path_factory):
    from seqlab.cli.main import main

    out = tmp_path_factory.mktemp("cli") / "run"
    assert main(["train", "toy-classifier", "--out", str(out), *TOY]) == 0
    return out


def _one_error_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    return lines[0]


@pytest.mark.parametrize("argv, words", [
    (["train", "nope", "--out", "X"], ["unknown task 'nope'", "toy-classifier"]),
    (["train", "toy-classifier", "--out", "X", "--bogus"], ["--bogus"]),
    (["train", "toy-classifier"], ["--out"]),
    (["train", "toy-classifier", "--out", "X", "--set", "lrr=1"], ["unknown setting 'lrr'", "valid settings", "lr,"]),
    (["train", "toy-classifier", "--out", "X", "--set", "max_steps=many"], ["max_steps expects int", "many"]),
    (["train", "toy-classifier", "--out", "X", "--set", "lr"], ["KEY=VALUE"]),
    (["train", "toy-classifier", "--out", "X", "--seed", "1", "--set", "seed=2"], ["conflicting options"]),
    (["train", "toy-classifier", "--out", "X", "--resume"], ["--resume", "no checkpoint"]),
])
def test_usage_errors_exit_2_with_one_line(cli, tmp_path, argv, words):
    argv = [str(tmp_path / "X") if a == "X" else a for a in argv]
    code, out, err = cli(*argv)
    line = _one_error_line(err)
    assert code == 2 and all(w in line for w in words), line


def test_toml_config_and_flags(cli, tmp_path):
    cfg = tmp_path / "c.toml"
    cfg.write_text("[train]\nmax_steps = 6\neval_every = 3\n[model]\nhidden = 8\n")
    code, out, err = cli("train", "toy-classifier", "--out", tmp_path / "r", "--config", cfg, "--seed", "5",
                         "--no-progress")
    assert code == 0, err
    summary = json.loads(out.strip().splitlines()[-1])
    assert summary["step"] == 6 and "val_acc" in summary
    saved = json.loads((tmp_path / "r" / "config.json").read_text())["config"]
    assert (saved["max_steps"], saved["hidden"], saved["seed"]) == (6, 8, 5)
    # a second fresh run into the same folder is refused; a resume may not change the settings
    code, _, err = cli("train", "toy-classifier", "--out", tmp_path / "r", "--no-progress")
    assert code == 2 and "already holds a run" in _one_error_line(err)
    code, _, err = cli("train", "toy-classifier", "--out", tmp_path / "r", "--resume", "--set", "lr=0.5")
    assert code == 2 and "conflicting options" in _one_error_line(err) and "lr" in err
    code, _, err = cli("train", "toy-classifier", "--out", tmp_path / "r", "--resume", "--max-minutes", "5",
                       "--no-progress")
    assert code == 0, err  # the time budget may change


def test_runtime_errors_exit_1_with_one_line(cli, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    code, _, err = cli("train", "toy-classifier", "--out", blocker / "run", *TOY)
    assert code == 1 and "cannot create the output folder" in _one_error_line(err)
    code, _, err = cli("train", "toy-classifier", "--out", tmp_path / "r", "--data-dir", tmp_path / "nodata", *TOY)
    assert code == 1 and "nodata" in _one_error_line(err)
    code, _, err = cli("train", "toy-classifier", "--out", tmp_path / "nan", "--set", "nan_at_step=12",
                       "--set", "checkpoint_every=5", *TOY)
    assert code == 1 and "loss is nan at step 12" in _one_error_line(err) and "(step 10)" in err


def test_resume_refuses_a_corrupted_checkpoint(cli, tmp_path):
    run = tmp_path / "r"
    assert cli("train", "toy-classifier", "--out", run, *TOY)[0] == 0
    weights = run / "checkpoints" / "step-000030" / "model.safetensors"
    data = bytearray(weights.read_bytes())
    data[-1] ^= 1
    weights.write_bytes(bytes(data))
    code, _, err = cli("train", "toy-classifier", "--out", run, "--resume")
    assert code == 1 and "sha256" in _one_error_line(err) and "model.safetensors" in err


def test_eval_prints_accuracy_json_last(cli, toy_run, tmp_path):
    tsv = tmp_path / "dev.tsv"
    rows = [("good great fun movie", 1), ("awful dull boring plot", 0), ("the film was bad but lovely and smart", 1),
            ("a weak and silly story", 0), ("unknownword superb", 1)]
    tsv.write_text("sentence\tlabel\n" + "".join(f"{s} \t{y}\n" for s, y in rows))
    code, out, err = cli("eval", toy_run, "--data", tsv)
    assert code == 0, err
    result = json.loads(out.strip().splitlines()[-1])
    run = load_run(toy_run)
    expected = np.mean(run.task.predict(run.task.model, [s for s, _ in rows]) == [y for _, y in rows])
    assert result["accuracy"] == pytest.approx(expected) and result["examples"] == 5
    assert result["checkpoint"] == "best"
    code, out, _ = cli("eval", toy_run, "--data", tsv, "--checkpoint", "latest")
    assert code == 0 and json.loads(out.strip().splitlines()[-1])["step"] == 30


def test_eval_errors(cli, toy_run, tmp_path):
    bad = tmp_path / "bad.tsv"
    bad.write_text("sentence\tlabel\ngood movie\t1\nno label here\n")
    code, _, err = cli("eval", toy_run, "--data", bad)
    assert code == 1 and "bad.tsv:3" in _one_error_line(err)
    bad.write_bytes(b"sentence\tlabel\n\xff\xfe bad\t1\n")
    code, _, err = cli("eval", toy_run, "--data", bad)
    assert code == 1 and _one_error_line(err)
    code, _, err = cli("eval", toy_run, "--data", tmp_path / "missing.tsv")
    assert code == 1 and "missing.tsv" in _one_error_line(err)
    code, _, err = cli("eval", tmp_path, "--data", bad)
    assert code == 1 and "not a seqlab run folder" in _one_error_line(err)


def test_eval_refuses_weights_that_do_not_match_the_config(cli, toy_run, tmp_path):
    import shutil

    run = tmp_path / "run"
    shutil.copytree(toy_run, run)
    record = json.loads((run / "config.json").read_text())
    record["config"]["hidden"] = 64
    (run / "config.json").write_text(json.dumps(record))
    tsv = tmp_path / "d.tsv"
    tsv.write_text("sentence\tlabel\ngood\t1\n")
    code, _, err = cli("eval", run, "--data", tsv)
    assert code == 1 and "shape mismatch" in _one_error_line(err)


def test_info(cli, toy_run):
    code, out, _ = cli("info", toy_run)
    assert code == 0 and "toy-classifier" in out and "steps      30 of 30" in out and "parameters 1,282" in out
    code, out, _ = cli("info", toy_run, "--json")
    info = json.loads(out)
    assert info["step"] == 30 and info["best"]["metric"] == "val_acc" and info["parameters"] == 1282


def test_resume_refuses_a_run_config_that_does_not_match_the_checkpoint(cli, tmp_path):
    run = tmp_path / "r"
    assert cli("train", "toy-classifier", "--out", run, *TOY)[0] == 0
    record = json.loads((run / "config.json").read_text())
    record["config"]["lr"] = 0.5
    (run / "config.json").write_text(json.dumps(record))
    code, _, err = cli("train", "toy-classifier", "--out", run, "--resume")
    assert code == 1 and "does not match" in _one_error_line(err)


def test_resume_uses_the_dataset_folder_the_run_started_with(cli, tmp_path, monkeypatch):
    """`--data-dir` is recorded in the run's config.json, so `--resume` without it reads the same data
    (offline, the other sources would be a download)."""
    from seqlab.train import runs

    data = tmp_path / "data"
    data.mkdir()
    run_dir = tmp_path / "r"
    code, _, err = cli("train", "toy-classifier", "--out", run_dir, "--data-dir", data,
                       "--set", "max_steps=4", "--set", "checkpoint_every=2", "--max-minutes", "5", "--no-progress")
    assert code == 0, err
    assert json.loads((run_dir / "config.json").read_text())["data_dir"] == str(data.resolve())
    module = runs.get_task("toy-classifier")
    seen = []
    build = module.build
    monkeypatch.setattr(module, "build", lambda config, out, data_dir, *a: seen.append(data_dir) or build(
        config, out, data_dir, *a))
    code, _, err = cli("train", "toy-classifier", "--out", run_dir, "--resume", "--max-minutes", "6", "--no-progress")
    assert code == 0, err
    assert seen == [data.resolve()]


def test_resuming_a_finished_run_reports_its_last_loss(cli, tmp_path):
    """No step is left to run, so this call trains nothing; its summary still gives the run's final loss
    (the last step's, which the checkpoint keeps), not null."""
    run_dir = tmp_path / "r"
    code, out, err = cli("train", "toy-classifier", "--out", run_dir, *TOY)
    assert code == 0, err
    first = json.loads(out.strip().splitlines()[-1])
    assert first["step"] == 30 and isinstance(first["final_loss"], float)
    code, out, err = cli("train", "toy-classifier", "--out", run_dir, "--resume", "--no-progress")
    assert code == 0, err
    again = json.loads(out.strip().splitlines()[-1])
    assert again["step"] == 30 and again["final_loss"] == first["final_loss"]
    assert json.loads((run_dir / "summary.json").read_text())["final_loss"] == first["final_loss"]


def test_resume_after_a_spent_time_budget_says_how_to_go_on(cli, tmp_path):
    """A README walkthrough ran `--resume` after a budget stop: it trained nothing and exited 0. Budgets add up
    over resumes, so it is now a usage error naming the fix, and the fix works. (No periodic checkpoints: one at
    the very step the budget ran out would keep that moment's time, a hair under the budget.)"""
    run_dir = tmp_path / "r"
    code, _, err = cli("train", "toy-classifier", "--out", run_dir, "--max-minutes", "0.002", "--set",
                       "max_steps=100000", "--set", "eval_every=0", "--set", "checkpoint_every=0", "--no-progress")
    assert code == 0 and "time budget of 0.002 min reached" in err, err
    code, _, err = cli("train", "toy-classifier", "--out", run_dir, "--resume")
    line = _one_error_line(err)
    assert code == 2 and "time budget of 0.002 min is spent" in line and "--max-minutes 0 for no limit" in line
    code, out, err = cli("train", "toy-classifier", "--out", run_dir, "--resume", "--max-minutes", "0.01",
                         "--no-progress")
    assert code == 0, err
    assert json.loads(out.strip().splitlines()[-1])["stopped"] == "time_budget"


@pytest.mark.parametrize("flag", ["--no-progress", None])
def test_without_a_bar_the_evaluation_lines_still_reach_stderr(cli, tmp_path, flag):
    """`--no-progress`, and the default when stderr is not a terminal (a log file, a pipe, this test's
    capture): no bar redraws, but each evaluation is one plain line, so a log of the run still shows it."""
    argv = ["train", "toy-classifier", "--out", tmp_path / "r", "--set", "max_steps=20", "--set", "eval_every=10"]
    code, _, err = cli(*argv, *([flag] if flag else []))
    assert code == 0, err
    lines = err.strip().splitlines()
    assert [ln.split(":")[0] for ln in lines] == ["step 10", "step 20"], err
    assert all("val_acc=" in ln for ln in lines) and "\r" not in err and "it/s" not in err


def test_progress_draws_the_bar_with_the_evaluation_lines_above_it(cli, tmp_path):
    code, _, err = cli("train", "toy-classifier", "--out", tmp_path / "r", "--set", "max_steps=20",
                       "--set", "eval_every=10", "--progress")
    assert code == 0, err
    assert "20/20" in err and "step 10: " in err and "step 20: " in err
