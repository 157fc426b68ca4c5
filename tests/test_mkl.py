"""seqlab.mkl: MKL's products and vector math against NumPy's and torch's, and the switch between them.

The suite installs the `mkl` package on x86-64 (the `test` extra), so these
run in CI there; elsewhere they skip. With MKL present on an Intel CPU (or
SEQLAB_BLAS=mkl) every other test runs on it too, but most of their arrays
are below `MIN_MACS` / `MIN_VML`, where NumPy keeps the work: here the
thresholds are set to 0 so MKL takes it all.
"""
import os

import numpy as np
import pytest
import torch
import torch.nn.functional as TF
from scipy.special import ndtr

import seqlab
import seqlab.functional as F
from seqlab import mkl
from seqlab.blas import get_blas_threads, set_blas_threads
from seqlab.errors import ConfigError

pytestmark = pytest.mark.skipif(mkl.mkl_path() is None, reason="the mkl package is not installed")

rng = np.random.default_rng(0)


def f32(*shape):
    return rng.standard_normal(shape).astype(np.float32)


@pytest.fixture
def on_mkl(monkeypatch):
    """Every float32 product and vector-math call of the test on MKL, whatever its size."""
    monkeypatch.setattr(mkl, "MIN_MACS", 0)
    monkeypatch.setattr(mkl, "MIN_VML", 0)
    assert mkl.use("mkl") == "mkl"
    yield
    mkl.use(None)


def _reference(a, b, alpha=1.0):
    return np.matmul(a.astype(np.float64), b.astype(np.float64)) * alpha


def _interleaved_out():
    buf = np.empty((2, 5, 3, 4), np.float32)  # (B, T, H, D) memory, written as (B, H, T, D)
    return buf.swapaxes(1, 2)


CASES = {
    "plain": lambda: (f32(5, 3), f32(3, 4), {}),
    "a transposed": lambda: (f32(3, 5).T, f32(3, 4), {}),
    "b transposed": lambda: (f32(5, 3), f32(4, 3).T, {}),
    "both transposed, alpha": lambda: (f32(3, 5).T, f32(4, 3).T, {"alpha": 0.125}),
    "one row": lambda: (f32(1, 3), f32(3, 4), {}),
    "one column": lambda: (f32(5, 3), f32(3, 1), {}),
    "rows strided": lambda: (f32(10, 3)[::2], f32(3, 4), {}),
    "last axis strided (NumPy)": lambda: (f32(5, 6)[:, ::2], f32(3, 4), {}),
    "batched": lambda: (f32(2, 3, 5, 6), f32(2, 3, 6, 4), {}),
    "batched, keys transposed": lambda: (f32(2, 3, 5, 6), f32(2, 3, 4, 6).swapaxes(-1, -2), {"alpha": 0.5}),
    "heads split from (B, T, H, D)": lambda: (f32(2, 5, 3, 6).swapaxes(1, 2), f32(2, 5, 3, 6).swapaxes(1, 2)
                                              .swapaxes(-1, -2), {}),
    "2-D b broadcast": lambda: (f32(2, 3, 5, 6), f32(6, 4), {}),
    "batch broadcast": lambda: (f32(3, 5, 6), f32(2, 1, 6, 4), {}),
    "into interleaved out": lambda: (f32(2, 3, 5, 6), f32(2, 3, 6, 4), {"out": _interleaved_out()}),
    # attention's dk = alpha · dSᵀ q, written as (B, T, H, D) memory
    "a transposed into interleaved out, alpha": lambda: (f32(2, 3, 6, 5).swapaxes(-1, -2), f32(2, 3, 6, 4),
                                                         {"out": _interleaved_out(), "alpha": 0.125}),
}


@pytest.mark.parametrize("case", list(CASES))
def test_matmul_matches_numpy_for_every_layout(on_mkl, case):
    a, b, kw = CASES[case]()
    got = mkl.matmul(a, b, **kw)
    want = _reference(a, b, kw.get("alpha", 1.0))
    assert got.shape == want.shape and got.dtype == np.float32
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * np.abs(want).max())
    if "out" in kw:
        assert got is kw["out"]


def test_matmul_on_mkl_really_calls_mkl(on_mkl, monkeypatch):
    """A float32 product takes the MKL path; float64, mismatched shapes and small products go to NumPy."""
    calls = []
    monkeypatch.setattr(mkl, "_numpy", lambda *args: calls.append(args) or np.matmul(*args[:2]))
    mkl.matmul(f32(8, 8), f32(8, 8))
    assert calls == []
    mkl.matmul(f32(8, 8).astype(np.float64), f32(8, 8))
    assert len(calls) == 1
    monkeypatch.setattr(mkl, "MIN_MACS", 10 ** 9)
    mkl.matmul(f32(8, 8), f32(8, 8))
    assert len(calls) == 2


