"""Evaluate a trained classifier run on a GLUE-format TSV: seqlab eval RUN_DIR --data FILE.tsv.

The file has a header ``sentence<TAB>label`` and one example per row. The
last line printed is a JSON object with ``accuracy``.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("run_dir", type=Path, metavar="RUN_DIR", help="a folder written by seqlab train")
    p.add_argument("--data", required=True, type=Path, metavar="FILE.tsv", help="sentence<TAB>label, with a header")
    p.add_argument("--checkpoint", choices=("best", "latest"), default="best",
                   help="the best weights seen in evaluation (default) or the latest checkpoint")


def run(args) -> int:
    from seqlab.cli.main import UsageError
    from seqlab.data.datasets import load_glue_tsv
    from seqlab.errors import DataError
    from seqlab.train.metrics import accuracy
    from seqlab.train.runs import load_run

    if args.data.is_dir():
        tsv = sorted(args.data.glob("*.tsv"))
        raise DataError(f"--data {args.data} is a folder, not a file; pass a TSV file"
                        + (f" such as {tsv[0]}" if tsv else ""))
    if not args.data.is_file():
        raise DataError(f"data file {args.data} does not exist")
    run_ = load_run(args.run_dir, which=args.checkpoint)
    if run_.task is None or run_.task.predict is None:
        raise UsageError(f"task {run_.task_name!r} is not a classifier; seqlab eval --data needs one")
    num_classes = int((run_.record.get("model_config") or {}).get("num_classes", 2))
    rows = load_glue_tsv(args.data, labels=range(num_classes))
    if not rows:
        raise DataError(f"{args.data} has a header but no examples")
    sentences = [s for s, _ in rows]
    labels = [y for _, y in rows]
    predictions = run_.task.predict(run_.task.model, sentences)
    correct = int((predictions == labels).sum())
    print(f"evaluated {run_.run_dir} ({run_.task_name}, {run_.checkpoint} weights, step {run_.step}) "
          f"on {len(rows)} examples of {args.data}", file=sys.stderr)
    print(json.dumps({"accuracy": accuracy(predictions, labels), "correct": correct, "examples": len(rows),
                      "task": run_.task_name, "checkpoint": run_.checkpoint, "step": run_.step,
                      "data": str(args.data)}))
    return 0
