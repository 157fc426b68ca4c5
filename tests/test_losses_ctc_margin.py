"""F.ctc_loss / nn.CTCLoss and the margin losses F.multi_margin_loss, F.multilabel_margin_loss,
F.triplet_margin_with_distance_loss (seqlab.functional_losses_more, seqlab.nn.loss_ctc_margin) against torch:
values and gradients in float64 and float32, every reduction, torch's edge cases (T = 1, empty targets,
repeated labels, impossible alignments, blank anywhere, unbatched input), signatures, errors, the device path."""
import inspect
import warnings

import numpy as np
import pytest
import torch
import torch.nn.functional as TF
from helpers import check_op, const

import seqlab
import seqlab.functional as F
from seqlab import backend, nn

REDUCTIONS = ["mean", "sum", "none"]
TOL = {np.float64: dict(rtol=1e-10, atol=1e-12), np.float32: dict(rtol=2e-5, atol=2e-6)}


def _log_probs(t, n, c, seed=0, dtype=np.float64):
    z = np.random.default_rng(seed).standard_normal((t, n, c))
    return torch.tensor(z).log_softmax(-1).numpy().astype(dtype)


def _tt(v):
    """A lengths or targets argument for torch: lists and tuples stay, arrays become tensors."""
    return torch.tensor(np.asarray(v)) if isinstance(v, np.ndarray) else v


def _close(a, b, dtype=np.float64):
    a = a.numpy() if isinstance(a, seqlab.Tensor) else np.asarray(a)
    b = b.detach().numpy() if isinstance(b, torch.Tensor) else np.asarray(b)
    assert a.shape == b.shape and a.dtype == b.dtype, (a.shape, b.shape, a.dtype, b.dtype)
    assert np.array_equal(np.isnan(a), np.isnan(b)) and np.array_equal(np.isinf(a), np.isinf(b))
    ok = np.isfinite(b)
    np.testing.assert_allclose(a[ok], b[ok], **TOL[np.dtype(dtype).type])


def ctc_both(lp, targets, il, tl, seed=1, **kwargs):
    """The CTC loss of seqlab and of torch on the same log-probabilities, and the gradients of Σ w·loss with
    respect to the log-probabilities (w random): values, infs and NaNs compared."""
    a = seqlab.tensor(lp, requires_grad=True)
    b = torch.tensor(lp, requires_grad=True)
    la = F.ctc_loss(a, targets, il, tl, **kwargs)
    lb = TF.ctc_loss(b, _tt(targets), _tt(il), _tt(tl), **kwargs)
    _close(la, lb, lp.dtype)
    w = np.random.default_rng(seed).uniform(0.5, 1.5, lb.shape).astype(lp.dtype)  # > 0: no inf − inf
    (la * seqlab.tensor(w)).sum().backward()
    (lb * torch.tensor(w)).sum().backward()
    _close(a.grad, b.grad, lp.dtype)
    return la, a.grad


# ---- CTC: values and gradients against torch's ------------------------------------------------------
CASES = {  # (T, N, C), padded targets, input_lengths, target_lengths, blank
    "basic": ((5, 3, 4), [[1, 2, 3], [1, 3, 0], [3, 0, 0]], [5, 4, 2], [3, 2, 1], 0),
    "T=1": ((1, 3, 4), [[1], [2], [3]], [1, 1, 1], [1, 0, 1], 0),
    "empty targets": ((4, 3, 5), [[2, 0], [0, 0], [4, 1]], [4, 3, 4], [1, 0, 2], 0),
    "repeated labels": ((7, 3, 4), [[1, 1, 2], [2, 2, 2], [3, 3, 0]], [7, 6, 3], [3, 3, 2], 0),
    "input length 0": ((4, 3, 4), [[1, 2], [0, 0], [3, 0]], [4, 0, 0], [2, 0, 1], 0),
    "blank last": ((6, 2, 5), [[0, 1, 1], [2, 3, 0]], [6, 5], [3, 2], 4),
    "blank inside": ((6, 2, 5), [[0, 1, 1], [4, 3, 0]], [6, 5], [3, 2], 2),
    "longer": ((30, 4, 6), [[1, 2, 3, 4, 5], [5, 5, 1, 0, 0], [2, 4, 2, 4, 0], [0, 0, 0, 0, 0]],
               [30, 20, 11, 3], [5, 3, 4, 0], 0),
}


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("case", list(CASES))
def test_ctc_loss_with_padded_targets(case, reduction, dtype):
    shape, tg, il, tl, blank = CASES[case]
    ctc_both(_log_probs(*shape, dtype=dtype), np.array(tg), np.array(il), np.array(tl), blank=blank,
             reduction=reduction)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("case", ["basic", "repeated labels", "empty targets", "longer"])
