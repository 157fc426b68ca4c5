"""Models built from `seqlab.nn`: the chapter's TransformerModel, classifiers, translators, BERT, GPT, T5."""
from seqlab.models.transformer_model import TransformerModel
from seqlab.models.classifier import ClassifierConfig, TransformerClassifier
from seqlab.models.translator import Translator, TranslatorConfig
from seqlab.models.auto import (AutoModel, AutoModelForCausalLM, AutoModelForMaskedLM,  # noqa: F401
                                AutoModelForSeq2SeqLM, AutoModelForSequenceClassification, BertConfig, BertForMaskedLM, BertForSequenceClassification, BertModel,  # noqa: F401
                                GPT, GPTConfig, GPTForSequenceClassification, T5Config, T5ForConditionalGeneration)
from seqlab.models.auto import (AutoModelForMultipleChoice, AutoModelForNextSentencePrediction,  # noqa: F401
                                AutoModelForPreTraining, AutoModelForQuestionAnswering,
                                AutoModelForTokenClassification, BertForMultipleChoice,
                                BertForNextSentencePrediction, BertForPreTraining, BertForQuestionAnswering,
                                BertForTokenClassification)
from seqlab.models.auto import (AutoModelForTextEncoding, GPT2DoubleHeadsModel,  # noqa: F401
                                GPT2ForQuestionAnswering, GPT2ForTokenClassification, GPT2Model, T5EncoderModel,
                                T5ForQuestionAnswering, T5ForSequenceClassification, T5ForTokenClassification,
                                T5Model)
from seqlab.models.generation import BaseStreamer, TextIteratorStreamer, TextStreamer  # noqa: F401

# transformers' names for GPT-2's classes (seqlab's GPT is GPT2LMHeadModel's computation and checkpoint layout)
GPT2LMHeadModel = GPT
GPT2ForSequenceClassification = GPTForSequenceClassification
GPT2Config = GPTConfig
