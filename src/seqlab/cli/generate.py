"""Generate text with a GPT-2 or T5 model: seqlab generate MODEL_DIR --prompt TEXT.

MODEL_DIR is a Hugging Face folder (config.json, model.safetensors and the
tokenizer files; `seqlab train clm-pretrain` writes one at RUN/pretrained) or
a `seqlab train` run folder of a GPT (shakespeare-gpt; --checkpoint picks its
best or latest weights). Greedy by default; --temperature / --top-k / --top-p
sample (with --seed); --num-beams runs beam search. When a GPT's prompt and
new tokens outgrow its positions, each new token reads the last n_positions
tokens, as nanoGPT's sampler does, with a note naming each prompt that
outgrew them (--no-truncate: an error instead). With several --prompt, each
output follows a line "--- prompt N ---" on stdout; one prompt prints its
text alone, as it is generated (greedy or sampling; --no-stream: at the end,
the same bytes).
"""
from __future__ import annotations

import argparse
from pathlib import Path

from seqlab.cli._args import int_at_least
from seqlab.cli.attention import check_model_spec, is_run_folder, run_tokenizer
from seqlab.cli._text import add_truncation_argument, check_text, check_vocabulary, note


ACCEPTS = "a GPT-2 or T5 Hugging Face folder or a shakespeare-gpt run folder"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("model_dir", metavar="MODEL_DIR",
                   help="Hugging Face folder of a GPT-2 or T5 model, or a seqlab run folder (shakespeare-gpt)")
    p.add_argument("--checkpoint", choices=("best", "latest"), default=None,
                   help="for a run folder: the best weights seen in evaluation (default) or the latest")
    p.add_argument("--prompt", required=True, action="append",
                   help="text to continue (GPT) or to transform (T5); repeat for a batch")
    p.add_argument("--max-new-tokens", type=int, default=40, metavar="N", help="tokens to add (default 40)")
    p.add_argument("--temperature", type=float, default=None, help="sample with this temperature")
    p.add_argument("--top-k", type=int, default=None,
                   help="sample from the k most likely tokens (default 50 when sampling, as transformers; 0: no limit)")
    p.add_argument("--top-p", type=float, default=None, help="sample from the smallest set with this much mass")
    p.add_argument("--num-beams", type=int, default=1, help="beam search with this many beams (no sampling)")
    p.add_argument("--repetition-penalty", type=float, default=None, metavar="P",
                   help="scores of tokens already in the text divided by P (> 1 discourages repeats)")
    p.add_argument("--no-repeat-ngram-size", type=int, default=None, metavar="N",
                   help="never repeat an N-gram already in the text")
    p.add_argument("--seed", type=int_at_least(0), default=0, help="random seed for sampling")
    p.add_argument("--no-cache", action="store_true", help="recompute every position at each step")
    p.add_argument("--no-stream", action="store_true",
                   help="print the text when it is complete (one --prompt without --num-beams prints it as it is "
                        "generated; the output is the same)")
    add_truncation_argument(p, default="each new token reads the last n_positions tokens, with a note")


