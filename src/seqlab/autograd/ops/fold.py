"""im2col and col2im (torch's F.unfold and F.fold) over (N, C, H, W), each the other's adjoint.

Unfold copies every sliding block of the zero-padded input into a column:

    cols[n, c·K + k, l] = xpad[n, c, o_l·s + k·d]        (k one of K = kH·kW offsets, o_l the l-th block)

and Fold adds the columns back where they came from, so overlapping blocks sum (Fold(Unfold(x)) = x times how
many blocks cover each cell). Both are linear, so each one's backward is the other: one pair of hand-written
Functions (a Python loop over the K kernel offsets with strided slices, as `conv.py`'s windows) rather than a
gather/scatter graph over every element, which would be far slower. The backward for create_graph=True is the
other Function applied to the gradient, itself differentiable.
"""
from __future__ import annotations

import math

from seqlab.autograd.function import Function
from seqlab.autograd.ops.conv import _add_windows, _out_size, _windows, pad_spatial
from seqlab.backend import xp_of

__all__ = ["Im2Col", "Col2Im"]


def _blocks(spatial: tuple, kernel: tuple, dilation: tuple, padding: tuple, stride: tuple) -> tuple:
    """Sliding blocks per spatial dim of an input of size `spatial` padded by `padding` ((before, after) pairs)."""
    padded = tuple(n + lo + hi for n, (lo, hi) in zip(spatial, padding))
    return _out_size(padded, kernel, dilation, stride)


class Im2Col(Function):
    """x (N, C, H, W) → cols (N, C·kH·kW, L), L = the number of blocks; `padding` is (before, after) per dim."""

    def forward(self, x, kernel=(1, 1), dilation=(1, 1), padding=((0, 0), (0, 0)), stride=(1, 1)):
        xp = xp_of(x)
        N, C = x.shape[:2]
        out = _blocks(x.shape[2:], kernel, dilation, padding, stride)
        xpad = pad_spatial(x, padding, 0)
        cols = xp.empty((N, C) + kernel + out, dtype=x.dtype)  # (N, C, kH, kW, oH, oW)
        for _, offset, win in _windows(kernel, dilation, stride, out):
            cols[(slice(None), slice(None)) + offset] = xpad[(slice(None), slice(None)) + win]  # (N, C, oH, oW)
        self.geometry = (x.shape, kernel, dilation, padding, stride, out)
        return cols.reshape(N, C * math.prod(kernel), math.prod(out))  # (N, C·K, L)

    def backward(self, grad):
        x_shape, kernel, dilation, padding, stride, out = self.geometry
        g = grad.reshape(x_shape[:2] + kernel + out)  # (N, C, kH, kW, oH, oW)
        return (_add_windows(lambda k, offset: g[(slice(None), slice(None)) + offset], x_shape, padding, kernel,
                             dilation, stride, out),)

    def backward_graph(self, g):
        x_shape, kernel, dilation, padding, stride, _ = self.geometry
        return (Col2Im.apply(g, output_size=x_shape[2:], kernel=kernel, dilation=dilation, padding=padding,
                             stride=stride),)


class Col2Im(Function):
    """cols (N, C·kH·kW, L) → (N, C, *output_size): each column added back at its block; overlaps sum."""

    def forward(self, cols, output_size=(1, 1), kernel=(1, 1), dilation=(1, 1), padding=((0, 0), (0, 0)),
                stride=(1, 1)):
        N, CK = cols.shape[:2]
        C = CK // math.prod(kernel)
        out = _blocks(output_size, kernel, dilation, padding, stride)
        c = cols.reshape((N, C) + kernel + out)  # (N, C, kH, kW, oH, oW)
        self.geometry = (kernel, dilation, padding, stride)
        x_shape = (N, C) + tuple(output_size)
        return xp_of(cols).ascontiguousarray(_add_windows(lambda k, offset: c[(slice(None), slice(None)) + offset],
                                                          x_shape, padding, kernel, dilation, stride, out))

    def backward(self, grad):
        kernel, dilation, padding, stride = self.geometry
        return (Im2Col().forward(grad, kernel, dilation, padding, stride),)

    def backward_graph(self, g):
        kernel, dilation, padding, stride = self.geometry
        return (Im2Col.apply(g, kernel=kernel, dilation=dilation, padding=padding, stride=stride),)
