"""seqlab.special against torch.special: values and gradients (central differences, and torch in float64 and
float32), result dtypes (integers give float32), edge values (0, poles, ±inf, NaN), second derivatives, errors,
the aliases of seqlab's own functions, torch's top-level names, Tensor methods and their in-place forms, and the
CuPy path on the stand-in."""
import numpy as np
import pytest
import torch

import seqlab
from helpers import check_op
from seqlab import autograd
from seqlab import special as SP

INF, NAN = float("inf"), float("nan")
REAL = np.array([-3.0, -1.3, -0.4, 0.2, 0.7, 1.5, 4.0])
POSITIVE = np.array([0.05, 0.3, 0.5, 1.0, 1.7, 3.2, 9.0])
PROB = np.array([0.01, 0.2, 0.5, 0.77, 0.99])

# name: (inputs drawn from, extra keyword arguments)
UNARY = {
    "erf": REAL, "erfc": REAL, "erfinv": 2 * PROB - 1, "erfcx": REAL, "expit": REAL, "logit": PROB,
    "gammaln": np.concatenate([POSITIVE, [-2.5, -0.7]]), "digamma": np.concatenate([POSITIVE, [-2.5, -0.7]]),
    "psi": POSITIVE, "sinc": REAL, "entr": POSITIVE, "ndtr": REAL, "ndtri": PROB, "log_ndtr": REAL, "i0": REAL,
    "i0e": REAL, "i1": REAL, "i1e": REAL, "expm1": REAL, "exp2": REAL, "log1p": POSITIVE,
}


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_as_torch(name):
    x = UNARY[name]
    check_op(getattr(SP, name), getattr(torch.special, name), [x], rtol32=2e-5)


@pytest.mark.parametrize("n", [0, 1, 2, 3])
def test_polygamma(n):
    x = np.concatenate([POSITIVE[1:], [-2.5, -0.7]])  # ψ⁽ⁿ⁾(0.05) ~ 1e6 would drown central differences
    check_op(lambda a: SP.polygamma(n, a), lambda a: torch.special.polygamma(n, a), [x], rtol64=1e-9, rtol32=2e-5)


@pytest.mark.parametrize("p", [1, 2, 5])
def test_multigammaln(p):
    check_op(lambda a: SP.multigammaln(a, p), lambda a: torch.special.multigammaln(a, p), [POSITIVE + p / 2])


def test_binary_and_reductions():
    y = np.array([-0.5, 0.0, 0.3, 1.0, 2.5, 7.0, 0.1])
    check_op(SP.xlog1py, torch.special.xlog1py, [REAL, y])
    check_op(SP.xlogy, torch.special.xlogy, [REAL, POSITIVE])
    check_op(lambda a: SP.xlog1py(a, 2.0), lambda a: torch.special.xlog1py(a, 2.0), [REAL])
    check_op(lambda b: SP.xlog1py(3.0, b), lambda b: torch.special.xlog1py(3.0, b), [y])
    check_op(lambda a: SP.logit(a, eps=0.1), lambda a: torch.special.logit(a, eps=0.1), [np.array([0.05, 0.5, 0.97])])
    for name in ("log_softmax", "softmax", "logsumexp"):
        check_op(lambda a: getattr(SP, name)(a, 1), lambda a: getattr(torch.special, name)(a, 1), [(2, 3, 4)])
    check_op(lambda a: SP.log_softmax(a, 0, dtype=seqlab.float64), lambda a: torch.special.log_softmax(
        a, 0, dtype=torch.float64), [(3, 2)], dtypes=("float32",), gradcheck_=False)
    check_op(lambda a: SP.round(a, decimals=2), lambda a: torch.special.round(a, decimals=2), [(3, 4)], grad=False)


# ---- edge values: zeros, poles, the ends of the domain, NaN -------------------------------------------------
EDGES = np.array([0.0, -0.0, -1.0, -2.0, 1.0, -1e-8, 1e-8, 30.0, -40.0, 40.0, INF, -INF, NAN])


@pytest.mark.parametrize("name", ["erfc", "erfinv", "erfcx", "gammaln", "digamma", "sinc", "entr", "ndtr", "ndtri",
                                  "log_ndtr", "i0", "i0e", "i1", "i1e", "exp2"])
