"""Optimizers, schedules and clipping (issue 2 §5) against torch.optim, step for step."""
import copy
import math

import numpy as np
import pytest
import torch

import seqlab
import seqlab.functional as F
from seqlab import nn, optim
from optim_pairs import make_batches, mlp_pair, seqlab_step, torch_step

STEPS = 20


def _groups(model, lib_groups: bool, second: dict):
    params = list(model.parameters())
    if not lib_groups:
        return params
    return [{"params": params[:2]}, {"params": params[2:], **second}]


def _train(s_model, t_model, s_opt, t_opt, batches, s_sched=None, t_sched=None, clip=None):
    for x, y in batches:
        s_opt.zero_grad()
        F.mse_loss(s_model(seqlab.tensor(x, dtype=s_model[0].weight.dtype)), y).backward()
        if clip:
            optim.clip_grad_norm_(s_model.parameters(), clip)
        s_opt.step()
        t_opt.zero_grad()
        torch.nn.functional.mse_loss(t_model(torch.from_numpy(x).to(t_model[0].weight.dtype)),
                                     torch.from_numpy(y).to(t_model[0].weight.dtype)).backward()
        if clip:
            torch.nn.utils.clip_grad_norm_(t_model.parameters(), clip)
        t_opt.step()
        if s_sched:
            s_sched.step()
            t_sched.step()


def _assert_same_params(s_model, t_model, rtol=1e-6):
    for (n, sp), (_, tp) in zip(s_model.named_parameters(), t_model.named_parameters()):
        np.testing.assert_allclose(sp.numpy(), tp.detach().numpy(), rtol=rtol, atol=1e-9, err_msg=n)


CASES = [
    ("SGD", dict(lr=0.1), {}),
    ("SGD", dict(lr=0.05, momentum=0.9), {}),
    ("SGD", dict(lr=0.05, momentum=0.9, dampening=0.1), {}),
    ("SGD", dict(lr=0.05, momentum=0.9, nesterov=True, weight_decay=0.01), {"lr": 0.01}),
    ("SGD", dict(lr=0.1, weight_decay=0.1), {"weight_decay": 0.0}),
    ("Adam", dict(lr=0.01), {}),
    ("Adam", dict(lr=0.01, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.05), {"lr": 0.002}),
    ("AdamW", dict(lr=0.01), {}),
    ("AdamW", dict(lr=0.01, weight_decay=0.1), {"weight_decay": 0.0, "lr": 0.03}),
    ("Adam", dict(lr=0.01, amsgrad=True), {}),
    ("AdamW", dict(lr=0.01, weight_decay=0.1, amsgrad=True), {"amsgrad": False}),
]


@pytest.mark.parametrize("name, kw, second", CASES)
@pytest.mark.parametrize("groups", [False, True])
def test_20_steps_equal_torch(name, kw, second, groups):
    s, t = mlp_pair()
    s_opt = getattr(optim, name)(_groups(s, groups, second), **kw)
    t_opt = getattr(torch.optim, name)(_groups(t, groups, second), **kw)
    before = [p.numpy().copy() for p in s.parameters()]
    _train(s, t, s_opt, t_opt, make_batches(STEPS))
    _assert_same_params(s, t)
    assert not np.allclose(before[0], s[0].weight.numpy())  # it did move


@pytest.mark.parametrize("name, kw", [("SGD", dict(lr=0.05, momentum=0.9)), ("AdamW", dict(lr=0.01))])
def test_float32_steps_equal_torch(name, kw):
    s, t = mlp_pair(torch.float32)
    _train(s, t, getattr(optim, name)(s.parameters(), **kw), getattr(torch.optim, name)(t.parameters(), **kw),
           make_batches(STEPS))
    _assert_same_params(s, t, rtol=1e-5)


@pytest.mark.parametrize("name, kw", [("SGD", dict(lr=0.05, momentum=0.9, nesterov=True)), ("Adam", dict(lr=0.01)),
                                      ("AdamW", dict(lr=0.01, weight_decay=0.1))])
