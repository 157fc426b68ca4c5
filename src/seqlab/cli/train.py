"""Train a task: seqlab train TASK --out RUN_DIR [--config FILE.toml] [--set KEY=VALUE ...] [--resume].

Settings come from the task's defaults, then the TOML file, then each
--set, then --seed / --max-minutes; values are converted by each setting's
type, never evaluated. Ctrl-C stops after the current step, saves a
checkpoint and exits 130; --resume continues exactly where it stopped.
``--print-config`` prints the resolved settings as TOML, a starting --config file.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from seqlab.cli._args import add_progress_argument, finite_float, int_at_least, wants_bar
from seqlab.train.tasks import TASKS


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("task", metavar="TASK", help="one of: " + ", ".join(TASKS))
    p.add_argument("--out", type=Path, metavar="RUN_DIR",
                   help="run folder (checkpoints, metrics); required unless --print-config")
    p.add_argument("--config", type=Path, metavar="FILE.toml", help="settings file (flat keys or [tables])")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="override one setting (repeatable)")
    p.add_argument("--resume", action="store_true", help="continue the run in RUN_DIR from its latest checkpoint")
    p.add_argument("--max-minutes", type=finite_float(0), metavar="M",
                   help="training time budget in minutes, a finite number >= 0 (0 = no limit; summed over resumes)")
    p.add_argument("--seed", type=int_at_least(0), help="random seed (init, dropout, data order)")
    p.add_argument("--data-dir", type=Path, metavar="DIR", help="local dataset folder (default: $SEQLAB_DATA or download)")
    add_progress_argument(p, "without it the evaluation lines and notices still go to stderr, one per line")
    p.add_argument("--print-config", action="store_true",
                   help="print the task's resolved settings as TOML (a --config file) and exit")


def _progress(flag: bool | None) -> bool | str:
    """The trainer's `progress`: a bar when asked or on a terminal, otherwise plain lines (logs, pipes)."""
    return True if wants_bar(flag) else "lines"


def _layers(args) -> list[tuple[dict, str]]:
    from seqlab.errors import ConfigError
    from seqlab.train.config import parse_set, read_toml

    layers: list[tuple[dict, str]] = []
    if args.config is not None:
        layers.append((read_toml(args.config), str(args.config)))
    sets = parse_set(args.set)
    if sets:
        layers.append((sets, "--set"))
    flags = {}
    if args.seed is not None:
        flags["seed"] = args.seed
    if args.max_minutes is not None:
        flags["max_minutes"] = args.max_minutes
    for key in flags:
        if key in sets:
            raise ConfigError(f"conflicting options: --{key.replace('_', '-')} and --set {key}=...")
    if flags:
        layers.append((flags, "--" + "/--".join(k.replace("_", "-") for k in flags)))
    return layers


def _description(name: str) -> str:
    from seqlab.train.tasks import get_task

    return get_task(name).DESCRIPTION


def run(args) -> int:
    from seqlab.cli.main import UsageError
    from seqlab.errors import ConfigError, DataError
    from seqlab.train import runs
    from seqlab.train.checkpoint import latest_checkpoint

    if args.task not in TASKS:
        raise UsageError(f"unknown task {args.task!r}; choose one of: {', '.join(TASKS)}")
    if args.print_config:
        from seqlab.train.config import to_toml

        try:
            config = runs.resolve_config(args.task, _layers(args))
        except ConfigError as e:
            raise UsageError(str(e)) from None
        print(f"# seqlab train {args.task}: {_description(args.task)}\n" + to_toml(config.to_dict()), end="")
        return 0
    if args.out is None:
        raise UsageError("the following arguments are required: --out")
    if args.data_dir is not None and not args.data_dir.is_dir():
        raise DataError(f"data folder {args.data_dir} does not exist or is not a folder")
    if args.resume and latest_checkpoint(args.out) is None:
        raise UsageError(f"--resume: {args.out} has no checkpoint to resume from")
    from seqlab import kernels, mkl
    from seqlab.train.distributed import maybe_init_distributed

    # SEQLAB_BLAS and SEQLAB_KERNELS are read here, before the run folder is made: a bad value is the same
    # one-line error (exit 1) as under `seqlab --version`, and leaves nothing behind
    mkl.library()
    kernels.library()
    dist = None
    try:
        layers = _layers(args)
        dist = maybe_init_distributed()  # under torchrun: data-parallel ranks; otherwise None (no torch)
        result = runs.train(args.task, args.out, layers, resume=args.resume, data_dir=args.data_dir,
                            progress=_progress(args.progress), distributed=dist)
    except ConfigError as e:
        raise UsageError(str(e)) from None
    finally:
        if dist is not None:
            dist.close()
    if dist is not None and not dist.is_main:  # rank 0 alone reports, exit status included
        return 0
    if result.stopped == "interrupted":
        print(f"interrupted at step {result.step}; checkpoint saved in {result.checkpoint}; continue with: "
              f"seqlab train {args.task} --out {args.out} --resume", file=sys.stderr)
        return 130
    summary = {"task": args.task, "step": result.step, "stopped": result.stopped,
               "final_loss": result.final_loss, **result.last_eval,
               "best": result.best, "best_step": result.best_step, "elapsed_s": round(result.elapsed_s, 2),
               **result.extra, "run_dir": str(args.out)}
    print(json.dumps(summary))
    return 0
