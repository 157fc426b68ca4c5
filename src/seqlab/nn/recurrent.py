"""Recurrent layers (the chapter's 7.2): RNN, LSTM, GRU and their cells, as torch.nn.

Constructor arguments, parameter names (`weight_ih_l0`, `weight_hh_l0_reverse`, `weight_hr_l0`, …),
gate order (LSTM i, f, g, o; GRU r, z, n), initialisation U(−1/√H, 1/√H) and
return values mirror torch, so `load_state_dict(torch_module.state_dict())`
works. Always batch-first: x is (B, T, input_size), with `lengths=` (B,) for a padded
batch, or a `PackedSequence` (torch's `pack_padded_sequence`), whose output comes back packed.

The chapter's `SimpleRNN` listing swaps H and T and keeps a hidden state of
the wrong shape; the batched version is simply

    h_t = tanh(x_t W_ihᵀ + b_ih + h_{t−1} W_hhᵀ + b_hh)     # x_t (B, I), h_t (B, H)

with the x-part computed for every t at once (one matmul, no recurrence).

Two equal paths run a layer: the composed cells below (readable, every
op recorded by autograd) and the fused kernel of `rnn_kernels` (default:
one Function per layer-direction, hand-written BPTT). Tests hold them equal.

`LSTM(proj_size=P)` is torch's LSTM with projections: h_t = W_hr (o_t ⊙ tanh(c_t)), so the state h and
the output have size P < H while c keeps size H.
"""
from __future__ import annotations

import math

import numpy as np

from seqlab import creation
from seqlab import functional as F
from seqlab.autograd.tensor import Tensor
from seqlab.backend import to_numpy, xp_of
from seqlab.nn import init
from seqlab.nn.module import Module, Parameter, takes_device
from seqlab.nn.rnn_kernels import GATES, ProjectedLSTMScan, RecurrentScan
from seqlab.nn.utils.rnn import PackedSequence, _pack_as, pad_packed_sequence


# ---- the chapter's cell equations, composed from autograd ops -----------------------------
# `xp` is the input projection W_ih x_t + b_ih (B, G·H), computed outside the recurrence.
def rnn_step(xp: Tensor, h: Tensor, w_hh: Tensor, b_hh: Tensor | None, nonlinearity: str = "tanh") -> Tensor:
    """h_t = act(W_ih x_t + b_ih + W_hh h_{t−1} + b_hh)."""
    a = xp + F.linear(h, w_hh, b_hh)  # (B, H)
    return a.tanh() if nonlinearity == "tanh" else a.relu()


def lstm_step(xp: Tensor, h: Tensor, c: Tensor, w_hh: Tensor, b_hh: Tensor | None) -> tuple[Tensor, Tensor]:
    """i, f, g, o = σ, σ, tanh, σ of (W_ih x_t + b_ih + W_hh h_{t−1} + b_hh), in torch's order;
    c_t = f ⊙ c_{t−1} + i ⊙ g;  h_t = o ⊙ tanh(c_t)."""
    i, f, g, o = (xp + F.linear(h, w_hh, b_hh)).chunk(4, dim=-1)  # 4 × (B, H)
    c = f.sigmoid() * c + i.sigmoid() * g.tanh()
    return o.sigmoid() * c.tanh(), c


def gru_step(xp: Tensor, h: Tensor, w_hh: Tensor, b_hh: Tensor | None) -> Tensor:
    """r = σ(W_ir x + b_ir + W_hr h + b_hr), z = σ(W_iz x + b_iz + W_hz h + b_hz),
    n = tanh(W_in x + b_in + r ⊙ (W_hn h + b_hn)),  h_t = (1 − z) ⊙ n + z ⊙ h_{t−1}."""
    x_r, x_z, x_n = xp.chunk(3, dim=-1)                     # 3 × (B, H)
    h_r, h_z, h_n = F.linear(h, w_hh, b_hh).chunk(3, dim=-1)
    r, z = (x_r + h_r).sigmoid(), (x_z + h_z).sigmoid()
    n = (x_n + r * h_n).tanh()
    return (1 - z) * n + z * h


