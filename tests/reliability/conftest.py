"""Fixtures for the reliability matrix: the CLI in-process, tiny model folders, good and broken.

Every model here is seqlab's own class with random weights and a tokenizer
trained on a few sentences: the tests check what the commands do with bad
input, not what the models know. Broken folders are copies of a good one
with one thing wrong, so each case isolates one fault.
"""
from __future__ import annotations

import json
import shutil
import struct
from pathlib import Path
from types import SimpleNamespace

import pytest

SENTENCES = ["the cat sat on the mat", "a dog ran in the park", "the bird sang a song",
             "a good movie with a great plot", "a bad film and a dull story"] * 4


def _copy(src: Path, dst: Path, edit) -> Path:
    shutil.copytree(src, dst)
    edit(dst)
    return dst


def _edit_config(**changes):
    def edit(folder: Path) -> None:
        path = folder / "config.json"
        config = json.loads(path.read_text())
        for k, v in changes.items():
            if v is ...:
                config.pop(k, None)
            else:
                config[k] = v
        path.write_text(json.dumps(config))
    return edit


@pytest.fixture(scope="session")
def models(tmp_path_factory) -> SimpleNamespace:
    """Good tiny folders (gpt, bert, t5) and broken copies of the GPT one, each named for its fault."""
    import seqlab
    from seqlab.data import Tokenizer
    from seqlab.models import BertConfig, BertModel, GPT, GPTConfig, T5Config, T5ForConditionalGeneration

    root = tmp_path_factory.mktemp("models")
    bpe = Tokenizer.train_bpe(SENTENCES, 300, min_frequency=1)
    wordpiece = Tokenizer.train_wordpiece(SENTENCES, 80)
    seqlab.manual_seed(0)
    m = SimpleNamespace(root=root, bpe=bpe, wordpiece=wordpiece)
    m.gpt = root / "gpt"
    GPT(GPTConfig(vocab_size=bpe.vocab_size, n_positions=16, n_embd=16, n_layer=1, n_head=2)).save_pretrained(m.gpt)
    bpe.save(m.gpt)
    m.bert = root / "bert"
    BertModel(BertConfig(vocab_size=wordpiece.vocab_size, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                         intermediate_size=16, max_position_embeddings=12)).save_pretrained(m.bert)
    wordpiece.save(m.bert)
    m.t5 = root / "t5"
    T5ForConditionalGeneration(T5Config(vocab_size=bpe.vocab_size, d_model=16, d_kv=8, d_ff=16, num_layers=1,
                                        num_heads=2)).save_pretrained(m.t5)
    bpe.save(m.t5)

    def weights(edit):
        def apply(folder: Path) -> None:
            f = folder / "model.safetensors"
            f.write_bytes(edit(f.read_bytes()))
        return apply

    def header_lie(data: bytes) -> bytes:
        return struct.pack("<Q", len(data) * 2) + data[8:]

    def remove(*names):
        def apply(folder: Path) -> None:
            for n in names:
                (folder / n).unlink()
        return apply

    def write(name: str, data: bytes):
        def apply(folder: Path) -> None:
            (folder / name).write_bytes(data)
        return apply

    broken = {
        "truncated": weights(lambda b: b[:-100]),
        "garbled_header": weights(lambda b: b[:8] + b"\xff" * 16 + b[24:]),
        "header_lie": weights(header_lie),
        "empty_weights": weights(lambda b: b""),
        "no_weights": remove("model.safetensors"),
        "bad_bin": lambda f: ((f / "model.safetensors").unlink(), (f / "pytorch_model.bin").write_bytes(b"junk")),
        "wider": _edit_config(n_embd=32),
        "deeper": _edit_config(n_layer=2),
        "zero_layers": _edit_config(n_layer=0),
        "indivisible": _edit_config(n_head=3),
        "llama": _edit_config(model_type="llama"),
        "no_model_type": _edit_config(model_type=...),
        "config_latin1": write("config.json", '{"model_type": "gpt2", "n_embd": "\xe9"}'.encode("latin-1")),
        "config_list": write("config.json", b"[1, 2]"),
        "no_config": remove("config.json"),
        "tokenizer_latin1": write("tokenizer.json", b'{"version": "\xe9"}'),
        "vocab_latin1": lambda f: ((f / "tokenizer.json").unlink(), (f / "vocab.json").write_bytes(b'{"\xe9": 0}')),
        "no_tokenizer": remove("tokenizer.json", "vocab.json", "merges.txt"),
    }
    for name, edit in broken.items():
        setattr(m, name, _copy(m.gpt, root / name, edit))
    # A model with a smaller vocabulary than its tokenizer: ids >= vocab_size.
    m.small_vocab = root / "small_vocab"
    m.small_vocab.mkdir()
    GPT(GPTConfig(vocab_size=40, n_positions=16, n_embd=16, n_layer=1, n_head=2)).save_pretrained(m.small_vocab)
    bpe.save(m.small_vocab)
    return m


@pytest.fixture(scope="session")
def toy_run(tmp_path_factory) -> Path:
    """A finished 6-step toy-classifier run (a classifier seqlab eval can read)."""
    from seqlab.train import runs

    out = tmp_path_factory.mktemp("toy") / "run"
    runs.train("toy-classifier", out, [({"max_steps": 6, "eval_every": 3}, "test")])
    return out


@pytest.fixture(scope="session")
def files(tmp_path_factory) -> SimpleNamespace:
    """Plain files and folders the cases point at: a regular file, an empty folder, bad TSVs, bad data dirs."""
    root = tmp_path_factory.mktemp("files")
    f = SimpleNamespace(root=root)
    f.file = root / "file.txt"
    f.file.write_text("not a folder\n")
    f.empty_dir = root / "empty"
    f.empty_dir.mkdir()
    f.bad_label = root / "bad_label.tsv"
    f.bad_label.write_text("sentence\tlabel\ngood movie\t1\nbad movie\t0\nodd movie\tmaybe\n")
    f.latin1 = root / "latin1.tsv"
    f.latin1.write_bytes("sentence\tlabel\ncaf\xe9 au lait\t1\n".encode("latin-1"))
    f.bad_toml = root / "bad.toml"
    f.bad_toml.write_bytes(b"max_steps = 3\n# caf\xe9\n")
    f.bad_sst2 = root / "bad_sst2"  # the right layout, the wrong bytes
    (f.bad_sst2 / "sst2").mkdir(parents=True)
    for name in ("train.tsv", "dev.tsv"):
        (f.bad_sst2 / "sst2" / name).write_text("sentence\tlabel\ntampered\t1\n")
    return f
