"""RMSprop, Adagrad, Adadelta, Adamax, NAdam, RAdam and ASGD against torch.optim, step for step; and
nn.utils.parameters_to_vector / vector_to_parameters against torch.nn.utils.

torch keeps a few scalar states (NAdam's mu_product, ASGD's eta and mu) as tensors of its default dtype,
float32, where seqlab keeps Python floats; the float64 comparisons therefore run torch at
torch.set_default_dtype(torch.float64), so both sides compute those scalars in double precision.
"""
import copy
import re
from contextlib import contextmanager

import numpy as np
import pytest
import torch

import seqlab
import seqlab.functional as F
from seqlab import backend, nn, optim
from seqlab.nn.utils import parameters_to_vector, vector_to_parameters
from optim_pairs import make_batches, mlp_pair, seqlab_step, torch_step

STEPS = 10

CASES = [
    ("RMSprop", dict(lr=0.01)),
    ("RMSprop", dict(lr=0.01, momentum=0.9)),
    ("RMSprop", dict(lr=0.01, centered=True)),
    ("RMSprop", dict(lr=0.01, alpha=0.9, centered=True, momentum=0.5, weight_decay=0.1)),
    ("RMSprop", dict(lr=0.01, alpha=0.3, centered=True, eps=1e-4)),  # lerp weight ≥ 0.5: torch's other formula
    ("RMSprop", dict(lr=0.01, momentum=0.5, maximize=True)),
    ("Adagrad", dict(lr=0.1)),
    ("Adagrad", dict(lr=0.1, lr_decay=0.1)),
    ("Adagrad", dict(lr=0.1, weight_decay=0.1, initial_accumulator_value=0.5)),
    ("Adagrad", dict(lr=0.1, eps=1e-3, lr_decay=0.05, maximize=True)),
    ("Adadelta", dict()),
    ("Adadelta", dict(lr=0.5, rho=0.5, weight_decay=0.1)),
    ("Adadelta", dict(rho=0.95, eps=1e-4, maximize=True)),
    ("Adamax", dict()),
    ("Adamax", dict(lr=0.01, betas=(0.5, 0.9), weight_decay=0.1)),
    ("Adamax", dict(lr=0.01, eps=1e-3, maximize=True)),
    ("NAdam", dict(lr=0.01)),
    ("NAdam", dict(lr=0.01, weight_decay=0.1)),
    ("NAdam", dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True)),
    ("NAdam", dict(lr=0.01, betas=(0.8, 0.99), momentum_decay=0.1, maximize=True)),
    ("RAdam", dict(lr=0.01)),  # steps 1-5 are momentum steps, 6-10 rectified ones
    ("RAdam", dict(lr=0.01, weight_decay=0.1)),
    ("RAdam", dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True)),
    ("RAdam", dict(lr=0.01, betas=(0.5, 0.99), eps=1e-4, maximize=True)),
    ("ASGD", dict(lr=0.05)),
    ("ASGD", dict(lr=0.05, lambd=1e-2, alpha=0.5, t0=3, weight_decay=0.1)),  # averaging from step 4
    ("ASGD", dict(lr=0.05, t0=0, maximize=True)),
]
IDS = [f"{name}-{'-'.join(f'{k}={v}' for k, v in kw.items()) or 'defaults'}" for name, kw in CASES]
NAMES = sorted({name for name, _ in CASES})


@contextmanager
def torch_scalars(dtype):
    """torch's default dtype, which is also that of its optimizers' scalar states, for the block."""
    old = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        yield
    finally:
        torch.set_default_dtype(old)


def _assert_same_params(s_model, t_model, rtol, atol, msg=""):
    for (n, sp), (_, tp) in zip(s_model.named_parameters(), t_model.named_parameters()):
        np.testing.assert_allclose(sp.numpy(), tp.detach().numpy(), rtol=rtol, atol=atol, err_msg=f"{n} {msg}")


