"""Inference on several cores by rows: a batch split across threads, one chunk of rows on each core.

A BLAS on two threads splits every large product between the two cores, but all that lies between the
products (the softmax, GELU, LayerNorm, the residual adds, the Python that calls them) runs on one, and
every product ends in a wait for the slower half. Where a model's rows do not interact (BERT in eval: each
sentence attends to itself only, and dropout is off) the batch can be split instead: each thread runs the
same model on its own rows, every op single-threaded, and nothing waits until the end. On the 2-core EPYC
MiniLM's forward on 32 SST-2 sentences (32×44 tokens) took 0.89× the time of the unsplit forward on two
threads, and 0.58× its time on one (docs/results.md, `benchmarks/batch_threads.py`).

It applies only where it cannot change a result: no graph is being recorded (`no_grad`, `inference_mode`),
the arrays are NumPy's, more than one thread is set (`seqlab.set_num_threads`), every module is in eval
mode, none carries a forward hook (a hook would see a chunk, not the batch), no op profiler runs, and each
chunk has enough work to pay for its thread (`MIN_CHUNK_MACS`: small batches are faster unsplit, because
every chunk repeats all of the Python per op). Each row's values are those of the unsplit call, up to the
last bits of float32 rounding. `set_enabled(False)` or ``SEQLAB_BATCH_THREADS=0`` turns it off.

The whole forward of a split model runs in the chunks (BertModel's, and BertForSequenceClassification's
through it): a threaded product left before or after the split keeps OpenBLAS's idle worker spinning for
~0.1 s on the core a chunk needs, which made the split slower than none (GPT's blocks alone, with its
vocabulary product after them, 1.02-1.3× the unsplit time; GPT is not split). BertForMaskedLM is not split
either: its vocabulary product would be left after the split, or its logits held twice while joined.

`run_on_threads` lends the same workers to array code whose pieces write disjoint outputs: memory-efficient
attention (`seqlab.nn.efficient_attention`) shares its query blocks out between them, in training too (its
pieces are arrays, not graph ops). The same switch, lock and single-thread counts apply.
"""
from __future__ import annotations

import contextlib
import functools
import os
import queue
import threading
from typing import Any, Callable, Iterable, Iterator

import numpy as np

from seqlab import backend
from seqlab.autograd.function import is_grad_enabled, no_grad
from seqlab.autograd.tensor import Tensor

__all__ = ["MIN_CHUNK_MACS", "chunks", "enabled", "map_rows", "run_on_threads", "set_enabled", "settled", "unsplit"]

# a chunk's multiply-adds per layer below which it runs unsplit: about 300 tokens of MiniLM (384 hidden, 1,536
# feed-forward), 75 of BERT-base. Measured on the 2-core EPYC (benchmarks/batch_threads.py, docs/results.md):
# MiniLM's forward split in two took 1.24-1.51× the unsplit time at 2×8 to 8×16 tokens, 1.01× at 8×44 (176
# tokens a chunk) and 0.94× at 16×44 (352)
MIN_CHUNK_MACS = 1 << 29
_enabled = os.environ.get("SEQLAB_BATCH_THREADS", "1").strip() != "0"
_lock = threading.Lock()  # one split at a time: the thread counts it sets are the process's
_local = threading.local()  # `off`: how many `unsplit` blocks this thread is in
_workers: _Workers | None = None  # see _workers_for
_counts: _single_threaded | None = None  # the counts a split running now will put back (see _after_fork_in_child)


def enabled() -> bool:
    """Whether batches may be split across threads (see the module)."""
    return _enabled


def set_enabled(flag: bool) -> None:
    """Allow (True, the default) or forbid splitting batches across threads in this process."""
    global _enabled
    _enabled = bool(flag)


@contextlib.contextmanager
def unsplit() -> Iterator[None]:
    """Inside the block, this thread's calls run unsplit; other threads and the process's switch are left as
    they are (BertForMaskedLM's encoder runs under it: see there)."""
    _local.off = getattr(_local, "off", 0) + 1
    try:
        yield
    finally:
        _local.off -= 1


@contextlib.contextmanager
def settled() -> Iterator[None]:
    """Waits for a split running on another thread to put the process's thread counts back, and holds off
    the next one inside the block: `seqlab.set_num_threads` sets its count in here, so a split's restore
    cannot overwrite it. On a split's own worker thread it waits for nothing (it would wait for itself)."""
    if threading.current_thread().name.startswith("seqlab-rows"):
        yield
        return
    with _lock:
        yield