def composed_scan(mode: str, xs: list, h: Tensor, c: Tensor | None, w_hh: Tensor, b_hh: Tensor | None,
                  reverse: bool = False, mask=None, w_hr: Tensor | None = None) -> tuple[list, Tensor, Tensor | None]:
    """One direction of one layer, one composed cell per step: `xs` holds the T input projections
    W_ih x_t + b_ih (B, G·H), `mode` is one of rnn_kernels.MODES, `mask` (B, T) bool or None (past a
    sequence's end the state is carried and the output is 0), `w_hr` (P, H) the LSTM's projection.
    Returns (the T outputs (B, R) in time order, h_n, c_n or None). `_scan_composed` runs a layer with it,
    and the fused kernels' double backward (rnn_kernels) differentiates it."""
    T = len(xs)
    outs = [None] * T
    for t in (range(T - 1, -1, -1) if reverse else range(T)):
        x_t = xs[t]                                                 # (B, G·H)
        if mode == "lstm":
            h_new, c_new = lstm_step(x_t, h, c, w_hh, b_hh)
            if w_hr is not None:
                h_new = F.linear(h_new, w_hr)                       # (B, P)
        elif mode == "gru":
            h_new, c_new = gru_step(x_t, h, w_hh, b_hh), None
        else:
            h_new, c_new = rnn_step(x_t, h, w_hh, b_hh, mode[4:]), None
        if mask is None:
            h, c, outs[t] = h_new, c_new, h_new
        else:  # past a sequence's end the state is carried and the output is 0
            m = mask[:, t, None]                                    # (B, 1)
            h, outs[t] = creation.where(m, h_new, h), creation.where(m, h_new, 0.0)
            c = None if c is None else creation.where(m, c_new, c)
    return outs, h, c


def _uniform_init(module: Module, hidden_size: int) -> None:
    """torch's init for every recurrent weight and bias: U(−1/√H, 1/√H)."""
    k = 1.0 / math.sqrt(hidden_size)
    for p in module.parameters():
        init.uniform_(p, -k, k)


# ---- cells ----------------------------------------------------------------------------------
class _CellBase(Module):
    gates = 1

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, dtype=None):
        super().__init__()
        if input_size <= 0 or hidden_size <= 0:
            raise ValueError(f"{type(self).__name__} needs positive sizes, got input_size={input_size}, "
                             f"hidden_size={hidden_size}")
        self.input_size, self.hidden_size, self.bias = input_size, hidden_size, bias
        G = self.gates * hidden_size
        self.weight_ih = Parameter(creation.zeros(G, input_size, dtype=dtype))   # (G·H, I)
        self.weight_hh = Parameter(creation.zeros(G, hidden_size, dtype=dtype))  # (G·H, H)
        if bias:
            self.bias_ih = Parameter(creation.zeros(G, dtype=dtype))
            self.bias_hh = Parameter(creation.zeros(G, dtype=dtype))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        _uniform_init(self, hidden_size)

    def _input(self, x: Tensor) -> tuple[Tensor, bool]:
        """(B, I) as is; an unbatched (I,) input becomes (1, I), as torch allows."""
        if x.ndim not in (1, 2) or x.shape[-1] != self.input_size:
            raise ValueError(f"{type(self).__name__} expects input (B, {self.input_size}) or "
                             f"({self.input_size},), got shape {x.shape}")
        return (x.unsqueeze(0), True) if x.ndim == 1 else (x, False)

    def _state(self, h, x: Tensor, unbatched: bool):
        if h is None:
            return Tensor(xp_of(x.data).zeros((x.shape[0], self.hidden_size), dtype=x.dtype))
        h = h.unsqueeze(0) if unbatched else h
        if h.shape != (x.shape[0], self.hidden_size):
            raise ValueError(f"{type(self).__name__}: hidden state has shape {h.shape}, "
                             f"expected ({x.shape[0]}, {self.hidden_size})")
        return h

    def extra_repr(self) -> str:
        return f"{self.input_size}, {self.hidden_size}" + ("" if self.bias else ", bias=False")


