"""Transposed convolution (F.conv_transpose1d/2d, nn.ConvTranspose1d/2d) and the convolutions' padding modes
against torch: values, input/weight/bias gradients (float64 and float32) and central differences, unbatched
inputs, output_size=, state_dict loading, init, reprs, errors, and the device path on CuPy's stand-in."""
import re

import numpy as np
import pytest
import torch
import torch.nn.functional as TF
from helpers import assert_close, check_module, check_op, gradcheck

import seqlab
from seqlab import Tensor, backend, nn
from seqlab import functional_conv as FC
from seqlab.nn.conv import Conv1d, Conv2d, ConvTranspose1d, ConvTranspose2d

SEQLAB_NN = {c.__name__: c for c in (Conv1d, Conv2d, ConvTranspose1d, ConvTranspose2d)}


# ---- F.conv_transpose1d/2d: every input's gradient, by central differences and against torch ----------------
# inputs: x (N, C_in, *S), weight (C_in, C_out/groups, *k), bias (C_out,)
CONVT1D = [
    ([(2, 4, 7), (4, 3, 3), (3,)], {}),
    ([(2, 4, 7), (4, 3, 3)], dict(stride=2, padding=1, output_padding=1)),  # bias=False
    ([(2, 4, 6), (4, 2, 4), (2,)], dict(stride=3, padding=2, output_padding=2)),
    ([(2, 4, 6), (4, 3, 3), (6,)], dict(groups=2, dilation=2, padding=1)),
    ([(2, 4, 5), (4, 2, 3), (8,)], dict(groups=4, stride=2, output_padding=1)),  # depthwise, 2 outputs per input
    ([(2, 3, 5), (3, 2, 2), (2,)], dict(dilation=3, output_padding=2)),  # output_padding < dilation, stride 1
    ([(2, 3, 5), (3, 2, 5), (2,)], dict(padding=4)),  # the padding eats most of the full output
    ([(4, 7), (4, 3, 3), (3,)], dict(stride=2, padding=(1,))),  # unbatched (C, L)
    ([(2, 4, 1), (4, 3, 1), (3,)], dict(stride=2, output_padding=(1,))),  # a 1-cell input, a 1-cell kernel
]
CONVT2D = [
    ([(2, 3, 4, 5), (3, 4, 3, 3), (4,)], {}),
    ([(2, 4, 4, 5), (4, 3, 3, 2), (6,)], dict(stride=(2, 3), padding=(1, 0), output_padding=(1, 2), groups=2,
                                              dilation=(1, 2))),
    ([(2, 3, 4, 4), (3, 2, 4, 4)], dict(stride=2, padding=1)),  # the usual 2x upsampling, bias=False
    ([(3, 4, 5), (3, 2, 2, 3), (2,)], dict(stride=2, output_padding=1)),  # unbatched (C, H, W)
    ([(1, 2, 3, 3), (2, 2, 3, 3), (2,)], dict(stride=3, padding=2, dilation=2, output_padding=(2, 1))),
]


@pytest.mark.parametrize("inputs,kwargs", CONVT1D)
def test_conv_transpose1d(inputs, kwargs):
    check_op(FC.conv_transpose1d, TF.conv_transpose1d, inputs, kwargs)


@pytest.mark.parametrize("inputs,kwargs", CONVT2D)
def test_conv_transpose2d(inputs, kwargs):
    check_op(FC.conv_transpose2d, TF.conv_transpose2d, inputs, kwargs)


def test_positional_arguments_are_torchs():
    """torch's order: (input, weight, bias, stride, padding, output_padding, groups, dilation)."""
    rng = np.random.default_rng(1)
    x, w, b = rng.standard_normal((2, 4, 5, 6)), rng.standard_normal((4, 1, 3, 3)), rng.standard_normal(2)
    y = FC.conv_transpose2d(Tensor(x), Tensor(w), Tensor(b), 2, 1, 1, 2, 2)
    yt = TF.conv_transpose2d(torch.tensor(x), torch.tensor(w), torch.tensor(b), 2, 1, 1, 2, 2)
    assert_close(y.numpy(), yt.numpy(), rtol=1e-12, atol=1e-12)
    assert seqlab.functional.conv_transpose2d is FC.conv_transpose2d
    assert seqlab.nn.functional.conv_transpose1d is FC.conv_transpose1d
    assert nn.ConvTranspose1d is ConvTranspose1d and nn.ConvTranspose2d is ConvTranspose2d


