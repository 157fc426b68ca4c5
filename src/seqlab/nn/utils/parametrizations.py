"""Weight and spectral normalisation as parametrizations (torch.nn.utils.parametrizations), and the older
hook-based `weight_norm` / `remove_weight_norm` (torch.nn.utils.weight_norm).

    weight_norm(linear)        # linear.weight = g · v / ‖v‖, g and v learned (Salimans & Kingma, 2016)
    spectral_norm(linear)      # linear.weight = W / σ(W), σ the largest singular value (Miyato et al., 2018)
    orthogonal(linear)         # linear.weight orthogonal (nn/utils/orthogonal.py)

Weight and spectral norm keep torch's names in the state dict: `parametrizations.weight.original0` (g) and
`original1` (v) for weight norm, `parametrizations.weight.original` and the power method's
`parametrizations.weight.0._u` / `_v` for spectral norm; the older `weight_norm` keeps `weight_g` and `weight_v`.
"""
from __future__ import annotations

import warnings

from seqlab import functional as F
from seqlab.autograd.function import no_grad
from seqlab.autograd.tensor import Tensor
from seqlab.nn.module import Module, Parameter
from seqlab.nn.utils.orthogonal import orthogonal
from seqlab.nn.utils.parametrize import register_parametrization

__all__ = ["orthogonal", "remove_weight_norm", "spectral_norm", "weight_norm", "legacy_weight_norm"]


def norm_except_dim(v: Tensor, dim: int) -> Tensor:
    """‖v‖₂ over every dim but `dim`, keepdims (shape 1 everywhere else); dim = −1: the norm of all of v, 0-d,
    as torch's `norm_except_dim`."""
    if dim == -1:
        return v.norm()
    dim = dim % v.ndim
    others = tuple(d for d in range(v.ndim) if d != dim)
    return (v * v).sum(others, keepdim=True).sqrt()


class _WeightNorm(Module):
    """w = g · v / ‖v‖ (norms over every dim but `dim`; all of v for dim None or −1); originals (g, v)."""

    def __init__(self, dim: int | None = 0) -> None:
        super().__init__()
        self.dim = -1 if dim is None else dim

    def forward(self, weight_g: Tensor, weight_v: Tensor) -> Tensor:
        return weight_v * (weight_g / norm_except_dim(weight_v, self.dim))

    def right_inverse(self, weight: Tensor) -> tuple[Tensor, Tensor]:
        return norm_except_dim(weight, self.dim), weight


def _named_tensor(module: Module, name: str) -> Tensor:
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{type(module).__name__}' has no parameter or buffer with name '{name}'")
    return weight


def weight_norm(module: Module, name: str = "weight", dim: int | None = 0) -> Module:
    """Weight normalisation of `module.<name>` as a parametrization: g (the norms, shaped as torch's) and v
    (the direction) become `module.parametrizations.<name>.original0` / `original1`; `dim=None` normalises
    the whole tensor. Returns the module."""
    _named_tensor(module, name)
    return register_parametrization(module, name, _WeightNorm(dim), unsafe=True)


class _SpectralNorm(Module):
    """W / σ(W), σ estimated by power iteration on W as a matrix (dim `dim` first, the rest flattened): in
    training each forward runs `n_power_iterations` steps, updating the buffers `_u` and `_v` in place;
    in evaluation they are used as they are. A vector is divided by its norm (exactly)."""

    def __init__(self, weight: Tensor, n_power_iterations: int = 1, dim: int = 0, eps: float = 1e-12) -> None:
        super().__init__()
        ndim = weight.ndim
        if dim >= ndim or dim < -ndim:
            raise IndexError(f"Dimension out of range (expected to be in range of [-{ndim}, {ndim - 1}] but got "
                             f"{dim})")
        if n_power_iterations <= 0:
            raise ValueError(f"Expected n_power_iterations to be positive, but got "
                             f"n_power_iterations={n_power_iterations}")
        self.dim = dim if dim >= 0 else dim + ndim
        self.eps = eps
        if ndim > 1:
            self.n_power_iterations = n_power_iterations
            mat = self._matrix(weight.detach())
            h, w = mat.shape
            from seqlab import sampling

            u = sampling.randn(h, dtype=weight.dtype, device=weight.device)
            v = sampling.randn(w, dtype=weight.dtype, device=weight.device)
            self.register_buffer("_u", F.normalize(u, dim=0, eps=eps))
            self.register_buffer("_v", F.normalize(v, dim=0, eps=eps))
            self._power_method(mat, 15)  # a good start, as torch's

    def _matrix(self, weight: Tensor) -> Tensor:
        if self.dim != 0:
            weight = weight.permute(self.dim, *(d for d in range(weight.ndim) if d != self.dim))
        return weight.reshape(weight.shape[0], -1)

    def _power_method(self, mat: Tensor, iterations: int) -> None:
        """u ← normalize(W v), v ← normalize(Wᵀ u), in place in the buffers, outside the graph."""
        with no_grad():
            w = mat.detach()
            for _ in range(iterations):
                self._u.data[...] = F.normalize(w @ self._v, dim=0, eps=self.eps).data
                self._v.data[...] = F.normalize(w.t() @ self._u, dim=0, eps=self.eps).data

    def forward(self, weight: Tensor) -> Tensor:
        if weight.ndim == 1:
            return F.normalize(weight, dim=0, eps=self.eps)
        mat = self._matrix(weight)
        if self.training:
            self._power_method(mat, self.n_power_iterations)
        u, v = self._u.clone(), self._v.clone()  # the gradient runs through W only, as torch's
        sigma = (u * (mat @ v)).sum()
        return weight / sigma

    def right_inverse(self, value: Tensor) -> Tensor:
        return value


