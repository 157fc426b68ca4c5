"""Self-attention as one self-contained, offline HTML file (head view + model view).

Like bertviz, without PyTorch, a notebook or a CDN: the JavaScript
(`viewer.js`) and CSS (`viewer.css`) are inlined, the weights are embedded as
JSON, and nothing is loaded from the network (no scripts, fonts or images), so
the file works offline, in a browser, or inline in Jupyter.

- Head view: query tokens on the left, key tokens on the right, a line from
  each query to each key with opacity = weight, one colour per head; a layer
  selector, head toggles, hover (or click to pin) a token to see only its lines.
- Model view: a heatmap thumbnail for every layer x head; click to enlarge.
- Encoder-decoder models: tabs for encoder, decoder and cross-attention.
- Sentence pairs: the two segments are set apart, with an A/B filter.
"""
from __future__ import annotations

import html
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, Literal

import numpy as np

from seqlab.viz._inputs import VizError, as_stack, check_tokens, segment_ids
from seqlab.viz.labels import is_byte_level, token_label, token_text

# Stack kinds of an encoder-decoder model: (tab label, query side, key side).
STACK_KINDS: dict[str, tuple[str, str, str]] = {
    "encoder": ("Encoder", "source", "source"),
    "decoder": ("Decoder", "target", "target"),
    "cross": ("Cross-attention", "target", "source"),
}


@dataclass(frozen=True)
class AttentionView:
    """A rendered attention viewer. ``html`` is one complete, offline HTML document."""

    html: str
    height: int = 560

    def save(self, path: str | Path) -> Path:
        """Write the HTML to ``path`` (UTF-8) and return the path."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(self.html, encoding="utf-8")
        return path

    def _repr_html_(self) -> str:
        # An iframe keeps the viewer's ids, CSS and script apart from the notebook
        # and from other viewers shown in the same notebook.
        return (f'<iframe srcdoc="{html.escape(self.html, quote=True)}" '
                f'style="width: 100%; height: {self.height}px; border: 0;" '
                f'title="seqlab attention viewer"></iframe>')

    def __repr__(self) -> str:
        return f"AttentionView({len(self.html)} chars of HTML; .save(path) to write it)"


def _asset(name: str) -> str:
    return resources.files("seqlab.viz").joinpath(name).read_text(encoding="utf-8")


def _json_for_script(obj: Any) -> str:
    """JSON safe inside <script>: no "</script>", "<!--" or "]]>" can form."""
    text = json.dumps(obj, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026") \
        .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


def _stack_entry(kind: str, label: str, stack: np.ndarray, queries: list[str], keys: list[str],
                 qseg: list[int] | None, kseg: list[int] | None, qname: str, kname: str,
                 decimals: int, byte_level: bool = False) -> dict[str, Any]:
    return {
        "id": kind, "label": label, "qseg": qseg, "kseg": kseg,
        # what the columns show (seqlab.viz.labels: "␣" for a space) and, for the tooltips, the tokens' text
        "queries": [token_label(t, byte_level) for t in queries], "keys": [token_label(t, byte_level) for t in keys],
        "qtext": [token_text(t, byte_level) for t in queries], "ktext": [token_text(t, byte_level) for t in keys],
        "qlabel": f"{qname} (queries)", "klabel": f"{kname} (keys)",
        # (L, H, T_q, T_k) as integers in units of 10**-decimals; the viewer multiplies by "scale".
        "shape": list(stack.shape), "attn": np.rint(stack * 10**decimals).astype(np.int64).tolist(),
    }


def _stacks(attentions: Any, src: list[str], tgt: list[str] | None, seg: list[int] | None,
            decimals: int) -> list[dict[str, Any]]:
    """One entry per tab, in the order encoder, decoder, cross."""
    byte_level = is_byte_level(src + (tgt or []))  # one model's tokens: decided on them all
    if not isinstance(attentions, dict):
        if tgt is None:  # self-attention over `tokens`
            stack = as_stack(attentions, len(src), len(src))
            return [_stack_entry("self", "Self-attention", stack, src, src, seg, seg, "tokens", "tokens",
                                 decimals, byte_level)]
        stack = as_stack(attentions, len(tgt), len(src))  # queries: target, keys: source
        return [_stack_entry("cross", "Cross-attention", stack, tgt, src, None, seg, "target", "source", decimals,
                             byte_level)]
    unknown = sorted(set(attentions) - set(STACK_KINDS))
    if unknown or not attentions:
        raise VizError(f"attentions dict has keys {sorted(attentions)}; expected some of {list(STACK_KINDS)}")
    out = []
    for kind, (label, qside, kside) in STACK_KINDS.items():
        if kind not in attentions:
            continue
        if "target" in (qside, kside) and tgt is None:
            raise VizError(f"attentions has a {kind!r} stack, so target_tokens (the decoder's tokens) are needed")
        queries = tgt if qside == "target" else src
        keys = tgt if kside == "target" else src
        stack = as_stack(attentions[kind], len(queries), len(keys), name=f"attentions[{kind!r}]")
        qseg = seg if qside == "source" else None
        kseg = seg if kside == "source" else None
        out.append(_stack_entry(kind, label, stack, queries, keys, qseg, kseg, qside, kside, decimals,
                                byte_level))
    return out


def attention_html(attentions: Any, tokens: Sequence[str], target_tokens: Sequence[str] | None = None,
                   title: str | None = None, *, segments: Sequence[int] | None = None,
                   sep_index: int | Literal["auto"] | None = None, view: Literal["head", "model"] = "head",
                   theme: Literal["auto", "light", "dark"] = "auto", decimals: int = 4) -> AttentionView:
    """Build the interactive attention viewer for ONE example.

    ``attentions``: a list over layers of (H, T_q, T_k) arrays, or one
    (L, H, T_q, T_k) array (rows sum to 1); or, for an encoder-decoder model,
    a dict with any of "encoder" (T_src x T_src), "decoder" (T_tgt x T_tgt)
    and "cross" (T_tgt x T_src) stacks, shown as tabs.
    ``tokens``: the (source) tokens. ``target_tokens``: the decoder's tokens;
    with a plain stack they are the queries (cross-attention). Tokens show as
    their labels (`seqlab.viz.labels`: "Ġman" as "␣man", a space as "␣");
    a token's tooltip quotes its text.
    ``segments`` (one int per token) or ``sep_index`` (index of the [SEP]
    ending segment A; "auto": the first [SEP]/</s> before the end) set the two
    sentences of a pair apart. ``view``: the view shown first. ``theme``:
    "auto" follows the browser. ``decimals``: rounding of the embedded weights.
    """
    if not isinstance(decimals, int) or not 1 <= decimals <= 6:
        raise VizError(f"decimals must be an int from 1 to 6, got {decimals!r}")
    if view not in ("head", "model"):
        raise VizError(f"view must be 'head' or 'model', got {view!r}")
    if theme not in ("auto", "light", "dark"):
        raise VizError(f"theme must be 'auto', 'light' or 'dark', got {theme!r}")
    src = check_tokens(tokens)
    tgt = None if target_tokens is None else check_tokens(target_tokens, "target_tokens")
    seg = segment_ids(src, segments, sep_index)
    stacks = _stacks(attentions, src, tgt, seg, decimals)
    heading = title or "Attention"
    data = {"title": heading, "view": view, "scale": 10.0**-decimals, "stacks": stacks}
    longest = max(max(len(s["queries"]), len(s["keys"])) for s in stacks)
    parts = {"theme": theme, "title": html.escape(heading), "css": _asset("viewer.css"),
             "data": _json_for_script(data), "js": _asset("viewer.js")}
    # One pass, so text inside a part (a title, a token) is never substituted again.
    doc = re.sub(r"@@(\w+)@@", lambda m: parts[m.group(1)], _TEMPLATE)
    return AttentionView(doc, height=int(np.clip(190 + 22 * longest, 420, 820)))


_TEMPLATE = """<!DOCTYPE html>
<html lang="en" data-theme="@@theme@@">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="seqlab">
<title>@@title@@</title>
<style>
@@css@@
</style>
</head>
<body>
<header class="sl-header">
  <h1 class="sl-title" id="title">@@title@@</h1>
  <nav class="sl-group" id="tabs" role="tablist" aria-label="attention stack"></nav>
  <div class="sl-group" role="group" aria-label="view">
    <button type="button" id="view-head" class="view-btn">Head view</button>
    <button type="button" id="view-model" class="view-btn">Model view</button>
  </div>
  <button type="button" id="theme-toggle" title="switch light / dark">&#9680; theme</button>
