"""transformers' other T5 classes, with its attribute, checkpoint and output field names.

- `T5Model`: encoder and decoder without the language-model head; last_hidden_state is the decoder's.
- `T5EncoderModel`: the encoder alone (``shared``, ``encoder...``), for sentence embeddings (Sentence-T5 pools
  its last_hidden_state) and for T5ForTokenClassification.
- `T5ForSequenceClassification`: the whole encoder-decoder under ``transformer.``, fed the input shifted right
  as the decoder input; the decoder's vector at each row's last end-of-sequence token goes through a
  dense-tanh-dense ``classification_head``.
- `T5ForTokenClassification`: `T5EncoderModel` under ``transformer.``, dropout -> Linear on every token.
- `T5ForQuestionAnswering`: encoder-decoder, a start and an end score per decoder position.

None of them rescales the decoder output by d_model^-0.5: that belongs to the tied language-model head.
A T5ForConditionalGeneration folder loads into each (missing heads start fresh, as in transformers), and the
``transformer.`` prefix is added or stripped as needed (seqlab.hub.keymap.T5).
"""
from __future__ import annotations

import numpy as np

from seqlab import backend
from seqlab import functional as F
from seqlab import nn
from seqlab.autograd.tensor import Tensor
from seqlab.errors import ConfigError
from seqlab.hub import keymap
from seqlab.hub.pretrained import PreTrainedModel
from seqlab.models._common import batch_ids, cache_or_checkpoints, span_loss, token_labels
from seqlab.models.outputs import BaseModelOutput, EncoderDecoderCache, check_cache, classification_loss
from seqlab.models.outputs_heads import (BaseModelOutputWithPastAndCrossAttentions, Seq2SeqModelOutput,
                                         Seq2SeqQuestionAnsweringModelOutput, Seq2SeqSequenceClassifierOutput,
                                         TokenClassifierOutput)
from seqlab.models.t5 import T5Config, T5Stack, _init_weights, shift_right

__all__ = ["T5Model", "T5EncoderModel", "T5ForSequenceClassification", "T5ForTokenClassification",
           "T5ForQuestionAnswering"]


class T5PreTrained(PreTrainedModel):
    config_class = T5Config
    keymap = keymap.T5


def _encoder_outputs(encoder_outputs) -> BaseModelOutput:
    """transformers' forms of a reused encoder pass as a BaseModelOutput whose attentions are per layer: a seqlab
    output (a T5Stack's keeps (self, cross) pairs), or a tuple (last_hidden_state, hidden_states, attentions)."""
    if isinstance(encoder_outputs, (tuple, list)):
        h = encoder_outputs[0]
        encoder_outputs = BaseModelOutput(
            last_hidden_state=h if isinstance(h, Tensor) else Tensor(backend.from_torch(h)),
            hidden_states=encoder_outputs[1] if len(encoder_outputs) > 1 else None,
            attentions=encoder_outputs[2] if len(encoder_outputs) > 2 else None)
    attn = encoder_outputs.attentions
    if attn and isinstance(attn[0], tuple):  # T5Stack's (self-attention per layer, cross-attention or None)
        attn = attn[0]
    return BaseModelOutput(last_hidden_state=encoder_outputs.last_hidden_state,
                           hidden_states=encoder_outputs.hidden_states, attentions=attn)


def _encode(encoder: T5Stack, input_ids, attention_mask, output_attentions: bool, output_hidden_states: bool
            ) -> BaseModelOutput:
    out = encoder(input_ids, attention_mask, output_attentions=output_attentions,
                  output_hidden_states=output_hidden_states)
    return BaseModelOutput(last_hidden_state=out.last_hidden_state, hidden_states=out.hidden_states,
                           attentions=out.attentions[0] if output_attentions else None)


