"""GPT-2's and T5's other transformers classes (GPT2Model, GPT2ForTokenClassification, GPT2ForQuestionAnswering,
GPT2DoubleHeadsModel; T5Model, T5EncoderModel, T5ForSequenceClassification, T5ForTokenClassification,
T5ForQuestionAnswering): each equals transformers' class on the same weights in outputs, loss and gradients, their
folders load both ways, and the auto classes pick them as transformers' do.

Compared in float64. transformers computes T5's RMS-norm variance in float32 even for float64 weights, so T5's
values agree to ~1e-7 of their scale and its gradients to ~1e-5 relative; GPT-2's agree to rounding.
"""
from __future__ import annotations

import numpy as np
import pytest
from models_helpers import hf_save

import seqlab
from seqlab.errors import CheckpointError, ConfigError
from seqlab.hub.keymap import GPT2_TRANSPOSED
from seqlab.hub.safetensors import load_file
from seqlab import models
from seqlab.models import (GPT, AutoModel, AutoModelForQuestionAnswering, AutoModelForTextEncoding,
                           AutoModelForTokenClassification, BertConfig, BertModel, GPT2DoubleHeadsModel,
                           GPT2ForQuestionAnswering, GPT2ForTokenClassification, GPT2Model, GPTConfig, T5Config,
                           T5EncoderModel, T5ForConditionalGeneration, T5ForQuestionAnswering,
                           T5ForSequenceClassification, T5ForTokenClassification, T5Model)
from seqlab.models import gpt as gpt_module
from seqlab.models import t5 as t5_module

V = 60  # vocabulary
GPT_CFG = dict(vocab_size=V, n_positions=32, n_embd=16, n_layer=2, n_head=2, resid_pdrop=0.0, embd_pdrop=0.0,
               attn_pdrop=0.0, summary_first_dropout=0.0, bos_token_id=1, eos_token_id=2, pad_token_id=0)
T5_CFG = dict(vocab_size=V, d_model=16, d_kv=4, d_ff=24, num_layers=2, num_decoder_layers=3, num_heads=2,
              relative_attention_num_buckets=8, relative_attention_max_distance=20, dropout_rate=0.0,
              feed_forward_proj="gated-gelu", decoder_start_token_id=0, pad_token_id=0, eos_token_id=1)
HEADS = {  # transformers' name -> (seqlab's class, the head's own parameter prefixes)
    "GPT2Model": (GPT2Model, ()),
    "GPT2ForTokenClassification": (GPT2ForTokenClassification, ("classifier.",)),
    "GPT2ForQuestionAnswering": (GPT2ForQuestionAnswering, ("qa_outputs.",)),
    "GPT2DoubleHeadsModel": (GPT2DoubleHeadsModel, ("multiple_choice_head.",)),
    "T5Model": (T5Model, ()),
    "T5EncoderModel": (T5EncoderModel, ()),
    "T5ForSequenceClassification": (T5ForSequenceClassification, ("classification_head.",)),
    "T5ForTokenClassification": (T5ForTokenClassification, ("classifier.",)),
    "T5ForQuestionAnswering": (T5ForQuestionAnswering, ("qa_outputs.",)),
}
EXTRA = {"GPT2ForTokenClassification": dict(num_labels=5, classifier_dropout=0.0),
         "T5ForSequenceClassification": dict(num_labels=3), "T5ForTokenClassification": dict(num_labels=5)}
TAKES_CACHE = {"GPT2Model", "GPT2DoubleHeadsModel", "T5Model", "T5ForSequenceClassification", "T5ForQuestionAnswering"}
TOL = {"gpt": 1e-12, "t5": 2e-6}       # of the values' scale
GRAD_TOL = {"gpt": 1e-8, "t5": 1e-5}   # relative, per parameter


def family(name: str) -> str:
    return "gpt" if name.startswith("GPT2") else "t5"


def hf_config(T, name: str, **extra):
    if family(name) == "gpt":
        return T.GPT2Config(**GPT_CFG, **{**EXTRA.get(name, {}), **extra}, attn_implementation="eager")
    return T.T5Config(**T5_CFG, **{**EXTRA.get(name, {}), **extra}, attn_implementation="eager")


def our_config(name: str, **extra):
    if family(name) == "gpt":
        return GPTConfig(**GPT_CFG, **{**EXTRA.get(name, {}), **extra})
    return T5Config(**T5_CFG, **{**EXTRA.get(name, {}), **extra})


