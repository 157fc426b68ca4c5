"""Training checkpoints: safetensors + JSON only, written atomically, verified on load.

A run folder holds::

    RUN_DIR/checkpoints/step-000100/   one complete checkpoint
        model.safetensors              model weights (state_dict names)
        optimizer.safetensors          optimizer arrays: "state.<param index>.<name>"
        ema.safetensors                only with ema_decay > 0: the moving average of the
                                       trainable parameters (their names), once updated
        config.json                    task, settings, model config
        state.json                     step/epoch/data position, RNG states, optimizer scalars,
                                       and the sha256 of every other file
    RUN_DIR/checkpoints/latest         the name of the newest complete checkpoint

Atomicity: everything is written into ``checkpoints/.tmp-<name>-<pid>``,
each file fsync'ed, the folder renamed into place (``os.replace``) and only
then ``latest`` replaced (via its own temporary file). A process killed at
any moment leaves ``latest`` naming a complete, verified checkpoint: either
the previous one or the new one. Leftover ``.tmp-*`` folders are ignored
and removed by the next save. Nothing is ever pickled.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from seqlab import backend
from seqlab.errors import ChecksumError, CheckpointError

FORMAT = "seqlab-checkpoint/1"
CHECKPOINTS = "checkpoints"
LATEST = "latest"
_NAME = re.compile(r"^step-\d{6,}$")


# ---------------------------------------------------------------- atomic file primitives

def fsync_dir(path: Path) -> None:
    """Make a rename or file creation inside `path` durable (no-op where directories cannot be opened)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:  # pragma: no cover - e.g. Windows
        return
    try:
        os.fsync(fd)
    except OSError:  # pragma: no cover - some file systems refuse fsync on directories
        pass
    finally:
        os.close(fd)


def _fsync_file(path: Path) -> None:
    with open(path, "rb+") as f:
        os.fsync(f.fileno())


def write_bytes_atomic(path: Path, data: bytes) -> None:
    """Write `data` to a temporary file next to `path`, fsync, then rename over `path`."""
    path = Path(path)
    tmp = path.with_name(f".tmp-{path.name}-{os.getpid()}")
    try:
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()
    fsync_dir(path.parent)


def write_json_atomic(path: Path, obj: Any) -> None:
    write_bytes_atomic(path, (json.dumps(obj, indent=2, sort_keys=True) + "\n").encode("utf-8"))


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _save_arrays(path: Path, arrays: dict[str, Any], metadata: dict[str, str] | None = None) -> None:
    from safetensors.numpy import save_file

    host = {k: np.ascontiguousarray(backend.to_numpy(v)) for k, v in arrays.items()}
    save_file(host, str(path), metadata=metadata)
    _fsync_file(path)


def _load_arrays(path: Path) -> dict[str, np.ndarray]:
    from safetensors.numpy import load_file

    try:
        return load_file(str(path))
    except Exception as e:  # the Rust loader raises its own error types for malformed headers
        raise CheckpointError(f"{path}: not a valid safetensors file ({e})") from None


def read_json(path: Path) -> dict:
    try:
        obj = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise CheckpointError(f"{path} is missing") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise CheckpointError(f"{path}: not a readable JSON file ({e})") from None
    if not isinstance(obj, dict):
        raise CheckpointError(f"{path}: expected a JSON object, got {type(obj).__name__}")
    return obj


# ---------------------------------------------------------------- optimizer state <-> files

def split_optimizer_state(sd: dict) -> tuple[dict[str, np.ndarray], dict]:
    """An optimizer state_dict as (arrays for safetensors, JSON-able rest)."""
    arrays: dict[str, np.ndarray] = {}
    scalars: dict[str, dict[str, Any]] = {}
    for index, state in sd["state"].items():
        for name, value in state.items():
            if hasattr(value, "shape") and getattr(value, "ndim", 0) > 0:
                arrays[f"state.{index}.{name}"] = value
            else:
                scalars.setdefault(str(index), {})[name] = value.item() if hasattr(value, "item") else value
    groups = [{k: (list(v) if isinstance(v, tuple) else v) for k, v in g.items()} for g in sd["param_groups"]]
    return arrays, {"param_groups": groups, "scalars": scalars}


def join_optimizer_state(arrays: dict[str, np.ndarray], rest: dict) -> dict:
    """The inverse of `split_optimizer_state`."""
    state: dict[int, dict[str, Any]] = {}
    for key, value in arrays.items():
        _, index, name = key.split(".", 2)
        state.setdefault(int(index), {})[name] = value
    for index, values in rest.get("scalars", {}).items():
        state.setdefault(int(index), {}).update(values)
    groups = [{k: (tuple(v) if k == "betas" else v) for k, v in g.items()} for g in rest["param_groups"]]
    return {"state": state, "param_groups": groups}