def test_state_dict_round_trip_continues_identically(name, kw):
    batches = make_batches(STEPS)
    s1, _ = mlp_pair()
    opt1 = getattr(optim, name)(_groups(s1, True, {"lr": 0.02}), **kw)
    sched1 = optim.LambdaLR(opt1, optim.warmup_linear(5, STEPS))
    for x, y in batches[:10]:
        opt1.zero_grad()
        F.mse_loss(s1(seqlab.tensor(x)), y).backward()
        opt1.step()
        sched1.step()
    model_sd = {k: v.copy() for k, v in s1.state_dict().items()}
    opt_sd = copy.deepcopy(opt1.state_dict())
    sched_sd = sched1.state_dict()
    # a fresh model, optimizer and schedule, restored from the snapshots
    s2, _ = mlp_pair()
    s2.load_state_dict(model_sd)
    opt2 = getattr(optim, name)(_groups(s2, True, {"lr": 0.5}), **kw)
    opt2.load_state_dict(opt_sd)
    sched2 = optim.LambdaLR(opt2, optim.warmup_linear(5, STEPS))
    sched2.load_state_dict(sched_sd)
    assert [g["lr"] for g in opt2.param_groups] == [g["lr"] for g in opt1.param_groups]
    for opt, sched, model in ((opt1, sched1, s1), (opt2, sched2, s2)):
        for x, y in batches[10:]:
            opt.zero_grad()
            F.mse_loss(model(seqlab.tensor(x)), y).backward()
            opt.step()
            sched.step()
    for p1, p2 in zip(s1.parameters(), s2.parameters()):
        np.testing.assert_array_equal(p1.numpy(), p2.numpy())


def test_optimizer_state_dict_is_keyed_by_position_like_torch():
    s, t = mlp_pair()
    s_opt, t_opt = optim.Adam(s.parameters(), lr=0.01), torch.optim.Adam(t.parameters(), lr=0.01)
    _train(s, t, s_opt, t_opt, make_batches(2))
    ss, ts = s_opt.state_dict(), t_opt.state_dict()
    assert sorted(ss["state"]) == sorted(ts["state"])
    assert set(ss["state"][0]) == set(ts["state"][0])
    np.testing.assert_allclose(ss["state"][1]["exp_avg_sq"], ts["state"][1]["exp_avg_sq"].numpy(), rtol=1e-9)
    assert ss["param_groups"][0]["params"] == ts["param_groups"][0]["params"]


def test_load_state_dict_rejects_other_groups():
    s, _ = mlp_pair()
    a = optim.SGD(s.parameters(), lr=0.1)
    b = optim.SGD(_groups(s, True, {}), lr=0.1)
    with pytest.raises(ValueError, match="2 parameter groups.*1"):
        a.load_state_dict(b.state_dict())


@pytest.mark.parametrize("amsgrad", [False, True])
def test_torch_adam_state_loads_and_steps_on_as_torch(amsgrad):
    """A state saved by torch.optim.AdamW (tensors, step a 0-d tensor; amsgrad's running maximum) loads into
    seqlab's; both go on alike."""
    s, t = mlp_pair()
    t_opt = torch.optim.AdamW(t.parameters(), lr=0.01, weight_decay=0.1, amsgrad=amsgrad)
    batches = make_batches(6)
    for x, y in batches[:3]:
        t_opt.zero_grad()
        torch.nn.functional.mse_loss(t(torch.from_numpy(x)), torch.from_numpy(y)).backward()
        t_opt.step()
    s.load_state_dict(t.state_dict())
    s_opt = optim.AdamW(s.parameters(), lr=0.01, weight_decay=0.1, amsgrad=amsgrad)
    s_opt.load_state_dict(t_opt.state_dict())
    assert ("max_exp_avg_sq" in s_opt.state_dict()["state"][0]) == amsgrad
    step = s_opt.state_dict()["state"][0]["step"]
    assert type(step) is int and step == 3
    for x, y in batches[3:]:
        t_opt.zero_grad()
        torch.nn.functional.mse_loss(t(torch.from_numpy(x)), torch.from_numpy(y)).backward()
        t_opt.step()
        s_opt.zero_grad()
        F.mse_loss(s(seqlab.tensor(x)), seqlab.tensor(y)).backward()
        s_opt.step()
    for (name, tp), sp in zip(t.named_parameters(), s.parameters()):
        np.testing.assert_allclose(sp.numpy(), tp.detach().numpy(), rtol=1e-9, atol=1e-12, err_msg=name)


