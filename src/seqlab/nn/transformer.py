"""The Transformer's layers and stacks (the chapter's 7.4), with torch.nn's contract.

Encoder layer (Post-LN, the paper and the chapter):
    x = LayerNorm(x + Dropout(SelfAttention(x)));  x = LayerNorm(x + Dropout(FFN(x)))
Pre-LN (``norm_first=True``, GPT-2 and most modern models):
    x = x + Dropout(SelfAttention(LayerNorm(x)));  x = x + Dropout(FFN(LayerNorm(x)))
FFN(x) = W₂ · Dropout(activation(W₁ x + b₁)) + b₂.
The decoder layer adds masked self-attention's sibling, cross-attention over
the encoder's output (``memory``), between the two.

Arguments, forward signatures and parameter names are torch's
(``self_attn.in_proj_weight``, ``linear1``, ``norm1``, ``multihead_attn``,
``layers.0...``), so torch's state_dict loads; the layout is always
batch-first (B, T, d_model). Masks follow nn.MultiheadAttention: bool True =
blocked, float = added; key-padding masks True = padding.

seqlab extensions, keyword-only, off by default: ``output_attentions=True``
also returns the per-head attention weights (B, H, L, S) of every layer (for
the viewer); ``rotary`` / ``position_bias`` feed RoPE and ALiBi into the
self-attention (see nn/positional.py).
"""
from __future__ import annotations

import copy
from typing import Callable

import numpy as np

from seqlab import backend
from seqlab import functional as F
from seqlab.autograd.function import is_grad_enabled
from seqlab.autograd.tensor import Tensor
from seqlab.nn import init
from seqlab.nn.attention import MultiheadAttention, as_mask_array
from seqlab.nn.efficient_attention import memory_efficient_attention, sliding_window_attention
from seqlab.nn.positional import (ALiBi, LearnedPositionalEmbedding, PositionalEncoding, RotaryEmbedding,
                                  SinusoidalPositionalEncoding, positional_encoding)
from seqlab.nn.container import ModuleList
from seqlab.nn.dropout import Dropout
from seqlab.nn.linear import Linear, feed_forward_in
from seqlab.nn.module import Module, takes_device
from seqlab.nn.norm import LayerNorm


def generate_square_subsequent_mask(sz: int, device=None, dtype=None) -> Tensor:
    """(sz, sz) float mask: 0 on and below the diagonal, −inf above (position i sees 0..i), as torch."""
    dt = np.dtype(dtype) if dtype is not None else np.float32
    m = np.triu(np.full((sz, sz), -np.inf, dtype=dt), k=1)  # (sz, sz)
    return Tensor(m, device=device)


def _activation(activation: str | Callable) -> Callable:
    if callable(activation):
        return activation
    if activation == "relu":
        return F.relu
    if activation == "gelu":
        return F.gelu
    raise ValueError(f"activation should be 'relu', 'gelu' or a callable, got {activation!r}")


def _check_batch_first(batch_first: bool, name: str) -> None:
    if not batch_first:
        raise ValueError(f"seqlab is batch-first everywhere: {name} takes (B, T, d_model) inputs; "
                         f"batch_first=False is not supported")


def _is_causal_mask(mask, size: int) -> bool:
    """torch's _detect_is_causal_mask: True when `mask` equals the square subsequent mask."""
    if mask is None:
        return False
    m = as_mask_array(mask, np)  # on the host, from any device
    if m.shape != (size, size):
        return False
    causal = np.triu(np.ones((size, size), dtype=bool), k=1)
    if m.dtype == bool:
        return bool((m == causal).all())
    return bool((np.isneginf(m) == causal).all() and (m[~causal] == 0).all())


# `seqlab.nn` imports the attention family from here in one line
PUBLIC = ("MultiheadAttention", "TransformerEncoderLayer", "TransformerDecoderLayer", "TransformerEncoder",
          "TransformerDecoder", "Transformer", "generate_square_subsequent_mask", "SinusoidalPositionalEncoding",
          "PositionalEncoding", "LearnedPositionalEmbedding", "RotaryEmbedding", "ALiBi", "positional_encoding",
          "memory_efficient_attention", "sliding_window_attention")


