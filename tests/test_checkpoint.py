"""Activation checkpointing (seqlab.utils.checkpoint) against torch.utils.checkpoint and against the same
computation without checkpoints, and transformers' gradient_checkpointing_enable() on GPT, BERT and T5."""
import tracemalloc

import numpy as np
import pytest
import torch
import torch.utils.checkpoint as tcp

import seqlab as sl
from seqlab import backend, nn
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


def _step(model, ids, checkpointing: bool, options: dict | None = None):
    sl.manual_seed(3)  # dropout on: the same masks both times only if the checkpoints put the stream back
    model.train()
    model.zero_grad()
    if checkpointing:
        model.gradient_checkpointing_enable(options)
    else:
        model.gradient_checkpointing_disable()
    out = model(input_ids=ids, labels=ids)
    out.loss.backward()
    return out.loss.item(), _grads(model)


@pytest.mark.parametrize("reentrant", [True, False], ids=["reentrant", "non-reentrant"])
@pytest.mark.parametrize("make", [_gpt, _bert, _t5], ids=["gpt", "bert", "t5"])
def test_models_gradient_checkpointing_gives_the_same_step(make, reentrant):
    sl.manual_seed(0)
    model = make()
    ids = np.random.default_rng(0).integers(0, 50, (2, 7))
    assert model.supports_gradient_checkpointing and not model.is_gradient_checkpointing
    loss, want = _step(model, ids, False)
    loss_ck, got = _step(model, ids, True, {"use_reentrant": reentrant})
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

    def peak(on: bool, options=None) -> int:
        model.gradient_checkpointing_enable(options) if on else model.gradient_checkpointing_disable()
        model.zero_grad()
        tracemalloc.start()
        model(input_ids=ids, labels=ids).loss.backward()
        top = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        return top

    model.train()
    model(input_ids=ids, labels=ids).loss.backward()  # the first step's one-time allocations, outside both
    plain, ck, ck_nr = peak(False), peak(True), peak(True, {"use_reentrant": False})
    assert ck < 0.6 * plain, (ck, plain)
    assert ck_nr < 0.6 * plain, (ck_nr, plain)  # the non-reentrant forward's graph is dropped at once


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


# ---- adversarial cases, each against torch's reentrant checkpoint (float64) or the same step without one ----

def _xw(lib, seed: int = 7):
    rng = np.random.default_rng(seed)
    x, w = rng.standard_normal((3, 4)), rng.standard_normal((4, 4))
    return lib.tensor(x, requires_grad=True), lib.tensor(w, requires_grad=True)


def _tcp(fn, *args):
    return tcp.checkpoint(fn, *args, use_reentrant=True)


def _np(t):
    return t.detach().numpy() if isinstance(t, torch.Tensor) else backend.to_numpy(t)


def test_a_second_backward_with_retain_graph_adds_the_gradients_again_as_torch():
    (xs, ws), (xt, wt) = _xw(sl), _xw(torch)
    ls = (checkpoint(lambda x: (x @ ws).tanh(), xs) ** 2).sum()
    lt = (_tcp(lambda x: (x @ wt).tanh(), xt) ** 2).sum()
    for _ in range(2):
        ls.backward(retain_graph=True)
        lt.backward(retain_graph=True)
    np.testing.assert_allclose(xs.grad, _np(xt.grad), rtol=1e-12)
    np.testing.assert_allclose(ws.grad, _np(wt.grad), rtol=1e-12)


@pytest.mark.filterwarnings("ignore:None of the inputs have requires_grad:UserWarning")  # torch's, inner call
def test_a_checkpoint_inside_a_checkpointed_function_matches_torch():
    (xs, ws), (xt, wt) = _xw(sl), _xw(torch)

    def outer(ck, w):
        return lambda x: ck(lambda h: (h @ w).sin(), (x @ w).tanh()) * 2

    ys = checkpoint(outer(checkpoint, ws), xs)
    yt = _tcp(outer(_tcp, wt), xt)
    (ys ** 2).sum().backward()
    (yt ** 2).sum().backward()
    np.testing.assert_allclose(ys.data, _np(yt), rtol=1e-12)
    np.testing.assert_allclose(xs.grad, _np(xt.grad), rtol=1e-12)
    np.testing.assert_allclose(ws.grad, _np(wt.grad), rtol=1e-12)


