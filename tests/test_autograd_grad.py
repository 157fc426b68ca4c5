"""autograd.grad, backward(inputs=...) and detect_anomaly, each held to torch (float64): gradients returned
instead of accumulated, no .grad touched, the same hooks run, retain_graph's rules, the same errors."""
import warnings

import numpy as np
import pytest
import torch

import seqlab
from seqlab import autograd, nn
from seqlab.autograd import engine

X, W, B = [1.0, -2.0, 3.0], [[0.5, 1.0, -1.0], [2.0, 0.0, 1.0]], [0.1, -0.3]


def _leaves(lib):
    x = lib.tensor(X, dtype=lib.float64, requires_grad=True)
    w = lib.tensor(W, dtype=lib.float64, requires_grad=True)
    b = lib.tensor(B, dtype=lib.float64, requires_grad=True)
    return x, w, b


def _np(t):
    return None if t is None else np.asarray(t.tolist())


def _close(a, b):
    assert (a is None) == (b is None)
    if a is not None:
        np.testing.assert_allclose(_np(a), _np(b), rtol=1e-12, atol=1e-14)


def _both(fn):
    """fn(lib) for seqlab and torch; their results (tuples of tensors or None) must agree."""
    got, want = fn(seqlab), fn(torch)
    assert len(got) == len(want)
    for a, b in zip(got, want):
        _close(a, b)
    return got


def test_a_scalar_output_wrt_leaves_and_an_intermediate_leaves_every_grad_untouched():
    def run(lib):
        x, w, b = _leaves(lib)
        h = (x * 2).tanh()                     # an intermediate input
        y = ((w @ h + b) ** 2).sum()
        grads = lib.autograd.grad(y, [w, h, x])
        assert x.grad is None and w.grad is None and b.grad is None
        return grads
    got = _both(run)
    assert isinstance(got, tuple) and all(isinstance(g, seqlab.Tensor) and not g.requires_grad for g in got)


def test_a_single_input_gives_a_one_element_tuple():
    def run(lib):
        x = _leaves(lib)[0]
        return lib.autograd.grad((x ** 3).sum(), x)
    assert len(_both(run)) == 1


def test_non_scalar_outputs_need_grad_outputs():
    def run(lib):
        x, w, b = _leaves(lib)
        y = w @ x + b                                       # (2,)
        z = x.exp()                                         # (3,)
        gy = lib.tensor([1.0, -2.0], dtype=lib.float64)
        gz = lib.tensor([0.5, 0.0, 2.0], dtype=lib.float64)
        return lib.autograd.grad([y, z], [x, w, b], grad_outputs=[gy, gz])
    _both(run)
    for lib in (seqlab, torch):
        xx = _leaves(lib)[0]
        with pytest.raises(RuntimeError, match="grad can be implicitly created only for scalar outputs"):
            lib.autograd.grad(xx * 2, xx)
        with pytest.raises(RuntimeError, match=r"Mismatch in shape: grad_output\[0\]"):
            lib.autograd.grad(xx * 2, xx, lib.ones(2, dtype=lib.float64))
        with pytest.raises(RuntimeError, match="got 2 tensors and 1 gradients"):
            lib.autograd.grad([xx.sum(), xx.sum()], xx, [None])


def test_several_outputs_sum_and_one_input_twice():
    def run(lib):
        x, w, b = _leaves(lib)
        h = w @ x
        y1, y2 = (h * b).sum(), h.sin().sum()
        return lib.autograd.grad([y1, y2, y1], [x, x, h], retain_graph=True)
    got = _both(run)
    got[0].data[0] = 123.0
    assert got[1].data[0] != 123.0  # the same tensor twice: two results, not one array


def test_an_output_wrt_itself_and_an_output_that_is_an_input():
    def run(lib):
        x, w, _ = _leaves(lib)
        h = w @ x
        y = (h ** 2).sum()
        return lib.autograd.grad([y, h], [h, x], grad_outputs=[None, lib.tensor([1.0, 3.0], dtype=lib.float64)]) \
            + lib.autograd.grad(x, x, lib.tensor([2.0, 2.0, 2.0], dtype=lib.float64))
    _both(run)


