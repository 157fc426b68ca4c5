"""Data-parallel training on torch.distributed, launched with torchrun.

    torchrun --standalone --nproc_per_node 2 -m seqlab train toy-classifier --out runs/toy

seqlab does not implement its own collective communication: it borrows
PyTorch's (gloo on CPU, NCCL on GPU) and keeps its own NumPy/CuPy
arrays, handing them to torch as zero-copy views (`torch.from_numpy`,
`torch.from_dlpack`). `TorchDistributed` implements the trainer's
data-parallel seam (`seqlab.train.loop.SingleProcess`):

- **Data**: every rank runs the same seeded batch iterator and keeps its
  contiguous slice of every *global* micro-batch (`shard`): ``batch_size``
  is the global batch, so the data order, the checkpointed data position
  and the numbers do not depend on the number of ranks.
- **Gradients**: synchronous SGD on the mean loss over the global batch of
  N rows, ``g = Σ_r (n_r / N) · g_r`` (the gradient of an average is the
  average of the gradients). `all_reduce_grads` weights each rank's
  gradient by ``W · n_r / N`` (exactly 1 when the W shards are equal),
  sums the flattened gradients of all parameters in **one** all-reduce and
  divides by W.
- **Dropout**: the shared dropout generator (`seqlab.random`) advances by
  one draw per micro-batch on every rank; that draw and the rank seed a
  private stream for the forward pass (`RankRandomness`), so ranks drop
  different units while the checkpointed RNG state is one global state
  whatever the world size.
- **Only rank 0** writes checkpoints, metrics, progress and summaries; all
  ranks agree on when to stop (`agree_stop`), so a time budget or Ctrl-C on
  one rank never leaves the others waiting in a collective.

Importing this module does not import torch; `maybe_init_distributed()`
imports it only when torchrun's environment is present, so single-process
runs never load it.
"""
from __future__ import annotations

import os
from datetime import timedelta
from typing import Any, Iterable, Mapping

import numpy as np

import seqlab.random as srandom
from seqlab.errors import SeqlabError

# torchrun (torch.distributed.run) sets these for every worker it starts.
TORCHRUN_ENV = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT")
# Why a run stopped, in the order one rank's reason wins over another's (see `agree_stop`).
STOP_REASONS = ("interrupted", "time_budget", "early_stopping")


def torchrun_env(environ: Mapping[str, str] | None = None) -> dict[str, Any] | None:
    """rank, world_size, local_rank, master_addr, master_port from torchrun's variables; None if not under torchrun."""
    env = os.environ if environ is None else environ
    if "RANK" not in env or "WORLD_SIZE" not in env:
        return None
    missing = [k for k in TORCHRUN_ENV if k not in env]
    if missing:
        raise SeqlabError(f"RANK and WORLD_SIZE are set but {', '.join(missing)} is not: launch with torchrun "
                          f"(or set all of {', '.join(TORCHRUN_ENV)})")
    try:
        rank, world, local = int(env["RANK"]), int(env["WORLD_SIZE"]), int(env["LOCAL_RANK"])
    except ValueError:
        raise SeqlabError(f"RANK={env['RANK']!r}, WORLD_SIZE={env['WORLD_SIZE']!r} and "
                          f"LOCAL_RANK={env['LOCAL_RANK']!r} must be integers") from None
    if not 0 <= rank < world:
        raise SeqlabError(f"RANK={rank} is not in [0, WORLD_SIZE={world})")
    return {"rank": rank, "world_size": world, "local_rank": local,
            "master_addr": env["MASTER_ADDR"], "master_port": int(env["MASTER_PORT"])}


def maybe_init_distributed(backend: str | None = None) -> "TorchDistributed | None":
    """A `TorchDistributed` when launched by torchrun with WORLD_SIZE > 1, else None (and torch is not imported)."""
    env = torchrun_env()
    if env is None or env["world_size"] <= 1:
        return None
    return TorchDistributed(backend)


# ---------------------------------------------------------------- this rank's share of the data (no torch)

