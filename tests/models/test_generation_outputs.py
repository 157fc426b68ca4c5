"""generate(return_dict_in_generate=True, output_scores=True, output_logits=True) and compute_transition_scores
give transformers' output objects and numbers, for GPT-2 and T5: greedy search, sampling and beam search.

Tiny random models in float64 (the scores are float32 in both libraries). Sampling draws different tokens
from a different RNG, so transformers is made to draw seqlab's tokens (its `torch.multinomial` returns
them, after checking each has probability > 0): then every recorded score must agree.
"""
from __future__ import annotations

import numpy as np
import pytest
from models_helpers import GEN_GPT_CFG, GEN_T5_CFG, gpt_batch, hf_save, t5_batch

from seqlab.models import AutoModel
from seqlab.models.outputs import (GenerateBeamDecoderOnlyOutput, GenerateBeamEncoderDecoderOutput,
                                   GenerateDecoderOnlyOutput, GenerateEncoderDecoderOutput)

GPT_CFG, T5_CFG = GEN_GPT_CFG, GEN_T5_CFG
NEW = 10
ALL = dict(return_dict_in_generate=True, output_scores=True, output_logits=True)


@pytest.fixture(scope="module")
def gpt(T, torch, tmp_path_factory):
    torch.manual_seed(0)
    hf = T.GPT2LMHeadModel(T.GPT2Config(**GPT_CFG)).double().eval()
    return hf, AutoModel.from_pretrained(hf_save(hf, tmp_path_factory.mktemp("gpt2")), dtype=np.float64)


@pytest.fixture(scope="module")
def t5(T, torch, tmp_path_factory):
    torch.manual_seed(1)
    hf = T.T5ForConditionalGeneration(T.T5Config(**T5_CFG)).double().eval()
    return hf, AutoModel.from_pretrained(hf_save(hf, tmp_path_factory.mktemp("t5")), dtype=np.float64)


def theirs(torch, hf, ids, mask, **kw):
    kw.setdefault("do_sample", False)
    with torch.no_grad():
        return hf.generate(torch.tensor(ids), attention_mask=torch.tensor(mask), **kw)


def assert_steps_equal(ours, ref):
    """Per-step (N, V) arrays: float32 NumPy, same count and shapes, same values (−∞ where transformers has it)."""
    assert (ours is None) == (ref is None)
    if ours is None:
        return
    assert isinstance(ours, tuple) and len(ours) == len(ref)
    for a, b in zip(ours, ref):
        assert isinstance(a, np.ndarray) and a.dtype == np.float32 and a.shape == tuple(b.shape)
        np.testing.assert_allclose(a, b.numpy(), rtol=2e-5, atol=2e-5)


def assert_same_output(ours, ref):
    """seqlab's output object holds transformers' fields with transformers' values (its cache aside)."""
    assert type(ours).__name__ == type(ref).__name__
    assert ours.keys() == [k for k in ref.keys() if k != "cache"]
    assert isinstance(ours.sequences, np.ndarray) and ours.sequences.dtype == np.int64
    np.testing.assert_array_equal(ours.sequences, ref.sequences.numpy())
    assert_steps_equal(ours.scores, ref.scores)
    assert_steps_equal(ours.logits, ref.logits)
    if "beam_indices" in ref.keys():
        assert ours.beam_indices.dtype == np.int64
        np.testing.assert_array_equal(ours.beam_indices, ref.beam_indices.numpy())
    if ref.get("sequences_scores") is not None:
        assert ours.sequences_scores.dtype == np.float32
        np.testing.assert_allclose(ours.sequences_scores, ref.sequences_scores.numpy(), rtol=1e-5, atol=1e-5)


def assert_same_transition_scores(pair, ours, ref, beam: bool, stops=()):
    """Ours on our output equals transformers' on its own, plain and normalized; every token chosen while its
    row ran has a finite score (an ended row's padding may be −∞ after top-k, as in transformers)."""
    hf, model = pair
    for normalize in (False, True):
        got = model.compute_transition_scores(ours.sequences, ours.scores, ours.beam_indices if beam else None,
                                              normalize_logits=normalize)
        want = hf.compute_transition_scores(ref.sequences, ref.scores, ref.beam_indices if beam else None,
                                            normalize_logits=normalize).numpy()
        assert got.dtype == np.float32 and got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-5)
        new = ours.sequences[:, ours.sequences.shape[1] - got.shape[1]:]
        ended = np.cumsum(np.isin(new, stops), 1) - np.isin(new, stops) > 0   # after the row's end token
        assert np.isfinite(got[~ended]).all()
    return got


