"""seqlab.autograd.functional (vjp, jvp, jacobian, hessian, vhp, hvp) and `autograd.grad(..., is_grads_batched=True)`,
held to torch's in float64: the same return structure (a Tensor or a tuple as the inputs / outputs are, nested tuples
for the jacobian of tuple outputs and the hessian of tuple inputs), shapes, values and `requires_grad`; with
create_graph=True the results differentiated again; torch's errors for strict mode and bad arguments; zeros where an
output does not depend on an input; small nn models (Linear + tanh, LSTM, MultiheadAttention) with torch's weights;
float32 stays float32."""
import numpy as np
import pytest
import torch
import torch.autograd.functional as TF
from torch.nn.attention import SDPBackend, sdpa_kernel

import seqlab
import seqlab.autograd.functional as AF
from seqlab import nn

RTOL, ATOL = 1e-10, 1e-12
RNG = np.random.default_rng(5)
X0, Y0 = RNG.standard_normal((2, 3)), RNG.standard_normal(3)


def _t(lib, a, requires_grad=False, dtype="float64"):
    return lib.tensor(np.asarray(a), dtype=getattr(lib, dtype), requires_grad=requires_grad)


def _same(got, want, rtol=RTOL, atol=ATOL, where="result"):
    """`got` (seqlab) has `want`'s (torch) structure, shapes, dtypes, requires_grad and values."""
    if isinstance(want, torch.Tensor):
        assert isinstance(got, seqlab.Tensor), f"{where}: a Tensor expected, got {type(got).__name__}"
        assert tuple(got.shape) == tuple(want.shape), where
        assert str(got.dtype) == str(want.dtype).replace("torch.", ""), where
        assert got.requires_grad == want.requires_grad, f"{where}: requires_grad"
        np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=rtol, atol=atol, err_msg=where)
        return
    assert isinstance(want, tuple) and isinstance(got, tuple), f"{where}: a tuple expected, got {type(got).__name__}"
    assert len(got) == len(want), where
    for i, (a, b) in enumerate(zip(got, want)):
        _same(a, b, rtol, atol, f"{where}[{i}]")


def _flat(res):
    return [res] if not isinstance(res, tuple) else [t for r in res for t in _flat(r)]


# ---- the functions --------------------------------------------------------------------------------------
def f_one(x):  # one tensor in, one out
    return (x.tanh() * x.exp()).sum(1)


def f_two(x, y):  # two in, one out
    return (x * y).sin() + y.exp()


def f_tuple_out(x, y):  # two in, two out
    return (x * y).tanh().sum(1), x.exp() * y.cos()


def s_one(x):  # scalars, for hessian / vhp / hvp
    return (x.sin() * x.exp()).sum()


def s_two(x, y):
    return ((x * y).tanh() ** 2).sum() + (y ** 3).sum()


FUNCS = {"one": (f_one, (X0,)), "two": (f_two, (X0, Y0)), "tuple_out": (f_tuple_out, (X0, Y0))}
SCALARS = {"one": (s_one, (X0,)), "two": (s_two, (X0, Y0))}


def _inputs(lib, arrays, as_tuple, requires_grad=False):
    xs = tuple(_t(lib, a, requires_grad) for a in arrays)
    return xs if as_tuple else xs[0]


def _vs(lib, shapes, as_tuple):
    rng = np.random.default_rng(11)
    vs = tuple(_t(lib, rng.standard_normal(s)) for s in shapes)
    return vs if as_tuple else vs[0]


def _out_shapes(f, arrays):
    out = f(*[torch.tensor(a) for a in arrays])
    return [tuple(o.shape) for o in (out if isinstance(out, tuple) else (out,))]


def _both(call):
    """call(lib, module) for seqlab (AF) and torch (TF)."""
    return call(seqlab, AF), call(torch, TF)


