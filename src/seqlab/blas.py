"""NumPy's BLAS thread count, read and set for a block (`blas_threads`), and which OpenBLAS kernels
run (`openblas_kernels`), without threadpoolctl.

Small models gain little from a second BLAS thread, and on a busy machine
OpenBLAS's threads wait on each other (2 busy cores: 240 SST-2 steps in 20 s
on 1 thread, 64-90 steps in 30 s on 2; a 160-character GPT sample 33 s on 2
threads, under 1 s on 1). The getter and setter are found with ctypes in the
BLAS library NumPy loaded; the benchmarks (seqlab.bench.harness) use them too.
"""
from __future__ import annotations

import contextlib
import ctypes
import functools
import os
import re
import threading
from pathlib import Path
from typing import Any, Iterator

import numpy as np

# the getters / setters OpenBLAS, MKL and BLIS builds export (NumPy's wheels ship scipy-openblas64)
_BLAS_GET = ("scipy_openblas_get_num_threads64_", "openblas_get_num_threads64_", "openblas_get_num_threads",
             "scipy_openblas_get_num_threads", "MKL_Get_Max_Threads", "bli_thread_get_num_threads")
_BLAS_SET = ("scipy_openblas_set_num_threads64_", "openblas_set_num_threads64_", "openblas_set_num_threads",
             "scipy_openblas_set_num_threads", "MKL_Set_Num_Threads", "bli_thread_set_num_threads")
# OpenBLAS's build line ("OpenBLAS 0.3.31 ... DYNAMIC_ARCH ...") and the name of the kernels it chose at load
_OPENBLAS_CONFIG = ("scipy_openblas_get_config64_", "openblas_get_config64_", "openblas_get_config",
                    "scipy_openblas_get_config")
_OPENBLAS_CORE = ("scipy_openblas_get_corename64_", "openblas_get_corename64_", "openblas_get_corename",
                  "scipy_openblas_get_corename")
# an ILP64 OpenBLAS's float32 GEMM, for seqlab.kernels.gemm_split
_OPENBLAS_SGEMM64 = ("scipy_cblas_sgemm64_", "cblas_sgemm64_")
# held while the BLAS thread count is set, and through a product seqlab.kernels.gemm_split shares out with
# OpenBLAS set to one thread, so neither undoes the other (an RLock: set_blas_threads may run inside)
_COUNT_LOCK = threading.RLock()


def _new_lock_in_child() -> None:
    """After os.fork, in the child: a fresh lock (one held by another thread at the fork would stay held)."""
    global _COUNT_LOCK
    _COUNT_LOCK = threading.RLock()


os.register_at_fork(after_in_child=_new_lock_in_child)


def loaded_blas_libraries() -> list[str]:
    """Paths of the BLAS shared libraries mapped into this process (Linux: /proc/self/maps), else []."""
    np.ones((2, 2)) @ np.ones((2, 2))  # NumPy's BLAS is loaded by now
    try:
        maps = Path("/proc/self/maps").read_text()
    except OSError:
        return []
    found = {ln.split()[-1] for ln in maps.splitlines() if "/" in ln and
             re.search(r"(openblas|mkl_rt|libblis|libblas)[^/]*\.so", ln.split()[-1])}
    # NumPy's own first (its wheels put it in numpy.libs; another library's OpenBLAS, e.g. SciPy's, after),
    # then MKL last: when seqlab.mkl loaded it beside NumPy's OpenBLAS, "NumPy's BLAS" is the other one
    return sorted(found, key=lambda path: ("numpy" not in path.lower(), "mkl_rt" in Path(path).name, path))


def _opened_blas_libraries() -> Iterator[Any]:
    """ctypes handles of `loaded_blas_libraries()`, in its order (NumPy's own first); any it cannot open, skipped."""
    for path in loaded_blas_libraries():
        try:
            yield ctypes.CDLL(path)
        except OSError:
            continue


def _exported(lib: Any, names: tuple[str, ...]) -> Any:
    """The first of `names` that `lib` exports, else None."""
    return next((getattr(lib, n) for n in names if hasattr(lib, n)), None)


@functools.lru_cache(maxsize=None)
def _blas_function(names: tuple[str, ...]) -> Any:
    """The first of `names` exported by a BLAS library loaded in this process, else None (looked up once)."""
    for lib in _opened_blas_libraries():
        fn = _exported(lib, names)
        if fn is not None:
            return fn
    return None


def get_blas_threads() -> int | None:
    """How many threads NumPy's BLAS uses now (None when no known getter is exported)."""
    get = _blas_function(_BLAS_GET)
    if get is None:
        return None
    get.restype = ctypes.c_int
    return int(get())


