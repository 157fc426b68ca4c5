"""`--set gradient_checkpointing=true`: the same training (losses to rounding), and a clear error for a
task whose model has no gradient checkpointing."""
import os
from pathlib import Path

import numpy as np
import pytest

from seqlab.errors import ConfigError
from seqlab.train import runs

DATA = Path(os.environ.get("SEQLAB_DATA") or Path(__file__).resolve().parents[3] / "shared" / "data")
GPT_TINY = {"n_layer": 2, "n_head": 2, "n_embd": 16, "block_size": 16, "eval_iters": 2, "sample_chars": 4,
            "max_steps": 3, "eval_every": 3, "checkpoint_every": 3, "log_every": 1, "max_minutes": 0.0,
            "dropout": 0.2}


def test_shakespeare_gpt_trains_the_same_with_gradient_checkpointing(tmp_path):
    if not (DATA / "tinyshakespeare").is_dir():
        pytest.skip(f"shared datasets not found at {DATA} (set SEQLAB_DATA)")
    plain = runs.train("shakespeare-gpt", tmp_path / "plain", [(GPT_TINY, "test")], data_dir=DATA)
    ck = runs.train("shakespeare-gpt", tmp_path / "ck", [({**GPT_TINY, "gradient_checkpointing": True}, "test")],
                    data_dir=DATA)
    assert [s for s, _ in ck.losses] == [s for s, _ in plain.losses] == [1, 2, 3]
    np.testing.assert_allclose([v for _, v in ck.losses], [v for _, v in plain.losses], rtol=1e-5)


def test_a_model_without_it_is_refused(tmp_path):
    with pytest.raises(ConfigError, match="gradient_checkpointing: .* has no gradient checkpointing"):
        runs.train("toy-classifier", tmp_path / "toy", [({"gradient_checkpointing": True, "max_steps": 1}, "test")])


def test_a_run_may_turn_it_on_when_resumed(tmp_path):
    """A run short of memory resumes with gradient checkpointing: allowed (it changes the numbers only by
    rounding), the model runs with it, and the losses follow the uninterrupted run's."""
    if not (DATA / "tinyshakespeare").is_dir():
        pytest.skip(f"shared datasets not found at {DATA} (set SEQLAB_DATA)")
    whole = runs.train("shakespeare-gpt", tmp_path / "whole", [(GPT_TINY, "test")], data_dir=DATA)
    stop = [lambda trainer, row: (_ for _ in ()).throw(KeyboardInterrupt) if row["step"] == 1 else None]
    first = runs.train("shakespeare-gpt", tmp_path / "part", [(GPT_TINY, "test")], data_dir=DATA, callbacks=stop)
    assert first.stopped == "interrupted"
    seen = []
    rest = runs.train("shakespeare-gpt", tmp_path / "part", [({"gradient_checkpointing": True}, "--set")],
                      resume=True, data_dir=DATA,
                      callbacks=[lambda trainer, row: seen.append(trainer.model.is_gradient_checkpointing)])
    assert seen and all(seen)
    assert [s for s, _ in rest.losses] == [2, 3]
    np.testing.assert_allclose([v for _, v in rest.losses], [v for s, v in whole.losses if s > 1], rtol=1e-5)
