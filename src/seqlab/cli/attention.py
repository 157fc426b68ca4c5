"""Attention viewer: seqlab attention TEXT [--pair TEXT_B] [--model DIR_OR_NAME] [--target TEXT] --out DIR.

Runs a model on one text (or sentence pair) and writes into DIR:

    attention.html     the interactive viewer (head view + model view), one offline file
    attention.png      a layers x heads grid of heatmaps (encoder-decoders: the encoder's;
                       attention_decoder.png and attention_cross.png hold the others)
    layer_N.png        one larger image per layer (encoder-decoders: encoder_layer_N.png, ...)
    alignment.png      Seq2Seq only: the source x target alignment
    heads.csv          per layer and head: entropy, mean distance, dominant pattern

and prints the per-head table. --model is "minilm" (the default, the
pretrained all-MiniLM-L6-v2 BERT), a Hugging Face folder (config.json +
model.safetensors + tokenizer files; BERT, GPT-2 or T5), a folder written by
`seqlab train`, or a seqlab model folder (config.json of a TranslatorConfig,
Seq2SeqConfig or ClassifierConfig + model.safetensors + tokenizer/; or a
Seq2Seq translation folder with src_tokenizer/ and tgt_tokenizer/, as
`seqlab experiment bottleneck` writes them). A text
longer than the model's positions is cut to fit, with a warning on stderr
(--no-truncate: an error instead).
"""
from __future__ import annotations

import argparse
import dataclasses
import os
import re
import shutil
import sys
from pathlib import Path
from typing import Any, Callable

from seqlab.cli._text import add_truncation_argument, check_text, check_vocabulary, fit_to_model

# seqlab model folders without a `model_type`: (module, config class, model class), tried in order.
NATIVE_MODELS: tuple[tuple[str, str, str], ...] = (
    ("seqlab.models.translator", "TranslatorConfig", "Translator"),
    ("seqlab.models.seq2seq", "Seq2SeqConfig", "Seq2Seq"),
    ("seqlab.models.classifier", "ClassifierConfig", "TransformerClassifier"),
)
TOKENIZER_DIR = "tokenizer"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("text", metavar="TEXT", help="the text to run the model on")
    p.add_argument("--pair", metavar="TEXT_B", help="a second sentence (BERT-like encoders: segment B)")
    p.add_argument("--model", default="minilm", metavar="DIR_OR_NAME",
                   help="'minilm' (default), a Hugging Face folder, a seqlab run folder or model folder")
    p.add_argument("--target", metavar="TEXT",
                   help="the decoder's text for T5 / Translator / Seq2Seq (default: the model's greedy output)")
    p.add_argument("--layers", nargs="+", metavar="N",
                   help="layers to show: numbers, ranges and lists, e.g. 0 2-3 or 0,5 or -1 (default: all)")
    p.add_argument("--out", required=True, type=Path, metavar="DIR", help="output folder (created)")
    p.add_argument("--checkpoint", choices=("best", "latest"), default=None,
                   help="for a run folder: the best weights seen in evaluation (default) or the latest")
    p.add_argument("--title", help="title of the HTML page and the images")
    add_truncation_argument(p)


def run(args) -> int:
    from seqlab.folders import make_folder, output_folder
    from seqlab.viz.extract import extract_attention

    for name, value in (("TEXT", args.text), ("--pair", args.pair), ("--target", args.target)):
        if value is not None:
            check_text(value, name)
    layers = parse_layers(args.layers) if args.layers else None
    with output_folder(args.out, make_folder):  # fail before the model loads; a failure leaves no empty folder
        model, tokenizer, label = load_model(args.model, args.checkpoint)
        if isinstance(tokenizer, tuple):  # an RNN Seq2Seq's (source, target) tokenizers: no positions to fit
            att = extract_attention(model, tokenizer, args.text, args.pair, args.target, layers=layers)
        else:
            text, pair, target = fit_inputs(model, tokenizer, args.text, args.pair, args.target,
                                            args.no_truncate, args.model)
            att = extract_attention(model, tokenizer, text, pair, target, layers=layers)
        title = args.title or f"{att.model_name} ({label})"
        written, table = write_outputs(att, args.out, title)
    print(table)
    print(f"wrote {len(written)} files to {args.out}: " + ", ".join(p.name for p in written), file=sys.stderr)
    return 0


