"""nn.TransformerEncoder's inference fast path on a padded batch: seqlab and torch, each with the fast path
(`enable_nested_tensor=True`, the default: the layers run on the real tokens only) and without it, on the same
weights and inputs, alternated; median CPU ms per forward.

    OPENBLAS_NUM_THREADS=1 python benchmarks/padding_fast_path.py --data-dir ../shared/data

The batch is the first 32 SST-2 dev sentences' padding (the bert-infer benchmark's ids), through a
MiniLM-sized encoder: 6 post-LN layers, 384 dims, 12 heads, feed-forward 1,536, GELU.
"""
from __future__ import annotations

import argparse
import statistics
import time
import warnings

from _cli import check_data_dir, positive_int, run_main

import numpy as np
import torch

import seqlab
from seqlab import nn
from seqlab.bench.bert_infer import make_inputs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data-dir", default=None)
    ap.add_argument("--threads", type=positive_int, default=1)
    ap.add_argument("--rounds", type=positive_int, default=5)
    ap.add_argument("--steps", type=positive_int, default=3)
    a = ap.parse_args()
    check_data_dir(a.data_dir)
    seqlab.set_num_threads(a.threads)
    torch.set_num_threads(a.threads)
    pad = make_inputs(32, a.data_dir)["attention_mask"] == 0
    B, T = pad.shape
    x = np.random.default_rng(0).standard_normal((B, T, 384)).astype(np.float32)
    torch.manual_seed(0)
    models = {}
    for nested in (True, False):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            theirs = torch.nn.TransformerEncoder(torch.nn.TransformerEncoderLayer(
                384, 12, 1536, activation="gelu", batch_first=True), 6, enable_nested_tensor=nested).eval()
        if nested:
            state = theirs.state_dict()
        theirs.load_state_dict(state)
        ours = nn.TransformerEncoder(nn.TransformerEncoderLayer(384, 12, 1536, activation="gelu"), 6,
                                     enable_nested_tensor=nested).eval()
        ours.load_state_dict({k: seqlab.tensor(v.numpy()) for k, v in state.items()})
        models[("seqlab", nested)] = lambda m=ours: m(seqlab.tensor(x), src_key_padding_mask=pad).numpy()
        models[("torch", nested)] = lambda m=theirs: m(torch.from_numpy(x),
                                                       src_key_padding_mask=torch.from_numpy(pad)).numpy()
    times = {k: [] for k in models}
    with seqlab.no_grad(), torch.inference_mode(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        outs = {k: f() for k, f in models.items()}
        for _ in range(a.rounds):
            for k, f in models.items():
                for _ in range(a.steps):
                    t = time.process_time()
                    f()
                    times[k].append((time.process_time() - t) * 1e3)
    real = ~pad
    print(f"{B} x {T} tokens, {real.sum()} real ({real.mean():.0%}); 6 layers, 384 dims; {a.threads} thread(s)")
    for (lib, nested), ts in times.items():
        print(f"  {lib:6s} {'fast path' if nested else 'full':9s}  {statistics.median(ts):7.1f} ms CPU")
    med = {k: statistics.median(ts) for k, ts in times.items()}
    for lib in ("seqlab", "torch"):
        print(f"  {lib} fast / full: {med[(lib, True)] / med[(lib, False)]:.2f}x")
    print(f"  seqlab / torch, fast path: {med[('seqlab', True)] / med[('torch', True)]:.2f}x")
    diff = max(float(np.abs(outs[("seqlab", n)] - outs[("torch", n)]).max()) for n in (True, False))
    print(f"  max |seqlab - torch| over every position, both paths: {diff:.1e}")


if __name__ == "__main__":
    run_main(main)
