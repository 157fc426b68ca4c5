"""Vision layers (seqlab.functional_interpolate, seqlab.functional_vision, seqlab.nn.vision) against torch: values
(float64 tight, float32), gradients (central differences and torch's backward), second derivatives where a
Function has a hand-written backward (fold/unfold), result dtypes, signatures, reprs, errors and the device path
on CuPy's stand-in."""
import inspect
import re
import warnings

import numpy as np
import pytest
import torch
import torch.nn.functional as TF
from helpers import assert_close, check_module, check_op

import seqlab
from seqlab import Tensor, backend, nn
from seqlab import functional as F

RNG = np.random.default_rng(0)


# ---- interpolate: every mode, size vs scale_factor, align_corners, non-integer scales, shrinking ---------------
INTERPOLATE = [
    ((2, 3, 5), dict(size=9)),                                                   # nearest
    ((2, 3, 5), dict(scale_factor=1.7)),
    ((2, 3, 8), dict(scale_factor=0.6)),                                         # downsampling
    ((2, 3, 8), dict(scale_factor=0.5)),                                         # every other: a slice
    ((2, 2, 3, 4), dict(scale_factor=(3, 1))),                                   # each row 3 times
    ((2, 3, 5), dict(scale_factor=2.5, recompute_scale_factor=True)),
    ((2, 2, 4, 5), dict(size=(7, 3))),
    ((2, 2, 4, 5), dict(scale_factor=2)),                                        # doubled: i // 2
    ((2, 2, 4, 5), dict(scale_factor=(1.5, 0.7))),
    ((1, 2, 3, 4, 5), dict(size=(5, 2, 7))),
    ((1, 2, 3, 4, 5), dict(scale_factor=(2.0, 1.3, 0.5))),
    ((2, 3, 5), dict(size=8, mode="nearest-exact")),
    ((2, 2, 5, 6), dict(scale_factor=(1.7, 0.6), mode="nearest-exact")),
    ((1, 2, 3, 4, 5), dict(size=(4, 7, 3), mode="nearest-exact")),
    ((2, 3, 5), dict(size=9, mode="linear")),
    ((2, 3, 5), dict(size=9, mode="linear", align_corners=True)),
    ((2, 3, 5), dict(scale_factor=1.7, mode="linear")),                          # 1/1.7, not 5/8
    ((2, 3, 5), dict(scale_factor=1.7, mode="linear", recompute_scale_factor=True)),  # 5/8
    ((2, 3, 9), dict(scale_factor=0.4, mode="linear", align_corners=True)),
    ((2, 3, 9), dict(size=4, mode="linear")),
    ((2, 2, 4, 5), dict(size=(7, 9), mode="bilinear")),
    ((2, 2, 4, 5), dict(size=(7, 9), mode="bilinear", align_corners=True)),
    ((2, 2, 4, 5), dict(scale_factor=2, mode="bilinear")),
    ((2, 2, 6, 7), dict(scale_factor=(1.5, 0.75), mode="bilinear")),
    ((2, 2, 6, 7), dict(scale_factor=(1.5, 0.75), mode="bilinear", recompute_scale_factor=True)),
    ((2, 2, 9, 8), dict(size=(4, 3), mode="bilinear", align_corners=True)),
    ((1, 2, 5, 5), dict(scale_factor=1.1, mode="bilinear")),                      # equal sizes: copied
    ((2, 2, 4, 5), dict(size=(9, 7), mode="bicubic")),
    ((2, 2, 4, 5), dict(size=(9, 7), mode="bicubic", align_corners=True)),
    ((2, 2, 6, 7), dict(scale_factor=1.3, mode="bicubic")),
    ((2, 2, 9, 8), dict(size=(4, 5), mode="bicubic")),                            # taps clamped at the edges
    ((1, 2, 5, 10), dict(scale_factor=1.1, mode="bicubic")),                      # 5 → 5 moved by 1/1.1
    ((1, 2, 3, 4, 5), dict(size=(5, 2, 7), mode="trilinear")),
    ((1, 2, 3, 4, 5), dict(scale_factor=(2.0, 1.5, 0.6), mode="trilinear", align_corners=True)),
    ((2, 3, 11), dict(size=4, mode="area")),
    ((2, 2, 7, 8), dict(scale_factor=0.5, mode="area")),
    ((2, 2, 5, 6), dict(size=(8, 3), mode="area")),                               # overlapping windows
    ((1, 2, 5, 6, 7), dict(size=(2, 3, 4), mode="area")),
    ((1, 2, 12, 11), dict(size=(4, 5), mode="bilinear", antialias=True)),
    ((1, 2, 12, 11), dict(scale_factor=0.3, mode="bilinear", antialias=True, align_corners=True)),
    ((1, 2, 12, 11), dict(size=(5, 3), mode="bicubic", antialias=True)),
    ((1, 2, 4, 5), dict(size=(7, 8), mode="bicubic", antialias=True)),            # enlarging: no stretch
]


