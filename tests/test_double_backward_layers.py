"""Double backward through a Transformer's ops, held to torch: LayerNorm, the fused feed-forward middle
(BiasActDropout), the attention ops, and einsum, prod, cumprod, convolutions and pooling.

Each op's first, second and third derivatives along random directions match torch's in float64 (float32 for
BiasActDropout, which runs only there); with dropout, where torch's masks differ, they match seqlab's own
composed path on the same masks. Then whole layers: a WGAN-GP gradient penalty on a Transformer-encoder
critic gives torch's parameter gradients, and a Hessian-vector product through nn.MultiheadAttention torch's.
"""
import numpy as np
import pytest
import torch
from helpers import wgan_gp_loss
from torch.nn.attention import SDPBackend, sdpa_kernel

import seqlab
from seqlab import autograd, nn
from seqlab import random as seqlab_random
from seqlab.autograd import higher_order

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")  # torch: mixed mask types are deprecated

RNG = np.random.default_rng(1)
TOL = {"float64": {"rtol": 1e-9, "atol": 1e-11}, "float32": {"rtol": 1e-4, "atol": 1e-5}}


def _np(t):
    if t is None or isinstance(t, np.ndarray):  # a .grad is an array in seqlab
        return t
    return np.asarray(t.detach().numpy() if isinstance(t, torch.Tensor) else t.numpy())


def _derivatives(lib, f, arrays, dtype="float64"):
    """[g..., h..., t...] for out = f(lib, *x): g_i = ∂(Σ w·out)/∂x_i, h_i = ∂(Σ_j v_j·g_j)/∂x_i and
    t_i = ∂(Σ_j v_j·h_j)/∂x_i, w and v random (the same for both libraries); None where nothing is left (0)."""
    rng = np.random.default_rng(7)
    xs = [lib.tensor(np.asarray(a), dtype=getattr(lib, dtype), requires_grad=True) for a in arrays]
    out = f(lib, *xs)
    w = lib.tensor(rng.standard_normal(tuple(out.shape)), dtype=out.dtype)
    vs = [lib.tensor(rng.standard_normal(np.shape(a)), dtype=x.dtype) for a, x in zip(arrays, xs)]
    g = lib.autograd.grad((out * w).sum(), xs, create_graph=True, allow_unused=True)
    s = sum((gi * v).sum() for gi, v in zip(g, vs) if gi is not None)
    h = lib.autograd.grad(s, xs, create_graph=True, allow_unused=True)
    s = sum((hi * v).sum() for hi, v in zip(h, vs) if hi is not None)
    t = lib.autograd.grad(s, xs, allow_unused=True) if getattr(s, "requires_grad", False) else [None] * len(xs)
    return [*g, *h, *t]


def _assert_same(got, want, rtol, atol, what=""):
    assert len(got) == len(want)
    for i, (a, b) in enumerate(zip(got, want)):
        a, b = _np(a), _np(b)
        if a is None and b is None:
            continue
        a = np.zeros_like(b) if a is None else a  # a derivative that is 0 everywhere may come as None
        b = np.zeros_like(a) if b is None else b
        np.testing.assert_allclose(a, b, rtol=rtol, atol=atol, err_msg=f"{what} derivative #{i}")


def _check(f, shapes_or_arrays, dtype="float64", torch_f=None, tol=None):
    arrays = [RNG.standard_normal(s) if isinstance(s, tuple) else s for s in shapes_or_arrays]
    got = _derivatives(seqlab, f, arrays, dtype)
    want = _derivatives(torch, torch_f or f, arrays, dtype)
    _assert_same(got, want, **(tol or TOL[dtype]))
    assert all(a is None or a.dtype == np.dtype(dtype) for a in got)
    return got


def _F(lib):
    return lib.nn.functional


# ---- LayerNorm ------------------------------------------------------------------------------------
def _torch_layer_norm(x, shape, w, b, eps):
    """LayerNorm composed from torch's primitives. torch's own F.layer_norm has right first and second
    derivatives but a wrong third one (pytorch/pytorch#175754: its double backward treats the saved mean and
    1/σ as constants), so the third is held to this."""
    dims = tuple(range(-len(shape), 0))
    xc = x - x.mean(dims, keepdim=True)
    y = xc / ((xc * xc).mean(dims, keepdim=True) + eps).sqrt()
    y = y * w if w is not None else y
    return y + b if b is not None else y