def run(args) -> int:
    from seqlab.cli.main import UsageError
    from seqlab.data.tokenizers import Tokenizer
    from seqlab.hub.pretrained import resolve
    from seqlab.models.auto import AutoModel
    from seqlab.hub import PRETRAINED_NAMES
    from seqlab.models.generation import _check, _eos_list

    sample = any(v is not None for v in (args.temperature, args.top_k, args.top_p))
    if sample and args.num_beams > 1:
        raise UsageError("conflicting options: choose sampling (--temperature/--top-k/--top-p) or --num-beams, "
                         "not both")
    try:  # the library's own checks, before the model loads
        _check(args.max_new_tokens, args.temperature, args.top_k, args.top_p, args.num_beams,
               repetition_penalty=args.repetition_penalty, no_repeat_ngram_size=args.no_repeat_ngram_size)
    except ValueError as e:  # "top_p must be in (0, 1], got 2.0" -> "--top-p must be ..."
        option, rest = str(e).split(" ", 1)
        raise UsageError(f"--{option.replace('_', '-')} {rest}") from None
    names = ["--prompt" if len(args.prompt) == 1 else f"--prompt {i + 1}" for i in range(len(args.prompt))]
    for name, prompt in zip(names, args.prompt):
        check_text(prompt, name)
    # an empty MODEL_DIR, or a file (a model.safetensors): one line, before the list of pretrained names (BERTs)
    check_model_spec(args.model_dir, "MODEL_DIR", ACCEPTS)
    path = Path(args.model_dir).expanduser()
    if is_run_folder(path):
        from seqlab.errors import CheckpointError
        from seqlab.train.runs import load_run

        run = load_run(path, which=args.checkpoint or "best")
        model = run.task.model.eval()
        if not hasattr(model, "generate"):
            raise CheckpointError(f"{args.model_dir} is a seqlab run folder (task {run.task_name}) whose "
                                  f"{type(model).__name__} does not generate text; give a shakespeare-gpt run "
                                  f"folder, or the Hugging Face folder clm-pretrain writes at RUN/pretrained")
        tok = run_tokenizer(path, run)
    else:
        if args.checkpoint is not None:
            raise UsageError(f"--checkpoint {args.checkpoint} picks a seqlab run's weights, but {args.model_dir} "
                             f"is not a run folder (it has one set of weights)")
        if not path.exists() and args.model_dir not in PRETRAINED_NAMES:  # its list names BERTs: none generate
            from seqlab.errors import CheckpointError

            raise CheckpointError(f"model folder {args.model_dir} does not exist; give {ACCEPTS}")
        folder = resolve(args.model_dir)
        model = AutoModel.from_pretrained(folder)
        tok = None
    if not hasattr(model, "generate"):
        raise UsageError(f"{args.model_dir} holds a {type(model).__name__}, which does not generate text")
    tok = tok or Tokenizer.from_pretrained(folder)
    seq2seq = bool(getattr(model.config, "is_encoder_decoder", False))
    # a GPT prompt is text to continue: no [CLS] before it and no end-of-text ([SEP]) after it, which a BERT-style
    # template (clm-pretrain's WordPiece tokenizer) would add and the model would read as a finished line
    rows = [_encode(tok, p, seq2seq) for p in args.prompt]
    for row in rows:
        check_vocabulary(row, model, tok, args.model_dir)
    # T5's positions are relative: no limit
    slide = not seq2seq and _outgrows(rows, names, model.config.n_positions, args.max_new_tokens, args.no_truncate)
    ids, mask = _pad(rows, left=not seq2seq)
    streamer = None
    if len(rows) == 1 and args.num_beams == 1 and not args.no_stream:  # the text as it comes, then the same bytes
        streamer = (_LineStreamer("", lambda new: _decode(tok, new)) if seq2seq else
                    _LineStreamer(args.prompt[0], lambda new: continuation(tok, rows[0], new)))
    out = model.generate(ids, mask, max_new_tokens=args.max_new_tokens,
                         do_sample=sample, temperature=args.temperature or 1.0, top_k=args.top_k,
                         top_p=args.top_p, num_beams=args.num_beams, seed=args.seed,
                         use_cache=not args.no_cache, slide=slide, repetition_penalty=args.repetition_penalty,
                         no_repeat_ngram_size=args.no_repeat_ngram_size, streamer=streamer)
    eos = _eos_list(model.config.eos_token_id)
    for i, (name, prompt, kept, row) in enumerate(zip(names, args.prompt, rows, out)):
        new = row[1:] if seq2seq else row[ids.shape[1]:]                   # after the start token, or the prompt
        if len(args.prompt) > 1:  # a header line apart from the text (which may span lines); one prompt: none
            print(f"--- prompt {i + 1} ---", flush=True)
        if args.max_new_tokens and len(new) and int(new[0]) in eos:
            note(f"{name}: the model's first new token is its end of text (id {int(new[0])}), so nothing was "
                 f"added; a longer-trained model, or sampling (--temperature), may go on")
        if streamer is not None:  # printed already
            continue
        if seq2seq:
            print(_decode(tok, [int(i) for i in new]))
        else:
            print(prompt + continuation(tok, kept, new))
    return 0


class _LineStreamer:
    """Prints one output as generate() produces it, ending with the newline the whole line ends with.

    `head` (a GPT's prompt text; "" for T5) is printed when generation starts (generate's first `put`, the
    prompt ids). After each new token, `text_of(new ids)` — the same function the line printed at the end
    uses (`continuation` for a GPT, the decoded output for T5) — is printed as far as it is settled: the
    decoders of seqlab's tokenizers (byte-level BPE, WordPiece, SentencePiece, characters) only append text
    as tokens come, except that an incomplete UTF-8 character decodes to U+FFFD until its last byte arrives,
    so trailing U+FFFD are held back. `end()` prints the rest and the newline, so stdout is byte for byte
    what --no-stream prints.
    """

    def __init__(self, head: str, text_of):
        self.head, self.text_of = head, text_of
        self.new: list[int] = []
        self.shown = ""                                      # the part of text_of(new) printed so far
        self.started = False

    def put(self, value) -> None:
        import numpy as np

        if not self.started:                                 # the prompt ids: the text given
            self.started = True
            print(self.head, end="", flush=True)
            return
        self.new.extend(int(i) for i in np.asarray(value).reshape(-1))
        text = self.text_of(self.new).rstrip("\ufffd")
        if len(text) > len(self.shown) and text.startswith(self.shown):
            print(text[len(self.shown):], end="", flush=True)
            self.shown = text

    def end(self) -> None:
        text = self.text_of(self.new)
        if not text.startswith(self.shown):  # a decoder that rewrote printed text (none of seqlab's tokenizers)
            print(flush=True)
            note("the tokenizer's decoder changed text already printed, so the streamed line differs from the "
                 "final text; --no-stream prints the final text")
            return
        print(text[len(self.shown):], flush=True)