# ---- vjp / jvp / jacobian on single and tuple inputs, tuple outputs -----------------------------------
@pytest.mark.parametrize("name", FUNCS)
def test_vjp_jvp_jacobian_match_torch(name):
    f, arrays = FUNCS[name]
    as_tuple = len(arrays) > 1
    out_shapes = _out_shapes(f, arrays)
    out_tuple = len(out_shapes) > 1
    got, want = _both(lambda lib, M: M.vjp(f, _inputs(lib, arrays, as_tuple), _vs(lib, out_shapes, out_tuple)))
    _same(got, want)
    got, want = _both(lambda lib, M: M.jvp(f, _inputs(lib, arrays, as_tuple),
                                           _vs(lib, [np.shape(a) for a in arrays], as_tuple)))
    _same(got, want)
    for vectorize in (False, True):
        got, want = _both(lambda lib, M: M.jacobian(f, _inputs(lib, arrays, as_tuple), vectorize=vectorize))
        _same(got, want, where=f"jacobian vectorize={vectorize}")


def test_single_tensor_in_a_tuple_gives_tuples():
    got, want = _both(lambda lib, M: M.jacobian(f_one, (_t(lib, X0),)))
    _same(got, want)  # a tuple of one Tensor
    got, want = _both(lambda lib, M: M.hessian(s_one, (_t(lib, X0),)))
    _same(got, want)  # ((H,),)
    got, want = _both(lambda lib, M: M.vjp(lambda x: (f_one(x),), _t(lib, X0), (_t(lib, Y0[:2]),)))
    _same(got, want)  # output a tuple of one, vjp a Tensor


@pytest.mark.parametrize("name", SCALARS)
def test_hessian_vhp_hvp_match_torch(name):
    f, arrays = SCALARS[name]
    as_tuple = len(arrays) > 1
    shapes = [np.shape(a) for a in arrays]
    for vectorize in (False, True):
        got, want = _both(lambda lib, M: M.hessian(f, _inputs(lib, arrays, as_tuple), vectorize=vectorize))
        _same(got, want, where=f"hessian vectorize={vectorize}")
    for fn in ("vhp", "hvp", "vjp"):
        got, want = _both(lambda lib, M: getattr(M, fn)(f, _inputs(lib, arrays, as_tuple),
                                                        _vs(lib, shapes, as_tuple) if fn != "vjp" else None))
        _same(got, want, where=fn)


def test_v_may_be_none_for_one_element():
    s = np.array([0.7])
    for fn in ("jvp", "vhp", "hvp"):
        got, want = _both(lambda lib, M: getattr(M, fn)(lambda x: (x.sin() * x.exp()).sum(), _t(lib, s)))
        _same(got, want, where=fn)


# ---- create_graph: the results carry a graph, and differentiated again give torch's --------------------
def _differentiate_again(lib, res, xs):
    """∂(Σ w·r over every result r)/∂xs, w fixed random weights."""
    rng = np.random.default_rng(3)
    total = sum((r * _t(lib, rng.standard_normal(tuple(r.shape)))).sum() for r in _flat(res) if r.requires_grad)
    return lib.autograd.grad(total, xs, allow_unused=True, materialize_grads=True)


CREATE_GRAPH = [("vjp", "tuple_out"), ("vjp", "one"), ("jvp", "tuple_out"), ("jvp", "one"), ("jacobian", "tuple_out"),
                ("jacobian", "one"), ("jacobian_vec", "two"), ("hessian", "two"), ("hessian", "one"),
                ("hessian_vec", "two"), ("vhp", "two"), ("hvp", "two"), ("hvp", "one")]


