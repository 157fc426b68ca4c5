"""seqlab.kernels.gemm_split: a large 2-D float32 product cut into parts by the kernels' thread pool, each
part one cblas_sgemm call on NumPy's OpenBLAS with one thread, against NumPy's product and float64; what it
declines; and Linear on two threads through it, against torch.

Skips without Numba, or where NumPy's BLAS is not an ILP64 OpenBLAS (then the split never applies).
"""
import numpy as np
import pytest
import torch

import seqlab
import seqlab.functional as F
from seqlab import blas, kernels, mkl

HAVE_NUMBA = kernels.use("auto") == "numba"
kernels.use(None)
HAVE_ENTRY = blas.openblas_sgemm_address() is not None
pytestmark = pytest.mark.skipif(not (HAVE_NUMBA and HAVE_ENTRY),
                                reason="needs Numba and NumPy's OpenBLAS (ILP64)")

rng = np.random.default_rng(7)


def f32(*shape):
    return rng.standard_normal(shape).astype(np.float32)


def operand(rows, cols, transposed):
    """A (rows, cols) float32 array: C order, or the transpose of a C-order (cols, rows) array."""
    return f32(cols, rows).T if transposed else f32(rows, cols)


@pytest.fixture
def two_threads():
    """The compiled kernels on, on two threads (NumPy's BLAS count left as it is)."""
    assert kernels.use("numba") == "numba"
    kernels.set_threads(2)
    assert kernels._parallel_ok(), "Numba's thread pool did not start"
    yield
    kernels.set_threads(None)
    kernels.use(None)


# (m, k, n): by rows (m >= n), by columns, sizes that are not multiples of 16, a part boundary inside a tile
SHAPES = [(768, 128, 512), (128, 768, 512), (100, 333, 1030), (1030, 333, 100), (37, 4096, 45), (2, 2048, 1024)]


@pytest.mark.parametrize("ta", [False, True])
@pytest.mark.parametrize("tb", [False, True])
@pytest.mark.parametrize("shape", SHAPES)
def test_matches_numpy_and_float64_for_every_layout(two_threads, shape, ta, tb):
    m, k, n = shape
    a, b = operand(m, k, ta), operand(k, n, tb)
    got = kernels.gemm_split(a, b)
    assert got is not None and got.shape == (m, n) and got.dtype == np.float32 and got.flags.c_contiguous
    want = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=2e-4 * np.sqrt(k))
    np.testing.assert_allclose(got, a @ b, rtol=1e-5, atol=1e-4)


def test_alpha_and_a_strided_out_view_are_written_in_place(two_threads):
    a, b = f32(300, 200), f32(200, 500)
    big = np.full((300, 700), 7.0, dtype=np.float32)
    out = big[:, 100:600]  # unit column stride, rows 700 floats apart
    got = kernels.gemm_split(a, b, out=out, alpha=0.125)
    assert got is out
    np.testing.assert_allclose(out, (a @ b) * np.float32(0.125), rtol=1e-5, atol=1e-5)
    assert (big[:, :100] == 7.0).all() and (big[:, 600:] == 7.0).all()  # nothing written outside the view


def test_every_row_and_column_is_written_with_two_or_more_parts(two_threads):
    """A NaN-filled out: any element no part wrote stays NaN."""
    for m, n in ((17, 4096), (4096, 17), (33, 33 * 64)):
        a, b = f32(m, 256), f32(256, n)
        out = np.full((m, n), np.nan, dtype=np.float32)
        assert kernels.gemm_split(a, b, out=out) is out and np.isfinite(out).all()
        np.testing.assert_allclose(out, a @ b, rtol=1e-5, atol=1e-4)


def test_the_callers_openblas_thread_count_is_kept(two_threads):
    """The parts set OpenBLAS's count for their own thread to 1 and put it back: NumPy's products on this
    thread keep the count they had."""
    before = blas.get_blas_threads()
    with blas.blas_threads(2):
        assert kernels.gemm_split(f32(512, 256), f32(256, 512)) is not None
        assert blas.get_blas_threads() == 2
    assert blas.get_blas_threads() == before


