"""LBFGS (with and without the strong-Wolfe line search) and Rprop against torch.optim, step for step, in
float64 on the same initial weights.

Rprop is elementwise and exact: given the same gradients it reproduces torch's parameters bit for bit. LBFGS
reproduces torch's iteration (the same evaluations, iterations, stopping tests and line-search decisions) but
not every last bit: torch's `add_(…, alpha=t)` rounds t·d + x once (a fused multiply-add) where NumPy rounds
twice, and its dot products sum in another order. On the Rosenbrock function, whose valley amplifies rounding,
the cases below are ones where those differences stay under 1e-10 relative; on some others (lr=1 without a
line search, 20 iterations a step) the two trajectories separate visibly after a few steps, as two runs of torch
on different BLAS builds would.
"""
import copy
import importlib
import re

import numpy as np
import pytest
import torch

import seqlab
import seqlab.functional as F
from seqlab import backend, nn, optim
from optim_pairs import make_batches, mlp_pair, seqlab_step, torch_step

# ---- problems: Rosenbrock, least squares, logistic regression --------------------------------------------


def rosenbrock(x):
    """(1 − x₀)² + 100 (x₁ − x₀²)², minimum 0 at (1, 1); the same expression on either library's tensors."""
    return (1 - x[0]) ** 2 + 100 * (x[1] - x[0] ** 2) ** 2


def _data(n=32, d=4, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, d))
    y = x @ rng.standard_normal((d, 1)) + 0.3 * rng.standard_normal((n, 1))
    labels = (x[:, :1] - 0.5 * x[:, 1:2] + 0.5 * rng.standard_normal((n, 1)) > 0).astype(np.float64)
    return x, y, labels


def _linear_models(dtype=torch.float64):
    torch.manual_seed(0)
    t = torch.nn.Linear(4, 1).to(dtype)
    s = nn.Linear(4, 1)
    s.to(dtype=np.float64 if dtype == torch.float64 else np.float32)
    s.load_state_dict(t.state_dict())
    return s, t


def _closures(problem: str, s_model, t_model, s_opt, t_opt):
    """The closure each library's step calls: zero the gradients, compute the loss, backward, return it."""
    x, y, labels = _data()
    dtype = next(iter(t_model.parameters())).dtype
    sx, tx = seqlab.tensor(x, dtype=np.float64 if dtype == torch.float64 else np.float32), torch.from_numpy(x).to(dtype)
    if problem == "least_squares":
        s_target, t_target = seqlab.tensor(y, dtype=sx.dtype), torch.from_numpy(y).to(dtype)
        s_loss, t_loss = F.mse_loss, torch.nn.functional.mse_loss
    else:
        s_target, t_target = seqlab.tensor(labels, dtype=sx.dtype), torch.from_numpy(labels).to(dtype)
        s_loss, t_loss = F.binary_cross_entropy_with_logits, torch.nn.functional.binary_cross_entropy_with_logits

    def s_closure():
        s_opt.zero_grad()
        loss = s_loss(s_model(sx), s_target)
        loss.backward()
        return loss

    def t_closure():
        t_opt.zero_grad()
        loss = t_loss(t_model(tx), t_target)
        loss.backward()
        return loss

    return s_closure, t_closure


def _rosenbrock_setup(x0, dtype=np.float64, **kw):
    sp = nn.Parameter(np.array(x0, dtype=dtype))
    tp = torch.nn.Parameter(torch.tensor(np.array(x0, dtype=dtype)))
    s_opt, t_opt = optim.LBFGS([sp], **kw), torch.optim.LBFGS([tp], **kw)

    def s_closure():
        s_opt.zero_grad()
        loss = rosenbrock(sp)
        loss.backward()
        return loss

    def t_closure():
        t_opt.zero_grad()
        loss = rosenbrock(tp)
        loss.backward()
        return loss

    return sp, tp, s_opt, t_opt, s_closure, t_closure


def _params(model):
    return [p.numpy() for p in model.parameters()]


def _torch_params(model):
    return [p.detach().numpy() for p in model.parameters()]


# ---- LBFGS: trajectories ---------------------------------------------------------------------------------

