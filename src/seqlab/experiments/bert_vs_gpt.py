"""bert-vs-gpt (the chapter's exercise 3): is a bidirectional encoder the better classifier?

BERT (masked LM, `mlm-pretrain`), GPT (causal LM, `clm-pretrain`) and T5
(span corruption, Raffel et al. 2020 §3.1.4, here) of one size — blocks,
d_model, heads, feed-forward, vocabulary — are pretrained on the same text
(SST-2 training sentences + Multi30k English) with the same budget, then
fine-tuned on SST-2 with the same budget: BERT on the pooled [CLS], GPT on
the last real token ([SEP] closes the sentence, as in GPT-1), T5 text to text
("positive" / "negative", scored by rank classification). The pretrained
MiniLM (reference) and a BERT without pretraining (control) get the same
fine-tuning. A budget is minutes capped by steps (`--set pretrain_minutes=0
--set pretrain_steps=N`: steps only); settings: FULL. `--quick` checks the
pipeline on a few hundred sentences; it is not evidence.
"""
from __future__ import annotations

import json
import math
import shutil
import time
from pathlib import Path
from typing import Any

import numpy as np

from seqlab.errors import ConfigError
from seqlab.experiments.common import SAME, Setting, progress_for, settings_for

DESCRIPTION = "exercise 3: MLM encoder vs causal decoder vs T5 of one size, same text and budget, on SST-2"

FULL: dict[str, Any] = dict(
    corpus="sst2+multi30k", corpus_lines=0,             # 0 = every line of the corpus
    vocab_size=8000, max_len=64, d_model=128, nhead=4, num_layers=4, dim_feedforward=512, dropout=0.1,
    pretrain_minutes=3.0, pretrain_steps=100_000, pretrain_batch=64, pretrain_lr=1e-3, pretrain_warmup=200,
    pretrain_eval_every=250,
    finetune_minutes=2.0, finetune_steps=100_000, finetune_batch=32, finetune_lr=5e-4, minilm_lr=5e-5,
    finetune_warmup=100, eval_every=150, max_train_examples=0, max_dev_examples=0,
    noise_density=0.15, mean_span=3.0, sentinels=16, t5_encoder_layers=0, t5_decoder_layers=0,
    minilm=True, control=True, progress="auto",
)
QUICK: dict[str, Any] = dict(
    corpus_lines=400, vocab_size=300, max_len=32, d_model=32, nhead=2, num_layers=2, dim_feedforward=128,
    pretrain_minutes=0.0, pretrain_steps=15, pretrain_batch=16, pretrain_warmup=2, pretrain_eval_every=0,
    finetune_minutes=0.0, finetune_steps=8, finetune_batch=8, finetune_warmup=2, eval_every=4,
    max_train_examples=300, max_dev_examples=48, sentinels=8,
)
RUNS = ("pretrain_mlm", "pretrain_clm", "pretrain_t5", "tokenizer")
LABEL_WORDS = ("negative", "positive")   # SST-2 label 0, 1


# ---------------------------------------------------------------- settings and the budget-keeping trainer

def _auto_or_bool(value: Any) -> Any:
    """The `progress` setting: "auto" (bars on a terminal) or a bool."""
    from seqlab.train.config import coerce

    if isinstance(value, str) and value.strip().lower() == "auto":
        return "auto"
    try:
        return coerce("progress", value, bool, "--set")
    except ConfigError:
        raise ConfigError(f"--set: progress expects auto, true or false, got {value!r}") from None


