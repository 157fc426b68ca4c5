"""seqlab.autograd.gradcheck / gradgradcheck, held to torch.autograd's: the same verdicts on right and wrong
backwards, the same leading sentences of the errors, the same warning for float32 inputs."""
import warnings

import numpy as np
import pytest
import torch
from torch.autograd.gradcheck import GradcheckError as TorchGradcheckError

import seqlab
from seqlab import functional as F
from seqlab.autograd import Function, GradcheckError, gradcheck, gradgradcheck
from seqlab.autograd.higher_order import graph_input

RNG = np.random.default_rng(0)


def _leaf(*shape, lib=seqlab, values=None):
    arr = RNG.standard_normal(shape) if values is None else np.asarray(values, dtype=np.float64)
    return lib.tensor(arr, dtype=lib.float64, requires_grad=True)


# ---- custom Functions: one right, one wrong, and torch's twins -------------------------------------------
class Square(Function):
    def forward(self, a):
        self.save_for_backward(a)
        return a * a

    def backward(self, grad):
        (a,) = self.saved
        return (2 * grad * a,)

    def backward_graph(self, g):
        return (2 * g * graph_input(self, 0, self.saved[0]),)


class WrongSquare(Square):
    def backward(self, grad):
        (a,) = self.saved
        return (grad * a,)  # should be 2·a


class WrongDoubleSquare(Square):
    """Right first derivative, wrong differentiable one: its second derivative is 3, not 2."""

    def backward_graph(self, g):
        x = graph_input(self, 0, self.saved[0])
        return (2 * g * x + g * (x - x.detach()) * 1.0,)


class IgnoresGradOutput(Function):
    def forward(self, a):
        self.shape = a.shape
        return a.sum()

    def backward(self, grad):
        return (np.ones(self.shape),)  # should be grad · ones


class Noisy(Function):
    def forward(self, a):
        return 2 * a

    def backward(self, grad):
        return (grad * (2 + RNG.standard_normal(grad.shape) * 1e-9),)  # a little different each time


