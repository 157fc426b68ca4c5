"""`CharTokenizer`: one id per character, the vocabulary of char-RNN and nanoGPT's Shakespeare."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from seqlab.errors import DataError

PathLike = str | os.PathLike[str]


class CharTokenizer:
    """One id per character, ids in sorted character order (char-RNN, nanoGPT).

    ``CharTokenizer(text)`` takes its vocabulary from the characters of ``text``.
    """

    FILE_NAME = "char_tokenizer.json"

    def __init__(self, text: str):
        if not isinstance(text, str):
            raise TypeError(f"CharTokenizer takes the training text as a str, got {type(text).__name__}")
        self.chars: list[str] = sorted(set(text))
        self.stoi = {c: i for i, c in enumerate(self.chars)}

    @classmethod
    def from_text(cls, text: str) -> CharTokenizer:
        return cls(text)

    @property
    def vocab_size(self) -> int:
        return len(self.chars)

    def __len__(self) -> int:
        return len(self.chars)

    def encode(self, text: str) -> list[int]:
        """Ids of ``text``; a character outside the vocabulary is a `ValueError` naming it."""
        try:
            return [self.stoi[c] for c in text]
        except KeyError:
            i = next(i for i, c in enumerate(text) if c not in self.stoi)
            raise ValueError(
                f"character {text[i]!r} (U+{ord(text[i]):04X}) at index {i} is not in the vocabulary"
            ) from None

    def decode(self, ids: Sequence[int] | np.ndarray) -> str:
        """Text of a 1-D id sequence."""
        out = []
        plain = not isinstance(ids, np.ndarray) and all(isinstance(i, (int, np.integer)) for i in ids)
        for i in (list(ids) if plain else np.asarray(ids).reshape(-1).tolist()):  # big Python ints stay ints
            if isinstance(i, bool) or not isinstance(i, (int, np.integer)):
                raise TypeError(f"ids must be integers, got {i!r}")
            if not 0 <= i < len(self.chars):
                raise ValueError(f"id {i} is outside the vocabulary (size {len(self.chars)})")
            out.append(self.chars[i])
        return "".join(out)

    @classmethod
    def _file(cls, path: PathLike) -> Path:
        path = Path(path)
        return path if path.suffix == ".json" else path / cls.FILE_NAME

    def save(self, path: PathLike) -> Path:
        """Write JSON to ``path`` (a ``.json`` file, or a folder to hold char_tokenizer.json)."""
        file = self._file(path)
        file.parent.mkdir(parents=True, exist_ok=True)
        file.write_text(json.dumps({"type": "char", "chars": self.chars}, ensure_ascii=True) + "\n", encoding="utf-8")
        return file

    @classmethod
    def load(cls, path: PathLike) -> CharTokenizer:
        """Read what `save` wrote; `DataError` naming the file if it is not that."""
        file = cls._file(path)
        try:
            spec = json.loads(file.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
            raise DataError(f"{file}: not a character tokenizer file ({e})") from e
        chars = spec.get("chars") if isinstance(spec, dict) else None
        if (spec.get("type") if isinstance(spec, dict) else None) != "char" or not isinstance(chars, list) \
                or not all(isinstance(c, str) and len(c) == 1 for c in chars) or len(set(chars)) != len(chars):
            raise DataError(f"{file}: expected {{'type': 'char', 'chars': [distinct single characters]}}")
        tok = cls.__new__(cls)
        tok.chars = list(chars)
        tok.stoi = {c: i for i, c in enumerate(chars)}
        return tok

    def __repr__(self) -> str:
        return f"CharTokenizer(vocab_size={self.vocab_size})"
