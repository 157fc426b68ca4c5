"""`pad_sequence`, as `torch.nn.utils.rnn.pad_sequence`. seqlab's recurrent layers take the padded batch with
its `lengths` where torch takes a packed sequence (see `seqlab.nn.LSTM`)."""
from __future__ import annotations

from seqlab import creation
from seqlab.autograd.tensor import Tensor


def pad_sequence(sequences, batch_first: bool = False, padding_value: float = 0.0,
                 padding_side: str = "right") -> Tensor:
    """Tensors (L_i, *) stacked into (B, L_max, *) with batch_first, else (L_max, B, *) (torch's default),
    each padded with `padding_value` on the right (or the left); gradients flow back to each sequence."""
    if padding_side not in ("right", "left"):
        raise ValueError(f"padding_side must be 'right' or 'left', got {padding_side!r}")
    seqs = [s if isinstance(s, Tensor) else Tensor(s) for s in sequences]
    if not seqs:
        raise ValueError("pad_sequence needs at least one sequence")
    rest = {tuple(s.shape[1:]) for s in seqs}
    if len(rest) != 1 or any(s.ndim == 0 for s in seqs):
        raise ValueError(f"sequences must share every dim but the first, got shapes {[tuple(s.shape) for s in seqs]}")
    longest = max(s.shape[0] for s in seqs)
    rows = []
    for s in seqs:
        pad = creation.full((longest - s.shape[0],) + tuple(s.shape[1:]), padding_value, dtype=s.dtype)
        rows.append(creation.cat([s, pad] if padding_side == "right" else [pad, s], 0) if pad.shape[0] else s)
    out = creation.stack(rows, 0)                                              # (B, L, *)
    return out if batch_first else out.transpose(0, 1)