@takes_device
class TransformerEncoderLayer(Module):
    """Self-attention + feed-forward, each with a residual connection and a LayerNorm.

    src (B, T, d_model) -> (B, T, d_model). Arguments as torch.nn.TransformerEncoderLayer.
    """

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048, dropout: float = 0.1,
                 activation: str | Callable = "relu", layer_norm_eps: float = 1e-5, batch_first: bool = True,
                 norm_first: bool = False, bias: bool = True, device=None, dtype=None):
        super().__init__()
        _check_batch_first(batch_first, "TransformerEncoderLayer")
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias, dtype=dtype)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, dtype=dtype)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, dtype=dtype)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, dtype=dtype)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, dtype=dtype)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        self.activation = _activation(activation)  # a Module activation registers itself, as torch

    def forward(self, src: Tensor, src_mask=None, src_key_padding_mask=None, is_causal: bool = False, *,
                output_attentions: bool = False, rotary=None, position_bias=None):
        """src (B, T, d); src_mask (T, T) or (B·H, T, T); src_key_padding_mask (B, T), True = padding.

        Returns (B, T, d), or ((B, T, d), weights (B, H, T, T)) with ``output_attentions``.
        """
        x = src
        extra = {"rotary": rotary, "position_bias": position_bias}
        if self.norm_first:
            a, w = self._sa_block(self.norm1(x), src_mask, src_key_padding_mask, is_causal, output_attentions, extra)
            x = x + a
            x = x + self._ff_block(self.norm2(x))
        else:
            a, w = self._sa_block(x, src_mask, src_key_padding_mask, is_causal, output_attentions, extra)
            x = self.norm1(x + a)
            x = self.norm2(x + self._ff_block(x))
        return (x, w) if output_attentions else x

    def _sa_block(self, x, attn_mask, key_padding_mask, is_causal, need_weights, extra):
        out, w = self.self_attn(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask,
                                need_weights=need_weights, weights_grad=False, average_attn_weights=False,
                                is_causal=is_causal, **extra)
        return self.dropout1(out), w

    def _ff_block(self, x: Tensor) -> Tensor:
        x = feed_forward_in(x, self.linear1, self.activation, dropout=self.dropout)  # (B, T, ff)
        x = self.linear2(x)  # (B, T, d)
        return self.dropout2(x)


@takes_device
class TransformerDecoderLayer(Module):
    """Masked self-attention, cross-attention over `memory`, feed-forward; each with residual + LayerNorm.

    tgt (B, L, d_model), memory (B, S, d_model) -> (B, L, d_model).
    """

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048, dropout: float = 0.1,
                 activation: str | Callable = "relu", layer_norm_eps: float = 1e-5, batch_first: bool = True,
                 norm_first: bool = False, bias: bool = True, device=None, dtype=None):
        super().__init__()
        _check_batch_first(batch_first, "TransformerDecoderLayer")
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias, dtype=dtype)
        self.multihead_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias, dtype=dtype)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, dtype=dtype)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, dtype=dtype)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, dtype=dtype)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, dtype=dtype)
        self.norm3 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, dtype=dtype)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        self.dropout3 = Dropout(dropout)
        self.activation = _activation(activation)

    def forward(self, tgt: Tensor, memory: Tensor, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, tgt_is_causal: bool = False, memory_is_causal: bool = False, *,
                output_attentions: bool = False, rotary=None, position_bias=None):
        """Returns (B, L, d), or (out, self_weights (B, H, L, L), cross_weights (B, H, L, S)) with ``output_attentions``.

        tgt_mask (L, L): usually `generate_square_subsequent_mask(L)` (or tgt_is_causal=True);
        memory_key_padding_mask (B, S): True = padding in the source.
        """
        x = tgt
        extra = {"rotary": rotary, "position_bias": position_bias}
        if self.norm_first:
            a, ws = self._sa_block(self.norm1(x), tgt_mask, tgt_key_padding_mask, tgt_is_causal, output_attentions, extra)
            x = x + a
            c, wc = self._mha_block(self.norm2(x), memory, memory_mask, memory_key_padding_mask, memory_is_causal,
                                    output_attentions)
            x = x + c
            x = x + self._ff_block(self.norm3(x))
        else:
            a, ws = self._sa_block(x, tgt_mask, tgt_key_padding_mask, tgt_is_causal, output_attentions, extra)
            x = self.norm1(x + a)
            c, wc = self._mha_block(x, memory, memory_mask, memory_key_padding_mask, memory_is_causal,
                                    output_attentions)
            x = self.norm2(x + c)
            x = self.norm3(x + self._ff_block(x))
        return (x, ws, wc) if output_attentions else x

    def _sa_block(self, x, attn_mask, key_padding_mask, is_causal, need_weights, extra):
        out, w = self.self_attn(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask,
                                need_weights=need_weights, weights_grad=False, average_attn_weights=False,
                                is_causal=is_causal, **extra)
        return self.dropout1(out), w

    def _mha_block(self, x, mem, attn_mask, key_padding_mask, is_causal, need_weights):
        out, w = self.multihead_attn(x, mem, mem, attn_mask=attn_mask, key_padding_mask=key_padding_mask,
                                     need_weights=need_weights, weights_grad=False, average_attn_weights=False,
                                     is_causal=is_causal)
        return self.dropout2(out), w

    def _ff_block(self, x: Tensor) -> Tensor:
        x = feed_forward_in(x, self.linear1, self.activation, dropout=self.dropout)  # (B, L, ff)
        x = self.linear2(x)  # (B, L, d)
        return self.dropout3(x)


