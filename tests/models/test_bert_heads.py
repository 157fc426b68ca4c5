"""BERT's other heads (pretraining with NSP, NSP, token classification, QA, multiple choice): each equals
transformers' class on the same weights, in values, loss and gradients, and their folders load both ways."""
from __future__ import annotations

import numpy as np
import pytest
from models_helpers import hf_save

import seqlab
from seqlab.errors import CheckpointError, ConfigError
from seqlab.models import (AutoModel, AutoModelForMaskedLM, AutoModelForMultipleChoice,
                           AutoModelForNextSentencePrediction, AutoModelForPreTraining, AutoModelForQuestionAnswering,
                           AutoModelForSequenceClassification, AutoModelForTokenClassification, BertConfig,
                           BertForMaskedLM, BertForMultipleChoice, BertForNextSentencePrediction, BertForPreTraining,
                           BertForQuestionAnswering, BertForSequenceClassification, BertForTokenClassification,
                           BertModel, GPT, GPTConfig, T5Config, T5ForConditionalGeneration)
from seqlab.models import bert as bert_module

V, B, L = 100, 3, 9  # vocabulary, batch, sequence length
TINY = dict(vocab_size=V, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=37,
            max_position_embeddings=40, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
HEADS = {  # transformers' name -> (seqlab's class, the head's own parameter prefixes)
    "BertForPreTraining": (BertForPreTraining, ("cls.", "bert.pooler.")),
    "BertForNextSentencePrediction": (BertForNextSentencePrediction, ("cls.", "bert.pooler.")),
    "BertForTokenClassification": (BertForTokenClassification, ("classifier.",)),
    "BertForQuestionAnswering": (BertForQuestionAnswering, ("qa_outputs.",)),
    "BertForMultipleChoice": (BertForMultipleChoice, ("classifier.", "bert.pooler.")),
}
NUM_LABELS = {"BertForTokenClassification": 5}


def batch(name: str, seed: int = 0) -> dict:
    """Inputs and labels for head `name`: padding in row 1, two segments, labels with their edge cases."""
    rng = np.random.default_rng(seed)
    shape = (2, 3, 7) if name == "BertForMultipleChoice" else (B, L)
    ids = rng.integers(1, V, shape)
    mask = np.ones_like(ids)
    mask[1, ..., -3:] = 0
    tt = np.zeros_like(ids)
    tt[..., 4:] = 1
    x = dict(input_ids=ids, attention_mask=mask, token_type_ids=tt)
    if name == "BertForPreTraining":
        x["labels"] = np.where(rng.random(shape) < 0.3, ids, -100)
        x["next_sentence_label"] = np.array([0, 1, 1])
    elif name == "BertForNextSentencePrediction":
        x["labels"] = np.array([1, 0, 1])
    elif name == "BertForTokenClassification":
        x["labels"] = np.where(mask == 1, rng.integers(0, 5, shape), -100)  # padding not scored
        x["labels"][0, :2] = -100
    elif name == "BertForQuestionAnswering":
        x["start_positions"] = np.array([2, L + 5, -1])  # beyond the input: ignored; negative: position 0
        x["end_positions"] = np.array([4, L, 3])          # L itself: ignored too
    else:
        x["labels"] = np.array([2, 0])
    return x


def to_torch(torch, x: dict) -> dict:
    return {k: torch.tensor(v) for k, v in x.items()}


def make_pair(T, torch, folder, name: str, **extra):
    """(transformers' head in float64, saved to `folder`, seqlab's loaded from it in float64)."""
    torch.manual_seed(sum(map(ord, name)))
    hf = getattr(T, name)(T.BertConfig(**TINY, num_labels=NUM_LABELS.get(name, 2), attn_implementation="eager",
                                       **extra)).double()
    ours = AutoModel.from_pretrained(hf_save(hf, folder), dtype=np.float64)
    return hf, ours


def grads_match(ours, hf, rel: float) -> None:
    """Each parameter's gradient equals torch's within `rel` of its largest entry; a gradient that is zero in
    exact arithmetic (QA's bias: the softmax over the tokens sums to one; attention's key bias) is rounding
    noise in both, compared against 1e-6 of the model's largest gradient instead."""
    ref = {k: p.grad.detach().numpy() for k, p in hf.named_parameters()}
    floor = 1e-6 * max(np.abs(g).max() for g in ref.values())
    for name, p in ours.named_parameters():
        assert name in ref and p.grad is not None, name
        err = np.abs(p.grad - ref[name]).max() / max(np.abs(ref[name]).max(), floor)
        assert err <= rel, f"gradient of {name} differs by {err:.2e} (relative)"


def fields_match(ours, ref, atol: float) -> None:
    """Every field transformers' output has set, by name, equal in ours (tuples element by element)."""
    for key in ref.keys():
        a, b = ours[key], ref[key]
        if isinstance(b, tuple):
            assert len(a) == len(b), key
            for x, y in zip(a, b):
                np.testing.assert_allclose(x.numpy(), y.detach().numpy(), rtol=0, atol=atol, err_msg=key)
        else:
            np.testing.assert_allclose(np.asarray(a.numpy()), b.detach().numpy(), rtol=0, atol=atol, err_msg=key)
    assert ours.keys() == list(ref.keys())


@pytest.mark.parametrize("name", list(HEADS))
def test_head_equals_transformers_in_outputs_loss_and_gradients(T, torch, tmp_path, name):
    hf, ours = make_pair(T, torch, tmp_path, name)
    assert type(ours) is HEADS[name][0] and ours.loading_info.missing_keys == []
    hf.train()  # dropout is 0: train mode so both build a graph the same way
    x = batch(name)
    out = ours(**x, output_attentions=True, output_hidden_states=True)
    r = hf(**to_torch(torch, x), output_attentions=True, output_hidden_states=True)
    fields_match(out, r, atol=1e-12)
    assert np.isfinite(out.loss.item()) and abs(out.loss.item() - r.loss.item()) <= 1e-10 * abs(r.loss.item())
    out.loss.backward()
    r.loss.backward()
    grads_match(ours, hf, rel=1e-8)


@pytest.mark.parametrize("name", list(HEADS))
def test_return_dict_false_and_no_labels_give_transformers_tuple(T, torch, tmp_path, name):
    hf, ours = make_pair(T, torch, tmp_path, name)
    x = {k: v for k, v in batch(name, seed=1).items() if k in ("input_ids", "attention_mask", "token_type_ids")}
    got = ours(**x, return_dict=False, output_hidden_states=True)
    with torch.no_grad():
        ref = hf(**to_torch(torch, x), return_dict=False, output_hidden_states=True)
    assert isinstance(got, tuple) and len(got) == len(ref)
    for a, b in zip(got, ref):
        if isinstance(b, tuple):
            assert len(a) == len(b) == TINY["num_hidden_layers"] + 1
            a, b = a[-1], b[-1]
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=0, atol=1e-12)
    out = ours(**x)
    assert out.loss is None and out.attentions is None and out.hidden_states is None
    assert out[0] is getattr(out, out.keys()[0])


