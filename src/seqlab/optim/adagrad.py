"""Adagrad (Duchi, Hazan & Singer 2011; d2l §12.7), torch.optim.Adagrad's update order."""
from __future__ import annotations

from seqlab.backend import xp_of
from seqlab.optim.common import check_flags, check_non_negative, gradient
from seqlab.optim.optimizer import Optimizer, run_closure


class Adagrad(Optimizer):
    """Per-coordinate learning rates that shrink with the squared gradients seen so far:

        g ← ∇ + wd·θ;  s ← s + g²                                  (state 'sum', starts at
        initial_accumulator_value)
        θ ← θ − lr / (1 + (t − 1)·lr_decay) · g / (√s + eps)        (t: state 'step', counted from 1)

    d2l §12.7: coordinates with large or frequent gradients get small steps, rare ones large steps; the sum
    only grows, so the effective learning rate decays like 1/√t even without `lr_decay`.

    As torch, the state of every parameter is made in the constructor (so `state_dict()` has it before the
    first step), and the constructor's `initial_accumulator_value` fills every group's sums (a value given in
    a group dict is stored, not used). `maximize` ascends; torch's foreach/fused are accepted,
    differentiable=True is refused.
    """

    def __init__(self, params, lr: float = 1e-2, lr_decay: float = 0, weight_decay: float = 0,
                 initial_accumulator_value: float = 0, eps: float = 1e-10, foreach: bool | None = None, *,
                 maximize: bool = False, differentiable: bool = False, fused: bool | None = None):
        check_non_negative(lr=lr, lr_decay=lr_decay, weight_decay=weight_decay,
                           initial_accumulator_value=initial_accumulator_value, eps=eps)
        maximize = check_flags("Adagrad", maximize, differentiable)
        super().__init__(params, dict(lr=lr, lr_decay=lr_decay, eps=eps, weight_decay=weight_decay,
                                      initial_accumulator_value=initial_accumulator_value, maximize=maximize))
        for group in self.param_groups:
            for p in group["params"]:
                self._init_state(p)

    def _init_state(self, p) -> dict:
        state = self.state.setdefault(id(p), {})
        if not state:
            state["step"] = 0
            state["sum"] = xp_of(p.data).full_like(p.data, self.defaults["initial_accumulator_value"])
        return state

    def step(self, closure=None):
        """One update; `closure` (torch's): recomputes the loss and its gradients first, and is returned."""
        loss = run_closure(closure)
        for group in self.param_groups:
            lr, lr_decay, eps, wd = map(float, (group["lr"], group["lr_decay"], group["eps"], group["weight_decay"]))
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self._init_state(p)  # a parameter added with add_param_group after the constructor
                state["step"] += 1
                g = gradient(p, group["maximize"])
                if wd:
                    g = g + wd * p.data
                clr = lr / (1 + (state["step"] - 1) * lr_decay)
                s = state["sum"]
                s += g * g                                   # s ← s + g²
                std = xp_of(s).sqrt(s)
                std += eps
                p.data -= clr * g / std
        return loss
