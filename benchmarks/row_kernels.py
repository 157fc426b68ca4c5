"""seqlab's compiled kernels (Numba) against its NumPy formulas and torch, op by op, forward and backward.

    python benchmarks/row_kernels.py [--repeats 200] [--threads 1]

For each op and shape (and the dropout mask's draw and an AdamW step): the
median microseconds of seqlab's op with the
kernels off (`seqlab.kernels.use("numpy")`: the NumPy formulas), with them on
(`use("numba")`), and of torch's own op, all on the same float32 inputs in one
process, forward and backward timed apart (torch's backward as its
fused-graph backward minus nothing else: `torch.autograd.grad` of a kept
output). Needs Numba (`pip install 'seqlab[numba]'`). The figures are in
docs/results.md ("Compiled row kernels").
"""
from __future__ import annotations

import argparse

import numpy as np

from _cli import fail, positive_int, run_main
from elementwise_threads import median_ms

from seqlab import kernels
from seqlab.autograd.ops.activation import GELU
from seqlab.autograd.ops.fused import Dropout, LayerNorm, Softmax, softmax_array
from seqlab.functional import _keep_mask
from seqlab.bench.harness import set_threads


def median_us(fn, repeats: int) -> float:
    return median_ms(fn, repeats) * 1e3


def _layer_norm(rng, shape):
    import torch

    x, w, b, g = (rng.standard_normal(s).astype(np.float32) for s in (shape, shape[-1:], shape[-1:], shape))

    def forward():
        op = LayerNorm()
        op.needs_input_grad = (True, True, True)
        op.forward(x, w, b)
        return op

    kept = {}  # the kernel keeps x, μ and r, the NumPy formula x̂: each backward from its own forward

    def backward():
        mode = kernels.library()
        if mode not in kept:
            kept[mode] = forward()
        return kept[mode].backward(g)

    xt = torch.from_numpy(x).requires_grad_(True)
    lt = torch.nn.LayerNorm(shape[-1])
    yt = lt(xt)
    gt = torch.from_numpy(g)
    return [("forward", forward, lambda: lt(xt)),
            ("backward", backward,
             lambda: torch.autograd.grad(yt, [xt, *lt.parameters()], gt, retain_graph=True))]


def _layer_norm_inference(rng, shape):
    """LayerNorm with no gradient wanted (bert-infer's): nothing is kept for backward."""
    import torch

    x, w, b = (rng.standard_normal(s).astype(np.float32) for s in (shape, shape[-1:], shape[-1:]))
    xt, wt, bt = (torch.from_numpy(a) for a in (x, w, b))

    def forward():
        op = LayerNorm()
        op.needs_input_grad = (False, False, False)
        return op.forward(x, w, b, eps=1e-12)

    def torch_forward():
        with torch.no_grad():
            return torch.nn.functional.layer_norm(xt, shape[-1:], wt, bt, 1e-12)
    return [("forward", forward, torch_forward)]


def _softmax(rng, shape):
    import torch

    x = rng.standard_normal(shape).astype(np.float32)
    x[..., np.triu(np.ones(shape[-2:], bool), 1)] = -np.inf  # causal, as in attention
    g = rng.standard_normal(shape).astype(np.float32)
    op = Softmax()
    op.forward(x, -1)
    xt = torch.from_numpy(x).requires_grad_(True)
    yt = torch.softmax(xt, -1)
    gt = torch.from_numpy(g)
    return [("forward", lambda: softmax_array(x, -1), lambda: torch.softmax(xt, -1)),  # out of place, as F.softmax
            ("backward", lambda: op.backward(g), lambda: torch.autograd.grad(yt, [xt], gt, retain_graph=True))]


def _dropout(rng, shape):
    import torch

    x, g = (rng.standard_normal(shape).astype(np.float32) for _ in range(2))
    keep = rng.random(shape) >= 0.1
    op = Dropout()
    op.forward(x, keep, p=0.1)
    mt = torch.from_numpy(keep)
    xt = torch.from_numpy(x)
    return [("forward", lambda: Dropout().forward(x, keep, p=0.1), lambda: xt * mt / 0.9),  # the mask given
            ("backward", lambda: op.backward(g), lambda: torch.from_numpy(g) * mt / 0.9)]


