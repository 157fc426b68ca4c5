"""Pictures of what happens inside a model: attention viewers, heatmaps, curves.

Inputs are NumPy arrays (anything with ``__array__``); this layer knows
nothing of autograd. Attention of ONE example is a list over layers of
(H, T_q, T_k) arrays, or one (L, H, T_q, T_k) array, whose rows sum to 1.

- `attention_html`: interactive, offline HTML viewer (head view, model view).
- `attention_grid`, `alignment_plot`: PNG heatmaps (layers x heads; Seq2Seq).
- `head_stats`, `write_heads_csv`, `format_heads_table`: what each head does.
- `token_label`, `token_labels`: how a token is shown in all of them ("Ġman" as "␣man").
- `line_plot`, `bar_plot`, `training_curves`: general figures.
"""
from seqlab.viz._inputs import VizError
from seqlab.viz.attention import AttentionView, attention_html
from seqlab.viz.extract import ModelAttention, attention_kind, extract_attention  # noqa: F401  (models -> viewer)
from seqlab.viz.grid import alignment_plot, attention_grid
from seqlab.viz.heads import format_heads_table, head_stats, write_heads_csv
from seqlab.viz.labels import token_label, token_labels
from seqlab.viz.plots import bar_plot, line_plot, training_curves

__all__ = [
    "AttentionView", "VizError", "alignment_plot", "attention_grid", "attention_html",
    "bar_plot", "format_heads_table", "head_stats", "line_plot", "token_label", "token_labels", "training_curves",
    "write_heads_csv",
]
