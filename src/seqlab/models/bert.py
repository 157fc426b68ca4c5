"""BERT (Devlin et al., 2019; the chapter's 7.5.1): a post-LN Transformer encoder.

Parameter names are those of transformers' `modeling_bert.py` (they are the
checkpoint contract), so a Hugging Face folder loads without a mapping:

    model = BertModel.from_pretrained("minilm")          # all-MiniLM-L6-v2, bundled
    out = model(ids, attention_mask=mask)                # out.last_hidden_state (B, T, 384)

Each layer: h = LN(h + Dropout(MHA(h))); h = LN(h + Dropout(W₂ GELU(W₁ h))) —
normalisation after the residual sum ("post-LN"), exact erf GELU.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from seqlab import backend, batch_threads
from seqlab import functional as F
from seqlab import nn
from seqlab.autograd.tensor import Tensor
from seqlab.hub import keymap
from seqlab.hub.config import HFConfig, activation
from seqlab.hub.pretrained import PreTrainedModel
from seqlab.models._common import call_layer, ids_or_embeds, init_normal_, mask_values, position_values, token_ids
from seqlab.models.outputs import BaseModelOutput, MaskedLMOutput, SequenceClassifierOutput, classification_loss
from seqlab.nn.linear import feed_forward_in


@dataclass
class BertConfig(HFConfig):
    """The fields of transformers' BertConfig (config.json), with its defaults (bert-base)."""

    model_type: ClassVar[str] = "bert"

    vocab_size: int = 30522
    hidden_size: int = 768
    num_hidden_layers: int = 12
    num_attention_heads: int = 12
    intermediate_size: int = 3072
    hidden_act: str = "gelu"                  # exact erf GELU
    hidden_dropout_prob: float = 0.1
    attention_probs_dropout_prob: float = 0.1
    max_position_embeddings: int = 512
    type_vocab_size: int = 2                  # segment A / B
    initializer_range: float = 0.02           # std of the normal init
    layer_norm_eps: float = 1e-12
    pad_token_id: int | None = 0
    position_embedding_type: str = "absolute"
    classifier_dropout: float | None = None   # None: hidden_dropout_prob
    num_labels: int = 2                       # BertForSequenceClassification
    problem_type: str | None = None
    tie_word_embeddings: bool = True          # MLM decoder shares the word embeddings

    def __post_init__(self):
        self._positive("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads",
                       "intermediate_size", "max_position_embeddings", "type_vocab_size", "num_labels")
        self._divisible("hidden_size", "num_attention_heads")
        self._probability("hidden_dropout_prob", "attention_probs_dropout_prob", "classifier_dropout")
        activation(self.hidden_act)
        self._one_of("position_embedding_type", {"absolute"})
        self._problem_type()


class BertEmbeddings(nn.Module):
    """word + position + token-type embeddings, then LayerNorm and dropout: (B, T) -> (B, T, C)."""

    def __init__(self, c: BertConfig):
        super().__init__()
        self.word_embeddings = nn.Embedding(c.vocab_size, c.hidden_size, padding_idx=c.pad_token_id)
        self.position_embeddings = nn.Embedding(c.max_position_embeddings, c.hidden_size)
        self.token_type_embeddings = nn.Embedding(c.type_vocab_size, c.hidden_size)
        self.LayerNorm = nn.LayerNorm(c.hidden_size, eps=c.layer_norm_eps)
        self.dropout = nn.Dropout(c.hidden_dropout_prob)
        self.max_positions = c.max_position_embeddings

    def forward(self, input_ids: np.ndarray | None, token_type_ids: np.ndarray | None = None,
                position_ids=None, inputs_embeds: Tensor | None = None) -> Tensor:
        """`inputs_embeds` (B, T, C) stand in for the word embeddings of `input_ids` (transformers' option);
        `position_ids` (B, T), (1, T) or (T,) replace 0 .. T-1."""
        B, T = (input_ids if input_ids is not None else inputs_embeds).shape[:2]
        if T > self.max_positions:
            raise ValueError(f"input has {T} tokens but the model has {self.max_positions} positions; truncate it")
        if token_type_ids is None:
            token_type_ids = np.zeros((B, T), dtype=np.int64)
        pos = np.arange(T) if position_ids is None else position_values(position_ids, B, T, self.max_positions)
        words = self.word_embeddings(input_ids) if inputs_embeds is None else inputs_embeds
        h = words + self.position_embeddings(pos) + self.token_type_embeddings(token_type_ids)  # (B, T, C)
        return self.dropout(self.LayerNorm(h))


