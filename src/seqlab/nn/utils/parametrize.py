"""Parametrizations, as torch.nn.utils.parametrize: a module's weight computed from other tensors.

    register_parametrization(linear, "weight", Symmetric())   # linear.weight is now Symmetric()(original)

The parameter (or buffer) `name` of the module moves to `module.parametrizations[name].original` (or, when
the parametrization's `right_inverse` returns several tensors, `original0`, `original1`, ...), and reading
`module.name` runs the parametrizations on it, in the order they were registered, every time (under
`cached()` once per name until the block ends); assigning `module.name = X` stores `right_inverse(X)` in the
originals. The gradient flows through the parametrization to the originals, which are what an optimizer
updates and what `state_dict()` holds (`parametrizations.weight.original`, torch's keys, so torch's
parametrized checkpoints load). As torch does, the module's class is replaced by a subclass named
`Parametrized<Class>` that holds a property per parametrized name; `remove_parametrizations` puts it back.
"""
from __future__ import annotations

import contextlib
from collections.abc import Sequence

from seqlab.autograd.function import no_grad
from seqlab.autograd.tensor import Tensor
from seqlab.nn.container import ModuleDict, ModuleList
from seqlab.nn.module import Module, Parameter

__all__ = ["ParametrizationList", "cached", "is_parametrized", "register_parametrization", "remove_parametrizations",
           "type_before_parametrizations"]

_cache_depth = 0
_cache: dict = {}


@contextlib.contextmanager
def cached():
    """Inside the block each parametrized tensor is computed once, at its first read, and reused (a
    parametrized RNN weight read at every step); leaving the outermost block drops the values."""
    global _cache_depth
    _cache_depth += 1
    try:
        yield
    finally:
        _cache_depth -= 1
        if not _cache_depth:
            _cache.clear()


def _register(module: Module, name: str, value) -> None:
    """`value` as a parameter of `module` if it is one, else as a buffer (torch's rule)."""
    if isinstance(value, Parameter):
        module.register_parameter(name, value)
    else:
        module.register_buffer(name, value)


def _set(dest: Tensor, src: Tensor) -> None:
    """dest takes src's values (and shape), keeping its identity: an optimizer holding dest sees them."""
    dest.data = src.data.astype(dest.dtype, copy=True) if src.data is not dest.data else dest.data


def _check_same(what: str, old, new, unsafe: bool, tail: str) -> None:
    if unsafe:
        return
    if new.dtype != old.dtype:
        raise ValueError(f"{what} may not change the dtype of the tensor, unless `unsafe` flag is enabled "
                         f"({tail}: {old.dtype} -> {new.dtype})")
    if tuple(new.shape) != tuple(old.shape):
        raise ValueError(f"{what} may not change the shape of the tensor, unless `unsafe` flag is enabled "
                         f"({tail}: {tuple(old.shape)} -> {tuple(new.shape)})")


def _right_inverse(modules, value, assigning: bool = False):
    """The registered parametrizations' right inverses, last registered first. At registration one without a
    right_inverse (or whose right_inverse raises NotImplementedError) passes the value on; when assigning
    (`module.weight = X`) that is torch's RuntimeError, or the NotImplementedError itself."""
    for m in reversed(list(modules)):
        inverse = getattr(m, "right_inverse", None)
        if inverse is None:
            if assigning:
                raise RuntimeError(f"parametrization {type(m).__name__} does not implement right_inverse.")
            continue
        try:
            value = inverse(value)
        except NotImplementedError:
            if assigning:
                raise
    return value


class ParametrizationList(ModuleList):
    """The parametrizations of one tensor, in registration order, and its original(s); called with no
    arguments it computes the parametrized tensor."""

    def __init__(self, modules: Sequence[Module], original: Tensor, unsafe: bool = False) -> None:
        if len(modules) == 0:
            raise ValueError("ParametrizationList requires one or more modules.")
        super().__init__(modules)
        self.unsafe = unsafe
        with no_grad():
            new = _right_inverse(self, original)
        if not isinstance(new, (Tensor, Sequence)):
            raise ValueError(f"'right_inverse' must return a Tensor or a Sequence of tensors (list, tuple...). "
                             f"Got {type(new).__name__}")
        self.is_tensor = isinstance(new, Tensor)
        self.ntensors = 1 if self.is_tensor else len(new)
        if self.is_tensor:
            if new.dtype != original.dtype:
                raise ValueError(f"When `right_inverse` outputs one tensor, it may not change the dtype "
                                 f"({original.dtype} -> {new.dtype})")
            _set(original, new)
            _register(self, "original", original)
        else:
            for i, part in enumerate(new):
                if not isinstance(part, Tensor):
                    raise ValueError(f"'right_inverse' must return a Tensor or a Sequence of tensors (list, "
                                     f"tuple...). Got element {i} of the sequence with type {type(part).__name__}.")
                part = part.detach()
                if isinstance(original, Parameter):
                    part = Parameter(part.data.copy(), requires_grad=original.requires_grad)
                _register(self, f"original{i}", part)
        if not unsafe:
            z = self()
            if not isinstance(z, Tensor):
                raise ValueError(f"A parametrization must return a tensor. Got {type(z).__name__}.")
            _check_same("Registering a parametrization", original, z, False, "unparametrized -> parametrized")

    def _originals(self) -> list:
        if self.is_tensor:
            return [self.original]
        return [getattr(self, f"original{i}") for i in range(self.ntensors)]

    def right_inverse(self, value: Tensor) -> None:
        """Store `value` through the parametrizations' right inverses (in place in the originals)."""
        with no_grad():
            value = _right_inverse(self, value, assigning=True)
            if self.is_tensor:
                if not isinstance(value, Tensor):
                    raise ValueError(f"`right_inverse` should return a tensor. Got {type(value).__name__}")
                _check_same("The tensor returned by `right_inverse`", self.original, value, self.unsafe,
                            "original -> returned")
                _set(self.original, value)
            else:
                if not isinstance(value, Sequence) or len(value) != self.ntensors:
                    raise ValueError(f"'right_inverse' must return a sequence of {self.ntensors} tensors, "
                                     f"got {type(value).__name__}")
                for i, (dest, part) in enumerate(zip(self._originals(), value)):
                    _check_same(f"Tensor {i} returned by `right_inverse`", dest, part, self.unsafe,
                                f"original{i} -> returned")
                    _set(dest, part)

    def forward(self) -> Tensor:
        modules = list(self._modules.values())
        x = modules[0](*self._originals())
        for m in modules[1:]:
            x = m(x)
        return x


