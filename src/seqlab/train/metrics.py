"""Metrics of a run: the metrics.jsonl log, the best-metric tracker, accuracy, and the curves PNG."""
from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

import numpy as np

METRICS_FILE = "metrics.jsonl"
CURVES_FILE = "curves.png"


def _clean(value: Any) -> Any:
    """JSON has no NaN or infinity: they become null (the row keeps its other values)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, (np.floating, np.integer)):
        return _clean(value.item())
    return value


class MetricsLog:
    """Append-only RUN_DIR/metrics.jsonl: one JSON object per line, each with a "step"."""

    def __init__(self, run_dir: Path, enabled: bool = True):
        self.path = Path(run_dir) / METRICS_FILE
        self.enabled = enabled

    def append(self, row: dict[str, Any]) -> None:
        if not self.enabled:
            return
        line = json.dumps({k: _clean(v) for k, v in row.items()}, sort_keys=False)
        with open(self.path, "a", encoding="utf-8") as f:
            f.write(line + "\n")

    def rows(self) -> list[dict[str, Any]]:
        return read_metrics(self.path)

    def truncate_after(self, step: int) -> None:
        """Drop rows logged after `step` (they belong to steps a resumed run will redo)."""
        if not self.enabled or not self.path.exists():
            return
        from seqlab.train.checkpoint import write_bytes_atomic

        keep = [r for r in read_metrics(self.path) if int(r.get("step", 0)) <= step]
        write_bytes_atomic(self.path, "".join(json.dumps(r) + "\n" for r in keep).encode("utf-8"))


def read_metrics(path: Path) -> list[dict[str, Any]]:
    """Rows of a metrics.jsonl; a torn last line (a kill during a write) is skipped."""
    path = Path(path)
    if not path.exists():
        return []
    rows = []
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(row, dict):
            rows.append(row)
    return rows


def train_losses(rows: Iterable[dict[str, Any]]) -> dict[int, float]:
    """step -> training loss from metrics rows (not the evaluation or event rows)."""
    return {int(r["step"]): r["loss"] for r in rows if "loss" in r and not r.get("eval") and "event" not in r}


def accuracy(predictions: Any, labels: Any) -> float:
    p, y = np.asarray(predictions).reshape(-1), np.asarray(labels).reshape(-1)
    if p.shape != y.shape:
        raise ValueError(f"{p.size} predictions but {y.size} labels")
    if p.size == 0:
        raise ValueError("accuracy of zero examples is undefined")
    return float((p == y).mean())


@dataclass
class BestTracker:
    """The best value of one evaluation metric, and how many evaluations ago it was seen.

    Early stopping (Prechelt, 1998): stop after `patience` evaluations without
    improvement; patience 0 never stops.
    """

    metric: str
    mode: str = "min"
    patience: int = 0
    best: float | None = None
    best_step: int | None = None
    bad_evals: int = 0

    def update(self, step: int, results: dict[str, float]) -> bool:
        """Record an evaluation; True when it is the best so far."""
        if self.metric not in results:
            from seqlab.errors import ConfigError

            raise ConfigError(f"metric {self.metric!r} is not among the evaluation's results "
                              f"({', '.join(sorted(results))}); set metric= to one of them")
        value = float(results[self.metric])
        better = math.isfinite(value) and (self.best is None or
                                           (value < self.best if self.mode == "min" else value > self.best))
        if better:
            self.best, self.best_step, self.bad_evals = value, step, 0
        else:
            self.bad_evals += 1
        return better

    @property
    def should_stop(self) -> bool:
        return self.patience > 0 and self.bad_evals >= self.patience

    def state_dict(self) -> dict[str, Any]:
        return {"best": self.best, "best_step": self.best_step, "bad_evals": self.bad_evals}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.best, self.best_step, self.bad_evals = state.get("best"), state.get("best_step"), state.get("bad_evals", 0)


def plot_curves(run_dir: Path, title: str = "") -> Path | None:
    """Loss and accuracy curves of metrics.jsonl as RUN_DIR/curves.png (None if nothing to plot)."""
    run_dir = Path(run_dir)
    rows = [r for r in read_metrics(run_dir / METRICS_FILE) if "event" not in r]
    if not rows:
        return None
    try:
        from seqlab.viz.plots import training_curves
    except ImportError:  # pragma: no cover - the viz layer is optional for training
        return _plot_curves_plain(rows, run_dir / CURVES_FILE, title)
    return training_curves(rows, run_dir / CURVES_FILE, title=title)


def _plot_curves_plain(rows: list[dict[str, Any]], path: Path, title: str) -> Path:  # pragma: no cover
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(10, 4))
    FigureCanvasAgg(fig)
    for ax, kind in zip(fig.subplots(1, 2), ("loss", "acc")):
        keys = sorted({k for r in rows for k, v in r.items() if kind in k and isinstance(v, (int, float))})
        for k in keys:
            pts = [(r["step"], r[k]) for r in rows if isinstance(r.get(k), (int, float))]
            ax.plot(*zip(*pts), label=k)
        ax.set_xlabel("step")
        ax.set_title(kind)
        if keys:
            ax.legend()
    fig.suptitle(title)
    fig.savefig(path)
    return path
