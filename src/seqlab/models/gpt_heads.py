"""transformers' other GPT-2 classes, with its attribute, checkpoint and output field names.

- `GPT2Model`: the bare decoder stack (``wte``, ``wpe``, ``h.0...``, ``ln_f``: its files carry no
  ``transformer.`` prefix), returning hidden states; a GPT2LMHeadModel folder loads into it and the other way
  round, as in transformers.
- `GPT2ForTokenClassification`: dropout -> Linear on every token.
- `GPT2ForQuestionAnswering`: a start and an end score per token.
- `GPT2DoubleHeadsModel`: the language model plus a multiple-choice head on one token of each choice, as GPT's
  fine-tuning on RocStories/SWAG (Radford et al., 2018, §3.3): input (B, num_choices, T).

Each takes transformers' ``token_type_ids``: GPT-2 has no segment table, so they are looked up in the token
embedding ``wte`` and added, as transformers does.
"""
from __future__ import annotations

import numpy as np

from seqlab import backend
from seqlab import functional as F
from seqlab import nn
from seqlab.autograd.tensor import Tensor
from seqlab.errors import ConfigError
from seqlab.hub.config import activation
from seqlab.models._common import (cache_or_checkpoints, init_normal_, mask_values, span_loss, token_ids,
                                   token_labels)
from seqlab.models.gpt import GPT, GPTConfig, GPTModel, GPTPreTrained, _init_weights
from seqlab.models.outputs import KVCache, check_cache
from seqlab.models.outputs_heads import (BaseModelOutputWithPastAndCrossAttentions, GPT2DoubleHeadsModelOutput,
                                         QuestionAnsweringModelOutput, TokenClassifierOutput)

__all__ = ["GPT2Model", "GPT2ForTokenClassification", "GPT2ForQuestionAnswering", "GPT2DoubleHeadsModel"]


def _rows(x, name: str, shape: tuple, *, mask: bool = False) -> np.ndarray | None:
    """An input of the ids' shape (..., T) as (rows, T); ValueError for another shape."""
    if x is None:
        return None
    arr = mask_values(x, name) if mask else token_ids(x, name)
    if arr.shape != shape:
        raise ValueError(f"{name} has shape {arr.shape} but input_ids {shape}: expected the same shape")
    return arr.reshape(-1, shape[-1])


