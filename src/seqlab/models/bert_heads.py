"""BERT's other heads: the paper's two pretraining objectives and its fine-tuning setups (Devlin et al., 2019,
§3.1 and fig. 4; the chapter's 7.5.1).

    pretraining:      BertForPreTraining             masked LM + next sentence (NSP), the two losses summed
                      BertForNextSentencePrediction  NSP alone: is sentence B the one that followed A?
    fine-tuning:      BertForTokenClassification     a label per token (NER, POS)
                      BertForQuestionAnswering       answer span: a start and an end score per token (SQuAD)
                      BertForMultipleChoice          one score per (context, choice) pair (SWAG)

(Sentence classification and the MLM alone are `BertForSequenceClassification` and `BertForMaskedLM`, in
bert.py, which re-exports these.) Attribute names are transformers' (``cls.predictions``,
``cls.seq_relationship``, ``classifier``, ``qa_outputs``), so its folders load as they are and ours load
into its classes; a head missing from the file (a base-model or other-head checkpoint) keeps its fresh
N(0, initializer_range) init, as in transformers.
"""
from __future__ import annotations

import numpy as np

from seqlab import backend, batch_threads, nn
from seqlab import functional as F
from seqlab.autograd.tensor import Tensor
from seqlab.errors import ConfigError
from seqlab.models._common import init_normal_, mask_values, row_labels, span_loss, token_ids, token_labels
from seqlab.models.bert import BertConfig, BertForMaskedLM, BertLMPredictionHead, BertModel, BertPreTrained
from seqlab.models.outputs_heads import (BertForPreTrainingOutput, MultipleChoiceModelOutput,
                                         NextSentencePredictorOutput, QuestionAnsweringModelOutput,
                                         TokenClassifierOutput)

__all__ = ["BertForPreTraining", "BertForNextSentencePrediction", "BertForTokenClassification",
           "BertForQuestionAnswering", "BertForMultipleChoice"]


def _classifier_dropout(c: BertConfig) -> nn.Dropout:
    return nn.Dropout(c.classifier_dropout if c.classifier_dropout is not None else c.hidden_dropout_prob)


_token_labels, _row_labels = token_labels, row_labels  # shared with GPT-2's and T5's heads (_common)


class BertOnlyNSPHead(nn.Module):
    """The NSP classifier on the pooled [CLS] vector: (B, C) -> (B, 2)."""

    def __init__(self, c: BertConfig):
        super().__init__()
        self.seq_relationship = nn.Linear(c.hidden_size, 2)


class BertPreTrainingHeads(nn.Module):
    """Both pretraining heads under one `cls.` (the checkpoint's names): MLM on every token, NSP on [CLS]."""

    def __init__(self, c: BertConfig):
        super().__init__()
        self.predictions = BertLMPredictionHead(c)
        self.seq_relationship = nn.Linear(c.hidden_size, 2)


class BertForPreTraining(nn.Module, BertPreTrained):
    """BERT's pretraining (§3.1): masked-LM logits (B, T, V) and next-sentence logits (B, 2); with both
    `labels` (B, T), -100 where no token was masked, and `next_sentence_label` (B,), the loss is the sum of
    the two mean cross-entropies. With only one of them the loss is None, as in transformers."""

    hf_architecture = "BertForPreTraining"
    head_prefixes = ("cls.", "bert.pooler.")  # a BertForMaskedLM file has no pooler and no NSP head

    def __init__(self, config: BertConfig):
        super().__init__()
        self.config = config
        self.bert = BertModel(config)
        self.cls = BertPreTrainingHeads(config)
        init_normal_(self.cls, config.initializer_range)
        if config.tie_word_embeddings:
            self.cls.predictions.decoder.weight = self.bert.embeddings.word_embeddings.weight

    _untie = BertForMaskedLM._untie  # the same tied decoder under the same names

    def forward(self, input_ids=None, attention_mask=None, token_type_ids=None, output_attentions: bool = False,
                labels=None, output_hidden_states: bool = False, position_ids=None, inputs_embeds=None,
                next_sentence_label=None) -> BertForPreTrainingOutput:
        with batch_threads.unsplit():  # a vocabulary-wide product follows: see BertForMaskedLM.forward
            out = self.bert(input_ids, attention_mask, token_type_ids, output_attentions, output_hidden_states,
                            position_ids, inputs_embeds)
        logits = self.cls.predictions(out.last_hidden_state)            # (B, T, V)
        nsp = self.cls.seq_relationship(out.pooler_output)              # (B, 2)
        loss = None
        if labels is not None and next_sentence_label is not None:
            B, T, V = logits.shape
            lab = _token_labels(labels, (B, T))
            nsl = _row_labels(next_sentence_label, B, "next_sentence_label")
            loss = F.cross_entropy(logits.reshape(B * T, V), lab.reshape(-1)) + F.cross_entropy(nsp, nsl)
        return BertForPreTrainingOutput(loss=loss, prediction_logits=logits, seq_relationship_logits=nsp,
                                        hidden_states=out.hidden_states, attentions=out.attentions)


