"""seqlab.cuda_kernels, each kernel against the composed CuPy formula it replaces (and the softmax against
NumPy), on a GPU: every test but the first skips without CuPy and a GPU (benchmarks/gpu.sh runs this file on
a lent one). The composed formulas are what `SEQLAB_KERNELS=numpy` runs (`kernels.use("numpy")`).
"""
import contextlib

import numpy as np
import pytest

import cupy_stand_in
import seqlab
import seqlab.functional as F
from seqlab import backend, kernels
from seqlab import cuda_kernels as ck
from seqlab.autograd.ops import fused
from seqlab.optim import Adam, AdamW

RNG = np.random.default_rng(0)


def test_the_cpu_stand_in_for_cupy_takes_the_composed_formulas(monkeypatch):
    """In CI "cuda" is the stand-in (tests/cupy_stand_in.py): the kernels decline its arrays, so the device
    path's composed formulas run there, and NumPy arrays are never the kernels' either."""
    xp = cupy_stand_in.install(monkeypatch)
    s = xp.asarray(RNG.standard_normal((2, 5)).astype(np.float32))
    assert not ck.takes(s) and not ck.takes(np.ones(3, np.float32))
    assert ck.softmax_rows(s) is None and kernels.softmax_rows(s) is None and fused.colsum(s).shape == (5,)
    got = F.softmax(seqlab.Tensor(s), dim=-1).data
    np.testing.assert_allclose(backend.to_numpy(got).sum(-1), 1.0, rtol=1e-6)


@pytest.fixture
def cp():
    if not backend.cuda_available():
        pytest.skip("needs CuPy with a GPU")
    return backend.get_xp("cuda")


@contextlib.contextmanager
def composed():
    """The composed CuPy formulas instead of the kernels, for the block."""
    kernels.use("numpy")
    try:
        yield
    finally:
        kernels.use(None)


def host(x):
    return backend.to_numpy(x.data if isinstance(x, seqlab.Tensor) else x)


def grads_of(fn, *arrays):
    """(output, gradients of sum(output · r) for a fixed random r) of fn on Tensors of `arrays`."""
    ts = [seqlab.Tensor(a, requires_grad=True) for a in arrays]
    out = fn(*ts)
    out = out[0] if isinstance(out, tuple) else out
    r = seqlab.Tensor(backend.get_xp("cuda").asarray(
        np.random.default_rng(1).standard_normal(out.shape).astype(np.float32)))
    (out * r).sum().backward()
    return host(out), [host(t.grad) for t in ts]


def kernel_vs_composed(fn, *arrays, rtol=1e-5, atol=1e-6):
    with_kernels = grads_of(fn, *arrays)
    with composed():
        plain = grads_of(fn, *arrays)
    np.testing.assert_allclose(with_kernels[0], plain[0], rtol=rtol, atol=atol)
    for a, b in zip(with_kernels[1], plain[1]):
        np.testing.assert_allclose(a, b, rtol=rtol, atol=atol)
    return with_kernels


def numpy_softmax(z):
    m = z.max(-1, keepdims=True)
    m = np.where(np.isfinite(m), m, 0)
    e = np.exp(z - m)
    total = e.sum(-1, keepdims=True)
    return e / np.where(total == 0, 1, total)


@pytest.mark.parametrize("tk", [5, 37, 1024])
@pytest.mark.parametrize("bias_kind", [None, "causal", "padding", "full", "a blocked row"])
def test_softmax_rows_with_scale_and_broadcast_bias(cp, tk, bias_kind):
    B, H, Tq = 2, 3, 6
    s = RNG.standard_normal((B, H, Tq, tk)).astype(np.float32) * 3
    bias = {None: None,
            "causal": np.where(np.triu(np.ones((Tq, tk), bool), k=1), -np.inf, 0).astype(np.float32),
            "padding": np.where(np.arange(tk) >= tk - 2, -np.inf, 0).astype(np.float32)[None, None, None]
            .repeat(B, 0),
            "full": RNG.standard_normal((B, H, Tq, tk)).astype(np.float32),
            "a blocked row": np.where(np.arange(Tq)[:, None] == 2, -np.inf, 0).astype(np.float32)
            .repeat(tk, 1)}[bias_kind]
    scale = 0.125
    expected = numpy_softmax(s * scale + (0 if bias is None else bias))
    dev_bias = None if bias is None else cp.asarray(bias)
    got, stats = ck.softmax_rows(cp.asarray(s), in_place=False, bias=dev_bias, scale=scale)
    np.testing.assert_allclose(host(got), expected, rtol=2e-6, atol=1e-7)
    if bias_kind == "a blocked row":
        assert not host(got)[:, :, 2].any()  # all blocked: zeros, not NaN
    again, _ = ck.softmax_rows(cp.asarray(s), stats=stats, in_place=False, bias=dev_bias, scale=scale)
    assert bool(cp.array_equal(again, got))  # the statistics given back: the same weights, bitwise


