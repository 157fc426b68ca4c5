"""T5 (Raffel et al., 2020; the chapter's 7.5.3): an encoder-decoder with relative position bias.

Parameter names follow transformers' `T5ForConditionalGeneration`
(``encoder.block.0.layer.0.SelfAttention.q.weight``). What sets T5 apart from
the chapter's Transformer:

- no absolute positions: each layer adds a learned scalar per (head, bucket of
  key − query distance) to the attention scores; the first layer of each stack
  owns the table and the other layers reuse its bias;
- scores are q·k without the 1/√d factor (it is folded into the init);
- RMS layer norm (no mean, no bias) before each sub-layer, and no biases anywhere;
- feed-forward ReLU (T5) or gated GELU (T5 v1.1: GELU(x W₀) ⊙ (x W₁));
- the output layer is the embedding matrix, with the decoder output scaled by
  d_model^-0.5 first when it is tied.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, ClassVar

import numpy as np

from seqlab import backend
from seqlab import functional as F
from seqlab import nn
from seqlab.autograd.tensor import Tensor
from seqlab.errors import ConfigError
from seqlab.hub import keymap
from seqlab.hub.config import HFConfig, activation
from seqlab.hub.pretrained import PreTrainedModel
from seqlab.models._common import as_array, batch_ids, cache_or_checkpoints, checkpointing, mask_values, token_ids
from seqlab.utils.checkpoint import checkpoint
from seqlab.models.outputs import BaseModelOutput, EncoderDecoderCache, Seq2SeqLMOutput, check_cache


@dataclass
class T5Config(HFConfig):
    """The fields of transformers' T5Config (config.json), with its defaults (t5-small)."""

    model_type: ClassVar[str] = "t5"
    aliases: ClassVar[dict[str, str]] = {"hidden_size": "d_model", "num_attention_heads": "num_heads",
                                         "num_hidden_layers": "num_layers", "head_dim": "d_kv"}

    vocab_size: int = 32128
    d_model: int = 512
    d_kv: int = 64                           # per-head size; H · d_kv need not equal d_model
    d_ff: int = 2048
    num_layers: int = 6
    num_decoder_layers: int | None = None    # None: num_layers
    num_heads: int = 8
    relative_attention_num_buckets: int = 32
    relative_attention_max_distance: int = 128
    dropout_rate: float = 0.1
    layer_norm_epsilon: float = 1e-6
    initializer_factor: float = 1.0
    feed_forward_proj: str = "relu"          # "relu" or "gated-gelu" (v1.1), "gated-<act>" in general
    is_encoder_decoder: bool = True
    pad_token_id: int | None = 0
    eos_token_id: int | list | None = 1
    decoder_start_token_id: int | None = 0   # None: pad_token_id
    tie_word_embeddings: bool = True
    scale_decoder_outputs: bool | None = None  # None: tie_word_embeddings (transformers 4 files lack it)
    classifier_dropout: float = 0.0          # T5ForSequenceClassification's and T5ForTokenClassification's heads
    num_labels: int = 2
    problem_type: str | None = None

    def __post_init__(self):
        if self.num_decoder_layers is None:
            self.num_decoder_layers = self.num_layers
        self._positive("vocab_size", "d_model", "d_kv", "d_ff", "num_layers", "num_decoder_layers", "num_heads",
                       "relative_attention_num_buckets", "relative_attention_max_distance")
        self._probability("dropout_rate", "classifier_dropout")
        self._positive("num_labels")
        self._problem_type()
        parts = self.feed_forward_proj.split("-") if isinstance(self.feed_forward_proj, str) else []
        if not parts or len(parts) > 2 or (len(parts) == 2 and parts[0] != "gated"):
            raise ConfigError(f"feed_forward_proj must be '<act>' or 'gated-<act>', got {self.feed_forward_proj!r}")
        activation(self.act_name)
        if self.scale_decoder_outputs is None:
            self.scale_decoder_outputs = self.tie_word_embeddings
        for k in ("dense_act_fn", "is_gated_act"):  # derived by transformers; recomputed, not stored
            self.extra.pop(k, None)

    @property
    def is_gated(self) -> bool:
        return self.feed_forward_proj.startswith("gated-")

    @property
    def act_name(self) -> str:
        # transformers maps "gated-gelu" to the tanh GELU ("gelu_new") for backward compatibility
        return "gelu_new" if self.feed_forward_proj == "gated-gelu" else self.feed_forward_proj.split("-")[-1]


