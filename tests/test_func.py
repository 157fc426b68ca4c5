"""seqlab.func (torch.func without forward mode or batching rules) against torch.func, in float64: functional_call
(dicts, tuples of dicts, tied weights, strict, restoration even when the forward raises, buffers written back,
parametrized tensors), grad / grad_and_value (argnums, pytrees, has_aux, composition to third derivatives, a
gradient penalty reaching the parameters), vjp / jvp / linearize, jacrev / jacfwd / hessian of small functions and
of an MLP's loss w.r.t. its parameter dict, per-sample gradients (the torch.func tutorial's pattern, as a loop and
through vmap), vmap (in_dims / out_dims pytrees, nesting, randomness), stack_module_state, and torch's errors."""
import warnings

import numpy as np
import pytest
import torch
import torch.func as tf
import torch.nn as tnn

import seqlab
import seqlab.func as sf
from seqlab import functional as F
from seqlab import nn

# torch.func itself warns (torch.jit.script deprecated inside its transforms): not seqlab's concern
pytestmark = [pytest.mark.filterwarnings("ignore:.*torch.jit.script.*:DeprecationWarning"),
              pytest.mark.filterwarnings("ignore:Attempted to insert a get_attr Node:UserWarning")]

RTOL, ATOL = 1e-10, 1e-12
RNG = np.random.default_rng(11)


def _s(a, requires_grad=False):
    return seqlab.tensor(np.asarray(a, dtype=np.float64), requires_grad=requires_grad)


def _t(a, requires_grad=False):
    return torch.tensor(np.asarray(a, dtype=np.float64), requires_grad=requires_grad)


def _same(got, want, rtol=RTOL, atol=ATOL, where="result"):
    """`got` (seqlab) has `want`'s (torch) pytree structure, shapes and values."""
    if isinstance(want, torch.Tensor):
        assert isinstance(got, seqlab.Tensor), f"{where}: expected a Tensor, got {type(got).__name__}"
        assert tuple(got.shape) == tuple(want.shape), f"{where}: {got.shape} vs {tuple(want.shape)}"
        np.testing.assert_allclose(got.data, want.detach().numpy(), rtol=rtol, atol=atol, err_msg=where)
    elif isinstance(want, dict):
        assert isinstance(got, dict) and list(got) == list(want), f"{where}: keys {list(got)} vs {list(want)}"
        for k in want:
            _same(got[k], want[k], rtol, atol, f"{where}[{k!r}]")
    elif isinstance(want, (tuple, list)):
        assert type(got) is type(want) and len(got) == len(want), f"{where}: {type(got)} vs {type(want)}"
        for i, (g, w) in enumerate(zip(got, want)):
            _same(g, w, rtol, atol, f"{where}[{i}]")
    else:
        assert got == want, where


def _mlp_pair(sizes=(3, 5, 2)):
    t = tnn.Sequential(tnn.Linear(sizes[0], sizes[1]), tnn.Tanh(), tnn.Linear(sizes[1], sizes[2])).double()
    s = nn.Sequential(nn.Linear(sizes[0], sizes[1]), nn.Tanh(), nn.Linear(sizes[1], sizes[2]))
    s.to(dtype=np.float64)
    s.load_state_dict({k: v.numpy() for k, v in t.state_dict().items()})
    return s, t


def _params(module):
    """Detached parameters, as torch.func's tutorials pass them."""
    return {k: v.detach() for k, v in module.named_parameters()}


X, Y = RNG.standard_normal(4), RNG.standard_normal(4)


def f_lib(lib):
    return lambda x, y: (lib.sin(x) * y ** 2).sum() + (x * x).sum()


# ---- grad ----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("argnums", [0, 1, -1, (0, 1), (1, 0)])
def test_grad_argnums(argnums):
    got = sf.grad(f_lib(seqlab), argnums)(_s(X), _s(Y))
    _same(got, tf.grad(f_lib(torch), argnums)(_t(X), _t(Y)))
    assert not any(g.requires_grad for g in (got if isinstance(got, tuple) else (got,)))