def _encoder_decoder(model, input_ids, attention_mask, decoder_input_ids, decoder_attention_mask, encoder_outputs,
                     cache: EncoderDecoderCache | None, output_attentions: bool, output_hidden_states: bool
                     ) -> Seq2SeqModelOutput:
    """`model`'s encoder (unless `encoder_outputs` are given) and decoder: transformers' Seq2SeqModelOutput."""
    if encoder_outputs is None:
        if input_ids is None:
            raise ValueError("pass input_ids or encoder_outputs")
        enc = _encode(model.encoder, input_ids, attention_mask, output_attentions, output_hidden_states)
    else:
        enc = _encoder_outputs(encoder_outputs)
    if decoder_input_ids is None:
        raise ValueError(f"{type(model).__name__} needs decoder_input_ids (it has no labels to make them from)")
    dec = model.decoder(decoder_input_ids, decoder_attention_mask, enc.last_hidden_state, attention_mask, cache,
                        output_attentions=output_attentions, output_hidden_states=output_hidden_states)
    return Seq2SeqModelOutput(
        last_hidden_state=dec.last_hidden_state, past_key_values=cache, decoder_hidden_states=dec.hidden_states,
        decoder_attentions=dec.attentions[0] if output_attentions else None,
        cross_attentions=dec.attentions[1] if output_attentions else None,
        encoder_last_hidden_state=enc.last_hidden_state, encoder_hidden_states=enc.hidden_states,
        encoder_attentions=enc.attentions if output_attentions else None)


class T5Model(nn.Module, T5PreTrained):
    """Encoder over input_ids, decoder over decoder_input_ids (no head): last_hidden_state (B, T_dec, C)."""

    hf_architecture = "T5Model"

    def __init__(self, config: T5Config):
        super().__init__()
        self.config = config
        self.shared = nn.Embedding(config.vocab_size, config.d_model)
        self.encoder = T5Stack(config, self.shared, is_decoder=False)
        self.decoder = T5Stack(config, self.shared, is_decoder=True)
        _init_weights(self, config)

    def get_encoder(self) -> T5Stack:
        return self.encoder

    def forward(self, input_ids=None, attention_mask=None, decoder_input_ids=None, decoder_attention_mask=None,
                encoder_outputs=None, past_key_values: EncoderDecoderCache | None = None, use_cache: bool = False,
                output_attentions: bool = False, output_hidden_states: bool = False) -> Seq2SeqModelOutput:
        """input_ids (B, S) with attention_mask (B, S), 1 = real; decoder_input_ids (B, T), which T5Model does not
        make for you (start them with the decoder start token, e.g. `seqlab.models.t5.shift_right`);
        encoder_outputs: a reused encoder pass. With use_cache, `past_key_values` (an EncoderDecoderCache) holds
        the decoder's keys and values: pass it back with only the new decoder tokens."""
        check_cache(past_key_values, EncoderDecoderCache)
        use_cache = cache_or_checkpoints(self.decoder, use_cache)
        cache = past_key_values if past_key_values is not None else (EncoderDecoderCache() if use_cache else None)
        return _encoder_decoder(self, input_ids, attention_mask, decoder_input_ids, decoder_attention_mask,
                                encoder_outputs, cache, output_attentions, output_hidden_states)


class T5EncoderModel(nn.Module, T5PreTrained):
    """The encoder alone: ids (B, S) -> last_hidden_state (B, S, C). A whole T5 folder loads into it (the
    decoder's and the head's weights are listed as unexpected in `loading_info`)."""

    hf_architecture = "T5EncoderModel"

    def __init__(self, config: T5Config):
        super().__init__()
        self.config = config
        self.shared = nn.Embedding(config.vocab_size, config.d_model)
        self.encoder = T5Stack(config, self.shared, is_decoder=False)
        _init_weights(self, config)

    def get_encoder(self) -> T5Stack:
        return self.encoder

    def forward(self, input_ids=None, attention_mask=None, output_attentions: bool = False,
                output_hidden_states: bool = False) -> BaseModelOutputWithPastAndCrossAttentions:
        """input_ids (B, S), attention_mask (B, S), 1 = real token. Returns last_hidden_state (B, S, C),
        hidden_states (the embeddings, each block's output, the last normed) and attentions per layer (with
        an empty cross_attentions, as transformers' encoder stack returns)."""
        if input_ids is None:
            raise ValueError("pass input_ids")
        out = _encode(self.encoder, input_ids, attention_mask, output_attentions, output_hidden_states)
        return BaseModelOutputWithPastAndCrossAttentions(
            last_hidden_state=out.last_hidden_state, hidden_states=out.hidden_states, attentions=out.attentions,
            cross_attentions=() if output_attentions else None)


