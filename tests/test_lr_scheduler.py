"""seqlab.optim.lr_scheduler against torch.optim.lr_scheduler: the lr of every group (and OneCycleLR's momentum
or β1) equal at every step, a JSON round trip of the state mid-way, and the argument errors."""
import json
import warnings

import numpy as np
import pytest
import torch

import seqlab
import seqlab.functional as F
from seqlab import nn, optim
from seqlab.optim import lr_scheduler as S

T = torch.optim.lr_scheduler


def _pair(two_groups=True):
    """A seqlab Linear and the torch Linear it was loaded from."""
    torch.manual_seed(0)
    t = torch.nn.Linear(3, 2).double()
    s = nn.Linear(3, 2)
    s.to(dtype=np.float64)
    s.load_state_dict(t.state_dict())
    return s, t


def _params(model, two_groups, second_lr=0.5):
    """The weight and the bias as two groups (the bias with its own lr), or one group."""
    p = list(model.parameters())
    return [{"params": p[:1]}, {"params": p[1:], "lr": second_lr}] if two_groups else p


OPTIMIZERS = {
    "sgd": lambda lib, params: lib.SGD(params, lr=0.1),
    "sgd_momentum": lambda lib, params: lib.SGD(params, lr=0.1, momentum=0.9),
    "adam": lambda lib, params: lib.Adam(params, lr=0.01, betas=(0.9, 0.99)),
    "adamw": lambda lib, params: lib.AdamW(params, lr=0.01),
}


def _optimizers(kind, two_groups):
    s, t = _pair()
    return (OPTIMIZERS[kind](optim, _params(s, two_groups)), OPTIMIZERS[kind](torch.optim, _params(t, two_groups)),
            s)


def _assert_same(s_opt, t_opt, s_sched, t_sched, where):
    np.testing.assert_allclose(s_sched.get_last_lr(), t_sched.get_last_lr(), rtol=1e-12, atol=0, err_msg=where)
    for i, (sg, tg) in enumerate(zip(s_opt.param_groups, t_opt.param_groups)):
        msg = f"{where}, group {i}"
        np.testing.assert_allclose(sg["lr"], tg["lr"], rtol=1e-12, atol=0, err_msg=msg)
        if "momentum" in tg:
            np.testing.assert_allclose(sg["momentum"], tg["momentum"], rtol=1e-12, atol=0, err_msg=msg)
        if "betas" in tg:
            np.testing.assert_allclose(sg["betas"], tg["betas"], rtol=1e-12, atol=0, err_msg=msg)


def _json(state):
    """The state as a JSON checkpoint gives it back: plain numbers, strings and lists only."""
    return json.loads(json.dumps(state))


