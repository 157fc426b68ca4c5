"""long-range (the chapter's Q2 and Q6): can the model use a token k steps back, and how fast does it train?

Task, copy-first-token: a sequence of k + 1 random tokens (vocabulary 8);
the label is the FIRST token, read out after the last one, so the model must
carry it across k distractors (chance = 1/8). RNN, LSTM, GRU (and a
Transformer encoder when `seqlab.nn.TransformerEncoder` exists) get the
same parameter budget for their sequence body (embedding and read-out are
shared sizes), the same optimiser, batch and number of steps. The gated
cells run twice: at torch's init (gates ≈ σ(0) = ½, which forget fast — see
gradient-flow) and with the LSTM forget gate / GRU update gate biased open
(bias +1, Gers et al. 2000; Jozefowicz et al. 2015), marked "+gate-bias".

Second table: training throughput (tokens/s, forward + backward + Adam) at
equal size on sequences of 100 tokens — the chapter's parallelism argument:
a recurrent layer walks the T steps one after another, attention handles
all positions in a few large matrix products.
"""
from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np

from seqlab import nn
from seqlab.experiments.common import Setting, progress_for, settings_for

DESCRIPTION = "copy-first-token accuracy vs distance k for RNN/LSTM/GRU(/Transformer), and tokens/s"

VOCAB, EMB = 8, 16
SETTINGS = (
    Setting("ks", "5,10,20,50,100", "5,20", item=int, min=1,
            help="distances k (tokens between the first and the read-out)"),
    Setting("steps", 1000, 60, min=1, help="Adam steps per model and k"),
    Setting("budget", 4 * 32 * (EMB + 32 + 2), min=1,
            help="parameters of each sequence body (default: an LSTM with 32 units)"),
)


def transformer_available() -> bool:
    return hasattr(nn, "TransformerEncoder") and hasattr(nn, "TransformerEncoderLayer")


def body_params(kind: str, hidden: int) -> int:
    """Parameters of the sequence body (input size EMB) for a hidden size."""
    gates = {"rnn": 1, "gru": 3, "lstm": 4}
    kind = kind.split("+")[0]
    if kind in gates:
        return gates[kind] * hidden * (EMB + hidden + 2)
    d, ff = hidden, 2 * hidden  # one encoder layer: attention 4d² + 4d, FFN 2·d·ff + ff + d, 2 LayerNorms 4d
    return 4 * d * d + 4 * d + 2 * d * ff + ff + d + 4 * d + EMB * d + d  # + input projection EMB -> d


def size_for_budget(kind: str, budget: int) -> int:
    """The hidden size whose body has the parameter count closest to `budget` (transformer: a multiple of 4)."""
    sizes = range(4, 512, 4) if kind == "transformer" else range(2, 512)
    return min(sizes, key=lambda h: abs(body_params(kind, h) - budget))


class CopyModel(nn.Module):
    """Embedding -> body (RNN / LSTM / GRU / one Transformer encoder layer) -> Linear on the last position.

    ids (B, T) -> logits (B, VOCAB).
    """

    def __init__(self, kind: str, hidden: int, max_len: int):
        super().__init__()
        self.kind = kind
        self.embedding = nn.Embedding(VOCAB, EMB)
        if kind == "transformer":
            self.proj = nn.Linear(EMB, hidden)
            self.pos = nn.SinusoidalPositionalEncoding(hidden, max_len=max_len)
            layer = nn.TransformerEncoderLayer(hidden, 4, dim_feedforward=2 * hidden, dropout=0.0)
            self.body = nn.TransformerEncoder(layer, 1)
        else:
            base = kind.split("+")[0]
            self.body = {"rnn": nn.RNN, "lstm": nn.LSTM, "gru": nn.GRU}[base](EMB, hidden)
            if kind.endswith("+gate-bias"):  # LSTM forget gate / GRU update gate biased open: σ(1) ≈ 0.73
                self.body.bias_ih_l0.data[hidden:2 * hidden] = 1.0
                self.body.bias_hh_l0.data[hidden:2 * hidden] = 0.0
        self.head = nn.Linear(hidden, VOCAB)

    def forward(self, ids):
        x = self.embedding(ids)                               # (B, T, EMB)
        if self.kind == "transformer":
            h = self.body(self.pos(self.proj(x)))             # (B, T, H)
        else:
            h, _ = self.body(x)                               # (B, T, H)
        return self.head(h[:, -1])                            # (B, VOCAB)


def train_copy(kind: str, hidden: int, k: int, steps: int, batch: int = 32, lr: float = 3e-3, seed: int = 0,
               bar=None) -> dict:
    """Train and test one model on copy-first-token at distance k; `bar` (tqdm, optional) advances per step."""
    import seqlab
    from seqlab import functional as F
    from seqlab.optim import Adam, clip_grad_norm_

    seqlab.manual_seed(seed)
    rng = np.random.default_rng(seed)
    model = CopyModel(kind, hidden, k + 1)
    opt = Adam(model.parameters(), lr=lr)
    t0 = time.perf_counter()
    for _ in range(steps):
        ids = rng.integers(0, VOCAB, (batch, k + 1))
        loss = F.cross_entropy(model(ids), ids[:, 0])
        model.zero_grad()
        loss.backward()
        clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if bar is not None:
            bar.update(1)
    seconds = time.perf_counter() - t0
    model.eval()
    with seqlab.no_grad():
        ids = np.random.default_rng(seed + 1).integers(0, VOCAB, (512, k + 1))
        acc = float((model(ids).numpy().argmax(-1) == ids[:, 0]).mean())
    return {"accuracy": acc, "final_loss": float(loss.item()), "train_seconds": seconds}