def test_load_state_dict_refuses_state_of_other_shapes_and_keeps_its_own():
    s, _ = mlp_pair()
    opt = optim.Adam(s.parameters(), lr=0.1)
    x, y = make_batches(1)[0]
    F.mse_loss(s(seqlab.tensor(x)), seqlab.tensor(y)).backward()
    opt.step()
    before = opt.state_dict()
    other = nn.Sequential(nn.Linear(5, 4), nn.Tanh(), nn.Linear(4, 3))
    other.to(dtype=np.float64)
    wrong = optim.Adam(other.parameters(), lr=0.1)
    F.mse_loss(other(seqlab.tensor(x)), seqlab.tensor(y)).backward()
    wrong.step()
    with pytest.raises(ValueError, match=r"'exp_avg' of parameter 0 has shape \(4, 5\), the parameter has shape \(8, 5\)"):
        opt.load_state_dict(wrong.state_dict())
    after = opt.state_dict()
    np.testing.assert_array_equal(after["state"][0]["exp_avg"], before["state"][0]["exp_avg"])
    with pytest.raises(ValueError, match="names parameter 9; this optimizer has 4"):
        opt.load_state_dict({"state": {9: {"step": 1}}, "param_groups": before["param_groups"]})


def test_optimizer_argument_errors():
    p = [nn.Parameter(np.ones(2))]
    with pytest.raises(ValueError, match="empty"):
        optim.SGD([], lr=0.1)
    with pytest.raises(ValueError, match="Nesterov"):
        optim.SGD(p, lr=0.1, nesterov=True)
    with pytest.raises(ValueError, match="Adam: lr must be a finite number >= 0, got -1"):
        optim.Adam(p, lr=-1)
    for make in (optim.SGD, optim.Adam, optim.AdamW):  # NaN would turn every weight NaN at the first step
        with pytest.raises(ValueError, match="lr must be a finite number >= 0, got nan"):
            make(p, lr=float("nan"))
    with pytest.raises(ValueError, match="lr must be a finite number >= 0, got None"):
        optim.Adam(p, lr=None)
    with pytest.raises(ValueError, match="weight_decay must be a finite number >= 0, got -0.1"):
        optim.SGD([{"params": p, "weight_decay": -0.1}], lr=0.1)  # a group's own settings too
    with pytest.raises(ValueError, match=r"betas must be two numbers in \[0, 1\), got \(0.9, 1.0\)"):
        optim.Adam(p, betas=(0.9, 1.0))
    with pytest.raises(TypeError, match=r"iterable of Tensors \(e.g. model.parameters\(\)\).*got Linear"):
        optim.Adam(nn.Linear(2, 2), lr=1e-2)  # the module itself, not its parameters
    with pytest.raises(TypeError, match="got an iterable holding Linear"):
        optim.Adam(nn.Sequential(nn.Linear(2, 2)), lr=1e-2)  # a Sequential iterates over its modules
    with pytest.raises(ValueError, match="more than one"):
        optim.SGD([{"params": p}, {"params": p}], lr=0.1)


# ---- schedules ---------------------------------------------------------------------------------------------
SCHEDULES = [
    ("warmup_linear", lambda: optim.warmup_linear(10, 50)),
    ("warmup_cosine", lambda: optim.warmup_cosine(10, 50)),
    ("warmup_cosine_min", lambda: optim.warmup_cosine(5, 40, min_ratio=0.1)),
    ("inverse_sqrt", lambda: optim.inverse_sqrt(512, 8)),
    ("constant", lambda: optim.constant()),
]


@pytest.mark.parametrize("name, make", SCHEDULES)
def test_schedules_equal_torch_lambda_lr(name, make):
    s, t = mlp_pair()
    s_opt = optim.SGD(_groups(s, True, {"lr": 0.5}), lr=0.1)
    t_opt = torch.optim.SGD(_groups(t, True, {"lr": 0.5}), lr=0.1)
    s_sched, t_sched = optim.LambdaLR(s_opt, make()), torch.optim.lr_scheduler.LambdaLR(t_opt, make())
    for _ in range(60):
        assert s_sched.get_last_lr() == pytest.approx(t_sched.get_last_lr(), rel=1e-12, abs=1e-15)
        s_opt.step()
        t_opt.step()
        s_sched.step()
        t_sched.step()