@pytest.mark.parametrize("fn", [lambda x: x, lambda x: x.reshape(12), lambda x: x[1:], lambda x: x.T],
                         ids=["itself", "reshape", "slice", "transpose"])
def test_a_function_returning_its_input_or_a_view_of_it_matches_torch(fn):
    (xs, _), (xt, _) = _xw(sl), _xw(torch)
    ys, yt = checkpoint(fn, xs), _tcp(fn, xt)
    assert ys.shape == tuple(yt.shape) and ys.requires_grad
    ((ys ** 2).sum() + (xs * 3).sum()).backward()
    ((yt ** 2).sum() + (xt * 3).sum()).backward()
    np.testing.assert_allclose(xs.grad, _np(xt.grad), rtol=1e-12)


def test_integer_outputs_other_float_dtypes_and_non_tensors_come_back_as_torch():
    """torch's Function outputs: an integer tensor without a graph, a float32 one computed from float64
    inputs with its gradient (in its own dtype), a Python number as it is."""
    (xs, ws), (xt, wt) = _xw(sl), _xw(torch)

    def f(w):
        return lambda x: ((x @ w).tanh(), x.argmax(-1), (x * w[0]).float(), 3, None)

    a, i, b, n, none = checkpoint(f(ws), xs)
    at, it, bt, nt, _ = _tcp(f(wt), xt)
    assert (n, none) == (nt, None) == (3, None)
    assert i.dtype == np.int64 and not i.requires_grad and not it.requires_grad
    np.testing.assert_array_equal(i.data, _np(it))
    assert a.dtype == np.float64 and b.dtype == np.float32 and a.requires_grad and b.requires_grad
    ((a ** 2).sum() + (b ** 3).sum()).backward()
    ((at ** 2).sum() + (bt ** 3).sum()).backward()
    np.testing.assert_allclose(xs.grad, _np(xt.grad), rtol=1e-6)
    np.testing.assert_allclose(ws.grad, _np(wt.grad), rtol=1e-6)
    only_int = checkpoint(lambda x: x.argmax(-1), xs)  # nothing to differentiate: a plain tensor
    assert not only_int.requires_grad and only_int.dtype == np.int64
    with pytest.raises(TypeError, match="must return a Tensor or a tuple"):
        checkpoint(lambda x: {"out": x * 2}, xs)  # torch's reentrant returns it cut off the graph


def test_no_tensor_arguments_and_keyword_tensors():
    (xs, ws), (xt, wt) = _xw(sl), _xw(torch)
    checkpoint(lambda: (xs.detach() @ ws).tanh()).sum().backward()
    (xt.detach() @ wt).tanh().sum().backward()
    np.testing.assert_allclose(ws.grad, _np(wt.grad), rtol=1e-12)
    ws.grad = None
    checkpoint(lambda x, *, w: (x @ w).tanh(), xs, w=ws).sum().backward()  # torch's reentrant refuses kwargs
    np.testing.assert_allclose(ws.grad, _np(wt.grad), rtol=1e-12)


def test_an_input_changed_in_place_before_backward_is_refused():
    _, ws = _xw(sl)
    h = sl.tensor(np.ones((3, 4)))
    y = checkpoint(lambda x: (x @ ws).tanh(), h)
    h.mul_(2)
    with pytest.raises(RuntimeError, match="changed in place"):
        y.sum().backward()


def test_a_parameter_changed_in_place_before_backward_is_refused_as_without_checkpoint():
    """The recomputation would read the new weights: a gradient of a forward that never ran (torch computes
    it). The step without a checkpoint is refused by the engine's version check; so is this one."""
    xs, ws = _xw(sl)
    for ck in (False, True):
        y = checkpoint(lambda x: (x @ ws).tanh(), xs) if ck else (xs @ ws).tanh()
        with sl.no_grad():
            ws.mul_(2)
        with pytest.raises(RuntimeError, match="changed in place"):
            y.sum().backward()


def test_a_function_that_changes_a_parameter_itself_each_time_is_not_refused():
    xs, ws = _xw(sl)

    def f(x):
        with sl.no_grad():
            ws.clamp_(-1.0, 1.0)  # the same change each time it runs: the recomputation reads what the forward read
        return (x @ ws).tanh()

    y = checkpoint(f, xs)
    y.sum().backward()
    want_x, want_w = xs.grad.copy(), ws.grad.copy()
    xs.grad = ws.grad = None
    f(xs).sum().backward()
    np.testing.assert_allclose(xs.grad, want_x, rtol=1e-12)
    np.testing.assert_allclose(ws.grad, want_w, rtol=1e-12)


