"""The harness: threads, alternating timing, the results section, the attention-long measurement, the CLI."""
from __future__ import annotations

import json
import statistics

import numpy as np
import pytest

from seqlab.bench import attention_long, harness
from seqlab.bench.report import HEADING, section
from seqlab.bench.result import BenchResult
from seqlab.cli.main import main, version_line


def test_set_threads_gives_torch_and_blas_the_same_count():
    import torch

    before = harness.blas_threads()
    try:
        assert harness.set_threads(1) == 1
        assert torch.get_num_threads() == 1
        if before is not None:
            assert harness.blas_threads() == 1
    finally:
        harness.set_threads(before)
    with pytest.raises(ValueError, match=">= 1"):
        harness.set_threads(0)


def test_compare_alternates_and_reports_medians():
    calls = []
    t = harness.compare(lambda: calls.append("s"), lambda: calls.append("t"), rounds=4, warmup=1, min_time=0,
                        settle=0, wake=False)
    assert len(t.seqlab_all) == len(t.torch_all) == 4
    assert t.seqlab_s == float(np.median(t.seqlab_all)) and t.ratio > 0
    assert calls[:2] == ["s", "t"]  # warm-up, then one call each to size the rounds
    rounds = calls[4:]
    assert rounds == ["s", "t", "t", "s", "s", "t", "t", "s"]  # who goes first alternates


def test_results_section_replaces_itself_and_keeps_other_sections(tmp_path):
    info = harness.machine_info(1)
    r = BenchResult("gpt-train", "desc", ["benchmark", "seqlab ms", "torch ms", "seqlab / torch", "load"],
                    [["gpt-train", "10.0", "20.0", "0.50", "1.0 → 1.0"]], data={"seqlab_s": 0.01, "torch_s": 0.02})
    a = BenchResult("attention-long", "desc", ["T", "implementation", "peak"], [[64, "seqlab plain", "1.0"]])
    base = tmp_path / "base.json"
    base.write_text(json.dumps({"runs": {"1": [
        {"name": "gpt-train", "data": {"seqlab_s": 0.03, "torch_s": 0.02, "seqlab_cpu_s": 0.02, "torch_cpu_s": 0.02}},
        {"name": "attention-long", "data": {"cells": [{"T": 64, "impl": "seqlab plain", "peak_rss_bytes": 2 ** 21,
                                                       "seconds": 0.5}]}}]}}))
    path = tmp_path / "results.md"
    path.write_text("# Results\n\n## Ops: seqlab vs PyTorch\n\nops table\n")
    body = section({1: [r, a]}, info, "seqlab bench gpt-train", baseline=base, gpu_note="no GPU")
    harness.write_section(path, HEADING, body)
    harness.write_section(path, HEADING, body)  # twice: replaced, not appended
    text = path.read_text()
    assert text.count(f"## {HEADING}") == 1 and "ops table" in text
    assert "| gpt-train | 10.0 | 20.0 | 0.50 |" in text and "30.0 ms, 1.50 (1.00)" in text  # the before column
    assert "| 64 | seqlab plain | 1.0 | 2.0 MiB, 0.50 s |" in text
    assert info["cpu"] in text and "no GPU" in text and "seqlab bench gpt-train" in text
    if info["numpy_blas_kernels"]:  # the machine line says which OpenBLAS kernels ran
        assert f"({info['numpy_blas']}: {info['numpy_blas_kernels']})" in text
    older = {k: v for k, v in info.items() if k != "numpy_blas_kernels"}  # records from before the key
    assert f"({info['numpy_blas']})," in section({1: [r]}, older, "seqlab bench gpt-train")


def test_write_section_rebuilds_the_pages_contents(tmp_path):
    path = tmp_path / "results.md"
    path.write_text(f"# Results\n\nintro\n\n{harness.CONTENTS_BEGIN}\nstale\n{harness.CONTENTS_END}\n\n"
                    "## Training runs\n\n### gpt\n\n```bash\n## not a heading\n```\n\n"
                    "## A change measured (2026-12-07, AMD EPYC)\n\n### its part\n\n"
                    "## Training runs (2026-12-01)\n\nolder\n")
    harness.write_section(path, HEADING, "the table")
    text = path.read_text()
    block = text[text.index(harness.CONTENTS_BEGIN):text.index(harness.CONTENTS_END)]
    standing, dated = block.split("**Dated notes**")
    assert "stale" not in block and "not a heading" not in block
    assert standing.index("- [Training runs](#training-runs)") < standing.index("  - [gpt](#gpt)") \
        < standing.index(f"- [{HEADING}](#{harness.heading_id(HEADING)})")  # appended sections listed as well
    assert "- [A change measured (2026-12-07, AMD EPYC)](#a-change-measured-2026-12-07-amd-epyc)" in dated
    assert "its part" not in block  # a dated note's parts stay out of the list
    assert dated.index("(2026-12-07") < dated.index("(#training-runs-2026-12-01)")
    assert harness.with_contents(text) == text  # rebuilt once, then stable
    assert "intro" in text and text.count(harness.CONTENTS_BEGIN) == 1