def parse_layers(specs: list[str]) -> list[int]:
    """'0', '2-3', '0,5', '-1' (from the end) -> a list of layer numbers; ConfigError for anything else."""
    from seqlab.errors import ConfigError

    out: list[int] = []
    for spec in specs:
        for part in filter(None, (s.strip() for s in spec.split(","))):
            if re.fullmatch(r"-?\d+", part):
                out.append(int(part))
            elif m := re.fullmatch(r"(\d+)-(\d+)", part):
                a, b = int(m.group(1)), int(m.group(2))
                if a > b:
                    raise ConfigError(f"--layers range {part!r} runs backwards; write {b}-{a}")
                out.extend(range(a, b + 1))
            else:
                raise ConfigError(f"--layers: {part!r} is not a layer number or range (e.g. 0 2-3 or -1)")
    if not out:
        raise ConfigError("--layers names no layer")
    return out


def fit_inputs(model: Any, tokenizer: Any, text: str, pair: str | None, target: str | None,
               no_truncate: bool = False, where: str = "the model folder") -> tuple[str, str | None, str | None]:
    """(text, pair, target) cut to the model's positions (with a warning), or `ConfigError` with no_truncate.

    Token ids are counted as `seqlab.viz.extract_attention` makes them; an id
    beyond the model's vocabulary (a tokenizer from another model) is a
    `CheckpointError`.
    """
    from seqlab.viz.extract import _encode, attention_kind

    own_ids = attention_kind(model) == "seq2seq" or type(model).__name__ == "Translator"  # text + </s>

    def source_ids(texts: list[str]) -> list[int]:
        if own_ids:
            return [int(i) for i in _encode(tokenizer, texts[0], special=False)[0][0]] + [model.config.eos_id]
        return [int(i) for i in _encode(tokenizer, texts[0], texts[1] if len(texts) > 1 else None)[0][0]]

    sources = {"TEXT": text} if pair is None else {"TEXT": text, "--pair": pair}
    fitted = fit_to_model(sources, lambda t: len(source_ids(t)), model, tokenizer, no_truncate)
    text, pair = fitted["TEXT"], fitted.get("--pair")
    check_vocabulary(source_ids(list(fitted.values())), model, tokenizer, where)
    if target is not None and own_ids:  # decoder input: <s> + target (T5's positions are relative)
        target = fit_to_model({"--target": target},
                              lambda t: 1 + len(_encode(tokenizer, t[0], special=False)[0][0]),
                              model, tokenizer, no_truncate)["--target"]
    return text, pair, target


# ---------------------------------------------------------------- loading a model and its tokenizer

def check_model_spec(spec: str, option: str = "--model",
                     accepts: str = "a model folder, a run folder or a pretrained name") -> None:
    """One clear error for a --model (or MODEL_DIR) that names no folder at all: an empty value (`UsageError`,
    exit 2), or a file such as a model.safetensors (`CheckpointError`, with its folder named when that folder
    holds the model). ``accepts`` says what the option takes."""
    from seqlab.cli.main import UsageError
    from seqlab.errors import CheckpointError
    from seqlab.hub.pretrained import CONFIG_NAME

    if not str(spec).strip():
        raise UsageError(f"{option} must not be empty; give {accepts}")
    path = Path(spec).expanduser()
    if path.exists() and not path.is_dir():
        folder = path.parent
        hint = f"; did you mean its folder {folder}?" if (folder / CONFIG_NAME).is_file() else ""
        raise CheckpointError(f"{option} {spec} is a file; give {accepts}{hint}")


