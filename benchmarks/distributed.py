"""Data-parallel speed-up: `torchrun --nproc_per_node 2` against one process, one thread each.

    python benchmarks/distributed.py [--task sst2-transformer --steps 60 --warmup 10 --rounds 2 --json out.json]

Both runs train the same task with the same settings, so the same global
batch per step (each of the 2 ranks computes half of it). Every process is
pinned to one BLAS/OpenMP thread, so 2 processes use 2 cores against 1.
Training time is read from rank 0's metrics.jsonl (``elapsed_s`` of each
step row), from step `warmup` to the last step: start-up (imports, data,
tokenizer, process group) and the final evaluation are not counted. The
ideal speed-up is 2; what is lost goes to the all-reduce of the gradients
(one flat buffer per step through gloo), the stop agreement, and to the
parts of a step that do not shrink with the batch (optimizer update).
Rounds alternate 1 and 2 processes so machine noise hits both; the table
shows the median.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from _cli import check_data_dir, check_output_file, fail, positive_int, run_main

ROOT = Path(__file__).resolve().parents[1]
THREADS = {k: "1" for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")}
CONFIGS = {  # small enough for minutes on a laptop, big enough that a step is mostly compute
    "sst2-transformer": {"batch_size": 64, "d_model": 128, "nhead": 4, "num_layers": 2, "dim_feedforward": 512,
                         "max_train_examples": 8000, "max_dev_examples": 200, "vocab_size": 4000, "max_minutes": 0},
    "toy-classifier": {"batch_size": 512, "dim": 256, "hidden": 2048, "n_train": 20000, "n_dev": 200},
}


def _env() -> dict[str, str]:
    env = {**os.environ, **THREADS, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT / "src"),
                                                                               os.environ.get("PYTHONPATH")]))}
    for k in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"):
        env.pop(k, None)
    return env


def train_once(task: str, settings: dict, nproc: int, out: Path, data_dir: str | None) -> list[dict]:
    """Run `seqlab train` with `nproc` processes; returns rank 0's training rows of metrics.jsonl."""
    args = ["train", task, "--out", str(out), "--no-progress"]
    args += [a for k, v in settings.items() for a in ("--set", f"{k}={v}")]
    if data_dir:
        args += ["--data-dir", data_dir]
    if nproc == 1:
        cmd = [sys.executable, "-m", "seqlab"] + args
    else:
        cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", str(nproc),
               "-m", "seqlab"] + args
    proc = subprocess.run(cmd, capture_output=True, text=True, env=_env(), cwd=ROOT)
    if proc.returncode != 0:
        sys.stderr.write(proc.stderr[-3000:])
        fail(f"{' '.join(cmd)} failed (exit code {proc.returncode})")
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    return [r for r in rows if "split" not in r and "loss" in r and "event" not in r]


def seconds_per_step(rows: list[dict], warmup: int) -> float:
    by_step = {int(r["step"]): float(r["elapsed_s"]) for r in rows}
    last = max(by_step)
    if warmup not in by_step or last <= warmup:
        fail(f"need step rows {warmup} and after; got steps {sorted(by_step)[:5]}...")
    return (by_step[last] - by_step[warmup]) / (last - warmup)


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--task", default="sst2-transformer", choices=sorted(CONFIGS))
    p.add_argument("--steps", type=positive_int, default=60, help="training steps per run (more than --warmup)")
    p.add_argument("--warmup", type=positive_int, default=10,
                   help="steps not timed (caches, allocator); the clock starts at the end of step WARMUP (>= 1)")
    p.add_argument("--rounds", type=positive_int, default=2, help="alternating 1-process / 2-process runs")
    p.add_argument("--nproc", type=positive_int, default=2)
    p.add_argument("--data-dir", default=os.environ.get("SEQLAB_DATA"))
    p.add_argument("--json", type=Path, help="also write the numbers here")
    args = p.parse_args(argv)
    if args.steps <= args.warmup:
        p.error(f"--steps ({args.steps}) must be more than --warmup ({args.warmup}): "
                "only the steps after the warm-up are timed")
    check_output_file(p, "--json", args.json)
    check_data_dir(args.data_dir)
    settings = {**CONFIGS[args.task], "max_steps": args.steps, "eval_every": 0, "checkpoint_every": 0,
                "log_every": 1, "dropout": 0.1}
    times: dict[int, list[float]] = {1: [], args.nproc: []}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.rounds):
            for n in (1, args.nproc):
                rows = train_once(args.task, settings, n, Path(tmp) / f"run-{r}-{n}", args.data_dir)
                times[n].append(seconds_per_step(rows, args.warmup))
    one, many = statistics.median(times[1]), statistics.median(times[args.nproc])
    batch = settings["batch_size"]
    lines = ["| processes | threads each | global batch | s/step (median) | examples/s | speed-up |",
             "| --- | --- | --- | --- | --- | --- |"]
    for n, t in ((1, one), (args.nproc, many)):
        lines.append(f"| {n} | 1 | {batch} | {t:.4f} | {batch / t:,.0f} | {one / t:.2f}x |")
    table = "\n".join(lines)
    result = {"task": args.task, "settings": settings, "steps_timed": args.steps - args.warmup,
              "seconds_per_step": {str(k): v for k, v in times.items()}, "speedup": one / many,
              "cores": os.cpu_count(), "python": platform.python_version(), "table": table}
    print(f"{args.task}: {args.steps - args.warmup} steps timed after {args.warmup}, {args.rounds} rounds, "
          f"{os.cpu_count()} cores\n{table}")
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    return result


if __name__ == "__main__":
    run_main(main)
