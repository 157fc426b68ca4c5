"""More losses and distances (seqlab.functional_losses, re-exported by seqlab.functional): every reduction
against torch and central differences, torch's edge cases (BCE at 0 and 1, KL's batchmean, clamped
variances), the deprecated size_average/reduce, errors, and the device path."""
import warnings

import numpy as np
import pytest
import torch
import torch.nn.functional as TF
from helpers import check_op, const

import seqlab
import seqlab.functional as F
from seqlab import backend

RNG = np.random.default_rng(0)
REDUCTIONS = ["mean", "sum", "none"]


def signs(*shape, seed=1):
    return np.where(np.random.default_rng(seed).random(shape) < 0.5, -1.0, 1.0)


def probs(*shape, seed=2):
    return np.random.default_rng(seed).uniform(0.05, 0.95, shape)


def both(name, **kwargs):
    """The seqlab and torch functions of one name, with the same keyword arguments."""
    return (lambda *a: getattr(F, name)(*a, **kwargs)), (lambda *a: getattr(TF, name)(*a, **kwargs))


# ---- regression ------------------------------------------------------------------------------------
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("name, kwargs", [
    ("l1_loss", {}), ("smooth_l1_loss", {}), ("smooth_l1_loss", {"beta": 0.3}), ("smooth_l1_loss", {"beta": 0.0}),
    ("huber_loss", {}), ("huber_loss", {"delta": 0.4}),
])
def test_regression_losses(name, kwargs, reduction):
    x, y = RNG.standard_normal((2, 3, 4)), RNG.standard_normal((2, 3, 4))    # both differentiable, as in torch
    check_op(*both(name, reduction=reduction, **kwargs), [x, y])


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("name", ["l1_loss", "huber_loss"])
def test_weighted_regression_losses(name, reduction):
    """l1's weighted 'mean' divides by Σ weight, huber's by the count: both as torch."""
    w = const(np.abs(RNG.standard_normal((3, 4))))
    check_op(lambda x, y, w: getattr(F, name)(x, y, reduction=reduction, weight=w),
             lambda x, y, w: getattr(TF, name)(x, y, reduction=reduction, weight=w), [(3, 4), (3, 4), w])


def test_regression_gradients_at_the_kinks_are_torchs():
    d = np.array([0.0, 1.0, -1.0, 0.3, 2.0])                                 # |d| = 0 and |d| = beta = delta
    for name in ("l1_loss", "smooth_l1_loss", "huber_loss"):
        check_op(*both(name, reduction="sum"), [d, const(np.zeros(5))], gradcheck_=False)


def test_a_broadcast_target_warns_as_torch():
    x = seqlab.tensor(RNG.standard_normal((4, 1)))
    for name in ("l1_loss", "smooth_l1_loss", "huber_loss"):
        with pytest.warns(UserWarning, match=r"target size \(4,\) that is different to the input size \(4, 1\)"):
            loss = getattr(F, name)(x, np.zeros(4))
        assert loss.shape == ()


