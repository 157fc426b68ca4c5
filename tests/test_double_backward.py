"""Double backward: `autograd.grad(..., create_graph=True)` held to torch on the same inputs.

Gradients that carry a graph give second and third derivatives, Hessians, Hessian-vector products and a
WGAN-GP gradient penalty whose parameter gradients after `.backward()` match torch's; an op without a
differentiable backward, `backward(create_graph=True)` and a freed graph raise one clear error each.
"""
import itertools

import numpy as np
import pytest
import torch

import seqlab
from seqlab import autograd, backend, nn
from seqlab.autograd import engine, higher_order
from seqlab.utils.checkpoint import checkpoint

RNG = np.random.default_rng(0)
X34 = RNG.uniform(0.5, 2.0, (3, 4))           # positive: log, sqrt, fractional powers are defined
W34 = RNG.standard_normal((3, 4))             # weights of the scalar output, so no derivative is symmetric
V34 = RNG.standard_normal((3, 4))             # the direction of the second derivative
TOL = {"float64": {"rtol": 1e-10, "atol": 1e-12}, "float32": {"rtol": 2e-4, "atol": 2e-5}}


def _np(t):
    return None if t is None else np.asarray(t.detach().tolist() if isinstance(t, torch.Tensor) else t.tolist())


def _close(a, b, dtype="float64"):
    assert (a is None) == (b is None)
    if a is not None:
        np.testing.assert_allclose(_np(a), _np(b), **TOL[dtype])


def _leaf(lib, arr, dtype="float64"):
    return lib.tensor(np.asarray(arr), dtype=getattr(lib, dtype), requires_grad=True)


def _derivatives(lib, f, dtype, x0=X34):
    """g = d(Σ w·f(x))/dx, h = d(Σ v·g)/dx, t = d(Σ v·h)/dx: first, second and third derivatives."""
    x = _leaf(lib, x0, dtype)
    w, v = lib.tensor(W34, dtype=x.dtype), lib.tensor(V34, dtype=x.dtype)
    g, = lib.autograd.grad((f(x) * w).sum(), x, create_graph=True)
    h, = lib.autograd.grad((g * v).sum(), x, create_graph=True)
    third = (h * v).sum()
    t = lib.autograd.grad(third, x, allow_unused=True)[0] if third.requires_grad else None  # None: 0
    return g, h, t


ELEMENTWISE = {
    "tanh": lambda x: x.tanh(),
    "sigmoid": lambda x: x.sigmoid(),
    "exp": lambda x: x.exp(),
    "log": lambda x: x.log(),
    "sqrt": lambda x: x.sqrt(),
    "pow3": lambda x: x ** 3,
    "pow_frac": lambda x: x.pow(2.5),
    "pow_neg": lambda x: x ** -1.5,
    "div": lambda x: (x + 1) / (x * x + 2),
    "reciprocal": lambda x: 3.0 / x,
    "mul": lambda x: x * x * (x - 0.5),
}


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name", list(ELEMENTWISE))
def test_second_and_third_derivatives_of_elementwise_functions(name, dtype):
    f = ELEMENTWISE[name]
    got, want = _derivatives(seqlab, f, dtype), _derivatives(torch, f, dtype)
    for a, b in zip(got, want):
        _close(a, b, dtype)
    g, h, t = got
    assert g.requires_grad and h.requires_grad and not t.requires_grad
    assert g.dtype == h.dtype == t.dtype == np.dtype(dtype)  # float32 stays float32


def _F(lib):
    return lib.nn.functional


