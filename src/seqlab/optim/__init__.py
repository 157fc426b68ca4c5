"""Optimizers, schedules and gradient clipping with torch.optim's update rules."""
from seqlab.optim import lr_scheduler
from seqlab.optim.adadelta import Adadelta
from seqlab.optim.adagrad import Adagrad
from seqlab.optim.adam import Adam, AdamW
from seqlab.optim.adamax import Adamax
from seqlab.optim.asgd import ASGD
from seqlab.optim.clip import clip_grad_norm_, clip_grad_value_
from seqlab.optim.lbfgs import LBFGS
from seqlab.optim.lr_scheduler import (ChainedScheduler, ConstantLR, CosineAnnealingLR, CosineAnnealingWarmRestarts,
                                       CyclicLR, ExponentialLR, LambdaLR, LinearLR, LRScheduler, MultiplicativeLR,
                                       MultiStepLR, OneCycleLR, PolynomialLR, ReduceLROnPlateau, SequentialLR, StepLR)
from seqlab.optim.nadam import NAdam
from seqlab.optim.optimizer import Optimizer
from seqlab.optim.radam import RAdam
from seqlab.optim.rmsprop import RMSprop
from seqlab.optim.rprop import Rprop
from seqlab.optim.schedule import constant, inverse_sqrt, warmup_cosine, warmup_linear
from seqlab.optim.sgd import SGD

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adadelta", "Adamax", "NAdam", "RAdam", "ASGD",
           "Rprop", "LBFGS",
           "LRScheduler", "LambdaLR", "StepLR", "MultiStepLR", "ExponentialLR", "CosineAnnealingLR", "LinearLR",
           "ConstantLR", "OneCycleLR", "CosineAnnealingWarmRestarts", "ReduceLROnPlateau", "SequentialLR",
           "PolynomialLR", "MultiplicativeLR", "ChainedScheduler", "CyclicLR", "constant",
           "warmup_linear", "warmup_cosine", "inverse_sqrt", "clip_grad_norm_", "clip_grad_value_"]
