"""Greedy and beam search over any autoregressive step function.

A step function maps the previous tokens and a state to next-token
log-probabilities and the next state:

    step_fn(tokens (N,) int64, state) -> (log_probs (N, V), new_state)

`state` is any nest of tuples / lists / dicts whose leaves are seqlab
Tensors or arrays with the N rows first; beam search reorders the rows
(`select_rows`) when beams are re-ranked. Constant context (an encoder's
output) belongs in the step function's closure, not in the state, so it is
never copied. Both searches run without recording a graph.

Beam search ranks finished hypotheses by Σ log p / length^length_penalty
(Hugging Face's rule; length counts the generated tokens, EOS included):
length_penalty > 0 favours longer outputs, 0 compares raw sums.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from seqlab.autograd.function import no_grad
from seqlab.autograd.tensor import Tensor
from seqlab.backend import to_numpy

StepFn = Callable[[np.ndarray, Any], tuple[Any, Any]]


def map_state(state: Any, fn: Callable[[Any], Any]) -> Any:
    """Apply `fn` to every leaf (Tensor or array) of a nest of tuples / lists / dicts."""
    if state is None:
        return None
    if isinstance(state, dict):
        return {k: map_state(v, fn) for k, v in state.items()}
    if isinstance(state, (tuple, list)):
        return type(state)(map_state(v, fn) for v in state)
    return fn(state)


def select_rows(state: Any, index: np.ndarray) -> Any:
    """Every leaf's rows `index` (N',) — how beams are reordered."""
    def pick(x):
        if isinstance(x, Tensor):
            return Tensor._from_op(x.data[index], None)
        return x[index]
    return map_state(state, pick)


def repeat_rows(state: Any, k: int) -> Any:
    """Each row repeated k times in place (B, ...) -> (B·k, ...): row b·k + j is beam j of example b."""
    first = _first_leaf(state)
    return state if first is None else select_rows(state, np.repeat(np.arange(first.shape[0]), k))


def _first_leaf(state: Any):
    if state is None:
        return None
    if isinstance(state, dict):
        state = list(state.values())
    if isinstance(state, (tuple, list)):
        for v in state:
            leaf = _first_leaf(v)
            if leaf is not None:
                return leaf
        return None
    return state


def _log_probs(out) -> np.ndarray:
    arr = out.data if isinstance(out, Tensor) else out
    return to_numpy(arr).astype(np.float64)


@no_grad()
def greedy_search(step_fn: StepFn, state: Any, batch_size: int, bos_id: int, eos_id: int,
                  max_len: int) -> list[list[int]]:
    """Pick the most likely token at every step; returns B token lists (EOS and what follows dropped)."""
    tokens = np.full(batch_size, bos_id, dtype=np.int64)          # (B,)
    out = np.zeros((batch_size, 0), dtype=np.int64)
    done = np.zeros(batch_size, dtype=bool)
    for _ in range(max_len):
        logp, state = step_fn(tokens, state)
        tokens = _log_probs(logp).argmax(-1).astype(np.int64)     # (B,)
        tokens[done] = eos_id
        out = np.concatenate([out, tokens[:, None]], axis=1)      # (B, t)
        done |= tokens == eos_id
        if done.all():
            break
    return [_strip(row, eos_id) for row in out]


def _strip(row, eos_id: int) -> list[int]:
    row = list(int(t) for t in row)
    return row[:row.index(eos_id)] if eos_id in row else row


@dataclass(order=True)
class Hypothesis:
    """A finished beam: `score` = logprob / length^length_penalty; `tokens` without BOS and EOS."""

    score: float
    logprob: float = field(compare=False)
    tokens: list[int] = field(compare=False)


@no_grad()
def beam_search(step_fn: StepFn, state: Any, batch_size: int, beam_size: int, bos_id: int, eos_id: int,
                max_len: int, length_penalty: float = 1.0, num_return: int = 1) -> list[list[Hypothesis]]:
    """Keep the `beam_size` best prefixes per example; return the `num_return` best finished
    hypotheses of each example, best first.

    `state` holds B rows; it is repeated to B·beam_size rows (example-major) before the
    first step. At each step every live beam is extended by every token, the 2·beam best
    candidates are ranked, those ending in EOS are set aside as finished (if they rank
    within the beam) and the best beam_size others live on. An example stops when it has
    beam_size finished hypotheses and its best live beam, normalised at the current
    length, cannot beat the worst of them (Hugging Face's early-stop rule); at max_len
    the live beams are finished as they stand.
    """
    if beam_size < 1 or num_return < 1 or num_return > beam_size:
        raise ValueError(f"need 1 <= num_return ({num_return}) <= beam_size ({beam_size})")
    K = beam_size
    state = repeat_rows(state, K)
    tokens = np.full(batch_size * K, bos_id, dtype=np.int64)      # (B·K,)
    scores = np.full((batch_size, K), -np.inf)                     # (B, K): sum of log-probs
    scores[:, 0] = 0.0                                             # only one live beam at the start
    seqs = np.zeros((batch_size, K, 0), dtype=np.int64)           # (B, K, t)
    finished: list[list[Hypothesis]] = [[] for _ in range(batch_size)]
    done = np.zeros(batch_size, dtype=bool)

    def norm(logprob: float, length: int) -> float:
        return logprob / (length ** length_penalty)

    for step in range(max_len):
        logp, state = step_fn(tokens, state)
        logp = _log_probs(logp)
        V = logp.shape[-1]
        cand = (scores[:, :, None] + logp.reshape(batch_size, K, V)).reshape(batch_size, K * V)  # (B, K·V)
        n_top = min(2 * K, K * V)
        top = np.sort(np.argpartition(-cand, n_top - 1, axis=1)[:, :n_top], axis=1)  # (B, 2K) by index
        top = np.take_along_axis(top, np.argsort(-np.take_along_axis(cand, top, 1), axis=1, kind="stable"), 1)
        # ^ best first; O(K·V) per row instead of a full sort; equal scores keep the lower index first
        rows = np.zeros((batch_size, K), dtype=np.int64)           # which old beam each new beam extends
        new_tokens = np.full((batch_size, K), eos_id, dtype=np.int64)
        new_scores = np.full((batch_size, K), -np.inf)
        length = step + 1
        for b in range(batch_size):
            if done[b]:
                continue
            n_live = 0
            for rank, idx in enumerate(top[b]):
                s = cand[b, idx]
                if not np.isfinite(s):
                    break
                beam, tok = divmod(int(idx), V)
                if tok == eos_id:
                    if rank < K:  # an EOS outside the top K would not have survived anyway
                        finished[b].append(Hypothesis(norm(s, length), float(s), [int(t) for t in seqs[b, beam]]))
                    continue
                rows[b, n_live], new_tokens[b, n_live], new_scores[b, n_live] = beam, tok, s
                n_live += 1
                if n_live == K:
                    break
            finished[b].sort(reverse=True)
            del finished[b][K:]
            best_live = new_scores[b].max()
            if len(finished[b]) == K and (not np.isfinite(best_live)
                                          or norm(best_live, length) <= finished[b][-1].score):
                done[b] = True
        if done.all():
            break
        flat = (np.arange(batch_size)[:, None] * K + rows).reshape(-1)  # (B·K,) rows of the old state
        state = select_rows(state, flat)
        seqs = np.concatenate([np.take_along_axis(seqs, rows[:, :, None], axis=1),
                               new_tokens[:, :, None]], axis=2)          # (B, K, t + 1)
        scores, tokens = new_scores, new_tokens.reshape(-1)
    for b in range(batch_size):
        if not done[b]:  # out of steps: live beams count as finished, without EOS
            for k in range(K):
                if np.isfinite(scores[b, k]):
                    finished[b].append(Hypothesis(norm(scores[b, k], seqs.shape[2]), float(scores[b, k]),
                                                  [int(t) for t in seqs[b, k]]))
            finished[b].sort(reverse=True)
    return [f[:num_return] for f in finished]
