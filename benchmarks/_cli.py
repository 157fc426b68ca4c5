"""Argument checks and error reporting shared by the scripts in this folder.

Bad arguments end in argparse's usage line and `error: ...` with exit code 2;
a problem found while running (a missing data folder, a file that cannot be
written) ends in one `error: ...` line on stderr with exit code 1, never a
traceback. Nothing heavy is imported here: scripts import this module before
NumPy loads (their thread settings must come first), and `step_time.py` runs
against older seqlab checkouts.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Callable


def positive_int(text: str) -> int:
    """argparse type: an integer >= 1."""
    return _int_at_least(text, 1)


def nonnegative_int(text: str) -> int:
    """argparse type: an integer >= 0."""
    return _int_at_least(text, 0)


def _int_at_least(text: str, low: int) -> int:
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer >= {low}, got {text!r}") from None
    if n < low:
        raise argparse.ArgumentTypeError(f"must be >= {low}, got {n}")
    return n


def thread_counts(text: str) -> list[str]:
    """argparse type: one positive thread count or several separated by commas (kept as strings)."""
    counts = [c.strip() for c in text.split(",")]
    if not counts or any(not c for c in counts):
        raise argparse.ArgumentTypeError(f"expected positive integers separated by commas, got {text!r}")
    return [str(positive_int(c)) for c in counts]


def valid_thread_counts(text: str) -> bool:
    try:
        thread_counts(text)
    except argparse.ArgumentTypeError:
        return False
    return True


def check_output_file(parser: argparse.ArgumentParser, option: str, path) -> None:
    """Reject an output file whose folder does not exist before any work is done (not after it)."""
    if path is not None and not Path(path).resolve().parent.is_dir():
        parser.error(f"{option} {path}: folder {Path(path).resolve().parent} does not exist")


def check_data_dir(path) -> None:
    """A missing data folder is an error of the run (exit 1), found before any model is built."""
    if path is not None and not Path(path).is_dir():
        fail(f"data folder {path} does not exist")


def fail(message: str, code: int = 1):
    """Print `error: message` on stderr and exit with `code`."""
    print(f"error: {message}", file=sys.stderr)
    raise SystemExit(code)


def run_main(main: Callable[[], object]):
    """Call `main()`; seqlab's errors and OS errors become one `error:` line and exit code 1."""
    errors: tuple[type[BaseException], ...] = (OSError,)
    try:
        from seqlab.errors import SeqlabError
        errors += (SeqlabError,)
    except ImportError:  # an older seqlab without it (step_time.py compares checkouts)
        pass
    try:
        result = main()
    except errors as e:
        fail(str(e) or type(e).__name__)
    raise SystemExit(result if isinstance(result, int) else 0)
