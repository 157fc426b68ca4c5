"""Stateless ops with PyTorch's names and signatures (`import seqlab.functional as F`)."""
from __future__ import annotations

import math
import operator
import warnings

import numpy as np

from seqlab.autograd.torch_errors import DtypeNotImplementedError
from seqlab.errors import ShapeError
from seqlab import backend
from seqlab import kernels
from seqlab import random as _random
from seqlab.autograd.ops import activation as A
from seqlab.autograd.ops import fused as Fu
from seqlab.autograd.ops import matmul as M
from seqlab.autograd.ops.reduce import normalize_dim, normalize_dims
from seqlab.autograd.function import is_grad_enabled, no_grad
from seqlab.autograd.tensor import Tensor, _arr
from seqlab.creation import cat as _cat, where  # noqa: F401  (re-exported: F.where)


def _t(x) -> Tensor:
    return x if isinstance(x, Tensor) else Tensor._of(x)


# ---- activations (the chapter's 7.1.2) -------------------------------------
def sigmoid(input: Tensor) -> Tensor:  # noqa: A002 (torch's name)
    """σ(x) = 1 / (1 + e^−x), stable for any x (no clipping needed); integers and bools in the default float
    dtype, as torch's."""
    return _t(input).sigmoid()


def tanh(input: Tensor) -> Tensor:  # noqa: A002 (torch's name)
    return _t(input).tanh()


def relu(input: Tensor, inplace: bool = False) -> Tensor:  # noqa: A002 (torch's name)
    """max(0, x). `inplace` is accepted for torch compatibility and ignored (a new tensor is returned, as
    `nn.ReLU(inplace=True)` does here): use the result."""
    return A.ReLU.apply(_t(input))


def gelu(input: Tensor, approximate: str = "none") -> Tensor:  # noqa: A002 (torch's name)
    """x Φ(x) with the exact erf (`'none'`, BERT) or the tanh approximation (`'tanh'`, GPT-2)."""
    if approximate not in ("none", "tanh"):
        raise ValueError(f"gelu approximate must be 'none' or 'tanh', got {approximate!r}")
    return A.GELU.apply(_t(input), approximate=approximate)


def leaky_relu(input: Tensor, negative_slope: float = 0.01, inplace: bool = False) -> Tensor:  # noqa: A002
    """x where x > 0, else negative_slope · x (as torch, the gradient at 0 is negative_slope). `inplace` is
    accepted and ignored, as `relu`'s: use the result."""
    x = _t(input)
    return where(x.data > 0, x, x * negative_slope)


def silu(input: Tensor, inplace: bool = False) -> Tensor:  # noqa: A002 (torch's name)
    """x σ(x). `inplace` is accepted and ignored, as `relu`'s: use the result."""
    return A.SiLU.apply(_t(input))


def logsigmoid(input: Tensor) -> Tensor:  # noqa: A002 (torch's name)
    """log σ(x), finite for any x (the building block of the logistic loss)."""
    return A.LogSigmoid.apply(_t(input))


def _softmax_input(name: str, x, dim, dtype, stacklevel: int) -> tuple[Tensor, int]:
    """The input cast to `dtype` first (torch's `dtype=`; a torch dtype is read as NumPy's) and `dim` checked;
    `dim=None` is torch's deprecated implicit choice (0 for 0-, 1- and 3-d inputs, else 1) with its warning."""
    x = _t(x)
    if dtype is not None:
        dtype = np.dtype(backend.from_torch_name(dtype))
        if x.dtype != dtype:
            x = x.astype(dtype)
    if dim is None:
        warnings.warn(f"Implicit dimension choice for {name} has been deprecated. "
                      "Change the call to include dim=X as an argument.", UserWarning, stacklevel=stacklevel)
        dim = 0 if x.ndim in (0, 1, 3) else 1
    if x.dtype.kind not in "fc":  # torch refuses these too ("not implemented for 'Long'")
        raise DtypeNotImplementedError(f"{name}() of a {x.dtype} tensor: it needs floating point; convert first "
                                       f"(x.float()) or pass dtype=seqlab.float32")
    return x, normalize_dim(dim, x.ndim)  # a dim out of range: torch's IndexError


def softmax(input: Tensor, dim: int | None = -1, _stacklevel: int = 3, dtype=None) -> Tensor:  # noqa: A002
    """exp(x) / Σ exp(x) along `dim` (default −1; torch's default, None, is its deprecated implicit choice,
    which `dim=None` also makes here). `dtype` casts the input first, as torch."""
    x, d = _softmax_input("softmax", input, dim, dtype, _stacklevel)
    return Fu.Softmax.apply(x, dim=d)


def log_softmax(input: Tensor, dim: int | None = -1, _stacklevel: int = 3, dtype=None) -> Tensor:  # noqa: A002
    """log(softmax(x)) along `dim`, in one stable op; `dim` and `dtype` as `softmax`'s."""
    x, d = _softmax_input("log_softmax", input, dim, dtype, _stacklevel)
    return Fu.LogSoftmax.apply(x, dim=d)


