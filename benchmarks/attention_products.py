"""The six matrix products of attention's forward and backward, as seqlab lays them out, against torch.

    python benchmarks/attention_products.py [--shape 32,4,64,64] [--threads 1] [--repeats 100] [--small-batches numpy]
                                            [--jit]

`--shape` is B,H,T,D (default: encoder-train's attention). `--small-batches
numpy` keeps every small product on NumPy where MKL is in use (see
`seqlab.mkl.BATCH_SMALL_PRODUCTS`). q, k, v and the
output's gradient are (B, H, T, D) views of (B, T, H, D) arrays, the heads
interleaved as `nn.MultiheadAttention` splits them; the (B, H, T, T) weights
are contiguous; outputs that merge heads again are written interleaved, as
`autograd/ops/fused.py` writes them. Each line: the median microseconds of
the product through seqlab's `mm` (NumPy's BLAS, one product per head) and
of torch.matmul on the same arrays and threads, with seqlab's GFLOP/s. The
layout column says which operand BLAS reads transposed (N = as stored,
T = transposed). A last line times q·kᵀ with kᵀ first copied into a
contiguous (B, H, D, T) array, so the product reads both operands as stored.
The figures are in docs/results.md ("Where encoder-train's step goes").

`--jit` (MKL and Numba installed) adds a column: the same product by a
GEMM kernel that MKL's JIT compiles for its one size and layout
(``mkl_cblas_jit_create_sgemm``), called for each matrix of the batch from a
Numba loop over precomputed addresses, so without `mm`'s Python around it,
one thread, and its ratio to seqlab's `mm` (which then runs on MKL too,
whatever the CPU). seqlab does not use these
kernels: in its models they gained about 1% (docs/results.md, "MKL's JIT
kernels for attention's small products").
"""
from __future__ import annotations

import argparse

from _cli import fail, positive_int, run_main


def shape_arg(text: str) -> tuple[int, int, int, int]:
    """argparse type: B,H,T,D, four integers >= 1."""
    parts = text.split(",")
    if len(parts) != 4:
        raise argparse.ArgumentTypeError(f"expected B,H,T,D (four integers), got {text!r}")
    return tuple(positive_int(p) for p in parts)


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--shape", type=shape_arg, default=(32, 4, 64, 64), help="B,H,T,D (default 32,4,64,64)")
    p.add_argument("--threads", type=positive_int, default=1, help="BLAS and torch threads (default 1)")
    p.add_argument("--repeats", type=positive_int, default=100, help="timed calls per figure (default 100)")
    p.add_argument("--small-batches", choices=("mkl", "numpy"), default="mkl",
                   help="with MKL in use: batches of small products where seqlab.mkl.matmul chooses MKL's "
                        "batched GEMM (mkl, the default), or always NumPy, one product per matrix")
    p.add_argument("--jit", action="store_true",
                   help="also time each product by MKL's JIT kernel for its size, called per matrix from Numba")
    args = p.parse_args(argv)
    if args.jit:
        from seqlab import kernels, mkl

        if mkl.use("mkl" if mkl.mkl_path() else "numpy") != "mkl" or kernels.library() != "numba":
            fail("--jit needs MKL and Numba: pip install 'seqlab[mkl,numba]'")  # MKL stays chosen: seqlab's
        # products go to it too, on any CPU

    import numpy as np
    import torch
    from elementwise_threads import median_ms

    from seqlab import mkl
    from seqlab.bench.harness import set_threads
    from seqlab.blas import openblas_kernels
    from seqlab.mkl import matmul as mm

    mkl.BATCH_SMALL_PRODUCTS = args.small_batches == "mkl"
    threads = set_threads(args.threads)
    B, H, T, D = args.shape
    rng = np.random.default_rng(0)

    def heads():  # (B, H, T, D) view of a (B, T, H, D) array
        return rng.standard_normal((B, T, H, D)).astype(np.float32).swapaxes(1, 2)

    q, k, v, g = heads(), heads(), heads(), heads()
    w = rng.random((B, H, T, T)).astype(np.float32)  # weights, or their gradient
    scores = np.empty((B, H, T, T), np.float32)
    merged = np.empty((B, T, H, D), np.float32).swapaxes(1, 2)  # written as the heads interleave
    k_t = np.empty((B, H, D, T), np.float32)

    def copy_then_nn():
        np.copyto(k_t, k.swapaxes(-1, -2))
        return mm(q, k_t, out=scores)

    cases = [  # (what, layout, seqlab call, torch operands, output)
        ("forward  scores = q·kᵀ", "N·T", lambda: mm(q, k.swapaxes(-1, -2), out=scores), (q, k.swapaxes(-1, -2)), scores),
        ("forward  out = P·v", "N·N", lambda: mm(w, v, out=merged), (w, v), merged),
        ("backward dv = Pᵀ·g", "T·N", lambda: mm(w.swapaxes(-1, -2), g, out=merged), (w.swapaxes(-1, -2), g), merged),
        ("backward dP = g·vᵀ", "N·T", lambda: mm(g, v.swapaxes(-1, -2), out=scores), (g, v.swapaxes(-1, -2)), scores),
        ("backward dq = dS·k", "N·N", lambda: mm(w, k, out=merged), (w, k), merged),
        ("backward dk = dSᵀ·q", "T·N", lambda: mm(w.swapaxes(-1, -2), q, out=merged), (w.swapaxes(-1, -2), q), merged),
        ("forward  kᵀ copied, then q·kᵀ", "N·N", copy_then_nn, None, scores),
    ]
    blas = f"{mkl.describe()}, small batches on {args.small_batches}" if mkl.library() == "mkl" else (
        openblas_kernels() or "NumPy BLAS")
    print(f"attention products at B,H,T,D = {B},{H},{T},{D}; {threads} thread(s); {blas}; "
          f"median of {args.repeats} calls")
    jit_head = " MKL JIT µs | JIT / seqlab |" if args.jit else ""
    print(f"| product | layout | seqlab µs | GFLOP/s | torch µs | seqlab / torch |{jit_head}")
    print("| --- " * (8 if args.jit else 6) + "|")
    flops = 2.0 * B * H * T * T * D
    for what, layout, ours, operands, out in cases:
        seqlab_us = median_ms(ours, args.repeats) * 1e3
        if operands is None:
            print(f"| {what} | {layout} | {seqlab_us:.0f} | {flops / seqlab_us / 1e3:.0f} | | |" + " |" * 2 * args.jit)
            continue
        ta, tb = (torch.from_numpy(x) for x in operands)
        tout = torch.empty(out.shape)
        assert np.allclose(out, torch.matmul(ta, tb).numpy(), rtol=1e-4, atol=1e-3), what
        torch_us = median_ms(lambda: torch.matmul(ta, tb, out=tout), args.repeats) * 1e3
        line = (f"| {what} | {layout} | {seqlab_us:.0f} | {flops / seqlab_us / 1e3:.0f} | {torch_us:.0f} "
                f"| {seqlab_us / torch_us:.2f} |")
        if args.jit:
            run = jit_products(*operands, out)
            out.fill(np.nan)
            run()
            assert np.allclose(out, tout.numpy(), rtol=1e-4, atol=1e-3), what + " (MKL JIT)"
            jit_us = median_ms(run, args.repeats) * 1e3
            line += f" {jit_us:.0f} | {jit_us / seqlab_us:.2f} |"
        print(line)


