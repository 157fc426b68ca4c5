"""Errors of the functions in tensor_extra.py, tensor_extra_stats.py and toplevel_extra.py that are both
seqlab's class and torch's.

seqlab raises a TypeError for a dtype and a ValueError for a shape or argument value (DESIGN.md); torch raises
RuntimeError for most of these (NotImplementedError, a RuntimeError, for an op that lacks a dtype's kernel). Each
class below is both, so `except TypeError` and `except RuntimeError` (the torch user's habit) catch it.
"""
from __future__ import annotations

from seqlab.errors import SeqlabError


class DtypeError(SeqlabError, TypeError, RuntimeError):
    """A tensor's dtype that the op does not take (torch: RuntimeError)."""


class DtypeNotImplementedError(DtypeError, NotImplementedError):
    """An op that has no kernel for the dtype (torch: NotImplementedError, '"lshift_cpu" not implemented for
    'Float'')."""


class ArgumentError(SeqlabError, ValueError, RuntimeError):
    """A shape or an argument's value that the op refuses (torch: RuntimeError)."""


def not_implemented(name: str, dtype, takes: str = "bool and integer") -> DtypeNotImplementedError:
    return DtypeNotImplementedError(f"{name}() is not implemented for {dtype} tensors (as torch); it takes {takes} "
                                    f"tensors")


def must_be_tensor(name: str, arg: str, value, position: int = 2) -> TypeError:
    return TypeError(f"{name}(): argument '{arg}' (position {position}) must be Tensor, not {type(value).__name__}")
