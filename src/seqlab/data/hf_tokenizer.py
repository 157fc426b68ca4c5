"""`Tokenizer`: a Hugging Face ``tokenizers.Tokenizer`` returning NumPy batches.

This file holds the class itself: construction and the special tokens' roles,
loading and saving (``from_pretrained``, ``save_pretrained``), the vocabulary
(``pad_token``/``pad_token_id`` and the other roles, ``add_tokens``,
``add_special_tokens``, id <-> token conversions) and decoding (``decode``,
``batch_decode``). Encoding (``tok(texts)``, ``encode``, `BatchEncoding`) is
mixed in from seqlab/data/tokenizer_encoding.py, and training
(``train_bpe``, ``train_wordpiece``) from seqlab/data/tokenizer_training.py.
The public entry point is seqlab/data/tokenizers.py.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from tokenizers import AddedToken
from tokenizers import Tokenizer as _Backend

from seqlab.data.hf_backends import (SPECIAL_NAMES, _DEFAULT_SPECIALS, _GUESSES, PathLike, _kind, _load_backend,
                                     _read_json, _token_text, pretrained_path)
from seqlab.data.tokenizer_encoding import EncodingMixin, check_padding_side
from seqlab.data.tokenizer_training import TrainingMixin


# ---------------------------------------------------------------- Tokenizer


def _role(name: str) -> property:
    """``pad_token`` and the like: the role's token string (None if unset); setting it picks the role's token."""
    return property(lambda self: self.special_tokens.get(name), lambda self, token: self._set_role(name, token),
                    doc=f"the {name} token's string, or None; settable to a token of the vocabulary or None")


def _role_id(name: str) -> property:
    """``pad_token_id`` and the like: the role's id; setting an id sets the role to that id's token."""
    def set_id(self: Tokenizer, i: int | None) -> None:
        if i is not None and (not isinstance(i, (int, np.integer)) or isinstance(i, bool)):
            raise TypeError(f"{name}_token_id must be an int or None, got {type(i).__name__}")
        self._set_role(name, None if i is None else self._id_to_token(int(i)))
    return property(lambda self: self._special_id(name), set_id, doc=f"id of the {name} token, or None; settable")


def _special_added(token: str | AddedToken) -> AddedToken:
    """A special token as transformers' ``add_special_tokens`` adds a string: matched verbatim, never split."""
    if isinstance(token, AddedToken):
        return token
    return AddedToken(token, rstrip=False, lstrip=False, normalized=False, special=True)


