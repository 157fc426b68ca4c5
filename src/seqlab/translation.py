"""Multi30k German→English with the RNN encoder-decoder (the chapter's 7.3.1), end to end.

    toks = build_tokenizers(de_train, en_train, vocab_size=8000)   # byte-level BPE per language
    pairs = encode_pairs(*toks, de_train, en_train)               # (src </s>, <s> tgt </s>) ids
    for batch in make_batches(pairs, 64, rng): ...                # length-bucketed, padded
    hyps = translate(model, *toks, sentences, beam_size=5)        # detokenized, cased
    bleu(hyps, refs)                                              # sacrebleu, 13a, cased

`train_rnn_translation(data_dir, out_dir, max_minutes)` is the reference run:
it trains `Seq2Seq` on the training split, keeps the weights with the best
validation loss, and returns test2016 BLEU with beam search.

Ids: <pad> 0, <s> 1, </s> 2 in both vocabularies (the convention of every
translation model here). Byte-level BPE decodes back to the exact cased,
detokenized text, which is what sacrebleu scores.
"""
from __future__ import annotations

import json
import math
import time
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

SPECIAL_TOKENS = ("<pad>", "<s>", "</s>")
PAD, BOS, EOS = 0, 1, 2
SRC_TOKENIZER, TGT_TOKENIZER = "src_tokenizer", "tgt_tokenizer"  # folders of a run's two tokenizers


def build_tokenizers(src_texts: Sequence[str], tgt_texts: Sequence[str], vocab_size: int = 8000):
    """Two byte-level BPE tokenizers (HF `tokenizers`), trained on the given (training) texts."""
    from seqlab.data import Tokenizer

    toks = tuple(Tokenizer.train_bpe(texts, vocab_size, special_tokens=SPECIAL_TOKENS)
                 for texts in (src_texts, tgt_texts))
    for tok in toks:
        assert tok.convert_tokens_to_ids(list(SPECIAL_TOKENS)) == [PAD, BOS, EOS]
    return toks


def encode_pairs(tok_src, tok_tgt, src_texts: Sequence[str], tgt_texts: Sequence[str],
                 max_len: int = 100) -> list[tuple[np.ndarray, np.ndarray]]:
    """(source ids + </s>, <s> + target ids + </s>) per pair, each cut to `max_len` ids."""
    if len(src_texts) != len(tgt_texts):
        raise ValueError(f"got {len(src_texts)} source and {len(tgt_texts)} target sentences; they must pair up")
    src = tok_src.encode_batch(list(src_texts), add_special_tokens=False)
    tgt = tok_tgt.encode_batch(list(tgt_texts), add_special_tokens=False)
    return [(np.array(s[:max_len - 1] + [EOS], dtype=np.int64),
             np.array([BOS] + t[:max_len - 2] + [EOS], dtype=np.int64)) for s, t in zip(src, tgt)]


def encode_sources(tok_src, texts: Sequence[str], max_len: int = 100) -> list[np.ndarray]:
    """Source ids + </s> per sentence, cut to `max_len` ids (what `generate` takes)."""
    return [np.array(s[:max_len - 1] + [EOS], dtype=np.int64)
            for s in tok_src.encode_batch(list(texts), add_special_tokens=False)]


def make_batch(pairs, index) -> dict[str, np.ndarray]:
    """Padded arrays for pairs[index]: src (B, S), tgt_in (B, T) = <s> y, tgt_out (B, T) = y </s>."""
    from seqlab.data import pad_batch

    src, _ = pad_batch([pairs[i][0] for i in index], PAD)      # (B, S)
    tgt, _ = pad_batch([pairs[i][1] for i in index], PAD)      # (B, T + 1)
    return {"src": src, "tgt_in": tgt[:, :-1], "tgt_out": tgt[:, 1:]}


def make_batches(pairs, batch_size: int, rng: np.random.Generator | None = None, shuffle: bool = True):
    """Length-bucketed batches (little padding); `shuffle=False` gives a fixed, length-sorted order."""
    from seqlab.data import bucket_batches

    lengths = [len(s) + len(t) for s, t in pairs]
    for idx in bucket_batches(lengths, batch_size, rng=rng, shuffle=shuffle):
        yield make_batch(pairs, idx)


