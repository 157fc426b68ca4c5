"""Adam and AdamW (Kingma & Ba 2015; Loshchilov & Hutter 2019), torch.optim's update order."""
from __future__ import annotations

import math

import numpy as np

from seqlab import kernels
from seqlab.backend import CACHE_BLOCK, flat_blocks, xp_of
from seqlab.optim.optimizer import Optimizer, check_implementation_flags, run_closure


class Adam(Optimizer):
    """m ← β1 m + (1 − β1) g;  v ← β2 v + (1 − β2) g²;
    θ ← θ − lr/(1 − β1ᵗ) · m / (√v / √(1 − β2ᵗ) + eps).

    Adam adds weight decay to the gradient (L2); AdamW (and Adam with
    `decoupled_weight_decay=True`, as torch's) decays the weights directly,
    θ ← θ(1 − lr·wd), before the update. `amsgrad` (Reddi et al.
    2018, torch's option) divides by the running maximum of v instead of v,
    so the step size never grows back. `maximize` ascends: the gradient is
    negated first (torch's order), before weight decay and both moments. With Numba, a group's float32
    parameters take one compiled call together (`seqlab.kernels.adam_many`; one per parameter,
    `seqlab.kernels.adam`, where it cannot take them all), which gives `_update`'s values bitwise.
    """

    decoupled = False

    def __init__(self, params, lr: float = 1e-3, betas=(0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0.0, amsgrad: bool = False, *, foreach: bool | None = None,
                 maximize: bool = False, capturable: bool = False, differentiable: bool = False,
                 fused: bool | None = None, decoupled_weight_decay: bool = False):
        check_implementation_flags(type(self).__name__, differentiable=differentiable)
        if decoupled_weight_decay:  # torch's Adam(decoupled_weight_decay=True): AdamW's update
            self.decoupled = True
        if (not isinstance(betas, (tuple, list)) or len(betas) != 2
                or not all(isinstance(b, (int, float)) and 0 <= b < 1 for b in betas)):
            raise ValueError(f"{type(self).__name__}: betas must be two numbers in [0, 1), got {betas!r}")
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay,
                                      amsgrad=bool(amsgrad), maximize=bool(maximize)))

    def step(self, closure=None):
        """One update; `closure` (torch's): recomputes the loss and its gradients first, and is returned."""
        loss = run_closure(closure)
        tables = self.__dict__.get("_many_tables")  # per group and batch: kernels.adam_many's cache
        if tables is None:
            tables = self._many_tables = kernels.AddressCache()
        for gi, group in enumerate(self.param_groups):
            # Python floats: NumPy then rounds each constant to the parameters' float32 (on NumPy 1 and 2
            # alike, and as the compiled kernel does), where a NumPy float64 would compute in float64 on NumPy 2
            lr, b1, b2, eps, wd = map(float, (group["lr"], *group["betas"], group["eps"], group["weight_decay"]))
            maximize = group.get("maximize", False)
            batches: dict = {}  # step count -> NumPy parameters' rows, for one compiled call below
            for p in group["params"]:
                if p.grad is None:
                    continue
                grad = -p.grad if maximize else p.grad  # ascending f descends −f, compiled kernel or not
                state = self.state.setdefault(id(p), {})
                if not state:
                    xp = xp_of(p.data)
                    state["step"] = 0
                    state["exp_avg"] = xp.zeros_like(p.data)
                    state["exp_avg_sq"] = xp.zeros_like(p.data)
                    if group.get("amsgrad"):
                        state["max_exp_avg_sq"] = xp.zeros_like(p.data)
                state["step"] += 1
                t = state["step"]
                if group.get("amsgrad"):  # the plain formula with the running maximum (no compiled kernel)
                    arrays = (p.data, grad, state["exp_avg"], state["exp_avg_sq"], state["max_exp_avg_sq"])
                    for pb, gb, mb, vb, vmax in _blocks(*arrays):
                        self._update(pb, gb, mb, vb, self._scratch(mb), *_consts(lr, b1, b2, eps, wd, t), vmax=vmax)
                    continue
                row = (p.data, grad, state["exp_avg"], state["exp_avg_sq"])
                if type(p.data) is np.ndarray:  # with the group's other NumPy parameters at this step, below
                    batches.setdefault(t, []).append(row)
                else:
                    self._update_row(row, _consts(lr, b1, b2, eps, wd, t))
            # one compiled call for the NumPy parameters at each step count (all of them, unless some joined
            # later), the same bits as one call each (kernels.adam_many); else each on its own
            for bi, (t, rows) in enumerate(batches.items()):
                consts = _consts(lr, b1, b2, eps, wd, t)
                if not kernels.adam_many(rows, self._kernel_consts(*consts), tables.setdefault((gi, bi), {})):
                    for row in rows:
                        self._update_row(row, consts)
        return loss

    def _update_row(self, row: tuple, consts: tuple) -> None:
        """One parameter's step: row (θ, g, m, v) arrays, `consts` as `_update` takes them after `tmp`."""
        if kernels.adam(*row, self._kernel_consts(*consts)):
            return  # compiled: the formula below in one pass, bitwise (seqlab.kernels)
        for pb, gb, mb, vb in _blocks(*row):
            self._update(pb, gb, mb, vb, self._scratch(mb), *consts)

    def _update(self, p, g, m, v, tmp, lr, b1, b2, eps, wd, bc1, bc2_sqrt, vmax=None) -> None:
        """One Adam(W) step on arrays (whole parameters or blocks of them), in place; `tmp` is scratch;
        `vmax` (amsgrad) the running maximum of v, used in v's place."""
        if wd:
            if self.decoupled:
                p *= 1 - lr * wd
            else:
                g = g + wd * p
        xp = xp_of(m)
        xp.subtract(g, m, out=tmp)
        tmp *= 1 - b1
        m += tmp                             # m ← m + (1 − β1)(g − m) = β1 m + (1 − β1) g (torch's lerp)
        v *= b2
        xp.multiply(g, g, out=tmp)
        tmp *= 1 - b2
        v += tmp                             # v ← β2 v + (1 − β2) g²
        if vmax is not None:
            xp.maximum(vmax, v, out=vmax)    # amsgrad: v̂ ← max(v̂, v)
            v = vmax
        xp.sqrt(v, out=tmp)
        tmp /= bc2_sqrt
        tmp += eps                           # √v / √(1 − β2ᵗ) + eps
        xp.divide(m, tmp, out=tmp)
        tmp *= lr / bc1
        p -= tmp

    def _kernel_consts(self, lr, b1, b2, eps, wd, bc1, bc2_sqrt) -> tuple:
        """`_update`'s constants as `seqlab.kernels.adam` takes them."""
        decay = 1 - lr * wd if wd and self.decoupled else 1.0
        l2 = wd if not self.decoupled else 0.0
        return (decay, l2, 1 - b1, b2, 1 - b2, bc2_sqrt, eps, lr / bc1)

    def _scratch(self, like):
        """A temporary shaped like `like`, cut from one flat buffer shared by all parameters."""
        bufs = self.__dict__.setdefault("_scratch_buffers", {})
        key = (type(like), like.dtype)
        buf = bufs.get(key)
        if buf is None or buf.size < like.size:
            buf = bufs[key] = xp_of(like).empty(like.size, dtype=like.dtype)
        return buf[:like.size].reshape(like.shape)


