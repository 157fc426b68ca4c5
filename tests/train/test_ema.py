"""Weight averaging (ema_decay): torch's AveragedModel numbers, evaluation of the average, exact resume, checksums."""
import json

import numpy as np
import pytest

import seqlab
from seqlab import functional as F
from seqlab import nn, optim
from seqlab.errors import ChecksumError, CheckpointError, ConfigError
from seqlab.train import Trainer, TrainConfig, build_config, load_checkpoint, read_metrics, runs
from seqlab.train import checkpoint as ck
from seqlab.train.checkpoint import load_best, sha256_file
from seqlab.train.tasks.toy_classifier import Config as ToyConfig

from trainhelp import logged_losses, toy, interrupt_at

X = np.random.default_rng(0).normal(size=(32, 3)).astype(np.float32)
Y = (X[:, 0] * X[:, 1] > 0).astype(np.int64)


def _mlp():
    seqlab.manual_seed(0)
    return nn.Sequential(nn.Linear(3, 8), nn.Tanh(), nn.Linear(8, 2))


def _trainer(model, run_dir=None, evaluate=None, **settings):
    cfg = TrainConfig(**{"max_steps": 5, "batch_size": 8, "eval_every": 0, "checkpoint_every": 0,
                         "lr": 0.05, "clip_grad_norm": 0, **settings})
    batches = lambda epoch, rng: [(X[i:i + 8], Y[i:i + 8]) for i in rng.permutation(4) * 8]  # noqa: E731
    loss = lambda m, b: F.cross_entropy(m(seqlab.tensor(b[0])), b[1])  # noqa: E731
    return Trainer(model, lambda m: optim.AdamW(m.parameters(), lr=cfg.lr), batches, loss, cfg, run_dir,
                   evaluate=evaluate)


@pytest.mark.parametrize("decay", [0.9, 0.3])  # torch's lerp takes another form for weights >= 0.5
def test_the_average_follows_torch_averaged_model(decay):
    torch = pytest.importorskip("torch")
    from torch.optim.swa_utils import AveragedModel, get_ema_multi_avg_fn

    model = _mlp()
    ref = torch.nn.Sequential(torch.nn.Linear(3, 8), torch.nn.Tanh(), torch.nn.Linear(8, 2))
    ref.load_state_dict({k: torch.from_numpy(v.copy()) for k, v in model.state_dict().items()})
    averaged = AveragedModel(ref, multi_avg_fn=get_ema_multi_avg_fn(decay), use_buffers=False)
    trainer = _trainer(model, ema_decay=decay)
    checked = []

    def compare(tr, row):  # after every optimizer step: the same raw weights into torch, one update each
        with torch.no_grad():
            for p, q in zip(model.parameters(), ref.parameters()):
                q.copy_(torch.from_numpy(p.data.copy()))
        averaged.update_parameters(ref)
        mine = tr.ema.state_dict()
        assert list(mine) == [n for n, _ in model.named_parameters()]
        for (name, theirs) in averaged.module.named_parameters():
            assert mine[name].dtype == np.float32
            np.testing.assert_allclose(mine[name], theirs.detach().numpy(), rtol=1e-6, atol=1e-7)
        checked.append(row["step"])
    trainer.callbacks.append(compare)
    trainer.fit()
    assert checked == [1, 2, 3, 4, 5] and trainer.ema.updates == 5
    first = dict(model.named_parameters())["0.weight"].data
    assert not np.allclose(trainer.ema.state_dict()["0.weight"], first)  # the average lags the weights