def test_edge_values_and_gradients(name):
    s = seqlab.tensor(EDGES, requires_grad=True)
    t = torch.tensor(EDGES, requires_grad=True)
    out_s, out_t = getattr(SP, name)(s), getattr(torch.special, name)(t)
    np.testing.assert_allclose(out_s.numpy(), out_t.detach().numpy(), rtol=1e-12, equal_nan=True)
    out_s.backward(seqlab.ones_like(out_s))
    out_t.backward(torch.ones_like(out_t))
    finite = ~(np.isinf(EDGES) | np.isnan(EDGES))  # torch's gradients at ±inf are NaN or inf by formula
    if name == "sinc":  # torch's own formula, cancelling near 0: the same rounding is not promised there
        finite &= np.abs(EDGES) > 1e-6
    if name == "digamma":  # trigamma at the negative integers: SciPy's inf, torch's a large finite number
        finite &= ~((EDGES < 0) & (EDGES == np.round(EDGES)))
    rtol = 1e-9 if name == "digamma" else 1e-12  # torch's trigamma: π²/6 at 1 to 5e-10 (SciPy's is exact)
    np.testing.assert_allclose(s.grad[finite], t.grad.numpy()[finite], rtol=rtol, equal_nan=True)


def test_polygamma_at_poles_as_scipy():
    """At the poles (0 and the negative integers) ψ⁽ⁿ⁾ is ±inf or NaN, SciPy's; torch's trigamma gives a large
    finite number at the negative integers instead (6.58e32 at −1): the one difference in values."""
    out = SP.polygamma(1, seqlab.tensor([0.0, -1.0, -2.0], dtype=seqlab.float64)).numpy()
    assert np.isinf(out[0]) and not np.isfinite(out[1:]).any()


# ---- dtypes ----------------------------------------------------------------------------------------------------
@pytest.mark.filterwarnings("ignore:divide by zero:RuntimeWarning", "ignore:invalid value:RuntimeWarning")
@pytest.mark.parametrize("name", sorted(UNARY))
def test_integers_and_bools_give_float32(name):
    for values in ([1, 2, 3], [True, False]):
        s, t = getattr(SP, name)(seqlab.tensor(values)), getattr(torch.special, name)(torch.tensor(values))
        assert s.dtype == np.float32 and t.dtype == torch.float32
        np.testing.assert_allclose(s.numpy(), t.numpy(), rtol=1e-6, equal_nan=True)
    for dtype in (np.float32, np.float64):
        assert getattr(SP, name)(seqlab.tensor(np.array([0.3], dtype))).dtype == dtype
    assert SP.polygamma(2, seqlab.tensor([1, 2])).dtype == np.float32
    assert SP.multigammaln(seqlab.tensor([3, 4]), 2).dtype == np.float32


def test_aliases_are_seqlabs_own_functions():
    assert SP.erf is seqlab.erf and SP.expit is seqlab.sigmoid and SP.logit is seqlab.logit
    assert SP.xlogy is seqlab.xlogy and SP.log_softmax is seqlab.log_softmax and SP.softmax is seqlab.softmax
    assert SP.logsumexp is seqlab.logsumexp and SP.expm1 is seqlab.expm1 and SP.log1p is seqlab.log1p
    assert SP.round is seqlab.round and SP.psi is SP.digamma


# ---- second derivatives ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name,x", [("erfc", REAL), ("erfinv", 2 * PROB - 1), ("gammaln", POSITIVE),
                                    ("digamma", POSITIVE), ("sinc", REAL), ("log_ndtr", REAL), ("ndtri", PROB),
                                    ("i0e", REAL), ("i1", REAL), ("i1e", REAL), ("erfcx", REAL), ("entr", POSITIVE)])
def test_double_backward(name, x):
    results = []
    for lib, grad in ((seqlab, autograd.grad), (torch, torch.autograd.grad)):
        t = lib.tensor(x, requires_grad=True)
        g, = grad(getattr(lib.special, name)(t).sum(), t, create_graph=True)
        h, = grad((g * lib.tensor(np.linspace(0.5, 1.5, len(x)))).sum(), t)
        results.append((g.detach().numpy() if hasattr(g, "detach") else g.numpy(), h.numpy()))
    for s, t in zip(*results):
        np.testing.assert_allclose(s, t, rtol=1e-9, atol=1e-12)


def test_double_backward_of_polygamma_and_xlog1py():
    x, y = POSITIVE, POSITIVE[::-1].copy()
    results = []
    for lib, grad in ((seqlab, autograd.grad), (torch, torch.autograd.grad)):
        a, b = lib.tensor(x, requires_grad=True), lib.tensor(y, requires_grad=True)
        ga, gb = grad((lib.special.polygamma(2, a) + lib.special.xlog1py(a, b)).sum(), (a, b), create_graph=True)
        results.append([v.numpy() for v in grad((ga * gb).sum(), (a, b))])
    for s, t in zip(*results):
        np.testing.assert_allclose(s, t, rtol=1e-8)


