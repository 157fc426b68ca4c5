"""torch's arguments (names, order, defaults, semantics) for F.binary_cross_entropy_with_logits /
nn.BCEWithLogitsLoss (`weight`, `size_average`, `reduce`), F.mse_loss / nn.MSELoss (`weight`, the legacy
pair) and F.embedding / nn.Embedding (`max_norm`, `norm_type`, `scale_grad_by_freq`, `sparse`, `_weight`,
`_freeze`, `from_pretrained`), each against torch: values, gradients, in-place renormalization, warnings,
state-dict keys and reprs."""
import inspect
import math
import warnings

import numpy as np
import pytest
import torch
import torch.nn.functional as TF
from helpers import check_op, const

import seqlab
import seqlab.functional as F
from seqlab import nn

RNG = np.random.default_rng(20)
TOL = {"float64": dict(rtol=1e-12, atol=1e-12), "float32": dict(rtol=1e-5, atol=1e-6)}
LEGACY = pytest.mark.parametrize("size_average,reduce", [(False, None), (None, False), (True, True), (False, True),
                                                         (True, False), (None, True)])


def _close(a, b, dtype="float64"):
    a = a.numpy() if isinstance(a, seqlab.Tensor) else np.asarray(a)
    b = b.detach().numpy() if isinstance(b, torch.Tensor) else np.asarray(b)
    assert a.shape == b.shape, (a.shape, b.shape)
    np.testing.assert_allclose(a, b, **TOL[dtype])


def _params(fn):
    """[(name, default)] of a signature, `self` left out."""
    return [(p.name, p.default) for p in inspect.signature(fn).parameters.values() if p.name != "self"]


@pytest.mark.parametrize("ours,theirs", [
    (F.binary_cross_entropy_with_logits, TF.binary_cross_entropy_with_logits),
    (F.mse_loss, TF.mse_loss),
    (F.embedding, TF.embedding),
    (nn.BCEWithLogitsLoss.__init__, torch.nn.BCEWithLogitsLoss.__init__),
    (nn.MSELoss.__init__, torch.nn.MSELoss.__init__),
    (nn.Embedding.__init__, torch.nn.Embedding.__init__),
    (nn.Embedding.from_pretrained, torch.nn.Embedding.from_pretrained),
])
def test_signatures_are_torchs(ours, theirs):
    assert _params(ours) == _params(theirs)


# ---- binary_cross_entropy_with_logits ---------------------------------------------------------------
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("wshape", [(4, 3), (3,), (4, 1), ()])
@pytest.mark.parametrize("pos_weight", [False, True])
def test_bce_with_logits_weight_positional_in_torchs_order(reduction, wshape, pos_weight):
    """F.binary_cross_entropy_with_logits(x, y, w, None, None, reduction, pw), every argument by position:
    values and the gradients of input and target, float64 and float32."""
    y = RNG.random((4, 3))
    w = const(RNG.uniform(0.2, 2.0, wshape))
    pw = RNG.uniform(0.5, 3.0, 3) if pos_weight else None

    def ours(x, t, w):
        return F.binary_cross_entropy_with_logits(x, t, w, None, None, reduction,
                                                  None if pw is None else seqlab.tensor(pw, dtype=x.dtype))

    def theirs(x, t, w):
        return TF.binary_cross_entropy_with_logits(x, t, w, None, None, reduction,
                                                   None if pw is None else torch.tensor(pw, dtype=x.dtype))

    check_op(ours, theirs, [(4, 3), y, w])