class BertForNextSentencePrediction(nn.Module, BertPreTrained):
    """NSP alone: logits (B, 2) from the pooled [CLS]; `labels` (B,): 0 = B follows A, 1 = B is random."""

    hf_architecture = "BertForNextSentencePrediction"
    head_prefixes = ("cls.", "bert.pooler.")

    def __init__(self, config: BertConfig):
        super().__init__()
        self.config = config
        self.bert = BertModel(config)
        self.cls = BertOnlyNSPHead(config)
        init_normal_(self.cls, config.initializer_range)

    def forward(self, input_ids=None, attention_mask=None, token_type_ids=None, output_attentions: bool = False,
                labels=None, output_hidden_states: bool = False, position_ids=None, inputs_embeds=None
                ) -> NextSentencePredictorOutput:
        out = self.bert(input_ids, attention_mask, token_type_ids, output_attentions, output_hidden_states,
                        position_ids, inputs_embeds)
        logits = self.cls.seq_relationship(out.pooler_output)  # (B, 2)
        loss = None
        if labels is not None:
            loss = F.cross_entropy(logits, _row_labels(labels, logits.shape[0]))
        return NextSentencePredictorOutput(loss=loss, logits=logits, hidden_states=out.hidden_states,
                                           attentions=out.attentions)


class BertForTokenClassification(nn.Module, BertPreTrained):
    """Dropout -> Linear on every token: logits (B, T, num_labels); `labels` (B, T), -100 = not scored (padding,
    a word's later sub-tokens)."""

    hf_architecture = "BertForTokenClassification"
    head_prefixes = ("classifier.",)

    def __init__(self, config: BertConfig):
        super().__init__()
        self.config = config
        self.num_labels = config.num_labels
        self.bert = BertModel(config, add_pooling_layer=False)
        self.dropout = _classifier_dropout(config)
        self.classifier = nn.Linear(config.hidden_size, config.num_labels)
        init_normal_(self.classifier, config.initializer_range)

    def forward(self, input_ids=None, attention_mask=None, token_type_ids=None, output_attentions: bool = False,
                labels=None, output_hidden_states: bool = False, position_ids=None, inputs_embeds=None
                ) -> TokenClassifierOutput:
        out = self.bert(input_ids, attention_mask, token_type_ids, output_attentions, output_hidden_states,
                        position_ids, inputs_embeds)
        logits = self.classifier(self.dropout(out.last_hidden_state))  # (B, T, num_labels)
        loss = None
        if labels is not None:
            B, T, n = logits.shape
            loss = F.cross_entropy(logits.reshape(B * T, n), _token_labels(labels, (B, T)).reshape(-1))
        return TokenClassifierOutput(loss=loss, logits=logits, hidden_states=out.hidden_states,
                                     attentions=out.attentions)


class BertForQuestionAnswering(nn.Module, BertPreTrained):
    """Extractive QA (§4.2, SQuAD): a start and an end score per token, start_logits and end_logits (B, T).

    The loss, given `start_positions` and `end_positions` (B,), is the mean of the two cross-entropies over
    the tokens. As in transformers, positions are clipped to [0, T]: one past the input (an answer truncated
    away) is T, which is ignored; a negative one counts as position 0 ([CLS], "no answer")."""

    hf_architecture = "BertForQuestionAnswering"
    head_prefixes = ("qa_outputs.",)

    def __init__(self, config: BertConfig):
        super().__init__()
        if config.num_labels != 2:
            raise ConfigError(f"BertForQuestionAnswering scores a start and an end per token: num_labels must be "
                              f"2, got {config.num_labels}")
        self.config = config
        self.num_labels = config.num_labels
        self.bert = BertModel(config, add_pooling_layer=False)
        self.qa_outputs = nn.Linear(config.hidden_size, config.num_labels)
        init_normal_(self.qa_outputs, config.initializer_range)

    def forward(self, input_ids=None, attention_mask=None, token_type_ids=None, output_attentions: bool = False,
                output_hidden_states: bool = False, position_ids=None, inputs_embeds=None, start_positions=None,
                end_positions=None) -> QuestionAnsweringModelOutput:
        out = self.bert(input_ids, attention_mask, token_type_ids, output_attentions, output_hidden_states,
                        position_ids, inputs_embeds)
        logits = self.qa_outputs(out.last_hidden_state)      # (B, T, 2)
        start, end = logits[:, :, 0], logits[:, :, 1]        # (B, T) each
        loss = None
        if start_positions is not None and end_positions is not None:
            loss = span_loss(start, end, start_positions, end_positions)
        return QuestionAnsweringModelOutput(loss=loss, start_logits=start, end_logits=end,
                                            hidden_states=out.hidden_states, attentions=out.attentions)