def _assert_same_state(ours: dict, theirs: dict, rtol=1e-12):
    """One optimizer's state_dict()['state'] against torch's: the same parameters, the same keys in the same
    order, the same values (torch's 0-d step / mu_product / eta / mu tensors as numbers)."""
    assert list(ours) == list(theirs)
    for i in ours:
        assert list(ours[i]) == list(theirs[i]), i
        for key, v in ours[i].items():
            t = theirs[i][key].detach().numpy()
            if key == "step":
                assert type(v) is int and v == float(t), (i, key)
            else:
                np.testing.assert_allclose(v, t, rtol=rtol, atol=1e-15, err_msg=f"{i} {key}")


# ---- training a small model, step for step -------------------------------------------------------------

@pytest.mark.parametrize("name, kw", CASES, ids=IDS)
def test_float64_steps_equal_torch_after_every_step(name, kw):
    s, t = mlp_pair()
    with torch_scalars(torch.float64):
        s_opt, t_opt = getattr(optim, name)(s.parameters(), **kw), getattr(torch.optim, name)(t.parameters(), **kw)
        before = s[0].weight.numpy().copy()
        for i, (x, y) in enumerate(make_batches(STEPS)):
            seqlab_step(s, s_opt, x, y)
            torch_step(t, t_opt, x, y)
            _assert_same_params(s, t, rtol=1e-11, atol=1e-14, msg=f"after step {i + 1}")
    assert np.abs(s[0].weight.numpy() - before).max() > 1e-3  # it did move


@pytest.mark.parametrize("name, kw", CASES, ids=IDS)
def test_float32_steps_equal_torch_after_every_step(name, kw):
    s, t = mlp_pair(torch.float32)
    s_opt, t_opt = getattr(optim, name)(s.parameters(), **kw), getattr(torch.optim, name)(t.parameters(), **kw)
    for i, (x, y) in enumerate(make_batches(STEPS)):
        seqlab_step(s, s_opt, x, y)
        torch_step(t, t_opt, x, y)
        _assert_same_params(s, t, rtol=1e-6, atol=1e-6, msg=f"after step {i + 1}")
    assert all(p.dtype == np.float32 for p in s.parameters())
    assert all(v.dtype == np.float32 for st in s_opt.state.values() for v in st.values() if hasattr(v, "dtype"))


@pytest.mark.parametrize("name, kw", CASES, ids=IDS)
def test_update_rule_is_torchs_to_the_last_bits(name, kw):
    """The optimizer alone: the same gradients handed to both, float64; a parameter without a gradient at
    some steps is left alone and gets its state only at its first gradient, as in torch."""
    rng = np.random.default_rng(2)
    w0, b0 = rng.standard_normal((4, 3)), rng.standard_normal(3)
    sw, sb = nn.Parameter(w0.copy()), nn.Parameter(b0.copy())
    tw, tb = torch.nn.Parameter(torch.tensor(w0)), torch.nn.Parameter(torch.tensor(b0))
    with torch_scalars(torch.float64):
        s_opt, t_opt = getattr(optim, name)([sw, sb], **kw), getattr(torch.optim, name)([tw, tb], **kw)
        for i in range(STEPS):
            gw, gb = rng.standard_normal((4, 3)), rng.standard_normal(3)
            sw.grad, tw.grad = gw.copy(), torch.tensor(gw)
            sb.grad, tb.grad = (None, None) if i < 3 else (gb.copy(), torch.tensor(gb))
            s_opt.step()
            t_opt.step()
            np.testing.assert_allclose(sw.numpy(), tw.detach().numpy(), rtol=1e-13, atol=1e-15)
            np.testing.assert_allclose(sb.numpy(), tb.detach().numpy(), rtol=1e-13, atol=1e-15)
            if i == 2 and name != "Adagrad":  # Adagrad makes every state in its constructor
                assert sb not in s_opt.state and np.array_equal(sb.numpy(), b0)
        _assert_same_state(s_opt.state_dict()["state"], t_opt.state_dict()["state"])


