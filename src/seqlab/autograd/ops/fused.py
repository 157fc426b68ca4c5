"""Hand-written backward passes that earn their place by stability or speed.

Each has the plain formula in its docstring; tests hold every one to the
same computation composed from primitive ops. A `backward_graph` (for create_graph=True, higher_order.py)
is that formula written with Tensor ops, every op here included.
"""
from __future__ import annotations

import numpy as np

from seqlab import cuda_kernels  # the same on the GPU, for CuPy arrays (each returns None elsewhere)
from seqlab import kernels  # compiled row kernels; each returns None where the NumPy formula below runs
from seqlab import random as _random
from seqlab.autograd.function import Function
from seqlab.autograd.higher_order import constant, graph_input, graph_output
from seqlab.autograd.ops.activation import gelu_derivative_graph
from seqlab.autograd.ops.elementwise import Exp, MaskedFill
from seqlab.autograd.ops.movement import Reshape, Stack
from seqlab.autograd.ops.scatter import IndexPut
from seqlab.backend import xp_of
from seqlab.mkl import matmul as mm  # np.matmul, or MKL's sgemm when installed (seqlab.mkl)


def _is_last(a, dim) -> bool:
    return dim in (-1, a.ndim - 1)


def rowsum(a, dim=-1):
    """Σ along `dim`, keepdims. Along the last axis einsum's SIMD loop is ~4x faster than
    NumPy's reduction over many short rows (and, unlike a ⋅ 1 through BLAS gemv, never
    waits on BLAS threads: 16 ms instead of 0.05 ms on a busy 2-core machine)."""
    if a.ndim >= 1 and _is_last(a, dim) and a.shape[-1] <= 1024:  # long rows: keep the pairwise sum
        return xp_of(a).einsum("...i->...", a)[..., None]
    return a.sum(axis=dim, keepdims=True)


def colsum(a2):
    """Σ over the rows of a 2-D array (the bias gradient of a batch): the kernels' column sums (on CuPy the
    CUDA kernel's: CuPy's einsum took cuBLAS's matrix-vector product, ~8x slower per call on an H200), else
    einsum (see rowsum)."""
    fast = kernels.column_sums(a2)
    if fast is not None:
        return fast
    return xp_of(a2).einsum("ij->j", a2)


def softmax_array(x, dim, overwrite: bool = False, stats: tuple | None = None, with_stats: bool = False):
    """exp(x − max) / Σ exp(x − max) along `dim`, in one temporary (in `x` itself when
    `overwrite`); rows of −inf give 0, not NaN.

    `with_stats`: also return (max, Σ) as used (keepdims), and `stats` passes them
    back in to skip both reductions, so the same x gives the same values bitwise.
    """
    xp = xp_of(x)
    if _is_last(x, dim):
        fast = kernels.softmax_rows(x, stats, in_place=overwrite)  # the same steps, a row at a time
        if fast is not None:
            return fast if with_stats else fast[0]
    if stats is None:
        m = x.max(axis=dim, keepdims=True)
        # rows of -inf only: exp gives 0, not NaN. On a GPU without the test: reading its result back
        # would make the host wait for the device in the middle of every attention
        if xp is not np or not bool(xp.isfinite(m).all()):
            m = xp.where(xp.isfinite(m), m, m.dtype.type(0))  # a typed 0: the result stays float32
    else:
        m = stats[0]
    if overwrite:
        x -= m
        e = x
    else:
        e = x - m
    xp.exp(e, out=e)  # (not MKL's vsExp: masked scores' −inf take its slow path, 5x NumPy's time)
    if stats is None:
        s = rowsum(e, dim)
        if xp is not np or not bool(s.all()):
            s = xp.where(s == 0, s.dtype.type(1), s)
    else:
        s = stats[1]
    e /= s
    return (e, (m, s)) if with_stats else e


def log_softmax_array(x, dim):
    """x − max − log Σ exp(x − max): finite for logits of any magnitude."""
    if _is_last(x, dim):
        fast = kernels.log_softmax_rows(x)  # compiled (CuPy: CUDA): one pass a row
        if fast is not None:
            return fast
    xp = xp_of(x)
    shifted = x - x.max(axis=dim, keepdims=True)
    shifted -= xp.log(rowsum(xp.exp(shifted), dim))
    return shifted


def _rowdot(a, b, dim):
    """Σ a⊙b along `dim`, keepdims, without a full-size temporary when `dim` is the last axis."""
    xp = xp_of(a)
    if dim in (-1, a.ndim - 1):
        return xp.einsum("...i,...i->...", a, b)[..., None]
    return (a * b).sum(axis=dim, keepdims=True)


class Softmax(Function):
    """y = exp(x) / Σ exp(x);  dx = y ⊙ (g − Σ g⊙y)."""

    def forward(self, x, dim=-1):
        self.dim = dim
        y = softmax_array(x, dim)
        self.save_for_backward(y)
        return y

    def backward(self, grad):
        (y,) = self.saved
        if _is_last(y, self.dim):
            fast = kernels.softmax_backward(grad, y)
            if fast is not None:
                return (fast,)
        gx = grad - _rowdot(grad, y, self.dim)
        gx *= y
        return (gx,)

    def backward_graph(self, g):
        y = graph_output(self, self.saved[0])
        return (y * (g - (g * y).sum(self.dim, keepdim=True)),)


