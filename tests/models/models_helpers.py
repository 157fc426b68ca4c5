"""Helpers shared by the model tests (tests/models is on sys.path when pytest runs them)."""
from __future__ import annotations

import numpy as np


def hf_save(model, folder) -> str:
    """Save a transformers model into `folder` (a str for both libraries)."""
    model.save_pretrained(str(folder))
    return str(folder)


def grads_match(seqlab_model, hf_model, rel: float, transposed=()) -> dict:
    """Largest relative gradient difference per parameter name, asserting each is <= rel."""
    hf_params = dict(hf_model.named_parameters())
    worst = {}
    for name, p in seqlab_model.named_parameters():
        assert name in hf_params, f"{name} has no transformers counterpart"
        g_ref = hf_params[name].grad.detach().numpy()
        if name.endswith(tuple(transposed)):
            g_ref = g_ref.T
        assert p.grad is not None, f"{name} got no gradient"
        err = np.abs(p.grad - g_ref).max() / max(np.abs(g_ref).max(), 1e-12)
        worst[name] = err
        assert err <= rel, f"gradient of {name} differs by {err:.2e} (relative)"
    return worst
