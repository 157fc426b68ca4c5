"""The safetensors format, read and written with NumPy, every size checked before use.

A safetensors file is::

    8 bytes   N, the header size (little-endian unsigned 64-bit)
    N bytes   JSON: {"name": {"dtype": "F32", "shape": [2, 3], "data_offsets": [begin, end]}, ...,
                     "__metadata__": {"format": "pt"}}
    rest      the tensors' bytes, little-endian, row-major; offsets count from the start of this part

Nothing is trusted: a header size larger than the file, offsets outside the
data, a byte count that disagrees with dtype × shape, or overlapping tensors
raise `CheckpointError` naming the file and the tensor, before any array is
built. No pickle, no code execution.
"""
from __future__ import annotations

import json
import math
import os
import struct
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from seqlab import backend
from seqlab.autograd.tensor import Tensor
from seqlab.errors import CheckpointError

MAX_HEADER_BYTES = 100 * 1024 * 1024  # the reference implementation's limit
MAX_DIMS = 32                          # NumPy's limit on an array's dimensions

# safetensors dtype name -> NumPy dtype (BF16 is read as raw uint16, then widened)
DTYPES: dict[str, np.dtype] = {
    "F64": np.dtype("<f8"), "F32": np.dtype("<f4"), "F16": np.dtype("<f2"), "BF16": np.dtype("<u2"),
    "I64": np.dtype("<i8"), "I32": np.dtype("<i4"), "I16": np.dtype("<i2"), "I8": np.dtype("i1"),
    "U64": np.dtype("<u8"), "U32": np.dtype("<u4"), "U16": np.dtype("<u2"), "U8": np.dtype("u1"),
    "BOOL": np.dtype("?"),
}
_NAMES = {np.dtype(np.float64): "F64", np.dtype(np.float32): "F32", np.dtype(np.float16): "F16",
          np.dtype(np.int64): "I64", np.dtype(np.int32): "I32", np.dtype(np.int16): "I16",
          np.dtype(np.int8): "I8", np.dtype(np.uint8): "U8", np.dtype(np.uint16): "U16",
          np.dtype(np.uint32): "U32", np.dtype(np.uint64): "U64", np.dtype(bool): "BOOL"}


def read_header(path: str | os.PathLike) -> tuple[dict[str, dict[str, Any]], dict[str, str], int]:
    """(entries, metadata, data_start) of a safetensors file, fully validated.

    entries: name -> {"dtype", "shape", "data_offsets"}; data_start: the byte
    where the tensor data begins (8 + header size).
    """
    path = Path(path)
    try:
        size = path.stat().st_size
        with open(path, "rb") as f:
            head = f.read(8)
            if len(head) < 8:
                raise CheckpointError(f"{path}: truncated safetensors file ({size} bytes, the 8-byte header "
                                      f"size alone is missing)")
            (n,) = struct.unpack("<Q", head)
            if n > size - 8:
                raise CheckpointError(f"{path}: header size {n} bytes exceeds the file ({size} bytes): "
                                      f"truncated or not a safetensors file")
            if n > MAX_HEADER_BYTES:
                raise CheckpointError(f"{path}: header size {n} bytes exceeds the limit of {MAX_HEADER_BYTES}")
            raw = f.read(n)
    except OSError as e:
        raise CheckpointError(f"cannot read {path}: {e.strerror or e}") from None
    try:
        header = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise CheckpointError(f"{path}: the safetensors header is not valid JSON ({e})") from None
    except RecursionError:  # "[[[[..." nested deeper than the parser goes
        raise CheckpointError(f"{path}: the safetensors header is nested too deeply to be a header") from None
    if not isinstance(header, dict):
        raise CheckpointError(f"{path}: the safetensors header must be a JSON object, got {type(header).__name__}")
    metadata = header.pop("__metadata__", None) or {}
    if not isinstance(metadata, dict):
        raise CheckpointError(f"{path}: __metadata__ must be an object of strings")
    data_start = 8 + n
    _check_entries(path, header, size - data_start)
    return header, metadata, data_start