@pytest.mark.parametrize("fn,name", CREATE_GRAPH)
def test_create_graph_then_differentiate_again(fn, name):
    scalar = fn in ("hessian", "hessian_vec", "vhp", "hvp")
    f, arrays = (SCALARS if scalar else FUNCS)[name]
    as_tuple = len(arrays) > 1
    out_shapes = _out_shapes(f, arrays)

    def call(lib, M):
        xs = _inputs(lib, arrays, True, requires_grad=True)
        inp = xs if as_tuple else xs[0]
        if fn in ("jacobian", "hessian", "jacobian_vec", "hessian_vec"):
            res = getattr(M, fn.replace("_vec", ""))(f, inp, create_graph=True, vectorize=fn.endswith("_vec"))
        else:
            v = (_vs(lib, out_shapes, len(out_shapes) > 1) if fn == "vjp"
                 else _vs(lib, [np.shape(a) for a in arrays], as_tuple))
            res = getattr(M, fn)(f, inp, v, create_graph=True)
        return res, _differentiate_again(lib, res, xs)

    (got, got2), (want, want2) = _both(call)
    _same(got, want)
    assert any(r.requires_grad for r in _flat(got))
    _same(got2, want2, rtol=1e-9, atol=1e-11, where="differentiated again")


def test_create_graph_with_inputs_that_need_no_grad():
    got, want = _both(lambda lib, M: M.vjp(f_two, (_t(lib, X0), _t(lib, Y0)), _t(lib, X0), create_graph=True))
    _same(got, want)  # the results require grad, through the inner copies of the inputs, as torch's


def test_v_that_requires_grad_is_differentiated_through_with_create_graph():
    def call(lib, M):
        x, v = _t(lib, X0), _t(lib, Y0[:2], requires_grad=True)
        _, r = M.vjp(f_one, x, v, create_graph=True)
        return lib.autograd.grad((r ** 2).sum(), v)
    got, want = _both(call)
    _same(got, want)


def test_results_detached_without_create_graph_even_from_inputs_that_require_grad():
    for fn in ("vjp", "jvp", "vhp", "hvp", "jacobian", "hessian"):
        f = s_two if fn in ("vhp", "hvp", "hessian", "vjp") else f_two
        args = () if fn in ("jacobian", "hessian", "vjp") else ((_t(seqlab, X0), _t(seqlab, Y0)),)
        res = getattr(AF, fn)(f, (_t(seqlab, X0, True), _t(seqlab, Y0, True)), *args)
        assert not any(r.requires_grad for r in _flat(res)), fn


# ---- zeros where an output does not depend on an input; strict mode's errors ----------------------------
def f_ignores_y(x, y):
    return x.exp() * 2


def s_linear(x, y):
    return (x * 3).sum() + y.sum()


def test_zeros_for_an_input_not_used():
    for fn, f, v in (("vjp", f_ignores_y, X0), ("jvp", f_ignores_y, (X0, Y0)), ("vhp", s_linear, (X0, Y0)),
                     ("hvp", s_linear, (X0, Y0))):
        def call(lib, M):
            vv = tuple(_t(lib, a) for a in v) if isinstance(v, tuple) else _t(lib, v)
            return getattr(M, fn)(f, (_t(lib, X0), _t(lib, Y0)), vv)
        _same(*_both(call), where=fn)
    for fn, f in (("jacobian", f_ignores_y), ("hessian", s_linear)):
        _same(*_both(lambda lib, M: getattr(M, fn)(f, (_t(lib, X0), _t(lib, Y0)))), where=fn)
        _same(*_both(lambda lib, M: getattr(M, fn)(f, (_t(lib, X0), _t(lib, Y0)), vectorize=True)), where=fn)


def test_outputs_that_need_no_grad_give_zeros():
    def const(x):
        return seqlab.ones(2, 2, dtype=seqlab.float64) if isinstance(x, seqlab.Tensor) else torch.ones(2, 2).double()
    _same(*_both(lambda lib, M: M.jacobian(const, _t(lib, Y0))))
    _same(*_both(lambda lib, M: M.vjp(const, _t(lib, Y0), _t(lib, np.ones((2, 2))))))