# ---- errors ------------------------------------------------------------------------------------------------------
def test_errors_as_torchs():
    for fn, kind in [(lambda lib: lib.special.polygamma(-1, lib.ones(2)), RuntimeError),
                     (lambda lib: lib.special.polygamma(1.5, lib.ones(2)), TypeError),
                     (lambda lib: lib.special.multigammaln(lib.ones(2), 0), RuntimeError),
                     (lambda lib: lib.special.erfc([1.0, 2.0]), TypeError),
                     (lambda lib: lib.special.xlog1py(1.0, 2.0), TypeError),
                     (lambda lib: lib.tensor([1, 2]).erfinv_(), RuntimeError)]:
        with pytest.raises(kind) as t_err:
            fn(torch)
        with pytest.raises(kind) as s_err:
            fn(seqlab)
        assert "\n" not in str(s_err.value)
        if kind is RuntimeError and "polygamma" in str(t_err.value) or "p has" in str(t_err.value):
            assert str(s_err.value) == str(t_err.value)


# ---- torch's top-level names, Tensor methods, in place ---------------------------------------------------------
def test_top_level_names_and_methods():
    x = np.array([0.3, 1.2, 2.5])
    for name in ("lgamma", "digamma", "erfinv", "erfc", "sinc", "i0"):
        arg = x / 3 if name == "erfinv" else x
        check_op(getattr(seqlab, name), getattr(torch, name), [arg], gradcheck_=False)
        check_op(lambda a: getattr(a, name)(), lambda a: getattr(a, name)(), [arg], gradcheck_=False)
        s, t = seqlab.tensor(arg), torch.tensor(arg)
        assert getattr(s, name + "_")() is s
        getattr(t, name + "_")()
        np.testing.assert_allclose(s.numpy(), t.numpy(), rtol=1e-12)
    check_op(lambda a: (seqlab.polygamma(2, a), a.polygamma(1), seqlab.mvlgamma(a + 2, 2), a.mvlgamma(p=1)),
             lambda a: (torch.polygamma(2, a), a.polygamma(1), torch.mvlgamma(a + 2, 2), a.mvlgamma(p=1)), [x],
             rtol64=1e-8)  # torch's trigamma agrees with SciPy's to ~1e-9
    s = seqlab.tensor(x + 2)
    assert s.polygamma_(1) is s and s.mvlgamma_(2) is s
    np.testing.assert_allclose(s.numpy(), torch.tensor(x + 2).polygamma_(1).mvlgamma_(2).numpy(), rtol=1e-8)
    leaf = seqlab.tensor(x, requires_grad=True)
    with pytest.raises(RuntimeError, match="in place"):
        leaf.lgamma_()
    for name in ("lgamma", "digamma", "polygamma", "erfinv", "erfc", "sinc", "i0", "mvlgamma"):
        assert name in seqlab.__all__


# ---- the device path ---------------------------------------------------------------------------------------------
def test_on_the_cupy_stand_in(cuda, monkeypatch):
    """Device arrays through cupyx.scipy.special (the stand-in lends SciPy's under that name): the same values and
    gradients as on the CPU, no NumPy-only call on the way."""
    import cupy_stand_in
    import scipy.special

    if cuda is cupy_stand_in.cupy:
        for name in ("erfc", "erfinv", "erfcx", "gammaln", "digamma", "polygamma", "ndtr", "ndtri", "log_ndtr",
                     "i0", "i0e", "i1", "i1e"):
            fn = getattr(scipy.special, name)
            monkeypatch.setattr(cupy_stand_in.cupyx.scipy.special, name,
                                lambda *a, _fn=fn: cupy_stand_in._call(_fn, a, {}), raising=False)
    x0 = np.array([0.1, 0.4, 0.75, 0.9])

    def run(device):
        x = seqlab.tensor(x0, device=device, requires_grad=True)
        outs = [SP.erfc(x), SP.erfinv(x), SP.erfcx(x), SP.gammaln(x), SP.digamma(x), SP.polygamma(2, x), SP.sinc(x),
                SP.entr(x), SP.ndtr(x), SP.ndtri(x), SP.log_ndtr(x), SP.i0(x), SP.i0e(x), SP.i1(x), SP.i1e(x),
                SP.exp2(x), SP.xlog1py(x, x), SP.multigammaln(x + 1, 2)]
        sum(o.sum() for o in outs).backward()
        return [o.data for o in outs] + [x.grad]

    for h, d in zip(run("cpu"), run("cuda")):
        assert not isinstance(d, np.ndarray)
        np.testing.assert_allclose(cuda.asnumpy(d), h, rtol=1e-12)
