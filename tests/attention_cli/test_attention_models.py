"""`seqlab attention` on every family: GPT-2, T5, the chapter's Translator, Seq2Seq and a `seqlab train` run.

Tiny random models (see conftest.py): each run must write its files, and the
weights in attention.html must be the ones the model returns for the same ids.
"""
from __future__ import annotations

import csv
import os
from pathlib import Path

import numpy as np
import pytest

from attention_helpers import panel_counts, run_cli, stack_weights, viewer_data

TEXT = "the cat sat on the mat"
TARGET = "die katze sass"
REPO = Path(__file__).resolve().parents[2]


def _np(t) -> np.ndarray:
    from seqlab import backend

    return np.asarray(backend.to_numpy(t.data), dtype=np.float64)


def _rows_sum_to_one(w: np.ndarray, data: dict) -> None:
    np.testing.assert_allclose(w.sum(-1), 1.0, atol=w.shape[-1] * 0.5 * data["scale"] + 1e-9)


def _read_heads(path: Path) -> list[dict]:
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def test_gpt_causal_self_attention(model_dirs, bpe_tokenizer, tmp_path):
    import seqlab
    from seqlab.models.gpt import GPT

    code, stdout, stderr = run_cli(TEXT, "--model", str(model_dirs["gpt"]), "--out", str(tmp_path))
    assert code == 0, stderr
    assert {"attention.html", "attention.png", "layer_0.png", "layer_1.png", "heads.csv"} <= \
        {p.name for p in tmp_path.iterdir()}
    assert panel_counts(tmp_path / "attention.png")[:2] == (2, 2)
    data = viewer_data(tmp_path / "attention.html")
    drawn = stack_weights(data, "self")  # (2, 2, T, T)
    ids = np.asarray([bpe_tokenizer.encode(TEXT)])
    with seqlab.no_grad():
        ref = GPT.from_pretrained(model_dirs["gpt"])(ids, output_attentions=True).attentions
    np.testing.assert_allclose(drawn, np.stack([_np(a)[0] for a in ref]), atol=0.5 * data["scale"] + 1e-7)
    _rows_sum_to_one(drawn, data)
    assert np.triu(drawn, k=1).max() == 0.0  # a token never sees the tokens after it
    assert len(stdout.strip().splitlines()) == 2 + 2 * 2


def test_gpt_layers_option(model_dirs, tmp_path):
    code, _, stderr = run_cli(TEXT, "--model", str(model_dirs["gpt"]), "--layers", "-1", "--out", str(tmp_path))
    assert code == 0, stderr
    names = {p.name for p in tmp_path.iterdir()}
    assert "layer_1.png" in names and "layer_0.png" not in names  # files keep the model's layer numbers
    assert stack_weights(viewer_data(tmp_path / "attention.html"), "self").shape[0] == 1
    assert {r["layer"] for r in _read_heads(tmp_path / "heads.csv")} == {"1"}