class BertSelfAttention(nn.Module):
    """softmax(Q Kᵀ / √d) V over H heads (the chapter's eq. for multi-head attention)."""

    def __init__(self, c: BertConfig):
        super().__init__()
        self.num_heads = c.num_attention_heads
        self.head_dim = c.hidden_size // c.num_attention_heads
        self.query = nn.Linear(c.hidden_size, c.hidden_size)
        self.key = nn.Linear(c.hidden_size, c.hidden_size)
        self.value = nn.Linear(c.hidden_size, c.hidden_size)
        self.dropout_p = c.attention_probs_dropout_prob

    def forward(self, h: Tensor, mask, need_weights: bool = True) -> tuple[Tensor, Tensor]:
        """h (B, T, C); mask bool (B, 1, 1, T), True = may attend. Returns (B, T, C) and weights (B, H, T, T),
        None when not `need_weights` (then not made where the attention can skip them)."""
        B, T, C = h.shape
        H, D = self.num_heads, self.head_dim
        q = self.query(h).reshape(B, T, H, D).transpose(1, 2)  # (B, H, T, D)
        k = self.key(h).reshape(B, T, H, D).transpose(1, 2)    # (B, H, T, D)
        v = self.value(h).reshape(B, T, H, D).transpose(1, 2)  # (B, H, T, D)
        out, w = F.attention(q, k, v, attn_mask=mask, dropout_p=self.dropout_p if self.training else 0.0,
                             training=self.training, need_weights=need_weights)
        return out.transpose(1, 2).reshape(B, T, C), w          # (B, T, C)


class BertSelfOutput(nn.Module):
    """Post-LN residual: LN(x + Dropout(W h))."""

    def __init__(self, c: BertConfig, d_in: int):
        super().__init__()
        self.dense = nn.Linear(d_in, c.hidden_size)
        self.LayerNorm = nn.LayerNorm(c.hidden_size, eps=c.layer_norm_eps)
        self.dropout = nn.Dropout(c.hidden_dropout_prob)

    def forward(self, h: Tensor, residual: Tensor) -> Tensor:
        return self.LayerNorm(self.dropout(self.dense(h)) + residual)


BertOutput = BertSelfOutput  # the feed-forward's output block has the same shape of computation


class BertAttention(nn.Module):
    def __init__(self, c: BertConfig):
        super().__init__()
        self.self = BertSelfAttention(c)
        self.output = BertSelfOutput(c, c.hidden_size)

    def forward(self, h: Tensor, mask, need_weights: bool = True) -> tuple[Tensor, Tensor]:
        a, w = self.self(h, mask, need_weights)
        return self.output(a, h), w


class BertIntermediate(nn.Module):
    def __init__(self, c: BertConfig):
        super().__init__()
        self.dense = nn.Linear(c.hidden_size, c.intermediate_size)
        self.act = activation(c.hidden_act)

    def forward(self, h: Tensor) -> Tensor:
        return feed_forward_in(h, self.dense, self.act)  # (B, T, intermediate_size); bias + act: one pass


class BertLayer(nn.Module):
    def __init__(self, c: BertConfig):
        super().__init__()
        self.attention = BertAttention(c)
        self.intermediate = BertIntermediate(c)
        self.output = BertOutput(c, c.intermediate_size)

    def forward(self, h: Tensor, mask, need_weights: bool = True) -> tuple[Tensor, Tensor]:
        h, w = self.attention(h, mask, need_weights)
        return self.output(self.intermediate(h), h), w


class BertEncoder(nn.Module):
    gradient_checkpointing = False  # model.gradient_checkpointing_enable() turns it on (see _common.call_layer)
    checkpoint_options: dict = {}

    def __init__(self, c: BertConfig):
        super().__init__()
        self.layer = nn.ModuleList([BertLayer(c) for _ in range(c.num_hidden_layers)])


class BertPooler(nn.Module):
    """tanh(W h_[CLS]): (B, T, C) -> (B, C), the sentence vector of the NSP head."""

    def __init__(self, c: BertConfig):
        super().__init__()
        self.dense = nn.Linear(c.hidden_size, c.hidden_size)

    def forward(self, h: Tensor) -> Tensor:
        return F.tanh(self.dense(h[:, 0]))


class BertPreTrained(PreTrainedModel):
    config_class = BertConfig
    keymap = keymap.BERT