# Allowed values and a line of help per setting; the types are FULL's.
RULES: dict[str, dict[str, Any]] = dict(
    corpus=dict(help="pretraining text: sst2, multi30k (English), joined with +, or a UTF-8 file"),
    corpus_lines=dict(min=0, help="use the first lines of each corpus part, this many in all (0: every line)"),
    vocab_size=dict(min=1, help="WordPiece vocabulary shared by every model"),
    max_len=dict(min=4, help="tokens per example"),
    d_model=dict(min=1, help="model width (a multiple of nhead)"),
    nhead=dict(min=1, help="attention heads"),
    num_layers=dict(min=2, help="Transformer blocks (T5: encoder + decoder)"),
    dim_feedforward=dict(min=1, help="feed-forward width"),
    dropout=dict(min=0, max=1, open_max=True, help="dropout"),
    pretrain_minutes=dict(min=0, help="pretraining minutes per model (0: steps only)"),
    pretrain_steps=dict(min=1, help="at most this many pretraining steps"),
    pretrain_batch=dict(min=1, help="pretraining batch"),
    pretrain_lr=dict(min=0, help="pretraining peak learning rate"),
    pretrain_warmup=dict(min=0, help="pretraining warm-up steps"),
    pretrain_eval_every=dict(min=0, help="steps between pretraining evaluations (0: at the end)"),
    finetune_minutes=dict(min=0, help="fine-tuning minutes per model (0: steps only)"),
    finetune_steps=dict(min=1, help="at most this many fine-tuning steps"),
    finetune_batch=dict(min=1, help="fine-tuning batch"),
    finetune_lr=dict(min=0, help="fine-tuning peak learning rate"),
    minilm_lr=dict(min=0, help="MiniLM's fine-tuning learning rate"),
    finetune_warmup=dict(min=0, help="fine-tuning warm-up steps"),
    eval_every=dict(min=0, help="fine-tuning steps between dev evaluations (0: at the end)"),
    max_train_examples=dict(min=0, help="SST-2 training sentences used (0: all)"),
    max_dev_examples=dict(min=0, help="SST-2 dev sentences used (0: all)"),
    noise_density=dict(min=0, max=1, open_min=True, open_max=True, help="T5: share of tokens corrupted"),
    mean_span=dict(min=1, help="T5: mean corrupted span length"),
    sentinels=dict(min=2, help="T5: sentinel tokens added to the vocabulary"),
    t5_encoder_layers=dict(min=0, help="T5 encoder blocks (0 with t5_decoder_layers 0: split num_layers)"),
    t5_decoder_layers=dict(min=0, help="T5 decoder blocks"),
    minilm=dict(help="also fine-tune the pretrained MiniLM (reference)"),
    control=dict(help="also fine-tune a BERT without pretraining (control)"),
    progress=dict(type=str, convert=_auto_or_bool, choices=("auto", "true", "false"),
                  help="progress bars: auto (on a terminal), true or false (false: no progress lines either)"),
)
SETTINGS = tuple(Setting(key, value, QUICK.get(key, SAME), **RULES.get(key, {})) for key, value in FULL.items())


def check(s: dict[str, Any]) -> None:
    """Rules between settings (ConfigError)."""
    if s["d_model"] % s["nhead"]:
        raise ConfigError(f"d_model ({s['d_model']}) must be a multiple of nhead ({s['nhead']})")


def settings(args) -> dict[str, Any]:
    """FULL, then QUICK (with --quick), then --set values, each converted to the default's type and checked."""
    return settings_for(__name__, args)


def _trainer_class():
    from seqlab.train import Trainer

    class BudgetTrainer(Trainer):
        """The trainer, with evaluation time kept off the budget's clock and each evaluation recorded."""

        curve: list

        def evaluate(self):
            t = time.monotonic()
            results = super().evaluate()
            self._t0 += time.monotonic() - t     # the dev set is for the plot, not part of the budget
            self.curve.append({"step": self.step, "train_s": round(self.elapsed(), 2), **results})
            return results
    return BudgetTrainer


def _train(model, batches, loss_fn, evaluate, cfg, progress: bool, off_clock: bool = True) -> tuple[Any, list]:
    """Fit with seqlab's trainer (no run folder); returns (TrainResult, evaluation curve).

    off_clock=False keeps evaluations on the clock, as `seqlab train` (the MLM and CLM pretraining) does."""
    from seqlab.train import Trainer, make_optimizer, make_schedule

    trainer = (_trainer_class() if off_clock else Trainer)(model, make_optimizer(cfg), batches, loss_fn, cfg, None,
                                                           schedule=make_schedule(cfg), evaluate=evaluate,
                                                           progress=progress)
    trainer.curve = []
    return trainer.fit(), trainer.curve


# ---------------------------------------------------------------- T5 span corruption

def _partition(m: int, k: int, rng: np.random.Generator) -> np.ndarray:
    """m items cut into k non-empty runs at random: (k,) lengths summing to m."""
    cuts = np.sort(rng.choice(np.arange(1, m), k - 1, replace=False)) if k > 1 else np.array([], dtype=int)
    return np.diff(np.concatenate([[0], cuts, [m]]))


