"""seqlab: neural networks, RNNs and Transformers from scratch on NumPy.

    import seqlab
    from seqlab import nn, functional as F
    x = seqlab.randn(2, 3, requires_grad=True)
"""
import math as _math

from seqlab import backend, runtime
from seqlab.autograd import (Function, Tensor, enable_grad, inference_mode, is_grad_enabled, no_grad,
                             set_grad_enabled)
from seqlab.creation import (abs, arange, as_tensor, argmax, argmin, argsort, bmm, cat, clamp, clip, cos, cumsum, empty,
                             empty_like, exp, eye, flatten, from_numpy, full, full_like, is_tensor, log, log_softmax,
                             matmul, max, maximum, mean, min, minimum, mm, numel, ones, ones_like, permute, pow, prod,
                             relu, repeat_interleave, reshape, sigmoid, sin, softmax, sort, sqrt, squeeze, stack, sum,
                             tanh, tensor, topk, transpose, tril, triu, unsqueeze, where, zeros, zeros_like)
from seqlab.sampling import (bernoulli, multinomial, normal, rand, rand_like, randint, randint_like, randn,
                             randn_like, randperm)
from seqlab.autograd.ops.einsum import einsum
from seqlab.autograd.tensor_indexing import TOPLEVEL as _INDEXING_TOPLEVEL
from seqlab.autograd.tensor_indexing import (addmm, addmv, amax, amin, aminmax, argwhere, baddbmm, bincount,
                                             block_diag, broadcast_tensors, broadcast_to, bucketize, cartesian_prod,
                                             chunk, count_nonzero, cross, cummax, cummin, cumprod, diag, diag_embed,
                                             diagonal, diff, dot, flip, fliplr, flipud, gather, ger, histc, index_add,
                                             index_copy, index_fill, index_put, index_select, kron, kthvalue,
                                             linspace, logspace, logsumexp, masked_scatter, masked_select, median,
                                             meshgrid, mode, moveaxis, movedim, mv, nanmean, nanmedian, nansum,
                                             narrow, nonzero, outer, put, roll, scatter, scatter_add, searchsorted,
                                             select, split, std_mean, take, take_along_dim, tile, trace, unbind,
                                             unflatten, unique, var_mean, vdot, tensor_split, hsplit, vsplit, dsplit,
                                             swapaxes, swapdims, ravel, adjoint, msort)
from seqlab.autograd.tensor_math import TOPLEVEL as _MATH_TOPLEVEL
from seqlab.autograd.tensor_math import (absolute, acos, allclose, arccos, arcsin, arctan, arctan2, asin, atan, atan2,
                                         ceil, clamp_max, clamp_min, cosh, eq, equal, erf, expm1, fix, floor,
                                         floor_divide, fmod, frac, ge, greater, greater_equal, gt, hypot, isclose,
                                         isfinite, isinf, isnan, isneginf, isposinf, le, lerp, less, less_equal,
                                         log10, log1p, log2, logical_and, logical_not, logical_or, logical_xor, logit,
                                         lt, nan_to_num, ne, negative, not_equal, remainder, round, sgn, sign,
                                         signbit, sinh, square, true_divide, trunc, xlogy)
from seqlab.random import Generator, manual_seed
from seqlab import toplevel as _toplevel
from seqlab.toplevel import (add, all, any, clone, concat, concatenate, cosine_similarity, div, divide,
                             get_rng_state, hstack, isin, masked_fill, mul, multiply, neg, norm, reciprocal, rsqrt,
                             set_rng_state, std, sub, subtract, t, tan, tensordot, tril_indices, triu_indices, var,
                             vstack)
from seqlab.typeinfo import TENSOR_TYPES as _TENSOR_TYPES
from seqlab.typeinfo import (BoolTensor, ByteTensor, CharTensor, DoubleTensor, FloatTensor, HalfTensor, IntTensor,
                             LongTensor, ShortTensor, Size, finfo, get_default_dtype, iinfo, set_default_dtype)