def load_model(spec: str, checkpoint: str | None = None, *,
               check_run: Callable[[Any, Any], None] | None = None) -> tuple[Any, Any, str]:
    """(model in eval mode, tokenizer, a short label) for --model.

    ``spec``: a known pretrained name ("minilm"), a Hugging Face folder (the
    class from ``model_type`` via `seqlab.models.AutoModel`), a `seqlab train`
    run folder (config.json with "task"; tokenizer from RUN_DIR/tokenizer or the
    run's pretrained name; ``checkpoint``: its "best" (the default) or "latest" weights), or a seqlab model
    folder (see `NATIVE_MODELS`; a Seq2Seq folder with src_tokenizer/ and tgt_tokenizer/ gives the pair
    (source, target) as its tokenizer). An empty ``spec`` or a file is refused first (`check_model_spec`).
    ``check_run(model, run)`` refuses a run's model that the command cannot use, before the run's tokenizer
    loads; by default (`seqlab attention`) a model that returns no attention weights is refused as such.
    """
    from seqlab.errors import CheckpointError, ConfigError
    from seqlab.hub import PRETRAINED_NAMES, read_config, resolve
    from seqlab.hub.pretrained import subfolder_hint

    def not_a_run() -> None:
        if checkpoint is not None:
            raise ConfigError(f"--checkpoint {checkpoint} picks a seqlab run's weights, but {spec} is not a run "
                              f"folder (it has one set of weights)")

    check_model_spec(spec)
    path = Path(spec).expanduser()
    if not path.is_dir():
        if spec in PRETRAINED_NAMES:
            not_a_run()
            return _load_hf(resolve(spec), spec)
        known = ", ".join(sorted(PRETRAINED_NAMES))
        raise CheckpointError(f"model folder {spec} does not exist (and {spec!r} is not a known pretrained "
                              f"name: {known})")
    if is_run_folder(path):
        return _load_run(path, checkpoint or "best", check_run)
    if not (path / "config.json").is_file():
        raise CheckpointError(f"{path} has no config.json: expected a Hugging Face model folder "
                              f"(config.json + model.safetensors) or a seqlab run folder{subfolder_hint(path)}")
    config = read_config(path)
    not_a_run()
    if "model_type" in config:
        return _load_hf(path, path.name)
    return _load_native(path, config)


def _load_tokenizer(*candidates: Path | str) -> Any:
    from seqlab.data import load_tokenizer
    from seqlab.errors import CheckpointError

    for c in candidates:
        p = Path(c)
        if p.is_dir() and any((p / f).is_file() for f in ("tokenizer.json", "vocab.txt", "vocab.json",
                                                          "char_tokenizer.json")):
            return load_tokenizer(p)
    raise CheckpointError(f"no tokenizer found in {' or '.join(str(c) for c in candidates)} "
                          f"(tokenizer.json, vocab.txt, vocab.json + merges.txt or char_tokenizer.json)")


def _load_hf(folder: Path, label: str) -> tuple[Any, Any, str]:
    from seqlab.hub import read_config
    from seqlab.models.auto import AutoModel, model_class

    model_class(read_config(folder), str(folder / "config.json"))  # an unknown model_type fails here, first
    tok = _load_tokenizer(folder, folder / TOKENIZER_DIR)
    return AutoModel.from_pretrained(folder), tok, label


def is_run_folder(path: Path) -> bool:
    """A `seqlab train` run folder: config.json with "task" and "config", or (before its first save of a
    config) a checkpoints/latest."""
    from seqlab.hub import read_config

    if not path.is_dir():
        return False
    if not (path / "config.json").is_file():
        return (path / "checkpoints" / "latest").is_file()
    config = read_config(path)
    return "task" in config and "config" in config


def _load_run(run_dir: Path, checkpoint: str,
              check_run: Callable[[Any, Any], None] | None = None) -> tuple[Any, Any, str]:
    """(model, tokenizer, label) of a run folder's `checkpoint` weights."""
    from seqlab.train.runs import load_run

    from seqlab.viz.extract import attention_kind

    run = load_run(run_dir, which=checkpoint)
    if check_run is None:  # a model without attention (toy-classifier's MLP) says so, not "no tokenizer"
        attention_kind(run.task.model)
    else:
        check_run(run.task.model, run)
    return run.task.model, run_tokenizer(run_dir, run), f"{run.task_name} run, {run.checkpoint} weights"


def run_tokenizer(run_dir: Path, run: Any) -> Any:
    """The tokenizer of a loaded run: RUN_DIR/tokenizer, else that of the pretrained model it fine-tunes."""
    cfg = run.record.get("config", {})
    pretrained = cfg.get("pretrained") if isinstance(cfg, dict) else None
    candidates: list[Path | str] = [run_dir / TOKENIZER_DIR]
    if isinstance(pretrained, str):  # e.g. sst2-bert: the tokenizer of the model it fine-tunes
        from seqlab.hub import resolve

        candidates.append(resolve(pretrained))
    return _load_tokenizer(*candidates)


