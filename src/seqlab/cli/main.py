"""`seqlab` entry point: one line on stderr and a non-zero exit for every user error.

Each subcommand is a module `seqlab.cli.<name>` exposing
``add_arguments(parser)`` and ``run(args) -> int``; `COMMANDS` lists them.
Exit codes: 0 ok, 1 runtime error, 2 usage error, 130 interrupted, 141 stdout closed early
(``seqlab info RUN | head -1``: quietly, like a tool that SIGPIPE ends). ``--debug``
(anywhere on the line) or ``$SEQLAB_DEBUG`` also prints the traceback.
"""
from __future__ import annotations

import argparse
import importlib
import os
import sys
import traceback
from pathlib import Path

# name -> (module, one-line help)
COMMANDS = {
    "demo": ("seqlab.cli.demo", "the first-run tour"),
    "train": ("seqlab.cli.train", "train a task (seqlab train TASK --out RUN_DIR)"),
    "eval": ("seqlab.cli.evaluate", "evaluate a trained run on a data file"),
    "info": ("seqlab.cli.info", "describe a run folder"),
    "generate": ("seqlab.cli.generate", "generate text with a GPT or T5 model"),
    "embed": ("seqlab.cli.embed", "sentence embeddings with the pretrained MiniLM"),
    "attention": ("seqlab.cli.attention", "attention viewer: HTML, PNG and per-head statistics"),
    "experiment": ("seqlab.cli.experiment", "run one of the chapter's experiments"),
    "bench": ("seqlab.cli.bench", "benchmarks: seqlab vs PyTorch, side by side"),
}


class UsageError(Exception):
    """Bad command-line usage (exit code 2)."""


class _Parser(argparse.ArgumentParser):
    def __init__(self, *args, **kwargs):
        # `--res` is not taken for --resume, nor `--no-trunc` for --no-truncate: a typo is an error
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def error(self, message):  # one line, exit 2, no usage dump
        raise UsageError(message)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="seqlab", description="seqlab: the chapter's networks from scratch on NumPy")
    parser.add_argument("--debug", action="store_true", help="show tracebacks")
    parser.add_argument("--version", action="store_true",
                        help="print seqlab's version and the NumPy and BLAS it runs on, then exit")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for name, (module, help_) in COMMANDS.items():
        mod = importlib.import_module(module)
        p = sub.add_parser(name, help=help_, description=(mod.__doc__ or help_).strip().splitlines()[0])
        mod.add_arguments(p)
        # `seqlab CMD ... --debug` works as well as `seqlab --debug CMD ...`
        p.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help=argparse.SUPPRESS)
        p.set_defaults(_run=mod.run)
    parser.set_defaults(_commands=tuple(sub.choices))
    return parser


def version_line() -> str:
    """'seqlab 0.1.0 (Python 3.11.7, NumPy 2.4.6 on libscipy_openblas... (OpenBLAS 0.3.31, SkylakeX kernels);
    products on MKL 2026.2 (...); row kernels on Numba 0.68.1[; device cuda: CuPy 13.3.0 on 1 GPU])'."""
    import platform

    import numpy as np

    import seqlab
    from seqlab import backend, kernels, mkl
    from seqlab.blas import loaded_blas_libraries, openblas_kernels

    blas = [Path(p).name for p in loaded_blas_libraries()]  # NumPy's own first (MKL only if NumPy is built on it)
    chosen = openblas_kernels()  # "OpenBLAS 0.3.31, SkylakeX kernels"
    gpu = backend.describe()  # only where CuPy is installed
    return (f"seqlab {seqlab.__version__} (Python {platform.python_version()}, NumPy {np.__version__}"
            f"{' on ' + blas[0] if blas else ''}{f' ({chosen})' if chosen else ''}; products on {mkl.describe()}; "
            f"row kernels on {kernels.describe()}{f'; device cuda: {gpu}' if gpu else ''})")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    debug = "--debug" in argv or bool(os.environ.get("SEQLAB_DEBUG"))
    try:
        parser = build_parser()
        args = parser.parse_args(argv)
        if getattr(args, "version", False) and not getattr(args, "_run", None):
            print(version_line())
            return 0
        if not getattr(args, "_run", None):
            parser.print_help()
            raise UsageError("no command given; choose one of: " + ", ".join(args._commands))
        if sys.stderr.isatty():  # a person watching: say why the first run waits before its first step
            from seqlab import kernels

            kernels.announce_compiles(lambda line: print(line, file=sys.stderr, flush=True))
        code = int(args._run(args) or 0)
        sys.stdout.flush()  # here, so a reader that went away is caught below rather than at exit
        return code
    except BrokenPipeError:
        return _stdout_closed()
    except UsageError as e:
        if debug:
            traceback.print_exc()
        print(f"error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130
    except Exception as e:  # noqa: BLE001 - the CLI's promise: one line, no traceback
        if debug:  # the traceback first, then the same line and exit code as without --debug
            traceback.print_exc()
        from seqlab.errors import SeqlabError

        kind = "" if isinstance(e, (SeqlabError, ValueError, TypeError, OSError, IndexError)) \
            else f"{type(e).__name__}: "
        msg = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        print(f"error: {kind}{msg}", file=sys.stderr)
        return 1


def _stdout_closed() -> int:
    """The reader of stdout went away (`| head`): no message, and no second error when Python flushes
    stdout at exit (point it at devnull, as the Python docs' note on SIGPIPE does). 141 = 128 + SIGPIPE."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):  # no real file descriptor (a captured stdout)
        pass
    return 141


if __name__ == "__main__":  # python -m seqlab.cli.main: the imported module's main, so that its UsageError
    from seqlab.cli.main import main as _main  # is the one the subcommands raise (not __main__'s copy)

    raise SystemExit(_main())