class LogSoftmax(Function):
    """y = x − log Σ exp(x);  dx = g − exp(y) Σ g."""

    def forward(self, x, dim=-1):
        self.dim = dim
        y = log_softmax_array(x, dim)
        self.save_for_backward(y)
        return y

    def backward(self, grad):
        (y,) = self.saved
        xp = xp_of(y)
        gx = xp.exp(y)
        gx *= rowsum(grad, self.dim)
        xp.subtract(grad, gx, out=gx)
        return (gx,)

    def backward_graph(self, g):
        y = graph_output(self, self.saved[0])
        return (g - Exp.apply(y) * g.sum(self.dim, keepdim=True),)


class CrossEntropy(Function):
    """Softmax cross-entropy on logits (N, C) with integer targets (N,).

    loss_i = (1 − ε)·(−log p_i[y_i]) + ε·mean_c(−log p_i[c]),  p = softmax(logits);
    d loss_i / d logits_i = p_i − q_i with q_i = (1 − ε)·onehot(y_i) + ε/C.
    Rows whose target is `ignore_index` contribute nothing; 'mean' divides by
    the number of the others (as torch).
    """

    def forward(self, logits, target, ignore_index=-100, label_smoothing=0.0, reduction="mean"):
        xp = xp_of(logits)
        n, c = logits.shape
        logp = log_softmax_array(logits, 1)
        valid = target != ignore_index
        safe_target = xp.where(valid, target, 0)
        nll = -xp.take_along_axis(logp, safe_target[:, None], axis=1)[:, 0]
        if label_smoothing:
            nll = (1 - label_smoothing) * nll - label_smoothing * logp.mean(axis=1)
        nll = nll * valid
        self.count = int(valid.sum())
        self.saved = (logp, safe_target, valid)
        self.eps, self.reduction, self.c = label_smoothing, reduction, c
        if reduction == "none":
            return nll
        total = nll.sum()
        if reduction == "sum":
            return total
        # an all-ignored batch gives NaN in torch (0/0); keep it
        return total / self.count if self.count else total * np.nan

    def backward(self, grad):
        logp, target, valid = self.saved
        xp = xp_of(logp)
        if self.reduction in ("none", "sum"):
            scale = grad * valid
        else:
            scale = grad * valid / max(self.count, 1)
        scale = scale.astype(logp.dtype)
        fast = kernels.cross_entropy_backward(logp, target, scale, self.eps)  # compiled (CuPy: CUDA): the lines below
        if fast is not None:
            return fast, None
        g = xp.exp(logp)
        if self.eps:
            g -= self.eps / self.c
        g[xp.arange(g.shape[0]), target] -= 1 - self.eps
        return g * scale[:, None], None

    def backward_graph(self, g):
        logp, target, valid = self.saved
        xp = xp_of(logp)
        # softmax ignores a constant added to a row: log p stands in for the logits (same graph, the logits'
        # creator), and its softmax is p with p's dependence on the logits
        p = Softmax.apply(graph_input(self, 0, logp), dim=1)
        q = xp.full(logp.shape, logp.dtype.type(self.eps / self.c))  # (1 − ε)·onehot(y) + ε/C
        q[xp.arange(q.shape[0]), target] += logp.dtype.type(1 - self.eps)
        scale = g * constant(valid.astype(logp.dtype))  # (N,)
        if self.reduction == "mean":
            scale = scale / max(self.count, 1)
        return (p - constant(q)) * Reshape.apply(scale, shape=(-1, 1)), None


