"""Token labels: one display rule (`seqlab.viz.labels`) for the HTML viewer, the PNG heatmaps and the tables."""
import json
import re

import pytest

from seqlab.viz import attention_html, token_label, token_labels
from seqlab.viz.labels import is_byte_level, token_text


def _bpe():
    from seqlab.data import Tokenizer

    return Tokenizer.train_bpe(["ein Hund läuft im Park", "a dog runs in the park"] * 20, 300,
                               special_tokens=["<pad>", "<s>", "</s>"])


def test_whitespace_shows_as_symbols():
    assert [token_label(t) for t in (" ", "\n", "\t", "", "  a")] == ["\u2423", "\u23ce", "\u2192", "\u2205",
                                                                    "\u2423\u2423a"]
    assert token_label("\u3000") == "\u2423"  # other whitespace: "␣" as well
    assert token_label("a\x16") == "a<U+0016>" and token_labels(["\u0116"]) == [["<U+0016>"]]  # no glyph: its code
    assert token_labels(["[CLS]", "the", "##ing", "läuft", "[SEP]"]) == [["[CLS]", "the", "##ing", "läuft", "[SEP]"]]
    assert token_labels(["\u2581Das", "\u2581", "Haus"]) == [["\u2423Das", "\u2423", "Haus"]]  # SentencePiece


def test_byte_level_tokens_read_as_their_text():
    tok = _bpe()
    raw = tok.convert_ids_to_tokens(tok.encode("ein Hund läuft", add_special_tokens=False) + [2])
    assert any("Ġ" in t for t in raw) and any("Ã" in t for t in raw)  # the tokenizer's own spelling
    (labels,) = token_labels(raw)
    assert "".join(labels) == "ein\u2423Hund\u2423läuft</s>" and not any("Ġ" in t for t in labels)
    assert is_byte_level(raw) and token_text(raw[1], True) == " Hund"
    # a word without "Ġ" is decided by the bytes: "lÃ¤uft" is UTF-8 for "läuft", "läuft" is Latin-1 text
    assert is_byte_level(["l\u00c3\u00a4uft"]) and not is_byte_level(["läuft"]) and not is_byte_level(["man"])
    # a character cut across tokens: its bytes, as SentencePiece's byte fallback writes them
    assert token_labels(["Ġl", "\u00c3", "\u00a4", "uft"]) == [["\u2423l", "<0xC3>", "<0xA4>", "uft"]]
    # labels are labels of themselves: a list passed twice reads the same
    assert token_labels(labels) == [labels] and token_labels(*token_labels(raw, ["ĠMann"])) == token_labels(raw,
                                                                                                        ["ĠMann"])


def test_source_and_target_are_decided_together():
    src, tgt = token_labels(["Ein", "ĠMann"], ["A", "man"])
    assert src == ["Ein", "\u2423Mann"] and tgt == ["A", "man"]


@pytest.mark.parametrize("tokens", [["R", "O", ":", " ", "g", "o", "\n", "t"], ["Ein", "ĠMann", "Ġl\u00c3\u00a4uft"]])
def test_html_and_png_show_the_same_labels(tokens, softmax_stack):
    from matplotlib.figure import Figure

    from seqlab.viz.grid import draw_heatmap

    T = len(tokens)
    view = attention_html(softmax_stack(1, 1, T, T), tokens)
    data = json.loads(re.search(r'id="seqlab-data">(.*?)</script>', view.html, re.S).group(1))
    (stack,) = data["stacks"]
    (labels,) = token_labels(tokens)
    assert stack["queries"] == stack["keys"] == labels
    assert stack["ktext"] == [token_text(t, is_byte_level(tokens)) for t in tokens]  # the tooltip quotes these
    assert "Ġ" not in view.html
    ax = Figure().add_subplot()
    draw_heatmap(ax, softmax_stack(1, 1, T, T)[0, 0], tokens, tokens, panel_w=6.0, panel_h=6.0)
    assert [t.get_text() for t in ax.get_xticklabels()] == labels == [t.get_text() for t in ax.get_yticklabels()]
