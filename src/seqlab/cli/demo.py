"""The first-run tour: seqlab demo [--out runs/demo] [--data-dir DIR] [--minutes 4.5] [--steps mlp,...].

The tour is a list of steps (`STEPS`); each shows one idea of the chapter and
writes its files into the output folder (`--steps` runs a subset):

  mlp        7.1: an MLP learns two spirals by backpropagation (seqlab.cli.spirals)
  bert       3.2: the pretrained MiniLM in seqlab, its shapes, and self-checks
  attention  exercise 2: the attention viewer (attention.html, attention.png)
  sentiment  exercise 1: a Transformer classifier from scratch on SST-2
  gpt        7.5: a character-level GPT on tiny Shakespeare, and a sample

then a summary of what was written where (also OUT/tour.json) and the
commands to try next. The two training steps share --minutes (see
`seqlab.tour.plan`; at least half their share when the budget is too small
for the other steps); without data they train on built-in synthetic tasks and
say so (a --data-dir that does not exist is an error, not a reason to). The
steps themselves live in `seqlab.tour` (and step `mlp`'s in
`seqlab.cli.spirals`, re-exported here); this file prints.

Progress bars go to stderr by `seqlab train`'s rule (`seqlab.cli._args.wants_bar`): with --progress, or by
default only when stderr is a terminal; the steps' lines go to stdout either way. --minutes is a finite
number > 0 (inf and nan are refused before anything is written).
"""
from __future__ import annotations

import argparse
import json
import math
import os
import pathlib
import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from seqlab.cli._args import add_progress_argument, check_threads, finite_float, int_at_least, wants_bar
from seqlab.folders import make_folder
from seqlab.cli.spirals import (MLPResult, accuracy, build_mlp, make_spirals,  # noqa: F401  (public here too)
                                plot_decision_boundary, plot_loss, train_mlp)

DEFAULT_OUT = pathlib.Path("runs/demo")


# ---- the tour ---------------------------------------------------------------------------------------
@dataclass
class Context:
    """What the steps share: the options, the output folder, the clock and every step's result."""

    args: argparse.Namespace
    out: pathlib.Path
    wanted: list[str]
    start: float = field(default_factory=time.monotonic)
    results: dict = field(default_factory=dict)
    written: list[tuple[str, pathlib.Path]] = field(default_factory=list)   # (what, path) for the summary
    failed: list[str] = field(default_factory=list)                         # self-checks that failed
    bars: bool = False                      # progress bars on stderr (`wants_bar`: --progress, else a terminal)

    def left_s(self) -> float:
        return self.args.minutes * 60 - (time.monotonic() - self.start)


@dataclass
class Step:
    name: str
    title: str
    run: Callable[[Context], list[str]]  # prints its progress; returns the lines to print at the end


# Seconds each step spends outside its training loop (data, vocabulary, evaluation, sample), measured
# on 2 busy cores; the time plan keeps them free for the steps that follow.
AFTER_TRAINING_S = {"sentiment": 12.0, "gpt": 20.0}


class TrainingBar:
    """A tqdm bar over a training's time budget, the trainer's callback: seconds, step and loss.

    A training that reaches its max_steps before the budget ends the bar there, at 100% of the seconds it
    took ("100%| 19/19 s step 417/417"), rather than leaving it part-way while evaluation and sampling run.
    """

    def __init__(self, desc: str, minutes: float, enabled: bool = True):
        from tqdm import tqdm

        self.bar = tqdm(total=round(minutes * 60, 1), desc=desc, unit="s", leave=False, mininterval=0.5,
                        disable=not enabled,
                        bar_format="{desc}: {percentage:3.0f}%|{bar}| {n:.0f}/{total:.0f} s{postfix}")

    def __call__(self, trainer, row: dict) -> None:
        if self.bar.disable:
            return
        last = row["step"] >= trainer.config.max_steps
        self.bar.update(max(0.0, min(self.bar.total, trainer.elapsed()) - self.bar.n))
        # the postfix is drawn with the bar's next timed refresh (a forced one each step only floods a log)
        self.bar.set_postfix_str(f"step {row['step']}/{trainer.config.max_steps}, loss {row['loss']:.3f}",
                                 refresh=last)
        if last and self.bar.n < self.bar.total:  # done before the budget: the bar ends at what it took
            self.bar.total = max(self.bar.n, 0.1)
            self.bar.refresh()

    def close(self) -> None:
        self.bar.close()