# ---------------------------------------------------------------- checkpoints

@dataclass
class Checkpoint:
    """A verified checkpoint read back from disk."""

    path: Path
    step: int
    model_state: dict[str, np.ndarray]
    optimizer_state: dict | None
    state: dict            # the trainer's counters and RNG states
    config: dict           # task, settings and model config
    ema_state: dict[str, np.ndarray] | None = None  # averaged trainable parameters (ema.safetensors)


def checkpoint_root(run_dir: Path) -> Path:
    return Path(run_dir) / CHECKPOINTS


def save_checkpoint(run_dir: Path, step: int, model_state: dict[str, Any], optimizer_state: dict | None,
                    state: dict, config: dict, keep: int = 2, ema_state: dict[str, Any] | None = None) -> Path:
    """Write a complete checkpoint for `step` atomically; returns its folder.

    `state` must be JSON-serialisable (ints, floats, strings, lists, dicts).
    `ema_state` (parameter name -> averaged array), when given and not empty,
    becomes ``ema.safetensors``, checksummed like the other files.
    After `latest` names the new folder, all but the newest `keep` folders
    are deleted.
    """
    root = checkpoint_root(run_dir)
    root.mkdir(parents=True, exist_ok=True)
    name = f"step-{step:06d}"
    final = root / name
    tmp = root / f".tmp-{name}-{os.getpid()}"
    _remove_leftovers(root)
    if final.is_dir() and latest_checkpoint(run_dir) == final:
        # Saved already at this very step (e.g. Ctrl-C right after a periodic save): the
        # state at one step boundary is the same, and `latest` must never name a missing folder.
        return final
    try:
        tmp.mkdir()
        files = {"model.safetensors": None, "optimizer.safetensors": None}
        _save_arrays(tmp / "model.safetensors", dict(model_state), {"format": FORMAT, "step": str(step)})
        if optimizer_state is not None:
            opt_arrays, opt_rest = split_optimizer_state(optimizer_state)
            _save_arrays(tmp / "optimizer.safetensors", opt_arrays, {"format": FORMAT, "step": str(step)})
        else:
            opt_rest = None
            del files["optimizer.safetensors"]
        if ema_state:
            _save_arrays(tmp / "ema.safetensors", dict(ema_state), {"format": FORMAT, "step": str(step)})
            files["ema.safetensors"] = None
        (tmp / "config.json").write_text(json.dumps(config, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        _fsync_file(tmp / "config.json")
        files["config.json"] = None
        record = {"format": FORMAT, "step": step, "trainer": state, "optimizer": opt_rest,
                  "files": {f: sha256_file(tmp / f) for f in files}}
        (tmp / "state.json").write_text(json.dumps(record, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        _fsync_file(tmp / "state.json")
        fsync_dir(tmp)
        if final.exists():  # a complete folder `latest` never came to name (killed before the pointer)
            old = root / f".tmp-old-{name}-{os.getpid()}"
            os.replace(final, old)
            shutil.rmtree(old, ignore_errors=True)
        os.replace(tmp, final)
        fsync_dir(root)
        write_bytes_atomic(root / LATEST, (name + "\n").encode("ascii"))
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    _prune(root, keep, name)
    return final


def _remove_leftovers(root: Path) -> None:
    for p in root.glob(".tmp-*"):
        shutil.rmtree(p, ignore_errors=True) if p.is_dir() else p.unlink(missing_ok=True)


def _prune(root: Path, keep: int, current: str) -> None:
    names = sorted((p.name for p in root.iterdir() if p.is_dir() and _NAME.match(p.name)), key=lambda n: int(n[5:]))
    for name in names[:-keep] if keep > 0 else []:
        if name != current:
            shutil.rmtree(root / name, ignore_errors=True)


def latest_checkpoint(run_dir: Path) -> Path | None:
    """The folder `latest` names, or None when the run has no checkpoint yet."""
    root = checkpoint_root(run_dir)
    try:
        name = (root / LATEST).read_text(encoding="ascii").strip()
    except (FileNotFoundError, NotADirectoryError):
        return None
    except (OSError, UnicodeDecodeError) as e:
        raise CheckpointError(f"{root / LATEST}: unreadable ({e})") from None
    if not _NAME.match(name):
        raise CheckpointError(f"{root / LATEST} names {name[:40]!r}, not a checkpoint folder (step-NNNNNN)")
    return root / name


def load_checkpoint(path: Path, with_optimizer: bool = True, with_ema: bool = True) -> Checkpoint:
    """Read and verify a checkpoint folder (or a run folder, meaning its latest checkpoint).

    Every file is checked against the sha256 recorded in ``state.json``
    before it is parsed: a mismatch is a `ChecksumError`, a missing or
    malformed file a `CheckpointError`, each naming the file. The optimizer
    and EMA files are neither verified nor read when not asked for.
    """
    path = Path(path)
    if not (path / "state.json").exists():  # a run folder: its latest checkpoint
        latest = latest_checkpoint(path)
        if latest is None:
            raise CheckpointError(f"{path} has no checkpoint ({path / CHECKPOINTS / LATEST} is missing)")
        path = latest
    if not path.is_dir():
        raise CheckpointError(f"checkpoint folder {path} does not exist")
    record = read_json(path / "state.json")
    if record.get("format") != FORMAT:
        raise CheckpointError(f"{path / 'state.json'}: format {record.get('format')!r}, expected {FORMAT!r}")
    files = record.get("files")
    if not isinstance(files, dict) or "model.safetensors" not in files or "config.json" not in files:
        raise CheckpointError(f"{path / 'state.json'}: no file checksums recorded")
    for name, digest in files.items():
        if "/" in name or "\\" in name or name.startswith("."):
            raise CheckpointError(f"{path / 'state.json'}: bad file name {name!r}")
        if not (path / name).is_file():
            raise CheckpointError(f"{path / name} is missing")
        if name.endswith(".safetensors") and ((not with_optimizer and name.startswith("optimizer"))
                                              or (not with_ema and name.startswith("ema"))):
            continue
        actual = sha256_file(path / name)
        if actual != digest:
            raise ChecksumError(f"{path / name}: sha256 {actual[:16]}… does not match the recorded {str(digest)[:16]}…; "
                                f"the checkpoint is corrupted")
    model_state = _load_arrays(path / "model.safetensors")
    optimizer_state = None
    if with_optimizer and record.get("optimizer") is not None and "optimizer.safetensors" in files:
        optimizer_state = join_optimizer_state(_load_arrays(path / "optimizer.safetensors"), record["optimizer"])
    ema_state = _load_arrays(path / "ema.safetensors") if with_ema and "ema.safetensors" in files else None
    return Checkpoint(path=path, step=int(record["step"]), model_state=model_state, optimizer_state=optimizer_state,
                      state=record.get("trainer", {}), config=read_json(path / "config.json"), ema_state=ema_state)


# ---------------------------------------------------------------- the best weights

def save_best(run_dir: Path, model_state: dict[str, Any], info: dict) -> Path:
    """Write RUN_DIR/best/{model.safetensors, best.json} atomically (a whole-folder replace)."""
    run_dir = Path(run_dir)
    final, tmp = run_dir / "best", run_dir / f".tmp-best-{os.getpid()}"
    old = run_dir / f".tmp-best-old-{os.getpid()}"
    for leftover in run_dir.glob(".tmp-best*"):
        shutil.rmtree(leftover, ignore_errors=True)
    try:
        tmp.mkdir()
        _save_arrays(tmp / "model.safetensors", dict(model_state), {"format": FORMAT})
        record = {**info, "files": {"model.safetensors": sha256_file(tmp / "model.safetensors")}}
        (tmp / "best.json").write_text(json.dumps(record, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        _fsync_file(tmp / "best.json")
        fsync_dir(tmp)
        if final.exists():
            os.replace(final, old)
        os.replace(tmp, final)
        fsync_dir(run_dir)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.rmtree(old, ignore_errors=True)
    return final


def load_best(run_dir: Path) -> tuple[dict[str, np.ndarray], dict] | None:
    """The best weights and their record, verified; None if the run never evaluated."""
    folder = Path(run_dir) / "best"
    if not folder.is_dir():
        return None
    info = read_json(folder / "best.json")
    digest = info.get("files", {}).get("model.safetensors")
    if not (folder / "model.safetensors").is_file():
        raise CheckpointError(f"{folder / 'model.safetensors'} is missing")
    if sha256_file(folder / "model.safetensors") != digest:
        raise ChecksumError(f"{folder / 'model.safetensors'}: sha256 does not match {folder / 'best.json'}")
    return _load_arrays(folder / "model.safetensors"), info
