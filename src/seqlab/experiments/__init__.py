"""One experiment per question the chapter asks.

Each is a module `seqlab.experiments.<name>` (dashes become underscores)
exposing ``DESCRIPTION``, ``SETTINGS`` (its ``--set`` keys: a tuple of
`seqlab.experiments.common.Setting`, with an optional ``check(settings)`` for
rules between them) and ``run(out_dir: pathlib.Path, args) -> dict``; `run`
resolves its settings with `common.settings_for`, reports its phases with
`common.progress_for` (to ``args.say``, which `seqlab experiment` sets), writes `report.md`, `results.json` and PNG plots into
`out_dir` and returns the results. `seqlab experiment NAME --out DIR` checks
the ``--set`` values first, then prints the table.
"""
EXPERIMENTS = {
    "gradient-flow": "seqlab.experiments.gradient_flow",
    "long-range": "seqlab.experiments.long_range",
    "bottleneck": "seqlab.experiments.bottleneck",
    "positional-ablation": "seqlab.experiments.positional_ablation",
    "attention-cost": "seqlab.experiments.attention_cost",
    "heads": "seqlab.experiments.heads",
    "bert-vs-gpt": "seqlab.experiments.bert_vs_gpt",
}