def _consts(lr: float, b1: float, b2: float, eps: float, wd: float, t: int) -> tuple:
    """`Adam._update`'s constants after `tmp`, at step t: the bias corrections 1 − β1ᵗ and √(1 − β2ᵗ)."""
    return (lr, b1, b2, eps, wd, 1 - b1 ** t, math.sqrt(1 - b2 ** t))


_BLOCK = CACHE_BLOCK


def _blocks(*arrays):
    """The arrays (parameter, gradient, m, v) as matching 1-D blocks of `_BLOCK` elements.

    The update is element-wise, so blocks give exactly the values of the
    whole-array update, while its ~14 passes run on data still in cache (a
    large parameter otherwise streams its four arrays from memory 14 times).
    Arrays that are not all C-contiguous of one shape (e.g. a transposed
    gradient), small ones and CuPy arrays are one block: the arrays themselves.
    """
    n, shape = arrays[0].size, arrays[0].shape
    if n <= _BLOCK or xp_of(arrays[0]) is not np or \
            not all(a.shape == shape and a.flags.c_contiguous for a in arrays):
        return [arrays]
    return flat_blocks(list(arrays), _BLOCK)


class AdamW(Adam):
    decoupled = True

    def __init__(self, params, lr: float = 1e-3, betas=(0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0.01, amsgrad: bool = False, **flags):
        """As Adam; `flags`: torch's foreach/fused/capturable (accepted, one implementation here)."""
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, **flags)
