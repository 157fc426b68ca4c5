"""The safetensors reader trusts nothing (issue 9, security).

tests/models/test_hub.py holds the basic corruptions (short file, header size beyond the file, header not
JSON, truncated data, byte count != dtype x shape, overlapping tensors, unknown dtype, reversed offsets).
Here: the rest of the header's ways to lie, then hypothesis: random bytes, damaged real files and random
headers must give arrays or `CheckpointError`, never another exception, and agree with the reference
`safetensors` package wherever it accepts a file.
"""
from __future__ import annotations

import json
import struct

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from seqlab.errors import CheckpointError
from seqlab.hub import safetensors as sf
from seqlab.hub.safetensors import load_file, save_file

DATA = np.arange(4, dtype=np.float32).tobytes()  # 16 bytes


def _write(path, header, data: bytes = DATA, size: int | None = None) -> None:
    raw = header if isinstance(header, bytes) else json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(raw) if size is None else size) + raw + data)


def _entry(dtype="F32", shape=(2, 2), offsets=(0, 16)):
    return {"dtype": dtype, "shape": list(shape), "data_offsets": list(offsets)}


@pytest.mark.parametrize("header, match", [
    ({"w": _entry(offsets=[-16, 0])}, "invalid data_offsets"),                       # negative offset
    ({"w": _entry(offsets=[0, 16, 32])}, "invalid data_offsets"),                    # three offsets
    ({"w": _entry(offsets=[0.0, 16.0])}, "invalid data_offsets"),                    # floats
    ({"w": _entry(offsets=[False, True])}, "invalid data_offsets"),                  # JSON booleans are not ints
    ({"w": _entry(shape=[True, 4])}, "invalid shape"),
    ({"w": _entry(shape=[-2, -2])}, "invalid shape"),
    ({"w": _entry(shape=[2**64, 1])}, "invalid shape"),
    ({"w": _entry(shape=[1] * 33, offsets=[0, 4])}, "invalid shape"),                # more dims than NumPy has
    ({"w": _entry(shape=[2**32, 2**32], offsets=[0, 0])}, "needs"),                  # 2**64 elements: int64 wraps to 0
    ({"w": _entry(shape=[0, 2**62], offsets=[0, 0])}, "too big"),                    # no bytes, still no array
    ({"w": _entry(offsets=[16, 32])}, "ends at byte 32"),                            # beyond the data
    ({"w": _entry(dtype="F64", shape=[2, 2])}, "needs 32 bytes"),                    # dtype x shape != span
    ({"a": _entry(shape=[4], offsets=[0, 16]), "b": _entry(shape=[2], offsets=[8, 16])}, "overlap"),
    ({"w": {"dtype": "F32", "shape": [4]}}, "needs dtype, shape and data_offsets"),
    ({"w": [0, 16]}, "needs dtype, shape and data_offsets"),
    ({"__metadata__": ["format", "pt"], "w": _entry(shape=[4])}, "__metadata__"),
    ([{"w": 1}], "must be a JSON object"),
    (b"[" * 100_000, "nested too deeply"),
    (b"\xff\xfe{}", "not valid JSON"),
])
def test_header_lies_are_refused(tmp_path, header, match):
    p = tmp_path / "bad.safetensors"
    _write(p, header)
    with pytest.raises(CheckpointError, match=match) as e:
        load_file(p)
    assert str(p) in str(e.value)


def test_header_larger_than_the_limit_is_refused_before_reading(tmp_path, monkeypatch):
    p = tmp_path / "big.safetensors"
    _write(p, {"w": _entry(shape=[4])})
    monkeypatch.setattr(sf, "MAX_HEADER_BYTES", 16)
    with pytest.raises(CheckpointError, match="exceeds the limit of 16"):
        load_file(p)


def test_shard_index_cannot_point_outside_the_folder(tmp_path):
    from seqlab.hub import read_weights

    save_file({"w": np.zeros(2, np.float32)}, tmp_path / "evil.safetensors")
    folder = tmp_path / "model"
    folder.mkdir()
    for shard, match in (("../evil.safetensors", "plain file name"), (7, "plain file name"),
                         ("missing.safetensors", "cannot read")):
        (folder / "model.safetensors.index.json").write_text(json.dumps({"weight_map": {"w": shard}}))
        with pytest.raises(CheckpointError, match=match):
            read_weights(folder)


# ---------------------------------------------------------------- fuzzing

def _must_load_or_refuse(path) -> dict | None:
    """load_file's result, or None for a CheckpointError; any other exception fails the test."""
    try:
        out = load_file(path)
    except CheckpointError:
        return None
    header, _, _ = sf.read_header(path)
    for name, arr in out.items():  # what it returns is what the header promised
        e = header[name]
        assert tuple(arr.shape) == tuple(e["shape"])
        b, end = e["data_offsets"]
        assert arr.nbytes == (end - b) * (2 if e["dtype"] == "BF16" else 1)  # BF16 is widened to float32
    return out


SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@SETTINGS
@given(data=st.binary(max_size=200))
def test_random_bytes(tmp_path, data):
    p = tmp_path / "random.safetensors"
    p.write_bytes(data)
    assert _must_load_or_refuse(p) is None or len(data) >= 8


@pytest.fixture(scope="module")
def good_file(tmp_path_factory):
    p = tmp_path_factory.mktemp("st") / "good.safetensors"
    save_file({"a": np.arange(6, dtype=np.float32).reshape(2, 3), "b": np.arange(3, dtype=np.int64),
               "c": np.ones((2, 2), dtype=np.float16)}, p)
    return p.read_bytes()


@SETTINGS
@given(cut=st.integers(0, 400), flips=st.lists(st.tuples(st.integers(0, 400), st.integers(1, 255)), max_size=4))
def test_damaged_real_files(tmp_path, good_file, cut, flips):
    data = bytearray(good_file[:len(good_file) - cut % len(good_file)])
    for pos, x in flips:
        if data:
            data[pos % len(data)] ^= x
    p = tmp_path / "damaged.safetensors"
    p.write_bytes(bytes(data))
    _must_load_or_refuse(p)


DTYPES = st.sampled_from(["F32", "F64", "F16", "BF16", "I64", "I8", "U8", "BOOL", "Q4", "f32"])
INTS = st.one_of(st.integers(-3, 40), st.booleans(), st.just(2**63), st.floats(-1, 40))
ENTRY = st.fixed_dictionaries({"dtype": DTYPES, "shape": st.lists(INTS, max_size=3),
                               "data_offsets": st.lists(INTS, min_size=1, max_size=3)})


@SETTINGS
@given(entries=st.dictionaries(st.text("abc", min_size=1, max_size=2), ENTRY, max_size=3), extra=st.integers(0, 40))
def test_random_headers(tmp_path, entries, extra):
    p = tmp_path / "h.safetensors"
    _write(p, entries, data=bytes(range(extra)))
    _must_load_or_refuse(p)


ITEMSIZE = {"F32": 4, "F64": 8, "F16": 2, "BF16": 2, "I64": 8, "I8": 1, "U8": 1, "BOOL": 1}


@st.composite
def layouts(draw):
    """A valid header and data (tensors back to back), then maybe one lie: (header, data, lie)."""
    entries, offset = {}, 0
    for i in range(draw(st.integers(0, 3))):
        dtype = draw(st.sampled_from(sorted(ITEMSIZE)))
        shape = draw(st.lists(st.integers(0, 3), max_size=3))
        n = int(np.prod(shape, dtype=np.int64)) * ITEMSIZE[dtype]
        entries[f"t{i}"] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + n]}
        offset += n
    data = bytes(draw(st.lists(st.integers(0, 1), min_size=offset, max_size=offset)))  # 0/1: valid BOOLs too
    filled = sorted(k for k, v in entries.items() if v["data_offsets"][1] > v["data_offsets"][0])
    lie = draw(st.sampled_from([None, "dtype", "shape", "end", "short", "overlap"])) if filled else None
    e = entries[draw(st.sampled_from(filled))] if filled else None
    if lie == "dtype":
        e["dtype"] = {"F32": "F64", "F64": "F32", "F16": "F32", "BF16": "F64", "I64": "I8", "I8": "I64",
                      "U8": "F16", "BOOL": "F32"}[e["dtype"]]  # another item size
    elif lie == "shape":
        e["shape"] = e["shape"] + [2]
    elif lie == "end":
        e["data_offsets"][1] += 1
    elif lie == "short":
        data = data[:-1]
    elif lie == "overlap" and len(entries) > 1 and e["data_offsets"][0] > 0:
        e["data_offsets"] = [o - 1 for o in e["data_offsets"]]
    else:
        lie = None
    return entries, data, lie


@SETTINGS
@given(layout=layouts())
def test_layouts_agree_with_the_reference_reader(tmp_path, layout):
    from safetensors.numpy import load_file as reference

    entries, data, lie = layout
    p = tmp_path / "h.safetensors"
    _write(p, entries, data)
    ours = _must_load_or_refuse(p)
    try:
        theirs = reference(str(p))
    except Exception:  # noqa: BLE001 - the reference raises several kinds
        theirs = None
    if lie is None:
        assert ours is not None
        assert theirs is not None or any(e["dtype"] == "BF16" for e in entries.values())  # NumPy has no bfloat16
    if lie is not None:
        assert ours is None, lie  # every lie about sizes and places is caught
    if theirs is not None:  # wherever the reference reads a file, seqlab reads the same arrays
        assert ours is not None and ours.keys() == theirs.keys()
        for k in ours:
            np.testing.assert_array_equal(ours[k], theirs[k].astype(ours[k].dtype))
