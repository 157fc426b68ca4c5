"""Fixtures for the viz tests: crafted attention stacks and a headless Chromium."""
from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def softmax_stack(L: int, H: int, Tq: int, Tk: int, seed: int = 0, sharp: float = 3.0) -> np.ndarray:
    """A random but peaked (L, H, T_q, T_k) attention stack whose rows sum to 1."""
    x = np.random.default_rng(seed).normal(size=(L, H, Tq, Tk)) * sharp
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


@pytest.fixture(name="softmax_stack")
def softmax_stack_fixture() -> Callable[..., np.ndarray]:
    """The `softmax_stack` helper, as a fixture."""
    return softmax_stack


@pytest.fixture(scope="session")
def chromium() -> Iterator[Any]:
    """A headless system Chromium driven by Playwright; skips when either is missing."""
    sync_api = pytest.importorskip("playwright.sync_api",
                                   reason="playwright is not installed (pip install playwright)")
    exe = os.environ.get("SEQLAB_CHROMIUM", CHROMIUM)
    if not (os.path.exists(exe) or shutil.which(exe)):
        pytest.skip(f"no Chromium at {exe} (apt-get install chromium, or set SEQLAB_CHROMIUM)")
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=exe, args=CHROMIUM_ARGS)
        yield browser
        browser.close()
