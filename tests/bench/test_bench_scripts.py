"""The scripts in benchmarks/: bad arguments and missing folders end in one `error:` line, never a traceback.

Each call is a subprocess of the script itself, as a user runs it; every bad call here must be refused
before any model is built or any timing starts, so the whole file takes a few seconds.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "benchmarks"
SCRIPTS = sorted(p.name for p in BENCH.glob("*.py") if p.name not in ("common.py", "_cli.py"))
MISSING = str(ROOT / "no-such-folder-for-seqlab-tests")


def run_script(script: str, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT / "src"), os.environ.get("PYTHONPATH")]))}
    env.pop("SEQLAB_DATA", None)
    return subprocess.run([sys.executable, str(BENCH / script), *args], capture_output=True, text=True,
                          env=env, cwd=ROOT, timeout=60)


BAD_ARGUMENTS = [  # (script, arguments, words the message must contain): exit code 2, argparse's usage + error
    ("ops.py", ["--only", "matmul", "--rounds", "0"], ["--rounds", ">= 1"]),
    ("ops.py", ["--only", "bogus"], ["bogus", "matmul", "attention (causal)"]),
    ("ops.py", ["--only", "matmul,bogus"], ["bogus"]),
    ("ops.py", ["--threads", "0"], ["--threads", ">= 1"]),
    ("ops.py", ["--threads", "abc"], ["--threads", "'abc'"]),
    ("ops.py", ["--threads", "1,0"], ["--threads"]),
    ("ops.py", ["--threads=-2"], ["--threads"]),
    ("batch_threads.py", ["--threads", "0"], ["--threads", ">= 1"]),
    ("batch_threads.py", ["--rounds", "x"], ["--rounds", "'x'"]),
    ("data_parallel_threads.py", ["gpt-train", "--threads", "0"], ["--threads", ">= 1"]),
    ("data_parallel_threads.py", ["bogus"], ["bogus", "encoder-train"]),
    ("padding_fast_path.py", ["--steps", "0"], ["--steps", ">= 1"]),
    ("distributed.py", ["--rounds", "0"], ["--rounds"]),
    ("distributed.py", ["--nproc", "0"], ["--nproc"]),
    ("distributed.py", ["--steps", "2", "--warmup", "2"], ["--steps", "--warmup"]),
    ("distributed.py", ["--warmup", "0"], ["--warmup"]),
    ("distributed.py", ["--steps", "-1"], ["--steps"]),
    ("distributed.py", ["--json", MISSING + "/out.json"], ["--json"]),
    ("shakespeare_train.py", ["--iters", "0"], ["--iters"]),
    ("shakespeare_train.py", ["--chunk", "0"], ["--chunk"]),
    ("shakespeare_train.py", ["--eval-iters", "0"], ["--eval-iters"]),
    ("shakespeare_train.py", ["--threads", "0"], ["--threads"]),
    ("shakespeare_train.py", ["--json", MISSING + "/out.json"], ["--json"]),
    ("step_time.py", ["gpt-train", "--steps", "0"], ["--steps"]),
    ("step_time.py", ["no-such-benchmark"], ["no-such-benchmark"]),
    ("gemm_in_step.py", ["gpt-train", "--steps", "0"], ["--steps"]),
    ("gemm_in_step.py", ["gpt-generate"], ["gpt-generate"]),
    ("kv_cache.py", ["--repeats", "0"], ["--repeats"]),
    ("kv_cache.py", ["--n-embd", "100", "--n-head", "3"], ["--n-embd", "--n-head"]),
    ("kv_cache.py", ["--n-layer", "0"], ["--n-layer"]),
    ("kv_cache.py", ["--json", MISSING + "/out.json"], ["--json"]),
    ("elementwise_threads.py", ["--repeats", "0"], ["--repeats"]),
    ("elementwise_threads.py", ["--bogus"], ["--bogus"]),
    ("engine_ab.py", ["gpt-train", "--rounds", "0"], ["--rounds", ">= 1"]),
    ("engine_ab.py", ["no-such-benchmark"], ["no-such-benchmark"]),
    ("engine_ab.py", ["gpt-train", "--switch", "gpu"], ["--switch", "gpu"]),
    ("row_kernels.py", ["--repeats", "0"], ["--repeats"]),
    ("blas_spin.py", ["--repeats", "0"], ["--repeats"]),
    ("attention_products.py", ["--shape", "32,4,64"], ["--shape", "B,H,T,D"]),
    ("attention_products.py", ["--shape", "32,4,0,64"], ["--shape", ">= 1"]),
    ("attention_products.py", ["--repeats", "0"], ["--repeats"]),
    ("short_attention.py", ["--shape", "12,4,64"], ["--shape", "B,H,T,D"]),
    ("short_attention.py", ["--rounds", "0"], ["--rounds", ">= 1"]),
    ("short_attention.py", ["--dropout", "1.5"], ["--dropout", "[0, 1)"]),
    ("linear_products.py", ["--layers", "128x"], ["--layers", "''"]),
    ("linear_products.py", ["--layers", "128"], ["--layers", "IN x OUT"]),
    ("linear_products.py", ["--layers", "128x0"], ["--layers", ">= 1"]),
    ("linear_products.py", ["--rows", "0"], ["--rows", ">= 1"]),
    ("linear_products.py", ["--calls", "0"], ["--calls", ">= 1"]),
]

RUNTIME_ERRORS = [  # (script, arguments, words): exit code 1, one `error:` line
    ("step_time.py", ["bert-infer", "--steps", "1", "--data-dir", MISSING], [MISSING]),
    ("engine_ab.py", ["bert-infer", "--data-dir", MISSING], [MISSING]),
    ("gemm_in_step.py", ["bert-infer", "--data-dir", MISSING], [MISSING]),
    ("distributed.py", ["--data-dir", MISSING], [MISSING]),
    ("padding_fast_path.py", ["--data-dir", MISSING], [MISSING]),
    ("shakespeare_train.py", ["--data-dir", MISSING], [MISSING, "tinyshakespeare"]),
]


def error_lines(stderr: str) -> list[str]:
    assert "Traceback" not in stderr, stderr
    return [line for line in stderr.splitlines() if "error:" in line]


@pytest.mark.parametrize("script,args,words", BAD_ARGUMENTS, ids=[f"{s} {' '.join(a)}" for s, a, _ in BAD_ARGUMENTS])
def test_bad_arguments_exit_2_with_one_error_line(script, args, words):
    proc = run_script(script, *args)
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    (line,) = error_lines(proc.stderr)
    assert line.startswith(f"{script}: error: ")
    for word in words:
        assert word in line, (word, line)
    assert proc.stdout == ""


@pytest.mark.parametrize("script,args,words", RUNTIME_ERRORS, ids=[f"{s} {' '.join(a)}" for s, a, _ in RUNTIME_ERRORS])
def test_missing_data_folder_exits_1_with_one_error_line(script, args, words):
    proc = run_script(script, *args)
    assert proc.returncode == 1, (proc.returncode, proc.stderr)
    assert proc.stderr.startswith("error: ") and proc.stderr.count("\n") == 1, proc.stderr
    for word in words:
        assert word in proc.stderr, (word, proc.stderr)


@pytest.mark.parametrize("script,args", [("gemm.py", ["--repeats", "0"]), ("gpt_train.py", ["--threads", "abc"]),
                                         ("attention_long.py", ["--threads", "0"])], ids=["gemm", "gpt_train", "attn"])
def test_seqlab_bench_wrappers_refuse_bad_values_in_one_line(script, args):
    """The one-benchmark wrappers hand their arguments to `seqlab bench`, which checks them (exit 1)."""
    proc = run_script(script, *args)
    assert proc.returncode != 0, proc.stdout
    assert len(error_lines(proc.stderr)) == 1, proc.stderr


@pytest.mark.parametrize("script", SCRIPTS)
def test_help_exits_0(script):
    proc = run_script(script, "--help")
    assert proc.returncode == 0, proc.stderr
    assert "usage:" in proc.stdout and "Traceback" not in proc.stderr


def test_the_scripts_are_all_covered():
    """A new script in benchmarks/ gets its --help checked above; this keeps the list of known ones honest."""
    assert {"ops.py", "distributed.py", "shakespeare_train.py", "step_time.py", "kv_cache.py",
            "elementwise_threads.py", "gemm.py", "bert_infer.py", "engine_ab.py", "row_kernels.py",
            "blas_spin.py", "attention_products.py", "gemm_in_step.py", "linear_products.py"} <= set(SCRIPTS)


def test_gemm_in_step_splits_the_step_into_products_and_the_rest():
    """One gpt-train step: its products timed where they run and again alone; the parts add up to the step."""
    proc = run_script("gemm_in_step.py", "gpt-train", "--steps", "2", "--warmup", "1", "--detail")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    step = float(out.split("seqlab step ")[1].split(" ms")[0])
    inside = float(out.split("products inside the step ")[1].split(" ms")[0])
    rest = float(out.split("the rest of the step ")[1].split(" ms")[0])
    assert 0 < inside < step and abs(step - inside - rest) < 0.15, out
    rows = [line for line in out.splitlines() if line.strip()[:1].isdigit()]
    products = sum(int(r.split()[3]) * (2 if r.endswith("(paired)") else 1) for r in rows)
    assert rows and products == int(out.split("(")[1].split(" products")[0]), out
    assert any(r.endswith("(paired)") for r in rows), "Linear's backward products (dx and dW in one call) counted"


def test_attention_products_times_the_six_products_and_agrees_with_torch():
    """The script checks each product against torch.matmul before timing it; a tiny shape runs in seconds."""
    proc = run_script("attention_products.py", "--shape", "2,3,8,4", "--repeats", "1")
    assert proc.returncode == 0, proc.stderr
    rows = [line for line in proc.stdout.splitlines() if line.startswith("| ") and "µs" not in line
            and not line.startswith("| ---")]
    assert len(rows) == 7, proc.stdout
    for row in rows[:6]:  # seqlab µs, GFLOP/s, torch µs and the ratio all present (a tiny shape's rate rounds to 0)
        seqlab_us, rate, torch_us, ratio = (float(c) for c in row.strip("|").split("|")[2:])
        assert seqlab_us > 0 and rate >= 0 and torch_us > 0 and ratio > 0, row


def test_attention_products_with_jit_times_mkls_kernels_too():
    """--jit: each product also by MKL's JIT kernel per matrix, checked against torch before it is timed."""
    from seqlab import kernels, mkl

    if mkl.mkl_path() is None or kernels.library() != "numba":
        pytest.skip("needs MKL and Numba (the test extra installs both on Linux x86-64)")
    proc = run_script("attention_products.py", "--shape", "2,3,8,4", "--repeats", "1", "--jit")
    assert proc.returncode == 0, proc.stderr
    rows = [line.strip("|").split("|") for line in proc.stdout.splitlines()
            if line.startswith("| ") and "µs" not in line and not line.startswith("| ---")]
    assert len(rows) == 7 and all(len(r) == 8 for r in rows), proc.stdout
    for row in rows[:6]:
        jit_us, ratio = float(row[6]), float(row[7])
        assert jit_us > 0 and ratio > 0, row