def batch(name: str, seed: int = 0, labels: bool = True) -> dict:
    """Inputs (right padding in row 1, and row 2 for T5) and, with `labels`, the class's labels."""
    rng = np.random.default_rng(seed)
    if name == "GPT2DoubleHeadsModel":
        ids = rng.integers(3, V, (2, 3, 6))
        mask = np.ones_like(ids)
        mask[1, :, -2:] = 0
        x = dict(input_ids=ids, attention_mask=mask, token_type_ids=rng.integers(0, 3, ids.shape),
                 mc_token_ids=np.array([[5, 5, 5], [3, 3, 3]]))
        if labels:
            x.update(labels=np.where(mask == 1, ids, -100), mc_labels=np.array([2, 0]))
        return x
    if family(name) == "gpt":
        ids = rng.integers(3, V, (3, 8))
        mask = np.ones_like(ids)
        mask[1, -3:] = 0
        x = dict(input_ids=ids, attention_mask=mask, token_type_ids=rng.integers(0, 3, ids.shape))
    else:
        ids = rng.integers(2, V, (3, 9))
        mask = np.ones_like(ids)
        mask[1, 6:] = 0
        mask[2, 4:] = 0
        ids = np.where(mask == 1, ids, 0)
        ids[np.arange(3), mask.sum(1) - 1] = 1  # each row ends with eos (id 1), as T5's inputs do
        x = dict(input_ids=ids, attention_mask=mask)
        if name == "T5Model":
            dec = rng.integers(2, V, (3, 5))
            dec[:, 0] = 0
            dec_mask = np.ones_like(dec)
            dec_mask[2, 3:] = 0
            x.update(decoder_input_ids=dec, decoder_attention_mask=dec_mask)
    if not labels:
        return x
    T = x["input_ids"].shape[1]
    if name.endswith("TokenClassification"):
        x["labels"] = np.where(mask == 1, rng.integers(0, 5, ids.shape), -100)  # padding not scored
        x["labels"][0, :2] = -100
    elif name.endswith("QuestionAnswering"):
        x["start_positions"] = np.array([2, T + 5, -1])  # beyond the input: ignored; negative: position 0
        x["end_positions"] = np.array([4, T, 3])          # T itself: ignored too
    elif name == "T5ForSequenceClassification":
        x["labels"] = np.array([2, 0, 1])
    return x


def to_torch(torch, x: dict) -> dict:
    return {k: torch.tensor(v) for k, v in x.items()}


def make_pair(T, torch, folder, name: str, **extra):
    """(transformers' class in float64, saved to `folder`, seqlab's loaded from it in float64 by AutoModel)."""
    torch.manual_seed(sum(map(ord, name)))
    hf = getattr(T, name)(hf_config(T, name, **extra)).double()
    return hf, AutoModel.from_pretrained(hf_save(hf, folder), dtype=np.float64, strict=True)


def fields_match(ours, ref, tol: float) -> None:
    """Every field transformers' output has set (but its cache), by name, equal in ours within `tol` of the
    field's scale (tuples element by element)."""
    keys = [k for k in ref.keys() if k != "cache"]
    assert ours.keys() == keys, (ours.keys(), keys)
    for key in keys:
        pairs = list(zip(ours[key], ref[key], strict=True)) if isinstance(ref[key], tuple) else [(ours[key], ref[key])]
        for a, b in pairs:
            b = b.detach().numpy()
            assert a.shape == b.shape, (key, a.shape, b.shape)
            np.testing.assert_allclose(a.numpy(), b, rtol=0, atol=tol * max(1.0, np.abs(b).max()), err_msg=key)


def grads_match(ours, hf, rel: float) -> None:
    """Each parameter's gradient equals torch's (Conv1D's transposed) within `rel` of its largest entry; one that is
    zero in exact arithmetic (QA's bias, attention's key bias) is rounding noise in both, compared against 1e-6 of
    the model's largest gradient instead."""
    ref = {}
    for k, p in hf.named_parameters():
        g = p.grad.detach().numpy()
        ref[k] = g.T if k.endswith(GPT2_TRANSPOSED) else g
    floor = 1e-6 * max(np.abs(g).max() for g in ref.values())
    for name, p in ours.named_parameters():
        assert name in ref and p.grad is not None, name
        err = np.abs(p.grad - ref[name]).max() / max(np.abs(ref[name]).max(), floor)
        assert err <= rel, f"gradient of {name} differs by {err:.2e} (relative)"


