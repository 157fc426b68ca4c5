"""Suite-wide set-up: `from helpers import check_op, check_module` works in every test folder."""
import sys
from pathlib import Path

_TESTS = str(Path(__file__).resolve().parent)
if _TESTS not in sys.path:
    sys.path.insert(0, _TESTS)
