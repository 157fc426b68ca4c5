"""Convolution and pooling (seqlab.functional_conv, seqlab.nn.conv) against torch: values, input/weight/bias
gradients and central differences in float64, indices, state_dict loading, init, reprs, errors, the device path
on CuPy's stand-in, and a TextCNN that learns a task only word order solves."""
import re
import warnings

import numpy as np
import pytest
import torch
import torch.nn.functional as TF
from helpers import assert_close, check_module, check_op, const, gradcheck

import seqlab
from seqlab import Tensor, backend, nn
from seqlab import functional_conv as FC
from seqlab.nn.conv import (AdaptiveAvgPool1d, AdaptiveAvgPool2d, AdaptiveMaxPool1d, AvgPool1d, AvgPool2d, Conv1d,
                            Conv2d, MaxPool1d, MaxPool2d)
from seqlab.optim import Adam

SEQLAB_NN = {c.__name__: c for c in (Conv1d, Conv2d, MaxPool1d, MaxPool2d, AvgPool1d, AvgPool2d, AdaptiveAvgPool1d,
                                     AdaptiveAvgPool2d, AdaptiveMaxPool1d)}


@pytest.fixture(autouse=True)
def _quiet_same_padding():
    with warnings.catch_warnings():  # torch warns that an even kernel with padding='same' copies the input
        warnings.filterwarnings("ignore", message="Using padding='same'")
        yield


# ---- convolution: every input's gradient, by central differences and against torch (float64, float32) -----
CONV1D = [
    ([(2, 4, 9), (6, 4, 3), (6,)], {}),
    ([(2, 4, 9), (6, 4, 3)], dict(stride=2, padding=1)),  # bias=False
    ([(2, 4, 11), (6, 4, 3), (6,)], dict(padding="same", dilation=2)),
    ([(2, 4, 9), (5, 4, 4), (5,)], dict(padding="same")),  # even kernel: the extra cell goes after, as torch
    ([(2, 4, 9), (6, 4, 5), (6,)], dict(padding="valid", stride=3)),
    ([(2, 4, 10), (6, 2, 3), (6,)], dict(groups=2, padding=2, dilation=3)),
    ([(3, 4, 8), (8, 1, 3), (8,)], dict(groups=4, padding=(1,))),  # depthwise, channel multiplier 2
    ([(4, 7), (3, 4, 3), (3,)], dict(padding=1)),  # unbatched (C, L)
    ([(2, 4, 5), (3, 4, 5), (3,)], {}),  # the kernel spans the input: one output position
]
CONV2D = [
    ([(2, 3, 6, 7), (4, 3, 3, 3), (4,)], {}),
    ([(2, 4, 7, 8), (8, 1, 3, 2), (8,)], dict(stride=(2, 1), padding=(1, 2), dilation=(1, 2), groups=4)),
    ([(2, 3, 6, 7), (4, 3, 4, 2)], dict(padding="same")),
    ([(3, 7, 6), (5, 3, 2, 3), (5,)], dict(stride=2)),  # unbatched (C, H, W)
    ([(1, 2, 9, 9), (4, 2, 3, 3), (4,)], dict(stride=3, padding=1, dilation=2)),
]


@pytest.mark.parametrize("inputs,kwargs", CONV1D)
def test_conv1d(inputs, kwargs):
    check_op(FC.conv1d, TF.conv1d, inputs, kwargs)


@pytest.mark.parametrize("inputs,kwargs", CONV2D)
def test_conv2d(inputs, kwargs):
    check_op(FC.conv2d, TF.conv2d, inputs, kwargs)


def test_conv_central_differences_on_every_element():
    """Float64: each gradient entry of a strided, dilated, grouped, padded conv2d against central differences."""
    rng = np.random.default_rng(3)
    values = [rng.standard_normal(s) for s in [(2, 4, 6, 5), (6, 2, 3, 2), (6,)]]
    gradcheck(lambda x, w, b: FC.conv2d(x, w, b, stride=(2, 1), padding=(2, 1), dilation=(1, 2), groups=2),
              values, [True] * 3, max_elements=400)


