"""nn.TransformerEncoder's padding-free inference, as torch's nested-tensor fast path: in eval mode without a
graph and with a src_key_padding_mask, the layers run on the real tokens only and the padded positions come
out 0 (norm(0) with a final norm). Everything is held to torch's TransformerEncoder on the same weights, in
the cases torch takes that path and in those it does not."""
import warnings

import numpy as np
import pytest
import torch

import seqlab
from seqlab import nn

pytestmark = pytest.mark.filterwarnings("ignore:The PyTorch API of nested tensors")

X = np.random.default_rng(0).standard_normal((3, 5, 16)).astype(np.float32)
RIGHT = np.array([[False] * 5, [False] * 3 + [True] * 2, [False] * 2 + [True] * 3])  # padding at the ends
LEFT = np.array([[True] + [False] * 4, [False] * 5, [False] * 5])                    # a pad before real tokens


def _pair(norm_first=False, nhead=2, activation="relu", final_norm=False, dropout=0.1, **enc_kw):
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(16, nhead, 32, dropout, batch_first=True, activation=activation,
                                             norm_first=norm_first)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch warns when its fast path is off for the layer (norm_first, ...)
        theirs = torch.nn.TransformerEncoder(layer, 2, norm=torch.nn.LayerNorm(16) if final_norm else None,
                                             **enc_kw)
    with torch.no_grad():
        for p in theirs.parameters():
            p.add_(torch.randn_like(p) * 0.1)  # LayerNorm's bias too: norm(0) is not 0
    ours = nn.TransformerEncoder(nn.TransformerEncoderLayer(16, nhead, 32, dropout, activation=activation,
                                                            norm_first=norm_first), 2,
                                 norm=nn.LayerNorm(16) if final_norm else None, **enc_kw)
    ours.load_state_dict({k: seqlab.tensor(v.detach().numpy()) for k, v in theirs.state_dict().items()})
    return ours, theirs


def _run(ours, theirs, pad, mode="eval"):
    for m in (ours, theirs):
        m.train(mode == "train")
    if mode == "grad":
        ys = ours(seqlab.tensor(X), src_key_padding_mask=pad)
        yt = theirs(torch.from_numpy(X), src_key_padding_mask=torch.from_numpy(pad))
        return ys.numpy(), yt.detach().numpy()
    with seqlab.no_grad(), torch.no_grad():
        seqlab.manual_seed(0)
        ys = ours(seqlab.tensor(X), src_key_padding_mask=pad).numpy()
        yt = theirs(torch.from_numpy(X), src_key_padding_mask=torch.from_numpy(pad)).numpy()
    return ys, yt


@pytest.mark.parametrize("kw", [{}, {"final_norm": True}, {"activation": "gelu"}, {"nhead": 4}],
                         ids=["relu", "final_norm", "gelu", "four_heads"])
def test_padded_positions_are_torchs_and_the_real_ones_too(kw):
    ours, theirs = _pair(**kw)
    ys, yt = _run(ours, theirs, RIGHT)
    np.testing.assert_allclose(ys, yt, rtol=1e-5, atol=2e-6)
    want_pad = 0.0 if not kw.get("final_norm") else theirs.norm.bias.detach().numpy()
    np.testing.assert_allclose(ys[RIGHT], np.broadcast_to(want_pad, ys[RIGHT].shape), atol=1e-6)


@pytest.mark.parametrize("case", ["norm_first", "odd_heads", "left_padding", "no_nested", "grad", "train"])
def test_where_torch_computes_the_padded_positions_so_does_seqlab(case):
    kw = {"norm_first": {"norm_first": True}, "odd_heads": {"nhead": 1},
          "no_nested": {"enable_nested_tensor": False},
          "train": {"dropout": 0.0}}.get(case, {})  # in training, dropout's draws would differ
    ours, theirs = _pair(**kw)
    pad = LEFT if case == "left_padding" else RIGHT
    mode = case if case in ("grad", "train") else "eval"
    ys, yt = _run(ours, theirs, pad, mode)
    np.testing.assert_allclose(ys, yt, rtol=1e-5, atol=2e-6)
    assert np.abs(ys[pad]).sum() > 0  # computed, not zeroed