def test_autograd_grad_and_backward_inputs_through_a_checkpoint_are_refused_as_torch():
    """torch's reentrant checkpoint raises there; before, seqlab's returned the input's gradient and
    changed the .grad of the parameters inside behind autograd.grad's back."""
    xt, wt = _xw(torch)
    with pytest.raises(RuntimeError, match="incompatible with .grad()"):
        torch.autograd.grad(_tcp(lambda x: (x @ wt).tanh(), xt).sum(), xt)
    xs, ws = _xw(sl)
    with pytest.raises(RuntimeError, match=r"not compatible with autograd.grad\(\) or backward\(inputs"):
        sl.autograd.grad(checkpoint(lambda x: (x @ ws).tanh(), xs).sum(), xs)
    with pytest.raises(RuntimeError, match="not compatible with autograd.grad"):
        sl.autograd.grad(checkpoint(lambda x: (x @ ws).tanh(), xs).sum(), [xs, ws], allow_unused=True)
    with pytest.raises(RuntimeError, match="not compatible with autograd.grad"):
        checkpoint(lambda x: (x @ ws).tanh(), xs).sum().backward(inputs=[xs])
    assert ws.grad is None and xs.grad is None


def test_a_checkpoint_off_the_targeted_path_still_works_and_a_plain_backward_inside_anomaly_mode():
    xs, ws = _xw(sl)
    a = sl.tensor(np.arange(4.0), requires_grad=True)
    y = checkpoint(lambda x: (x @ ws).tanh(), xs).sum() + (a ** 2).sum()
    (ga,) = sl.autograd.grad(y, a)  # only the plain branch runs
    np.testing.assert_allclose(ga.data, 2 * np.arange(4.0))
    assert ws.grad is None
    xt, wt = _xw(torch)
    with pytest.warns(UserWarning, match="Anomaly Detection"), sl.autograd.detect_anomaly():
        checkpoint(lambda x: (x @ ws).tanh(), xs).sum().backward()
    _tcp(lambda x: (x @ wt).tanh(), xt).sum().backward()
    np.testing.assert_allclose(xs.grad, _np(xt.grad), rtol=1e-12)
    np.testing.assert_allclose(ws.grad, _np(wt.grad), rtol=1e-12)
    with pytest.warns(UserWarning, match="Anomaly Detection"), sl.autograd.detect_anomaly(), \
            np.errstate(invalid="ignore"), pytest.raises(RuntimeError, match="returned nan"):
        checkpoint(lambda x: (x @ ws).sqrt(), xs).sum().backward()


def test_a_hook_inside_the_function_runs_in_the_recomputation_as_torch():
    (xs, ws), (xt, wt) = _xw(sl), _xw(torch)

    def f(w):
        def run(x):
            h = x @ w
            if h.requires_grad:  # in the first forward nothing inside requires grad, as in torch
                h.register_hook(lambda g: g * 2)
            return h.tanh()
        return run

    checkpoint(f(ws), xs).sum().backward()
    _tcp(f(wt), xt).sum().backward()
    np.testing.assert_allclose(xs.grad, _np(xt.grad), rtol=1e-12)
    np.testing.assert_allclose(ws.grad, _np(wt.grad), rtol=1e-12)


def test_a_recomputation_that_differs_from_the_forward_is_refused():
    xs, _ = _xw(sl)
    calls = []

    def f(x):
        calls.append(1)
        return x[: 4 - len(calls)] * 2

    y = checkpoint(f, xs)
    with pytest.raises(RuntimeError, match="the recomputation in backward returned"):
        y.sum().backward()


def _count_checkpoints(monkeypatch) -> list:
    from seqlab.utils import checkpoint as module

    calls, original = [], module._Checkpoint.apply_with_fn.__func__
    monkeypatch.setattr(module._Checkpoint, "apply_with_fn",
                        classmethod(lambda cls, *a, **k: calls.append(1) or original(cls, *a, **k)))
    return calls