LAYER_NORMS = {  # (input shape, normalized shape, affine)
    "affine": ((3, 5, 6), (6,), True),
    "plain": ((4, 6), (6,), False),
    "two_dims": ((2, 3, 4), (3, 4), True),
}


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name", list(LAYER_NORMS))
def test_layer_norm_derivatives(name, dtype, row_kernels):
    """On NumPy's formula (which keeps x̂ only) and on the compiled kernel's (which keeps x, μ, r: float32)."""
    shape, ns, affine = LAYER_NORMS[name]
    arrays = [RNG.standard_normal(shape)] + ([RNG.standard_normal(ns), RNG.standard_normal(ns)] if affine else [])

    def f(lib, x, w=None, b=None):
        if lib is torch:
            return _torch_layer_norm(x, ns, w, b, 1e-3).tanh()
        return _F(lib).layer_norm(x, ns, w, b, eps=1e-3).tanh()

    got = _check(f, arrays, dtype)
    n = len(arrays)
    # torch's fused op agrees on the first and second derivatives
    fused = _derivatives(torch, lambda lib, x, w=None, b=None: _F(lib).layer_norm(x, ns, w, b, eps=1e-3).tanh(),
                         arrays, dtype)
    _assert_same(got[:2 * n], fused[:2 * n], **TOL[dtype])
    # and the first derivative is the plain backward's
    xs = [seqlab.tensor(a, dtype=getattr(seqlab, dtype), requires_grad=True) for a in arrays]
    plain = autograd.grad((f(seqlab, *xs) * seqlab.tensor(np.random.default_rng(7).standard_normal(shape),
                                                          dtype=xs[0].dtype)).sum(), xs)
    _assert_same(got[:n], plain, **TOL[dtype])


def test_rms_norm_is_composed_and_differentiable_to_third_order():
    """F.rms_norm (T5's) is composed from primitive ops, each with a differentiable backward."""
    def f(lib, x, w):
        return _F(lib).rms_norm(x, (6,), w, 1e-6).sin()

    _check(f, [(3, 4, 6), (6,)])


def test_binary_cross_entropy_with_logits_is_composed_and_differentiable_to_third_order():
    target, pos_weight = RNG.uniform(size=(4, 3)), RNG.uniform(0.5, 2.0, 3)

    def f(lib, x):
        return _F(lib).binary_cross_entropy_with_logits(x * x, lib.tensor(target), reduction="none",
                                                        pos_weight=lib.tensor(pos_weight))

    _check(f, [(4, 3)])


def test_binary_cross_entropy_on_probabilities_to_third_order():
    x, y = RNG.uniform(0.1, 0.9, (4, 3)), RNG.uniform(size=(4, 3))
    weight = RNG.uniform(0.5, 2.0, 3)

    def f(lib, p, t):
        return _F(lib).binary_cross_entropy(p, t, weight=lib.tensor(weight), reduction="none")

    _check(f, [x, y])
    _check(lambda lib, p, t: _F(lib).binary_cross_entropy(p, t, reduction="sum"), [x, y])


# ---- the fused feed-forward middle ------------------------------------------------------------------
@pytest.mark.parametrize("activation", ["relu", "gelu", "gelu_tanh"])
def test_bias_act_dropout_without_dropout_matches_torch(activation):
    def f(lib, z, b):
        h = z + b
        if lib is torch:
            y = torch.relu(h) if activation == "relu" else \
                _F(lib).gelu(h, approximate="tanh" if activation == "gelu_tanh" else "none")
        else:
            y = _F(lib).bias_act_dropout(z, b, activation, 0.0)
            assert type(y._ctx).__name__ == "BiasActDropout"  # the fused op (float32, compiled kernels)
        return y * y

    _check(f, [(3, 5, 8), (8,)], "float32", tol={"rtol": 2e-4, "atol": 2e-5})


@pytest.mark.parametrize("activation", ["relu", "gelu", "gelu_tanh"])
def test_bias_act_dropout_uses_the_forwards_mask(activation):
    """With dropout: the fused op's derivatives equal those of the three ops on the same mask (one key from the
    same generator state), its first derivative the fused array backward's, and its output the three ops'."""
    p, shape = 0.4, (4, 6, 10)

    def fused(lib, z, b):
        y = _F(lib).bias_act_dropout(z, b, activation, p, generator=np.random.default_rng(3))
        assert type(y._ctx).__name__ == "BiasActDropout"
        return (y + 0.5) ** 3  # not y², whose derivative would vanish where y was dropped, mask or not

    def composed(lib, z, b):
        h = z + b
        approximate = "tanh" if activation == "gelu_tanh" else "none"
        y = _F(lib).relu(h) if activation == "relu" else _F(lib).gelu(h, approximate)
        return (_F(lib).dropout(y, p, generator=np.random.default_rng(3)) + 0.5) ** 3

    arrays = [RNG.standard_normal(shape), RNG.standard_normal(shape[-1])]
    got = _derivatives(seqlab, fused, arrays, "float32")
    want = _derivatives(seqlab, composed, arrays, "float32")
    _assert_same(got, want, rtol=1e-4, atol=1e-5)
    xs = [seqlab.tensor(a, dtype=seqlab.float32, requires_grad=True) for a in arrays]
    out = fused(seqlab, *xs)
    np.testing.assert_allclose(out.numpy(), composed(seqlab, *xs).numpy(), rtol=1e-5, atol=1e-6)
    keep = seqlab_random.keep_mask(shape, p, np.random.default_rng(3))
    assert keep.mean() < 0.8 and (out.numpy()[~keep] == np.float32(0.125)).all()  # dropped where the mask says
    w = seqlab.tensor(np.random.default_rng(7).standard_normal(shape), dtype=seqlab.float32)
    _assert_same(got[:2], autograd.grad((out * w).sum(), xs), rtol=1e-5, atol=1e-6)