# ---- probabilities -------------------------------------------------------------------------------------
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("weight", [None, (4,), (3, 4)])
def test_binary_cross_entropy(reduction, weight):
    w = None if weight is None else const(np.abs(RNG.standard_normal(weight)))
    check_op(lambda x, y, *w: F.binary_cross_entropy(x, y, *w, reduction=reduction),
             lambda x, y, *w: TF.binary_cross_entropy(x, y, *w, reduction=reduction),
             [probs(3, 4), probs(3, 4, seed=3)] + ([w] if w is not None else []))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_binary_cross_entropy_at_zero_and_one_is_torchs(dtype):
    """Logs clamped at −100, gradient (x − y) / max(x(1 − x), 1e-12): finite where a float32 sigmoid saturates."""
    x_np = np.array([0.0, 1.0, 0.0, 1.0, 0.3], dtype=dtype)
    y_np = np.array([0.0, 1.0, 1.0, 0.0, 0.5], dtype=dtype)
    x, y = seqlab.tensor(x_np, requires_grad=True), seqlab.tensor(y_np, requires_grad=True)
    xt, yt = torch.tensor(x_np, requires_grad=True), torch.tensor(y_np, requires_grad=True)
    loss = F.binary_cross_entropy(x, y, reduction="none")
    loss_t = TF.binary_cross_entropy(xt, yt, reduction="none")
    np.testing.assert_allclose(loss.numpy(), loss_t.detach().numpy(), rtol=1e-6)
    loss.sum().backward()
    loss_t.sum().backward()
    np.testing.assert_allclose(x.grad, xt.grad.numpy(), rtol=1e-6)         # ±1e12 where the label is wrong
    np.testing.assert_allclose(y.grad, yt.grad.numpy(), rtol=1e-6)         # ±inf at 0 and 1, as torch
    assert x.grad.dtype == dtype


