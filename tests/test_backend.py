"""The array-module layer (issue 2 §7): NumPy by default, CuPy when a GPU is there; GPU tests skip cleanly."""
import numpy as np
import pytest

import seqlab
import seqlab.functional as F
from seqlab import backend

gpu = pytest.mark.skipif(not backend.cuda_available(), reason="needs CuPy and a GPU")


def test_numpy_is_the_default_array_module():
    x = seqlab.randn(2, 3)
    assert backend.get_xp() is np and backend.xp_of(x.data) is np and x.device == "cpu"
    assert isinstance(backend.to_numpy(x.data), np.ndarray)
    assert backend.get_device() == "cpu"


def test_default_dtype_switch_and_restore():
    try:
        backend.set_default_dtype(np.float64)
        assert seqlab.randn(2).dtype == np.float64 and seqlab.tensor([1.5]).dtype == np.float64
        assert seqlab.nn.Linear(2, 2).weight.dtype == np.float64
    finally:
        backend.set_default_dtype(np.float32)
    assert seqlab.zeros(1).dtype == np.float32


def test_to_dtype_and_cpu_are_differentiable_or_noops():
    x = seqlab.randn(3, requires_grad=True)
    assert x.to("cpu") is x and x.cpu() is x
    y = x.to(np.float64)
    assert y.dtype == np.float64 and y.requires_grad
    y.sum().backward()
    assert x.grad.dtype == np.float32


@gpu
def test_gpu_round_trip_forward_and_backward():  # pragma: no cover - needs a GPU
    import cupy

    rng = np.random.default_rng(0)
    x_np, w_np = rng.standard_normal((4, 5)).astype(np.float32), rng.standard_normal((3, 5)).astype(np.float32)
    x = seqlab.tensor(x_np, requires_grad=True).to("cuda")
    w = seqlab.tensor(w_np, requires_grad=True).to("cuda")
    assert x.device == "cuda" and isinstance(x.data, cupy.ndarray)
    loss = F.cross_entropy(F.gelu(F.linear(x, w)), np.array([0, 1, 2, 0]))
    loss.backward()
    x_cpu, w_cpu = seqlab.tensor(x_np, requires_grad=True), seqlab.tensor(w_np, requires_grad=True)
    loss_cpu = F.cross_entropy(F.gelu(F.linear(x_cpu, w_cpu)), np.array([0, 1, 2, 0]))
    loss_cpu.backward()
    np.testing.assert_allclose(float(loss.item()), loss_cpu.item(), rtol=1e-5)
    np.testing.assert_allclose(backend.to_numpy(w.grad), w_cpu.grad, rtol=1e-4, atol=1e-5)


@gpu
def test_module_to_cuda():  # pragma: no cover - needs a GPU
    lin = seqlab.nn.Linear(3, 2).to("cuda")
    assert all(p.device == "cuda" for p in lin.parameters())
    out = lin(seqlab.randn(4, 3).to("cuda"))
    out.sum().backward()
    assert lin.weight.grad is not None and backend.xp_of(lin.weight.grad) is not np
