"""The functions of autograd/tensor_extra.py, tensor_extra_stats.py and toplevel_extra.py against torch: values,
result dtypes, gradients (float64, with a random cotangent), error types, on several dtypes and shapes (0-d and
empty ones too), and a few on the CuPy stand-in."""
import math
import warnings

import numpy as np
import pytest

import seqlab
from seqlab import backend

torch = pytest.importorskip("torch")

NAN, INF = math.nan, math.inf
RNG = np.random.default_rng(0)


# ---- helpers ------------------------------------------------------------------------------------------------
def make(dtype: str, shape: tuple, seed: int = 0) -> np.ndarray:
    """Numbers of `dtype` and `shape`: normals × 3 for floats, small signed ints, random bools."""
    rng = np.random.default_rng(seed)
    if dtype == "bool":
        return np.asarray(rng.random(shape) < 0.5)
    if dtype.startswith(("int", "uint")):
        low = 0 if dtype.startswith("uint") else -6
        return np.asarray(rng.integers(low, 7, size=shape)).astype(dtype)
    return np.asarray(rng.standard_normal(shape) * 3).astype(dtype)


def _torch_dtype_name(t) -> np.dtype:
    return np.dtype(str(t.dtype).removeprefix("torch."))


def assert_same(ours, theirs, tol=None):
    """Equal dtypes, shapes and values (floats to 1e-6 in float32, 1e-12 in float64; NaN equal NaN)."""
    if isinstance(theirs, (tuple, list)):
        assert isinstance(ours, (tuple, list)) and len(ours) == len(theirs), (ours, theirs)
        for a, b in zip(ours, theirs):
            assert_same(a, b, tol)
        return
    if isinstance(theirs, torch.dtype):  # seqlab's dtypes are NumPy's
        assert ours == np.dtype(str(theirs).removeprefix("torch.")), (ours, theirs)
        return
    if not isinstance(theirs, torch.Tensor):
        assert ours == theirs and type(ours) is type(theirs), (ours, theirs)
        return
    assert isinstance(ours, seqlab.Tensor), type(ours)
    a, b = ours.numpy(), theirs.detach().numpy()
    assert a.dtype == _torch_dtype_name(theirs), (a.dtype, theirs.dtype)
    assert a.shape == b.shape, (a.shape, b.shape)
    if a.dtype.kind == "f":
        t = tol or (1e-5 if a.dtype == np.float32 else 1e-12)
        np.testing.assert_allclose(a, b, rtol=t, atol=t, equal_nan=True)
    else:
        np.testing.assert_array_equal(a, b)


def _wrap(lib, a, grad=False):
    if not isinstance(a, np.ndarray):
        return a
    if lib is torch:
        return torch.from_numpy(a.copy()).requires_grad_(grad and a.dtype.kind == "f")
    return seqlab.tensor(a.copy(), requires_grad=grad and a.dtype.kind == "f")


def both(fn, *arrays, tol=None, **kwargs):
    """fn(lib, *tensors, **kwargs) with seqlab and with torch on the same arrays: equal results, or an error of
    torch's type in seqlab too. Returns seqlab's result (None after an error)."""
    try:
        expected = fn(torch, *[_wrap(torch, a) for a in arrays], **kwargs)
    except Exception as e:  # noqa: BLE001 (its type is what seqlab must raise)
        with pytest.raises(type(e)):
            fn(seqlab, *[_wrap(seqlab, a) for a in arrays], **kwargs)
        return None
    got = fn(seqlab, *[_wrap(seqlab, a) for a in arrays], **kwargs)
    assert_same(got, expected, tol)
    return got


def grads(fn, *arrays, tol=1e-10, **kwargs):
    """Values and the gradients of a random cotangent of fn's (first) output, float64, seqlab against torch."""
    out = {}
    for lib in (torch, seqlab):
        inputs = [_wrap(lib, a, grad=True) for a in arrays]
        res = fn(lib, *inputs, **kwargs)
        res = res[0] if isinstance(res, tuple) else res
        cot = np.random.default_rng(1).standard_normal(tuple(res.shape))
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            res.backward(torch.from_numpy(cot) if lib is torch else seqlab.tensor(cot))
        g = [None if not isinstance(x, (torch.Tensor, seqlab.Tensor)) or x.grad is None else np.asarray(x.grad)
             for x in inputs]
        out[lib] = (res, g)
    assert_same(out[seqlab][0], out[torch][0], tol)
    for a, b in zip(out[seqlab][1], out[torch][1]):
        if b is None:
            assert a is None or not np.any(a), a
        else:
            assert a is not None
            np.testing.assert_allclose(a, b, rtol=tol, atol=tol, equal_nan=True)


SPECIAL = np.array([-3.0, -0.5, -0.0, 0.0, 0.5, 2.0, 1000.0, -1000.0, INF, -INF, NAN])


# ---- binary element-wise: logaddexp(2), fmax, fmin, copysign, float_power, heaviside ------------------------
BINARY = ["logaddexp", "logaddexp2", "fmax", "fmin", "copysign", "float_power", "heaviside"]
DTYPE_PAIRS = [("float32", "float32"), ("float64", "float64"), ("float32", "float64"), ("float32", "int64"),
               ("int64", "int64"), ("int32", "int64"), ("bool", "bool")]
SHAPE_PAIRS = [((3, 1), (4,)), ((), ()), ((0,), (0,)), ((2, 3), ())]