def test_contents_numbers_a_repeated_heading_as_github_does():
    text = "# Results\n\n## Runs\n\n### 1 thread\n\n## Runs\n\n### 1 thread\n"
    links = harness.contents(text)
    assert "[Runs](#runs)" in links and "[Runs](#runs-1)" in links
    assert "[1 thread](#1-thread)" in links and "[1 thread](#1-thread-1)" in links
    assert "Dated notes" not in links  # no dated note, no second list


def test_openblas_kernels_names_the_kernels_and_the_variable_set_for_them():
    import os
    import re

    from seqlab import blas

    text = blas.openblas_kernels()
    libraries = blas.loaded_blas_libraries()
    if not any("openblas" in p for p in libraries):
        assert text is None
        return
    assert "numpy" in libraries[0].lower()  # NumPy's own library is the one asked (its wheels: numpy.libs)
    assert re.fullmatch(r"OpenBLAS \d+\.\d+\.\d+, \w+ kernels(, under OPENBLAS_CORETYPE=\S+)?", text), text
    forced = os.environ.get("OPENBLAS_CORETYPE")  # read, never changed: this environment's choice, if any
    reads_it = "DYNAMIC_ARCH" in (blas._c_string(blas._OPENBLAS_CONFIG) or "")
    assert text.endswith(f", under OPENBLAS_CORETYPE={forced}") if forced and reads_it else "under" not in text
    if forced and forced.lower() in ("haswell", "skylakex", "sandybridge"):  # names OpenBLAS reports as given
        assert text.split(", ")[1].lower() == f"{forced.lower()} kernels"
    assert f"({text})" in version_line()  # `seqlab --version` says it too


def test_recorded_commands_carry_the_openblas_variables_they_ran_under(tmp_path, capsys):
    assert harness.blas_env_prefix({"PATH": "/bin"}) == ""
    assert harness.blas_env_prefix({"OPENBLAS_CORETYPE": "Haswell"}) == "OPENBLAS_CORETYPE=Haswell "
    assert harness.blas_env_prefix({"OPENBLAS_CORETYPE": "a b"}) == "OPENBLAS_CORETYPE='a b' "  # shell-quoted
    both = {"OPENBLAS_L2_SIZE": "512", "OPENBLAS_CORETYPE": "Haswell", "OPENBLAS_NUM_THREADS": "1"}
    assert harness.blas_env_prefix(both) == "OPENBLAS_CORETYPE=Haswell OPENBLAS_L2_SIZE=512 "
    # a run's JSON record starts its command with what this environment sets (read, not changed)
    record = tmp_path / "gemm.json"
    assert main(["bench", "gemm", "--threads", "1", "--repeats", "1", "--json", str(record)]) == 0
    capsys.readouterr()
    assert json.loads(record.read_text())["command"].startswith(harness.blas_env_prefix() + "seqlab bench")


@pytest.mark.parametrize("impl", attention_long.IMPLS)
def test_attention_long_measures_every_implementation(impl):
    r = attention_long.measure(impl, 128, heads=2, dim=16, repeats=1)
    assert r["seconds"] > 0 and r["T"] == 128
    assert (r["tracemalloc_peak_bytes"] is not None) == impl.startswith("seqlab")
    if r["tracemalloc_peak_bytes"] is not None:  # at least the output and the three gradients
        assert r["tracemalloc_peak_bytes"] >= 4 * 2 * 128 * 16 * 4


def test_cli_rejects_unknown_benchmarks_and_bad_threads(capsys):
    assert main(["bench", "nope"]) == 2  # usage mistakes exit 2
    assert "unknown benchmark 'nope'" in capsys.readouterr().err
    assert main(["bench", "gemm", "--threads", "x"]) == 2
    assert "--threads" in capsys.readouterr().err
    assert main(["bench", "gemm", "--profile"]) == 2
    assert "--profile needs a model benchmark" in capsys.readouterr().err


