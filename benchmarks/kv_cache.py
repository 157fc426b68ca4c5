"""KV-cache benchmark: time per generated token at positions 0–100 vs 900–1000 for a small GPT.

    python benchmarks/kv_cache.py [--n-embd 128 --n-layer 4 --n-head 4 --repeats 3 --json out.json]

With the cache, step t feeds one token: every layer projects it, appends its
key/value to the cache and attends over t keys. The only part that grows with
t is that attention (O(t·C) per layer, against O(C²) for the projections and
the MLP), so the two windows should cost about the same; the issue's target is
a ratio within 1.5x. Without the cache each step re-runs the whole prefix (the
ratio is then roughly the ratio of the positions); that column is measured on
fewer steps to keep the run short.

One-token steps are far too small for BLAS threads, which only add
synchronisation noise on a busy machine, so the script pins OpenBLAS/MKL to
one thread unless the environment already says otherwise.
"""
from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "OMP_NUM_THREADS"):
    os.environ.setdefault(_var, "1")  # before NumPy loads its BLAS

import argparse  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

import seqlab  # noqa: E402
from _cli import check_output_file, positive_int, run_main  # noqa: E402
from seqlab.models.gpt import GPT, GPTConfig  # noqa: E402
from seqlab.models.outputs import KVCache  # noqa: E402


def step_times(model: GPT, total: int, use_cache: bool, windows: list[tuple[int, int]]) -> dict:
    """Seconds per token, median over each window [a, b) of positions, decoding greedily from one token."""
    rng = np.random.default_rng(0)
    seq = rng.integers(0, model.config.vocab_size, (1, 1))
    cache = KVCache() if use_cache else None
    times = np.full(total, np.nan)
    needed = max(b for _, b in windows)
    with seqlab.no_grad():
        for t in range(needed):
            if not use_cache and not any(a <= t < b for a, b in windows):
                seq = np.concatenate([seq, seq[:, -1:]], 1)  # skip the untimed steps (no state to keep)
                continue
            start = time.perf_counter()
            if use_cache:
                out = model(seq[:, -1:], past_key_values=cache, use_cache=True)
            else:
                out = model(seq)
            nxt = out.logits.data[:, -1].argmax(-1)
            times[t] = time.perf_counter() - start
            seq = np.concatenate([seq, nxt[:, None]], 1)
    return {f"{a}-{b}": float(np.nanmedian(times[a:b])) for a, b in windows}


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n-embd", type=positive_int, default=128)
    p.add_argument("--n-layer", type=positive_int, default=4)
    p.add_argument("--n-head", type=positive_int, default=4)
    p.add_argument("--vocab", type=positive_int, default=2048)
    p.add_argument("--repeats", type=positive_int, default=3, help="best of this many runs per window")
    p.add_argument("--no-uncached", action="store_true", help="skip the (slow) run without the cache")
    p.add_argument("--json", default=None, help="also write the results here")
    args = p.parse_args(argv)
    if args.n_embd % args.n_head:
        p.error(f"--n-embd ({args.n_embd}) must be a multiple of --n-head ({args.n_head})")
    check_output_file(p, "--json", args.json)

    seqlab.manual_seed(0)
    cfg = GPTConfig(vocab_size=args.vocab, n_positions=1024, n_embd=args.n_embd, n_layer=args.n_layer,
                    n_head=args.n_head, bos_token_id=0, eos_token_id=0)
    model = GPT(cfg).eval()
    windows = [(0, 100), (900, 1000)]
    runs = [step_times(model, 1000, True, windows) for _ in range(args.repeats)]
    cached = {k: min(r[k] for r in runs) for k in runs[0]}
    result = {
        "model": f"GPT n_embd={args.n_embd} n_layer={args.n_layer} n_head={args.n_head} vocab={args.vocab}",
        "machine": f"{platform.processor() or platform.machine()}, numpy {np.__version__}",
        "cached_ms_per_token": {k: 1e3 * v for k, v in cached.items()},
        "cached_ratio_900_1000_vs_0_100": cached["900-1000"] / cached["0-100"],
    }
    if not args.no_uncached:
        short = [(0, 20), (900, 920)]
        unc = step_times(model, 1000, False, short)
        result["uncached_ms_per_token"] = {k: 1e3 * v for k, v in unc.items()}
        result["uncached_ratio"] = unc["900-920"] / unc["0-20"]
    print(f"{result['model']}  ({result['machine']})")
    c = result["cached_ms_per_token"]
    print(f"with cache:    {c['0-100']:.3f} ms/token at positions 0-100, {c['900-1000']:.3f} at 900-1000 "
          f"-> ratio {result['cached_ratio_900_1000_vs_0_100']:.2f} (target <= 1.5)")
    if "uncached_ms_per_token" in result:
        u = result["uncached_ms_per_token"]
        print(f"without cache: {u['0-20']:.3f} ms/token at positions 0-20, {u['900-920']:.3f} at 900-920 "
              f"-> ratio {result['uncached_ratio']:.1f}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(result, f, indent=2)
    return result


if __name__ == "__main__":
    run_main(main)