def span_corrupt(ids: list[int], rng: np.random.Generator, density: float, mean_span: float, sentinel0: int,
                 n_sentinels: int, eos: int) -> tuple[list[int], list[int]]:
    """T5's objective on one sentence: (input, target) id lists, each ending with `eos`.

    round(density·n) tokens in round(noise/mean_span) spans (T5's random_spans_noise_mask: noise and
    non-noise lengths are random partitions, interleaved, then rotated by a random offset); span i
    becomes sentinel0 + i in the input, and the target is ``s_0 span_0 s_1 span_1 ... eos``.
    """
    n = len(ids)
    if n < 2:
        return [sentinel0, eos], [sentinel0, *ids, eos]
    noise = int(np.clip(round(density * n), 1, n - 1))
    spans = int(np.clip(round(noise / mean_span), 1, min(noise, n - noise, n_sentinels - 1)))
    mask = np.zeros(n, dtype=bool)
    pos = 0
    for keep, drop in zip(_partition(n - noise, spans, rng), _partition(noise, spans, rng)):
        mask[pos + keep:pos + keep + drop] = True
        pos += keep + drop
    mask = np.roll(mask, int(rng.integers(n)))                                  # spans start anywhere
    inp, tgt, sentinel = [], [], sentinel0 - 1
    for t, (tok, m) in enumerate(zip(ids, mask)):
        if m and (t == 0 or not mask[t - 1]):
            sentinel += 1  # ≤ spans + 1 runs: the rotation may cut one span in two
            inp.append(sentinel)
            tgt.append(sentinel)
        (tgt if m else inp).append(tok)
    return inp + [eos], tgt + [eos]


def _seq2seq_batch(pairs: list[tuple[list[int], list[int]]], pad: int) -> dict:
    from seqlab.train.tasks.classify import pad as pad_ids

    ids, mask = pad_ids([p[0] for p in pairs], pad)                             # (B, S) each
    tgt, tmask = pad_ids([p[1] for p in pairs], pad)                            # (B, L) each
    return {"ids": ids, "mask": mask, "labels": np.where(tmask == 1, tgt, -100)}


def _t5_config(s: dict, vocab: int, pad: int, eos: int, enc: int, dec: int):
    from seqlab.models.t5 import T5Config

    return T5Config(vocab_size=vocab, d_model=s["d_model"], d_kv=s["d_model"] // s["nhead"], d_ff=s["dim_feedforward"],
                    num_layers=enc, num_decoder_layers=dec, num_heads=s["nhead"], dropout_rate=s["dropout"],
                    feed_forward_proj="gelu", pad_token_id=pad, eos_token_id=eos, decoder_start_token_id=pad)


def t5_split(s: dict, vocab: int, target: int) -> tuple[int, int]:
    """(encoder, decoder) blocks summing to num_layers whose T5 parameter count is closest to `target`."""
    from seqlab.models.t5 import T5ForConditionalGeneration

    if s["t5_encoder_layers"] and s["t5_decoder_layers"]:
        return s["t5_encoder_layers"], s["t5_decoder_layers"]
    L = max(2, s["num_layers"])
    sizes = {e: T5ForConditionalGeneration(_t5_config(s, vocab, 0, 1, e, L - e)).num_parameters() for e in range(1, L)}
    enc = min(sizes, key=lambda e: (abs(sizes[e] - target), -e))
    return enc, L - enc


def pretrain_t5(s: dict, train: list[str], val: list[str], tok, folder: Path, target_params: int, seed: int,
                progress: bool) -> dict:
    """Span-corruption pretraining with the MLM/CLM runs' settings; saves folder/pretrained."""
    import seqlab
    from seqlab.models.t5 import T5ForConditionalGeneration
    from seqlab.train.config import build_config
    from seqlab.train.tasks.pretrain import PretrainConfig, chunked

    cfg = build_config(PretrainConfig, (_pretrain_layers(s, seed), "bert-vs-gpt"))
    pad, eos, V = tok.pad_token_id, tok.sep_token_id, tok.vocab_size
    enc, dec = t5_split(s, V + s["sentinels"], target_params)
    seqlab.manual_seed(seed)
    model = T5ForConditionalGeneration(_t5_config(s, V + s["sentinels"], pad, eos, enc, dec))
    train_ids, val_ids = ([ids[:s["max_len"] - 1] for ids in tok.encode_batch(lines, add_special_tokens=False)]
                          for lines in (train, val))

    def corrupt(ids: list[int], rng: np.random.Generator) -> tuple[list[int], list[int]]:
        return span_corrupt(ids, rng, s["noise_density"], s["mean_span"], V, s["sentinels"], eos)

    def batches(epoch: int, rng: np.random.Generator):
        for idx in chunked(len(train_ids), cfg.batch_size, rng):
            yield _seq2seq_batch([corrupt(train_ids[i], rng) for i in idx], pad)

    def loss_fn(model, b):
        return model(b["ids"], attention_mask=b["mask"], labels=b["labels"]).loss, {"tokens": int(b["mask"].sum())}

    def evaluate(model):
        rng = np.random.default_rng((seed, 11))  # the same corruption at every evaluation
        batches = [_seq2seq_batch([corrupt(val_ids[i], rng) for i in idx], pad)
                   for idx in chunked(len(val_ids), cfg.batch_size, None)[:cfg.eval_batches]]
        return {"val_loss": float(np.mean([float(loss_fn(model, b)[0].data) for b in batches]))}

    result, _ = _train(model, batches, loss_fn, evaluate, cfg, progress, off_clock=False)
    model.save_pretrained(folder / "pretrained")
    tok.save(folder / "pretrained")
    mean_len = np.mean([len(i) + 1 for i in train_ids])  # sentence + [SEP]
    return {"steps": result.step, "minutes": result.elapsed_s / 60, "val_loss": result.last_eval.get("val_loss"),
            "tokens": int(result.step * cfg.batch_size * mean_len), "parameters": model.num_parameters(),
            "layers": f"{enc} encoder + {dec} decoder", "stopped": result.stopped}


