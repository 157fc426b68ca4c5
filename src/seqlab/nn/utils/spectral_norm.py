"""The older hook-based spectral normalisation, torch.nn.utils.spectral_norm / remove_spectral_norm (Miyato et
al., 2018, "Spectral normalization for generative adversarial networks"):

    spectral_norm(linear)    # before every forward: linear.weight = weight_orig / σ(weight_orig)

σ, the largest singular value of the weight seen as a matrix (dim `dim` first, the rest flattened), is
estimated by power iteration (§2.1 of the paper): in training each forward runs `n_power_iterations` steps

    v ← normalize(Wᵀ u),   u ← normalize(W v),   σ = uᵀ W v

updating the buffers `weight_u` and `weight_v` in place; in evaluation they are used as they are. The gradient
runs through W only (u and v are constants in the graph), as torch's. The state dict holds torch's keys
(`weight_orig`, `weight_u`, `weight_v`), so a torch checkpoint loads and gives the same outputs and gradients;
`weight` itself is a plain attribute, recomputed by the hook. (torch also converts checkpoints from before it kept
`weight_v`, via state-dict metadata seqlab does not have: such a checkpoint is refused as missing `weight_v`.)
`parametrizations.spectral_norm` is the newer form of the same thing.
"""
from __future__ import annotations

from seqlab import backend
from seqlab.autograd.function import no_grad
from seqlab.autograd.tensor import Tensor
from seqlab.nn.module import Module, Parameter

__all__ = ["spectral_norm", "remove_spectral_norm", "SpectralNorm"]


def _normalize(arr, eps: float):
    xp = backend.xp_of(arr)
    return arr / xp.maximum(xp.linalg.norm(arr), eps)


class SpectralNorm:
    """The forward pre-hook: sets `module.<name>` to `<name>_orig / σ` before each forward."""

    def __init__(self, name: str = "weight", n_power_iterations: int = 1, dim: int = 0, eps: float = 1e-12) -> None:
        if n_power_iterations <= 0:
            raise ValueError(f"Expected n_power_iterations to be positive, but got "
                             f"n_power_iterations={n_power_iterations}")
        self.name, self.dim, self.n_power_iterations, self.eps = name, dim, n_power_iterations, eps

    def reshape_weight_to_matrix(self, weight: Tensor) -> Tensor:
        """The weight as a matrix: dim `dim` first, the other dims flattened into columns."""
        if self.dim != 0:
            weight = weight.permute(self.dim, *(d for d in range(weight.ndim) if d != self.dim))
        return weight.reshape(weight.shape[0], -1)

    def compute_weight(self, module: Module, do_power_iteration: bool) -> Tensor:
        weight = getattr(module, self.name + "_orig")
        u, v = getattr(module, self.name + "_u"), getattr(module, self.name + "_v")
        mat = self.reshape_weight_to_matrix(weight)
        if do_power_iteration:
            w = mat.data
            for _ in range(self.n_power_iterations):  # in place: the buffers keep the estimate between forwards
                v.data[...] = _normalize(w.T @ u.data, self.eps)
                u.data[...] = _normalize(w @ v.data, self.eps)
            u, v = u.clone(), v.clone()  # constants in this forward's graph even if a later one updates the buffers
        sigma = (u.detach() * (mat @ v.detach())).sum()  # uᵀ W v
        return weight / sigma

    def remove(self, module: Module) -> None:
        with no_grad():
            weight = self.compute_weight(module, do_power_iteration=False)
        module.__dict__.pop(self.name, None)
        del module._parameters[self.name + "_orig"]
        del module._buffers[self.name + "_u"]
        del module._buffers[self.name + "_v"]
        module.register_parameter(self.name, Parameter(weight.data.copy()))

    def __call__(self, module: Module, inputs) -> None:
        object.__setattr__(module, self.name, self.compute_weight(module, do_power_iteration=module.training))


def _default_dim(module: Module) -> int:
    from seqlab.nn import conv

    transposed = tuple(getattr(conv, n) for n in ("ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d")
                       if hasattr(conv, n))
    return 1 if isinstance(module, transposed) else 0


def spectral_norm(module: Module, name: str = "weight", n_power_iterations: int = 1, eps: float = 1e-12,
                  dim: int | None = None) -> Module:
    """torch.nn.utils.spectral_norm: `<name>` becomes the parameter `<name>_orig`, the power method's vectors the
    buffers `<name>_u` and `<name>_v` (random unit vectors to start), and `<name>` is recomputed as
    `<name>_orig / σ` before every forward. `dim` None: 1 for the transposed convolutions, else 0."""
    dim = _default_dim(module) if dim is None else dim
    hooks = module.__dict__.setdefault("_spectral_norm_hooks", {})
    if any(h.name == name for h in hooks.values()):
        raise RuntimeError(f"Cannot register two spectral_norm hooks on the same parameter {name}")
    fn = SpectralNorm(name, n_power_iterations, dim, eps)
    if name not in module._parameters:
        raise ValueError(f"Module '{type(module).__name__}' has no parameter with name '{name}'")
    weight = module._parameters[name]
    if weight is None:
        raise ValueError(f"`SpectralNorm` cannot be applied as parameter `{name}` is None")
    if getattr(module, "has_uninitialized_params", lambda: False)():
        raise ValueError("The module passed to `SpectralNorm` can't have uninitialized parameters. Make sure to run "
                         "the dummy forward before applying spectral normalization")
    from seqlab import sampling

    h, w = fn.reshape_weight_to_matrix(weight.detach()).shape
    u = _normalize(sampling.randn(h, dtype=weight.dtype, device=weight.device).data, eps)
    v = _normalize(sampling.randn(w, dtype=weight.dtype, device=weight.device).data, eps)
    del module._parameters[name]
    module.register_parameter(name + "_orig", weight)
    object.__setattr__(module, name, weight.detach())
    module.register_buffer(name + "_u", u)
    module.register_buffer(name + "_v", v)
    fn.handle = module.register_forward_pre_hook(fn)
    hooks[id(fn.handle)] = fn
    return module


def remove_spectral_norm(module: Module, name: str = "weight") -> Module:
    """Undo `spectral_norm`: `<name>` is a plain parameter again, holding `<name>_orig / σ` with the current u, v."""
    hooks = module.__dict__.get("_spectral_norm_hooks", {})
    for key, hook in list(hooks.items()):
        if hook.name == name:
            hook.remove(module)
            hook.handle.remove()
            del hooks[key]
            return module
    raise ValueError(f"spectral_norm of '{name}' not found in {module}")
