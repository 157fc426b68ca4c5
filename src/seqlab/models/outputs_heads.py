"""What the task heads return (`seqlab.models.bert_heads`, `gpt_heads`, `t5_heads`): transformers' output
classes, field for field.

Read them as the classes of `seqlab.models.outputs` are read: by attribute (``out.start_logits``), by key
(``out["start_logits"]``) or by position (``out[0]``, ``out.to_tuple()``: the fields that are set, in
transformers' order). Fields a call does not compute are None. transformers 5 calls a model's key/value cache
`cache` (reading `past_key_values` as its older name); seqlab's field keeps the name `past_key_values`, as its GPT
and T5 outputs do, in the same position.
"""
from __future__ import annotations

from dataclasses import dataclass

from seqlab.autograd.tensor import Tensor
from seqlab.models.outputs import EncoderDecoderCache, KVCache, ModelOutput  # noqa: F401  (annotations)


@dataclass
class BertForPreTrainingOutput(ModelOutput):
    """prediction_logits (B, T, V), the MLM head's; seq_relationship_logits (B, 2), the NSP head's (0 = sentence
    B follows A, 1 = B is a random sentence); loss = MLM loss + NSP loss, when both kinds of labels are given."""

    loss: Tensor | None = None
    prediction_logits: Tensor = None
    seq_relationship_logits: Tensor = None
    hidden_states: tuple | None = None
    attentions: tuple | None = None


@dataclass
class NextSentencePredictorOutput(ModelOutput):
    """logits (B, 2): 0 = sentence B follows sentence A, 1 = B is a random sentence."""

    loss: Tensor | None = None
    logits: Tensor = None
    hidden_states: tuple | None = None
    attentions: tuple | None = None


@dataclass
class TokenClassifierOutput(ModelOutput):
    """logits (B, T, num_labels); loss over the tokens whose label is not -100."""

    loss: Tensor | None = None
    logits: Tensor = None
    hidden_states: tuple | None = None
    attentions: tuple | None = None


@dataclass
class QuestionAnsweringModelOutput(ModelOutput):
    """start_logits and end_logits (B, T): the scores of each token as the answer span's first and last."""

    loss: Tensor | None = None
    start_logits: Tensor = None
    end_logits: Tensor = None
    hidden_states: tuple | None = None
    attentions: tuple | None = None


@dataclass
class MultipleChoiceModelOutput(ModelOutput):
    """logits (B, num_choices); hidden_states and attentions are the encoder's over B · num_choices rows."""

    loss: Tensor | None = None
    logits: Tensor = None
    hidden_states: tuple | None = None
    attentions: tuple | None = None


@dataclass
class BaseModelOutputWithPastAndCrossAttentions(ModelOutput):
    """GPT2Model's and T5EncoderModel's (whose past_key_values is always None): last_hidden_state (..., T, C) in
    the input's shape; past_key_values, a `KVCache`, with
    use_cache; hidden_states: the embeddings and each block's output over the (rows, T, C) the blocks ran on, the
    last one (after ln_f) in the input's shape, as transformers; attentions per layer (rows, H, T, T_past + T).
    cross_attentions: with output_attentions an empty tuple, as transformers gives a GPT-2 without cross-attention
    (seqlab's has none)."""

    last_hidden_state: Tensor = None
    past_key_values: "KVCache | None" = None
    hidden_states: tuple | None = None
    attentions: tuple | None = None
    cross_attentions: tuple | None = None


@dataclass
class GPT2DoubleHeadsModelOutput(ModelOutput):
    """loss: the language-model loss (labels); mc_loss: the multiple-choice loss (mc_labels); logits
    (B, num_choices, T, V); mc_logits (B, num_choices)."""

    loss: Tensor | None = None
    mc_loss: Tensor | None = None
    logits: Tensor = None
    mc_logits: Tensor = None
    past_key_values: "KVCache | None" = None
    hidden_states: tuple | None = None
    attentions: tuple | None = None


@dataclass
class Seq2SeqModelOutput(ModelOutput):
    """T5Model's: last_hidden_state (B, T_dec, C), the decoder's; the encoder's as encoder_last_hidden_state
    (B, S, C); attentions per layer: decoder (B, H, T_dec, T_dec), cross (B, H, T_dec, S), encoder (B, H, S, S)."""

    last_hidden_state: Tensor = None
    past_key_values: "EncoderDecoderCache | None" = None
    decoder_hidden_states: tuple | None = None
    decoder_attentions: tuple | None = None
    cross_attentions: tuple | None = None
    encoder_last_hidden_state: Tensor | None = None
    encoder_hidden_states: tuple | None = None
    encoder_attentions: tuple | None = None


@dataclass
class Seq2SeqSequenceClassifierOutput(ModelOutput):
    """logits (B, num_labels), from the decoder's vector at each row's last end-of-sequence token; the other fields
    as `Seq2SeqModelOutput`'s."""

    loss: Tensor | None = None
    logits: Tensor = None
    past_key_values: "EncoderDecoderCache | None" = None
    decoder_hidden_states: tuple | None = None
    decoder_attentions: tuple | None = None
    cross_attentions: tuple | None = None
    encoder_last_hidden_state: Tensor | None = None
    encoder_hidden_states: tuple | None = None
    encoder_attentions: tuple | None = None


@dataclass
class Seq2SeqQuestionAnsweringModelOutput(ModelOutput):
    """start_logits and end_logits (B, T_dec): each decoder position's scores as the answer's first and last token;
    the other fields as `Seq2SeqModelOutput`'s."""

    loss: Tensor | None = None
    start_logits: Tensor = None
    end_logits: Tensor = None
    past_key_values: "EncoderDecoderCache | None" = None
    decoder_hidden_states: tuple | None = None
    decoder_attentions: tuple | None = None
    cross_attentions: tuple | None = None
    encoder_last_hidden_state: Tensor | None = None
    encoder_hidden_states: tuple | None = None
    encoder_attentions: tuple | None = None
