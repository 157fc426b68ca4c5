"""Activation checkpointing (seqlab.utils.checkpoint) against torch.utils.checkpoint and against the same
computation without checkpoints, and transformers' gradient_checkpointing_enable() on GPT, BERT and T5."""
import tracemalloc

import numpy as np
import pytest
import torch
import torch.utils.checkpoint as tcp

import seqlab as sl
import seqlab.nn as nn
from seqlab import backend
from seqlab.models.bert import BertConfig, BertForMaskedLM
from seqlab.models.gpt import GPT, GPTConfig
from seqlab.models.t5 import T5Config, T5ForConditionalGeneration
from seqlab.utils.checkpoint import checkpoint, checkpoint_sequential


def _mlp_pair(dropout: float = 0.0):
    sl.manual_seed(0)
    ours = nn.Sequential(nn.Linear(6, 12), nn.Tanh(), nn.Dropout(dropout), nn.Linear(12, 12), nn.GELU(),
                         nn.Linear(12, 5))
    theirs = torch.nn.Sequential(torch.nn.Linear(6, 12), torch.nn.Tanh(), torch.nn.Dropout(dropout),
                                 torch.nn.Linear(12, 12), torch.nn.GELU(), torch.nn.Linear(12, 5))
    theirs.load_state_dict({k: torch.tensor(v) for k, v in ours.state_dict().items()})
    return ours, theirs


def _grads(model) -> dict:
    return {n: (p.grad.detach().numpy() if hasattr(p.grad, "detach") else backend.to_numpy(p.grad)).copy()
            for n, p in model.named_parameters()}


