"""bottleneck (the chapter's 7.3.1 claim): does attention remove the fixed-context bottleneck on long sentences?

Two Seq2Seq models, identical except for the context the decoder sees:
'none' gets ONE vector c = [→h_last; ←h_first] at every step (Cho et al. 2014),
'additive' gets c_t = Σ_s α_ts h_s (Bahdanau et al. 2015). Both train on
Multi30k de→en for the same time budget; test2016 BLEU (sacrebleu, cased,
detokenized) is reported per bucket of source length in words. The claim
predicts the gap grows with length.

`--quick` trains tiny models on 300 pairs for a few steps and scores 60
sentences: it checks the pipeline, not the claim. Settings (`--set`, see
`seqlab experiment bottleneck --help`): minutes (per model), train_limit,
eval_limit, beam_size, epochs, and every other argument of
`train_rnn_translation` and field of `Seq2SeqConfig`.
"""
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np

from seqlab.experiments.common import Setting, canonical, progress_for, settings_for

DESCRIPTION = "Seq2Seq with vs without attention on Multi30k: BLEU per source-length bucket"

EDGES = (10, 15, 20)
# What each mode passes to train_rnn_translation (then the --set values); the rest keep its defaults.
FULL = dict(max_minutes=20.0, epochs=30, batch_size=64, vocab_size=8000, beam_size=5)
QUICK = dict(max_minutes=0.5, max_steps=40, epochs=4, batch_size=32, vocab_size=400, train_limit=300,
             eval_limit=60, beam_size=1, log_every=5, emb_dim=32, enc_hidden=32, dec_hidden=64, attn_dim=32)
SETTINGS = (
    Setting("max_minutes", 20.0, 0.5, min=0, open_min=True, aliases=("minutes",), help="training minutes per model"),
    Setting("epochs", 30, 4, min=1, help="at most this many epochs"),
    Setting("max_steps", None, 40, type=int, min=0, help="at most this many steps (0: no limit)"),
    Setting("batch_size", 64, 32, min=1, help="sentence pairs per batch"),
    Setting("lr", 2e-3, min=0, open_min=True, help="Adam's peak learning rate"),
    Setting("min_lr", 5e-5, min=0, help="the cosine decay's final learning rate"),
    Setting("warmup_steps", 200, min=1, help="linear warm-up steps (at most a tenth of the run)"),
    Setting("vocab_size", 8000, 400, min=259, help="BPE vocabulary per language (at least 256 bytes + 3 specials)"),
    Setting("label_smoothing", 0.1, min=0, max=1, open_max=True, help="label smoothing of the loss"),
    Setting("clip", 1.0, min=0, open_min=True, help="gradient norm clipping"),
    Setting("beam_size", 5, 1, min=1, help="beam width on test2016 (1: greedy)"),
    Setting("length_penalty", 1.0, min=0, help="beam search length penalty"),
    Setting("train_limit", None, 300, type=int, min=0, help="training pairs used (0: all 29,000)"),
    Setting("eval_limit", None, 60, type=int, min=0, help="validation and test sentences used (0: all)"),
    Setting("log_every", 50, 5, min=1, help="steps between rows of each model's metrics.jsonl"),
    Setting("emb_dim", 256, 32, min=1, help="embedding size"),
    Setting("enc_hidden", 256, 32, min=1, help="encoder GRU units per direction"),
    Setting("dec_hidden", 512, 64, min=1, help="decoder GRU units"),
    Setting("attn_dim", 256, 32, min=1, help="hidden size of the additive attention score"),
    Setting("cell", "gru", choices=("gru", "lstm"), help="recurrent cell of the encoder and decoder"),
    Setting("enc_layers", 1, min=1, help="encoder layers"),
    Setting("dropout", 0.3, min=0, max=1, open_max=True, help="dropout"),
    Setting("tie_output", True, help="tie the output layer to the target embedding"),
)


def run(out_dir: Path, args) -> dict:
    from seqlab.experiments.gradient_flow import _table
    from seqlab.translation import train_rnn_translation
    from seqlab.viz import line_plot

    resolved = settings_for(__name__, args)
    quick = bool(getattr(args, "quick", False))
    seed = int(getattr(args, "seed", 0) or 0)
    data_dir = getattr(args, "data_dir", None)
    base = QUICK if quick else FULL
    given = canonical(SETTINGS, getattr(args, "options", None), "bottleneck")
    settings = {k: resolved[k] for k in [*base, *(k for k in given if k not in base)]}
    progress = progress_for(__name__, args)
    runs = {}
    for attention, what in (("none", "without attention (one fixed context vector)"),
                            ("additive", "with additive attention")):
        s = resolved
        progress.say(f"training Seq2Seq {what} on Multi30k de->en: {s['max_minutes']:g} min, at most "
                     f"{s['epochs']} epochs" + (f" / {s['max_steps']} steps" if s["max_steps"] else "")
                     + f", batch {s['batch_size']}; then test2016 BLEU, beam {s['beam_size']}")
        r = train_rnn_translation(data_dir, out_dir / f"model_{attention}", progress=progress.bars, seed=seed,
                                  attention=attention, **settings)
        runs[attention] = {k: v for k, v in r.items() if k not in ("model", "tokenizers")}
    buckets = [row["bucket"] for row in runs["none"]["by_length"]]
    table = _table(["source words", "sentences", "BLEU no attention", "BLEU additive attention", "gain"],
                   [[b, runs["none"]["by_length"][i]["sentences"], runs["none"]["by_length"][i]["bleu"],
                     runs["additive"]["by_length"][i]["bleu"],
                     runs["additive"]["by_length"][i]["bleu"] - runs["none"]["by_length"][i]["bleu"]]
                    for i, b in enumerate(buckets)]
                   + [["all", runs["none"]["test2016_sentences"], runs["none"]["test2016_bleu"],
                       runs["additive"]["test2016_bleu"],
                       runs["additive"]["test2016_bleu"] - runs["none"]["test2016_bleu"]]])
    xs = np.arange(1, len(buckets) + 1)
    line_plot({name: (xs, [row["bleu"] if math.isfinite(row["bleu"]) else np.nan for row in r["by_length"]])
               for name, r in (("no attention (fixed context)", runs["none"]),
                               ("additive attention", runs["additive"]))},
              out_dir / "bleu_by_length.png", "test2016 BLEU per source-length bucket",
              "bucket: " + ", ".join(f"{i}={b}" for i, b in zip(xs, buckets)) + " words", "BLEU")
    summary = {name: {k: r[k] for k in ("test2016_bleu", "best_val_loss", "steps", "epochs", "train_minutes",
                                         "parameters", "by_length")} for name, r in runs.items()}
    payload = {"settings": settings, "runs": summary, "quick": quick}
    (out_dir / "results.json").write_text(json.dumps(payload, indent=2, default=float) + "\n")
    (out_dir / "report.md").write_text(
        "# The information bottleneck (chapter 7.3.1)\n\n"
        "Seq2Seq (bidirectional GRU encoder, GRU decoder), identical except for the context vector: one fixed "
        "summary of the source vs additive attention over every source position. Same data, budget and "
        f"decoding; BLEU on test2016 per source length. Settings: `{json.dumps(settings)}`.\n\n"
        f"{table}\n\nPlot: `bleu_by_length.png`; each model's run folder holds its metrics, translations "
        f"and (with attention) `alignment.png`.\n"
        + ("\n*Quick mode: tiny models on 300 pairs — a pipeline check, not evidence.*\n" if quick else ""))
    return {"table": table, **payload}