def test_sigmoid_then_bce_stays_finite_through_saturation():
    """A float32 logit of 40 makes σ = 1 exactly: the loss is 100 and the gradients finite, as torch's."""
    z_np = np.array([40.0, -3.0, 17.0], dtype=np.float32)
    y_np = np.array([0.0, 0.0, 0.0], dtype=np.float32)
    z, zt = seqlab.tensor(z_np, requires_grad=True), torch.tensor(z_np, requires_grad=True)
    loss, loss_t = F.binary_cross_entropy(z.sigmoid(), y_np), TF.binary_cross_entropy(zt.sigmoid(), torch.tensor(y_np))
    loss.backward()
    loss_t.backward()
    assert np.isclose(loss.item(), loss_t.item(), rtol=1e-6) and loss.item() > 100 / 3
    assert np.all(np.isfinite(z.grad))
    np.testing.assert_allclose(z.grad, zt.grad.numpy(), rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("reduction", REDUCTIONS + ["batchmean"])
@pytest.mark.parametrize("log_target", [False, True])
def test_kl_div(reduction, log_target):
    q = np.random.default_rng(4).dirichlet(np.ones(5), size=3)
    target = np.log(q) if log_target else q
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")                                      # 'mean' warns, in both
        check_op(*both("kl_div", reduction=reduction, log_target=log_target), [(3, 5), target])


def test_kl_div_zero_targets_batchmean_and_its_warning():
    x = np.log(np.random.default_rng(5).dirichlet(np.ones(4), size=2))
    q = np.array([[0.5, 0.5, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0]])              # 0 · log 0 = 0, as torch's xlogy
    check_op(*both("kl_div", reduction="batchmean"), [x, const(q)])
    with pytest.warns(UserWarning, match="'batchmean' divides only by the batch size"):
        F.kl_div(seqlab.tensor(x), q)
    scalar = F.kl_div(seqlab.tensor(np.array(-1.0)), np.array(0.3), reduction="batchmean")  # 0-d: the sum
    assert np.isclose(scalar.item(), TF.kl_div(torch.tensor(-1.0, dtype=torch.float64),
                                               torch.tensor(0.3, dtype=torch.float64), reduction="batchmean").item())


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("log_input, full", [(True, False), (False, False), (True, True), (False, True)])
def test_poisson_nll_loss(log_input, full, reduction):
    counts = const(np.random.default_rng(6).poisson(2.0, (4, 3)).astype(float))  # 0s, 1s and more: every branch
    x = RNG.standard_normal((4, 3)) if log_input else probs(4, 3) * 4
    check_op(*both("poisson_nll_loss", log_input=log_input, full=full, reduction=reduction), [x, counts])


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("var_shape", [(4, 3), (4, 1), (4,)], ids=["each", "per-row", "one-less-dim"])
@pytest.mark.parametrize("full", [False, True])
def test_gaussian_nll_loss(var_shape, full, reduction):
    var = probs(*var_shape) + 0.1                                            # differentiable too
    check_op(*both("gaussian_nll_loss", full=full, reduction=reduction), [(4, 3), (4, 3), var])


def test_gaussian_nll_loss_clamps_the_value_only_and_takes_a_number():
    var = np.array([1e-9, 0.5, 2.0])                                         # the first is below eps
    check_op(*both("gaussian_nll_loss", eps=1e-3), [(3,), (3,), var], gradcheck_=False)
    check_op(lambda x, y: F.gaussian_nll_loss(x, y, 0.7), lambda x, y: TF.gaussian_nll_loss(x, y, 0.7),
             [(2, 3), (2, 3)])


# ---- margins, embeddings, distances -------------------------------------------------------------------
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_margin_ranking_loss(reduction):
    check_op(*both("margin_ranking_loss", margin=0.3, reduction=reduction), [(6,), (6,), const(signs(6))])
    check_op(*both("margin_ranking_loss", reduction=reduction), [(3, 1), (1, 4), const(signs(3, 4))])


def test_margin_ranking_loss_passes_the_gradient_at_zero_as_torch():
    """max(0, ·) at exactly 0 (equal scores, margin 0) passes the gradient, as torch's clamp_min."""
    x = np.zeros(3)
    check_op(*both("margin_ranking_loss", reduction="sum"), [x, x.copy(), const(signs(3))], gradcheck_=False)


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_hinge_embedding_loss(reduction):
    target = np.array([1.0, -1.0, 1.0, -1.0, 0.5, -1.0])                     # 0.5: neither, both terms (torch)
    check_op(*both("hinge_embedding_loss", margin=1.5, reduction=reduction), [np.abs(X6), const(target)])
    check_op(*both("hinge_embedding_loss", reduction=reduction), [(6,), np.array([1, -1, 1, 1, -1, -1])])


X6 = RNG.standard_normal(6)


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_cosine_embedding_loss(reduction):
    check_op(*both("cosine_embedding_loss", margin=0.2, reduction=reduction),
             [(5, 3), (5, 3), np.array([1, -1, 1, -1, -1])])
    check_op(*both("cosine_embedding_loss", reduction=reduction), [(4,), (4,), const(np.array(-1.0))])


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("p, swap", [(2, False), (2, True), (1, False), (3, True), (float("inf"), False)])
def test_triplet_margin_loss(p, swap, reduction):
    check_op(*both("triplet_margin_loss", margin=1.5, p=p, swap=swap, reduction=reduction),
             [(5, 3), (5, 3), (5, 3)])


def test_triplet_margin_loss_broadcasts_and_takes_vectors():
    check_op(*both("triplet_margin_loss", reduction="none"), [(4, 3), (1, 3), (4, 3)])
    check_op(*both("triplet_margin_loss", margin=4.0, reduction="none"), [(3,), (3,), (3,)])


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_soft_and_multilabel_soft_margin_losses(reduction):
    check_op(*both("soft_margin_loss", reduction=reduction), [(3, 4), const(signs(3, 4))])
    labels = const((RNG.random((3, 4)) < 0.5).astype(float))
    check_op(*both("multilabel_soft_margin_loss", reduction=reduction), [(3, 4), labels])
    w = const(np.abs(RNG.standard_normal(4)))
    check_op(lambda x, y, w: F.multilabel_soft_margin_loss(x, y, w, reduction=reduction),
             lambda x, y, w: TF.multilabel_soft_margin_loss(x, y, w, reduction=reduction), [(3, 4), labels, w])


def test_soft_margin_loss_is_stable_for_large_margins():
    x = seqlab.tensor(np.array([-200.0, 200.0], dtype=np.float32), requires_grad=True)
    loss = F.soft_margin_loss(x, np.array([1.0, -1.0], dtype=np.float32), reduction="sum")
    loss.backward()
    assert np.isclose(loss.item(), 400.0) and np.allclose(x.grad, [-1.0, 1.0])


@pytest.mark.parametrize("shapes, kwargs", [
    ([(5, 3), (5, 3)], {}), ([(5, 3), (3,)], {"keepdim": True}), ([(2, 4, 3), (4, 3)], {"p": 1.0}),
    ([(5, 3), (5, 3)], {"p": 3.0, "eps": 0.0}), ([(5, 3), (5, 3)], {"p": float("inf")}), ([(4,), (4,)], {}),
    ([(5, 3), (5, 3)], {"p": 0.5}),
])
def test_pairwise_distance(shapes, kwargs):
    check_op(*both("pairwise_distance", **kwargs), shapes)


def test_pairwise_distance_of_scalars_and_equal_rows():
    assert F.pairwise_distance(seqlab.tensor(1.0), seqlab.tensor(2.0)).shape == ()
    x = np.ones((2, 3))
    check_op(*both("pairwise_distance", eps=0.0), [x, x.copy()], gradcheck_=False)  # the zero vector: gradient 0


# ---- the deprecated size_average / reduce -------------------------------------------------------------
@pytest.mark.parametrize("size_average, reduce", [(False, None), (None, False), (True, True), (False, True)])
def test_legacy_size_average_and_reduce(size_average, reduce):
    x, y = RNG.standard_normal((3, 4)), RNG.standard_normal((3, 4))
    with pytest.warns(UserWarning, match="size_average and reduce args will be deprecated"):
        ours = F.l1_loss(seqlab.tensor(x), y, size_average, reduce, "sum")
    with pytest.warns(UserWarning):
        theirs = TF.l1_loss(torch.tensor(x), torch.tensor(y), size_average, reduce, "sum")
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12)