@pytest.mark.parametrize("name", BINARY)
@pytest.mark.parametrize("dtypes", DTYPE_PAIRS, ids="-".join)
@pytest.mark.parametrize("shapes", SHAPE_PAIRS, ids=str)
def test_binary_as_torch(name, dtypes, shapes):
    a, b = make(dtypes[0], shapes[0], 0), make(dtypes[1], shapes[1], 1)
    with np.errstate(all="ignore"):
        both(lambda lib, x, y: getattr(lib, name)(x, y), a, b)
        both(lambda lib, x, y: getattr(x, name)(y), a, b)


@pytest.mark.parametrize("name", BINARY)
def test_binary_special_values(name):
    a = np.repeat(SPECIAL, len(SPECIAL))
    b = np.tile(SPECIAL, len(SPECIAL))
    with np.errstate(all="ignore"):
        both(lambda lib, x, y: getattr(lib, name)(x, y), a, b)
        both(lambda lib, x, y: getattr(lib, name)(x, y), a.astype(np.float32), b.astype(np.float32))


@pytest.mark.parametrize("name", ["logaddexp", "logaddexp2", "fmax", "fmin", "heaviside"])
def test_binary_take_no_number(name):
    x = np.array([1.0, 2.0])
    both(lambda lib, t: getattr(lib, name)(t, 2.0), x)
    both(lambda lib, t: getattr(lib, name)(2.0, t), x)
    both(lambda lib, t: getattr(t, name)(2), x)


@pytest.mark.parametrize("other", [2, 2.5, -1.5, True])
def test_copysign_and_float_power_take_numbers(other):
    for dtype in ("float32", "int64", "bool"):
        x = make(dtype, (5,))
        both(lambda lib, t: lib.copysign(t, other), x)
        both(lambda lib, t: lib.float_power(t, other), x)
    both(lambda lib, t: lib.float_power(other, t), make("float32", (4,)))
    both(lambda lib, t: lib.copysign(other, t), make("float32", (4,)))


def test_logaddexp_never_overflows():
    big = np.array([1e4, -1e4, 88.0, 700.0], np.float32)
    for name in ("logaddexp", "logaddexp2"):
        out = both(lambda lib, x: getattr(lib, name)(x, x), big)
        assert np.isfinite(out.numpy()).all()


@pytest.mark.parametrize("name", ["logaddexp", "logaddexp2", "fmax", "fmin", "copysign", "float_power"])
def test_binary_gradients(name):
    a = np.array([-2.0, 0.5, 3.0, 3.0, 0.0, -0.0, 1.5, 7.0])
    b = np.array([1.0, 0.5, -1.0, 3.0, 2.0, -2.0, 40.0, -3.0])
    grads(lambda lib, x, y: getattr(lib, name)(x, y), a, b)
    grads(lambda lib, x, y: getattr(lib, name)(x, y), a.reshape(2, 4), b[:4])  # broadcast


@pytest.mark.parametrize("name", ["logaddexp", "logaddexp2", "fmax", "fmin", "copysign"])
def test_binary_gradients_at_special_values(name):
    a = np.repeat(SPECIAL, len(SPECIAL))
    b = np.tile(SPECIAL, len(SPECIAL))
    grads(lambda lib, x, y: getattr(lib, name)(x, y), a, b)


def test_float_power_is_float64_and_its_gradient_float32():
    x = np.array([1.5, 2.0, 0.25], np.float32)
    for lib in (torch, seqlab):
        t = lib.tensor(x, requires_grad=True)
        out = lib.float_power(t, 3)
        out.sum().backward()
        assert str(out.dtype).endswith("float64") and str(t.grad.dtype).endswith("float32")
    grads(lambda lib, v: lib.float_power(v, 0.5), np.array([4.0, 2.0, 9.0]))
    grads(lambda lib, v: lib.float_power(2.0, v), np.array([4.0, -2.0, 0.5]))


def test_heaviside_has_no_gradient_and_needs_one_dtype():
    x = seqlab.tensor([-1.0, 0.0, 2.0, NAN], requires_grad=True)
    out = seqlab.heaviside(x, seqlab.tensor([0.5]))
    assert out.tolist() == [0.0, 0.5, 1.0, 0.0] and not out.requires_grad
    both(lambda lib, u, v: lib.heaviside(u, v), np.array([1.0, 0.0], np.float32), np.array([0.5]))


# ---- unary ---------------------------------------------------------------------------------------------------
UNARY = ["exp2", "deg2rad", "rad2deg", "positive", "bitwise_not"]
UNARY_DTYPES = ["float32", "float64", "int64", "int32", "uint8", "bool"]


@pytest.mark.parametrize("name", UNARY)
@pytest.mark.parametrize("dtype", UNARY_DTYPES)
@pytest.mark.parametrize("shape", [(2, 3), (), (0,)], ids=str)
def test_unary_as_torch(name, dtype, shape):
    x = make(dtype, shape)
    both(lambda lib, t: getattr(lib, name)(t), x)
    both(lambda lib, t: getattr(t, name)(), x)


@pytest.mark.parametrize("name", ["exp2", "deg2rad", "rad2deg", "positive"])
def test_unary_gradients(name):
    grads(lambda lib, t: getattr(lib, name)(t), np.array([-2.0, 0.0, 1.5, 30.0]))


def test_unary_takes_a_tensor_and_positive_is_itself():
    for name in UNARY:
        both(lambda lib: getattr(lib, name)(2))
    x = seqlab.tensor([1.0, 2.0])
    assert seqlab.positive(x) is x and x.positive() is x


