"""Bad input to `seqlab attention`: one line on stderr, a non-zero exit, no traceback."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from attention_helpers import run_cli


def _one_error_line(code: int, stderr: str, *fragments: str) -> None:
    assert code == 1
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), stderr
    assert "Traceback" not in stderr
    for f in fragments:
        assert f in lines[0], lines[0]


def test_empty_text_in_a_subprocess(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "seqlab", "attention", "   ", "--out", str(tmp_path / "o")],
                          capture_output=True, text=True, timeout=120)
    _one_error_line(proc.returncode, proc.stderr, "TEXT is empty")
    assert proc.stdout == ""


def test_missing_model_folder_in_a_subprocess(tmp_path):
    missing = tmp_path / "no-such-model"
    proc = subprocess.run([sys.executable, "-m", "seqlab", "attention", "hello", "--model", str(missing),
                           "--out", str(tmp_path / "o")], capture_output=True, text=True, timeout=120)
    _one_error_line(proc.returncode, proc.stderr, str(missing), "does not exist")


def _folder(tmp_path, config: dict | None):
    d = tmp_path / "model"
    d.mkdir()
    if config is not None:
        (d / "config.json").write_text(json.dumps(config), encoding="utf-8")
    return str(d)


@pytest.mark.parametrize("config, fragment", [
    ({"model_type": "llama", "hidden_size": 8}, "unknown model_type 'llama'"),
    ({"hidden": 3, "layers": 2}, "unknown model type"),
    (None, "has no config.json"),
])
def test_folders_that_are_not_models(tmp_path, config, fragment):
    code, _, stderr = run_cli("hello", "--model", _folder(tmp_path, config), "--out", str(tmp_path / "o"))
    _one_error_line(code, stderr, fragment)


@pytest.mark.parametrize("argv, fragment", [
    (["", "--out", "OUT"], "TEXT is empty"),
    (["hello", "--pair", " ", "--out", "OUT"], "--pair is empty"),
    (["hello", "--layers", "two", "--out", "OUT"], "'two' is not a layer number"),
    (["hello", "--layers", "3-1", "--out", "OUT"], "runs backwards"),
])
def test_bad_options_fail_before_loading_a_model(tmp_path, argv, fragment):
    code, stdout, stderr = run_cli(*[str(tmp_path / "o") if a == "OUT" else a for a in argv])
    _one_error_line(code, stderr, fragment)
    assert stdout == ""


@pytest.mark.parametrize("extra, fragment", [
    (["--pair", "the dog"], "a sentence pair needs an encoder"),
    (["--layers", "7"], "layer 7 does not exist: the model has 2 layers"),
])
def test_options_the_model_cannot_honour(model_dirs, tmp_path, extra, fragment):
    code, _, stderr = run_cli("the cat", "--model", str(model_dirs["gpt"]), *extra, "--out", str(tmp_path / "o"))
    _one_error_line(code, stderr, fragment)


def test_model_without_attention():
    from seqlab import nn
    from seqlab.viz import VizError, attention_kind

    class BagOfWords(nn.Module):
        def forward(self, input_ids, attention_mask=None):
            return input_ids

    with pytest.raises(VizError, match="BagOfWords does not return attention weights"):
        attention_kind(BagOfWords())


def test_library_rejects_empty_text(model_dirs, bpe_tokenizer):
    from seqlab.models.gpt import GPT
    from seqlab.viz import VizError, extract_attention

    model = GPT.from_pretrained(model_dirs["gpt"])
    with pytest.raises(VizError, match="text is empty"):
        extract_attention(model, bpe_tokenizer, " \n")
    with pytest.raises(TypeError, match="text must be a str"):
        extract_attention(model, bpe_tokenizer, ["a", "list"])


def test_a_run_of_a_model_without_attention_says_so(tmp_path):
    """A toy-classifier run (a bag-of-words MLP, no tokenizer folder): the error names the missing attention,
    not the missing tokenizer."""
    from seqlab.cli.main import main

    run_dir = tmp_path / "toy"
    assert main(["train", "toy-classifier", "--out", str(run_dir), "--set", "max_steps=2", "--no-progress"]) == 0
    code, _, stderr = run_cli("a good film", "--model", str(run_dir), "--out", str(tmp_path / "out"))
    _one_error_line(code, stderr, "does not return attention weights")
    assert "tokenizer" not in stderr


def test_a_model_one_folder_down_is_named(tmp_path):
    """A run folder of mlm-pretrain / clm-pretrain or an experiment's folder holds the model at pretrained/:
    the error says so, for `attention` and for the library's loader."""
    from seqlab.errors import CheckpointError
    from seqlab.models import AutoModel

    outer = tmp_path / "pretrain_t5"
    (outer / "pretrained").mkdir(parents=True)
    (outer / "pretrained" / "config.json").write_text("{}", encoding="utf-8")
    code, _, stderr = run_cli("hello", "--model", str(outer), "--out", str(tmp_path / "o"))
    _one_error_line(code, stderr, f"did you mean {outer / 'pretrained'}?")
    with pytest.raises(CheckpointError, match="did you mean .*pretrained\\?"):
        AutoModel.from_pretrained(outer)
