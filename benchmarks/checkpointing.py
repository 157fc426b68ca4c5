"""What gradient checkpointing buys and costs: a GPT training step with and without
`model.gradient_checkpointing_enable()` (torch's reentrant kind, transformers' default, and
`{"use_reentrant": False}`), its peak traced memory and its CPU time.

    OPENBLAS_NUM_THREADS=1 python benchmarks/checkpointing.py --layers 6 --steps 5

The peak is tracemalloc's (NumPy's buffers are traced): everything the step allocated above what it
started from, the graph's saved activations included, measured on one step after a warm-up step. The
time is the median CPU time of `--steps` steps, the two settings alternated round by round.
"""
from __future__ import annotations

import argparse
import statistics
import time
import tracemalloc

import numpy as np

import seqlab
from seqlab.models.gpt import GPT, GPTConfig


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--layers", type=int, default=6)
    ap.add_argument("--dim", type=int, default=64)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--block", type=int, default=128)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    seqlab.manual_seed(0)
    model = GPT(GPTConfig(vocab_size=64, n_layer=a.layers, n_head=a.heads, n_embd=a.dim, n_positions=a.block))
    model.train()
    ids = np.random.default_rng(0).integers(0, 64, (a.batch, a.block))

    def step() -> None:
        model.zero_grad()
        model(input_ids=ids, labels=ids).loss.backward()

    kinds = {"plain": None, "reentrant": {"use_reentrant": True}, "non-reentrant": {"use_reentrant": False}}

    def switch(kind: str) -> None:
        if kinds[kind] is None:
            model.gradient_checkpointing_disable()
        else:
            model.gradient_checkpointing_enable(kinds[kind])

    step()  # one-time allocations outside both measurements
    peaks, times = {}, {k: [] for k in kinds}
    for on in kinds:
        switch(on)
        tracemalloc.start()
        step()
        peaks[on] = tracemalloc.get_traced_memory()[1] / 2**20
        tracemalloc.stop()
    for _ in range(a.rounds):
        for on in kinds:
            switch(on)
            for _ in range(a.steps):
                t = time.process_time()
                step()
                times[on].append((time.process_time() - t) * 1e3)
    print(f"GPT {a.layers} layers, {a.dim} dims, {a.heads} heads, batch {a.batch} x {a.block} tokens")
    for on in kinds:
        print(f"  {on:13s}  peak {peaks[on]:6.1f} MiB   "
              f"step {statistics.median(times[on]):6.1f} ms CPU (min {min(times[on]):.1f}, max {max(times[on]):.1f})")
    for on in ("reentrant", "non-reentrant"):
        print(f"  {on} / plain: memory {peaks[on] / peaks['plain']:.2f}x, "
              f"time {statistics.median(times[on]) / statistics.median(times['plain']):.2f}x")


if __name__ == "__main__":
    main()