def _minutes_for(ctx: Context, name: str) -> tuple[float, bool]:
    """This step's training minutes: its share of --minutes, cut so that the later steps still fit but not
    below its floor (`tour.fit_minutes`); and whether the floor held (the tour then runs past --minutes)."""
    from seqlab import tour

    planned = tour.plan(ctx.args.minutes)
    later = AFTER_TRAINING_S[name] + sum(planned[n] * 60 + AFTER_TRAINING_S[n]
                                         for n in ctx.wanted[ctx.wanted.index(name) + 1:] if n in planned)
    left = ctx.left_s()
    minutes = tour.fit_minutes(planned[name], left, later)
    return minutes, minutes * 60 > left - later + 1e-6


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _duration(seconds: float) -> str:
    """'2.0 min' from a minute on, else seconds ('45 s', '2.5 s'), so a short time never reads '0.0 min'."""
    if seconds >= 59.5:
        return f"{seconds / 60:.1f} min"
    return f"{seconds:.0f} s" if seconds >= 9.95 else f"{seconds:.1f} s"


def _where(ctx: Context) -> str:
    if ctx.args.data_dir:
        return f"--data-dir {ctx.args.data_dir}"
    if os.environ.get("SEQLAB_DATA"):
        return f"$SEQLAB_DATA={os.environ['SEQLAB_DATA']}, then the download cache"
    return "the download cache (downloading what is missing)"


def _no_data_banner(what: str, error: str, instead: str) -> None:
    print(f"  !! {what} could not be had: {error}")
    print(f"  !! training on the built-in SYNTHETIC {instead} instead; its numbers say nothing about {what}")