# ---------------------------------------------------------------- pretraining with the registered tasks

def _pretrain_layers(s: dict, seed: int) -> dict:
    return dict(corpus=s["corpus"], vocab_size=s["vocab_size"], max_len=s["max_len"], d_model=s["d_model"],
                nhead=s["nhead"], num_layers=s["num_layers"], dim_feedforward=s["dim_feedforward"],
                dropout=s["dropout"], max_steps=s["pretrain_steps"], max_minutes=s["pretrain_minutes"],
                batch_size=s["pretrain_batch"], lr=s["pretrain_lr"], warmup_steps=s["pretrain_warmup"],
                eval_every=s["pretrain_eval_every"], checkpoint_every=0, keep_checkpoints=1, seed=seed,
                eval_batches=20 if s["pretrain_eval_every"] else 4)


def pretrain_task(task: str, s: dict, folder: Path, tok_dir: Path, data_dir, seed: int, progress: bool,
                  tokens_per_step: float) -> dict:
    """`mlm-pretrain` / `clm-pretrain` into `folder`, reading the experiment's shared vocabulary."""
    from seqlab.train import runs

    shutil.copytree(tok_dir, folder / "tokenizer")
    result = runs.train(task, folder, [(_pretrain_layers(s, seed), "bert-vs-gpt")], data_dir=data_dir,
                        progress=progress)
    record = json.loads((folder / "config.json").read_text())
    return {"steps": result.step, "minutes": result.elapsed_s / 60, "val_loss": result.last_eval.get("val_loss"),
            "tokens": int(result.step * tokens_per_step), "parameters": int(record["parameters"]),
            "layers": f"{s['num_layers']}", "stopped": result.stopped}


# ---------------------------------------------------------------- fine-tuning on SST-2

def _finetune_config(s: dict, lr: float, seed: int):
    from seqlab.train import TrainConfig

    return TrainConfig(seed=seed, max_steps=s["finetune_steps"], max_minutes=s["finetune_minutes"],
                       batch_size=s["finetune_batch"], lr=lr, schedule="warmup_linear",
                       warmup_steps=s["finetune_warmup"], eval_every=s["eval_every"], checkpoint_every=0,
                       log_every=10, metric="val_acc", metric_mode="max")


def _cut(ids_list: list[list[int]], max_len: int, last: int) -> list[list[int]]:
    """Truncate to max_len keeping the closing token (`last`, e.g. [SEP]) last, as truncation=True does."""
    return [ids if len(ids) <= max_len else ids[:max_len - 1] + [last] for ids in ids_list]


def _closed(tok, sentences, max_len: int) -> list[list[int]]:
    """GPT's and T5's encoding: the sentence's word pieces, then [SEP] (GPT's classifier reads that last token)."""
    sep = tok.sep_token_id
    return _cut([ids + [sep] for ids in tok.encode_batch(list(sentences), add_special_tokens=False)], max_len, sep)


def finetune_classifier(model, encode, pad_id: int, s: dict, lr: float, data: tuple, seed: int, progress: bool) -> dict:
    """A sequence classifier (logits (B, 2)) fine-tuned with the shared TextClassification pipeline."""
    from seqlab.train.tasks.classify import TextClassification

    (tr_x, tr_y), (dv_x, dv_y) = data
    clf = TextClassification(encode, pad_id, s["finetune_batch"], 10_000, eval_batch_size=64)
    result, curve = _train(model, clf.batches(tr_x, tr_y), clf.loss_fn, clf.evaluate(dv_x, dv_y),
                           _finetune_config(s, lr, seed), progress)
    return _finetune_summary(model, result, curve)