@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_logcumsumexp_as_torch(dim, dtype):
    x = make(dtype, (4, 5)) * 100  # would overflow e^x in float32
    both(lambda lib, t: lib.logcumsumexp(t, dim), x)
    both(lambda lib, t: t.logcumsumexp(dim=dim), x)
    grads(lambda lib, t: lib.logcumsumexp(t, dim), make("float64", (4, 5)) * 30)


@pytest.mark.parametrize("values", [[-INF, -INF, 1.0, INF, 2.0], [-INF, -INF, 1.0, 2.0], [1000.0, 1000.0, -1000.0],
                                    [1.0, NAN, 2.0], [INF, INF, 1.0], [3.0]])
def test_logcumsumexp_special_values(values):
    x = np.array(values)
    both(lambda lib, t: lib.logcumsumexp(t, 0), x)
    grads(lambda lib, t: lib.logcumsumexp(t, 0), x)


def test_logcumsumexp_shapes_and_errors():
    both(lambda lib, t: lib.logcumsumexp(t, 0), np.array(2.5))
    both(lambda lib, t: lib.logcumsumexp(t, -1), np.array(2.5))
    both(lambda lib, t: lib.logcumsumexp(t, 0), np.zeros((0, 3)))
    grads(lambda lib, t: lib.logcumsumexp(t, 0), np.array(2.5))
    for x, dim in ((np.array([1, 2]), 0), (np.array([True]), 0), (np.array([1.0]), 1), (np.array(1.0), 1)):
        both(lambda lib, t: lib.logcumsumexp(t, dim), x)
    both(lambda lib, t: lib.logcumsumexp(t), np.array([1.0]))


# ---- bitwise -------------------------------------------------------------------------------------------------
BITWISE = ["bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_left_shift", "bitwise_right_shift"]
BIT_PAIRS = [("int64", "int64"), ("int32", "int64"), ("int8", "int8"), ("uint8", "uint8"), ("bool", "bool"),
             ("float32", "float32"), ("int64", "float32")]


@pytest.mark.parametrize("name", BITWISE)
@pytest.mark.parametrize("dtypes", BIT_PAIRS, ids="-".join)
def test_bitwise_as_torch(name, dtypes):
    a, b = make(dtypes[0], (3, 4), 0), make(dtypes[1], (4,), 1)
    if "shift" in name and dtypes[1] != "bool":
        b = np.abs(b) if b.dtype.kind != "f" else b
    both(lambda lib, x, y: getattr(lib, name)(x, y), a, b)
    if name != "bitwise_xor" or "f" not in a.dtype.kind + b.dtype.kind:  # Tensor.bitwise_xor is `^`: TypeError
        both(lambda lib, x, y: getattr(x, name)(y), a, b)
    both(lambda lib, x, y: getattr(lib, name)(x, y), a, np.array(b[0]))  # 0-d other


@pytest.mark.parametrize("name", BITWISE)
@pytest.mark.parametrize("number", [3, True, 2.0, -1])
def test_bitwise_with_numbers(name, number):
    for dtype in ("int64", "int32", "bool", "uint8"):
        x = make(dtype, (5,))
        both(lambda lib, t: getattr(lib, name)(t, number), x)
        both(lambda lib, t: getattr(lib, name)(number, t), np.abs(x) if dtype != "bool" else x)


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int32", "int64"])
def test_shifts_past_the_width(dtype):
    bits = np.dtype(dtype).itemsize * 8
    a = np.array([-8, 8, 1, -1, 100, 3], dtype=np.int64).astype(dtype)
    s = np.array([-1, bits, bits + 5, bits - 1, 1, -3], dtype=np.int64).astype(dtype)
    for name in ("bitwise_left_shift", "bitwise_right_shift"):
        both(lambda lib, x, y: getattr(lib, name)(x, y), a, s)


def test_shift_and_and_operators():
    i = np.array([1, 2, -8])
    both(lambda lib, t: t << 2, i)
    both(lambda lib, t: t >> 1, i)
    both(lambda lib, t: 2 << abs(t), i)
    both(lambda lib, t: 64 >> abs(t), i)
    both(lambda lib, t: 5 & t, i)
    both(lambda lib, t: True & t, np.array([True, False]))
    both(lambda lib, t: t << 1, np.array([1.0]))
    both(lambda lib, t: t << t, np.array([True]))


# ---- inner, diagflat, rot90, dist -----------------------------------------------------------------------------
@pytest.mark.parametrize("shapes", [((3,), (3,)), ((2, 3), (4, 3)), ((2, 1, 3), (3,)), ((), (2, 3)), ((2, 3), ()),
                                    ((0,), (0,)), ((2, 3), (2,))], ids=str)
@pytest.mark.parametrize("dtypes", [("float32", "float32"), ("float64", "float64"), ("int64", "int64"),
                                    ("bool", "bool"), ("float32", "int64")], ids="-".join)
def test_inner_as_torch(shapes, dtypes):
    a, b = make(dtypes[0], shapes[0], 0), make(dtypes[1], shapes[1], 1)
    both(lambda lib, x, y: lib.inner(x, y), a, b, tol=1e-5)
    both(lambda lib, x, y: x.inner(y), a, b, tol=1e-5)


def test_inner_gradient_and_errors():
    grads(lambda lib, x, y: lib.inner(x, y), make("float64", (2, 3)), make("float64", (4, 3), 1))
    grads(lambda lib, x, y: lib.inner(x, y), make("float64", ()), make("float64", (4, 3), 1))
    both(lambda lib, x: lib.inner(x, 2.0), make("float32", (3,)))