def test_t5_encoder_decoder_cross(model_dirs, bpe_tokenizer, tmp_path):
    import seqlab
    from seqlab.models.t5 import T5ForConditionalGeneration

    code, stdout, stderr = run_cli(TEXT, "--model", str(model_dirs["t5"]), "--target", TARGET,
                                   "--out", str(tmp_path))
    assert code == 0, stderr
    names = {p.name for p in tmp_path.iterdir()}
    assert {"attention.html", "attention.png", "attention_decoder.png", "attention_cross.png", "heads.csv"} <= names
    assert {f"{k}_layer_{i}.png" for k in ("encoder", "decoder", "cross") for i in (0, 1)} <= names
    data = viewer_data(tmp_path / "attention.html")
    assert [s["id"] for s in data["stacks"]] == ["encoder", "decoder", "cross"]
    src = np.asarray([bpe_tokenizer.encode(TEXT)])
    dec = np.asarray([[0] + bpe_tokenizer.encode(TARGET)])  # decoder start (pad, 0), then the target
    model = T5ForConditionalGeneration.from_pretrained(model_dirs["t5"])
    with seqlab.no_grad():
        out = model(src, decoder_input_ids=dec, output_attentions=True)
    for kind, ref in (("encoder", out.encoder_attentions), ("decoder", out.decoder_attentions),
                      ("cross", out.cross_attentions)):
        drawn = stack_weights(data, kind)
        np.testing.assert_allclose(drawn, np.stack([_np(a)[0] for a in ref]), atol=0.5 * data["scale"] + 1e-7)
        _rows_sum_to_one(drawn, data)
    assert stack_weights(data, "cross").shape[2:] == (dec.shape[1], src.shape[1])  # target x source
    assert np.triu(stack_weights(data, "decoder"), k=1).max() == 0.0
    assert {r["stack"] for r in _read_heads(tmp_path / "heads.csv")} == {"encoder", "decoder"}
    assert "encoder self-attention" in stdout and "decoder self-attention" in stdout
    assert panel_counts(tmp_path / "attention_cross.png")[:2] == (2, 2)


def test_t5_writes_its_own_target(model_dirs, bpe_tokenizer):
    from seqlab.models.t5 import T5ForConditionalGeneration
    from seqlab.viz import extract_attention
    from seqlab.viz.extract import MAX_GENERATED

    model = T5ForConditionalGeneration.from_pretrained(model_dirs["t5"])
    att = extract_attention(model, bpe_tokenizer, TEXT)
    src = np.asarray([bpe_tokenizer.encode(TEXT)])
    generated = [int(i) for i in model.generate(src, max_new_tokens=MAX_GENERATED)[0]]
    if generated[-1] == model.config.eos_token_id:
        generated = generated[:-1]
    assert att.kind == "encoder-decoder"
    assert att.target_tokens == bpe_tokenizer.convert_ids_to_tokens(generated)
    assert att.attentions["cross"][0].shape == (2, len(generated), src.shape[1])


def test_translator_folder(model_dirs, tmp_path):
    code, _, stderr = run_cli(TEXT, "--model", str(model_dirs["translator"]), "--target", TARGET,
                              "--out", str(tmp_path))
    assert code == 0, stderr
    data = viewer_data(tmp_path / "attention.html")
    assert [s["id"] for s in data["stacks"]] == ["encoder", "decoder", "cross"]
    cross = next(s for s in data["stacks"] if s["id"] == "cross")
    assert cross["keys"][-1] == "</s>" and cross["queries"][0] == "<s>"  # source ends with </s>, target starts <s>
    for kind in ("encoder", "decoder", "cross"):
        _rows_sum_to_one(stack_weights(data, kind), data)
    assert {"attention_decoder.png", "attention_cross.png", "heads.csv"} <= {p.name for p in tmp_path.iterdir()}


def test_seq2seq_glue_and_alignment(model_dirs, bpe_tokenizer, tmp_path):
    """Seq2Seq: its additive attention (T_tgt, T_src) as a one-layer, one-head cross stack."""
    import seqlab
    from seqlab.cli.attention import load_model, write_outputs
    from seqlab.viz import extract_attention

    model, tok, _ = load_model(str(model_dirs["seq2seq"]))
    att = extract_attention(model, tok, TEXT, target=TARGET)
    src = np.asarray([bpe_tokenizer.encode(TEXT) + [2]])     # ... </s>
    dec = np.asarray([[1] + bpe_tokenizer.encode(TARGET)])   # <s> ...
    with seqlab.no_grad():
        _, ref = model(src, dec, return_attention=True)      # (1, T_tgt, T_src)
    assert att.kind == "seq2seq" and list(att.stacks()) == ["cross"]
    np.testing.assert_array_equal(att.attentions["cross"][0], _np(ref))
    np.testing.assert_allclose(att.attentions["cross"][0].sum(-1), 1.0, atol=1e-5)
    written, table = write_outputs(att, tmp_path, "seq2seq")
    names = {p.name for p in written}
    assert {"attention.html", "attention.png", "alignment.png"} <= names and "heads.csv" not in names
    assert all(p.is_file() for p in written)
    assert table.splitlines()[0].startswith("target token") and len(table.splitlines()) == 1 + dec.shape[1]
    # rows are labelled by what each step predicts: the target's tokens, then </s>
    assert att.target_tokens == tok.convert_ids_to_tokens(np.asarray(bpe_tokenizer.encode(TARGET) + [2]))
    code, _, stderr = run_cli(TEXT, "--model", str(model_dirs["seq2seq"]), "--out", str(tmp_path / "cli"))
    assert code == 0, stderr
    assert (tmp_path / "cli" / "alignment.png").is_file()