ROSENBROCK = [
    ((-1.5, 2.0), dict(line_search_fn="strong_wolfe")),
    ((-1.2, 1.0), dict(line_search_fn="strong_wolfe")),
    ((2.0, -1.0), dict(line_search_fn="strong_wolfe", history_size=3, max_iter=5)),
    ((0.0, 0.0), dict(line_search_fn="strong_wolfe", history_size=3, max_iter=5, max_eval=6)),
    ((-1.5, 2.0), dict(lr=0.5, max_iter=5)),
    ((-1.5, 2.0), dict(lr=0.1, max_iter=5)),
    ((-1.2, 1.0), dict(lr=0.02, max_iter=10, history_size=4)),  # the history wraps
]


@pytest.mark.parametrize("x0, kw", ROSENBROCK, ids=[f"{x0}-{kw}" for x0, kw in ROSENBROCK])
def test_lbfgs_on_rosenbrock_follows_torch_after_every_step(x0, kw):
    sp, tp, s_opt, t_opt, s_closure, t_closure = _rosenbrock_setup(x0, **kw)
    for i in range(8):
        s_loss, t_loss = s_opt.step(s_closure), t_opt.step(t_closure)
        assert s_loss.item() == pytest.approx(t_loss.item(), rel=1e-10, abs=1e-14), f"step {i + 1}"
        np.testing.assert_allclose(sp.numpy(), tp.detach().numpy(), rtol=1e-10, atol=1e-13,
                                   err_msg=f"after step {i + 1}")
        s_state, t_state = s_opt.state[sp], t_opt.state[tp]
        assert (s_state["func_evals"], s_state["n_iter"]) == (t_state["func_evals"], t_state["n_iter"])
    if kw.get("line_search_fn") and kw.get("max_iter", 20) == 20:
        np.testing.assert_allclose(sp.numpy(), [1.0, 1.0], atol=1e-4)  # and it found the minimum


LINEAR = [("least_squares", dict()), ("least_squares", dict(line_search_fn="strong_wolfe")),
          ("least_squares", dict(lr=0.1, max_iter=4, history_size=2)),
          ("logistic", dict()), ("logistic", dict(line_search_fn="strong_wolfe", max_iter=6)),
          ("logistic", dict(lr=0.5, max_iter=3, tolerance_change=1e-6)),
          ("logistic", dict(line_search_fn="strong_wolfe", lr=0.01, max_eval=8)),  # the search extrapolates
          ("logistic", dict(lr=1e-3, tolerance_change=1e-3))]  # stops on small moves and small loss changes


@pytest.mark.parametrize("problem, kw", LINEAR, ids=[f"{p}-{kw}" for p, kw in LINEAR])
def test_lbfgs_on_linear_models_follows_torch_after_every_step(problem, kw):
    s, t = _linear_models()
    s_opt, t_opt = optim.LBFGS(s.parameters(), **kw), torch.optim.LBFGS(t.parameters(), **kw)
    s_closure, t_closure = _closures(problem, s, t, s_opt, t_opt)
    for i in range(5):
        s_loss, t_loss = s_opt.step(s_closure), t_opt.step(t_closure)
        assert s_loss.item() == pytest.approx(t_loss.item(), rel=1e-10), f"step {i + 1}"
        for a, b in zip(_params(s), _torch_params(t)):
            np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12, err_msg=f"after step {i + 1}")
    first = next(iter(s.parameters()))
    assert s_opt.state[first]["func_evals"] == t_opt.state[t.weight]["func_evals"]
    assert s_opt.state[first]["n_iter"] == t_opt.state[t.weight]["n_iter"]


