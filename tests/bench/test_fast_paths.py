"""Every fast path added for the benchmarks, held to the plain composed computation it replaces."""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.special import ndtr

import seqlab
from seqlab import functional as F
from seqlab.autograd.function import Function
from seqlab.autograd.ops import activation as A
from seqlab.autograd.ops import fused as Fu
from seqlab.nn.efficient_attention import memory_efficient_attention


# ---- Φ and GELU in float32 ---------------------------------------------------------------------
def test_tanh_cdf_coefficients_are_the_documented_fit():
    np.testing.assert_allclose(A.fit_tanh_cdf(), A._TANH_CDF, rtol=1e-6)


def test_normal_cdf_float32_is_within_float32_rounding_of_scipy():
    x = np.concatenate([np.linspace(-15, 15, 200_001), np.random.default_rng(0).standard_normal(50_000)])
    x = x.astype(np.float32)
    ours = A.normal_cdf_float32(x)
    assert ours.dtype == np.float32
    assert np.abs(ours - ndtr(x.astype(np.float64))).max() < 1.2e-7
    assert ours[0] == 0.0 and ours[200_000] == 1.0  # saturated beyond the clip


def test_normal_cdf_float32_any_layout_and_the_gelu_output():
    x = np.random.default_rng(1).standard_normal((70, 1100)).astype(np.float32)  # > one block
    t = x.T  # not C-contiguous
    np.testing.assert_array_equal(A.normal_cdf_float32(t), A.normal_cdf_float32(np.ascontiguousarray(t)))
    g = np.empty_like(x)
    cdf = A.normal_cdf_float32(x, gelu_out=g)
    np.testing.assert_array_equal(g, x * cdf)  # x·Φ(x), the plain product
    g2 = np.empty_like(x)
    assert A.normal_cdf_float32(x, gelu_out=g2, keep_cdf=False) is None
    np.testing.assert_array_equal(g2, g)


def test_gelu_float32_equals_the_composed_formula_forward_and_backward(numpy_kernels):
    rng = np.random.default_rng(2)
    xa = rng.standard_normal((3, 7, 40)).astype(np.float32)
    ga = rng.standard_normal(xa.shape).astype(np.float32)
    x = seqlab.Tensor(xa, requires_grad=True)
    y = F.gelu(x)
    cdf = A.normal_cdf_float32(xa)
    np.testing.assert_array_equal(y.numpy(), xa * cdf)
    y.backward(ga)
    phi = np.exp(xa * xa * np.float32(-0.5)) * np.float32(1 / math.sqrt(2 * math.pi))
    np.testing.assert_allclose(x.grad, ga * (cdf + xa * phi), rtol=1e-6, atol=1e-7)
    with seqlab.no_grad():  # inference keeps nothing
        out, fn = A.GELU.apply_with_fn(seqlab.Tensor(xa))
    assert fn.saved == ()
    np.testing.assert_array_equal(out.numpy(), y.numpy())


def test_gelu_float32_against_torch(row_kernels):
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(3).standard_normal(10_000).astype(np.float32) * 4
    ours = F.gelu(seqlab.Tensor(x)).numpy()
    ref = x.astype(np.float64) * ndtr(x.astype(np.float64))
    theirs = torch.nn.functional.gelu(torch.from_numpy(x)).numpy()
    err, torch_err = np.abs(ours - ref), np.abs(theirs - ref)
    # GELU = x·Φ(x) with Φ within 1.2e-7 (test above), then rounded to float32: how close NumPy's float32 tanh
    # gets depends on the CPU (AVX-512 or AVX2 code), so the bound is Φ's, not a margin over torch's
    half_ulp = np.spacing(np.abs(ref).astype(np.float32)).astype(np.float64) / 2
    assert (err <= np.abs(x) * 1.2e-7 + half_ulp).all()
    # ...and its largest error is within one float32 ulp (at that value) of torch's own float32 kernel's
    worst = err.argmax()
    assert err[worst] <= torch_err.max() + 2 * half_ulp[worst]


# ---- the engine tells forward whether a backward will run --------------------------------------
class _Probe(Function):
    def forward(self, a, b=None):
        self.seen = self.needs_input_grad
        return a * 2

    def backward(self, grad):
        return grad * 2, None


def test_forward_knows_which_inputs_need_gradients():
    a = seqlab.Tensor(np.ones(2), requires_grad=True)
    _, fn = _Probe.apply_with_fn(a, np.ones(2))
    assert fn.seen == (True, False)
    with seqlab.no_grad():
        _, fn = _Probe.apply_with_fn(a)
    assert fn.seen == ()
    _, fn = _Probe.apply_with_fn(seqlab.Tensor(np.ones(2)))
    assert fn.seen == (False,)