def _masked_inputs():
    rng = np.random.default_rng(0)
    ids = rng.integers(1, 50, (3, 7))
    pad, left = np.ones((3, 7), dtype=np.int64), np.ones((3, 7), dtype=np.int64)
    pad[0, 5:], pad[1, 3:] = 0, 0
    left[0, :2], left[2, :4] = 0, 0
    dec, dec_mask = rng.integers(1, 50, (3, 5)), np.ones((3, 5), dtype=np.int64)
    dec_mask[2, 3:] = 0
    return ids, pad, left, dec, dec_mask


def _cases():
    from seqlab.models.bert import BertForSequenceClassification
    from seqlab.models.gpt import GPTForSequenceClassification

    ids, pad, left, dec, dec_mask = _masked_inputs()
    gpt = GPTConfig(vocab_size=50, n_layer=3, n_head=2, n_embd=16, n_positions=16, pad_token_id=0, num_labels=3)
    bert = BertConfig(vocab_size=50, num_hidden_layers=3, num_attention_heads=2, hidden_size=16,
                      intermediate_size=32, num_labels=3)
    labels = np.array([0, 2, 1])
    return {
        "gpt-left-padding": (lambda: GPT(gpt), {"input_ids": ids, "attention_mask": left, "labels": ids}, 3),
        "gpt-classifier": (lambda: GPTForSequenceClassification(gpt),
                           {"input_ids": ids, "attention_mask": pad, "labels": labels}, 3),
        "bert-padding": (_bert, {"input_ids": ids, "attention_mask": pad, "labels": ids}, 3),
        "bert-classifier": (lambda: BertForSequenceClassification(bert),
                            {"input_ids": ids, "attention_mask": pad, "labels": labels}, 3),
        "t5-masks": (_t5, {"input_ids": ids, "attention_mask": pad, "labels": dec,
                           "decoder_attention_mask": dec_mask}, 4),
    }


@pytest.mark.parametrize("case", ["gpt-left-padding", "gpt-classifier", "bert-padding", "bert-classifier",
                                  "t5-masks"])
def test_models_with_masks_and_heads_give_the_same_gradients_in_float64(case, monkeypatch):
    """Every layer under a checkpoint (counted), with padding masks and the classification heads; for T5
    the encoder's blocks get their gradients through the decoder's cross-attention."""
    make, inputs, n_layers = _cases()[case]
    sl.manual_seed(0)
    model = make().double()
    calls = _count_checkpoints(monkeypatch)

    def step(on: bool) -> dict:
        sl.manual_seed(3)
        model.train()
        model.zero_grad()
        (model.gradient_checkpointing_enable if on else model.gradient_checkpointing_disable)()
        model(**inputs).loss.backward()
        return _grads(model)

    want = step(False)
    assert calls == []
    got = step(True)
    assert len(calls) == n_layers
    assert set(got) == set(want)
    for name in want:
        np.testing.assert_allclose(got[name], want[name], rtol=1e-10, atol=1e-13, err_msg=name)
    if case == "t5-masks":
        encoder = [n for n in want if n.startswith("encoder.block")]
        assert encoder and all(np.abs(want[n]).max() > 0 for n in encoder)
    model.eval()  # in eval mode, and under no_grad in training, the layers are plain calls
    model(**inputs).loss.backward()
    model.train()
    with sl.no_grad():
        model(**inputs)
    assert len(calls) == n_layers


def test_mixed_outputs_on_the_device(cuda):
    """The joined output and its cast pieces on device "cuda" (the stand-in here, CuPy on a GPU)."""
    xs, ws = (t.to("cuda") for t in _xw(sl))
    xs, ws = xs.detach().requires_grad_(), ws.detach().requires_grad_()
    a, i, b = checkpoint(lambda x: ((x @ ws).tanh(), x.argmax(-1), (x * ws[0]).float()), xs)
    assert a.device == b.device == i.device == "cuda" and b.dtype == np.float32
    ((a ** 2).sum() + (b ** 3).sum()).backward()
    xt, wt = _xw(torch)
    at, bt = (xt @ wt).tanh(), (xt * wt[0]).float()
    ((at ** 2).sum() + (bt ** 3).sum()).backward()
    np.testing.assert_allclose(backend.to_numpy(xs.grad), _np(xt.grad), rtol=1e-6)
    np.testing.assert_allclose(backend.to_numpy(ws.grad), _np(wt.grad), rtol=1e-6)