@pytest.mark.parametrize("segments", [1, 2, 3])
def test_checkpoint_sequential_matches_torch(segments):
    ours, theirs = _mlp_pair()
    x = np.random.default_rng(1).standard_normal((4, 6)).astype(np.float32)
    xs, xt = sl.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    ys = checkpoint_sequential(ours, segments, xs)
    yt = tcp.checkpoint_sequential(theirs, segments, xt, use_reentrant=False)
    (ys ** 2).sum().backward()
    (yt ** 2).sum().backward()
    np.testing.assert_allclose(ys.data, yt.detach().numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(xs.grad, xt.grad.numpy(), rtol=1e-4, atol=1e-6)
    for name, g in _grads(ours).items():
        np.testing.assert_allclose(g, _grads(theirs)[name], rtol=1e-4, atol=1e-6, err_msg=name)


def test_checkpoint_sequential_runs_what_torch_runs_twice():
    """torch's segmenting: len // segments per run, the last run (with the remainder) not checkpointed, so
    its functions run once and the others twice (forward, then the recomputation)."""
    def counting(counts, i, lib):
        def f(x):
            counts[i] += 1
            return lib.tanh(x)
        return f

    x = np.linspace(-1, 1, 8, dtype=np.float32)
    for n, segments in [(7, 3), (5, 2), (4, 4)]:
        ours, theirs = [0] * n, [0] * n
        ys = checkpoint_sequential([counting(ours, i, sl) for i in range(n)], segments,
                                   sl.tensor(x, requires_grad=True))
        yt = tcp.checkpoint_sequential([counting(theirs, i, torch) for i in range(n)], segments,
                                       torch.tensor(x, requires_grad=True), use_reentrant=True)
        ys.sum().backward()
        yt.sum().backward()
        assert ours == theirs, (n, segments)
        assert 2 in ours


def test_dropout_masks_are_the_same_in_the_recomputation():
    ours, _ = _mlp_pair(dropout=0.5)
    x = sl.tensor(np.random.default_rng(2).standard_normal((16, 6)).astype(np.float32), requires_grad=True)
    sl.manual_seed(5)
    plain = ours(x)
    (plain ** 2).sum().backward()
    after_plain = sl.rand(3).data
    want, want_x = _grads(ours), x.grad.copy()
    ours.zero_grad()
    x.grad = None
    sl.manual_seed(5)
    ck = checkpoint(ours, x)
    (ck ** 2).sum().backward()
    np.testing.assert_array_equal(ck.data, plain.data)
    np.testing.assert_array_equal(x.grad, want_x)
    for name, g in _grads(ours).items():
        np.testing.assert_array_equal(g, want[name], err_msg=name)
    # the recomputation put the stream back: the next draw is the one the plain step was followed by
    np.testing.assert_array_equal(sl.rand(3).data, after_plain)


def test_without_preserving_the_stream_the_masks_differ():
    ours, _ = _mlp_pair(dropout=0.5)
    x = sl.tensor(np.random.default_rng(2).standard_normal((16, 6)).astype(np.float32), requires_grad=True)
    sl.manual_seed(5)
    (ours(x) ** 2).sum().backward()
    want = x.grad.copy()
    x.grad = None
    sl.manual_seed(5)
    (checkpoint(ours, x, preserve_rng_state=False) ** 2).sum().backward()
    assert not np.allclose(x.grad, want)


def test_parameters_get_gradients_when_no_input_requires_grad():
    """torch's reentrant checkpoint leaves them None here (with a warning); seqlab's gives them."""
    ours, theirs = _mlp_pair()
    x = np.random.default_rng(3).standard_normal((4, 6)).astype(np.float32)
    y = checkpoint(ours, sl.tensor(x))
    assert y.requires_grad
    y.sum().backward()
    theirs(torch.tensor(x)).sum().backward()
    for name, g in _grads(ours).items():
        np.testing.assert_allclose(g, _grads(theirs)[name], rtol=1e-4, atol=1e-6, err_msg=name)


def test_several_outputs_keyword_tensors_and_other_arguments():
    rng = np.random.default_rng(4)
    a, b = rng.standard_normal((3, 4)).astype(np.float32), rng.standard_normal((3, 4)).astype(np.float32)

    def f(lib, x, scale, *, other):
        return (x * other).tanh() * scale, None, (x - other).exp().sum(dim=1) if lib is torch else \
            (x - other).exp().sum(axis=1)

    xs, os_ = sl.tensor(a, requires_grad=True), sl.tensor(b, requires_grad=True)
    xt, ot = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
    p, none, q = checkpoint(lambda x, s, other: f(sl, x, s, other=other), xs, 2.0, other=os_)
    pt, _, qt = tcp.checkpoint(lambda x, s, other: f(torch, x, s, other=other), xt, 2.0, other=ot,
                               use_reentrant=False)
    assert none is None and p.shape == (3, 4) and q.shape == (3,)
    ((p ** 2).sum() + q.sum()).backward()
    ((pt ** 2).sum() + qt.sum()).backward()
    np.testing.assert_allclose(xs.grad, xt.grad.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(os_.grad, ot.grad.numpy(), rtol=1e-5, atol=1e-6)


def test_under_no_grad_it_is_a_plain_call_and_bad_outputs_are_named():
    calls = []
    with sl.no_grad():
        y = checkpoint(lambda x: calls.append(1) or x * 2, sl.ones(2, requires_grad=True))
    assert calls == [1] and not y.requires_grad
    with pytest.raises(TypeError, match="must return a Tensor or a tuple of Tensors"):
        checkpoint(lambda x: x.data, sl.ones(2, requires_grad=True))
    with pytest.raises(ValueError, match="segments"):
        checkpoint_sequential([lambda x: x], 0, sl.ones(2))


def _gpt():
    return GPT(GPTConfig(vocab_size=50, n_layer=3, n_head=2, n_embd=16, n_positions=16))


def _bert():
    return BertForMaskedLM(BertConfig(vocab_size=50, num_hidden_layers=3, num_attention_heads=2, hidden_size=16,
                                      intermediate_size=32))


def _t5():
    return T5ForConditionalGeneration(T5Config(vocab_size=50, num_layers=2, num_heads=2, d_model=16, d_kv=8,
                                               d_ff=32))


def _step(model, ids, checkpointing: bool):
    sl.manual_seed(3)  # dropout on: the same masks both times only if the checkpoints put the stream back
    model.train()
    model.zero_grad()
    if checkpointing:
        model.gradient_checkpointing_enable()
    else:
        model.gradient_checkpointing_disable()
    out = model(input_ids=ids, labels=ids)
    out.loss.backward()
    return out.loss.item(), _grads(model)


@pytest.mark.parametrize("make", [_gpt, _bert, _t5], ids=["gpt", "bert", "t5"])
def test_models_gradient_checkpointing_gives_the_same_step(make):
    sl.manual_seed(0)
    model = make()
    ids = np.random.default_rng(0).integers(0, 50, (2, 7))
    assert model.supports_gradient_checkpointing and not model.is_gradient_checkpointing
    loss, want = _step(model, ids, False)
    loss_ck, got = _step(model, ids, True)
    assert model.is_gradient_checkpointing
    assert loss_ck == pytest.approx(loss, abs=1e-6)
    assert set(got) == set(want)
    for name in want:
        np.testing.assert_allclose(got[name], want[name], rtol=1e-5, atol=1e-6, err_msg=name)
    model.gradient_checkpointing_disable()
    assert not model.is_gradient_checkpointing


def test_a_checkpointed_model_holds_less_during_its_step():
    """The point of it: the step's peak memory (tracemalloc sees NumPy's buffers) drops when the layers'
    activations are recomputed in backward instead of kept."""
    sl.manual_seed(0)
    model = GPT(GPTConfig(vocab_size=64, n_layer=6, n_head=4, n_embd=64, n_positions=128))
    ids = np.random.default_rng(0).integers(0, 64, (8, 128))

    def peak(on: bool) -> int:
        (model.gradient_checkpointing_enable if on else model.gradient_checkpointing_disable)()
        model.zero_grad()
        tracemalloc.start()
        model(input_ids=ids, labels=ids).loss.backward()
        top = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        return top

    model.train()
    model(input_ids=ids, labels=ids).loss.backward()  # the first step's one-time allocations, outside both
    plain, ck = peak(False), peak(True)
    assert ck < 0.6 * plain, (ck, plain)


def test_gradient_checkpointing_options_and_where_it_does_not_apply():
    sl.manual_seed(0)
    model = _gpt()
    with pytest.raises(TypeError, match="unknown option"):
        model.gradient_checkpointing_enable({"use_cache": True})
    model.gradient_checkpointing_enable({"use_reentrant": False})
    ids = np.random.default_rng(0).integers(0, 50, (1, 5))
    model.eval()
    with sl.no_grad():
        want = model.generate(ids, max_new_tokens=4, do_sample=False)
    model.gradient_checkpointing_disable()
    with sl.no_grad():
        np.testing.assert_array_equal(model.generate(ids, max_new_tokens=4, do_sample=False), want)
    model.gradient_checkpointing_enable()
    model.train()
    out = model(input_ids=ids, output_attentions=True)  # the weights still come back under checkpoints
    assert len(out.attentions) == 3 and all(w is not None for w in out.attentions)


def test_checkpointed_step_on_the_device_with_dropout(cuda):
    """On device "cuda" (the CuPy stand-in here, CuPy on a GPU) dropout draws from the GPU's stream: the
    checkpoint puts that stream back too, so the gradients equal the plain step's."""
    sl.manual_seed(0)
    model = _gpt().to("cuda")
    ids = np.random.default_rng(0).integers(0, 50, (2, 7))
    _, want = _step(model, ids, False)
    _, got = _step(model, ids, True)
    for name in want:
        np.testing.assert_allclose(got[name], want[name], rtol=1e-5, atol=1e-6, err_msg=name)