# ---- errors ---------------------------------------------------------------------------------------------
A, B = seqlab.tensor(RNG.standard_normal((3, 4))), seqlab.tensor(RNG.standard_normal((3, 4)))
P = seqlab.tensor(probs(3, 4))


@pytest.mark.parametrize("call", [
    lambda r: F.l1_loss(A, B, reduction=r), lambda r: F.smooth_l1_loss(A, B, reduction=r),
    lambda r: F.huber_loss(A, B, reduction=r), lambda r: F.binary_cross_entropy(P, P, reduction=r),
    lambda r: F.kl_div(A, P, reduction=r), lambda r: F.poisson_nll_loss(A, P, reduction=r),
    lambda r: F.gaussian_nll_loss(A, B, P, reduction=r), lambda r: F.margin_ranking_loss(A, B, P, reduction=r),
    lambda r: F.hinge_embedding_loss(A, P, reduction=r), lambda r: F.cosine_embedding_loss(A, B, P[0], reduction=r),
    lambda r: F.triplet_margin_loss(A, B, A, reduction=r), lambda r: F.soft_margin_loss(A, P, reduction=r),
    lambda r: F.multilabel_soft_margin_loss(A, P, reduction=r),
])
def test_a_bad_reduction_is_named(call):
    with pytest.raises(ValueError, match=r"reduction must be .*'sum'.*, got 'avg'"):
        call("avg")


