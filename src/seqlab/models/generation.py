"""Text generation for GPT (decoder-only) and T5 (encoder-decoder), with a key/value cache.

    out = generate(gpt, ids, mask, max_new_tokens=20)                         # greedy
    out = generate(gpt, ids, mask, do_sample=True, top_k=50, top_p=0.9, seed=0)
    out = generate(t5, src_ids, src_mask, num_beams=4)                        # beam search
    out = generate(gpt, ids, mask, repetition_penalty=1.3, no_repeat_ngram_size=3, min_new_tokens=5)

Decoding follows transformers' `generate` so the tokens are the same:
scores are taken in float32; the logits processors (repetition penalty,
no-repeat n-grams, minimum length) come first, in transformers' order; then
sampling applies temperature, then top-k, then top-p (beam search applies the
processors to the log-softmax scores); a row that emits an end token is
padded afterwards and decoding stops when every row has ended; prompts in a
batch are left-padded and their position ids come from the attention mask
(cumsum − 1), as transformers does.

With the cache (default), the prompt is run once and each later step feeds
only the new token: every layer appends its key/value to the cache and
attends over it, so a token costs the same at position 1000 as at 10, apart
from the O(T) attention itself. T5 runs its encoder once and reuses its
keys/values in every cross-attention.

    out = generate(gpt, ids, mask, return_dict_in_generate=True, output_scores=True)
    out.sequences, out.scores                      # transformers' GenerateDecoderOnlyOutput, NumPy arrays
    gpt.compute_transition_scores(out.sequences, out.scores, normalize_logits=True)   # log p of each new token
    generate(gpt, ids, streamer=TextStreamer(tok))  # prints the text as it is generated

`return_dict_in_generate=True` returns transformers' output classes
(seqlab.models.outputs) with the per-step scores transformers records, and
`streamer` receives the tokens as transformers hands them to its streamers
(`TextStreamer`, `TextIteratorStreamer` below).
"""
from __future__ import annotations

import warnings

import numpy as np

from seqlab import backend
from seqlab.autograd.function import no_grad
from seqlab.autograd.tensor import Tensor
from seqlab.models.outputs import (EncoderDecoderCache, GenerateBeamDecoderOnlyOutput,  # noqa: F401 (importable)
                                   GenerateBeamEncoderDecoderOutput, GenerateDecoderOnlyOutput,
                                   GenerateEncoderDecoderOutput, KVCache)
from seqlab.random import check_seed, default_generator
from seqlab.models.streamers import BaseStreamer, TextIteratorStreamer, TextStreamer  # noqa: F401 (importable here)


def _ids(x) -> np.ndarray:
    """Token ids as a host int64 array: the search runs on the host, whatever device the model is on."""
    arr = backend.to_numpy(x.data if isinstance(x, Tensor) else x)
    if arr.dtype.kind not in "iu":
        raise TypeError(f"token ids must be integers, got dtype {arr.dtype}")
    return arr.astype(np.int64)


def _eos_list(eos) -> list[int]:
    if eos is None:
        return []
    return [int(e) for e in (eos if isinstance(eos, (list, tuple, np.ndarray)) else [eos])]


def _positions(mask: np.ndarray) -> np.ndarray:
    """Position ids (B, T) from a left-padded mask: cumsum − 1 over real tokens, 0 on padding."""
    return np.where(mask == 0, 0, mask.cumsum(-1) - 1)


