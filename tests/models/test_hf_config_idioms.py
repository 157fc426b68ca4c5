"""transformers' config and loading idioms, each against transformers itself: label names (`config.id2label`),
output flags set on the config, `return_dict=False`, `ignore_mismatched_sizes`, sampling that follows
`manual_seed`, and GPT-2's class names."""
from __future__ import annotations

import json

import numpy as np
import pytest
from models_helpers import hf_save

import seqlab
from seqlab.errors import CheckpointError
from seqlab.models import (GPT, AutoModelForSequenceClassification, BertConfig, BertForSequenceClassification,
                           BertModel, GPT2Config, GPT2ForSequenceClassification, GPT2LMHeadModel, GPTConfig,
                           GPTForSequenceClassification)

BERT_CFG = dict(vocab_size=50, hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=24,
                max_position_embeddings=32, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
GPT_CFG = dict(vocab_size=60, n_positions=32, n_embd=16, n_layer=2, n_head=2, resid_pdrop=0.0, embd_pdrop=0.0,
               attn_pdrop=0.0)
LABELS = {0: "negative", 1: "neutral", 2: "positive"}


@pytest.fixture(scope="module")
def clf_dir(T, torch, tmp_path_factory):
    torch.manual_seed(0)
    hf = T.BertForSequenceClassification(T.BertConfig(**BERT_CFG, id2label=LABELS,
                                                      label2id={v: k for k, v in LABELS.items()})).eval()
    return hf_save(hf, tmp_path_factory.mktemp("clf"))


def test_id2label_reads_as_transformers(T, torch, clf_dir):
    ours = AutoModelForSequenceClassification.from_pretrained(clf_dir)
    theirs = T.AutoModelForSequenceClassification.from_pretrained(clf_dir)
    assert ours.config.id2label == theirs.config.id2label == LABELS          # int keys, not JSON's strings
    assert ours.config.label2id == theirs.config.label2id
    assert ours.config.num_labels == theirs.config.num_labels == 3
    ids = np.array([[2, 7, 9, 3]])
    pred = int(ours(ids).logits.numpy().argmax(-1)[0])
    ref_pred = int(theirs(input_ids=torch.as_tensor(ids)).logits.argmax())
    assert ours.config.id2label[pred] == theirs.config.id2label[ref_pred]


def test_id2label_edits_are_saved_and_read_by_transformers(T, clf_dir, tmp_path):
    ours = AutoModelForSequenceClassification.from_pretrained(clf_dir)
    ours.config.id2label[1] = "mixed"                              # an edit in place, as on transformers' dict
    folder = ours.save_pretrained(tmp_path / "edited")
    assert T.AutoConfig.from_pretrained(folder).id2label == {0: "negative", 1: "mixed", 2: "positive"}
    assert T.AutoConfig.from_pretrained(folder).label2id["mixed"] == 1
    ours.config.id2label = {0: "no", 1: "yes"}                     # a new map sets num_labels, as transformers'
    assert ours.config.num_labels == 2 and ours.config.label2id == {"no": 0, "yes": 1}
    ref = T.BertConfig(**BERT_CFG)
    ref.id2label = {0: "no", 1: "yes"}
    assert ref.num_labels == ours.config.num_labels


def test_num_labels_change_resets_names_as_transformers(T):
    ours = BertConfig(**BERT_CFG, id2label=LABELS)                  # the constructor takes the maps too
    theirs = T.BertConfig(**BERT_CFG, id2label=LABELS)
    assert ours.num_labels == theirs.num_labels == 3 and ours.id2label == theirs.id2label
    ours.num_labels = theirs.num_labels = 4
    assert ours.id2label == theirs.id2label == {i: f"LABEL_{i}" for i in range(4)}
    assert ours.label2id == theirs.label2id
    assert GPTConfig(**GPT_CFG).id2label == T.GPT2Config(**GPT_CFG).id2label   # the default: two LABEL_i
    with pytest.raises(seqlab.errors.ConfigError, match="keys must be class ids"):
        BertConfig(**BERT_CFG, id2label={"a": "x"})


def test_output_flags_set_on_the_config_or_in_from_pretrained(T, torch, clf_dir):
    ids = np.array([[2, 7, 9, 3, 11]])
    ours = BertModel.from_pretrained(clf_dir)
    theirs = T.BertModel.from_pretrained(clf_dir).eval()
    assert ours(ids).hidden_states is None
    ours.config.output_hidden_states = theirs.config.output_hidden_states = True
    mine, ref = ours(ids).hidden_states, theirs(input_ids=torch.as_tensor(ids)).hidden_states
    assert len(mine) == len(ref) == 3
    for a, b in zip(mine, ref):
        np.testing.assert_allclose(a.numpy(), b.detach().numpy(), rtol=1e-5, atol=1e-5)
    assert ours(ids, output_hidden_states=False).hidden_states is None      # the call's own flag wins
    loaded = BertModel.from_pretrained(clf_dir, output_attentions=True)
    hf_loaded = T.BertModel.from_pretrained(clf_dir, output_attentions=True, attn_implementation="eager").eval()
    assert loaded.config.output_attentions is True
    mine, ref = loaded(ids).attentions, hf_loaded(input_ids=torch.as_tensor(ids)).attentions
    assert len(mine) == len(ref) == 2
    np.testing.assert_allclose(mine[-1].numpy(), ref[-1].detach().numpy(), rtol=1e-5, atol=1e-6)


def test_return_dict_false_gives_transformers_tuple(T, torch, clf_dir):
    ids, labels = np.array([[2, 7, 9, 3], [4, 5, 6, 8]]), np.array([2, 0])
    ours = BertForSequenceClassification.from_pretrained(clf_dir)
    theirs = T.BertForSequenceClassification.from_pretrained(clf_dir).eval()
    mine = ours(ids, labels=labels, output_hidden_states=True, return_dict=False)
    ref = theirs(input_ids=torch.as_tensor(ids), labels=torch.as_tensor(labels), output_hidden_states=True,
                 return_dict=False)
    assert isinstance(mine, tuple) and len(mine) == len(ref) == 3            # loss, logits, hidden states
    np.testing.assert_allclose(float(mine[0].item()), float(ref[0].detach()), rtol=1e-5)
    np.testing.assert_allclose(mine[1].numpy(), ref[1].detach().numpy(), rtol=1e-5, atol=1e-6)
    assert len(mine[2]) == len(ref[2])
    assert not isinstance(ours(ids, return_dict=True), tuple)


def test_ignore_mismatched_sizes_starts_a_new_head(T, clf_dir):
    with pytest.raises(CheckpointError, match="ignore_mismatched_sizes=True"):
        BertForSequenceClassification.from_pretrained(clf_dir, num_labels=5)
    ours = BertForSequenceClassification.from_pretrained(clf_dir, num_labels=5, ignore_mismatched_sizes=True)
    theirs = T.BertForSequenceClassification.from_pretrained(clf_dir, num_labels=5, ignore_mismatched_sizes=True)
    assert ours.classifier.weight.shape == tuple(theirs.classifier.weight.shape) == (5, 16)
    assert sorted(k for k, _, _ in ours.loading_info.mismatched_keys) == ["classifier.bias", "classifier.weight"]
    assert dict((k, (a, b)) for k, a, b in ours.loading_info.mismatched_keys)["classifier.weight"] == \
        ((3, 16), (5, 16))
    np.testing.assert_array_equal(ours.bert.embeddings.word_embeddings.weight.numpy(),
                                  theirs.bert.embeddings.word_embeddings.weight.detach().numpy())
    assert ours.config.id2label == theirs.config.id2label                    # five fresh names


def test_save_pretrained_writes_safetensors_only(clf_dir, tmp_path):
    ours = BertModel.from_pretrained(clf_dir)
    folder = ours.save_pretrained(tmp_path / "a", safe_serialization=True)
    assert (folder / "model.safetensors").is_file() and json.loads((folder / "config.json").read_text())
    with pytest.raises(ValueError, match="no pickle"):
        ours.save_pretrained(tmp_path / "b", safe_serialization=False)


def test_sampling_follows_manual_seed():
    """Without seed= or generator=, generate samples from seqlab's generator: manual_seed makes it repeat (it
    drew fresh OS entropy, so two runs after the same manual_seed differed)."""
    seqlab.manual_seed(0)
    model = GPT(GPTConfig(**GPT_CFG)).eval()
    ids = np.array([[1, 2, 3]])
    seqlab.manual_seed(5)
    a = model.generate(ids, max_new_tokens=12, do_sample=True, top_k=0)
    seqlab.manual_seed(5)
    b = model.generate(ids, max_new_tokens=12, do_sample=True, top_k=0)
    c = model.generate(ids, max_new_tokens=12, do_sample=True, top_k=0)    # the generator moved on
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(b, c)


def test_gpt2_class_names():
    assert GPT2LMHeadModel is GPT and GPT2Config is GPTConfig
    assert GPT2ForSequenceClassification is GPTForSequenceClassification