def test_schedules_equal_hugging_face_and_the_paper():
    from transformers.optimization import get_cosine_schedule_with_warmup, get_linear_schedule_with_warmup

    p = torch.nn.Parameter(torch.zeros(1))
    hf_lin = get_linear_schedule_with_warmup(torch.optim.SGD([p], lr=1.0), 10, 50).lr_lambdas[0]
    hf_cos = get_cosine_schedule_with_warmup(torch.optim.SGD([p], lr=1.0), 10, 50).lr_lambdas[0]
    lin, cos, isq = optim.warmup_linear(10, 50), optim.warmup_cosine(10, 50), optim.inverse_sqrt(512, 4000)
    for step in range(0, 51):
        assert lin(step) == pytest.approx(hf_lin(step), abs=1e-15)
        assert cos(step) == pytest.approx(hf_cos(step), abs=1e-12)
    for step in (0, 1, 3999, 4000, 10_000):  # lrate = d^−0.5 · min(n^−0.5, n · warmup^−1.5), n = step + 1
        n = step + 1
        assert isq(step) == pytest.approx(512 ** -0.5 * min(n ** -0.5, n * 4000 ** -1.5))
    assert max(isq(s) for s in range(8000)) == pytest.approx(isq(3999))  # peak at the end of warm-up


def test_lambda_lr_per_group_lambdas():
    s, t = mlp_pair()
    fs = [optim.warmup_linear(3, 10), optim.constant()]
    s_opt = optim.SGD(_groups(s, True, {"lr": 0.5}), lr=0.1)
    t_opt = torch.optim.SGD(_groups(t, True, {"lr": 0.5}), lr=0.1)
    s_sched, t_sched = optim.LambdaLR(s_opt, fs), torch.optim.lr_scheduler.LambdaLR(t_opt, fs)
    for _ in range(5):
        s_opt.step()
        t_opt.step()
        s_sched.step()
        t_sched.step()
    assert s_sched.get_last_lr() == pytest.approx(t_sched.get_last_lr())
    with pytest.raises(ValueError, match="expected 2"):
        optim.LambdaLR(s_opt, [optim.constant()])


def test_lambda_lr_takes_the_groups_lr_when_the_schedule_is_built_like_torch():
    """An lr changed after the optimizer was built (an lr finder, per-group scaling) is the schedule's base lr,
    as torch's initial_lr; a second schedule on the same optimizer reuses the first one's base lrs."""
    s, t = mlp_pair()
    s_opt = optim.SGD(_groups(s, True, {"lr": 0.5}), lr=0.1)
    t_opt = torch.optim.SGD(_groups(t, True, {"lr": 0.5}), lr=0.1)
    assert "initial_lr" not in s_opt.param_groups[0] and "initial_lr" not in t_opt.param_groups[0]
    for opt in (s_opt, t_opt):
        opt.param_groups[0]["lr"], opt.param_groups[1]["lr"] = 0.3, 0.02
    s_sched = optim.LambdaLR(s_opt, optim.warmup_linear(3, 10))
    t_sched = torch.optim.lr_scheduler.LambdaLR(t_opt, optim.warmup_linear(3, 10))
    assert s_sched.base_lrs == t_sched.base_lrs == [0.3, 0.02]
    for _ in range(6):
        s_opt.step()
        t_opt.step()
        s_sched.step()
        t_sched.step()
        assert s_sched.get_last_lr() == pytest.approx(t_sched.get_last_lr(), rel=1e-12)
    assert s_sched.get_last_lr() == pytest.approx([0.3 * 4 / 7, 0.02 * 4 / 7])
    s_again = optim.LambdaLR(s_opt, optim.constant())
    t_again = torch.optim.lr_scheduler.LambdaLR(t_opt, optim.constant())
    assert s_again.base_lrs == t_again.base_lrs == [0.3, 0.02]
    assert s_again.get_last_lr() == pytest.approx(t_again.get_last_lr(), rel=1e-12)


