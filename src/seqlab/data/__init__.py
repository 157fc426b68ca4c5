"""Data layer: datasets, tokenizers and batching. Pure NumPy + HF ``tokenizers``, no autograd.

    from seqlab.data import load_sst2, Tokenizer, pad_batch
    rows = load_sst2("dev")                         # [(sentence, label), ...]
    tok = Tokenizer.from_pretrained("minilm")       # BERT WordPiece (all-MiniLM-L6-v2)
    batch = tok([s for s, _ in rows[:8]], padding=True)   # dict of int64 (B, T) arrays
"""

from seqlab.data.batching import (
    IGNORE_INDEX,
    bucket_batches,
    causal_lm_windows,
    mlm_mask,
    pad_batch,
    train_val_split,
)
from seqlab.data.datasets import DATASETS, load_glue_tsv, load_multi30k, load_shakespeare, load_sst2
from seqlab.data.download import REGISTRY, cache_dir, dataset_dir, dataset_file, fetch
from seqlab.data.tokenizers import CharTokenizer, Tokenizer, load_tokenizer, pretrained_path

__all__ = [
    "DATASETS",
    "IGNORE_INDEX",
    "REGISTRY",
    "CharTokenizer",
    "Tokenizer",
    "bucket_batches",
    "cache_dir",
    "causal_lm_windows",
    "dataset_dir",
    "dataset_file",
    "fetch",
    "load_glue_tsv",
    "load_multi30k",
    "load_shakespeare",
    "load_sst2",
    "load_tokenizer",
    "mlm_mask",
    "pad_batch",
    "pretrained_path",
    "train_val_split",
]
