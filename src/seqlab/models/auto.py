"""`AutoModel.from_pretrained(folder)`: the seqlab class for a Hugging Face folder.

The class is chosen by ``model_type`` and, within it, by the first entry of
``architectures`` (the head); a folder without ``architectures`` gets the
family's default. The table is data (module and class names as strings);
the classes are also re-exported here for `seqlab.models`.
"""
from __future__ import annotations

import importlib
import os

from seqlab.errors import CheckpointError
from seqlab.hub.pretrained import read_config, resolve, run_folder_note
from seqlab.models.bert import BertConfig, BertForMaskedLM, BertForSequenceClassification, BertModel
from seqlab.models.bert_heads import (BertForMultipleChoice, BertForNextSentencePrediction, BertForPreTraining,
                                      BertForQuestionAnswering, BertForTokenClassification)
from seqlab.models.gpt import GPT, GPTConfig, GPTForSequenceClassification
from seqlab.models.gpt_heads import (GPT2DoubleHeadsModel, GPT2ForQuestionAnswering, GPT2ForTokenClassification,
                                     GPT2Model)
from seqlab.models.t5 import T5Config, T5ForConditionalGeneration
from seqlab.models.t5_heads import (T5EncoderModel, T5ForQuestionAnswering, T5ForSequenceClassification,
                                    T5ForTokenClassification, T5Model)

__all__ = ["AutoModel", "AutoModelForCausalLM", "AutoModelForMaskedLM", "AutoModelForSequenceClassification",
           "AutoModelForSeq2SeqLM", "model_class", "BertConfig", "BertModel", "BertForMaskedLM",
           "BertForSequenceClassification",
           "GPTConfig", "GPT", "GPTForSequenceClassification", "T5Config", "T5ForConditionalGeneration",
           "AutoModelForPreTraining", "AutoModelForNextSentencePrediction", "AutoModelForTokenClassification",
           "AutoModelForQuestionAnswering", "AutoModelForMultipleChoice", "BertForPreTraining",
           "BertForNextSentencePrediction", "BertForTokenClassification", "BertForQuestionAnswering",
           "BertForMultipleChoice", "AutoModelForTextEncoding", "GPT2Model", "GPT2ForTokenClassification",
           "GPT2ForQuestionAnswering", "GPT2DoubleHeadsModel", "T5Model", "T5EncoderModel",
           "T5ForSequenceClassification", "T5ForTokenClassification", "T5ForQuestionAnswering"]

# model_type -> (module, {HF architecture: seqlab class}, default class)
MODELS: dict[str, tuple[str, dict[str, str], str]] = {
    "bert": ("seqlab.models.bert", {
        "BertModel": "BertModel",
        "BertForMaskedLM": "BertForMaskedLM",
        "BertForPreTraining": "BertForPreTraining",
        "BertForNextSentencePrediction": "BertForNextSentencePrediction",
        "BertForSequenceClassification": "BertForSequenceClassification",
        "BertForTokenClassification": "BertForTokenClassification",
        "BertForQuestionAnswering": "BertForQuestionAnswering",
        "BertForMultipleChoice": "BertForMultipleChoice",
    }, "BertModel"),
    "gpt2": ("seqlab.models.gpt", {
        "GPT2LMHeadModel": "GPT",
        "GPT2Model": "GPT2Model",
        "GPT2ForSequenceClassification": "GPTForSequenceClassification",
        "GPT2ForTokenClassification": "GPT2ForTokenClassification",
        "GPT2ForQuestionAnswering": "GPT2ForQuestionAnswering",
        "GPT2DoubleHeadsModel": "GPT2DoubleHeadsModel",
    }, "GPT"),
    "t5": ("seqlab.models.t5", {
        "T5ForConditionalGeneration": "T5ForConditionalGeneration",
        "T5Model": "T5Model",
        "T5WithLMHeadModel": "T5ForConditionalGeneration",
        "T5EncoderModel": "T5EncoderModel",
        "T5ForSequenceClassification": "T5ForSequenceClassification",
        "T5ForTokenClassification": "T5ForTokenClassification",
        "T5ForQuestionAnswering": "T5ForQuestionAnswering",
    }, "T5ForConditionalGeneration"),
}


def model_class(config: dict, where: str = "config.json"):
    """The seqlab class for a `config.json` dict (``where`` names the file in errors)."""
    mt = config.get("model_type")
    if mt is None:
        if note := run_folder_note(config):
            raise CheckpointError(f"{where} has no model_type{note}")
        raise CheckpointError(f"{where} has no model_type; seqlab reads {', '.join(sorted(MODELS))}")
    if not isinstance(mt, str) or mt not in MODELS:
        raise CheckpointError(f"{where}: unknown model_type {mt!r}; seqlab reads {', '.join(sorted(MODELS))}")
    module, by_arch, default = MODELS[mt]
    archs = config.get("architectures") or []
    if not isinstance(archs, list) or not all(isinstance(a, str) for a in archs):
        raise CheckpointError(f"{where}: architectures must be a list of class names, got {archs!r}")
    name = by_arch.get(archs[0], None) if archs else default
    if name is None:
        raise CheckpointError(f"architecture {archs[0]!r} of model_type {mt!r} is not supported; "
                              f"seqlab has {', '.join(sorted(by_arch))}")
    return getattr(importlib.import_module(module), name)


