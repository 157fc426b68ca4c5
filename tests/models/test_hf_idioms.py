"""What a transformers user writes, and gets the same from seqlab: config overrides by either name, dtypes,
outputs by position, and generate's defaults — each set against transformers itself."""
from __future__ import annotations

import numpy as np
import pytest
from models_helpers import hf_save

import seqlab
from seqlab.models import AutoModel, BertModel, GPT, GPTConfig
from seqlab.models import generation

GPT_CFG = dict(vocab_size=60, n_positions=32, n_embd=16, n_layer=2, n_head=2, resid_pdrop=0.0, embd_pdrop=0.0,
               attn_pdrop=0.0)
BERT_CFG = dict(vocab_size=50, hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=24,
                max_position_embeddings=32, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)


@pytest.fixture(scope="module")
def gpt_dir(T, torch, tmp_path_factory):
    torch.manual_seed(0)
    return hf_save(T.GPT2LMHeadModel(T.GPT2Config(**GPT_CFG)).eval(), tmp_path_factory.mktemp("gpt"))


@pytest.fixture(scope="module")
def bert_dir(T, torch, tmp_path_factory):
    torch.manual_seed(0)
    return hf_save(T.BertModel(T.BertConfig(**BERT_CFG)).eval(), tmp_path_factory.mktemp("bert"))


def test_config_overrides_by_either_name_win_over_the_file(T, gpt_dir):
    """num_hidden_layers / hidden_size are transformers' other names for GPT-2's n_layer / n_embd: an override by
    either name wins over the file's value, as in transformers (it used to lose to the file's n_layer)."""
    ours = AutoModel.from_pretrained(gpt_dir, num_hidden_layers=1)
    theirs = T.GPT2LMHeadModel.from_pretrained(gpt_dir, num_hidden_layers=1)
    assert ours.config.n_layer == theirs.config.n_layer == 1 and len(ours.transformer.h) == 1
    assert AutoModel.from_pretrained(gpt_dir, n_layer=1).config.num_hidden_layers == 1
    cfg = GPTConfig(**GPT_CFG)
    cfg.hidden_size = 32                     # attribute_map: sets n_embd, as GPT2Config does
    ref = T.GPT2Config(**GPT_CFG)
    ref.hidden_size = 32
    assert cfg.n_embd == ref.n_embd == 32 and "hidden_size" not in vars(cfg)


def test_from_pretrained_refuses_what_it_would_ignore(gpt_dir):
    """A keyword that is no config field was kept and silently ignored (and written back by save_pretrained)."""
    with pytest.raises(TypeError, match="'use_cache': not a field of GPTConfig; seqlab takes it in "
                                        "the model's forward call"):
        AutoModel.from_pretrained(gpt_dir, use_cache=True)
    with pytest.raises(TypeError, match="unexpected keyword argument 'layers_to_drop'"):
        AutoModel.from_pretrained(gpt_dir, layers_to_drop=1)


def test_dtype_names_auto_and_torch_dtypes(torch, gpt_dir, tmp_path):
    f64 = AutoModel.from_pretrained(gpt_dir, dtype=np.float64)
    folder = f64.save_pretrained(tmp_path / "f64")
    assert AutoModel.from_pretrained(folder).lm_head.weight.dtype == np.float32          # the default
    assert AutoModel.from_pretrained(folder, dtype="auto").lm_head.weight.dtype == np.float64
    assert AutoModel.from_pretrained(gpt_dir, dtype="auto").lm_head.weight.dtype == np.float32
    for name in (torch.float64, "float64", np.float64):
        assert AutoModel.from_pretrained(gpt_dir, dtype=name).lm_head.weight.dtype == np.float64
    assert AutoModel.from_pretrained(gpt_dir, torch_dtype=torch.float64).lm_head.weight.dtype == np.float64
    for bad in (np.int64, "bfloat16", torch.float16):
        with pytest.raises(ValueError, match="dtype must be float32 or float64"):
            AutoModel.from_pretrained(gpt_dir, dtype=bad)
    with pytest.raises(TypeError, match="not both"):
        AutoModel.from_pretrained(gpt_dir, dtype="float32", torch_dtype="float64")