def test_lbfgs_state_is_torchs():
    """The same keys in the same order, under the first parameter; the same values."""
    s, t = _linear_models()
    kw = dict(line_search_fn="strong_wolfe", history_size=3, max_iter=6)
    s_opt, t_opt = optim.LBFGS(s.parameters(), **kw), torch.optim.LBFGS(t.parameters(), **kw)
    s_closure, t_closure = _closures("logistic", s, t, s_opt, t_opt)
    for _ in range(2):
        s_opt.step(s_closure)
        t_opt.step(t_closure)
    ours, theirs = s_opt.state_dict(), t_opt.state_dict()
    assert list(ours["state"]) == list(theirs["state"]) == [0]
    mine, torchs = ours["state"][0], theirs["state"][0]
    assert list(mine) == list(torchs) == ["func_evals", "n_iter", "al", "d", "t", "old_dirs", "old_stps", "ro",
                                          "H_diag", "prev_flat_grad", "prev_loss"]

    def numbers(v):
        if isinstance(v, list):
            return [numbers(x) for x in v]
        return v.detach().numpy() if isinstance(v, torch.Tensor) else v

    for key in mine:
        a, b = numbers(mine[key]), numbers(torchs[key])
        if key in ("func_evals", "n_iter"):
            assert a == b, key
        elif key in ("old_dirs", "old_stps", "ro", "al"):
            assert len(a) == len(b) == 3, key
            for x, y in zip(a, b):
                np.testing.assert_allclose(x, y, rtol=1e-9, atol=1e-13, err_msg=key)
        else:
            np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-13, err_msg=key)
    assert ours["param_groups"] == [{**{k: theirs["param_groups"][0][k] for k in ours["param_groups"][0]},
                                     "params": [0, 1]}]
    assert ours["param_groups"][0]["max_eval"] == 7  # max_iter * 5 // 4, as torch


def test_lbfgs_state_dict_round_trip_continues_identically():
    kw = dict(line_search_fn="strong_wolfe", history_size=4, max_iter=5)
    s1, _ = _linear_models()
    opt1 = optim.LBFGS(s1.parameters(), **kw)
    closure1, _ = _closures("logistic", s1, _linear_models()[1], opt1, None)
    for _ in range(2):
        opt1.step(closure1)
    model_sd = {k: v.copy() for k, v in s1.state_dict().items()}
    opt_sd = opt1.state_dict()
    saved = copy.deepcopy(opt_sd)
    s2, _ = _linear_models()
    s2.load_state_dict(model_sd)
    opt2 = optim.LBFGS(s2.parameters(), lr=0.3)  # the loaded group brings kw's values back
    opt2.load_state_dict(opt_sd)
    closure2, _ = _closures("logistic", s2, _linear_models()[1], opt2, None)
    losses = [(opt1.step(closure1).item(), opt2.step(closure2).item()) for _ in range(3)]
    assert all(a == b for a, b in losses)
    for p1, p2 in zip(s1.parameters(), s2.parameters()):
        np.testing.assert_array_equal(p1.numpy(), p2.numpy())
    assert opt2.param_groups[0]["lr"] == 1 and opt2.param_groups[0]["history_size"] == 4
    for key, v in saved["state"][0].items():  # the state_dict was a snapshot: later steps left it alone
        if isinstance(v, list):
            assert all(np.array_equal(a, b) if a is not None else b is None
                       for a, b in zip(v, opt_sd["state"][0][key])), key
        else:
            assert np.array_equal(v, opt_sd["state"][0][key]), key


def test_a_torch_lbfgs_state_loads_and_steps_on_as_torch():
    kw = dict(line_search_fn="strong_wolfe", history_size=4, max_iter=5)
    s, t = _linear_models()
    t_opt = torch.optim.LBFGS(t.parameters(), **kw)
    s_opt = optim.LBFGS(s.parameters())
    s_closure, t_closure = _closures("least_squares", s, t, s_opt, t_opt)
    t_opt.step(t_closure)
    s.load_state_dict(t.state_dict())
    s_opt.load_state_dict(t_opt.state_dict())
    for _ in range(3):
        assert s_opt.step(s_closure).item() == pytest.approx(t_opt.step(t_closure).item(), rel=1e-10)
    for a, b in zip(_params(s), _torch_params(t)):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


def test_lbfgs_float32_stays_float32():
    s, t = _linear_models(torch.float32)
    s_opt, t_opt = optim.LBFGS(s.parameters()), torch.optim.LBFGS(t.parameters())
    s_closure, t_closure = _closures("least_squares", s, t, s_opt, t_opt)
    for _ in range(3):
        s_opt.step(s_closure)
        t_opt.step(t_closure)
    assert all(p.dtype == np.float32 for p in s.parameters())
    state = s_opt.state[next(iter(s.parameters()))]
    assert state["d"].dtype == state["prev_flat_grad"].dtype == np.float32
    assert all(v.dtype == np.float32 for v in state["old_dirs"] + state["old_stps"])
    for a, b in zip(_params(s), _torch_params(t)):  # torch keeps t, ys, H_diag as float32 tensors: close only
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)


