"""seqlab.distributions against torch.distributions: values and gradients on the same parameters, shapes,
validation errors, and sampling statistics (draws come from seqlab's generator, so only their law matches)."""
import numpy as np
import pytest

import seqlab
from seqlab import distributions as D

torch = pytest.importorskip("torch")
TD = torch.distributions

RNG = np.random.default_rng(0)


def _pos(*shape):
    return RNG.random(shape) + 0.5


def _probs(*shape):
    p = RNG.random(shape) + 0.1
    return p / p.sum(-1, keepdims=True)


def _spd(n, batch=()):
    a = RNG.standard_normal(batch + (n, n))
    return a @ np.swapaxes(a, -1, -2) + n * np.eye(n)


def _tril(n):
    low = np.tril(RNG.standard_normal((n, n)))
    np.fill_diagonal(low, np.abs(np.diag(low)) + 0.5)
    return low


# name: (constructor taking (module, *params), parameter arrays, a value array in the support)
CASES = {
    "normal": (lambda M, a, b: M.Normal(a, b), [RNG.standard_normal((3, 4)), _pos(3, 4)],
               RNG.standard_normal((2, 3, 4))),
    "lognormal": (lambda M, a, b: M.LogNormal(a, b), [RNG.standard_normal(4), _pos(4)], _pos(3, 4)),
    "uniform": (lambda M, a, b: M.Uniform(a, a + b), [RNG.standard_normal(5), _pos(5) + 1], None),
    "exponential": (lambda M, r: M.Exponential(r), [_pos(2, 3)], _pos(4, 2, 3)),
    "laplace": (lambda M, a, b: M.Laplace(a, b), [RNG.standard_normal(4), _pos(4)], RNG.standard_normal((3, 4))),
    "gamma": (lambda M, a, b: M.Gamma(a, b), [_pos(3) * 2, _pos(3)], _pos(5, 3)),
    "beta": (lambda M, a, b: M.Beta(a, b), [_pos(3) * 2, _pos(3)], RNG.random((4, 3)) * 0.9 + 0.05),
    "dirichlet": (lambda M, c: M.Dirichlet(c), [_pos(2, 4) * 2], _probs(3, 2, 4)),
    "categorical_probs": (lambda M, p: M.Categorical(probs=p), [_probs(3, 5)], RNG.integers(0, 5, (2, 3))),
    "categorical_logits": (lambda M, lg: M.Categorical(logits=lg), [RNG.standard_normal((3, 5))],
                           RNG.integers(0, 5, (4, 1))),
    "onehot": (lambda M, lg: M.OneHotCategorical(logits=lg), [RNG.standard_normal((2, 4))],
               np.eye(4)[RNG.integers(0, 4, (3, 2))]),
    "bernoulli_probs": (lambda M, p: M.Bernoulli(probs=p), [RNG.random((2, 3)) * 0.8 + 0.1],
                        RNG.integers(0, 2, (4, 2, 3)).astype(float)),
    "bernoulli_logits": (lambda M, lg: M.Bernoulli(logits=lg), [RNG.standard_normal(6) * 3],
                         RNG.integers(0, 2, 6).astype(float)),
    "poisson": (lambda M, r: M.Poisson(r), [_pos(4) * 3], RNG.integers(0, 6, (3, 4)).astype(float)),
    "binomial": (lambda M, p: M.Binomial(7, probs=p), [RNG.random(4) * 0.8 + 0.1],
                 RNG.integers(0, 8, (2, 4)).astype(float)),
    "binomial_logits": (lambda M, lg: M.Binomial(5, logits=lg), [RNG.standard_normal(3)],
                        RNG.integers(0, 6, 3).astype(float)),
    "multinomial": (lambda M, p: M.Multinomial(6, probs=p), [_probs(2, 3)],
                    np.array([[1.0, 2.0, 3.0], [6.0, 0.0, 0.0]])),
    "mvn_cov": (lambda M, m, c: M.MultivariateNormal(m, covariance_matrix=c), [RNG.standard_normal((2, 3)),
                                                                               _spd(3, (2,))],
                RNG.standard_normal((4, 2, 3))),
    "mvn_tril": (lambda M, m, low: M.MultivariateNormal(m, scale_tril=low), [RNG.standard_normal(3), _tril(3)],
                 RNG.standard_normal((5, 3))),
    "mvn_prec": (lambda M, m, p: M.MultivariateNormal(m, precision_matrix=p), [RNG.standard_normal(2), _spd(2)],
                 RNG.standard_normal((3, 2))),
    "independent": (lambda M, a, b: M.Independent(M.Normal(a, b), 1), [RNG.standard_normal((3, 4)), _pos(3, 4)],
                    RNG.standard_normal((2, 3, 4))),
    "mixture": (lambda M, lg, a, b: M.MixtureSameFamily(M.Categorical(logits=lg), M.Normal(a, b)),
                [RNG.standard_normal((2, 3)), RNG.standard_normal((2, 3)), _pos(2, 3)], RNG.standard_normal((4, 2))),
}
CASES["uniform"] = (CASES["uniform"][0], CASES["uniform"][1], CASES["uniform"][1][0] + 0.5)


