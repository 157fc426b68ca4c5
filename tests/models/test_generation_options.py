"""generate()'s transformers options: max_length, min_length, min_new_tokens, repetition_penalty,
no_repeat_ngram_size and num_return_sequences give the same tokens as transformers' `generate`, for
GPT-2 and T5, greedy and beam search (sampling: shapes and row grouping, the RNGs differ).

Tiny random models in float64. Every comparison also checks that the option changed the output, so a
test fails if the option were ignored.
"""
from __future__ import annotations

import numpy as np
import pytest
from models_helpers import GEN_GPT_CFG, GEN_T5_CFG, gpt_batch, hf_save, t5_batch

from seqlab.models import AutoModel

GPT_CFG, T5_CFG = GEN_GPT_CFG, GEN_T5_CFG
NEW = 12  # new tokens per test run: enough for the options to show, few enough for slow cores


@pytest.fixture(scope="module")
def gpt(T, torch, tmp_path_factory):
    torch.manual_seed(0)
    hf = T.GPT2LMHeadModel(T.GPT2Config(**GPT_CFG)).double().eval()
    folder = hf_save(hf, tmp_path_factory.mktemp("gpt2"))
    return hf, AutoModel.from_pretrained(folder, dtype=np.float64)


@pytest.fixture(scope="module")
def t5(T, torch, tmp_path_factory):
    torch.manual_seed(1)
    hf = T.T5ForConditionalGeneration(T.T5Config(**T5_CFG)).double().eval()
    folder = hf_save(hf, tmp_path_factory.mktemp("t5"))
    return hf, AutoModel.from_pretrained(folder, dtype=np.float64)


def reference(torch, hf, ids, mask, **kw):
    kw.setdefault("do_sample", False)
    with torch.no_grad():
        return hf.generate(torch.tensor(ids), attention_mask=torch.tensor(mask), **kw).numpy()


def same_and_changed(torch, pair, batch, option: dict, **common):
    """Ours with `option` equals transformers'; and differs from ours without it. Returns ours."""
    hf, ours = pair
    ids, mask = batch
    got = ours.generate(ids, mask, **option, **common)
    ref = reference(torch, hf, ids, mask, **option, **common)
    assert got.shape == ref.shape
    np.testing.assert_array_equal(got, ref)
    plain = ours.generate(ids, mask, **common)
    assert plain.shape != got.shape or not np.array_equal(plain, got), f"{option} changed nothing"
    return got


def first_new_token(ours, ids, mask, start: int) -> int:
    """An end token the model really emits: row 0's first new token (so row 0 ends at once without a minimum)."""
    return int(ours.generate(ids, mask, max_new_tokens=NEW)[0, start])


def beam_pad(stop: int) -> int:
    """A pad id for beam search with an end token: transformers' beam search fills finished hypotheses with
    `pad_token_id or eos_token_id`, i.e. with eos when the pad id is 0, where seqlab fills with the pad id;
    a non-zero pad id other than the end token fills both alike."""
    return 5 if stop != 5 else 6


# ---- GPT-2, greedy, left-padded batch ------------------------------------------------------
@pytest.mark.parametrize("option", [dict(repetition_penalty=1.5), dict(repetition_penalty=0.5),
                                    dict(no_repeat_ngram_size=2), dict(no_repeat_ngram_size=1),
                                    dict(repetition_penalty=1.3, no_repeat_ngram_size=3)])
def test_gpt_greedy_penalties_equal_transformers(torch, gpt, option):
    got = same_and_changed(torch, gpt, gpt_batch(), option, max_new_tokens=NEW)
    if option.get("no_repeat_ngram_size") == 1:  # no token twice in a row's real tokens
        _, mask = gpt_batch()
        for row, m in zip(got, mask):
            real = row[np.concatenate([m, np.ones(NEW, int)]) == 1]
            assert len(set(real.tolist())) == len(real)


def test_gpt_repetition_penalty_skips_left_padding(torch, gpt):
    """transformers does not penalize the padding id (0) in the left padding: a token 0 that only the
    padding holds keeps its score. A pad id that is a real token shows it: here every prompt pads with a
    token the model likes to emit."""
    hf, ours = gpt
    ids, mask = gpt_batch()
    fav = int(ours.generate(ids, mask, max_new_tokens=1)[1, -1])   # row 1's next token
    assert fav not in ids[1, 3:]
    padded = np.where(mask == 1, ids, fav)
    kw = dict(max_new_tokens=NEW, repetition_penalty=5.0)
    got = ours.generate(padded, mask, **kw)
    np.testing.assert_array_equal(got, reference(torch, hf, padded, mask, **kw))
    assert got[1, 8] == fav  # penalized it would not be chosen first (fav is not in row 1's prompt)