def test_pretraining_loss_is_mlm_plus_nsp_and_needs_both_labels(T, torch, tmp_path):
    hf, ours = make_pair(T, torch, tmp_path, "BertForPreTraining")
    x = batch("BertForPreTraining")
    out = ours(**x)
    mlm = BertForMaskedLM.from_pretrained(tmp_path, dtype=np.float64)
    nsp = BertForNextSentencePrediction.from_pretrained(tmp_path, dtype=np.float64)
    assert mlm.loading_info.missing_keys == [] and nsp.loading_info.missing_keys == []
    inputs = {k: x[k] for k in ("input_ids", "attention_mask", "token_type_ids")}
    total = mlm(**inputs, labels=x["labels"]).loss.item() + nsp(**inputs, labels=x["next_sentence_label"]).loss.item()
    assert abs(out.loss.item() - total) <= 1e-12
    only_mlm = {k: v for k, v in x.items() if k != "next_sentence_label"}
    with torch.no_grad():
        assert hf(**to_torch(torch, only_mlm)).loss is None  # transformers: no loss without both
    assert ours(**only_mlm).loss is None


def test_question_answering_positions_as_transformers(T, torch, tmp_path):
    hf, ours = make_pair(T, torch, tmp_path, "BertForQuestionAnswering")
    x = batch("BertForQuestionAnswering")
    inputs = {k: x[k] for k in ("input_ids", "attention_mask", "token_type_ids")}
    cases = [  # (start, end): (B, 1) columns as transformers squeezes them; every position outside: NaN there too
        (x["start_positions"][:, None], x["end_positions"][:, None]),
        (np.array([0, 3, 100]), np.array([L - 1, -7, 100])),
        (np.full(B, L + 1), np.full(B, L)),
    ]
    for s, e in cases:
        with torch.no_grad():
            ref = hf(**to_torch(torch, inputs), start_positions=torch.tensor(s), end_positions=torch.tensor(e)).loss
        with np.errstate(all="ignore"):
            got = ours(**inputs, start_positions=s, end_positions=e).loss.item()
        if np.isnan(ref.item()):
            assert np.isnan(got)
        else:
            assert abs(got - ref.item()) <= 1e-12
    assert ours(**inputs, start_positions=x["start_positions"]).loss is None  # both or none, as transformers


