"""Compiled kernels on the CPU (optional): LayerNorm, the softmax and log-softmax, the cross-entropy's gradient,
dropout, GELU, Adam, a bias's gradient, and a feed-forward's middle.

NumPy runs one operation at a time over the whole array: LayerNorm's forward
is five passes through memory (row sums, x − μ, squares summed, ·r, ·w + b)
where torch's kernel makes one, and GELU's backward ten. With Numba installed
(``pip install 'seqlab[numba]'``), seqlab runs these element-wise steps as the
loops in `seqlab._numba_kernels`, a row (or a block of values) at a time in
cache: on the machines in docs/results.md LayerNorm's forward and backward at
encoder-train's size take ~1/4 of the NumPy time, the softmax's ~1/2 to
~1/3, GELU's ~1/3 to ~1/5 (benchmarks/row_kernels.py). Dropout's keep masks
(SplitMix64 words, `seqlab.random`) are drawn 7-12x faster than NumPy's
formula and, for plain dropout, made again in backward instead of stored;
an Adam(W) step is one pass instead of ~14 (~5x), one call for a whole parameter group (`adam_many`); the
log-softmax and the cross-entropy's gradient one pass a row instead of 5-8; a feed-forward's bias,
activation and dropout are one pass each way (`bias_act_dropout`); memory-efficient
attention's score tiles are one pass per row instead of ~8 (`flash_tiles`); the embedding's gradient
is its rows added in place by id (~1.5x faster than SciPy's sparse
product). Everything else, and every other dtype and array library, stays
NumPy.

On more than one thread (`seqlab.blas.set_blas_threads`, ``--threads``, or
NumPy's BLAS count by default) arrays of `min_parallel()` values or more go to
the kernels' parallel twins, which give the same values bitwise; a model's
residual adds and Linear's bias go to twins of their own there (`add`,
`add_rows`; on one thread NumPy's loops are as fast). Where the
products go to MKL (`seqlab.mkl`) they run on Numba's OpenMP pool where it
loads (GNU OpenMP on Linux), else on its TBB pool (the `tbb` package, which
`seqlab[numba]` installs on Linux x86-64): on two threads of the Xeon in
docs/results.md every benchmark was 7-12% faster on OpenMP than on TBB.
Beside NumPy's OpenBLAS they run on TBB's pool, else on one thread: there
GNU OpenMP's spinning workers and OpenBLAS's take turns on the same cores,
and on two threads of the AMD EPYC in docs/results.md gpt-train's step took
9x as long as on TBB. Both pools are safe to call from several threads.
GNU OpenMP's pool does not survive a ``fork`` (Numba stops a child
that uses it), so in a child process made by ``fork`` the kernels run on one
thread unless the pool is TBB. ``NUMBA_THREADING_LAYER`` set in the
environment chooses the pool instead (``tbb``, ``omp``; ``workqueue``, not
safe from several threads, means one thread); `describe` names the pool.

``SEQLAB_KERNELS`` chooses: ``auto`` (the default: Numba when it imports),
``numpy`` (never) or ``numba`` (Numba or an error). :func:`library` says which
is in use. The two paths agree within float32 rounding (the kernels sum a row
in SIMD lanes, NumPy pairwise); dropout, its masks and Adam are bitwise the same.

Each function below returns None when the kernels are off or the arrays are
not theirs to take (not NumPy float32 in C order, or empty), and the caller
then runs its NumPy formula.
"""
from __future__ import annotations

import ctypes
import functools
import os
import sys
from pathlib import Path

import numpy as np

from seqlab import cuda_kernels  # the same kernels for CuPy arrays, on the GPU
from seqlab.errors import ConfigError

__all__ = ["ACTIVATIONS", "AddressCache", "adam", "adam_many", "add", "add_rows", "bias_act_dropout",
           "bias_act_dropout_backward", "bias_act_dropout_takes", "column_sums", "cross_entropy_backward",
           "describe", "dropout", "embedding_backward", "flash_tiles", "gelu_backward", "gelu_forward", "gemm_pair",
           "gemm_split",
           "keep_mask",
           "keyed_dropout", "layer_norm_backward", "layer_norm_forward", "library", "log_softmax_rows", "min_parallel",
           "set_threads", "softmax_backward", "softmax_rows", "threads", "use"]

_CHOICES = ("auto", "numpy", "numba")
_FLOAT32 = np.dtype(np.float32)
# below this many values the parallel twins are not used; None: by Numba's threading layer and where the
# products run. 2^15 on OpenMP (the default beside MKL), and on TBB where the pool runs the large products
# too (`gemm_split`, the default beside NumPy's OpenBLAS); 2^19 on TBB beside a BLAS's own threads. Between
# MKL's or OpenBLAS's threaded products twins on TBB lost time below ~5·10^5 values (gpt-train on two
# threads, arrays of 98,304-393,216 values, was faster with them serial: the BLAS's workers spun on the
# cores the twins wanted) while on OpenMP they gained from 2^15 (the same gpt-train 8-9% faster there);
# with the products on the pool gpt-train is faster from 2^15 again (1.2-2.0 ms a step on two threads of
# an EPYC), and bert-infer and encoder-train (524,288 values and more) read the same either way
# (docs/results.md, 2026-12-03 and 2026-12-07). An int set here holds on every layer.
MIN_PARALLEL: int | None = None
# a model's residual adds and Linear's bias on the parallel twins (`add`, `add_rows`); False: NumPy's loops,
# one thread (engine_ab.py's switch "sums")
PARALLEL_SUMS = True
_MIN_PARALLEL_BY_LAYER = {"omp": 1 << 15}
_MIN_PARALLEL_SPLIT = 1 << 15  # on TBB with the products on the pool (`gemm_split`)
_MIN_PARALLEL_OTHERWISE = 1 << 19
_MIN_PARALLEL_FLOOR = min(*_MIN_PARALLEL_BY_LAYER.values(), _MIN_PARALLEL_SPLIT, _MIN_PARALLEL_OTHERWISE)  # any
_chosen: str | None = None  # set by use(); None: the environment's SEQLAB_KERNELS
_threads: int | None = None  # set by set_threads(); None: NumPy's BLAS count, read when first needed
_forked = False  # True in a child process made by os.fork (see _usable_layer)
_POOL_NAMES = {"omp": "OpenMP", "tbb": "TBB"}


