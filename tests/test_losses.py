"""Losses (issue 2 §3): cross_entropy in every mode, nll, mse, BCE with logits."""
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


def _targets(shape, c, ignore_every=0, seed=0):
    t = np.random.default_rng(seed).integers(0, c, shape)
    if ignore_every:
        t.reshape(-1)[::ignore_every] = -100
    return t


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("label_smoothing", [0.0, 0.1])
@pytest.mark.parametrize("ignore_every", [0, 3])
def test_cross_entropy_2d(reduction, label_smoothing, ignore_every):
    tgt = _targets((7,), 5, ignore_every)
    kw = dict(reduction=reduction, label_smoothing=label_smoothing)
    check_op(lambda x, t: F.cross_entropy(x, t, **kw), lambda x, t: TF.cross_entropy(x, t, **kw), [(7, 5), tgt])


@FEW
@given(n=st.integers(1, 3), c=st.integers(2, 5), d=st.lists(st.integers(1, 3), min_size=1, max_size=2),
       reduction=st.sampled_from(["mean", "sum", "none"]), smoothing=st.sampled_from([0.0, 0.2]))
def test_cross_entropy_nd_layout(n, c, d, reduction, smoothing):
    """Logits (N, C, d1, ...) with targets (N, d1, ...), as torch (e.g. (B, V, T) for a language model)."""
    tgt = _targets((n,) + tuple(d), c, ignore_every=4, seed=n + c)
    kw = dict(reduction=reduction, label_smoothing=smoothing)
    if reduction == "mean" and np.all(tgt == -100):
        tgt.reshape(-1)[0] = 0
    check_op(lambda x, t: F.cross_entropy(x, t, **kw), lambda x, t: TF.cross_entropy(x, t, **kw),
             [(n, c) + tuple(d), tgt])


def test_cross_entropy_custom_ignore_index_and_1d_logits():
    tgt = np.array([0, 2, 2, 1])
    check_op(lambda x, t: F.cross_entropy(x, t, ignore_index=2), lambda x, t: TF.cross_entropy(x, t, ignore_index=2),
             [(4, 3), tgt])
    for red in ("mean", "none"):
        check_op(lambda x, t: F.cross_entropy(x, t, reduction=red),
                 lambda x, t: TF.cross_entropy(x, t, reduction=red), [(6,), np.array(4)])


def test_cross_entropy_all_ignored_is_nan_like_torch():
    x = np.random.default_rng(0).standard_normal((3, 4))
    t = np.full(3, -100)
    ours = F.cross_entropy(seqlab.tensor(x), t).item()
    theirs = TF.cross_entropy(torch.from_numpy(x), torch.from_numpy(t)).item()
    assert np.isnan(ours) and np.isnan(theirs)
    assert F.cross_entropy(seqlab.tensor(x), t, reduction="sum").item() == 0.0


def test_cross_entropy_stable_for_huge_logits_float32():
    x = np.array([[1e4, -1e4, 0.0], [-1e4, 1e4, 3.0]], dtype=np.float32)
    check_op(lambda x, t: F.cross_entropy(x, t), lambda x, t: TF.cross_entropy(x, t), [x, np.array([1, 1])],
             dtypes=("float32",), gradcheck_=False)


