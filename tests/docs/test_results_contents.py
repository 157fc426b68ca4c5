"""docs/results.md opens with a table of contents that lists every section it holds (test_links checks that
each entry reaches its heading); a section added or renamed by hand without rebuilding it fails here."""
from pathlib import Path

from seqlab.bench.harness import CONTENTS_BEGIN, CONTENTS_END, with_contents

RESULTS = Path(__file__).resolve().parents[2] / "docs" / "results.md"


def test_the_results_page_contents_are_current():
    text = RESULTS.read_text(encoding="utf-8")
    assert text.index(CONTENTS_BEGIN) < text.index(CONTENTS_END) < text.index("\n## ")  # at the top
    assert with_contents(text) == text, "docs/results.md's contents are stale: python benchmarks/results_contents.py"
    block = text[:text.index(CONTENTS_END)]
    sections = [line[3:].strip() for line in text.splitlines() if line.startswith("## ")]
    assert len(sections) > 40 and all(f"- [{s}](#" in block for s in sections)
