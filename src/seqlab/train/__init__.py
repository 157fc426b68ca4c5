"""Training: the generic loop, atomic checkpoints, metrics, configs and the task registry.

    from seqlab.train import Trainer, TrainConfig, make_optimizer, make_schedule
    result = Trainer(model, make_optimizer(cfg), batches, loss_fn, cfg, "runs/x").fit()

`seqlab.train.runs` wires a registered task to the trainer for the CLI
(`seqlab train TASK --out RUN_DIR`, `seqlab eval`, `seqlab info`).
"""
from seqlab.train.checkpoint import Checkpoint, latest_checkpoint, load_checkpoint, save_checkpoint
from seqlab.train.config import TrainConfig, build_config, make_optimizer, make_schedule
from seqlab.train.loop import NonFiniteLossError, SingleProcess, Trainer, TrainResult
from seqlab.train.metrics import BestTracker, MetricsLog, read_metrics

__all__ = [
    "Trainer", "TrainResult", "TrainConfig", "SingleProcess", "NonFiniteLossError", "build_config",
    "make_optimizer", "make_schedule", "Checkpoint", "save_checkpoint", "load_checkpoint", "latest_checkpoint",
    "BestTracker", "MetricsLog", "read_metrics",
]