def _build(name, dtype=np.float64):
    ctor, params, value = CASES[name]
    ps = [p.astype(dtype) for p in params]
    s_params = [seqlab.tensor(p, requires_grad=True) for p in ps]
    t_params = [torch.tensor(p, requires_grad=True) for p in ps]
    return ctor(D, *s_params), ctor(TD, *t_params), s_params, t_params, value


def _np(x):
    return x.detach().numpy() if hasattr(x, "detach") else np.asarray(x)


def _close(s, t, rtol, atol):
    np.testing.assert_allclose(_np(s), _np(t), rtol=rtol, atol=atol)


def _statistic(dist, name: str):
    """(the property or method's value, or NotImplementedError), one of mean/variance/stddev/mode/entropy."""
    try:
        out = getattr(dist, name)
        return out() if callable(out) else out
    except NotImplementedError:
        return NotImplementedError


@pytest.mark.parametrize("dtype,rtol", [(np.float64, 1e-10), (np.float32, 2e-5)])
@pytest.mark.parametrize("name", list(CASES))
def test_values_and_gradients_match_torch(name, dtype, rtol):
    s, t, s_params, t_params, value = _build(name, dtype)
    assert tuple(s.batch_shape) == tuple(t.batch_shape) and tuple(s.event_shape) == tuple(t.event_shape)
    sv, tv = seqlab.tensor(np.asarray(value, dtype=dtype)), torch.tensor(np.asarray(value, dtype=dtype))
    s_total, t_total = s.log_prob(sv).sum(), t.log_prob(tv).sum()
    _close(s.log_prob(sv), t.log_prob(tv), rtol, 1e-12 if dtype == np.float64 else 1e-5)
    for stat in ("mean", "variance", "stddev", "mode", "entropy"):
        sv_, tv_ = _statistic(s, stat), _statistic(t, stat)
        if tv_ is NotImplementedError:
            continue
        assert sv_ is not NotImplementedError, f"{name}.{stat} missing"
        # torch's Multinomial entropy takes lgamma(N + 1) in float32 (of an int64 tensor): ~1e-7 off
        tol = 1e-6 if name == "multinomial" and stat == "entropy" else max(rtol, 1e-9)
        _close(sv_, tv_, tol, 1e-12 if dtype == np.float64 else 1e-5)
        if stat in ("entropy", "mean", "variance") and tv_.requires_grad:
            s_total, t_total = s_total + sv_.sum(), t_total + tv_.sum()
    s_total.backward()
    t_total.backward()
    for sp, tp in zip(s_params, t_params):
        _close(sp.grad, tp.grad, max(rtol, 1e-8) * 10, 1e-10 if dtype == np.float64 else 1e-4)


