"""Transposed convolution over the spatial dims of (N, C_in, *S), S = (L,) or (H, W), as torch's conv_transposeNd.

A transposed convolution is the adjoint of a convolution (d2l 14.10): where conv1d gathers the input under each
kernel window (im2col) and multiplies, conv_transpose1d multiplies and then *scatters* each input position's
products over a window of the output (col2im). With the same stride s, padding p and dilation d,

    y_full[n, o, i·s + k·d] += Σ_c x[n, c, i] · w[c, o, k]          (c and o in the same group)

on an output buffer of S_out + 2p cells, and y is that buffer with p cells cut from each side:
S_out = (S − 1)·s − 2p + d·(k − 1) + output_padding + 1. output_padding only lengthens the far end (cells that
no window reaches hold the bias alone); it picks one of the `s` input sizes a stride-s conv maps onto S.

So the forward pass is ConvNd's backward-to-input, and the backward pass is ConvNd's forward (to the input) and
its weight product, reusing the window helpers of `seqlab.autograd.ops.conv`.
"""
from __future__ import annotations

import math

from seqlab.autograd.function import Function
from seqlab.autograd.higher_order import graph_input
from seqlab.autograd.ops.conv import _add_windows, _windows, _windows_graph, pad_spatial
from seqlab.backend import xp_of
from seqlab.mkl import matmul as mm

# mm: np.matmul, or MKL's sgemm when installed (seqlab.mkl), as in ConvNd

__all__ = ["ConvTransposeNd"]


class ConvTransposeNd(Function):
    """x (N, C_in, *S) with weight (C_in, C_out/groups, *k), plus bias (C_out,) → (N, C_out, *out), `out` given by
    the caller (it includes output_padding). `padding` is (p, p) per dim, as ConvNd's (before, after) pairs.

    Forward: cols (g, C_out/g·K, N·P) = Wᵀ (g, C_out/g·K, C_in/g) @ x (g, C_in/g, N·P), then col2im into the
    output. Backward: dcols = im2col of dy (g, C_out/g·K, N·P); dx = W @ dcols; dW = x @ dcolsᵀ; db = Σ dy.
    """

    def forward(self, x, weight, bias=None, stride=(1,), padding=((0, 0),), dilation=(1,), groups=1, out=(1,)):
        N, C = x.shape[:2]
        kernel, spatial = weight.shape[2:], x.shape[2:]
        c_out = weight.shape[1] * groups
        K, P = math.prod(kernel), math.prod(spatial)
        xg = x.swapaxes(0, 1).reshape(groups, C // groups, N * P)  # (g, C_in/g, N·P)
        w = weight.reshape(groups, C // groups, c_out // groups * K)  # (g, C_in/g, C_out/g·K)
        cols = mm(w.swapaxes(1, 2), xg).reshape((c_out,) + kernel + (N,) + spatial)  # (C_out, *k, N, *S)
        y = _add_windows(lambda k, offset: cols[(slice(None),) + offset].swapaxes(0, 1),  # (N, C_out, *S) each
                         (N, c_out) + tuple(out), padding, kernel, dilation, stride, spatial)  # (N, C_out, *out)
        if bias is not None:
            y = y + bias.reshape((1, c_out) + (1,) * len(out))
        needs = self.needs_input_grad
        self.save_for_backward(xg if len(needs) > 1 and needs[1] else None, weight)
        self.geometry = (x.shape, padding, dilation, stride, groups, bias is not None)
        return xp_of(x).ascontiguousarray(y)

    def backward(self, grad):
        xg, weight = self.saved
        x_shape, padding, dilation, stride, groups, has_bias = self.geometry
        xp = xp_of(grad)
        N, C = x_shape[:2]
        kernel, spatial = weight.shape[2:], x_shape[2:]
        c_out = weight.shape[1] * groups
        K, P = math.prod(kernel), math.prod(spatial)
        gpad = pad_spatial(grad, padding, 0)  # (N, C_out, *out + 2p)
        gcols = xp.empty((c_out,) + kernel + (N,) + spatial, dtype=grad.dtype)  # (C_out, *k, N, *S)
        for _, offset, win in _windows(kernel, dilation, stride, spatial):
            gcols[(slice(None),) + offset] = gpad[(slice(None), slice(None)) + win].swapaxes(0, 1)  # (C_out, N, *S)
        gcols = gcols.reshape(groups, c_out // groups * K, N * P)  # (g, C_out/g·K, N·P)
        gx = gw = gb = None
        if self.needs_input_grad[0]:
            w = weight.reshape(groups, C // groups, c_out // groups * K)  # (g, C_in/g, C_out/g·K)
            gx = xp.ascontiguousarray(mm(w, gcols).reshape((C, N) + spatial).swapaxes(0, 1))  # (N, C_in, *S)
        if self.needs_input_grad[1]:
            gw = mm(xg, gcols.swapaxes(1, 2)).reshape(weight.shape)  # (C_in, C_out/g, *k)
        if has_bias and self.needs_input_grad[2]:
            gb = grad.sum(axis=(0,) + tuple(range(2, grad.ndim)))  # (C_out,)
        return (gx, gw, gb) if has_bias else (gx, gw)

    def backward_graph(self, g):
        """The backward above with Tensor ops (create_graph=True): dcols gathered from dy by `_windows_graph`,
        x at its place in the graph (forward kept it as xg, its channels first)."""
        xg, weight = self.saved
        x_shape, padding, dilation, stride, groups, has_bias = self.geometry
        N, C = x_shape[:2]
        kernel, spatial = weight.shape[2:], x_shape[2:]
        c_out = weight.shape[1] * groups
        K, P = math.prod(kernel), math.prod(spatial)
        gcols = _windows_graph(g, padding, kernel, dilation, stride, spatial)  # (K, N, C_out, *S)
        gcols = gcols.permute((2, 0, 1) + tuple(range(3, 3 + len(spatial))))  # (C_out, K, N, *S)
        gcols = gcols.reshape(groups, c_out // groups * K, N * P)  # (g, C_out/g·K, N·P)
        need = self.needs_input_grad
        gx = gw = gb = None
        if need[0]:
            w = graph_input(self, 1, weight).reshape(groups, C // groups, c_out // groups * K)  # (g, C_in/g, C_out/g·K)
            gx = (w @ gcols).reshape((C, N) + spatial).transpose(0, 1)  # (N, C_in, *S)
        if need[1]:
            x = graph_input(self, 0, xg.reshape((C, N) + spatial).swapaxes(0, 1))  # (N, C_in, *S)
            xg = x.transpose(0, 1).reshape(groups, C // groups, N * P)  # (g, C_in/g, N·P)
            gw = (xg @ gcols.transpose(1, 2)).reshape(weight.shape)  # (C_in, C_out/g, *k)
        if has_bias and need[2]:
            gb = g.sum((0,) + tuple(range(2, g.ndim)))  # (C_out,)
        return (gx, gw, gb) if has_bias else (gx, gw)
