"""seqlab: neural networks, RNNs and Transformers from scratch on NumPy.

    import seqlab
    from seqlab import nn, functional as F
    x = seqlab.randn(2, 3, requires_grad=True)
"""
from seqlab import backend
from seqlab.autograd import (Function, Tensor, enable_grad, inference_mode, is_grad_enabled, no_grad,
                             set_grad_enabled)
from seqlab.creation import (abs, arange, argmax, argmin, argsort, bmm, cat, cumsum, exp, eye, from_numpy, full,
                             full_like, log, log_softmax, matmul, maximum, mm, multinomial, ones, ones_like, rand,
                             randint, randn, relu, sigmoid, softmax, sort, sqrt, stack, tanh, tensor, topk, tril,
                             triu, where, zeros, zeros_like)
from seqlab.random import manual_seed
from seqlab import functional, nn, optim  # noqa: E402  (seqlab.nn.Linear, as torch.nn)

__version__ = "0.1.0"

float32 = backend.np.float32
float64 = backend.np.float64
int64 = backend.np.int64

__all__ = [
    "Tensor", "Function", "no_grad", "enable_grad", "is_grad_enabled", "set_grad_enabled", "inference_mode",
    "manual_seed",
    "tensor", "zeros", "ones", "full", "arange", "randn", "rand", "cat", "stack", "where", "maximum",
    "zeros_like", "ones_like", "full_like", "eye", "from_numpy", "randint", "multinomial",
    "exp", "log", "sqrt", "abs", "tanh", "sigmoid", "relu", "softmax", "log_softmax", "argmax", "argmin",
    "topk", "sort", "argsort", "cumsum", "matmul", "mm", "bmm", "tril", "triu",
    "backend", "float32", "float64", "int64",
]
