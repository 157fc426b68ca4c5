"""Hypothesis drives random shapes, masks, dims and dtypes through ops and modules, against PyTorch.

tests/test_*.py prove each op on chosen shapes; here the shapes, axes, masks (fully masked rows
included), dtypes and magnitudes are drawn. Forward and backward must equal torch's (float64: rel 1e-9;
float32: 1e-5 with a norm-scaled atol, `helpers.check_op`) wherever torch is defined; where it is not
(a fully masked attention row is NaN in torch), seqlab gives zeros and finite gradients.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import seqlab
import seqlab.functional as F
from helpers import assert_close, check_op

torch = pytest.importorskip("torch")
TF = torch.nn.functional

# derandomize: the same draws every run, so a tolerance is never crossed by chance in CI; the draws were
# stress-run at 300 examples each when written.
FUZZ = settings(max_examples=25, deadline=None, derandomize=True)
DTYPE = st.sampled_from(["float64", "float32"])
SCALE = st.sampled_from([1.0, 30.0, 1e4])  # ordinary logits, large ones, the ±1e4 of the issue


def _vs_torch(fn_seqlab, fn_torch, arrays: list[np.ndarray], dtype: str, rtol64: float = 1e-9,
              rtol32: float = 1e-5) -> None:
    """Forward and the gradient of every input equal torch's, with an absolute floor of 1 on the atol.

    (`check_op` scales float64's atol by the largest expected value alone; when a whole gradient is tiny
    because it cancels, e.g. softmax's p·(g − Σpg) for a near one-hot p, both libraries' rounding is
    relative to |g| ~ 1, not to the gradient, and needs the floor.)
    """
    dt = np.dtype(dtype)
    rtol = rtol64 if dtype == "float64" else rtol32
    s_in = [seqlab.tensor(a.astype(dt), requires_grad=True) for a in arrays]
    t_in = [torch.from_numpy(a.astype(dt)).requires_grad_() for a in arrays]
    s_out, t_out = fn_seqlab(*s_in), fn_torch(*t_in)
    g = np.random.default_rng(0).standard_normal(tuple(t_out.shape)).astype(dt)
    s_out.backward(g)
    (t_out * torch.from_numpy(g)).sum().backward()
    pairs = [(s_out.numpy(), t_out.detach().numpy(), "output")]
    pairs += [(a.grad, b.grad.numpy(), f"grad {i}") for i, (a, b) in enumerate(zip(s_in, t_in))]
    for ours, theirs, what in pairs:
        assert ours.dtype == theirs.dtype and np.all(np.isfinite(ours)), what
        assert_close(ours, theirs, rtol, atol=rtol * max(1.0, float(np.abs(theirs).max())), what=what)


def _shape(draw, min_dims=1, max_dims=4, max_side=5):
    return tuple(draw(st.lists(st.integers(1, max_side), min_size=min_dims, max_size=max_dims)))


# ---------------------------------------------------------------- softmax, log-softmax, cross-entropy

@FUZZ
@given(data=st.data(), op=st.sampled_from(["softmax", "log_softmax"]), scale=SCALE, dtype=DTYPE)
def test_softmax_family_random_shapes_dims_and_magnitudes(data, op, scale, dtype):
    shape = _shape(data.draw)
    dim = data.draw(st.integers(-len(shape), len(shape) - 1))
    x = np.random.default_rng(len(shape)).standard_normal(shape) * scale
    _vs_torch(lambda t: getattr(F, op)(t, dim), lambda t: getattr(TF, op)(t, dim=dim), [x], dtype)


@FUZZ
@given(data=st.data(), scale=SCALE, dtype=DTYPE, smoothing=st.sampled_from([0.0, 0.1]),
       reduction=st.sampled_from(["mean", "sum", "none"]))
def test_cross_entropy_random_shapes_targets_and_ignores(data, scale, dtype, smoothing, reduction):
    n, c = data.draw(st.integers(1, 5)), data.draw(st.integers(1, 6))
    extra = _shape(data.draw, min_dims=0, max_dims=2, max_side=3)
    rng = np.random.default_rng(n * 10 + c)
    logits = rng.standard_normal((n, c, *extra)) * scale
    target = rng.integers(0, c, (n, *extra))
    target[rng.random(target.shape) < data.draw(st.sampled_from([0.0, 0.3]))] = -100
    if reduction == "mean" and (target == -100).all():
        target.flat[0] = 0  # all ignored: NaN in both (tests/test_losses.py holds that case)
    kw = dict(ignore_index=-100, label_smoothing=smoothing, reduction=reduction)
    check_op(lambda x, t: F.cross_entropy(x, t, **kw), lambda x, t: TF.cross_entropy(x, t, **kw), [logits, target],
             dtypes=(dtype,), gradcheck_=False)


# ---------------------------------------------------------------- layer norm

@FUZZ
@given(data=st.data(), dtype=DTYPE, affine=st.booleans(), constant=st.booleans(),
       eps=st.sampled_from([1e-5, 1e-12]))
def test_layer_norm_random_shapes_and_constant_rows(data, dtype, affine, constant, eps):
    shape = _shape(data.draw, min_dims=1, max_dims=4)
    k = data.draw(st.integers(1, len(shape)))
    ns = shape[-k:]
    rng = np.random.default_rng(sum(shape))
    x = rng.standard_normal(shape) * data.draw(st.sampled_from([1.0, 1e3]))
    if constant:  # every normalized slice is one repeated value: variance 0
        x = np.broadcast_to(x[(...,) + (slice(0, 1),) * k], shape).copy()
    inputs = [x] + ([rng.standard_normal(ns), rng.standard_normal(ns)] if affine else [])
    if constant or np.prod(ns) == 1:
        # variance 0: the exact output is the bias (0 without one). Computed, x̂ = (x − mean)·rsqrt(eps) is the
        # mean's rounding error amplified up to 1e6 times, in torch as here; the promise is finite values
        # within that noise of the exact answer.
        dt = np.dtype(dtype)
        xs = seqlab.tensor(x.astype(dt), requires_grad=True)
        wb = [seqlab.tensor(a.astype(dt), requires_grad=True) for a in inputs[1:]]
        y = F.layer_norm(xs, ns, *wb, eps=eps)
        y.backward(np.ones(shape, dt))
        assert np.all(np.isfinite(y.numpy())) and np.all(np.isfinite(xs.grad))
        assert all(np.all(np.isfinite(t.grad)) for t in wb)
        w_max = float(np.abs(inputs[1]).max()) if affine else 1.0
        noise = 16 * np.finfo(dt).eps * max(1.0, float(np.abs(x).max())) / np.sqrt(eps) * max(1.0, w_max)
        exact = np.broadcast_to(inputs[2], shape) if affine else np.zeros(shape)
        np.testing.assert_allclose(y.numpy(), exact, rtol=0, atol=noise)
        return
    # rtol32 1e-4: with two close values in a slice, x̂ cancels and rsqrt(var) amplifies float32 rounding
    _vs_torch(lambda t, *wb: F.layer_norm(t, ns, *wb, eps=eps), lambda t, *wb: TF.layer_norm(t, ns, *wb, eps=eps),
              inputs, dtype, rtol64=1e-7, rtol32=1e-4)


# ---------------------------------------------------------------- attention with random masks

@st.composite
def attention_case(draw):
    b, h = draw(st.integers(1, 2)), draw(st.integers(1, 3))
    tq, tk, d = draw(st.integers(1, 5)), draw(st.integers(1, 5)), draw(st.integers(1, 4))
    mask_shape = draw(st.sampled_from([(tq, tk), (b, 1, tq, tk), (b, h, tq, tk), (1, h, 1, tk)]))
    seed = draw(st.integers(0, 2**16))
    rng = np.random.default_rng(seed)
    mask = rng.random(mask_shape) < draw(st.sampled_from([0.2, 0.5, 0.9]))  # True = may attend
    if draw(st.booleans()):  # force a fully masked row somewhere
        mask[(0,) * (mask.ndim - 1)] = False
    scale = draw(st.sampled_from([None, 0.1, 2.0]))
    return rng, (b, h, tq, tk, d), mask, scale


@FUZZ
@given(case=attention_case(), dtype=DTYPE)
def test_sdpa_random_bool_masks_with_fully_masked_rows(case, dtype):
    rng, (b, h, tq, tk, d), mask, scale = case
    dt = np.dtype(dtype)
    q, k, v = (rng.standard_normal(s).astype(dt) for s in [(b, h, tq, d), (b, h, tk, d), (b, h, tk, d)])
    g = rng.standard_normal((b, h, tq, d)).astype(dt)
    full = np.broadcast_to(mask, (b, h, tq, tk))
    dead = ~full.any(-1)  # (b, h, tq): rows that may attend to nothing

    sq, sk, sv = (seqlab.tensor(a, requires_grad=True) for a in (q, k, v))
    out = F.scaled_dot_product_attention(sq, sk, sv, attn_mask=seqlab.tensor(mask), scale=scale)
    out.backward(g)
    assert np.all(out.numpy()[dead] == 0)
    for t in (sq, sk, sv):
        assert np.all(np.isfinite(t.grad))

    # torch is NaN on dead rows; its reference: those rows may attend anywhere and carry no gradient
    tq_, tk_, tv_ = (torch.from_numpy(a.copy()).requires_grad_() for a in (q, k, v))
    ref = TF.scaled_dot_product_attention(tq_, tk_, tv_, attn_mask=torch.from_numpy(full | dead[..., None]),
                                          scale=scale)
    (ref * torch.from_numpy(np.where(dead[..., None], 0, g))).sum().backward()
    rtol, atol = (1e-9, 1e-12) if dtype == "float64" else (1e-5, 1e-5)
    assert_close(out.numpy()[~dead], ref.detach().numpy()[~dead], rtol, atol, what="output")
    for ours, theirs, name in ((sq, tq_, "dq"), (sk, tk_, "dk"), (sv, tv_, "dv")):
        assert_close(ours.grad, theirs.grad.numpy(), rtol, atol * max(1.0, float(np.abs(theirs.grad.numpy()).max())),
                     what=name)


@FUZZ
@given(case=attention_case())
def test_sdpa_causal_random_shapes(case):
    rng, (b, h, tq, tk, d), _, scale = case
    shapes = [(b, h, tq, d), (b, h, tk, d), (b, h, tk, d)]
    if tq > tk:  # torch's causal mask is top-left aligned; a query with no key is a fully masked row
        return
    check_op(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=scale),
             lambda q, k, v: TF.scaled_dot_product_attention(q, k, v, is_causal=True, scale=scale),
             [rng.standard_normal(s) for s in shapes], dtypes=("float64",), gradcheck_=False)


# ---------------------------------------------------------------- modules

@settings(max_examples=10, deadline=None, derandomize=True)
@given(data=st.data(), dtype=DTYPE)
def test_multihead_attention_random_padding(data, dtype):
    """nn.MultiheadAttention against torch's (same weights): random sizes and key padding, weights averaged."""
    from seqlab import nn

    heads = data.draw(st.integers(1, 3))
    e = heads * data.draw(st.integers(1, 3))
    b, tq, tk = data.draw(st.integers(1, 3)), data.draw(st.integers(1, 4)), data.draw(st.integers(1, 5))
    rng = np.random.default_rng(e * 100 + tq * 10 + tk)
    pad = rng.random((b, tk)) < 0.4  # True = padding (torch's convention)
    pad[:, 0] = False  # every example keeps a key (torch is NaN otherwise)
    dt = getattr(torch, dtype)
    torch.manual_seed(0)
    ref = torch.nn.MultiheadAttention(e, heads, batch_first=True, dtype=dt)
    ours = nn.MultiheadAttention(e, heads, batch_first=True, dtype=np.dtype(dtype))
    ours.load_state_dict(ref.state_dict())
    x, mem = rng.standard_normal((b, tq, e)), rng.standard_normal((b, tk, e))
    check_op(lambda q, kv: ours(q, kv, kv, key_padding_mask=pad)[0],
             lambda q, kv: ref(q, kv, kv, key_padding_mask=torch.from_numpy(pad))[0],
             [x, mem], dtypes=(dtype,), gradcheck_=False)
    # the weights: equal values (their gradients: tests/transformer/test_tf_attention.py)
    w = ours(seqlab.tensor(x.astype(dtype)), seqlab.tensor(mem.astype(dtype)), seqlab.tensor(mem.astype(dtype)),
             key_padding_mask=pad)[1]
    with torch.no_grad():
        w_ref = ref(*(torch.from_numpy(a.astype(dtype)) for a in (x, mem, mem)),
                    key_padding_mask=torch.from_numpy(pad))[1]
    assert_close(w.numpy(), w_ref.numpy(), 1e-9 if dtype == "float64" else 1e-5, 1e-6, what="weights")