def throughput(kind: str, hidden: int, length: int = 100, batch: int = 32, steps: int = 5) -> float:
    """Training tokens per second (forward + backward + Adam step)."""
    import seqlab
    from seqlab import functional as F
    from seqlab.optim import Adam

    seqlab.manual_seed(0)
    model = CopyModel(kind, hidden, length)
    opt = Adam(model.parameters(), lr=1e-3)
    ids = np.random.default_rng(0).integers(0, VOCAB, (batch, length))

    def step():
        loss = F.cross_entropy(model(ids), ids[:, 0])
        model.zero_grad()
        loss.backward()
        opt.step()
    step()  # warm-up
    t0 = time.perf_counter()
    for _ in range(steps):
        step()
    return batch * length * steps / (time.perf_counter() - t0)


def run(out_dir: Path, args) -> dict:
    from seqlab.experiments.gradient_flow import _table
    from seqlab.viz import bar_plot, line_plot

    s = settings_for(__name__, args)
    quick = bool(getattr(args, "quick", False))
    seed = int(getattr(args, "seed", 0) or 0)
    ks, steps, budget = s["ks"], s["steps"], s["budget"]
    progress = progress_for(__name__, args)
    kinds = ["rnn", "lstm", "gru", "lstm+gate-bias", "gru+gate-bias"]
    note = ""
    if transformer_available():
        kinds.append("transformer")
    else:
        note = "seqlab.nn.TransformerEncoder is not available in this build: the Transformer row is skipped."
    sizes = {kind: size_for_budget(kind, budget) for kind in kinds}
    results: dict[str, dict] = {}
    for kind in kinds:
        progress.say(f"{kind} (hidden {sizes[kind]}, {body_params(kind, sizes[kind]):,} body params): "
                     f"copy-first-token at k = {', '.join(map(str, ks))} ({steps} Adam steps each)")
        bar = progress.bar(len(ks) * steps, kind)
        results[kind] = {}
        for k in ks:
            bar.set_postfix_str(f"k={k}", refresh=False)
            results[kind][k] = train_copy(kind, sizes[kind], k, steps, seed=seed, bar=bar)
        bar.close()
    timed = [kind for kind in kinds if "+" not in kind]
    progress.say(f"training throughput: {', '.join(timed)} at T = 100, batch 32, {2 if quick else 5} timed steps each")
    bar = progress.bar(len(timed), "throughput", unit="model")
    speed = {}
    for kind in timed:
        speed[kind] = throughput(kind, sizes[kind], steps=2 if quick else 5)
        bar.update(1)
    bar.close()
    line_plot({kind: (ks, [results[kind][k]["accuracy"] for k in ks]) for kind in kinds},
              out_dir / "long_range_accuracy.png", f"copy-first-token, {steps} Adam steps, ~{budget} body params",
              "distance k", "accuracy (chance = 1/8)")
    bar_plot(speed, out_dir / "long_range_throughput.png",
             f"training throughput, ~{budget} body params", "tokens / s (T = 100, batch 32)")
    table = _table(["model", "hidden", "body params"] + [f"k={k}" for k in ks],
                   [[kind, sizes[kind], body_params(kind, sizes[kind])] + [results[kind][k]["accuracy"] for k in ks]
                    for kind in kinds])
    speed_table = _table(["model", "tokens/s (train, T=100, B=32)"], [[kind, round(v)] for kind, v in speed.items()])
    payload = {"ks": ks, "steps": steps, "budget": budget, "sizes": sizes, "accuracy": results,
               "tokens_per_s": speed, "note": note, "quick": quick}
    (out_dir / "results.json").write_text(json.dumps(payload, indent=2, default=str) + "\n")
    (out_dir / "report.md").write_text(
        f"# Long-range dependencies and throughput (chapter Q2, Q6)\n\n"
        f"Copy-first-token: label = the first of k + 1 random tokens (vocabulary {VOCAB}, chance "
        f"{1 / VOCAB:.3f}); every body has ~{budget} parameters; {steps} Adam steps (lr 3e-3, batch 32); "
        f"accuracy on 512 fresh sequences. \"+gate-bias\": LSTM forget / GRU update gate bias +1 (else torch's "
        f"init, gates ≈ ½). Plot: `long_range_accuracy.png`.\n\n{table}\n\n"
        f"## Training throughput at equal size\n\nPlot: `long_range_throughput.png`.\n\n{speed_table}\n\n{note}\n")
    return {"table": table + "\n\n" + speed_table + (f"\n\n{note}" if note else ""), **payload}