def test_bce_with_logits_weight_means_plainly_and_keeps_the_input_dtype():
    """'mean' with a weight is the plain mean of the weighted terms (not Σ / Σ w), and a float64 weight or
    pos_weight keeps a float32 input's dtype, as torch's."""
    x, y, w = RNG.standard_normal((5, 3)), RNG.random((5, 3)), RNG.uniform(0.1, 3.0, (5, 3))
    a = F.binary_cross_entropy_with_logits(seqlab.tensor(x), y, seqlab.tensor(w))
    b = TF.binary_cross_entropy_with_logits(torch.tensor(x), torch.tensor(y), torch.tensor(w))
    _close(a, b)
    none = F.binary_cross_entropy_with_logits(seqlab.tensor(x), y, w, reduction="none")
    assert float(a) == pytest.approx(float(none.numpy().mean()), rel=1e-14)
    x32, y32 = x.astype(np.float32), y.astype(np.float32)
    a = F.binary_cross_entropy_with_logits(seqlab.tensor(x32), y32, seqlab.tensor(w), pos_weight=seqlab.ones(3,
                                                                                                   dtype="float64"))
    b = TF.binary_cross_entropy_with_logits(torch.tensor(x32), torch.tensor(y32), torch.tensor(w),
                                            pos_weight=torch.ones(3, dtype=torch.float64))
    assert a.dtype == np.float32 and b.dtype == torch.float32
    _close(a, b, "float32")


@LEGACY
def test_bce_with_logits_legacy_size_average_and_reduce(size_average, reduce):
    x, y, w = RNG.standard_normal((4, 3)), RNG.random((4, 3)), RNG.uniform(0.5, 2.0, 3)
    with pytest.warns(UserWarning, match="size_average and reduce args will be deprecated") as rec:
        a = F.binary_cross_entropy_with_logits(seqlab.tensor(x), seqlab.tensor(y), seqlab.tensor(w), size_average,
                                               reduce, "mean")
    assert rec[0].filename == __file__  # the warning points at the caller
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        b = TF.binary_cross_entropy_with_logits(torch.tensor(x), torch.tensor(y), torch.tensor(w), size_average,
                                                reduce, "mean")
    _close(a, b)


def test_bce_with_logits_errors():
    x, y = seqlab.tensor(RNG.standard_normal((4, 3))), RNG.random((4, 3))
    # seqlab's old order, (logits, target, reduction): the reduction lands on `weight`, named in the error
    with pytest.raises(TypeError, match=r"weight must be a tensor.*reduction='sum' by keyword"):
        F.binary_cross_entropy_with_logits(x, y, "sum")
    with pytest.raises(TypeError, match=r"size_average='none' is a string"):
        F.binary_cross_entropy_with_logits(x, y, None, "none")
    with pytest.raises(ValueError, match=r"weight of shape \(5,\) does not broadcast to the input's shape \(4, 3\)"):
        F.binary_cross_entropy_with_logits(x, y, np.ones(5))
    with pytest.raises(ValueError, match=r"pos_weight of shape \(2, 4, 3\) does not broadcast"):
        F.binary_cross_entropy_with_logits(x, y, pos_weight=np.ones((2, 4, 3)))
    with pytest.raises(ValueError, match=r"target shape \(4, 1\) must equal the input's"):
        F.binary_cross_entropy_with_logits(x, y[:, :1])
    with pytest.raises(ValueError, match="reduction must be"):
        F.binary_cross_entropy_with_logits(x, y, reduction="avg")


def test_bce_with_logits_weight_gets_its_gradient():
    """torch refuses a weight that requires grad; seqlab's composed loss differentiates it: d Σ(w·l)/dw = l."""
    x, y, w0 = RNG.standard_normal((4, 3)), RNG.random((4, 3)), RNG.uniform(0.5, 2.0, 3)
    w = seqlab.tensor(w0, requires_grad=True)
    F.binary_cross_entropy_with_logits(seqlab.tensor(x), y, w, reduction="sum").backward()
    terms = TF.binary_cross_entropy_with_logits(torch.tensor(x), torch.tensor(y), reduction="none")
    _close(w.grad, terms.sum(0))


