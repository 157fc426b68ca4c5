"""More torch names that nanoGPT/d2l ports reach for, each compared with torch: constants (inf, pi, ...),
finfo/iinfo, Size, the *_like draws, randperm/bernoulli, the in-place random fills (normal_, uniform_, ...),
where(condition), f-strings of 0-d tensors, tensor type names (LongTensor, x.type(...)),
nn.init._calculate_fan_in_and_fan_out, the default dtype, and seqlab.Generator with `generator=`."""
import math

import numpy as np
import pytest
import torch
from helpers import same_as_torch

import seqlab

DTYPES = ["float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8"]


# ---- 1. constants -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["inf", "pi", "e"])
def test_constants_are_torchs(name):
    assert getattr(seqlab, name) == getattr(torch, name) and type(getattr(seqlab, name)) is float


def test_nan_and_newaxis():
    assert math.isnan(seqlab.nan) and math.isnan(torch.nan)
    assert seqlab.newaxis is None and torch.newaxis is None
    x = np.arange(6.0).reshape(2, 3)
    same_as_torch(seqlab.tensor(x)[:, seqlab.newaxis], torch.tensor(x)[:, torch.newaxis])
    assert (seqlab.full((2,), seqlab.inf) == seqlab.inf).all()


# ---- 2. finfo / iinfo -------------------------------------------------------------------------------------
FINFO_ATTRS = ["bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution", "dtype"]


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_finfo_matches_torch(dtype):
    want = torch.finfo(getattr(torch, dtype))
    for spelled in (getattr(seqlab, dtype), np.dtype(dtype), dtype, getattr(torch, dtype)):
        got = seqlab.finfo(spelled)
        for attr in FINFO_ATTRS:
            assert getattr(got, attr) == getattr(want, attr), (spelled, attr)
            assert type(getattr(got, attr)) is type(getattr(want, attr)), (spelled, attr)
        assert repr(got) == repr(want)


def test_finfo_without_a_dtype_is_the_default_float_dtype():
    assert seqlab.finfo().eps == torch.finfo().eps == seqlab.finfo(seqlab.float32).eps


@pytest.mark.parametrize("dtype", ["int8", "int16", "int32", "int64", "uint8"])
def test_iinfo_matches_torch(dtype):
    want = torch.iinfo(getattr(torch, dtype))
    for spelled in (getattr(seqlab, dtype), dtype, getattr(torch, dtype)):
        got = seqlab.iinfo(spelled)
        assert (got.bits, got.max, got.min, got.dtype) == (want.bits, want.max, want.min, want.dtype)
        assert type(got.max) is int and repr(got) == repr(want)
    assert seqlab.iinfo(seqlab.long).max == 2 ** 63 - 1 and seqlab.iinfo(seqlab.int).min == -2 ** 31


@pytest.mark.parametrize("call", [lambda L: L.finfo(L.int64), lambda L: L.iinfo(L.float32),
                                  lambda L: L.iinfo(L.bool)], ids=["finfo-int", "iinfo-float", "iinfo-bool"])
def test_finfo_and_iinfo_refuse_the_other_kind_as_torch(call):
    with pytest.raises(TypeError):
        call(torch)
    with pytest.raises(TypeError):
        call(seqlab)


def test_finfo_of_bfloat16_says_why_not():
    with pytest.raises(TypeError, match="bfloat16"):
        seqlab.finfo(seqlab.bfloat16)


# ---- 3. Size ----------------------------------------------------------------------------------------------
def test_size_is_a_tuple_like_torchs():
    s, t = seqlab.Size([2, 3]), torch.Size([2, 3])
    assert s == (2, 3) == t and isinstance(s, tuple)
    assert repr(s) == "seqlab.Size([2, 3])" == repr(t).replace("torch", "seqlab") == str(s)
    assert s.numel() == t.numel() == 6 and seqlab.Size([]).numel() == torch.Size([]).numel() == 1
    assert repr(seqlab.Size()) == "seqlab.Size([])"
    for got, want in [(s[1:], t[1:]), (s + (4,), t + (4,)), ((4,) + s, (4,) + t)]:
        assert type(got) is seqlab.Size and type(want) is torch.Size and tuple(got) == tuple(want)
    assert s[0] == 2 and type(s[0]) is int
    assert seqlab.Size([seqlab.tensor(3), np.int64(4)]) == (3, 4)
    with pytest.raises(TypeError):
        torch.Size([2.5])
    with pytest.raises(TypeError, match="item 0"):
        seqlab.Size([2.5])