def test_grad_of_pytree_argument_and_unused_leaf():
    def f(lib):
        return lambda p, x: (p["w"] * x).sum() + p["pair"][0].exp().sum() + 0 * p["pair"][1].sum()
    p_s = {"w": _s(X), "pair": (_s(Y), _s([1.0, 2.0]))}
    p_t = {"w": _t(X), "pair": (_t(Y), _t([1.0, 2.0]))}
    _same(sf.grad(f(seqlab))(p_s, _s(Y)), tf.grad(f(torch))(p_t, _t(Y)))
    # a leaf the output does not depend on at all: zeros, as torch's
    _same(sf.grad(lambda a, b: (a * 2).sum(), argnums=(0, 1))(_s(X), _s(Y)),
          tf.grad(lambda a, b: (a * 2).sum(), argnums=(0, 1))(_t(X), _t(Y)))


def test_grad_and_value_and_has_aux():
    def g(lib):
        return lambda x: ((x ** 3).sum(), {"sq": x * x, "n": x.sum()})
    gs, (vs, aux_s) = sf.grad_and_value(g(seqlab), has_aux=True)(_s(X))
    gt, (vt, aux_t) = tf.grad_and_value(g(torch), has_aux=True)(_t(X))
    _same((gs, vs, aux_s), (gt, vt, aux_t))
    assert not vs.requires_grad and not aux_s["sq"].requires_grad
    for lib, mk in ((torch, _t), (seqlab, _s)):  # aux holds tensors only, as torch's
        with pytest.raises(RuntimeError, match="Expected tensors, got unsupported type"):
            lib.func.grad(lambda x: (x.sum(), 3), has_aux=True)(mk(X))
    gs2, aux2 = sf.grad(g(seqlab), has_aux=True)(_s(X))
    _same(gs2, gt)
    assert isinstance(aux2, dict)
    _same(sf.grad_and_value(f_lib(seqlab))(_s(X), _s(Y)), tf.grad_and_value(f_lib(torch))(_t(X), _t(Y)))


def test_higher_order_grad():
    d2_s = sf.grad(sf.grad(lambda x: (x ** 4).sin()))(_s(0.7))
    d2_t = tf.grad(tf.grad(lambda x: (x ** 4).sin()))(_t(0.7))
    _same(d2_s, d2_t)
    d3_s = sf.grad(sf.grad(sf.grad(lambda x: x.exp() * x ** 3)))(_s(0.3))
    d3_t = tf.grad(tf.grad(tf.grad(lambda x: x.exp() * x ** 3)))(_t(0.3))
    _same(d3_s, d3_t)


def test_nested_grad_closure_no_perturbation_confusion():
    """The inner grad's result depends on the outer variable through a closure: d/dx of d/dy (x·y²) at y0."""
    y0 = RNG.standard_normal(3)

    def outer(lib, mk):
        return lambda x: (lib.func.grad(lambda y: (x * y ** 2).sum() * x.sum())(mk(y0)) ** 2).sum()
    _same(sf.grad(outer(seqlab, _s))(_s(X[:3])), tf.grad(outer(torch, _t))(_t(X[:3])))


def test_grad_under_no_grad_and_of_requires_grad_inputs():
    with seqlab.no_grad():
        g = sf.grad(f_lib(seqlab))(_s(X), _s(Y))
    _same(g, tf.grad(f_lib(torch))(_t(X), _t(Y)))
    assert not g.requires_grad
    # an input that requires grad outside: the gradient keeps a graph to it, as torch's
    xs, xt = _s(X, True), _t(X, True)
    gs, gt = sf.grad(f_lib(seqlab))(xs, _s(Y)), tf.grad(f_lib(torch))(xt, _t(Y))
    assert gs.requires_grad and gt.requires_grad
    (gs ** 2).sum().backward()
    (gt ** 2).sum().backward()
    np.testing.assert_allclose(xs.grad, xt.grad.numpy(), rtol=RTOL, atol=ATOL)


