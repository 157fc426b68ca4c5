"""einsum against torch.einsum (values and gradients) and central differences, plus its errors."""
import numpy as np
import pytest
import torch
from helpers import check_op, same_as_torch

import cupy_stand_in
import seqlab
from seqlab import backend
from seqlab.autograd.ops.einsum import einsum

# (equation, operand shapes): each checked by central differences in float64 and against torch in
# float64 and float32, forward and every operand's gradient
CASES = [
    ("ij,jk->ik", [(3, 4), (4, 5)]),                          # matmul
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),                 # batched matmul
    ("bhqd,bhkd->bhqk", [(2, 3, 4, 5), (2, 3, 6, 5)]),        # attention scores
    ("i,j->ij", [(3,), (4,)]),                                # outer product
    ("ii->", [(4, 4)]),                                       # trace
    ("ii->i", [(4, 4)]),                                      # diagonal
    ("ij->", [(3, 4)]),                                       # sum of all
    ("ij->ji", [(3, 4)]),                                     # transpose
    ("ij,jk", [(3, 4), (4, 5)]),                              # implicit output: ik
    ("...ij,...jk->...ik", [(2, 1, 3, 4), (5, 4, 2)]),        # batch dims broadcast to (2, 5)
    ("bn,anm,bm->ba", [(3, 4), (2, 4, 5), (3, 5)]),           # bilinear, as torch.nn.functional.bilinear
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 5)]),               # a chain of three
    ("ij,k->i", [(3, 4), (5,)]),                              # j and k each summed inside one operand
    ("i j , j k -> i k", [(3, 4), (4, 2)]),                   # spaces anywhere
    ("ij,j", [(3, 4), (4,)]),                                 # implicit matrix-vector
    ("i,i->", [(5,), (5,)]),                                  # dot product
    ("...ii->...i", [(2, 3, 3)]),                             # batched diagonal
    ("iij->ji", [(3, 3, 2)]),                                 # diagonal of two axes out of three
    ("iji->j", [(3, 2, 3)]),                                  # repeated letter not side by side
    ("ii,i->i", [(3, 3), (3,)]),                              # diagonal times a vector
    ("...ij->ij", [(2, 3, 4)]),                               # '...' left out of the output: summed
    ("i...", [(2, 3)]),                                       # implicit output with '...': '...' first
    ("Ba", [(2, 3)]),                                         # implicit output sorted: uppercase first
    ("ij,jk->ik", [(3, 1), (4, 5)]),                          # a size-1 letter broadcasts (as torch)
    ("...i,...i->...", [(2, 3), (4, 1, 3)]),                  # batched dot product with broadcasting
    (",->", [(), ()]),                                        # two scalars
    ("bij,bkj->bik", [(1, 3, 4), (2, 5, 4)]),                 # size-1 batch of a named letter
]


@pytest.mark.parametrize("equation,shapes", CASES, ids=[c[0] for c in CASES])
def test_einsum_matches_torch(equation, shapes):
    check_op(lambda *xs: einsum(equation, *xs), lambda *xs: torch.einsum(equation, *xs), list(shapes))


def test_list_form_and_torch_list_form():
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((3, 4)), rng.standard_normal((4, 2))
    check_op(lambda x, y: einsum("ij,jk", [x, y]), lambda x, y: torch.einsum("ij,jk", [x, y]), [a, b])
    check_op(lambda x, y: einsum("ij,jk", (x, y)), lambda x, y: torch.einsum("ij,jk", (x, y)), [a, b])


def test_array_like_operands():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    w = seqlab.tensor(np.ones((3, 2), dtype=np.float32), requires_grad=True)
    out = einsum("ij,jk->ik", a, w)  # a NumPy array beside a tensor
    same_as_torch(out, torch.einsum("ij,jk->ik", torch.from_numpy(a), torch.ones(3, 2)))
    out.backward(np.ones((2, 2), dtype=np.float32))
    np.testing.assert_allclose(w.grad, a.sum(0)[:, None] * np.ones((1, 2)))
    same_as_torch(einsum("i->", [1.0, 2.0, 3.0]), torch.einsum("i->", torch.tensor([1.0, 2.0, 3.0])))
    same_as_torch(einsum("ij->ji", [[1, 2], [3, 4]]), torch.einsum("ij->ji", torch.tensor([[1, 2], [3, 4]])))


