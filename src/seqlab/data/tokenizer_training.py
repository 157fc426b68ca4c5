"""Training small vocabularies for `Tokenizer`: GPT-2's byte-level BPE and BERT's WordPiece.

`TrainingMixin` holds the classmethods ``Tokenizer.train_bpe`` and
``Tokenizer.train_wordpiece``; the Rust ``tokenizers`` trainers do the
counting and merging, on the pipelines seqlab/data/hf_backends.py builds.
(`CharTokenizer`, seqlab/data/char_tokenizer.py, needs no trainer: its
vocabulary is the text's characters.)
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from tokenizers import AddedToken, models, pre_tokenizers, trainers
from tokenizers import Tokenizer as _Backend

from seqlab.data.hf_backends import BERT_SPECIALS, GPT2_EOT, _bert_pipeline, _bert_template, _bytelevel_pipeline
from seqlab.data.tokenizer_encoding import _check_texts

if TYPE_CHECKING:
    from seqlab.data.hf_tokenizer import Tokenizer


class TrainingMixin:
    """`Tokenizer`'s training classmethods; each returns ``cls(backend, config=...)``."""

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


def _training_texts(texts: Iterable[str]) -> list[str]:
    # A bare str would be iterated character by character: almost surely a mistake.
    if isinstance(texts, str):
        return [texts]
    texts = list(texts)
    _check_texts(texts, "texts")
    return texts
