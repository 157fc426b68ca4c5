"""The generic training loop: micro-batches, accumulation, clipping, schedule, evaluation, checkpoints.

    trainer = Trainer(model, make_optimizer(cfg), batches, loss_fn, cfg, run_dir,
                      schedule=make_schedule(cfg), evaluate=evaluate)
    result = trainer.fit()                    # or fit(resume=load_checkpoint(run_dir))

`batches(epoch, rng)` returns the epoch's batches (a list or a generator)
drawing every random choice from `rng`, the trainer's data-order generator;
`loss_fn(model, batch)` returns the loss (a scalar Tensor) or
``(loss, stats)`` with ``stats["tokens"]`` counting the batch's tokens (for
tokens/s). `evaluate(model)` returns ``{"val_loss": ..., "val_acc": ...}``
and is run in eval mode under `no_grad`, with the dropout RNG put back
afterwards so evaluating never changes the training that follows.

Exact resume: a checkpoint holds, at a step boundary, the weights, the
optimizer and schedule state, the dropout RNG (`seqlab.random`), the data
generator's state at the start of the current epoch and how many
micro-batches of the epoch were consumed. Resuming regenerates the epoch
from that state and skips the consumed batches, so every following batch,
dropout mask and update is the one an uninterrupted run would have made.

Weight averaging: with ``config.ema_decay > 0`` the trainer keeps an
exponential moving average of the trainable parameters (`WeightEMA`, the
numbers of torch's ``AveragedModel`` with ``get_ema_multi_avg_fn``), updated
after every optimizer step. Training runs on the raw weights; `evaluate`
swaps the averages in, so metrics.jsonl, the best metric, early stopping and
``best/model.safetensors`` all refer to the averaged weights. A checkpoint
keeps the raw weights in model.safetensors and the averages in
ema.safetensors, so a resumed run continues the average exactly. A
checkpoint without an average (one written with ema_decay = 0, before the
first step, or by an older seqlab) starts a fresh one: the first step after
resuming copies the weights.

The trainer owns the terminal: with ``progress=True`` a tqdm bar (loss, lr,
tokens/s, ETA) and, above it, one line per evaluation and the notices (time
budget reached, Ctrl-C caught); with ``progress="lines"`` the lines and
notices alone, for logs and pipes; with ``progress=False`` nothing.
"""
from __future__ import annotations

import contextlib
import math
import signal
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

import numpy as np

import seqlab.random as srandom
from seqlab import backend
from seqlab.autograd import no_grad
from seqlab.errors import ConfigError, SeqlabError
from seqlab.optim import LambdaLR, clip_grad_norm_
from seqlab.optim.schedule import constant
from seqlab.train.checkpoint import Checkpoint, save_best, save_checkpoint
from seqlab.train.config import TrainConfig
from seqlab.train.ema import WeightEMA
from seqlab.train.metrics import BestTracker, MetricsLog, plot_curves, train_losses

BatchFactory = Callable[[int, np.random.Generator], Iterable[Any]]
LossFn = Callable[[Any, Any], Any]


class NonFiniteLossError(SeqlabError, FloatingPointError):
    """The loss (or gradient norm) became NaN or infinite; the run stopped, the last checkpoint is kept."""

    def __init__(self, message: str, step: int):
        super().__init__(message)
        self.step = step


class SingleProcess:
    """The data-parallel seam, for one process: it is rank 0 of 1 and averaging is a no-op.

    A torch.distributed implementation provides the same members: each rank
    takes its `shard` of every global micro-batch (the data order is global,
    so a checkpoint resumes with any number of ranks), gradients are averaged
    between ``backward`` and the optimizer step (`all_reduce_grads`), only
    ``is_main`` writes checkpoints, metrics and progress, and
    `all_reduce_mean` averages logged numbers over ranks.
    """

    rank = 0
    world_size = 1
    is_main = True

    def all_reduce_grads(self, params: list) -> None:
        pass

    def all_reduce_mean(self, value: float) -> float:
        return value

    def barrier(self) -> None:
        pass

    def shard(self, batch: Any) -> Any:
        """This rank's part of a global micro-batch (all of it, for one process)."""
        return batch

    def agree_stop(self, stop: str | None, over_budget: bool) -> tuple[str | None, bool]:
        """(stop reason, time budget reached) agreed by all ranks, so they stop at the same step."""
        return stop, over_budget


