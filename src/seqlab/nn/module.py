"""`Module` and `Parameter`, as torch.nn: dotted parameter names are the checkpoint contract."""
from __future__ import annotations

import functools
import warnings

from collections import OrderedDict, namedtuple
from typing import Any, Callable, Iterator

import numpy as np

from seqlab import backend
from seqlab.autograd import memory as _memory
from seqlab.autograd.tensor import Tensor
from seqlab.errors import StateDictError
from seqlab.nn.hooks import RemovableHandle, _BackwardHooks


class Parameter(Tensor):
    """A tensor that a Module learns; `requires_grad` is True unless told otherwise."""

    __slots__ = ()

    def __init__(self, data: Any, requires_grad: bool = True):
        super().__init__(data.data if isinstance(data, Tensor) else data, requires_grad=requires_grad)

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()

    @property
    def data(self):
        """The parameter's array (NumPy or CuPy): `p.data` is what torch's `p.data` is for, an alias outside
        the graph, but an array, so it takes NumPy's methods (`p.data[...] = 0`, `p.data *= 0.5`)."""
        return _TENSOR_DATA.__get__(self)

    @data.setter
    def data(self, value) -> None:
        """`p.data = other` as torch's users write it: a Tensor gives its array; anything else must be an array."""
        if isinstance(value, Tensor):
            value = value.data
        if not (hasattr(value, "shape") and hasattr(value, "dtype")):
            raise TypeError(f"Parameter.data must be an array or a Tensor, got {type(value).__name__}")
        _TENSOR_DATA.__set__(self, value)


_TENSOR_DATA = Tensor.data  # the slot's descriptor, which Parameter.data wraps


class TorchInputError(TypeError):
    """A seqlab module was called on a torch.Tensor."""


def _refuse_torch_inputs(module, args: tuple, kwargs: dict, exc: Exception) -> None:
    """After `module`'s forward failed: if a torch.Tensor was passed in, say so (the failure itself, deep in
    an op, names a torch dtype or method and not the cause); otherwise let the original error through."""
    if isinstance(exc, TorchInputError):
        return
    for name, value in [*enumerate(args), *kwargs.items()]:
        if type(value).__module__.startswith("torch") and hasattr(value, "numpy") and hasattr(value, "dtype"):
            where = f"argument {name}" if isinstance(name, int) else f"{name}="
            raise TorchInputError(
                f"{type(module).__name__} got a torch.Tensor as its {where}: seqlab modules take seqlab Tensors "
                f"(seqlab.tensor(x.numpy()), or x.numpy() itself)") from exc


IncompatibleKeys = namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])


_EMPTY: dict = {}  # a store a module not yet initialised lacks


def takes_device(cls):
    """Class decorator: the layer takes torch's ``device=`` keyword ("cpu", "cuda" or a torch device) and is
    moved there once built (its parameters are made on the host, then copied)."""
    init = cls.__init__

    @functools.wraps(init)
    def __init__(self, *args, device=None, **kwargs):
        init(self, *args, **kwargs)
        if device is not None:
            self.to(backend.from_torch_name(device))

    cls.__init__ = __init__
    return cls