class T5ClassificationHead(nn.Module):
    """Dropout -> dense -> tanh -> dropout -> out_proj: (B, C) -> (B, num_labels)."""

    def __init__(self, c: T5Config):
        super().__init__()
        self.dense = nn.Linear(c.d_model, c.d_model)
        self.dropout = nn.Dropout(c.classifier_dropout)
        self.out_proj = nn.Linear(c.d_model, c.num_labels)

    def forward(self, h: Tensor) -> Tensor:
        return self.out_proj(self.dropout(F.tanh(self.dense(self.dropout(h)))))


def _normal_head(linear: nn.Linear, std: float) -> None:
    """transformers' T5 init of a head's Linear: N(0, std) weight, zero bias."""
    nn.init.normal_(linear.weight, 0.0, std)
    nn.init.zeros_(linear.bias)


def _last_eos(ids: np.ndarray, eos) -> np.ndarray:
    """Per row, the position of its last end-of-sequence token; as transformers, every row must hold the same
    number of them, at least one (ValueError otherwise)."""
    if isinstance(eos, bool) or not isinstance(eos, (int, np.integer)):
        raise ValueError(f"T5ForSequenceClassification pools at eos_token_id, which must be one token id, "
                         f"got {eos!r}")
    is_eos = backend.to_numpy(ids) == eos                                           # (B, S)
    counts = is_eos.sum(1)
    if (counts != counts[0]).any():
        raise ValueError(f"All examples must have the same number of <eos> tokens (id {eos}); the rows hold "
                         f"{counts.tolist()}")
    if counts[0] == 0:
        raise ValueError(f"Each example must contain at least one <eos> token (id {eos})")
    S = is_eos.shape[1]
    return S - 1 - is_eos[:, ::-1].argmax(1)                                        # (B,)


class T5ForSequenceClassification(nn.Module, T5PreTrained):
    """Sequence classification (as T5's GLUE fine-tuning, with a head in place of generated label words):
    logits (B, num_labels) from the decoder's output at each row's last eos token (input_ids must hold the same
    number of eos tokens in every row, as transformers requires). decoder_input_ids default to input_ids shifted
    right; `labels` as transformers' rule (num_labels 1: regression, ints: cross-entropy, floats: multi-label)."""

    hf_architecture = "T5ForSequenceClassification"
    head_prefixes = ("classification_head.",)

    def __init__(self, config: T5Config):
        super().__init__()
        self.config = config
        self.transformer = T5Model(config)
        self.classification_head = T5ClassificationHead(config)
        std = config.initializer_factor * config.d_model ** -0.5
        _normal_head(self.classification_head.dense, std)
        _normal_head(self.classification_head.out_proj, std)

    def forward(self, input_ids=None, attention_mask=None, decoder_input_ids=None, decoder_attention_mask=None,
                encoder_outputs=None, labels=None, use_cache: bool = False, output_attentions: bool = False,
                output_hidden_states: bool = False) -> Seq2SeqSequenceClassifierOutput:
        if input_ids is None:
            raise ValueError("T5ForSequenceClassification needs input_ids: it pools at their eos tokens")
        ids = batch_ids(input_ids)
        if labels is not None:
            use_cache = False
        if decoder_input_ids is None:
            decoder_input_ids = shift_right(ids, self.config)
        out = self.transformer(ids, attention_mask, decoder_input_ids, decoder_attention_mask, encoder_outputs,
                               use_cache=use_cache, output_attentions=output_attentions,
                               output_hidden_states=output_hidden_states)
        h = out.last_hidden_state                                                   # (B, T_dec, C)
        if tuple(h.shape[:2]) != ids.shape:
            raise ValueError(f"decoder_input_ids have shape {tuple(h.shape[:2])} but input_ids {ids.shape}: the "
                             f"classifier reads the decoder at the input's eos positions, so they must match")
        last = _last_eos(ids, self.config.eos_token_id)
        sentence = h[np.arange(ids.shape[0]), last]                                 # (B, C)
        logits = self.classification_head(sentence)                                # (B, num_labels)
        loss = None if labels is None else classification_loss(logits, labels, self.config.problem_type)
        return Seq2SeqSequenceClassifierOutput(
            loss=loss, logits=logits, past_key_values=out.past_key_values,
            decoder_hidden_states=out.decoder_hidden_states, decoder_attentions=out.decoder_attentions,
            cross_attentions=out.cross_attentions, encoder_last_hidden_state=out.encoder_last_hidden_state,
            encoder_hidden_states=out.encoder_hidden_states, encoder_attentions=out.encoder_attentions)