def test_conv_transpose_central_differences_on_every_element():
    rng = np.random.default_rng(3)
    values = [rng.standard_normal(s) for s in [(2, 4, 3, 4), (4, 2, 3, 2), (4,)]]
    gradcheck(lambda x, w, b: FC.conv_transpose2d(x, w, b, stride=(2, 1), padding=(1, 1), output_padding=(1, 0),
                                                  groups=2, dilation=(1, 2)),
              values, [True] * 3, max_elements=400)


@pytest.mark.parametrize("kwargs", [dict(), dict(stride=2, padding=1), dict(stride=3, padding=2, dilation=2, groups=2)])
def test_conv_transpose_is_the_adjoint_of_conv(kwargs):
    """<conv2d(x, w), y> = <x, conv_transpose2d(y, w)> for every x, y: the transposed conv's defining property
    (d2l 14.10), with the same weight, stride, padding, dilation and groups."""
    rng = np.random.default_rng(4)
    x, w = rng.standard_normal((2, 4, 9, 8)), rng.standard_normal((6, 4 // kwargs.get("groups", 1), 3, 3))
    y_shape = FC.conv2d(Tensor(x), Tensor(w), **kwargs).shape
    y = rng.standard_normal(y_shape)
    picks = [(x.shape[d] - FC.conv_transpose2d(Tensor(y), Tensor(w), **kwargs).shape[d]) for d in (2, 3)]
    xt = FC.conv_transpose2d(Tensor(y), Tensor(w), output_padding=tuple(picks), **kwargs).numpy()
    assert xt.shape == x.shape
    lhs = (FC.conv2d(Tensor(x), Tensor(w), **kwargs).numpy() * y).sum()
    assert abs(lhs - (x * xt).sum()) < 1e-10 * abs(lhs) + 1e-10


# ---- modules: torch's state_dict, output_size, init, reprs ---------------------------------------------------
@pytest.mark.parametrize("name,args,kwargs,shape,forward", [
    ("ConvTranspose1d", (4, 6, 3), {}, (2, 4, 7), {}),
    ("ConvTranspose1d", (4, 6, 4), dict(stride=2, padding=1, output_padding=1, groups=2, bias=False, dilation=2),
     (2, 4, 7), {}),
    ("ConvTranspose1d", (4, 6, 3), dict(stride=3, padding=1), (4, 5), dict(output_size=[15])),  # unbatched
    ("ConvTranspose1d", (4, 6, 3), dict(stride=3, padding=1), (2, 4, 5), dict(output_size=(2, 6, 14))),
    ("ConvTranspose2d", (3, 4, (3, 2)), dict(stride=(2, 1), padding=1), (2, 3, 5, 6), {}),
    ("ConvTranspose2d", (4, 4, 3), dict(stride=2, padding=1, groups=4), (2, 4, 5, 6), dict(output_size=(10, 12))),
    ("ConvTranspose2d", (4, 2, 2), dict(stride=2), (4, 5, 6), dict(output_size=[2, 10, 12])),  # unbatched
    ("ConvTranspose2d", (2, 3, 3), dict(dilation=(2, 1), output_padding=(1, 0)), (2, 2, 4, 4), {}),
])
def test_conv_transpose_modules_load_torchs_state_dict(name, args, kwargs, shape, forward):
    torch.manual_seed(0)
    t = getattr(torch.nn, name)(*args, **kwargs)
    s = SEQLAB_NN[name](*args, **kwargs)
    assert [(k, tuple(v.shape)) for k, v in s.state_dict().items()] == \
        [(k, tuple(v.shape)) for k, v in t.state_dict().items()]
    check_module(s, t, [shape], forward)  # float64: outputs, input grad, weight and bias grads by name
    check_module(s, t, [shape], forward, dtype="float32")


def test_output_size_picks_output_padding():
    m = ConvTranspose2d(3, 2, 3, stride=(3, 2), padding=1)
    x = Tensor(np.zeros((1, 3, 4, 5), np.float32))
    sizes = {tuple(m(x, output_size=(h, w)).shape[2:]) for h in (10, 11, 12) for w in (9, 10)}
    assert sizes == {(h, w) for h in (10, 11, 12) for w in (9, 10)}
    assert m(x).shape == (1, 2, 10, 9) and m(x, output_size=None).shape == (1, 2, 10, 9)


def test_conv_transpose_init_is_torchs_and_dtype_device_are_taken():
    """torch's fan_in is the weight's dim 1 times the kernel: C_out/groups · Π k for a transposed conv."""
    seqlab.manual_seed(0)
    m = ConvTranspose2d(8, 32, (3, 5), groups=2, dtype=np.float64, device="cpu")
    bound = 1 / np.sqrt(32 // 2 * 3 * 5)
    w, b = m.weight.numpy(), m.bias.numpy()
    assert w.shape == (8, 16, 3, 5) and b.shape == (32,) and w.dtype == b.dtype == np.float64
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.95 * bound
    assert abs(w.std() - bound / np.sqrt(3)) < 0.05 * bound  # a uniform's std
    assert np.abs(b).max() <= bound and b.std() > 0.3 * bound
    assert m.transposed and m.output_padding == (0, 0) and not Conv2d(2, 2, 1).transposed
    assert ConvTranspose1d(4, 8, 3, bias=False).bias is None
    assert ConvTranspose1d(4, 8, 3).weight.dtype == np.float32


@pytest.mark.parametrize("ctor", [
    "ConvTranspose1d(4, 6, 3)", "ConvTranspose1d(4, 6, 3, stride=2, padding=1, output_padding=1)",
    "ConvTranspose1d(4, 6, (3,), 2, (1,), 1, 2, False, 3)",
    "ConvTranspose2d(4, 6, 3, stride=2, padding=1, output_padding=1, groups=2, bias=False, dilation=2)",
    "ConvTranspose2d(3, 4, (3, 5), stride=(2, 1))",
    "Conv1d(4, 6, 3, padding=1, padding_mode='reflect')", "Conv1d(4, 6, 4, padding='same', padding_mode='circular')",
    "Conv2d(4, 6, 3, padding=1, padding_mode='replicate')", "Conv2d(4, 6, 3, padding_mode='zeros')",
])
def test_reprs_are_torchs(ctor):
    name, args = ctor.split("(", 1)
    assert repr(eval(f"SEQLAB_NN[{name!r}]({args}")) == repr(eval(f"torch.nn.{ctor}"))


# ---- padding modes of Conv1d and Conv2d: F.pad in that mode, then a conv with no padding, as torch -----------
@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
@pytest.mark.parametrize("name,args,kwargs,shape", [
    ("Conv1d", (4, 6, 3), dict(padding=2), (2, 4, 9)),
    ("Conv1d", (4, 6, 4), dict(padding="same", dilation=2, groups=2), (2, 4, 9)),  # uneven: the extra cell after
    ("Conv1d", (4, 6, 3), dict(padding=1, stride=2), (4, 8)),  # unbatched
    ("Conv1d", (4, 6, 3), dict(padding="valid"), (2, 4, 8)),
    ("Conv2d", (3, 4, (3, 2)), dict(padding=(1, 2), stride=(2, 1)), (2, 3, 6, 7)),
    ("Conv2d", (4, 4, 3), dict(padding="same", groups=4, dilation=(1, 2)), (2, 4, 6, 7)),
    ("Conv2d", (3, 5, 2), dict(padding=(0, 1), bias=False), (3, 5, 6)),  # unbatched
])
def test_padding_modes_as_torch(mode, name, args, kwargs, shape):
    torch.manual_seed(0)
    t = getattr(torch.nn, name)(*args, padding_mode=mode, **kwargs)
    s = SEQLAB_NN[name](*args, padding_mode=mode, **kwargs)
    assert s.padding_mode == mode
    check_module(s, t, [shape])
    check_module(s, t, [shape], dtype="float32")


def test_padding_mode_gradient_by_central_differences():
    """Reflect and circular padding send an input cell's gradient through several copies: summed."""
    rng = np.random.default_rng(6)
    for mode in ("reflect", "circular", "replicate"):
        m = Conv2d(2, 3, 3, padding=(2, 1), padding_mode=mode, dtype=np.float64)
        w, b = m.weight.numpy(), m.bias.numpy()
        gradcheck(lambda x, w_, b_, mode=mode: FC.conv2d(seqlab.functional.pad(x, (1, 1, 2, 2), mode=mode), w_, b_),
                  [rng.standard_normal((2, 2, 4, 5)), w, b], [True] * 3, max_elements=100)
        x = Tensor(rng.standard_normal((2, 2, 4, 5)))
        assert_close(m(x).numpy(), FC.conv2d(seqlab.functional.pad(x, (1, 1, 2, 2), mode=mode), m.weight,
                                             m.bias).numpy(), rtol=1e-12, atol=1e-12)


# ---- errors -------------------------------------------------------------------------------------------------
def _x(*shape):
    return Tensor(np.zeros(shape, np.float32))


@pytest.mark.parametrize("call,error,message", [
    (lambda: FC.conv_transpose1d(_x(2, 4, 10), _x(4, 3, 3), stride=2, output_padding=2), ValueError,
     ("output padding must be smaller than either stride or dilation, but got output_padding_width: 2 "
      "stride_width: 2 dilation_width: 1")),
    (lambda: FC.conv_transpose2d(_x(2, 4, 5, 5), _x(4, 3, 3, 3), stride=2, output_padding=2), ValueError,
     ("output padding must be smaller than either stride or dilation, but got output_padding_height: 2 "
      "output_padding_width: 2 stride_height: 2 stride_width: 2 dilation_height: 1 dilation_width: 1")),
    (lambda: ConvTranspose1d(4, 3, 3, stride=2, output_padding=2)(_x(2, 4, 10)), ValueError,
     "output padding must be smaller than either stride or dilation"),
    (lambda: FC.conv_transpose1d(_x(2, 5, 10), _x(4, 3, 3)), ValueError,
     ("Given transposed=1, weight of size [4, 3, 3], expected input[2, 5, 10] to have 4 channels, but got 5 "
      "channels instead")),
    (lambda: FC.conv_transpose1d(_x(2, 4, 10), _x(4, 3, 3), _x(2)), ValueError,
     ("Given transposed=1, weight of size [4, 3, 3], expected bias to be 1-dimensional with 3 elements, but got "
      "bias of size [2] instead")),
    (lambda: FC.conv_transpose1d(_x(2, 4, 10), _x(4, 3, 3), groups=3), ValueError,
     "Given groups=3, expected weight to be divisible by 3 at dimension 0, but got weight of size [4, 3, 3]"),
    (lambda: FC.conv_transpose1d(_x(2, 4, 10), _x(4, 3, 3), padding=20), ValueError,
     "Given input size per channel: (10). Calculated output size per channel: (-28). Output size is too small"),
    (lambda: FC.conv_transpose1d(_x(2, 4, 10), _x(4, 3, 3), padding=-1), ValueError,
     "negative padding is not supported"),
    (lambda: FC.conv_transpose1d(_x(2, 4, 10), _x(4, 3, 3), output_padding=-1), ValueError,
     "negative output_padding is not supported"),
    (lambda: FC.conv_transpose1d(_x(2, 4, 10), _x(4, 3, 3), stride=0), ValueError,
     "non-positive stride is not supported"),
    (lambda: FC.conv_transpose1d(_x(2, 4, 10), _x(4, 3, 3), dilation=0), ValueError,
     "non-positive dilation is not supported"),
    (lambda: FC.conv_transpose1d(_x(2, 4, 10), _x(4, 3, 3), padding="same"), ValueError,
     "conv_transpose1d() padding must be an int or a tuple of 1 ints, got 'same'"),
    (lambda: FC.conv_transpose1d(_x(2, 4, 10), Tensor(np.zeros((4, 3, 3)))), TypeError,
     "Input type (float32) and weight type (float64) should be the same"),
    (lambda: FC.conv_transpose2d(_x(4, 10), _x(4, 3, 3, 3)), ValueError,
     "Expected 3D (unbatched) or 4D (batched) input to conv_transpose2d, but got input of size: [4, 10]"),
    (lambda: FC.conv_transpose1d(_x(2, 4, 10), _x(4, 3, 3, 3)), ValueError,
     "conv_transpose1d expects weight of shape (in_channels, out_channels/groups, 1-d kernel)"),
    (lambda: ConvTranspose1d(4, 3, 3, padding_mode="reflect"), ValueError,
     'Only "zeros" padding mode is supported for ConvTranspose1d'),
    (lambda: ConvTranspose2d(4, 3, 3, padding_mode="circular"), ValueError,
     'Only "zeros" padding mode is supported for ConvTranspose2d'),
    (lambda: ConvTranspose1d(5, 3, 3, groups=2), ValueError, "in_channels must be divisible by groups"),
    (lambda: ConvTranspose1d(4, 3, 3, groups=2), ValueError, "out_channels must be divisible by groups"),
    (lambda: ConvTranspose1d(4, 3, 3, stride=2)(_x(2, 4, 10), output_size=[30]), ValueError,
     "requested an output size of [30], but valid sizes range from [21] to [22] (for an input of [10])"),
    (lambda: ConvTranspose2d(4, 3, 3, stride=2)(_x(2, 4, 5, 5), output_size=[30, 2, 3]), ValueError,
     "ConvTranspose2D: for 4D input, output_size must have 2 or 4 elements (got 3)"),
    (lambda: ConvTranspose2d(4, 3, 3, stride=2)(_x(4, 5, 5), output_size=[2, 3, 12, 12]), ValueError,
     "ConvTranspose2D: for 3D input, output_size must have 2 or 3 elements (got 4)"),
    (lambda: Conv1d(4, 4, 3, padding_mode="mirror"), ValueError, "padding_mode must be one of"),
    (lambda: Conv1d(4, 3, 3, padding=20, padding_mode="reflect")(_x(2, 4, 10)), ValueError,
     "Padding size should be less than the corresponding input dimension, but got: padding (20, 20)"),
])
def test_errors_name_the_values(call, error, message):
    with pytest.raises(error, match=re.escape(message)):
        call()


# ---- the device path: CuPy's stand-in on the CPU, and CuPy itself where a GPU is seen ------------------------
def test_on_the_device_as_on_the_host(cuda):
    rng = np.random.default_rng(9)
    x1, x2 = rng.standard_normal((3, 4, 7)).astype(np.float32), rng.standard_normal((2, 4, 5, 6)).astype(np.float32)
    results = []
    for device in ("cpu", "cuda"):
        seqlab.manual_seed(0)
        t1 = ConvTranspose1d(4, 6, 3, stride=2, padding=1, groups=2).to(device)
        t2 = ConvTranspose2d(4, 3, (3, 2), stride=(2, 1), padding=1, output_padding=(1, 0)).to(device)
        c1 = Conv1d(6, 4, 3, padding="same", padding_mode="circular").to(device)
        c2 = Conv2d(3, 2, 3, padding=2, padding_mode="reflect").to(device)
        a = Tensor(backend.to_device(x1, device), requires_grad=True)
        b = Tensor(backend.to_device(x2, device), requires_grad=True)
        h1 = t1(a, output_size=[14])
        y1 = c1(h1)
        h2 = t2(b)
        y2 = c2(h2)
        loss = (y1 * y1).sum() + (y2 * y2).sum() + (h2 * h2).sum()
        loss.backward()
        assert y1.device == device and backend.device_of(t2.weight.grad) == device
        results.append([backend.to_numpy(t) for t in (h1.data, y1.data, h2.data, y2.data, a.grad, b.grad,
                                                      t1.weight.grad, t1.bias.grad, t2.weight.grad, t2.bias.grad,
                                                      c1.weight.grad, c2.weight.grad)])
    for host, dev in zip(*results):
        assert_close(dev, host, rtol=1e-5, atol=1e-4)
