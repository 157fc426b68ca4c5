"""Option values the subcommands share: a bad one is a single line that names the option (exit 2)."""
from __future__ import annotations

import argparse
import os
from typing import Callable


def int_at_least(lowest: int) -> Callable[[str], int]:
    """An argparse `type`: an integer >= `lowest` ('argument --seed: must be >= 0, got -1' otherwise)."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expects an integer, got {text!r}") from None
        if value < lowest:
            raise argparse.ArgumentTypeError(f"must be >= {lowest}, got {value}")
        return value

    return parse


def usable_cores() -> int:
    """The CPU cores this process may run on (its affinity mask where the OS has one, as taskset sets)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # macOS, Windows
        return os.cpu_count() or 1


def check_threads(count: int | None, option: str) -> None:
    """More BLAS threads than cores only makes them wait for each other (and a benchmark's ratio
    meaningless): refuse it rather than measure it."""
    from seqlab.cli.main import UsageError

    cores = usable_cores()
    if count is not None and count > cores:
        raise UsageError(f"{option} {count} is more than the {cores} CPU core{'s' if cores != 1 else ''} "
                         f"this process may use")