def test_outputs_by_position_as_transformers(T, torch, gpt_dir, bert_dir):
    """out[0], out[1] and to_tuple() hold what transformers' hold at those positions (seqlab's extra
    last_hidden_state of a language model is left out)."""
    ids = np.random.default_rng(0).integers(0, 50, (2, 7))
    cases = [
        (BertModel.from_pretrained(bert_dir, dtype=np.float64), T.BertModel.from_pretrained(bert_dir).double(), {}),
        (GPT.from_pretrained(gpt_dir, dtype=np.float64), T.GPT2LMHeadModel.from_pretrained(gpt_dir).double(),
         {"labels": ids}),
    ]
    for ours, theirs, kw in cases:
        a = ours(ids, **kw)
        with torch.no_grad():
            b = theirs(torch.tensor(ids), use_cache=False, **{k: torch.tensor(v) for k, v in kw.items()})
        assert len(a.to_tuple()) == len(b.to_tuple()) == 2
        for i in range(2):
            np.testing.assert_allclose(a[i].numpy(), b[i].numpy(), rtol=1e-6, atol=1e-8)
        first, second = a[:2]
        assert first is a.to_tuple()[0] and second is a[1]
    with pytest.raises(IndexError):
        a[2]


def test_sampling_keeps_transformers_top_k_of_50_and_refuses_beam_sampling(monkeypatch):
    m = GPT(GPTConfig(vocab_size=300, n_positions=32, n_embd=16, n_layer=1, n_head=2, eos_token_id=None))
    ids = np.zeros((1, 3), dtype=np.int64)
    seen = []
    original = generation.filter_logits
    monkeypatch.setattr(generation, "filter_logits", lambda x, t, k, p: seen.append(k) or original(x, t, k, p))
    m.generate(ids, max_new_tokens=3, do_sample=True, seed=0)
    m.generate(ids, max_new_tokens=2, do_sample=True, top_k=0, seed=0)
    assert seen == [50, 50, 50, 0, 0]        # transformers' GenerationConfig.top_k unless given (0: no limit)
    with pytest.raises(ValueError, match="give num_beams > 1 or do_sample=True, not both"):
        m.generate(ids, max_new_tokens=3, num_beams=3, do_sample=True, top_k=5)


def _same_states(ours, theirs, rtol=1e-9):
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(a.numpy(), b.detach().numpy(), rtol=rtol, atol=rtol)


@pytest.mark.parametrize("head", ["GPT2LMHeadModel", "GPT2ForSequenceClassification", "BertForMaskedLM",
                                  "BertForSequenceClassification", "T5ForConditionalGeneration"])
def test_output_hidden_states_on_every_head_as_transformers(T, torch, tmp_path, head):
    """output_hidden_states=True on each head: transformers' tuple (embeddings, each layer; GPT-2 and T5 end
    with the final norm's output), and at transformers' tuple positions."""
    torch.manual_seed(0)
    if head.startswith("GPT2"):
        cfg = T.GPT2Config(**GPT_CFG, pad_token_id=0)
    elif head.startswith("Bert"):
        cfg = T.BertConfig(**BERT_CFG)
    else:
        cfg = T.T5Config(vocab_size=40, d_model=16, d_kv=8, d_ff=24, num_layers=2, num_decoder_layers=3, num_heads=2,
                         dropout_rate=0.0, decoder_start_token_id=0, pad_token_id=0)
    hf = getattr(T, head)(cfg).double().eval()
    ours = AutoModel.from_pretrained(hf_save(hf, tmp_path), dtype=np.float64)
    ids = np.random.default_rng(1).integers(1, 40, (2, 6))
    kw = {"decoder_input_ids": ids[:, :4]} if head.startswith("T5") else {}
    out = ours(ids, output_hidden_states=True, **kw)
    no_cache = {} if head.startswith("Bert") else {"use_cache": False}   # transformers' default is a cache
    with torch.no_grad():
        ref = hf(torch.tensor(ids), output_hidden_states=True, **no_cache,
                 **{k: torch.tensor(v) for k, v in kw.items()})
    if head.startswith("T5"):  # transformers takes T5's RMS-norm variance in float32: 1e-6, not 1e-9
        _same_states(out.encoder_hidden_states, ref.encoder_hidden_states, rtol=1e-6)
        _same_states(out.decoder_hidden_states, ref.decoder_hidden_states, rtol=1e-6)
        assert len(out.decoder_hidden_states) == 4 and out.to_tuple()[1] is out.decoder_hidden_states
    else:
        _same_states(out.hidden_states, ref.hidden_states)
        assert len(out.hidden_states) == 3 and out[1] is out.hidden_states   # (logits, hidden_states)
    assert len(out.to_tuple()) == len(ref.to_tuple())
    plain = ours(ids, **kw)
    assert all(v is None for k, v in vars(plain).items() if "hidden_states" in k)