# ---- attention -----------------------------------------------------------------------------------
def _torch_attention(q, k, v, bias=None, block=None, scale=1.0, keep=None, p=0.0):
    """softmax(q kᵀ · scale + bias, −inf where blocked) v, rows with every key blocked 0 (seqlab's rule;
    torch's SDPA gives NaN there), dropout by `keep`: the formula, in torch's primitives."""
    s = (q @ k.transpose(-1, -2)) * scale
    if bias is not None:
        s = s + bias
    if block is not None:
        block = torch.as_tensor(block)
        s = s.masked_fill(block, -torch.inf)
        dead = block.all(-1, keepdim=True).expand(s.shape)
        w = s.masked_fill(dead, 0.0).softmax(-1).masked_fill(dead, 0.0)
    else:
        w = s.softmax(-1)
    if keep is not None:
        w = w * torch.as_tensor(keep.astype(np.float64) / (1 - p), dtype=w.dtype)
    return w @ v


B, H, T, S, D = 2, 2, 4, 5, 3
CAUSAL = np.triu(np.ones((T, T), dtype=bool), k=1)  # True = blocked
SOME = RNG.random((T, S)) < 0.35
SOME[:, 0] = False
DEAD = SOME.copy()
DEAD[2] = True  # a query row with every key blocked


def _sdpa_case(mask, bias, shapes=((B, H, T, D), (B, H, S, D), (B, H, S, D))):
    """F.scaled_dot_product_attention (True = may attend) against the formula; `bias` a learned additive mask
    (a Tensor that wants its gradient, as T5's position bias) or None."""
    def f(lib, q, k, v, *b):
        if lib is torch:
            return _torch_attention(q, k, v, b[0] if b else None, mask, scale=0.6).tanh()
        attn_mask = b[0] if b else (None if mask is None else ~mask)
        if b and mask is not None:
            attn_mask = b[0].masked_fill(mask, -np.inf)
        return _F(lib).scaled_dot_product_attention(q, k, v, attn_mask=attn_mask, scale=0.6).tanh()

    return f, list(shapes) + ([bias] if bias is not None else [])


ATTENTION = {
    "plain": _sdpa_case(None, None),
    "blocked_keys": _sdpa_case(SOME, None),
    "dead_row": _sdpa_case(DEAD, None),
    "learned_bias": _sdpa_case(None, (H, T, S)),
    "bias_and_block": _sdpa_case(SOME, (1, H, T, S)),
    "broadcast_kv": _sdpa_case(None, None, ((B, H, T, D), (B, 1, S, D), (1, H, S, D))),
    "causal_self": (lambda lib, q, k, v: (_torch_attention(q, k, v, None, CAUSAL, D ** -0.5) if lib is torch else
                                          _F(lib).scaled_dot_product_attention(q, k, v, is_causal=True)) ** 2,
                    [(B, H, T, D), (B, H, T, D), (B, H, T, D)]),
}


@pytest.mark.parametrize("name", list(ATTENTION))
def test_attention_derivatives(name):
    f, shapes = ATTENTION[name]
    got = _check(f, shapes)
    assert got[0].requires_grad


def test_sdpa_matches_torchs_own_sdpa_to_third_order():
    def f(lib, q, k, v):
        if lib is torch:
            with sdpa_kernel(SDPBackend.MATH):  # the CPU flash kernel has no double backward in torch
                return _F(lib).scaled_dot_product_attention(q, k, v, attn_mask=torch.as_tensor(~SOME)).exp()
        return _F(lib).scaled_dot_product_attention(q, k, v, attn_mask=~SOME).exp()

    _check(f, [(B, H, T, D), (B, H, S, D), (B, H, S, D)])


