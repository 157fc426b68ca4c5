"""Fused recurrent kernels: one Function runs a whole layer-direction over time.

Why a hand-written backward (STYLE habit 2: speed): composed from primitive
ops, one LSTM step records ~20 graph nodes, so 1,000 steps record 20,000
and the backward walks them all in Python. Here the forward is a NumPy loop
over the chapter's cell equations and the backward is the matching loop of
hand-derived cell gradients (BPTT, the chapter's 7.2.2), with:

- the input projection W_ih x_t + b_ih for ALL steps done before the scan,
  by the caller, in one matmul (it has no recurrence);
- one matmul per step for all gates, h_{t−1} W_hhᵀ (G·H columns);
- ∂L/∂W_hh accumulated as ONE matmul after the backward loop.

Each cell's step and its backward sit side by side below; the plain formulas
are in the docstrings, and tests/recurrent holds the kernel to the composed
cells of `seqlab.nn.recurrent` (and both to torch).

Gate order and formulas are torch's: LSTM (i, f, g, o), GRU (r, z, n) with
n = tanh(W_in x + b_in + r ⊙ (W_hn h + b_hn)). The LSTM with projections
(torch's proj_size, h_t = W_hr (o_t ⊙ tanh c_t)) has its own Function,
`ProjectedLSTMScan`, built on the same LSTM step and back step.

Double backward (autograd.grad(..., create_graph=True)): both scans' `backward_graph` differentiate the
composed cells of `seqlab.nn.recurrent` over the same steps (`scan_grads_graph`), so higher derivatives
are the composed path's; the first-order loops above are untouched by it.
"""
from __future__ import annotations

from seqlab.autograd import versions as _versions
from seqlab.autograd.function import Function
from seqlab.backend import xp_of

MODES = ("rnn_tanh", "rnn_relu", "lstm", "gru")
GATES = {"rnn_tanh": 1, "rnn_relu": 1, "lstm": 4, "gru": 3}


def _sigmoid(x):
    """σ(x) = ½(1 + tanh(x/2)): one transcendental, no overflow for any x."""
    xp = xp_of(x)
    return 0.5 * (1.0 + xp.tanh(0.5 * x))


# ---- cells: step(x_t, state, hh) -> (new_state, cache); back(d_new, cache) -> (dx_t, dhh_t, d_prev) ----
# `x_t` is the precomputed W_ih x_t + b_ih (B, G·H); `hh` is W_hh h_{t−1} + b_hh (B, G·H).
# `back` returns dx_t (B, G·H), dhh_t (B, G·H) (the gradient of hh) and the gradient of
# the previous state WITHOUT the W_hh path, which the scan adds once: dh_{t−1} += dhh_t W_hh.

def rnn_tanh_step(x, state, hh):
    """h_t = tanh(W_ih x_t + b_ih + W_hh h_{t−1} + b_hh)."""
    h = xp_of(x).tanh(x + hh)
    return (h,), h


def rnn_tanh_back(d, h):
    da = d[0] * (1 - h * h)  # tanh' = 1 − tanh²
    return da, da, (None,)


def rnn_relu_step(x, state, hh):
    """h_t = relu(W_ih x_t + b_ih + W_hh h_{t−1} + b_hh)."""
    h = xp_of(x).maximum(x + hh, 0)
    return (h,), h


def rnn_relu_back(d, h):
    da = d[0] * (h > 0)
    return da, da, (None,)


def lstm_step(x, state, hh):
    """(i, f, g, o) = (σ, σ, tanh, σ)(W_ih x_t + b_ih + W_hh h_{t−1} + b_hh);
    c_t = f ⊙ c_{t−1} + i ⊙ g;  h_t = o ⊙ tanh(c_t)."""
    xp = xp_of(x)
    _, c_prev = state
    H = c_prev.shape[-1]
    a = x + hh                                   # (B, 4H)
    gates = _sigmoid(a)                          # i, f, o use σ; g is overwritten below
    gates[:, 2 * H:3 * H] = xp.tanh(a[:, 2 * H:3 * H])
    i, f, g, o = (gates[:, k * H:(k + 1) * H] for k in range(4))
    c = f * c_prev + i * g
    tc = xp.tanh(c)
    return (o * tc, c), (gates, c_prev, tc)