@pytest.mark.parametrize("name", ["normal", "exponential", "laplace", "uniform", "lognormal"])
def test_cdf_icdf_match_torch(name):
    s, t, s_params, t_params, value = _build(name)
    sv, tv = seqlab.tensor(np.asarray(value)), torch.tensor(np.asarray(value))
    _close(s.cdf(sv), t.cdf(tv), 1e-10, 1e-12)
    s.cdf(sv).sum().backward()
    t.cdf(tv).sum().backward()
    for sp, tp in zip(s_params, t_params):
        _close(sp.grad, tp.grad, 1e-8, 1e-12)
    q = np.broadcast_to(np.linspace(0.05, 0.95, s.batch_shape[-1]), tuple(s.batch_shape))
    _close(s.icdf(seqlab.tensor(q)), t.icdf(torch.tensor(q)), 1e-10, 1e-12)


SAMPLE_SHAPES = [(), (7,), (2, 3)]


@pytest.mark.parametrize("name", list(CASES))
def test_sample_shapes_and_rsample(name):
    s, t, *_ = _build(name)
    assert s.has_rsample == t.has_rsample
    for shape in SAMPLE_SHAPES:
        x = s.sample(shape)
        assert tuple(x.shape) == tuple(t.sample(shape).shape)
        assert x.dtype == (np.int64 if "categorical" in name else np.float64)
        assert not x.requires_grad
    if t.has_rsample:
        assert s.rsample((3,)).requires_grad
    else:
        with pytest.raises(NotImplementedError):
            s.rsample()


@pytest.mark.parametrize("name", ["normal", "gamma", "dirichlet", "categorical_logits", "bernoulli_probs",
                                  "mvn_cov", "poisson", "binomial", "multinomial", "mixture"])
def test_seed_repeats_draws(name):
    s = _build(name)[0]
    seqlab.manual_seed(3)
    a = s.sample((4,))
    seqlab.manual_seed(3)
    np.testing.assert_array_equal(a.numpy(), s.sample((4,)).numpy())


@pytest.mark.parametrize("name", ["normal", "lognormal", "uniform", "exponential", "laplace", "gamma", "beta",
                                  "dirichlet", "categorical_probs", "onehot", "bernoulli_probs", "poisson",
                                  "binomial", "multinomial", "mvn_cov", "independent", "mixture"])
def test_sample_moments(name):
    s, t, *_ = _build(name)
    seqlab.manual_seed(0)
    x = s.sample((20000,)).numpy().astype(np.float64)
    mean = t.mean.detach().numpy() if "categorical" not in name else None
    if mean is not None:
        sd = t.stddev.detach().numpy()
        np.testing.assert_allclose(x.mean(0), mean, atol=float(5 * sd.max() / np.sqrt(20000)) + 1e-3)
        np.testing.assert_allclose(x.std(0), sd, rtol=0.1)
    else:  # category frequencies
        freq = (x[..., None] == np.arange(5)).mean(0)
        np.testing.assert_allclose(freq, t.probs.detach().numpy(), atol=0.02)


def test_normal_rsample_is_loc_plus_scale_eps():
    s, t, (loc, scale), (tloc, tscale), _ = _build("normal")
    seqlab.manual_seed(5)
    z = s.rsample((2,))
    seqlab.manual_seed(5)
    eps = seqlab.randn(2, 3, 4, dtype=seqlab.float64).numpy()
    tz = tloc + torch.tensor(eps) * tscale
    _close(z, tz, 1e-12, 1e-12)
    (z ** 2).sum().backward()
    (tz ** 2).sum().backward()
    _close(loc.grad, tloc.grad, 1e-10, 1e-12)
    _close(scale.grad, tscale.grad, 1e-10, 1e-12)


def test_mvn_rsample_is_loc_plus_L_eps():
    s, t, (loc, low), (tloc, tlow), _ = _build("mvn_tril")
    seqlab.manual_seed(2)
    z = s.rsample((4,))
    seqlab.manual_seed(2)
    eps = torch.tensor(seqlab.randn(4, 3, dtype=seqlab.float64).numpy())
    tz = tloc + (tlow @ eps.unsqueeze(-1)).squeeze(-1)
    _close(z, tz, 1e-12, 1e-12)
    z.sum().backward()
    tz.sum().backward()
    _close(low.grad, tlow.grad, 1e-10, 1e-12)


