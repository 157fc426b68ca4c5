"""What BERT's other heads return (`seqlab.models.bert_heads`): transformers' output classes, field for field.

Read them as the classes of `seqlab.models.outputs` are read: by attribute (``out.start_logits``), by key
(``out["start_logits"]``) or by position (``out[0]``, ``out.to_tuple()``: the fields that are set, in
transformers' order). Fields a call does not compute are None.
"""
from __future__ import annotations

from dataclasses import dataclass

from seqlab.autograd.tensor import Tensor
from seqlab.models.outputs import ModelOutput


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