def _packs(layer) -> bool:
    """torch's conditions on the layer for TransformerEncoder's padding-free inference (its nested tensors):
    post-LN, q/k/v of one size with biases, ReLU or GELU, equal LayerNorm eps, an even number of heads."""
    sa = getattr(layer, "self_attn", None)
    act = getattr(layer, "activation", None)
    return (isinstance(layer, TransformerEncoderLayer) and not layer.norm_first and sa._qkv_same_embed_dim
            and sa.in_proj_bias is not None and sa.bias_k is None and not sa.add_zero_attn
            and (act is F.relu or act is F.gelu or type(act).__name__ in ("ReLU", "GELU"))
            and layer.norm1.eps == layer.norm2.eps and sa.num_heads % 2 == 0)


class TransformerEncoder(Module):
    """`num_layers` deep copies of `encoder_layer` (``layers.0`` …), then `norm` if given, as torch.

    In inference with a ``src_key_padding_mask`` (eval mode, no graph recorded, no other mask), it takes
    torch's fast path (``enable_nested_tensor=True``, the default): the layers run on the real tokens only,
    gathered into one (N, d) array for every product, LayerNorm and feed-forward, and put back in (B, T, d)
    for attention. As torch's, the output at padded positions is then 0 (``norm(0)`` when ``norm`` is
    given) instead of values nobody should read, and the work shrinks with the padding. As torch, only
    when the layers allow it (post-LN, ReLU/GELU, an even number of heads, ...; every layer checked on
    every call), no layer has forward hooks, and, with ``mask_check``, every sequence's padding is at its
    end. (torch's fused kernel computes GELU(approximate="tanh") as the exact GELU there; seqlab computes
    the layer's own activation, as its full path does.)
    """

    def __init__(self, encoder_layer: TransformerEncoderLayer, num_layers: int, norm: Module | None = None,
                 enable_nested_tensor: bool = True, mask_check: bool = True):
        super().__init__()
        if num_layers < 1:
            raise ValueError(f"num_layers must be >= 1, got {num_layers}")
        self.layers = ModuleList([copy.deepcopy(encoder_layer) for _ in range(num_layers)])
        self.num_layers = num_layers
        self.norm = norm
        self.enable_nested_tensor = enable_nested_tensor
        self.use_nested_tensor = enable_nested_tensor and _packs(encoder_layer)
        self.mask_check = mask_check

    def _pads(self, src: Tensor, mask, src_key_padding_mask, causal: bool, extras: bool):
        """The (B, T) bool padding (True = pad) when the fast path applies now, else None. Every layer is
        checked on every call (one may have been replaced, switched to training or to norm_first since),
        and none may carry forward hooks (the packed layers never call the modules, so hooks would not run)."""
        if (not getattr(self, "use_nested_tensor", False) or src.ndim != 3 or extras
                or src_key_padding_mask is None or mask is not None or causal):
            return None
        for layer in self.layers:
            if layer.training or not _packs(layer) or any(
                    m.__dict__.get("_forward_hooks") or m.__dict__.get("_forward_pre_hooks") for m in layer.modules()):
                return None
        if is_grad_enabled() and (src.requires_grad or any(p.requires_grad for p in self.parameters())):
            return None  # a graph is wanted: the packed layers record none
        xp = backend.xp_of(src.data)
        m = as_mask_array(src_key_padding_mask, xp)
        pad = m if m.dtype == bool else m != 0
        if pad.shape != tuple(src.shape[:2]):
            return None
        if self.mask_check and bool((pad[:, :-1] & ~pad[:, 1:]).any()):  # a real token after a pad
            return None
        return pad

    def _forward_packed(self, src: Tensor, pad) -> Tensor:
        """The layers on the real tokens only (see the class); pad (B, T) bool, True = padding."""
        B, T, d = src.shape
        xp = backend.xp_of(src.data)
        keep = ~pad
        idx = xp.flatnonzero(keep.reshape(-1))                             # (N,) rows of the real tokens
        allowed = keep[:, None, None, :]                                   # (B, 1, 1, T) True = may attend
        x = Tensor(src.data.reshape(B * T, d)[idx])                        # (N, d)
        for layer in self.layers:
            sa = layer.self_attn
            qkv = F.linear(x, sa.in_proj_weight, sa.in_proj_bias).data      # (N, 3d)
            full = xp.zeros((B * T, qkv.shape[1]), dtype=qkv.dtype)
            full[idx] = qkv
            out, _ = F.attention_qkv(Tensor(full.reshape(B, T, -1)), sa.num_heads, attn_mask=allowed,
                                     scale=1.0 / np.sqrt(sa.head_dim), training=False)  # (B, H, T, D)
            heads = out.data.transpose(0, 2, 1, 3).reshape(B * T, d)[idx]  # (N, d)
            x = layer.norm1(x + sa.out_proj(Tensor(heads)))
            x = layer.norm2(x + layer._ff_block(x))
        y = xp.zeros((B * T, d), dtype=x.dtype)
        y[idx] = x.data
        return Tensor(y.reshape(B, T, d))

    def forward(self, src: Tensor, mask=None, src_key_padding_mask=None, is_causal: bool | None = None, *,
                output_attentions: bool = False, rotary=None, position_bias=None):
        """src (B, T, d) -> (B, T, d); with ``output_attentions`` also a list of (B, H, T, T), one per layer."""
        causal = bool(is_causal) if is_causal is not None else _is_causal_mask(mask, src.shape[1])
        pad = self._pads(src, mask, src_key_padding_mask, causal,
                         output_attentions or rotary is not None or position_bias is not None)
        if pad is not None:
            x = self._forward_packed(src, pad)
            return self.norm(x) if self.norm is not None else x
        x, weights = src, []
        for layer in self.layers:
            x = layer(x, src_mask=mask, src_key_padding_mask=src_key_padding_mask, is_causal=causal,
                      output_attentions=output_attentions, rotary=rotary, position_bias=position_bias)
            if output_attentions:
                x, w = x
                weights.append(w)
        if self.norm is not None:
            x = self.norm(x)
        return (x, weights) if output_attentions else x