def test_cross_entropy_fused_backward_equals_composed():
    """The fused softmax-cross-entropy gradient (p − q) against −Σ q·log_softmax built from primitives."""
    rng = np.random.default_rng(1)
    x_np = rng.standard_normal((6, 5))
    tgt = np.array([0, 4, -100, 2, 2, 1])
    eps = 0.1
    x1, x2 = seqlab.tensor(x_np, requires_grad=True), seqlab.tensor(x_np, requires_grad=True)
    loss1 = F.cross_entropy(x1, tgt, label_smoothing=eps)
    assert isinstance(loss1._ctx, fused.CrossEntropy)
    valid = tgt != -100
    q = np.where(valid[:, None], (1 - eps) * np.eye(5)[np.where(valid, tgt, 0)] + eps / 5, 0.0)
    s = x2 - x2.amax(-1, keepdim=True).detach()
    logp = s - s.exp().sum(-1, keepdim=True).log()
    loss2 = -(logp * q).sum() / valid.sum()
    np.testing.assert_allclose(loss1.item(), loss2.item(), rtol=1e-12)
    loss1.backward()
    loss2.backward()
    np.testing.assert_allclose(x1.grad, x2.grad, rtol=1e-10, atol=1e-14)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_nll_loss(reduction):
    tgt = np.array([1, 0, -100, 3])
    check_op(lambda x, t: F.nll_loss(F.log_softmax(x, -1), t, reduction=reduction),
             lambda x, t: TF.nll_loss(TF.log_softmax(x, -1), t, reduction=reduction), [(4, 4), tgt])


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_mse_loss(reduction):
    check_op(lambda a, b: F.mse_loss(a, b, reduction=reduction), lambda a, b: TF.mse_loss(a, b, reduction=reduction),
             [(3, 4), (3, 4)])


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("pos_weight", [False, True])
def test_bce_with_logits(reduction, pos_weight):
    rng = np.random.default_rng(2)
    y = rng.random((4, 3))
    kw = dict(reduction=reduction)
    if pos_weight:
        pw = np.array([0.5, 2.0, 3.0])
        check_op(lambda x, y: F.binary_cross_entropy_with_logits(x, y, pos_weight=pw, **kw),
                 lambda x, y: TF.binary_cross_entropy_with_logits(x, y, pos_weight=torch.from_numpy(pw).to(x.dtype),
                                                                  **kw),
                 [(4, 3), y])
    else:
        check_op(lambda x, y: F.binary_cross_entropy_with_logits(x, y, **kw),
                 lambda x, y: TF.binary_cross_entropy_with_logits(x, y, **kw), [(4, 3), y])


def test_bce_with_logits_stable_and_exact_at_zero():
    x = np.array([-1e4, -800.0, 0.0, 800.0, 1e4])
    y = np.array([1.0, 0.0, 1.0, 0.0, 1.0])
    check_op(lambda x, y: F.binary_cross_entropy_with_logits(x, y, reduction="sum"),
             lambda x, y: TF.binary_cross_entropy_with_logits(x, y, reduction="sum"), [x, y], gradcheck_=False)


def test_nll_loss_nd_layout():
    tgt = np.array([[1, 0, -100], [3, 3, 2]])
    for red in ("mean", "sum", "none"):
        check_op(lambda x, t: F.nll_loss(F.log_softmax(x, 1), t, reduction=red),
                 lambda x, t: TF.nll_loss(TF.log_softmax(x, 1), t, reduction=red), [(2, 4, 3), tgt])


@pytest.mark.parametrize("lp_shape, tgt_shape", [((4, 3), (2,)), ((4, 3), (4, 1)), ((2, 3, 4), (2, 3)),
                                                   ((2, 3, 4), (2,)), ((3,), (2,))])
def test_nll_loss_refuses_a_target_of_the_wrong_shape_like_torch(lp_shape, tgt_shape):
    """The (B, T, C) vs (B, C, T) slip: torch refuses, where a gather on the flattened rows would read a prefix."""
    lp = np.log(np.full(lp_shape, 1 / 3, np.float32))
    tgt = np.zeros(tgt_shape, np.int64)
    with pytest.raises(ValueError, match=r"nll_loss: log_probs of shape .* need a target of shape"):
        F.nll_loss(seqlab.tensor(lp), tgt)
    with pytest.raises((ValueError, RuntimeError)):
        TF.nll_loss(torch.from_numpy(lp), torch.from_numpy(tgt))
    with pytest.raises(ValueError, match="need a target of shape"):
        seqlab.nn.NLLLoss()(seqlab.tensor(lp), seqlab.tensor(tgt))