def test_declines_what_is_not_its_to_take(two_threads, monkeypatch):
    a, b = f32(256, 256), f32(256, 256)
    assert kernels.gemm_split(a, b) is not None  # the plain case applies: each decline below is its own
    assert kernels.gemm_split(a.astype(np.float64), b.astype(np.float64)) is None  # not float32
    assert kernels.gemm_split(a[None], b) is None  # not 2-D
    assert kernels.gemm_split(a[:, ::2], b[:128]) is None  # no unit stride
    assert kernels.gemm_split(a[:1], b) is None and kernels.gemm_split(a, b[:, :1]) is None  # gemv's cases
    assert kernels.gemm_split(f32(8, 8), f32(8, 8)) is None  # under MIN_SPLIT_MACS
    assert kernels.gemm_split(a, b, out=a) is None  # out overlaps an operand
    assert kernels.gemm_split(a, b, out=np.empty((256, 256), np.float32)[:, ::-1]) is None  # out not unit stride
    assert kernels.gemm_split(a, b[:128]) is None  # shapes that do not multiply: NumPy's error
    monkeypatch.setattr(kernels, "GEMM_SPLIT", False)
    assert kernels.gemm_split(a, b) is None
    monkeypatch.setattr(kernels, "GEMM_SPLIT", True)
    monkeypatch.setattr(blas, "openblas_sgemm_address", lambda: None)  # another BLAS
    assert kernels.gemm_split(a, b) is None
    monkeypatch.undo()
    kernels.set_threads(1)
    assert kernels.gemm_split(a, b) is None  # one thread
    kernels.set_threads(2)
    kernels.use("numpy")
    assert kernels.gemm_split(a, b) is None  # kernels off


@pytest.fixture
def splits(monkeypatch):
    """What each call of kernels.gemm_split returned, in order (mkl.matmul calls it for NumPy's BLAS)."""
    if mkl.library() != "numpy":
        pytest.skip("seqlab's products are on MKL here")
    calls = []
    real = kernels.gemm_split
    monkeypatch.setattr(kernels, "gemm_split", lambda *args: calls.append(real(*args)) or calls[-1])
    return calls


def test_products_go_through_it_on_two_threads_only(two_threads, splits):
    """mkl.matmul (every product of seqlab's ops) hands large 2-D ones to gemm_split beside NumPy's BLAS."""
    calls = splits
    a, b = f32(512, 256), f32(256, 384)
    np.testing.assert_allclose(mkl.matmul(a, b), a @ b, rtol=1e-5, atol=1e-4)
    assert len(calls) == 1 and calls[0] is not None
    kernels.set_threads(1)
    mkl.matmul(a, b)
    assert len(calls) == 2 and calls[1] is None


@pytest.mark.parametrize("shape", [(768, 512, 128), (768, 128, 384), (100, 333, 1030)])
def test_a_pair_matches_numpy_as_linears_two_backward_products(two_threads, shape):
    """gemm_pair(g, W, gᵀ, x): dx = g·W and dW = gᵀ·x, one per thread, against NumPy and float64."""
    n_rows, d_out, d_in = shape
    g, w, x = f32(n_rows, d_out), f32(d_out, d_in), f32(n_rows, d_in)
    got = kernels.gemm_pair(g, w, g.T, x)
    assert got is not None
    for mine, (a, b) in zip(got, ((g, w), (g.T, x))):
        assert mine.shape == (a.shape[0], b.shape[1]) and mine.flags.c_contiguous
        np.testing.assert_allclose(mine, a @ b, rtol=1e-5, atol=1e-4)
        np.testing.assert_allclose(mine, a.astype(np.float64) @ b.astype(np.float64), rtol=1e-4,
                                   atol=2e-4 * np.sqrt(a.shape[1]))