def scalar(out, probe):
    """What to differentiate: the loss(es), or for a base model its last hidden state against fixed weights."""
    if "mc_loss" in out.keys():
        return out["loss"] + out["mc_loss"]
    if "loss" in out.keys():
        return out["loss"]
    return (out["last_hidden_state"] * probe).sum()


@pytest.mark.parametrize("name", list(HEADS))
def test_class_equals_transformers_in_outputs_loss_and_gradients(T, torch, tmp_path, name):
    hf, ours = make_pair(T, torch, tmp_path, name)
    assert type(ours) is HEADS[name][0]
    assert ours.loading_info.missing_keys == [] and ours.loading_info.unexpected_keys == []
    hf.train()  # dropout is 0: train mode so both build a graph the same way
    x = batch(name)
    flags = dict(output_attentions=True, output_hidden_states=True)
    out = ours(**x, **flags)
    r = hf(**to_torch(torch, x), **flags, **({"use_cache": False} if name in TAKES_CACHE else {}))
    fields_match(out, r, TOL[family(name)])
    if r.get("loss") is not None:
        assert np.isfinite(out.loss.item()) and abs(out.loss.item() - r.loss.item()) <= 1e-6 * abs(r.loss.item())
    probe = np.random.default_rng(9).standard_normal(tuple(out.to_tuple()[0].shape))
    scalar(out, seqlab.tensor(probe)).backward()
    scalar(r, torch.tensor(probe)).backward()
    grads_match(ours, hf, GRAD_TOL[family(name)])


@pytest.mark.parametrize("name", list(HEADS))
def test_return_dict_false_gives_transformers_tuple(T, torch, tmp_path, name):
    hf, ours = make_pair(T, torch, tmp_path, name)
    x = batch(name, seed=1, labels=False)
    flags = dict(output_attentions=True, output_hidden_states=True, return_dict=False)
    got = ours(**x, **flags)
    with torch.no_grad():
        ref = hf(**to_torch(torch, x), **flags, **({"use_cache": False} if name in TAKES_CACHE else {}))
    assert isinstance(got, tuple) and len(got) == len(ref)
    tol = TOL[family(name)]
    for a, b in zip(got, ref):
        for u, v in (zip(a, b, strict=True) if isinstance(b, tuple) else [(a, b)]):  # GPT-2's () cross-attentions too
            np.testing.assert_allclose(u.numpy(), v.numpy(), rtol=0, atol=tol * max(1.0, np.abs(v.numpy()).max()))
    out = ours(**x)  # no labels, flags or cache: none of their fields
    assert not {"loss", "mc_loss", "attentions", "hidden_states", "past_key_values", "decoder_attentions",
                "encoder_hidden_states"} & set(out.keys())
    assert out[0] is getattr(out, out.keys()[0])


@pytest.mark.parametrize("name", list(HEADS))
def test_seqlab_folder_loads_strictly_into_transformers(T, torch, tmp_path, name):
    seqlab.manual_seed(5)
    cls = HEADS[name][0]
    cfg = our_config(name, summary_activation="tanh") if name == "GPT2DoubleHeadsModel" else our_config(name)
    if name.endswith("TokenClassification"):
        cfg.id2label = {0: "O", 1: "B-PER", 2: "I-PER", 3: "B-LOC", 4: "I-LOC"}
    ours = cls(cfg).eval()
    ours.save_pretrained(tmp_path)
    ref, info = getattr(T, name).from_pretrained(str(tmp_path), output_loading_info=True, dtype=torch.float32)
    assert not info["missing_keys"] and not info["unexpected_keys"] and not info["mismatched_keys"], info
    assert ref.config.id2label == ours.config.id2label and ref.config.num_labels == ours.config.num_labels
    x = batch(name, seed=3, labels=False)
    with torch.no_grad():
        r = ref.eval()(**to_torch(torch, x), **({"use_cache": False} if name in TAKES_CACHE else {}))
    fields_match(ours(**x), r, tol=5e-5)
    again = AutoModel.from_pretrained(tmp_path)
    assert type(again) is cls and again.loading_info.missing_keys == [] and again.loading_info.unexpected_keys == []
    for a, b in zip(again(**x).to_tuple(), ours(**x).to_tuple()):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    if name == "GPT2DoubleHeadsModel":
        assert again.lm_head.weight is again.transformer.wte.weight and ref.config.summary_activation == "tanh"
    if family(name) == "t5":
        body = again.transformer if hasattr(again, "transformer") else again
        assert body.encoder.embed_tokens.weight is body.shared.weight


