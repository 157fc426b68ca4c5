"""Output folders that a failed command does not leave behind.

`seqlab attention` and `seqlab train` create their --out folder first, so that
an unwritable place fails before a model loads. If the command then fails (a
text too long, a dataset missing), the folders it created and left empty are
removed again: a failed command writes nothing.
"""
from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Callable, Iterator


def make_folder(out: Path, option: str = "--out") -> Path:
    """Create the output folder `out` (and its parents), or one `CheckpointError` line saying why not."""
    from seqlab.errors import CheckpointError

    out = Path(out)
    if out.exists() and not out.is_dir():
        raise CheckpointError(f"{option} {out} is a file, not a folder")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        blocker = next((p for p in out.parents if p.exists() and not p.is_dir()), None)
        why = f"{blocker} is a file, not a folder" if blocker is not None else e.strerror or str(e)
        raise CheckpointError(f"cannot create the output folder {out}: {why}") from None
    return out


def missing_folders(out: Path) -> list[Path]:
    """The folders of `out`'s path that do not exist yet, deepest first (out itself first when missing)."""
    missing = []
    path = Path(out).absolute()
    while not path.exists() and path != path.parent:
        missing.append(path)
        path = path.parent
    return missing


def remove_if_empty(folders: list[Path]) -> None:
    """Remove `folders` (deepest first) while each is empty; stop at the first that is not."""
    for folder in folders:
        try:
            folder.rmdir()
        except OSError:  # not empty (the command wrote something after all), or already gone
            return


@contextlib.contextmanager
def output_folder(out: Path, make: Callable[[Path], None]) -> Iterator[Path]:
    """`make(out)` (create it, or raise one clear error); if the block raises, the folders this
    created are removed again where they are still empty."""
    created = missing_folders(out)
    make(out)
    try:
        yield Path(out)
    except BaseException:
        remove_if_empty(created)
        raise
