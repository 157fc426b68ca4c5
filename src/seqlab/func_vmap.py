"""`seqlab.func.vmap`, as a loop: torch.func.vmap's arguments, results and errors, one call of the function per
index of the mapped dimension and the results stacked (`seqlab.func` explains why, and what differs).

    per_sample = vmap(grad(loss), in_dims=(None, 0, 0))(params, x, y)   # one gradient dict per row, stacked
"""
from __future__ import annotations

import functools

from seqlab.autograd.tensor import Tensor
from seqlab.utils._pytree import broadcast_prefix, tree_flatten, tree_unflatten

__all__ = ["vmap"]

_RANDOM_ERROR = ("vmap: called random operation while in randomness error mode. Please either use the 'same' or "
                 "'different' randomness flags on vmap or perform the randomness operation out of vmap")


def _check_randomness(randomness: str) -> None:
    if randomness not in ("error", "different", "same"):
        raise RuntimeError(f"Only allowed values for randomness are 'error', 'different', or 'same'. Got {randomness}")


def _rng_state() -> dict:
    from seqlab import random as _random

    return _random.get_state()


def _name(func) -> str:
    if isinstance(func, functools.partial):
        return f"functools.partial({_name(func.func)}, ...)"
    return getattr(func, "__name__", repr(func))


def vmap(func, in_dims=0, out_dims=0, randomness: str = "error", *, chunk_size: int | None = None):
    """torch.func.vmap, as a loop: `func` is called once per index of the mapped dims (`in_dims`: an int for all
    arguments, or a tuple matching them whose leaves are a dim or None for an argument passed whole; keyword
    arguments are passed whole), and each output is the stack of its per-call values at `out_dims`. The same
    values and gradients as torch's, no speed-up (see the module docstring for the differences).
    randomness: "error" refuses random draws, "different" lets each call draw its own, "same" gives every call
    the same draws."""
    _check_randomness(randomness)
    if not (chunk_size is None or chunk_size > 0):
        raise ValueError(f"vmap: chunk_size should be None or greater than 0. (got {chunk_size})")

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        flat, dims, size = _mapped_inputs(func, in_dims, args)
        spec = tree_flatten(args)[1]
        start = _rng_state() if randomness != "different" else None
        results = []
        for b in range(size):
            if randomness == "same":
                from seqlab import random as _random

                _random.set_state(start)
            leaves = [x if d is None else x.select(d, b) for x, d in zip(flat, dims)]
            results.append(func(*tree_unflatten(leaves, spec), **kwargs))
            if randomness == "error" and _rng_state() != start:
                raise RuntimeError(_RANDOM_ERROR)
        return _stack_outputs(func, out_dims, results)

    return wrapper


def _mapped_inputs(func, in_dims, args: tuple) -> tuple[list, list, int]:
    """(flat arguments, the mapped dim of each (None: passed whole), the batch size), with torch's ValueErrors."""
    where = f"vmap({_name(func)}, in_dims={in_dims}, ...)(<inputs>)"
    if not isinstance(in_dims, (int, tuple)):
        raise ValueError(f"{where}: expected `in_dims` to be int or a (potentially nested) tuple matching the "
                         f"structure of inputs, got: {type(in_dims)}.")
    if not args:
        raise ValueError(f"vmap({_name(func)})(<inputs>): got no inputs. Maybe you forgot to add inputs, or you are "
                         f"trying to vmap over a function with no inputs. The latter is unsupported.")
    flat, spec = tree_flatten(args)
    dims = broadcast_prefix(in_dims, spec)
    if dims is None:
        raise ValueError(f"{where}: in_dims is not compatible with the structure of `inputs`. in_dims has structure "
                         f"{tree_flatten(in_dims)[1]!r} but inputs has structure {spec!r}.")
    sizes, normalized = [], []
    for x, d in zip(flat, dims):
        if d is not None and not isinstance(d, int):
            raise ValueError(f"{where}: Got in_dim={d} for an input but in_dim must be either an integer dimension "
                             f"or None.")
        if d is not None and not isinstance(x, Tensor):
            raise ValueError(f"{where}: Got in_dim={d} for an input but the input is of type {type(x)}. We cannot "
                             f"vmap over non-Tensor arguments, please use None as the respective in_dim")
        if d is not None and not -x.ndim <= d < x.ndim:
            raise ValueError(f"{where}: Got in_dim={d} for some input, but that input is a Tensor of dimensionality "
                             f"{x.ndim} so expected in_dim to satisfy -{x.ndim} <= in_dim < {x.ndim}.")
        normalized.append(None if d is None else d % x.ndim)
        if d is not None:
            sizes.append(int(x.shape[d]))
    if not sizes:
        raise ValueError("vmap: Expected at least one Tensor to vmap over")
    if len(set(sizes)) != 1:
        raise ValueError(f"vmap: Expected all tensors to have the same size in the mapped dimension, got sizes "
                         f"{sizes} for the mapped dimension")
    if sizes[0] == 0:
        raise ValueError("vmap: the mapped dimension has size 0; seqlab's vmap calls the function once per element "
                         "(a loop), so it has no call to take the outputs' structure from")
    return flat, normalized, sizes[0]


def _stack_outputs(func, out_dims, results: list):
    """The per-call outputs stacked at their out_dims (None: the one value every call returned)."""
    from seqlab.creation import stack

    name = _name(func)
    flat0, spec = tree_flatten(results[0])
    flats = [flat0]
    for r in results[1:]:
        f, s = tree_flatten(r)
        if s != spec:
            raise ValueError(f"vmap({name}, ...): `{name}` returned outputs of different structures in different "
                             f"calls ({spec!r} and {s!r})")
        flats.append(f)
    if not isinstance(out_dims, (int, tuple, list)) and out_dims is not None:
        raise ValueError(f"vmap({name}, ..., out_dims={out_dims}): `out_dims` must be an int, None or a python "
                         f"collection of ints representing where in the outputs the vmapped dimension should appear.")
    dims = broadcast_prefix(out_dims, spec)
    if dims is None:
        raise ValueError(f"vmap({name}, ..., out_dims={out_dims})(<inputs>): out_dims is not compatible with the "
                         f"structure of `outputs`. out_dims has structure {tree_flatten(out_dims)[1]!r} but outputs "
                         f"has structure {spec!r}.")
    out = []
    for k, d in enumerate(dims):
        values = [f[k] for f in flats]
        if d is None:
            first = values[0]
            if isinstance(first, Tensor) and any(v is not first and not _same(v, first) for v in values[1:]):
                raise ValueError(f"vmap({name}, ...): `{name}` can not return a BatchedTensor when out_dim is None")
            out.append(first)
            continue
        if not all(isinstance(v, Tensor) for v in values):
            bad = next(type(v) for v in values if not isinstance(v, Tensor))
            raise ValueError(f"vmap({name}, ...): `{name}` must only return Tensors, got type {bad}. Did you mean to "
                             f"set out_dims= to None for output?")
        nd = values[0].ndim + 1
        if not -nd <= d < nd:
            raise IndexError(f"Dimension out of range (expected to be in range of [{-nd}, {nd - 1}], but got {d})")
        out.append(stack(values, dim=d))
    return tree_unflatten(out, spec)


def _same(a, b) -> bool:
    return isinstance(a, Tensor) and a.shape == b.shape and bool((a.data == b.data).all())