def test_gpt2_model_and_lm_head_folders_load_into_each_other(T, torch, tmp_path):
    torch.manual_seed(0)
    lm = T.GPT2LMHeadModel(hf_config(T, "GPT2Model")).double().eval()
    hf_save(lm, tmp_path / "lm")
    x = batch("GPT2Model", labels=False)
    # transformers' GPT2LMHeadModel folder as GPT2Model: the "transformer." prefix stripped, lm_head not needed
    base = GPT2Model.from_pretrained(tmp_path / "lm", dtype=np.float64)
    assert base.loading_info.missing_keys == [] and base.loading_info.unexpected_keys == []
    with torch.no_grad():
        ref = T.GPT2Model.from_pretrained(str(tmp_path / "lm"), dtype=torch.float64)(**to_torch(torch, x))
    np.testing.assert_allclose(base(**x).last_hidden_state.numpy(), ref.last_hidden_state.numpy(), rtol=0, atol=1e-12)
    assert type(AutoModel.from_pretrained(tmp_path / "lm")) is GPT  # the folder's own class: the language model
    # and seqlab's GPT2Model folder (no prefix, as transformers writes it) as the language model, in both libraries
    base.save_pretrained(tmp_path / "base")
    assert "wte.weight" in load_file(tmp_path / "base" / "model.safetensors")
    assert type(AutoModel.from_pretrained(tmp_path / "base")) is GPT2Model
    ours_lm = GPT.from_pretrained(tmp_path / "base", dtype=np.float64)
    theirs_lm = T.GPT2LMHeadModel.from_pretrained(str(tmp_path / "base"), dtype=torch.float64).eval()
    ids = x["input_ids"]
    with torch.no_grad():
        np.testing.assert_allclose(ours_lm(ids).logits.numpy(), theirs_lm(torch.tensor(ids)).logits.numpy(),
                                   rtol=0, atol=1e-12)


def test_t5_folders_load_across_classes_as_transformers(T, torch, tmp_path):
    torch.manual_seed(0)
    full = T.T5ForConditionalGeneration(hf_config(T, "T5Model")).double().eval()
    hf_save(full, tmp_path / "full")
    x = batch("T5Model", labels=False)
    for name in ("T5Model", "T5EncoderModel", "T5ForSequenceClassification", "T5ForTokenClassification",
                 "T5ForQuestionAnswering"):
        cls, prefixes = HEADS[name]
        ours = cls.from_pretrained(tmp_path / "full", dtype=np.float64, **EXTRA.get(name, {}))
        missing = ours.loading_info.missing_keys
        assert all(k.startswith(prefixes) for k in missing) and bool(missing) == bool(prefixes), (name, missing)
        unexpected = {k.split(".")[0] for k in ours.loading_info.unexpected_keys}
        assert unexpected == ({"decoder"} if "Encoder" in name or "Token" in name else set()), (name, unexpected)
        if name in ("T5Model", "T5EncoderModel"):  # the bodies give transformers' values
            theirs = getattr(T, name).from_pretrained(str(tmp_path / "full"), dtype=torch.float64).eval()
            inputs = x if name == "T5Model" else {k: x[k] for k in ("input_ids", "attention_mask")}
            with torch.no_grad():
                ref = theirs(**to_torch(torch, inputs)).last_hidden_state.numpy()
            np.testing.assert_allclose(ours(**inputs).last_hidden_state.numpy(), ref, rtol=0, atol=2e-6)
    # a classifier's folder (everything under "transformer.") as the language model: the prefix stripped
    seqlab.manual_seed(1)
    T5ForSequenceClassification(our_config("T5ForSequenceClassification")).save_pretrained(tmp_path / "cls")
    lm = AutoModel.from_pretrained(tmp_path / "cls", dtype=np.float64)
    assert type(lm) is T5ForSequenceClassification
    lm = T5ForConditionalGeneration.from_pretrained(tmp_path / "cls", dtype=np.float64)
    assert lm.loading_info.missing_keys == []
    assert {k.split(".")[0] for k in lm.loading_info.unexpected_keys} == {"classification_head"}
    theirs = T.T5ForConditionalGeneration.from_pretrained(str(tmp_path / "cls"), dtype=torch.float64).eval()
    with torch.no_grad():
        ref = theirs(**to_torch(torch, x)).logits.numpy()
    np.testing.assert_allclose(lm(**x).logits.numpy(), ref, rtol=0, atol=2e-6 * np.abs(ref).max())