def relative_position_bucket(relative_position: np.ndarray, bidirectional: bool = True, num_buckets: int = 32,
                             max_distance: int = 128) -> np.ndarray:
    """Bucket of each key − query distance (Mesh TensorFlow's scheme, as transformers).

    Half the buckets (per direction when bidirectional) hold the distances
    0..max_exact−1 exactly; the rest cover max_exact..max_distance on a log
    scale; farther distances share the last bucket. The log is taken in
    float32, as transformers does, so the buckets match it exactly.
    """
    rp = np.asarray(relative_position, dtype=np.int64)
    buckets = np.zeros_like(rp)
    if bidirectional:
        num_buckets //= 2
        buckets += (rp > 0).astype(np.int64) * num_buckets
        rp = np.abs(rp)
    else:
        rp = -np.minimum(rp, 0)
    max_exact = num_buckets // 2
    with np.errstate(divide="ignore"):
        large = np.log(rp.astype(np.float32) / np.float32(max_exact))
    large = large / np.float32(math.log(max_distance / max_exact)) * np.float32(num_buckets - max_exact)
    large = max_exact + np.nan_to_num(large, neginf=0.0).astype(np.int64)
    large = np.minimum(large, num_buckets - 1)
    return buckets + np.where(rp < max_exact, rp, large)


