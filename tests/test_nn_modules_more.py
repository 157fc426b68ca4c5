"""More nn modules (activation_more, loss_more, misc_layers): torch's reprs and state dicts, outputs and
gradients against torch's modules on the same weights, channel dropout's statistics, and the device path."""
import warnings

import numpy as np
import pytest
import torch
import torch.nn as tnn
from helpers import check_module, const

import seqlab
from seqlab import backend, nn

RNG = np.random.default_rng(0)


# ---- reprs: torch's, for the same constructor call --------------------------------------------------
SAME_REPR = [
    "ELU()", "ELU(0.5, True)", "SELU()", "SELU(inplace=True)", "CELU(2.0)", "Softplus()", "Softplus(2, 10)",
    "Softsign()", "Hardtanh()", "Hardtanh(-2, 3, True)", "ReLU6()", "ReLU6(True)", "Hardsigmoid(True)",
    "Hardswish()", "Mish()", "LogSigmoid()", "Softmin()", "Softmin(1)", "GLU()", "GLU(1)", "Tanhshrink()",
    "Softshrink()", "Hardshrink(0.3)", "PReLU()", "PReLU(3, 0.1)", "RReLU()", "RReLU(0.1, 0.3, True)",
    "Unflatten(1, (2, 5))", "Unflatten(-1, [2, 5])", "CosineSimilarity()", "PairwiseDistance(3)",
    "Bilinear(2, 3, 4)", "Bilinear(2, 3, 4, bias=False)", "ZeroPad1d(2)", "ZeroPad1d((1, 2))",
    "ConstantPad1d(2, 3.5)", "ZeroPad2d(1)", "ZeroPad2d((1, 2, 3, 4))", "ConstantPad2d((1, 2, 3, 4), 0)",
    "ZeroPad3d(1)", "ConstantPad3d(1, 1.5)", "ReflectionPad1d(2)", "ReflectionPad2d((1, 0, 2, 1))",
    "ReplicationPad1d((0, 3))", "ReplicationPad2d(1)", "Dropout1d()", "Dropout2d(0.2, True)", "AlphaDropout(0.1)",
    "FeatureAlphaDropout()",
    "L1Loss()", "SmoothL1Loss(beta=0.5)", "HuberLoss(delta=2.0)", "BCELoss()", "KLDivLoss(log_target=True)",
    "PoissonNLLLoss()", "GaussianNLLLoss()", "MarginRankingLoss(0.5)", "HingeEmbeddingLoss()",
    "CosineEmbeddingLoss()", "TripletMarginLoss()", "SoftMarginLoss()", "MultiLabelSoftMarginLoss()",
    "LayerNorm(8)", "LayerNorm(8, bias=False)", "LayerNorm((4, 8), elementwise_affine=False)",  # an audit: bias=
]


@pytest.mark.parametrize("call", SAME_REPR)
def test_repr_is_torchs(call):
    assert repr(eval("nn." + call)) == repr(eval("tnn." + call))


def test_loss_reprs_show_a_reduction_other_than_mean_as_seqlabs_losses_do():
    """torch's losses print no options; seqlab's print the reduction when it is not 'mean' (nn.MSELoss too)."""
    assert repr(nn.L1Loss(reduction="sum")) == "L1Loss(reduction='sum')" == repr(nn.MSELoss(reduction="sum")) \
        .replace("MSE", "L1")
    assert repr(nn.KLDivLoss(reduction="batchmean")) == "KLDivLoss(reduction='batchmean')"


# ---- activation modules against torch's -------------------------------------------------------------
@pytest.mark.parametrize("call", ["ELU(0.7)", "SELU()", "CELU(1.5)", "Softplus(2.0, 5.0)", "Softsign()",
                                  "Hardtanh(-0.5, 2.0)", "ReLU6()", "Hardswish()", "Mish()", "LogSigmoid()",
                                  "Softmin(1)", "GLU(-1)", "Tanhshrink()", "Softshrink(0.7)", "Hardshrink(0.7)",
                                  "RReLU()", "PReLU()"])
