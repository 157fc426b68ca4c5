"""generate(streamer=...) calls put/end as transformers' generate does, and seqlab's TextStreamer /
TextIteratorStreamer pass on exactly the text transformers' do, on the same tokenizer files.

The reference tokenizer is transformers' PreTrainedTokenizerFast on the tokenizer.json seqlab saved (as in
tests/data/test_tokenizer_hf_idioms.py). transformers' tokenizers keep special tokens in `decode` unless
told; seqlab's skip them: the comparisons pass skip_special_tokens explicitly.
"""
from __future__ import annotations

import threading

import numpy as np
import pytest
from models_helpers import hf_save

from seqlab.data import Tokenizer
from seqlab.models import AutoModel, BaseStreamer, TextIteratorStreamer, TextStreamer
from seqlab.models import generation

# byte-level BPE over text with newlines, symbols, accents, CJK and an emoji: characters split across tokens
CORPUS = ["the cat sat on the mat.\nthe dog sat on the log!", "a cat and a dog, (maybe) <br> 猫と犬 café naïve 😀 ok?",
          "it is what it is; 42 cats -- or 7?"] * 30
TEXT = "the cat 猫 sat,\n  café (naïve) 😀 <br>dog! 42 -- or\n\n7? 犬犬 ok"
WORDPIECE = ["the cat sat on the mat. the dog sat on the log. a filmar or two, 42 times!"] * 20


def hf_fast(transformers, folder, ours: Tokenizer):
    return transformers.PreTrainedTokenizerFast(tokenizer_file=str(folder / "tokenizer.json"),
                                                **{f"{n}_token": t for n, t in ours.special_tokens.items()})


@pytest.fixture(scope="module")
def bpe(T, tmp_path_factory):
    folder = tmp_path_factory.mktemp("bpe")
    tok = Tokenizer.train_bpe(CORPUS, vocab_size=300)
    tok.save(folder)
    return folder, tok, hf_fast(T, folder, tok)


@pytest.fixture(scope="module")
def wordpiece(T, tmp_path_factory):
    folder = tmp_path_factory.mktemp("wordpiece")
    tok = Tokenizer.train_wordpiece(WORDPIECE, vocab_size=120)
    tok.save(folder)
    return folder, tok, hf_fast(T, folder, tok)


@pytest.fixture(scope="module")
def gpt(T, torch, bpe):
    """A random GPT-2 over the BPE vocabulary, in transformers and in seqlab (the same weights)."""
    folder, tok, _ = bpe
    torch.manual_seed(0)
    eot = tok.convert_tokens_to_ids("<|endoftext|>")
    hf = T.GPT2LMHeadModel(T.GPT2Config(vocab_size=tok.vocab_size, n_positions=64, n_embd=16, n_layer=2, n_head=2,
                                        bos_token_id=eot, eos_token_id=eot)).double().eval()
    return hf, AutoModel.from_pretrained(hf_save(hf, folder), dtype=np.float64)


@pytest.fixture(scope="module")
def t5(T, torch, tmp_path_factory):
    torch.manual_seed(1)
    hf = T.T5ForConditionalGeneration(T.T5Config(
        vocab_size=40, d_model=16, d_kv=4, d_ff=24, num_layers=2, num_heads=2, feed_forward_proj="relu",
        relative_attention_num_buckets=8, relative_attention_max_distance=20, dropout_rate=0.0,
        decoder_start_token_id=0, pad_token_id=0, eos_token_id=1)).double().eval()
    return hf, AutoModel.from_pretrained(hf_save(hf, tmp_path_factory.mktemp("t5")), dtype=np.float64)


class Recorder:
    """A BaseStreamer that writes down each call."""

    def __init__(self):
        self.calls = []

    def put(self, value):
        self.calls.append(("put", np.array(value.numpy() if hasattr(value, "numpy") else value)))

    def end(self):
        self.calls.append(("end", None))


def assert_same_calls(ours: Recorder, ref: Recorder):
    assert [kind for kind, _ in ours.calls] == [kind for kind, _ in ref.calls]
    for (_, a), (_, b) in zip(ours.calls, ref.calls):
        if a is not None:
            assert a.shape == b.shape and a.dtype == b.dtype == np.int64
            np.testing.assert_array_equal(a, b)


def chunks(streamer_cls, tokenizer, prompt, tokens, tensor=np.array, **kw) -> list[tuple[str, bool]]:
    """What a streamer passes on (text, stream_end) for the prompt (1, T) and then one token at a time, twice
    (a streamer is reused after end())."""
    got = []

    class Kept(streamer_cls):
        def on_finalized_text(self, text, stream_end=False):
            got.append((text, stream_end))

    s = Kept(tokenizer, **kw)
    for _ in range(2):
        s.put(tensor([prompt]))
        for t in tokens:
            s.put(tensor([t]))
        s.end()
    return got


