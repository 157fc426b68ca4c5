"""Attention in O(T) extra memory: key/value chunks with an online softmax (the chapter's Q5).

Plain attention stores the (T, T) score and weight matrices: at T = 16,384 one
float32 matrix is 1 GiB, and backward needs several. Here queries are taken
in blocks of `q_chunk` rows and keys/values in blocks of `k_chunk`; for each
query block a running max m, a running sum ℓ and an accumulator are updated
block by block (Milakov & Gimelshein, 2018; Rabe & Staats, 2021; Dao et al.,
2022, FlashAttention):

    s = q kⱼᵀ · scale + mask,  m' = max(m, rowmax s),  ℓ' = ℓ·e^{m−m'} + rowsum e^{s−m'},
    acc' = acc·e^{m−m'} + e^{s−m'} vⱼ;   out = acc / ℓ,   lse = m + log ℓ.

Backward recomputes each block's weights from the saved log-sum-exp instead
of storing them (P = e^{s − lse}), with D = rowsum(dO ⊙ O):

    dV += Pᵀ dO,  dP = dO Vᵀ,  dS = P ⊙ (dP − D),  dQ += dS K·scale,  dK += dSᵀ Q·scale.

So forward and backward hold only O(q_chunk · k_chunk) scores at a time;
the outputs equal plain attention's up to rounding. Blocks that a causal or
sliding-window mask hides completely are skipped, which makes sliding-window
attention O(T · window) in time as well.

A hand-written backward earns its place here by memory: composing the
forward from autograd ops would keep every block's weights alive for backward.
"""
from __future__ import annotations

import math
import threading

import numpy as np

from seqlab import batch_threads, kernels
from seqlab.autograd.function import Function
from seqlab.autograd.higher_order import constant, graph_input
from seqlab.autograd.ops.fused import attention_grads_graph
from seqlab.autograd.tensor import Tensor
from seqlab.backend import xp_of


def _tile(m, i0: int, i1: int, j0: int, j1: int):
    """Rows i0:i1 and columns j0:j1 of a mask broadcastable to (..., L, S)."""
    if m is None:
        return None
    rows = slice(i0, i1) if m.shape[-2] > 1 else slice(None)
    cols = slice(j0, j1) if m.shape[-1] > 1 else slice(None)
    return m[..., rows, cols]


def _block_totals(xp, m, ell):
    """The end of a query block's online softmax: (ℓ, 1 for a row with every key hidden; lse = m + log ℓ, +inf
    for such a row, so that backward's e^{s − lse} is 0 there)."""
    seen = ell > 0
    total = xp.where(seen, ell, 1)
    return total, xp.where(seen, xp.where(xp.isfinite(m), m, 0) + xp.log(total), m.dtype.type(np.inf))


# below this many multiply-adds of q·kᵀ (batch and heads included) the query blocks run on the calling thread
# alone: a split costs each worker its own buffers and the hand-over (~1 ms of work at 2^26)
MIN_SPLIT_MACS = 1 << 26


