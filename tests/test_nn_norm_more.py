"""GroupNorm, InstanceNorm1d/2d/3d, LocalResponseNorm, BatchNorm3d, Threshold, Softmax2d, the recurrent
layers' torch base classes and nn.utils.get_total_norm / clip_grads_with_norm_: outputs, gradients, running
statistics, reprs and refusals against torch's."""
import warnings

import numpy as np
import pytest
import torch
import torch.nn as tnn
import torch.nn.functional as TF
from helpers import check_module

import seqlab
from seqlab import functional as F
from seqlab import nn

RNG = np.random.default_rng(0)


def _pair(shape, dtype=np.float64, scale=1.0):
    x = RNG.standard_normal(shape).astype(dtype) * scale
    return seqlab.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)


def _same(s, t, rtol=1e-9, atol=1e-11):
    np.testing.assert_allclose(np.asarray(s.data if hasattr(s, "data") else s), t.detach().numpy(), rtol=rtol,
                               atol=atol)


# ---- reprs ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("call", [
    "GroupNorm(2, 4)", "GroupNorm(3, 6, eps=0.001, affine=False)", "InstanceNorm1d(3)",
    "InstanceNorm2d(4, affine=True, track_running_stats=True)", "InstanceNorm3d(2, momentum=None)",
    "LocalResponseNorm(3)", "LocalResponseNorm(2, alpha=0.01, beta=0.5, k=2.0)", "BatchNorm3d(5)",
    "Threshold(0.1, 20.0)", "Threshold(0, -1.0, True)", "Softmax2d()",
])
def test_repr_is_torchs(call):
    assert repr(eval("nn." + call)) == repr(eval("tnn." + call))


# ---- group norm --------------------------------------------------------------------------------------
@pytest.mark.parametrize("groups,shape", [(1, (2, 4, 5)), (2, (2, 4, 5)), (4, (3, 4)), (3, (2, 6, 2, 3)),
                                          (2, (1, 4, 3, 2, 2))])
def test_group_norm_module_matches_torch(groups, shape):
    check_module(nn.GroupNorm(groups, shape[1]), tnn.GroupNorm(groups, shape[1]), [shape])


def test_group_norm_with_weights_and_float32():
    t = tnn.GroupNorm(2, 6)
    with torch.no_grad():
        t.weight.uniform_(0.5, 1.5)
        t.bias.uniform_(-1, 1)
    check_module(nn.GroupNorm(2, 6), t, [(3, 6, 7)], dtype="float32")
    check_module(nn.GroupNorm(3, 6, affine=False), tnn.GroupNorm(3, 6, affine=False), [(2, 6, 4)])


def test_group_norm_functional_gradients():
    s, t = _pair((2, 6, 3))
    ws, wt = _pair((6,))
    bs, bt = _pair((6,))
    ys, yt = F.group_norm(s, 3, ws, bs, eps=1e-3), TF.group_norm(t, 3, wt, bt, eps=1e-3)
    _same(ys, yt)
    g = RNG.standard_normal(ys.shape)
    ys.backward(seqlab.tensor(g))
    yt.backward(torch.tensor(g))
    for a, b in ((s, t), (ws, wt), (bs, bt)):
        _same(a.grad, b.grad, rtol=1e-8, atol=1e-10)


def test_group_norm_refusals():
    with pytest.raises(ValueError, match="divisible"):
        nn.GroupNorm(3, 4)
    with pytest.raises(ValueError, match="divisible"):
        tnn.GroupNorm(3, 4)
    x = seqlab.randn(2, 4, 3)
    with pytest.raises(RuntimeError, match="divisible by num_groups"):
        F.group_norm(x, 3)
    with pytest.raises(RuntimeError, match="at least 2 dimensions"):
        F.group_norm(seqlab.randn(4), 2)
    with pytest.raises(RuntimeError, match="weight"):
        F.group_norm(x, 2, weight=seqlab.ones(3))
    with pytest.raises(ValueError, match="more than 1 value"):  # one value per group: torch's check too
        F.group_norm(seqlab.randn(1, 2), 2)
    with pytest.raises(ValueError, match="more than 1 value"):
        TF.group_norm(torch.randn(1, 2), 2)


# ---- instance norm -----------------------------------------------------------------------------------
@pytest.mark.parametrize("cls,shape", [("InstanceNorm1d", (2, 3, 5)), ("InstanceNorm1d", (3, 5)),
                                       ("InstanceNorm2d", (2, 3, 4, 2)), ("InstanceNorm2d", (3, 4, 2)),
                                       ("InstanceNorm3d", (2, 3, 2, 2, 2))])
