"""An op-level profiler: wall time per primitive op type, forward and backward.

    with OpProfiler() as prof:
        loss = model(x).loss
        loss.backward()
    print(prof.table())

While active it replaces `Function.apply_with_fn` (which `Function.apply`
calls; `apply` itself on an engine without it) with a timed version, and gives
every recorded op (one that will take part in backward) a timed `backward`
as an instance attribute, so the engine calls the timed one. It also times
the drawing of attention's dropout masks (`seqlab.functional._keep_mask`,
outside any op), shown as the op "DropoutMask"; plain dropout makes its mask
inside its own op (`Dropout`), from its key. Nothing is patched when no
profiler is active: the engine pays nothing for it.

Forward time of an op includes `apply`'s own overhead (unwrapping the
inputs, wrapping the output); backward time is the op's `backward` call.
What no op accounts for (Python glue in modules, the engine's bookkeeping,
optimizer updates) shows up as the difference from a phase's wall time,
which `phase()` measures.
"""
from __future__ import annotations

import time
import weakref
from collections import defaultdict
from contextlib import contextmanager
from dataclasses import dataclass

from seqlab.autograd.function import Function

_ACTIVE: list["OpProfiler"] = []


@dataclass
class OpStat:
    calls: int = 0
    seconds: float = 0.0


# the one classmethod every op goes through
_CORE = "apply_with_fn" if "apply_with_fn" in Function.__dict__ else "apply"
_ORIGINAL = Function.__dict__[_CORE]


def _timed_keep_mask(original):
    """`functional._keep_mask` timed as the forward of an op named DropoutMask."""
    def keep_mask(*args, **kwargs):
        prof = _ACTIVE[-1]
        start = prof.clock()
        mask = original(*args, **kwargs)
        prof._add("DropoutMask", "forward", prof.clock() - start)
        return mask

    keep_mask.original = original
    return keep_mask


def _timed_apply(cls, *inputs, **params):
    prof = _ACTIVE[-1]
    clock = prof.clock
    start = clock()
    result = _ORIGINAL.__func__(cls, *inputs, **params)
    prof._add(cls.__name__, "forward", clock() - start)
    out = result[0] if isinstance(result, tuple) else result
    fn = getattr(out, "_ctx", None)
    if isinstance(fn, Function) and "backward" not in fn.__dict__:
        # the timed backward lives on `fn` itself, so it must not hold `fn` strongly: a cycle
        # fn -> backward -> fn would keep every op's saved arrays alive until the cyclic GC ran,
        # and the profiled steps would pay page faults for memory a plain step reuses
        fn_ref, inner = weakref.ref(fn), type(fn).backward
        name = cls.__name__

        def backward(grad):
            t0 = clock()
            result = inner(fn_ref(), grad)
            prof._add(name, "backward", clock() - t0)
            return result

        fn.backward = backward
    return result


class OpProfiler:
    """Context manager that times every `Function` call by op type and phase.

    `stats` maps (op name, 'forward' | 'backward') to an `OpStat`;
    `phases` maps a phase name given to `phase()` to its wall seconds.
    Profilers do not nest (the innermost one records).

    `clock`: "wall" (time.perf_counter, the default) or "cpu" (time.thread_time:
    this thread's CPU time, steadier on a busy machine, but blind to work done
    by other threads, e.g. a multi-threaded BLAS).
    """

    def __init__(self, clock: str = "wall") -> None:
        if clock not in ("wall", "cpu"):
            raise ValueError(f"clock must be 'wall' or 'cpu', got {clock!r}")
        self.clock = time.perf_counter if clock == "wall" else time.thread_time
        self.stats: dict[tuple[str, str], OpStat] = defaultdict(OpStat)
        self.phases: dict[str, float] = defaultdict(float)
        self.steps = 0

    def _add(self, name: str, kind: str, seconds: float) -> None:
        s = self.stats[(name, kind)]
        s.calls += 1
        s.seconds += seconds

    def __enter__(self) -> "OpProfiler":
        from seqlab import functional  # here: functional imports the ops, which import this module's package

        if not _ACTIVE:
            functional._keep_mask = _timed_keep_mask(functional._keep_mask)
        _ACTIVE.append(self)
        setattr(Function, _CORE, classmethod(_timed_apply))
        return self

    def __exit__(self, *exc) -> bool:
        from seqlab import functional

        _ACTIVE.remove(self)
        if not _ACTIVE:
            setattr(Function, _CORE, _ORIGINAL)
            functional._keep_mask = functional._keep_mask.original
        return False

    @contextmanager
    def phase(self, name: str):
        """Time a block (e.g. 'forward', 'backward', 'optimizer') as a whole."""
        start = self.clock()
        try:
            yield
        finally:
            self.phases[name] += self.clock() - start

    def op_seconds(self, kind: str | None = None) -> float:
        """Total seconds inside ops (of one kind: 'forward' or 'backward', or both)."""
        return sum(s.seconds for (_, k), s in self.stats.items() if kind is None or k == kind)

    def rows(self) -> list[tuple[str, str, int, float]]:
        """(op, kind, calls, seconds), slowest first."""
        rows = [(name, kind, s.calls, s.seconds) for (name, kind), s in self.stats.items()]
        return sorted(rows, key=lambda r: -r[3])

    def table(self, per: int = 1, top: int | None = None) -> str:
        """A text table of time per op type; `per` divides calls and times (e.g. by the number of steps)."""
        total = sum(self.phases.values()) or self.op_seconds()
        lines = [f"{'op':<22}{'phase':<10}{'calls':>8}{'ms':>10}{'%':>7}"]
        for name, kind, calls, sec in self.rows()[:top]:
            pct = 100 * sec / total if total else 0.0
            lines.append(f"{name:<22}{kind:<10}{calls / per:>8.0f}{1e3 * sec / per:>10.2f}{pct:>7.1f}")
        if self.phases:
            lines.append("")
            for ph, sec in self.phases.items():
                inside = self.op_seconds(ph) if ph in ("forward", "backward") else 0.0
                extra = f"  (ops {1e3 * inside / per:.2f} ms, other {1e3 * (sec - inside) / per:.2f} ms)" \
                    if ph in ("forward", "backward") else ""
                lines.append(f"{ph:<22}{'':<10}{'':>8}{1e3 * sec / per:>10.2f}{100 * sec / total:>7.1f}{extra}")
        return "\n".join(lines)
