"""torch's NumPy-style argument names on the reductions: ``keepdims`` for ``keepdim`` and ``axis`` for ``dim``.

torch's argument parser takes both spellings on every function with a
``keepdim`` argument, so d2l's ``A.sum(axis=1, keepdims=True)`` runs there.
`accept_numpy_names` gives seqlab's Tensor methods and top-level functions the
same: each one with a ``keepdim`` parameter is wrapped to read ``keepdims=``
as ``keepdim=`` (and, where it has no ``axis`` parameter of its own,
``axis=`` as ``dim=``); passing a name and its alias together is a TypeError,
as torch. `inspect.signature` still shows the function's own parameters.
"""
from __future__ import annotations

import functools
import inspect
from typing import Any, Callable

ALIASES = {"keepdims": "keepdim", "axis": "dim"}  # the NumPy name -> torch's


def _wrap(fn: Callable, aliases: dict[str, str]) -> Callable:
    @functools.wraps(fn)
    def with_numpy_names(*args, **kwargs):
        if kwargs:
            for alias, name in aliases.items():
                if alias in kwargs:
                    if name in kwargs:
                        raise TypeError(f"{fn.__name__}() got both {name}={kwargs[name]!r} and its alias "
                                        f"{alias}={kwargs[alias]!r}; pass one")
                    kwargs[name] = kwargs.pop(alias)
        return fn(*args, **kwargs)

    with_numpy_names.numpy_names = tuple(aliases)  # type: ignore[attr-defined]
    return with_numpy_names


def numpy_names_for(fn: Any) -> Callable | None:
    """`fn` wrapped to take the NumPy names its signature lacks; None when it needs no wrapping (no
    ``keepdim`` parameter, not a plain function, or wrapped already)."""
    if not inspect.isfunction(fn) or hasattr(fn, "numpy_names") or "keepdim" not in fn.__code__.co_varnames:
        return None  # (the last test spares inspect.signature for the many functions without keepdim)
    params = inspect.signature(fn).parameters
    if "keepdim" not in params or any(p.kind is p.VAR_KEYWORD for p in params.values()):
        return None
    aliases = {a: n for a, n in ALIASES.items() if a not in params and n in params}
    return _wrap(fn, aliases) if aliases else None


def accept_numpy_names(cls: type) -> None:
    """Wrap every method of `cls` (its own and its mixins') that takes ``keepdim``, on `cls` itself."""
    for name in dir(cls):
        fn = inspect.getattr_static(cls, name)
        wrapped = numpy_names_for(fn)
        if wrapped is not None:
            setattr(cls, name, wrapped)


def accept_numpy_names_in(namespace: dict[str, Any], names) -> None:
    """The same for the functions `names` of a module's namespace (seqlab.sum, seqlab.std, ...)."""
    for name in names:
        wrapped = numpy_names_for(namespace.get(name))
        if wrapped is not None:
            namespace[name] = wrapped