def emitted_stops(model, ids, mask, steps, start):
    """End tokens the greedy model really emits: row i's token at new step steps[i], so rows end at different
    steps (or earlier, where the token comes sooner)."""
    out = model.generate(ids, mask, max_new_tokens=NEW)
    return sorted({int(out[i, start + s]) for i, s in enumerate(steps)})


def forced_multinomial(torch, monkeypatch, new_tokens: np.ndarray, eos: list[int]):
    """Make transformers' sampling draw `new_tokens` (N, n), seqlab's draws, one column per step; each drawn
    token of a row still running must have probability > 0 under transformers' processed scores."""
    step = [0]

    def draw(probs, num_samples=1, **kw):
        j = step[0]
        step[0] += 1
        tok = torch.as_tensor(new_tokens[:, j])
        running = ~np.isin(new_tokens[:, :j], eos).any(1)
        assert (probs[torch.arange(len(tok)), tok].numpy()[running] > 0).all(), f"step {j}: a token seqlab drew is " \
                                                                               f"impossible for transformers"
        return tok[:, None]

    monkeypatch.setattr(torch, "multinomial", draw)
    return step


# ---- GPT-2 ------------------------------------------------------------------------------------------
def test_gpt_greedy_outputs_equal_transformers(torch, gpt):
    hf, ours = gpt
    ids, mask = gpt_batch()
    kw = dict(max_new_tokens=NEW, repetition_penalty=1.5, no_repeat_ngram_size=2)   # scores != logits
    out = ours.generate(ids, mask, **kw, **ALL)
    ref = theirs(torch, hf, ids, mask, **kw, **ALL)
    assert isinstance(out, GenerateDecoderOnlyOutput)
    assert_same_output(out, ref)
    assert len(out.scores) == NEW and out.scores[0].shape == (3, GPT_CFG["vocab_size"])
    assert not np.array_equal(out.scores[1], out.logits[1])                  # processed vs raw
    assert np.isneginf(out.scores[3]).any()                                  # an n-gram banned
    # by attribute, key and position; the ids are those of the plain call
    assert out[0] is out.sequences and out["scores"] is out.scores and out.to_tuple()[2] is out.logits
    np.testing.assert_array_equal(out.sequences, ours.generate(ids, mask, **kw))
    scores = assert_same_transition_scores(gpt, out, ref, beam=False)
    assert (scores <= 0).all()                                               # log-probabilities once normalized


@pytest.mark.parametrize("flags", [dict(return_dict_in_generate=True),
                                   dict(return_dict_in_generate=True, output_logits=True),
                                   dict(output_scores=True, output_logits=True)])
def test_which_fields_are_set_follows_the_flags(torch, gpt, flags):
    hf, ours = gpt
    ids, mask = gpt_batch()
    out = ours.generate(ids, mask, max_new_tokens=3, **flags)
    ref = theirs(torch, hf, ids, mask, max_new_tokens=3, **flags)
    if not flags.get("return_dict_in_generate"):                             # the ids, as transformers
        assert isinstance(out, np.ndarray)
        np.testing.assert_array_equal(out, ref.numpy())
        return
    assert_same_output(out, ref)
    assert out.scores is None and (out.logits is None) == (not flags.get("output_logits"))


def test_gpt_greedy_scores_stop_when_every_row_has_ended(torch, gpt):
    """Rows end at different steps; ended rows keep being recorded (their token is padding) until all have
    ended, then recording stops with the loop, as in transformers."""
    hf, ours = gpt
    ids, mask = gpt_batch()
    stops = emitted_stops(ours, ids, mask, [1, 3, 5], 8)
    kw = dict(max_new_tokens=NEW, eos_token_id=stops, pad_token_id=0)
    out = ours.generate(ids, mask, **kw, **ALL)
    ref = theirs(torch, hf, ids, mask, **kw, **ALL)
    assert_same_output(out, ref)
    assert len(out.scores) == out.sequences.shape[1] - 8 < NEW
    scores = assert_same_transition_scores(gpt, out, ref, beam=False)
    assert scores.shape == (3, len(out.scores))


