"""seqlab.linalg against torch.linalg: values, result dtypes and batched shapes (float64 and float32), gradients
by central differences and against torch, second derivatives of the inverse family, torch's errors (type and
message), torch's older top-level names and Tensor methods, and the CuPy path on the stand-in.

Singular vectors and eigenvectors are defined up to sign, so their checks go through functions of them that are
not (U·diag(S)·Vh, U², ...), as torch's own tests do; symmetric inputs are built inside the function (a + aᵀ,
a·aᵀ + 3I), so central differences see the same function the analytic gradient differentiates.
"""
import numpy as np
import pytest
import torch

import seqlab
from helpers import check_op
from seqlab import autograd
from seqlab import linalg as LA

RNG = np.random.default_rng(0)
LIBS = {"seqlab": seqlab, "torch": torch}
TOL = dict(rtol32=1e-4, atol32=1e-4)  # float32 LAPACK in two builds: rounding differs more than for element-wise ops


def pair(fn):
    """(seqlab's, torch's) of `fn(lib)`: one function written once for both libraries."""
    return fn(seqlab), fn(torch)


def check(fn, inputs, **kw):
    check_op(*pair(fn), inputs, **{**TOL, **kw})


def spd(lib, a):
    """A symmetric positive-definite matrix made from any square `a`."""
    return a @ a.mT + 3 * lib.eye(a.shape[-1], dtype=a.dtype, device=a.device)


def sym(a):
    return a + a.mT


# ---- inverse, determinant, solve -----------------------------------------------------------------------------
@pytest.mark.parametrize("shape", [(3, 3), (2, 4, 4), (2, 1, 2, 2)])
def test_inv_det_slogdet(shape):
    check(lambda lib: lib.linalg.inv, [shape])
    check(lambda lib: lib.linalg.det, [shape])
    check(lambda lib: lambda a: tuple(lib.linalg.slogdet(a)), [shape])
    check(lambda lib: lambda a: tuple(lib.linalg.inv_ex(a)), [shape])


@pytest.mark.parametrize("shapes", [[(3, 3), (3,)], [(3, 3), (3, 2)], [(2, 3, 3), (2, 3)], [(2, 3, 3), (3, 4)],
                                    [(2, 1, 3, 3), (4, 3, 2)], [(3, 3, 3), (3, 3)]])
@pytest.mark.parametrize("left", [True, False])
def test_solve(shapes, left):
    a, b = shapes
    if not left:  # XA = B: B's last dim is A's size (a vector B fits only n = 1, as torch's)
        if len(b) == 1 or (len(b) == len(a) - 1 and b == a[:-1]):
            return
        b = b[:-2] + (b[-1], b[-2])
    check(lambda lib: lambda A, B: lib.linalg.solve(A, B, left=left), [a, b])
    check(lambda lib: lambda A, B: tuple(lib.linalg.solve_ex(A, B, left=left)), [a, b], gradcheck_=False)


def test_solve_result_shapes_follow_torchs_vector_rule():
    for a, b in [((3, 3, 3), (3, 3)), ((2, 3, 3), (3,)), ((2, 3, 3), (2, 3, 1))]:
        A, B = RNG.standard_normal(a), RNG.standard_normal(b)
        assert LA.solve(seqlab.tensor(A), seqlab.tensor(B)).shape == tuple(torch.linalg.solve(
            torch.tensor(A), torch.tensor(B)).shape)


# ---- factorizations ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("shape", [(3, 3), (2, 4, 4)])
@pytest.mark.parametrize("upper", [False, True])
def test_cholesky(shape, upper):
    check(lambda lib: lambda a: lib.linalg.cholesky(spd(lib, a), upper=upper), [shape])
    check(lambda lib: lambda a: tuple(lib.linalg.cholesky_ex(spd(lib, a), upper=upper)), [shape])


def test_cholesky_reads_the_lower_triangle_and_its_gradient_is_symmetric_as_torchs():
    a = spd(np, RNG.standard_normal((4, 4))) + np.triu(RNG.standard_normal((4, 4)), 1)  # upper part ignored
    check(lambda lib: lib.linalg.cholesky, [a], gradcheck_=False)