# ---- layers ------------------------------------------------------------------
def linear(input: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:  # noqa: A002 (torch's name)
    """x Wᵀ + b, W of shape (out_features, in_features)."""
    x = _t(input)
    if x.shape[-1] != weight.shape[-1]:
        raise ValueError(f"input has shape {x.shape} but the layer expects last dim {weight.shape[-1]} "
                         f"(weight shape {weight.shape})")
    if bias is None:
        return M.Linear.apply(x, weight)
    return M.Linear.apply(x, weight, bias)


def layer_norm(input: Tensor, normalized_shape, weight: Tensor | None = None,  # noqa: A002 (torch's name)
               bias: Tensor | None = None, eps: float = 1e-5) -> Tensor:
    """(x − mean) / √(var + eps) · weight + bias over the trailing `normalized_shape`.

    Unlike the chapter's listing, which divides by (std + eps) and has no gain
    or bias, this is torch's definition: biased variance inside the root.
    """
    x = _t(input)
    ns = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    if tuple(x.shape[x.ndim - len(ns):]) != ns:
        raise ShapeError(f"input has shape {x.shape} but layer_norm normalizes over trailing {ns}")
    args = [x, weight, bias]
    return Fu.LayerNorm.apply(*args, nd=len(ns), eps=eps)


def rms_norm(input: Tensor, normalized_shape, weight: Tensor | None = None,  # noqa: A002 (torch's name)
             eps: float | None = None) -> Tensor:
    """x / √(mean(x²) + eps) · weight over the trailing `normalized_shape` dims, as torch's (T5's layer norm:
    no centring, no bias). `eps=None`: the input dtype's machine epsilon, as torch."""
    x = _t(input)
    ns = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    if not ns or len(ns) > x.ndim or tuple(x.shape[x.ndim - len(ns):]) != ns:
        raise ValueError(f"input has shape {x.shape} but rms_norm normalizes over trailing {ns}")
    if weight is not None and not isinstance(weight, Tensor):
        raise TypeError(f"rms_norm: weight must be a Tensor or None, got {type(weight).__name__} "
                        f"(torch's order: rms_norm(input, normalized_shape, weight, eps))")
    if weight is not None and tuple(weight.shape) != ns:
        raise ValueError(f"rms_norm: weight has shape {tuple(weight.shape)}, expected normalized_shape {ns}")
    xf = x.astype(np.float32) if x.dtype == np.float16 else x
    if eps is None:
        eps = float(np.finfo(xf.dtype if np.dtype(xf.dtype).kind == "f" else np.float32).eps)
    dims = tuple(range(-len(ns), 0))
    y = xf * ((xf * xf).mean(dim=dims, keepdim=True) + eps).rsqrt()
    y = y * weight if weight is not None else y
    return y if y.dtype == x.dtype else y.astype(x.dtype)  # the input's dtype, as torch's


def embedding(input, weight: Tensor, padding_idx: int | None = None, max_norm: float | None = None,  # noqa: A002
              norm_type: float = 2.0, scale_grad_by_freq: bool = False, sparse: bool = False) -> Tensor:
    """Rows of `weight` (num_embeddings, dim) for integer ids `input` of any shape, with torch's arguments;
    ids on another device than the weight are copied to the weight's (token ids usually start on the host).

    `padding_idx` (negative counts from the end): that row gets no gradient. `max_norm`: first, as torch's
    `embedding_renorm_`, each row looked up whose `norm_type`-norm exceeds max_norm is scaled IN PLACE in
    `weight` (outside the graph) by max_norm / (norm + 1e-7); the lookup then reads the new rows, and the
    gradient is the plain lookup's. `scale_grad_by_freq`: each row's gradient is divided by how often its id
    occurs in `input` (its double backward is torch's: see `Fu.Embedding`). `sparse=True` is refused:
    seqlab's gradients are dense.
    """
    if sparse:
        raise NotImplementedError("embedding: " + SPARSE_REFUSED)
    ids_arr = backend.to_device(_arr(backend.from_torch(input)), weight.device)
    if ids_arr.dtype.kind not in "iu":
        raise TypeError(f"embedding ids must be integers, got dtype {ids_arr.dtype}")
    n = weight.shape[0]
    if ids_arr.size:
        lo, hi = int(ids_arr.min()), int(ids_arr.max())
        if lo < 0 or hi >= n:
            bad = hi if hi >= n else lo
            raise IndexError(f"token id {bad} is out of range for an embedding of {n} rows (valid ids 0..{n - 1})")
    padding_idx = padding_row(padding_idx, n)
    if max_norm is not None and ids_arr.size:
        _embedding_renorm_(weight, ids_arr, float(max_norm), float(norm_type))
    return Fu.Embedding.apply(weight, ids_arr, padding_idx=padding_idx, scale_grad_by_freq=bool(scale_grad_by_freq))


def embedding_bag(input, weight: Tensor, offsets=None, max_norm: float | None = None,  # noqa: A002
                  norm_type: float = 2, scale_grad_by_freq: bool = False, mode: str = "mean", sparse: bool = False,
                  per_sample_weights: Tensor | None = None, include_last_offset: bool = False,
                  padding_idx: int | None = None) -> Tensor:
    """One vector per bag of ids: the sum, mean or max of their rows of `weight` (num_embeddings, dim), as
    torch's. `input` (B, N) is B bags of N ids; or 1-D with `offsets` (B,), where bag b starts (offsets[0] = 0;
    with `include_last_offset`, B + 1 of them, the last len(input)). Ids equal to `padding_idx` are left out
    of their bag (and of its mean's count); an empty bag gives zeros. `per_sample_weights` (the shape of
    `input`, mode 'sum' only) scales each row first and gets its gradient too. `max_norm` renormalizes the rows
    looked up, as `embedding`'s. Built from the lookup, a mask and a reduction, so its gradient is theirs.
    """
    if mode not in ("sum", "mean", "max"):
        raise ValueError("mode has to be one of sum, mean or max")
    if sparse:
        raise NotImplementedError("embedding_bag: " + SPARSE_REFUSED)
    if scale_grad_by_freq:
        raise NotImplementedError("embedding_bag: scale_grad_by_freq=True is not supported; use embedding() and "
                                  "a reduction, or leave it False")
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError(f"embedding_bag: per_sample_weights was not None. per_sample_weights is only "
                                  f"supported for mode='sum' (got mode='{mode}')")
    ids = np.asarray(backend.to_numpy(_arr(backend.from_torch(input))))
    if ids.dtype.kind not in "iu":
        raise TypeError(f"embedding_bag ids must be integers, got dtype {ids.dtype}")
    psw = None if per_sample_weights is None else _t(per_sample_weights)
    if ids.ndim == 2:
        if offsets is not None:
            raise ValueError("if input is 2D, then offsets has to be None, as input is treated is a mini-batch of "
                             "fixed length sequences")
        bag_ids = ids  # (B, N): every position of every bag holds an id
        valid = np.ones(ids.shape, dtype=bool)
        take = None
    elif ids.ndim == 1:
        if offsets is None:
            raise ValueError("offsets has to be a 1D Tensor but got None")
        starts = np.asarray(backend.to_numpy(_arr(backend.from_torch(offsets)))).astype(np.int64).reshape(-1)
        ends = np.append(starts[1:], ids.size) if not include_last_offset else starts[1:]
        starts = starts if not include_last_offset else starts[:-1]
        if starts.size and starts[0] != 0:
            raise ValueError(f"offsets[0] has to be 0, i.e., the first sequence in the mini-batch has to start "
                             f"from position 0. However, got {starts[0]}")
        if ends.size and (ends.max() > ids.size or np.any(ends < starts)):
            raise ValueError(f"offsets must rise and end within the input's length {ids.size}, got "
                             f"{backend.to_numpy(_arr(backend.from_torch(offsets))).tolist()}")
        lengths = ends - starts
        width = int(lengths.max()) if lengths.size else 0
        take = starts[:, None] + np.arange(width)[None, :]            # (B, width) positions in input
        valid = np.arange(width)[None, :] < lengths[:, None]
        take = np.where(valid, take, 0)
        bag_ids = ids[take] if ids.size else np.zeros(take.shape, dtype=np.int64)
    else:
        raise ValueError(f"embedding_bag input must be 1-D (with offsets) or 2-D, got shape {ids.shape}")
    pad = padding_row(padding_idx, weight.shape[0])
    if pad is not None:
        valid = valid & (bag_ids != pad)
    # positions outside a bag look up an id of the input (no row it does not name is renormalized by max_norm)
    fill = ids.reshape(-1)[0] if ids.size else 0
    rows = embedding(np.where(valid, bag_ids, fill), weight, max_norm=max_norm, norm_type=norm_type)  # (B, W, D)
    keep = Tensor(backend.to_device(valid[..., None], weight.device))            # (B, W, 1) bool
    if mode == "max":
        low = Tensor(backend.to_device(np.asarray(-np.inf, dtype=weight.dtype), weight.device))
        if rows.shape[1] == 0:
            return rows.sum(1)  # no bag holds anything: zeros
        best = where(keep, rows, low).max(1).values                                          # (B, D)
        return where(Tensor(backend.to_device(valid.any(1)[:, None], weight.device)), best, 0.0)
    if psw is not None:
        w = psw if take is None else psw[Tensor(take)]
        rows = rows * w.reshape(tuple(bag_ids.shape) + (1,))
    total = where(keep, rows, 0.0).sum(1)                                                    # (B, D)
    if mode == "sum":
        return total
    count = np.maximum(valid.sum(1, keepdims=True), 1).astype(weight.dtype)
    return total / Tensor(backend.to_device(count, weight.device))


SPARSE_REFUSED = ("sparse=True is not supported: seqlab has no sparse gradients; the weight gets a dense gradient, "
                  "as with sparse=False (the default)")


def padding_row(padding_idx: int | None, n: int) -> int | None:
    """`padding_idx` as a row of an n-row embedding (a negative one counts from the end), or a ValueError."""
    if padding_idx is None:
        return None
    if not -n <= padding_idx < n:
        raise ValueError(f"padding_idx {padding_idx} must be within num_embeddings ({n})")
    return int(padding_idx) % n


def _embedding_renorm_(weight: Tensor, ids, max_norm: float, norm_type: float) -> None:
    """torch's `embedding_renorm_`: each distinct row of `weight` at `ids` whose norm_type-norm (taken in the
    weight's dtype) exceeds max_norm is multiplied in place by max_norm / (norm + 1e-7) (a float64 scale cast
    to the weight's dtype). Outside the graph, as torch's under no_grad; a change is counted
    (autograd/versions.py), so a backward that saved the old rows raises, as torch's version counter does."""
    from seqlab.autograd import versions as _versions

    w = weight.data
    xp = backend.xp_of(w)
    rows = xp.unique(ids.reshape(-1))
    sel = w[rows]
    a = xp.abs(sel)
    if norm_type == math.inf:
        norm = a.max(axis=1)
    elif norm_type == -math.inf:
        norm = a.min(axis=1)
    elif norm_type == 0:
        norm = (a != 0).sum(axis=1)
    elif norm_type == 1:
        norm = a.sum(axis=1)
    elif norm_type == 2:
        norm = xp.sqrt((sel * sel).sum(axis=1))
    else:
        norm = (a ** w.dtype.type(norm_type)).sum(axis=1) ** w.dtype.type(1.0 / norm_type)
    norm = norm.astype(w.dtype).astype(np.float64)  # torch: the row's norm in its dtype, then .item<double>()
    over = norm > max_norm
    if not bool(over.any()):
        return
    scale = (max_norm / (norm[over] + 1e-7)).astype(w.dtype)
    w[rows[over]] = sel[over] * scale[:, None]
    _versions.bump(w)


def _keep_mask(xp, shape: tuple, p: float, dtype, generator: np.random.Generator | None = None):
    """Bool array of `shape`, each element True (kept) with probability 1 − p, independently.

    Plain formula: ``uniform(shape) >= p``. On NumPy, `seqlab.random.keep_mask`:
    32-bit draws (exact to 2⁻³², finer than float32 uniforms' 2⁻²⁴) from a
    SplitMix64 stream keyed by one word of the generator, so seeded by
    `seqlab.manual_seed` as before, and compiled when Numba is in use.
    """
    if xp is not np:  # pragma: no cover - needs a GPU
        return _random.uniform_like(xp, shape, dtype, generator) >= p
    return _random.keep_mask(shape, p, generator)


def dropout(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False, *,  # noqa: A002
            generator: np.random.Generator | None = None) -> Tensor:
    """Inverted dropout: zero each element with probability p, scale the rest by 1/(1 − p). `inplace` is
    accepted and ignored, as `relu`'s: use the result."""
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout probability must be in [0, 1], got {p}")
    x = _t(input)
    if not training or p == 0.0:
        return x
    if p == 1.0:
        return x * 0.0
    xp = backend.xp_of(x.data)
    if xp is np:  # the mask by its key (seqlab.random.keep_mask's): compiled, it is never stored
        return Fu.Dropout.apply(x, p=p, key=_random.mask_key(generator))
    keep = _keep_mask(xp, x.shape, p, x.dtype, generator)  # bool, True = keep
    return Fu.Dropout.apply(x, keep, p=p)


FUSED_ACTIVATIONS = ("relu", "gelu", "gelu_tanh")  # what `bias_act_dropout` takes


def fused_activation(fn) -> str | None:
    """The `bias_act_dropout` name of the activation function `fn`: 'relu' for `relu`, 'gelu' for
    `gelu`, a function's own `fused_activation` attribute (e.g. the tanh GELU of seqlab.hub.config),
    else None."""
    if fn is relu:
        return "relu"
    if fn is gelu:
        return "gelu"
    name = getattr(fn, "fused_activation", None)
    return name if name in FUSED_ACTIVATIONS else None


def bias_act_dropout(x: Tensor, bias: Tensor, activation: str = "gelu", p: float = 0.0, training: bool = True,
                     generator: np.random.Generator | None = None) -> Tensor:
    """dropout(act(x + bias), p, training): a feed-forward's middle, after its first product.

    `activation`: 'relu', 'gelu' (exact, erf) or 'gelu_tanh' (the tanh approximation). Where the
    compiled kernels take the arrays (`seqlab.kernels.bias_act_dropout_takes`) one pass forward and
    one backward (`Fu.BiasActDropout`), else the three ops; either way the same values up to float32
    rounding, and the same dropout mask (one key drawn from `generator`, as `dropout` draws it).
    """
    if activation not in FUSED_ACTIVATIONS:
        raise ValueError(f"activation must be one of {', '.join(FUSED_ACTIVATIONS)}, got {activation!r}")
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout probability must be in [0, 1], got {p}")
    x, bias = _t(x), _t(bias)
    p = p if training else 0.0
    if p < 1.0 and kernels.bias_act_dropout_takes(x.data, bias.data, dropout=p > 0.0):
        key = _random.mask_key(generator) if p > 0.0 else None
        return Fu.BiasActDropout.apply(x, bias, activation=activation, p=p, key=key)
    h = x + bias
    y = relu(h) if activation == "relu" else gelu(h, "tanh" if activation == "gelu_tanh" else "none")
    return dropout(y, p, training, generator=generator)


def linear_act_dropout(x: Tensor, weight: Tensor, bias: Tensor, activation: str = "gelu", p: float = 0.0,
                       training: bool = True, generator: np.random.Generator | None = None) -> Tensor:
    """dropout(act(x Wᵀ + b)), a feed-forward's first half: `linear` without its bias, then
    `bias_act_dropout` (the bias added in the activation's pass instead of a pass of its own)."""
    return bias_act_dropout(linear(x, weight), bias, activation, p, training, generator)


# ---- losses ------------------------------------------------------------------
def _reduce(loss: Tensor, reduction: str) -> Tensor:
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    if reduction == "none":
        return loss
    raise ValueError(f"reduction must be 'mean', 'sum' or 'none', got {reduction!r}")


def _check_targets(tgt, c: int, ignore_index: int) -> None:
    """Every target other than `ignore_index` must be a class in 0..c-1 (torch raises too): a negative one
    would otherwise pick a class from the end, silently, by NumPy's negative indexing."""
    valid = tgt[tgt != ignore_index]
    if valid.size and (int(valid.min()) < 0 or int(valid.max()) >= c):
        raise IndexError(f"target class {int(valid.max()) if int(valid.max()) >= c else int(valid.min())} "
                         f"is out of range for {c} classes")


def _class_weight(weight, c: int, like: Tensor):
    """torch's `weight` argument: one non-negative rescaling factor per class, as an array on `like`'s device."""
    w = backend.to_device(_arr(backend.from_torch(weight) if not isinstance(weight, Tensor) else weight.data),
                          like.device)
    if tuple(w.shape) != (c,):
        raise ValueError(f"weight must have one entry per class, shape ({c},), got {tuple(w.shape)}")
    return w.astype(like.dtype)


def cross_entropy(input: Tensor, target, weight=None, size_average=None,  # noqa: A002 (torch's names and order)
                  ignore_index: int = -100, reduce=None, reduction: str = "mean",
                  label_smoothing: float = 0.0) -> Tensor:
    """Softmax cross-entropy, torch layout: logits `input` (N, C) or (N, C, d1, ...), target (N) or (N, d1, ...).

    target holds class indices, or (as torch) class probabilities of the
    logits' shape. `weight` (C,) rescales each class; 'mean' then divides
    by the summed weights of the targets (torch's weighted mean). `size_average` / `reduce` (deprecated)
    override `reduction` with torch's warning.
    """
    reduction = _reduction("cross_entropy", size_average, reduce, reduction)
    logits = _t(input)
    tgt = backend.to_device(_arr(backend.from_torch(target)), logits.device)  # host targets: copied to the model
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"reduction must be 'mean', 'sum' or 'none', got {reduction!r}")
    if not 0.0 <= label_smoothing <= 1.0:
        raise ValueError(f"label_smoothing must be in [0, 1], got {label_smoothing}")
    if tgt.dtype.kind == "f" and tuple(tgt.shape) == tuple(logits.shape):
        return _soft_cross_entropy(logits, tgt, weight, reduction, label_smoothing)
    if tgt.dtype.kind not in "iu":
        raise TypeError(f"cross_entropy target must hold class indices (integers) or class probabilities of the "
                        f"logits' shape {tuple(logits.shape)}, got dtype {tgt.dtype} and shape {tuple(tgt.shape)}")
    unbatched = logits.ndim == 1
    if unbatched:  # (C,) logits with a () target, as torch
        logits, tgt = logits.reshape(1, -1), tgt.reshape(1)
    c = logits.shape[1]
    expected = (logits.shape[0],) + logits.shape[2:]
    if tuple(tgt.shape) != expected:
        raise ShapeError(f"cross_entropy: logits {logits.shape} need target shape {expected}, got {tuple(tgt.shape)}")
    _check_targets(tgt, c, ignore_index)
    if logits.ndim > 2:  # (N, C, d...) -> (N·d..., C)
        perm = (0,) + tuple(range(2, logits.ndim)) + (1,)
        out_shape = expected
        logits = logits.permute(perm).reshape(-1, c)
        tgt = tgt.reshape(-1)
    else:
        out_shape = None
    if weight is None:  # the fused op: one pass, its own backward
        loss = Fu.CrossEntropy.apply(logits, tgt.astype(np.int64), ignore_index=ignore_index,
                                     label_smoothing=label_smoothing, reduction=reduction)
    else:
        loss = _weighted_cross_entropy(logits, tgt.astype(np.int64), _class_weight(weight, c, logits),
                                       ignore_index, label_smoothing, reduction)
    if reduction == "none" and out_shape is not None:
        loss = loss.reshape(out_shape)
    elif reduction == "none" and unbatched:
        loss = loss.reshape(())
    return loss