# ---- one decoding step per model family --------------------------------------------------
class _CausalStepper:
    """GPT: feeds the prompt once, then one token per step; tracks mask and position ids.

    With a `window` (slide=True: the model's n_positions), a sequence longer
    than the window is read through its last `window` tokens, renumbered
    from position 0, as nanoGPT's generate crops its context. The cache
    serves until the sequence outgrows the window; after that every position
    shifts by one at each step, so cached keys no longer match and each step
    runs the whole window.
    """

    def __init__(self, model, ids: np.ndarray, mask: np.ndarray, use_cache: bool, max_new_tokens: int = 0,
                 window: int | None = None):
        self.model, self.use_cache, self.window = model, use_cache, window
        self.mask = mask
        self.positions = _positions(mask)                                 # (B, T): left padding starts at 0
        # room for the whole generation from the start: the cache never grows (no copies)
        total = ids.shape[1] + max_new_tokens
        self.cache = KVCache(capacity=min(total, window or total)) if use_cache else None
        self.prompt_len = ids.shape[1]

    def logits(self, seqs: np.ndarray) -> np.ndarray:
        """Next-token scores (N, V) for the running sequences (N, T_cur)."""
        if seqs.shape[1] > self.mask.shape[1]:  # a token was appended since the last call
            n = seqs.shape[1] - self.mask.shape[1]
            self.mask = np.concatenate([self.mask, np.ones((seqs.shape[0], n), dtype=self.mask.dtype)], 1)
            last = self.positions[:, -1:]
            self.positions = np.concatenate([self.positions, last + np.arange(1, n + 1)[None, :]], 1)
        if self.window is not None and seqs.shape[1] > self.window:
            self.cache = None                                           # positions shift from now on
            mask = self.mask[:, -self.window:]
            out = self.model(seqs[:, -self.window:], attention_mask=mask, position_ids=_positions(mask))
        elif self.cache is not None:
            seen = self.cache.get_seq_length()
            out = self.model(seqs[:, seen:], attention_mask=self.mask, past_key_values=self.cache, use_cache=True,
                             position_ids=self.positions[:, seen:])
        else:
            out = self.model(seqs, attention_mask=self.mask, position_ids=self.positions)
        return backend.to_numpy(out.logits.data[:, -1]).astype(np.float32)  # the search runs on the host

    def reorder(self, index: np.ndarray) -> None:
        self.mask, self.positions = self.mask[index], self.positions[index]
        if self.cache is not None:
            self.cache.reorder(index)


class _Seq2SeqStepper:
    """T5: the encoder runs once; the decoder feeds one token per step with its cache."""

    def __init__(self, model, src: np.ndarray, src_mask: np.ndarray, use_cache: bool, expand: int = 1):
        self.model, self.use_cache = model, use_cache
        enc = model.encoder(src, src_mask)
        if expand > 1:  # one copy of the encoder output per beam
            enc.last_hidden_state = Tensor(np.repeat(enc.last_hidden_state.data, expand, axis=0))
            src_mask = np.repeat(src_mask, expand, axis=0)
        self.enc, self.src_mask = enc, src_mask
        self.cache = EncoderDecoderCache() if use_cache else None
        self.prompt_len = 1

    def logits(self, seqs: np.ndarray) -> np.ndarray:
        if self.cache is not None:
            seen = self.cache.get_seq_length()
            out = self.model(attention_mask=self.src_mask, decoder_input_ids=seqs[:, seen:], encoder_outputs=self.enc,
                             past_key_values=self.cache, use_cache=True)
        else:
            out = self.model(attention_mask=self.src_mask, decoder_input_ids=seqs, encoder_outputs=self.enc)
        return backend.to_numpy(out.logits.data[:, -1]).astype(np.float32)  # the search runs on the host

    def reorder(self, index: np.ndarray) -> None:
        if self.cache is not None:
            self.cache.reorder(index)


# ---- choosing tokens ----------------------------------------------------------------
def _softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def _log_softmax(x: np.ndarray) -> np.ndarray:
    m = x.max(-1, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(-1, keepdims=True))


def filter_logits(logits: np.ndarray, temperature: float = 1.0, top_k: int | None = None,
                  top_p: float | None = None) -> np.ndarray:
    """Scores (N, V) after temperature, top-k and top-p (nucleus); removed tokens get −∞.

    top-p keeps the smallest set of most likely tokens whose probabilities
    sum to at least top_p (always at least one token).
    """
    x = logits / np.float32(temperature) if temperature != 1.0 else logits.copy()
    if top_k is not None and 0 < top_k < x.shape[-1]:
        kth = np.sort(x, axis=-1)[:, -top_k][:, None]                 # (N, 1) the k-th largest score
        x = np.where(x < kth, -np.inf, x)
    if top_p is not None and top_p < 1.0:
        order = np.argsort(-x, axis=-1, kind="stable")                 # (N, V) most likely first
        probs = np.take_along_axis(_softmax(x), order, -1)
        cum_before = np.cumsum(probs, -1) - probs                      # mass of the tokens ranked above
        drop_sorted = cum_before >= top_p                              # the first token is never dropped
        drop = np.zeros_like(drop_sorted)
        np.put_along_axis(drop, order, drop_sorted, -1)
        x = np.where(drop, -np.inf, x)
    return x