@pytest.mark.parametrize("shape,kwargs", INTERPOLATE, ids=lambda v: str(v) if isinstance(v, dict) else None)
def test_interpolate(shape, kwargs):
    check_op(F.interpolate, TF.interpolate, [shape], kwargs)


def test_interpolate_positional_arguments_and_uint8_nearest():
    x = RNG.standard_normal((2, 3, 5, 4))
    assert_close(F.interpolate(Tensor(x), None, (1.5, 2.0), "bilinear", True).numpy(),
                 TF.interpolate(torch.tensor(x), None, (1.5, 2.0), "bilinear", True).numpy(), 1e-12, 1e-12)
    u = RNG.integers(0, 255, (1, 2, 5, 4)).astype(np.uint8)
    y = F.interpolate(Tensor(u), scale_factor=1.6, mode="nearest-exact")
    assert y.dtype == np.uint8
    np.testing.assert_array_equal(y.numpy(), TF.interpolate(torch.tensor(u), scale_factor=1.6,
                                                             mode="nearest-exact").numpy())


@pytest.mark.parametrize("shape,kwargs", [((2, 3, 2), dict(scale_factor=1.1)), ((1, 2, 4, 5), dict(scale_factor=1.1)),
                                          ((1, 2, 5, 5), dict(scale_factor=1.1, mode="bicubic"))])
def test_equal_sizes_where_torchs_backward_disagrees_with_its_forward(shape, kwargs):
    """With a scale factor but equal sizes, torch's 1-d (and 3-d) 'nearest' and its 'bicubic' forward still read
    the moved positions (⌊i / 1.1⌋ = [0, 0] for 2 → 2), but their backward copies the gradient as if the layer
    were the identity. seqlab's values are torch's; its gradient is its forward's, held to central differences
    (docs/from-torch.md)."""
    check_op(F.interpolate, TF.interpolate, [shape], kwargs, grad=False)
    check_op(F.interpolate, None, [shape], kwargs, max_elements=40)
    x = Tensor(np.array([[[3.0, 5.0]]]), requires_grad=True)
    F.interpolate(x, scale_factor=1.1).backward(Tensor(np.array([[[1.0, 2.0]]])))
    np.testing.assert_array_equal(x.grad, [[[3.0, 0.0]]])  # torch: [[[1, 2]]]


def test_upsample_modules_and_deprecated_functions():
    x = (2, 3, 4, 5)
    check_module(nn.Upsample(scale_factor=2), torch.nn.Upsample(scale_factor=2), [x])
    check_module(nn.Upsample(size=(7, 3), mode="bicubic", align_corners=True),
                 torch.nn.Upsample(size=(7, 3), mode="bicubic", align_corners=True), [x])
    check_module(nn.Upsample(scale_factor=(1.5, 0.7), mode="bilinear", recompute_scale_factor=True),
                 torch.nn.Upsample(scale_factor=(1.5, 0.7), mode="bilinear", recompute_scale_factor=True), [x])
    check_module(nn.UpsamplingNearest2d(scale_factor=3), torch.nn.UpsamplingNearest2d(scale_factor=3), [x])
    check_module(nn.UpsamplingBilinear2d(size=(6, 9)), torch.nn.UpsamplingBilinear2d(size=(6, 9)), [x])
    check_module(nn.Upsample(size=7, mode="linear"), torch.nn.Upsample(size=7, mode="linear"), [(2, 3, 5)])
    a = RNG.standard_normal(x)
    for name, kw in (("upsample", dict(scale_factor=2, mode="bilinear")), ("upsample_nearest", dict(size=(5, 8))),
                     ("upsample_bilinear", dict(scale_factor=1.5))):
        message = f"`nn.functional.{name}` is deprecated. Use `nn.functional.interpolate` instead."
        with pytest.warns(UserWarning, match=re.escape(message)):
            y = getattr(F, name)(Tensor(a), **kw)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            assert_close(y.numpy(), getattr(TF, name)(torch.tensor(a), **kw).numpy(), 1e-12, 1e-12)


# ---- pixel and channel shuffles ---------------------------------------------------------------------------------
@pytest.mark.parametrize("fn,shape,arg", [
    ("pixel_shuffle", (2, 12, 3, 4), 2), ("pixel_shuffle", (18, 2, 3), 3), ("pixel_shuffle", (2, 2, 8, 3, 2), 2),
    ("pixel_unshuffle", (2, 3, 4, 6), 2), ("pixel_unshuffle", (2, 6, 9), 3), ("pixel_unshuffle", (1, 2, 2, 4, 6), 2),
    ("channel_shuffle", (2, 6, 3, 4), 3), ("channel_shuffle", (2, 8, 5), 2), ("channel_shuffle", (1, 6, 2, 2, 2), 2),
])
def test_shuffles(fn, shape, arg):
    check_op(getattr(F, fn), getattr(TF, fn), [shape, arg], gradcheck_=False)


