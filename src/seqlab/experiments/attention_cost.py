"""Q5: what does attention cost as the sequence grows, and what do the O(T)-memory variants buy?

For T = 128 … 16,384 (one head, d = 64, float32, batch 1) it times forward +
backward and measures peak memory with `tracemalloc` (NumPy reports its
array allocations to it) for:

- plain attention (`F.scaled_dot_product_attention`): O(T²) time and memory;
- memory-efficient attention (`nn.efficient_attention`, key/value chunks with
  an online softmax): O(T²) time, O(T) extra memory;
- causal sliding-window attention (each query sees the last `window` keys):
  O(T · window) time and O(T) memory.

The fitted exponent is the slope of log(cost) against log(T) over the points
with T >= 1024 (where fixed overheads no longer dominate).
Settings (``--set key=value``, see ``seqlab experiment attention-cost --help``):
max_len, window, chunk, max_plain_gib (plain attention is skipped where its
estimated memory exceeds this), repeats, head_dim.
"""
from __future__ import annotations

import json
import math
import pathlib
import time
import tracemalloc

import numpy as np

from seqlab.experiments.common import Setting, command_line, progress_for, settings_for

DESCRIPTION = "time and peak memory of attention (plain, memory-efficient, sliding-window) as T grows"
METHODS = ("plain", "memory-efficient", "sliding-window")
SETTINGS = (
    Setting("max_len", 16384, 1024, min=1, help="longest sequence; T = 128, 256, ... up to it"),
    Setting("window", 256, 64, min=1, help="keys each query sees in sliding-window attention"),
    Setting("chunk", 1024, 256, min=1, help="key/value chunk of memory-efficient attention"),
    Setting("max_plain_gib", 2.0, min=0, help="skip plain attention where its estimated memory exceeds this"),
    Setting("repeats", 1, min=1, help="timed runs per point (the best is kept)"),
    Setting("head_dim", 64, min=1, help="head dimension d"),
)


def _attention_fn(method: str, window: int, chunk: int):
    from seqlab import functional as F
    from seqlab.nn.efficient_attention import memory_efficient_attention, sliding_window_attention

    if method == "plain":
        return lambda q, k, v: F.scaled_dot_product_attention(q, k, v)
    if method == "memory-efficient":
        return lambda q, k, v: memory_efficient_attention(q, k, v, chunk_size=chunk)
    return lambda q, k, v: sliding_window_attention(q, k, v, window=window, causal=True, chunk_size=min(chunk, window))


def measure(method: str, T: int, d: int = 64, window: int = 256, chunk: int = 1024, seed: int = 0,
            repeats: int = 1) -> dict:
    """Seconds (best of `repeats`, untraced) and peak traced bytes (one traced run) of forward + backward at T.

    Inputs are allocated before tracing, so the peak is what attention itself adds.
    Timing runs without tracemalloc, whose bookkeeping would slow every allocation.
    """
    import seqlab

    rng = np.random.default_rng(seed)
    q, k, v, g = (rng.standard_normal((1, T, d), dtype=np.float32) for _ in range(4))  # (1, T, d)
    fn = _attention_fn(method, window, chunk)

    def once() -> float:
        tq, tk, tv = (seqlab.as_tensor(x).requires_grad_() for x in (q, k, v))  # shared: no copy in the peak
        t0 = time.perf_counter()
        fn(tq, tk, tv).backward(g)  # (1, T, d) out, then gradients for q, k, v
        return time.perf_counter() - t0

    seconds = min(once() for _ in range(repeats))
    tracemalloc.start()
    tracemalloc.reset_peak()
    once()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return {"seconds": seconds, "peak_bytes": int(peak)}


def plain_estimate_bytes(T: int) -> int:
    """About five float32 (T, T) arrays live at once in plain attention's forward + backward."""
    return 5 * 4 * T * T