# (id, optimizer, two groups, steps, resume after step, make(lib, optimizer))
CASES = [
    ("step", "sgd", True, 40, 17, lambda L, o: L.StepLR(o, step_size=7, gamma=0.5)),
    ("step_default_gamma", "adam", False, 30, 10, lambda L, o: L.StepLR(o, 4)),
    ("multistep_repeated", "sgd", True, 40, 11, lambda L, o: L.MultiStepLR(o, milestones=[5, 12, 12, 30], gamma=0.3)),
    ("exponential", "sgd", True, 40, 20, lambda L, o: L.ExponentialLR(o, gamma=0.9)),
    ("cosine_past_t_max", "sgd", True, 50, 23, lambda L, o: L.CosineAnnealingLR(o, T_max=10, eta_min=0.001)),
    ("cosine_adam", "adam", True, 30, 9, lambda L, o: L.CosineAnnealingLR(o, 25)),
    ("linear", "sgd", True, 30, 4, lambda L, o: L.LinearLR(o, start_factor=0.25, end_factor=0.9, total_iters=8)),
    ("linear_to_zero", "sgd", True, 30, 12, lambda L, o: L.LinearLR(o, start_factor=1.0, end_factor=0.0,
                                                                    total_iters=20)),
    ("constant", "sgd", True, 30, 3, lambda L, o: L.ConstantLR(o, factor=0.5, total_iters=6)),
    ("constant_default", "adamw", False, 30, 7, lambda L, o: L.ConstantLR(o)),
    ("onecycle_sgd_momentum", "sgd_momentum", True, 40, 15,
     lambda L, o: L.OneCycleLR(o, max_lr=[0.4, 1.2], total_steps=40)),
    ("onecycle_adam_three_phase_linear", "adam", True, 40, 21,
     lambda L, o: L.OneCycleLR(o, max_lr=0.01, epochs=5, steps_per_epoch=8, anneal_strategy="linear",
                               three_phase=True, base_momentum=[0.8, 0.7], max_momentum=0.9)),
    ("onecycle_adamw_three_phase_cos", "adamw", False, 35, 30,
     lambda L, o: L.OneCycleLR(o, max_lr=0.02, total_steps=35, pct_start=0.2, three_phase=True)),
    ("onecycle_no_momentum", "sgd", True, 30, 8,
     lambda L, o: L.OneCycleLR(o, max_lr=[0.3, 0.6], total_steps=30, pct_start=0.25, cycle_momentum=False,
                               div_factor=10.0, final_div_factor=100.0)),
    ("warm_restarts_mult", "sgd", True, 50, 19, lambda L, o: L.CosineAnnealingWarmRestarts(o, T_0=7, T_mult=2,
                                                                                           eta_min=0.01)),
    ("warm_restarts", "adam", True, 30, 12, lambda L, o: L.CosineAnnealingWarmRestarts(o, 5)),
    ("sequential_warmup_cosine", "sgd", True, 40, 4,
     lambda L, o: L.SequentialLR(o, [L.LinearLR(o, start_factor=0.1, total_iters=5),
                                     L.CosineAnnealingLR(o, T_max=30)], milestones=[5])),
    ("sequential_three", "sgd_momentum", True, 40, 13,
     lambda L, o: L.SequentialLR(o, [L.ConstantLR(o, factor=0.5, total_iters=3), L.ExponentialLR(o, gamma=0.9),
                                     L.StepLR(o, step_size=4)], milestones=[6, 20])),
    ("sequential_warm_restarts", "adam", True, 35, 9,  # torch's _update_lr(0) on a scheduler without closed form
     lambda L, o: L.SequentialLR(o, [L.LinearLR(o, start_factor=0.5, total_iters=4),
                                     L.CosineAnnealingWarmRestarts(o, T_0=6)], milestones=[4])),
    ("lambda", "sgd", True, 30, 10, lambda L, o: L.LambdaLR(o, [lambda e: 0.9 ** e, lambda e: 1 / (1 + e)])),
]


@pytest.mark.parametrize("kind, two_groups, steps, resume_at, make", [c[1:] for c in CASES],
                         ids=[c[0] for c in CASES])
def test_scheduler_equals_torch_step_for_step_and_resumes(kind, two_groups, steps, resume_at, make):
    """Every step's lrs (and momentum/betas) as torch's; after `resume_at` steps a fresh optimizer and scheduler
    load the state through JSON (the scheduler's state only: its saved lrs go back into the groups) and go on
    equal to torch's unbroken run."""
    s_opt, t_opt, _ = _optimizers(kind, two_groups)
    s_sched, t_sched = make(S, s_opt), make(T, t_opt)
    _assert_same(s_opt, t_opt, s_sched, t_sched, "construction")
    for i in range(1, steps + 1):
        s_opt.step()
        t_opt.step()
        s_sched.step()
        t_sched.step()
        _assert_same(s_opt, t_opt, s_sched, t_sched, f"step {i}")
        if i == resume_at:
            state = _json(s_sched.state_dict())
            s_opt, _, _ = _optimizers(kind, two_groups)
            s_sched = make(S, s_opt)
            s_sched.load_state_dict(state)
            _assert_same(s_opt, t_opt, s_sched, t_sched, f"resumed at step {i}")
            assert s_sched.state_dict() == state