class T5Attention(nn.Module):
    """Multi-head attention with unscaled scores plus (first layer) the relative position bias."""

    def __init__(self, c: T5Config, has_relative_attention_bias: bool, is_decoder: bool, layer_idx: int):
        super().__init__()
        self.n_heads, self.d_kv, self.inner = c.num_heads, c.d_kv, c.num_heads * c.d_kv
        self.is_decoder, self.layer_idx = is_decoder, layer_idx
        self.num_buckets, self.max_distance = c.relative_attention_num_buckets, c.relative_attention_max_distance
        self.dropout = c.dropout_rate
        self.q = nn.Linear(c.d_model, self.inner, bias=False)
        self.k = nn.Linear(c.d_model, self.inner, bias=False)
        self.v = nn.Linear(c.d_model, self.inner, bias=False)
        self.o = nn.Linear(self.inner, c.d_model, bias=False)
        self.has_relative_attention_bias = has_relative_attention_bias
        if has_relative_attention_bias:
            self.relative_attention_bias = nn.Embedding(self.num_buckets, self.n_heads)

    def compute_bias(self, t_q: int, t_k: int, t_past: int = 0) -> Tensor:
        """(1, H, T_q, T_k): the learned bias of each head for each key − query distance."""
        query = np.arange(t_past, t_past + t_q)[:, None]
        key = np.arange(t_k)[None, :]
        bucket = relative_position_bucket(key - query, not self.is_decoder, self.num_buckets, self.max_distance)
        values = self.relative_attention_bias(bucket)                  # (T_q, T_k, H)
        return values.permute(2, 0, 1).unsqueeze(0)                   # (1, H, T_q, T_k)

    def _heads(self, x: Tensor) -> Tensor:
        B, T, _ = x.shape
        return x.reshape(B, T, self.n_heads, self.d_kv).transpose(1, 2)  # (B, H, T, d_kv)

    def forward(self, h: Tensor, mask, kv: Tensor | None = None, position_bias: Tensor | None = None,
                cache=None) -> tuple[Tensor, Tensor | None, Tensor]:
        """h (B, T, C) queries; kv (B, S, C) the encoder output for cross-attention (None: self-attention).
        mask: bool, broadcastable to (B, 1, T, S), True = may attend. cache: a `KVCache` (self-attention)
        or a list of (k, v) per layer (cross-attention). Returns (out (B, T, C), position_bias, weights)."""
        B, T, _ = h.shape
        q = self._heads(self.q(h))                                     # (B, H, T, d_kv)
        t_past = 0
        if kv is None:
            k, v = self._heads(self.k(h)), self._heads(self.v(h))     # (B, H, T, d_kv)
            if cache is not None:
                t_past = cache.get_seq_length(self.layer_idx)
                k, v = cache.update(self.layer_idx, k, v)             # (B, H, T_past + T, d_kv)
        elif cache is not None and self.layer_idx < len(cache):
            k, v = cache[self.layer_idx]                               # encoder keys/values, computed once
        else:
            k, v = self._heads(self.k(kv)), self._heads(self.v(kv))   # (B, H, S, d_kv)
            if cache is not None:
                cache.append((k.detach(), v.detach()))
        if position_bias is None and self.has_relative_attention_bias:
            position_bias = self.compute_bias(T, k.shape[2], t_past)  # (1, H, T, S)
        scores_bias = position_bias
        if mask is not None:  # blocked keys get −∞ (fully blocked rows give zeros, not NaN)
            xp = backend.xp_of(q.data)  # the mask on the scores' device (T5Stack moved it there already)
            additive = xp.where(xp.asarray(mask), q.dtype.type(0.0), q.dtype.type(-np.inf))  # (B, 1, T|1, S)
            scores_bias = Tensor(additive) if scores_bias is None else scores_bias + additive
        p = self.dropout if self.training else 0.0
        out, w = F.attention(q, k, v, attn_mask=scores_bias, dropout_p=p, scale=1.0, training=self.training)
        out = out.transpose(1, 2).reshape(B, T, self.inner)           # (B, T, H·d_kv)
        return self.o(out), position_bias, w


class T5LayerSelfAttention(nn.Module):
    def __init__(self, c: T5Config, has_bias: bool, is_decoder: bool, layer_idx: int):
        super().__init__()
        self.SelfAttention = T5Attention(c, has_bias, is_decoder, layer_idx)
        self.layer_norm = nn.RMSNorm(c.d_model, eps=c.layer_norm_epsilon)
        self.dropout = nn.Dropout(c.dropout_rate)

    def forward(self, h, mask, position_bias, cache):
        a, position_bias, w = self.SelfAttention(self.layer_norm(h), mask, None, position_bias, cache)
        return h + self.dropout(a), position_bias, w


class T5LayerCrossAttention(nn.Module):
    def __init__(self, c: T5Config, layer_idx: int):
        super().__init__()
        self.EncDecAttention = T5Attention(c, False, True, layer_idx)
        self.layer_norm = nn.RMSNorm(c.d_model, eps=c.layer_norm_epsilon)
        self.dropout = nn.Dropout(c.dropout_rate)

    def forward(self, h, enc, mask, cache):
        a, _, w = self.EncDecAttention(self.layer_norm(h), mask, enc, None, cache)
        return h + self.dropout(a), w


class T5DenseActDense(nn.Module):
    def __init__(self, c: T5Config):
        super().__init__()
        self.wi = nn.Linear(c.d_model, c.d_ff, bias=False)
        self.wo = nn.Linear(c.d_ff, c.d_model, bias=False)
        self.dropout = nn.Dropout(c.dropout_rate)
        self.act = activation(c.act_name)

    def forward(self, x: Tensor) -> Tensor:
        return self.wo(self.dropout(self.act(self.wi(x))))


