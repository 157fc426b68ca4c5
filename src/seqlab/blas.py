"""NumPy's BLAS thread count, read and set for a block (`blas_threads`), without threadpoolctl.

Small models gain little from a second BLAS thread, and on a busy machine
OpenBLAS's threads wait on each other (2 busy cores: 240 SST-2 steps in 20 s
on 1 thread, 64-90 steps in 30 s on 2; a 160-character GPT sample 33 s on 2
threads, under 1 s on 1). The setter is found with ctypes, as in
seqlab.bench.harness.
"""
from __future__ import annotations

import contextlib
import ctypes
import re
from pathlib import Path
from typing import Any, Iterator

import numpy as np

_BLAS_GET = ("scipy_openblas_get_num_threads64_", "openblas_get_num_threads64_", "openblas_get_num_threads",
             "scipy_openblas_get_num_threads", "MKL_Get_Max_Threads", "bli_thread_get_num_threads")
_BLAS_SET = ("scipy_openblas_set_num_threads64_", "openblas_set_num_threads64_", "openblas_set_num_threads",
             "scipy_openblas_set_num_threads", "MKL_Set_Num_Threads", "bli_thread_set_num_threads")


def _blas_function(names: tuple[str, ...]) -> Any:
    """The first of `names` exported by a BLAS library loaded in this process (Linux), else None."""
    np.ones((2, 2)) @ np.ones((2, 2))  # NumPy's BLAS is loaded by now
    try:
        maps = Path("/proc/self/maps").read_text()
    except OSError:
        return None
    libs = sorted({ln.split()[-1] for ln in maps.splitlines()
                   if re.search(r"(openblas|mkl_rt|libblis)[^/]*\.so", ln.split()[-1] if ln.split() else "")})
    for path in libs:
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        fn = next((getattr(lib, n) for n in names if hasattr(lib, n)), None)
        if fn is not None:
            return fn
    return None


@contextlib.contextmanager
def blas_threads(n: int | None) -> Iterator[int | None]:
    """NumPy's BLAS on `n` threads inside the block, the previous count put back after (None: unchanged).

    Yields the count in force, or None where the BLAS has no known setter.
    """
    if n is not None and n < 1:
        raise ValueError(f"BLAS threads must be >= 1, got {n}")
    get, put = _blas_function(_BLAS_GET), _blas_function(_BLAS_SET)
    if n is None or get is None or put is None:
        if get is not None:
            get.restype = ctypes.c_int
        yield None if get is None else int(get())
        return
    get.restype, put.argtypes = ctypes.c_int, [ctypes.c_int]
    before = int(get())
    put(int(n))
    try:
        yield int(get())
    finally:
        put(before)