def lstm_back(d, cache):
    """dc = dc_t + dh_t ⊙ o ⊙ (1 − tanh² c_t);  di = dc ⊙ g, df = dc ⊙ c_{t−1}, dg = dc ⊙ i,
    do = dh_t ⊙ tanh c_t; each times its activation's derivative; dc_{t−1} = dc ⊙ f."""
    xp = xp_of(cache[0])
    gates, c_prev, tc = cache
    dh, dc_next = d
    H = tc.shape[-1]
    i, f, g, o = (gates[:, k * H:(k + 1) * H] for k in range(4))
    dc = dh * o * (1 - tc * tc)
    if dc_next is not None:
        dc = dc + dc_next
    da = xp.empty_like(gates)                    # (B, 4H)
    da[:, 0:H] = dc * g * i * (1 - i)
    da[:, H:2 * H] = dc * c_prev * f * (1 - f)
    da[:, 2 * H:3 * H] = dc * i * (1 - g * g)
    da[:, 3 * H:] = dh * tc * o * (1 - o)
    return da, da, (None, dc * f)


def gru_step(x, state, hh):
    """r = σ(x_r + hh_r), z = σ(x_z + hh_z), n = tanh(x_n + r ⊙ hh_n);
    h_t = (1 − z) ⊙ n + z ⊙ h_{t−1}   (torch's GRU: b_hn stays inside r ⊙ (·))."""
    xp = xp_of(x)
    (h_prev,) = state
    H = h_prev.shape[-1]
    rz = _sigmoid(x[:, :2 * H] + hh[:, :2 * H])  # (B, 2H)
    r, z = rz[:, :H], rz[:, H:]
    hh_n = hh[:, 2 * H:]
    n = xp.tanh(x[:, 2 * H:] + r * hh_n)
    h = n + z * (h_prev - n)
    return (h,), (r, z, n, hh_n, h_prev)


def gru_back(d, cache):
    """dn = dh ⊙ (1 − z), dz = dh ⊙ (h_{t−1} − n), dh_{t−1} (direct) = dh ⊙ z;
    da_n = dn ⊙ (1 − n²), dr = da_n ⊙ hh_n; d hh_n = da_n ⊙ r."""
    xp = xp_of(cache[0])
    r, z, n, hh_n, h_prev = cache
    (dh,) = d
    H = n.shape[-1]
    da_n = dh * (1 - z) * (1 - n * n)
    dx = xp.empty((dh.shape[0], 3 * H), dtype=dh.dtype)  # (B, 3H)
    dx[:, :H] = da_n * hh_n * r * (1 - r)
    dx[:, H:2 * H] = dh * (h_prev - n) * z * (1 - z)
    dx[:, 2 * H:] = da_n
    dhh = dx.copy()
    dhh[:, 2 * H:] = da_n * r
    return dx, dhh, (dh * z,)


CELLS = {
    "rnn_tanh": (rnn_tanh_step, rnn_tanh_back),
    "rnn_relu": (rnn_relu_step, rnn_relu_back),
    "lstm": (lstm_step, lstm_back),
    "gru": (gru_step, gru_back),
}