def test_gpt_sampling_records_the_warped_scores_of_the_drawn_tokens(torch, gpt, monkeypatch):
    """Temperature, top-k and top-p act after the processors; transformers records the scores after all of
    them (removed tokens −∞), and seqlab the same, for the tokens seqlab drew."""
    hf, ours = gpt
    ids, mask = gpt_batch()
    stops = emitted_stops(ours, ids, mask, [2, 4, 6], 8)
    kw = dict(max_new_tokens=NEW, do_sample=True, temperature=0.7, top_k=12, top_p=0.9, repetition_penalty=1.3,
              num_return_sequences=2, eos_token_id=stops, pad_token_id=0)
    out = ours.generate(ids, mask, seed=0, **kw, **ALL)
    assert out.sequences.shape[0] == 6 and out.scores[0].shape == (6, GPT_CFG["vocab_size"])
    kept = [np.isfinite(s).sum(1) for s in out.scores]
    assert all((k >= 1).all() and (k <= 12).all() for k in kept) and any((k < 12).any() for k in kept)  # top-p cut
    steps = forced_multinomial(torch, monkeypatch, out.sequences[:, 8:], stops)
    ref = theirs(torch, hf, ids, mask, **kw, **ALL)
    assert steps[0] == len(out.scores)
    assert_same_output(out, ref)
    assert_same_transition_scores(gpt, out, ref, beam=False, stops=stops)


def test_gpt_top_k_1_sampling_equals_transformers_directly(torch, gpt):
    hf, ours = gpt
    ids, mask = gpt_batch()
    kw = dict(max_new_tokens=6, do_sample=True, top_k=1, temperature=0.5, num_return_sequences=2)
    out = ours.generate(ids, mask, seed=3, **kw, **ALL)
    ref = theirs(torch, hf, ids, mask, **kw, **ALL)
    assert_same_output(out, ref)
    assert all((np.isfinite(s).sum(1) == 1).all() for s in out.scores)       # one token left at each step


@pytest.mark.parametrize("kw", [dict(num_beams=3),
                                dict(num_beams=4, num_return_sequences=3, length_penalty=0.7),
                                dict(num_beams=3, num_return_sequences=2, repetition_penalty=1.2, length_penalty=2.0,
                                     no_repeat_ngram_size=2, min_new_tokens=2, use_cache=False)])
def test_gpt_beam_search_outputs_equal_transformers(torch, gpt, kw):
    """With end tokens the model emits: hypotheses of different lengths, beam_indices padded with -1."""
    hf, ours = gpt
    ids, mask = gpt_batch()
    stops = emitted_stops(ours, ids, mask, [0, 2, 4], 8)
    pad = next(t for t in range(3, 50) if t not in stops)   # transformers fills with eos when the pad id is 0
    kw = dict(max_new_tokens=NEW, eos_token_id=stops, pad_token_id=pad, **kw)
    out = ours.generate(ids, mask, **kw, **ALL)
    ref = theirs(torch, hf, ids, mask, **kw, **ALL)
    assert isinstance(out, GenerateBeamDecoderOnlyOutput)
    assert_same_output(out, ref)
    n = kw.get("num_return_sequences", 1)
    assert out.beam_indices.shape == (3 * n, out.sequences.shape[1] - 8)
    assert out.scores[0].shape == (3 * kw["num_beams"], GPT_CFG["vocab_size"])
    scores = assert_same_transition_scores(gpt, out, ref, beam=True)
    # transformers' recipe: a hypothesis's score is its summed log-probabilities over its length ** penalty
    scores = ours.compute_transition_scores(out.sequences, out.scores, out.beam_indices)
    lengths = (out.beam_indices >= 0).sum(1)
    assert (lengths < lengths.max()).any() or kw["num_beams"] == 3           # some hypotheses ended early
    np.testing.assert_allclose(scores.sum(1) / lengths ** kw.get("length_penalty", 1.0), out.sequences_scores,
                               rtol=1e-4)
    np.testing.assert_array_equal(out.sequences, ours.generate(ids, mask, **kw))