def test_gamma_reparameterisation_gradient_matches_torch():
    # torch's dx/dα uses series and asymptotic approximations good to ~3e-5; ours is held to mpmath's to 1e-8
    from seqlab.distributions.gamma_sampler import standard_gamma_grad

    alpha = np.array([0.3, 0.9, 1.5, 4.0, 20.0, 2.0, 2.0])
    x = np.array([0.05, 0.8, 1.2, 3.0, 25.0, 1e-3, 9.0])
    ours = standard_gamma_grad(alpha, x)
    theirs = torch._standard_gamma_grad(torch.tensor(alpha), torch.tensor(x)).numpy()
    np.testing.assert_allclose(ours, theirs, rtol=1e-4)
    mp = pytest.importorskip("mpmath")
    mp.mp.dps = 30
    for a, xx, got in zip(alpha, x, ours):
        dF = mp.diff(lambda aa: mp.gammainc(aa, 0, xx, regularized=True), a)
        exact = float(-dF * mp.gamma(a) / (mp.mpf(xx) ** (a - 1) * mp.e ** (-xx)))
        assert abs(got / exact - 1) < 1e-8


def test_gamma_rsample_gradient_is_unbiased():
    # d/dα E[X] = d/dα (α / rate) = 1 / rate
    alpha = seqlab.tensor([0.7, 3.0], dtype=seqlab.float64, requires_grad=True)
    rate = seqlab.tensor([2.0, 0.5], dtype=seqlab.float64, requires_grad=True)
    seqlab.manual_seed(1)
    D.Gamma(alpha, rate).rsample((40000,)).mean(0).sum().backward()
    np.testing.assert_allclose(_np(alpha.grad), 1 / rate.detach().numpy(), rtol=0.03)
    conc = seqlab.tensor([1.0, 2.0, 3.0], dtype=seqlab.float64, requires_grad=True)
    D.Dirichlet(conc).rsample((20000,)).mean(0)[0].backward()  # E[X_0] = c_0 / Σc: d/dc_0 = (Σc − c_0)/(Σc)²
    np.testing.assert_allclose(_np(conc.grad), [5 / 36, -1 / 36, -1 / 36], atol=0.01)


def test_categorical_normalises_and_derives_lazily():
    logits = np.array([[1.0, 2.0, 3.0], [0.0, -np.inf, 1.0]])
    s, t = D.Categorical(logits=seqlab.tensor(logits)), TD.Categorical(logits=torch.tensor(logits))
    _close(s.logits, t.logits, 1e-12, 0)
    _close(s.probs, t.probs, 1e-12, 1e-15)
    _close(s.entropy(), t.entropy(), 1e-12, 1e-15)
    _close(s.enumerate_support(), t.enumerate_support(), 0, 0)
    assert tuple(s.enumerate_support(expand=False).shape) == tuple(t.enumerate_support(expand=False).shape)
    p = D.Categorical(probs=seqlab.tensor([2.0, 6.0]))
    np.testing.assert_allclose(p.probs.numpy(), [0.25, 0.75])
    np.testing.assert_allclose(p.logits.numpy(), np.log([0.25, 0.75]), rtol=1e-6)


def test_expand():
    for name in ["normal", "categorical_logits", "bernoulli_probs", "dirichlet", "mvn_cov", "gamma"]:
        s, t, *_ = _build(name)
        shape = (2,) + tuple(s.batch_shape)
        se, te = s.expand(shape), t.expand(shape)
        assert tuple(se.batch_shape) == tuple(te.batch_shape)
        assert tuple(se.sample().shape) == tuple(te.sample().shape)
        value = te.sample()
        _close(se.log_prob(seqlab.tensor(value.numpy())), te.log_prob(value), 1e-10, 1e-12)