def test_retain_graph_defaults_to_freeing_and_a_second_call_fails_as_backward_does():
    def run(lib):
        x, w, b = _leaves(lib)
        h = w @ x
        y = (h.tanh() * b).sum()
        first = lib.autograd.grad(y, x, retain_graph=True)
        second = lib.autograd.grad(y, x)
        assert x.grad is None
        with pytest.raises(RuntimeError, match="second time"):
            lib.autograd.grad(y, x)
        with pytest.raises(RuntimeError, match="second time"):
            y.backward()
        return first + second
    _both(run)
    # seqlab's message is the one its own backward gives for a freed graph
    x = _leaves(seqlab)[0]
    y = (x * x).sum()
    y.backward()
    with pytest.raises(RuntimeError) as backward_error:
        y.backward()
    y = (x * x).sum()
    autograd.grad(y, x)
    with pytest.raises(RuntimeError) as grad_error:
        autograd.grad(y, x)
    assert str(grad_error.value) == str(backward_error.value)


def test_only_the_ops_between_outputs_and_inputs_run_and_are_freed():
    """As torch: grad(y, h) frees the ops after h, not the op that made h, so h's own graph still works."""
    def run(lib):
        x, w, b = _leaves(lib)
        h = w @ x + b
        y = (h ** 2).sum()
        (gh,) = lib.autograd.grad(y, h)
        h.sum().backward()
        return gh, x.grad, w.grad, b.grad
    _both(run)


def test_allow_unused_and_materialize_grads():
    def run(lib):
        x, _, b = _leaves(lib)
        y = (x * 3).sum()
        with pytest.raises(RuntimeError, match="index 1 appears to not have been used in the graph"):
            lib.autograd.grad(y, [x, b], retain_graph=True)
        with pytest.raises(ValueError, match="allow_unused to be True or not passed"):
            lib.autograd.grad(y, [x, b], allow_unused=False, materialize_grads=True, retain_graph=True)
        unused = lib.autograd.grad(y, [x, b], allow_unused=True, retain_graph=True)
        assert unused[1] is None
        flags = [t.requires_grad for t in lib.autograd.grad(y, [x, b], materialize_grads=True, create_graph=True)]
        assert flags == [False, True]  # with create_graph the zeros require grad, as torch's
        zeros = lib.autograd.grad(y, [x, b], materialize_grads=True)
        assert zeros[1].shape == b.shape and zeros[1].dtype == b.dtype and not zeros[1].requires_grad
        return unused[:1] + zeros
    _both(run)


def test_inputs_and_outputs_must_require_grad():
    for lib in (seqlab, torch):
        x = _leaves(lib)[0]
        with pytest.raises(RuntimeError, match="One of the differentiated Tensors does not require grad"):
            lib.autograd.grad((x * 2).sum(), [x, lib.ones(2)])
        with pytest.raises(RuntimeError, match="element 0 of tensors does not require grad"):
            lib.autograd.grad(lib.ones(2).sum(), x)


def test_backward_create_graph_is_refused_with_one_clear_line_naming_autograd_grad():
    """A .grad is an array here, so backward(create_graph=True) is refused; autograd.grad(create_graph=True)
    is the way (tests/test_double_backward.py)."""
    x = _leaves(seqlab)[0]
    y = (x * x).sum()
    with pytest.raises(NotImplementedError, match=r"seqlab\.autograd\.grad\(.*create_graph=True\)"):
        y.backward(create_graph=True)
    g, = autograd.grad(y, x, create_graph=True)  # the refusal freed nothing
    assert g.requires_grad


def _hooked(lib, call):
    """Hooks on a leaf input, an intermediate (which also retains its grad) and a leaf off the path."""
    x, w, b = _leaves(lib)
    h = x * 2
    h.retain_grad()
    seen = []
    h.register_hook(lambda g: (seen.append(("h", g.tolist())), g * 10)[1])
    x.register_hook(lambda g: (seen.append(("x", g.tolist())), g + 1)[1])
    w.register_hook(lambda g: seen.append(("w", g.tolist())))
    y = ((w @ h.tanh() + b) ** 2).sum()
    out = call(lib, y, x, w, h)
    return seen, out, h.grad, x.grad, w.grad, b.grad


