"""GPT-2 (Radford et al., 2019; the chapter's 7.5.2): a pre-LN causal Transformer decoder.

Parameter names follow transformers' `GPT2LMHeadModel` (``transformer.h.0.attn.c_attn.weight``).
GPT-2's files store those projections as ``Conv1D`` (in, out) matrices; seqlab
uses `nn.Linear` (out, in) and `seqlab.hub.keymap.GPT2_TRANSPOSED` lists the
keys transposed on the way in and out.

Each block: h = h + Attn(LN₁(h)); h = h + MLP(LN₂(h)) — normalisation before
each sub-layer ("pre-LN"), learned absolute positions, tanh-GELU, and the
output layer reuses the token embedding matrix (tied weights).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from seqlab import backend
from seqlab import functional as F
from seqlab import nn
from seqlab.autograd.tensor import Tensor
from seqlab.errors import ConfigError
from seqlab.hub import keymap
from seqlab.hub.config import HFConfig, activation
from seqlab.hub.pretrained import PreTrainedModel
from seqlab.models._common import (cache_or_checkpoints, call_layer, ids_or_embeds, init_normal_, mask_values,
                                   position_values, token_ids)
from seqlab.models.outputs import (CausalLMOutput, KVCache, SequenceClassifierOutput, check_cache,
                                   classification_loss)
from seqlab.nn.linear import feed_forward_in


@dataclass
class GPTConfig(HFConfig):
    """The fields of transformers' GPT2Config (config.json), with its defaults (GPT-2 small)."""

    model_type: ClassVar[str] = "gpt2"
    aliases: ClassVar[dict[str, str]] = {"hidden_size": "n_embd", "max_position_embeddings": "n_positions",
                                         "num_attention_heads": "n_head", "num_hidden_layers": "n_layer"}

    vocab_size: int = 50257
    n_positions: int = 1024                  # longest context (learned position table)
    n_embd: int = 768
    n_layer: int = 12
    n_head: int = 12
    n_inner: int | None = None               # MLP width; None: 4 * n_embd
    activation_function: str = "gelu_new"   # tanh-approximated GELU
    resid_pdrop: float = 0.1
    embd_pdrop: float = 0.1
    attn_pdrop: float = 0.1
    layer_norm_epsilon: float = 1e-5
    initializer_range: float = 0.02
    scale_attn_weights: bool = True          # divide scores by √d
    scale_attn_by_inverse_layer_idx: bool = False
    reorder_and_upcast_attn: bool = False    # a mixed-precision trick; same math in float32/64
    add_cross_attention: bool = False
    bos_token_id: int | None = 50256
    eos_token_id: int | list | None = 50256
    pad_token_id: int | None = None
    tie_word_embeddings: bool = True
    num_labels: int = 2                      # GPTForSequenceClassification
    problem_type: str | None = None
    classifier_dropout: float | None = None  # GPT2ForTokenClassification's; None: 0.1 (transformers' rule)
    # GPT2DoubleHeadsModel's multiple-choice head (transformers' SequenceSummary): which vector sums up a sequence
    # ("cls_index": the token at mc_token_ids, "last", "first", "mean"), then dropout, Linear (summary_use_proj) to
    # num_labels (summary_proj_to_labels) or n_embd outputs, and the activation (None: none)
    summary_type: str = "cls_index"
    summary_use_proj: bool = True
    summary_activation: str | None = None
    summary_proj_to_labels: bool = True
    summary_first_dropout: float = 0.1

    def __post_init__(self):
        self._positive("vocab_size", "n_positions", "n_embd", "n_layer", "n_head", "num_labels")
        if self.n_inner is not None:
            self._positive("n_inner")
        self._divisible("n_embd", "n_head")
        self._probability("resid_pdrop", "embd_pdrop", "attn_pdrop", "classifier_dropout")
        activation(self.activation_function)
        self._one_of("summary_type", {"last", "first", "mean", "cls_index", "attn"})
        self._probability("summary_first_dropout")
        if self.summary_activation:  # None or "": no activation, as transformers
            activation(self.summary_activation)
        if self.add_cross_attention:
            raise ConfigError("GPT with add_cross_attention=True (an encoder-decoder GPT-2) is not supported")
        self._problem_type()