def _keyed_dropout(rng, shape):
    """Plain dropout as `F.dropout` runs it: the mask made from its key (compiled: on the fly, again in
    backward; NumPy: drawn once and kept), against torch's `F.dropout`, which draws its mask too."""
    import torch

    x, g = (rng.standard_normal(shape).astype(np.float32) for _ in range(2))

    def forward():
        op = Dropout()
        op.forward(x, p=0.1, key=12345)
        return op

    kept = forward()
    xt = torch.from_numpy(x).requires_grad_(True)
    yt = torch.nn.functional.dropout(xt, 0.1, training=True)
    gt = torch.from_numpy(g)
    return [("forward", forward, lambda: torch.nn.functional.dropout(xt, 0.1, training=True)),
            ("backward", lambda: kept.backward(g), lambda: torch.autograd.grad(yt, [xt], gt, retain_graph=True))]


def _dropout_mask(rng, shape):
    """Drawing the keep mask: seqlab's SplitMix64 words against torch dropout's `bernoulli_`."""
    import torch

    return [("draw", lambda: _keep_mask(np, shape, 0.1, np.float32), lambda: torch.empty(shape).bernoulli_(0.9))]


def _adamw(rng, shape):
    """One AdamW step on a parameter of `shape` (encoder-train's embedding), torch's default implementation."""
    import torch

    import seqlab
    from seqlab.optim import AdamW

    p = seqlab.Tensor(rng.standard_normal(shape).astype(np.float32), requires_grad=True)
    p.grad = rng.standard_normal(shape).astype(np.float32) * 1e-3
    pt = torch.nn.Parameter(torch.from_numpy(p.data.copy()))
    pt.grad = torch.from_numpy(p.grad.copy())
    opt, topt = AdamW([p], lr=1e-4), torch.optim.AdamW([pt], lr=1e-4)
    return [("update", opt.step, topt.step)]


def _gelu(approximate):
    def build(rng, shape):
        import torch

        x, g = (rng.standard_normal(shape).astype(np.float32) for _ in range(2))

        def forward():
            op = GELU()
            op.needs_input_grad = (True,)
            op.forward(x, approximate)
            return op

        kept = forward()
        xt = torch.from_numpy(x).requires_grad_(True)
        yt = torch.nn.functional.gelu(xt, approximate=approximate)
        gt = torch.from_numpy(g)
        return [("forward", forward, lambda: torch.nn.functional.gelu(xt, approximate=approximate)),
                ("backward", lambda: kept.backward(g), lambda: torch.autograd.grad(yt, [xt], gt, retain_graph=True))]
    return build


CASES = [  # (op, shape, builder): encoder-train's and gpt-train's sizes
    ("LayerNorm", (2048, 256), _layer_norm),
    ("LayerNorm", (768, 128), _layer_norm),
    ("LayerNorm, no gradient", (1408, 384), _layer_norm_inference),  # bert-infer's (32 x 44 tokens)
    ("softmax, causal", (128, 64, 64), _softmax),
    ("softmax, causal", (48, 64, 64), _softmax),
    ("dropout, mask given", (2048, 1024), _dropout),
    ("dropout, mask from its key", (2048, 1024), _keyed_dropout),
    ("dropout mask", (2048, 1024), _dropout_mask),
    ("GELU, exact", (2048, 1024), _gelu("none")),
    ("GELU, tanh", (768, 512), _gelu("tanh")),
    ("AdamW", (8000, 256), _adamw),
]


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=positive_int, default=200, help="timed calls per figure (default 200)")
    p.add_argument("--threads", type=positive_int, default=1, help="threads for every library (default 1)")
    a = p.parse_args(argv)
    try:
        kernels.use("numba")
    except Exception:  # noqa: BLE001 - ConfigError: Numba not installed
        fail("Numba was not found: pip install 'seqlab[numba]'")
    finally:
        kernels.use(None)
    set_threads(a.threads)
    rng = np.random.default_rng(0)
    print(f"{a.threads} thread{'s' if a.threads > 1 else ''}, median of {a.repeats} calls, µs")
    print("| op | shape | pass | NumPy formulas | kernel | torch |")
    print("| --- | --- | --- | --- | --- | --- |")
    try:
        for name, shape, build in CASES:
            for label, fn, tfn in build(rng, shape):
                kernels.use("numpy")
                off = median_us(fn, a.repeats)
                kernels.use("numba")
                kernels.set_threads(a.threads)
                on = median_us(fn, a.repeats)
                torch_us = median_us(tfn, a.repeats)
                print(f"| {name} | {shape} | {label} | {off:,.0f} | {on:,.0f} | {torch_us:,.0f} |", flush=True)
    finally:
        kernels.use(None)


if __name__ == "__main__":
    run_main(main)
