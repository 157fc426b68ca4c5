"""Forward + backward of the core ops, seqlab vs PyTorch CPU eager, side by side.

    python benchmarks/ops.py                              # print the table
    python benchmarks/ops.py --results docs/results.md    # and record it there

Transformer-like sizes: batch 32, sequence 64, d_model 256, 4 heads, vocab
8,000, float32. Every op runs on the same inputs in both libraries and is
pulled back with the same upstream gradient; see common.py for the timing.
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _cli import fail, positive_int, run_main, thread_counts, valid_thread_counts  # noqa: E402


def _threads_from_argv(argv: list[str]) -> str | None:
    """`--threads N` must act before NumPy loads its BLAS, so it is read from argv first."""
    for i, a in enumerate(argv):
        if a == "--threads" and i + 1 < len(argv):
            return argv[i + 1]
        if a.startswith("--threads="):
            return a.split("=", 1)[1]
    return None


_n = _threads_from_argv(sys.argv[1:])
# several counts: each child process sets its own; a bad count is left to the parser to refuse
if _n is not None and ("," in _n or not valid_thread_counts(_n)):
    _n = None
if _n is not None:
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = _n

import numpy as np  # noqa: E402

from common import (  # noqa: E402
    blas_env_prefix, compare, machine_info, markdown_table, match_threads, numpy_blas_text, write_section,
)

B, T, D, H, V = 32, 64, 256, 4, 8000
OPS = ("matmul", "softmax", "log_softmax + cross_entropy", "layer_norm", "gelu (erf)", "gelu (tanh)", "embedding",
       "attention", "attention (causal)", "attention (split qkv)",
       "attention (packed qkv)", "bias + gelu + dropout (3 ops)",
       "bias + gelu + dropout (1 op)")  # the names of _cases, in order (what --only accepts)


def _cases(rng: np.random.Generator):
    """(name, shape text, seqlab fn, torch fn, input arrays, int inputs) for each op."""
    import torch
    import torch.nn.functional as TF

    import seqlab.functional as F

    f32 = np.float32
    x = rng.standard_normal((B, T, D)).astype(f32)
    w = (rng.standard_normal((D, 4 * D)) * 0.05).astype(f32)
    scores = rng.standard_normal((B, H, T, T)).astype(f32)
    logits = rng.standard_normal((B * T, V)).astype(f32)
    target = rng.integers(0, V, B * T)
    ln_w, ln_b = rng.standard_normal(D).astype(f32), rng.standard_normal(D).astype(f32)
    hidden = rng.standard_normal((B, T, 4 * D)).astype(f32)
    table = rng.standard_normal((V, D)).astype(f32)
    ids = rng.integers(0, V, (B, T))
    q, k, v = (rng.standard_normal((B, H, T, D // H)).astype(f32) for _ in range(3))
    qkv = rng.standard_normal((B, T, 3 * D)).astype(f32)  # an in-projection's output
    ff_bias = rng.standard_normal(4 * D).astype(f32)

    def split_heads(a, sdpa):  # what torch's multi-head attention does with it: split, heads, SDPA
        q_, k_, v_ = (t.reshape(B, T, H, D // H).transpose(1, 2) for t in a.split(D, dim=-1))
        return sdpa(q_, k_, v_)
    return [
        ("matmul", f"({B}, {T}, {D}) @ ({D}, {4 * D})", lambda a, b: a @ b, lambda a, b: a @ b, [x, w], []),
        ("softmax", f"({B}, {H}, {T}, {T}), dim -1", lambda s: F.softmax(s, -1), lambda s: TF.softmax(s, -1),
         [scores], []),
        ("log_softmax + cross_entropy", f"({B * T}, {V})", lambda z, t: F.cross_entropy(z, t),
         lambda z, t: TF.cross_entropy(z, t), [logits], [target]),
        ("layer_norm", f"({B}, {T}, {D})", lambda a, g, b: F.layer_norm(a, D, g, b),
         lambda a, g, b: TF.layer_norm(a, (D,), g, b), [x, ln_w, ln_b], []),
        ("gelu (erf)", f"({B}, {T}, {4 * D})", F.gelu, TF.gelu, [hidden], []),
        ("gelu (tanh)", f"({B}, {T}, {4 * D})", lambda a: F.gelu(a, "tanh"), lambda a: TF.gelu(a, approximate="tanh"),
         [hidden], []),
        ("embedding", f"ids ({B}, {T}) into ({V}, {D})", lambda wt, i: F.embedding(i, wt),
         lambda wt, i: TF.embedding(i, wt), [table], [ids]),
        ("attention", f"q, k, v ({B}, {H}, {T}, {D // H})", F.scaled_dot_product_attention,
         TF.scaled_dot_product_attention, [q, k, v], []),
        ("attention (causal)", f"q, k, v ({B}, {H}, {T}, {D // H})",
         lambda a, b, c: F.scaled_dot_product_attention(a, b, c, is_causal=True),
         lambda a, b, c: TF.scaled_dot_product_attention(a, b, c, is_causal=True), [q, k, v], []),
        ("attention (split qkv)", f"qkv ({B}, {T}, {3 * D}), {H} heads",
         lambda a: split_heads(a, F.scaled_dot_product_attention),
         lambda a: split_heads(a, TF.scaled_dot_product_attention), [qkv], []),
        ("attention (packed qkv)", f"qkv ({B}, {T}, {3 * D}), {H} heads", lambda a: F.attention_qkv(a, H)[0],
         lambda a: split_heads(a, TF.scaled_dot_product_attention), [qkv], []),
        ("bias + gelu + dropout (3 ops)", f"({B}, {T}, {4 * D}) + bias, p 0.1",
         lambda a, b: F.dropout(F.gelu(a + b), 0.1), lambda a, b: TF.dropout(TF.gelu(a + b), 0.1), [hidden, ff_bias],
         []),
        ("bias + gelu + dropout (1 op)", f"({B}, {T}, {4 * D}) + bias, p 0.1",
         lambda a, b: F.bias_act_dropout(a, b, "gelu", 0.1), lambda a, b: TF.dropout(TF.gelu(a + b), 0.1),
         [hidden, ff_bias], []),
    ], torch


def _runner_seqlab(fn, floats, ints, grad_out):
    import seqlab

    tensors = [seqlab.tensor(a, requires_grad=True) for a in floats]

    def run():
        for t in tensors:
            t.grad = None
        out = fn(*tensors, *ints)
        out.backward(grad_out)
    return run


def _runner_torch(torch, fn, floats, ints, grad_out):
    tensors = [torch.from_numpy(a.copy()).requires_grad_(True) for a in floats]
    int_t = [torch.from_numpy(i) for i in ints]
    g = torch.from_numpy(grad_out)

    def run():
        for t in tensors:
            t.grad = None
        out = fn(*tensors, *int_t)
        out.backward(g)
    return run


NOTES = """How to read it: a ratio below 1 means seqlab is faster. The machine this ran on is
shared (its load average is printed with each table), so single figures move by up to 2x between
runs; the ratio of the alternating medians is the figure to compare. Where seqlab is slower the op
is a chain of element-wise steps that PyTorch fuses into one loop, while NumPy makes one pass over
memory per step (when Numba is not installed: exact-erf GELU, whose Φ costs ~20 NumPy passes,
softmax and layer_norm). What seqlab already does about it, each held to the plain version by a
test: with Numba, layer_norm, the softmax, GELU and dropout run as compiled kernels
(`seqlab.kernels`, one sweep per row or block in cache, e^x inlined); with MKL, float32 products
go to its sgemm, and without Numba GELU's Φ to its vector math (`seqlab.mkl`); batched @ 2-D matrices go
through one 2-D GEMM (NumPy's stacked matmul misses BLAS there, 30x slower); the embedding
gradient is a sparse one-hot product instead of `np.add.at` (15x); float32 Φ uses a
fitted tanh form ½(1 + tanh(x·P(x²))) instead of SciPy's erf (about 5x); row sums go through einsum, not BLAS gemv
(which waits on busy BLAS threads: 16 ms instead of 0.05 ms here); softmax, attention, GELU and
layer norm work in place in one or two temporaries; the autograd engine adds gradients into
buffers it owns and skips defensive copies of fresh arrays.
The two qkv rows start where multi-head self-attention does, from one (B, T, 3E) in-projection
output: split into q, k and v by slicing (the engine then adds the three gradient slices into a
zeroed array), or handed in packed (`F.attention_qkv`, one gradient array written in place); torch
splits in both. The two bias + gelu + dropout rows are a feed-forward's middle after its first
product: three ops, or one compiled pass forward and one backward (`F.bias_act_dropout`, which the
Transformer layers, GPT-2's MLP and BERT's intermediate layer run); torch runs three in both."""


def run_table(rounds: int, only: str) -> tuple[str, dict]:
    """Time every op in this process; the markdown table (and the machine line)."""
    threads = match_threads()
    load_before = _loadavg()
    rng = np.random.default_rng(0)
    cases, torch = _cases(rng)
    assert tuple(c[0] for c in cases) == OPS, "OPS must list _cases' names"
    wanted = {w.strip() for w in only.split(",") if w.strip()}
    rows = []
    for name, shape, fs, ft, floats, ints in cases:
        if wanted and name not in wanted:
            continue
        with torch.no_grad():
            out_shape = tuple(ft(*[torch.from_numpy(a) for a in floats], *[torch.from_numpy(i) for i in ints]).shape)
        grad_out = rng.standard_normal(out_shape).astype(np.float32)
        timing = compare(_runner_seqlab(fs, floats, ints, grad_out), _runner_torch(torch, ft, floats, ints, grad_out),
                         rounds=rounds)
        rows.append([name, shape, f"{timing.seqlab_s * 1e3:.2f}", f"{timing.torch_s * 1e3:.2f}",
                     f"{timing.ratio:.2f}"])
        print(f"{name:28s} seqlab {timing.seqlab_s * 1e3:8.2f} ms   torch {timing.torch_s * 1e3:8.2f} ms   "
              f"ratio {timing.ratio:.2f}", file=sys.stderr)
    info = machine_info(threads)
    table = markdown_table(["op (forward + backward)", "shape", "seqlab ms", "torch ms", "seqlab / torch"], rows)
    return (f"**{threads} thread{'s' if threads != 1 else ''}** for both libraries. "
            f"Load average before / after: {load_before} / {_loadavg()}.\n\n{table}\n"), info


def _loadavg() -> str:
    try:
        return Path("/proc/loadavg").read_text().split()[0]
    except OSError:
        return "n/a"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=positive_int, default=7, help="alternating timing rounds per op (default 7)")
    p.add_argument("--only", default="", help="comma-separated op names (default: all)")
    p.add_argument("--results", type=Path, default=None, help="write the table(s) into this markdown file")
    p.add_argument("--emit-json", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--threads", type=thread_counts, default=None,
                   help="threads for both libraries, or a comma-separated list (one table each, each in its "
                        "own process, since NumPy's BLAS reads its thread count when it loads)")
    args = p.parse_args(argv)
    unknown = [w for w in (w.strip() for w in args.only.split(",")) if w and w not in OPS]
    if unknown:
        p.error(f"--only: unknown op {', '.join(map(repr, unknown))}; the ops are: {', '.join(OPS)}")
    argv = list(argv if argv is not None else sys.argv[1:])
    counts = args.threads or []
    if len(counts) > 1:  # one child process per thread count
        import subprocess

        tables, info = [], None
        for n in counts:
            child = [sys.executable, __file__, "--threads", n, "--rounds", str(args.rounds), "--only", args.only,
                     "--emit-json"]
            proc = subprocess.run(child, capture_output=True, text=True)
            if proc.returncode != 0:
                sys.stderr.write(proc.stderr[-3000:])
                fail(f"the run with --threads {n} failed (exit code {proc.returncode})")
            out = proc.stdout
            import json

            res = json.loads(out.strip().splitlines()[-1])
            tables.append(res["table"])
            info = res["info"]
            sys.stderr.write(res["table"] + "\n")
    else:
        table, info = run_table(args.rounds, args.only)
        tables = [table]
        if "--emit-json" in argv:
            import json

            print(json.dumps({"table": table, "info": info}))
            return 0
    command = blas_env_prefix() + " ".join(["python benchmarks/ops.py"] + [a for a in argv if a != "--emit-json"])
    body = (f"Command: `{command}`\n\n"
            f"Machine: {info['cpu']}, {info['cores']} cores; Python {info['python']}, NumPy {info['numpy']} "
            f"({numpy_blas_text(info)}), seqlab's products on {info['seqlab_blas']}, row kernels on "
            f"{info['seqlab_kernels']}, torch {info['torch']}; {info['date']}. Forward + backward of each op "
            f"on the same float32 inputs and upstream gradient; medians of {args.rounds} alternating rounds "
            f"(see benchmarks/common.py).\n\n" + "\n".join(tables) + "\n" + NOTES + "\n")
    print(body)
    if args.results is not None:
        write_section(args.results, "Ops: seqlab vs PyTorch", body)
    return 0


if __name__ == "__main__":
    run_main(main)
