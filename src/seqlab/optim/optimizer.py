"""`Optimizer` base: parameter groups and a torch-shaped state_dict."""
from __future__ import annotations

import copy
import math
from typing import Any, Iterable

from seqlab import backend
from seqlab.autograd.tensor import Tensor

# The hyper-parameters that must be finite numbers >= 0 wherever a group has them.
NON_NEGATIVE = ("lr", "eps", "weight_decay", "momentum", "dampening")


class ParamState(dict):
    """Per-parameter state, keyed by id(param); indexed by the parameter itself too (``opt.state[p]``, as
    torch's users read ``opt.state[p]["exp_avg"]``). As torch's ``defaultdict(dict)``, reading the state of a
    parameter that has none yet makes it an empty dict, so a custom optimizer's ``self.state[p]`` works
    from its first step. Iterating gives the ids, not the parameters."""

    def __missing__(self, key):
        value = {}
        super().__setitem__(key, value)
        return value

    @staticmethod
    def _key(k):
        return id(k) if isinstance(k, Tensor) else k

    def __getitem__(self, k):
        return super().__getitem__(self._key(k))

    def __setitem__(self, k, v):
        super().__setitem__(self._key(k), v)

    def __contains__(self, k):
        return super().__contains__(self._key(k))

    def get(self, k, default=None):
        return super().get(self._key(k), default)

    def setdefault(self, k, default=None):
        return super().setdefault(self._key(k), default)


def run_closure(closure):
    """torch's `step(closure)`: the closure (which recomputes the loss and calls backward) runs with
    gradients on; its loss is what step returns (None without one)."""
    if closure is None:
        return None
    from seqlab.autograd.function import enable_grad

    with enable_grad():
        return closure()


def check_implementation_flags(owner: str, differentiable: bool = False, **ignored: Any) -> None:
    """torch's switches between implementations of the same update (`foreach`, `fused`, `capturable`) are
    accepted and change nothing here: seqlab has one implementation. `differentiable` changes what is computed
    and is not supported, so True is refused rather than ignored. (`maximize` is each optimizer's own.)"""
    if differentiable:
        raise ValueError(f"{owner}: differentiable=True is not supported (seqlab's optimizer steps are not part "
                         f"of the autograd graph)")