def _weighted_cross_entropy(logits: Tensor, tgt, w, ignore_index: int, eps: float, reduction: str) -> Tensor:
    """Class-weighted cross-entropy on (N, C) logits, composed from log_softmax (autograd does the backward).

    loss_i = (1 − ε)·w[y_i]·(−log p_i[y_i]) + ε/C·Σ_c w_c·(−log p_i[c]); 'mean' divides by Σ_i w[y_i]
    over the targets that are not ignored, as torch.
    """
    xp = backend.xp_of(logits.data)
    logp = log_softmax(logits, -1)
    valid = tgt != ignore_index
    safe = xp.where(valid, tgt, 0)
    w_y = w[safe] * valid.astype(w.dtype)                                      # (N,) 0 where ignored
    loss = -logp.gather(1, safe[:, None]).reshape(-1) * Tensor(w_y)
    if eps:
        smooth = -(logp * Tensor(w)).sum(-1) * Tensor(valid.astype(w.dtype))
        loss = loss * (1 - eps) + smooth * (eps / logits.shape[1])
    if reduction == "mean":
        return loss.sum() / Tensor(w_y.sum())                                  # 0/0 = NaN when all are ignored
    return _reduce(loss, reduction)


def _soft_cross_entropy(logits: Tensor, probs, weight, reduction: str, eps: float) -> Tensor:
    """Cross-entropy against class probabilities (torch's float targets): −Σ_c w_c·q_c·log p_c per row,
    q = (1 − ε)·target + ε/C; 'mean' divides by the number of rows (not by the weights), as torch."""
    dim = 0 if logits.ndim == 1 else 1
    c = logits.shape[dim]
    q = probs.astype(logits.dtype)
    if eps:
        q = q * (1 - eps) + eps / c
    prod = log_softmax(logits, dim) * Tensor(q)
    if weight is not None:
        w = _class_weight(weight, c, logits)
        prod = prod * Tensor(w.reshape((c,) + (1,) * (logits.ndim - 2)) if dim else w)
    return _reduce(-prod.sum(dim), reduction)