# ---- state_dict ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("name, kw", CASES, ids=IDS)
def test_state_dict_has_torchs_keys_and_values(name, kw):
    s, t = mlp_pair()
    with torch_scalars(torch.float64):
        s_opt, t_opt = getattr(optim, name)(s.parameters(), **kw), getattr(torch.optim, name)(t.parameters(), **kw)
        for x, y in make_batches(4):
            seqlab_step(s, s_opt, x, y)
            torch_step(t, t_opt, x, y)
        ours, theirs = s_opt.state_dict(), t_opt.state_dict()
    _assert_same_state(ours["state"], theirs["state"], rtol=1e-10)
    assert len(ours["param_groups"]) == len(theirs["param_groups"]) == 1
    mine, torchs = ours["param_groups"][0], theirs["param_groups"][0]
    assert set(mine) <= set(torchs)  # torch's groups also name foreach, capturable, differentiable, fused
    assert {k: mine[k] for k in mine} == {k: torchs[k] for k in mine}


EXPECTED_KEYS = {
    ("RMSprop", ()): ["step", "square_avg"],
    ("RMSprop", ("momentum",)): ["step", "square_avg", "momentum_buffer"],
    ("RMSprop", ("centered", "momentum")): ["step", "square_avg", "momentum_buffer", "grad_avg"],
    ("Adagrad", ()): ["step", "sum"],
    ("Adadelta", ()): ["step", "square_avg", "acc_delta"],
    ("Adamax", ()): ["step", "exp_avg", "exp_inf"],
    ("NAdam", ()): ["step", "mu_product", "exp_avg", "exp_avg_sq"],
    ("RAdam", ()): ["step", "exp_avg", "exp_avg_sq"],
    ("ASGD", ()): ["step", "eta", "mu", "ax"],
}


@pytest.mark.parametrize("name, flags", list(EXPECTED_KEYS))
def test_state_names_are_torchs(name, flags):
    """Written out, so a renamed state shows here even if torch renamed it too."""
    p = nn.Parameter(np.ones(3))
    opt = getattr(optim, name)([p], **{f: (0.9 if f == "momentum" else True) for f in flags})
    p.grad = np.full(3, 0.5)
    opt.step()
    assert list(opt.state[p]) == EXPECTED_KEYS[name, flags]
    assert opt.state[p]["step"] == 1


@pytest.mark.parametrize("name, kw", [c for c in CASES if not c[1].get("maximize")],
                         ids=[i for i, c in zip(IDS, CASES) if not c[1].get("maximize")])
def test_state_dict_round_trip_continues_identically(name, kw):
    batches = make_batches(STEPS)
    s1, _ = mlp_pair()
    opt1 = getattr(optim, name)(s1.parameters(), **kw)
    for x, y in batches[:5]:
        seqlab_step(s1, opt1, x, y)
    model_sd = {k: v.copy() for k, v in s1.state_dict().items()}
    opt_sd = opt1.state_dict()
    saved = copy.deepcopy(opt_sd)
    s2, _ = mlp_pair()
    s2.load_state_dict(model_sd)
    opt2 = getattr(optim, name)(s2.parameters(), lr=0.5)  # the loaded groups bring back kw's values
    opt2.load_state_dict(opt_sd)
    for model, opt in ((s1, opt1), (s2, opt2)):
        for x, y in batches[5:]:
            seqlab_step(model, opt, x, y)
    for p1, p2 in zip(s1.parameters(), s2.parameters()):
        np.testing.assert_array_equal(p1.numpy(), p2.numpy())
    for i, st in saved["state"].items():  # the state_dict was a snapshot: later steps left it alone
        for k, v in st.items():
            assert np.array_equal(v, opt_sd["state"][i][k]), (i, k)
    assert opt1.state_dict()["state"][0]["step"] == STEPS


