"""Reductions with dim / keepdim (issue 2 §3), against central differences and PyTorch."""
import numpy as np
import pytest
import torch
from helpers import check_op
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

FEW = settings(max_examples=15, deadline=None)


@st.composite
def shape_and_dim(draw, allow_none=True, allow_tuple=True):
    """A shape and a dim argument valid for it: None, an int (maybe negative) or a tuple."""
    shape = draw(hnp.array_shapes(min_dims=1, max_dims=4, min_side=1, max_side=4))
    nd = len(shape)
    choices = [st.integers(-nd, nd - 1)]
    if allow_none:
        choices.append(st.none())
    if allow_tuple:
        choices.append(st.lists(st.integers(0, nd - 1), min_size=1, max_size=nd, unique=True).map(tuple))
    dim = draw(st.one_of(*choices))
    return shape, dim, draw(st.booleans())


def _kw(dim, keepdim):
    return {} if dim is None else {"dim": dim, "keepdim": keepdim}


@pytest.mark.parametrize("op", ["sum", "mean", "var", "std", "amax"])
@FEW
@given(case=shape_and_dim())
def test_reduction(op, case):
    shape, dim, keepdim = case
    if op in ("var", "std"):
        n = int(np.prod([shape[d] for d in ([dim] if isinstance(dim, int) else (dim or range(len(shape))))]))
        if n < 2:  # the unbiased estimate needs two values
            shape = tuple(s + 1 for s in shape)
    check_op(lambda x: getattr(x, op)(**_kw(dim, keepdim)), lambda x: getattr(x, op)(**_kw(dim, keepdim)), [shape])


@pytest.mark.parametrize("op", ["max", "min"])
@FEW
@given(case=shape_and_dim(allow_tuple=False))
def test_max_min_values_and_indices(op, case):
    shape, dim, keepdim = case
    check_op(lambda x: getattr(x, op)(**_kw(dim, keepdim)), lambda x: getattr(x, op)(**_kw(dim, keepdim)), [shape])


@pytest.mark.parametrize("correction", [0, 1, 2])
def test_var_correction(correction):
    check_op(lambda x: x.var(dim=1, correction=correction), lambda x: x.var(dim=1, correction=correction),
             [(3, 5)])


def test_var_unbiased_false():
    check_op(lambda x: x.var(dim=-1, unbiased=False, keepdim=True),
             lambda x: x.var(dim=-1, unbiased=False, keepdim=True), [(2, 3, 4)])


@pytest.mark.parametrize("op", ["argmax", "argmin"])
@pytest.mark.parametrize("dim, keepdim", [(None, False), (0, False), (1, True), (-1, False)])
def test_argmax_argmin(op, dim, keepdim):
    kw = {} if dim is None else {"dim": dim, "keepdim": keepdim}
    check_op(lambda x: getattr(x, op)(**kw), lambda x: getattr(x, op)(**kw), [(3, 4)], grad=False)


def test_amax_ties_split_the_gradient_as_torch():
    x = np.array([[1.0, 3.0, 3.0], [2.0, 2.0, 2.0]])
    check_op(lambda x: x.amax(dim=1), lambda x: x.amax(dim=1), [x], gradcheck_=False)


def test_max_over_everything_with_ties():
    x = np.array([[1.0, 3.0], [3.0, 0.5]])
    check_op(lambda x: x.max(), lambda x: x.max(), [x], gradcheck_=False)


def test_max_with_dim_sends_the_gradient_to_torchs_index():
    x = np.array([[1.0, 3.0, 3.0], [2.0, 0.0, 2.0]])
    check_op(lambda x: x.max(dim=1).values, lambda x: x.max(dim=1).values, [x], gradcheck_=False)


def test_reductions_under_a_sum_of_outputs():
    check_op(lambda x: (x.sum(0), x.mean(1), x.var(0)), lambda x: (x.sum(0), x.mean(1), x.var(0)), [(3, 4)])


def test_reduction_keeps_float32():
    t = torch.randn(3, 4)
    import seqlab

    x = seqlab.tensor(t.numpy(), requires_grad=True)
    for y in (x.sum(), x.mean(1), x.var(0), x.amax(1), x.std()):
        assert y.dtype == np.float32
        y.sum().backward()
        assert x.grad.dtype == np.float32