@pytest.mark.parametrize("kind, two_groups, steps, resume_at, make",
                         [c[1:] for c in CASES if c[0] != "lambda"], ids=[c[0] for c in CASES if c[0] != "lambda"])
def test_torch_scheduler_state_loads(kind, two_groups, steps, resume_at, make):
    """A torch scheduler's state_dict (same attribute names; MultiStepLR's Counter; torch's private flags
    ignored) loads into seqlab's, which then goes on as torch's."""
    s_opt, t_opt, _ = _optimizers(kind, two_groups)
    t_sched = make(T, t_opt)
    for _ in range(resume_at):
        t_opt.step()
        t_sched.step()
    s_sched = make(S, s_opt)
    s_sched.load_state_dict(t_sched.state_dict())
    _assert_same(s_opt, t_opt, s_sched, t_sched, "loaded")
    for i in range(resume_at + 1, steps + 1):
        s_opt.step()
        t_opt.step()
        s_sched.step()
        t_sched.step()
        _assert_same(s_opt, t_opt, s_sched, t_sched, f"step {i}")


def test_resume_the_trainer_way_optimizer_state_then_scheduler_state():
    """Scheduler built, then the optimizer's state and the scheduler's loaded (seqlab's trainer order): OneCycleLR
    with Adam's β1 cycled goes on as torch's."""
    make = CASES[[c[0] for c in CASES].index("onecycle_adam_three_phase_linear")][-1]
    s_opt, t_opt, _ = _optimizers("adam", True)
    s_sched, t_sched = make(S, s_opt), make(T, t_opt)
    for _ in range(12):
        for o, sc in ((s_opt, s_sched), (t_opt, t_sched)):
            o.step()
            sc.step()
    opt_state, sched_state = s_opt.state_dict(), _json(s_sched.state_dict())
    s_opt, _, _ = _optimizers("adam", True)
    s_sched = make(S, s_opt)
    s_opt.load_state_dict(opt_state)
    s_sched.load_state_dict(sched_state)
    for i in range(13, 41):
        for o, sc in ((s_opt, s_sched), (t_opt, t_sched)):
            o.step()
            sc.step()
        _assert_same(s_opt, t_opt, s_sched, t_sched, f"step {i}")


def test_two_chainable_schedulers_on_one_optimizer_compose_like_torch():
    """Chainable schedulers scale the groups' current lrs, so two on one optimizer multiply (torch's rule)."""
    s_opt, t_opt, _ = _optimizers("sgd", True)
    s_a, s_b = S.ExponentialLR(s_opt, gamma=0.95), S.MultiStepLR(s_opt, milestones=[6, 15], gamma=0.5)
    t_a, t_b = T.ExponentialLR(t_opt, gamma=0.95), T.MultiStepLR(t_opt, milestones=[6, 15], gamma=0.5)
    assert s_a.base_lrs == s_b.base_lrs == [0.1, 0.5]
    for i in range(30):
        for o, a, b in ((s_opt, s_a, s_b), (t_opt, t_a, t_b)):
            o.step()
            a.step()
            b.step()
        _assert_same(s_opt, t_opt, s_b, t_b, f"step {i}")
    np.testing.assert_allclose(s_b.get_last_lr()[0], 0.1 * 0.95 ** 30 * 0.25, rtol=1e-12)


