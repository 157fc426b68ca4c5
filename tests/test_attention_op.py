"""scaled_dot_product_attention (issue 2 §3): masks, causality, fully masked rows, the fused backward."""
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as TF
from helpers import check_op
from hypothesis import given, settings
from hypothesis import strategies as st

import seqlab
import seqlab.functional as F
from seqlab.autograd.ops import fused

FEW = settings(max_examples=15, deadline=None)


@FEW
@given(b=st.integers(1, 2), h=st.integers(1, 3), tq=st.integers(1, 5), tk=st.integers(1, 5), d=st.integers(1, 4),
       dv=st.integers(1, 4))
def test_sdpa_shapes(b, h, tq, tk, d, dv):
    check_op(F.scaled_dot_product_attention, TF.scaled_dot_product_attention,
             [(b, h, tq, d), (b, h, tk, d), (b, h, tk, dv)])


@pytest.mark.parametrize("shapes", [[(5, 3), (4, 3), (4, 2)],                        # no batch
                                    [(2, 1, 5, 3), (2, 4, 4, 3), (2, 4, 4, 2)],      # broadcast query heads
                                    [(2, 4, 5, 3), (1, 4, 3), (1, 4, 3)]])            # broadcast key/value batch
def test_sdpa_broadcasting(shapes):
    check_op(F.scaled_dot_product_attention, TF.scaled_dot_product_attention, shapes)


def test_sdpa_bool_mask_true_means_may_attend():
    mask = np.random.default_rng(0).random((1, 1, 4, 6)) > 0.4
    mask[..., 0] = True  # every row keeps one key (torch gives NaN for fully masked rows)
    check_op(lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m),
             lambda q, k, v, m: TF.scaled_dot_product_attention(q, k, v, attn_mask=m),
             [(2, 2, 4, 3), (2, 2, 6, 3), (2, 2, 6, 3), mask])


def test_sdpa_float_mask_is_added_and_gets_a_gradient():
    check_op(lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m),
             lambda q, k, v, m: TF.scaled_dot_product_attention(q, k, v, attn_mask=m),
             [(2, 2, 4, 3), (2, 2, 6, 3), (2, 2, 6, 3), (2, 1, 4, 6)])


def test_sdpa_float_mask_constant():
    bias = np.where(np.random.default_rng(1).random((4, 6)) > 0.5, -1e9, 0.0)
    bias[:, 0] = 0
    check_op(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, attn_mask=bias),
             lambda q, k, v: TF.scaled_dot_product_attention(q, k, v, attn_mask=torch.from_numpy(bias).to(q.dtype)),
             [(2, 4, 3), (2, 6, 3), (2, 6, 3)])


@pytest.mark.parametrize("tq, tk", [(5, 5), (3, 5)])
def test_sdpa_is_causal(tq, tk):
    check_op(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True),
             lambda q, k, v: TF.scaled_dot_product_attention(q, k, v, is_causal=True),
             [(2, 2, tq, 4), (2, 2, tk, 4), (2, 2, tk, 4)])


def test_sdpa_scale_and_dropout_p0():
    check_op(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, dropout_p=0.0, scale=0.3),
             lambda q, k, v: TF.scaled_dot_product_attention(q, k, v, dropout_p=0.0, scale=0.3),
             [(2, 3, 4), (2, 5, 4), (2, 5, 4)])


def test_fully_masked_row_gives_zeros_and_finite_grads():
    rng = np.random.default_rng(2)
    q, k, v = (seqlab.tensor(rng.standard_normal(s), requires_grad=True) for s in [(1, 3, 4), (1, 5, 4), (1, 5, 4)])
    mask = np.ones((3, 5), dtype=bool)
    mask[1] = False  # query 1 may attend to nothing
    out, w = F.attention(q, k, v, attn_mask=mask)
    out.backward(rng.standard_normal(out.shape))
    assert np.all(out.numpy()[0, 1] == 0) and np.all(w.numpy()[0, 1] == 0)
    for t in (q, k, v):
        assert np.all(np.isfinite(t.grad))
    assert np.all(q.grad[0, 1] == 0)
    # the other rows are unaffected: equal to torch on those rows
    qt, kt, vt = (torch.from_numpy(t.numpy()) for t in (q, k, v))
    ref = TF.scaled_dot_product_attention(qt, kt, vt, attn_mask=torch.from_numpy(mask))
    np.testing.assert_allclose(out.numpy()[0, [0, 2]], ref.numpy()[0, [0, 2]], rtol=1e-12)


