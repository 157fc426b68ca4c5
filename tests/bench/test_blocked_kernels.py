"""The block-by-block kernels (GELU, AdamW) and the allocator setting, held to the plain computations.

The GELU op's tests run twice (the `row_kernels` fixture): on the NumPy blocks here and on the compiled
kernels of seqlab.kernels, which take float32 on the CPU when Numba is installed."""
from __future__ import annotations

import math

import numpy as np
import pytest

import seqlab
from seqlab import functional as F
from seqlab.autograd import memory
from seqlab.autograd.ops import activation as A
from seqlab.nn.module import Parameter
from seqlab.optim import Adam, AdamW
from seqlab.optim import adam as adam_module

K = math.sqrt(2 / math.pi)


def _gelu_tanh_plain(x, g):
    """GELU with the tanh approximation and its derivative, composed the textbook way."""
    t = np.tanh(K * (x + 0.044715 * x ** 3))
    y = 0.5 * x * (1 + t)
    dy = 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * K * (1 + 3 * 0.044715 * x * x)
    return y, g * dy


@pytest.mark.parametrize("dtype, rtol", [(np.float64, 1e-13), (np.float32, 2e-6)])
def test_gelu_tanh_kernel_equals_the_composed_formula(row_kernels, dtype, rtol):
    rng = np.random.default_rng(0)
    xa = (rng.standard_normal((3, 70_000)) * 3).astype(dtype)  # several blocks, one partial
    ga = rng.standard_normal(xa.shape).astype(dtype)
    x = seqlab.Tensor(xa, requires_grad=True)
    y = F.gelu(x, approximate="tanh")
    y.backward(ga)
    ref_y, ref_g = _gelu_tanh_plain(xa.astype(np.float64), ga.astype(np.float64))
    assert y.dtype == dtype and x.grad.dtype == dtype
    # absolute in the far negative tail, where ½(1 + tanh u) itself is a difference of numbers near 1
    np.testing.assert_allclose(y.numpy(), ref_y, rtol=rtol, atol=rtol)
    if dtype == np.float64:
        np.testing.assert_allclose(x.grad, ref_g, rtol=rtol, atol=rtol)
        return
    # float32: backward gets h from y/x and x(1 − h) as x − y; where h ≈ 1 that difference keeps
    # only the bits y has (x ≈ 4.7: ~3e-6 absolute on a gradient of 1). Held to torch's own float32 error.
    import torch

    xt = torch.tensor(xa, requires_grad=True)
    torch.nn.functional.gelu(xt, approximate="tanh").backward(torch.tensor(ga))
    torch_err = np.abs(xt.grad.numpy() - ref_g).max()
    assert np.abs(x.grad - ref_g).max() <= 3 * torch_err


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_inference_keeps_nothing_and_gives_the_same_values(row_kernels, approximate):
    xa = np.random.default_rng(1).standard_normal((5, 9)).astype(np.float32)
    with seqlab.no_grad():
        out, fn = A.GELU.apply_with_fn(seqlab.Tensor(xa), approximate=approximate)
    assert fn.saved == ()
    np.testing.assert_array_equal(out.numpy(), F.gelu(seqlab.Tensor(xa, requires_grad=True), approximate).numpy())


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_keeps_only_its_input_and_output_for_backward(row_kernels, approximate):
    """The factor Φ(x) (or h) is recovered from the output in backward, not kept: what the graph holds
    is x and y, and y is the very array the next layer saves."""
    x = seqlab.Tensor(np.random.default_rng(1).standard_normal((5, 9)).astype(np.float32), requires_grad=True)
    y, fn = A.GELU.apply_with_fn(x, approximate=approximate)
    assert len(fn.saved) == 2 and fn.saved[0] is x.data and fn.saved[1] is y.data
    assert not [k for k, v in vars(fn).items() if isinstance(v, np.ndarray)]  # no other array attribute


