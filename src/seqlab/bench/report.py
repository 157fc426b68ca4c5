"""The "Benchmarks: seqlab vs PyTorch" section of docs/results.md, built from benchmark results."""
from __future__ import annotations

import json
import statistics
from pathlib import Path

import numpy as np

from seqlab.bench import memory
from seqlab.bench.harness import markdown_table, numpy_blas_text
from seqlab.bench.result import BenchResult

HEADING = "Benchmarks: seqlab vs PyTorch"
INTERVAL_MIN_ROUNDS = 5  # fewer rounds than this give no interval: resampling 4 values says little
_RESAMPLES = 2000  # draws of the rounds behind a ratio's interval (`ratio_interval`)
GPU_HEADING = f"{HEADING} on a GPU"

HOW_TO_READ = (
    "How to read it: every model benchmark builds the same model in seqlab and in PyTorch CPU eager, copies "
    "the same weights, feeds the same inputs, gives both the same number of threads (NumPy's OpenBLAS, and MKL "
    "where seqlab's products go to it, through their C setters; torch through `set_num_threads`) and "
    "alternates the two libraries in one process; the "
    "figures are medians and a ratio below 1 means seqlab is faster. The machine is shared with other jobs "
    "(load average shown next to each row), so absolute times move between runs; the ratio of the "
    "alternating medians is the figure of merit. The targets table also gives each round's own ratio (a round "
    "times the two back to back, under the same load): their range, and in how many rounds the goal held; and, "
    f"from {INTERVAL_MIN_ROUNDS} rounds on, a 95% interval for the ratio of the medians (the rounds resampled with "
    f"replacement {_RESAMPLES:,} times): how far the figure could move on another run under the same noise."
)

HOW_TO_READ_GPU = (
    "How to read it: each benchmark builds the same model in seqlab and in PyTorch with the same weights (copied "
    "on the CPU), then moves seqlab's model to the GPU with `.to(\"cuda\")` (CuPy arrays) and torch's with "
    "`.to(\"cuda\")` (CUDA eager, no `torch.compile`), and the inputs to each device. Both compute in float32 "
    "without TF32. Every timed step ends with a device synchronize (CuPy's and `torch.cuda.synchronize`), so "
    "the times are the GPU's work, not kernel launches; the two libraries alternate in one process and the "
    "figures are medians. A ratio below 1 means seqlab is faster; tokens/s is batch × sequence length (padding "
    "included) over the median step time."
)


def heading(device: str = "cpu", size: str = "default") -> str:
    """The results section of a run: `HEADING` for the CPU at the default sizes; GPU runs and other sizes
    have their own sections, so one run never overwrites another's."""
    if device == "cpu" and size == "default":
        return HEADING
    return f"{GPU_HEADING if device == 'cuda' else HEADING + ' on the CPU'}, size {size}"


def to_json(results: dict[int, list[BenchResult]], info: dict, command: str, device: str = "cpu",
            size: str = "default") -> dict:
    return {"command": command, "machine": info, "device": device, "size": size,
            "runs": {str(n): [{"name": r.name, "description": r.description, "headers": r.headers, "rows": r.rows,
                               "notes": r.notes, "data": r.data} for r in rs]
                     for n, rs in results.items()}}


def from_json(saved: dict) -> tuple[dict[int, list[BenchResult]], dict, str]:
    """(results by thread count, machine info, command) of a `to_json` record."""
    results = {int(n): [BenchResult(r["name"], r.get("description", ""), r["headers"], r["rows"], r["notes"],
                                    r["data"]) for r in rs]
               for n, rs in saved["runs"].items()}
    return results, saved["machine"], saved["command"]


def _baseline(path: Path | None) -> dict:
    """What an earlier `--json` file recorded, for a 'before' column.

    (threads, benchmark) -> "seqlab ms, wall ratio (CPU ratio)"; (threads, T, implementation) ->
    "peak MiB, seconds" for attention-long.
    """
    if path is None:
        return {}
    saved = json.loads(Path(path).read_text())
    out = {}
    for n, rs in saved["runs"].items():
        for r in rs:
            d = r["data"]
            if "seqlab_s" in d and "torch_s" in d:
                text = f"{1e3 * d['seqlab_s']:.1f} ms, {d['seqlab_s'] / d['torch_s']:.2f}"
                if d.get("seqlab_cpu_s") and d.get("torch_cpu_s"):
                    text += f" ({d['seqlab_cpu_s'] / d['torch_cpu_s']:.2f})"
                out[(n, r["name"])] = text
            for c in d.get("cells", []):
                if "T" in c and "impl" in c and c.get("peak_rss_bytes") is not None:
                    out[(n, c["T"], c["impl"])] = f"{c['peak_rss_bytes'] / 2 ** 20:.1f} MiB, {c['seconds']:.2f} s"
    return out


