"""What the top of a torch training script asks for, against torch where torch can answer on this machine:
devices, seqlab.cuda, autocast and GradScaler, compile, threads, matmul precision, backends flags,
seqlab.save/load, optimizer implementation flags, prod, float results of integer inputs, return types."""
import io
import warnings

import numpy as np
import pytest
import torch

import seqlab
from seqlab import nn
from seqlab.errors import CheckpointError


# ---- devices -------------------------------------------------------------------------------------------
def test_device_is_torch_like_and_a_string():
    d = seqlab.device("cpu")
    assert (d.type, d.index, repr(d)) == ("cpu", None, repr(torch.device("cpu")))
    assert d == "cpu" and str(d) == "cpu" and f"{d}" == "cpu"
    c = seqlab.device("cuda", 0)
    assert (c.type, c.index, str(c), repr(c)) == ("cuda", 0, "cuda:0", repr(torch.device("cuda", 0)))
    assert seqlab.device(0) == "cuda:0" and seqlab.device(torch.device("cpu")) == "cpu"
    assert seqlab.device("cuda:0") != seqlab.device("cuda")  # as torch's
    assert torch.device("cuda:0") != torch.device("cuda")
    one = seqlab.device("cuda:1")  # named, as torch's (d2l's first GPU cell); used, refused: seqlab drives one GPU
    assert (one.type, one.index, repr(one)) == ("cuda", 1, repr(torch.device("cuda:1")))
    with pytest.raises(ValueError, match="'cuda:1': seqlab uses one GPU"):
        seqlab.ones(2).to(one)
    with pytest.raises(ValueError, match="unknown device"):
        seqlab.device("mps")
    with pytest.raises(ValueError, match="index after ':' must be a number"):
        seqlab.device("cuda:x")


def test_tensor_device_compares_with_strings_and_devices():
    x = seqlab.ones(2)
    assert x.device == "cpu" and x.device == seqlab.device("cpu") and x.device.type == "cpu"
    assert repr(x.device) == "device(type='cpu')"


def test_to_takes_every_torch_form():
    x = seqlab.arange(3)
    assert x.to("cpu") is x and x.to(seqlab.device("cpu")) is x and x.to(torch.device("cpu")) is x
    assert x.to("cpu", non_blocking=True) is x
    assert x.to(seqlab.float32).dtype == np.float32
    assert x.to("cpu", seqlab.float64).dtype == np.float64
    assert x.to(device="cpu", dtype=torch.float32).dtype == np.float32
    assert x.to(seqlab.ones(1, dtype=np.float64)).dtype == np.float64  # another tensor: its dtype and device
    assert x.to(torch.ones(1, dtype=torch.float64)).dtype == np.float64
    y = x.to("cpu", copy=True)
    assert y is not x and np.array_equal(y.numpy(), x.numpy())
    with pytest.raises(TypeError):
        x.to("cpu", np.float32, "extra")


def test_module_to_takes_every_torch_form():
    m = nn.Linear(2, 3)
    assert m.to(seqlab.device("cpu"), non_blocking=True) is m
    m.to(torch.float64)
    assert m.weight.dtype == np.float64
    m.to(seqlab.ones(1))  # a tensor: its float32
    assert m.weight.dtype == np.float32
    m2 = nn.Linear(2, 3, device=seqlab.device("cpu"))
    assert m2.weight.device == "cpu"


def test_module_cuda_and_cpu_move_parameters_and_buffers(cuda):
    m = nn.BatchNorm1d(3)  # parameters and buffers
    assert m.cuda() is m
    assert all(isinstance(t.data, cuda.ndarray) for t in (m.weight, m.bias, m.running_mean))
    assert m.weight.device == "cuda" and m.cuda(0).weight.device == "cuda" and m.cuda("cuda:0") is m
    with pytest.raises(ValueError, match="one GPU"):
        m.cuda(1)
    assert m.cpu() is m and m.running_var.device == "cpu" and isinstance(m.running_var.data, np.ndarray)


