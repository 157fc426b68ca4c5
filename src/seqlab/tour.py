"""The first-run tour's steps as functions (`seqlab demo` / `make demo` prints them).

    import seqlab.tour as tour
    r = tour.section_3_2()                      # tokens, shapes, self-checks of the pretrained MiniLM
    tour.attention_view("runs/demo")            # attention.html + attention.png + heads.csv
    s = tour.train_sentiment("runs/demo", minutes=2)   # Transformer on SST-2 (or the synthetic task)
    g = tour.train_gpt("runs/demo", minutes=1.5)       # char GPT on tiny Shakespeare (or the synthetic play)

Each function returns a dict of what it measured and the paths it wrote;
none prints. The training steps take the data from ``data_dir`` /
``$SEQLAB_DATA`` / the download cache (downloading when reachable); where
no data can be had they train on a built-in synthetic task instead and say
so in the result (``source == "synthetic"``, ``data_error`` = why).
Training stops at its time budget (``max_minutes`` of the trainer).
"""
from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any, Callable, Iterable

import numpy as np

from seqlab.blas import blas_threads  # the tour runs on one BLAS thread (seqlab demo --blas-threads)
from seqlab.errors import DataError

MODEL = "minilm"
ATTENTION_TEXT = "The cat sat on the mat because it was tired."
PARAPHRASES = ("A man is eating food.", "A man eats a meal.")
UNRELATED = "The stock market fell sharply today."
SENTIMENT_PROBES = ("a gripping , beautifully acted film .", "a dull and lifeless mess .")
SYNTHETIC_PROBES = ("the film was good", "the film was not good")  # the synthetic task's words
Callback = Callable[[Any, dict], None]  # the trainer's callbacks: (trainer, row) after each step


# ---- 1. the chapter's 3.2: the pretrained BERT (MiniLM) in seqlab ------------------------------------
def section_3_2(text: str | None = None, model: str = MODEL) -> dict[str, Any]:
    """The chapter's 3.2 (tokens, last_hidden_state (1, T, 384), pooler_output (1, 384)) and self-checks.

    The checks need nothing but seqlab and NumPy; each is (name, passed, detail):
    - shapes: T equals the number of tokens, C the hidden size;
    - pooler: pooler_output = tanh(W h_[CLS] + b), recomputed in NumPy from the weights;
    - padding: the sentence alone and inside a padded batch (attention_mask 0 on the
      padding) give the same hidden states on its real tokens (|Δ| < 1e-4);
    - similarity: mean-pooled cosine of two paraphrases > that of an unrelated pair.
    """
    import seqlab.embed as E
    from seqlab.autograd import no_grad

    r = E.section_3_2(text or E.SECTION_3_2_TEXT, model)
    enc = E._encoder(str(model))  # the encoder section_3_2 just loaded (cached)
    T, C = len(r["tokens"]), enc.dim
    h, pooled = r["last_hidden_state"], r["pooler_output"]
    checks = [("shapes", h.shape == (1, T, C) and pooled.shape == (1, C),
               f"last_hidden_state {h.shape}, pooler_output {pooled.shape}, {T} tokens")]

    dense = enc.model.pooler.dense
    by_hand = np.tanh(h[:, 0].astype(np.float64) @ dense.weight.numpy().T.astype(np.float64)
                      + dense.bias.numpy())                                    # (1, C)
    err = float(np.abs(by_hand - pooled).max())
    checks.append(("pooler", err < 1e-5, f"tanh(W h_[CLS] + b) by hand: max |Δ| = {err:.1e}"))

    longer = r["text"] + " " + " ".join(["It is a long sentence that pads the first one."] * 2)
    batch = enc.tokenizer([r["text"], longer], padding=True)                  # (2, T') with T' > T
    with no_grad():
        hb = enc.model(batch["input_ids"], batch["attention_mask"], batch.get("token_type_ids")
                       ).last_hidden_state.numpy()                            # (2, T', C)
    err = float(np.abs(hb[0, :T] - h[0]).max())
    pad = int(hb.shape[1] - T)
    checks.append(("padding", err < 1e-4 and pad > 0,
                   f"alone vs. in a batch with {pad} padding tokens: max |Δ| = {err:.1e}"))

    v = enc.encode([*PARAPHRASES, UNRELATED])                                 # (3, C), unit length
    same, other = float(v[0] @ v[1]), float(v[0] @ v[2])
    checks.append(("similarity", same > other,
                   f"cos(paraphrases) = {same:.3f} > cos(unrelated) = {other:.3f}"))
    return {"text": r["text"], "tokens": r["tokens"], "input_ids": r["input_ids"][0].tolist(),
            "last_hidden_state_shape": tuple(h.shape), "pooler_output_shape": tuple(pooled.shape),
            "hidden_size": C, "checks": checks, "ok": all(ok for _, ok, _ in checks)}