@pytest.mark.parametrize("tgt", [np.int64(1), np.array([1])])
def test_nll_loss_on_one_unbatched_row_is_a_scalar_like_torch(tgt):
    lp = np.log(np.array([0.2, 0.5, 0.3], np.float32))
    ours = F.nll_loss(seqlab.tensor(lp), np.asarray(tgt), reduction="none")
    theirs = TF.nll_loss(torch.from_numpy(lp), torch.as_tensor(tgt), reduction="none")
    assert tuple(ours.shape) == tuple(theirs.shape) == ()
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6)


def test_nll_loss_rejects_out_of_range_targets_like_torch():
    """A target below 0 or >= C that is not ignore_index raises IndexError naming it and C, where torch raises
    too (-1 used to pick class C-1 by negative indexing); ignore_index itself, even -1, stays allowed."""
    lp = np.log(np.random.default_rng(3).dirichlet(np.ones(3), size=2))  # (2, 3) log-probabilities
    for bad in (-1, 3):
        tgt = np.array([0, bad])
        with pytest.raises(IndexError, match=f"target class {bad} is out of range for 3 classes"):
            F.nll_loss(seqlab.tensor(lp), tgt)
        with pytest.raises(IndexError):
            TF.nll_loss(torch.from_numpy(lp), torch.from_numpy(tgt))
        with pytest.raises(IndexError, match=f"target class {bad} is out of range for 3 classes"):
            F.nll_loss(seqlab.tensor(lp[:, :, None]), tgt[:, None], reduction="none")  # (N, C, d) layout
    tgt = np.array([2, -1])
    for red in ("mean", "sum", "none"):
        ours = F.nll_loss(seqlab.tensor(lp), tgt, ignore_index=-1, reduction=red).numpy()
        theirs = TF.nll_loss(torch.from_numpy(lp), torch.from_numpy(tgt), ignore_index=-1, reduction=red).numpy()
        np.testing.assert_allclose(ours, theirs, rtol=1e-12)
    assert F.nll_loss(seqlab.tensor(lp), tgt, ignore_index=-1).item() == pytest.approx(-lp[0, 2])


def test_mse_loss_warns_when_the_shapes_broadcast():
    """(4, 1) against (4,) broadcasts to (4, 4), a silent mistake: warned, as torch does, and the value
    stays torch's."""
    a, b = np.arange(4, dtype=np.float32).reshape(4, 1), np.array([0.5, 1.0, -1.0, 2.0], np.float32)
    with pytest.warns(UserWarning, match=r"target shape \(4,\) differs from the input's \(4, 1\)"):
        got = F.mse_loss(seqlab.tensor(a), b)
    with pytest.warns(UserWarning):
        want = TF.mse_loss(torch.from_numpy(a), torch.from_numpy(b))
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)


# ---- class weights, class-probability targets, and the loss modules (torch.nn's names) -----------------