def finetune_t5(model, tok, s: dict, data: tuple, seed: int, progress: bool) -> dict:
    """Text to text: sentence [SEP] -> "positive [SEP]" / "negative [SEP]"; accuracy by rank classification."""
    from seqlab.train.tasks.classify import TextClassification, pad

    (tr_x, tr_y), (dv_x, dv_y) = data
    eos = tok.sep_token_id
    targets = [ids + [eos] for ids in tok.encode_batch(list(LABEL_WORDS), add_special_tokens=False)]
    label_ids, label_mask = pad(targets, tok.pad_token_id)                      # (2, L) each
    label_table = np.where(label_mask == 1, label_ids, -100)                    # (2, L)
    clf = TextClassification(lambda xs: _closed(tok, xs, s["max_len"]), tok.pad_token_id, s["finetune_batch"], 10_000)

    def loss_fn(model, b):
        return (model(b["ids"], attention_mask=b["mask"], labels=label_table[b["labels"]]).loss,
                {"tokens": int(b["mask"].sum())})

    def scores(model, ids, mask) -> np.ndarray:
        """log p(label string | sentence) for both labels: (B, 2)."""
        enc = model.encode(ids, mask)
        out = []
        for c in range(2):
            lab = np.repeat(label_table[c:c + 1], len(ids), axis=0)             # (B, L)
            out_c = model(attention_mask=mask, encoder_outputs=enc, decoder_input_ids=model.shift_right(lab))
            z = np.asarray(out_c.logits.data, dtype=np.float64)                 # (B, L, V)
            logp = z - z.max(-1, keepdims=True)
            logp -= np.log(np.exp(logp).sum(-1, keepdims=True))                 # log-softmax over V
            picked = np.take_along_axis(logp, np.maximum(lab, 0)[..., None], -1)[..., 0]  # (B, L)
            out.append((picked * (lab != -100)).sum(1))
        return np.stack(out, 1)                                                 # (B, 2)

    dev_ids, y = clf.ids(dv_x), np.asarray(dv_y)

    def evaluate(model) -> dict:
        sc = np.concatenate([scores(model, *pad(dev_ids[i:i + 64], tok.pad_token_id))
                             for i in range(0, len(dev_ids), 64)])              # (N, 2)
        return {"val_loss": float(-sc[np.arange(len(y)), y].mean()), "val_acc": float((sc.argmax(1) == y).mean())}

    cfg = _finetune_config(s, s["finetune_lr"], seed)
    result, curve = _train(model, clf.batches(tr_x, tr_y), loss_fn, evaluate, cfg, progress)
    return _finetune_summary(model, result, curve)


def _finetune_summary(model, result, curve: list) -> dict:
    accs = [c["val_acc"] for c in curve]
    return {"dev_acc": result.last_eval.get("val_acc"), "best_dev_acc": max(accs) if accs else None,
            "steps": result.step, "minutes": result.elapsed_s / 60, "parameters": model.num_parameters(),
            "stopped": result.stopped, "curve": curve}


# ---------------------------------------------------------------- the experiment