@pytest.mark.parametrize("call", [
    lambda lib, y, x, w, h: lib.autograd.grad(y, x),
    lambda lib, y, x, w, h: lib.autograd.grad(y, [h]),
    lambda lib, y, x, w, h: lib.autograd.grad(y, [w, x]),
    lambda lib, y, x, w, h: y.backward(inputs=[x]),
    lambda lib, y, x, w, h: y.backward(inputs=h),
    lambda lib, y, x, w, h: y.backward(inputs=[w, h, w]),
], ids=["grad-x", "grad-h", "grad-w-x", "backward-inputs-x", "backward-inputs-h", "backward-inputs-w-h-w"])
def test_hooks_and_retain_grad_run_as_torchs_only_on_the_paths_to_the_inputs(call):
    s_seen, s_out, *s_grads = _hooked(seqlab, call)
    t_seen, t_out, *t_grads = _hooked(torch, call)
    assert [name for name, _ in s_seen] == [name for name, _ in t_seen]
    for (_, a), (_, b) in zip(s_seen, t_seen):
        np.testing.assert_allclose(a, b, rtol=1e-12)
    for a, b in zip(s_out or (), t_out or ()):
        _close(a, b)
    for a, b in zip(s_grads, t_grads):  # seqlab's .grad is an array, torch's a tensor
        _close(a, b)


def test_backward_inputs_accumulates_and_checks_its_argument():
    def run(lib):
        x, w, b = _leaves(lib)
        y = (w @ x.exp() * b).sum()
        y.backward(inputs=[x, b], retain_graph=True)
        y.backward(inputs=x)
        assert w.grad is None
        return x.grad, b.grad
    _both(run)
    for lib in (seqlab, torch):
        x = _leaves(lib)[0]
        with pytest.raises(RuntimeError, match="`inputs` argument to `backward\\(\\)` cannot be empty"):
            (x * 2).sum().backward(inputs=[])


def test_grad_wrt_rnn_hidden_states_matches_retain_grad_and_leaves_parameters_alone():
    """The chapter's use: dL/dh_t for every step at once, without touching the parameters' .grad."""
    seqlab.manual_seed(0)
    cell, T = nn.RNNCell(3, 5).to(seqlab.float64), 6
    x = seqlab.randn(2, T, 3).to(seqlab.float64)

    def unroll():
        h, hs = seqlab.zeros(2, 5, dtype=seqlab.float64), []
        for t in range(T):
            h = cell(x[:, t], h)
            hs.append(h)
        return hs, (hs[-1] ** 2).sum()

    hs, loss = unroll()
    grads = autograd.grad(loss, hs + list(cell.parameters()))
    assert all(p.grad is None for p in cell.parameters())
    hs, loss = unroll()
    for h in hs:
        h.retain_grad()
    loss.backward()
    for g, h in zip(grads, hs):
        np.testing.assert_allclose(g.numpy(), h.grad, rtol=1e-12)
    for g, p in zip(grads[T:], cell.parameters()):
        np.testing.assert_allclose(g.numpy(), p.grad, rtol=1e-12)


# ---- detect_anomaly ---------------------------------------------------------------------------------------
def _nan_graphs(lib):
    """Three graphs whose backward makes a NaN: (loss, index of the NaN gradient, torch's op name, ours)."""
    a = lib.tensor([0.0, 4.0], dtype=lib.float64, requires_grad=True)
    s = a.sqrt()                                     # d sqrt(0) = 0 / 0 once a zero gradient arrives
    yield (s * 0).sum(), 0, "SqrtBackward0", s
    c = lib.tensor([-1.0, 2.0], dtype=lib.float64, requires_grad=True)
    z = c * 0
    lg = z.log()                                     # log(±0) = -inf: its gradient inf, then inf * 0 in Mul
    yield lg.sum(), 0, "MulBackward0", z
    p = lib.tensor([float("inf"), 1.0], dtype=lib.float64, requires_grad=True)
    q = lib.tensor([2.0, 3.0], dtype=lib.float64, requires_grad=True)
    m = p * q                                        # dq = g * p = 0 * inf: the op's 1th output
    yield (m * 0).sum(), 1, "MulBackward0", m


@pytest.mark.filterwarnings("ignore:Anomaly Detection:UserWarning")
def test_detect_anomaly_names_the_op_and_the_gradient_that_went_nan():
    with np.errstate(all="ignore"):
        for (s_loss, index, torch_name, s_out), (t_loss, _, _, _) in zip(_nan_graphs(seqlab), _nan_graphs(torch)):
            ours = type(s_out._ctx).__name__
            with autograd.detect_anomaly(), pytest.raises(
                    RuntimeError, match=f"^Function '{ours}' returned nan values in its {index}th output\\.$"):
                s_loss.backward()
            with torch.autograd.detect_anomaly(), warnings.catch_warnings():
                warnings.simplefilter("ignore")  # torch's "Error detected in ..." traceback warning
                with pytest.raises(RuntimeError, match=f"Function '{torch_name}' returned nan values in its "
                                                       f"{index}th output"):
                    t_loss.backward()


