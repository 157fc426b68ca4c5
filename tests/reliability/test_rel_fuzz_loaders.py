"""Random bytes through the tokenizers and the file loaders: a result, or seqlab's error (a SeqlabError /
ValueError naming the file), never another exception.

Held elsewhere: load_glue_tsv on random bytes (tests/data/test_datasets.py), BERT and BPE tokenizers on
random *text* (tests/data/test_tokenizers.py). Here the text comes from random *bytes*: decoded leniently
(any str) it must encode; decoded with surrogateescape (what Python makes of undecodable command-line
bytes) it must encode or raise ValueError.
"""
from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from seqlab.errors import SeqlabError

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
BYTES = st.binary(max_size=80) | st.sampled_from([b"\xff\xfe", b"\xc3", b"\xed\xa0\x80", b"\x00" * 5, "é".encode()])
OURS = (SeqlabError, ValueError)


@pytest.fixture(scope="module")
def tokenizers(models):
    from seqlab.data import CharTokenizer, Tokenizer

    return {"minilm": Tokenizer.from_pretrained("minilm"), "bpe": models.bpe, "wordpiece": models.wordpiece,
            "char": CharTokenizer("the cat sat on the mat.\n")}


@SETTINGS
@given(data=BYTES, name=st.sampled_from(["minilm", "bpe", "wordpiece"]), max_length=st.integers(2, 9))
def test_subword_tokenizers_on_random_bytes(tokenizers, data, name, max_length):
    tok = tokenizers[name]
    text = data.decode("utf-8", errors="replace")  # any str: must encode
    ids = tok.encode(text)
    assert all(0 <= i < tok.vocab_size for i in ids)
    batch = tok(text, truncation=True, max_length=max_length)
    assert batch["input_ids"].shape[1] <= max_length
    decoded = tok.decode(ids)
    if name == "bpe":  # byte-level BPE: every string round-trips
        assert decoded == text
    raw = data.decode("utf-8", errors="surrogateescape")  # lone surrogates where bytes are not UTF-8
    try:
        tok(raw)
        tok.encode(raw)
    except ValueError as e:
        assert "not valid Unicode" in str(e)


@SETTINGS
@given(data=BYTES, ids=st.lists(st.integers(-2, 10**20), max_size=5))
def test_char_tokenizer_and_decoders_on_random_input(tokenizers, data, ids):
    char = tokenizers["char"]
    text = data.decode("utf-8", errors="surrogateescape")
    try:
        assert char.decode(char.encode(text)) == text
    except ValueError as e:
        assert "is not in the vocabulary" in str(e)
    for tok in tokenizers.values():
        try:
            tok.decode(ids)
        except ValueError as e:
            assert "outside the vocabulary" in str(e)


# ---------------------------------------------------------------- files

@pytest.mark.parametrize("kind", ["tokenizer.json", "vocab.txt", "vocab.json", "char_tokenizer.json",
                                  "tokenizer_config.json"])
@SETTINGS
@given(data=BYTES)
def test_tokenizer_files_with_random_bytes(tmp_path_factory, kind, data):
    from seqlab.data import load_tokenizer

    folder = tmp_path_factory.mktemp("tok")
    (folder / kind).write_bytes(data)
    if kind == "vocab.json":
        (folder / "merges.txt").write_bytes(data[::-1])
    if kind == "tokenizer_config.json":
        (folder / "vocab.txt").write_text("[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nthe\n")
    try:
        tok = load_tokenizer(folder)
    except OURS as e:
        assert str(folder) in str(e) or kind == "vocab.txt" and "vocabulary lacks" in str(e)
        return
    tok.encode("the cat")  # whatever loaded works


JSON = st.recursive(st.none() | st.booleans() | st.integers(-3, 3000) | st.floats() | st.text(max_size=4),
                    lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=3), c, max_size=3),
                    max_leaves=5)


@SETTINGS
@given(data=BYTES | JSON.map(lambda v: json.dumps(v).encode()))
def test_config_json_with_random_content(tmp_path_factory, data):
    from seqlab.hub import read_config
    from seqlab.models.auto import model_class

    folder = tmp_path_factory.mktemp("cfg")
    (folder / "config.json").write_bytes(data)
    try:
        config = read_config(folder)
        cls = model_class(config, "config.json")
        cls.config_class.from_dict(config)
    except OURS:
        pass


@pytest.mark.parametrize("family", ["bert", "gpt2", "t5"])
@SETTINGS
@given(values=st.data())
def test_config_fields_with_random_json_values(family, values):
    """Every field of the config given any JSON value: the config, or a ConfigError naming the field."""
    import dataclasses

    from seqlab.models.auto import model_class

    cls = model_class({"model_type": family}).config_class
    names = [f.name for f in dataclasses.fields(cls) if f.name != "extra"] + list(cls.aliases)
    d = values.draw(st.dictionaries(st.sampled_from(names), JSON, max_size=4))
    try:
        cls.from_dict(d)
    except OURS:
        pass


@SETTINGS
@given(data=BYTES | st.sampled_from([b"[train]\nlr = 'x'\n", b"max_steps = 1e999\n", b"lr = [1, 2]\n",
                                     b"seed = 99999999999999999999999\n", b"[a.b.c]\nd = 1\n"]))
def test_training_config_files_with_random_content(tmp_path_factory, data):
    from seqlab.train import runs
    from seqlab.train.config import read_toml

    path = tmp_path_factory.mktemp("toml") / "c.toml"
    path.write_bytes(data)
    try:
        runs.resolve_config("toy-classifier", [(read_toml(path), str(path))])
    except OURS as e:
        assert str(path) in str(e) or "expects" in str(e) or "unknown setting" in str(e) or "must be" in str(e)


@SETTINGS
@given(data=BYTES)
def test_dataset_text_files_with_random_bytes(tmp_path_factory, data):
    from seqlab.data.datasets import _read_text
    from seqlab.data.tokenizers import CharTokenizer

    path = tmp_path_factory.mktemp("txt") / "input.txt"
    path.write_bytes(data)
    try:
        text = _read_text(path)
    except OURS as e:
        assert str(path) in str(e)
        return
    if text:
        tok = CharTokenizer(text)
        assert tok.decode(np.asarray(tok.encode(text))) == text
