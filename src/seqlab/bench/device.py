"""Where a benchmark runs: "cpu" (NumPy against PyTorch CPU eager) or "cuda" (CuPy against PyTorch CUDA eager).

On "cuda" the benchmark builds both models on the CPU exactly as for "cpu"
(same seed, same weights copied into the torch twin), then moves the seqlab
model with `.to("cuda")` (its arrays become CuPy arrays), the twin with
torch's `.to("cuda")`, and each input to its library's device. Kernels on
both libraries are launched asynchronously, so every timed call ends with a
device synchronize (`seqlab.backend.synchronize`, `torch.cuda.synchronize`):
the clock then measures the work, not the launch.

Both libraries compute in float32 without TF32: torch's default for matrix
products (`torch.backends.cuda.matmul.allow_tf32` False, `fp32_precision`
"ieee") and CuPy's (`CUPY_TF32` unset); `gpu_info` records both settings.
"""
from __future__ import annotations

import os

import numpy as np

DEVICES = ("cpu", "cuda")
CUDA_NAMES = ("encoder-train", "gpt-train")  # the benchmarks with a --device cuda path
NEEDS = ("--device cuda needs CuPy with a GPU and a CUDA build of torch "
         "(pip install cupy-cuda12x, or cupy-cuda13x for CUDA 13)")


def where(size: str, device: str, details: str = "") -> str:
    """The tail of a sized benchmark's description: "" for the default size on the CPU, else
    " (size S[, details][, CuPy vs PyTorch CUDA, float32])"."""
    if size == "default" and device == "cpu":
        return ""
    parts = [f"size {size}"] + ([details] if details else []) + \
        (["CuPy vs PyTorch CUDA, float32"] if device == "cuda" else [])
    return f" ({', '.join(parts)})"


def cuda_problem() -> str | None:
    """Why `--device cuda` cannot run on this machine, as one line (None when it can)."""
    from seqlab import backend

    if not backend.cuda_available():
        try:
            import cupy  # noqa: F401
        except ImportError:
            return f"{NEEDS}: CuPy is not installed"
        return f"{NEEDS}: CuPy sees no GPU"
    import torch

    if not torch.cuda.is_available():
        return f"{NEEDS}: torch {torch.__version__} sees no CUDA device"
    return None


def seqlab_input(arr: np.ndarray, device: str):
    """A NumPy input (ids, mask, labels or floats) on seqlab's `device`: a CuPy array on "cuda"."""
    from seqlab import backend

    return backend.to_device(arr, device)


def torch_input(arr: np.ndarray, device: str):
    """The same input as a torch tensor on torch's `device` (shares memory with `arr` on "cpu")."""
    import torch

    t = torch.from_numpy(arr)
    return t if device == "cpu" else t.to(device)


def syncs(device: str) -> tuple:
    """(seqlab sync, torch sync) to call after each timed call: (None, None) on the CPU."""
    if device == "cpu":
        return None, None
    import torch

    from seqlab import backend

    return (lambda: backend.synchronize(device)), torch.cuda.synchronize


def release() -> None:
    """Hand the GPU memory of earlier benchmarks back (CuPy's pool, torch's cache) and reset torch's
    peak counter, so each benchmark starts from an empty GPU and `memory_peaks` is its own."""
    import gc

    import cupy
    import torch

    gc.collect()
    cupy.get_default_memory_pool().free_all_blocks()
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()


def memory_peaks() -> dict:
    """GPU bytes: what CuPy's memory pool holds (it keeps every block it allocated until `release`,
    so this is seqlab's high-water mark) and torch's peak allocation since `release`."""
    import cupy
    import torch

    return {"seqlab_bytes": int(cupy.get_default_memory_pool().total_bytes()),
            "torch_peak_bytes": int(torch.cuda.max_memory_allocated())}


def gpu_info() -> dict:
    """The GPU, its CUDA versions and the float32 matmul settings of both libraries (for the results).
    A value that cannot be read is "?": describing the machine never stops a benchmark."""
    import cupy
    import torch

    def read(fn):
        try:
            return fn()
        except Exception:  # noqa: BLE001 - an API that moved between versions
            return "?"

    def version(v: int) -> str:
        return f"{v // 1000}.{v % 1000 // 10}"

    def tf32():  # torch >= 2.9 also has matmul.fp32_precision ("tf32" or "ieee")
        m = torch.backends.cuda.matmul
        return str(getattr(m, "fp32_precision", None) or ("tf32" if m.allow_tf32 else "ieee"))

    return {
        "gpu": read(lambda: torch.cuda.get_device_name(0)),
        "gpu_memory_gib": read(lambda: round(torch.cuda.get_device_properties(0).total_memory / 2 ** 30, 1)),
        "torch_cuda": read(lambda: torch.version.cuda),
        "cupy": cupy.__version__,
        "cupy_cuda_runtime": read(lambda: version(cupy.cuda.runtime.runtimeGetVersion())),
        "cuda_driver": read(lambda: version(cupy.cuda.runtime.driverGetVersion())),
        "torch_matmul_fp32": read(tf32),
        "cupy_tf32": os.environ.get("CUPY_TF32", "0"),
    }
