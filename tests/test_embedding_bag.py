"""F.embedding_bag and nn.EmbeddingBag against torch's: sum, mean and max bags, 2-D input or 1-D with offsets
(include_last_offset too), padding_idx, empty bags, per_sample_weights, max_norm; values, the gradients of the
weight and of per_sample_weights; the module's state_dict and from_pretrained; errors; the CuPy stand-in."""
import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import cupy_stand_in
import seqlab
import seqlab.nn.functional as SF
from seqlab import backend

RNG = np.random.default_rng(11)
W = RNG.standard_normal((10, 3)).astype(np.float32)
FLAT = np.array([1, 2, 4, 5, 4, 3, 2, 9])
INPUTS = {  # id: (input, offsets, include_last_offset)
    "2-D": (RNG.integers(0, 10, (4, 5)), None, False),
    "offsets, an empty bag": (FLAT, np.array([0, 2, 2, 5]), False),
    "include_last_offset": (FLAT, np.array([0, 2, 2, 5, 8]), True),
    "one bag": (FLAT, np.array([0]), False),
}


def _run(lib, F, ids, offsets, last, mode, pad, weights=None, max_norm=None):
    w = lib.tensor(W.copy(), requires_grad=True)
    psw = None if weights is None else lib.tensor(weights.copy(), requires_grad=True)
    y = F.embedding_bag(lib.tensor(ids), w, None if offsets is None else lib.tensor(offsets), mode=mode,
                        padding_idx=pad, include_last_offset=last, per_sample_weights=psw, max_norm=max_norm)
    scale = lib.tensor(np.arange(1, 1 + int(np.prod(tuple(y.shape))), dtype=np.float32).reshape(tuple(y.shape)))
    (y * scale).sum().backward()

    def arr(t):
        return t.detach().numpy() if lib is torch else np.asarray(t.numpy() if hasattr(t, "numpy") else t)
    return arr(y), arr(w.grad), None if psw is None else arr(psw.grad), arr(w)


@pytest.mark.parametrize("name", list(INPUTS))
@pytest.mark.parametrize("pad", [None, 4, -1])
@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_bags_match_torch(mode, pad, name):
    ids, offsets, last = INPUTS[name]
    ours = _run(seqlab, SF, ids, offsets, last, mode, pad)
    theirs = _run(torch, TF, ids, offsets, last, mode, pad)
    for a, b in zip(ours[:2], theirs[:2]):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("name", list(INPUTS))
def test_per_sample_weights_and_their_gradient(name):
    ids, offsets, last = INPUTS[name]
    weights = RNG.standard_normal(ids.shape).astype(np.float32)
    ours = _run(seqlab, SF, ids, offsets, last, "sum", 2, weights)
    theirs = _run(torch, TF, ids, offsets, last, "sum", 2, weights)
    for a, b in zip(ours[:3], theirs[:3]):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)


def test_max_norm_renormalizes_the_rows_of_the_input_only():
    ids, offsets, last = INPUTS["offsets, an empty bag"]
    ours = _run(seqlab, SF, ids, offsets, last, "mean", None, max_norm=0.5)
    theirs = _run(torch, TF, ids, offsets, last, "mean", None, max_norm=0.5)
    for a, b in zip((ours[0], ours[1], ours[3]), (theirs[0], theirs[1], theirs[3])):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)
    untouched = [i for i in range(10) if i not in set(ids.tolist())]
    np.testing.assert_array_equal(ours[3][untouched], W[untouched])


def test_the_module_as_torchs():
    theirs = torch.nn.EmbeddingBag(10, 3, mode="sum", padding_idx=0)
    ours = seqlab.nn.EmbeddingBag(10, 3, mode="sum", padding_idx=0)
    assert np.all(ours.weight.numpy()[0] == 0) and repr(ours) == repr(theirs)
    ours.load_state_dict({k: v.detach().numpy() for k, v in theirs.state_dict().items()})
    ids, offsets = np.array([0, 3, 3, 7, 0]), np.array([0, 1, 3])
    want = theirs(torch.tensor(ids), torch.tensor(offsets), torch.ones(5)).detach().numpy()
    np.testing.assert_allclose(ours(seqlab.tensor(ids), seqlab.tensor(offsets), seqlab.ones(5)).numpy(), want,
                               rtol=1e-6)
    frozen = seqlab.nn.EmbeddingBag.from_pretrained(W, mode="max")
    twin = torch.nn.EmbeddingBag.from_pretrained(torch.tensor(W), mode="max")
    assert frozen.weight.requires_grad is twin.weight.requires_grad is False
    np.testing.assert_allclose(frozen(np.array([[1, 2], [3, 3]])).numpy(),
                               twin(torch.tensor([[1, 2], [3, 3]])).numpy(), rtol=1e-6)


@pytest.mark.parametrize("call,match", [
    (lambda F, L: F.embedding_bag(L.tensor([1, 2, 3]), L.tensor(W), L.tensor([1])), "offsets\\[0\\] has to be 0"),
    (lambda F, L: F.embedding_bag(L.tensor([[1, 2]]), L.tensor(W), L.tensor([0])), "if input is 2D, then offsets"),
    (lambda F, L: F.embedding_bag(L.tensor([1, 2]), L.tensor(W)), "offsets has to be a 1D Tensor"),
    (lambda F, L: F.embedding_bag(L.tensor([1, 2]), L.tensor(W), L.tensor([0]), mode="mean",
                                  per_sample_weights=L.ones(2)), "only supported for mode='sum'"),
    (lambda F, L: F.embedding_bag(L.tensor([1, 2]), L.tensor(W), L.tensor([0]), mode="foo"), "mode has to be one"),
])
def test_errors_as_torchs(call, match):
    with pytest.raises((ValueError, RuntimeError, NotImplementedError), match=match):
        call(TF, torch)
    with pytest.raises((ValueError, NotImplementedError), match=match):
        call(SF, seqlab)


def test_refusals_and_bad_ids():
    with pytest.raises(NotImplementedError, match="sparse=True"):
        seqlab.nn.EmbeddingBag(5, 2, sparse=True)
    with pytest.raises(NotImplementedError, match="scale_grad_by_freq"):
        seqlab.nn.EmbeddingBag(5, 2, scale_grad_by_freq=True)
    with pytest.raises(TypeError, match="integers"):
        SF.embedding_bag(seqlab.tensor([1.0, 2.0]), seqlab.tensor(W), seqlab.tensor([0]))
    with pytest.raises(IndexError, match="out of range"):
        SF.embedding_bag(seqlab.tensor([[1, 12]]), seqlab.tensor(W))


def test_on_the_cupy_stand_in(monkeypatch):
    """The weight on the device, ids and offsets from the host, as users give them: the CPU's values and gradient."""
    cupy_stand_in.install(monkeypatch)
    ids, offsets = seqlab.tensor(FLAT), seqlab.tensor([0, 2, 2, 5])
    for mode in ("sum", "mean", "max"):
        cpu = seqlab.tensor(W.copy(), requires_grad=True)
        dev = seqlab.Tensor(seqlab.tensor(W.copy()).to("cuda").data, requires_grad=True)
        outs = [SF.embedding_bag(ids, w, offsets, mode=mode, padding_idx=4) for w in (cpu, dev)]
        for o in outs:
            o.sum().backward()
        assert backend.device_of(outs[1].data) == "cuda"
        np.testing.assert_allclose(backend.to_numpy(outs[1].data), outs[0].numpy(), rtol=1e-6)
        np.testing.assert_allclose(backend.to_numpy(dev.grad), cpu.grad, rtol=1e-6)
