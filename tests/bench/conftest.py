"""torch and transformers are needed by every benchmark: skip the folder cleanly without them."""
import pytest

pytest.importorskip("torch")
