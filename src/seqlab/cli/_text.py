"""Text arguments of the commands that run a model on text: attention, embed, generate.

A text must be valid UTF-8 and hold at least one word. A text with more
tokens than the model has positions is cut to fit, with one ``warning:``
line on stderr (the default, like transformers' ``truncation=True``), or
refused with ``--no-truncate``. Cutting works on the text, at token
boundaries (the tokenizer's character offsets), so every later step sees an
ordinary, shorter text.
"""
from __future__ import annotations

import argparse
import sys
from typing import Any, Callable, Sequence

from seqlab.errors import CheckpointError, ConfigError

# Config fields that bound the input length, looked up in this order (GPT-2, BERT, seqlab's own models).
POSITION_FIELDS = ("n_positions", "max_position_embeddings", "max_len")


def add_truncation_argument(p: argparse.ArgumentParser,
                            default: str = "cut it, with a warning") -> None:
    p.add_argument("--no-truncate", action="store_true",
                   help=f"refuse a text longer than the model's positions (default: {default})")


def warn(message: str) -> None:
    """One ``warning: ...`` line on stderr (the CLI owns the terminal)."""
    print(f"warning: {message}", file=sys.stderr)


def note(message: str) -> None:
    """One ``note: ...`` line on stderr: information, nothing wrong."""
    print(f"note: {message}", file=sys.stderr)


def check_text(text: str, name: str) -> str:
    """``text`` unchanged; `ConfigError` naming ``name`` if it is empty or not valid UTF-8.

    Bytes that are not UTF-8 on the command line reach Python as lone
    surrogates (PEP 383); the tokenizers cannot encode them.
    """
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as e:
        code = ord(text[e.start])
        what = f"byte 0x{code - 0xDC00:02x}" if 0xDC80 <= code <= 0xDCFF else f"character U+{code:04X}"
        raise ConfigError(f"{name} is not valid UTF-8 ({what} at character {e.start})") from None
    if not text.strip():
        raise ConfigError(f"{name} is empty; give at least one word")
    return text


def max_positions(model: Any) -> tuple[int, str] | None:
    """(limit, config field) of the longest input the model takes, or None (relative positions: T5, RNNs)."""
    config = getattr(model, "config", None)
    for name in POSITION_FIELDS:
        value = getattr(config, name, None)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value, name
    return None


def is_char_tokenizer(tokenizer: Any) -> bool:
    return hasattr(tokenizer, "stoi") and hasattr(tokenizer, "chars")


def token_spans(tokenizer: Any, text: str) -> list[tuple[int, int]]:
    """(start, end) character span of each token of ``text``, special tokens left out."""
    if is_char_tokenizer(tokenizer):
        return [(i, i + 1) for i in range(len(text))]
    return [(int(a), int(b)) for a, b in tokenizer.backend.encode(text, add_special_tokens=False).offsets]


def _shorter(tokenizer: Any, text: str, keep: int) -> str:
    """A prefix of ``text`` ending at a token boundary, about ``keep`` tokens long and strictly shorter."""
    spans = token_spans(tokenizer, text)
    keep = min(keep, len(spans) - 1)
    if keep <= 0:
        return ""
    end = spans[keep - 1][1]
    if end >= len(text.rstrip()):  # byte-level tokens of one character share its span: cut before it
        end = spans[keep - 1][0]
    return text[:end]


def fit_texts(texts: Sequence[str], count: Callable[[list[str]], int], limit: int, tokenizer: Any
              ) -> list[str] | None:
    """``texts`` cut (the longest first, as transformers' ``longest_first``) until ``count(texts) <= limit``.

    ``count``: the number of positions the model would use for the texts
    (special tokens included). None when even one token per text is too many.
    """
    texts = list(texts)
    while True:
        n = count(texts)
        if n <= limit:
            return texts
        lengths = [len(token_spans(tokenizer, t)) for t in texts]
        i = max(range(len(texts)), key=lengths.__getitem__)
        if lengths[i] <= 1:
            return None
        cut = _shorter(tokenizer, texts[i], max(1, lengths[i] - (n - limit)))
        if len(cut) >= len(texts[i]):  # zero-width spans: drop a character instead
            cut = texts[i][:-1]
        if not cut.strip():
            return None
        texts[i] = cut  # strictly shorter each time: the loop ends


def fit_to_model(texts: dict[str, str], count: Callable[[list[str]], int], model: Any, tokenizer: Any,
                 no_truncate: bool) -> dict[str, str]:
    """``texts`` (option name -> text) made to fit the model's positions: cut with a warning, or refused.

    `ConfigError` names the options, the token count and the limit when
    ``no_truncate`` is set or when nothing fits.
    """
    bound = max_positions(model)
    if bound is None:
        return dict(texts)
    limit, field = bound
    names, values = list(texts), list(texts.values())
    n = count(values)
    if n <= limit:
        return dict(texts)
    who = " and ".join(names) + (" together" if len(names) > 1 else "")
    model_name = type(model).__name__
    if no_truncate:
        raise ConfigError(f"{who} {'have' if len(names) > 1 else 'has'} {n} tokens but {model_name} takes at most "
                          f"{limit} ({field} in its config); shorten it, or drop --no-truncate to cut it")
    fitted = fit_texts(values, count, limit, tokenizer)
    if fitted is None:
        raise ConfigError(f"{who}: {model_name} takes at most {limit} positions ({field}), too few for even one "
                          f"token of each text")
    warn(f"{who} {'have' if len(names) > 1 else 'has'} {n} tokens but {model_name} takes at most {limit} "
         f"({field} in its config); cut to {count(fitted)} tokens (pass --no-truncate to refuse instead)")
    return dict(zip(names, fitted))


def check_vocabulary(ids: Sequence[int], model: Any, tokenizer: Any, where: Any) -> None:
    """`CheckpointError` if the tokenizer gives an id the model's embedding does not have.

    A tokenizer from another model is the usual cause; the message says so
    instead of failing deep inside the embedding lookup.
    """
    vocab = getattr(getattr(model, "config", None), "vocab_size", None)
    if not isinstance(vocab, int) or not len(ids):
        return
    bad = max(int(i) for i in ids)
    if bad >= vocab:
        try:
            token = f" ({tokenizer.convert_ids_to_tokens(bad)!r})"
        except (ValueError, TypeError, AttributeError):
            token = ""
        raise CheckpointError(f"the tokenizer in {where} gives token id {bad}{token} but the model's vocabulary "
                              f"has {vocab} ids (vocab_size in config.json): the tokenizer does not belong to "
                              f"this model")
