"""Functional layers (issue 2 §3): linear, layer_norm, rms_norm, embedding, dropout."""
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


# ---- linear ----------------------------------------------------------------------------------
@pytest.mark.parametrize("x_shape", [(5,), (3, 5), (2, 3, 5), (2, 1, 2, 5)])
@pytest.mark.parametrize("bias", [True, False])
def test_linear(x_shape, bias):
    shapes = [x_shape, (4, 5)] + ([(4,)] if bias else [])
    check_op(F.linear, TF.linear, shapes)


# ---- layer norm ------------------------------------------------------------------------------
@FEW
@given(lead=st.lists(st.integers(1, 3), min_size=0, max_size=2), norm=st.lists(st.integers(2, 5), min_size=1,
                                                                               max_size=2))
def test_layer_norm(lead, norm):
    ns = tuple(norm)
    check_op(lambda x, w, b: F.layer_norm(x, ns, w, b, 1e-5), lambda x, w, b: TF.layer_norm(x, ns, w, b, 1e-5),
             [tuple(lead) + ns, ns, ns])


@pytest.mark.parametrize("affine", ["none", "weight", "both"])
def test_layer_norm_without_affine(affine):
    shapes = [(2, 3, 6)] + ([(6,)] if affine != "none" else []) + ([(6,)] if affine == "both" else [])
    if affine == "none":
        check_op(lambda x: F.layer_norm(x, 6), lambda x: TF.layer_norm(x, (6,)), shapes)
    elif affine == "weight":
        check_op(lambda x, w: F.layer_norm(x, (6,), w), lambda x, w: TF.layer_norm(x, (6,), w), shapes)
    else:
        check_op(lambda x, w, b: F.layer_norm(x, [6], w, b, eps=1e-3),
                 lambda x, w, b: TF.layer_norm(x, [6], w, b, eps=1e-3), shapes)


def _layer_norm_composed(x, w, b, eps):
    """(x − μ)/√(σ² + eps)·w + b from primitive ops only (no fused backward)."""
    mu = x.mean(-1, keepdim=True)
    var = ((x - mu) * (x - mu)).mean(-1, keepdim=True)
    return (x - mu) / (var + eps).sqrt() * w + b


def test_layer_norm_fused_backward_equals_composed():
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal((4, 3, 8)), rng.standard_normal(8), rng.standard_normal(8)]
    g = rng.standard_normal((4, 3, 8))
    fused_in = [seqlab.tensor(a, requires_grad=True) for a in arrays]
    plain_in = [seqlab.tensor(a, requires_grad=True) for a in arrays]
    y1 = F.layer_norm(fused_in[0], 8, fused_in[1], fused_in[2], 1e-5)
    y2 = _layer_norm_composed(*plain_in, 1e-5)
    assert isinstance(y1._ctx, fused.LayerNorm)
    np.testing.assert_allclose(y1.numpy(), y2.numpy(), rtol=1e-12, atol=1e-13)
    y1.backward(g)
    y2.backward(g)
    for a, b in zip(fused_in, plain_in):
        np.testing.assert_allclose(a.grad, b.grad, rtol=1e-10, atol=1e-12)


def test_layer_norm_differs_from_the_chapters_std_plus_eps():
    """The chapter divides by (std + eps); torch (and seqlab) by √(var + eps): close, not equal."""
    x = seqlab.tensor(np.random.default_rng(1).standard_normal((2, 16)) * 0.01)
    ours = F.layer_norm(x, 16, eps=1e-5).numpy()
    xn = x.numpy()
    chapter = (xn - xn.mean(-1, keepdims=True)) / (xn.std(-1, keepdims=True) + 1e-5)
    assert not np.allclose(ours, chapter, rtol=1e-3)
    np.testing.assert_allclose(ours, chapter, rtol=0.2)


def test_rms_norm():
    check_op(lambda x, w: F.rms_norm(x, (5,), w, 1e-6), lambda x, w: TF.rms_norm(x, (5,), w, 1e-6), [(2, 3, 5), (5,)])


def test_rms_norm_takes_torchs_arguments():
    """torch's signature, rms_norm(input, normalized_shape, weight=None, eps=None): several trailing dims,
    no weight, and eps None (the dtype's machine epsilon, which shows on a small input)."""
    check_op(lambda x, w: F.rms_norm(x, (3, 5), w), lambda x, w: TF.rms_norm(x, (3, 5), w), [(2, 3, 5), (3, 5)])
    x = np.random.default_rng(3).standard_normal((2, 4)) * 1e-8
    for dtype in (np.float64, np.float32):
        got = F.rms_norm(seqlab.tensor(x.astype(dtype)), 4).numpy()
        want = TF.rms_norm(torch.from_numpy(x.astype(dtype)), (4,)).numpy()
        np.testing.assert_allclose(got, want, rtol=1e-5 if dtype == np.float32 else 1e-12)