def nll_loss(input: Tensor, target, weight=None, size_average=None,  # noqa: A002 (torch's names and order)
             ignore_index: int = -100, reduce=None, reduction: str = "mean") -> Tensor:
    """−log_probs[target] with log_probs = `input`, torch layout: (N, C) or (N, C, d1, ...) with target (N)
    or (N, d1, ...).

    'mean' divides by the number of targets that are not `ignore_index` (NaN when there are none, as torch),
    or with `weight` (C,) by their summed class weights. A target outside 0..C-1 that is not
    `ignore_index` raises IndexError, as in `cross_entropy`. `size_average` / `reduce` (deprecated)
    override `reduction` with torch's warning.
    """
    reduction = _reduction("nll_loss", size_average, reduce, reduction)
    lp = _t(input)
    tgt = backend.to_device(_arr(target), lp.device)
    if tgt.dtype.kind not in "iu":
        raise TypeError(f"nll_loss target must hold class indices (integers), got dtype {tgt.dtype}")
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"reduction must be 'mean', 'sum' or 'none', got {reduction!r}")
    out_shape = tuple(tgt.shape)
    if lp.ndim == 1 and tgt.size == 1:  # (C,) log-probabilities with a () target: a () loss, as torch
        lp, tgt, out_shape = lp.reshape(1, -1), tgt.reshape(1), ()
    expected = (lp.shape[0],) + tuple(lp.shape[2:]) if lp.ndim >= 2 else ()
    if lp.ndim < 2 or tuple(tgt.shape) != expected:  # torch: "Expected input batch_size (4) to match ..."
        raise ValueError(f"nll_loss: log_probs of shape {tuple(lp.shape)} need a target of shape {expected}, "
                         f"got {tuple(tgt.shape)}")
    _check_targets(tgt, lp.shape[1], ignore_index)
    if lp.ndim > 2:  # (N, C, d...) -> (N·d..., C)
        lp = lp.permute((0,) + tuple(range(2, lp.ndim)) + (1,)).reshape(-1, lp.shape[1])
    tgt = tgt.reshape(-1)
    xp = backend.xp_of(lp.data)
    valid = tgt != ignore_index
    safe = xp.where(valid, tgt, 0)
    scale = valid.astype(lp.dtype) if weight is None else _class_weight(weight, lp.shape[1], lp)[safe] * valid
    picked = lp.gather(1, safe[:, None]).reshape(-1) * scale                    # (N·d,)
    if reduction == "mean" and weight is not None:
        return -picked.sum() / Tensor(scale.sum())
    if reduction == "mean":
        count = int(valid.sum())
        return -picked.sum() / (count if count else np.nan)
    if reduction == "sum":
        return -picked.sum()
    return (-picked).reshape(out_shape)


