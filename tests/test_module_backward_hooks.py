"""Module.register_full_backward_hook / _pre_hook, forward hooks with_kwargs and always_call, get_parameter /
get_buffer and nn.init.eye_ / dirac_, each run beside torch on the same weights and compared by value."""
import warnings

import numpy as np
import pytest
import torch

import seqlab
from seqlab import nn

# torch warns when a full backward hook fires for a module none of whose inputs requires grad
pytestmark = pytest.mark.filterwarnings("ignore:Full backward hook is firing")

RNG = np.random.default_rng(0)
X23 = RNG.standard_normal((2, 3))
X234 = RNG.standard_normal((2, 3, 4))
K234 = RNG.standard_normal((2, 3, 4))
V234 = RNG.standard_normal((2, 3, 4))


def _leaf(lib, a, requires_grad=True):
    return lib.tensor(a, dtype=lib.float64, requires_grad=requires_grad)


def _np(g):
    """A gradient (a torch or seqlab Tensor, seqlab's .grad array, or None) as an array (or None)."""
    if g is None:
        return None
    return g.detach().numpy().copy() if isinstance(g, torch.Tensor) else np.array(g, copy=True)


def _pair(make_torch, make_seqlab):
    """The same module in both libraries, float64, seqlab's weights copied from torch's."""
    torch.manual_seed(0)
    t = make_torch().double()
    s = make_seqlab().double()
    s.load_state_dict(t.state_dict())
    return t, s


def _same(a, b):
    """Two logs of what hooks saw: the same names in the same order, the same gradients (None where None)."""
    assert len(a) == len(b)
    for ea, eb in zip(a, b):
        assert ea[0] == eb[0]
        for ga, gb in zip(ea[1:], eb[1:]):
            assert len(ga) == len(gb)
            for x, y in zip(ga, gb):
                assert (x is None) == (y is None)
                if x is not None:
                    np.testing.assert_allclose(x, y, rtol=1e-10, atol=1e-12)


def _record(log, name):
    """A full backward hook and a pre-hook that log (name, grad_input, grad_output) / (name, grad_output)."""
    def hook(mod, grad_input, grad_output):
        log.append((name, [_np(g) for g in grad_input], [_np(g) for g in grad_output]))

    def pre(mod, grad_output):
        log.append((name + " pre", [_np(g) for g in grad_output]))
    return hook, pre


def _hook_both(mod, log, name) -> None:
    """`_record`'s full backward hook and pre-hook, registered on `mod`."""
    hook, pre = _record(log, name)
    mod.register_full_backward_hook(hook)
    mod.register_full_backward_pre_hook(pre)


def _both(t_mod, s_mod, run):
    """run(lib, module, log) in each library; returns the two logs and what run returned."""
    out = []
    for lib, mod in ((torch, t_mod), (seqlab, s_mod)):
        log = []
        out.append((log, run(lib, mod, log)))
    return out


# ---- full backward hooks ----------------------------------------------------------------------------------------
def test_linear_hook_sees_torchs_grad_input_and_grad_output():
    t, s = _pair(lambda: torch.nn.Linear(3, 2), lambda: nn.Linear(3, 2))

    def run(lib, mod, log):
        _hook_both(mod, log, "lin")
        x = _leaf(lib, X23)
        (mod(x).tanh() ** 2).sum().backward()
        return _np(x.grad), _np(mod.weight.grad)

    (t_log, t_grads), (s_log, s_grads) = _both(t, s, run)
    assert [e[0] for e in s_log] == ["lin pre", "lin"]
    _same(t_log, s_log)
    assert np.abs(s_log[1][1][0]).sum() > 0                      # a real gradient, not zeros
    np.testing.assert_allclose(s_log[1][1][0], s_grads[0])       # grad_input is what x.grad got
    for a, b in zip(t_grads, s_grads):
        np.testing.assert_allclose(a, b, rtol=1e-10)