def shard_bounds(rows: int, rank: int, world_size: int) -> tuple[int, int]:
    """Rows [start, stop) of a global batch of `rows` that `rank` keeps: contiguous, sizes differing by at most 1."""
    return rows * rank // world_size, rows * (rank + 1) // world_size


def _leading_dims(batch: Any, out: list[int]) -> None:
    if isinstance(batch, Mapping):
        for value in batch.values():
            _leading_dims(value, out)
    elif isinstance(batch, (tuple, list)):
        for value in batch:
            _leading_dims(value, out)
    elif getattr(batch, "ndim", 0) >= 1:
        out.append(int(batch.shape[0]))


def _take(batch: Any, start: int, stop: int) -> Any:
    if isinstance(batch, Mapping):
        return type(batch)((k, _take(v, start, stop)) for k, v in batch.items())
    if isinstance(batch, tuple):
        items = [_take(v, start, stop) for v in batch]
        return type(batch)(*items) if hasattr(batch, "_fields") else tuple(items)  # namedtuples too
    if isinstance(batch, list):
        return [_take(v, start, stop) for v in batch]
    if getattr(batch, "ndim", 0) >= 1:
        return batch[start:stop]  # a view: no copy
    return batch  # scalars and flags are the same on every rank


def shard_batch(batch: Any, rank: int, world_size: int) -> tuple[Any, float]:
    """This rank's rows of a global batch, and the weight ``W · n_r / N`` its mean loss gets.

    `batch` is an array, or dicts / tuples / lists nesting arrays: every
    array with at least one dimension is batch-first (N, ...) with the same
    N, and is cut to rows ``shard_bounds(N, rank, W)`` (a view); anything
    else (flags, scalars) goes to every rank unchanged. A rank whose share is
    empty (N < W) gets row 0 with weight 0, so it still joins the all-reduce
    and adds nothing to it.
    """
    dims: list[int] = []
    _leading_dims(batch, dims)
    if not dims:
        raise SeqlabError(f"cannot split a batch of type {type(batch).__name__} across {world_size} ranks: "
                          f"it holds no arrays")
    if len(set(dims)) > 1:
        raise SeqlabError(f"cannot split a batch across ranks: its arrays have different first (batch) "
                          f"dimensions {sorted(set(dims))}; data-parallel training needs batch-first arrays")
    rows = dims[0]
    start, stop = shard_bounds(rows, rank, world_size)
    if stop == start:
        if rows == 0:
            raise SeqlabError("a global batch has 0 rows")
        return _take(batch, 0, 1), 0.0
    return _take(batch, start, stop), (stop - start) * world_size / rows


class RankRandomness:
    """Per-rank dropout streams that leave one global RNG state behind.

    `enter` (before a micro-batch's forward pass) draws one 63-bit key from
    the shared generator (the same draw on every rank, since all ranks hold
    the same state) and switches it to the stream ``PCG64([key, rank])``;
    `leave` (after the backward pass) puts the shared generator at the state
    right after the key. The state that checkpoints record thus advances by
    exactly one draw per micro-batch whatever the world size and the shard
    sizes, and no two ranks share dropout masks.
    """

    def __init__(self, rank: int):
        self.rank = rank
        self._after: dict | None = None

    def enter(self) -> None:
        self.leave()
        gen = srandom.default_generator()
        key = int(gen.integers(2**63))
        self._after = srandom.get_state()
        gen.bit_generator.state = np.random.PCG64([key, self.rank]).state

    def leave(self) -> None:
        if self._after is not None:
            srandom.set_state(self._after)
            self._after = None


def stop_code(reason: str | None) -> int:
    """0 = keep going; a higher code wins when ranks disagree (`STOP_REASONS` order, unknown reasons last)."""
    if not reason:
        return 0
    return len(STOP_REASONS) - STOP_REASONS.index(reason) + 1 if reason in STOP_REASONS else 1


# ---------------------------------------------------------------- the torch.distributed seam