def test_cli_profile_without_names_profiles_the_model_benchmarks(monkeypatch, capsys):
    """`seqlab bench --profile` alone profiles every model benchmark and leaves out gemm (no ops to profile)."""
    import seqlab.bench.profiling as profiling
    import seqlab.bench.runner as runner

    seen = []

    class Table:
        def table(self, per):
            return "table"

    monkeypatch.setattr(runner, "profile_target", lambda name, data_dir=None: seen.append(name) or (None, None))
    monkeypatch.setattr(profiling, "profile_step", lambda step, steps, clock: (Table(), steps))
    monkeypatch.setattr(runner, "set_threads", lambda n=None: 1, raising=False)
    assert main(["bench", "--profile", "--threads", "1"]) == 0
    assert seen == [n for n in runner.RUNNERS if n != "gemm"]


def test_cli_rebuilds_the_results_section_from_a_json_record(tmp_path, capsys):
    from seqlab.bench.report import to_json

    r = BenchResult("gpt-train", "one iteration", ["benchmark", "seqlab ms", "torch ms", "seqlab / torch"],
                    [["gpt-train", "9.0", "10.0", "0.90"]], ["a note"], {"seqlab_s": 0.009, "torch_s": 0.01})
    record = tmp_path / "run.json"
    record.write_text(json.dumps(to_json({1: [r]}, harness.machine_info(1), "seqlab bench gpt-train")))
    md = tmp_path / "results.md"
    assert main(["bench", "--from-json", str(record), "--results", str(md)]) == 0
    assert "| gpt-train | 9.0 | 10.0 | 0.90 |" in capsys.readouterr().out
    text = md.read_text()
    assert "Command: `seqlab bench gpt-train`" in text and "a note" in text and "one iteration" in text


def test_targets_table_compares_each_figure_with_the_issue_goal():
    from seqlab.bench.report import targets

    rs = [BenchResult("encoder-train", "", ["benchmark"], [], data={"seqlab_s": 0.7, "torch_s": 1.0, "flops": 70e9,
                                                                     "numpy_gemm_flops_per_s": 100e9}),
          BenchResult("bert-infer", "", ["benchmark"], [], data={"seqlab_s": 1.1, "torch_s": 1.0}),
          BenchResult("attention-long", "", ["T"], [], data={"cells": [
              {"T": 64, "impl": "seqlab efficient", "peak_rss_bytes": 2 ** 20},
              {"T": 64, "impl": "torch SDPA", "peak_rss_bytes": 2 ** 21}]})]
    text = targets(rs)
    assert "| encoder-train time | ≤ 0.80 × torch | 0.70 × torch | yes |" in text
    assert "| bert-infer time | ≤ 1.00 × torch | 1.10 × torch | no |" in text
    assert "| attention-long peak memory, T = 64 | seqlab efficient ≤ torch SDPA | 1.0 vs 2.0 MiB | yes |" in text
    assert "| encoder-train GFLOP/s | ≥ 80% of seqlab's GEMM rate | 100% | yes |" in text
    assert "gpt-train" not in text  # not run: no row
    rs[0].data["paired_gemm_fractions"] = [0.7, 0.9, 0.85]
    assert ("| encoder-train GFLOP/s | ≥ 80% of seqlab's GEMM rate | 100% (each round's step beside the GEMM in "
            "that round: median 85%, 70–90%) | yes |") in targets(rs)


def test_paired_fractions_time_the_step_and_the_gemm_in_the_same_round(monkeypatch):
    """A round's fraction is its own step's rate over its own GEMM rate: a machine twice as slow in one round
    (both timings) gives that round the same fraction as the others."""
    import time

    from seqlab.bench import gemm

    slow = {"on": False}

    def matmul(a, b, out=None):
        time.sleep(0.008 if slow["on"] else 0.004)

    steps = []

    def step():
        steps.append(1)
        slow["on"] = len(steps) == 2  # round 2 runs at half speed, its GEMM too
        time.sleep(0.06 if slow["on"] else 0.03)

    monkeypatch.setattr(gemm, "SHAPES", ((8, 8, 8),))
    monkeypatch.setattr(gemm, "matmul", matmul)
    f = gemm.flops(8, 8, 8)
    fractions = gemm.paired_fractions(step, step_flops=10 * f, rounds=3)
    assert len(steps) == 3 and len(fractions) == 3
    # each: (10 f / 30 ms) / (f / 4 ms) = 4/3, or (10 f / 60 ms) / (f / 8 ms) = 4/3 in the slow round; the
    # slow round paired with a fast round's GEMM would read 2/3, a fast one with the slow GEMM 8/3
    assert all(1.0 < x < 2.0 for x in fractions), fractions