@pytest.mark.parametrize("name", [n for n, (_, prefixes) in HEADS.items() if prefixes])
def test_fresh_head_on_a_base_model_folder(tmp_path, name):
    seqlab.manual_seed(1)
    if family(name) == "gpt":
        GPT2Model(our_config("GPT2Model", initializer_range=0.5)).save_pretrained(tmp_path)
        stds = {"GPT2ForTokenClassification": 0.5, "GPT2ForQuestionAnswering": 0.5, "GPT2DoubleHeadsModel": 0.5}
    else:
        T5Model(our_config("T5Model", initializer_factor=2.0)).save_pretrained(tmp_path)
        stds = {"T5ForSequenceClassification": 2.0 * 16 ** -0.5, "T5ForTokenClassification": 2.0,
                "T5ForQuestionAnswering": 2.0 * 16 ** -0.5}  # transformers' per-head init
    cls, prefixes = HEADS[name]
    model = cls.from_pretrained(tmp_path, **({"num_labels": 9} if "Classification" in name else {}))
    missing = model.loading_info.missing_keys
    assert missing and all(k.startswith(prefixes) for k in missing), missing
    for key in missing:
        value = np.asarray(model.state_dict()[key])
        if key.endswith("bias"):
            assert not value.any(), key
        else:  # N(0, std): a few dozen draws for the smallest heads, so a loose bound there
            slack = 0.3 if value.size >= 100 else 0.5
            assert (1 - slack) * stds[name] < value.std() < (1 + slack) * stds[name], (key, value.std())
    if name == "GPT2DoubleHeadsModel":
        assert model.lm_head.weight is model.transformer.wte.weight and model.config.num_labels == 1
        assert model.multiple_choice_head.summary.weight.shape == (1, 16)


def test_auto_classes_pick_transformers_classes(T):
    """Each auto class gives, per family, the class transformers' gives (or refuses the family as it does)."""
    for task in ("AutoModelForTokenClassification", "AutoModelForQuestionAnswering",
                 "AutoModelForSequenceClassification", "AutoModelForMultipleChoice", "AutoModelForTextEncoding",
                 "AutoModelForPreTraining", "AutoModelForCausalLM", "AutoModelForSeq2SeqLM"):
        for ours_cfg, theirs_cfg in ((our_config("GPT2Model"), hf_config(T, "GPT2Model")),
                                     (our_config("T5Model"), hf_config(T, "T5Model"))):
            try:
                want = type(getattr(T, task).from_config(theirs_cfg)).__name__
            except ValueError:
                want = None
            if want is None:
                with pytest.raises(CheckpointError, match=f"{task} has no class for model_type"):
                    getattr(models, task).from_config(ours_cfg)
            else:
                assert getattr(models, task).from_config(ours_cfg).hf_architecture == want, (task, want)
    assert type(AutoModelForTextEncoding.from_config(BertConfig(vocab_size=V, hidden_size=16, num_hidden_layers=1,
                                                                num_attention_heads=2, intermediate_size=24))) \
        is BertModel
    # AutoModel builds the class a folder names; the new classes are importable from gpt.py and t5.py too
    for name, (cls, _) in HEADS.items():
        cfg = {**our_config(name).to_dict(), "architectures": [name]}
        assert type(AutoModel.from_config(cfg)) is cls
        assert getattr(gpt_module if family(name) == "gpt" else t5_module, name) is cls


def test_token_and_qa_auto_classes_on_folders(tmp_path):
    seqlab.manual_seed(2)
    GPT(our_config("GPT2Model")).save_pretrained(tmp_path / "gpt")
    T5ForConditionalGeneration(our_config("T5Model")).save_pretrained(tmp_path / "t5")
    for folder, tok, qa in (("gpt", GPT2ForTokenClassification, GPT2ForQuestionAnswering),
                            ("t5", T5ForTokenClassification, T5ForQuestionAnswering)):
        model = AutoModelForTokenClassification.from_pretrained(tmp_path / folder, num_labels=7)
        assert type(model) is tok and model.classifier.weight.shape == (7, 16)
        assert type(AutoModelForQuestionAnswering.from_pretrained(tmp_path / folder)) is qa
    assert type(AutoModelForTextEncoding.from_pretrained(tmp_path / "t5")) is T5EncoderModel


