"""Torch idioms on `Tensor`, each compared with torch on the same inputs: in-place arithmetic (`p -= lr * p.grad`
under no_grad), dims out of range (IndexError, not a wrap-around), split/chunk sizes, masked_fill's mask shape,
and float()/int()/index() of one-element tensors."""
import numpy as np
import pytest
import torch

import seqlab
from seqlab import nn
import seqlab.functional as F

RNG = np.random.default_rng(0)


def _pair(*shape, requires_grad=False):
    a = RNG.standard_normal(shape).astype(np.float32)
    return seqlab.tensor(a.copy(), requires_grad=requires_grad), torch.tensor(a.copy(), requires_grad=requires_grad)


# ---- in-place arithmetic ------------------------------------------------------------------------------------
def test_manual_sgd_step_under_no_grad_matches_torch():
    model = nn.Linear(4, 3)
    ref = torch.nn.Linear(4, 3)
    with torch.no_grad():
        ref.weight.copy_(torch.tensor(model.weight.numpy()))
        ref.bias.copy_(torch.tensor(model.bias.numpy()))
    x = RNG.standard_normal((5, 4)).astype(np.float32)
    before = [p.numpy().copy() for p in model.parameters()]
    ids = [id(p) for p in model.parameters()]
    for _ in range(2):
        (model(seqlab.tensor(x)) ** 2).sum().backward()
        (ref(torch.tensor(x)) ** 2).sum().backward()
        for p, q in zip(model.parameters(), ref.parameters()):  # the same gradients, to compare the update exactly
            np.testing.assert_allclose(p.grad, q.grad.numpy(), rtol=1e-5, atol=1e-6)
            p.grad = q.grad.numpy().copy()
        with seqlab.no_grad():
            for p in model.parameters():
                p -= 0.1 * p.grad  # p.grad is a NumPy array in seqlab
                p.grad = None
        with torch.no_grad():
            for p in ref.parameters():
                p -= 0.1 * p.grad
                p.grad = None
    assert [id(p) for p in model.parameters()] == ids and all(p.requires_grad for p in model.parameters())
    for p, q, b in zip(model.parameters(), ref.parameters(), before):
        assert not np.array_equal(p.numpy(), b)  # changed, not rebound
        np.testing.assert_array_equal(p.numpy(), q.detach().numpy())


@pytest.mark.parametrize("op", ["+=", "-=", "*=", "/="])
@pytest.mark.parametrize("kind", ["tensor", "array", "number", "row"])
def test_augmented_ops_change_the_tensor_itself_as_torch(op, kind):
    s, t = _pair(2, 3)
    alias_s, alias_t = s, t
    o = RNG.standard_normal((1, 3) if kind == "row" else (2, 3)).astype(np.float32) + 3.0
    so = {"tensor": seqlab.tensor(o), "array": o, "number": 1.5, "row": o}[kind]
    to = {"tensor": torch.tensor(o), "array": torch.tensor(o), "number": 1.5, "row": torch.tensor(o)}[kind]
    exec(f"s {op} so; t {op} to")
    assert alias_s is s and alias_t is t
    assert s.dtype == np.float32 and s.shape == tuple(t.shape)
    np.testing.assert_allclose(alias_s.numpy(), t.numpy(), rtol=1e-6)


def test_named_in_place_ops_with_alpha_match_torch():
    s, t = _pair(2, 3)
    o = RNG.standard_normal(3).astype(np.float32)
    assert s.add_(seqlab.tensor(o), alpha=2) is s
    t.add_(torch.tensor(o), alpha=2)
    s.sub_(o, alpha=0.5)
    t.sub_(torch.tensor(o), alpha=0.5)
    s.mul_(3)
    t.mul_(3)
    s.div_(seqlab.tensor(o))
    t.div_(torch.tensor(o))
    np.testing.assert_allclose(s.numpy(), t.numpy(), rtol=1e-5)


def test_in_place_keeps_the_dtype_and_refuses_what_torch_refuses():
    i, ti = seqlab.tensor([1, 2]), torch.tensor([1, 2])
    i += 3
    ti += 3
    i *= seqlab.tensor([2, 2])
    ti *= torch.tensor([2, 2])
    assert i.dtype == np.int64 and i.tolist() == ti.tolist()
    for bad_s, bad_t in [(lambda: i.add_(1.5), lambda: ti.add_(1.5)), (lambda: i.div_(2), lambda: ti.div_(2))]:
        with pytest.raises(RuntimeError, match="can't be cast"):
            bad_t()
        with pytest.raises(RuntimeError, match="can't be cast"):
            bad_s()
    assert i.tolist() == ti.tolist() == [8, 10]
    s, t = _pair(2, 3)
    with pytest.raises(RuntimeError):
        t += torch.ones(3, 3)
    with pytest.raises(ValueError, match=r"shape \(3, 3\) does not broadcast to the tensor's shape \(2, 3\)"):
        s += np.ones((3, 3), np.float32)
    with pytest.raises(ValueError, match=r"\(1, 2, 3\).*\(2, 3\)"):  # broadcasting that would grow self
        s.add_(np.ones((1, 2, 3), np.float32))
    f64 = np.ones((2, 3), np.float64)
    s += f64
    t += torch.tensor(f64)
    assert s.dtype == np.float32 and t.dtype == torch.float32
    np.testing.assert_allclose(s.numpy(), t.numpy(), rtol=1e-6)