@pytest.mark.parametrize("call, match", [
    (lambda: F.smooth_l1_loss(A, B, beta=-1.0), "does not support negative values for beta, got -1.0"),
    (lambda: F.huber_loss(A, B, delta=0.0), "does not support non-positive values for delta, got 0.0"),
    (lambda: F.l1_loss(A, B, weight=np.ones(4)), r"Weights and input must have the same size, got weight \(4,\)"),
    (lambda: F.binary_cross_entropy(A, P), "all elements of input should be between 0 and 1"),
    (lambda: F.binary_cross_entropy(P, A), "all elements of target should be between 0 and 1"),
    (lambda: F.binary_cross_entropy(P, P[0]), r"target size \(4,\) that is different to the input size \(3, 4\)"),
    (lambda: F.binary_cross_entropy(P, P, weight=np.ones(3)), r"weight of shape \(3,\) does not broadcast"),
    (lambda: F.gaussian_nll_loss(A, B, -P), "var has negative entry/entries"),
    (lambda: F.gaussian_nll_loss(A, B, P[:2, :2]), r"var is of incorrect size: \(2, 2\)"),
    (lambda: F.margin_ranking_loss(A, B, P[0]), r"same number of dimensions, got input1: \(3, 4\)"),
    (lambda: F.cosine_embedding_loss(A, B, P[0, 0]), "0D target tensor expects 1D input tensors"),
    (lambda: F.cosine_embedding_loss(A[0], B[0], P[0]), "1D target tensor expects 2D input tensors"),
    (lambda: F.cosine_embedding_loss(A, B, P), "multi-target not supported"),
    (lambda: F.cosine_embedding_loss(A, B[:, :2], P[:, 0]), r"input1 \(3, 4\) and input2 \(3, 2\)"),
    (lambda: F.triplet_margin_loss(A, B, A, margin=0.0), "margin must be greater than 0, got 0.0"),
    (lambda: F.triplet_margin_loss(A, B, A[0]), "anchor 2D, positive 2D, and negative 1D inputs"),
    (lambda: F.soft_margin_loss(A[0], P), r"target of shape \(3, 4\) does not broadcast to the input's shape \(4,\)"),
])
def test_errors_name_the_values(call, match):
    with pytest.raises(ValueError, match=match):
        call()


# ---- the device path: CuPy's stand-in (and CuPy itself where a GPU is seen) ---------------------------

@pytest.mark.parametrize("fn", [
    lambda x, t: F.l1_loss(x, t), lambda x, t: F.smooth_l1_loss(x, t, beta=0.5),
    lambda x, t: F.binary_cross_entropy(x.sigmoid(), t.sigmoid(), weight=np.arange(4.0, dtype=np.float32)),
    lambda x, t: F.kl_div(x.log_softmax(-1), t.softmax(-1), reduction="batchmean"),
    lambda x, t: F.soft_margin_loss(x, np.sign(np.arange(4.0, dtype=np.float32) - 1.5)),
    lambda x, t: F.multilabel_soft_margin_loss(x, (np.arange(4) % 2).astype(np.float32)),
    lambda x, t: F.gaussian_nll_loss(x, t, t * t + 0.1),
    lambda x, t: F.pairwise_distance(x, t).sum(),
], ids=["l1", "smooth_l1", "bce", "kl_div", "soft_margin", "multilabel", "gaussian_nll",
        "pairwise_distance"])
def test_on_the_device_as_on_the_host(cuda, fn):
    """Targets and weights given as host arrays, as a user would: they move to the input's device."""
    x = RNG.standard_normal((3, 4)).astype(np.float32)
    t = RNG.standard_normal((3, 4)).astype(np.float32)
    results = []
    for device in ("cpu", "cuda"):
        xs = seqlab.Tensor(backend.to_device(x, device), requires_grad=True)
        loss = fn(xs, seqlab.Tensor(backend.to_device(t, device)))
        assert loss.device == device
        loss.backward()
        results.append((backend.to_numpy(loss.data), backend.to_numpy(xs.grad)))
    for a, b in zip(*results):
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6)


def test_clamped_losses_on_the_device(cuda):  # Clamp.backward's mask once started on the host
    x = seqlab.Tensor(backend.to_device(RNG.standard_normal(4).astype(np.float32), "cuda"), requires_grad=True)
    y = x * 0.5
    loss = F.margin_ranking_loss(x, y, np.ones(4, dtype=np.float32), margin=0.5)
    loss = loss + F.cosine_embedding_loss(x.reshape(2, 2), y.reshape(2, 2), np.array([1, -1]))
    loss.backward()
    assert backend.device_of(x.grad) == "cuda"