def test_activation_modules_match_torch(call):
    seq, tor = eval("nn." + call), eval("tnn." + call)
    seq.eval(), tor.eval()                                                   # RReLU: the mean slope
    check_module(seq, tor, [np.random.default_rng(1).standard_normal((3, 4, 6)) * 3])


def test_hardtanh_takes_torchs_deprecated_names():
    with pytest.warns(FutureWarning, match="`min_value` is deprecated"):
        m = nn.Hardtanh(min_value=-2.0)
    assert (m.min_val, m.max_val) == (-2.0, 1.0)
    with pytest.raises(ValueError, match="max_val > min_val, got min_val=1.0 and max_val=1.0"):
        nn.Hardtanh(1.0, 1.0)


def test_prelu_loads_torchs_state_dict_and_learns_per_channel():
    tor = tnn.PReLU(3, 0.1)
    with torch.no_grad():
        tor.weight.copy_(torch.tensor([0.1, -0.2, 0.3]))
    seq = nn.PReLU(3)
    assert list(seq.state_dict()) == ["weight"] and seq.weight.shape == (3,)
    np.testing.assert_array_equal(seq.weight.numpy(), 0.25)
    check_module(seq, tor, [(2, 3, 5)])
    check_module(nn.PReLU(), tnn.PReLU(), [(2, 3)], dtype="float32")
    assert nn.PReLU(2, dtype=np.float64).weight.dtype == np.float64
    with pytest.raises(ValueError, match="channel size = 4"):
        nn.PReLU(3)(seqlab.zeros(2, 4))


def test_softmin_module_warns_at_the_callers_line():
    with pytest.warns(UserWarning, match="Implicit dimension choice for softmin") as record:
        nn.Softmin()(seqlab.randn(2, 3))
    assert record[0].filename == __file__


# ---- Bilinear ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("batch", [(5,), (2, 3), ()], ids=["batched", "2-batch-dims", "unbatched"])
def test_bilinear_matches_torch_on_its_weights(bias, batch):
    torch.manual_seed(0)
    check_module(nn.Bilinear(3, 4, 2, bias=bias), tnn.Bilinear(3, 4, 2, bias=bias), [batch + (3,), batch + (4,)])


def test_bilinear_init_is_torchs_distribution():
    seqlab.manual_seed(0)
    m = nn.Bilinear(16, 3, 40)
    assert m.weight.shape == (40, 16, 3) and m.bias.shape == (40,)
    assert list(m.state_dict()) == ["weight", "bias"]
    w = m.weight.numpy()
    assert np.abs(w).max() <= 0.25 and np.abs(w).max() > 0.24                # U(−1/√16, 1/√16)
    assert abs(w.std() - 0.25 / np.sqrt(3)) < 0.01 and abs(w.mean()) < 0.01
    assert np.abs(m.bias.numpy()).max() <= 0.25 and m.weight.dtype == np.float32


@pytest.mark.parametrize("shapes, match", [
    ([(5, 3), (4, 4)], r"input batch dimensions do not match: got \(5, 3\) and \(4, 4\)"),
    ([(5, 2), (5, 4)], r"input1 size does not match weight size: got 2 but expected 3"),
    ([(5, 3), (5, 5)], r"input2 size does not match weight size: got 5 but expected 4"),
])
def test_bilinear_errors_name_the_shapes(shapes, match):
    with pytest.raises(ValueError, match=match):
        nn.Bilinear(3, 4, 2)(*(seqlab.randn(*s) for s in shapes))


# ---- Unflatten, distances, padding ------------------------------------------------------------------------
@pytest.mark.parametrize("dim, sizes, shape", [(1, (2, 5), (3, 10, 4)), (-1, [2, -1], (3, 10)),
                                               (0, (1, 3, 1), (3, 2))])
def test_unflatten_matches_torch(dim, sizes, shape):
    check_module(nn.Unflatten(dim, sizes), tnn.Unflatten(dim, sizes), [shape])


def test_unflatten_errors():
    with pytest.raises(ValueError, match=r"Provided sizes \[2, 3\] don't multiply up to the size of dim 1 \(7\)"):
        nn.Unflatten(1, (2, 3))(seqlab.zeros(2, 7))
    with pytest.raises(TypeError, match="found element of type float at pos 1"):
        nn.Unflatten(1, (2, 3.0))
    with pytest.raises(TypeError, match="unflattened_size must be tuple of ints"):
        nn.Unflatten(1, 6)