@pytest.mark.parametrize("affine", [False, True])
def test_instance_norm_matches_torch_batched_and_unbatched(cls, shape, affine):
    check_module(getattr(nn, cls)(3, affine=affine), getattr(tnn, cls)(3, affine=affine), [shape])


def test_instance_norm_running_stats_follow_torchs_in_training_and_are_used_in_eval():
    s, t = nn.InstanceNorm1d(3, affine=True, track_running_stats=True), tnn.InstanceNorm1d(
        3, affine=True, track_running_stats=True).double()
    s.to(dtype=np.float64)
    s.load_state_dict({k: v.numpy() for k, v in t.state_dict().items()})
    for _ in range(3):
        xs, xt = _pair((4, 3, 6), scale=2.0)
        _same(s(xs), t(xt))
    for name in ("running_mean", "running_var"):
        _same(getattr(s, name), getattr(t, name), rtol=1e-12)
    s.eval()
    t.eval()
    xs, xt = _pair((2, 3, 6))
    ys, yt = s(xs), t(xt)
    _same(ys, yt)
    ys.sum().backward()
    yt.sum().backward()
    _same(xs.grad, xt.grad)


def test_instance_norm_momentum_none_leaves_running_stats_as_torch():
    s, t = nn.InstanceNorm1d(2, track_running_stats=True, momentum=None), tnn.InstanceNorm1d(
        2, track_running_stats=True, momentum=None).double()
    s.to(dtype=np.float64)
    xs, xt = _pair((3, 2, 4))
    _same(s(xs), t(xt))
    _same(s.running_mean, t.running_mean)
    _same(s.running_var, t.running_var)


def test_instance_norm_functional_with_running_stats():
    s, t = _pair((2, 3, 4))
    rm_s, rv_s = np.zeros(3), np.ones(3)
    rm_t, rv_t = torch.zeros(3, dtype=torch.float64), torch.ones(3, dtype=torch.float64)
    _same(F.instance_norm(s, rm_s, rv_s, momentum=0.3), TF.instance_norm(t, rm_t, rv_t, momentum=0.3))
    _same(rm_s, rm_t)
    _same(rv_s, rv_t)
    _same(F.instance_norm(s, rm_s, rv_s, use_input_stats=False),
          TF.instance_norm(t, rm_t, rv_t, use_input_stats=False))


def test_instance_norm_refusals_and_warning():
    with pytest.raises(ValueError, match="expected 2D or 3D input"):
        nn.InstanceNorm1d(3)(seqlab.randn(2, 3, 4, 5))
    with pytest.raises(ValueError, match="expected 2D or 3D input"):
        tnn.InstanceNorm1d(3)(torch.randn(2, 3, 4, 5))
    with pytest.raises(ValueError, match="match num_features"):
        nn.InstanceNorm1d(4, affine=True)(seqlab.randn(2, 3, 5))
    with pytest.warns(UserWarning, match="does not match num_features"):
        nn.InstanceNorm1d(4)(seqlab.randn(2, 3, 5))
    with pytest.raises(ValueError, match="more than 1 spatial element"):
        F.instance_norm(seqlab.randn(2, 3, 1))
    with pytest.raises(ValueError, match="more than 1 spatial element"):
        TF.instance_norm(torch.randn(2, 3, 1))
    with pytest.raises(ValueError, match="running_mean and running_var"):
        F.instance_norm(seqlab.randn(2, 3, 4), use_input_stats=False)


# ---- local response norm, batch norm 3d --------------------------------------------------------------
@pytest.mark.parametrize("size", [1, 2, 3, 5])
@pytest.mark.parametrize("shape", [(2, 4, 3), (1, 6, 2, 3), (2, 3, 2, 2, 2)])
def test_local_response_norm_matches_torch(size, shape):
    check_module(nn.LocalResponseNorm(size, alpha=0.5, beta=0.6, k=1.5), tnn.LocalResponseNorm(
        size, alpha=0.5, beta=0.6, k=1.5), [shape])


def test_local_response_norm_refuses_2d_input():
    with pytest.raises(ValueError, match="3D or higher"):
        F.local_response_norm(seqlab.randn(2, 3), 2)