@pytest.mark.parametrize("name, kw", CASES, ids=IDS)
def test_torch_state_dict_loads_and_steps_on_as_torch(name, kw):
    """A state saved by torch.optim (0-d tensors for step, mu_product, eta, mu) loads into seqlab's optimizer;
    both go on alike."""
    batches = make_batches(STEPS)
    s, t = mlp_pair()
    with torch_scalars(torch.float64):
        t_opt = getattr(torch.optim, name)(t.parameters(), **kw)
        for x, y in batches[:5]:
            torch_step(t, t_opt, x, y)
        s.load_state_dict(t.state_dict())
        s_opt = getattr(optim, name)(s.parameters())  # defaults; the groups come from torch's state
        s_opt.load_state_dict(t_opt.state_dict())
        for x, y in batches[5:]:
            torch_step(t, t_opt, x, y)
            seqlab_step(s, s_opt, x, y)
        _assert_same_params(s, t, rtol=1e-11, atol=1e-14)


@pytest.mark.parametrize("name", NAMES)
def test_param_groups_with_different_lrs(name):
    s, t = mlp_pair()
    lr = {"Adadelta": 1.0, "Adagrad": 0.1}.get(name, 0.01)

    def groups(model):
        params = list(model.parameters())
        return [{"params": params[:2]}, {"params": params[2:], "lr": lr * 3, "weight_decay": 0.05}]

    with torch_scalars(torch.float64):
        s_opt, t_opt = getattr(optim, name)(groups(s), lr=lr), getattr(torch.optim, name)(groups(t), lr=lr)
        for x, y in make_batches(STEPS):
            seqlab_step(s, s_opt, x, y)
            torch_step(t, t_opt, x, y)
        _assert_same_params(s, t, rtol=1e-11, atol=1e-14)
        _assert_same_state(s_opt.state_dict()["state"], t_opt.state_dict()["state"], rtol=1e-10)
    assert [g["lr"] for g in s_opt.param_groups] == [lr, lr * 3]
    assert s_opt.state_dict()["param_groups"][1]["params"] == [2, 3]


@pytest.mark.parametrize("name", NAMES)
def test_a_scheduler_drives_them_as_torch(name):
    s, t = mlp_pair()
    with torch_scalars(torch.float64):
        s_opt, t_opt = getattr(optim, name)(s.parameters()), getattr(torch.optim, name)(t.parameters())
        s_sched, t_sched = optim.StepLR(s_opt, 3, gamma=0.3), torch.optim.lr_scheduler.StepLR(t_opt, 3, gamma=0.3)
        for x, y in make_batches(STEPS):
            seqlab_step(s, s_opt, x, y)
            torch_step(t, t_opt, x, y)
            s_sched.step()
            t_sched.step()
        _assert_same_params(s, t, rtol=1e-11, atol=1e-14)
    assert s_opt.param_groups[0]["lr"] == pytest.approx(t_opt.param_groups[0]["lr"], rel=1e-15)


@pytest.mark.parametrize("name", NAMES)
def test_step_with_a_closure_returns_its_loss(name):
    s, t = mlp_pair()
    x, y = make_batches(1)[0]
    s_opt, t_opt = getattr(optim, name)(s.parameters()), getattr(torch.optim, name)(t.parameters())

    def s_closure():
        s_opt.zero_grad()
        loss = F.mse_loss(s(seqlab.tensor(x)), seqlab.tensor(y))
        loss.backward()
        return loss

    def t_closure():
        t_opt.zero_grad()
        loss = torch.nn.functional.mse_loss(t(torch.from_numpy(x)), torch.from_numpy(y))
        loss.backward()
        return loss

    with torch_scalars(torch.float64):
        assert s_opt.step(s_closure).item() == pytest.approx(t_opt.step(t_closure).item(), rel=1e-12)
    _assert_same_params(s, t, rtol=1e-11, atol=1e-14)


# ---- the device (CuPy, or its stand-in) ---------------------------------------------------------------