@pytest.mark.parametrize("make", [
    lambda L, o: L.CosineAnnealingLR(o, T_max=8, eta_min=0.01),
    lambda L, o: L.StepLR(o, step_size=3, gamma=0.5),
    lambda L, o: L.MultiStepLR(o, milestones=[4, 9], gamma=0.5),
    lambda L, o: L.ExponentialLR(o, gamma=0.9),
    lambda L, o: L.LinearLR(o, start_factor=0.2, total_iters=10),
    lambda L, o: L.ConstantLR(o, factor=0.5, total_iters=9),
    lambda L, o: L.OneCycleLR(o, max_lr=0.3, total_steps=20),  # not chainable: the change is overwritten
    lambda L, o: L.CosineAnnealingWarmRestarts(o, T_0=4),  # neither
], ids=["cosine", "step", "multistep", "exponential", "linear", "constant", "onecycle", "warm_restarts"])
def test_an_lr_changed_by_hand_carries_on_where_torch_is_chainable(make):
    """Chainable schedulers scale the groups' current lrs (CosineAnnealingLR by its recursive form), so an lr
    halved by hand mid-run stays halved, as in torch; the closed-form ones set it back."""
    s_opt, t_opt, _ = _optimizers("sgd_momentum", True)
    s_sched, t_sched = make(S, s_opt), make(T, t_opt)
    for i in range(20):
        if i == 5:
            for o in (s_opt, t_opt):
                o.param_groups[0]["lr"] *= 0.5
        for o, sc in ((s_opt, s_sched), (t_opt, t_sched)):
            o.step()
            sc.step()
        _assert_same(s_opt, t_opt, s_sched, t_sched, f"step {i}")


def test_onecycle_training_with_momentum_cycled_equals_torch():
    """The cycled momentum reaches SGD's update: the weights after 12 steps equal torch's."""
    s, t = _pair()
    s_opt = optim.SGD(_params(s, True), lr=0.1, momentum=0.9, nesterov=True)
    t_opt = torch.optim.SGD(_params(t, True), lr=0.1, momentum=0.9, nesterov=True)
    s_sched = S.OneCycleLR(s_opt, max_lr=[0.2, 0.4], total_steps=12, pct_start=0.4)
    t_sched = T.OneCycleLR(t_opt, max_lr=[0.2, 0.4], total_steps=12, pct_start=0.4)
    rng = np.random.default_rng(0)
    for _ in range(12):
        x, y = rng.standard_normal((4, 3)), rng.standard_normal((4, 2))
        s_opt.zero_grad()
        F.mse_loss(s(seqlab.tensor(x)), y).backward()
        s_opt.step()
        t_opt.zero_grad()
        torch.nn.functional.mse_loss(t(torch.from_numpy(x)), torch.from_numpy(y)).backward()
        t_opt.step()
        s_sched.step()
        t_sched.step()
    for sp, tp in zip(s.parameters(), t.parameters()):
        np.testing.assert_allclose(sp.numpy(), tp.detach().numpy(), rtol=1e-10, atol=1e-12)


# ---- ReduceLROnPlateau --------------------------------------------------------------------------------------
def _metrics(mode):
    """Improving stretches, plateaus and small (sub-threshold) improvements: several reductions and cooldowns."""
    m = [1.0, 0.8, 0.7, 0.7, 0.71, 0.7, 0.69995, 0.72, 0.6, 0.59, 0.6, 0.6, 0.61, 0.6, 0.6, 0.5, 0.5, 0.51,
         0.5, 0.52, 0.4, 0.399, 0.3999, 0.4, 0.41, 0.42, 0.43, 0.3, 0.3, 0.3, 0.31, 0.3, 0.3, 0.29, 0.3, 0.3,
         0.3, 0.3, 0.3, 0.3, 0.2, 0.3, 0.3, 0.3, 0.3, 0.3, 0.3, 0.3, 0.3, 0.3]
    return m if mode == "min" else [-x for x in m]


PLATEAU = [
    ("min_rel_cooldown_min_lrs", dict(mode="min", factor=0.5, patience=2, cooldown=2, min_lr=[0.001, 0.05])),
    ("max_abs_eps", dict(mode="max", factor=0.3, patience=1, threshold=0.02, threshold_mode="abs",
                         min_lr=0.004, eps=1e-3)),
    ("min_abs_no_patience", dict(mode="min", factor=0.8, patience=0, threshold=0.005, threshold_mode="abs",
                                 cooldown=3)),
    ("max_rel_defaults", dict(mode="max", patience=3)),
]


