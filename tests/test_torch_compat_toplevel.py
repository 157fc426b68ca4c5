"""torch idioms a review found missing or different, each run in torch and in seqlab side by side:
`tensor()` copies and `as_tensor()` shares, bare `@no_grad`, optimizers over `named_parameters()` and with
`maximize=True`, top-level math functions, and four more lr schedulers."""
import json
import warnings

import numpy as np
import pytest
import torch

import seqlab
from seqlab import nn, optim
from seqlab.optim import lr_scheduler as S

T = torch.optim.lr_scheduler


# ---- seqlab.tensor copies, seqlab.as_tensor / from_numpy share ------------------------------------------
def test_tensor_copies_an_array_as_torch():
    for lib in (torch, seqlab):
        d = np.zeros(3, np.float32)
        t = lib.tensor(d)
        t.add_(1)
        np.testing.assert_array_equal(d, 0, err_msg=lib.__name__)
        d64 = np.zeros((2, 3))[:, ::2]  # float64, strided
        t = lib.tensor(d64)
        assert str(t.dtype).endswith("float64")
        t.fill_(5)
        np.testing.assert_array_equal(d64, 0, err_msg=lib.__name__)
    # unchanged: lists and numbers give torch's dtypes, a dtype conversion copies
    for data in ([1.5, 2.0], [[1, 2]], 3, np.float64(2.0)):
        s, t = seqlab.tensor(data), torch.tensor(data)
        assert s.dtype == np.dtype(str(t.dtype).replace("torch.", "")), data
        np.testing.assert_array_equal(s.numpy(), t.numpy())
    d = np.arange(3, dtype=np.int32)
    seqlab.tensor(d, dtype=seqlab.float64).add_(1)
    np.testing.assert_array_equal(d, [0, 1, 2])


def test_tensor_copies_a_tensor_as_torch():
    for lib in (torch, seqlab):
        a = lib.ones(2, requires_grad=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # torch advises clone().detach()
            b = lib.tensor(a)
        assert not b.requires_grad and b.grad_fn is None if lib is torch else not b.requires_grad
        b.fill_(7)
        np.testing.assert_array_equal(a.detach().numpy(), 1, err_msg=lib.__name__)


def test_as_tensor_shares_where_torch_shares():
    for lib in (torch, seqlab):
        d = np.zeros(3, np.float32)
        lib.as_tensor(d).add_(1)                   # same dtype: shared
        np.testing.assert_array_equal(d, 1, err_msg=lib.__name__)
        lib.as_tensor(d, dtype=lib.float64).add_(1)  # converted: a copy
        np.testing.assert_array_equal(d, 1, err_msg=lib.__name__)
        lib.from_numpy(d).add_(1)
        np.testing.assert_array_equal(d, 2, err_msg=lib.__name__)
        assert str(lib.as_tensor([1.0, 2.0]).dtype).endswith("float32")
        assert str(lib.as_tensor(np.arange(2, dtype=np.int32)).dtype).endswith("int32")


def test_as_tensor_of_a_tensor_is_itself_or_a_recorded_cast():
    for lib in (torch, seqlab):
        a = lib.ones(2, requires_grad=True)
        assert lib.as_tensor(a) is a
        assert lib.as_tensor(a, dtype=lib.float32) is a
        b = lib.as_tensor(a, dtype=lib.float64)
        assert b.dtype == lib.float64 and b.requires_grad
        (b * 3).sum().backward()
        np.testing.assert_array_equal(a.grad.numpy() if lib is torch else a.grad, [3, 3])


# ---- bare @no_grad / @enable_grad / @inference_mode --------------------------------------------------------
@pytest.mark.parametrize("name, outer, expect", [("no_grad", True, False), ("enable_grad", False, True),
                                                 ("inference_mode", True, False)])
def test_bare_grad_mode_decorators(name, outer, expect):
    for lib in (torch, seqlab):
        deco = getattr(lib, name)

        @deco
        def bare(x):
            """doc"""
            return lib.is_grad_enabled(), (x * 2).requires_grad

        @deco()
        def called(x):
            return lib.is_grad_enabled(), (x * 2).requires_grad

        x = lib.ones(2, requires_grad=True)
        with lib.set_grad_enabled(outer):
            assert bare(x) == called(x) == (expect, expect), lib.__name__
            assert lib.is_grad_enabled() is outer
        assert bare.__name__ == "bare" and bare.__doc__ == "doc"
    with pytest.raises(TypeError):  # not a function: refused (torch's no_grad(5) gives a useless wrapper)
        seqlab.no_grad(5)
    with seqlab.inference_mode(False):  # inference_mode(mode) keeps its bool argument
        assert seqlab.is_grad_enabled()



# ---- optimizers: named_parameters() and maximize ---------------------------------------------------------
def _models():
    torch.manual_seed(0)
    t = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 2)).double()
    s = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2))
    s.to(dtype=np.float64)
    s.load_state_dict(t.state_dict())
    return s, t