@pytest.mark.parametrize("name, kw", CASES, ids=IDS)
def test_on_the_device_as_on_the_host(cuda, name, kw):
    host, _ = mlp_pair()
    dev, _ = mlp_pair()
    dev.to("cuda")
    h_opt, d_opt = getattr(optim, name)(host.parameters(), **kw), getattr(optim, name)(dev.parameters(), **kw)
    for x, y in make_batches(6):
        seqlab_step(host, h_opt, x, y)
        d_opt.zero_grad()
        F.mse_loss(dev(seqlab.tensor(x).to("cuda")), seqlab.tensor(y).to("cuda")).backward()
        d_opt.step()
    for (n, hp), dp in zip(host.named_parameters(), dev.parameters()):
        assert dp.device == "cuda"
        np.testing.assert_allclose(backend.to_numpy(dp.data), hp.numpy(), rtol=1e-10, atol=1e-12, err_msg=n)
    for st in d_opt.state.values():
        arrays = [v for v in st.values() if hasattr(v, "shape")]
        assert arrays and all(backend.device_of(v) == "cuda" for v in arrays)
    sd = d_opt.state_dict()  # and it loads back onto the device
    d_opt.load_state_dict(sd)
    assert all(backend.device_of(v) == "cuda" for st in d_opt.state.values() for v in st.values()
               if hasattr(v, "shape"))


# ---- arguments -----------------------------------------------------------------------------------------

BAD = [
    ("RMSprop", dict(lr=-1)), ("RMSprop", dict(eps=-1e-8)), ("RMSprop", dict(momentum=-0.5)),
    ("RMSprop", dict(weight_decay=-1)), ("RMSprop", dict(alpha=-0.1)), ("RMSprop", dict(lr=float("nan"))),
    ("Adagrad", dict(lr=-0.1)), ("Adagrad", dict(lr_decay=-1)), ("Adagrad", dict(weight_decay=-1)),
    ("Adagrad", dict(initial_accumulator_value=-1)), ("Adagrad", dict(eps=-1)),
    ("Adadelta", dict(lr=-1)), ("Adadelta", dict(rho=1.5)), ("Adadelta", dict(rho=-0.1)), ("Adadelta", dict(eps=-1)),
    ("Adadelta", dict(weight_decay=-1)),
    ("Adamax", dict(lr=-1)), ("Adamax", dict(eps=-1)), ("Adamax", dict(betas=(1.0, 0.9))),
    ("Adamax", dict(betas=(0.9, -0.1))), ("Adamax", dict(weight_decay=-1)),
    ("NAdam", dict(lr=-1)), ("NAdam", dict(betas=(0.9, 1.0))), ("NAdam", dict(weight_decay=-1)),
    ("NAdam", dict(momentum_decay=-1)),
    ("RAdam", dict(lr=-1)), ("RAdam", dict(eps=-1)), ("RAdam", dict(betas=(-0.5, 0.9))),
    ("RAdam", dict(weight_decay=-1)),
    ("ASGD", dict(lr=-1)), ("ASGD", dict(weight_decay=-1)),
]


@pytest.mark.parametrize("name, kw", BAD, ids=[f"{n}-{kw}" for n, kw in BAD])
def test_bad_hyper_parameters_raise_torchs_value_error(name, kw):
    with pytest.raises(ValueError) as theirs:
        getattr(torch.optim, name)([torch.nn.Parameter(torch.ones(2))], **kw)
    with pytest.raises(ValueError, match=re.escape(str(theirs.value))):
        getattr(optim, name)([nn.Parameter(np.ones(2))], **kw)
    assert str(theirs.value).startswith("Invalid ")


def test_lr_message_reads_as_torchs():
    with pytest.raises(ValueError, match=r"^Invalid learning rate: -1$"):
        optim.RMSprop([nn.Parameter(np.ones(2))], lr=-1)
    with pytest.raises(ValueError, match=r"^Invalid beta parameter at index 1: 1.5$"):
        optim.NAdam([nn.Parameter(np.ones(2))], betas=(0.9, 1.5))
    with pytest.raises(ValueError, match="betas must be a pair"):
        optim.RAdam([nn.Parameter(np.ones(2))], betas=(0.9, 0.99, 0.999))