@pytest.mark.parametrize("kwargs", [p[1] for p in PLATEAU], ids=[p[0] for p in PLATEAU])
@pytest.mark.parametrize("kind", ["sgd", "adam"])
def test_reduce_lr_on_plateau_equals_torch(kind, kwargs):
    s_opt, t_opt, _ = _optimizers(kind, True)
    s_sched, t_sched = S.ReduceLROnPlateau(s_opt, **kwargs), T.ReduceLROnPlateau(t_opt, **kwargs)
    metrics = _metrics(kwargs["mode"])
    lrs, cooled = set(), False
    for i, m in enumerate(metrics):
        if i == 25:
            state = _json(s_sched.state_dict())
            s_opt, _, _ = _optimizers(kind, True)
            s_sched = S.ReduceLROnPlateau(s_opt, **kwargs)
            s_sched.load_state_dict(state)
        s_opt.step()
        t_opt.step()
        s_sched.step(m)
        t_sched.step(m)
        _assert_same(s_opt, t_opt, s_sched, t_sched, f"step {i}")
        for k in ("best", "num_bad_epochs", "cooldown_counter", "last_epoch"):
            assert getattr(s_sched, k) == getattr(t_sched, k), (i, k)
        lrs.add(s_opt.param_groups[1]["lr"])
        cooled |= s_sched.in_cooldown
    assert len(lrs) >= 3  # reductions happened
    assert cooled == (kwargs.get("cooldown", 0) > 0)


def test_reduce_lr_on_plateau_takes_tensors_and_min_lr_and_eps_stop_it():
    p = [nn.Parameter(np.ones(2))]
    opt = optim.SGD(p, lr=0.1)
    sched = S.ReduceLROnPlateau(opt, factor=0.1, patience=0, min_lr=0.0005, eps=1e-4)
    for _ in range(6):
        sched.step(seqlab.tensor(1.0))  # never improves after the first
    # 0.1 → 0.01 → 0.001 → 0.0005 (min_lr); no more: 0.0005 − 0.0005 is not > eps
    assert sched.get_last_lr() == [0.0005]


# ---- other torch behaviours ---------------------------------------------------------------------------------
@pytest.mark.parametrize("make", [
    lambda L, o: L.StepLR(o, step_size=3, gamma=0.5),
    lambda L, o: L.MultiStepLR(o, milestones=[2, 5, 5], gamma=0.5),
    lambda L, o: L.ExponentialLR(o, gamma=0.8),
    lambda L, o: L.CosineAnnealingLR(o, T_max=6, eta_min=0.01),
    lambda L, o: L.LinearLR(o, start_factor=0.2, total_iters=4),
    lambda L, o: L.ConstantLR(o, factor=0.25, total_iters=3),
], ids=["step", "multistep", "exponential", "cosine", "linear", "constant"])
def test_step_with_epoch_uses_the_closed_form_and_warns_like_torch(make):
    s_opt, t_opt, _ = _optimizers("sgd", True)
    s_sched, t_sched = make(S, s_opt), make(T, t_opt)
    for epoch in (3, 1, 7, 4, 10):
        with pytest.warns(UserWarning, match="epoch parameter"):
            s_sched.step(epoch)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t_sched.step(epoch)
        _assert_same(s_opt, t_opt, s_sched, t_sched, f"epoch {epoch}")


def test_warm_restarts_fractional_epochs_like_torch():
    """`step(epoch + i / iters)` within epochs, as torch's docs show (no warning there)."""
    s_opt, t_opt, _ = _optimizers("sgd", True)
    s_sched = S.CosineAnnealingWarmRestarts(s_opt, T_0=3, T_mult=2, eta_min=0.001)
    t_sched = T.CosineAnnealingWarmRestarts(t_opt, T_0=3, T_mult=2, eta_min=0.001)
    for epoch in range(12):
        for i in range(4):
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                s_sched.step(epoch + i / 4)
            t_sched.step(epoch + i / 4)
            _assert_same(s_opt, t_opt, s_sched, t_sched, f"epoch {epoch} + {i}/4")
            assert s_sched.T_i == t_sched.T_i and s_sched.T_cur == t_sched.T_cur
    state = _json(s_sched.state_dict())
    assert state["T_i"] == 12  # restarts at epochs 3 and 9; the last one lasts 12


