"""dtype conversion; the gradient is cast back to the input's dtype."""
from seqlab.autograd.function import Function


class Cast(Function):
    def forward(self, a, dtype):
        self.src = a.dtype
        return a.astype(dtype)

    def backward(self, grad):
        return (grad.astype(self.src),)

    def backward_graph(self, g):
        return (Cast.apply(g, dtype=self.src),)