def test_bce_with_logits_weight_second_derivatives_match_torch():
    """Input and target, weight and pos_weight given: second derivatives against torch's."""
    x0, y0 = RNG.standard_normal((4, 3)), RNG.random((4, 3))
    w0, pw0 = RNG.uniform(0.5, 2.0, (4, 1)), RNG.uniform(0.5, 2.0, 3)
    out = []
    for lib, F_ in ((seqlab, F), (torch, TF)):
        x, y = lib.tensor(x0, requires_grad=True), lib.tensor(y0, requires_grad=True)
        loss = F_.binary_cross_entropy_with_logits(x * x, y, lib.tensor(w0), pos_weight=lib.tensor(pw0))
        gx, gy = lib.autograd.grad(loss, (x, y), create_graph=True)
        hx, hy = lib.autograd.grad((gx * gx).sum() + (gx * gy).sum(), (x, y))
        out.append((loss, gx, gy, hx, hy))
    for a, b in zip(*out):
        _close(a, b)


# ---- nn.BCEWithLogitsLoss -----------------------------------------------------------------------------
@pytest.mark.parametrize("weight,pos_weight", [(False, False), (True, False), (False, True), (True, True)])
def test_bce_with_logits_module_positional_state_dict_and_values(weight, pos_weight):
    w = RNG.uniform(0.5, 2.0, 3) if weight else None
    pw = RNG.uniform(0.5, 2.0, 3) if pos_weight else None
    ours = nn.BCEWithLogitsLoss(None if w is None else seqlab.tensor(w), None, None, "sum",
                                None if pw is None else seqlab.tensor(pw))
    theirs = torch.nn.BCEWithLogitsLoss(None if w is None else torch.tensor(w), None, None, "sum",
                                        None if pw is None else torch.tensor(pw))
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert list(dict(ours.named_buffers())) == list(dict(theirs.named_buffers()))
    x, y = RNG.standard_normal((5, 3)), RNG.random((5, 3))
    xs, xt = seqlab.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    a, b = ours(xs, y), theirs(xt, torch.tensor(y))
    _close(a, b)
    a.backward()
    b.backward()
    _close(xs.grad, xt.grad)
    if weight or pos_weight:  # torch's state dict loads into seqlab's module
        fresh = nn.BCEWithLogitsLoss(seqlab.ones(3, dtype="float64") if weight else None, reduction="sum",
                                     pos_weight=seqlab.ones(3, dtype="float64") if pos_weight else None)
        fresh.load_state_dict(theirs.state_dict())
        _close(fresh(seqlab.tensor(x), y), b)


def test_bce_with_logits_module_legacy_args_repr_and_errors():
    with pytest.warns(UserWarning, match="please use reduction='none'") as rec:
        ours = nn.BCEWithLogitsLoss(reduce=False)
    assert rec[0].filename == __file__
    assert ours.reduction == "none" and repr(ours) == "BCEWithLogitsLoss(reduction='none')"
    assert repr(nn.BCEWithLogitsLoss(pos_weight=np.ones(3))) == "BCEWithLogitsLoss()" \
        == repr(torch.nn.BCEWithLogitsLoss(pos_weight=torch.ones(3)))
    with pytest.raises(TypeError, match="pass reduction='sum' by keyword"):
        nn.BCEWithLogitsLoss("sum")  # seqlab's old order: (reduction, pos_weight)


# ---- mse_loss / nn.MSELoss ----------------------------------------------------------------------------
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_mse_loss_weight_positional_in_torchs_order(reduction):
    """F.mse_loss(x, y, None, None, reduction, w): 'mean' is Σ w·d² / Σ w; x, y and w all get torch's
    gradients (torch differentiates the weight here)."""
    check_op(lambda x, y, w: F.mse_loss(x, y, None, None, reduction, w),
             lambda x, y, w: TF.mse_loss(x, y, None, None, reduction, w), [(4, 3), (4, 3), RNG.uniform(0.2, 2.0,
                                                                                                     (4, 3))])


