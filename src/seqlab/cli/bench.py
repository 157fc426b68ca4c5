"""seqlab bench [NAME ...] [--profile] [--threads N[,N...]] [--repeats N]: seqlab vs PyTorch, side by side.

Benchmarks: encoder-train, gpt-train, bert-infer, gpt-generate,
attention-long, gemm (default: all). Each builds the same model in seqlab and
PyTorch CPU eager with the same weights, inputs and thread count, alternates
the two, and prints medians and the ratio seqlab / torch. --profile prints
instead the time per op type of seqlab's step (and torch.profiler's table).
--results FILE writes the "Benchmarks: seqlab vs PyTorch" section of that
markdown file (docs/results.md). Needs torch (and transformers): the `test` extra.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

GPU_NOTE = ("GPU: not measured. No GPU was available to this run, and `seqlab bench` times CPU (NumPy) against "
            "PyTorch CPU eager only; CuPy runs of the same models at larger sizes are still to be done.")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("names", nargs="*", metavar="NAME",
                   help="benchmarks to run: encoder-train gpt-train bert-infer gpt-generate attention-long gemm "
                        "(default: all)")
    p.add_argument("--profile", action="store_true", help="print seqlab's time per op type (and torch's ops)")
    p.add_argument("--threads", default=None, metavar="N[,N...]",
                   help="threads for both libraries; several counts run everything once per count "
                        "(default: what NumPy's BLAS uses)")
    p.add_argument("--repeats", type=int, default=None, metavar="N",
                   help="alternating rounds per benchmark (default 7; 2 for attention-long)")
    p.add_argument("--steps", type=int, default=3, metavar="N", help="steps under the profiler (--profile)")
    p.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                   help="--profile's clock: wall time, or this thread's CPU time (steadier on a busy machine; "
                        "use with --threads 1)")
    p.add_argument("--data-dir", default=None, metavar="DIR", help="dataset folder (SST-2 for bert-infer)")
    p.add_argument("--results", type=Path, default=None, metavar="FILE",
                   help="write the results section into this markdown file (e.g. docs/results.md)")
    p.add_argument("--json", type=Path, default=None, metavar="FILE", help="also save every number as JSON")
    p.add_argument("--baseline", type=Path, default=None, metavar="FILE",
                   help="a --json file from an earlier run: its ratios become a 'before' column")
    p.add_argument("--from-json", type=Path, default=None, metavar="FILE",
                   help="run nothing: rebuild the tables (and --results) from a --json file of an earlier run")


def _threads(text: str | None) -> list[int | None]:
    if text is None:
        return [None]
    try:
        counts = [int(t) for t in text.split(",") if t.strip()]
    except ValueError:
        raise ValueError(f"--threads takes integers separated by commas, got {text!r}") from None
    if not counts or min(counts) < 1:
        raise ValueError(f"--threads must be >= 1, got {text!r}")
    return counts


def run(args) -> int:
    try:
        import torch  # noqa: F401
    except ImportError:
        raise ValueError("seqlab bench compares against PyTorch: install torch (pip install 'seqlab[test]')") from None
    from seqlab.bench import NAMES, profile_target
    from seqlab.bench import run as run_one
    from seqlab.bench.harness import load_average, machine_info, set_threads

    names = args.names or list(NAMES)
    bad = [n for n in names if n not in NAMES]
    if bad:
        raise ValueError(f"unknown benchmark {bad[0]!r}; choose from {', '.join(NAMES)}")
    counts = _threads(args.threads)
    if args.repeats is not None and args.repeats < 1:
        raise ValueError(f"--repeats must be >= 1, got {args.repeats}")

    if args.profile:
        from seqlab.bench.profiling import profile_step, torch_op_table

        for n in counts:
            got = set_threads(n)
            for name in names:
                step, torch_fn = profile_target(name)
                prof, steps = profile_step(step, steps=args.steps, clock=args.clock)
                print(f"== {name}: seqlab, {args.clock} time per op type (per step, "
                      f"{got} thread{'s' if got != 1 else ''}) ==")
                print(prof.table(per=steps))
                if torch_fn is not None:
                    print(f"\n== {name}: torch.profiler, self CPU time over {args.steps} steps ==")
                    print(torch_op_table(torch_fn, steps=args.steps))
        return 0

    if args.from_json is not None:
        import json

        from seqlab.bench.report import from_json

        results, info, command = from_json(json.loads(args.from_json.read_text()))
        for rs in results.values():
            for r in rs:
                print(r.markdown() + "\n")
        _write_results(args, results, info, command)
        return 0

    results, info = {}, None
    for n in counts:
        got = set_threads(n)
        info = machine_info(got)
        out = []
        for name in names:
            print(f"running {name} ({got} thread{'s' if got != 1 else ''}, load {load_average()}) ...",
                  file=sys.stderr, flush=True)
            kwargs = {"data_dir": args.data_dir, "threads": got}
            if args.repeats is not None:
                kwargs["rounds"] = args.repeats
            r = run_one(name, **kwargs)
            out.append(r)
            print(r.markdown() + "\n", flush=True)
        results[got] = out
    command = "seqlab bench " + " ".join(sys.argv[sys.argv.index("bench") + 1:]) if "bench" in sys.argv \
        else "seqlab bench"
    if args.json:
        import json

        from seqlab.bench.report import to_json

        args.json.write_text(json.dumps(to_json(results, info, command), indent=1, default=str) + "\n")
    _write_results(args, results, info, command)
    return 0


def _write_results(args, results: dict, info: dict, command: str) -> None:
    if args.results:
        from seqlab.bench.harness import write_section
        from seqlab.bench.report import HEADING, section

        write_section(args.results, HEADING, section(results, info, command, args.baseline, GPU_NOTE,
                                                     source=args.from_json or args.json))
        print(f"wrote the '{HEADING}' section of {args.results}", file=sys.stderr)