def fit_exponent(ts, ys, min_t: int = 1024) -> float | None:
    """Slope of log y against log T over T >= min_t (None with fewer than two such points)."""
    pts = [(t, y) for t, y in zip(ts, ys) if t >= min_t and y > 0]
    if len(pts) < 2:
        pts = [(t, y) for t, y in zip(ts, ys) if y > 0][-3:]
    if len(pts) < 2:
        return None
    x = np.log([p[0] for p in pts])
    y = np.log([p[1] for p in pts])
    return float(np.polyfit(x, y, 1)[0])


def run(out_dir: pathlib.Path, args) -> dict:
    s = settings_for(__name__, args)
    quick = bool(getattr(args, "quick", False))
    max_len, window, chunk, repeats, d = s["max_len"], s["window"], s["chunk"], s["repeats"], s["head_dim"]
    max_plain = s["max_plain_gib"] * 2**30
    lengths = [128 * 2**i for i in range(int(math.log2(max_len // 128)) + 1)] if max_len >= 128 else [max_len]
    progress = progress_for(__name__, args)
    progress.say(f"forward + backward of {', '.join(METHODS)} attention at T = {', '.join(map(str, lengths))} "
                 f"(d = {d}, float32, {repeats} timed run{'s' if repeats > 1 else ''} + 1 traced each)")
    for method in METHODS:  # untimed: the first call pays one-time costs (compiled kernels, allocator growth)
        measure(method, lengths[0], d, window, chunk, getattr(args, "seed", 0), 1)
    bar = progress.bar(len(lengths) * len(METHODS), "attention cost", unit="point")
    rows = []
    for T in lengths:
        for method in METHODS:
            bar.set_postfix_str(f"T={T}, {method}", refresh=False)
            if method == "plain" and plain_estimate_bytes(T) > max_plain:
                rows.append({"T": T, "method": method, "seconds": None, "peak_bytes": None,
                             "skipped": f"estimated {plain_estimate_bytes(T) / 2**30:.1f} GiB > max_plain_gib"})
            else:
                rows.append({"T": T, "method": method,
                             **measure(method, T, d, window, chunk, getattr(args, "seed", 0), repeats)})
            bar.update(1)
    bar.close()
    summary = {}
    for method in METHODS:
        done = [r for r in rows if r["method"] == method and r["seconds"] is not None]
        ts = [r["T"] for r in done]
        summary[method] = {
            "time_exponent": fit_exponent(ts, [r["seconds"] for r in done]),
            "memory_exponent": fit_exponent(ts, [r["peak_bytes"] for r in done]),
            "largest_T": max(ts) if ts else None,
            "peak_MiB_at_largest_T": done[-1]["peak_bytes"] / 2**20 if done else None,
        }
    table = _table(rows, summary)
    import os

    threads = {k: os.environ.get(k) for k in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")}
    results = {"settings": {"head_dim": d, "window": window, "chunk": chunk, "dtype": "float32", "batch": 1,
                            "heads": 1, "max_plain_gib": max_plain / 2**30, "quick": quick,
                            "cpu_count": os.cpu_count(), "blas_threads_env": threads},
               "rows": rows, "summary": summary, "table": table, "command": command_line(__name__, args)}
    _plots(out_dir, rows)
    (out_dir / "results.json").write_text(json.dumps(results, indent=2) + "\n")
    (out_dir / "report.md").write_text(_report(results))
    return results


def _table(rows, summary) -> str:
    lines = [f"{'T':>6}  {'method':<17} {'seconds':>9} {'peak MiB':>9}"]
    for r in rows:
        if r["seconds"] is None:
            lines.append(f"{r['T']:>6}  {r['method']:<17} {'skipped':>9} {'':>9}  ({r['skipped']})")
        else:
            lines.append(f"{r['T']:>6}  {r['method']:<17} {r['seconds']:>9.4f} {r['peak_bytes'] / 2**20:>9.1f}")
    lines.append("")
    for m, s in summary.items():
        te = "n/a" if s["time_exponent"] is None else f"{s['time_exponent']:.2f}"
        me = "n/a" if s["memory_exponent"] is None else f"{s['memory_exponent']:.2f}"
        lines.append(f"{m:<17} time ~ T^{te}, memory ~ T^{me}")
    return "\n".join(lines)


def _plots(out_dir: pathlib.Path, rows) -> None:
    from seqlab.viz.plots import line_plot

    for key, name, label, scale in (("seconds", "time.png", "seconds (forward + backward)", 1.0),
                                    ("peak_bytes", "memory.png", "peak traced memory (MiB)", 2.0**-20)):
        series = {}
        for m in METHODS:
            done = [r for r in rows if r["method"] == m and r[key] is not None and r[key] > 0]
            if done:
                series[m] = ([math.log2(r["T"]) for r in done], [r[key] * scale for r in done])
        line_plot(series, out_dir / name, title=f"attention cost: {label}", xlabel="log2 T", ylabel=label, logy=True)


def _versus(rows) -> str:
    """One sentence comparing plain and memory-efficient time at the largest T where both ran."""
    both = [t for t in sorted({r["T"] for r in rows})
            if all(r["seconds"] is not None for r in rows if r["T"] == t and r["method"] != "sliding-window")]
    if not both:
        return "plain attention did not run at any length."
    t = both[-1]
    sec = {r["method"]: r["seconds"] for r in rows if r["T"] == t}
    return (f"at T = {t} it took {sec['memory-efficient']:.3g} s against plain attention's "
            f"{sec['plain']:.3g} s.")


def _report(results: dict) -> str:
    s, summ = results["settings"], results["summary"]
    def exp(m, k):
        v = summ[m][k]
        return "n/a" if v is None else f"{v:.2f}"
    eff = summ["memory-efficient"]
    return f"""# Attention cost (Q5)

One head, d = {s['head_dim']}, float32, batch 1, forward + backward; peak memory from `tracemalloc`
(inputs allocated before tracing). Memory-efficient chunk {s['chunk']}, sliding window {s['window']} (causal).
Reproduce: `{results['command']}`.

```
{results['table']}
```

![time](time.png) ![memory](memory.png)

## Reading

- **Plain attention** materialises the (T, T) scores and weights: time ~ T^{exp('plain', 'time_exponent')}
  and memory ~ T^{exp('plain', 'memory_exponent')} (2 is quadratic). At T = 16,384 one float32 (T, T) matrix
  is 1 GiB and backward needs several, so it is skipped above {s['max_plain_gib']:.1f} GiB estimated.
- **Memory-efficient attention** does the same arithmetic (time ~ T^{exp('memory-efficient', 'time_exponent')})
  but holds only chunk × chunk scores: memory ~ T^{exp('memory-efficient', 'memory_exponent')};
  at T = {eff['largest_T']} it peaked at {(eff['peak_MiB_at_largest_T'] or 0):.1f} MiB. It recomputes the
  weights in backward (more arithmetic) but never writes a (T, T) array to memory; {_versus(results['rows'])}
- **Sliding-window attention** changes the model: each token sees only the last {s['window']} tokens, so both
  time (~ T^{exp('sliding-window', 'time_exponent')}) and memory grow linearly.

Timings depend on the machine and its load: on a busy machine, run with `OPENBLAS_NUM_THREADS=1`
(results.json records the setting), since a multi-threaded BLAS whose threads wait on each other makes the many
small block products of the chunked kernels far slower than their arithmetic.

When to use which: plain attention while T² fits comfortably (short sequences, and whenever the weights
themselves are wanted, e.g. for the attention viewer); memory-efficient attention for long sequences
when every token must see every other (exact same outputs); sliding windows when locality is a fair
assumption and T is very long (stacking L layers still gives a receptive field of L × window).
"""
