"""`seqlab attention --model` on a Seq2Seq translation folder, as `seqlab experiment bottleneck` writes it.

Such a folder (`seqlab.translation._save_run`) holds model.safetensors
without the tied output weight, config.json, and one tokenizer per language
(src_tokenizer/, tgt_tokenizer/). The command must restore the tie and name
the source ids with the source tokenizer, the target ids with the target one.
"""
from __future__ import annotations

import numpy as np
import pytest

from attention_helpers import run_cli, viewer_data

SOURCES = ["ein hund lief im park", "die katze sass auf der matte", "ein vogel sang ein lied"] * 4
TARGETS = ["a dog ran in the park", "the cat sat on the mat", "a bird sang a song"] * 4
TEXT = "die katze lief im park"
TARGET = "the cat sat"


def _translation_folder(path, attention: str):
    """A tiny random Seq2Seq saved by the function `train_rnn_translation` saves its runs with."""
    import seqlab
    from seqlab.models.seq2seq import Seq2Seq, Seq2SeqConfig
    from seqlab.translation import _save_run, build_tokenizers

    tok_src, tok_tgt = build_tokenizers(SOURCES, TARGETS, vocab_size=300)
    seqlab.manual_seed(0)
    cfg = Seq2SeqConfig(tok_src.vocab_size, tok_tgt.vocab_size, emb_dim=8, enc_hidden=8, dec_hidden=16, attn_dim=8,
                        attention=attention)
    model = Seq2Seq(cfg)
    path.mkdir()
    _save_run(path, model, cfg, tok_src, tok_tgt, ["the cat"], {"examples": [{"de": TEXT, "en": TARGET}]})
    return path, model.eval(), tok_src, tok_tgt


@pytest.fixture(scope="module")
def translation(tmp_path_factory):
    """(folder, model, source tokenizer, target tokenizer) of an additive-attention model_additive folder."""
    return _translation_folder(tmp_path_factory.mktemp("bottleneck") / "model_additive", "additive")


def test_a_translation_folder_is_saved_without_the_tied_output_weight(translation):
    from seqlab.hub import read_weights

    folder = translation[0]
    assert "generator.weight" not in read_weights(folder)  # the case `seqlab attention` failed on
    assert (folder / "src_tokenizer").is_dir() and (folder / "tgt_tokenizer").is_dir()


def test_attention_runs_a_translation_folder_with_each_side_its_own_tokenizer(translation, tmp_path):
    import seqlab

    folder, model, tok_src, tok_tgt = translation
    assert tok_src.encode(TARGET, add_special_tokens=False) != tok_tgt.encode(TARGET, add_special_tokens=False)
    code, stdout, stderr = run_cli(TEXT, "--model", str(folder), "--target", TARGET, "--out", str(tmp_path))
    assert code == 0, stderr
    assert {"attention.html", "attention.png", "alignment.png"} <= {p.name for p in tmp_path.iterdir()}
    src = tok_src.encode(TEXT, add_special_tokens=False) + [2]   # ... </s>
    tgt = tok_tgt.encode(TARGET, add_special_tokens=False)
    with seqlab.no_grad():
        _, ref = model(np.asarray([src]), np.asarray([[1] + tgt]), return_attention=True)  # (1, T_tgt, T_src)
    data = viewer_data(tmp_path / "attention.html")
    (cross,) = data["stacks"]
    assert cross["id"] == "cross" and cross["shape"] == [1, 1, len(tgt) + 1, len(src)]
    np.testing.assert_allclose(np.asarray(cross["attn"])[0, 0] * data["scale"], ref.numpy()[0], atol=data["scale"])
    assert cross["keys"] == tok_src.convert_ids_to_tokens(src)
    assert cross["queries"] == tok_tgt.convert_ids_to_tokens(tgt + [2])  # what each step predicts, then </s>
    assert stdout.splitlines()[0].startswith("target token") and len(stdout.splitlines()) == len(tgt) + 2


def test_without_a_target_the_model_writes_its_own(translation, tmp_path):
    folder, model, tok_src, tok_tgt = translation
    code, _, stderr = run_cli(TEXT, "--model", str(folder), "--out", str(tmp_path))
    assert code == 0, stderr
    src = np.asarray([tok_src.encode(TEXT, add_special_tokens=False) + [2]])
    greedy = model.generate(src, max_len=32)[0]
    (cross,) = viewer_data(tmp_path / "attention.html")["stacks"]
    assert cross["queries"] == tok_tgt.convert_ids_to_tokens(greedy + [2])
    assert (tmp_path / "alignment.png").is_file()


def test_a_translation_folder_without_attention_is_a_one_line_error(tmp_path):
    _translation_folder(tmp_path / "model_none", "none")
    code, _, stderr = run_cli(TEXT, "--model", str(tmp_path / "model_none"), "--out", str(tmp_path / "out"))
    assert code == 1 and stderr.count("\n") == 1
    assert "attention='none'" in stderr and "no attention weights to show" in stderr


def test_the_alignment_table_shows_byte_level_tokens_as_text():
    """Byte-level BPE tokens ("Ġdog", "lÃ¤uft") print as the words they encode; WordPiece tokens as they are."""
    from seqlab.cli.attention import readable_tokens
    from seqlab.data import Tokenizer

    tok = Tokenizer.train_bpe(["ein Hund läuft im Park", "a dog runs in the park"] * 20, 300,
                              special_tokens=["<pad>", "<s>", "</s>"])
    ids = tok.encode("ein Hund läuft", add_special_tokens=False)
    raw = tok.convert_ids_to_tokens(ids)
    assert any("Ġ" in t for t in raw)                                   # the run's raw tokens carry markers
    assert "".join(readable_tokens(raw)).replace(" ", "") == "einHundläuft"
    assert readable_tokens(["the", "##ing", "läuft", "[SEP]"]) == ["the", "##ing", "läuft", "[SEP]"]