@pytest.mark.parametrize("name", NAMES)
def test_implementation_flags_are_accepted_and_differentiable_refused(name):
    flags = {"foreach": True, "capturable": False}
    if name == "Adagrad":
        flags = {"foreach": False, "fused": True}
    s1, _ = mlp_pair()
    s2, _ = mlp_pair()
    plain, flagged = getattr(optim, name)(s1.parameters()), getattr(optim, name)(s2.parameters(), **flags)
    for x, y in make_batches(3):
        seqlab_step(s1, plain, x, y)
        seqlab_step(s2, flagged, x, y)
    for p1, p2 in zip(s1.parameters(), s2.parameters()):
        np.testing.assert_array_equal(p1.numpy(), p2.numpy())
    with pytest.raises(ValueError, match="differentiable=True is not supported"):
        getattr(optim, name)(s1.parameters(), differentiable=True)


def test_maximize_ascends_what_minimizing_descends():
    """maximize=True on f follows minimizing −f exactly (torch negates the gradient first)."""
    for name in NAMES:
        a, b = nn.Parameter(np.array([1.0, -2.0])), nn.Parameter(np.array([1.0, -2.0]))
        up, down = getattr(optim, name)([a], maximize=True), getattr(optim, name)([b])
        for _ in range(5):
            a.grad = -2 * a.numpy()   # f = −|θ|², maximized at 0
            b.grad = 2 * b.numpy()    # −f = |θ|²
            up.step()
            down.step()
        np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=name)
        assert np.abs(a.numpy()).sum() < 3.0, name


def test_adagrad_state_exists_before_the_first_step_as_torchs():
    s, t = mlp_pair()
    s_opt = optim.Adagrad(s.parameters(), initial_accumulator_value=0.25)
    t_opt = torch.optim.Adagrad(t.parameters(), initial_accumulator_value=0.25)
    _assert_same_state(s_opt.state_dict()["state"], t_opt.state_dict()["state"])
    assert float(s_opt.state_dict()["state"][3]["sum"][0]) == 0.25


def test_adagrad_group_added_later_gets_its_state_at_its_first_step():
    s, t = mlp_pair()
    s_params, t_params = list(s.parameters()), list(t.parameters())
    s_opt = optim.Adagrad(s_params[:2], lr=0.1, initial_accumulator_value=0.1)
    t_opt = torch.optim.Adagrad(t_params[:2], lr=0.1, initial_accumulator_value=0.1)
    s_opt.add_param_group({"params": s_params[2:], "lr": 0.05})
    t_opt.add_param_group({"params": t_params[2:], "lr": 0.05})
    assert 2 not in s_opt.state_dict()["state"] and 2 not in t_opt.state_dict()["state"]
    for x, y in make_batches(4):
        seqlab_step(s, s_opt, x, y)
        torch_step(t, t_opt, x, y)
    _assert_same_params(s, t, rtol=1e-11, atol=1e-14)
    _assert_same_state(s_opt.state_dict()["state"], t_opt.state_dict()["state"], rtol=1e-10)


def test_asgd_average_is_the_mean_of_the_iterates_after_t0():
    """With lambd = 0 and t0 = 2, ax after step t is the mean of θ₄ … θₜ: step t averages with the μ made by
    step t − 1, 1/max(1, t − 1 − t0)."""
    p = nn.Parameter(np.array([3.0, -1.0]))
    opt = optim.ASGD([p], lr=0.1, lambd=0.0, t0=2)
    iterates = []
    for _ in range(8):
        p.grad = 2 * p.numpy()
        opt.step()
        iterates.append(p.numpy().copy())
    np.testing.assert_allclose(opt.state[p]["ax"], np.mean(iterates[3:], axis=0), rtol=1e-14)
    assert opt.state[p]["mu"] == pytest.approx(1 / 6) and opt.state[p]["eta"] == 0.1


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_lerp_is_torchs_to_rounding_and_exact_at_weight_one(dtype):
    from seqlab.optim.common import lerp_

    rng = np.random.default_rng(4)
    for w in (0.01, 0.3, 0.5, 0.9, 1.0):
        a, b = rng.standard_normal(500).astype(dtype), rng.standard_normal(500).astype(dtype)
        expected = torch.from_numpy(a.copy()).lerp_(torch.from_numpy(b), w).numpy()
        lerp_(a, b, w)
        assert a.dtype == dtype
        np.testing.assert_allclose(a, expected, rtol=0, atol=4 * np.finfo(dtype).eps, err_msg=str(w))
        if w == 1.0:
            np.testing.assert_array_equal(a, b)


