"""RMSprop (Tieleman & Hinton 2012, lecture 6.5; d2l §12.8), torch.optim.RMSprop's update order."""
from __future__ import annotations

from seqlab.optim.common import ZEROS, check_flags, check_non_negative, lerp_, parameters_to_step
from seqlab.optim.optimizer import Optimizer, run_closure


class RMSprop(Optimizer):
    """Divide the gradient by a running root mean square of recent gradients:

        g ← ∇ + wd·θ;  s ← α s + (1 − α) g²                       (state 'square_avg')
        centered (Graves 2013, eq. 40): ḡ ← α ḡ + (1 − α) g;  s̃ = s − ḡ²   ('grad_avg'), else s̃ = s
        momentum μ > 0: b ← μ b + g / (√s̃ + eps);  θ ← θ − lr·b    ('momentum_buffer')
        else:           θ ← θ − lr·g / (√s̃ + eps)

    d2l §12.8 writes s ← γ s + (1 − γ) g² with γ = `alpha`. Centering divides by an estimate of the
    gradient's variance rather than its second moment. `maximize` ascends (the gradient is negated first,
    as torch); torch's foreach/capturable are accepted, differentiable=True is refused.
    """

    def __init__(self, params, lr: float = 1e-2, alpha: float = 0.99, eps: float = 1e-8,
                 weight_decay: float = 0, momentum: float = 0, centered: bool = False,
                 capturable: bool = False, foreach: bool | None = None, maximize: bool = False,
                 differentiable: bool = False):
        check_non_negative(lr=lr, eps=eps, momentum=momentum, weight_decay=weight_decay, alpha=alpha)
        maximize = check_flags("RMSprop", maximize, differentiable)
        super().__init__(params, dict(lr=lr, momentum=momentum, alpha=alpha, eps=eps, centered=bool(centered),
                                      weight_decay=weight_decay, maximize=maximize))

    def step(self, closure=None):
        """One update; `closure` (torch's): recomputes the loss and its gradients first, and is returned."""
        loss = run_closure(closure)
        for group in self.param_groups:
            # Python floats, so float32 parameters stay float32 (see Adam.step)
            lr, alpha, eps, wd, mu = map(float, (group["lr"], group["alpha"], group["eps"],
                                                 group["weight_decay"], group["momentum"]))
            buffers = {"square_avg": ZEROS, **({"momentum_buffer": ZEROS} if mu > 0 else {}),
                       **({"grad_avg": ZEROS} if group["centered"] else {})}
            for p, state, g, xp in parameters_to_step(self, group, **buffers):
                state["step"] += 1
                if wd:
                    g = g + wd * p.data
                s = state["square_avg"]
                s *= alpha
                s += (1 - alpha) * g * g                     # s ← α s + (1 − α) g²
                if group["centered"]:
                    g_avg = state["grad_avg"]
                    lerp_(g_avg, g, 1 - alpha)               # ḡ ← α ḡ + (1 − α) g
                    avg = xp.sqrt(s - g_avg * g_avg)         # √(s − ḡ²)
                else:
                    avg = xp.sqrt(s)
                avg += eps
                if mu > 0:
                    buf = state["momentum_buffer"]
                    buf *= mu
                    buf += g / avg                           # b ← μ b + g / (√s̃ + eps)
                    p.data -= lr * buf
                else:
                    p.data -= lr * g / avg
        return loss