def test_pixel_shuffle_round_trip_and_modules():
    x = Tensor(RNG.standard_normal((2, 3, 8, 6)))
    np.testing.assert_array_equal(F.pixel_shuffle(F.pixel_unshuffle(x, 2), 2).numpy(), x.numpy())
    np.testing.assert_array_equal(F.pixel_unshuffle(F.pixel_shuffle(x.reshape(2, 12, 4, 3), 2), 2).numpy(),
                                  x.numpy().reshape(2, 12, 4, 3))
    check_module(nn.PixelShuffle(3), torch.nn.PixelShuffle(3), [(2, 18, 2, 3)])
    check_module(nn.PixelUnshuffle(2), torch.nn.PixelUnshuffle(2), [(2, 3, 4, 6)])
    check_module(nn.ChannelShuffle(4), torch.nn.ChannelShuffle(4), [(2, 8, 3, 3)])
    ints = np.arange(48).reshape(1, 12, 2, 2)  # a reshape: any dtype, as torch
    np.testing.assert_array_equal(F.pixel_shuffle(Tensor(ints), 2).numpy(), TF.pixel_shuffle(torch.tensor(ints), 2))


# ---- unfold / fold --------------------------------------------------------------------------------------------
UNFOLD = [
    ((2, 3, 5, 6), dict(kernel_size=2)),
    ((2, 3, 7, 8), dict(kernel_size=(3, 2), dilation=(2, 1), padding=1, stride=(2, 3))),
    ((2, 2, 6, 6), dict(kernel_size=3, padding=(2, 0), stride=2)),
    ((3, 5, 4), dict(kernel_size=(2, 3), dilation=2, padding=1)),               # unbatched
]


@pytest.mark.parametrize("shape,kwargs", UNFOLD)
def test_unfold(shape, kwargs):
    check_op(F.unfold, TF.unfold, [shape], kwargs, max_elements=30)