def test_lambda_lr_resume_needs_initial_lr_and_restores_base_lrs_like_torch():
    """last_epoch >= 0 without initial_lr raises KeyError (torch too); load_state_dict restores the base lrs of
    the saved schedule, not the fresh optimizer's lr, and a state saved before base_lrs were kept still loads."""
    p = [nn.Parameter(np.ones(2))]
    with pytest.raises(KeyError, match=r"initial_lr.*param_groups\[0\]"):
        optim.LambdaLR(optim.SGD(p, lr=0.1), optim.constant(), last_epoch=3)
    with pytest.raises(KeyError, match="initial_lr"):
        torch.optim.lr_scheduler.LambdaLR(torch.optim.SGD([torch.zeros(2, requires_grad=True)], lr=0.1),
                                          optim.constant(), last_epoch=3)
    f = optim.warmup_linear(3, 10)
    saved = {}
    for lib, make_opt, make_sched in (("s", lambda: optim.SGD(p, lr=0.1), optim.LambdaLR),
                                      ("t", lambda: torch.optim.SGD([torch.zeros(2, requires_grad=True)], lr=0.1),
                                       torch.optim.lr_scheduler.LambdaLR)):
        opt = make_opt()
        opt.param_groups[0]["lr"] = 0.4
        sched = make_sched(opt, f)
        for _ in range(4):
            opt.step()
            sched.step()
        state = sched.state_dict()
        fresh = make_opt()  # lr 0.1, as a trainer builds it before restoring
        resumed = make_sched(fresh, f)
        resumed.load_state_dict(state)
        resumed.step()
        saved[lib] = (state["base_lrs"], resumed.get_last_lr())
    assert saved["s"][0] == saved["t"][0] == [0.4]
    assert saved["s"][1] == pytest.approx(saved["t"][1], rel=1e-12)
    assert saved["s"][1] == pytest.approx([0.4 * 5 / 7])
    old = optim.SGD(p, lr=0.1)
    old.param_groups[0]["initial_lr"] = 0.4  # an older checkpoint's optimizer state carries initial_lr
    opt = optim.SGD(p, lr=0.1)
    sched = optim.LambdaLR(opt, f)
    opt.load_state_dict(old.state_dict())  # the trainer's order: schedule built, then both states loaded
    sched.load_state_dict({"last_epoch": 5})
    assert sched.base_lrs == [0.4] and sched.get_last_lr() == pytest.approx([0.4 * 5 / 7])


# ---- clipping ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("max_norm, norm_type", [(0.5, 2.0), (100.0, 2.0), (0.3, 1.0), (0.1, math.inf)])
def test_clip_grad_norm_equals_torch(max_norm, norm_type):
    s, t = mlp_pair()
    x, y = make_batches(1)[0]
    F.mse_loss(s(seqlab.tensor(x)), y).backward()
    torch.nn.functional.mse_loss(t(torch.from_numpy(x)), torch.from_numpy(y)).backward()
    ns = optim.clip_grad_norm_(s.parameters(), max_norm, norm_type)
    nt = torch.nn.utils.clip_grad_norm_(t.parameters(), max_norm, norm_type)
    assert ns == pytest.approx(nt.item(), rel=1e-12)
    for sp, tp in zip(s.parameters(), t.parameters()):
        np.testing.assert_allclose(sp.grad, tp.grad.numpy(), rtol=1e-12)


def test_clip_grad_norm_single_tensor_and_value():
    p = nn.Parameter(np.array([3.0, 4.0]))
    p.grad = np.array([3.0, 4.0])
    assert optim.clip_grad_norm_(p, 1.0) == pytest.approx(5.0)
    np.testing.assert_allclose(np.linalg.norm(p.grad), 1.0, rtol=1e-5)
    p.grad = np.array([-3.0, 0.5])
    optim.clip_grad_value_([p], 1.0)
    np.testing.assert_array_equal(p.grad, [-1.0, 0.5])
    with pytest.raises(RuntimeError, match="inf"):
        p.grad = np.array([np.inf, 1.0])
        optim.clip_grad_norm_([p], 1.0, error_if_nonfinite=True)


