"""NAdam (Dozat 2016, "Incorporating Nesterov momentum into Adam"), torch.optim.NAdam's update order."""
from __future__ import annotations

from seqlab.optim.common import ZEROS, check_betas, check_flags, check_non_negative, lerp_, parameters_to_step
from seqlab.optim.optimizer import Optimizer, run_closure


class NAdam(Optimizer):
    """Adam whose momentum looks one step ahead, with Dozat's warming-up momentum schedule:

        μₜ = β1 (1 − ½·0.96^(t·ψ))   (ψ = momentum_decay);   Πₜ = μ₁⋯μₜ    (state 'mu_product')
        g ← ∇ + wd·θ  (decoupled_weight_decay: θ ← θ(1 − lr·wd) instead, as AdamW)
        m ← β1 m + (1 − β1) g;  v ← β2 v + (1 − β2) g²              (states 'exp_avg', 'exp_avg_sq')
        d = √(v / (1 − β2ᵗ)) + eps
        θ ← θ − lr (1 − μₜ) / (1 − Πₜ) · g / d − lr μₜ₊₁ / (1 − Πₜ μₜ₊₁) · m / d

    The two terms are the bias-corrected gradient and the next step's momentum (Dozat's eq. for m̂ with
    μₜ₊₁). torch keeps Πₜ as a float32 tensor; here it is a Python float (so float64 runs agree with torch
    run at torch.set_default_dtype(torch.float64)). `maximize` ascends; torch's foreach/capturable are
    accepted, differentiable=True is refused.
    """

    def __init__(self, params, lr: float = 2e-3, betas=(0.9, 0.999), eps: float = 1e-8, weight_decay: float = 0,
                 momentum_decay: float = 4e-3, decoupled_weight_decay: bool = False, *,
                 foreach: bool | None = None, maximize: bool = False, capturable: bool = False,
                 differentiable: bool = False):
        check_non_negative(lr=lr, eps=eps)
        betas = check_betas(betas)
        check_non_negative(weight_decay=weight_decay, momentum_decay=momentum_decay)
        maximize = check_flags("NAdam", maximize, differentiable)
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                                      momentum_decay=momentum_decay,
                                      decoupled_weight_decay=bool(decoupled_weight_decay), maximize=maximize))

    def step(self, closure=None):
        """One update; `closure` (torch's): recomputes the loss and its gradients first, and is returned."""
        loss = run_closure(closure)
        for group in self.param_groups:
            lr, b1, b2, eps, wd, psi = map(float, (group["lr"], *group["betas"], group["eps"],
                                                   group["weight_decay"], group["momentum_decay"]))
            for p, state, g, xp in parameters_to_step(self, group, mu_product=1.0, exp_avg=ZEROS, exp_avg_sq=ZEROS):
                state["step"] += 1
                t = state["step"]
                bias_correction2 = 1 - b2 ** t
                if wd:
                    if group["decoupled_weight_decay"]:
                        p.data *= 1 - lr * wd
                    else:
                        g = g + wd * p.data
                mu = b1 * (1.0 - 0.5 * (0.96 ** (t * psi)))
                mu_next = b1 * (1.0 - 0.5 * (0.96 ** ((t + 1) * psi)))
                state["mu_product"] = mu_product = float(state["mu_product"]) * mu
                m, v = state["exp_avg"], state["exp_avg_sq"]
                lerp_(m, g, 1 - b1)                           # m ← β1 m + (1 − β1) g
                v *= b2
                v += (1 - b2) * g * g                         # v ← β2 v + (1 − β2) g²
                denom = xp.sqrt(v / bias_correction2)
                denom += eps
                p.data += (-lr * (1.0 - mu) / (1.0 - mu_product)) * g / denom
                p.data += ((-lr * mu_next) / (1.0 - mu_product * mu_next)) * m / denom
        return loss