def test_gpt2_model_cache_and_inputs_embeds_as_transformers(T, torch, tmp_path):
    hf, ours = make_pair(T, torch, tmp_path, "GPT2Model")
    hf.eval()
    rng = np.random.default_rng(4)
    ids = rng.integers(3, V, (2, 7))
    full = ours(ids).last_hidden_state.numpy()
    first = ours(ids[:, :4], use_cache=True)
    step = ours(ids[:, 4:], past_key_values=first.past_key_values, use_cache=True)
    assert step.past_key_values.get_seq_length() == 7
    np.testing.assert_allclose(np.concatenate([first.last_hidden_state.numpy(), step.last_hidden_state.numpy()], 1),
                               full, rtol=0, atol=1e-12)
    emb = ours.wte.weight.numpy()[ids] + 0.01 * rng.standard_normal((2, 7, 16))
    pos, tt = np.array([[3, 4, 5, 6, 7, 8, 9]]), rng.integers(0, V, (2, 7))
    with torch.no_grad():
        ref = hf(inputs_embeds=torch.tensor(emb), position_ids=torch.tensor(pos), token_type_ids=torch.tensor(tt))
    got = ours(inputs_embeds=emb, position_ids=pos, token_type_ids=tt)
    np.testing.assert_allclose(got.last_hidden_state.numpy(), ref.last_hidden_state.numpy(), rtol=0, atol=1e-12)


def test_t5_model_cache_as_a_full_pass(T, torch, tmp_path):
    _, ours = make_pair(T, torch, tmp_path, "T5Model")
    x = batch("T5Model", labels=False)
    x.pop("decoder_attention_mask")
    full = ours(**x).last_hidden_state.numpy()
    dec = x.pop("decoder_input_ids")
    first = ours(**x, decoder_input_ids=dec[:, :3], use_cache=True)
    step = ours(attention_mask=x["attention_mask"], encoder_outputs=(first.encoder_last_hidden_state,),
                decoder_input_ids=dec[:, 3:], past_key_values=first.past_key_values)
    np.testing.assert_allclose(np.concatenate([first.last_hidden_state.numpy(), step.last_hidden_state.numpy()], 1),
                               full, rtol=0, atol=1e-12)


def test_t5_sequence_classification_pools_at_the_last_eos(T, torch, tmp_path):
    hf, ours = make_pair(T, torch, tmp_path, "T5ForSequenceClassification")
    hf.eval()
    x = batch("T5ForSequenceClassification", labels=False)
    ids = x["input_ids"].copy()
    ids[:, 1] = 1  # two eos per row: the last one is read
    with torch.no_grad():
        ref = hf(input_ids=torch.tensor(ids), attention_mask=torch.tensor(x["attention_mask"]), use_cache=False)
    got = ours(ids, x["attention_mask"])
    np.testing.assert_allclose(got.logits.numpy(), ref.logits.numpy(), rtol=0, atol=2e-6)
    # regression (num_labels 1) and multi-label targets follow transformers' rule
    for num_labels, labels in ((1, np.array([0.5, -1.0, 2.0])), (3, np.eye(3)[[0, 2, 1]])):
        hf2, ours2 = make_pair(T, torch, tmp_path / f"n{num_labels}", "T5ForSequenceClassification",
                               num_labels=num_labels)
        hf2.eval()
        with torch.no_grad():
            r = hf2(input_ids=torch.tensor(x["input_ids"]), labels=torch.tensor(labels), use_cache=False).loss.item()
        assert abs(ours2(x["input_ids"], labels=labels).loss.item() - r) <= 1e-6 * abs(r)


@pytest.mark.parametrize("summary", [dict(summary_type="cls_index", summary_activation="tanh"),
                                     dict(summary_type="last", summary_proj_to_labels=False),
                                     dict(summary_type="mean", summary_use_proj=False)])