def _no_reduction_string(name: str, size_average, reduce) -> None:
    """TypeError for a reduction string given where torch's order has `size_average` / `reduce` (the
    order these losses took before: `mse_loss(x, y, 'sum')`); torch would read it as a truthy flag."""
    for arg, value in (("size_average", size_average), ("reduce", reduce)):
        if isinstance(value, str):
            raise TypeError(f"{name}: {arg}={value!r} is a string; torch's order is (input, target, ..., "
                            f"size_average, reduce, reduction, ...): pass reduction={value!r} by keyword")


def _reduction(name: str, size_average, reduce, reduction: str) -> str:
    """The reduction a loss uses: `reduction`, or what torch's deprecated `size_average` / `reduce` say (with
    torch's warning, pointing at the loss's caller); a string in either slot is a TypeError (see above)."""
    from seqlab.functional_losses import legacy_reduction

    _no_reduction_string(name, size_average, reduce)
    return legacy_reduction(size_average, reduce, reduction, stacklevel=4)


def mse_loss(input: Tensor, target, size_average=None, reduce=None, reduction: str = "mean",  # noqa: A002
             weight=None) -> Tensor:
    """(x − y)², as torch's. `size_average` / `reduce` (deprecated) override `reduction` with torch's warning.
    `weight` (the input's shape, as torch requires) scales each term, and 'mean' is then Σ w·(x − y)² / Σ w."""
    from seqlab.functional_losses import _same_size_weight, check_reduction

    x = _t(input)
    shape = tuple(getattr(target, "shape", np.shape(target)))
    if shape != tuple(x.shape):  # torch warns here too: (4, 1) against (4,) broadcasts to (4, 4)
        warnings.warn(f"mse_loss: target shape {shape} differs from the input's {tuple(x.shape)}; the two are "
                      f"broadcast, which is likely not what you want (give them the same shape)", UserWarning,
                      stacklevel=2)
    reduction = check_reduction(_reduction("mse_loss", size_average, reduce, reduction))
    d = x - target  # a host target moves to the input's device (Tensor._other)
    loss = d * d
    if weight is None:
        return _reduce(loss, reduction)
    w = _same_size_weight(weight, x)
    loss = loss * w
    return loss.sum() / w.sum() if reduction == "mean" else _reduce(loss, reduction)


def _bce_factor(value, name: str, x: Tensor) -> Tensor:
    """`weight` or `pos_weight` of binary_cross_entropy_with_logits as a Tensor of x's dtype that broadcasts
    to x's shape (the loss keeps the input's shape and dtype, as torch's)."""
    if isinstance(value, str):
        raise TypeError(f"binary_cross_entropy_with_logits: {name} must be a tensor, got the string {value!r}; "
                        f"torch's order is (input, target, weight, size_average, reduce, reduction, pos_weight): "
                        f"pass reduction={value!r} by keyword")
    if isinstance(value, Tensor):
        t = value
    else:
        arr = backend.from_torch(value)
        t = Tensor(backend.to_device(arr if hasattr(arr, "shape") else np.asarray(arr), x.device))
    if t.dtype != x.dtype:
        t = t.astype(x.dtype)
    if not backend.broadcasts_to(tuple(t.shape), tuple(x.shape)):
        raise ValueError(f"binary_cross_entropy_with_logits: {name} of shape {tuple(t.shape)} does not broadcast "
                         f"to the input's shape {tuple(x.shape)}")
    return t


def binary_cross_entropy_with_logits(input: Tensor, target, weight=None, size_average=None,  # noqa: A002
                                     reduce=None, reduction: str = "mean", pos_weight=None) -> Tensor:
    """−w·[y log σ(x) + (1 − y) log(1 − σ(x))] = w·[(1 − y)·x − log σ(x)], with the stable log σ; torch's
    arguments, in torch's order.

    `weight` broadcasts to the input and scales each term ('mean' stays the plain mean, as torch's). With
    `pos_weight` (broadcast to the input; one per class in the last dim): w·[(1 − y)·x − (1 + (pw − 1)·y)·log σ(x)].
    `size_average` / `reduce` (deprecated) override `reduction` with torch's warning. Composed of Tensor ops,
    so differentiable to any order in input and target; torch refuses a `weight` or `pos_weight` that requires
    grad, here they get their gradient.
    """
    from seqlab.functional_losses import check_reduction

    reduction = check_reduction(_reduction("binary_cross_entropy_with_logits", size_average, reduce, reduction))
    x = _t(input)
    w = None if weight is None else _bce_factor(weight, "weight", x)
    pw = None if pos_weight is None else _bce_factor(pos_weight, "pos_weight", x)
    y = target if isinstance(target, Tensor) else Tensor._of(backend.to_device(_arr(target), x.device).astype(x.dtype))
    if tuple(y.shape) != tuple(x.shape):
        raise ValueError(f"target shape {tuple(y.shape)} must equal the input's (logits') shape {tuple(x.shape)}")
    log_sig = logsigmoid(x)
    if pw is None:
        loss = (1 - y) * x - log_sig
    else:
        loss = (1 - y) * x - (y * (pw - 1) + 1) * log_sig
    if w is not None:
        loss = loss * w
    return _reduce(loss, reduction)


