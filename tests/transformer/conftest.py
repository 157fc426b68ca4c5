"""Helpers for the attention / Transformer tests: seqlab vs torch, float64, dropout 0."""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")


class Compare:
    """Tolerance checks shared by the tests (relative to the reference's largest magnitude)."""

    @staticmethod
    def rel(a, b) -> float:
        a = np.asarray(a.numpy() if hasattr(a, "numpy") and not isinstance(a, np.ndarray) else a, dtype=np.float64)
        b = np.asarray(b.detach().numpy() if hasattr(b, "detach") else b, dtype=np.float64)
        assert a.shape == b.shape, f"shapes differ: {a.shape} vs {b.shape}"
        return float(np.abs(a - b).max() / max(np.abs(b).max(), 1e-300))

    def close(self, a, b, tol: float = 1e-9, what: str = "") -> None:
        r = self.rel(a, b)
        assert r <= tol, f"{what}: relative error {r:.3e} > {tol:g}"

    def grads(self, s_module, t_module, tol: float = 1e-9) -> None:
        """Every parameter gradient of the seqlab module equals torch's, by name."""
        t_params = dict(t_module.named_parameters())
        s_params = dict(s_module.named_parameters())
        assert list(s_params) == list(t_params), f"parameter names differ:\n{list(s_params)}\n{list(t_params)}"
        for name, p in s_params.items():
            tp = t_params[name]
            assert p.grad is not None and tp.grad is not None, f"{name}: missing gradient"
            self.close(p.grad, tp.grad, tol, f"grad of {name}")


@pytest.fixture
def cmp() -> Compare:
    return Compare()


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(0)


def pair_inputs(rng, *shapes):
    """Same float64 values as seqlab tensors and torch tensors, both requiring grad."""
    import seqlab

    arrays = [rng.standard_normal(s) for s in shapes]
    return ([seqlab.tensor(a, requires_grad=True) for a in arrays],
            [torch.tensor(a, requires_grad=True) for a in arrays])


@pytest.fixture
def inputs():
    return pair_inputs