class AutoModel:
    """Not instantiated: ``AutoModel.from_pretrained(folder_or_name, **kwargs)``.

    Unlike transformers' AutoModel (always the base model), this builds the
    class the folder names in ``architectures``, head included (a GPT2Model,
    T5Model or T5EncoderModel folder gives that base model); the
    AutoModelFor... classes below pick by task, as transformers' do.
    """

    def __init__(self):
        raise TypeError("use AutoModel.from_pretrained(folder)")

    @staticmethod
    def from_pretrained(name_or_path: str | os.PathLike, **kwargs):
        """Read config.json, pick the class, and call its `from_pretrained` (same keyword arguments)."""
        folder = resolve(name_or_path)
        cls = model_class(read_config(folder), str(folder / "config.json"))
        return cls.from_pretrained(folder, **kwargs)

    @staticmethod
    def from_config(config):
        """A freshly initialised model for a config (a seqlab config, or a `config.json`-style dict)."""
        config = _as_dict(config)
        cls = model_class(config)
        return cls(cls.config_class.from_dict({k: v for k, v in config.items() if k != "architectures"}))


def _as_dict(config) -> dict:
    return config.to_dict() if hasattr(config, "to_dict") and not isinstance(config, dict) else config


# transformers' per-task auto classes: model_type -> the seqlab class for that task
TASKS: dict[str, dict[str, str]] = {
    "AutoModelForCausalLM": {"gpt2": "GPT"},
    "AutoModelForMaskedLM": {"bert": "BertForMaskedLM"},
    "AutoModelForSequenceClassification": {"bert": "BertForSequenceClassification",
                                           "gpt2": "GPTForSequenceClassification",
                                           "t5": "T5ForSequenceClassification"},
    "AutoModelForSeq2SeqLM": {"t5": "T5ForConditionalGeneration"},
    # as transformers' MODEL_FOR_PRETRAINING_MAPPING: each family's pretraining objective (GPT-2's and T5's are
    # their language-model heads)
    "AutoModelForPreTraining": {"bert": "BertForPreTraining", "gpt2": "GPT", "t5": "T5ForConditionalGeneration"},
    "AutoModelForNextSentencePrediction": {"bert": "BertForNextSentencePrediction"},
    "AutoModelForTokenClassification": {"bert": "BertForTokenClassification", "gpt2": "GPT2ForTokenClassification",
                                        "t5": "T5ForTokenClassification"},
    "AutoModelForQuestionAnswering": {"bert": "BertForQuestionAnswering", "gpt2": "GPT2ForQuestionAnswering",
                                      "t5": "T5ForQuestionAnswering"},
    "AutoModelForMultipleChoice": {"bert": "BertForMultipleChoice"},  # transformers' has no GPT-2 or T5 entry
    # transformers' MODEL_FOR_TEXT_ENCODING_MAPPING: a model that turns text into vectors
    "AutoModelForTextEncoding": {"bert": "BertModel", "t5": "T5EncoderModel"},
}


class _AutoTask:
    """transformers' AutoModelFor...: the class is the task's for the folder's model_type, whatever head the
    folder was saved with (a fresh head where it had another, as transformers does)."""

    def __init__(self):
        raise TypeError(f"use {type(self).__name__}.from_pretrained(folder)")

    @classmethod
    def _class(cls, config: dict, where: str = "config.json"):
        model_class(config, where)  # the folder is one seqlab reads at all (clear errors otherwise)
        table = TASKS[cls.__name__]
        mt = config.get("model_type")
        if mt not in table:
            raise CheckpointError(f"{where}: {cls.__name__} has no class for model_type {mt!r}; it takes "
                                  f"{', '.join(sorted(table))}")
        return getattr(importlib.import_module(MODELS[mt][0]), table[mt])

    @classmethod
    def from_pretrained(cls, name_or_path: str | os.PathLike, **kwargs):
        """Read config.json and call the task's class's `from_pretrained` (same keyword arguments)."""
        folder = resolve(name_or_path)
        return cls._class(read_config(folder), str(folder / "config.json")).from_pretrained(folder, **kwargs)

    @classmethod
    def from_config(cls, config):
        """A freshly initialised model of the task's class for a config (seqlab's, or a dict)."""
        config = _as_dict(config)
        model = cls._class(config)
        return model(model.config_class.from_dict({k: v for k, v in config.items() if k != "architectures"}))


class AutoModelForCausalLM(_AutoTask):
    """GPT-2 folders as `GPT` (the language-model head)."""


class AutoModelForMaskedLM(_AutoTask):
    """BERT folders as `BertForMaskedLM`."""


class AutoModelForSequenceClassification(_AutoTask):
    """BERT, GPT-2 and T5 folders as their sequence classifiers (pass num_labels=... for a fresh head)."""


class AutoModelForSeq2SeqLM(_AutoTask):
    """T5 folders as `T5ForConditionalGeneration`."""


class AutoModelForPreTraining(_AutoTask):
    """BERT folders as `BertForPreTraining` (masked LM + next sentence), GPT-2 as `GPT`, T5 as
    `T5ForConditionalGeneration`, as transformers maps them."""


class AutoModelForNextSentencePrediction(_AutoTask):
    """BERT folders as `BertForNextSentencePrediction`."""


class AutoModelForTokenClassification(_AutoTask):
    """BERT, GPT-2 and T5 folders as `BertForTokenClassification`, `GPT2ForTokenClassification` and
    `T5ForTokenClassification` (pass num_labels=... for a fresh head)."""


class AutoModelForQuestionAnswering(_AutoTask):
    """BERT, GPT-2 and T5 folders as `BertForQuestionAnswering`, `GPT2ForQuestionAnswering` and
    `T5ForQuestionAnswering`."""


class AutoModelForMultipleChoice(_AutoTask):
    """BERT folders as `BertForMultipleChoice`."""


class AutoModelForTextEncoding(_AutoTask):
    """BERT folders as `BertModel`, T5 folders as `T5EncoderModel` (the encoder alone), as transformers maps them."""