def _after_fork_in_child() -> None:
    global _forked
    _forked = True


os.register_at_fork(after_in_child=_after_fork_in_child)


def _choice() -> str:
    choice = _chosen or os.environ.get("SEQLAB_KERNELS", "auto").strip().lower() or "auto"
    if choice not in _CHOICES:
        raise ConfigError(f"SEQLAB_KERNELS={choice!r}: expected one of {', '.join(_CHOICES)}")
    return choice


def use(choice: str | None) -> str:
    """Switch this process to 'auto', 'numpy' or 'numba' (None: back to SEQLAB_KERNELS); returns `library()`."""
    global _chosen
    if choice is not None and choice not in _CHOICES:
        raise ValueError(f"unknown kernel choice {choice!r}: expected one of {', '.join(_CHOICES)}")
    _chosen = choice
    _module.cache_clear()
    _parallel_layer.cache_clear()
    return library()


def set_threads(n: int | None) -> None:
    """Run the kernels on `n` threads (1: one after another); None: NumPy's BLAS count again."""
    global _threads
    if n is not None and n < 1:
        raise ValueError(f"kernel threads must be >= 1, got {n}")
    _threads = n


def threads() -> int:
    """The kernels' thread count (`set_threads`, else NumPy's BLAS count)."""
    global _threads
    if _threads is None:
        from seqlab.blas import get_blas_threads

        _threads = get_blas_threads() or 1
    return _threads


def _load_tbb() -> None:
    """Load the `tbb` wheel's library (in this environment's lib folder, which the loader does not search)
    so Numba's TBB pool, linked against libtbb.so.12, finds it; nothing when it is not there."""
    for folder in (Path(sys.prefix) / "lib", Path(sys.base_prefix) / "lib"):
        for path in sorted(folder.glob("libtbb.so.12*")) if folder.is_dir() else []:
            try:
                ctypes.CDLL(str(path), mode=ctypes.RTLD_GLOBAL)
                return
            except OSError:
                continue


def min_parallel() -> int:
    """The fewest values an array needs for the parallel twins: `MIN_PARALLEL`, or by Numba's layer and
    where the products run (see `MIN_PARALLEL`)."""
    if MIN_PARALLEL is not None:
        return MIN_PARALLEL
    layer = _usable_layer()
    by_layer = _MIN_PARALLEL_BY_LAYER.get(layer or "")
    if by_layer is not None:
        return by_layer
    split = layer is not None and GEMM_SPLIT and _products_on_pool()
    return _MIN_PARALLEL_SPLIT if split else _MIN_PARALLEL_OTHERWISE


@functools.lru_cache(maxsize=None)
def _products_on_pool() -> bool:
    """Whether `gemm_split` can take products here: NumPy's BLAS an ILP64 OpenBLAS, and MKL not chosen."""
    from seqlab import mkl
    from seqlab.blas import openblas_sgemm_address

    return mkl._mkl() is None and openblas_sgemm_address() is not None


def _parallel_ok() -> bool:
    """Whether the parallel twins can run here (see `_usable_layer`)."""
    return _usable_layer() is not None


def _usable_layer() -> str | None:
    """`_parallel_layer()`, but None in a child process made by fork unless the parent had started a TBB pool:
    GNU OpenMP's pool does not survive a fork (Numba stops the child that uses it), and in a child that has
    not looked yet, starting the pool to see which it is could be that use."""
    if _forked and not _parallel_layer.cache_info().currsize:
        return None
    layer = _parallel_layer()
    return None if _forked and layer == "omp" else layer


@functools.lru_cache(maxsize=None)
def _parallel_layer() -> str | None:
    """Numba's threading layer ('omp', 'tbb') once its pool has started, or None when the parallel twins cannot
    run (no Numba, or no layer safe for threads: not 'workqueue')."""
    k = _module()
    if k is None:
        return None
    import numba

    def start() -> bool:  # the first parallel call starts the pool, or fails when no such layer loads
        try:
            k.scale_kept_parallel(np.zeros(1, _FLOAT32), np.ones(1, np.bool_), _FLOAT32.type(1),
                                  np.zeros(1, _FLOAT32))
            return True
        except Exception:  # noqa: BLE001 - Numba's ValueError "No threading layer could be loaded", or similar
            return False

    _load_tbb()  # for a TBB pool, the user's or the default
    if os.environ.get("NUMBA_THREADING_LAYER"):  # the user's choice stands
        started = start()
    else:  # by where the products go
        started = False
        for layer in _default_layers():
            numba.config.THREADING_LAYER = layer
            started = start()
            if started:
                break
    if not started:
        return None
    layer = numba.threading_layer()
    return None if layer == "workqueue" else layer


def _default_layers() -> tuple[str, ...]:
    """The pools to try, in order, when NUMBA_THREADING_LAYER is not set: by where the products go.

    Beside MKL's threads, GNU OpenMP's pool ("omp"), then TBB's ("safe": thread- and fork-safe, which is
    TBB): on two threads of the Xeon in docs/results.md every benchmark was 7-12% faster on it. Beside
    NumPy's OpenBLAS, TBB's alone: after each parallel region GNU OpenMP's workers spin on the cores
    OpenBLAS's own workers spin on after each product (neither yields soon), and on two threads of the
    AMD EPYC there gpt-train's step took 338-401 ms instead of 40-41 (docs/results.md, 2026-12-04); without TBB
    the kernels run on one thread there.
    """
    from seqlab import mkl  # the products' library, chosen by SEQLAB_BLAS and the CPU

    return ("omp", "safe") if mkl.library() == "mkl" else ("safe",)