class GPT2Model(GPTModel, GPTPreTrained):
    """The decoder stack on its own: ids (..., T) -> last_hidden_state (..., T, C).

    Inputs with more than two axes, (B, num_choices, T), run as B · num_choices rows and come back in their shape
    (transformers' rule; the double-heads model relies on it)."""

    hf_architecture = "GPT2Model"

    def __init__(self, config: GPTConfig):
        super().__init__(config)
        _init_weights(self, config)

    def forward(self, input_ids=None, attention_mask=None, token_type_ids=None, position_ids=None,
                past_key_values: KVCache | None = None, use_cache: bool = False, output_attentions: bool = False,
                output_hidden_states: bool = False, inputs_embeds=None) -> BaseModelOutputWithPastAndCrossAttentions:
        """input_ids (..., T); attention_mask (..., T_past + T), 1 = real token; token_type_ids (..., T), ids
        of the token embedding added to every position; position_ids (..., T) or (T,); inputs_embeds (..., T, C)
        in place of input_ids' embeddings. With use_cache, `past_key_values` holds every layer's keys and values:
        pass it back with only the new tokens."""
        if (input_ids is None) == (inputs_embeds is None):
            raise ValueError("give input_ids or inputs_embeds, exactly one of them")
        if input_ids is not None:
            ids = token_ids(input_ids, "input_ids")
            if ids.ndim < 2:
                raise ValueError(f"input_ids must be (batch, time) or (batch, ..., time), got shape {ids.shape}")
            shape, embeds = ids.shape, None
            ids = ids.reshape(-1, shape[-1])                                       # (rows, T)
        else:
            embeds = inputs_embeds if isinstance(inputs_embeds, Tensor) else Tensor(backend.from_torch(inputs_embeds))
            if embeds.ndim < 3:
                raise ValueError(f"inputs_embeds must be (batch, time, hidden), got shape {tuple(embeds.shape)}")
            shape, ids = tuple(embeds.shape[:-1]), None
            embeds = embeds.reshape(-1, shape[-1], embeds.shape[-1])               # (rows, T, C)
        mask = attention_mask
        if mask is not None and len(shape) > 2:  # transformers: one row of the mask per row of the input
            am = mask_values(mask)
            mask = am.reshape(-1, am.shape[-1]) if am.shape[:-1] == shape[:-1] else am
        pos = position_ids
        if pos is not None and len(shape) > 2 and token_ids(pos, "position_ids").ndim == len(shape):
            pos = _rows(pos, "position_ids", shape)
        tt = _rows(token_type_ids, "token_type_ids", shape)
        if tt is not None:  # the segment ids index the token embedding (transformers' GPT-2)
            embeds = (self.wte(ids) if embeds is None else embeds) + self.wte(tt)  # (rows, T, C)
            ids = None
        check_cache(past_key_values, KVCache)
        use_cache = cache_or_checkpoints(self, use_cache)
        cache = past_key_values if past_key_values is not None else (KVCache() if use_cache else None)
        h, attn, hidden = GPTModel.forward(self, ids, mask, pos, cache, output_attentions, output_hidden_states,
                                           embeds)
        if len(shape) > 2:
            h = h.reshape(*shape, h.shape[-1])                                     # (..., T, C)
            hidden = hidden[:-1] + (h,) if hidden is not None else None            # the last one reshaped too
        return BaseModelOutputWithPastAndCrossAttentions(
            last_hidden_state=h, past_key_values=cache if use_cache or past_key_values is not None else None,
            hidden_states=hidden, attentions=attn, cross_attentions=() if output_attentions else None)


def _classifier_dropout(c: GPTConfig) -> float:
    """transformers' rule for GPT-2's token classifier: classifier_dropout, else config.json's hidden_dropout,
    else 0.1 (transformers' GPT2Config has neither field; it reads them when a file has them)."""
    if c.classifier_dropout is not None:
        return c.classifier_dropout
    hidden = c.extra.get("hidden_dropout")
    return hidden if hidden is not None else 0.1


class GPT2ForTokenClassification(nn.Module, GPTPreTrained):
    """Dropout -> Linear on every token: logits (B, T, num_labels); `labels` (B, T), -100 = not scored."""

    hf_architecture = "GPT2ForTokenClassification"
    head_prefixes = ("classifier.",)

    def __init__(self, config: GPTConfig):
        super().__init__()
        self.config = config
        self.num_labels = config.num_labels
        self.transformer = GPT2Model(config)
        self.dropout = nn.Dropout(_classifier_dropout(config))
        self.classifier = nn.Linear(config.n_embd, config.num_labels)
        init_normal_(self.classifier, config.initializer_range)

    def forward(self, input_ids=None, attention_mask=None, token_type_ids=None, position_ids=None, labels=None,
                output_attentions: bool = False, output_hidden_states: bool = False, inputs_embeds=None
                ) -> TokenClassifierOutput:
        out = self.transformer(input_ids, attention_mask, token_type_ids, position_ids,
                               output_attentions=output_attentions, output_hidden_states=output_hidden_states,
                               inputs_embeds=inputs_embeds)
        logits = self.classifier(self.dropout(out.last_hidden_state))             # (B, T, num_labels)
        loss = None
        if labels is not None:
            n = logits.shape[-1]
            lab = token_labels(labels, tuple(logits.shape[:-1]))
            loss = F.cross_entropy(logits.reshape(-1, n), lab.reshape(-1))
        return TokenClassifierOutput(loss=loss, logits=logits, hidden_states=out.hidden_states,
                                     attentions=out.attentions)


