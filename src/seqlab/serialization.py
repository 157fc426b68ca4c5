"""`seqlab.save` and `seqlab.load`: torch.save's everyday use (a checkpoint dict) without pickle.

    seqlab.save({"model": model.state_dict(), "optimizer": opt.state_dict(), "iter_num": 100}, "ckpt.pt")
    ckpt = seqlab.load("ckpt.pt", map_location="cpu")
    model.load_state_dict(ckpt["model"])

The file is a safetensors file: every array and tensor is one entry, named by
its path in the structure ("model/wte.weight"); the structure itself (dicts,
lists, tuples, numbers, strings, None) is JSON in the header's metadata. What
goes in comes back: tensors as Tensors, NumPy arrays as arrays, dict keys
that are ints as ints (an optimizer's state is keyed by parameter index).
Anything else (a Module, a function, an arbitrary object) is refused with a
TypeError: loading such a thing would mean running code from the file.
"""
from __future__ import annotations

import io
import json
import os
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from seqlab import backend
from seqlab.autograd.tensor import Tensor
from seqlab.errors import CheckpointError
from seqlab.hub.safetensors import load_file, read_header, save_file

_KEY = "seqlab.save"  # the metadata entry that holds the structure
_FORMAT = 1


def _put(arrays: dict[str, Any], path: str, array: Any) -> str:
    """Store `array` under `path` (made unique: {"a/b": x, "a": {"b": y}} gives two entries) and return it."""
    name, n = path or "_", 1
    while name in arrays:
        name, n = f"{path}#{n}", n + 1
    arrays[name] = array
    return name


def _encode(obj: Any, path: str, arrays: dict[str, Any]) -> Any:
    """`obj` as JSON, its arrays moved into `arrays` under their path and replaced by a reference."""
    obj = backend.from_torch(obj)
    if isinstance(obj, Tensor):
        return {"__tensor__": _put(arrays, path, obj.data)}
    if isinstance(obj, np.ndarray) or backend.xp_of(obj) is not np:
        return {"__array__": _put(arrays, path, obj)}
    if isinstance(obj, np.generic):  # a NumPy scalar keeps its dtype
        return {"__scalar__": _put(arrays, path, np.asarray(obj))}
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return obj
    if isinstance(obj, dict):
        items = [(k, _encode(v, f"{path}/{k}" if path else str(k), arrays)) for k, v in obj.items()]
        if all(isinstance(k, str) and not k.startswith("__") for k, _ in items):
            return dict(items)
        bad = [k for k, _ in items if not isinstance(k, (str, int)) or isinstance(k, bool)]
        if bad:
            raise TypeError(f"seqlab.save: dict keys must be strings or ints, got {bad[0]!r} "
                            f"({type(bad[0]).__name__}) at {path or 'the top level'!r}")
        return {"__dict__": [[k, v] for k, v in items]}
    if isinstance(obj, (list, tuple)):
        out = [_encode(v, f"{path}/{i}" if path else str(i), arrays) for i, v in enumerate(obj)]
        return {"__tuple__": out} if isinstance(obj, tuple) else out
    hint = " (save module.state_dict() instead)" if hasattr(obj, "state_dict") else ""
    raise TypeError(f"seqlab.save stores tensors, arrays, numbers, strings, None and dicts/lists/tuples of them "
                    f"(no pickle); got {type(obj).__name__} at {path or 'the top level'!r}{hint}")


def _decode(obj: Any, arrays: dict[str, np.ndarray], device: str | None) -> Any:
    if isinstance(obj, list):
        return [_decode(v, arrays, device) for v in obj]
    if not isinstance(obj, dict):
        return obj
    if "__tuple__" in obj:
        return tuple(_decode(v, arrays, device) for v in obj["__tuple__"])
    if "__dict__" in obj:
        return {k: _decode(v, arrays, device) for k, v in obj["__dict__"]}
    for kind in ("__tensor__", "__array__", "__scalar__"):
        if kind in obj:
            name = obj[kind]
            if name not in arrays:
                raise CheckpointError(f"the saved structure refers to {name!r}, which the file does not hold")
            arr = arrays[name]
            if kind == "__scalar__":
                return arr[()]
            if device is not None:
                arr = backend.to_device(arr, device)
            return Tensor(arr) if kind == "__tensor__" else arr
    return {k: _decode(v, arrays, device) for k, v in obj.items()}