def test_resuming_with_last_epoch_like_torch():
    """last_epoch >= 0 needs the groups' initial_lr (KeyError otherwise); the constructor's step then gives
    torch's values (chainable schedulers keep the loaded lr where torch does, StepLR may decay it)."""
    with pytest.raises(KeyError, match=r"initial_lr.*param_groups\[0\]"):
        S.StepLR(optim.SGD([nn.Parameter(np.ones(2))], lr=0.1), 3, last_epoch=4)
    for make in (lambda L, o: L.StepLR(o, 3, last_epoch=5), lambda L, o: L.ExponentialLR(o, 0.5, last_epoch=5),
                 lambda L, o: L.CosineAnnealingLR(o, 10, last_epoch=5),
                 lambda L, o: L.OneCycleLR(o, 1.0, total_steps=20, last_epoch=5)):
        s_opt, t_opt, _ = _optimizers("sgd_momentum", True)
        for o in (s_opt, t_opt):
            for g in o.param_groups:
                g.update(initial_lr=0.3, lr=0.2, max_lr=1.0, min_lr=1e-5, max_momentum=0.95, base_momentum=0.85)
        s_sched, t_sched = make(S, s_opt), make(T, t_opt)
        for i in range(8):
            _assert_same(s_opt, t_opt, s_sched, t_sched, f"step {i}")
            for o, sc in ((s_opt, s_sched), (t_opt, t_sched)):
                o.step()
                sc.step()


def test_get_lr_outside_step_warns_and_module_paths():
    from seqlab.optim.lr_scheduler import StepLR
    from seqlab.optim.schedule import LambdaLR

    assert StepLR is optim.StepLR and LambdaLR is optim.LambdaLR is S.LambdaLR
    assert issubclass(optim.OneCycleLR, optim.LRScheduler) and issubclass(LambdaLR, optim.LRScheduler)
    for name in ("StepLR", "MultiStepLR", "ExponentialLR", "CosineAnnealingLR", "LinearLR", "ConstantLR",
                 "OneCycleLR", "CosineAnnealingWarmRestarts", "ReduceLROnPlateau", "SequentialLR"):
        assert name in optim.__all__ and name in S.__all__
    sched = StepLR(optim.SGD([nn.Parameter(np.ones(2))], lr=0.1), 2)
    with pytest.warns(UserWarning, match="get_last_lr"):
        sched.get_lr()


def test_onecycle_refuses_steps_beyond_total_steps_like_torch():
    s_opt, t_opt, _ = _optimizers("sgd_momentum", False)
    s_sched, t_sched = S.OneCycleLR(s_opt, 0.5, total_steps=5), T.OneCycleLR(t_opt, 0.5, total_steps=5)
    for _ in range(5):  # torch lets last_epoch reach total_steps itself
        for o, sc in ((s_opt, s_sched), (t_opt, t_sched)):
            o.step()
            sc.step()
    _assert_same(s_opt, t_opt, s_sched, t_sched, "step 5")
    with pytest.raises(ValueError, match="tried to step 6 times; the schedule has total_steps=5"):
        s_sched.step()
    with pytest.raises(ValueError, match="Tried to step 6 times"):
        t_sched.step()


def test_state_dict_is_plain_and_checked_on_load():
    s_opt, _, _ = _optimizers("sgd", True)
    seq = S.SequentialLR(s_opt, [S.LinearLR(s_opt, total_iters=2), S.MultiStepLR(s_opt, [3, 3])], milestones=[2])
    for _ in range(4):
        seq.step()
    state = seq.state_dict()
    assert _json(state) == state
    assert state["_schedulers"][1]["milestones"] == [3, 3] and state["_milestones"] == [2]
    one_group, _, _ = _optimizers("sgd", False)
    with pytest.raises(ValueError, match="schedule state has 2 base lrs, the optimizer has 1 parameter groups"):
        S.StepLR(one_group, 2).load_state_dict(S.StepLR(s_opt, 2).state_dict())
    with pytest.raises(ValueError, match="state has 2 schedulers, this one has 1"):
        S.SequentialLR(one_group, [S.StepLR(one_group, 2)], []).load_state_dict(state)