# ---- put / end, as transformers calls them ------------------------------------------------------------
def test_generate_calls_put_and_end_as_transformers(torch, gpt):
    hf, ours = gpt
    ids = np.array([[5, 80, 120, 33]])
    once = dict(no_repeat_ngram_size=1)                                       # no token twice
    stop = int(ours.generate(ids, max_new_tokens=4, **once)[0, -1])           # emitted at the 4th step
    for kw in (dict(max_new_tokens=6), dict(max_new_tokens=8, eos_token_id=stop, **once),
               dict(max_new_tokens=5, do_sample=True, top_k=1)):
        a, b = Recorder(), Recorder()
        out = ours.generate(ids, streamer=a, **kw)
        with torch.no_grad():
            hf.generate(torch.tensor(ids), attention_mask=torch.ones(1, 4, dtype=torch.long), streamer=b,
                        **{"do_sample": False, **kw})
        assert_same_calls(a, b)
        assert a.calls[0][1].shape == (1, 4) and a.calls[1][1].shape == (1,)
        np.testing.assert_array_equal(np.concatenate([v.reshape(-1) for _, v in a.calls[:-1]]), out[0])
    assert len(a.calls) == 1 + 5 + 1 and len(Recorder().calls) == 0
    # the end token stops the stream, as transformers' loop does
    stopped = Recorder()
    ours.generate(ids, streamer=stopped, max_new_tokens=8, eos_token_id=stop, **once)
    assert len(stopped.calls) == 1 + 4 + 1 and int(stopped.calls[-2][1][0]) == stop


def test_t5_streams_the_decoder_start_token_first(torch, t5):
    hf, ours = t5
    src, mask = np.array([[5, 9, 14, 3, 22]]), np.ones((1, 5), dtype=np.int64)
    a, b = Recorder(), Recorder()
    ours.generate(src, mask, max_new_tokens=6, streamer=a)
    with torch.no_grad():
        hf.generate(torch.tensor(src), attention_mask=torch.tensor(mask), max_new_tokens=6, do_sample=False,
                    streamer=b)
    assert_same_calls(a, b)
    np.testing.assert_array_equal(a.calls[0][1], [[0]])


def test_streamer_refusals(T, torch, gpt, bpe):
    hf, ours = gpt
    _, tok, hf_tok = bpe
    ids = np.array([[5, 80, 120], [7, 8, 9]])
    with pytest.raises(ValueError, match=r"streamer cannot be used with beam search \(num_beams=2\)") as e:
        ours.generate(ids[:1], num_beams=2, streamer=Recorder())
    with pytest.raises(ValueError, match="beam search"):                     # transformers refuses it too
        hf.generate(torch.tensor(ids[:1]), num_beams=2, do_sample=False, streamer=T.TextStreamer(hf_tok))
    with pytest.raises(ValueError, match=r"generates 2 \(batch size 2, num_return_sequences 1\).*batch size 1"):
        ours.generate(ids, streamer=Recorder())
    with pytest.raises(ValueError, match=r"generates 3 \(batch size 1, num_return_sequences 3\)"):
        ours.generate(ids[:1], do_sample=True, num_return_sequences=3, streamer=Recorder())
    with pytest.raises(ValueError, match="only supports batch size 1"):     # transformers' TextStreamer
        hf.generate(torch.tensor(ids), do_sample=False, max_new_tokens=2, streamer=T.TextStreamer(hf_tok))
    with pytest.raises(ValueError, match="only supports batch size 1"):     # seqlab's, given a batch
        TextStreamer(tok).put(ids)
    assert "\n" not in str(e.value)
    with pytest.raises(TypeError, match="put.*end.*got list"):
        ours.generate(ids[:1], streamer=[])
    with pytest.raises(NotImplementedError):
        BaseStreamer().put(ids)


