"""Suite-wide set-up.

Tests run with ``--import-mode=importlib`` (test files in different folders
may share a name), so folders are not put on ``sys.path`` by pytest; this puts
``tests/`` and each test folder there, so ``from helpers import check_op``
and a folder's own helper module import everywhere. Helper modules have
unique names across folders.
"""
import sys
from pathlib import Path

_TESTS = Path(__file__).resolve().parent
for _folder in [_TESTS, *sorted(p for p in _TESTS.iterdir() if p.is_dir() and not p.name.startswith((".", "_")))]:
    if str(_folder) not in sys.path:
        sys.path.insert(0, str(_folder))
