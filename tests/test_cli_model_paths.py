"""What `generate`, `embed` and `attention` take as a model, found by a learner's walkthrough: a file or an
empty name is refused in one line that says so (not with the list of pretrained BERT names), and `embed`
finds a `seqlab train` run folder of a BERT as `attention` does (one resolver, `cli.attention.load_model`),
refusing a model that is not a BERT with a line that says that."""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

DATA = Path(os.environ.get("SEQLAB_DATA") or Path(__file__).resolve().parents[2] / "shared" / "data")
SENTENCES = ["the cat sat on the mat", "a dog ran in the park", "a good movie with a great plot",
             "a bad film and a dull story", "it is a moving and smart film"] * 4


def _line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in err, err
    return lines[0]


@pytest.fixture(scope="module")
def tiny_bert(tmp_path_factory) -> Path:
    """A Hugging Face BERT folder with random weights and a WordPiece vocabulary of a few sentences."""
    import seqlab
    from seqlab.data import Tokenizer
    from seqlab.models import BertConfig, BertModel

    folder = tmp_path_factory.mktemp("tiny-bert")
    tok = Tokenizer.train_wordpiece(SENTENCES, 80)
    seqlab.manual_seed(0)
    BertModel(BertConfig(vocab_size=tok.vocab_size, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                         intermediate_size=16, max_position_embeddings=32)).save_pretrained(folder)
    tok.save(folder)
    return folder


@pytest.fixture(scope="module")
def bert_run(tiny_bert, tmp_path_factory) -> Path:
    """A `seqlab train sst2-bert` run folder (one step) fine-tuning the tiny BERT: as runs/bert in the README."""
    from seqlab.cli.main import main

    if not (DATA / "sst2" / "dev.tsv").is_file():
        pytest.skip(f"SST-2 not found under {DATA} (set SEQLAB_DATA)")
    run = tmp_path_factory.mktemp("runs") / "bert3"
    settings = [f"pretrained={tiny_bert}", "max_steps=1", "batch_size=4", "max_train_examples=8",
                "max_dev_examples=4", "max_len=16", "eval_every=1", "checkpoint_every=1"]
    argv = ["train", "sst2-bert", "--out", str(run), "--data-dir", str(DATA), "--no-progress"]
    assert main(argv + [a for s in settings for a in ("--set", s)]) == 0
    return run


# ---------------------------------------------------------------- a file, an empty name

def test_generate_refuses_a_file_in_one_line_without_the_bert_names(cli, tmp_path):
    f = tmp_path / "notckpt.safetensors"
    f.write_bytes(b"")
    code, _, err = cli("generate", f, "--prompt", "hi")
    line = _line(err)
    assert code == 1 and f"MODEL_DIR {f} is a file; give a GPT-2 or T5 Hugging Face folder" in line, line
    assert "minilm" not in line and "did you mean" not in line


def test_a_file_inside_a_model_folder_names_the_folder(cli, tiny_bert, tmp_path):
    weights = tiny_bert / "model.safetensors"
    code, _, err = cli("generate", weights, "--prompt", "hi")
    assert code == 1 and _line(err).endswith(f"is a file; give a GPT-2 or T5 Hugging Face folder or a "
                                             f"shakespeare-gpt run folder; did you mean its folder {tiny_bert}?")
    for argv in (["embed", "--model", weights, "x"], ["attention", "x", "--model", weights, "--out", tmp_path / "o"]):
        code, _, err = cli(*argv)
        assert code == 1 and f"--model {weights} is a file" in _line(err), argv
        assert f"did you mean its folder {tiny_bert}?" in err
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("argv, option", [
    (["generate", "", "--prompt", "hi"], "MODEL_DIR"),
    (["generate", " ", "--prompt", "hi"], "MODEL_DIR"),
    (["embed", "--model", "", "x"], "--model"),
    (["embed", "--model", ""], "--model"),
    (["embed", "--model", "", "--section-3-2"], "--model"),
    (["attention", "x", "--model", "", "--out", "OUT"], "--model"),
])
def test_an_empty_model_is_a_usage_error(cli, tmp_path, argv, option):
    code, _, err = cli(*[str(tmp_path / "out") if a == "OUT" else a for a in argv])
    line = _line(err)
    assert code == 2 and line.startswith(f"error: {option} must not be empty; give "), line
    assert "config.json" not in line and not (tmp_path / "out").exists()