def test_lbfgs_stops_at_once_where_the_gradient_is_below_tolerance_grad():
    sp, tp, s_opt, t_opt, s_closure, t_closure = _rosenbrock_setup((1.0, 1.0), tolerance_grad=1e-7)
    assert s_opt.step(s_closure).item() == t_opt.step(t_closure).item() == 0.0
    assert dict(s_opt.state[sp]) == {"func_evals": 1, "n_iter": 0} == dict(t_opt.state[tp])
    np.testing.assert_array_equal(sp.numpy(), [1.0, 1.0])


def test_lbfgs_runs_the_closure_with_gradients_on():
    sp, _, s_opt, _, s_closure, _ = _rosenbrock_setup((-1.2, 1.0))
    with seqlab.no_grad():
        loss = s_opt.step(s_closure)
    assert loss.item() == pytest.approx(24.2)
    assert s_opt.state[sp]["n_iter"] == 20 and rosenbrock(sp).item() < 24.2


def test_lbfgs_on_the_device_as_on_the_host(cuda):
    kw = dict(line_search_fn="strong_wolfe", max_iter=6)
    host, _ = _linear_models()
    dev, _ = _linear_models()
    dev.to("cuda")
    h_opt, d_opt = optim.LBFGS(host.parameters(), **kw), optim.LBFGS(dev.parameters(), **kw)
    x, y, _ = _data()
    h_closure, _ = _closures("least_squares", host, _linear_models()[1], h_opt, None)

    def d_closure():
        d_opt.zero_grad()
        loss = F.mse_loss(dev(seqlab.tensor(x).to("cuda")), seqlab.tensor(y).to("cuda"))
        loss.backward()
        return loss

    for _ in range(3):
        assert d_opt.step(d_closure).item() == pytest.approx(h_opt.step(h_closure).item(), rel=1e-10)
    for hp, dp in zip(host.parameters(), dev.parameters()):
        assert dp.device == "cuda"
        np.testing.assert_allclose(backend.to_numpy(dp.data), hp.numpy(), rtol=1e-10, atol=1e-12)
    state = d_opt.state[next(iter(dev.parameters()))]
    assert backend.device_of(state["d"]) == backend.device_of(state["old_dirs"][0]) == "cuda"
    d_opt.load_state_dict(d_opt.state_dict())  # and it loads back onto the device
    state = d_opt.state[next(iter(dev.parameters()))]
    assert backend.device_of(state["prev_flat_grad"]) == backend.device_of(state["old_stps"][0]) == "cuda"


# ---- the strong-Wolfe line search, decision for decision ------------------------------------------------

def _line_problems():
    """(f, ∇f) of a few functions of two variables: curved valleys, wiggles, a steep log, a flat quartic."""
    def rosen(x):
        r = x[1] - x[0] ** 2
        return (1 - x[0]) ** 2 + 100 * r ** 2, np.array([-2 * (1 - x[0]) - 400 * x[0] * r, 200 * r])

    def wiggle(x):
        return np.sum(x ** 4 - 3 * x ** 2 + np.sin(5 * x)), 4 * x ** 3 - 6 * x + 5 * np.cos(5 * x)

    def steep(x):
        return np.sum(np.log(1 + 50 * x ** 2)), 100 * x / (1 + 50 * x ** 2)

    def quartic(x):
        return np.sum(1e3 * (x - 0.3) ** 4), 4e3 * (x - 0.3) ** 3

    return [rosen, wiggle, steep, quartic]


