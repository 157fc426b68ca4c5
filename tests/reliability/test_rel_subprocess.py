"""The promise checked in real processes: `python -m seqlab ...` prints one `error:` line and no traceback,
exits 1 (runtime) or 2 (usage); --debug adds the traceback; bytes that are not UTF-8 on the command line
are named, not crashed on."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ENV = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2] / "src")}


def _seqlab(*argv) -> subprocess.CompletedProcess:
    args = [a if isinstance(a, bytes) else str(a) for a in argv]
    return subprocess.run([sys.executable, "-m", "seqlab", *args], capture_output=True, timeout=120, env=ENV)


def test_runtime_error_one_line_then_debug_traceback(models):
    plain = _seqlab("generate", models.truncated, "--prompt", "the cat")
    err = plain.stderr.decode()
    assert plain.returncode == 1 and plain.stdout == b""
    assert err.count("\n") == 1 and err.startswith("error: ") and "Traceback" not in err
    assert "truncated/model.safetensors" in err
    debug = _seqlab("generate", models.truncated, "--prompt", "the cat", "--debug")
    lines = debug.stderr.decode().strip().splitlines()
    assert debug.returncode == 1 and lines[0] == "Traceback (most recent call last):"
    assert any("CheckpointError" in line for line in lines) and lines[-1] == err.strip()


def test_usage_error_and_undecodable_argv_bytes(models, tmp_path):
    usage = _seqlab("train", "no-such-task", "--out", tmp_path / "r")
    err = usage.stderr.decode()
    assert usage.returncode == 2 and err.count("\n") == 1 and err.startswith("error: unknown task 'no-such-task'")
    latin1 = _seqlab("attention", b"caf\xe9", "--model", models.gpt, "--out", tmp_path / "o")
    err = latin1.stderr.decode()
    assert latin1.returncode == 1 and err.count("\n") == 1 and "Traceback" not in err
    assert "TEXT is not valid UTF-8 (byte 0xe9 at character 3)" in err


def test_a_bad_engine_setting_stops_train_before_it_makes_the_run_folder(tmp_path):
    """SEQLAB_BLAS / SEQLAB_KERNELS are read before `train` writes anything: exit 1, one line, no folder."""
    for name, choices in (("SEQLAB_BLAS", "auto, numpy, mkl"), ("SEQLAB_KERNELS", "auto, numpy, numba")):
        out = tmp_path / name
        proc = subprocess.run([sys.executable, "-m", "seqlab", "train", "toy-classifier", "--out", str(out)],
                              capture_output=True, timeout=120, env={**ENV, name: "fast"})
        err = proc.stderr.decode()
        assert proc.returncode == 1 and err == f"error: {name}='fast': expected one of {choices}\n", err
        assert not out.exists()
