"""A real `seqlab train` process killed with SIGKILL at random moments, then resumed: exact continuation.

Checkpoints are written every 2 steps, so the kills land in training and in
checkpoint writes alike; whatever the moment, `latest` must name a complete,
verified checkpoint and the resumed run's losses must equal an uninterrupted run's.
"""
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

from seqlab.train import load_checkpoint
from trainhelp import logged_losses, toy

SETTINGS = {"max_steps": 100_000, "checkpoint_every": 2, "eval_every": 50, "n_train": 300, "dropout": 0.3,
            "log_every": 1}
ENV = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2] / "src")}


def _start(out: Path, resume: bool) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "seqlab", "train", "toy-classifier", "--out", str(out), "--no-progress"]
    cmd += ["--resume"] if resume else [arg for k, v in SETTINGS.items() for arg in ("--set", f"{k}={v}")]
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=ENV)


def _wait_for_checkpoint_after(out: Path, step: int, proc: subprocess.Popen, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.communicate()[1].decode()
        try:
            if int((out / "checkpoints" / "latest").read_text().strip()[5:]) > step:
                return
        except (FileNotFoundError, ValueError):
            pass
        time.sleep(0.01)
    raise AssertionError("no checkpoint appeared")


def _stop_at(step):
    def cb(trainer, row):
        if row["step"] == step:
            raise KeyboardInterrupt
    return cb


def test_kill_9_at_random_moments_then_resume_exactly(tmp_path):
    seed = int.from_bytes(os.urandom(4), "little")
    rnd = random.Random(seed)
    out = tmp_path / "run"
    last = 0
    for round_ in range(2):
        proc = _start(out, resume=round_ > 0)
        _wait_for_checkpoint_after(out, last, proc)
        time.sleep(rnd.uniform(0.0, 0.4))
        proc.send_signal(signal.SIGKILL)
        proc.communicate()
        assert proc.returncode == -signal.SIGKILL, f"seed {seed}"
        ckpt = load_checkpoint(out)  # complete and verified, whatever the moment of the kill
        assert ckpt.step > last, f"seed {seed}"
        last = ckpt.step
    end = last + 20
    resumed = toy(out, resume=True, callbacks=[_stop_at(end)])
    assert resumed.losses[0][0] == last + 1 and resumed.step == end, f"seed {seed}"
    assert not list((out / "checkpoints").glob(".tmp-*"))
    toy(tmp_path / "ref", callbacks=[_stop_at(end)], **SETTINGS)
    assert logged_losses(out) == logged_losses(tmp_path / "ref"), f"seed {seed}"


def test_sigint_to_a_training_process_saves_and_exits_130(tmp_path):
    out = tmp_path / "run"
    proc = _start(out, resume=False)
    _wait_for_checkpoint_after(out, 0, proc)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err.decode()
    lines = err.decode().strip().splitlines()  # stderr is a pipe: no bar, plain lines
    assert lines[-1].startswith("interrupted at step ") and "--resume" in lines[-1], lines
    assert "interrupt: stopping after this step and saving a checkpoint" in lines[-2], lines
    assert all(ln.startswith("step ") for ln in lines[:-2]), lines  # evaluation lines, if any came first
    step = int(lines[-1].split()[3].rstrip(";"))
    assert load_checkpoint(out).step == step
