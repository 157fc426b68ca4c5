"""Adadelta (Zeiler 2012; d2l §12.9), torch.optim.Adadelta's update order."""
from __future__ import annotations

from seqlab.optim.common import ZEROS, check_flags, check_non_negative, parameters_to_step
from seqlab.optim.optimizer import Optimizer, run_closure


class Adadelta(Optimizer):
    """A step whose units are the parameter's own, from two leaky averages:

        g ← ∇ + wd·θ;  s ← ρ s + (1 − ρ) g²                          (state 'square_avg')
        Δ = √(δ + eps) / √(s + eps) · g                              (d2l §12.9's rescaled gradient g′)
        δ ← ρ δ + (1 − ρ) Δ²;  θ ← θ − lr·Δ                          (state 'acc_delta')

    Zeiler's rule has no learning rate (lr = 1, torch's default); torch's `lr` scales Δ after δ is updated.
    `maximize` ascends; torch's foreach/capturable are accepted, differentiable=True is refused.
    """

    def __init__(self, params, lr: float = 1.0, rho: float = 0.9, eps: float = 1e-6, weight_decay: float = 0,
                 foreach: bool | None = None, *, capturable: bool = False, maximize: bool = False,
                 differentiable: bool = False):
        check_non_negative(lr=lr)
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Invalid rho value: {rho}")
        check_non_negative(eps=eps, weight_decay=weight_decay)
        maximize = check_flags("Adadelta", maximize, differentiable)
        super().__init__(params, dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay, maximize=maximize))

    def step(self, closure=None):
        """One update; `closure` (torch's): recomputes the loss and its gradients first, and is returned."""
        loss = run_closure(closure)
        for group in self.param_groups:
            lr, rho, eps, wd = map(float, (group["lr"], group["rho"], group["eps"], group["weight_decay"]))
            for p, state, g, xp in parameters_to_step(self, group, square_avg=ZEROS, acc_delta=ZEROS):
                state["step"] += 1
                if wd:
                    g = g + wd * p.data
                s, acc = state["square_avg"], state["acc_delta"]
                s *= rho
                s += (1 - rho) * g * g                        # s ← ρ s + (1 − ρ) g²
                std = xp.sqrt(s + eps)
                delta = xp.sqrt(acc + eps)
                delta /= std
                delta *= g                                    # Δ = √(δ + eps) / √(s + eps) · g
                acc *= rho
                acc += (1 - rho) * delta * delta              # δ ← ρ δ + (1 − ρ) Δ²
                p.data -= lr * delta
        return loss