def test_mse_loss_weighted_mean_divides_by_the_weights_sum():
    x, y, w = RNG.standard_normal((3, 4)), RNG.standard_normal((3, 4)), RNG.uniform(0.1, 2.0, (3, 4))
    a = F.mse_loss(seqlab.tensor(x), y, weight=w)
    assert float(a) == pytest.approx(float((w * (x - y) ** 2).sum() / w.sum()), rel=1e-14)
    _close(a, TF.mse_loss(torch.tensor(x), torch.tensor(y), weight=torch.tensor(w)))
    # torch: all-zero weights give 0 / 0 = nan
    with np.errstate(invalid="ignore"):
        assert math.isnan(float(F.mse_loss(seqlab.tensor(x), y, weight=np.zeros((3, 4)))))


@pytest.mark.parametrize("wshape", [(4,), (3, 1), ()])
def test_mse_loss_weight_must_have_the_inputs_shape(wshape):
    x, y = RNG.standard_normal((3, 4)), RNG.standard_normal((3, 4))
    with pytest.raises(ValueError, match="Weights and input must have the same size"):
        TF.mse_loss(torch.tensor(x), torch.tensor(y), weight=torch.ones(wshape, dtype=torch.float64))
    with pytest.raises(ValueError, match="Weights and input must have the same size"):
        F.mse_loss(seqlab.tensor(x), y, weight=np.ones(wshape))


@LEGACY
@pytest.mark.parametrize("weighted", [False, True])
def test_mse_loss_legacy_size_average_and_reduce(size_average, reduce, weighted):
    x, y, w = RNG.standard_normal((3, 4)), RNG.standard_normal((3, 4)), RNG.uniform(0.1, 2.0, (3, 4))
    with pytest.warns(UserWarning, match="size_average and reduce args will be deprecated") as rec:
        a = F.mse_loss(seqlab.tensor(x), seqlab.tensor(y), size_average, reduce, "mean",
                       seqlab.tensor(w) if weighted else None)
    assert rec[0].filename == __file__
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        b = TF.mse_loss(torch.tensor(x), torch.tensor(y), size_average, reduce, "mean",
                        torch.tensor(w) if weighted else None)
    _close(a, b)


def test_mse_loss_errors():
    x = seqlab.tensor(RNG.standard_normal((3, 4)))
    with pytest.raises(TypeError, match=r"size_average='sum' is a string.*reduction='sum' by keyword"):
        F.mse_loss(x, x, "sum")  # seqlab's old order, (input, target, reduction)
    with pytest.raises(ValueError, match="reduction must be"):
        F.mse_loss(x, x, reduction="avg")
    with pytest.raises(ValueError, match="reduction must be"):
        F.mse_loss(x, x, reduction="avg", weight=np.ones((3, 4)))


@LEGACY
def test_mse_loss_module_legacy_args_positional(size_average, reduce):
    with pytest.warns(UserWarning, match="size_average and reduce args will be deprecated") as rec:
        ours = nn.MSELoss(size_average, reduce)
    assert rec[0].filename == __file__
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = torch.nn.MSELoss(size_average, reduce)
    assert ours.reduction == theirs.reduction
    x, y = RNG.standard_normal((3, 4)), RNG.standard_normal((3, 4))
    _close(ours(seqlab.tensor(x), y), theirs(torch.tensor(x), torch.tensor(y)))
    assert list(ours.state_dict()) == list(theirs.state_dict()) == []


def test_mse_loss_module_reduction_by_position_and_errors():
    assert nn.MSELoss(None, None, "sum").reduction == "sum"
    with pytest.raises(TypeError, match="pass reduction='sum' by keyword"):
        nn.MSELoss("sum")
    with pytest.raises(ValueError, match="reduction must be"):
        nn.MSELoss(reduction="avg")


# ---- F.embedding: max_norm ----------------------------------------------------------------------------
IDS = np.array([[1, 2, 1, 4], [0, 5, 1, 2]])  # repeats; rows 3 and 6 unused


