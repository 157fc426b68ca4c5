"""safetensors I/O, configs, key maps and from/save_pretrained errors (no transformers needed)."""
from __future__ import annotations

import json
import struct

import numpy as np
import pytest

import seqlab
from seqlab.errors import CheckpointError, ConfigError
from seqlab.hub import keymap, load_file, read_header, resolve, save_file
from seqlab.models import AutoModel, BertConfig, BertModel, GPT, GPTConfig, T5Config


def tiny_bert(**kw) -> BertModel:
    seqlab.manual_seed(0)
    cfg = dict(vocab_size=40, hidden_size=8, num_hidden_layers=1, num_attention_heads=2, intermediate_size=16,
               max_position_embeddings=16)
    cfg.update(kw)
    return BertModel(BertConfig(**cfg))


# ---- safetensors ------------------------------------------------------------------------
def test_safetensors_round_trip_matches_reference_reader(tmp_path):
    st_np = pytest.importorskip("safetensors.numpy")
    arrays = {"f32": np.arange(6, dtype=np.float32).reshape(2, 3), "f64": np.linspace(0, 1, 5),
              "i64": np.arange(4, dtype=np.int64), "f16": np.ones((2, 2), np.float16), "b": np.array([True, False]),
              "empty": np.zeros((0, 3), np.float32), "scalar": np.array(3.5, np.float32),
              "transposed": np.arange(6, dtype=np.float32).reshape(2, 3).T}
    save_file(arrays, tmp_path / "a.safetensors")
    ref = st_np.load_file(str(tmp_path / "a.safetensors"))
    ours = load_file(tmp_path / "a.safetensors")
    assert set(ref) == set(ours) == set(arrays)
    for k, v in arrays.items():
        assert ours[k].shape == ref[k].shape == v.shape, k  # a 0-d array stays 0-d (shape [] in the header)
        assert ours[k].dtype == v.dtype and np.array_equal(ours[k], v) and np.array_equal(ref[k], v)
    # and files written by the reference writer read back the same
    contiguous = {k: v for k, v in arrays.items() if k != "transposed"}  # the reference writes a view's memory as is
    st_np.save_file(contiguous, str(tmp_path / "b.safetensors"))
    for k, v in load_file(tmp_path / "b.safetensors").items():
        assert np.array_equal(v, arrays[k])


def test_save_file_refuses_names_that_are_not_strings(tmp_path):
    with pytest.raises(TypeError, match="names are strings; got 1 \\(int\\)"):
        save_file({1: np.zeros(2, np.float32)}, tmp_path / "a.safetensors")
    assert not (tmp_path / "a.safetensors").exists()


def test_a_module_with_a_0d_buffer_reloads_its_own_file(tmp_path):
    model = seqlab.nn.Linear(2, 3)
    model.register_buffer("count", seqlab.tensor(np.array(7.0, np.float32)))
    save_file(model.state_dict(), tmp_path / "m.safetensors")
    other = seqlab.nn.Linear(2, 3)
    other.register_buffer("count", seqlab.tensor(np.array(0.0, np.float32)))
    other.load_state_dict(load_file(tmp_path / "m.safetensors"))
    assert other.count.shape == () and other.count.item() == 7.0
    np.testing.assert_array_equal(other.weight.numpy(), model.weight.numpy())


def test_bf16_is_widened_to_float32(tmp_path):
    x = np.array([1.5, -2.25, 3e-3], dtype=np.float32)
    raw = (x.view(np.uint32) >> 16).astype("<u2")  # exact for these values' top bits
    header = json.dumps({"w": {"dtype": "BF16", "shape": [3], "data_offsets": [0, 6]}}).encode()
    (tmp_path / "bf.safetensors").write_bytes(struct.pack("<Q", len(header)) + header + raw.tobytes())
    out = load_file(tmp_path / "bf.safetensors")["w"]
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, x, rtol=1e-2)


def _write(path, header: dict, data: bytes, claimed_size: int | None = None) -> None:
    h = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(h) if claimed_size is None else claimed_size) + h + data)


GOOD = {"w": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 16]}}