def test_linear_products_times_three_products_a_layer_and_sums_them():
    """Each layer's forward, dx and dW, checked against torch.mm before timing; the last line sums the rows."""
    proc = run_script("linear_products.py", "--rows", "8", "--layers", "4x6,3x2", "--rounds", "1", "--calls", "1")
    assert proc.returncode == 0, proc.stderr
    rows = [line.strip("|").split("|") for line in proc.stdout.splitlines()
            if line.startswith("| ") and "µs" not in line and not line.startswith("| ---")]
    assert [r[1].strip() for r in rows[:-1]] == ["y = x·Wᵀ", "dx = g·W", "dW = gᵀ·x"] * 2, proc.stdout
    seqlab_us = [float(r[2]) for r in rows[:-1]]
    torch_us = [float(r[4]) for r in rows[:-1]]
    assert all(t > 0 for t in seqlab_us + torch_us), proc.stdout
    total = rows[-1]
    assert total[0].strip() == "all" and abs(float(total[2]) - sum(seqlab_us)) <= 6, proc.stdout  # rows rounded


def test_short_attention_times_both_paths_and_says_where_it_does_not_apply():
    """One table row per shape, both sides timed; a shape the compiled path declines (no mask) says so."""
    pytest.importorskip("numba")
    for args, label in ((["--mask", "causal"], "causal"), (["--mask", "padding", "--dropout", "0.1"],
                                                           "padding, dropout 0.1"),
                        (["--mask", "causal", "--cold"], "causal")):
        proc = run_script("short_attention.py", "--shape", "2,2,40,16", *args, "--repeats", "1", "--rounds", "1")
        assert proc.returncode == 0, proc.stderr
        row = proc.stdout.strip().splitlines()[-1].split("|")
        assert row[1].strip() == "2, 2, 40, 16" and row[2].strip() == label, proc.stdout
        assert all(float(t) > 0 for t in row[3].split("/") + row[5].split("/")), proc.stdout
    proc = run_script("short_attention.py", "--shape", "2,2,40,16", "--repeats", "1", "--rounds", "1")  # no mask
    assert proc.returncode == 0 and "does not take this shape" in proc.stdout, proc.stdout + proc.stderr