# ---- attention ----------------------------------------------------------------
def _mask_parts(attn_mask, is_causal, tq, tk, xp, dtype, scores_shape=None):
    """Split a torch-SDPA mask into (bias, block): bool True = may attend; float = added.

    `attn_mask` may be a seqlab Tensor, a NumPy/CuPy array, a torch tensor or a (nested) list; any other
    dtype than bool or floating raises TypeError (as torch), and a shape that does not broadcast to the
    scores' `scores_shape` (..., L, S) raises ValueError. A floating seqlab Tensor stays a Tensor (its
    gradient flows, e.g. T5's learned position bias).
    """
    bias = block = None
    if attn_mask is not None:
        m = attn_mask
        if not isinstance(m, Tensor):
            m = backend.from_torch(m)
            if not (hasattr(m, "dtype") and hasattr(m, "shape")):  # a list, tuple or Python scalar
                m = np.asarray(m)
        kind = m.dtype.kind if isinstance(m, Tensor) else np.dtype(m.dtype).kind
        if kind not in "bf":
            raise TypeError(f"attn_mask must be bool (True = may attend) or floating (added to the scores), "
                            f"got dtype {m.dtype}")
        if scores_shape is not None and not backend.broadcasts_to(m.shape, scores_shape):
            raise ValueError(f"attn_mask has shape {tuple(m.shape)}, which does not broadcast to the attention "
                             f"scores' shape {tuple(scores_shape)} (..., L, S)")
        if kind == "b":
            block = ~backend.to_device(_arr(m), backend.device_of_module(xp))  # NumPy mask -> GPU with CuPy
        elif isinstance(m, Tensor):
            bias = m if m.dtype == dtype else m.astype(dtype)
            bias = bias.to(backend.device_of_module(xp))  # a bias made on the host, scores on the GPU
        else:
            bias = xp.asarray(backend.to_device(m, backend.device_of_module(xp)), dtype=dtype)
    if is_causal:
        causal_block = xp.triu(xp.ones((tq, tk), dtype=bool), k=1)
        block = causal_block if block is None else (block | causal_block)
    return bias, block


def attention(query: Tensor, key: Tensor, value: Tensor, attn_mask=None, dropout_p: float = 0.0,
              is_causal: bool = False, scale: float | None = None, training: bool = True,
              generator=None, weights_grad: bool = False, need_weights: bool = True) -> tuple[Tensor, Tensor]:
    """softmax(q kᵀ · scale + mask) v and the attention weights (..., Tq, Tk), taken before dropout.

    Mask semantics are those of `scaled_dot_product_attention`. The weights are detached (one fused op,
    which keeps no T × T array for backward) unless `weights_grad`: then the attention is built from
    autograd ops and the weights carry gradients, as torch's `MultiheadAttention` returns them.
    `need_weights=False` (as torch's `MultiheadAttention`): the weights are None, and the compiled path
    (`seqlab.kernels.short_attention_forward`) does not write them at all.
    """
    q, k, v = _t(query), _t(key), _t(value)
    if q.shape[-1] != k.shape[-1]:
        raise ValueError(f"query has shape {q.shape} and key {k.shape}: their last dims must match")
    if k.shape[-2] != v.shape[-2]:
        raise ValueError(f"key has shape {k.shape} and value {v.shape}: they need the same length (dim -2)")
    return _attention(Fu.Attention, [q, k, v], q.shape, k.shape, v.shape, q.dtype, backend.xp_of(q.data),
                      attn_mask, dropout_p, is_causal, scale, training, generator, weights_grad=weights_grad,
                      need_weights=need_weights)


