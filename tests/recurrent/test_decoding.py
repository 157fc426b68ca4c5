"""Greedy and beam search on a hand-built step function whose probabilities we know.

Tokens: 0 pad, 1 <s>, 2 </s>, 3 'a', 4 'b'. For example 0:
    p(· | <s>)      = a 0.6,  b 0.4
    p(· | <s> a)    = a 0.35, b 0.35, </s> 0.3
    p(· | <s> b)    = </s> 0.9, a 0.05, b 0.05
    p(· | longer)   = </s> 0.5, a 0.25, b 0.25
Greedy takes 'a' (0.6), then 'a' (0.35, the first of a tie), then </s>: p = 0.105.
The best sequence is 'b </s>': p = 0.4 · 0.9 = 0.36, which a beam of 2 finds.
Example 1 swaps the roles of 'a' and 'b'.
"""
from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

import seqlab
from seqlab.models.decoding import beam_search, greedy_search, repeat_rows, select_rows

EOS, BOS, A, B_ = 2, 1, 3, 4
V = 5


def probs(prefix: tuple[int, ...], example: int) -> np.ndarray:
    p = np.zeros(V)
    swap = {A: B_, B_: A}
    pre = tuple(swap.get(t, t) for t in prefix) if example == 1 else prefix
    if pre == ():
        p[A], p[B_] = 0.6, 0.4
    elif pre == (A,):
        p[A], p[B_], p[EOS] = 0.35, 0.35, 0.3
    elif pre == (B_,):
        p[EOS], p[A], p[B_] = 0.9, 0.05, 0.05
    else:
        p[EOS], p[A], p[B_] = 0.5, 0.25, 0.25
    if example == 1:
        p[A], p[B_] = p[B_], p[A]
    return p


def step_fn(tokens, state):
    """State: prefixes (N, t) as a Tensor and the example id (N,) as an array — both must follow the beams."""
    prefix = state["prefix"].data
    if tokens[0] != BOS or prefix.shape[1]:
        prefix = np.concatenate([prefix, tokens[:, None]], axis=1)        # (N, t + 1)
    rows = [probs(tuple(int(t) for t in row), int(e)) for row, e in zip(prefix, state["example"])]
    with np.errstate(divide="ignore"):
        logp = np.log(np.stack(rows))                                      # (N, V), log 0 = −inf
    return seqlab.tensor(logp), {"prefix": seqlab.tensor(prefix), "example": state["example"]}


def start(batch=2):
    return {"prefix": seqlab.tensor(np.zeros((batch, 0), dtype=np.int64)), "example": np.arange(batch)}


def brute_force(example, max_len, lp):
    """The best score over every complete sequence (ends with </s>, or reaches max_len) and all bodies reaching it."""
    scored = []
    for n in range(1, max_len + 1):
        for body in itertools.product((A, B_), repeat=n):
            for ends in ((True, False) if n < max_len else (True, False)):
                seq = body + ((EOS,) if ends else ())
                if len(seq) > max_len or (not ends and n != max_len):
                    continue
                logp = sum(math.log(probs(seq[:i], example)[seq[i]]) for i in range(len(seq)))
                scored.append((logp / len(seq) ** lp, list(body)))
    best = max(score for score, _ in scored)
    return best, [body for score, body in scored if score > best - 1e-12]


def test_greedy_takes_the_locally_best_token():
    # example 1: b (0.6), then a tie a/b (0.35 each) that argmax breaks towards the lower id, a
    assert greedy_search(step_fn, start(), 2, BOS, EOS, max_len=6) == [[A, A], [B_, A]]


def test_beam_of_two_finds_the_best_sequence_by_hand():
    hyps = beam_search(step_fn, start(), 2, beam_size=2, bos_id=BOS, eos_id=EOS, max_len=6, length_penalty=0.0)
    assert [h[0].tokens for h in hyps] == [[B_], [A]]
    assert hyps[0][0].logprob == pytest.approx(math.log(0.4 * 0.9))
    assert hyps[1][0].score == pytest.approx(math.log(0.36))


@pytest.mark.parametrize("beam_size", [1, 2, 3])
def test_beam_of_one_is_greedy_and_more_beams_never_score_worse(beam_size):
    hyps = beam_search(step_fn, start(), 2, beam_size, BOS, EOS, max_len=6, length_penalty=0.0)
    if beam_size == 1:
        assert [h[0].tokens for h in hyps] == greedy_search(step_fn, start(), 2, BOS, EOS, max_len=6)
    else:
        assert hyps[0][0].logprob == pytest.approx(math.log(0.36))


@pytest.mark.parametrize("lp", [0.0, 1.0, 2.0])
def test_exhaustive_beam_equals_brute_force(lp):
    """With as many beams as prefixes, beam search is exhaustive: it must return the global best."""
    max_len = 4
    hyps = beam_search(step_fn, start(), 2, beam_size=16, bos_id=BOS, eos_id=EOS, max_len=max_len,
                       length_penalty=lp, num_return=3)
    for ex in range(2):
        score, bodies = brute_force(ex, max_len, lp)
        assert hyps[ex][0].score == pytest.approx(score)
        assert hyps[ex][0].tokens in bodies                      # a/b ties give several equal bests
        assert [h.score for h in hyps[ex]] == sorted((h.score for h in hyps[ex]), reverse=True)
        for h in hyps[ex]:
            length = len(h.tokens) + (1 if len(h.tokens) < max_len else 0)
            assert h.score == pytest.approx(h.logprob / length ** lp)


def test_length_penalty_prefers_longer_outputs():
    short = beam_search(step_fn, start(1), 1, 16, BOS, EOS, max_len=4, length_penalty=0.0)[0][0]
    long = beam_search(step_fn, start(1), 1, 16, BOS, EOS, max_len=4, length_penalty=3.0)[0][0]
    assert len(long.tokens) > len(short.tokens)


def test_state_helpers_reorder_every_leaf():
    state = {"h": seqlab.tensor(np.arange(3.0)[:, None]), "c": (np.arange(3), None)}
    rep = repeat_rows(state, 2)
    assert rep["h"].numpy()[:, 0].tolist() == [0, 0, 1, 1, 2, 2] and rep["c"][0].tolist() == [0, 0, 1, 1, 2, 2]
    sel = select_rows(state, np.array([2, 0]))
    assert sel["h"].numpy()[:, 0].tolist() == [2, 0] and sel["c"][1] is None


def test_beam_errors():
    with pytest.raises(ValueError, match="num_return"):
        beam_search(step_fn, start(), 2, 2, BOS, EOS, 4, num_return=3)