# ---- 2. the attention viewer ------------------------------------------------------------------------
def attention_view(out: str | Path, text: str = ATTENTION_TEXT, model: str = MODEL) -> dict[str, Any]:
    """MiniLM's self-attention on `text`: attention.html (viewer), attention.png (layers × heads), heads.csv."""
    import seqlab.embed as E
    from seqlab.viz import attention_grid, attention_html, extract_attention, head_stats, write_heads_csv

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    enc = E._encoder(str(model))
    att = extract_attention(enc.model, enc.tokenizer, text)                 # L × (H, T, T)
    title = f"{type(enc.model).__name__} ({model}): {text}"
    html = attention_html(**att.view_kwargs(), title=title).save(out / "attention.html")
    png = attention_grid(att.attentions, att.tokens, out / "attention.png", title=title)[0]
    rows = head_stats(att.attentions, att.tokens)
    csv = write_heads_csv(rows, out / "heads.csv")
    patterns: dict[str, int] = {}
    for row in rows:
        patterns[row["pattern"]] = patterns.get(row["pattern"], 0) + 1
    return {"text": text, "tokens": att.tokens, "layers": len(att.attentions), "heads": int(att.attentions[0].shape[0]),
            "patterns": patterns, "html": html, "png": Path(png), "csv": csv}


# ---- built-in synthetic data (used only when the real data cannot be had) ----------------------------
NEGATORS = ("not", "never")


def synthetic_reviews(n: int, seed: int = 0) -> list[tuple[str, int]]:
    """n (sentence, label) pairs: filler words with 1-3 opinion words, each maybe negated ("not good").

    The label is 1 when the (negation-flipped) positive words outnumber the
    negative ones; a negator flips only the word right after it, so word
    order matters and a bag of words cannot get every sentence right.
    """
    from seqlab.train.tasks.toy_classifier import FILLER, NEGATIVE, POSITIVE

    rng = np.random.default_rng(seed)
    rows: list[tuple[str, int]] = []
    while len(rows) < n:
        units = [[str(w)] for w in rng.choice(FILLER, size=int(rng.integers(3, 9)))]
        score = 0
        for _ in range(int(rng.integers(1, 4))):
            polarity = int(rng.choice((-1, 1)))
            phrase = [str(rng.choice(POSITIVE if polarity > 0 else NEGATIVE))]
            if rng.random() < 0.35:
                phrase.insert(0, str(rng.choice(NEGATORS)))
                polarity = -polarity
            units.append(phrase)  # a negated phrase stays whole: "not" always precedes its own word
            score += polarity
        if score:
            order = rng.permutation(len(units))
            rows.append((" ".join(w for i in order for w in units[i]), int(score > 0)))
    return rows