@pytest.mark.parametrize("x_needs_grad", [True, False])
def test_sequential_hooks_fire_in_torchs_order(x_needs_grad):
    """Hooks on the container and on each layer, in torch's order: the outer pre-hook first and the outer
    hook last; when the input needs no grad, the container and the first layer see grad_input (None,), and
    the container's hook fires as soon as its grad_output is in (torch's, since no input stop will come)."""
    t, s = _pair(lambda: torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 2)),
                 lambda: nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2)))

    def run(lib, mod, log):
        for name, m in [("seq", mod), ("0", mod[0]), ("2", mod[2])]:
            _hook_both(m, log, name)
        (mod(_leaf(lib, X23, requires_grad=x_needs_grad)) ** 2).sum().backward()
        return _np(mod[0].weight.grad)

    (t_log, t_w), (s_log, s_w) = _both(t, s, run)
    names = [e[0] for e in s_log]
    if x_needs_grad:
        assert names == ["seq pre", "2 pre", "2", "0 pre", "0", "seq"]
        np.testing.assert_allclose(s_log[4][1][0], s_log[5][1][0])  # the container's input is the layer's
    else:
        assert names == ["seq pre", "seq", "2 pre", "2", "0 pre", "0"]
        assert s_log[1][1] == [None] and s_log[5][1] == [None]
    assert names == [e[0] for e in t_log]
    _same(t_log, s_log)
    np.testing.assert_allclose(s_w, t_w, rtol=1e-10)


class _TorchTwo(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.linspace(0.5, 1.5, 6, dtype=torch.float64).reshape(2, 3))

    def forward(self, a, scale, b):
        return (a * b).sin() * scale * self.w


