"""In-place changes to arrays that a backward will read: caught, as torch's version counters catch them.

`Tensor.zero_`, `fill_` and `copy_` change a tensor's array in place. If an
op saved that array (or a view of the same memory) for its backward, the
backward would compute its gradient from the new values: a wrong gradient,
and no error. torch counts each tensor's in-place changes and refuses such a
backward; so does seqlab, for what ops save with `save_for_backward`.

Kept cheap for the usual case, where nothing is changed in place between a
forward and its backward: every in-place change ticks one process-wide clock
and notes, for the memory it changed (the array at the root of its views),
the tick and how many changes it has had. An op notes the clock when it
saves; its backward looks further only if the clock has moved since, and then
only at the arrays it saved. Arrays changed through `.data` directly (as the
optimizers and `seqlab.nn.init` do) are not counted, like torch's `.data`.
"""
from __future__ import annotations

import weakref

_clock = 0  # ticks once per in-place change
_changed: dict[int, tuple] = {}  # id(root array) -> (weak reference to it, changes so far, tick of the last)


def _root(arr):
    """The array that owns the memory `arr` views (itself when it owns it)."""
    while True:
        base = getattr(arr, "base", None)
        if base is None or not hasattr(base, "shape"):
            return arr
        arr = base


def _forget(key: int, ref) -> None:
    entry = _changed.get(key)
    if entry is not None and entry[0] is ref:
        del _changed[key]


def bump(arr) -> None:
    """Record an in-place change of `arr`'s memory."""
    global _clock
    root = _root(arr)
    key = id(root)
    entry = _changed.get(key)
    changes = entry[1] + 1 if entry is not None and entry[0]() is root else 1
    try:
        ref = weakref.ref(root, lambda r, k=key: _forget(k, r))
    except TypeError:  # an array type without weak references: not tracked
        return
    _clock += 1
    _changed[key] = (ref, changes, _clock)


def check(fn, arrays=None, saved_at=None) -> None:
    """RuntimeError if an array `fn` saved for backward was changed in place after `fn` saved it.
    `arrays`, `saved_at`: other arrays fn keeps, and the clock when it kept them (what a backward_graph
    reads besides `saved`)."""
    if arrays is None:
        arrays, saved_at = fn.saved, getattr(fn, "_saved_clock", None)
    if saved_at is None or saved_at == _clock:
        return
    for i, arr in enumerate(arrays):
        if not hasattr(arr, "shape"):
            continue
        root = _root(arr)
        entry = _changed.get(id(root))
        if entry is not None and entry[0]() is root and entry[2] > saved_at:
            raise RuntimeError(
                f"an array that {type(fn).__name__} saved for backward (its saved input {i}, shape "
                f"{tuple(arr.shape)}) was changed in place (zero_, fill_, copy_, add_ and the like, or +=, "
                f"-=, *=, /= on a tensor outside the graph) after the forward pass "
                f"({entry[1]} change{'s' if entry[1] != 1 else ''} so far): the gradient would use the new "
                f"values. Change a clone() instead, or make the change after backward()")