def test_fully_masked_by_float_minus_inf_gives_zeros():
    bias = np.zeros((2, 2))
    bias[0] = -np.inf
    q, k, v = (seqlab.randn(2, 3, requires_grad=True, dtype=np.float64) for _ in range(3))
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=bias)
    out.sum().backward()
    assert np.all(out.numpy()[0] == 0) and all(np.all(np.isfinite(t.grad)) for t in (q, k, v))


def _attention_composed(q, k, v, bias):
    """softmax(q kᵀ/√d + bias) v from primitive ops only (no fused backward)."""
    s = q @ k.transpose(-1, -2) * (1.0 / math.sqrt(q.shape[-1])) + bias
    e = (s - s.amax(-1, keepdim=True).detach()).exp()
    return (e / e.sum(-1, keepdim=True)) @ v


@pytest.mark.parametrize("d", [3, 6])  # Tk = 5 > D: backward recomputes the weights; Tk <= D: it keeps them
def test_attention_fused_backward_equals_composed(d):
    rng = np.random.default_rng(3)
    arrays = [rng.standard_normal(s) for s in [(2, 2, 4, d), (2, 2, 5, d), (2, 2, 5, 6), (1, 2, 4, 5)]]
    g = rng.standard_normal((2, 2, 4, 6))
    a = [seqlab.tensor(x, requires_grad=True) for x in arrays]
    b = [seqlab.tensor(x, requires_grad=True) for x in arrays]
    out1 = F.scaled_dot_product_attention(*a[:3], attn_mask=a[3])
    assert isinstance(out1._ctx, fused.Attention)
    out2 = _attention_composed(*b)
    np.testing.assert_allclose(out1.numpy(), out2.numpy(), rtol=1e-12, atol=1e-14)
    out1.backward(g)
    out2.backward(g)
    for x, y in zip(a, b):
        np.testing.assert_allclose(x.grad, y.grad, rtol=1e-10, atol=1e-13)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_attention_gradients_come_back_in_the_heads_split_layout(dtype):
    """dq, dk, dv are written as (B, T, H, D) memory, as the forward's output is: multi-head attention's
    x.reshape(B, T, H, D).transpose(1, 2) then gives them back to the projection as views, not copies."""
    rng = np.random.default_rng(4)
    B, T, H, D = 2, 5, 3, 4
    qkv = rng.standard_normal((B, T, 3 * H * D)).astype(dtype)
    x = seqlab.tensor(qkv, requires_grad=True)
    q, k, v = (t.reshape(B, T, H, D).transpose(1, 2) for t in x.split(H * D, dim=-1))
    op = fused.Attention()
    g = rng.standard_normal((B, H, T, D)).astype(dtype)
    arrays = [t.numpy() for t in (q, k, v)]
    op.needs_input_grad = (True, True, True, False)
    op.forward(*arrays, scale=0.5)
    grads = op.backward(g)[:3]
    for got in grads:
        assert got.dtype == dtype and got.swapaxes(1, 2).flags.c_contiguous  # (B, T, H, D) in memory
        assert np.shares_memory(got.swapaxes(1, 2).reshape(B, T, H * D), got)  # the heads merge back as a view
    tq, tk, tv = (torch.tensor(a, requires_grad=True) for a in arrays)
    TF.scaled_dot_product_attention(tq, tk, tv, scale=0.5).backward(torch.from_numpy(g))
    tol = {"rtol": 1e-4, "atol": 1e-5} if dtype == np.float32 else {"rtol": 1e-10, "atol": 1e-12}
    for got, want in zip(grads, (tq, tk, tv)):
        np.testing.assert_allclose(got, want.grad.numpy(), **tol)