@pytest.mark.parametrize("shape", [(3,), (2, 3), (), (0,), (2, 2, 2)], ids=str)
@pytest.mark.parametrize("offset", [0, 2, -1])
@pytest.mark.parametrize("dtype", ["float32", "int64", "bool"])
def test_diagflat_as_torch(shape, offset, dtype):
    both(lambda lib, t: lib.diagflat(t, offset), make(dtype, shape))
    both(lambda lib, t: t.diagflat(offset=offset), make(dtype, shape))


def test_diagflat_gradient():
    grads(lambda lib, t: lib.diagflat(t, -1), make("float64", (2, 2)))


@pytest.mark.parametrize("k", [0, 1, 2, 3, -1, 5, -6])
@pytest.mark.parametrize("dims", [(0, 1), (1, 0), (0, -1), (2, 0)], ids=str)
def test_rot90_as_torch(k, dims):
    for dtype in ("float32", "int64", "bool"):
        both(lambda lib, t: lib.rot90(t, k, dims), make(dtype, (2, 3, 4)))
    grads(lambda lib, t: t.rot90(k=k, dims=dims), make("float64", (2, 3, 4)))


def test_rot90_copies_and_errors():
    x = seqlab.tensor(np.arange(6.0).reshape(2, 3))
    for k in range(4):
        assert not np.shares_memory(np.asarray(x.rot90(k).data), np.asarray(x.data))
    for args in [(1, (0, 0)), (1, (0,)), (1, (0, 2)), (1.5, (0, 1)), (1, (0, 1, 1))]:
        both(lambda lib, t: lib.rot90(t, *args), np.arange(6.0).reshape(2, 3))
    both(lambda lib, t: lib.rot90(t), np.arange(3.0))


@pytest.mark.parametrize("p", [2, 1, 0, 3, 1.5, 0.5, -1, INF, -INF])
def test_dist_as_torch(p):
    a, b = make("float64", (2, 3), 0), make("float64", (3,), 1)
    both(lambda lib, x, y: lib.dist(x, y, p), a, b)
    both(lambda lib, x, y: x.dist(y, p=p), a.astype(np.float32), b.astype(np.float32))
    if p != 0:  # torch's backward of p = 0 fails; seqlab's gradient is 0
        grads(lambda lib, x, y: lib.dist(x, y, p), a, b)
        b2 = a[0].copy()
        b2[0] += 1.0  # two coordinates at zero distance: gradient 0 there, not NaN
        grads(lambda lib, x, y: lib.dist(x, y, p), a[0], b2)


def test_dist_dtypes_and_errors():
    f, i = make("float32", (3,)), make("int64", (3,))
    both(lambda lib, x, y: lib.dist(x, y), f, i)
    both(lambda lib, x, y: lib.dist(x, y), f, make("float64", (3,)))
    both(lambda lib, x, y: lib.dist(x, y), f, np.array(1.0))
    both(lambda lib, x, y: lib.dist(x, y), i, i)
    both(lambda lib, x, y: lib.dist(x, y), np.array([True]), np.array([False]))
    both(lambda lib, x, y: lib.dist(x, y), f, np.zeros(4, np.float32))
    both(lambda lib, x: lib.dist(x, 2.0), f)
    both(lambda lib, x, y: lib.dist(x, y, "fro"), f, f)


# ---- cov, corrcoef -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("shape", [(2, 5), (3, 4), (5,), (1, 4), (), (2, 1), (2, 0), (0, 3)], ids=str)
@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "bool"])
def test_cov_corrcoef_as_torch(shape, dtype):
    x = make(dtype, shape)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        both(lambda lib, t: lib.cov(t), x)
        both(lambda lib, t: t.corrcoef(), x)
        for c in (0, 2, 7):
            both(lambda lib, t: t.cov(correction=c), x)


@pytest.mark.parametrize("weights", ["f", "a", "fa"])
def test_cov_weights(weights):
    x = make("float64", (3, 5))
    fw = np.array([1, 2, 0, 3, 1])
    aw = np.array([0.5, 1.0, 2.0, 0.25, 1.5])

    def fn(lib, t, a):
        kw = {}
        if "f" in weights:
            kw["fweights"] = lib.tensor(fw)
        if "a" in weights:
            kw["aweights"] = a
        return lib.cov(t, correction=1, **kw)

    both(fn, x, aw)
    both(fn, make("int64", (3, 5)), aw)
    grads(fn, x, aw)


def test_cov_errors():
    x = make("float32", (2, 3))
    cases = [dict(fweights=np.array([1.0, 2.0, 3.0])), dict(aweights=np.array([1, 2, 3])),
             dict(fweights=np.array([1, -2, 3])), dict(aweights=np.array([1.0, -2.0, 3.0], np.float32)),
             dict(fweights=np.array([1, 2])), dict(fweights=np.array([[1, 2, 3]])),
             dict(aweights=np.zeros(3, np.float32)), dict(fweights=np.array([True, True, False]))]
    for kw in cases:
        both(lambda lib, t, w: lib.cov(t, **{k: w for k in kw}), x, next(iter(kw.values())))
    for c in (1.5, True):
        both(lambda lib, t: lib.cov(t, correction=c), x)
    both(lambda lib, t: lib.cov(t, 1), x)
    both(lambda lib, t: lib.cov(t), np.zeros((2, 3, 4)))
    both(lambda lib, t: lib.corrcoef(t), np.zeros((2, 3, 4)))


def test_cov_warns_at_no_degrees_of_freedom():
    with pytest.warns(UserWarning, match="degrees of freedom"):
        seqlab.cov(seqlab.tensor([[1.0, 2.0]]), correction=2)


