"""Matrix products: batched, broadcasting `a @ b`, and the fused `linear`.

Each `backward_graph` is its `backward` written with Tensor ops, for create_graph=True (higher_order.py).
"""
from __future__ import annotations

from seqlab import kernels
from seqlab.autograd.function import Function
from seqlab.autograd.higher_order import graph_input
from seqlab.autograd.ops.fused import colsum
from seqlab.autograd.ops.movement import Permute, Reshape
from seqlab.backend import xp_of
from seqlab.mkl import matmul as mm  # np.matmul, or MKL's sgemm when installed (seqlab.mkl)
from seqlab.mkl import matmul_pair as mm_pair


def _matmul(a, b):
    """a @ b; with a 2-D `b` and a batched `a`, one GEMM on `a` flattened to (N, k).

    Same result as `a @ b`: NumPy's stacked matmul with a broadcast 2-D
    operand can miss BLAS entirely (~30x slower at (32, 64, 256) @ (256, 1024)).
    """
    if b.ndim == 2 and a.ndim > 2:
        return mm(a.reshape(-1, a.shape[-1]), b).reshape(a.shape[:-1] + (b.shape[-1],))  # (..., m)
    return mm(a, b)


def _swap_last(t):
    """t with its last two dims swapped (a Tensor, for backward_graph)."""
    dims = list(range(t.ndim))
    dims[-2], dims[-1] = dims[-1], dims[-2]
    return Permute.apply(t, dims=tuple(dims))


class MatMul(Function):
    """a @ b with NumPy's rules (1-D operands promoted, batch dims broadcast).

    d(a@b)/da = g @ bᵀ, d(a@b)/db = aᵀ @ g; the engine sums broadcast batch dims.
    """

    def forward(self, a, b):
        needs = self.needs_input_grad
        if True in needs:  # only the operand a gradient reads: the other may change in place afterwards
            self.save_for_backward(a if needs[1] else None, b if needs[0] else None)
            self.ndims = (a.ndim, b.ndim)
        return _matmul(a, b)

    def backward(self, grad):
        a, b = self.saved
        a_nd, b_nd = self.ndims
        ga = gb = None
        xp = xp_of(grad)
        # put back the axes NumPy dropped for 1-D operands: out2 = a2 @ b2 has shape (..., n, m)
        g = grad[..., None] if b_nd == 1 else grad  # (..., n, 1)
        if a_nd == 1:
            g = xp.expand_dims(g, -2)  # (..., 1, m)
        if self.needs_input_grad[0]:
            b2 = b[:, None] if b_nd == 1 else b  # (k, 1) for a 1-D b
            ga = _matmul(g, b2.swapaxes(-1, -2))  # (..., n, k)
            if a_nd == 1:
                ga = ga[..., 0, :]  # the engine sums any batch dims away
        if self.needs_input_grad[1]:
            a2 = a[None, :] if a_nd == 1 else a  # (1, k) for a 1-D a
            if b_nd <= 2 and a2.ndim > 2:  # b2 is 2-D
                # weight shared across the batch: one 2-D product instead of a batched one + sum
                gb = mm(a2.reshape(-1, a2.shape[-1]).T, g.reshape(-1, g.shape[-1]))  # (k, m)
            else:
                gb = mm(a2.swapaxes(-1, -2), g)  # (..., k, m)
            if b_nd == 1:
                gb = gb[..., 0]
        return ga, gb

    def backward_graph(self, g):
        a, b = self.saved
        a_nd, b_nd = self.ndims
        if b_nd == 1:
            g = Reshape.apply(g, shape=g.shape + (1,))  # (..., n, 1)
        if a_nd == 1:
            g = Reshape.apply(g, shape=g.shape[:-1] + (1, g.shape[-1]))  # (..., 1, m)
        ga = gb = None
        if self.needs_input_grad[0]:
            y = graph_input(self, 1, b)
            y2 = Reshape.apply(y, shape=b.shape + (1,)) if b_nd == 1 else y  # (k, 1) for a 1-D b
            ga = MatMul.apply(g, _swap_last(y2))  # (..., n, k); the engine sums broadcast batch dims
            if a_nd == 1:
                ga = Reshape.apply(ga, shape=ga.shape[:-2] + ga.shape[-1:])
        if self.needs_input_grad[1]:
            x = graph_input(self, 0, a)
            x2 = Reshape.apply(x, shape=(1,) + a.shape) if a_nd == 1 else x  # (1, k) for a 1-D a
            gb = MatMul.apply(_swap_last(x2), g)  # (..., k, m)
            if b_nd == 1:
                gb = Reshape.apply(gb, shape=gb.shape[:-1])
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
        if self.needs_input_grad[0] and self.needs_input_grad[1]:  # both at once where the pool can pair them
            gx, gw = mm_pair(g2, w, g2.T, x.reshape(-1, x.shape[-1]))
            gx = gx.reshape(x.shape)
        else:
            gx = mm(g2, w).reshape(x.shape) if self.needs_input_grad[0] else None
            gw = mm(g2.T, x.reshape(-1, x.shape[-1])) if self.needs_input_grad[1] else None
        gb = colsum(g2) if self.has_bias and self.needs_input_grad[2] else None  # Σ over the batch
        return gx, gw, gb

    def backward_graph(self, g):
        x, w = self.saved
        g2 = Reshape.apply(g, shape=(-1, g.shape[-1]))  # (N, out)
        gx = gw = gb = None
        if self.needs_input_grad[0]:
            gx = Reshape.apply(MatMul.apply(g2, graph_input(self, 1, w)), shape=x.shape)
        if self.needs_input_grad[1]:
            x2 = Reshape.apply(graph_input(self, 0, x), shape=(-1, x.shape[-1]))  # (N, in)
            gw = MatMul.apply(Permute.apply(g2, dims=(1, 0)), x2)  # (out, in)
        if self.has_bias and self.needs_input_grad[2]:
            gb = g2.sum(0)
        return gx, gw, gb