@pytest.mark.parametrize("make", [_gpt, _t5], ids=["gpt", "t5"])
def test_use_cache_in_training_under_checkpoints_is_turned_off_with_transformers_warning(make):
    """As transformers: a cache would be written again by every recomputation, so it is dropped, with
    its warning, and the layers still run under checkpoints (the same gradients as the plain step)."""
    sl.manual_seed(0)
    model = make()
    ids = np.random.default_rng(0).integers(0, 50, (2, 7))
    _, want = _step(model, ids, False)
    model.gradient_checkpointing_enable()
    sl.manual_seed(3)
    model.zero_grad()
    with pytest.warns(UserWarning, match="incompatible with gradient checkpointing"):
        out = model(input_ids=ids, labels=ids, use_cache=True)
    assert out.past_key_values is None
    out.loss.backward()
    for name, g in _grads(model).items():
        np.testing.assert_allclose(g, want[name], rtol=1e-5, atol=1e-6, err_msg=name)
    model.eval()  # outside training the cache is kept, silently
    with sl.no_grad():
        assert model(input_ids=ids, labels=ids, use_cache=True).past_key_values is not None


# ---- torch's non-reentrant options ------------------------------------------------------------------
def test_torchs_other_options_are_taken_not_passed_to_the_function():
    """determinism_check, debug and early_stop are checkpoint's own (torch's), not the function's keywords."""
    ours, theirs = _mlp_pair()
    x = np.random.default_rng(3).standard_normal((4, 6)).astype(np.float32)
    xs, xt = sl.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    checkpoint(ours, xs, use_reentrant=False, determinism_check="none", debug=True, early_stop=False).sum().backward()
    tcp.checkpoint(theirs, xt, use_reentrant=False, determinism_check="none", debug=True,
                   early_stop=False).sum().backward()
    np.testing.assert_allclose(xs.grad, xt.grad.numpy(), rtol=1e-5, atol=1e-6)
    for name, got in _grads(ours).items():
        np.testing.assert_allclose(got, dict(theirs.named_parameters())[name].grad.numpy(), rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match=r"determinism_check should be one of \['default', 'none'\], but got 'x'"):
        checkpoint(ours, xs, determinism_check="x")
    with pytest.raises(ValueError, match=r"determinism_check should be one of \['default', 'none'\]"):
        tcp.checkpoint(theirs, xt, use_reentrant=False, determinism_check="x")


def _recording_context_fn(events: list):
    class Ctx:
        def __init__(self, name):
            self.name = name

        def __enter__(self):
            events.append(("enter", self.name, torch.is_grad_enabled() if self.name.startswith("t") else
                           sl.is_grad_enabled()))

        def __exit__(self, *exc):
            events.append(("exit", self.name))

    def make(prefix):
        return lambda: (Ctx(prefix + "forward"), Ctx(prefix + "recompute"))
    return make


def test_context_fn_wraps_the_forward_and_the_recomputation_as_torchs():
    """Each context manager of context_fn() is entered once, around the forward and around the recomputation,
    in torch's order and grad mode."""
    ours, theirs = _mlp_pair()
    x = np.ones((2, 6), dtype=np.float32)
    got, want = [], []
    y = checkpoint(ours, sl.tensor(x, requires_grad=True), use_reentrant=False,
                   context_fn=_recording_context_fn(got)("s:"))
    yt = tcp.checkpoint(theirs, torch.tensor(x, requires_grad=True), use_reentrant=False,
                        context_fn=_recording_context_fn(want)("t:"))
    assert [e[:2] for e in got] == [("enter", "s:forward"), ("exit", "s:forward")]
    y.sum().backward()
    yt.sum().backward()
    strip = [(e[0], e[1][2:]) + e[2:] for e in got]
    assert strip == [(e[0], e[1][2:]) + e[2:] for e in want]
    with pytest.raises(TypeError, match="context_fn must return two context managers"):
        checkpoint(ours, sl.tensor(x, requires_grad=True), use_reentrant=False, context_fn=lambda: None)
    for kw in ({"context_fn": _recording_context_fn([])("s:")}, {"debug": True}):  # torch's reentrant refuses both
        for call, lib in ((checkpoint, sl), (tcp.checkpoint, torch)):
            with pytest.raises(ValueError, match="Passing `context_fn` or `debug` is only supported when "
                                                 "use_reentrant=False"):
                call(ours if lib is sl else theirs, lib.tensor(x, requires_grad=True), use_reentrant=True, **kw)