def test_gradient_penalty_reaches_module_parameters():
    s, t = _mlp_pair((3, 4, 1))
    x = RNG.standard_normal((5, 3))
    gs = sf.grad(lambda inp: s(inp).sum())(_s(x))
    gt = tf.grad(lambda inp: t(inp).sum())(_t(x))
    _same(gs, gt)
    ((gs.norm() - 1) ** 2).backward()
    ((gt.norm() - 1) ** 2).backward()
    for (k, p), (_, q) in zip(s.named_parameters(), t.named_parameters()):
        if q.grad is None:  # the last bias: the input gradient does not depend on it
            assert p.grad is None or not np.any(p.grad), k
        else:
            np.testing.assert_allclose(p.grad, q.grad.numpy(), rtol=1e-9, atol=1e-11, err_msg=k)


@pytest.mark.parametrize("case", ["vector", "float", "aux", "argnum_range", "argnum_dup", "argnum_empty",
                                  "argnum_list", "not_tensor_input"])
def test_grad_errors_as_torch(case):
    calls = {
        "vector": lambda lib, mk: lib.func.grad(lambda x: x * 2)(mk(X)),
        "float": lambda lib, mk: lib.func.grad(lambda x: 1.0)(mk(X)),
        "aux": lambda lib, mk: lib.func.grad(lambda x: x.sum(), has_aux=True)(mk(X)),
        "argnum_range": lambda lib, mk: lib.func.grad(lambda x, y: x.sum(), argnums=2)(mk(X), mk(Y)),
        "argnum_dup": lambda lib, mk: lib.func.grad(lambda x, y: x.sum(), argnums=(0, 0))(mk(X), mk(Y)),
        "argnum_empty": lambda lib, mk: lib.func.grad(lambda x, y: x.sum(), argnums=())(mk(X), mk(Y)),
        "argnum_list": lambda lib, mk: lib.func.grad(lambda x, y: x.sum(), argnums=[0])(mk(X), mk(Y)),
        "not_tensor_input": lambda lib, mk: lib.func.grad(lambda x: x[0])([1.0]),
    }
    with pytest.raises(Exception) as want:
        calls[case](torch, _t)
    with pytest.raises(type(want.value)) as got:
        calls[case](seqlab, _s)
    assert str(got.value) == str(want.value)


# ---- vjp, jvp, linearize -------------------------------------------------------------------------------------
def _two_out(lib):
    return lambda x, y: (x.sin() * y, {"s": (x * y).sum(), "c": x.cos()})


def test_vjp_pytree_outputs_called_twice():
    out_s, fn_s = sf.vjp(_two_out(seqlab), _s(X), _s(Y))
    out_t, fn_t = tf.vjp(_two_out(torch), _t(X), _t(Y))
    _same(out_s, out_t)
    for _ in range(2):
        ct = (RNG.standard_normal(4), {"s": RNG.standard_normal(()), "c": RNG.standard_normal(4)})
        cs = (_s(ct[0]), {"s": _s(ct[1]["s"]), "c": _s(ct[1]["c"])})
        ctt = (_t(ct[0]), {"s": _t(ct[1]["s"]), "c": _t(ct[1]["c"])})
        _same(fn_s(cs), fn_t(ctt))
    with pytest.raises(RuntimeError, match="pytree structure of cotangents"):
        fn_s(_s(X))
    out_s, fn_s, aux = sf.vjp(lambda x: (x * 3, x.sum()), _s(X), has_aux=True)
    _same(fn_s(_s(Y)), tf.vjp(lambda x: x * 3, _t(X))[1](_t(Y)))
    assert isinstance(aux, seqlab.Tensor) and not aux.requires_grad