def test_token_classification_ignores_minus_100(T, torch, tmp_path):
    hf, ours = make_pair(T, torch, tmp_path, "BertForTokenClassification")
    x = batch("BertForTokenClassification")
    out = ours(**x)
    logits, lab = out.logits.numpy(), x["labels"]
    keep = lab != -100
    z = logits[keep] - logits[keep].max(-1, keepdims=True)
    nll = -(z[np.arange(keep.sum()), lab[keep]] - np.log(np.exp(z).sum(-1)))
    assert abs(out.loss.item() - nll.mean()) <= 1e-12


def test_multiple_choice_takes_embeddings_and_position_ids(T, torch, tmp_path):
    hf, ours = make_pair(T, torch, tmp_path, "BertForMultipleChoice")
    x = batch("BertForMultipleChoice")
    emb = np.random.default_rng(2).normal(size=x["input_ids"].shape + (TINY["hidden_size"],))
    pos = np.tile(np.arange(7)[::-1].copy(), (2, 3, 1))
    with torch.no_grad():
        r = hf(inputs_embeds=torch.tensor(emb), attention_mask=torch.tensor(x["attention_mask"]),
               position_ids=torch.tensor(pos), labels=torch.tensor(x["labels"]))
    out = ours(inputs_embeds=emb, attention_mask=x["attention_mask"], position_ids=pos, labels=x["labels"])
    np.testing.assert_allclose(out.logits.numpy(), r.logits.numpy(), rtol=0, atol=1e-12)
    assert abs(out.loss.item() - r.loss.item()) <= 1e-12
    assert out.logits.shape == (2, 3)
    one_row = ours(x["input_ids"], position_ids=np.arange(7)).logits.numpy()  # (T,): the same for every row
    np.testing.assert_array_equal(one_row, ours(x["input_ids"]).logits.numpy())


@pytest.mark.parametrize("name", list(HEADS))
def test_seqlab_folder_loads_strictly_into_transformers(T, torch, tmp_path, name):
    seqlab.manual_seed(5)
    cls = HEADS[name][0]
    cfg = BertConfig(**TINY)
    if name == "BertForTokenClassification":
        cfg.id2label = {0: "O", 1: "B-PER", 2: "I-PER", 3: "B-LOC", 4: "I-LOC"}
    ours = cls(cfg).eval()
    ours.save_pretrained(tmp_path)
    ref, info = getattr(T, name).from_pretrained(str(tmp_path), output_loading_info=True, dtype=torch.float32)
    assert not info["missing_keys"] and not info["unexpected_keys"] and not info["mismatched_keys"], info
    assert ref.config.id2label == ours.config.id2label and ref.config.num_labels == cfg.num_labels
    x = {k: v for k, v in batch(name, seed=3).items() if k in ("input_ids", "attention_mask", "token_type_ids")}
    with torch.no_grad():
        r = ref.eval()(**to_torch(torch, x))
    fields_match(ours(**x), r, atol=2e-5)
    again = AutoModel.from_pretrained(tmp_path)
    assert type(again) is cls and again.loading_info.missing_keys == []
    assert again.config.id2label == cfg.id2label
    for a, b in zip(again(**x).to_tuple(), ours(**x).to_tuple()):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    if name == "BertForPreTraining":
        assert again.cls.predictions.decoder.weight is again.bert.embeddings.word_embeddings.weight


