"""`seqlab bench / eval / info`: usage mistakes exit 2, runtime problems exit 1, one `error:` line; a closed
stdout (`| head`) ends quietly; `bench --from-json --baseline` prints the tables with their 'before' column."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from seqlab.cli.main import main

SRC = str(Path(__file__).resolve().parents[1] / "src")


@pytest.fixture(scope="module")
def toy_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("errs") / "run"
    assert main(["train", "toy-classifier", "--out", str(out), "--set", "max_steps=4", "--no-progress"]) == 0
    return out


def _line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    return lines[0]


def _record(path: Path, seqlab_s: float) -> Path:
    from seqlab.bench.harness import machine_info
    from seqlab.bench.report import to_json
    from seqlab.bench.result import BenchResult

    r = BenchResult("gpt-train", "one iteration", ["benchmark", "seqlab ms", "torch ms", "seqlab / torch"],
                    [["gpt-train", f"{1e3 * seqlab_s:.1f}", "10.0", f"{seqlab_s / 0.01:.2f}"]], ["a note"],
                    {"seqlab_s": seqlab_s, "torch_s": 0.01})
    path.write_text(json.dumps(to_json({1: [r], 2: [r]}, machine_info(1), "seqlab bench gpt-train")))
    return path


@pytest.mark.parametrize("argv, words", [
    (["bench", "gpt-trian"], ["unknown benchmark 'gpt-trian'", "gpt-train"]),
    (["bench", "gemm", "--threads", "0"], ["--threads must be >= 1"]),
    (["bench", "gemm", "--threads", "abc"], ["--threads takes integers", "'abc'"]),
    (["bench", "gemm", "--repeats", "0"], ["--repeats must be >= 1"]),
])
def test_bench_usage_mistakes_exit_2(cli, argv, words):
    pytest.importorskip("torch")
    code, out, err = cli(*argv)
    line = _line(err)
    assert code == 2 and all(w in line for w in words), line


def test_bench_names_the_bad_file_before_running_anything(cli, tmp_path):
    pytest.importorskip("torch")
    good = _record(tmp_path / "good.json", 0.009)
    (tmp_path / "obj.json").write_text('{"a": 1}')
    (tmp_path / "bad.json").write_text("{bad")
    blocker = tmp_path / "file"
    blocker.write_text("x")
    cases = [
        (["--from-json", tmp_path / "obj.json"], ["obj.json", 'no "runs"']),
        (["--from-json", tmp_path / "bad.json"], ["bad.json", "not valid JSON", "line 1"]),
        (["--from-json", tmp_path / "none.json"], ["none.json", "does not exist"]),
        (["--from-json", good, "--results", blocker / "x.md"], ["--results", "x.md", "is a file, not a folder"]),
        (["--from-json", good, "--baseline", tmp_path / "missing.json"], ["--baseline", "missing.json",
                                                                          "does not exist"]),
        (["--from-json", good, "--baseline", tmp_path / "obj.json"], ["--baseline", "obj.json", 'no "runs"']),
        # checked before the first benchmark runs: nothing is printed, nothing is timed
        (["gemm", "--json", blocker / "x.json"], ["--json", "x.json", "is a file, not a folder"]),
        (["gemm", "--baseline", tmp_path / "missing.json"], ["--baseline", "missing.json", "does not exist"]),
    ]
    for argv, words in cases:
        code, out, err = cli("bench", *argv)
        line = _line(err)
        assert code == 1 and out == "" and all(str(w) in line for w in words), (argv, line)
        assert "Errno" not in line and "KeyError" not in line


def test_bench_from_json_prints_the_baseline_and_thread_headings(cli, tmp_path):
    pytest.importorskip("torch")
    after, before = _record(tmp_path / "after.json", 0.009), _record(tmp_path / "before.json", 0.012)
    code, out, err = cli("bench", "--from-json", after, "--baseline", before)
    assert code == 0, err
    assert "### 1 thread for both libraries" in out and "### 2 threads for both libraries" in out
    assert out.count("| before: seqlab ms, ratio (CPU) |") == 2 and "| 12.0 ms, 1.20 |" in out
    # the same tables as --results writes
    md = tmp_path / "results.md"
    assert cli("bench", "--from-json", after, "--baseline", before, "--results", md)[0] == 0
    text = md.read_text()
    for block in out.strip().split("\n\n"):
        assert block in text, block


def test_a_closed_stdout_ends_quietly(toy_run):
    r, w = os.pipe()
    os.close(r)  # the reader is gone before seqlab writes, as after `| head -1`
    env = dict(os.environ, PYTHONPATH=SRC + os.pathsep + os.environ.get("PYTHONPATH", ""))
    try:
        p = subprocess.run([sys.executable, "-m", "seqlab.cli.main", "info", str(toy_run)], stdout=w,
                           stderr=subprocess.PIPE, text=True, env=env, timeout=120)
    finally:
        os.close(w)
    assert p.stderr == "" and p.returncode == 141, p.stderr


def test_eval_says_folder_or_file(cli, toy_run, tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    (data / "dev.tsv").write_text("sentence\tlabel\ngood\t1\n")
    code, _, err = cli("eval", toy_run, "--data", data)
    line = _line(err)
    assert code == 1 and "is a folder, not a file" in line and "dev.tsv" in line, line
    code, _, err = cli("eval", data / "dev.tsv", "--data", data / "dev.tsv")
    line = _line(err)
    assert code == 1 and "is a file, not a run folder" in line, line
