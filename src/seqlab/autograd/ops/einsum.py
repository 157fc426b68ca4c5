"""Einstein summation, as `torch.einsum`: one primitive whose backward is again an einsum.

    einsum("bhqd,bhkd->bhqk", q, k)   # (B, H, Tq, D), (B, H, Tk, D) -> (B, H, Tq, Tk)

For out = einsum("s_1,...,s_n->o", x_1, ..., x_n), each entry of out is a sum of products with one factor
from every operand, so the gradient of operand k is the same sum with x_k left out and the output
gradient put in its place:

    dL/dx_k = einsum("o,s_1,..(without s_k)..,s_n->s_k", g, x_1, ..., x_n)

Three cases need more than that one line (torch's rules, handled in `Einsum._operand_grad`):
- a letter that appears in s_k alone (summed inside this operand only) cannot be an einsum output letter;
  the gradient is 1 along it, so the result is broadcast along it;
- a repeated letter in s_k ("ii->i", "ii->") reads only the diagonal; the gradient is put on the
  diagonal of a zero array;
- a dimension of size 1 that broadcast against a larger one (under `...` or not) is broadcast before
  the product, and the engine's `unbroadcast` sums the gradient back to the operand's shape.

The equation is parsed once, in `einsum`, into explicit letters (each `...` becomes letters of its own,
right-aligned as NumPy broadcasting), so the arrays only ever meet NumPy's or CuPy's plain einsum.
"""
from __future__ import annotations

import string
from dataclasses import dataclass

from seqlab.autograd.function import Function
from seqlab.autograd.higher_order import graph_input
from seqlab.autograd.tensor import Tensor
from seqlab.backend import xp_of

_LETTERS = string.ascii_letters  # the subscripts einsum accepts, as torch and NumPy: a-z and A-Z


@dataclass(frozen=True)
class EinsumPlan:
    """An einsum equation with every `...` spelled out: one letter per dimension of every operand.

    `inputs[k]` has one letter per dimension of operand k (a letter may repeat: a diagonal), `output` one
    letter per output dimension, `sizes` the size of each letter after broadcasting size-1 dimensions.
    """

    inputs: tuple
    output: str
    sizes: dict

    @property
    def equation(self) -> str:
        return ",".join(self.inputs) + "->" + self.output


def _fail(equation: str, shapes: list, reason: str):
    """The one ValueError einsum raises for a bad equation: the equation, the shapes, then why."""
    listed = ", ".join(str(tuple(s)) for s in shapes)
    return ValueError(f"einsum('{equation}') with operand shapes {listed}: {reason}")


def _split_term(term: str, where: str, fail) -> tuple[str, str, bool]:
    """A term such as 'b...ij' as (letters before '...', letters after, whether it has '...')."""
    for ch in term:
        if ch not in _LETTERS and ch != ".":
            raise fail(f"invalid subscript {ch!r} in {where}: subscripts must be letters a-z, A-Z (or '...')")
    if "." not in term:
        return term, "", False
    head, sep, tail = term.partition("...")
    if not sep or "." in head:
        raise fail(f"'.' in {where} that is not part of an ellipsis '...'")
    if "." in tail:
        raise fail(f"{where} has more than one ellipsis '...'")
    return head, tail, True