def _blocks(size, k, d, p, s):
    return [(n + 2 * pp - dd * (kk - 1) - 1) // ss + 1 for n, kk, dd, pp, ss in zip(size, k, d, p, s)]


@pytest.mark.parametrize("channels,batch,kwargs", [
    (3, (2,), dict(output_size=(5, 6), kernel_size=2)),                          # overlapping blocks sum
    (2, (2,), dict(output_size=(7, 8), kernel_size=(3, 2), dilation=(2, 1), padding=1, stride=(2, 3))),
    (2, (), dict(output_size=6, kernel_size=3, padding=(2, 0), stride=2)),       # unbatched
    (2, (1,), dict(output_size=(5, 5), kernel_size=2, stride=3)),                # gaps: cells no block covers
])
def test_fold(channels, batch, kwargs):
    def pair(v):
        return (v, v) if isinstance(v, int) else v

    k, size = pair(kwargs["kernel_size"]), pair(kwargs["output_size"])
    geo = [pair(kwargs.get(n, dv)) for n, dv in (("dilation", 1), ("padding", 0), ("stride", 1))]
    L = int(np.prod(_blocks(size, k, *geo)))
    check_op(F.fold, TF.fold, [batch + (channels * k[0] * k[1], L)], kwargs, max_elements=30)


def test_fold_and_unfold_are_adjoint_and_fold_of_unfold_counts_the_blocks():
    x, kw = RNG.standard_normal((2, 3, 7, 6)), dict(kernel_size=3, dilation=(1, 2), padding=1, stride=(2, 1))
    cols = F.unfold(Tensor(x), **kw)
    y = RNG.standard_normal(cols.shape)
    back = F.fold(Tensor(y), (7, 6), **kw)
    assert np.isclose((cols.numpy() * y).sum(), (x * back.numpy()).sum(), rtol=1e-12)  # <Ux, y> = <x, Fy>
    twice = F.fold(cols, (7, 6), **kw)
    assert_close(twice.numpy(), TF.fold(TF.unfold(torch.tensor(x), **kw), (7, 6), **kw).numpy(), 1e-12, 1e-12)
    check_module(nn.Unfold(**kw), torch.nn.Unfold(**kw), [x.shape])
    check_module(nn.Fold((7, 6), **kw), torch.nn.Fold((7, 6), **kw), [cols.shape])
    check_module(nn.Fold((7, 6), **kw), torch.nn.Fold((7, 6), **kw), [cols.shape], dtype="float32")


def test_fold_unfold_second_derivatives_as_torch():
    x = RNG.standard_normal((1, 2, 5, 4))
    w = RNG.standard_normal((1, 2 * 4, 12))
    results = []
    for lib, fn in ((seqlab, F), (torch, TF)):
        t = lib.tensor(x, requires_grad=True)
        cols = fn.unfold(t, 2, padding=(1, 0), stride=(1, 2))  # (1, 8, 12)
        back = fn.fold(cols * cols * lib.tensor(w), (5, 4), 2, padding=(1, 0), stride=(1, 2))  # quadratic in x
        (g,) = lib.autograd.grad((back ** 2).sum(), t, create_graph=True)
        (h,) = lib.autograd.grad((g * g).sum(), t)
        results.append([np.asarray(v.detach().numpy() if lib is torch else v.numpy()) for v in (g, h)])
    for a, b in zip(*results):
        assert_close(a, b, 1e-10, 1e-10)


def test_composed_ops_second_derivatives_as_torch():
    """interpolate, adaptive_max_pool2d, pixel_shuffle, max_unpool2d and lp_pool2d are composed of differentiable
    ops, so a gradient of a gradient runs through them: torch's, in float64."""
    x = RNG.standard_normal((1, 4, 5, 6))
    results = []
    for lib, fn in ((seqlab, F), (torch, TF)):
        t = lib.tensor(x, requires_grad=True)
        y = fn.interpolate(t, size=(7, 4), mode="bicubic") + fn.interpolate(t, size=(7, 4), mode="bilinear",
                                                                            antialias=True)
        y = fn.pixel_shuffle(fn.adaptive_max_pool2d(y, (4, 3)), 2)  # (1, 1, 8, 6)
        p, i = fn.max_pool2d(y, 2, return_indices=True)
        y = fn.lp_pool2d((fn.max_unpool2d(p, i, 2) + y) ** 2 + 1, 2, 2)
        (g,) = lib.autograd.grad((y ** 3).sum(), t, create_graph=True)
        (h,) = lib.autograd.grad((g * g).sum(), t)
        results.append([np.asarray(v.detach().numpy() if lib is torch else v.numpy()) for v in (g, h)])
    for a, b in zip(*results):
        assert_close(a, b, 1e-10, scale_atol=1e-12, floor=1.0)


# ---- pooling --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("shape,kwargs", [
    ((2, 3, 7, 9), dict(output_size=(3, 4), return_indices=True)),
    ((2, 3, 5, 4), dict(output_size=(7, 6), return_indices=True)),               # windows overlap
    ((2, 3, 7, 9), dict(output_size=(None, 2), return_indices=True)),
    ((3, 6, 6), dict(output_size=1, return_indices=True)),                       # unbatched, global max
    ((2, 3, 8, 8), dict(output_size=4)),
])
def test_adaptive_max_pool2d(shape, kwargs):
    check_op(F.adaptive_max_pool2d, TF.adaptive_max_pool2d, [shape], kwargs, max_elements=30)


def test_adaptive_max_pool2d_ties_and_module():
    x = RNG.integers(0, 3, (2, 3, 7, 5)).astype(np.float64)  # equal maxima: the first (row-major) wins, as torch
    check_op(F.adaptive_max_pool2d, TF.adaptive_max_pool2d, [x], dict(output_size=(4, 3), return_indices=True),
             gradcheck_=False)
    check_module(nn.AdaptiveMaxPool2d((3, None)), torch.nn.AdaptiveMaxPool2d((3, None)), [(2, 3, 7, 5)])
    y, idx = nn.AdaptiveMaxPool2d(2, return_indices=True)(Tensor(x))
    assert idx.dtype == np.int64 and idx.shape == (2, 3, 2, 2)
    y2, idx2 = F.adaptive_max_pool2d_with_indices(Tensor(x), 2)
    np.testing.assert_array_equal(idx2.numpy(), idx.numpy())


@pytest.mark.parametrize("fn,shape,kwargs,domain", [
    ("lp_pool1d", (2, 3, 9), dict(norm_type=2, kernel_size=3), "real"),
    ("lp_pool1d", (2, 3, 10), dict(norm_type=3, kernel_size=3, stride=2, ceil_mode=True), "positive"),
    ("lp_pool1d", (3, 9), dict(norm_type=1.5, kernel_size=2), "positive"),      # unbatched
    ("lp_pool2d", (2, 3, 6, 7), dict(norm_type=2, kernel_size=2), "real"),
    ("lp_pool2d", (2, 3, 7, 8), dict(norm_type=1.5, kernel_size=(3, 2), stride=(2, 1), ceil_mode=True), "positive"),
    ("lp_pool2d", (2, 3, 6, 7), dict(norm_type=float("inf"), kernel_size=3, stride=2), "real"),
])
def test_lp_pool(fn, shape, kwargs, domain):
    check_op(getattr(F, fn), getattr(TF, fn), [shape], kwargs, domain=domain)