@pytest.mark.parametrize("call, shapes", [("CosineSimilarity()", [(4, 5), (4, 5)]),
                                          ("CosineSimilarity(-1, 1e-6)", [(2, 3, 5), (3, 5)]),
                                          ("PairwiseDistance()", [(4, 5), (4, 5)]),
                                          ("PairwiseDistance(1.0, 1e-3, True)", [(4, 5), (5,)])])
def test_distance_modules_match_torch(call, shapes):
    check_module(eval("nn." + call), eval("tnn." + call), shapes)


@pytest.mark.parametrize("call, shape", [
    ("ZeroPad1d((1, 2))", (2, 3, 4)), ("ConstantPad1d(2, -1.5)", (3, 4)), ("ConstantPad1d((-1, 2), 0.5)", (2, 3, 4)),
    ("ZeroPad2d((1, 0, 2, 3))", (2, 3, 4, 5)), ("ConstantPad2d(1, 2.0)", (3, 4, 5)), ("ZeroPad3d(1)", (1, 2, 3, 3, 2)),
    ("ConstantPad3d((1, 0, 0, 1, 2, 0), 3.0)", (2, 2, 3, 3)), ("ReflectionPad1d(2)", (2, 3, 4)),
    ("ReflectionPad2d((1, 2, 0, 1))", (2, 3, 4, 5)), ("ReplicationPad1d((0, 3))", (3, 4)),
    ("ReplicationPad2d(2)", (1, 2, 3, 3)),
])
def test_padding_modules_match_torch(call, shape):
    check_module(eval("nn." + call), eval("tnn." + call), [shape])


# ---- loss modules against torch's ---------------------------------------------------------------------
def _labels(*shape):
    return const(np.where(RNG.random(shape) < 0.5, -1.0, 1.0))


@pytest.mark.parametrize("call, inputs", [
    ("L1Loss(reduction='sum')", [(3, 4), (3, 4)]),
    ("SmoothL1Loss(beta=0.5)", [(3, 4), (3, 4)]),
    ("HuberLoss(reduction='none', delta=0.5)", [(3, 4), (3, 4)]),
    ("BCELoss()", [RNG.uniform(0.05, 0.95, (3, 4)), RNG.uniform(0, 1, (3, 4))]),
    ("KLDivLoss(reduction='batchmean', log_target=True)", [(3, 4), np.log(RNG.dirichlet(np.ones(4), 3))]),
    ("PoissonNLLLoss(full=True)", [(3, 4), const(RNG.poisson(3.0, (3, 4)).astype(float))]),
    ("GaussianNLLLoss(full=True)", [(3, 4), (3, 4), RNG.uniform(0.5, 2, (3, 1))]),
    ("MarginRankingLoss(0.2)", [(6,), (6,), _labels(6)]),
    ("HingeEmbeddingLoss(0.5, reduction='sum')", [np.abs(RNG.standard_normal(6)), _labels(6)]),
    ("CosineEmbeddingLoss(0.1)", [(5, 3), (5, 3), _labels(5)]),
    ("TripletMarginLoss(2.0, 1.0, swap=True)", [(5, 3), (5, 3), (5, 3)]),
    ("SoftMarginLoss(reduction='none')", [(3, 4), _labels(3, 4)]),
    ("MultiLabelSoftMarginLoss()", [(3, 4), const((RNG.random((3, 4)) < 0.5).astype(float))]),
])
def test_loss_modules_match_torch(call, inputs):
    check_module(eval("nn." + call), eval("tnn." + call), inputs)


@pytest.mark.parametrize("cls", ["BCELoss", "MultiLabelSoftMarginLoss"])
def test_class_weight_is_a_buffer_under_torchs_name(cls):
    w = RNG.uniform(0.5, 2.0, 4)
    seq, tor = getattr(nn, cls)(weight=w), getattr(tnn, cls)(weight=torch.from_numpy(w))
    assert list(seq.state_dict()) == list(tor.state_dict()) == ["weight"]
    x = RNG.uniform(0.05, 0.95, (3, 4))
    check_module(seq, tor, [x, const(RNG.uniform(0, 1, (3, 4)))])