def test_leaves_fed_straight_into_attention_get_their_grads_in_c_order():
    """Attention's backward writes dq, dk, dv strided (the heads-split layout); leaves in C order still get
    a C-order .grad, as torch's layout contract gives, with torch's values."""
    rng = np.random.default_rng(6)
    arrays = [rng.standard_normal((2, 3, 5, 4)).astype(np.float32) for _ in range(3)]
    q, k, v = (seqlab.tensor(a, requires_grad=True) for a in arrays)
    F.scaled_dot_product_attention(q, k, v).sum().backward()
    tq, tk, tv = (torch.tensor(a, requires_grad=True) for a in arrays)
    TF.scaled_dot_product_attention(tq, tk, tv).sum().backward()
    for got, want in zip((q, k, v), (tq, tk, tv)):
        assert got.grad.flags.c_contiguous
        np.testing.assert_allclose(got.grad, want.grad.numpy(), rtol=1e-4, atol=1e-5)


def test_attention_returns_weights_that_sum_to_one():
    q, k, v = seqlab.randn(2, 4, 3), seqlab.randn(2, 6, 3), seqlab.randn(2, 6, 3)
    out, w = F.attention(q, k, v, is_causal=True)
    assert w.shape == (2, 4, 6)
    np.testing.assert_allclose(w.numpy().sum(-1), 1.0, rtol=1e-6)
    assert np.all(np.triu(w.numpy()[0], 1) == 0)
    with seqlab.no_grad():
        out2, w2 = F.attention(q, k, v, is_causal=True)
    np.testing.assert_allclose(w2.numpy(), w.numpy(), rtol=1e-6)
    np.testing.assert_allclose(out2.numpy(), out.numpy(), rtol=1e-6)


def test_attention_dropout_reproducible_and_scaled():
    q, k, v = seqlab.randn(1, 8, 4), seqlab.randn(1, 8, 4), seqlab.randn(1, 8, 4)
    seqlab.manual_seed(5)
    a = F.scaled_dot_product_attention(q, k, v, dropout_p=0.5).numpy()
    seqlab.manual_seed(5)
    b = F.scaled_dot_product_attention(q, k, v, dropout_p=0.5).numpy()
    c = F.scaled_dot_product_attention(q, k, v).numpy()
    np.testing.assert_array_equal(a, b)
    assert not np.allclose(a, c)


def test_attention_dropout_backward_matches_composed():
    """With a fixed keep mask, the fused backward equals (softmax ⊙ keep/(1−p)) v composed."""
    rng = np.random.default_rng(4)
    arrays = [rng.standard_normal(s) for s in [(2, 4, 3), (2, 5, 3), (2, 5, 3)]]
    a = [seqlab.tensor(x, requires_grad=True) for x in arrays]
    b = [seqlab.tensor(x, requires_grad=True) for x in arrays]
    seqlab.manual_seed(9)
    out1 = F.scaled_dot_product_attention(*a, dropout_p=0.3)
    keep = out1._ctx.drop  # keep / (1 − p)
    s = b[0] @ b[1].transpose(-1, -2) * (1 / math.sqrt(3))
    e = (s - s.amax(-1, keepdim=True).detach()).exp()
    out2 = (e / e.sum(-1, keepdim=True) * keep) @ b[2]
    np.testing.assert_allclose(out1.numpy(), out2.numpy(), rtol=1e-12)
    g = rng.standard_normal(out1.shape)
    out1.backward(g)
    out2.backward(g)
    for x, y in zip(a, b):
        np.testing.assert_allclose(x.grad, y.grad, rtol=1e-10, atol=1e-13)


def test_sdpa_mask_and_is_causal_together_is_an_error():
    q = seqlab.randn(2, 3)
    with pytest.raises(ValueError, match="is_causal"):
        F.scaled_dot_product_attention(q, q, q, attn_mask=np.ones((2, 2), bool), is_causal=True)


def test_sdpa_shape_errors_name_the_shapes():
    with pytest.raises(ValueError, match=r"\(2, 3\).*\(4, 5\)"):
        F.scaled_dot_product_attention(seqlab.randn(2, 3), seqlab.randn(4, 5), seqlab.randn(4, 5))