def test_corrcoef_gradient():
    grads(lambda lib, t: lib.corrcoef(t), np.array([[1.0, 2.0, 3.0], [3.0, 2.5, 1.0], [0.5, 4.0, -1.0]]))
    grads(lambda lib, t: lib.cov(t), make("float64", (3, 6)))


# ---- quantile, nanquantile -----------------------------------------------------------------------------------
INTERPOLATIONS = ["linear", "lower", "higher", "midpoint", "nearest"]


@pytest.mark.parametrize("name", ["quantile", "nanquantile"])
@pytest.mark.parametrize("interpolation", INTERPOLATIONS)
@pytest.mark.parametrize("dim, keepdim", [(None, False), (None, True), (0, False), (1, True), (-1, False)])
def test_quantile_as_torch(name, interpolation, dim, keepdim):
    x = make("float64", (4, 7))
    x[1, 2] = x[3, 0] = NAN
    x[2] = NAN
    for q in (0.0, 0.3, 0.5, 1.0, 1, np.array([0.0, 0.125, 0.375, 0.5, 0.9, 1.0]), np.array(0.7)):
        for dtype in ("float32", "float64"):
            qq = q.astype(dtype) if isinstance(q, np.ndarray) else q
            both(lambda lib, t, *qs: getattr(lib, name)(t, qs[0] if qs else q, dim, keepdim,
                                                        interpolation=interpolation),
                 x.astype(dtype), *([qq] if isinstance(q, np.ndarray) else []))


@pytest.mark.parametrize("name", ["quantile", "nanquantile"])
@pytest.mark.parametrize("interpolation", INTERPOLATIONS)
def test_quantile_gradients(name, interpolation):
    x = make("float64", (3, 6))  # distinct values: no ties to pick between
    q = np.array([0.1, 0.5, 0.75])
    grads(lambda lib, t, qs: getattr(lib, name)(t, qs, dim=1, interpolation=interpolation), x, q)
    grads(lambda lib, t: getattr(t, name)(0.4, interpolation=interpolation), x)
    x[0, 2] = NAN
    grads(lambda lib, t: getattr(lib, name)(t, 0.4, 1, True, interpolation=interpolation), x)


def test_quantile_special_values_and_shapes():
    for values, q in (([1.0, 2.0, INF], 0.75), ([-INF, 2.0, INF], 0.25), ([-INF, 2.0, INF], 0.5),
                      ([NAN, NAN], 0.5), ([3.0, 1.0, 2.0, 2.0], 0.5)):
        for name in ("quantile", "nanquantile"):
            both(lambda lib, t: getattr(lib, name)(t, q), np.array(values))
    for dim, keepdim in ((None, False), (0, True), (-1, False), (None, True)):
        both(lambda lib, t: lib.quantile(t, 0.5, dim, keepdim), np.array(3.0))
        both(lambda lib, t, q: lib.quantile(t, q, dim, keepdim), np.array(3.0), np.array([0.2, 0.9]))


def test_quantile_errors():
    f = make("float32", (2, 3))
    both(lambda lib, t: lib.quantile(t, 0.5), make("int64", (3,)))
    both(lambda lib, t: lib.quantile(t, 0.5), np.array([True]))
    for q in (1.5, -0.1, NAN):
        both(lambda lib, t: lib.quantile(t, q), f)
    both(lambda lib, t, q: lib.quantile(t, q), f, np.array([0.5]))  # float64 q, float32 input
    both(lambda lib, t, q: lib.quantile(t, q), f, np.array([[0.5]], np.float32))
    both(lambda lib, t, q: lib.quantile(t, q), f, np.array([NAN], np.float32))
    both(lambda lib, t: lib.quantile(t, 0.5), np.zeros((0,), np.float32))
    both(lambda lib, t: lib.nanquantile(t, 0.5, dim=1), np.zeros((2, 0), np.float32))
    both(lambda lib, t: lib.quantile(t, 0.5, dim=2), f)
    both(lambda lib, t: lib.quantile(t, 0.5, interpolation="foo"), f)


# ---- unique_consecutive, is_nonzero --------------------------------------------------------------------------
@pytest.mark.parametrize("values", [[1, 1, 2, 2, 3, 1, 1, 2], [[1, 1], [1, 1], [2, 3]], [1.0, 1.0, NAN, NAN, 2.0],
                                    [True, True, False], 3, [], [[1.0, NAN], [1.0, NAN], [0.0, 1.0]]], ids=str)
@pytest.mark.parametrize("dim", [None, 0, 1, -1])
def test_unique_consecutive_as_torch(values, dim):
    x = np.array(values)
    for inverse in (False, True):
        for counts in (False, True):
            both(lambda lib, t: lib.unique_consecutive(t, return_inverse=inverse, return_counts=counts, dim=dim), x)
    both(lambda lib, t: t.unique_consecutive(True, True, dim), x)


def test_unique_consecutive_empty_slices_and_no_gradient():
    both(lambda lib, t: lib.unique_consecutive(t, True, True, dim=0), np.zeros((0, 3)))
    both(lambda lib, t: lib.unique_consecutive(t, True, True, dim=0), np.zeros((2, 0)))
    out = seqlab.tensor([1.0, 1.0, 2.0], requires_grad=True).unique_consecutive()
    assert out.tolist() == [1.0, 2.0] and not out.requires_grad


