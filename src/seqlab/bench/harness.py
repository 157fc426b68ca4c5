"""The timing harness of the seqlab-vs-PyTorch benchmarks (from benchmarks/common.py).

Fair by construction: both libraries get the same number of threads (torch
through `torch.set_num_threads`, NumPy's OpenBLAS through its own C setter,
found with ctypes, so threadpoolctl is not needed), the same inputs, and runs
that alternate seqlab / torch several times in one process so machine noise
hits both; medians are reported.
"""
from __future__ import annotations

import datetime
import os
import platform
import re
import shlex
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np

from seqlab import batch_threads
from seqlab import kernels as seqlab_kernels
from seqlab import mkl as seqlab_mkl
from seqlab.blas import get_blas_threads, loaded_blas_libraries, openblas_kernels, set_blas_threads


def blas_threads() -> int | None:
    """How many threads NumPy's BLAS uses (None when it cannot be read)."""
    return get_blas_threads()


def set_threads(n: int | None = None) -> int:
    """Give NumPy's BLAS and torch the same thread count `n` (default: what the BLAS uses now).

    Returns the count in force. NumPy's element-wise loops are single-threaded
    whatever this says; torch's are not, which is part of what is compared.
    """
    import torch

    if n is not None:
        if n < 1:
            raise ValueError(f"threads must be >= 1, got {n}")
        set_blas_threads(n)
    got = blas_threads()
    if got is None:
        got = n or int(os.environ.get("OMP_NUM_THREADS") or os.environ.get("OPENBLAS_NUM_THREADS")
                       or os.cpu_count() or 1)
    torch.set_num_threads(got)
    return got


def match_threads() -> int:
    """Give torch the thread count of NumPy's BLAS; returns it (benchmarks/common.py's name)."""
    return set_threads(None)


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def load_average() -> str:
    """The 1-minute load average, as text."""
    try:
        return f"{os.getloadavg()[0]:.1f}"
    except OSError:  # pragma: no cover - not on Linux/macOS
        return "n/a"


# read by OpenBLAS when it loads: they pick its kernels and blocking, and so the products' speed
BLAS_ENV = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")


def blas_env_prefix(environ=None) -> str:
    """'OPENBLAS_CORETYPE=Haswell OPENBLAS_L2_SIZE=512 ' for those set in `environ` (this process's
    environment by default; '' when none is), put before a recorded command so that it says what the run
    ran under."""
    environ = os.environ if environ is None else environ
    return "".join(f"{name}={shlex.quote(environ[name])} " for name in BLAS_ENV if environ.get(name))


def numpy_blas_text(info: dict) -> str:
    """NumPy's BLAS library, with the OpenBLAS kernels that ran where the record has them."""
    kernels = info.get("numpy_blas_kernels")
    return f"{info['numpy_blas']}: {kernels}" if kernels else info["numpy_blas"]


def machine_info(threads: int) -> dict:
    import torch

    blas = loaded_blas_libraries()
    return {
        "cpu": cpu_model(),
        "cores": os.cpu_count(),
        "threads": threads,
        "python": platform.python_version(),
        "numpy": np.__version__,
        "numpy_blas": Path(blas[0]).name if blas else "unknown",
        "numpy_blas_kernels": openblas_kernels(),  # "OpenBLAS 0.3.31, SkylakeX kernels" (None: not OpenBLAS)
        "seqlab_blas": seqlab_mkl.describe(),  # where seqlab's float32 products go (seqlab.mkl)
        "seqlab_kernels": seqlab_kernels.describe(),  # LayerNorm's, the softmax's, dropout's row passes
        "seqlab_batch_threads": batch_threads.enabled(),  # inference may split a batch across threads
        "torch": torch.__version__,
        "date": datetime.date.today().isoformat(),
    }


@dataclass
class Timing:
    """Median wall seconds per call, and median process CPU seconds per call (steadier on a busy
    machine: time spent waiting for a core is not counted; with several threads it adds them up)."""

    seqlab_s: float
    torch_s: float
    seqlab_all: list = field(default_factory=list)
    torch_all: list = field(default_factory=list)
    seqlab_cpu_s: float = float("nan")
    torch_cpu_s: float = float("nan")

    @property
    def ratio(self) -> float:
        return self.seqlab_s / self.torch_s

    @property
    def cpu_ratio(self) -> float:
        return self.seqlab_cpu_s / self.torch_cpu_s


def _clock(fn: Callable[[], None], inner: int, cpu: list | None = None) -> float:
    start, c0 = time.perf_counter(), time.process_time()
    for _ in range(inner):
        fn()
    if cpu is not None:
        cpu.append((time.process_time() - c0) / inner)
    return (time.perf_counter() - start) / inner


def median_wall_ms(fn: Callable[[], object], calls: int) -> float:
    """The median wall time of `calls` calls of fn, in ms, each timed alone."""
    times = []
    for _ in range(calls):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def synced(fn: Callable[[], object], sync: Callable[[], None] | None) -> Callable[[], None]:
    """`fn` followed by `sync()` (a device synchronize), so a timer around it measures the GPU's work,
    not only the launch of its kernels; `fn` itself when `sync` is None (CPU)."""
    if sync is None:
        return fn

    def call() -> None:
        fn()
        sync()

    return call