class T5DenseGatedActDense(nn.Module):
    """act(x W₀) ⊙ (x W₁), then W_o (T5 v1.1's gated feed-forward)."""

    def __init__(self, c: T5Config):
        super().__init__()
        self.wi_0 = nn.Linear(c.d_model, c.d_ff, bias=False)
        self.wi_1 = nn.Linear(c.d_model, c.d_ff, bias=False)
        self.wo = nn.Linear(c.d_ff, c.d_model, bias=False)
        self.dropout = nn.Dropout(c.dropout_rate)
        self.act = activation(c.act_name)

    def forward(self, x: Tensor) -> Tensor:
        return self.wo(self.dropout(self.act(self.wi_0(x)) * self.wi_1(x)))


class T5LayerFF(nn.Module):
    def __init__(self, c: T5Config):
        super().__init__()
        self.DenseReluDense = T5DenseGatedActDense(c) if c.is_gated else T5DenseActDense(c)
        self.layer_norm = nn.RMSNorm(c.d_model, eps=c.layer_norm_epsilon)
        self.dropout = nn.Dropout(c.dropout_rate)

    def forward(self, h: Tensor) -> Tensor:
        return h + self.dropout(self.DenseReluDense(self.layer_norm(h)))


class T5Block(nn.Module):
    """layer[0] self-attention, (decoder) layer[1] cross-attention, layer[-1] feed-forward."""

    def __init__(self, c: T5Config, is_decoder: bool, layer_idx: int):
        super().__init__()
        self.is_decoder = is_decoder
        self.layer = nn.ModuleList([T5LayerSelfAttention(c, layer_idx == 0, is_decoder, layer_idx)])
        if is_decoder:
            self.layer.append(T5LayerCrossAttention(c, layer_idx))
        self.layer.append(T5LayerFF(c))


def _block_run(blk: nn.Module, mask, cross_mask) -> Callable:
    """One T5 block as a function of the tensors it needs (hidden, position bias, encoder output), for a
    checkpoint: no cache, no attention weights. Returns (hidden, position bias)."""
    def run(h: Tensor, position_bias: Tensor | None, encoder_hidden_states: Tensor | None):
        h, position_bias, _ = blk.layer[0](h, mask, position_bias, None)
        if blk.is_decoder:
            h, _ = blk.layer[1](h, encoder_hidden_states, cross_mask, None)
        return blk.layer[-1](h), position_bias
    return run