MORE_OPS = {  # every op with a differentiable backward that the WGAN-GP and MLP tests do not reach
    "neg_sub": lambda lib, x: (-x - x * x).exp() - 1,
    "sin_cos": lambda lib, x: x.sin() * x.cos(),
    "abs": lambda lib, x: (x - 1).abs() ** 3,
    "relu": lambda lib, x: _F(lib).relu(x - 1) ** 2,
    "leaky_relu": lambda lib, x: _F(lib).leaky_relu(x - 1, 0.1) ** 3,
    "gelu": lambda lib, x: _F(lib).gelu(x - 1.2),
    "gelu_tanh": lambda lib, x: _F(lib).gelu(x - 1.2, approximate="tanh"),
    "silu": lambda lib, x: _F(lib).silu(x - 1),
    "logsigmoid": lambda lib, x: _F(lib).logsigmoid(x - 1),
    "softmax_last": lambda lib, x: x.softmax(-1) * x,
    "softmax_dim0": lambda lib, x: _F(lib).softmax(x * 2, dim=0),
    "log_softmax": lambda lib, x: _F(lib).log_softmax(x * x, dim=1),
    "log1p_expm1": lambda lib, x: x.log1p() * x.expm1(),
    "log2_log10": lambda lib, x: x.log2() * x.log10(),
    "sinh_cosh": lambda lib, x: x.sinh() / x.cosh(),
    "asin_acos_atan": lambda lib, x: (x / 3).asin() * (x / 3).acos() + x.atan(),
    "erf": lambda lib, x: (x - 1).erf(),
    "elu_celu": lambda lib, x: _F(lib).elu(x - 1.2, 0.7) ** 2 + _F(lib).celu(1.1 - x, 1.5),
    "atan2_hypot": lambda lib, x: lib.atan2(x, x * x - 1) + lib.hypot(x, 2 * x - 1),
    "clamp": lambda lib, x: x.clamp(0.8, 1.7) ** 3,
    "maximum": lambda lib, x: lib.maximum(x * x, 2 - x) ** 2,
    "where": lambda lib, x: lib.where(x > 1, x ** 3, x.exp()),
    "masked_fill": lambda lib, x: (x ** 3).masked_fill(x > 1.5, 0.0),
    "tensor_power": lambda lib, x: x ** (x - 0.5),
    "mean_var": lambda lib, x: (x * x).mean(1, keepdim=True) * x.var(0) + x.var(),
    "amax": lambda lib, x: (x * x).amax(1, keepdim=True) * x,
    "max_dim": lambda lib, x: (x ** 3).max(0).values * x,
    "cumsum": lambda lib, x: (x * x).cumsum(1) * x,
    "cat_stack": lambda lib, x: lib.cat([x * x, x ** 3], dim=1)[:, ::2] + lib.stack([x, x.exp()], 0).sum(0),
    "gather": lambda lib, x: x * (x ** 3).gather(1, lib.tensor([[0, 0, 3, 1]] * 3)),
    "index_chain": lambda lib, x: ((x ** 3).reshape(2, 6).T[[0, 0, 5]].reshape(3, 2) @ x[:2]).tanh(),
    "matmul_1d": lambda lib, x: (x @ x[0] / 9).exp()[:, None] * x * (x[1] @ x.T).tanh()[:, None],
    "matmul_batched": lambda lib, x: (x.reshape(3, 2, 2) @ x.reshape(3, 2, 2).transpose(1, 2)).reshape(3, 4) * x,
    "cast": lambda lib, x: (x.float() ** 3).double() if x.dtype in (np.float64, torch.float64) else x ** 3,
}


@pytest.mark.parametrize("name", list(MORE_OPS))
def test_second_and_third_derivatives_of_more_ops(name):
    got = _derivatives(seqlab, lambda x: MORE_OPS[name](seqlab, x), "float64")
    want = _derivatives(torch, lambda x: MORE_OPS[name](torch, x), "float64")
    tol = {"rtol": 1e-5, "atol": 1e-6} if name == "cast" else TOL["float64"]  # a float32 detour
    for a, b in zip(got, want):
        zero = np.zeros(X34.shape)  # a derivative that is 0 everywhere may come as None (no graph left)
        np.testing.assert_allclose(zero if a is None else _np(a), zero if b is None else _np(b), **tol)