# ---- pooling ------------------------------------------------------------------------------------------------
POOL = [
    (FC.max_pool1d, TF.max_pool1d, (2, 3, 11), dict(kernel_size=3)),
    (FC.max_pool1d, TF.max_pool1d, (2, 3, 11), dict(kernel_size=3, stride=2, padding=1, dilation=2,
                                                     return_indices=True)),
    (FC.max_pool1d, TF.max_pool1d, (2, 3, 10), dict(kernel_size=4, stride=3, padding=2, ceil_mode=True,
                                                     return_indices=True)),
    (FC.max_pool1d, TF.max_pool1d, (3, 9), dict(kernel_size=2, return_indices=True)),  # unbatched
    (FC.max_pool2d, TF.max_pool2d, (2, 3, 6, 8), dict(kernel_size=2, return_indices=True)),
    (FC.max_pool2d, TF.max_pool2d, (2, 3, 7, 8), dict(kernel_size=(3, 2), stride=(2, 1), padding=1,
                                                       ceil_mode=True, return_indices=True)),
    (FC.max_pool2d, TF.max_pool2d, (1, 2, 9, 9), dict(kernel_size=3, stride=2, padding=1, dilation=2,
                                                       return_indices=True)),
    (FC.max_pool2d, TF.max_pool2d, (3, 7, 7), dict(kernel_size=3, stride=2, return_indices=True)),  # unbatched
    (FC.avg_pool1d, TF.avg_pool1d, (2, 3, 11), dict(kernel_size=3)),
    (FC.avg_pool1d, TF.avg_pool1d, (2, 3, 10), dict(kernel_size=3, stride=2, padding=1)),
    (FC.avg_pool1d, TF.avg_pool1d, (2, 3, 10), dict(kernel_size=3, stride=2, padding=1, count_include_pad=False)),
    (FC.avg_pool1d, TF.avg_pool1d, (2, 3, 10), dict(kernel_size=4, stride=3, padding=2, ceil_mode=True)),
    (FC.avg_pool1d, TF.avg_pool1d, (2, 3, 10), dict(kernel_size=3, stride=2, ceil_mode=True)),  # last window: 2
    (FC.avg_pool1d, TF.avg_pool1d, (2, 3, 10), dict(kernel_size=4, stride=3, padding=1, ceil_mode=True,
                                                     count_include_pad=False)),
    (FC.avg_pool2d, TF.avg_pool2d, (2, 3, 6, 8), dict(kernel_size=2)),
    (FC.avg_pool2d, TF.avg_pool2d, (2, 3, 7, 8), dict(kernel_size=(3, 2), stride=(2, 1), padding=1,
                                                       ceil_mode=True)),
    (FC.avg_pool2d, TF.avg_pool2d, (2, 3, 7, 8), dict(kernel_size=3, stride=2, ceil_mode=True)),
    (FC.avg_pool2d, TF.avg_pool2d, (2, 3, 7, 8), dict(kernel_size=3, stride=2, padding=1, ceil_mode=True,
                                                       count_include_pad=False)),
    (FC.avg_pool2d, TF.avg_pool2d, (2, 3, 7, 8), dict(kernel_size=3, stride=2, padding=1, divisor_override=5)),
    (FC.avg_pool2d, TF.avg_pool2d, (3, 5, 6), dict(kernel_size=2, padding=1)),  # unbatched
    (FC.adaptive_avg_pool1d, TF.adaptive_avg_pool1d, (2, 3, 11), dict(output_size=4)),
    (FC.adaptive_avg_pool1d, TF.adaptive_avg_pool1d, (2, 3, 5), dict(output_size=7)),  # windows overlap
    (FC.adaptive_avg_pool1d, TF.adaptive_avg_pool1d, (3, 6), dict(output_size=1)),  # unbatched, global mean
    (FC.adaptive_avg_pool2d, TF.adaptive_avg_pool2d, (2, 3, 7, 5), dict(output_size=(3, 7))),
    (FC.adaptive_avg_pool2d, TF.adaptive_avg_pool2d, (2, 3, 7, 5), dict(output_size=(None, 2))),
    (FC.adaptive_avg_pool2d, TF.adaptive_avg_pool2d, (3, 6, 6), dict(output_size=1)),
    (FC.adaptive_max_pool1d, TF.adaptive_max_pool1d, (2, 3, 11), dict(output_size=4, return_indices=True)),
    (FC.adaptive_max_pool1d, TF.adaptive_max_pool1d, (2, 3, 5), dict(output_size=7, return_indices=True)),
    (FC.adaptive_max_pool1d, TF.adaptive_max_pool1d, (3, 9), dict(output_size=1)),  # unbatched
]