def _steps(s_model, t_model, s_opt, t_opt, n=5):
    x = np.random.default_rng(0).standard_normal((5, 3))
    for _ in range(n):
        for model, opt, lib in ((s_model, s_opt, seqlab), (t_model, t_opt, torch)):
            opt.zero_grad()
            (model(lib.tensor(x)) ** 2).sum().backward()
            opt.step()
    for (name, sp), (_, tp) in zip(s_model.named_parameters(), t_model.named_parameters()):
        np.testing.assert_allclose(sp.numpy(), tp.detach().numpy(), rtol=1e-12, atol=1e-14, err_msg=name)


def test_optimizer_takes_named_parameters_and_saves_the_names():
    s_model, t_model = _models()
    s_opt = optim.SGD(s_model.named_parameters(), lr=0.1, momentum=0.9)
    t_opt = torch.optim.SGD(t_model.named_parameters(), lr=0.1, momentum=0.9)
    assert s_opt.param_groups[0]["param_names"] == t_opt.param_groups[0]["param_names"] == \
        ["0.weight", "0.bias", "2.weight", "2.bias"]
    _steps(s_model, t_model, s_opt, t_opt, n=2)
    s_state, t_state = s_opt.state_dict(), t_opt.state_dict()
    assert s_state["param_groups"][0]["param_names"] == t_state["param_groups"][0]["param_names"]
    assert s_state["param_groups"][0]["params"] == t_state["param_groups"][0]["params"]
    fresh = optim.SGD(s_model.parameters(), lr=0.1, momentum=0.9)  # without names: loads them (as torch)
    fresh.load_state_dict(s_state)
    assert fresh.param_groups[0]["param_names"] == t_state["param_groups"][0]["param_names"]


def test_param_groups_of_named_pairs_as_torch():
    for lib, model in zip((optim, torch.optim), _models()):
        named = list(model.named_parameters())
        opt = lib.Adam([{"params": named[:2]}, {"params": named[2:], "lr": 0.1}], lr=0.01)
        assert [g["param_names"] for g in opt.param_groups] == [["0.weight", "0.bias"], ["2.weight", "2.bias"]]
        assert [g["lr"] for g in opt.state_dict()["param_groups"]] == [0.01, 0.1]
        with pytest.raises(ValueError, match="with/without names"):
            lib.SGD([named[0], named[1][1]], lr=0.1)
        with pytest.raises(ValueError, match="with/without names"):
            lib.SGD([{"params": named[:2]}, {"params": [p for _, p in named[2:]]}], lr=0.1)


MAXIMIZE = [
    ("SGD", dict(lr=0.05)),
    ("SGD", dict(lr=0.05, momentum=0.9, weight_decay=0.1)),
    ("SGD", dict(lr=0.05, momentum=0.9, nesterov=True, weight_decay=0.01)),
    ("SGD", dict(lr=0.05, momentum=0.5, dampening=0.3)),
    ("Adam", dict(lr=0.01)),
    ("Adam", dict(lr=0.01, weight_decay=0.1, amsgrad=True)),
    ("AdamW", dict(lr=0.01, weight_decay=0.1)),
    ("AdamW", dict(lr=0.01, amsgrad=True)),
]


@pytest.mark.parametrize("name, kw", MAXIMIZE, ids=[f"{n}-{'-'.join(k)}" for n, k in MAXIMIZE])
def test_maximize_as_torch(name, kw):
    """Five steps ascending from the same weights with the same gradients: the weights as torch's."""
    s_model, t_model = _models()
    s_opt = getattr(optim, name)(s_model.parameters(), maximize=True, **kw)
    t_opt = getattr(torch.optim, name)(t_model.parameters(), maximize=True, **kw)
    _steps(s_model, t_model, s_opt, t_opt)
    assert s_opt.param_groups[0]["maximize"] is True


