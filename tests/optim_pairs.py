"""What the optimizer tests share: the same small MLP in seqlab and torch (torch's initial weights copied), a
fixed list of regression batches, and one mean-squared-error step in each library."""
import numpy as np
import torch

import seqlab
import seqlab.functional as F
from seqlab import nn


def mlp_pair(dtype=torch.float64):
    """(seqlab model, torch model): Linear(5, 8) → Tanh → Linear(8, 3), equal weights, in `dtype`."""
    torch.manual_seed(0)
    t = torch.nn.Sequential(torch.nn.Linear(5, 8), torch.nn.Tanh(), torch.nn.Linear(8, 3)).to(dtype)
    s = nn.Sequential(nn.Linear(5, 8), nn.Tanh(), nn.Linear(8, 3))
    s.to(dtype=np.float64 if dtype == torch.float64 else np.float32)
    s.load_state_dict(t.state_dict())
    return s, t


def make_batches(n: int):
    """n (x (6, 5), y (6, 3)) float64 pairs, the same on every call."""
    rng = np.random.default_rng(1)
    return [(rng.standard_normal((6, 5)), rng.standard_normal((6, 3))) for _ in range(n)]


def seqlab_step(model, opt, x, y):
    opt.zero_grad()
    dtype = model[0].weight.dtype
    F.mse_loss(model(seqlab.tensor(x, dtype=dtype)), seqlab.tensor(y, dtype=dtype)).backward()
    opt.step()


def torch_step(model, opt, x, y):
    opt.zero_grad()
    dtype = model[0].weight.dtype
    torch.nn.functional.mse_loss(model(torch.from_numpy(x).to(dtype)), torch.from_numpy(y).to(dtype)).backward()
    opt.step()
