"""seqlab.kernels: the compiled row kernels against the plain formulas in float64, the ops on
both paths, and the switch between them.

The `test` extra installs Numba, so these run in CI; without it they skip
(and every other test runs the NumPy formulas, as they then do anyway).
"""
import os
import subprocess
import sys

import numpy as np
import pytest
import torch

import seqlab
import seqlab.functional as F
from seqlab import kernels, mkl
from seqlab.autograd.ops import fused
from seqlab.errors import ConfigError

HAVE_NUMBA = kernels.use("auto") == "numba"
kernels.use(None)
pytestmark = pytest.mark.skipif(not HAVE_NUMBA, reason="Numba is not installed")

rng = np.random.default_rng(0)


def f32(*shape, scale=1.0):
    return (rng.standard_normal(shape) * scale).astype(np.float32)


@pytest.fixture
def on(monkeypatch):
    """The kernels on for the test, whatever SEQLAB_KERNELS says; back to the environment's choice after."""
    assert kernels.use("numba") == "numba"
    yield
    kernels.use(None)


def ln_reference(x, w, b, eps):
    x = x.astype(np.float64)
    mu = x.mean(-1, keepdims=True)
    r = 1 / np.sqrt(((x - mu) ** 2).mean(-1, keepdims=True) + eps)
    xhat = (x - mu) * r
    return xhat * w + b, mu, r