@pytest.mark.parametrize("name", ["Adam", "AdamW"])
def test_maximize_float32_through_the_compiled_adam_as_torch(name):
    """float32 parameters take seqlab.kernels.adam where Numba is present: the gradient is negated before it."""
    rng = np.random.default_rng(1)
    w = rng.standard_normal((64, 33)).astype(np.float32)
    grads = [rng.standard_normal(w.shape).astype(np.float32) for _ in range(5)]
    sp, tp = seqlab.tensor(w, requires_grad=True), torch.tensor(w, requires_grad=True)
    s_opt = getattr(optim, name)([sp], lr=0.01, weight_decay=0.05, maximize=True)
    t_opt = getattr(torch.optim, name)([tp], lr=0.01, weight_decay=0.05, maximize=True)
    for g in grads:
        sp.grad, tp.grad = g.copy(), torch.tensor(g)
        s_opt.step()
        t_opt.step()
    np.testing.assert_allclose(sp.numpy(), tp.detach().numpy(), rtol=2e-6, atol=2e-7)
    assert not np.allclose(sp.numpy(), w)


# ---- top-level functions ----------------------------------------------------------------------------------
def _both(*arrays, grad=True):
    """The arrays as seqlab and as torch tensors (float ones requiring grad)."""
    s = [seqlab.tensor(a, requires_grad=grad and a.dtype.kind == "f") for a in arrays]
    t = [torch.tensor(a, requires_grad=grad and a.dtype.kind == "f") for a in arrays]
    return s, t


def _check(fn_s, fn_t, *arrays, grad=True, rtol=1e-12):
    """Same values and dtype, and (where torch's output needs one) the same gradients of sum(out · w)."""
    s_in, t_in = _both(*arrays, grad=grad)
    s_out, t_out = fn_s(*s_in), fn_t(*t_in)
    assert s_out.dtype == np.dtype(str(t_out.dtype).replace("torch.", "")), (s_out.dtype, t_out.dtype)
    assert tuple(s_out.shape) == tuple(t_out.shape)
    np.testing.assert_allclose(s_out.numpy(), t_out.detach().numpy(), rtol=rtol, atol=0)
    assert s_out.requires_grad == t_out.requires_grad
    if t_out.requires_grad:
        w = np.random.default_rng(3).standard_normal(t_out.shape)
        (s_out * seqlab.tensor(w)).sum().backward()
        (t_out * torch.tensor(w)).sum().backward()
        for s, t in zip(s_in, t_in):
            if t.requires_grad and t.grad is None:  # none reached it (torch's norm p=0): zeros or none here
                assert s.grad is None or not s.grad.any()
            elif t.requires_grad:
                np.testing.assert_allclose(s.grad, t.grad.numpy(), rtol=rtol, atol=1e-14)


rng = np.random.default_rng(0)
A, B = rng.standard_normal((3, 4)), rng.standard_normal((3, 4)) + 3
ROW = rng.standard_normal(4)
I1, I2 = np.array([7, -7, 5, 0]), np.array([2, 2, -3, 4])


@pytest.mark.parametrize("name, kw, arrays", [
    ("add", {}, (A, B)), ("add", {"alpha": 2.5}, (A, ROW)), ("add", {"alpha": 3}, (I1, I2)),
    ("sub", {}, (A, B)), ("sub", {"alpha": -0.5}, (A, ROW)), ("subtract", {"alpha": 2}, (I1, I2)),
    ("mul", {}, (A, ROW)), ("multiply", {}, (I1, A[0])),
    ("div", {}, (A, B)), ("div", {}, (I1, I2)), ("divide", {}, (A, ROW)),
    ("div", {"rounding_mode": "floor"}, (A * 5, B)), ("div", {"rounding_mode": "trunc"}, (A * 5, B)),
    ("div", {"rounding_mode": "floor"}, (I1, I2)), ("div", {"rounding_mode": "trunc"}, (I1, I2)),
])
def test_binary_arithmetic(name, kw, arrays):
    _check(lambda a, b: getattr(seqlab, name)(a, b, **kw), lambda a, b: getattr(torch, name)(a, b, **kw), *arrays)


