"""nn.LazyLinear against torch.nn.LazyLinear: in_features from the first input, then a Linear."""
import numpy as np
import pytest
import torch
from helpers import check_module

import seqlab
from seqlab import nn
from seqlab.errors import StateDictError


def _materialized(bias=True, width=5, out=3):
    s, t = nn.LazyLinear(out, bias=bias), torch.nn.LazyLinear(out, bias=bias)
    s(seqlab.randn(2, width))
    t(torch.randn(2, width))
    return s, t


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("x_shape", [(5,), (4, 5), (2, 3, 5)])
def test_after_first_forward_outputs_and_grads_equal_torch(dtype, bias, x_shape):
    s, t = _materialized(bias)
    check_module(s, t, [x_shape], dtype=dtype)


@pytest.mark.parametrize("bias", [True, False])
def test_state_dict_keys_and_shapes_as_torch_before_and_after(bias):
    s = nn.Sequential(nn.LazyLinear(4, bias=bias), nn.ReLU(), nn.LazyLinear(2, bias=bias))
    t = torch.nn.Sequential(torch.nn.LazyLinear(4, bias=bias), torch.nn.ReLU(), torch.nn.LazyLinear(2, bias=bias))
    assert list(s.state_dict()) == list(t.state_dict())
    s(seqlab.randn(3, 6))
    t(torch.randn(3, 6))
    assert [(k, v.shape) for k, v in s.state_dict().items()] == \
        [(k, tuple(v.shape)) for k, v in t.state_dict().items()]


def test_becomes_a_linear_as_torch_and_repr_matches():
    s, t = nn.LazyLinear(3), torch.nn.LazyLinear(3)
    assert isinstance(s, nn.Linear) and isinstance(t, torch.nn.Linear)
    assert repr(s) == repr(t)  # LazyLinear(in_features=0, out_features=3, bias=True)
    s(seqlab.randn(2, 5))
    t(torch.randn(2, 5))
    assert type(s) is nn.Linear and type(t) is torch.nn.Linear  # d2l's `type(m) == nn.Linear` inits
    assert repr(s) == repr(t)  # Linear(in_features=5, out_features=3, bias=True)
    assert s.in_features == t.in_features == 5


@pytest.mark.parametrize("bias", [True, False])
def test_init_is_linears_drawn_from_seqlabs_generator_at_first_forward(bias):
    lazy = nn.LazyLinear(3, bias=bias)
    x = seqlab.randn(4, 7)
    seqlab.manual_seed(11)  # after construction: the draw must happen at the forward
    lazy(x)
    seqlab.manual_seed(11)
    ref = nn.Linear(7, 3, bias=bias)
    np.testing.assert_array_equal(lazy.weight.numpy(), ref.weight.numpy())
    if bias:
        np.testing.assert_array_equal(lazy.bias.numpy(), ref.bias.numpy())
    else:
        assert lazy.bias is None


@pytest.mark.parametrize("make_opt", [
    lambda ps, lib: lib.optim.SGD(ps, lr=0.1, momentum=0.9),
    lambda ps, lib: lib.optim.Adam(ps, lr=0.01),
])
def test_optimizer_built_before_first_forward_trains_the_real_weights(make_opt):
    s = nn.Sequential(nn.LazyLinear(4), nn.Tanh(), nn.LazyLinear(1))
    t = torch.nn.Sequential(torch.nn.LazyLinear(4), torch.nn.Tanh(), torch.nn.LazyLinear(1)).double()
    s_opt, t_opt = make_opt(s.parameters(), seqlab), make_opt(t.parameters(), torch)
    x = np.random.default_rng(0).normal(size=(8, 3))
    s.double()
    s(seqlab.tensor(x))
    t(torch.tensor(x))
    s.load_state_dict({k: v.detach().numpy() for k, v in t.state_dict().items()})  # copies into the same arrays
    assert s_opt.param_groups[0]["params"][0] is s[0].weight
    for _ in range(3):
        for opt in (s_opt, t_opt):
            opt.zero_grad()
        (s(seqlab.tensor(x)) ** 2).sum().backward()
        (t(torch.tensor(x)) ** 2).sum().backward()
        s_opt.step()
        t_opt.step()
    for k, v in t.state_dict().items():
        np.testing.assert_allclose(s.state_dict()[k], v.numpy(), rtol=1e-10, atol=1e-12, err_msg=k)


def test_a_second_input_of_another_width_is_a_clear_error():
    s = nn.LazyLinear(3)
    s(seqlab.randn(2, 5))
    with pytest.raises(ValueError, match=r"shape \(2, 6\).*last dim 5"):
        s(seqlab.randn(2, 6))


def test_bad_first_inputs_leave_it_uninitialised():
    s = nn.LazyLinear(3)
    with pytest.raises(TypeError, match="floating-point"):
        s(seqlab.tensor([[1, 2]]))
    with pytest.raises(ValueError, match="last dim"):
        s(seqlab.tensor(1.0))
    assert s.in_features == 0 and type(s) is nn.LazyLinear and s.weight.shape == (0,)
    assert s(seqlab.randn(2, 4)).shape == (2, 3)
    with pytest.raises(ValueError, match="positive out_features"):
        nn.LazyLinear(0)


def test_dtype_and_cast_before_the_first_forward_are_kept():
    a = nn.LazyLinear(3, dtype=np.float64)
    b = nn.LazyLinear(3).double()
    for m in (a, b):
        m(seqlab.randn(2, 4))
        assert m.weight.dtype == np.float64 and m.bias.dtype == np.float64 and m.weight.shape == (3, 4)


def test_first_forward_under_no_grad_still_gives_trainable_parameters():
    s = nn.LazyLinear(2)
    with seqlab.no_grad():
        s(seqlab.randn(3, 4))
    assert s.weight.requires_grad and s.bias.requires_grad and s.weight.shape == (2, 4)


def test_loading_a_state_dict_before_the_first_forward_takes_its_shapes():
    # as torch: the placeholders are sized from the checkpoint, then filled from it
    s = nn.LazyLinear(3)
    w, b = np.arange(15.0).reshape(3, 5), np.arange(3.0)
    s.load_state_dict({"weight": w, "bias": b})
    assert type(s) is nn.Linear and s.in_features == 5 and np.array_equal(s.weight.numpy(), w)
    t = torch.nn.LazyLinear(3)
    t.load_state_dict({"weight": torch.tensor(w, dtype=torch.float32), "bias": torch.tensor(b, dtype=torch.float32)})
    assert tuple(t.weight.shape) == s.weight.shape
    other = nn.LazyLinear(4)  # out_features disagree: named in the error, as before
    with pytest.raises(StateDictError, match=r"weight: checkpoint \(3, 5\) vs model \(0,\)"):
        other.load_state_dict({"weight": w, "bias": b})