def test_evaluate_reports_the_average_and_gives_the_raw_weights_back(tmp_path):
    def probe(m):  # what the evaluation sees
        return {"w": float(m[0].weight.data[0, 0]), "b": float(m[2].bias.data[1])}

    plain, averaged = _mlp(), _mlp()
    _trainer(plain, evaluate=probe, eval_every=1, metric="w").fit()
    trainer = _trainer(averaged, tmp_path, evaluate=probe, ema_decay=0.8, eval_every=1, metric="w")
    seen = {}
    trainer.callbacks.append(lambda tr, row: seen.update({row["step"]: {k: v.copy() for k, v in
                                                                         tr.ema.state_dict().items()}}))
    result = trainer.fit()
    # training runs on the raw weights: evaluating the average every step changes nothing
    for (k, a), b in zip(plain.state_dict().items(), averaged.state_dict().values()):
        np.testing.assert_array_equal(a, b, err_msg=k)
    ema = trainer.ema.state_dict()
    assert result.last_eval == {"w": float(ema["0.weight"][0, 0]), "b": float(ema["2.bias"][1])}
    assert result.last_eval["w"] != float(averaged[0].weight.data[0, 0])
    evals = [r for r in read_metrics(tmp_path / "metrics.jsonl") if r.get("eval")]
    assert [r["step"] for r in evals] == [1, 2, 3, 4, 5]
    assert [r["w"] for r in evals] == [float(seen[s]["0.weight"][0, 0]) for s in range(1, 6)]

    before = [(p.data, p.data.copy()) for p in averaged.parameters()]
    again = trainer.evaluate()
    assert again == result.last_eval
    for p, (array, values) in zip(averaged.parameters(), before):
        assert p.data is array                          # the same arrays, back in place ...
        np.testing.assert_array_equal(p.data, values)   # ... bit for bit

    # best/ holds the evaluated (averaged) weights of the best step
    best_state, info = load_best(tmp_path)
    assert info["ema_decay"] == 0.8 and info["step"] == result.best_step
    for k, v in seen[result.best_step].items():
        np.testing.assert_array_equal(best_state[k], v)
    assert float(best_state["0.weight"][0, 0]) == result.best == min(r["w"] for r in evals)


SETTINGS = dict(max_steps=30, n_train=200, grad_accum=2, batch_size=16, checkpoint_every=7, eval_every=10,
                dropout=0.3, schedule="warmup_cosine", warmup_steps=5, ema_decay=0.9)


def test_resume_continues_the_average_exactly(tmp_path):
    full = toy(tmp_path / "full", **SETTINGS)
    part = toy(tmp_path / "part", callbacks=[interrupt_at(13)], **SETTINGS)
    assert part.stopped == "interrupted" and part.step == 13
    ckpt = load_checkpoint(tmp_path / "part")
    assert ckpt.step == 13 and ckpt.state["ema"] == {"decay": 0.9, "updates": 13}
    assert set(ckpt.ema_state) == set(ckpt.model_state)  # the toy model has no buffers or frozen weights
    assert not np.array_equal(ckpt.ema_state["fc1.weight"], ckpt.model_state["fc1.weight"])  # raw weights stay raw
    rest = toy(tmp_path / "part", resume=True)
    assert part.losses + rest.losses == full.losses
    assert logged_losses(tmp_path / "part") == logged_losses(tmp_path / "full")
    a, b = load_checkpoint(tmp_path / "full"), load_checkpoint(tmp_path / "part")
    assert a.state["ema"] == b.state["ema"] == {"decay": 0.9, "updates": 30}
    for k in a.model_state:
        np.testing.assert_array_equal(a.model_state[k], b.model_state[k])
        np.testing.assert_array_equal(a.ema_state[k], b.ema_state[k])
    assert rest.last_eval == full.last_eval and (rest.best, rest.best_step) == (full.best, full.best_step)
    evals = lambda run: [r for r in read_metrics(run / "metrics.jsonl") if r.get("eval")]  # noqa: E731
    assert evals(tmp_path / "part") == evals(tmp_path / "full")
    for k, v in load_best(tmp_path / "full")[0].items():
        np.testing.assert_array_equal(load_best(tmp_path / "part")[0][k], v)

    # what `seqlab eval` loads: best/ (the averaged weights), or the latest checkpoint's average
    latest = runs.load_run(tmp_path / "full", which="latest")
    assert latest.checkpoint == "step-000030 (EMA)"
    for k, v in latest.task.model.state_dict().items():
        np.testing.assert_array_equal(v, a.ema_state[k])
    best = runs.load_run(tmp_path / "full")
    assert best.checkpoint == "best" and best.step == full.best_step

    # ema_decay is a setting of the numbers: a resume may not change it
    with pytest.raises(ConfigError, match="ema_decay"):
        toy(tmp_path / "part", resume=True, ema_decay=0.5)


