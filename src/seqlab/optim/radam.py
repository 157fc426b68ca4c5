"""RAdam (Liu et al. 2020, "On the variance of the adaptive learning rate and beyond"), torch.optim.RAdam's
update order."""
from __future__ import annotations

from seqlab.optim.common import ZEROS, check_betas, check_flags, check_non_negative, lerp_, parameters_to_step
from seqlab.optim.optimizer import Optimizer, run_closure


class RAdam(Optimizer):
    """Adam whose adaptive step is switched on only once its variance is tractable, and then rectified:

        g ← ∇ + wd·θ  (decoupled_weight_decay: θ ← θ(1 − lr·wd) instead, as AdamW)
        m ← β1 m + (1 − β1) g;  v ← β2 v + (1 − β2) g²              (states 'exp_avg', 'exp_avg_sq')
        ρ∞ = 2 / (1 − β2) − 1;  ρₜ = ρ∞ − 2t β2ᵗ / (1 − β2ᵗ)            (length of the approximated SMA)
        ρₜ > 5:  r = √((ρₜ − 4)(ρₜ − 2) ρ∞ / ((ρ∞ − 4)(ρ∞ − 2) ρₜ))
                 θ ← θ − lr · m / (1 − β1ᵗ) · √(1 − β2ᵗ) / (√v + eps) · r
        else:    θ ← θ − lr · m / (1 − β1ᵗ)                              (SGD with momentum)

    (The paper's Algorithm 2; torch's threshold is 5, the paper's 4.) With β2 = 0.999 the first five steps
    are momentum steps. `maximize` ascends; torch's foreach/capturable are accepted, differentiable=True is
    refused.
    """

    def __init__(self, params, lr: float = 1e-3, betas=(0.9, 0.999), eps: float = 1e-8, weight_decay: float = 0,
                 decoupled_weight_decay: bool = False, *, foreach: bool | None = None, maximize: bool = False,
                 capturable: bool = False, differentiable: bool = False):
        check_non_negative(lr=lr, eps=eps)
        betas = check_betas(betas)
        check_non_negative(weight_decay=weight_decay)
        maximize = check_flags("RAdam", maximize, differentiable)
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                                      decoupled_weight_decay=bool(decoupled_weight_decay), maximize=maximize))

    def step(self, closure=None):
        """One update; `closure` (torch's): recomputes the loss and its gradients first, and is returned."""
        loss = run_closure(closure)
        for group in self.param_groups:
            lr, b1, b2, eps, wd = map(float, (group["lr"], *group["betas"], group["eps"], group["weight_decay"]))
            rho_inf = 2 / (1 - b2) - 1
            for p, state, g, xp in parameters_to_step(self, group, exp_avg=ZEROS, exp_avg_sq=ZEROS):
                state["step"] += 1
                t = state["step"]
                if wd:
                    if group["decoupled_weight_decay"]:
                        p.data *= 1 - lr * wd
                    else:
                        g = g + wd * p.data
                m, v = state["exp_avg"], state["exp_avg_sq"]
                lerp_(m, g, 1 - b1)                           # m ← β1 m + (1 − β1) g
                v *= b2
                v += (1 - b2) * g * g                         # v ← β2 v + (1 − β2) g²
                bias_correction1 = 1 - b1 ** t
                bias_correction2 = 1 - b2 ** t
                m_hat = m / bias_correction1
                rho_t = rho_inf - 2 * t * (b2 ** t) / bias_correction2
                if rho_t > 5.0:
                    rect = ((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t)) ** 0.5
                    sqrt_v = xp.sqrt(v)
                    sqrt_v += eps
                    adaptive_lr = bias_correction2 ** 0.5 / sqrt_v
                    p.data -= m_hat * lr * adaptive_lr * rect
                else:
                    p.data -= m_hat * lr
        return loss
