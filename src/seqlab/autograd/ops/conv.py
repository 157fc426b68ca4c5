"""Convolution and pooling over the spatial dims of (N, C, *S), S = (L,) or (H, W), as torch's.

Every op here sees its input through *windows*. With the input padded to
``xpad``, kernel offset k (one of K = k_1·k_2 offsets, row-major), dilation
d and stride s, the strided slice

    xpad[..., k·d : k·d + s·(O − 1) + 1 : s]        (one slice per spatial dim)

holds, at output position o, the input value that window o meets at offset k
(d2l 7.2-7.5: y[o] = Σ_k w[k] · x[o·s + k·d] after padding). So a forward
gathers K slices (im2col) and a backward adds K slices back (col2im): a Python
loop over the few kernel offsets, never over the batch or the output
positions. Only basic slicing is used, so NumPy and CuPy run the same code.
"""
from __future__ import annotations

import itertools
import math

import numpy as np

from seqlab.autograd.function import Function
from seqlab.autograd.higher_order import constant, graph_input
from seqlab.autograd.ops.movement import Stack
from seqlab.autograd.ops.scatter import IndexPut
from seqlab.backend import xp_of
from seqlab.mkl import matmul as mm  # np.matmul, or MKL's sgemm when installed (seqlab.mkl)

__all__ = ["ConvNd", "MaxPoolNd", "AvgPoolNd", "AdaptiveMaxPool1d", "adaptive_bounds", "pool_output_size",
           "pad_spatial"]


# ---- windows ------------------------------------------------------------------------------------
def _windows(kernel: tuple, dilation: tuple, stride: tuple, out: tuple):
    """(k, offset, slices) for each kernel offset, row-major (k counts them): the slices pick, from the padded
    input's spatial dims, the value each of the `out` output positions meets at that offset."""
    for k, offset in enumerate(itertools.product(*(range(n) for n in kernel))):
        win = tuple(slice(i * d, i * d + s * (o - 1) + 1, s) for i, d, s, o in zip(offset, dilation, stride, out))
        yield k, offset, win