def test_ctc_loss_with_concatenated_targets(case, reduction):
    shape, tg, il, tl, blank = CASES[case]
    flat = np.array([v for row, n in zip(tg, tl) for v in row[:n]], dtype=np.int64)
    la, _ = ctc_both(_log_probs(*shape), flat, np.array(il), np.array(tl), reduction=reduction)
    padded = F.ctc_loss(seqlab.tensor(_log_probs(*shape)), np.array(tg), il, tl, reduction=reduction)
    np.testing.assert_allclose(la.numpy(), padded.numpy(), rtol=1e-12)


@pytest.mark.parametrize("case", ["basic", "repeated labels", "blank inside"])
def test_ctc_loss_through_log_softmax_by_central_differences(case):
    """Through log_softmax torch's gradient (exp(lp) − posterior) is the logits' exact one: central differences
    in float64, and torch's in float64 and float32."""
    shape, tg, il, tl, blank = CASES[case]
    check_op(lambda z, t: F.ctc_loss(z.log_softmax(-1), t, il, tl, blank=blank, reduction="sum"),
             lambda z, t: TF.ctc_loss(z.log_softmax(-1), t, il, tl, blank=blank, reduction="sum"),
             [shape, np.array(tg)], max_elements=20, atol32=2e-5)


@pytest.mark.parametrize("target, blank", [([1, 2], 0), ([1, 1], 0), ([2], 0), ([], 0), ([0, 0, 1], 2)])
def test_ctc_loss_is_the_sum_over_every_alignment(target, blank):
    """The α recursion against its definition: −log Σ over the C^T frame labellings that collapse (merge
    repeats, drop blanks) to the target of Π_t p_t(π_t)."""
    t_max, c = 5, 3
    lp = _log_probs(t_max, 1, c, seed=4)[:, 0]
    total = 0.0
    for path in np.ndindex(*(c,) * t_max):
        merged = [k for i, k in enumerate(path) if i == 0 or k != path[i - 1]]
        if [k for k in merged if k != blank] == target:
            total += np.exp(lp[np.arange(t_max), path].sum())
    loss = F.ctc_loss(seqlab.tensor(lp), np.array(target, dtype=np.int64), [t_max], [len(target)], blank=blank,
                      reduction="sum")
    assert np.isclose(loss.item(), -np.log(total), rtol=1e-12)


def test_ctc_gradient_is_exp_log_probs_minus_the_posterior():
    """torch's gradient w.r.t. log_probs: exp(lp) − Σ γ; so each valid frame's gradient sums to 0 over the
    classes, a class the target lacks gets exp(lp), and frames past the input length get 0."""
    shape, tg, il, tl, _ = CASES["basic"]
    lp = _log_probs(*shape)
    a = seqlab.tensor(lp, requires_grad=True)
    F.ctc_loss(a, np.array(tg), il, tl, reduction="sum").backward()
    g = a.grad
    for n, length in enumerate(il):
        np.testing.assert_allclose(g[:length, n].sum(-1), 0.0, atol=1e-12)
        assert not g[length:, n].any()
    np.testing.assert_allclose(g[:, 2, 1], np.exp(lp[:, 2, 1]) * (np.arange(5) < 2))  # sample 2 is "3" alone


