"""An experiment, not a feature: a training step split by rows across threads (data parallel inside one
process), against seqlab's plain step on the same threads and against torch's.

    python benchmarks/data_parallel_threads.py encoder-train
    python benchmarks/data_parallel_threads.py gpt-train

Each of the `--threads` threads runs forward and backward on its chunk of the batch with the BLAS and the
kernels on one thread, through `seqlab.autograd.grad` (gradients returned, not accumulated: the chunks share
the parameters); the chunks' gradients are summed and AdamW steps once. The chunk losses are weighted by
their share of the batch, so the summed gradients are the whole batch's (checked first, dropout off).
This is what the inference split (seqlab.batch_threads) would become for training; it measures whether that
would pay before the engine is built for it. Median wall ms of `--steps` steps, `--rounds` alternations.
"""
from __future__ import annotations

import argparse
import statistics
from concurrent.futures import ThreadPoolExecutor

from _cli import positive_int, run_main

import numpy as np
import torch

import seqlab
from seqlab import functional as F
from seqlab.bench.harness import median_wall_ms
from seqlab.blas import set_blas_threads


def _encoder_train():
    from seqlab.bench import encoder_train

    step, torch_step, model, _ = encoder_train.build()
    c = encoder_train.EncoderTrainConfig()
    x = encoder_train.make_inputs(c)
    ids, mask, labels = x["ids"], x["real"].astype(np.int64), x["labels"]
    loss = lambda s: model(ids[s], attention_mask=mask[s], labels=labels[s]).loss  # noqa: E731
    return model, torch_step, ids.shape[0], loss, dict(lr=c.lr, weight_decay=c.weight_decay)


def _gpt_train():
    from seqlab.bench import gpt_train

    step, torch_step, model, _ = gpt_train.build()
    c = gpt_train.GPTTrainConfig()
    x, y = gpt_train.make_batch(c)
    loss = lambda s: F.cross_entropy(model(x[s]).logits.reshape(-1, c.vocab_size), y[s].reshape(-1))  # noqa: E731
    return model, torch_step, x.shape[0], loss, dict(lr=c.lr, betas=c.betas, weight_decay=c.weight_decay)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("name", choices=("encoder-train", "gpt-train"))
    ap.add_argument("--threads", type=positive_int, default=2)
    ap.add_argument("--steps", type=positive_int, default=5)
    ap.add_argument("--rounds", type=positive_int, default=4)
    a = ap.parse_args()
    seqlab.set_num_threads(a.threads)
    torch.set_num_threads(a.threads)
    model, torch_step, B, chunk_loss, opt_args = (_encoder_train if a.name == "encoder-train" else _gpt_train)()
    params = [p for p in model.parameters() if p.requires_grad]
    opt = seqlab.optim.AdamW(params, **opt_args)
    cuts = np.linspace(0, B, a.threads + 1).astype(int)
    chunks = [slice(lo, hi) for lo, hi in zip(cuts[:-1], cuts[1:])]
    pool = ThreadPoolExecutor(a.threads)

    def chunk_grads(s: slice):
        with seqlab.enable_grad():  # grad mode is per thread
            loss = chunk_loss(s) * ((s.stop - s.start) / B)
            return float(loss.item()), seqlab.autograd.grad(loss, params, allow_unused=True)

    def split_grads():
        set_blas_threads(1)
        try:
            parts = list(pool.map(chunk_grads, chunks))
        finally:
            set_blas_threads(a.threads)
        return sum(p[0] for p in parts), [None if gs[0] is None else sum(g.data for g in gs)
                                          for gs in zip(*(p[1] for p in parts))]

    def split_step():
        opt.zero_grad()
        _, grads = split_grads()
        for p, g in zip(params, grads):
            p.grad = g
        opt.step()

    def plain_step():
        opt.zero_grad()
        chunk_loss(slice(0, B)).backward()
        opt.step()

    model.eval()  # dropout off: the split's gradients must be the whole batch's
    opt.zero_grad()
    chunk_loss(slice(0, B)).backward()
    want = [p.grad.copy() for p in params]
    _, got = split_grads()
    diff = max(float(np.abs(w - g).max()) for w, g in zip(want, got))
    print(f"{a.name}, batch {B} in {len(chunks)} chunks; largest |split − plain| gradient: {diff:.1e}")
    model.train()
    plain_step(), split_step(), torch_step()
    times = {"plain": [], "split": [], "torch": []}
    for _ in range(a.rounds):
        for k, fn in (("plain", plain_step), ("split", split_step), ("torch", torch_step)):
            times[k].append(median_wall_ms(fn, a.steps))
    med = {k: statistics.median(v) for k, v in times.items()}
    seqlab.set_num_threads(1)
    one = median_wall_ms(plain_step, a.steps)
    print(f"{a.threads} threads, median of {a.rounds} rounds of {a.steps} steps:")
    print(f"  seqlab plain {med['plain']:.1f} ms, split {med['split']:.1f} ms ({med['split'] / med['plain']:.2f}×), "
          f"torch {med['torch']:.1f} ms")
    print(f"  seqlab / torch: plain {med['plain'] / med['torch']:.2f}, split {med['split'] / med['torch']:.2f}")
    print(f"  seqlab plain on 1 thread {one:.1f} ms: speed-up plain {one / med['plain']:.2f}×, "
          f"split {one / med['split']:.2f}×")
    if a.name == "encoder-train":
        from seqlab.bench.encoder_train import EncoderTrainConfig, train_flops

        gflop = train_flops(EncoderTrainConfig()) / 1e9
        print(f"  {gflop:.1f} GFLOP of products a step: plain {gflop / med['plain'] * 1e3:.1f} GFLOP/s, "
              f"split {gflop / med['split'] * 1e3:.1f} GFLOP/s")


if __name__ == "__main__":
    run_main(main)
