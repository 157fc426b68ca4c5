"""General figures: line plots of experiment results and training curves.

Matplotlib is imported inside the functions and drives the Agg canvas
directly (no pyplot, no global state); every function writes one PNG and
returns its path.
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from seqlab.viz._inputs import VizError

# Keys of a metrics.jsonl row that are never plotted as a series.
_NON_SERIES = {"step", "epoch", "time", "elapsed", "wall", "lr", "split", "phase", "tokens", "examples"}


def _figure(width: float, height: float) -> Any:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), dpi=100, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def _save(fig: Any, path: str | Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    return path


def _xy(name: str, xs: Any, ys: Any) -> tuple[np.ndarray, np.ndarray]:
    x = np.asarray(xs, dtype=np.float64).reshape(-1)
    y = np.asarray(ys, dtype=np.float64).reshape(-1)
    if x.shape != y.shape:
        raise VizError(f"series {name!r} has {x.size} x values but {y.size} y values")
    return x, y


def line_plot(series: Mapping[str, tuple[Any, Any]], path: str | Path, title: str = "",
              xlabel: str = "", ylabel: str = "", logy: bool = False) -> Path:
    """Plot named (xs, ys) series as lines with markers on one axis; write a PNG.

    ``series``: name -> (xs, ys), each 1-D and of equal length.
    ``logy``: log-scale y axis (every y must then be positive).
    """
    if not series:
        raise VizError("line_plot needs at least one series, got none")
    data = {name: _xy(name, *xy) for name, xy in series.items()}
    if logy:
        for name, (_, y) in data.items():
            if y.size and np.nanmin(y) <= 0:
                raise VizError(f"series {name!r} has a non-positive value {np.nanmin(y):.4g} but logy=True")
    fig = _figure(7.0, 4.5)
    ax = fig.add_subplot()
    for name, (x, y) in data.items():
        ax.plot(x, y, marker="o" if x.size <= 30 else None, markersize=4, linewidth=1.6, label=str(name))
    if logy:
        ax.set_yscale("log")
    ax.set(title=title, xlabel=xlabel, ylabel=ylabel)
    ax.grid(True, alpha=0.3)
    ax.legend(frameon=False)
    return _save(fig, path)


def bar_plot(values: Mapping[str, float], path: str | Path, title: str = "", ylabel: str = "",
             fmt: str = "{:,.0f}") -> Path:
    """One labelled bar per name -> value (finite, >= 0), each with its value printed on top; write a PNG."""
    if not values:
        raise VizError("bar_plot needs at least one value, got none")
    names = [str(k) for k in values]
    ys = np.asarray(list(values.values()), dtype=np.float64)
    if not np.all(np.isfinite(ys)) or np.any(ys < 0):
        raise VizError(f"bar_plot needs finite values >= 0, got {dict(zip(names, ys.tolist()))}")
    fig = _figure(max(5.0, 1.1 * len(names) + 1.5), 4.0)
    ax = fig.add_subplot()
    bars = ax.bar(names, ys, color="#4C72B0")
    ax.bar_label(bars, labels=[fmt.format(y) for y in ys], padding=2, fontsize=9)
    ax.set(title=title, ylabel=ylabel)
    ax.set_ylim(0, ys.max() * 1.15 if ys.max() > 0 else 1)
    ax.grid(True, axis="y", alpha=0.3)
    return _save(fig, path)


def _series_name(row: Mapping[str, Any], key: str) -> str:
    split = row.get("split", row.get("phase"))
    if isinstance(split, str) and not key.startswith(split):
        return f"{split}_{key}"
    return key


def training_curves(metrics_rows: Sequence[Mapping[str, Any]], path: str | Path,
                    title: str = "") -> Path:
    """Loss (left) and accuracy (right) against step, from metrics.jsonl rows.

    Each row is a dict such as ``{"step": 100, "loss": 0.7, "val_acc": 0.8}``;
    the x value is ``step`` (else ``epoch``, else the row number). Every
    numeric key containing "loss" is a loss series and every key containing
    "acc" an accuracy series; rows without a key are skipped for that series,
    so train and eval rows may be interleaved. A ``split``/``phase`` string
    prefixes the series name ("val_loss").
    """
    if not metrics_rows:
        raise VizError("training_curves needs at least one metrics row, got none")
    curves: dict[str, dict[str, tuple[list[float], list[float]]]] = {"loss": {}, "acc": {}}
    for n, row in enumerate(metrics_rows):
        x = row.get("step", row.get("epoch", n))
        for key, value in row.items():
            if key in _NON_SERIES or isinstance(value, bool) or not isinstance(value, (int, float)):
                continue
            if not math.isfinite(value):
                continue
            kind = "loss" if "loss" in key else "acc" if "acc" in key else None
            if kind:
                xs, ys = curves[kind].setdefault(_series_name(row, key), ([], []))
                xs.append(float(x))
                ys.append(float(value))
    if not curves["loss"] and not curves["acc"]:
        raise VizError("no loss or accuracy values in the metrics rows "
                       f"(keys of the first row: {sorted(metrics_rows[0])})")
    xname = next((k for k in ("step", "epoch") if any(k in r for r in metrics_rows)), "row")
    fig = _figure(11.0, 4.2)
    axes = fig.subplots(1, 2)
    for ax, kind, label in ((axes[0], "loss", "loss"), (axes[1], "acc", "accuracy")):
        for name, (xs, ys) in sorted(curves[kind].items()):
            ax.plot(xs, ys, marker="o" if len(xs) <= 30 else None, markersize=3, linewidth=1.5, label=name)
        if curves[kind]:
            ax.legend(frameon=False)
        else:
            ax.text(0.5, 0.5, f"no {label} recorded", ha="center", va="center", transform=ax.transAxes,
                    color="0.5")
        ax.set(xlabel=xname, ylabel=label, title=label)
        ax.grid(True, alpha=0.3)
    if title:
        fig.suptitle(title)
    return _save(fig, path)