def test_hessian_of_a_scalar_function_row_by_row_matches_torch_functional_hessian():
    x0 = np.array([0.3, -1.2, 0.8, 2.0])

    def f(lib, x):
        return (x.sin() * x.roll(1, 0)).sum() + x.norm() ** 3 * x.sigmoid().mean() + (x[:2] @ x[2:]) ** 2

    x = _leaf(seqlab, x0)
    g, = autograd.grad(f(seqlab, x), x, create_graph=True)
    rows = [autograd.grad(g[i], x, retain_graph=True)[0].numpy() for i in range(4)]
    want = torch.autograd.functional.hessian(lambda t: f(torch, t), torch.tensor(x0))
    np.testing.assert_allclose(np.stack(rows), want.numpy(), rtol=1e-12, atol=1e-12)


def _mlp(lib, activation, sizes):
    layers = []
    for i, (a, b) in enumerate(itertools.pairwise(sizes)):
        layers.append(lib.nn.Linear(a, b))
        if i < len(sizes) - 2:
            layers.append(activation(lib))
    return lib.nn.Sequential(*layers)


def _twins(activation, sizes=(4, 16, 16, 1), dtype="float64"):
    """The same MLP in torch and seqlab (torch's weights copied), in `dtype`."""
    torch.manual_seed(0)
    theirs = _mlp(torch, activation, sizes).to(getattr(torch, dtype))
    ours = _mlp(seqlab, activation, sizes).to(dtype=np.dtype(dtype))
    ours.load_state_dict({k: v.detach().numpy() for k, v in theirs.state_dict().items()})
    return ours, theirs


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_hessian_vector_product_through_a_two_layer_mlp(dtype):
    ours, theirs = _twins(lambda lib: lib.nn.Tanh(), sizes=(5, 8, 3), dtype=dtype)
    x0, y0 = RNG.standard_normal((2, 7, 5)), RNG.standard_normal((2, 7, 3))  # a batch of sequences (B, T, C)
    vs = [RNG.standard_normal(tuple(p.shape)) for p in theirs.parameters()]
    results = []
    for lib, model in ((seqlab, ours), (torch, theirs)):
        x, y = lib.tensor(x0, dtype=getattr(lib, dtype)), lib.tensor(y0, dtype=getattr(lib, dtype))
        params = list(model.parameters())
        loss = ((model(x) - y) ** 2).mean()
        grads = lib.autograd.grad(loss, params, create_graph=True)
        dot = sum((g * lib.tensor(v, dtype=g.dtype)).sum() for g, v in zip(grads, vs))
        results.append(grads + lib.autograd.grad(dot, params))  # the gradients, then H·v
    for a, b in zip(*results):
        _close(a, b, dtype)
        assert a.dtype == np.dtype(dtype)


def _wgan_gp_step(lib, critic, real, fake, alpha, lam=10.0):
    """A critic's WGAN-GP loss (Gulrajani et al. 2017, eq. 3) and .backward(): its parameter gradients."""
    dt = next(critic.parameters()).dtype
    real, fake = lib.tensor(real, dtype=dt), lib.tensor(fake, dtype=dt)
    a = lib.tensor(alpha, dtype=dt)
    x_hat = (a * real + (1 - a) * fake).requires_grad_(True)
    g, = lib.autograd.grad(critic(x_hat).sum(), x_hat, create_graph=True)
    penalty = ((g.norm(2, dim=1) - 1) ** 2).mean()
    loss = critic(fake).mean() - critic(real).mean() + lam * penalty
    loss.backward()
    return [loss] + [p.grad for p in critic.parameters()]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_wgan_gp_gradient_penalty_gives_torchs_parameter_gradients(dtype):
    ours, theirs = _twins(lambda lib: lib.nn.LeakyReLU(0.2), dtype=dtype)
    real, fake, alpha = RNG.standard_normal((8, 4)), RNG.standard_normal((8, 4)) + 1, RNG.uniform(size=(8, 1))
    got = _wgan_gp_step(seqlab, ours, real, fake, alpha)
    want = _wgan_gp_step(torch, theirs, real, fake, alpha)
    for a, b in zip(got, want):
        if dtype == "float64":
            _close(a, b, dtype)
        else:
            np.testing.assert_allclose(_np(a), _np(b), rtol=1e-3, atol=1e-4)
    assert all(isinstance(p, np.ndarray) and p.dtype == np.dtype(dtype) for p in got[1:])


