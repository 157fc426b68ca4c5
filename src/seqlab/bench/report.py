"""The "Benchmarks: seqlab vs PyTorch" section of docs/results.md, built from benchmark results."""
from __future__ import annotations

import json
from pathlib import Path

from seqlab.bench.result import BenchResult

HEADING = "Benchmarks: seqlab vs PyTorch"

HOW_TO_READ = (
    "How to read it: every model benchmark builds the same model in seqlab and in PyTorch CPU eager, copies "
    "the same weights, feeds the same inputs, gives both the same number of threads (NumPy's OpenBLAS through "
    "its C setter, torch through `set_num_threads`) and alternates the two libraries in one process; the "
    "figures are medians and a ratio below 1 means seqlab is faster. The machine is shared with other jobs "
    "(load average shown next to each row), so absolute times move between runs; the ratio of the "
    "alternating medians is the figure of merit."
)


def to_json(results: dict[int, list[BenchResult]], info: dict, command: str) -> dict:
    return {"command": command, "machine": info,
            "runs": {str(n): [{"name": r.name, "rows": r.rows, "notes": r.notes, "data": r.data} for r in rs]
                     for n, rs in results.items()}}


def _baseline_ratios(path: Path | None) -> dict[tuple[str, str], str]:
    """(threads, benchmark) -> the seqlab / torch ratio recorded in an earlier `--json` file."""
    if path is None:
        return {}
    saved = json.loads(Path(path).read_text())
    out = {}
    for n, rs in saved["runs"].items():
        for r in rs:
            d = r["data"]
            if "seqlab_s" in d and "torch_s" in d:
                out[(n, r["name"])] = (f"{1e3 * d['seqlab_s']:.1f} ms, {d['seqlab_s'] / d['torch_s']:.2f}")
    return out


def section(results: dict[int, list[BenchResult]], info: dict, command: str, baseline: Path | None = None,
            gpu_note: str | None = None) -> str:
    """Markdown body of the section: command, machine, then one block per thread count."""
    before = _baseline_ratios(baseline)
    lines = [f"Command: `{command}`", "",
             f"Machine: {info['cpu']}, {info['cores']} cores; Python {info['python']}, NumPy {info['numpy']} "
             f"({info['numpy_blas']}), torch {info['torch']}; {info['date']}.", "", HOW_TO_READ, ""]
    for n, rs in results.items():
        lines += [f"### {n} thread{'s' if n != 1 else ''} for both libraries", ""]
        for r in rs:
            if before and r.headers[0] == "benchmark" and (str(n), r.name) in before:
                r = BenchResult(r.name, r.description, r.headers + ["before the optimisations (seqlab ms, ratio)"],
                                [row + [before[(str(n), r.name)]] for row in r.rows], r.notes, r.data)
            lines += [r.markdown(), ""]
    if gpu_note:
        lines += [gpu_note, ""]
    return "\n".join(lines)
