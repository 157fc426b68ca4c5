"""Sentence embeddings with the bundled MiniLM: seqlab embed TEXT [TEXT ...].

Prints each sentence's embedding (size, norm, first values) and the matrix of
cosine similarities: mean pooling over real tokens, L2-normalised, as
sentence-transformers' all-MiniLM-L6-v2. A sentence longer than the model
reads (256 tokens for MiniLM) is cut, with a warning (--no-truncate: an error).

--model is resolved as `seqlab attention` resolves it (`seqlab.cli.attention.load_model`): a pretrained name,
a Hugging Face folder, or a `seqlab train` run folder (--checkpoint picks its best or latest weights); the
model must be a BERT (a task head's own BERT serves: an sst2-bert run, mlm-pretrain's RUN/pretrained).
"""
from __future__ import annotations

import argparse
from pathlib import Path

from seqlab.cli._text import add_truncation_argument, check_text, fit_to_model, warn


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("texts", nargs="*", metavar="TEXT", help="sentences (default: the chapter's example set)")
    p.add_argument("--model", default="minilm", metavar="DIR_OR_NAME",
                   help="a BERT: 'minilm' (default), a Hugging Face folder or a seqlab run folder (sst2-bert)")
    p.add_argument("--checkpoint", choices=("best", "latest"), default=None,
                   help="for a run folder: the best weights seen in evaluation (default) or the latest")
    p.add_argument("--section-3-2", action="store_true",
                   help="run the chapter's 3.2: tokenize one sentence and print the output shapes")
    add_truncation_argument(p)


def run(args) -> int:
    import numpy as np

    from seqlab import embed
    from seqlab.cli.main import UsageError

    if args.section_3_2 and len(args.texts) > 1:
        raise UsageError(f"conflicting options: --section-3-2 takes one TEXT, got {len(args.texts)}")
    for i, text in enumerate(args.texts):
        check_text(text, "TEXT" if len(args.texts) == 1 else f"TEXT [{i}]")
    encoder = load_encoder(args.model, args.checkpoint)  # loaded once, passed to embed.encode / section_3_2
    if args.section_3_2:
        text = args.texts[0] if args.texts else embed.SECTION_3_2_TEXT
        text = fit_to_model({"TEXT": text}, lambda t: len(encoder.tokenizer.encode(t[0])), encoder.model,
                            encoder.tokenizer, args.no_truncate)["TEXT"]
        r = embed.section_3_2(text, encoder)
        print(f"text:              {r['text']}")
        print(f"tokens:            {' '.join(r['tokens'])}")
        print(f"last_hidden_state: {r['last_hidden_state_shape']}")
        print(f"pooler_output:     {r['pooler_output_shape']}")
        return 0
    texts = args.texts or list(embed.SIMILARITY_EXAMPLE)
    _check_lengths(texts, encoder, args.no_truncate)
    v = embed.encode(texts, encoder)
    print(f"{len(texts)} sentences -> embeddings {v.shape} (mean-pooled, L2-normalised)")
    for i, (t, row) in enumerate(zip(texts, v)):
        head = " ".join(f"{x:+.3f}" for x in row[:4])
        print(f"[{i}] norm {np.linalg.norm(row):.3f}  [{head} ...]  {t}")
    sim = embed.cosine_similarity(v)
    print("cosine similarity:")
    print("      " + " ".join(f"[{j}]".rjust(6) for j in range(len(texts))))
    for i, row in enumerate(sim):
        print(f"[{i}]".ljust(6) + " ".join(f"{x:6.3f}" for x in row))
    return 0


NEEDS = ("seqlab embed needs a BERT: minilm, a Hugging Face BERT folder (mlm-pretrain writes one at "
         "RUN/pretrained) or an sst2-bert run folder")


def load_encoder(spec: str, checkpoint: str | None = None):
    """The `seqlab.embed.SentenceEncoder` of --model, found as `seqlab attention` finds its model; one error
    line when the model is not a BERT."""
    from seqlab import embed
    from seqlab.cli.attention import check_model_spec, is_run_folder, load_model
    from seqlab.data import Tokenizer
    from seqlab.errors import CheckpointError
    from seqlab.hub import read_config, resolve

    def check_run(model, run) -> None:  # before the run's tokenizer loads
        if embed.bert_encoder(model) is None:
            raise CheckpointError(f"{spec} is a seqlab run folder (task {run.task_name}) whose "
                                  f"{type(model).__name__} is not a BERT encoder; {NEEDS}")

    check_model_spec(spec)
    path = Path(spec).expanduser()
    if path.is_dir() and (path / "config.json").is_file() and not is_run_folder(path):
        model_type = read_config(path).get("model_type")  # a GPT-2 / T5 folder: said before its weights load
        if model_type is not None and model_type != "bert":
            raise CheckpointError(f"{spec} holds a model_type {model_type!r} model, but seqlab embed needs 'bert'; "
                                  f"{NEEDS}")
    model, tokenizer, _ = load_model(spec, checkpoint, check_run=check_run)
    if embed.bert_encoder(model) is None:
        raise CheckpointError(f"{spec} holds a {type(model).__name__}, not a BERT encoder; {NEEDS}")
    if not isinstance(tokenizer, Tokenizer):  # a character tokenizer (a BERT would not have one)
        raise CheckpointError(f"{spec}: its tokenizer ({type(tokenizer).__name__}) is not a BERT tokenizer; {NEEDS}")
    folder = None if is_run_folder(path) else resolve(spec)  # sentence_bert_config.json
    return embed.SentenceEncoder.from_model(model, tokenizer, folder=folder)


def _check_lengths(texts: list[str], encoder, no_truncate: bool) -> None:
    """Warn about (or, with no_truncate, refuse) sentences the encoder cuts at its max_length."""
    from seqlab.errors import ConfigError

    limit = encoder.max_length
    for i, text in enumerate(texts):
        n = len(encoder.tokenizer.encode(text))
        if n <= limit:
            continue
        name = "TEXT" if len(texts) == 1 else f"TEXT [{i}]"
        if no_truncate:
            raise ConfigError(f"{name} has {n} tokens but the sentence model reads at most {limit}; shorten it, "
                              f"or drop --no-truncate to embed its first {limit} tokens")
        warn(f"{name} has {n} tokens but the sentence model reads at most {limit}; embedding its first {limit} "
             f"(pass --no-truncate to refuse instead)")