def test_jvp_and_linearize():
    out_s, tan_s = sf.jvp(_two_out(seqlab), (_s(X), _s(Y)), (_s(Y), _s(X)))
    out_t, tan_t = tf.jvp(_two_out(torch), (_t(X), _t(Y)), (_t(Y), _t(X)))
    _same((out_s, tan_s), (out_t, tan_t))
    x0 = RNG.standard_normal((3, 2))
    o, jvp_fn = sf.linearize(lambda x: (x.exp() * x).sum(0), _s(x0))
    ot, jvp_ft = tf.linearize(lambda x: (x.exp() * x).sum(0), _t(x0))
    _same(o, ot)
    for _ in range(2):
        v = RNG.standard_normal((3, 2))
        _same(jvp_fn(_s(v)), jvp_ft(_t(v)))
    _, tan, aux = sf.jvp(lambda x: (x * x, x.sum()), (_s(X),), (_s(Y),), has_aux=True)
    _same(tan, _t(2 * X * Y))


def test_jvp_and_vjp_compose_with_grad():
    """Forward-over-reverse and a vjp whose cotangent is differentiated: each inside grad, as torch's."""
    v = RNG.standard_normal(4)

    def hvp_norm(lib, mk):
        return lambda x: (lib.func.jvp(lib.func.grad(lambda z: (z.sin() * z).sum()), (x,), (mk(v),))[1] ** 2).sum()
    _same(sf.grad(hvp_norm(seqlab, _s))(_s(X)), tf.grad(hvp_norm(torch, _t))(_t(X)))

    def vjp_in_cotangent(lib, mk):
        return lambda c: (lib.func.vjp(lambda z: z.exp() * z, mk(X))[1](c)[0] ** 2).sum()
    _same(sf.grad(vjp_in_cotangent(seqlab, _s))(_s(Y)), tf.grad(vjp_in_cotangent(torch, _t))(_t(Y)))


@pytest.mark.parametrize("case", ["not_tuple", "structure", "shape"])
def test_jvp_errors_as_torch(case):
    calls = {
        "not_tuple": lambda lib, mk: lib.func.jvp(lambda x: x, mk(X), mk(X)),
        "structure": lambda lib, mk: lib.func.jvp(lambda x: x, (mk(X),), [mk(X)]),
        "shape": lambda lib, mk: lib.func.jvp(lambda x: x, (mk(X),), (mk(Y[:2]),)),
    }
    with pytest.raises(Exception) as want:
        calls[case](torch, _t)
    with pytest.raises(type(want.value)) as got:
        calls[case](seqlab, _s)
    if case != "structure":  # the spec's printed form differs
        assert str(got.value) == str(want.value)


# ---- jacrev, jacfwd, hessian ---------------------------------------------------------------------------------
@pytest.mark.parametrize("jac", ["jacrev", "jacfwd"])
def test_jacobians_of_pytrees(jac):
    def f(lib):
        return lambda d, y: {"o": d["a"] * 2 * y, "p": (d["a"].sum() * y, d["b"].tanh())}
    d_s, d_t = {"a": _s(X), "b": _s(Y[:3])}, {"a": _t(X), "b": _t(Y[:3])}
    for argnums in (0, (0, 1)):
        _same(getattr(sf, jac)(f(seqlab), argnums)(d_s, _s(Y)), getattr(tf, jac)(f(torch), argnums)(d_t, _t(Y)))
    got, aux = getattr(sf, jac)(lambda x: (x.exp(), x.sum()), has_aux=True)(_s(X))
    want, aux_t = getattr(tf, jac)(lambda x: (x.exp(), x.sum()), has_aux=True)(_t(X))
    _same((got, aux), (want, aux_t))


def test_hessian_small_functions():
    def f(lib):
        return lambda x, y: (x.tanh() * (y.mT @ (y @ x))).sum() + (x ** 3).sum()
    x, y = RNG.standard_normal(3), RNG.standard_normal((2, 3))
    _same(sf.hessian(f(seqlab))(_s(x), _s(y)), tf.hessian(f(torch))(_t(x), _t(y)))
    _same(sf.hessian(f(seqlab), argnums=(0, 1))(_s(x), _s(y)), tf.hessian(f(torch), argnums=(0, 1))(_t(x), _t(y)))


