"""seqlab: neural networks, RNNs and Transformers from scratch on NumPy.

    import seqlab
    from seqlab import nn, functional as F
    x = seqlab.randn(2, 3, requires_grad=True)
"""
from seqlab import backend
from seqlab.autograd import Function, Tensor, enable_grad, is_grad_enabled, no_grad
from seqlab.creation import arange, cat, full, maximum, ones, rand, randn, stack, tensor, where, zeros
from seqlab.random import manual_seed
from seqlab import functional, nn, optim  # noqa: E402  (seqlab.nn.Linear, as torch.nn)

__version__ = "0.1.0"

float32 = backend.np.float32
float64 = backend.np.float64
int64 = backend.np.int64

__all__ = [
    "Tensor", "Function", "no_grad", "enable_grad", "is_grad_enabled", "manual_seed",
    "tensor", "zeros", "ones", "full", "arange", "randn", "rand", "cat", "stack", "where", "maximum",
    "backend", "float32", "float64", "int64",
]