def synthetic_play(n_chars: int = 60_000, seed: int = 0) -> str:
    """A play-shaped text from a small grammar ("KING:\\nThe queen doth love a rose.\\n\\n"), n_chars long."""
    speakers = ("KING", "QUEEN", "ROMEO", "JULIET", "FOOL", "NURSE")
    subjects = ("the king", "the queen", "my lord", "the fool", "thy love", "the night", "this heart", "the moon")
    verbs = ("doth love", "shall see", "hath made", "would keep", "must find", "did swear by", "cannot bear")
    objects = ("the crown", "a rose", "my sword", "the sweet day", "thy gentle hand", "the stars", "all the world")
    rng = np.random.default_rng(seed)
    parts: list[str] = []
    size = 0
    while size < n_chars:
        lines = [f"{rng.choice(speakers)}:"]
        for _ in range(int(rng.integers(1, 4))):
            line = f"{rng.choice(subjects)} {rng.choice(verbs)} {rng.choice(objects)}{rng.choice(('.', '!', '?', ','))}"
            lines.append(line[0].upper() + line[1:])
        parts.append("\n".join(lines) + "\n\n")
        size += len(parts[-1])
    return "".join(parts)[:n_chars]


def _probe(load: Callable[[], Any]) -> str | None:
    """None when `load()` finds the data (local or downloaded), else the DataError's message."""
    try:
        load()
    except DataError as e:
        return str(e).strip().splitlines()[0]
    return None


def sst2_missing(data_dir: str | Path | None = None) -> str | None:
    """None when SST-2 can be had (data_dir, $SEQLAB_DATA, the cache or a download), else why not."""
    from seqlab.data import load_sst2

    return _probe(lambda: (load_sst2("train", data_dir), load_sst2("dev", data_dir)))


def shakespeare_missing(data_dir: str | Path | None = None) -> str | None:
    """None when tiny Shakespeare can be had, else why not."""
    from seqlab.data import load_shakespeare

    return _probe(lambda: load_shakespeare(data_dir))


def _source(missing: Callable[[Any], str | None], data_dir: Any, synthetic: bool | None) -> str | None:
    """Why the synthetic task is used (None: the real data is), probing only when `synthetic` is None."""
    if synthetic is None:
        return missing(data_dir)
    return "the synthetic task was asked for" if synthetic else None


def _fresh(folder: Path) -> Path:
    """The tour's own run folder, emptied: a second tour replaces the first one's runs."""
    shutil.rmtree(folder, ignore_errors=True)
    return folder


def _settings(defaults: dict, steps_per_minute: int, minutes: float, max_steps: int | None, seed: int) -> dict:
    """A training step's settings: its defaults, the time budget and as many steps as fit in it."""
    steps = max_steps or max(20, int(steps_per_minute * minutes))
    return {**defaults, "max_minutes": minutes, "max_steps": steps, "seed": seed}


def _train_task(task: str, out: str | Path, settings: dict, data_dir: Any, callbacks: Iterable[Callback]
                ) -> tuple[Path, Any]:
    """(run folder, result) of the registered `task` trained into OUT/TASK, as `seqlab train` does."""
    from seqlab.train import runs

    run_dir = _fresh(Path(out) / task)
    return run_dir, runs.train(task, run_dir, [(settings, "seqlab demo")], data_dir=data_dir, callbacks=callbacks)


def _train_synthetic(name: str, config_cls: type, settings: dict, out: str | Path,
                     make_task: Callable[[Any, Path], Any], callbacks: Iterable[Callback],
                     overrides: dict | None = None) -> tuple[Path, Any, Any]:
    """(run folder, result, task): `make_task(config, run_dir)` trained into OUT/NAME with the task's
    Config from `settings` (then the synthetic task's `overrides`)."""
    from seqlab.train.config import build_config

    run_dir = _fresh(Path(out) / name)
    layers = [(settings, "seqlab demo")] + ([(overrides, "synthetic task")] if overrides else [])
    config = build_config(config_cls, *layers)
    task = make_task(config, run_dir)
    return run_dir, _fit(task, config, run_dir, name, callbacks), task


def _fit(task: Any, config: Any, run_dir: Path, name: str, callbacks: Iterable[Callback]) -> Any:
    """Train a task built here (the synthetic fallbacks) with the generic trainer, as runs.train does."""
    import seqlab
    from seqlab.train import Trainer, make_optimizer, make_schedule

    seqlab.manual_seed(config.seed)
    trainer = Trainer(task.model, make_optimizer(config), task.batches, task.loss_fn, config, run_dir,
                      schedule=make_schedule(config, task.model_config.get("d_model")), evaluate=task.evaluate,
                      run_config={"task": name, "config": config.to_dict(), "model_config": task.model_config},
                      callbacks=callbacks)
    result = trainer.fit()
    if task.finish is not None:
        result.extra = task.finish(task.model, run_dir) or {}
    return result


