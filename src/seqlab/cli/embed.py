"""Sentence embeddings with the bundled MiniLM: seqlab embed TEXT [TEXT ...].

Prints each sentence's embedding (size, norm, first values) and the matrix of
cosine similarities: mean pooling over real tokens, L2-normalised, as
sentence-transformers' all-MiniLM-L6-v2.
"""
from __future__ import annotations

import argparse


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("texts", nargs="*", metavar="TEXT", help="sentences (default: the chapter's example set)")
    p.add_argument("--model", default="minilm", help="BERT folder or pretrained name (default: minilm)")
    p.add_argument("--section-3-2", action="store_true",
                   help="run the chapter's 3.2: tokenize one sentence and print the output shapes")


def run(args) -> int:
    import numpy as np

    from seqlab import embed

    if args.section_3_2:
        r = embed.section_3_2(args.texts[0] if args.texts else embed.SECTION_3_2_TEXT, args.model)
        print(f"text:              {r['text']}")
        print(f"tokens:            {' '.join(r['tokens'])}")
        print(f"last_hidden_state: {r['last_hidden_state_shape']}")
        print(f"pooler_output:     {r['pooler_output_shape']}")
        return 0
    texts = args.texts or list(embed.SIMILARITY_EXAMPLE)
    v = embed.encode(texts, args.model)
    print(f"{len(texts)} sentences -> embeddings {v.shape} (mean-pooled, L2-normalised)")
    for i, (t, row) in enumerate(zip(texts, v)):
        head = " ".join(f"{x:+.3f}" for x in row[:4])
        print(f"[{i}] norm {np.linalg.norm(row):.3f}  [{head} ...]  {t}")
    sim = embed.cosine_similarity(v)
    print("cosine similarity:")
    print("      " + " ".join(f"[{j}]".rjust(6) for j in range(len(texts))))
    for i, row in enumerate(sim):
        print(f"[{i}]".ljust(6) + " ".join(f"{x:6.3f}" for x in row))
    return 0
