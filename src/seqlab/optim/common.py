"""What the adaptive optimizers (RMSprop, Adagrad, Adadelta, Adamax, NAdam, RAdam, ASGD) share: torch's
argument checks with torch's messages, `maximize`, and torch's rounding of `lerp_`."""
from __future__ import annotations

from seqlab.backend import xp_of
from seqlab.optim.optimizer import check_implementation_flags

ZEROS = object()  # in `parameters_to_step`'s initial state: an array of zeros shaped as the parameter

# torch's words for the hyper-parameters in "Invalid ...: value"; any other name reads "Invalid <name> value".
_WORDS = {"lr": "learning rate", "eps": "epsilon value"}


def check_non_negative(**values: float) -> None:
    """torch's checks `if not 0.0 <= value: raise ValueError("Invalid learning rate: -1")`, in the order given
    (NaN fails them too)."""
    for name, v in values.items():
        if not 0.0 <= v:
            raise ValueError(f"Invalid {_WORDS.get(name, name + ' value')}: {v}")


def check_betas(betas) -> tuple[float, float]:
    """Two coefficients in [0, 1), as torch checks them; returned as a tuple."""
    if not isinstance(betas, (tuple, list)) or len(betas) != 2:
        raise ValueError(f"betas must be a pair (beta1, beta2), got {betas!r}")
    for i, b in enumerate(betas):
        if not 0.0 <= b < 1.0:
            raise ValueError(f"Invalid beta parameter at index {i}: {b}")
    return tuple(betas)


def check_flags(owner: str, maximize: bool, differentiable: bool) -> bool:
    """torch's implementation switches: `maximize` is supported here (returned as a bool, to store in the
    groups), `differentiable=True` is refused; foreach/fused/capturable are accepted and change nothing."""
    check_implementation_flags(owner, differentiable=differentiable)
    return bool(maximize)


def gradient(p, maximize: bool):
    """The gradient to descend: p.grad, or −p.grad to ascend (torch negates the gradient first, so every
    buffer holds what minimizing −f would hold)."""
    return -p.grad if maximize else p.grad


def parameters_to_step(optimizer, group: dict, **initial):
    """(p, state, g, xp) for each parameter of `group` that has a gradient. Its state is made on first use:
    "step" 0, then `initial` in the order given (torch's state_dict order; ZEROS makes an array of zeros
    like p, any other value is stored as it is). g is the gradient to descend (negated for maximize), xp
    the parameter's array module."""
    for p in group["params"]:
        if p.grad is None:
            continue
        xp = xp_of(p.data)
        state = optimizer.state.setdefault(id(p), {})
        if not state:
            state["step"] = 0
            for name, value in initial.items():
                state[name] = xp.zeros_like(p.data) if value is ZEROS else value
        yield p, state, gradient(p, group["maximize"]), xp


def lerp_(start, end, weight: float) -> None:
    """start ← start + weight·(end − start), in place, by torch's formula: for weight ≥ 0.5 it is
    end − (end − start)·(1 − weight), which gives `end` exactly at weight = 1. (torch's kernel fuses the
    multiply-add, so a value may differ from torch's in the last bit.)"""
    if abs(weight) < 0.5:
        start += weight * (end - start)
    else:
        start[...] = end - (end - start) * (1 - weight)