def step_mlp(ctx: Context) -> list[str]:
    from tqdm import tqdm

    steps = ctx.args.mlp_steps
    report_every = max(1, steps // 5)
    bar = tqdm(total=steps, desc="MLP on two spirals", unit="step", leave=False, mininterval=0.5,
               disable=not ctx.bars)

    def on_step(step: int, loss: float) -> None:
        if step == 0:
            # The first step carries the setup and the kernels' first-call compilation (seconds, against
            # milliseconds for each step after it): the bar's clock starts after it, or its rate (a moving
            # average) would read the first step's for most of the run.
            bar.reset()
        bar.update(1)
        if step % 10 == 0:
            bar.set_postfix(loss=f"{loss:.4f}", refresh=False)  # shown with the next timed refresh
        if step == 0 or (step + 1) % report_every == 0:
            tqdm.write(f"  step {step + 1:5d}  loss {loss:.4f}")

    try:
        res = train_mlp(steps=steps, seed=ctx.args.seed, on_step=on_step)
    finally:
        bar.close()
    X, y = make_spirals(seed=ctx.args.seed)
    png = plot_decision_boundary(res.model, X, y, ctx.out / "mlp_decision_boundary.png",
                                 f"2-64-64-2 tanh MLP: test accuracy {res.test_accuracy:.3f}")
    loss_png = plot_loss(res.losses, ctx.out / "mlp_loss.png")
    ctx.written += [("MLP decision boundary", png), ("MLP loss curve", loss_png)]
    ctx.results["mlp"] = {"steps": steps, "loss_first": res.losses[0], "loss_last": res.losses[-1],
                          "train_accuracy": res.train_accuracy, "test_accuracy": res.test_accuracy,
                          "seconds": res.seconds}
    return [f"  loss {res.losses[0]:.4f} -> {res.losses[-1]:.4f} in {steps} steps ({res.seconds:.1f} s)",
            f"  accuracy: train {res.train_accuracy:.3f}, held-out {res.test_accuracy:.3f}",
            f"  decision boundary: {png}"]


def step_bert(ctx: Context) -> list[str]:
    from seqlab import tour

    print("  loading all-MiniLM-L6-v2 (6 layers, 384 dims, 12 heads) from safetensors ...")
    r = tour.section_3_2()
    ctx.results["bert"] = r
    if not r["ok"]:
        ctx.failed += [f"3.2 self-check {name}: {detail}" for name, ok, detail in r["checks"] if not ok]
    T, C = len(r["tokens"]), r["hidden_size"]
    lines = [f"  text: {r['text']}",
             f"  tokens ({T}): {' '.join(r['tokens'])}",
             f"  input_ids: {r['input_ids']}",
             f"  last_hidden_state: {r['last_hidden_state_shape']}  (batch, {T} tokens, {C} features)",
             f"  pooler_output:     {r['pooler_output_shape']}     tanh(W h_[CLS] + b), one vector per sentence",
             "  self-check (seqlab and NumPy only, no PyTorch):"]
    lines += [f"    {'ok  ' if ok else 'FAIL'}  {name:<10}  {detail}" for name, ok, detail in r["checks"]]
    return lines


def step_attention(ctx: Context) -> list[str]:
    from seqlab import tour

    print("  running MiniLM with output_attentions=True and drawing every layer and head ...")
    r = tour.attention_view(ctx.out)
    ctx.results["attention"] = r
    ctx.written += [("attention viewer (open in a browser, works offline)", r["html"]),
                    ("attention, layers x heads", r["png"]), ("what each head does", r["csv"])]
    kinds = ", ".join(f"{k} {n}" for k, n in sorted(r["patterns"].items(), key=lambda kv: -kv[1]))
    return [f"  \"{r['text']}\": {len(r['tokens'])} tokens, {r['layers']} layers x {r['heads']} heads",
            f"  head patterns (dominant share of attention): {kinds}",
            f"  viewer: {r['html']}", f"  heatmaps: {r['png']}"]


def _merged(path: pathlib.Path, results: dict) -> dict:
    """This run's results over an earlier tour's in `path`: a partial tour (--steps) updates its steps' entries
    and keeps the others', whose files are still in the folder. An unreadable earlier file is replaced."""
    try:
        earlier = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        earlier = None
    return {**earlier, **results} if isinstance(earlier, dict) else results


def _train_on_data(ctx: Context, name: str, data: str, missing: Callable, instead: str, train: Callable,
                   desc: str, then: str) -> dict:
    """Look for `data` (the synthetic task stands in, said loudly, when `missing` gives an error), train
    with `train` for this step's minutes under a bar; its result, with "data_error", goes in ctx.results."""
    print(f"  looking for {data} in {_where(ctx)} ...", flush=True)
    error = missing(ctx.args.data_dir)
    if error:
        _no_data_banner(data, error, instead)
    minutes, over = _minutes_for(ctx, name)
    print(f"  training for {_duration(minutes * 60)}, then {then}", flush=True)
    if over:
        print(f"  (--minutes {ctx.args.minutes:g} may leave too little for the steps still to come; this "
              f"training keeps at least half its share, so the tour may run past its budget)", flush=True)
    bar = TrainingBar(desc, minutes, ctx.bars)
    try:
        r = train(ctx.out, minutes, ctx.args.data_dir, ctx.args.seed, callbacks=[bar], synthetic=error is not None)
    finally:
        bar.close()
    r["data_error"] = error
    ctx.results[name] = r
    return r


def step_sentiment(ctx: Context) -> list[str]:
    from seqlab import tour

    r = _train_on_data(ctx, "sentiment", "SST-2", tour.sst2_missing, "sentiment task (opinion words, some negated)",
                       tour.train_sentiment, "Transformer classifier", "evaluating on the dev set")
    ctx.written.append((f"Transformer classifier run ({r['source']})", r["run_dir"]))
    acc = "n/a" if r["dev_acc"] is None else f"{r['dev_acc']:.3f}"
    lines = [f"  data: {r['source']}" + (f" ({r['examples']:,} training sentences)" if r["examples"] else ""),
             f"  {_plural(r['steps'], 'step')} in {_duration(r['seconds'])} (stopped: {r['stopped']}); "
             f"dev accuracy {acc}" + (" on the SYNTHETIC task" if r["data_error"] else "")]
    lines += [f"  {s!r} -> {'positive' if y else 'negative'}" for s, y in r["probes"]]
    return lines


def step_gpt(ctx: Context) -> list[str]:
    from seqlab import tour

    r = _train_on_data(ctx, "gpt", "tiny Shakespeare", tour.shakespeare_missing, "play text (a small grammar)",
                       tour.train_gpt, "character GPT", "sampling")
    ctx.written += [(f"character GPT run ({r['source']})", r["run_dir"]), ("its sample", r["sample_path"])]
    loss = "n/a" if r["val_loss"] is None else f"{r['val_loss']:.3f}"
    return [f"  data: {r['source']}",
            f"  {_plural(r['steps'], 'step')} in {_duration(r['seconds'])} (stopped: {r['stopped']}); "
            f"validation loss {loss} nats/char",
            f"  sampled line: {r['line']!r}"]


STEPS: list[Step] = [
    Step("mlp", "7.1 A feed-forward network learns two interleaved spirals by backpropagation", step_mlp),
    Step("bert", "3.2 The pretrained BERT (all-MiniLM-L6-v2) in seqlab: tokens and output shapes", step_bert),
    Step("attention", "Exercise 2: the attention viewer", step_attention),
    Step("sentiment", "Exercise 1: a Transformer classifier trained from scratch on SST-2", step_sentiment),
    Step("gpt", "7.5 A character-level GPT on tiny Shakespeare, and a sampled line", step_gpt),
]


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", type=pathlib.Path, default=DEFAULT_OUT, help=f"output folder (default {DEFAULT_OUT})")
    p.add_argument("--data-dir", type=pathlib.Path, metavar="DIR",
                   help="local dataset folder (default: $SEQLAB_DATA, else download; without data the training "
                        "steps use built-in synthetic tasks)")
    p.add_argument("--minutes", type=finite_float(0, above=True), default=4.5, metavar="M",
                   help="time budget of the whole tour, a finite number > 0 (default 4.5; the SST-2 training gets "
                        "44%%, the GPT 33%%, and at least half of that when the budget is too small for the other "
                        "steps)")
    p.add_argument("--steps", default=",".join(s.name for s in STEPS),
                   help="comma-separated tour steps to run (default: all of " + ", ".join(s.name for s in STEPS) + ")")
    p.add_argument("--seed", type=int_at_least(0), default=0,
                   help="random seed of every step's data, initialisation and sampling (default 0)")
    p.add_argument("--mlp-steps", type=int_at_least(1), default=600, help="training steps of the MLP (default 600)")
    p.add_argument("--blas-threads", type=int, default=1, metavar="N",
                   help="threads of NumPy's BLAS during the tour (default 1: the tour's models are small, and on a "
                        "busy machine more threads wait on each other; 0 = leave it as it is)")
    add_progress_argument(p, "without it the steps' lines still go to stdout")


def summary(ctx: Context) -> list[str]:
    """The closing summary: what was written where, and the commands to try next."""
    from seqlab import tour

    width = max((len(what) for what, _ in ctx.written), default=0)
    lines = [f"Written to {ctx.out}/:"]
    lines += [f"  {what:<{width}}  {path}" for what, path in ctx.written]
    lines += [f"  {'everything above, as JSON':<{width}}  {ctx.out / 'tour.json'}", "",
              "Try next (in the virtual environment: source .venv/bin/activate):"]
    lines += [f"  {cmd}" for cmd in tour.next_commands(ctx.results, ctx.out, ctx.args.data_dir)]
    lines += ["  make test   # the proofs: every op against PyTorch, every model against Hugging Face"]
    return lines


def _jsonable(x):
    if isinstance(x, dict):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    if isinstance(x, pathlib.Path):
        return str(x)
    if isinstance(x, np.generic):
        return x.item()
    return x


def run(args: argparse.Namespace) -> int:
    from seqlab.cli.main import UsageError

    wanted = [s.strip() for s in args.steps.split(",") if s.strip()]
    known = {s.name: s for s in STEPS}
    unknown = [w for w in wanted if w not in known]
    if unknown or not wanted:
        raise UsageError(f"unknown demo step(s) {', '.join(unknown) or repr(args.steps)}; "
                         f"choose from {', '.join(known)}")
    if not (math.isfinite(args.minutes) and args.minutes > 0):  # as the option's type says (run() called directly)
        raise UsageError(f"--minutes must be a finite number > 0, got {args.minutes:g}")
    if args.blas_threads < 0:
        raise UsageError(f"--blas-threads must be >= 0, got {args.blas_threads}")
    check_threads(args.blas_threads, "--blas-threads")
    if args.data_dir is not None and not args.data_dir.is_dir():  # a typo, not a reason for the synthetic tasks
        from seqlab.errors import DataError

        raise DataError(f"data folder {args.data_dir} does not exist or is not a folder")
    from seqlab import tour

    out = make_folder(pathlib.Path(args.out))
    ctx = Context(args, out, wanted, bars=wants_bar(getattr(args, "progress", None)))
    with tour.blas_threads(args.blas_threads or None) as threads:
        # the budget goes to the two training steps; without them the tour takes seconds, not the budget
        when = (f"in about {args.minutes:g} minute{'' if args.minutes == 1 else 's'}"
                if set(wanted) & set(AFTER_TRAINING_S) else "without training, in under a minute")
        print(f"seqlab's first-run tour: {_plural(len(wanted), 'step')} {when}, writing to {out}/ "
              f"(NumPy's BLAS on {threads if threads is not None else 'its default number of'} thread(s))")
        for i, name in enumerate(wanted, 1):
            step = known[name]
            print(f"\n[{i}/{len(wanted)}] {step.title}", flush=True)
            t0 = time.monotonic()
            for line in step.run(ctx):
                print(line)
            print(f"  ({time.monotonic() - t0:.0f} s)", flush=True)
    elapsed = time.monotonic() - ctx.start
    ctx.results["seconds"] = elapsed
    ctx.results["failed_checks"] = ctx.failed
    (out / "tour.json").write_text(json.dumps(_jsonable(_merged(out / "tour.json", ctx.results)), indent=2,
                                              default=str) + "\n", encoding="utf-8")
    print(f"\nThe tour took {int(elapsed // 60)} min {elapsed % 60:.0f} s.")
    for line in summary(ctx):
        print(line)
    if ctx.failed:
        raise ValueError("self-check failed: " + "; ".join(ctx.failed))
    return 0