# ---- TextStreamer: transformers' text, chunk by chunk ------------------------------------------------------
@pytest.mark.parametrize("skip_prompt", [False, True])
def test_text_streamer_passes_on_what_transformers_does(T, torch, bpe, wordpiece, skip_prompt):
    for _, tok, hf_tok in (bpe, wordpiece):
        ids = tok.encode(TEXT if tok is bpe[1] else WORDPIECE[0], add_special_tokens=False)
        if tok is bpe[1]:
            ids = ids + [tok.convert_tokens_to_ids("<|endoftext|>")] + ids[:5]
        prompt, new = ids[:3], ids[3:]
        for kw in (dict(skip_special_tokens=True), dict(skip_special_tokens=False)):
            ours = chunks(TextStreamer, tok, prompt, new, skip_prompt=skip_prompt, **kw)
            ref = chunks(T.TextStreamer, hf_tok, prompt, new, tensor=torch.tensor, skip_prompt=skip_prompt, **kw)
            assert ours == ref
            assert "".join(t for t, _ in ours) == 2 * tok.decode(new if skip_prompt else ids, **kw)
        # seqlab's tokenizer skips special tokens unless told otherwise
        plain = chunks(TextStreamer, tok, prompt, new)
        assert plain == chunks(TextStreamer, tok, prompt, new, skip_special_tokens=True)
    # held back: an incomplete character and a symbol wait; words and CJK characters do not
    texts = [t for t, _ in chunks(TextStreamer, bpe[1], [], bpe[1].encode("a 😀 犬 b"))]
    assert "\ufffd" not in "".join(texts) and "犬" in texts


def test_text_streamer_prints_what_transformers_prints(T, torch, bpe, capsys):
    _, tok, hf_tok = bpe
    ids = tok.encode(TEXT)
    for streamer, tensor in ((TextStreamer(tok, skip_special_tokens=False), np.array),
                             (T.TextStreamer(hf_tok), torch.tensor)):
        streamer.put(tensor([ids[:2]]))
        for t in ids[2:]:
            streamer.put(tensor([t]))
        streamer.end()
    out = capsys.readouterr().out
    assert out == 2 * (TEXT + "\n")


def test_generate_with_text_streamers_prints_what_transformers_prints(T, torch, gpt, bpe, capsys):
    hf, ours = gpt
    _, tok, hf_tok = bpe
    ids = np.array([tok.encode("the cat sat")])
    kw = dict(max_new_tokens=40, no_repeat_ngram_size=1)                    # 40 different tokens: varied text
    for skip_prompt in (False, True):
        new = ours.generate(ids, streamer=TextStreamer(tok, skip_prompt=skip_prompt, skip_special_tokens=True), **kw)
        printed = capsys.readouterr().out
        with torch.no_grad():
            hf.generate(torch.tensor(ids), attention_mask=torch.ones_like(torch.tensor(ids)), do_sample=False,
                        streamer=T.TextStreamer(hf_tok, skip_prompt=skip_prompt, skip_special_tokens=True), **kw)
        assert printed == capsys.readouterr().out
        assert printed == tok.decode(new[0, 0 if not skip_prompt else 3:]) + "\n"
    assert any(ord(c) > 127 for c in printed)                                 # multi-byte characters came by


def test_text_iterator_streamer_yields_what_transformers_yields(T, torch, gpt, bpe):
    hf, ours = gpt
    _, tok, hf_tok = bpe
    ids = np.array([tok.encode("a dog")])
    kw = dict(max_new_tokens=30, no_repeat_ngram_size=1)

    def run(generate, streamer, *args, **more):
        thread = threading.Thread(target=generate, args=args, kwargs=dict(streamer=streamer, **kw, **more))
        thread.start()
        texts = list(streamer)
        thread.join()
        return texts

    ours_texts = run(ours.generate, TextIteratorStreamer(tok, skip_prompt=True, timeout=30, skip_special_tokens=True),
                     ids)
    with torch.no_grad():  # no_grad is per thread in torch: the thread's generate is a decorated no_grad call
        ref = run(hf.generate, T.TextIteratorStreamer(hf_tok, skip_prompt=True, timeout=30, skip_special_tokens=True),
                  torch.tensor(ids), do_sample=False)
    assert ours_texts == ref and len(ours_texts) > 5
    assert "".join(ours_texts) == tok.decode(ours.generate(ids, **kw)[0, 2:])
    import queue

    with pytest.raises(queue.Empty):                                          # nothing comes: the timeout says so
        next(TextIteratorStreamer(tok, timeout=0.01))


def test_text_streamer_takes_a_character_tokenizer(capsys):
    from seqlab.data import CharTokenizer

    tok = CharTokenizer.from_text("ROMEO:\nWhat say you, Juliet?")
    s = TextStreamer(tok)
    ids = tok.encode("ROMEO:\nWhat say you?")
    s.put(np.array([ids[:3]]))
    for t in ids[3:]:
        s.put(np.array([t]))
    s.end()
    assert capsys.readouterr().out == "ROMEO:\nWhat say you?\n"


def test_exports():
    assert generation.TextStreamer is TextStreamer and issubclass(TextIteratorStreamer, BaseStreamer)
