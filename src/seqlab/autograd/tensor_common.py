"""Names that tensor.py and its mixin modules share: the `dim`/`axis` alias of reductions, and the helpers of
the math and indexing mixins.

Like the mixins, this module must not import `seqlab.autograd.tensor` when it loads (that module imports the
mixins, which import this one): `_tensor_class` fetches the Tensor class when first called.
"""
from __future__ import annotations

from collections import namedtuple

import numpy as np

from seqlab import backend

_SCALARS = (int, float, bool, np.number, np.bool_)
_Tensor = None


def _tensor_class():
    """seqlab's Tensor (not `type(self)`: a Parameter's results are plain tensors)."""
    global _Tensor
    if _Tensor is None:
        from seqlab.autograd.tensor import Tensor

        _Tensor = Tensor
    return _Tensor


def _data(x):
    return x.data if isinstance(x, _tensor_class()) else x


def _bool_tensor(arr):
    """A bool array (or NumPy scalar, from a 0-d op) as a tensor that requires no grad."""
    return _tensor_class()._from_op(backend.xp_of(arr).asarray(arr), None)


def _dim_or_axis(name: str, dim, axis, default=None):
    """`dim`, or torch's NumPy-style alias `axis` (x.sum(axis=1)); both at once is a TypeError, as torch."""
    if axis is None:
        return default if dim is None else dim
    if dim is not None:
        raise TypeError(f"{name}() got both dim={dim!r} and its alias axis={axis!r}; pass one")
    return axis


# ---- for the indexing mixins (tensor_select, tensor_shape, tensor_linalg, tensor_stats) and their functions
def _no_grad(arr):
    """A tensor of `arr` outside the graph (indices, counts)."""
    return _tensor_class()._from_op(arr, None)


def _as_tensor(x, like=None):
    """`x` as a Tensor: itself, or an array, list or number on `like`'s device."""
    tensor_cls = _tensor_class()
    if isinstance(x, tensor_cls):
        return x
    from seqlab.autograd.tensor import _to_array

    return tensor_cls(_to_array(x, device=like.device if like is not None else None))


def _along(dim: int, sl) -> tuple:
    """An index that applies `sl` along `dim` (everything before it whole)."""
    return (slice(None),) * dim + (sl,)


def _index_array(t, name: str, index, what: str = "index"):
    """`index` (a Tensor, an array, a list or an int) as an integer array on `t`'s device."""
    arr = index.data if isinstance(index, _tensor_class()) else index
    if not hasattr(arr, "dtype"):
        arr = np.asarray(arr)
        if arr.size == 0 and arr.dtype.kind == "f":  # [] reads as float64
            arr = arr.astype(np.int64)
    if arr.dtype.kind not in "iu":
        raise TypeError(f"{name}(): {what} must hold integers (int64 or int32), got dtype {arr.dtype}")
    return backend.to_device(arr, t.device)


def _same_dtype(name: str, t, other, what: str = "source") -> None:
    if other.dtype != t.dtype:
        raise TypeError(f"{name}(): self ({t.dtype}) and {what} ({other.dtype}) must have the same dtype (as "
                        f"torch); cast one with .to(dtype)")


def _broadcast(name: str, *shapes) -> tuple:
    try:
        return tuple(np.broadcast_shapes(*[tuple(s) for s in shapes]))
    except ValueError:
        raise ValueError(f"{name}(): shapes {', '.join(str(tuple(s)) for s in shapes)} do not broadcast") from None


def return_type(name: str, fields: str):
    """A named tuple of results as torch's `torch.return_types.<name>` (e.g. svd's U, S, V), in
    `seqlab.return_types`."""
    cls = namedtuple(name, fields)
    cls.__module__ = "seqlab.return_types"
    return cls