@pytest.mark.parametrize("zero_infinity", [False, True])
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_ctc_impossible_alignments(zero_infinity, reduction):
    """Too few frames for a target (a repeat needs a blank between): loss inf and NaN gradients at its frames,
    as torch's; with zero_infinity the loss and its gradient are 0, the others unchanged."""
    tg = np.array([[1, 2, 3], [1, 1, 0], [2, 0, 0], [3, 3, 3]])
    la, g = ctc_both(_log_probs(5, 4, 4), tg, np.array([5, 2, 2, 4]), np.array([3, 2, 1, 3]),
                     reduction=reduction, zero_infinity=zero_infinity)
    if zero_infinity:
        assert np.isfinite(la.numpy()).all() and not g[:, [1, 3]].any()
    else:
        assert np.isinf(la.numpy()).any() and np.isnan(g[:2, 1]).all() and not g[2:, 1].any()


def test_ctc_minus_infinity_log_probs_give_torchs_nans():
    lp = _log_probs(5, 3, 4)
    lp[0, 0, 0] = lp[4, 0, 0] = lp[1, 0, 3] = lp[2, 1, 1] = -np.inf
    ctc_both(lp, np.array(CASES["basic"][1]), np.array([4, 4, 2]), np.array([3, 2, 1]), reduction="none")


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("targets, lengths", [
    (np.array([1, 2, 2]), (torch.tensor(5), torch.tensor(3))),                # concatenated, 0-d lengths
    (np.array([[1, 2, 2, 3]]), (torch.tensor([5]), torch.tensor([3]))),       # padded (1, S)
    (np.array([1, 2, 2]), ([5], [3])),
    (np.array([3]), ((1,), (1,))),
])
def test_ctc_loss_unbatched(targets, lengths, reduction):
    """log_probs (T, C): one sequence; 'none' gives a 0-d loss."""
    il, tl = lengths
    lp = _log_probs(int(il[0]) if isinstance(il, tuple) else 5, 1, 4)[:, 0]
    ours_il, ours_tl = (il.numpy(), tl.numpy()) if isinstance(il, torch.Tensor) else (il, tl)
    a, b = seqlab.tensor(lp, requires_grad=True), torch.tensor(lp, requires_grad=True)
    la = F.ctc_loss(a, targets, ours_il, ours_tl, reduction=reduction)
    lb = TF.ctc_loss(b, torch.tensor(targets), il, tl, reduction=reduction)
    _close(la, lb)
    la.backward()
    lb.backward()
    _close(a.grad, b.grad)


def test_ctc_lengths_as_tensors_lists_tuples_and_arrays():
    shape, tg, il, tl, _ = CASES["basic"]
    lp = seqlab.tensor(_log_probs(*shape))
    expected = TF.ctc_loss(torch.tensor(lp.numpy()), torch.tensor(tg), il, tl).item()
    for lengths in [(il, tl), (tuple(il), tuple(tl)), (np.array(il), np.array(tl)),
                    (seqlab.tensor(il), seqlab.tensor(tl)), (torch.tensor(il), torch.tensor(tl)),
                    (np.array(il, dtype=np.int32), np.array(tl, dtype=np.int16)), (np.array([il]), np.array([tl])),
                    ([np.int64(v) for v in il], [torch.tensor(v) for v in tl])]:
        for targets in (np.array(tg), torch.tensor(tg), seqlab.tensor(tg), np.array(tg, dtype=np.float32)):
            assert np.isclose(F.ctc_loss(lp, targets, *lengths).item(), expected, rtol=1e-12)


def test_ctc_mean_divides_by_target_lengths_clamped_to_one():
    shape, tg, il, _, _ = CASES["basic"]
    lp = seqlab.tensor(_log_probs(*shape))
    tl = [3, 0, 1]
    none = F.ctc_loss(lp, np.array(tg), il, tl, reduction="none").numpy()
    mean = F.ctc_loss(lp, np.array(tg), il, tl).item()
    assert np.isclose(mean, (none / np.array([3, 1, 1])).mean(), rtol=1e-12)