class Tokenizer(EncodingMixin, TrainingMixin):
    """A Hugging Face ``tokenizers.Tokenizer`` returning NumPy batches.

    ``tok(texts, padding=True)`` returns a dict of int64 arrays of shape
    (B, T): ``input_ids``, ``attention_mask`` (1 = real token) and, for
    BERT-style tokenizers, ``token_type_ids`` (0 = first segment, 1 =
    second). A single string gives B = 1, so the result is always 2-D.

    Special tokens have roles (``special_tokens``: ``{"pad": "[PAD]", ...}``),
    read and set as in transformers: ``tok.pad_token = tok.eos_token`` makes
    ``tok.pad_token_id`` the end token's id, and padding then uses it.
    """

    def __init__(
        self,
        backend: _Backend,
        *,
        special_tokens: dict[str, str] | None = None,
        model_max_length: int | None = None,
        config: dict[str, Any] | None = None,
    ):
        # Files such as MiniLM's tokenizer.json ship with padding and
        # truncation switched on (fixed 128); here both are per call instead.
        backend.no_padding()
        backend.no_truncation()
        self._tok = backend
        self.kind = _kind(backend)
        self.config = dict(config or {})
        self.model_max_length = model_max_length
        self._truncators: dict[tuple[int, str], _Backend] = {}
        # transformers' attribute: where `tok(...)` pads unless a call says (tok.padding_side = "left" before
        # a decoder-only model's batched generate); a folder's tokenizer_config.json may set it
        self.padding_side = self.config.get("padding_side", "right")

        given = special_tokens or {}
        self.special_tokens: dict[str, str] = {}
        for name in SPECIAL_NAMES:
            candidates = [given.get(name), _token_text(self.config.get(f"{name}_token")),
                          _DEFAULT_SPECIALS.get(self.kind, {}).get(name), *_GUESSES.get(name, ())]
            for token in candidates:
                if token is not None and backend.token_to_id(token) is not None:
                    self.special_tokens[name] = token
                    break
        # transformers 5 writes extra_special_tokens (a list, or a dict of named ones); 4 wrote additional_.
        extras = self.config.get("extra_special_tokens") or self.config.get("additional_special_tokens") or []
        extras = extras.values() if isinstance(extras, dict) else extras
        self._extra_special: list[str] = [t for t in map(_token_text, extras)
                                          if t is not None and backend.token_to_id(t) is not None]

    # -------------------------------------------------------------- loading and saving

    @classmethod
    def from_pretrained(cls, folder: PathLike, *, padding_side: str | None = None) -> Tokenizer:
        """Load a Hugging Face tokenizer folder (or a name `pretrained_path` knows); `padding_side`, as
        transformers' keyword, sets the attribute (else the folder's ``padding_side``, else "right").

        Reads ``tokenizer.json`` if present, else builds BERT's WordPiece from
        ``vocab.txt`` (``do_lower_case``, ``strip_accents`` and
        ``tokenize_chinese_chars`` from ``tokenizer_config.json``, defaults
        True / follow-lowercase / True), else GPT-2's byte-level BPE from
        ``vocab.json`` + ``merges.txt``.
        """
        path = pretrained_path(folder)
        config = {**_read_json(path / "special_tokens_map.json"), **_read_json(path / "tokenizer_config.json")}
        max_len = config.get("model_max_length")
        # transformers writes int(1e30) for "no limit".
        max_len = int(max_len) if isinstance(max_len, (int, float)) and max_len < 1e9 else None
        tok = cls(_load_backend(path, config), model_max_length=max_len, config=config)
        if padding_side is not None:
            tok.padding_side = padding_side
        return tok

    def save(self, folder: PathLike) -> Path:
        """Write ``tokenizer.json`` + ``tokenizer_config.json`` and the model's vocab files; return the folder.

        The vocab files (``vocab.txt``, or ``vocab.json`` + ``merges.txt``)
        let tools that predate ``tokenizer.json`` read the folder too.
        """
        folder = Path(folder)
        self._write(folder)
        return folder

    def save_pretrained(self, save_directory: PathLike) -> tuple[str, ...]:
        """`save`, by transformers' name; returns the paths of the files written, as transformers does."""
        return tuple(str(p) for p in self._write(Path(save_directory)))

    def _write(self, folder: Path) -> list[Path]:
        folder.mkdir(parents=True, exist_ok=True)
        self._tok.save(str(folder / "tokenizer.json"))
        written = [folder / "tokenizer_config.json", folder / "tokenizer.json"]
        written += [Path(f) for f in self._tok.model.save(str(folder))]
        config = {k: v for k, v in self.config.items() if k != "additional_special_tokens"}
        for name in SPECIAL_NAMES:  # the roles as they are now (a role set to None is not written back)
            config[f"{name}_token"] = self.special_tokens.get(name)
        config["extra_special_tokens"] = list(self._extra_special) or None
        config.setdefault("tokenizer_class", {"bert": "BertTokenizer", "gpt2": "GPT2Tokenizer"}.get(self.kind))
        if self.model_max_length is not None:
            config["model_max_length"] = self.model_max_length
        config["padding_side"] = self.padding_side
        config = {k: v for k, v in config.items() if v is not None}
        (folder / "tokenizer_config.json").write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
        return written

    @property
    def padding_side(self) -> str:
        """"right" or "left": where `tok(...)` pads when the call does not say (transformers' attribute)."""
        return self._padding_side

    @padding_side.setter
    def padding_side(self, side: str) -> None:
        self._padding_side = check_padding_side(side)

    @property
    def backend(self) -> _Backend:
        """The underlying ``tokenizers.Tokenizer`` (padding and truncation off)."""
        return self._tok

    # -------------------------------------------------------------- vocabulary

    @property
    def vocab_size(self) -> int:
        """Number of ids, added tokens included (the embedding table's rows).

        transformers' ``vocab_size`` leaves tokens added after training out;
        ``len(tok)`` counts them in both libraries.
        """
        return self._tok.get_vocab_size(with_added_tokens=True)

    def __len__(self) -> int:
        return self._tok.get_vocab_size(with_added_tokens=True)

    def get_vocab(self) -> dict[str, int]:
        return self._tok.get_vocab(with_added_tokens=True)

    def _special_id(self, name: str) -> int | None:
        token = self.special_tokens.get(name)
        return None if token is None else self._tok.token_to_id(token)

    def _set_role(self, name: str, token: str | AddedToken | None) -> None:
        if isinstance(token, AddedToken):
            token = token.content
        if token is not None and not isinstance(token, str):
            raise TypeError(f"{name}_token must be a str or None, got {type(token).__name__}")
        if token is None:
            self.special_tokens.pop(name, None)
        elif self._tok.token_to_id(token) is None:
            raise ValueError(f"{name}_token {token!r} is not in the vocabulary; "
                             f"tok.add_special_tokens({{'{name}_token': {token!r}}}) adds it")
        else:
            self.special_tokens[name] = token

    pad_token, pad_token_id = _role("pad"), _role_id("pad")
    unk_token, unk_token_id = _role("unk"), _role_id("unk")
    cls_token, cls_token_id = _role("cls"), _role_id("cls")
    sep_token, sep_token_id = _role("sep"), _role_id("sep")
    mask_token, mask_token_id = _role("mask"), _role_id("mask")
    bos_token, bos_token_id = _role("bos"), _role_id("bos")
    eos_token, eos_token_id = _role("eos"), _role_id("eos")

    @property
    def additional_special_tokens(self) -> list[str]:
        """Special tokens without a role, from ``add_special_tokens`` (transformers 5: ``extra_special_tokens``)."""
        return list(self._extra_special)

    extra_special_tokens = additional_special_tokens

    @property
    def all_special_tokens(self) -> list[str]:
        """Every special token once: the roles' tokens, then the additional ones."""
        return list(dict.fromkeys([*self.special_tokens.values(), *self._extra_special]))

    @property
    def all_special_ids(self) -> list[int]:
        return sorted({self._tok.token_to_id(t) for t in self.all_special_tokens})

    def add_tokens(
        self, new_tokens: str | AddedToken | Sequence[str | AddedToken], special_tokens: bool = False
    ) -> int:
        """Add tokens to the vocabulary (new ids from ``len(tok)`` on); returns the count transformers returns.

        As transformers: a string is matched after normalisation (so
        ``"NewWord"`` is found in lowercased text) and never split. The count
        is the ``tokenizers`` library's: a token the model already has counts
        (it becomes an added token) but keeps its id, so ``len(tok)`` may grow
        by less; an added token again counts 0. Grow the model with
        ``model.resize_token_embeddings(len(tok))``.
        """
        tokens = [new_tokens] if isinstance(new_tokens, (str, AddedToken)) else list(new_tokens)
        for i, t in enumerate(tokens):
            if not isinstance(t, (str, AddedToken)):
                raise TypeError(f"new_tokens[{i}] is {type(t).__name__}, expected str or tokenizers.AddedToken")
        added = self._tok.add_special_tokens(tokens) if special_tokens else self._tok.add_tokens(tokens)
        self._truncators.clear()  # the truncating copies predate the new tokens
        return added

    def add_special_tokens(self, special_tokens_dict: dict[str, Any], replace_extra_special_tokens: bool = True) -> int:
        """Add special tokens and give them roles; returns how many were new to the vocabulary.

        Keys as in transformers: ``"pad_token"``, ``"eos_token"``, ... (each a
        str or ``AddedToken``) and ``"additional_special_tokens"`` (alias
        ``"extra_special_tokens"``, a list, replacing the earlier list unless
        ``replace_extra_special_tokens=False``). A string is matched verbatim
        and skipped by ``decode(skip_special_tokens=True)``. A role's new
        token does not rewrite the template (BERT's ``[CLS] ... [SEP]``).
        """
        roles: dict[str, str] = {}
        extras, to_add = list(self._extra_special), []
        for key, value in special_tokens_dict.items():
            if key in ("additional_special_tokens", "extra_special_tokens"):
                if isinstance(value, (str, AddedToken)) or not all(isinstance(t, (str, AddedToken)) for t in value):
                    raise TypeError(f"{key} must be a list of str or AddedToken, got {value!r}")
                tokens = [_special_added(t) for t in value]
                new = [t.content for t in tokens]
                if replace_extra_special_tokens and new:
                    extras = new
                else:
                    extras += [t for t in new if t not in extras]
                to_add += tokens
            elif key.endswith("_token") and key[:-len("_token")] in SPECIAL_NAMES:
                if not isinstance(value, (str, AddedToken)):
                    raise TypeError(f"{key} must be a str or AddedToken, got {type(value).__name__}")
                token = _special_added(value)
                roles[key[:-len("_token")]] = token.content
                to_add.append(token)
            else:
                allowed = ", ".join([*(f"{n}_token" for n in SPECIAL_NAMES), "additional_special_tokens"])
                raise ValueError(f"add_special_tokens got key {key!r}; expected one of {allowed}")
        added = self._tok.add_special_tokens(to_add) if to_add else 0
        self._truncators.clear()
        self.special_tokens.update(roles)
        self._extra_special = extras
        return added

    def convert_ids_to_tokens(self, ids: int | Sequence[int] | np.ndarray) -> str | list[str]:
        """Token strings for ids; an int gives one string (as in transformers)."""
        if isinstance(ids, (int, np.integer)):
            return self._id_to_token(int(ids))
        return [self._id_to_token(i) for i in self._id_list(ids)]

    def _id_to_token(self, i: int) -> str:
        token = self._tok.id_to_token(i)
        if token is None:
            raise ValueError(f"id {i} is outside the vocabulary (size {self.vocab_size})")
        return token

    def convert_tokens_to_ids(self, tokens: str | Sequence[str]) -> int | list[int]:
        """Ids for token strings; unknown tokens map to the unknown token's id."""
        def one(t: str) -> int:
            i = self._tok.token_to_id(t)
            if i is None:
                i = self.unk_token_id
            if i is None:
                raise ValueError(f"token {t!r} is not in the vocabulary and there is no unknown token")
            return i
        return one(tokens) if isinstance(tokens, str) else [one(t) for t in tokens]

    # -------------------------------------------------------------- decoding

    def _id_list(self, ids: Sequence[int] | np.ndarray) -> list[int]:
        if not isinstance(ids, np.ndarray) and all(isinstance(i, (int, np.integer)) and not isinstance(i, bool)
                                                   for i in ids):
            out = [int(i) for i in ids]  # a list of ints of any size (NumPy would turn 2**63 into a float)
        else:
            arr = np.asarray(ids)
            if arr.ndim != 1:
                raise ValueError(f"expected a 1-D sequence of ids, got shape {arr.shape}")
            if arr.size and not np.issubdtype(arr.dtype, np.integer):
                raise TypeError(f"ids must be integers, got dtype {arr.dtype}")
            out = [int(i) for i in arr]
        bad = [i for i in out if not 0 <= i < self.vocab_size]
        if bad:
            raise ValueError(f"id {bad[0]} is outside the vocabulary (size {self.vocab_size})")
        return out

    def decode(
        self,
        ids: Sequence[int] | np.ndarray,
        skip_special_tokens: bool = True,
        clean_up_tokenization_spaces: bool = False,
    ) -> str:
        """Text of a 1-D id sequence (padding and specials dropped by default).

        The text is what the backend's decoder gives, as transformers 5's
        ``BertTokenizer`` returns it (``"don ' t"``). The older Python
        tokenizers also glued punctuation back (``"don't"``);
        ``clean_up_tokenization_spaces=True`` does the same.
        """
        text = self._tok.decode(self._id_list(ids), skip_special_tokens=skip_special_tokens)
        return _clean_up_tokenization(text) if clean_up_tokenization_spaces else text

    def decode_batch(
        self,
        batch: Sequence[Sequence[int]] | np.ndarray,
        skip_special_tokens: bool = True,
        clean_up_tokenization_spaces: bool = False,
    ) -> list[str]:
        """Texts of a batch of id rows, e.g. a (B, T) array (``batch_decode`` too, transformers' name).

        ``skip_special_tokens`` defaults to True, as in `decode`;
        transformers' default is False.
        """
        return [self.decode(row, skip_special_tokens, clean_up_tokenization_spaces) for row in batch]

    batch_decode = decode_batch

    def __repr__(self) -> str:
        return f"Tokenizer(kind={self.kind!r}, vocab_size={self.vocab_size}, model_max_length={self.model_max_length})"


# transformers' clean_up_tokenization, applied in this order (an order-dependent chain).
_CLEANUPS = ((" .", "."), (" ?", "?"), (" !", "!"), (" ,", ","), (" ' ", "'"), (" n't", "n't"),
             (" 'm", "'m"), (" 's", "'s"), (" 've", "'ve"), (" 're", "'re"))


def _clean_up_tokenization(text: str) -> str:
    for old, new in _CLEANUPS:
        text = text.replace(old, new)
    return text