@pytest.mark.parametrize("approximate", ["none", "tanh"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_gelu_gradient_at_and_near_zero_where_y_over_x_cannot_give_the_factor(row_kernels, approximate, dtype):
    """x = 0, ±subnormal, ±2^-70 (y = x·h loses h there) and ordinary values: the gradient is the composed one."""
    tiny = np.finfo(dtype).smallest_subnormal
    xa = np.array([0.0, -0.0, tiny, -tiny, 2.0 ** -70, -(2.0 ** -70), 2.0 ** -59, 1e-3, -1e-3, 0.7, -2.5, -40.0],
                  dtype=dtype)
    x = seqlab.Tensor(xa, requires_grad=True)
    F.gelu(x, approximate).backward(np.ones_like(xa))
    xd = xa.astype(np.float64)
    if approximate == "tanh":
        ref = _gelu_tanh_plain(xd, np.ones_like(xd))[1]
    else:
        from scipy.special import erf

        ref = 0.5 * (1 + erf(xd / math.sqrt(2))) + xd * np.exp(-xd * xd / 2) / math.sqrt(2 * math.pi)
    assert np.all(np.isfinite(x.grad))
    np.testing.assert_allclose(x.grad, ref, rtol=1e-6, atol=2e-7)


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_backward_takes_a_non_contiguous_gradient(row_kernels, approximate):
    rng = np.random.default_rng(2)
    xa, ga = rng.standard_normal((2, 6, 8)).astype(np.float32), rng.standard_normal((2, 8, 6)).astype(np.float32)
    grads = []
    for g in (ga.transpose(0, 2, 1), np.ascontiguousarray(ga.transpose(0, 2, 1))):
        x = seqlab.Tensor(xa, requires_grad=True)
        F.gelu(x, approximate).backward(g)
        grads.append(x.grad)
    np.testing.assert_array_equal(grads[0], grads[1])


def test_run_blocked_equals_one_whole_array_pass():
    rng = np.random.default_rng(3)
    x, h, g = (rng.random(100_003).astype(np.float32) + np.float32(0.1) for _ in range(3))
    y = x * h  # the kernel gets h back as y / x
    outs = []
    for block in (1 << 10, 1 << 20):  # many blocks vs one
        out = np.empty_like(x)
        A.run_blocked(A._gelu_tanh_backward_block, [x, y, g, out], n_scratch=2, block=block)
        outs.append(out)
    np.testing.assert_array_equal(outs[0], outs[1])
    u1 = np.float32(K) * (1 + np.float32(3 * 0.044715) * x * x)  # u'
    np.testing.assert_allclose(outs[0], g * h * (1 + 2 * x * u1 * (1 - h)), rtol=2e-6)


# ---- AdamW block by block ----------------------------------------------------------------------
def _reference_adam(p, g, m, v, t, lr, b1, b2, eps, wd, decoupled):
    """The update on whole arrays, in the order torch.optim.Adam(W) applies it."""
    if wd:
        if decoupled:
            p *= 1 - lr * wd
        else:
            g = g + wd * p
    m += (g - m) * (1 - b1)
    v *= b2
    v += (g * g) * (1 - b2)
    denom = np.sqrt(v) / math.sqrt(1 - b2 ** t) + eps
    p -= (m / denom) * (lr / (1 - b1 ** t))


@pytest.mark.parametrize("cls, decoupled", [(AdamW, True), (Adam, False)])
def test_blocked_adam_equals_the_whole_array_update_bitwise(cls, decoupled):
    rng = np.random.default_rng(4)
    shapes = [(300, 500), (7,), (adam_module._BLOCK + 3,)]  # several blocks, a small one, a partial block
    params = [Parameter(seqlab.Tensor(rng.standard_normal(s).astype(np.float32))) for s in shapes]
    ref = [(p.data.copy(), np.zeros_like(p.data), np.zeros_like(p.data)) for p in params]
    opt = cls(params, lr=1e-2, weight_decay=0.1)
    for t in range(1, 4):
        for p, (rp, rm, rv) in zip(params, ref):
            g = rng.standard_normal(p.shape).astype(np.float32)
            p.grad = g.T.copy().T if g.ndim == 2 and t == 2 else g  # a Fortran-ordered gradient once
            _reference_adam(rp, g, rm, rv, t, 1e-2, 0.9, 0.999, 1e-8, 0.1, decoupled)
        opt.step()
        for p, (rp, _, _) in zip(params, ref):
            np.testing.assert_array_equal(p.data, rp)


def test_blocked_adamw_equals_torch_on_a_large_parameter():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(5)
    w = rng.standard_normal((400, 400)).astype(np.float32)  # 160,000 elements: three blocks
    p = Parameter(seqlab.Tensor(w.copy()))
    tp = torch.nn.Parameter(torch.from_numpy(w.copy()))
    opt, topt = AdamW([p], lr=1e-2, betas=(0.9, 0.99)), torch.optim.AdamW([tp], lr=1e-2, betas=(0.9, 0.99))
    for _ in range(5):
        g = rng.standard_normal(w.shape).astype(np.float32)
        p.grad, tp.grad = g, torch.from_numpy(g.copy())
        opt.step()
        topt.step()
    np.testing.assert_allclose(p.data, tp.detach().numpy(), rtol=1e-6, atol=1e-7)


# ---- the allocator keeps freed memory --------------------------------------------------------------
def test_backward_asks_malloc_to_keep_freed_memory(monkeypatch):
    calls = []
    monkeypatch.setattr(memory, "_applied", False)
    monkeypatch.setattr(memory, "retain_freed_memory", lambda: calls.append(1) or True)
    for _ in range(2):
        x = seqlab.Tensor(np.ones(3), requires_grad=True)
        (x * 2).sum().backward()
    assert calls == [1]  # once per process


def test_a_modules_first_forward_asks_malloc_to_keep_freed_memory(monkeypatch):
    """Inference never runs backward: the first forward of any module applies it too, once."""
    calls = []
    monkeypatch.setattr(memory, "_applied", False)
    monkeypatch.setattr(memory, "retain_freed_memory", lambda: calls.append(1) or True)
    layer = seqlab.nn.Linear(3, 2)
    with seqlab.no_grad():
        for _ in range(2):
            layer(seqlab.Tensor(np.ones((1, 3), np.float32)))
    assert calls == [1] and memory._applied


def test_retain_freed_memory_takes_effect_on_glibc():
    import ctypes

    try:
        ctypes.CDLL(None).mallopt
    except AttributeError:
        pytest.skip("no mallopt (not glibc)")
    assert memory.retain_freed_memory() is True