def test_auto_model_for_task_classes(T, torch, gpt_dir, bert_dir, tmp_path):
    """AutoModelForCausalLM / MaskedLM / SequenceClassification / Seq2SeqLM give the task's class whatever head
    the folder holds (a BertModel folder becomes a masked LM with transformers' fresh head), as transformers'."""
    from seqlab.errors import CheckpointError
    from seqlab.models import (AutoModelForCausalLM, AutoModelForMaskedLM, AutoModelForSeq2SeqLM,
                               AutoModelForSequenceClassification, BertForMaskedLM, BertForSequenceClassification,
                               GPTForSequenceClassification, T5ForConditionalGeneration)

    assert type(AutoModelForCausalLM.from_pretrained(gpt_dir)) is GPT
    mlm = AutoModelForMaskedLM.from_pretrained(bert_dir)
    ref = T.AutoModelForMaskedLM.from_pretrained(bert_dir)
    assert type(mlm) is BertForMaskedLM and type(ref).__name__ == "BertForMaskedLM"
    np.testing.assert_allclose(mlm.bert.embeddings.word_embeddings.weight.numpy(),
                               ref.bert.embeddings.word_embeddings.weight.detach().numpy())
    clf = AutoModelForSequenceClassification.from_pretrained(gpt_dir, num_labels=3)
    assert type(clf) is GPTForSequenceClassification and clf.score.weight.shape == (3, 16)
    assert type(AutoModelForSequenceClassification.from_pretrained(bert_dir)) is BertForSequenceClassification
    torch.manual_seed(0)
    t5 = T.T5ForConditionalGeneration(T.T5Config(vocab_size=40, d_model=16, d_kv=8, d_ff=24, num_layers=1,
                                                 num_heads=2, decoder_start_token_id=0, pad_token_id=0))
    t5_dir = hf_save(t5, tmp_path / "t5")
    assert type(AutoModelForSeq2SeqLM.from_pretrained(t5_dir)) is T5ForConditionalGeneration
    with pytest.raises(CheckpointError, match="AutoModelForCausalLM has no class for model_type 'bert'; it takes "
                                              "gpt2"):
        AutoModelForCausalLM.from_pretrained(bert_dir)
    fresh = AutoModelForCausalLM.from_config(GPTConfig(**GPT_CFG))      # a config object, or a dict
    assert type(fresh) is GPT and type(AutoModel.from_config(GPTConfig(**GPT_CFG))) is GPT


def test_everyday_model_methods_and_t5_encoder_outputs(T, torch, gpt_dir, tmp_path):
    m = AutoModel.from_pretrained(gpt_dir)
    ref = T.GPT2LMHeadModel.from_pretrained(gpt_dir)
    assert m.device == "cpu" and m.dtype == np.float32
    assert m.get_input_embeddings() is m.transformer.wte
    assert m.num_parameters() == ref.num_parameters()                  # the tied head counted once
    torch.manual_seed(0)
    t5 = T.T5ForConditionalGeneration(T.T5Config(vocab_size=40, d_model=16, d_kv=8, d_ff=24, num_layers=1,
                                                 num_heads=2, decoder_start_token_id=0, pad_token_id=0,
                                                 dropout_rate=0.0))
    ours = AutoModel.from_pretrained(hf_save(t5, tmp_path / "t5"))
    ids = np.random.default_rng(0).integers(1, 40, (2, 5))
    enc = ours.get_encoder()(input_ids=ids)
    a = ours(encoder_outputs=(enc.last_hidden_state,), decoder_input_ids=ids[:, :3])   # transformers' tuple form
    b = ours(ids, decoder_input_ids=ids[:, :3])
    np.testing.assert_allclose(a.logits.numpy(), b.logits.numpy(), rtol=1e-6)


def test_masked_lm_labels_are_named_in_errors(bert_dir):
    from seqlab.models import BertForMaskedLM

    m = BertForMaskedLM.from_pretrained(bert_dir)
    ids = np.ones((2, 5), dtype=np.int64)
    with pytest.raises(TypeError, match="labels must be integers"):
        m(ids, labels=ids.astype(np.float32))
    with pytest.raises(ValueError, match=r"labels has shape \(2, 4\) but input_ids \(2, 5\)"):
        m(ids, labels=ids[:, :4])