def _out_size(padded: tuple, kernel: tuple, dilation: tuple, stride: tuple) -> tuple:
    """Output positions per spatial dim: ⌊(S_pad − d·(k − 1) − 1) / s⌋ + 1."""
    return tuple((n - d * (k - 1) - 1) // s + 1 for n, k, d, s in zip(padded, kernel, dilation, stride))


def pool_output_size(size: int, kernel: int, stride: int, padding: int, dilation: int, ceil_mode: bool) -> int:
    """torch's pooling_output_shape: ⌊ or ⌈ (L + 2p − d·(k − 1) − 1) / s ⌉ + 1, and with ceil_mode the last
    window must start inside the input or its left padding."""
    span = size + 2 * padding - dilation * (kernel - 1) - 1
    out = (span + (stride - 1 if ceil_mode else 0)) // stride + 1
    if ceil_mode and (out - 1) * stride >= size + padding:
        out -= 1
    return out


def pad_spatial(x, padding: tuple, value: float = 0.0):
    """x (N, C, *S) with `value` added around each spatial dim i: padding[i] = (before, after)."""
    if not any(lo or hi for lo, hi in padding):
        return x
    shape = x.shape[:2] + tuple(n + lo + hi for n, (lo, hi) in zip(x.shape[2:], padding))  # (N, C, *S_pad)
    out = xp_of(x).full(shape, value, dtype=x.dtype)
    out[_inner(x.shape[2:], padding)] = x
    return out


def _inner(spatial: tuple, padding: tuple) -> tuple:
    """The index of the unpadded input inside the padded one."""
    return (slice(None), slice(None)) + tuple(slice(lo, lo + n) for n, (lo, _) in zip(spatial, padding))


def _add_windows(parts, x_shape: tuple, padding: tuple, kernel: tuple, dilation: tuple, stride: tuple, out: tuple):
    """col2im: Σ over offsets k of parts(k, offset) (N, C, *out), each added at its window into a zero padded input;
    returns the unpadded (N, C, *S) part. Windows overlap when s < k·d, hence += rather than =."""
    padded = x_shape[:2] + tuple(n + lo + hi for n, (lo, hi) in zip(x_shape[2:], padding))
    gpad = None
    for k, offset, win in _windows(kernel, dilation, stride, out):
        part = parts(k, offset)  # (N, C, *out)
        if gpad is None:
            gpad = xp_of(part).zeros(padded, dtype=part.dtype)
        gpad[(slice(None), slice(None)) + win] += part
    return gpad[_inner(x_shape[2:], padding)]


# ---- the same with Tensor ops, for create_graph=True (higher_order.py) ----------------------------
def _add_windows_graph(parts, x_shape: tuple, padding: tuple, kernel: tuple, dilation: tuple, stride: tuple,
                       out: tuple, like):
    """`_add_windows` with Tensor ops: each part (a Tensor) added at its window into zeros (IndexPut, whose
    gradient takes the window again), then the unpadded part. `like`: a Tensor of the dtype and device."""
    padded = x_shape[:2] + tuple(n + lo + hi for n, (lo, hi) in zip(x_shape[2:], padding))
    gpad = constant(xp_of(like.data).zeros(padded, dtype=like.dtype))
    for k, offset, win in _windows(kernel, dilation, stride, out):
        gpad = IndexPut.apply(gpad, parts(k, offset), index=(slice(None), slice(None)) + win, mode="add")
    return gpad[_inner(x_shape[2:], padding)]


def _windows_graph(x, padding: tuple, kernel: tuple, dilation: tuple, stride: tuple, out: tuple):
    """im2col with Tensor ops: x (N, C, *S) padded with zeros, then its K windows stacked, (K, N, C, *out)."""
    if any(lo or hi for lo, hi in padding):
        shape = x.shape[:2] + tuple(n + lo + hi for n, (lo, hi) in zip(x.shape[2:], padding))  # (N, C, *S_pad)
        x = IndexPut.apply(constant(xp_of(x.data).zeros(shape, dtype=x.dtype)), x, index=_inner(x.shape[2:], padding))
    return Stack.apply(*(x[(slice(None), slice(None)) + win] for *_, win in _windows(kernel, dilation, stride, out)),
                       dim=0)


# ---- convolution --------------------------------------------------------------------------------
class ConvNd(Function):
    """Cross-correlation of x (N, C, *S) with weight (C_out, C/groups, *k), plus bias (C_out,), as torch's convNd:

        y[n, o, p] = b[o] + Σ_{c, k} w[o, c, k] · xpad[n, g·C/groups + c, p·s + k·d]     (o in group g)

    im2col turns it into one batched product of the groups: cols (g, C/g·K, N·P) gathered from K strided
    slices, y = W (g, C_out/g, C/g·K) @ cols. Backward: dW = dy @ colsᵀ, dcols = Wᵀ @ dy, and dx adds dcols
    back slice by slice (col2im); db = Σ dy over the batch and positions. `padding` is (before, after) per dim.
    """

    def forward(self, x, weight, bias=None, stride=(1,), padding=((0, 0),), dilation=(1,), groups=1):
        xp = xp_of(x)
        N, C = x.shape[:2]
        c_out, kernel = weight.shape[0], weight.shape[2:]
        xpad = pad_spatial(x, padding, 0)
        out = _out_size(xpad.shape[2:], kernel, dilation, stride)
        K, P = math.prod(kernel), math.prod(out)
        cols = xp.empty((C,) + kernel + (N,) + out, dtype=x.dtype)  # (C, *k, N, *out)
        for _, offset, win in _windows(kernel, dilation, stride, out):
            cols[(slice(None),) + offset] = xpad[(slice(None), slice(None)) + win].swapaxes(0, 1)  # (C, N, *out)
        cols = cols.reshape(groups, C // groups * K, N * P)  # (g, C/g·K, N·P)
        w = weight.reshape(groups, c_out // groups, C // groups * K)  # (g, C_out/g, C/g·K)
        y = mm(w, cols)  # (g, C_out/g, N·P)
        if bias is not None:
            y += bias.reshape(groups, c_out // groups, 1)
        needs = self.needs_input_grad
        self.save_for_backward(cols if len(needs) > 1 and needs[1] else None, weight)
        self.geometry = (x.shape, padding, kernel, dilation, stride, out, groups, bias is not None)
        return xp.ascontiguousarray(y.reshape((c_out, N) + out).swapaxes(0, 1))  # (N, C_out, *out)

    def backward(self, grad):
        cols, weight = self.saved
        x_shape, padding, kernel, dilation, stride, out, groups, has_bias = self.geometry
        N, C = x_shape[:2]
        c_out = weight.shape[0]
        gy = grad.swapaxes(0, 1).reshape(groups, c_out // groups, -1)  # (g, C_out/g, N·P)
        gx = gw = gb = None
        if self.needs_input_grad[0]:
            w = weight.reshape(groups, c_out // groups, -1)  # (g, C_out/g, C/g·K)
            gcols = mm(w.swapaxes(1, 2), gy).reshape((C,) + kernel + (N,) + out)  # (C, *k, N, *out)
            gx = _add_windows(lambda k, offset: gcols[(slice(None),) + offset].swapaxes(0, 1),
                              x_shape, padding, kernel, dilation, stride, out)
        if self.needs_input_grad[1]:
            gw = mm(gy, cols.swapaxes(1, 2)).reshape(weight.shape)  # (C_out, C/g, *k)
        if has_bias and self.needs_input_grad[2]:
            gb = grad.sum(axis=(0,) + tuple(range(2, grad.ndim)))  # (C_out,)
        return (gx, gw, gb) if has_bias else (gx, gw)

    def backward_graph(self, g):
        """The backward above with Tensor ops: dx adds Wᵀ·dy back window by window (IndexPut), dW = dy·colsᵀ
        with cols gathered again from x at its place in the graph. Forward kept cols, not x: every value of x
        that a window reads is in cols, so x as cols wrote back (`_input_from_cols`) stands in for it (same
        graph position, x's creator); the values no window reads are 0 there, and nothing depends on them."""
        cols, weight = self.saved
        x_shape, padding, kernel, dilation, stride, out, groups, has_bias = self.geometry
        N, C = x_shape[:2]
        c_out = weight.shape[0]
        K, P = math.prod(kernel), math.prod(out)
        gy = g.transpose(0, 1).reshape(groups, c_out // groups, N * P)  # (g, C_out/g, N·P)
        need = self.needs_input_grad
        gx = gw = gb = None
        if need[0]:
            w = graph_input(self, 1, weight).reshape(groups, c_out // groups, C // groups * K)  # (g, C_out/g, C/g·K)
            gcols = (w.transpose(1, 2) @ gy).reshape((C,) + kernel + (N,) + out)  # (C, *k, N, *out)
            gx = _add_windows_graph(lambda k, offset: gcols[(slice(None),) + offset].transpose(0, 1),
                                    x_shape, padding, kernel, dilation, stride, out, g)
        if need[1]:
            x = graph_input(self, 0, self._input_from_cols(cols))
            views = _windows_graph(x, padding, kernel, dilation, stride, out)  # (K, N, C, *out)
            views = views.permute((2, 0, 1) + tuple(range(3, 3 + len(out))))  # (C, K, N, *out)
            gw = (gy @ views.reshape(groups, C // groups * K, N * P).transpose(1, 2)).reshape(weight.shape)
        if has_bias and need[2]:
            gb = g.sum((0,) + tuple(range(2, g.ndim)))  # (C_out,)
        return (gx, gw, gb) if has_bias else (gx, gw)

    def _input_from_cols(self, cols):
        """x (N, C, *S) with every value that a window read written back from cols; 0 where none did."""
        x_shape, padding, kernel, dilation, stride, out, groups, _ = self.geometry
        N, C = x_shape[:2]
        padded = x_shape[:2] + tuple(n + lo + hi for n, (lo, hi) in zip(x_shape[2:], padding))
        xpad = xp_of(cols).zeros(padded, dtype=cols.dtype)
        c = cols.reshape((C,) + kernel + (N,) + out)  # (C, *k, N, *out)
        for _, offset, win in _windows(kernel, dilation, stride, out):
            xpad[(slice(None), slice(None)) + win] = c[(slice(None),) + offset].swapaxes(0, 1)  # (N, C, *out)
        return xpad[_inner(x_shape[2:], padding)]


# ---- pooling over fixed windows -----------------------------------------------------------------
class MaxPoolNd(Function):
    """y[n, c, o] = max_k xpad[n, c, o·s + k·d], the input padded with −inf; `padding` is (before, after) per
    dim (`after` includes ceil_mode's extra). The gradient goes to the argmax alone; among equal values to the
    first in the window's row-major order, as torch's CPU kernel (it moves on strictly greater values only)."""

    def forward(self, x, kernel_size=(1,), stride=(1,), padding=((0, 0),), dilation=(1,)):
        xp = xp_of(x)
        xpad = pad_spatial(x, padding, -xp.inf)
        out = _out_size(xpad.shape[2:], kernel_size, dilation, stride)
        views = [xpad[(slice(None), slice(None)) + win] for *_, win in _windows(kernel_size, dilation, stride, out)]
        stacked = xp.stack(views)  # (K, N, C, *out)
        self.arg = stacked.argmax(axis=0)  # (N, C, *out): the first maximum's offset
        self.geometry = (x.shape, padding, kernel_size, dilation, stride, out)
        return stacked.max(axis=0)

    def backward(self, grad):
        x_shape, padding, kernel, dilation, stride, out = self.geometry
        return (_add_windows(lambda k, _: grad * (self.arg == k), x_shape, padding, kernel, dilation, stride, out),)

    def backward_graph(self, g):
        return (_add_windows_graph(lambda k, _: g * constant((self.arg == k).astype(g.dtype)), *self.geometry, g),)

    def indices(self):
        """torch's return_indices: each maximum's flat position in its (unpadded) input plane, h·W + w."""
        x_shape, padding, kernel, dilation, stride, out = self.geometry
        xp = xp_of(self.arg)
        rest, flat = self.arg, 0
        positions = []
        for i in reversed(range(len(kernel))):  # offsets are row-major: the last dim varies fastest
            rest, k = rest // kernel[i], rest % kernel[i]
            o = xp.arange(out[i]).reshape((-1,) + (1,) * (len(kernel) - 1 - i))  # broadcasts along dim i
            positions.insert(0, o * stride[i] - padding[i][0] + k * dilation[i])
        for i, pos in enumerate(positions):
            flat = flat * x_shape[2 + i] + pos
        return flat.astype(xp.int64)


class AvgPoolNd(Function):
    """y[n, c, o] = Σ_k xpad[n, c, o·s + k] / divisor[o], the input padded with zeros; `divisor` (a number or
    an (*out) array: how many cells each window counts, torch's count_include_pad / divisor_override) is
    chosen by the caller. Backward: each cell of a window gets dy[o] / divisor[o]."""

    def forward(self, x, kernel_size=(1,), stride=(1,), padding=((0, 0),), divisor=1):
        xpad = pad_spatial(x, padding, 0)
        ones = (1,) * len(kernel_size)
        out = _out_size(xpad.shape[2:], kernel_size, ones, stride)
        total = xp_of(x).zeros(x.shape[:2] + out, dtype=x.dtype)  # (N, C, *out)
        for *_, win in _windows(kernel_size, ones, stride, out):
            total += xpad[(slice(None), slice(None)) + win]
        self.divisor = divisor
        self.geometry = (x.shape, padding, kernel_size, ones, stride, out)
        return total / divisor

    def backward(self, grad):
        g = grad / self.divisor
        return (_add_windows(lambda k, _: g, *self.geometry),)

    def backward_graph(self, g):
        d = self.divisor
        g = g / (constant(xp_of(g.data).asarray(d, dtype=g.dtype)) if hasattr(d, "shape") else d)
        return (_add_windows_graph(lambda k, _: g, *self.geometry, g),)


# ---- adaptive pooling ---------------------------------------------------------------------------
def adaptive_bounds(size: int, out: int) -> tuple[np.ndarray, np.ndarray]:
    """torch's adaptive windows (host arrays): window i covers [⌊i·L/out⌋, ⌈(i+1)·L/out⌉)."""
    i = np.arange(out)
    return (i * size) // out, ((i + 1) * size + out - 1) // out


class AdaptiveMaxPool1d(Function):
    """y[n, c, i] = max of x[n, c, start_i : end_i] (adaptive_bounds); windows may differ in length by one and
    may overlap. Each window is gathered at kmax = max length positions, the short ones repeating their last
    index (a repeat never wins: the first maximum does). The gradient is scattered to the argmaxes (add.at:
    overlapping windows can share one)."""

    def forward(self, x, output_size=1):
        xp = xp_of(x)
        start, end = adaptive_bounds(x.shape[-1], output_size)
        width = int((end - start).max()) if output_size else 1
        idx = np.minimum(start[:, None] + np.arange(width), end[:, None] - 1)  # (out, kmax), host
        idx = xp.asarray(idx)
        windows = x[..., idx]  # (N, C, out, kmax)
        arg = windows.argmax(axis=-1)  # (N, C, out)
        self.where = idx[xp.arange(output_size), arg]  # (N, C, out): positions in x's last dim
        self.x_shape = x.shape
        return windows.max(axis=-1)

    def backward(self, grad):
        xp = xp_of(grad)
        N, C, L = self.x_shape
        gx = xp.zeros((N * C, L), dtype=grad.dtype)
        rows = xp.arange(N * C).reshape(-1, 1)  # (N·C, 1): broadcasts against (N·C, out)
        xp.add.at(gx, (rows, self.where.reshape(N * C, -1)), grad.reshape(N * C, -1))
        return (gx.reshape(self.x_shape),)

    def backward_graph(self, g):
        xp = xp_of(g.data)
        N, C, L = self.x_shape
        rows = xp.arange(N * C).reshape(-1, 1)  # (N·C, 1): broadcasts against (N·C, out)
        gx = IndexPut.apply(constant(xp.zeros((N * C, L), dtype=g.dtype)), g.reshape(N * C, -1),
                            index=(rows, self.where.reshape(N * C, -1)), mode="add")
        return (gx.reshape(self.x_shape),)

    def indices(self):
        """torch's return_indices: each maximum's position along the last dim."""
        return self.where.astype(xp_of(self.where).int64)