@takes_device
class RNNCell(_CellBase):
    """h' = tanh(W_ih x + b_ih + W_hh h + b_hh) (or relu). x (B, I), h (B, H) -> h' (B, H)."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, nonlinearity: str = "tanh",
                 dtype=None):
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"nonlinearity must be 'tanh' or 'relu', got {nonlinearity!r}")
        super().__init__(input_size, hidden_size, bias, dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:  # noqa: A002 (torch's name)
        x, unbatched = self._input(input)
        h = self._state(hx, x, unbatched)
        out = rnn_step(F.linear(x, self.weight_ih, self.bias_ih), h, self.weight_hh, self.bias_hh,
                       self.nonlinearity)
        return out.squeeze(0) if unbatched else out


@takes_device
class LSTMCell(_CellBase):
    """(h', c') from x (B, I) and (h, c) (B, H) each; gates i, f, g, o stacked in `weight_ih` (4H, I)."""

    gates = 4

    def forward(self, input: Tensor,  # noqa: A002 (torch's name)
                hx: tuple[Tensor, Tensor] | None = None) -> tuple[Tensor, Tensor]:
        x, unbatched = self._input(input)
        h, c = (None, None) if hx is None else hx
        h, c = self._state(h, x, unbatched), self._state(c, x, unbatched)
        h, c = lstm_step(F.linear(x, self.weight_ih, self.bias_ih), h, c, self.weight_hh, self.bias_hh)
        return (h.squeeze(0), c.squeeze(0)) if unbatched else (h, c)


@takes_device
class GRUCell(_CellBase):
    """h' from x (B, I) and h (B, H); gates r, z, n stacked in `weight_ih` (3H, I)."""

    gates = 3

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:  # noqa: A002 (torch's name)
        x, unbatched = self._input(input)
        h = self._state(hx, x, unbatched)
        out = gru_step(F.linear(x, self.weight_ih, self.bias_ih), h, self.weight_hh, self.bias_hh)
        return out.squeeze(0) if unbatched else out


# ---- multi-layer, optionally bidirectional layers ------------------------------------------
def lengths_mask(lengths, batch: int, steps: int, xp=np):
    """(B, T) bool mask, True on each sequence's real steps; None when every length is T.

    `lengths` is a (B,) sequence of ints in 1..T (a list, NumPy array or Tensor).
    """
    if lengths is None:
        return None
    arr = lengths.numpy() if isinstance(lengths, Tensor) else to_numpy(lengths)  # (B,)
    if arr.shape != (batch,) or arr.dtype.kind not in "iu":
        raise ValueError(f"lengths must be {batch} integers (one per sequence), got {arr.dtype} of shape {arr.shape}")
    if arr.size and (arr.min() < 1 or arr.max() > steps):
        raise ValueError(f"lengths must lie in 1..{steps} (the padded length), got min {arr.min()}, max {arr.max()}")
    if (arr == steps).all():
        return None
    return xp.asarray(np.arange(steps)[None, :] < arr[:, None])  # (B, T)