def compare(fn_seqlab: Callable[[], None], fn_torch: Callable[[], None], rounds: int = 7, warmup: int = 2,
            min_time: float = 0.05, settle: float = 0.2, wake: bool = True,
            sync_seqlab: Callable[[], None] | None = None, sync_torch: Callable[[], None] | None = None) -> Timing:
    """Median seconds per call of each, measured in alternating rounds.

    Each round times `inner` calls back to back, with `inner` chosen so a
    round lasts at least `min_time` seconds for the slower of the two.
    Between the two libraries the harness sleeps `settle` seconds: OpenBLAS's
    and OpenMP's worker threads spin for a while after a call and would
    otherwise steal cores from the other library's next run; with `wake`,
    one untimed call after the pause wakes this library's threads again.
    The first library of a round alternates. `sync_seqlab` / `sync_torch`
    (GPU runs) are called after every call of that library's function, timed
    or not, so each timed call ends with its device synchronized.
    """
    fn_seqlab, fn_torch = synced(fn_seqlab, sync_seqlab), synced(fn_torch, sync_torch)
    for _ in range(warmup):
        fn_seqlab()
        fn_torch()
    once = max(_clock(fn_seqlab, 1), _clock(fn_torch, 1), 1e-6)
    inner = max(1, int(min_time / once))
    s_times, t_times, s_cpu, t_cpu = [], [], [], []
    for r in range(rounds):
        order = ((s_times, s_cpu, fn_seqlab), (t_times, t_cpu, fn_torch))
        for times, cpu, fn in (order if r % 2 == 0 else order[::-1]):
            time.sleep(settle)
            if wake:
                fn()
            times.append(_clock(fn, inner, cpu))
    return Timing(statistics.median(s_times), statistics.median(t_times), s_times, t_times,
                  statistics.median(s_cpu), statistics.median(t_cpu))


def markdown_table(headers: list[str], rows: list[list]) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def write_section(path: Path, heading: str, body: str) -> None:
    """Replace (or append) the `## heading` section of a markdown file with `body`, and rebuild the file's
    table of contents (`with_contents`) when it has one."""
    path = Path(path)
    text = path.read_text() if path.exists() else "# Results\n\nEvery figure with its command, machine and date.\n"
    block = f"## {heading}\n\n{body.rstrip()}\n"
    pattern = re.compile(rf"^## {re.escape(heading)}\n.*?(?=^## |\Z)", re.S | re.M)
    if pattern.search(text):
        text = pattern.sub(lambda _: block + "\n", text).rstrip() + "\n"
    else:
        text = text.rstrip() + "\n\n" + block
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(with_contents(text))


# A results page's table of contents lives between these two lines; `with_contents` rebuilds what is between.
CONTENTS_BEGIN = "<!-- contents: rebuilt by python benchmarks/results_contents.py and by every --results run -->"
CONTENTS_END = "<!-- end of contents -->"
_DATED = re.compile(r"\(\d{4}-\d{2}-\d{2}\b")  # "(2026-12-07, AMD EPYC)": a dated note, not a standing result
_FENCE = re.compile(r"^```.*?^```", re.S | re.M)


def heading_id(heading: str) -> str:
    """GitHub's id for a heading: lower case; all but letters, digits, spaces, '-' and '_' dropped; spaces '-'."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def contents(text: str) -> str:
    """The table of contents of a results page, from its `##` and `###` headings (code blocks skipped).

    Two lists: the results as they stand (the undated `##` sections, each with
    its `###` parts), then the dated notes (a `##` heading holding a date,
    e.g. "(2026-12-07, AMD EPYC)") in the page's order, the newest day first.
    A repeated heading links to GitHub's numbered id for it ("-1", "-2").
    """
    seen: dict[str, int] = {}
    standing: list[str] = []
    dated: list[str] = []
    in_standing = False
    for line in _FENCE.sub("", text).splitlines():
        m = re.match(r"^(#{1,6}) +(.+?)\s*#*\s*$", line)
        if not m:
            continue
        level, title = m.groups()
        base = heading_id(title)
        n = seen.get(base, 0)
        seen[base] = n + 1
        link = f"[{title}](#{base if n == 0 else f'{base}-{n}'})"
        if level == "##":
            in_standing = not _DATED.search(title)
            (standing if in_standing else dated).append(f"- {link}")
        elif in_standing:
            standing.append(f"  - {link}")
    parts = ["**Where things stand**", "", *standing]
    if dated:
        parts += ["", "**Dated notes**, newest day first: what each change measured, what was tried and left", "",
                  *dated]
    return "\n".join(parts)


def with_contents(text: str) -> str:
    """`text` with the lines between `CONTENTS_BEGIN` and `CONTENTS_END` replaced by its `contents`;
    unchanged when it has no such block."""
    start, end = text.find(CONTENTS_BEGIN), text.find(CONTENTS_END)
    if start < 0 or end < start:
        return text
    head = text[:start + len(CONTENTS_BEGIN)]
    return f"{head}\n\n{contents(head + text[end:])}\n\n{text[end:]}"
