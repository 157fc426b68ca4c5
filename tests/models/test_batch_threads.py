"""A batch split across threads for inference (seqlab.batch_threads): the same values as one call and as
transformers', only where nothing can tell, and the process's thread counts put back."""
from __future__ import annotations

import collections
import multiprocessing
import threading

import numpy as np
import pytest
from test_bert import SENTENCES

import seqlab
from seqlab import batch_threads, kernels
from seqlab.autograd.profile import OpProfiler
from seqlab.blas import blas_threads, get_blas_threads, set_blas_threads
from seqlab.models import BertModel


# The split agrees with one call to the BLAS's rounding, not bitwise: OpenBLAS's kernels may sum a row's
# products in another order on fewer rows or threads. On an AVX2 EPYC (Haswell kernels) the unsplit model on
# one thread and on two already differ by 1.6e-5 in MiniLM's last hidden state (values up to 6.3), the
# split by 2.0e-5; on AVX-512 kernels both were below 1e-6. A wrong row, mask or position differs by 1e-2+.
SAME_BUT_FOR_BLAS_ROUNDING = 5e-5


@pytest.fixture
def two_threads():
    """seqlab on two threads for the test (CI runs on one), the counts put back after."""
    blas, kern = get_blas_threads(), kernels._threads
    seqlab.set_num_threads(2)
    yield
    if blas is not None:
        set_blas_threads(blas)
    kernels.set_threads(kern)


@pytest.fixture(scope="module")
def minilm_batch(T, minilm_dir):
    model = BertModel.from_pretrained("minilm")
    tok = T.AutoTokenizer.from_pretrained(str(minilm_dir))
    batch = tok(SENTENCES, padding=True, truncation=True, max_length=128, return_tensors="np")
    return model, batch


@pytest.fixture
def layer_calls(monkeypatch):
    """(thread name, rows) of every call of BertModel._rows (the model on a batch, or on a chunk of it)."""
    calls, real = [], BertModel._rows

    def spy(self, ids, embeds, *args):
        calls.append((threading.current_thread().name, (ids if ids is not None else embeds).shape[0]))
        return real(self, ids, embeds, *args)

    monkeypatch.setattr(BertModel, "_rows", spy)
    return calls


def _run(model, b, **kw):
    with seqlab.no_grad():
        return model(b["input_ids"], b["attention_mask"], b["token_type_ids"], **kw)


