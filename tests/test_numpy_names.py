"""torch's NumPy-style names on the reductions (`keepdims=` for keepdim, `axis=` for dim), as d2l writes
`A.sum(axis=1, keepdims=True)`: the same shapes and values as torch, method and top-level alike (a torch-idiom
audit found `keepdims=` refused everywhere and `axis=` on nansum)."""
import inspect

import numpy as np
import pytest
import torch

import seqlab

A = np.arange(1, 13, dtype=np.float32).reshape(3, 4) / 7

CALLS = [
    "x.sum(axis=1, keepdims=True)", "x.mean(axis=0, keepdims=True)", "x.max(axis=1, keepdims=True)[0]",
    "x.min(axis=1, keepdims=True)[1]", "x.amax(axis=1, keepdims=True)", "x.argmax(axis=1, keepdims=True)",
    "x.std(axis=1, keepdims=True)", "x.var(axis=0, keepdims=True)", "x.prod(axis=1, keepdims=True)",
    "x.logsumexp(axis=1, keepdims=True)", "x.nansum(axis=1)", "x.all(axis=1, keepdims=True)",
    "x.median(axis=1, keepdims=True)[0]",
    "lib.sum(x, axis=1, keepdims=True)", "lib.mean(x, axis=1, keepdims=True)", "lib.std(x, axis=0, keepdims=True)",
    "lib.max(x, axis=1, keepdims=True)[0]", "lib.amax(x, axis=1, keepdims=True)",
]


@pytest.mark.parametrize("call", CALLS)
def test_numpy_names_give_torchs_result(call):
    got = {}
    for lib in (seqlab, torch):
        x = lib.tensor(A)  # noqa: F841 - read by the call
        got[lib.__name__] = eval(call)  # noqa: S307 - the calls above
    s, t = np.asarray(got["seqlab"]), got["torch"].numpy()
    assert s.shape == t.shape
    np.testing.assert_allclose(s, t, rtol=1e-6)


def test_a_name_and_its_alias_together_are_refused_as_torch():
    with pytest.raises(TypeError):
        torch.tensor(A).sum(1, keepdim=True, keepdims=True)
    with pytest.raises(TypeError, match="both keepdim=True and its alias keepdims=False"):
        seqlab.tensor(A).sum(1, keepdim=True, keepdims=False)
    with pytest.raises(TypeError, match="both dim=0 and its alias axis=1"):
        seqlab.tensor(A).nansum(dim=0, axis=1)


def test_the_gradient_and_the_signature_are_the_functions_own():
    x = seqlab.tensor(A, requires_grad=True)
    (x.sum(axis=1, keepdims=True) * seqlab.tensor([[1.0], [2.0], [3.0]])).sum().backward()
    np.testing.assert_array_equal(np.asarray(x.grad), np.repeat([[1.0], [2.0], [3.0]], 4, axis=1))
    assert "keepdims" not in inspect.signature(seqlab.Tensor.sum).parameters
    assert list(inspect.signature(seqlab.Tensor.nansum).parameters)[:3] == ["self", "dim", "keepdim"]