@pytest.mark.parametrize("case, match", [
    ("short", "truncated"),
    ("header_lie", "exceeds the file"),
    ("not_json", "not valid JSON"),
    ("truncated_data", "truncated"),
    ("bad_count", "needs 16 bytes"),
    ("overlap", "overlap"),
    ("bad_dtype", "unknown dtype"),
    ("negative_offsets", "invalid data_offsets"),
])
def test_corrupt_safetensors_raise_checkpoint_error(tmp_path, case, match):
    p = tmp_path / "bad.safetensors"
    data = np.arange(4, dtype=np.float32).tobytes()
    if case == "short":
        p.write_bytes(b"\x01\x02\x03")
    elif case == "header_lie":
        _write(p, GOOD, data, claimed_size=10**6)
    elif case == "not_json":
        p.write_bytes(struct.pack("<Q", 5) + b"{oops" + data)
    elif case == "truncated_data":
        _write(p, GOOD, data[:10])
    elif case == "bad_count":
        _write(p, {"w": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 12]}}, data)
    elif case == "overlap":
        _write(p, {"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
                   "b": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}}, data)
    elif case == "bad_dtype":
        _write(p, {"w": {"dtype": "Q7", "shape": [2], "data_offsets": [0, 8]}}, data)
    elif case == "negative_offsets":
        _write(p, {"w": {"dtype": "F32", "shape": [2], "data_offsets": [8, 0]}}, data)
    with pytest.raises(CheckpointError, match=match):
        load_file(p)


def test_truncated_checkpoint_folder_fails_before_building_arrays(tmp_path):
    tiny_bert().save_pretrained(tmp_path)
    f = tmp_path / "model.safetensors"
    header, _, start = read_header(f)
    f.write_bytes(f.read_bytes()[:start + 100])
    with pytest.raises(CheckpointError, match="truncated"):
        BertModel.from_pretrained(tmp_path)


# ---- configs ----------------------------------------------------------------------------------
def test_config_round_trip_keeps_unknown_keys_and_maps_labels():
    d = {"model_type": "bert", "hidden_size": 8, "num_attention_heads": 2, "architectures": ["BertModel"],
         "transformers_version": "4.8.2", "id2label": {"0": "neg", "1": "pos", "2": "mixed"}}
    c = BertConfig.from_dict(d)
    assert c.hidden_size == 8 and c.num_labels == 3
    assert c.extra["transformers_version"] == "4.8.2"
    out = c.to_dict()
    assert out["transformers_version"] == "4.8.2" and out["model_type"] == "bert"
    assert out["id2label"] == {"0": "neg", "1": "pos", "2": "mixed"} and out["label2id"]["pos"] == 1
    assert BertConfig.from_dict(out) == c


def test_config_aliases_as_transformers_attribute_map():
    c = GPTConfig.from_dict({"hidden_size": 16, "num_attention_heads": 4, "n_layer": 1})
    assert c.n_embd == 16 and c.hidden_size == 16 and c.n_head == 4


@pytest.mark.parametrize("cls, kw, match", [
    (BertConfig, {"hidden_size": 10, "num_attention_heads": 3}, r"hidden_size \(10\).*num_attention_heads \(3\)"),
    (BertConfig, {"hidden_act": "wiggle"}, "wiggle"),
    (BertConfig, {"hidden_dropout_prob": 1.5}, "1.5"),
    (GPTConfig, {"n_layer": 0}, "n_layer"),
    (T5Config, {"feed_forward_proj": "double-gelu"}, "double-gelu"),
    (BertConfig, {"position_embedding_type": "relative_key"}, "relative_key"),
])
def test_invalid_configs_name_the_values(cls, kw, match):
    with pytest.raises(ConfigError, match=match):
        cls(**kw)
    with pytest.raises(ValueError):  # ConfigError is a ValueError
        cls(**kw)


def test_t5_scale_follows_tie_unless_given():
    assert T5Config(tie_word_embeddings=True).scale_decoder_outputs is True
    assert T5Config(tie_word_embeddings=False).scale_decoder_outputs is False
    assert T5Config(tie_word_embeddings=True, scale_decoder_outputs=False).scale_decoder_outputs is False


# ---- names, folders, errors -------------------------------------------------------------------
def test_pretrained_names_resolve_to_the_bundled_minilm(minilm_dir):
    for name in ("minilm", "all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2"):
        assert resolve(name) == resolve(str(minilm_dir))
    with pytest.raises(CheckpointError, match="no-such-model"):
        resolve("no-such-model")