@pytest.mark.parametrize("norm_type", [2.0, 1.0, math.inf])
@pytest.mark.parametrize("bad, max_norm", [(np.nan, 1.0), (np.inf, 1.0), (np.inf, math.inf), (-np.inf, 100.0)])
def test_clip_grad_norm_scales_by_a_non_finite_norm_like_torch(norm_type, bad, max_norm):
    """A NaN or infinite total norm still scales every gradient, as torch: NaN makes them all NaN, inf makes the
    finite entries 0; with error_if_nonfinite=True both libraries raise and leave the gradients as they were."""
    g = [np.array([3.0, 4.0, bad]), np.array([[0.5, -2.0]])]
    s = [nn.Parameter(np.zeros_like(a)) for a in g]
    t = [torch.zeros(a.shape, dtype=torch.float64, requires_grad=True) for a in g]
    for sp, tp, a in zip(s, t, g):
        sp.grad, tp.grad = a.copy(), torch.from_numpy(a.copy())
    ns = optim.clip_grad_norm_(s, max_norm, norm_type)
    nt = torch.nn.utils.clip_grad_norm_(t, max_norm, norm_type)
    assert isinstance(ns, float)
    np.testing.assert_array_equal(ns, nt.item())
    for sp, tp in zip(s, t):
        np.testing.assert_array_equal(sp.grad, tp.grad.numpy())
    expect = np.nan if np.isnan(bad) or max_norm == math.inf else 0.0  # inf / inf is NaN too
    np.testing.assert_array_equal(s[1].grad, np.full((1, 2), expect))
    for sp, tp, a in zip(s, t, g):
        sp.grad, tp.grad = a.copy(), torch.from_numpy(a.copy())
    with pytest.raises(RuntimeError, match=r"non-finite.*error_if_nonfinite=False"):
        optim.clip_grad_norm_(s, max_norm, norm_type, error_if_nonfinite=True)
    with pytest.raises(RuntimeError, match="non-finite"):
        torch.nn.utils.clip_grad_norm_(t, max_norm, norm_type, error_if_nonfinite=True)
    for sp, tp, a in zip(s, t, g):
        np.testing.assert_array_equal(sp.grad, a)
        np.testing.assert_array_equal(tp.grad.numpy(), a)


def test_torch_idioms_state_by_parameter_step_closure_and_clip_norm_item():
    """opt.state[p] (keyed by the parameter, as torch's users read it), step(closure) returning the loss and
    running it with gradients on, and clip_grad_norm_(...).item() / norm_type='inf' as in torch."""
    s, t = mlp_pair()
    s_opt, t_opt = optim.SGD(s.parameters(), lr=0.1, momentum=0.9), torch.optim.SGD(t.parameters(), lr=0.1,
                                                                                     momentum=0.9)
    x, y = make_batches(1)[0]

    def s_closure():
        s_opt.zero_grad()
        loss = F.mse_loss(s(seqlab.tensor(x)), y)
        loss.backward()
        return loss

    def t_closure():
        t_opt.zero_grad()
        loss = torch.nn.functional.mse_loss(t(torch.from_numpy(x)), torch.from_numpy(y))
        loss.backward()
        return loss

    with seqlab.no_grad(), torch.no_grad():                                # the closure turns gradients on
        a, b = s_opt.step(s_closure), t_opt.step(t_closure)
    assert abs(a.item() - b.item()) < 1e-12
    _assert_same_params(s, t)
    p, tp = s[0].weight, t[0].weight
    np.testing.assert_allclose(s_opt.state[p]["momentum_buffer"], t_opt.state[tp]["momentum_buffer"].numpy())
    assert p in s_opt.state and s_opt.state.get(p) is s_opt.state[id(p)]
    s_opt.zero_grad()
    F.mse_loss(s(seqlab.tensor(x)), y).backward()
    t_opt.zero_grad()
    torch.nn.functional.mse_loss(t(torch.from_numpy(x)), torch.from_numpy(y)).backward()
    for kind in (2.0, "inf"):
        ours = optim.clip_grad_norm_(s.parameters(), 1e6, norm_type=kind)
        theirs = torch.nn.utils.clip_grad_norm_(t.parameters(), 1e6, norm_type=kind)
        assert abs(ours.item() - theirs.item()) <= 1e-9 * theirs.item() and isinstance(ours, float)


def _heavy_ball(base):
    """A custom optimizer written the way torch's tutorials write one: `self.state[p]` read before anything
    was stored in it (torch's state is a defaultdict(dict))."""

    class HeavyBall(base):
        def __init__(self, params, lr=0.1, beta=0.9):
            super().__init__(params, dict(lr=lr, beta=beta))

        def step(self):
            for group in self.param_groups:
                for p in group["params"]:
                    state = self.state[p]
                    if "v" not in state:
                        state["v"] = p.grad * 0
                    state["v"] = group["beta"] * state["v"] + p.grad
                    p.data -= group["lr"] * state["v"]

    return HeavyBall