def test_ctc_target_equal_to_the_blank_keeps_the_exact_gradient():
    """torch's docs rule a blank label in a target out, but take one: the loss is torch's; the gradient is
    the exact one (central differences), where torch's last frame is not (a deliberate difference)."""
    lp, tg = _log_probs(5, 1, 4), np.array([[1, 0, 0]])
    la = F.ctc_loss(seqlab.tensor(lp), tg, [5], [3], reduction="sum")
    assert np.isclose(la.item(), TF.ctc_loss(torch.tensor(lp), torch.tensor(tg), [5], [3], reduction="sum").item())
    check_op(lambda z: F.ctc_loss(z.log_softmax(-1), tg, [5], [3], reduction="sum"), None, [(5, 1, 4)])


def test_ctc_loss_module_is_torchs():
    shape, tg, il, tl, _ = CASES["repeated labels"]
    lp = _log_probs(*shape)
    for kwargs in [{}, {"blank": 3, "reduction": "sum"}, {"reduction": "none", "zero_infinity": True}]:
        ours, theirs = nn.CTCLoss(**kwargs), torch.nn.CTCLoss(**kwargs)
        tg_ = np.array(tg) if not kwargs.get("blank") else np.array(tg) - 1 * (np.array(tg) == 3)
        a = ours(seqlab.tensor(lp), tg_, torch.tensor(il), torch.tensor(tl))
        b = theirs(torch.tensor(lp), torch.tensor(tg_), torch.tensor(il), torch.tensor(tl))
        _close(a, b)
        assert ours.state_dict() == {} and (ours.blank, ours.reduction, ours.zero_infinity) == \
            (theirs.blank, theirs.reduction, theirs.zero_infinity)
    assert repr(nn.CTCLoss()) == "CTCLoss()"
    assert repr(nn.CTCLoss(blank=2, zero_infinity=True)) == "CTCLoss(blank=2, zero_infinity=True)"


def test_ctc_loss_gives_no_second_derivative_as_torch():
    lp = seqlab.tensor(_log_probs(3, 1, 3), requires_grad=True)
    loss = F.ctc_loss(lp, np.array([[1]]), [3], [1])
    with pytest.raises(Exception, match="CTC"):
        seqlab.autograd.grad(loss, lp, create_graph=True)


# ---- CTC: errors, each of the type torch raises --------------------------------------------------------
LP = _log_probs(5, 3, 4)
TG = np.array(CASES["basic"][1])
IL, TL = [5, 4, 2], [3, 2, 1]


@pytest.mark.parametrize("args, kwargs, error", [
    ((LP, TG, [6, 4, 2], TL), {}, RuntimeError),                              # input length > T
    ((LP, TG, [5, -1, 2], TL), {}, RuntimeError),
    ((LP, TG, IL, [3, -2, 1]), {}, RuntimeError),
    ((LP, TG, IL, [4, 2, 1]), {}, RuntimeError),                              # targets (N, 3), length 4
    ((LP, TG, IL, [3, 2]), {}, RuntimeError),                                 # lengths of another batch
    ((LP, TG, [5, 4], TL), {}, RuntimeError),
    ((LP, TG[:2], IL, TL), {}, RuntimeError),
    ((LP, TG[None], IL, TL), {}, RuntimeError),
    ((LP, np.array(3), IL, [1, 0, 0]), {}, RuntimeError),
    ((LP, np.array([1, 2, 2, 1, 1]), IL, TL), {}, RuntimeError),             # concatenated, too short
    ((LP, TG, np.array([5.0, 4, 2]), np.array(TL)), {}, RuntimeError),        # float lengths
    ((LP, TG, np.array(IL), np.array([3.0, 2, 1])), {}, RuntimeError),
    ((LP, TG, np.array([True, True, True]), np.array(TL)), {}, RuntimeError),
    ((LP, TG, IL, TL), {"blank": 4}, RuntimeError),
    ((LP, TG, IL, TL), {"blank": -1}, RuntimeError),
    ((LP[None], TG, IL, TL), {}, RuntimeError),
    ((LP[:0], TG, [0, 0, 0], TL), {}, RuntimeError),                          # empty log_probs
    ((LP, TG, IL, TL), {"reduction": "batchmean"}, ValueError),
    ((LP, TG, IL, TL), {"reduction": None}, ValueError),
    ((LP, TG, np.array(IL), TL), {}, TypeError),                              # a tensor and a list
    ((LP, TG, [5, 4, 2.0], TL), {}, TypeError),
    ((LP, TG, [[5, 4, 2]], TL), {}, TypeError),
    ((LP, TG, IL, TL), {"blank": True}, TypeError),
    ((LP, TG, IL, TL), {"blank": 1.0}, TypeError),
    ((LP, TG, IL, TL), {"zero_infinity": 1}, TypeError),
    ((np.zeros((5, 3, 4), dtype=np.int64), TG, IL, TL), {}, NotImplementedError),
])
def test_ctc_errors_are_of_torchs_type(args, kwargs, error):
    with pytest.raises(error):
        TF.ctc_loss(*[torch.tensor(a) if isinstance(a, np.ndarray) else a for a in args], **kwargs)
    with pytest.raises(error) as info:
        F.ctc_loss(*[seqlab.tensor(a) if isinstance(a, np.ndarray) and a is args[0] else a for a in args], **kwargs)
    assert "\n" not in str(info.value)