@pytest.mark.parametrize("threads", [1, 2])
def test_batches_of_small_products_go_to_mkl_by_layout_and_threads(on_mkl, monkeypatch, threads):
    """Each product under MIN_MACS: a batch of them goes to MKL's batched GEMM when it is large in all and
    MKL has several threads, or (one thread) when the second matrix is a transposed view (q·kᵀ); the
    values are the product's either way."""
    monkeypatch.setattr(mkl, "MIN_MACS", 64 ** 3)
    monkeypatch.setattr(mkl, "_threads", threads)
    calls = []
    real = mkl._numpy
    monkeypatch.setattr(mkl, "_numpy", lambda *args: calls.append(args) or real(*args))
    q, k = f32(48, 32, 16), f32(48, 32, 16)  # 48 products of 32 x 16 x 32: each under MIN_MACS, all above
    cases = [(q, k.swapaxes(-1, -2), True), (q @ k.swapaxes(-1, -2), k, threads > 1),
             (q[:2], k[:2].swapaxes(-1, -2), False)]  # the last: 2 products, under MIN_MACS in all
    for a, b, to_mkl in cases:
        before = len(calls)
        got = mkl.matmul(a, b, alpha=0.5)
        assert (len(calls) == before) == to_mkl, (a.shape, b.shape, threads)
        np.testing.assert_allclose(got, _reference(a, b, 0.5), rtol=1e-5, atol=1e-5)
    assert mkl.matmul(f32(32, 16), f32(16, 32)).shape == (32, 32) and len(calls) == 3 - (threads > 1)  # 2-D: NumPy


def test_batch_offsets_are_kept_per_shape_and_strides(on_mkl):
    """The matrices' byte offsets of a batch are made once per (shape, strides) and reused: the same batch
    shape over other strides gets its own, and the kept arrays cannot be written to."""
    mkl._offsets.cache_clear()
    a, b = f32(2, 3, 5, 6), f32(2, 3, 6, 4)
    heads = f32(2, 5, 3, 6).swapaxes(1, 2)  # (2, 3) batch again, other strides
    for x, y in [(a, b), (heads, b), (a, b), (heads, b)]:
        np.testing.assert_allclose(mkl.matmul(x, y), _reference(x, y), rtol=1e-5, atol=1e-5)
    info = mkl._offsets.cache_info()
    assert info.misses == 4 and info.hits == 8  # a's, heads', b's and the outputs' strides; then all kept
    kept = mkl._offsets((2, 3), heads.strides[:2])
    np.testing.assert_array_equal(kept, [0, 24, 48, 360, 384, 408])
    with pytest.raises(ValueError, match="read-only"):
        kept[0] = 1


def test_edge_cases_keep_numpys_answers(on_mkl):
    a = f32(1024, 1024)  # MKL packs smaller operands whole before writing, so only a large product shows it
    np.testing.assert_array_equal(mkl.matmul(f32(3, 0), f32(0, 5)), np.zeros((3, 5), np.float32))  # k = 0
    assert mkl.matmul(f32(0, 4), f32(4, 5)).shape == (0, 5)
    want = _reference(a, a)
    got = mkl.matmul(a, a, out=a)  # out is an operand: NumPy's buffering, not BLAS writing over its input
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-5 * np.abs(want).max())
    c, d = f32(6, 5)[::-1], f32(5, 3)[::-1]  # negative strides
    np.testing.assert_allclose(mkl.matmul(c, d), _reference(c, d), rtol=1e-5, atol=1e-5)


def test_shape_mismatch_is_numpys_error(on_mkl):
    with pytest.raises(ValueError, match="matmul"):
        mkl.matmul(f32(3, 4), f32(5, 2))


def test_use_and_the_environment_choose(monkeypatch):
    try:
        assert mkl.use("numpy") == "numpy" and mkl.describe() == "NumPy's BLAS"
        assert mkl.use("mkl") == "mkl" and mkl.describe().startswith("MKL 20")
        with pytest.raises(ValueError, match="unknown BLAS choice 'openblas'"):
            mkl.use("openblas")
        monkeypatch.setenv("SEQLAB_BLAS", "numpy")
        assert mkl.use(None) == "numpy"
        monkeypatch.setenv("SEQLAB_BLAS", "fast")
        with pytest.raises(ConfigError, match="SEQLAB_BLAS='fast': expected one of auto, numpy, mkl"):
            mkl.use(None)
    finally:
        monkeypatch.delenv("SEQLAB_BLAS", raising=False)
        mkl.use(None)


