"""What the docs tests share: a code block reduced to its code, so an English page and its Chinese twin,
which translates the comments, can be compared."""
import io
import tokenize


def code_only(code: str) -> list[str]:
    """The block without comments or blank lines, each line right-stripped."""
    toks = [t for t in tokenize.generate_tokens(io.StringIO(code).readline) if t.type != tokenize.COMMENT]
    src = tokenize.untokenize(toks)
    return [ln.rstrip() for ln in src.splitlines() if ln.strip()]