from seqlab.devices import device
from seqlab.runtime import (backends, compile, get_float32_matmul_precision, get_num_threads,
                            set_float32_matmul_precision, set_num_threads)
from seqlab.serialization import load, save
from seqlab import amp, cuda  # noqa: E402  (seqlab.cuda.is_available(), seqlab.amp.GradScaler, as torch's)
from seqlab.amp import autocast
from seqlab import functional, nn, optim  # noqa: E402  (seqlab.nn.Linear, as torch.nn)
from seqlab import utils  # noqa: E402  (seqlab.utils.data.DataLoader, as torch.utils.data)
from seqlab import batch_threads  # noqa: E402  (seqlab.batch_threads.set_enabled(False), as the docs say)
from seqlab.functional import celu, pairwise_distance, prelu, rrelu, selu  # noqa: E402  (torch.selu, ...)

__version__ = "0.1.0"

# dtypes, with torch's names: NumPy's scalar types, which every `dtype=` and `.to()` takes (seqlab.long is int64,
# seqlab.int int32, seqlab.float float32, as torch's). Names that shadow Python's builtins (int, float, bool, sum,
# max, min, pow) stay out of __all__, so `from seqlab import *` leaves the builtins alone.
float16 = half = backend.np.float16
float32 = float = backend.np.float32  # noqa: A001
float64 = double = backend.np.float64
uint8 = backend.np.uint8
int8 = backend.np.int8
int16 = short = backend.np.int16
int32 = int = backend.np.int32  # noqa: A001
int64 = long = backend.np.int64
bool = backend.np.bool_  # noqa: A001
bfloat16 = runtime.MissingDtype("bfloat16")  # named (dtype tables in scripts load); using it says why not

# torch's constants: torch.inf, torch.pi, x[:, seqlab.newaxis]
inf, nan, pi, e, newaxis = _math.inf, _math.nan, _math.pi, _math.e, None  # Python floats, as torch's

__all__ = [
    "Tensor", "Function", "no_grad", "enable_grad", "is_grad_enabled", "set_grad_enabled", "inference_mode",
    "manual_seed",
    "tensor", "as_tensor", "zeros", "ones", "full", "arange", "randn", "rand", "cat", "stack", "where", "maximum",
    "zeros_like", "ones_like", "full_like", "eye", "from_numpy", "randint", "multinomial",
    "exp", "log", "sqrt", "abs", "tanh", "sigmoid", "relu", "softmax", "log_softmax", "argmax", "argmin",
    "topk", "sort", "argsort", "cumsum", "matmul", "mm", "bmm", "tril", "triu",
    "sin", "cos", "clamp", "clip", "minimum", "mean", "numel", "is_tensor", "unsqueeze", "squeeze", "transpose",
    "permute", "prod", "einsum", "reshape", "flatten", "repeat_interleave", "normal", "empty",
    "backend", "float16", "half", "float32", "float64", "double", "uint8", "int8", "int16", "short", "int32",
    "int64", "long", "bfloat16",
    "device", "cuda", "amp", "autocast", "backends", "compile", "set_num_threads", "get_num_threads",
    "set_float32_matmul_precision", "get_float32_matmul_precision", "save", "load",
    "celu", "pairwise_distance", "prelu", "rrelu", "selu",
    "inf", "nan", "pi", "e", "newaxis", "finfo", "iinfo", "Size", "set_default_dtype", "get_default_dtype",
    "Generator", "empty_like", "rand_like", "randn_like", "randint_like", "randperm", "bernoulli",
    *_TENSOR_TYPES,
]
# torch's top-level arithmetic, norms, stacking, rng state (all and any stay out of __all__: builtins' names)
__all__ += [n for n in _toplevel.__all__ if n not in ("all", "any") and n not in __all__]
# torch's top-level math, selection and linear algebra (round stays out of __all__: it shadows the builtin)
__all__ += [n for n in _MATH_TOPLEVEL + _INDEXING_TOPLEVEL if n != "round" and n not in __all__]

