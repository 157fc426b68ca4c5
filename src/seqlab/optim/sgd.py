"""Stochastic gradient descent with momentum, Nesterov and weight decay (torch.optim.SGD's update)."""
from __future__ import annotations

from seqlab.optim.optimizer import Optimizer, check_implementation_flags, run_closure


class SGD(Optimizer):
    """θ ← θ − lr·d, where g = ∇ + wd·θ, b = μ·b + (1 − dampening)·g, d = g + μ·b (Nesterov) or b.
    `maximize` ascends: ∇ is negated first (torch's order), so every buffer holds what minimizing −f holds."""

    def __init__(self, params, lr: float = 1e-3, momentum: float = 0.0, dampening: float = 0.0,
                 weight_decay: float = 0.0, nesterov: bool = False, *, maximize: bool = False,
                 foreach: bool | None = None, differentiable: bool = False, fused: bool | None = None):
        check_implementation_flags("SGD", differentiable=differentiable)
        if nesterov and not (isinstance(momentum, (int, float)) and momentum > 0 and dampening == 0):
            raise ValueError("Nesterov momentum needs momentum > 0 and dampening = 0")
        super().__init__(params, dict(lr=lr, momentum=momentum, dampening=dampening,
                                      weight_decay=weight_decay, nesterov=nesterov, maximize=bool(maximize)))

    def step(self, closure=None):
        """One update; `closure` (torch's): recomputes the loss and its gradients first, and is returned."""
        loss = run_closure(closure)
        for group in self.param_groups:
            lr, mu, damp = group["lr"], group["momentum"], group["dampening"]
            wd, nesterov, maximize = group["weight_decay"], group["nesterov"], group.get("maximize", False)
            for p in group["params"]:
                if p.grad is None:
                    continue
                g = -p.grad if maximize else p.grad
                if wd:
                    g = g + wd * p.data
                if mu:
                    state = self.state.setdefault(id(p), {})
                    buf = state.get("momentum_buffer")
                    if buf is None:
                        buf = state["momentum_buffer"] = g.copy()
                    else:
                        buf *= mu
                        buf += (1 - damp) * g
                    g = g + mu * buf if nesterov else buf
                p.data -= lr * g
        return loss
