"""Describe a run folder: seqlab info RUN_DIR (task, settings, steps, best metric, parameters)."""
from __future__ import annotations

import argparse
import json
from pathlib import Path


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("run_dir", type=Path, metavar="RUN_DIR", help="a folder written by seqlab train")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of text")


def run(args) -> int:
    from seqlab.errors import CheckpointError
    from seqlab.train.runs import describe

    if args.run_dir.exists() and not args.run_dir.is_dir():
        raise CheckpointError(f"{args.run_dir} is a file, not a run folder")
    info = describe(args.run_dir)
    if args.json:
        print(json.dumps(info))
        return 0
    best = info.get("best")
    params = info.get("parameters")
    lines = [f"run        {info['run_dir']}",
             f"task       {info['task']}",
             f"steps      {info.get('step')} of {info['config'].get('max_steps')}"
             + (f" (stopped: {info['stopped']})" if info.get("stopped") else ""),
             f"checkpoint {info.get('checkpoint')}",
             f"parameters {params:,}" if isinstance(params, int) else "parameters ?"]
    if info["config"].get("ema_decay"):
        lines.append(f"weights    evaluated as their moving average (ema_decay={info['config']['ema_decay']}); "
                     f"best/ holds the average")
    if best:
        lines.append(f"best       {best['metric']} = {best['value']:.4f} at step {best['step']}")
    if info.get("last_eval"):
        lines.append("last eval  " + ", ".join(f"{k}={v:.4f}" for k, v in info["last_eval"].items()))
    if info.get("elapsed_s") is not None:
        lines.append(f"time       {info['elapsed_s'] / 60:.1f} min of training")
    lines.append("config     " + ", ".join(f"{k}={v}" for k, v in info["config"].items()))
    if info.get("model_config"):
        lines.append("model      " + json.dumps(info["model_config"]))
    print("\n".join(lines))
    return 0