# ---- use_reentrant=False: torch's non-reentrant kind -----------------------------------------------------
def _nr_case(lib, how: str):
    """A checkpointed function that reads its argument, a parameter by closure (w) and a tensor made from it
    outside (a = 2w); w is used outside too. Returns the gradients `how` asks for."""
    rng = np.random.default_rng(11)
    x, w, v = (lib.tensor(rng.standard_normal(s), requires_grad=True) for s in ((3, 4), (4, 4), (4, 2)))
    a = w * 2

    def f(t):
        return ((t @ a).tanh() @ v + (t @ w).sin().sum()).exp()

    y = checkpoint(f, x, use_reentrant=False) if lib is sl else tcp.checkpoint(f, x, use_reentrant=False)
    loss = (y ** 2).sum() + (w ** 2).sum()
    if how == "backward":
        loss.backward()
        return [x.grad, w.grad, v.grad]
    if how == "inputs":
        loss.backward(inputs=[w])
        return [x.grad, w.grad, v.grad]
    return list(lib.autograd.grad(loss, {"grad_x": [x], "grad_w": [w], "grad_all": [x, w, v]}[how]))


@pytest.mark.parametrize("how", ["backward", "inputs", "grad_x", "grad_w", "grad_all"])
def test_non_reentrant_gives_torchs_gradients_to_backward_inputs_and_autograd_grad(how):
    """As torch's non-reentrant checkpoint: autograd.grad and backward(inputs=) work through it, for the
    arguments and for what the function reads by closure (a leaf, and a tensor made outside), and no .grad
    is touched that was not asked for."""
    got, want = _nr_case(sl, how), _nr_case(torch, how)
    assert len(got) == len(want)
    for g, t in zip(got, want):
        assert (g is None) == (t is None)
        if t is not None:
            np.testing.assert_allclose(_np(g), _np(t), rtol=1e-12)


def test_non_reentrant_runs_hooks_and_retain_grad_once_and_restores_dropout_masks():
    events = {sl: [], torch: []}
    results = {}
    for lib in (sl, torch):
        lib.manual_seed(0)
        rng = np.random.default_rng(2)
        x, w = (lib.tensor(rng.standard_normal(s), requires_grad=True) for s in ((6, 5), (5, 5)))
        a = w + 1
        a.retain_grad()
        w.register_hook(lambda g, lib=lib: events[lib].append("w") or None)
        a.register_hook(lambda g, lib=lib: events[lib].append("a") or None)
        drop = (nn if lib is sl else torch.nn).Dropout(0.5)

        def f(t, a=a, drop=drop):
            return drop(t @ a).tanh()

        y = checkpoint(f, x, use_reentrant=False) if lib is sl else tcp.checkpoint(f, x, use_reentrant=False)
        results[lib] = y
        (y.sum() + (w * 3).sum()).backward()
        results[lib] = (y, x.grad, w.grad, a.grad)
    assert sorted(events[sl]) == sorted(events[torch]) == ["a", "w"]
    y, gx, gw, ga = results[sl]
    # seqlab's dropout masks are not torch's: compare with seqlab's own step without the checkpoint
    sl.manual_seed(0)
    rng = np.random.default_rng(2)
    x2, w2 = (sl.tensor(rng.standard_normal(s), requires_grad=True) for s in ((6, 5), (5, 5)))
    a2 = w2 + 1
    a2.retain_grad()
    y2 = nn.Dropout(0.5)(x2 @ a2).tanh()
    (y2.sum() + (w2 * 3).sum()).backward()
    np.testing.assert_array_equal(y.numpy(), y2.numpy())
    for got, want in ((gx, x2.grad), (gw, w2.grad), (ga, a2.grad)):
        np.testing.assert_allclose(_np(got), _np(want), rtol=1e-12)


def test_non_reentrant_nested_and_with_a_module_of_parameters():
    ours, theirs = _mlp_pair()
    ours.double()
    theirs.double()
    x = np.random.default_rng(4).standard_normal((5, 6))
    xs, xt = sl.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)

    def nest(lib, model, t):
        inner = (lambda f, *a: checkpoint(f, *a, use_reentrant=False)) if lib is sl else \
            (lambda f, *a: tcp.checkpoint(f, *a, use_reentrant=False))
        return inner(lambda u: inner(model, u) * 2, t)

    ys, yt = nest(sl, ours, xs), nest(torch, theirs, xt)
    gs = sl.autograd.grad((ys ** 2).sum(), [xs] + list(ours.parameters()))
    gt = torch.autograd.grad((yt ** 2).sum(), [xt] + list(theirs.parameters()))
    for a, b in zip(gs, gt):
        np.testing.assert_allclose(_np(a), _np(b), rtol=1e-12)
    assert all(p.grad is None for p in ours.parameters())


