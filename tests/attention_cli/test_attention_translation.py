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
    from seqlab.viz import token_labels

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
    keys, queries = token_labels(tok_src.convert_ids_to_tokens(src), tok_tgt.convert_ids_to_tokens(tgt + [2]))
    assert cross["keys"] == keys and cross["queries"] == queries  # what each step predicts, then </s>
    assert stdout.splitlines()[0].startswith("target token") and len(stdout.splitlines()) == len(tgt) + 2


def test_without_a_target_the_model_writes_its_own(translation, tmp_path):
    from seqlab.viz import token_labels

    folder, model, tok_src, tok_tgt = translation
    code, _, stderr = run_cli(TEXT, "--model", str(folder), "--out", str(tmp_path))
    assert code == 0, stderr
    src = np.asarray([tok_src.encode(TEXT, add_special_tokens=False) + [2]])
    greedy = model.generate(src, max_len=32)[0]
    (cross,) = viewer_data(tmp_path / "attention.html")["stacks"]
    _, queries = token_labels(tok_src.convert_ids_to_tokens(src[0]), tok_tgt.convert_ids_to_tokens(greedy + [2]))
    assert cross["queries"] == queries
    assert (tmp_path / "alignment.png").is_file()


def test_a_translation_folder_without_attention_is_a_one_line_error(tmp_path):
    _translation_folder(tmp_path / "model_none", "none")
    code, _, stderr = run_cli(TEXT, "--model", str(tmp_path / "model_none"), "--out", str(tmp_path / "out"))
    assert code == 1 and stderr.count("\n") == 1
    assert "attention='none'" in stderr and "no attention weights to show" in stderr


def _drawn_labels(monkeypatch) -> list[list[str]]:
    """Record the tick labels of every heatmap the PNG files get (x then y, per panel)."""
    from seqlab.viz import grid

    drawn, draw = [], grid.draw_heatmap

    def recording(ax, *a, **k):
        im = draw(ax, *a, **k)
        drawn.extend([[t.get_text() for t in ax.get_xticklabels()], [t.get_text() for t in ax.get_yticklabels()]])
        return im

    monkeypatch.setattr(grid, "draw_heatmap", recording)
    return drawn


def test_html_pngs_and_table_show_byte_level_tokens_alike(translation, tmp_path, monkeypatch):
    """Byte-level BPE tokens ("ĠMann", "lÃ¤uft") show as their text with the space made visible ("␣Mann",
    "läuft"), and the same in attention.html, the PNGs and the printed table; no "Ġ" anywhere."""
    from seqlab.viz import token_labels

    folder, _, tok_src, tok_tgt = translation
    drawn = _drawn_labels(monkeypatch)
    text, target = "die katze läuft im park", "the cat runs"
    code, stdout, stderr = run_cli(text, "--model", str(folder), "--target", target, "--out", str(tmp_path))
    assert code == 0, stderr
    src_raw = tok_src.convert_ids_to_tokens(tok_src.encode(text, add_special_tokens=False) + [2])
    tgt_raw = tok_tgt.convert_ids_to_tokens(tok_tgt.encode(target, add_special_tokens=False) + [2])
    assert any(t.startswith("Ġ") for t in src_raw) and any("Ã" in t for t in src_raw)  # what the tokenizer says
    src, tgt = token_labels(src_raw, tgt_raw)
    assert src[1].startswith("\u2423k") and src[-1] == "</s>"
    # "ä" is no token of this tiny vocabulary: its two UTF-8 bytes are two tokens, "Ã" and "¤", shown as bytes
    assert "".join(src).replace("\u2423", " ") == text.replace("ä", "<0xC3><0xA4>") + "</s>"
    (cross,) = viewer_data(tmp_path / "attention.html")["stacks"]
    assert cross["keys"] == src and cross["queries"] == tgt                      # the HTML
    assert drawn and all(d in (src, tgt) for d in drawn) and src in drawn and tgt in drawn  # every PNG's ticks
    rows = [line.split("  ")[0].rstrip() for line in stdout.splitlines()[1:]]
    assert rows == tgt                                                           # the printed table
    assert all(line.rsplit(" (", 1)[0].split("  ")[-1].strip() in src for line in stdout.splitlines()[1:])
    assert "Ġ" not in stdout + (tmp_path / "attention.html").read_text(encoding="utf-8")
    assert not any("Ġ" in t for d in drawn for t in d)