def _error(call):
    try:
        call()
    except Exception as e:  # noqa: BLE001
        return type(e), str(e)
    return None


STRICT = [
    ("vjp", lambda M, lib: M.vjp(f_ignores_y, (_t(lib, X0), _t(lib, Y0)), _t(lib, X0), strict=True)),
    ("vjp output", lambda M, lib: M.vjp(lambda x: x.detach() * 2, _t(lib, Y0), _t(lib, Y0), strict=True)),
    ("jvp", lambda M, lib: M.jvp(f_ignores_y, (_t(lib, X0), _t(lib, Y0)), (_t(lib, X0), _t(lib, Y0)),
                                 strict=True)),
    ("jacobian", lambda M, lib: M.jacobian(f_ignores_y, (_t(lib, X0), _t(lib, Y0)), strict=True)),
    ("jacobian linear create_graph", lambda M, lib: M.jacobian(lambda x: x * 2, _t(lib, Y0), strict=True,
                                                               create_graph=True)),
    ("jacobian vectorize", lambda M, lib: M.jacobian(f_one, _t(lib, X0), strict=True, vectorize=True)),
    ("hessian linear", lambda M, lib: M.hessian(s_linear, (_t(lib, X0), _t(lib, Y0)), strict=True)),
    ("vhp linear", lambda M, lib: M.vhp(s_linear, (_t(lib, X0), _t(lib, Y0)), (_t(lib, X0), _t(lib, Y0)),
                                        strict=True)),
    ("hvp linear", lambda M, lib: M.hvp(s_linear, (_t(lib, X0), _t(lib, Y0)), (_t(lib, X0), _t(lib, Y0)),
                                        strict=True)),
    ("vjp create_graph linear", lambda M, lib: M.vjp(lambda x: x * 2, _t(lib, Y0), _t(lib, Y0), strict=True,
                                                     create_graph=True)),
]


@pytest.mark.parametrize("name", [n for n, _ in STRICT])
def test_strict_errors_are_torchs(name):
    call = dict(STRICT)[name]
    got, want = _error(lambda: call(AF, seqlab)), _error(lambda: call(TF, torch))
    assert want is not None and got == want


BAD = [
    ("v needed (vjp)", lambda M, lib: M.vjp(f_one, _t(lib, X0))),
    ("v needed (jvp)", lambda M, lib: M.jvp(f_one, _t(lib, X0))),
    ("v needed (vhp)", lambda M, lib: M.vhp(s_two, (_t(lib, X0), _t(lib, Y0)))),
    ("v needed (hvp)", lambda M, lib: M.hvp(s_one, _t(lib, X0))),
    ("v too short", lambda M, lib: M.jvp(f_two, (_t(lib, X0), _t(lib, Y0)), (_t(lib, X0),))),
    ("v not one", lambda M, lib: M.vjp(f_one, _t(lib, X0), (_t(lib, Y0[:2]), _t(lib, Y0[:2])))),
    ("hessian not scalar", lambda M, lib: M.hessian(f_one, _t(lib, X0))),
    ("hessian tuple out", lambda M, lib: M.hessian(lambda x: (x.sum(),), _t(lib, X0))),
    ("vhp not scalar", lambda M, lib: M.vhp(f_one, _t(lib, X0), _t(lib, X0))),
    ("hvp tuple out", lambda M, lib: M.hvp(lambda x: (x.sum(),), _t(lib, X0), _t(lib, X0))),
    ("inputs not tensors", lambda M, lib: M.jacobian(f_two, (_t(lib, X0), 3.0))),
    ("input not a tensor", lambda M, lib: M.vjp(f_one, [X0])),
    ("output not a tensor", lambda M, lib: M.jacobian(lambda x: 1.0, _t(lib, X0))),
    ("bad strategy", lambda M, lib: M.jacobian(f_one, _t(lib, X0), strategy="sideways")),
    ("bad outer strategy", lambda M, lib: M.hessian(s_one, _t(lib, X0), outer_jacobian_strategy="sideways")),
]


