"""Each real task trains two steps on a sliver of its data, evaluates, and resumes (skipped where a model is missing).

These are wiring tests, not quality tests: the reference runs and their
numbers are in docs/results.md.
"""
import importlib
import json
import os
from pathlib import Path

import numpy as np
import pytest

from seqlab.train import load_checkpoint, runs
from seqlab.train.config import setting_choices
from seqlab.train.tasks import get_task

DATA = Path(os.environ.get("SEQLAB_DATA") or Path(__file__).resolve().parents[3] / "shared" / "data")

QUICK = {"max_steps": 2, "eval_every": 2, "checkpoint_every": 1, "log_every": 1, "max_minutes": 0.0}
TINY_TF = {"d_model": 16, "nhead": 2, "num_layers": 1, "dim_feedforward": 32}
CASES = {
    "sst2-transformer": ("seqlab.models.classifier", {**TINY_TF, "vocab_size": 300, "batch_size": 8,
                                                      "max_train_examples": 300, "max_dev_examples": 20}),
    "sst2-lstm": ("seqlab.nn.recurrent", {"vocab_size": 300, "embed_dim": 16, "hidden_size": 16, "batch_size": 8,
                                          "max_train_examples": 300, "max_dev_examples": 20}),
    "sst2-bert": ("seqlab.models.bert", {"batch_size": 4, "max_train_examples": 16, "max_dev_examples": 8,
                                         "max_len": 16}),
    "shakespeare-gpt": ("seqlab.models.gpt", {"n_layer": 1, "n_head": 2, "n_embd": 16, "block_size": 16,
                                              "eval_iters": 2, "sample_chars": 20}),
    "mlm-pretrain": ("seqlab.models.bert", {**TINY_TF, "vocab_size": 200, "batch_size": 8, "eval_batches": 2,
                                            "corpus": "CORPUS", "max_len": 24}),
    "clm-pretrain": ("seqlab.models.gpt", {**TINY_TF, "vocab_size": 200, "batch_size": 8, "eval_batches": 2,
                                           "corpus": "CORPUS", "max_len": 24}),
    "multi30k-transformer": ("seqlab.models.translator", {"d_model": 16, "nhead": 2, "num_encoder_layers": 1,
                                                          "num_decoder_layers": 1, "dim_feedforward": 32,
                                                          "vocab_size": 400, "batch_size": 8, "train_limit": 200,
                                                          "val_limit": 4, "test_limit": 4, "beam_size": 2,
                                                          "max_len": 24}),
    "multi30k-rnn": ("seqlab.models.seq2seq", {"emb_dim": 16, "enc_hidden": 16, "dec_hidden": 32, "attn_dim": 16,
                                               "vocab_size": 400, "batch_size": 8, "train_limit": 200,
                                               "val_limit": 4, "test_limit": 4, "beam_size": 2, "max_len": 24}),
}


def _available(module: str) -> bool:
    try:
        importlib.import_module(module)
        return True
    except ImportError:
        return False


@pytest.mark.parametrize("task", list(CASES))
def test_task_trains_evaluates_and_resumes(task, tmp_path):
    module, settings = CASES[task]
    if not _available(module):
        pytest.skip(f"{module} is not in this build yet")
    if not (DATA / "sst2" / "dev.tsv").is_file():
        pytest.skip(f"shared datasets not found at {DATA} (set SEQLAB_DATA)")
    if settings.get("corpus") == "CORPUS":
        corpus = tmp_path / "corpus.txt"
        lines = get_task("toy-classifier").make_data(300, np.random.default_rng(0))[0]
        corpus.write_text("\n".join(lines) + "\n")
        settings = {**settings, "corpus": str(corpus)}
    out = tmp_path / "run"
    stop_after_one = [lambda trainer, row: (_ for _ in ()).throw(KeyboardInterrupt) if row["step"] == 1 else None]
    first = runs.train(task, out, [({**QUICK, **settings}, "test")], data_dir=DATA, callbacks=stop_after_one)
    assert first.stopped == "interrupted" and load_checkpoint(out).step == 1
    rest = runs.train(task, out, [], resume=True, data_dir=DATA)
    assert rest.step == 2 and rest.losses[0][0] == 2 and np.isfinite(rest.losses[0][1])
    assert rest.last_eval and all(np.isfinite(v) for v in rest.last_eval.values())
    # the metrics the task's Config accepts up front are ones its evaluation really returns
    assert set(setting_choices(get_task(task).Config)["metric"]) <= set(rest.last_eval), rest.last_eval
    summary = json.loads((out / "summary.json").read_text())
    assert summary["step"] == 2
    if task == "shakespeare-gpt":  # 20 characters from a model of 16 positions: the sampler slides its window
        assert len((out / "sample.txt").read_text(encoding="utf-8")) == 20
    run = runs.load_run(out)  # rebuilt for inference from the run folder alone
    if run.task.predict is not None:
        assert run.task.predict(run.task.model, ["a fine film", "dull"]).shape == (2,)


@pytest.mark.parametrize("task", list(CASES) + ["toy-classifier"])
def test_a_misspelled_metric_is_refused_before_anything_runs(task, tmp_path):
    from seqlab.errors import ConfigError

    out = tmp_path / "run"
    with pytest.raises(ConfigError, match="metric must be one of .*got 'val_accuracy'"):
        runs.train(task, out, [({"metric": "val_accuracy"}, "test")], data_dir=DATA)
    assert not out.exists()


def test_a_failed_start_leaves_no_vocabulary_for_the_next_run(tmp_path):
    """A start that fails after building its tokenizer (here: the model build) must not hand that
    vocabulary, made for other settings, to the next run in the same folder."""
    if not (DATA / "sst2" / "dev.tsv").is_file():
        pytest.skip(f"shared datasets not found at {DATA} (set SEQLAB_DATA)")
    out = tmp_path / "run"
    small = {**QUICK, **CASES["sst2-transformer"][1], "max_steps": 1}
    with pytest.raises(Exception):  # d_model 16 is not divisible by 3 heads: refused by the model
        runs.train("sst2-transformer", out, [({**small, "vocab_size": 150, "nhead": 3}, "test")], data_dir=DATA)
    runs.train("sst2-transformer", out, [(small, "test")], data_dir=DATA)
    record = json.loads((out / "config.json").read_text())
    assert record["config"]["vocab_size"] == 300
    assert record["info"]["vocab_size"] > 150  # the 300-word vocabulary, not the 150 one the failed start built


def test_translation_tasks_show_their_final_decoding(tmp_path, capsys):
    """The multi30k tasks' beam decoding of test2016 after training can take minutes: with progress on it is a
    bar on stderr (the command looked stuck before), and with progress off nothing is printed."""
    if not (DATA / "multi30k").is_dir():
        pytest.skip(f"shared datasets not found at {DATA} (set SEQLAB_DATA)")
    settings = {**QUICK, **CASES["multi30k-rnn"][1]}
    runs.train("multi30k-rnn", tmp_path / "a", [(settings, "test")], data_dir=DATA, progress=True)
    assert "test2016 with beam 2" in capsys.readouterr().err
    runs.train("multi30k-rnn", tmp_path / "b", [(settings, "test")], data_dir=DATA, progress=False)
    assert "test2016" not in capsys.readouterr().err
