"""Memory-efficient attention on the compiled tiles (float32, NumPy, Numba kernels on) and with its query
blocks shared out between threads: the values of the NumPy formula and of float64 plain attention, the
memory of one thread, and a worker's error raised without a hang."""
from __future__ import annotations

import gc
import threading
import tracemalloc
import weakref

import numpy as np
import pytest

import seqlab
from seqlab import batch_threads, kernels
from seqlab import functional as F
from seqlab.blas import get_blas_threads, set_blas_threads
from seqlab.nn import efficient_attention as E
from seqlab.nn.efficient_attention import memory_efficient_attention, sliding_window_mask

pytestmark = pytest.mark.skipif(kernels.library() != "numba", reason="the compiled tiles need Numba")

# float32 against float64: a wrong mask, row or block differs by 1e-2 or more
F32 = 2e-5


def lowest_traced_peak(call, times: int = 2) -> int:
    """The lowest tracemalloc peak of `times` calls of `call`, each traced on its own after a collection. A
    copy the call makes shows in every call; what a first call may still do once (Numba compiling a kernel
    whose cache is stale, ~33 KB of the compiler's objects: c2cd5e1, and again on 2026-12-07) in one only."""
    peaks = []
    for _ in range(times):
        gc.collect()
        tracemalloc.start()
        call()
        peaks.append(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()
    return min(peaks)


@pytest.fixture
def threads(request):
    """seqlab on `request.param` threads for the test (CI runs on one), the counts put back after."""
    blas, kern = get_blas_threads(), kernels._threads
    seqlab.set_num_threads(request.param)
    yield request.param
    if blas is not None:
        set_blas_threads(blas)
    kernels.set_threads(kern)


@pytest.fixture
def split_always(monkeypatch):
    """Share the query blocks out whatever the size (the tests' shapes are below MIN_SPLIT_MACS)."""
    monkeypatch.setattr(E, "MIN_SPLIT_MACS", 1)


@pytest.fixture
def splits(monkeypatch):
    """How many workers each run_on_threads call got, and whether it ran them."""
    calls, real = [], batch_threads.run_on_threads

    def spy(work, n):
        ran = real(work, n)
        calls.append((n, ran))
        return ran

    monkeypatch.setattr(batch_threads, "run_on_threads", spy)
    return calls


def _run(arrays, g, dtype, **kw):
    ts = [seqlab.tensor(a.astype(dtype), requires_grad=True) for a in arrays]
    out = memory_efficient_attention(*ts, **kw)
    out.backward(g.astype(dtype))
    return [out.numpy()] + [np.asarray(t.grad) for t in ts]


def _plain64(arrays, g, causal=False, window=None):
    L, S = arrays[0].shape[-2], arrays[1].shape[-2]
    mask = None
    if window is not None:
        mask = sliding_window_mask(L, S, window, causal)
    elif causal:
        mask = np.tril(np.ones((L, S), bool))
    ts = [seqlab.tensor(a.astype(np.float64), requires_grad=True) for a in arrays]
    out = F.scaled_dot_product_attention(*ts, attn_mask=mask)
    out.backward(g.astype(np.float64))
    return [out.numpy()] + [np.asarray(t.grad) for t in ts]


def _close(got, ref, tol, what):
    for name, a, b in zip(("output", "dq", "dk", "dv"), got, ref):
        err = np.abs(a - b).max() / max(np.abs(b).max(), 1e-30)
        assert err < tol, f"{what} {name}: relative error {err:.2e}"


MASKS = {"none": {}, "causal": {"is_causal": True}, "window": {"window": 3},
         "causal window": {"is_causal": True, "window": 9}}


@pytest.mark.parametrize("threads", [1, 2], indirect=True)
@pytest.mark.parametrize("mask", list(MASKS))
@pytest.mark.parametrize("shape, chunks", [((2, 3, 37, 16), (8, 5)), ((1, 1, 64, 8), (16, 16)),
                                           ((1, 2, 50, 4), (64, 7))])
def test_tiles_equal_plain_attention_and_the_numpy_formula(threads, split_always, splits, mask, shape, chunks,
                                                           rng):
    kw = dict(MASKS[mask], q_chunk_size=chunks[0], chunk_size=chunks[1])
    arrays = [rng.standard_normal(shape) for _ in range(3)]
    g = rng.standard_normal(shape)
    got = _run(arrays, g, np.float32, **kw)
    assert all(a.dtype == np.float32 for a in got)
    ref = _plain64(arrays, g, causal=kw.get("is_causal", False), window=kw.get("window"))
    _close(got, ref, F32, f"{mask}, {threads} thread(s)")
    blocks = -(-shape[2] // chunks[0])
    if threads > 1 and blocks > 1:  # forward and backward each shared out between two workers, and run
        assert splits == [(2, True), (2, True)]
    else:
        assert splits == []
    kernels.use("numpy")  # the NumPy formula, one thread, the same float32 inputs
    try:
        numpy_path = _run(arrays, g, np.float32, **kw)
    finally:
        kernels.use(None)
    _close(got, numpy_path, F32, f"{mask}, against the NumPy formula")


@pytest.mark.parametrize("threads", [2], indirect=True)
def test_a_split_is_deterministic_and_agrees_with_one_thread(threads, split_always, rng):
    """Two workers add their parts of dk and dv in worker order: the same bits every run."""
    arrays = [rng.standard_normal((2, 2, 96, 16)) for _ in range(3)]
    g = rng.standard_normal((2, 2, 96, 16))
    kw = dict(is_causal=True, q_chunk_size=32, chunk_size=16)
    first, second = (_run(arrays, g, np.float32, **kw) for _ in range(2))
    for a, b in zip(first, second):
        np.testing.assert_array_equal(a, b)
    with batch_threads.unsplit():  # this thread's calls unsplit: one worker, the caller
        alone = _run(arrays, g, np.float32, **kw)
    _close(first, alone, 1e-5, "split against unsplit")


def test_masks_and_float64_keep_the_numpy_formula(monkeypatch, rng):
    """A bias or a bool mask (read tile by tile from the user's array) and float64 run the NumPy code."""
    used = []
    real = kernels.flash_tiles
    def spy(*arrays):
        module = real(*arrays)
        used.append(module is not None)
        return module

    monkeypatch.setattr(kernels, "flash_tiles", spy)
    arrays = [rng.standard_normal((1, 20, 8)) for _ in range(3)]
    g = rng.standard_normal((1, 20, 8))
    bias = rng.standard_normal((20, 20)).astype(np.float32)
    for dtype, kw in ((np.float32, {"attn_mask": bias}), (np.float32, {"attn_mask": bias > 0}), (np.float64, {})):
        ts = [seqlab.tensor(a.astype(dtype), requires_grad=True) for a in arrays]
        memory_efficient_attention(*ts, chunk_size=8, **kw).backward(g.astype(dtype))
    assert not any(used)
    _run(arrays, g, np.float32, chunk_size=8)
    assert used[-1] is True


@pytest.mark.parametrize("threads", [2], indirect=True)
def test_a_split_takes_one_threads_memory(threads, monkeypatch, rng):
    """Split, the workers' score tiles are q_chunk / n rows each and dk, dv have no copy per worker: the
    peak is the unsplit call's (its tiles q_chunk rows)."""
    T, d = 2048, 32
    arrays = [rng.standard_normal((1, T, d)).astype(np.float32) for _ in range(4)]

    def peak(min_split: int) -> int:
        monkeypatch.setattr(E, "MIN_SPLIT_MACS", min_split)
        ts = [seqlab.tensor(a, requires_grad=True) for a in arrays[:3]]
        memory_efficient_attention(*ts, chunk_size=128, q_chunk_size=512).backward(arrays[3])  # compiled first

        def traced():
            ts = [seqlab.tensor(a, requires_grad=True) for a in arrays[:3]]
            memory_efficient_attention(*ts, chunk_size=128, q_chunk_size=512).backward(arrays[3])

        return lowest_traced_peak(traced)

    assert T * T * d >= E.MIN_SPLIT_MACS  # this size is split by default
    alone, split = peak(1 << 62), peak(E.MIN_SPLIT_MACS)
    one_array = T * d * 4
    assert split <= alone + one_array // 4, (split, alone)


@pytest.mark.parametrize("threads", [2], indirect=True)
def test_a_workers_error_is_raised_without_a_hang(threads, split_always, monkeypatch, rng):
    arrays = [rng.standard_normal((1, 64, 8)).astype(np.float32) for _ in range(4)]
    ts = [seqlab.tensor(a, requires_grad=True) for a in arrays[:3]]
    out = memory_efficient_attention(*ts, chunk_size=8, q_chunk_size=16)
    real = kernels.flash_tiles(arrays[0])

    class Failing:  # worker 1's first weights tile fails; worker 0 is then waiting at the barrier
        flash_forward_tile, flash_ds_tile = real.flash_forward_tile, real.flash_ds_tile

        @staticmethod
        def flash_weights_tile(*args):
            if threading.current_thread().name.endswith("_1"):
                raise MemoryError("worker 1 failed")
            real.flash_weights_tile(*args)

    node = out._ctx  # the ChunkedAttention op
    node.tiles = Failing
    errors = []

    def backward():
        try:
            out.backward(arrays[3])
        except MemoryError as exc:
            errors.append(exc)

    t = threading.Thread(target=backward, daemon=True)
    t.start()
    t.join(timeout=60)
    assert not t.is_alive(), "backward hangs after a worker's error"
    assert [str(e) for e in errors] == ["worker 1 failed"]


@pytest.mark.parametrize("threads", [2], indirect=True)
def test_workers_do_not_hold_a_finished_jobs_arrays(threads):
    """A worker thread waits for its next job without the last one: its closure's arrays are freed."""
    seen = []

    def job_holding(array):
        return lambda w: seen.append(float(array.sum()))

    big = np.ones(1 << 20, np.float32)
    ref = weakref.ref(big)
    job = job_holding(big)
    del big
    assert batch_threads.run_on_threads(job, 2)
    del job
    gc.collect()
    assert seen == [1 << 20] * 2
    assert ref() is None


@pytest.mark.parametrize("threads", [1, 2], indirect=True)
def test_heads_split_by_a_transpose_run_without_copies(threads, rng):
    """q, k, v as (B, H, T, D) views of (B, T, H, D) arrays: the same values as contiguous ones, and no array
    of their size copied (the tiles run on buffers of their own)."""
    B, T, H, D = 2, 1024, 2, 16
    packed = [rng.standard_normal((B, T, H, D)).astype(np.float32) for _ in range(4)]
    views = [a.transpose(0, 2, 1, 3) for a in packed]
    dense = [np.ascontiguousarray(a) for a in views]
    assert not views[0].flags.c_contiguous

    def run(arrays):
        def attend(ts):
            out = memory_efficient_attention(*ts, is_causal=True, chunk_size=128, q_chunk_size=256)
            out.backward(arrays[3])
            return out

        # compiles the kernels for this layout first (a fresh checkout has no cache): not traced
        attend([seqlab.tensor(a, requires_grad=True) for a in arrays[:3]])
        ts = [seqlab.tensor(a, requires_grad=True) for a in arrays[:3]]
        out = attend(ts)
        peak = lowest_traced_peak(lambda: attend([seqlab.tensor(a, requires_grad=True) for a in arrays[:3]]))
        return [out.numpy()] + [np.asarray(t.grad) for t in ts], peak

    (got, peak_views), (ref, peak_dense) = run(views), run(dense)
    for a, b in zip(got, ref):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-6)
    assert peak_views <= peak_dense + B * H * T * D * 4 // 4, (peak_views, peak_dense)
