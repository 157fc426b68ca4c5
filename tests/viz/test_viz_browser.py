"""The HTML viewer in a real headless Chromium: it draws, reacts, and never touches the network.

Skipped when playwright or /usr/bin/chromium is missing (see conftest.chromium).
"""
from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from matplotlib.image import imread

from seqlab.viz import attention_html

TOKENS = ["[CLS]", "the", "cat", "sat", "on", "the", "mat", ".", "[SEP]", "it", "purred", ".", "[SEP]"]
T = len(TOKENS)
BLUE, ORANGE = (0x1F, 0x77, 0xB4), (0xFF, 0x7F, 0x0E)  # head 0 and head 1 colours


class Viewer:
    """A page showing one saved viewer, recording console messages and requests."""

    def __init__(self, browser: Any, path: Path, **page_kw: Any) -> None:
        self.page = browser.new_page(viewport={"width": 1200, "height": 900}, **page_kw)
        self.console: list[str] = []
        self.requests: list[str] = []
        self.page.on("console", lambda m: self.console.append(f"{m.type}: {m.text}"))
        self.page.on("pageerror", lambda e: self.console.append(f"pageerror: {e}"))
        self.page.on("request", lambda r: self.requests.append(r.url))
        self.url = path.resolve().as_uri()
        self.page.goto(self.url)
        self.page.wait_for_selector("body[data-ready='1']", timeout=10_000)

    def pixels(self, selector: str) -> np.ndarray:
        """The element as an (h, w, 3) float array in [0, 1]."""
        return imread(io.BytesIO(self.page.locator(selector).screenshot()))[..., :3]

    def close_clean(self) -> None:
        self.page.close()
        assert [m for m in self.console if m.startswith(("error", "pageerror", "warning"))] == []
        assert self.requests == [self.url]  # the file itself, nothing else


def ink(px: np.ndarray, bg: float = 1.0) -> np.ndarray:
    """Mask of pixels that differ from a white background."""
    return np.abs(px - bg).max(-1) > 0.06


def share_in_colour(px: np.ndarray, rgb: tuple[int, int, int]) -> float:
    """Fraction of inked pixels whose colour is `rgb` blended over white at some opacity."""
    v = 1.0 - px[ink(px)]  # white - pixel = alpha * (white - colour)
    c = 1.0 - np.array(rgb) / 255.0
    cos = v @ c / (np.linalg.norm(v, axis=1) * np.linalg.norm(c) + 1e-9)
    return float((cos > 0.97).mean())


@pytest.fixture
def pair_view(tmp_path, softmax_stack, chromium):
    att = softmax_stack(3, 4, T, T, seed=1)
    view = attention_html(att, TOKENS, title="sentence pair", sep_index="auto", theme="light")
    path = view.save(tmp_path / "a.html")
    viewer = Viewer(chromium, path)
    yield viewer
    viewer.close_clean()


def test_head_view_draws_and_reacts(pair_view):
    v, page = pair_view, pair_view.page
    assert page.locator("#layer-select option").count() == 3
    assert page.locator(".head-toggle").count() == 4
    assert page.locator("#query-col .token").count() == T == page.locator("#key-col .token").count()
    base = v.pixels("#head-canvas")
    assert ink(base).mean() > 0.05  # lines, not a blank canvas

    page.select_option("#layer-select", "2")
    layer2 = v.pixels("#head-canvas")
    assert page.get_attribute("#head-canvas", "data-layer") == "2"
    assert (np.abs(layer2 - base).max(-1) > 0.1).mean() > 0.02  # another layer, other lines

    page.dblclick(".head-toggle[data-head='0']")  # head 0 alone: blue lines only
    assert page.locator(".head-toggle[aria-pressed='true']").count() == 1
    assert share_in_colour(v.pixels("#head-canvas"), BLUE) > 0.9
    page.click(".head-toggle[data-head='1']")  # add head 1 (orange)
    assert page.get_attribute(".head-toggle[data-head='1']", "aria-pressed") == "true"
    page.click(".head-toggle[data-head='0']")  # hide head 0: orange only
    assert page.get_attribute(".head-toggle[data-head='0']", "aria-pressed") == "false"
    only1 = v.pixels("#head-canvas")
    assert share_in_colour(only1, ORANGE) > 0.9 and share_in_colour(only1, BLUE) < 0.1

    page.click("#heads-all")
    full = ink(v.pixels("#head-canvas")).mean()
    page.hover(".token[data-side='q'][data-index='2']")  # "cat": only its lines
    assert page.locator(".token.focus").count() == 1
    focused = ink(v.pixels("#head-canvas")).mean()
    assert 0.002 < focused < full
    weights = page.eval_on_selector_all("#key-col .token", "els => els.map(e => e.dataset.weight)")
    weights = [float(w) for w in weights]
    assert len(weights) == T and max(weights) > 0.1
    page.mouse.move(1100, 850)  # leave: all lines again
    assert page.locator(".token.focus").count() == 0