def _choices_flat(x, name: str, shape: tuple, *, mask: bool = False) -> np.ndarray | None:
    """A (B, num_choices, T) input as (B · num_choices, T) rows; ValueError for another shape."""
    if x is None:
        return None
    arr = mask_values(x, name) if mask else token_ids(x, name)
    if arr.shape != shape:
        raise ValueError(f"{name} has shape {arr.shape} but the input {shape}: expected (batch, num_choices, seq)")
    return arr.reshape(-1, shape[-1])


class BertForMultipleChoice(nn.Module, BertPreTrained):
    """SWAG-style choice (§4.4): each of the (B, num_choices, T) sequences — context + one candidate — is
    encoded as a row of its own, its pooled [CLS] scored by Linear(C, 1); logits (B, num_choices), a softmax
    over the choices; `labels` (B,): the right choice."""

    hf_architecture = "BertForMultipleChoice"
    head_prefixes = ("classifier.", "bert.pooler.")

    def __init__(self, config: BertConfig):
        super().__init__()
        self.config = config
        self.bert = BertModel(config)
        self.dropout = _classifier_dropout(config)
        self.classifier = nn.Linear(config.hidden_size, 1)
        init_normal_(self.classifier, config.initializer_range)

    def forward(self, input_ids=None, attention_mask=None, token_type_ids=None, output_attentions: bool = False,
                labels=None, output_hidden_states: bool = False, position_ids=None, inputs_embeds=None
                ) -> MultipleChoiceModelOutput:
        """input_ids, attention_mask, token_type_ids (B, num_choices, T); inputs_embeds (B, num_choices, T, C);
        position_ids (B, num_choices, T) or, the same for every row, (T,). hidden_states and attentions come
        back over the B · num_choices rows, as in transformers."""
        if (input_ids is None) == (inputs_embeds is None):
            raise ValueError("give input_ids or inputs_embeds, exactly one of them")
        if input_ids is not None:
            ids = token_ids(input_ids, "input_ids")
            if ids.ndim != 3:
                raise ValueError(f"input_ids must be (batch, num_choices, seq), got shape {ids.shape}")
            shape, embeds = ids.shape, None
            ids = ids.reshape(-1, shape[-1])                       # (B · nc, T)
        else:
            embeds = inputs_embeds if isinstance(inputs_embeds, Tensor) else Tensor(backend.from_torch(inputs_embeds))
            if embeds.ndim != 4:
                raise ValueError(f"inputs_embeds must be (batch, num_choices, seq, hidden), got shape "
                                 f"{tuple(embeds.shape)}")
            shape, ids = tuple(embeds.shape[:3]), None
            embeds = embeds.reshape(-1, shape[2], embeds.shape[3])  # (B · nc, T, C)
        B, nc, T = shape
        mask = _choices_flat(attention_mask, "attention_mask", shape, mask=True)
        tt = _choices_flat(token_type_ids, "token_type_ids", shape)
        pos = position_ids
        if pos is not None and token_ids(pos, "position_ids").ndim == 3:
            pos = _choices_flat(pos, "position_ids", shape)
        out = self.bert(ids, mask, tt, output_attentions, output_hidden_states, pos, embeds)
        logits = self.classifier(self.dropout(out.pooler_output)).reshape(B, nc)  # (B · nc, 1) -> (B, nc)
        loss = None if labels is None else F.cross_entropy(logits, _row_labels(labels, B))
        return MultipleChoiceModelOutput(loss=loss, logits=logits, hidden_states=out.hidden_states,
                                         attentions=out.attentions)