class GPTAttention(nn.Module):
    """Causal multi-head self-attention with one fused q/k/v projection `c_attn`."""

    def __init__(self, c: GPTConfig, layer_idx: int):
        super().__init__()
        self.n_head, self.n_embd, self.layer_idx = c.n_head, c.n_embd, layer_idx
        self.c_attn = nn.Linear(c.n_embd, 3 * c.n_embd)
        self.c_proj = nn.Linear(c.n_embd, c.n_embd)
        self.attn_dropout = c.attn_pdrop
        self.resid_dropout = nn.Dropout(c.resid_pdrop)
        self.scale = (c.n_embd // c.n_head) ** -0.5 if c.scale_attn_weights else 1.0
        if c.scale_attn_by_inverse_layer_idx:
            self.scale /= layer_idx + 1

    def forward(self, x: Tensor, mask, cache: KVCache | None, need_weights: bool = True) -> tuple[Tensor, Tensor]:
        """x (B, T, C); mask bool (B|1, 1, T, T_past + T), True = may attend; cache: past keys/values.
        `need_weights=False`: the weights returned are None (not made where the attention can skip them)."""
        B, T, C = x.shape
        H, D = self.n_head, C // self.n_head
        p = self.attn_dropout if self.training else 0.0
        if cache is None:  # q, k, v straight from c_attn's (B, T, 3C) output: one gradient array for it
            out, w = F.attention_qkv(self.c_attn(x), H, attn_mask=mask, dropout_p=p, scale=self.scale,
                                     training=self.training, need_weights=need_weights, merge_heads=True)
            return self.resid_dropout(self.c_proj(out)), w  # out (B, T, C), the heads merged
        q, k, v = self.c_attn(x).split(C, dim=2)          # 3 × (B, T, C)
        q = q.reshape(B, T, H, D).transpose(1, 2)         # (B, H, T, D)
        k = k.reshape(B, T, H, D).transpose(1, 2)         # (B, H, T, D)
        v = v.reshape(B, T, H, D).transpose(1, 2)         # (B, H, T, D)
        k, v = cache.update(self.layer_idx, k, v)         # (B, H, T_past + T, D)
        out, w = F.attention(q, k, v, attn_mask=mask, dropout_p=p, scale=self.scale, training=self.training,
                             need_weights=need_weights)
        return self._project(out), w

    def _project(self, out: Tensor) -> Tensor:
        """(B, H, T, D) heads -> c_proj and dropout, (B, T, C)."""
        B, H, T, D = out.shape
        return self.resid_dropout(self.c_proj(out.transpose(1, 2).reshape(B, T, H * D)))


class GPTMLP(nn.Module):
    def __init__(self, c: GPTConfig):
        super().__init__()
        inner = c.n_inner or 4 * c.n_embd
        self.c_fc = nn.Linear(c.n_embd, inner)
        self.c_proj = nn.Linear(inner, c.n_embd)
        self.act = activation(c.activation_function)
        self.dropout = nn.Dropout(c.resid_pdrop)

    def forward(self, x: Tensor) -> Tensor:
        return self.dropout(self.c_proj(feed_forward_in(x, self.c_fc, self.act)))  # bias + act: one pass


class GPTBlock(nn.Module):
    """Pre-LN: x + Attn(LN(x)), then x + MLP(LN(x))."""

    def __init__(self, c: GPTConfig, layer_idx: int):
        super().__init__()
        self.ln_1 = nn.LayerNorm(c.n_embd, eps=c.layer_norm_epsilon)
        self.attn = GPTAttention(c, layer_idx)
        self.ln_2 = nn.LayerNorm(c.n_embd, eps=c.layer_norm_epsilon)
        self.mlp = GPTMLP(c)

    def forward(self, x: Tensor, mask, cache, need_weights: bool = True) -> tuple[Tensor, Tensor]:
        a, w = self.attn(self.ln_1(x), mask, cache, need_weights)
        x = x + a
        return x + self.mlp(self.ln_2(x)), w


def causal_mask(attention_mask, t_new: int, t_past: int, xp=np, batch: int | None = None):
    """Bool (B|1, 1, T_new, T_past + T_new): query i (at position T_past + i) may attend key j <= it,
    and only to real tokens (attention_mask (B, T_past + T_new), 1 = real). None when nothing is blocked.
    Built with the array module `xp` of the model's weights (CuPy on a GPU). With `batch`, the mask must
    be exactly (batch, T_past + T_new): ValueError otherwise (it is never broadcast over the batch)."""
    t_all = t_past + t_new
    allowed = xp.arange(t_all)[None, :] <= (t_past + xp.arange(t_new))[:, None]  # (T_new, T_all)
    mask = allowed[None, None]                                                     # (1, 1, T_new, T_all)
    if attention_mask is not None:
        am = mask_values(attention_mask)
        if am.ndim != 2 or am.shape[1] != t_all or (batch is not None and am.shape[0] != batch):
            b = batch if batch is not None else "batch"
            past = f" after {t_past} cached positions" if t_past else ""
            raise ValueError(f"attention_mask has shape {am.shape} but input_ids ({b}, {t_new}){past}: "
                             f"expected ({b}, {t_all})")
        mask = mask & xp.asarray(am != 0)[:, None, None, :]                        # (B, 1, T_new, T_all)
    elif t_new == 1:
        return None
    return mask


class GPTModel(nn.Module):
    """The decoder stack (transformers' GPT2Model): ids (B, T) -> hidden states (B, T, C)."""

    gradient_checkpointing = False  # model.gradient_checkpointing_enable() turns it on (see _common.call_layer)
    checkpoint_options: dict = {}

    def __init__(self, c: GPTConfig):
        super().__init__()
        self.config = c
        self.wte = nn.Embedding(c.vocab_size, c.n_embd)
        self.wpe = nn.Embedding(c.n_positions, c.n_embd)
        self.drop = nn.Dropout(c.embd_pdrop)
        self.h = nn.ModuleList([GPTBlock(c, i) for i in range(c.n_layer)])
        self.ln_f = nn.LayerNorm(c.n_embd, eps=c.layer_norm_epsilon)

    def forward(self, input_ids, attention_mask=None, position_ids=None, past_key_values: KVCache | None = None,
                output_attentions: bool = False, output_hidden_states: bool = False, inputs_embeds=None
                ) -> tuple[Tensor, tuple | None, tuple | None]:
        """(last hidden state (B, T, C), attentions per layer or None, hidden states or None). The hidden
        states are transformers': the embeddings, each block's output, the last after ln_f (L + 1).
        `inputs_embeds` (B, T, C) stand in for input_ids' token embeddings (transformers' option)."""
        ids, embeds, B, T = ids_or_embeds(input_ids, inputs_embeds)
        xp = backend.xp_of(self.wte.weight.data)  # NumPy, or CuPy for a model moved to the GPU
        t_past = past_key_values.get_seq_length() if past_key_values is not None else 0
        if position_ids is None:  # as transformers: 0, 1, ... after the cached positions, whatever the padding
            position_ids = xp.arange(t_past, t_past + T)[None, :]                      # (1, T)
        pos = position_values(position_ids, B, T, self.config.n_positions)
        x = self.drop((self.wte(ids) if embeds is None else embeds) + self.wpe(pos))     # (B, T, C)
        mask = causal_mask(attention_mask, T, t_past, xp, batch=B)
        attentions, hidden = [], []  # filled only if asked for: under no_grad they would keep every layer alive
        for block in self.h:
            if output_hidden_states:
                hidden.append(x)
            if past_key_values is None:  # a cache is written once per call: never under a checkpoint
                x, w = call_layer(self, block, x, mask, None, bool(output_attentions), keep_weights=output_attentions)
            else:
                x, w = block(x, mask, past_key_values, bool(output_attentions))
            if output_attentions:
                attentions.append(w)
        x = self.ln_f(x)
        return x, (tuple(attentions) if output_attentions else None), \
            (tuple(hidden) + (x,) if output_hidden_states else None)


def _init_weights(model: nn.Module, c: GPTConfig) -> None:
    """GPT-2's init: N(0, 0.02), and N(0, 0.02/√(2L)) for the projections into the residual stream."""
    init_normal_(model, c.initializer_range,
                 std_of=lambda name, std: std / (2 * c.n_layer) ** 0.5 if name.endswith("c_proj") else std)


class GPTPreTrained(PreTrainedModel):
    config_class = GPTConfig
    keymap = keymap.GPT2


class GPT(nn.Module, GPTPreTrained):
    """GPT-2 language model: logits (B, T, V) over the next token at every position."""

    hf_architecture = "GPT2LMHeadModel"

    def __init__(self, config: GPTConfig):
        super().__init__()
        self.config = config
        self.transformer = GPTModel(config)
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
        _init_weights(self, config)
        if config.tie_word_embeddings:
            self.lm_head.weight = self.transformer.wte.weight

    def _untie(self, alias: str) -> None:
        self.lm_head.weight = nn.Parameter(self.lm_head.weight.data.copy())
        self.config.tie_word_embeddings = False

    def forward(self, input_ids=None, attention_mask=None, labels=None, output_attentions: bool = False,
                past_key_values: KVCache | None = None, use_cache: bool = False, position_ids=None,
                output_hidden_states: bool = False, inputs_embeds=None) -> CausalLMOutput:
        """input_ids (B, T); attention_mask (B, T_past + T), 1 = real token (left padding for batches);
        labels (B, T): the inputs themselves (shifted inside), -100 = ignore. With use_cache, the returned
        `past_key_values` holds every layer's keys/values: pass it back with only the new tokens."""
        check_cache(past_key_values, KVCache)
        use_cache = cache_or_checkpoints(self.transformer, use_cache)
        cache = past_key_values if past_key_values is not None else (KVCache() if use_cache else None)
        h, attn, hidden = self.transformer(input_ids, attention_mask, position_ids, cache, output_attentions,
                                           output_hidden_states, inputs_embeds)
        logits = self.lm_head(h)                                                       # (B, T, V)
        loss = None
        if labels is not None:  # token t predicts token t + 1
            lab = token_ids(labels, "labels")
            if lab.shape != tuple(logits.shape[:2]):
                raise ValueError(f"labels has shape {lab.shape} but input_ids {tuple(logits.shape[:2])}: "
                                 f"expected the same (batch, seq) shape")
            lab = lab[:, 1:].reshape(-1)                                               # (B·(T-1),)
            loss = F.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]), lab)
        return CausalLMOutput(loss=loss, logits=logits, past_key_values=cache if use_cache or past_key_values
                              is not None else None, last_hidden_state=h, attentions=attn,
                              hidden_states=hidden)

    def generate(self, input_ids=None, attention_mask=None, **kwargs):
        """Continue prompts (B, T) -> (B, T + new); see `seqlab.models.generation.generate`. Without
        input_ids, one sequence from the config's ``bos_token_id``, as transformers starts.

        With return_dict_in_generate=True, transformers' output object (sequences, scores, logits, and for beam
        search sequences_scores and beam_indices); streamer= gets the tokens as they come.
        """
        from seqlab.models.generation import generate

        if input_ids is None:
            bos = getattr(self.config, "bos_token_id", None)
            if bos is None:
                raise ValueError("generate() without input_ids starts from the config's bos_token_id, which is None; "
                                 "give input_ids")
            input_ids = [[int(bos)]]
        return generate(self, input_ids, attention_mask, **kwargs)

    def compute_transition_scores(self, sequences, scores, beam_indices=None,
                                  normalize_logits: bool = False) -> np.ndarray:
        """Each generated token's score (N, new) from generate's `scores` (and `beam_indices` after beam search),
        as transformers' `compute_transition_scores`; see `seqlab.models.generation.compute_transition_scores`."""
        from seqlab.models.generation import compute_transition_scores

        return compute_transition_scores(sequences, scores, beam_indices, normalize_logits)