def test_lp_pool_modules():
    check_module(nn.LPPool1d(2, 3, 2), torch.nn.LPPool1d(2, 3, 2), [(2, 3, 9)])
    check_module(nn.LPPool2d(3, (2, 3), ceil_mode=True), torch.nn.LPPool2d(3, (2, 3), ceil_mode=True),
                 [np.abs(RNG.standard_normal((2, 3, 7, 8))) + 0.5])


@pytest.mark.parametrize("n,shape,kwargs,output_size", [
    (1, (2, 3, 9), dict(kernel_size=2), None),
    (1, (2, 3, 9), dict(kernel_size=3, padding=1), [2, 3, 9]),
    (1, (3, 8), dict(kernel_size=2), None),                                      # unbatched
    (2, (2, 3, 6, 8), dict(kernel_size=2), None),
    (2, (2, 3, 7, 9), dict(kernel_size=(3, 2), stride=(3, 2), padding=1), (7, 9)),
    (2, (3, 5, 6), dict(kernel_size=2), (5, 7)),
    (2, (2, 3, 7, 9), dict(kernel_size=3, stride=2, padding=1), None),           # overlapping windows
])
def test_max_unpool(n, shape, kwargs, output_size):
    """max_pool then max_unpool, as torch. Where windows overlap, one maximum is picked twice: unpool writes it
    once but both copies' gradients reach it (torch's too), so central differences are skipped there."""
    def run(fn):
        def f(x):
            y, idx = getattr(fn, f"max_pool{n}d")(x, return_indices=True, **kwargs)
            return getattr(fn, f"max_unpool{n}d")(y, idx, output_size=output_size, **kwargs)
        return f
    overlap = kwargs.get("stride", kwargs["kernel_size"]) != kwargs["kernel_size"]
    check_op(run(F), run(TF), [shape], max_elements=30, gradcheck_=not overlap)


def test_max_unpool_modules_and_the_pool_round_trip():
    x = RNG.standard_normal((2, 3, 6, 8))
    y, idx = nn.MaxPool2d(2, return_indices=True)(Tensor(x))
    yt, idxt = torch.nn.MaxPool2d(2, return_indices=True)(torch.tensor(x))
    up = nn.MaxUnpool2d(2)(y, idx)
    np.testing.assert_array_equal(up.numpy(), torch.nn.MaxUnpool2d(2)(yt, idxt).numpy())
    picked = np.take_along_axis(up.numpy().reshape(2, 3, -1), idx.numpy().reshape(2, 3, -1), -1)
    np.testing.assert_array_equal(picked, y.numpy().reshape(2, 3, -1))  # the maxima at their places, 0 elsewhere
    assert (up.numpy() != 0).sum() == y.numel()
    y1, i1 = nn.MaxPool1d(3, 2, return_indices=True)(Tensor(x[0]))
    y1t, i1t = torch.nn.MaxPool1d(3, 2, return_indices=True)(torch.tensor(x[0]))
    np.testing.assert_array_equal(nn.MaxUnpool1d(3, 2)(y1, i1, output_size=[8]).numpy(),
                                  torch.nn.MaxUnpool1d(3, 2)(y1t, i1t, output_size=[8]).numpy())


# ---- padding ----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name,padding,shape", [
    ("ReflectionPad3d", 1, (2, 3, 4, 5, 6)), ("ReflectionPad3d", (1, 2, 0, 3, 2, 1), (3, 4, 5, 6)),
    ("ReplicationPad3d", 2, (1, 2, 3, 4, 5)), ("ReplicationPad3d", (0, 1, 2, 3, 1, 0), (2, 3, 4, 5)),
    ("CircularPad1d", (1, 2), (2, 3, 5)), ("CircularPad1d", 3, (3, 5)),
    ("CircularPad2d", (1, 0, 2, 3), (2, 3, 4, 5)), ("CircularPad2d", 1, (3, 4, 5)),
    ("CircularPad3d", (1, 2, 0, 1, 2, 1), (1, 2, 3, 4, 5)), ("CircularPad3d", 1, (2, 3, 4, 5)),
])
def test_pads(name, padding, shape):
    check_module(getattr(nn, name)(padding), getattr(torch.nn, name)(padding), [shape])


# ---- signatures and reprs ---------------------------------------------------------------------------------------
FUNCTIONS = ["interpolate", "upsample", "upsample_nearest", "upsample_bilinear", "unfold", "fold", "lp_pool1d",
             "lp_pool2d", "max_unpool1d", "max_unpool2d", "adaptive_max_pool2d_with_indices"]
MODULES = ["Upsample", "UpsamplingNearest2d", "UpsamplingBilinear2d", "PixelShuffle", "PixelUnshuffle",
           "ChannelShuffle", "Fold", "Unfold", "AdaptiveMaxPool2d", "LPPool1d", "LPPool2d", "MaxUnpool1d",
           "MaxUnpool2d", "ReflectionPad3d", "ReplicationPad3d", "CircularPad1d", "CircularPad2d", "CircularPad3d"]