def _no_lib_names(message):
    return message.replace("torch.", "").replace("seqlab.", "").replace("<class '", "").replace("'>", "")


@pytest.mark.parametrize("name", [n for n, _ in BAD])
def test_bad_arguments_raise_torchs_errors(name):
    call = dict(BAD)[name]
    got, want = _error(lambda: call(AF, seqlab)), _error(lambda: call(TF, torch))
    assert want is not None and got is not None
    assert got[0] is want[0] and _no_lib_names(got[1]) == _no_lib_names(want[1])


def test_wrong_v_size_is_refused():
    with pytest.raises(RuntimeError, match=r"Entry 1 in v has invalid size: should be \(3,\) but got \(2,\)"):
        AF.jvp(f_two, (_t(seqlab, X0), _t(seqlab, Y0)), (_t(seqlab, X0), _t(seqlab, Y0[:2])))
    with pytest.raises(RuntimeError, match=r"^v has invalid size: should be \(2,\) but got \(3,\)"):
        AF.vjp(f_one, _t(seqlab, X0), _t(seqlab, Y0))


def test_forward_mode_is_refused_in_one_line():
    for call in (lambda: AF.jacobian(f_one, _t(seqlab, X0), strategy="forward-mode", vectorize=True),
                 lambda: AF.jacobian(f_one, _t(seqlab, X0), strategy="forward-mode"),
                 lambda: AF.hessian(s_one, _t(seqlab, X0), outer_jacobian_strategy="forward-mode", vectorize=True)):
        with pytest.raises(NotImplementedError, match="forward-mode") as info:
            call()
        assert "\n" not in str(info.value) and "reverse-mode" in str(info.value)


# ---- small nn models, torch's weights ----------------------------------------------------------------------
def test_hessian_of_a_loss_through_linear_and_tanh():
    torch.manual_seed(0)
    theirs = torch.nn.Sequential(torch.nn.Linear(4, 5), torch.nn.Tanh(), torch.nn.Linear(5, 2)).double()
    ours = nn.Sequential(nn.Linear(4, 5), nn.Tanh(), nn.Linear(5, 2)).to(dtype=np.float64)
    ours.load_state_dict({k: v.detach().numpy() for k, v in theirs.state_dict().items()})
    x0, target = RNG.standard_normal((3, 4)), RNG.standard_normal((3, 2))

    def loss(lib, model):
        return lambda x: ((model(x) - _t(lib, target)) ** 2).mean()

    got, want = AF.hessian(loss(seqlab, ours), _t(seqlab, x0)), TF.hessian(loss(torch, theirs), _t(torch, x0))
    _same(got, want)
    v = RNG.standard_normal(x0.shape)
    _same(AF.hvp(loss(seqlab, ours), _t(seqlab, x0), _t(seqlab, v)),
          TF.hvp(loss(torch, theirs), _t(torch, x0), _t(torch, v)))
    assert all(p.grad is None for p in ours.parameters())  # nothing accumulated


def test_jacobian_of_an_lstm_output():
    torch.manual_seed(1)
    theirs = torch.nn.LSTM(3, 4, batch_first=True).double()
    ours = nn.LSTM(3, 4, batch_first=True).to(dtype=np.float64)
    ours.load_state_dict({k: v.detach().numpy() for k, v in theirs.state_dict().items()})
    x0 = RNG.standard_normal((2, 3, 3))

    def run(model):
        return lambda x: (model(x)[0], model(x)[1][1])  # the outputs and the last cell state

    got, want = AF.jacobian(run(ours), _t(seqlab, x0)), TF.jacobian(run(theirs), _t(torch, x0))
    _same(got, want)
    got, want = (AF.jacobian(run(ours), _t(seqlab, x0, True), create_graph=True),
                 TF.jacobian(run(theirs), _t(torch, x0, True), create_graph=True))
    _same(got, want)


