"""Containers: Sequential, ModuleList, ModuleDict, ParameterList, ParameterDict (names '0', '1', ... or the
keys, as torch)."""
from __future__ import annotations

import operator
from collections import OrderedDict
from collections.abc import Iterable as _Iterable, Mapping
from typing import Any, Iterable, Iterator

import numpy as np

from seqlab import backend
from seqlab.autograd.tensor import Tensor
from seqlab.nn.module import Module, Parameter


class _Numbered(Module):
    """What Sequential and ModuleList share: modules named '0', '1', ..., edited in place as torch edits them
    (after an insert or a deletion the rest are renumbered, so the names are those of a fresh container and
    of its state dict)."""

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def append(self, module: Module):
        self.add_module(str(len(self._modules)), module)
        return self

    def extend(self, modules: Iterable[Module]):
        for m in modules:
            self.append(m)
        return self

    def __setitem__(self, i: int, module: Module) -> None:
        self.add_module(list(self._modules)[i], module)

    def __delitem__(self, i) -> None:
        items = list(self._modules.values())
        del items[i]
        self._renumber(items)

    def pop(self, i: int) -> Module:
        m = self[i]
        del self[i]
        return m

    def _insert(self, index: int, module: Module) -> None:
        items = list(self._modules.values())
        items.insert(index, module)  # negative counts from the end, as list.insert
        self._renumber(items)

    def _renumber(self, items: list) -> None:
        self._modules.clear()
        for k, m in enumerate(items):
            self.add_module(str(k), m)


class Sequential(_Numbered):
    """Modules applied in order; `Sequential(a, b)` names them '0', '1', and
    `Sequential(OrderedDict(name=module))` keeps the given names (as torch)."""

    def __init__(self, *modules: Module):
        super().__init__()
        if len(modules) == 1 and isinstance(modules[0], dict):
            for name, m in modules[0].items():
                self.add_module(name, m)
        else:
            for i, m in enumerate(modules):
                self.add_module(str(i), m)

    def forward(self, input):  # noqa: A002 (torch's name)
        for m in self._modules.values():
            input = m(input)
        return input

    def __getitem__(self, i):
        items = list(self._modules.items())
        if isinstance(i, slice):
            return Sequential(OrderedDict(items[i]))
        return items[i][1]

    def insert(self, index: int, module: Module) -> "Sequential":
        self._insert(index, module)
        return self


class ModuleList(_Numbered):
    def __init__(self, modules: Iterable[Module] | None = None):
        super().__init__()
        for m in modules or ():
            self.append(m)

    def __getitem__(self, i):
        items = list(self._modules.values())
        return ModuleList(items[i]) if isinstance(i, slice) else items[i]

    def insert(self, index: int, module: Module) -> None:
        self._insert(index, module)

    def __iadd__(self, modules: Iterable[Module]) -> "ModuleList":
        return self.extend(modules)


class ModuleDict(Module):
    def __init__(self, modules: dict | Iterable | None = None):
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key: str) -> Module:
        return self._modules[key]

    def __setitem__(self, key: str, module: Module) -> None:
        self.add_module(key, module)

    def __contains__(self, key: str) -> bool:
        return key in self._modules

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules)

    def keys(self):
        return self._modules.keys()

    def items(self):
        return self._modules.items()

    def values(self):
        return self._modules.values()

    def update(self, modules: dict | Iterable) -> None:
        """From a mapping or from (name, module) pairs, as torch."""
        for k, m in (modules.items() if hasattr(modules, "items") else modules):
            self.add_module(k, m)

    def clear(self) -> None:
        self._modules.clear()

    def pop(self, key: str) -> Module:
        return self._modules.pop(key)

    def __delitem__(self, key: str) -> None:
        del self._modules[key]


# ---- parameter containers -------------------------------------------------------------------------
def _as_parameter(value: Any) -> Any:
    """What torch stores for `value` in a ParameterList/ParameterDict: a Tensor that is not a Parameter
    becomes one (sharing its array, requires_grad=True), and so does a plain NumPy/CuPy array (seqlab's
    stand-in for a torch tensor; a torch tensor is read as its NumPy copy); Parameters, modules and other
    objects are kept as they are (a module is registered as a submodule, anything else is a plain
    attribute, as torch)."""
    if isinstance(value, Parameter):
        return value
    if isinstance(value, Tensor):
        return Parameter(value)
    value = backend.from_torch(value)
    if isinstance(value, np.ndarray) or (hasattr(value, "shape") and backend.xp_of(value) is not np):
        return Parameter(value)
    return value