def test_pretraining_and_masked_lm_folders_load_into_each_other(T, torch, tmp_path):
    hf_pre, ours_pre = make_pair(T, torch, tmp_path / "pre", "BertForPreTraining")
    x = {k: v for k, v in batch("BertForPreTraining").items() if k in ("input_ids", "attention_mask")}
    # a BertForPreTraining folder as BertForMaskedLM (NSP head and pooler unused), in seqlab as in transformers
    mlm = BertForMaskedLM.from_pretrained(tmp_path / "pre", dtype=np.float64)
    assert mlm.loading_info.missing_keys == []
    assert {k.split(".")[1] for k in mlm.loading_info.unexpected_keys} == {"pooler", "seq_relationship"}
    hf_mlm = T.BertForMaskedLM.from_pretrained(str(tmp_path / "pre"), dtype=torch.float64).eval()
    with torch.no_grad():
        ref = hf_mlm(**to_torch(torch, x)).logits.numpy()
    np.testing.assert_allclose(mlm(**x).logits.numpy(), ref, rtol=0, atol=1e-12)
    np.testing.assert_allclose(ours_pre(**x).prediction_logits.numpy(), ref, rtol=0, atol=1e-12)
    assert AutoModelForMaskedLM.from_pretrained(tmp_path / "pre").__class__ is BertForMaskedLM
    # and a BertForMaskedLM folder as BertForPreTraining: the MLM head kept, pooler and NSP head fresh
    mlm.save_pretrained(tmp_path / "mlm")
    pre = AutoModelForPreTraining.from_pretrained(tmp_path / "mlm", dtype=np.float64)
    assert type(pre) is BertForPreTraining
    assert sorted(pre.loading_info.missing_keys) == ["bert.pooler.dense.bias", "bert.pooler.dense.weight",
                                                     "cls.seq_relationship.bias", "cls.seq_relationship.weight"]
    np.testing.assert_allclose(pre(**x).prediction_logits.numpy(), ref, rtol=0, atol=1e-12)
    assert not pre.cls.seq_relationship.bias.numpy().any()
    hf_pre2 = T.BertForPreTraining.from_pretrained(str(tmp_path / "mlm"), dtype=torch.float64).eval()
    with torch.no_grad():
        np.testing.assert_allclose(hf_pre2(**to_torch(torch, x)).prediction_logits.numpy(), ref, atol=1e-12)


@pytest.mark.parametrize("name", list(HEADS))
def test_fresh_head_on_a_base_model_folder(tmp_path, name):
    seqlab.manual_seed(1)
    base = BertModel(BertConfig(**TINY, initializer_range=0.5))
    base.save_pretrained(tmp_path)
    cls, prefixes = HEADS[name]
    model = cls.from_pretrained(tmp_path, num_labels=NUM_LABELS.get(name, 2))
    missing = model.loading_info.missing_keys
    assert missing and all(k.startswith(prefixes) for k in missing)
    assert not any(k.startswith("bert.pooler.") for k in missing)  # the base file has its pooler
    for key in missing:
        value = np.asarray(model.state_dict()[key])
        if key.endswith("bias"):
            assert not value.any(), key
        elif key.endswith("LayerNorm.weight"):
            assert (value == 1).all(), key
        elif key != "cls.predictions.decoder.weight":  # tied to the word embeddings
            assert value.size < 10 or 0.3 < value.std() < 0.7, (key, value.std())  # N(0, initializer_range)
    if name == "BertForPreTraining":
        assert model.cls.predictions.decoder.weight is model.bert.embeddings.word_embeddings.weight
    np.testing.assert_array_equal(model.bert.embeddings.word_embeddings.weight.numpy(),
                                  base.embeddings.word_embeddings.weight.numpy())


