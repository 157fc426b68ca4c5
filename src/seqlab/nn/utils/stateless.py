"""`functional_call`: run a module with other tensors in place of its parameters and buffers, as torch's.

    grads = seqlab.func.grad(lambda p, x: functional_call(model, p, x).sum())(params, x)

The tensors are given by their state-dict names ("0.weight", "encoder.layers.1.norm1.bias"); for the call they
replace the module's own (which nothing changes), and they are put back afterwards, also when the forward
raises. A gradient of the result therefore flows to the given tensors, not to the parameters. This is the
module's `torch.nn.utils.stateless.functional_call` (deprecated there, with its warning); `seqlab.func` has the
current one, which also takes a tuple of dicts.

Tied weights (one tensor under two names, as a language model's embedding and output layer) follow torch's
`tie_weights=True` rule: a value given for one name is used for all of its names, and two different values for
one tied tensor are refused. `strict=True` refuses keys that are missing or unexpected, as torch's.

One deliberate difference: for a parametrized tensor (`nn.utils.parametrize`), a value given under its plain
name ("weight") replaces the parametrized value for the call, bypassing the parametrization, as torch's
documentation says (torch 2.13 itself sends it through the parametrization's `right_inverse` instead, into the
original, so no gradient reaches the given tensor). A value under "parametrizations.weight.original" is used
as the original, and the parametrization runs on it.
"""
from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

from seqlab.autograd.tensor import Tensor
from seqlab.nn.module import Module

__all__ = ["functional_call"]

_MISSING = object()  # a name the module does not have: set for the call, deleted after


def _named_tensors(module: Module) -> list[tuple[str, Tensor]]:
    """Every (name, parameter or buffer), a tensor or module shared under several names once per name (torch's
    `named_parameters(remove_duplicate=False)` then `named_buffers(remove_duplicate=False)`)."""
    params, buffers = [], []
    for mname, mod in module._all_named_modules():
        pre = f"{mname}." if mname else ""
        params += [(pre + n, p) for n, p in mod._parameters.items() if p is not None]
        buffers += [(pre + n, b) for n, b in mod._buffers.items() if b is not None]
    return params + buffers


def _untie(module: Module, given: dict) -> dict:
    """`given` with a tied tensor's value under each of its names (torch's tie_weights=True); two different
    values for one tied tensor are a ValueError."""
    names_of: dict[int, set] = {}
    for name, t in _named_tensors(module):
        names_of.setdefault(id(t), set()).add(name)
    tied = {name: names for names in names_of.values() if len(names) > 1 for name in names}
    out = dict(given)
    for name in given:
        if name not in tied:
            continue
        named = [n for n in tied[name] if n in given]
        if len(named) > 1 and len({id(given[n]) for n in named}) != 1:
            raise ValueError(f"functional_call got multiple values for keys {sorted(tied[name])}, which are tied. "
                             "Consider using tie_weights=False")
        for other in tied[name]:
            out[other] = given[name]
    return out


def _check_keys(module: Module, names) -> None:
    valid = {name for name, _ in _named_tensors(module)}
    missing, unexpected = sorted(valid - set(names)), sorted(set(names) - valid)
    msgs = []
    if unexpected:
        msgs.append(f"Unexpected key(s): {', '.join(map(repr, unexpected))}.")
    if missing:
        msgs.append(f"Missing key(s): {', '.join(map(repr, missing))}.")
    if msgs:
        raise RuntimeError(f"Error(s) in reparametrizing for {type(module).__name__}:\n\t" + "\n\t".join(msgs))


def _submodule(module: Module, path: str) -> Module:
    mod = module
    for part in path.split(".") if path else []:
        child = mod._modules.get(part) if part in mod._modules else getattr(mod, part, _MISSING)
        if child is _MISSING:
            raise AttributeError(f"{type(mod).__name__} has no attribute `{part}`")
        if not isinstance(child, Module):
            raise TypeError(f"submodule `{path}`: {child} is not an instance of seqlab.nn.Module")
        mod = child
    return mod


def _parametrized(mod: Module, name: str) -> bool:
    from seqlab.nn.utils.parametrize import is_parametrized

    return is_parametrized(mod, name)