def set_blas_threads(n: int) -> bool:
    """Put NumPy's BLAS (and MKL, when seqlab.mkl uses it, and seqlab.kernels) on `n` threads; False when
    neither BLAS has a known setter."""
    if n < 1:
        raise ValueError(f"BLAS threads must be >= 1, got {n}")
    from seqlab.kernels import set_threads as set_kernel_threads  # and seqlab's compiled row kernels
    from seqlab.mkl import set_mkl_threads  # MKL too, when seqlab's products go to it

    with _COUNT_LOCK:  # not in the middle of a product gemm_split runs with OpenBLAS on one thread
        set_kernel_threads(n)
        mkl_set = set_mkl_threads(n)
        put = _blas_function(_BLAS_SET)
        if put is None:
            return mkl_set
        put.argtypes = [ctypes.c_int]
        put(int(n))
        return True


def gemm_layout(x: np.ndarray, rows: int, cols: int):
    """(CBLAS transpose flag, leading dimension) of the last two axes of a float32 view as row-major
    cblas_sgemm takes them (111: as stored, 112: a transpose of what is stored), or None when neither
    axis has a unit stride."""
    s0, s1 = x.strides[-2], x.strides[-1]
    if (s1 == 4 or cols == 1) and s0 % 4 == 0 and s0 >= 4 * cols:
        return 111, max(s0 // 4, cols, 1)
    if (s0 == 4 or rows == 1) and s1 % 4 == 0 and s1 >= 4 * rows:
        return 112, max(s1 // 4, rows, 1)
    return None


@functools.lru_cache(maxsize=None)
def openblas_sgemm_address() -> int | None:
    """The address of cblas_sgemm in NumPy's OpenBLAS, for `seqlab.kernels.gemm_split`; None unless that
    OpenBLAS is a 64-bit-integer (ILP64) build, as NumPy's wheels ship, that exports it and its setter."""
    for lib in _opened_blas_libraries():
        sgemm = _exported(lib, _OPENBLAS_SGEMM64)
        if sgemm is None:
            continue
        config = _exported(lib, _OPENBLAS_CONFIG)
        if config is None or _exported(lib, _BLAS_SET) is None:
            return None
        config.restype = ctypes.c_char_p
        if "USE64BITINT" not in (config() or b"").decode(errors="replace").split():
            return None
        return ctypes.cast(sgemm, ctypes.c_void_p).value
    return None


@contextlib.contextmanager
def one_blas_thread() -> Iterator[None]:
    """NumPy's BLAS on one thread inside the block (for every thread of the process: OpenBLAS's count is
    global), the count put back after; the block holds the lock `set_blas_threads` takes, so a count set
    meanwhile on another thread waits instead of being undone. Costs ~1 us where the count is above 1."""
    with _COUNT_LOCK:
        get, put = _blas_function(_BLAS_GET), _blas_function(_BLAS_SET)
        if get is None or put is None:
            yield
            return
        get.restype, put.argtypes = ctypes.c_int, [ctypes.c_int]
        before = int(get())
        if before > 1:
            put(1)
        try:
            yield
        finally:
            if before > 1:
                put(before)


def _c_string(names: tuple[str, ...]) -> str | None:
    fn = _blas_function(names)
    if fn is None:
        return None
    fn.restype = ctypes.c_char_p
    got = fn()
    return got.decode(errors="replace").strip() if got else None


def openblas_kernels() -> str | None:
    """'OpenBLAS 0.3.31, SkylakeX kernels' for NumPy's OpenBLAS; None for another BLAS.

    A DYNAMIC_ARCH OpenBLAS picks its kernels for the CPU when it loads, unless
    OPENBLAS_CORETYPE names them; the kernels set the float32 GEMM rate (on an
    AVX-512 AMD EPYC, SkylakeX's ran ~200 GFLOP/s on one core, Haswell's ~114).
    When that variable is set (and the build reads it), the text says so.
    """
    core = _c_string(_OPENBLAS_CORE)
    if core is None:
        return None
    config = (_c_string(_OPENBLAS_CONFIG) or "").split()
    version = config[1] if len(config) > 1 and config[0] == "OpenBLAS" else ""
    version = ".".join(version.split(".")[:3])  # 0.3.31.188.0 (scipy-openblas's build number) -> 0.3.31
    text = f"OpenBLAS {version}".rstrip() + f", {core} kernels"
    forced = os.environ.get("OPENBLAS_CORETYPE")
    if forced and "DYNAMIC_ARCH" in config:  # only such a build reads it, when it loads (an unknown name: ignored)
        text += f", under OPENBLAS_CORETYPE={forced}"
    return text


@contextlib.contextmanager
def blas_threads(n: int | None) -> Iterator[int | None]:
    """NumPy's BLAS on `n` threads inside the block, the previous count put back after (None: unchanged).

    Yields the count in force, or None where the BLAS has no known setter. Both changes wait for a batch
    split running on another thread to put its counts back (`seqlab.batch_threads.settled`), as
    `seqlab.set_num_threads` does, so the split's restore cannot undo them.
    """
    from seqlab.batch_threads import settled

    if n is not None and n < 1:
        raise ValueError(f"BLAS threads must be >= 1, got {n}")
    with settled():
        before = get_blas_threads()
        changed = n is not None and before is not None and set_blas_threads(n)
    if not changed:
        yield before
        return
    try:
        yield get_blas_threads()
    finally:
        with settled():
            set_blas_threads(before)