# ---- argument errors -----------------------------------------------------------------------------------------
def _opt(kind="sgd", groups=1):
    p = [nn.Parameter(np.ones(2)) for _ in range(groups)]
    return OPTIMIZERS[kind](optim, [{"params": [q]} for q in p])


ERRORS = [
    (lambda: S.StepLR(_opt(), 0), "StepLR: step_size must be a positive integer, got 0"),
    (lambda: S.StepLR(_opt(), 2.5), "StepLR: step_size must be a positive integer, got 2.5"),
    (lambda: S.StepLR(_opt(), 3, gamma=-0.1), r"StepLR: gamma must be a finite number >= 0, got -0.1"),
    (lambda: S.StepLR(_opt(), 3, last_epoch=-2), "StepLR: last_epoch must be an integer >= -1, got -2"),
    (lambda: S.StepLR([nn.Parameter(np.ones(2))], 3), "StepLR: list is not a seqlab Optimizer"),
    (lambda: S.MultiStepLR(_opt(), [2, -1]), r"MultiStepLR: milestones must be a list of integers >= 0, got \[2, -1\]"),
    (lambda: S.MultiStepLR(_opt(), 5), "MultiStepLR: milestones must be a list of integers >= 0, got 5"),
    (lambda: S.ExponentialLR(_opt(), float("nan")), "ExponentialLR: gamma must be a finite number >= 0, got nan"),
    (lambda: S.CosineAnnealingLR(_opt(), 0), "CosineAnnealingLR: T_max must be a positive integer, got 0"),
    (lambda: S.CosineAnnealingLR(_opt(), 10, eta_min=-1), "CosineAnnealingLR: eta_min must be a finite number >= 0"),
    (lambda: S.LinearLR(_opt(), start_factor=0), r"LinearLR: start_factor must be a finite number in \(0, 1\], got 0"),
    (lambda: S.LinearLR(_opt(), end_factor=1.5), r"LinearLR: end_factor must be a finite number in \[0, 1\], got 1.5"),
    (lambda: S.LinearLR(_opt(), total_iters=0), "LinearLR: total_iters must be a positive integer, got 0"),
    (lambda: S.ConstantLR(_opt(), factor=1.5), r"ConstantLR: factor must be a finite number in \(0, 1\], got 1.5"),
    (lambda: S.ConstantLR(_opt(), factor=0), r"ConstantLR: factor must be a finite number in \(0, 1\], got 0"),
    (lambda: S.OneCycleLR(_opt(), 0.1), "OneCycleLR: give either total_steps or both epochs and steps_per_epoch"),
    (lambda: S.OneCycleLR(_opt(), 0.1, epochs=2), "give either total_steps or both epochs and steps_per_epoch"),
    (lambda: S.OneCycleLR(_opt(), 0.1, total_steps=0), "OneCycleLR: total_steps must be a positive integer, got 0"),
    (lambda: S.OneCycleLR(_opt(), 0.1, epochs=2, steps_per_epoch=-3),
     "OneCycleLR: steps_per_epoch must be a positive integer, got -3"),
    (lambda: S.OneCycleLR(_opt(), 0.1, total_steps=10, pct_start=1.5),
     r"OneCycleLR: pct_start must be a float in \[0, 1\], got 1.5"),
    (lambda: S.OneCycleLR(_opt(), 0.1, total_steps=10, pct_start=0.1),
     r"OneCycleLR: pct_start \* total_steps must not be 1"),
    (lambda: S.OneCycleLR(_opt(), 0.1, total_steps=10, anneal_strategy="exp"),
     "OneCycleLR: anneal_strategy must be 'cos' or 'linear', got 'exp'"),
    (lambda: S.OneCycleLR(_opt(groups=2), [0.1, 0.2, 0.3], total_steps=10),
     "OneCycleLR: max_lr must have one value per parameter group: got 3, the optimizer has 2"),
    (lambda: S.OneCycleLR(_opt(), 0.1, total_steps=10, max_momentum=1.2),
     r"OneCycleLR: max_momentum must be a finite number in \[0, 1\], got 1.2"),
    (lambda: S.CosineAnnealingWarmRestarts(_opt(), 0), "CosineAnnealingWarmRestarts: T_0 must be a positive integer"),
    (lambda: S.CosineAnnealingWarmRestarts(_opt(), 5, T_mult=0),
     "CosineAnnealingWarmRestarts: T_mult must be a positive integer, got 0"),
    (lambda: S.CosineAnnealingWarmRestarts(_opt(), 5, eta_min="0"), "eta_min must be a finite number >= 0, got '0'"),
    (lambda: S.CosineAnnealingWarmRestarts(_opt(), 5).step(-1), "epoch must be a finite number >= 0, got -1"),
    (lambda: S.ReduceLROnPlateau(_opt(), factor=1.0),
     r"ReduceLROnPlateau: factor must be a finite number in \[0, 1\), got 1.0"),
    (lambda: S.ReduceLROnPlateau(_opt(), mode="lowest"),
     "ReduceLROnPlateau: mode must be 'min' or 'max', got 'lowest'"),
    (lambda: S.ReduceLROnPlateau(_opt(), threshold_mode="pct"), "threshold_mode must be 'rel' or 'abs', got 'pct'"),
    (lambda: S.ReduceLROnPlateau(_opt(), patience=-1), "ReduceLROnPlateau: patience must be an integer >= 0, got -1"),
    (lambda: S.ReduceLROnPlateau(_opt(groups=2), min_lr=[0.1]), "expected 2 min_lrs .one per parameter group., got 1"),
    (lambda: S.LambdaLR(_opt(groups=2), [lambda e: 1.0]), "expected 2 lr_lambdas"),
]