def test_arithmetic_with_a_number_and_errors():
    x = np.array([1.5, -2.0])
    for name in ("add", "sub", "mul", "div"):
        _check(lambda a: getattr(seqlab, name)(2, a), lambda a: getattr(torch, name)(2, a), x)
        _check(lambda a: getattr(seqlab, name)(a, 3), lambda a: getattr(torch, name)(a, 3), x)
    _check(lambda a: seqlab.div(a, 0.1, rounding_mode="floor"), lambda a: torch.div(a, 0.1, rounding_mode="floor"),
           np.array([1.0, -1.0, 0.3]))  # Python's floor division (1 // 0.1 is 9), not floor(1 / 0.1)
    with pytest.raises(RuntimeError):
        torch.add(torch.tensor([1]), torch.tensor([2]), alpha=0.5)
    with pytest.raises(TypeError, match="alpha"):
        seqlab.add(seqlab.tensor([1]), seqlab.tensor([2]), alpha=0.5)
    with pytest.raises(RuntimeError):
        torch.div(torch.ones(1), 2, rounding_mode="round")
    with pytest.raises(ValueError, match="rounding_mode"):
        seqlab.div(seqlab.ones(1), 2, rounding_mode="round")
    with pytest.raises(RuntimeError):
        torch.div(torch.tensor([1]), torch.tensor([0]), rounding_mode="trunc")
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        seqlab.div(seqlab.tensor([1]), seqlab.tensor([0]), rounding_mode="trunc")


@pytest.mark.parametrize("mode", ["floor", "trunc"])
def test_rounded_div_by_zero_has_torchs_values_and_zero_gradient(mode):
    """A float divisor of 0: ±inf / nan in the quotient, and still a gradient of exactly 0 (torch's), not nan."""
    _check(lambda a, b: seqlab.div(a, b, rounding_mode=mode), lambda a, b: torch.div(a, b, rounding_mode=mode),
           np.array([1.5, -2.0, 0.0, 3.0]), np.array([0.0, 0.0, 0.0, 2.0]))
    a = seqlab.tensor([1.5, -2.0], requires_grad=True)
    b = seqlab.tensor([0.0, 4.0], requires_grad=True)
    seqlab.div(a, b, rounding_mode=mode).sum().backward()
    assert a.grad.tolist() == [0.0, 0.0] and b.grad.tolist() == [0.0, 0.0]


M = rng.standard_normal((3, 4, 2))


@pytest.mark.parametrize("case", [
    ("neg", (), {}, (A,)), ("clone", (), {}, (A,)), ("t", (), {}, (A,)), ("t", (), {}, (ROW,)),
    ("rsqrt", (), {}, (B,)), ("reciprocal", (), {}, (B,)), ("reciprocal", (), {}, (I2,)), ("rsqrt", (), {}, (I2 ** 2,)),
    ("tan", (), {}, (A,)), ("tan", (), {}, (I1,)),
    ("std", (), {}, (M,)), ("std", (1,), {}, (M,)), ("std", ((0, 2),), {"correction": 0, "keepdim": True}, (M,)),
    ("std", (False,), {}, (M,)), ("var", (), {}, (M,)), ("var", (2, False, True), {}, (M,)),
    ("var", (), {"dim": 0, "correction": 2}, (M,)),
    ("norm", (), {}, (M,)), ("norm", (), {"p": 1, "dim": 1}, (M,)), ("norm", (3,), {"dim": (0, 2)}, (M,)),
    ("norm", (), {"p": float("inf"), "dim": -1, "keepdim": True}, (M,)), ("norm", (-float("inf"),), {}, (A,)),
    ("norm", ("fro",), {"dim": (1, 2)}, (M,)), ("norm", (0,), {}, (np.array([1.0, 0.0, -2.0]),)),
    ("all", (), {}, (I1,)), ("any", (1,), {}, (A > 1,)), ("all", (0,), {"keepdim": True}, (A > -5,)),
])
def test_unary(case):
    name, args, kw, arrays = case
    _check(lambda x: getattr(seqlab, name)(x, *args, **kw), lambda x: getattr(torch, name)(x, *args, **kw), *arrays,
           rtol=1e-6 if name == "tan" else 1e-12)  # tan: sin/cos, an ulp or two from torch's tan


def test_masked_fill_and_cosine_similarity():
    mask = A > 0.3
    _check(lambda x: seqlab.masked_fill(x, seqlab.tensor(mask), -1.0),
           lambda x: torch.masked_fill(x, torch.tensor(mask), -1.0), A)
    _check(lambda a, b: seqlab.cosine_similarity(a, b, dim=-1), lambda a, b: torch.cosine_similarity(a, b, dim=-1),
           A, B)
    _check(seqlab.cosine_similarity, torch.cosine_similarity, A, B)


@pytest.mark.parametrize("name", ["concat", "concatenate", "hstack", "vstack"])
@pytest.mark.parametrize("shapes", [[(3,), (2,)], [(2, 3), (2, 1)], [(1, 3), (2, 3)], [(), (2,)], [(4,), (4,)],
                                    [(2, 3, 2), (2, 1, 2)]])
