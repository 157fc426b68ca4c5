"""How checkpoint names differ from seqlab's parameter names: data, not code paths.

seqlab's models use Hugging Face's attribute names, so most keys load as
they are. What remains is listed here, one `KeyMap` per architecture:

- ``prefix``: HF's ``base_model_prefix``. A bare-model checkpoint
  (``embeddings.word_embeddings.weight``) loads into a model with a head
  (``bert.embeddings...``) and the other way round.
- ``renames``: legacy names (TF-era BERT stored LayerNorm as gamma/beta).
- ``transposed``: weights stored (in, out) in the file. GPT-2's ``Conv1D``
  keeps ``x @ W`` layout; seqlab's `Linear` holds (out, in), as torch.
- ``ignored``: keys that hold no weights (cached position ids, causal-mask
  buffers of old GPT-2 files, an unused T5 bias).
- ``tied``: alias -> source. An alias shares its source's array, so files
  omit it; a file that has both with different values unties them.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Mapping


@dataclass(frozen=True)
class KeyMap:
    prefix: str = ""
    renames: tuple[tuple[str, str], ...] = ()     # (regex on checkpoint key, replacement)
    transposed: tuple[str, ...] = ()              # key suffixes stored transposed in the file
    ignored: tuple[str, ...] = ()                 # regexes of keys that carry no weights
    tied: dict[str, str] = field(default_factory=dict)  # alias -> source


LEGACY_LAYERNORM = (
    (r"\.gamma$", ".weight"),
    (r"\.beta$", ".bias"),
)

BERT = KeyMap(
    prefix="bert",
    renames=LEGACY_LAYERNORM,
    ignored=(r"(^|\.)embeddings\.position_ids$", r"(^|\.)embeddings\.token_type_ids$"),
    tied={"cls.predictions.decoder.weight": "bert.embeddings.word_embeddings.weight",
          "cls.predictions.decoder.bias": "cls.predictions.bias"},
)

GPT2_TRANSPOSED = ("attn.c_attn.weight", "attn.c_proj.weight", "mlp.c_fc.weight", "mlp.c_proj.weight")

GPT2 = KeyMap(
    prefix="transformer",
    transposed=GPT2_TRANSPOSED,
    ignored=(r"\.attn\.bias$", r"\.attn\.masked_bias$"),  # causal-mask buffers of files from transformers < 4.30
    tied={"lm_head.weight": "transformer.wte.weight"},
)

T5 = KeyMap(
    # T5ForSequenceClassification and T5ForTokenClassification hold their T5Model / T5EncoderModel under
    # ``transformer.``; the other classes hold shared, encoder and decoder at the top
    prefix="transformer",
    ignored=(r"^(transformer\.)?decoder\.block\.0\.layer\.1\.EncDecAttention\.relative_attention_bias\.weight$",),
    tied={"encoder.embed_tokens.weight": "shared.weight",
          "decoder.embed_tokens.weight": "shared.weight",
          "lm_head.weight": "shared.weight",
          "transformer.encoder.embed_tokens.weight": "transformer.shared.weight",
          "transformer.decoder.embed_tokens.weight": "transformer.shared.weight"},
)


# ---- applying a map -----------------------------------------------------------
def rename(state: Mapping[str, Any], renames) -> dict[str, Any]:
    out = {}
    for k, v in state.items():
        for pattern, repl in renames:
            k = re.sub(pattern, repl, k)
        out[k] = v
    return out


def split_ignored(state: Mapping[str, Any], patterns) -> tuple[dict[str, Any], list[str]]:
    kept, ignored = {}, []
    for k, v in state.items():
        if any(re.search(p, k) for p in patterns):
            ignored.append(k)
        else:
            kept[k] = v
    return kept, ignored


def align_prefix(state: Mapping[str, Any], own_keys, prefix: str) -> dict[str, Any]:
    """Add or strip ``prefix.`` so a bare-model file fits a model with a head and vice versa."""
    if not prefix:
        return dict(state)
    p = prefix + "."
    own = set(own_keys)
    model_has = any(k.startswith(p) for k in own)
    file_has = any(k.startswith(p) for k in state)
    if model_has and not file_has:
        return {(p + k if p + k in own else k): v for k, v in state.items()}
    if file_has and not model_has:
        return {(k[len(p):] if k.startswith(p) else k): v for k, v in state.items()}
    return dict(state)


def transpose(state: Mapping[str, Any], suffixes) -> dict[str, Any]:
    """Transpose the 2-D arrays whose key ends with one of `suffixes` (its own inverse)."""
    return {k: (v.T.copy() if k.endswith(tuple(suffixes)) and getattr(v, "ndim", 0) == 2 else v)
            for k, v in state.items()}