def _twin(k, name: str, size: int):
    """The kernel `name`, or its parallel twin when more than one thread is asked for and `size` warrants it."""
    return _parallel_twin(k, name, size) or getattr(k, name)


def _parallel_twin(k, name: str, size: int):
    """`name`_parallel, set to the asked-for threads, when there are more than one and `size` warrants it;
    else None."""
    n = threads()
    if n > 1 and _parallel_ok() and size >= min_parallel():
        import numba

        numba.set_num_threads(min(n, numba.config.NUMBA_NUM_THREADS))  # per calling thread
        return getattr(k, name + "_parallel")
    return None


@functools.lru_cache(maxsize=None)
def _module():
    """seqlab._numba_kernels, or None (SEQLAB_KERNELS=numpy, or Numba missing or unusable here)."""
    choice = _choice()
    if choice == "numpy":
        return None
    try:  # Numba imports only now: `seqlab --help` does not pay for it
        from seqlab import _numba_kernels
    except Exception as exc:  # noqa: BLE001 - ImportError, or a Numba that rejects this NumPy / cache folder
        if choice == "numba":
            raise ConfigError(f"SEQLAB_KERNELS=numba but Numba is not usable here ({type(exc).__name__}: "
                              f"{exc}): pip install 'seqlab[numba]', or unset SEQLAB_KERNELS") from exc
        return None
    if _announce:
        _listen()
    return _numba_kernels


def announce_compiles(say) -> None:
    """Call `say(line)` once, when Numba starts compiling code in this process (None: stop).

    The first run after installing compiles the kernels (several seconds each) before its first step
    and saves them in Numba's cache; later runs load them in milliseconds. The command line announces
    that wait on a terminal instead of sitting silent through it; a library prints nothing by itself.
    """
    _announce[:] = [say] if say is not None else []
    if say is not None and _module.cache_info().currsize and _module() is not None:  # else `_module` will
        _listen()


def _listen() -> None:
    """Register the Numba event listener behind `announce_compiles` (once; Numba is imported)."""
    global _listener
    if _listener is not None:
        return
    from numba.core import event

    class CompileNotice(event.Listener):
        def on_start(self, ev) -> None:
            if _announce:
                _announce.pop()("compiling seqlab's Numba kernels for this machine (first use only; later "
                                "runs load them from Numba's cache) ...")

        def on_end(self, ev) -> None:
            pass

    _listener = CompileNotice()
    event.register("numba:compile", _listener)


_announce: list = []  # [say] until the next compile is announced
_listener = None  # the one Numba event listener, once registered


def library() -> str:
    """'numba' when the compiled kernels run, else 'numpy'."""
    return "numba" if _module() is not None else "numpy"


def describe() -> str:
    """One line for reports: 'Numba 0.68.1, OpenMP pool', 'Numba 0.68.1, one thread' or 'NumPy' (the
    parallel twins' speed depends on the pool)."""
    if _module() is None:
        return "NumPy"
    import numba

    layer = _usable_layer()
    return f"Numba {numba.__version__}, " + (f"{_POOL_NAMES.get(layer, layer)} pool" if layer else "one thread")


def _gpu(a) -> bool:
    """Whether `a` is not a NumPy array: then it is the CUDA kernels' to take or decline (`seqlab.cuda_kernels`
    takes CuPy's), never Numba's."""
    return type(a) is not np.ndarray


def _kernels(*arrays):
    """The kernel module when every array is a non-empty NumPy float32 array in C order, else None."""
    k = _module()
    if k is None:
        return None
    for a in arrays:
        if type(a) is not np.ndarray or a.dtype != _FLOAT32 or not a.flags.c_contiguous or a.size == 0:
            return None
    return k


def layer_norm_forward(x2, w, b, eps: float):
    """(y, μ, r) of LayerNorm over the rows of x2 (N, D), μ the row means and r = 1/√(σ² + eps), both as
    (N, 1); w, b (D,) or None. None when the kernels do not apply. Backward takes x2, μ and r
    (`layer_norm_backward`): x̂ = (x − μ)·r is not stored. CuPy arrays: the CUDA kernel's."""
    if _gpu(x2):
        return cuda_kernels.layer_norm_forward(x2, w, b, eps)
    d = x2.shape[1]
    if _kernels(x2) is None:  # before the fill-ins below: the NumPy formula needs none of them
        return None
    w = np.ones(d, _FLOAT32) if w is None else w
    b = np.zeros(d, _FLOAT32) if b is None else b
    k = _kernels(w, b)
    if k is None:
        return None
    y = np.empty_like(x2)
    mean = np.empty(x2.shape[0], _FLOAT32)
    rstd = np.empty(x2.shape[0], _FLOAT32)
    _twin(k, "layer_norm_forward", x2.size)(x2, w, b, _FLOAT32.type(eps), y, mean, rstd)
    return y, mean[:, None], rstd[:, None]


def layer_norm_backward(g2, x2, mean, rstd, w):
    """(gx, gw, gb) of LayerNorm for upstream g2 (N, D), from the forward's input x2 and its μ and r
    (`layer_norm_forward`); w (D,) or None."""
    if _gpu(g2):
        return cuda_kernels.layer_norm_backward(g2, x2, mean, rstd, w)
    if _kernels(g2, x2, mean, rstd) is None or g2.shape != x2.shape:
        return None
    w = np.ones(g2.shape[1], _FLOAT32) if w is None else w
    k = _kernels(w)
    if k is None:
        return None
    gx = np.empty_like(g2)
    gw = np.zeros(g2.shape[1], _FLOAT32)
    gb = np.zeros(g2.shape[1], _FLOAT32)
    _twin(k, "layer_norm_backward", g2.size)(g2, x2, mean.reshape(-1), rstd.reshape(-1), w, gx, gw, gb)
    return gx, gw, gb