@pytest.mark.parametrize("shape", [(5, 3), (3, 3), (3, 5), (2, 4, 2), (2, 2, 4)])
@pytest.mark.parametrize("mode", ["reduced", "complete"])
def test_qr(shape, mode):
    differentiable = mode == "reduced" or shape[-2] <= shape[-1]
    check(lambda lib: lambda a: tuple(lib.linalg.qr(a, mode)), [shape], grad=differentiable)
    r = LA.qr(seqlab.tensor(RNG.standard_normal(shape)), "r")
    assert r.Q.shape == (0,) and r.R.shape == shape[:-2] + (min(shape[-2:]), shape[-1])


def _svd_invariants(lib, full_matrices):
    def fn(a):
        u, s, vh = lib.linalg.svd(a, full_matrices)
        k = s.shape[-1]
        u, vh = u[..., :k], vh[..., :k, :]  # the columns past k are any orthonormal completion: no gradient
        return (u * s.unsqueeze(-2)) @ vh, u ** 2, vh ** 2, s
    return fn


@pytest.mark.parametrize("shape", [(4, 3), (3, 4), (3, 3), (2, 5, 3)])
@pytest.mark.parametrize("full_matrices", [True, False])
def test_svd(shape, full_matrices):
    check(lambda lib: _svd_invariants(lib, full_matrices), [shape])
    check(lambda lib: lib.linalg.svdvals, [shape])
    u, s, vh = LA.svd(seqlab.tensor(RNG.standard_normal(shape)), full_matrices)
    tu, ts, tvh = torch.linalg.svd(torch.tensor(RNG.standard_normal(shape)), full_matrices)
    assert (u.shape, s.shape, vh.shape) == (tuple(tu.shape), tuple(ts.shape), tuple(tvh.shape))


@pytest.mark.parametrize("shape", [(3, 3), (2, 4, 4)])
@pytest.mark.parametrize("UPLO", ["L", "U"])
def test_eigh(shape, UPLO):
    check(lambda lib: lambda a: (lambda w, v: (w, v ** 2))(*lib.linalg.eigh(sym(a), UPLO)), [shape])
    check(lambda lib: lambda a: lib.linalg.eigvalsh(sym(a), UPLO), [shape])
    # a matrix that is not symmetric: only the UPLO triangle is read; the gradient is symmetric, as torch's
    check(lambda lib: lambda a: (lambda w, v: (w, v ** 2))(*lib.linalg.eigh(a, UPLO)), [shape], gradcheck_=False)


# ---- pseudo-inverse, rank, powers, least squares ------------------------------------------------------------
@pytest.mark.parametrize("shape", [(4, 3), (3, 4), (2, 3, 3)])
def test_pinv(shape):
    check(lambda lib: lib.linalg.pinv, [shape])
    check(lambda lib: lambda a: lib.linalg.pinv(sym(a[..., :3, :3]), hermitian=True), [shape])
    check(lambda lib: lambda a: lib.pinverse(a), [shape])


def test_pinv_and_matrix_rank_tolerances():
    a = np.diag([3.0, 1e-3, 1e-9])
    for kw in [{}, {"atol": 0.01}, {"rtol": 0.01}, {"atol": 0.01, "rtol": 0.0}, {"atol": 1e-4}]:
        s, t = LA.pinv(seqlab.tensor(a), **kw), torch.linalg.pinv(torch.tensor(a), **kw)
        np.testing.assert_allclose(s.numpy(), t.numpy(), rtol=1e-12)
        for hermitian in (False, True):
            r = LA.matrix_rank(seqlab.tensor(a), hermitian=hermitian, **kw)
            assert r.dtype == np.int64 and r.item() == torch.linalg.matrix_rank(torch.tensor(a), hermitian=hermitian,
                                                                                **kw).item()
    assert LA.matrix_rank(seqlab.tensor(a), tol=0.01).item() == 1
    batch = RNG.standard_normal((3, 4, 2)) @ RNG.standard_normal((3, 2, 5))
    np.testing.assert_array_equal(LA.matrix_rank(seqlab.tensor(batch)).numpy(), [2, 2, 2])


