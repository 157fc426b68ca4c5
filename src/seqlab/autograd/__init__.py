"""The autograd engine: `Tensor`, `Function`, `no_grad`."""
from seqlab.autograd.function import (Function, enable_grad, inference_mode, is_grad_enabled, no_grad,
                                      set_grad_enabled)
from seqlab.autograd.tensor import Tensor

__all__ = ["Tensor", "Function", "no_grad", "enable_grad", "is_grad_enabled", "set_grad_enabled", "inference_mode"]
