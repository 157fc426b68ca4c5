"""Module hooks' machinery: the handle every `register_*_hook` returns, and `_BackwardHooks`, which runs a
module call's full backward hooks and pre-hooks (torch's `register_full_backward_hook`) at the right moment
of backward."""
from __future__ import annotations

import warnings
from collections import OrderedDict
from typing import TYPE_CHECKING, Callable

from seqlab import backend
from seqlab.autograd.function import is_grad_enabled
from seqlab.autograd.gather import gather_grads
from seqlab.autograd.tensor import Tensor

if TYPE_CHECKING:
    from seqlab.nn.module import Module


class RemovableHandle:
    """What `register_forward_hook` (and the other module hooks) return: `.remove()` takes the hook off (also
    as a ``with`` block)."""

    _next_id = 0

    def __init__(self, hooks: "OrderedDict[int, Callable]", extra: tuple = ()) -> None:
        self.hooks, self.extra, self.id = hooks, extra, RemovableHandle._next_id
        RemovableHandle._next_id += 1

    def remove(self) -> None:
        self.hooks.pop(self.id, None)
        for ids in self.extra:  # the hook's flags (with_kwargs, always_call)
            ids.discard(self.id)

    def __enter__(self) -> "RemovableHandle":
        return self

    def __exit__(self, *exc) -> None:
        self.remove()


# the stores Module._add_hook fills, one OrderedDict of hooks each
HOOK_STORES = ("_forward_hooks", "_forward_pre_hooks", "_backward_hooks", "_backward_pre_hooks")


def carries_hooks(module) -> bool:
    """Whether `module` (a Module, or a plain function) has a hook registered now: code that fuses past a
    module's call must call it instead, so the hooks run."""
    d = getattr(module, "__dict__", None)
    return d is not None and "_has_hooks" in d and any(d.get(store) for store in HOOK_STORES)


_NO_INPUT_GRAD = ("Full backward hook is firing when gradients are computed with respect to module outputs since no "
                  "inputs require gradients. See https://docs.pytorch.org/docs/main/generated/torch.nn.Module.html"
                  "#torch.nn.Module.register_full_backward_hook for more details.")


class _BackwardHooks:
    """One call of a module with full backward hooks (torch's utils.hooks.BackwardHook).

    The call's positional Tensor inputs that require grad, and its Tensor outputs, are each replaced by
    aliases (`autograd.gather_grads`), so backward stops twice: at the outputs, once all their gradients
    are in (the pre-hooks see and may replace grad_output), and at the inputs, once the gradients from
    this call (not other uses of the same tensor) are complete (the hooks see grad_input and grad_output,
    and may replace grad_input). The hook lists are those of the call (a hook removed later still runs for
    a graph recorded before, as torch's).
    """

    def __init__(self, module: "Module", hooks: list, pre_hooks: list) -> None:
        self.module, self.hooks, self.pre_hooks = module, hooks, pre_hooks
        self.grad_outputs = None
        self.n_inputs = self.n_outputs = 0
        self.input_index = self.output_index = None  # positions of the aliased tensors (None: none)
        self.input_like = ()  # (position, shape, dtype, array module) of every Tensor input, for zeros

    def setup_inputs(self, args: tuple) -> tuple:
        self.n_inputs = len(args)
        index = [i for i, a in enumerate(args) if isinstance(a, Tensor) and a.requires_grad]
        if not index or not is_grad_enabled():
            return args
        self.input_index = index
        self.input_like = tuple((i, a.shape, a.dtype, backend.xp_of(a.data))
                                for i, a in enumerate(args) if isinstance(a, Tensor))
        return self._replace(args, index, gather_grads([args[i] for i in index], self._on_input_grads))

    def setup_outputs(self, result):
        if not isinstance(result, (Tensor, tuple)):  # a dict, a list, a model-output object: no stop (torch's)
            warnings.warn("For backward hooks to be called, module output should be a Tensor or a tuple of Tensors"
                          f" but received {type(result)}", stacklevel=4)
        outs = result if isinstance(result, tuple) else (result,)
        self.n_outputs = len(outs)
        index = [i for i, o in enumerate(outs) if isinstance(o, Tensor) and o.requires_grad]
        if not index or not is_grad_enabled():
            return result
        self.output_index = index
        outs = self._replace(outs, index, gather_grads([outs[i] for i in index], self._on_output_grads))
        return outs if isinstance(result, tuple) else outs[0]

    @staticmethod
    def _replace(values: tuple, index: list, aliases: list) -> tuple:
        items = list(values)
        for i, alias in zip(index, aliases):
            items[i] = alias
        return tuple(items) if type(values) is tuple else type(values)(*items)  # a namedtuple stays one

    def _on_output_grads(self, grads: tuple):
        """The outputs' gradients are in: grad_output (None where none came), the pre-hooks; and the hooks
        here when no input requires grad (grad_input all None), since no input stop will come."""
        packed = [None] * self.n_outputs
        for i, g in zip(self.output_index, grads):
            packed[i] = g
        self.grad_outputs = tuple(packed)
        for hook in self.pre_hooks:
            changed = hook(self.module, self.grad_outputs)
            if changed is None:
                continue
            if len(changed) != self.n_outputs:
                raise RuntimeError(f"Backward pre hook returned an invalid number of grad_output, got "
                                   f"{len(changed)}, but expected {self.n_outputs}")
            self.grad_outputs = tuple(changed)
        grad_outputs = self.grad_outputs
        if self.input_index is None:
            warnings.warn(_NO_INPUT_GRAD, stacklevel=2)  # torch's, with or without a hook to run
            grad_inputs = (None,) * self.n_inputs
            for hook in self.hooks:
                changed = hook(self.module, grad_inputs, grad_outputs)
                if changed is not None and not (isinstance(changed, tuple) and all(g is None for g in changed)):
                    raise RuntimeError("Backward hook for Modules where no input requires gradient should always "
                                       "return None or None for all gradients.")
            self.grad_outputs = None
        return [grad_outputs[i] for i in self.output_index]

    def _on_input_grads(self, grads: tuple):
        """This call's gradients w.r.t. its inputs are complete: the hooks see them with grad_output."""
        if self.grad_outputs is None:  # the gradient came around the outputs' stop (torch's hook skips too)
            return None
        packed = [None] * self.n_inputs
        for i, shape, dtype, xp in self.input_like:  # a Tensor input no gradient reached: zeros (torch's)
            packed[i] = Tensor._from_op(xp.zeros(shape, dtype=dtype), None)
        for i, g in zip(self.input_index, grads):
            if g is not None:
                packed[i] = g
        grad_inputs = tuple(packed)
        for hook in self.hooks:
            changed = hook(self.module, grad_inputs, self.grad_outputs)
            if changed is None:
                continue
            if len(changed) != self.n_inputs:
                raise RuntimeError(f"Backward hook returned an invalid number of grad_input, got {len(changed)}, "
                                   f"but expected {self.n_inputs}")
            grad_inputs = tuple(changed)
        self.grad_outputs = None
        return [grad_inputs[i] for i in self.input_index]