def test_auto_classes_pick_the_task_head(tmp_path):
    seqlab.manual_seed(2)
    BertModel(BertConfig(**TINY)).save_pretrained(tmp_path)
    for auto, cls in [(AutoModelForPreTraining, BertForPreTraining),
                      (AutoModelForNextSentencePrediction, BertForNextSentencePrediction),
                      (AutoModelForTokenClassification, BertForTokenClassification),
                      (AutoModelForQuestionAnswering, BertForQuestionAnswering),
                      (AutoModelForMultipleChoice, BertForMultipleChoice),
                      (AutoModelForSequenceClassification, BertForSequenceClassification)]:
        assert type(auto.from_pretrained(tmp_path)) is cls
        assert type(auto.from_config(BertConfig(**TINY))) is cls
    assert AutoModelForTokenClassification.from_pretrained(tmp_path, num_labels=7).classifier.weight.shape == (7, 32)
    # transformers' MODEL_FOR_PRETRAINING_MAPPING: GPT-2 and T5 by their language-model heads
    gpt = GPTConfig(vocab_size=50, n_positions=16, n_embd=16, n_layer=1, n_head=2)
    assert type(AutoModelForPreTraining.from_config(gpt)) is GPT
    t5 = T5Config(vocab_size=50, d_model=16, d_kv=4, d_ff=24, num_layers=1, num_heads=2)
    assert type(AutoModelForPreTraining.from_config(t5)) is T5ForConditionalGeneration
    with pytest.raises(CheckpointError, match="AutoModelForMultipleChoice has no class for model_type 'gpt2'"):
        AutoModelForMultipleChoice.from_config(gpt)
    # AutoModel builds the head a folder names; the heads are importable from seqlab.models.bert too
    for name, (cls, _) in HEADS.items():
        assert getattr(bert_module, name) is cls
        cfg = {**BertConfig(**TINY).to_dict(), "architectures": [name]}
        assert type(AutoModel.from_config(cfg)) is cls


def one_line_value_error(fn, match: str) -> None:
    with pytest.raises(ValueError, match=match) as e:
        fn()
    assert "\n" not in str(e.value)


def test_wrong_shapes_are_one_line_value_errors():
    seqlab.manual_seed(0)
    cfg = BertConfig(**TINY)
    ids = np.ones((B, L), dtype=np.int64)
    pre = BertForPreTraining(cfg)
    one_line_value_error(lambda: pre(ids, labels=np.zeros((B, L - 1), int), next_sentence_label=np.zeros(B, int)),
                         r"labels has shape \(3, 8\) but input_ids \(3, 9\)")
    one_line_value_error(lambda: pre(ids, labels=ids, next_sentence_label=np.zeros((B, 2), int)),
                         r"next_sentence_label has shape \(3, 2\) but the batch has 3 rows")
    nsp = BertForNextSentencePrediction(cfg)
    one_line_value_error(lambda: nsp(ids, labels=np.zeros(B + 1, int)), r"labels has shape \(4,\)")
    with pytest.raises(TypeError, match="labels must be integers"):
        nsp(ids, labels=np.zeros(B))
    tok = BertForTokenClassification(cfg)
    one_line_value_error(lambda: tok(ids, labels=np.zeros(B, int)), r"labels has shape \(3,\) but input_ids \(3, 9\)")
    qa = BertForQuestionAnswering(cfg)
    one_line_value_error(lambda: qa(ids, start_positions=np.zeros(2, int), end_positions=np.zeros(B, int)),
                         r"start_positions has shape \(2,\) but the batch has 3 rows")
    one_line_value_error(lambda: BertForQuestionAnswering(BertConfig(**TINY, num_labels=3)), "num_labels must be 2")
    with pytest.raises(ConfigError):
        BertForQuestionAnswering(BertConfig(**TINY, num_labels=3))
    mc = BertForMultipleChoice(cfg)
    one_line_value_error(lambda: mc(ids), r"input_ids must be \(batch, num_choices, seq\), got shape \(3, 9\)")
    ids3 = np.ones((2, 3, 5), dtype=np.int64)
    one_line_value_error(lambda: mc(ids3, attention_mask=np.ones((2, 5), int)),
                         r"attention_mask has shape \(2, 5\) but the input \(2, 3, 5\)")
    one_line_value_error(lambda: mc(ids3, token_type_ids=np.ones((6, 5), int)), "token_type_ids has shape")
    one_line_value_error(lambda: mc(ids3, labels=np.zeros(3, int)), r"labels has shape \(3,\) but the batch has 2")
    one_line_value_error(lambda: mc(), "give input_ids or inputs_embeds")
    one_line_value_error(lambda: mc(inputs_embeds=np.zeros((2, 5, 32))), "inputs_embeds must be")