def test_a_shape_equals_a_size():
    x = seqlab.zeros(2, 3)
    assert x.shape == seqlab.Size([2, 3]) and x.size() == seqlab.Size([2, 3])
    assert seqlab.zeros(seqlab.Size([4, 1])).shape == (4, 1)
    assert x.reshape(seqlab.Size([3, 2])).shape == (3, 2)


# ---- 4. *_like draws, randperm, bernoulli ------------------------------------------------------------------
@pytest.mark.parametrize("name", ["empty_like", "rand_like", "randn_like"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_float_likes_take_the_shape_and_dtype(name, dtype):
    s = getattr(seqlab, name)(seqlab.zeros(3, 4, dtype=dtype))
    t = getattr(torch, name)(torch.zeros(3, 4, dtype=getattr(torch, dtype)))
    assert s.shape == tuple(t.shape) and s.dtype == np.dtype(dtype) and str(t.dtype) == f"torch.{dtype}"
    assert not s.requires_grad
    s2 = getattr(seqlab, name)(seqlab.zeros(3, 4), dtype=seqlab.float64, requires_grad=True)
    assert s2.dtype == np.float64 and s2.requires_grad and s2.is_leaf


@pytest.mark.parametrize("name", ["rand_like", "randn_like"])
def test_float_draws_like_an_integer_tensor_are_refused_as_torch(name):
    with pytest.raises((RuntimeError, NotImplementedError)):
        getattr(torch, name)(torch.zeros(3, dtype=torch.long))
    with pytest.raises(TypeError, match="floating-point"):
        getattr(seqlab, name)(seqlab.zeros(3, dtype=seqlab.long))
    assert getattr(seqlab, name)(seqlab.zeros(3, dtype=seqlab.long), dtype=seqlab.float32).dtype == np.float32


def test_empty_like_is_zeros():
    x = seqlab.empty_like(seqlab.ones(2, 3, dtype=seqlab.int32))
    assert x.dtype == np.int32 and x.tolist() == [[0] * 3] * 2


def test_rand_like_and_randn_like_statistics():
    seqlab.manual_seed(0)
    u = seqlab.rand_like(seqlab.zeros(200_000)).numpy()
    n = seqlab.randn_like(seqlab.zeros(200_000, dtype=seqlab.float64)).numpy()
    assert u.min() >= 0 and u.max() < 1 and abs(u.mean() - 0.5) < 0.005
    assert abs(n.mean()) < 0.01 and abs(n.std() - 1) < 0.01 and n.dtype == np.float64


@pytest.mark.parametrize("args", [(10,), (3, 10)], ids=["high", "low-high"])
@pytest.mark.parametrize("dtype", ["int64", "int32", "float32"])
def test_randint_like_as_torch(args, dtype):
    s = seqlab.randint_like(seqlab.zeros(5000, dtype=dtype), *args)
    t = torch.randint_like(torch.zeros(5000, dtype=getattr(torch, dtype)), *args)
    assert s.dtype == np.dtype(dtype) and str(t.dtype) == f"torch.{dtype}"
    low, high = (0, args[0]) if len(args) == 1 else args
    for v in (s.numpy(), t.numpy()):
        assert set(np.unique(v).tolist()) == set(range(low, high))
    assert seqlab.randint_like(seqlab.zeros(3), 5, dtype=seqlab.long).dtype == np.int64


def test_randperm_is_a_permutation():
    seqlab.manual_seed(1)
    p = seqlab.randperm(50)
    assert p.dtype == np.int64 == torch.randperm(50).numpy().dtype and sorted(p.tolist()) == list(range(50))
    assert seqlab.randperm(0).shape == (0,) and seqlab.randperm(4, dtype=seqlab.int32).dtype == np.int32
    seqlab.manual_seed(1)
    assert seqlab.randperm(50).tolist() == p.tolist()


def test_bernoulli_as_torch():
    probs = np.array([0.0, 1.0, 0.0, 1.0], np.float32)
    same_as_torch(seqlab.bernoulli(seqlab.tensor(probs)), torch.bernoulli(torch.tensor(probs)))
    seqlab.manual_seed(2)
    draws = seqlab.bernoulli(seqlab.full((100_000,), 0.3))
    assert draws.dtype == np.float32 and abs(draws.numpy().mean() - 0.3) < 0.01
    assert set(draws.numpy().tolist()) == {0.0, 1.0}
    assert abs(seqlab.bernoulli(seqlab.zeros(100_000), 0.7).numpy().mean() - 0.7) < 0.01
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        seqlab.bernoulli(seqlab.tensor([1.5]))


# ---- 5. in-place random fills -------------------------------------------------------------------------------
FILLS = {  # name: (args, mean, std) of the distribution drawn
    "normal_": ((0.5, 2.0), 0.5, 2.0),
    "normal_-default": ((), 0.0, 1.0),
    "uniform_": ((-1.0, 3.0), 1.0, 4 / math.sqrt(12)),
    "uniform_-default": ((), 0.5, 1 / math.sqrt(12)),
    "exponential_": ((2.0,), 0.5, 0.5),
    "bernoulli_": ((0.25,), 0.25, math.sqrt(0.25 * 0.75)),
    "random_": ((3, 7), 4.5, math.sqrt((4 ** 2 - 1) / 12)),
}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", list(FILLS))
def test_random_fills_statistics_and_dtype_as_torch(case, dtype):
    args, mean, std = FILLS[case]
    name = case.split("-")[0]
    s = seqlab.zeros(200_000, dtype=dtype)
    out = getattr(s, name)(*args)
    assert out is s and s.dtype == np.dtype(dtype) and s.shape == (200_000,)
    t = getattr(torch.zeros(200_000, dtype=getattr(torch, dtype)), name)(*args)
    for v in (s.numpy().astype(np.float64), t.numpy().astype(np.float64)):
        assert abs(v.mean() - mean) < 0.02 * max(1.0, std) and abs(v.std() - std) < 0.02 * max(1.0, std)
    if name == "uniform_":
        lo, hi = args or (0.0, 1.0)
        assert s.numpy().min() >= lo and s.numpy().max() < hi


@pytest.mark.parametrize("case", list(FILLS))
def test_random_fills_reproduce_under_manual_seed(case):
    args, _, _ = FILLS[case]
    name = case.split("-")[0]
    seqlab.manual_seed(7)
    a = getattr(seqlab.zeros(2, 5), name)(*args).numpy().copy()
    seqlab.manual_seed(7)
    b = getattr(seqlab.zeros(2, 5), name)(*args).numpy()
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, getattr(seqlab.zeros(2, 5), name)(*args).numpy()) or name == "bernoulli_"


def test_normal_fill_draws_what_randn_draws():
    seqlab.manual_seed(3)
    a = seqlab.empty(4, 5).normal_()
    seqlab.manual_seed(3)
    np.testing.assert_array_equal(a.numpy(), seqlab.randn(4, 5).numpy())


@pytest.mark.parametrize("case", list(FILLS))
def test_random_fills_refuse_a_leaf_that_requires_grad_as_torch(case):
    args, _, _ = FILLS[case]
    name = case.split("-")[0]
    with pytest.raises(RuntimeError, match="leaf"):
        getattr(torch.zeros(3, requires_grad=True), name)(*args)
    w = seqlab.zeros(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf tensor that requires grad"):
        getattr(w, name)(*args)
    with seqlab.no_grad():  # how init code does it: allowed, and counted as a change
        getattr(w, name)(*args)
    assert w.requires_grad and w.is_leaf


def test_a_fill_after_the_forward_pass_makes_backward_raise():
    w = seqlab.ones(3, requires_grad=True)
    loss = (w * w).sum()
    with seqlab.no_grad():
        w.normal_()
    with pytest.raises(RuntimeError):
        loss.backward()


@pytest.mark.parametrize("name,args", [("normal_", ()), ("uniform_", ()), ("exponential_", ())])
def test_continuous_fills_of_integer_tensors_are_refused_as_torch(name, args):
    with pytest.raises((RuntimeError, NotImplementedError)):
        getattr(torch.zeros(3, dtype=torch.long), name)(*args)
    with pytest.raises(TypeError, match="floating-point"):
        getattr(seqlab.zeros(3, dtype=seqlab.long), name)(*args)


@pytest.mark.parametrize("name,args,match", [
    ("normal_", (0.0, -1.0), "std >= 0.0"), ("uniform_", (1.0, 0.0), "from=1.0 > to=0.0"),
    ("exponential_", (0.0,), "lambda > 0.0"), ("bernoulli_", (1.5,), r"\[0, 1\]"),
    ("random_", (5, 3), "from=5 >= to=3")])
def test_bad_parameters_are_refused_as_torch(name, args, match):
    with pytest.raises(RuntimeError):
        getattr(torch.zeros(3), name)(*args)
    with pytest.raises(ValueError, match=match):
        getattr(seqlab.zeros(3), name)(*args)


@pytest.mark.parametrize("dtype", ["int64", "int32", "int8", "bool", "float32"])
def test_random_fill_bounds_as_torch(dtype):
    s = seqlab.zeros(20_000, dtype=dtype)
    t = torch.zeros(20_000, dtype=getattr(torch, dtype))
    if dtype == "bool":
        assert set(s.random_().tolist()) == set(t.random_().tolist()) == {False, True}
        return
    assert set(s.random_(4).tolist()) == set(t.random_(4).tolist()) == {0, 1, 2, 3}
    assert set(s.random_(-2, 1).tolist()) == set(t.random_(-2, 1).tolist()) == {-2, -1, 0}
    assert set(s.random_(5, to=7).tolist()) == set(t.random_(5, to=7).tolist()) == {5, 6}
    assert s.dtype == np.dtype(dtype)
    top = 2 ** 24 if dtype == "float32" else np.iinfo(dtype).max
    v = s.random_().numpy()
    assert v.min() >= 0 and v.max() <= top and v.max() > top // 2 and np.all(v == np.round(v))


def test_random_fill_out_of_the_dtypes_range_is_refused_as_torch():
    with pytest.raises(RuntimeError):
        torch.zeros(3, dtype=torch.int8).random_(300)
    with pytest.raises(ValueError, match="out of bounds"):
        seqlab.zeros(3, dtype=seqlab.int8).random_(300)


def test_bernoulli_fill_with_a_tensor_of_probabilities():
    p = np.array([[0.0, 1.0, 1.0]], np.float32)
    same_as_torch(seqlab.zeros(2, 3).bernoulli_(seqlab.tensor(p)), torch.zeros(2, 3).bernoulli_(torch.tensor(p)))
    same_as_torch(seqlab.zeros(3, dtype=seqlab.long).bernoulli_(seqlab.tensor(p[0])),
                  torch.zeros(3, dtype=torch.long).bernoulli_(torch.tensor(p[0])))


def test_an_init_written_for_torch_runs():
    """nanoGPT's _init_weights: normal_ on weights, zero_ on biases, under no_grad."""
    from seqlab import nn

    seqlab.manual_seed(0)
    model = nn.Linear(64, 128)
    with seqlab.no_grad():
        model.weight.normal_(mean=0.0, std=0.02)
        model.bias.uniform_(-0.1, 0.1)
    w = model.weight.numpy()
    assert abs(w.std() - 0.02) < 0.002 and w.dtype == np.float32 and model.weight.requires_grad
    assert np.abs(model.bias.numpy()).max() < 0.1


# ---- 6. where(condition) -----------------------------------------------------------------------------------
@pytest.mark.parametrize("cond", [np.array([[0, 1], [1, 1]]), np.array([True, False, True]),
                                  np.array([[0.0, 2.5, 0.0]]), np.array(1), np.array(0)],
                         ids=["int-2d", "bool-1d", "float", "0d-true", "0d-false"])
def test_where_with_only_a_condition_is_nonzero_as_tuple(cond):
    got, want = seqlab.where(seqlab.tensor(cond)), torch.where(torch.tensor(cond))
    assert isinstance(got, tuple) and len(got) == len(want)
    for s, t in zip(got, want):
        same_as_torch(s, t)


def test_where_with_two_of_three_arguments_is_refused():
    with pytest.raises(TypeError):
        torch.where(torch.tensor([True]), torch.tensor([1.0]))
    with pytest.raises(TypeError, match="condition alone"):
        seqlab.where(seqlab.tensor([True]), seqlab.tensor([1.0]))


# ---- 7. format() of tensors ----------------------------------------------------------------------------------
@pytest.mark.parametrize("value,dtype", [(1.2345, "float32"), (1.2345, "float64"), (3, "int64"), (True, "bool"),
                                         (-0.5, "float16")])
@pytest.mark.parametrize("spec", ["", ".3f", ">12", "e"])
def test_format_of_a_0d_tensor_formats_its_value_as_torch(value, dtype, spec):
    s, t = seqlab.tensor(value, dtype=dtype), torch.tensor(value, dtype=getattr(torch, dtype))
    assert format(s, spec) == format(t, spec)
    assert f"{s}" == f"{t}" == str(t.item())


def test_format_of_a_0d_float32_tensor_is_its_python_floats_str():
    assert f"{seqlab.tensor(1.2345)}" == "1.2345000505447388" == f"{torch.tensor(1.2345)}"
    assert f"{seqlab.tensor(0.5):.2f}" == "0.50" and "{}".format(seqlab.tensor(2)) == "2"


def test_format_of_tensors_with_dims_as_torch():
    s, t = seqlab.tensor([[1.0, 2.0], [3.0, 4.0]]), torch.tensor([[1.0, 2.0], [3.0, 4.0]])
    assert f"{s}" == str(s) and f"{t}" == str(t)
    assert f"{seqlab.tensor([5])}" == str(seqlab.tensor([5]))  # one element with a dim: str, as torch
    with pytest.raises(TypeError):
        format(t, ".2f")
    with pytest.raises(TypeError):
        format(s, ".2f")


# ---- 8. tensor type names ------------------------------------------------------------------------------------
TYPES = ["FloatTensor", "DoubleTensor", "HalfTensor", "LongTensor", "IntTensor", "ShortTensor", "CharTensor",
         "ByteTensor", "BoolTensor"]


@pytest.mark.parametrize("name", TYPES)
def test_type_names_build_tensors_of_their_dtype(name):
    S, T = getattr(seqlab, name), getattr(torch, name)
    same_as_torch(S([1, 0, 1]), T([1, 0, 1]))
    assert S(2, 3).shape == tuple(T(2, 3).shape) == (2, 3) and S(2, 3).dtype == S([1]).dtype
    assert S().shape == tuple(T().shape) == (0,)
    assert S(seqlab.Size([4])).shape == tuple(T(torch.Size([4])).shape) == (4,)
    assert repr(S) == f"<class 'seqlab.{name}'>"


def test_type_names_cast_values_as_torch():
    same_as_torch(seqlab.LongTensor([1.7, -2.2]), torch.LongTensor([1.7, -2.2]))
    same_as_torch(seqlab.FloatTensor(np.arange(3)), torch.FloatTensor(np.arange(3)))


@pytest.mark.parametrize("name", TYPES)
def test_type_with_a_type_name_casts_as_torch(name):
    x = np.array([0.0, 1.5, -2.0], np.float32)
    s, t = seqlab.tensor(x), torch.tensor(x)
    same_as_torch(s.type(getattr(seqlab, name)), t.type(getattr(torch, name)))
    same_as_torch(s.type(getattr(torch, name)), t.type(getattr(torch, name)))  # torch's class: by its name
    assert s.type(getattr(seqlab, name)).type() == f"seqlab.{name}"
    assert t.type(getattr(torch, name)).type() == f"torch.{name}"


def test_isinstance_of_a_type_name_asks_the_dtype_as_torch():
    for lib in (seqlab, torch):
        x = lib.zeros(2)
        assert isinstance(x, lib.FloatTensor) and not isinstance(x, lib.LongTensor)
        assert isinstance(x.long(), lib.LongTensor) and isinstance(x.bool(), lib.BoolTensor)
        assert isinstance(x, lib.Tensor)
    assert not isinstance(np.zeros(2, np.float32), seqlab.FloatTensor)


# ---- 9. nn.init._calculate_fan_in_and_fan_out ------------------------------------------------------------------
@pytest.mark.parametrize("shape", [(3, 4), (8, 3, 5), (6, 2, 3, 3)])
def test_calculate_fan_in_and_fan_out_as_torch(shape):
    got = seqlab.nn.init._calculate_fan_in_and_fan_out(seqlab.zeros(shape))
    assert got == torch.nn.init._calculate_fan_in_and_fan_out(torch.zeros(shape))


def test_fan_in_and_fan_out_of_fewer_than_2_dims_is_torchs_error():
    msg = "Fan in and fan out can not be computed for tensor with fewer than 2 dimensions"
    with pytest.raises(ValueError, match=msg):
        torch.nn.init._calculate_fan_in_and_fan_out(torch.zeros(3))
    with pytest.raises(ValueError, match=msg):
        seqlab.nn.init._calculate_fan_in_and_fan_out(seqlab.zeros(3))


# ---- 10. the default float dtype -----------------------------------------------------------------------------
@pytest.mark.parametrize("spelled", [seqlab.float64, "float64", torch.float64, np.dtype("float64")],
                         ids=["seqlab", "name", "torch", "np.dtype"])
def test_set_default_dtype_as_torch(spelled):
    assert seqlab.get_default_dtype() == seqlab.float32
    try:
        seqlab.set_default_dtype(spelled)
        assert seqlab.get_default_dtype() == seqlab.float64
        assert seqlab.tensor([1.5]).dtype == np.float64 and seqlab.zeros(2).dtype == np.float64
        assert seqlab.randn(2).dtype == np.float64 and seqlab.finfo().bits == 64
        assert seqlab.nn.Linear(2, 3).weight.dtype == np.float64
    finally:
        seqlab.set_default_dtype(seqlab.float32)
    assert seqlab.tensor([1.5]).dtype == np.float32


def test_set_default_dtype_refuses_integers():
    with pytest.raises(TypeError):
        torch.set_default_dtype(torch.int64)
    with pytest.raises(ValueError):
        seqlab.set_default_dtype(seqlab.int64)
    assert seqlab.get_default_dtype() == seqlab.float32


# ---- 11. Generator -------------------------------------------------------------------------------------------
def _draws(g):
    return {
        "randn": seqlab.randn(3, generator=g), "rand": seqlab.rand(2, 2, generator=g),
        "randint": seqlab.randint(0, 9, (4,), generator=g), "randperm": seqlab.randperm(6, generator=g),
        "multinomial": seqlab.multinomial(seqlab.tensor([0.2, 0.3, 0.5]), 2, generator=g),
        "normal": seqlab.normal(0.0, 1.0, (3,), generator=g),
        "bernoulli": seqlab.bernoulli(seqlab.full((5,), 0.5), generator=g),
        "rand_like": seqlab.rand_like(seqlab.zeros(2), generator=g),
        "randn_like": seqlab.randn_like(seqlab.zeros(2), generator=g),
        "randint_like": seqlab.randint_like(seqlab.zeros(2), 9, generator=g),
        "normal_": seqlab.zeros(3).normal_(generator=g), "uniform_": seqlab.zeros(3).uniform_(generator=g),
        "exponential_": seqlab.zeros(3).exponential_(generator=g),
        "bernoulli_": seqlab.zeros(5).bernoulli_(generator=g), "random_": seqlab.zeros(3).random_(9, generator=g),
        "init.normal_": seqlab.nn.init.normal_(seqlab.zeros(3), generator=g),
        "dropout": seqlab.functional.dropout(seqlab.ones(16), 0.5, generator=g),
    }


def test_two_generators_with_one_seed_draw_alike_and_leave_the_default_stream_alone():
    seqlab.manual_seed(0)
    before = seqlab.random.get_state()
    g1, g2 = seqlab.Generator().manual_seed(5), seqlab.Generator()
    assert g2.manual_seed(5) is g2
    a, b = _draws(g1), _draws(g2)
    assert seqlab.random.get_state() == before  # the default stream did not move
    for name in a:
        np.testing.assert_array_equal(a[name].numpy(), b[name].numpy(), err_msg=name)
    c = _draws(seqlab.Generator().manual_seed(6))
    assert not all(np.array_equal(a[n].numpy(), c[n].numpy()) for n in a)


def test_a_generator_reproduces_after_manual_seed_and_set_state():
    g = seqlab.Generator()
    g.manual_seed(11)
    first = seqlab.randn(4, generator=g).numpy()
    state = g.get_state()
    second = seqlab.randn(4, generator=g).numpy()
    assert g.set_state(state) is g
    np.testing.assert_array_equal(seqlab.randn(4, generator=g).numpy(), second)
    g.manual_seed(11)
    np.testing.assert_array_equal(seqlab.randn(4, generator=g).numpy(), first)
    seqlab.manual_seed(11)  # the same seed as the default stream's draws the same numbers
    np.testing.assert_array_equal(seqlab.randn(4).numpy(), first)


def test_generator_seeds_as_torch():
    g, t = seqlab.Generator(), torch.Generator()
    assert g.initial_seed() == t.initial_seed() == 67280421310721
    assert g.manual_seed(3).initial_seed() == t.manual_seed(3).initial_seed() == 3
    s = g.seed()
    assert isinstance(s, int) and g.initial_seed() == s
    h = seqlab.Generator().manual_seed(s)
    np.testing.assert_array_equal(seqlab.rand(3, generator=g).numpy(), seqlab.rand(3, generator=h).numpy())
    assert g.device == "cpu" == str(t.device) and isinstance(g, np.random.Generator)
    with pytest.raises(ValueError):
        g.manual_seed(-1)