@pytest.mark.parametrize("parts", [1, 2, 3])
def test_the_pair_kernel_cuts_each_product_into_parts(two_threads, parts):
    """_numba_kernels.gemm_two with several parts per product (what four or six threads would run): each
    element written once (NaN-filled outputs), the values NumPy's."""
    from seqlab import _numba_kernels as compiled

    g, w, x = f32(300, 200), f32(200, 96), f32(300, 96)
    outs = [np.full((300, 96), np.nan, np.float32), np.full((200, 96), np.nan, np.float32)]
    rows = []
    for (a, b), out in zip(((g, w), (g.T, x)), outs):
        (m, k), n = a.shape, b.shape[1]
        la, lb = blas.gemm_layout(a, m, k), blas.gemm_layout(b, k, n)
        rows.append(np.array([la[0], lb[0], m, n, k, a.ctypes.data, la[1], b.ctypes.data, lb[1],
                              out.ctypes.data, n, m >= n], dtype=np.int64))
    with blas.one_blas_thread():
        compiled.gemm_two(blas.openblas_sgemm_address(), rows[0], rows[1], parts)
    np.testing.assert_allclose(outs[0], g @ w, rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(outs[1], g.T @ x, rtol=1e-5, atol=1e-4)


def test_a_pair_declines_unless_both_are_its_own(two_threads):
    g, w, x = f32(768, 512), f32(512, 128), f32(768, 128)
    assert kernels.gemm_pair(g, w, g.T, x) is not None
    assert kernels.gemm_pair(g, w, f32(8, 8), f32(8, 8)) is None  # the second under MIN_SPLIT_MACS
    assert kernels.gemm_pair(g.astype(np.float64), w, g.T, x) is None
    kernels.set_threads(1)
    assert kernels.gemm_pair(g, w, g.T, x) is None


def test_linear_on_two_threads_matches_torch(two_threads, splits, monkeypatch):
    """Forward and backward of a Linear layer at gpt-train's MLP size, against torch: forward's product
    split, backward's two side by side (gemm_pair)."""
    pairs = []
    real_pair = kernels.gemm_pair
    monkeypatch.setattr(kernels, "gemm_pair", lambda *args: pairs.append(real_pair(*args)) or pairs[-1])
    x, w, bias, g = f32(12, 64, 128), f32(512, 128), f32(512), f32(12, 64, 512)
    tx, tw, tb = (torch.tensor(v, requires_grad=True) for v in (x, w, bias))
    torch.nn.functional.linear(tx, tw, tb).backward(torch.tensor(g))
    sx, sw, sb = (seqlab.tensor(v, requires_grad=True) for v in (x, w, bias))
    y = F.linear(sx, sw, sb)
    y.backward(seqlab.tensor(g))
    np.testing.assert_allclose(y.numpy(), torch.nn.functional.linear(tx, tw, tb).detach().numpy(),
                               rtol=1e-5, atol=1e-4)
    for mine, theirs in ((sx, tx), (sw, tw), (sb, tb)):
        np.testing.assert_allclose(np.asarray(mine.grad), theirs.grad.numpy(), rtol=1e-4, atol=1e-3)
    assert len(splits) == 1 and splits[0] is not None  # y = x·Wᵀ
    assert len(pairs) == 1 and pairs[0] is not None  # dx = g·W and dW = gᵀ·x


def test_a_fork_while_another_thread_holds_the_count_lock_leaves_the_child_free():
    """The lock around the count is made anew in a child process: one held by another thread when the parent
    forked would otherwise stay held there, and set_blas_threads in the child would wait forever."""
    import os
    import threading

    if not hasattr(os, "fork"):
        pytest.skip("no os.fork here")
    held, release = threading.Event(), threading.Event()

    def hold():
        with blas._COUNT_LOCK:
            held.set()
            release.wait(10)

    t = threading.Thread(target=hold)
    t.start()
    held.wait(10)
    try:
        pid = os.fork()
        if pid == 0:  # the child: the count can be set at once
            ok = blas._COUNT_LOCK.acquire(timeout=5)
            os._exit(0 if ok else 1)
        _, status = os.waitpid(pid, 0)
    finally:
        release.set()
        t.join()
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