class GPTForSequenceClassification(nn.Module, GPTPreTrained):
    """Scores every position with `score`, then keeps the last real token's: logits (B, num_labels)."""

    hf_architecture = "GPT2ForSequenceClassification"
    head_prefixes = ("score.",)

    def __init__(self, config: GPTConfig):
        super().__init__()
        self.config = config
        self.transformer = GPTModel(config)
        self.score = nn.Linear(config.n_embd, config.num_labels, bias=False)
        _init_weights(self, config)

    def last_token_index(self, ids: np.ndarray, attention_mask) -> np.ndarray:
        """Per row, the last token that is not padding (transformers' rule: not pad_token_id; without a
        pad token, the attention mask's last 1, else the last position)."""
        B, T = ids.shape
        xp = backend.xp_of(ids)
        if self.config.pad_token_id is not None:
            real = ids != self.config.pad_token_id
        elif attention_mask is not None:
            real = backend.to_device(mask_values(attention_mask), backend.device_of(ids)) != 0
        else:
            return xp.full(B, T - 1)
        return (xp.arange(T)[None, :] * real).argmax(-1)

    def forward(self, input_ids, attention_mask=None, labels=None, output_attentions: bool = False,
                output_hidden_states: bool = False) -> SequenceClassifierOutput:
        ids = token_ids(input_ids)
        h, attn, hidden = self.transformer(ids, attention_mask, None, None, output_attentions, output_hidden_states)
        logits = self.score(h)                                                         # (B, T, num_labels)
        last = self.last_token_index(ids, attention_mask)
        pooled = logits[backend.xp_of(last).arange(ids.shape[0]), last]  # (B, num_labels)
        loss = None if labels is None else classification_loss(pooled, labels, self.config.problem_type)
        return SequenceClassifierOutput(loss=loss, logits=pooled, attentions=attn, hidden_states=hidden)


# transformers' other GPT-2 classes (the bare GPT2Model, token classification, question answering, double heads)
# live in gpt_heads.py, which builds on the classes above; they are importable from here too, loaded on first use
# (an import at the top of either file would be circular).
_HEADS = ("GPT2Model", "GPT2ForTokenClassification", "GPT2ForQuestionAnswering", "GPT2DoubleHeadsModel")


def __getattr__(name: str):
    if name in _HEADS:
        from seqlab.models import gpt_heads

        return getattr(gpt_heads, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
