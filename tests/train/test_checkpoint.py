"""Checkpoints: exact round trip, atomic writes (an interrupted write keeps the previous one), verification."""
import json

import numpy as np
import pytest

import seqlab
from seqlab import nn, optim
from seqlab.errors import ChecksumError, CheckpointError
from seqlab.train import checkpoint as ck


def _model_and_adam():
    seqlab.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    opt = optim.AdamW(model.parameters(), lr=1e-2)
    for _ in range(2):
        loss = (model(seqlab.randn(5, 3)) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    return model, opt


def _save(run, step, model, opt, **state):
    return ck.save_checkpoint(run, step, model.state_dict(), opt.state_dict(), {"step": step, **state},
                              {"task": "t", "config": {"lr": 0.01}}, keep=2)


def test_round_trip_is_exact(tmp_path):
    model, opt = _model_and_adam()
    rng_state = seqlab.random.get_state()
    path = _save(tmp_path, 7, model, opt, rng=rng_state)
    got = ck.load_checkpoint(tmp_path)
    assert got.path == path and got.step == 7 and got.state["rng"] == rng_state
    for k, v in model.state_dict().items():
        np.testing.assert_array_equal(got.model_state[k], v)
    mine, theirs = opt.state_dict(), got.optimizer_state
    assert theirs["param_groups"] == mine["param_groups"]
    for i, s in mine["state"].items():
        assert theirs["state"][i]["step"] == s["step"] == 2
        np.testing.assert_array_equal(theirs["state"][i]["exp_avg_sq"], s["exp_avg_sq"])
    # the loaded state drives an optimizer to the same next update
    opt2 = optim.AdamW(model.parameters(), lr=1e-2)
    opt2.load_state_dict(theirs)
    assert opt2.param_groups[0]["betas"] == (0.9, 0.999)
    assert not list(tmp_path.glob("checkpoints/.tmp-*"))


def test_latest_and_pruning(tmp_path):
    model, opt = _model_and_adam()
    for step in (1, 2, 3):
        _save(tmp_path, step, model, opt)
    names = sorted(p.name for p in (tmp_path / "checkpoints").iterdir())
    assert names == ["latest", "step-000002", "step-000003"]
    assert ck.latest_checkpoint(tmp_path).name == "step-000003"


@pytest.mark.parametrize("stage", ["fsync", "rename", "pointer"])
def test_an_interrupted_write_keeps_the_previous_checkpoint(tmp_path, monkeypatch, stage):
    model, opt = _model_and_adam()
    _save(tmp_path, 10, model, opt)
    before = {k: v.copy() for k, v in model.state_dict().items()}
    for p in model.parameters():
        p.data += 1.0

    def boom(*a, **k):
        raise OSError(f"simulated crash at {stage}")
    calls = {"n": 0}
    if stage == "fsync":  # after model.safetensors is written, while the optimizer file is being synced
        real = ck._fsync_file

        def flaky(path):
            calls["n"] += 1
            if calls["n"] == 2:
                boom()
            real(path)
        monkeypatch.setattr(ck, "_fsync_file", flaky)
    elif stage == "rename":  # everything written, the folder not yet renamed into place
        monkeypatch.setattr(ck.os, "replace", boom)
    else:  # the folder renamed, `latest` not yet updated
        monkeypatch.setattr(ck, "write_bytes_atomic", boom)
    with pytest.raises(OSError, match="simulated"):
        _save(tmp_path, 20, model, opt)
    monkeypatch.undo()
    got = ck.load_checkpoint(tmp_path)
    assert got.step == 10
    for k, v in before.items():
        np.testing.assert_array_equal(got.model_state[k], v)
    assert not list((tmp_path / "checkpoints").glob(".tmp-*"))
    # the next save of the same step works, whatever was left behind
    _save(tmp_path, 20, model, opt)
    assert ck.load_checkpoint(tmp_path).step == 20


def test_corruption_is_refused(tmp_path):
    model, opt = _model_and_adam()
    path = _save(tmp_path, 5, model, opt)
    data = bytearray((path / "model.safetensors").read_bytes())
    data[-3] ^= 0xFF
    (path / "model.safetensors").write_bytes(bytes(data))
    with pytest.raises(ChecksumError, match="model.safetensors: sha256"):
        ck.load_checkpoint(tmp_path)

    path = _save(tmp_path, 6, model, opt)
    cfg = json.loads((path / "config.json").read_text())
    cfg["config"]["lr"] = 1.0  # an edited config is a checksum failure too
    (path / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(ChecksumError, match="config.json"):
        ck.load_checkpoint(tmp_path)

    path = _save(tmp_path, 7, model, opt)
    (path / "optimizer.safetensors").unlink()
    with pytest.raises(CheckpointError, match="optimizer.safetensors is missing"):
        ck.load_checkpoint(tmp_path)

    path = _save(tmp_path, 8, model, opt)
    (path / "state.json").write_text("{not json")
    with pytest.raises(CheckpointError, match="state.json"):
        ck.load_checkpoint(tmp_path)

    (tmp_path / "checkpoints" / "latest").write_text("../../etc\n")
    with pytest.raises(CheckpointError, match="not a checkpoint folder"):
        ck.load_checkpoint(tmp_path)
    with pytest.raises(CheckpointError, match="has no checkpoint"):
        ck.load_checkpoint(tmp_path / "elsewhere")


def test_best_weights_are_verified(tmp_path):
    model, _ = _model_and_adam()
    ck.save_best(tmp_path, model.state_dict(), {"step": 3, "metric": "val_acc", "value": 0.5})
    state, info = ck.load_best(tmp_path)
    assert info["step"] == 3 and set(state) == set(model.state_dict())
    (tmp_path / "best" / "model.safetensors").write_bytes(b"\0" * 16)
    with pytest.raises(ChecksumError):
        ck.load_best(tmp_path)
