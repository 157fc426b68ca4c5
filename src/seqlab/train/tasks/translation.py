"""Multi30k German→English for the trainer, shared by multi30k-rnn and multi30k-transformer.

The pipeline is the Transformer issue's (`seqlab.models.translator`): a joint
byte-level BPE vocabulary trained on the training split (saved in
RUN_DIR/tokenizer), ids ``src </s>`` / ``<s> tgt`` / ``tgt </s>`` with
pad 0, <s> 1, </s> 2 (the convention both translation models follow),
label-smoothed cross-entropy, and BLEU with sacrebleu (detokenized, cased).
Validation: loss and greedy BLEU; after training, test2016 BLEU with beam
search using the best weights (by val_bleu), recorded in summary.json.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, ClassVar

import numpy as np

from seqlab import functional as F
from seqlab.train.config import COUNT, LIMIT, Bound, TrainConfig
from seqlab.train.tasks.base import Task, model_output, require
from seqlab.train.tasks.classify import bucketed_order
from seqlab.train.tasks.text import run_tokenizer


@dataclass
class TranslationConfig(TrainConfig):
    batch_size: int = 128             # sentence pairs per batch (bucketed by length)
    max_steps: int = 20000            # the time budget usually ends the run first
    clip_grad_norm: float = 1.0
    eval_every: int = 1000
    checkpoint_every: int = 500
    log_every: int = 10
    metric: str = "val_bleu"
    metric_mode: str = "max"
    # what the task's evaluation returns: a misspelled metric is refused before training, not at the first evaluation
    CHOICES: ClassVar = {"metric": ("val_bleu", "val_loss")}
    GRADIENT_CHECKPOINTING: ClassVar = False  # Seq2Seq and Translator have none
    vocab_size: int = 8000            # joint BPE over German + English
    max_len: int = 128                # tokens per side
    label_smoothing: float = 0.1
    beam_size: int = 5                # test2016 decoding after training
    length_penalty: float = 0.6
    val_limit: int = 0                # first N val pairs for the loss and greedy BLEU of each evaluation (0 = all 1,014)
    train_limit: int = 0              # first N training pairs only (0 = all 29,000), for quick runs
    test_limit: int = 0               # first N test2016 sentences for the final BLEU (0 = all)

    BOUNDS: ClassVar = {"vocab_size": COUNT, "max_len": Bound(2), "label_smoothing": Bound(0, 1, open_max=True),
                        "beam_size": COUNT, "length_penalty": Bound(0),
                        "val_limit": LIMIT, "train_limit": LIMIT, "test_limit": LIMIT}


Decode = Callable[[Any, np.ndarray, int, float], list[list[int]]]


def translate(model: Any, tok: Any, sentences: list[str], decode: Decode, beam_size: int, length_penalty: float,
              max_len: int, batch_size: int = 100, progress: str | None = None) -> list[str]:
    """Detokenized translations, decoded in batches of similar source length; `progress`: a tqdm bar's
    title (stderr), for the long final decoding."""
    from tqdm import tqdm

    from seqlab import no_grad
    from seqlab.models.translator import encode_pairs, make_batch

    pairs = encode_pairs(tok, sentences, sentences, max_len)
    order = np.argsort([len(p[0]) for p in pairs], kind="stable")
    out = [""] * len(pairs)
    was_training = model.training
    model.eval()
    bar = tqdm(total=len(order), desc=progress, unit="sentence", disable=progress is None, leave=False)
    try:
        with no_grad():
            for start in range(0, len(order), batch_size):
                idx = order[start:start + batch_size]
                for i, ids in zip(idx, decode(model, make_batch(pairs, idx)["src"], beam_size, length_penalty)):
                    out[i] = tok.decode(ids)
                bar.update(len(idx))
    finally:
        bar.close()
        model.train(was_training)
    return out


def build_translation(name: str, config: TranslationConfig, run_dir: Path | None, data_dir: Path | None,
                      training: bool, make_model: Callable[[int], Any], decode: Decode,
                      logits_fn: Callable[[Any, dict], Any]) -> Task:
    """The Task for `name`: `make_model(vocab_size)`, `decode(model, src, beam, alpha)`, `logits_fn(model, batch)`."""
    tr = require("seqlab.models.translator", None, name)
    data = require("seqlab.data", None, name)
    splits = {s: data.load_multi30k(s, data_dir) for s in ("train", "val", "test2016")} if training else {}
    de_tr, en_tr = splits.get("train", ([], []))
    if config.train_limit:
        de_tr, en_tr = de_tr[:config.train_limit], en_tr[:config.train_limit]
    tok = run_tokenizer(run_dir, (lambda: tr.build_tokenizer(de_tr + en_tr, config.vocab_size)) if training else None,
                        task=name)
    model = make_model(tok.vocab_size)
    task = Task(model=model, model_config=model.config.to_dict() if hasattr(model.config, "to_dict") else {})
    if not training:
        return task
    pairs = tr.encode_pairs(tok, de_tr, en_tr, config.max_len)
    lengths = np.array([len(s) + len(t) for s, t in pairs])
    de_va, en_va = splits["val"]
    if config.val_limit:
        de_va, en_va = de_va[:config.val_limit], en_va[:config.val_limit]
    val_pairs = tr.encode_pairs(tok, de_va, en_va, config.max_len)
    de_te, en_te = splits["test2016"]
    if config.test_limit:
        de_te, en_te = de_te[:config.test_limit], en_te[:config.test_limit]

    def batches(epoch: int, rng: np.random.Generator):
        for idx in bucketed_order(lengths, config.batch_size, rng):
            yield tr.make_batch(pairs, idx)

    def token_loss(model, batch, smoothing: float):
        logits = model_output(logits_fn(model, batch))                                    # (B, L, V)
        V = logits.shape[-1]
        return F.cross_entropy(logits.reshape(-1, V), batch["tgt_out"].reshape(-1), ignore_index=0,
                               label_smoothing=smoothing)

    def loss_fn(model, batch):
        return token_loss(model, batch, config.label_smoothing), {"tokens": int((batch["tgt_out"] != 0).sum())}

    def evaluate(model) -> dict:
        total, count = 0.0, 0
        for start in range(0, len(val_pairs), config.batch_size):
            batch = tr.make_batch(val_pairs, np.arange(start, min(start + config.batch_size, len(val_pairs))))
            n = int((batch["tgt_out"] != 0).sum())
            total += float(token_loss(model, batch, 0.0).data) * n
            count += n
        hyps = translate(model, tok, de_va, decode, 1, 1.0, config.max_len)
        return {"val_loss": total / count, "val_bleu": tr.bleu(hyps, en_va)}

    def finish(model, out_dir: Path) -> dict:
        from seqlab.train.checkpoint import load_best

        best = load_best(out_dir)
        if best is not None:
            model.load_state_dict(best[0])
        title = f"test2016 with beam {config.beam_size}" if task.progress else None
        hyps = translate(model, tok, de_te, decode, config.beam_size, config.length_penalty, config.max_len,
                         progress=title)
        (Path(out_dir) / "test2016.hyp.txt").write_text("\n".join(hyps) + "\n", encoding="utf-8")
        return {"test2016_bleu": tr.bleu(hyps, en_te), "test2016_sentences": len(de_te),
                "test2016_weights": "best" if best is not None else "final"}

    task.batches, task.loss_fn, task.evaluate, task.finish = batches, loss_fn, evaluate, finish
    task.info = {"train_pairs": len(pairs), "val_pairs": len(val_pairs), "vocab_size": tok.vocab_size}
    return task