@pytest.mark.parametrize("values", [[1.0], 0, [[False]], [1, 2], [], NAN, -0.0, [[3]]], ids=str)
def test_is_nonzero_as_torch(values):
    x = np.array(values)
    both(lambda lib, t: lib.is_nonzero(t), x)
    both(lambda lib, t: t.is_nonzero(), x)


# ---- trapezoid -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "bool"])
@pytest.mark.parametrize("shape, dim", [((5,), -1), ((2, 3), 0), ((2, 3), 1), ((2, 0), -1), ((0, 2), -1),
                                        ((3, 1), 1), ((), -1)], ids=str)
def test_trapezoid_spacing_as_torch(dtype, shape, dim):
    y = make(dtype, shape)
    both(lambda lib, t: lib.trapezoid(t, dim=dim), y)
    both(lambda lib, t: lib.trapezoid(t, dx=0.5, dim=dim), y)
    both(lambda lib, t: lib.trapz(t, dim=dim), y)
    both(lambda lib, t: lib.trapz(t, dx=2, dim=dim), y)


@pytest.mark.parametrize("x_shape", [(3,), (2, 3), (1, 3), (3, 1), (2,), ()], ids=str)
@pytest.mark.parametrize("dtypes", [("float32", "float32"), ("float32", "float64"), ("int64", "int64"),
                                    ("float64", "int64")], ids="-".join)
def test_trapezoid_sample_points_as_torch(x_shape, dtypes):
    y = make(dtypes[0], (2, 3))
    x = np.cumsum(np.abs(make(dtypes[1], x_shape, 1)), axis=-1).astype(dtypes[1]) if x_shape else make(dtypes[1], ())
    both(lambda lib, a, b: lib.trapezoid(a, b), y, x)
    both(lambda lib, a, b: lib.trapz(a, b, dim=-1), y, x)


def test_trapezoid_gradients_and_errors():
    grads(lambda lib, y: lib.trapezoid(y, dx=0.25, dim=0), make("float64", (4, 3)))
    grads(lambda lib, y, x: lib.trapezoid(y, x), make("float64", (2, 4)), np.array([0.0, 0.5, 2.0, 2.5]))
    grads(lambda lib, y, x: lib.trapezoid(y, x, dim=0), make("float64", (3, 2)), make("float64", (3, 2), 1))
    y = make("float32", (2, 3))
    both(lambda lib, a: lib.trapezoid(a, 2.0), y)
    both(lambda lib, a, b: lib.trapezoid(a, b, dx=1.0), y, np.arange(3.0, dtype=np.float32))


# ---- atleast_nd, stacking --------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["atleast_1d", "atleast_2d", "atleast_3d"])
def test_atleast_as_torch(name):
    arrays = [make("float32", s) for s in [(), (3,), (2, 3), (2, 3, 4), (0,)]] + [make("int64", (2,))]
    for a in arrays:
        both(lambda lib, t: getattr(lib, name)(t), a)
    both(lambda lib, *ts: getattr(lib, name)(*ts), *arrays)
    both(lambda lib, *ts: getattr(lib, name)(list(ts)), *arrays)
    both(lambda lib, *ts: getattr(lib, name)(tuple(ts[:1])), *arrays)
    both(lambda lib: getattr(lib, name)())
    both(lambda lib: getattr(lib, name)(3))
    x = seqlab.tensor(make("float32", (2, 3, 4)))
    assert getattr(seqlab, name)(x) is x
    grads(lambda lib, t: getattr(lib, name)(t), np.array(2.0))


@pytest.mark.parametrize("name", ["column_stack", "dstack", "row_stack"])
@pytest.mark.parametrize("shapes", [[(3,), (3,)], [(), ()], [(2, 3), (2,)], [(2, 3), (2, 3)], [(2, 3, 4), (2, 1, 4)],
                                    [(3,)], [(2, 3), (3,)]], ids=str)
def test_stacking_as_torch(name, shapes):
    arrays = [make("float32" if i == 0 else "int64", s, i) for i, s in enumerate(shapes)]
    both(lambda lib, *ts: getattr(lib, name)(list(ts)), *arrays)


def test_stacking_errors_and_gradients():
    for name in ("column_stack", "dstack"):
        both(lambda lib: getattr(lib, name)([]))
        both(lambda lib, t: getattr(lib, name)(t), make("float32", (3,)))
        grads(lambda lib, a, b: getattr(lib, name)((a, b)), make("float64", (3,)), make("float64", (3,), 1))


# ---- cdist, pdist ----------------------------------------------------------------------------------------------
P_VALUES = [2.0, 1.0, 0.0, 3.0, 0.5, 1.5, INF]


@pytest.mark.parametrize("p", P_VALUES)
@pytest.mark.parametrize("shapes", [((3, 2), (4, 2)), ((2, 3, 2), (1, 4, 2)), ((5, 3), (5, 3)), ((0, 2), (3, 2)),
                                    ((3, 0), (2, 0))], ids=str)
def test_cdist_as_torch(p, shapes):
    a, b = make("float64", shapes[0], 0), make("float64", shapes[1], 1)
    a.reshape(-1)[:2] = b.reshape(-1)[:2] if a.size >= 2 and b.size >= 2 else a.reshape(-1)[:2]
    both(lambda lib, x, y: lib.cdist(x, y, p), a, b)
    both(lambda lib, x, y: lib.cdist(x, y, p=p, compute_mode="donot_use_mm_for_euclid_dist"),
         a.astype(np.float32), b.astype(np.float32))
    grads(lambda lib, x, y: lib.cdist(x, y, p), a, b)