def _chunked_case(causal, window, bias_shape=None, dead=False):
    """memory_efficient_attention / sliding_window_attention with 2-row, 2-key chunks (several blocks, some
    skipped) against the formula on the same mask; `bias_shape`: a float attn_mask (a constant);
    `dead`: a bool attn_mask that blocks every key of one query row."""
    bias = np.random.default_rng(11).standard_normal(bias_shape) if bias_shape else None  # RNG: other tests' data stays
    ii, jj = np.arange(T)[:, None], np.arange(T)[None, :]
    ok = np.ones((T, T), dtype=bool) if window is None else (np.abs(ii - jj) <= window)
    if causal:
        ok &= jj <= ii
    allowed = None
    if dead:
        allowed = np.ones((T, T), dtype=bool)
        allowed[1] = False
        ok = ok & allowed

    def f(lib, q, k, v):
        if lib is torch:
            return _torch_attention(q, k, v, None if bias is None else torch.as_tensor(bias), ~ok, 0.7).sin()
        mask = allowed if dead else bias
        return lib.nn.memory_efficient_attention(q, k, v, attn_mask=mask, is_causal=causal, scale=0.7,
                                                  window=window, chunk_size=2).sin()

    return f, [(B, H, T, D), (B, H, T, D), (B, H, T, D)]


CHUNKED = {
    "plain": _chunked_case(False, None),
    "causal": _chunked_case(True, None),
    "causal_window": _chunked_case(True, 1),
    "two_sided_window": _chunked_case(False, 1),
    "float_mask": _chunked_case(True, None, (H, T, T)),
    "dead_row": _chunked_case(False, None, dead=True),
}


@pytest.mark.parametrize("name", list(CHUNKED))
def test_chunked_attention_derivatives(name):
    f, shapes = CHUNKED[name]
    got = _check(f, shapes)
    assert got[0].requires_grad


@pytest.mark.parametrize("packed", [False, True])
def test_attention_with_dropout_uses_the_forwards_mask(packed):
    """Attention (q, k, v) and PackedAttention (one qkv) with dropout on the weights: the keep mask drawn from
    a generator is drawn again here from the same state, and torch's formula with it gives the same
    derivatives; a learned bias gets its own."""
    p, E = 0.3, H * D

    def split(lib, qkv):
        parts = qkv.reshape(B, T, 3, H, D)
        return [parts[:, :, i].transpose(1, 2) for i in range(3)]  # (B, H, T, D) each

    def f(lib, qkv, bias):
        keep = seqlab_random.keep_mask((B, H, T, T), p, np.random.default_rng(11))
        if lib is torch:
            return _torch_attention(*split(lib, qkv), bias, CAUSAL, 0.5, keep, p).sin()
        mask = bias.masked_fill(CAUSAL, -np.inf)
        if packed:
            out, _ = _F(lib).attention_qkv(qkv, H, attn_mask=mask, dropout_p=p, scale=0.5,
                                           generator=np.random.default_rng(11))
            assert type(out._ctx).__name__ == "PackedAttention"
        else:
            out, _ = _F(lib).attention(*split(lib, qkv), attn_mask=mask, dropout_p=p, scale=0.5,
                                       generator=np.random.default_rng(11))
            assert type(out._ctx).__name__ == "Attention"
        return out.sin()

    _check(f, [(B, T, 3 * E), (H, T, T)])


# ---- einsum, prod, cumprod -------------------------------------------------------------------------
X = RNG.uniform(0.5, 2.0, (3, 4))
XZ = X.copy()
XZ[0, 1] = XZ[1, 2] = XZ[1, 3] = XZ[2, 0] = XZ[2, 3] = 0.0  # one, two and two zeros in a row
W34 = RNG.standard_normal((3, 4))

REDUCTIONS = {
    "einsum_matmul": (lambda lib, a, b: lib.einsum("ij,jk->ik", a, b).tanh(), [X, (4, 4)]),
    "einsum_batched_heads": (lambda lib, q, k: lib.einsum("bhqd,bhkd->bhqk", q, k).exp(), [(2, 2, 3, 4), (2, 2, 5, 4)]),
    "einsum_broadcast": (lambda lib, a, b: lib.einsum("...j,kj->...k", a, b) ** 2, [X, (1, 4)]),
    "einsum_diagonal": (lambda lib, a, b: (lib.einsum("ii,ij->ij", a, b) * lib.einsum("jj->j", a)) ** 2,
                        [(3, 3), (3, 3)]),
    "diagonal_views": (lambda lib, a: lib.diagonal(a, -1, 2, 0) ** 3 * a[0].diag(1).sum()
                       + a.diagonal(0, -1, -2).tanh().sum(), [(3, 3, 4)]),
    "einsum_trace": (lambda lib, a: lib.einsum("iji->j", a) * lib.einsum("iji->ij", a).sum(0) ** 2,
                     [(3, 4, 3)]),
    "einsum_three": (lambda lib, a, b, c: lib.einsum("ij,jk,kl->il", a, b, c).sin(), [(2, 3), (3, 4), (4, 2)]),
    "prod": (lambda lib, x: x.prod(1, keepdim=True) * x, [X]),
    "prod_zeros": (lambda lib, x: x.prod(1, keepdim=True) * x + x.prod(0), [XZ]),
    "prod_all": (lambda lib, x: x.prod() * x, [X]),
    "cumprod": (lambda lib, x: x.cumprod(1) * x, [X]),
    "cumprod_zeros": (lambda lib, x: x.cumprod(1) * x, [XZ]),
    "cumprod_zeros_dim0": (lambda lib, x: x.cumprod(0) * x.exp(), [XZ]),
}