def test_strong_wolfe_makes_torchs_decisions(monkeypatch):
    """seqlab's line search against torch's own (torch.optim.lbfgs._strong_wolfe) from 4000 random starts,
    directions, initial steps, evaluation budgets and tolerances, which between them take every branch
    (extrapolation, zoom, the moves away from an end of the interval, running out of evaluations, a too short
    interval). Both sides get torch's dot product and square root, which round differently from NumPy's in
    the last bit; what rounding differences remain (torch divides a float by a 0-d tensor as a reciprocal
    times the float, so its cubic steps can differ from a float division's in the last bit) stay in the last
    bits: the same evaluations, the same number of them, the same step to 1e-12."""
    from types import SimpleNamespace

    from seqlab.optim import line_search

    wolfe = getattr(importlib.import_module("torch.optim.lbfgs"), "_strong_wolfe", None)
    if wolfe is None:
        pytest.skip("this torch has no torch.optim.lbfgs._strong_wolfe")
    monkeypatch.setattr(line_search, "_dot", lambda a, b: torch.from_numpy(a).dot(torch.from_numpy(b)).item())
    monkeypatch.setattr(line_search, "math", SimpleNamespace(sqrt=lambda v: torch.tensor(v, dtype=torch.float64).sqrt().item()))
    rng = np.random.default_rng(1)
    checked = 0
    for k in range(4000):
        fn = _line_problems()[k % 4]
        x = rng.uniform(-2, 2, 2)
        f, g = fn(x)
        d = -g + rng.standard_normal(2) * np.abs(g).max() * rng.uniform(0, 1)
        if g @ d >= 0:
            continue
        t, max_ls, tol = float(10 ** rng.uniform(-5, 2)), int(rng.integers(1, 26)), float(10 ** rng.uniform(-12, 1))

        def ours_at(s, fn=fn, x=x, d=d):
            return fn(x + s * d)

        def torchs_at(_, s, __, fn=fn, x=x, d=d):
            fs, gs = fn(x + float(s) * d)
            return float(fs), torch.from_numpy(gs)

        ours = line_search.strong_wolfe(ours_at, t, d, f, g, line_search._dot(g, d), tolerance_change=tol,
                                        max_ls=max_ls)

        td, tg = torch.from_numpy(d), torch.from_numpy(g)
        f_t, g_t, t_t, evals_t = wolfe(torchs_at, None, t, td, f, tg, tg.dot(td), tolerance_change=tol, max_ls=max_ls)
        assert ours[3] == evals_t, (fn.__name__, k)
        assert ours[2] == pytest.approx(float(t_t), rel=1e-12, abs=1e-300), (fn.__name__, k)
        assert ours[0] == pytest.approx(f_t, rel=1e-10, abs=1e-14), (fn.__name__, k)
        np.testing.assert_allclose(ours[1], g_t.numpy(), rtol=1e-8, atol=1e-12)
        checked += 1
    assert checked > 2500


def test_cubic_minimizer_is_torchs(monkeypatch):
    from types import SimpleNamespace

    from seqlab.optim import line_search

    cubic = getattr(importlib.import_module("torch.optim.lbfgs"), "_cubic_interpolate", None)
    if cubic is None:
        pytest.skip("this torch has no torch.optim.lbfgs._cubic_interpolate")
    monkeypatch.setattr(line_search, "math", SimpleNamespace(sqrt=lambda v: torch.tensor(v, dtype=torch.float64).sqrt().item()))
    rng = np.random.default_rng(0)
    for i in range(400):
        x1, x2, f1, f2, g1, g2 = rng.standard_normal(6)
        bounds = None if i % 2 else (min(x1, x2) - 1, max(x1, x2) + 1)
        ours = line_search.cubic_minimizer(x1, f1, g1, x2, f2, g2, bounds)
        assert ours == float(cubic(x1, f1, torch.tensor(g1), x2, f2, torch.tensor(g2), bounds)), i
    # no real minimizer (d1² < ga·gb): the middle of the bounds
    assert line_search.cubic_minimizer(0.0, 0.0, 2.0, 1.0, 1.0, 2.0) == 0.5


# ---- LBFGS: arguments and errors -------------------------------------------------------------------------