@pytest.mark.parametrize("switch, sides", [("fused-ff", ["on ops", "on one op (F.bias_act_dropout)", "(fused)"]),
                                           ("short-attention", ["on batched ", "on a head at a time", "(heads)"])])
def test_engine_ab_one_thread_switches_time_both_sides(switch, sides):
    """--switch fused-ff alternates the feed-forward's three ops and F.bias_act_dropout, short-attention the
    batched products and the compiled heads (gpt-train: small)."""
    pytest.importorskip("numba")
    proc = run_script("engine_ab.py", "gpt-train", "--switch", switch, "--rounds", "1", "--steps", "1")
    assert proc.returncode == 0, proc.stderr
    medians, paired = proc.stdout.strip().splitlines()[-2:]
    assert all(side in medians for side in sides), medians
    assert paired.startswith("paired by round:") and paired.endswith("of 1 rounds"), paired


@pytest.mark.parametrize("switch, sides", [
    ("min-parallel", ["on 2^15", "(2^19)", "parallel twins from 524,288 values"]),
    ("small-batches", ["on numpy", "on MKL's batched GEMM", "(mkl)"]),
    ("gemm-split", ["on openblas", "on parts on the kernels' pool", "(pool)"])])
def test_engine_ab_threading_switches_time_both_sides(switch, sides):
    """--switch min-parallel / small-batches / gemm-split alternate their two settings on two threads (gpt-train:
    small), and the last line pairs them round by round."""
    pytest.importorskip("numba")
    if switch == "small-batches":
        from seqlab import mkl
        if mkl.mkl_path() is None:
            pytest.skip("MKL is not installed")
    proc = run_script("engine_ab.py", "gpt-train", "--switch", switch, "--threads", "2", "--rounds", "2",
                      "--steps", "1")
    assert proc.returncode == 0, proc.stderr
    medians, paired = proc.stdout.strip().splitlines()[-2:]
    assert all(side in medians for side in sides), medians
    assert paired.startswith("paired by round:") and paired.endswith("of 2 rounds"), paired