class RecurrentScan(Function):
    """One direction of one recurrent layer over a whole (padded) batch.

    Inputs: xproj (B, T, G·H) = W_ih x_t + b_ih for every step; h0 (B, H);
    c0 (B, H) for the LSTM, else None; w_hh (G·H, H); b_hh (G·H,) or None.
    Params: mode (one of MODES); reverse (run t = T−1 … 0); mask (B, T) bool,
    True on real steps, or None when every sequence has length T.

    Returns one array (B, T + S, H) with S = number of state arrays: rows
    0..T−1 are the outputs h_t (zero where mask is False) and rows T, T+1
    the final h_n (and c_n). Where mask is False the state is carried
    unchanged, so the forward direction ends at each sequence's last real
    step and the reverse direction starts there from h0 — what torch's
    packed sequences compute.
    """

    def forward(self, xproj, h0, c0, w_hh, b_hh, mode="lstm", reverse=False, mask=None, xproj_from=None):
        xp = xp_of(xproj)
        step, _ = CELLS[mode]
        B, T, _ = xproj.shape
        state = (h0, c0) if mode == "lstm" else (h0,)
        H = h0.shape[-1]
        xs = xproj.transpose(1, 0, 2)                          # (T, B, G·H) view
        ms = None if mask is None else mask.T[:, :, None]      # (T, B, 1)
        out = xp.zeros((T + len(state), B, H), dtype=xproj.dtype)
        h_prev = xp.empty((T, B, H), dtype=xproj.dtype)        # h_{t−1} of every step, for dW_hh
        caches = [None] * T
        order = range(T - 1, -1, -1) if reverse else range(T)
        for t in order:
            h_prev[t] = state[0]
            hh = state[0] @ w_hh.T                             # (B, G·H): one matmul for all gates
            if b_hh is not None:
                hh += b_hh
            new, caches[t] = step(xs[t], state, hh)
            if ms is None:
                state, out[t] = new, new[0]
            else:
                m = ms[t]
                state = tuple(xp.where(m, a, b) for a, b in zip(new, state))
                out[t] = new[0] * m
        for k, s in enumerate(state):
            out[T + k] = s
        msf = None if ms is None else ms.astype(xproj.dtype)   # (T, B, 1) as 0./1. for the backward
        self.saved = (caches, h_prev, w_hh, msf)
        self.mode, self.order, self.has_bias, self.n_state = mode, order, b_hh is not None, len(state)
        # for backward_graph: xproj itself only when it cannot be made again (see `scan_grads_graph`)
        self.graph_arrays = (xproj if xproj_from is None else None, h0, c0, w_hh, b_hh)
        self.xproj_from, self.reverse, self.mask = xproj_from, reverse, mask
        self.from_clock = _versions._clock  # x, W_ih, b_ih changed in place after this: refused (scan_grads_graph)
        return xp.ascontiguousarray(out.transpose(1, 0, 2))   # (B, T + S, H)

    def backward(self, grad):
        caches, h_prev, w_hh, ms = self.saved
        _, back = CELLS[self.mode]
        xp = xp_of(grad)
        g = grad.transpose(1, 0, 2)                            # (T + S, B, H) view
        T, B, _ = h_prev.shape
        d_state = [g[T + k].copy() for k in range(self.n_state)]  # ∂L/∂(h_n, c_n)
        dx = xp.empty((T, B, w_hh.shape[0]), dtype=grad.dtype)   # (T, B, G·H)
        dhh = dx if self.mode != "gru" else xp.empty_like(dx)
        for t in reversed(self.order):
            d_h = d_state[0] + g[t]                            # from step t+1 and from output t
            if ms is None:
                d_new, keep = [d_h] + d_state[1:], None
            else:
                m = ms[t]
                d_new = [d_h * m] + [d * m for d in d_state[1:]]
                keep = [d_state[0] * (1 - m)] + [d * (1 - m) for d in d_state[1:]]
            dx_t, dhh_t, d_prev = back(tuple(d_new), caches[t])
            dx[t] = dx_t
            if dhh is not dx:
                dhh[t] = dhh_t
            dh = dhh_t @ w_hh                                  # (B, H): the recurrent path
            if d_prev[0] is not None:
                dh += d_prev[0]
            d_state = [dh] + list(d_prev[1:])
            if keep is not None:                               # padded steps pass the state through
                d_state = [a + k for a, k in zip(d_state, keep)]
        G = w_hh.shape[0]
        d_whh = dhh.reshape(-1, G).T @ h_prev.reshape(-1, h_prev.shape[-1])  # (G·H, H), one matmul
        d_bhh = dhh.sum(axis=(0, 1)) if self.has_bias else None
        d_x = dx.transpose(1, 0, 2)                            # (B, T, G·H)
        d_h0 = d_state[0]
        d_c0 = d_state[1] if self.n_state > 1 else None
        return d_x, d_h0, d_c0, d_whh, d_bhh

    def backward_graph(self, g):
        """The backward with Tensor ops, for create_graph=True: see `scan_grads_graph`."""
        return scan_grads_graph(self, g, self.mode)