class TorchWrongSquare(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        return a * a

    @staticmethod
    def backward(ctx, grad):
        (a,) = ctx.saved_tensors
        return grad * a


def test_right_function_passes_wrong_one_fails_with_torchs_message():
    x = _leaf(3, values=[1.0, 2.0, 3.0])
    assert gradcheck(Square.apply, (x,))
    assert gradcheck(Square.apply, x)  # a single Tensor for inputs, as torch
    with pytest.raises(GradcheckError) as ours:
        gradcheck(WrongSquare.apply, (x,))
    with pytest.raises(TorchGradcheckError) as theirs:
        torch.autograd.gradcheck(TorchWrongSquare.apply, (_leaf(3, lib=torch, values=[1.0, 2.0, 3.0]),))
    assert isinstance(ours.value, RuntimeError)
    mine, torchs = str(ours.value).splitlines(), str(theirs.value).splitlines()
    assert mine[0] == torchs[0] == "Jacobian mismatch for output 0 with respect to input 0,"
    assert [line.split("tensor(")[0] for line in mine if "tensor(" in line] == \
        [line.split("tensor(")[0] for line in torchs if "tensor(" in line] == ["numerical:", "analytical:"]
    assert str(ours.value).endswith("\n") and str(theirs.value).endswith("\n")
    # the matrices themselves: (input.numel(), output.numel()), numerical 2·diag(x), analytical diag(x)
    assert "[[2., 0., 0.]" in str(ours.value) and "analytical:tensor([[1., 0., 0.]" in str(ours.value)
    assert gradcheck(WrongSquare.apply, (x,), raise_exception=False) is False
    assert torch.autograd.gradcheck(TorchWrongSquare.apply, (_leaf(3, lib=torch),), raise_exception=False) is False


def test_fast_mode_agrees_on_right_and_wrong_backwards():
    x = _leaf(2, 3)
    assert gradcheck(Square.apply, (x,), fast_mode=True)
    assert gradcheck(lambda a, b: a @ b, (_leaf(2, 3), _leaf(3, 4)), fast_mode=True)
    with pytest.raises(GradcheckError) as ours:
        gradcheck(WrongSquare.apply, (x,), fast_mode=True)
    with pytest.raises(TorchGradcheckError) as theirs:
        torch.autograd.gradcheck(TorchWrongSquare.apply, (_leaf(2, 3, lib=torch),), fast_mode=True)
    for err in (str(ours.value), str(theirs.value)):
        assert err.startswith("Jacobian mismatch for output 0 with respect to input 0,\nnumerical:")
        assert "Below, we recompute numerical and analytical jacobians in slow mode:" in err
        assert "The max per-element difference (slow mode) is: " in err
    assert gradcheck(WrongSquare.apply, (x,), fast_mode=True, raise_exception=False) is False


@pytest.mark.parametrize("name", ["tanh", "matmul", "softmax", "layer_norm", "attention", "broadcast_mul"])
def test_seqlab_ops_pass(name):
    q, k, v = _leaf(1, 2, 3, 4), _leaf(1, 2, 3, 4), _leaf(1, 2, 3, 4)
    cases = {
        "tanh": (lambda a: a.tanh(), (_leaf(2, 3),)),
        "matmul": (lambda a, b: a @ b, (_leaf(2, 3), _leaf(3, 2))),
        "softmax": (lambda a: F.softmax(a, dim=-1), (_leaf(2, 4),)),
        "layer_norm": (lambda a, w, b: F.layer_norm(a, (4,), w, b), (_leaf(2, 4), _leaf(4), _leaf(4))),
        "attention": (lambda a, b, c: F.scaled_dot_product_attention(a, b, c, is_causal=True), (q, k, v)),
        "broadcast_mul": (lambda a, b: a * b, (_leaf(2, 3), _leaf(3))),
    }
    fn, inputs = cases[name]
    assert gradcheck(fn, inputs)
    assert gradcheck(fn, inputs, fast_mode=True)


def test_inputs_that_need_no_grad_and_integer_outputs_are_skipped():
    x, c = _leaf(3), seqlab.tensor(np.arange(3.0))  # c requires no grad: never perturbed, not counted
    assert gradcheck(lambda a, b, scale: a * b * scale, (x, c, 2.0))
    assert gradcheck(lambda a: (a.tanh(), a.argmax()), (x,))  # the int64 output is not differentiable
    assert gradcheck(lambda a: a.argmax(), (x,))  # no differentiable output: numerical gradient must be 0
    with pytest.raises(GradcheckError, match="^Numerical gradient for function expected to be zero$"):
        gradcheck(lambda a: (a * 2).detach(), (x,))
    with pytest.raises(GradcheckError, match="with respect to input 0,"):  # index among inputs needing grad
        gradcheck(lambda b, a: WrongSquare.apply(a) + b, (c, x))


def test_torchs_errors_for_inputs():
    for lib, check in ((seqlab, gradcheck), (torch, torch.autograd.gradcheck)):
        with pytest.raises(ValueError, match="^gradcheck expects at least one input tensor to require gradient, "
                                             "but none of them have requires_grad=True.$"):
            check(lambda a: a * 2, (lib.ones(3, dtype=lib.float64),))
        wide = lib.ones(3, dtype=lib.float64).expand(2, 3).clone().requires_grad_()
        assert check(lambda a: a * 2, (wide,))
    stride0 = seqlab.Tensor._from_op(np.broadcast_to(np.ones(3), (2, 3)), None).requires_grad_()
    with pytest.raises(RuntimeError, match="^The 0th input has a dimension with stride 0"):
        gradcheck(lambda a: a * 2, (stride0,))


def test_float32_input_warns_as_torch():
    def caught(check, lib):
        with warnings.catch_warnings(record=True) as record:
            warnings.simplefilter("always")
            check(lambda a, b: a * b, (lib.ones(2, dtype=lib.float64), lib.ones(2, requires_grad=True)),
                  eps=1e-2, atol=1e-2, rtol=1e-2)
        return [(w.category, str(w.message)) for w in record]

    ours, theirs = caught(gradcheck, seqlab), caught(torch.autograd.gradcheck, torch)
    assert ours == theirs
    assert ours[0][1].startswith("Input #1 requires gradient and is not a double precision floating point")


def test_backward_checks_beyond_the_jacobian():
    x = _leaf(3)
    with pytest.raises(GradcheckError, match="^backward not multiplied by grad_output$"):
        gradcheck(IgnoresGradOutput.apply, (x,))
    with pytest.raises(GradcheckError, match="^Backward is not reentrant"):
        gradcheck(Noisy.apply, (x,))
    assert gradcheck(Noisy.apply, (x,), nondet_tol=1e-6)
    # check_undefined_grad: with several outputs, each left out of the backward in turn
    assert gradcheck(lambda a: (a.tanh(), a.exp(), a * 3), (x,), check_undefined_grad=True)
    assert gradcheck(lambda a: a * 1.0, (seqlab.tensor(np.ones(3), requires_grad=True),), check_grad_dtypes=True)


def test_options_seqlab_cannot_honour_are_refused():
    x = _leaf(3)
    for option in ("check_forward_ad", "check_batched_grad"):
        with pytest.raises(NotImplementedError, match=f"^{option}=True needs"):
            gradcheck(lambda a: a * 2, (x,), **{option: True})
    with pytest.raises(NotImplementedError, match="^check_forward_ad=True needs forward-mode AD"):
        gradcheck(lambda a: a * 2, (x,), check_forward_ad=True, check_batched_forward_grad=True)
    with pytest.raises(NotImplementedError, match="^check_fwd_over_rev=True needs"):
        gradgradcheck(lambda a: a * 2, (x,), check_fwd_over_rev=True)
    with pytest.raises(AssertionError, match="check_forward_ad or check_backward_ad"):
        gradcheck(lambda a: a * 2, (x,), check_backward_ad=False)


@pytest.mark.parametrize("name", ["tanh", "matmul", "softmax", "square"])
def test_gradgradcheck_passes_on_ops_with_double_backward(name):
    cases = {
        "tanh": (lambda a: a.tanh(), (_leaf(2, 3),)),
        "matmul": (lambda a, b: (a @ b).tanh(), (_leaf(2, 3), _leaf(3, 2))),
        "softmax": (lambda a: F.softmax(a, dim=-1), (_leaf(2, 3),)),
        "square": (Square.apply, (_leaf(3),)),
    }
    fn, inputs = cases[name]
    assert gradgradcheck(fn, inputs)
    assert gradgradcheck(fn, inputs, gen_non_contig_grad_outputs=True)


def test_gradgradcheck_fails_on_a_wrong_double_backward():
    x = _leaf(3)
    assert gradcheck(WrongDoubleSquare.apply, (x,))  # its first derivative is right
    with pytest.raises(GradcheckError, match="^Jacobian mismatch for output 0 with respect to input 0,"):
        gradgradcheck(WrongDoubleSquare.apply, (x,))
    assert gradgradcheck(WrongDoubleSquare.apply, (x,), raise_exception=False) is False
    g = seqlab.tensor(np.ones(3), requires_grad=True)
    assert gradgradcheck(Square.apply, (x,), (g,))  # explicit grad_outputs