def test_device_as_context_sets_the_default_for_new_tensors():
    with seqlab.device("cpu"):
        assert seqlab.zeros(2).device == "cpu"
    assert seqlab.backend.get_device() == "cpu"


def test_cuda_namespace_without_a_gpu():
    if seqlab.cuda.is_available():
        pytest.skip("this machine has a GPU: tests/test_device_path.py covers it")
    assert seqlab.cuda.is_available() is False and seqlab.cuda.device_count() == 0
    assert seqlab.cuda.is_bf16_supported() is False
    seqlab.cuda.synchronize()
    seqlab.cuda.empty_cache()
    with pytest.raises(RuntimeError, match="no GPU"):
        seqlab.cuda.current_device()
    with pytest.raises(RuntimeError, match="no GPU"):
        seqlab.cuda.get_device_name()
    device = "cuda" if seqlab.cuda.is_available() else "cpu"  # the line every script has
    assert seqlab.zeros(1, device=device).device == "cpu"


def test_cuda_manual_seed_leaves_the_host_stream_alone():
    seqlab.manual_seed(3)
    a = seqlab.randn(4).numpy()
    seqlab.manual_seed(3)
    seqlab.cuda.manual_seed(99)
    seqlab.cuda.manual_seed_all(7)
    assert np.array_equal(seqlab.randn(4).numpy(), a)
    with pytest.raises(ValueError):
        seqlab.cuda.manual_seed(-1)


def test_bfloat16_can_be_named_but_not_used():
    table = {"float32": seqlab.float32, "bfloat16": seqlab.bfloat16, "float16": seqlab.float16}  # nanoGPT's
    assert repr(table["bfloat16"]) == "seqlab.bfloat16"
    with pytest.raises(TypeError, match=r"no bfloat16 \(NumPy lacks it\): use float32 \(the default\) or float64; "
                                        r"seqlab does not compute in half precision"):
        seqlab.zeros(2, dtype=seqlab.bfloat16)


# ---- autocast and GradScaler ------------------------------------------------------------------------------
def test_autocast_disabled_is_silent_and_enabled_warns_once():
    import seqlab.amp as amp

    amp._warned = False
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with seqlab.autocast(device_type="cpu", dtype=seqlab.bfloat16, enabled=False):
            y = seqlab.ones(2) * 2
    assert y.dtype == np.float32
    with pytest.warns(UserWarning, match="float32"):
        with seqlab.amp.autocast(device_type="cuda", dtype=seqlab.float16):
            pass
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with seqlab.cuda.amp.autocast():
            pass  # warned once already

    @seqlab.autocast("cpu", enabled=False)
    def f(x):
        return x + 1

    assert f(seqlab.ones(1)).item() == 2.0


def _scaler_run(lib, grads_inf_at, steps=6, **kw):
    """Train a Linear with a GradScaler for `steps`, making the gradients inf at the steps listed; returns the
    scales after each update, whether each step changed the weights, and the final weights."""
    torch.manual_seed(0)
    ref = torch.nn.Linear(3, 2)
    if lib == "torch":
        model = ref
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        scaler = torch.amp.GradScaler("cpu", **kw)
        x = torch.arange(6.0).reshape(2, 3) / 6
    else:
        model = nn.Linear(3, 2)
        model.load_state_dict(ref.state_dict())
        opt = seqlab.optim.SGD(model.parameters(), lr=0.1)
        scaler = seqlab.amp.GradScaler("cpu", **kw)
        x = seqlab.arange(6.0).reshape(2, 3) / 6
    scales, stepped = [], []
    for i in range(steps):
        opt.zero_grad()
        loss = (model(x) ** 2).sum() * (float("inf") if i in grads_inf_at else 1.0)
        scaler.scale(loss).backward()
        before = np.array(model.weight.detach().numpy() if lib == "torch" else model.weight.numpy())
        scaler.step(opt)
        scaler.update()
        after = model.weight.detach().numpy() if lib == "torch" else model.weight.numpy()
        stepped.append(not np.array_equal(before, after))
        scales.append(scaler.get_scale())
    return scales, stepped, np.array(after)