def _products(info: dict) -> str:
    """Where seqlab's matrix products and row kernels went in a run (records from before seqlab.mkl /
    seqlab.kernels: NumPy's BLAS / NumPy)."""
    products = info.get("seqlab_blas", "NumPy's BLAS")
    return f"seqlab's products on {products}, row kernels on {info.get('seqlab_kernels', 'NumPy')}"


def _baseline_says(path: Path) -> str:
    """What the 'before' columns are: the baseline run's own command, machine line and date."""
    saved = json.loads(Path(path).read_text())
    info = saved.get("machine", {})
    said = [f"`{saved['command']}`"] if saved.get("command") else []
    said += [str(info[key]) for key in ("cpu",) if key in info]
    said += [f"NumPy's {info['numpy_blas_kernels']}"] if info.get("numpy_blas_kernels") else []
    said += [_products(info)]
    said += [str(info["date"])] if "date" in info else []
    return f"the run recorded in {Path(path).as_posix()} ({'; '.join(said)})"


def _with_before(r: BenchResult, n: int, before: dict) -> BenchResult:
    if r.headers[0] == "benchmark" and (str(n), r.name) in before:
        return BenchResult(r.name, r.description, r.headers + ["before: seqlab ms, ratio (CPU)"],
                           [row + [before[(str(n), r.name)]] for row in r.rows], r.notes, r.data)
    if r.headers[0] == "T" and any((str(n), row[0], row[1]) in before for row in r.rows):
        return BenchResult(r.name, r.description, r.headers + ["before: peak, time"],
                           [row + [before.get((str(n), row[0], row[1]), "")] for row in r.rows], r.notes, r.data)
    return r


def ratio_interval(seqlab_all: list, torch_all: list, level: float = 0.95, seed: int = 0) -> tuple[float, float]:
    """A bootstrap interval for the ratio of the two medians: the rounds (each a pair timed back to back) drawn
    with replacement `_RESAMPLES` times, the ratio of the medians of each draw, and the middle `level` of those.
    It says how far the figure of merit could move on another run under the same noise. Seeded, so a run's
    record always gives the same interval."""
    s, t = np.asarray(seqlab_all, dtype=float), np.asarray(torch_all, dtype=float)
    picks = np.random.default_rng(seed).integers(0, len(s), size=(_RESAMPLES, len(s)))
    ratios = np.median(s[picks], axis=1) / np.median(t[picks], axis=1)
    lo, hi = np.quantile(ratios, [(1 - level) / 2, (1 + level) / 2])
    return float(lo), float(hi)


def _rounds(d: dict, goal: float) -> str:
    """How the ratio moved from round to round: each round times the two libraries back to back, so its
    ratio is a pair measured under the same load. " (95% interval 0.79–0.86; rounds 0.80–0.93, ≤ 0.80 in 2
    of 7)" (the interval from `ratio_interval`, given from `INTERVAL_MIN_ROUNDS` rounds on), or "" for a
    record without the rounds' times."""
    s, t = d.get("seqlab_all") or [], d.get("torch_all") or []
    if len(s) != len(t) or len(s) < 2:
        return ""
    pairs = [a / b for a, b in zip(s, t)]
    met = sum(r <= goal for r in pairs)
    spread = ""
    if len(s) >= INTERVAL_MIN_ROUNDS:
        lo, hi = ratio_interval(s, t)
        spread = f"95% interval {lo:.2f}–{hi:.2f}; "
    return f" ({spread}rounds {min(pairs):.2f}–{max(pairs):.2f}, ≤ {goal:.2f} in {met} of {len(pairs)})"


