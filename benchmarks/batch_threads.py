"""BERT inference with the batch split across threads (seqlab.batch_threads) against the same forward unsplit
and against transformers, at several batch sizes; the pretrained MiniLM, same ids, alternated; median wall ms.

    python benchmarks/batch_threads.py --threads 2

Each size is timed as: seqlab as it is (split where `batch_threads.chunks` says so), seqlab split whatever the
size (`MIN_CHUNK_MACS` = 1: the case for the threshold), seqlab unsplit (`batch_threads.set_enabled(False)`: the
BLAS and the kernels threaded op by op), transformers' BertModel (SDPA attention, `torch.inference_mode`),
all on `--threads` threads; then seqlab and transformers on one thread, for the speed-up each gets from the
extra threads. Wall time, not CPU time: a split keeps every thread busy, and the point is the waiting.
Rows are random ids, the second half of the batch padded for its last third.
"""
from __future__ import annotations

import argparse
import statistics

from _cli import positive_int, run_main

import numpy as np
import torch
import transformers

import seqlab
from seqlab import batch_threads
from seqlab.bench.harness import median_wall_ms
from seqlab.hub.pretrained import resolve
from seqlab.models import BertModel

SIZES = [(2, 8), (4, 16), (8, 16), (8, 44), (16, 44), (32, 44), (32, 128), (64, 64)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=positive_int, default=2)
    ap.add_argument("--rounds", type=positive_int, default=3)
    a = ap.parse_args()
    transformers.logging.set_verbosity_error()
    transformers.utils.logging.disable_progress_bar()
    folder = resolve("minilm")
    ours = BertModel.from_pretrained(folder).eval()
    theirs = transformers.BertModel.from_pretrained(str(folder)).eval()
    rng = np.random.default_rng(0)
    print(f"MiniLM (6 layers, 384 hidden); {a.threads} threads unless said; median wall ms of {a.rounds} rounds")
    print("| batch × tokens | split (default) | forced split | unsplit | transformers | default / unsplit "
          "| forced / unsplit | default / transformers | unsplit / transformers | seqlab 1 thread "
          "| transformers 1 thread |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for B, T in SIZES:
        ids = rng.integers(1000, 20000, (B, T))
        mask = np.ones((B, T), np.int64)
        mask[B // 2:, T * 2 // 3:] = 0
        t_ids, t_mask = torch.from_numpy(ids), torch.from_numpy(mask)

        def split():
            with seqlab.no_grad():
                return ours(ids, attention_mask=mask).last_hidden_state

        def unsplit():
            batch_threads.set_enabled(False)
            try:
                return split()
            finally:
                batch_threads.set_enabled(True)

        def forced():
            kept, batch_threads.MIN_CHUNK_MACS = batch_threads.MIN_CHUNK_MACS, 1
            try:
                return split()
            finally:
                batch_threads.MIN_CHUNK_MACS = kept

        def hf():
            with torch.inference_mode():
                return theirs(input_ids=t_ids, attention_mask=t_mask).last_hidden_state

        calls = max(3, 4000 // (B * T))
        med = {}
        for threads, fns in ((a.threads, {"split": split, "forced": forced, "unsplit": unsplit, "hf": hf}),
                             (1, {"one": split, "hf one": hf})):
            seqlab.set_num_threads(threads)
            torch.set_num_threads(threads)
            for fn in fns.values():
                fn()
            rounds = {k: [] for k in fns}
            for _ in range(a.rounds):
                for k, fn in fns.items():
                    rounds[k].append(median_wall_ms(fn, calls))
            med.update({k: statistics.median(v) for k, v in rounds.items()})
        real = mask.astype(bool)
        diff = float(np.abs(split().numpy()[real] - hf().numpy()[real]).max())
        assert diff < 1e-3, diff
        print(f"| {B} × {T} | {med['split']:.1f} | {med['forced']:.1f} | {med['unsplit']:.1f} | {med['hf']:.1f} "
              f"| {med['split'] / med['unsplit']:.2f} | {med['forced'] / med['unsplit']:.2f} "
              f"| {med['split'] / med['hf']:.2f} "
              f"| {med['unsplit'] / med['hf']:.2f} | {med['one']:.1f} | {med['hf one']:.1f} |")
        seqlab.set_num_threads(a.threads)
        torch.set_num_threads(a.threads)
    print(f"seqlab splits a batch when each chunk has >= MIN_CHUNK_MACS = {batch_threads.MIN_CHUNK_MACS:,} "
          f"multiply-adds a layer; below that, default / unsplit is 1 up to noise")


if __name__ == "__main__":
    run_main(main)