class Optimizer:
    """Holds parameter groups (dicts with 'params' and hyper-parameters) and per-parameter state."""

    def __init__(self, params: Iterable, defaults: dict[str, Any]):
        self.defaults = defaults
        if isinstance(params, Tensor) or not hasattr(params, "__iter__"):
            raise TypeError(f"{type(self).__name__} takes an iterable of Tensors (e.g. model.parameters()) or of "
                            f"parameter-group dicts, got {type(params).__name__}")
        params = list(params)
        if not params:
            raise ValueError("optimizer got an empty parameter list")
        groups = params if isinstance(params[0], dict) else [{"params": params}]
        self.param_groups: list[dict] = []
        self.state: ParamState = ParamState()  # keyed by id(param); opt.state[p] works too
        for g in groups:
            self.add_param_group(g)

    def __deepcopy__(self, memo):
        """A deep copy whose state follows the copied parameters, as torch's (its state is keyed by the
        tensors): copied with its model, the copy's parameters find their step counts and moments. The
        state is keyed by id(param), so each entry moves to its parameter's copy (one made now, or the one
        the same deepcopy made of the model)."""
        new = type(self).__new__(type(self))
        memo[id(self)] = new
        for k, v in self.__dict__.items():
            if k != "state":
                new.__dict__[k] = copy.deepcopy(v, memo)
        by_id = {id(p): p for g in self.param_groups for p in g["params"]}
        new.state = ParamState({id(copy.deepcopy(by_id[k], memo)) if k in by_id else k: copy.deepcopy(v, memo)
                                for k, v in self.state.items()})
        return new

    def add_param_group(self, group: dict) -> None:
        """Adds a group: a dict with 'params' (tensors, or torch 2's (name, tensor) pairs as
        `named_parameters()` gives; the names are kept under 'param_names') and any hyper-parameters (the
        optimizer's defaults fill the rest)."""
        if not isinstance(group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(group).__name__}")
        group = dict(group)
        params = group["params"]
        if isinstance(params, set):
            raise TypeError("optimizer parameters need to be organized in ordered collections, but the ordering "
                            "of tensors in sets will change between runs; use a list instead")
        params = [params] if isinstance(params, Tensor) else list(params)
        names = [p[0] for p in params if isinstance(p, tuple)]
        group["params"] = [p[1] if isinstance(p, tuple) and len(p) == 2 else p for p in params]
        if names:
            if len(names) != len(params):
                raise ValueError("all optimizer params should be with/without names. Some param names are missing")
            group["param_names"] = names
        for g in self.param_groups:
            if ("param_names" in g) != ("param_names" in group):
                raise ValueError(f"all optimizer param groups should be with/without names. cannot add param group "
                                 f"{'with' if 'param_names' in group else 'without'} names to the optimizer")
        for p in group["params"]:
            if not isinstance(p, Tensor):
                raise TypeError(f"{type(self).__name__} takes an iterable of Tensors (e.g. model.parameters()) "
                                f"or of parameter-group dicts, got an iterable holding {type(p).__name__}")
        for k, v in self.defaults.items():
            group.setdefault(k, v)
        for k in NON_NEGATIVE:
            v = group.get(k, 0.0)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not (math.isfinite(v) and v >= 0):
                raise ValueError(f"{type(self).__name__}: {k} must be a finite number >= 0, got {v!r}")
        seen = {id(p) for g in self.param_groups for p in g["params"]}
        for p in group["params"]:
            if id(p) in seen:
                raise ValueError("a parameter appears in more than one parameter group")
        self.param_groups.append(group)

    def zero_grad(self, set_to_none: bool = True) -> None:
        for g in self.param_groups:
            for p in g["params"]:
                if set_to_none:
                    p.grad = None
                elif p.grad is not None:
                    p.grad[...] = 0

    def step(self) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    # ---- state, with parameters numbered in group order (as torch) -------------
    def state_dict(self) -> dict:
        index, groups, n = {}, [], 0
        for g in self.param_groups:
            ids = []
            for p in g["params"]:
                index[id(p)] = n
                ids.append(n)
                n += 1
            groups.append({**{k: v for k, v in g.items() if k != "params"}, "params": ids})
        state = {index[pid]: {k: (v.copy() if hasattr(v, "copy") else v) for k, v in s.items()}
                 for pid, s in self.state.items() if pid in index}
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict: dict) -> None:
        groups = state_dict["param_groups"]
        if len(groups) != len(self.param_groups):
            raise ValueError(f"optimizer state has {len(groups)} parameter groups, this optimizer has "
                             f"{len(self.param_groups)}")
        params = [p for g in self.param_groups for p in g["params"]]
        for mine, theirs in zip(self.param_groups, groups):
            if len(mine["params"]) != len(theirs["params"]):
                raise ValueError("optimizer state does not match the parameter groups' sizes")
            for k, v in theirs.items():
                if k != "params":
                    mine[k] = copy.deepcopy(v)
        state = {}
        for i, s in state_dict["state"].items():
            if not 0 <= int(i) < len(params):
                raise ValueError(f"optimizer state names parameter {i}; this optimizer has {len(params)}")
            p = params[int(i)]
            state[id(p)] = {k: _state_value(k, v, p, int(i)) for k, v in s.items()}
        self.state = ParamState(state)  # only once every entry fits: a refused state leaves the optimizer as it was


def _state_value(key: str, v, p, index: int):
    """One entry of a loaded per-parameter state: an array of the parameter's shape on its device and in its
    dtype; a one-element value (torch's 0-d `step` tensor) a Python number; other values as they are."""
    v = backend.from_torch(v)  # a state saved by torch.optim
    if not hasattr(v, "shape"):
        return v
    if getattr(v, "ndim", 0) == 0:
        x = v.item()
        return int(x) if key == "step" and float(x).is_integer() else x
    if tuple(v.shape) != tuple(p.shape):
        raise ValueError(f"optimizer state {key!r} of parameter {index} has shape {tuple(v.shape)}, "
                         f"the parameter has shape {tuple(p.shape)}")
    return backend.to_device(v, p.device).astype(p.dtype)
