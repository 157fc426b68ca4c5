"""Data pieces the real-data tasks share: SST-2 splits, text corpora, and a run's own vocabulary.

A vocabulary trained for a run is written once into RUN_DIR/tokenizer
(atomically: a temporary folder renamed into place) and read back on
resume and by `seqlab eval`, so ids never change under a checkpoint.
"""
from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any, Callable

from seqlab.errors import CheckpointError, ConfigError
from seqlab.train.tasks.base import require

TOKENIZER_DIR = "tokenizer"


def sst2_splits(data_dir: Path | None, max_train: int = 0, max_dev: int = 0, task: str = "") -> tuple[list, list]:
    """(train rows, dev rows) of SST-2, each [(sentence, label)], optionally cut to the first N."""
    load = require("seqlab.data", "load_sst2", task)
    train, dev = load("train", data_dir), load("dev", data_dir)
    return (train[:max_train] if max_train else train), (dev[:max_dev] if max_dev else dev)


def corpus_lines(corpus: str, data_dir: Path | None, task: str = "") -> list[str]:
    """Unlabelled text for pretraining: 'sst2', 'multi30k' (English side), 'sst2+multi30k', or a UTF-8 file."""
    data = require("seqlab.data", None, task)
    lines: list[str] = []
    for part in corpus.split("+"):
        if part == "sst2":
            lines += [s for s, _ in data.load_sst2("train", data_dir)]
        elif part == "multi30k":
            lines += data.load_multi30k("train", data_dir)[1]
        elif Path(part).is_file():
            try:
                lines += [ln for ln in Path(part).read_text(encoding="utf-8").splitlines() if ln.strip()]
            except UnicodeDecodeError as e:
                raise ConfigError(f"corpus file {part} is not UTF-8 ({e.reason} at byte {e.start})") from None
        else:
            raise ConfigError(f"corpus part {part!r} is neither 'sst2', 'multi30k' nor an existing text file")
    if not lines:
        raise ConfigError(f"corpus {corpus!r} is empty")
    return lines


def run_tokenizer(run_dir: Path | None, make: Callable[[], Any] | None, load: Callable[[Path], Any] | None = None,
                  task: str = "") -> Any:
    """The run's tokenizer: read from RUN_DIR/tokenizer, else made by `make()` and saved there.

    `make` is None when only inference is wanted: a missing folder is then an error.
    """
    folder = Path(run_dir) / TOKENIZER_DIR if run_dir is not None else None
    if load is None:
        load = require("seqlab.data", "load_tokenizer", task)
    if folder is not None and folder.is_dir():
        return load(folder)
    if make is None:
        raise CheckpointError(f"{folder} is missing: the run's vocabulary is needed to use its model")
    tok = make()
    if folder is not None:
        tmp = folder.with_name(f".tmp-{TOKENIZER_DIR}-{os.getpid()}")
        shutil.rmtree(tmp, ignore_errors=True)
        tok.save(tmp)
        os.replace(tmp, folder)
    return tok