def test_penalty_on_the_parameters_gradient_norm_and_a_second_backward():
    """Differentiating the parameters' own gradients (a gradient-norm regulariser), then backward through it."""
    ours, theirs = _twins(lambda lib: lib.nn.GELU(), sizes=(4, 6, 2))
    x0 = RNG.standard_normal((5, 4))
    grads = []
    for lib, model in ((seqlab, ours), (torch, theirs)):
        out = model(lib.tensor(x0, dtype=lib.float64)).log_softmax(-1)[:, 0].sum()
        gs = lib.autograd.grad(out, list(model.parameters()), create_graph=True)
        (sum((g ** 2).sum() for g in gs) + out).backward()
        grads.append([p.grad for p in model.parameters()])
    for a, b in zip(*grads):
        _close(a, b)


@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("fn", ["softmax", "log_softmax"])
def test_softmax_and_log_softmax_second_derivatives_along_each_dim(fn, dim):
    def f(x):
        return getattr(x, fn)(dim) * x

    for a, b in zip(_derivatives(seqlab, f, "float64"), _derivatives(torch, f, "float64")):
        _close(a, b)


def test_broadcast_add_of_a_column_and_a_row():
    a0, b0 = RNG.standard_normal((3, 1)), RNG.standard_normal((1, 4))
    results = []
    for lib in (seqlab, torch):
        a, b = _leaf(lib, a0), _leaf(lib, b0)
        s = a + b                                             # (3, 4)
        y = ((s ** 3) * lib.tensor(W34)).sum() + (a * b).exp().sum()
        ga, gb = lib.autograd.grad(y, [a, b], create_graph=True)
        assert tuple(ga.shape) == (3, 1) and tuple(gb.shape) == (1, 4)
        haa, hab = lib.autograd.grad(ga.sum(), [a, b], retain_graph=True)
        hba, hbb = lib.autograd.grad((gb * lib.tensor(V34[:1])).sum(), [a, b])
        results.append((ga, gb, haa, hab, hba, hbb))
    for x, y in zip(*results):
        _close(x, y)


def test_reshape_transpose_and_indexing_chains():
    def f(lib, x):
        y = x.reshape(2, 6).transpose(0, 1)                   # (6, 2)
        y = y[1:5] * y[[0, 0, 3, 5]]                          # a slice and repeated integer-array indices
        z = y.permute(1, 0).reshape(-1).unsqueeze(0).expand(3, 8)
        return (z[:, 2:6].reshape(3, 4) ** 2) * x.flatten()[None, :4].exp()

    got = _derivatives(seqlab, lambda x: f(seqlab, x), "float64")
    want = _derivatives(torch, lambda x: f(torch, x), "float64")
    for a, b in zip(got, want):
        _close(a, b)


def test_cross_entropy_and_embedding_second_derivatives():
    logits0, target = RNG.standard_normal((5, 4)), np.array([0, 3, -100, 1, 3])
    ids, table0 = np.array([[1, 2, 2], [0, 4, 1]]), RNG.standard_normal((5, 3))
    results = []
    for lib in (seqlab, torch):
        F = _F(lib)
        logits = _leaf(lib, logits0)
        loss = F.cross_entropy(logits * logits, lib.tensor(target), label_smoothing=0.1)
        g, = lib.autograd.grad(loss, logits, create_graph=True)
        h, = lib.autograd.grad((g * lib.tensor(V34[:1, :4].repeat(5, 0))).sum(), logits)
        table = _leaf(lib, table0)
        e = F.embedding(lib.tensor(ids), table, padding_idx=2)
        ge, = lib.autograd.grad((e ** 3).sum(), table, create_graph=True)
        he, = lib.autograd.grad((ge ** 2).sum(), table)
        results.append((loss, g, h, ge, he))
    for a, b in zip(*results):
        _close(a, b)


