"""Module features (issue 2 §4): registration order, state_dict, strict loading, modes, containers."""
from collections import OrderedDict

import numpy as np
import pytest
import torch

import seqlab
from seqlab import nn
from seqlab.errors import CheckpointError


def _define(lib):
    """The same model definition written against `lib` (torch.nn or seqlab.nn)."""

    class Block(lib.Module):
        def __init__(self):
            super().__init__()
            self.norm = lib.LayerNorm(4)
            self.proj = lib.Linear(4, 4, bias=False)

    class Net(lib.Module):
        def __init__(self):
            super().__init__()
            self.scale = lib.Parameter(lib_tensor(lib, np.ones(4)))
            self.embed = lib.Embedding(10, 4)
            self.blocks = lib.ModuleList([Block(), Block()])
            self.heads = lib.ModuleDict({"cls": lib.Linear(4, 2), "lm": lib.Linear(4, 10)})
            self.mlp = lib.Sequential(lib.Linear(4, 8), lib.ReLU(), lib.Linear(8, 4))
            self.register_buffer("positions", lib_tensor(lib, np.arange(6.0)))
            self.register_buffer("cache", lib_tensor(lib, np.zeros(2)), persistent=False)
            self.shared = self.mlp[0]                       # the same module under two names
            self.heads["lm"].weight = self.embed.weight     # a tied parameter

    return Net()


def lib_tensor(lib, arr):
    return torch.tensor(arr, dtype=torch.float32) if lib is torch.nn else seqlab.tensor(arr, dtype=np.float32)


@pytest.fixture
def pair():
    return _define(nn), _define(torch.nn)


def test_named_parameters_order_equals_torch(pair):
    s, t = pair
    assert [n for n, _ in s.named_parameters()] == [n for n, _ in t.named_parameters()]
    assert [p.shape for p in s.parameters()] == [tuple(p.shape) for p in t.parameters()]


def test_state_dict_keys_equal_torch(pair):
    s, t = pair
    assert list(s.state_dict()) == list(t.state_dict())
    assert "cache" not in s.state_dict() and "shared.weight" in s.state_dict()
    assert isinstance(s.state_dict()["embed.weight"], np.ndarray)


def test_named_modules_and_buffers_equal_torch(pair):
    s, t = pair
    assert [n for n, _ in s.named_modules()] == [n for n, _ in t.named_modules()]
    assert [n for n, _ in s.named_buffers()] == [n for n, _ in t.named_buffers()]
    assert [n for n, _ in s.named_children()] == [n for n, _ in t.named_children()]


def test_load_torch_state_dict_then_same_outputs(pair):
    s, t = pair
    result = s.load_state_dict(t.state_dict())  # torch tensors straight in
    assert result.missing_keys == [] and result.unexpected_keys == []
    ids = np.array([[1, 2, 3]])
    hs = s.mlp(s.embed(ids) * s.scale)
    ht = t.mlp(t.embed(torch.from_numpy(ids)) * t.scale)
    np.testing.assert_allclose(hs.numpy(), ht.detach().numpy(), rtol=1e-5, atol=1e-6)
    assert s.heads["lm"].weight is s.embed.weight  # still tied after loading


def test_state_dict_round_trip_between_seqlab_models():
    seqlab.manual_seed(0)
    a = _define(nn)
    seqlab.manual_seed(1)
    b = _define(nn)
    assert not np.array_equal(a.embed.weight.numpy(), b.embed.weight.numpy())
    b.load_state_dict({k: v.copy() for k, v in a.state_dict().items()})
    for (na, pa), (nb, pb) in zip(a.named_parameters(), b.named_parameters()):
        np.testing.assert_array_equal(pa.numpy(), pb.numpy())


def test_strict_load_lists_every_missing_unexpected_and_mismatched_key(pair):
    s, t = pair
    sd = {k: v.numpy().copy() for k, v in t.state_dict().items()}
    del sd["embed.weight"], sd["blocks.1.norm.bias"]
    sd["mlp.0.weight"] = np.zeros((3, 3), np.float32)
    sd["blocks.0.proj.bias"] = np.zeros(4, np.float32)
    sd["extra"] = np.zeros(1, np.float32)
    with pytest.raises(CheckpointError) as e:
        s.load_state_dict(sd)
    msg = str(e.value)
    for key in ("embed.weight", "blocks.1.norm.bias", "blocks.0.proj.bias", "extra", "mlp.0.weight"):
        assert key in msg
    assert "missing keys: " in msg and "unexpected keys: " in msg
    assert "mlp.0.weight: checkpoint (3, 3) vs model (8, 4)" in msg
    assert isinstance(e.value, ValueError)