def test_in_place_on_a_leaf_that_requires_grad_raises_outside_no_grad():
    s, t = _pair(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf"):
        t += 1
    with pytest.raises(RuntimeError, match="leaf tensor that requires grad"):
        s += 1
    with pytest.raises(RuntimeError, match="leaf tensor that requires grad"):
        s.mul_(2)
    np.testing.assert_array_equal(s.numpy(), t.detach().numpy())  # nothing changed
    with seqlab.no_grad():
        s += 1
    with torch.no_grad():
        t += 1
    np.testing.assert_array_equal(s.numpy(), t.detach().numpy())


def test_augmented_op_on_a_non_leaf_keeps_values_and_gradients_as_torch():
    s, t = _pair(2, 3, requires_grad=True)
    sr, tr = _pair(2, 3, requires_grad=True)
    ys, yt = s.tanh() + 0.5, t.tanh() + 0.5  # (tanh saves its output in torch: not changed in place)
    ys += sr  # the residual idiom: `x = ln(x); x += residual`
    yt += tr
    ys *= 2
    yt *= 2
    ys -= s
    yt -= t
    ys /= 3
    yt /= 3
    np.testing.assert_allclose(ys.numpy(), yt.detach().numpy(), rtol=1e-6)
    (ys ** 2).sum().backward()
    (yt ** 2).sum().backward()
    np.testing.assert_allclose(s.grad, t.grad.numpy(), rtol=1e-5)
    np.testing.assert_allclose(sr.grad, tr.grad.numpy(), rtol=1e-5)


def test_augmented_op_with_an_operand_that_requires_grad_keeps_its_gradient():
    s, t = _pair(3, requires_grad=True)
    acc_s, acc_t = seqlab.zeros(3), torch.zeros(3)
    acc_s += s * 2  # acc requires no grad, the operand does: torch records it; seqlab takes `acc = acc + s*2`
    acc_t += t * 2
    acc_s.sum().backward()
    acc_t.sum().backward()
    np.testing.assert_allclose(acc_s.numpy(), acc_t.detach().numpy())
    np.testing.assert_allclose(s.grad, t.grad.numpy())
    with pytest.raises(RuntimeError, match="gradient would be lost"):
        seqlab.zeros(3).add_(s)


def test_in_place_on_an_array_saved_for_backward_then_backward_raises():
    s, t = _pair(3, requires_grad=True)
    ys, yt = (s * s).sum(), (t * t).sum()  # Mul saves its inputs
    with seqlab.no_grad():
        s -= 1
    with torch.no_grad():
        t -= 1
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        yt.backward()
    with pytest.raises(RuntimeError, match="changed in place"):
        ys.backward()
    # not saved by anything: the backward still runs
    a = seqlab.ones(3, requires_grad=True)
    b = (a + 1).sum()
    with seqlab.no_grad():
        a *= 5
    b.backward()
    np.testing.assert_array_equal(a.grad, np.ones(3, np.float32))


def test_in_place_on_a_view_changes_the_base_as_torch():
    s, t = _pair(2, 3)
    vs, vt = s.reshape(3, 2), t.reshape(3, 2)
    vs += 1
    vt += 1
    np.testing.assert_array_equal(s.numpy(), t.numpy())
    with pytest.raises(RuntimeError, match="read-only"):
        seqlab.zeros(3).expand(2, 3).add_(1)
    with pytest.raises(RuntimeError, match="single memory location"):
        torch.zeros(3).expand(2, 3).add_(1)


# ---- dims out of range --------------------------------------------------------------------------------------
x_np = RNG.standard_normal((2, 3)).astype(np.float32)
idx_np = np.zeros((2, 3), np.int64)
BAD_DIMS = [  # (name, seqlab call, torch call, the dim torch reports, the range's bounds)
    ("cat", lambda x: seqlab.cat([x, x], dim=2), lambda x: torch.cat([x, x], dim=2), 2, (-2, 1)),
    ("cat-3", lambda x: seqlab.cat([x, x], dim=-3), lambda x: torch.cat([x, x], dim=-3), -3, (-2, 1)),
    ("unsqueeze", lambda x: x.unsqueeze(4), lambda x: x.unsqueeze(4), 4, (-3, 2)),
    ("unsqueeze3", lambda x: x.unsqueeze(3), lambda x: x.unsqueeze(3), 3, (-3, 2)),
    ("stack", lambda x: seqlab.stack([x, x], dim=4), lambda x: torch.stack([x, x], dim=4), 4, (-3, 2)),
    ("stack-4", lambda x: seqlab.stack([x, x], dim=-4), lambda x: torch.stack([x, x], dim=-4), -4, (-3, 2)),
    ("flip", lambda x: x.flip(2), lambda x: x.flip(2), 2, (-2, 1)),
    ("gather", lambda x: x.gather(2, seqlab.tensor(idx_np)), lambda x: x.gather(2, torch.tensor(idx_np)), 2, (-2, 1)),
    ("permute", lambda x: x.permute(0, -3), lambda x: x.permute(0, -3), -3, (-2, 1)),
    ("flatten", lambda x: x.flatten(0, 3), lambda x: x.flatten(0, 3), 3, (-2, 1)),
    ("transpose", lambda x: x.transpose(0, 2), lambda x: x.transpose(0, 2), 2, (-2, 1)),
    ("split", lambda x: x.split(1, dim=2), lambda x: x.split(1, dim=2), 2, (-2, 1)),
    ("chunk", lambda x: x.chunk(2, dim=-3), lambda x: x.chunk(2, dim=-3), -3, (-2, 1)),
    ("unbind", lambda x: x.unbind(2), lambda x: x.unbind(2), 2, (-2, 1)),
    ("softmax", lambda x: x.softmax(2), lambda x: x.softmax(2), 2, (-2, 1)),
    ("log_softmax", lambda x: x.log_softmax(-3), lambda x: x.log_softmax(-3), -3, (-2, 1)),
    ("max", lambda x: x.max(2), lambda x: x.max(2), 2, (-2, 1)),
    ("min", lambda x: x.min(dim=-3), lambda x: x.min(dim=-3), -3, (-2, 1)),
    ("argmax", lambda x: x.argmax(2), lambda x: x.argmax(2), 2, (-2, 1)),
    ("argmin", lambda x: x.argmin(-3), lambda x: x.argmin(-3), -3, (-2, 1)),
    ("sum", lambda x: x.sum(2), lambda x: x.sum(2), 2, (-2, 1)),
    ("squeeze", lambda x: x.squeeze(2), lambda x: x.squeeze(2), 2, (-2, 1)),
    ("size", lambda x: x.size(2), lambda x: x.size(2), 2, (-2, 1)),
]


@pytest.mark.parametrize("name,fs,ft,dim,bounds", BAD_DIMS, ids=[b[0] for b in BAD_DIMS])
def test_dim_out_of_range_raises_index_error_as_torch(name, fs, ft, dim, bounds):
    wording = rf"Dimension out of range \(expected to be in range of \[{bounds[0]}, {bounds[1]}\], but got {dim}\)"
    with pytest.raises(IndexError, match=wording):
        ft(torch.tensor(x_np))
    with pytest.raises(IndexError, match=wording):
        fs(seqlab.tensor(x_np))


def test_dims_in_range_still_match_torch():
    s, t = seqlab.tensor(x_np), torch.tensor(x_np)
    pairs = [
        (seqlab.cat([s, s], dim=-2), torch.cat([t, t], dim=-2)),
        (seqlab.stack([s, s], dim=-3), torch.stack([t, t], dim=-3)),
        (seqlab.stack([s, s], dim=2), torch.stack([t, t], dim=2)),
        (s.unsqueeze(-3), t.unsqueeze(-3)), (s.unsqueeze(2), t.unsqueeze(2)),
        (s.flip(-1), t.flip(-1)), (s.permute(-1, 0), t.permute(-1, 0)), (s.flatten(-2, -1), t.flatten(-2, -1)),
        (s.transpose(-1, -2), t.transpose(-1, -2)), (s.softmax(-2), t.softmax(-2)),
        (s.max(-1).values, t.max(-1).values), (s.argmax(-2), t.argmax(-2)),
        (s.gather(-1, seqlab.tensor(idx_np)), t.gather(-1, torch.tensor(idx_np))),
        (seqlab.tensor(2.0).sum(-1), torch.tensor(2.0).sum(-1)),  # a 0-d tensor takes dim 0 or -1, as torch
        (seqlab.tensor(2.0).unsqueeze(-1), torch.tensor(2.0).unsqueeze(-1)),
    ]
    for a, b in pairs:
        assert a.shape == tuple(b.shape)
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-6)
    for a, b in zip(s.split(2, dim=-1), t.split(2, dim=-1)):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert [c.shape for c in s.chunk(2, dim=-1)] == [tuple(c.shape) for c in t.chunk(2, dim=-1)]
    assert s.size(-1) == t.size(-1) == 3