def _pair(w0, dtype):
    dt = np.dtype(dtype)
    return (seqlab.tensor(w0.astype(dt), requires_grad=True),
            torch.tensor(w0.astype(dt), requires_grad=True))


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("norm_type", [2.0, 1.0, 3.0, 0.5, math.inf])
@pytest.mark.parametrize("max_norm", [1.0, 0.3, 2.5])
def test_embedding_max_norm_renormalizes_rows_in_place_as_torch(dtype, norm_type, max_norm):
    w0 = RNG.standard_normal((7, 3)) * 1.5
    ws, wt = _pair(w0, dtype)
    a = F.embedding(IDS, ws, None, max_norm, norm_type)
    b = TF.embedding(torch.tensor(IDS), wt, None, max_norm, norm_type)
    _close(ws.data, wt.detach(), dtype)  # the rows looked up, renormalized in place in the weight
    np.testing.assert_array_equal(ws.data[[3, 6]], w0[[3, 6]].astype(dtype))  # the others untouched
    _close(a, b, dtype)
    g = RNG.standard_normal(a.shape)
    (a * seqlab.tensor(g.astype(dtype))).sum().backward()
    (b * torch.tensor(g.astype(dtype))).sum().backward()
    _close(ws.grad, wt.grad, dtype)


def test_embedding_max_norm_with_padding_and_scale_grad_by_freq_all_positional():
    w0 = RNG.standard_normal((7, 3)) * 2
    ws, wt = _pair(w0, "float64")
    a = F.embedding(IDS, ws, 1, 1.5, 2.0, True, False)
    b = TF.embedding(torch.tensor(IDS), wt, 1, 1.5, 2.0, True, False)
    _close(ws.data, wt.detach())
    _close(a, b)
    g = RNG.standard_normal(a.shape)
    (a * seqlab.tensor(g)).sum().backward()
    (b * torch.tensor(g)).sum().backward()
    _close(ws.grad, wt.grad)
    assert not ws.grad[1].any()


def test_embedding_max_norm_counts_as_an_in_place_change():
    """torch bumps the weight's version, so a backward that saved the old weight raises; so does seqlab's.
    A call that changes no row changes nothing."""
    w0 = RNG.standard_normal((7, 3)) * 3
    for lib, F_ in ((seqlab, F), (torch, TF)):
        w = lib.tensor(w0.copy(), requires_grad=True)
        y = (w * w).sum() + F_.embedding(lib.tensor(IDS), w, max_norm=1.0).sum()
        with pytest.raises(RuntimeError):
            y.backward()
    w = seqlab.tensor(w0.copy(), requires_grad=True)
    y = (w * w).sum() + F.embedding(IDS, w, max_norm=100.0).sum()
    y.backward()
    np.testing.assert_array_equal(w.data, w0)


# ---- F.embedding: scale_grad_by_freq ------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("padding_idx", [None, 0, 1, -1])
def test_embedding_scale_grad_by_freq(dtype, padding_idx):
    ids = np.array([[1, 1, 1, 6], [0, 2, 1, 6], [2, 0, 6, 3]])  # counts 1: 4, 6: 3, 0: 2, 2: 2, 3: 1
    ws, wt = _pair(RNG.standard_normal((7, 5)), dtype)
    a = F.embedding(ids, ws, padding_idx, scale_grad_by_freq=True)
    b = TF.embedding(torch.tensor(ids), wt, padding_idx, scale_grad_by_freq=True)
    _close(a, b, dtype)
    g = RNG.standard_normal(a.shape)
    (a * seqlab.tensor(g.astype(dtype))).sum().backward()
    (b * torch.tensor(g.astype(dtype))).sum().backward()
    _close(ws.grad, wt.grad, dtype)
    if padding_idx is not None:
        assert not ws.grad[padding_idx].any()
    # and it is the mean, not the sum, of a row's gradients
    plain = seqlab.tensor(ws.data, requires_grad=True)
    (F.embedding(ids, plain) * seqlab.tensor(g.astype(dtype))).sum().backward()
    if padding_idx is None:
        _close(ws.grad[1], plain.grad[1] / 4, dtype)


