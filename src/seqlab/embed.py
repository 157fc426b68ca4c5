"""Sentence embeddings with the bundled pretrained BERT (all-MiniLM-L6-v2), and the chapter's 3.2.

    import seqlab.embed as E
    v = E.encode(["A man is eating food.", "A man eats a meal."])   # (2, 384), unit length
    v @ v.T                                                         # cosine similarities
    E.section_3_2()["last_hidden_state_shape"]                      # (1, 8, 384)

Any BERT serves through `SentenceEncoder`: a Hugging Face folder or name
(``SentenceEncoder("runs/mlm/pretrained")``), or a model already loaded, such
as the fine-tuned encoder of a ``seqlab train sst2-bert`` run
(``SentenceEncoder.from_model(model, tokenizer)``; a task head's own BERT is
used). ``encode`` and ``section_3_2`` take a name or an encoder.

An embedding is what sentence-transformers computes for this model: the mean
of the last hidden states over the real tokens (padding excluded), divided
by its L2 norm, with inputs truncated to 256 tokens (the model's
``sentence_bert_config.json``).
"""
from __future__ import annotations

import functools
import json
from typing import Sequence

import numpy as np

from seqlab import backend
from seqlab.autograd.function import no_grad
from seqlab.autograd.tensor import Tensor
from seqlab.hub.pretrained import resolve

DEFAULT_MODEL = "minilm"
SECTION_3_2_TEXT = "Natural language processing is fascinating."
SIMILARITY_EXAMPLE = (
    "A man is eating food.",
    "A man is eating a piece of bread.",
    "The girl is carrying a baby.",
    "A man is riding a horse.",
    "A woman is playing violin.",
)


def mean_pool(last_hidden_state, attention_mask) -> Tensor:
    """Σ_t m_t h_t / Σ_t m_t: (B, T, C) and mask (B, T) (1 = real token) -> (B, C). Differentiable."""
    h = last_hidden_state if isinstance(last_hidden_state, Tensor) else Tensor._of(last_hidden_state)
    m = backend.to_device(attention_mask.data if isinstance(attention_mask, Tensor) else attention_mask,
                          h.device)  # a host mask copied to h's device
    if m.shape != h.shape[:2]:
        raise ValueError(f"attention_mask has shape {m.shape} but the hidden states {h.shape}")
    m = m.astype(h.dtype)[:, :, None]                                        # (B, T, 1)
    count = backend.xp_of(m).maximum(m.sum(axis=1), h.dtype.type(1e-9))      # (B, 1)
    return (h * m).sum(dim=1) / count  # (B, C)


def l2_normalize(x, eps: float = 1e-12) -> Tensor:
    """x / max(‖x‖₂, eps) along the last dim (torch.nn.functional.normalize)."""
    x = x if isinstance(x, Tensor) else Tensor._of(x)
    norm = (x * x).sum(dim=-1, keepdim=True).sqrt()
    return x / norm.clamp(min=eps)


def cosine_similarity(a: np.ndarray, b: np.ndarray | None = None) -> np.ndarray:
    """(N, M) cosine similarities between the rows of a (N, C) and b (M, C) (default: a itself)."""
    a = np.asarray(a, dtype=np.float64)
    b = a if b is None else np.asarray(b, dtype=np.float64)
    an = a / np.maximum(np.linalg.norm(a, axis=-1, keepdims=True), 1e-12)
    bn = b / np.maximum(np.linalg.norm(b, axis=-1, keepdims=True), 1e-12)
    return an @ bn.T


def bert_encoder(model):
    """The `BertModel` that reads the text: ``model`` itself, or the ``.bert`` of a BERT with a task head
    (`BertForSequenceClassification`, `BertForMaskedLM`); None for any other model."""
    from seqlab.models.bert import BertModel

    for m in (model, getattr(model, "bert", None)):
        if isinstance(m, BertModel):
            return m
    return None