def test_sentence_pair_segments(pair_view):
    page = pair_view.page
    assert page.locator("#query-col .token.seg-start").count() == 1  # the gap before "it"
    assert page.locator("#key-col .token.seg-b").count() == 4
    page.select_option("#segment-select", "0-1")  # A -> B
    assert page.locator("#query-col .token.dim").count() == 4  # queries of segment B dimmed
    assert page.locator("#key-col .token.dim").count() == T - 4


def test_model_view_thumbnails_and_detail(pair_view):
    v, page = pair_view, pair_view.page
    page.click("#view-model")
    assert page.is_hidden("#head-view") and page.is_visible("#model-grid")
    assert page.locator(".thumb").count() == 3 * 4
    thumb = v.pixels(".thumb[data-layer='2'][data-head='3']")
    assert thumb.std() > 0.05  # a heatmap, not a flat square
    page.click(".thumb[data-layer='1'][data-head='2']")
    assert page.is_visible("#detail")
    assert page.inner_text("#detail-title").endswith("layer 1 \u00b7 head 2")
    box = page.locator("#detail-canvas").bounding_box()
    assert box["width"] > 250 and box["height"] > 250
    page.mouse.move(box["x"] + box["width"] - 20, box["y"] + box["height"] - 20)
    assert "\u2192" in page.inner_text("#detail-readout") and "=" in page.inner_text("#detail-readout")
    page.click("#detail-to-head")  # back to the head view with only that head
    assert page.is_visible("#head-view") and page.input_value("#layer-select") == "1"
    assert page.locator(".head-toggle[aria-pressed='true']").get_attribute("data-head") == "2"
    page.click("#view-model")
    page.click(".thumb[data-layer='0'][data-head='0']")
    page.keyboard.press("Escape")
    assert page.is_hidden("#detail")


def test_theme_toggle(pair_view):
    page = pair_view.page
    light = page.evaluate("getComputedStyle(document.body).backgroundColor")
    page.click("#theme-toggle")
    assert page.get_attribute("html", "data-theme") == "dark"
    assert page.evaluate("getComputedStyle(document.body).backgroundColor") != light


def test_encoder_decoder_tabs(tmp_path, softmax_stack, chromium):
    src, tgt = TOKENS[:9], ["<s>", "le", "chat", "est", "assis"]
    att = {"encoder": softmax_stack(2, 2, 9, 9), "decoder": softmax_stack(3, 2, 5, 5, seed=2),
           "cross": softmax_stack(3, 2, 5, 9, seed=3)}
    v = Viewer(chromium, attention_html(att, src, tgt, theme="light").save(tmp_path / "ed.html"))
    page = v.page
    assert page.get_attribute("#tab-encoder", "aria-selected") == "true"
    assert page.locator("#layer-select option").count() == 2
    page.click("#tab-cross")
    assert page.get_attribute("#tab-cross", "aria-selected") == "true"
    assert page.locator("#query-col .token").count() == 5 and page.locator("#key-col .token").count() == 9
    assert page.locator("#layer-select option").count() == 3
    assert page.inner_text("#q-label").startswith("target") and page.inner_text("#k-label").startswith("source")
    assert ink(v.pixels("#head-canvas")).mean() > 0.03
    page.click("#view-model")
    assert page.locator(".thumb").count() == 3 * 2
    page.click("#tab-decoder")
    assert page.locator(".thumb").count() == 3 * 2 and page.is_visible("#model-grid")
    v.close_clean()


def test_inline_notebook_iframe(softmax_stack, chromium):
    page = chromium.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.set_content(attention_html(softmax_stack(1, 2, 5, 5), TOKENS[:5])._repr_html_())
    frame = page.frame_locator("iframe")
    frame.locator("body[data-ready='1']").wait_for(timeout=10_000)
    assert frame.locator(".thumb").count() == 0 and frame.locator("#key-col .token").count() == 5
    page.close()
    assert errors == []


def test_whitespace_tokens_show_and_tooltips_quote_their_text(tmp_path, softmax_stack, chromium):
    """A character model's space shows as "␣" in the columns (not an empty row); hovering it quotes " "."""
    toks = ["R", "O", ":", " ", "g", "\n", "t"]
    path = attention_html(softmax_stack(1, 2, 7, 7), toks, theme="light").save(tmp_path / "c.html")
    v = Viewer(chromium, path)
    cols = v.page.locator("#key-col .token")
    assert cols.all_inner_texts() == ["R", "O", ":", "\u2423", "g", "\u23ce", "t"]
    assert cols.nth(3).get_attribute("title") == '" "  (k 3)'
    assert cols.nth(5).get_attribute("title") == '"\\n"  (k 5)'
    v.page.locator("#query-col .token").nth(6).hover()  # the other side's tooltips add the weights per head
    assert v.page.locator("#key-col .token").nth(3).get_attribute("title").startswith('" "  (k 3)\nhead 0: ')
    v.close_clean()
