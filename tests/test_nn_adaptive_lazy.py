"""nn.AdaptiveLogSoftmaxWithLoss, nn.Dropout3d / F.dropout3d and the lazy convolutions and norms, against torch."""
import math
import warnings

import numpy as np
import pytest
import torch
from helpers import check_module

import seqlab
from seqlab import nn
from seqlab.errors import StateDictError


def _load(s, t):
    s.load_state_dict({k: v.detach().numpy() for k, v in t.state_dict().items()})


# ---- AdaptiveLogSoftmaxWithLoss -------------------------------------------------------------------------------
ASM_CONFIGS = [  # (in_features, n_classes, cutoffs, div_value, head_bias)
    (8, 10, [3, 6], 2.0, False),
    (16, 20, [5], 4.0, True),
    (12, 30, [4, 10, 20], 1.5, False),
]


def _asm_pair(cfg):
    torch.manual_seed(0)
    return nn.AdaptiveLogSoftmaxWithLoss(*cfg), torch.nn.AdaptiveLogSoftmaxWithLoss(*cfg)


@pytest.mark.parametrize("cfg", ASM_CONFIGS)
def test_asm_parameters_and_repr_are_torchs(cfg):
    s, t = _asm_pair(cfg)
    assert repr(s) == repr(t)
    assert [(k, v.shape) for k, v in s.state_dict().items()] == \
        [(k, tuple(v.shape)) for k, v in t.state_dict().items()]
    for name in ("in_features", "n_classes", "cutoffs", "div_value", "head_bias", "shortlist_size", "n_clusters",
                 "head_size"):
        assert getattr(s, name) == getattr(t, name), name


def _targets(cfg, n, seed):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, cfg[1], size=n)
    y[: len(cfg[2]) + 1] = [0] + list(cfg[2])  # every cluster gets a row
    return y


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("cfg", ASM_CONFIGS)
def test_asm_output_loss_and_gradients_equal_torch(cfg, dtype):
    s, t = _asm_pair(cfg)
    check_module(s, t, [(9, cfg[0]), _targets(cfg, 9, 1)], dtype=dtype)


@pytest.mark.parametrize("target", [0, 3, 9])
def test_asm_unbatched_input_equals_torch(target):
    s, t = _asm_pair(ASM_CONFIGS[0])
    check_module(s, t, [(8,), np.array(target)])


def test_asm_empty_clusters_and_shortlist_only_targets():
    s, t = _asm_pair(ASM_CONFIGS[2])
    check_module(s, t, [(5, 12), np.array([0, 1, 2, 3, 1])])  # no tail used
    check_module(s, t, [(3, 12), np.array([25, 29, 20])])     # one tail only


def test_asm_returns_torchs_namedtuple():
    s, _ = _asm_pair(ASM_CONFIGS[0])
    out = s(seqlab.randn(4, 8), seqlab.tensor([0, 1, 5, 9]))
    assert type(out).__name__ == "_ASMoutput" and out._fields == ("output", "loss")
    assert out.output.shape == (4,) and out.loss.shape == ()
    np.testing.assert_allclose(out.loss.item(), -out.output.numpy().mean(), rtol=1e-6)