def test_joining(name, shapes):
    arrays = [np.arange(np.prod(s), dtype=np.float64).reshape(s) + i for i, s in enumerate(shapes)]
    try:
        expected = getattr(torch, name)([torch.tensor(a) for a in arrays])
    except (RuntimeError, IndexError):
        with pytest.raises((ValueError, TypeError, IndexError)):
            getattr(seqlab, name)([seqlab.tensor(a) for a in arrays])
        return
    _check(lambda *xs: getattr(seqlab, name)(list(xs)), lambda *xs: getattr(torch, name)(list(xs)), *arrays)
    assert expected is not None


def test_isin():
    e, s = np.array([[1, 2], [3, 4]]), np.array([4, 1, 9])
    for kw in ({}, {"invert": True}, {"assume_unique": True}):
        _check(lambda a, b: seqlab.isin(a, b, **kw), lambda a, b: torch.isin(a, b, **kw), e, s)
    assert seqlab.isin(seqlab.tensor(e), 3).tolist() == torch.isin(torch.tensor(e), 3).tolist()
    r = seqlab.isin(2, seqlab.tensor(s))
    assert r.shape == () and r.item() is torch.isin(2, torch.tensor(s)).item()


@pytest.mark.parametrize("args", [(3, 3), (3, 4, 1), (4, 3, -1), (3, 3, -5), (0, 3), (5, 2, 7), (1, 1)])
def test_tril_triu_indices(args):
    for name in ("tril_indices", "triu_indices"):
        s, t = getattr(seqlab, name)(*args), getattr(torch, name)(*args)
        assert s.dtype == np.int64 and s.shape == tuple(t.shape), (name, args)
        np.testing.assert_array_equal(s.numpy(), t.numpy())
    assert seqlab.tril_indices(3, 3, dtype=seqlab.int32).dtype == np.int32


@pytest.mark.parametrize("shapes, dims", [
    ([(3, 4, 5), (4, 5, 2)], 2), ([(3, 4), (4, 2)], 1), ([(3, 4), (2, 5)], 0),
    ([(3, 4, 5), (5, 3, 2)], ([0, 2], [1, 0])), ([(3, 4, 5), (2, 4)], ([1], [1])), ([(2, 3), (3, 2)], [[1, 0], [0, 1]]),
])
def test_tensordot(shapes, dims):
    arrays = [rng.standard_normal(s) for s in shapes]
    _check(lambda a, b: seqlab.tensordot(a, b, dims), lambda a, b: torch.tensordot(a, b, dims), *arrays, rtol=1e-10)


def test_tensordot_errors_as_torch():
    for lib in (torch, seqlab):
        a, b = lib.ones(3, 4), lib.ones(5, 4)
        with pytest.raises((RuntimeError, ValueError)):
            lib.tensordot(a, b, 1)   # 4 against 5
        with pytest.raises((RuntimeError, ValueError)):
            lib.tensordot(a, b, -1)
        with pytest.raises(TypeError):
            lib.tensordot(a, b, (1, 1))  # a pair of ints, not of lists
        assert lib.tensordot(a, b, ([1], [1])).shape == (3, 5)


def test_rng_state_round_trip_as_torch():
    for lib in (torch, seqlab):
        lib.manual_seed(5)
        state = lib.get_rng_state()
        first = lib.randn(4).numpy().copy()
        lib.randn(3)
        lib.set_rng_state(state)
        np.testing.assert_array_equal(lib.randn(4).numpy(), first)
    json.dumps(seqlab.get_rng_state())  # plain data, no pickle needed
    with pytest.raises(TypeError, match="set_rng_state"):
        seqlab.set_rng_state(torch.get_rng_state())


# ---- PolynomialLR, MultiplicativeLR, ChainedScheduler, CyclicLR -------------------------------------------
def _optimizers(kind):
    s_model, t_model = _models()
    make = {"sgd": lambda lib, p: lib.SGD(p, lr=0.1, momentum=0.9),
            "adam": lambda lib, p: lib.Adam(p, lr=0.01, betas=(0.9, 0.99))}[kind]

    def groups(model):
        p = list(model.parameters())
        return [{"params": p[:2]}, {"params": p[2:], "lr": 0.5}]

    return make(optim, groups(s_model)), make(torch.optim, groups(t_model))