def test_non_strict_load_reports_but_still_rejects_shapes(pair):
    s, t = pair
    sd = {k: v for k, v in t.state_dict().items() if k != "scale"}
    sd["junk"] = np.zeros(2)
    res = s.load_state_dict(sd, strict=False)
    assert res.missing_keys == ["scale"] and res.unexpected_keys == ["junk"]
    sd["embed.weight"] = np.zeros((2, 2))
    with pytest.raises(CheckpointError, match=r"embed.weight: checkpoint \(2, 2\) vs model \(10, 4\)"):
        s.load_state_dict(sd, strict=False)


def test_load_state_dict_missing_key_message():
    lin = nn.Linear(3, 2)
    with pytest.raises(CheckpointError, match="missing keys: bias"):
        lin.load_state_dict({"weight": np.zeros((2, 3))})
    with pytest.raises(CheckpointError, match=r"weight: checkpoint \(3, 2\) vs model \(2, 3\)"):
        lin.load_state_dict({"weight": np.zeros((3, 2)), "bias": np.zeros(2)})


def test_load_keeps_dtype_and_copies():
    lin = nn.Linear(3, 2)
    src = {"weight": np.ones((2, 3)), "bias": np.ones(2)}  # float64 in, float32 model
    lin.load_state_dict(src)
    assert lin.weight.dtype == np.float32
    src["weight"][0, 0] = 5
    assert lin.weight.numpy()[0, 0] == 1


def test_train_eval_recurse(pair):
    s, _ = pair
    s.eval()
    assert all(not m.training for m in s.modules())
    s.train()
    assert all(m.training for m in s.modules())
    assert s.train(False) is s and not s.blocks[1].norm.training


def test_apply_visits_children_first_like_torch(pair):
    s, t = pair
    seen_s, seen_t = [], []
    s.apply(lambda m: seen_s.append(type(m).__name__))
    t.apply(lambda m: seen_t.append(type(m).__name__))
    assert seen_s == seen_t


def test_apply_can_initialise():
    model = nn.Sequential(nn.Linear(3, 3), nn.Tanh(), nn.Linear(3, 1))

    def init(m):
        if isinstance(m, nn.Linear):
            nn.init.constant_(m.weight, 0.25)

    model.apply(init)
    assert all(np.all(m.weight.numpy() == 0.25) for m in model if isinstance(m, nn.Linear))


def test_zero_grad():
    lin = nn.Linear(3, 2)
    lin(seqlab.randn(4, 3)).sum().backward()
    assert lin.weight.grad is not None
    lin.zero_grad(set_to_none=False)
    assert np.all(lin.weight.grad == 0)
    lin.zero_grad()
    assert lin.weight.grad is None and lin.bias.grad is None


def test_container_naming_equals_torch():
    seq_s = nn.Sequential(OrderedDict(a=nn.Linear(2, 3), b=nn.ReLU(), c=nn.Linear(3, 1)))
    seq_t = torch.nn.Sequential(OrderedDict(a=torch.nn.Linear(2, 3), b=torch.nn.ReLU(), c=torch.nn.Linear(3, 1)))
    assert list(seq_s.state_dict()) == list(seq_t.state_dict())
    assert isinstance(seq_s[1:], nn.Sequential) and list(seq_s[1:].state_dict()) == list(seq_t[1:].state_dict())
    assert isinstance(seq_s[-1], nn.Linear) and len(seq_s) == 3
    ml = nn.ModuleList([nn.Linear(1, 1)])
    ml.append(nn.Linear(1, 2))
    ml.extend([nn.Linear(2, 2)])
    ml.insert(0, nn.Linear(3, 3))
    tl = torch.nn.ModuleList([torch.nn.Linear(1, 1)])
    tl.append(torch.nn.Linear(1, 2))
    tl.extend([torch.nn.Linear(2, 2)])
    tl.insert(0, torch.nn.Linear(3, 3))
    assert [(k, v.shape) for k, v in ml.state_dict().items()] == [(k, tuple(v.shape)) for k, v in tl.state_dict().items()]
    assert len(ml[1:]) == 3 and ml[-1].out_features == 2
    md = nn.ModuleDict({"x": nn.Linear(1, 1)})
    md["y"] = nn.Linear(1, 1)
    assert list(md.keys()) == ["x", "y"] and "y" in md and len(md) == 2
    assert list(md.state_dict()) == ["x.weight", "x.bias", "y.weight", "y.bias"]