class GPT2ForQuestionAnswering(nn.Module, GPTPreTrained):
    """Extractive QA: start_logits and end_logits (B, T) from Linear(C, 2) on every token; the loss, given
    `start_positions` and `end_positions` (B,), as `seqlab.models._common.span_loss` (transformers' rule)."""

    hf_architecture = "GPT2ForQuestionAnswering"
    head_prefixes = ("qa_outputs.",)

    def __init__(self, config: GPTConfig):
        super().__init__()
        self.config = config
        self.num_labels = config.num_labels
        self.transformer = GPT2Model(config)
        self.qa_outputs = nn.Linear(config.n_embd, 2)  # always 2 outputs, whatever num_labels (as transformers)
        init_normal_(self.qa_outputs, config.initializer_range)

    def forward(self, input_ids=None, attention_mask=None, token_type_ids=None, position_ids=None,
                start_positions=None, end_positions=None, output_attentions: bool = False,
                output_hidden_states: bool = False, inputs_embeds=None) -> QuestionAnsweringModelOutput:
        out = self.transformer(input_ids, attention_mask, token_type_ids, position_ids,
                               output_attentions=output_attentions, output_hidden_states=output_hidden_states,
                               inputs_embeds=inputs_embeds)
        logits = self.qa_outputs(out.last_hidden_state)                           # (B, T, 2)
        start, end = logits[..., 0], logits[..., 1]                               # (B, T) each
        loss = None
        if start_positions is not None and end_positions is not None:
            loss = span_loss(start, end, start_positions, end_positions)
        return QuestionAnsweringModelOutput(loss=loss, start_logits=start, end_logits=end,
                                            hidden_states=out.hidden_states, attentions=out.attentions)


class GPT2SequenceSummary(nn.Module):
    """One vector per sequence from hidden states (..., T, C), as transformers' SequenceSummary:

    summary_type "cls_index": the token at `cls_index` (...,) (default: the last position); "last", "first":
    ``h[:, -1]``, ``h[:, 0]``; "mean": ``h.mean(1)``. (Those three index axis 1, as transformers does: on the
    double-heads model's (B, num_choices, T, C) that is the choice axis, not the tokens.) Then dropout, the
    projection `summary` (summary_use_proj; to num_labels outputs with summary_proj_to_labels, else C), the
    activation (summary_activation) and a last dropout (config.json's summary_last_dropout, if any)."""

    def __init__(self, c: GPTConfig):
        super().__init__()
        if c.summary_type == "attn":
            raise ConfigError("summary_type 'attn' is not implemented (nor in transformers); use 'cls_index', "
                              "'last', 'first' or 'mean'")
        self.summary_type = c.summary_type
        n_out = c.num_labels if c.summary_proj_to_labels and c.num_labels > 0 else c.n_embd
        self.summary = nn.Linear(c.n_embd, n_out) if c.summary_use_proj else nn.Identity()
        self.activation = activation(c.summary_activation) if c.summary_activation else None
        self.first_dropout = nn.Dropout(c.summary_first_dropout)
        self.last_dropout = nn.Dropout(c.extra.get("summary_last_dropout") or 0.0)

    def forward(self, h: Tensor, cls_index=None) -> Tensor:
        if self.summary_type == "last":
            out = h[:, -1]
        elif self.summary_type == "first":
            out = h[:, 0]
        elif self.summary_type == "mean":
            out = h.mean(dim=1)
        else:
            lead, T, C = tuple(h.shape[:-2]), h.shape[-2], h.shape[-1]
            if cls_index is None:
                idx = np.full(lead, T - 1, dtype=np.int64)
            else:
                idx = token_ids(cls_index, "mc_token_ids")
                if idx.shape != lead:
                    raise ValueError(f"mc_token_ids has shape {idx.shape} but the input {lead + (T,)}: expected "
                                     f"{lead}, one token index per sequence")
                if idx.size and (int(idx.min()) < 0 or int(idx.max()) >= T):
                    raise ValueError(f"mc_token_ids holds {int(idx.min()) if int(idx.min()) < 0 else int(idx.max())}"
                                     f", outside the {T} positions of each sequence")
            rows = h.reshape(-1, T, C)                                            # (N, T, C)
            out = rows[np.arange(rows.shape[0]), idx.reshape(-1)].reshape(*lead, C)  # (..., C)
        out = self.summary(self.first_dropout(out))
        if self.activation is not None:
            out = self.activation(out)
        return self.last_dropout(out)


