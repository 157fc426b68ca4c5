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
    lines = capsys.readouterr().out.splitlines()  # several prompts: a header line before each output
    assert lines[0] == "--- prompt 1 ---" and lines[2] == "--- prompt 2 ---" and len(lines) == 4
    assert lines[1].startswith("the cat") and lines[3].startswith("a dog sat on")
    ids = np.array([tok.encode("the cat")])
    expected = tok.decode(model.eval().generate(ids, max_new_tokens=6)[0, ids.shape[1]:])
    assert lines[1] == "the cat" + expected
    # one prompt: its text alone, nothing else on stdout (so it pipes clean)
    assert main(["generate", str(folder), "--prompt", "the cat", "--max-new-tokens", "6"]) == 0
    assert capsys.readouterr().out == "the cat" + expected + "\n"


def test_generate_cli_sets_apart_outputs_that_span_lines(gpt_folder, capsys, monkeypatch):
    """Outputs of several prompts never run together, even when one holds newlines: each follows its header."""
    from seqlab.cli import generate

    folder, _, _ = gpt_folder
    monkeypatch.setattr(generate, "continuation", lambda tok, p, n: "\nline two\n")  # text over several lines
    assert main(["generate", str(folder), "--prompt", "the cat", "--prompt", "a dog", "--max-new-tokens", "2"]) == 0
    out = capsys.readouterr().out
    assert out == "--- prompt 1 ---\nthe cat\nline two\n\n--- prompt 2 ---\na dog\nline two\n\n"


@pytest.fixture(scope="module")
def wordpiece_gpt_folder(tmp_path_factory):
    """A GPT with a BERT-style WordPiece tokenizer and [SEP] as its end of text, as `seqlab train clm-pretrain`
    saves one."""
    from seqlab.data import Tokenizer

    folder = tmp_path_factory.mktemp("gpt-wordpiece")
    tok = Tokenizer.train_wordpiece(["the cat sat on the mat. the dog sat on the log. a filmar or two."] * 20,
                                    vocab_size=120)
    tok.save(folder)
    seqlab.manual_seed(1)
    model = GPT(GPTConfig(vocab_size=tok.vocab_size, n_positions=64, n_embd=16, n_layer=1, n_head=2,
                          bos_token_id=tok.cls_token_id, eos_token_id=tok.sep_token_id,
                          pad_token_id=tok.pad_token_id))
    model.save_pretrained(folder)
    return folder, tok, model


def test_generate_cli_gives_a_gpt_the_prompt_without_bert_specials(wordpiece_gpt_folder, capsys):
    """A WordPiece template would put [CLS] before the prompt and [SEP], the model's end of text, after it:
    the model would read the prompt as a finished line. The CLI continues the bare prompt, as the API does."""
    from seqlab.cli.generate import continuation

    folder, tok, model = wordpiece_gpt_folder
    assert main(["generate", str(folder), "--prompt", "The cat sat", "--max-new-tokens", "6"]) == 0
    line = capsys.readouterr().out.rstrip("\n")
    ids = np.array([tok.encode("The cat sat", add_special_tokens=False)])
    assert tok.cls_token_id not in ids and tok.sep_token_id not in ids
    new = model.eval().generate(ids, max_new_tokens=6)[0, ids.shape[1]:]
    assert line == "The cat sat" + continuation(tok, ids[0], new)


def test_continuation_joins_word_pieces_and_spaces_words(wordpiece_gpt_folder):
    from seqlab.cli.generate import continuation

    _, tok, _ = wordpiece_gpt_folder
    prompt = tok.encode("a film", add_special_tokens=False)
    piece = next(t for t in tok.get_vocab() if t.startswith("##"))
    assert continuation(tok, prompt, [tok.convert_tokens_to_ids(piece)]) == piece[2:]  # no space: one word
    assert continuation(tok, prompt, tok.encode("the cat", add_special_tokens=False)) == " the cat"
    assert continuation(tok, prompt, [tok.sep_token_id]) == ""  # the end of text itself prints nothing


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