def test_layer_norm_without_grad_gives_the_same_values():
    rng = np.random.default_rng(4)
    x, w, b = rng.standard_normal((5, 6, 8)), rng.standard_normal(8), rng.standard_normal(8)
    with_grad = F.layer_norm(seqlab.Tensor(x, requires_grad=True), 8, seqlab.Tensor(w), seqlab.Tensor(b))
    with seqlab.no_grad():
        without = F.layer_norm(seqlab.Tensor(x), 8, seqlab.Tensor(w), seqlab.Tensor(b))
    np.testing.assert_array_equal(with_grad.numpy(), without.numpy())
    mu, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
    np.testing.assert_allclose(without.numpy(), (x - mu) / np.sqrt(var + 1e-5) * w + b, rtol=1e-12)


# ---- dropout --------------------------------------------------------------------------------------
def test_dropout_with_a_bool_mask_equals_the_float_mask_formula():
    rng = np.random.default_rng(5)
    xa, ga = rng.standard_normal((4, 9)).astype(np.float32), rng.standard_normal((4, 9)).astype(np.float32)
    keep = rng.random((4, 9)) >= 0.3
    outs = []
    for mask in (keep, keep.astype(np.float32)):
        x = seqlab.Tensor(xa, requires_grad=True)
        y = Fu.Dropout.apply(x, mask, p=0.3)
        y.backward(ga)
        outs.append((y.numpy(), x.grad))
    scale = np.float32(1 / 0.7)
    for y, g in outs:
        np.testing.assert_array_equal(y, xa * (keep.astype(np.float32) * scale))  # x ⊙ (m / (1 − p))
        np.testing.assert_array_equal(g, ga * (keep.astype(np.float32) * scale))


