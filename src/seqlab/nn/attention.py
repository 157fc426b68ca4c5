"""Multi-head attention (the chapter's 7.3.2), with torch.nn.MultiheadAttention's contract.

    MultiHead(Q, K, V) = Concat(head_1, …, head_h) W^O,
    head_i = Attention(Q W_i^Q, K W_i^K, V W_i^V),  Attention(Q, K, V) = softmax(Q Kᵀ / √d_k) V.

Parameter names, shapes and initialisation are torch's, so
``load_state_dict(torch_mha.state_dict())`` works. Unlike torch the layout is
always batch-first: (B, T, E).

Mask semantics (torch's, see the table in docs):
- ``key_padding_mask`` (B, S): bool True = padding (ignored); float = added.
- ``attn_mask`` (L, S) or (B·H, L, S): bool True = may NOT attend; float = added.
"""
from __future__ import annotations

import math

import numpy as np

from seqlab import backend, creation
from seqlab import functional as F
from seqlab.autograd.function import is_grad_enabled
from seqlab.autograd.tensor import Tensor
from seqlab.nn import init
from seqlab.nn.linear import Linear
from seqlab.nn.module import Module, Parameter, takes_device


def as_mask_array(mask, xp):
    """A mask given as a seqlab Tensor, NumPy/CuPy array, torch tensor or list, as an array of `xp`."""
    if mask is None:
        return None
    mask = mask.data if isinstance(mask, Tensor) else backend.from_torch(mask)
    return backend.to_device(mask, backend.device_of_module(xp))  # a host mask copied to the GPU, or back


def causal_block(L: int, S: int, xp=np) -> np.ndarray:
    """(L, S) bool, True above the diagonal: query i may not see key j > i."""
    return xp.triu(xp.ones((L, S), dtype=bool), k=1)


def merge_masks(attn_mask, key_padding_mask, is_causal: bool, B: int, H: int, L: int, S: int, dtype, xp):
    """Turn torch's two masks into one argument for `F.attention`.

    Returns None, a bool array (True = MAY attend, as SDPA) or a float array
    (added to the scores; −inf where blocked), broadcastable to (B, H, L, S).
    A causal mask is built when `is_causal` and no `attn_mask` is given.
    """
    block, bias = None, None

    def add(m, what: str, shape4):
        nonlocal block, bias
        m = m.reshape(shape4)
        if m.dtype == bool:
            block = m if block is None else (block | m)
        elif m.dtype.kind == "f":
            m = m.astype(dtype, copy=False)
            bias = m if bias is None else bias + m
        else:
            raise TypeError(f"{what} must be bool or float, got dtype {m.dtype}")

    am = as_mask_array(attn_mask, xp)
    if am is not None:
        if am.ndim == 2:
            if am.shape != (L, S):
                raise ValueError(f"attn_mask has shape {am.shape} but query length {L} and key length {S} "
                                 f"need ({L}, {S})")
            add(am, "attn_mask", (1, 1, L, S))
        elif am.ndim == 3:
            if am.shape != (B * H, L, S):
                raise ValueError(f"3-D attn_mask has shape {am.shape}; expected (batch·heads, L, S) = "
                                 f"({B * H}, {L}, {S})")
            add(am, "attn_mask", (B, H, L, S))
        else:
            raise ValueError(f"attn_mask must be 2-D (L, S) or 3-D (B·H, L, S), got shape {am.shape}")
    elif is_causal:
        add(causal_block(L, S, xp), "causal mask", (1, 1, L, S))
    kpm = as_mask_array(key_padding_mask, xp)
    if kpm is not None:
        if kpm.shape != (B, S):
            hint = ("; the inputs look time-major (L, B, E), torch's default: seqlab is batch-first, so pass "
                    "them transposed, x.transpose(0, 1)" if kpm.shape == (S, B) and S != B else "")
            raise ValueError(f"key_padding_mask has shape {kpm.shape}; expected (batch, key length) = ({B}, {S})"
                             f"{hint}")
        add(kpm, "key_padding_mask", (B, 1, 1, S))
    if bias is None:
        return None if block is None else ~block
    if block is not None:
        bias = xp.where(block, dtype.type(-np.inf), bias)
    return bias


def _learned(mask) -> bool:
    """A float mask Tensor that wants a gradient (torch's attn_mask gets one): kept a Tensor, not an array."""
    return isinstance(mask, Tensor) and mask.requires_grad and mask.dtype.kind == "f" and is_grad_enabled()