def test_the_fast_path_agrees_with_the_full_computation_on_real_tokens_and_takes_less_work():
    """On real tokens the packed layers give the full computation's values; seqlab's own full path is the
    same module with enable_nested_tensor=False. A float padding mask (nonzero = pad) is read as torch's."""
    ours, _ = _pair()
    full = nn.TransformerEncoder(nn.TransformerEncoderLayer(16, 2, 32), 2, enable_nested_tensor=False)
    full.load_state_dict(ours.state_dict())
    ours.eval()
    full.eval()
    with seqlab.no_grad():
        a = ours(seqlab.tensor(X), src_key_padding_mask=RIGHT).numpy()
        b = full(seqlab.tensor(X), src_key_padding_mask=RIGHT).numpy()
        c = ours(seqlab.tensor(X), src_key_padding_mask=np.where(RIGHT, -np.inf, 0.0)).numpy()
    np.testing.assert_allclose(a[~RIGHT], b[~RIGHT], rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(a, c)
    assert ours.use_nested_tensor and not full.use_nested_tensor


def test_the_fast_path_on_the_device(cuda):
    """On device "cuda" (the CuPy stand-in here, CuPy on a GPU): the same values as on the host."""
    ours, _ = _pair()
    ours.eval()
    with seqlab.no_grad():
        want = ours(seqlab.tensor(X), src_key_padding_mask=RIGHT).numpy()
        ours.to("cuda")
        got = ours(seqlab.tensor(X).to("cuda"), src_key_padding_mask=RIGHT)
    assert got.device.type == "cuda"
    np.testing.assert_allclose(got.cpu().numpy(), want, rtol=1e-5, atol=1e-6)
    assert np.abs(got.cpu().numpy()[RIGHT]).sum() == 0


def test_a_graph_is_kept_when_any_layer_trains_even_with_the_first_frozen():
    """Grad mode with the input and layer 0 frozen but layer 1 trainable: the full path, with its graph."""
    ours, _ = _pair()
    ours.eval()
    for p in ours.layers[0].parameters():
        p.requires_grad_(False)
    y = ours(seqlab.tensor(X), src_key_padding_mask=RIGHT)
    assert y.requires_grad
    (y ** 2).sum().backward()
    assert ours.layers[1].linear1.weight.grad is not None and ours.layers[0].linear1.weight.grad is None


def test_hooks_and_layers_changed_after_construction_take_the_full_path():
    ours, _ = _pair()
    ours.eval()
    calls = []
    handle = ours.layers[1].self_attn.register_forward_hook(lambda m, i, out: calls.append(1))
    with seqlab.no_grad():
        y = ours(seqlab.tensor(X), src_key_padding_mask=RIGHT).numpy()
    assert calls == [1] and np.abs(y[RIGHT]).sum() > 0  # the hook ran: the modules were called
    handle.remove()
    for change in ("norm_first", "replaced", "training"):
        ours, _ = _pair()
        ours.eval()
        if change == "norm_first":
            ours.layers[1].norm_first = True
        elif change == "replaced":
            ours.layers[1] = nn.TransformerEncoderLayer(16, 2, 32, norm_first=True).eval()
        else:
            ours.layers[1].train()
            ours.layers[1].dropout.p = ours.layers[1].dropout1.p = ours.layers[1].dropout2.p = 0.0
            ours.layers[1].self_attn.dropout = 0.0
        full = nn.TransformerEncoder(nn.TransformerEncoderLayer(16, 2, 32), 2, enable_nested_tensor=False).eval()
        full.layers = ours.layers
        with seqlab.no_grad():
            got = ours(seqlab.tensor(X), src_key_padding_mask=RIGHT).numpy()
            want = full(seqlab.tensor(X), src_key_padding_mask=RIGHT).numpy()
        np.testing.assert_array_equal(got, want, err_msg=change)
