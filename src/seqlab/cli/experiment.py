"""Run one of the chapter's experiments: seqlab experiment NAME --out DIR."""
from __future__ import annotations

import argparse
import importlib
import json
import pathlib
import sys

from seqlab.experiments import EXPERIMENTS


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("name", help="one of: " + ", ".join(EXPERIMENTS))
    p.add_argument("--out", required=True, type=pathlib.Path, help="folder for report.md, results.json, PNGs")
    p.add_argument("--quick", action="store_true", help="a small, fast version (for tests and demos)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--data-dir", default=None, help="local dataset folder (default: $SEQLAB_DATA or download)")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="override one of the experiment's settings (repeatable)")


def parse_value(text: str):
    """'3' -> 3, '0.5' -> 0.5, 'true' -> True, anything else stays a string (never eval'd)."""
    low = text.lower()
    if low in ("true", "false"):
        return low == "true"
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    return text


def parse_overrides(items: list[str]) -> dict:
    from seqlab.cli.main import UsageError

    out = {}
    for item in items:
        if "=" not in item:
            raise UsageError(f"--set expects KEY=VALUE, got {item!r}")
        k, v = item.split("=", 1)
        out[k.strip()] = parse_value(v.strip())
    return out


def run(args) -> int:
    from seqlab.cli.main import UsageError
    from seqlab.errors import CheckpointError, DataError

    if args.name not in EXPERIMENTS:
        raise UsageError(f"unknown experiment {args.name!r}; choose one of: {', '.join(EXPERIMENTS)}")
    try:
        mod = importlib.import_module(EXPERIMENTS[args.name])
    except ModuleNotFoundError as e:
        raise UsageError(f"experiment {args.name!r} is not available in this build ({e.name})") from None
    args.options = parse_overrides(args.set)
    if args.data_dir is not None and not pathlib.Path(args.data_dir).is_dir():
        raise DataError(f"data folder {args.data_dir} does not exist or is not a folder")
    out = pathlib.Path(args.out)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise CheckpointError(f"cannot create the output folder {out}: {e.strerror or e}") from None
    results = mod.run(out, args)
    table = results.get("table") if isinstance(results, dict) else None
    print(table if table else json.dumps(results, indent=2, default=str)[:4000])
    print(f"wrote {out}/report.md, {out}/results.json", file=sys.stderr)
    return 0