@pytest.mark.parametrize("n", [-3, -1, 0, 1, 2, 5])
def test_matrix_power(n):
    check(lambda lib: lambda a: lib.linalg.matrix_power(a, n), [(2, 3, 3)])
    check(lambda lib: lambda a: a.matrix_power(n), [(3, 3)], dtypes=("float64",))
    ints = np.arange(4).reshape(2, 2)
    if n >= 0:
        s = LA.matrix_power(seqlab.tensor(ints), n)
        assert s.dtype == np.int64 and s.tolist() == torch.linalg.matrix_power(torch.tensor(ints), n).tolist()


@pytest.mark.parametrize("driver", [None, "gels", "gelsy", "gelsd", "gelss"])
@pytest.mark.parametrize("shapes", [[(5, 3), (5, 2)], [(5, 3), (5,)], [(2, 5, 3), (2, 5, 2)], [(2, 4), (2, 3)]])
def test_lstsq(driver, shapes):
    check(lambda lib: lambda a, b: lib.linalg.lstsq(a, b, driver=driver).solution, shapes)
    A, B = (RNG.standard_normal(s) for s in shapes)
    s, t = LA.lstsq(seqlab.tensor(A), seqlab.tensor(B), driver=driver), torch.linalg.lstsq(
        torch.tensor(A), torch.tensor(B), driver=driver)
    for name in ("residuals", "rank", "singular_values"):
        a, b = getattr(s, name), getattr(t, name)
        assert a.dtype == b.numpy().dtype and a.shape == tuple(b.shape), name
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-10, atol=1e-12)


# ---- norms ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("ord", [2, 1, float("inf"), float("-inf"), 0, 3, 0.5])
@pytest.mark.parametrize("dim,keepdim", [(None, False), (-1, False), ((0, 2), True), ([1], False)])
def test_vector_norm(ord, dim, keepdim):
    check(lambda lib: lambda x: lib.linalg.vector_norm(x, ord, dim, keepdim), [(2, 3, 4)], gradcheck_=ord != 0)
    check(lambda lib: lambda x: lib.linalg.vector_norm(x, ord, dim, keepdim, dtype=lib.float64),
          [(2, 3, 4)], dtypes=("float32",), grad=False)


@pytest.mark.parametrize("ord", ["fro", "nuc", float("inf"), float("-inf"), 1, -1, 2, -2])
@pytest.mark.parametrize("dim,keepdim", [((-2, -1), False), ((2, 0), True), ((0, 1), False)])
def test_matrix_norm(ord, dim, keepdim):
    check(lambda lib: lambda a: lib.linalg.matrix_norm(a, ord, dim, keepdim), [(3, 4, 5)])


@pytest.mark.parametrize("shape,ord,dim", [((5,), None, None), ((3, 4), None, None), ((2, 3, 4), None, None),
                                           ((3, 4), "nuc", None), ((3, 4), 2, None), ((4,), 3, None),
                                           ((2, 3, 4), None, 1), ((2, 3, 4), 1, (0, 2)), ((2, 3, 4), "fro", (1, 2))])
def test_norm(shape, ord, dim):
    check(lambda lib: lambda a: lib.linalg.norm(a, ord, dim), [shape])


def test_the_gradient_of_a_norm_at_zero_is_zero_as_torchs():
    x = seqlab.zeros(3, dtype=seqlab.float64, requires_grad=True)
    LA.vector_norm(x).backward()
    assert x.grad.tolist() == [0.0, 0.0, 0.0]