BAD_ARGS = [
    lambda M, T: M.Normal(T([0.0]), T([-1.0])),
    lambda M, T: M.Bernoulli(probs=T([1.5])),
    lambda M, T: M.Categorical(probs=T([[0.5, -0.5, 1.0]])),
    lambda M, T: M.Gamma(T([0.0]), T([1.0])),
    lambda M, T: M.Dirichlet(T([1.0, -1.0])),
    lambda M, T: M.Exponential(T([-2.0])),
    lambda M, T: M.Uniform(T([1.0]), T([0.0])),
    lambda M, T: M.MultivariateNormal(T([0.0, 0.0]), covariance_matrix=T([[1.0, 2.0], [2.0, 1.0]])),
    lambda M, T: M.MultivariateNormal(T([0.0, 0.0]), scale_tril=T([[1.0, 0.0], [0.0, -1.0]])),
    lambda M, T: M.MultivariateNormal(T([0.0, 0.0])),
    lambda M, T: M.Categorical(),
    lambda M, T: M.Independent(M.Normal(T([0.0]), T([1.0])), 2),
    lambda M, T: M.Normal(T([0.0]), T([1.0])).log_prob([0.0]),
    lambda M, T: M.Normal(T([0.0, 1.0]), T([1.0, 1.0])).log_prob(T([0.0, 1.0, 2.0])),
    lambda M, T: M.Categorical(logits=T([0.0, 1.0])).log_prob(T([2.0])),
    lambda M, T: M.Bernoulli(probs=T([0.5])).log_prob(T([0.5])),
    lambda M, T: M.Poisson(T([1.0])).log_prob(T([1.5])),
    lambda M, T: M.Dirichlet(T([1.0, 1.0])).log_prob(T([0.5, 0.6])),
    lambda M, T: M.Exponential(T([1.0])).log_prob(T([-1.0])),
    lambda M, T: M.Beta(T([1.0]), T([1.0])).log_prob(T([1.5])),
]


@pytest.mark.parametrize("make", BAD_ARGS)
def test_validation_errors_as_torch(make):
    with pytest.raises(Exception) as theirs:
        make(TD, lambda v: torch.tensor(v, dtype=torch.float64))
    with pytest.raises(theirs.type) as ours:
        make(D, lambda v: seqlab.tensor(v, dtype=seqlab.float64))
    assert type(ours.value) is theirs.type


@pytest.mark.filterwarnings("ignore:invalid value encountered in log")
def test_validate_args_off():
    d = D.Normal(seqlab.tensor([0.0]), seqlab.tensor([-1.0]), validate_args=False)
    assert np.isnan(d.log_prob(seqlab.tensor([0.0])).numpy()).all()
    D.Distribution.set_default_validate_args(False)
    try:
        D.Bernoulli(probs=seqlab.tensor([2.0]))
    finally:
        D.Distribution.set_default_validate_args(True)
    with pytest.raises(ValueError):
        D.Bernoulli(probs=seqlab.tensor([2.0]))
    with pytest.raises(ValueError):
        D.Distribution.set_default_validate_args("yes")


def test_constraints_check():
    c = D.constraints
    x = seqlab.tensor([-1.0, 0.0, 0.5, 1.0, 2.0])
    tc = TD.constraints
    tx = torch.tensor(x.numpy())
    for ours, theirs in [(c.real, tc.real), (c.positive, tc.positive), (c.nonnegative, tc.nonnegative),
                         (c.unit_interval, tc.unit_interval), (c.boolean, tc.boolean),
                         (c.nonnegative_integer, tc.nonnegative_integer), (c.integer_interval(0, 1),
                                                                           tc.integer_interval(0, 1)),
                         (c.greater_than(0.5), tc.greater_than(0.5)), (c.interval(0, 1), tc.interval(0, 1))]:
        np.testing.assert_array_equal(ours.check(x).numpy(), theirs.check(tx).numpy())
    simplex = np.array([[0.2, 0.8], [0.5, 0.6], [-0.1, 1.1]])
    np.testing.assert_array_equal(c.simplex.check(seqlab.tensor(simplex)).numpy(),
                                  tc.simplex.check(torch.tensor(simplex)).numpy())
    assert c.simplex.event_dim == 1 and c.integer_interval(0, 3).is_discrete and not c.real.is_discrete


