"""Process-wide switches that torch scripts set at the top: threads, matmul precision, `torch.compile`,
`torch.backends`.

    seqlab.set_num_threads(2)                     # NumPy's BLAS and seqlab's compiled kernels
    seqlab.backends.cuda.matmul.allow_tf32 = True  # accepted; seqlab's products stay float32
    model = seqlab.compile(model)                  # the same model: seqlab has no compiler
"""
from __future__ import annotations

import types
from typing import Any

_PRECISIONS = ("highest", "high", "medium")
_matmul_precision = "highest"


def set_num_threads(n: int) -> None:
    """Run NumPy's BLAS and seqlab's compiled kernels on `n` threads (torch's intra-op threads)."""
    from seqlab import batch_threads
    from seqlab.blas import set_blas_threads

    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"set_num_threads takes an int >= 1, got {n!r}")
    with batch_threads.settled():  # not while a batch split on another thread holds its own counts
        set_blas_threads(n)


def get_num_threads() -> int:
    """The thread count `set_num_threads` set (else NumPy's BLAS count)."""
    from seqlab.kernels import threads

    return threads()


def set_float32_matmul_precision(precision: str) -> None:
    """torch's switch to TF32/bfloat16 products. Remembered and answered by the getter; seqlab's products stay
    full float32 ("highest") whatever it says."""
    global _matmul_precision
    if precision not in _PRECISIONS:
        raise RuntimeError(f"Invalid precision {precision!r}: expected one of {', '.join(_PRECISIONS)}")
    _matmul_precision = precision


def get_float32_matmul_precision() -> str:
    return _matmul_precision


def compile(model: Any = None, **options: Any) -> Any:  # noqa: A001  (torch's name)
    """`model` (a Module or function) unchanged: seqlab has no compiler, and its eager code is what runs.
    As a decorator too (``@seqlab.compile`` or ``@seqlab.compile(mode="max-autotune")``)."""
    if model is None:
        return lambda fn: fn
    return model


class _Flags(types.SimpleNamespace):
    """A namespace of torch's flags: reads and writes work, and change nothing in seqlab."""


backends = types.SimpleNamespace(
    cuda=types.SimpleNamespace(matmul=_Flags(allow_tf32=False, allow_fp16_reduced_precision_reduction=True,
                                             allow_bf16_reduced_precision_reduction=True),
                               ),
    cudnn=_Flags(allow_tf32=True, benchmark=False, deterministic=False, enabled=True,
                 is_available=lambda: False),
    mps=types.SimpleNamespace(is_available=lambda: False, is_built=lambda: False),
)


class MissingDtype:
    """A dtype name torch has and NumPy lacks (``seqlab.bfloat16``): naming it works (a script's table of
    dtypes loads), using it is a TypeError that says so."""

    def __init__(self, name: str):
        self.name = name

    @property
    def dtype(self):  # NumPy asks for this when it reads `dtype=`
        raise TypeError(f"seqlab has no {self.name} (NumPy lacks it): use float32 (the default) or float64; "
                        f"seqlab does not compute in half precision")

    def __repr__(self) -> str:
        return f"seqlab.{self.name}"