def attention_qkv(qkv: Tensor, num_heads: int, attn_mask=None, dropout_p: float = 0.0, is_causal: bool = False,
                  scale: float | None = None, training: bool = True, generator=None,
                  weights_grad: bool = False, need_weights: bool = True,
                  merge_heads: bool = False) -> tuple[Tensor, Tensor]:
    """`attention` of q, k and v packed in one (B, T, 3·E) tensor, q | k | v along the last axis (a fused
    in-projection's output, e.g. `nn.MultiheadAttention`'s in_proj or GPT-2's c_attn), each split into
    `num_heads` heads of E / num_heads: the same (B, H, T, D) output and weights, bitwise, as splitting
    first. Backward then returns one (B, T, 3·E) gradient (`Fu.PackedAttention`). `merge_heads`: the
    output as (B, T, E), the heads concatenated as an out-projection takes them (the same values as
    `out.transpose(1, 2).reshape(B, T, E)`, with no op of its own)."""
    qkv = _t(qkv)
    if qkv.ndim != 3 or num_heads < 1 or qkv.shape[-1] % (3 * num_heads):
        raise ValueError(f"attention_qkv needs a (B, T, 3·E) tensor with E divisible by num_heads={num_heads}, "
                         f"got shape {qkv.shape}")
    B, T, E3 = qkv.shape
    heads = (B, num_heads, T, E3 // (3 * num_heads))
    out, weights = _attention(Fu.PackedAttention, [qkv], heads, heads, heads, qkv.dtype, backend.xp_of(qkv.data),
                              attn_mask, dropout_p, is_causal, scale, training, generator,
                              weights_grad=weights_grad, need_weights=need_weights, heads=num_heads,
                              merged=merge_heads)
    if merge_heads and out.ndim == 4:  # the composed path (weights_grad): its (B, H, T, D) merged here
        out = out.transpose(1, 2).reshape(B, T, E3 // 3)
    return out, weights


def _attention(op, inputs, q_shape, k_shape, v_shape, dtype, xp, attn_mask, dropout_p, is_causal, scale,
               training, generator, weights_grad=False, need_weights=True, **params) -> tuple[Tensor, Tensor]:
    """Masks, scale and dropout's keep mask for `op` (Attention or PackedAttention) on `inputs`."""
    tq, tk = q_shape[-2], k_shape[-2]
    try:
        scores_shape = tuple(np.broadcast_shapes(tuple(q_shape[:-2]), tuple(k_shape[:-2]))) + (tq, tk)
    except ValueError:
        scores_shape = None  # q and k do not broadcast: the op itself reports it
    bias, block = _mask_parts(attn_mask, is_causal, tq, tk, xp, dtype, scores_shape)
    s = 1.0 / math.sqrt(q_shape[-1]) if scale is None else scale
    keep = None
    if dropout_p > 0.0 and training:
        batch = np.broadcast_shapes(q_shape[:-2], k_shape[:-2], v_shape[:-2],
                                    *([tuple(bias.shape[:-2])] if bias is not None else []))
        shape = batch + (tq, tk)  # one keep/drop decision per attention weight
        keep = _keep_mask(xp, shape, dropout_p, dtype, generator)  # bool, True = keep
    if weights_grad and is_grad_enabled():
        if op is Fu.PackedAttention:  # q | k | v along the last axis, each split into heads: (B, H, T, D)
            B, T, E3 = inputs[0].shape
            H = params["heads"]
            q, k, v = (part.reshape(B, T, H, E3 // (3 * H)).transpose(1, 2) for part in inputs[0].split(E3 // 3, 2))
        else:
            q, k, v = inputs
        return _composed_attention(q, k, v, bias, block, s, keep, dropout_p)
    out, fn = op.apply_with_fn(*inputs, bias, block=block, scale=s, keep_mask=keep, p=dropout_p,
                               need_weights=need_weights, **params)
    weights, fn.weights = fn.weights, None  # handed over once: fn drops its reference
    return out, (Tensor._from_op(weights, None) if need_weights else None)


def _composed_attention(q, k, v, bias, block, scale, keep, p) -> tuple[Tensor, Tensor]:
    """The fused attention's values from autograd ops, so the weights carry gradients: scores, the mask
    (bias added, `block` set to −inf), softmax, dropout by `keep`, then the weighted sum. A query row with
    every key blocked gets weights 0 and output 0 (the fused op's rule; torch's MultiheadAttention: NaN)."""
    scores = (q @ k.transpose(-2, -1)) * scale                                 # (..., Tq, Tk)
    if bias is not None:
        scores = scores + bias
    if block is not None:
        scores = scores.masked_fill(block, -np.inf)
    xp = backend.xp_of(scores.data)
    dead = xp.isneginf(scores.data).all(axis=-1, keepdims=True)              # rows with nothing to attend
    if dead.any():
        scores = scores.masked_fill(xp.broadcast_to(dead, scores.shape), 0.0)
        weights = softmax(scores, dim=-1).masked_fill(xp.broadcast_to(dead, scores.shape), 0.0)
    else:
        weights = softmax(scores, dim=-1)
    dropped = weights if keep is None else weights * Tensor(keep.astype(weights.dtype) / weights.dtype.type(1 - p))
    return dropped @ v, weights


def scaled_dot_product_attention(query: Tensor, key: Tensor, value: Tensor, attn_mask=None,
                                 dropout_p: float = 0.0, is_causal: bool = False,
                                 scale: float | None = None, enable_gqa: bool = False) -> Tensor:
    """As `torch.nn.functional.scaled_dot_product_attention`.

    `attn_mask`: bool, True = may attend; or float, added to the scores.
    A query row whose keys are all blocked returns zeros (and zero gradients)
    instead of NaN. `enable_gqa` (grouped-query attention, as torch): key and value may have fewer heads
    (dim -3) than query, a divisor of its count; each key/value head then serves Hq / Hkv query heads.
    """
    if attn_mask is not None and is_causal:
        raise ValueError("pass either attn_mask or is_causal=True, not both (as torch)")
    if enable_gqa and query.ndim >= 3 and key.shape[-3] != query.shape[-3]:
        hq, hkv = query.shape[-3], key.shape[-3]
        if hq % hkv or value.shape[-3] != hkv:
            raise ValueError(f"enable_gqa: query has {hq} heads, key {hkv} and value {value.shape[-3]}; key and "
                             f"value need the same number of heads, a divisor of the query's")
        key = _t(key).repeat_interleave(hq // hkv, dim=-3)      # (..., Hq, S, E)
        value = _t(value).repeat_interleave(hq // hkv, dim=-3)  # (..., Hq, S, Ev)
    out, _ = attention(query, key, value, attn_mask, dropout_p, is_causal, scale)
    return out


def one_hot(tensor, num_classes: int = -1) -> Tensor:
    """Class indices of any shape (*) as int64 one-hot rows (*, num_classes), as torch's `one_hot`.

    num_classes=-1 (the default) takes max + 1. Negative indices, indices >= num_classes and an empty
    input without num_classes raise ValueError (torch: RuntimeError). Any integer dtype is taken (torch:
    int64 only); other dtypes raise TypeError.
    """
    arr = _arr(backend.from_torch(tensor))
    if not hasattr(arr, "dtype"):
        arr = np.asarray(arr)
    if arr.dtype.kind not in "iu":
        raise TypeError(f"one_hot is only applicable to tensors of class indices (integers), got dtype {arr.dtype}")
    xp = backend.xp_of(arr)
    if arr.size == 0:
        if num_classes <= 0:
            raise ValueError("Can not infer total number of classes from empty tensor.")
    else:
        if int(arr.min()) < 0:
            raise ValueError("Class values must be non-negative.")
        if num_classes == -1:
            num_classes = int(arr.max()) + 1
        elif int(arr.max()) >= num_classes:
            raise ValueError("Class values must be smaller than num_classes.")
    return Tensor(xp.eye(num_classes, dtype=np.int64)[arr])


# ---- normalisation and similarity ----------------------------------------------
def _lp_norm(x: Tensor, p: float, dim, keepdim: bool = True) -> Tensor:
    """torch's `x.norm(p, dim, keepdim)` for a vector p: 2, 1, inf and any other p by `Tensor.norm`
    (gradient 0 at the zero vector, as torch's); −inf the smallest |x|; 0 the number of non-zeros (no
    gradient)."""
    if p == float("-inf"):
        return -((-x.abs()).amax(dim, keepdim))
    if p == 0:
        axis = tuple(normalize_dims(dim, x.ndim)) if dim is not None else None
        return Tensor((x.data != 0).sum(axis=axis, keepdims=keepdim).astype(x.dtype))
    if p < 0:  # a zero element: |x|^p = inf, the norm 0 (torch's value), without NumPy's warning
        with np.errstate(divide="ignore"):
            return x.norm(p, dim, keepdim)
    return x.norm(p, dim, keepdim)


def normalize(input: Tensor, p: float = 2.0, dim=1, eps: float = 1e-12,  # noqa: A002 (torch's names)
              out: Tensor | None = None) -> Tensor:
    """x / max(‖x‖_p, eps) over `dim` (an int or a tuple), torch's `F.normalize`.

    As torch (`clamp_min`), the norm gets no gradient where it is below `eps`. With `out` the result is
    written into that tensor outside the graph, and returned.
    """
    x = _t(input)
    denom = _lp_norm(x, p, dim).clamp(min=eps)
    if out is None:
        return x / denom
    with no_grad():
        return out.copy_(x / denom)


def cosine_similarity(x1: Tensor, x2: Tensor, dim: int = 1, eps: float = 1e-8) -> Tensor:
    """Σ (x1 / max(‖x1‖, eps)) · (x2 / max(‖x2‖, eps)) along `dim`, which is removed: torch's formula.

    x1 and x2 broadcast to a common shape first (`dim` counts in it); as torch, each is normalised in its own
    float dtype (an integer input in the common one) and the product is promoted. As torch (it clamps the
    norms in place under no_grad), the clamp is invisible to autograd: the gradient flows through the norm
    as if it were not clamped, also where the norm is below `eps`.
    """
    a, b = _t(x1), _t(x2)
    floats = [t.dtype for t in (a, b) if t.dtype.kind == "f"]
    if not floats:
        raise TypeError(f"cosine_similarity expects a floating point common dtype, got {a.dtype} and {b.dtype}")
    common = np.result_type(*floats)  # integer inputs are cast to it; each float input keeps its dtype (as
    a, b = (t if t.dtype.kind == "f" else t.astype(common) for t in (a, b))  # torch) until the final product
    shape = tuple(np.broadcast_shapes(a.shape, b.shape))
    a, b = (t if t.shape == shape else t.expand(shape) for t in (a, b))
    d = normalize_dim(dim, len(shape))

    def clamped_norm(t: Tensor) -> Tensor:
        n = t.norm(2, d, keepdim=True)
        held = n.detach()
        return (n - held) + held.clamp(min=eps)  # the value max(n, eps) exactly; the gradient n's

    return ((a / clamped_norm(a)) * (b / clamped_norm(b))).sum(d)


# ---- padding ----------------------------------------------------------------------
_PAD_MODES = ("constant", "reflect", "replicate", "circular")


def pad(input: Tensor, pad, mode: str = "constant", value: float | None = None) -> Tensor:  # noqa: A002
    """torch's `F.pad`: `pad` = (left, right) of the last dim, then of the one before, ... (len(pad) // 2
    dims); negative pads crop.

    'constant' (fill `value`, default 0) pads any number of dims. 'reflect' (mirror, edge not repeated),
    'replicate' (repeat the edge) and 'circular' (wrap around) pad the last 1, 2 or 3 dims of a 2-3, 3-4 or
    4-5-d input, as torch. Composed of slicing, concatenation and indexing: gradients flow to the kept
    elements (summed where an element is copied more than once).
    """
    x = _t(input)
    pads = [operator.index(v) for v in pad]  # torch: TypeError for a float
    if len(pads) % 2:
        raise ValueError("Padding length must be divisible by 2")
    n_dims = len(pads) // 2
    if n_dims > x.ndim:
        raise ValueError(f"Padding length should be less than or equal to two times the input dimension but got "
                         f"padding length {len(pads)} and input of dimension {x.ndim}")
    if mode not in _PAD_MODES:
        raise NotImplementedError(f"Unrecognised padding mode {mode}")
    per_dim = [(x.ndim - 1 - k, pads[2 * k], pads[2 * k + 1]) for k in range(n_dims)]  # (dim, left, right)
    if mode == "constant":
        return _pad_constant(x, per_dim, 0 if value is None else value)
    if value is not None and value != 0:
        raise ValueError(f'Padding mode "{mode}" doesn\'t take in value argument')
    if not (n_dims in (1, 2, 3) and x.ndim in (n_dims + 1, n_dims + 2)):
        raise NotImplementedError(
            f"Padding size {len(pads)} is not supported for {x.ndim}D input tensor.\n"
            "Supported combinations for non-constant padding:\n"
            "  - 2D or 3D input: padding size = 2 (pads last dimension)\n"
            "  - 3D or 4D input: padding size = 4 (pads last 2 dimensions)\n"
            "  - 4D or 5D input: padding size = 6 (pads last 3 dimensions)")
    if any(s == 0 for s in x.shape[x.ndim - n_dims - 1:]):
        raise ValueError(f"{mode} padding expects a {n_dims + 1}D or {n_dims + 2}D (batch mode) tensor with "
                         f"possibly 0 batch size and other non-zero dimensions, got shape {tuple(x.shape)}")
    out = x
    for d, left, right in per_dim:
        out = _pad_indexed(out, d, left, right, mode)
    return out.clone() if out is x else out


def _pad_constant(x: Tensor, per_dim, value) -> Tensor:
    """Crop the negative pads (one slice), then concatenate blocks of `value` for the positive ones."""
    crop = [slice(None)] * x.ndim
    for d, left, right in per_dim:
        n = x.shape[d]
        if n + min(left, 0) + min(right, 0) < 0:
            raise ValueError(f"the input size {n}, plus negative padding {left} and {right}, resulted in a "
                             f"negative output size (dim {d} of an input of shape {tuple(x.shape)})")
        if left < 0 or right < 0:
            crop[d] = slice(max(-left, 0), n - max(-right, 0))
    x = x[tuple(crop)] if any(s != slice(None) for s in crop) else x
    padded = False
    for d, left, right in per_dim:
        if left <= 0 and right <= 0:
            continue

        def block(size: int) -> list:
            return [x.new_full(x.shape[:d] + (size,) + x.shape[d + 1:], value)] if size > 0 else []

        x, padded = _cat(block(left) + [x] + block(right), d), True
    return x if padded else x.clone()  # a crop alone is a view: copied, as torch's result is a new tensor


def _pad_indexed(x: Tensor, d: int, left: int, right: int, mode: str) -> Tensor:
    """One dim of 'reflect', 'replicate' or 'circular' padding, as torch's kernels: an index array picks
    every output element from the input (reflect and replicate index from the input itself, so a negative
    pad shifts the window; circular crops first and wraps around what remains, as torch)."""
    n = x.shape[d]
    size = n + left + right
    if mode == "reflect" and not (left < n and right < n):
        raise ValueError(f"Padding size should be less than the corresponding input dimension, but got: "
                         f"padding ({left}, {right}) at dimension {d} of input {list(x.shape)}")
    if mode == "circular":
        if left > n or right > n:
            raise ValueError("Padding value causes wrapping around more than once.")
        if size < 0:
            raise ValueError("Negative padding value is resulting in an empty dimension")
        lo, hi = max(-left, 0), n - max(-right, 0)
        kept = hi - lo
        if size == 0:
            idx = np.zeros(0, dtype=np.int64)
        elif max(left, 0) > kept or max(right, 0) > kept:
            raise ValueError(f"circular padding ({left}, {right}) wraps around more than once after the negative "
                             f"pad cropped dim {d} to {kept} elements")
        else:
            idx = lo + np.arange(-max(left, 0), kept + max(right, 0)) % kept
    else:
        if size <= 0:
            raise ValueError(f"input (size {n} at dim {d}) is too small for padding ({left}, {right}): "
                             f"calculated output size {size}")
        i = np.arange(-left, n + right)
        if mode == "replicate":
            idx = np.clip(i, 0, n - 1)
        else:  # reflect about the first and the last element
            idx = np.where(i < 0, -i, np.where(i >= n, 2 * (n - 1) - i, i))
    if np.array_equal(idx, np.arange(n)):
        return x
    return x[(slice(None),) * d + (idx,)]
from seqlab.nn.batchnorm import batch_norm  # noqa: E402,F401  (torch's F.batch_norm; nn.BatchNorm1d/2d call it)
from seqlab.nn.norm_more import group_norm, instance_norm, local_response_norm  # noqa: E402,F401
# more activations, losses, distances and layer functions, in files of their own (torch.nn.functional's names)
from seqlab.functional_activations import (celu, elu, glu, gumbel_softmax, hardshrink, hardsigmoid,  # noqa: E402,F401
                                           hardswish, hardtanh, mish, prelu, relu6, rrelu, selu, softmin, softplus,
                                           softshrink, softsign, tanhshrink, threshold)
from seqlab.functional_losses import (binary_cross_entropy, cosine_embedding_loss, gaussian_nll_loss,  # noqa: E402,F401
                                      hinge_embedding_loss, huber_loss, kl_div, l1_loss, margin_ranking_loss,
                                      multilabel_soft_margin_loss, pairwise_distance, poisson_nll_loss,
                                      smooth_l1_loss, soft_margin_loss, triplet_margin_loss)
from seqlab.functional_losses_more import (ctc_loss, multi_margin_loss, multilabel_margin_loss,  # noqa: E402,F401
                                           triplet_margin_with_distance_loss)
from seqlab.nn.misc_layers import (alpha_dropout, bilinear, dropout1d, dropout2d,  # noqa: E402,F401
                                   feature_alpha_dropout)
from seqlab.functional_conv import (adaptive_avg_pool1d, adaptive_avg_pool2d, adaptive_max_pool1d,  # noqa: E402,F401
                                    avg_pool1d, avg_pool2d, conv1d, conv2d, conv_transpose1d, conv_transpose2d,
                                    max_pool1d, max_pool2d)
from seqlab.functional_vision import (adaptive_max_pool2d, adaptive_max_pool2d_with_indices,  # noqa: E402,F401
                                      channel_shuffle, fold, lp_pool1d, lp_pool2d, max_unpool1d, max_unpool2d,
                                      native_channel_shuffle, pixel_shuffle, pixel_unshuffle, unfold)
from seqlab.functional_interpolate import (interpolate, upsample, upsample_bilinear,  # noqa: E402,F401
                                           upsample_nearest)
from seqlab.nn.dropout3d import dropout3d  # noqa: E402,F401
