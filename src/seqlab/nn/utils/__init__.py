"""`seqlab.nn.utils`, where torch users look: gradient clipping (the functions of `seqlab.optim`) and `rnn`."""
from seqlab.nn.utils import rnn
from seqlab.optim.clip import clip_grad_norm_, clip_grad_value_

__all__ = ["clip_grad_norm_", "clip_grad_value_", "rnn"]
