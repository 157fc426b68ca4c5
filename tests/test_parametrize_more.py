"""nn.utils.parametrizations.orthogonal, linalg.matrix_exp (and householder_product), and the older hook-based
nn.utils.spectral_norm / remove_spectral_norm, against torch in float64: the weight at registration for each map,
wide, tall, square and batched, with and without trivialization; orthogonality; state-dict keys; a torch
checkpoint loaded giving torch's weight, outputs and gradients; assignment round trips and refusals;
matrix_exp's values, gradient and second derivative (central differences); spectral norm's power iteration in
training and evaluation from torch's buffers."""
import numpy as np
import pytest
import torch
import torch.nn as tnn
from torch.nn.utils import parametrizations as TP
from torch.nn.utils import parametrize as tP

import seqlab
from seqlab import linalg, nn
from seqlab.nn.utils import parametrizations as P
from seqlab.nn.utils import parametrize as sP
from seqlab.nn.utils.orthogonal import householder_product

RNG = np.random.default_rng(3)
MAPS = [None, "matrix_exp", "cayley", "householder"]
SHAPES = [(4, 4), (3, 5), (5, 3)]  # (in_features, out_features): square, tall weight, wide weight


def _pair_linear(i, o):
    t = tnn.Linear(i, o).double()
    s = nn.Linear(i, o)
    s.to(dtype=np.float64)
    s.load_state_dict({k: v.numpy() for k, v in t.state_dict().items()})
    return s, t


def _load(s, t):
    s.load_state_dict({k: v.detach().numpy() for k, v in t.state_dict().items()})


def _orthonormal_error(w: np.ndarray) -> float:
    q = w if w.shape[-2] >= w.shape[-1] else w.swapaxes(-1, -2)
    return float(np.abs(q.swapaxes(-1, -2) @ q - np.eye(q.shape[-1])).max())


def _forward_backward(s, t, i):
    """Outputs and the gradients of every parameter (the originals, the bias) equal."""
    x = RNG.standard_normal((6, i))
    ys, yt = s(seqlab.tensor(x)), t(torch.tensor(x))
    np.testing.assert_allclose(ys.data, yt.detach().numpy(), rtol=1e-9, atol=1e-11)
    g = RNG.standard_normal(ys.shape)
    ys.backward(seqlab.tensor(g))
    yt.backward(torch.tensor(g))
    sp, tp = dict(s.named_parameters()), dict(t.named_parameters())
    assert list(sp) == list(tp)
    for k in tp:
        np.testing.assert_allclose(sp[k].grad, tp[k].grad.numpy(), rtol=1e-8, atol=1e-10, err_msg=k)


# ---- orthogonal ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("trivialization", [True, False])
@pytest.mark.parametrize("omap", MAPS)
@pytest.mark.parametrize("shape", SHAPES)
def test_orthogonal_registration_matches_torch(shape, omap, trivialization):
    s, t = _pair_linear(*shape)
    TP.orthogonal(t, orthogonal_map=omap, use_trivialization=trivialization)
    assert P.orthogonal(s, orthogonal_map=omap, use_trivialization=trivialization) is s
    assert type(s).__name__ == "ParametrizedLinear"
    np.testing.assert_allclose(s.weight.data, t.weight.detach().numpy(), rtol=1e-10, atol=1e-12)
    assert _orthonormal_error(s.weight.data) < 1e-12
    assert list(s.state_dict()) == list(t.state_dict())
    # the gradient of the original depends on the base's columns past the weight's (random for a non-square
    # weight): torch's base, then the same outputs and gradients
    _load(s, t)
    _forward_backward(s, t, shape[0])


