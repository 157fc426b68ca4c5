"""Gradient modes as torch's: no_grad, enable_grad, set_grad_enabled and inference_mode as context managers and
decorators, each compared with torch's own."""
import pytest
import torch

import seqlab
from seqlab.autograd import enable_grad, inference_mode, is_grad_enabled, no_grad, set_grad_enabled


@pytest.mark.parametrize("phase", ["train", "eval"])
def test_set_grad_enabled_as_in_torchs_transfer_learning_tutorial(phase):
    x = seqlab.tensor([1.0, 2.0], requires_grad=True)
    tx = torch.tensor([1.0, 2.0], requires_grad=True)
    with set_grad_enabled(phase == "train"), torch.set_grad_enabled(phase == "train"):
        assert is_grad_enabled() == torch.is_grad_enabled() == (phase == "train")
        y, ty = (x * 2).sum(), (tx * 2).sum()
    assert y.requires_grad == ty.requires_grad == (phase == "train")
    assert is_grad_enabled() and torch.is_grad_enabled()                 # the previous mode is back


def test_set_grad_enabled_as_a_call_and_as_a_decorator():
    set_grad_enabled(False)
    torch.set_grad_enabled(False)
    try:
        assert not is_grad_enabled() and not torch.is_grad_enabled()   # a plain call switches at once
    finally:
        set_grad_enabled(True)
        torch.set_grad_enabled(True)

    @set_grad_enabled(False)
    def f():
        return is_grad_enabled()

    assert is_grad_enabled() and f() is False and is_grad_enabled()


def test_enable_grad_and_inference_mode_decorate_as_they_say():
    @enable_grad()
    def g():
        return is_grad_enabled()

    with no_grad():
        assert g() is True and not is_grad_enabled()                    # enable_grad as a decorator enables

    @inference_mode()
    def h():
        return is_grad_enabled()

    assert h() is False and is_grad_enabled()
    with inference_mode(False):
        assert is_grad_enabled()
    with inference_mode():
        y = seqlab.tensor([1.0], requires_grad=True) * 3
    assert not y.requires_grad