def _corpus(s: dict, out_dir: Path, data_dir) -> str:
    """The corpus setting the pretraining tasks read: as given, or the first corpus_lines // parts of each part."""
    from seqlab.train.tasks.text import corpus_lines

    if not s["corpus_lines"]:
        return s["corpus"]
    parts = s["corpus"].split("+")
    lines = [ln for part in parts for ln in corpus_lines(part, data_dir)[:max(1, s["corpus_lines"] // len(parts))]]
    path = out_dir / "corpus.txt"
    path.write_text("\n".join(ln.replace("\n", " ") for ln in lines) + "\n", encoding="utf-8")
    return str(path)


def run(out_dir: Path, args) -> dict:
    """Pretrain, fine-tune, and write report.md, results.json and the plots into out_dir; returns the results."""
    import seqlab
    from seqlab.data import Tokenizer
    from seqlab.models.bert import BertConfig, BertForSequenceClassification
    from seqlab.models.gpt import GPTForSequenceClassification
    from seqlab.models.t5 import T5ForConditionalGeneration
    from seqlab.train.config import build_config
    from seqlab.train.tasks.pretrain import PRETRAINED_DIR, PretrainConfig, corpus_and_tokenizer
    from seqlab.train.tasks.text import TOKENIZER_DIR, sst2_splits

    s = settings(args)
    seed, data_dir = int(getattr(args, "seed", 0) or 0), getattr(args, "data_dir", None)
    quick = bool(getattr(args, "quick", False))
    say = progress_for(__name__, args, None if s["progress"] == "auto" else s["progress"])
    progress = say.bars  # the trainer's bars
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    for name in RUNS:  # a fresh experiment: the previous run folders would be resumed or refused
        shutil.rmtree(out_dir / name, ignore_errors=True)
    say.say(f"building the corpus ({s['corpus']}) and a WordPiece vocabulary of {s['vocab_size']}")
    s["corpus"] = _corpus(s, out_dir, data_dir)
    cfg = build_config(PretrainConfig, (_pretrain_layers(s, seed), "bert-vs-gpt"))
    train_lines, val_lines, tok = corpus_and_tokenizer(cfg, out_dir, data_dir, True, "bert-vs-gpt")
    tok_dir, sep, L = out_dir / TOKENIZER_DIR, tok.sep_token_id, s["max_len"]
    mlm_len = np.mean([min(len(i), L) for i in tok.encode_batch(train_lines)])  # [CLS] sentence [SEP]
    models: dict[str, dict] = {}

    budget = _budget(s["pretrain_minutes"], s["pretrain_steps"], "pretraining")
    say.say(f"pretraining BERT (masked LM) on {len(train_lines):,} lines: {budget}")
    models["bert"] = {"pretrain": pretrain_task("mlm-pretrain", s, out_dir / "pretrain_mlm", tok_dir, data_dir, seed,
                                                progress, s["pretrain_batch"] * mlm_len)}
    say.say(f"pretraining GPT (causal LM): {budget}")
    models["gpt"] = {"pretrain": pretrain_task("clm-pretrain", s, out_dir / "pretrain_clm", tok_dir, data_dir, seed,
                                               progress, s["pretrain_batch"] * L)}
    say.say(f"pretraining T5 (span corruption): {budget}")
    models["t5"] = {"pretrain": pretrain_t5(s, train_lines, val_lines, tok, out_dir / "pretrain_t5",
                                            models["bert"]["pretrain"]["parameters"], seed, progress)}

    train, dev = sst2_splits(data_dir, s["max_train_examples"], s["max_dev_examples"], "bert-vs-gpt")
    data = (([x for x, _ in train], [y for _, y in train]), ([x for x, _ in dev], [y for _, y in dev]))
    bert_dir, gpt_dir = out_dir / "pretrain_mlm" / PRETRAINED_DIR, out_dir / "pretrain_clm" / PRETRAINED_DIR
    enc_bert = lambda xs: _cut(tok.encode_batch(list(xs)), L, sep)  # noqa: E731  [CLS] sentence [SEP]
    enc_gpt = lambda xs: _closed(tok, xs, L)  # noqa: E731  sentence [SEP]

    def finetune(key: str, make, encode=None, pad_id=None, lr=None) -> None:
        say.say(f"fine-tuning {NAMES[key]} on {len(train):,} SST-2 sentences: "
                f"{_budget(s['finetune_minutes'], s['finetune_steps'], 'fine-tuning')}")
        seqlab.manual_seed(seed)  # the fresh head's init and the dropout masks
        model = make()
        ft = (finetune_t5(model, tok, s, data, seed, progress) if key == "t5" else
              finetune_classifier(model, encode, pad_id, s, lr or s["finetune_lr"], data, seed, progress))
        models.setdefault(key, {})["finetune"] = ft

    finetune("bert", lambda: BertForSequenceClassification.from_pretrained(bert_dir, num_labels=2), enc_bert,
             tok.pad_token_id)
    finetune("gpt", lambda: GPTForSequenceClassification.from_pretrained(gpt_dir, num_labels=2), enc_gpt,
             tok.pad_token_id)
    finetune("t5", lambda: T5ForConditionalGeneration.from_pretrained(out_dir / "pretrain_t5" / PRETRAINED_DIR))
    if s["control"]:
        bert_cfg = json.loads((bert_dir / "config.json").read_text())
        finetune("bert_scratch", lambda: BertForSequenceClassification(BertConfig.from_dict(bert_cfg, num_labels=2)),
                 enc_bert, tok.pad_token_id)
    if s["minilm"]:
        mini_tok = Tokenizer.from_pretrained("minilm")
        mini_sep = mini_tok.convert_tokens_to_ids("[SEP]")
        finetune("minilm", lambda: BertForSequenceClassification.from_pretrained("minilm", num_labels=2),
                 lambda xs: _cut(mini_tok.encode_batch(list(xs)), 66, mini_sep), mini_tok.pad_token_id,
                 s["minilm_lr"])
    return _write(out_dir, s, models, len(dev), len(train), len(train_lines), quick)


NAMES = {"bert": "BERT (MLM)", "gpt": "GPT (causal LM)", "t5": "T5 (span corruption)",
         "bert_scratch": "BERT, no pretraining", "minilm": "MiniLM (pretrained, reference)"}
OBJECTIVES = {"bert": "masked LM, 15%", "gpt": "next token", "t5": "span corruption, 15%", "bert_scratch": "none",
              "minilm": "MiniLM distillation + sentence pairs (not ours)"}


def _write(out_dir: Path, s: dict, models: dict, n_dev: int, n_train: int, n_corpus: int, quick: bool) -> dict:
    from seqlab.experiments.gradient_flow import _table
    from seqlab.viz import line_plot

    rows = [[NAMES[k], OBJECTIVES[k], *(m.get("pretrain", {}).get(f, "-") for f in ("parameters", "steps", "tokens",
                                                                                    "minutes")),
             *(m["finetune"][f] for f in ("parameters", "steps", "minutes", "dev_acc", "best_dev_acc"))]
            for k, m in models.items()]
    table = _table(["model", "pretraining", "params (pretrained)", "pretrain steps", "pretrain tokens", "pretrain min",
                    "params (fine-tuned)", "fine-tune steps", "fine-tune min", "dev acc", "best dev acc"], rows)
    curves = {NAMES[k]: m["finetune"]["curve"] for k, m in models.items()}
    for x, name, label in (("step", "dev_accuracy.png", "fine-tuning step"),
                           ("train_s", "dev_accuracy_time.png", "fine-tuning seconds (evaluations excluded)")):
        line_plot({n: ([c[x] for c in cv], [c["val_acc"] for c in cv]) for n, cv in curves.items()}, out_dir / name,
                  "SST-2 dev accuracy while fine-tuning", label, "dev accuracy")
    acc = {k: m["finetune"]["dev_acc"] for k, m in models.items()}
    se = math.sqrt(0.25 / max(1, n_dev))  # the binomial standard error of an accuracy, at its largest (p = ½)
    payload = {"settings": s, "models": models, "dev_examples": n_dev, "train_examples": n_train,
               "corpus_lines": n_corpus, "dev_acc_standard_error": se, "quick": quick}
    (out_dir / "results.json").write_text(json.dumps(payload, indent=2, default=float) + "\n")
    (out_dir / "report.md").write_text(_report(table, s, models, acc, se, n_dev, n_train, n_corpus, quick))
    return {"table": table, **{k: v for k, v in payload.items() if k != "models"}, "dev_acc": acc}


def _budget(minutes: float, steps: int, what: str) -> str:
    return f"{minutes:g} min of {what} (at most {steps} steps)" if minutes else f"{steps} {what} steps"


def _report(table: str, s: dict, models: dict, acc: dict, se: float, n_dev: int, n_train: int, n_corpus: int,
            quick: bool) -> str:
    p = {k: m["pretrain"]["parameters"] for k, m in models.items() if "pretrain" in m}
    gap = acc["bert"] - acc["gpt"]
    verdict = ("BERT beats GPT by more than two standard errors" if gap > 2 * se else
               "GPT beats BERT by more than two standard errors" if gap < -2 * se else
               "BERT and GPT are within two standard errors of each other, so this run cannot separate them")
    extra = (f" The control, the same BERT fine-tuned from random weights, reached {acc['bert_scratch']:.3f}: what "
             "pretraining bought is the difference to it." if "bert_scratch" in acc else "")
    if "minilm" in acc:
        extra += (f" MiniLM reached {acc['minilm']:.3f} with the same fine-tuning budget; it has "
                  f"{models['minilm']['finetune']['parameters'] / p['bert']:.0f}x the parameters and a pretraining "
                  "budget many orders of magnitude larger (distilled from a BERT-base-sized teacher pretrained on "
                  "large corpora, then trained on over a billion sentence pairs for all-MiniLM-L6-v2).")
    mini_lr = f"; MiniLM lr {s['minilm_lr']:g}, the usual rate for BERT-sized models" if "minilm" in acc else ""
    corpus = s["corpus"] if not s["corpus_lines"] else f"the first lines of each part, {s['corpus_lines']} in all"
    return f"""# BERT vs GPT (vs T5): does bidirectional context help classification? (exercise 3)

Models of one size — {s['num_layers']} Transformer blocks, d_model {s['d_model']}, {s['nhead']} heads, feed-forward
{s['dim_feedforward']}, one WordPiece vocabulary of {s['vocab_size']} — pretrained on the same {n_corpus:,} unlabelled
lines (SST-2 training sentences + Multi30k English; `{corpus}`) with the same budget,
{_budget(s['pretrain_minutes'], s['pretrain_steps'], 'pretraining')} each (batch {s['pretrain_batch']}, AdamW, lr
{s['pretrain_lr']:g}), then fine-tuned on {n_train:,} SST-2 training sentences with
{_budget(s['finetune_minutes'], s['finetune_steps'], 'fine-tuning')} each (batch {s['finetune_batch']}, lr
{s['finetune_lr']:g}{mini_lr}). Accuracy on {n_dev} SST-2 dev
sentences (standard error at most {se:.3f}); "best" is the best evaluation along the way, chosen on dev itself.

{table}

Parameters: MLM {p['bert']:,}, CLM {p['gpt']:,} ({100 * abs(p['bert'] - p['gpt']) / p['bert']:.1f}% apart: BERT adds
token-type embeddings, an embedding LayerNorm and the MLM transform), T5 {p['t5']:,}
({models['t5']['pretrain']['layers']} blocks: a decoder block also cross-attends, so the split of the
{s['num_layers']} blocks closest in parameters was chosen). Pretrain tokens: text tokens read (MLM: [CLS] sentence
[SEP]; CLM: {s['max_len']}-token windows; T5: sentence + [SEP]). Plots: `dev_accuracy.png` (against fine-tuning
steps) and `dev_accuracy_time.png` (against seconds). `pretrain_mlm/` and `pretrain_clm/` are `seqlab train` run
folders (metrics, curves); every `pretrain_*/pretrained/` holds the pretrained model and tokenizer.

## What was done

- **BERT**: `mlm-pretrain` (15% of tokens chosen; 80/10/10 [MASK]/random/kept), then
  `BertForSequenceClassification`: a linear layer on the pooled [CLS] vector (the pooler starts fresh).
- **GPT**: `clm-pretrain` (random {s['max_len']}-token windows of the sentences joined by [SEP]), then
  `GPTForSequenceClassification`: the sentence ends with [SEP] and the classifier reads that last real token, the
  only position that has seen the whole sentence (GPT-1's recipe).
- **T5**: pretrained with span corruption ({100 * s['noise_density']:g}% of tokens in spans of mean length
  {s['mean_span']:g}, {s['sentinels']} sentinels appended to the vocabulary), same budget and optimizer; fine-tuned
  text to text to emit "positive" / "negative" + [SEP]; the prediction is the label string with the higher
  likelihood (rank classification), so it never emits an invalid label.
- **Budget**: the same wall-clock minutes (capped by steps) for every pretraining and every fine-tuning;
  evaluations on dev are off the fine-tuning clock. Equal minutes is equal compute on one machine, not equal
  data: the table shows the steps and tokens each model got out of it.

## Result and explanation

In this run BERT reached {acc['bert']:.3f}, GPT {acc['gpt']:.3f} and T5 {acc['t5']:.3f}: {verdict}.{extra}

Why bidirectional context should help a classifier: in the encoder every token's representation, at every layer,
is built from the words on both sides, and [CLS] attends to all of them, so "not bad" or "..., but the ending
drags" is resolved wherever the deciding word stands. The causal mask lets position t of the decoder see only
words 1..t: every feature computed for an earlier word ignores what follows it, and only the last token sees the
whole sentence, through left-only features below it. The objectives differ the same way: MLM trains the model to
use both sides to fill a gap (what classification needs), next-token prediction to guess what comes next (what
generation needs).

What the budget means: the causal LM is trained at every position, the masked LM only at the ~15% it masked, so
per token read the decoder gets ~6x more predictions to learn from, which can favour it when pretraining is short;
and the same minutes buy different numbers of steps and tokens per objective. A few CPU minutes leave these
models far from converged: the comparison measures early learning, not the objectives' ceilings — MiniLM shows
where a large pretraining budget ends up. Differences under ~{2 * se:.3f} (two standard errors) are noise, and
another `--seed` can reorder models that close.
""" + ("\n*Quick mode: tiny models, a few hundred sentences, a few steps — a pipeline check, not evidence.*\n"
       if quick else "")