# ---- products ------------------------------------------------------------------------------------------------
def test_products():
    check(lambda lib: lambda a, b: lib.linalg.cross(a, b), [(2, 3), (1, 3)])
    check(lambda lib: lambda a, b: lib.linalg.cross(a, b, dim=0), [(3, 2), (3, 2)])
    check(lambda lib: lambda a: lib.linalg.diagonal(a, offset=1), [(2, 3, 4)])
    check(lambda lib: lambda a, b: lib.linalg.vecdot(a, b), [(2, 3), (3,)])
    check(lambda lib: lambda a, b: lib.linalg.vecdot(a, b, dim=0), [(3, 2), (3, 1)])
    check(lambda lib: lambda a, b, c: lib.linalg.multi_dot([a, b, c]), [(3,), (3, 4), (4,)])
    check(lambda lib: lambda a, b, c, d: lib.linalg.multi_dot([a, b, c, d]), [(2, 3), (3, 4), (4, 2), (2, 5)])
    check(lambda lib: lambda a, b: lib.linalg.matmul(a, b), [(2, 3, 4), (4, 2)])


# ---- singular matrices ---------------------------------------------------------------------------------------
def test_det_gradient_at_singular_matrices():
    """Nearly singular (det ~ 1e-16): torch's gradient, the cofactor matrix. Exactly singular (rank n − 1): the
    cofactor matrix too, finite, where torch 2.13 returns zeros; rank n − 2: zeros."""
    near = RNG.standard_normal((3, 2)) @ RNG.standard_normal((2, 3))
    check(lambda lib: lib.linalg.det, [near], dtypes=("float64",), gradcheck_=False)
    for a, cofactor_t in [(np.array([[1.0, 2.0], [2.0, 4.0]]), np.array([[4.0, -2.0], [-2.0, 1.0]])),
                          (np.array([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 0.0, 1.0]]),
                           np.array([[4.0, 4.0, -4.0], [-2.0, -2.0, 2.0], [0.0, 0.0, 0.0]])),
                          (np.ones((3, 3)), np.zeros((3, 3)))]:
        x = seqlab.tensor(np.stack([a, np.eye(len(a))]), requires_grad=True)
        LA.det(x).sum().backward()
        np.testing.assert_allclose(x.grad[0], cofactor_t, atol=1e-12)
        np.testing.assert_allclose(x.grad[1], np.eye(len(a)), atol=1e-12)
    x = seqlab.tensor([[1.0, 2.0], [2.0, 4.0]], dtype=seqlab.float64, requires_grad=True)
    LA.slogdet(x).logabsdet.backward()
    assert np.isinf(x.grad).all()  # 1/det · cofactor, as torch's


def test_inv_ex_solve_ex_cholesky_ex_report_lapacks_info_without_raising():
    s = np.array([[[1.0, 2.0], [2.0, 4.0]], [[2.0, 0.0], [0.0, 3.0]]])
    for fn in ("inv_ex", "cholesky_ex"):
        a, b = getattr(LA, fn)(seqlab.tensor(s)), getattr(torch.linalg, fn)(torch.tensor(s))
        assert a[1].dtype == np.int32 and a[1].tolist() == b[1].tolist()
        np.testing.assert_allclose(a[0].numpy()[1], b[0].numpy()[1])
        assert np.isnan(a[0].numpy()[0]).all()
    a = LA.solve_ex(seqlab.tensor(s), seqlab.tensor(np.ones((2, 2))))
    assert a.info.tolist() == torch.linalg.solve_ex(torch.tensor(s), torch.ones(2, 2, dtype=torch.float64)
                                                    ).info.tolist() == [2, 0]


