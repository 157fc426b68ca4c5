"""docs/reliability.md stays true: every matrix case is listed, every test it names exists."""
from __future__ import annotations

import re
from pathlib import Path

from test_rel_cli_matrix import CASES

ROOT = Path(__file__).resolve().parents[2]
DOC = (ROOT / "docs" / "reliability.md").read_text(encoding="utf-8")
REF = re.compile(r"((?:tests/(?:\w+/)*)?test_\w+\.py)::(test_\w+(?:, test_\w+)*)")


def test_every_matrix_case_is_in_the_doc():
    missing = [c[0] for c in CASES if f"matrix[{c[0]}]" not in DOC
               and not (c[0].startswith("unknown-option-") and "matrix[unknown-option-" in DOC)]
    assert not missing, f"cases of test_rel_cli_matrix.py missing from docs/reliability.md: {missing}"


def test_every_test_the_doc_names_exists():
    refs = REF.findall(DOC)
    assert len(refs) > 30
    for file, names in refs:
        path = ROOT / file if file.startswith("tests/") else ROOT / "tests" / "reliability" / file
        assert path.is_file(), f"docs/reliability.md names {file}, which does not exist"
        source = path.read_text(encoding="utf-8")
        for name in names.split(", "):
            assert re.search(rf"^def {name}\(", source, re.M), f"{file} has no test {name}"
    for file in set(re.findall(r"\b(test_rel_\w+\.py)\b", DOC)):
        assert (ROOT / "tests" / "reliability" / file).is_file(), file