@takes_device
class _RNNBase(Module):
    """Shared by RNN, LSTM and GRU: parameters per layer and direction, the layer loop."""

    def __init__(self, mode: str, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True,
                 batch_first: bool = True, dropout: float = 0.0, bidirectional: bool = False, proj_size: int = 0,
                 dtype=None, fused: bool = True):  # torch's order, then seqlab's `fused`
        super().__init__()
        if not batch_first:
            raise ValueError("seqlab's recurrent layers are always batch-first (x is (B, T, input_size)); "
                             "batch_first=False is not supported — transpose the input instead")
        if input_size <= 0 or hidden_size <= 0 or num_layers <= 0:
            raise ValueError(f"{type(self).__name__} needs positive sizes, got input_size={input_size}, "
                             f"hidden_size={hidden_size}, num_layers={num_layers}")
        if not 0.0 <= dropout <= 1.0:
            raise ValueError(f"dropout must be in [0, 1], got {dropout}")
        if isinstance(proj_size, bool) or not isinstance(proj_size, (int, np.integer)):
            raise TypeError(f"proj_size should be of type int, got: {type(proj_size).__name__}")
        if proj_size < 0:  # torch's messages
            raise ValueError("proj_size should be a positive integer or zero to disable projections")
        if proj_size >= hidden_size:
            raise ValueError("proj_size has to be smaller than hidden_size")
        self.mode, self.input_size, self.hidden_size = mode, input_size, hidden_size
        self.num_layers, self.bias, self.batch_first = num_layers, bias, True
        self.dropout, self.bidirectional, self.fused = float(dropout), bidirectional, fused
        self.proj_size = int(proj_size)
        D, G = (2 if bidirectional else 1), GATES[mode] * hidden_size
        R = self.real_hidden_size                               # size of h (and of each direction's output)
        for layer in range(num_layers):
            in_size = input_size if layer == 0 else R * D
            for d in range(D):
                sfx = f"_l{layer}" + ("_reverse" if d else "")  # torch's names: the checkpoint contract
                setattr(self, "weight_ih" + sfx, Parameter(creation.zeros(G, in_size, dtype=dtype)))
                setattr(self, "weight_hh" + sfx, Parameter(creation.zeros(G, R, dtype=dtype)))
                if bias:
                    setattr(self, "bias_ih" + sfx, Parameter(creation.zeros(G, dtype=dtype)))
                    setattr(self, "bias_hh" + sfx, Parameter(creation.zeros(G, dtype=dtype)))
                if self.proj_size:  # after the biases, as torch's order
                    setattr(self, "weight_hr" + sfx, Parameter(creation.zeros(R, hidden_size, dtype=dtype)))
        _uniform_init(self, hidden_size)                        # W_hr too: U(−1/√H, 1/√H), as torch
        object.__setattr__(self, "_weight_names", list(self._parameters))  # kept when one is parametrized

    @property
    def real_hidden_size(self) -> int:
        """The size of h: proj_size for an LSTM with projections, else hidden_size (torch's name)."""
        return self.proj_size or self.hidden_size

    @property
    def num_directions(self) -> int:
        return 2 if self.bidirectional else 1

    @property
    def _flat_weights_names(self) -> list[str]:
        """The parameters' names in torch's order (layer, direction, then w_ih, w_hh, b_ih, b_hh, w_hr); torch's
        private attribute, which d2l's `xavier_init_weights` reads."""
        return list(self._weight_names)

    @property
    def _flat_weights(self) -> list:
        return [getattr(self, n) for n in self._weight_names]

    def _weights(self, layer: int, d: int):
        """(w_ih, w_hh, b_ih, b_hh, w_hr) of one layer and direction, None where absent; read as attributes, so a
        parametrized weight (nn.utils.parametrizations.weight_norm) is computed."""
        sfx = f"_l{layer}" + ("_reverse" if d else "")
        return tuple(getattr(self, n + sfx, None) for n in ("weight_ih", "weight_hh", "bias_ih", "bias_hh",
                                                             "weight_hr"))

    def _check_state(self, h, name: str, batch: int, steps: int, size: int | None = None):
        size = self.hidden_size if size is None else size
        want = (self.num_layers * self.num_directions, batch, size)
        if not isinstance(h, Tensor):
            raise TypeError(f"{type(self).__name__}: {name} must be a Tensor of shape {want}, got {type(h).__name__}")
        if h.shape != want:
            # torch's default layout is (T, B, I): a state for batch T means x was probably passed that way
            hint = ("; x looks time-major (T, B, input_size), torch's default: seqlab's recurrent layers are "
                    "batch-first, so pass x.transpose(0, 1)" if h.shape[1:] == (steps, size) else "")
            what = "proj_size" if size != self.hidden_size else "hidden_size"
            raise ValueError(f"{type(self).__name__}: {name} has shape {h.shape}, expected {want} "
                             f"(num_layers * num_directions, B, {what}){hint}")
        return h

    def _run(self, x: Tensor, h0, c0, lengths):
        """The layer loop shared by the three subclasses; returns (output, h_n, c_n or None).

        An unbatched sequence (T, I) with states (L·D, H), as torch takes them, runs as a batch of one and
        comes back without the batch dim. A PackedSequence comes back packed (`_run_packed`)."""
        if isinstance(x, PackedSequence):
            return self._run_packed(x, h0, c0, lengths)
        if isinstance(x, Tensor) and x.ndim == 2 and x.shape[-1] == self.input_size:
            if lengths is not None:
                raise ValueError(f"{type(self).__name__}: lengths is for a batch (B, T, I); x is one sequence "
                                 f"{x.shape}")
            for name, h in (("h0", h0), ("c0", c0)):
                if isinstance(h, Tensor) and h.ndim != 2:
                    raise ValueError(f"{type(self).__name__}: for an unbatched x {x.shape}, {name} must be "
                                     f"(num_layers * num_directions, hidden_size), got {h.shape}")
            one = [None if h is None else _as_tensor(h).unsqueeze(1) for h in (h0, c0)]
            out, h_n, c_n = self._run(x.unsqueeze(0), one[0], one[1], None)
            return out[0], h_n[:, 0], (None if c_n is None else c_n[:, 0])
        if x.ndim != 3 or x.shape[-1] != self.input_size:
            raise ValueError(f"{type(self).__name__} expects x of shape (B, T, {self.input_size}) "
                             f"(batch first), got {x.shape}")
        B, T, _ = x.shape
        xp = xp_of(x.data)
        mask = lengths_mask(lengths, B, T, xp)                     # (B, T) or None
        L, D, H, R = self.num_layers, self.num_directions, self.hidden_size, self.real_hidden_size
        zeros = xp.zeros((L * D, B, H), dtype=x.dtype)
        if h0 is None:
            h0 = zeros if R == H else xp.zeros((L * D, B, R), dtype=x.dtype)
        else:
            h0 = self._check_state(h0, "h0", B, T, R)
        if self.mode == "lstm":
            c0 = zeros if c0 is None else self._check_state(c0, "c0", B, T)
        layer_in, h_n, c_n = x, [], []
        for layer in range(L):
            outs = []
            for d in range(D):
                w_ih, w_hh, b_ih, b_hh, w_hr = self._weights(layer, d)
                k = layer * D + d
                xproj = F.linear(layer_in, w_ih, b_ih)             # (B, T, G·H): every step in one matmul
                c_k = c0[k] if self.mode == "lstm" else None
                if self.fused:  # with how xproj was made, so the scan need not keep it (for double backward)
                    out, h, c = self._scan_fused(xproj, h0[k], c_k, w_hh, b_hh, bool(d), mask, w_hr, xproj_from=(
                        layer_in.data, w_ih.data, None if b_ih is None else b_ih.data))
                else:
                    out, h, c = self._scan_composed(xproj, h0[k], c_k, w_hh, b_hh, bool(d), mask, w_hr)
                outs.append(out)
                h_n.append(h)
                c_n.append(c)
            layer_in = outs[0] if D == 1 else creation.cat(outs, dim=-1)  # (B, T, D·R)
            if self.dropout and self.training and layer < L - 1:
                layer_in = F.dropout(layer_in, self.dropout)
        h_n = creation.stack([_as_tensor(h) for h in h_n], dim=0)      # (L·D, B, R)
        c_n = creation.stack([_as_tensor(c) for c in c_n], dim=0) if self.mode == "lstm" else None
        return layer_in, h_n, c_n

    def _run_packed(self, packed: PackedSequence, h0, c0, lengths):
        """torch's `out, h_n = rnn(packed)`: unpack to (B, T, I) in the caller's batch order with the lengths,
        run the lengths path, pack the output as the input (same batch_sizes and indices). States given and
        returned are in the caller's order, as torch's (which sorts them internally)."""
        if lengths is not None:
            raise ValueError(f"{type(self).__name__}: a PackedSequence carries its own lengths; pass lengths=None")
        if packed.data.ndim != 2 or packed.data.shape[-1] != self.input_size:
            raise ValueError(f"{type(self).__name__} expects packed data of shape (N, {self.input_size}), "
                             f"got {packed.data.shape}")
        x, lens = pad_packed_sequence(packed, batch_first=True)    # (B, T, I), (B,)
        out, h_n, c_n = self._run(x, h0, c0, lens)                  # (B, T, D·H), (L·D, B, H)
        return _pack_as(out, packed, batch_first=True), h_n, c_n    # data (N, D·H)

    def _scan_fused(self, xproj, h0, c0, w_hh, b_hh, reverse, mask, w_hr=None, xproj_from=None):
        T = xproj.shape[1]
        if w_hr is not None:  # LSTM with projections: h_t (B, P) sits in the first P columns of its row
            P = w_hr.shape[0]
            packed = ProjectedLSTMScan.apply(xproj, h0, c0, w_hh, b_hh, w_hr, reverse=reverse,
                                             mask=mask, xproj_from=xproj_from)  # (B, T + 2, H)
            return packed[:, :T, :P], packed[:, T, :P], packed[:, T + 1]
        packed = RecurrentScan.apply(xproj, h0, c0, w_hh, b_hh, mode=self.mode, reverse=reverse,
                                     mask=mask, xproj_from=xproj_from)  # (B, T + S, H)
        c = packed[:, T + 1] if self.mode == "lstm" else None
        return packed[:, :T], packed[:, T], c

    def _scan_composed(self, xproj, h0, c0, w_hh, b_hh, reverse, mask, w_hr=None):
        """The same recurrence, one composed cell per step (the reference the kernel is held to);
        with `w_hr` (P, H), the LSTM's h_t = W_hr (o_t ⊙ tanh(c_t)), as torch's proj_size."""
        xs = [xproj[:, t] for t in range(xproj.shape[1])]          # T × (B, G·H)
        outs, h, c = composed_scan(self.mode, xs, _as_tensor(h0), None if c0 is None else _as_tensor(c0),
                                   w_hh, b_hh, reverse, mask, w_hr)
        return creation.stack(outs, dim=1), h, c                    # (B, T, R)

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if self.proj_size:
            s += f", proj_size={self.proj_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        if not self.bias:
            s += ", bias=False"
        if self.dropout:
            s += f", dropout={self.dropout}"
        if self.bidirectional:
            s += ", bidirectional=True"
        return s + ", batch_first=True"


