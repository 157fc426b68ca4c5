"""One seeded source of randomness for init, dropout and shuffling.

`seqlab.manual_seed(n)` reseeds it; code that wants its own stream passes an
explicit `numpy.random.Generator`.

Dropout's keep masks (`keep_mask`) take one 64-bit word from that generator
per mask and expand it with SplitMix64 (Steele, Lea and Flood, "Fast
splittable pseudorandom number generators", OOPSLA 2014): word j of a mask
is mix(key + (j + 1)·γ), γ = 0x9E3779B97F4A7C15, and each word gives two
32-bit draws (its low half, then its high half). Any word of the mask can be
computed on its own, so the compiled kernel (`seqlab.kernels.keep_mask`)
vectorises and splits it across threads and still gives the NumPy formula's
masks bitwise; drawing every bit from the generator itself, as before, cost
~2 ns a word and was 4-5% of a training step.
"""
from __future__ import annotations

import copy
import math

import numpy as np

_generator = np.random.default_rng(0)
_gpu_generator = None
_gpu_seed = None  # set by seqlab.cuda.manual_seed: the GPU stream's own seed


def check_seed(seed: object) -> int:
    """`seed` as an int, or the error a bad one deserves (NumPy's generators take no negative seeds)."""
    if not isinstance(seed, (int, np.integer)) or isinstance(seed, bool):
        raise TypeError(f"seed must be an int, got {type(seed).__name__}")
    if seed < 0:
        raise ValueError(f"seed must be >= 0, got {seed}")
    return int(seed)


def manual_seed(seed: int) -> np.random.Generator:
    """Make initialisation, dropout and data order reproducible."""
    global _generator, _gpu_generator, _gpu_seed
    _generator = np.random.default_rng(check_seed(seed))
    _gpu_generator, _gpu_seed = None, None
    return _generator


def manual_seed_gpu(seed: int) -> None:
    """Reseed the GPU's stream only (`seqlab.cuda.manual_seed`); the host's stays as it is."""
    global _gpu_generator, _gpu_seed
    _gpu_seed, _gpu_generator = check_seed(seed), None


def default_generator() -> np.random.Generator:
    return _generator


def get_state() -> dict:
    """The generator's state (JSON-serialisable), for checkpoints."""
    return _generator.bit_generator.state


def set_state(state: dict) -> None:
    _generator.bit_generator.state = state


_TORCH_INITIAL_SEED = 67280421310721  # torch.Generator()'s seed before manual_seed


class Generator(np.random.Generator):
    """torch.Generator: a stream of its own, apart from seqlab's default one.

        g = seqlab.Generator().manual_seed(1)
        seqlab.randn(3, generator=g)          # the default stream is not advanced

    It *is* a NumPy Generator (PCG64, seeded as `np.random.default_rng(seed)`), so every `generator=` that
    takes NumPy's takes it: seqlab.rand/randn/randint/normal/multinomial, init, dropout, the `*_` fills.
    `get_state()` gives the bit generator's state (a dict, not torch's ByteTensor); `set_state` takes it.
    `device` is recorded only: draws are made on the host (GPU tensors get them copied).
    """

    def __init__(self, device="cpu"):
        from seqlab.devices import device as _device

        super().__init__(np.random.PCG64(_TORCH_INITIAL_SEED))
        self._initial_seed = _TORCH_INITIAL_SEED
        self.device = _device(device)

    def manual_seed(self, seed: int) -> "Generator":
        """Restart this stream from `seed`; returns the generator (as torch's)."""
        self.bit_generator.state = np.random.PCG64(check_seed(seed)).state
        self._initial_seed = int(seed)
        return self

    def seed(self) -> int:
        """Reseed from the OS's entropy and return the new seed."""
        seed = int(np.random.SeedSequence().entropy % 2**64)
        self.manual_seed(seed)
        return seed

    def initial_seed(self) -> int:
        """The seed of the last manual_seed or seed (torch's default, 67280421310721, before either)."""
        return self._initial_seed

    def get_state(self) -> dict:
        return copy.deepcopy(self.bit_generator.state)

    def set_state(self, new_state: dict) -> "Generator":
        self.bit_generator.state = new_state
        return self

    def __repr__(self) -> str:
        return f"<seqlab.Generator object at {hex(id(self))}>"