def parse_equation(equation: str, shapes: list) -> EinsumPlan:
    """Check `equation` against the operands' `shapes` (torch's rules) and spell it out as an `EinsumPlan`.

    Implicit output (no '->'): the letters that appear exactly once, sorted (uppercase first, as torch and
    NumPy), after the broadcast '...' dimensions. Under an explicit output, '...' dimensions left out of it
    are summed, as torch. A dimension of size 1 broadcasts against the same letter's other sizes.
    """
    def fail(reason: str):
        return _fail(equation, shapes, reason)

    eq = "".join(equation.split())  # spaces are allowed anywhere, as torch
    if eq.count("->") > 1:
        raise fail("more than one '->'")
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(shapes):
        raise fail(f"the equation has {len(terms)} input term{'s' if len(terms) != 1 else ''} "
                   f"but {len(shapes)} operand{'s' if len(shapes) != 1 else ''} were given")
    parts = [_split_term(t, f"operand {k}'s subscripts", fail) for k, t in enumerate(terms)]

    # how many dimensions each '...' stands for; together they broadcast to `n_ell` dimensions
    ell_dims = []
    for k, ((head, tail, has_ell), shape) in enumerate(zip(parts, shapes)):
        n = len(head) + len(tail)
        if len(shape) < n or (len(shape) > n and not has_ell):
            raise fail(f"operand {k} has {len(shape)} dimension{'s' if len(shape) != 1 else ''} but its "
                       f"subscripts '{terms[k]}' name {n}" + ("" if has_ell else " (and it has no '...')"))
        ell_dims.append(len(shape) - n)
    n_ell = max(ell_dims)
    used = set(lhs) | set(rhs)
    spare = [c for c in _LETTERS if c not in used]
    if n_ell > len(spare):
        raise fail(f"'...' stands for {n_ell} dimensions but only {len(spare)} letters are left to name them")
    ell = "".join(spare[:n_ell])  # the broadcast '...' dimensions, outermost first

    inputs = tuple(head + (ell[n_ell - e:] if e else "") + tail for (head, tail, _), e in zip(parts, ell_dims))
    if arrow:
        head, tail, has_ell = _split_term(rhs, "the output", fail)
        output = head + (ell if has_ell else "") + tail
        named = head + tail
        for c in named:
            if named.count(c) > 1:
                raise fail(f"output subscript {c} appears more than once in the output")
            if c not in lhs:
                raise fail(f"output subscript {c} does not appear in any input's subscripts")
    else:
        once = sorted(c for c in set(lhs) if c in _LETTERS and lhs.count(c) == 1)
        output = ell + "".join(once)

    sizes: dict = {}
    for k, (letters, shape) in enumerate(zip(inputs, shapes)):
        own: dict = {}
        for c, size in zip(letters, shape):
            what = f"subscript {c}" if c not in ell else "a dimension under '...'"
            if c in own and own[c] != size:
                raise fail(f"{what} is repeated in operand {k} with different sizes {own[c]} and {size}")
            own[c] = size
            seen = sizes.get(c)
            if seen is None or seen == 1:
                sizes[c] = size
            elif size not in (1, seen):
                raise fail(f"{what} has size {size} in operand {k}, which does not broadcast with size {seen} "
                           f"in an earlier operand")
    return EinsumPlan(inputs, output, sizes)


def _diagonal_grad(g, letters: str, unique: str, sizes: dict):
    """A zero array with one axis per letter of `letters`, holding `g` (one axis per letter of `unique`) on
    its diagonal: out[i, i, j] = g[i, j] for letters 'iij', unique 'ij'.

    Built by indexing every axis with an arange along its letter's axis of `g` (NumPy and CuPy alike).
    """
    xp = xp_of(g)
    out = xp.zeros([sizes[c] for c in letters], dtype=g.dtype)
    pos = {c: i for i, c in enumerate(unique)}
    index = tuple(xp.arange(sizes[c]).reshape([-1 if i == pos[c] else 1 for i in range(len(unique))])
                  for c in letters)
    out[index] = g
    return out


def _diagonal_grad_graph(g, letters: str, unique: str, sizes: dict):
    """`_diagonal_grad` with Tensor ops: g times an identity matrix for each repeat of a letter, itself an
    einsum ('ij,ik->ikj' puts g (i, j) on the diagonal of an (i, i, j) array), so differentiable again."""
    xp = xp_of(g.data)
    spare = iter(c for c in _LETTERS if c not in letters)
    terms, eyes, out, sizes = [unique], [], "", dict(sizes)
    for c in letters:
        if c in out:  # a repeat: a letter of its own, tied to c by an identity matrix
            n = next(spare)
            sizes[n] = sizes[c]
            terms.append(c + n)
            eyes.append(xp.eye(sizes[c], dtype=g.dtype))
            c = n
        out += c
    return Einsum.apply(g, *eyes, plan=EinsumPlan(tuple(terms), out, sizes))