# ---- 3. a from-scratch Transformer classifier on SST-2 -----------------------------------------------
# The task's defaults aim at 20 minutes; two minutes want smaller batches (more updates), a shorter
# warm-up, a higher peak and a cosine that ends about when the budget does: max_steps is about what one
# BLAS thread on 2 busy cores managed per minute (855 steps in 30 s, dev accuracy 0.774 without the
# decay); a faster machine reaches max_steps before the budget and the tour ends sooner.
SENTIMENT_SETTINGS = {"batch_size": 32, "lr": 1e-3, "warmup_steps": 50, "eval_every": 0, "checkpoint_every": 0,
                      "log_every": 10}
STEPS_PER_MINUTE = 1500


def train_sentiment(out: str | Path, minutes: float = 2.0, data_dir: str | Path | None = None, seed: int = 0,
                    max_steps: int | None = None, callbacks: Iterable[Callback] = (),
                    synthetic: bool | None = None) -> dict[str, Any]:
    """Train sst2-transformer for `minutes` into OUT/sst2-transformer (or OUT/synthetic-sentiment).

    ``synthetic``: None uses SST-2 when `sst2_missing` finds it, else the
    synthetic task; True / False force one (False raises the DataError).

    Returns source ("SST-2" | "synthetic"), data_error (why not SST-2, or
    None), run_dir, steps, stopped, seconds, dev_acc, dev_loss, examples and
    the model's predictions for `SENTIMENT_PROBES` (`SYNTHETIC_PROBES` on the synthetic task; 1 = positive).
    """
    from seqlab.train import runs
    from seqlab.train.tasks import sst2_transformer

    settings = _settings(SENTIMENT_SETTINGS, STEPS_PER_MINUTE, minutes, max_steps, seed)
    error = _source(sst2_missing, data_dir, synthetic)
    if error is None:
        run_dir, result = _train_task("sst2-transformer", out, settings, data_dir, callbacks)
        loaded = runs.load_run(run_dir, data_dir=data_dir)  # the best weights, as `seqlab eval` sees them
        predict, info = loaded.task, loaded.record.get("info", {})
    else:
        run_dir, result, predict = _train_synthetic("synthetic-sentiment", sst2_transformer.Config, settings, out,
                                                    _synthetic_classifier, callbacks,
                                                    overrides={"vocab_size": 200, "max_len": 32})
        info = predict.info
    probes = SENTIMENT_PROBES if error is None else SYNTHETIC_PROBES
    labels = predict.predict(predict.model, list(probes)) if predict.predict else []
    return {"source": "SST-2" if error is None else "synthetic", "data_error": error, "run_dir": run_dir,
            "steps": result.step, "stopped": result.stopped, "seconds": result.elapsed_s,
            "dev_acc": result.last_eval.get("val_acc"), "dev_loss": result.last_eval.get("val_loss"),
            "examples": info.get("train_examples"),
            "probes": [(s, int(y)) for s, y in zip(probes, labels)]}


def _synthetic_classifier(config: Any, run_dir: Path) -> Any:
    """sst2-transformer's model and batches on `synthetic_reviews` (4,000 train, 500 dev sentences)."""
    from seqlab.data import Tokenizer
    from seqlab.train.tasks.classify import TextClassification
    from seqlab.train.tasks.sst2_transformer import make_model

    train, dev = synthetic_reviews(4000, seed=1), synthetic_reviews(500, seed=2)
    tok = Tokenizer.train_wordpiece([s for s, _ in train], config.vocab_size)
    tok.save(run_dir / "tokenizer")
    model = make_model(config, tok.vocab_size, tok.pad_token_id)
    clf = TextClassification(tok.encode_batch, tok.pad_token_id, config.batch_size, config.max_len)
    return clf.task(model, model.config.to_dict(), train, dev, info={"vocab_size": tok.vocab_size})


