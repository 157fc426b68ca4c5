"""The array module: NumPy by default, CuPy for GPU runs.

Every array operation in seqlab goes through the module returned by
:func:`xp_of` (for an existing array) or :func:`get_xp` (for the active
device), so CuPy can stand in for NumPy with the same code.
"""
from __future__ import annotations

import contextlib
from typing import Any

import numpy as np

_DEFAULT_DTYPE = np.float32
_DEVICE = "cpu"

try:  # CuPy is optional: without it everything runs on NumPy.
    import cupy as _cupy  # type: ignore

    try:
        _CUDA_OK = _cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:  # no driver or no device
        _CUDA_OK = False
except ImportError:  # pragma: no cover - depends on the machine
    _cupy = None
    _CUDA_OK = False


def cuda_available() -> bool:
    """True when CuPy is installed and sees a GPU."""
    return _CUDA_OK


def describe() -> str | None:
    """"CuPy 13.3.0 on 1 GPU", "CuPy 13.3.0, no GPU it can use", or None without CuPy (`seqlab --version`)."""
    if _cupy is None:
        return None
    version = getattr(_cupy, "__version__", "?")
    if not _CUDA_OK:
        return f"CuPy {version}, no GPU it can use"
    n = _cupy.cuda.runtime.getDeviceCount()
    return f"CuPy {version} on {n} GPU{'s' if n != 1 else ''}"


def device_name(device: Any) -> str | None:
    """"cpu" or "cuda" for any way torch code names a device: a string ("cuda:0"), `seqlab.device`,
    `torch.device`, or an int (a GPU index, as torch); None stays None.

    seqlab drives one GPU, so an index other than 0 is a ValueError rather than a silent cuda:0."""
    if device is None:
        return None
    if isinstance(device, bool):
        raise TypeError(f"a device is a string, seqlab.device or int, got {device!r}")
    if isinstance(device, int):
        device = f"cuda:{device}"
    elif not isinstance(device, str):
        kind, index = getattr(device, "type", None), getattr(device, "index", None)
        if not isinstance(kind, str):
            raise TypeError(f"a device is a string, seqlab.device or int, got {type(device).__name__}")
        device = kind if index is None else f"{kind}:{index}"
    kind, _, index = device.partition(":")
    if kind not in ("cpu", "cuda"):
        raise ValueError(f"unknown device {device!r}; expected 'cpu' or 'cuda'")
    if index and index != "0":
        raise ValueError(f"device {str(device)!r}: seqlab uses one GPU, 'cuda' (or 'cuda:0')")
    return kind


def get_xp(device: Any = None):
    """The array module for `device` ("cpu" or "cuda"; default: the active one)."""
    device = device_name(device) or _DEVICE
    if device == "cpu":
        return np
    if device.startswith("cuda"):
        if not _CUDA_OK:
            raise RuntimeError("device 'cuda' requested but CuPy with a working GPU is not available "
                               "(pip install cupy-cuda12x, or cupy-cuda13x for CUDA 13)")
        return _cupy
    raise ValueError(f"unknown device {device!r}; expected 'cpu' or 'cuda'")


def xp_of(array: Any):
    """The array module that owns `array` (NumPy for NumPy arrays and scalars)."""
    if _cupy is not None and isinstance(array, _cupy.ndarray):
        return _cupy
    return np


def device_of(array: Any) -> str:
    return "cuda" if xp_of(array) is not np else "cpu"


def device_of_module(xp) -> str:
    """The device whose arrays the array module `xp` makes: "cpu" for NumPy, else "cuda"."""
    return "cpu" if xp is np else "cuda"


def to_device(array: Any, device: Any):
    """Move an array to `device` (a no-op when it is already there)."""
    device = device_name(device)
    if device == "cpu":
        if _cupy is not None and isinstance(array, _cupy.ndarray):
            return _cupy.asnumpy(array)
        return np.asarray(array)
    return get_xp(device).asarray(array)


def from_torch(x: Any) -> Any:
    """A torch tensor's values as a NumPy array (detached, copied to the host); anything else as it is.

    For the places that take torch's tensors beside arrays (masks, state dicts, optimizer states)."""
    if type(x).__module__.split(".")[0] == "torch" and hasattr(x, "detach"):
        return x.detach().cpu().numpy()
    return x