def test_a_run_from_before_ema_decay_existed_still_resumes(tmp_path):
    """A run whose config.json files lack ema_decay resumes (the setting counts as 0, its default)."""
    toy(tmp_path, max_steps=6, checkpoint_every=3, eval_every=3, callbacks=[interrupt_at(4)])
    ckpt = load_checkpoint(tmp_path)
    assert ckpt.ema_state is None and "ema" not in ckpt.state
    for path in (tmp_path / "config.json", ckpt.path / "config.json"):
        record = json.loads(path.read_text())
        del record["config"]["ema_decay"]
        path.write_text(json.dumps(record))
    state = json.loads((ckpt.path / "state.json").read_text())
    state["files"]["config.json"] = sha256_file(ckpt.path / "config.json")
    (ckpt.path / "state.json").write_text(json.dumps(state))
    rest = toy(tmp_path, resume=True)
    assert rest.step == 6 and [s for s, _ in rest.losses] == [5, 6]


def test_a_checkpoint_without_an_average_starts_a_fresh_one(tmp_path):
    """Through the Trainer API: resuming a checkpoint written without EMA; the first step after it copies."""
    _trainer(_mlp(), tmp_path, max_steps=2).fit()
    trainer = _trainer(_mlp(), max_steps=3, ema_decay=0.9)
    trainer.fit(resume=load_checkpoint(tmp_path))
    assert trainer.step == 3 and trainer.ema.updates == 1
    for k, v in trainer.ema.state_dict().items():
        np.testing.assert_array_equal(v, dict(trainer.model.named_parameters())[k].data)


def _saved(tmp_path, step=5):
    model = _mlp()
    ema = {k: v + 1 for k, v in model.state_dict().items()}
    return ck.save_checkpoint(tmp_path, step, model.state_dict(), None, {"step": step, "ema": {"updates": 3}},
                              {"task": "t", "config": {}}, keep=3, ema_state=ema), ema


def test_a_corrupted_or_missing_average_is_refused(tmp_path):
    path, ema = _saved(tmp_path)
    got = ck.load_checkpoint(tmp_path)
    assert set(got.ema_state) == set(ema)
    np.testing.assert_array_equal(got.ema_state["0.weight"], ema["0.weight"])
    data = bytearray((path / "ema.safetensors").read_bytes())
    data[-3] ^= 0xFF
    (path / "ema.safetensors").write_bytes(bytes(data))
    with pytest.raises(ChecksumError, match="ema.safetensors: sha256"):
        ck.load_checkpoint(tmp_path)
    assert ck.load_checkpoint(tmp_path, with_ema=False).ema_state is None  # not asked for, not read

    path, _ = _saved(tmp_path, 6)
    (path / "ema.safetensors").unlink()
    with pytest.raises(CheckpointError, match="ema.safetensors is missing"):
        ck.load_checkpoint(tmp_path)


@pytest.mark.parametrize("value", [-0.1, 1.0, 1.5, float("nan")])
def test_ema_decay_out_of_range_is_refused(value):
    with pytest.raises(ConfigError, match=r"ema_decay must be in \[0, 1\)"):
        TrainConfig(ema_decay=value)
    with pytest.raises(ConfigError, match="ema_decay"):
        build_config(ToyConfig, ({"ema_decay": str(value)}, "--set"))
    assert TrainConfig().ema_decay == 0.0 and TrainConfig(ema_decay=0.999).ema_decay == 0.999
