"""Tokenizers: a thin, NumPy-returning wrapper over Hugging Face ``tokenizers``.

Tokenization itself is never re-implemented here: the Rust library does the
normalising, splitting and merging, so ids match Hugging Face exactly.
`Tokenizer` loads and builds backends the way ``transformers`` does
(seqlab/data/hf_backends.py: BERT WordPiece from ``vocab.txt``, GPT-2
byte-level BPE from ``vocab.json`` + ``merges.txt``), pads into int64
arrays, and trains small vocabularies. It answers to the idioms of
transformers' ``PreTrainedTokenizerFast`` (``tok.pad_token = tok.eos_token``,
``return_tensors="pt"``, ``enc.input_ids``, ``batch_decode``,
``save_pretrained``, ``add_tokens``, ``add_special_tokens``). `CharTokenizer`
(seqlab/data/char_tokenizer.py, importable from here too) is the
character-level vocabulary of char-RNN / nanoGPT's Shakespeare.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from tokenizers import AddedToken, models, pre_tokenizers, trainers
from tokenizers import Tokenizer as _Backend

from seqlab.data.batching import pad_batch
from seqlab.data.char_tokenizer import CharTokenizer
from seqlab.data.hf_backends import (BERT_SPECIALS, GPT2_EOT, PRETRAINED_ALIASES, SPECIAL_NAMES,
                                     _DEFAULT_SPECIALS, _GUESSES, PathLike, _bert_pipeline, _bert_template,
                                     _bytelevel_pipeline, _kind, _load_backend, _read_json, _token_text,
                                     pretrained_path)


# ---------------------------------------------------------------- Tokenizer


class BatchEncoding(dict):
    """What `Tokenizer.__call__` returns: a dict of (B, T) arrays, also read by attribute.

    As transformers' ``BatchEncoding``: ``enc.input_ids`` is
    ``enc["input_ids"]``, and ``model(**enc)`` passes the arrays as keywords.
    """

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:  # an AttributeError, so hasattr() and copy/pickle probes work
            raise AttributeError(f"BatchEncoding has no {name!r} (it holds {', '.join(self) or 'nothing'})") from None


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


class Tokenizer:
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
    def from_pretrained(cls, folder: PathLike) -> Tokenizer:
        """Load a Hugging Face tokenizer folder (or a name `pretrained_path` knows).

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
        return cls(_load_backend(path, config), model_max_length=max_len, config=config)

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
        config = {k: v for k, v in config.items() if v is not None}
        (folder / "tokenizer_config.json").write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
        return written

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

    # -------------------------------------------------------------- encoding

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
        if truncation:
            length = max_length if max_length is not None else self.model_max_length
            if length is None:
                raise ValueError("truncation needs max_length (this tokenizer has no model_max_length)")
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
        padding_side: str = "right",
    ) -> BatchEncoding:
        """Encode a text or a batch (optionally of pairs) into int64 arrays (B, T).

        padding: False (all rows must then have one length), True / "longest"
            (pad to the longest row), or "max_length" (pad to ``max_length``).
        truncation: True / "longest_first", "only_first" or "only_second",
            cutting to ``max_length`` (default: ``model_max_length``) with the
            special tokens counted, as transformers does.
        return_token_type_ids: default True for BERT-style tokenizers.
        return_attention_mask: default True; False leaves it out.
        return_tensors: None or "np" (NumPy; transformers' None gives lists),
            or "pt" (torch tensors, if torch is installed).
        padding_side: "right", or "left" for decoder-only generation.

        Returns a `BatchEncoding`: a dict also read by attribute (``enc.input_ids``).
        """
        if return_tensors not in (None, "np", "pt"):
            raise ValueError(f"return_tensors must be None, 'np' or 'pt', got {return_tensors!r}")
        single = isinstance(text, str)
        texts = [text] if single else list(text)
        _check_texts(texts, "text")
        inputs: list[Any] = texts
        if text_pair is not None:
            pairs = [text_pair] if isinstance(text_pair, str) else list(text_pair)
            _check_texts(pairs, "text_pair")
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
        needs_length = bool(truncation) or pad_to == "max_length"
        length = max_length if max_length is not None else self.model_max_length
        if needs_length and length is None:
            raise ValueError("truncation or padding='max_length' needs max_length (this tokenizer has no model_max_length)")

        backend = self._truncator(int(length), truncation) if truncation else self._tok  # type: ignore[arg-type]
        try:
            encs = backend.encode_batch(inputs, add_special_tokens=add_special_tokens)
        except Exception as e:  # the Rust side raises bare Exception (e.g. impossible truncation)
            raise ValueError(f"could not encode: {e}") from e

        lengths = [len(e.ids) for e in encs]
        longest = max(lengths, default=0)
        if pad_to is None:
            if len(set(lengths)) > 1:
                raise ValueError(
                    f"rows have different lengths ({min(lengths)}..{longest} tokens); "
                    f"pass padding=True to get rectangular arrays"
                )
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

        ids, mask = pad_batch([e.ids for e in encs], pad_id, T, padding_side)  # (B, T) each
        out = {"input_ids": ids}
        if return_token_type_ids or (return_token_type_ids is None and self.kind == "bert"):
            out["token_type_ids"] = pad_batch([e.type_ids for e in encs], 0, T, padding_side)[0]
        if return_attention_mask is not False:
            out["attention_mask"] = mask
        if return_special_tokens_mask:
            special, _ = pad_batch([e.special_tokens_mask for e in encs], 1, T, padding_side)
            out["special_tokens_mask"] = special  # 1 = special or padding: never MLM-masked
        if return_tensors == "pt":
            torch = _import_torch()
            out = {k: torch.from_numpy(v) for k, v in out.items()}
        return BatchEncoding(out)

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

    # -------------------------------------------------------------- training

    @classmethod
    def train_bpe(
        cls,
        texts: Iterable[str],
        vocab_size: int,
        special_tokens: Sequence[str] = (GPT2_EOT,),
        min_frequency: int = 2,
    ) -> Tokenizer:
        """Train a GPT-2-style byte-level BPE (Radford et al., 2019, section 2.2).

        The 256 byte symbols are always in the vocabulary, so any string
        encodes without an unknown token and ``decode(encode(s)) == s``.
        """
        texts = _training_texts(texts)
        if vocab_size < 256 + len(special_tokens):
            raise ValueError(f"vocab_size {vocab_size} < 256 bytes + {len(special_tokens)} special tokens")
        tok = _bytelevel_pipeline(_Backend(models.BPE()))
        trainer = trainers.BpeTrainer(
            vocab_size=vocab_size,
            min_frequency=min_frequency,
            special_tokens=[AddedToken(t, special=True) for t in special_tokens],
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
            show_progress=False,
        )
        tok.train_from_iterator(texts, trainer=trainer)
        return cls(tok, config={"add_prefix_space": False})

    @classmethod
    def train_wordpiece(
        cls,
        texts: Iterable[str],
        vocab_size: int,
        special_tokens: Sequence[str] = BERT_SPECIALS,
        lowercase: bool = True,
        min_frequency: int = 0,
    ) -> Tokenizer:
        """Train a BERT-style WordPiece vocabulary (BERT's normaliser, ``##`` continuations)."""
        texts = _training_texts(texts)
        for needed in ("[UNK]", "[CLS]", "[SEP]"):
            if needed not in special_tokens:
                raise ValueError(f"special_tokens must include {needed} for BERT's template, got {list(special_tokens)}")
        tok = _bert_pipeline(_Backend(models.WordPiece(unk_token="[UNK]")), lowercase, None, True)
        trainer = trainers.WordPieceTrainer(
            vocab_size=vocab_size,
            min_frequency=min_frequency,
            special_tokens=[AddedToken(t, special=True) for t in special_tokens],
            continuing_subword_prefix="##",
            show_progress=False,
        )
        tok.train_from_iterator(texts, trainer=trainer)
        _bert_template(tok)
        return cls(tok, config={"do_lower_case": lowercase})

    def __repr__(self) -> str:
        return f"Tokenizer(kind={self.kind!r}, vocab_size={self.vocab_size}, model_max_length={self.model_max_length})"