class LayerNorm(Function):
    """y = (x − μ)/√(σ² + eps) · w + b over the last `nd` dims (biased σ², as torch).

    With x̂ the normalised input and r = 1/√(σ² + eps):
    dx = r · (ĝ − mean(ĝ) − x̂ · mean(ĝ ⊙ x̂)) where ĝ = g ⊙ w.

    Works on the (N, D) view (D = the normalised size); row sums of products
    go through einsum so no full-size temporary is made for them. The
    compiled kernel (`kernels.layer_norm_forward`) keeps x, μ and r, as
    torch does, and backward computes x̂ again from them; the NumPy formula
    has x̂ in hand and keeps it instead.
    """

    def forward(self, x, weight=None, bias=None, nd=1, eps=1e-5):
        xp = xp_of(x)
        self.shape, self.wshape = x.shape, x.shape[x.ndim - nd:]
        d = 1
        for s in self.wshape:
            d *= s
        x2 = x.reshape(-1, d)                                      # (N, D)
        w2 = None if weight is None else weight.reshape(-1)
        self.has_bias = bias is not None
        keep = any(self.needs_input_grad)
        fast = kernels.layer_norm_forward(x2, w2, None if bias is None else bias.reshape(-1), eps)
        if fast is not None:  # the lines below, a row at a time
            y, mean, rstd = fast
            self.saved = (x2, mean, rstd, w2) if keep else ()
            return y.reshape(x.shape)
        xhat = x2 - rowsum(x2) * x.dtype.type(1.0 / d)             # x − μ
        var = xp.einsum("ij,ij->i", xhat, xhat) / x.dtype.type(d)  # (N,) biased σ²
        rstd = (1 / xp.sqrt(var + x.dtype.type(eps)))[:, None]     # (N, 1)
        xhat *= rstd                                               # x̂
        self.saved = (xhat, rstd, w2)
        if not keep:  # no backward will read x̂: y is computed in its place
            y = xhat
            if weight is not None:
                y *= self.saved[2]
            self.saved = ()
        else:
            y = xhat * self.saved[2] if weight is not None else xhat.copy()
        if bias is not None:
            y += bias.reshape(-1)
        return y.reshape(x.shape)

    def backward(self, grad):
        xp = xp_of(grad)
        g2 = grad.reshape(-1, self.saved[0].shape[1])              # (N, D)
        if len(self.saved) == 4:  # the kernel's forward: x, μ, r
            x2, mean, rstd, w = self.saved
            fast = kernels.layer_norm_backward(g2, x2, mean, rstd, w)  # all three, a row at a time
            if fast is not None:
                gx, gw, gb = fast
                return (gx.reshape(self.shape) if self.needs_input_grad[0] else None,
                        gw.reshape(self.wshape) if w is not None and self.needs_input_grad[1] else None,
                        gb.reshape(self.wshape) if self.has_bias and self.needs_input_grad[2] else None)
            xhat = (x2 - mean) * rstd  # the kernels since switched off: x̂ as the kernel computed it
        else:
            xhat, rstd, w = self.saved
        d = xhat.shape[1]
        gw = gb = gx = None
        if w is not None and self.needs_input_grad[1]:
            gw = xp.einsum("ij,ij->j", g2, xhat).reshape(self.wshape)
        if self.has_bias and self.needs_input_grad[2]:
            gb = colsum(g2).reshape(self.wshape)
        if self.needs_input_grad[0]:
            gh = g2 * w if w is not None else g2.copy()            # ĝ = g ⊙ w
            inv_d = grad.dtype.type(1.0 / d)
            m1 = rowsum(gh) * inv_d                                # mean(ĝ)
            m2 = xp.einsum("ij,ij->i", gh, xhat)[:, None] * inv_d  # mean(ĝ ⊙ x̂)
            gh -= m1
            gh -= xhat * m2
            gh *= rstd
            gx = gh.reshape(self.shape)
        return gx, gw, gb

    def backward_graph(self, g):
        """The backward above with Tensor ops, x̂ and r computed again from x at its place in the graph.

        x: the kernel's forward kept x itself; the NumPy one kept only x̂ = (x − μ)·r, and x̂ / r = x − μ
        stands in for x (same graph position: x's creator, as Var's centered input). LayerNorm does not
        change when a row of x shifts, so centering the stand-in again gives x − μ with its dependence on x.
        r: eps was not kept. r = 1/√(σ² + eps) is written around the forward's r₀ instead, as
        r₀·(1 + (σ² − σ₀²)·r₀²)^(−1/2), the same function of σ² whatever eps is (σ₀² + eps = 1/r₀²): its
        value is r₀ and every derivative is exact (dr/dσ² = −½ r³, d²r/dσ²² = ¾ r⁵, ...).
        """
        if len(self.saved) == 4:  # the kernel's forward: x, μ, r
            x2, _, rstd, w = self.saved
            stand_in = x2
        else:
            xhat, rstd, w = self.saved
            stand_in = xhat / rstd                                   # x − μ
        d = stand_in.shape[1]
        x = graph_input(self, 0, stand_in.reshape(self.shape)).reshape(-1, d)  # (N, D)
        xc = x - x.mean(-1, keepdim=True)                            # x − μ
        var = (xc * xc).mean(-1, keepdim=True)                       # (N, 1) biased σ²
        r = constant(rstd) * (1 + (var - constant(var.data)) * constant(rstd * rstd)) ** -0.5  # (N, 1)
        xhat = xc * r                                                # x̂
        g2 = g.reshape(-1, d)                                        # (N, D)
        need = self.needs_input_grad
        gx = gw = gb = None
        if need[0]:
            gh = g2 * graph_input(self, 1, w.reshape(self.wshape)).reshape(-1) if w is not None else g2  # ĝ
            gx = r * (gh - gh.mean(-1, keepdim=True) - xhat * (gh * xhat).mean(-1, keepdim=True))
            gx = gx.reshape(self.shape)
        if w is not None and need[1]:
            gw = (g2 * xhat).sum(0).reshape(self.wshape)
        if self.has_bias and need[2]:
            gb = g2.sum(0).reshape(self.wshape)
        return gx, gw, gb