def test_batch_norm_3d_matches_torch_in_training_and_eval():
    s, t = nn.BatchNorm3d(3), tnn.BatchNorm3d(3)
    check_module(s, t, [(2, 3, 2, 3, 2)])
    _same(s.running_mean, t.running_mean.double(), rtol=1e-6, atol=1e-8)
    s.eval()
    t.eval()
    check_module(s, t, [(2, 3, 2, 3, 2)])
    with pytest.raises(ValueError, match="expected 5D input"):
        s(seqlab.randn(2, 3, 4, 4))


# ---- threshold, softmax2d -----------------------------------------------------------------------------
def test_threshold_values_gradient_and_nan_as_torch():
    x = np.array([-1.0, 0.1, 0.5, 0.1000001, np.nan, 3.0])
    s, t = seqlab.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    ys, yt = nn.Threshold(0.1, 20.0)(s), tnn.Threshold(0.1, 20.0)(t)
    _same(ys, yt)
    ys.sum().backward()
    yt.sum().backward()
    _same(s.grad, t.grad)
    xi = np.array([-2, 0, 3])
    _same(F.threshold(seqlab.tensor(xi), 0, 7), TF.threshold(torch.tensor(xi), 0, 7))
    assert F.threshold(seqlab.tensor(xi), 0, 7).dtype == np.int64


@pytest.mark.parametrize("shape", [(3, 4, 5), (2, 3, 4, 5)])
def test_softmax2d_matches_torch(shape):
    check_module(nn.Softmax2d(), tnn.Softmax2d(), [shape])


def test_softmax2d_refuses_other_ranks():
    with pytest.raises(ValueError, match="3D or 4D"):
        nn.Softmax2d()(seqlab.randn(2, 3))


# ---- base classes, clipping --------------------------------------------------------------------------
def test_recurrent_layers_are_instances_of_torchs_base_class_names():
    for layer in (nn.RNN(3, 4), nn.LSTM(3, 4), nn.GRU(3, 4)):
        assert isinstance(layer, nn.RNNBase) and not isinstance(layer, nn.RNNCellBase)
    for cell in (nn.RNNCell(3, 4), nn.LSTMCell(3, 4), nn.GRUCell(3, 4)):
        assert isinstance(cell, nn.RNNCellBase) and not isinstance(cell, nn.RNNBase)


@pytest.mark.parametrize("norm_type", [2.0, 1.0, 3.0, "inf"])
def test_get_total_norm_and_clip_grads_with_norm_as_torch(norm_type):
    shapes = [(3, 4), (5,), (2, 2, 2)]
    grads = [RNG.standard_normal(s) for s in shapes]
    ps = [seqlab.zeros(*s, dtype=seqlab.float64, requires_grad=True) for s in shapes]
    pt = [torch.zeros(*s, dtype=torch.float64, requires_grad=True) for s in shapes]
    for p, q, g in zip(ps, pt, grads):
        p.grad, q.grad = g.copy(), torch.tensor(g)
    total_s = nn.utils.get_total_norm([p.grad for p in ps], norm_type)
    total_t = tnn.utils.get_total_norm([q.grad for q in pt], norm_type)
    assert total_s.item() == pytest.approx(total_t.item(), rel=1e-12)
    nn.utils.clip_grads_with_norm_(ps, 0.5, total_s)
    tnn.utils.clip_grads_with_norm_(pt, 0.5, total_t)
    for p, q in zip(ps, pt):
        _same(p.grad, q.grad)
    # the pair is clip_grad_norm_: the same gradients either way
    qs = [seqlab.zeros(*s, dtype=seqlab.float64, requires_grad=True) for s in shapes]
    for p, g in zip(qs, grads):
        p.grad = g.copy()
    assert nn.utils.clip_grad_norm_(qs, 0.5, norm_type) == pytest.approx(total_s, rel=1e-12)
    for p, q in zip(ps, qs):
        np.testing.assert_array_equal(p.grad, q.grad)


def test_get_total_norm_of_tensors_and_of_nothing():
    x = seqlab.tensor([3.0, 4.0])
    assert nn.utils.get_total_norm(x) == 5.0
    assert nn.utils.get_total_norm([]) == 0.0
    with pytest.raises(RuntimeError, match="non-finite"):
        nn.utils.get_total_norm([seqlab.tensor([np.inf])], error_if_nonfinite=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        p = seqlab.zeros(2, requires_grad=True)
        p.grad = np.array([3.0, 4.0], np.float32)
        nn.utils.clip_grads_with_norm_(p, 10.0, 5.0)  # under max_norm: unchanged
        np.testing.assert_array_equal(p.grad, [3.0, 4.0])
