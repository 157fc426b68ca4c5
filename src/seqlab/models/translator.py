"""Encoder-decoder Transformer for translation (the chapter's 7.4; Vaswani et al., 2017), with greedy and beam search.

    source ids (B, S) -> Embedding · √d (+ position) -> encoder -> memory (B, S, d)
    target ids (B, L) -> Embedding · √d (+ position) -> decoder(memory) -> generator -> logits (B, L, V)

Ids follow one convention: the source ends with </s>; the decoder input
starts with <s>; the target to predict is the decoder input shifted by one.
``share_embeddings`` uses one table for both languages (a joint subword
vocabulary); ``tie_output`` makes the output layer the target table's
transpose (Press & Wolf, 2017). Decoding keeps a key/value cache per layer,
so each new token costs one position, not the whole prefix.

The Multi30k pipeline is at the end: a joint byte-level BPE vocabulary
(`build_tokenizer`), batches (`make_batch`), the label-smoothed loss
(`translation_loss`), `translate` (greedy or beam), `bleu` (sacrebleu,
detokenized, cased) and `train_multi30k`, the reference run.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np

from seqlab import backend, no_grad
from seqlab import functional as F
from seqlab.autograd.tensor import Tensor
from seqlab.creation import cat
from seqlab.nn import init
from seqlab.nn.linear import Linear
from seqlab.nn.module import Module
from seqlab.nn.positional import POSITIONAL_KINDS, positional_encoding
from seqlab.nn.sparse import Embedding
from seqlab.nn.transformer import Transformer
from seqlab.models._common import as_array
from seqlab.models.outputs import Seq2SeqLMOutput


@dataclass
class TranslatorConfig:
    src_vocab_size: int
    tgt_vocab_size: int
    d_model: int = 256
    nhead: int = 4
    num_encoder_layers: int = 3
    num_decoder_layers: int = 3
    dim_feedforward: int = 1024
    dropout: float = 0.1
    max_len: int = 256              # longest source or target the positional table covers
    positional: str = "sinusoidal"  # 'sinusoidal' | 'learned' | 'rope' | 'alibi' | 'none'
    share_embeddings: bool = False  # one embedding table for both sides (needs one joint vocabulary)
    tie_output: bool = True         # generator.weight is tgt_embedding.weight
    norm_first: bool = False        # the paper's Post-LN; True = Pre-LN
    activation: str = "relu"
    pad_id: int = 0
    bos_id: int = 1
    eos_id: int = 2

    def __post_init__(self) -> None:
        if self.d_model % self.nhead:
            raise ValueError(f"d_model ({self.d_model}) must be divisible by nhead ({self.nhead})")
        if self.positional not in POSITIONAL_KINDS:
            raise ValueError(f"positional must be one of {', '.join(POSITIONAL_KINDS)}, got {self.positional!r}")
        if self.share_embeddings and self.src_vocab_size != self.tgt_vocab_size:
            raise ValueError(f"share_embeddings needs one vocabulary, got src_vocab_size={self.src_vocab_size} "
                             f"and tgt_vocab_size={self.tgt_vocab_size}")
        for name in ("pad_id", "bos_id", "eos_id"):
            if not 0 <= getattr(self, name) < self.tgt_vocab_size:
                raise ValueError(f"{name}={getattr(self, name)} is outside the target vocabulary "
                                 f"(size {self.tgt_vocab_size})")

    def to_dict(self) -> dict:
        return asdict(self)


def _ids(x) -> np.ndarray:
    a = as_array(x)  # on its device
    if a.ndim != 2:
        raise ValueError(f"token ids must be (batch, length), got shape {a.shape}")
    return a


class Translator(Module):
    """Parameters: ``src_embedding``, ``tgt_embedding`` (the same module when shared), ``pos_encoder``,
    ``transformer`` (torch's nn.Transformer names: ``encoder.layers.N``, ``encoder.norm``, ``decoder...``),
    ``generator``."""

    def __init__(self, config: TranslatorConfig):
        super().__init__()
        c = self.config = config
        self.src_embedding = Embedding(c.src_vocab_size, c.d_model, padding_idx=c.pad_id)
        self.tgt_embedding = self.src_embedding if c.share_embeddings else \
            Embedding(c.tgt_vocab_size, c.d_model, padding_idx=c.pad_id)
        for emb in {id(self.src_embedding): self.src_embedding, id(self.tgt_embedding): self.tgt_embedding}.values():
            init.normal_(emb.weight, 0.0, c.d_model ** -0.5)  # × √d in forward: unit-scale vectors (§3.4)
            emb.weight.data[c.pad_id] = 0
        self.pos_encoder = positional_encoding(c.positional, c.d_model, c.nhead, c.max_len)
        self.transformer = Transformer(c.d_model, c.nhead, c.num_encoder_layers, c.num_decoder_layers,
                                       c.dim_feedforward, c.dropout, c.activation, norm_first=c.norm_first)
        self.generator = Linear(c.d_model, c.tgt_vocab_size)
        if c.tie_output:
            self.generator.weight = self.tgt_embedding.weight

    # ---- training-time forward -------------------------------------------------
    def _embed(self, emb: Embedding, ids, offset: int = 0) -> Tensor:
        x = emb(ids) * math.sqrt(self.config.d_model)  # (B, T, d)
        x = self.pos_encoder.embed(x, offset)  # (B, T, d)
        return F.dropout(x, self.config.dropout, self.training)

    def encode(self, src_ids, src_attention_mask=None, *, output_attentions: bool = False):
        """src_ids (B, S); src_attention_mask (B, S), 1 = real (default: ids != pad_id).

        Returns (memory (B, S, d), memory_key_padding_mask (B, S) True = padding)
        [+ encoder weights, a list of (B, H, S, S), with ``output_attentions``].
        """
        ids = _ids(src_ids)
        real = (ids != self.config.pad_id) if src_attention_mask is None else \
            backend.to_device(as_array(src_attention_mask), backend.device_of(ids)).astype(bool)
        kpm = ~real  # (B, S)
        x = self._embed(self.src_embedding, ids)
        out = self.transformer.encoder(x, src_key_padding_mask=kpm, output_attentions=output_attentions,
                                       **self.pos_encoder.attn_kwargs(ids.shape[1], ids.shape[1]))
        if output_attentions:
            return out[0], kpm, out[1]
        return out, kpm

    def decode(self, tgt_ids, memory: Tensor, memory_key_padding_mask=None, *, output_attentions: bool = False):
        """Teacher-forced decoder: tgt_ids (B, L) starting with <s> -> logits (B, L, V).

        Causal self-attention; padding after the sentence needs no mask (no real
        position looks ahead). With ``output_attentions``: (logits, self weights
        [(B, H, L, L)], cross weights [(B, H, L, S)]).
        """
        ids = _ids(tgt_ids)
        L = ids.shape[1]
        y = self._embed(self.tgt_embedding, ids)  # (B, L, d)
        out = self.transformer.decoder(y, memory, memory_key_padding_mask=memory_key_padding_mask, tgt_is_causal=True,
                                       output_attentions=output_attentions, **self.pos_encoder.attn_kwargs(L, L))
        if output_attentions:
            return (self.generator(out[0]),) + tuple(out[1:])
        return self.generator(out)  # (B, L, V)

    def forward(self, src_ids, tgt_ids, src_attention_mask=None, labels=None, label_smoothing: float = 0.0, *,
                output_attentions: bool = False) -> Seq2SeqLMOutput:
        """Logits (B, L, V) for the decoder input `tgt_ids` (<s> y) given `src_ids`.

        labels (B, L): the tokens to predict (y </s>), pad_id ignored; gives
        `loss` (mean cross-entropy per token, label-smoothed by `label_smoothing`).
        With ``output_attentions``: encoder_attentions, decoder_attentions,
        cross_attentions, tuples over layers of (B, H, ·, ·).
        """
        enc_w = dec_w = cross_w = None
        if output_attentions:
            memory, kpm, enc_w = self.encode(src_ids, src_attention_mask, output_attentions=True)
            logits, dec_w, cross_w = self.decode(tgt_ids, memory, kpm, output_attentions=True)
            enc_w, dec_w, cross_w = tuple(enc_w), tuple(dec_w), tuple(cross_w)
        else:
            memory, kpm = self.encode(src_ids, src_attention_mask)
            logits = self.decode(tgt_ids, memory, kpm)  # (B, L, V)
        loss = None
        if labels is not None:
            lab = as_array(labels)  # on its device: cross_entropy moves it to the logits'
            V = logits.shape[-1]
            loss = F.cross_entropy(logits.reshape(-1, V), lab.astype(np.int64).reshape(-1),
                                   ignore_index=self.config.pad_id, label_smoothing=label_smoothing)
        return Seq2SeqLMOutput(loss=loss, logits=logits, encoder_last_hidden_state=memory, encoder_attentions=enc_w,
                               decoder_attentions=dec_w, cross_attentions=cross_w)

    # ---- incremental decoding (key/value cache) -----------------------------------
    def _start(self, memory: Tensor, kpm) -> dict:
        """Per-layer cross-attention keys/values of the memory, computed once."""
        B, S, E = memory.shape
        state = {"kpm": kpm, "cross": [], "self": []}
        for layer in self.transformer.decoder.layers:
            mha = layer.multihead_attn
            H, D = mha.num_heads, mha.head_dim
            k = _proj(mha, memory, 1).reshape(B, S, H, D).transpose(1, 2)  # (B, H, S, D)
            v = _proj(mha, memory, 2).reshape(B, S, H, D).transpose(1, 2)  # (B, H, S, D)
            state["cross"].append((k, v))
            state["self"].append(None)
        return state

    def _step(self, state: dict, tokens: np.ndarray, t: int) -> Tensor:
        """Logits (B, V) for position t, given the token at position t (B,) and the cache of 0..t−1."""
        x = self._embed(self.tgt_embedding, tokens[:, None], offset=t)  # (B, 1, d)
        pos = self.pos_encoder
        for i, layer in enumerate(self.transformer.decoder.layers):
            first = layer.norm_first
            h = layer.norm1(x) if first else x
            a = self._self_attend(layer.self_attn, h, state, i, t, pos)
            x = x + a if first else layer.norm1(x + a)
            h = layer.norm2(x) if first else x
            c = _cross_attend(layer.multihead_attn, h, state["cross"][i], state["kpm"])
            x = x + c if first else layer.norm2(x + c)
            h = layer.norm3(x) if first else x
            f = layer.linear2(layer.activation(layer.linear1(h)))  # (B, 1, d)
            x = x + f if first else layer.norm3(x + f)
        if self.transformer.decoder.norm is not None:
            x = self.transformer.decoder.norm(x)
        return self.generator(x[:, 0])  # (B, V)

    def _self_attend(self, mha, h: Tensor, state: dict, i: int, t: int, pos) -> Tensor:
        B, H, D = h.shape[0], mha.num_heads, mha.head_dim
        q, k, v = (_proj(mha, h, j).reshape(B, 1, H, D).transpose(1, 2) for j in range(3))  # (B, H, 1, D) each
        if pos.kind == "rope":
            q, k = pos.rotate(q, t), pos.rotate(k, t)
        if state["self"][i] is not None:
            pk, pv = state["self"][i]
            k, v = cat([pk, k], dim=2), cat([pv, v], dim=2)  # (B, H, t+1, D)
        state["self"][i] = (k, v)
        bias = pos.bias(1, t + 1, offset=t, dtype=h.dtype) if pos.kind == "alibi" else None  # (1, H, 1, t+1)
        out, _ = F.attention(q, k, v, attn_mask=bias)  # (B, H, 1, D)
        return mha.out_proj(out.transpose(1, 2).reshape(B, 1, H * D))  # (B, 1, d)

    def _reorder(self, state: dict, rows: np.ndarray) -> None:
        """Keep cache rows `rows` (beam search: the surviving beams' parents)."""
        state["self"] = [(Tensor(k.data[rows]), Tensor(v.data[rows])) for k, v in state["self"]]

    @no_grad()
    def greedy_decode(self, src_ids, src_attention_mask=None, max_len: int | None = None) -> list[list[int]]:
        """The most likely next token at every step, batched; ids without <s>, </s> and padding."""
        was_training = self.training
        self.eval()
        try:
            memory, kpm = self.encode(src_ids, src_attention_mask)
            B = memory.shape[0]
            limit = self._limit(memory.shape[1], max_len)
            state = self._start(memory, kpm)
            tokens = np.full(B, self.config.bos_id, dtype=np.int64)
            out, done = [[] for _ in range(B)], np.zeros(B, dtype=bool)
            for t in range(limit):
                nxt = backend.to_numpy(self._step(state, tokens, t).data.argmax(axis=-1))  # (B,)
                for b in np.flatnonzero(~done):
                    if nxt[b] == self.config.eos_id:
                        done[b] = True
                    else:
                        out[b].append(int(nxt[b]))
                if done.all():
                    break
                tokens = np.where(done, self.config.pad_id, nxt)
            return out
        finally:
            self.train(was_training)

    def _limit(self, src_len: int, max_len: int | None) -> int:
        limit = src_len + 50 if max_len is None else max_len
        return max(1, min(limit, self.config.max_len))

    @no_grad()
    def beam_search(self, src_ids, src_attention_mask=None, beam_size: int = 5, length_penalty: float = 0.6,
                    max_len: int | None = None) -> list[list[int]]:
        """Beam search with GNMT's length penalty: rank finished hypotheses by log p(y|x) / ((5 + |y|) / 6)^α.

        Batched over sentences × beams. A sentence stops when it has
        `beam_size` finished hypotheses and its best live beam, normalised at
        the current length, cannot beat the worst of them (Hugging Face's rule).
        Returns the best hypothesis per sentence, ids without <s>, </s>, padding.
        """
        if beam_size < 1:
            raise ValueError(f"beam_size must be >= 1, got {beam_size}")
        was_training = self.training
        self.eval()
        try:
            return self._beam(src_ids, src_attention_mask, beam_size, length_penalty, max_len)
        finally:
            self.train(was_training)

    def _beam(self, src_ids, src_attention_mask, K: int, alpha: float, max_len: int | None) -> list[list[int]]:
        c = self.config
        memory, kpm = self.encode(src_ids, src_attention_mask)
        B, S = memory.shape[0], memory.shape[1]
        rows = np.repeat(np.arange(B), K)  # (B·K,) sentence of each beam row
        state = self._start(Tensor(memory.data[rows]), kpm[rows])
        limit = self._limit(S, max_len)

        def lp(n: int) -> float:
            return ((5.0 + n) / 6.0) ** alpha

        scores = np.full((B, K), -np.inf)
        scores[:, 0] = 0.0  # one live beam at the start, so the first step does not pick K copies
        seqs = np.zeros((B, K, 0), dtype=np.int64)
        tokens = np.full(B * K, c.bos_id, dtype=np.int64)
        finished: list[list[tuple[float, list[int]]]] = [[] for _ in range(B)]
        done = np.zeros(B, dtype=bool)
        for t in range(limit):
            logp = backend.to_numpy(F.log_softmax(self._step(state, tokens, t), dim=-1).data).astype(np.float64)
            V = logp.shape[-1]
            cand = (scores[:, :, None] + logp.reshape(B, K, V)).reshape(B, K * V)  # (B, K·V)
            top = np.argsort(-cand, axis=1, kind="stable")[:, : 2 * K]  # (B, 2K) enough to refill K beams
            new_scores = np.full((B, K), -np.inf)
            parent = np.tile(np.arange(K), (B, 1))
            new_tok = np.full((B, K), c.pad_id, dtype=np.int64)
            for b in np.flatnonzero(~done):
                n = 0
                for idx in top[b]:
                    s = cand[b, idx]
                    if not np.isfinite(s):
                        break
                    beam, tok = divmod(int(idx), V)
                    if tok == c.eos_id:
                        finished[b].append((s / lp(t + 1), seqs[b, beam].tolist()))
                        continue
                    new_scores[b, n], parent[b, n], new_tok[b, n] = s, beam, tok
                    n += 1
                    if n == K:
                        break
                finished[b].sort(key=lambda h: -h[0])
                del finished[b][K:]
                if n == 0 or (len(finished[b]) == K and finished[b][-1][0] >= new_scores[b].max() / lp(t + 1)):
                    done[b] = True
            if done.all():
                break
            seqs = np.concatenate([np.take_along_axis(seqs, parent[:, :, None], axis=1), new_tok[:, :, None]], axis=2)
            scores = new_scores
            flat_parent = (np.arange(B)[:, None] * K + parent).reshape(-1)  # (B·K,) rows to keep
            self._reorder(state, flat_parent)
            tokens = new_tok.reshape(-1)
        best = []
        for b in range(B):
            if not finished[b]:  # ran out of length: take the live beams as they are
                finished[b] = [(scores[b, k] / lp(seqs.shape[2]), seqs[b, k].tolist()) for k in range(K)
                               if np.isfinite(scores[b, k])]
            best.append(max(finished[b], key=lambda h: h[0])[1] if finished[b] else [])
        return best


def _proj(mha, x: Tensor, which: int) -> Tensor:
    """The query (0), key (1) or value (2) projection of a MultiheadAttention with a packed in_proj."""
    E = mha.embed_dim
    w = mha.in_proj_weight[which * E:(which + 1) * E]  # (E, E)
    b = None if mha.in_proj_bias is None else mha.in_proj_bias[which * E:(which + 1) * E]
    return F.linear(x, w, b)


def _cross_attend(mha, h: Tensor, kv: tuple[Tensor, Tensor], kpm) -> Tensor:
    B, H, D = h.shape[0], mha.num_heads, mha.head_dim
    q = _proj(mha, h, 0).reshape(B, 1, H, D).transpose(1, 2)  # (B, H, 1, D)
    allowed = None if kpm is None else ~kpm[:, None, None, :]  # (B, 1, 1, S) True = may attend
    out, _ = F.attention(q, kv[0], kv[1], attn_mask=allowed)  # (B, H, 1, D)
    return mha.out_proj(out.transpose(1, 2).reshape(B, 1, H * D))  # (B, 1, d)


# ---- the Multi30k pipeline ---------------------------------------------------------
SPECIAL_TOKENS = ("<pad>", "<s>", "</s>")  # ids 0, 1, 2: TranslatorConfig's pad_id, bos_id, eos_id


def build_tokenizer(texts, vocab_size: int = 8000):
    """A joint byte-level BPE over both languages; decoding gives back cased, detokenized text."""
    from seqlab.data import Tokenizer

    tok = Tokenizer.train_bpe(texts, vocab_size, special_tokens=SPECIAL_TOKENS)
    ids = [tok.convert_tokens_to_ids(t) for t in SPECIAL_TOKENS]
    assert ids == [0, 1, 2], ids  # the trainer puts special tokens first
    return tok


def encode_pairs(tok, src_texts, tgt_texts, max_len: int = 128) -> list[tuple[np.ndarray, np.ndarray]]:
    """(source ids + </s>, <s> + target ids + </s>) per pair, each cut to `max_len`."""
    if len(src_texts) != len(tgt_texts):
        raise ValueError(f"got {len(src_texts)} source and {len(tgt_texts)} target sentences; they must pair up")
    src = tok.encode_batch(list(src_texts), add_special_tokens=False)
    tgt = tok.encode_batch(list(tgt_texts), add_special_tokens=False)
    return [(np.array(s[: max_len - 1] + [2], dtype=np.int64), np.array([1] + t[: max_len - 2] + [2], dtype=np.int64))
            for s, t in zip(src, tgt)]


def make_batch(pairs, index, pad_id: int = 0) -> dict[str, np.ndarray]:
    """Padded arrays for the pairs at `index`: src (B, S), tgt_in (B, L) = <s> y, tgt_out (B, L) = y </s>."""
    from seqlab.data import pad_batch

    src, _ = pad_batch([pairs[i][0] for i in index], pad_id)  # (B, S)
    tgt, _ = pad_batch([pairs[i][1] for i in index], pad_id)  # (B, L + 1)
    return {"src": src, "tgt_in": tgt[:, :-1], "tgt_out": tgt[:, 1:]}


def translation_loss(model: Translator, batch: dict, label_smoothing: float = 0.1) -> Tensor:
    """Mean label-smoothed cross-entropy per target token (padding ignored), the paper's §5.4 (ε = 0.1)."""
    return model(batch["src"], batch["tgt_in"], labels=batch["tgt_out"], label_smoothing=label_smoothing).loss


def translate(model: Translator, tok, sentences, beam_size: int = 5, length_penalty: float = 0.6,
              batch_size: int = 100, max_len: int | None = None) -> list[str]:
    """Detokenized translations of raw `sentences`: greedy when beam_size == 1, else beam search."""
    pairs = encode_pairs(tok, sentences, sentences, model.config.max_len)
    order = np.argsort([len(p[0]) for p in pairs], kind="stable")  # similar lengths together: less padding
    out: list[str] = [""] * len(pairs)
    for start in range(0, len(order), batch_size):
        idx = order[start:start + batch_size]
        src = make_batch(pairs, idx)["src"]
        ids = model.greedy_decode(src, max_len=max_len) if beam_size == 1 else \
            model.beam_search(src, beam_size=beam_size, length_penalty=length_penalty, max_len=max_len)
        for i, row in zip(idx, ids):
            out[i] = tok.decode(row).strip()  # byte-level BPE: a word-initial token decodes with its space
    return out


def bleu(hypotheses, references) -> float:
    """Corpus BLEU with sacrebleu's defaults (13a tokenization, cased) on detokenized text."""
    import sacrebleu

    return float(sacrebleu.corpus_bleu(list(hypotheses), [list(references)]).score)


def train_multi30k(out_dir=None, data_dir=None, max_minutes: float = 90.0, max_steps: int | None = None,
                   seed: int = 0, vocab_size: int = 8000, batch_size: int = 128, warmup: int = 2000,
                   lr_scale: float = 1.0, label_smoothing: float = 0.1, eval_every: int = 1000,
                   beam_size: int = 5, length_penalty: float = 0.6, train_limit: int | None = None,
                   eval_limit: int | None = None, log=None, **config) -> dict:
    """Train the Transformer on Multi30k de→en and report test2016 BLEU (the issue's reference run).

    Adam(β = (0.9, 0.98), ε = 1e-9) with the paper's schedule
    lr = lr_scale · d^−0.5 · min(s^−0.5, s · warmup^−1.5); label smoothing 0.1;
    length-bucketed batches of `batch_size` sentences; gradient clipping at 1.
    Stops after `max_minutes` of training or `max_steps`; greedy val BLEU every
    `eval_every` steps; final test2016 BLEU with beam search. `config` overrides
    `TranslatorConfig` fields (default: shared embeddings over one joint vocabulary).
    `log(row: dict)` receives the metrics (the caller prints). With `out_dir`, writes
    model.safetensors, config.json, tokenizer/ and results.json there.
    """
    import json
    import pathlib
    import time

    import seqlab
    from seqlab.data import bucket_batches, load_multi30k
    from seqlab.optim import Adam, LambdaLR, clip_grad_norm_, inverse_sqrt

    seqlab.manual_seed(seed)
    rng = np.random.default_rng(seed)
    log = log or (lambda row: None)
    (de_tr, en_tr), (de_va, en_va), (de_te, en_te) = (load_multi30k(s, data_dir) for s in ("train", "val", "test2016"))
    if train_limit:
        de_tr, en_tr = de_tr[:train_limit], en_tr[:train_limit]
    if eval_limit:
        de_va, en_va, de_te, en_te = de_va[:eval_limit], en_va[:eval_limit], de_te[:eval_limit], en_te[:eval_limit]
    tok = build_tokenizer(de_tr + en_tr, vocab_size)
    cfg = TranslatorConfig(**{"src_vocab_size": tok.vocab_size, "tgt_vocab_size": tok.vocab_size,
                              "share_embeddings": True, **config})
    model = Translator(cfg)
    pairs = encode_pairs(tok, de_tr, en_tr, cfg.max_len)
    lengths = [len(s) + len(t) for s, t in pairs]
    opt = Adam(model.parameters(), lr=lr_scale, betas=(0.9, 0.98), eps=1e-9)
    sched = LambdaLR(opt, inverse_sqrt(cfg.d_model, warmup))
    history, step, t0 = [], 0, time.perf_counter()
    budget = max_minutes * 60.0
    stop = False
    while not stop:
        for idx in bucket_batches(lengths, batch_size, rng=rng):
            model.train()
            loss = translation_loss(model, make_batch(pairs, idx, cfg.pad_id), label_smoothing)
            opt.zero_grad()
            loss.backward()
            clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            sched.step()
            step += 1
            row = {"step": step, "loss": float(loss.item()), "lr": sched.get_last_lr()[0],
                   "elapsed": time.perf_counter() - t0}
            if step % eval_every == 0:
                row["val_bleu"] = bleu(translate(model, tok, de_va, beam_size=1), en_va)
                history.append(row)
            log(row)
            if (max_steps is not None and step >= max_steps) or time.perf_counter() - t0 >= budget:
                stop = True
                break
    train_seconds = time.perf_counter() - t0
    val_bleu = bleu(translate(model, tok, de_va, beam_size=1), en_va)
    t1 = time.perf_counter()
    hyps = translate(model, tok, de_te, beam_size=beam_size, length_penalty=length_penalty)
    results = {"test2016_bleu": bleu(hyps, en_te), "val_bleu_greedy": val_bleu, "steps": step,
               "train_minutes": train_seconds / 60.0, "decode_seconds": time.perf_counter() - t1,
               "final_loss": row["loss"], "beam_size": beam_size,
               "length_penalty": length_penalty, "config": cfg.to_dict(), "history": history,
               "examples": [{"de": d, "ref": r, "hyp": h} for d, r, h in list(zip(de_te, en_te, hyps))[:5]]}
    if out_dir is not None:
        from safetensors.numpy import save_file

        out = pathlib.Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        # tied / shared weights are saved under each name, as torch's state_dict lists them
        save_file({k: np.array(backend.to_numpy(v)) for k, v in model.state_dict().items()},
                  str(out / "model.safetensors"))
        (out / "config.json").write_text(json.dumps(cfg.to_dict(), indent=2) + "\n")
        tok.save(out / "tokenizer")
        (out / "results.json").write_text(json.dumps(results, indent=2) + "\n")
    results["model"], results["tokenizer"] = model, tok
    return results