def test_embedding_scale_grad_by_freq_double_backward_is_torchs_and_the_derivative_of_the_gradient():
    """With repeated ids: the first derivative (create_graph=True) and the second are torch's; the derivative
    in the grad_outputs is the plain lookup's (v[ids], torch's convention); and the Hessian-vector product of
    a loss through the lookup equals central differences of seqlab's own first-order gradient (the 1/count
    applied once, not twice)."""
    ids, t0 = np.array([[1, 2, 2], [0, 4, 1], [2, 2, 3]]), RNG.standard_normal((5, 3))
    u0, v0 = RNG.standard_normal((3, 3, 3)), RNG.standard_normal((5, 3))
    got = []
    for lib, F_ in ((seqlab, F), (torch, TF)):
        table, u = lib.tensor(t0, requires_grad=True), lib.tensor(u0, requires_grad=True)
        e = F_.embedding(lib.tensor(ids), table, padding_idx=4, scale_grad_by_freq=True)
        ge, = lib.autograd.grad(e, table, u, create_graph=True)
        du, = lib.autograd.grad((ge * lib.tensor(v0)).sum(), u)
        e = F_.embedding(lib.tensor(ids), table, padding_idx=4, scale_grad_by_freq=True)
        g3, = lib.autograd.grad((e ** 3).sum(), table, create_graph=True)
        h, = lib.autograd.grad((g3 * lib.tensor(v0)).sum(), table)
        got.append((ge, du, g3, h))
    for a, b in zip(*got):
        _close(a, b)

    def first(table):
        t = seqlab.tensor(table, requires_grad=True)
        (F.embedding(seqlab.tensor(ids), t, padding_idx=4, scale_grad_by_freq=True) ** 3).sum().backward()
        return t.grad
    eps = 1e-6
    fd = (first(t0 + eps * v0) - first(t0 - eps * v0)) / (2 * eps)
    np.testing.assert_allclose(got[0][3].numpy(), fd, rtol=1e-6, atol=1e-8)


def test_embedding_negative_padding_idx_second_derivatives_match_torch():
    """A negative padding_idx counts from the end in the double-backward graph too."""
    ids, t0 = np.array([[1, 4, 2], [0, 4, 1]]), RNG.standard_normal((5, 3))
    out = []
    for lib, F_ in ((seqlab, F), (torch, TF)):
        table = lib.tensor(t0, requires_grad=True)
        e = F_.embedding(lib.tensor(ids), table, padding_idx=-1)
        ge, = lib.autograd.grad((e ** 3).sum(), table, create_graph=True)
        he, = lib.autograd.grad((ge ** 2).sum(), table)
        out.append((ge, he))
    for a, b in zip(*out):
        _close(a, b)


def test_embedding_errors():
    w = seqlab.randn(5, 3, requires_grad=True)
    with pytest.raises(NotImplementedError, match=r"sparse=True .*dense gradient.*sparse=False"):
        F.embedding(np.array([1]), w, sparse=True)
    with pytest.raises(ValueError, match=r"padding_idx 5 must be within num_embeddings \(5\)"):
        F.embedding(np.array([1]), w, padding_idx=5)
    with pytest.raises(ValueError, match=r"padding_idx -6 must be within"):
        F.embedding(np.array([1]), w, padding_idx=-6)