def test_a_foreign_cache_is_a_clear_type_error(T, torch, gpt_dir):
    m = AutoModel.from_pretrained(gpt_dir)
    ids = np.ones((1, 3), dtype=np.int64)
    with torch.no_grad():
        theirs = T.GPT2LMHeadModel.from_pretrained(gpt_dir)(torch.tensor(ids), use_cache=True).past_key_values
    for bad in (theirs, ((np.zeros((1, 2, 3, 8)),) * 2,) * 2):
        with pytest.raises(TypeError, match="past_key_values must be a seqlab KVCache"):
            m(ids[:, -1:], past_key_values=bad)


@pytest.mark.parametrize("family", ["bert", "gpt"])
def test_inputs_embeds_and_position_ids_as_transformers(T, torch, tmp_path, family):
    """inputs_embeds (B, T, C) in place of the ids' word vectors, and explicit position_ids, give transformers'
    hidden states; the embeddings get their gradient; both or neither of ids and embeds is an error."""
    torch.manual_seed(0)
    if family == "bert":
        hf = T.BertModel(T.BertConfig(**BERT_CFG)).double().eval()
        ours = BertModel.from_pretrained(hf_save(hf, tmp_path), dtype=np.float64)
        table = ours.embeddings.word_embeddings.weight.numpy()
    else:
        hf = T.GPT2Model(T.GPT2Config(**GPT_CFG)).double().eval()
        ours = GPT.from_pretrained(hf_save(hf, tmp_path), dtype=np.float64)
        table = ours.transformer.wte.weight.numpy()
    hidden = lambda **kw: ours(**kw).last_hidden_state                           # noqa: E731  (GPT's too)
    rng = np.random.default_rng(0)
    ids = rng.integers(0, 50, (2, 6))
    emb = table[ids] + 0.01 * rng.standard_normal((2, 6, 16))
    pos = np.array([[3, 4, 5, 6, 7, 8], [0, 1, 2, 3, 4, 5]])
    with torch.no_grad():
        ref = hf(inputs_embeds=torch.tensor(emb), position_ids=torch.tensor(pos)).last_hidden_state.numpy()
    x = seqlab.tensor(emb, requires_grad=True)
    h = hidden(inputs_embeds=x, position_ids=pos)
    np.testing.assert_allclose(h.numpy(), ref, rtol=1e-9, atol=1e-10)
    h.sum().backward()
    assert x.grad.shape == (2, 6, 16) and np.abs(x.grad).sum() > 0
    np.testing.assert_allclose(hidden(inputs_embeds=table[ids]).numpy(), hidden(input_ids=ids).numpy(), rtol=1e-12)
    for bad in ({"input_ids": ids, "inputs_embeds": emb}, {}):
        with pytest.raises(ValueError, match="give input_ids or inputs_embeds, exactly one"):
            ours(**bad)
    with pytest.raises(ValueError, match="position 40 is outside the model's 32 positions"):
        ours(ids, position_ids=np.full((2, 6), 40))


@pytest.mark.parametrize("head", ["GPT2LMHeadModel", "BertForMaskedLM", "T5ForConditionalGeneration"])
@pytest.mark.parametrize("delta", [3, -2])
def test_resize_token_embeddings_as_transformers(T, torch, tmp_path, head, delta):
    """Grown or cut to vocab + delta rows: the same shapes and kept rows as transformers', the tie kept (GPT-2,
    BERT) or both matrices resized (T5 v1.1, untied), BERT's decoder bias resized, config.vocab_size updated,
    and the model runs on the new ids."""
    torch.manual_seed(0)
    if head.startswith("GPT2"):
        hf = T.GPT2LMHeadModel(T.GPT2Config(**GPT_CFG))
    elif head.startswith("Bert"):
        hf = T.BertForMaskedLM(T.BertConfig(**BERT_CFG))
    else:
        hf = T.T5ForConditionalGeneration(T.T5Config(vocab_size=40, d_model=16, d_kv=8, d_ff=24, num_layers=1,
                                                     num_heads=2, decoder_start_token_id=0, pad_token_id=0,
                                                     tie_word_embeddings=False))
    ours = AutoModel.from_pretrained(hf_save(hf, tmp_path))
    old = ours.get_input_embeddings().weight.numpy().copy()
    n = hf.config.vocab_size + delta
    hf.resize_token_embeddings(n)
    emb = ours.resize_token_embeddings(n)
    assert emb is ours.get_input_embeddings() and ours.config.vocab_size == hf.config.vocab_size == n
    assert emb.weight.shape == tuple(hf.get_input_embeddings().weight.shape)
    keep = min(n, old.shape[0])
    np.testing.assert_array_equal(emb.weight.numpy()[:keep], old[:keep])
    np.testing.assert_allclose(emb.weight.numpy()[:keep], hf.get_input_embeddings().weight.detach().numpy()[:keep],
                               rtol=1e-6)
    out, hf_out = ours.get_output_embeddings(), hf.get_output_embeddings()
    assert out.weight.shape == tuple(hf_out.weight.shape)
    assert (out.weight is emb.weight) == (hf_out.weight is hf.get_input_embeddings().weight)
    if hf_out.bias is not None:
        assert out.bias.shape == tuple(hf_out.bias.shape) and ours.cls.predictions.bias is out.bias
    ids = np.array([[n - 1, 1, 2]])
    logits = ours(ids, decoder_input_ids=ids).logits if head.startswith("T5") else ours(ids).logits
    assert logits.shape[-1] == n