def _inject_class(module: Module) -> None:
    """Give `module` a class of its own, a subclass of its class, to hold the properties."""
    cls = module.__class__
    module.__class__ = type(f"Parametrized{cls.__name__}", (cls,), {"__module__": cls.__module__,
                                                                    "_parametrized_from": cls})


def _inject_property(module: Module, name: str) -> None:
    def get(self) -> Tensor:
        p = self.parametrizations[name]
        if not _cache_depth:
            return p()
        key = (id(self), name)
        if key not in _cache:
            _cache[key] = p()
        return _cache[key]

    def set_(self, value) -> None:
        self.parametrizations[name].right_inverse(value if isinstance(value, Tensor) else Tensor._of(value))

    setattr(module.__class__, name, property(get, set_))


def is_parametrized(module: Module, tensor_name: str | None = None) -> bool:
    """Whether `module` has a parametrization (on `tensor_name`, when given)."""
    parametrizations = module.__dict__.get("_modules", {}).get("parametrizations")
    if not isinstance(parametrizations, ModuleDict):
        return False
    return len(parametrizations) > 0 if tensor_name is None else tensor_name in parametrizations


def register_parametrization(module: Module, tensor_name: str, parametrization: Module, *,
                             unsafe: bool = False) -> Module:
    """Make `module.<tensor_name>` the output of `parametrization` (a Module whose forward takes the
    original tensor, or the tensors its `right_inverse` returns), as torch.nn.utils.parametrize's; a second
    registration on the same name chains after the first. `unsafe=True` lets it change the shape or dtype."""
    parametrization.train(module.training)
    if is_parametrized(module, tensor_name):
        if not unsafe:
            y = getattr(module, tensor_name)
            x = parametrization(y)
            if not isinstance(x, Tensor):
                raise ValueError(f"A parametrization must return a tensor. Got {type(x).__name__}.")
            _check_same("Registering a parametrization", y, x, False, f"module.{tensor_name} -> parametrized")
            inverse = getattr(parametrization, "right_inverse", None)
            if inverse is not None:
                try:
                    z = inverse(x)
                except NotImplementedError:
                    pass
                else:
                    if not isinstance(z, Tensor):
                        raise ValueError(f"parametrization.right_inverse must return a tensor. Got: "
                                         f"{type(z).__name__}")
                    _check_same("The tensor returned by parametrization.right_inverse", y, z, False,
                                f"module.{tensor_name} -> returned")
        plist = module.parametrizations[tensor_name]
        plist.append(parametrization)
        plist.unsafe = plist.unsafe or unsafe
    elif tensor_name in module._parameters or tensor_name in module._buffers:
        original = getattr(module, tensor_name)
        if original is None:
            raise ValueError(f"Module '{type(module).__name__}' has {tensor_name} = None: nothing to parametrize")
        plist = ParametrizationList([parametrization], original, unsafe=unsafe)
        delattr(module, tensor_name)
        if not is_parametrized(module):
            _inject_class(module)
            module.parametrizations = ModuleDict()
        _inject_property(module, tensor_name)
        module.parametrizations[tensor_name] = plist
    else:
        raise ValueError(f"Module '{type(module).__name__}' does not have a parameter, a buffer, or a "
                         f"parametrized element with name '{tensor_name}'")
    return module


def remove_parametrizations(module: Module, tensor_name: str, leave_parametrized: bool = True) -> Module:
    """Undo `register_parametrization` on `tensor_name`: the tensor becomes a plain parameter (or buffer)
    again, holding its current parametrized value (`leave_parametrized=True`) or the original."""
    if not is_parametrized(module, tensor_name):
        raise ValueError(f"Module {type(module).__name__} does not have a parametrization on {tensor_name}")
    plist = module.parametrizations[tensor_name]
    if plist.is_tensor:
        original = plist.original
        if leave_parametrized:
            with no_grad():
                _set(original, getattr(module, tensor_name))
    elif leave_parametrized:
        t = getattr(module, tensor_name).detach()
        first = plist.original0
        original = Parameter(t.data.copy(), requires_grad=first.requires_grad) if isinstance(first, Parameter) else t
    else:
        raise ValueError("Cannot leave unparametrized (`leave_parametrized=False`) a tensor that is parametrized "
                         "in terms of a sequence of tensors.")
    delattr(module.__class__, tensor_name)
    del module.parametrizations[tensor_name]
    _register(module, tensor_name, original)
    if not is_parametrized(module):
        delattr(module, "parametrizations")
        module.__class__ = module.__class__._parametrized_from
    return module


def type_before_parametrizations(module: Module) -> type:
    """The module's class before any parametrization (its class when it has none)."""
    return module.__class__._parametrized_from if is_parametrized(module) else type(module)