@pytest.mark.parametrize("fn,fn_torch,shape,kwargs", POOL, ids=lambda v: getattr(v, "__name__", None))
def test_pool(fn, fn_torch, shape, kwargs):
    check_op(fn, fn_torch, [shape], kwargs)


@pytest.mark.parametrize("fn,fn_torch,shape,kwargs", [
    (FC.max_pool1d, TF.max_pool1d, (2, 3, 12), dict(kernel_size=3, stride=1, padding=1, return_indices=True)),
    (FC.max_pool2d, TF.max_pool2d, (2, 2, 6, 7), dict(kernel_size=3, stride=2, padding=1, return_indices=True)),
    (FC.adaptive_max_pool1d, TF.adaptive_max_pool1d, (2, 3, 7), dict(output_size=5, return_indices=True)),
])
def test_max_pool_ties_go_to_the_first_maximum_as_torch(fn, fn_torch, shape, kwargs):
    """Values from {0, 1, 2}: windows hold equal maxima; torch routes the gradient (and the index) to the first."""
    x = np.random.default_rng(5).integers(0, 3, shape).astype(np.float64)
    check_op(fn, fn_torch, [x], kwargs, gradcheck_=False)  # values, indices and gradients equal torch's
    y, idx = fn(Tensor(x), **kwargs)
    rows = x.reshape(x.shape[:2] + (-1,))  # (N, C, H·W): the indices are flat in each input plane
    picked = np.take_along_axis(rows, idx.numpy().reshape(x.shape[:2] + (-1,)), -1)
    np.testing.assert_array_equal(picked, y.numpy().reshape(picked.shape))


def test_max_pool_central_differences_on_every_element():
    rng = np.random.default_rng(4)
    x = rng.permutation(2 * 3 * 7 * 8).reshape(2, 3, 7, 8) / 10.0  # distinct values: no ties to straddle
    gradcheck(lambda t: FC.max_pool2d(t, 3, stride=2, padding=1, ceil_mode=True), [x], [True], max_elements=400)
    gradcheck(lambda t: FC.adaptive_max_pool1d(t.reshape(6, 7, 8), 3), [x], [True], max_elements=400)


# ---- modules: torch's state_dict, init, reprs ---------------------------------------------------------------
@pytest.mark.parametrize("name,args,kwargs,shape", [
    ("Conv1d", (4, 6, 3), {}, (2, 4, 9)),
    ("Conv1d", (4, 6, 2), dict(stride=2, padding=1, dilation=2, groups=2, bias=False), (2, 4, 9)),
    ("Conv1d", (4, 6, 4), dict(padding="same"), (4, 9)),
    ("Conv2d", (3, 4, (3, 2)), dict(stride=(2, 1), padding=1), (2, 3, 6, 7)),
    ("Conv2d", (4, 4, 3), dict(padding="same", groups=4, dilation=(1, 2)), (2, 4, 6, 7)),
])
def test_conv_modules_load_torchs_state_dict(name, args, kwargs, shape):
    torch.manual_seed(0)
    t = getattr(torch.nn, name)(*args, **kwargs)
    s = SEQLAB_NN[name](*args, **kwargs)
    check_module(s, t, [shape])  # float64: outputs, input grad, weight and bias grads by name
    check_module(s, t, [shape], dtype="float32")


@pytest.mark.parametrize("name,args,kwargs,shape", [
    ("MaxPool1d", (3,), dict(stride=2, padding=1), (2, 4, 9)),
    ("MaxPool2d", (2,), {}, (2, 3, 6, 8)),
    ("AvgPool1d", (3,), dict(stride=2, padding=1, ceil_mode=True, count_include_pad=False), (2, 4, 10)),
    ("AvgPool2d", ((3, 2),), dict(stride=(2, 1), padding=1, divisor_override=4), (2, 3, 7, 8)),
    ("AdaptiveAvgPool1d", (3,), {}, (2, 4, 10)),
    ("AdaptiveAvgPool2d", ((2, None),), {}, (2, 3, 7, 8)),
    ("AdaptiveMaxPool1d", (1,), {}, (2, 4, 10)),
])
def test_pool_modules_as_torch(name, args, kwargs, shape):
    check_module(SEQLAB_NN[name](*args, **kwargs), getattr(torch.nn, name)(*args, **kwargs), [shape])