def test_lbfgs_refuses_parameter_groups_as_torch():
    def groups(make):
        return [{"params": [make()]}, {"params": [make()], "lr": 0.1}]

    with pytest.raises(ValueError) as theirs:
        torch.optim.LBFGS(groups(lambda: torch.nn.Parameter(torch.ones(2))))
    with pytest.raises(ValueError, match=re.escape(str(theirs.value))):
        optim.LBFGS(groups(lambda: nn.Parameter(np.ones(2))))
    opt = optim.LBFGS([nn.Parameter(np.ones(2))])
    opt.add_param_group({"params": [nn.Parameter(np.ones(2))]})
    with pytest.raises(ValueError, match=re.escape(str(theirs.value))):
        opt.step(lambda: 0.0)


def test_lbfgs_needs_a_closure():
    p = nn.Parameter(np.ones(2))
    opt = optim.LBFGS([p])
    with pytest.raises(TypeError) as theirs:
        torch.optim.LBFGS([torch.nn.Parameter(torch.ones(2))]).step()
    with pytest.raises(TypeError, match=re.escape(str(theirs.value))):
        opt.step()
    with pytest.raises(TypeError, match="needs a closure"):
        opt.step(None)
    assert not opt.state


def test_lbfgs_argument_errors_as_torch():
    with pytest.raises(ValueError, match=r"^Invalid learning rate: -1$"):
        optim.LBFGS([nn.Parameter(np.ones(2))], lr=-1)
    _, _, s_opt, t_opt, s_closure, t_closure = _rosenbrock_setup((-1.2, 1.0), line_search_fn="backtracking")
    with pytest.raises(RuntimeError) as theirs:
        t_opt.step(t_closure)
    with pytest.raises(RuntimeError, match=re.escape(str(theirs.value))):
        s_opt.step(s_closure)


# ---- Rprop ------------------------------------------------------------------------------------------------

RPROP = [dict(), dict(lr=0.05), dict(lr=0.02, etas=(0.3, 1.5)), dict(lr=0.01, step_sizes=(5e-3, 0.03)),
         dict(lr=0.1, etas=(0.7, 1.1), step_sizes=(1e-4, 0.2)), dict(lr=0.01, maximize=True),
         dict(lr=0.03, etas=(0.4, 2.0), step_sizes=(0, 0.05), maximize=True)]
RPROP_IDS = [f"{kw}" for kw in RPROP]


@pytest.mark.parametrize("kw", RPROP, ids=RPROP_IDS)
def test_rprop_float64_steps_equal_torch_after_every_step(kw):
    s, t = mlp_pair()
    s_opt, t_opt = optim.Rprop(s.parameters(), **kw), torch.optim.Rprop(t.parameters(), **kw)
    before = s[0].weight.numpy().copy()
    for i, (x, y) in enumerate(make_batches(10)):
        seqlab_step(s, s_opt, x, y)
        torch_step(t, t_opt, x, y)
        for a, b in zip(_params(s), _torch_params(t)):
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14, err_msg=f"after step {i + 1}")
    assert np.abs(s[0].weight.numpy() - before).max() > 1e-3


@pytest.mark.parametrize("kw", RPROP, ids=RPROP_IDS)
def test_rprop_float32_steps_equal_torch_and_stay_float32(kw):
    s, t = mlp_pair(torch.float32)
    s_opt, t_opt = optim.Rprop(s.parameters(), **kw), torch.optim.Rprop(t.parameters(), **kw)
    for i, (x, y) in enumerate(make_batches(10)):
        seqlab_step(s, s_opt, x, y)
        torch_step(t, t_opt, x, y)
        for a, b in zip(_params(s), _torch_params(t)):
            np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6, err_msg=f"after step {i + 1}")
    assert all(p.dtype == np.float32 for p in s.parameters())
    assert all(v.dtype == np.float32 for st in s_opt.state.values() for v in st.values() if hasattr(v, "dtype"))


