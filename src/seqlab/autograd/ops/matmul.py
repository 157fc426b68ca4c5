"""Matrix products: batched, broadcasting `a @ b`, and the fused `linear`."""
from __future__ import annotations

from seqlab.autograd.function import Function


class MatMul(Function):
    """a @ b with NumPy's rules (1-D operands promoted, batch dims broadcast).

    d(a@b)/da = g @ bᵀ, d(a@b)/db = aᵀ @ g; the engine sums broadcast batch dims.
    """

    def forward(self, a, b):
        self.save_for_backward(a, b)
        return a @ b

    def backward(self, grad):
        a, b = self.saved
        ga = gb = None
        a2 = a[None, :] if a.ndim == 1 else a
        b2 = b[:, None] if b.ndim == 1 else b
        g = grad
        if a.ndim == 1:
            g = g[..., None, :]
        if b.ndim == 1:
            g = g[..., :, None]
        if self.needs_input_grad[0]:
            ga = g @ b2.swapaxes(-1, -2)
            if a.ndim == 1:
                ga = ga[..., 0, :]  # the engine sums any batch dims away
        if self.needs_input_grad[1]:
            if b2.ndim == 2 and a2.ndim > 2:
                # weight shared across the batch: one 2-D product instead of a batched one + sum
                gb = a2.reshape(-1, a2.shape[-1]).T @ g.reshape(-1, g.shape[-1])
            else:
                gb = a2.swapaxes(-1, -2) @ g
            if b.ndim == 1:
                gb = gb[..., 0]
        return ga, gb


class Linear(Function):
    """y = x Wᵀ + b over the last dim of x, W of shape (out, in) as torch.nn.Linear.

    Fused so the backward does two 2-D products on the flattened batch
    (dx = g W, dW = gᵀ x, db = Σ g) and never materialises Wᵀ.
    """

    def forward(self, x, weight, bias=None):
        self.save_for_backward(x, weight)
        self.has_bias = bias is not None
        y = x @ weight.T
        if bias is not None:
            y += bias
        return y

    def backward(self, grad):
        x, w = self.saved
        g2 = grad.reshape(-1, grad.shape[-1])
        gx = (grad @ w) if self.needs_input_grad[0] else None
        gw = g2.T @ x.reshape(-1, x.shape[-1]) if self.needs_input_grad[1] else None
        gb = g2.sum(axis=0) if self.has_bias and self.needs_input_grad[2] else None
        return gx, gw, gb
