"""The engine (issue 2 §2): accumulation, no_grad, detach, graph freeing, long unrolled recurrences."""
import gc
import sys
import weakref

import numpy as np
import pytest
import torch
from helpers import check_op

import seqlab
from seqlab import Function


def test_gradients_accumulate_across_backward_calls():
    x = seqlab.tensor([1.0, 2.0, 3.0], requires_grad=True)
    (x * x).sum().backward()
    (x * 3).sum().backward()
    np.testing.assert_allclose(x.grad, 2 * x.numpy() + 3)


def test_gradients_accumulate_into_the_same_grad_array_as_torch():
    """torch adds a later backward's gradient into the .grad tensor it has: a reference taken before sees the
    sum (an audit found seqlab's .grad replaced by a new array, the reference left at the first gradient)."""
    got = {}
    for lib in (seqlab, torch):
        w = lib.ones(3, requires_grad=True)
        (w * 2).sum().backward()
        held = w.grad
        (w * 3).sum().backward()
        got[lib.__name__] = (np.asarray(held).copy(), held is w.grad)
    assert got["seqlab"][1] and got["torch"][1]
    np.testing.assert_array_equal(got["seqlab"][0], got["torch"][0])  # [5, 5, 5] both
    w = seqlab.ones(3, requires_grad=True)
    w.grad = np.zeros(3, np.float32)
    w.grad.flags.writeable = False  # a .grad that cannot take the sum in place gets a new array
    (w * 3).sum().backward()
    np.testing.assert_array_equal(w.grad, [3, 3, 3])


def test_same_tensor_used_twice_in_one_op():
    x = seqlab.tensor([1.5, -2.0], requires_grad=True)
    (x * x).sum().backward()
    np.testing.assert_allclose(x.grad, 2 * x.numpy())


def test_diamond_graph():
    check_op(lambda x: (lambda h: h.exp() * h + h.tanh())(x * 2 + 1), lambda x: (lambda h: h.exp() * h + h.tanh())(x * 2 + 1),
             [(3, 2)])


def test_backward_with_gradient_for_non_scalars():
    x = seqlab.randn(2, 3, requires_grad=True)
    y = x * 2
    with pytest.raises(RuntimeError, match=r"scalar.*\(2, 3\)"):
        y.backward()
    with pytest.raises(ValueError, match=r"\(3,\).*\(2, 3\)"):
        y.backward(np.ones(3))
    y.backward(np.full((2, 3), 0.5))
    np.testing.assert_allclose(x.grad, 1.0)


def test_backward_on_a_tensor_without_grad_is_an_error():
    with pytest.raises(RuntimeError, match="does not require grad"):
        seqlab.ones(2).sum().backward()


def test_integer_tensors_cannot_require_grad():
    with pytest.raises(TypeError, match="int64"):
        seqlab.tensor([1, 2], requires_grad=True)


def test_no_grad_records_nothing_and_restores():
    x = seqlab.randn(3, requires_grad=True)
    with seqlab.no_grad():
        y = x * 2
        assert not seqlab.is_grad_enabled()
        with seqlab.enable_grad():
            z = x * 2
    assert seqlab.is_grad_enabled()
    assert not y.requires_grad and y.is_leaf
    assert z.requires_grad

    @seqlab.no_grad()
    def f(t):
        return t * 3

    assert not f(x).requires_grad and seqlab.is_grad_enabled()


def test_no_grad_restores_after_an_exception():
    with pytest.raises(ZeroDivisionError):
        with seqlab.no_grad():
            1 / 0
    assert seqlab.is_grad_enabled()


def test_detach_stops_the_gradient():
    x = seqlab.tensor([2.0], requires_grad=True)
    y = x * x.detach()  # d/dx = x (not 2x)
    y.backward(np.ones(1, np.float32))
    np.testing.assert_allclose(x.grad, [2.0])
    assert not x.detach().requires_grad
    assert np.shares_memory(x.detach().data, x.data)


def test_retain_grad_on_a_non_leaf():
    x = seqlab.randn(3, requires_grad=True, dtype=np.float64)
    h = x * 2
    h.retain_grad()
    (h * h).sum().backward()
    np.testing.assert_allclose(h.grad, 2 * h.numpy())
    assert h.grad is not None and not h.is_leaf