# transformers' clean_up_tokenization, applied in this order (an order-dependent chain).
_CLEANUPS = ((" .", "."), (" ?", "?"), (" !", "!"), (" ,", ","), (" ' ", "'"), (" n't", "n't"),
             (" 'm", "'m"), (" 's", "'s"), (" 've", "'ve"), (" 're", "'re"))


def _clean_up_tokenization(text: str) -> str:
    for old, new in _CLEANUPS:
        text = text.replace(old, new)
    return text


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


def _training_texts(texts: Iterable[str]) -> list[str]:
    # A bare str would be iterated character by character: almost surely a mistake.
    if isinstance(texts, str):
        return [texts]
    texts = list(texts)
    _check_texts(texts, "texts")
    return texts


def load_tokenizer(path: PathLike) -> Tokenizer | CharTokenizer:
    """Whichever tokenizer a folder holds: char_tokenizer.json, else a HF tokenizer."""
    p = Path(path)
    if p.suffix == ".json" and p.name != "tokenizer.json" or (p / CharTokenizer.FILE_NAME).is_file():
        return CharTokenizer.load(p)
    return Tokenizer.from_pretrained(p)


__all__ = [
    "BERT_SPECIALS",
    "BatchEncoding",
    "CharTokenizer",
    "PRETRAINED_ALIASES",
    "Tokenizer",
    "load_tokenizer",
    "pretrained_path",
]