def continuation(tok, prompt_ids, new_ids) -> str:
    """The text the new tokens add after the prompt, read in context: the prompt and the new tokens are
    decoded together and the prompt's own decoding is cut off the front, so a word piece ("##ar") joins the
    word before it and a new word gets its space (WordPiece drops both when new tokens are decoded alone;
    byte-level BPE gives the same either way)."""
    new = [int(i) for i in new_ids]
    head = _decode(tok, [int(i) for i in prompt_ids])
    whole = _decode(tok, [int(i) for i in prompt_ids] + new)
    if whole.startswith(head):
        return whole[len(head):]
    return _decode(tok, new)  # a decoder that rewrites across the join: the new part alone


def _is_char(tok) -> bool:
    from seqlab.data.char_tokenizer import CharTokenizer

    return isinstance(tok, CharTokenizer)


def _encode(tok, text: str, special: bool) -> list[int]:
    if _is_char(tok):  # one id per character, no special tokens (shakespeare-gpt)
        return tok.encode(text)
    return tok.encode(text, add_special_tokens=special)


def _decode(tok, ids: list[int]) -> str:
    return tok.decode(ids) if _is_char(tok) else tok.decode(ids, skip_special_tokens=True)


def _outgrows(rows: list[list[int]], names: list[str], positions: int, max_new_tokens: int,
              no_truncate: bool) -> bool:
    """Whether some GPT prompt plus the new tokens outgrows the model's positions (with a note naming every
    such prompt), or refused.

    Prompts are left-padded to the longest, so the whole batch slides once the
    longest outgrows them; a prompt that fits with its new tokens still reads
    all of itself. Past the limit, generation slides: each new token reads the
    last ``positions`` tokens (``generate(slide=True)``, nanoGPT's sampler), so
    nothing of the prompt is cut from the output.
    """
    from seqlab.errors import ConfigError

    over = [i for i, r in enumerate(rows) if len(r) + max_new_tokens > positions]
    if not over:
        return False
    n = [len(rows[i]) for i in over]
    if len(over) == 1:
        why = (f"{names[over[0]]} has {n[0]} token{'s' if n[0] != 1 else ''} and --max-new-tokens "
               f"{max_new_tokens} adds more: {n[0] + max_new_tokens} positions, but the model has {positions} "
               f"positions (n_positions)")
    else:  # "--prompt 1 (20 tokens) and --prompt 2 (18 tokens) with --max-new-tokens 60 need 80 and 78 positions"
        prompts = [f"{names[i]} ({k} token{'s' if k != 1 else ''})" for i, k in zip(over, n)]
        needs = [str(k + max_new_tokens) for k in n]
        why = (f"{_and(prompts)} with --max-new-tokens {max_new_tokens} need {_and(needs)} positions, but the "
               f"model has {positions} positions (n_positions)")
    if no_truncate:
        fix = "shorten it" if len(over) == 1 else "shorten them"
        raise ConfigError(f"{why}; {fix}, lower --max-new-tokens, or drop --no-truncate")
    note(f"{why}; each new token reads the last {positions} tokens, as nanoGPT's sampler does "
         f"(--no-truncate refuses instead)")
    return True


def _and(items: list[str]) -> str:
    """["a", "b", "c"] -> "a, b and c"."""
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _pad(rows: list[list[int]], left: bool):
    """(ids, mask) int64 (B, T); GPT prompts are left-padded so every row ends at the last column.

    The pad id is irrelevant (masked out), so 0 serves even for tokenizers without a pad token.
    """
    import numpy as np

    if any(len(r) == 0 for r in rows):
        raise ValueError("a prompt encodes to no tokens; give some text")
    T = max(len(r) for r in rows)
    ids = np.zeros((len(rows), T), dtype=np.int64)
    mask = np.zeros((len(rows), T), dtype=np.int64)
    for i, r in enumerate(rows):
        sl = slice(T - len(r), T) if left else slice(0, len(r))
        ids[i, sl], mask[i, sl] = r, 1
    return ids, mask
