"""`seqlab generate` streams one prompt's text as it is generated, and stdout ends up byte for byte what
--no-stream prints: for byte-level BPE (characters split across tokens), WordPiece ("##" pieces join the
word before), T5, and the character tokenizer of a shakespeare-gpt run folder."""
from __future__ import annotations

import io
import os
import sys
from pathlib import Path

import numpy as np
import pytest

import seqlab
from seqlab.cli.main import main
from seqlab.models import GPT, GPTConfig

CORPUS = ["the cat sat on the mat.\nthe dog sat on the log!", "a cat and a dog, (maybe) 猫と犬 café naïve 😀 ok?"] * 30


class Stdout(io.StringIO):
    """stdout that remembers what had been written at each flush."""

    def __init__(self):
        super().__init__()
        self.flushed: list[str] = []

    def flush(self):
        self.flushed.append(self.getvalue())


def run(monkeypatch, *argv) -> Stdout:
    out = Stdout()
    with monkeypatch.context() as m:
        m.setattr(sys, "stdout", out)
        assert main(["generate", *map(str, argv)]) == 0
    return out


def same_as_no_stream(monkeypatch, folder, *options, streams: bool = True, head: str | None = None) -> str:
    """The streamed stdout equals --no-stream's; when it streams, the text grew over several flushes, each a
    prefix of the whole."""
    streamed = run(monkeypatch, folder, *options)
    plain = run(monkeypatch, folder, *options, "--no-stream")
    text = streamed.getvalue()
    assert text == plain.getvalue() and text.endswith("\n")
    steps = [s for i, s in enumerate(streamed.flushed) if s and s != streamed.flushed[i - 1]]
    assert all(text.startswith(s) for s in steps)
    if streams:
        assert len(steps) > 3
    if head is not None:  # printed as generation starts
        assert steps[0] == head
    return text


@pytest.fixture(scope="module")
def bpe_gpt(tmp_path_factory):
    from seqlab.data import Tokenizer

    folder = tmp_path_factory.mktemp("gpt-bpe")
    tok = Tokenizer.train_bpe(CORPUS, vocab_size=300)
    tok.save(folder)
    eot = tok.convert_tokens_to_ids("<|endoftext|>")
    seqlab.manual_seed(0)
    GPT(GPTConfig(vocab_size=tok.vocab_size, n_positions=64, n_embd=16, n_layer=1, n_head=2, bos_token_id=eot,
                  eos_token_id=eot)).save_pretrained(folder)
    return folder


def test_streamed_output_equals_no_stream_for_a_gpt2_folder(bpe_gpt, monkeypatch, capsys):
    text = same_as_no_stream(monkeypatch, bpe_gpt, "--prompt", "the cat 猫", "--max-new-tokens", "12",
                             head="the cat 猫")
    assert text.startswith("the cat 猫")
    # sampling all over the byte vocabulary: incomplete UTF-8 characters come and go; a few seeds
    seen_wide = False
    for seed in range(3):
        text = same_as_no_stream(monkeypatch, bpe_gpt, "--prompt", "a dog", "--max-new-tokens", "30",
                                 "--temperature", "3", "--top-k", "0", "--seed", seed)
        seen_wide |= "\ufffd" in text or any(ord(c) > 127 for c in text[5:])
    assert seen_wide
    # what --no-stream prints is what the command printed before streaming: the API's tokens decoded in context
    from seqlab.cli.generate import continuation
    from seqlab.data import Tokenizer

    tok = Tokenizer.from_pretrained(bpe_gpt)
    model = seqlab.models.AutoModel.from_pretrained(bpe_gpt)
    ids = np.array([tok.encode("the cat", add_special_tokens=False)])
    new = model.generate(ids, max_new_tokens=9)[0, ids.shape[1]:]
    assert run(monkeypatch, bpe_gpt, "--prompt", "the cat", "--max-new-tokens", "9").getvalue() == \
        "the cat" + continuation(tok, ids[0], new) + "\n"