# ---- nn.Embedding -------------------------------------------------------------------------------------
@pytest.mark.parametrize("args,kwargs", [
    ((10, 3), {}),
    ((10, 3, 0, 1.0, 3.0, True), {}),
    ((10, 3), dict(padding_idx=-1)),
    ((10, 3), dict(max_norm=2)),
    ((10, 3), dict(norm_type=1.0, scale_grad_by_freq=True)),
    ((10, 3), dict(norm_type=2)),
])
def test_embedding_module_repr_and_state_dict_as_torchs(args, kwargs):
    ours, theirs = nn.Embedding(*args, **kwargs), torch.nn.Embedding(*args, **kwargs)
    assert repr(ours) == repr(theirs)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    for name in ("num_embeddings", "embedding_dim", "padding_idx", "max_norm", "norm_type", "scale_grad_by_freq",
                 "sparse"):
        assert getattr(ours, name) == getattr(theirs, name), name


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_embedding_module_max_norm_and_scale_grad_by_freq_match_torch(dtype):
    theirs = torch.nn.Embedding(8, 4, padding_idx=2, max_norm=1.2, norm_type=3.0, scale_grad_by_freq=True,
                                dtype=getattr(torch, dtype))
    with torch.no_grad():
        theirs.weight.mul_(2)
    ours = nn.Embedding(8, 4, padding_idx=2, max_norm=1.2, norm_type=3.0, scale_grad_by_freq=True, dtype=dtype)
    ours.load_state_dict(theirs.state_dict())
    ids = np.array([[1, 2, 3, 1], [7, 7, 7, 0]])
    a, b = ours(ids), theirs(torch.tensor(ids))
    _close(ours.weight.data, theirs.weight.detach(), dtype)
    _close(a, b, dtype)
    g = RNG.standard_normal(a.shape)
    (a * seqlab.tensor(g.astype(dtype))).sum().backward()
    (b * torch.tensor(g.astype(dtype))).sum().backward()
    _close(ours.weight.grad, theirs.weight.grad, dtype)


def test_embedding_module_sparse_is_refused():
    with pytest.raises(NotImplementedError, match=r"sparse=True .*dense gradient"):
        nn.Embedding(10, 3, sparse=True)
    with pytest.raises(NotImplementedError, match=r"sparse=True .*dense gradient"):
        nn.Embedding.from_pretrained(np.ones((4, 3)), sparse=True)
    assert nn.Embedding(10, 3, sparse=False).sparse is False


def test_embedding_module_weight_and_freeze():
    """`_weight` is taken as it is (no init, the padding row kept), `_freeze` stops its gradient; a seqlab
    Tensor's array is shared, as torch shares the tensor; a wrong shape is refused."""
    w = seqlab.tensor(np.arange(15.0).reshape(5, 3))
    ours = nn.Embedding(5, 3, padding_idx=0, _weight=w, _freeze=True)
    theirs = torch.nn.Embedding(5, 3, padding_idx=0, _weight=torch.arange(15.0, dtype=torch.float64).reshape(5, 3),
                                _freeze=True)
    _close(ours.weight.data, theirs.weight.detach())
    assert ours.weight.requires_grad is theirs.weight.requires_grad is False
    assert ours.weight.data is w.data
    assert nn.Embedding(5, 3, _weight=np.ones((5, 3))).weight.requires_grad
    with pytest.raises(ValueError, match=r"_weight has shape \(4, 3\), expected"):
        nn.Embedding(5, 3, _weight=np.ones((4, 3)))