class _Processors:
    """transformers' logits processors that `generate` offers, applied in its order to scores (N, V).

    - RepetitionPenaltyLogitsProcessor: every token id in the row so far (a GPT's prompt included, its left
      padding not: transformers skips each row's leading padding) has its score multiplied by the penalty
      when < 0, divided by it otherwise;
    - NoRepeatNGramLogitsProcessor: a token that would complete an n-gram already in the row gets −∞ (the
      whole row is read, padding and T5's start token included, as transformers does);
    - MinLengthLogitsProcessor / MinNewTokensLengthLogitsProcessor: the end tokens get −∞ while the
      sequence (prompt + new tokens for a GPT, start token + new tokens for T5) is shorter than `min_len`.
    """

    def __init__(self, eos: list[int], min_len: int = 0, repetition_penalty: float | None = None,
                 skip: np.ndarray | None = None, no_repeat_ngram_size: int = 0):
        self.eos, self.min_len = eos, min_len
        self.penalty = None if repetition_penalty is None or repetition_penalty == 1.0 else float(repetition_penalty)
        self.skip = skip                                                # (N,) leading tokens the penalty ignores
        self.ngram = no_repeat_ngram_size or 0

    @property
    def active(self) -> bool:
        return self.penalty is not None or self.ngram > 0 or (bool(self.eos) and self.min_len > 0)

    @staticmethod
    def _mark(cols: np.ndarray, V: int) -> np.ndarray:
        """A (N, V) mask of the ids in each row of cols (N, L); ids >= V (the spare column) mark nothing."""
        hit = np.zeros((cols.shape[0], V + 1), dtype=bool)
        hit[np.arange(cols.shape[0])[:, None], np.minimum(cols, V)] = True
        return hit[:, :V]

    def __call__(self, seqs: np.ndarray, scores: np.ndarray) -> np.ndarray:
        N, V = scores.shape
        x = scores
        if self.penalty is not None:
            cols = seqs
            if self.skip is not None:
                cols = np.where(np.arange(seqs.shape[1])[None, :] < self.skip[:, None], V, seqs)
            p = np.float32(self.penalty)
            x = np.where(self._mark(cols, V), np.where(x < 0, x * p, x / p), x).astype(np.float32)
        n, T = self.ngram, seqs.shape[1]
        if n > 0 and T >= n:
            windows = np.lib.stride_tricks.sliding_window_view(seqs, n, axis=1)        # (N, T - n + 1, n)
            prefix = seqs[:, T + 1 - n:]                                                # the last n − 1 tokens
            match = (windows[..., :-1] == prefix[:, None, :]).all(-1)
            x = np.where(self._mark(np.where(match, windows[..., -1], V), V), -np.inf, x).astype(np.float32)
        if self.eos and T < self.min_len:
            x = x.copy() if x is scores else x
            x[:, [e for e in self.eos if 0 <= e < V]] = -np.inf
        return x


def _int_at_least(name: str, value, low: int) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
        raise ValueError(f"{name} must be an int >= {low}, got {value!r}")


def _check(max_new_tokens, temperature, top_k, top_p, num_beams, *, max_length=None, min_length=None,
           min_new_tokens=None, repetition_penalty=None, no_repeat_ngram_size=None, num_return_sequences=1,
           do_sample=False):
    if max_new_tokens is not None and (not isinstance(max_new_tokens, (int, np.integer)) or max_new_tokens < 0):
        raise ValueError(f"max_new_tokens must be an int >= 0, got {max_new_tokens!r}")
    for name, value, low in (("max_length", max_length, 1), ("min_length", min_length, 0),
                             ("min_new_tokens", min_new_tokens, 0), ("no_repeat_ngram_size", no_repeat_ngram_size, 0),
                             ("num_return_sequences", num_return_sequences, 1)):
        if value is not None:
            _int_at_least(name, value, low)
    if repetition_penalty is not None and (isinstance(repetition_penalty, bool)
                                           or not isinstance(repetition_penalty, (int, float, np.number))
                                           or not 0 < repetition_penalty < float("inf")):
        raise ValueError(f"repetition_penalty must be a finite number > 0 (1.0: no penalty), "
                         f"got {repetition_penalty!r}")
    if temperature is not None and not 0 < temperature < float("inf"):  # NaN too
        raise ValueError(f"temperature must be a finite number > 0, got {temperature}")
    if top_k is not None and top_k < 0:
        raise ValueError(f"top_k must be >= 0, got {top_k}")
    if top_p is not None and not 0.0 < top_p <= 1.0:
        raise ValueError(f"top_p must be in (0, 1], got {top_p}")
    if num_beams < 1:
        raise ValueError(f"num_beams must be >= 1, got {num_beams}")
    if num_return_sequences is not None and num_return_sequences > 1:
        if num_beams > 1 and num_return_sequences > num_beams:
            raise ValueError(f"num_return_sequences ({num_return_sequences}) must be <= num_beams ({num_beams}): "
                             f"beam search returns the best num_return_sequences of its num_beams hypotheses")
        if num_beams == 1 and not do_sample:
            raise ValueError(f"num_return_sequences must be 1 for greedy search (got {num_return_sequences}): the "
                             f"copies would be identical; sample (do_sample=True) or use num_beams >= "
                             f"num_return_sequences, as transformers requires")