@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("label_smoothing", [0.0, 0.15])
@pytest.mark.parametrize("shape", [(7, 5), (3, 5, 2)])
def test_cross_entropy_with_class_weights(reduction, label_smoothing, shape):
    """torch's weighted cross-entropy: each class rescaled; 'mean' divides by the targets' summed weights."""
    tgt = _targets((shape[0],) + shape[2:], shape[1], ignore_every=3, seed=len(shape))
    w = np.array([0.5, 2.0, 1.0, 0.0, 3.0])
    kw = dict(reduction=reduction, label_smoothing=label_smoothing)
    check_op(lambda x, t, weight: F.cross_entropy(x, t, weight, **kw),
             lambda x, t, weight: TF.cross_entropy(x, t, weight, **kw), [shape, tgt], {"weight": w})
    check_op(lambda x, t, weight: F.nll_loss(F.log_softmax(x, 1), t, weight, reduction=reduction),
             lambda x, t, weight: TF.nll_loss(TF.log_softmax(x, 1), t, weight, reduction=reduction),
             [shape, tgt], {"weight": w})


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("label_smoothing", [0.0, 0.2])
@pytest.mark.parametrize("weighted", [False, True])
def test_cross_entropy_with_class_probability_targets(reduction, label_smoothing, weighted):
    """Float targets of the logits' shape are class probabilities (soft labels), as in torch, for (N, C),
    (N, C, d) and unbatched (C,) logits."""
    rng = np.random.default_rng(3)
    for shape in [(6, 4), (2, 4, 3), (4,)]:
        probs = rng.dirichlet(np.ones(4), size=int(np.prod(shape)) // 4).reshape(-1, 4)
        probs = np.moveaxis(probs.reshape((shape[0],) + shape[2:] + (4,)), -1, 1) if len(shape) > 1 else probs[0]
        kw = {"target": probs, **({"weight": np.array([1.0, 0.5, 2.0, 1.5])} if weighted else {})}
        opts = dict(reduction=reduction, label_smoothing=label_smoothing)
        check_op(lambda x, **k: F.cross_entropy(x, **k, **opts), lambda x, **k: TF.cross_entropy(x, **k, **opts),
                 [shape], kw)


def test_loss_modules_match_torch_nn():
    """nn.CrossEntropyLoss, NLLLoss, MSELoss and BCEWithLogitsLoss: torch's arguments, values, gradients and
    state-dict keys (the class weight is a buffer named as torch names it)."""
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((6, 4)), np.array([0, 3, 1, -100, 2, 2])
    w = np.array([1.0, 0.5, 2.0, 1.5])
    pairs = [
        (seqlab.nn.CrossEntropyLoss(weight=w, label_smoothing=0.1),
         torch.nn.CrossEntropyLoss(weight=torch.from_numpy(w), label_smoothing=0.1), y),
        (seqlab.nn.CrossEntropyLoss(reduction="sum", ignore_index=2),
         torch.nn.CrossEntropyLoss(reduction="sum", ignore_index=2), np.where(y < 0, 1, y)),
        (seqlab.nn.NLLLoss(weight=w), torch.nn.NLLLoss(weight=torch.from_numpy(w)), y),
        (seqlab.nn.MSELoss(reduction="none"), torch.nn.MSELoss(reduction="none"), rng.standard_normal((6, 4))),
        (seqlab.nn.BCEWithLogitsLoss(pos_weight=w), torch.nn.BCEWithLogitsLoss(pos_weight=torch.from_numpy(w)),
         rng.random((6, 4))),
    ]
    for ours, theirs, target in pairs:
        xs, xt = seqlab.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
        a, b = ours(xs, target), theirs(xt, torch.from_numpy(target))
        np.testing.assert_allclose(a.numpy(), b.detach().numpy(), rtol=1e-12, atol=1e-12)
        a.sum().backward()
        b.sum().backward()
        np.testing.assert_allclose(xs.grad, xt.grad.numpy(), rtol=1e-12, atol=1e-12)
        assert sorted(ours.state_dict()) == sorted(theirs.state_dict()), type(ours).__name__
    assert repr(seqlab.nn.CrossEntropyLoss(reduction="sum")) == "CrossEntropyLoss(reduction='sum')"
    with pytest.raises(ValueError, match="reduction must be"):
        seqlab.nn.MSELoss(reduction="avg")
    with pytest.raises(ValueError, match=r"one entry per class, shape \(4,\)"):
        seqlab.nn.CrossEntropyLoss(weight=[1.0, 2.0])(seqlab.tensor(x), y)
    with pytest.raises(TypeError, match="class indices .* or class probabilities"):
        F.cross_entropy(seqlab.tensor(x), y.astype(np.float64))        # float (N,) is neither


def test_nn_functional_is_seqlab_functional():
    import seqlab.nn.functional as NF

    assert NF is F and seqlab.nn.functional is F