# ---- 4. a character-level GPT on tiny Shakespeare ----------------------------------------------------
# nanoGPT's CPU settings made for a minute or two: half the layers (twice the steps per second), a
# higher peak learning rate and a shorter warm-up (on 2 busy cores, 2 BLAS threads, one minute: 183
# steps and val loss 2.44, against 85 steps and 2.58 with the full settings; one BLAS thread: 607 steps
# in 30 s, val loss 2.06), a smaller loss estimate and a shorter sample.
GPT_SETTINGS = {"n_layer": 2, "lr": 3e-3, "warmup_steps": 20, "eval_every": 0, "checkpoint_every": 0,
                "log_every": 10, "eval_iters": 8, "sample_chars": 160}
GPT_STEPS_PER_MINUTE = 1100


def train_gpt(out: str | Path, minutes: float = 1.5, data_dir: str | Path | None = None, seed: int = 0,
              max_steps: int | None = None, callbacks: Iterable[Callback] = (),
              synthetic: bool | None = None) -> dict[str, Any]:
    """Train shakespeare-gpt for `minutes` into OUT/shakespeare-gpt (or OUT/synthetic-gpt), then sample.

    ``synthetic`` as in `train_sentiment` (probing with `shakespeare_missing`).

    Returns source ("tiny Shakespeare" | "synthetic"), data_error, run_dir,
    steps, stopped, seconds, val_loss, sample (the text, also in
    RUN_DIR/sample.txt) and line (its first line of 20 characters or more, else its longest).
    """
    from seqlab.train.tasks import shakespeare_gpt

    settings = _settings(GPT_SETTINGS, GPT_STEPS_PER_MINUTE, minutes, max_steps, seed)
    error = _source(shakespeare_missing, data_dir, synthetic)
    if error is None:
        run_dir, result = _train_task("shakespeare-gpt", out, settings, data_dir, callbacks)
    else:
        run_dir, result, _ = _train_synthetic("synthetic-gpt", shakespeare_gpt.Config, settings, out, _synthetic_gpt,
                                              callbacks)
    path = run_dir / "sample.txt"
    sample = path.read_text(encoding="utf-8") if path.is_file() else ""
    lines = [ln.strip() for ln in sample.splitlines() if ln.strip()]
    line = next((ln for ln in lines if len(ln) >= 20), max(lines, key=len, default=""))  # a line, not a name
    return {"source": "tiny Shakespeare" if error is None else "synthetic", "data_error": error,
            "run_dir": run_dir, "steps": result.step, "stopped": result.stopped, "seconds": result.elapsed_s,
            "val_loss": result.last_eval.get("val_loss"), "sample": sample, "sample_path": path, "line": line}


def _synthetic_gpt(config: Any, run_dir: Path) -> Any:
    """shakespeare-gpt's model, batches, evaluation and sample on `synthetic_play`."""
    from seqlab.data import CharTokenizer, causal_lm_windows, train_val_split
    from seqlab.models.gpt import GPT, GPTConfig
    from seqlab.train.tasks.base import Task, model_output
    from seqlab.train.tasks.shakespeare_gpt import lm_evaluate, lm_loss, sample

    text = synthetic_play(seed=config.seed)
    tok = CharTokenizer(text)
    tok.save(run_dir / "tokenizer")
    ids = np.array(tok.encode(text), dtype=np.int64)
    train_ids, val_ids = train_val_split(ids, config.train_frac)
    model = GPT(GPTConfig(vocab_size=tok.vocab_size, n_positions=config.block_size, n_embd=config.n_embd,
                          n_layer=config.n_layer, n_head=config.n_head, resid_pdrop=config.dropout,
                          embd_pdrop=config.dropout, attn_pdrop=config.dropout))

    def batches(epoch: int, rng: np.random.Generator):
        while True:
            yield causal_lm_windows(train_ids, config.block_size, config.batch_size, rng)  # (B, T) each

    def loss_fn(model, batch):
        x, y = batch
        return lm_loss(model_output(model(x)), y), {"tokens": int(x.size)}

    def finish(model, out_dir: Path) -> dict:
        ids_out = sample(model, tok.encode("\n"), config.sample_chars, config.temperature, config.seed)
        (Path(out_dir) / "sample.txt").write_text(tok.decode(ids_out), encoding="utf-8")
        return {"sample": str(Path(out_dir) / "sample.txt")}

    return Task(model=model, model_config=model.config.to_dict(), batches=batches, loss_fn=loss_fn,
                finish=finish, evaluate=lambda m: lm_evaluate(m, {"train": train_ids, "val": val_ids},
                                                            config.block_size, config.batch_size,
                                                            config.eval_iters, config.seed),
                info={"characters": len(text), "vocab_size": tok.vocab_size})