@pytest.mark.parametrize("kw", RPROP, ids=RPROP_IDS)
def test_rprop_update_rule_is_torchs_bit_for_bit(kw):
    """The optimizer alone, the same gradients handed to both (with exact zeros and sign flips); a parameter
    without a gradient for three steps is left alone and gets its state (Δ₀ = lr) at its first gradient."""
    rng = np.random.default_rng(2)
    w0, b0 = rng.standard_normal((4, 3)), rng.standard_normal(3)
    sw, sb = nn.Parameter(w0.copy()), nn.Parameter(b0.copy())
    tw, tb = torch.nn.Parameter(torch.tensor(w0)), torch.nn.Parameter(torch.tensor(b0))
    s_opt, t_opt = optim.Rprop([sw, sb], **kw), torch.optim.Rprop([tw, tb], **kw)
    for i in range(12):
        gw, gb = rng.standard_normal((4, 3)), rng.standard_normal(3)
        gw[rng.random((4, 3)) < 0.2] = 0.0
        if i % 3 == 2:
            gw[:2] = 1.0 + 0 * gw[:2]  # a run of the same sign: step sizes grow to their maximum
        sw.grad, tw.grad = gw.copy(), torch.tensor(gw)
        sb.grad, tb.grad = (None, None) if i < 3 else (gb.copy(), torch.tensor(gb))
        s_opt.step()
        t_opt.step()
        np.testing.assert_array_equal(sw.numpy(), tw.detach().numpy())
        np.testing.assert_array_equal(sb.numpy(), tb.detach().numpy())
        if i == 2:
            assert sb not in s_opt.state and np.array_equal(sb.numpy(), b0)
    ours, theirs = s_opt.state_dict(), t_opt.state_dict()
    for i in (0, 1):
        assert list(ours["state"][i]) == list(theirs["state"][i]) == ["step", "prev", "step_size"]
        assert ours["state"][i]["step"] == float(theirs["state"][i]["step"]) == (12 if i == 0 else 9)
        for key in ("prev", "step_size"):
            np.testing.assert_array_equal(ours["state"][i][key], theirs["state"][i][key].numpy())
    mine, torchs = ours["param_groups"][0], theirs["param_groups"][0]
    assert set(mine) <= set(torchs)  # torch's groups also name foreach, capturable, differentiable
    assert mine == {k: torchs[k] for k in mine}


def test_rprop_state_dict_round_trip_continues_identically():
    kw = dict(lr=0.02, etas=(0.4, 1.3), step_sizes=(1e-4, 0.1))
    batches = make_batches(10)
    s1, _ = mlp_pair()
    opt1 = optim.Rprop(s1.parameters(), **kw)
    for x, y in batches[:5]:
        seqlab_step(s1, opt1, x, y)
    model_sd = {k: v.copy() for k, v in s1.state_dict().items()}
    opt_sd = opt1.state_dict()
    saved = copy.deepcopy(opt_sd)
    s2, _ = mlp_pair()
    s2.load_state_dict(model_sd)
    opt2 = optim.Rprop(s2.parameters(), lr=0.5)  # the loaded groups bring kw's values back
    opt2.load_state_dict(opt_sd)
    for model, opt in ((s1, opt1), (s2, opt2)):
        for x, y in batches[5:]:
            seqlab_step(model, opt, x, y)
    for p1, p2 in zip(s1.parameters(), s2.parameters()):
        np.testing.assert_array_equal(p1.numpy(), p2.numpy())
    for i, st in saved["state"].items():
        for k, v in st.items():
            assert np.array_equal(v, opt_sd["state"][i][k]), (i, k)
    assert opt1.state_dict()["state"][0]["step"] == 10


def test_a_torch_rprop_state_loads_and_steps_on_as_torch():
    kw = dict(lr=0.02, etas=(0.4, 1.3), step_sizes=(1e-4, 0.1))
    batches = make_batches(10)
    s, t = mlp_pair()
    t_opt = torch.optim.Rprop(t.parameters(), **kw)
    for x, y in batches[:5]:
        torch_step(t, t_opt, x, y)
    s.load_state_dict(t.state_dict())
    s_opt = optim.Rprop(s.parameters())
    s_opt.load_state_dict(t_opt.state_dict())
    for x, y in batches[5:]:
        torch_step(t, t_opt, x, y)
        seqlab_step(s, s_opt, x, y)
    for a, b in zip(_params(s), _torch_params(t)):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)


def test_rprop_step_with_a_closure_returns_its_loss():
    s, t = _linear_models()
    s_opt, t_opt = optim.Rprop(s.parameters(), lr=0.05), torch.optim.Rprop(t.parameters(), lr=0.05)
    s_closure, t_closure = _closures("least_squares", s, t, s_opt, t_opt)
    for _ in range(5):
        assert s_opt.step(s_closure).item() == pytest.approx(t_opt.step(t_closure).item(), rel=1e-12)
    for a, b in zip(_params(s), _torch_params(t)):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)