class TransformerDecoder(Module):
    """`num_layers` deep copies of `decoder_layer`, then `norm` if given, as torch."""

    def __init__(self, decoder_layer: TransformerDecoderLayer, num_layers: int, norm: Module | None = None):
        super().__init__()
        if num_layers < 1:
            raise ValueError(f"num_layers must be >= 1, got {num_layers}")
        self.layers = ModuleList([copy.deepcopy(decoder_layer) for _ in range(num_layers)])
        self.num_layers = num_layers
        self.norm = norm

    def forward(self, tgt: Tensor, memory: Tensor, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, tgt_is_causal: bool | None = None, memory_is_causal: bool = False, *,
                output_attentions: bool = False, rotary=None, position_bias=None):
        """tgt (B, L, d), memory (B, S, d) -> (B, L, d).

        With ``output_attentions``: (out, [self (B, H, L, L)] per layer, [cross (B, H, L, S)] per layer).
        """
        causal = bool(tgt_is_causal) if tgt_is_causal is not None else _is_causal_mask(tgt_mask, tgt.shape[1])
        x, self_w, cross_w = tgt, [], []
        for layer in self.layers:
            x = layer(x, memory, tgt_mask=tgt_mask, memory_mask=memory_mask, tgt_key_padding_mask=tgt_key_padding_mask,
                      memory_key_padding_mask=memory_key_padding_mask, tgt_is_causal=causal,
                      memory_is_causal=memory_is_causal, output_attentions=output_attentions, rotary=rotary,
                      position_bias=position_bias)
            if output_attentions:
                x, ws, wc = x
                self_w.append(ws)
                cross_w.append(wc)
        if self.norm is not None:
            x = self.norm(x)
        return (x, self_w, cross_w) if output_attentions else x