def embedding_backward(ids, grad, num_rows: int):
    """Row sums of `grad` (N, D) grouped by `ids` (N,): the plain formula is

        gw = zeros((num_rows, D)); np.add.at(gw, ids, grad)

    `np.add.at` visits one element at a time; on NumPy this is instead the
    product Sᵀ·grad with S the (N, num_rows) one-hot matrix of the ids, kept
    sparse (CSR, ids sorted stably so each row sums in position order, as
    add.at does). ~15x faster at vocab 8,000, N = 2,048, D = 256. With the
    compiled kernels (`seqlab.kernels.embedding_backward`), the rows are added
    in place in add.at's order instead (~1.5x faster again).
    """
    xp = xp_of(grad)
    fast = kernels.embedding_backward(ids, grad, num_rows)  # compiled: the rows added in place, in add.at's order
    if fast is not None:
        return fast
    if xp is not np:  # pragma: no cover - needs a GPU; CuPy's add.at is an atomic scatter
        gw = xp.zeros((num_rows, grad.shape[1]), dtype=grad.dtype)
        xp.add.at(gw, ids, grad)
        return gw
    from scipy import sparse

    ids = np.asarray(ids).reshape(-1)
    n = ids.shape[0]
    order = np.argsort(ids, kind="stable")  # positions grouped by row, in order
    indptr = np.zeros(num_rows + 1, dtype=np.int64)
    np.cumsum(np.bincount(ids, minlength=num_rows), out=indptr[1:])
    onehot_t = sparse.csr_matrix((np.ones(n, dtype=grad.dtype), order, indptr), shape=(num_rows, n))
    return np.asarray(onehot_t @ grad)  # (num_rows, D)


class Embedding(Function):
    """out = weight[ids]; the gradient of a row is the sum over the positions that used it.

    With `scale_grad_by_freq` (torch's), each position's gradient is first divided by how often its id
    occurs in `ids` (so a row gets the mean, not the sum); the counts are taken in backward, from the ids
    kept anyway, and cost nothing when it is off. The `padding_idx` row gets no gradient.

    `backward_graph` gives `backward`'s value; with scale_grad_by_freq its derivative in the incoming gradient
    is the plain lookup's (v[ids], without the 1/count), as torch's double backward: then a Hessian of a loss
    through the lookup is the derivative of the first-order gradient seqlab computes (finite differences
    agree), where differentiating the 1/count again would apply it twice.
    """

    def forward(self, weight, ids, padding_idx=None, scale_grad_by_freq=False):
        self.shape, self.ids, self.padding_idx = weight.shape, ids, padding_idx
        self.scale_grad_by_freq = scale_grad_by_freq
        return weight[ids]

    def _inverse_counts(self, ids, dtype):
        """(N,): 1 / (how often ids[i] occurs in ids), in `dtype` (torch's float64 scale, cast as its add_)."""
        xp = xp_of(ids)
        counts = xp.bincount(ids.astype(xp.intp, copy=False), minlength=self.shape[0])  # uint64 ids too
        return (1.0 / counts[ids]).astype(dtype)

    def backward(self, grad):
        ids = self.ids.reshape(-1)
        g2 = grad.reshape(-1, self.shape[1])  # (N, D)
        if self.scale_grad_by_freq:
            g2 = g2 * self._inverse_counts(ids, g2.dtype)[:, None]
        gw = embedding_backward(ids, g2, self.shape[0])
        if self.padding_idx is not None:
            gw[self.padding_idx] = 0  # the padding row is never trained (as torch)
        return gw, None

    def backward_graph(self, g):
        ids = self.ids.reshape(-1)
        g2 = Reshape.apply(g, shape=(-1, self.shape[1]))  # (N, D)
        if self.padding_idx is not None:
            g2 = MaskedFill.apply(g2, (ids == self.padding_idx)[:, None], 0)
        zeros = xp_of(g.data).zeros(self.shape, dtype=g.dtype)
        gw = IndexPut.apply(zeros, g2, index=ids, mode="add")
        if self.scale_grad_by_freq:
            # the value is backward's (each position's gradient over its id's count), but its derivative in g is
            # the plain lookup's, as torch's double backward: the 1/count is a change of the first-order
            # gradient, not a function to differentiate again, or it would be applied once more in the second
            # pass, where the lookup's own backward already applies it
            gw = gw + constant(self.backward(g.data)[0] - gw.data)
        return gw, None


