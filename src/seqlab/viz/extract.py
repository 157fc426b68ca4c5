"""Run a seqlab model on a text and return its attention in the viewer's terms.

The glue between the models and the viewer (exercise 2 of the chapter):

    from seqlab.models.bert import BertModel
    from seqlab.data import Tokenizer
    from seqlab.viz import attention_html, extract_attention

    model, tok = BertModel.from_pretrained("minilm"), Tokenizer.from_pretrained("minilm")
    att = extract_attention(model, tok, "The cat sat.", text_pair="It slept.")
    attention_html(**att.view_kwargs())           # shows inline in a notebook

Each model family is run the way it is trained, on ONE example (B = 1, no
padding), with ``output_attentions=True``:

| family                                   | stacks                       | tokens / target_tokens                |
| ---------------------------------------- | ---------------------------- | ------------------------------------- |
| BERT (``model_type`` "bert"), classifier,| self (L, H, T, T)            | [CLS] A [SEP] (B [SEP]); segments     |
| TransformerModel, any encoder            |                              |                                       |
| GPT-2 (``"gpt2"``)                       | causal self (L, H, T, T)     | the text's tokens                     |
| T5 (``"t5"``), Translator                | encoder, decoder, cross      | source; decoder input (start + target)|
| Seq2Seq (RNN + additive attention)       | cross (1, 1, T_tgt, T_src)   | source; predicted target + </s>       |

For encoder-decoder models without a ``target``, the target is the model's
own greedy output. The library layer imports the models lazily (only this
function runs a model); the viewer itself stays autograd-free.
"""
from __future__ import annotations

import inspect
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from seqlab.viz._inputs import VizError, segment_ids

# What `extract_attention` knows how to run; everything else must take `output_attentions`.
KINDS: tuple[str, ...] = ("encoder", "decoder", "encoder-decoder", "seq2seq")
# Class names of seqlab models that have no `config.model_type`, by family.
_CLASS_KINDS: dict[str, str] = {
    "TransformerModel": "encoder", "TransformerClassifier": "encoder", "Translator": "encoder-decoder",
    "Seq2Seq": "seq2seq", "Seq2SeqAttention": "seq2seq", "AttentionSeq2Seq": "seq2seq",
}
_TYPE_KINDS: dict[str, str] = {"bert": "encoder", "gpt2": "decoder", "t5": "encoder-decoder"}
MAX_GENERATED = 32  # target length when an encoder-decoder writes its own target


@dataclass
class ModelAttention:
    """The attention of one example, in the form `attention_html` / `attention_grid` take.

    ``attentions``: a list over layers of (H, T, T) float arrays (self-attention),
    or a dict with some of "encoder" (T_src x T_src), "decoder" (T_tgt x T_tgt)
    and "cross" (T_tgt x T_src) lists. ``tokens``: the (source) tokens;
    ``target_tokens``: the decoder's input tokens, for encoder-decoders.
    ``segments``: one int per token for a sentence pair (0 = A, 1 = B), else None.
    ``layers``: the model's layer index of each entry (all layers by default).
    ``kind``: one of `KINDS`. ``model_name``: the model's class name.
    """

    attentions: list[np.ndarray] | dict[str, list[np.ndarray]]
    tokens: list[str]
    target_tokens: list[str] | None = None
    segments: list[int] | None = None
    layers: list[int] = field(default_factory=list)
    kind: str = "encoder"
    model_name: str = ""

    def view_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for ``attention_html(**att.view_kwargs())``."""
        return {"attentions": self.attentions, "tokens": self.tokens, "target_tokens": self.target_tokens,
                "segments": self.segments}

    def stacks(self) -> dict[str, list[np.ndarray]]:
        """Every stack by name: {"self": ...} for one stack, else the dict's entries (encoder, decoder, cross)."""
        return dict(self.attentions) if isinstance(self.attentions, dict) else {"self": self.attentions}

    def queries_keys(self, name: str) -> tuple[list[str], list[str]]:
        """(query tokens, key tokens) of the stack `name`."""
        tgt = self.target_tokens if self.target_tokens is not None else self.tokens
        return {"self": (self.tokens, self.tokens), "encoder": (self.tokens, self.tokens),
                "decoder": (tgt, tgt), "cross": (tgt, self.tokens)}[name]


