"""Helpers for the reliability tests (imported as a module: tests/reliability has no __init__.py)."""
from __future__ import annotations


def one_error_line(err: str) -> str:
    """The single ``error: ...`` line that is all of stderr (no traceback, no warning)."""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    assert "Traceback" not in err
    return lines[0]


def warnings_of(err: str) -> list[str]:
    """The ``warning: ...`` lines of stderr."""
    return [line for line in err.splitlines() if line.startswith("warning: ")]