@pytest.mark.parametrize("omap", MAPS)
@pytest.mark.parametrize("shape", SHAPES)
def test_orthogonal_torch_checkpoint_after_training(shape, omap):
    """torch trains the original a few steps; its state dict in seqlab gives its weight, outputs and gradients."""
    s, t = _pair_linear(*shape)
    TP.orthogonal(t, orthogonal_map=omap)
    P.orthogonal(s, orthogonal_map=omap)
    opt = torch.optim.SGD(t.parameters(), lr=0.3)
    for _ in range(3):
        opt.zero_grad()
        t(torch.randn(4, shape[0], dtype=torch.float64)).pow(2).sum().backward()
        opt.step()
    opt.zero_grad()
    _load(s, t)
    np.testing.assert_allclose(s.weight.data, t.weight.detach().numpy(), rtol=1e-9, atol=1e-11)
    assert _orthonormal_error(s.weight.data) < 1e-10
    _forward_backward(s, t, shape[0])


@pytest.mark.parametrize("omap", MAPS)
@pytest.mark.parametrize("shape", SHAPES)
def test_orthogonal_assignment_round_trips(shape, omap):
    s, t = _pair_linear(*shape)
    TP.orthogonal(t, orthogonal_map=omap)
    P.orthogonal(s, orthogonal_map=omap)
    o, i = shape[1], shape[0]
    q, _ = np.linalg.qr(RNG.standard_normal((max(o, i), min(o, i))))
    q = q if o >= i else q.T  # (out, in) with orthonormal columns or rows
    s.weight = seqlab.tensor(q)
    with torch.no_grad():
        t.weight = torch.tensor(q)
    np.testing.assert_allclose(s.weight.data, q, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(s.weight.data, t.weight.detach().numpy(), rtol=1e-10, atol=1e-12)
    if o == i:  # a matrix that is not orthogonal: its QR's Q (R's diagonal positive), as torch's
        a = RNG.standard_normal((o, i))
        s.weight = seqlab.tensor(a)
        with torch.no_grad():
            t.weight = torch.tensor(a)
        np.testing.assert_allclose(s.weight.data, t.weight.detach().numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("shape", SHAPES)
def test_orthogonal_householder_without_trivialization_assignment(shape):
    s, t = _pair_linear(*shape)
    TP.orthogonal(t, orthogonal_map="householder", use_trivialization=False)
    P.orthogonal(s, orthogonal_map="householder", use_trivialization=False)
    np.testing.assert_allclose(s.parametrizations.weight.original.data,
                               t.parametrizations.weight.original.detach().numpy(), rtol=1e-9, atol=1e-11)
    a = RNG.standard_normal((shape[1], shape[0]))
    s.weight = seqlab.tensor(a)
    with torch.no_grad():
        t.weight = torch.tensor(a)
    np.testing.assert_allclose(s.weight.data, t.weight.detach().numpy(), rtol=1e-9, atol=1e-11)


@pytest.mark.parametrize("omap", ["matrix_exp", "cayley"])
def test_orthogonal_refusals_as_torch(omap):
    s, t = _pair_linear(3, 3)
    TP.orthogonal(t, orthogonal_map=omap, use_trivialization=False)
    P.orthogonal(s, orthogonal_map=omap, use_trivialization=False)
    with pytest.raises(NotImplementedError) as want:
        t.weight = torch.eye(3, dtype=torch.float64)
    with pytest.raises(NotImplementedError) as got:
        s.weight = seqlab.eye(3, dtype=seqlab.float64)
    assert str(got.value) == str(want.value)
    for call_s, call_t in [(lambda: P.orthogonal(nn.Linear(2, 2), "bias"), lambda: TP.orthogonal(tnn.Linear(2, 2),
                                                                                                   "bias")),
                           (lambda: P.orthogonal(nn.Linear(2, 2), orthogonal_map="qr"),
                            lambda: TP.orthogonal(tnn.Linear(2, 2), orthogonal_map="qr"))]:
        with pytest.raises(ValueError) as want:
            call_t()
        with pytest.raises(ValueError) as got:
            call_s()
        assert str(got.value) == str(want.value)
    P.orthogonal(s2 := nn.Linear(3, 3))
    with pytest.raises(ValueError, match="Expected a matrix or batch of matrices of shape"):
        s2.weight = seqlab.eye(4)


class _Batched(nn.Module):
    def __init__(self, w):
        super().__init__()
        self.w = nn.Parameter(seqlab.tensor(w))

    def forward(self, x):
        return x @ self.w


class _TBatched(tnn.Module):
    def __init__(self, w):
        super().__init__()
        self.w = tnn.Parameter(torch.tensor(w))

    def forward(self, x):
        return x @ self.w


@pytest.mark.parametrize("omap", MAPS)
def test_orthogonal_batch_of_matrices_and_float32(omap):
    w = RNG.standard_normal((2, 5, 3))
    s, t = _Batched(w), _TBatched(w)
    P.orthogonal(s, "w", orthogonal_map=omap)
    TP.orthogonal(t, "w", orthogonal_map=omap)
    np.testing.assert_allclose(s.w.data, t.w.detach().numpy(), rtol=1e-10, atol=1e-12)
    lin = nn.Linear(6, 6)  # float32: orthogonal to float32's precision
    P.orthogonal(lin, orthogonal_map=omap)
    assert lin.weight.dtype == np.float32 and _orthonormal_error(lin.weight.data.astype(np.float64)) < 1e-5


def test_orthogonal_stays_orthogonal_while_training():
    lin = nn.Linear(4, 4)
    lin.to(dtype=np.float64)
    P.orthogonal(lin)
    opt = seqlab.optim.SGD(lin.parameters(), lr=0.5)
    x, target = seqlab.randn(8, 4, dtype=seqlab.float64), seqlab.randn(8, 4, dtype=seqlab.float64)
    losses = []
    for _ in range(5):
        opt.zero_grad()
        loss = ((lin(x) - target) ** 2).mean()
        loss.backward()
        opt.step()
        losses.append(float(loss.data))
    assert losses[-1] < losses[0]
    assert _orthonormal_error(lin.weight.data) < 1e-10


def test_assignment_through_a_parametrization_without_right_inverse_is_refused_as_torch():
    class Double(nn.Module):
        def forward(self, x):
            return 2 * x

    class TDouble(tnn.Module):
        def forward(self, x):
            return 2 * x
    s, t = _pair_linear(3, 3)
    sP.register_parametrization(s, "weight", Double())
    tP.register_parametrization(t, "weight", TDouble())
    with pytest.raises(RuntimeError) as want:
        t.weight = torch.eye(3, dtype=torch.float64)
    with pytest.raises(RuntimeError) as got:
        s.weight = seqlab.eye(3, dtype=seqlab.float64)
    assert str(got.value) == str(want.value).replace("TDouble", "Double")


# ---- matrix_exp, householder_product ---------------------------------------------------------------------------
@pytest.mark.parametrize("shape,scale", [((4, 4), 0.2), ((3, 5, 5), 3.0), ((2, 6, 6), 30.0), ((1, 1), 1.0),
                                         ((0, 2, 2), 1.0), ((2, 0, 0), 1.0)])
def test_matrix_exp_values_and_gradient(shape, scale):
    a = RNG.standard_normal(shape) * scale
    As, At = seqlab.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    es, et = linalg.matrix_exp(As), torch.linalg.matrix_exp(At)
    ref = np.abs(et.detach().numpy()).max() if a.size else 1.0
    np.testing.assert_allclose(es.data, et.detach().numpy(), rtol=0, atol=1e-13 * ref)
    g = RNG.standard_normal(shape)
    es.backward(seqlab.tensor(g))
    et.backward(torch.tensor(g))
    gref = np.abs(At.grad.numpy()).max() if a.size else 1.0
    np.testing.assert_allclose(As.grad, At.grad.numpy(), rtol=0, atol=1e-12 * gref)


def test_matrix_exp_second_derivative_central_differences():
    a, g, d = RNG.standard_normal((3, 3)), RNG.standard_normal((3, 3)), RNG.standard_normal((3, 3))

    def first(x):  # the gradient of <g, exp(x)>, by seqlab's backward
        xs = seqlab.tensor(x, requires_grad=True)
        (linalg.matrix_exp(xs) * seqlab.tensor(g)).sum().backward()
        return xs.grad

    As = seqlab.tensor(a, requires_grad=True)
    (gs,) = seqlab.autograd.grad((linalg.matrix_exp(As) * seqlab.tensor(g)).sum(), As, create_graph=True)
    (hd,) = seqlab.autograd.grad(gs, As, seqlab.tensor(d))  # d · ∂(grad)/∂A
    eps = 1e-6
    num = np.einsum("ij,ijkl->kl", d, np.stack([
        np.stack([(first(a + eps * _e(k, m)) - first(a - eps * _e(k, m))) / (2 * eps) for m in range(3)])
        for k in range(3)]).transpose(2, 3, 0, 1))
    np.testing.assert_allclose(hd.data, num, rtol=1e-6, atol=1e-7)


def _e(k, m):
    e = np.zeros((3, 3))
    e[k, m] = 1
    return e


def test_matrix_exp_float32_and_errors_as_torch():
    a = RNG.standard_normal((3, 3)).astype(np.float32)
    out = linalg.matrix_exp(seqlab.tensor(a))
    assert out.dtype == np.float32
    np.testing.assert_allclose(out.data, torch.linalg.matrix_exp(torch.tensor(a)).numpy(), rtol=1e-5, atol=1e-6)
    for bad in (RNG.standard_normal((2, 3)), np.ones((2, 2), dtype=np.int64), RNG.standard_normal(3)):
        with pytest.raises(RuntimeError) as want:
            torch.linalg.matrix_exp(torch.tensor(bad))
        with pytest.raises(RuntimeError) as got:
            linalg.matrix_exp(seqlab.tensor(bad))
        assert str(got.value) == str(want.value)


def test_householder_product_matches_torch():
    a, tau = RNG.standard_normal((2, 5, 3)), RNG.standard_normal((2, 3))
    As, ts = seqlab.tensor(a, requires_grad=True), seqlab.tensor(tau, requires_grad=True)
    At, tt = torch.tensor(a, requires_grad=True), torch.tensor(tau, requires_grad=True)
    qs, qt = householder_product(As, ts), torch.linalg.householder_product(At, tt)
    np.testing.assert_allclose(qs.data, qt.detach().numpy(), rtol=1e-10, atol=1e-12)
    g = RNG.standard_normal(qs.shape)
    qs.backward(seqlab.tensor(g))
    qt.backward(torch.tensor(g))
    np.testing.assert_allclose(As.grad, At.grad.numpy(), rtol=1e-9, atol=1e-11)
    np.testing.assert_allclose(ts.grad, tt.grad.numpy(), rtol=1e-9, atol=1e-11)


# ---- the older spectral_norm -------------------------------------------------------------------------------------
@pytest.mark.parametrize("iters,dim,shape", [(1, 0, (3, 4)), (3, 0, (5, 2)), (2, 1, (4, 3))])
def test_legacy_spectral_norm_from_torch_buffers(iters, dim, shape):
    s, t = _pair_linear(*shape)
    tnn.utils.spectral_norm(t, n_power_iterations=iters, dim=dim)
    assert nn.utils.spectral_norm(s, n_power_iterations=iters, dim=dim) is s
    assert list(s.state_dict()) == list(t.state_dict()) == ["bias", "weight_orig", "weight_u", "weight_v"]
    for _ in range(2):  # torch's buffers after some training forwards
        t(torch.randn(2, shape[0], dtype=torch.float64))
    _load(s, t)
    for mode in ("train", "eval", "train"):
        s.train(mode == "train")
        t.train(mode == "train")
        for p in list(s.parameters()) + list(t.parameters()):
            p.grad = None
        _forward_backward(s, t, shape[0])
        np.testing.assert_allclose(s.weight.data, t.weight.detach().numpy(), rtol=1e-10, atol=1e-12)
        for k in ("weight_u", "weight_v"):
            np.testing.assert_allclose(getattr(s, k).data, getattr(t, k).numpy(), rtol=1e-10, atol=1e-12)
    nn.utils.remove_spectral_norm(s)
    tnn.utils.remove_spectral_norm(t)
    assert list(s.state_dict()) == list(t.state_dict()) == ["bias", "weight"]
    assert isinstance(s.weight, nn.Parameter)
    np.testing.assert_allclose(s.weight.data, t.weight.detach().numpy(), rtol=1e-10, atol=1e-12)
    _forward_backward(s, t, shape[0])


def test_legacy_spectral_norm_estimate_and_refusals():
    lin = nn.Linear(6, 4)
    lin.to(dtype=np.float64)
    w = lin.weight.data.copy()
    nn.utils.spectral_norm(lin, n_power_iterations=30)
    lin(seqlab.zeros(1, 6, dtype=seqlab.float64))
    np.testing.assert_allclose(np.linalg.norm(lin.weight.data, 2), 1.0, rtol=1e-6)
    np.testing.assert_allclose(lin.weight_orig.data, w)
    with pytest.raises(RuntimeError, match="Cannot register two spectral_norm hooks"):
        nn.utils.spectral_norm(lin)
    with pytest.raises(ValueError, match="spectral_norm of 'bias' not found"):
        nn.utils.remove_spectral_norm(lin, "bias")
    with pytest.raises(ValueError, match="n_power_iterations to be positive"):
        nn.utils.spectral_norm(nn.Linear(2, 2), n_power_iterations=0)
    # the parametrization form is still parametrizations.spectral_norm
    assert P.spectral_norm is not nn.utils.spectral_norm


# ---- the device path ---------------------------------------------------------------------------------------------
def test_on_the_cupy_stand_in(cuda):
    """matrix_exp, orthogonal (each map, its QR on the host), the older spectral_norm and seqlab.func.grad on device
    arrays: the same values and gradients as on the CPU."""
    a0, x0 = RNG.standard_normal((2, 4, 4)), RNG.standard_normal((3, 4))
    state = {k: v.numpy() for k, v in tnn.Linear(4, 5).double().state_dict().items()}

    def run(device):
        a = seqlab.tensor(a0, device=device, requires_grad=True)
        outs = [linalg.matrix_exp(a)]
        x = seqlab.tensor(x0, device=device)
        for omap in ("matrix_exp", "cayley", "householder"):
            lin = nn.Linear(4, 5)
            lin.to(dtype=np.float64)
            lin.load_state_dict(state)
            lin.to(device)
            P.orthogonal(lin, orthogonal_map=omap)
            outs.append(lin(x))
        sn = nn.Linear(4, 5)
        sn.to(dtype=np.float64)
        sn.load_state_dict(state)
        sn.to(device)
        nn.utils.spectral_norm(sn)
        sn.weight_u.data[...] = sn.weight_u.data * 0 + 0.5  # the same start on both
        sn.weight_v.data[...] = sn.weight_v.data * 0 + 0.5
        outs.append(sn(x))
        outs.append(seqlab.func.grad(lambda t: (t.tanh() ** 2).sum())(a))
        sum((o * o).sum() for o in outs).backward()
        return [o.data for o in outs] + [a.grad]

    host, device = run("cpu"), run("cuda")
    for h, d in zip(host, device):
        assert type(d).__module__.startswith("cupy")
        np.testing.assert_allclose(cuda.asnumpy(d), h, rtol=1e-9, atol=1e-10)