@pytest.mark.parametrize("p", P_VALUES)
def test_cdist_gradient_at_zero_distance_is_zero(p):
    a = np.array([[1.0, 3.0, -2.0], [0.0, 0.0, 0.0], [1.0, 2.0, 5.0]])
    b = np.array([[1.0, 3.0, -2.0], [0.0, 0.0, 0.0], [1.0, 2.0, 4.0]])  # equal rows, and one coordinate equal
    grads(lambda lib, x, y: lib.cdist(x, y, p), a, b)
    x = seqlab.tensor(a, requires_grad=True)
    seqlab.cdist(x, seqlab.tensor(a), p).sum().backward()
    assert np.isfinite(x.grad).all()


@pytest.mark.parametrize("mode", ["use_mm_for_euclid_dist", "use_mm_for_euclid_dist_if_necessary"])
def test_cdist_matrix_product_path(mode):
    a, b = make("float64", (30, 4), 0), make("float64", (7, 4), 1)
    b[0] = a[0]
    grads(lambda lib, x, y: lib.cdist(x, y, compute_mode=mode), a, b, tol=1e-7)
    both(lambda lib, x, y: lib.cdist(x, y, compute_mode=mode), a.astype(np.float32), b.astype(np.float32), tol=1e-3)


def test_cdist_errors():
    a, b = make("float32", (3, 2)), make("float32", (2, 2), 1)
    both(lambda lib, x, y: lib.cdist(x, y, -1.0), a, b)
    both(lambda lib, x, y: lib.cdist(x, y), make("int64", (3, 2)), make("int64", (3, 2)))
    both(lambda lib, x, y: lib.cdist(x, y), a, b.astype(np.float64))
    both(lambda lib, x, y: lib.cdist(x, y), a[0], b)
    both(lambda lib, x, y: lib.cdist(x, y), a, b[:, :1])
    both(lambda lib, x, y: lib.cdist(x, y), np.zeros((2, 3, 2), np.float32), np.zeros((3, 2, 2), np.float32))
    both(lambda lib, x, y: lib.cdist(x, y, compute_mode="foo"), a, b)


@pytest.mark.parametrize("p", P_VALUES)
@pytest.mark.parametrize("n", [4, 1, 0])
def test_pdist_as_torch(p, n):
    x = make("float64", (n, 3))
    if n > 2:
        x[2] = x[0]
        x[3, 1] = x[0, 1]
    both(lambda lib, t: lib.pdist(t, p), x)
    both(lambda lib, t: lib.pdist(t, p=p), x.astype(np.float32))
    if n:
        grads(lambda lib, t: lib.pdist(t, p), x)


def test_pdist_errors():
    both(lambda lib, t: lib.pdist(t, -1), make("float32", (3, 2)))
    both(lambda lib, t: lib.pdist(t), make("int64", (3, 2)))
    both(lambda lib, t: lib.pdist(t), make("float32", (3,)))
    both(lambda lib, t: lib.pdist(t), make("float32", (2, 3, 2)))


# ---- dtype rules, shapes, predicates, seeds --------------------------------------------------------------------
DTYPE_NAMES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "float32", "float64"]


def _sl(name):
    return getattr(seqlab, name) if name != "bool" else seqlab.bool


@pytest.mark.parametrize("a", DTYPE_NAMES)
def test_promote_types_and_can_cast_as_torch(a):
    for b in DTYPE_NAMES:
        expected = torch.promote_types(getattr(torch, a), getattr(torch, b))
        got = seqlab.promote_types(_sl(a), _sl(b))
        assert got == np.dtype(str(expected).removeprefix("torch.")), (a, b, got, expected)
        assert seqlab.can_cast(_sl(a), _sl(b)) == torch.can_cast(getattr(torch, a), getattr(torch, b)), (a, b)
    assert seqlab.promote_types(getattr(torch, a), int) == np.dtype(str(torch.promote_types(getattr(torch, a), int))
                                                                    .removeprefix("torch."))


@pytest.mark.parametrize("a", ["bool", "uint8", "int32", "int64", "float16", "float32", "float64"])
def test_result_type_as_torch(a):
    operands = [(np.dtype(d), s) for d in ("bool", "uint8", "int32", "int64", "float32", "float64")
                for s in ((), (2,))]
    for s in ((), (2,)):
        x = make(a, s)
        for d, s2 in operands:
            y = make(str(d), s2, 1)
            for pair in ((x, y), (y, x)):
                both(lambda lib, u, v: lib.result_type(u, v), *pair)
        for number in (2, 2.5, True, -1) + ((1 + 2j,) if a != "float16" else ()):  # NumPy has no complex32
            both(lambda lib, u: lib.result_type(u, number), x)
            both(lambda lib, u: lib.result_type(number, u), x)
    for u, v in ((2, 3), (2, 3.0), (True, 2), (True, False), (1.5, 1j)):
        assert seqlab.result_type(u, v) == np.dtype(str(torch.result_type(u, v)).removeprefix("torch."))


def test_dtype_functions_errors():
    both(lambda lib: lib.promote_types("a", lib.int64))
    both(lambda lib: lib.result_type("a", lib.tensor([1.0])))


@pytest.mark.parametrize("shapes", [[(2, 1), (3,)], [], [2, (3, 2)], [(2,), (3,)], [[1, 2], (3, 1)], [(0,), (1,)],
                                    [(-1,), (1,)], [1.5], [(2, 0), (1,)], [(), (4, 1, 2)]], ids=str)
def test_broadcast_shapes_as_torch(shapes):
    got = both(lambda lib: lib.broadcast_shapes(*shapes))
    if got is not None:
        assert isinstance(got, seqlab.Size)