def test_non_reentrant_model_takes_a_gradient_penalty_on_its_inputs_first_order():
    """autograd.grad w.r.t. the embeddings of a checkpointed GPT (first order), as without checkpoints."""
    sl.manual_seed(0)
    model = _gpt().double()
    emb = sl.tensor(np.random.default_rng(5).standard_normal((2, 6, 16)), requires_grad=True)
    model.train()  # dropout on: the same masks both times
    sl.manual_seed(1)
    want, = sl.autograd.grad(model(inputs_embeds=emb).logits.tanh().sum(), emb)
    model.gradient_checkpointing_enable({"use_reentrant": False})
    sl.manual_seed(1)
    got, = sl.autograd.grad(model(inputs_embeds=emb).logits.tanh().sum(), emb)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-10)
    assert all(p.grad is None for p in model.parameters())


def _nr_double(lib):
    """First, second and third derivatives through a non-reentrant checkpoint whose argument is made by an
    op (x2 = 1.5x) and whose function reads a parameter and a tensor made from it by closure."""
    rng = np.random.default_rng(11)
    x, w, v = (lib.tensor(rng.standard_normal(s), requires_grad=True) for s in ((3, 4), (4, 4), (4, 2)))
    a = w * 2

    def f(t):
        return ((t @ a).tanh() @ v + (t @ w).sin().sum()).exp()

    x2 = x * 1.5
    y = checkpoint(f, x2, use_reentrant=False) if lib is sl else tcp.checkpoint(f, x2, use_reentrant=False)
    loss = (y ** 2).sum() + (w ** 2).sum()
    gx, gw = lib.autograd.grad(loss, [x, w], create_graph=True)
    h = lib.autograd.grad((gx ** 2).sum() + (gw * gw).sum(), [x, w, v], create_graph=True)
    return [gx, gw, *h, *lib.autograd.grad(sum((hi ** 2).sum() for hi in h), [x, w, v])]


def test_non_reentrant_double_backward_gives_torchs_derivatives_to_third_order():
    got, want = _nr_double(sl), _nr_double(torch)
    assert got[0].requires_grad and got[2].requires_grad
    for g, t in zip(got, want):
        np.testing.assert_allclose(_np(g), _np(t), rtol=1e-10)


def test_non_reentrant_gradient_penalty_on_a_checkpointed_model():
    """WGAN-GP style: the penalty's backward differentiates through the layers' checkpoints; the parameters'
    gradients equal the model's without checkpoints."""
    sl.manual_seed(0)
    model = _gpt().double()
    model.train()
    emb = np.random.default_rng(6).standard_normal((2, 6, 16))

    def step(on: bool) -> dict:
        model.zero_grad()
        model.gradient_checkpointing_enable({"use_reentrant": False}) if on else model.gradient_checkpointing_disable()
        sl.manual_seed(1)
        x = sl.tensor(emb, requires_grad=True)
        score = model(inputs_embeds=x).logits.tanh().sum()
        g, = sl.autograd.grad(score, x, create_graph=True)
        (score + ((g.reshape(2, -1).norm(2, dim=1) - 1) ** 2).mean()).backward()
        return _grads(model)

    want, got = step(False), step(True)
    for name in want:
        np.testing.assert_allclose(got[name], want[name], rtol=1e-9, atol=1e-12, err_msg=name)


def test_more_segments_than_functions_is_a_clear_error():
    with pytest.raises(ValueError, match="3 segments of 2 functions; segments must be at most the number"):
        checkpoint_sequential([lambda x: x, lambda x: x], 3, sl.ones(2))