def test_wrong_class_and_unknown_model_type_are_clear_errors(tmp_path):
    tiny_bert().save_pretrained(tmp_path)
    with pytest.raises(CheckpointError, match="'bert'.*GPT needs 'gpt2'"):
        GPT.from_pretrained(tmp_path)
    cfg = json.loads((tmp_path / "config.json").read_text())
    cfg["model_type"] = "llama"
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(CheckpointError, match="unknown model_type 'llama'"):
        AutoModel.from_pretrained(tmp_path)
    with pytest.raises(CheckpointError, match="neither a model folder nor a known pretrained name"):
        BertModel.from_pretrained(tmp_path / "missing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(CheckpointError, match="no config.json"):
        BertModel.from_pretrained(tmp_path / "empty")


def test_missing_unexpected_and_mismatched_keys_are_named(tmp_path):
    m = tiny_bert()
    m.save_pretrained(tmp_path)
    state = load_file(tmp_path / "model.safetensors")
    # a missing body weight is an error naming it
    del state["encoder.layer.0.intermediate.dense.weight"]
    state["encoder.layer.0.extra.weight"] = np.zeros(3, np.float32)
    save_file(state, tmp_path / "model.safetensors")
    with pytest.raises(CheckpointError, match=r"missing keys: encoder\.layer\.0\.intermediate\.dense\.weight"):
        BertModel.from_pretrained(tmp_path)
    # unexpected keys are reported (strict=True: an error)
    state["encoder.layer.0.intermediate.dense.weight"] = m.encoder.layer[0].intermediate.dense.weight.numpy()
    save_file(state, tmp_path / "model.safetensors")
    loaded = BertModel.from_pretrained(tmp_path)
    assert loaded.loading_info.unexpected_keys == ["encoder.layer.0.extra.weight"]
    with pytest.raises(CheckpointError, match=r"unexpected keys: encoder\.layer\.0\.extra\.weight"):
        BertModel.from_pretrained(tmp_path, strict=True)
    # a wrong shape names the key and both shapes
    state["pooler.dense.weight"] = np.zeros((8, 7), np.float32)
    save_file(state, tmp_path / "model.safetensors")
    with pytest.raises(CheckpointError, match=r"pooler\.dense\.weight: checkpoint \(8, 7\) vs model \(8, 8\)"):
        BertModel.from_pretrained(tmp_path)


def test_legacy_gamma_beta_names_and_fresh_heads(tmp_path):
    m = tiny_bert()
    m.save_pretrained(tmp_path)
    state = load_file(tmp_path / "model.safetensors")
    legacy = {k.replace("LayerNorm.weight", "LayerNorm.gamma").replace("LayerNorm.bias", "LayerNorm.beta"): v
              for k, v in state.items()}
    assert any(k.endswith("gamma") for k in legacy)
    save_file(legacy, tmp_path / "model.safetensors")
    back = BertModel.from_pretrained(tmp_path)
    ids = np.array([[1, 5, 7, 2]])
    np.testing.assert_array_equal(back(ids).last_hidden_state.numpy(), m.eval()(ids).last_hidden_state.numpy())
    # a classifier on this body: the head is fresh, listed as missing, the body loads (prefix added)
    from seqlab.models import BertForSequenceClassification
    clf = BertForSequenceClassification.from_pretrained(tmp_path, num_labels=3)
    assert sorted(clf.loading_info.missing_keys) == ["classifier.bias", "classifier.weight"]
    assert clf.classifier.out_features == 3
    np.testing.assert_array_equal(clf.bert.embeddings.word_embeddings.weight.numpy(),
                                  m.embeddings.word_embeddings.weight.numpy())


def test_gpt2_conv1d_transposes_are_a_table(tmp_path):
    seqlab.manual_seed(1)
    g = GPT(GPTConfig(vocab_size=30, n_positions=8, n_embd=8, n_layer=1, n_head=2))
    g.save_pretrained(tmp_path)
    state = load_file(tmp_path / "model.safetensors")
    assert "lm_head.weight" not in state  # tied: stored once, as transformers does
    for suffix in keymap.GPT2_TRANSPOSED:
        key = "transformer.h.0." + suffix
        own = dict(g.named_parameters())[key].numpy()
        np.testing.assert_array_equal(state[key], own.T)  # Conv1D layout (in, out) in the file
    back = GPT.from_pretrained(tmp_path)
    ids = np.array([[3, 4, 5]])
    np.testing.assert_array_equal(back(ids).logits.numpy(), g.eval()(ids).logits.numpy())
    assert back.lm_head.weight is back.transformer.wte.weight


def test_pytorch_bin_fallback_uses_weights_only(tmp_path, torch):
    m = tiny_bert()
    m.save_pretrained(tmp_path)
    state = load_file(tmp_path / "model.safetensors")
    (tmp_path / "model.safetensors").unlink()
    torch.save({k: torch.tensor(v) for k, v in state.items()}, tmp_path / "pytorch_model.bin")
    back = BertModel.from_pretrained(tmp_path)
    ids = np.array([[1, 2, 3]])
    np.testing.assert_array_equal(back(ids).last_hidden_state.numpy(), m.eval()(ids).last_hidden_state.numpy())
    # a pickle that is not plain tensors is refused (weights_only)
    torch.save({"w": torch.zeros(2), "obj": _Evil()}, tmp_path / "pytorch_model.bin")
    with pytest.raises(CheckpointError, match="weights-only"):
        BertModel.from_pretrained(tmp_path)


class _Evil:
    pass
