"""Run one of the chapter's experiments: seqlab experiment NAME --out DIR.

Each experiment declares its settings (`seqlab.experiments.common.Setting`);
``--set KEY=VALUE`` values are converted by the declared type and checked
before anything runs: an unknown key, a wrong type or a value out of range is
a one-line usage error (exit 2) that names the key. ``seqlab experiment NAME
--help`` lists NAME's settings with their defaults. Progress goes to stderr:
one line per phase, plus tqdm bars on a terminal (``--progress`` /
``--no-progress`` force them on / everything off).
"""
from __future__ import annotations

import argparse
import importlib
import json
import pathlib
import sys

from seqlab.cli._args import int_at_least
from seqlab.experiments import EXPERIMENTS


class _Name(argparse.Action):
    """The NAME positional; a known NAME also puts its settings table under --help (NAME comes first)."""

    def __call__(self, parser, namespace, values, option_string=None):
        setattr(namespace, self.dest, values)
        if values in EXPERIMENTS:
            parser.epilog = settings_help(values)


def settings_help(name: str) -> str:
    """The table of NAME's settings (key, type and range, default, --quick default, meaning)."""
    from seqlab.experiments.common import describe

    try:
        return describe(importlib.import_module(EXPERIMENTS[name]))
    except ModuleNotFoundError as e:
        return f"experiment {name!r} is not available in this build ({e.name})"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.formatter_class = argparse.RawDescriptionHelpFormatter  # keep the settings table's columns
    p.epilog = "`seqlab experiment NAME --help` lists NAME's settings (--set KEY=VALUE) with their defaults."
    p.add_argument("name", action=_Name, help="one of: " + ", ".join(EXPERIMENTS))
    p.add_argument("--out", required=True, type=pathlib.Path, help="folder for report.md, results.json, PNGs")
    p.add_argument("--quick", action="store_true", help="a small, fast version (for tests and demos)")
    p.add_argument("--seed", type=int_at_least(0), default=0, help="random seed of the experiment (default 0)")
    p.add_argument("--data-dir", default=None, help="local dataset folder (default: $SEQLAB_DATA or download)")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="override one of the experiment's settings (repeatable; NAME --help lists them)")
    p.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                   help="progress bars on stderr (default: on a terminal); --no-progress also drops the "
                        "per-phase lines")


def parse_value(text: str):
    """'3' -> 3, '0.5' -> 0.5, 'true' -> True, anything else stays a string (never eval'd).

    A loose guess for callers without a declared type; `--set` values are converted by each
    experiment's declared settings instead (`seqlab.experiments.common`).
    """
    low = text.lower()
    if low in ("true", "false"):
        return low == "true"
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    return text


def parse_overrides(items: list[str]) -> dict[str, str]:
    """``["distance=30"]`` -> ``{"distance": "30"}``: strings, typed later by the experiment's settings."""
    from seqlab.cli.main import UsageError

    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"--set expects KEY=VALUE, got {item!r}")
        out[key.strip()] = value.strip()
    return out


def _say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def run(args) -> int:
    from seqlab.cli.main import UsageError
    from seqlab.errors import ConfigError, DataError
    from seqlab.folders import make_folder
    from seqlab.experiments.common import settings_for

    if args.name not in EXPERIMENTS:
        raise UsageError(f"unknown experiment {args.name!r}; choose one of: {', '.join(EXPERIMENTS)}")
    try:
        mod = importlib.import_module(EXPERIMENTS[args.name])
    except ModuleNotFoundError as e:
        raise UsageError(f"experiment {args.name!r} is not available in this build ({e.name})") from None
    args.options = parse_overrides(args.set)
    try:
        settings_for(mod, args)  # every --set checked before anything runs; run() resolves them again
    except ConfigError as e:
        raise UsageError(str(e)) from None
    if args.data_dir is not None and not pathlib.Path(args.data_dir).is_dir():
        raise DataError(f"data folder {args.data_dir} does not exist or is not a folder")
    out = make_folder(pathlib.Path(args.out))
    args.say = _say  # the experiment's progress lines (it prints nothing itself)
    results = mod.run(out, args)
    table = results.get("table") if isinstance(results, dict) else None
    print(table if table else json.dumps(results, indent=2, default=str)[:4000])
    print(f"wrote {out}/report.md, {out}/results.json", file=sys.stderr)
    return 0