def save(obj: Any, f: str | os.PathLike | io.IOBase) -> None:
    """Write `obj` (a state dict, or a checkpoint dict of them and plain values) to the path or binary file `f`."""
    arrays: dict[str, Any] = {}
    structure = _encode(obj, "", arrays)
    metadata = {"format": "pt", _KEY: json.dumps({"version": _FORMAT, "object": structure})}
    if isinstance(f, (str, os.PathLike)):
        save_file(arrays, f, metadata)
        return
    with tempfile.TemporaryDirectory() as tmp:  # a file object: write the file, then its bytes
        path = Path(tmp) / "obj.safetensors"
        save_file(arrays, path, metadata)
        f.write(path.read_bytes())


def _device_name(map_location: Any) -> str | None:
    if map_location is None:
        return None
    if callable(map_location) or isinstance(map_location, dict):
        raise TypeError("seqlab.load: map_location is a device ('cpu', 'cuda', seqlab.device(...)) or None; "
                        "functions and dicts are not supported")
    return backend.device_name(map_location)


def _torch_pickle(head: bytes, size: int) -> bool:
    """Whether a file starting with `head` (9 bytes or fewer) and `size` bytes long is torch.save's output:
    a zip archive ("PK") or a bare pickle (protocol 2+ begins with 0x80), not safetensors. A safetensors
    file begins with its JSON header's length (8 bytes, little-endian), which may itself start with 0x80
    or "PK" (a 0x0380-byte header), then the header's "{": that pair decides first."""
    if len(head) == 9 and head[8:9] == b"{" and 8 + int.from_bytes(head[:8], "little") <= size:
        return False
    return head[:2] == b"PK" or head[:1] == b"\x80"

def load(f: str | os.PathLike | io.IOBase, map_location: Any = None, weights_only: bool | None = None,
         **kwargs: Any) -> Any:
    """Read what `seqlab.save` wrote (or any safetensors file, as a dict of arrays), onto `map_location`.

    `weights_only` is accepted for torch's signature: nothing here is ever unpickled, whatever its value.
    A file written by torch.save is refused with a message saying how to convert it.
    """
    if kwargs:
        raise TypeError(f"seqlab.load got unexpected keyword arguments {sorted(kwargs)} "
                        f"(pickle_module and friends: seqlab never unpickles)")
    device = _device_name(map_location)
    if not isinstance(f, (str, os.PathLike)):
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "obj.safetensors"
            path.write_bytes(f.read())
            return load(path, map_location=map_location)
    path = Path(f)
    try:
        with open(path, "rb") as fh:
            head = fh.read(9)
            size = os.fstat(fh.fileno()).st_size
    except OSError as e:
        raise CheckpointError(f"cannot read {path}: {e.strerror or e}") from None
    if _torch_pickle(head, size):
        raise CheckpointError(f"{path} was written by torch.save (a pickle), which seqlab never loads; convert it "
                              f"once with torch, from a file you trust: safetensors.torch.save_file(torch.load(path, "
                              f"weights_only=True), 'model.safetensors')")
    _, metadata, _ = read_header(path)
    arrays = load_file(path)
    if _KEY not in metadata:
        return {k: backend.to_device(v, device) if device else v for k, v in arrays.items()}
    try:
        saved = json.loads(metadata[_KEY])
        structure = saved["object"]
    except (json.JSONDecodeError, TypeError, KeyError) as e:
        raise CheckpointError(f"{path}: the saved structure is not readable ({e})") from None
    return _decode(structure, arrays, device)