@pytest.mark.parametrize("name", list(REDUCTIONS))
def test_einsum_prod_cumprod_derivatives(name):
    f, arrays = REDUCTIONS[name]
    _check(f, arrays)


def test_einsum_with_letters_summed_inside_one_operand_to_second_order():
    """'ik,jl->ij' sums k and l inside one operand each: second derivatives as torch's. The third derivative's
    pass is the plain engine's, which hits a bug of its own here (not double backward's): Einsum's backward
    hands back a read-only broadcast view for such a letter, engine._fresh counts it as a buffer it may add
    into, and a second gradient reaching the same node raises 'output array is read-only'."""
    def f(lib, a, b):
        return lib.einsum("ik,jl->ij", a, b).exp()

    arrays = [RNG.standard_normal((3, 2)), RNG.standard_normal((4, 5))]
    results = []
    for lib in (seqlab, torch):
        xs = [lib.tensor(a, requires_grad=True) for a in arrays]
        g = lib.autograd.grad((f(lib, *xs) * lib.tensor(W34)).sum() + (f(lib, *xs) ** 2).sum(), xs, create_graph=True)
        h = lib.autograd.grad((g[0] * lib.tensor(arrays[0])).sum() + (g[1] ** 2).sum(), xs, create_graph=True)
        results.append([*g, *h])
    _assert_same(*results, **TOL["float64"])


def test_einsum_with_a_letter_summed_inside_one_operand_third_derivative():
    _check(lambda lib, a, b: lib.einsum("ik,jl->ij", a, b).exp(), [(3, 2), (4, 5)])


# ---- convolution and pooling -------------------------------------------------------------------------
CONV_POOL = {
    "conv1d": (lambda lib, x, w, b: _F(lib).conv1d(x, w, b, stride=2, padding=1, dilation=2).tanh(),
               [(2, 4, 9), (6, 4, 3), (6,)]),
    "conv1d_groups": (lambda lib, x, w: _F(lib).conv1d(x, w, None, padding=2, groups=2) ** 2, [(2, 4, 7), (6, 2, 3)]),
    "conv2d": (lambda lib, x, w, b: _F(lib).conv2d(x, w, b, stride=(2, 1), padding=1).tanh(),
               [(2, 3, 5, 6), (4, 3, 3, 2), (4,)]),
    "conv2d_skipping": (lambda lib, x, w: _F(lib).conv2d(x, w, stride=3) ** 3, [(1, 2, 7, 7), (3, 2, 2, 2)]),
    "conv_transpose1d": (lambda lib, x, w, b: _F(lib).conv_transpose1d(x, w, b, stride=2, padding=1, dilation=2).tanh(),
                         [(2, 4, 5), (4, 3, 3), (3,)]),
    "conv_transpose2d_groups": (lambda lib, x, w: _F(lib).conv_transpose2d(x, w, None, stride=(2, 1), padding=(1, 0),
                                                                          groups=2) ** 2, [(2, 4, 3, 4), (4, 1, 3, 2)]),
    "max_pool1d": (lambda lib, x: _F(lib).max_pool1d(x ** 3, 3, stride=2, padding=1, ceil_mode=True) ** 2, [(2, 3, 8)]),
    "max_pool2d": (lambda lib, x: _F(lib).max_pool2d(x.tanh(), (2, 3), stride=1, dilation=(1, 2)) ** 2,
                   [(2, 2, 5, 7)]),
    "avg_pool1d": (lambda lib, x: _F(lib).avg_pool1d(x ** 3, 3, stride=2, padding=1, count_include_pad=False) ** 2,
                   [(2, 3, 8)]),
    "avg_pool2d": (lambda lib, x: _F(lib).avg_pool2d(x ** 2, 2, ceil_mode=True) ** 2, [(2, 2, 5, 5)]),
    "adaptive_max_pool1d": (lambda lib, x: _F(lib).adaptive_max_pool1d(x ** 3, 3) ** 2, [(2, 3, 8)]),
    "adaptive_avg_pool1d": (lambda lib, x: _F(lib).adaptive_avg_pool1d(x ** 3, 3) ** 2, [(2, 3, 8)]),
}


@pytest.mark.parametrize("name", list(CONV_POOL))
def test_convolution_and_pooling_derivatives(name):
    f, shapes = CONV_POOL[name]
    _check(f, shapes)