def test_grad_outputs_that_require_grad_are_differentiated_through():
    """The double-VJP trick: d/du of <J^T u, v> = J v (a Jacobian-vector product from two backwards)."""
    results = []
    for lib in (seqlab, torch):
        x = _leaf(lib, X34)
        y = (x @ x.T).tanh()                                  # (3, 3)
        u = lib.zeros(3, 3, dtype=lib.float64, requires_grad=True)
        vjp, = lib.autograd.grad(y, x, grad_outputs=u, create_graph=True)
        jvp, = lib.autograd.grad((vjp * lib.tensor(V34)).sum(), u)
        results.append((vjp, jvp))
    for a, b in zip(*results):
        _close(a, b)


def test_third_derivative_through_backward_into_grad():
    results = []
    for lib in (seqlab, torch):
        x = _leaf(lib, X34)
        g, = lib.autograd.grad(x.tanh().pow(2).sum(), x, create_graph=True)
        h, = lib.autograd.grad(g.sum(), x, create_graph=True)
        (h * h).sum().backward()
        results.append((g, h, x.grad))
    for a, b in zip(*results):
        _close(a, b)


def test_results_require_grad_only_when_they_depend_on_something_that_does():
    for lib in (seqlab, torch):
        x = _leaf(lib, X34)
        g_lin, = lib.autograd.grad((x * 2).sum(), x, create_graph=True)
        g_sq, = lib.autograd.grad((x * x).sum(), x, create_graph=True)
        assert not g_lin.requires_grad and g_sq.requires_grad
        assert x.grad is None


def test_hooks_and_retain_grad_see_the_first_order_gradient():
    results = []
    for lib in (seqlab, torch):
        seen = []

        def hook(g, seen=seen):
            seen.append(g)
            return g * 2  # retain_grad keeps what the hooks made (as torch)

        x = _leaf(lib, X34)
        h = x.tanh()
        h.retain_grad()
        h.register_hook(hook)
        g, = lib.autograd.grad((h * h).sum(), x, create_graph=True)
        assert isinstance(seen[0], lib.Tensor) and seen[0].requires_grad
        results.append((h.grad, g, lib.autograd.grad(g.sum(), x)[0]))
    for a, b in zip(*results):
        _close(a, b)


def test_an_op_without_a_differentiable_backward_is_refused_by_name_and_frees_nothing():
    x = _leaf(seqlab, X34)
    lin = nn.Linear(4, 3).to(dtype=np.float64)

    def loss(hidden):
        return (_F(seqlab).layer_norm(hidden(x * 2), (3,)) ** 2).sum()

    want, = autograd.grad(loss(lambda a: lin(a).tanh()), x)   # the same loss without the checkpoint
    y = loss(lambda a: checkpoint(lambda b: lin(b).tanh(), a, use_reentrant=True))  # recomputed in backward
    with pytest.raises(RuntimeError, match=r"create_graph=True: seqlab's op '_Checkpoint' \(seqlab\.utils\."
                                           r"checkpoint\) has no differentiable backward here: a reentrant "
                                           r"checkpoint; checkpoint\(\.\.\., use_reentrant=False\) has one$") as err:
        autograd.grad(y, x, create_graph=True)
    assert "\n" not in str(err.value)
    y.backward()                                              # the refusal ran and freed nothing
    np.testing.assert_allclose(x.grad, want.numpy(), rtol=1e-12)   # (a checkpoint takes no autograd.grad)
    supported = higher_order.supported_ops()
    assert "Softmax" in supported and "RecurrentScan" in supported


