"""Shape and selection ops (issue 2 §3): reshape, permute, indexing, cat/stack/split/chunk."""
import numpy as np
import pytest
import torch
from helpers import check_op
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import seqlab

FEW = settings(max_examples=15, deadline=None)
shapes = hnp.array_shapes(min_dims=1, max_dims=4, min_side=1, max_side=4)


@pytest.mark.parametrize("shape, new", [((2, 3, 4), (6, 4)), ((2, 3, 4), (-1,)), ((2, 3, 4), (4, -1, 2)),
                                        ((6,), (1, 6, 1)), ((1,), ())])
def test_reshape_and_view(shape, new):
    check_op(lambda x: x.reshape(new), lambda x: x.reshape(new), [shape])
    check_op(lambda x: x.view(new), lambda x: x.view(new), [shape])


@FEW
@given(data=st.data())
def test_permute(data):
    shape = data.draw(shapes)
    perm = data.draw(st.permutations(range(len(shape))))
    check_op(lambda x: x.permute(*perm), lambda x: x.permute(*perm), [shape])


@FEW
@given(data=st.data())
def test_transpose(data):
    shape = data.draw(shapes)
    d0 = data.draw(st.integers(-len(shape), len(shape) - 1))
    d1 = data.draw(st.integers(-len(shape), len(shape) - 1))
    check_op(lambda x: x.transpose(d0, d1), lambda x: x.transpose(d0, d1), [shape])


@pytest.mark.parametrize("dim", [0, 1, 2, -1, -3])
def test_unsqueeze(dim):
    check_op(lambda x: x.unsqueeze(dim), lambda x: x.unsqueeze(dim), [(2, 3)])


@pytest.mark.parametrize("dim", [None, 0, 2, -1, (0, 2)])
def test_squeeze(dim):
    kw = {} if dim is None else {"dim": dim}
    check_op(lambda x: x.squeeze(**kw), lambda x: x.squeeze(**kw), [(1, 3, 1, 2)])


@pytest.mark.parametrize("shape, target", [((3, 1), (3, 4)), ((1, 4), (2, 3, 4)), ((3, 1), (-1, 5)),
                                           ((2, 1, 3), (4, 2, -1, 3))])
def test_expand(shape, target):
    check_op(lambda x: x.expand(*target), lambda x: x.expand(*target), [shape])


@pytest.mark.parametrize("args", [(), (1,), (1, 2), (0, -1), (-2, -1)])
def test_flatten(args):
    check_op(lambda x: x.flatten(*args), lambda x: x.flatten(*args), [(2, 3, 2, 2)])


@pytest.mark.parametrize("index", [
    (0,), (-1,), (slice(1, 3),), (slice(None, None, -1),), (slice(None), 1), (Ellipsis, 0), (None, 1),
    (slice(0, 3, 2), slice(None), -1), (1, Ellipsis, slice(1, None)), (slice(None), None, 2),
])
def test_basic_indexing(index):
    # torch rejects negative steps; NumPy-style reversal is compared with flip
    if any(isinstance(i, slice) and i.step == -1 for i in index):
        check_op(lambda x: x[index], lambda x: x.flip(0), [(4, 3, 3)])
    else:
        check_op(lambda x: x[index], lambda x: x[index], [(4, 3, 3)])


@pytest.mark.parametrize("index", [
    np.array([0, 2, 2, 1, 2]),                              # repeats: gradients add up
    np.array([[3, 3], [0, 3]]),                             # 2-D index array
    (np.array([0, 1, 1]), np.array([2, 0, 2])),             # pairs of coordinates, one repeated
    (slice(None), np.array([1, 1, 0])),                     # mixed slice + array
    (np.array([-1, 0, -1]),),                               # negative indices
])
def test_integer_array_indexing_scatter_adds(index):
    def t_index(i):
        return tuple(torch.from_numpy(a) if isinstance(a, np.ndarray) else a for a in i) \
            if isinstance(i, tuple) else torch.from_numpy(i)

    check_op(lambda x: x[index], lambda x: x[t_index(index)], [(4, 3)])


def test_indexing_with_list_and_tensor():
    check_op(lambda x: x[[0, 0, 2]], lambda x: x[[0, 0, 2]], [(3, 2)])
    idx = np.array([1, 1, 0])
    check_op(lambda x: x[seqlab.tensor(idx)], lambda x: x[torch.from_numpy(idx)], [(3, 2)])