def test_conv_transpose_with_output_padding_against_central_differences():
    """torch's own double backward refuses output_padding ('not supported for non-transposed convolutions'):
    the second derivative is held to central differences of seqlab's first (create_graph) derivative."""
    x0, w0 = RNG.standard_normal((2, 3, 4)), RNG.standard_normal((3, 2, 3))
    u, vx, vw = RNG.standard_normal((2, 2, 8)), RNG.standard_normal(x0.shape), RNG.standard_normal(w0.shape)

    def first(xa, wa, create_graph=False):
        x, w = seqlab.tensor(xa, requires_grad=True), seqlab.tensor(wa, requires_grad=True)
        y = _F(seqlab).conv_transpose1d(x, w, stride=2, padding=1, output_padding=1)  # (2, 2, 8)
        gx, gw = autograd.grad(((y ** 2) * seqlab.tensor(u)).sum(), [x, w], create_graph=create_graph)
        return x, w, gx, gw

    x, w, gx, gw = first(x0, w0, create_graph=True)
    hx, hw = autograd.grad((gx * seqlab.tensor(vx)).sum() + (gw * seqlab.tensor(vw)).sum(), [x, w])
    eps = 1e-6
    for i, (arr, got) in enumerate(((x0, hx), (w0, hw))):
        num = np.zeros(arr.shape)
        for idx in np.ndindex(arr.shape):
            sides = []
            for sign in (1, -1):
                a = [x0.copy(), w0.copy()]
                a[i][idx] += sign * eps
                _, _, gx_, gw_ = first(*a)
                sides.append((gx_.numpy() * vx).sum() + (gw_.numpy() * vw).sum())
            num[idx] = (sides[0] - sides[1]) / (2 * eps)
        np.testing.assert_allclose(got.numpy(), num, rtol=1e-6, atol=1e-7)


# ---- layers: a Transformer-encoder critic's WGAN-GP penalty, an HVP through MultiheadAttention ----------
DM, NH, FF, BT, TT = 8, 2, 16, 3, 5


def _kpm():
    m = np.zeros((BT, TT), dtype=bool)
    m[1, -2:] = True  # padding at the end of the second sequence
    return m


def _critic_pair(norm_first, activation, dtype="float64", dropout=0.0):
    """(ours, torch's): a TransformerEncoderLayer, then the mean over positions and a Linear to one score;
    torch's weights copied."""
    torch.manual_seed(0)
    kw = dict(dim_feedforward=FF, dropout=dropout, activation=activation, norm_first=norm_first)
    t_layer = torch.nn.TransformerEncoderLayer(DM, NH, batch_first=True, **kw).to(getattr(torch, dtype))
    t_head = torch.nn.Linear(DM, 1).to(getattr(torch, dtype))
    s_layer, s_head = nn.TransformerEncoderLayer(DM, NH, **kw), nn.Linear(DM, 1)
    for s, t in ((s_layer, t_layer), (s_head, t_head)):
        s.to(dtype=np.dtype(dtype))
        s.load_state_dict({k: v.detach().numpy() for k, v in t.state_dict().items()})
    return (s_layer, s_head), (t_layer, t_head)


def _critic(lib, layer, head, src_mask, kpm):
    def score(x):
        m = None if src_mask is None else (torch.as_tensor(src_mask) if lib is torch else src_mask)
        k = torch.as_tensor(kpm) if lib is torch else kpm
        return head(layer(x, src_mask=m, src_key_padding_mask=k).mean(1))  # (B, 1)
    return score


def _params(layer, head):
    named = list(layer.named_parameters()) + [("~head." + n, p) for n, p in head.named_parameters()]
    return [p for _, p in sorted(named, key=lambda item: item[0])]  # the same order in both libraries


def _seq_wgan_gp_step(lib, critic, params, real, fake, alpha, lam=10.0, seed=None):
    """WGAN-GP (Gulrajani et al. 2017, eq. 3) on (B, T, D) samples: the gradient's norm over each whole
    sample; returns the loss and the parameters' gradients after .backward(). `seed`: seqlab's generator is
    seeded first, so two runs draw the same dropout masks."""
    if seed is not None:
        seqlab.manual_seed(seed)
    dt = params[0].dtype
    real, fake, a = (lib.tensor(v, dtype=dt) for v in (real, fake, alpha))
    loss = wgan_gp_loss(lib, critic, real, fake, a, lam)
    loss.backward()
    return [loss] + [p.grad for p in params]


def _gan_batch():
    real = RNG.standard_normal((BT, TT, DM))
    return real, RNG.standard_normal((BT, TT, DM)) + 0.5, RNG.uniform(size=(BT, 1, 1))