def _pad_key_axis(mask, xp):
    """Append one key column that everyone may attend to (for bias_k / zero attention)."""
    if mask is None:
        return None
    if _learned(mask):
        return creation.cat([mask, Tensor(xp.zeros(mask.shape[:-1] + (1,), dtype=mask.dtype))], dim=-1)
    m = as_mask_array(mask, xp)
    pad = xp.zeros(m.shape[:-1] + (1,), dtype=m.dtype)  # False / 0.0 = not blocked
    return xp.concatenate([m, pad], axis=-1)


@takes_device
class MultiheadAttention(Module):
    """Multi-head attention with torch's constructor, parameters and forward; batch-first.

    Parameters (torch's names): ``in_proj_weight`` (3E, E) and ``in_proj_bias``
    (3E,) — or ``q_proj_weight`` (E, E), ``k_proj_weight`` (E, kdim),
    ``v_proj_weight`` (E, vdim) when kdim/vdim differ from E — and
    ``out_proj`` (a Linear E -> E); ``bias_k``/``bias_v`` (1, 1, E) with
    ``add_bias_kv``. Self-attention (``query is key is value``) with the
    packed in-projection attends straight from its (B, T, 3E) output
    (`F.attention_qkv`: the same values, and one gradient array for it).
    """

    def __init__(self, embed_dim: int, num_heads: int, dropout: float = 0.0, bias: bool = True,
                 add_bias_kv: bool = False, add_zero_attn: bool = False, kdim: int | None = None,
                 vdim: int | None = None, batch_first: bool = True, device=None, dtype=None):
        super().__init__()
        if not batch_first:
            raise ValueError("seqlab is batch-first everywhere: MultiheadAttention takes (B, T, E) inputs; "
                             "batch_first=False is not supported (transpose your inputs instead)")
        if embed_dim <= 0 or num_heads <= 0:
            raise ValueError(f"embed_dim and num_heads must be positive, got {embed_dim} and {num_heads}")
        if embed_dim % num_heads:
            raise ValueError(f"embed_dim ({embed_dim}) must be divisible by num_heads ({num_heads})")
        if not 0.0 <= dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {dropout}")
        self.embed_dim, self.num_heads, self.dropout = embed_dim, num_heads, dropout
        self.kdim = kdim if kdim is not None else embed_dim
        self.vdim = vdim if vdim is not None else embed_dim
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        self.head_dim = embed_dim // num_heads
        self.batch_first = True
        self.add_zero_attn = add_zero_attn
        E = embed_dim
        if self._qkv_same_embed_dim:
            self.in_proj_weight = Parameter(creation.zeros(3 * E, E, dtype=dtype))
            for n in ("q_proj_weight", "k_proj_weight", "v_proj_weight"):
                self.register_parameter(n, None)
        else:
            self.q_proj_weight = Parameter(creation.zeros(E, E, dtype=dtype))
            self.k_proj_weight = Parameter(creation.zeros(E, self.kdim, dtype=dtype))
            self.v_proj_weight = Parameter(creation.zeros(E, self.vdim, dtype=dtype))
            self.register_parameter("in_proj_weight", None)
        if bias:
            self.in_proj_bias = Parameter(creation.zeros(3 * E, dtype=dtype))
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = Linear(E, E, bias=bias, dtype=dtype)
        if add_bias_kv:
            self.bias_k = Parameter(creation.zeros(1, 1, E, dtype=dtype))
            self.bias_v = Parameter(creation.zeros(1, 1, E, dtype=dtype))
        else:
            self.bias_k = self.bias_v = None
        self._reset_parameters()

    def _reset_parameters(self) -> None:
        # torch: Xavier-uniform projections, zero biases, Xavier-normal bias_k / bias_v
        if self._qkv_same_embed_dim:
            init.xavier_uniform_(self.in_proj_weight)
        else:
            for w in (self.q_proj_weight, self.k_proj_weight, self.v_proj_weight):
                init.xavier_uniform_(w)
        if self.in_proj_bias is not None:
            init.zeros_(self.in_proj_bias)
            init.zeros_(self.out_proj.bias)
        if self.bias_k is not None:
            init.xavier_normal_(self.bias_k)
            init.xavier_normal_(self.bias_v)

    # ---- projections -----------------------------------------------------------
    def _in_projection(self, query: Tensor, key: Tensor, value: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        E, b = self.embed_dim, self.in_proj_bias
        bq, bk, bv = (None, None, None) if b is None else (b[:E], b[E:2 * E], b[2 * E:])
        if self._qkv_same_embed_dim:
            w = self.in_proj_weight
            if query is key and key is value:  # self-attention: one (3E, E) product
                return F.linear(query, w, b).split(E, dim=-1)  # 3 × (B, L, E)
            wq, wk, wv = w[:E], w[E:2 * E], w[2 * E:]
        else:
            wq, wk, wv = self.q_proj_weight, self.k_proj_weight, self.v_proj_weight
        return F.linear(query, wq, bq), F.linear(key, wk, bk), F.linear(value, wv, bv)

    def _check_inputs(self, query: Tensor, key: Tensor, value: Tensor) -> None:
        if query.ndim != 3 or key.ndim != 3 or value.ndim != 3:
            raise ValueError(f"query, key and value must all be 3-D (B, T, E) or all 2-D (T, E); got shapes "
                             f"{query.shape}, {key.shape}, {value.shape}")
        for name, t, want in (("query", query, self.embed_dim), ("key", key, self.kdim), ("value", value, self.vdim)):
            if t.shape[-1] != want:
                raise ValueError(f"{name} has shape {t.shape} but this MultiheadAttention expects last dim {want}")
        if not query.shape[0] == key.shape[0] == value.shape[0]:
            raise ValueError(f"query, key and value have batch sizes {query.shape[0]}, {key.shape[0]}, "
                             f"{value.shape[0]}; they must match")
        if key.shape[1] != value.shape[1]:
            raise ValueError(f"key has shape {key.shape} and value {value.shape}: they need the same length")

    # ---- forward -----------------------------------------------------------------
    def forward(self, query: Tensor, key: Tensor, value: Tensor, key_padding_mask=None, need_weights: bool = True,
                attn_mask=None, average_attn_weights: bool = True, is_causal: bool = False, *,
                rotary=None, position_bias=None, weights_grad: bool = True) -> tuple[Tensor, Tensor | None]:
        """Attend from `query` (B, L, E) to `key` (B, S, kdim) / `value` (B, S, vdim).

        key_padding_mask: (B, S), bool True = padding, or float added.
        attn_mask: (L, S) or (B·H, L, S), bool True = blocked, or float added.
        is_causal: with no attn_mask, block keys after the query position
            (torch requires the mask itself; seqlab builds it).
        rotary: a `RotaryEmbedding` applied to the per-head queries and keys
            (seqlab extension, RoPE).
        position_bias: float array broadcastable to (B, H, L, S) added to the
            scores (seqlab extension: ALiBi, relative biases).
        Returns (attn_output (B, L, E), weights): weights (B, L, S) averaged over
        heads, (B, H, L, S) with ``average_attn_weights=False``, None without
        ``need_weights``. Weights are taken before dropout. As torch's, they carry gradients
        when gradients are recorded (the attention is then built from autograd ops, as torch's
        MultiheadAttention takes its slow path for them); ``weights_grad=False`` (seqlab
        extension, what the Transformer layers' ``output_attentions`` use) returns them
        detached from the one fused op, which keeps no T × T array for backward.
        2-D inputs (T, E) are an unbatched example, as in torch.
        """
        unbatched = query.ndim == 2
        if unbatched:
            if key.ndim != 2 or value.ndim != 2:
                raise ValueError(f"unbatched query {query.shape} needs 2-D key and value, got {key.shape}, {value.shape}")
            same_kv, same_qk = key is value, query is key
            query = query.unsqueeze(0)  # (1, L, E)
            key = query if same_qk else key.unsqueeze(0)
            value = key if same_kv else value.unsqueeze(0)
            if key_padding_mask is not None:
                key_padding_mask = as_mask_array(key_padding_mask, backend.xp_of(query.data))[None]
        self._check_inputs(query, key, value)
        B, L, E = query.shape
        H, D = self.num_heads, self.head_dim
        xp = backend.xp_of(query.data)
        if (query is key and key is value and self._qkv_same_embed_dim and self.bias_k is None
                and not self.add_zero_attn and rotary is None):  # self-attention, q/k/v from one product
            qkv = F.linear(query, self.in_proj_weight, self.in_proj_bias)  # (B, L, 3E)
            mask = self._scores_mask(attn_mask, key_padding_mask, is_causal, position_bias, B, L, L, qkv.dtype, xp)
            out, weights = F.attention_qkv(qkv, H, attn_mask=mask, dropout_p=self.dropout, training=self.training,
                                           scale=1.0 / math.sqrt(D), weights_grad=need_weights and weights_grad,
                                           need_weights=need_weights, merge_heads=True)
            # (B, L, E), (B, H, L, L)
            return self._merge_heads(out, weights, need_weights, average_attn_weights, unbatched)
        q, k, v = self._in_projection(query, key, value)  # (B, L, E), (B, S, E), (B, S, E)
        if self.bias_k is not None:  # one learned key/value appended to every sequence
            k = creation.cat([k, self.bias_k.expand(B, 1, E)], dim=1)  # (B, S+1, E)
            v = creation.cat([v, self.bias_v.expand(B, 1, E)], dim=1)  # (B, S+1, E)
            attn_mask, key_padding_mask = _pad_key_axis(attn_mask, xp), _pad_key_axis(key_padding_mask, xp)
        S = k.shape[1]
        q = q.reshape(B, L, H, D).transpose(1, 2)  # (B, H, L, D)
        k = k.reshape(B, S, H, D).transpose(1, 2)  # (B, H, S, D)
        v = v.reshape(B, S, H, D).transpose(1, 2)  # (B, H, S, D)
        if self.add_zero_attn:  # one all-zero key/value per head
            zeros = Tensor(xp.zeros((B, H, 1, D), dtype=q.dtype))
            k = creation.cat([k, zeros], dim=2)  # (B, H, S+1, D)
            v = creation.cat([v, zeros], dim=2)  # (B, H, S+1, D)
            attn_mask, key_padding_mask = _pad_key_axis(attn_mask, xp), _pad_key_axis(key_padding_mask, xp)
            S += 1
        if rotary is not None:
            q, k = rotary(q, k)
        mask = self._scores_mask(attn_mask, key_padding_mask, is_causal, position_bias, B, L, S, q.dtype, xp)
        out, weights = F.attention(q, k, v, attn_mask=mask, dropout_p=self.dropout, training=self.training,
                                   scale=1.0 / math.sqrt(D), weights_grad=need_weights and weights_grad,
                                   need_weights=need_weights)
        # (B, H, L, D), (B, H, L, S)
        return self._merge_heads(out, weights, need_weights, average_attn_weights, unbatched)

    def _scores_mask(self, attn_mask, key_padding_mask, is_causal, position_bias, B, L, S, dtype, xp):
        """The one mask (bool, True = may attend, or float added) the scores get: masks and position bias."""
        if _learned(attn_mask):  # a float attn_mask that requires grad: a Tensor, so it gets its gradient
            merge_masks(attn_mask.data, None, False, B, self.num_heads, L, S, dtype, xp)  # its shape checks
            learned = attn_mask.reshape((1, 1, L, S) if attn_mask.ndim == 2 else (B, self.num_heads, L, S))
            rest = self._scores_mask(None, key_padding_mask, False, position_bias, B, L, S, dtype, xp)
            if rest is None:
                return learned
            if rest.dtype == bool:  # True = may attend
                return learned.masked_fill(Tensor(~rest), -np.inf)
            return learned + Tensor(rest)
        mask = merge_masks(attn_mask, key_padding_mask, is_causal, B, self.num_heads, L, S, dtype, xp)
        if position_bias is not None:
            pb = as_mask_array(position_bias, xp).astype(dtype, copy=False)
            if mask is None:
                mask = pb
            elif mask.dtype == bool:
                mask = xp.where(mask, pb, dtype.type(-np.inf))
            else:
                mask = mask + pb
        return mask

    def _merge_heads(self, out, weights, need_weights, average_attn_weights, unbatched):
        """(B, H, L, D) heads (or (B, L, E), merged already) -> out_proj's (B, L, E) output, and the weights
        as asked for."""
        if out.ndim == 4:
            B, H, L, D = out.shape
            out = out.transpose(1, 2).reshape(B, L, H * D)  # (B, L, E) heads concatenated
        out = self.out_proj(out)  # (B, L, E)
        if not need_weights:
            weights = None
        elif average_attn_weights:
            weights = weights.mean(dim=1)  # (B, L, S)
        if unbatched:
            out = out.squeeze(0)  # (L, E)
            weights = weights.squeeze(0) if weights is not None else None
        return out, weights

    def extra_repr(self) -> str:
        kv = "" if self._qkv_same_embed_dim else f", kdim={self.kdim}, vdim={self.vdim}"
        return f"embed_dim={self.embed_dim}, num_heads={self.num_heads}, dropout={self.dropout}{kv}"