def test_embedding_from_pretrained_takes_torchs_arguments():
    w0 = RNG.standard_normal((6, 3)) * 2
    ours = nn.Embedding.from_pretrained(w0, False, 1, 1.0, 1.0, True)
    theirs = torch.nn.Embedding.from_pretrained(torch.tensor(w0), False, 1, 1.0, 1.0, True)
    assert repr(ours) == repr(theirs) == "Embedding(6, 3, padding_idx=1, max_norm=1.0, norm_type=1.0, " \
                                        "scale_grad_by_freq=True)"
    assert ours.weight.requires_grad and theirs.weight.requires_grad
    _close(ours.weight.data, theirs.weight.detach())  # the padding row kept as given, as torch
    ids = np.array([[1, 1, 3], [5, 1, 0]])
    a, b = ours(ids), theirs(torch.tensor(ids))
    _close(a, b)
    _close(ours.weight.data, theirs.weight.detach())
    a.sum().backward()
    b.sum().backward()
    _close(ours.weight.grad, theirs.weight.grad)
    np.testing.assert_array_equal(ours.weight.data[[2, 4]], w0[[2, 4]])
    assert not np.shares_memory(ours.weight.data, w0)  # a copy: the source array is left alone
    frozen = nn.Embedding.from_pretrained(seqlab.tensor(w0))
    assert not frozen.weight.requires_grad and not np.shares_memory(frozen.weight.data, w0)


def test_torchs_max_norm_recipe_clone_the_weight_first():
    """torch's nn.Embedding docs: with max_norm, a differentiable use of the weight before the lookup needs
    weight.clone(), which saves nothing (the lookup then renormalizes the weight in place)."""
    results = []
    for lib, nn_ in ((seqlab, seqlab.nn), (torch, torch.nn)):
        emb = nn_.Embedding(3, 5, max_norm=1.0)
        with lib.no_grad():
            emb.weight.copy_(lib.tensor(np.random.default_rng(1).standard_normal((3, 5)) * 3, dtype=lib.float32))
        w = lib.tensor(np.random.default_rng(0).standard_normal((7, 5)), dtype=lib.float32, requires_grad=True)
        a = emb.weight.clone() @ w.t()
        b = emb(lib.tensor(np.array([1, 2]))) @ w.t()
        (a.unsqueeze(0) + b.unsqueeze(1)).sigmoid().prod().backward()
        results.append((emb.weight, emb.weight.grad, w.grad))
    for a, b in zip(*results):
        _close(a, b, "float32")


def test_mul_keeps_only_the_operand_a_gradient_reads():
    """w * 3 needs only the 3 for w's gradient: w changed in place afterwards is no error (as torch's)."""
    for lib in (seqlab, torch):
        w = lib.tensor(np.ones(4), requires_grad=True)
        y = (w * 3).sum()
        with lib.no_grad():
            w.mul_(2)
        y.backward()
        _close(w.grad, np.full(4, 3.0))
    x = seqlab.tensor(np.ones(4), requires_grad=True)
    y = (x * x).sum()  # here both are read: refused, as torch
    with seqlab.no_grad():
        x.mul_(2)
    with pytest.raises(RuntimeError, match="changed in place"):
        y.backward()


def test_a_product_with_the_weight_before_a_max_norm_lookup_as_torch():
    """x @ weight.t() with a constant x reads only x for the weight's gradient: the lookup may then
    renormalize the weight in place (torch's too); with an x that requires grad the product needs the old
    weight, and both refuse."""
    for needs_x in (False, True):
        outcome = []
        for lib, nn_ in ((seqlab, seqlab.nn), (torch, torch.nn)):
            emb = nn_.Embedding(3, 5, max_norm=1.0)
            with lib.no_grad():
                emb.weight.copy_(lib.tensor(np.random.default_rng(1).standard_normal((3, 5)) * 3, dtype=lib.float32))
            x = lib.tensor(np.random.default_rng(0).standard_normal((7, 5)), dtype=lib.float32,
                           requires_grad=needs_x)
            a = (x @ emb.weight.t()).sum() + (emb.weight * 2).sum()
            b = emb(lib.tensor(np.array([1, 2]))).sum()
            try:
                (a + b).backward()
                outcome.append(("ok", emb.weight.grad))
            except RuntimeError:
                outcome.append(("refused", None))
        assert outcome[0][0] == outcome[1][0] == ("refused" if needs_x else "ok"), outcome
        if not needs_x:
            _close(outcome[0][1], outcome[1][1], "float32")
