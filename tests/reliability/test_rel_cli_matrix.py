"""The CLI error matrix (issue 9): each bad input gets one `error:` line naming it, the right exit code,
no traceback; with --debug, the traceback comes first and the same line and exit code follow.

Exit 2: the command line itself is wrong (unknown command, task or option, a missing or malformed option
value, conflicting options, --resume with nothing to resume). Exit 1: the command line is well formed but
what it names cannot be used (a folder, file, model, dataset or text).

Cases already held elsewhere are not repeated here; docs/reliability.md points at them
(tests/train/test_cli.py, tests/models/test_cli.py, tests/attention_cli/test_attention_errors.py).
"""
from __future__ import annotations

import os

import pytest

from relhelp import one_error_line

# (id, argv with {placeholders}, exit code, fragments the error line must hold[, environment])
CASES = [
    # ---- usage: unknown command / option, missing or malformed values
    ("unknown-command", ["bogus"], 2, ["invalid choice: 'bogus'", "train"]),
    ("no-command", [], 2, ["no command given", "generate"]),
    ("unknown-option-train", ["train", "toy-classifier", "--out", "{tmp}/r", "--bogus"], 2, ["--bogus"]),
    ("unknown-option-eval", ["eval", "{run}", "--data", "{bad_label}", "--bogus"], 2, ["--bogus"]),
    ("unknown-option-info", ["info", "{run}", "--bogus"], 2, ["--bogus"]),
    ("unknown-option-generate", ["generate", "{gpt}", "--prompt", "x", "--bogus"], 2, ["--bogus"]),
    ("unknown-option-embed", ["embed", "--model", "{bert}", "x", "--bogus"], 2, ["--bogus"]),
    ("unknown-option-attention", ["attention", "x", "--out", "{tmp}/o", "--bogus"], 2, ["--bogus"]),
    ("unknown-option-experiment", ["experiment", "heads", "--out", "{tmp}/o", "--bogus"], 2, ["--bogus"]),
    ("unknown-experiment", ["experiment", "nope", "--out", "{tmp}/o"], 2, ["unknown experiment 'nope'", "heads"]),
    ("missing-required-option", ["generate", "{gpt}"], 2, ["--prompt"]),
    ("malformed-int", ["generate", "{gpt}", "--prompt", "x", "--max-new-tokens", "many"], 2,
     ["--max-new-tokens", "'many'"]),
    ("bad-choice", ["eval", "{run}", "--data", "{bad_label}", "--checkpoint", "oldest"], 2,
     ["--checkpoint", "'oldest'"]),
    ("top-p-out-of-range", ["generate", "{gpt}", "--prompt", "x", "--top-p", "2"], 2, ["--top-p", "2.0"]),
    ("temperature-nan", ["generate", "{gpt}", "--prompt", "x", "--temperature", "nan"], 2, ["--temperature", "nan"]),
    ("beams-zero", ["generate", "{gpt}", "--prompt", "x", "--num-beams", "0"], 2, ["--num-beams", "0"]),
    ("no-room-no-truncate", ["generate", "{gpt}", "--prompt", "x", "--max-new-tokens", "16", "--no-truncate"], 1,
     ["--max-new-tokens 16", "17 positions", "16 positions"]),
    ("config-not-utf8", ["train", "toy-classifier", "--out", "{tmp}/r", "--config", "{bad_toml}"], 2,
     ["bad.toml", "0xe9"]),
    ("config-missing", ["train", "toy-classifier", "--out", "{tmp}/r", "--config", "{tmp}/none.toml"], 2,
     ["none.toml"]),
    # ---- usage: --resume and conflicting options
    ("resume-empty-folder", ["train", "toy-classifier", "--out", "{empty_dir}", "--resume"], 2,
     ["--resume", "no checkpoint", "empty"]),
    ("resume-other-task", ["train", "sst2-lstm", "--out", "{run}", "--resume"], 2,
     ["conflicting options", "'sst2-lstm'", "'toy-classifier'"]),
    ("section-3-2-with-two-texts", ["embed", "--model", "{bert}", "--section-3-2", "a", "b"], 2,
     ["conflicting options", "--section-3-2"]),
    # ---- data folders and files
    ("data-dir-missing", ["train", "sst2-lstm", "--out", "{tmp}/r", "--data-dir", "{tmp}/nodata"], 1,
     ["nodata", "does not exist"]),
    ("data-dir-is-a-file", ["train", "sst2-lstm", "--out", "{tmp}/r", "--data-dir", "{file}"], 1,
     ["file.txt", "not a folder"]),
    ("data-dir-without-dataset", ["train", "sst2-lstm", "--out", "{tmp}/r", "--data-dir", "{empty_dir}"], 1,
     ["train.tsv", "'sst2'", "not found in", "empty"]),
    ("seqlab-data-missing", ["train", "sst2-lstm", "--out", "{tmp}/r"], 1, ["$SEQLAB_DATA=", "nodata"],
     {"SEQLAB_DATA": "{tmp}/nodata"}),
    ("experiment-data-dir-missing", ["experiment", "long-range", "--out", "{tmp}/o", "--data-dir", "{tmp}/nodata"],
     1, ["nodata", "does not exist"]),
    ("dataset-wrong-checksum", ["train", "sst2-lstm", "--out", "{tmp}/r", "--data-dir", "{bad_sst2}"], 1,
     ["sst2/train.tsv", "sha256", "was expected"]),
    ("tsv-bad-label-row", ["eval", "{run}", "--data", "{bad_label}"], 1, ["bad_label.tsv:4", "'maybe'"]),
    ("tsv-not-utf8", ["eval", "{run}", "--data", "{latin1}"], 1, ["latin1.tsv", "not UTF-8", "offset 18"]),
    ("run-folder-missing", ["info", "{tmp}/norun"], 1, ["norun", "does not exist"]),
    ("not-a-run-folder", ["info", "{empty_dir}"], 1, ["empty", "not a seqlab run folder"]),
    # ---- model folders
    ("model-folder-missing", ["generate", "{tmp}/nomodel", "--prompt", "x"], 1, ["nomodel", "does not exist; give a GPT-2"]),
    ("embed-model-missing", ["embed", "--model", "{tmp}/nomodel", "x"], 1, ["nomodel"]),
    ("safetensors-truncated", ["generate", "{truncated}", "--prompt", "x"], 1,
     ["truncated/model.safetensors", "truncated file"]),
    ("safetensors-garbled-header", ["generate", "{garbled_header}", "--prompt", "x"], 1,
     ["model.safetensors", "not valid JSON"]),
    ("safetensors-header-lie", ["attention", "x", "--model", "{header_lie}", "--out", "{tmp}/o"], 1,
     ["model.safetensors", "exceeds the file"]),
    ("safetensors-empty", ["generate", "{empty_weights}", "--prompt", "x"], 1,
     ["model.safetensors", "truncated safetensors file (0 bytes"]),
    ("weights-missing", ["generate", "{no_weights}", "--prompt", "x"], 1, ["no_weights", "no model.safetensors"]),
    ("bin-not-weights-only", ["generate", "{bad_bin}", "--prompt", "x"], 1, ["pytorch_model.bin", "weights-only"]),
    ("config-wider-than-weights", ["generate", "{wider}", "--prompt", "x"], 1,
     ["wider: the weights do not fit its config.json", "shape mismatch", "transformer.wte.weight"]),
    ("config-deeper-than-weights", ["attention", "x", "--model", "{deeper}", "--out", "{tmp}/o"], 1,
     ["deeper: the weights do not fit", "missing keys", "transformer.h.1"]),
    ("config-invalid-value", ["generate", "{zero_layers}", "--prompt", "x"], 1,
     ["zero_layers/config.json", "n_layer must be a positive int, got 0"]),
    ("config-inconsistent", ["generate", "{indivisible}", "--prompt", "x"], 1,
     ["indivisible/config.json", "n_embd (16)", "n_head (3)"]),
    ("unknown-model-type", ["generate", "{llama}", "--prompt", "x"], 1, ["unknown model_type 'llama'", "gpt2"]),
    ("unknown-model-type-embed", ["embed", "--model", "{llama}", "x"], 1, ["'llama'", "'bert'"]),
    ("no-model-type", ["generate", "{no_model_type}", "--prompt", "x"], 1, ["config.json has no model_type"]),
    ("config-not-utf8-json", ["generate", "{config_latin1}", "--prompt", "x"], 1,
     ["config_latin1/config.json", "not valid JSON"]),
    ("config-not-an-object", ["generate", "{config_list}", "--prompt", "x"], 1, ["config.json", "got list"]),
    ("config-missing-json", ["attention", "x", "--model", "{no_config}", "--out", "{tmp}/o"], 1,
     ["no_config", "no config.json"]),
    ("tokenizer-json-not-utf8", ["generate", "{tokenizer_latin1}", "--prompt", "x"], 1,
     ["tokenizer.json", "cannot load"]),
    ("vocab-json-not-utf8", ["generate", "{vocab_latin1}", "--prompt", "x"], 1, ["vocab.json", "cannot load"]),
    ("tokenizer-missing", ["generate", "{no_tokenizer}", "--prompt", "x"], 1, ["no_tokenizer", "no tokenizer.json"]),
    ("ids-beyond-vocabulary", ["generate", "{small_vocab}", "--prompt", "the cat sat on the mat"], 1,
     ["does not belong to this model", "40 ids"]),
    ("ids-beyond-vocabulary-attention", ["attention", "the cat sat", "--model", "{small_vocab}", "--out", "{tmp}/o"],
     1, ["does not belong to this model", "40 ids"]),
    ("generate-with-an-encoder", ["generate", "{bert}", "--prompt", "x"], 2, ["BertModel", "does not generate"]),
    # ---- text
    ("empty-prompt", ["generate", "{gpt}", "--prompt", " "], 1, ["--prompt is empty"]),
    ("empty-text-embed", ["embed", "--model", "{bert}", "a cat", ""], 1, ["TEXT [1] is empty"]),
    ("empty-target", ["attention", "x", "--model", "{t5}", "--target", "", "--out", "{tmp}/o"], 1,
     ["--target is empty"]),
    ("text-not-utf8", ["attention", "caf\udce9", "--model", "{gpt}", "--out", "{tmp}/o"], 1,
     ["TEXT is not valid UTF-8", "byte 0xe9", "character 3"]),
    ("prompt-not-utf8", ["generate", "{gpt}", "--prompt", "\udcff"], 1, ["--prompt is not valid UTF-8", "0xff"]),
    # ---- output folders (root ignores permission bits: a regular file stands in the path instead)
    ("out-under-a-file-attention", ["attention", "x", "--model", "{gpt}", "--out", "{file}/sub"], 1,
     ["cannot create the output folder", "file.txt/sub"]),
    ("out-under-a-file-experiment", ["experiment", "heads", "--quick", "--out", "{file}/sub"], 1,
     ["cannot create the output folder", "file.txt/sub"]),
    ("out-is-a-file-train", ["train", "toy-classifier", "--out", "{file}"], 1,
     ["--out", "file.txt is a file, not a folder"]),
]