def test_num_parameters_options_and_config_folders_as_transformers(T, gpt_dir, tmp_path):
    """Both found missing by an audit: `num_parameters(only_trainable=, exclude_embeddings=)`, and
    `GPT2Config.from_pretrained(folder)` / `config.save_pretrained(folder)`."""
    hf, ours = T.GPT2LMHeadModel.from_pretrained(str(gpt_dir)), AutoModel.from_pretrained(gpt_dir)
    hf.transformer.wpe.weight.requires_grad = ours.transformer.wpe.weight.requires_grad = False
    for kw in ({}, {"only_trainable": True}, {"exclude_embeddings": True},
               {"only_trainable": True, "exclude_embeddings": True}):
        assert ours.num_parameters(**kw) == hf.num_parameters(**kw), kw
    assert ours.num_parameters(only_trainable=True) < ours.num_parameters()
    config = GPTConfig.from_pretrained(gpt_dir, n_layer=1)
    assert config.n_layer == 1 and config.n_embd == hf.config.n_embd
    config.save_pretrained(tmp_path / "cfg")
    again = T.GPT2Config.from_pretrained(str(tmp_path / "cfg"))
    assert (again.n_layer, again.n_embd, again.vocab_size) == (1, hf.config.n_embd, hf.config.vocab_size)


def test_gpt_generate_without_a_prompt_starts_from_bos_as_transformers(T, torch, tmp_path):
    """transformers' generate() with no input_ids begins at bos_token_id (an audit found a TypeError)."""
    torch.manual_seed(0)
    cfg = T.GPT2Config(vocab_size=60, n_positions=32, n_embd=16, n_layer=2, n_head=2, bos_token_id=3, eos_token_id=59)
    folder = hf_save(T.GPT2LMHeadModel(cfg).eval(), tmp_path / "gpt")
    hf, ours = T.GPT2LMHeadModel.from_pretrained(str(folder)).eval(), AutoModel.from_pretrained(folder)
    want = hf.generate(max_new_tokens=6, do_sample=False, pad_token_id=0).numpy()
    got = ours.generate(max_new_tokens=6, pad_token_id=0)
    np.testing.assert_array_equal(np.asarray(got), want)
    assert want[0, 0] == 3
    ours.config.bos_token_id = None
    with pytest.raises(ValueError, match="bos_token_id, which is None"):
        ours.generate(max_new_tokens=2)


@pytest.mark.parametrize("new, multiple", [(63, 8), (None, 16), (64, 8)])
def test_resize_token_embeddings_pads_to_a_multiple_as_transformers(T, gpt_dir, new, multiple):
    hf, ours = T.GPT2LMHeadModel.from_pretrained(str(gpt_dir)), AutoModel.from_pretrained(gpt_dir)
    hf.resize_token_embeddings(new, pad_to_multiple_of=multiple)
    ours.resize_token_embeddings(new, pad_to_multiple_of=multiple)
    assert ours.config.vocab_size == hf.config.vocab_size == ours.get_input_embeddings().num_embeddings
    assert ours.config.vocab_size % multiple == 0
    with pytest.raises(ValueError, match="pad_to_multiple_of must be a positive int"):
        ours.resize_token_embeddings(70, pad_to_multiple_of=0)