def spectral_norm(module: Module, name: str = "weight", n_power_iterations: int = 1, eps: float = 1e-12,
                  dim: int | None = None) -> Module:
    """Spectral normalisation of `module.<name>` as a parametrization: the weight divided by its largest
    singular value, estimated by power iteration (one step per training forward). `dim` None: 1 for the
    transposed convolutions, else 0. Returns the module."""
    weight = _named_tensor(module, name)
    if dim is None:
        from seqlab.nn.conv import ConvTranspose1d, ConvTranspose2d

        dim = 1 if isinstance(module, (ConvTranspose1d, ConvTranspose2d)) else 0
    return register_parametrization(module, name, _SpectralNorm(weight, n_power_iterations, dim, eps))


# ---- the older hook-based weight norm (torch.nn.utils.weight_norm, deprecated there) -------------------------
class _WeightNormHook:
    def __init__(self, name: str, dim: int) -> None:
        self.name, self.dim = name, dim

    def compute(self, module: Module) -> Tensor:
        return _WeightNorm(self.dim).forward(getattr(module, self.name + "_g"), getattr(module, self.name + "_v"))

    def __call__(self, module: Module, inputs) -> None:
        object.__setattr__(module, self.name, self.compute(module))


def legacy_weight_norm(module: Module, name: str = "weight", dim: int | None = 0) -> Module:
    """torch.nn.utils.weight_norm: `<name>_g` and `<name>_v` become parameters and `<name>` is recomputed from
    them before every forward (a forward pre-hook). Deprecated in torch for `parametrizations.weight_norm`,
    with its warning."""
    warnings.warn("torch.nn.utils.weight_norm is deprecated in favor of torch.nn.utils.parametrizations.weight_norm.",
                  FutureWarning, stacklevel=2)
    dim = -1 if dim is None else dim
    for hook in getattr(module, "_weight_norm_hooks", {}).values():
        if hook.name == name:
            raise RuntimeError(f"Cannot register two weight_norm hooks on the same parameter {name}")
    weight = module._parameters.get(name)
    if not isinstance(weight, Parameter):
        raise ValueError(f"Module '{type(module).__name__}' has no parameter with name '{name}'")
    hook = _WeightNormHook(name, dim)
    with no_grad():
        g, v = _WeightNorm(dim).right_inverse(weight)
    del module._parameters[name]
    module.register_parameter(name + "_g", Parameter(g.data.copy()))
    module.register_parameter(name + "_v", Parameter(v.data.copy()))
    object.__setattr__(module, name, hook.compute(module))
    handle = module.register_forward_pre_hook(hook)
    hooks = module.__dict__.setdefault("_weight_norm_hooks", {})
    hooks[id(handle)] = hook
    hook.handle = handle
    return module


def remove_weight_norm(module: Module, name: str = "weight") -> Module:
    """Undo `legacy_weight_norm`: `<name>` is a plain parameter again, holding g · v / ‖v‖."""
    hooks = module.__dict__.get("_weight_norm_hooks", {})
    for key, hook in list(hooks.items()):
        if hook.name == name:
            with no_grad():
                weight = hook.compute(module).detach()
            hook.handle.remove()
            del hooks[key]
            del module._parameters[name + "_g"]
            del module._parameters[name + "_v"]
            module.__dict__.pop(name, None)
            module.register_parameter(name, Parameter(weight.data.copy()))
            return module
    raise ValueError(f"weight_norm of '{name}' not found in {type(module).__name__}")