DEFAULT_TOP_K = 50  # transformers' GenerationConfig.top_k, used when sampling


class _Record:
    """The per-step arrays that generate(return_dict_in_generate=True) returns, kept as transformers keeps them:
    every row at every step, until the loop stops (all rows ended, or the length limit)."""

    def __init__(self, scores: bool, logits: bool):
        self.scores: list | None = [] if scores else None
        self.logits: list | None = [] if logits else None
        self.sequences_scores: np.ndarray | None = None                 # beam search fills these two at the end
        self.beam_indices: np.ndarray | None = None

    def add(self, scores: np.ndarray, logits: np.ndarray) -> None:
        """One step: the scores the tokens were chosen from and the model's raw scores, (N, V) each."""
        if self.scores is not None:
            self.scores.append(np.asarray(scores, dtype=np.float32))
        if self.logits is not None:
            self.logits.append(np.asarray(logits, dtype=np.float32))

    def output(self, sequences: np.ndarray, seq2seq: bool, beam: bool, with_scores: bool):
        scores = None if self.scores is None else tuple(self.scores)
        logits = None if self.logits is None else tuple(self.logits)
        if beam:  # transformers returns beam_indices whenever it returns a dict; sequences_scores with the scores
            cls = GenerateBeamEncoderDecoderOutput if seq2seq else GenerateBeamDecoderOnlyOutput
            return cls(sequences=sequences, sequences_scores=self.sequences_scores if with_scores else None,
                       scores=scores, logits=logits, beam_indices=self.beam_indices)
        cls = GenerateEncoderDecoderOutput if seq2seq else GenerateDecoderOnlyOutput
        return cls(sequences=sequences, scores=scores, logits=logits)


def _check_streamer(streamer, num_beams: int, batch: int, num_return_sequences: int) -> None:
    if streamer is None:
        return
    if not (callable(getattr(streamer, "put", None)) and callable(getattr(streamer, "end", None))):
        raise TypeError(f"streamer must have put(ids) and end() methods (transformers' BaseStreamer protocol), got "
                        f"{type(streamer).__name__}")
    if num_beams > 1:
        raise ValueError(f"a streamer cannot be used with beam search (num_beams={num_beams}); set num_beams=1, as "
                         f"transformers requires")
    if batch * num_return_sequences > 1:
        raise ValueError(f"a streamer takes one sequence, but this call generates {batch * num_return_sequences} "
                         f"(batch size {batch}, num_return_sequences {num_return_sequences}); stream one prompt, as "
                         f"transformers' TextStreamer requires (batch size 1)")