def jit_products(a, b, out):
    """A call that runs out = a @ b, batched (B, H, ·, ·) float32 views, by one MKL JIT kernel compiled for
    the matrices' size and layout, called for each matrix from a compiled loop over their addresses."""
    import ctypes

    import numba
    import numpy as np
    from llvmlite import ir
    from numba.core import types
    from numba.extending import intrinsic

    from seqlab import mkl

    lib = mkl._mkl()
    p, i, f = ctypes.c_void_p, ctypes.c_int, ctypes.c_float
    lib.mkl_cblas_jit_create_sgemm.restype = i
    lib.mkl_cblas_jit_create_sgemm.argtypes = [ctypes.POINTER(p), i, i, i, i, i, i, f, i, i, f, i]
    lib.mkl_jit_get_sgemm_ptr.restype = p
    lib.mkl_jit_get_sgemm_ptr.argtypes = [p]

    @intrinsic
    def call(typingctx, fn, jitter, pa, pb, pc):  # fn(jitter, pa, pb, pc): MKL's sgemm_jit_kernel_t
        def codegen(context, builder, signature, args):
            byte_ptr = ir.IntType(8).as_pointer()
            fnty = ir.FunctionType(ir.VoidType(), [byte_ptr] * 4)
            builder.call(builder.inttoptr(args[0], fnty.as_pointer()),
                         [builder.inttoptr(v, byte_ptr) for v in args[1:]])
            return context.get_dummy_value()
        return types.void(types.intp, types.intp, types.intp, types.intp, types.intp), codegen

    @numba.njit(nogil=True)
    def loop(fn, jitter, a0, oa, b0, ob, c0, oc):
        for t in range(oa.shape[0]):
            call(fn, jitter, a0 + oa[t], b0 + ob[t], c0 + oc[t])

    m, k, n = a.shape[-2], a.shape[-1], b.shape[-1]
    (ta, lda), (tb, ldb) = mkl._layout(a, m, k), mkl._layout(b, k, n)
    jitter = p()
    status = lib.mkl_cblas_jit_create_sgemm(ctypes.byref(jitter), mkl._ROW_MAJOR, ta, tb, m, n, k, 1.0,
                                            lda, ldb, 0.0, out.strides[-2] // 4)
    if status == 2:  # MKL_JIT_ERROR; MKL_NO_JIT (1) still gives a kernel, MKL's usual sgemm
        raise RuntimeError("MKL's JIT could not make a kernel")
    fn = lib.mkl_jit_get_sgemm_ptr(jitter)
    batch = out.shape[:-2]
    args = [x for arr in (a, b, out) for x in (arr.ctypes.data, mkl._offsets(batch, arr.strides[:-2]))]
    np.broadcast_shapes(a.shape[:-2], b.shape[:-2], batch)  # no broadcast batches here: the same (B, H)
    return lambda: loop(fn, jitter.value, *args)


if __name__ == "__main__":
    run_main(main)