@pytest.mark.parametrize("mask", ["none", "causal", "padding"])
@pytest.mark.parametrize("t, d", [(7, 16), (130, 16)])  # Tk <= D keeps the weights, Tk > D their statistics
def test_attention_forward_and_backward(cp, mask, t, d):
    q, k, v = (cp.asarray(RNG.standard_normal((2, 3, t, d)).astype(np.float32)) for _ in range(3))
    pad = np.ones((2, t), bool)
    pad[1, -3:] = False  # True = may attend (a key padding mask, broadcast over heads and queries)
    kw = {"none": {}, "causal": {"is_causal": True}, "padding": {"attn_mask": pad[:, None, None, :]}}[mask]
    kernel_vs_composed(lambda a, b, c: F.attention(a, b, c, **kw)[0], q, k, v)


def test_attention_dropout_uses_the_kernel_mask_rule(cp):
    q, k, v = (cp.asarray(RNG.standard_normal((2, 2, 40, 8)).astype(np.float32)) for _ in range(3))
    seqlab.manual_seed(3)
    out_k, grads_k = grads_of(lambda a, b, c: F.attention(a, b, c, dropout_p=0.3)[0], q, k, v)
    with composed():
        seqlab.manual_seed(3)
        out_c, grads_c = grads_of(lambda a, b, c: F.attention(a, b, c, dropout_p=0.3)[0], q, k, v)
    np.testing.assert_allclose(out_k, out_c, rtol=1e-5, atol=1e-6)
    for a, b in zip(grads_k, grads_c):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_dropout_kernel_is_the_formula_bitwise(cp):
    x = cp.asarray(RNG.standard_normal((33, 70)).astype(np.float32))
    keep = cp.asarray(RNG.random((33, 70)) > 0.25)
    scale = np.float32(1 / 0.75)
    assert bool(cp.array_equal(ck.dropout(x, keep, scale), x * keep * scale))


@pytest.mark.parametrize("n", [3, 100, 5000])
def test_softmax_and_log_softmax(cp, n):
    x = cp.asarray(RNG.standard_normal((4, 7, n)).astype(np.float32) * 4)
    kernel_vs_composed(lambda a: F.softmax(a, dim=-1), x)
    kernel_vs_composed(lambda a: F.log_softmax(a, dim=-1), x)


@pytest.mark.parametrize("smoothing", [0.0, 0.1])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_cross_entropy(cp, smoothing, reduction):
    logits = cp.asarray(RNG.standard_normal((50, 1003)).astype(np.float32) * 3)
    target = RNG.integers(0, 1003, 50)
    target[[3, 17]] = -100  # ignored rows
    tgt = cp.asarray(target)
    out, (g,) = kernel_vs_composed(
        lambda a: F.cross_entropy(a, tgt, label_smoothing=smoothing, reduction=reduction), logits)
    assert not g[[3, 17]].any()


@pytest.mark.parametrize("d", [100, 768])
@pytest.mark.parametrize("affine", [True, False])
def test_layer_norm(cp, d, affine):
    x = cp.asarray((RNG.standard_normal((3, 41, d)) * 2 + 1).astype(np.float32))
    w = cp.asarray(RNG.standard_normal(d).astype(np.float32))
    b = cp.asarray(RNG.standard_normal(d).astype(np.float32))
    if affine:
        kernel_vs_composed(lambda a, ww, bb: F.layer_norm(a, (d,), ww, bb), x, w, b, rtol=1e-4, atol=1e-5)
    else:
        kernel_vs_composed(lambda a: F.layer_norm(a, (d,)), x, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("rows, d", [(1, 5), (1000, 33), (8192, 768), (70000, 3)])
def test_column_sums(cp, rows, d):
    a = cp.asarray(RNG.standard_normal((rows, d)).astype(np.float32))
    expected = host(a).astype(np.float64).sum(0)
    np.testing.assert_allclose(host(ck.column_sums(a)), expected, rtol=1e-4, atol=1e-3)


def test_linear_bias_gradient(cp):
    x = cp.asarray(RNG.standard_normal((4, 9, 20)).astype(np.float32))
    w = cp.asarray(RNG.standard_normal((30, 20)).astype(np.float32))
    b = cp.asarray(RNG.standard_normal(30).astype(np.float32))
    kernel_vs_composed(lambda a, ww, bb: F.linear(a, ww, bb), x, w, b)


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu(cp, approximate):
    x = cp.asarray((RNG.standard_normal((17, 300)) * 3).astype(np.float32))
    kernel_vs_composed(lambda a: F.gelu(a, approximate), x)


@pytest.mark.parametrize("opt", [lambda p: AdamW(p, lr=1e-2, weight_decay=0.1),
                                 lambda p: Adam(p, lr=1e-2, weight_decay=0.1)])
def test_adam_steps(cp, opt):
    start = RNG.standard_normal((37, 11)).astype(np.float32)

    def run():
        p = seqlab.Tensor(cp.asarray(start), requires_grad=True)
        o = opt([p])
        for i in range(3):
            o.zero_grad()
            ((p * p).sum() * (i + 1)).backward()
            o.step()
        return host(p)

    got = run()
    with composed():
        expected = run()
    assert not np.array_equal(got, start)
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-7)