def test_jacobian_of_multihead_attention():
    torch.manual_seed(2)
    theirs = torch.nn.MultiheadAttention(4, 2, batch_first=True).double()
    ours = nn.MultiheadAttention(4, 2).to(dtype=np.float64)
    ours.load_state_dict({k: v.detach().numpy() for k, v in theirs.state_dict().items()})
    q0, kv0 = RNG.standard_normal((1, 3, 4)), RNG.standard_normal((1, 2, 4))

    def attend(model):
        return lambda q, kv: model(q, kv, kv, need_weights=False)[0]

    got = AF.jacobian(attend(ours), (_t(seqlab, q0), _t(seqlab, kv0)))
    want = TF.jacobian(attend(theirs), (_t(torch, q0), _t(torch, kv0)))
    _same(got, want)
    got = AF.hessian(lambda q: (attend(ours)(q, q) ** 2).sum(), _t(seqlab, q0))
    with sdpa_kernel(SDPBackend.MATH):  # torch's fused CPU attention has no double backward
        want = TF.hessian(lambda q: (attend(theirs)(q, q) ** 2).sum(), _t(torch, q0))
    _same(got, want, rtol=1e-9, atol=1e-11)


def test_float32_stays_float32():
    for fn in ("vjp", "jvp", "vhp", "hvp", "jacobian", "hessian"):
        f = s_two if fn in ("vhp", "hvp", "hessian", "vjp") else f_two
        xs = (_t(seqlab, X0, dtype="float32"), _t(seqlab, Y0, dtype="float32"))
        args = () if fn in ("jacobian", "hessian", "vjp") else (xs,)
        res = getattr(AF, fn)(f, xs, *args)
        assert all(r.dtype == np.float32 for r in _flat(res)), fn
        want = getattr(TF, fn)(f, tuple(_t(torch, a, dtype="float32") for a in (X0, Y0)),
                               *(() if not args else (tuple(_t(torch, a, dtype="float32") for a in (X0, Y0)),)))
        _same(res, want, rtol=1e-5, atol=1e-6, where=fn)


def test_importable_as_torch_autograd_functional():
    import importlib

    from seqlab.autograd.functional import hessian
    assert seqlab.autograd.functional.hessian is hessian
    assert importlib.import_module("seqlab.autograd.functional") is AF
    assert set(AF.__all__) == set(TF.__all__)


# ---- autograd.grad(..., is_grads_batched=True) -------------------------------------------------------------
def _batched(lib, create_graph=False, **kw):
    x, y = _t(lib, X0, True), _t(lib, Y0, True)
    a, b = f_tuple_out(x, y)
    rng = np.random.default_rng(2)
    ga, gb = _t(lib, rng.standard_normal((4, 2))), _t(lib, rng.standard_normal((4, 2, 3)))
    res = lib.autograd.grad((a, b), (x, y), (ga, gb), is_grads_batched=True, create_graph=create_graph, **kw)
    return res, (x, y)


def test_is_grads_batched_matches_torch():
    (got, _), (want, _) = _batched(seqlab), _batched(torch)
    _same(got, want)
    assert got[0].shape == (4, 2, 3) and got[1].shape == (4, 3)


def test_is_grads_batched_rows_are_single_grads():
    x = _t(seqlab, Y0, True)
    out = x.exp() * x
    eye = np.eye(3)
    rows, = seqlab.autograd.grad(out, x, seqlab.tensor(eye), retain_graph=True, is_grads_batched=True)
    for i in range(3):
        row, = seqlab.autograd.grad(out, x, seqlab.tensor(eye[i]), retain_graph=True)
        np.testing.assert_allclose(rows.numpy()[i], row.numpy(), rtol=0, atol=0)