def chunks(rows: int, macs_per_row: float, modules: Iterable = ()) -> int:
    """Into how many chunks to split `rows` rows, each costing `macs_per_row` multiply-adds per layer, on the
    threads set now; 1 means run unsplit. `modules`: those the split calls, which must all be in eval mode (in
    training, dropout would draw its masks on two threads) and carry no forward hook."""
    if not _enabled or rows < 2 or is_grad_enabled() or getattr(_local, "off", 0):
        return 1
    from seqlab.autograd import profile
    from seqlab.runtime import get_num_threads

    n = min(get_num_threads(), rows, int(rows * macs_per_row // MIN_CHUNK_MACS))
    if n < 2 or profile._ACTIVE:
        return 1
    for module in modules:
        for m in module.modules():
            if m.training or m.__dict__.get("_forward_hooks") or m.__dict__.get("_forward_pre_hooks"):
                return 1
            # a model on the GPU: its inputs may still be NumPy's (moved by the embeddings), so map_rows cannot tell
            if any(p is not None and backend.xp_of(p.data) is not np for p in m._parameters.values()):
                return 1
    return n


def map_rows(fn: Callable, args: tuple, n: int) -> Any:
    """``fn(*args)`` with the batch cut into `n` chunks of rows, each run on its own thread with the BLAS and
    seqlab's kernels single-threaded; the results are joined back by rows.

    The batch is the rows (dimension 0) of the first Tensor or array in `args`: every one with as many rows is
    cut, any other argument (a mask broadcast over the batch, a flag) goes whole to every chunk. `fn` returns a Tensor
    or array, or tuples and lists of those and of Nones. Unsplit (plain ``fn(*args)``) when `n` < 2, when an
    array is not on the CPU, or while another split runs. A chunk's error is raised by the unsplit call, so
    that its message is the batch's (which id is out of range, which shape is wrong), not a chunk's."""
    arrays = [x for x in map(_array, args) if x is not None]
    rows = next((x.shape[0] for x in arrays if x.ndim), 0)
    if n < 2 or rows < 2 or any(backend.xp_of(x) is not np for x in arrays):
        return fn(*args)
    n = min(n, rows)
    cuts = np.linspace(0, rows, n + 1).astype(int)
    parts = [tuple(_rows(a, rows, lo, hi) for a in args) for lo, hi in zip(cuts[:-1], cuts[1:])]
    results: list = [None] * n

    def work(i: int) -> None:
        with no_grad():  # grad mode is per thread: a new thread starts with it on
            results[i] = fn(*parts[i])

    errors = _on_workers(work, n)
    if errors is None:  # another split is running
        return fn(*args)
    failed = next((exc for exc in errors if exc is not None), None)
    if failed is None:
        return _join(results)
    if not isinstance(failed, Exception):
        raise failed
    results[:] = errors[:] = []
    failed = None  # the chunks' results and tracebacks are not kept through the call below
    return fn(*args)  # raises the batch's error (or, had it been a chunk's alone, such as MemoryError, runs)


def run_on_threads(work: Callable[[int], None], n: int) -> bool:
    """``work(0)``, ..., ``work(n - 1)`` at once, each on its own worker thread (`map_rows`' workers) with the
    BLAS and seqlab's kernels on one thread; returns when all have, raising what a piece raised. Returns False,
    having run nothing, when `n` < 2, when splitting is off (`set_enabled`, `unsplit`) or while another split
    runs: the caller then does the work itself. For array code whose pieces write disjoint outputs (the query
    blocks of `seqlab.nn.efficient_attention`)."""
    if n < 2 or not _enabled or getattr(_local, "off", 0):
        return False
    errors = _on_workers(work, n)
    if errors is None:
        return False
    failed = next((exc for exc in errors if exc is not None), None)
    if failed is not None:
        raise failed
    return True


def _on_workers(work: Callable[[int], None], n: int) -> list | None:
    """work(i) for i < n on the worker threads, one split at a time, with the BLAS and kernels single-threaded;
    what each piece raised (None where nothing), or None, having run nothing, while another split runs."""
    if not _lock.acquire(blocking=False):
        return None
    errors: list = [None] * n

    def guarded(i: int) -> None:
        try:
            work(i)
        except BaseException as exc:  # raised again in the caller's thread
            errors[i] = exc

    try:
        with _single_threaded():
            _workers_for(n).run(guarded, n)
    finally:
        _lock.release()
    return errors


class _Workers:
    """This process's worker threads: chunk i always goes to thread i (a shared pool may hand two chunks to one
    thread, one after the other). They live on between calls, each keeping its malloc arena and BLAS buffers.
    A child made by fork starts its own: the parent's threads are not in it."""

    def __init__(self, n: int):
        self.pid, self.inboxes = os.getpid(), [queue.SimpleQueue() for _ in range(n)]
        for i, inbox in enumerate(self.inboxes):
            threading.Thread(target=self._serve, args=(inbox,), name=f"seqlab-rows_{i}", daemon=True).start()

    @staticmethod
    def _serve(inbox: queue.SimpleQueue) -> None:
        while True:
            job, done = inbox.get()
            if job is None:  # replaced by more threads
                return
            job()  # never raises: map_rows' work keeps what was raised
            del job  # not held while this thread waits for the next: its closure may hold large arrays
            done.put(None)

    def run(self, work: Callable[[int], None], n: int) -> None:
        """work(0), ..., work(n - 1), each on its own thread; returns when all have."""
        done: queue.SimpleQueue = queue.SimpleQueue()
        for i in range(n):
            self.inboxes[i].put((functools.partial(work, i), done))
        for _ in range(n):
            done.get()


def _workers_for(n: int) -> _Workers:
    global _workers
    if _workers is None or _workers.pid != os.getpid() or len(_workers.inboxes) < n:
        if _workers is not None and _workers.pid == os.getpid():
            for inbox in _workers.inboxes:
                inbox.put((None, None))
        _workers = _Workers(n)
    return _workers


def _array(a):
    """The array of a Tensor, or a NumPy or CuPy array as it is; None for anything else."""
    if isinstance(a, Tensor):
        return a.data
    return a if isinstance(a, np.ndarray) or backend.xp_of(a) is not np else None


def _rows(a, rows: int, lo: int, hi: int):
    """Rows lo..hi of `a` when it has `rows` rows; anything else (a mask broadcast over the batch, a flag) whole."""
    x = _array(a)
    if x is None or x.ndim == 0 or x.shape[0] != rows:
        return a
    return Tensor._from_op(x[lo:hi], None) if isinstance(a, Tensor) else x[lo:hi]


def _join(parts: list):
    first = parts[0]
    if isinstance(first, Tensor):
        return Tensor._from_op(np.concatenate([p.data for p in parts]), None)
    if isinstance(first, np.ndarray):
        return np.concatenate(parts)
    if isinstance(first, (tuple, list)):
        joined = [_join(list(items)) for items in zip(*parts)]
        return type(first)(*joined) if hasattr(first, "_fields") else type(first)(joined)  # a namedtuple too
    if first is None:
        return None
    raise TypeError(f"map_rows: cannot join results of type {type(first).__name__}")


class _single_threaded:
    """NumPy's BLAS, MKL (where seqlab uses it) and seqlab's kernels on one thread inside; each count put back."""

    def __enter__(self):
        from seqlab import kernels, mkl
        from seqlab.blas import get_blas_threads, set_blas_threads

        global _counts
        mkl.library()  # MKL's count is read once MKL is set up (where seqlab uses it)
        self._blas, self._kernels, self._mkl = get_blas_threads(), kernels._threads, mkl._threads
        _counts = self  # before the counts change, so that a fork in between finds them to put back
        set_blas_threads(1)
        return self

    def __exit__(self, *exc):
        from seqlab import kernels, mkl
        from seqlab.blas import set_blas_threads

        global _counts
        if self._blas is not None:
            set_blas_threads(self._blas)
        mkl.set_mkl_threads(self._mkl)
        kernels.set_threads(self._kernels)
        _counts = None


def _after_fork_in_child() -> None:
    """A child forked while another thread split a batch has none of its threads: the split's lock would stay
    taken (no split ever again) and its single-thread counts would stay set; both are put back."""
    global _lock, _counts
    _lock = threading.Lock()
    if _counts is not None:
        _counts.__exit__()


os.register_at_fork(after_in_child=_after_fork_in_child)