class ProjectedLSTMScan(Function):
    """One direction of one LSTM layer with torch's projection (`proj_size` P > 0; Sak et al. 2014, LSTMP):

        c_t = f ⊙ c_{t−1} + i ⊙ g   (gates from W_ih x_t + b_ih + W_hh h_{t−1} + b_hh, as `lstm_step`)
        h_t = W_hr (o ⊙ tanh(c_t))   # (B, P): the recurrent state and the output; c_t stays (B, H)

    A Function of its own so that RecurrentScan's loop stays as it is; the cell is `lstm_step`/`lstm_back`
    unchanged, with the projection applied after the step and its transpose before the back step.
    ∂L/∂W_hr, like ∂L/∂W_hh, is ONE matmul after the backward loop.

    Inputs: xproj (B, T, 4H); h0 (B, P); c0 (B, H); w_hh (4H, P); b_hh (4H,) or None; w_hr (P, H).
    Params: reverse, mask as RecurrentScan's.
    Returns one array (B, T + 2, H): rows 0..T−1 hold the outputs h_t in their first P columns (zero where
    mask is False), row T the final h_n (first P columns), row T + 1 the final c_n; the other columns are 0.
    """

    def forward(self, xproj, h0, c0, w_hh, b_hh, w_hr, reverse=False, mask=None, xproj_from=None):
        xp = xp_of(xproj)
        B, T, _ = xproj.shape
        P, H = w_hr.shape
        xs = xproj.transpose(1, 0, 2)                          # (T, B, 4H) view
        ms = None if mask is None else mask.T[:, :, None]      # (T, B, 1)
        out = xp.zeros((T + 2, B, H), dtype=xproj.dtype)
        h_prev = xp.empty((T, B, P), dtype=xproj.dtype)        # h_{t−1} of every step, for dW_hh
        m_all = xp.empty((T, B, H), dtype=xproj.dtype)         # o ⊙ tanh(c_t) of every step, for dW_hr
        caches = [None] * T
        h, c = h0, c0
        order = range(T - 1, -1, -1) if reverse else range(T)
        for t in order:
            h_prev[t] = h
            hh = h @ w_hh.T                                    # (B, 4H): one matmul for all gates
            if b_hh is not None:
                hh += b_hh
            (m_t, c_new), caches[t] = lstm_step(xs[t], (h, c), hh)
            m_all[t] = m_t
            h_new = m_t @ w_hr.T                               # (B, P): the projection
            if ms is None:
                h, c = h_new, c_new
                out[t, :, :P] = h_new
            else:
                m = ms[t]
                h, c = xp.where(m, h_new, h), xp.where(m, c_new, c)
                out[t, :, :P] = h_new * m
        out[T, :, :P] = h
        out[T + 1] = c
        msf = None if ms is None else ms.astype(xproj.dtype)   # (T, B, 1) as 0./1. for the backward
        self.saved = (caches, h_prev, m_all, w_hh, w_hr, msf)
        self.order, self.has_bias = order, b_hh is not None
        # for backward_graph: xproj itself only when it cannot be made again (see `scan_grads_graph`)
        self.graph_arrays = (xproj if xproj_from is None else None, h0, c0, w_hh, b_hh, w_hr)
        self.xproj_from, self.reverse, self.mask = xproj_from, reverse, mask
        self.from_clock = _versions._clock  # x, W_ih, b_ih changed in place after this: refused (scan_grads_graph)
        return xp.ascontiguousarray(out.transpose(1, 0, 2))   # (B, T + 2, H)

    def backward(self, grad):
        caches, h_prev, m_all, w_hh, w_hr, ms = self.saved
        xp = xp_of(grad)
        g = grad.transpose(1, 0, 2)                            # (T + 2, B, H) view
        T, B, P = h_prev.shape
        d_h, d_c = g[T, :, :P].copy(), g[T + 1].copy()         # ∂L/∂(h_n, c_n)
        dx = xp.empty((T, B, w_hh.shape[0]), dtype=grad.dtype)  # (T, B, 4H)
        dh_new = xp.empty((T, B, P), dtype=grad.dtype)         # ∂L/∂h_t of every step, for dW_hr
        for t in reversed(self.order):
            dh_t = d_h + g[t, :, :P]                           # from step t+1 and from output t
            dc_t = d_c
            if ms is not None:                                 # padded steps pass the state through
                m = ms[t]
                keep_h, keep_c = d_h * (1 - m), d_c * (1 - m)
                dh_t, dc_t = dh_t * m, dc_t * m
            dh_new[t] = dh_t
            dx_t, _, (_, d_c) = lstm_back((dh_t @ w_hr, dc_t), caches[t])  # through h_t = W_hr m_t
            dx[t] = dx_t
            d_h = dx_t @ w_hh                                  # (B, P): the recurrent path
            if ms is not None:
                d_h, d_c = d_h + keep_h, d_c + keep_c
        G, H = w_hh.shape[0], w_hr.shape[1]
        d_whh = dx.reshape(-1, G).T @ h_prev.reshape(-1, P)   # (4H, P), one matmul
        d_whr = dh_new.reshape(-1, P).T @ m_all.reshape(-1, H)  # (P, H), one matmul
        d_bhh = dx.sum(axis=(0, 1)) if self.has_bias else None
        return dx.transpose(1, 0, 2), d_h, d_c, d_whh, d_bhh, d_whr

    def backward_graph(self, g):
        """The backward with Tensor ops, for create_graph=True: see `scan_grads_graph`."""
        return scan_grads_graph(self, g, "lstm")