def _check_entries(path: Path, header: dict, data_len: int) -> None:
    spans = []
    for name, e in header.items():
        if not isinstance(e, dict) or not {"dtype", "shape", "data_offsets"} <= e.keys():
            raise CheckpointError(f"{path}: tensor {name!r} needs dtype, shape and data_offsets, got {e!r}")
        if e["dtype"] not in DTYPES:
            raise CheckpointError(f"{path}: tensor {name!r} has unknown dtype {e['dtype']!r}")
        shape, offs = e["shape"], e["data_offsets"]
        # `type(x) is int`: JSON true/false are bools, which isinstance(x, int) would let through
        if (not isinstance(shape, list) or len(shape) > MAX_DIMS
                or not all(type(s) is int and 0 <= s < 2**63 for s in shape)):
            raise CheckpointError(f"{path}: tensor {name!r} has an invalid shape {shape!r}")
        if (not isinstance(offs, list) or len(offs) != 2 or not all(type(o) is int for o in offs)
                or not 0 <= offs[0] <= offs[1]):
            raise CheckpointError(f"{path}: tensor {name!r} has invalid data_offsets {offs!r}")
        if offs[1] > data_len:
            raise CheckpointError(f"{path}: tensor {name!r} ends at byte {offs[1]} of the data but the file "
                                  f"holds only {data_len} data bytes (truncated file?)")
        want = math.prod(shape) * DTYPES[e["dtype"]].itemsize  # Python ints: no int64 overflow
        if offs[1] - offs[0] != want:
            raise CheckpointError(f"{path}: tensor {name!r} ({e['dtype']}, shape {tuple(shape)}) needs {want} "
                                  f"bytes but its data_offsets {offs} span {offs[1] - offs[0]}")
        spans.append((offs[0], offs[1], name))
    spans.sort()
    for (b0, e0, n0), (b1, e1, n1) in zip(spans, spans[1:]):
        if b1 < e0:
            raise CheckpointError(f"{path}: tensors {n0!r} [{b0}, {e0}) and {n1!r} [{b1}, {e1}) overlap")


def load_file(path: str | os.PathLike) -> dict[str, np.ndarray]:
    """All tensors of a safetensors file as NumPy arrays (BF16 widened to float32)."""
    header, _, start = read_header(path)
    out: dict[str, np.ndarray] = {}
    with open(path, "rb") as f:
        for name, e in header.items():
            b, end = e["data_offsets"]
            f.seek(start + b)
            buf = f.read(end - b)
            if len(buf) != end - b:  # the file shrank while we read it
                raise CheckpointError(f"{path}: tensor {name!r} is truncated")
            try:
                arr = np.frombuffer(buf, dtype=DTYPES[e["dtype"]]).reshape(e["shape"])
            except ValueError as err:  # e.g. shape [0, 2**62]: no bytes, but too big for NumPy
                raise CheckpointError(f"{path}: tensor {name!r} of shape {tuple(e['shape'])}: {err}") from None
            if e["dtype"] == "BF16":  # bfloat16 is the top half of a float32
                arr = (arr.astype(np.uint32) << 16).view(np.float32)
            out[name] = arr.astype(arr.dtype.newbyteorder("="), copy=True)
    return out


def save_file(tensors: Mapping[str, Any], path: str | os.PathLike, metadata: Mapping[str, str] | None = None) -> None:
    """Write arrays (NumPy, CuPy, seqlab or torch tensors) as a safetensors file, atomically."""
    path = Path(path)
    arrays = {}
    bad = [name for name in tensors if not isinstance(name, str)]
    if bad:
        raise TypeError(f"safetensors names are strings; got {bad[0]!r} ({type(bad[0]).__name__})")
    for name in sorted(tensors):
        v = backend.from_torch(tensors[name])
        if isinstance(v, Tensor):
            v = v.data
        arr = np.asarray(backend.to_numpy(v), order="C")  # (ascontiguousarray would make a 0-d array 1-d)
        if arr.dtype not in _NAMES:
            raise ValueError(f"tensor {name!r} has dtype {arr.dtype}, which safetensors cannot store here")
        arrays[name] = arr.astype(arr.dtype.newbyteorder("<"), copy=False)
    header: dict[str, Any] = {"__metadata__": dict(metadata or {"format": "pt"})}
    offset = 0
    for name, arr in arrays.items():
        header[name] = {"dtype": _NAMES[arr.dtype.newbyteorder("=")], "shape": list(arr.shape),
                        "data_offsets": [offset, offset + arr.nbytes]}
        offset += arr.nbytes
    raw = json.dumps(header, separators=(",", ":")).encode("utf-8")
    raw += b" " * (-len(raw) % 8)  # pad so the data starts 8-byte aligned, as the reference writer does
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(raw)))
        f.write(raw)
        for arr in arrays.values():
            f.write(arr.tobytes())
    os.replace(tmp, path)