</header>
<section id="head-view">
  <div class="sl-controls">
    <label>Layer <select id="layer-select" aria-label="layer"></select></label>
    <span id="segment-wrap"><label>Segments
      <select id="segment-select" aria-label="segments"></select></label></span>
    <span>Heads <span id="head-toggles"></span></span>
    <button type="button" class="sl-small" id="heads-all">all</button>
    <button type="button" class="sl-small" id="heads-none">none</button>
    <span class="seg-legend" id="seg-legend"><b style="background: var(--seg-a)"></b>segment A
      <b style="background: var(--seg-b)"></b>segment B</span>
  </div>
  <div class="sl-hint">Line opacity = attention weight, one colour per head. Hover a token to see only its
    lines; click it to pin. Double-click a head to show it alone.</div>
  <div class="sl-stage" id="head-stage">
    <div class="sl-label" id="q-label"></div><div></div><div class="sl-label" id="k-label"></div>
    <div class="sl-col" id="query-col"></div>
    <canvas id="head-canvas" aria-label="attention lines"></canvas>
    <div class="sl-col" id="key-col"></div>
  </div>
</section>
<section id="model-view" hidden>
  <div class="sl-controls">
    <span class="sl-hint">Every layer (rows) and head (columns): queries down, keys across.
      Click one to enlarge.</span>
    <span class="colorbar">0 <i></i> 1</span>
  </div>
  <div id="model-grid"></div>
  <div id="detail" role="dialog" aria-modal="true" aria-labelledby="detail-title" hidden>
    <div class="detail-head">
      <span id="detail-title"></span>
      <button type="button" class="sl-small" id="detail-to-head">show in head view</button>
      <button type="button" class="sl-small" id="detail-close" aria-label="close">&#x2715;</button>
    </div>
    <canvas id="detail-canvas" aria-label="attention heatmap"></canvas>
    <div id="detail-readout"></div>
  </div>
</section>
<footer>seqlab attention viewer &middot; offline, self-contained</footer>
<script type="application/json" id="seqlab-data">@@data@@</script>
<script>
@@js@@
</script>
</body>
</html>
"""
