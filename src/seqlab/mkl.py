"""Matrix products on the CPU: NumPy's BLAS, or Intel MKL's when it is installed.

PyTorch's CPU build multiplies float32 matrices with MKL; NumPy's wheels ship
OpenBLAS, which on some CPUs is markedly slower at the sizes these models use
(on the Xeon in docs/results.md, 1.1-1.5x at a 768 x 128 x 384 product). With
the `mkl` package installed (``pip install 'seqlab[mkl]'``) seqlab calls
MKL's ``cblas_sgemm`` through ctypes for float32 products, so the two engines
compare on the same BLAS, and exact GELU's Φ(x) (and its backward's
exponential) through MKL's vector math; everything else stays NumPy, and so
do products under `MIN_MACS` multiply-adds and vectors under `MIN_VML`
values, where NumPy's cheaper call wins.

``SEQLAB_BLAS`` chooses: ``auto`` (the default: MKL when found and the CPU
is Intel's, else NumPy), ``numpy`` (never MKL) or ``mkl`` (MKL or an error).
:func:`library` says which is in use. The results are the same products up
to float32 rounding (the two libraries sum in different orders). ``auto``
leaves MKL out on other vendors' CPUs because there it is the slower of the
two: on the AMD EPYC (AVX-512) in docs/results.md MKL 2026.2's sgemm ran at
~95 GFLOP/s on one core and NumPy's OpenBLAS at ~114, and every model
benchmark took 10-15% longer on MKL. Its vector math goes with it (GELU's
Φ without Numba then takes the NumPy formula; with Numba it never uses MKL).

`matmul(a, b)` is a drop-in for ``np.matmul`` on NumPy arrays: it takes the
MKL path for float32 operands of two or more dims whose matrices have one
unit stride (plain or transposed views, as `x.T` and `k.swapaxes(-1, -2)`
are), and hands everything else to NumPy. `alpha` scales the product inside
the GEMM (attention's 1/sqrt(d) costs no extra pass over the scores).
"""
from __future__ import annotations

import ctypes
import ctypes.util
import functools
import math
import os
import sys
from pathlib import Path

import numpy as np

from seqlab import kernels
from seqlab.backend import xp_of
from seqlab.blas import gemm_layout as _layout
from seqlab.errors import ConfigError

__all__ = ["cdf_norm", "describe", "exp", "library", "matmul", "mkl_path", "set_mkl_threads", "use"]

_ROW_MAJOR, _NO_TRANS, _TRANS = 101, 111, 112
_F4 = 4  # bytes of a float32
_CHOICES = ("auto", "numpy", "mkl")
_FLOAT32 = np.dtype(np.float32)
# below this many multiply-adds NumPy's product is as fast and its call cheaper (measured: docs/results.md)
MIN_MACS = 1 << 20
_threads = 1  # MKL's thread count, as last set by seqlab (read by matmul's choice for batches of small products)
# False: every product under MIN_MACS stays with NumPy, batched or not (as before 2026-12-03; for A/B runs:
# benchmarks/engine_ab.py --switch small-batches, benchmarks/attention_products.py --small-batches numpy)
BATCH_SMALL_PRODUCTS = True
_VML = ("vmsCdfNorm", "vmsExp")  # MKL's vector math functions seqlab calls
MIN_VML = 1 << 13  # below this many values a VML call costs more than it saves (~20 us a call at 512)
# VML_LA | VML_ERRMODE_IGNORE: "low accuracy" is still within 4 ulp (Φ: 6e-8 absolute, as the tests hold),
# 1.15x faster than the default high-accuracy mode; no errno or callbacks for inf/NaN
_VML_MODE = 0x1 | 0x100
_NEEDED = ("cblas_sgemm", "cblas_sgemm_batch", *_VML, "MKL_Set_Interface_Layer", "MKL_Set_Num_Threads",
           "MKL_Get_Max_Threads", "MKL_Get_Version_String")


_chosen: str | None = None  # set by use(); None: the environment's SEQLAB_BLAS


def _choice() -> str:
    choice = _chosen or os.environ.get("SEQLAB_BLAS", "auto").strip().lower() or "auto"
    if choice not in _CHOICES:
        raise ConfigError(f"SEQLAB_BLAS={choice!r}: expected one of {', '.join(_CHOICES)}")
    return choice


