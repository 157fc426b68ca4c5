"""Attention heatmaps as PNG files: a layers x heads grid, one image per layer,
and a Seq2Seq source x target alignment plot, all drawn by `draw_heatmap`.

Sizes are computed in inches before drawing (no ``bbox_inches="tight"``), so
the pixel size of a file is predictable: `GridLayout.pixels`. Panels grow with
the number of tokens, up to a cap; when labels would overlap, every k-th
token is labelled. Matplotlib is imported inside functions and drives the Agg
canvas directly (no pyplot, no global state).
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from seqlab.viz._inputs import VizError, as_stack, check_tokens
from seqlab.viz.labels import token_label, token_labels

DPI = 100
LABEL_PT = 8.0  # token label font size (points)
LABEL_STEP_IN = LABEL_PT * 1.5 / 72  # room one label needs along an axis (inches)
MAX_LABEL_CHARS = 14
CMAP = "viridis"


def display_token(token: str, max_chars: int = MAX_LABEL_CHARS) -> str:
    """A token's label (`seqlab.viz.labels.token_label`: whitespace visible) as a tick label: long labels
    cut, no mathtext. Byte-level tokens are decoded by the callers, which see the whole list."""
    t = token_label(token)
    if len(t) > max_chars:
        t = t[: max_chars - 1] + "\u2026"
    return t.replace("$", r"\$")  # a "$" would switch matplotlib to mathtext


def _text_in(tokens: Sequence[str], pt: float = LABEL_PT) -> float:
    """Width in inches of the longest label (DejaVu Sans averages ~0.6 em)."""
    return max(len(display_token(t)) for t in tokens) * pt * 0.62 / 72


@dataclass(frozen=True)
class GridLayout:
    """Where panels go, in inches. Panel (r, c) has its top-left corner at
    ``(left + c * (panel_w + hgap), top + r * (panel_h + vgap))``."""

    n_rows: int
    n_cols: int
    panel_w: float
    panel_h: float
    left: float
    right: float
    top: float
    bottom: float
    hgap: float
    vgap: float
    dpi: int = DPI

    @property
    def figsize(self) -> tuple[float, float]:
        w = self.left + self.n_cols * self.panel_w + (self.n_cols - 1) * self.hgap + self.right
        h = self.top + self.n_rows * self.panel_h + (self.n_rows - 1) * self.vgap + self.bottom
        return w, h

    @property
    def pixels(self) -> tuple[int, int]:
        """(height, width) of the saved PNG, as ``imread(...).shape[:2]``."""
        w, h = self.figsize
        return int(round(h * self.dpi)), int(round(w * self.dpi))

    def rect(self, r: int, c: int) -> list[float]:
        """Panel (r, c) as a matplotlib [left, bottom, width, height] in figure fractions."""
        fw, fh = self.figsize
        x = self.left + c * (self.panel_w + self.hgap)
        y = fh - self.top - r * (self.panel_h + self.vgap) - self.panel_h
        return [x / fw, y / fh, self.panel_w / fw, self.panel_h / fh]


def plan_layout(n_rows: int, n_cols: int, query_tokens: Sequence[str], key_tokens: Sequence[str], *,
                inch_per_token: float, min_side: float, max_side: float, max_width: float,
                max_height: float, labels_every_panel: bool, title: bool) -> GridLayout:
    """Panel sizes scaled with the token counts, then shrunk to fit the caps.

    Each panel side is ``inch_per_token * T`` clipped to [min_side, max_side];
    if the figure would exceed ``max_width`` x ``max_height`` inches, panels
    shrink (never below 0.6 inch) while margins stay, so labels keep their size.
    """
    ylab = _text_in(query_tokens) + 0.12  # tick labels on the left
    xlab = _text_in(key_tokens) + 0.12  # rotated tick labels below
    left, right = ylab + 0.35, 1.0  # room for "Layer i" and the colour bar
    top, bottom = (0.75 if title else 0.45), xlab + 0.15
    hgap = ylab + 0.15 if labels_every_panel else 0.12
    vgap = xlab + 0.35 if labels_every_panel else 0.12
    pw = float(np.clip(inch_per_token * len(key_tokens), min_side, max_side))
    ph = float(np.clip(inch_per_token * len(query_tokens), min_side, max_side))
    fixed_w = left + right + (n_cols - 1) * hgap
    fixed_h = top + bottom + (n_rows - 1) * vgap
    scale = min(1.0, (max_width - fixed_w) / (n_cols * pw), (max_height - fixed_h) / (n_rows * ph))
    pw, ph = max(pw * scale, 0.6), max(ph * scale, 0.6)
    return GridLayout(n_rows, n_cols, pw, ph, left, right, top, bottom, hgap, vgap)


def draw_heatmap(ax: Any, weights: np.ndarray, key_tokens: Sequence[str], query_tokens: Sequence[str],
                 *, show_x: bool = True, show_y: bool = True, vmax: float | None = 1.0,
                 panel_w: float = 3.0, panel_h: float = 3.0) -> Any:
    """Draw one (T_q, T_k) attention matrix on ``ax``: keys on x, queries on y.

    Colour runs from 0 to ``vmax`` (1 by default, so heads compare; None: this
    matrix's max). Labels every k-th token so they fit ``panel_w`` x ``panel_h``
    inches. Tokens are shown by their labels (`seqlab.viz.labels`). Returns
    the AxesImage (for a colour bar).
    """
    key_tokens, query_tokens = token_labels(key_tokens, query_tokens)
    Tq, Tk = weights.shape
    top = float(weights.max()) if vmax is None else vmax
    im = ax.imshow(weights, cmap=CMAP, vmin=0.0, vmax=top or 1.0, aspect="auto", interpolation="nearest")
    for axis, tokens, size, show, n in ((ax.xaxis, key_tokens, panel_w, show_x, Tk),
                                        (ax.yaxis, query_tokens, panel_h, show_y, Tq)):
        step = max(1, math.ceil(n / max(1, int(size / LABEL_STEP_IN))))
        ticks = list(range(0, n, step))
        axis.set_ticks(ticks)
        axis.set_ticklabels([display_token(tokens[i]) for i in ticks] if show else [])
    ax.tick_params(axis="x", labelrotation=90, labelsize=LABEL_PT, length=2, pad=2)
    ax.tick_params(axis="y", labelsize=LABEL_PT, length=2, pad=2)
    return im


def _figure(layout: GridLayout) -> Any:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=layout.figsize, dpi=layout.dpi)
    FigureCanvasAgg(fig)
    return fig


def _colorbar(fig: Any, layout: GridLayout, im: Any) -> None:
    fw, fh = layout.figsize
    h = min(3.0, fh - layout.top - layout.bottom)
    cax = fig.add_axes([(fw - layout.right + 0.25) / fw, (fh - layout.top - h) / fh, 0.15 / fw, h / fh])
    cb = fig.colorbar(im, cax=cax)
    cb.ax.tick_params(labelsize=LABEL_PT)
    cb.set_label("attention weight", fontsize=LABEL_PT + 1)


def _draw_panels(layout: GridLayout, stack: np.ndarray, keys: list[str], queries: list[str],
                 panels: list[tuple[int, int, int, int]], labels_every_panel: bool, vmax: float | None,
                 title: str | None, row_label: Any) -> Any:
    """panels: (row, col, layer, head). Returns the figure."""
    fig = _figure(layout)
    im = None
    last_row = max(r for r, _, _, _ in panels)
    for r, c, l, h in panels:
        ax = fig.add_axes(layout.rect(r, c))
        im = draw_heatmap(ax, stack[l, h], keys, queries, show_x=labels_every_panel or r == last_row,
                          show_y=labels_every_panel or c == 0, vmax=vmax,
                          panel_w=layout.panel_w, panel_h=layout.panel_h)
        if r == 0 or labels_every_panel:
            ax.set_title(f"head {h}", fontsize=LABEL_PT + 1, pad=3)
        if c == 0 and row_label is not None:
            fw, fh = layout.figsize
            x0, y0, _, hh = layout.rect(r, c)
            fig.text(0.12 / fw, y0 + hh / 2, row_label(r), rotation=90, va="center", ha="left",
                     fontsize=LABEL_PT + 2, fontweight="bold")
    if title:
        fig.text(0.5, 1 - 0.2 / layout.figsize[1], title, ha="center", va="top", fontsize=12)
    _colorbar(fig, layout, im)
    return fig


def attention_grid(attentions: Any, tokens: Sequence[str], path: str | Path,
                   target_tokens: Sequence[str] | None = None, per_layer_dir: str | Path | None = None,
                   *, title: str | None = None, vmax: float | None = 1.0,
                   max_size_in: float = 36.0) -> list[Path]:
    """Write a PNG grid of attention heatmaps, layers (rows) x heads (columns).

    ``attentions``: list over layers of (H, T_q, T_k) arrays or one
    (L, H, T_q, T_k) array, for ONE example; rows sum to 1. ``tokens``: the T_k
    key tokens (and the queries, for self-attention). ``target_tokens``: the
    T_q query tokens when they differ (decoder-to-encoder cross-attention).
    ``per_layer_dir``: also write ``layer_{i}.png`` there, one larger image per
    layer with its heads side by side (6 per row). ``vmax``: top of the colour
    scale (None: each panel's max). ``max_size_in``: cap on the grid's width
    and height in inches (100 px each).
    Returns the paths written: the grid first, then the per-layer files.
    """
    keys = check_tokens(tokens)
    queries = keys if target_tokens is None else check_tokens(target_tokens, "target_tokens")
    keys, queries = token_labels(keys, queries)  # labels, so the layout is measured on what is drawn
    stack = as_stack(attentions, len(queries), len(keys))  # (L, H, T_q, T_k)
    L, H = stack.shape[:2]
    layout = plan_layout(L, H, queries, keys, inch_per_token=1.1 * LABEL_STEP_IN, min_side=1.4, max_side=4.0,
                         max_width=max_size_in, max_height=max_size_in, labels_every_panel=False,
                         title=bool(title))
    panels = [(l, h, l, h) for l in range(L) for h in range(H)]
    fig = _draw_panels(layout, stack, keys, queries, panels, False, vmax, title, lambda r: f"layer {r}")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=layout.dpi)
    written = [path]
    if per_layer_dir is not None:
        out = Path(per_layer_dir)
        out.mkdir(parents=True, exist_ok=True)
        n_cols = min(H, 6)
        n_rows = math.ceil(H / n_cols)
        lay = plan_layout(n_rows, n_cols, queries, keys, inch_per_token=0.24, min_side=2.5, max_side=6.0,
                          max_width=48.0, max_height=48.0, labels_every_panel=True, title=True)
        for l in range(L):
            panels = [(h // n_cols, h % n_cols, l, h) for h in range(H)]
            head = f"{title} \u2014 layer {l}" if title else f"layer {l}"
            fig = _draw_panels(lay, stack, keys, queries, panels, True, vmax, head, None)
            p = out / f"layer_{l}.png"
            fig.savefig(p, dpi=lay.dpi)
            written.append(p)
    return written


def alignment_plot(weights: Any, src_tokens: Sequence[str], tgt_tokens: Sequence[str],
                   path: str | Path, *, title: str | None = None) -> Path:
    """Write a Seq2Seq alignment heatmap: source tokens on x, target on y.

    ``weights``: (T_tgt, T_src) attention of each generated target token over
    the source (e.g. Bahdanau attention of an RNN decoder); rows sum to 1.
    """
    src = check_tokens(src_tokens, "src_tokens")
    tgt = check_tokens(tgt_tokens, "tgt_tokens")
    src, tgt = token_labels(src, tgt)  # labels, so the layout is measured on what is drawn
    w = np.asarray(weights, dtype=np.float64)
    if w.ndim != 2:
        raise VizError(f"weights has shape {tuple(w.shape)}; expected (T_tgt, T_src) = ({len(tgt)}, {len(src)})")
    stack = as_stack(w[None, None], len(tgt), len(src), name="weights")  # (1, 1, T_tgt, T_src)
    layout = plan_layout(1, 1, tgt, src, inch_per_token=0.3, min_side=2.0, max_side=14.0,
                         max_width=24.0, max_height=24.0, labels_every_panel=True, title=bool(title))
    layout = replace(layout, bottom=layout.bottom + 0.25)  # room for the "source" axis label
    fig = _figure(layout)
    ax = fig.add_axes(layout.rect(0, 0))
    im = draw_heatmap(ax, stack[0, 0], src, tgt, panel_w=layout.panel_w, panel_h=layout.panel_h)
    ax.set_xlabel("source", fontsize=LABEL_PT + 1)
    ax.set_ylabel("target", fontsize=LABEL_PT + 1)
    if title:
        fig.text(0.5, 1 - 0.2 / layout.figsize[1], title, ha="center", va="top", fontsize=12)
    _colorbar(fig, layout, im)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=layout.dpi)
    return path
