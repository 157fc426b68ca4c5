"""How a token is shown: one rule for the HTML viewer, the PNG heatmaps and the printed tables.

A label is the text the token stands for, with its whitespace made visible:

- byte-level BPE (GPT-2, the chapter's Seq2Seq and Translator tokenizers)
  writes every byte as a printable character: "Ġman" is " man", "Ċ" is a
  newline, "lÃ¤uft" is "läuft" (a character cut across two tokens shows
  its bytes: "<0xC3>", "<0xA4>");
- SentencePiece (T5) writes a space as "▁": "▁Haus" is " Haus";
- WordPiece (BERT) keeps its "##" on a word's continuation pieces, as bertviz shows them;
- then a space shows as "␣", a newline as "⏎", a tab as "→" (other whitespace
  as "␣"), a control character by its code point ("<U+0016>"), and an
  empty token as "∅".

So the character-level GPT's space token reads "␣", and a BPE word that
starts with a space reads "␣man" while a piece inside a word ("st", "ar")
has no mark. Whether a list of tokens is byte-level is read from the
tokens themselves (`is_byte_level`); lists from one model are decided
together (`token_labels`), so a token gets the same label in every output.
"""
from __future__ import annotations

from collections.abc import Sequence

VISIBLE = {" ": "\u2423", "\n": "\u23ce", "\t": "\u2192"}  # ␣ ⏎ →
EMPTY = "\u2205"  # ∅


def _byte_decoder() -> dict[str, int]:
    """GPT-2's byte-level alphabet, character -> byte: printable bytes stand for themselves, the other
    68 (space, control characters, ...) for chr(256 + n) in byte order ("Ġ" is the space, "Ċ" the newline)."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("\u00a1"), ord("\u00ac") + 1),
                 *range(ord("\u00ae"), ord("\u00ff") + 1)]
    out = {chr(b): b for b in printable}
    others = [b for b in range(256) if b not in out.values()]
    out.update({chr(256 + n): b for n, b in enumerate(others)})
    return out


BYTE_OF = _byte_decoder()


def is_byte_level(tokens: Sequence[str]) -> bool:
    """Whether ``tokens`` are byte-level BPE tokens: every character is in the byte-level alphabet (which
    has no whitespace) and some character is one no text writes ("Ġ", "Ċ"), or the non-ASCII characters
    are UTF-8 bytes of other characters ("Ã¤" for "ä"). ASCII-only tokens read the same either way."""
    chars = set("".join(tokens))
    if not chars <= BYTE_OF.keys() or all(ord(c) < 128 for c in chars):
        return False
    if any(ord(c) >= 256 for c in chars):
        return True
    try:
        bytes(BYTE_OF[c] for c in "".join(tokens)).decode("utf-8")
    except UnicodeDecodeError:
        return False  # Latin-1 text such as "läuft" in a WordPiece vocabulary
    return True


def _utf8(data: bytes) -> str:
    """``data`` as UTF-8 text; a byte of a character that the tokenizer cut across tokens as "<0xC3>" (as
    SentencePiece's byte fallback writes it)."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        pass
    out, i = [], 0
    while i < len(data):
        for n in (1, 2, 3, 4):
            try:
                out.append(data[i:i + n].decode("utf-8"))
            except UnicodeDecodeError:
                continue
            i += n
            break
        else:
            out.append(f"<0x{data[i]:02X}>")
            i += 1
    return "".join(out)


def token_text(token: str, byte_level: bool = False) -> str:
    """The text a token stands for: byte-level characters decoded ("<0xC3>" for a byte of a character cut
    across tokens), SentencePiece's "▁" as a space."""
    if byte_level:
        return _utf8(bytes(BYTE_OF[c] for c in token))
    return token.replace("\u2581", " ")


def _shown(c: str) -> str:
    if c in VISIBLE:
        return VISIBLE[c]
    if c.isspace():
        return VISIBLE[" "]
    return c if c.isprintable() else f"<U+{ord(c):04X}>"  # a control or format character: no glyph to draw


def visible(text: str) -> str:
    """``text`` with every whitespace character shown ("␣", "⏎", "→") and every other unprintable one by
    its code point ("<U+0016>"); "∅" for no text."""
    return "".join(map(_shown, text)) or EMPTY


def token_label(token: str, byte_level: bool = False) -> str:
    """The display label of one token: ``visible(token_text(token, byte_level))``.

    >>> token_label(" "), token_label("Ġman", byte_level=True), token_label("##ing")
    ('␣', '␣man', '##ing')
    """
    return visible(token_text(token, byte_level))


def token_labels(*token_lists: Sequence[str]) -> list[list[str]]:
    """The labels of one or more token lists of one model (source and target), byte-level decided on all
    of them together. A list of labels gives the same labels back."""
    byte_level = is_byte_level([t for tokens in token_lists for t in tokens])
    return [[token_label(t, byte_level) for t in tokens] for tokens in token_lists]