class TorchDistributed:
    """The trainer's data-parallel seam on torch.distributed (one process per rank, started by torchrun).

    `backend` is "gloo" (NumPy arrays on CPU; the default) or "nccl"
    (CuPy arrays on GPU, handed over through DLPack; the default when
    seqlab's device is "cuda"). The process group is initialised from
    torchrun's environment (``env://``: RANK, WORLD_SIZE, MASTER_ADDR,
    MASTER_PORT), so multi-node rendezvous options of torchrun work unchanged.
    """

    def __init__(self, backend: str | None = None, timeout_s: float = 1800.0):
        try:
            import torch
            import torch.distributed as dist
        except ImportError as e:
            raise SeqlabError(f"data-parallel training runs on torch.distributed, which cannot be imported "
                              f"({e}); install torch or run a single process without torchrun") from None

        from seqlab import backend as sbackend

        env = torchrun_env()
        self._torch, self._dist = torch, dist
        if backend is None:
            backend = "nccl" if sbackend.get_device() == "cuda" else "gloo"
        if backend not in ("gloo", "nccl"):
            raise ValueError(f"backend must be 'gloo' or 'nccl', got {backend!r}")
        self.backend = backend
        self.local_rank = env["local_rank"] if env else 0
        self._device = torch.device("cpu")
        if backend == "nccl":  # pragma: no cover - needs GPUs
            import cupy

            cupy.cuda.Device(self.local_rank).use()  # one GPU per local rank
            torch.cuda.set_device(self.local_rank)
            self._device = torch.device("cuda", self.local_rank)
        self._owns_group = not dist.is_initialized()
        if self._owns_group:
            dist.init_process_group(backend, timeout=timedelta(seconds=timeout_s))
        self.rank, self.world_size = dist.get_rank(), dist.get_world_size()
        self.is_main = self.rank == 0
        self._buffers: dict[Any, tuple[Any, Any, list[tuple[int, int]]]] = {}
        self._weights: list[float] = []          # the shard weights W n_r / N of this step's micro-batches
        self._step_done = False                  # set by all_reduce_grads, the step's last call
        self._randomness = RankRandomness(self.rank)

    def __repr__(self) -> str:
        return f"TorchDistributed(rank={self.rank}, world_size={self.world_size}, backend={self.backend!r})"

    # ---- the trainer's seam
    def shard(self, batch: Any) -> Any:
        """This rank's rows of a global micro-batch (see `shard_batch`); called before its forward pass.

        It also records the shard's weight for `all_reduce_grads` and moves
        the dropout generator to this rank's stream (`RankRandomness`).
        """
        if self.world_size == 1:
            return batch
        part, weight = shard_batch(batch, self.rank, self.world_size)
        if self._step_done:  # the first micro-batch of a new step
            self._weights, self._step_done = [], False
        self._weights.append(weight)
        self._randomness.enter()
        return part

    def _step_weight(self) -> float:
        """This rank's weight W n_r / N in the current step.

        Σ_r w_r g_r / W is then the gradient of the global batch's mean loss.
        With grad_accum > 1 the micro-batches' gradients are already summed,
        so unequal weights inside one step (only where a batch does not
        divide by W) are represented by their mean.
        """
        return sum(self._weights) / len(self._weights) if self._weights else 1.0

    def _as_torch(self, array: Any) -> Any:
        """A torch tensor sharing `array`'s memory: from_numpy on CPU, DLPack for CuPy (no copy either way)."""
        if isinstance(array, np.ndarray):
            return self._torch.from_numpy(array)
        return self._torch.from_dlpack(array)  # pragma: no cover - CuPy on GPU

    def _sync_device(self, xp: Any, before: bool) -> None:
        """CuPy and torch use different CUDA streams: finish one's work before the other reads it."""
        if xp is np:
            return
        if before:  # pragma: no cover - needs a GPU
            xp.cuda.get_current_stream().synchronize()
        else:  # pragma: no cover - needs a GPU
            self._torch.cuda.current_stream().synchronize()

    def all_reduce_grads(self, params: Iterable) -> None:
        """Average every gradient over the ranks, in one all-reduce per dtype/device (usually one).

        The gradients are copied once into a persistent flat buffer, reduced
        in place through a zero-copy torch view, divided by W, and handed
        back as views of the buffer (no copy out). Each parameter also sends
        a has-gradient flag, so one that got no gradient on any rank keeps
        ``grad = None`` (and the optimizer skips it, as in one process).
        """
        from seqlab import backend as sbackend

        self._randomness.leave()
        weight, self._step_done = self._step_weight(), True
        groups: dict[Any, list] = {}
        for p in params:
            xp = sbackend.xp_of(p.data)
            groups.setdefault((xp.__name__, np.dtype(p.data.dtype).str), []).append(p)
        for key, ps in groups.items():
            self._reduce_group(key, ps, weight)

    def _reduce_group(self, key: Any, params: list, weight: float) -> None:
        from seqlab import backend as sbackend

        layout_key = (key, tuple((id(p), p.data.shape) for p in params))
        if layout_key not in self._buffers:
            self._buffers = {k: v for k, v in self._buffers.items() if k[0] != key}  # the layout changed
            xp = sbackend.xp_of(params[0].data)
            spans, total = [], 0
            for p in params:
                spans.append((total, total + int(p.data.size)))
                total += int(p.data.size)
            buf = xp.empty(total + len(params), dtype=params[0].data.dtype)  # grads, then one flag per param
            self._buffers[layout_key] = (xp, buf, spans)
        xp, buf, spans = self._buffers[layout_key]
        n = spans[-1][1] if spans else 0
        grads, flags = buf[:n], buf[n:]
        for i, (p, (lo, hi)) in enumerate(zip(params, spans)):
            if p.grad is None:
                buf[lo:hi] = 0
                flags[i] = 0
            else:
                xp.copyto(buf[lo:hi], p.grad.reshape(-1))  # the one copy: into the flat buffer
                flags[i] = 1
        if weight != 1.0:
            grads *= weight
        self._sync_device(xp, before=True)
        self._dist.all_reduce(self._as_torch(buf), op=self._dist.ReduceOp.SUM)  # in place, through a view
        self._sync_device(xp, before=False)
        grads *= 1.0 / self.world_size
        for i, (p, (lo, hi)) in enumerate(zip(params, spans)):
            p.grad = buf[lo:hi].reshape(p.data.shape) if flags[i] > 0 else None  # views of the buffer

    def _scalars(self, values: list[float], op: Any) -> list[float]:
        t = self._torch.tensor(values, dtype=self._torch.float64, device=self._device)
        self._dist.all_reduce(t, op=op)
        return [float(v) for v in t.cpu().tolist()]

    def all_reduce_mean(self, value: float) -> float:
        """A per-row mean over this rank's shard -> the mean over the whole global batch.

        Each rank's value is weighted by its share of the current step's
        rows, ``Σ_r (n_r / N) · value_r``: the logged training loss is the
        global batch's mean loss, as one process would log it (a plain mean
        over ranks when the shards are equal, or outside a step).
        """
        self._randomness.leave()
        weighted = float(value) * self._step_weight()
        return self._scalars([weighted], self._dist.ReduceOp.SUM)[0] / self.world_size

    def agree_stop(self, stop: str | None, over_budget: bool) -> tuple[str | None, bool]:
        """Every rank's (stop reason, time budget reached), agreed: if one rank stops, all stop at the same step.

        Without it a Ctrl-C or a time budget seen by one rank only would leave
        the others waiting forever in the next all-reduce.
        """
        code, over = self._scalars([float(stop_code(stop)), float(bool(over_budget))], self._dist.ReduceOp.MAX)
        if code == 0:
            return None, over > 0
        if stop_code(stop) == code:
            return stop, over > 0
        return (STOP_REASONS[len(STOP_REASONS) + 1 - int(code)] if code > 1 else "stopped"), over > 0

    def barrier(self) -> None:
        self._dist.barrier()

    def close(self) -> None:
        """Destroy the process group this object created (idempotent)."""
        if self._owns_group and self._dist.is_initialized():
            self._dist.destroy_process_group()
        self._owns_group = False
