"""What each attention head does, in numbers: one row per (layer, head).

For a head with weights ``w`` of shape (T, T) (query i, key k; rows sum to 1):

- ``entropy``: mean over query rows of ``-sum_k w[i,k] log w[i,k]`` (nats);
  0 for a head that looks at one token, ``log T`` for uniform attention.
- ``mean_distance``: mean over rows of ``sum_k w[i,k] * |i - k|`` (tokens).
- ``share_self``: mean over rows of ``w[i, i]``.
- ``share_previous``: mean over rows i >= 1 of ``w[i, i-1]``.
- ``share_first``: mean over rows of ``w[i, 0]`` (the first token, [CLS] in BERT).
- ``share_sep``: mean over rows of the weight on separator tokens ([SEP], </s>).
- ``share_punct``: mean over rows of the weight on punctuation tokens.
- ``pattern``: the dominant behaviour, by this rule: among "previous",
  "first", "sep", "punct" and "self" take the largest share; if it is at least
  `PATTERN_THRESHOLD` (0.5, i.e. most of the attention), that is the pattern,
  otherwise "broad" (no single pattern dominates: spread-out attention, or a
  pattern not listed, such as next-token). Ties go to the earlier name.

These are the head types Clark et al. (2019), "What does BERT look at?",
found in BERT: heads on the previous token, on [CLS], on [SEP], on periods.
"""
from __future__ import annotations

import csv
import unicodedata
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from seqlab.viz._inputs import SEP_TOKENS, VizError, as_stack, check_tokens

PATTERN_THRESHOLD = 0.5
PATTERNS: tuple[str, ...] = ("previous", "first", "sep", "punct", "self")
COLUMNS: tuple[str, ...] = ("layer", "head", "pattern", "entropy", "mean_distance", "share_self",
                            "share_previous", "share_first", "share_sep", "share_punct")
# Word-piece markers stripped before asking whether a token is punctuation:
# BERT "##", GPT-2 byte-level "Ġ" (space), SentencePiece "▁" (space).
_SUBWORD_MARKERS = ("##", "Ġ", "▁")


def is_punct(token: str) -> bool:
    """True for tokens made only of Unicode punctuation (".", ",", "'s" is not)."""
    t = token
    for m in _SUBWORD_MARKERS:
        t = t.removeprefix(m)
    t = t.strip()
    return bool(t) and all(unicodedata.category(c).startswith("P") for c in t)


def head_stats(attentions: Any, tokens: Sequence[str], sep_tokens: Sequence[str] = SEP_TOKENS,
               threshold: float = PATTERN_THRESHOLD) -> list[dict[str, Any]]:
    """Statistics of every self-attention head, one dict per (layer, head).

    ``attentions``: list over layers of (H, T, T) arrays, or one (L, H, T, T)
    array, for ONE example; rows sum to 1. ``tokens``: T strings.
    Returns L*H dicts with the keys `COLUMNS`, layer-major; see the module
    docstring for the definitions and the ``pattern`` rule.
    """
    toks = check_tokens(tokens)
    w = as_stack(attentions, len(toks), len(toks))  # (L, H, T, T)
    L, H, T, _ = w.shape
    pos = np.arange(T)
    with np.errstate(divide="ignore", invalid="ignore"):
        plogp = np.where(w > 0, w * np.log(w), 0.0)
    entropy = 0.0 - plogp.sum(-1).mean(-1)  # (L, H); 0.0 - x, not -x: one token's 0 entropy is not -0.0
    dist = np.abs(pos[:, None] - pos[None, :])  # (T, T) |q - k|
    mean_distance = (w * dist).sum(-1).mean(-1)  # (L, H)
    diag = np.diagonal(w, axis1=2, axis2=3)  # (L, H, T) w[i, i]
    prev = np.diagonal(w, offset=-1, axis1=2, axis2=3)  # (L, H, T-1) w[i, i-1]
    sep_mask = np.array([t in set(sep_tokens) for t in toks])
    punct_mask = np.array([is_punct(t) for t in toks])
    shares = {
        "previous": prev.mean(-1) if T > 1 else np.zeros((L, H)),
        "first": w[..., 0].mean(-1),
        "sep": w[..., sep_mask].sum(-1).mean(-1),
        "punct": w[..., punct_mask].sum(-1).mean(-1),
        "self": diag.mean(-1),
    }
    rows = []
    for l in range(L):
        for h in range(H):
            s = {p: float(shares[p][l, h]) for p in PATTERNS}
            best = max(PATTERNS, key=lambda p: s[p])  # max keeps the first of equal values
            rows.append({
                "layer": l, "head": h,
                "pattern": best if s[best] >= threshold else "broad",
                "entropy": float(entropy[l, h]),
                "mean_distance": float(mean_distance[l, h]),
                **{f"share_{p}": s[p] for p in ("self", "previous", "first", "sep", "punct")},
            })
    return rows


def write_heads_csv(rows: Sequence[dict[str, Any]], path: str | Path) -> Path:
    """Write `head_stats` rows to a CSV file (floats with 6 significant digits)."""
    if not rows:
        raise VizError("no head rows to write")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fields = [c for c in COLUMNS if c in rows[0]] + [k for k in rows[0] if k not in COLUMNS]
    with path.open("w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=fields)
        writer.writeheader()
        for row in rows:
            writer.writerow({k: f"{v:.6g}" if isinstance(v, float) else v for k, v in row.items()})
    return path


def format_heads_table(rows: Sequence[dict[str, Any]]) -> str:
    """An aligned plain-text table of `head_stats` rows (what the CLI prints)."""
    if not rows:
        raise VizError("no head rows to format")
    headers = ("layer", "head", "pattern", "entropy", "dist", "self", "prev", "first", "sep", "punct")
    keys = ("layer", "head", "pattern", "entropy", "mean_distance", "share_self", "share_previous",
            "share_first", "share_sep", "share_punct")
    missing = [k for k in keys if k not in rows[0]]
    if missing:
        raise VizError(f"rows lack the keys {missing}; pass the output of head_stats")
    cells = [[f"{r[k]:.3f}" if isinstance(r[k], float) else str(r[k]) for k in keys] for r in rows]
    widths = [max(len(h), *(len(c[j]) for c in cells)) for j, h in enumerate(headers)]
    # Text columns left-aligned, numbers right-aligned.
    def line(values: Sequence[str]) -> str:
        return "  ".join(v.ljust(w) if j == 2 else v.rjust(w) for j, (v, w) in enumerate(zip(values, widths)))
    out = [line(headers), line(["-" * w for w in widths])]
    out += [line(c) for c in cells]
    return "\n".join(out)
