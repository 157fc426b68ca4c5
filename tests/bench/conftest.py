"""torch and transformers are needed by every benchmark: skip the folder cleanly without them."""
import pytest

pytest.importorskip("torch")


@pytest.fixture
def fake_cupy(monkeypatch):
    """seqlab's backend on tests/cupy_stand_in.py (a strict CPU stand-in for CuPy) for one test: device "cuda"
    works; returns the stand-in module."""
    import cupy_stand_in

    return cupy_stand_in.install(monkeypatch)