KL_PAIRS = ["normal", "categorical_logits", "bernoulli_probs", "uniform", "mvn_cov", "independent", "beta", "gamma",
            "dirichlet", "exponential", "laplace", "poisson", "lognormal", "onehot"]


@pytest.mark.parametrize("name", KL_PAIRS)
def test_kl_matches_torch(name):
    sp, tp, s_params, t_params, _ = _build(name)
    ctor, params, _ = CASES[name]
    if name == "uniform":  # q must cover p: widen it
        q_params = [params[0] - 0.3, params[1] + 1.0]
    elif name in ("categorical_logits", "normal", "mvn_cov", "independent", "laplace"):
        q_params = [params[0] + RNG.standard_normal(params[0].shape) * 0.5] + [p * 1.3 for p in params[1:]]
    elif name == "bernoulli_probs":
        q_params = [1 - params[0] * 0.9]
    else:
        q_params = [p * 1.4 + 0.1 for p in params]
    sq, tq = ctor(D, *[seqlab.tensor(p) for p in q_params]), ctor(TD, *[torch.tensor(p) for p in q_params])
    s_kl, t_kl = D.kl_divergence(sp, sq), TD.kl_divergence(tp, tq)
    _close(s_kl, t_kl, 1e-9, 1e-12)
    s_kl.sum().backward()
    t_kl.sum().backward()
    for a, b in zip(s_params, t_params):
        _close(a.grad, b.grad, 1e-8, 1e-11)


def test_kl_infinite_and_unknown_pairs():
    p = D.Uniform(seqlab.tensor([0.0]), seqlab.tensor([2.0]))
    q = D.Uniform(seqlab.tensor([0.5]), seqlab.tensor([1.0]))
    assert np.isinf(D.kl_divergence(p, q).numpy()).all()
    cp = D.Categorical(probs=seqlab.tensor([0.5, 0.5, 0.0]))
    cq = D.Categorical(probs=seqlab.tensor([0.5, 0.0, 0.5]))
    tp, tq = TD.Categorical(probs=torch.tensor([0.5, 0.5, 0.0])), TD.Categorical(probs=torch.tensor([0.5, 0.0, 0.5]))
    np.testing.assert_array_equal(D.kl_divergence(cp, cq).numpy(), TD.kl_divergence(tp, tq).numpy())
    with pytest.raises(NotImplementedError):
        D.kl_divergence(D.Normal(0.0, 1.0), D.Exponential(1.0))

    class MyNormal(D.Normal):
        pass

    @D.register_kl(MyNormal, MyNormal)
    def _kl_mine(p, q):
        return p.loc * 0 + 42.0

    assert float(D.kl_divergence(MyNormal(0.0, 1.0), MyNormal(0.0, 1.0))) == 42.0
    assert float(D.kl_divergence(MyNormal(0.0, 1.0), D.Normal(0.0, 1.0))) == 0.0  # the Normal pair applies


def test_numbers_become_default_dtype_tensors():
    d = D.Normal(0.0, 1.0)
    assert d.batch_shape == () and d.sample().dtype == np.float32 and d.sample((3,)).shape == (3,)
    d64 = D.Normal(seqlab.tensor([0.0, 1.0], dtype=seqlab.float64), 2.0)
    assert d64.scale.dtype == np.float64 and d64.batch_shape == (2,)
    b = D.Binomial(10, probs=seqlab.tensor([0.2, 0.7]))
    np.testing.assert_allclose(b.entropy().numpy(), TD.Binomial(10, probs=torch.tensor([0.2, 0.7])).entropy().numpy(),
                               rtol=1e-5)
