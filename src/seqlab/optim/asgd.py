"""Averaged SGD (Polyak & Juditsky 1992), torch.optim.ASGD's update order."""
from __future__ import annotations

from seqlab.optim.common import ZEROS, check_flags, check_non_negative, parameters_to_step
from seqlab.optim.optimizer import Optimizer, run_closure


class ASGD(Optimizer):
    """SGD with a decaying step size that also keeps a running average of the iterates:

        g ← ∇ + wd·θ;  θ ← θ(1 − λ ηₜ) − ηₜ g                          (ηₜ: state 'eta', η₁ = lr)
        θ̄ ← θ̄ + μₜ (θ − θ̄)   (θ̄ ← θ while μₜ = 1)                     (θ̄: state 'ax', μₜ: state 'mu')
        ηₜ₊₁ = lr / (1 + λ lr t)^α;  μₜ₊₁ = 1 / max(1, t − t0)

    μ is 1 (θ̄ follows θ) up to step t0 + 2; from there on θ̄ is the mean of the iterates θ_{t0+2} … θₜ.
    The parameters are the SGD iterates; the average, the one the theory says converges fast, is
    `opt.state[p]["ax"]`, to copy into the model for evaluation. torch keeps η and μ as float32 tensors;
    here they are Python floats. `maximize` ascends; torch's foreach/capturable are accepted,
    differentiable=True is refused.
    """

    def __init__(self, params, lr: float = 1e-2, lambd: float = 1e-4, alpha: float = 0.75, t0: float = 1e6,
                 weight_decay: float = 0, foreach: bool | None = None, maximize: bool = False,
                 differentiable: bool = False, capturable: bool = False):
        check_non_negative(lr=lr, weight_decay=weight_decay)
        maximize = check_flags("ASGD", maximize, differentiable)
        super().__init__(params, dict(lr=lr, lambd=lambd, alpha=alpha, t0=t0, weight_decay=weight_decay,
                                      maximize=maximize))

    def step(self, closure=None):
        """One update; `closure` (torch's): recomputes the loss and its gradients first, and is returned."""
        loss = run_closure(closure)
        for group in self.param_groups:
            lr, lambd, alpha, t0, wd = map(float, (group["lr"], group["lambd"], group["alpha"], group["t0"],
                                                   group["weight_decay"]))
            for p, state, g, xp in parameters_to_step(self, group, eta=lr, mu=1.0, ax=ZEROS):
                state["step"] += 1
                t = state["step"]
                if wd:
                    g = g + wd * p.data
                eta = float(state["eta"])
                p.data *= 1 - lambd * eta                     # decay towards 0
                p.data -= eta * g
                ax = state["ax"]
                if state["mu"] != 1:
                    ax += (p.data - ax) * float(state["mu"])  # θ̄ ← θ̄ + μ (θ − θ̄)
                else:
                    ax[...] = p.data
                state["eta"] = lr / ((1 + lambd * lr * t) ** alpha)
                state["mu"] = 1 / max(1, t - t0)
        return loss