def test_loss_modules_check_their_options_when_built():
    with pytest.raises(ValueError, match="reduction must be 'mean', 'sum' or 'none', got 'batchmean'"):
        nn.L1Loss(reduction="batchmean")
    with pytest.raises(ValueError, match="got 'avg'"):
        nn.KLDivLoss(reduction="avg")
    with pytest.raises(ValueError, match="margin must be greater than 0, got 0"):
        nn.TripletMarginLoss(margin=0)
    with pytest.raises(ValueError, match="negative values for beta"):
        nn.SmoothL1Loss(beta=-1.0)
    with pytest.raises(ValueError, match="non-positive values for delta"):
        nn.HuberLoss(delta=0.0)
    with pytest.warns(UserWarning, match="please use reduction='sum' instead"):
        assert nn.SoftMarginLoss(size_average=False).reduction == "sum"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert nn.KLDivLoss(reduce=False).reduction == tnn.KLDivLoss(reduce=False).reduction == "none"


# ---- channel dropout -----------------------------------------------------------------------------------
@pytest.mark.parametrize("cls, shape", [("Dropout1d", (40, 50, 7)), ("Dropout1d", (400, 9)),
                                        ("Dropout2d", (40, 50, 3, 4))])
def test_channel_dropout_drops_whole_channels(cls, shape):
    seqlab.manual_seed(0)
    m = getattr(nn, cls)(0.3)
    x = seqlab.tensor(RNG.uniform(1.0, 2.0, shape), requires_grad=True)     # no zeros of its own
    y = m(x)
    flat = y.numpy().reshape(shape[0] * shape[1] if len(shape) > 2 else shape[0], -1)   # one row per channel
    dropped = np.all(flat == 0, axis=1)
    kept = np.all(flat != 0, axis=1)
    assert np.all(dropped | kept)                                           # a channel is dropped whole or kept
    assert abs(dropped.mean() - 0.3) < 0.03
    np.testing.assert_allclose(y.numpy()[y.numpy() != 0], x.numpy()[y.numpy() != 0] / 0.7)
    y.sum().backward()
    np.testing.assert_allclose(x.grad, (y.numpy() != 0) / 0.7)
    seqlab.manual_seed(0)
    np.testing.assert_array_equal(getattr(nn, cls)(0.3)(x).numpy(), y.numpy())   # seeded by seqlab.manual_seed
    m.eval()
    assert m(x) is x


def test_channel_dropout_rank_rules_are_torchs():
    x = seqlab.ones(2, 3, 4)
    with pytest.raises(ValueError, match="dropout1d: Expected 2D or 3D input, but received a 4D input"):
        seqlab.functional.dropout1d(seqlab.ones(2, 3, 4, 5))
    with pytest.warns(UserWarning, match="Received a 3D input to dropout2d"):
        y = seqlab.functional.dropout2d(x, 0.5)
    assert y.shape == x.shape
    with pytest.warns(UserWarning, match="Received a 5-D input to dropout2d, which is deprecated"):
        seqlab.functional.dropout2d(seqlab.ones(2, 3, 4, 5, 6))
    with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1, but got 1.5"):
        nn.Dropout2d(1.5)
    np.testing.assert_array_equal(seqlab.functional.dropout2d(seqlab.ones(2, 3, 1, 1), 1.0).numpy(), 0.0)


SATURATION = 1.0507009873554804934193349852946 * 1.6732632423543772848170429916717   # SELU's λα