def softmax_rows(s, stats: tuple | None = None, in_place: bool = True, bias=None):
    """Softmax over the last axis of `s`, as `fused.softmax_array(s, -1, overwrite=in_place)`:
    returns (result, (max, sum)) with keepdims statistics; `stats` given: those are used (no reductions).

    `bias`: a float32 array broadcastable to s along every axis but the last, which it has whole (an
    attention mask's −inf and 0, a position bias), added to each row just before its softmax: the values
    of s + bias in one pass less. None is returned for any other bias, and on one thread unless `stats`
    are given (the caller adds it itself). CuPy arrays: the CUDA kernel's (any broadcasting bias).
    """
    if _gpu(s):
        return cuda_kernels.softmax_rows(s, stats, in_place, bias)
    k = _kernels(s)
    if k is None or s.ndim == 0:
        return None
    twin = _twin(k, "softmax", s.size)
    if bias is None:
        b2, brow = _NO_BIAS, _NO_ROWS
    else:
        rows = _bias_rows(s.shape, bias)
        # on one thread a first pass (max and sum to find) read faster as NumPy's own s += bias: the rows
        # are short, and a loop more per row costs about what that pass does (docs/results.md, 2026-12-03)
        if rows is None or (stats is None and twin is k.softmax):
            return None
        b2, brow = np.ascontiguousarray(bias).reshape(-1, s.shape[-1]), rows
    if not in_place:
        s = s.copy()
    s2 = s.reshape(-1, s.shape[-1])  # a view: s is C-ordered
    keep = s.shape[:-1] + (1,)
    if stats is None:
        m = np.empty(s2.shape[0], _FLOAT32)
        total = np.empty(s2.shape[0], _FLOAT32)
    else:
        m = np.ascontiguousarray(stats[0], dtype=_FLOAT32).reshape(-1)
        total = np.ascontiguousarray(stats[1], dtype=_FLOAT32).reshape(-1)
    twin(s2, m, total, stats is not None, b2, brow)
    return s, (m.reshape(keep), total.reshape(keep))


_NO_BIAS = np.empty((0, 1), _FLOAT32)  # softmax_rows without a bias (the kernel looks at its row count only)
_NO_ROWS = np.empty(0, np.int64)
_NO_ROWS.flags.writeable = False  # as _row_map's: one compiled type for both


def _bias_rows(shape, bias, dtype=_FLOAT32):
    """For a bias that `softmax_rows` takes (NumPy `dtype`, broadcastable to `shape` along every axis but
    the last, which it has whole): which of its rows (bias.reshape(-1, K)) each row of s gets; else None.
    (Short attention's bool mask goes by the same rule.)"""
    if type(bias) is not np.ndarray or bias.dtype != dtype or bias.ndim == 0 or bias.ndim > len(shape):
        return None
    lead = (1,) * (len(shape) - bias.ndim) + bias.shape[:-1]
    if bias.shape[-1] != shape[-1] or any(b not in (1, n) for b, n in zip(lead, shape[:-1])):
        return None
    return _row_map(tuple(shape[:-1]), lead)


@functools.lru_cache(maxsize=32)
def _row_map(rows_shape: tuple, bias_lead: tuple) -> np.ndarray:
    """The bias row of each row of s (read-only, cached: one per attention shape and mask shape)."""
    n = 1
    for b in bias_lead:
        n *= b
    rows = np.broadcast_to(np.arange(n, dtype=np.int64).reshape(bias_lead), rows_shape).reshape(-1)
    rows.flags.writeable = False
    return rows


def flash_tiles(*arrays):
    """The compiled tiles of memory-efficient attention (`flash_forward_tile`, `flash_weights_tile`,
    `flash_ds_tile` in seqlab._numba_kernels, used by `seqlab.nn.efficient_attention`) when the kernels are on
    and every array is a non-empty NumPy float32 array, in any layout (the tiles run on buffers of their
    own); else None."""
    k = _module()
    if k is None or any(type(a) is not np.ndarray or a.dtype != _FLOAT32 or a.size == 0 for a in arrays):
        return None
    return k


SHORT_ATTENTION = True  # False: attention always takes the batched products (for timing the two)
SHORT_MAX_KEYS = 1024  # longer sequences keep the batched path (and `nn.memory_efficient_attention`)
_NO_KEEP = np.zeros((1, 1, 1, 1), np.bool_)
_NO_WEIGHTS = np.zeros((1, 1, 1, 1), _FLOAT32)
_NO_BLOCK_ROWS = np.zeros((0, 1), np.bool_)


def _rows_ok(x) -> bool:
    """A 4-D NumPy float32 array whose rows are contiguous and whose other strides are whole float32s."""
    return (type(x) is np.ndarray and x.dtype == _FLOAT32 and x.ndim == 4 and x.size > 0
            and x.strides[-1] == 4 and all(st > 0 and st % 4 == 0 for st in x.strides[:-1]))