class BertModel(nn.Module, BertPreTrained):
    """The encoder: ids (B, T) -> last_hidden_state (B, T, C) and pooler_output (B, C)."""

    hf_architecture = "BertModel"
    head_prefixes = ("pooler.",)  # a file from a head model (MLM) has no pooler: it keeps its fresh init

    def __init__(self, config: BertConfig, add_pooling_layer: bool = True):
        super().__init__()
        self.config = config
        self.embeddings = BertEmbeddings(config)
        self.encoder = BertEncoder(config)
        self.pooler = BertPooler(config) if add_pooling_layer else None
        init_normal_(self, config.initializer_range)

    def forward(self, input_ids=None, attention_mask=None, token_type_ids=None, output_attentions: bool = False,
                output_hidden_states: bool = False, position_ids=None, inputs_embeds=None) -> BaseModelOutput:
        """input_ids (B, T) ints; attention_mask (B, T), 1 = real token, 0 = padding (HF convention);
        token_type_ids (B, T): 0 for sentence A, 1 for sentence B. `inputs_embeds` (B, T, C) in place of
        input_ids' word embeddings, `position_ids` in place of 0 .. T-1 (transformers' options)."""
        ids, embeds, B, T = ids_or_embeds(input_ids, inputs_embeds)
        tt = None if token_type_ids is None else token_ids(token_type_ids, "token_type_ids")
        if tt is not None and tt.shape != (B, T):
            raise ValueError(f"token_type_ids has shape {tt.shape} but input_ids {(B, T)}")
        mask = None
        if attention_mask is not None:
            am = mask_values(attention_mask)
            if am.shape != (B, T):
                raise ValueError(f"attention_mask has shape {am.shape} but input_ids {(B, T)}")
            mask = (am != 0)[:, None, None, :]  # (B, 1, 1, T): True = may attend
        if position_ids is not None and T <= self.embeddings.max_positions:  # checked for the whole batch, as
            position_ids = position_values(position_ids, B, T, self.embeddings.max_positions)  # (B or 1, T)
        C, inner = self.config.hidden_size, self.config.intermediate_size
        n = batch_threads.chunks(B, T * (4 * C * C + 2 * C * inner + 2 * T * C), [self])
        h, pooled, attentions, hidden = batch_threads.map_rows(
            self._rows, (ids, embeds, tt, position_ids, mask, output_attentions, output_hidden_states), n)
        return BaseModelOutput(last_hidden_state=h, pooler_output=pooled,
                               hidden_states=tuple(hidden) if output_hidden_states else None,
                               attentions=tuple(attentions) if output_attentions else None)

    def _rows(self, ids, embeds, tt, position_ids, mask, output_attentions: bool, output_hidden_states: bool
              ) -> tuple:
        """The model on a batch of rows (all of them, or a chunk on one thread; see forward): (last hidden
        state, pooled or None, [weights per layer], [embeddings and each layer's output]). The lists are filled
        only if asked for: under no_grad they would keep every layer alive. The whole forward runs here, so a
        split call leaves no threaded product, whose BLAS workers would spin into the next call's split."""
        h = self.embeddings(ids, tt, position_ids, embeds)
        if mask is not None:
            mask = backend.to_device(mask, h.device)  # once, not in every layer's attention
        attentions, hidden = [], [h] if output_hidden_states else []
        for layer in self.encoder.layer:
            h, w = call_layer(self.encoder, layer, h, mask, bool(output_attentions), keep_weights=output_attentions)
            if output_attentions:
                attentions.append(w)
            if output_hidden_states:
                hidden.append(h)
        return h, self.pooler(h) if self.pooler is not None else None, attentions, hidden


class BertPredictionHeadTransform(nn.Module):
    def __init__(self, c: BertConfig):
        super().__init__()
        self.dense = nn.Linear(c.hidden_size, c.hidden_size)
        self.act = activation(c.hidden_act)
        self.LayerNorm = nn.LayerNorm(c.hidden_size, eps=c.layer_norm_eps)

    def forward(self, h: Tensor) -> Tensor:
        return self.LayerNorm(self.act(self.dense(h)))


class BertLMPredictionHead(nn.Module):
    """LN(GELU(W h)) then scores against every word embedding (tied): (B, T, C) -> (B, T, V)."""

    def __init__(self, c: BertConfig):
        super().__init__()
        self.transform = BertPredictionHeadTransform(c)
        self.decoder = nn.Linear(c.hidden_size, c.vocab_size)
        self.bias = nn.Parameter(np.zeros(c.vocab_size, dtype=np.float32))
        self.decoder.bias = self.bias

    def forward(self, h: Tensor) -> Tensor:
        return self.decoder(self.transform(h))