@pytest.mark.filterwarnings("ignore:Mismatch dtype between input and weight")
def test_rms_norm_returns_the_inputs_dtype_as_torch():
    x, w = np.random.default_rng(0).standard_normal((2, 4)), np.ones(4)
    got = F.rms_norm(seqlab.tensor(x.astype(np.float32)), (4,), seqlab.tensor(w))
    want = TF.rms_norm(torch.from_numpy(x.astype(np.float32)), (4,), torch.from_numpy(w))
    assert got.dtype == np.float32 and want.dtype == torch.float32
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)


@pytest.mark.parametrize("args, error, match", [
    (((4,),), ValueError, r"input has shape \(2, 3, 5\) but rms_norm normalizes over trailing \(4,\)"),
    (((5,), np.ones(5)), TypeError, r"weight must be a Tensor or None, got ndarray"),
    (((5,), "w"), TypeError, r"torch's order"),
])
def test_rms_norm_errors(args, error, match):
    with pytest.raises(error, match=match):
        F.rms_norm(seqlab.tensor(np.ones((2, 3, 5))), *args)
    with pytest.raises(ValueError, match=r"weight has shape \(4,\), expected normalized_shape \(5,\)"):
        F.rms_norm(seqlab.tensor(np.ones((2, 3, 5))), 5, seqlab.ones(4))


# ---- embedding ---------------------------------------------------------------------------------
@pytest.mark.parametrize("ids_shape", [(6,), (2, 5), (2, 2, 3)])
@pytest.mark.parametrize("padding_idx", [None, 0, 3, -1])
def test_embedding(ids_shape, padding_idx):
    ids = np.random.default_rng(2).integers(0, 7, ids_shape)
    ids.reshape(-1)[:3] = [3, 3, 6]  # repeats and the padding rows are used
    # the padding row gets no gradient by design, so central differences only check the others
    check_op(lambda i, w: F.embedding(i, w, padding_idx), lambda i, w: TF.embedding(i, w, padding_idx),
             [ids, (7, 4)], gradcheck_=padding_idx is None)


def test_embedding_backward_fast_path_equals_add_at():
    """The sort-based row sum of Embedding.backward against the plain np.add.at scatter."""
    rng = np.random.default_rng(3)
    for n_rows, n_ids in [(50, 400), (8000, 2048), (5, 1)]:
        ids = rng.integers(0, n_rows, n_ids)
        g = rng.standard_normal((n_ids, 6)).astype(np.float32)
        plain = np.zeros((n_rows, 6), np.float32)
        np.add.at(plain, ids, g)
        np.testing.assert_allclose(fused.embedding_backward(ids, g, n_rows), plain, rtol=1e-5, atol=1e-5)


def test_embedding_rows_are_shared_not_copied_in_backward():
    w = seqlab.randn(5, 3, requires_grad=True)
    ids = np.array([[1, 1], [1, 4]])
    F.embedding(ids, w).sum().backward()
    np.testing.assert_array_equal(w.grad[:, 0], [0, 3, 0, 0, 1])


# ---- dropout ------------------------------------------------------------------------------------
def test_dropout_is_reproducible_under_manual_seed():
    x = seqlab.ones(64, 64)
    seqlab.manual_seed(11)
    a = F.dropout(x, 0.3).numpy()
    seqlab.manual_seed(11)
    b = F.dropout(x, 0.3).numpy()
    c = F.dropout(x, 0.3).numpy()
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(b, c)


@pytest.mark.parametrize("p", [0.1, 0.5, 0.9])
def test_dropout_inverted_scaling(p):
    seqlab.manual_seed(0)
    x = seqlab.ones(200, 200, requires_grad=True)
    y = F.dropout(x, p)
    vals = np.unique(y.numpy())
    np.testing.assert_allclose(vals, [0.0, 1.0 / (1.0 - p)], rtol=1e-6)
    assert abs((y.numpy() == 0).mean() - p) < 0.02
    assert abs(y.numpy().mean() - 1.0) < 0.05  # expectation preserved
    y.backward(np.full((200, 200), 2.0, np.float32))
    np.testing.assert_allclose(x.grad, y.numpy() * 2.0)  # the same mask and scale flow back


def test_dropout_eval_and_p0_are_identity():
    x = seqlab.randn(5, 5, requires_grad=True)
    assert F.dropout(x, 0.5, training=False) is x
    assert F.dropout(x, 0.0) is x
    assert np.all(F.dropout(x, 1.0).numpy() == 0)
    layer = seqlab.nn.Dropout(0.5)
    layer.eval()
    np.testing.assert_array_equal(layer(x).numpy(), x.numpy())
    layer.train()
    assert np.any(layer(x).numpy() != x.numpy())


def test_dropout_rejects_bad_p():
    with pytest.raises(ValueError, match="1.5"):
        F.dropout(seqlab.ones(2), 1.5)
    with pytest.raises(ValueError, match="-0.1"):
        seqlab.nn.Dropout(-0.1)


def test_dropout_explicit_generator():
    x = seqlab.ones(10, 10)
    a = F.dropout(x, 0.5, generator=np.random.default_rng(3)).numpy()
    b = F.dropout(x, 0.5, generator=np.random.default_rng(3)).numpy()
    np.testing.assert_array_equal(a, b)