class T5Stack(nn.Module):
    """The encoder or the decoder: embeddings (shared), blocks, final RMS norm."""

    gradient_checkpointing = False  # model.gradient_checkpointing_enable() turns it on (see _common.call_layer)
    checkpoint_options: dict = {}

    def __init__(self, c: T5Config, embed_tokens: nn.Embedding, is_decoder: bool):
        super().__init__()
        self.is_decoder = is_decoder
        self.embed_tokens = embed_tokens
        n = c.num_decoder_layers if is_decoder else c.num_layers
        self.block = nn.ModuleList([T5Block(c, is_decoder, i) for i in range(n)])
        self.final_layer_norm = nn.RMSNorm(c.d_model, eps=c.layer_norm_epsilon)
        self.dropout = nn.Dropout(c.dropout_rate)

    def forward(self, input_ids, attention_mask=None, encoder_hidden_states: Tensor | None = None,
                encoder_attention_mask=None, cache: EncoderDecoderCache | None = None,
                output_attentions: bool = False, output_hidden_states: bool = False) -> BaseModelOutput:
        """attention_mask (B, T_past + T) and encoder_attention_mask (B, S): 1 = real token. Returns
        last_hidden_state (B, T, C) and, with `output_attentions`, attentions = (self per layer, cross per
        layer or None); without, attentions is None (the weights are not kept: under no_grad they would
        keep every layer's alive)."""
        ids = batch_ids(input_ids)
        B, T = ids.shape
        t_past = cache.get_seq_length() if cache is not None else 0
        if self.is_decoder:  # causal: query at position t_past + i sees keys 0 .. t_past + i
            mask = (np.arange(t_past + T)[None, :] <= (t_past + np.arange(T))[:, None])[None, None]  # (1,1,T,T')
        else:
            mask = None
        if attention_mask is not None:
            am = backend.to_numpy(mask_values(attention_mask)) != 0  # masks are built on the host
            if am.shape != (B, t_past + T):  # never broadcast over the batch
                past = f" after {t_past} cached positions" if t_past else ""
                raise ValueError(f"attention_mask has shape {am.shape} but input_ids {ids.shape}{past}: "
                                 f"expected ({B}, {t_past + T})")
            mask = am[:, None, None, :] if mask is None else (mask & am[:, None, None, :])  # (B, 1, T|1, T')
        cross_mask = None
        if encoder_attention_mask is not None:
            em = backend.to_numpy(mask_values(encoder_attention_mask, "encoder_attention_mask")) != 0
            if encoder_hidden_states is not None and em.shape != (B, encoder_hidden_states.shape[1]):
                raise ValueError(f"encoder_attention_mask (the model's attention_mask) has shape {em.shape} but "
                                 f"the decoder's batch and the encoder's length need "
                                 f"({B}, {encoder_hidden_states.shape[1]})")
            cross_mask = em[:, None, None, :]                                                 # (B, 1, 1, S)
        h = self.dropout(self.embed_tokens(ids))                                              # (B, T, C)
        mask, cross_mask = (None if m is None else backend.to_device(m, h.device) for m in (mask, cross_mask))  # once
        position_bias, self_w, cross_w, hidden = None, [], [], []
        options = checkpointing(self) if cache is None and not output_attentions else None
        for blk in self.block:
            if output_hidden_states:  # transformers': the embeddings, each block's output, the last normed
                hidden.append(h)
            if options is not None:  # the whole block under one checkpoint; the bias comes back out of it
                h, position_bias = checkpoint(_block_run(blk, mask, cross_mask), h, position_bias,
                                              encoder_hidden_states, **options)
                continue
            h, position_bias, w = blk.layer[0](h, mask, position_bias,
                                               cache.self_attention if cache is not None else None)
            if output_attentions:
                self_w.append(w)
            if self.is_decoder:
                h, w = blk.layer[1](h, encoder_hidden_states, cross_mask,
                                    cache.cross_attention if cache is not None else None)
                if output_attentions:
                    cross_w.append(w)
            h = blk.layer[-1](h)
        h = self.dropout(self.final_layer_norm(h))
        return BaseModelOutput(last_hidden_state=h,
                               hidden_states=tuple(hidden) + (h,) if output_hidden_states else None,
                               attentions=(tuple(self_w), tuple(cross_w) or None) if output_attentions else None)


def decoder_start(c: T5Config) -> int:
    """The decoder's first input token: decoder_start_token_id, else pad_token_id."""
    start = c.decoder_start_token_id if c.decoder_start_token_id is not None else c.pad_token_id
    if start is None:
        raise ConfigError("T5 needs decoder_start_token_id (or pad_token_id) to start the decoder")
    return start


def shift_right(labels, c: T5Config) -> np.ndarray:
    """Decoder inputs for teacher forcing: [start, y₁, …, y_{T−1}], with -100 replaced by padding."""
    lab = token_ids(labels)
    out = np.empty_like(lab)
    out[:, 0] = decoder_start(c)
    out[:, 1:] = lab[:, :-1]
    pad = c.pad_token_id if c.pad_token_id is not None else 0
    return np.where(out == -100, pad, out)