# ---- errors: torch's type and message ------------------------------------------------------------------------
SINGULAR = np.array([[[1.0, 0.0], [0.0, 1.0]], [[1.0, 2.0], [2.0, 4.0]]])
NOT_PD = np.array([[[1.0, 0.0], [0.0, 1.0]], [[1.0, 0.0], [0.0, -1.0]]])
ERRORS = [
    (lambda lib: lib.linalg.inv(lib.tensor(SINGULAR)), "LinAlgError"),
    (lambda lib: lib.linalg.inv(lib.tensor(SINGULAR[1])), "LinAlgError"),
    (lambda lib: lib.linalg.inv_ex(lib.tensor(SINGULAR), check_errors=True), "LinAlgError"),
    (lambda lib: lib.linalg.solve(lib.tensor(SINGULAR), lib.ones(2, 2, 1, dtype=lib.float64)), "LinAlgError"),
    (lambda lib: lib.linalg.cholesky(lib.tensor(NOT_PD)), "LinAlgError"),
    (lambda lib: lib.linalg.cholesky(lib.tensor(NOT_PD), upper=True), "LinAlgError"),
    (lambda lib: lib.linalg.inv(lib.ones(2, 2, dtype=lib.int64)), RuntimeError),
    (lambda lib: lib.linalg.det(lib.ones(2, 2, dtype=lib.bool)), RuntimeError),
    (lambda lib: lib.linalg.svd(lib.ones(2, 2, dtype=lib.int64)), RuntimeError),
    (lambda lib: lib.linalg.inv(lib.ones(2, 2, dtype=lib.float16)), RuntimeError),
    (lambda lib: lib.linalg.inv(lib.ones(2, 3)), RuntimeError),
    (lambda lib: lib.linalg.det(lib.ones(3)), RuntimeError),
    (lambda lib: lib.linalg.eigh(lib.ones(2, 3)), RuntimeError),
    (lambda lib: lib.linalg.eigh(lib.ones(2, 2), UPLO="X"), RuntimeError),
    (lambda lib: lib.linalg.qr(lib.ones(2, 2), mode="x"), RuntimeError),
    (lambda lib: lib.linalg.solve(lib.ones(3, 3), lib.ones(2)), RuntimeError),
    (lambda lib: lib.linalg.solve(lib.ones(3, 3), lib.ones(3), left=False), RuntimeError),
    (lambda lib: lib.linalg.solve(lib.ones(3, 3), lib.ones(3, dtype=lib.float64)), RuntimeError),
    (lambda lib: lib.linalg.vector_norm(lib.ones(3, dtype=lib.int64)), RuntimeError),
    (lambda lib: lib.linalg.vector_norm(lib.ones(3, dtype=lib.float64), dtype=lib.float32), RuntimeError),
    (lambda lib: lib.linalg.vector_norm(lib.ones(3), ord="fro"), TypeError),
    (lambda lib: lib.linalg.matrix_norm(lib.ones(3, 3), ord=3), RuntimeError),
    (lambda lib: lib.linalg.matrix_norm(lib.ones(3, 3), ord="abc"), RuntimeError),
    (lambda lib: lib.linalg.matrix_norm(lib.ones(3, 3), dim=(-1, -1)), RuntimeError),
    (lambda lib: lib.linalg.norm(lib.ones(3), "fro"), RuntimeError),
    (lambda lib: lib.linalg.norm(lib.ones(2, 3, 3), 2), RuntimeError),
    (lambda lib: lib.linalg.norm(lib.ones(3, 3, 3), dim=(0, 1, 2)), RuntimeError),
    (lambda lib: lib.linalg.matrix_power(lib.ones(2, 3), 2), RuntimeError),
    (lambda lib: lib.linalg.matrix_power(lib.ones(2, 2), 2.0), TypeError),
    (lambda lib: lib.linalg.matrix_power(lib.ones(2, 2, dtype=lib.int64), -1), RuntimeError),
    (lambda lib: lib.linalg.cross(lib.ones(4), lib.ones(4)), RuntimeError),
    (lambda lib: lib.linalg.cross(lib.ones(2, 3), lib.ones(3)), RuntimeError),
    (lambda lib: lib.linalg.vecdot(lib.ones(3), lib.ones(3, dtype=lib.float64)), RuntimeError),
    (lambda lib: lib.linalg.multi_dot([lib.ones(2, 3)]), RuntimeError),
    (lambda lib: lib.linalg.multi_dot([lib.ones(2, 3), lib.ones(3), lib.ones(3, 2)]), RuntimeError),
    (lambda lib: lib.linalg.multi_dot([lib.ones(2, 3), lib.ones(4, 2)]), RuntimeError),
    (lambda lib: lib.linalg.multi_dot([lib.ones(2, 3), lib.ones(3, 2, dtype=lib.float64)]), RuntimeError),
    (lambda lib: lib.linalg.lstsq(lib.ones(5, 3), lib.ones(5, 2), driver="xx"), RuntimeError),
    (lambda lib: lib.linalg.lstsq(lib.ones(5, 3), lib.ones(4, 2)), RuntimeError),
    (lambda lib: lib.linalg.lstsq(lib.ones(5), lib.ones(5)), RuntimeError),
    (lambda lib: lib.linalg.svd(lib.ones(2, 2), driver="gesvd"), RuntimeError),
    (lambda lib: lib.linalg.inv([[1.0, 2.0], [3.0, 4.0]]), TypeError),
]


