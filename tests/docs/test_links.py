"""Every relative link in README.md and docs/*.md reaches a file that exists, and every `#anchor` in one
names a heading of the file it points into (GitHub's rule for heading ids), so the README's many
"details" links into docs/results.md keep working as sections are added and renamed."""
from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", re.S | re.M)


def slug(heading: str) -> str:
    """GitHub's id for a heading: lower case, everything but letters, digits, spaces, '-' and '_' dropped,
    spaces made '-'."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    """The heading ids of a markdown page; a repeated heading gets -1, -2, ... as on GitHub."""
    seen: Counter = Counter()
    out = set()
    for line in FENCE.sub("", page.read_text(encoding="utf-8")).splitlines():
        m = re.match(r"^#{1,6} +(.+?)\s*#*\s*$", line)
        if m:
            s = slug(m.group(1))
            out.add(s if not seen[s] else f"{s}-{seen[s]}")
            seen[s] += 1
    return out


def test_slug_follows_githubs_rule():
    assert slug("The kernels' pool beside OpenBLAS: TBB (2026-12-04, AMD EPYC)") == \
        "the-kernels-pool-beside-openblas-tbb-2026-12-04-amd-epyc"
    assert slug("Faster products with Intel MKL (optional)") == "faster-products-with-intel-mkl-optional"
    assert slug("7.2 注意力机制") == "72-注意力机制"


def test_anchors_number_repeated_headings_and_skip_code(tmp_path):
    page = tmp_path / "p.md"
    page.write_text("# Title\n\n## Runs\n\n```bash\n# not a heading\n```\n\n## Runs\n\n### A `code` name, too\n")
    assert anchors(page) == {"title", "runs", "runs-1", "a-code-name-too"}


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_relative_links_and_anchors_resolve(page):
    text = FENCE.sub("", page.read_text(encoding="utf-8"))
    broken = []
    for target in LINK.findall(text):
        if re.match(r"^[a-z]+:", target):  # http:, https:, mailto:
            continue
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        if not dest.exists():
            broken.append(f"{target}: no such file")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            broken.append(f"{target}: no heading with that id in {dest.relative_to(ROOT).as_posix()}")
    assert not broken, f"{page.name}: " + "; ".join(broken)