def from_torch_name(x: Any) -> Any:
    """A torch device as seqlab's name for it ("cpu", "cuda") and a torch dtype as NumPy's; anything else as
    it is."""
    if type(x).__module__.split(".")[0] != "torch":
        return x
    if type(x).__name__ == "device":
        return device_name(x)
    name = str(x).removeprefix("torch.")
    try:
        return np.dtype(name)
    except TypeError:
        raise TypeError(f"torch's {name} has no NumPy dtype; seqlab computes in float32 or float64") from None


def to_args(args: tuple, device: Any = None, dtype: Any = None) -> tuple[str | None, Any]:
    """(device name, dtype) from the ways torch's `.to(...)` is called: a device, a dtype, both, or a tensor
    (its device and dtype), positionally or as keywords; None for what is not asked."""
    if len(args) > 2:
        raise TypeError(f"to() takes at most 2 positional arguments (device, dtype), got {len(args)}")
    for arg in args:
        if hasattr(arg, "dtype") and hasattr(arg, "device") and not isinstance(arg, type):  # a tensor
            device, dtype = arg.device, arg.dtype
        elif isinstance(arg, (str, int)) and not isinstance(arg, bool) or hasattr(arg, "index"):
            device = arg  # "cuda", 0, seqlab.device, torch.device
        elif arg is not None:
            dtype = arg
    dtype = from_torch_name(dtype)
    if dtype is not None:
        np.dtype(dtype)  # a TypeError for what is not a dtype
    return device_name(from_torch_name(device)), dtype


def broadcasts_to(shape: tuple, target: tuple) -> bool:
    """Whether an array of `shape` broadcasts to `target` itself (not to a larger shape)."""
    try:
        return np.broadcast_shapes(tuple(shape), tuple(target)) == tuple(target)
    except ValueError:
        return False


def to_numpy(array: Any) -> np.ndarray:
    """A NumPy array for `array`, copying from the GPU when needed."""
    return to_device(array, "cpu")


def synchronize(device: str | None = None) -> None:
    """Wait until the GPU has finished every queued kernel (as `torch.cuda.synchronize`); a no-op on "cpu".

    CuPy, like torch, launches kernels asynchronously: a timer read right after
    a call measures the launch, not the work, unless it synchronizes first.
    """
    if (device or _DEVICE) == "cpu":
        return
    get_xp(device or _DEVICE).cuda.Device().synchronize()  # the current device, all its streams


def set_device(device: str) -> None:
    """Make `device` the default for new tensors ("cpu" or "cuda")."""
    global _DEVICE
    get_xp(device)  # validates
    _DEVICE = device_name(device)


def get_device() -> str:
    return _DEVICE


@contextlib.contextmanager
def device(name: str):
    """``with seqlab.backend.device("cuda"): ...`` creates new tensors on `name`."""
    global _DEVICE
    old = _DEVICE
    set_device(name)
    try:
        yield
    finally:
        _DEVICE = old


def default_dtype():
    return _DEFAULT_DTYPE


def set_default_dtype(dtype) -> None:
    """float32 (the default) or float64."""
    global _DEFAULT_DTYPE
    dtype = np.dtype(dtype).type
    if dtype not in (np.float32, np.float64):
        raise ValueError(f"default dtype must be float32 or float64, got {np.dtype(dtype).name}")
    _DEFAULT_DTYPE = dtype


CACHE_BLOCK = 1 << 16  # elements: a few float32 arrays of this size (256 KiB each) stay in L2 together


def flat_blocks(arrays: list, block: int = CACHE_BLOCK) -> list[tuple]:
    """Matching 1-D blocks of at most `block` elements of same-size, C-contiguous `arrays`.

    The blocks are views, so writing into a block writes into its array. An
    element-wise kernel run block by block gives the values of one whole-array
    pass while its many passes touch data still in cache. On CuPy the arrays
    are one block each (the GPU has no such cache to fit).
    """
    flat = [a.reshape(-1) for a in arrays]
    n = flat[0].size
    size = max(1, min(block, n) if xp_of(flat[0]) is np else n)
    return [tuple(f[i:i + size] for f in flat) for i in range(0, n, size)]