def test_generate_cli_takes_a_shakespeare_gpt_run_folder(tmp_path, capsys):
    """A run folder (char tokenizer, no special tokens) continues the prompt as the API does, with the best or
    the latest weights; --checkpoint is refused for a Hugging Face folder, which has one set of weights."""
    import os
    from pathlib import Path

    from seqlab.data import load_tokenizer
    from seqlab.train import runs

    data = Path(os.environ.get("SEQLAB_DATA") or Path(__file__).resolve().parents[3] / "shared" / "data")
    if not (data / "tinyshakespeare").is_dir():
        pytest.skip(f"shared datasets not found at {data} (set SEQLAB_DATA)")
    out = tmp_path / "run"
    settings = {"max_steps": 2, "eval_every": 2, "checkpoint_every": 1, "log_every": 1, "max_minutes": 0.0,
                "n_layer": 1, "n_head": 2, "n_embd": 16, "block_size": 16, "eval_iters": 2, "sample_chars": 0}
    runs.train("shakespeare-gpt", out, [(settings, "test")], data_dir=data)
    for which in ("best", "latest"):
        assert main(["generate", str(out), "--prompt", "ROMEO:", "--max-new-tokens", "5",
                     "--checkpoint", which]) == 0
        line = capsys.readouterr().out.rstrip("\n")
        run = runs.load_run(out, which=which)
        tok = load_tokenizer(out / "tokenizer")
        ids = np.array([tok.encode("ROMEO:")])
        expected = tok.decode(run.task.model.eval().generate(ids, max_new_tokens=5)[0])
        assert line == expected and len(line) == len("ROMEO:") + 5
    hf = tmp_path / "hf"
    runs.load_run(out).task.model.save_pretrained(hf)
    assert main(["generate", str(hf), "--prompt", "x", "--checkpoint", "latest"]) == 2
    assert "not a run folder" in capsys.readouterr().err


def test_generate_cli_says_why_nothing_was_added(tmp_path, capsys):
    """A model whose first new token is its end of text prints the prompt alone: a note says why."""
    from seqlab.data import Tokenizer

    tok = Tokenizer.train_bpe(["the cat sat on the mat. the dog sat on the log."] * 20, vocab_size=300)
    seqlab.manual_seed(0)
    model = GPT(GPTConfig(vocab_size=tok.vocab_size, n_positions=64, n_embd=16, n_layer=1, n_head=2)).eval()
    first = int(model.generate(np.array([tok.encode("the cat")]), max_new_tokens=1, eos_token_id=[])[0, -1])
    model.config.eos_token_id = first                                   # the model "ends" at once
    tok.save(tmp_path)
    model.save_pretrained(tmp_path)
    assert main(["generate", str(tmp_path), "--prompt", "the cat", "--max-new-tokens", "5"]) == 0
    out, err = capsys.readouterr()
    assert out.startswith("the cat")                                    # (this end token is an ordinary one)
    assert f"note: --prompt: the model's first new token is its end of text (id {first})" in err


def test_generate_cli_missing_folder_lists_no_bert_names(tmp_path, capsys):
    assert main(["generate", str(tmp_path / "nosuch"), "--prompt", "x"]) == 1
    err = capsys.readouterr().err
    assert "does not exist; give a GPT-2 or T5" in err and "MiniLM" not in err


def test_generate_cli_repetition_options_match_the_api(gpt_folder, capsys):
    folder, tok, model = gpt_folder
    ids = np.array([tok.encode("the cat")])
    for flags, kw in ((["--repetition-penalty", "3"], {"repetition_penalty": 3.0}),
                      (["--no-repeat-ngram-size", "2"], {"no_repeat_ngram_size": 2})):
        assert main(["generate", str(folder), "--prompt", "the cat", "--max-new-tokens", "10", *flags]) == 0
        line = capsys.readouterr().out.rstrip("\n")
        expected = model.eval().generate(ids, max_new_tokens=10, **kw)
        assert line == "the cat" + tok.decode(expected[0, ids.shape[1]:])
        assert not np.array_equal(expected, model.generate(ids, max_new_tokens=10))  # the option mattered
    assert main(["generate", str(folder), "--prompt", "x", "--repetition-penalty", "0"]) == 2
    assert "--repetition-penalty must be a finite number > 0" in capsys.readouterr().err