def test_grad_only_where_asked():
    rng = np.random.default_rng(1)
    a = seqlab.tensor(rng.standard_normal((3, 4)), requires_grad=True)
    b = seqlab.tensor(rng.standard_normal((4, 5)))  # no grad wanted
    g = rng.standard_normal((3, 5))
    einsum("ij,jk->ik", a, b).backward(g)
    assert b.grad is None
    np.testing.assert_allclose(a.grad, g @ b.numpy().T, rtol=1e-12)


def test_same_tensor_twice_sums_both_gradients():
    x = seqlab.tensor(np.array([1.0, 2.0, 3.0]), requires_grad=True)
    einsum("i,i->", x, x).backward()
    np.testing.assert_allclose(x.grad, 2 * x.numpy())


def test_a_leaf_in_two_einsums_that_sum_a_letter_inside_one_operand():
    # "ik,jl->ij" sums l inside b alone: the backward hands out a read-only broadcast view, which the
    # engine must copy before adding the second einsum's gradient into it
    rng = np.random.default_rng(5)
    a, b = rng.standard_normal((3, 2)), rng.standard_normal((4, 5))
    sa, sb = seqlab.tensor(a, requires_grad=True), seqlab.tensor(b, requires_grad=True)
    ta, tb = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
    (einsum("ik,jl->ij", sa, sb).exp().sum() + einsum("ik,jl->ij", sa, sb * 2).sum()).backward()
    (torch.einsum("ik,jl->ij", ta, tb).exp().sum() + torch.einsum("ik,jl->ij", ta, tb * 2).sum()).backward()
    np.testing.assert_allclose(sa.grad, ta.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(sb.grad, tb.grad.numpy(), rtol=1e-12)


def test_backward_with_explicit_grad_float32():
    rng = np.random.default_rng(2)
    q = rng.standard_normal((2, 3, 4, 8)).astype(np.float32)
    k = rng.standard_normal((2, 3, 5, 8)).astype(np.float32)
    g = rng.standard_normal((2, 3, 4, 5)).astype(np.float32)
    sq, sk = seqlab.tensor(q, requires_grad=True), seqlab.tensor(k, requires_grad=True)
    tq, tk = torch.tensor(q, requires_grad=True), torch.tensor(k, requires_grad=True)
    out = einsum("bhqd,bhkd->bhqk", sq, sk)
    ref = torch.einsum("bhqd,bhkd->bhqk", tq, tk)
    assert out.dtype == np.float32
    np.testing.assert_allclose(out.numpy(), ref.detach().numpy(), rtol=1e-5, atol=1e-5)
    out.backward(g)
    ref.backward(torch.from_numpy(g))
    assert sq.grad.dtype == np.float32 and sk.grad.dtype == np.float32
    np.testing.assert_allclose(sq.grad, tq.grad.numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(sk.grad, tk.grad.numpy(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype", [np.int64, np.int32])
def test_integer_operands_keep_their_dtype(dtype):
    a = np.arange(12, dtype=dtype).reshape(3, 4)
    b = np.arange(8, dtype=dtype).reshape(4, 2)
    out = einsum("ij,jk->ik", seqlab.tensor(a), seqlab.tensor(b))
    same_as_torch(out, torch.einsum("ij,jk->ik", torch.from_numpy(a), torch.from_numpy(b)))
    same_as_torch(einsum("ii->i", seqlab.tensor(a[:3, :3])), torch.einsum("ii->i", torch.from_numpy(a[:3, :3])))
    assert not out.requires_grad


def test_result_is_not_a_view_of_the_input():
    x = seqlab.tensor(np.arange(9.0).reshape(3, 3))
    for eq in ("ij->ji", "ii->i", "ij->ij"):
        out = einsum(eq, x)
        out.data[...] = -1  # changing the result leaves the input alone, as torch.einsum's result
        np.testing.assert_array_equal(x.numpy(), np.arange(9.0).reshape(3, 3))


def test_no_grad_records_nothing():
    x = seqlab.tensor(np.ones((2, 3)), requires_grad=True)
    with seqlab.no_grad():
        out = einsum("ij->j", x)
    assert not out.requires_grad


def test_on_the_device_path(monkeypatch):
    """The device code path ('cuda' is tests/cupy_stand_in.py's CPU stand-in for CuPy): no NumPy-only call."""
    cupy_stand_in.install(monkeypatch)
    rng = np.random.default_rng(3)
    arrays = [rng.standard_normal((3, 3, 2)), rng.standard_normal((2, 4)), rng.standard_normal((5,))]
    cpu = [seqlab.tensor(a, requires_grad=True) for a in arrays]
    dev = [seqlab.tensor(backend.to_device(a, "cuda"), requires_grad=True) for a in arrays]
    eq = "iij,jk,l->ik"  # a diagonal, a contraction and a letter summed inside one operand
    out_cpu, out_dev = einsum(eq, *cpu), einsum(eq, *dev)
    assert out_dev.device == "cuda"
    np.testing.assert_allclose(backend.to_numpy(out_dev.data), out_cpu.numpy(), rtol=1e-12)
    g = rng.standard_normal(out_cpu.shape)
    out_cpu.backward(g)
    out_dev.backward(backend.to_device(g, "cuda"))
    for c, d in zip(cpu, dev):
        assert backend.device_of(d.grad) == "cuda"
        np.testing.assert_allclose(backend.to_numpy(d.grad), c.grad, rtol=1e-12)


# ---- errors: one ValueError that names the equation and the shapes ------------------------------------
ERRORS = [
    ("ij,jk->ik", [(2, 3), (4, 5)], "subscript j has size 4 in operand 1"),
    ("ij,jk->ik", [(2, 3, 1), (3, 5)], "operand 0 has 3 dimensions but its subscripts 'ij' name 2"),
    ("ijk->i", [(2, 3)], "operand 0 has 2 dimensions"),
    ("ij->i", [(2, 3), (3,)], "1 input term but 2 operands"),
    ("ij,jk->ik", [(2, 3)], "2 input terms but 1 operand"),
    ("i1->i", [(2, 3)], "invalid subscript '1'"),
    ("ij->ii", [(2, 2)], "output subscript i appears more than once"),
    ("ij->k", [(2, 3)], "output subscript k does not appear"),
    ("ii->i", [(2, 3)], "subscript i is repeated in operand 0 with different sizes 2 and 3"),
    ("i..j->i", [(2, 3, 4)], "not part of an ellipsis"),
    ("...i...->i", [(2, 3)], "more than one ellipsis"),
    ("i->i->i", [(2,)], "more than one '->'"),
    ("...i,...i->...", [(2, 3), (4, 3)], "a dimension under '...' has size 4 in operand 1"),
]


@pytest.mark.parametrize("equation,shapes,message", ERRORS, ids=[e[0] + " " + e[2][:20] for e in ERRORS])
def test_errors_name_the_equation_and_shapes(equation, shapes, message):
    operands = [seqlab.tensor(np.zeros(s)) for s in shapes]
    with pytest.raises(ValueError) as info:
        einsum(equation, *operands)
    text = str(info.value)
    assert message in text
    assert f"einsum('{equation}')" in text
    assert ", ".join(str(tuple(s)) for s in shapes) in text
    assert "\n" not in text


def test_bad_calls():
    with pytest.raises(ValueError, match="no operands"):
        einsum("i->i")
    with pytest.raises(ValueError, match="no operands"):
        einsum("i->i", [])
    with pytest.raises(TypeError, match="equation string first"):
        einsum(seqlab.tensor(np.ones(2)), "i->i")