def _loss(lib, module, functional_call):
    def loss(params, x, t):
        out = functional_call(module, params, (x,))
        return ((out - t) ** 2).mean()
    return loss


def test_jacrev_and_hessian_of_mlp_loss_wrt_params_dict():
    s, t = _mlp_pair((3, 4, 2))
    x, y = RNG.standard_normal((6, 3)), RNG.standard_normal((6, 2))
    ls, lt = _loss(seqlab, s, sf.functional_call), _loss(torch, t, tf.functional_call)
    ps, pt = _params(s), _params(t)
    _same(sf.jacrev(ls)(ps, _s(x), _s(y)), tf.jacrev(lt)(pt, _t(x), _t(y)), rtol=1e-9, atol=1e-11)
    _same(sf.hessian(ls)(ps, _s(x), _s(y)), tf.hessian(lt)(pt, _t(x), _t(y)), rtol=1e-8, atol=1e-10)
    assert all(p.grad is None for p in s.parameters())


def test_jacrev_chunk_size_and_jacfwd_randomness():
    with pytest.raises(ValueError, match="chunk_size"):
        sf.jacrev(lambda x: x, chunk_size=0)
    with pytest.raises(RuntimeError, match="Only allowed values for randomness"):
        sf.jacfwd(lambda x: x, randomness="maybe")
    with pytest.raises(RuntimeError, match="randomness error mode"):
        sf.jacfwd(lambda x: x * seqlab.rand(4, dtype=seqlab.float64))(_s(X))
    got = sf.jacfwd(lambda x: x * seqlab.rand(4, dtype=seqlab.float64), randomness="different")(_s(X))
    assert got.shape == (4, 4)


# ---- functional_call -----------------------------------------------------------------------------------------
def test_functional_call_values_gradients_and_restoration():
    s, t = _mlp_pair()
    before = {k: v.data.copy() for k, v in s.state_dict(keep_vars=True).items()}
    new = {k: RNG.standard_normal(v.shape) for k, v in s.state_dict().items()}
    ps = {k: _s(v, True) for k, v in new.items()}
    pt = {k: _t(v, True) for k, v in new.items()}
    x = RNG.standard_normal((5, 3))
    ys, yt = sf.functional_call(s, ps, _s(x)), tf.functional_call(t, pt, _t(x))
    _same(ys, yt)
    g = RNG.standard_normal(ys.shape)
    ys.backward(_s(g))
    yt.backward(_t(g))
    for k in new:
        np.testing.assert_allclose(ps[k].grad, pt[k].grad.numpy(), rtol=1e-10, atol=1e-12, err_msg=k)
    assert all(p.grad is None for p in s.parameters())
    for k, v in s.state_dict().items():
        np.testing.assert_array_equal(v, before[k])
    # partial dict: the rest are the module's own; kwargs and a tuple of dicts
    part_s = ({"0.weight": ps["0.weight"]}, {"2.bias": ps["2.bias"]})
    part_t = ({"0.weight": pt["0.weight"]}, {"2.bias": pt["2.bias"]})
    _same(sf.functional_call(s, part_s, (_s(x),)), tf.functional_call(t, part_t, (_t(x),)))


def test_functional_call_restores_when_forward_raises():
    s, _ = _mlp_pair()
    own = dict(s.named_parameters())
    with pytest.raises(ValueError):
        sf.functional_call(s, {"0.weight": _s(np.zeros((5, 3)))}, _s(np.zeros((2, 7))))  # wrong feature size
    assert all(p is own[k] for k, p in s.named_parameters())
    with pytest.raises(AttributeError):  # a path that does not exist: nothing left swapped
        sf.functional_call(s, {"0.weight": _s(np.zeros((5, 3))), "9.weight": _s(np.zeros(1))}, _s(np.zeros((2, 3))))
    assert all(p is own[k] for k, p in s.named_parameters())