def test_rprop_maximize_ascends_what_minimizing_descends():
    a, b = nn.Parameter(np.array([1.0, -2.0])), nn.Parameter(np.array([1.0, -2.0]))
    up, down = optim.Rprop([a], lr=0.1, maximize=True), optim.Rprop([b], lr=0.1)
    for _ in range(8):
        a.grad = -2 * a.numpy()   # f = −|θ|², maximized at 0
        b.grad = 2 * b.numpy()    # −f = |θ|²
        up.step()
        down.step()
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert np.abs(a.numpy()).sum() < 1.0


def test_rprop_on_the_device_as_on_the_host(cuda):
    kw = dict(lr=0.02, etas=(0.4, 1.3), step_sizes=(1e-4, 0.1))
    host, _ = mlp_pair()
    dev, _ = mlp_pair()
    dev.to("cuda")
    h_opt, d_opt = optim.Rprop(host.parameters(), **kw), optim.Rprop(dev.parameters(), **kw)
    for x, y in make_batches(6):
        seqlab_step(host, h_opt, x, y)
        d_opt.zero_grad()
        F.mse_loss(dev(seqlab.tensor(x).to("cuda")), seqlab.tensor(y).to("cuda")).backward()
        d_opt.step()
    for hp, dp in zip(host.parameters(), dev.parameters()):
        assert dp.device == "cuda"
        np.testing.assert_allclose(backend.to_numpy(dp.data), hp.numpy(), rtol=1e-10, atol=1e-12)
    assert all(backend.device_of(v) == "cuda" for st in d_opt.state.values() for v in st.values()
               if hasattr(v, "shape"))


BAD_RPROP = [dict(lr=-1), dict(etas=(1.0, 1.2)), dict(etas=(0.5, 1.0)), dict(etas=(0, 2)), dict(etas=(1.2, 0.5)),
             dict(lr=float("nan"))]


@pytest.mark.parametrize("kw", BAD_RPROP, ids=[f"{kw}" for kw in BAD_RPROP])
def test_rprop_bad_hyper_parameters_raise_torchs_value_error(kw):
    with pytest.raises(ValueError) as theirs:
        torch.optim.Rprop([torch.nn.Parameter(torch.ones(2))], **kw)
    with pytest.raises(ValueError, match=re.escape(str(theirs.value))):
        optim.Rprop([nn.Parameter(np.ones(2))], **kw)


def test_rprop_step_sizes_that_torch_would_misuse_are_refused():
    """torch checks no step_sizes: a pair of another length fails at its first step, and min > max pins
    every step size to max. seqlab refuses both in the constructor."""
    p = nn.Parameter(np.ones(2))
    with pytest.raises(ValueError, match=r"Invalid step_sizes: min 50 is above max 1e-06"):
        optim.Rprop([p], step_sizes=(50, 1e-6))
    with pytest.raises(ValueError, match="step_sizes must be a pair"):
        optim.Rprop([p], step_sizes=(1e-6,))
    with pytest.raises(ValueError, match="etas must be a pair"):
        optim.Rprop([p], etas=0.5)


def test_rprop_implementation_flags_are_accepted_and_differentiable_refused():
    s1, _ = mlp_pair()
    s2, _ = mlp_pair()
    plain, flagged = optim.Rprop(s1.parameters()), optim.Rprop(s2.parameters(), foreach=True, capturable=False)
    for x, y in make_batches(3):
        seqlab_step(s1, plain, x, y)
        seqlab_step(s2, flagged, x, y)
    for p1, p2 in zip(s1.parameters(), s2.parameters()):
        np.testing.assert_array_equal(p1.numpy(), p2.numpy())
    with pytest.raises(ValueError, match="differentiable=True is not supported"):
        optim.Rprop(s1.parameters(), differentiable=True)
    with pytest.raises(TypeError):
        optim.Rprop(s1.parameters(), 0.01, (0.5, 1.2), (1e-6, 50), False)  # the flags are keyword-only, as torch