def test_graph_is_freed_and_second_backward_is_an_error():
    x = seqlab.randn(3, requires_grad=True)
    y = (x.exp() * 2).sum()
    y.backward(retain_graph=True)
    y.backward()  # the graph was kept once
    np.testing.assert_allclose(x.grad, 4 * np.exp(x.numpy()), rtol=1e-6)
    with pytest.raises(RuntimeError, match="second time"):
        y.backward()


def test_graph_references_are_dropped_after_backward():
    """After backward no Function (and so no array saved for backward) stays reachable."""
    x = seqlab.randn(50, 50, requires_grad=True)
    h = x
    refs = []
    for _ in range(20):
        h = (h @ x).tanh()
        refs.append(weakref.ref(h._ctx))
    loss = h.sum()
    del h
    loss.backward()
    assert all(r() is None for r in refs)  # freed by reference counting alone, no gc needed
    assert x.grad is not None


def test_unused_graph_is_collected_without_backward():
    x = seqlab.randn(10, requires_grad=True)
    y = (x * 2).exp()
    ref = weakref.ref(y._ctx)
    del y
    assert ref() is None


def test_10000_step_unrolled_recurrence_backpropagates_like_torch():
    """h_t = tanh(W h_{t−1} + x_t) over 10,000 steps: no recursion limit, same gradient as torch."""
    steps, d = 10_000, 4
    rng = np.random.default_rng(0)
    w0 = rng.standard_normal((d, d)) * 0.5
    xs = rng.standard_normal((steps, d)) * 0.5
    assert steps > sys.getrecursionlimit()

    w = seqlab.tensor(w0, requires_grad=True)
    xs_s = seqlab.tensor(xs, requires_grad=True)
    h = seqlab.zeros(d, dtype=np.float64)
    total = None
    for t in range(steps):
        h = (w @ h + xs_s[t]).tanh()
        if t % 1000 == 999:
            total = h.sum() if total is None else total + h.sum()
    total.backward()

    wt = torch.tensor(w0, requires_grad=True)
    xt = torch.tensor(xs, requires_grad=True)
    ht = torch.zeros(d, dtype=torch.float64)
    total_t = 0
    xt_steps = xt.unbind(0)  # torch's per-step indexing backward is quadratic (12 s here); unbind is not
    for t in range(steps):
        ht = torch.tanh(wt @ ht + xt_steps[t])
        if t % 1000 == 999:
            total_t = total_t + ht.sum()
    total_t.backward()
    np.testing.assert_allclose(w.grad, wt.grad.numpy(), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(xs_s.grad, xt.grad.numpy(), rtol=1e-9, atol=1e-12)


def test_float32_graph_stays_float32():
    x = seqlab.randn(4, 3, requires_grad=True)
    w = seqlab.randn(3, 2, requires_grad=True)
    loss = seqlab.functional.cross_entropy(seqlab.functional.gelu(x @ w), np.array([0, 1, 1, 0]))
    assert loss.dtype == np.float32
    loss.backward()
    assert x.grad.dtype == np.float32 and w.grad.dtype == np.float32


def test_cast_passes_the_gradient_back_in_the_source_dtype():
    x = seqlab.randn(3, requires_grad=True)
    y = x.double() * 2
    assert y.dtype == np.float64
    y.sum().backward()
    assert x.grad.dtype == np.float32
    np.testing.assert_allclose(x.grad, 2.0)


def test_reductions_return_arrays_not_numpy_scalars():
    y = seqlab.randn(3, requires_grad=True).sum()
    assert isinstance(y.data, np.ndarray) and y.shape == ()


class _WrongSquare(Function):
    def forward(self, a):
        self.save_for_backward(a)
        return a * a

    def backward(self, grad):
        (a,) = self.saved
        return (grad * a,)  # should be 2a


def test_check_op_catches_a_wrong_backward():
    with pytest.raises(AssertionError):
        check_op(lambda x: _WrongSquare.apply(x), None, [(3,)])
    with pytest.raises(AssertionError):
        check_op(lambda x: _WrongSquare.apply(x), lambda x: x * x, [(3,)], gradcheck_=False)


def test_tensor_basics():
    x = seqlab.tensor([[1.0, 2.0], [3.0, 4.0]])
    assert x.dtype == np.float32 and x.shape == (2, 2) and x.ndim == 2 and len(x) == 2 and x.numel() == 4
    assert x.size() == (2, 2) and x.size(1) == 2 and x.dim() == 2
    assert x.tolist() == [[1.0, 2.0], [3.0, 4.0]]
    assert x[1, 1].item() == 4.0
    assert np.asarray(x).dtype == np.float32
    assert "tensor(" in repr(x)
    assert seqlab.tensor([1, 2]).dtype == np.int64
    assert seqlab.tensor(np.zeros(2, np.float64)).dtype == np.float64
    assert (x > 2).dtype == bool and not (x > 2).requires_grad
    np.testing.assert_array_equal((x == 2).numpy(), [[False, True], [False, False]])
    with pytest.raises(ValueError, match=r"\(2, 2\)"):
        x.item()


def test_creation_ops():
    assert seqlab.zeros(2, 3).shape == (2, 3) and seqlab.zeros((2, 3)).dtype == np.float32
    assert seqlab.ones(3, dtype=np.float64).dtype == np.float64
    assert np.all(seqlab.full((2, 2), 7.0).numpy() == 7)
    assert seqlab.full(3, 1.0).shape == (3,)
    np.testing.assert_array_equal(seqlab.arange(4).numpy(), [0, 1, 2, 3])
    assert seqlab.arange(4).dtype == np.int64
    assert seqlab.arange(0.0, 1.0, 0.25).dtype == np.float32  # as torch: floats get the default dtype
    assert seqlab.randn(2, 3).dtype == np.float32 and seqlab.rand(4).shape == (4,)
    x = seqlab.randn(2, requires_grad=True)
    assert x.requires_grad and x.is_leaf


def test_manual_seed_makes_everything_reproducible():
    def draw():
        lin = seqlab.nn.Linear(4, 3)
        emb = seqlab.nn.Embedding(5, 2)
        return [lin.weight.numpy().copy(), emb.weight.numpy().copy(), seqlab.randn(3).numpy(),
                seqlab.rand(2).numpy(), seqlab.functional.dropout(seqlab.ones(8), 0.5).numpy()]

    seqlab.manual_seed(123)
    a = draw()
    seqlab.manual_seed(123)
    b = draw()
    seqlab.manual_seed(124)
    c = draw()
    for u, v in zip(a, b):
        np.testing.assert_array_equal(u, v)
    assert not np.array_equal(a[0], c[0])
    with pytest.raises(TypeError, match="str"):
        seqlab.manual_seed("1")


def test_random_state_round_trip():
    from seqlab import random as R

    seqlab.manual_seed(3)
    state = R.get_state()
    a = seqlab.randn(4).numpy()
    R.set_state(state)
    np.testing.assert_array_equal(seqlab.randn(4).numpy(), a)


def test_gc_is_not_needed_for_long_chains():
    gc.disable()
    try:
        x = seqlab.randn(100, requires_grad=True)
        h = x
        for _ in range(200):
            h = h * 1.0001
        ref = weakref.ref(h._ctx)
        h.sum().backward()
        del h
        assert ref() is None
    finally:
        gc.enable()


def test_gradients_never_alias_each_other_or_the_users_array():
    """The engine skips defensive copies only for arrays nothing else holds."""
    x = seqlab.randn(3, requires_grad=True)
    y = seqlab.randn(3, requires_grad=True)
    z = seqlab.randn(3, requires_grad=True)
    g = np.ones(3, np.float32)
    (x + y + z.reshape(3)).backward(g)
    for a, b in [(x.grad, y.grad), (x.grad, z.grad), (y.grad, z.grad), (x.grad, g), (z.grad, g)]:
        assert not np.shares_memory(a, b)
    x.grad *= 5  # in-place edits (clipping, zero_grad) touch only x
    np.testing.assert_array_equal(y.grad, g)
    np.testing.assert_array_equal(g, 1)
    w = seqlab.randn(2, requires_grad=True)
    (w * 3.0).sum().backward()
    assert w.grad.flags.writeable and isinstance(w.grad, np.ndarray)
    s = seqlab.tensor(2.0, requires_grad=True)
    (s * s).backward()
    assert isinstance(s.grad, np.ndarray) and s.grad.shape == () and s.grad == 4.0


def test_the_graph_holds_no_intermediate_tensor():
    """The graph links Functions: a tensor nobody holds is freed during the forward pass (as in torch),
    and its gradient still flows through the op that made it."""
    x = seqlab.randn(4, 3, requires_grad=True)
    h = x * 2.0
    ref = weakref.ref(h)
    y = (h + 1.0).sum()
    del h
    assert ref() is None  # freed by reference counting: nothing in the graph refers to it
    y.backward()
    np.testing.assert_allclose(x.grad, np.full((4, 3), 2.0))


def test_arrays_no_backward_reads_are_freed_during_the_forward():
    """Ten additions of 4 MB arrays (Add saves nothing for backward): the forward ends holding one
    of them, not ten (with a graph of tensors it held all ten until backward)."""
    import tracemalloc

    x = seqlab.Tensor(np.zeros(1 << 20, dtype=np.float32), requires_grad=True)
    one = seqlab.Tensor(np.ones(1 << 20, dtype=np.float32))
    tracemalloc.start()
    try:
        h = x
        for _ in range(10):
            h = h + one
        held = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert held < 2 * 4 * (1 << 20)
    h.sum().backward()
    np.testing.assert_array_equal(x.grad, np.ones(1 << 20, dtype=np.float32))


def test_retain_grad_of_an_intermediate_tensor_still_works():
    x = seqlab.tensor([1.0, 2.0], requires_grad=True)
    h = x * 3.0
    h.retain_grad()
    (h * h).sum().backward()
    np.testing.assert_allclose(h.grad, 2 * h.numpy())
    np.testing.assert_allclose(x.grad, 18 * x.numpy())


def test_backward_through_a_branch_freed_by_an_earlier_backward_is_an_error():
    x = seqlab.randn(3, requires_grad=True)
    z = x.exp()
    y1, y2 = z.sum(), (z * 2).sum()
    y1.backward()
    with pytest.raises(RuntimeError, match="second time"):
        y2.backward()


def test_a_saved_array_changed_in_place_after_the_forward_pass_stops_backward_as_in_torch():
    """w·w saved w; changing w under no_grad before backward would give 2·(new w): torch and seqlab refuse."""
    w = seqlab.tensor(np.array([1.0, 2.0, 3.0]), requires_grad=True)
    wt = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64, requires_grad=True)
    y, yt = (w * w).sum(), (wt * wt).sum()
    with seqlab.no_grad():
        w.copy_(np.array([10.0, 20.0, 30.0]))
    with torch.no_grad():
        wt.copy_(torch.tensor([10.0, 20.0, 30.0]))
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        yt.backward()
    with pytest.raises(RuntimeError, match=r"Mul saved for backward .* changed in place"):
        y.backward()
    # a non-leaf's array, changed the same way
    x = seqlab.tensor(np.array([1.0, 2.0]), requires_grad=True)
    h = x * 2.0
    z = (h * h).sum()
    with seqlab.no_grad():
        h.zero_()
    with pytest.raises(RuntimeError, match="changed in place"):
        z.backward()