@FUZZ
@given(data=st.data(), dtype=DTYPE)
def test_layer_norm_module_on_constant_and_huge_rows(data, dtype):
    """nn.LayerNorm (weights from torch's): a varied row equals torch; a constant row (variance 0) gives the
    bias and finite gradients (float64: equal to torch too; float32: torch's own x̂ is rounding noise there)."""
    from seqlab import nn

    c = data.draw(st.integers(1, 8))
    constant = np.full((1, c), data.draw(st.sampled_from([0.0, 3.0, -1e4, 1e4])))
    varied = np.random.default_rng(c).standard_normal((1, c)) * data.draw(st.sampled_from([1.0, 1e4]))
    ref = torch.nn.LayerNorm(c, dtype=getattr(torch, dtype))
    with torch.no_grad():
        ref.weight.normal_()
        ref.bias.normal_()
    ours = nn.LayerNorm(c, dtype=np.dtype(dtype))
    ours.load_state_dict(ref.state_dict())
    for rows in ([varied] if c > 1 else []) + ([constant] if dtype == "float64" else []):
        _vs_torch(lambda x: ours(x), lambda x: ref(x), [rows], dtype, rtol64=1e-7, rtol32=1e-4)
    x = seqlab.tensor(constant.astype(dtype), requires_grad=True)
    out = ours(x)
    out.backward(np.ones_like(constant, dtype=dtype))
    assert np.all(np.isfinite(x.grad)) and np.all(np.isfinite(ours.weight.grad))
    noise = 16 * np.finfo(np.dtype(dtype)).eps * max(1.0, abs(constant).max()) / np.sqrt(ours.eps)
    np.testing.assert_allclose(out.numpy()[0], ours.bias.numpy(), rtol=0,
                               atol=noise * max(1.0, float(np.abs(ours.weight.numpy()).max())))