@pytest.mark.filterwarnings("ignore:invalid value:RuntimeWarning")  # the inf loss, on purpose
def test_grad_scaler_matches_torch():
    for kw in ({"init_scale": 2.0 ** 10, "growth_interval": 2}, {"init_scale": 8.0, "backoff_factor": 0.25}):
        t = _scaler_run("torch", {1, 4}, **kw)
        s = _scaler_run("seqlab", {1, 4}, **kw)
        assert s[0] == t[0] and s[1] == t[1]
        np.testing.assert_allclose(s[2], t[2], rtol=1e-6, atol=1e-7)


def test_grad_scaler_unscale_once_state_dict_and_disabled():
    m = nn.Linear(2, 1)
    opt = seqlab.optim.SGD(m.parameters(), lr=0.1)
    scaler = seqlab.amp.GradScaler(init_scale=4.0)
    scaler.scale(m(seqlab.ones(1, 2)).sum()).backward()
    scaler.unscale_(opt)
    np.testing.assert_allclose(m.bias.grad, [1.0])  # the true gradient again
    with pytest.raises(RuntimeError, match="already been called"):
        scaler.unscale_(opt)
    scaler.step(opt)
    scaler.update()
    other = seqlab.amp.GradScaler()
    other.load_state_dict(scaler.state_dict())
    assert other.get_scale() == scaler.get_scale() == 4.0
    off = seqlab.cuda.amp.GradScaler(enabled=False)
    loss = m(seqlab.ones(1, 2)).sum()
    assert off.scale(loss) is loss and off.get_scale() == 1.0 and off.state_dict() == {}
    with pytest.raises(ValueError, match="growth_factor"):
        seqlab.amp.GradScaler(growth_factor=1.0)


# ---- compile, threads, precision, backends -----------------------------------------------------------------
def test_compile_returns_the_model_unchanged():
    m = nn.Linear(2, 2)
    assert seqlab.compile(m) is m and seqlab.compile(m, mode="max-autotune", fullgraph=True) is m

    @seqlab.compile(dynamic=False)
    def f(x):
        return x * 3

    assert f(seqlab.ones(1)).item() == 3.0


def test_num_threads_round_trip():
    before = seqlab.get_num_threads()
    try:
        seqlab.set_num_threads(1)
        assert seqlab.get_num_threads() == 1
        from seqlab.blas import get_blas_threads

        assert get_blas_threads() in (None, 1)
    finally:
        seqlab.set_num_threads(before)
    with pytest.raises(ValueError):
        seqlab.set_num_threads(0)


def test_matmul_precision_and_backend_flags():
    assert seqlab.get_float32_matmul_precision() == "highest"  # torch's default too
    seqlab.set_float32_matmul_precision("high")
    try:
        assert seqlab.get_float32_matmul_precision() == "high"
    finally:
        seqlab.set_float32_matmul_precision("highest")
    with pytest.raises(RuntimeError, match="Invalid precision"):
        seqlab.set_float32_matmul_precision("low")
    seqlab.backends.cuda.matmul.allow_tf32 = True  # nanoGPT's two lines
    seqlab.backends.cudnn.allow_tf32 = True
    assert seqlab.backends.mps.is_available() is False


