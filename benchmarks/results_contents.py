"""Rebuild the table of contents at the top of docs/results.md.

    python benchmarks/results_contents.py [docs/results.md]

Every `--results` run (seqlab bench, benchmarks/ops.py) rebuilds it as it
writes its section; run this after adding or renaming a section by hand.
The contents lists the results as they stand (the undated sections, with
their parts), then the dated notes, newest day first; the page must already hold
the block's two marker lines (`seqlab.bench.harness.CONTENTS_BEGIN`, `CONTENTS_END`).
"""
from __future__ import annotations

import argparse
from pathlib import Path

from _cli import fail, run_main

DEFAULT = Path(__file__).resolve().parents[1] / "docs" / "results.md"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("path", nargs="?", type=Path, default=DEFAULT, help="the results page (default docs/results.md)")
    a = p.parse_args()
    from seqlab.bench.harness import CONTENTS_BEGIN, CONTENTS_END, with_contents

    text = a.path.read_text(encoding="utf-8")
    if CONTENTS_BEGIN not in text or CONTENTS_END not in text:
        fail(f"{a.path} has no contents block: put the lines {CONTENTS_BEGIN!r} and {CONTENTS_END!r} "
             "where it should go")
    new = with_contents(text)
    if new == text:
        print(f"{a.path}: contents already up to date")
        return
    a.path.write_text(new, encoding="utf-8")
    print(f"{a.path}: contents rebuilt")


if __name__ == "__main__":
    run_main(main)
