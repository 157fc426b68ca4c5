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

This module is the public entry point; the code lives in
seqlab/data/hf_tokenizer.py (`Tokenizer`: loading, saving, vocabulary and
special-token roles, decoding), seqlab/data/tokenizer_encoding.py
(`BatchEncoding`, ``tok(texts)``, ``encode``) and
seqlab/data/tokenizer_training.py (``train_bpe``, ``train_wordpiece``). Every
name importable from here before that split still is.
"""

from __future__ import annotations

from pathlib import Path

from seqlab.data.batching import pad_batch  # noqa: F401  (importable from here before the split)
from seqlab.data.char_tokenizer import CharTokenizer
from seqlab.data.hf_backends import (BERT_SPECIALS, GPT2_EOT, PRETRAINED_ALIASES,  # noqa: F401
                                     SPECIAL_NAMES, PathLike, pretrained_path)
from seqlab.data.hf_tokenizer import Tokenizer
from seqlab.data.tokenizer_encoding import BatchEncoding

# Private helpers that lived in this file, importable from here as before. Patch
# them where they are defined (e.g. seqlab.data.tokenizer_encoding._import_torch):
# the code looks them up there, not here.
from seqlab.data.hf_tokenizer import _CLEANUPS, _clean_up_tokenization, _role, _role_id, _special_added  # noqa: F401
from seqlab.data.tokenizer_encoding import _check_texts, _import_torch  # noqa: F401
from seqlab.data.tokenizer_training import _training_texts  # noqa: F401


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