# ---- optimizers' implementation flags --------------------------------------------------------------------
def test_optimizer_implementation_flags_are_accepted_and_change_nothing():
    torch.manual_seed(0)
    ref = torch.nn.Linear(3, 2)
    out = []
    for flags in ({}, {"fused": True}, {"foreach": False, "capturable": False}):
        m = nn.Linear(3, 2)
        m.load_state_dict(ref.state_dict())
        opt = seqlab.optim.AdamW(m.parameters(), lr=0.1, betas=(0.9, 0.95), **flags)
        (m(seqlab.ones(4, 3)) ** 2).sum().backward()
        opt.step()
        out.append(m.weight.numpy().copy())
    np.testing.assert_array_equal(out[0], out[1])
    np.testing.assert_array_equal(out[0], out[2])
    seqlab.optim.SGD(nn.Linear(1, 1).parameters(), foreach=True, fused=False)
    seqlab.optim.Adam(nn.Linear(1, 1).parameters(), maximize=True)  # supported (test_torch_compat_toplevel.py)
    with pytest.raises(TypeError):
        seqlab.optim.AdamW(nn.Linear(1, 1).parameters(), fusd=True)


# ---- save / load -----------------------------------------------------------------------------------------
def _checkpoint():
    m = nn.Linear(3, 2)
    opt = seqlab.optim.AdamW(m.parameters(), lr=1e-3)
    (m(seqlab.ones(1, 3)) ** 2).sum().backward()
    opt.step()
    return m, opt, {"model": m.state_dict(), "optimizer": opt.state_dict(), "iter_num": 7, "best_val_loss": 1.5,
                    "model_args": {"n_layer": 4, "bias": False, "dropout": 0.0}, "config": {"name": "run"},
                    "tensor": seqlab.tensor([1.0, 2.0]), "pair": (1, "a"), "none": None, "list": [1, [2.5]],
                    "scalar": np.float32(0.25), "inf": float("inf")}


def test_save_load_round_trip_of_a_nanogpt_checkpoint(tmp_path):
    m, opt, ckpt = _checkpoint()
    seqlab.save(ckpt, tmp_path / "ckpt.pt")
    got = seqlab.load(tmp_path / "ckpt.pt", map_location="cpu", weights_only=True)
    assert set(got) == set(ckpt)
    for k, v in ckpt["model"].items():
        assert isinstance(got["model"][k], np.ndarray) and np.array_equal(got["model"][k], v)
    assert isinstance(got["tensor"], seqlab.Tensor) and got["tensor"].tolist() == [1.0, 2.0]
    assert got["pair"] == (1, "a") and got["none"] is None and got["list"] == [1, [2.5]]
    assert got["scalar"] == np.float32(0.25) and got["scalar"].dtype == np.float32
    assert got["iter_num"] == 7 and got["best_val_loss"] == 1.5 and got["inf"] == float("inf")
    assert got["model_args"] == ckpt["model_args"]
    assert list(got["optimizer"]["state"]) == list(ckpt["optimizer"]["state"])  # int keys stay ints
    m2 = nn.Linear(3, 2)
    m2.load_state_dict(got["model"])
    opt2 = seqlab.optim.AdamW(m2.parameters(), lr=1e-3)
    opt2.load_state_dict(got["optimizer"])
    assert opt2.state_dict()["param_groups"] == opt.state_dict()["param_groups"]
    x = seqlab.ones(2, 3)
    assert np.array_equal(m2(x).numpy(), m(x).numpy())


def test_save_load_file_objects_and_plain_safetensors(tmp_path):
    buf = io.BytesIO()
    seqlab.save({"w": seqlab.ones(2, 2)}, buf)
    buf.seek(0)
    assert np.array_equal(seqlab.load(buf)["w"].numpy(), np.ones((2, 2), np.float32))
    from seqlab.hub.safetensors import save_file

    save_file({"a": np.arange(3, dtype=np.float32)}, tmp_path / "plain.safetensors")
    got = seqlab.load(tmp_path / "plain.safetensors")
    assert list(got) == ["a"] and np.array_equal(got["a"], np.arange(3, dtype=np.float32))