@pytest.mark.parametrize("case", range(len(ERRORS)))
def test_errors_as_torchs(case):
    fn, kind = ERRORS[case]
    kind = {"LinAlgError": (LA.LinAlgError, torch.linalg.LinAlgError)}.get(kind, (kind, kind))
    with pytest.raises(kind[1]) as t_err:
        fn(torch)
    with pytest.raises(kind[0]) as s_err:
        fn(seqlab)
    message = str(s_err.value)
    assert "\n" not in message
    if kind[0] is LA.LinAlgError or "linalg." in str(t_err.value).split(":")[0]:
        assert message == str(t_err.value).splitlines()[0]


def test_error_classes():
    assert issubclass(LA.LinAlgError, RuntimeError)
    with pytest.raises(ValueError):  # seqlab's convention beside torch's RuntimeError
        LA.inv(seqlab.ones(2, 3))
    with pytest.raises(TypeError):
        LA.det(seqlab.ones(2, 2, dtype=seqlab.int64))


def test_qr_backward_refusals_as_torchs():
    for mode, shape in [("complete", (4, 3)), ("r", (3, 3))]:
        msgs = []
        for lib in (seqlab, torch):
            a = lib.tensor(RNG.standard_normal(shape), requires_grad=True)
            q, r = lib.linalg.qr(a, mode)
            with pytest.raises(RuntimeError) as err:
                (r.sum() + (q.sum() if mode != "r" else 0)).backward()
            msgs.append(str(err.value).splitlines()[0])
        assert msgs[0] == msgs[1]


# ---- second derivatives --------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["inv", "det", "logabsdet", "solve", "cholesky", "pinv"])
def test_double_backward(name):
    rng = np.random.default_rng(3)
    a0 = rng.standard_normal((2, 3, 3)) + 3 * np.eye(3)
    b0, w, v = rng.standard_normal((2, 3, 2)), rng.standard_normal((2, 3, 3)), rng.standard_normal((2, 3, 3))
    fns = {"inv": lambda lib, a, b: lib.linalg.inv(a), "det": lambda lib, a, b: lib.linalg.det(a),
           "logabsdet": lambda lib, a, b: lib.linalg.slogdet(a)[1], "solve": lambda lib, a, b: lib.linalg.solve(a, b),
           "cholesky": lambda lib, a, b: lib.linalg.cholesky(spd(lib, a)),
           "pinv": lambda lib, a, b: lib.linalg.pinv(a[..., :2])}
    results = []
    for lib, grad in ((seqlab, autograd.grad), (torch, torch.autograd.grad)):
        a, b = lib.tensor(a0, requires_grad=True), lib.tensor(b0, requires_grad=True)
        out = fns[name](lib, a, b)
        weight = lib.tensor(w[..., :out.shape[-2], :out.shape[-1]] if out.ndim == 3 else w[:, 0, 0])
        ga, gb = grad((out * weight).sum(), (a, b), create_graph=True, allow_unused=True)
        second = grad((ga * lib.tensor(v)).sum(), (a, b), allow_unused=True)
        results.append([x for x in (ga, gb, *second) if x is not None])
    assert len(results[0]) == len(results[1])
    for s, t in zip(*results):
        np.testing.assert_allclose(s.detach().numpy() if hasattr(s, "detach") else s.numpy(), t.detach().numpy(),
                                   rtol=1e-9, atol=1e-11)