# ---- the time plan --------------------------------------------------------------------------------------
DEFAULT_MINUTES = 4.5
SHARES = {"sentiment": 2.0 / 4.5, "gpt": 1.5 / 4.5}  # of the total; the rest: loading, pictures, evaluation


def plan(total_minutes: float) -> dict[str, float]:
    """Training minutes of each step for a total budget (4.5 -> sentiment 2.0, gpt 1.5)."""
    if not total_minutes > 0:
        raise ValueError(f"the tour's budget must be > 0 minutes, got {total_minutes}")
    return {name: total_minutes * share for name, share in SHARES.items()}


MIN_TRAIN_S = 2.0  # however late the tour runs, each training gets this long
MIN_SHARE = 0.5    # ... and at least this fraction of its planned minutes


def fit_minutes(planned: float, left_s: float, later_s: float, floor_s: float | None = None) -> float:
    """The plan, cut so that what comes after (later_s seconds) still fits in left_s; at least floor_s.

    The default floor is MIN_SHARE of the plan (at least MIN_TRAIN_S): a
    budget too small for the tour's fixed costs (loading, evaluation, pictures:
    about a minute) still trains each step for half its share, and the tour
    runs past the budget instead.
    """
    floor_s = max(MIN_TRAIN_S, MIN_SHARE * planned * 60) if floor_s is None else floor_s
    return max(floor_s, min(planned * 60, left_s - later_s)) / 60


def next_commands(results: dict[str, Any], out: str | Path, data_dir: str | Path | None = None) -> list[str]:
    """The `seqlab` commands worth trying after the tour, given the run folders it wrote."""
    out = Path(out)
    cmds = [f'seqlab attention "The movie was not good at all." --pair "I loved it." --out {out / "pair"}',
            'seqlab embed "A man is eating food." "A man eats a meal." "The stock market fell."']
    data = f" --data-dir {data_dir}" if data_dir else ""
    sent, gpt = results.get("sentiment"), results.get("gpt")
    if sent and sent["source"] == "SST-2":
        run = sent["run_dir"]
        cmds += [f"seqlab info {run}",
                 f'seqlab attention "a gripping , beautifully acted film ." --model {run} --out {out / "sst2-attention"}',
                 f"seqlab train sst2-transformer{data} --out runs/sst2   # exercise 1 in full: about 5 minutes"]
    elif sent:
        cmds.append("seqlab train sst2-transformer --data-dir DIR --out runs/sst2   # DIR holding sst2/train.tsv, "
                    "sst2/dev.tsv")
    if gpt and gpt["source"] != "synthetic":
        cmds += [f'seqlab attention "ROMEO: But soft" --model {gpt["run_dir"]} --out {out / "gpt-attention"}',
                 f"seqlab train shakespeare-gpt{data} --out runs/gpt   # nanoGPT's 2,000 CPU steps"]
    cmds.append("seqlab experiment --help   # the chapter's questions, answered with numbers and plots")
    return cmds


__all__ = ["attention_view", "blas_threads", "fit_minutes", "next_commands", "plan", "section_3_2", "shakespeare_missing",
           "sst2_missing", "synthetic_play", "synthetic_reviews", "train_gpt", "train_sentiment"]