def test_gpt_max_length(torch, gpt):
    got = same_and_changed(torch, gpt, gpt_batch(), dict(max_length=13))  # plain: the default 20 new tokens
    assert got.shape == (3, 13)                                             # the padded prompt (8) + 5 new
    # max_new_tokens wins over max_length, as in transformers
    got = same_and_changed(torch, gpt, gpt_batch(), dict(max_length=13, max_new_tokens=4))
    assert got.shape == (3, 12)
    hf, ours = gpt
    ids, mask = gpt_batch()
    assert ours.generate(ids, mask).shape == (3, 28)                        # neither: 20 new tokens
    np.testing.assert_array_equal(ours.generate(ids, mask, max_length=8), ids)  # no room: the prompt back
    with pytest.raises(ValueError, match=r"max_length \(7\) counts the \(padded\) prompt's 8 tokens"):
        ours.generate(ids, mask, max_length=7)
    with pytest.raises(ValueError, match="exceeds the model's 64 positions"):
        ours.generate(ids, mask, max_length=65)


@pytest.mark.parametrize("option", [dict(min_new_tokens=4), dict(min_length=12),    # 12 = 8 (prompt) + 4
                                    dict(min_new_tokens=3, min_length=15),           # min_new_tokens wins
                                    dict(min_new_tokens=0, min_length=15)])          # ... even when it is 0
def test_gpt_minimum_length_with_an_emitted_end_token(torch, gpt, option):
    hf, ours = gpt
    ids, mask = gpt_batch()
    stop = first_new_token(ours, ids, mask, 8)
    common = dict(max_new_tokens=NEW, eos_token_id=stop, pad_token_id=0)
    plain = ours.generate(ids, mask, **common)
    assert plain[0, 8] == stop and (plain[0, 9:] == 0).all()            # row 0 ends at once
    if option.get("min_new_tokens") == 0:  # transformers: min_new_tokens=0 replaces min_length (no minimum)
        np.testing.assert_array_equal(ours.generate(ids, mask, **option, **common), plain)
        np.testing.assert_array_equal(reference(torch, hf, ids, mask, **option, **common), plain)
        return
    got = same_and_changed(torch, gpt, (ids, mask), option, **common)
    least = option.get("min_new_tokens", option.get("min_length", 0) - 8)
    assert not np.isin(got[:, 8:8 + least], stop).any()                 # no end before the minimum


def test_gpt_minimum_length_in_beam_search(torch, gpt):
    hf, ours = gpt
    ids, mask = gpt_batch()
    stop = first_new_token(ours, ids, mask, 8)
    common = dict(max_new_tokens=10, num_beams=3, eos_token_id=stop, pad_token_id=beam_pad(stop),
                  length_penalty=0.5)
    assert (ours.generate(ids, mask, **common)[:, 8] == stop).any()        # some rows end at once
    got = same_and_changed(torch, gpt, (ids, mask), dict(min_new_tokens=5), **common)
    assert not np.isin(got[:, 8:13], stop).any()


# ---- GPT-2, beam search --------------------------------------------------------------------------
@pytest.mark.parametrize("option", [dict(repetition_penalty=1.5), dict(no_repeat_ngram_size=2),
                                    dict(repetition_penalty=0.7, no_repeat_ngram_size=3)])
def test_gpt_beam_search_penalties_equal_transformers(torch, gpt, option):
    same_and_changed(torch, gpt, gpt_batch(), option, max_new_tokens=10, num_beams=3, pad_token_id=beam_pad(2))


def test_gpt_beam_search_num_return_sequences(torch, gpt):
    hf, ours = gpt
    ids, mask = gpt_batch()
    beams = dict(max_new_tokens=10, num_beams=4, pad_token_id=beam_pad(2))
    got = same_and_changed(torch, gpt, (ids, mask), dict(num_return_sequences=3), **beams)
    assert got.shape == (9, 18)
    np.testing.assert_array_equal(got[::3], ours.generate(ids, mask, **beams))  # best first
    np.testing.assert_array_equal(got[:, :8], np.repeat(ids, 3, 0))     # rows grouped per prompt
    # with an end token the model emits (hypotheses of different lengths) and a length penalty
    stop = first_new_token(ours, ids, mask, 8)
    same_and_changed(torch, gpt, (ids, mask), dict(num_return_sequences=4), max_new_tokens=10, num_beams=4,
                     eos_token_id=stop, pad_token_id=beam_pad(stop), length_penalty=0.7)
    # one prompt whose best hypothesis ends at once: the output is as long as the longest one returned
    one = dict(max_new_tokens=10, num_beams=3, eos_token_id=stop, pad_token_id=beam_pad(stop), length_penalty=0.5)
    assert ours.generate(ids[:1], mask[:1], **one).shape == (1, 9)
    got = same_and_changed(torch, gpt, (ids[:1], mask[:1]), dict(num_return_sequences=3), **one)
    assert got.shape == (3, 18) and got[0, 8] == stop
    # and all the options at once, without the cache
    kw = dict(max_new_tokens=10, num_beams=3, num_return_sequences=2, repetition_penalty=1.2,
              no_repeat_ngram_size=2, min_new_tokens=3, eos_token_id=stop, pad_token_id=beam_pad(stop))
    got = ours.generate(ids, mask, **kw)
    np.testing.assert_array_equal(got, reference(torch, hf, ids, mask, **kw))
    np.testing.assert_array_equal(ours.generate(ids, mask, use_cache=False, **kw), got)