@pytest.mark.parametrize("make, match", ERRORS, ids=[str(i) for i in range(len(ERRORS))])
def test_argument_errors(make, match):
    with pytest.raises((ValueError, TypeError), match=match) as info:
        make()
    assert "\n" not in str(info.value)


def test_onecycle_cycle_momentum_needs_momentum_or_betas():
    class Plain(optim.Optimizer):
        def __init__(self, params, lr=0.1):
            super().__init__(params, dict(lr=lr))

        def step(self):
            pass

    with pytest.raises(ValueError, match="cycle_momentum=True needs an optimizer with momentum or betas"):
        S.OneCycleLR(Plain([nn.Parameter(np.ones(2))]), 0.1, total_steps=10)
    S.OneCycleLR(Plain([nn.Parameter(np.ones(2))]), 0.1, total_steps=10, cycle_momentum=False)


def test_sequential_lr_errors():
    o, other = _opt(), _opt()
    with pytest.raises(ValueError, match="at least one scheduler"):
        S.SequentialLR(o, [], [])
    with pytest.raises(ValueError, match="one milestone fewer than schedulers, got 2 schedulers and 2 milestones"):
        S.SequentialLR(o, [S.StepLR(o, 2), S.StepLR(o, 3)], [2, 4])
    with pytest.raises(ValueError, match=r"same optimizer, but schedulers\[1\] \(StepLR\) has another one"):
        S.SequentialLR(o, [S.StepLR(o, 2), S.StepLR(other, 3)], [2])
    with pytest.raises(ValueError, match="does not support ReduceLROnPlateau"):
        S.SequentialLR(o, [S.StepLR(o, 2), S.ReduceLROnPlateau(o)], [2])
    with pytest.raises(TypeError, match=r"schedulers\[0\] is a StepLR, not a seqlab LRScheduler"):
        S.SequentialLR(o, [T.StepLR(torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=0.1), 2)], [])