def test_ctc_target_labels_out_of_range_are_refused():
    """torch reads past its tensor there (no error, an undefined value): an IndexError names the label.
    Labels past a target's length (padding) are never read, so any value may pad."""
    with pytest.raises(IndexError, match="target label 5 is out of bounds for 4 classes"):
        F.ctc_loss(seqlab.tensor(LP), np.array([[1, 2, 5], [1, 3, 0], [3, 0, 0]]), IL, TL)
    padded_with_minus_one = np.array([[1, 2, 3], [1, 3, -1], [3, -1, -1]])
    assert np.isclose(F.ctc_loss(seqlab.tensor(LP), padded_with_minus_one, IL, TL).item(),
                      F.ctc_loss(seqlab.tensor(LP), TG, IL, TL).item())


def _empty_batch(fn, shape, target, reduction):
    """An empty batch's 'sum' is 0 and its 'mean' NaN, as any empty mean (torch's kernels return uninitialised
    memory there: a deliberate difference)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # NumPy's mean of nothing
        loss = fn(seqlab.zeros(*shape, requires_grad=True), target, reduction=reduction)
    assert loss.item() == 0.0 if reduction == "sum" else np.isnan(loss.item())


# ---- multi_margin_loss ----------------------------------------------------------------------------------
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("p, margin, weighted", [(1, 1.0, False), (2, 1.0, False), (1, 0.4, True), (2, 2.5, True)])
def test_multi_margin_loss(p, margin, weighted, reduction):
    w = const(np.random.default_rng(3).uniform(0.2, 2.0, 5)) if weighted else None
    y = np.array([0, 4, 2, 2])

    def fn(lib):
        return lambda x, *w: lib.multi_margin_loss(x, y if lib is F else torch.tensor(y), p, margin, *(w or [None]),
                                                   reduction=reduction)
    check_op(fn(F), fn(TF), [(4, 5)] + ([w] if w is not None else []))


@pytest.mark.parametrize("shape, target", [((5,), np.array(3)), ((5,), np.array([3])), ((1, 5), np.array(1)),
                                           ((), np.array(0)), ((0, 5), np.zeros(0, dtype=np.int64))])
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_multi_margin_loss_shapes(shape, target, reduction):
    """A vector, a one-row batch, a 0-d score and an empty batch; 'none' takes the target's shape."""
    if shape[:1] == (0,) and reduction != "none":
        return _empty_batch(F.multi_margin_loss, shape, target, reduction)
    check_op(lambda x: F.multi_margin_loss(x, target, reduction=reduction),
             lambda x: TF.multi_margin_loss(x, torch.tensor(target), reduction=reduction), [shape])


