"""`seqlab generate` and `seqlab embed` end to end (in-process)."""
from __future__ import annotations

import numpy as np
import pytest

import seqlab
from seqlab.cli.main import main
from seqlab.models import GPT, GPTConfig


@pytest.fixture(scope="module")
def gpt_folder(tmp_path_factory):
    from seqlab.data import Tokenizer

    folder = tmp_path_factory.mktemp("gpt")
    tok = Tokenizer.train_bpe(["the cat sat on the mat. the dog sat on the log."] * 20, vocab_size=300)
    tok.save(folder)
    eot = tok.convert_tokens_to_ids("<|endoftext|>")
    seqlab.manual_seed(0)
    model = GPT(GPTConfig(vocab_size=tok.vocab_size, n_positions=64, n_embd=16, n_layer=1, n_head=2,
                          bos_token_id=eot, eos_token_id=eot))
    model.save_pretrained(folder)
    return folder, tok, model


def test_generate_cli_greedy_matches_the_api(gpt_folder, capsys):
    folder, tok, model = gpt_folder
    assert main(["generate", str(folder), "--prompt", "the cat", "--prompt", "a dog sat on",
                 "--max-new-tokens", "6"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2 and lines[0].startswith("the cat") and lines[1].startswith("a dog sat on")
    ids = np.array([tok.encode("the cat")])
    expected = tok.decode(model.eval().generate(ids, max_new_tokens=6)[0, ids.shape[1]:])
    assert lines[0] == "the cat" + expected


def test_generate_cli_sampling_is_seeded_and_options_are_checked(gpt_folder, capsys):
    folder, _, _ = gpt_folder
    args = ["generate", str(folder), "--prompt", "the", "--max-new-tokens", "8", "--temperature", "3", "--top-p",
            "0.95"]
    assert main(args + ["--seed", "1"]) == 0
    first = capsys.readouterr().out
    assert main(args + ["--seed", "1"]) == 0
    assert capsys.readouterr().out == first
    assert main(args + ["--num-beams", "2"]) == 2
    assert "not both" in capsys.readouterr().err


def test_generate_cli_refuses_a_bert_folder(tmp_path, capsys):
    from seqlab.models import BertConfig, BertModel

    BertModel(BertConfig(vocab_size=20, hidden_size=8, num_hidden_layers=1, num_attention_heads=2,
                         intermediate_size=8)).save_pretrained(tmp_path)
    assert main(["generate", str(tmp_path), "--prompt", "x"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "BertModel" in err[0]


def test_embed_cli_prints_shapes_and_similarities(capsys):
    assert main(["embed", "A man is eating food.", "A man eats a meal.", "The sky is blue."]) == 0
    out = capsys.readouterr().out
    assert "(3, 384)" in out and "cosine similarity" in out
    rows = [line for line in out.splitlines() if line.startswith("[") and "norm" not in line]
    sim = np.array([[float(x) for x in line.split()[1:]] for line in rows])
    assert sim.shape == (3, 3) and np.allclose(np.diag(sim), 1.0)
    assert sim[0, 1] > sim[0, 2]  # the two meals are closer than the sky
    assert main(["embed", "--section-3-2"]) == 0
    out = capsys.readouterr().out
    assert "last_hidden_state: (1, 8, 384)" in out and "pooler_output:     (1, 384)" in out