def _check_name(container: str, name: str, value: Any) -> None:
    if isinstance(value, (Parameter, Module)):
        if not name:
            raise KeyError(f'{container}: parameter name can\'t be empty string ""')
        if "." in name:
            raise KeyError(f'{container}: parameter name can\'t contain ".", got {name!r}')


def _describe(p: Any) -> str:
    """torch's one-line description of an entry, with NumPy's dtype names."""
    if isinstance(p, Tensor):
        size = "x".join(str(s) for s in p.shape)
        device = f" ({p.device})" if p.device != "cpu" else ""
        return f"{'Parameter' if isinstance(p, Parameter) else 'Tensor'} containing: [{p.dtype} of size {size}{device}]"
    return f"Object of type: {type(p).__name__}"


def _container_repr(module: Module) -> str:
    """torch's layout: one indented line per entry (then the registered submodules)."""
    extra = module.extra_repr()
    lines = (extra.split("\n") if extra else []) + \
        [f"({n}): " + repr(m).replace("\n", "\n  ") for n, m in module.named_children()]
    if not lines:
        return f"{type(module).__name__}()"
    return f"{type(module).__name__}(\n  " + "\n  ".join(lines) + "\n)"


class ParameterList(Module):
    """Parameters in a list, registered as '0', '1', ... (torch's names in `named_parameters`, `state_dict`
    and so for optimizers through `model.parameters()`).

    `append`, `extend`, `+=`, `len`, iteration, indexing (negative, slices give a new ParameterList) and
    item assignment, as torch's. A Tensor or a plain array put in becomes a `Parameter`.
    """

    def __init__(self, values: Iterable[Any] | None = None) -> None:
        super().__init__()
        self._size = 0
        if values is not None:
            self += values

    def _get_abs_string_index(self, idx) -> str:
        idx = operator.index(idx)
        if not (-len(self) <= idx < len(self)):
            raise IndexError(f"index {idx} is out of range")
        if idx < 0:
            idx += len(self)
        return str(idx)

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            out = self.__class__()
            for i in range(*idx.indices(len(self))):
                out.append(self[i])
            return out
        return getattr(self, self._get_abs_string_index(idx))

    def __setitem__(self, idx: int, param: Any) -> None:
        name = self._get_abs_string_index(idx)
        setattr(self, name, _as_parameter(param))

    def __len__(self) -> int:
        return self._size

    def __iter__(self) -> Iterator[Any]:
        return iter([self[i] for i in range(len(self))])

    def __iadd__(self, parameters: Iterable[Any]) -> "ParameterList":
        return self.extend(parameters)

    def __dir__(self) -> list:
        return [k for k in super().__dir__() if not k.isdigit()]

    def append(self, value: Any) -> "ParameterList":
        new_idx = len(self)
        self._size += 1
        self[new_idx] = value
        return self

    def extend(self, values: Iterable[Any]) -> "ParameterList":
        if not isinstance(values, _Iterable) or isinstance(values, (Tensor, np.ndarray)):
            raise TypeError("ParameterList.extend should be called with an iterable, but got "
                            + type(values).__name__)
        for value in values:
            self.append(value)
        return self

    def extra_repr(self) -> str:
        return "\n".join(f"  ({k}): {_describe(p)}" for k, p in enumerate(self))

    def __repr__(self) -> str:
        return _container_repr(self)

    def __call__(self, *args, **kwargs):
        raise RuntimeError("ParameterList should not be called.")


