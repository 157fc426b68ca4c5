"""Generate text with a GPT-2 or T5 model folder: seqlab generate MODEL_DIR --prompt TEXT.

The folder is a Hugging Face one (config.json, model.safetensors and the
tokenizer files). Greedy by default; --temperature / --top-k / --top-p
sample (with --seed); --num-beams runs beam search.
"""
from __future__ import annotations

import argparse


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("model_dir", metavar="MODEL_DIR", help="Hugging Face folder of a GPT-2 or T5 model")
    p.add_argument("--prompt", required=True, action="append",
                   help="text to continue (GPT) or to transform (T5); repeat for a batch")
    p.add_argument("--max-new-tokens", type=int, default=40)
    p.add_argument("--temperature", type=float, default=None, help="sample with this temperature")
    p.add_argument("--top-k", type=int, default=None, help="sample from the k most likely tokens")
    p.add_argument("--top-p", type=float, default=None, help="sample from the smallest set with this much mass")
    p.add_argument("--num-beams", type=int, default=1, help="beam search with this many beams (no sampling)")
    p.add_argument("--seed", type=int, default=0, help="random seed for sampling")
    p.add_argument("--no-cache", action="store_true", help="recompute every position at each step")


def run(args) -> int:
    from seqlab.cli.main import UsageError
    from seqlab.data.tokenizers import Tokenizer
    from seqlab.hub.pretrained import resolve
    from seqlab.models.auto import AutoModel

    sample = any(v is not None for v in (args.temperature, args.top_k, args.top_p))
    if sample and args.num_beams > 1:
        raise UsageError("choose sampling (--temperature/--top-k/--top-p) or --num-beams, not both")
    folder = resolve(args.model_dir)
    model = AutoModel.from_pretrained(folder)
    if not hasattr(model, "generate"):
        raise UsageError(f"{args.model_dir} holds a {type(model).__name__}, which does not generate text")
    tok = Tokenizer.from_pretrained(folder)
    seq2seq = bool(getattr(model.config, "is_encoder_decoder", False))
    ids, mask = _pad([tok.encode(p) for p in args.prompt], left=not seq2seq)
    out = model.generate(ids, mask, max_new_tokens=args.max_new_tokens,
                         do_sample=sample, temperature=args.temperature or 1.0, top_k=args.top_k,
                         top_p=args.top_p, num_beams=args.num_beams, seed=args.seed,
                         use_cache=not args.no_cache)
    start = 1 if seq2seq else ids.shape[1]
    for prompt, row in zip(args.prompt, out):
        text = tok.decode(row[start:], skip_special_tokens=True)
        print(text if seq2seq else prompt + text)
    return 0


def _pad(rows: list[list[int]], left: bool):
    """(ids, mask) int64 (B, T); GPT prompts are left-padded so every row ends at the last column.

    The pad id is irrelevant (masked out), so 0 serves even for tokenizers without a pad token.
    """
    import numpy as np

    if any(len(r) == 0 for r in rows):
        raise ValueError("a prompt encodes to no tokens; give some text")
    T = max(len(r) for r in rows)
    ids = np.zeros((len(rows), T), dtype=np.int64)
    mask = np.zeros((len(rows), T), dtype=np.int64)
    for i, r in enumerate(rows):
        sl = slice(T - len(r), T) if left else slice(0, len(r))
        ids[i, sl], mask[i, sl] = r, 1
    return ids, mask
