"""Keep freed array memory in the process between steps (glibc malloc settings).

Why: a step allocates hundreds of short-lived arrays (activations, saved
tensors, gradients) and frees most of them during backward. By default glibc
hands a freed heap top of more than ~2x the largest recent block back to the
OS, so the next step gets fresh pages and faults every one of them in again:
5,000-10,000 page faults per gpt-train step, 10-25% of its CPU time spent in
the kernel zeroing pages. With a high trim threshold the freed memory stays
in malloc's free lists and the next step reuses it (PyTorch's GPU caching
allocator keeps memory for the same reason).

The cost: the process keeps its peak heap until it exits (as any caching
allocator). Blocks above `mmap_threshold` still come straight from the OS and
go back when freed. Only glibc (Linux) has `mallopt`; elsewhere nothing changes.
"""
from __future__ import annotations

import ctypes

_M_TRIM_THRESHOLD = -1  # <malloc.h>: free heap top above this many bytes goes back to the OS
_M_MMAP_THRESHOLD = -3  # <malloc.h>: blocks of at least this many bytes get their own mmap

_applied = False


def retain_freed_memory(mmap_threshold: int = 32 << 20, trim_threshold: int = 1 << 30) -> bool:
    """Ask glibc to keep up to `trim_threshold` bytes of freed heap for reuse, and to serve blocks below
    `mmap_threshold` (32 MiB, glibc's own ceiling for it) from that heap. Returns True if it took effect.

    Setting either value turns off glibc's dynamic adjustment of both, so both are set.
    """
    global _applied
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):  # not glibc (macOS, musl, Windows)
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    ok = mallopt(_M_MMAP_THRESHOLD, int(mmap_threshold)) == 1 and mallopt(_M_TRIM_THRESHOLD, int(trim_threshold)) == 1
    _applied = _applied or ok
    return ok


def retain_freed_memory_once() -> None:
    """`retain_freed_memory()` with the defaults, the first time it is called in the process (the
    engine calls this on every backward, `nn.Module` on every forward; after the first it is one flag
    check). Inference gains as training does: a MiniLM forward over 32 sentences faulted in ~10,000
    fresh pages a step without it (docs/results.md, 2026-12-03)."""
    global _applied
    if not _applied:
        _applied = True  # also on failure: a platform without mallopt is not asked again
        retain_freed_memory()