class BertOnlyMLMHead(nn.Module):
    def __init__(self, c: BertConfig):
        super().__init__()
        self.predictions = BertLMPredictionHead(c)


class BertForMaskedLM(nn.Module, BertPreTrained):
    """Masked language model (the chapter's MLM objective): logits (B, T, V), loss on labels != -100."""

    hf_architecture = "BertForMaskedLM"
    head_prefixes = ("cls.",)

    def __init__(self, config: BertConfig):
        super().__init__()
        self.config = config
        self.bert = BertModel(config, add_pooling_layer=False)
        self.cls = BertOnlyMLMHead(config)
        init_normal_(self.cls, config.initializer_range)
        if config.tie_word_embeddings:
            self.cls.predictions.decoder.weight = self.bert.embeddings.word_embeddings.weight

    def _untie(self, alias: str) -> None:
        dec = self.cls.predictions.decoder
        if alias.endswith("decoder.weight"):
            dec.weight = nn.Parameter(dec.weight.data.copy())
            self.config.tie_word_embeddings = False
        else:
            dec.bias = nn.Parameter(dec.bias.data.copy())

    def forward(self, input_ids=None, attention_mask=None, token_type_ids=None, output_attentions: bool = False,
                labels=None, output_hidden_states: bool = False, position_ids=None, inputs_embeds=None
                ) -> MaskedLMOutput:
        # never split across threads (seqlab.batch_threads): the chunks' logits, (rows, T, vocabulary) each,
        # and their join would be held at once, twice the unsplit peak (332 against 171 MiB at MiniLM's 32 × 44);
        # and a threaded vocabulary product after a split encoder keeps OpenBLAS's worker spinning into the next
        # call's split (1.01-1.08× the unsplit time)
        with batch_threads.unsplit():
            out = self.bert(input_ids, attention_mask, token_type_ids, output_attentions, output_hidden_states,
                            position_ids, inputs_embeds)
        logits = self.cls.predictions(out.last_hidden_state)  # (B, T, V)
        loss = None
        if labels is not None:
            lab = token_ids(labels, "labels")
            if lab.shape != tuple(logits.shape[:2]):
                raise ValueError(f"labels has shape {lab.shape} but input_ids {tuple(logits.shape[:2])}: "
                                 f"expected the same (batch, seq) shape")
            loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), lab.reshape(-1))
        return MaskedLMOutput(loss=loss, logits=logits, last_hidden_state=out.last_hidden_state,
                              attentions=out.attentions, hidden_states=out.hidden_states)


class BertForSequenceClassification(nn.Module, BertPreTrained):
    """Pooled [CLS] -> Dropout -> Linear: logits (B, num_labels)."""

    hf_architecture = "BertForSequenceClassification"
    head_prefixes = ("classifier.", "bert.pooler.")  # from an MLM file (no pooler) the pooler starts fresh, as in HF

    def __init__(self, config: BertConfig):
        super().__init__()
        self.config = config
        self.num_labels = config.num_labels
        self.bert = BertModel(config)
        p = config.classifier_dropout if config.classifier_dropout is not None else config.hidden_dropout_prob
        self.dropout = nn.Dropout(p)
        self.classifier = nn.Linear(config.hidden_size, config.num_labels)
        init_normal_(self.classifier, config.initializer_range)

    def forward(self, input_ids=None, attention_mask=None, token_type_ids=None, output_attentions: bool = False,
                labels=None, output_hidden_states: bool = False, position_ids=None, inputs_embeds=None
                ) -> SequenceClassifierOutput:
        out = self.bert(input_ids, attention_mask, token_type_ids, output_attentions, output_hidden_states,
                        position_ids, inputs_embeds)
        logits = self.classifier(self.dropout(out.pooler_output))  # (B, num_labels)
        loss = None if labels is None else classification_loss(logits, labels, self.config.problem_type)
        return SequenceClassifierOutput(loss=loss, logits=logits, attentions=out.attentions,
                                        hidden_states=out.hidden_states)


# BERT's other heads (pretraining with NSP, token classification, QA, multiple choice) live in bert_heads.py,
# which builds on the classes above; they are importable from here too, loaded on first use (an import at the
# top of either file would be circular).
_HEADS = ("BertForPreTraining", "BertForNextSentencePrediction", "BertForTokenClassification",
          "BertForQuestionAnswering", "BertForMultipleChoice")


def __getattr__(name: str):
    if name in _HEADS:
        from seqlab.models import bert_heads

        return getattr(bert_heads, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