def short_attention_plan(q, k, v, bias, block, keep):
    """The block rows `short_attention_forward` takes — (block (R, Tk) bool, row map) — when it takes these
    arguments: the kernels on, q (B, H, Tq, D), k (B, H, Tk, D), v (B, H, Tk, Dv) float32 with rows
    contiguous (strided head views are fine), D and Dv multiples of 16, Tk ≤ `SHORT_MAX_KEYS`, no float
    bias, a bool `block` (a causal mask, padding) broadcastable to the scores, or none for at most 4 queries
    (generation with a KV cache) or where the heads run on more than one thread, dropout's `keep` of the
    scores' shape. Else None."""
    if not SHORT_ATTENTION or bias is not None or _module() is None:
        return None
    if not (_rows_ok(q) and _rows_ok(k) and _rows_ok(v)):
        return None
    B, H, tq, d = q.shape
    tk, dv = k.shape[2], v.shape[3]
    lanes = _module().LANES
    if (k.shape != (B, H, tk, d) or v.shape[:3] != (B, H, tk) or d % lanes or dv % lanes
            or not 0 < tk <= SHORT_MAX_KEYS):
        return None
    if keep is not None and (type(keep) is not np.ndarray or keep.dtype != np.bool_ or keep.shape != (B, H, tq, tk)):
        return None
    if block is None:  # nothing to skip: on one thread the batched products are as fast (docs/results.md)
        if tq <= 4 or _parallel_twin(_module(), "short_attention_forward", q.size * tk // 8) is not None:
            return _NO_BLOCK_ROWS, _NO_ROWS  # a KV cache's few new queries, or heads shared between threads
        return None
    if type(block) is np.ndarray and block.ndim and block.shape[-1] == 1:  # the same for every key
        block = np.broadcast_to(block, block.shape[:-1] + (tk,))
    rows = _bias_rows((B, H, tq, tk), block, np.dtype(np.bool_))
    return None if rows is None else (np.ascontiguousarray(block).reshape(-1, tk), rows)


def short_attention_forward(q, k, v, scale: float, plan, keep, pscale, need_weights: bool = True):
    """(out, weights, stats) of softmax(q kᵀ · scale, −inf where blocked) v with dropout's `keep` (kept
    weights scaled by `pscale`) on the weights, head by head in one compiled pass
    (`_numba_kernels.short_attention_forward`); `plan` from `short_attention_plan`. out (B, H, Tq, Dv) is
    laid out as (B, Tq, H, Dv), so merging the heads is a view; weights before dropout (None when not
    `need_weights`: the kernel then writes none)."""
    k_mod = _module()
    B, H, tq, _ = q.shape
    tk, dv = k.shape[2], v.shape[3]
    out = np.empty((B, tq, H, dv), _FLOAT32).swapaxes(1, 2)
    w = np.empty((B, H, tq, tk), _FLOAT32) if need_weights else None
    m, t = np.empty((B, H, tq), _FLOAT32), np.empty((B, H, tq), _FLOAT32)
    block, rows = plan
    _twin(k_mod, "short_attention_forward", q.size * tk // 8)(
        q, k, v, _FLOAT32.type(scale), block, rows, _NO_KEEP if keep is None else keep, keep is not None,
        _FLOAT32.type(pscale), out, _NO_WEIGHTS if w is None else w, w is not None, m, t, threads())
    return out, w, (m, t)


def short_attention_backward(q, k, v, g, scale: float, plan, keep, pscale, stats, outs=(None, None, None)):
    """(dq, dk, dv) of `short_attention_forward` for the output's gradient g; `stats` its third result, or
    (max, sum, weights) with its weights (B, H, Tq, Tk) kept, which backward then reads instead of making
    them again. `outs`: views to write dq, dk, dv into (rows contiguous), else new arrays laid out as
    (B, T, H, D)."""
    k_mod = _module()
    if not _rows_ok(g):
        g = np.ascontiguousarray(g)
    B, H, tq, d = q.shape
    tk, dv = k.shape[2], v.shape[3]
    dq, dk, dvv = (o if o is not None else np.empty((B, n, H, w), _FLOAT32).swapaxes(1, 2)
                   for o, n, w in zip(outs, (tq, tk, tk), (d, d, dv)))
    block, rows = plan
    _twin(k_mod, "short_attention_backward", q.size * tk // 8)(
        q, k, v, g, _FLOAT32.type(scale), block, rows, _NO_KEEP if keep is None else keep, keep is not None,
        _FLOAT32.type(pscale), stats[0], stats[1], stats[2] if len(stats) > 2 else _NO_WEIGHTS, len(stats) > 2,
        dq, dk, dvv, threads())
    return dq, dk, dvv


def column_sums(a2):
    """Σ over the rows of a 2-D array (a bias's gradient), as a new (D,) array: float32 NumPy arrays in C
    order on the kernels (`_numba_kernels.column_sums`), CuPy arrays on the CUDA kernel; None otherwise."""
    if _gpu(a2):
        return cuda_kernels.column_sums(a2)
    k = _kernels(a2)
    if k is None or a2.ndim != 2:
        return None
    out = np.zeros(a2.shape[1], _FLOAT32)
    k.column_sums(a2, out)  # on one thread whatever `threads()` says (see the kernel)
    return out


def log_softmax_rows(x):
    """x − max − log Σ e^(x − max) over the last axis of x, as a new array (`fused.log_softmax_array`'s
    formula in one compiled pass a row); None where the kernels do not take x (a NumPy float32 array in
    C order, not empty). CuPy arrays: the CUDA kernel's."""
    if _gpu(x):
        return cuda_kernels.log_softmax_rows(x)
    k = _kernels(x)
    if k is None or x.ndim == 0:
        return None
    out = np.empty_like(x)
    n = x.shape[-1]
    _twin(k, "log_softmax", x.size)(x.reshape(-1, n), out.reshape(-1, n))
    return out


def cross_entropy_backward(logp, target, scale, eps: float = 0.0):
    """(e^logp − ε/C − (1 − ε)·onehot(target)) · scale[:, None] for logp (N, C), target (N,) ints, and
    scale (N,) (each row's weight): `CrossEntropy.backward`'s formula in one compiled pass a row; None
    where the kernels do not take logp (as `log_softmax_rows`) or a target is outside 0..C − 1 (the
    caller's formula then says so). CuPy arrays: the CUDA kernel's."""
    if _gpu(logp):
        return cuda_kernels.cross_entropy_backward(logp, target, scale, eps)
    k = _kernels(logp)
    if k is None or logp.ndim != 2 or getattr(target, "shape", None) != logp.shape[:1] \
            or getattr(target, "dtype", np.dtype(object)).kind not in "iu":
        return None
    n = logp.shape[1]
    if target.size and (int(target.min()) < 0 or int(target.max()) >= n):
        return None
    out = np.empty_like(logp)
    _twin(k, "cross_entropy_backward", logp.size)(
        logp, np.ascontiguousarray(target, dtype=np.int64), np.ascontiguousarray(scale, dtype=_FLOAT32),
        _FLOAT32.type(eps / n), _FLOAT32.type(1 - eps), out)
    return out


def softmax_backward(g, w, out=None, scale: float = 1.0):
    """w ⊙ (g − Σ g ⊙ w) · scale over the last axis (into `out`, which may be `g`); g and w the same shape."""
    if _gpu(g):
        return cuda_kernels.softmax_backward(g, w, out, scale)
    k = _kernels(g, w) if g.shape == w.shape and g.ndim > 0 else None
    if k is None or (out is not None and _kernels(out) is None):
        return None
    out = np.empty_like(g) if out is None else out
    n = g.shape[-1]
    _twin(k, "softmax_backward", g.size)(g.reshape(-1, n), w.reshape(-1, n), _FLOAT32.type(scale),
                                         out.reshape(-1, n))
    return out


def _sums_take(size: int) -> bool:
    """Whether `add` and `add_rows` may run: the flag on and `size` at least the lowest threshold of any
    layer (a model's many small adds, one token at a time when it generates, leave here)."""
    return PARALLEL_SUMS and size >= (_MIN_PARALLEL_FLOOR if MIN_PARALLEL is None else MIN_PARALLEL)


def add(a, b):
    """a + b as a new array, on the kernels' threads: for two NumPy float32 arrays of one shape in C order
    and of `min_parallel()` values or more, when more than one thread is asked for (the same values as
    NumPy's, bitwise); else None."""
    if type(a) is not np.ndarray or type(b) is not np.ndarray or not _sums_take(a.size) or a.shape != b.shape:
        return None
    k = _kernels(a, b)
    twin = None if k is None else _parallel_twin(k, "add", a.size)
    if twin is None:
        return None
    out = np.empty_like(a)
    twin(a.reshape(-1), b.reshape(-1), out.reshape(-1))
    return out


def add_rows(y2, b) -> bool:
    """y2 (N, F) += b (F,) in place on the kernels' threads, as `add` decides; False: nothing done."""
    if (type(y2) is not np.ndarray or not _sums_take(y2.size) or b.ndim != 1 or y2.ndim != 2
            or y2.shape[1] != b.shape[0]):
        return False
    k = _kernels(y2, b)
    twin = None if k is None else _parallel_twin(k, "add_rows", y2.size)
    if twin is None:
        return False
    twin(y2, b)
    return True


# the fewest multiply-adds a product needs for `gemm_split`: below, the hand-off to the pool (~15-20 us)
# costs about what a second thread gains (at 2^20: 28-32 us split, 23 on one thread; at 2^22: 62-74 split,
# 83-89 on one thread; docs/results.md, 2026-12-07)
MIN_SPLIT_MACS = 1 << 22
# products shared out by the kernels' pool beside NumPy's OpenBLAS (`gemm_split`, `gemm_pair`); False:
# OpenBLAS's own threads (engine_ab.py's switch "gemm-split")
GEMM_SPLIT = True


def _split_plan(a, b, out):
    """(threads, cblas_sgemm's address, m, n, k, a's and b's (trans, leading dim), out) for `gemm_split` and
    `gemm_pair`, `out` allocated when None; None where the split does not apply (see `gemm_split`)."""
    if (type(a) is not np.ndarray or type(b) is not np.ndarray or a.ndim != 2 or b.ndim != 2
            or a.dtype != _FLOAT32 or b.dtype != _FLOAT32):
        return None
    (m, k), n = a.shape, b.shape[1]
    if b.shape[0] != k or m < 2 or n < 2 or m * k * n < MIN_SPLIT_MACS or _module() is None or not _parallel_ok():
        return None
    import numba

    from seqlab.blas import gemm_layout, openblas_sgemm_address

    parts = min(threads(), numba.config.NUMBA_NUM_THREADS)
    sgemm = openblas_sgemm_address()
    la, lb = gemm_layout(a, m, k), gemm_layout(b, k, n)
    if parts < 2 or sgemm is None or la is None or lb is None or not (a.flags.aligned and b.flags.aligned):
        return None
    if out is None:
        out = np.empty((m, n), dtype=_FLOAT32)
    elif (type(out) is not np.ndarray or out.shape != (m, n) or out.dtype != _FLOAT32 or out.strides[1] != 4
          or out.strides[0] % 4 or out.strides[0] < 4 * n or not out.flags.writeable or not out.flags.aligned
          or np.may_share_memory(out, a) or np.may_share_memory(out, b)):
        return None
    return parts, sgemm, m, n, k, la, lb, out


def gemm_split(a, b, out=None, alpha: float = 1.0):
    """alpha · (a @ b) for 2-D float32 NumPy arrays, shared between the kernels' threads; None where it
    does not apply (the caller multiplies as before).

    Beside NumPy's OpenBLAS on more than one thread: the kernels' pool (the one the parallel twins run on)
    cuts the product into one run of whole output rows (or columns, when there are more of those) per
    thread, and each is one cblas_sgemm call while OpenBLAS is set to one thread
    (`_numba_kernels.gemm_parts`, inside `seqlab.blas.one_blas_thread`). OpenBLAS's own workers
    then never start, so none is left spinning after the product on the cores the next op's kernels want.
    Each output element is made by one OpenBLAS call over the same row and column as in the whole product.
    Applies where the kernels run in parallel (`threads()` > 1, a TBB or OpenMP pool), NumPy's BLAS is an
    ILP64 OpenBLAS (`seqlab.blas.openblas_sgemm_address`: NumPy's wheels), the product has
    `MIN_SPLIT_MACS` multiply-adds or more and more than one row and column (a single one is NumPy's
    gemv, far faster than a GEMM that packs the whole matrix), a and b each have a unit stride (C order,
    or a transpose of it), and `out`, when given, is a writable float32 (m, n) array with unit column
    stride that overlaps neither operand.
    """
    if not GEMM_SPLIT or (_threads or threads()) < 2:  # first, and cheap: every product on one thread asks
        return None
    plan = _split_plan(a, b, out)
    if plan is None:
        return None
    parts, sgemm, m, n, k, la, lb, out = plan
    import numba

    from seqlab.blas import one_blas_thread

    numba.set_num_threads(parts)  # per calling thread
    with one_blas_thread():
        _module().gemm_parts(sgemm, la[0], lb[0], m, n, k, _FLOAT32.type(alpha), a.ctypes.data, la[1],
                             b.ctypes.data, lb[1], out.ctypes.data, out.strides[0] // 4, parts, m >= n)
    return out


def gemm_pair(a1, b1, a2, b2):
    """(a1 @ b1, a2 @ b2), two independent products (Linear's dx and dW) in one hand-off to the pool: on an
    even number of threads each takes half of them, so with two threads each product runs whole, as one
    cblas_sgemm call, one per thread (no part of either waits on the other's). None where either product is
    not `gemm_split`'s to take, or the thread count is odd: the caller then multiplies them one by one."""
    if not GEMM_SPLIT or (_threads or threads()) < 2:
        return None
    first, second = _split_plan(a1, b1, None), _split_plan(a2, b2, None)
    if first is None or second is None or first[0] % 2:
        return None
    import numba

    from seqlab.blas import one_blas_thread

    numba.set_num_threads(first[0])  # per calling thread
    with one_blas_thread():
        _module().gemm_two(first[1], _plan_row(first, a1, b1), _plan_row(second, a2, b2), first[0] // 2)
    return first[-1], second[-1]


def _plan_row(plan, a, b) -> np.ndarray:
    """A `_split_plan` as the int64 row `_numba_kernels.gemm_two` reads: (ta, tb, m, n, k, a, lda, b, ldb,
    c, ldc, by_rows), the arrays as addresses."""
    _, _, m, n, k, la, lb, out = plan
    return np.array([la[0], lb[0], m, n, k, a.ctypes.data, la[1], b.ctypes.data, lb[1], out.ctypes.data,
                     out.strides[0] // 4, m >= n], dtype=np.int64)


def dropout(x, keep, scale, out=None):
    """x ⊙ keep · scale (into `out`, which may be `x`) for a bool `keep` of x's shape."""
    if _gpu(x):
        return cuda_kernels.dropout(x, keep, scale, out)
    if type(keep) is not np.ndarray or keep.dtype != np.bool_ or keep.shape != x.shape or not keep.flags.c_contiguous:
        return None
    k = _kernels(x)
    if k is None or (out is not None and _kernels(out) is None):
        return None
    out = np.empty_like(x) if out is None else out
    _twin(k, "scale_kept", x.size)(x.reshape(-1), keep.reshape(-1), _FLOAT32.type(scale), out.reshape(-1))
    return out


def adam(p, g, m, v, consts) -> bool:
    """One Adam(W) step on float32 arrays of one shape, in place; False (nothing done) when not theirs to take.

    `consts` = (decay, l2, 1 − β1, β2, 1 − β2, √(1 − β2ᵗ), eps, lr/(1 − β1ᵗ)) as `seqlab.optim.Adam` makes them.
    """
    if _gpu(p):
        return cuda_kernels.adam(p, g, m, v, consts)
    k = _kernels(p, g, m, v) if p.shape == g.shape == m.shape == v.shape else None
    if k is None:
        return False
    _twin(k, "adam", p.size)(p.reshape(-1), g.reshape(-1), m.reshape(-1), v.reshape(-1),
                             np.asarray(consts, dtype=_FLOAT32))
    return True


class AddressCache(dict):
    """A dict for caches of array addresses (`adam_many`'s): a copy of it (copy, deepcopy, pickle) starts
    empty. A deep copy of its owner copies the arrays, and the addresses kept would still be the old ones'."""

    def __copy__(self):
        return type(self)()

    def __deepcopy__(self, memo):
        return type(self)()

    def __reduce__(self):
        return type(self), ()


def adam_many(rows: list, consts, cache: dict) -> bool:
    """`adam` on several parameters with the same `consts` in one compiled call
    (`_numba_kernels.adam_many`): rows [(p, g, m, v), ...]. False (nothing done) unless the kernels take
    every row: NumPy float32 arrays in C order, the four of a row of one shape and not empty.

    `cache`: a dict the caller keeps between calls for one group of parameters, inside an `AddressCache`.
    The addresses of p, m and v stay in it while the same arrays come back (each is updated in place, so
    step after step they do), and only the gradients' are read again: a gradient is a new array every step.
    """
    k = _module()
    if k is None or not rows:
        return False
    kept = cache.get("arrays")
    if kept is None or len(kept) != len(rows) or not all(
            a is r[0] and b is r[2] and c is r[3] for (a, b, c), r in zip(kept, rows)):
        taken = all(_kernels(p, m, v) is not None and p.shape == m.shape == v.shape for p, _, m, v in rows)
        table = np.array([(p.ctypes.data, 0, m.ctypes.data, v.ctypes.data) for p, _, m, v in rows], np.int64)
        cache.clear()
        sizes = np.array([p.size for p, *_ in rows], np.int64)
        cache.update(arrays=[(p, m, v) for p, _, m, v in rows], taken=taken, table=table, sizes=sizes,
                     total=int(sizes.sum()))
    if not cache["taken"]:
        return False
    for p, g, _, _ in rows:
        if type(g) is not np.ndarray or g.dtype != _FLOAT32 or not g.flags.c_contiguous or g.shape != p.shape:
            return False
    table = cache["table"]
    table[:, 1] = [g.ctypes.data for _, g, _, _ in rows]
    _twin(k, "adam_many", cache["total"])(table, cache["sizes"], np.asarray(consts, dtype=_FLOAT32))
    return True


def embedding_backward(ids, grad, num_rows: int):
    """The embedding's weight gradient: grad (N, D)'s rows summed by ids (N,) into a new (num_rows, D)
    array, each row in position order as np.add.at sums it (the same values bitwise). None where the
    kernels do not take it, or an id is outside 0..num_rows − 1 (the caller's formula then reports it)."""
    k = _kernels(grad)
    if k is None or grad.ndim != 2 or getattr(ids, "ndim", 0) != 1 or ids.shape[0] != grad.shape[0] \
            or ids.dtype.kind not in "iu":
        return None
    if ids.size and (int(ids.min()) < 0 or int(ids.max()) >= num_rows):
        return None
    out = np.zeros((num_rows, grad.shape[1]), _FLOAT32)
    _twin(k, "embedding_backward", grad.size)(np.ascontiguousarray(ids, dtype=np.int64), grad, out)
    return out


def keep_mask(n: int, key: int, threshold: int):
    """Dropout's keep mask of n values keyed by `key` (`seqlab.random.keep_mask`), as a flat bool array."""
    k = _module()
    if k is None:
        return None
    out = np.empty(n, dtype=np.bool_)
    _twin(k, "keep_mask", n)(np.uint64(key), np.uint32(threshold), out)
    return out


def keyed_dropout(x, key: int, threshold: int, scale):
    """x ⊙ keep · scale as a new array, the keep mask (`keep_mask`'s, keyed by `key`) made on the fly."""
    k = _kernels(x)
    if k is None:
        return None
    out = np.empty_like(x)
    _twin(k, "keyed_dropout", x.size)(x.reshape(-1), np.uint64(key), np.uint32(threshold), _FLOAT32.type(scale),
                                      out.reshape(-1))
    return out


def gelu_forward(x, approximate: str = "none", out=None):
    """GELU(x) (into `out`, a new array when None): x·Φ(x), or the tanh approximation with approximate='tanh'."""
    if _gpu(x):
        return cuda_kernels.gelu_forward(x, approximate, out)
    k = _kernels(x)
    if k is None or (out is not None and (_kernels(out) is None or out.shape != x.shape)):
        return None
    out = np.empty_like(x) if out is None else out
    _twin(k, "gelu_forward", x.size)(x.reshape(-1), approximate == "tanh", out.reshape(-1))
    return out


def gelu_backward(x, grad, approximate: str = "none", y=None):
    """grad · GELU'(x) as a new array; x and grad the same shape.

    `y`: the forward's output x·Φ(x), for the exact GELU. Φ(x) is then y/x, one division instead of
    Φ's fit (as the NumPy path does); the tanh form computes its factor again either way.
    """
    if _gpu(x):
        return cuda_kernels.gelu_backward(x, grad, approximate)
    k = _kernels(x, grad) if x.shape == grad.shape else None
    if k is None:
        return None
    out = np.empty_like(x)
    if y is not None and approximate != "tanh" and y.shape == x.shape and _kernels(y) is not None:
        _twin(k, "gelu_erf_backward_from_output", x.size)(x.reshape(-1), y.reshape(-1), grad.reshape(-1),
                                                          out.reshape(-1))
        return out
    _twin(k, "gelu_backward", x.size)(x.reshape(-1), grad.reshape(-1), approximate == "tanh", out.reshape(-1))
    return out


# the activations `bias_act_dropout` computes, by the names `F.bias_act_dropout` takes
ACTIVATIONS = {"relu": 0, "gelu": 1, "gelu_tanh": 2}


def bias_act_dropout_takes(z, b, dropout: bool) -> bool:
    """Whether `bias_act_dropout` computes act(z + b) (dropped out when `dropout`) for these arrays:
    float32 in C order, b of z's last size, and with dropout an even last size (a mask word covers two
    values of one row)."""
    return (_kernels(z, b) is not None and z.ndim >= 1 and b.ndim == 1 and b.shape[0] == z.shape[-1]
            and not (dropout and z.shape[-1] % 2))


def _consts(key: int | None, threshold: int, scale) -> tuple:
    """The kernels' key, threshold and scale; without a key threshold 0 and scale 1 (no dropout)."""
    if key is None:
        return np.uint64(0), np.uint32(0), _FLOAT32.type(1.0)
    return np.uint64(key), np.uint32(threshold), _FLOAT32.type(scale)


def bias_act_dropout(z, b, activation: str, key: int | None, threshold: int, scale):
    """act(z + b) ⊙ keep · scale as a new array, the keep mask keyed by `key` (`keyed_dropout`'s for z's
    shape) made on the fly; `key` None: no dropout. None when `bias_act_dropout_takes` says no."""
    if not bias_act_dropout_takes(z, b, key is not None):
        return None
    f = z.shape[-1]
    out = np.empty_like(z)
    _twin(_module(), "bias_act_dropout", z.size)(z.reshape(-1, f), b, ACTIVATIONS[activation],
                                                 *_consts(key, threshold, scale), out.reshape(-1, f))
    return out


def bias_act_dropout_backward(g, z, b, out, activation: str, key: int | None, threshold: int, scale):
    """(gz, gb): the gradients of `bias_act_dropout`'s z and b for upstream g, from its z, b and output;
    gb sums gz's rows in blocks of `ROWS` rows, the blocks in order (the same bits on any number of
    threads). Runs wherever `bias_act_dropout` ran, even with the kernels switched off since."""
    from seqlab import _numba_kernels as k  # forward ran the kernels: Numba is here

    f = z.shape[-1]
    g = np.ascontiguousarray(g, dtype=_FLOAT32)
    gz = np.empty_like(z)
    gb = np.zeros(f, _FLOAT32)
    _twin(k, "bias_act_dropout_backward", z.size)(g.reshape(-1, f), z.reshape(-1, f), b, out.reshape(-1, f),
                                                  ACTIVATIONS[activation], *_consts(key, threshold, scale),
                                                  gz.reshape(-1, f), gb)
    return gz, gb