def _swap(mod: Module, name: str, value) -> tuple[str, Any]:
    """Put `value` at `name` of `mod`; (where it went, what was there) for `_restore`."""
    if value is not None and value is not _MISSING and not isinstance(value, Tensor):
        raise TypeError(f"{value!r} is not an instance of seqlab.Tensor")
    if name in mod._parameters:
        old, mod._parameters[name] = mod._parameters[name], value
        return "_parameters", old
    if name in mod._buffers:
        old, mod._buffers[name] = mod._buffers[name], value
        return "_buffers", old
    if _parametrized(mod, name):  # the injected class is this module's own: swap its property for the call
        cls = type(mod)
        old = cls.__dict__[name]
        setattr(cls, name, property(lambda self: value, old.fset))
        return "property", old
    old = mod.__dict__.get(name, _MISSING)
    if old is not _MISSING and old is not None and not isinstance(old, Tensor):
        raise TypeError(f"attribute `{name}`: {old!r} is not an instance of seqlab.Tensor")
    object.__setattr__(mod, name, value)
    return "__dict__", old


def _current(mod: Module, name: str, where: str):
    """What the module holds at `name` now (a forward may have replaced a buffer)."""
    if where in ("_parameters", "_buffers"):
        return getattr(mod, where).get(name)
    if where == "__dict__":
        return mod.__dict__.get(name)
    return None


def _restore(mod: Module, name: str, where: str, old) -> None:
    if where in ("_parameters", "_buffers"):
        getattr(mod, where)[name] = old
    elif where == "property":
        setattr(type(mod), name, old)
    elif old is _MISSING:
        mod.__dict__.pop(name, None)
    else:
        object.__setattr__(mod, name, old)


def _merge(parameter_and_buffer_dicts) -> dict:
    """One dict, from a dict or a sequence of dicts with distinct keys (torch.func's errors)."""
    if isinstance(parameter_and_buffer_dicts, dict):
        return parameter_and_buffer_dicts
    if isinstance(parameter_and_buffer_dicts, Sequence) and not isinstance(parameter_and_buffer_dicts, str):
        if not all(isinstance(d, dict) for d in parameter_and_buffer_dicts):
            raise ValueError("Expected all elements of parameter_and_buffer_dicts to be dictionaries")
        counts: dict = {}
        for d in parameter_and_buffer_dicts:
            for k in d:
                counts[k] = counts.get(k, 0) + 1
        repeated = [k for k, n in counts.items() if n > 1]
        if repeated:
            raise ValueError(f"{repeated} appeared in multiple dictionaries; behavior of functional call is "
                             "ambiguous")
        return {k: v for d in parameter_and_buffer_dicts for k, v in d.items()}
    raise ValueError(f"Expected parameter_and_buffer_dicts to be a dict, or a list/tuple of dicts, but got "
                     f"{type(parameter_and_buffer_dicts)}")


def _functional_call(module: Module, parameters_and_buffers: dict, args=None, kwargs: dict | None = None, *,
                     tie_weights: bool = True, strict: bool = False):
    """The call itself: swap in, run `module(*args, **kwargs)`, swap back (always), write back into
    `parameters_and_buffers` what the module held at the end under each of its keys (torch's rule: a buffer a
    forward replaced, `self.count = self.count + 1`, comes back in the dict)."""
    if not isinstance(module, Module):
        raise TypeError(f"functional_call expects a seqlab.nn.Module, got {type(module).__name__}")
    kwargs = {} if kwargs is None else kwargs
    args = () if args is None else args if isinstance(args, tuple) else (args,)
    given = _untie(module, parameters_and_buffers) if tie_weights else parameters_and_buffers
    if strict:
        _check_keys(module, given)
    swapped: list = []  # (module, name, where, old, key), in swap order
    try:
        for key, value in given.items():
            path, _, name = key.rpartition(".")
            mod = _submodule(module, path)
            where, old = _swap(mod, name, value)
            swapped.append((mod, name, where, old, key))
        return module(*args, **kwargs)
    finally:
        now = {}
        for mod, name, where, old, key in reversed(swapped):
            now[key] = _current(mod, name, where)
            _restore(mod, name, where, old)
        for key in parameters_and_buffers:
            if now.get(key) is not None:
                parameters_and_buffers[key] = now[key]


def functional_call(module: Module, parameters_and_buffers: dict, args=None, kwargs: dict | None = None, *,
                    tie_weights: bool = True, strict: bool = False):
    """torch.nn.utils.stateless.functional_call: `module(*args, **kwargs)` with the tensors of
    `parameters_and_buffers` (by state-dict name) in place of its own; deprecated in torch for
    `torch.func.functional_call` (`seqlab.func.functional_call`), with the same FutureWarning."""
    warnings.warn("`torch.nn.utils.stateless.functional_call` is deprecated as of PyTorch 2.0 and will be removed "
                  "in a future version of PyTorch. Please use `torch.func.functional_call` instead which is a "
                  "drop-in replacement.", FutureWarning, stacklevel=2)
    return _functional_call(module, parameters_and_buffers, args, kwargs, tie_weights=tie_weights, strict=strict)
