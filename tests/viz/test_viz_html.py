"""The HTML viewer as text: self-contained, no network, data escaped, input checks."""
import json
import re

import pytest

from seqlab.viz import AttentionView, attention_html
from seqlab.viz.attention import _asset

TOKENS = ["[CLS]", "the", "cat", "sat", "[SEP]", "it", "purred", "[SEP]"]
T = len(TOKENS)


def _data(view: AttentionView) -> dict:
    m = re.search(r'<script type="application/json" id="seqlab-data">(.*?)</script>', view.html, re.S)
    return json.loads(m.group(1))


def test_self_contained_and_offline(tmp_path, softmax_stack):
    view = attention_html(softmax_stack(2, 3, T, T), TOKENS, title="pair", sep_index="auto")
    text = view.html
    assert text.startswith("<!DOCTYPE html>") and text.count("<script") == 2
    # nothing that could fetch: no URLs, no external scripts/styles/fonts/images
    assert not re.search(r"https?:|//cdn|<link|src=|@import|url\(|@font-face", text)
    path = view.save(tmp_path / "sub" / "a.html")
    assert path.read_text(encoding="utf-8") == text
    data = _data(view)
    (stack,) = data["stacks"]
    assert stack["shape"] == [2, 3, T, T] and stack["qseg"] == [0] * 5 + [1] * 3
    assert "</script" not in _asset("viewer.js") and "</style" not in _asset("viewer.css")


def test_tokens_cannot_break_out_of_the_script(softmax_stack):
    toks = ["</script><script>alert(1)</script>", "<!--", "a&b", "\u2028", "ok"]
    view = attention_html(softmax_stack(1, 1, 5, 5), toks, title="<b>t</b>")
    assert "alert(1)</script>" not in view.html and "<b>t</b>" not in view.html
    assert _data(view)["stacks"][0]["ktext"] == toks  # the JSON still decodes to the same tokens
    assert _data(view)["stacks"][0]["keys"][3] == "\u2423"  # shown: the line separator is whitespace


def test_repr_html_is_an_isolated_iframe(softmax_stack):
    view = attention_html(softmax_stack(1, 2, T, T), TOKENS)
    frame = view._repr_html_()
    assert frame.startswith("<iframe srcdoc=\"") and "<script" not in frame  # the document is escaped
    assert "AttentionView(" in repr(view)


def test_encoder_decoder_tabs(softmax_stack):
    src, tgt = TOKENS[:5], ["<s>", "le", "chat"]
    att = {"encoder": softmax_stack(2, 2, 5, 5), "decoder": softmax_stack(2, 2, 3, 3),
           "cross": softmax_stack(2, 2, 3, 5)}
    stacks = _data(attention_html(att, src, tgt))["stacks"]
    assert [s["id"] for s in stacks] == ["encoder", "decoder", "cross"]
    assert stacks[2]["queries"] == tgt and stacks[2]["keys"] == src


def test_errors(softmax_stack):
    with pytest.raises(ValueError, match=r"keys \['bogus'\]"):
        attention_html({"bogus": softmax_stack(1, 1, 5, 5)}, TOKENS[:5])
    with pytest.raises(ValueError, match="target_tokens"):
        attention_html({"cross": softmax_stack(1, 1, 3, 5)}, TOKENS[:5])
    with pytest.raises(ValueError, match=r"attentions\['cross'\] has shape \(1, 1, 3, 5\).*4 query and 5 key"):
        attention_html({"cross": softmax_stack(1, 1, 3, 5)}, TOKENS[:5], ["a", "b", "c", "d"])
    with pytest.raises(ValueError, match="sep_index 9 is out of range for 5 tokens"):
        attention_html(softmax_stack(1, 1, 5, 5), TOKENS[:5], sep_index=9)
    with pytest.raises(ValueError, match="segments has 3 entries but there are 5 tokens"):
        attention_html(softmax_stack(1, 1, 5, 5), TOKENS[:5], segments=[0, 0, 1])
    with pytest.raises(ValueError, match="view must be"):
        attention_html(softmax_stack(1, 1, 5, 5), TOKENS[:5], view="grid")