def _assert_same(s_opt, t_opt, s_sched, t_sched, where):
    np.testing.assert_allclose(s_sched.get_last_lr(), t_sched.get_last_lr(), rtol=1e-12, atol=0, err_msg=where)
    for sg, tg in zip(s_opt.param_groups, t_opt.param_groups):
        np.testing.assert_allclose(sg["lr"], tg["lr"], rtol=1e-12, atol=0, err_msg=where)
        for key in ("momentum", "betas"):
            if key in tg:
                np.testing.assert_allclose(sg[key], tg[key], rtol=1e-12, atol=0, err_msg=f"{where} {key}")


SCHEDULES = [
    ("polynomial", "sgd", lambda L, o: L.PolynomialLR(o, total_iters=20, power=2.0)),
    ("polynomial_default", "adam", lambda L, o: L.PolynomialLR(o)),
    ("multiplicative", "sgd", lambda L, o: L.MultiplicativeLR(o, lambda e: 0.95)),
    ("multiplicative_per_group", "adam", lambda L, o: L.MultiplicativeLR(o, [lambda e: 0.9, lambda e: 1 - e / 100])),
    ("chained", "sgd", lambda L, o: L.ChainedScheduler([L.ConstantLR(o, factor=0.1, total_iters=8),
                                                        L.ExponentialLR(o, gamma=0.9)])),
    ("chained_with_optimizer", "adam", lambda L, o: L.ChainedScheduler(
        [L.LinearLR(o, start_factor=0.2, total_iters=5), L.PolynomialLR(o, total_iters=25)], optimizer=o)),
    ("cyclic_triangular", "sgd", lambda L, o: L.CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=4)),
    ("cyclic_triangular2", "sgd", lambda L, o: L.CyclicLR(o, base_lr=[0.01, 0.02], max_lr=[0.1, 0.3],
                                                          step_size_up=3, step_size_down=5, mode="triangular2")),
    ("cyclic_exp_range_adam", "adam", lambda L, o: L.CyclicLR(o, 0.001, 0.01, step_size_up=5, mode="exp_range",
                                                              gamma=0.97, base_momentum=0.85, max_momentum=0.95)),
    ("cyclic_no_momentum", "sgd", lambda L, o: L.CyclicLR(o, 0.01, 0.05, step_size_up=6, cycle_momentum=False)),
    ("cyclic_scale_fn", "sgd", lambda L, o: L.CyclicLR(o, 0.01, 0.05, step_size_up=4,
                                                       scale_fn=lambda x: 0.5 ** x, scale_mode="iterations")),
]


@pytest.mark.parametrize("kind, make", [c[1:] for c in SCHEDULES], ids=[c[0] for c in SCHEDULES])
def test_more_schedulers_equal_torch_and_resume(kind, make):
    """30 steps with the lrs (and momentum or β1) as torch's at each; after 13 a fresh optimizer and scheduler
    load the JSON round trip of the state and go on as torch's unbroken run."""
    s_opt, t_opt = _optimizers(kind)
    s_sched, t_sched = make(S, s_opt), make(T, t_opt)
    _assert_same(s_opt, t_opt, s_sched, t_sched, "construction")
    for i in range(1, 31):
        s_opt.step()
        t_opt.step()
        s_sched.step()
        t_sched.step()
        _assert_same(s_opt, t_opt, s_sched, t_sched, f"step {i}")
        if i == 13:
            state = json.loads(json.dumps(s_sched.state_dict()))
            s_opt, _ = _optimizers(kind)
            s_sched = make(S, s_opt)
            s_sched.load_state_dict(state)
            _assert_same(s_opt, t_opt, s_sched, t_sched, "resumed")


def test_more_schedulers_errors_as_torch():
    for L, lib in ((S, optim), (T, torch.optim)):
        opt = lib.SGD(_models()[0 if lib is optim else 1].parameters(), lr=0.1)
        with pytest.raises(ValueError):
            L.CyclicLR(opt, 0.01, 0.1, mode="sawtooth")
        with pytest.raises(ValueError):
            L.MultiplicativeLR(opt, [lambda e: 1.0, lambda e: 1.0])
        with pytest.raises(TypeError):
            L.MultiplicativeLR(opt, 0.9)
        with pytest.raises(ValueError):
            L.ChainedScheduler([])
        with pytest.raises(ValueError):
            L.ChainedScheduler([L.ReduceLROnPlateau(opt)])
        adagrad = lib.Adagrad(_models()[0 if lib is optim else 1].parameters())
        with pytest.raises(ValueError):
            L.CyclicLR(adagrad, 0.01, 0.1)  # no momentum to cycle
        L.CyclicLR(adagrad, 0.01, 0.1, cycle_momentum=False)