def test_multi_margin_loss_gradient_at_the_hinge_is_torchs():
    x = np.array([[1.0, 0.0, 2.0, 1.0]])                                       # margin − x_y + x_i = 0 and > 0
    check_op(lambda x: F.multi_margin_loss(x, np.array([0])), lambda x: TF.multi_margin_loss(x, torch.tensor([0])),
             [x], gradcheck_=False)


# ---- multilabel_margin_loss -----------------------------------------------------------------------------
TARGETS = np.array([[3, 0, -1, 1], [1, 2, 3, -1], [-1, 1, 1, 1], [0, 1, 2, 3], [2, 2, 0, -1]])


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_multilabel_margin_loss(reduction):
    """Labels up to the first −1 (later ones ignored), a row of none, a row of all, a label listed twice."""
    check_op(lambda x: F.multilabel_margin_loss(x, TARGETS, reduction=reduction),
             lambda x: TF.multilabel_margin_loss(x, torch.tensor(TARGETS), reduction=reduction), [(5, 4)])


@pytest.mark.parametrize("shape, target", [((4,), np.array([2, 0, -1, 3])), ((), np.array(0)), ((), np.array([0])),
                                           ((0, 4), np.zeros((0, 4), dtype=np.int64))])
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_multilabel_margin_loss_shapes(shape, target, reduction):
    if shape[:1] == (0,) and reduction != "none":
        return _empty_batch(F.multilabel_margin_loss, shape, target, reduction)
    check_op(lambda x: F.multilabel_margin_loss(x, target, reduction=reduction),
             lambda x: TF.multilabel_margin_loss(x, torch.tensor(target), reduction=reduction), [shape])


# ---- triplet_margin_with_distance_loss ------------------------------------------------------------------
DISTANCES = {
    "default": (None, None),
    "l1": (lambda a, b: (a - b).abs().sum(-1), lambda a, b: (a - b).abs().sum(-1)),
    "cosine": (lambda a, b: 1 - F.cosine_similarity(a, b), lambda a, b: 1 - TF.cosine_similarity(a, b)),
    "module": (nn.PairwiseDistance(p=1.5), torch.nn.PairwiseDistance(p=1.5)),
}


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("swap", [False, True])
@pytest.mark.parametrize("distance", list(DISTANCES))
def test_triplet_margin_with_distance_loss(distance, swap, reduction):
    ours, theirs = DISTANCES[distance]
    kw = dict(margin=1.5, swap=swap, reduction=reduction)
    check_op(lambda a, p, n: F.triplet_margin_with_distance_loss(a, p, n, distance_function=ours, **kw),
             lambda a, p, n: TF.triplet_margin_with_distance_loss(a, p, n, distance_function=theirs, **kw),
             [(4, 3), (4, 3), (4, 3)])


def test_triplet_margin_with_distance_loss_of_vectors():
    check_op(lambda a, p, n: F.triplet_margin_with_distance_loss(a, p, n, reduction="none"),
             lambda a, p, n: TF.triplet_margin_with_distance_loss(a, p, n, reduction="none"), [(3,), (3,), (3,)])


# ---- modules ---------------------------------------------------------------------------------------------
def _params(fn):
    return [(p.name, p.default, p.kind) for p in inspect.signature(fn).parameters.values() if p.name != "self"]


@pytest.mark.parametrize("name", ["ctc_loss", "multi_margin_loss", "multilabel_margin_loss",
                                  "triplet_margin_with_distance_loss"])
def test_function_signatures_are_torchs(name):
    assert _params(getattr(F, name)) == _params(getattr(TF, name))


@pytest.mark.parametrize("name", ["CTCLoss", "MultiMarginLoss", "MultiLabelMarginLoss",
                                  "TripletMarginWithDistanceLoss"])