def test_in_place_changes_that_no_backward_reads_are_fine():
    """x + 1 saves nothing: changing x afterwards leaves its gradient right (torch agrees); a new forward
    after the change sees the new values."""
    w = seqlab.tensor(np.array([1.0, 2.0]), requires_grad=True)
    y = (w + 1.0).sum()
    with seqlab.no_grad():
        w.fill_(5.0)
    y.backward()
    assert np.array_equal(w.grad, [1.0, 1.0])
    w.grad = None
    (w * w).sum().backward()  # the graph built after the change
    assert np.array_equal(w.grad, [10.0, 10.0])
    c = seqlab.tensor(np.array([1.0, 2.0]))  # a constant changed after a forward that saved it, then rebuilt
    (w * c).sum()
    c.zero_()
    w.grad = None
    (w * c).sum().backward()
    assert np.array_equal(w.grad, [0.0, 0.0])


@pytest.mark.parametrize("change", [lambda t: t.zero_(), lambda t: t.fill_(1.0), lambda t: t.copy_(np.ones(2))])
def test_a_tensor_that_requires_grad_is_changed_in_place_only_under_no_grad(change):
    w = seqlab.tensor(np.array([3.0, 4.0]), requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf tensor that requires grad .*no_grad"):
        change(w)
    assert np.array_equal(w.data, [3.0, 4.0])
    with pytest.raises(RuntimeError, match="part of a graph"):
        change(w * 2.0)
    with seqlab.no_grad():
        change(w)
    assert w.data[1] in (0.0, 1.0)