def test_save_refuses_what_would_need_pickle_and_load_refuses_torch_files(tmp_path):
    with pytest.raises(TypeError, match="save module.state_dict"):
        seqlab.save(nn.Linear(1, 1), tmp_path / "m.pt")
    with pytest.raises(TypeError, match="function"):
        seqlab.save({"f": lambda: 0}, tmp_path / "f.pt")
    with pytest.raises(TypeError, match="dict keys"):
        seqlab.save({(1, 2): 3}, tmp_path / "k.pt")
    torch.save({"w": torch.ones(2)}, tmp_path / "torch.pt")
    with pytest.raises(CheckpointError, match="torch.save"):
        seqlab.load(tmp_path / "torch.pt")
    with pytest.raises(TypeError, match="map_location"):
        seqlab.load(tmp_path / "torch.pt", map_location=lambda s, loc: s)


@pytest.mark.parametrize("start", [b"\x80\x03", b"PK"])
def test_load_reads_safetensors_whose_header_length_starts_like_a_pickle(tmp_path, start):
    """A safetensors file begins with its header's length: 0x0380 bytes begins with 0x80 (a pickle's first
    byte), 0x4B50 with "PK" (a zip's). An audit's `save(Sequential(Linear, BatchNorm1d).state_dict())` wrote
    one and `load` called it a torch pickle."""
    from safetensors.numpy import save

    want = int.from_bytes(start, "little")
    for pad in range(want):
        blob = save({"a": np.arange(3, dtype=np.float32)}, metadata={"pad": "x" * pad})
        if blob[:2] == start:
            break
    assert int.from_bytes(blob[:8], "little") == want
    (tmp_path / "f.pt").write_bytes(blob)
    got = seqlab.load(tmp_path / "f.pt")
    assert np.array_equal(got["a"], np.arange(3, dtype=np.float32))
    m = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4))
    seqlab.save(m.state_dict(), tmp_path / "ck.pt")
    assert all(np.array_equal(v, m.state_dict()[k]) for k, v in seqlab.load(tmp_path / "ck.pt").items())


def test_saved_names_never_collide(tmp_path):
    obj = {"a/b": seqlab.ones(1), "a": {"b": seqlab.zeros(1)}}
    seqlab.save(obj, tmp_path / "c.pt")
    got = seqlab.load(tmp_path / "c.pt")
    assert got["a/b"].item() == 1.0 and got["a"]["b"].item() == 0.0


# ---- prod, integer inputs to float functions, return types -----------------------------------------------
@pytest.mark.parametrize("values", [[[1.0, 2.0, 0.0], [3.0, 4.0, 5.0]], [[0.0, 2.0, 0.0], [3.0, -4.0, 5.0]]])
@pytest.mark.parametrize("dim", [None, 0, 1, -1])
def test_prod_and_its_gradient_match_torch_also_with_zeros(values, dim):
    a = seqlab.tensor(values, requires_grad=True)
    t = torch.tensor(values, requires_grad=True)
    sa, st = (a.prod(), t.prod()) if dim is None else (a.prod(dim), t.prod(dim))
    np.testing.assert_allclose(sa.detach().numpy(), st.detach().numpy())
    (sa * seqlab.arange(1.0, 1.0 + sa.numel()).reshape(sa.shape)).sum().backward()
    (st * torch.arange(1.0, 1.0 + st.numel()).reshape(st.shape)).sum().backward()
    np.testing.assert_allclose(a.grad, t.grad.numpy())
    if dim is not None:
        assert seqlab.prod(a, dim, keepdim=True).shape == tuple(torch.prod(t, dim, keepdim=True).shape)


def test_prod_of_integers_is_int64_as_torch():
    assert seqlab.tensor([1, 2, 3], dtype=np.int32).prod().dtype == np.int64
    assert seqlab.tensor([1, 2, 3]).prod().item() == torch.tensor([1, 2, 3]).prod().item() == 6