@no_grad()
def generate(model, input_ids, attention_mask=None, *, max_new_tokens: int | None = None, do_sample: bool = False,
             temperature: float = 1.0, top_k: int | None = None, top_p: float | None = None,
             num_beams: int = 1, length_penalty: float = 1.0, early_stopping: bool | str = False,
             eos_token_id=None, pad_token_id=None, use_cache: bool = True, seed: int | None = None,
             generator: np.random.Generator | None = None, slide: bool = False, max_length: int | None = None,
             min_length: int | None = None, min_new_tokens: int | None = None,
             repetition_penalty: float | None = None, no_repeat_ngram_size: int | None = None,
             num_return_sequences: int = 1, return_dict_in_generate: bool = False, output_scores: bool = False,
             output_logits: bool = False, streamer=None):
    """Token ids (B, T + n) for a GPT, or (B, 1 + n) starting with the decoder start token for T5.

    input_ids (B, T); attention_mask (B, T), 1 = real token (GPT prompts of
    different lengths are left-padded). eos_token_id / pad_token_id default
    to the model config's (pad falls back to eos). Sampling draws from
    `generator`, or a new one seeded with `seed`, or else seqlab's own
    generator (so `seqlab.manual_seed(n)` makes it repeat, as
    `torch.manual_seed` does for transformers).

    Length, as in transformers: `max_new_tokens` new tokens (20 when neither
    it nor `max_length` is given), or `max_length` tokens in all: the padded
    prompt plus the new ones for a GPT, the decoder's start token plus the new
    ones for T5; max_new_tokens wins when both are given. The end tokens are
    banned (score −∞) until `min_new_tokens` tokens are new, or the sequence
    (counted as max_length is) holds `min_length`; min_new_tokens wins.

    `repetition_penalty` (> 0; 1.0: none) divides the positive scores and
    multiplies the negative ones of every token already in the row (a GPT's
    prompt included, its padding not); `no_repeat_ngram_size` = n > 0 bans a
    token that would repeat an n-gram already in the row. Both, and the
    minimum length, act before temperature/top-k/top-p, and in beam search on
    the log-probabilities.

    `num_return_sequences` rows per prompt, grouped by prompt (rows
    i·n … i·n + n − 1 continue prompt i): independent draws when sampling,
    the n best hypotheses with beam search (n <= num_beams); greedy search
    refuses n > 1, as transformers does.

    Sampling keeps the 50 most likely tokens unless `top_k` says otherwise
    (transformers' GenerationConfig default; top_k=0: no limit). Beam search
    does not sample: num_beams > 1 with do_sample=True is a ValueError.

    A GPT's prompt and new tokens must fit in its n_positions, as in
    transformers, unless `slide=True`: then each step reads the last
    n_positions tokens (nanoGPT's generate), so a model trained on 64-token
    blocks can write 1,000 tokens. The whole sequence is returned.

    `return_dict_in_generate=True` returns transformers' output object rather
    than the ids (fields by attribute, key or position; seqlab.models.outputs):
    `GenerateDecoderOnlyOutput` (GPT) or `GenerateEncoderDecoderOutput` (T5)
    for greedy search and sampling, `GenerateBeamDecoderOnlyOutput` /
    `GenerateBeamEncoderDecoderOutput` for beam search, whose `beam_indices`
    (B·n, new) say which row of each step's scores a token came from.
    `output_scores=True` adds `scores`, one (N, V) float32 array per step,
    recorded as transformers records them: greedy search, the scores after the
    logits processors; sampling, after temperature, top-k and top-p too (a
    removed token is −∞); beam search, every beam's processed log-probabilities
    (N = B·num_beams), plus `sequences_scores`. `output_logits=True` adds
    `logits`, the model's raw scores per step. Steps are recorded for every row
    until all rows have ended. `model.compute_transition_scores` reads each
    chosen token's score out of them.

    `streamer`: an object with transformers' BaseStreamer methods. `put` gets
    the prompt ids (1, T) (T5: the decoder start token, (1, 1)), then each new
    token (1,); `end()` follows the last. `TextStreamer` prints the text as it
    comes, `TextIteratorStreamer` yields it. One sequence only (batch size 1,
    num_return_sequences 1) and no beam search, as in transformers.
    """
    _check(max_new_tokens, temperature, top_k, top_p, num_beams, max_length=max_length, min_length=min_length,
           min_new_tokens=min_new_tokens, repetition_penalty=repetition_penalty,
           no_repeat_ngram_size=no_repeat_ngram_size, num_return_sequences=num_return_sequences, do_sample=do_sample)
    num_return_sequences = 1 if num_return_sequences is None else num_return_sequences
    if do_sample and num_beams > 1:
        raise ValueError("beam search does not sample here: give num_beams > 1 or do_sample=True, not both "
                         "(transformers' beam sampling is not implemented)")
    if do_sample and top_k is None:
        top_k = DEFAULT_TOP_K
    if seed is not None:
        check_seed(seed)
    cfg = model.config
    ids = _ids(input_ids)
    if ids.ndim == 1:
        ids = ids[None, :]
    mask = np.ones_like(ids) if attention_mask is None else _ids(attention_mask)
    if mask.shape != ids.shape:
        raise ValueError(f"attention_mask has shape {mask.shape} but input_ids {ids.shape}")
    eos = _eos_list(eos_token_id if eos_token_id is not None else getattr(cfg, "eos_token_id", None))
    pad = pad_token_id if pad_token_id is not None else getattr(cfg, "pad_token_id", None)
    if pad is None:
        pad = eos[0] if eos else 0
    seq2seq = bool(getattr(cfg, "is_encoder_decoder", False))
    if not seq2seq and attention_mask is not None and ids.shape[1] and (mask[:, -1] == 0).any():
        warnings.warn("right padding in a decoder-only model's prompts: a padded row continues after its pad "
                      "tokens; pad on the left for generation (tok.padding_side = \"left\")", UserWarning,
                      stacklevel=3)
    if slide and seq2seq:
        raise ValueError("slide=True is for a GPT's absolute positions; T5's positions are relative and have no "
                         "limit")
    start_len = 1 if seq2seq else ids.shape[1]                  # what max_length counts before the new tokens
    if max_new_tokens is None and max_length is not None:
        if max_length < start_len:
            what = "the decoder's start token" if seq2seq else f"the (padded) prompt's {start_len} tokens"
            raise ValueError(f"max_length ({max_length}) counts {what} and leaves no room for new tokens; give "
                             f"max_new_tokens to count only the new ones")
        max_new_tokens = max_length - start_len
    elif max_new_tokens is None:
        max_new_tokens = 20
    if not seq2seq and not slide and ids.shape[1] + max_new_tokens > cfg.n_positions:
        raise ValueError(f"prompt ({ids.shape[1]}) + max_new_tokens ({max_new_tokens}) exceeds the model's "
                         f"{cfg.n_positions} positions; pass slide=True to read only the last "
                         f"{cfg.n_positions} tokens at each step, as nanoGPT does")
    window = cfg.n_positions if slide else None
    _check_streamer(streamer, num_beams, ids.shape[0], num_return_sequences)
    copies = max(num_beams, num_return_sequences)               # rows per prompt, as transformers expands them
    ids, mask = np.repeat(ids, copies, 0), np.repeat(mask, copies, 0)
    # transformers' repetition penalty skips each row's leading padding (a GPT's; T5's decoder has none)
    skip = None if seq2seq else (mask != 0).argmax(1)
    min_len = min_new_tokens + start_len if min_new_tokens is not None else (min_length or 0)
    processors = _Processors(eos, min_len, repetition_penalty, skip, no_repeat_ngram_size)
    processors = processors if processors.active else None
    was_training = model.training
    model.eval()
    try:
        if seq2seq:
            src = ids[::copies]                                  # the encoder runs once per prompt
            stepper = _Seq2SeqStepper(model, src, mask[::copies], use_cache, expand=copies)
            start = np.full((src.shape[0], 1), model.decoder_start_token_id, dtype=np.int64)
        else:
            stepper = _CausalStepper(model, ids, mask, use_cache, max_new_tokens, window)
            start = ids[::copies]
        record = _Record(output_scores, output_logits) if return_dict_in_generate else None
        if num_beams > 1:
            seqs = beam_search(stepper, start, num_beams, max_new_tokens, eos, pad, length_penalty, early_stopping,
                               processors=processors, num_return_sequences=num_return_sequences, record=record)
        else:
            seqs = np.repeat(start, copies, 0)
            rng = generator or (np.random.default_rng(seed) if seed is not None else default_generator())
            if streamer is not None:
                streamer.put(seqs.copy())                         # the prompt (T5: the decoder start token)
            seqs = _sample_loop(stepper, seqs, max_new_tokens, do_sample, temperature, top_k, top_p, eos, pad, rng,
                                processors=processors, record=record, streamer=streamer)
        if record is None:
            return seqs
        return record.output(seqs, seq2seq, beam=num_beams > 1, with_scores=output_scores)
    finally:
        model.train(was_training)


