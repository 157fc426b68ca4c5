"""RNN encoder-decoder with attention (the chapter's 7.3.1; Bahdanau, Cho & Bengio 2015).

    source ids (B, S) -> Embedding -> bidirectional GRU/LSTM -> h_s (B, S, 2·He)
    s_0 = tanh(W_b [→h_last; ←h_first])                                  (B, Hd)
    for t = 1..T:
        e_ts = score(s_{t−1}, h_s), α_t = softmax_s(e_t), c_t = Σ_s α_ts h_s   (padding masked)
        s_t = GRUCell([y_{t−1}; c_t], s_{t−1})
    o_t = tanh(W_o [s_t; c_t; y_{t−1}]), logits_t = W_g o_t              (all t in one matmul each)

`attention` picks the score: 'additive' (Bahdanau, e = v_aᵀ tanh(W_a [s; h])),
'dot' or 'general' (Luong's scores; the query stays s_{t−1}, so the wiring is
the same and only e_ts changes), or 'none': the decoder sees ONE fixed
context c = [→h_last; ←h_first] at every step (Cho et al. 2014) — the
information bottleneck the chapter says attention removes.

Ids: the source ends with </s>; the decoder input is <s> y and the target
y </s>. `generate` runs greedy or beam search (`seqlab.models.decoding`).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from seqlab import backend
from seqlab import functional as F
from seqlab.autograd.function import no_grad
from seqlab.autograd.tensor import Tensor
from seqlab.creation import cat, stack
from seqlab.models.decoding import beam_search, greedy_search, repeat_rows
from seqlab.nn import init
from seqlab.nn.additive_attention import AdditiveAttention, LuongAttention
from seqlab.nn.dropout import Dropout
from seqlab.nn.linear import Linear
from seqlab.nn.module import Module
from seqlab.nn.recurrent import GRU, LSTM, GRUCell, LSTMCell, gru_step, lstm_step
from seqlab.nn.sparse import Embedding

ATTENTION_KINDS = ("additive", "dot", "general", "none")


@dataclass
class Seq2SeqConfig:
    src_vocab_size: int
    tgt_vocab_size: int
    emb_dim: int = 256
    enc_hidden: int = 256        # per direction: the encoder's outputs h_s have 2·enc_hidden features
    dec_hidden: int = 512
    attn_dim: int = 256          # hidden size of the additive score's tanh layer
    attention: str = "additive"  # 'additive' | 'dot' | 'general' | 'none' (one fixed context vector)
    cell: str = "gru"            # 'gru' | 'lstm', for the encoder and the decoder
    enc_layers: int = 1
    dropout: float = 0.3
    tie_output: bool = True      # generator.weight is tgt_embedding.weight (Press & Wolf, 2017)
    pad_id: int = 0
    bos_id: int = 1
    eos_id: int = 2

    def __post_init__(self) -> None:
        if self.attention not in ATTENTION_KINDS:
            raise ValueError(f"attention must be one of {ATTENTION_KINDS}, got {self.attention!r}")
        if self.cell not in ("gru", "lstm"):
            raise ValueError(f"cell must be 'gru' or 'lstm', got {self.cell!r}")
        if self.attention == "dot" and self.dec_hidden != 2 * self.enc_hidden:
            raise ValueError(f"dot attention needs dec_hidden == 2 * enc_hidden, got {self.dec_hidden} "
                             f"and 2 * {self.enc_hidden}")
        for name in ("src_vocab_size", "tgt_vocab_size", "emb_dim", "enc_hidden", "dec_hidden", "attn_dim",
                     "enc_layers"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be positive, got {getattr(self, name)}")
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {self.dropout}")

    def to_dict(self) -> dict:
        return asdict(self)


class Seq2Seq(Module):
    """forward(src (B, S), tgt_in (B, T), src_lengths (B,) = count of non-pad ids, return_attention=False)
    -> logits (B, T, V) [, attention (B, T, S), None for attention='none'].

    `src` is right-padded with pad_id; padded source positions get attention weight 0.
    """

    def __init__(self, config: Seq2SeqConfig):
        super().__init__()
        c = self.config = config
        E, He, Hd = c.emb_dim, c.enc_hidden, c.dec_hidden
        self.src_embedding = Embedding(c.src_vocab_size, E, padding_idx=c.pad_id)
        self.tgt_embedding = Embedding(c.tgt_vocab_size, E, padding_idx=c.pad_id)
        rnn = GRU if c.cell == "gru" else LSTM
        self.encoder = rnn(E, He, num_layers=c.enc_layers, bidirectional=True,
                           dropout=c.dropout if c.enc_layers > 1 else 0.0)
        self.bridge = Linear(2 * He, Hd)                          # s_0 = tanh(W_b [→h; ←h])
        if c.attention == "additive":
            self.attention = AdditiveAttention(Hd, 2 * He, c.attn_dim)
        elif c.attention in ("dot", "general"):
            self.attention = LuongAttention(Hd, 2 * He, c.attention)
        self.decoder = (GRUCell if c.cell == "gru" else LSTMCell)(E + 2 * He, Hd)
        self.pre_output = Linear(Hd + 2 * He + E, E)               # o_t = tanh(W_o [s_t; c_t; y_{t−1}])
        self.generator = Linear(E, c.tgt_vocab_size, bias=True)
        self.dropout = Dropout(c.dropout)
        for emb in (self.src_embedding, self.tgt_embedding):     # N(0, 1/E): logits of a tied output start O(1)
            init.normal_(emb.weight, 0.0, E ** -0.5)
            emb.weight.data[c.pad_id] = 0
        if c.tie_output:
            self.generator.weight = self.tgt_embedding.weight

    # ---- encoder -------------------------------------------------------------------------------
    def encode(self, src, src_lengths=None) -> tuple[dict, tuple]:
        """Run the encoder; returns (memory, initial decoder state).

        memory: 'outputs' h_s (B, S, 2He), 'keys' (the score's projection of h_s, computed once),
        'pad' (B, S) bool True = padding, 'summary' [→h_last; ←h_first] (B, 2He).
        """
        src_ids = backend.to_numpy(src.data if isinstance(src, Tensor) else src)  # lengths and padding: host
        if src_ids.ndim != 2:
            raise ValueError(f"src must be (B, S) token ids, got shape {src_ids.shape}")
        pad = src_ids == self.config.pad_id                        # (B, S)
        lengths = (~pad).sum(1) if src_lengths is None else backend.to_numpy(src_lengths)
        if lengths.min() < 1:
            raise ValueError("every source sentence needs at least one token (got an all-padding row)")
        x = self.dropout(self.src_embedding(src_ids))             # (B, S, E)
        out, h_n = self.encoder(x, lengths=lengths)               # (B, S, 2He), (L·2, B, He)
        h_n = h_n[0] if isinstance(h_n, tuple) else h_n
        summary = cat([h_n[-2], h_n[-1]], dim=-1)                 # (B, 2He): last layer, both directions
        s0 = self.bridge(summary).tanh()                          # (B, Hd)
        keys = self.attention.project_keys(out) if self.config.attention != "none" else None
        state = (s0,) if self.config.cell == "gru" else (s0, s0 * 0.0)
        return {"outputs": out, "keys": keys, "pad": pad, "summary": summary}, state

    # ---- decoder -------------------------------------------------------------------------------
    def _context(self, s_prev: Tensor, memory: dict):
        """c_t and α_t (B, S) from the previous decoder state; the fixed summary without attention."""
        if self.config.attention == "none":
            return memory["summary"], None
        return self.attention(s_prev, memory["outputs"], key_padding_mask=memory["pad"],
                              projected_keys=memory["keys"])

    def _run_decoder(self, emb: Tensor, state: tuple, memory: dict):
        """Teacher-forced decoder over emb (B, T, E); returns s (B, T, Hd), c (B, T, 2He), α list."""
        E = self.config.emb_dim
        w_ih = self.decoder.weight_ih
        w_emb, w_ctx = w_ih[:, :E], w_ih[:, E:]                    # W_ih [y; c] = W_y y + W_c c
        x_emb = F.linear(emb, w_emb, self.decoder.bias_ih)        # (B, T, G·Hd): every step in one matmul
        states, contexts, weights = [], [], []
        for t in range(emb.shape[1]):
            ctx, alpha = self._context(state[0], memory)           # (B, 2He), (B, S)
            xp = x_emb[:, t] + F.linear(ctx, w_ctx)                # (B, G·Hd)
            if self.config.cell == "gru":
                state = (gru_step(xp, state[0], self.decoder.weight_hh, self.decoder.bias_hh),)
            else:
                state = lstm_step(xp, state[0], state[1], self.decoder.weight_hh, self.decoder.bias_hh)
            states.append(state[0])
            contexts.append(ctx)
            weights.append(alpha)
        return stack(states, dim=1), stack(contexts, dim=1), weights, state  # (B, T, Hd), (B, T, 2He)

    def _logits(self, s: Tensor, ctx: Tensor, emb: Tensor) -> Tensor:
        o = self.pre_output(cat([s, ctx, emb], dim=-1)).tanh()    # (B, T, E)
        return self.generator(self.dropout(o))                    # (B, T, V)

    def forward(self, src, tgt_in, src_lengths=None, return_attention: bool = False,
                output_attentions: bool = False):
        return_attention = return_attention or output_attentions  # the name the other models use
        memory, state = self.encode(src, src_lengths)
        tgt_ids = tgt_in.data if isinstance(tgt_in, Tensor) else tgt_in  # the embedding takes ids on any device
        emb = self.dropout(self.tgt_embedding(tgt_ids))          # (B, T, E)
        s, ctx, weights, _ = self._run_decoder(emb, state, memory)
        logits = self._logits(s, ctx, emb)
        if not return_attention:
            return logits
        attn = None if weights[0] is None else stack(weights, dim=1)  # (B, T, S)
        return logits, attn

    def loss(self, src, tgt_in, tgt_out, label_smoothing: float = 0.0) -> Tensor:
        """Mean cross-entropy per target token, padding ignored."""
        logits = self(src, tgt_in)
        V = logits.shape[-1]
        target = tgt_out.data if isinstance(tgt_out, Tensor) else tgt_out  # on any device: cross_entropy moves it
        return F.cross_entropy(logits.reshape(-1, V), target.reshape(-1), ignore_index=self.config.pad_id,
                               label_smoothing=label_smoothing)

    # ---- generation ----------------------------------------------------------------------------
    def step_function(self, memory: dict):
        """A `decoding` step function: (previous tokens (N,), state) -> (log-probs (N, V), state)."""
        def step(tokens: np.ndarray, state: tuple):
            emb = self.tgt_embedding(tokens[:, None])             # (N, 1, E)
            s, ctx, _, state = self._run_decoder(emb, state, memory)
            return self._logits(s, ctx, emb)[:, 0].log_softmax(-1), state
        return step

    @no_grad()
    def generate(self, src, src_lengths=None, beam_size: int = 1, length_penalty: float = 1.0,
                 max_len: int | None = None) -> list[list[int]]:
        """Translate a batch: greedy for beam_size 1, else beam search; token lists without <s>/</s>.

        max_len defaults to 2·S + 10 target tokens. Call `eval()` first (dropout).
        """
        memory, state = self.encode(src, src_lengths)
        B, S = memory["pad"].shape
        max_len = 2 * S + 10 if max_len is None else max_len
        c = self.config
        if beam_size == 1:
            return greedy_search(self.step_function(memory), state, B, c.bos_id, c.eos_id, max_len)
        memory = repeat_rows(memory, beam_size)
        hyps = beam_search(self.step_function(memory), state, B, beam_size, c.bos_id, c.eos_id, max_len,
                           length_penalty)
        return [h[0].tokens for h in hyps]