class Dropout(Function):
    """Inverted dropout: out = x ⊙ m / (1 − p), m ~ Bernoulli(1 − p).

    `keep_mask` is bool (True = keep) or 0/1 floats. A bool mask is what
    backward keeps (1 byte per element, not a float mask of 4); x ⊙ m then
    ·1/(1 − p) in place rounds exactly as x ⊙ (m/(1 − p)) (one rounding each).

    Or `key` instead of a mask: the mask is `seqlab.random.keep_mask`'s for
    that key, which the compiled kernel makes on the fly in forward and again
    in backward, so it is never stored; where that kernel does not apply it
    is made once (`seqlab.random.mask_of_key`) and kept as above. Either way
    the same values, bitwise.
    """

    def forward(self, x, keep_mask=None, p=0.5, key=None):
        self.keep, self.scale = keep_mask, x.dtype.type(1.0 / (1.0 - p))
        if keep_mask is None:
            if key is None:
                raise ValueError("Dropout needs a keep_mask or the key of one (seqlab.random.mask_key)")
            self.key, self.threshold = key, _random.keep_threshold(p)
            fast = kernels.keyed_dropout(x, key, self.threshold, self.scale)
            if fast is not None:
                return fast
            self.keep = keep_mask = self._mask(x.shape)
        fast = kernels.dropout(x, keep_mask, self.scale)  # the two lines below in one pass
        if fast is not None:
            return fast
        out = x * keep_mask  # zeros where dropped, a copy elsewhere, in one pass
        out *= self.scale
        return out

    def _mask(self, shape):
        return _random.mask_of_key(shape, self.key, self.threshold)

    def backward(self, grad):
        if self.keep is None:  # keyed, and forward made the mask on the fly: again here
            fast = kernels.keyed_dropout(grad, self.key, self.threshold, self.scale)
            if fast is not None:
                return fast, None
            self.keep = self._mask(grad.shape)  # grad not in C order (or the kernels since switched off)
        fast = kernels.dropout(grad, self.keep, self.scale)
        if fast is not None:
            return fast, None
        g = grad * self.keep
        g *= self.scale
        return g, None

    def backward_graph(self, g):
        keep = self.keep if self.keep is not None else self._mask(g.shape)
        return g * constant(keep.astype(g.dtype)) * self.scale, None


class BiasActDropout(Function):
    """out = dropout(act(z + b)): a feed-forward's first bias, its activation and dropout in one pass.

    The plain formula, three ops: h = z + b;  y = act(h);  out = y ⊙ keep · 1/(1 − p),
    backward dz = g ⊙ keep · 1/(1 − p) ⊙ act'(h),  db = Σ dz over the rows. act is
    'relu', 'gelu' (erf) or 'gelu_tanh'; the keep mask is `seqlab.random.keep_mask`'s
    for `key` (`Dropout`'s with that key), made on the fly and again in backward; no
    key: no dropout. Only the compiled kernels run it (`seqlab.kernels.bias_act_dropout`;
    `F.bias_act_dropout` composes the three ops where they do not apply).

    Backward keeps z and out and adds z + b again; out is what the next Linear keeps
    anyway, and act' takes act(h) from it (out · (1 − p) where kept, the only places it
    is needed). The three ops would keep h, y and the dropped y.
    """

    def forward(self, z, b, activation="gelu", p=0.0, key=None):
        self.activation, self.key = activation, key
        self.threshold = _random.keep_threshold(p) if key is not None else 0
        self.scale = z.dtype.type(1.0 / (1.0 - p))
        out = kernels.bias_act_dropout(z, b, activation, key, self.threshold, self.scale)
        if out is None:
            raise ValueError("BiasActDropout runs on the compiled kernels only: F.bias_act_dropout checks "
                             "seqlab.kernels.bias_act_dropout_takes first")
        if any(self.needs_input_grad):
            self.save_for_backward(z, b, out)
        return out

    def backward(self, grad):
        z, b, out = self.saved
        gz, gb = kernels.bias_act_dropout_backward(grad, z, b, out, self.activation, self.key, self.threshold,
                                                   self.scale)
        return gz if self.needs_input_grad[0] else None, gb if self.needs_input_grad[1] else None

    def backward_graph(self, g):
        """dz = g ⊙ keep · 1/(1 − p) ⊙ act'(z + b) with Tensor ops; keep is made again from the key (the
        forward's mask: `Dropout`'s for that key and z's shape), and db is dz, which the engine sums over
        the rows. act' is ReLU's step or GELU's formula (`gelu_derivative_graph`, the one GELU's uses)."""
        z, b, _ = self.saved
        h = graph_input(self, 0, z) + graph_input(self, 1, b)      # z + b
        if self.key is not None:
            keep = _random.mask_of_key(z.shape, self.key, self.threshold)
            g = g * constant(keep.astype(g.dtype)) * self.scale
        if self.activation == "relu":
            gz = g * constant((h.data > 0).astype(g.dtype))
        else:
            gz = g * gelu_derivative_graph(h, "tanh" if self.activation == "gelu_tanh" else "none")
        return gz if self.needs_input_grad[0] else None, gz if self.needs_input_grad[1] else None