def test_split_and_chunk_of_size_zero_raise_value_error():
    s, t = seqlab.tensor(x_np), torch.tensor(x_np)
    with pytest.raises(RuntimeError, match="split_size can only be 0 if dimension size is 0"):
        t.split(0)
    with pytest.raises(ValueError, match="split_size can only be 0 if dimension size is 0"):
        s.split(0)
    with pytest.raises(RuntimeError, match="chunk expects `chunks` to be greater than 0, got: 0"):
        t.chunk(0)
    with pytest.raises(ValueError, match="chunk expects `chunks` to be greater than 0, got: 0"):
        s.chunk(0)
    with pytest.raises(ValueError, match="split_size be non-negative"):
        s.split(-1)


def test_masked_fill_with_a_mask_that_does_not_broadcast_names_both_shapes():
    s, t = seqlab.tensor(x_np), torch.tensor(x_np)
    bad = np.zeros((3, 2), bool)
    with pytest.raises(RuntimeError, match="must match"):
        t.masked_fill(torch.tensor(bad), 0.0)
    with pytest.raises(ValueError, match=r"mask of shape \(3, 2\) does not broadcast with the tensor's shape \(2, 3\)"):
        s.masked_fill(seqlab.tensor(bad), 0.0)
    row = np.array([True, False, True])
    np.testing.assert_array_equal(s.masked_fill(seqlab.tensor(row), 0.0).numpy(),
                                  t.masked_fill(torch.tensor(row), 0.0).numpy())