def test_a_function_without_backward_graph_is_refused_pointing_to_the_list():
    """A Function subclass (one of a user's, say) with a backward but no backward_graph."""
    from seqlab.autograd.function import Function

    class Cube(Function):
        def forward(self, a):
            self.save_for_backward(a)
            return a ** 3

        def backward(self, grad):
            return (3 * self.saved[0] ** 2 * grad,)

    x = _leaf(seqlab, X34)
    y = Cube.apply(x * 2).sum()
    with pytest.raises(RuntimeError, match=r"create_graph=True: seqlab's op 'Cube' \((tests\.)?test_double_backward\) "
                                           r"has no differentiable backward yet \(backward_graph\); seqlab\.autograd\."
                                           r"higher_order\.supported_ops\(\) lists the \d+ ops that have one$"):
        autograd.grad(y, x, create_graph=True)
    g, = autograd.grad(y, x)                                   # nothing was freed by the refusal
    np.testing.assert_allclose(g.numpy(), 24 * X34 ** 2, rtol=1e-12)
    assert "Cube" not in higher_order.supported_ops()


def test_backward_with_create_graph_is_refused_pointing_to_autograd_grad():
    x = _leaf(seqlab, X34)
    y = (x * x).sum()
    with pytest.raises(NotImplementedError, match=r"seqlab\.autograd\.grad\(.*create_graph=True\)"):
        y.backward(create_graph=True)
    assert engine.NO_DOUBLE_BACKWARD.count("\n") == 0
    y.backward()                                              # the refusal freed nothing
    np.testing.assert_allclose(x.grad, 2 * X34)


def test_a_freed_graph_raises_the_second_time_error():
    for lib in (seqlab, torch):
        x = _leaf(lib, X34)
        y = x.tanh().sum()
        y.backward()
        with pytest.raises(RuntimeError, match="second time"):
            lib.autograd.grad(y, x, create_graph=True)
        # retain_graph=False frees the first graph, which the gradient's own graph runs back through
        z = (x.exp() * x).sum()
        g, = lib.autograd.grad(z, x, create_graph=True, retain_graph=False)
        with pytest.raises(RuntimeError, match="second time"):
            g.sum().backward()


def test_create_graph_keeps_the_graph_by_default():
    x = _leaf(seqlab, X34)
    y = (x ** 3).sum()
    autograd.grad(y, x, create_graph=True)
    g, = autograd.grad(y, x, create_graph=True)               # retain_graph defaulted to True
    y.backward()
    np.testing.assert_allclose(x.grad, 3 * X34 ** 2)
    np.testing.assert_allclose(autograd.grad(g.sum(), x)[0].numpy(), 6 * X34)


def test_double_backward_on_the_device(cuda):
    """WGAN-GP's penalty and a Hessian-vector product on device arrays, against the same on NumPy."""
    x0 = RNG.standard_normal((6, 4)).astype(np.float32)
    results = []
    for device in ("cpu", "cuda"):
        seqlab.manual_seed(0)
        critic = nn.Sequential(nn.Linear(4, 8), nn.LeakyReLU(0.2), nn.Linear(8, 1)).to(device)
        x = seqlab.tensor(x0).to(device).requires_grad_(True)
        g, = autograd.grad(critic(x).sum(), x, create_graph=True)
        assert backend.device_of(g.data) == device and g.dtype == np.float32
        (((g.norm(2, dim=1) - 1) ** 2).mean() + critic(x).mean()).backward()
        y = (x.tanh() ** 2).softmax(-1)[:, 0].sum()
        gx, = autograd.grad(y, x, create_graph=True)
        hv, = autograd.grad((gx * x.detach()).sum(), x)
        results.append([backend.to_numpy(a) for a in (g.data, hv.data, *(p.grad for p in critic.parameters()))])
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