@pytest.mark.filterwarnings("ignore:divide by zero:RuntimeWarning")  # log(False) is -inf, as torch's
@pytest.mark.parametrize("name", ["exp", "log", "sqrt", "sigmoid", "tanh", "sin", "cos"])
def test_float_functions_of_integer_tensors_give_float32_as_torch(name):
    a, t = getattr(seqlab.arange(1, 5), name)(), getattr(torch.arange(1, 5), name)()
    assert a.dtype == np.float32 and t.dtype == torch.float32
    np.testing.assert_allclose(a.numpy(), t.numpy(), rtol=1e-6)
    assert getattr(seqlab.tensor([True, False]), name)().dtype == np.float32


def test_return_types_are_named_as_torch():
    x = seqlab.tensor([[1.0, 3.0], [2.0, 0.0]])
    assert repr(x.max(1)).startswith("seqlab.return_types.max(")
    assert repr(x.min(1)).startswith("seqlab.return_types.min(")
    assert repr(x.sort()).startswith("seqlab.return_types.sort(")
    assert repr(x.topk(1)).startswith("seqlab.return_types.topk(")
    values, indices = x.max(1)
    assert values.tolist() == [3.0, 2.0] and x.max(1).indices.tolist() == [1, 0]


def test_activation_reprs_as_torch():
    for ours, theirs in ((nn.GELU(), torch.nn.GELU()), (nn.GELU("tanh"), torch.nn.GELU("tanh")),
                         (nn.Softmax(dim=-1), torch.nn.Softmax(dim=-1)), (nn.LogSoftmax(1), torch.nn.LogSoftmax(1))):
        assert repr(ours) == repr(theirs)


def test_lazy_linear_takes_its_shape_from_a_state_dict():
    ref = torch.nn.Sequential(torch.nn.Linear(5, 3), torch.nn.ReLU(), torch.nn.Linear(3, 2))
    m = nn.Sequential(nn.LazyLinear(3), nn.ReLU(), nn.LazyLinear(2))
    m.load_state_dict(ref.state_dict())
    assert type(m[0]) is nn.Linear and m[0].in_features == 5
    x = torch.randn(4, 5)
    np.testing.assert_allclose(m(seqlab.tensor(x.numpy())).numpy(), ref(x).detach().numpy(), rtol=1e-6, atol=1e-6)
    lazy = nn.LazyLinear(4)
    with pytest.raises(Exception, match="shape mismatch"):
        lazy.load_state_dict({"weight": np.zeros((3, 5), np.float32), "bias": np.zeros(3, np.float32)})


# ---- torch's legacy constructor: torch.Tensor(2, 3), torch.Tensor([1, 2]) -------------------------------------
@pytest.mark.parametrize("call", ["Tensor([1, 2])", "Tensor(3)", "Tensor(2, 3)", "Tensor(2, 3, 4)", "Tensor()",
                                  "Tensor((1, 2))", "Tensor([[True, False]])", "Tensor(0, 5)"])
def test_the_legacy_tensor_constructor_gives_torchs_shape_and_dtype(call):
    """An audit found `torch.Tensor(2, 3)` a TypeError and `torch.Tensor([1, 2])` int64; custom layers write
    `nn.Parameter(torch.Tensor(out, in))` and fill it in reset_parameters()."""
    s, t = eval(f"seqlab.{call}"), eval(f"torch.{call}")  # noqa: S307 - the calls above
    assert tuple(s.shape) == tuple(t.shape) and s.dtype == np.float32 and t.dtype == torch.float32
    if t.numel() and call.startswith("Tensor(["):  # values given: the same values
        np.testing.assert_array_equal(s.numpy(), t.numpy())


def test_a_parameter_from_the_legacy_constructor_and_arrays_keeping_their_dtype():
    p = nn.Parameter(seqlab.Tensor(4, 3))
    nn.init.kaiming_uniform_(p, a=5 ** 0.5)
    assert p.shape == (4, 3) and p.dtype == np.float32 and p.requires_grad and float(p.abs().sum()) > 0
    assert seqlab.Tensor(np.arange(3)).dtype == np.int64  # an array keeps its dtype (torch would make float32)
    with pytest.raises(TypeError, match="sizes"):
        seqlab.Tensor(2, "a")


