"""The bad inputs a review of every subcommand found slipping through (2026-12-04): each now stops with one
`error:` line naming the option and the value, before any work is done, and leaves no output folder."""
import os

import pytest

from seqlab.cli._args import usable_cores


def _line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    return lines[0]


TOO_MANY = str(usable_cores() + 1)


@pytest.mark.parametrize("argv, words", [
    (["demo", "--seed", "-1"], ["--seed", "must be >= 0, got -1"]),
    (["demo", "--mlp-steps", "0"], ["--mlp-steps", "must be >= 1, got 0"]),
    (["demo", "--blas-threads", TOO_MANY], [f"--blas-threads {TOO_MANY} is more than the", "CPU core"]),
    (["generate", "x", "--prompt", "a", "--seed", "-3"], ["--seed", "must be >= 0, got -3"]),
    (["generate", "x", "--prompt", "a", "--temperature", "inf"], ["--temperature must be a finite number > 0"]),
    (["experiment", "heads", "--seed", "-1"], ["--seed", "must be >= 0, got -1"]),
    (["train", "toy-classifier", "--out", "OUT", "--seed", "-1"], ["--seed", "must be >= 0, got -1"]),
    (["train", "toy-classifier", "--out", "OUT", "--set", "n_dev=0"], ["n_dev must be >= 1, got 0"]),
    (["train", "toy-classifier", "--print-config", "--set", "dropout=2"], ["dropout must be in [0, 1], got 2.0"]),
])
def test_bad_values_are_usage_errors(cli, tmp_path, argv, words):
    argv = [str(tmp_path / "out") if a == "OUT" else a for a in argv]
    code, out, err = cli(*argv)
    line = _line(err)
    assert code == 2 and all(w in line for w in words), line
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("argv, words", [
    (["bench", "gemm", "--threads", TOO_MANY], [f"--threads {TOO_MANY} is more than the"]),
    (["bench", "gpt-train", "--profile", "--steps", "0"], ["--steps", "must be >= 1, got 0"]),
    (["bench", "gemm", "--steps", "2"], ["--steps applies to --profile only"]),
    (["bench", "gemm", "--clock", "cpu"], ["--clock applies to --profile only"]),
])
def test_bench_refuses_what_it_would_otherwise_ignore_or_mismeasure(cli, argv, words):
    pytest.importorskip("torch")
    code, out, err = cli(*argv)
    line = _line(err)
    assert code == 2 and out == "" and all(w in line for w in words), line


def test_a_file_where_a_folder_belongs_is_named_as_such(cli, tmp_path):
    afile = tmp_path / "afile"
    afile.write_text("x")
    for argv in (["demo", "--out", afile, "--steps", "mlp"], ["attention", "hi", "--out", afile],
                 ["experiment", "heads", "--quick", "--out", afile], ["train", "toy-classifier", "--out", afile]):
        code, out, err = cli(*argv)
        assert code == 1 and _line(err) == f"error: --out {afile} is a file, not a folder", (argv, err)
    code, out, err = cli("train", "toy-classifier", "--out", afile / "sub")
    assert code == 1 and f"{afile} is a file, not a folder" in _line(err)
    code, out, err = cli("attention", "hi", "--out", tmp_path / "a", "--model", afile)
    assert code == 1 and "is a file; give a model folder, a run folder or a pretrained name" in _line(err)
    assert not (tmp_path / "a").exists()


def test_attention_refuses_options_its_model_cannot_use(cli, tmp_path):
    from seqlab.hub import PRETRAINED_NAMES

    if "minilm" not in PRETRAINED_NAMES:
        pytest.skip("the pretrained MiniLM is not available")
    code, out, err = cli("attention", "The cat sat.", "--out", tmp_path / "a", "--target", "x")
    assert code == 1 and "a target (the decoder's text) needs an encoder-decoder model" in _line(err)
    assert "BertModel is an encoder model" in err
    code, out, err = cli("attention", "The cat sat.", "--out", tmp_path / "a", "--checkpoint", "latest")
    assert code == 1 and "--checkpoint latest picks a seqlab run's weights, but minilm is not a run folder" in err
    assert not (tmp_path / "a").exists()


def test_a_run_folder_given_as_a_model_folder_says_what_it_is(cli, tmp_path):
    run = tmp_path / "run"
    assert cli("train", "toy-classifier", "--out", run, "--set", "max_steps=2", "--no-progress")[0] == 0
    for argv in (["generate", run, "--prompt", "a"], ["embed", "--model", run, "hi"]):
        code, out, err = cli(*argv)
        line = _line(err)
        assert code == 1 and "is a seqlab run folder (task toy-classifier)" in line, (argv, line)
        assert "RUN/pretrained" in line


def test_usable_cores_follows_the_affinity_mask():
    if not hasattr(os, "sched_getaffinity"):
        pytest.skip("no affinity masks on this OS")
    assert usable_cores() == len(os.sched_getaffinity(0)) >= 1


def test_abbreviated_options_are_not_guessed(cli, tmp_path):
    for argv, bad in ((["train", "toy-classifier", "--out", tmp_path / "r", "--res"], "--res"),
                      (["attention", "hi", "--out", tmp_path / "a", "--no-trunc"], "--no-trunc")):
        code, out, err = cli(*argv)
        assert code == 2 and _line(err) == f"error: unrecognized arguments: {bad}", err
