"""Adamax (Kingma & Ba 2015, §7.1), torch.optim.Adamax's update order."""
from __future__ import annotations

from seqlab.optim.common import ZEROS, check_betas, check_flags, check_non_negative, lerp_, parameters_to_step
from seqlab.optim.optimizer import Optimizer, run_closure


class Adamax(Optimizer):
    """Adam with the infinity norm in place of the root mean square:

        g ← ∇ + wd·θ;  m ← β1 m + (1 − β1) g                          (state 'exp_avg')
        u ← max(β2 u, |g| + eps)                                     (state 'exp_inf')
        θ ← θ − lr / (1 − β1ᵗ) · m / u

    u needs no bias correction (the paper's §7.1: a max does not shrink towards its zero start). torch adds
    eps inside the max, so u > 0 from the first step. `maximize` ascends; torch's foreach/capturable are
    accepted, differentiable=True is refused.
    """

    def __init__(self, params, lr: float = 2e-3, betas=(0.9, 0.999), eps: float = 1e-8, weight_decay: float = 0,
                 foreach: bool | None = None, *, maximize: bool = False, differentiable: bool = False,
                 capturable: bool = False):
        check_non_negative(lr=lr, eps=eps)
        betas = check_betas(betas)
        check_non_negative(weight_decay=weight_decay)
        maximize = check_flags("Adamax", maximize, differentiable)
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, maximize=maximize))

    def step(self, closure=None):
        """One update; `closure` (torch's): recomputes the loss and its gradients first, and is returned."""
        loss = run_closure(closure)
        for group in self.param_groups:
            lr, b1, b2, eps, wd = map(float, (group["lr"], *group["betas"], group["eps"], group["weight_decay"]))
            for p, state, g, xp in parameters_to_step(self, group, exp_avg=ZEROS, exp_inf=ZEROS):
                state["step"] += 1
                if wd:
                    g = g + wd * p.data
                m, u = state["exp_avg"], state["exp_inf"]
                lerp_(m, g, 1 - b1)                           # m ← β1 m + (1 − β1) g
                u *= b2
                xp.maximum(u, xp.abs(g) + eps, out=u)         # u ← max(β2 u, |g| + eps)
                clr = lr / (1 - b1 ** state["step"])
                p.data -= clr * m / u
        return loss