def test_module_signatures_are_torchs(name):
    assert _params(getattr(nn, name).__init__) == _params(getattr(torch.nn, name).__init__)
    assert [p[0] for p in _params(getattr(nn, name).forward)] == [p[0] for p in
                                                                  _params(getattr(torch.nn, name).forward)]


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_margin_modules_are_torchs(reduction):
    x = np.random.default_rng(5).standard_normal((5, 4))
    w = np.array([1.0, 2.0, 0.5, 1.5])
    y = np.array([0, 3, 1, 1, 2])
    pairs = [(nn.MultiMarginLoss(2, 0.5, w, reduction=reduction),
              torch.nn.MultiMarginLoss(2, 0.5, torch.tensor(w), reduction=reduction), y),
             (nn.MultiLabelMarginLoss(reduction=reduction), torch.nn.MultiLabelMarginLoss(reduction=reduction),
              TARGETS)]
    for ours, theirs, target in pairs:
        a, b = seqlab.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
        la, lb = ours(a, target), theirs(b, torch.tensor(target))
        _close(la, lb)
        la.sum().backward()
        lb.sum().backward()
        _close(a.grad, b.grad)
        assert list(ours.state_dict()) == list(theirs.state_dict())
    m = nn.TripletMarginWithDistanceLoss(margin=0.5, swap=True, reduction=reduction)
    mt = torch.nn.TripletMarginWithDistanceLoss(margin=0.5, swap=True, reduction=reduction)
    _close(m(*[seqlab.tensor(v) for v in (x, x[::-1].copy(), x * 0.5)]),
           mt(*[torch.tensor(v) for v in (x, x[::-1].copy(), x * 0.5)]))
    assert isinstance(m.distance_function, nn.PairwiseDistance) and "distance_function" in dict(m.named_children())


@pytest.mark.parametrize("size_average, reduce", [(False, None), (None, False), (True, True), (False, True)])
def test_margin_modules_take_the_legacy_pair_as_torch(size_average, reduce):
    x, y = np.random.default_rng(6).standard_normal((3, 4)), np.array([0, 3, 1])
    for ours, theirs, target in [(nn.MultiMarginLoss, torch.nn.MultiMarginLoss, y),
                                 (nn.MultiLabelMarginLoss, torch.nn.MultiLabelMarginLoss, TARGETS[:3])]:
        with pytest.warns(UserWarning, match="size_average and reduce args will be deprecated"):
            m = ours(size_average=size_average, reduce=reduce)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            mt = theirs(size_average=size_average, reduce=reduce)
        assert m.reduction == mt.reduction
        _close(m(seqlab.tensor(x), target), mt(torch.tensor(x), torch.tensor(target)))
    with pytest.warns(UserWarning):
        a = F.multi_margin_loss(seqlab.tensor(x), y, size_average=size_average, reduce=reduce)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        b = TF.multi_margin_loss(torch.tensor(x), torch.tensor(y), size_average=size_average, reduce=reduce)
    _close(a, b)


# ---- margin losses: errors of torch's types ----------------------------------------------------------------
X = np.random.default_rng(7).standard_normal((3, 4))
Y = np.array([0, 3, 1])
W = np.ones(4)