@pytest.mark.parametrize("norm_first,activation,causal", [(False, "relu", False), (True, "gelu", True),
                                                          (False, "gelu", True)])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_wgan_gp_on_a_transformer_encoder_critic_gives_torchs_parameter_gradients(norm_first, activation, causal,
                                                                                 dtype):
    """float64: LayerNorm (NumPy's formula), PackedAttention with the padding and causal masks, the feed-forward
    as three ops. float32: LayerNorm's compiled kernel and the fused BiasActDropout instead."""
    (s_layer, s_head), (t_layer, t_head) = _critic_pair(norm_first, activation, dtype)
    mask = np.triu(np.ones((TT, TT), dtype=bool), k=1) if causal else None  # True = blocked (torch's attn_mask)
    real, fake, alpha = _gan_batch()
    got = _seq_wgan_gp_step(seqlab, _critic(seqlab, s_layer, s_head, mask, _kpm()), _params(s_layer, s_head),
                            real, fake, alpha)
    with sdpa_kernel(SDPBackend.MATH):  # torch's CPU flash attention has no double backward
        want = _seq_wgan_gp_step(torch, _critic(torch, t_layer, t_head, mask, _kpm()), _params(t_layer, t_head),
                                 real, fake, alpha)
    tol = TOL["float64"] if dtype == "float64" else {"rtol": 2e-3, "atol": 2e-4}
    for a, b in zip(got, want):
        np.testing.assert_allclose(_np(a), _np(b), **tol)
    assert all(isinstance(p, np.ndarray) and p.dtype == np.dtype(dtype) for p in got[1:])


def _composed_encoder_layer(layer, kpm):
    """`layer`'s forward (post-norm) from unfused ops, drawing the same masks in the same order: attention by
    autograd ops (MultiheadAttention's weights_grad path), LayerNorm written out, the feed-forward as three."""
    F = seqlab.nn.functional

    def norm(m, x):
        xc = x - x.mean(-1, keepdim=True)
        return xc / ((xc * xc).mean(-1, keepdim=True) + m.eps).sqrt() * m.weight + m.bias

    def forward(x, src_mask=None, src_key_padding_mask=None):
        a, _ = layer.self_attn(x, x, x, key_padding_mask=kpm, need_weights=True, average_attn_weights=False)
        x = norm(layer.norm1, x + layer.dropout1(a))
        h = F.dropout(layer.activation(layer.linear1(x)), layer.dropout.p)
        return norm(layer.norm2, x + layer.dropout2(layer.linear2(h)))
    return forward


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_wgan_gp_with_dropout_matches_the_composed_path_on_the_same_masks(dtype):
    """torch's dropout masks differ from seqlab's: with dropout 0.25 (attention weights, both residual
    branches, the feed-forward) the fused layer's WGAN-GP step is held to the same layer run by unfused ops,
    each step drawing the same masks (seqlab's generator seeded the same)."""
    (s_layer, s_head), _ = _critic_pair(False, "gelu", dtype, dropout=0.25)
    params = _params(s_layer, s_head)
    real, fake, alpha = _gan_batch()
    kpm = _kpm()
    got = _seq_wgan_gp_step(seqlab, _critic(seqlab, s_layer, s_head, None, kpm), params, real, fake, alpha, seed=5)
    fused_grads = [g.copy() for g in got[1:]]
    for p in params:
        p.grad = None
    composed = _composed_encoder_layer(s_layer, kpm)
    want = _seq_wgan_gp_step(seqlab, lambda x: s_head(composed(x).mean(1)), params, real, fake, alpha, seed=5)
    tol = TOL["float64"] if dtype == "float64" else {"rtol": 1e-3, "atol": 1e-4}
    for a, b in zip([got[0]] + fused_grads, want):
        np.testing.assert_allclose(_np(a), _np(b), **tol)
    seqlab.manual_seed(5)
    x = seqlab.tensor(real, dtype=params[0].dtype)
    kinds = {type(fn).__name__ for fn in _ops(_critic(seqlab, s_layer, s_head, None, kpm)(x))}
    assert {"PackedAttention", "LayerNorm", "Dropout"} <= kinds
    assert ("BiasActDropout" in kinds) == (dtype == "float32")  # the compiled kernels take float32 only


def _ops(t):
    """Every Function in t's graph."""
    seen, stack = {}, [t._ctx]
    while stack:
        fn = stack.pop()
        if fn is None or id(fn) in seen or not hasattr(fn, "parents"):
            continue
        seen[id(fn)] = fn
        stack.extend(p for p in fn.parents if p is not None and not isinstance(p, seqlab.Tensor))
    return list(seen.values())