# ---- torch's older names: top-level functions and Tensor methods --------------------------------------------
@pytest.mark.filterwarnings("ignore:torch.(cholesky|qr) is deprecated:UserWarning")
def test_torch_older_names():
    check(lambda lib: lambda a: (lib.det(a), a.det(), lib.inverse(a), a.inverse(), lib.logdet(spd(lib, a)),
                                 spd(lib, a).logdet(), tuple(lib.slogdet(a)), tuple(a.slogdet())), [(2, 3, 3)])
    check(lambda lib: lambda a: (lib.cholesky(spd(lib, a)), spd(lib, a).cholesky(upper=True),
                                 lib.matrix_power(a, 3), lib.pinverse(a, rcond=1e-10)), [(3, 3)])
    check(lambda lib: lambda a: (tuple(lib.qr(a)), tuple(a.qr(some=False))), [(2, 3)])
    check(lambda lib: lambda a: (lambda u, s, v: (u * s.unsqueeze(-2) @ v.mT, s, u ** 2, v ** 2))(*lib.svd(a)),
          [(4, 3)])
    check(lambda lib: lambda a: (lambda u, s, v: (u ** 2, s, v[:, :3] ** 2))(*a.svd(some=False)), [(3, 4)])
    u, s, v = seqlab.svd(seqlab.tensor(RNG.standard_normal((4, 3))), compute_uv=False)
    assert u.shape == (4, 4) and v.shape == (3, 3) and not u.numpy().any() and s.shape == (3,)
    assert seqlab.slogdet(seqlab.eye(2)).logabsdet.item() == 0.0
    assert np.isnan(seqlab.logdet(-seqlab.eye(3)).item()) and seqlab.logdet(seqlab.zeros(2, 2)).item() == -np.inf
    for name in ("det", "logdet", "slogdet", "inverse", "matrix_power", "pinverse", "svd", "qr", "cholesky"):
        assert name in seqlab.__all__ and hasattr(seqlab.Tensor, name)


# ---- the device path -----------------------------------------------------------------------------------------
def test_on_the_cupy_stand_in(cuda):
    """Device arrays through cupy.linalg: the same values and gradients as on the CPU; a singular matrix found
    from the non-finite result raises torch's error as on the CPU."""
    a0, b0 = RNG.standard_normal((2, 4, 4)), RNG.standard_normal((2, 4, 2))

    def run(device):
        a = seqlab.tensor(a0, device=device, requires_grad=True)
        b = seqlab.tensor(b0, device=device, requires_grad=True)
        u, s, vh = LA.svd(a[..., :3], full_matrices=False)
        w, v = LA.eigh(sym(a))
        q, r = LA.qr(a[..., :3])
        outs = [LA.inv(a), LA.det(a), LA.slogdet(a).logabsdet, LA.solve(a, b), LA.cholesky(spd(seqlab, a)),
                u * s.unsqueeze(-2) @ vh, s, w, v ** 2, q, r, LA.pinv(a[..., :3]), LA.matrix_norm(a, "nuc"),
                LA.lstsq(a[..., :3], b).solution, LA.matrix_power(a, -2)]
        sum((o * o).sum() for o in outs).backward()
        ints = [LA.matrix_rank(a), LA.inv_ex(a).info]
        return [o.data for o in outs + ints] + [a.grad, b.grad]

    host = run("cpu")
    device = run("cuda")
    for h, d in zip(host, device):
        assert type(d).__module__.startswith("cupy") or not isinstance(d, np.ndarray)
        np.testing.assert_allclose(cuda.asnumpy(d), h, rtol=1e-9, atol=1e-10)
    with pytest.raises(LA.LinAlgError, match=r"\(Batch element 1\): The diagonal element 2 is zero"):
        LA.inv(seqlab.tensor(SINGULAR, device="cuda"))
