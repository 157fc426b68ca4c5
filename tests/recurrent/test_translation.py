"""The Multi30k pipeline end to end on a tiny subset: tokenizers, batches, training, beam decoding, BLEU, reload."""
from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

from seqlab import translation as tr

DATA = Path(os.environ.get("SEQLAB_DATA") or Path(__file__).resolve().parents[2].parent / "shared" / "data")
needs_data = pytest.mark.skipif(not (DATA / "multi30k" / "train.de").is_file(),
                                reason="Multi30k not found (set SEQLAB_DATA)")

DE = ["Ein Hund läuft.", "Zwei Männer spielen Fußball im Park.", "Eine Frau liest ein Buch."]
EN = ["A dog runs.", "Two men play soccer in the park.", "A woman reads a book."]


def test_tokenizers_ids_and_batches():
    tok_src, tok_tgt = tr.build_tokenizers(DE * 5, EN * 5, vocab_size=300)
    pairs = tr.encode_pairs(tok_src, tok_tgt, DE, EN, max_len=6)
    for src, tgt in pairs:
        assert src[-1] == tr.EOS and tgt[0] == tr.BOS and tgt[-1] == tr.EOS
        assert len(src) <= 6 and len(tgt) <= 6
    full = tr.encode_pairs(tok_src, tok_tgt, DE, EN)
    assert tok_tgt.decode(full[1][1]) == EN[1]                     # byte-level BPE: exact, cased text back
    batch = tr.make_batch(full, [0, 1])
    assert batch["src"].shape[0] == 2 and np.array_equal(batch["tgt_in"][:, 1:], batch["tgt_out"][:, :-1])
    assert batch["src"][0, -1] == tr.PAD                           # the shorter source is right-padded
    seen = sorted(int(i) for b in tr.make_batches(full, 2, shuffle=False) for i in b["src"][:, 0])
    assert len(seen) == 3


def test_bleu_and_buckets():
    assert tr.bleu(EN, EN) == pytest.approx(100.0)
    assert tr.bleu(["a b c d"], ["w x y z"]) == pytest.approx(0.0)
    rows = tr.bleu_by_length(["one two", "x " * 12, "y " * 30], EN, EN, edges=(10, 20))
    assert [r["sentences"] for r in rows] == [1, 1, 1] and [r["bucket"] for r in rows] == ["1-10", "11-20", ">20"]


@needs_data
def test_train_decode_save_reload(tmp_path):
    res = tr.train_rnn_translation(DATA, tmp_path, max_minutes=1.0, epochs=3, batch_size=32, vocab_size=400,
                                   train_limit=256, eval_limit=16, beam_size=3, progress=False, log_every=4,
                                   emb_dim=32, enc_hidden=32, dec_hidden=64, attn_dim=32, dropout=0.0)
    rows = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    train_loss = [r["loss"] for r in rows if "loss" in r]
    val_loss = [r["val_loss"] for r in rows if "val_loss" in r]
    assert train_loss[-1] < train_loss[0] and val_loss[-1] < val_loss[0]     # it learns
    assert 0.0 <= res["test2016_bleu"] <= 100.0 and res["test2016_sentences"] == 16
    assert res["epochs"] == 3 and res["steps"] == 24
    hyps = (tmp_path / "test2016.hyp.txt").read_text(encoding="utf-8").splitlines()
    assert len(hyps) == 16
    for name in ("model.safetensors", "config.json", "results.json", "alignment.png"):
        assert (tmp_path / name).stat().st_size > 0
    model, tok_src, tok_tgt = tr.load_rnn_translation(tmp_path)
    from seqlab.data import load_multi30k

    de, _ = load_multi30k("test2016", DATA)
    again = tr.translate(model, tok_src, tok_tgt, de[:16], beam_size=3)
    assert again == hyps                                                     # reloaded weights decode the same


def test_schedule_warms_up_then_anneals_to_min_lr():
    lrs = [tr._schedule(s, s / 1000, 2e-3, 5e-5, 100) for s in range(1000)]
    assert lrs[0] < 1e-4 and max(lrs) == pytest.approx(2e-3, rel=0.05)
    assert np.argmax(lrs) < 120 and lrs[-1] == pytest.approx(5e-5, rel=1e-3)
    assert max(abs(a - b) for a, b in zip(lrs, lrs[1:])) < 1e-4      # no jump when the warm-up ends
    assert tr._schedule(50, 1.0, 2e-3, 5e-5, 100) == pytest.approx(5e-5)   # a budget spent mid warm-up