def use(choice: str | None) -> str:
    """Switch this process to 'auto', 'numpy' or 'mkl' (None: back to SEQLAB_BLAS); returns `library()`.

    For comparing the two in one process (tests, benchmarks); products
    already computed are not redone.
    """
    global _chosen
    if choice is not None and choice not in _CHOICES:
        raise ValueError(f"unknown BLAS choice {choice!r}: expected one of {', '.join(_CHOICES)}")
    _chosen = choice
    _mkl.cache_clear()
    return library()


def mkl_path() -> str | None:
    """Where MKL's single dynamic library (mkl_rt) is: this environment's lib folder first, else the system's."""
    for folder in (Path(sys.prefix) / "lib", Path(sys.base_prefix) / "lib"):
        found = sorted(folder.glob("libmkl_rt.so*")) if folder.is_dir() else []
        if found:
            return str(found[0])
    return ctypes.util.find_library("mkl_rt")


@functools.lru_cache(maxsize=None)
def cpu_vendor() -> str | None:
    """The CPU's vendor as Linux reports it ('GenuineIntel', 'AuthenticAMD', ...); None where unknown."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith("vendor_id"):
                    return line.partition(":")[2].strip() or None
    except OSError:
        pass
    return None


def _intel_or_unknown() -> bool:
    """Where ``auto`` may use MKL: an Intel CPU, or one whose vendor cannot be read."""
    return cpu_vendor() in (None, "GenuineIntel")


@functools.lru_cache(maxsize=None)
def _mkl():
    """MKL's library with the entry points seqlab calls typed, or None (SEQLAB_BLAS=numpy, or not installed).

    32-bit integers (MKL's LP64 interface, set here whatever MKL_INTERFACE_LAYER says) and MKL's thread
    count set to NumPy's BLAS's.
    """
    choice = _choice()
    if choice == "numpy" or (choice == "auto" and not _intel_or_unknown()):
        return None
    path = mkl_path()
    lib = None
    if path is not None:
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            lib = None
    missing = [name for name in _NEEDED if lib is not None and not hasattr(lib, name)]
    if lib is None or missing:
        if choice == "mkl":
            found = f"{path} lacks {', '.join(missing)} (MKL older than 2020?)" if missing else "was not found"
            raise ConfigError(f"SEQLAB_BLAS=mkl but MKL's library (libmkl_rt) {found}: "
                               "pip install 'seqlab[mkl]', or unset SEQLAB_BLAS")
        return None
    i, f, p = ctypes.c_int, ctypes.c_float, ctypes.c_void_p
    lib.MKL_Set_Interface_Layer.argtypes = [i]
    lib.MKL_Set_Interface_Layer(0)  # MKL_INTERFACE_LP64: every MKL_INT below is a C int
    lib.cblas_sgemm.restype = None
    lib.cblas_sgemm.argtypes = [i, i, i, i, i, i, f, p, i, p, i, f, p, i]
    lib.cblas_sgemm_batch.restype = None  # every pointer argument, one group: see matmul
    lib.cblas_sgemm_batch.argtypes = [i, p, p, p, p, p, p, p, p, p, p, p, p, p, i, p]
    for name in _VML:  # y = f(x) over n floats (in place allowed), in the accuracy/error mode given
        getattr(lib, name).restype = None
        getattr(lib, name).argtypes = [i, p, p, ctypes.c_int64]
    lib.MKL_Set_Num_Threads.argtypes = [i]
    lib.MKL_Get_Max_Threads.restype = i
    from seqlab.blas import get_blas_threads  # NumPy's BLAS count (OPENBLAS_NUM_THREADS) applies to MKL too

    global _threads
    threads = get_blas_threads()
    if threads:
        lib.MKL_Set_Num_Threads(threads)
    _threads = lib.MKL_Get_Max_Threads()
    return lib


def library() -> str:
    """'mkl' when float32 products go to MKL, else 'numpy'."""
    return "mkl" if _mkl() is not None else "numpy"


def describe() -> str:
    """One line for reports: 'MKL 2026.0.2 (libmkl_rt.so.3)' or "NumPy's BLAS" (saying why when MKL is left out)."""
    lib = _mkl()
    if lib is None:
        if _choice() == "auto" and not _intel_or_unknown() and mkl_path() is not None:
            return f"NumPy's BLAS (MKL is installed but slower on {cpu_vendor()}; SEQLAB_BLAS=mkl uses it)"
        return "NumPy's BLAS"
    buf = ctypes.create_string_buffer(256)
    lib.MKL_Get_Version_String(buf, len(buf))
    words = buf.value.decode(errors="replace").split()
    version = next((w.split("-")[0] for w in words if w[:1].isdigit()), "")  # "2026.2-Product" -> 2026.2
    return f"MKL {version} ({Path(mkl_path() or 'mkl_rt').name})".replace("MKL  (", "MKL (")


def set_mkl_threads(n: int) -> bool:
    """Put MKL on `n` threads when seqlab uses it; False (nothing changes) when it does not."""
    lib = _mkl()
    if lib is None:
        return False
    global _threads
    lib.MKL_Set_Num_Threads(int(n))
    _threads = int(n)
    return True


@functools.lru_cache(maxsize=256)
def _offsets(shape: tuple, strides: tuple) -> np.ndarray:
    """Byte offsets of every matrix of a batch (C order over `shape`), as intp; read-only and cached (a
    model asks for the same few again and again: on the Xeon in docs/results.md, making them anew took
    ~30 µs of q·kᵀ's ~220 at gpt-train's attention shape, 12·4 heads of 64 × 64 × 32)."""
    off = np.zeros((), dtype=np.intp)
    for n, st in zip(shape, strides):
        off = (off[..., None] + np.arange(n, dtype=np.intp) * st)
    off = off.reshape(-1)
    off.flags.writeable = False
    return off


def matmul(a, b, out=None, alpha: float = 1.0):
    """alpha · (a @ b), as ``np.matmul`` (same broadcasting); MKL for float32 NumPy operands when in use.

    `out`, when given, must have the result's shape; it is returned. Products
    under `MIN_MACS` multiply-adds stay with NumPy, whose call costs less.
    """
    lib = _mkl()
    if lib is None:  # NumPy's BLAS: on several threads, a large 2-D product shared out by the kernels' pool
        split = kernels.gemm_split(a, b, out, alpha)
        return _numpy(a, b, out, alpha) if split is None else split
    if (type(a) is not np.ndarray or type(b) is not np.ndarray
            or a.dtype != _FLOAT32 or b.dtype != _FLOAT32 or a.ndim < 2 or b.ndim < 2):
        return _numpy(a, b, out, alpha)
    ash, bsh = a.shape, b.shape
    m, k, n = ash[-2], ash[-1], bsh[-1]
    if bsh[-2] != k or m * k * n == 0:  # (a mismatch: NumPy's error)
        return _numpy(a, b, out, alpha)
    batched = len(ash) > 2 or len(bsh) > 2
    if m * k * n < MIN_MACS and not batched:
        return _numpy(a, b, out, alpha)
    la, lb = _layout(a, m, k), _layout(b, k, n)
    if la is None or lb is None:
        return _numpy(a, b, out, alpha)
    batch = ash[:-2] if bsh[:-2] == ash[:-2] or len(bsh) == 2 else np.broadcast_shapes(ash[:-2], bsh[:-2])
    if m * k * n < MIN_MACS and not _batch_to_mkl(math.prod(batch) * m * k * n, la[0], lb[0]):
        return _numpy(a, b, out, alpha)
    out_given = out is not None
    if out is None:
        out = np.empty(batch + (m, n), dtype=_FLOAT32)
    elif (type(out) is not np.ndarray or out.shape != batch + (m, n) or out.dtype != _FLOAT32
          or out.strides[-1] != _F4 or out.strides[-2] % _F4 or out.strides[-2] < _F4 * n
          or not out.flags.writeable):
        return _numpy(a, b, out, alpha)
    if out_given and (np.may_share_memory(out, a) or np.may_share_memory(out, b)):
        return _numpy(a, b, out, alpha)  # out overlaps an operand: NumPy buffers it, BLAS would write over it
    ldc = out.strides[-2] // _F4
    ta, lda = la
    tb, ldb = lb
    if not batch:
        lib.cblas_sgemm(_ROW_MAJOR, ta, tb, m, n, k, alpha, a.ctypes.data, lda, b.ctypes.data, ldb,
                        0.0, out.ctypes.data, ldc)
        return out
    av = a if ash[:-2] == batch else np.broadcast_to(a, batch + ash[-2:])
    bv = b if bsh[:-2] == batch else np.broadcast_to(b, batch + bsh[-2:])
    count = math.prod(batch)
    ints = np.array([ta, tb, m, n, k, lda, ldb, ldc, count], dtype=np.int32)
    scalars = np.array([alpha, 0.0], dtype=_FLOAT32)
    ptrs = [arr.ctypes.data + _offsets(batch, arr.strides[:-2]) for arr in (av, bv, out)]  # new arrays
    iptr, fptr = ints.ctypes.data, scalars.ctypes.data
    lib.cblas_sgemm_batch(_ROW_MAJOR, iptr, iptr + 4, iptr + 8, iptr + 12, iptr + 16, fptr,
                          ptrs[0].ctypes.data, iptr + 20, ptrs[1].ctypes.data, iptr + 24, fptr + 4,
                          ptrs[2].ctypes.data, iptr + 28, 1, iptr + 32)
    return out


def matmul_pair(a1, b1, a2, b2):
    """(a1 @ b1, a2 @ b2) as `matmul` makes each; two large 2-D float32 products beside NumPy's BLAS on an even
    number of threads go to the kernels' pool in one hand-off (`seqlab.kernels.gemm_pair`)."""
    if _mkl() is None:
        both = kernels.gemm_pair(a1, b1, a2, b2)
        if both is not None:
            return both
    return matmul(a1, b1), matmul(a2, b2)


def _batch_to_mkl(macs: int, ta: int, tb: int) -> bool:
    """Whether a batch of small products (each under `MIN_MACS`), `macs` in all, goes to MKL's batched GEMM.

    NumPy runs a batch as one BLAS call per matrix, one after another; MKL's
    ``cblas_sgemm_batch`` takes the whole batch in one call and shares it among
    its threads. Measured on the Xeon in docs/results.md at attention's shapes
    (GPT's 12·4 heads of 64 × 64 × 32, MiniLM's 32·12 of 44 × 44 × 32,
    benchmarks/attention_products.py): on two threads MKL's batch took 0.3-0.9x
    NumPy's time for eleven of the twelve products (dS·k at GPT's shape: 1.05x);
    on one thread 0.6-0.9x for the products with the second matrix transposed
    (q·kᵀ, g·vᵀ, which NumPy's OpenBLAS runs on a slow path), while for the
    others it was the slower one.
    """
    if macs < MIN_MACS or not BATCH_SMALL_PRODUCTS:
        return False
    return _threads > 1 or (ta == _NO_TRANS and tb == _TRANS)


def _numpy(a, b, out, alpha):
    """NumPy's product (the fallback), scaled by alpha in place."""
    if out is None:
        out = a @ b
    else:
        xp_of(a).matmul(a, b, out=out)
    if alpha != 1.0:
        out *= out.dtype.type(alpha)
    return out


def _vml(name: str, x, out) -> bool:
    """out = f(x) by MKL's vector math when in use and both are C-contiguous float32 NumPy arrays of one size."""
    if type(x) is not np.ndarray or x.size < MIN_VML:
        return False
    lib = _mkl()
    if (lib is None or type(out) is not np.ndarray or x.dtype != _FLOAT32
            or out.dtype != _FLOAT32 or x.size != out.size or not x.flags.c_contiguous
            or not out.flags.c_contiguous or not out.flags.writeable):
        return False
    getattr(lib, name)(x.size, x.ctypes.data, out.ctypes.data, _VML_MODE)
    return True


def cdf_norm(x, out) -> bool:
    """out = Φ(x), the standard normal CDF, by MKL (vmsCdfNorm, within 4 ulp); False, untouched, when MKL can't."""
    return _vml("vmsCdfNorm", x, out)


def exp(x, out) -> bool:
    """out = e^x by MKL (vmsExp); False, untouched, when MKL can't. `out` may be `x`."""
    return _vml("vmsExp", x, out)