@pytest.mark.parametrize("fn", ["softmax", "log_softmax"])
def test_softmax_of_an_integer_tensor_is_refused_in_one_line_as_torch(fn):
    """torch: "not implemented for 'Long'"; an audit found NumPy's casting error from inside the op instead."""
    with pytest.raises((RuntimeError, NotImplementedError)):
        getattr(torch.tensor([1, 2]), fn)(0)
    with pytest.raises(TypeError, match=rf"{fn}\(\) of a int64 tensor: it needs floating point"):
        getattr(seqlab.tensor([1, 2]), fn)(0)
    np.testing.assert_allclose(getattr(seqlab.tensor([1, 2]), fn)(0, dtype=seqlab.float32).numpy(),
                               getattr(torch.tensor([1, 2]), fn)(0, dtype=torch.float32).numpy(), rtol=1e-6)


SHAPE_MISTAKES = {
    "matmul": lambda lib: lib.ones(2, 3) @ lib.ones(4, 5),
    "cat": lambda lib: lib.cat([lib.ones(2, 3), lib.ones(2, 4)], 0),
    "view": lambda lib: lib.ones(2, 3).view(5),
    "broadcast": lambda lib: lib.ones(2, 3) + lib.ones(4, 3),
    "expand": lambda lib: lib.ones(2, 3).expand(4, 4),
    "item": lambda lib: lib.ones(2).item(),
    "stack": lambda lib: lib.stack([lib.ones(2), lib.ones(3)]),
    "linear": lambda lib: lib.nn.Linear(3, 2)(lib.ones(4, 5)),
}


@pytest.mark.parametrize("case", list(SHAPE_MISTAKES))
def test_shape_mistakes_are_runtime_errors_as_torchs_and_still_value_errors(case):
    """torch code catches these with `except RuntimeError`; seqlab's are ValueErrors too (DESIGN's rule)."""
    with pytest.raises(RuntimeError):
        SHAPE_MISTAKES[case](torch)
    with pytest.raises(RuntimeError) as e:
        SHAPE_MISTAKES[case](seqlab)
    assert isinstance(e.value, ValueError) and len(str(e.value).splitlines()) == 1


def test_reversed_flips_the_first_dim_as_torch():
    """d2l's BiRNNScratch runs its backward RNN on `reversed(inputs)` (an audit found a plain iterator)."""
    a = np.arange(6, dtype=np.float32).reshape(3, 2)
    np.testing.assert_array_equal(reversed(seqlab.tensor(a)).numpy(), reversed(torch.tensor(a)).numpy())
    x = seqlab.tensor(a, requires_grad=True)
    (reversed(x) * seqlab.tensor([[1.0, 1.0], [2.0, 2.0], [3.0, 3.0]])).sum().backward()
    np.testing.assert_array_equal(x.grad, [[3, 3], [2, 2], [1, 1]])
    assert reversed(seqlab.tensor(2.0)).item() == 2.0


@pytest.mark.parametrize("case", ["layer_norm", "mean_of_int"])
def test_more_torch_runtime_errors(case):
    """A LayerNorm of another trailing shape and the mean of an integer tensor: torch's RuntimeError, seqlab's
    ValueError / TypeError, one class both (an audit found plain ones)."""
    calls = {"layer_norm": lambda lib: lib.nn.LayerNorm([5, 4])(lib.ones(2, 1, 4)),
             "mean_of_int": lambda lib: lib.tensor([1, 2]).mean()}
    with pytest.raises(RuntimeError):
        calls[case](torch)
    with pytest.raises(RuntimeError) as e:
        calls[case](seqlab)
    assert isinstance(e.value, (ValueError, TypeError))