@pytest.mark.parametrize("affine", [True, False])
@pytest.mark.parametrize("shape", [(7, 5), (300, 256), (1, 1)])
def test_layer_norm_forward_matches_float64(on, shape, affine):
    x = f32(*shape, scale=3.0) + 2.0  # a mean far from 0: the two-pass variance must not cancel
    w, b = (f32(shape[1]), f32(shape[1])) if affine else (None, None)
    y, mu, r = kernels.layer_norm_forward(x, w, b, 1e-5)
    ry, rmu, rr = ln_reference(x, 1.0 if w is None else w, 0.0 if b is None else b, 1e-5)
    assert y.dtype == mu.dtype == r.dtype == np.float32 and mu.shape == r.shape == (shape[0], 1)
    np.testing.assert_allclose(y, ry, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(mu, rmu, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(r, rr, rtol=1e-5)


def test_layer_norm_keeps_x_not_xhat_and_its_backward_survives_the_kernels_switched_off(on):
    """The op keeps the kernel's input, μ and r (no x̂ array); kernels switched off before backward: the NumPy
    formula computes x̂ from them, and the gradients agree with the kernel's and torch's."""
    x, w, b, g = f32(6, 5, 16, scale=3.0) + 2.0, f32(16), f32(16), f32(6, 5, 16)

    def grads(switch_off):
        op = fused.LayerNorm()
        op.needs_input_grad = (True, True, True)
        y = op.forward(x, w, b)
        assert len(op.saved) == 4 and np.shares_memory(op.saved[0], x)  # x itself, μ, r, w
        if switch_off:
            kernels.use("numpy")
        try:
            return (y, *op.backward(g))
        finally:
            kernels.use("numba")

    xt, wt, bt = (torch.from_numpy(a).requires_grad_(True) for a in (x, w, b))
    yt = torch.nn.functional.layer_norm(xt, (16,), wt, bt, 1e-5)
    want = (yt.detach().numpy(), *(a.numpy() for a in torch.autograd.grad(yt, [xt, wt, bt], torch.from_numpy(g))))
    for got in (grads(False), grads(True)):
        for a, t in zip(got, want):
            np.testing.assert_allclose(a, t, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("shape", [(9, 6), (300, 256)])
def test_layer_norm_backward_matches_float64(on, shape):
    """Backward from x, μ and r (x̂ computed again), against float64's formula on x̂ computed in float64."""
    x, w, g = f32(*shape, scale=3.0) + 2.0, f32(shape[1]), f32(*shape)
    _, mu, r = kernels.layer_norm_forward(x, w, f32(shape[1]), 1e-5)
    gx, gw, gb = kernels.layer_norm_backward(g, x, mu, r, w)
    g64, r64 = g.astype(np.float64), ln_reference(x, 1.0, 0.0, 1e-5)[2]
    xh64 = (x.astype(np.float64) - x.astype(np.float64).mean(-1, keepdims=True)) * r64
    gh = g64 * w
    want = r64 * (gh - gh.mean(-1, keepdims=True) - xh64 * (gh * xh64).mean(-1, keepdims=True))
    np.testing.assert_allclose(gx, want, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(gw, (g64 * xh64).sum(0), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(gb, g64.sum(0), rtol=1e-4, atol=1e-4)


def masked_scores(*shape):
    s = f32(*shape, scale=4.0)
    s[..., np.triu(np.ones(shape[-2:], bool), 1)] = -np.inf  # causal
    s[..., 0, :] = -np.inf  # one row with every key blocked
    return s


def test_softmax_rows_match_float64_and_give_zero_rows_for_all_blocked(on):
    s = masked_scores(3, 4, 6, 6)
    with np.errstate(invalid="ignore"):
        s64 = s.astype(np.float64)
        m = np.max(s64, -1, keepdims=True)
        m[~np.isfinite(m)] = 0
        e = np.exp(s64 - m)
        t = e.sum(-1, keepdims=True)
        t[t == 0] = 1
    got, (gm, gt) = kernels.softmax_rows(s.copy())
    np.testing.assert_allclose(got, e / t, rtol=1e-6, atol=1e-7)
    assert np.all(got[..., 0, :] == 0) and not np.isnan(got).any()
    np.testing.assert_array_equal(gm, m.astype(np.float32))
    np.testing.assert_allclose(gt, t, rtol=1e-6)
    again, _ = kernels.softmax_rows(s.copy(), stats=(gm, gt))  # from the saved statistics: bitwise the same
    assert np.array_equal(again, got)
    before = s.copy()
    for stats in (None, (gm, gt)):  # out of place: the input is read, not written, and the values are the same
        out, _ = kernels.softmax_rows(s, stats=stats, in_place=False)
        assert out is not s and np.array_equal(out, got) and np.array_equal(s, before, equal_nan=True)


def test_softmax_rows_with_inf_or_nan_are_nan_as_torch_gives_them(on):
    """+inf or NaN anywhere in a row (the max's chains and e^x's range checks must let NaN through)."""
    x = np.array([[np.inf, 1, 2, 3, 4, 5, 6, 7, 8], [1, 2, 3, 4, 5, 6, 7, 8, np.inf], [1, 2, 3, 4, np.nan, 6, 7, 8, 9],
                  [np.nan, 1, 2, 3, 4, 5, 6, 7, 8], [1, 2, 3, 4, 5, 6, 7, 8, 9]], np.float32)
    got, _ = kernels.softmax_rows(x.copy())
    want = torch.softmax(torch.from_numpy(x), -1).numpy()
    assert np.isnan(got[:4]).all() and np.isnan(want[:4]).all()
    np.testing.assert_allclose(got[4], want[4], rtol=1e-6)


def test_softmax_array_takes_the_kernel_along_the_last_axis_only(on, monkeypatch):
    calls = []
    real = kernels.softmax_rows
    monkeypatch.setattr(kernels, "softmax_rows", lambda s, stats=None, in_place=True: (
        calls.append((s.shape, in_place)), real(s, stats, in_place))[1])
    x = f32(4, 5)
    np.testing.assert_allclose(fused.softmax_array(x.T.copy(), 0).T, fused.softmax_array(x, -1), rtol=1e-6)
    assert calls == [((4, 5), False)]  # axis 0: NumPy's formula; the last axis: the kernel, on a copy
    y = x.copy()
    assert fused.softmax_array(y, -1, overwrite=True) is y and calls[-1] == ((4, 5), True)


def test_softmax_backward_matches_float64_in_place_too(on):
    w = kernels.softmax_rows(masked_scores(2, 5, 7, 7))[0]
    g = f32(*w.shape)
    want = w.astype(np.float64) * (g - (g.astype(np.float64) * w).sum(-1, keepdims=True))
    np.testing.assert_allclose(kernels.softmax_backward(g, w), want, rtol=1e-5, atol=1e-6)
    g2 = g.copy()
    assert kernels.softmax_backward(g2, w, out=g2) is g2
    np.testing.assert_allclose(g2, want, rtol=1e-5, atol=1e-6)


def test_column_sums_match_float64_and_take_only_c_order_float32(on):
    for shape in [(1, 5), (31, 3), (100, 48), (768, 130)]:  # one row; under a block; blocks with a short last
        a = f32(*shape)
        got = kernels.column_sums(a)
        assert got.shape == shape[1:] and got.dtype == np.float32
        np.testing.assert_allclose(got, a.astype(np.float64).sum(0), rtol=1e-5, atol=1e-5)
    a = f32(40, 6)
    a[3, 2], a[5, 4] = np.inf, np.nan
    got = kernels.column_sums(a)
    assert np.isposinf(got[2]) and np.isnan(got[4]) and np.isfinite(np.delete(got, [2, 4])).all()
    assert kernels.column_sums(a.T) is None and kernels.column_sums(a.astype(np.float64)) is None
    assert kernels.column_sums(a[0]) is None  # 1-D


def test_linear_bias_gradient_takes_the_column_sums(on, monkeypatch):
    calls = []
    real = kernels.column_sums
    monkeypatch.setattr(kernels, "column_sums", lambda a: (calls.append(a.shape), real(a))[1])
    x, w, b = f32(3, 7, 5), f32(4, 5), f32(4)
    xs, ws, bs = (seqlab.Tensor(v, requires_grad=True) for v in (x, w, b))
    F.linear(xs, ws, bs).sum().backward()
    tx, tw, tb = (torch.tensor(v, requires_grad=True) for v in (x, w, b))
    torch.nn.functional.linear(tx, tw, tb).sum().backward()
    assert calls == [(21, 4)]
    np.testing.assert_allclose(bs.grad, tb.grad.numpy(), rtol=1e-6)


def test_log_softmax_rows_match_float64_and_numpy_on_inf_and_nan(on):
    x = f32(37, 65, scale=5.0)  # 37 rows: two blocks of 32, the second short; 65 classes (gpt-train's)
    x[1, :10] = -np.inf  # some classes impossible: −inf there, the rest finite
    x[2] = -np.inf  # every class impossible
    x[3, 7], x[4, 64], x[5, 0] = np.inf, np.nan, np.nan  # +inf or NaN anywhere (first, middle, last)
    got = kernels.log_softmax_rows(x)
    with np.errstate(invalid="ignore"):
        kernels.use("numpy")
        try:
            plain = fused.log_softmax_array(x, -1)
        finally:
            kernels.use("numba")
    np.testing.assert_array_equal(np.isnan(got), np.isnan(plain))
    assert np.isnan(got[2:6]).all() and np.isneginf(got[1, :10]).all()
    x64 = x[[0, 1, *range(6, 37)]].astype(np.float64)
    with np.errstate(invalid="ignore"):
        m = x64.max(-1, keepdims=True)
        want = x64 - m - np.log(np.exp(x64 - m).sum(-1, keepdims=True))
    np.testing.assert_allclose(got[[0, 1, *range(6, 37)]], want, rtol=1e-6, atol=2e-6)
    np.testing.assert_allclose(got, torch.log_softmax(torch.from_numpy(x), -1).numpy(), rtol=1e-6, atol=2e-6)
    assert kernels.log_softmax_rows(x.T) is None and kernels.log_softmax_rows(x.astype(np.float64)) is None
    np.testing.assert_allclose(kernels.log_softmax_rows(x[6:].reshape(1, 31, 65)), got[6:][None], rtol=0, atol=0)


@pytest.mark.parametrize("eps", [0.0, 0.1])
def test_cross_entropy_backward_kernel_matches_the_numpy_formula(on, eps):
    logp = kernels.log_softmax_rows(f32(40, 13, scale=3.0))
    target = rng.integers(0, 13, 40)
    scale = np.where(rng.random(40) > 0.2, np.float32(1 / 33), np.float32(0))  # some rows ignored
    got = kernels.cross_entropy_backward(logp, target, scale, eps)
    want = np.exp(logp.astype(np.float64)) - eps / 13
    want[np.arange(40), target] -= 1 - eps
    np.testing.assert_allclose(got, want * scale[:, None], rtol=1e-6, atol=1e-8)
    assert (got[scale == 0] == 0).all()
    assert kernels.cross_entropy_backward(logp, target.astype(np.float32), scale, eps) is None
    assert kernels.cross_entropy_backward(logp, target[:5], scale, eps) is None
    for bad in (-1, 13):  # a class outside 0..C − 1: not read (the NumPy formula's indexing says so)
        wrong = target.copy()
        wrong[7] = bad
        assert kernels.cross_entropy_backward(logp, wrong, scale, eps) is None


def test_cross_entropy_op_takes_the_kernels_and_matches_torch(on, monkeypatch):
    calls = []
    for name in ("log_softmax_rows", "cross_entropy_backward"):
        real = getattr(kernels, name)
        monkeypatch.setattr(kernels, name, lambda *a, _r=real, _n=name: (calls.append(_n), _r(*a))[1])
    x = f32(50, 7, scale=2.0)
    y = rng.integers(0, 7, 50)
    y[:4] = -100
    for eps in (0.0, 0.2):
        calls.clear()
        xt = seqlab.Tensor(x, requires_grad=True)
        loss = F.cross_entropy(xt, seqlab.tensor(y), label_smoothing=eps)
        loss.backward()
        tx = torch.tensor(x, requires_grad=True)
        tl = torch.nn.functional.cross_entropy(tx, torch.tensor(y), label_smoothing=eps)
        tl.backward()
        np.testing.assert_allclose(float(loss.item()), tl.item(), rtol=1e-6)
        np.testing.assert_allclose(xt.grad, tx.grad.numpy(), rtol=1e-5, atol=1e-8)
        assert calls == ["log_softmax_rows", "cross_entropy_backward"]


def test_dropout_is_bitwise_the_numpy_formula(on):
    x = f32(6, 50)
    x[0, :3] = [np.nan, np.inf, -np.inf]
    keep = rng.random(x.shape) > 0.3
    keep[0, :3] = False
    scale = np.float32(1 / 0.7)
    with np.errstate(invalid="ignore"):
        want = x * keep
        want *= scale
    got = kernels.dropout(x, keep, scale)
    np.testing.assert_array_equal(got, want)  # NaN where NaN, inf·0 = NaN, as NumPy's product
    kernels.dropout(x, keep, scale, out=x)
    np.testing.assert_array_equal(x, want)


def test_keyed_dropout_is_bitwise_the_numpy_formula_with_the_mask_of_its_key(on):
    from seqlab import random as R

    for n in (1, 2, 5, 2 * (1 << 14) + 3):
        x = f32(n)
        x[:1] = np.nan
        key, threshold, scale = 2**63 + 11, R.keep_threshold(0.25), np.float32(1 / 0.75)
        with np.errstate(invalid="ignore"):
            want = x * R.splitmix_keep(n, key, threshold)
            want *= scale
        np.testing.assert_array_equal(kernels.keyed_dropout(x, key, threshold, scale), want)
        np.testing.assert_array_equal(kernels.keyed_dropout(x.reshape(1, n, 1), key, threshold, scale),
                                      want.reshape(1, n, 1))
    assert kernels.keyed_dropout(f32(4, 3).T, 1, 2, 1.0) is None  # not in C order: the caller makes the mask


def test_keep_mask_kernel_is_bitwise_the_numpy_formula(on):
    from seqlab import random as R

    for n in (0, 1, 2, 3, 1000, 2 * (1 << 14) + 1, 5 * (1 << 14) + 6):
        for key, threshold in ((0, 0), (2**64 - 1, 2**32 - 1), (987654321, R.keep_threshold(0.1))):
            got = kernels.keep_mask(n, key, threshold)
            assert got.dtype == np.bool_ and got.shape == (n,)
            np.testing.assert_array_equal(got, R.splitmix_keep(n, key, threshold))
    assert kernels.keep_mask(10, 1, 0).all()  # every draw is >= 0


@pytest.mark.parametrize("decoupled", [True, False])
@pytest.mark.parametrize("weight_decay", [0.0, 0.05])
@pytest.mark.parametrize("scalar", [float, np.float64])  # NumPy float64 settings: NumPy 2 would compute in float64
def test_adam_kernel_is_bitwise_the_numpy_update(decoupled, weight_decay, scalar):
    from seqlab.optim import Adam, AdamW

    def train(path):
        kernels.use(path)
        try:
            r = np.random.default_rng(4)
            params = [seqlab.Tensor(r.standard_normal(s).astype(np.float32), requires_grad=True)
                      for s in [(40, 300), (7,), (3 * (1 << 14) + 1,)]]  # the last: several blocks, one short
            params[1].data[:3] = [np.inf, -0.0, 1e-30]
            opt = (AdamW if decoupled else Adam)(params, lr=scalar(0.0123), betas=(scalar(0.85), scalar(0.995)),
                                                 eps=scalar(1e-6), weight_decay=scalar(weight_decay))
            for step in range(3):
                for p in params:
                    p.grad = r.standard_normal(p.shape).astype(np.float32) * 10.0 ** (step - 1)
                params[1].grad[3:5] = [np.nan, 0.0]
                with np.errstate(invalid="ignore"):  # inf/inf = NaN where Adam's L2 term meets θ = inf
                    opt.step()
        finally:
            kernels.use(None)
        return [a for p in params for a in (p.data, opt.state[id(p)]["exp_avg"], opt.state[id(p)]["exp_avg_sq"])]

    compiled, plain = train("numba"), train("numpy")
    for a, b in zip(compiled, plain):
        np.testing.assert_array_equal(a, b)
    assert np.isnan(compiled[3][3]) and np.isposinf(compiled[3][0]) == (not (weight_decay and not decoupled))


ADAM_CONSTS = (0.99, 0.0, 0.1, 0.999, 0.001, 0.3, 1e-8, 0.01)  # AdamW's decay, no L2, step 3 or so


def _adam_rows(sizes, seed=5):
    r = np.random.default_rng(seed)
    return [tuple((r.standard_normal(n) * s).astype(np.float32) for s in (1.0, 1.0, 0.1, 0.01)) for n in sizes]


def _abs_v(rows):
    for row in rows:
        np.abs(row[3], out=row[3])  # v is a running mean of squares
    return rows


def test_adam_many_is_bitwise_one_adam_call_per_parameter(on):
    sizes = [1, 7, 128, (1 << 14) + 3, 3 * (1 << 14), 5]  # blocks of 2^14: partial, whole, several
    many, one = _abs_v(_adam_rows(sizes)), _abs_v(_adam_rows(sizes))
    cache = {}
    for _ in range(2):  # the second step reads the addresses kept in the cache
        for p, g, _, _ in many:
            g[:] = np.random.default_rng(len(p)).standard_normal(p.shape)
        assert kernels.adam_many(many, ADAM_CONSTS, cache)
        for (_, g, _, _), row in zip(many, one):
            row[1][:] = g
            assert kernels.adam(*row, ADAM_CONSTS)
    for a, b in zip(many, one):
        for x, y in zip(a, b):
            np.testing.assert_array_equal(x, y)
    assert [c[0] for c in cache["arrays"]] == [r[0] for r in many]


def test_adam_many_takes_every_row_or_none(on):
    rows = _abs_v(_adam_rows([10, 20]))
    before = [tuple(a.copy() for a in r) for r in rows]
    strided = np.zeros(40, np.float32)[::2]
    strided[:] = rows[1][1]
    for bad in ([rows[0], (rows[1][0], strided, *rows[1][2:])],  # a gradient not in C order (a strided view)
                [rows[0], tuple(a.astype(np.float64) for a in rows[1])],  # float64
                [rows[0], (rows[1][0], rows[1][1][:10], *rows[1][2:])],  # shapes differ
                [rows[0], tuple(a[:0] for a in rows[1])]):  # empty
        assert not kernels.adam_many(bad, ADAM_CONSTS, {})
    for r, b in zip(rows, before):  # nothing was changed
        for x, y in zip(r, b):
            np.testing.assert_array_equal(x, y)
    assert not kernels.adam_many([], ADAM_CONSTS, {})
    kernels.use("numpy")
    assert not kernels.adam_many(rows, ADAM_CONSTS, {})


def test_adam_many_reads_new_arrays_in_place_of_kept_ones(on):
    rows = _abs_v(_adam_rows([30, 40]))
    cache = {}
    assert kernels.adam_many(rows, ADAM_CONSTS, cache)
    old_p = rows[1][0]
    new = tuple(a.copy() for a in rows[1])
    want = tuple(a.copy() for a in new)
    assert kernels.adam(*want, ADAM_CONSTS)
    kept = old_p.copy()
    assert kernels.adam_many([rows[0], new], ADAM_CONSTS, cache)  # parameter 1's arrays replaced
    for x, y in zip(new, want):
        np.testing.assert_array_equal(x, y)
    np.testing.assert_array_equal(old_p, kept)  # the array the cache held before is left alone


def test_address_cache_copies_start_empty():
    import copy
    import pickle

    cache = kernels.AddressCache({"a": {"table": np.zeros(3)}})
    for c in (copy.copy(cache), copy.deepcopy(cache), pickle.loads(pickle.dumps(cache))):
        assert type(c) is kernels.AddressCache and c == {}
    assert "a" in cache


def test_adam_kernel_takes_only_float32_arrays_of_one_shape(on):
    p, g = f32(4, 3), f32(4, 3)
    consts = (1.0, 0.0, 0.1, 0.999, 0.001, 1.0, 1e-8, 0.001)
    assert not kernels.adam(p, g.T.copy().T, p.copy(), p.copy(), consts)  # a transposed gradient: NumPy's loop
    assert not kernels.adam(p.astype(np.float64), g.astype(np.float64), p, p, consts)
    assert not kernels.adam(p, g.reshape(3, 4), p.copy(), p.copy(), consts)
    kernels.use("numpy")
    assert not kernels.adam(p, g, p.copy(), p.copy(), consts)


def gelu_reference(x, approximate):
    """(GELU(x), GELU'(x)) in float64."""
    from scipy.special import ndtr

    x = x.astype(np.float64)
    if approximate == "tanh":  # ½(1 + tanh u) as 1/(1 + e^(−2u)): 1 + tanh u would cancel in the left tail
        k = np.sqrt(2 / np.pi)
        e = np.exp(-2 * k * (x + 0.044715 * x ** 3))
        h = 1 / (1 + e)
        return x * h, h + 2 * x * h * (e * h) * k * (1 + 3 * 0.044715 * x * x)
    return x * ndtr(x), ndtr(x) + x * np.exp(-x * x / 2) / np.sqrt(2 * np.pi)


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_matches_float64_closer_than_torch(on, approximate):
    x = np.concatenate([np.linspace(-14, 14, 200_001), rng.standard_normal(50_000) * 3]).astype(np.float32)
    g = f32(x.size)
    want_y, want_d = gelu_reference(x, approximate)
    y, dx = kernels.gelu_forward(x, approximate), kernels.gelu_backward(x, g, approximate)
    assert y.dtype == dx.dtype == np.float32
    # Φ (or h) within 1.5e-7 plus y's own rounding: 2e-7·|x| (MKL's and NumPy's paths are held to the same)
    assert np.all(np.abs(y - want_y) <= 2e-7 * np.abs(x) + 1e-30)
    # GELU' within 3e-7 absolute (it is at most 1.13 in size); torch's float32 kernels are off by up to 1e-6
    assert np.abs(dx - g * want_d).max() <= 3e-7 * np.abs(g).max()
    xt = torch.from_numpy(x)
    torch_y = torch.nn.functional.gelu(xt, approximate=approximate).numpy()
    torch_d = torch.ops.aten.gelu_backward(torch.ones_like(xt), xt, approximate=approximate).numpy()
    assert np.abs(kernels.gelu_backward(x, np.ones_like(x), approximate) - want_d).max() <= np.abs(
        torch_d - want_d).max()
    np.testing.assert_allclose(y, torch_y, rtol=1e-5, atol=1.5e-6)  # torch's own error: up to 1.2e-6


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_special_values(on, approximate):
    """0, ±subnormal, ±huge, NaN as torch gives them; in the far left tail the float64 values, which torch's
    float32 kernels round to 0 (GELU'(−7) = −6.4e-11); +inf gives inf (torch's exact form: NaN, ∞·½(1 + 1))."""
    x = np.array([0.0, -0.0, 1e-45, -1e-45, 1e-30, -1e-30, 7.0, -7.0, 40.0, -40.0, 1e30, -1e30, np.nan, -np.inf],
                 np.float32)
    xt = torch.from_numpy(x)
    ty = torch.nn.functional.gelu(xt, approximate=approximate).numpy()
    td = torch.ops.aten.gelu_backward(torch.ones_like(xt), xt, approximate=approximate).numpy()
    y, dx = kernels.gelu_forward(x, approximate), kernels.gelu_backward(x, np.ones_like(x), approximate)
    np.testing.assert_allclose(y, ty, rtol=1e-6, atol=1e-10)  # NaN where torch's is NaN (assert_allclose's rule)
    np.testing.assert_allclose(dx, td, rtol=1e-6, atol=1e-10)
    want_y, want_d = gelu_reference(x[:8], approximate)  # up to ±7 (beyond, float64's e^(−2u) overflows too)
    np.testing.assert_allclose(y[:8], want_y, rtol=1e-5, atol=1e-11)  # exact GELU: Φ = 0 below −6.5
    np.testing.assert_allclose(dx[:8], want_d, rtol=1e-5, atol=1e-11)
    assert kernels.gelu_forward(np.array([np.inf], np.float32), approximate)[0] == np.inf


def test_gelu_backward_from_the_output_is_as_close_to_float64(on):
    """The exact GELU's backward as the op runs it, Φ(x) = y/x from the forward's output: within the same
    bound of float64 as the kernel that computes Φ again, and torch's values at the special points."""
    from seqlab.autograd.ops import activation
    from seqlab import _numba_kernels as compiled

    x = np.concatenate([np.linspace(-14, 14, 200_001), rng.standard_normal(50_000) * 3,
                        [0.0, -0.0, 1e-45, -1e-45, 1e-30, -1e-30, 2.0 ** -60, 40.0, -40.0, 1e30, -1e30]]).astype(
        np.float32)
    g = f32(x.size)
    _, want_d = gelu_reference(x, "none")
    dx = kernels.gelu_backward(x, g, y=kernels.gelu_forward(x))
    assert dx.dtype == np.float32 and not np.array_equal(dx, kernels.gelu_backward(x, g))  # y/x did run
    assert np.abs(dx - g * want_d).max() <= 3e-7 * np.abs(g).max()
    special = np.array([0.0, -0.0, 1e-45, -1e-30, 7.0, -7.0, 40.0, -40.0, 1e30, -1e30, np.nan, -np.inf], np.float32)
    xt = torch.from_numpy(special)
    td = torch.ops.aten.gelu_backward(torch.ones_like(xt), xt, approximate="none").numpy()
    got = kernels.gelu_backward(special, np.ones_like(special), y=kernels.gelu_forward(special))
    np.testing.assert_allclose(got, td, rtol=1e-6, atol=1e-10)  # NaN exactly where torch's is NaN
    assert compiled._TINY_SQUARE == np.float32(activation._TINY_SQUARE)


def test_embedding_backward_is_add_at_bitwise(on):
    """Rows summed by id in position order, as np.add.at: the same bits, repeated ids included; ids the
    kernel does not take (out of range, not integers, not 1-D) are left to the caller's formula."""
    from seqlab.autograd.ops import fused

    ids = np.concatenate([rng.integers(0, 50, 3000), np.full(40, 7)])  # id 7 many times over
    g = f32(ids.size, 200, scale=1e3)
    want = np.zeros((50, 200), np.float32)
    np.add.at(want, ids, g)
    got = kernels.embedding_backward(ids, g, 50)
    assert got.dtype == np.float32 and np.array_equal(got, want)
    assert np.array_equal(fused.embedding_backward(ids.astype(np.int32), g, 50), want)  # the op's path
    assert kernels.embedding_backward(ids, g, 40) is None  # id 49 is out of range for 40 rows
    assert kernels.embedding_backward(ids.astype(np.float64), g, 50) is None
    assert kernels.embedding_backward(ids.reshape(-1, 1), g, 50) is None
    assert kernels.embedding_backward(ids, g.astype(np.float64), 50) is None


def test_gelu_exp_is_within_two_ulp_and_saturates():
    from seqlab import _numba_kernels as compiled

    v = np.concatenate([np.linspace(-87, 88, 4001), rng.uniform(-10, 10, 1000)]).astype(np.float32)
    got = np.array([compiled._exp(a) for a in v], np.float32)
    want = np.exp(v.astype(np.float64))
    assert np.all(np.abs(got - want) <= 2 * np.spacing(want.astype(np.float32)))
    assert compiled._exp(np.float32(-90)) == 0 and compiled._exp(np.float32(89)) == np.inf
    assert np.isnan(compiled._exp(np.float32(np.nan)))
    # GELU's Φ calls the version without range checks: the same values inside the range, and Φ's argument
    # -2c·P(c²), |c| ≤ the clip, stays well inside it
    assert np.array_equal(np.array([compiled._exp_in_range(a) for a in v], np.float32), got)
    from seqlab.autograd.ops import activation

    c = np.linspace(-activation._TANH_CLIP, activation._TANH_CLIP, 10_001)
    fit = np.polynomial.polynomial.polyval(c * c, np.array(activation._TANH_CDF, np.float64))
    assert np.abs(2 * c * fit).max() < 30


def test_gelu_kernels_use_the_documented_fit_of_phi():
    from seqlab import _numba_kernels as compiled
    from seqlab.autograd.ops import activation

    assert [compiled._P0, compiled._P1, compiled._P2, compiled._P3, compiled._P4, compiled._P5, compiled._P6,
            compiled._P7] == [np.float32(c) for c in activation._TANH_CDF]
    assert compiled._CDF_CLIP == np.float32(activation._TANH_CLIP)


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_op_is_the_same_on_both_paths(approximate):
    x, g = f32(4, 6, 33, scale=3.0), f32(4, 6, 33)

    def run():
        xs = seqlab.tensor(x, requires_grad=True)
        y = F.gelu(xs, approximate=approximate)
        y.backward(seqlab.tensor(g))
        return np.array(y.data), np.array(xs.grad)

    for y, d in _run_both(run):  # each path within its bounds of float64 (they differ most in the far tail)
        want_y, want_d = gelu_reference(x, approximate)
        assert np.all(np.abs(y - want_y) <= 2e-7 * np.abs(x) + 1e-30)
        np.testing.assert_allclose(d, g * want_d, rtol=1e-5, atol=2e-6)


def test_arrays_the_kernels_do_not_take_get_none(on):
    x = f32(4, 6)
    assert kernels.layer_norm_forward(x.astype(np.float64), None, None, 1e-5) is None  # float64
    assert kernels.layer_norm_forward(f32(4, 12)[:, ::2], None, None, 1e-5) is None  # not C order
    assert kernels.layer_norm_forward(np.empty((0, 6), np.float32), None, None, 1e-5) is None
    assert kernels.softmax_rows(x.T) is None
    assert kernels.softmax_backward(x, x[:1]) is None  # would broadcast
    assert kernels.dropout(x, (x > 0).astype(np.float32), 2.0) is None  # float mask
    assert kernels.dropout(x, np.ones((1, 6), bool), 2.0) is None  # broadcast mask
    assert kernels.gelu_forward(x.astype(np.float64)) is None and kernels.gelu_forward(x.T) is None
    assert kernels.gelu_forward(x, out=np.empty((6, 4), np.float32)) is None  # out of another shape
    assert kernels.gelu_backward(x, x[:1]) is None  # would broadcast
    kernels.use("numpy")
    assert kernels.layer_norm_forward(x, None, None, 1e-5) is None and kernels.library() == "numpy"


def test_the_parallel_threshold_goes_by_numbas_layer_unless_set(on, monkeypatch):
    """min_parallel(): 2^15 values on OpenMP, and on TBB where the pool runs the large products too
    (`gemm_split`: NumPy's OpenBLAS), 2^19 on TBB beside a BLAS's own threads (measured in docs/results.md),
    MIN_PARALLEL if set; a parallel twin is taken only at or above it (two threads asked for)."""
    from seqlab import _numba_kernels as compiled

    tbb = 1 << 15 if kernels._products_on_pool() else 1 << 19
    assert kernels.min_parallel() == {"omp": 1 << 15, "tbb": tbb}[kernels._parallel_layer()]
    for split in (True, False):
        monkeypatch.setattr(kernels, "GEMM_SPLIT", split)
        for layer, least in (("omp", 1 << 15), ("tbb", tbb if split else 1 << 19)):
            def pool(_layer=layer):
                return _layer
            pool.cache_clear = lambda: None  # as the cached function's (kernels.use clears it)
            monkeypatch.setattr(kernels, "_parallel_layer", pool)
            assert kernels.min_parallel() == least
    monkeypatch.setattr(kernels, "MIN_PARALLEL", 1000)
    assert kernels.min_parallel() == 1000
    kernels.set_threads(2)
    try:
        assert kernels._twin(compiled, "softmax", 999) is compiled.softmax
        assert kernels._twin(compiled, "softmax", 1000) is compiled.softmax_parallel
    finally:
        kernels.set_threads(None)


@pytest.fixture
def two_threads(on, monkeypatch):
    """The kernels' parallel twins for every array (no size threshold), on two threads."""
    monkeypatch.setattr(kernels, "MIN_PARALLEL", 0)
    kernels.set_threads(2)
    assert kernels._parallel_ok(), "Numba's thread pool did not start (OpenMP, or the test extra's tbb)"
    yield
    kernels.set_threads(None)


def test_parallel_twins_give_the_same_values_bitwise(two_threads, monkeypatch):
    from seqlab import _numba_kernels as compiled

    x, g, w, b = f32(100, 48), f32(100, 48), f32(48), f32(48)  # 4 blocks of rows, the last one short
    keep = rng.random(x.shape) > 0.5
    big = f32(3 * (1 << 14) + 5)  # 4 blocks, the last one short
    ids, wide = rng.integers(0, 7, 100), f32(100, 150)

    def adam_step():
        p, m, v = big.copy(), big * 0.1, big * big
        assert kernels.adam(p, big[::-1].copy(), m, v, (0.99, 0.0, 0.1, 0.999, 0.001, 0.3, 1e-8, 0.01))
        rows = _abs_v(_adam_rows([3, 1 << 14, 2 * (1 << 14) + 5, 100]))  # 5 blocks of 2^14 in all
        assert kernels.adam_many(rows, ADAM_CONSTS, {})
        return p, m, v, *(a for row in rows for a in row)

    def every_kernel():
        y, mu, r = kernels.layer_norm_forward(x, w, b, 1e-5)
        grads = kernels.layer_norm_backward(g, x, mu, r, w)
        s, stats = kernels.softmax_rows(x.copy())
        again, _ = kernels.softmax_rows(x.copy(), stats=stats)
        return (y, mu, r, *grads, s, *stats, again, kernels.softmax_backward(g, s), kernels.dropout(x, keep, 3.0),
                kernels.keep_mask(3 * (1 << 14) * 2 + 1, 2**64 - 5, 2**31), *adam_step(),
                kernels.keyed_dropout(big, 2**64 - 5, 2**31, 1.25), *(f(*a, approximate=m) for m in ("none", "tanh")
                  for f, a in ((kernels.gelu_forward, (x,)), (kernels.gelu_backward, (x, g)))),
                kernels.gelu_backward(x, g, y=kernels.gelu_forward(x)),
                kernels.embedding_backward(ids, wide, 7),  # 7 rows in the twin's 8 blocks: one block empty
                *(f for act in kernels.ACTIVATIONS for key in (None, 2**64 - 5) for f in bias_act(act, key)),
                *sums(), *short_attention(), kernels.log_softmax_rows(wide),
                kernels.cross_entropy_backward(kernels.log_softmax_rows(wide), ids, wide[:, 0].copy(), 0.1))

    q, k, v, dout = (f32(1, 3, 21, 16) for _ in range(4))  # short attention: 3 heads, 2 threads take 1 and 2
    block, keep_w = np.triu(np.ones((21, 21), bool), 1), rng.random((1, 3, 21, 21)) > 0.2

    def short_attention():
        plan = kernels.short_attention_plan(q, k, v, None, block, keep_w)
        out, wts, stats = kernels.short_attention_forward(q, k, v, 0.25, plan, keep_w, 1.25)
        return (out, wts, *stats, *kernels.short_attention_backward(q, k, v, dout, 0.25, plan, keep_w, 1.25, stats))

    def sums():  # no serial twins: on one thread these are NumPy's own a + b and y += b
        total = kernels.add(big, big[::-1].copy())
        total = big + big[::-1] if total is None else total
        y2, bias = wide.copy(), wide[3].copy()
        if not kernels.add_rows(y2, bias):
            y2 += bias
        return total, y2

    def bias_act(act, key):
        out = kernels.bias_act_dropout(x, b, act, key, 2**31, 2.0)
        return (out, *kernels.bias_act_dropout_backward(g, x, b, out, act, key, 2**31, 2.0))

    twins = {n for n in dir(compiled) if n.endswith("_parallel") and not n.startswith("_")}
    assert len(twins) == 21
    called = set()
    for name in twins:
        real = getattr(compiled, name)
        monkeypatch.setattr(compiled, name, lambda *a, _r=real, _n=name: (called.add(_n), _r(*a))[1])
    parallel = every_kernel()
    assert called == twins
    kernels.set_threads(1)
    for a, b_ in zip(parallel, every_kernel()):
        assert np.array_equal(a, b_)


def test_the_parallel_sums_take_only_what_they_can_and_linear_and_add_use_them(two_threads):
    """add / add_rows: None / False for what NumPy must do (broadcasting, float64, views, one thread, the flag
    off); Linear's bias and the residual add give NumPy's values bitwise through them."""
    a, b = f32(64, 40), f32(64, 40)
    assert np.array_equal(kernels.add(a, b), a + b)
    assert kernels.add(a, b[:1]) is None and kernels.add(a.astype(np.float64), b) is None
    assert kernels.add(a[:, ::2], b[:, ::2]) is None and kernels.add(a, b.tolist()) is None
    assert not kernels.add_rows(a, b[0][:7]) and not kernels.add_rows(a[:, ::2], b[0][:20])
    x, w, bias = f32(3, 21, 40), f32(24, 40), f32(24)
    want = x.reshape(-1, 40) @ w.T + bias
    assert np.array_equal(F.linear(seqlab.tensor(x), seqlab.tensor(w), seqlab.tensor(bias)).numpy().reshape(-1, 24),
                          (seqlab.tensor(x.reshape(-1, 40)) @ seqlab.tensor(w.T)).numpy() + bias)
    np.testing.assert_allclose(F.linear(seqlab.tensor(x), seqlab.tensor(w), seqlab.tensor(bias)).numpy(),
                               want.reshape(3, 21, 24), rtol=1e-5, atol=1e-5)
    assert np.array_equal((seqlab.tensor(a) + seqlab.tensor(b)).numpy(), a + b)
    kernels.PARALLEL_SUMS = False
    try:
        assert kernels.add(a, b) is None and not kernels.add_rows(a, b[0])
    finally:
        kernels.PARALLEL_SUMS = True
    kernels.set_threads(1)
    assert kernels.add(a, b) is None and not kernels.add_rows(a, b[0])


@pytest.mark.parametrize("mask", ["causal", "padding", "float"])
def test_softmax_rows_add_a_broadcast_bias_as_numpy_would_bitwise(two_threads, mask):
    """softmax_rows(s, bias=m) is softmax(s + m) bitwise (the same float32 sums, made in the kernel) for
    attention's masks: causal (1, 1, T, T), padding (B, 1, 1, T), a float bias (1, H, T, T); the recompute
    from the statistics too, on one thread as well. Biases it cannot take (broadcast along the keys,
    float64, larger than s) give None."""
    B, H, T = 3, 2, 9
    s = f32(B, H, T, T, scale=3.0)
    s0 = s.copy()
    if mask == "float":
        bias = f32(1, H, T, T)
    else:
        block = (np.triu(np.ones((T, T), bool), 1)[None, None] if mask == "causal"
                 else (np.arange(T) >= np.array([9, 4, 0])[:, None])[:, None, None, :])  # the last: all blocked
        bias = np.where(block, np.float32(-np.inf), np.float32(0))
    want, (wm, wt) = kernels.softmax_rows(s + bias, in_place=False)
    got, (gm, gt) = kernels.softmax_rows(s, bias=bias, in_place=False)
    assert np.array_equal(got, want) and np.array_equal(gm, wm) and np.array_equal(gt, wt)
    for n in (2, 1):
        kernels.set_threads(n)
        again, _ = kernels.softmax_rows(s, stats=(gm, gt), bias=bias, in_place=False)
        assert np.array_equal(again, want)
    assert kernels.softmax_rows(s, bias=bias, in_place=False) is None  # one thread, no statistics: NumPy adds
    kernels.set_threads(2)
    for other in (bias[..., :1], bias.astype(np.float64), np.broadcast_to(bias, (2, B, H, T, T)).copy()):
        assert kernels.softmax_rows(s, bias=other, in_place=False) is None
    assert np.array_equal(s, s0)  # in_place=False: s untouched


def test_set_blas_threads_sets_the_kernels_count_too():
    from seqlab.blas import blas_threads

    try:
        with blas_threads(2) as got:
            assert got is None or kernels.threads() == 2
        kernels.set_threads(3)
        assert kernels.threads() == 3
        with pytest.raises(ValueError, match="kernel threads must be >= 1"):
            kernels.set_threads(0)
    finally:
        kernels.set_threads(None)


def _python(code: str, *args: str, **env) -> subprocess.CompletedProcess:
    """`code` in a fresh Python with `args` as sys.argv[1:]; `env` added to this environment (None: removed)."""
    merged = {**os.environ, **env}
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=300,
                          env={k: v for k, v in merged.items() if v is not None})


_FORK = """
import os, numpy as np
from seqlab import kernels
kernels.MIN_PARALLEL = 0; kernels.set_threads(2)
x = np.random.default_rng(0).standard_normal((64, 16)).astype(np.float32)
want = kernels.layer_norm_forward(x, None, None, 1e-5)[0]
assert kernels._parallel_ok()
print(kernels._parallel_layer())
pid = os.fork()
if pid == 0:
    same = np.array_equal(kernels.layer_norm_forward(x, None, None, 1e-5)[0], want)
    os._exit(0 if same and kernels._parallel_ok() == (kernels._parallel_layer() == "tbb") else 3)
print(os.waitpid(pid, 0)[1])
"""


@pytest.mark.parametrize("layer", ["omp", "tbb"])
def test_a_forked_child_runs_the_kernels_on_one_thread_unless_the_pool_is_tbb(layer):
    """The parent runs a parallel kernel, forks, and the child runs it again and gets the same values. On
    GNU OpenMP's pool (the default beside MKL) the child runs it on one thread: Numba stops a forked child
    that uses that pool (SIGTERM, 15, as the child's status). TBB's pool survives the fork and the child
    keeps it."""
    proc = _python(_FORK, SEQLAB_KERNELS="numba", NUMBA_THREADING_LAYER=layer)
    assert proc.returncode == 0 and proc.stdout.split() == [layer, "0"], (proc.stdout, proc.stderr[-2000:])


_POOL = """
import sys
for blocked in sys.argv[1:]:  # the pool's module fails to import, as without its library (libgomp, libtbb)
    sys.modules["numba.np.ufunc." + blocked] = None
from seqlab import kernels
print(kernels._parallel_layer(), kernels.min_parallel(), kernels.describe().split(", ")[1])
"""

_MKL_MISSING = pytest.mark.skipif(mkl.mkl_path() is None, reason="the mkl package is not installed")


@pytest.mark.parametrize("blas, blocked, want", [
    ("numpy", (), "tbb 32768 TBB pool"),  # the products on the pool too (gemm_split)
    ("numpy", ("tbbpool",), "None 524288 one thread"),  # never GNU OpenMP beside OpenBLAS's spinning threads
    pytest.param("mkl", (), "omp 32768 OpenMP pool", marks=_MKL_MISSING),
    pytest.param("mkl", ("omppool",), "tbb 524288 TBB pool", marks=_MKL_MISSING),
], ids=["openblas", "openblas-without-tbb", "mkl", "mkl-without-openmp"])
def test_the_default_pool_goes_by_where_the_products_go(blas, blocked, want):
    """With no NUMBA_THREADING_LAYER set: beside MKL GNU OpenMP's pool (faster there), else TBB's; beside
    NumPy's OpenBLAS TBB's, else one thread (GNU OpenMP's workers and OpenBLAS's took turns on two cores
    there, 9x slower: docs/results.md)."""
    proc = _python(_POOL, *blocked, SEQLAB_KERNELS="numba", SEQLAB_BLAS=blas, NUMBA_THREADING_LAYER=None)
    assert proc.returncode == 0 and proc.stdout.split() == want.split(), (proc.stdout, proc.stderr[-2000:])


def test_without_a_thread_safe_pool_the_kernels_run_on_one_thread():
    """Numba's 'workqueue' pool would abort on calls from two threads at once: seqlab does not use it."""
    code = """
import numpy as np
from seqlab import kernels
kernels.MIN_PARALLEL = 0; kernels.set_threads(2)
x = np.random.default_rng(0).standard_normal((64, 16)).astype(np.float32)
y = kernels.layer_norm_forward(x, None, None, 1e-5)[0]
print(kernels._parallel_ok(), bool(np.allclose(y.mean(-1), 0, atol=1e-6)), kernels.describe().split(", ")[1])
"""
    proc = _python(code, SEQLAB_KERNELS="numba", NUMBA_THREADING_LAYER="workqueue")
    assert proc.returncode == 0 and proc.stdout.split() == ["False", "True", "one", "thread"], proc.stderr[-2000:]


def _run_both(fn):
    """fn() with the kernels on, then with NumPy's formulas."""
    kernels.use("numba")
    on = fn()
    kernels.use("numpy")
    off = fn()
    kernels.use(None)
    return on, off


@pytest.mark.parametrize("shape,nd", [((3, 5, 16), 1), ((2, 4, 6), 2)])
def test_layer_norm_op_is_the_same_on_both_paths_and_matches_torch(shape, nd):
    x, g = f32(*shape), f32(*shape)
    w, b = f32(*shape[-nd:]), f32(*shape[-nd:])

    def run():
        xs, ws, bs = (seqlab.tensor(a, requires_grad=True) for a in (x, w, b))
        y = F.layer_norm(xs, shape[-nd:], ws, bs)
        y.backward(seqlab.tensor(g))
        return [np.array(t) for t in (y.data, xs.grad, ws.grad, bs.grad)]

    on, off = _run_both(run)
    xt, wt, bt = (torch.tensor(a, requires_grad=True) for a in (x, w, b))
    yt = torch.nn.functional.layer_norm(xt, shape[-nd:], wt, bt)
    yt.backward(torch.tensor(g))
    for a, b_, t in zip(on, off, [yt, xt.grad, wt.grad, bt.grad]):
        np.testing.assert_allclose(a, b_, rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(a, t.detach().numpy(), rtol=1e-4, atol=1e-5)


def test_layer_norm_without_grad_computes_y_in_x_hats_place(on):
    x, w, b = f32(4, 8), f32(8), f32(8)
    with seqlab.no_grad():  # nothing keeps x̂: the kernel writes x̂ and y into one array
        y = F.layer_norm(seqlab.tensor(x, requires_grad=True), (8,), seqlab.tensor(w), seqlab.tensor(b))
    np.testing.assert_allclose(np.array(y.data), ln_reference(x, w, b, 1e-5)[0], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dropout", [0.0, 0.25])
def test_attention_op_is_the_same_on_both_paths(dropout):
    """Causal attention with weights recomputed in backward (Tk > D) and attention dropout."""
    q, k, v, g = f32(2, 3, 10, 4), f32(2, 3, 10, 4), f32(2, 3, 10, 4), f32(2, 3, 10, 4)
    block = np.triu(np.ones((10, 10), bool), 1)

    def run():
        seqlab.manual_seed(3)
        ts = [seqlab.tensor(a, requires_grad=True) for a in (q, k, v)]
        out = F.scaled_dot_product_attention(*ts, attn_mask=~block, dropout_p=dropout)
        out.backward(seqlab.tensor(g))
        return [np.array(out.data)] + [np.array(t.grad) for t in ts]

    on, off = _run_both(run)
    for a, b in zip(on, off):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_softmax_and_dropout_ops_are_the_same_on_both_paths():
    x, g = f32(5, 9), f32(5, 9)

    def run():
        seqlab.manual_seed(1)
        xs = seqlab.tensor(x, requires_grad=True)
        y = F.dropout(F.softmax(xs, dim=-1), p=0.5, training=True)
        y.backward(seqlab.tensor(g))
        return np.array(y.data), np.array(xs.grad)

    (y1, g1), (y0, g0) = _run_both(run)
    np.testing.assert_allclose(y1, y0, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(g1, g0, rtol=1e-5, atol=1e-6)


def test_the_ops_really_call_the_kernels(on, monkeypatch):
    from seqlab import _numba_kernels as compiled

    called = set()
    names = {"layer_norm_forward", "layer_norm_backward", "softmax", "softmax_backward", "scale_kept",
             "gelu_forward", "gelu_erf_backward_from_output", "keep_mask", "keyed_dropout", "embedding_backward"}
    for name in names:
        real = getattr(compiled, name)
        monkeypatch.setattr(compiled, name, lambda *a, _real=real, _name=name: (called.add(_name), _real(*a))[1])
    table = seqlab.tensor(f32(5, 8), requires_grad=True)
    xs = F.embedding(np.array([4, 0, 4]), table)
    seqlab.manual_seed(0)
    y = F.dropout(F.softmax(F.gelu(F.layer_norm(xs, (8,))), dim=-1), p=0.5, training=True)
    q = y.reshape(1, 1, 3, 8)
    y = F.scaled_dot_product_attention(q, q, q, dropout_p=0.5)  # attention's dropout: a kept mask
    y.sum().backward()
    assert called == names


def test_gpt_training_step_is_the_same_on_both_paths():
    from seqlab.models.gpt import GPT, GPTConfig

    seqlab.manual_seed(0)
    model = GPT(GPTConfig(vocab_size=50, n_positions=32, n_embd=32, n_layer=2, n_head=4, resid_pdrop=0.1,
                          embd_pdrop=0.1, attn_pdrop=0.1))
    ids = rng.integers(0, 50, (3, 16))

    def step():
        seqlab.manual_seed(5)  # the same dropout masks on both paths
        model.zero_grad()
        loss = model(ids, labels=ids).loss
        loss.backward()
        return float(loss.item()), {n: np.array(p.grad) for n, p in model.named_parameters()}

    (loss_on, grads_on), (loss_off, grads_off) = _run_both(step)
    assert abs(loss_on - loss_off) < 1e-5
    for name, g in grads_off.items():
        np.testing.assert_allclose(grads_on[name], g, rtol=1e-3, atol=1e-5 * max(1.0, np.abs(g).max()), err_msg=name)


def test_use_and_the_environment_choose(monkeypatch):
    try:
        assert kernels.use("numpy") == "numpy" and kernels.describe() == "NumPy"
        assert kernels.use("numba") == "numba" and kernels.describe().startswith("Numba 0.")
        # the parallel twins' pool, by the products' BLAS when it starts; Numba's pool is the process's from
        # then on (test_mkl.py, run first, starts it with the products on MKL: OpenMP)
        started = kernels._parallel_layer.cache_info().currsize and kernels._parallel_layer()
        pool = kernels._POOL_NAMES[started] if started else "OpenMP" if mkl.library() == "mkl" else "TBB"
        assert kernels.describe().endswith(f", {pool} pool")
        with pytest.raises(ValueError, match="unknown kernel choice 'c'"):
            kernels.use("c")
        monkeypatch.setenv("SEQLAB_KERNELS", "numpy")
        assert kernels.use(None) == "numpy"
        monkeypatch.setenv("SEQLAB_KERNELS", "fast")
        with pytest.raises(ConfigError, match="SEQLAB_KERNELS='fast': expected one of auto, numpy, numba"):
            kernels.use(None)
    finally:
        monkeypatch.delenv("SEQLAB_KERNELS", raising=False)
        kernels.use(None)


def test_numba_asked_for_but_missing_is_one_clear_error(monkeypatch):
    monkeypatch.delitem(sys.modules, "seqlab._numba_kernels", raising=False)
    monkeypatch.delattr(seqlab, "_numba_kernels", raising=False)  # imported anew, as in a fresh process
    monkeypatch.setitem(sys.modules, "numba", None)  # import numba raises ImportError
    try:
        with pytest.raises(ConfigError, match=r"SEQLAB_KERNELS=numba but Numba is not usable here "
                           r"\(ModuleNotFoundError: .*\): pip install 'seqlab\[numba\]'"):
            kernels.use("numba")
        assert kernels.use("auto") == "numpy"  # auto without Numba: NumPy, silently
        x = f32(3, 4)
        np.testing.assert_allclose(np.array(F.layer_norm(seqlab.tensor(x), (4,)).data),
                                   ln_reference(x, 1.0, 0.0, 1e-5)[0], rtol=1e-5, atol=1e-5)
    finally:
        monkeypatch.undo()
        kernels.use(None)


def test_benchmarks_and_version_say_which_kernels_ran(cli):
    from seqlab.bench.harness import machine_info

    try:
        kernels.use("numba")
        assert machine_info(1)["seqlab_kernels"].startswith("Numba 0.")
        code, out, _ = cli("--version")
        assert code == 0 and out.rstrip().endswith(f"row kernels on {kernels.describe()})")
        kernels.use("numpy")
        assert machine_info(1)["seqlab_kernels"] == "NumPy"
    finally:
        kernels.use(None)


def test_a_bad_seqlab_kernels_is_one_line_from_the_command_line():
    proc = subprocess.run([sys.executable, "-m", "seqlab", "--version"], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "SEQLAB_KERNELS": "fast"})
    assert proc.returncode == 1 and proc.stdout == ""
    assert proc.stderr.strip() == "error: SEQLAB_KERNELS='fast': expected one of auto, numpy, numba"


def test_softmax_backward_folds_a_scale_in(on):
    g, w = f32(6, 9), f32(6, 9)
    plain = kernels.softmax_backward(g, w)
    np.testing.assert_array_equal(kernels.softmax_backward(g, w, scale=1.0), plain)
    np.testing.assert_allclose(kernels.softmax_backward(g, w, scale=0.125), plain * np.float32(0.125), rtol=1e-6)