class ChunkedAttention(Function):
    """out = softmax(q kᵀ · scale + bias, blocked → −inf) v, block by block (see the module docstring).

    q (..., L, D), k (..., S, D), v (..., S, Dv) with equal leading dims;
    `bias` float and `block` bool (True = may NOT attend) broadcast to
    (..., L, S) and get no gradient. `causal` hides keys j > i; `window` hides
    keys with i − j > window (and, when not causal, j − i > window).
    Rows with every key hidden give 0 (as `F.attention`).

    float32 NumPy arrays without a bias or block mask (a causal or window
    mask is fine) take the compiled tiles (`seqlab.kernels.flash_tiles`):
    each score row is scaled, masked, exponentiated and summed in one pass
    in cache, and on more than one thread (`seqlab.set_num_threads`) the
    query blocks are shared out between worker threads, each with the BLAS
    on one thread (`seqlab.batch_threads.run_on_threads`); in backward
    its workers' parts of dk and dv are summed key block by key block, so
    the memory stays one thread's. q, k and v are read as they are (heads
    split by a transpose too): only the score tiles, buffers of the op's
    own, need one layout. The values are the NumPy formula's up to float32
    rounding.
    """

    def forward(self, q, k, v, bias=None, block=None, scale=1.0, causal=False, window=None,
                q_chunk=512, k_chunk=512):
        xp = xp_of(q)
        self.xp, self.scale, self.causal, self.window = xp, q.dtype.type(scale), causal, window
        self.bias, self.block, self.q_chunk, self.k_chunk = bias, block, q_chunk, k_chunk
        L, S = q.shape[-2], k.shape[-2]
        lead = q.shape[:-2]
        self.tiles = self._compiled_tiles(q, k, v)
        if self.tiles is not None:
            out, lse = self._forward_tiles(self.tiles, q, k, v)
            self.saved = (q, k, v, out, lse.reshape(lead + (L, 1)))
            return out
        out = xp.empty(lead + (L, v.shape[-1]), dtype=q.dtype)  # (..., L, Dv)
        lse = xp.empty(lead + (L, 1), dtype=q.dtype)  # (..., L, 1) log Σ e^s per row
        ninf = q.dtype.type(-np.inf)
        sbuf = self._block_buffer(lead, L, S, q.dtype)  # one score block, reused by every block
        for i0 in range(0, L, q_chunk):
            i1 = min(L, i0 + q_chunk)
            qi = q[..., i0:i1, :]  # (..., bq, D)
            m = xp.full(lead + (i1 - i0, 1), ninf, dtype=q.dtype)  # running max
            ell = xp.zeros(lead + (i1 - i0, 1), dtype=q.dtype)  # running Σ e^{s − m}
            acc = xp.zeros(lead + (i1 - i0, v.shape[-1]), dtype=q.dtype)  # running Σ e^{s − m} v
            for j0, j1 in self._key_blocks(i0, i1, S):
                s = self._scores(qi, k, i0, i1, j0, j1, sbuf)  # (..., bq, bk), in sbuf
                m_new = xp.maximum(m, s.max(axis=-1, keepdims=True))
                m_safe = xp.where(xp.isfinite(m_new), m_new, 0)  # rows hidden so far: no NaN
                s -= m_safe
                p = xp.exp(s, out=s)  # (..., bq, bk), in place
                corr = xp.exp(m - m_safe)  # e^{m − m'}: rescales what was summed before
                ell *= corr
                ell += p.sum(axis=-1, keepdims=True)
                acc *= corr
                acc += p @ v[..., j0:j1, :]  # (..., bq, Dv)
                m = m_new
            total, lse[..., i0:i1, :] = _block_totals(xp, m, ell)
            out[..., i0:i1, :] = acc / total
        self.saved = (q, k, v, out, lse)
        return out

    def _compiled_tiles(self, q, k, v):
        """The kernel module for the compiled tiles, or None (see the class). q, k and v are used as they are,
        strided views too (heads split by a transpose): only the score tiles, the kernels' own buffers, need
        one layout, so nothing of size T is copied."""
        if self.xp is not np or self.bias is not None or self.block is not None:
            return None
        return kernels.flash_tiles(q, k, v)

    def _workers(self, rows: int, L: int, S: int, D: int) -> tuple[int, int]:
        """(n, qc): on how many threads to share out the query blocks, and their rows. n: the threads set
        (`seqlab.set_num_threads`), at most one per `q_chunk` rows, and 1 below `MIN_SPLIT_MACS` multiply-adds
        of q·kᵀ. Split, the blocks have q_chunk / n rows, so that the n workers' score tiles together take
        one thread's memory."""
        from seqlab.runtime import get_num_threads

        n = min(get_num_threads(), -(-L // self.q_chunk))
        if n < 2 or rows * L * S * D < MIN_SPLIT_MACS:
            return 1, self.q_chunk
        return n, -(-self.q_chunk // n)

    @staticmethod
    def _run(work, n: int) -> None:
        """work(w, n) for w < n on n worker threads (each with the BLAS on one thread); work(0, 1) here when
        n is 1 or the workers are taken (another split running)."""
        if n < 2 or not batch_threads.run_on_threads(lambda w: work(w, n), n):
            work(0, 1)

    def _forward_tiles(self, tiles, q, k, v):
        """forward on the compiled tiles: (out (..., L, Dv), lse (R, L)). Worker w of n takes the query blocks
        starts[w::n] (interleaved, so that a causal mask's longer late blocks are shared too). The kernels
        see every (..., a, b) array as (R, a, b), R the leading dims merged: arrays made here in that shape
        and viewed with the leading dims split again, which NumPy always does without a copy."""
        lead, (L, S, D, dv) = q.shape[:-2], (q.shape[-2], k.shape[-2], q.shape[-1], v.shape[-1])
        rows = int(np.prod(lead, dtype=np.int64))
        out = np.empty(lead + (L, dv), np.float32)
        lse = np.empty((rows, L), np.float32)
        n, qc = self._workers(rows, L, S, D)
        starts = range(0, L, qc)
        window = -1 if self.window is None else int(self.window)

        def work(w: int, n: int) -> None:
            sbuf = np.empty((rows, min(qc, L), min(self.k_chunk, S)), np.float32)
            for i0 in starts[w::n]:
                i1 = min(L, i0 + qc)
                qi = q[..., i0:i1, :]
                m = np.full((rows, i1 - i0), -np.inf, np.float32)
                ell = np.zeros((rows, i1 - i0), np.float32)
                acc = np.zeros((rows, i1 - i0, dv), np.float32)
                acc_ = acc.reshape(lead + acc.shape[1:])
                for j0, j1 in self._key_blocks(i0, i1, S):
                    s = sbuf[:, :i1 - i0, :j1 - j0]
                    s_ = s.reshape(lead + s.shape[1:])
                    np.matmul(qi, k[..., j0:j1, :].swapaxes(-1, -2), out=s_)
                    tiles.flash_forward_tile(s, m, ell, acc, self.scale, i0, j0, self.causal, window)
                    acc_ += s_ @ v[..., j0:j1, :]
                total, lse[:, i0:i1] = _block_totals(np, m, ell)
                out[..., i0:i1, :] = (acc / total[..., None]).reshape(acc_.shape)

        self._run(work, n)
        return out, lse

    def _backward_tiles(self, grad):
        """backward on the compiled tiles: (dq, dk, dv) in q's, k's and v's shapes.

        Key blocks outside, query blocks inside: worker w takes the query blocks starts[w::n] (so dq's rows
        are its own). Worker 0 adds its part of a key block's dk and dv into them directly, each other worker
        into a buffer of one key block's size; then the workers meet (a barrier), worker 0 adds the others'
        parts in worker order, and they meet again before the buffers are filled anew. No worker holds a dk or
        dv of its own: the memory stays one thread's, O(T·D)."""
        tiles = self.tiles
        q, k, v, out, lse = self.saved
        lead, (L, S, D, dv_) = q.shape[:-2], (q.shape[-2], k.shape[-2], q.shape[-1], v.shape[-1])
        rows = int(np.prod(lead, dtype=np.int64))
        g = grad.astype(np.float32, copy=False)
        dsum = np.einsum("...id,...id->...i", g, out).reshape(rows, L)  # D = rowsum(dO ⊙ O), a new array
        lse2 = lse.reshape(rows, L)
        dq, dk, dv = (np.zeros(a.shape, np.float32) for a in (q, k, v))
        n, qc = self._workers(rows, L, S, D)
        starts = range(0, L, qc)
        window = -1 if self.window is None else int(self.window)
        kc = min(self.k_chunk, S)
        parts = [None] + [(np.empty((rows, kc, D), np.float32), np.empty((rows, kc, dv_), np.float32))
                          for _ in range(1, n)]  # workers 1..n−1: their part of one key block's dk and dv
        barrier = threading.Barrier(n) if n > 1 else None

        def work(w: int, n: int) -> None:
            shape = (rows, min(qc, L), kc)
            sbuf, dbuf = np.empty(shape, np.float32), np.empty(shape, np.float32)
            try:
                for j0 in range(0, S, self.k_chunk):
                    j1 = min(S, j0 + self.k_chunk)
                    kj, vj = k[..., j0:j1, :], v[..., j0:j1, :]
                    if w == 0:
                        tk, tv = dk[..., j0:j1, :], dv[..., j0:j1, :]
                    else:
                        tk, tv = (a[:, :j1 - j0].reshape(lead + (j1 - j0, a.shape[-1])) for a in parts[w])
                        tk[...] = 0
                        tv[...] = 0
                    for i0 in starts[w::n]:
                        i1 = min(L, i0 + qc)
                        if not self._tile_visible(i0, i1, j0, j1):
                            continue
                        qi, gi = q[..., i0:i1, :], g[..., i0:i1, :]
                        p, ds = sbuf[:, :i1 - i0, :j1 - j0], dbuf[:, :i1 - i0, :j1 - j0]
                        p_, ds_ = p.reshape(lead + p.shape[1:]), ds.reshape(lead + ds.shape[1:])
                        np.matmul(qi, kj.swapaxes(-1, -2), out=p_)
                        tiles.flash_weights_tile(p, lse2[:, i0:i1], self.scale, i0, j0, self.causal, window)  # P
                        tv += p_.swapaxes(-1, -2) @ gi
                        np.matmul(gi, vj.swapaxes(-1, -2), out=ds_)  # dP
                        tiles.flash_ds_tile(ds, p, dsum[:, i0:i1], self.scale)  # dS · scale
                        dq[..., i0:i1, :] += ds_ @ kj
                        tk += ds_.swapaxes(-1, -2) @ qi
                    if n > 1:
                        barrier.wait()  # every worker's part of this key block is in
                        if w == 0:
                            for more in parts[1:]:
                                more_k, more_v = (a[:, :j1 - j0].reshape(lead + (j1 - j0, a.shape[-1]))
                                                  for a in more)
                                tk += more_k
                                tv += more_v
                        barrier.wait()  # the parts are summed: the buffers may be filled again
            except threading.BrokenBarrierError:
                return  # another worker failed: its error is the one raised
            except BaseException:
                if barrier is not None:
                    barrier.abort()  # the others stop waiting for this worker
                raise

        self._run(work, n)
        return dq, dk, dv

    def _key_blocks(self, i0: int, i1: int, S: int):
        """Key blocks (j0, j1) that the causal / window mask does not hide entirely for queries i0..i1−1."""
        for j0 in range(0, S, self.k_chunk):
            j1 = min(S, j0 + self.k_chunk)
            if self.causal and j0 > i1 - 1:
                break  # every later block is in the future
            if self._tile_visible(i0, i1, j0, j1):
                yield j0, j1

    def _tile_visible(self, i0: int, i1: int, j0: int, j1: int) -> bool:
        """Whether any of queries i0..i1−1 sees any of keys j0..j1−1 through the causal / window mask."""
        if self.causal and j0 > i1 - 1:
            return False  # in the future of every query of the block
        if self.window is not None:
            if j1 - 1 < i0 - self.window:
                return False  # too far in the past for every query of the block
            if not self.causal and j0 > i1 - 1 + self.window:
                return False
        return True

    def _block_buffer(self, lead: tuple, L: int, S: int, dtype):
        """Room for one (..., q_chunk, k_chunk) block; edge blocks use its top-left corner."""
        return self.xp.empty(lead + (min(self.q_chunk, L), min(self.k_chunk, S)), dtype=dtype)

    def _hidden(self, block, i0: int, i1: int, j0: int, j1: int):
        """`block` (a tile of the user's mask, or None) or-ed with what causal / window hide of query rows
        i0:i1 against keys j0:j1: (bq, bk) bool, True = hidden."""
        if not (self.causal or self.window is not None):
            return block
        xp = self.xp
        ii = xp.arange(i0, i1)[:, None]  # (bq, 1)
        jj = xp.arange(j0, j1)[None, :]  # (1, bk)
        pos = xp.zeros((i1 - i0, j1 - j0), dtype=bool)
        if self.causal:
            pos |= jj > ii
        if self.window is not None:
            pos |= (ii - jj) > self.window
            if not self.causal:
                pos |= (jj - ii) > self.window
        return pos if block is None else (block | pos)

    def _scores(self, qi, k, i0, i1, j0, j1, buf):
        """Masked, scaled scores of query rows i0:i1 against keys j0:j1, written into `buf`: (..., bq, bk)."""
        xp = self.xp
        s = buf[..., :i1 - i0, :j1 - j0]
        xp.matmul(qi, k[..., j0:j1, :].swapaxes(-1, -2), out=s)  # (..., bq, bk)
        s *= self.scale
        if self.bias is not None:
            b = _tile(self.bias, i0, i1, j0, j1)
            if np.broadcast_shapes(b.shape, s.shape) == s.shape:
                s += b
            else:  # a bias with more leading dims than q: a new array
                s = s + b
        hide = self._hidden(_tile(self.block, i0, i1, j0, j1), i0, i1, j0, j1)
        if hide is not None:
            if np.broadcast_shapes(hide.shape, s.shape) == s.shape:
                xp.copyto(s, s.dtype.type(-np.inf), where=hide)
            else:
                s = xp.where(hide, s.dtype.type(-np.inf), s)
        return s

    def backward(self, grad):
        if self.tiles is not None:
            return self._backward_tiles(grad) + (None, None)
        q, k, v, out, lse = self.saved
        xp = self.xp
        L, S = q.shape[-2], k.shape[-2]
        dq, dk, dv = xp.zeros_like(q), xp.zeros_like(k), xp.zeros_like(v)
        dsum = xp.einsum("...i,...i->...", grad, out)[..., None]  # (..., L, 1) D = rowsum(dO ⊙ O), no (L, Dv) temporary
        sbuf, dbuf = (self._block_buffer(q.shape[:-2], L, S, q.dtype) for _ in range(2))
        for i0 in range(0, L, self.q_chunk):
            i1 = min(L, i0 + self.q_chunk)
            qi, gi = q[..., i0:i1, :], grad[..., i0:i1, :]  # (..., bq, D), (..., bq, Dv)
            lse_i, d_i = lse[..., i0:i1, :], dsum[..., i0:i1, :]  # (..., bq, 1)
            for j0, j1 in self._key_blocks(i0, i1, S):
                p = self._scores(qi, k, i0, i1, j0, j1, sbuf)
                p -= lse_i
                xp.exp(p, out=p)  # (..., bq, bk) the weights again, in sbuf
                vj, kj = v[..., j0:j1, :], k[..., j0:j1, :]
                dv[..., j0:j1, :] += p.swapaxes(-1, -2) @ gi  # (..., bk, Dv)
                ds = dbuf[..., :i1 - i0, :j1 - j0]
                xp.matmul(gi, vj.swapaxes(-1, -2), out=ds)  # dP (..., bq, bk), in dbuf
                ds -= d_i
                ds *= p  # dS = P ⊙ (dP − D)
                ds *= self.scale
                dq[..., i0:i1, :] += ds @ kj  # (..., bq, D)
                dk[..., j0:j1, :] += ds.swapaxes(-1, -2) @ qi  # (..., bk, D)
        return dq, dk, dv, None, None


    def backward_graph(self, g):
        """The backward with Tensor ops, for create_graph=True (autograd.grad): unlike the array backward it
        composes the full (..., L, S) weights (`attention_grads_graph`), so a double backward costs plain
        attention's O(L·S) memory. The causal / window mask becomes one (L, S) block mask; the bias stays a
        constant (it gets no gradient here)."""
        q, k, v = self.saved[:3]
        block = self._hidden(self.block, 0, q.shape[-2], 0, k.shape[-2])
        bias = None if self.bias is None else constant(self.bias)
        need = self.needs_input_grad
        gq, gk, gv, _ = attention_grads_graph(g, graph_input(self, 0, q), graph_input(self, 1, k),
                                              graph_input(self, 2, v), bias, block, float(self.scale), None,
                                              need[0], need[1], need[2], False)
        return gq, gk, gv, None, None


def _split_mask(attn_mask, xp, dtype):
    """SDPA semantics (bool True = may attend; float = added) -> (bias, block) arrays."""
    if attn_mask is None:
        return None, None
    m = attn_mask.data if isinstance(attn_mask, Tensor) else xp.asarray(attn_mask)
    if m.dtype == bool:
        return None, ~m
    return m.astype(dtype, copy=False), None


def memory_efficient_attention(query: Tensor, key: Tensor, value: Tensor, attn_mask=None, is_causal: bool = False,
                               scale: float | None = None, window: int | None = None, chunk_size: int = 512,
                               q_chunk_size: int | None = None) -> Tensor:
    """softmax(q kᵀ · scale + mask) v without ever holding the (L, S) weights.

    query (..., L, D), key (..., S, D), value (..., S, Dv) -> (..., L, Dv).
    attn_mask: as `F.scaled_dot_product_attention` (bool True = may attend,
    float added), broadcastable to (..., L, S); it gets no gradient. A full
    (L, S) mask costs O(L·S) memory itself: prefer `is_causal` / `window`,
    which are computed per block. window: keys within `window` positions of
    the query (only earlier ones when causal). No dropout.
    """
    q, k, v = (x if isinstance(x, Tensor) else Tensor._of(x) for x in (query, key, value))
    if q.shape[-1] != k.shape[-1]:
        raise ValueError(f"query has shape {q.shape} and key {k.shape}: their last dims must match")
    if k.shape[-2] != v.shape[-2] or q.shape[:-2] != k.shape[:-2] or k.shape[:-2] != v.shape[:-2]:
        raise ValueError(f"query {q.shape}, key {k.shape} and value {v.shape} need equal leading dims and "
                         f"key/value of one length")
    if chunk_size < 1 or (q_chunk_size is not None and q_chunk_size < 1):
        raise ValueError(f"chunk sizes must be >= 1, got {chunk_size} and {q_chunk_size}")
    if window is not None and window < 0:
        raise ValueError(f"window must be >= 0, got {window}")
    xp = xp_of(q.data)
    bias, block = _split_mask(attn_mask, xp, q.dtype)
    s = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
    return ChunkedAttention.apply(q, k, v, bias, block, scale=s, causal=is_causal, window=window,
                                  q_chunk=q_chunk_size or chunk_size, k_chunk=chunk_size)


def sliding_window_mask(L: int, S: int | None = None, window: int = 128, causal: bool = True, xp=np) -> np.ndarray:
    """(L, S) bool, True = may attend: |i − j| ≤ window (and j ≤ i when causal). For plain attention."""
    S = L if S is None else S
    ii, jj = xp.arange(L)[:, None], xp.arange(S)[None, :]
    ok = (ii - jj) <= window
    ok &= (jj <= ii) if causal else ((jj - ii) <= window)
    return ok


def sliding_window_attention(query: Tensor, key: Tensor, value: Tensor, window: int, causal: bool = True,
                             scale: float | None = None, chunk_size: int = 256) -> Tensor:
    """Each query attends only to keys within `window` positions (earlier ones when causal): O(T·window).

    Longformer / Mistral-style local attention, run by the chunked kernel,
    which skips the blocks outside the band. Shapes as `memory_efficient_attention`.
    """
    return memory_efficient_attention(query, key, value, is_causal=causal, scale=scale, window=window,
                                      chunk_size=chunk_size)
