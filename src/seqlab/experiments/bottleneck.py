"""bottleneck (the chapter's 7.3.1 claim): does attention remove the fixed-context bottleneck on long sentences?

Two Seq2Seq models, identical except for the context the decoder sees:
'none' gets ONE vector c = [→h_last; ←h_first] at every step (Cho et al. 2014),
'additive' gets c_t = Σ_s α_ts h_s (Bahdanau et al. 2015). Both train on
Multi30k de→en for the same time budget; test2016 BLEU (sacrebleu, cased,
detokenized) is reported per bucket of source length in words. The claim
predicts the gap grows with length.

`--quick` trains tiny models on 300 pairs for a few steps and scores 60
sentences: it checks the pipeline, not the claim. Settings (`--set`):
minutes (per model), train_limit, eval_limit, beam_size, epochs.
"""
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np

DESCRIPTION = "Seq2Seq with vs without attention on Multi30k: BLEU per source-length bucket"

EDGES = (10, 15, 20)


def run(out_dir: Path, args) -> dict:
    from seqlab.experiments.gradient_flow import _table
    from seqlab.translation import train_rnn_translation
    from seqlab.viz import line_plot

    opts = dict(getattr(args, "options", None) or {})
    quick = bool(getattr(args, "quick", False))
    seed = int(getattr(args, "seed", 0) or 0)
    data_dir = getattr(args, "data_dir", None)
    if quick:
        settings = dict(max_minutes=0.5, max_steps=40, epochs=4, batch_size=32, vocab_size=400, train_limit=300,
                        eval_limit=60, beam_size=1, log_every=5, emb_dim=32, enc_hidden=32, dec_hidden=64, attn_dim=32)
    else:
        settings = dict(max_minutes=20.0, epochs=30, batch_size=64, vocab_size=8000, beam_size=5)
    settings.update({k: v for k, v in opts.items()})
    if "minutes" in settings:
        settings["max_minutes"] = float(settings.pop("minutes"))
    runs = {}
    for attention in ("none", "additive"):
        r = train_rnn_translation(data_dir, out_dir / f"model_{attention}", progress=False, seed=seed,
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