def attention_kind(model: Any) -> str:
    """The family of a seqlab model (one of `KINDS`), from ``config.model_type`` or its class."""
    model_type = getattr(getattr(model, "config", None), "model_type", None)
    if type(model).__name__ == "T5EncoderModel":  # T5's encoder alone: self-attention over the text
        return "encoder"
    if isinstance(model_type, str) and model_type in _TYPE_KINDS:
        return _TYPE_KINDS[model_type]
    name = type(model).__name__
    if name in _CLASS_KINDS:
        return _CLASS_KINDS[name]
    forward = getattr(model, "forward", None)
    if forward is not None and "output_attentions" in inspect.signature(forward).parameters:
        return "encoder"
    raise VizError(f"{name} does not return attention weights (no output_attentions argument); the viewer "
                   f"supports BERT, GPT-2, T5, Translator, Seq2Seq, TransformerModel and TransformerClassifier")


def extract_attention(model: Any, tokenizer: Any, text: str, text_pair: str | None = None,
                      target: str | None = None, *, layers: Sequence[int] | None = None) -> ModelAttention:
    """Run ``model`` on ``text`` (B = 1) and return its attention weights with the tokens.

    ``tokenizer``: a `seqlab.data.Tokenizer` (or anything with the same
    ``__call__`` / ``convert_ids_to_tokens``), or a `CharTokenizer`; for a
    Seq2Seq with a vocabulary per language, the pair (source, target).
    ``text_pair``: the second sentence, for encoders (shown as segment B).
    ``target``: the decoder's text for encoder-decoder models (T5, Translator,
    Seq2Seq); None lets the model write its own (greedy). ``layers``: model
    layer indices to keep (negative counts from the end); None keeps all.
    The model runs in eval mode without gradients; its mode is restored.
    Raises `VizError` (a ValueError) for an empty text or an unsupported model.
    """
    from seqlab.autograd import no_grad

    _check_text(text, "text")
    if text_pair is not None:
        _check_text(text_pair, "text_pair")
    if target is not None:
        _check_text(target, "target")
    kind = attention_kind(model)
    if text_pair is not None and kind != "encoder":
        raise VizError(f"a sentence pair needs an encoder (BERT-like); {type(model).__name__} is "
                       f"{'an' if kind[0] in 'aeiou' else 'a'} {kind} model and takes one text")
    if target is not None and kind not in ("encoder-decoder", "seq2seq"):
        raise VizError(f"a target (the decoder's text) needs an encoder-decoder model (T5, Translator, Seq2Seq); "
                       f"{type(model).__name__} is {'an' if kind[0] in 'aeiou' else 'a'} {kind} model")
    runner = {"encoder": _run_encoder, "decoder": _run_decoder, "encoder-decoder": _run_encoder_decoder,
              "seq2seq": _run_seq2seq}[kind]
    was_training = getattr(model, "training", False)
    model.eval()
    try:
        with no_grad():
            att = runner(model, tokenizer, text, text_pair, target)
    finally:
        model.train(was_training)
    att.kind, att.model_name = kind, type(model).__name__
    return _select_layers(att, layers)


# ---------------------------------------------------------------- helpers

def _check_text(text: Any, name: str) -> None:
    if not isinstance(text, str):
        raise TypeError(f"{name} must be a str, got {type(text).__name__}")
    if not text.strip():
        raise VizError(f"{name} is empty; give at least one word")


def _numpy(x: Any) -> np.ndarray:
    """A Tensor / array / torch tensor as a NumPy array."""
    from seqlab import backend

    return np.asarray(backend.to_numpy(backend.from_torch(getattr(x, "data", x))))


def _per_layer(weights: Any, what: str) -> list[np.ndarray]:
    """Model output (tuple over layers of (1, H, Tq, Tk), or one array) -> list of (H, Tq, Tk)."""
    if weights is None:
        raise VizError(f"the model returned no {what} attention weights with output_attentions=True")
    if not isinstance(weights, (list, tuple)):
        weights = [weights]
    out = []
    for w in weights:
        a = _numpy(w)
        out.append(a[0] if a.ndim == 4 else a)  # (H, Tq, Tk) of example 0
    return out


def _encode(tokenizer: Any, text: str, text_pair: str | None = None, special: bool = True
            ) -> tuple[np.ndarray, list[str], np.ndarray | None]:
    """(ids (1, T) int64, tokens, token_type_ids (1, T) or None) for one text (or pair)."""
    if hasattr(tokenizer, "stoi") and hasattr(tokenizer, "chars"):  # CharTokenizer: one id per character
        if text_pair is not None:
            raise VizError("a character tokenizer encodes one text; a sentence pair needs a subword tokenizer")
        ids = np.asarray([tokenizer.encode(text)], dtype=np.int64)
        return ids, [tokenizer.chars[i] for i in ids[0]], None
    enc = tokenizer(text, text_pair, add_special_tokens=special) if text_pair is not None \
        else tokenizer(text, add_special_tokens=special)
    ids = _numpy(enc["input_ids"]).astype(np.int64).reshape(1, -1)  # (1, T)
    if ids.shape[1] == 0:
        raise VizError(f"the tokenizer turned {text!r} into no tokens")
    tt = enc.get("token_type_ids") if hasattr(enc, "get") else None
    tt = None if tt is None else _numpy(tt).astype(np.int64).reshape(1, -1)
    return ids, [str(t) for t in tokenizer.convert_ids_to_tokens(ids[0])], tt