# ---- GPT-2, sampling ---------------------------------------------------------------------------
def test_gpt_sampling_num_return_sequences_groups_rows_per_prompt(torch, gpt):
    hf, ours = gpt
    ids, mask = gpt_batch()
    out = ours.generate(ids, mask, max_new_tokens=NEW, do_sample=True, temperature=3.0, top_k=0,
                        num_return_sequences=4, seed=0)
    ref = reference(torch, hf, ids, mask, max_new_tokens=NEW, do_sample=True, temperature=3.0, top_k=0,
                    num_return_sequences=4)
    assert out.shape == ref.shape == (12, 20)
    np.testing.assert_array_equal(out[:, :8], np.repeat(ids, 4, 0))     # rows 4i .. 4i + 3 continue prompt i
    assert all(len({tuple(r) for r in out[4 * i:4 * i + 4, 8:]}) > 1 for i in range(3))  # independent draws
    # top_k=1 sampling is greedy: each prompt's copies are its greedy continuation, in transformers too, and
    # the processors act before top-k
    kw = dict(max_new_tokens=NEW, do_sample=True, top_k=1, num_return_sequences=2, repetition_penalty=1.5,
              no_repeat_ngram_size=3)
    got = ours.generate(ids, mask, seed=1, **kw)
    np.testing.assert_array_equal(got, reference(torch, hf, ids, mask, **kw))
    greedy = ours.generate(ids, mask, max_new_tokens=NEW, repetition_penalty=1.5, no_repeat_ngram_size=3)
    np.testing.assert_array_equal(got, np.repeat(greedy, 2, 0))
    assert not np.array_equal(greedy, ours.generate(ids, mask, max_new_tokens=NEW))


def test_greedy_refuses_num_return_sequences_as_transformers_does(torch, gpt):
    hf, ours = gpt
    ids, mask = gpt_batch()
    with pytest.raises(ValueError, match="num_return_sequences"):
        reference(torch, hf, ids, mask, max_new_tokens=3, num_return_sequences=2)
    with pytest.raises(ValueError, match=r"num_return_sequences must be 1 for greedy search \(got 2\)"):
        ours.generate(ids, mask, max_new_tokens=3, num_return_sequences=2)
    assert ours.generate(ids, mask, max_new_tokens=3, num_return_sequences=1).shape == (3, 11)


# ---- T5 --------------------------------------------------------------------------------------
# the tiny random T5 favours one token strongly: a mild penalty would change nothing
@pytest.mark.parametrize("option", [dict(repetition_penalty=4.0), dict(repetition_penalty=0.2),
                                    dict(no_repeat_ngram_size=2), dict(no_repeat_ngram_size=1), dict(max_length=6)])
def test_t5_greedy_options_equal_transformers(torch, t5, option):
    common = {} if "max_length" in option else dict(max_new_tokens=NEW)
    got = same_and_changed(torch, t5, t5_batch(), option, **common)
    if "max_length" in option:
        assert got.shape == (3, 6)                                     # the start token + 5 new


@pytest.mark.parametrize("option", [dict(min_new_tokens=4), dict(min_length=5)])   # 5 = start token + 4
def test_t5_minimum_length_with_an_emitted_end_token(torch, t5, option):
    hf, ours = t5
    ids, mask = t5_batch()
    stop = first_new_token(ours, ids, mask, 1)
    common = dict(max_new_tokens=NEW, eos_token_id=stop)
    assert ours.generate(ids, mask, **common)[0, 1] == stop
    got = same_and_changed(torch, t5, (ids, mask), option, **common)
    assert not np.isin(got[:, 1:5], stop).any()
    same_and_changed(torch, t5, (ids, mask), option, max_new_tokens=8, num_beams=3, eos_token_id=stop,
                     pad_token_id=beam_pad(stop), length_penalty=0.5)


@pytest.mark.parametrize("option", [dict(repetition_penalty=4.0), dict(no_repeat_ngram_size=2)])
def test_t5_beam_search_penalties_equal_transformers(torch, t5, option):
    same_and_changed(torch, t5, t5_batch(), option, max_new_tokens=8, num_beams=3, pad_token_id=beam_pad(1))