def _sample_loop(stepper, seqs, max_new_tokens, do_sample, temperature, top_k, top_p, eos, pad, rng,
                 processors=None, record: _Record | None = None, streamer=None) -> np.ndarray:
    """Greedy (argmax) or sampling, one token per step for every row; `processors` (seqs, scores) -> scores
    act on the raw scores before temperature, top-k and top-p. `record` keeps each step's scores (those the
    tokens are chosen from) and raw logits; `streamer` gets each new token, then end()."""
    unfinished = np.ones(seqs.shape[0], dtype=bool)
    for _ in range(max_new_tokens):
        logits = stepper.logits(seqs)                                   # (B, V) float32
        scores = logits if processors is None else processors(seqs, logits)
        if do_sample:
            scores = filter_logits(scores, temperature, top_k, top_p)   # transformers records these when sampling
            probs = _softmax(scores).astype(np.float64)
            cdf = np.cumsum(probs, -1)
            u = rng.random((probs.shape[0], 1)) * cdf[:, -1:]
            nxt = np.minimum((cdf < u).sum(-1), probs.shape[1] - 1)   # inverse-CDF draw per row
        else:
            nxt = scores.argmax(-1)
        if record is not None:
            record.add(scores, logits)
        if eos:
            nxt = np.where(unfinished, nxt, pad)                         # ended rows only grow padding
        seqs = np.concatenate([seqs, nxt[:, None]], 1)
        if streamer is not None:
            streamer.put(nxt.copy())                                     # (1,): the new token
        if eos:
            unfinished &= ~np.isin(nxt, eos)
            if not unfinished.any():
                break
    if streamer is not None:
        streamer.end()
    return seqs