@pytest.mark.parametrize("vendor,auto", [("GenuineIntel", "mkl"), (None, "mkl"), ("AuthenticAMD", "numpy")])
def test_auto_leaves_mkl_out_on_other_vendors_cpus(monkeypatch, vendor, auto):
    monkeypatch.setattr(mkl, "cpu_vendor", lambda: vendor)
    try:
        assert mkl.use("auto") == auto
        if auto == "numpy":
            assert mkl.describe() == ("NumPy's BLAS (MKL is installed but slower on AuthenticAMD; "
                                      "SEQLAB_BLAS=mkl uses it)")
        assert mkl.use("mkl") == "mkl"  # asked for by name: used on any CPU
        assert mkl.use("numpy") == "numpy" and mkl.describe() == "NumPy's BLAS"
    finally:
        mkl.use(None)


def test_cpu_vendor_reads_proc_cpuinfo():
    vendor = mkl.cpu_vendor()
    if os.path.exists("/proc/cpuinfo") and "vendor_id" in open("/proc/cpuinfo").read():
        assert vendor and vendor.isalnum()
    else:
        assert vendor is None


def test_mkl_asked_for_but_missing_is_one_clear_error(monkeypatch):
    mkl_path = mkl.mkl_path
    monkeypatch.setattr(mkl, "mkl_path", lambda: None)
    try:
        with pytest.raises(ConfigError, match=r"SEQLAB_BLAS=mkl but MKL's library .* pip install 'seqlab\[mkl\]'"):
            mkl.use("mkl")
        assert mkl.use("auto") == "numpy"  # auto without MKL: NumPy, silently
        monkeypatch.setattr(mkl, "_NEEDED", (*mkl._NEEDED, "cblas_no_such_function"))
        monkeypatch.setattr(mkl, "mkl_path", mkl_path)  # the real library, which lacks that name
        with pytest.raises(ConfigError, match="lacks cblas_no_such_function"):
            mkl.use("mkl")
        assert mkl.use("auto") == "numpy"
    finally:
        monkeypatch.undo()
        mkl.use(None)


def test_thread_count_follows_set_blas_threads(on_mkl):
    before = get_blas_threads() or 1
    lib = mkl._mkl()
    try:
        for n in (2, 1):
            assert set_blas_threads(n)
            assert lib.MKL_Get_Max_Threads() == n and get_blas_threads() == n  # OpenBLAS's count, not MKL's
    finally:
        set_blas_threads(before)