@pytest.mark.parametrize("cls", ["AlphaDropout", "FeatureAlphaDropout"])
def test_alpha_dropout_keeps_mean_and_variance(cls):
    """Klambauer et al. 2017: on N(0, 1) inputs the output keeps mean 0 and variance 1; a dropped unit
    becomes −λα and everything is mapped by a·x + b, as torch's formula."""
    p = 0.2
    seqlab.manual_seed(0)
    m = getattr(nn, cls)(p)
    x = seqlab.tensor(RNG.standard_normal((200, 100, 10)), requires_grad=True)
    y = m(x)
    assert abs(y.numpy().mean()) < 0.01 and abs(y.numpy().std() - 1) < 0.01
    a = 1 / np.sqrt((SATURATION ** 2 * p + 1) * (1 - p))
    b = a * SATURATION * p
    kept = np.isclose(y.numpy(), a * x.numpy() + b, rtol=0, atol=1e-12)
    np.testing.assert_allclose(y.numpy()[~kept], -a * SATURATION + b, rtol=1e-12)
    assert abs((~kept).mean() - p) < 0.01
    if cls == "FeatureAlphaDropout":
        assert np.all(kept.all(-1) | (~kept).all(-1))                       # whole channels
    y.sum().backward()
    np.testing.assert_allclose(x.grad, kept * a)
    m.eval()
    assert m(x) is x
    assert seqlab.functional.alpha_dropout(x, p) is x                        # torch's default: training=False


# ---- the device path: CuPy's stand-in (and CuPy itself where a GPU is seen) ---------------------------

def test_modules_on_the_device_as_on_the_host(cuda):
    def make():
        seqlab.manual_seed(0)
        return nn.Sequential(nn.ZeroPad1d((0, 2)), nn.Unflatten(-1, (2, 3)), nn.Flatten(-2), nn.PReLU(4),
                             nn.ELU(), nn.Hardswish(), nn.GLU(), nn.Softplus())

    x = RNG.standard_normal((3, 4, 4)).astype(np.float32)
    y2 = RNG.standard_normal((3, 5)).astype(np.float32)
    results = []
    for device in ("cpu", "cuda"):
        m, bil = make().to(device), nn.Bilinear(4, 5, 2).to(device)
        xs = seqlab.Tensor(backend.to_device(x, device), requires_grad=True)
        h = m(xs)[:, :, 0]                                                   # (3, 4)
        out = bil(h, seqlab.Tensor(backend.to_device(y2, device)))
        assert out.device == device
        loss = nn.BCELoss()(out.sigmoid(), np.ones((3, 2), dtype=np.float32))
        loss.backward()
        results.append([backend.to_numpy(a) for a in (loss.data, xs.grad, m[3].weight.grad, bil.weight.grad)])
    for a, b in zip(*results):
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6)


def test_channel_dropout_on_the_device(cuda):
    x = seqlab.Tensor(backend.to_device(np.ones((8, 16, 5), dtype=np.float32), "cuda"), requires_grad=True)
    y = nn.Dropout1d(0.5)(x)
    y.sum().backward()
    out = backend.to_numpy(y.data)
    assert y.device == "cuda" and set(np.unique(out)) <= {0.0, 2.0}
    assert np.all((out == 0).all(-1) | (out != 0).all(-1))
    np.testing.assert_array_equal(backend.to_numpy(x.grad), out)
    z = nn.AlphaDropout(0.5)(x)
    assert z.device == "cuda"


# ---- they train ----------------------------------------------------------------------------------------
def test_a_selu_net_with_alpha_dropout_and_bce_fits_xor():
    seqlab.manual_seed(0)
    rng = np.random.default_rng(0)
    x = rng.uniform(-1, 1, (256, 2)).astype(np.float32)
    y = ((x[:, 0] > 0) ^ (x[:, 1] > 0)).astype(np.float32)[:, None]
    model = nn.Sequential(nn.Linear(2, 32), nn.SELU(), nn.AlphaDropout(0.05), nn.Linear(32, 32), nn.Mish(),
                          nn.Linear(32, 1), nn.Sigmoid())
    opt = seqlab.optim.Adam(model.parameters(), lr=0.02)
    loss_fn = nn.BCELoss()
    for _ in range(300):
        opt.zero_grad()
        loss = loss_fn(model(seqlab.tensor(x)), y)
        loss.backward()
        opt.step()
    model.eval()
    accuracy = ((model(seqlab.tensor(x)).numpy() > 0.5) == y).mean()
    assert loss.item() < 0.2 and accuracy > 0.95
