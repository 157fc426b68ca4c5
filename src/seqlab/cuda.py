"""`seqlab.cuda`: the part of ``torch.cuda`` that device-choosing code calls.

    device = "cuda" if seqlab.cuda.is_available() else "cpu"

seqlab reaches a GPU through CuPy and drives one: ``is_available()`` is True when CuPy is installed and sees a
GPU, and ``device_count()`` is 1 then (0 otherwise). Without a GPU, seeding and synchronizing do nothing, as
torch's do.
"""
from __future__ import annotations

from seqlab import backend, random
from seqlab.amp import GradScaler  # noqa: F401  (torch.cuda.amp.GradScaler)
from seqlab import amp  # noqa: F401  (torch.cuda.amp)


def is_available() -> bool:
    """True when CuPy is installed and sees a GPU."""
    return backend.cuda_available()


def device_count() -> int:
    """GPUs seqlab can use: 1 with CuPy and a GPU, else 0."""
    return 1 if backend.cuda_available() else 0


def current_device() -> int:
    """The GPU in use (always 0); a RuntimeError without one, as torch's."""
    _need_gpu("current_device")
    return 0


def get_device_name(device=None) -> str:
    """The GPU's name, as the driver reports it."""
    _need_gpu("get_device_name")
    xp = backend.get_xp("cuda")
    name = xp.cuda.runtime.getDeviceProperties(0)["name"]
    return name.decode() if isinstance(name, bytes) else str(name)


def is_bf16_supported() -> bool:
    """False: seqlab computes in float32 (NumPy has no bfloat16)."""
    return False


def manual_seed(seed: int) -> None:
    """Reseed the GPU's random stream (dropout and random tensors made there); the host's is left alone."""
    random.manual_seed_gpu(seed)


manual_seed_all = manual_seed


def synchronize(device=None) -> None:
    """Wait until the GPU has finished its queued work; nothing to wait for without one."""
    if backend.cuda_available():
        backend.synchronize("cuda")


def empty_cache() -> None:
    """Hand CuPy's cached, unused GPU blocks back to the driver (torch's caching allocator does the same)."""
    if backend.cuda_available():
        backend.get_xp("cuda").get_default_memory_pool().free_all_blocks()


def _need_gpu(what: str) -> None:
    if not backend.cuda_available():
        raise RuntimeError(f"seqlab.cuda.{what}(): no GPU (seqlab needs CuPy and a GPU it can use; "
                           f"seqlab.cuda.is_available() says which)")