class Module:
    """Base class of every layer and model.

    Sub-modules and parameters assigned as attributes are registered in the
    order they are set, so `named_parameters()` and `state_dict()` list them
    in the same order as torch does for the same definition.
    """

    def __init__(self) -> None:
        object.__setattr__(self, "_parameters", OrderedDict())
        object.__setattr__(self, "_buffers", OrderedDict())
        object.__setattr__(self, "_non_persistent", set())
        object.__setattr__(self, "_modules", OrderedDict())
        object.__setattr__(self, "training", True)

    # ---- registration ------------------------------------------------------
    def __setattr__(self, name: str, value: Any) -> None:
        if "_parameters" not in self.__dict__:
            raise RuntimeError(f"{type(self).__name__}.__init__ must call super().__init__() "
                               f"before assigning {name!r}")
        buffers = self.__dict__["_buffers"]
        if name in buffers and not isinstance(value, (Parameter, Module)):
            # re-assigning a registered buffer keeps it a buffer (as torch)
            if value is not None and not isinstance(value, Tensor):
                if not hasattr(value, "shape"):
                    raise TypeError(f"cannot assign {type(value).__name__} as buffer {name!r} (an array or Tensor)")
                value = Tensor(value)
            buffers[name] = value
            return
        params = self.__dict__["_parameters"]
        if name in params and value is not None and not isinstance(value, Parameter):
            raise TypeError(f"cannot assign {type(value).__name__} as parameter {name!r} of "
                            f"{type(self).__name__} (a seqlab.nn.Parameter or None is expected)")
        target = "_parameters" if isinstance(value, Parameter) else "_modules" if isinstance(value, Module) else None
        for store in ("_parameters", "_modules", "_buffers"):
            if store != target:  # replacing in the same store keeps the registration order (as torch)
                self.__dict__[store].pop(name, None)
        if target is None:
            object.__setattr__(self, name, value)
            return
        self.__dict__[target][name] = value
        self.__dict__.pop(name, None)

    def __getattr__(self, name: str) -> Any:
        # called for every parameter, submodule and buffer a forward reads (they live in these stores,
        # not in __dict__), so written out: about 0.2 µs less a call than a loop over the store names
        d = self.__dict__
        store = d.get("_parameters", _EMPTY)
        if name in store:
            return store[name]
        store = d.get("_modules", _EMPTY)
        if name in store:
            return store[name]
        store = d.get("_buffers", _EMPTY)
        if name in store:
            return store[name]
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def __delattr__(self, name: str) -> None:
        for store in ("_parameters", "_modules", "_buffers"):
            if name in self.__dict__[store]:
                del self.__dict__[store][name]
                return
        object.__delattr__(self, name)

    def register_parameter(self, name: str, param: Parameter | None) -> None:
        """Register `param` (or None, a declared-absent parameter such as `bias=False`)."""
        self.__dict__.pop(name, None)
        self._parameters[name] = param

    def register_buffer(self, name: str, value, persistent: bool = True) -> None:
        """A non-learned array that moves with the module (and is saved unless not persistent)."""
        if "." in name or not name:
            raise KeyError(f"buffer name must be non-empty and contain no '.', got {name!r}")
        self.__dict__.pop(name, None)
        self._buffers[name] = value if (value is None or isinstance(value, Tensor)) else Tensor._of(value)
        if persistent:
            self._non_persistent.discard(name)
        else:
            self._non_persistent.add(name)

    def add_module(self, name: str, module: "Module | None") -> None:
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{type(module).__name__} is not a Module (adding {name!r})")
        if "." in name or not name:
            raise KeyError(f"module name must be non-empty and contain no '.', got {name!r}")
        self.__dict__.pop(name, None)
        self._modules[name] = module

    register_module = add_module

    # ---- traversal -----------------------------------------------------------
    def named_modules(self, prefix: str = "", memo: set | None = None) -> Iterator[tuple[str, "Module"]]:
        memo = set() if memo is None else memo
        stack = [(prefix, self)]
        while stack:
            name, mod = stack.pop()
            if id(mod) in memo:
                continue
            memo.add(id(mod))
            yield name, mod
            children = [(f"{name}.{n}" if name else n, m) for n, m in mod._modules.items() if m is not None]
            stack.extend(reversed(children))

    def modules(self) -> Iterator["Module"]:
        for _, m in self.named_modules():
            yield m

    def named_children(self) -> Iterator[tuple[str, "Module"]]:
        for n, m in self._modules.items():
            if m is not None:
                yield n, m

    def children(self) -> Iterator["Module"]:
        for _, m in self.named_children():
            yield m

    def get_submodule(self, target: str) -> "Module":
        """The submodule at a dotted path ("encoder.layers.0.self_attn"); "" is the module itself."""
        mod: Module = self
        for i, name in enumerate(target.split(".") if target else []):
            child = mod._modules.get(name)
            if child is None:
                where = ".".join(target.split(".")[:i]) or type(self).__name__
                raise AttributeError(f"{where} has no submodule {name!r} (looking for {target!r})")
            mod = child
        return mod

    def get_parameter(self, target: str) -> Parameter:
        """The parameter at a dotted path ("encoder.layers.0.linear1.weight"), as torch's: AttributeError
        when the path's module is missing or the name is not a parameter there."""
        param = self._member(target, "_parameters", "parameter", "an nn.Parameter")
        if param is None:  # declared absent, as bias=False (torch: getattr gives None, not a Parameter)
            raise AttributeError(f"{target!r} is not an nn.Parameter (it is None)")
        return param

    def get_buffer(self, target: str) -> Tensor:
        """The buffer at a dotted path ("bn.running_mean"), as torch's: AttributeError when the path's module
        is missing or the name is not a buffer there."""
        return self._member(target, "_buffers", "buffer", "a buffer")

    def _member(self, target: str, store: str, kind: str, not_a: str):
        """The entry of the module at target's path in its `store` (_parameters or _buffers), else an
        AttributeError that says what the name is instead."""
        path, _, name = target.rpartition(".")
        mod = self.get_submodule(path)
        own = getattr(mod, store)
        if name in own:
            return own[name]
        others = (("a parameter", mod._parameters), ("a buffer", mod._buffers), ("a submodule", mod._modules))
        what = next((w for w, d in others if d is not own and name in d), None)
        if what is None and name not in mod.__dict__:
            raise AttributeError(f"{type(mod).__name__} has no attribute {name!r} (looking for {kind} {target!r})")
        raise AttributeError(f"{target!r} is not {not_a}" + (f" (it is {what})" if what else ""))

    # ---- hooks (torch's module hooks: to look inside a model, e.g. at each layer's output or gradient) -----
    def register_forward_hook(self, hook: Callable, *, prepend: bool = False, with_kwargs: bool = False,
                              always_call: bool = False) -> RemovableHandle:
        """`hook(module, args, output)` runs after each forward (with_kwargs=True: `hook(module, args, kwargs,
        output)`); a value it returns replaces the output. always_call=True: it runs even when forward raises
        (its own error then silenced with a warning, as torch's)."""
        flags = ("_forward_hooks_with_kwargs",) * with_kwargs + ("_forward_hooks_always_called",) * always_call
        return self._add_hook("_forward_hooks", hook, prepend, flags)

    def register_forward_pre_hook(self, hook: Callable, *, prepend: bool = False,
                                  with_kwargs: bool = False) -> RemovableHandle:
        """`hook(module, args)` runs before each forward; a value it returns replaces the positional args (a
        tuple, or one value). with_kwargs=True: `hook(module, args, kwargs)`, returning None or `(args, kwargs)`."""
        return self._add_hook("_forward_pre_hooks", hook, prepend, ("_forward_pre_hooks_with_kwargs",) * with_kwargs)

    def register_full_backward_hook(self, hook: Callable, prepend: bool = False) -> RemovableHandle:
        """`hook(module, grad_input, grad_output)` runs once per backward through each call of the module, when
        the gradients w.r.t. its positional Tensor inputs are complete; a returned tuple replaces grad_input
        (what flows on to the inputs). Both are tuples with an entry per positional argument / output, as
        torch's: None for a non-Tensor and for an output no gradient reached, zeros for a Tensor input none
        reached (one that needs no grad too), and grad_input all None when no input requires grad (the hook
        then runs as soon as grad_output is in)."""
        return self._add_hook("_backward_hooks", hook, prepend)

    def register_full_backward_pre_hook(self, hook: Callable, prepend: bool = False) -> RemovableHandle:
        """`hook(module, grad_output)` runs before the module's backward; a returned tuple replaces grad_output."""
        return self._add_hook("_backward_pre_hooks", hook, prepend)

    def _add_hook(self, store: str, hook: Callable, prepend: bool, flags: tuple = ()) -> RemovableHandle:
        """`flags`: the names of the sets of hook ids (as torch's `_forward_hooks_with_kwargs`) to put it in."""
        d = self.__dict__
        hooks = d.get(store)
        if hooks is None:  # made on first use: a module without hooks pays nothing in __call__
            hooks = OrderedDict()
            object.__setattr__(self, store, hooks)
        for name in flags:
            if name not in d:
                object.__setattr__(self, name, set())
        handle = RemovableHandle(hooks, tuple(d[name] for name in flags))
        hooks[handle.id] = hook
        for ids in handle.extra:
            ids.add(handle.id)
        if prepend:
            hooks.move_to_end(handle.id, last=False)
        object.__setattr__(self, "_has_hooks", True)  # __call__ leaves its fast path
        return handle

    def named_parameters(self, prefix: str = "", recurse: bool = True,
                         remove_duplicate: bool = True) -> Iterator[tuple[str, Parameter]]:
        """(dotted name, parameter); a tied parameter once (remove_duplicate=False: under every name)."""
        seen = set()
        mods = self.named_modules(prefix) if recurse else [(prefix, self)]
        for mname, mod in mods:
            for pname, p in mod._parameters.items():
                if p is None or (remove_duplicate and id(p) in seen):
                    continue
                seen.add(id(p))
                yield (f"{mname}.{pname}" if mname else pname), p

    def parameters(self, recurse: bool = True) -> Iterator[Parameter]:
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_buffers(self, prefix: str = "") -> Iterator[tuple[str, Tensor]]:
        for mname, mod in self.named_modules(prefix):
            for bname, b in mod._buffers.items():
                if b is not None:
                    yield (f"{mname}.{bname}" if mname else bname), b

    def buffers(self) -> Iterator[Tensor]:
        for _, b in self.named_buffers():
            yield b

    def num_parameters(self, only_trainable: bool = False, exclude_embeddings: bool = False) -> int:
        """Parameters counted once each (a tied one once), as transformers' `num_parameters`; `only_trainable`:
        those that require grad; `exclude_embeddings`: without the `nn.Embedding` tables, as transformers."""
        from seqlab.nn.sparse import Embedding  # (sparse imports this module)

        skip = {id(m.weight) for m in self.modules() if isinstance(m, Embedding)} if exclude_embeddings else set()
        return sum(p.numel() for p in self.parameters()
                   if id(p) not in skip and (p.requires_grad or not only_trainable))

    # ---- state ---------------------------------------------------------------
    def state_dict(self, destination=None, prefix: str = "", keep_vars: bool = False) -> "OrderedDict[str, Any]":
        """Parameter and persistent buffer arrays by dotted name (the arrays themselves, not copies).

        Tied parameters (and modules registered twice) appear under every name
        that owns them, as in torch. As torch's: `prefix` goes before every
        name, `keep_vars=True` gives the Tensors rather than their arrays, and
        `destination` (a dict) is filled and returned.
        """
        out = OrderedDict() if destination is None else destination
        for k, t in self._state_tensors().items():
            out[prefix + k] = t if keep_vars else t.data
        return out

    def _all_named_modules(self, prefix: str = ""):
        """Every (name, module) pair, a shared module once per name (torch's state_dict walk)."""
        stack = [(prefix, self)]
        while stack:
            name, mod = stack.pop()
            yield name, mod
            children = [(f"{name}.{n}" if name else n, m) for n, m in mod._modules.items() if m is not None]
            stack.extend(reversed(children))

    def _state_tensors(self) -> "OrderedDict[str, Tensor]":
        out = OrderedDict()
        for mname, mod in self._all_named_modules():
            pre = f"{mname}." if mname else ""
            for n, p in mod._parameters.items():
                if p is not None:
                    out[pre + n] = p
            for n, b in mod._buffers.items():
                if b is not None and n not in mod._non_persistent:
                    out[pre + n] = b
        return out

    def load_state_dict(self, state_dict, strict: bool = True) -> IncompatibleKeys:
        """Copy arrays (NumPy, CuPy, torch tensors — anything with `__array__`) into the parameters.

        Every missing key, unexpected key and shape mismatch is reported by
        name in one error; with strict=False only shape mismatches raise. Lazy layers not yet run
        (`nn.LazyLinear`) take their shapes from the checkpoint first, as torch's.
        """
        for name, m in self.named_modules():
            if getattr(m, "has_uninitialized_params", lambda: False)():
                m.materialize_from_state_dict(state_dict, f"{name}." if name else "")
        own = self._state_tensors()
        missing = [k for k in own if k not in state_dict]
        unexpected = [k for k in state_dict if k not in own]
        arrays, mismatched = {}, []
        for k, t in own.items():
            if k not in state_dict:
                continue
            v = state_dict[k]
            if hasattr(v, "detach") and hasattr(v, "cpu") and not isinstance(v, Tensor):
                v = v.detach().cpu()  # a torch tensor
            arr = v.data if isinstance(v, Tensor) else v
            if not hasattr(arr, "shape"):
                arr = np.asarray(arr)
            if tuple(arr.shape) != t.shape:
                mismatched.append(f"{k}: checkpoint {tuple(arr.shape)} vs model {t.shape}")
                continue
            arrays[k] = arr
        problems = []
        if mismatched:
            problems.append("shape mismatch for " + "; ".join(mismatched))
        if strict and missing:
            problems.append("missing keys: " + ", ".join(missing))
        if strict and unexpected:
            problems.append("unexpected keys: " + ", ".join(unexpected))
        if problems:
            raise StateDictError(f"error loading state_dict into {type(self).__name__}: " + " | ".join(problems))
        for k, arr in arrays.items():
            t = own[k]
            src = backend.to_device(np.asarray(arr) if backend.xp_of(arr) is np else arr, t.device)
            t.data[...] = src.astype(t.dtype, copy=False)
        return IncompatibleKeys(missing, unexpected)

    # ---- modes and helpers -----------------------------------------------------
    def train(self, mode: bool = True) -> "Module":
        for m in self.modules():
            object.__setattr__(m, "training", mode)
        return self

    def eval(self) -> "Module":
        return self.train(False)

    def zero_grad(self, set_to_none: bool = True) -> None:
        for p in self.parameters():
            if set_to_none:
                p.grad = None
            elif p.grad is not None:
                p.grad[...] = 0

    def apply(self, fn: Callable[["Module"], None]) -> "Module":
        """fn(module) for every sub-module, children before parents (torch's post-order)."""
        for m in self.children():
            m.apply(fn)
        fn(self)
        return self

    def requires_grad_(self, mode: bool = True) -> "Module":
        for p in self.parameters():
            p.requires_grad = mode
        return self

    def to(self, *args, device=None, dtype=None, non_blocking: bool = False) -> "Module":
        """Move every parameter and buffer to `device` and/or cast floats to `dtype`, in place, as torch's:
        `to("cuda")`, `to(seqlab.float64)`, `to(device, dtype)`, `to(tensor)`, keywords too; torch's devices
        and dtypes are read as their names. `non_blocking` is accepted and changes nothing."""
        device, dtype = backend.to_args(args, device, dtype)
        if dtype is not None and np.dtype(dtype).kind != "f":
            raise TypeError(f"Module.to takes floating-point dtypes only (as torch), got {np.dtype(dtype)}")
        for t in list(self.parameters()) + list(self.buffers()):
            arr = t.data
            if device is not None:
                arr = backend.to_device(arr, device)
            if dtype is not None and arr.dtype.kind == "f":
                arr = arr.astype(np.dtype(dtype))
            t.data = arr
            if t.grad is not None:
                t.grad = None
        return self

    def cuda(self, device=None) -> "Module":
        """`to("cuda")`, as torch's; `device`: a GPU index or name (seqlab drives GPU 0 alone)."""
        return self.to(device="cuda" if device is None else backend.device_name(device))

    def cpu(self) -> "Module":
        return self.to(device="cpu")

    def double(self) -> "Module":
        return self.to(dtype=np.float64)

    def float(self) -> "Module":
        return self.to(dtype=np.float32)

    def __call__(self, *args, **kwargs):
        if not _memory._applied:  # the first forward in the process, inference too: keep freed memory
            _memory.retain_freed_memory_once()
        if "_has_hooks" not in self.__dict__:
            try:
                return self.forward(*args, **kwargs)
            except Exception as exc:  # free when nothing is raised
                _refuse_torch_inputs(self, args, kwargs, exc)
                raise
        return self._call_with_hooks(args, kwargs)

    def _call_with_hooks(self, args: tuple, kwargs: dict):
        """__call__ of a module that has (or had) hooks, in torch's order: forward pre-hooks, the backward
        hooks' aliases of the inputs, forward, forward hooks, the aliases of the outputs."""
        d = self.__dict__
        result, called = None, set()
        backward = None  # the backward hooks as they are before the forward pre-hooks run (torch's)
        if d.get("_backward_hooks") or d.get("_backward_pre_hooks"):
            backward = _BackwardHooks(self, list(d.get("_backward_hooks", _EMPTY).values()),
                                      list(d.get("_backward_pre_hooks", _EMPTY).values()))
        try:
            kw_ids = d.get("_forward_pre_hooks_with_kwargs", ())
            for hid, hook in list(d.get("_forward_pre_hooks", _EMPTY).items()):
                if hid in kw_ids:
                    changed = hook(self, args, kwargs)
                    if changed is not None:
                        if not (isinstance(changed, tuple) and len(changed) == 2):
                            raise RuntimeError(f"forward pre-hook must return None or a tuple of (new_args, "
                                               f"new_kwargs), but got {changed}.")
                        args, kwargs = changed
                else:
                    changed = hook(self, args)
                    if changed is not None:
                        args = changed if isinstance(changed, tuple) else (changed,)
            if backward is not None:
                args = backward.setup_inputs(args)
            result = self.forward(*args, **kwargs)
            kw_ids, always = d.get("_forward_hooks_with_kwargs", ()), d.get("_forward_hooks_always_called", ())
            for hid, hook in list(d.get("_forward_hooks", _EMPTY).items()):
                if hid in always:
                    called.add(hid)
                changed = hook(self, args, kwargs, result) if hid in kw_ids else hook(self, args, result)
                if changed is not None:
                    result = changed
            if backward is not None:
                result = backward.setup_outputs(result)
            return result
        except Exception as exc:
            # torch's always_call: those forward hooks not yet run see the failed call; their own errors are
            # silenced (a warning), the first error is raised
            always = d.get("_forward_hooks_always_called", ())
            for hid, hook in list(d.get("_forward_hooks", _EMPTY).items()):
                if hid not in always or hid in called:
                    continue
                try:
                    kw_ids = d.get("_forward_hooks_with_kwargs", ())
                    changed = hook(self, args, kwargs, result) if hid in kw_ids else hook(self, args, result)
                    if changed is not None:
                        result = changed
                except Exception as hook_exc:
                    warnings.warn(f"module forward hook with ``always_call=True`` raised an exception that was "
                                  f"silenced as another error was raised in forward: {hook_exc}", stacklevel=2)
            _refuse_torch_inputs(self, args, kwargs, exc)
            raise

    def forward(self, *args, **kwargs):  # pragma: no cover - abstract
        raise NotImplementedError(f"{type(self).__name__} does not define forward()")

    def extra_repr(self) -> str:
        return ""

    def __repr__(self) -> str:
        """torch's layout: the extra repr inline when it is one line and there are no children; else every
        line of it, then each child, indented on lines of their own."""
        extra = self.extra_repr()
        extra_lines = extra.split("\n") if extra else []
        children = [f"({n}): " + repr(m).replace("\n", "\n  ") for n, m in self.named_children()]
        head = f"{type(self).__name__}("
        if len(extra_lines) == 1 and not children:
            return head + extra_lines[0] + ")"
        lines = extra_lines + children
        if not lines:
            return head + ")"
        return head + "\n  " + "\n  ".join(lines) + "\n)"