def _topk(x: np.ndarray, k: int) -> np.ndarray:
    """Indices of the k largest entries of each row, largest first."""
    return np.argsort(-x, axis=-1, kind="stable")[:, :k]


def beam_search(stepper, prompt: np.ndarray, num_beams: int, max_new_tokens: int, eos: list[int], pad: int,
                length_penalty: float = 1.0, early_stopping: bool | str = False, processors=None,
                num_return_sequences: int = 1, record: _Record | None = None) -> np.ndarray:
    """Beam search as transformers (≥ 4.50) runs it; returns the best `num_return_sequences` hypotheses per
    row, best first and grouped by row (B·num_return_sequences, T0 + n).

    `processors` (seqs, scores) -> scores act on each step's log-probabilities (B·K, V) before they are
    added to the beams' scores, as transformers applies its logits processors there. `record` keeps each
    step's processed log-probabilities and raw logits (B·K, V), and at the end the returned hypotheses'
    scores and beam indices.

    Each step extends every running beam by every token and keeps the best
    (1 + #eos)·K candidates by summed log-probability. Candidates ending in
    an end token (or reaching the length limit) are scored by
    logp / gen_len^length_penalty and kept among the K best finished
    hypotheses; the best K unfinished ones run on. A row stops when its open
    beams can no longer beat its worst finished hypothesis.
    """
    B, T0 = prompt.shape
    K = num_beams
    keep = max(2, 1 + len(eos)) * K
    max_len = T0 + max_new_tokens
    fill = pad if pad is not None else (eos[0] if eos else -1)
    running = np.full((B, K, max_len), fill, dtype=np.int64)
    running[:, :, :T0] = prompt[:, None, :]
    finished_seqs = running.copy()
    running_scores = np.zeros((B, K), dtype=np.float32)
    running_scores[:, 1:] = -1e9                                         # all beams start as one
    finished_scores = np.full((B, K), -1e9, dtype=np.float32)
    finished_len = np.zeros((B, K), dtype=np.int64)
    is_finished = np.zeros((B, K), dtype=bool)
    can_improve = np.ones((B, 1), dtype=bool)
    top_mask = np.arange(keep) < K
    cur = T0
    rows = np.arange(B)[:, None]
    track = record is not None
    if track:  # per hypothesis, the flat beam row (b·K + k) each new token extended; -1: not (yet) generated
        running_idx = np.full((B, K, max_new_tokens), -1, dtype=np.int64)
        finished_idx = running_idx.copy()
    while cur < max_len:
        flat = running[:, :, :cur].reshape(B * K, cur)
        logits = stepper.logits(flat)                                   # (B·K, V) float32
        logp = _log_softmax(logits)
        if processors is not None:
            logp = processors(flat, logp)
        if track:
            record.add(logp, logits)
        V = logp.shape[-1]
        acc = (logp.reshape(B, K, V) + running_scores[:, :, None]).reshape(B, K * V)
        idx = _topk(acc, keep)                                           # (B, keep)
        top_logp = np.take_along_axis(acc, idx, -1)
        beam, tok = idx // V, idx % V
        cand = running[rows, beam].copy()                                # (B, keep, max_len)
        cand[:, :, cur] = tok
        hits = np.isin(tok, eos) | (cur + 1 >= max_len)                 # ended, or out of room
        # the K best candidates that go on
        live = top_logp + hits * np.float32(-1e9)
        nxt = _topk(live, K)
        running = np.take_along_axis(cand, nxt[:, :, None], 1)
        running_scores = np.take_along_axis(live, nxt, -1)
        src_beam = np.take_along_axis(beam, nxt, -1)                    # (B, K)
        if track:
            cand_idx = running_idx[rows, beam].copy()                   # (B, keep, max_new_tokens)
            cand_idx[:, :, cur - T0] = beam + rows * K
            running_idx = np.take_along_axis(cand_idx, nxt[:, :, None], 1)
        # the K best finished hypotheses so far
        fin = top_logp / np.float32((cur + 1 - T0) ** length_penalty)
        fin = fin + (is_finished.all(-1, keepdims=True) & (early_stopping is True)) * np.float32(-1e9)
        fin = fin + (~can_improve) * np.float32(-1e9)
        just = hits & top_mask[None, :]
        fin = fin + (~just) * np.float32(-1e9)
        m_seqs = np.concatenate([finished_seqs, cand], 1)
        m_scores = np.concatenate([finished_scores, fin], 1)
        m_len = np.concatenate([finished_len, np.full(cand.shape[:2], cur + 1 - T0)], 1)
        m_fin = np.concatenate([is_finished, just], 1)
        best = _topk(m_scores, K)
        finished_seqs = np.take_along_axis(m_seqs, best[:, :, None], 1)
        finished_scores = np.take_along_axis(m_scores, best, -1)
        finished_len = np.take_along_axis(m_len, best, -1)
        is_finished = np.take_along_axis(m_fin, best, -1)
        if track:
            finished_idx = np.take_along_axis(np.concatenate([finished_idx, cand_idx], 1), best[:, :, None], 1)
        stepper.reorder((rows * K + src_beam).reshape(-1))
        cur += 1
        # can a running beam still beat the worst finished one?
        best_len = (max_len - T0) if (early_stopping == "never" and length_penalty > 0) else (cur - T0)
        best_possible = running_scores[:, :1] / np.float32(best_len ** length_penalty)
        worst = np.where(is_finished, finished_scores.min(1, keepdims=True), np.float32(-1e9))
        can_improve &= (best_possible > worst).any(-1, keepdims=True)
        all_done = is_finished.all() and early_stopping is True
        if not can_improve.any() or all_done or hits.all():
            break
    n = num_return_sequences
    new = int(finished_len[:, :n].max())
    if track:
        record.sequences_scores = finished_scores[:, :n].reshape(B * n)
        record.beam_indices = finished_idx[:, :n, :new].reshape(B * n, new)
    return finished_seqs[:, :n, :T0 + new].reshape(B * n, T0 + new)