def translate(model, tok_src, tok_tgt, sentences: Sequence[str], beam_size: int = 5, length_penalty: float = 1.0,
              batch_size: int = 64, max_len: int = 100) -> list[str]:
    """Detokenized translations (greedy when beam_size is 1), decoded in batches of similar length."""
    from seqlab.data import pad_batch

    srcs = encode_sources(tok_src, sentences, max_len)
    order = np.argsort([len(s) for s in srcs], kind="stable")
    out = [""] * len(srcs)
    was_training = model.training
    model.eval()
    try:
        for start in range(0, len(order), batch_size):
            idx = order[start:start + batch_size]
            src, _ = pad_batch([srcs[i] for i in idx], PAD)                    # (B, S)
            ids = model.generate(src, beam_size=beam_size, length_penalty=length_penalty)
            for i, row in zip(idx, ids):
                out[i] = tok_tgt.decode(row)
    finally:
        model.train(was_training)
    return out


def bleu(hypotheses: Sequence[str], references: Sequence[str]) -> float:
    """Corpus BLEU, sacrebleu's defaults (13a tokenization, cased) on detokenized text."""
    import sacrebleu

    return float(sacrebleu.corpus_bleu(list(hypotheses), [list(references)]).score)


def bleu_by_length(sources: Sequence[str], hypotheses: Sequence[str], references: Sequence[str],
                   edges: Sequence[int] = (10, 15, 20)) -> list[dict]:
    """BLEU per bucket of source length in words: [1, e0], (e0, e1], …, (e_last, ∞)."""
    n_words = np.array([len(s.split()) for s in sources])
    bounds = [0, *edges, math.inf]
    rows = []
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        sel = np.flatnonzero((n_words > lo) & (n_words <= hi))
        label = f"{lo + 1}-{hi}" if hi != math.inf else f">{lo}"
        score = bleu([hypotheses[i] for i in sel], [references[i] for i in sel]) if len(sel) else float("nan")
        rows.append({"bucket": label, "sentences": int(len(sel)), "bleu": score})
    return rows


def validation_loss(model, pairs, batch_size: int = 128) -> float:
    """Mean cross-entropy per target token (no smoothing, no dropout)."""
    from seqlab import no_grad

    was_training = model.training
    model.eval()
    total, count = 0.0, 0
    with no_grad():
        for start in range(0, len(pairs), batch_size):
            b = make_batch(pairs, range(start, min(start + batch_size, len(pairs))))
            n = int((b["tgt_out"] != PAD).sum())
            total += model.loss(b["src"], b["tgt_in"], b["tgt_out"]).item() * n
            count += n
    model.train(was_training)
    return total / max(count, 1)