def test_vector_math_matches_float64(on_mkl):
    x = f32(4096) * 4
    out = np.empty_like(x)
    assert mkl.cdf_norm(x, out)
    np.testing.assert_allclose(out, ndtr(x.astype(np.float64)), rtol=0, atol=2e-7)
    assert mkl.exp(x, out)
    np.testing.assert_allclose(out, np.exp(x.astype(np.float64)), rtol=2e-7)
    y = x.copy()
    assert mkl.exp(y, y)  # in place
    np.testing.assert_array_equal(y, out)
    assert not mkl.cdf_norm(x.astype(np.float64), np.empty(x.shape))  # float64: the caller's own path
    assert not mkl.cdf_norm(x[::2], np.empty(x.size // 2, np.float32))  # not contiguous
    assert not mkl.exp(x, np.empty(x.size - 1, np.float32))  # sizes differ


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_on_mkl_matches_torch_and_the_numpy_kernels(on_mkl, numpy_kernels, approximate):
    draw = np.random.default_rng(1)  # its own draws: the same values whichever tests ran first
    x = (draw.standard_normal((3, 70, 64)) * 3).astype(np.float32)
    x[0, 0, :4] = [0.0, -9.0, 9.0, 1e-30]
    g = draw.standard_normal(x.shape).astype(np.float32)

    def run():
        t = seqlab.tensor(x, requires_grad=True)
        y = F.gelu(t, approximate=approximate)
        y.backward(seqlab.tensor(g))
        return y.numpy().copy(), np.array(t.grad)

    y_mkl, dx_mkl = run()
    mkl.use("numpy")
    y_np, dx_np = run()
    tx = torch.from_numpy(x).requires_grad_()
    ty = TF.gelu(tx, approximate=approximate)
    ty.backward(torch.from_numpy(g))
    x64 = x.astype(np.float64)
    if approximate == "none":
        exact = x64 * ndtr(x64)
    else:
        exact = 0.5 * x64 * (1 + np.tanh(np.sqrt(2 / np.pi) * (x64 + 0.044715 * x64 ** 3)))
    # against float64, error relative to |x| (torch's own float32 GELU is off by up to 3.3e-7·|x| in the tail)
    for got in (y_mkl, y_np):
        assert np.all(np.abs(got - exact) <= 2e-7 * np.abs(x64) + 1e-30)
    np.testing.assert_allclose(y_mkl, ty.detach().numpy(), rtol=1e-5, atol=2e-6)
    np.testing.assert_allclose(dx_mkl, dx_np, rtol=1e-5, atol=1e-6)  # MKL's Φ and e^x against NumPy's kernels
    # torch's float32 tanh form rounds the far tail's gradient to 0 (seqlab's logistic form keeps ~1e-6 there)
    np.testing.assert_allclose(dx_mkl, tx.grad.numpy(), rtol=2e-5, atol=1e-5)


@pytest.mark.parametrize("causal", [False, True])
def test_attention_op_on_mkl_matches_torch(on_mkl, causal):
    """The fused attention's products (scale inside the GEMM) and its backward, on MKL."""
    q, k, v = (f32(2, 3, 7, 8) for _ in range(3))
    g = f32(2, 3, 7, 8)
    ts = [seqlab.tensor(a, requires_grad=True) for a in (q, k, v)]
    out = F.scaled_dot_product_attention(*ts, is_causal=causal)
    out.backward(seqlab.tensor(g))
    tt = [torch.from_numpy(a).requires_grad_() for a in (q, k, v)]
    tout = TF.scaled_dot_product_attention(*tt, is_causal=causal)
    tout.backward(torch.from_numpy(g))
    np.testing.assert_allclose(out.numpy(), tout.detach().numpy(), rtol=1e-5, atol=1e-5)
    for s, t in zip(ts, tt):
        np.testing.assert_allclose(np.asarray(s.grad), t.grad.numpy(), rtol=1e-4, atol=1e-5)


def test_gpt_training_step_is_the_same_on_both(on_mkl):
    """Loss and every gradient of a GPT step agree between MKL and NumPy to float32 rounding."""
    from seqlab.models.gpt import GPT, GPTConfig

    seqlab.manual_seed(0)
    model = GPT(GPTConfig(vocab_size=50, n_positions=32, n_embd=32, n_layer=2, n_head=4, resid_pdrop=0.0,
                          embd_pdrop=0.0, attn_pdrop=0.0, activation_function="gelu"))
    ids = rng.integers(0, 50, (3, 16))

    def step():
        model.zero_grad()
        loss = model(ids, labels=ids).loss
        loss.backward()
        return float(loss.item()), {n: np.array(p.grad) for n, p in model.named_parameters()}

    loss_mkl, grads_mkl = step()
    mkl.use("numpy")
    loss_np, grads_np = step()
    assert abs(loss_mkl - loss_np) < 1e-5
    for name, g in grads_np.items():
        np.testing.assert_allclose(grads_mkl[name], g, rtol=1e-3, atol=1e-5 * max(1.0, np.abs(g).max()),
                                   err_msg=name)


def test_benchmarks_record_where_products_go():
    from seqlab.bench.harness import machine_info

    try:
        mkl.use("mkl")
        assert machine_info(1)["seqlab_blas"].startswith("MKL ")
        mkl.use("numpy")
        assert machine_info(1)["seqlab_blas"] == "NumPy's BLAS"
    finally:
        mkl.use(None)


def test_version_says_where_products_go(cli, monkeypatch):
    mkl.use("mkl")
    code, out, _ = cli("--version")
    assert code == 0 and out.startswith(f"seqlab {seqlab.__version__} (Python ") and "products on MKL 20" in out
    monkeypatch.setenv("SEQLAB_BLAS", "numpy")
    try:
        mkl.use(None)
        code, out, _ = cli("--version")
        assert code == 0 and "products on NumPy's BLAS; row kernels on " in out
    finally:
        monkeypatch.delenv("SEQLAB_BLAS")
        mkl.use(None)


def test_64_bit_integer_interface_in_the_environment_is_overridden():
    """MKL_INTERFACE_LAYER=ILP64 would make MKL read seqlab's 32-bit ints as 64-bit ones (a crash)."""
    import os
    import subprocess
    import sys

    code = ("import numpy as np; from seqlab import mkl; mkl.MIN_MACS = 0; a = np.ones((3, 4), np.float32); "
            "b = np.ones((4, 2), np.float32); assert mkl.library() == 'mkl'; print(mkl.matmul(a, b).sum())")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "MKL_INTERFACE_LAYER": "ILP64", "SEQLAB_BLAS": "mkl"})
    assert proc.returncode == 0 and proc.stdout.strip() == "24.0", proc.stderr[-500:]


def test_a_bad_seqlab_blas_is_one_line_from_the_command_line():
    import os
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-m", "seqlab", "--version"], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "SEQLAB_BLAS": "fast"})
    assert proc.returncode == 1 and proc.stdout == ""
    assert proc.stderr.strip() == "error: SEQLAB_BLAS='fast': expected one of auto, numpy, mkl"
