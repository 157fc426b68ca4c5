"""Helpers for the `seqlab attention` tests: run the CLI in-process, read what it wrote."""
from __future__ import annotations

import contextlib
import io
import json
import re
from pathlib import Path

import numpy as np


def run_cli(*argv: str) -> tuple[int, str, str]:
    """`seqlab attention ARGV` in this process: (exit code, stdout, stderr)."""
    from seqlab.cli.main import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["attention", *argv])
    return code, out.getvalue(), err.getvalue()


def viewer_data(html_path: Path) -> dict:
    """The JSON the viewer embeds in attention.html (weights in units of data['scale'])."""
    text = html_path.read_text(encoding="utf-8")
    m = re.search(r'<script type="application/json" id="seqlab-data">(.*?)</script>', text, re.S)
    assert m, "attention.html holds no seqlab-data script"
    return json.loads(m.group(1))


def stack_weights(data: dict, stack_id: str) -> np.ndarray:
    """One stack of the viewer's data as a float (L, H, T_q, T_k) array."""
    entry = next(s for s in data["stacks"] if s["id"] == stack_id)
    return np.asarray(entry["attn"], dtype=np.float64) * data["scale"]


def panel_counts(png: Path, min_run: int = 30) -> tuple[int, int, int]:
    """(rows, columns, widest panel in pixels) of the heatmap panels in a PNG grid.

    Heatmap pixels are viridis colours, all strongly saturated; the page,
    text and tick marks are white or grey. Along each pixel row, count the
    saturated runs at least `min_run` pixels long (panels; the colour bar is
    narrower): the most found on any row is the number of panel columns, and
    likewise down the pixel columns for the panel rows.
    """
    from matplotlib.image import imread

    img = imread(str(png))[..., :3]  # (H, W, 3) floats in [0, 1]
    colored = (img.max(-1) - img.min(-1)) > 0.15  # (H, W)

    def runs(mask: np.ndarray) -> tuple[int, int]:
        """(most long runs on one line, longest run) over the lines of a 2-D mask."""
        padded = np.pad(mask.astype(np.int8), ((0, 0), (1, 1)))
        d = np.diff(padded, axis=1)  # +1 at a run's start, -1 just after its end
        line, start = np.nonzero(d == 1)  # row-major order, so starts and ends pair up
        _, end = np.nonzero(d == -1)
        long = (end - start) >= min_run
        if not long.any():
            return 0, 0
        return int(np.bincount(line[long]).max()), int((end - start)[long].max())

    (rows, _), (cols, width) = runs(colored.T), runs(colored)
    return rows, cols, width