def test_non_reentrant_checkpoints_on_two_threads_at_once():
    """What the forward notes of the ops it records is per thread: two threads checkpointing at once get
    the gradients each would get alone."""
    import threading

    ours, _ = _mlp_pair()
    ours.double()
    xs = [np.random.default_rng(i).standard_normal((64, 6)) for i in range(2)]

    def grads(x):
        t = sl.tensor(x, requires_grad=True)
        g = sl.autograd.grad((checkpoint(lambda u: ours(u) ** 2, t, use_reentrant=False)).sum(),
                             [t] + list(ours.parameters()))
        return [a.numpy() for a in g]

    want = [grads(x) for x in xs]
    got = [None, None]
    barrier = threading.Barrier(2)

    def run(i):
        barrier.wait()
        for _ in range(20):
            got[i] = grads(xs[i])

    threads = [threading.Thread(target=run, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for w, g in zip(want, got):
        for a, b in zip(w, g):
            np.testing.assert_allclose(b, a, rtol=1e-12)


def _both(fn_of_lib):
    """fn_of_lib(lib, ck) for seqlab and torch, ck their non-reentrant checkpoint."""
    return (fn_of_lib(sl, lambda f, *a, **k: checkpoint(f, *a, use_reentrant=False, **k)),
            fn_of_lib(torch, lambda f, *a, **k: tcp.checkpoint(f, *a, use_reentrant=False, **k)))


W0 = np.array([1.5, -0.7, 0.4])


@pytest.mark.parametrize("case", ["same_non_leaf_twice", "non_leaf_arg_and_closure", "same_leaf_twice",
                                  "leaf_arg_and_closure"])
def test_non_reentrant_an_input_met_twice_counts_once_to_third_order(case):
    """A tensor passed twice, or passed and also read by closure: its gradient once, first to third order,
    and the graph outside the checkpoint intact afterwards."""
    def run(lib, ck):
        w = lib.tensor(W0, requires_grad=True)
        x = w * 2 if case.startswith(("same_non", "non_leaf")) else w
        if case in ("same_non_leaf_twice", "same_leaf_twice"):
            y = ck(lambda a, b: (a * b * a).sin().sum(), x, x)
        else:
            y = ck(lambda a: (a * x * a).sin().sum(), x)
        g, = lib.autograd.grad(y, w, create_graph=True)
        h, = lib.autograd.grad((g ** 2).sum(), w, create_graph=True)
        again, = lib.autograd.grad((x * 3).sum(), w, retain_graph=True)  # the graph before it still works
        t, = lib.autograd.grad((h ** 2).sum(), w)
        return [g, h, t, again]

    got, want = _both(run)
    for a, b in zip(got, want):
        np.testing.assert_allclose(_np(a), _np(b), rtol=1e-10)


def test_non_reentrant_function_sees_its_arguments_as_they_are():
    """The forward runs fn on arguments that require grad where the caller's do (torch's kind runs fn on
    them): a branch on requires_grad and a hook registered inside behave as without the checkpoint."""
    def run(lib, ck):
        x = lib.tensor(np.array([1.0, 2.0]), requires_grad=True)
        seen = []

        def f(a):
            if a.requires_grad:
                a.register_hook(lambda g: seen.append(1) or None)
            return a * 2 if a.requires_grad else a * 3

        y = ck(f, x)
        y.sum().backward()
        return [y, x.grad, len(seen) > 0]

    (ys, gs, hs), (yt, gt, ht) = _both(run)
    np.testing.assert_allclose(_np(ys), _np(yt))
    np.testing.assert_allclose(_np(gs), _np(gt))
    assert hs and ht


def test_non_reentrant_outputs_that_need_no_grad_come_back_without_one():
    def run(lib, ck):
        x = lib.tensor(np.array([1.0, 2.0]), requires_grad=True)
        a, b, c = ck(lambda t: (t * 2, t.detach() * 3, lib.ones(2)), x)
        return [a.requires_grad, b.requires_grad, c.requires_grad]

    got, want = _both(run)
    assert got == want == [True, False, False]


def test_non_reentrant_context_is_entered_by_every_recomputation():
    """With retain_graph, a second backward recomputes inside the same context_fn manager, as torch's."""
    def run(lib, ck):
        flag = {"on": False}

        class Ctx:
            def __enter__(self):
                flag["on"] = True

            def __exit__(self, *exc):
                flag["on"] = False

        ctx = Ctx()
        x = lib.tensor(np.array([1.0, 2.0]), requires_grad=True)
        y = ck(lambda t: t * (2.0 if flag["on"] else 1.0), x, context_fn=lambda: (ctx, ctx)).sum()
        y.backward(retain_graph=True)
        first = _np(x.grad).copy()
        y.backward()
        return [first, _np(x.grad)]

    got, want = _both(run)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b)