def test_split_batch_equals_one_call_and_transformers(minilm_batch, two_threads, layer_calls, T, torch, minilm_dir):
    model, b = minilm_batch
    rows = len(SENTENCES)
    out = _run(model, b, output_attentions=True, output_hidden_states=True)
    assert sorted(layer_calls) == [("seqlab-rows_0", rows // 2), ("seqlab-rows_1", rows - rows // 2)]
    assert seqlab.get_num_threads() == 2  # the counts the split set are put back
    batch_threads.set_enabled(False)
    try:
        one = _run(model, b, output_attentions=True, output_hidden_states=True)
    finally:
        batch_threads.set_enabled(True)
    assert layer_calls[-1] == ("MainThread", rows)
    assert not out.last_hidden_state.requires_grad and out.last_hidden_state.grad_fn is None
    pairs = [(out.last_hidden_state, one.last_hidden_state), (out.pooler_output, one.pooler_output),
             *zip(out.hidden_states, one.hidden_states), *zip(out.attentions, one.attentions)]
    assert len(pairs) == 2 + 7 + 6
    for a, c in pairs:
        assert a.shape == c.shape and a.dtype == c.dtype == np.float32
        np.testing.assert_allclose(a.numpy(), c.numpy(), rtol=0, atol=SAME_BUT_FOR_BLAS_ROUNDING)
    ref = T.BertModel.from_pretrained(str(minilm_dir), attn_implementation="eager").eval()
    with torch.no_grad():
        r = ref(**{k: torch.tensor(v) for k, v in b.items()})
    real = b["attention_mask"].astype(bool)
    np.testing.assert_allclose(out.last_hidden_state.numpy()[real], r.last_hidden_state.numpy()[real],
                               rtol=0, atol=1e-4)


def test_split_with_inputs_embeds_and_position_ids(minilm_batch, two_threads, layer_calls):
    model, b = minilm_batch
    B, T = b["input_ids"].shape
    embeds = model.embeddings.word_embeddings(b["input_ids"])
    rng = np.random.default_rng(0)
    cases = [np.arange(T)[::-1].copy(),            # (T,): one vector for every row, never cut
             rng.integers(0, 100, (1, T)),         # (1, T): the same
             rng.integers(0, 100, (B, T))]         # (B, T): one per row, cut with the rows
    for pos in cases:
        with seqlab.no_grad():
            got = model(inputs_embeds=embeds, attention_mask=b["attention_mask"], position_ids=pos)
            batch_threads.set_enabled(False)
            try:
                want = model(inputs_embeds=embeds, attention_mask=b["attention_mask"], position_ids=pos)
            finally:
                batch_threads.set_enabled(True)
        np.testing.assert_allclose(got.last_hidden_state.numpy(), want.last_hidden_state.numpy(), rtol=0,
                                   atol=SAME_BUT_FOR_BLAS_ROUNDING)
    assert [name for name, _ in layer_calls].count("seqlab-rows_1") == 3
    with pytest.raises(ValueError, match=r"position_ids has shape \(2, \d+\) but input_ids \(18, "):
        with seqlab.no_grad():
            model(b["input_ids"], position_ids=np.zeros((2, T), np.int64))  # the whole batch's shape, not a chunk's


def test_masked_lm_is_not_split_and_sequence_classification_is(minilm_batch, two_threads, layer_calls):
    """BertForMaskedLM runs its encoder unsplit (its (B, T, vocabulary) logits would be held twice while the
    chunks are joined); BertForSequenceClassification splits through its encoder. Both as unsplit."""
    from seqlab.models import BertForMaskedLM, BertForSequenceClassification

    _, b = minilm_batch
    rows = len(SENTENCES)
    mlm = BertForMaskedLM.from_pretrained("minilm").eval()  # the file has no MLM head: a fresh one, all the same
    clf = BertForSequenceClassification.from_pretrained("minilm", num_labels=3).eval()
    labels = np.where(b["attention_mask"] == 1, b["input_ids"], -100)
    with seqlab.no_grad():
        out = mlm(b["input_ids"], b["attention_mask"], labels=labels)
        assert layer_calls == [("MainThread", rows)]
        logits = clf(b["input_ids"], b["attention_mask"]).logits
        assert sorted(layer_calls[1:]) == [("seqlab-rows_0", rows // 2), ("seqlab-rows_1", rows - rows // 2)]
        batch_threads.set_enabled(False)
        try:
            one = mlm(b["input_ids"], b["attention_mask"], labels=labels)
            one_logits = clf(b["input_ids"], b["attention_mask"]).logits
        finally:
            batch_threads.set_enabled(True)
    np.testing.assert_array_equal(out.logits.numpy(), one.logits.numpy())
    assert out.loss.item() == one.loss.item()
    np.testing.assert_allclose(logits.numpy(), one_logits.numpy(), rtol=0, atol=1e-6)


def test_unsplit_holds_for_its_thread_only(two_threads):
    per_row = batch_threads.MIN_CHUNK_MACS
    seen = []

    def other():
        with seqlab.no_grad():
            seen.append(batch_threads.chunks(8, per_row))

    with seqlab.no_grad():
        with batch_threads.unsplit():
            with batch_threads.unsplit():
                assert batch_threads.chunks(8, per_row) == 1
            assert batch_threads.chunks(8, per_row) == 1  # nested: still inside the outer block
            t = threading.Thread(target=other)
            t.start()
            t.join()
        assert seen == [2] and batch_threads.chunks(8, per_row) == 2


def test_no_split_where_it_could_be_seen(minilm_batch, two_threads, layer_calls):
    model, b = minilm_batch
    rows = len(SENTENCES)
    model(b["input_ids"], b["attention_mask"])  # grad mode: a graph is recorded, on the caller's thread
    seen = []
    handle = model.encoder.layer[0].register_forward_hook(lambda m, args, out: seen.append(args[0].shape[0]))
    try:
        _run(model, b)
    finally:
        handle.remove()
    assert seen == [rows]  # a hook sees the whole batch, as it would in transformers
    with OpProfiler():
        _run(model, b)
    assert layer_calls == [("MainThread", rows)] * 3
    small = {k: v[:2, :8] for k, v in b.items()}  # two short rows: faster on one thread with a threaded BLAS
    _run(model, small)
    assert layer_calls[-1] == ("MainThread", 2)


def test_chunks_follow_threads_work_and_switches(two_threads):
    per_row = batch_threads.MIN_CHUNK_MACS
    with seqlab.no_grad():
        assert batch_threads.chunks(8, per_row) == 2
        assert batch_threads.chunks(8, per_row / 4) == 2  # 2 MIN_CHUNK_MACS in all: two chunks
        assert batch_threads.chunks(8, per_row / 8) == 1  # one chunk's work: no split
        assert batch_threads.chunks(1, 100 * per_row) == 1
        seqlab.set_num_threads(1)
        assert batch_threads.chunks(8, per_row) == 1
        seqlab.set_num_threads(2)
        batch_threads.set_enabled(False)
        assert not batch_threads.enabled() and batch_threads.chunks(8, per_row) == 1
        batch_threads.set_enabled(True)
    assert batch_threads.chunks(8, per_row) == 1  # grad mode


def test_map_rows_joins_nested_results_and_raises_a_chunks_error(two_threads):
    x = seqlab.tensor(np.arange(12, dtype=np.float32).reshape(6, 2))
    mask = np.arange(6) % 2 == 0
    names = []

    def fn(t, m, flag):
        names.append(threading.current_thread().name)
        assert seqlab.is_grad_enabled() is False and flag == "as is"
        return t * 2, [t[:, :1], None], t.sum(1), m

    got = batch_threads.map_rows(fn, (x, mask, "as is"), 3)
    assert sorted(names) == ["seqlab-rows_0", "seqlab-rows_1", "seqlab-rows_2"]
    np.testing.assert_array_equal(got[0].numpy(), x.numpy() * 2)
    np.testing.assert_array_equal(got[1][0].numpy(), x.numpy()[:, :1])
    assert got[1][1] is None and isinstance(got[1], list)
    np.testing.assert_array_equal(got[2].numpy(), x.numpy().sum(1))
    np.testing.assert_array_equal(got[3], mask)

    def fails(t):
        names.append(threading.current_thread().name)
        if (t.numpy() > 8).any():  # in the second chunk only
            raise ValueError(f"a value above 8 in {t.shape[0]} rows")
        return t

    names.clear()
    with pytest.raises(ValueError, match="in 6 rows"):  # the batch's message (rerun unsplit), not the chunk's
        batch_threads.map_rows(fails, (x,), 2)
    assert sorted(names) == ["MainThread", "seqlab-rows_0", "seqlab-rows_1"]
    assert seqlab.get_num_threads() == 2 and get_blas_threads() in (2, None)
    Pair = collections.namedtuple("Pair", "a b")
    got = batch_threads.map_rows(lambda t: Pair(t, t[:, 0]), (x,), 2)  # a namedtuple is a tuple too
    assert isinstance(got, Pair) and got.b.shape == (6,)
    assert batch_threads.map_rows(lambda a, b: a + b, (3, 4), 2) == 7  # nothing to cut: one call


def test_a_split_inside_a_split_runs_unsplit(two_threads):
    x = seqlab.tensor(np.ones((4, 3), dtype=np.float32))
    names = []

    def inner(t):
        names.append(threading.current_thread().name)
        return t

    with batch_threads._lock:  # another split is running: this call runs whole, on its own thread
        batch_threads.map_rows(inner, (x,), 2)
    assert names == [threading.current_thread().name]


def _child(queue):
    x = seqlab.tensor(np.arange(8, dtype=np.float32).reshape(4, 2))
    queue.put(batch_threads.map_rows(lambda t: t + 1, (x,), 2).numpy().tolist())


def test_a_forked_child_starts_its_own_workers(two_threads):
    x = seqlab.tensor(np.zeros((4, 2), dtype=np.float32))
    batch_threads.map_rows(lambda t: t, (x,), 2)  # the parent's workers exist now
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    child = ctx.Process(target=_child, args=(queue,))
    child.start()
    child.join(60)
    assert child.exitcode == 0, "the child hung or failed on the parent's worker threads"
    assert queue.get(timeout=5) == (np.arange(8).reshape(4, 2) + 1).tolist()



def _tiny(cls=BertModel):
    from seqlab.models.bert import BertConfig

    seqlab.manual_seed(0)
    return cls(BertConfig(vocab_size=60, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                          intermediate_size=64, max_position_embeddings=16)).eval()


def test_a_model_on_the_device_runs_unsplit(cuda, two_threads, layer_calls, monkeypatch):
    """A GPU model's ids on the device gave map_rows no rows it knew (StopIteration); its NumPy ids (which the
    embeddings move) split the GPU model across threads."""
    from seqlab import backend

    monkeypatch.setattr(batch_threads, "MIN_CHUNK_MACS", 1)
    ids = np.arange(24).reshape(4, 6) % 59 + 1
    with seqlab.no_grad():
        want = _tiny()(ids).last_hidden_state.numpy()
        dev = _tiny().to("cuda")
        del layer_calls[:]
        for x in (ids, backend.to_device(ids, "cuda")):
            got = dev(x).last_hidden_state
            assert got.device == "cuda"
            np.testing.assert_allclose(backend.to_numpy(got.data), want, rtol=1e-4, atol=1e-5)
    assert layer_calls == [("MainThread", 4)] * 2


def test_a_chunks_error_reads_as_the_batchs(two_threads, monkeypatch):
    """A chunk's error is the unsplit call's: which id the message names, which shape; the next call splits."""
    monkeypatch.setattr(batch_threads, "MIN_CHUNK_MACS", 1)
    model = _tiny()
    ids = np.ones((6, 5), np.int64)
    ids[0, 0], ids[5, 0] = 70, 90  # one in each chunk: the batch's message names the larger
    embeds = seqlab.tensor(np.zeros((6, 5, 16), np.float32))  # hidden size 16, not 32
    with seqlab.no_grad():
        with pytest.raises(IndexError, match="token id 90 is out of range"):
            model(ids)
        with pytest.raises(ValueError, match="6,5,16"):
            model(inputs_embeds=embeds)
        assert seqlab.get_num_threads() == 2 and seqlab.is_grad_enabled() is False
        np.testing.assert_allclose(model(ids % 60).last_hidden_state.numpy(),
                                   _unsplit(lambda: model(ids % 60)).last_hidden_state.numpy(), rtol=0, atol=1e-6)


def _unsplit(call):
    batch_threads.set_enabled(False)
    try:
        return call()
    finally:
        batch_threads.set_enabled(True)


def test_masked_lm_calls_its_encoders_own_forward(two_threads, monkeypatch):
    """An encoder whose forward is replaced (on the instance, or by a subclass) is called, split or not, as
    before the split ran the encoder's work itself."""
    from seqlab.models import BertForMaskedLM

    monkeypatch.setattr(batch_threads, "MIN_CHUNK_MACS", 1)
    mlm, calls = _tiny(BertForMaskedLM), []
    real = mlm.bert.forward
    mlm.bert.forward = lambda *a: calls.append(len(a)) or real(*a)
    with seqlab.no_grad():
        mlm(np.ones((4, 5), np.int64))
        _unsplit(lambda: mlm(np.ones((4, 5), np.int64)))
    assert calls == [7, 7]


def _counts_in_child(queue):
    queue.put((seqlab.get_num_threads(), get_blas_threads(), batch_threads._lock.locked()))


def test_a_child_forked_during_a_split_gets_the_counts_back(two_threads):
    """Forked while another thread splits (here: this one, holding the split's lock and counts), a child has no
    split to finish: its lock was taken for good and its threads stayed at one."""
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    with batch_threads._lock, batch_threads._single_threaded():
        assert seqlab.get_num_threads() == 1
        child = ctx.Process(target=_counts_in_child, args=(queue,))
        child.start()
        child.join(60)
    assert child.exitcode == 0
    assert queue.get(timeout=5) == (2, 2 if get_blas_threads() is not None else None, False)
    assert seqlab.get_num_threads() == 2 and not batch_threads._lock.locked()


def test_set_num_threads_during_a_split_is_not_undone_by_it(two_threads):
    """A user thread's seqlab.set_num_threads waits for a split running on another thread to put its counts
    back, so the split's restore cannot overwrite the new count."""
    x = seqlab.tensor(np.ones((4, 3), dtype=np.float32))
    inside, release = threading.Event(), threading.Event()

    def slow(t):
        inside.set()
        release.wait(10)
        return t

    def split():
        with seqlab.no_grad():
            batch_threads.map_rows(slow, (x,), 2)

    splitter = threading.Thread(target=split)
    splitter.start()
    assert inside.wait(10)
    setter = threading.Thread(target=seqlab.set_num_threads, args=(3,))
    setter.start()
    setter.join(0.3)
    assert setter.is_alive()  # waiting for the split
    release.set()
    splitter.join(10)
    setter.join(10)
    assert not setter.is_alive() and seqlab.get_num_threads() == 3


def test_blas_threads_block_during_a_split_is_not_undone_by_it(two_threads):
    """seqlab.blas.blas_threads, entered on a user thread while a split runs on another, waits for the split
    to put its counts back before it sets its own, and its own count holds inside the block."""
    if get_blas_threads() is None:
        pytest.skip("NumPy's BLAS exports no thread-count setter here")
    x = seqlab.tensor(np.ones((4, 3), dtype=np.float32))
    inside, release, seen = threading.Event(), threading.Event(), []

    def slow(t):
        inside.set()
        release.wait(10)
        return t

    def split():
        with seqlab.no_grad():
            batch_threads.map_rows(slow, (x,), 2)

    def user():
        with blas_threads(3):
            seen.append(get_blas_threads())

    splitter = threading.Thread(target=split)
    splitter.start()
    assert inside.wait(10)
    other = threading.Thread(target=user)
    other.start()
    other.join(0.3)
    assert other.is_alive() and not seen  # waiting for the split
    release.set()
    splitter.join(10)
    other.join(10)
    assert seen == [3] and get_blas_threads() == 2 and not batch_threads._lock.locked()