def test_broadcast_shapes_refuses_a_tensor():
    both(lambda lib, t: lib.broadcast_shapes(t), np.array(3))


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "bool"])
def test_predicates_and_detach(dtype):
    x = make(dtype, (2,))
    both(lambda lib, t: lib.is_floating_point(t), x)
    both(lambda lib, t: lib.is_complex(t), x)
    both(lambda lib, t: lib.detach(t), x)
    for name in ("is_floating_point", "is_complex", "detach"):
        both(lambda lib: getattr(lib, name)(3.0))
    y = seqlab.tensor([1.0, 2.0], requires_grad=True) * 2
    assert not seqlab.detach(y).requires_grad and seqlab.detach(y).tolist() == [2.0, 4.0]


def test_seed_and_initial_seed():
    state = seqlab.get_rng_state()
    try:
        seqlab.manual_seed(1234)
        assert seqlab.initial_seed() == 1234
        first = seqlab.rand(3).tolist()
        s = seqlab.seed()
        assert isinstance(s, int) and 0 <= s < 2**64 and seqlab.initial_seed() == s
        seqlab.manual_seed(1234)
        assert seqlab.rand(3).tolist() == first and seqlab.initial_seed() == 1234
        seqlab.manual_seed(s)
        again = seqlab.rand(3).tolist()
        seqlab.seed()
        seqlab.manual_seed(s)
        assert seqlab.rand(3).tolist() == again
    finally:
        seqlab.manual_seed(0)
        seqlab.set_rng_state(state)


def test_names_are_exported():
    for name in ("logaddexp", "cdist", "quantile", "result_type", "trapz", "row_stack", "initial_seed"):
        assert name in seqlab.__all__ and callable(getattr(seqlab, name))
    for name in ("logaddexp", "logcumsumexp", "fmax", "bitwise_left_shift", "cov", "quantile", "rot90", "dist",
                 "unique_consecutive", "is_nonzero", "__lshift__", "__rrshift__", "__rand__"):
        assert hasattr(seqlab.Tensor, name), name


# ---- on the CuPy stand-in (or CuPy on a GPU machine) ------------------------------------------------------------
DEVICE_OPS = {
    "logaddexp": lambda x, y: x.logaddexp(y),
    "logaddexp2": lambda x, y: seqlab.logaddexp2(x, y),
    "logcumsumexp": lambda x, y: x.logcumsumexp(1) + y.logcumsumexp(0),
    "fmax": lambda x, y: seqlab.fmax(x, y),
    "copysign": lambda x, y: x.copysign(y),
    "float_power": lambda x, y: seqlab.float_power(x.abs(), y),
    "quantile": lambda x, y: x.quantile(seqlab.tensor(backend.to_device(np.array([0.2, 0.7]), x.device)), dim=1),
    "cov": lambda x, y: x.cov(aweights=y.abs()),
    "corrcoef": lambda x, y: x.corrcoef(),
    "cdist": lambda x, y: seqlab.cdist(x, x[:2], p=1.5) + seqlab.cdist(x, x[1:]),
    "pdist": lambda x, y: seqlab.pdist(x, p=INF),
    "trapezoid": lambda x, y: seqlab.trapezoid(x, y),
    "dist": lambda x, y: x.dist(y, 3),
    "inner": lambda x, y: x.inner(y),
}


@pytest.mark.parametrize("name", list(DEVICE_OPS))
def test_on_the_device(cuda, name):
    arrays = [RNG.standard_normal((3, 4)), RNG.standard_normal((4,))]
    cpu = [seqlab.tensor(a, requires_grad=True) for a in arrays]
    dev = [seqlab.tensor(backend.to_device(a, "cuda"), requires_grad=True) for a in arrays]
    fn = DEVICE_OPS[name]
    if name == "quantile":
        out_cpu = cpu[0].quantile(seqlab.tensor(np.array([0.2, 0.7])), dim=1)
    else:
        out_cpu = fn(*cpu)
    out_dev = fn(*dev)
    assert out_dev.device == "cuda"
    np.testing.assert_allclose(backend.to_numpy(out_dev.data), out_cpu.numpy(), rtol=1e-10, atol=1e-10)
    out_cpu.sum().backward()
    out_dev.sum().backward()
    for c, d in zip(cpu, dev):
        assert (c.grad is None) == (d.grad is None)
        if c.grad is not None:
            assert backend.device_of(d.grad) == "cuda"
            np.testing.assert_allclose(backend.to_numpy(d.grad), c.grad, rtol=1e-10, atol=1e-10)


def test_integer_ops_on_the_device(cuda):
    a = np.array([[-8, 3, 1], [5, 5, 0]], dtype=np.int64)
    x = seqlab.tensor(backend.to_device(a, "cuda"))
    for out, expected in ((x << 2, a << 2), (x >> 70, a >> 63), (5 & x, 5 & a), (x.bitwise_not(), ~a),
                          (seqlab.bitwise_or(x, 2), a | 2)):
        assert out.device == "cuda"
        np.testing.assert_array_equal(backend.to_numpy(out.data), expected)
    values, inverse, counts = x.unique_consecutive(return_inverse=True, return_counts=True)
    assert values.device == "cuda"
    assert backend.to_numpy(values.data).tolist() == [-8, 3, 1, 5, 0]
    assert backend.to_numpy(counts.data).tolist() == [1, 1, 1, 2, 1]
    assert x.rot90().device == "cuda" and seqlab.heaviside(x, x).device == "cuda"