def test_is_grads_batched_with_create_graph_differentiates_again():
    def call(lib):
        res, xs = _batched(lib, create_graph=True)
        return res, _differentiate_again(lib, res, xs)
    (got, got2), (want, want2) = call(seqlab), call(torch)
    _same(got, want)
    _same(got2, want2, rtol=1e-9, atol=1e-11)


def test_is_grads_batched_through_grad_outputs_that_require_grad():
    g0 = RNG.standard_normal((2, 3))

    def call(lib):
        x, g = _t(lib, Y0, True), _t(lib, g0, True)
        r, = lib.autograd.grad(x.sin() * x, x, g, create_graph=True, is_grads_batched=True)
        return r, lib.autograd.grad((r ** 2).sum(), (x, g))
    _same(call(seqlab), call(torch))


def test_is_grads_batched_unused_inputs():
    def call(lib, **kw):
        x, y = _t(lib, Y0, True), _t(lib, X0, True)
        return lib.autograd.grad(x * 2, (x, y), _t(lib, np.eye(3)), is_grads_batched=True, **kw)
    _same(call(seqlab, allow_unused=True)[0], call(torch, allow_unused=True)[0])
    assert call(seqlab, allow_unused=True)[1] is None
    # materialize_grads: torch gives zeros of the input's own shape (no batch dimension)
    _same(call(seqlab, materialize_grads=True), call(torch, materialize_grads=True))
    with pytest.raises(RuntimeError, match="index 1 appears to not have been used"):
        call(seqlab)


def test_is_grads_batched_frees_the_graph_unless_retained():
    x = _t(seqlab, Y0, True)
    out = x.exp() * x
    seqlab.autograd.grad(out, x, seqlab.tensor(np.eye(3)), is_grads_batched=True, retain_graph=True)
    seqlab.autograd.grad(out, x, seqlab.tensor(np.eye(3)), is_grads_batched=True)
    with pytest.raises(RuntimeError):
        seqlab.autograd.grad(out, x, seqlab.tensor(np.eye(3)), is_grads_batched=True)


def test_is_grads_batched_bad_shapes():
    x = _t(seqlab, Y0, True)
    out = x * 2
    with pytest.raises(RuntimeError, match=r"If `is_grads_batched=True`, we interpret the first dimension.*"
                                           r"grad_output\[0\] has a shape of \(2,\) and output\[0\] has a shape of "
                                           r"\(3,\)"):
        seqlab.autograd.grad(out, x, seqlab.tensor(np.eye(2)), is_grads_batched=True, retain_graph=True)
    with pytest.raises(RuntimeError, match="grad_output\\[0\\] is None"):
        seqlab.autograd.grad(out.sum(), x, None, is_grads_batched=True, retain_graph=True)
    with pytest.raises(ValueError, match=r"same size in the batch dimension, got sizes \[3, 2\]"):
        seqlab.autograd.grad((out, out * 3), x, (seqlab.tensor(np.eye(3)), seqlab.tensor(np.ones((2, 3)))),
                             is_grads_batched=True, retain_graph=True)


def test_is_grads_batched_float32():
    x = _t(seqlab, Y0, True, dtype="float32")
    r, = seqlab.autograd.grad(x.exp(), x, seqlab.tensor(np.eye(3)), is_grads_batched=True)
    assert r.dtype == np.float32 and r.shape == (3, 3) and not r.requires_grad


def test_under_no_grad():
    """As torch, the functions record what they need inside no_grad; the results are the same."""
    with seqlab.no_grad():
        got = [AF.hessian(s_two, (_t(seqlab, X0), _t(seqlab, Y0))),
               AF.hvp(s_one, _t(seqlab, X0), _t(seqlab, Y0 * X0))]
        assert not seqlab.is_grad_enabled()
    with torch.no_grad():
        want = [TF.hessian(s_two, (_t(torch, X0), _t(torch, Y0))), TF.hvp(s_one, _t(torch, X0), _t(torch, Y0 * X0))]
    _same(tuple(got), tuple(want))
