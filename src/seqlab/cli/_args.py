"""Option values the subcommands share: a bad one is a single line that names the option (exit 2)."""
from __future__ import annotations

import argparse
import math
import os
import sys
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


def finite_float(lowest: float, *, above: bool = False) -> Callable[[str], float]:
    """An argparse `type`: a finite number >= `lowest` (> `lowest` with ``above``): 'argument --minutes:
    must be a finite number > 0, got inf' otherwise. inf and nan are refused, never read as 'no limit'."""
    rule = f"a finite number {'>' if above else '>='} {lowest:g}"

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expects a number, got {text!r}") from None
        if not math.isfinite(value) or (value <= lowest if above else value < lowest):
            raise argparse.ArgumentTypeError(f"must be {rule}, got {value:g}")
        return value

    return parse


def add_progress_argument(p: argparse.ArgumentParser, without: str) -> None:
    """--progress / --no-progress, read by `wants_bar`; `without` says what the command shows without a bar."""
    p.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                   help=f"a progress bar on stderr (default: on a terminal); {without}")


def wants_bar(flag: bool | None) -> bool:
    """Whether to draw a progress bar: as --progress / --no-progress say, else only when stderr is a terminal
    (a log file or a pipe does not fill with redraws). `seqlab train` and `seqlab demo` share this rule."""
    return sys.stderr.isatty() if flag is None else bool(flag)


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