# ---- reading generate's scores ---------------------------------------------------------------
def compute_transition_scores(sequences, scores, beam_indices=None, normalize_logits: bool = False) -> np.ndarray:
    """The score of each generated token, (N, n), read out of generate's per-step `scores` (transformers'
    `compute_transition_scores`).

    sequences (N, T + n) as generate returned them; scores: its tuple of per-step (R, V) arrays;
    beam_indices (N, n), beam search's: which row of each step's scores a token came from (-1 once the
    hypothesis has ended, where the result is 0). Without them row i of the sequences reads row i of each
    step's scores (greedy search and sampling, R = N). The last n tokens of each row are read, n the longest
    hypothesis. normalize_logits=True takes each step's log-softmax first, turning greedy search's processed
    logits into log-probabilities. A beam hypothesis's transition scores summed and divided by
    n_i ** length_penalty (n_i: its own new tokens) give its sequences_scores.
    """
    if scores is None or len(scores) == 0:
        raise ValueError("scores is empty: pass the scores of generate(..., return_dict_in_generate=True, "
                         "output_scores=True)")
    seqs = _ids(sequences)
    steps = np.stack([backend.to_numpy(s.data if isinstance(s, Tensor) else s) for s in scores], 1)  # (R, S, V)
    R, S, V = steps.shape
    if normalize_logits:
        steps = _log_softmax(steps)
    if beam_indices is None:
        if seqs.shape[0] != R:
            raise ValueError(f"sequences has {seqs.shape[0]} rows but each step's scores {R}; beam search's scores "
                             f"need its beam_indices")
        beam = np.broadcast_to(np.arange(R)[:, None], (R, S))
    else:
        beam = _ids(beam_indices)
        if beam.ndim != 2 or beam.shape[0] != seqs.shape[0]:
            raise ValueError(f"beam_indices has shape {beam.shape} but sequences {seqs.shape}: one row per sequence")
    ended = beam < 0
    n = int((~ended).sum(-1).max()) if beam.size else 0
    if n > S or n > seqs.shape[1]:
        raise ValueError(f"beam_indices name {n} generated tokens but there are {S} steps of scores and "
                         f"{seqs.shape[1]} columns of sequences")
    beam, ended = np.where(ended, 0, beam)[:, :n], ended[:, :n]
    tokens = seqs[:, seqs.shape[1] - n:]                                        # the generated part
    picked = steps[beam, np.arange(n)[None, :], tokens]                          # (N, n): step j's score of token j
    return np.where(ended, 0, picked).astype(steps.dtype, copy=False)