class _SeqlabTwo(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(np.linspace(0.5, 1.5, 6).reshape(2, 3))

    def forward(self, a, scale, b):
        return (a * b).sin() * scale * self.w


@pytest.mark.parametrize("needs", [(True, False), (False, True), (True, True), (False, False)])
def test_two_inputs_and_a_number(needs):
    """An entry per positional argument: None for the number; a Tensor input that needs no grad gets torch's
    zeros when another input needs one; all None when none needs one (then the hook fires from the outputs)."""
    def run(lib, mod, log):
        _hook_both(mod, log, "two")
        a, b = _leaf(lib, X23, needs[0]), _leaf(lib, X23[::-1].copy(), needs[1])
        (mod(a, 3.0, b) ** 2).sum().backward()                  # the parameter w: a graph either way
        return [_np(a.grad), _np(b.grad), _np(mod.w.grad)]

    (t_log, t_grads), (s_log, s_grads) = _both(_TorchTwo(), _SeqlabTwo(), run)
    assert [e[0] for e in s_log] == ["two pre", "two"]
    assert s_log[1][1][1] is None                               # the number
    if needs == (False, False):
        assert s_log[1][1] == [None, None, None]
    else:
        assert all(g is not None for g in s_log[1][1][::2])
    _same(t_log, s_log)
    for a, b in zip(t_grads, s_grads):
        assert (a is None) == (b is None)
        if a is not None:
            np.testing.assert_allclose(a, b, rtol=1e-10)


def _mha_pair():
    return _pair(lambda: torch.nn.MultiheadAttention(4, 2, batch_first=True),
                 lambda: nn.MultiheadAttention(4, 2, batch_first=True))


@pytest.mark.parametrize("same", [True, False])
def test_multihead_attention_three_inputs_and_a_tuple_output(same):
    """q = k = v one tensor: still three entries, each the gradient through that argument only; the output
    (out, weights) with weights unused: grad_output (g, None)."""
    t, s = _mha_pair()

    def run(lib, mod, log):
        _hook_both(mod, log, "mha")
        q = _leaf(lib, X234)
        k, v = (q, q) if same else (_leaf(lib, K234), _leaf(lib, V234))
        out, weights = mod(q, k, v)
        (out ** 2).sum().backward()
        return [_np(t.grad) for t in (q, k, v)]

    (t_log, t_grads), (s_log, s_grads) = _both(t, s, run)
    assert [e[0] for e in s_log] == ["mha pre", "mha"]
    assert len(s_log[1][1]) == 3 and s_log[1][2][1] is None
    _same(t_log, s_log)
    if same:  # q's .grad is the sum of the three entries
        np.testing.assert_allclose(sum(s_log[1][1]), s_grads[0], rtol=1e-10)
        assert not np.allclose(s_log[1][1][0], s_log[1][1][1])
    for a, b in zip(t_grads, s_grads):
        np.testing.assert_allclose(a, b, rtol=1e-10)


def test_grad_input_is_this_calls_gradient_only():
    """x used by the module and elsewhere: grad_input holds only what came through the module."""
    t, s = _pair(lambda: torch.nn.Linear(3, 3), lambda: nn.Linear(3, 3))

    def run(lib, mod, log):
        mod.register_full_backward_hook(_record(log, "lin")[0])
        x = _leaf(lib, X23)
        (mod(x).sin().sum() + (x ** 3).sum()).backward()
        return _np(x.grad)

    (t_log, t_grad), (s_log, s_grad) = _both(t, s, run)
    _same(t_log, s_log)
    assert not np.allclose(s_log[0][1][0], s_grad)
    np.testing.assert_allclose(s_grad, t_grad, rtol=1e-10)


@pytest.mark.parametrize("returns", [True, False])
def test_a_returned_grad_input_is_what_flows_on(returns):
    """A returned grad_input replaces what reaches the inputs (x.grad changes as torch's); the grad_input a hook
    kept stays as it saw it while the engine adds y's other gradient."""
    def run(lib, mod, log):
        kept = []

        def hook(mod, grad_input, grad_output):
            kept.append(grad_input[0])
            return (grad_input[0] * 2 + 1,) if returns else None
        mod.register_full_backward_hook(hook)
        x = _leaf(lib, X23)
        y = x * 1.5
        (mod(y).tanh().sum() + y.sum()).backward()
        return _np(x.grad), _np(kept[0])

    t, s = _pair(lambda: torch.nn.Linear(3, 2), lambda: nn.Linear(3, 2))
    (_, (t_grad, t_kept)), (_, (s_grad, s_kept)) = _both(t, s, run)
    np.testing.assert_allclose(s_grad, t_grad, rtol=1e-10)
    np.testing.assert_allclose(s_kept, t_kept, rtol=1e-10)
    assert np.allclose(s_grad, 1.5 * (s_kept + 1)) != returns     # the plain gradient unless replaced


def test_a_pre_hook_scales_grad_output():
    t, s = _pair(lambda: torch.nn.Linear(3, 2), lambda: nn.Linear(3, 2))

    def run(lib, mod, log):
        mod.register_full_backward_pre_hook(lambda m, go: (go[0] * 3,))
        mod.register_full_backward_hook(_record(log, "lin")[0])
        x = _leaf(lib, X23)
        (mod(x) ** 2).sum().backward()
        return _np(x.grad), _np(mod.weight.grad), _np(mod.bias.grad)

    (t_log, t_grads), (s_log, s_grads) = _both(t, s, run)
    _same(t_log, s_log)
    for a, b in zip(t_grads, s_grads):
        np.testing.assert_allclose(a, b, rtol=1e-10)
    _, s2 = _pair(lambda: torch.nn.Linear(3, 2), lambda: nn.Linear(3, 2))
    (s2(_leaf(seqlab, X23)) ** 2).sum().backward()
    np.testing.assert_allclose(s_grads[1], 3 * s2.weight.grad, rtol=1e-10)


def test_hook_errors_as_torchs():
    """A hook returning the wrong number of gradients: torch's RuntimeError; a wrong shape: a RuntimeError
    (torch's words are its own; seqlab's name the two shapes)."""
    count = "invalid number of grad_input, got 2, but expected 1"
    for bad, words in (((lambda m, gi, go: (gi[0], gi[0])), {torch: count, seqlab: count}),
                       ((lambda m, gi, go: (gi[0][:1],)), {torch: "changed the size of value",
                                                           seqlab: r"shape \(1, 3\) for a tensor of shape \(2, 3\)"})):
        for lib, mod in ((torch, torch.nn.Linear(3, 2)), (seqlab, nn.Linear(3, 2))):
            mod.register_full_backward_hook(bad)
            y = mod(lib.tensor(X23.astype(np.float32), requires_grad=True)).sum()
            with pytest.raises(RuntimeError, match=words[lib]):
                y.backward()
    for lib, mod in ((torch, torch.nn.Linear(3, 2)), (seqlab, nn.Linear(3, 2))):
        mod.register_full_backward_pre_hook(lambda m, go: (go[0], go[0]))
        y = mod(lib.tensor(X23.astype(np.float32), requires_grad=True)).sum()
        with pytest.raises(RuntimeError, match="invalid number of grad_output, got 2, but expected 1"):
            y.backward()


def test_handle_remove_and_prepend():
    t, s = _pair(lambda: torch.nn.Linear(3, 2), lambda: nn.Linear(3, 2))

    def run(lib, mod, log):
        first = mod.register_full_backward_hook(lambda m, gi, go: log.append("a"))
        mod.register_full_backward_hook(lambda m, gi, go: log.append("b"))
        mod.register_full_backward_hook(lambda m, gi, go: log.append("c"), prepend=True)
        pre = mod.register_full_backward_pre_hook(lambda m, go: log.append("pre"))
        mod(_leaf(lib, X23)).sum().backward()
        first.remove()
        pre.remove()
        mod(_leaf(lib, X23)).sum().backward()
        return None

    (t_log, _), (s_log, _) = _both(t, s, run)
    assert s_log == t_log == ["pre", "c", "a", "b", "c", "b"]


def test_a_module_called_twice_fires_twice_with_each_calls_gradients():
    t, s = _pair(lambda: torch.nn.Linear(3, 3), lambda: nn.Linear(3, 3))

    def run(lib, mod, log):
        _hook_both(mod, log, "lin")
        x = _leaf(lib, X23)
        y = mod(mod(x).tanh()) ** 2
        y.sum().backward(retain_graph=True)
        (y * 2).sum().backward()                  # the retained graph: the hooks run again, freshly
        return _np(x.grad)

    (t_log, t_grad), (s_log, s_grad) = _both(t, s, run)
    assert [e[0] for e in s_log] == ["lin pre", "lin", "lin pre", "lin"] * 2
    assert not np.allclose(s_log[1][1][0], s_log[3][1][0])
    _same(t_log, s_log)
    np.testing.assert_allclose(s_grad, t_grad, rtol=1e-10)


def test_no_hook_without_a_graph():
    """A forward under no_grad records no stop: the hooks do not run (in torch neither), even when a later
    graph uses the output."""
    t, s = _pair(lambda: torch.nn.Linear(3, 2), lambda: nn.Linear(3, 2))

    def run(lib, mod, log):
        _hook_both(mod, log, "lin")
        x = _leaf(lib, X23)
        with lib.no_grad():
            y = mod(x)
        (y * x[:, :2]).sum().backward()
        return len(log)

    (t_log, t_n), (s_log, s_n) = _both(t, s, run)
    assert s_n == t_n == 0


def test_hooks_under_autograd_grad_with_create_graph():
    """autograd.grad(create_graph=True): the hooks see the first-order gradients, and what a hook returns
    is differentiated again, as torch's."""
    t, s = _pair(lambda: torch.nn.Linear(3, 2), lambda: nn.Linear(3, 2))

    def run(lib, mod, log):
        mod.register_full_backward_hook(lambda m, gi, go: (gi[0] * gi[0],))
        x = _leaf(lib, X23)
        g, = lib.autograd.grad((mod(x).tanh() ** 2).sum(), x, create_graph=True)
        gg, = lib.autograd.grad(g.sum(), x)
        return _np(g), _np(gg)

    (_, t_out), (_, s_out) = _both(t, s, run)
    for a, b in zip(t_out, s_out):
        np.testing.assert_allclose(a, b, rtol=1e-10)


# ---- forward hooks: with_kwargs, always_call -------------------------------------------------------------------
def test_forward_hooks_with_kwargs():
    t, s = _mha_pair()

    def run(lib, mod, log):
        def pre(m, args, kwargs):
            log.append(("pre", len(args), sorted(kwargs)))
            return args, {**kwargs, "need_weights": True}     # the caller asked for none

        def hook(m, args, kwargs, out):
            log.append(("hook", len(args), sorted(kwargs)))
            return out[0] * 2, out[1]
        mod.register_forward_pre_hook(pre, with_kwargs=True)
        mod.register_forward_hook(hook, with_kwargs=True)
        mod.register_forward_hook(lambda m, args, out: log.append(("plain", len(args))))
        x = _leaf(lib, X234, requires_grad=False)
        out, weights = mod(x, x, x, need_weights=False)
        return _np(out), _np(weights)

    (t_log, t_out), (s_log, s_out) = _both(t, s, run)
    assert s_log == t_log == [("pre", 3, ["need_weights"]), ("hook", 3, ["need_weights"]), ("plain", 3)]
    assert s_out[1] is not None
    for a, b in zip(t_out, s_out):
        np.testing.assert_allclose(a, b, rtol=1e-10)


def test_a_with_kwargs_pre_hook_must_return_args_and_kwargs():
    for lib, mod in ((torch, torch.nn.Linear(3, 2)), (seqlab, nn.Linear(3, 2))):
        mod.register_forward_pre_hook(lambda m, args, kwargs: args, with_kwargs=True)
        with pytest.raises(RuntimeError, match=r"forward pre-hook must return None or a tuple of \(new_args, "):
            mod(lib.tensor(X23.astype(np.float32)))


class _TorchFails(torch.nn.Module):
    def forward(self, x):
        raise ValueError("forward failed")


class _SeqlabFails(nn.Module):
    def forward(self, x):
        raise ValueError("forward failed")


def test_always_call_runs_when_forward_raises():
    for mod in (_TorchFails(), _SeqlabFails()):
        log = []
        mod.register_forward_hook(lambda m, args, out: log.append("plain"))
        mod.register_forward_hook(lambda m, args, out: log.append(("always", out)), always_call=True)
        mod.register_forward_hook(lambda m, args, kw, out: log.append(("kw", kw)), always_call=True, with_kwargs=True)

        def broken(m, args, out):
            raise KeyError("hook failed too")
        mod.register_forward_hook(broken, always_call=True)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with pytest.raises(ValueError, match="forward failed"):
                mod(1.0)
        assert log == [("always", None), ("kw", {})]
        assert any("hook failed too" in str(w.message) for w in caught)
        log.clear()
        with warnings.catch_warnings(record=True), pytest.raises(ValueError):
            mod(2.0)
        assert len(log) == 2                     # again on every failed call


# ---- get_parameter / get_buffer --------------------------------------------------------------------------------
def _bn_pair():
    return _pair(lambda: torch.nn.Sequential(torch.nn.Linear(3, 4, bias=False), torch.nn.BatchNorm1d(4)),
                 lambda: nn.Sequential(nn.Linear(3, 4, bias=False), nn.BatchNorm1d(4)))


def test_get_parameter_and_get_buffer():
    t, s = _bn_pair()
    for name in ("0.weight", "1.weight", "1.bias"):
        assert s.get_parameter(name) is dict(s.named_parameters())[name]
        np.testing.assert_array_equal(s.get_parameter(name).numpy(), t.get_parameter(name).detach().numpy())
    for name in ("1.running_mean", "1.running_var", "1.num_batches_tracked"):
        assert s.get_buffer(name) is dict(s.named_buffers())[name]
        np.testing.assert_array_equal(s.get_buffer(name).numpy(), t.get_buffer(name).numpy())
    assert s[1].get_parameter("weight") is s[1].weight


@pytest.mark.parametrize("call, target, words", [
    ("get_parameter", "2.weight", "has no submodule '2'"),
    ("get_parameter", "1.nothing", "has no attribute 'nothing'"),
    ("get_parameter", "1.running_mean", "is not an nn.Parameter"),
    ("get_parameter", "0.bias", "is not an nn.Parameter"),        # bias=False: declared absent
    ("get_parameter", "0", "is not an nn.Parameter"),
    ("get_buffer", "1.weight", "is not a buffer"),
    ("get_buffer", "1.nothing", "has no attribute 'nothing'"),
    ("get_buffer", "x.running_mean", "has no submodule 'x'"),
])
def test_get_parameter_and_get_buffer_errors(call, target, words):
    """Each is an AttributeError in torch too, with a message that names what is wrong."""
    t, s = _bn_pair()
    with pytest.raises(AttributeError):
        getattr(t, call)(target)
    with pytest.raises(AttributeError, match=words):
        getattr(s, call)(target)


# ---- nn.init.eye_ / dirac_ -------------------------------------------------------------------------------------
@pytest.mark.parametrize("shape", [(3, 5), (5, 3), (4, 4), (1, 1)])
def test_eye_as_torchs(shape):
    a = torch.full(shape, 7.0)
    torch.nn.init.eye_(a)
    b = seqlab.full(shape, 7.0)
    assert nn.init.eye_(b) is b
    np.testing.assert_array_equal(b.numpy(), a.numpy())


@pytest.mark.parametrize("shape, groups", [((4, 3, 5), 1), ((2, 5, 4), 1), ((6, 2, 3, 3), 2), ((6, 4, 3), 3),
                                           ((4, 2, 2, 3, 4), 2), ((6, 1, 2, 2), 3)])
def test_dirac_as_torchs(shape, groups):
    a = torch.full(shape, 7.0)
    torch.nn.init.dirac_(a, groups)
    b = seqlab.full(shape, 7.0)
    assert nn.init.dirac_(b, groups) is b
    np.testing.assert_array_equal(b.numpy(), a.numpy())
    assert b.numpy().sum() > 0


@pytest.mark.parametrize("init, shape, kwargs", [("eye_", (3,), {}), ("eye_", (2, 3, 4), {}),
                                                 ("dirac_", (3, 4), {}), ("dirac_", (2, 2, 2, 2, 2, 2), {}),
                                                 ("dirac_", (5, 2, 3), {"groups": 2})])
def test_eye_and_dirac_refuse_as_torch(init, shape, kwargs):
    with pytest.raises(ValueError) as want:
        getattr(torch.nn.init, init)(torch.zeros(shape), **kwargs)
    with pytest.raises(ValueError) as got:
        getattr(nn.init, init)(seqlab.zeros(*shape), **kwargs)
    assert str(got.value) == str(want.value)


@pytest.mark.parametrize("activation", ["relu", "gelu"])
def test_hooks_on_a_transformer_layers_feed_forward_run_as_torchs(activation):
    """The layer fuses linear1's bias with the activation and dropout (`feed_forward_in`), which skipped
    linear1's and the dropout's own calls and so their hooks; with a hook on either the layer calls them,
    and their forward and backward hooks see torch's values, in torch's order (the output unchanged)."""
    t, s = _pair(lambda: torch.nn.TransformerEncoderLayer(4, 2, 8, dropout=0.0, activation=activation,
                                                          batch_first=True),
                 lambda: nn.TransformerEncoderLayer(4, 2, 8, dropout=0.0, activation=activation, batch_first=True))
    with seqlab.no_grad():
        before = s(_leaf(seqlab, X234, requires_grad=False)).numpy()
    logs, outs = [], []
    for lib, layer in ((torch, t), (seqlab, s)):
        log, seen = [], []
        layer.linear1.register_forward_hook(lambda mod, args, out, seen=seen: seen.append(_np(out)))
        layer.linear1.register_full_backward_hook(_record(log, "linear1")[0])
        layer.dropout.register_full_backward_hook(_record(log, "dropout")[0])  # the feed-forward's own dropout
        x = _leaf(lib, X234)
        y = layer(x)
        (y * y).sum().backward()
        logs.append(log)
        outs.append((seen, _np(y)))
    _same(logs[0], logs[1])
    assert [entry[0] for entry in logs[1]] == ["dropout", "linear1"] and len(outs[1][0]) == 1
    np.testing.assert_allclose(outs[1][0][0], outs[0][0][0], rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(outs[1][1], outs[0][1], rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(outs[1][1], before, rtol=1e-12, atol=1e-12)



class _LinearPlus(nn.Module):
    """lin(a) + b: two inputs, for a hook whose second input may need no gradient."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 2)

    def forward(self, a, b):
        return self.lin(a) + b


def test_backward_hooks_on_the_device(cuda):
    """On device "cuda" (the CPU stand-in for CuPy, or CuPy itself) the hooks see the device's arrays, the
    zeros for an input that needs no gradient are made there too, and the values are the host's."""
    from seqlab import backend

    results = []
    for device in ("cpu", "cuda"):
        seqlab.manual_seed(0)
        mod = _LinearPlus().to(device)
        seen = []
        mod.register_full_backward_hook(lambda m, gi, go: seen.append((*gi, *go)))
        a = seqlab.Tensor(backend.to_device(X23.astype(np.float32), device), requires_grad=True)
        b = seqlab.Tensor(backend.to_device(np.ones((2, 2), np.float32), device))  # needs no gradient
        (mod(a, b) ** 2).sum().backward()
        (grads,) = seen
        assert [backend.device_of(g.data) for g in grads] == [device] * 3
        results.append([backend.to_device(g.data, "cpu") for g in grads])
    for host, dev in zip(*results):
        np.testing.assert_allclose(dev, host, rtol=1e-6, atol=1e-7)
    assert not results[1][1].any()  # b's entry: zeros, as torch's


def test_a_removed_hook_lets_the_feed_forward_fuse_again(monkeypatch):
    """Once its hooks are removed, linear1 is fused past again (the layer's one op for bias, activation and
    dropout), with the same output."""
    from seqlab.nn import linear as linear_module

    calls = []
    real = linear_module.F.linear_act_dropout
    monkeypatch.setattr(linear_module.F, "linear_act_dropout", lambda *a, **k: calls.append(1) or real(*a, **k))
    layer = nn.TransformerEncoderLayer(4, 2, 8, dropout=0.0, activation="gelu", batch_first=True)
    x = seqlab.tensor(X234.astype(np.float32))
    fused = layer(x).numpy()
    assert len(calls) == 1
    handle = layer.linear1.register_full_backward_hook(lambda *args: None)
    np.testing.assert_allclose(layer(x).numpy(), fused, rtol=1e-6, atol=1e-6)
    assert len(calls) == 1  # called, not fused past
    handle.remove()
    np.testing.assert_array_equal(layer(x).numpy(), fused)
    assert len(calls) == 2


def test_backward_hooks_are_those_registered_before_the_forward_pre_hooks():
    """A forward pre-hook that registers (or removes) a backward hook changes the next call's stops, not this one's:
    torch takes the backward hooks before running the forward pre-hooks."""
    def run(lib, mod, log):
        handles = []

        def forward_pre(m, args):
            if not handles:
                handles.append(m.register_full_backward_hook(lambda *a: log.append("added")))
            else:
                handles.pop().remove()
        mod.register_forward_pre_hook(forward_pre)
        for _ in range(3):
            mod(_leaf(lib, X23)).sum().backward()
            log.append("|")

    t, s = _pair(lambda: torch.nn.Linear(3, 2), lambda: nn.Linear(3, 2))
    (t_log, _), (s_log, _) = _both(t, s, run)
    assert s_log == t_log == ["|", "added", "|", "|"]


class _TorchDict(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(3, 2)

    def forward(self, x):
        return {"y": self.lin(x)}


class _SeqlabDict(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 2)

    def forward(self, x):
        return {"y": self.lin(x)}


@pytest.mark.filterwarnings("default")
@pytest.mark.parametrize("case", ["dict output", "no input needs grad"])
def test_torchs_warnings_where_a_hook_cannot_see_a_gradient(case):
    """A module returning a dict (or a list, a model-output object) gets no stop, its hooks never run; a module none
    of whose inputs requires grad runs its hooks from the outputs: torch warns of each, and so does seqlab, in the
    same words (which a user's warning filters match)."""
    def run(lib, mod, log):
        mod.register_full_backward_hook(lambda *a: log.append("hook"))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            if case == "dict output":
                mod(_leaf(lib, X23))["y"].sum().backward()
            else:
                mod(_leaf(lib, X23, requires_grad=False)).sum().backward()
        return [str(w.message) for w in caught if issubclass(w.category, UserWarning)]

    t, s = _pair(_TorchDict, _SeqlabDict) if case == "dict output" else \
        _pair(lambda: torch.nn.Linear(3, 2), lambda: nn.Linear(3, 2))
    (t_log, t_words), (s_log, s_words) = _both(t, s, run)
    assert s_log == t_log == ([] if case == "dict output" else ["hook"])
    assert len(s_words) == 1 and s_words == t_words