def _init_weights(model: "T5ForConditionalGeneration", c: T5Config) -> None:
    """Mesh TensorFlow's init (as transformers): the 1/√d of attention lives in the q init."""
    f, d, dkv, H = c.initializer_factor, c.d_model, c.d_kv, c.num_heads
    nn.init.normal_(model.shared.weight, 0.0, f * 1.0)
    if not c.tie_word_embeddings and hasattr(model, "lm_head"):  # T5Model and the task heads have none
        nn.init.normal_(model.lm_head.weight, 0.0, f * 1.0)
    for m in model.modules():
        if isinstance(m, T5Attention):
            nn.init.normal_(m.q.weight, 0.0, f * (d * dkv) ** -0.5)
            nn.init.normal_(m.k.weight, 0.0, f * d ** -0.5)
            nn.init.normal_(m.v.weight, 0.0, f * d ** -0.5)
            nn.init.normal_(m.o.weight, 0.0, f * (H * dkv) ** -0.5)
            if m.has_relative_attention_bias:
                nn.init.normal_(m.relative_attention_bias.weight, 0.0, f * d ** -0.5)
        elif isinstance(m, (T5DenseActDense, T5DenseGatedActDense)):
            for name in ("wi", "wi_0", "wi_1"):
                if name in m._modules:
                    nn.init.normal_(m._modules[name].weight, 0.0, f * d ** -0.5)
            nn.init.normal_(m.wo.weight, 0.0, f * c.d_ff ** -0.5)