class ParameterDict(Module):
    """Parameters by string key, registered under the keys (torch's names in `named_parameters` and
    `state_dict`), with a dict's methods: [], in, len, iteration over keys, keys/values/items, get,
    setdefault, pop, popitem, clear, copy, fromkeys, update and |, |=.

    As torch: `update` (and the constructor) keeps the order of an OrderedDict, a ParameterDict or a
    sequence of (key, value) pairs, but takes a plain dict's items sorted by key. A Tensor or a plain array
    put in becomes a `Parameter`.
    """

    def __init__(self, parameters: Any = None) -> None:
        super().__init__()
        self._keys: dict = {}
        if parameters is not None:
            self.update(parameters)

    def _key_to_attr(self, key: str) -> str:
        if not isinstance(key, str):
            raise TypeError("Index given to ParameterDict cannot be used as a key as it is not a string "
                            f"(type is '{type(key).__name__}').")
        return key

    def __getitem__(self, key: str) -> Any:
        attr = self._key_to_attr(key)
        if attr not in self._keys:
            raise KeyError(key)
        return getattr(self, attr)

    def __setitem__(self, key: str, value: Any) -> None:
        attr = self._key_to_attr(key)
        value = _as_parameter(value)
        _check_name("ParameterDict", attr, value)
        self._keys[key] = None
        setattr(self, attr, value)

    def __delitem__(self, key: str) -> None:
        attr = self._key_to_attr(key)
        del self._keys[key]
        delattr(self, attr)

    def __len__(self) -> int:
        return len(self._keys)

    def __iter__(self) -> Iterator[str]:
        return iter(self._keys)

    def __reversed__(self) -> Iterator[str]:
        return reversed(list(self._keys))

    def __contains__(self, key) -> bool:
        return key in self._keys

    def copy(self) -> "ParameterDict":
        """A new ParameterDict holding the same parameters (not copies of them), as torch's."""
        return ParameterDict(OrderedDict((k, self[k]) for k in self._keys))

    def setdefault(self, key: str, default: Any = None) -> Any:
        if key not in self:
            self[key] = default
        return self[key]

    def clear(self) -> None:
        for k in list(self._keys):
            del self[k]

    def pop(self, key: str) -> Any:
        v = self[key]
        del self[key]
        return v

    def popitem(self) -> tuple:
        """The last inserted (key, parameter) pair, removed."""
        if not self._keys:
            raise KeyError("popitem(): ParameterDict is empty")
        k = next(reversed(self._keys))
        return k, self.pop(k)

    def get(self, key: str, default: Any = None) -> Any:
        return self[key] if key in self else default

    def fromkeys(self, keys: Iterable[str], default: Any = None) -> "ParameterDict":
        return ParameterDict((k, default) for k in keys)

    def keys(self):
        return self._keys.keys()

    def items(self) -> Iterator[tuple]:
        return ((k, self[k]) for k in self._keys)

    def values(self) -> Iterator[Any]:
        return (self[k] for k in self._keys)

    def update(self, parameters: Any) -> None:
        if not isinstance(parameters, _Iterable):
            raise TypeError("ParametersDict.update should be called with an iterable of key/value pairs, but got "
                            + type(parameters).__name__)
        if isinstance(parameters, (OrderedDict, ParameterDict)):
            for key, parameter in parameters.items():
                self[key] = parameter
        elif isinstance(parameters, Mapping):
            for key, parameter in sorted(parameters.items()):  # a plain dict: sorted by key, as torch
                self[key] = parameter
        else:
            for j, p in enumerate(parameters):
                if not isinstance(p, _Iterable):
                    raise TypeError(f"ParameterDict update sequence element #{j} should be Iterable; is "
                                    + type(p).__name__)
                if len(p) != 2:
                    raise ValueError(f"ParameterDict update sequence element #{j} has length {len(p)}; 2 is required")
                self[p[0]] = p[1]

    def extra_repr(self) -> str:
        return "\n".join(f"  ({k}): {_describe(p)}" for k, p in self.items())

    def __repr__(self) -> str:
        return _container_repr(self)

    def __call__(self, *args, **kwargs):
        raise RuntimeError("ParameterDict should not be called.")

    def __or__(self, other: "ParameterDict") -> "ParameterDict":
        out = self.copy()
        out.update(other)
        return out

    def __ror__(self, other: "ParameterDict") -> "ParameterDict":
        out = other.copy()
        out.update(self)
        return out

    def __ior__(self, other: "ParameterDict") -> "ParameterDict":
        self.update(other)
        return self