def _load_native(folder: Path, config: dict) -> tuple[Any, Any, str]:
    """A seqlab model folder: the config class whose fields cover config.json, weights from model.safetensors."""
    import importlib

    from seqlab.errors import CheckpointError
    from seqlab.hub import read_weights
    from seqlab.translation import SRC_TOKENIZER, TGT_TOKENIZER, load_rnn_translation

    for module, config_name, model_name in NATIVE_MODELS:
        try:
            mod = importlib.import_module(module)
        except ModuleNotFoundError:
            continue
        config_cls = getattr(mod, config_name)
        fields = {f.name for f in dataclasses.fields(config_cls)}
        required = {f.name for f in dataclasses.fields(config_cls)
                    if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING}
        if set(config) <= fields and required <= set(config):
            if model_name == "Seq2Seq" and (folder / SRC_TOKENIZER).is_dir() and (folder / TGT_TOKENIZER).is_dir():
                model, source, target = load_rnn_translation(folder)  # restores the tied output weight
                return model, (source, target), f"{folder.name}"
            model = getattr(mod, model_name)(config_cls(**config))
            model.load_state_dict(read_weights(folder))
            model.eval()
            return model, _load_tokenizer(folder / TOKENIZER_DIR, folder), f"{folder.name}"
    raise CheckpointError(f"{folder / 'config.json'} has no model_type (not a Hugging Face folder), no task "
                          f"(not a seqlab run) and does not match a TranslatorConfig, Seq2SeqConfig or "
                          f"ClassifierConfig: unknown model type")


# ---------------------------------------------------------------- writing the files

def write_outputs(att: Any, out: Path, title: str) -> tuple[list[Path], str]:
    """Write the viewer, the PNGs and heads.csv for a `ModelAttention`; return (paths, printed table)."""
    from seqlab.viz import alignment_plot, attention_grid, attention_html, format_heads_table, head_stats, \
        write_heads_csv
    from seqlab.folders import make_folder

    make_folder(out)
    all_layers = att.layers == list(range(len(att.layers)))
    # The viewer numbers the layers it is given from 0; say which model layers they are.
    note = "" if all_layers else f" (shown: layers {', '.join(map(str, att.layers))})"
    written = [attention_html(**att.view_kwargs(), title=title + note).save(out / "attention.html")]
    stacks = att.stacks()
    rows: list[dict] = []
    tables: list[str] = []
    for i, (name, stack) in enumerate(stacks.items()):
        queries, keys = att.queries_keys(name)
        prefix = "" if name == "self" else f"{name}_"
        grid = out / ("attention.png" if i == 0 else f"attention_{name}.png")
        heading = title if name == "self" else f"{title} \u2014 {name}"
        tmp = out / f".layers-{os.getpid()}"
        paths = attention_grid(stack, keys, grid, target_tokens=None if queries is keys else queries,
                               per_layer_dir=tmp, title=heading + note)
        written.append(paths[0])
        for layer, p in zip(att.layers, paths[1:]):  # file names carry the model's layer numbers
            dest = out / f"{prefix}layer_{layer}.png"
            os.replace(p, dest)
            written.append(dest)
        shutil.rmtree(tmp, ignore_errors=True)
        if name == "cross":
            continue  # head patterns (previous token, [SEP], ...) are defined for self-attention
        stats = head_stats(stack, keys)
        for r in stats:
            r["layer"] = att.layers[r["layer"]]
            if name != "self":
                r["stack"] = name
        rows += stats
        tables.append((f"{name} self-attention\n" if name != "self" else "") + format_heads_table(stats))
    if att.kind == "seq2seq":
        weights = stacks["cross"][0][0]  # (T_tgt, T_src)
        written.append(alignment_plot(weights, att.tokens, att.target_tokens, out / "alignment.png", title=title))
        tables.append(_alignment_table(weights, att.tokens, att.target_tokens))
    if rows:
        written.append(write_heads_csv(rows, out / "heads.csv"))
    return written, "\n\n".join(tables)


def _alignment_table(weights: Any, src: list[str], tgt: list[str]) -> str:
    """Per decoder step, labelled by its target token: the most attended source token and its weight. Tokens
    show as in the viewer and the PNGs (`seqlab.viz.labels`: "Ġman" as "␣man")."""
    import numpy as np

    from seqlab.viz.labels import token_labels

    w = np.asarray(weights, dtype=np.float64)  # (T_tgt, T_src)
    src, tgt = token_labels(src, tgt)  # one model: byte-level decided on all the tokens
    width = max(len(t) for t in tgt + ["target token"])
    lines = ["target token".ljust(width) + "  most attended source token (weight)"]
    for t, row in zip(tgt, w):
        j = int(row.argmax())
        lines.append(f"{t.ljust(width)}  {src[j]} ({row[j]:.3f})")
    return "\n".join(lines)