class _Counter(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("count", seqlab.zeros((), dtype=seqlab.float64))
        self.w = nn.Parameter(seqlab.ones(3, dtype=seqlab.float64))

    def forward(self, x):
        self.count = self.count + 1
        return x * self.w + self.count


class _TCounter(tnn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("count", torch.zeros((), dtype=torch.float64))
        self.w = tnn.Parameter(torch.ones(3, dtype=torch.float64))

    def forward(self, x):
        self.count = self.count + 1
        return x * self.w + self.count


def test_functional_call_buffers_written_back_as_torch():
    s, t = _Counter(), _TCounter()
    ds, dt = {"count": _s(5.0)}, {"count": _t(5.0)}
    _same(sf.functional_call(s, ds, _s(X[:3])), tf.functional_call(t, dt, _t(X[:3])))
    _same(ds["count"], dt["count"])  # 6: the buffer the forward replaced comes back in the dict
    assert float(s.count.data) == 0.0 and float(t.count) == 0.0


class _Tied(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(3, 3, bias=False)
        self.b = nn.Linear(3, 3, bias=False)
        self.b.weight = self.a.weight

    def forward(self, x):
        return self.b(self.a(x))


class _TTied(tnn.Module):
    def __init__(self):
        super().__init__()
        self.a = tnn.Linear(3, 3, bias=False)
        self.b = tnn.Linear(3, 3, bias=False)
        self.b.weight = self.a.weight

    def forward(self, x):
        return self.b(self.a(x))


def test_functional_call_tied_weights_and_strict():
    s, t = _Tied(), _TTied().double()
    s.to(dtype=np.float64)
    s.a.weight.data[...] = t.a.weight.detach().numpy()
    w, x = RNG.standard_normal((3, 3)), RNG.standard_normal((2, 3))
    for tie in (True, False):
        _same(sf.functional_call(s, {"a.weight": _s(w)}, _s(x), tie_weights=tie),
              tf.functional_call(t, {"a.weight": _t(w)}, _t(x), tie_weights=tie))
    both_s, both_t = {"a.weight": _s(w), "b.weight": _s(w + 1)}, {"a.weight": _t(w), "b.weight": _t(w + 1)}
    with pytest.raises(ValueError) as want:
        tf.functional_call(t, both_t, _t(x))
    with pytest.raises(ValueError) as got:
        sf.functional_call(s, both_s, _s(x))
    assert str(got.value) == str(want.value)
    _same(sf.functional_call(s, both_s, _s(x), tie_weights=False),
          tf.functional_call(t, both_t, _t(x), tie_weights=False))
    for given in ({"a.weight": None}, {"c": None}):
        g_s = {k: _s(w) for k in given}
        g_t = {k: _t(w) for k in given}
        with pytest.raises(RuntimeError) as want:
            tf.functional_call(t, g_t, _t(x), tie_weights=False, strict=True)
        with pytest.raises(RuntimeError) as got:
            sf.functional_call(s, g_s, _s(x), tie_weights=False, strict=True)
        assert str(got.value).replace("_Tied", "_TTied") == str(want.value)


def test_functional_call_dict_errors_and_stateless_warning():
    s, _ = _mlp_pair()
    x = _s(np.zeros((1, 3)))
    with pytest.raises(ValueError, match="appeared in multiple dictionaries"):
        sf.functional_call(s, ({"0.bias": _s(np.zeros(5))}, {"0.bias": _s(np.zeros(5))}), x)
    with pytest.raises(ValueError, match="Expected all elements"):
        sf.functional_call(s, ({"0.bias": _s(np.zeros(5))}, 3), x)
    with pytest.raises(ValueError, match="to be a dict"):
        sf.functional_call(s, 3, x)
    with pytest.warns(FutureWarning, match="torch.func.functional_call"):
        out = nn.utils.stateless.functional_call(s, {"2.bias": _s(np.zeros(2))}, x)
    assert out.shape == (1, 2)


def test_functional_call_parametrized_original_and_plain_name():
    from seqlab.nn.utils import parametrize

    class Sym(nn.Module):
        def forward(self, X):
            return X.triu() + X.triu(1).mT

    lin = nn.Linear(3, 3)
    lin.to(dtype=np.float64)
    parametrize.register_parametrization(lin, "weight", Sym())
    w, x = RNG.standard_normal((3, 3)), RNG.standard_normal((2, 3))
    bias = lin.bias.data
    out = sf.functional_call(lin, {"parametrizations.weight.original": _s(w)}, _s(x))
    sym = np.triu(w) + np.triu(w, 1).T
    np.testing.assert_allclose(out.data, x @ sym.T + bias, rtol=1e-12)
    given = _s(w, True)
    out = sf.functional_call(lin, {"weight": given}, _s(x))  # torch's documented rule: the parametrization is off
    np.testing.assert_allclose(out.data, x @ w.T + bias, rtol=1e-12)
    out.sum().backward()
    np.testing.assert_allclose(given.grad, np.tile(x.sum(0), (3, 1)), rtol=1e-12)
    np.testing.assert_allclose(lin.weight.data, np.triu(lin.parametrizations.weight.original.data)
                               + np.triu(lin.parametrizations.weight.original.data, 1).T)


# ---- per-sample gradients (the torch.func tutorial's pattern) -------------------------------------------------
def test_per_sample_gradients_loop_and_vmap():
    s, t = _mlp_pair((3, 6, 4))
    x, y = RNG.standard_normal((5, 3)), RNG.integers(0, 4, 5)

    def loss_s(params, xb, yb):
        return F.cross_entropy(sf.functional_call(s, params, (xb[None],)), yb[None])

    def loss_t(params, xb, yb):
        return tnn.functional.cross_entropy(tf.functional_call(t, params, (xb[None],)), yb[None])
    ps, pt = _params(s), _params(t)
    want = tf.vmap(tf.grad(loss_t), in_dims=(None, 0, 0))(pt, _t(x), torch.tensor(y))
    loop = [sf.grad(loss_s)(ps, _s(x[i]), seqlab.tensor(y[i])) for i in range(5)]
    for k in want:
        np.testing.assert_allclose(np.stack([g[k].data for g in loop]), want[k].numpy(), rtol=1e-9, atol=1e-11)
    got = sf.vmap(sf.grad(loss_s), in_dims=(None, 0, 0))(ps, _s(x), seqlab.tensor(y))
    _same(got, want, rtol=1e-9, atol=1e-11)


# ---- vmap ------------------------------------------------------------------------------------------------------
def test_vmap_in_dims_out_dims_and_nesting():
    a, b = RNG.standard_normal((2, 3, 4)), RNG.standard_normal((4, 3))
    cases = [
        (lambda lib: lambda x, y: x @ y, dict(in_dims=(1, None)), (a, b)),
        (lambda lib: lambda x, y: (x * y).sum(-1), dict(in_dims=(2, 0)), (a, b)),
        (lambda lib: lambda x, y: (x.sum(0), y), dict(in_dims=(0, None), out_dims=(1, None)), (a, b)),
        (lambda lib: lambda d: {"m": d["x"].mean(), "s": d["x"] * 2}, dict(in_dims=({"x": 1},)), ({"x": a},)),
    ]
    for mk, kw, args in cases:
        s_args = [({k: _s(v) for k, v in u.items()} if isinstance(u, dict) else _s(u)) for u in args]
        t_args = [({k: _t(v) for k, v in u.items()} if isinstance(u, dict) else _t(u)) for u in args]
        _same(sf.vmap(mk(seqlab), **kw)(*s_args), tf.vmap(mk(torch), **kw)(*t_args))
    nested_s = sf.vmap(sf.vmap(lambda x, y: (x * y).sum(), in_dims=(0, None)), in_dims=(None, 0))(_s(a[0]), _s(b.T))
    nested_t = tf.vmap(tf.vmap(lambda x, y: (x * y).sum(), in_dims=(0, None)), in_dims=(None, 0))(_t(a[0]), _t(b.T))
    _same(nested_s, nested_t)
    # gradients through vmap (select and stack are recorded)
    xs, xt = _s(a, True), _t(a, True)
    sf.vmap(lambda x: x.tanh().sum())(xs).sum().backward()
    tf.vmap(lambda x: x.tanh().sum())(xt).sum().backward()
    np.testing.assert_allclose(xs.grad, xt.grad.numpy(), rtol=RTOL, atol=ATOL)


def test_vmap_randomness():
    x = _s(np.zeros((3, 2)))
    with pytest.raises(RuntimeError, match="randomness error mode"):
        sf.vmap(lambda v: v + seqlab.rand(2, dtype=seqlab.float64))(x)
    same = sf.vmap(lambda v: v + seqlab.rand(2, dtype=seqlab.float64), randomness="same")(x)
    assert np.all(same.data == same.data[0])
    diff = sf.vmap(lambda v: v + seqlab.rand(2, dtype=seqlab.float64), randomness="different")(x)
    assert not np.all(diff.data == diff.data[0])


@pytest.mark.parametrize("case", ["in_dims_list", "in_dims_structure", "non_tensor", "dim_range", "sizes",
                                  "no_tensor", "int_output", "out_none_batched"])
def test_vmap_errors_as_torch(case):
    calls = {
        "in_dims_list": lambda lib, mk: lib.func.vmap(lambda x: x, in_dims=[0])(mk(np.zeros((2, 3)))),
        "in_dims_structure": lambda lib, mk: lib.func.vmap(lambda x: x, in_dims=(0, 1))(mk(np.zeros((2, 3)))),
        "non_tensor": lambda lib, mk: lib.func.vmap(lambda x, y: x, in_dims=(0, 0))(mk(np.zeros((2, 3))), 3.0),
        "dim_range": lambda lib, mk: lib.func.vmap(lambda x: x, in_dims=2)(mk(np.zeros((2, 3)))),
        "sizes": lambda lib, mk: lib.func.vmap(lambda x, y: x)(mk(np.zeros((2, 3))), mk(np.zeros((3, 3)))),
        "no_tensor": lambda lib, mk: lib.func.vmap(lambda x: x, in_dims=None)(mk(np.zeros((2, 3)))),
        "int_output": lambda lib, mk: lib.func.vmap(lambda x: (x.sum(), 3))(mk(np.zeros((2, 3)))),
        "out_none_batched": lambda lib, mk: lib.func.vmap(lambda x: x.sum(), out_dims=None)(mk(RNG.random((2, 3)))),
    }
    with pytest.raises(Exception) as want:
        calls[case](torch, _t)
    with pytest.raises(type(want.value)) as got:
        calls[case](seqlab, _s)
    if case not in ("in_dims_structure", "no_tensor"):  # torch prints its TreeSpec / a different first check
        assert str(got.value) == str(want.value)


def test_stack_module_state():
    models_s, models_t = zip(*[_mlp_pair((2, 3, 1)) for _ in range(3)])
    ps, bs = sf.stack_module_state(list(models_s))
    pt, bt = tf.stack_module_state(list(models_t))
    _same((ps, bs), (pt, bt))
    assert all(v.requires_grad and v.is_leaf for v in ps.values())
    x = RNG.standard_normal((4, 2))
    out_s = sf.vmap(lambda p, xx: sf.functional_call(models_s[0], p, (xx,)), in_dims=(0, None))(ps, _s(x))
    out_t = tf.vmap(lambda p, xx: tf.functional_call(models_t[0], p, (xx,)), in_dims=(0, None))(pt, _t(x))
    _same(out_s, out_t)


def test_seqlab_func_is_exposed():
    assert seqlab.func is sf and "func" in seqlab.__all__
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sf.functional_call(nn.Linear(2, 2), {}, seqlab.zeros(1, 2))  # the current API does not warn