# ---- float(), int(), operator.index() -----------------------------------------------------------------------
def test_float_int_and_index_of_one_element_tensors_as_torch():
    for v, shape in [(2.75, ()), (-1.5, (1,)), (3.25, (1, 1))]:
        a = np.full(shape, v, np.float32)
        assert float(seqlab.tensor(a)) == float(torch.tensor(a)) == v
        assert int(seqlab.tensor(a)) == int(torch.tensor(a)) == int(v)
    i = np.array([3])
    assert [10, 11, 12, 13][seqlab.tensor(i)] == [10, 11, 12, 13][torch.tensor(i)] == 13
    assert list(range(seqlab.tensor(4))) == list(range(torch.tensor(4)))
    with pytest.raises(TypeError, match="only integer tensors of a single element"):
        [1, 2][torch.tensor(1.0)]
    with pytest.raises(TypeError, match="only integer tensors of a single element"):
        [1, 2][seqlab.tensor(1.0)]
    with pytest.raises(TypeError, match="only integer tensors of a single element"):
        [1, 2][seqlab.tensor([0, 1])]
    with pytest.raises(ValueError, match="only one element tensors"):
        float(torch.tensor(x_np))
    with pytest.raises(ValueError, match=r"one element, got shape \(2, 3\)"):
        float(seqlab.tensor(x_np))
    with pytest.raises(ValueError, match=r"one element, got shape \(2, 3\)"):
        int(seqlab.tensor(x_np))


def test_cat_and_stack_promote_as_torch():
    """cat/stack of mixed dtypes take torch's result dtype (float32 beside int64 stays float32; NumPy would
    give float64), and the gradient reaches the float input through the cast."""
    cases = [(np.float32, np.int64), (np.float32, np.float64), (np.int32, np.int64), (np.bool_, np.int64),
             (np.float32, np.bool_)]
    for a, b in cases:
        xa, xb = np.ones((2, 3), a), np.zeros((2, 3), b)
        for op, top in ((seqlab.cat, torch.cat), (seqlab.stack, torch.stack)):
            got = op([seqlab.tensor(xa), seqlab.tensor(xb)]).numpy()
            want = top([torch.from_numpy(xa), torch.from_numpy(xb)]).numpy()
            assert got.dtype == want.dtype, (op.__name__, a, b)
            np.testing.assert_array_equal(got, want)
    w = seqlab.tensor(np.ones((2, 2), np.float32), requires_grad=True)
    out = seqlab.cat([w, seqlab.tensor(np.full((1, 2), 3.0))], 0)          # float64 beside: w is cast up
    assert out.dtype == np.float64
    out.sum().backward()
    assert w.grad.dtype == np.float32 and np.all(w.grad == 1)


def test_functional_softmax_dim_out_of_range_is_indexerror():
    x = seqlab.tensor(np.ones((2, 3), np.float32))
    for fn in (F.softmax, F.log_softmax):
        with pytest.raises(IndexError, match=r"Dimension out of range \(expected to be in range of \[-2, 1\]"):
            fn(x, 2)
        np.testing.assert_allclose(fn(x, -2).numpy(), fn(x, 0).numpy())