def train_rnn_translation(data_dir=None, out_dir=None, max_minutes: float = 60.0, *, epochs: int = 30,
                          max_steps: int | None = None, batch_size: int = 64, lr: float = 2e-3, min_lr: float = 5e-5,
                          warmup_steps: int = 200, vocab_size: int = 8000, label_smoothing: float = 0.1,
                          clip: float = 1.0, beam_size: int = 5, length_penalty: float = 1.0,
                          train_limit: int | None = None, eval_limit: int | None = None, seed: int = 0,
                          log_every: int = 50, progress: bool = True, log: Callable[[dict], None] | None = None,
                          **model_config: Any) -> dict:
    """Train `Seq2Seq` (additive attention unless `attention=` says otherwise) on Multi30k de→en.

    Adam, linear warm-up then a cosine decay to `min_lr` over the run (its length is
    whichever ends first: `epochs`, `max_steps` or `max_minutes` of training, so a
    time-limited run still ends annealed); label smoothing; gradient clipping.
    After every epoch (and at the end) the validation loss is measured and the best
    weights are kept; test2016 is then translated with beam search and scored.
    `model_config` overrides `Seq2SeqConfig` fields. With `out_dir`: model.safetensors,
    config.json, {src,tgt}_tokenizer/, metrics.jsonl, test2016.hyp.txt, alignment.png and
    results.json. `log(row)` receives each metrics row; `progress` shows a tqdm bar (stderr).
    Returns the results dict (BLEU, losses, timings) plus 'model' and 'tokenizers'.
    """
    import seqlab
    from seqlab.data import load_multi30k
    from seqlab.models.seq2seq import Seq2Seq, Seq2SeqConfig
    from seqlab.optim import Adam, clip_grad_norm_

    seqlab.manual_seed(seed)
    rng = np.random.default_rng(seed)
    (de_tr, en_tr), (de_va, en_va), (de_te, en_te) = (load_multi30k(s, data_dir) for s in ("train", "val", "test2016"))
    if train_limit:
        de_tr, en_tr = de_tr[:train_limit], en_tr[:train_limit]
    if eval_limit:
        de_va, en_va, de_te, en_te = de_va[:eval_limit], en_va[:eval_limit], de_te[:eval_limit], en_te[:eval_limit]
    tok_src, tok_tgt = build_tokenizers(de_tr, en_tr, vocab_size)
    pairs = encode_pairs(tok_src, tok_tgt, de_tr, en_tr)
    val_pairs = encode_pairs(tok_src, tok_tgt, de_va, en_va)
    cfg = Seq2SeqConfig(src_vocab_size=tok_src.vocab_size, tgt_vocab_size=tok_tgt.vocab_size, **model_config)
    model = Seq2Seq(cfg)
    opt = Adam(model.parameters(), lr=lr)
    out = Path(out_dir) if out_dir is not None else None
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
    metrics = open(out / "metrics.jsonl", "w", encoding="utf-8") if out is not None else None

    def emit(row: dict) -> None:
        if log is not None:
            log(row)
        if metrics is not None:
            metrics.write(json.dumps(row) + "\n")
            metrics.flush()

    steps_per_epoch = math.ceil(len(pairs) / batch_size)
    total_steps = min(epochs * steps_per_epoch, max_steps or math.inf)
    budget = max_minutes * 60.0
    warmup_steps = min(warmup_steps, max(1, int(min(total_steps, 1e9)) // 10))   # short runs warm up quickly
    best_loss, best_state, step, tokens, epoch = math.inf, None, 0, 0, 0
    bar = _progress(progress, total_steps)
    t0 = time.perf_counter()
    stop = False
    try:
        while not stop:
            epoch += 1
            for batch in make_batches(pairs, batch_size, rng):
                elapsed = time.perf_counter() - t0
                frac = max(step / total_steps, elapsed / budget)   # how far through the run we are
                opt.param_groups[0]["lr"] = _schedule(step, frac, lr, min_lr, warmup_steps)
                loss = model.loss(batch["src"], batch["tgt_in"], batch["tgt_out"], label_smoothing)
                model.zero_grad()
                loss.backward()
                clip_grad_norm_(model.parameters(), clip)
                opt.step()
                step += 1
                tokens += int((batch["tgt_out"] != PAD).sum())
                if bar is not None:
                    bar.update(1)
                    bar.set_postfix(epoch=epoch, loss=f"{loss.item():.3f}", lr=f"{opt.param_groups[0]['lr']:.1e}")
                if step % log_every == 0:
                    emit({"step": step, "epoch": epoch, "loss": loss.item(), "lr": opt.param_groups[0]["lr"],
                          "elapsed": time.perf_counter() - t0})
                if step >= total_steps or time.perf_counter() - t0 >= budget:
                    stop = True
                    break
            val = validation_loss(model, val_pairs)
            emit({"step": step, "epoch": epoch, "val_loss": val, "elapsed": time.perf_counter() - t0})
            if val < best_loss:
                best_loss = val
                best_state = {k: np.array(v) for k, v in model.state_dict().items()}
            if epoch >= epochs:
                stop = True
    finally:
        if bar is not None:
            bar.close()
    train_seconds = time.perf_counter() - t0
    model.load_state_dict(best_state)
    t1 = time.perf_counter()
    hyps = translate(model, tok_src, tok_tgt, de_te, beam_size=beam_size, length_penalty=length_penalty)
    results = {
        "test2016_bleu": bleu(hyps, en_te), "test2016_sentences": len(de_te), "best_val_loss": best_loss,
        "steps": step, "epochs": epoch, "train_minutes": train_seconds / 60.0,
        "train_tokens_per_s": tokens / train_seconds, "decode_seconds": time.perf_counter() - t1,
        "beam_size": beam_size, "length_penalty": length_penalty, "train_pairs": len(pairs),
        "vocab_sizes": [tok_src.vocab_size, tok_tgt.vocab_size], "parameters": model.num_parameters(),
        "config": cfg.to_dict(), "by_length": bleu_by_length(de_te, hyps, en_te),
        "examples": [{"de": d, "ref": r, "hyp": h} for d, r, h in list(zip(de_te, en_te, hyps))[:5]],
    }
    if out is not None:
        metrics.close()
        _save_run(out, model, cfg, tok_src, tok_tgt, hyps, results)
    results["model"], results["tokenizers"] = model, (tok_src, tok_tgt)
    return results


def _schedule(step: int, frac: float, lr: float, min_lr: float, warmup: int) -> float:
    """Cosine from lr to min_lr as `frac` goes 0 → 1, times a linear warm-up over the first `warmup` steps
    (a product, so a short time budget that ends inside the warm-up still decays smoothly)."""
    warm = min(1.0, (step + 1) / warmup)
    return min_lr + warm * 0.5 * (lr - min_lr) * (1 + math.cos(math.pi * min(frac, 1.0)))


def _progress(enabled: bool, total):
    if not enabled:
        return None
    from tqdm import tqdm

    return tqdm(total=None if total == math.inf else int(total), desc="multi30k-rnn", unit="batch",
                dynamic_ncols=True)


def _save_run(out: Path, model, cfg, tok_src, tok_tgt, hyps, results) -> None:
    from safetensors.numpy import save_file

    from seqlab.backend import to_numpy

    save_file({k: np.ascontiguousarray(to_numpy(v)) for k, v in model.state_dict().items()
               if k != "generator.weight" or not cfg.tie_output}, str(out / "model.safetensors"))
    (out / "config.json").write_text(json.dumps(cfg.to_dict(), indent=2) + "\n")
    tok_src.save(out / SRC_TOKENIZER)
    tok_tgt.save(out / TGT_TOKENIZER)
    (out / "test2016.hyp.txt").write_text("\n".join(hyps) + "\n", encoding="utf-8")
    (out / "results.json").write_text(json.dumps(results, indent=2, default=float) + "\n")
    if cfg.attention != "none":
        alignment_plot(model, tok_src, tok_tgt, results["examples"][0]["de"], out / "alignment.png")


def alignment_plot(model, tok_src, tok_tgt, sentence: str, path, beam_size: int = 5) -> Path:
    """Translate one sentence and plot the attention α_ts of each output token over the source."""
    from seqlab import no_grad
    from seqlab.viz import alignment_plot as plot

    src = encode_sources(tok_src, [sentence])[0][None]                          # (1, S)
    model.eval()
    with no_grad():
        out = model.generate(src, beam_size=beam_size)[0]
        tgt_in = np.array([[BOS] + out], dtype=np.int64)                          # (1, T)
        _, attn = model(src, tgt_in, return_attention=True)                       # (1, T, S)
    src_tokens = [tok_src.decode([i], skip_special_tokens=False) for i in src[0]]
    tgt_tokens = [tok_tgt.decode([i], skip_special_tokens=False) for i in out + [EOS]]
    return plot(attn.numpy()[0], src_tokens, tgt_tokens, path, title=sentence[:60])


def load_rnn_translation(run_dir):
    """(model, tok_src, tok_tgt) from a folder `train_rnn_translation` wrote."""
    from safetensors.numpy import load_file

    from seqlab.data import Tokenizer
    from seqlab.models.seq2seq import Seq2Seq, Seq2SeqConfig

    run = Path(run_dir)
    cfg = Seq2SeqConfig(**json.loads((run / "config.json").read_text()))
    model = Seq2Seq(cfg)
    state = load_file(str(run / "model.safetensors"))
    if cfg.tie_output:
        state["generator.weight"] = state["tgt_embedding.weight"]
    model.load_state_dict(state)
    model.eval()
    return model, Tokenizer.from_pretrained(run / SRC_TOKENIZER), Tokenizer.from_pretrained(run / TGT_TOKENIZER)