# ---- nn.utils.parameters_to_vector / vector_to_parameters ---------------------------------------------

def test_parameters_to_vector_equals_torchs_and_carries_gradients():
    s, t = mlp_pair()
    sv, tv = parameters_to_vector(s.parameters()), torch.nn.utils.parameters_to_vector(t.parameters())
    assert sv.shape == tuple(tv.shape) == (5 * 8 + 8 + 8 * 3 + 3,)
    np.testing.assert_array_equal(sv.numpy(), tv.detach().numpy())
    weights = np.arange(sv.shape[0], dtype=np.float64)
    (sv * seqlab.tensor(weights)).sum().backward()
    (tv * torch.from_numpy(weights)).sum().backward()
    for (n, sp), (_, tp) in zip(s.named_parameters(), t.named_parameters()):
        np.testing.assert_array_equal(sp.grad, tp.grad.numpy(), err_msg=n)


def test_vector_to_parameters_writes_in_place_as_torch():
    s, t = mlp_pair()
    n = sum(p.numel() for p in s.parameters())
    vec = np.random.default_rng(3).standard_normal(n + 4)  # longer than needed: accepted, as torch
    params = list(s.parameters())
    ids = [id(p.data) for p in params]
    vector_to_parameters(seqlab.tensor(vec, requires_grad=True), params)
    torch.nn.utils.vector_to_parameters(torch.from_numpy(vec), t.parameters())
    _assert_same_params(s, t, rtol=0, atol=0)
    assert [id(p.data) for p in params] == ids  # the same arrays, written in place
    assert all(p.is_leaf and p.requires_grad and p.grad is None for p in params)
    vec[:] = 0  # a copy, not a view of the vector
    assert np.abs(params[0].numpy()).sum() > 0


def test_vector_and_parameters_round_trip_and_keep_the_dtype():
    model = nn.Linear(3, 2)
    model.to(dtype=np.float32)
    v = parameters_to_vector(model.parameters())
    vector_to_parameters(seqlab.tensor(2 * v.numpy().astype(np.float64)), model.parameters())
    np.testing.assert_array_equal(parameters_to_vector(model.parameters()).numpy(), 2 * v.numpy())
    assert model.weight.dtype == np.float32


def test_vector_to_parameters_errors():
    params = [nn.Parameter(np.ones((2, 3))), nn.Parameter(np.ones(2))]
    with pytest.raises(TypeError, match="expected seqlab.Tensor, but got: numpy.ndarray"):
        vector_to_parameters(np.ones(8), params)
    with pytest.raises(TypeError):
        torch.nn.utils.vector_to_parameters(np.ones(8), [torch.nn.Parameter(torch.ones(8))])
    with pytest.raises(ValueError, match="the parameters have 8 entries, the vector only 7"):
        vector_to_parameters(seqlab.tensor(np.zeros(7)), params)
    assert params[0].numpy().sum() == 6  # nothing written
    with pytest.raises(ValueError, match=r"1-D vector, got shape \(2, 4\)"):
        vector_to_parameters(seqlab.tensor(np.zeros((2, 4))), params)


def test_vector_and_parameters_on_the_device(cuda):
    model = nn.Linear(3, 2)
    model.to("cuda")
    v = parameters_to_vector(model.parameters())
    assert v.device == "cuda" and v.shape == (8,)
    vector_to_parameters(seqlab.tensor(np.arange(8.0)), model.parameters())  # a host vector, copied over
    assert model.weight.device == "cuda"
    np.testing.assert_array_equal(backend.to_numpy(model.weight.data), np.arange(6.0).reshape(2, 3))
    other = nn.Parameter(np.ones(2))
    with pytest.raises(TypeError, match="different devices"):
        parameters_to_vector([*model.parameters(), other])
    with pytest.raises(TypeError, match="different devices"):
        vector_to_parameters(v, [*model.parameters(), other])