def test_a_custom_optimizer_reads_self_state_of_p_as_in_torch():
    s, t = mlp_pair()
    s_opt, t_opt = _heavy_ball(optim.Optimizer)(s.parameters()), _heavy_ball(torch.optim.Optimizer)(t.parameters())
    for x, y in make_batches(5):
        seqlab_step(s, s_opt, x, y)
        torch_step(t, t_opt, x, y)
    for (name, sp), tp in zip(s.named_parameters(), t.parameters()):
        np.testing.assert_allclose(sp.numpy(), tp.detach().numpy(), rtol=1e-12, atol=1e-14, err_msg=name)
    assert len(s_opt.state_dict()["state"]) == len(t_opt.state_dict()["state"]) == 4


def _adamw_run(params, grads_per_step, opt=None, **kw):
    opt = opt or optim.AdamW(params, lr=0.01, weight_decay=0.1, **kw)
    for grads in grads_per_step:
        for p, g in zip(params, grads):
            p.grad = g.copy()
        opt.step()
    return opt


def _grads(shapes, steps, seed=0):
    r = np.random.default_rng(seed)
    return [[r.standard_normal(s).astype(np.float32) for s in shapes] for _ in range(steps)]


def test_adamw_one_call_for_a_group_follows_arrays_replaced_or_copied():
    """AdamW updates a group's float32 parameters in one compiled call that keeps their arrays' addresses
    between steps (kernels.adam_many): a parameter's array replaced, or the optimizer deep-copied with its
    model, must be followed, never the old memory written."""
    shapes = [(5, 3), (3,), (20000,)]
    grads = _grads(shapes, 4)
    r = np.random.default_rng(1)
    start = [r.standard_normal(s).astype(np.float32) for s in shapes]

    def fresh():
        return [seqlab.Tensor(a.copy(), requires_grad=True) for a in start]

    want = fresh()
    _adamw_run(want, grads)
    # the first parameter's array replaced (same values) after two steps
    params = fresh()
    opt = _adamw_run(params, grads[:2])
    old = params[0].data
    params[0].data = old.copy()
    kept = old.copy()
    _adamw_run(params, grads[2:], opt)
    np.testing.assert_array_equal(old, kept)
    for p, w in zip(params, want):
        np.testing.assert_array_equal(p.data, w.data)
    # parameters and optimizer deep-copied together after two steps: the copy steps its own arrays
    params = fresh()
    opt = _adamw_run(params, grads[:2])
    params2, opt2 = copy.deepcopy((params, opt))
    before = [p.data.copy() for p in params]
    _adamw_run(params2, grads[2:], opt2)
    for p, b in zip(params, before):
        np.testing.assert_array_equal(p.data, b)
    for p, w in zip(params2, want):
        np.testing.assert_array_equal(p.data, w.data)
    _adamw_run(params, grads[2:], opt)  # and the original goes on as before
    for p, w in zip(params, want):
        np.testing.assert_array_equal(p.data, w.data)


def test_adamw_group_with_parameters_the_compiled_call_cannot_take():
    """A float64 parameter or a strided gradient in the group: every parameter is then updated one by one,
    with the same values as each alone."""
    shapes = [(4, 6), (7,)]
    grads = _grads(shapes, 3)
    r = np.random.default_rng(2)
    start = [r.standard_normal(s).astype(np.float32) for s in shapes]
    alone = []
    for a, g in zip(start, zip(*grads)):
        p = seqlab.Tensor(a.copy(), requires_grad=True)
        _adamw_run([p], [[x] for x in g])
        alone.append(p.data)
    mixed = [seqlab.Tensor(a.copy(), requires_grad=True) for a in start]
    extra = seqlab.Tensor(np.ones(5), requires_grad=True)  # float64
    opt = optim.AdamW(mixed + [extra], lr=0.01, weight_decay=0.1)
    for step, gs in enumerate(grads):
        for p, g in zip(mixed, gs):
            p.grad = g.copy()
        if step == 1:  # a strided gradient (a view of every other value) at one step
            wide = np.zeros((4, 12), np.float32)
            wide[:, ::2] = gs[0]
            mixed[0].grad = wide[:, ::2]
        extra.grad = np.full(5, 0.5)
        opt.step()
    for p, a in zip(mixed, alone):
        np.testing.assert_array_equal(p.data, a)
    assert extra.data.dtype == np.float64 and np.all(extra.data < 1)