def _matmul_heads_interleaved(w, v, alpha=1.0, out=None):
    """alpha · (w @ v), (..., H, Tq, Dv), written into memory laid out as (..., Tq, H, Dv).

    The same values as `w @ v` (one BLAS product per head either way), but
    merging the heads afterwards, out.transpose(1, 2).reshape(B, T, H·Dv), is
    then a view instead of a copy of the whole output. Backward writes dq, dk
    and dv this way too: multi-head attention's split of the heads,
    x.reshape(B, T, H, D).transpose(1, 2), then takes them back as views.
    `out`: a (..., H, Tq, Dv) view to write into instead (NumPy), e.g. one
    third of a packed q/k/v gradient (`PackedAttention`).
    """
    if out is not None:
        return mm(w, v, out=out, alpha=alpha)
    xp = xp_of(w)
    shape = np.broadcast_shapes(w.shape[:-2], v.shape[:-2]) + (w.shape[-2], v.shape[-1])
    if xp is not np or len(shape) < 4:
        return mm(w, v, alpha=alpha)
    buf = np.empty(shape[:-3] + (shape[-2], shape[-3], shape[-1]), dtype=np.result_type(w, v))  # (..., Tq, H, Dv)
    out = buf.swapaxes(-3, -2)  # (..., H, Tq, Dv) view
    mm(w, v, out=out, alpha=alpha)
    return out


def _add_into(s, m):
    """s + m, in place in `s` (our own temporary) when `m` broadcasts to s's shape."""
    if m.ndim <= s.ndim and all(a == b or a == 1 for a, b in zip(m.shape[::-1], s.shape[::-1])):
        s += m
        return s
    return s + m


def _read_only(w):
    """A read-only view of the weights backward keeps, for the caller: writing into it would corrupt backward."""
    view = w.view()
    view.flags.writeable = False
    return view


def attention_weights(q, k, bias=None, block=None, scale=1.0, stats: tuple | None = None, with_stats: bool = False):
    """softmax(q kᵀ · scale + bias) over the last axis, −inf where `block` is True (all-blocked rows: 0).

    `with_stats` / `stats`: the softmax's row max and sum, returned / passed back (see `softmax_array`).
    The mask (or else the bias) is added by the compiled softmax where it takes it (`kernels.softmax_rows`:
    each row while in cache, the same sums), else by a pass of its own before the softmax.
    """
    xp = xp_of(q)
    if xp is not np:  # CuPy: the product, then the scale, the mask and the softmax in one kernel
        fast = cuda_kernels.attention_weights(q, k, bias, block, scale, stats)
        if fast is not None:
            return fast if with_stats else fast[0]
    s = mm(q, k.swapaxes(-1, -2), alpha=scale)  # (..., Tq, Tk), the scale inside the GEMM where MKL does it
    last = bias  # the one added last: by the compiled softmax, to each row in cache, when it can
    if block is not None:
        # −inf where blocked: the (small, broadcast) mask becomes a bias once, instead of xp.where
        # allocating a second full-size score array
        if bias is not None:
            s = _add_into(s, bias)
        last = xp.where(block, q.dtype.type(-np.inf), q.dtype.type(0))
    if last is not None:
        fast = kernels.softmax_rows(s, stats, bias=last)  # s is our own temporary: in place
        if fast is not None:
            return fast if with_stats else fast[0]
        s = _add_into(s, last)
    return softmax_array(s, -1, overwrite=True, stats=stats, with_stats=with_stats)  # s is our own temporary