# more of torch's math, bitwise ops, statistics (Tensor methods too), and its stacking, distances, dtype rules, seeds
from seqlab.autograd.tensor_extra import TOPLEVEL as _EXTRA_TOPLEVEL  # noqa: E402
from seqlab.autograd.tensor_extra import (bitwise_and, bitwise_left_shift, bitwise_not, bitwise_or,  # noqa: E402
                                          bitwise_right_shift, bitwise_xor, copysign, corrcoef, cov, deg2rad,
                                          diagflat, dist, exp2, float_power, fmax, fmin, heaviside, inner,
                                          is_nonzero, logaddexp, logaddexp2, logcumsumexp, nanquantile, positive,
                                          quantile, rad2deg, rot90, unique_consecutive)
from seqlab import toplevel_extra as _toplevel_extra  # noqa: E402
from seqlab.toplevel_extra import (atleast_1d, atleast_2d, atleast_3d, broadcast_shapes, can_cast,  # noqa: E402
                                   cdist, column_stack, detach, dstack, initial_seed, is_complex,
                                   is_floating_point, pdist, promote_types, result_type, row_stack, seed, trapezoid,
                                   trapz)
__all__ += [n for n in _EXTRA_TOPLEVEL + _toplevel_extra.__all__ if n not in __all__]

# torch.linalg and torch.special as seqlab.linalg and seqlab.special, and torch's older names (det, svd, lgamma)
from seqlab import linalg, special  # noqa: E402
from seqlab.autograd.tensor_linalg_special import TOPLEVEL as _LINALG_SPECIAL_TOPLEVEL  # noqa: E402
from seqlab.autograd.tensor_linalg_special import (cholesky, det, digamma, erfc, erfinv, i0, inverse,  # noqa: E402
                                                   lgamma, logdet, matrix_power, mvlgamma, pinverse, polygamma, qr,
                                                   sinc, slogdet, svd)
__all__ += ["linalg", "special"] + [n for n in _LINALG_SPECIAL_TOPLEVEL if n not in __all__]

# torch.func's transforms (grad, vjp, jacrev, hessian, vmap, functional_call) as seqlab.func
from seqlab import func  # noqa: E402
__all__ += ["func"]

# torch.testing's assert_close and make_tensor as seqlab.testing
from seqlab import testing  # noqa: E402
__all__ += ["testing"]

# torch.distributions as seqlab.distributions (Categorical, Normal, ..., kl_divergence)
from seqlab import distributions  # noqa: E402
__all__ += ["distributions"]

# more of torch's functions that are Tensor methods too (tensor_more.py); seqlab.tan stays toplevel.py's
from seqlab.autograd.tensor_more import (acosh, addbmm, addr, arccosh, arcsinh, arctanh, asinh,  # noqa: E402
                                         atanh, cholesky_inverse, cholesky_solve, conj, diagonal_scatter, frexp,
                                         gcd, hardshrink, histogram, imag, index_reduce, is_conj, is_inference,
                                         is_neg, is_same_size, is_signed, isreal, lcm, ldexp, matrix_exp,
                                         narrow_copy, nextafter, real, renorm, resolve_conj, resolve_neg,
                                         scatter_reduce, select_scatter, slice_scatter, split_with_sizes,
                                         triangular_solve, unsafe_chunk, unsafe_split)
from seqlab.autograd.tensor_more import TOPLEVEL as _MORE_TOPLEVEL  # noqa: E402
__all__ += [n for n in _MORE_TOPLEVEL if n not in __all__]

# torch's NumPy-style spellings on every function with `keepdim`: x.sum(axis=1, keepdims=True), seqlab.std(x, axis=0)
from seqlab.autograd.numpy_names import accept_numpy_names as _accept_numpy_names  # noqa: E402
from seqlab.autograd.numpy_names import accept_numpy_names_in as _accept_numpy_names_in  # noqa: E402

_accept_numpy_names(Tensor)
_accept_numpy_names_in(globals(), [n for n in list(globals()) if not n.startswith("_")])  # sum, max, all too