@pytest.mark.parametrize("cfg", ASM_CONFIGS)
def test_asm_log_prob_equals_torch_and_is_a_distribution(cfg):
    s, t = _asm_pair(cfg)
    s.double()
    t.double()
    _load(s, t)
    x = np.random.default_rng(3).normal(size=(7, cfg[0]))
    xs = seqlab.tensor(x, requires_grad=True)
    xt = torch.tensor(x, requires_grad=True)
    ls, lt = s.log_prob(xs), t.log_prob(xt)
    np.testing.assert_allclose(ls.numpy(), lt.detach().numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(np.exp(ls.numpy()).sum(1), 1.0, rtol=1e-10)
    w = np.random.default_rng(4).normal(size=ls.shape)
    (ls * seqlab.tensor(w)).sum().backward()
    (lt * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(xs.grad, xt.grad.numpy(), rtol=1e-9, atol=1e-12)
    for n, p in s.named_parameters():
        np.testing.assert_allclose(p.grad, dict(t.named_parameters())[n].grad.numpy(), rtol=1e-9, atol=1e-12,
                                   err_msg=n)
    # forward's output is the target's column of log_prob
    y = _targets(cfg, 7, 5)
    out = s(seqlab.tensor(x), seqlab.tensor(y)).output.numpy()
    np.testing.assert_allclose(out, ls.numpy()[np.arange(7), y], rtol=1e-10)


@pytest.mark.parametrize("cfg", ASM_CONFIGS)
def test_asm_predict_equals_torch_and_log_prob_argmax(cfg):
    s, t = _asm_pair(cfg)
    _load(s, t)
    # large inputs spread the head's argmax over shortlist words and clusters
    x = np.random.default_rng(6).normal(size=(64, cfg[0])).astype(np.float32) * 5
    ps = s.predict(seqlab.tensor(x))
    assert ps.dtype == np.int64 and ps.shape == (64,)
    np.testing.assert_array_equal(ps.numpy(), t.predict(torch.tensor(x)).numpy())
    np.testing.assert_array_equal(ps.numpy(), s.log_prob(seqlab.tensor(x)).numpy().argmax(1))
    assert s.predict(seqlab.tensor(x[5])).item() == ps.numpy()[5]  # unbatched: a 0-d result
    assert s.log_prob(seqlab.tensor(x[5])).shape == (cfg[1],)


@pytest.mark.parametrize("cutoffs", [[], [6, 3], [3, 10], [3, 3], [0, 3], [2.5]])
def test_asm_bad_cutoffs_are_torchs_value_errors(cutoffs):
    with pytest.raises(ValueError) as t_err:
        torch.nn.AdaptiveLogSoftmaxWithLoss(8, 10, cutoffs)
    with pytest.raises(ValueError, match="cutoffs should be a sequence") as s_err:
        nn.AdaptiveLogSoftmaxWithLoss(8, 10, cutoffs)
    assert str(s_err.value).startswith(str(t_err.value))


@pytest.mark.parametrize("x_shape, y, match", [
    ((5, 8), [0, 1, 10, 2, -1], r"Target values should be in \[0, 9\], but values in range \[-1, 10\]"),
    ((5, 8), [0, 1, 2, 3], "same size in the batch dimension"),
    ((8,), [0, 1, 2, 3, 4], "same size in the batch dimension"),
    ((5, 1, 8), [0, 1, 2, 3, 4], "1D target tensor expects 2D input"),
    ((5, 8), 3, "0D target tensor expects 1D input"),
    ((1, 8), [[3]], "multi-target not supported"),
])
def test_asm_bad_targets_are_torchs_runtime_errors(x_shape, y, match):
    s, t = _asm_pair(ASM_CONFIGS[0])
    with pytest.raises(RuntimeError):
        t(torch.randn(*x_shape), torch.tensor(y))
    with pytest.raises(RuntimeError, match=match):  # seqlab's ArgumentError: a ValueError and a RuntimeError
        s(seqlab.randn(*x_shape), seqlab.tensor(y))
    with pytest.raises(ValueError, match=match):
        s(seqlab.randn(*x_shape), seqlab.tensor(y))


def test_asm_float_targets_and_too_small_hidden_sizes_are_refused():
    s, _ = _asm_pair(ASM_CONFIGS[0])
    with pytest.raises(TypeError, match="integer class ids"):
        s(seqlab.randn(2, 8), seqlab.tensor([1.0, 2.0]))
    with pytest.raises(ValueError, match="div_value=16.0 leaves tail cluster 0 no hidden dims"):
        nn.AdaptiveLogSoftmaxWithLoss(8, 10, [3], div_value=16.0)  # torch builds a Linear(8, 0)
    with pytest.raises(ValueError, match="log_prob expects input"):
        s.log_prob(seqlab.randn(2, 3, 8))


def test_asm_trains_like_torch_with_sgd():
    s, t = _asm_pair(ASM_CONFIGS[0])
    s.double()
    t.double()
    _load(s, t)
    so, to = seqlab.optim.SGD(s.parameters(), lr=0.5), torch.optim.SGD(t.parameters(), lr=0.5)
    rng = np.random.default_rng(8)
    x, y = rng.normal(size=(16, 8)), rng.integers(0, 10, size=16)
    for _ in range(3):
        so.zero_grad()
        to.zero_grad()
        s(seqlab.tensor(x), seqlab.tensor(y)).loss.backward()
        t(torch.tensor(x), torch.tensor(y)).loss.backward()
        so.step()
        to.step()
    for k, v in t.state_dict().items():
        np.testing.assert_allclose(s.state_dict()[k], v.numpy(), rtol=1e-9, atol=1e-12, err_msg=k)


# ---- Dropout3d ------------------------------------------------------------------------------------------------
def test_dropout3d_zeroes_whole_channels_at_rate_p_and_scales_the_rest():
    p = 0.3
    x = seqlab.ones(40, 50, 2, 3, 2)
    y = nn.Dropout3d(p)(x).numpy()
    per_channel = y.reshape(40, 50, -1)
    assert np.all((per_channel == 0) | np.isclose(per_channel, 1 / (1 - p)))
    assert np.all(per_channel.min(-1) == per_channel.max(-1))  # one draw per (sample, channel)
    assert abs((per_channel[..., 0] == 0).mean() - p) < 0.04  # 2000 channels
    assert abs(y.mean() - 1.0) < 0.06


def test_dropout3d_gradient_is_the_mask():
    x = seqlab.randn(3, 4, 2, 2, 2, requires_grad=True)
    y = nn.Dropout3d(0.5)(x)
    y.sum().backward()
    np.testing.assert_allclose(x.grad, y.numpy() / x.numpy())


def test_dropout3d_4d_input_is_one_unbatched_sample_without_warning():
    x = seqlab.ones(200, 2, 2, 2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        y = seqlab.functional.dropout3d(x, 0.5).numpy()
        nn.Dropout3d()(seqlab.ones(2, 3, 2, 2, 2))
    assert y.shape == (200, 2, 2, 2)
    flat = y.reshape(200, -1)
    assert np.all(flat.min(-1) == flat.max(-1)) and 0 < (flat[:, 0] == 0).sum() < 200


@pytest.mark.parametrize("shape", [(3, 4, 5), (6, 4), (2, 3, 4, 5, 6, 2)])
def test_dropout3d_other_ranks_warn_as_torch_and_read_dim_0_as_channels(shape):
    with pytest.warns(UserWarning) as t_rec:
        t = torch.nn.functional.dropout3d(torch.ones(shape), 0.5)
    with pytest.warns(UserWarning) as s_rec:
        s = seqlab.functional.dropout3d(seqlab.ones(*shape), 0.5)
    assert str(s_rec[0].message) == str(t_rec[0].message)
    assert s.shape == tuple(t.shape)
    flat = s.numpy().reshape(shape[0], -1)
    assert np.all(flat.min(-1) == flat.max(-1))


def test_dropout3d_eval_p0_p1_repr_and_bad_p():
    x = seqlab.randn(2, 3, 2, 2, 2)
    d = nn.Dropout3d(0.4)
    assert repr(d) == repr(torch.nn.Dropout3d(0.4)) == "Dropout3d(p=0.4, inplace=False)"
    np.testing.assert_array_equal(d.eval()(x).numpy(), x.numpy())
    np.testing.assert_array_equal(seqlab.functional.dropout3d(x, 0.0).numpy(), x.numpy())
    assert not seqlab.functional.dropout3d(x, 1.0).numpy().any()
    np.testing.assert_array_equal(seqlab.nn.functional.dropout3d(x, 0.5, training=False).numpy(), x.numpy())
    with pytest.raises(ValueError, match="between 0 and 1"):
        nn.Dropout3d(1.5)


def test_dropout3d_is_reproducible_under_manual_seed():
    x = seqlab.ones(8, 16, 1, 1, 1)
    seqlab.manual_seed(5)
    a = nn.Dropout3d()(x).numpy()
    seqlab.manual_seed(5)
    b = nn.Dropout3d()(x).numpy()
    np.testing.assert_array_equal(a, b)


# ---- lazy convolutions and norms ------------------------------------------------------------------------------
LAZY_CASES = [  # (name, args, kwargs, input shape, eager name)
    ("LazyConv1d", (4, 3), {}, (2, 3, 8), "Conv1d"),
    ("LazyConv1d", (4, 3), {"stride": 2, "padding": 1, "bias": False}, (3, 8), "Conv1d"),
    ("LazyConv2d", (4, 3), {"groups": 2, "padding": 1}, (2, 6, 5, 5), "Conv2d"),
    ("LazyConv2d", (5, (3, 2)), {"dilation": 2, "padding_mode": "reflect", "padding": 2}, (2, 3, 7, 6), "Conv2d"),
    ("LazyConvTranspose1d", (4, 3), {"stride": 2, "output_padding": 1}, (2, 3, 6), "ConvTranspose1d"),
    ("LazyConvTranspose2d", (4, 3), {"groups": 2, "bias": False}, (6, 4, 4), "ConvTranspose2d"),
    ("LazyBatchNorm1d", (), {}, (4, 3), "BatchNorm1d"),
    ("LazyBatchNorm1d", (), {"affine": False}, (4, 3, 5), "BatchNorm1d"),
    ("LazyBatchNorm2d", (), {"momentum": None}, (4, 3, 2, 2), "BatchNorm2d"),
    ("LazyBatchNorm3d", (), {"track_running_stats": False, "bias": False}, (2, 3, 2, 2, 2), "BatchNorm3d"),
    ("LazyInstanceNorm1d", (), {}, (2, 3, 5), "InstanceNorm1d"),
    ("LazyInstanceNorm2d", (), {"affine": False}, (2, 3, 4, 4), "InstanceNorm2d"),
    ("LazyInstanceNorm3d", (), {"track_running_stats": False}, (2, 3, 2, 3, 2), "InstanceNorm3d"),
]
IDS = [f"{c[0]}-{i}" for i, c in enumerate(LAZY_CASES)]


def _lazy_pair(name, args, kwargs):
    return getattr(nn, name)(*args, **kwargs), getattr(torch.nn, name)(*args, **kwargs)


@pytest.mark.parametrize("name, args, kwargs, shape, eager", LAZY_CASES, ids=IDS)
def test_lazy_repr_keys_and_class_before_and_after_the_first_call(name, args, kwargs, shape, eager):
    s, t = _lazy_pair(name, args, kwargs)
    assert repr(s) == repr(t)
    assert list(s.state_dict()) == list(t.state_dict())
    assert s.has_uninitialized_params() and isinstance(s, getattr(nn, eager))
    s(seqlab.randn(*shape))
    t(torch.randn(*shape))
    assert type(s) is getattr(nn, eager) and type(t) is getattr(torch.nn, eager)
    assert repr(s) == repr(t)
    assert [(k, v.shape) for k, v in s.state_dict().items()] == \
        [(k, tuple(v.shape)) for k, v in t.state_dict().items()]


@pytest.mark.parametrize("name, args, kwargs, shape, eager", LAZY_CASES, ids=IDS)
def test_lazy_after_materialising_outputs_and_grads_equal_torch(name, args, kwargs, shape, eager):
    s, t = _lazy_pair(name, args, kwargs)
    s(seqlab.randn(*shape))
    t(torch.randn(*shape))
    check_module(s, t, [shape])


@pytest.mark.parametrize("name, args, kwargs, shape, eager", LAZY_CASES[:6], ids=IDS[:6])
def test_lazy_conv_init_is_the_eager_layers_drawn_at_the_first_call(name, args, kwargs, shape, eager):
    s = getattr(nn, name)(*args, **kwargs)
    x = seqlab.randn(*shape)
    seqlab.manual_seed(3)  # after construction: the draw happens at the forward
    s(x)
    in_channels = shape[1] if len(shape) == s._n + 2 else shape[0]
    seqlab.manual_seed(3)
    ref = getattr(nn, eager)(in_channels, *args, **kwargs)
    for k, v in ref.state_dict().items():
        np.testing.assert_array_equal(s.state_dict()[k], v, err_msg=k)
    fan_in = s.weight.shape[1] * math.prod(s.kernel_size)  # torch's bounds: U(±1/√fan_in) for weight and bias
    assert np.abs(s.weight.numpy()).max() <= 1 / math.sqrt(fan_in)
    assert s.weight.numpy().std() > 0.2 / math.sqrt(fan_in)
    if s.bias is not None:
        assert np.abs(s.bias.numpy()).max() <= 1 / math.sqrt(fan_in)


@pytest.mark.parametrize("name, args, kwargs, shape, eager", LAZY_CASES[6:], ids=IDS[6:])
def test_lazy_norm_init_is_ones_zeros_and_fresh_statistics(name, args, kwargs, shape, eager):
    s = getattr(nn, name)(*args, **kwargs)
    s.eval()  # eval: a forward that leaves the statistics as initialised (where they are kept)
    s(seqlab.randn(*shape))
    sd = s.state_dict()
    for k, fill in (("weight", 1), ("bias", 0), ("running_mean", 0), ("running_var", 1)):
        if k in sd:
            np.testing.assert_array_equal(sd[k], np.full(3, fill, dtype=sd[k].dtype), err_msg=k)
    assert s.num_features == 3


@pytest.mark.parametrize("name, args, kwargs, shape, eager", LAZY_CASES, ids=IDS)
def test_lazy_loads_a_torch_state_dict_before_the_first_call(name, args, kwargs, shape, eager):
    s = getattr(nn, name)(*args, **kwargs)
    in_channels = 3 if eager.startswith(("Batch", "Instance")) else (shape[1] if len(shape) == s._n + 2 else shape[0])
    if eager.startswith(("Batch", "Instance")):
        t = getattr(torch.nn, eager)(3, **{"affine": True, "track_running_stats": True, **kwargs})
    else:
        t = getattr(torch.nn, eager)(in_channels, *args, **kwargs)
    with torch.no_grad():
        for v in t.state_dict().values():
            if v.is_floating_point():
                v.uniform_(0.5, 1.5)
    s.load_state_dict({k: v.numpy() for k, v in t.state_dict().items()})
    assert type(s) is getattr(nn, eager) and repr(s) == repr(t)
    s.eval()
    t.eval()
    x = np.random.default_rng(0).normal(size=shape).astype(np.float32)
    np.testing.assert_allclose(s(seqlab.tensor(x)).numpy(), t(torch.tensor(x)).detach().numpy(), rtol=1e-5,
                               atol=1e-5)


def test_lazy_checkpoint_that_does_not_fit_is_named_in_the_error():
    s = nn.LazyConv2d(4, 3)
    with pytest.raises(StateDictError, match=r"weight: checkpoint \(5, 2, 3, 3\) vs model \(0,\)"):
        s.load_state_dict(torch.nn.Conv2d(2, 5, 3).state_dict())
    assert type(s) is nn.LazyConv2d
    b = nn.LazyBatchNorm1d()
    with pytest.raises(StateDictError, match="missing keys"):
        b.load_state_dict({})
    assert type(b) is nn.LazyBatchNorm1d


def test_lazy_bad_first_inputs_are_torchs_errors_and_leave_it_lazy():
    c = nn.LazyConv1d(4, 3, groups=2)
    with pytest.raises(RuntimeError, match=r"Expected 2D \(unbatched\) or 3D \(batched\) input to LazyConv1d"):
        c(seqlab.randn(2, 4, 3, 8))
    with pytest.raises(ValueError, match="in_channels must be divisible by groups"):
        c(seqlab.randn(2, 3, 8))
    with pytest.raises(TypeError, match="floating-point"):
        c(seqlab.tensor(np.ones((2, 4, 8), dtype=np.int64)))
    assert type(c) is nn.LazyConv1d and c.in_channels == 0 and c.weight.shape == (0,)
    assert c(seqlab.randn(2, 4, 8)).shape == (2, 4, 6)
    b = nn.LazyBatchNorm2d()
    with pytest.raises(ValueError, match=r"expected 4D input \(got 3D input\)"):
        b(seqlab.randn(2, 3, 4))
    assert type(b) is nn.LazyBatchNorm2d


def test_lazy_conv_transpose_forward_takes_output_size():
    s, t = _lazy_pair("LazyConvTranspose1d", (4, 3), {"stride": 2})
    x = np.random.default_rng(0).normal(size=(2, 3, 5)).astype(np.float32)
    assert s(seqlab.tensor(x), output_size=[12]).shape == tuple(t(torch.tensor(x), output_size=[12]).shape)


def test_lazy_instance_norm_unbatched_input_reads_dim_0():
    s = nn.LazyInstanceNorm1d()
    y = s(seqlab.randn(3, 5))  # torch 2.13 reads dim 1 here and then refuses the input
    assert s.num_features == 3 and y.shape == (3, 5) and type(s) is nn.InstanceNorm1d


def test_lazy_dtype_cast_before_the_first_call_is_kept_and_optimizer_sees_real_weights():
    s = nn.Sequential(nn.LazyConv1d(4, 3), nn.LazyBatchNorm1d(), nn.ReLU()).double()
    opt = seqlab.optim.SGD(s.parameters(), lr=0.1)
    s(seqlab.randn(2, 3, 8).double()).sum().backward()
    assert s[0].weight.dtype == np.float64 and s[1].running_mean.dtype == np.float64
    before = s[0].weight.numpy().copy()
    opt.step()
    assert opt.param_groups[0]["params"][0] is s[0].weight and not np.array_equal(before, s[0].weight.numpy())


def test_lazy_norm_with_nothing_to_size_still_records_its_channels():
    # torch keeps num_features 0 here (no placeholders to materialise) and warns on every call after; seqlab
    # records the channels, so the repr names them and no warning follows
    s = nn.LazyInstanceNorm2d(affine=False, track_running_stats=False)
    assert repr(s) == repr(torch.nn.LazyInstanceNorm2d(affine=False, track_running_stats=False))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        s(seqlab.randn(2, 3, 4, 4))
        s(seqlab.randn(2, 3, 4, 4))
    assert type(s) is nn.InstanceNorm2d and s.num_features == 3 and not s.state_dict()