def _tokens(tokenizer: Any, ids: Sequence[int]) -> list[str]:
    ids = [int(i) for i in ids]
    if hasattr(tokenizer, "stoi") and hasattr(tokenizer, "chars"):
        return [tokenizer.chars[i] for i in ids]
    return [str(t) for t in tokenizer.convert_ids_to_tokens(np.asarray(ids, dtype=np.int64))]


def _accepts(fn: Any, name: str) -> bool:
    return name in inspect.signature(fn).parameters


def _pair_segments(tokens: list[str], tt: np.ndarray | None, pair: bool) -> list[int] | None:
    if not pair:
        return None
    if tt is not None and len(set(tt[0].tolist())) > 1:
        return [int(s) for s in tt[0]]
    return segment_ids(tokens, sep_index="auto")  # no token types: split at the first [SEP] / </s>


def _select_layers(att: ModelAttention, layers: Sequence[int] | None) -> ModelAttention:
    stacks = att.stacks()
    n = min(len(s) for s in stacks.values())
    if layers is None:
        att.layers = list(range(n))
        return att
    chosen = []
    for i in layers:
        if isinstance(i, bool) or not isinstance(i, (int, np.integer)) or not -n <= i < n:
            raise VizError(f"layer {i!r} does not exist: the model has {n} layers (0 to {n - 1})")
        chosen.append(int(i) % n)
    if not chosen:
        raise VizError("layers is empty; name at least one layer")
    chosen = sorted(set(chosen))
    picked = {k: [s[i] for i in chosen] for k, s in stacks.items()}
    att.attentions = picked if isinstance(att.attentions, dict) else picked["self"]
    att.layers = chosen
    return att


# ---------------------------------------------------------------- one runner per family

def _run_encoder(model: Any, tokenizer: Any, text: str, text_pair: str | None, target: str | None
                 ) -> ModelAttention:
    """BERT-like encoders, TransformerClassifier and TransformerModel: self-attention over A (+ B)."""
    ids, tokens, tt = _encode(tokenizer, text, text_pair)
    mask = np.ones_like(ids)  # (1, T), every token is real
    fwd = model.forward
    kwargs: dict[str, Any] = {"output_attentions": True}
    if _accepts(fwd, "attention_mask"):
        kwargs["attention_mask"] = mask
    if tt is not None and _accepts(fwd, "token_type_ids"):
        kwargs["token_type_ids"] = tt
    out = model(ids, **kwargs)
    if hasattr(out, "attentions"):
        weights = out.attentions
    elif isinstance(out, tuple) and len(out) == 2:  # TransformerModel: (logits, weights)
        weights = out[1]
    else:
        raise VizError(f"{type(model).__name__}(..., output_attentions=True) returned {type(out).__name__}; "
                       f"expected an output with .attentions or a (logits, weights) tuple")
    return ModelAttention(_per_layer(weights, "self"), tokens, segments=_pair_segments(tokens, tt, text_pair
                                                                                         is not None))


def _run_decoder(model: Any, tokenizer: Any, text: str, text_pair: str | None, target: str | None
                 ) -> ModelAttention:
    """GPT-2: causal self-attention over the text (each token sees itself and the tokens before it)."""
    ids, tokens, _ = _encode(tokenizer, text)
    out = model(ids, attention_mask=np.ones_like(ids), output_attentions=True)
    weights = out.attentions if hasattr(out, "attentions") else out[1]  # GPTModel returns (hidden, attentions)
    return ModelAttention(_per_layer(weights, "self"), tokens)


def _strip_eos(ids: list[int], eos: int | None) -> list[int]:
    return ids[:-1] if ids and eos is not None and ids[-1] == eos else ids


