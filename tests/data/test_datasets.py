"""Dataset loaders: the published counts, and the TSV parser's handling of bad input."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from seqlab.data import DATASETS, datasets, load_glue_tsv, load_multi30k, load_shakespeare, load_sst2
from seqlab.errors import DataError


def test_sst2_counts_and_labels(shared_data):
    train = load_sst2("train", data_dir=shared_data)
    dev = load_sst2("dev", data_dir=shared_data)
    assert len(train) == DATASETS["sst2"].sizes["train"] == 67_349
    assert len(dev) == DATASETS["sst2"].sizes["dev"] == 872
    assert Counter(label for _, label in train) == {0: 29_780, 1: 37_569}
    assert Counter(label for _, label in dev) == {0: 428, 1: 444}
    # GLUE's trailing space before the tab is gone; the first row is known.
    assert train[0] == ("hide new secretions from the parental units", 0)
    assert all(s == s.strip() and s for s, _ in train + dev)


def test_sst2_loads_through_env(shared_data, monkeypatch):
    monkeypatch.setenv("SEQLAB_DATA", str(shared_data))
    assert len(load_sst2("dev")) == 872


def test_shakespeare(shared_data):
    text = load_shakespeare(data_dir=shared_data)
    assert len(text) == DATASETS["tinyshakespeare"].sizes["train"] == 1_115_394
    assert len(set(text)) == 65
    assert text.startswith("First Citizen:\n")


@pytest.mark.parametrize("split,n", [("train", 29_000), ("val", 1_014), ("test2016", 1_000)])
def test_multi30k_counts(shared_data, split, n):
    de, en = load_multi30k(split, data_dir=shared_data)
    assert len(de) == len(en) == n == DATASETS["multi30k"].sizes[split]
    assert all(line and "\n" not in line for line in de + en)


def test_multi30k_keeps_upstream_quirks(shared_data):
    de, en = load_multi30k("train", data_dir=shared_data)
    assert "\t" in de[7365]  # line 7366 holds a tab: lines are split on \n only
    assert de[0] == "Zwei junge weiße Männer sind im Freien in der Nähe vieler Büsche."
    assert en[0] == "Two young, White males are outside near many bushes."


def test_multi30k_unequal_files(tmp_path, monkeypatch):
    # Real files always pass the checksum first, so feed unverified ones in.
    (tmp_path / "val.de").write_text("eins\nzwei\n")
    (tmp_path / "val.en").write_text("one\n")
    monkeypatch.setattr(datasets, "dataset_file", lambda dataset, name, data_dir: tmp_path / name)
    with pytest.raises(DataError, match=r"val\.de has 2 lines but .*val\.en has 1"):
        load_multi30k("val")


def test_unknown_split():
    with pytest.raises(ValueError, match="no split 'test'"):
        load_sst2("test")


# ---------------------------------------------------------------- the TSV parser


def write(tmp_path, content: bytes, name="x.tsv"):
    path = tmp_path / name
    path.write_bytes(content)
    return path


def test_glue_tsv_splits_on_last_tab_and_strips(tmp_path):
    path = write(tmp_path, b'sentence\tlabel\nit \'s "great" \t1\na\ttab inside \t0\n')
    assert load_glue_tsv(path) == [('it \'s "great"', 1), ("a\ttab inside", 0)]


def test_glue_tsv_accepts_crlf_and_bom(tmp_path):
    path = write(tmp_path, b"\xef\xbb\xbfsentence\tlabel\r\ngood \t1\r\n")
    assert load_glue_tsv(path) == [("good", 1)]


@pytest.mark.parametrize(
    "rows,line,what",
    [
        (b"ok \t1\nno tab here\n", 3, "expected 'sentence<TAB>label'"),
        (b"ok \t1\nok \t1\nbad label \t2\n", 4, "label '2'"),
        (b"bad label \tpositive\n", 2, "label 'positive'"),
        (b"ok \t1\n \t0\n", 3, "empty sentence"),
        (b"ok \t1\n\nok \t0\n", 3, "expected"),
        (b"arabic digit \t\xd9\xa1\n", 2, "label"),
    ],
)
def test_glue_tsv_malformed_row_names_file_and_line(tmp_path, rows, line, what):
    path = write(tmp_path, b"sentence\tlabel\n" + rows)
    with pytest.raises(DataError) as err:
        load_glue_tsv(path)
    assert f"{path}:{line}:" in str(err.value) and what in str(err.value)


def test_glue_tsv_bad_header(tmp_path):
    with pytest.raises(DataError, match=r"x\.tsv:1: expected the header"):
        load_glue_tsv(write(tmp_path, b"hello \t1\n"))
    with pytest.raises(DataError, match="empty file"):
        load_glue_tsv(write(tmp_path, b""))


def test_glue_tsv_not_utf8(tmp_path):
    path = write(tmp_path, "sentence\tlabel\ncaf\xe9 \t1\n".encode("latin-1"))
    with pytest.raises(DataError, match=r"x\.tsv: not UTF-8"):
        load_glue_tsv(path)


def test_glue_tsv_missing_file(tmp_path):
    with pytest.raises(DataError, match="cannot read"):
        load_glue_tsv(tmp_path / "nope.tsv")


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(body=st.binary(max_size=200), header=st.booleans())
def test_glue_tsv_random_bytes_parse_or_raise_data_error(tmp_path, body, header):
    path = write(tmp_path, (b"sentence\tlabel\n" if header else b"") + body, name="fuzz.tsv")
    try:
        rows = load_glue_tsv(path)
    except DataError:
        return
    assert all(isinstance(s, str) and s and label in (0, 1) for s, label in rows)