def _as_tensor(a) -> Tensor:
    return a if isinstance(a, Tensor) else Tensor._of(a)


@takes_device
class RNN(_RNNBase):
    """Elman RNN, h_t = tanh(W_ih x_t + b_ih + W_hh h_{t−1} + b_hh) (or relu), stacked and/or bidirectional.

    forward(x (B, T, I), hx (L·D, B, H) = zeros, lengths (B,) = None)
      -> (output (B, T, D·H), h_n (L·D, B, H)).
    With `lengths`, outputs past each sequence's length are 0 and h_n is taken at its
    last real step (the reverse direction starts there), as torch's packed sequences.
    x may be a PackedSequence: output is then packed the same way, hx and h_n in the batch's original order.
    """

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1, nonlinearity: str = "tanh",
                 bias: bool = True, batch_first: bool = True, dropout: float = 0.0, bidirectional: bool = False,
                 dtype=None, fused: bool = True, proj_size: int = 0):
        _no_projection(proj_size)
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"nonlinearity must be 'tanh' or 'relu', got {nonlinearity!r}")
        super().__init__("rnn_" + nonlinearity, input_size, hidden_size, num_layers, bias, batch_first,
                         dropout, bidirectional, dtype=dtype, fused=fused)
        self.nonlinearity = nonlinearity

    def forward(self, input: Tensor, hx: Tensor | None = None,  # noqa: A002 (torch's name)
                lengths=None) -> tuple[Tensor, Tensor]:
        out, h_n, _ = self._run(input, hx, None, lengths)
        return out, h_n


