"""One seeded source of randomness for init, dropout and shuffling.

`seqlab.manual_seed(n)` reseeds it; code that wants its own stream passes an
explicit `numpy.random.Generator`.
"""
from __future__ import annotations

import numpy as np

_generator = np.random.default_rng(0)
_gpu_generator = None


def manual_seed(seed: int) -> np.random.Generator:
    """Make initialisation, dropout and data order reproducible."""
    global _generator, _gpu_generator
    if not isinstance(seed, (int, np.integer)) or isinstance(seed, bool):
        raise TypeError(f"seed must be an int, got {type(seed).__name__}")
    _generator = np.random.default_rng(int(seed))
    _gpu_generator = None
    return _generator


def default_generator() -> np.random.Generator:
    return _generator


def get_state() -> dict:
    """The generator's state (JSON-serialisable), for checkpoints."""
    return _generator.bit_generator.state


def set_state(state: dict) -> None:
    _generator.bit_generator.state = state


def uniform_like(xp, shape, dtype, generator=None):
    """Uniform [0, 1) numbers of `shape` on the array module `xp`."""
    if xp is np:
        gen = generator or _generator
        return gen.random(shape, dtype=np.float32 if dtype == np.float32 else np.float64)
    global _gpu_generator  # pragma: no cover - needs a GPU
    if _gpu_generator is None:
        _gpu_generator = xp.random.default_rng(int(_generator.integers(2**63)))
    return _gpu_generator.random(shape, dtype=dtype)