@pytest.mark.parametrize("self_attention", [True, False])
def test_hessian_vector_product_through_multihead_attention(self_attention):
    """H·v of a loss through nn.MultiheadAttention's fused op (PackedAttention for self-attention, Attention
    for cross-attention), with a causal and a padding mask, for its parameters and its query."""
    torch.manual_seed(0)
    theirs = torch.nn.MultiheadAttention(DM, NH, batch_first=True).double()
    ours = nn.MultiheadAttention(DM, NH).to(dtype=np.float64)
    ours.load_state_dict({k: v.detach().numpy() for k, v in theirs.state_dict().items()})
    q0, kv0 = RNG.standard_normal((BT, TT, DM)), RNG.standard_normal((BT, TT, DM))
    mask = np.triu(np.ones((TT, TT), dtype=bool), k=1)
    names = [n for n, _ in sorted(theirs.named_parameters())]
    vs = [RNG.standard_normal(tuple(dict(theirs.named_parameters())[n].shape)) for n in names] + [
        RNG.standard_normal(q0.shape)]
    results = []
    for lib, model in ((seqlab, ours), (torch, theirs)):
        query = lib.tensor(q0, requires_grad=True)
        key = query if self_attention else lib.tensor(kv0)
        m, k = (torch.as_tensor(mask), torch.as_tensor(_kpm())) if lib is torch else (mask, _kpm())
        with sdpa_kernel(SDPBackend.MATH):
            out, _ = model(query, key, key, attn_mask=m, key_padding_mask=k, need_weights=False)
        if lib is seqlab:
            kinds = {type(fn).__name__ for fn in _ops(out)}
            assert ("PackedAttention" if self_attention else "Attention") in kinds
        wanted = [dict(model.named_parameters())[n] for n in names] + [query]
        loss = (out.tanh() ** 2).sum()
        grads = lib.autograd.grad(loss, wanted, create_graph=True)
        dot = sum((g * lib.tensor(v)).sum() for g, v in zip(grads, vs))
        results.append(list(grads) + list(lib.autograd.grad(dot, wanted)))
    _assert_same(*results, **TOL["float64"])


def test_multihead_attention_with_dropout_fused_and_composed_agree():
    """Attention dropout inside nn.MultiheadAttention: the fused op (need_weights=False) and the weights_grad
    path (autograd ops) on the same mask give the same Hessian-vector product."""
    seqlab.manual_seed(0)
    mha = nn.MultiheadAttention(DM, NH, dropout=0.3).to(dtype=np.float64)
    x0 = RNG.standard_normal((BT, TT, DM))
    params = list(mha.parameters())
    vs = [RNG.standard_normal(p.shape) for p in params]
    results = []
    for need_weights in (False, True):
        seqlab.manual_seed(9)
        x = seqlab.tensor(x0)
        out, _ = mha(x, x, x, key_padding_mask=_kpm(), need_weights=need_weights)
        grads = autograd.grad((out.sin() ** 2).sum(), params, create_graph=True)
        dot = sum((g * seqlab.tensor(v)).sum() for g, v in zip(grads, vs))
        results.append(list(grads) + list(autograd.grad(dot, params)))
    _assert_same(*results, **TOL["float64"])


def test_the_new_ops_are_listed_as_supported():
    supported = higher_order.supported_ops()
    for name in ("LayerNorm", "BiasActDropout", "Attention", "PackedAttention", "Einsum", "Prod", "CumProd",
                 "ConvNd", "ConvTransposeNd", "MaxPoolNd", "AvgPoolNd", "AdaptiveMaxPool1d", "ChunkedAttention",
                 "BinaryCrossEntropy"):
        assert name in supported, name


def test_double_backward_through_layer_norm_and_attention_on_the_device(cuda):
    """The Transformer critic's WGAN-GP step on device arrays (float32: LayerNorm's and attention's CUDA
    kernels where CuPy runs them), against the same on NumPy."""
    (s_layer, s_head), _ = _critic_pair(True, "gelu", "float32")
    real, fake, alpha = (a.astype(np.float32) for a in _gan_batch())
    results = []
    for device in ("cpu", "cuda"):
        s_layer.to(device)
        s_head.to(device)
        for p in _params(s_layer, s_head):
            p.grad = None
        critic = _critic(seqlab, s_layer, s_head, None, _kpm())
        params = _params(s_layer, s_head)
        seqlab.manual_seed(0)
        dt = params[0].dtype
        x_hat = (seqlab.tensor(alpha, dtype=dt) * seqlab.tensor(real, dtype=dt) +
                 (1 - seqlab.tensor(alpha, dtype=dt)) * seqlab.tensor(fake, dtype=dt)).to(device).requires_grad_(True)
        g, = autograd.grad(critic(x_hat).sum(), x_hat, create_graph=True)
        ((g.reshape(BT, -1).norm(2, dim=1) - 1) ** 2).mean().backward()
        # (the head's bias does not reach the penalty: its .grad stays None)
        results.append([None if a is None else seqlab.backend.to_numpy(a) for a in (g.data, *(p.grad for p in params))])
    for a, b in zip(*results):
        assert (a is None) == (b is None)
        if a is not None:
            np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)