@pytest.mark.parametrize("shape", [(5,), (7, 3), (3, 1 << 14, 2), (2, 3 * (1 << 14) + 1)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_dropout_by_key_is_the_keep_mask_of_that_key(shape, dtype, row_kernels):
    rng = np.random.default_rng(9)
    xa, ga = (rng.standard_normal(shape).astype(dtype) for _ in range(2))
    xa.reshape(-1)[:3] = [np.nan, np.inf, -0.0]
    seqlab.manual_seed(4)
    x = seqlab.Tensor(xa, requires_grad=True)
    y = F.dropout(x, 0.3)
    seqlab.manual_seed(4)
    keep = seqlab.random.keep_mask(shape, 0.3)  # the mask of the same (first) word of the generator
    scale = dtype(1 / 0.7)
    with np.errstate(invalid="ignore"):
        np.testing.assert_array_equal(y.numpy(), xa * keep * scale)
        fn = y._ctx
        stored = fn.keep is not None
        # compiled, float32: the mask is made again in backward, not kept; otherwise kept as a bool array
        assert stored == (row_kernels == "numpy" or dtype == np.float64)
        y.backward(ga)
    np.testing.assert_array_equal(x.grad, ga * keep * scale)
    if len(shape) > 1:  # a gradient that is not in C order: the mask by index, as the forward's
        x2 = seqlab.Tensor(xa, requires_grad=True)
        seqlab.manual_seed(4)
        with np.errstate(invalid="ignore"):
            F.dropout(x2, 0.3).backward(np.asfortranarray(ga))
        np.testing.assert_array_equal(x2.grad, ga * keep * scale)


def test_keep_mask_is_bernoulli_and_seeded():
    seqlab.manual_seed(11)
    m = F._keep_mask(np, (1000, 1000), 0.1, np.float32)
    assert m.dtype == bool and m.shape == (1000, 1000)
    n = m.size
    assert abs(m.mean() - 0.9) < 5 * math.sqrt(0.09 / n)  # within 5 σ of 1 − p
    assert abs(m[:, ::2].mean() - m[:, 1::2].mean()) < 10 * math.sqrt(0.09 / n)  # both words of a draw used
    seqlab.manual_seed(11)
    np.testing.assert_array_equal(F._keep_mask(np, (1000, 1000), 0.1, np.float32), m)
    assert F._keep_mask(np, (7,), 0.0, np.float32).all()
    assert not F._keep_mask(np, (1000,), 1.0 - 1e-12, np.float32).any()
    assert F._keep_mask(np, (), 0.5, np.float32).shape == ()
    gen = np.random.default_rng(3)  # an explicit generator is used, not the global one
    state = seqlab.random.get_state()
    F._keep_mask(np, (5, 3), 0.5, np.float32, gen)
    assert seqlab.random.get_state() == state


def splitmix64_reference(n, key, threshold):
    """The documented mask (seqlab.random), one Python integer at a time: word j = mix(key + (j + 1)·γ)."""
    mask, full = [], 2**64 - 1
    for j in range((n + 1) // 2):
        z = (key + (j + 1) * 0x9E3779B97F4A7C15) & full
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & full
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & full
        z ^= z >> 31
        mask += [(z & 0xFFFFFFFF) >= threshold, (z >> 32) >= threshold]  # low half, then high half
    return np.array(mask[:n], dtype=bool)


@pytest.mark.parametrize("n", [0, 1, 2, 5, 64])
def test_keep_mask_is_splitmix64_keyed_by_one_word_of_the_generator(n, row_kernels):
    threshold = seqlab.random.keep_threshold(0.3)
    assert threshold == round(0.3 * 2**32)
    for key in (0, 12345, 2**64 - 1):  # the counter wraps modulo 2^64 at the last one
        np.testing.assert_array_equal(seqlab.random.splitmix_keep(n, key, threshold),
                                      splitmix64_reference(n, key, threshold))
    gen = np.random.default_rng(8)
    key = int(np.random.default_rng(8).bit_generator.random_raw())  # what the mask will take: PCG64's next word
    mask = F._keep_mask(np, (n,), 0.3, np.float32, gen)
    np.testing.assert_array_equal(mask, splitmix64_reference(n, key, threshold))
    assert int(gen.bit_generator.random_raw()) == int(np.random.default_rng(8).bit_generator.random_raw(2)[1])


def test_mask_keys_have_64_bits_from_a_32_bit_generator_too():
    mt = np.random.Generator(np.random.MT19937(5))  # its raw words have 32 bits
    keys = [seqlab.random.mask_key(mt) for _ in range(8)]
    assert max(keys) >= 2**32 and len(set(keys)) == 8 and all(0 <= k < 2**64 for k in keys)
    mask = F._keep_mask(np, (64,), 0.5, np.float32, np.random.Generator(np.random.MT19937(5)))
    np.testing.assert_array_equal(mask, splitmix64_reference(64, keys[0], 2**31))


def test_dropout_op_without_a_mask_or_a_key_is_a_clear_error():
    with pytest.raises(ValueError, match="Dropout needs a keep_mask or the key of one"):
        Fu.Dropout.apply(seqlab.Tensor(np.ones(3, np.float32), requires_grad=True), p=0.5)


def test_keep_mask_chunks_and_consecutive_masks_are_independent(row_kernels):
    # 3 NumPy chunks (and compiled blocks) and an odd tail: the chunk joins keep the counter running
    n = 2 * 3 * (1 << 14) + 3
    np.testing.assert_array_equal(seqlab.random.splitmix_keep(n, 77, 2**31)[-9:],
                                  splitmix64_reference(n, 77, 2**31)[-9:])
    np.testing.assert_array_equal(seqlab.random.splitmix_keep(n, 77, 2**31)[2 * (1 << 14) - 4:2 * (1 << 14) + 4],
                                  splitmix64_reference(2 * (1 << 14) + 4, 77, 2**31)[-8:])
    seqlab.manual_seed(3)
    a, b = (F._keep_mask(np, (400, 500), 0.5, np.float32).astype(float) for _ in range(2))
    sd = math.sqrt(0.25 / a.size)
    assert abs(a.mean() - 0.5) < 5 * sd and abs(b.mean() - 0.5) < 5 * sd
    # agreement of two independent fair masks is 1/2; of neighbours within a mask too
    assert abs((a == b).mean() - 0.5) < 5 * sd
    assert abs((a[:, 1:] == a[:, :-1]).mean() - 0.5) < 5 * sd
    assert abs((a[1:] == a[:-1]).mean() - 0.5) < 5 * sd


def test_attention_dropout_mask_is_bool_and_drop_is_keep_over_one_minus_p():
    q = seqlab.Tensor(np.random.default_rng(6).standard_normal((2, 5, 4)), requires_grad=True)
    seqlab.manual_seed(1)
    out = F.scaled_dot_product_attention(q, q, q, dropout_p=0.25)
    fn = out._ctx
    assert fn.keep.dtype == bool
    np.testing.assert_array_equal(fn.drop, fn.keep / 0.75)


# ---- attention: masks added in place ------------------------------------------------------------
@pytest.mark.parametrize("kind", ["bool", "float", "causal", "padding"])
def test_attention_masks_equal_the_composed_where_formula(kind):
    rng = np.random.default_rng(7)
    qa, ka, va = (rng.standard_normal((2, 3, 6, 4)) for _ in range(3))
    ga = rng.standard_normal((2, 3, 6, 4))
    if kind == "bool":
        mask = rng.random((2, 3, 6, 6)) < 0.7
        mask[..., 0] = True
    elif kind == "float":
        mask = rng.standard_normal((1, 3, 6, 6))
    elif kind == "padding":
        mask = np.ones((2, 1, 1, 6), bool)
        mask[1, ..., 4:] = False
    else:
        mask = None
    q, k, v = (seqlab.Tensor(a, requires_grad=True) for a in (qa, ka, va))
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=kind == "causal")
    out.backward(ga)
    # the plain composition: where(blocked, −inf, s) or s + bias, softmax, weighted sum
    qc, kc, vc = (seqlab.Tensor(a, requires_grad=True) for a in (qa, ka, va))
    s = qc @ kc.transpose(-1, -2) * (1 / math.sqrt(4))
    if kind == "float":
        s = s + mask
    elif mask is not None or kind == "causal":
        allowed = np.tril(np.ones((6, 6), bool)) if kind == "causal" else mask
        s = s.masked_fill(np.broadcast_to(~allowed, s.shape), -np.inf)
    ref = s.softmax(-1) @ vc
    ref.backward(ga)
    np.testing.assert_allclose(out.numpy(), ref.numpy(), rtol=1e-12, atol=1e-14)
    for a, b in ((q, qc), (k, kc), (v, vc)):
        np.testing.assert_allclose(a.grad, b.grad, rtol=1e-10, atol=1e-12)


# ---- memory-efficient attention: reused block buffers -------------------------------------------
@pytest.mark.parametrize("causal, masked", [(False, False), (True, False), (False, True)])
def test_chunked_attention_with_edge_blocks_equals_plain(causal, masked):
    rng = np.random.default_rng(8)
    qa, ka, va = (rng.standard_normal((2, 11, 5)) for _ in range(3))
    ga = rng.standard_normal((2, 11, 5))
    mask = None
    if masked:
        mask = rng.standard_normal((11, 11))  # a float bias, added block by block
    grads = []
    for fn in (lambda a, b, c: memory_efficient_attention(a, b, c, attn_mask=mask, is_causal=causal, chunk_size=3,
                                                          q_chunk_size=4),
               lambda a, b, c: F.scaled_dot_product_attention(a, b, c, attn_mask=mask, is_causal=causal)):
        q, k, v = (seqlab.Tensor(a, requires_grad=True) for a in (qa, ka, va))
        out = fn(q, k, v)
        out.backward(ga)
        grads.append((out.numpy(), q.grad, k.grad, v.grad))
    for a, b in zip(*grads):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


# ---- AdamW in place ---------------------------------------------------------------------------
def test_adamw_in_place_equals_the_plain_update():
    rng = np.random.default_rng(9)
    w0 = rng.standard_normal((4, 3))
    b0 = rng.standard_normal(3)
    ws = [seqlab.nn.Parameter(w0.copy()), seqlab.nn.Parameter(b0.copy())]
    opt = seqlab.optim.AdamW(ws, lr=0.01, betas=(0.9, 0.99), eps=1e-8, weight_decay=0.1)
    plain = [w0.copy(), b0.copy()]
    m = [np.zeros_like(p) for p in plain]
    v = [np.zeros_like(p) for p in plain]
    for t in range(1, 5):
        grads = [rng.standard_normal(p.shape) for p in plain]
        for p, g in zip(ws, grads):
            p.grad = g.copy()
        opt.step()
        for i, g in enumerate(grads):  # Loshchilov & Hutter, torch's order
            plain[i] *= 1 - 0.01 * 0.1
            m[i] = 0.9 * m[i] + 0.1 * g
            v[i] = 0.99 * v[i] + 0.01 * g * g
            denom = np.sqrt(v[i]) / math.sqrt(1 - 0.99 ** t) + 1e-8
            plain[i] -= 0.01 / (1 - 0.9 ** t) * m[i] / denom
    for p, q in zip(ws, plain):
        np.testing.assert_allclose(p.data, q, rtol=1e-12, atol=1e-14)
    assert ws[0].data.dtype == np.float64