@dataclass
class TrainResult:
    step: int
    epoch: int
    stopped: str                           # max_steps | time_budget | early_stopping | interrupted
    losses: list[tuple[int, float]]        # (step, mean training loss) of this call to fit
    last_eval: dict[str, float] = field(default_factory=dict)
    best: float | None = None
    best_step: int | None = None
    elapsed_s: float = 0.0                 # training time, summed over resumes
    checkpoint: Path | None = None
    extra: dict[str, Any] = field(default_factory=dict)  # what the task's `finish` reported (e.g. test BLEU)
    final_loss: float | None = None        # the loss of the last step taken (this call's or the checkpoint's)


class Trainer:
    def __init__(self, model, optimizer_factory: Callable[[Any], Any], batches: BatchFactory, loss_fn: LossFn,
                 config: TrainConfig, run_dir: str | Path | None = None, *,
                 schedule: Callable[[int], float] | None = None,
                 evaluate: Callable[[Any], dict[str, float]] | None = None,
                 run_config: dict | None = None, distributed: Any = None, progress: bool | str = False,
                 callbacks: Iterable[Callable[["Trainer", dict], None]] = ()):
        self.model, self.batches, self.loss_fn, self.config = model, batches, loss_fn, config
        self.evaluate_fn = evaluate
        self.run_dir = Path(run_dir) if run_dir is not None else None
        self.run_config = run_config if run_config is not None else {"config": config.to_dict()}
        self.dist = distributed or SingleProcess()
        if progress not in (True, False, "lines"):
            raise ValueError(f"progress must be True (a bar and lines), 'lines' or False, got {progress!r}")
        self.progress = progress is True and self.dist.is_main  # the bar
        self._lines = bool(progress) and self.dist.is_main  # evaluation lines and notices on stderr
        self.callbacks = list(callbacks)
        if config.gradient_checkpointing:
            enable = getattr(model, "gradient_checkpointing_enable", None)
            if enable is None:
                raise ConfigError(f"gradient_checkpointing: {type(model).__name__} has no gradient checkpointing; "
                                  "the GPT, BERT and T5 models have it")
            enable()
        self.params = [p for p in model.parameters() if p.requires_grad]
        self.ema = WeightEMA(model.named_parameters(), config.ema_decay) if config.ema_decay > 0 else None
        self.optimizer = optimizer_factory(model)
        self.scheduler = LambdaLR(self.optimizer, schedule or constant())
        self.tracker = BestTracker(config.metric, config.metric_mode, config.patience)
        writes = self.run_dir is not None and self.dist.is_main
        self.metrics = MetricsLog(self.run_dir or Path("."), enabled=writes)
        # counters, all restored by `restore`
        self.step = self.epoch = self.position = 0
        self.data_rng = np.random.default_rng((config.seed, 1))  # the data order's own stream
        self._epoch_rng_state = self.data_rng.bit_generator.state
        self._iter: Iterator[Any] | None = None
        self._skip = 0
        self.elapsed_before = 0.0
        self.last_eval: dict[str, float] = {}
        self.last_eval_step: int | None = None
        self.last_loss: float | None = None  # the training loss of the last step taken
        self._boundary = self._snapshot()
        self._stop: str | None = None
        self._in_update = False
        self._bar = None
        self._t0 = time.monotonic()

    # ---------------------------------------------------------------- data order
    def _next_batch(self) -> Any:
        while True:
            if self._iter is None:
                self._epoch_rng_state = self.data_rng.bit_generator.state
                self._iter = iter(self.batches(self.epoch, self.data_rng))
                self.position = 0
                for _ in range(self._skip):  # replay the batches a resumed run already consumed
                    try:
                        next(self._iter)
                    except StopIteration:
                        raise SeqlabError(f"resuming at batch {self._skip} of epoch {self.epoch}, but the epoch "
                                          f"has only {self.position} batches: the data changed") from None
                    self.position += 1
                self._skip = 0
            try:
                batch = next(self._iter)
            except StopIteration:
                if self.position == 0:
                    raise SeqlabError(f"the batches of epoch {self.epoch} are empty") from None
                self.epoch, self._iter = self.epoch + 1, None
                continue
            self.position += 1
            return batch

    def _snapshot(self) -> dict[str, Any]:
        """The counters and RNG states at a step boundary (what a checkpoint records)."""
        return {"step": self.step, "epoch": self.epoch, "position": self.position,
                "epoch_data_rng": self._epoch_rng_state, "rng": srandom.get_state(), "last_loss": self.last_loss}

    # ---------------------------------------------------------------- one optimizer step
    def _loss(self, batch) -> tuple[Any, dict]:
        out = self.loss_fn(self.model, batch)
        return out if isinstance(out, tuple) else (out, {})

    def _non_finite(self, what: str, value: float) -> NonFiniteLossError:
        self.optimizer.zero_grad()
        step = self.step + 1
        self.metrics.append({"step": step, "event": f"non-finite {what}", what.replace(" ", "_"): value})
        kept = (f"the last good checkpoint (step {self._saved_step}) is kept in {self.run_dir}"
                if self._saved_step is not None else "no checkpoint had been saved yet")
        return NonFiniteLossError(f"{what} is {value} at step {step}; training stopped and {kept}", step)

    def train_step(self) -> dict[str, Any]:
        """Run `grad_accum` micro-batches and one optimizer step; returns the step's numbers."""
        n = self.config.grad_accum
        total, tokens = 0.0, 0
        self.optimizer.zero_grad()
        for _ in range(n):
            loss, stats = self._loss(self.dist.shard(self._next_batch()))
            value = float(backend.to_numpy(loss.data))
            total += value
            tokens += int(stats.get("tokens", 0))
            if not math.isfinite(value):
                break  # no backward through a NaN; every rank learns of it from the averaged loss below
            (loss if n == 1 else loss * (1.0 / n)).backward()  # mean over micro-batches
        mean_loss = self.dist.all_reduce_mean(total / n)
        if not math.isfinite(mean_loss):
            raise self._non_finite("loss", mean_loss)
        self.dist.all_reduce_grads(self.params)
        grad_norm = None
        if self.config.clip_grad_norm > 0:
            grad_norm = clip_grad_norm_(self.params, self.config.clip_grad_norm)
            if not math.isfinite(grad_norm):
                raise self._non_finite("gradient norm", grad_norm)
        lr = self.optimizer.param_groups[0]["lr"]
        self._in_update = True  # a KeyboardInterrupt from here on may leave half-updated weights
        self.optimizer.step()
        if self.ema is not None:
            self.ema.update()
        self.scheduler.step()
        self.optimizer.zero_grad()
        self.step += 1
        self.last_loss = float(mean_loss)
        self._boundary = self._snapshot()
        self._in_update = False
        return {"step": self.step, "loss": mean_loss, "lr": lr,
                "grad_norm": grad_norm, "tokens": tokens}

    # ---------------------------------------------------------------- evaluation and checkpoints
    def averaged_weights(self):
        """A context in which the model holds the EMA weights (if ema_decay > 0), its raw ones afterwards."""
        return self.ema.swapped_in() if self.ema is not None else contextlib.nullcontext()

    def evaluate(self) -> dict[str, float]:
        """The task's evaluation in eval mode, no_grad, leaving the dropout RNG as it was (the EMA weights, if on)."""
        if self.evaluate_fn is None:
            return {}
        state = srandom.get_state()
        with self.averaged_weights():
            self.model.eval()
            try:
                with no_grad():
                    results = {k: float(v) for k, v in self.evaluate_fn(self.model).items()}
            finally:
                self.model.train()
                srandom.set_state(state)
            self.last_eval, self.last_eval_step = results, self.step
            self.metrics.append({"step": self.step, "epoch": self.epoch, "eval": True, **results})
            if results and self.tracker.update(self.step, results) and self.run_dir and self.dist.is_main:
                save_best(self.run_dir, self.model.state_dict(),  # the evaluated (averaged) weights
                          {"step": self.step, "metric": self.tracker.metric, "value": self.tracker.best,
                           **({"ema_decay": self.ema.decay} if self.ema is not None else {})})
        self._say(f"step {self.step}: " + " ".join(f"{k}={v:.4f}" for k, v in results.items())
                  + (" (best)" if self.tracker.best_step == self.step else ""))
        if self.tracker.should_stop:
            self._stop = "early_stopping"
        return results

    def elapsed(self) -> float:
        return self.elapsed_before + (time.monotonic() - self._t0)

    def save(self) -> Path | None:
        """A checkpoint of the last step boundary (rank 0 only)."""
        path = None
        if self.run_dir is not None and self.dist.is_main:
            state = {**self._boundary, "elapsed_s": self.elapsed(), "schedule": self.scheduler.state_dict(),
                     "tracker": self.tracker.state_dict(), "last_eval": self.last_eval,
                     "last_eval_step": self.last_eval_step}
            if self.ema is not None:
                state["ema"] = self.ema.record()
            path = save_checkpoint(self.run_dir, self._boundary["step"], self.model.state_dict(),
                                   self.optimizer.state_dict(), state, self.run_config, self.config.keep_checkpoints,
                                   ema_state=self.ema.state_dict() if self.ema is not None else None)
            self._saved_step = self._boundary["step"]
        self.dist.barrier()
        return path

    def restore(self, ckpt: Checkpoint) -> None:
        """Put the trainer back at the checkpoint's step boundary."""
        self.model.load_state_dict(ckpt.model_state)
        if ckpt.optimizer_state is not None:
            self.optimizer.load_state_dict(ckpt.optimizer_state)
        st = ckpt.state
        self.scheduler.load_state_dict(st["schedule"])
        self.tracker.load_state_dict(st.get("tracker", {}))
        if self.ema is not None:  # no average in the checkpoint: a fresh one (see the module docstring)
            self.ema.load(ckpt.ema_state, st.get("ema"), where=str(ckpt.path))
        self.step, self.epoch, self._skip = int(st["step"]), int(st["epoch"]), int(st["position"])
        self.position = self._skip
        self._epoch_rng_state = st["epoch_data_rng"]
        self.data_rng.bit_generator.state = st["epoch_data_rng"]
        self._iter = None
        srandom.set_state(st["rng"])
        self.elapsed_before = float(st.get("elapsed_s", 0.0))
        self.last_eval, self.last_eval_step = st.get("last_eval") or {}, st.get("last_eval_step")
        self.last_loss = st.get("last_loss")  # None in checkpoints from before it was recorded
        self._boundary = self._snapshot()
        self._saved_step = self.step

    # ---------------------------------------------------------------- the loop
    _saved_step: int | None = None

    def _say(self, text: str) -> None:
        if self._bar is not None:
            self._bar.write(text, file=sys.stderr)
        elif self._lines:
            print(text, file=sys.stderr, flush=True)

    def request_stop(self, reason: str = "interrupted") -> None:
        """Stop at the next step boundary, saving a checkpoint (what Ctrl-C does)."""
        self._stop = reason

    def _install_signals(self) -> dict:
        if threading.current_thread() is not threading.main_thread():
            return {}

        def on_signal(signum, frame):
            if self._stop == "interrupted":  # a second Ctrl-C: stop now
                raise KeyboardInterrupt
            self._stop = "interrupted"
            self._say("interrupt: stopping after this step and saving a checkpoint (Ctrl-C again to abort)")

        old = {}
        for sig in (signal.SIGINT, signal.SIGTERM):
            old[sig] = signal.signal(sig, on_signal)
        return old

    def _due(self, every: int) -> bool:
        return every > 0 and self.step % every == 0

    def fit(self, resume: Checkpoint | None = None) -> TrainResult:
        """Train until max_steps, the time budget, early stopping or Ctrl-C; then evaluate and save."""
        cfg = self.config
        if resume is not None:
            self.restore(resume)
        else:
            self._boundary = self._snapshot()
        self.metrics.truncate_after(self.step)
        self.model.train()
        self._t0, self._stop = time.monotonic(), None
        losses: list[tuple[int, float]] = []
        stopped = "max_steps"
        old_handlers = self._install_signals()
        if self.progress:
            from tqdm import tqdm

            self._bar = tqdm(total=cfg.max_steps, initial=self.step, file=sys.stderr, unit="step",
                             dynamic_ncols=True, leave=True)
        window_t, window_tokens = time.monotonic(), 0
        try:
            while True:
                stop, over_budget = self.dist.agree_stop(
                    self._stop, bool(cfg.max_minutes) and self.elapsed() >= cfg.max_minutes * 60)
                if stop:
                    stopped = stop
                    break
                if self.step >= cfg.max_steps:
                    break
                if over_budget:
                    stopped = "time_budget"
                    self._say(f"time budget of {cfg.max_minutes:g} min reached at step {self.step}")
                    break
                row = self.train_step()
                losses.append((row["step"], row["loss"]))
                window_tokens += row.pop("tokens")
                if self._due(cfg.log_every) or self.step == cfg.max_steps:
                    now = time.monotonic()
                    tps = window_tokens / max(now - window_t, 1e-9)
                    window_t, window_tokens = now, 0
                    self.metrics.append({**row, "epoch": self.epoch, "tokens_per_s": round(tps, 1),
                                         "elapsed_s": round(self.elapsed(), 3)})
                    if self._bar is not None:
                        self._bar.set_postfix(loss=f"{row['loss']:.4f}", lr=f"{row['lr']:.2e}",
                                              tok_s=f"{tps:,.0f}", refresh=False)
                if self._bar is not None:
                    self._bar.update(1)
                for cb in self.callbacks:
                    cb(self, row)
                if self._due(cfg.eval_every):
                    self.evaluate()
                    window_t = time.monotonic()  # tokens/s counts training time only
                if self._due(cfg.checkpoint_every):
                    self.save()
                    window_t = time.monotonic()
        except KeyboardInterrupt:
            if self._in_update:  # weights may be half-updated: keep the checkpoint already on disk
                self._close()
                raise
            stopped = "interrupted"
        except BaseException:
            self._close()
            raise
        finally:
            for sig, handler in old_handlers.items():
                signal.signal(sig, handler)
        if stopped != "interrupted" and self.evaluate_fn is not None and self.last_eval_step != self.step:
            self.evaluate()
        path = self.save()
        if self.run_dir is not None and self.dist.is_main:
            plot_curves(self.run_dir, title=str(self.run_config.get("task", "")))
        self._close()
        final_loss = self.last_loss
        if final_loss is None:  # a resume with nothing left to do, from a checkpoint without its last loss
            logged = train_losses(self.metrics.rows())
            final_loss = logged[max(logged)] if logged else None
        return TrainResult(step=self.step, epoch=self.epoch, stopped=stopped, losses=losses,
                           last_eval=dict(self.last_eval), best=self.tracker.best, best_step=self.tracker.best_step,
                           elapsed_s=self.elapsed(), checkpoint=path, final_loss=final_loss)

    def _close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None