def test_t5_num_return_sequences(torch, t5):
    hf, ours = t5
    ids, mask = t5_batch()
    beams = dict(max_new_tokens=8, num_beams=3, pad_token_id=beam_pad(1))
    got = same_and_changed(torch, t5, (ids, mask), dict(num_return_sequences=2), **beams)
    assert got.shape[0] == 6
    np.testing.assert_array_equal(got[::2], ours.generate(ids, mask, **beams))
    np.testing.assert_array_equal(ours.generate(ids, mask, num_return_sequences=2, use_cache=False, **beams), got)
    got = same_and_changed(torch, t5, (ids, mask), dict(num_return_sequences=3), length_penalty=0.3, **beams)
    assert got.shape[0] == 9
    # sampling: shapes and grouping; top_k=1 copies are the greedy continuation
    out = ours.generate(ids, mask, max_new_tokens=NEW, do_sample=True, temperature=3.0, num_return_sequences=3,
                        seed=0)
    assert out.shape == (9, 1 + NEW) and (out[:, 0] == 0).all()
    assert all(len({tuple(r) for r in out[3 * i:3 * i + 3]}) > 1 for i in range(3))
    kw = dict(max_new_tokens=NEW, do_sample=True, top_k=1, num_return_sequences=3)
    got = ours.generate(ids, mask, seed=0, **kw)
    np.testing.assert_array_equal(got, reference(torch, hf, ids, mask, **kw))
    np.testing.assert_array_equal(got, np.repeat(ours.generate(ids, mask, max_new_tokens=NEW), 3, 0))
    assert ours.generate(ids, mask, max_length=1).shape == (3, 1)         # T5's max_length counts the start token


# ---- argument errors --------------------------------------------------------------------------
@pytest.mark.parametrize("kw, message", [
    (dict(repetition_penalty=0.0), "repetition_penalty must be a finite number > 0"),
    (dict(repetition_penalty=-1.2), "repetition_penalty must be a finite number > 0"),
    (dict(repetition_penalty=float("nan")), "repetition_penalty must be a finite number > 0"),
    (dict(repetition_penalty=float("inf")), "repetition_penalty must be a finite number > 0"),
    (dict(repetition_penalty="1.2"), "repetition_penalty must be a finite number > 0"),
    (dict(no_repeat_ngram_size=-1), r"no_repeat_ngram_size must be an int >= 0, got -1"),
    (dict(no_repeat_ngram_size=2.0), r"no_repeat_ngram_size must be an int >= 0, got 2.0"),
    (dict(num_return_sequences=0, do_sample=True), r"num_return_sequences must be an int >= 1, got 0"),
    (dict(num_return_sequences=1.5, do_sample=True), r"num_return_sequences must be an int >= 1"),
    (dict(num_return_sequences=4, num_beams=3), r"num_return_sequences \(4\) must be <= num_beams \(3\)"),
    (dict(min_new_tokens=-1), r"min_new_tokens must be an int >= 0"),
    (dict(min_length=True), r"min_length must be an int >= 0, got True"),
    (dict(max_length=0), r"max_length must be an int >= 1, got 0"),
    (dict(max_length=10.0), r"max_length must be an int >= 1"),
    (dict(max_new_tokens=-1), r"max_new_tokens must be an int >= 0"),
])
def test_argument_errors(gpt, kw, message):
    _, ours = gpt
    ids, mask = gpt_batch()
    with pytest.raises(ValueError, match=message) as e:
        ours.generate(ids, mask, **kw)
    assert "\n" not in str(e.value)


def test_unknown_keyword_is_a_type_error(gpt):
    _, ours = gpt
    with pytest.raises(TypeError, match="no_repeat_ngram"):
        ours.generate(np.array([[3, 4]]), no_repeat_ngram=2)


def test_gpt_warns_of_right_padded_prompts_as_transformers(gpt):
    """transformers warns "right-padding was detected"; a right-padded row continues after its pads (an audit
    found seqlab silent). A left-padded batch, or no mask, gives no warning."""
    _, ours = gpt
    ids = np.array([[5, 6, 7, 8], [5, 6, 0, 0]])
    with pytest.warns(UserWarning, match="right padding .* pad on the left"):
        ours.generate(ids, attention_mask=np.array([[1, 1, 1, 1], [1, 1, 0, 0]]), max_new_tokens=2, pad_token_id=0)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ours.generate(ids[:, ::-1].copy(), attention_mask=np.array([[1, 1, 1, 1], [0, 0, 1, 1]]), max_new_tokens=2,
                      pad_token_id=0)
        ours.generate(ids, max_new_tokens=2, pad_token_id=0)
