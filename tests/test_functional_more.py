"""F.normalize, F.cosine_similarity, F.pad, F.one_hot, relu(inplace=), softmax/log_softmax(dtype=) and
nn.ParameterList / nn.ParameterDict, each against torch: values, dtypes, gradients, argument names, and the
names the containers give their parameters."""
import inspect
import re
import warnings
from collections import OrderedDict

import numpy as np
import pytest
import torch
import torch.nn.functional as TF
from helpers import check_module, check_op

import seqlab
import seqlab.functional as F
from seqlab import nn

INF = float("inf")


# ---- argument names and defaults -----------------------------------------------------------------
def _torch_params(fn) -> list:
    """(name, default) of a torch function: its signature, or its docstring's first line for a builtin."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        head = re.search(r"\w+\((.*?)\)\s*->", fn.__doc__).group(1)
        out = []
        for part in head.split(","):
            name, _, default = part.strip().partition("=")
            out.append((name, eval(default) if default else inspect.Parameter.empty))
        return out
    return [(p.name, p.default) for p in sig.parameters.values()]


def _ours(fn) -> list:
    return [(p.name, p.default) for p in inspect.signature(fn).parameters.values()]


@pytest.mark.parametrize("name", ["normalize", "cosine_similarity", "pad", "one_hot", "relu"])
def test_signature_is_torchs(name):
    assert _ours(getattr(F, name)) == _torch_params(getattr(TF, name))


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
def test_softmax_signature_is_torchs_but_dim_defaults_to_last(name):
    ours, theirs = _ours(getattr(F, name)), _torch_params(getattr(TF, name))
    assert [n for n, _ in ours] == [n for n, _ in theirs] == ["input", "dim", "_stacklevel", "dtype"]
    assert dict(ours)["dim"] == -1 and dict(theirs)["dim"] is None  # seqlab keeps its default
    assert dict(ours)["dtype"] is None and dict(ours)["_stacklevel"] == dict(theirs)["_stacklevel"]


def test_nn_exports_the_parameter_containers():
    assert "ParameterList" in nn.__all__ and "ParameterDict" in nn.__all__
    assert nn.ParameterList is seqlab.nn.container.ParameterList and F.pad is seqlab.nn.functional.pad


# ---- normalize ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("p", [2.0, 1.0, 3.0, 0.5, INF])
@pytest.mark.parametrize("dim", [1, -1, (0, 2)])
def test_normalize(p, dim):
    check_op(lambda x: F.normalize(x, p, dim), lambda x: TF.normalize(x, p, dim), [(2, 3, 4)])


@pytest.mark.parametrize("p", [-INF, 0, -1.5])
def test_normalize_odd_norms(p):
    check_op(lambda x: F.normalize(x, p=p, dim=0), lambda x: TF.normalize(x, p=p, dim=0), [(3, 2)])
    with_zero = np.array([[1.0, 0.0, -3.0], [0.5, 2.0, 1.0]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_op(lambda x: F.normalize(x, p=p), lambda x: TF.normalize(x, p=p), [with_zero], gradcheck_=False)


def test_normalize_below_eps_clamps_and_stops_the_norms_gradient():
    rows = np.array([[0.0, 0.0, 0.0], [0.1, -0.2, 0.1], [1.0, 2.0, -3.0]])
    check_op(lambda x: F.normalize(x), lambda x: TF.normalize(x), [rows[:1]], gradcheck_=False)  # zero row
    check_op(lambda x: F.normalize(x, eps=0.5), lambda x: TF.normalize(x, eps=0.5), [rows])
    y = F.normalize(seqlab.tensor(rows), eps=0.5).numpy()
    np.testing.assert_allclose(y[1], rows[1] / 0.5)


def test_normalize_default_dim_and_out():
    x = np.random.default_rng(3).standard_normal((3, 4))
    np.testing.assert_allclose(F.normalize(seqlab.tensor(x)).numpy(), TF.normalize(torch.from_numpy(x)).numpy(),
                               rtol=1e-12)
    out = seqlab.zeros(3, 4, dtype=np.float64)
    got = F.normalize(seqlab.tensor(x, requires_grad=True), dim=0, out=out)
    assert got is out and not out.requires_grad
    np.testing.assert_allclose(out.numpy(), TF.normalize(torch.from_numpy(x), dim=0).numpy(), rtol=1e-12)
    with pytest.raises(IndexError):
        TF.normalize(torch.ones(3))
    with pytest.raises(IndexError):
        F.normalize(seqlab.ones(3))  # dim=1 of a vector, as torch


# ---- cosine_similarity -------------------------------------------------------------------------------------
@pytest.mark.parametrize("shapes,dim", [(((3, 4), (3, 4)), 1), (((2, 3, 4), (2, 3, 4)), -1),
                                        (((5, 1, 3), (4, 3)), -1), (((1, 3), (4, 3)), 0), (((4,), (4,)), 0)])
def test_cosine_similarity(shapes, dim):
    check_op(lambda a, b: F.cosine_similarity(a, b, dim), lambda a, b: TF.cosine_similarity(a, b, dim),
             list(shapes))


def test_cosine_similarity_broadcasts_before_the_norm():
    a, b = np.array([[3.0, 4.0]]), np.array([[1.0, 0.0], [0.0, 2.0], [1.0, 1.0]])
    got = F.cosine_similarity(seqlab.tensor(a), seqlab.tensor(b), dim=0).numpy()
    want = TF.cosine_similarity(torch.from_numpy(a), torch.from_numpy(b), dim=0).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-12)
    assert got.shape == (2,)


def test_cosine_similarity_small_norms_keep_their_gradient_as_torch():
    """torch clamps the norms in place under no_grad: the value is max(‖x‖, eps), but the gradient flows
    through ‖x‖ as if unclamped (an ordinary clamp would give another gradient here)."""
    small = np.random.default_rng(1).standard_normal((3, 4)) * 1e-9
    check_op(lambda a, b: F.cosine_similarity(a, b), lambda a, b: TF.cosine_similarity(a, b), [small, (3, 4)],
             gradcheck_=False)
    check_op(lambda a, b: F.cosine_similarity(a, b, eps=2.0), lambda a, b: TF.cosine_similarity(a, b, eps=2.0),
             [(2, 3), (2, 3)], gradcheck_=False)
    zero = np.zeros((2, 3))
    check_op(lambda a, b: F.cosine_similarity(a, b), lambda a, b: TF.cosine_similarity(a, b), [zero, (2, 3)],
             gradcheck_=False)


def test_cosine_similarity_promotes_and_checks_dim():
    a32 = np.random.default_rng(0).standard_normal((2, 3)).astype(np.float32)
    b64 = np.random.default_rng(1).standard_normal((2, 3))
    got = F.cosine_similarity(seqlab.tensor(a32), seqlab.tensor(b64))
    want = TF.cosine_similarity(torch.from_numpy(a32), torch.from_numpy(b64))
    assert got.dtype == np.float64 and str(want.dtype) == "torch.float64"
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12)
    with pytest.raises(IndexError):
        TF.cosine_similarity(torch.ones(3), torch.ones(3))
    with pytest.raises(IndexError):
        F.cosine_similarity(seqlab.ones(3), seqlab.ones(3))


# ---- pad ----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("pads", [(1, 2), (0, 0), (1, -2), (-4, 0), (-4, 1), (0, 0, 2, 1), (1, 1, 1, 1, 1, 1),
                                  (2, -1, -1, 3), (-1, -1, 0, 0, 1, 0)])
def test_pad_constant(pads):
    check_op(lambda x: F.pad(x, pads), lambda x: TF.pad(x, pads), [(2, 3, 4)])
    check_op(lambda x: F.pad(x, pads, "constant", 1.5), lambda x: TF.pad(x, pads, "constant", 1.5), [(2, 3, 4)])


@pytest.mark.parametrize("mode", ["constant", "reflect", "replicate", "circular"])
def test_pad_of_nothing_is_a_new_tensor(mode):
    x = seqlab.ones(1, 2, 3)
    for pads in ((0, 0), (-1, 0), (0, -1, 0, 0)):
        y = F.pad(x, pads, mode)
        assert y is not x and not np.shares_memory(y.numpy(), x.numpy())
        np.testing.assert_array_equal(y.numpy(), TF.pad(torch.ones(1, 2, 3), pads, mode).numpy())


def test_pad_constant_other_dtypes_and_value_none():
    for arr, value in ((np.arange(6).reshape(2, 3), 2.5), (np.array([True, False]), 1),
                       (np.arange(3, dtype=np.float32), None)):
        got = F.pad(seqlab.tensor(arr), (1, 2), value=value)
        want = TF.pad(torch.from_numpy(arr), (1, 2), value=value)
        assert got.dtype == want.numpy().dtype
        np.testing.assert_array_equal(got.numpy(), want.numpy())


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
@pytest.mark.parametrize("pads,shape", [((1, 2), (2, 3, 4)), ((2, 1), (3, 4)), ((-1, 2), (2, 3, 4)),
                                        ((1, 2, 2, 0), (2, 3, 4)), ((1, 0, 2, 1, 1, 1), (1, 2, 3, 4)),
                                        ((-2, 2), (1, 2, 4)), ((2, 3, 1, 1), (1, 2, 3, 4))])
def test_pad_modes(mode, pads, shape):
    check_op(lambda x: F.pad(x, pads, mode), lambda x: TF.pad(x, pads, mode), [shape])


@pytest.mark.parametrize("mode", ["reflect", "replicate"])
@pytest.mark.parametrize("pads", [(-2, 3), (3, -3), (2, -3), (-3, 2), (-3, 3)])
def test_pad_modes_negative_pads_shift_the_window_as_torch(mode, pads):
    check_op(lambda x: F.pad(x, pads, mode), lambda x: TF.pad(x, pads, mode), [(1, 2, 4)])


@pytest.mark.parametrize("call", [
    lambda P, x: P(x, (1,)),                                     # odd length
    lambda P, x: P(x, (1, 1, 1, 1, 1, 1, 1, 1)),                 # more dims than the input
    lambda P, x: P(x, (-5, 1)),                                  # a negative size
    lambda P, x: P(x, (4, 0), "reflect"),                        # reflect: pad >= size
    lambda P, x: P(x, (5, 0), "circular"),                       # wraps around more than once
    lambda P, x: P(x, (-2, -2), "replicate"),                    # empty output
    lambda P, x: P(x, (1, 1), "reflect", 1.0),                   # a value for a non-constant mode
])
def test_pad_errors_where_torch_errs(call):
    with pytest.raises(RuntimeError):
        call(TF.pad, torch.ones(2, 3, 4))
    with pytest.raises(ValueError):
        call(F.pad, seqlab.ones(2, 3, 4))


@pytest.mark.parametrize("call", [lambda P, x: P(x, (1, 1), "wrap"), lambda P, x: P(x[0, 0], (1, 1), "reflect"),
                                  lambda P, x: P(x, (1, 1, 1, 1, 1, 1), "replicate")])
def test_pad_unsupported_modes_raise_not_implemented(call):
    with pytest.raises(NotImplementedError):
        call(TF.pad, torch.ones(2, 3, 4))
    with pytest.raises(NotImplementedError):
        call(F.pad, seqlab.ones(2, 3, 4))


# ---- one_hot ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("ids,num_classes", [([0, 2, 1], -1), ([0, 2, 1], 5), (2, -1), ([[0, 1], [2, 0]], -1),
                                             ([], 3)])
def test_one_hot(ids, num_classes):
    arr = np.array(ids, dtype=np.int64)
    got = F.one_hot(seqlab.tensor(arr), num_classes)
    want = TF.one_hot(torch.from_numpy(arr), num_classes).numpy()
    assert got.dtype == np.int64 and got.shape == want.shape
    np.testing.assert_array_equal(got.numpy(), want)
    np.testing.assert_array_equal(F.one_hot(arr, num_classes=num_classes).numpy(), want)  # a plain array too


@pytest.mark.parametrize("ids,num_classes", [([0, 2], 2), ([0, -1], -1), ([0, -1], 3), ([], -1), ([0, 1], -2)])
def test_one_hot_errors_where_torch_errs(ids, num_classes):
    arr = np.array(ids, dtype=np.int64)
    with pytest.raises(RuntimeError):
        TF.one_hot(torch.from_numpy(arr), num_classes)
    with pytest.raises(ValueError):
        F.one_hot(arr, num_classes)


def test_one_hot_takes_integers_only():
    np.testing.assert_array_equal(F.one_hot(np.array([1, 0], np.int32)).numpy(), [[0, 1], [1, 0]])
    with pytest.raises(TypeError):
        F.one_hot(np.array([0.0, 1.0]), 3)


# ---- relu(inplace=), softmax/log_softmax(dtype=) -------------------------------------------------------------
def test_relu_accepts_inplace():
    check_op(lambda x: F.relu(x, inplace=True), lambda x: TF.relu(x), [(3, 4)])
    check_op(lambda x: F.relu(input=x, inplace=False), lambda x: TF.relu(input=x, inplace=False), [(3, 4)])


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
@pytest.mark.parametrize("dtype", [torch.float64, np.float64, torch.float32])
def test_softmax_dtype_casts_first(name, dtype):
    ours, theirs = getattr(F, name), getattr(TF, name)
    target = np.float32 if dtype is torch.float32 else np.float64
    torch_dtype = torch.float32 if target is np.float32 else torch.float64
    if target is np.float64:  # float32 inputs computed in float64; their gradients float32
        check_op(lambda x: ours(x, 1, dtype=dtype), lambda x: theirs(x, 1, dtype=torch_dtype), [(2, 3, 4)])
    else:  # float64 inputs computed in float32 (no central differences there)
        check_op(lambda x: ours(x, 1, dtype=dtype), lambda x: theirs(x, 1, dtype=torch_dtype), [(2, 3, 4)],
                 dtypes=("float64",), gradcheck_=False, rtol64=1e-5, atol64=1e-6)
    x = seqlab.tensor(np.ones((2, 3), np.float16), requires_grad=True)
    y = ours(x, dim=-1, dtype=dtype)
    assert y.dtype == target
    y.sum().backward()
    assert x.grad.dtype == np.float16


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
@pytest.mark.parametrize("shape", [(5,), (2, 3), (2, 3, 4), (2, 3, 2, 2)])
def test_softmax_dim_none_is_torchs_implicit_dim(name, shape):
    x = np.random.default_rng(0).standard_normal(shape)
    with pytest.warns(UserWarning, match="Implicit dimension choice"):
        got = getattr(F, name)(seqlab.tensor(x), None)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = getattr(TF, name)(torch.from_numpy(x), None)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12)


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
def test_softmax_default_dim_is_still_the_last(name):
    x = np.random.default_rng(0).standard_normal((2, 3, 4))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = getattr(F, name)(seqlab.tensor(x))
    np.testing.assert_allclose(got.numpy(), getattr(TF, name)(torch.from_numpy(x), -1).numpy(), rtol=1e-12)


# ---- ParameterList / ParameterDict ------------------------------------------------------------------------------
class _Ours(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(3, 3)
        self.scales = nn.ParameterList([nn.Parameter(np.ones(3)), seqlab.ones(3, dtype=np.float64)])
        self.scales.append(np.ones(3))
        self.bias = nn.ParameterDict({"zeta": np.zeros(3), "alpha": seqlab.zeros(3, dtype=np.float64)})
        self.bias["mid"] = nn.Parameter(np.zeros(3))

    def forward(self, x):
        for s in self.scales:
            x = self.proj(x) * s
        return x + self.bias["alpha"] * self.bias["zeta"] + self.bias["mid"]


class _Theirs(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(3, 3)
        self.scales = torch.nn.ParameterList([torch.nn.Parameter(torch.ones(3)), torch.ones(3)])
        self.scales.append(torch.ones(3))
        self.bias = torch.nn.ParameterDict({"zeta": torch.zeros(3), "alpha": torch.zeros(3)})
        self.bias["mid"] = torch.nn.Parameter(torch.zeros(3))

    def forward(self, x):
        for s in self.scales:
            x = self.proj(x) * s
        return x + self.bias["alpha"] * self.bias["zeta"] + self.bias["mid"]


def test_parameter_containers_names_are_torchs():
    ours, theirs = _Ours(), _Theirs()
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in theirs.named_parameters()]
    assert list(ours.bias) == list(theirs.bias) == ["alpha", "zeta", "mid"]  # a plain dict: sorted, as torch
    with torch.no_grad():
        for p in theirs.parameters():
            p.uniform_(-1, 1)
    check_module(ours, theirs, [(2, 3)])


def test_parameter_containers_feed_optimizers():
    model = _Ours()
    before = {n: p.numpy().copy() for n, p in model.named_parameters()}
    opt = seqlab.optim.SGD(model.parameters(), lr=0.1)
    model(seqlab.randn(2, 3, dtype=np.float64)).sum().backward()
    opt.step()
    moved = {n for n, p in model.named_parameters() if not np.array_equal(p.numpy(), before[n])}
    assert {"scales.0", "scales.2", "bias.mid"} <= moved


def test_parameter_list_behaves_as_torchs():
    arr = np.ones(2)
    t = seqlab.zeros(3, dtype=np.float64)
    pl = nn.ParameterList([arr, t])
    tl = torch.nn.ParameterList([torch.ones(2), torch.zeros(3)])
    assert all(isinstance(p, nn.Parameter) and p.requires_grad for p in pl)
    assert pl[0].data is arr and pl[1].data is t.data  # wrapped, sharing the array (as torch's Parameter)
    p = nn.Parameter(np.full(4, 2.0))
    pl.append(p)
    pl += [np.ones(1)]
    pl.extend([np.ones(5)])
    tl.append(torch.nn.Parameter(torch.full((4,), 2.0)))
    tl += [torch.ones(1)]
    tl.extend([torch.ones(5)])
    assert len(pl) == len(tl) == 5 and pl[2] is p and pl[-3] is p
    assert [tuple(q.shape) for q in pl] == [tuple(q.shape) for q in tl]
    assert list(pl.state_dict()) == list(tl.state_dict())
    sub = pl[1:4:2]
    assert isinstance(sub, nn.ParameterList) and list(sub.state_dict()) == list(tl[1:4:2].state_dict())
    assert sub[0] is pl[1] and sub[1] is pl[3]
    pl[0] = np.zeros(7)
    assert isinstance(pl[0], nn.Parameter) and pl[0].shape == (7,) and list(pl.state_dict())[0] == "0"
    with pytest.raises(IndexError):
        pl[5]
    with pytest.raises(TypeError):
        pl.extend(seqlab.ones(3))
    with pytest.raises(RuntimeError):
        pl()
    assert "(2): Parameter containing: [float64 of size 4]" in repr(pl)


def test_parameter_dict_behaves_as_torchs():
    pd = nn.ParameterDict(OrderedDict(b=np.ones(1), a=np.ones(2)))  # an OrderedDict keeps its order
    td = torch.nn.ParameterDict(OrderedDict(b=torch.ones(1), a=torch.ones(2)))
    assert list(pd) == list(td) == ["b", "a"]
    pd.update([("d", np.ones(3)), ("c", np.ones(4))])  # pairs too
    td.update([("d", torch.ones(3)), ("c", torch.ones(4))])
    pd.update({"z": np.ones(1), "y": np.ones(1)})      # a plain dict: sorted
    td.update({"z": torch.ones(1), "y": torch.ones(1)})
    assert list(pd.keys()) == list(td.keys()) == list(pd.state_dict()) == list(td.state_dict())
    assert all(isinstance(v, nn.Parameter) for v in pd.values())
    assert "a" in pd and "q" not in pd and len(pd) == len(td) == 6
    assert pd.get("q") is None and pd.get("a") is pd["a"]
    assert [k for k, _ in pd.items()] == list(pd) and list(reversed(pd)) == list(reversed(td))
    k, v = pd.popitem()
    tk, _ = td.popitem()
    assert k == tk == "z" and isinstance(v, nn.Parameter)
    assert pd.pop("b").shape == (1,) and "b" not in pd and "b" not in dict(pd.named_parameters())
    del pd["a"]
    assert "a" not in pd.state_dict()
    s = pd.setdefault("new", np.zeros(2))
    assert pd["new"] is s and pd.setdefault("new", np.ones(9)) is s
    both = pd | nn.ParameterDict(OrderedDict(e=np.ones(1)))
    assert list(both) == list(pd) + ["e"] and both["d"] is pd["d"]
    pd |= {"f": np.ones(1)}
    assert list(pd)[-1] == "f"
    assert list(pd.fromkeys(["u", "v"])) == ["u", "v"]
    copied = pd.copy()
    assert list(copied) == list(pd) and copied["d"] is pd["d"]
    with pytest.raises(TypeError):
        pd[1] = np.ones(1)
    with pytest.raises(KeyError):
        pd["x.y"] = np.ones(1)
    with pytest.raises(RuntimeError):
        pd(1)
    pd.clear()
    assert len(pd) == 0 and list(pd.state_dict()) == []


def test_parameter_containers_load_torch_state_dicts():
    ours, theirs = _Ours(), _Theirs()
    sd = {k: v + 1.5 for k, v in theirs.state_dict().items()}
    ours.load_state_dict(sd)
    for name, p in ours.named_parameters():
        np.testing.assert_allclose(p.numpy(), sd[name].numpy())