def test_pool_modules_return_indices():
    x = np.random.default_rng(1).standard_normal((2, 3, 6, 8))
    y, idx = MaxPool2d(2, return_indices=True)(Tensor(x))
    yt, idxt = torch.nn.MaxPool2d(2, return_indices=True)(torch.tensor(x))
    np.testing.assert_array_equal(idx.numpy(), idxt.numpy())
    assert idx.dtype == np.int64 and np.allclose(y.numpy(), yt.numpy())
    y1, idx1 = AdaptiveMaxPool1d(3, return_indices=True)(Tensor(x[0]))
    np.testing.assert_array_equal(idx1.numpy(), torch.nn.AdaptiveMaxPool1d(3, return_indices=True)(
        torch.tensor(x[0]))[1].numpy())


def test_conv_init_is_torchs_and_dtype_device_are_taken():
    seqlab.manual_seed(0)
    m = Conv2d(16, 32, (3, 5), groups=2, dtype=np.float64, device="cpu")
    bound = 1 / np.sqrt(16 // 2 * 3 * 5)  # kaiming_uniform(a=√5) = U(−1/√fan_in, 1/√fan_in)
    w, b = m.weight.numpy(), m.bias.numpy()
    assert w.shape == (32, 8, 3, 5) and b.shape == (32,) and w.dtype == b.dtype == np.float64
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.95 * bound
    assert abs(w.std() - bound / np.sqrt(3)) < 0.05 * bound  # a uniform's std
    assert np.abs(b).max() <= bound and b.std() > 0.3 * bound
    assert Conv1d(4, 8, 3, bias=False).bias is None and [n for n, _ in Conv1d(4, 8, 3).named_parameters()] == \
        ["weight", "bias"]
    assert Conv1d(4, 8, 3).weight.dtype == np.float32


@pytest.mark.parametrize("ctor", [
    "Conv1d(3, 4, 3)", "Conv1d(4, 4, 3, padding='valid')", "Conv1d(4, 4, 3, padding=(1,))",
    "Conv2d(3, 4, (3, 5), stride=2, padding=1, dilation=2, bias=False)", "Conv2d(4, 4, 3, padding='same', groups=2)",
    "MaxPool1d(3)", "MaxPool1d(3, dilation=2, ceil_mode=True)", "MaxPool2d(3, 2, 1, return_indices=True)",
    "MaxPool2d((2, 3))", "AvgPool1d(3)", "AvgPool1d(4, 2, 1)", "AvgPool2d(3)",
    "AvgPool2d(3, 2, 1, ceil_mode=True, count_include_pad=False, divisor_override=2)",
    "AdaptiveAvgPool1d(5)", "AdaptiveAvgPool2d((5, None))", "AdaptiveAvgPool2d(3)", "AdaptiveMaxPool1d(1)",
])
def test_reprs_are_torchs(ctor):
    name, args = ctor.split("(", 1)
    assert repr(eval(f"SEQLAB_NN[{name!r}]({args}")) == repr(eval(f"torch.nn.{ctor}"))


# ---- errors -------------------------------------------------------------------------------------------------
def _x(*shape):
    return Tensor(np.zeros(shape, np.float32))


@pytest.mark.parametrize("call,error,message", [
    (lambda: Conv1d(3, 4, 3)(_x(2, 5, 10)), ValueError,
     "Given groups=1, weight of size [4, 3, 3], expected input[2, 5, 10] to have 3 channels, but got 5 channels"),
    (lambda: Conv1d(5, 4, 30)(_x(2, 5, 10)), ValueError,
     "Calculated padded input size per channel: (10). Kernel size: (30). Kernel size can't be greater"),
    (lambda: Conv2d(5, 4, 3, dilation=(1, 3))(_x(2, 5, 4, 6)), ValueError,
     "Calculated padded input size per channel: (4 x 6). Kernel size: (3 x 7)."),
    (lambda: Conv1d(5, 4, 3)(_x(2, 5, 3, 10)), ValueError,
     "Expected 2D (unbatched) or 3D (batched) input to conv1d, but got input of size: [2, 5, 3, 10]"),
    (lambda: Conv2d(5, 4, 3)(_x(5, 10)), ValueError, "Expected 3D (unbatched) or 4D (batched) input to conv2d"),
    (lambda: Conv1d(5, 4, 3)(Tensor(np.zeros((2, 5, 8), np.int64))), TypeError,
     "conv1d expects floating-point input, got dtype int64"),
    (lambda: FC.conv1d(_x(2, 5, 8), _x(4, 5, 3), _x(3)), ValueError,
     "expected bias to be 1-dimensional with 4 elements, but got bias of size [3]"),
    (lambda: FC.conv1d(_x(2, 5, 8), Tensor(np.zeros((4, 5, 3)))), TypeError,
     "Input type (float32) and weight type (float64) should be the same"),
    (lambda: FC.conv1d(_x(2, 4, 8), _x(5, 2, 3), groups=2), ValueError,
     "expected weight to be divisible by 2 at dimension 0"),
    (lambda: FC.conv1d(_x(2, 4, 8), _x(4, 4, 3), stride=0), ValueError, "non-positive stride is not supported"),
    (lambda: Conv1d(5, 4, 3, groups=2), ValueError, "in_channels must be divisible by groups"),
    (lambda: Conv1d(4, 5, 3, groups=2), ValueError, "out_channels must be divisible by groups"),
    (lambda: Conv1d(4, 4, 3, stride=2, padding="same"), ValueError,
     "padding='same' is not supported for strided convolutions"),
    (lambda: Conv1d(4, 4, 3, padding="full"), ValueError, "Invalid padding string 'full'"),
    (lambda: Conv1d(4, 4, 3, padding_mode="mirror"), ValueError, "padding_mode must be one of"),
    (lambda: Conv2d(4, 4, (3, 3, 3)), ValueError, "Conv2d() kernel_size must be an int or a tuple of 2 ints"),
    (lambda: FC.max_pool1d(_x(2, 5, 10), 3, padding=2), ValueError,
     "max_pool1d() padding should be at most half of kernel size, but got padding=2 and kernel_size=3"),
    (lambda: FC.max_pool2d(_x(2, 5, 2, 10), 3), ValueError,
     "Given input size: (5x2x10). Calculated output size: (5x0x3). Output size is too small"),
    (lambda: FC.avg_pool1d(_x(2, 5, 10), 0), ValueError, "avg_pool1d() kernel_size must be greater than zero"),
    (lambda: FC.avg_pool2d(_x(2, 5, 4, 4), 2, divisor_override=0), ValueError, "divisor must be not zero"),
    (lambda: FC.max_pool1d(_x(10), 2), ValueError, "Expected 2D (unbatched) or 3D (batched) input to max_pool1d"),
    (lambda: FC.adaptive_avg_pool1d(_x(2, 5, 10), (2, 3)), ValueError,
     "adaptive_avg_pool1d() argument 'output_size' should contain one int (got 2)"),
    (lambda: FC.adaptive_max_pool1d(_x(2, 5, 10), -1), ValueError, "elements of output_size must be greater"),
    (lambda: FC.adaptive_avg_pool2d(_x(2, 3, 4, 0), 2), ValueError,
     "input has sizes [2, 3, 4, 0] with dimension 3 being empty"),
])
def test_errors_name_the_values(call, error, message):
    with pytest.raises(error, match=re.escape(message)):
        call()


# ---- the device path: CuPy's stand-in on the CPU, and CuPy itself where a GPU is seen ------------------------

def test_on_the_device_as_on_the_host(cuda):
    rng = np.random.default_rng(9)
    x1, x2 = rng.standard_normal((3, 4, 11)).astype(np.float32), rng.standard_normal((2, 4, 7, 8)).astype(np.float32)
    results = []
    for device in ("cpu", "cuda"):
        seqlab.manual_seed(0)
        c1 = Conv1d(4, 6, 3, padding="same", groups=2).to(device)
        c2 = Conv2d(4, 6, 3, stride=(2, 1), padding=1).to(device)
        a = Tensor(backend.to_device(x1, device), requires_grad=True)
        b = Tensor(backend.to_device(x2, device), requires_grad=True)
        h1 = c1(a)
        y1, i1 = FC.max_pool1d(h1, 3, 2, 1, ceil_mode=True, return_indices=True)
        y2, i2 = FC.adaptive_max_pool1d(h1, 4, return_indices=True)
        h2 = c2(b)
        y3, i3 = FC.max_pool2d(h2, 2, return_indices=True)
        y4 = FC.avg_pool2d(h2, 3, 2, 1, ceil_mode=True, count_include_pad=False)
        y5 = FC.adaptive_avg_pool2d(h2, (2, 3)) + FC.avg_pool1d(h1, 2).sum() + FC.adaptive_avg_pool1d(h1, 2).sum()
        loss = (y1 * y1).sum() + y2.sum() + (y3 * y3).sum() + y4.sum() + (y5 * y5).sum()
        loss.backward()
        assert y3.device == device and i3.device == device and backend.device_of(c2.weight.grad) == device
        results.append([backend.to_numpy(t) for t in (y1.data, i1.data, y2.data, i2.data, y3.data, i3.data,
                                                      y4.data, y5.data, a.grad, b.grad, c1.weight.grad,
                                                      c1.bias.grad, c2.weight.grad, c2.bias.grad)])
    for host, dev in zip(*results):
        assert_close(dev, host, rtol=1e-5, atol=1e-5)


# ---- it trains: a TextCNN (Kim, 2014) -----------------------------------------------------------------------
def test_textcnn_learns_a_word_order_task():
    """Label 1 iff token 3 is directly followed by token 5. Negatives hold both tokens too, in the other order
    or apart, so a bag of words cannot tell; a width-2 filter with max-over-time pooling can."""
    seqlab.manual_seed(0)
    rng = np.random.default_rng(0)
    vocab, length, n = 10, 12, 512

    def draw(k):
        """k sequences over tokens 3..9, half of them holding the bigram (3, 5); 3 and 5 are frequent in both."""
        p = np.array([0.25, 0.1, 0.25, 0.1, 0.1, 0.1, 0.1])  # tokens 3, 4, ..., 9
        ids = rng.choice(np.arange(3, vocab), (8 * k, length), p=p)
        has = ((ids[:, :-1] == 3) & (ids[:, 1:] == 5)).any(1)
        pick = rng.permutation(np.concatenate([np.flatnonzero(has)[:k // 2], np.flatnonzero(~has)[:k // 2]]))
        return ids[pick], has[pick].astype(np.int64)

    class TextCNN(nn.Module):
        def __init__(self):
            super().__init__()
            self.embedding = nn.Embedding(vocab, 8)
            self.conv = Conv1d(8, 16, kernel_size=2)
            self.pool = AdaptiveMaxPool1d(1)
            self.fc = nn.Linear(16, 2)

        def forward(self, ids):
            h = self.embedding(ids).transpose(1, 2)  # (B, E, T): channels first for Conv1d
            h = self.pool(self.conv(h).relu())  # (B, 16, 1): max over time
            return self.fc(h.squeeze(-1))  # (B, 2)

    model = TextCNN()
    opt = Adam(model.parameters(), lr=0.02)
    loss_fn = nn.CrossEntropyLoss()
    ids, labels = draw(n)
    losses = []
    for epoch in range(15):
        for idx in np.array_split(rng.permutation(n), 8):
            loss = loss_fn(model(Tensor(ids[idx])), Tensor(labels[idx]))
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(float(loss.item()))
    test_ids, test_labels = draw(256)
    with seqlab.no_grad():
        accuracy = float((model(Tensor(test_ids)).numpy().argmax(1) == test_labels).mean())
    assert losses[-1] < 0.2 * losses[0], losses[::8]
    assert accuracy > 0.95, accuracy


def test_functional_takes_arrays_and_consts():
    """NumPy arrays in, as other seqlab functional ops take them; a non-differentiable weight still works."""
    rng = np.random.default_rng(2)
    x, w = rng.standard_normal((2, 3, 8)), rng.standard_normal((4, 3, 2))
    y = FC.conv1d(x, w, stride=2)
    assert_close(y.numpy(), TF.conv1d(torch.tensor(x), torch.tensor(w), stride=2).numpy(), rtol=1e-12, atol=1e-12)
    check_op(lambda a, b: FC.conv1d(a, b), lambda a, b: TF.conv1d(a, b), [(2, 3, 8), const(w)])