def targets(rs: list[BenchResult]) -> str:
    """The issue's targets against this run's figures, as a markdown table (wall-time ratios)."""
    by = {r.name: r.data for r in rs}
    rows = []
    for name, goal in (("encoder-train", 0.8), ("gpt-train", 0.8), ("bert-infer", 1.0)):
        d = by.get(name)
        if d and "seqlab_s" in d:
            got = d["seqlab_s"] / d["torch_s"]
            rows.append([f"{name} time", f"≤ {goal:.2f} × torch", f"{got:.2f} × torch{_rounds(d, goal)}",
                         "yes" if got <= goal else "no"])
    cells = by.get("attention-long", {}).get("cells", [])
    for T in sorted({c["T"] for c in cells if "T" in c}):
        peak = {c["impl"]: c.get("peak_rss_bytes") for c in cells if c.get("T") == T}
        ours, theirs = peak.get("seqlab efficient"), peak.get("torch SDPA")
        if ours is not None and theirs is not None:
            rows.append([f"attention-long peak memory, T = {T}", "seqlab efficient ≤ torch SDPA",
                         f"{ours / 2 ** 20:.1f} vs {theirs / 2 ** 20:.1f} MiB", "yes" if ours <= theirs else "no"])
    for name in memory.MODULES:
        mem = by.get(name, {}).get("memory", {})
        ours, theirs = (mem.get(side, {}).get("step_peak_bytes") for side in ("seqlab", "torch"))
        if ours is not None and theirs is not None:
            rows.append([f"{name} peak memory of a step", "≤ torch", f"{ours / 2 ** 20:.1f} vs {theirs / 2 ** 20:.1f} MiB",
                         "yes" if ours <= theirs else "no"])
    d = by.get("encoder-train")
    if d and "flops" in d:
        frac = d["flops"] / d["seqlab_s"] / d["numpy_gemm_flops_per_s"]
        paired = d.get("paired_gemm_fractions")
        seen = f"{100 * frac:.0f}%" + (  # and beside the GEMM in each round, where the record has it
            f" (each round's step beside the GEMM in that round: median {100 * statistics.median(paired):.0f}%, "
            f"{100 * min(paired):.0f}–{100 * max(paired):.0f}%)" if paired else "")
        rows.append(["encoder-train GFLOP/s", "≥ 80% of seqlab's GEMM rate", seen, "yes" if frac >= 0.8 else "no"])
    if not rows:
        return ""
    return "Targets of the issue, this run:\n\n" + markdown_table(["target", "goal", "measured", "met"], rows)


def tables(results: dict[int, list[BenchResult]], baseline: Path | None = None, before: dict | None = None) -> list[str]:
    """The CPU tables of `section`, one block per thread count: its heading, the targets, then each table
    with the baseline's 'before' column. What `seqlab bench --from-json` prints (lines of markdown)."""
    before = _baseline(baseline) if before is None else before
    lines = []
    for n, rs in results.items():
        lines += [f"### {n} thread{'s' if n != 1 else ''} for both libraries", ""]
        t = targets(rs)
        if t:
            lines += [t, ""]
        for r in rs:
            lines += [_with_before(r, n, before).markdown(), ""]
    return lines


def section(results: dict[int, list[BenchResult]], info: dict, command: str, baseline: Path | None = None,
            gpu_note: str | None = None, source: Path | None = None) -> str:
    """Markdown body of the section: command, machine, then one block per thread count (CPU) or the
    tables of a GPU run (`info["device"]` "cuda")."""
    if info.get("device") == "cuda":
        return _gpu_section(results, info, command)
    before = _baseline(baseline)
    lines = [f"Command: `{command}`", "",
             f"Machine: {info['cpu']}, {info['cores']} cores; Python {info['python']}, NumPy {info['numpy']} "
             f"({numpy_blas_text(info)}), {_products(info)}, torch {info['torch']}; {info['date']}.", "",
             HOW_TO_READ, ""]
    if before:
        lines += [f"The \"before\" columns: {_baseline_says(baseline)}. Rebuild this "
                  f"section from the saved runs, without running anything: `seqlab bench --from-json "
                  f"{Path(source).as_posix() if source else 'FILE'} "
                  f"--baseline {Path(baseline).as_posix()} --results docs/results.md`.", ""]
    lines += tables(results, baseline, before)
    if gpu_note:
        lines += [gpu_note, ""]
    return "\n".join(lines)


def _gpu_section(results: dict[int, list[BenchResult]], info: dict, command: str) -> str:
    tf32 = "on" if info.get("torch_matmul_fp32") == "tf32" or info.get("cupy_tf32", "0") != "0" else "off"
    lines = [f"Command: `{command}`", "",
             f"Machine: {info['gpu']} ({info['gpu_memory_gib']} GiB), CUDA driver {info['cuda_driver']}; "
             f"CuPy {info['cupy']} (CUDA runtime {info['cupy_cuda_runtime']}), torch {info['torch']} "
             f"(CUDA {info['torch_cuda']}), TF32 {tf32}; host {info['cpu']}, Python {info['python']}, "
             f"NumPy {info['numpy']}; {info['date']}.", "", HOW_TO_READ_GPU, ""]
    for rs in results.values():
        for r in rs:
            lines += [r.markdown(), ""]
    return "\n".join(lines)