def _params(fn):
    return [(p.name, p.default) for p in inspect.signature(fn).parameters.values()]


def test_signatures_are_torchs():
    for name in FUNCTIONS:
        assert _params(getattr(F, name)) == _params(getattr(TF, name)), name
    assert _params(F.adaptive_max_pool2d) == _params(TF.adaptive_max_pool2d_with_indices)
    for name in MODULES:
        for method in ("__init__", "forward"):
            assert _params(getattr(getattr(nn, name), method)) == _params(getattr(getattr(torch.nn, name), method)), \
                (name, method)


@pytest.mark.parametrize("ctor", [
    "Upsample(scale_factor=2)", "Upsample(size=(3, 4), mode='bilinear', align_corners=True)", "Upsample()",
    "Upsample(scale_factor=(2, 1.5), mode='bicubic')", "Upsample(size=5, mode='nearest-exact')",
    "UpsamplingNearest2d(size=5)", "UpsamplingBilinear2d(scale_factor=(2, 3))", "PixelShuffle(2)",
    "PixelUnshuffle(3)", "ChannelShuffle(4)", "Fold((4, 5), 2)", "Fold(output_size=6, kernel_size=(2, 3), stride=2)",
    "Unfold(kernel_size=(2, 3), dilation=2, padding=1, stride=(1, 2))", "Unfold(3)",
    "AdaptiveMaxPool2d((3, None), True)", "AdaptiveMaxPool2d(1)", "LPPool1d(1.5, 3, 2, True)", "LPPool2d(2, 3)",
    "MaxUnpool1d(3, 2, 1)", "MaxUnpool2d(2)", "MaxUnpool2d((2, 3), stride=1)", "ReflectionPad3d(1)",
    "ReplicationPad3d((1, 2, 3, 4, 5, 6))", "CircularPad1d((1, 2))", "CircularPad2d(1)", "CircularPad3d(2)",
])
def test_reprs_are_torchs(ctor):
    assert repr(eval(f"nn.{ctor}")) == repr(eval(f"torch.nn.{ctor}"))


# ---- errors -------------------------------------------------------------------------------------------------------
def _x(*shape):
    return Tensor(np.zeros(shape, np.float32))