class SentenceEncoder:
    """A BERT and its tokenizer; `encode(sentences)` gives (N, C) mean-pooled, normalised embeddings."""

    def __init__(self, model: str = DEFAULT_MODEL, max_length: int | None = None, dtype=None):
        from seqlab.data.tokenizers import Tokenizer
        from seqlab.models.bert import BertModel

        folder = resolve(model)
        self.model = BertModel.from_pretrained(folder, dtype=dtype)
        self.tokenizer = Tokenizer.from_pretrained(folder)
        if max_length is None:
            max_length = _sentence_max_length(folder) or self.model.config.max_position_embeddings
        self.max_length = int(max_length)

    @classmethod
    def from_model(cls, model, tokenizer, max_length: int | None = None, folder=None) -> "SentenceEncoder":
        """An encoder of a model already loaded: a `BertModel`, or a BERT with a task head (its ``.bert`` is
        used). ``max_length``: by default the ``max_seq_length`` of ``folder``'s sentence_bert_config.json
        where there is one, else the model's max_position_embeddings."""
        from pathlib import Path

        bert = bert_encoder(model)
        if bert is None:
            raise TypeError(f"SentenceEncoder needs a BERT model, got a {type(model).__name__}")
        self = cls.__new__(cls)
        self.model, self.tokenizer = bert.eval(), tokenizer
        if max_length is None:
            max_length = (_sentence_max_length(Path(folder)) if folder is not None else None) \
                or bert.config.max_position_embeddings
        self.max_length = int(max_length)
        return self

    @property
    def dim(self) -> int:
        return self.model.config.hidden_size

    @no_grad()
    def encode(self, sentences: str | Sequence[str], batch_size: int = 32, normalize: bool = True) -> np.ndarray:
        """(N, C) float32 embeddings of N sentences (a single string gives (1, C))."""
        if isinstance(sentences, str):
            sentences = [sentences]
        sentences = list(sentences)
        if not sentences:
            return np.zeros((0, self.dim), dtype=np.float32)
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        out = []
        for i in range(0, len(sentences), batch_size):
            batch = self.tokenizer(sentences[i:i + batch_size], padding=True, truncation=True,
                                   max_length=self.max_length)
            h = self.model(batch["input_ids"], batch["attention_mask"], batch.get("token_type_ids"))
            v = mean_pool(h.last_hidden_state, batch["attention_mask"])      # (b, C)
            out.append((l2_normalize(v) if normalize else v).numpy())
        return np.concatenate(out).astype(np.float32)


def _sentence_max_length(folder) -> int | None:
    path = folder / "sentence_bert_config.json"
    if not path.is_file():
        return None
    try:
        return int(json.loads(path.read_text(encoding="utf-8"))["max_seq_length"])
    except (ValueError, KeyError, TypeError):
        return None


@functools.lru_cache(maxsize=2)
def _encoder(model: str) -> SentenceEncoder:
    return SentenceEncoder(model)


def _as_encoder(model: "str | SentenceEncoder") -> SentenceEncoder:
    return model if isinstance(model, SentenceEncoder) else _encoder(str(model))


def encode(sentences: str | Sequence[str], model: "str | SentenceEncoder" = DEFAULT_MODEL, batch_size: int = 32,
           normalize: bool = True) -> np.ndarray:
    """(N, 384) L2-normalised sentence embeddings with all-MiniLM-L6-v2 (the model is loaded once), or with
    ``model``: another folder or name, or a `SentenceEncoder`."""
    return _as_encoder(model).encode(sentences, batch_size=batch_size, normalize=normalize)


def similarity_example(sentences: Sequence[str] = SIMILARITY_EXAMPLE,
                       model: "str | SentenceEncoder" = DEFAULT_MODEL) -> dict:
    """The embeddings' cosine similarities for a few sentences, and each one's nearest neighbour."""
    v = encode(list(sentences), model)
    sim = cosine_similarity(v)
    masked = sim - 2 * np.eye(len(sentences))
    return {"sentences": list(sentences), "similarity": sim,
            "nearest": [int(j) for j in masked.argmax(1)]}


@no_grad()
def section_3_2(text: str = SECTION_3_2_TEXT, model: "str | SentenceEncoder" = DEFAULT_MODEL) -> dict:
    """The chapter's 3.2: tokenize a sentence, run the pretrained BERT, report the output shapes.

    Returns tokens, input_ids (1, T), last_hidden_state (1, T, 384) and
    pooler_output (1, 384) as NumPy arrays, and their shapes.
    """
    enc = _as_encoder(model)
    batch = enc.tokenizer([text])
    out = enc.model(batch["input_ids"], batch["attention_mask"], batch.get("token_type_ids"))
    ids = batch["input_ids"]
    return {
        "text": text,
        "tokens": enc.tokenizer.convert_ids_to_tokens(ids[0]),
        "input_ids": ids,
        "last_hidden_state": out.last_hidden_state.numpy(),
        "pooler_output": out.pooler_output.numpy(),
        "last_hidden_state_shape": tuple(out.last_hidden_state.shape),
        "pooler_output_shape": tuple(out.pooler_output.shape),
    }
