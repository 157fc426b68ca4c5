"""Pytrees, as torch.utils._pytree: nested tuples, lists, dicts and namedtuples of leaves (tensors, numbers),
flattened to a list of leaves and a `TreeSpec` that rebuilds the structure. `seqlab.func` uses them for the
arguments and results of its transforms (a dict of parameters, a tuple of outputs).

    leaves, spec = tree_flatten({"w": w, "b": (b1, b2)})   # [w, b1, b2], the dict's structure
    tree_unflatten([2 * x for x in leaves], spec)          # {"w": 2w, "b": (2b1, 2b2)}

As torch's: None is an empty node (no leaf), a dict keeps its keys' order (two dicts with the same keys in
another order have different specs), and anything else is a leaf.
"""
from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Callable

__all__ = ["TreeSpec", "LEAF", "tree_flatten", "tree_unflatten", "tree_map", "tree_leaves", "broadcast_prefix"]


@dataclass(frozen=True)
class TreeSpec:
    """One node: `kind` ("leaf", "none", "tuple", "list", "dict", "odict" or "namedtuple"), `context` (a dict's
    keys, a namedtuple's class) and the children's specs."""

    kind: str
    context: Any = None
    children: tuple = ()

    @property
    def num_leaves(self) -> int:
        return 1 if self.kind == "leaf" else sum(c.num_leaves for c in self.children)

    def __repr__(self) -> str:
        if self.kind == "leaf":
            return "*"
        if self.kind == "none":
            return "None"
        inner = ", ".join(repr(c) for c in self.children)
        if self.kind == "tuple":
            return f"({inner}{',' if len(self.children) == 1 else ''})"
        if self.kind == "list":
            return f"[{inner}]"
        if self.kind == "namedtuple":
            return f"{self.context.__name__}({inner})"
        items = ", ".join(f"{k!r}: {c!r}" for k, c in zip(self.context, self.children))
        return ("OrderedDict" if self.kind == "odict" else "") + "{" + items + "}"


LEAF = TreeSpec("leaf")


def _node(tree) -> tuple[str, Any, list] | None:
    """(kind, context, children) of a container node, None for a leaf."""
    if tree is None:
        return "none", None, []
    if isinstance(tree, tuple):
        if hasattr(tree, "_fields"):  # a namedtuple
            return "namedtuple", type(tree), list(tree)
        return "tuple", None, list(tree)
    if isinstance(tree, list):
        return "list", None, list(tree)
    if isinstance(tree, OrderedDict):
        return "odict", tuple(tree.keys()), list(tree.values())
    if isinstance(tree, dict):
        return "dict", tuple(tree.keys()), list(tree.values())
    return None


def tree_flatten(tree) -> tuple[list, TreeSpec]:
    """(the leaves, left to right, depth first; the spec that `tree_unflatten` rebuilds the tree from)."""
    leaves: list = []

    def walk(node) -> TreeSpec:
        parts = _node(node)
        if parts is None:
            leaves.append(node)
            return LEAF
        kind, context, children = parts
        return TreeSpec(kind, context, tuple(walk(c) for c in children))

    spec = walk(tree)
    return leaves, spec


def tree_leaves(tree) -> list:
    return tree_flatten(tree)[0]


def tree_unflatten(leaves, spec: TreeSpec):
    """The tree of structure `spec` holding `leaves` (as many as the spec has)."""
    leaves = list(leaves)
    if len(leaves) != spec.num_leaves:
        raise ValueError(f"tree_unflatten(leaves, spec): `leaves` has length {len(leaves)} but the spec refers to a "
                         f"pytree that holds {spec.num_leaves} items ({spec!r}).")
    it = iter(leaves)

    def build(s: TreeSpec):
        if s.kind == "leaf":
            return next(it)
        if s.kind == "none":
            return None
        children = [build(c) for c in s.children]
        if s.kind == "tuple":
            return tuple(children)
        if s.kind == "list":
            return children
        if s.kind == "namedtuple":
            return s.context(*children)
        return (OrderedDict if s.kind == "odict" else dict)(zip(s.context, children))

    return build(spec)


def tree_map(fn: Callable, tree):
    """The tree with `fn` applied to each leaf."""
    leaves, spec = tree_flatten(tree)
    return tree_unflatten([fn(x) for x in leaves], spec)


def broadcast_prefix(prefix, spec: TreeSpec) -> list | None:
    """`prefix` (a tree whose structure is a prefix of `spec`'s: a leaf of it stands for a whole subtree) as one
    value per leaf of `spec`; None when it is not a prefix (vmap's in_dims and out_dims)."""
    out: list = []

    def walk(p, s: TreeSpec) -> bool:
        parts = _node(p) if p is not None else None
        if parts is None:  # a leaf of the prefix (None included): the same value for the whole subtree
            out.extend([p] * s.num_leaves)
            return True
        kind, context, children = parts
        same_kind = kind == s.kind or {kind, s.kind} <= {"dict", "odict"}
        if not same_kind or len(children) != len(s.children):
            return False
        if kind in ("dict", "odict"):
            if set(context) != set(s.context):
                return False
            by_key = dict(zip(context, children))
            children = [by_key[k] for k in s.context]
        return all(walk(c, cs) for c, cs in zip(children, s.children))

    return out if walk(prefix, spec) else None