@pytest.mark.parametrize("name, args, kwargs, error", [
    ("multi_margin_loss", (X, Y), {"p": 3}, ValueError),
    ("multi_margin_loss", (X, Y), {"weight": W[None]}, ValueError),
    ("multi_margin_loss", (X, Y), {"weight": W[:3]}, RuntimeError),
    ("multi_margin_loss", (X, Y), {"reduction": "avg"}, ValueError),
    ("multi_margin_loss", (X, np.array([0, 4, 1])), {}, RuntimeError),
    ("multi_margin_loss", (X, np.array([0, -1, 1])), {}, RuntimeError),
    ("multi_margin_loss", (X, Y[:2]), {}, RuntimeError),
    ("multi_margin_loss", (X, Y[None]), {}, RuntimeError),
    ("multi_margin_loss", (X, Y.astype(np.float64)), {}, RuntimeError),
    ("multi_margin_loss", (X[None], Y), {}, RuntimeError),
    ("multi_margin_loss", (X[:, :0], Y), {}, RuntimeError),
    ("multilabel_margin_loss", (X, np.array([[3, 0, -1, 7], [1, 2, 3, -1], [-1, 1, 1, 1]])), {}, RuntimeError),
    ("multilabel_margin_loss", (X, np.array([[3, 0, -2, 1], [1, 2, 3, -1], [-1, 1, 1, 1]])), {}, RuntimeError),
    ("multilabel_margin_loss", (X, TARGETS[:3, :3]), {}, RuntimeError),
    ("multilabel_margin_loss", (X, TARGETS[0]), {}, RuntimeError),
    ("multilabel_margin_loss", (X[0], TARGETS[:1]), {}, RuntimeError),
    ("multilabel_margin_loss", (X[None], TARGETS[None, :3]), {}, RuntimeError),
    ("multilabel_margin_loss", (X, TARGETS[:3].astype(np.float32)), {}, RuntimeError),
    ("multilabel_margin_loss", (X, TARGETS[:3]), {"reduction": "avg"}, ValueError),
    ("triplet_margin_with_distance_loss", (X, X, X[0]), {}, RuntimeError),
    ("triplet_margin_with_distance_loss", (X, X, X), {"margin": 0}, ValueError),
    ("triplet_margin_with_distance_loss", (X, X, X), {"reduction": "avg"}, ValueError),
])
def test_margin_loss_errors_are_of_torchs_type(name, args, kwargs, error):
    kw_t = {k: torch.tensor(v) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()}
    with pytest.raises(error):
        getattr(TF, name)(*[torch.tensor(a) for a in args], **kw_t)
    with pytest.raises(error) as info:
        getattr(F, name)(*[seqlab.tensor(a) for a in args], **kwargs)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("make, error", [
    (lambda lib: lib.MultiMarginLoss(p=3), ValueError),
    (lambda lib: lib.MultiMarginLoss(weight=(seqlab if lib is nn else torch).ones(2, 2)), ValueError),
    (lambda lib: lib.TripletMarginWithDistanceLoss(margin=0.0), ValueError),
    (lambda lib: lib.TripletMarginWithDistanceLoss(None), TypeError),               # keyword-only, as torch's
])
def test_margin_module_errors_are_torchs(make, error):
    with pytest.raises(error):
        make(torch.nn)
    with pytest.raises(error):
        make(nn)


# ---- the device path: CuPy's stand-in (and CuPy itself where a GPU is seen) -------------------------------
@pytest.mark.parametrize("fn", [
    lambda x: F.ctc_loss(x.reshape(5, 3, 4).log_softmax(-1), TG, IL, TL),
    lambda x: F.ctc_loss(x.reshape(5, 3, 4).log_softmax(-1), np.array([1, 2, 3, 1, 3, 3]), np.array(IL),
                         np.array(TL), blank=1, reduction="sum"),
    lambda x: F.ctc_loss(x.reshape(5, 3, 4).log_softmax(-1), TG, [5, 2, 2], [3, 2, 1], zero_infinity=True),
    lambda x: F.multi_margin_loss(x.reshape(15, 4), np.arange(15) % 4, p=2, weight=np.arange(1.0, 5.0)),
    lambda x: F.multilabel_margin_loss(x.reshape(15, 4), np.tile(TARGETS, (3, 1))),
    lambda x: F.triplet_margin_with_distance_loss(x[:20].reshape(5, 4), x[20:40].reshape(5, 4),
                                                  x[40:].reshape(5, 4), swap=True),
], ids=["ctc", "ctc_concatenated", "ctc_zero_infinity", "multi_margin", "multilabel_margin", "triplet_distance"])
def test_on_the_device_as_on_the_host(cuda, fn):
    x = np.random.default_rng(8).standard_normal(60).astype(np.float32)
    results = []
    for device in ("cpu", "cuda"):
        xs = seqlab.Tensor(backend.to_device(x, device), requires_grad=True)
        loss = fn(xs)
        assert loss.device == device
        loss.backward()
        assert backend.device_of(xs.grad) == device
        results.append((backend.to_numpy(loss.data), backend.to_numpy(xs.grad)))
    for a, b in zip(*results):
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6)
