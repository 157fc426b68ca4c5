"""`seqlab.nn.utils`, where torch users look: gradient clipping (the functions of `seqlab.optim`), `rnn`,
`parametrize` / `parametrizations`, the older hook-based `weight_norm` and `spectral_norm`, `stateless`
(functional_call), and `parameters_to_vector` / `vector_to_parameters`."""
from __future__ import annotations

from typing import Iterable

from seqlab import backend
from seqlab.autograd.tensor import Tensor
from seqlab.nn.utils import parametrizations, parametrize, rnn, stateless
from seqlab.nn.utils.parametrizations import legacy_weight_norm as weight_norm
from seqlab.nn.utils.parametrizations import remove_weight_norm
from seqlab.nn.utils.spectral_norm import remove_spectral_norm, spectral_norm
from seqlab.optim.clip import clip_grad_norm_, clip_grad_value_, clip_grads_with_norm_, get_total_norm

__all__ = ["clip_grad_norm_", "clip_grad_value_", "clip_grads_with_norm_", "get_total_norm", "rnn", "parametrize",
           "parametrizations", "weight_norm", "remove_weight_norm", "spectral_norm", "remove_spectral_norm",
           "stateless", "parameters_to_vector", "vector_to_parameters"]


def _one_device(params: list) -> None:
    """torch's check: the conversion between parameters and one vector needs them all on one device."""
    if len({backend.device_of(p.data) for p in params}) > 1:
        raise TypeError("Found two parameters on different devices, this is currently not supported.")


def parameters_to_vector(parameters: Iterable[Tensor]) -> Tensor:
    """The parameters flattened and joined into one 1-D tensor of Σ numel entries, in the order given, as
    torch.nn.utils.parameters_to_vector. Built with reshape and cat, so it is part of the graph: gradients of
    a loss of the vector flow back to the parameters, as in torch."""
    from seqlab.creation import cat

    params = list(parameters)
    _one_device(params)
    return cat([p.reshape(-1) for p in params])


def vector_to_parameters(vec: Tensor, parameters: Iterable[Tensor]) -> None:
    """Copy consecutive slices of the 1-D `vec` into the parameters, in place (p.data is written, the
    Tensors stay the same objects; no graph is recorded), as torch.nn.utils.vector_to_parameters.

    torch makes each parameter a view of `vec`; here each parameter keeps its own array (and its dtype and
    device), and the values are copied. A `vec` longer than the parameters is accepted, as torch; a shorter
    one is refused before anything is written."""
    if not isinstance(vec, Tensor):
        raise TypeError(f"expected seqlab.Tensor, but got: {type(vec).__module__}.{type(vec).__qualname__}")
    if vec.ndim != 1:
        raise ValueError(f"vector_to_parameters needs a 1-D vector, got shape {tuple(vec.shape)}")
    params = list(parameters)
    _one_device(params)
    needed = sum(p.numel() for p in params)
    if needed > vec.numel():
        raise ValueError(f"vector_to_parameters: the parameters have {needed} entries, the vector only "
                         f"{vec.numel()}")
    pointer = 0
    for p in params:
        n = p.numel()
        chunk = vec.data[pointer:pointer + n].reshape(p.shape)
        p.data[...] = backend.to_device(chunk, backend.device_of(p.data))
        pointer += n