# ---- double backward ----------------------------------------------------------------------------------------
def scan_grads_graph(fn, g, mode: str) -> tuple:
    """The gradients of a scan (RecurrentScan or ProjectedLSTMScan `fn`) for output gradient `g` (a Tensor
    (B, T + S, H)), as Tensors with a graph (autograd.grad(..., create_graph=True)).

    The layer-direction is composed again from the graph inputs, one cell per step (`recurrent.composed_scan`,
    the cells the kernel is held to, with the same mask and direction), and that composition is differentiated
    by the double-backward engine itself (`higher_order.run_graph_differentiable`, with g's rows as the root
    gradients): every derivative, of any order, is the composed cells'. The engine's targets are stand-ins made
    from the graph inputs: the per-step slices x_t = xproj[:, t] and identity views of h0, c0, W_hh, b_hh (W_hr).
    It captures their gradients and runs only the composition, none of the graph below the scan; while it runs,
    the stand-ins' ops are marked as needing no input gradient, so it does not even walk that graph. The dx_t
    are stacked into ∂/∂xproj. Each composed op is recorded, a graph per time step: slower than the fused
    first-order backward.

    xproj (B, T, G·H) is not kept by the forward when the layer says how it was made (`xproj_from`: the
    arrays x, W_ih, b_ih of F.linear, which the projection's own backward keeps anyway): it is made again
    here by the same call, so every training step holds no more than before double backward existed.
    """
    from seqlab import creation
    from seqlab.autograd import engine, higher_order
    from seqlab.autograd.ops.movement import Reshape
    from seqlab.nn.recurrent import composed_scan

    arrays, need = fn.graph_arrays, fn.needs_input_grad
    if arrays[0] is None:                              # xproj made again, as the layer made it
        _versions.check(fn, fn.xproj_from, fn.from_clock)  # from the arrays the forward read, unchanged
        from seqlab import functional as F
        from seqlab.autograd.function import no_grad
        from seqlab.autograd.tensor import Tensor
        with no_grad():
            xproj = F.linear(*(None if a is None else Tensor._from_op(a, None) for a in fn.xproj_from)).data
        arrays = (xproj,) + tuple(arrays[1:])
    T = arrays[0].shape[1]
    ins, targets = [], []                              # ins: what the composition reads, one per input
    for i, a in enumerate(arrays):
        x = higher_order.graph_input(fn, i, a)
        if i == 0:                                     # T × (B, G·H), as the composed path reads xproj
            ins.append([x[:, t] for t in range(T)])
            if need[0]:
                targets += ins[0]
        elif need[i]:
            ins.append(Reshape.apply(x, shape=x.shape))  # an identity view: the engine's target
            targets.append(ins[-1])
        else:
            ins.append(x)
    xs, h0, c0, w_hh, b_hh = ins[:5]
    w_hr = ins[5] if len(ins) > 5 else None
    outs, h_n, c_n = composed_scan(mode, xs, h0, c0, w_hh, b_hh, fn.reverse, fn.mask, w_hr)
    R = h_n.shape[-1]                                  # P for the projected LSTM, else H
    y = creation.stack(outs, dim=1)                    # (B, T, R)
    pairs = [(y, g[:, :T, :R]), (h_n, g[:, T, :R])] + ([] if c_n is None else [(c_n, g[:, T + 1])])
    pairs = [(r, rg) for r, rg in pairs if r.requires_grad]
    with engine.stopping_at(targets):                 # the walk stops at the stand-ins
        got = higher_order.run_graph_differentiable([r for r, _ in pairs], [rg for _, rg in pairs], True, targets)
    got, grads = iter(got), []
    for i, a in enumerate(arrays):
        if not need[i]:
            grads.append(None)
        elif i == 0:
            zero = higher_order.constant(a[:, 0] * 0)
            grads.append(creation.stack([zero if d is None else d for d in (next(got) for _ in range(T))], dim=1))
        else:
            grads.append(next(got))
    return tuple(grads)
