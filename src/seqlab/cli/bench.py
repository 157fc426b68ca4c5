"""seqlab bench [NAME ...] [--profile] [--threads N[,N...]] [--repeats N]: seqlab vs PyTorch, side by side.

Benchmarks: encoder-train, gpt-train, bert-infer, gpt-generate,
attention-long, gemm (default: all). Each builds the same model in seqlab and
PyTorch CPU eager with the same weights, inputs and thread count, alternates
the two, and prints medians and the ratio seqlab / torch. --profile prints
instead the time per op type of seqlab's step (and torch.profiler's table).
--results FILE writes the "Benchmarks: seqlab vs PyTorch" section of that
markdown file (docs/results.md). Needs torch (and transformers): the `test` extra.

--device cuda runs encoder-train and gpt-train on a GPU, CuPy against PyTorch
CUDA eager (default: both; needs CuPy and a CUDA build of torch); --size large
gives those two their GPU sizes (GPT-2 small; a BERT-base-shaped encoder).
A GPU run's --results section is "Benchmarks: seqlab vs PyTorch on a GPU, size S".
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from seqlab.cli._args import check_threads, int_at_least

GPU_NOTE = ("GPU: not measured. No GPU was available to this run, and `seqlab bench` times CPU (NumPy) against "
            "PyTorch CPU eager only; CuPy runs of the same models at larger sizes are still to be done.")
GPU_SEEN_NOTE = ("GPU: `seqlab bench --device cuda` (CuPy against PyTorch CUDA eager) has its own sections, "
                 "\"Benchmarks: seqlab vs PyTorch on a GPU\".")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("names", nargs="*", metavar="NAME",
                   help="benchmarks to run: encoder-train gpt-train bert-infer gpt-generate attention-long gemm "
                        "(default: all)")
    p.add_argument("--profile", action="store_true", help="print seqlab's time per op type (and torch's ops)")
    p.add_argument("--threads", default=None, metavar="N[,N...]",
                   help="threads for both libraries; several counts run everything once per count "
                        "(default: what NumPy's BLAS uses; CPU only)")
    p.add_argument("--device", choices=("cpu", "cuda"), default="cpu",
                   help="cpu: NumPy against PyTorch CPU eager (default); cuda: CuPy against PyTorch CUDA eager "
                        "on a GPU (encoder-train and gpt-train)")
    p.add_argument("--size", choices=("default", "large"), default="default",
                   help="model sizes of encoder-train and gpt-train: default, or large (GPT-2 small: 12 layers, "
                        "768 dims, block 1024, vocab 50304; encoder d 768, 12 layers, seq 512) for a GPU")
    p.add_argument("--repeats", type=int, default=None, metavar="N",
                   help="alternating rounds per benchmark (default 7; 2 for attention-long)")
    p.add_argument("--no-memory", action="store_true",
                   help="skip the peak-memory measurement of the model benchmarks (three fresh processes per "
                        "library and benchmark, about half a minute each benchmark)")
    p.add_argument("--steps", type=int_at_least(1), default=None, metavar="N",
                   help="steps under the profiler (--profile; default 3)")
    p.add_argument("--clock", choices=("wall", "cpu"), default=None,
                   help="--profile's clock: wall time (the default), or this thread's CPU time (steadier on a busy machine; "
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
    from seqlab.cli.main import UsageError

    if text is None:
        return [None]
    try:
        counts = [int(t) for t in text.split(",") if t.strip()]
    except ValueError:
        raise UsageError(f"--threads takes integers separated by commas, got {text!r}") from None
    if not counts or min(counts) < 1:
        raise UsageError(f"--threads must be >= 1, got {text!r}")
    check_threads(max(counts), "--threads")
    return counts


def _read_record(path: Path, option: str) -> dict:
    """A `seqlab bench --json` file, or one line that names it and what is wrong with it (exit 1)."""
    import json

    from seqlab.errors import DataError

    if path.is_dir():
        raise DataError(f"{option} {path} is a folder, not a --json file")
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise DataError(f"{option} {path} does not exist") from None
    except (OSError, UnicodeDecodeError) as e:
        raise DataError(f"{option} {path} cannot be read: {getattr(e, 'strerror', None) or e}") from None
    try:
        saved = json.loads(text)
    except json.JSONDecodeError as e:
        raise DataError(f"{option} {path} is not valid JSON: {e.msg} at line {e.lineno}, column {e.colno}") from None
    if not isinstance(saved, dict) or not isinstance(saved.get("runs"), dict):
        raise DataError(f"{option} {path} is not a `seqlab bench --json` record: it has no \"runs\"")
    return saved


def _bad_record(path: Path, option: str, e: Exception):
    from seqlab.errors import DataError

    what = f"{type(e).__name__} {e}" if isinstance(e, KeyError) else str(e).strip().splitlines()[0]
    return DataError(f"{option} {path} is not a `seqlab bench --json` record: {what}")


def _check_writable(path: Path, option: str) -> None:
    """Fail before any benchmark runs when an output file could not be written at the end."""
    from seqlab.errors import SeqlabError

    if path.is_dir():
        raise SeqlabError(f"{option} {path} is a folder, not a file")
    if path.exists():
        if not os.access(path, os.W_OK):
            raise SeqlabError(f"cannot write {option} {path}: the file is not writable")
        return
    parent = path.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir():
        raise SeqlabError(f"cannot write {option} {path}: {parent} is a file, not a folder")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise SeqlabError(f"cannot write {option} {path}: the folder {parent} is not writable")


def run(args) -> int:
    try:
        import torch  # noqa: F401
    except ImportError:
        raise ValueError("seqlab bench compares against PyTorch: install torch (pip install 'seqlab[test]')") from None
    from seqlab.bench import NAMES, profile_target
    from seqlab.bench import run as run_one
    from seqlab.bench.harness import blas_env_prefix, load_average, machine_info, set_threads

    from seqlab.bench.device import CUDA_NAMES
    from seqlab.bench.runner import SIZED
    from seqlab.cli.main import UsageError

    device, size = getattr(args, "device", "cpu"), getattr(args, "size", "default")
    names = args.names or list(CUDA_NAMES if device == "cuda" else SIZED if size != "default" else NAMES)
    if args.profile and not args.names:
        names = [n for n in names if n != "gemm"]  # one product has no ops to profile
    bad = [n for n in names if n not in NAMES]
    if bad:
        raise UsageError(f"unknown benchmark {bad[0]!r}; choose from {', '.join(NAMES)}")
    counts = _threads(args.threads)
    if args.repeats is not None and args.repeats < 1:
        raise UsageError(f"--repeats must be >= 1, got {args.repeats}")
    if not args.profile and (args.steps is not None or args.clock is not None):
        raise UsageError(f"{'--steps' if args.steps is not None else '--clock'} applies to --profile only")
    steps, clock = args.steps or 3, args.clock or "wall"
    if args.from_json is None:
        _check_device(args, device, size, names, UsageError)
    # every file named on the line, before anything runs or prints
    saved = _read_record(args.from_json, "--from-json") if args.from_json is not None else None
    if args.baseline is not None:
        from seqlab.bench.report import _baseline

        _read_record(args.baseline, "--baseline")
        try:
            _baseline(args.baseline)
        except (KeyError, TypeError, ValueError, AttributeError, ZeroDivisionError) as e:
            raise _bad_record(args.baseline, "--baseline", e) from None
    for option, path in (("--results", args.results), ("--json", args.json)):
        if path is not None:
            _check_writable(path, option)

    if args.profile:
        from seqlab.bench.profiling import profile_step, torch_op_table

        for n in counts:
            got = set_threads(n)
            for name in names:
                step, torch_fn = profile_target(name, data_dir=args.data_dir)
                prof, per = profile_step(step, steps=steps, clock=clock)
                print(f"== {name}: seqlab, {clock} time per op type (per step, "
                      f"{got} thread{'s' if got != 1 else ''}) ==")
                print(prof.table(per=per))
                if torch_fn is not None:
                    print(f"\n== {name}: torch.profiler, self CPU time over {steps} steps ==")
                    print(torch_op_table(torch_fn, steps=steps))
        return 0

    if args.from_json is not None:
        from seqlab.bench.report import from_json, tables

        try:
            results, info, command = from_json(saved)
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            raise _bad_record(args.from_json, "--from-json", e) from None
        if info.get("device") == "cuda":
            for rs in results.values():
                for r in rs:
                    print(r.markdown() + "\n")
        else:  # what --results writes: a heading per thread count, the targets, the baseline's 'before' column
            print("\n".join(tables(results, args.baseline)).rstrip() + "\n")
        _write_results(args, results, info, command, saved.get("device", "cpu"), saved.get("size", "default"))
        return 0

    command = blas_env_prefix() + ("seqlab bench " + " ".join(sys.argv[sys.argv.index("bench") + 1:])
                                   if "bench" in sys.argv else "seqlab bench")
    results, info = {}, None
    if device == "cpu" and size == "large":
        print("note: --size large builds the GPU sizes (GPT-2 small, a 12-layer encoder at sequence 512); on the "
              "CPU each benchmark takes many minutes and gigabytes of memory", file=sys.stderr, flush=True)
    for n in counts:
        got = set_threads(n)
        info = machine_info(got)
        if device == "cuda":
            from seqlab.bench.device import gpu_info

            info.update(device="cuda", **gpu_info())
        out = results[got] = []
        for name in names:
            where = (f"{got} thread{'s' if got != 1 else ''}, products on {info['seqlab_blas']}, row kernels on "
                     f"{info['seqlab_kernels']}" if device == "cpu"
                     else info["gpu"])
            sized = f"size {size}, " if size != "default" or device != "cpu" else ""
            print(f"running {name} ({sized}{where}, load {load_average()}) ...", file=sys.stderr, flush=True)
            kwargs = {"data_dir": args.data_dir, "threads": got, "device": device, "size": size,
                      "measure_memory": not args.no_memory}
            if args.repeats is not None:
                kwargs["rounds"] = args.repeats
            r = run_one(name, **kwargs)
            out.append(r)
            print(r.markdown() + "\n", flush=True)
            if args.json:  # after every benchmark, so a run cut short keeps what it finished
                _save_json(args.json, results, info, command, device, size)
    _write_results(args, results, info, command, device, size)
    return 0


def _save_json(path: Path, results: dict, info: dict, command: str, device: str, size: str) -> None:
    import json

    from seqlab.bench.report import to_json

    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(to_json(results, info, command, device, size), indent=1, default=str) + "\n")


def _check_device(args, device: str, size: str, names: list[str], usage_error) -> None:
    """One-line usage errors (exit 2) for what --device cuda and --size large cannot do, then whether
    this machine can run CUDA at all."""
    from seqlab.bench.runner import check

    for name in names:
        try:
            check(name, device, size)
        except ValueError as e:
            raise usage_error(str(e)) from None
    if args.profile and size != "default":
        raise usage_error("--profile profiles the default sizes; leave out --size")
    if args.profile and "gemm" in names:
        raise usage_error("--profile needs a model benchmark (encoder-train, gpt-train, bert-infer, gpt-generate, "
                          "attention-long), got 'gemm'")
    if device == "cpu":
        return
    if args.threads is not None:
        raise usage_error("--threads sets CPU threads and has no meaning with --device cuda; leave it out")
    if args.profile:
        raise usage_error("--profile times seqlab's CPU ops; it does not run with --device cuda")
    if args.baseline is not None:
        raise usage_error("--baseline compares CPU runs; it does not apply with --device cuda")
    from seqlab.bench.device import cuda_problem

    problem = cuda_problem()
    if problem:
        raise usage_error(problem)


def _write_results(args, results: dict, info: dict, command: str, device: str = "cpu",
                   size: str = "default") -> None:
    if args.results:
        from seqlab.bench.harness import write_section
        from seqlab.bench.report import GPU_HEADING, heading, section

        title = heading(device, size)
        seen = args.results.exists() and f"## {GPU_HEADING}" in args.results.read_text()
        note = None if device != "cpu" else GPU_SEEN_NOTE if seen else GPU_NOTE
        write_section(args.results, title, section(results, info, command, args.baseline, note,
                                                   source=args.from_json or args.json))
        print(f"wrote the '{title}' section of {args.results}", file=sys.stderr)