def test_buffers_move_with_state_and_reassignment_keeps_them():
    m = nn.Module()
    m.register_buffer("pe", np.arange(3.0))
    m.pe = seqlab.tensor(np.zeros(3))
    assert "pe" in m.state_dict() and np.all(m.state_dict()["pe"] == 0)
    m.register_buffer("tmp", np.ones(1), persistent=False)
    assert "tmp" not in m.state_dict()
    m.to(dtype=np.float64)
    assert m.pe.dtype == np.float64


def test_parameters_and_modules_can_be_replaced_and_deleted():
    m = nn.Module()
    m.w = nn.Parameter(np.ones(2))
    assert [n for n, _ in m.named_parameters()] == ["w"]
    m.w = nn.Parameter(np.zeros(3))
    assert m.w.shape == (3,) and len(list(m.parameters())) == 1
    del m.w
    assert list(m.parameters()) == []
    with pytest.raises(AttributeError, match="'w'"):
        m.w


def test_module_init_must_be_called():
    class Bad(nn.Module):
        def __init__(self):
            self.lin = nn.Linear(2, 2)

    with pytest.raises(RuntimeError, match="super"):
        Bad()
    half = Bad.__new__(Bad)  # no stores yet: a missing attribute is an AttributeError, as on any object
    assert not hasattr(half, "lin") and not hasattr(half, "training")


def test_repr_and_num_parameters():
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU())
    assert "Linear(in_features=3, out_features=4, bias=True)" in repr(model)
    assert model.num_parameters() == 16


def test_to_float64_and_requires_grad_():
    lin = nn.Linear(2, 2).double()
    assert lin.weight.dtype == np.float64
    lin.requires_grad_(False)
    assert not any(p.requires_grad for p in lin.parameters())


def test_assigning_a_plain_tensor_to_a_parameter_name_is_an_error():
    lin = nn.Linear(2, 2)
    with pytest.raises(TypeError, match="'weight'"):
        lin.weight = seqlab.zeros(2, 2)
    lin.weight = nn.Parameter(np.zeros((2, 2), np.float32))
    assert list(lin.state_dict()) == ["weight", "bias"]


def test_embedding_from_pretrained():
    w = np.arange(6.0, dtype=np.float32).reshape(3, 2)
    emb = nn.Embedding.from_pretrained(w)
    np.testing.assert_array_equal(emb(np.array([2, 0])).numpy(), w[[2, 0]])
    assert not emb.weight.requires_grad
    assert nn.Embedding.from_pretrained(torch.from_numpy(w), freeze=False).weight.requires_grad


def test_assigning_a_tensor_to_a_parameters_data_keeps_it_an_array_as_torch_users_expect():
    """`p.data = tensor` (torch's idiom) stores the tensor's array; anything that is not an array is refused
    at once instead of failing later inside an op."""
    import seqlab
    from seqlab import nn

    lin = nn.Linear(3, 4)
    lin.weight.data = seqlab.ones(4, 3)
    assert isinstance(lin.weight.data, np.ndarray)
    out = lin(seqlab.ones(2, 3)).sum()
    assert out.item() == pytest.approx(2 * (12 + float(lin.bias.data.sum())), rel=1e-6)
    with pytest.raises(TypeError, match="array or a Tensor"):
        lin.weight.data = [[1.0] * 3] * 4


def test_a_torch_tensor_given_to_a_module_is_named_as_the_cause():
    """A half-ported pipeline hands a torch.Tensor to a seqlab model: the error says so, instead of a NumPy
    complaint about 'torch.float32' from deep inside an op."""
    from seqlab import nn

    model = nn.Sequential(nn.Linear(3, 2), nn.ReLU())
    with pytest.raises(TypeError, match=r"Linear got a torch.Tensor as its argument 0: .*x.numpy\(\)"):
        model(torch.ones(2, 3))
    assert model(torch.ones(2, 3).numpy()).shape == (2, 2)  # its array is fine
    with pytest.raises(ValueError):  # other failures pass through unchanged
        nn.Linear(3, 2)(np.ones((2, 4), np.float32))