class Einsum(Function):
    """out = einsum(plan.equation, *arrays); dx_k = einsum of the output gradient with the other operands."""

    def forward(self, *arrays, plan: EinsumPlan):
        xp = xp_of(arrays[0])
        # broadcast each size-1 dimension to its letter's size (a view): the products then see equal sizes,
        # and each operand's gradient comes out at the broadcast shape, which the engine sums back
        full_shapes = [tuple(plan.sizes[c] for c in letters) for letters in plan.inputs]
        arrays = tuple(a if a.shape == full else xp.broadcast_to(a, full) for a, full in zip(arrays, full_shapes))
        self.plan = plan
        if True in self.needs_input_grad:
            self.save_for_backward(*arrays)
        out = xp.einsum(plan.equation, *arrays, optimize=True)
        if len(arrays) == 1 and xp.may_share_memory(out, arrays[0]):
            out = out.copy()  # "ij->ji", "ii->i" give a view of the input: einsum's result is a new tensor
        return out

    def backward(self, grad):
        return tuple(self._operand_grad(k, grad) if need else None for k, need in enumerate(self.needs_input_grad))

    def _operand_grad(self, k: int, grad):
        """dL/dx_k: the output gradient contracted with every operand but x_k, at x_k's broadcast shape."""
        plan, xp = self.plan, xp_of(grad)
        letters = plan.inputs[k]
        unique = "".join(dict.fromkeys(letters))  # x_k's letters, each once, in order
        others = [j for j in range(len(plan.inputs)) if j != k]
        reached = set(plan.output).union(*(plan.inputs[j] for j in others))
        kept = "".join(c for c in unique if c in reached)
        terms = ",".join([plan.output] + [plan.inputs[j] for j in others])
        g = xp.asarray(xp.einsum(f"{terms}->{kept}", grad, *(self.saved[j] for j in others), optimize=True))
        if len(kept) < len(unique):
            # letters summed inside x_k alone: d(Σ_c x[.., c, ..])/dx = 1 along c, so broadcast along them
            g = g.reshape([plan.sizes[c] if c in reached else 1 for c in unique])  # (unique letters, 1 for lone)
            g = xp.broadcast_to(g, tuple(plan.sizes[c] for c in unique))  # (unique letters)
        if len(unique) < len(letters):
            g = _diagonal_grad(g, letters, unique, plan.sizes)  # (x_k's letters): zero off the diagonal
        return g

    def backward_graph(self, g):
        """`_operand_grad` with Tensor ops (create_graph=True): each gradient is an Einsum of g and the other
        operands, taken at their places in the graph, so it can be differentiated again."""
        operands = [self._graph_operand(j) for j in range(len(self.saved))]
        return tuple(self._operand_grad_graph(k, g, operands) if need else None
                     for k, need in enumerate(self.needs_input_grad))

    def _graph_operand(self, j: int):
        """Operand j as a graph tensor of its own shape: forward kept it broadcast to its letters' sizes, and
        a broadcast dimension is the operand's size-1 one repeated (its first entry is the value)."""
        a, parent = self.saved[j], self.parents[j]
        if parent is not None:
            shape = parent.out_shape if isinstance(parent, Function) else parent.shape
            a = a[tuple(slice(0, 1) if n == 1 else slice(None) for n in shape)]
        return graph_input(self, j, a)

    def _operand_grad_graph(self, k: int, g, operands: list):
        plan = self.plan
        letters = plan.inputs[k]
        unique = "".join(dict.fromkeys(letters))
        others = [j for j in range(len(plan.inputs)) if j != k]
        reached = set(plan.output).union(*(plan.inputs[j] for j in others))
        kept = "".join(c for c in unique if c in reached)
        grad_plan = EinsumPlan((plan.output,) + tuple(plan.inputs[j] for j in others), kept, plan.sizes)
        gk = Einsum.apply(g, *(operands[j] for j in others), plan=grad_plan)
        if len(kept) < len(unique):  # letters summed inside x_k alone: broadcast along them
            gk = gk.reshape(tuple(plan.sizes[c] if c in reached else 1 for c in unique))
            gk = gk.expand(tuple(plan.sizes[c] for c in unique))
        if len(unique) < len(letters):
            gk = _diagonal_grad_graph(gk, letters, unique, plan.sizes)
        return gk


def _is_operand_list(x) -> bool:
    """torch's `einsum(eq, [a, b])`: a list or tuple whose items are all tensors or arrays."""
    return isinstance(x, (list, tuple)) and all(isinstance(v, Tensor) or hasattr(v, "shape") for v in x)


def einsum(equation: str, *operands) -> Tensor:
    """Einstein summation over tensors, as `torch.einsum`, with gradients for every operand that needs one.

    `equation` names each operand's dimensions with letters ('bij,bjk->bik'); letters in the output after
    '->' are kept, the others summed; without '->', the output is the letters that appear once, sorted.
    '...' stands for broadcast leading (or middle) dimensions; a letter repeated in one operand takes its
    diagonal ('ii->i'). Operands are tensors or array-likes, given as arguments or as one list
    (`einsum('ij,jk', [a, b])`). The result's dtype is NumPy's for the operands' dtypes (float32 stays
    float32, integers stay integers).

        einsum("bhqd,bhkd->bhqk", q, k)     # (B, H, Tq, D), (B, H, Tk, D) -> (B, H, Tq, Tk)

    A ValueError names the equation and the shapes when they do not fit together.
    """
    if not isinstance(equation, str):
        raise TypeError(f"einsum() expects the equation string first, got {type(equation).__name__}")
    if len(operands) == 1 and _is_operand_list(operands[0]):
        operands = tuple(operands[0])
    if not operands:
        raise ValueError(f"einsum('{equation}'): no operands were given")
    tensors = [x if isinstance(x, Tensor) else Tensor._of(x) for x in operands]
    plan = parse_equation(equation, [t.shape for t in tensors])
    return Einsum.apply(*tensors, plan=plan)
