"""Optimizers, schedules and gradient clipping with torch.optim's update rules."""
from seqlab.optim.adam import Adam, AdamW
from seqlab.optim.clip import clip_grad_norm_, clip_grad_value_
from seqlab.optim.optimizer import Optimizer
from seqlab.optim.schedule import LambdaLR, constant, inverse_sqrt, warmup_cosine, warmup_linear
from seqlab.optim.sgd import SGD

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "LambdaLR", "constant", "warmup_linear", "warmup_cosine",
           "inverse_sqrt", "clip_grad_norm_", "clip_grad_value_"]