def test_double_heads_summary_options_as_transformers(T, torch, tmp_path, summary):
    hf, ours = make_pair(T, torch, tmp_path, "GPT2DoubleHeadsModel", **summary)
    hf.eval()
    x = batch("GPT2DoubleHeadsModel", labels=False)
    if summary["summary_type"] == "cls_index":
        x.pop("mc_token_ids")  # default: the last position of each choice
    with torch.no_grad():
        ref = hf(**to_torch(torch, x), use_cache=False)
    got = ours(**x)
    # "last" and "mean" act on axis 1 (the choices) as in transformers, so mc_logits' shape follows theirs
    assert got.mc_logits.shape == tuple(ref.mc_logits.shape)
    np.testing.assert_allclose(got.mc_logits.numpy(), ref.mc_logits.numpy(), rtol=0, atol=1e-12)
    np.testing.assert_allclose(got.logits.numpy(), ref.logits.numpy(), rtol=0, atol=1e-12)


def one_line_value_error(fn, match: str) -> None:
    with pytest.raises(ValueError, match=match) as e:
        fn()
    assert "\n" not in str(e.value)


def test_wrong_inputs_are_one_line_value_errors():
    seqlab.manual_seed(0)
    ids = np.full((3, 8), 5)
    tok = GPT2ForTokenClassification(our_config("GPT2ForTokenClassification"))
    one_line_value_error(lambda: tok(ids, labels=np.zeros((3, 7), int)), r"labels has shape \(3, 7\) but input_ids")
    one_line_value_error(lambda: tok(ids, token_type_ids=np.zeros((3, 7), int)), "token_type_ids has shape")
    one_line_value_error(lambda: tok(), "give input_ids or inputs_embeds")
    qa = GPT2ForQuestionAnswering(our_config("GPT2ForQuestionAnswering"))
    one_line_value_error(lambda: qa(ids, start_positions=np.zeros(2, int), end_positions=np.zeros(3, int)),
                         r"start_positions has shape \(2,\) but the batch has 3 rows")
    dh = GPT2DoubleHeadsModel(our_config("GPT2DoubleHeadsModel"))
    ids3 = np.full((2, 3, 6), 5)
    one_line_value_error(lambda: dh(ids3, mc_token_ids=np.zeros(2, int)), r"mc_token_ids has shape \(2,\)")
    one_line_value_error(lambda: dh(ids3, mc_token_ids=np.full((2, 3), 6)), "mc_token_ids holds 6, outside the 6")
    one_line_value_error(lambda: dh(ids3, mc_labels=np.zeros(3, int)), r"mc_labels has shape \(3,\) but the batch")
    one_line_value_error(lambda: dh(ids3, labels=np.zeros((2, 6), int)), r"labels has shape \(2, 6\)")
    with pytest.raises(ConfigError, match="summary_type 'attn' is not implemented"):
        GPT2DoubleHeadsModel(our_config("GPT2DoubleHeadsModel", summary_type="attn"))
    with pytest.raises(ConfigError, match="summary_type"):
        our_config("GPT2DoubleHeadsModel", summary_type="pool")
    with pytest.raises(ConfigError, match="unknown activation"):
        our_config("GPT2DoubleHeadsModel", summary_activation="softsign")
    x = batch("T5ForSequenceClassification", labels=False)
    cls = T5ForSequenceClassification(our_config("T5ForSequenceClassification"))
    uneven = x["input_ids"].copy()
    uneven[0, 1] = 1
    one_line_value_error(lambda: cls(uneven), r"same number of <eos> tokens \(id 1\); the rows hold \[2, 1, 1\]")
    one_line_value_error(lambda: cls(np.full((2, 5), 7)), "at least one <eos> token")
    one_line_value_error(lambda: cls(x["input_ids"], decoder_input_ids=np.zeros((3, 4), int)),
                         r"decoder_input_ids have shape \(3, 4\) but input_ids \(3, 9\)")
    one_line_value_error(lambda: cls(decoder_input_ids=np.zeros((3, 4), int)), "needs input_ids")
    one_line_value_error(lambda: T5Model(our_config("T5Model"))(x["input_ids"]), "T5Model needs decoder_input_ids")
    one_line_value_error(lambda: T5EncoderModel(our_config("T5Model"))(), "pass input_ids")
    with pytest.raises(ConfigError, match="num_labels must be 2"):
        T5ForQuestionAnswering(our_config("T5ForQuestionAnswering", num_labels=3))
    with pytest.raises(ConfigError, match="classifier_dropout"):
        our_config("T5ForTokenClassification", classifier_dropout=1.5)
