"""Streamers for `generate(..., streamer=...)`, transformers' BaseStreamer protocol: `put(ids)` with the prompt
(T5: the decoder start token), then with each new token, and `end()` after the last. `TextStreamer` prints
the text as it comes; `TextIteratorStreamer` hands it to another thread as an iterator."""
from __future__ import annotations

import unicodedata
from queue import Queue

import numpy as np

__all__ = ["BaseStreamer", "TextStreamer", "TextIteratorStreamer"]


class BaseStreamer:
    """What generate(streamer=...) calls: put(ids) with the prompt (T5: the decoder start token), then with
    each new token; end() after the last."""

    def put(self, value) -> None:
        raise NotImplementedError

    def end(self) -> None:
        raise NotImplementedError


def _is_cjk(char: str) -> bool:
    """A CJK Unified Ideograph (the main block, its extensions A–E and the compatibility blocks). Hangul,
    Hiragana and Katakana are not: those scripts separate words with spaces."""
    cp = ord(char)
    return any(lo <= cp <= hi for lo, hi in ((0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF),
                                             (0x2A700, 0x2B73F), (0x2B740, 0x2B81F), (0x2B820, 0x2CEAF),
                                             (0xF900, 0xFAFF), (0x2F800, 0x2FA1F)))


class TextStreamer(BaseStreamer):
    """Prints the text of generate's tokens to stdout as they come (transformers' TextStreamer).

        generate(gpt, ids, max_new_tokens=40, streamer=TextStreamer(tok, skip_prompt=True))

    The tokens so far are decoded together (`tokenizer.decode(ids, **decode_kwargs)`; seqlab's Tokenizer
    skips special tokens by default, transformers' tokenizers do not) and only text that further tokens
    cannot change is printed: text of letters, digits and spaces at once, a CJK character at once, otherwise
    up to the last space (a symbol may be half a character, or the start of markup). A newline prints the
    line and restarts decoding from its last token. `end()` prints what is left and a newline.
    skip_prompt=True leaves out the prompt (the first `put`). Printing is this class's purpose; subclass it
    and override `on_finalized_text` to send the text elsewhere.
    """

    def __init__(self, tokenizer, skip_prompt: bool = False, **decode_kwargs):
        self.tokenizer, self.skip_prompt, self.decode_kwargs = tokenizer, skip_prompt, decode_kwargs
        self.token_cache: list[int] = []            # the ids decoded together
        self.print_len = 0                           # how much of their text has been passed on
        self.next_tokens_are_prompt = True

    def _decode(self, ids: list[int]) -> str:
        return self.tokenizer.decode(ids, **self.decode_kwargs)

    def put(self, value) -> None:
        ids = np.asarray(value)                     # NumPy ids, or transformers' torch tensors
        if ids.ndim > 1:
            if ids.shape[0] > 1:
                raise ValueError(f"TextStreamer only supports batch size 1, got ids of shape {ids.shape}")
            ids = ids[0]
        if self.skip_prompt and self.next_tokens_are_prompt:
            self.next_tokens_are_prompt = False
            return
        self.token_cache.extend(int(i) for i in ids.reshape(-1))
        text = self._decode(self.token_cache)
        pending = text[self.print_len:]
        if text.endswith("\n"):  # the line is done: keep its last token as context (a leading space survives)
            out = pending
            self.token_cache = self.token_cache[-1:]
            self.print_len = len(self._decode(self.token_cache))
        elif text and _is_cjk(text[-1]) or all(c.isspace() or unicodedata.category(c)[0] in "LMN" for c in pending):
            out = pending                            # words (letters with their marks, digits) cannot change
            self.print_len += len(out)
        else:                                        # a symbol may be incomplete: only up to the last space
            out = text[self.print_len:text.rfind(" ") + 1]
            self.print_len += len(out)
        self.on_finalized_text(out)

    def end(self) -> None:
        """Pass on whatever is held back, then end the stream."""
        out = self._decode(self.token_cache)[self.print_len:] if self.token_cache else ""
        self.token_cache, self.print_len = [], 0
        self.next_tokens_are_prompt = True
        self.on_finalized_text(out, stream_end=True)

    def on_finalized_text(self, text: str, stream_end: bool = False) -> None:
        """Print `text` (and a newline at the end of the stream), flushed at once."""
        print(text, flush=True, end="\n" if stream_end else "")


class TextIteratorStreamer(TextStreamer):
    """The text chunks of a generation as an iterator, generate running in another thread (transformers'
    TextIteratorStreamer):

        streamer = TextIteratorStreamer(tok, skip_prompt=True)
        thread = threading.Thread(target=model.generate, args=(ids,), kwargs=dict(max_new_tokens=40,
                                                                                  streamer=streamer))
        thread.start()
        text = "".join(chunk for chunk in streamer)
        thread.join()

    `timeout` (seconds) bounds each wait for the next chunk (queue.Empty when it passes, e.g. when generate
    failed in its thread); None waits for ever.
    """

    def __init__(self, tokenizer, skip_prompt: bool = False, timeout: float | None = None, **decode_kwargs):
        super().__init__(tokenizer, skip_prompt, **decode_kwargs)
        self.text_queue: Queue = Queue()
        self.stop_signal = None
        self.timeout = timeout

    def on_finalized_text(self, text: str, stream_end: bool = False) -> None:
        self.text_queue.put(text, timeout=self.timeout)
        if stream_end:
            self.text_queue.put(self.stop_signal, timeout=self.timeout)

    def __iter__(self):
        return self

    def __next__(self) -> str:
        value = self.text_queue.get(timeout=self.timeout)
        if value is self.stop_signal:
            raise StopIteration
        return value
