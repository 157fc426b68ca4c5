"""Containers: Sequential, ModuleList, ModuleDict (names '0', '1', ... as torch)."""
from __future__ import annotations

from collections import OrderedDict
from typing import Iterable

from seqlab.nn.module import Module


class Sequential(Module):
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

    def forward(self, x):
        for m in self._modules.values():
            x = m(x)
        return x

    def __getitem__(self, i):
        items = list(self._modules.items())
        if isinstance(i, slice):
            return Sequential(OrderedDict(items[i]))
        return items[i][1]

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def append(self, module: Module) -> "Sequential":
        self.add_module(str(len(self._modules)), module)
        return self

    def extend(self, modules: Iterable[Module]) -> "Sequential":
        for m in modules:
            self.append(m)
        return self

    def insert(self, index: int, module: Module) -> "Sequential":
        _insert(self, index, module)
        return self

    def __setitem__(self, i: int, module: Module) -> None:
        self.add_module(list(self._modules)[i], module)

    def __delitem__(self, i) -> None:
        _delete(self, i)

    def pop(self, i: int) -> Module:
        m = self[i]
        del self[i]
        return m


def _insert(container: Module, index: int, module: Module) -> None:
    """`module` at `index` of a numbered container (negative counts from the end, as list.insert), renumbered."""
    items = list(container._modules.values())
    items.insert(index, module)
    _renumber(container, items)


def _delete(container: Module, i) -> None:
    """Remove item(s) `i` (an index or a slice) from a numbered container; the rest renumbered '0', '1', ...
    as torch does, so the names stay those of a fresh container (and of its state dict)."""
    items = list(container._modules.values())
    del items[i]
    _renumber(container, items)


def _renumber(container: Module, items: list) -> None:
    container._modules.clear()
    for k, m in enumerate(items):
        container.add_module(str(k), m)


class ModuleList(Module):
    def __init__(self, modules: Iterable[Module] = ()):
        super().__init__()
        for m in modules:
            self.append(m)

    def append(self, module: Module) -> "ModuleList":
        self.add_module(str(len(self._modules)), module)
        return self

    def extend(self, modules: Iterable[Module]) -> "ModuleList":
        for m in modules:
            self.append(m)
        return self

    def __getitem__(self, i):
        items = list(self._modules.values())
        return ModuleList(items[i]) if isinstance(i, slice) else items[i]

    def __setitem__(self, i: int, module: Module) -> None:
        keys = list(self._modules)
        self.add_module(keys[i], module)

    def insert(self, index: int, module: Module) -> None:
        _insert(self, index, module)

    def __delitem__(self, i) -> None:
        _delete(self, i)

    def pop(self, i: int) -> Module:
        m = self[i]
        del self[i]
        return m

    def __iadd__(self, modules: Iterable[Module]) -> "ModuleList":
        return self.extend(modules)

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())


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
