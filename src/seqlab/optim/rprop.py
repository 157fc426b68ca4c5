"""Rprop, resilient backpropagation (Riedmiller & Braun 1993), torch.optim.Rprop's update order."""
from __future__ import annotations

from seqlab.optim.common import ZEROS, check_flags, check_non_negative, parameters_to_step
from seqlab.optim.optimizer import Optimizer, run_closure


def check_etas(etas) -> tuple[float, float]:
    """(η⁻, η⁺) with 0 < η⁻ < 1 < η⁺, torch's check and message."""
    if not isinstance(etas, (tuple, list)) or len(etas) != 2:
        raise ValueError(f"etas must be a pair (etaminus, etaplus), got {etas!r}")
    if not 0.0 < etas[0] < 1.0 < etas[1]:
        raise ValueError(f"Invalid eta values: {etas[0]}, {etas[1]}")
    return tuple(etas)


def check_step_sizes(step_sizes) -> tuple[float, float]:
    """(Δmin, Δmax). torch checks nothing here: a pair of another length fails at its first step, and
    Δmin > Δmax pins every step size to Δmax (clamp's rule); both are refused up front instead."""
    if not isinstance(step_sizes, (tuple, list)) or len(step_sizes) != 2:
        raise ValueError(f"step_sizes must be a pair (min, max), got {step_sizes!r}")
    if not step_sizes[0] <= step_sizes[1]:
        raise ValueError(f"Invalid step_sizes: min {step_sizes[0]} is above max {step_sizes[1]}")
    return tuple(step_sizes)


class Rprop(Optimizer):
    """Each weight moves by its own step size Δ in the direction opposite its gradient's sign; Δ grows while
    the gradient keeps its sign and shrinks when it flips (the last step jumped over a minimum):

        s = sign(g · g_prev)                                   (g_prev: state 'prev', 0 at first)
        Δ ← clamp(Δ · η⁺, Δmin, Δmax)  where s > 0             (Δ: state 'step_size', Δ₀ = lr)
        Δ ← clamp(Δ · η⁻, Δmin, Δmax)  where s < 0;  g ← 0 there (no move, and no flip seen next step)
        θ ← θ − sign(g) · Δ;  g_prev ← g

    This is Rprop without weight-backtracking (Igel & Hüsken 2000 call it Rprop⁻ with the zeroed gradient,
    "iRprop⁻"). Only the gradient's sign is used, so Rprop suits full-batch training, not noisy mini-batches.
    `maximize` ascends (the gradient is negated first, as torch); torch's foreach/capturable are accepted,
    differentiable=True is refused. Unlike torch, step_sizes with min > max are refused.
    """

    def __init__(self, params, lr: float = 1e-2, etas: tuple[float, float] = (0.5, 1.2),
                 step_sizes: tuple[float, float] = (1e-6, 50), *, capturable: bool = False,
                 foreach: bool | None = None, maximize: bool = False, differentiable: bool = False):
        check_non_negative(lr=lr)
        etas, step_sizes = check_etas(etas), check_step_sizes(step_sizes)
        maximize = check_flags("Rprop", maximize, differentiable)
        super().__init__(params, {"lr": lr, "etas": etas, "step_sizes": step_sizes, "maximize": maximize})

    def step(self, closure=None):
        """One update; `closure` (torch's): recomputes the loss and its gradients first, and is returned."""
        loss = run_closure(closure)
        for group in self.param_groups:
            # Python floats, so float32 parameters stay float32 (see Adam.step)
            lr = float(group["lr"])
            eta_minus, eta_plus = map(float, group["etas"])
            lo, hi = map(float, group["step_sizes"])
            for p, state, g, xp in parameters_to_step(self, group, prev=ZEROS, step_size=ZEROS):
                if state["step"] == 0:
                    state["step_size"][...] = lr             # Δ₀ = lr (the group's lr when p is first seen)
                state["step"] += 1
                factor = xp.sign(g * state["prev"])           # in p's dtype: η rounded as torch rounds it
                flipped = factor < 0
                factor[factor > 0] = eta_plus
                factor[flipped] = eta_minus
                factor[factor == 0] = 1
                size = state["step_size"]
                size *= factor
                xp.clip(size, lo, hi, out=size)              # Δ ← clamp(Δ·η, Δmin, Δmax)
                g = xp.where(flipped, xp.zeros_like(g), g)   # a flipped sign: no step now, no flip next time
                p.data -= xp.sign(g) * size
                state["prev"][...] = g
        return loss