class Attention(Function):
    """out = softmax(q kᵀ · scale + mask) v, one fused op.

    q (..., Tq, D), k (..., Tk, D), v (..., Tk, Dv); `block` is a boolean array
    (True = may NOT attend) and `bias` a float array added to the scores; both
    broadcast to (..., Tq, Tk). A row with every key blocked gets all-zero
    weights, so its output and gradients are 0 rather than NaN.

    Backward keeps q, k, v, the masks and dropout's bool keep mask. When the
    weights are larger than q (Tk > D) it keeps the softmax's row max and sum
    instead of the (..., Tq, Tk) weights, and computes the weights again from
    q and k with them (the same operations on the same arrays, so the same
    values bitwise; the two row reductions are skipped), as torch's fused
    attention kernels do: a training step then holds no Tq × Tk float array
    per layer, which at T = 1,024 and D = 64 would be 5x the size of q, k and
    v. Short sequences (Tk ≤ D) keep the weights, which cost no more memory
    than q, and skip that work. The forward's weights are handed to the
    caller once (`weights`, taken by `F.attention`; read-only on NumPy when
    backward keeps them).

    With P the weights and P' = P ⊙ keep / (1 − p) after dropout:
    dv = P'ᵀ g;  dP = (g vᵀ) ⊙ keep / (1 − p);  dS = P ⊙ (dP − Σ dP ⊙ P);
    dq = dS k · scale;  dk = dSᵀ q · scale;  d bias = dS.
    """

    plan = None  # the compiled path's block rows when it runs (kernels.short_attention_plan)

    def forward(self, q, k, v, bias=None, block=None, scale=1.0, keep_mask=None, p=0.0, need_weights=True):
        self.keep, self.pscale = keep_mask, q.dtype.type(1.0 / (1.0 - p)) if keep_mask is not None else None
        self.scale = scale
        self.plan = kernels.short_attention_plan(q, k, v, bias, block, keep_mask)
        if self.plan is not None:  # a head at a time, compiled (kernels.short_attention_forward)
            grads = any(self.needs_input_grad)
            keep_w = grads and k.shape[-2] <= q.shape[-1]  # Tk <= D: keep the weights, as below
            out, w, stats = kernels.short_attention_forward(q, k, v, scale, self.plan, keep_mask,
                                                            self.pscale or 1.0, need_weights or keep_w)
            if keep_w:
                stats += (w,)
                w = _read_only(w)
            self.weights = w if need_weights else None
            if grads:
                self.saved = (q, k, v, bias, block, stats)
            return out
        w, stats = attention_weights(q, k, bias, block, scale, with_stats=True)
        self.weights = w  # for the caller, who takes it (F.attention)
        if any(self.needs_input_grad):
            if w.shape[-1] <= q.shape[-1]:  # Tk <= D: the weights take no more memory than q; keep them
                self.saved = (q, k, v, bias, block, w)
                if xp_of(w) is np:
                    self.weights = _read_only(w)
            else:
                self.saved = (q, k, v, bias, block, stats)
        return _matmul_heads_interleaved(self._dropped(w), v)

    def _dropped(self, w):
        """P' = P ⊙ keep · 1/(1 − p) (a new array), or P itself without dropout."""
        if self.keep is None:
            return w
        fast = kernels.dropout(w, self.keep, self.pscale)
        if fast is not None:
            return fast
        wd = w * self.keep
        wd *= self.pscale
        return wd

    @property
    def drop(self):
        """keep / (1 − p), the factor dropout applied to the weights (None without dropout)."""
        return None if self.keep is None else self.keep * self.pscale

    def backward(self, grad):
        need = self.needs_input_grad
        return self._input_grads(grad, need[0], need[1], need[2], len(need) > 3 and need[3]) + (None,)

    def _input_grads(self, grad, want_q, want_k, want_v, want_bias, outs=(None, None, None)):
        """(dq, dk, dv, d bias), None for each not wanted; `outs`: views dq, dk, dv are written into."""
        q, k, v, bias, block, kept = self.saved
        if self.plan is not None:  # no bias here, so no d bias
            gq, gk, gv = kernels.short_attention_backward(q, k, v, grad, self.scale, self.plan, self.keep,
                                                          self.pscale or 1.0, kept, outs)
            return gq if want_q else None, gk if want_k else None, gv if want_v else None, None
        if isinstance(kept, tuple):  # the row statistics: the forward's weights, computed again
            w = attention_weights(q, k, bias, block, self.scale, stats=kept)
        else:
            w = kept
        wd = self._dropped(w)
        gv = _matmul_heads_interleaved(wd.swapaxes(-1, -2), grad, out=outs[2]) if want_v else None
        del wd
        gw = mm(grad, v.swapaxes(-1, -2))
        if self.keep is not None and kernels.dropout(gw, self.keep, self.pscale, out=gw) is None:
            gw *= self.keep
            gw *= self.pscale
        # dS = P ⊙ (dP − Σ dP ⊙ P), times the scale when no bias wants dS itself: dq and dk then take it
        # without a pass of their own (NumPy's product scales its output in one)
        fold, alpha = (1.0, self.scale) if want_bias else (self.scale, 1.0)
        if kernels.softmax_backward(gw, w, out=gw, scale=fold) is None:
            gw -= _rowdot(gw, w, -1)
            gw *= w
            if fold != 1.0:
                gw *= gw.dtype.type(fold)
        gs = gw
        gq = _matmul_heads_interleaved(gs, k, alpha=alpha, out=outs[0]) if want_q else None
        gk = _matmul_heads_interleaved(gs.swapaxes(-1, -2), q, alpha=alpha, out=outs[1]) if want_k else None
        return gq, gk, gv, gs if want_bias else None

    def backward_graph(self, g):
        need = self.needs_input_grad
        q, k, v, bias = self.saved[:4]
        return self._input_grads_graph(g, graph_input(self, 0, q), graph_input(self, 1, k), graph_input(self, 2, v),
                                       graph_input(self, 3, bias), need[0], need[1], need[2],
                                       len(need) > 3 and need[3])

    def _input_grads_graph(self, g, q, k, v, bias, want_q, want_k, want_v, want_bias):
        """`_input_grads` with Tensor ops (create_graph=True), on q, k, v and the bias as graph tensors (see
        `attention_grads_graph`); dropout's keep mask is the forward's."""
        drop = None if self.keep is None else constant(self.drop.astype(g.dtype))
        return attention_grads_graph(g, q, k, v, bias, self.saved[4], self.scale, drop,
                                     want_q, want_k, want_v, want_bias)