ERRORS = [
    (lambda m: m.interpolate(_x(2, 3, 5, 6)), ValueError, "either size or scale_factor should be defined"),
    (lambda m: m.interpolate(_x(2, 3, 5, 6), size=3, scale_factor=2), ValueError,
     "only one of size or scale_factor should be defined"),
    (lambda m: m.interpolate(_x(2, 3, 5, 6), size=3, align_corners=True), ValueError,
     "align_corners option can only be set with the interpolating modes"),
    (lambda m: m.interpolate(_x(2, 3, 5, 6), size=(3,)), ValueError,
     "Input and output must have the same number of spatial dimensions, but got input with spatial dimensions of "
     "[5, 6] and output size of (3,)."),
    (lambda m: m.interpolate(_x(2, 3, 5, 6), scale_factor=(2,)), ValueError,
     "Input and scale_factor must have the same number of spatial dimensions"),
    (lambda m: m.interpolate(_x(2, 3, 5, 6), size=(3.0, 2)), TypeError, "expected size to be one of int or"),
    (lambda m: m.interpolate(_x(2, 3, 5, 6), size=3, recompute_scale_factor=True), ValueError,
     "recompute_scale_factor is not meaningful with an explicit size."),
    (lambda m: m.interpolate(_x(2, 3, 5, 6), size=3, antialias=True), ValueError,
     "Anti-alias option is restricted to bilinear, bicubic"),
    (lambda m: m.interpolate(_x(2, 3, 5), size=3, mode="bilinear"), NotImplementedError,
     "Got 3D input, but bilinear mode needs 4D input"),
    (lambda m: m.interpolate(_x(2, 3, 5, 6), size=3, mode="trilinear"), NotImplementedError,
     "Got 4D input, but trilinear mode needs 5D input"),
    (lambda m: m.interpolate(_x(2, 3, 5), size=3, mode="bicubic"), NotImplementedError,
     "Input Error: Only 3D, 4D and 5D input Tensors supported (got 3D) for the modes"),
    (lambda m: m.interpolate(_x(3, 5), size=3), NotImplementedError, "(got 2D)"),
    (lambda m: m.interpolate(_x(2, 3, 5, 6), size=3, mode="cubic"), NotImplementedError, "(got cubic)"),
    (lambda m: m.interpolate(_x(2, 3, 5, 6), size=0), RuntimeError,
     "Input and output sizes should be greater than 0, but got input (H: 5, W: 6) output (H: 0, W: 0)"),
    (lambda m: m.interpolate(_x(2, 3, 5), scale_factor=0.1, mode="linear"), RuntimeError,
     "Input and output sizes should be greater than 0, but got input (W: 5) and output (W: 0)"),
    (lambda m: m.interpolate(_x(2, 0, 5, 4, 3), size=2), RuntimeError,
     "Non-empty 5D data tensor expected but got a tensor with sizes [2, 0, 5, 4, 3]"),
    (lambda m: m.pixel_shuffle(_x(2, 8, 4, 6), 3), RuntimeError,
     "pixel_shuffle expects its input's 'channel' dimension to be divisible by the square of upscale_factor, but "
     "input.size(-3)=8 is not divisible by 9"),
    (lambda m: m.pixel_shuffle(_x(2, 8, 4, 6), 0), RuntimeError, "pixel_shuffle expects a positive upscale_factor, "
     "but got 0"),
    (lambda m: m.pixel_shuffle(_x(8, 4), 2), RuntimeError,
     "pixel_shuffle expects input to have at least 3 dimensions, but got input with 2 dimension(s)"),
    (lambda m: m.pixel_shuffle(_x(2, 8, 4, 6), 2.0), TypeError,
     "pixel_shuffle(): argument 'upscale_factor' (position 2) must be int, not float"),
    (lambda m: m.pixel_unshuffle(_x(2, 8, 4, 6), 4), RuntimeError,
     "pixel_unshuffle expects width to be divisible by downscale_factor, but input.size(-1)=6 is not divisible by 4"),
    (lambda m: m.channel_shuffle(_x(2, 8, 4, 6), 3), RuntimeError,
     "Number of channels must be divisible by groups. Got 8 channels and 3 groups."),
    (lambda m: m.channel_shuffle(_x(2, 8, 4, 6), 0), RuntimeError,
     "Number of groups to divide channels in must be positive. Value of groups:0"),
    (lambda m: m.channel_shuffle(_x(8, 4), 2), RuntimeError,
     "channel_shuffle expects input with > 2 dims, but got input with sizes [8, 4]"),
    (lambda m: m.unfold(_x(1, 1, 3, 5, 5), 2), RuntimeError, "Expected 3D or 4D (batch mode) tensor with possibly 0 "
     "batch size and other non-zero dimensions for input, but got: [1, 1, 3, 5, 5]"),
    (lambda m: m.unfold(_x(2, 8, 4, 6), 5), RuntimeError,
     "Given input with spatial size (4, 6), kernel_size=(5, 5), dilation=(1, 1), padding=(0, 0), calculated shape "
     "of the array of sliding blocks as (0, 2), but its components must be at least one."),
    (lambda m: m.unfold(_x(2, 8, 4, 6), 0), RuntimeError,
     "kernel size should be greater than zero, but got kernel_height: 0 kernel_width: 0"),
    (lambda m: m.unfold(_x(2, 8, 4, 6), 2, padding=-1), RuntimeError,
     "padding should be non-negative, but got pad_height: -1 pad_width: -1"),
    (lambda m: m.unfold(_x(2, 8, 4, 6), (2, 2, 2)), RuntimeError, "It is expected kernel_size equals to 2, but got "
     "size 3"),
    (lambda m: m.fold(_x(2, 12, 14), (4, 6), 2), RuntimeError,
     "Given output_size=(4, 6), kernel_size=(2, 2), dilation=(1, 1), padding=(0, 0), stride=(1, 1), expected size "
     "of input's dimension 2 to match the calculated number of sliding blocks 3 * 5 = 15, but got input.size(2)=14."),
    (lambda m: m.fold(_x(2, 13, 15), (4, 6), 2), RuntimeError,
     "Expected size of input's dimension 1 to be divisible by the product of kernel_size, but got input.size(1)=13 "
     "and kernel_size=(2, 2)."),
    (lambda m: m.fold(_x(2, 12, 15, 1), (4, 6), 2), RuntimeError,
     "Expected 2D or 3D (batch mode) tensor for input with possibly 0 batch size and non-zero dimensions for input, "
     "but got: [2, 12, 15, 1]"),
    (lambda m: m.adaptive_max_pool2d(_x(3, 4), 2), RuntimeError,
     "adaptive_max_pool2d(): Expected 3D or 4D tensor, but got: [3, 4]"),
    (lambda m: m.adaptive_max_pool2d(_x(2, 3, 0, 4), 2), RuntimeError,
     "adaptive_max_pool2d(): Expected input to have non-zero size for non-batch dimensions, but input has sizes "
     "[2, 3, 0, 4] with dimension 2 being empty"),
    (lambda m: m.max_unpool2d(_x(2, 8, 2, 3), Tensor(np.zeros((2, 8, 2, 3), np.int64)), 2, output_size=(8, 7)),
     ValueError, 'invalid output_size "(8, 7)" (dim 0 must be between 2 and 6)'),
    (lambda m: m.max_unpool2d(_x(2, 8, 2, 3), Tensor(np.zeros((2, 8, 2, 3), np.int64)), 2, output_size=(8,)),
     ValueError, "output_size should be a sequence containing 2 or 4 elements, but it has a length of '1'"),
    (lambda m: m.max_unpool2d(_x(2, 8, 2, 3), Tensor(np.zeros((2, 8, 1, 3), np.int64)), 2), RuntimeError,
     "Expected shape of indices to be same as that of the input tensor ([2, 8, 2, 3]) but got indices tensor with "
     "shape: [2, 8, 1, 3]"),
    (lambda m: m.max_unpool2d(_x(2, 8, 2, 3), Tensor(np.full((2, 8, 2, 3), 117)), 2), RuntimeError,
     "Found an invalid max index: 117 (output volumes are of size 4x6)"),
    (lambda m: m.max_unpool2d(_x(8, 3), Tensor(np.zeros((8, 3), np.int64)), 2), RuntimeError,
     "Input to max_unpool2d should be a 3d or 4d Tensor, but got a tensor with 2 dimensions."),
]