def test_beam_search_without_output_scores_still_gives_beam_indices(torch, gpt):
    hf, ours = gpt
    ids, mask = gpt_batch()
    kw = dict(max_new_tokens=4, num_beams=2, pad_token_id=5, return_dict_in_generate=True)
    out = ours.generate(ids, mask, **kw)
    ref = theirs(torch, hf, ids, mask, **kw)
    assert_same_output(out, ref)
    assert out.sequences_scores is None and out.scores is None and out.beam_indices.shape == (3, 4)


# ---- T5 ------------------------------------------------------------------------------------------
def test_t5_greedy_and_top_k_1_sampling_equal_transformers(torch, t5):
    hf, ours = t5
    ids, mask = t5_batch()
    stops = emitted_stops(ours, ids, mask, [2, 4, 6], 1)
    for kw in (dict(max_new_tokens=NEW, repetition_penalty=4.0, eos_token_id=stops),
               dict(max_new_tokens=NEW, do_sample=True, top_k=1, num_return_sequences=2)):
        out = ours.generate(ids, mask, seed=0, **kw, **ALL)
        ref = theirs(torch, hf, ids, mask, **kw, **ALL)
        assert isinstance(out, GenerateEncoderDecoderOutput)
        assert_same_output(out, ref)
        assert (out.sequences[:, 0] == T5_CFG["decoder_start_token_id"]).all()
        assert len(out.scores) == out.sequences.shape[1] - 1
        assert_same_transition_scores(t5, out, ref, beam=False)


def test_t5_sampling_records_the_warped_scores_of_the_drawn_tokens(torch, t5, monkeypatch):
    hf, ours = t5
    ids, mask = t5_batch()
    kw = dict(max_new_tokens=NEW, do_sample=True, temperature=2.0, top_k=8, top_p=0.8, num_return_sequences=2)
    out = ours.generate(ids, mask, seed=1, **kw, **ALL)
    forced_multinomial(torch, monkeypatch, out.sequences[:, 1:], [T5_CFG["eos_token_id"]])
    ref = theirs(torch, hf, ids, mask, **kw, **ALL)
    assert_same_output(out, ref)
    assert_same_transition_scores(t5, out, ref, beam=False, stops=[T5_CFG["eos_token_id"]])


@pytest.mark.parametrize("kw", [dict(num_beams=3, num_return_sequences=2, length_penalty=0.5),
                                dict(num_beams=2, early_stopping=True)])
def test_t5_beam_search_outputs_equal_transformers(torch, t5, kw):
    hf, ours = t5
    ids, mask = t5_batch()
    stops = emitted_stops(ours, ids, mask, [1, 3, 5], 1)
    pad = next(t for t in range(2, 40) if t not in stops)
    kw = dict(max_new_tokens=8, eos_token_id=stops, pad_token_id=pad, **kw)
    out = ours.generate(ids, mask, **kw, **ALL)
    ref = theirs(torch, hf, ids, mask, **kw, **ALL)
    assert isinstance(out, GenerateBeamEncoderDecoderOutput)
    assert_same_output(out, ref)
    assert_same_transition_scores(t5, out, ref, beam=True)


# ---- compute_transition_scores: its own checks --------------------------------------------------
def test_compute_transition_scores_refuses_what_it_cannot_read(gpt):
    _, ours = gpt
    ids, mask = gpt_batch()
    out = ours.generate(ids, mask, max_new_tokens=3, num_beams=2, pad_token_id=5, return_dict_in_generate=True,
                        output_scores=True)
    with pytest.raises(ValueError, match="scores is empty"):
        ours.compute_transition_scores(out.sequences, ())
    with pytest.raises(ValueError, match=r"sequences has 3 rows but each step's scores 6; .*beam_indices"):
        ours.compute_transition_scores(out.sequences, out.scores)
    with pytest.raises(ValueError, match=r"beam_indices has shape \(3,\)"):
        ours.compute_transition_scores(out.sequences, out.scores, out.beam_indices[:, 0])
