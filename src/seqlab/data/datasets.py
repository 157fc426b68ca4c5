"""Loaders for the chapter's three datasets, returning plain Python values.

| name              | loader                   | returns                                   |
| ----------------- | ------------------------ | ----------------------------------------- |
| ``sst2``          | `load_sst2(split)`       | ``[(sentence, label), ...]``, label 0 / 1 |
| ``tinyshakespeare`` | `load_shakespeare()`   | one ``str`` of 1,115,394 characters       |
| ``multi30k``      | `load_multi30k(split)`   | ``(german_lines, english_lines)``         |

Files are found (and sha256-verified) by `seqlab.data.download.dataset_file`:
``data_dir`` > ``$SEQLAB_DATA`` > the download cache.
"""

from __future__ import annotations

import os
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path

from seqlab.data.download import dataset_file
from seqlab.errors import DataError

PathLike = str | os.PathLike[str]


@dataclass(frozen=True)
class DatasetInfo:
    """What a dataset is, for ``seqlab info`` and the docs."""

    name: str
    description: str
    splits: dict[str, tuple[str, ...]]  # split -> file names in the dataset folder
    sizes: dict[str, int]               # split -> rows (pairs, or characters for text)
    license: str


DATASETS: dict[str, DatasetInfo] = {
    "sst2": DatasetInfo(
        name="sst2",
        description="GLUE SST-2: binary sentiment of movie-review phrases and sentences "
        "(Socher et al., 2013), lowercased and PTB-tokenised",
        splits={"train": ("train.tsv",), "dev": ("dev.tsv",)},
        sizes={"train": 67_349, "dev": 872},
        license="research use (Stanford Sentiment Treebank; no explicit license)",
    ),
    "tinyshakespeare": DatasetInfo(
        name="tinyshakespeare",
        description="Karpathy's tiny Shakespeare: 1 MB of plays for character-level language models",
        splits={"train": ("input.txt",)},
        sizes={"train": 1_115_394},
        license="public domain text",
    ),
    "multi30k": DatasetInfo(
        name="multi30k",
        description="Multi30k task 1 (Elliott et al., 2016): German-English image captions, raw text",
        splits={
            "train": ("train.de", "train.en"),
            "val": ("val.de", "val.en"),
            "test2016": ("test2016.de", "test2016.en"),
        },
        sizes={"train": 29_000, "val": 1_014, "test2016": 1_000},
        license="non-commercial research and education use only",
    ),
}


def _check_split(dataset: str, split: str) -> tuple[str, ...]:
    splits = DATASETS[dataset].splits
    if split not in splits:
        raise ValueError(f"{dataset} has no split {split!r}; choose one of {', '.join(splits)}")
    return splits[split]


def _read_text(path: Path) -> str:
    """Whole file as UTF-8 (a BOM is tolerated); `DataError` naming the file otherwise."""
    try:
        data = path.read_bytes()
    except OSError as e:
        raise DataError(f"{path}: cannot read ({e.strerror or e})") from e
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise DataError(f"{path}: not UTF-8 text (invalid byte at offset {e.start})") from e


def _lines(text: str) -> list[str]:
    """Lines split on ``\\n`` only.

    ``str.splitlines`` would also split on U+2028, U+0085 and friends that
    can sit inside a sentence and silently misalign parallel corpora.
    """
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # the file's final newline
    return [line.removesuffix("\r") for line in lines]


def load_glue_tsv(path: PathLike, labels: Collection[int] = (0, 1)) -> list[tuple[str, int]]:
    """Parse a GLUE single-sentence TSV (header ``sentence<TAB>label``).

    Each row is split on its LAST tab (sentences may hold quotes, and GLUE
    uses no quoting), the sentence is stripped of the trailing space GLUE
    leaves before the tab, and the label must be an integer in ``labels``.
    A malformed row raises `DataError` naming ``path:line`` (1-based).
    """
    path = Path(path)
    lines = _lines(_read_text(path))
    if not lines:
        raise DataError(f"{path}: empty file, expected the header 'sentence<TAB>label'")
    header = lines[0].rsplit("\t", 1)
    if len(header) != 2 or header[1].strip() != "label":
        raise DataError(f"{path}:1: expected the header 'sentence<TAB>label', got {lines[0][:80]!r}")

    rows: list[tuple[str, int]] = []
    for lineno, line in enumerate(lines[1:], start=2):
        parts = line.rsplit("\t", 1)
        if len(parts) != 2:
            raise DataError(f"{path}:{lineno}: expected 'sentence<TAB>label', got {line[:80]!r}")
        sentence, label_text = parts[0].strip(), parts[1].strip()
        if not sentence:
            raise DataError(f"{path}:{lineno}: empty sentence")
        # isascii: int() would also accept non-ASCII digits such as "١".
        is_int = label_text.isascii() and label_text.removeprefix("-").isdigit()
        if not is_int or int(label_text) not in labels:
            raise DataError(
                f"{path}:{lineno}: label {label_text[:20]!r} is not one of {sorted(labels)}"
            )
        rows.append((sentence, int(label_text)))
    return rows


def load_sst2(split: str = "train", data_dir: PathLike | None = None) -> list[tuple[str, int]]:
    """SST-2 ``train`` (67,349 rows) or ``dev`` (872 rows) as ``(sentence, label)`` pairs."""
    (name,) = _check_split("sst2", split)
    return load_glue_tsv(dataset_file("sst2", name, data_dir))


def load_shakespeare(data_dir: PathLike | None = None) -> str:
    """Tiny Shakespeare as one string (1,115,394 characters, 65 distinct)."""
    (name,) = _check_split("tinyshakespeare", "train")
    return _read_text(dataset_file("tinyshakespeare", name, data_dir))


def load_multi30k(split: str = "train", data_dir: PathLike | None = None) -> tuple[list[str], list[str]]:
    """Multi30k ``train`` / ``val`` / ``test2016`` as ``(german, english)`` line lists.

    Line i of one list translates line i of the other; the text is raw
    (cased, punctuation attached, not tokenised).
    """
    de_name, en_name = _check_split("multi30k", split)
    de_path = dataset_file("multi30k", de_name, data_dir)
    en_path = dataset_file("multi30k", en_name, data_dir)
    de, en = _lines(_read_text(de_path)), _lines(_read_text(en_path))
    if len(de) != len(en):
        raise DataError(f"{de_path} has {len(de)} lines but {en_path} has {len(en)}; they must pair up")
    return de, en


__all__ = ["DATASETS", "DatasetInfo", "load_glue_tsv", "load_multi30k", "load_sst2", "load_shakespeare"]