def uniform_like(xp, shape, dtype, generator=None):
    """Uniform [0, 1) numbers of `shape` on the array module `xp`."""
    if xp is np:
        gen = generator or _generator
        return gen.random(shape, dtype=np.float32 if dtype == np.float32 else np.float64)
    global _gpu_generator  # pragma: no cover - needs a GPU
    if _gpu_generator is None:
        seed = _gpu_seed if _gpu_seed is not None else int(_generator.integers(2**63))
        _gpu_generator = xp.random.default_rng(seed)
    return _gpu_generator.random(shape, dtype=dtype)


# SplitMix64: the increment γ (2⁶⁴/φ, odd) and the two multipliers of its output mix
_GAMMA = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)
_SHIFTS = (np.uint64(30), np.uint64(27), np.uint64(31))
_CHUNK = 1 << 14  # words per NumPy pass: a chunk's 10 passes (add, 3 shift-xors, 2 multiplies, compare) stay in cache
_J = None  # (j + 1)·γ for j < _CHUNK, made on first use


def keep_threshold(p: float) -> int:
    """The 32-bit draw u keeps its element when u ≥ this: round(p·2³²) (exact to 2⁻³²), at most 2³² − 1."""
    return min(round(p * 2.0**32), 2**32 - 1)


def mask_key(generator: np.random.Generator | None = None) -> int:
    """A uniform 64-bit integer from `generator` (default: seqlab's), as a mask's key: PCG64's next
    word; two 32-bit words from a 32-bit bit generator such as MT19937 (whose raw words would give
    only 2³² keys)."""
    return int((generator or _generator).integers(2**64, dtype=np.uint64))


def keep_mask(shape, p: float, generator: np.random.Generator | None = None) -> np.ndarray:
    """Bool NumPy array of `shape`, each element True (kept) with probability 1 − p, independently.

    One key from `generator` (default: seqlab's, `mask_key`) makes the mask
    (`mask_of_key`): the SplitMix64 draws of the module docstring, kept when
    u ≥ `keep_threshold(p)`.
    """
    return mask_of_key(shape, mask_key(generator), keep_threshold(p))


def mask_of_key(shape, key: int, threshold: int) -> np.ndarray:
    """The keep mask of `shape` keyed by `key`: the compiled kernel's when Numba is in use, else
    `splitmix_keep`'s (the same bits)."""
    from seqlab import kernels  # here: kernels is optional and imports Numba lazily

    n = math.prod(shape)
    fast = kernels.keep_mask(n, key, threshold)
    return (fast if fast is not None else splitmix_keep(n, key, threshold)).reshape(shape)


def splitmix_keep(n: int, key: int, threshold: int) -> np.ndarray:
    """The n draws of the mask keyed by `key` (see the module docstring) compared with `threshold`, in NumPy."""
    global _J
    if _J is None:
        _J = np.arange(1, _CHUNK + 1, dtype=np.uint64) * _GAMMA
    words = (n + 1) // 2
    out = np.empty(2 * words, dtype=np.bool_)
    z, scratch = np.empty(_CHUNK, np.uint64), np.empty(_CHUNK, np.uint64)
    thr = np.uint32(threshold)
    for start in range(0, words, _CHUNK):
        m = min(_CHUNK, words - start)
        zs, ts = z[:m], scratch[:m]
        np.add(_J[:m], np.uint64((key + start * int(_GAMMA)) % 2**64), out=zs)  # key + (start + j + 1)·γ
        for shift, mult in zip(_SHIFTS, (_MIX1, _MIX2, None)):
            np.right_shift(zs, shift, out=ts)
            np.bitwise_xor(zs, ts, out=zs)
            if mult is not None:
                np.multiply(zs, mult, out=zs)
        # each word's low 32 bits, then its high 32 bits (little-endian halves on any machine)
        halves = zs.astype("<u8", copy=False).view("<u4")
        np.greater_equal(halves, thr, out=out[2 * start:2 * (start + m)])
    return out[:n]
