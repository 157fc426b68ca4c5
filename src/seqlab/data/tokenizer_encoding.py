"""Encoding for `Tokenizer`: texts (or pairs) into int64 (B, T) arrays, as a `BatchEncoding`.

`EncodingMixin` holds ``tok(texts, ...)``, ``encode``, ``encode_batch`` and
``tokenize``; `Tokenizer` (seqlab/data/hf_tokenizer.py) mixes it in and
provides the attributes it reads. ``_check_texts`` is the input check that
encoding and training (seqlab/data/tokenizer_training.py) share.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from tokenizers import Tokenizer as _Backend

from seqlab.data.batching import pad_batch


class BatchEncoding(dict):
    """What `Tokenizer.__call__` returns: a dict of (B, T) arrays, also read by attribute.

    As transformers' ``BatchEncoding``: ``enc.input_ids`` is
    ``enc["input_ids"]``, and ``model(**enc)`` passes the arrays as keywords.
    """

    _word_ids: list[list[int | None]] | None = None

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:  # an AttributeError, so hasattr() and copy/pickle probes work
            raise AttributeError(f"BatchEncoding has no {name!r} (it holds {', '.join(self) or 'nothing'})") from None

    def word_ids(self, batch_index: int = 0) -> list[int | None]:
        """For each token of row `batch_index`, the index of the word it came from (None for special and
        padding tokens), as transformers' fast tokenizers give it: how token-classification labels are
        lined up with words (`tok(words, is_split_into_words=True).word_ids(i)`)."""
        if self._word_ids is None:
            raise ValueError("word_ids() needs the tokenizer's own output (this BatchEncoding was built by hand)")
        if not -len(self._word_ids) <= batch_index < len(self._word_ids):
            raise IndexError(f"batch_index {batch_index} is out of range for a batch of {len(self._word_ids)}")
        return list(self._word_ids[batch_index])


class EncodingMixin:
    """`Tokenizer`'s encoding methods; not used on its own.

    Reads what `Tokenizer.__init__` sets up: the backend ``_tok``, the cache
    of truncating copies ``_truncators``, ``kind``, ``model_max_length``, and
    the ``pad_token_id`` role.
    """

    _tok: _Backend
    _truncators: dict[tuple[int, str], _Backend]
    kind: str
    model_max_length: int | None
    pad_token_id: int | None
    padding_side: str

    def tokenize(self, text: str) -> list[str]:
        """Token strings of ``text``, without special tokens."""
        _check_texts([text], "text")
        return self._tok.encode(text, add_special_tokens=False).tokens

    def encode(
        self,
        text: str,
        text_pair: str | None = None,
        add_special_tokens: bool = True,
        *,
        truncation: bool | str = False,
        max_length: int | None = None,
    ) -> list[int]:
        """Ids of one text or pair (BERT adds [CLS] A [SEP] B [SEP]; GPT-2 adds nothing).

        The arguments are transformers' ``encode``'s, in its order;
        ``truncation`` as in `__call__`.
        """
        if not isinstance(text, str):
            raise TypeError(f"encode takes a str, got {type(text).__name__}")
        if text_pair is not None and not isinstance(text_pair, str):
            hint = ""
            if isinstance(text_pair, bool):  # the old encode(text, add_special_tokens) order
                hint = " (pass add_special_tokens by keyword: encode(text, add_special_tokens=False))"
            raise TypeError(f"text_pair must be a str or None, got {type(text_pair).__name__}{hint}")
        _check_texts([text], "text")
        _check_texts([] if text_pair is None else [text_pair], "text_pair")
        backend = self._tok
        length = max_length if max_length is not None else self.model_max_length
        if truncation and length is not None:  # no limit at all: nothing to cut (transformers' too)
            backend = self._truncator(int(length), truncation)
        try:
            return backend.encode(text, text_pair, add_special_tokens=add_special_tokens).ids
        except Exception as e:  # the Rust side raises bare Exception (e.g. impossible truncation)
            raise ValueError(f"could not encode: {e}") from e

    def encode_batch(self, texts: Sequence[str], add_special_tokens: bool = True) -> list[list[int]]:
        """Ids of many texts, unpadded (encoded in parallel by the Rust backend)."""
        _check_texts(texts, "texts")
        return [e.ids for e in self._tok.encode_batch(list(texts), add_special_tokens=add_special_tokens)]

    def __call__(
        self,
        text: str | Sequence[str],
        text_pair: str | Sequence[str] | None = None,
        *,
        add_special_tokens: bool = True,
        padding: bool | str = False,
        truncation: bool | str = False,
        max_length: int | None = None,
        return_token_type_ids: bool | None = None,
        return_attention_mask: bool | None = None,
        return_special_tokens_mask: bool = False,
        return_tensors: str | None = None,
        padding_side: str | None = None,
        return_offsets_mapping: bool = False,
        is_split_into_words: bool = False,
    ) -> BatchEncoding:
        """Encode a text or a batch (optionally of pairs) into int64 arrays (B, T).

        padding: False (rows of different lengths then come back as lists of
            ids, as transformers' are; with ``return_tensors`` they are refused),
            True / "longest" (pad to the longest row), or "max_length" (pad to
            ``max_length``).
        truncation: True / "longest_first", "only_first" or "only_second",
            cutting to ``max_length`` (default: ``model_max_length``) with the
            special tokens counted, as transformers does; with neither, nothing
            is cut (transformers' "no limit").
        return_token_type_ids: default True for BERT-style tokenizers.
        return_attention_mask: default True; False leaves it out.
        return_tensors: None or "np" (NumPy; transformers' None gives lists),
            or "pt" (torch tensors, if torch is installed).
        padding_side: "right", or "left" for decoder-only generation; default the
            tokenizer's ``padding_side`` attribute (transformers' recipe:
            ``tok.padding_side = "left"``).
        return_offsets_mapping: also ``offset_mapping``, (B, T, 2) character
            spans of each token in its text (in its word, with
            ``is_split_into_words``); (0, 0) for special and padding tokens.
        is_split_into_words: the text is already split into words (a list of
            words, or a batch of such lists), as for token classification;
            ``enc.word_ids(i)`` then maps each token of row i to its word.

        Returns a `BatchEncoding`: a dict also read by attribute (``enc.input_ids``).
        """
        if return_tensors not in (None, "np", "pt"):
            raise ValueError(f"return_tensors must be None, 'np' or 'pt', got {return_tensors!r}")
        texts = _batch_of(text, is_split_into_words)
        _check_inputs(texts, "text", is_split_into_words)
        inputs: list[Any] = texts
        if text_pair is not None:
            pairs = _batch_of(text_pair, is_split_into_words)
            _check_inputs(pairs, "text_pair", is_split_into_words)
            if len(pairs) != len(texts):
                raise ValueError(f"got {len(texts)} texts but {len(pairs)} text_pairs")
            inputs = list(zip(texts, pairs))

        if padding in (True, "longest"):
            pad_to = "longest"
        elif padding in (False, None, "do_not_pad"):
            pad_to = None
        elif padding == "max_length":
            pad_to = "max_length"
        else:
            raise ValueError(f"padding must be False, True, 'longest' or 'max_length', got {padding!r}")
        side = self.padding_side if padding_side is None else check_padding_side(padding_side)
        length = max_length if max_length is not None else self.model_max_length
        if pad_to == "max_length" and length is None:
            raise ValueError("padding='max_length' needs max_length (this tokenizer has no model_max_length)")
        if length is None:
            truncation = False  # no limit to cut to, as transformers' model_max_length of 1e30

        backend = self._truncator(int(length), truncation) if truncation else self._tok  # type: ignore[arg-type]
        try:
            encs = backend.encode_batch(inputs, is_pretokenized=is_split_into_words,
                                        add_special_tokens=add_special_tokens)
        except Exception as e:  # the Rust side raises bare Exception (e.g. impossible truncation)
            raise ValueError(f"could not encode: {e}") from e

        lengths = [len(e.ids) for e in encs]
        longest = max(lengths, default=0)
        if pad_to is None:
            if len(set(lengths)) > 1:
                if return_tensors is not None:
                    raise ValueError(
                        f"rows have different lengths ({min(lengths)}..{longest} tokens); "
                        f"pass padding=True to get rectangular arrays"
                    )
                ragged = _ragged(encs, self.kind, return_token_type_ids, return_attention_mask,
                                 return_special_tokens_mask)
                if return_offsets_mapping:
                    ragged["offset_mapping"] = [[tuple(o) for o in e.offsets] for e in encs]
                return _with_word_ids(BatchEncoding(ragged), encs, None, "right")
            T = longest
        elif pad_to == "longest":
            T = longest
        else:
            T = int(length)  # type: ignore[arg-type]
            if longest > T:
                raise ValueError(f"a row has {longest} tokens > max_length {T}; pass truncation=True")
        if any(n < T for n in lengths) and self.pad_token_id is None:
            raise ValueError("this tokenizer has no padding token, so rows of different lengths cannot be padded")
        pad_id = self.pad_token_id if self.pad_token_id is not None else 0

        ids, mask = pad_batch([e.ids for e in encs], pad_id, T, side)  # (B, T) each
        out = {"input_ids": ids}
        if return_token_type_ids or (return_token_type_ids is None and self.kind == "bert"):
            out["token_type_ids"] = pad_batch([e.type_ids for e in encs], 0, T, side)[0]
        if return_attention_mask is not False:
            out["attention_mask"] = mask
        if return_special_tokens_mask:
            special, _ = pad_batch([e.special_tokens_mask for e in encs], 1, T, side)
            out["special_tokens_mask"] = special  # 1 = special or padding: never MLM-masked
        if return_offsets_mapping:
            out["offset_mapping"] = _padded_offsets(encs, T, side)
        if return_tensors == "pt":
            torch = _import_torch()
            out = {k: torch.from_numpy(v) for k, v in out.items()}
        return _with_word_ids(BatchEncoding(out), encs, T, side)

    def _truncator(self, max_length: int, strategy: bool | str) -> _Backend:
        """A copy of the backend that truncates; copies, not toggles, keep calls independent."""
        name = "longest_first" if strategy is True else str(strategy)
        if name not in ("longest_first", "only_first", "only_second"):
            raise ValueError(f"truncation must be True, 'longest_first', 'only_first' or 'only_second', got {strategy!r}")
        key = (max_length, name)
        if key not in self._truncators:
            clone = _Backend.from_str(self._tok.to_str())
            clone.enable_truncation(max_length, strategy=name)
            self._truncators[key] = clone
        return self._truncators[key]


def check_padding_side(side: str) -> str:
    """`side` when it is "right" or "left" (a call's padding_side=, or the tokenizer's attribute)."""
    if side not in ("right", "left"):
        raise ValueError(f"padding_side must be 'right' or 'left', got {side!r}")
    return side


def _batch_of(text: Any, split: bool) -> list[Any]:
    """A call's text as a batch: one string (or, pre-split, one list of words) is a batch of one."""
    if split:
        one = isinstance(text, (list, tuple)) and all(isinstance(w, str) for w in text)
        return [list(text)] if one else [list(t) if isinstance(t, (list, tuple)) else t for t in text]
    return [text] if isinstance(text, str) else list(text)


def _check_inputs(texts: list[Any], what: str, split: bool) -> None:
    """Strings; or, with is_split_into_words, lists of strings (the words)."""
    if not split:
        _check_texts(texts, what)
        return
    for i, words in enumerate(texts):
        if not isinstance(words, list):
            raise TypeError(f"{what}[{i}] is {type(words).__name__}, expected a list of words "
                            f"(is_split_into_words=True)")
        _check_texts(words, f"{what}[{i}]")


def _with_word_ids(enc: BatchEncoding, encs, T: int | None, side: str) -> BatchEncoding:
    """`enc` knowing each row's word ids, padded with None to `T` on `side` (unpadded when T is None)."""
    rows = []
    for e in encs:
        ids = list(e.word_ids)
        pad = [None] * (0 if T is None else T - len(ids))
        rows.append(ids + pad if side == "right" else pad + ids)
    enc._word_ids = rows
    return enc


def _padded_offsets(encs, T: int, side: str):
    """(B, T, 2) int64 character spans, (0, 0) on padding, as transformers' offset_mapping."""
    out = np.zeros((len(encs), T, 2), dtype=np.int64)
    for i, e in enumerate(encs):
        n = len(e.offsets)
        if n:
            start = 0 if side == "right" else T - n
            out[i, start:start + n] = np.asarray(e.offsets, dtype=np.int64)
    return out


def _ragged(encs, kind: str, token_type_ids: bool | None, attention_mask: bool | None, special: bool) -> dict:
    """Unpadded rows of different lengths as lists of ids, one list a row (transformers' return_tensors=None)."""
    out: dict[str, Any] = {"input_ids": [list(e.ids) for e in encs]}
    if token_type_ids or (token_type_ids is None and kind == "bert"):
        out["token_type_ids"] = [list(e.type_ids) for e in encs]
    if attention_mask is not False:
        out["attention_mask"] = [[1] * len(e.ids) for e in encs]
    if special:
        out["special_tokens_mask"] = [list(e.special_tokens_mask) for e in encs]
    return out


def _import_torch() -> Any:
    try:
        import torch
    except ImportError:
        raise ImportError("return_tensors='pt' needs PyTorch (pip install torch); "
                          "return_tensors='np' gives NumPy arrays") from None
    return torch


def _check_texts(texts: Sequence[Any], what: str) -> None:
    for i, t in enumerate(texts):
        if not isinstance(t, str):
            raise TypeError(f"{what}[{i}] is {type(t).__name__}, expected str")
        try:
            t.encode("utf-8")
        except UnicodeEncodeError as e:  # lone surrogates, e.g. undecodable bytes read with surrogateescape
            raise ValueError(f"{what}[{i}] is not valid Unicode: lone surrogate U+{ord(t[e.start]):04X} at "
                             f"index {e.start}") from None
