"""An exponential moving average (EMA) of a model's trainable parameters.

    ema = WeightEMA(model.named_parameters(), decay=0.999)
    ...; optimizer.step(); ema.update()      # after every optimizer step
    with ema.swapped_in():                   # the model holds the averaged weights in here
        evaluate(model)

The numbers are those of torch's ``AveragedModel(model,
multi_avg_fn=get_ema_multi_avg_fn(decay), use_buffers=False)``: the first
update copies the parameters, every later one is

    ema ← ema + (1 − decay) · (param − ema)  =  decay · ema + (1 − decay) · param

computed as torch's ``lerp_`` does (the form it picks depends on whether the
weight 1 − decay is below one half). Only parameters with ``requires_grad``
are averaged; buffers and frozen parameters are the model's own, as with
``use_buffers=False``. The averages are arrays of the parameters' own module
(NumPy or CuPy) and dtype, updated in place with one reused scratch buffer.
"""
from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Iterable, Iterator

import numpy as np

from seqlab import backend
from seqlab.errors import CheckpointError


class WeightEMA:
    """The moving average of `named_params` (name, Parameter) pairs; nothing is allocated before `update`."""

    def __init__(self, named_params: Iterable[tuple[str, Any]], decay: float):
        if not 0 <= decay < 1:
            raise ValueError(f"EMA decay must be in [0, 1), got {decay}")
        pairs = [(n, p) for n, p in named_params if p.requires_grad]
        self.names = [n for n, _ in pairs]
        self.params = [p for _, p in pairs]
        self.decay = float(decay)
        self.updates = 0                       # torch's n_averaged
        self.arrays: list[Any] | None = None   # the averages, one per parameter, once updated
        self._scratch: dict[tuple, Any] = {}

    # ---------------------------------------------------------------- the average
    def update(self) -> None:
        """Fold the parameters' current values into the average (the first call copies them)."""
        if self.arrays is None or self.updates == 0:
            self.arrays = [backend.xp_of(p.data).array(p.data, copy=True, order="C") for p in self.params]
        else:
            for avg, p in zip(self.arrays, self.params):
                self._lerp(avg, p.data)
        self.updates += 1

    def _lerp(self, avg, value) -> None:
        """avg ← lerp(avg, value, 1 − decay), in place, as torch's CPU/CUDA lerp kernel computes it."""
        xp = backend.xp_of(avg)
        dtype = avg.dtype.type
        weight = dtype(1.0 - self.decay)
        tmp = self._buffer(avg)
        xp.subtract(value, avg, out=tmp)             # end − start
        if weight < 0.5:
            tmp *= weight
            avg += tmp                               # start + w (end − start)
        else:
            tmp *= dtype(1) - weight
            xp.subtract(value, tmp, out=avg)         # end − (end − start)(1 − w)

    def _buffer(self, like):
        """A temporary shaped like `like`, cut from one flat buffer per (array type, dtype)."""
        key = (type(like), like.dtype)
        buf = self._scratch.get(key)
        if buf is None or buf.size < like.size:
            buf = self._scratch[key] = backend.xp_of(like).empty(like.size, dtype=like.dtype)
        return buf[:like.size].reshape(like.shape)

    # ---------------------------------------------------------------- using it
    def _swap(self) -> None:
        for i, p in enumerate(self.params):
            p.data, self.arrays[i] = self.arrays[i], p.data

    @contextmanager
    def swapped_in(self) -> Iterator[None]:
        """The model holds the averaged weights inside the block, its own (the same arrays) afterwards.

        The arrays are exchanged, not copied, so the raw weights come back bit for
        bit. Before the first update the average is the weights themselves.
        """
        if self.arrays is None or self.updates == 0:
            yield
            return
        self._swap()
        try:
            yield
        finally:
            self._swap()

    def copy_to_params(self) -> None:
        """Overwrite the parameters with the averages (at the end of training, before exporting)."""
        if self.arrays is not None and self.updates:
            for avg, p in zip(self.arrays, self.params):
                p.data[...] = avg

    # ---------------------------------------------------------------- checkpoints
    def state_dict(self) -> dict[str, Any]:
        """Parameter name -> average (the arrays themselves); empty before the first update."""
        if self.arrays is None or self.updates == 0:
            return {}
        return dict(zip(self.names, self.arrays))

    def record(self) -> dict[str, Any]:
        """The JSON part of the state: decay and number of updates."""
        return {"decay": self.decay, "updates": self.updates}

    def load(self, arrays: dict[str, np.ndarray] | None, record: dict | None, where: str = "the checkpoint") -> None:
        """Restore from `state_dict` arrays and `record`; no record means a fresh average."""
        updates = int((record or {}).get("updates", 0))
        if updates == 0:
            self.arrays, self.updates = None, 0
            return
        if arrays is None:
            raise CheckpointError(f"{where} records {updates} EMA updates but holds no ema.safetensors")
        missing = [n for n in self.names if n not in arrays]
        unexpected = [n for n in arrays if n not in self.names]
        if missing or unexpected:
            raise CheckpointError(f"{where}: the EMA weights do not match the model's trainable parameters "
                                  f"(missing: {', '.join(missing) or '-'}; unexpected: {', '.join(unexpected) or '-'})")
        restored = []
        for name, p in zip(self.names, self.params):
            arr = arrays[name]
            if tuple(arr.shape) != tuple(p.data.shape):
                raise CheckpointError(f"{where}: EMA weight {name} has shape {tuple(arr.shape)}, "
                                      f"the model's {tuple(p.data.shape)}")
            xp = backend.xp_of(p.data)
            restored.append(xp.array(backend.to_device(arr, backend.device_of(p.data)), dtype=p.data.dtype,
                                     copy=True, order="C"))
        self.arrays, self.updates = restored, updates