def _no_projection(proj_size) -> None:
    if proj_size != 0:  # torch's message
        raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")


@takes_device
class LSTM(_RNNBase):
    """LSTM (Hochreiter & Schmidhuber 1997), torch's gate order i, f, g, o.

    forward(x (B, T, I), hx = (h0, c0) each (L·D, B, H) or None, lengths (B,) = None)
      -> (output (B, T, D·H), (h_n, c_n)), each state (L·D, B, H).
    With proj_size P (0 < P < H), torch's LSTM with projections: h_t = W_hr (o_t ⊙ tanh(c_t)) with
    `weight_hr_l{k}` (P, H); output (B, T, D·P), h0 and h_n (L·D, B, P), c0 and c_n (L·D, B, H).
    """

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True,
                 batch_first: bool = True, dropout: float = 0.0, bidirectional: bool = False, proj_size: int = 0,
                 dtype=None, fused: bool = True):
        super().__init__("lstm", input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional,
                         proj_size, dtype, fused)

    def forward(self, input: Tensor, hx: tuple[Tensor, Tensor] | None = None,  # noqa: A002 (torch's name)
                lengths=None) -> tuple[Tensor, tuple[Tensor, Tensor]]:
        if hx is not None and (not isinstance(hx, (tuple, list)) or len(hx) != 2):
            raise TypeError("LSTM hx must be a tuple (h0, c0)")
        h0, c0 = (None, None) if hx is None else hx
        out, h_n, c_n = self._run(input, h0, c0, lengths)
        return out, (h_n, c_n)


@takes_device
class GRU(_RNNBase):
    """GRU (Cho et al. 2014), torch's gate order r, z, n with n = tanh(W_in x + b_in + r ⊙ (W_hn h + b_hn)).

    forward(x (B, T, I), hx (L·D, B, H) = zeros, lengths (B,) = None)
      -> (output (B, T, D·H), h_n (L·D, B, H)).
    """

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True,
                 batch_first: bool = True, dropout: float = 0.0, bidirectional: bool = False, dtype=None,
                 fused: bool = True, proj_size: int = 0):
        _no_projection(proj_size)
        super().__init__("gru", input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional,
                         dtype=dtype, fused=fused)

    def forward(self, input: Tensor, hx: Tensor | None = None,  # noqa: A002 (torch's name)
                lengths=None) -> tuple[Tensor, Tensor]:
        out, h_n, _ = self._run(input, hx, None, lengths)
        return out, h_n