class T5ForConditionalGeneration(nn.Module, PreTrainedModel):
    """Text to text: encoder over input_ids, decoder over decoder_input_ids, logits (B, T_dec, V)."""

    config_class = T5Config
    keymap = keymap.T5
    hf_architecture = "T5ForConditionalGeneration"

    def __init__(self, config: T5Config):
        super().__init__()
        self.config = config
        self.shared = nn.Embedding(config.vocab_size, config.d_model)
        self.encoder = T5Stack(config, self.shared, is_decoder=False)
        self.decoder = T5Stack(config, self.shared, is_decoder=True)
        self.lm_head = nn.Linear(config.d_model, config.vocab_size, bias=False)
        if config.tie_word_embeddings:
            self.lm_head.weight = self.shared.weight
        _init_weights(self, config)

    def _untie(self, alias: str) -> None:
        if alias != "lm_head.weight":
            super()._untie(alias)
        self.lm_head.weight = nn.Parameter(self.lm_head.weight.data.copy())
        self.config.tie_word_embeddings = False

    @property
    def decoder_start_token_id(self) -> int:
        return decoder_start(self.config)

    def shift_right(self, labels) -> np.ndarray:
        """Decoder inputs for teacher forcing: [start, y₁, …, y_{T−1}], with -100 replaced by padding."""
        return shift_right(labels, self.config)

    def get_encoder(self) -> "T5Stack":
        """The encoder stack: ``model.get_encoder()(input_ids=ids, attention_mask=mask)``, as transformers."""
        return self.encoder

    def encode(self, input_ids, attention_mask=None, output_attentions: bool = False,
               output_hidden_states: bool = False) -> BaseModelOutput:
        return self.encoder(input_ids, attention_mask, output_attentions=output_attentions,
                            output_hidden_states=output_hidden_states)

    def forward(self, input_ids=None, attention_mask=None, decoder_input_ids=None, labels=None,
                output_attentions: bool = False, decoder_attention_mask=None,
                encoder_outputs: BaseModelOutput | None = None, past_key_values: EncoderDecoderCache | None = None,
                use_cache: bool = False, output_hidden_states: bool = False) -> Seq2SeqLMOutput:
        """input_ids (B, S) with attention_mask (B, S), 1 = real; decoder_input_ids (B, T), or labels (B, T)
        from which they are made by `shift_right`. encoder_outputs: reuse an encoder pass (generation)."""
        if isinstance(encoder_outputs, (tuple, list)):  # transformers' tuple form: (last_hidden_state, ...)
            h = encoder_outputs[0]
            encoder_outputs = BaseModelOutput(h if isinstance(h, Tensor) else Tensor(backend.from_torch(h)))
        if encoder_outputs is None:
            if input_ids is None:
                raise ValueError("pass input_ids or encoder_outputs")
            encoder_outputs = self.encoder(input_ids, attention_mask, output_attentions=output_attentions,
                                           output_hidden_states=output_hidden_states)
        lab = None
        if labels is not None:  # (B, T_dec): one target per decoder position
            lab, b_enc = token_ids(labels, "labels"), encoder_outputs.last_hidden_state.shape[0]
            dec_shape = None if decoder_input_ids is None else tuple(as_array(decoder_input_ids).shape)
            if dec_shape is not None and lab.shape != dec_shape:
                raise ValueError(f"labels has shape {lab.shape} but decoder_input_ids {dec_shape}")
            if lab.ndim != 2 or lab.shape[0] != b_enc:
                raise ValueError(f"labels has shape {lab.shape} but input_ids has batch size {b_enc}: "
                                 f"expected ({b_enc}, target length)")
        if decoder_input_ids is None:
            if labels is None:
                raise ValueError("pass decoder_input_ids or labels")
            decoder_input_ids = self.shift_right(labels)
        check_cache(past_key_values, EncoderDecoderCache)
        use_cache = cache_or_checkpoints(self.decoder, use_cache)
        cache = past_key_values if past_key_values is not None else (EncoderDecoderCache() if use_cache else None)
        dec = self.decoder(decoder_input_ids, decoder_attention_mask, encoder_outputs.last_hidden_state,
                           attention_mask, cache, output_attentions=output_attentions,
                           output_hidden_states=output_hidden_states)
        h = dec.last_hidden_state                                                 # (B, T, C)
        if self.config.scale_decoder_outputs:  # tied output layer: rescale by d_model^-0.5 (Mesh TF)
            h = h * (self.config.d_model ** -0.5)
        logits = self.lm_head(h)                                                  # (B, T, V)
        loss = None
        if lab is not None:
            loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), lab.reshape(-1))
        enc_self = encoder_outputs.attentions[0] if encoder_outputs.attentions else None
        return Seq2SeqLMOutput(
            loss=loss, logits=logits, past_key_values=cache,
            decoder_attentions=dec.attentions[0] if output_attentions else None,
            cross_attentions=dec.attentions[1] if output_attentions else None,
            encoder_last_hidden_state=encoder_outputs.last_hidden_state,
            encoder_attentions=enc_self if output_attentions else None,
            decoder_hidden_states=dec.hidden_states, encoder_hidden_states=encoder_outputs.hidden_states)

    def generate(self, input_ids, attention_mask=None, **kwargs):
        """Greedy search, sampling or beam search: (B, S) -> (B, 1 + new) starting with the decoder start token.

        With return_dict_in_generate=True, transformers' output object (sequences, scores, logits, and for beam
        search sequences_scores and beam_indices); streamer= gets the tokens as they come.
        """
        from seqlab.models.generation import generate

        return generate(self, input_ids, attention_mask, **kwargs)

    def compute_transition_scores(self, sequences, scores, beam_indices=None,
                                  normalize_logits: bool = False) -> np.ndarray:
        """Each generated token's score (N, new) from generate's `scores` (and `beam_indices` after beam search),
        as transformers' `compute_transition_scores`; see `seqlab.models.generation.compute_transition_scores`."""
        from seqlab.models.generation import compute_transition_scores

        return compute_transition_scores(sequences, scores, beam_indices, normalize_logits)


# transformers' other T5 classes (T5Model, T5EncoderModel and the task heads) live in t5_heads.py, which builds on
# the classes above; they are importable from here too, loaded on first use (an import at the top of either file
# would be circular).
_HEADS = ("T5Model", "T5EncoderModel", "T5ForSequenceClassification", "T5ForTokenClassification",
          "T5ForQuestionAnswering")


def __getattr__(name: str):
    if name in _HEADS:
        from seqlab.models import t5_heads

        return getattr(t5_heads, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
