"""torch and transformers are needed by every benchmark: skip the folder cleanly without them."""
import pytest

pytest.importorskip("torch")


@pytest.fixture
def fake_cupy(monkeypatch):
    """seqlab's backend on `fakecupy` (a strict CPU stand-in for CuPy) for one test: device "cuda" works."""
    import sys
    import types

    import fakecupy

    from seqlab import backend
    from seqlab import random as seqlab_random

    cp = fakecupy.make_module()
    monkeypatch.setattr(backend, "_cupy", cp)
    monkeypatch.setattr(backend, "_CUDA_OK", True)
    monkeypatch.setattr(seqlab_random, "_gpu_generator", None)
    monkeypatch.setitem(sys.modules, "cupyx", types.ModuleType("cupyx"))
    monkeypatch.setitem(sys.modules, "cupyx.scipy", types.ModuleType("cupyx.scipy"))
    monkeypatch.setitem(sys.modules, "cupyx.scipy.special", fakecupy.make_cupyx_special())
    return cp
