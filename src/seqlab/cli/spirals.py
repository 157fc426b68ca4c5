"""Step `mlp` of `seqlab demo` (the chapter's 7.1): a feed-forward network

    h1 = tanh(W1 x + b1),  h2 = tanh(W2 h1 + b2),  logits = W3 h2 + b3

learns to separate two interleaved spirals by backpropagation and Adam;
the loss curve and the decision boundary are drawn. Nothing here prints:
`seqlab.cli.demo` reports the progress.
"""
from __future__ import annotations

import math
import pathlib
import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np


# ---- the task: two interleaved spirals -------------------------------------------------------------
def make_spirals(n_per_class: int = 200, noise: float = 0.03, turns: float = 1.5,
                 seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Two spirals, one per class, winding `turns` times around the origin.

    Returns X (2·n, 2) float32 in about [−1, 1]² and y (2·n,) int64 in {0, 1}.
    Class c sits at angle θ + c·π and radius θ / (2π·turns), plus N(0, noise²).
    """
    rng = np.random.default_rng(seed)
    xs, ys = [], []
    for c in (0, 1):
        theta = np.sqrt(rng.random(n_per_class)) * 2 * math.pi * turns  # sqrt: even density along the arm
        r = theta / (2 * math.pi * turns)
        pts = np.stack([r * np.cos(theta + c * math.pi), r * np.sin(theta + c * math.pi)], axis=1)  # (n, 2)
        xs.append(pts + noise * rng.standard_normal((n_per_class, 2)))
        ys.append(np.full(n_per_class, c, dtype=np.int64))
    return np.concatenate(xs).astype(np.float32), np.concatenate(ys)


def build_mlp(hidden: int = 64, depth: int = 2):
    """2 → hidden (tanh) × depth → 2 logits."""
    from seqlab import nn

    layers, width = [], 2
    for _ in range(depth):
        layers += [nn.Linear(width, hidden), nn.Tanh()]
        width = hidden
    layers.append(nn.Linear(width, 2))
    return nn.Sequential(*layers)


@dataclass
class MLPResult:
    model: object
    losses: list[float] = field(default_factory=list)   # one per step
    train_accuracy: float = 0.0
    test_accuracy: float = 0.0
    seconds: float = 0.0


def accuracy(model, X: np.ndarray, y: np.ndarray) -> float:
    import seqlab

    with seqlab.no_grad():
        pred = model(seqlab.tensor(X)).numpy().argmax(axis=1)
    return float((pred == y).mean())


def train_mlp(steps: int = 600, lr: float = 0.01, hidden: int = 64, n_per_class: int = 200, seed: int = 0,
              on_step: Callable[[int, float], None] | None = None) -> MLPResult:
    """Full-batch training with softmax cross-entropy and Adam; `on_step(step, loss)` after each step.

    Accuracy is measured on the training points and on a fresh draw of the
    spirals (a different seed), so it is not just memorisation.
    """
    import seqlab
    import seqlab.functional as F
    from seqlab import optim

    seqlab.manual_seed(seed)
    X, y = make_spirals(n_per_class, seed=seed)
    X_test, y_test = make_spirals(n_per_class, seed=seed + 1000)
    model = build_mlp(hidden)
    opt = optim.Adam(model.parameters(), lr=lr)
    x = seqlab.tensor(X)
    result = MLPResult(model)
    start = time.perf_counter()
    for step in range(steps):
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)  # the forward pass
        loss.backward()                      # backpropagation: dL/dθ for every weight
        opt.step()
        result.losses.append(loss.item())
        if on_step is not None:
            on_step(step, result.losses[-1])
    result.seconds = time.perf_counter() - start
    result.train_accuracy = accuracy(model, X, y)
    result.test_accuracy = accuracy(model, X_test, y_test)
    return result


def plot_decision_boundary(model, X: np.ndarray, y: np.ndarray, path: pathlib.Path, title: str = "") -> pathlib.Path:
    """P(class 1) over the plane as a colour map, the training points on top."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    import seqlab

    lo, hi = X.min(axis=0) - 0.2, X.max(axis=0) + 0.2
    gx, gy = np.meshgrid(np.linspace(lo[0], hi[0], 200), np.linspace(lo[1], hi[1], 200))
    grid = np.stack([gx.ravel(), gy.ravel()], axis=1).astype(np.float32)  # (40000, 2)
    with seqlab.no_grad():
        prob = model(seqlab.tensor(grid)).softmax(-1).numpy()[:, 1].reshape(gx.shape)  # (200, 200)
    fig, ax = plt.subplots(figsize=(5, 5), dpi=100)
    ax.contourf(gx, gy, prob, levels=20, cmap="RdBu_r", alpha=0.7)
    ax.contour(gx, gy, prob, levels=[0.5], colors="k", linewidths=1)
    for c, colour in ((0, "tab:blue"), (1, "tab:red")):
        ax.scatter(X[y == c, 0], X[y == c, 1], color=colour, edgecolors="white", linewidths=0.5, s=16,
                   label=f"class {c}")
    ax.legend(loc="upper right", fontsize=8)
    ax.set_title(title or "decision boundary")
    ax.set_aspect("equal")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return path


def plot_loss(losses: list[float], path: pathlib.Path) -> pathlib.Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 3), dpi=100)
    ax.plot(np.arange(1, len(losses) + 1), losses)
    ax.set_yscale("log")
    ax.set_xlabel("step")
    ax.set_ylabel("cross-entropy")
    ax.set_title("training loss")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path