# ---------------------------------------------------------------- embed takes what attention takes

def test_embed_takes_a_bert_run_folder_as_attention_does(cli, bert_run, tmp_path):
    from seqlab.cli.attention import load_model
    from seqlab.embed import bert_encoder

    texts = ["a good movie", "a dull story", "the cat sat on the mat"]
    code, out, err = cli("attention", texts[0], "--model", bert_run, "--out", tmp_path / "att")
    assert code == 0 and (tmp_path / "att" / "attention.html").is_file(), err
    code, out, err = cli("embed", "--model", bert_run, *texts)
    assert code == 0, err
    assert out.splitlines()[0] == "3 sentences -> embeddings (3, 16) (mean-pooled, L2-normalised)"
    rows = [line for line in out.splitlines() if line.startswith("[") and "norm" not in line]
    printed = np.array([[float(x) for x in line.split()[1:]] for line in rows])
    # the run's fine-tuned encoder, mean-pooled over the real tokens by hand
    model, tok, _ = load_model(str(bert_run))
    batch = tok(texts, padding=True)
    h = bert_encoder(model)(batch["input_ids"], batch["attention_mask"]).last_hidden_state.numpy()
    m = np.asarray(batch["attention_mask"], dtype=np.float64)[:, :, None]
    v = (h * m).sum(1) / m.sum(1)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    np.testing.assert_allclose(printed, v @ v.T, atol=2e-3)
    code, out, err = cli("embed", "--model", bert_run, "--checkpoint", "latest", "--section-3-2", texts[0])
    n = len(tok.encode(texts[0]))  # [CLS] ... [SEP] of the run's tokenizer (the tiny BERT's own)
    assert code == 0 and f"last_hidden_state: ({1}, {n}, 16)" in out, (out, err)


def test_embed_checkpoint_needs_a_run_folder(cli, tiny_bert):
    code, _, err = cli("embed", "--model", tiny_bert, "--checkpoint", "latest", "x")
    assert code == 1 and "--checkpoint latest picks a seqlab run's weights" in _line(err)


def test_embed_says_when_the_model_is_not_a_bert(cli, tmp_path):
    import seqlab
    from seqlab.data import Tokenizer
    from seqlab.models import GPT, GPTConfig

    run = tmp_path / "toy"
    assert cli("train", "toy-classifier", "--out", run, "--set", "max_steps=2", "--no-progress")[0] == 0
    code, _, err = cli("embed", "--model", run, "x")
    line = _line(err)
    assert code == 1 and "is a seqlab run folder (task toy-classifier) whose BagOfWords is not a BERT" in line
    assert "seqlab embed needs a BERT" in line and "tokenizer" not in line.split(";")[0]

    gpt = tmp_path / "gpt"
    tok = Tokenizer.train_bpe(SENTENCES, 300, min_frequency=1)
    seqlab.manual_seed(0)
    GPT(GPTConfig(vocab_size=tok.vocab_size, n_positions=16, n_embd=16, n_layer=1, n_head=2)).save_pretrained(gpt)
    tok.save(gpt)
    code, _, err = cli("embed", "--model", gpt, "x")
    assert code == 1 and "holds a model_type 'gpt2' model, but seqlab embed needs 'bert'" in _line(err)


def test_sentence_encoder_from_a_loaded_model(tiny_bert):
    from seqlab.data import Tokenizer
    from seqlab.embed import SentenceEncoder, encode
    from seqlab.models import BertForSequenceClassification, BertModel

    tok = Tokenizer.from_pretrained(tiny_bert)
    plain = SentenceEncoder(str(tiny_bert))
    headed = SentenceEncoder.from_model(BertForSequenceClassification.from_pretrained(tiny_bert, num_labels=2), tok)
    assert isinstance(headed.model, BertModel) and headed.max_length == 32
    np.testing.assert_allclose(encode(SENTENCES[:3], headed), plain.encode(SENTENCES[:3]), atol=1e-6)
    with pytest.raises(TypeError, match="SentenceEncoder needs a BERT model, got a Tokenizer"):
        SentenceEncoder.from_model(tok, tok)
