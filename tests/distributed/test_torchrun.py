"""Proof of data parallelism: `torchrun --nproc_per_node 2 -m seqlab train` against one process.

One module fixture launches every run once (each launch costs seconds of
start-up, so the runs are shared by the assertions):

    A  one process, no dropout, 6 steps (checkpoints at 3 and 6), in a subprocess that checks torch is never imported
    B  torchrun, 2 ranks, same settings                           -> equals A at steps 3 and 6
    C  B's step-3 checkpoint resumed in ONE process to step 6     -> equals A at step 6
    E  torchrun, 2 ranks, dropout 0.1, 6 steps
    D  E's step-3 checkpoint resumed with torchrun, 2 ranks       -> bitwise equal to E at step 6

and one more launch checks that a time budget, which each rank measures on
its own clock, stops both ranks at the same step instead of leaving one in
an all-reduce.

The global batch is 31 rows (shards of 15 and 16) and an epoch has 4 full
batches and one of 7, so unequal shards and an epoch boundary are part of
every comparison. Float32 reductions in another order: relative <= 1e-6.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

dist = pytest.importorskip("torch.distributed")
if not dist.is_available() or not dist.is_gloo_available():
    pytest.skip("torch.distributed with gloo is not available", allow_module_level=True)

from seqlab.train.checkpoint import load_checkpoint, read_json  # noqa: E402
from seqlab.train.metrics import read_metrics, train_losses  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
SETTINGS = {"max_steps": 6, "checkpoint_every": 3, "keep_checkpoints": 3, "eval_every": 0, "batch_size": 31,
            "n_train": 131, "n_dev": 60, "dropout": 0.0, "lr": 0.05}
THREADS = {k: "1" for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")}
ENV = {**os.environ, **THREADS, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT / "src"),
                                                                            os.environ.get("PYTHONPATH")]))}
for _k in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"):
    ENV.pop(_k, None)
TORCHRUN = Path(sys.executable).with_name("torchrun")
LAUNCH = [str(TORCHRUN)] if TORCHRUN.exists() else [sys.executable, "-m", "torch.distributed.run"]

NO_TORCH = """
import sys
from seqlab.cli.main import main
code = main(sys.argv[1:])
print("TORCH_IMPORTED" if any(m == "torch" or m.startswith("torch.") for m in sys.modules) else "NO_TORCH")
sys.exit(code)
"""


def _args(out: Path, settings: dict | None, resume: bool) -> list[str]:
    args = ["train", "toy-classifier", "--out", str(out), "--no-progress"]
    if resume:
        return args + ["--resume"]
    return args + [a for k, v in settings.items() for a in ("--set", f"{k}={v}")]


def _run(cmd: list[str]) -> str:
    proc = subprocess.run(cmd, capture_output=True, text=True, env=ENV, cwd=ROOT, timeout=150)
    assert proc.returncode == 0, f"{' '.join(cmd)}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr[-4000:]}"
    return proc.stdout


def _torchrun(out: Path, settings: dict | None = None, resume: bool = False) -> str:
    return _run(LAUNCH + ["--standalone", "--nproc_per_node", "2", "-m", "seqlab"] + _args(out, settings, resume))


def _rewind(src: Path, dst: Path, step: int) -> Path:
    """A copy of run `src` as a crash right after its step-`step` checkpoint would have left it."""
    shutil.copytree(src, dst)
    name = f"step-{step:06d}"
    for folder in (dst / "checkpoints").iterdir():
        if folder.is_dir() and folder.name > name:
            shutil.rmtree(folder)
    (dst / "checkpoints" / "latest").write_text(name + "\n")
    return dst


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    from seqlab.train import runs as train_runs

    root = tmp_path_factory.mktemp("ddp")
    out = {"A_stdout": _run([sys.executable, "-c", NO_TORCH] + _args(root / "A", SETTINGS, False))}
    out["B_stdout"] = _torchrun(root / "B", SETTINGS)
    train_runs.train(None, _rewind(root / "B", root / "C", 3), resume=True)  # 2-rank checkpoint, 1 process
    _torchrun(root / "E", {**SETTINGS, "dropout": 0.1})
    _torchrun(_rewind(root / "E", root / "D", 3), resume=True)
    out.update({name: root / name for name in "ABCDE"})
    return out


def _weights(run: Path, step: int) -> dict[str, np.ndarray]:
    return load_checkpoint(run / "checkpoints" / f"step-{step:06d}").model_state


def _assert_close(a: dict, b: dict, rel: float) -> None:
    assert a.keys() == b.keys()
    for k in a:
        x, y = a[k].astype(np.float64), b[k].astype(np.float64)
        err = np.linalg.norm(x - y) / max(np.linalg.norm(y), 1e-30)
        assert err <= rel, f"{k}: relative difference {err:.2e} > {rel:g}"


def test_single_process_run_never_imports_torch(runs):
    assert runs["A_stdout"].strip().splitlines()[-1] == "NO_TORCH"


def test_two_ranks_equal_one_process_on_the_same_global_batch(runs):
    A, B = runs["A"], runs["B"]
    for step in (3, 6):
        _assert_close(_weights(B, step), _weights(A, step), rel=1e-6)
    with pytest.raises(AssertionError):  # the weights moved: the comparison above can fail
        _assert_close(_weights(B, 6), _weights(B, 3), rel=1e-3)
    # the logged loss is the global batch's mean (weighted over the 15/16-row shards), one row per step
    la, lb = train_losses(read_metrics(A / "metrics.jsonl")), train_losses(read_metrics(B / "metrics.jsonl"))
    assert sorted(lb) == list(range(1, 7)) and len(read_metrics(B / "metrics.jsonl")) == len(
        read_metrics(A / "metrics.jsonl"))
    for step in la:
        assert lb[step] == pytest.approx(la[step], rel=1e-6)
    # the checkpoint's data position is global: the same as one process's
    sa, sb = (read_json(r / "checkpoints" / "step-000006" / "state.json")["trainer"] for r in (A, B))
    assert (sb["epoch"], sb["position"], sb["epoch_data_rng"]) == (sa["epoch"], sa["position"], sa["epoch_data_rng"])
    assert sa["epoch"] == 1  # the runs crossed an epoch boundary
    # rank 0 alone reports: one JSON summary on stdout
    lines = [line for line in runs["B_stdout"].splitlines() if line.startswith("{")]
    assert len(lines) == 1 and json.loads(lines[0])["step"] == 6


def test_a_two_rank_checkpoint_resumes_in_one_process(runs):
    C, A = runs["C"], runs["A"]
    assert load_checkpoint(C).step == 6
    _assert_close(_weights(C, 6), _weights(A, 6), rel=1e-6)


def test_a_resumed_two_rank_run_continues_exactly(runs):
    D, E = runs["D"], runs["E"]
    d, e = load_checkpoint(D), load_checkpoint(E)
    assert d.step == e.step == 6
    for k in e.model_state:
        assert np.array_equal(d.model_state[k], e.model_state[k]), k
    for i, state in e.optimizer_state["state"].items():
        for name, value in state.items():
            assert np.array_equal(np.asarray(d.optimizer_state["state"][i][name]), np.asarray(value)), (i, name)
    assert d.state["rng"] == e.state["rng"]
    assert train_losses(read_metrics(D / "metrics.jsonl")) == train_losses(read_metrics(E / "metrics.jsonl"))
    # dropout was on: the 2-rank run is not the dropout-free one
    assert not np.array_equal(e.model_state["fc1.weight"], _weights(runs["B"], 6)["fc1.weight"])


def test_a_time_budget_stops_every_rank_at_the_same_step(tmp_path):
    out = tmp_path / "budget"
    stdout = _torchrun(out, {**SETTINGS, "max_steps": 100_000, "checkpoint_every": 0, "max_minutes": 0.02})
    summary = json.loads([line for line in stdout.splitlines() if line.startswith("{")][-1])
    assert summary["stopped"] == "time_budget" and summary["step"] > 0
    assert load_checkpoint(out).step == summary["step"]