class GPT2DoubleHeadsModel(nn.Module, GPTPreTrained):
    """The language model and a multiple-choice head: input_ids (B, num_choices, T), each choice a sequence
    ending in a classification token; logits (B, num_choices, T, V); mc_logits (B, num_choices), the summary of
    each choice at `mc_token_ids` (B, num_choices). As in transformers, the config's num_labels is set to 1
    (one score per choice)."""

    hf_architecture = "GPT2DoubleHeadsModel"
    head_prefixes = ("multiple_choice_head.",)

    def __init__(self, config: GPTConfig):
        super().__init__()
        config.num_labels = 1
        self.config = config
        self.transformer = GPT2Model(config)
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
        self.multiple_choice_head = GPT2SequenceSummary(config)
        init_normal_(self.multiple_choice_head, config.initializer_range)
        if config.tie_word_embeddings:
            self.lm_head.weight = self.transformer.wte.weight
        else:
            init_normal_(self.lm_head, config.initializer_range)

    _untie = GPT._untie  # the same tied lm_head under the same names

    def forward(self, input_ids=None, attention_mask=None, token_type_ids=None, position_ids=None,
                mc_token_ids=None, labels=None, mc_labels=None, past_key_values: KVCache | None = None,
                use_cache: bool = False, output_attentions: bool = False, output_hidden_states: bool = False,
                inputs_embeds=None) -> GPT2DoubleHeadsModelOutput:
        """labels (B, num_choices, T): the inputs themselves (shifted inside), -100 = ignore; mc_labels (B,): the
        right choice. hidden_states and attentions come back over the B · num_choices rows, as in transformers."""
        out = self.transformer(input_ids, attention_mask, token_type_ids, position_ids, past_key_values,
                               use_cache, output_attentions, output_hidden_states, inputs_embeds)
        h = out.last_hidden_state                                                 # (B, nc, T, C)
        logits = self.lm_head(h)                                                  # (B, nc, T, V)
        mc_logits = self.multiple_choice_head(h, mc_token_ids).squeeze(-1)       # (B, nc)
        mc_loss = lm_loss = None
        if mc_labels is not None:
            rows = mc_logits.reshape(-1, mc_logits.shape[-1])                     # (B, nc)
            lab = token_ids(mc_labels, "mc_labels")
            if lab.size != rows.shape[0]:
                raise ValueError(f"mc_labels has shape {lab.shape} but the batch has {rows.shape[0]} rows: "
                                 f"expected ({rows.shape[0]},), the right choice of each")
            mc_loss = F.cross_entropy(rows, lab.reshape(-1))
        if labels is not None:  # token t predicts token t + 1
            lab = token_labels(labels, tuple(logits.shape[:-1]))
            V = logits.shape[-1]
            lm_loss = F.cross_entropy(logits[..., :-1, :].reshape(-1, V), lab[..., 1:].reshape(-1))
        return GPT2DoubleHeadsModelOutput(loss=lm_loss, mc_loss=mc_loss, logits=logits, mc_logits=mc_logits,
                                          past_key_values=out.past_key_values, hidden_states=out.hidden_states,
                                          attentions=out.attentions)