@pytest.mark.parametrize("call,error,message", ERRORS)
def test_errors_are_torchs(call, error, message):
    """seqlab's error has torch's type (and is a ValueError/TypeError too) and message; torch agrees."""
    with pytest.raises(error, match=re.escape(message)) as info:
        call(F)
    assert "\n" not in str(info.value)

    def to_torch(x):
        return torch.tensor(x.numpy()) if isinstance(x, Tensor) else x

    class TorchF:  # the same call on torch, with the tensors converted
        def __getattr__(self, name):
            return lambda *a, **k: getattr(TF, name)(*[to_torch(v) for v in a], **{n: to_torch(v)
                                                                                     for n, v in k.items()})
    with pytest.raises(error, match=re.escape(message.replace("max_unpool2d", "max_unpooling2d"))):
        call(TorchF())


def test_module_errors():
    with pytest.raises(ValueError, match=re.escape("expected 2D or 3D input (got 4D input)")):
        nn.CircularPad1d(1)(_x(2, 3, 4, 5))
    with pytest.raises(ValueError, match="Padding value causes wrapping around more than once"):  # F.pad's
        nn.CircularPad2d(5)(_x(2, 3, 4, 5))
    with pytest.raises(NotImplementedError, match="Padding size 6 is not supported for 3D input tensor"):
        nn.ReflectionPad3d(1)(_x(2, 3, 4))
    with pytest.raises(TypeError, match="float"):
        nn.Upsample(scale_factor=[2, 3])
    with pytest.raises(NotImplementedError, match="mode='lanczos'"):
        F.interpolate(_x(1, 2, 8, 8), size=4, mode="lanczos", antialias=True)
    with pytest.raises(TypeError, match="not implemented for int64"):
        F.interpolate(Tensor(np.zeros((1, 2, 3), np.int64)), size=4, mode="linear")


# ---- the device path: CuPy's stand-in on the CPU, and CuPy itself where a GPU is seen -------------------------
def test_on_the_device_as_on_the_host(cuda):
    x = RNG.standard_normal((2, 8, 6, 7)).astype(np.float32)
    results = []
    for device in ("cpu", "cuda"):
        t = Tensor(backend.to_device(x, device), requires_grad=True)
        outs = [F.interpolate(t, scale_factor=1.5, mode="bilinear"), F.interpolate(t, size=(4, 9), mode="bicubic"),
                F.interpolate(t, scale_factor=(2, 0.5)), F.interpolate(t, size=(5, 9), mode="nearest-exact"),
                F.interpolate(t, size=(3, 2), mode="area"),
                F.interpolate(t, size=(3, 4), mode="bilinear", antialias=True),
                F.pixel_shuffle(t, 2), F.pixel_unshuffle(t[..., :6], 2), F.channel_shuffle(t, 4),
                F.fold(F.unfold(t, 3, padding=1, stride=2), (6, 7), 3, padding=1, stride=2),
                F.lp_pool2d(t, 2, 2)]
        y, idx = F.adaptive_max_pool2d(t, (4, 3), return_indices=True)
        p, pidx = F.max_pool2d(t, 2, return_indices=True)
        outs += [y, F.max_unpool2d(p, pidx, 2, output_size=(6, 7))]
        loss = sum(((o * o).sum() for o in outs), Tensor(backend.to_device(np.float32(0), device)))
        loss.backward()
        assert outs[0].device == device and idx.device == device
        results.append([backend.to_numpy(o.data) for o in outs] + [backend.to_numpy(idx.data),
                                                                   backend.to_numpy(t.grad)])
    for host, dev in zip(*results):
        assert_close(dev, host, rtol=1e-5, atol=1e-5)