@pytest.mark.filterwarnings("ignore:Anomaly Detection:UserWarning")
def test_check_nan_false_lets_the_nan_through():
    a = seqlab.tensor([0.0, 4.0], dtype=seqlab.float64, requires_grad=True)
    with np.errstate(all="ignore"), autograd.detect_anomaly(check_nan=False):
        assert autograd.is_anomaly_enabled() and not autograd.is_anomaly_check_nan_enabled()
        (a.sqrt() * 0).sum().backward()
    assert np.isnan(a.grad[0]) and not autograd.is_anomaly_enabled()


def test_anomaly_off_gives_nan_gradients_silently_as_torch():
    for lib in (seqlab, torch):
        a = lib.tensor([0.0, 4.0], dtype=lib.float64, requires_grad=True)
        with np.errstate(all="ignore"):
            (a.sqrt() * 0).sum().backward()
        assert np.isnan(_np(a.grad)[0])


@pytest.mark.filterwarnings("ignore:Anomaly Detection:UserWarning")
def test_anomaly_under_autograd_grad_and_backward_inputs():
    with np.errstate(all="ignore"), autograd.detect_anomaly():
        a = seqlab.tensor([0.0, 4.0], dtype=seqlab.float64, requires_grad=True)
        with pytest.raises(RuntimeError, match="Function 'Sqrt' returned nan"):
            autograd.grad((a.sqrt() * 0).sum(), a)
        with pytest.raises(RuntimeError, match="Function 'Sqrt' returned nan"):
            (a.sqrt() * 0).sum().backward(inputs=[a])


def test_detect_anomaly_warns_set_detect_anomaly_switches_and_both_restore():
    assert not autograd.is_anomaly_enabled()
    with pytest.warns(UserWarning, match="^Anomaly Detection has been enabled. This mode will increase the runtime "
                                         "and should only be enabled for debugging.$"):
        mode = autograd.detect_anomaly()
    with mode:
        assert autograd.is_anomaly_enabled() and engine._check_nan
    assert not autograd.is_anomaly_enabled() and not engine._check_nan
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # as torch: set_detect_anomaly itself does not warn
        autograd.set_detect_anomaly(True)
        try:
            assert autograd.is_anomaly_enabled() and autograd.is_anomaly_check_nan_enabled()
        finally:
            autograd.set_detect_anomaly(False)
        assert not autograd.is_anomaly_enabled()
        with autograd.set_detect_anomaly(True, check_nan=False):
            assert autograd.is_anomaly_enabled() and not engine._check_nan
        assert not autograd.is_anomaly_enabled()


@pytest.mark.filterwarnings("ignore:Anomaly Detection:UserWarning")
def test_detect_anomaly_as_a_decorator():
    @autograd.detect_anomaly()
    def step(a):
        assert autograd.is_anomaly_enabled()
        (a.sqrt() * 0).sum().backward()

    assert not autograd.is_anomaly_enabled()
    with np.errstate(all="ignore"), pytest.raises(RuntimeError, match="'Sqrt' returned nan"):
        step(seqlab.tensor([0.0, 1.0], dtype=seqlab.float64, requires_grad=True))
    assert not autograd.is_anomaly_enabled()


@pytest.mark.filterwarnings("ignore:Anomaly Detection:UserWarning")
def test_gradients_are_the_same_with_anomaly_detection_on():
    def grads(on):
        seqlab.manual_seed(1)
        net = nn.Sequential(nn.Linear(4, 8), nn.GELU(), nn.LayerNorm(8), nn.Linear(8, 2)).to(seqlab.float64)
        x = seqlab.randn(5, 4).to(seqlab.float64)
        with autograd.set_detect_anomaly(on):
            net(x)[:, 1].pow(2).mean().backward()
        return [p.grad for p in net.parameters()]
    for a, b in zip(grads(False), grads(True)):
        np.testing.assert_array_equal(a, b)


def test_the_plain_backward_does_not_take_the_general_path(monkeypatch):
    """Off, the anomaly check and inputs= cost the training step's backward one flag test, not a slower loop."""
    def refuse(*args, **kwargs):
        raise AssertionError("run_graph called")
    monkeypatch.setattr(engine, "run_graph", refuse)
    x = _leaves(seqlab)[0]
    (x * x).sum().backward()
    np.testing.assert_allclose(x.grad, 2 * np.asarray(X))