def test_seqlab_train_run_folder(tmp_path):
    """A run folder from `seqlab train sst2-transformer` (2 steps): model rebuilt from its config.json."""
    from seqlab.cli.main import main

    data = Path(os.environ.get("SEQLAB_DATA") or REPO.parent / "shared" / "data")
    if not (data / "sst2").is_dir():
        pytest.skip(f"SST-2 not found under {data} (set SEQLAB_DATA)")
    run = tmp_path / "run"
    settings = ["max_steps=2", "max_train_examples=100", "max_dev_examples=10", "vocab_size=200", "d_model=16",
                "nhead=2", "num_layers=2", "dim_feedforward=32", "eval_every=2", "checkpoint_every=2",
                "batch_size=8"]
    argv = ["train", "sst2-transformer", "--out", str(run), "--data-dir", str(data), "--no-progress"]
    assert main(argv + [a for s in settings for a in ("--set", s)]) == 0
    code, stdout, stderr = run_cli("a moving and smart film", "--model", str(run), "--out", str(tmp_path / "o"))
    assert code == 0, stderr
    drawn = stack_weights(viewer_data(tmp_path / "o" / "attention.html"), "self")
    assert drawn.shape[:2] == (2, 2)
    assert "sst2-transformer run" in viewer_data(tmp_path / "o" / "attention.html")["title"]


def test_character_gpt_shows_its_space_tokens(tmp_path, monkeypatch):
    """A character-level GPT (shakespeare-gpt's CharTokenizer): its space and newline tokens show as "␣" and
    "⏎" in attention.html and on the PNG axes, not as blank rows; the tooltip keeps the text itself."""
    import seqlab
    from seqlab.data.char_tokenizer import CharTokenizer
    from seqlab.models.gpt import GPT, GPTConfig
    from seqlab.viz import grid

    tok = CharTokenizer("ROMEO: good night\nJULIET:")
    folder = tmp_path / "char-gpt"
    seqlab.manual_seed(0)
    GPT(GPTConfig(vocab_size=tok.vocab_size, n_embd=16, n_layer=1, n_head=2, n_positions=32)).save_pretrained(folder)
    tok.save(folder)
    drawn, draw = [], grid.draw_heatmap

    def recording(ax, *a, **k):
        im = draw(ax, *a, **k)
        drawn.append([t.get_text() for t in ax.get_yticklabels()])
        return im

    monkeypatch.setattr(grid, "draw_heatmap", recording)
    code, _, stderr = run_cli("ROMEO: good\nnight", "--model", str(folder), "--out", str(tmp_path / "o"))
    assert code == 0, stderr
    (stack,) = viewer_data(tmp_path / "o" / "attention.html")["stacks"]
    labels = ["R", "O", "M", "E", "O", ":", "\u2423", "g", "o", "o", "d", "\u23ce", "n", "i", "g", "h", "t"]
    assert stack["queries"] == stack["keys"] == labels
    assert stack["ktext"][6] == " " and stack["ktext"][11] == "\n"   # the tooltips quote the text itself
    assert drawn and all(d == labels for d in drawn if any(d))          # every panel that labels its rows