def test_streamed_output_equals_no_stream_for_word_pieces(tmp_path, monkeypatch):
    from seqlab.data import Tokenizer

    tok = Tokenizer.train_wordpiece(["the cat sat on the mat. the dog sat on the log. a filmar or two."] * 20,
                                    vocab_size=120)
    tok.save(tmp_path)
    seqlab.manual_seed(1)
    GPT(GPTConfig(vocab_size=tok.vocab_size, n_positions=64, n_embd=16, n_layer=1, n_head=2,
                  bos_token_id=tok.cls_token_id, eos_token_id=tok.sep_token_id,
                  pad_token_id=tok.pad_token_id)).save_pretrained(tmp_path)
    pieces = False
    for seed in range(3):
        text = same_as_no_stream(monkeypatch, tmp_path, "--prompt", "The cat sat", "--max-new-tokens", "15",
                                 "--temperature", "2", "--seed", seed)
        model = seqlab.models.AutoModel.from_pretrained(tmp_path)
        ids = np.array([tok.encode("The cat sat", add_special_tokens=False)])
        new = model.generate(ids, max_new_tokens=15, do_sample=True, temperature=2.0, seed=seed)[0, 3:]
        pieces |= any(tok.convert_ids_to_tokens(int(t)).startswith("##") for t in new)
        assert text.startswith("The cat sat")
    assert pieces                                                            # a "##" piece joined its word


def test_streamed_output_equals_no_stream_for_t5(tmp_path, monkeypatch):
    from seqlab.data import Tokenizer
    from seqlab.models import T5Config, T5ForConditionalGeneration

    tok = Tokenizer.train_bpe(CORPUS, vocab_size=300)
    tok.save(tmp_path)
    seqlab.manual_seed(2)
    T5ForConditionalGeneration(T5Config(vocab_size=tok.vocab_size, d_model=16, d_kv=4, d_ff=24, num_layers=1,
                                        num_heads=2, decoder_start_token_id=0, pad_token_id=0,
                                        eos_token_id=tok.convert_tokens_to_ids("<|endoftext|>"))
                               ).save_pretrained(tmp_path)
    same_as_no_stream(monkeypatch, tmp_path, "--prompt", "the cat sat", "--max-new-tokens", "12", "--temperature",
                      "3", "--seed", "0")


def test_several_prompts_and_beams_do_not_stream(bpe_gpt, monkeypatch):
    from seqlab.cli import generate

    def refuse(*a, **k):
        raise AssertionError("streamed")

    monkeypatch.setattr(generate, "_LineStreamer", refuse)
    same_as_no_stream(monkeypatch, bpe_gpt, "--prompt", "the cat", "--prompt", "a dog", "--max-new-tokens", "6",
                      streams=False)
    same_as_no_stream(monkeypatch, bpe_gpt, "--prompt", "the cat", "--num-beams", "2", "--max-new-tokens", "6",
                      streams=False)


def test_streamed_output_equals_no_stream_for_a_shakespeare_gpt_run_folder(tmp_path, monkeypatch):
    from seqlab.train import runs

    data = Path(os.environ.get("SEQLAB_DATA") or Path(__file__).resolve().parents[3] / "shared" / "data")
    if not (data / "tinyshakespeare").is_dir():
        pytest.skip(f"shared datasets not found at {data} (set SEQLAB_DATA)")
    out = tmp_path / "run"
    settings = {"max_steps": 2, "eval_every": 2, "checkpoint_every": 1, "log_every": 1, "max_minutes": 0.0,
                "n_layer": 1, "n_head": 2, "n_embd": 16, "block_size": 16, "eval_iters": 2, "sample_chars": 0}
    runs.train("shakespeare-gpt", out, [(settings, "test")], data_dir=data)
    # 30 characters after a 6-character prompt outgrow the 16 positions: the window slides, the stream goes on
    text = same_as_no_stream(monkeypatch, out, "--prompt", "ROMEO:", "--max-new-tokens", "30", "--temperature",
                             "1.5", "--seed", "3")
    assert text.startswith("ROMEO:") and len(text) == len("ROMEO:") + 30 + 1