@takes_device
class Transformer(Module):
    """The full encoder-decoder of "Attention Is All You Need", as torch.nn.Transformer.

    ``encoder`` (with ``encoder.norm``) and ``decoder`` (with ``decoder.norm``);
    every weight matrix is Xavier-uniform initialised, as torch.
    """

    def __init__(self, d_model: int = 512, nhead: int = 8, num_encoder_layers: int = 6, num_decoder_layers: int = 6,
                 dim_feedforward: int = 2048, dropout: float = 0.1, activation: str | Callable = "relu",
                 custom_encoder: Module | None = None, custom_decoder: Module | None = None,
                 layer_norm_eps: float = 1e-5, batch_first: bool = True, norm_first: bool = False,
                 bias: bool = True, device=None, dtype=None):
        super().__init__()
        _check_batch_first(batch_first, "Transformer")
        if d_model % nhead:
            raise ValueError(f"d_model ({d_model}) must be divisible by nhead ({nhead})")
        if custom_encoder is not None:
            self.encoder = custom_encoder
        else:
            layer = TransformerEncoderLayer(d_model, nhead, dim_feedforward, dropout, activation, layer_norm_eps,
                                            True, norm_first, bias, dtype=dtype)
            self.encoder = TransformerEncoder(layer, num_encoder_layers,
                                              LayerNorm(d_model, eps=layer_norm_eps, bias=bias, dtype=dtype))
        if custom_decoder is not None:
            self.decoder = custom_decoder
        else:
            layer = TransformerDecoderLayer(d_model, nhead, dim_feedforward, dropout, activation, layer_norm_eps,
                                            True, norm_first, bias, dtype=dtype)
            self.decoder = TransformerDecoder(layer, num_decoder_layers,
                                              LayerNorm(d_model, eps=layer_norm_eps, bias=bias, dtype=dtype))
        self.d_model, self.nhead, self.batch_first = d_model, nhead, True
        for p in self.parameters():
            if p.ndim > 1:
                init.xavier_uniform_(p)

    def forward(self, src: Tensor, tgt: Tensor, src_mask=None, tgt_mask=None, memory_mask=None,
                src_key_padding_mask=None, tgt_key_padding_mask=None, memory_key_padding_mask=None,
                src_is_causal: bool | None = None, tgt_is_causal: bool | None = None,
                memory_is_causal: bool = False) -> Tensor:
        """src (B, S, d), tgt (B, L, d) -> (B, L, d)."""
        if src.shape[0] != tgt.shape[0]:
            raise ValueError(f"src has shape {src.shape} and tgt {tgt.shape}: the batch sizes must be equal")
        if src.shape[-1] != self.d_model or tgt.shape[-1] != self.d_model:
            raise ValueError(f"src {src.shape} and tgt {tgt.shape} must have last dim d_model={self.d_model}")
        memory = self.encoder(src, mask=src_mask, src_key_padding_mask=src_key_padding_mask, is_causal=src_is_causal)
        return self.decoder(tgt, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                            tgt_key_padding_mask=tgt_key_padding_mask,
                            memory_key_padding_mask=memory_key_padding_mask, tgt_is_causal=tgt_is_causal,
                            memory_is_causal=memory_is_causal)

    @staticmethod
    def generate_square_subsequent_mask(sz: int, device=None, dtype=None) -> Tensor:
        return generate_square_subsequent_mask(sz, device, dtype)