@pytest.fixture
def resolve(models, files, toy_run, tmp_path):
    names = {**vars(models), **vars(files), "run": toy_run, "tmp": tmp_path}
    names = {k: v for k, v in names.items() if isinstance(v, os.PathLike)}
    return lambda s: s.format(**names) if "{" in s else s


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_one_error_line_exit_code_and_debug_traceback(case, cli, resolve, monkeypatch):
    _, argv, code, fragments, *env = case
    for k, v in (env[0] if env else {}).items():
        monkeypatch.setenv(k, resolve(v))
    argv = [resolve(a) for a in argv]
    got, out, err = cli(*argv)
    line = one_error_line(err)
    assert got == code, (got, line)
    for f in fragments:
        assert resolve(f) in line, (f, line)
    # --debug (anywhere on the line): the traceback, then the same line and the same exit code
    got_debug, _, err_debug = cli(*argv, "--debug")
    assert got_debug == code
    assert "Traceback (most recent call last)" in err_debug
    assert err_debug.strip().splitlines()[-1] == line


@pytest.mark.parametrize("family", ["bert", "gpt", "t5"])
@pytest.mark.parametrize("bad", ["vocab_size", -1])
def test_models_refuse_ids_outside_their_vocabulary(models, family, bad):
    """The library behind `ids-beyond-vocabulary`: an IndexError naming the id (torch raises IndexError too)."""
    import numpy as np

    from seqlab.models.auto import AutoModel

    model = AutoModel.from_pretrained(getattr(models, family))
    bad_id = model.config.vocab_size if bad == "vocab_size" else bad
    ids = np.array([[1, bad_id, 2]])
    kwargs = {"decoder_input_ids": np.array([[0]])} if family == "t5" else {}
    with pytest.raises(IndexError, match=f"token id {bad_id} is out of range for an embedding of "
                                         f"{model.config.vocab_size} rows"):
        model(ids, **kwargs)