def attention_grads_graph(g, q, k, v, bias, block, scale, drop, want_q, want_k, want_v, want_bias):
    """(dq, dk, dv, d bias) of softmax(q kᵀ · scale + bias, −inf where `block`) v with Tensor ops, for
    create_graph=True: the weights P are composed again from the graph tensors q, k (and bias), so the
    gradients carry their dependence on every input. `drop`: dropout's keep / (1 − p) as a constant Tensor,
    or None. Rows with every key blocked get P = 0."""
    s = (q @ k.transpose(-1, -2)) * scale                        # (..., Tq, Tk)
    if bias is not None:
        s = s + bias
    if block is not None:
        s = MaskedFill.apply(s, block, -np.inf)
    w = Softmax.apply(s, dim=-1)                                 # P; rows with every key blocked: 0
    gv = None
    if want_v:
        wd = w if drop is None else w * drop                     # P'
        gv = wd.transpose(-1, -2) @ g                            # P'ᵀ g
    gw = g @ v.transpose(-1, -2)                                 # dP = (g vᵀ) ⊙ keep / (1 − p)
    if drop is not None:
        gw = gw * drop
    gs = w * (gw - (gw * w).sum(-1, keepdim=True))               # dS = P ⊙ (dP − Σ dP ⊙ P)
    gq = (gs @ k) * scale if want_q else None
    gk = (gs.transpose(-1, -2) @ q) * scale if want_k else None
    return gq, gk, gv, gs if want_bias else None


def unpack_heads(qkv, heads: int):
    """q, k, v as (B, H, T, D) views of a (B, T, 3·H·D) array packed q | k | v along its last axis
    (a fused in-projection's output; within each third the heads in order)."""
    B, T, E3 = qkv.shape
    parts = qkv.reshape(B, T, 3, heads, E3 // (3 * heads))
    return tuple(parts[:, :, i].swapaxes(1, 2) for i in range(3))


class PackedAttention(Attention):
    """`Attention` on q, k and v packed in one (B, T, 3·E) array (see `unpack_heads`).

    The same values as unpacking first (the same operations on the same
    views), but backward writes dq, dk and dv straight into the three thirds
    of one (B, T, 3·E) gradient. Split by three slicing ops instead, each
    would hand back its third to be added into a zeroed (B, T, 3·E) array:
    a zero fill and three more passes over it per layer.

    `merged`: the output with its heads merged, (B, T, H·D) as an out-projection
    takes it, instead of (B, H, T, D): the same memory (the output is laid out
    as (B, T, H, D)), without a transpose and a reshape op after it.
    """

    merged = False

    def forward(self, qkv, bias=None, heads=1, block=None, scale=1.0, keep_mask=None, p=0.0, need_weights=True,
                merged=False):
        q, k, v = unpack_heads(qkv, heads)
        out = super().forward(q, k, v, bias, block, scale, keep_mask, p, need_weights)
        if not merged:
            return out
        self.merged = True
        B, H, T, D = out.shape
        return out.swapaxes(1, 2).reshape(B, T, H * D)

    def _heads(self, grad):
        """The output's gradient as (B, H, T, D) (a view of a merged one)."""
        if not self.merged:
            return grad
        B, H, T, D = self.saved[0].shape
        return grad.reshape(B, T, H, D).swapaxes(1, 2)

    def backward(self, grad):
        grad = self._heads(grad)
        need = self.needs_input_grad
        want_bias = len(need) > 1 and need[1]
        if not need[0]:
            return None, self._input_grads(grad, False, False, False, want_bias)[3]
        q = self.saved[0]
        B, H, T, D = q.shape
        if xp_of(q) is not np:  # three gradients, then one array of them
            gq, gk, gv, gbias = self._input_grads(grad, True, True, True, want_bias)
            packed = xp_of(q).stack([g.swapaxes(1, 2) for g in (gq, gk, gv)], axis=2)
            return packed.reshape(B, T, 3 * H * D), gbias
        packed = np.empty((B, T, 3, H, D), dtype=q.dtype)
        gbias = self._input_grads(grad, True, True, True, want_bias,
                                  outs=tuple(packed[:, :, i].swapaxes(1, 2) for i in range(3)))[3]
        return packed.reshape(B, T, 3 * H * D), gbias

    def backward_graph(self, g):
        """`Attention.backward_graph` on q, k and v taken from qkv at its place in the graph (the forward's
        qkv packed again from the three views it kept); dq, dk and dv are packed back into one gradient."""
        need = self.needs_input_grad
        want_bias = len(need) > 1 and need[1]
        q, k, v, bias = self.saved[:4]
        B, H, T, D = q.shape
        if self.merged:
            g = g.reshape(B, T, H, D).transpose(1, 2)
        packed = xp_of(q).stack([a.swapaxes(1, 2) for a in (q, k, v)], axis=2)  # (B, T, 3, H, D)
        qkv = graph_input(self, 0, packed.reshape(B, T, 3 * H * D)).reshape(B, T, 3, H, D)
        q, k, v = (qkv[:, :, i].transpose(1, 2) for i in range(3))  # (B, H, T, D) each
        gq, gk, gv, gbias = self._input_grads_graph(g, q, k, v, graph_input(self, 1, bias), need[0], need[0],
                                                    need[0], want_bias)
        if not need[0]:
            return None, gbias
        gqkv = Stack.apply(*(t.transpose(1, 2) for t in (gq, gk, gv)), dim=2)  # (B, T, 3, H, D)
        return gqkv.reshape(B, T, 3 * H * D), gbias