@pytest.mark.parametrize("d", [4, 16])
@pytest.mark.parametrize("dropout_p", [0.0, 0.2])
def test_attention_keeps_weights_for_backward_only_when_short(dropout_p, d):
    """Tk = 16 > D = 4: backward computes the (Tq, Tk) weights again from q, k and the kept row max and
    sum, so the op holds no float array of that shape. Tk = 16 <= D = 16: the weights are no larger than
    q, the op keeps them and hands the caller a read-only view. Either way the gradients are those of the
    composed formula."""
    rng = np.random.default_rng(6)
    q, k, v = (seqlab.tensor(rng.standard_normal((2, 3, 16, d)), requires_grad=True) for _ in range(3))
    out, fn = fused.Attention.apply_with_fn(q, k, v, None, block=np.triu(np.ones((16, 16), bool), 1), scale=0.5,
                                            keep_mask=(rng.random((2, 3, 16, 16)) >= dropout_p) if dropout_p else None,
                                            p=dropout_p)
    weights, fn.weights = fn.weights, None  # as F.attention does
    held = [a for a in fn.saved if isinstance(a, np.ndarray)] + [a for a in vars(fn).values() if isinstance(a, np.ndarray)]
    held_weights = [a for a in held if a.shape[-2:] == (16, 16) and a.dtype.kind == "f"
                    and not any(a is t.data for t in (q, k, v))]
    if d < 16:
        assert not held_weights
    else:
        assert len(held_weights) == 1 and np.shares_memory(held_weights[0], weights)
        assert not weights.flags.writeable
        with pytest.raises(ValueError, match="read-only"):
            weights[0, 0, 0, 0] = 1.0
    drop = fn.drop if dropout_p else 1.0
    g = rng.standard_normal(out.shape)
    out.backward(g)
    b = [seqlab.tensor(t.numpy(), requires_grad=True) for t in (q, k, v)]
    s = b[0] @ b[1].transpose(-1, -2) * 0.5 + np.where(np.triu(np.ones((16, 16), bool), 1), -np.inf, 0.0)
    e = (s - s.amax(-1, keepdim=True).detach()).exp()
    w = e / e.sum(-1, keepdim=True)
    np.testing.assert_allclose(w.numpy(), weights, rtol=1e-12, atol=1e-15)
    (w * drop @ b[2]).backward(g)
    for x, y in zip((q, k, v), b):
        np.testing.assert_allclose(x.grad, y.grad, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("t,d", [(5, 4), (3, 6)])  # Tk > D: backward recomputes the weights; Tk <= D: keeps them
def test_attention_qkv_equals_splitting_first_bitwise(dtype, t, d):
    """F.attention_qkv on a packed (B, T, 3E) tensor: the same output, weights and gradients, bitwise, as
    splitting it into q, k, v first (with dropout, a float mask that gets its own gradient, and causality);
    the gradient comes back as one C-order (B, T, 3E) array."""
    rng = np.random.default_rng(8)
    B, H = 2, 3
    packed = rng.standard_normal((B, t, 3 * H * d)).astype(dtype)
    bias = rng.standard_normal((1, H, t, t)).astype(dtype)
    g = rng.standard_normal((B, H, t, d)).astype(dtype)
    results = []
    for split_first in (False, True):
        x, m = seqlab.tensor(packed, requires_grad=True), seqlab.tensor(bias, requires_grad=True)
        seqlab.manual_seed(11)
        if split_first:
            q, k, v = (p.reshape(B, t, H, d).transpose(1, 2) for p in x.split(H * d, dim=-1))
            out, w = F.attention(q, k, v, attn_mask=m, dropout_p=0.25, scale=0.7)
        else:
            out, w = F.attention_qkv(x, H, attn_mask=m, dropout_p=0.25, scale=0.7)
            assert isinstance(out._ctx, fused.PackedAttention)
        out.backward(g)
        results.append((out.numpy(), w.numpy(), x.grad, m.grad))
    (out1, w1, gx1, gm1), (out2, w2, gx2, gm2) = results
    for a, b in [(out1, out2), (w1, w2), (gx1, gx2), (gm1, gm2)]:
        np.testing.assert_array_equal(a, b)
    assert gx1.flags.c_contiguous and gx1.shape == packed.shape and gx1.dtype == dtype


@pytest.mark.parametrize("weights_grad", [False, True])  # the fused op, or the composed ops (weights' gradient)
@pytest.mark.parametrize("t,d,causal", [(64, 16, True), (5, 4, False)])  # the compiled kernels' path, NumPy's
def test_attention_qkv_merge_heads_is_the_transpose_and_reshape_bitwise(weights_grad, t, d, causal):
    """merge_heads=True: the output (B, T, E) is out.transpose(1, 2).reshape(B, T, E) of the plain call, bitwise,
    and so are the gradients of qkv (first and second order: a gradient taken with create_graph=True,
    differentiated again)."""
    rng = np.random.default_rng(12)
    B, H = 2, 2
    packed = rng.standard_normal((B, t, 3 * H * d)).astype(np.float32)
    g = rng.standard_normal((B, t, H * d)).astype(np.float32)
    results = []
    for merge in (False, True):
        x = seqlab.tensor(packed, requires_grad=True)
        out, w = F.attention_qkv(x, H, is_causal=causal, weights_grad=weights_grad, merge_heads=merge)
        if merge:
            assert out.shape == (B, t, H * d)
            if not weights_grad:
                assert isinstance(out._ctx, fused.PackedAttention)
        else:
            out = out.transpose(1, 2).reshape(B, t, H * d)
        (gx,) = seqlab.autograd.grad((out * seqlab.tensor(g)).sum(), [x], create_graph=True)
        (gx * gx).sum().backward()
        x1 = seqlab.tensor(packed, requires_grad=True)  # and a plain backward
        out1, _ = F.attention_qkv(x1, H, is_causal=causal, weights_grad=weights_grad, merge_heads=merge)
        out1.backward(seqlab.tensor(g if merge else g.reshape(B, t, H, d).transpose(0, 2, 1, 3)))
        results.append((out.numpy(), w.numpy(), gx.numpy(), x.grad, x1.grad))
    for a, b in zip(*results):
        np.testing.assert_array_equal(a, b)


def test_attention_qkv_matches_torch_with_a_causal_mask():
    rng = np.random.default_rng(9)
    B, T, H, D = 2, 6, 2, 4
    packed = rng.standard_normal((B, T, 3 * H * D)).astype(np.float32)
    x = seqlab.tensor(packed, requires_grad=True)
    out, _ = F.attention_qkv(x, H, is_causal=True)
    out.sum().backward()
    tx = torch.tensor(packed, requires_grad=True)
    tq, tk, tv = (p.reshape(B, T, H, D).transpose(1, 2) for p in tx.split(H * D, dim=-1))
    want = TF.scaled_dot_product_attention(tq, tk, tv, is_causal=True)
    want.sum().backward()
    np.testing.assert_allclose(out.numpy(), want.detach().numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(x.grad, tx.grad.numpy(), rtol=1e-4, atol=1e-5)


def test_attention_qkv_without_a_gradient_for_qkv_still_gives_the_masks():
    rng = np.random.default_rng(10)
    packed = rng.standard_normal((1, 4, 6)).astype(np.float32)
    m = seqlab.tensor(rng.standard_normal((1, 1, 4, 4)).astype(np.float32), requires_grad=True)
    out, _ = F.attention_qkv(seqlab.tensor(packed), 1, attn_mask=m)
    out.sum().backward()
    q, k, v = (seqlab.tensor(a) for a in np.split(packed, 3, axis=-1))
    m2 = seqlab.tensor(m.numpy(), requires_grad=True)
    F.attention(q.unsqueeze(1), k.unsqueeze(1), v.unsqueeze(1), attn_mask=m2)[0].sum().backward()
    np.testing.assert_array_equal(m.grad, m2.grad)


@pytest.mark.parametrize("shape,heads", [((2, 4, 12), 5), ((2, 4, 13), 1), ((4, 12), 2)])
def test_attention_qkv_refuses_a_tensor_it_cannot_split(shape, heads):
    with pytest.raises(ValueError, match=r"\(B, T, 3·E\)"):
        F.attention_qkv(seqlab.zeros(*shape), heads)