class T5ForTokenClassification(nn.Module, T5PreTrained):
    """The encoder, then dropout -> Linear on every token: logits (B, S, num_labels); `labels` (B, S),
    -100 = not scored."""

    hf_architecture = "T5ForTokenClassification"
    head_prefixes = ("classifier.",)

    def __init__(self, config: T5Config):
        super().__init__()
        self.config = config
        self.num_labels = config.num_labels
        self.transformer = T5EncoderModel(config)
        self.dropout = nn.Dropout(config.classifier_dropout)
        self.classifier = nn.Linear(config.d_model, config.num_labels)
        _normal_head(self.classifier, config.initializer_factor * 1.0)  # transformers' std for this head

    def forward(self, input_ids=None, attention_mask=None, labels=None, output_attentions: bool = False,
                output_hidden_states: bool = False) -> TokenClassifierOutput:
        out = self.transformer(input_ids, attention_mask, output_attentions=output_attentions,
                               output_hidden_states=output_hidden_states)
        logits = self.classifier(self.dropout(out.last_hidden_state))              # (B, S, num_labels)
        loss = None
        if labels is not None:
            B, S, n = logits.shape
            loss = F.cross_entropy(logits.reshape(B * S, n), token_labels(labels, (B, S)).reshape(-1))
        return TokenClassifierOutput(loss=loss, logits=logits, hidden_states=out.hidden_states,
                                     attentions=out.attentions)


class T5ForQuestionAnswering(nn.Module, T5PreTrained):
    """Extractive QA on the encoder-decoder: start_logits and end_logits (B, T_dec) from Linear(C, 2) on the
    decoder's output; decoder_input_ids default to input_ids shifted right, so position t scores input token
    t - 1 (transformers' computation). The loss, given start_positions and end_positions (B,), as
    `seqlab.models._common.span_loss`."""

    hf_architecture = "T5ForQuestionAnswering"
    head_prefixes = ("qa_outputs.",)

    def __init__(self, config: T5Config):
        super().__init__()
        if config.num_labels != 2:
            raise ConfigError(f"T5ForQuestionAnswering scores a start and an end per token: num_labels must be 2, "
                              f"got {config.num_labels}")
        self.config = config
        self.num_labels = config.num_labels
        self.shared = nn.Embedding(config.vocab_size, config.d_model)
        self.encoder = T5Stack(config, self.shared, is_decoder=False)
        self.decoder = T5Stack(config, self.shared, is_decoder=True)
        self.qa_outputs = nn.Linear(config.d_model, config.num_labels)
        _init_weights(self, config)
        _normal_head(self.qa_outputs, config.initializer_factor * config.d_model ** -0.5)

    def get_encoder(self) -> T5Stack:
        return self.encoder

    def forward(self, input_ids=None, attention_mask=None, decoder_input_ids=None, decoder_attention_mask=None,
                encoder_outputs=None, start_positions=None, end_positions=None, use_cache: bool = False,
                output_attentions: bool = False, output_hidden_states: bool = False
                ) -> Seq2SeqQuestionAnsweringModelOutput:
        if start_positions is not None and end_positions is not None:
            use_cache = False
        if decoder_input_ids is None:
            if input_ids is None:
                raise ValueError("pass input_ids, or decoder_input_ids with encoder_outputs")
            decoder_input_ids = shift_right(batch_ids(input_ids), self.config)
        use_cache = cache_or_checkpoints(self.decoder, use_cache)
        out = _encoder_decoder(self, input_ids, attention_mask, decoder_input_ids, decoder_attention_mask,
                               encoder_outputs, EncoderDecoderCache() if use_cache else None, output_attentions,
                               output_hidden_states)
        logits = self.qa_outputs(out.last_hidden_state)                             # (B, T_dec, 2)
        start, end = logits[..., 0], logits[..., 1]                                 # (B, T_dec) each
        loss = None
        if start_positions is not None and end_positions is not None:
            loss = span_loss(start, end, start_positions, end_positions)
        return Seq2SeqQuestionAnsweringModelOutput(
            loss=loss, start_logits=start, end_logits=end, past_key_values=out.past_key_values,
            decoder_hidden_states=out.decoder_hidden_states, decoder_attentions=out.decoder_attentions,
            cross_attentions=out.cross_attentions, encoder_last_hidden_state=out.encoder_last_hidden_state,
            encoder_hidden_states=out.encoder_hidden_states, encoder_attentions=out.encoder_attentions)
