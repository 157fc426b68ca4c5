"""The autograd engine: `Tensor`, `Function`, `no_grad`, `grad`, `detect_anomaly`, `gradcheck`, and the submodule
`functional` (torch.autograd.functional's vjp, jvp, jacobian, hessian, vhp, hvp)."""
from seqlab.autograd.anomaly import (detect_anomaly, is_anomaly_check_nan_enabled, is_anomaly_enabled,
                                     set_detect_anomaly)
from seqlab.autograd.function import (Function, enable_grad, inference_mode, is_grad_enabled, no_grad,
                                      set_grad_enabled)
from seqlab.autograd.grad import grad
from seqlab.autograd.gradcheck import GradcheckError, gradcheck, gradgradcheck
from seqlab.autograd.tensor import Tensor
from seqlab.autograd import functional  # noqa: F401  (seqlab.autograd.functional.jacobian, as torch)

__all__ = ["Tensor", "Function", "no_grad", "enable_grad", "is_grad_enabled", "set_grad_enabled", "inference_mode",
           "grad", "detect_anomaly", "set_detect_anomaly", "is_anomaly_enabled", "is_anomaly_check_nan_enabled",
           "gradcheck", "gradgradcheck", "GradcheckError"]