def test_boolean_mask_indexing():
    mask = np.array([[True, False, True], [False, False, True]])
    check_op(lambda x, m: x[m], lambda x, m: x[m], [(2, 3), mask])


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_cat(dim):
    sizes = [(2, 3), (2, 3), (2, 3)]
    sizes = [tuple(s + i if (d % 2) == (dim % 2) else s for d, s in enumerate(shape)) for i, shape in enumerate(sizes)]
    check_op(lambda *xs: seqlab.cat(xs, dim=dim), lambda *xs: torch.cat(xs, dim=dim), sizes)


@pytest.mark.parametrize("dim", [0, 1, 2, -1])
def test_stack(dim):
    check_op(lambda *xs: seqlab.stack(xs, dim=dim), lambda *xs: torch.stack(xs, dim=dim), [(2, 3)] * 3)


@pytest.mark.parametrize("size, dim", [(2, 0), (3, 1), ([1, 4], 1), (5, -1), ([2, 2, 1], 0)])
def test_split(size, dim):
    check_op(lambda x: x.split(size, dim), lambda x: x.split(size, dim), [(5, 5)])


@pytest.mark.parametrize("chunks, dim", [(2, 0), (3, 1), (5, 1), (4, -1)])
def test_chunk(chunks, dim):
    check_op(lambda x: x.chunk(chunks, dim), lambda x: x.chunk(chunks, dim), [(5, 6)])


def test_only_some_pieces_used():
    check_op(lambda x: x.split(2, 1)[1] * 2, lambda x: x.split(2, 1)[1] * 2, [(3, 6)])


def test_T_and_contiguous():
    check_op(lambda x: x.T.contiguous(), lambda x: x.permute(2, 1, 0), [(2, 3, 4)])


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_unbind(dim):
    check_op(lambda x: x.unbind(dim), lambda x: x.unbind(dim), [(3, 2, 4)])


@pytest.mark.parametrize("dims", [0, (1,), (0, 2)])
def test_flip(dims):
    check_op(lambda x: x.flip(dims), lambda x: x.flip(dims), [(3, 2, 4)])


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_gather_with_repeats(dim):
    idx = np.random.default_rng(0).integers(0, 3, (3, 4, 2))
    check_op(lambda x, i: x.gather(dim, i), lambda x, i: x.gather(dim, i), [(3, 4, 3) if dim != 1 else (3, 3, 2), idx])


@pytest.mark.parametrize("sizes", [(2, 1), (1, 3), (2, 2, 1)])
def test_repeat(sizes):
    check_op(lambda x: x.repeat(*sizes), lambda x: x.repeat(*sizes), [(2, 3)])


@pytest.mark.parametrize("diagonal", [0, 1, -1])
def test_tril_triu(diagonal):
    check_op(lambda x: x.tril(diagonal) + x.triu(diagonal) * 2, lambda x: x.tril(diagonal) + x.triu(diagonal) * 2,
             [(2, 4, 5)])


@pytest.mark.parametrize("p, dim", [(2, None), (2, 1), (1, 0), (3, -1), (float("inf"), 1)])
def test_norm(p, dim):
    kw = {} if dim is None else {"dim": dim}
    check_op(lambda x: x.norm(p, **kw), lambda x: x.norm(p, **kw), [(3, 4)])


def test_clone_keeps_the_graph_and_owns_memory():
    check_op(lambda x: x.clone() * 2, lambda x: x.clone() * 2, [(3,)])
    x = seqlab.randn(3)
    assert not np.shares_memory(x.clone().data, x.data)
    t = seqlab.randn(4, 3, requires_grad=True).t()  # torch's clone keeps the layout (preserve_format)
    c = t.clone()
    assert c.requires_grad and c.data.flags.f_contiguous and not np.shares_memory(c.data, t.data)
    np.testing.assert_array_equal(c.data, t.data)
    assert seqlab.randn(4, 3).t().clone().data.flags.f_contiguous  # without a graph too
    e = seqlab.randn(3, 1, requires_grad=True).expand(3, 4).clone()  # a broadcast view: contiguous, as torch
    assert e.data.flags.c_contiguous and e.data.strides == torch.randn(3, 1).expand(3, 4).clone().numpy().strides


def test_per_step_slices_accumulate_in_one_buffer():
    """x[:, t] for every t (an RNN's input loop) sums into one gradient, equal to torch's."""
    check_op(lambda x: seqlab.stack([x[:, t] * (t + 1) for t in range(x.shape[1])], dim=1).tanh(),
             lambda x: torch.stack([x[:, t] * (t + 1) for t in range(x.shape[1])], dim=1).tanh(), [(2, 6, 3)])


def test_slices_of_a_non_leaf_and_of_a_shared_gradient():
    f = lambda x: (lambda h: h[0] * h[1] + h[:, 1:].sum() + h)(x + x)  # noqa: E731
    check_op(f, f, [(2, 3)])