def test_targets_table_gives_the_rounds_own_ratios():
    """Each round's ratio pairs the two libraries' times measured back to back: the table shows their range and
    how many met the goal, so a median that meets it by luck of the noise shows as such."""
    from seqlab.bench.report import targets

    d = {"seqlab_s": 0.8, "torch_s": 1.0, "seqlab_all": [0.7, 0.8, 0.9, 0.8], "torch_all": [1.0, 1.0, 1.0, 0.8]}
    text = targets([BenchResult("gpt-train", "", ["benchmark"], [], data=d)])
    assert "| gpt-train time | ≤ 0.80 × torch | 0.80 × torch (rounds 0.70–1.00, ≤ 0.80 in 2 of 4) | yes |" in text
    uneven = dict(d, torch_all=[1.0, 1.0, 1.0])  # not one pair per round: no range rather than a wrong one
    assert "| 0.80 × torch | yes |" in targets([BenchResult("gpt-train", "", ["benchmark"], [], data=uneven)])


def test_targets_table_gives_an_interval_for_the_ratio_from_five_rounds_on():
    """From 5 rounds on, the targets table gives a bootstrap interval for the ratio of the medians: a point
    where every round has the same ratio, a range around the median where the rounds scatter, the same range
    for the same record every time (seeded)."""
    from seqlab.bench.report import ratio_interval, targets

    torch_all = [1.0, 1.3, 0.9, 1.1, 1.2, 1.0, 0.95]
    steady = [0.8 * t for t in torch_all]  # every round at 0.80, the absolute times moving
    lo, hi = ratio_interval(steady, torch_all)
    assert lo == pytest.approx(0.8) and hi == pytest.approx(0.8)
    noisy = [0.6, 1.1, 0.7, 0.95, 0.85, 0.9, 0.75]
    lo, hi = ratio_interval(noisy, torch_all)
    got = statistics.median(noisy) / statistics.median(torch_all)
    assert lo < got < hi and hi - lo > 0.05, (lo, got, hi)
    assert (lo, hi) == ratio_interval(noisy, torch_all)
    d = {"seqlab_s": statistics.median(noisy), "torch_s": statistics.median(torch_all), "seqlab_all": noisy,
         "torch_all": torch_all}
    text = targets([BenchResult("gpt-train", "", ["benchmark"], [], data=d)])
    assert f"(95% interval {lo:.2f}–{hi:.2f}; rounds " in text, text


@pytest.mark.parametrize("threads", [1, 2, None])
def test_the_python_api_gives_both_libraries_the_same_threads(monkeypatch, threads):
    """`seqlab.bench.run(name, threads=N)` (not only the CLI) sets N for NumPy's BLAS and torch before the
    benchmark runs, and passes the count on; without N both get the BLAS's own count."""
    import torch

    from seqlab.bench import runner
    from seqlab.bench.harness import blas_threads
    from seqlab.blas import set_blas_threads

    seen = {}

    def fake(**kwargs):
        seen.update(kwargs, blas=blas_threads(), torch=torch.get_num_threads())
        return BenchResult("gemm", "fake", ["x"], [[1]])

    monkeypatch.setitem(runner.RUNNERS, "gemm", fake)
    before_blas, before_torch = blas_threads(), torch.get_num_threads()
    try:
        set_blas_threads(2)
        torch.set_num_threads(1)  # mismatched on purpose
        runner.run("gemm", threads=threads, measure_memory=False)
    finally:
        set_blas_threads(before_blas or 1)
        torch.set_num_threads(before_torch)
    want = threads or 2
    assert seen["blas"] == seen["torch"] == seen["threads"] == want


def test_the_gemm_ceiling_is_the_best_timing_not_a_busy_one(monkeypatch):
    """encoder-train's share is measured against the best of the rounds: rounds slowed by a busy machine
    (here the first two of three, a majority) must not lower the ceiling."""
    import time

    from seqlab.bench import gemm

    calls = []

    def matmul(a, b, out=None):
        calls.append(1)
        time.sleep(0.02 if 1 < len(calls) <= 7 else 0.002)  # the warm-up, then rounds 1-2 slow, round 3 fast

    monkeypatch.setattr(gemm, "SHAPES", ((8, 8, 8),))
    monkeypatch.setattr(gemm, "matmul", matmul)
    wall, cpu = gemm.numpy_rates(rounds=3)
    assert len(calls) == 1 + 3 * 3
    # the fast round's (2 ms a call), not the median's (20 ms): the lower bound leaves a busy VM's sleep
    # five times its length
    assert gemm.flops(8, 8, 8) / 0.01 < wall <= gemm.flops(8, 8, 8) / 0.002
    assert cpu > 0
