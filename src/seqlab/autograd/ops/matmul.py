"""Matrix products: batched, broadcasting `a @ b`, and the fused `linear`."""
from __future__ import annotations

from seqlab import kernels
from seqlab.autograd.function import Function
from seqlab.autograd.ops.fused import colsum
from seqlab.backend import xp_of
from seqlab.mkl import matmul as mm  # np.matmul, or MKL's sgemm when installed (seqlab.mkl)


def _matmul(a, b):
    """a @ b; with a 2-D `b` and a batched `a`, one GEMM on `a` flattened to (N, k).

    Same result as `a @ b`: NumPy's stacked matmul with a broadcast 2-D
    operand can miss BLAS entirely (~30x slower at (32, 64, 256) @ (256, 1024)).
    """
    if b.ndim == 2 and a.ndim > 2:
        return mm(a.reshape(-1, a.shape[-1]), b).reshape(a.shape[:-1] + (b.shape[-1],))  # (..., m)
    return mm(a, b)


class MatMul(Function):
    """a @ b with NumPy's rules (1-D operands promoted, batch dims broadcast).

    d(a@b)/da = g @ bᵀ, d(a@b)/db = aᵀ @ g; the engine sums broadcast batch dims.
    """

    def forward(self, a, b):
        self.save_for_backward(a, b)
        return _matmul(a, b)

    def backward(self, grad):
        a, b = self.saved
        ga = gb = None
        xp = xp_of(grad)
        # put back the axes NumPy dropped for 1-D operands: out2 = a2 @ b2 has shape (..., n, m)
        a2 = a[None, :] if a.ndim == 1 else a  # (1, k) for a 1-D a
        b2 = b[:, None] if b.ndim == 1 else b  # (k, 1) for a 1-D b
        g = grad[..., None] if b.ndim == 1 else grad  # (..., n, 1)
        if a.ndim == 1:
            g = xp.expand_dims(g, -2)  # (..., 1, m)
        if self.needs_input_grad[0]:
            ga = _matmul(g, b2.swapaxes(-1, -2))  # (..., n, k)
            if a.ndim == 1:
                ga = ga[..., 0, :]  # the engine sums any batch dims away
        if self.needs_input_grad[1]:
            if b2.ndim == 2 and a2.ndim > 2:
                # weight shared across the batch: one 2-D product instead of a batched one + sum
                gb = mm(a2.reshape(-1, a2.shape[-1]).T, g.reshape(-1, g.shape[-1]))  # (k, m)
            else:
                gb = mm(a2.swapaxes(-1, -2), g)  # (..., k, m)
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
        # flatten the batch dims: NumPy's stacked matmul of (B, T, I) @ Wᵀ skips BLAS (~30x slower)
        y2 = mm(x.reshape(-1, x.shape[-1]), weight.T)
        if bias is not None and not kernels.add_rows(y2, bias):  # on more than one thread: the kernels' twin
            y2 += bias
        return y2.reshape(x.shape[:-1] + (weight.shape[0],))

    def backward(self, grad):
        x, w = self.saved
        g2 = grad.reshape(-1, grad.shape[-1])
        gx = mm(g2, w).reshape(x.shape) if self.needs_input_grad[0] else None
        gw = mm(g2.T, x.reshape(-1, x.shape[-1])) if self.needs_input_grad[1] else None
        gb = colsum(g2) if self.has_bias and self.needs_input_grad[2] else None  # Σ over the batch
        return gx, gw, gb