def _run_encoder_decoder(model: Any, tokenizer: Any, text: str, text_pair: str | None, target: str | None
                         ) -> ModelAttention:
    """T5 and the chapter's Translator: encoder, decoder and cross-attention stacks.

    The decoder input is what teacher forcing feeds: the start token, then
    the target's tokens (its closing end token dropped), so query i is the
    position that predicts target token i.
    """
    if type(model).__name__ == "Translator":
        return _run_translator(model, tokenizer, text, target)
    cfg = model.config
    src, tokens, _ = _encode(tokenizer, text)
    eos = getattr(cfg, "eos_token_id", None)
    start = getattr(model, "decoder_start_token_id", None)  # T5: the config's, else pad_token_id
    if start is None:
        start = getattr(cfg, "decoder_start_token_id", None)
        start = getattr(cfg, "pad_token_id", 0) if start is None else start
    if target is None and not hasattr(model, "generate"):  # T5Model: no language-model head to write with
        raise VizError(f"{type(model).__name__} has no language-model head, so it cannot write the decoder's "
                       f"text itself; give the target (--target TEXT)")
    if target is None:
        gen = model.generate(src, attention_mask=np.ones_like(src), max_new_tokens=MAX_GENERATED)
        dec = [int(i) for i in _numpy(gen)[0]]
        dec = dec if dec and dec[0] == start else [start] + dec  # (some generate() leave out the start token)
    else:
        tgt, _, _ = _encode(tokenizer, target)
        dec = [start] + [int(i) for i in tgt[0]]
    dec = _strip_eos(dec, eos) or [start]
    dec_ids = np.asarray([dec], dtype=np.int64)  # (1, T_tgt)
    out = model(src, attention_mask=np.ones_like(src), decoder_input_ids=dec_ids, output_attentions=True)
    return ModelAttention({"encoder": _per_layer(out.encoder_attentions, "encoder"),
                           "decoder": _per_layer(out.decoder_attentions, "decoder"),
                           "cross": _per_layer(out.cross_attentions, "cross")},
                          tokens, target_tokens=_tokens(tokenizer, dec))


def _run_translator(model: Any, tokenizer: Any, text: str, target: str | None) -> ModelAttention:
    """The chapter's Translator: source = text </s>; decoder input = <s> target (see translator.py)."""
    c = model.config
    src = [int(i) for i in _encode(tokenizer, text, special=False)[0][0]] + [c.eos_id]
    src_ids = np.asarray([src], dtype=np.int64)  # (1, S)
    if target is None:
        tgt = model.greedy_decode(src_ids, max_len=MAX_GENERATED)[0]
    else:
        tgt = [int(i) for i in _encode(tokenizer, target, special=False)[0][0]]
    dec = [c.bos_id] + tgt
    out = model(src_ids, np.asarray([dec], dtype=np.int64), output_attentions=True)
    return ModelAttention({"encoder": _per_layer(out.encoder_attentions, "encoder"),
                           "decoder": _per_layer(out.decoder_attentions, "decoder"),
                           "cross": _per_layer(out.cross_attentions, "cross")},
                          _tokens(tokenizer, src), target_tokens=_tokens(tokenizer, dec))


def _run_seq2seq(model: Any, tokenizer: Any, text: str, text_pair: str | None, target: str | None
                 ) -> ModelAttention:
    """RNN encoder-decoder with attention: its (T_tgt, T_src) weights as a one-layer, one-head cross stack.

    Ids as in models/seq2seq.py: source = text </s>; decoder input = <s> target.
    Query t is the decoder step that reads target token t-1 and predicts token t, so the rows are
    labelled by the token each step predicts (the target, then </s>): the alignment reads as
    "to write this word, the decoder looked there".
    """
    c = model.config
    if getattr(c, "attention", None) == "none":
        raise VizError("this Seq2Seq has attention='none' (one fixed context vector): it has no attention "
                       "weights to show")
    src_tok, tgt_tok = tokenizer if isinstance(tokenizer, tuple) else (tokenizer, tokenizer)
    src = [int(i) for i in _encode(src_tok, text, special=False)[0][0]] + [c.eos_id]
    src_ids = np.asarray([src], dtype=np.int64)  # (1, S)
    if target is None:
        tgt = [int(i) for i in model.generate(src_ids, max_len=MAX_GENERATED)[0]]
    else:
        tgt = [int(i) for i in _encode(tgt_tok, target, special=False)[0][0]]
    dec = [c.bos_id] + tgt
    _, weights = model(src_ids, np.asarray([dec], dtype=np.int64), return_attention=True)  # (1, T, S)
    if weights is None:
        raise VizError(f"{type(model).__name__} returned no attention weights")
    alignment = _numpy(weights)[0]  # (T_tgt, T_src)
    return ModelAttention({"cross": [alignment[None]]}, _tokens(src_tok, src),  # one layer of (1, T, S)
                          target_tokens=_tokens(tgt_tok, tgt + [c.eos_id]))     # what each step predicts
