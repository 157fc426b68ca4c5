"""Indexing, selection, scatter, linear-algebra and shape methods of Tensor (autograd/tensor_indexing.py) and their
torch.* functions, each against torch on the same inputs: values, and gradients by central differences in float64
and against torch's in float64 and float32 (helpers.check_op); indices and counts exactly; in-place versions;
errors; and the device path on tests/cupy_stand_in.py."""
import warnings

import numpy as np
import pytest
import torch
from helpers import check_op, same_as_torch

import cupy_stand_in
import seqlab
from seqlab import backend
from seqlab.autograd import tensor_indexing as TI

RNG = np.random.default_rng(3)
pytestmark = pytest.mark.filterwarnings("ignore:The reduce argument of torch.scatter:UserWarning")


def _pair(*shape, requires_grad=False, dtype=np.float64):
    a = RNG.standard_normal(shape).astype(dtype)
    return seqlab.tensor(a.copy(), requires_grad=requires_grad), torch.tensor(a.copy(), requires_grad=requires_grad)


def _perm_rows(rows: int, n: int, cols: int) -> np.ndarray:
    """(rows, cols) int64 with distinct entries in each column, from range(n): a scatter index without repeats."""
    return np.stack([RNG.permutation(n)[:rows] for _ in range(cols)], axis=1)


I = np.array  # noqa: E741 - an index array, read as one

# ---- 1. differentiable ops: values and gradients -------------------------------------------------------------
# id: (seqlab function, torch function or None for the same code, inputs, check_op options)
M = None  # "the same code for torch"
NO_TORCH = "central differences only"  # torch's own backward fails on this input
CASES = {
    # picking
    "index_select dim1": (lambda x, i: x.index_select(1, i), M, [(4, 5), I([0, 3, 3, 1])], {}),
    "index_select dim-2 int32": (lambda x, i: x.index_select(-2, i), M, [(4, 5), I([2, 0], np.int32)], {}),
    "masked_select broadcast": (lambda x, m: x.masked_select(m), M,
                                [(3, 4), I([True, False, True, True])], {}),
    "masked_select mask larger": (lambda x, m: x.masked_select(m), M,
                                  [(1, 4), I([[True, False, True, True], [False, True, False, False]])], {}),
    "masked_scatter": (lambda x, m, s: x.masked_scatter(m, s), M,
                       [(3, 4), I([[True, False, True, False]] * 3), (2, 5)], {}),
    "take negative": (lambda x, i: x.take(i), M, [(3, 4), I([[0, -1, 5], [11, -12, 5]])], {}),
    "take_along_dim dim": (lambda x, i: x.take_along_dim(i, 1), M, [(3, 4), I([[0, 3], [2, 2], [1, 0]])], {}),
    "take_along_dim broadcast": (lambda x, i: x.take_along_dim(i, -1), M, [(3, 4), I([[3, 0]])], {}),
    "take_along_dim flat": (lambda x, i: x.take_along_dim(i), M, [(3, 4), I([11, 0, 4])], {}),
    # writing
    "scatter src dim0": (lambda x, i, s: x.scatter(0, i, s), M, [(4, 5), _perm_rows(2, 4, 5), (2, 5)], {}),
    # src larger than index: torch 2.13's ScatterBackward returns src's gradient in index's shape and fails
    "scatter src larger": (lambda x, i, s: x.scatter(0, i, s), NO_TORCH, [(4, 5), _perm_rows(2, 4, 5), (3, 6)], {}),
    "scatter src dim-1": (lambda x, i, s: x.scatter(-1, i, s), M,
                          [(3, 5), _perm_rows(4, 5, 3).T.copy(), (3, 4)], {}),
    "scatter value": (lambda x, i: x.scatter(1, i, 2.5), M, [(3, 5), I([[0, 4], [1, 1], [3, 2]])], {}),
    # torch gives this one no gradient ("not implemented"); here it is scatter_add's
    "scatter reduce add": (lambda x, i, s: x.scatter(0, i, s, reduce="add"), NO_TORCH,
                           [(3, 4), I([[0, 1, 0, 2], [0, 1, 2, 2]]), (2, 4)], {}),
    "scatter reduce add values": (lambda x, i, s: x.scatter(0, i, s, reduce="add"), M,
                                  [(3, 4), I([[0, 1, 0, 2], [0, 1, 2, 2]]), (2, 4)], {"grad": False}),
    "scatter_add repeats": (lambda x, i, s: x.scatter_add(0, i, s), M,
                            [(3, 4), I([[0, 1, 0, 2], [0, 1, 2, 2], [0, 0, 0, 0]]), (3, 4)], {}),
    "index_add alpha": (lambda x, i, s: x.index_add(1, i, s, alpha=-1.5), M, [(3, 5), I([4, 0, 4]), (3, 3)], {}),
    "index_add 1-D": (lambda x, i, s: x.index_add(0, i, s), M, [(4,), I([3, 3, 1]), (3,)], {}),
    "index_copy": (lambda x, i, s: x.index_copy(0, i, s), M, [(4, 3), I([3, 0]), (2, 3)], {}),
    "index_fill number": (lambda x, i: x.index_fill(1, i, -2.0), M, [(3, 4), I([0, -1])], {}),
    "index_fill tensor value": (lambda x, i, v: x.index_fill(0, i, v), M, [(3, 4), I([2, 0]), ()], {}),
    "index_put": (lambda x, i, j, v: x.index_put((i, j), v), M, [(3, 4), I([0, 2, -1]), I([1, 3, 0]), (3,)], {}),
    "index_put accumulate broadcast": (lambda x, i, v: x.index_put((i,), v, accumulate=True), M,
                                       [(3, 4), I([0, 2, 0]), (4,)], {}),
    "index_put bool": (lambda x, m, v: x.index_put((m,), v), M, [(3, 4), I([True, False, True]), (1, 4)], {}),
    "put": (lambda x, i, s: x.put(i, s), M, [(3, 4), I([[0, -1], [5, 7]]), (4,)], {}),
    "put accumulate": (lambda x, i, s: x.put(i, s, accumulate=True), M, [(3, 4), I([0, 0, 11]), (3,)], {}),
    # shapes
    "roll flat": (lambda x: x.roll(5), M, [(3, 4)], {}),
    "roll dims": (lambda x: x.roll((1, -3), (0, -1)), M, [(3, 4)], {}),
    "fliplr": (lambda x: x.fliplr(), M, [(3, 4, 2)], {}),
    "flipud": (lambda x: x.flipud(), M, [(3, 4)], {}),
    "tile": (lambda x: x.tile((2, 1, 3)), M, [(3, 2)], {}),
    "narrow negative start": (lambda x: x.narrow(1, -3, 2), M, [(3, 4)], {}),
    "select": (lambda x: x.select(-1, -2), M, [(3, 4)], {}),
    "unflatten": (lambda x: x.unflatten(1, (2, -1)), M, [(3, 6)], {}),
    "reshape_as": (lambda x, y: x.reshape_as(y) * y, M, [(3, 4), (2, 6)], {}),
    "movedim": (lambda x: x.movedim((0, 1), (2, 0)), M, [(2, 3, 4)], {}),
    "sum_to_size": (lambda x: x.sum_to_size(1, 4), M, [(2, 3, 4)], {}),
    "unfold overlapping": (lambda x: x.unfold(1, 3, 1), M, [(2, 6, 3)], {}),
    "unfold step": (lambda x: x.unfold(-1, 2, 3), M, [(2, 8)], {}),
    "hsplit sections": (lambda x: x.hsplit(3)[1] * 2 + x.hsplit(3)[2], M, [(2, 6, 2)], {}),
    "hsplit 1-D indices": (lambda x: x.hsplit([1, 4])[1], M, [(5,)], {}),
    "vsplit": (lambda x: x.vsplit([2])[0] - x.vsplit([2])[1][:2], M, [(4, 3)], {}),
    "dsplit": (lambda x: x.dsplit(2)[1], M, [(2, 2, 4)], {}),
    "ravel": (lambda x: x.ravel(), M, [(2, 3)], {}),
    "ravel of a transpose": (lambda x: x.t().ravel(), M, [(2, 3)], {}),
    "adjoint mH": (lambda x: x.adjoint() * x.mH.exp(), M, [(2, 3, 4)], {}),
    "broadcast_to method": (lambda x: x.broadcast_to((3, -1, 4)), M, [(2, 1)], {}),
    # diagonals
    "diagonal": (lambda x: x.diagonal(), M, [(3, 4)], {}),
    "diagonal offset dims": (lambda x: x.diagonal(-1, 2, 0), M, [(4, 2, 3)], {}),
    "diagonal offset+": (lambda x: x.diagonal(2, -2, -1), M, [(2, 3, 5)], {}),
    "diag 1-D": (lambda x: x.diag(), M, [(4,)], {}),
    "diag 1-D offset": (lambda x: x.diag(-2), M, [(3,)], {}),
    "diag 2-D": (lambda x: x.diag(1), M, [(3, 4)], {}),
    "diag_embed": (lambda x: x.diag_embed(), M, [(2, 3)], {}),
    "diag_embed dims": (lambda x: x.diag_embed(1, 0, 2), M, [(2, 3)], {}),
    "trace": (lambda x: x.trace(), M, [(3, 4)], {}),
    # products
    "outer": (lambda a, b: a.outer(b), M, [(3,), (4,)], {}),
    "dot": (lambda a, b: a.dot(b), M, [(5,), (5,)], {}),
    "vdot": (lambda a, b: a.vdot(b), M, [(5,), (5,)], {}),
    "mv": (lambda a, v: a.mv(v), M, [(3, 4), (4,)], {}),
    "addmm": (lambda c, a, b: c.addmm(a, b, beta=0.5, alpha=2.0), M, [(4,), (3, 2), (2, 4)], {}),
    "addmm defaults": (lambda c, a, b: c.addmm(a, b), M, [(3, 4), (3, 2), (2, 4)], {}),
    "addmv": (lambda c, a, v: c.addmv(a, v, alpha=3.0), M, [(3,), (3, 2), (2,)], {}),
    "baddbmm": (lambda c, a, b: c.baddbmm(a, b, beta=-1.0), M, [(2, 3, 4), (2, 3, 5), (2, 5, 4)], {}),
    "cross dim": (lambda a, b: a.cross(b, dim=1), M, [(2, 3, 4), (2, 3, 4)], {}),
    "cross broadcast": (lambda a, b: a.cross(b, dim=-1), M, [(4, 3), (1, 3)], {}),
    "kron": (lambda a, b: a.kron(b), M, [(2, 3), (4,)], {}),
    # running ops and reductions
    "cumprod": (lambda x: x.cumprod(1), M, [(3, 5)], {}),
    "cumprod zeros": (lambda x: x.cumprod(-1), M,
                      [I([[0.5, 0.0, 2.0, 0.0, 3.0], [0.0, 1.5, -2.0, 1.0, 0.5], [1.0, 2.0, -1.0, 0.5, 0.0],
                          [0.0, 0.0, 1.0, 2.0, 3.0]])], {}),
    "cummax": (lambda x: x.cummax(0), M, [(5, 3)], {}),
    "cummin": (lambda x: x.cummin(-1), M, [(3, 5)], {}),
    "logsumexp": (lambda x: x.logsumexp(1), M, [(3, 4)], {}),
    "logsumexp dims keepdim": (lambda x: x.logsumexp((0, 2), keepdim=True), M, [(2, 3, 4)], {}),
    "nansum": (lambda x: x.nansum(1), M, [I([[1.0, np.nan, 2.0], [np.nan, np.nan, 0.5]])], {}),
    "nanmean": (lambda x: x.nanmean(), M, [I([[1.0, np.nan, 2.0], [3.0, np.nan, 0.5]])], {}),
    "median all": (lambda x: x.median(), M, [(3, 5)], {}),
    "median dim": (lambda x: x.median(1), M, [(3, 4)], {}),
    "median dim keepdim": (lambda x: x.median(0, keepdim=True), M, [(5, 3)], {}),
    "nanmedian dim": (lambda x: x.nanmedian(1), M,
                      [I([[1.0, np.nan, 3.0, 2.0], [np.nan, 4.0, 0.5, np.nan], [2.0, 1.0, 0.25, 3.0]])], {}),
    "kthvalue": (lambda x: x.kthvalue(2, 0), M, [(4, 3)], {}),
    "kthvalue keepdim": (lambda x: x.kthvalue(3, keepdim=True), M, [(2, 5)], {}),
    "amin": (lambda x: x.amin((0, 2)), M, [(2, 3, 4)], {}),
    "aminmax": (lambda x: tuple(x.aminmax(dim=1)), M, [(3, 4)], {}),
    "diff": (lambda x: x.diff(), M, [(3, 5)], {}),
    "diff n2 dim0": (lambda x: x.diff(2, 0), M, [(5, 3)], {}),
    "diff prepend append": (lambda x, p, a: x.diff(dim=1, prepend=p, append=a), M, [(3, 4), (3, 1), (3, 2)], {}),
    # top-level functions
    "var_mean": (lambda x: TI.var_mean(x, 1), lambda x: torch.var_mean(x, 1), [(3, 4)], {}),
    "std_mean correction": (lambda x: TI.std_mean(x, (0, 1), correction=0, keepdim=True),
                            lambda x: torch.std_mean(x, (0, 1), correction=0, keepdim=True), [(3, 4)], {}),
    "meshgrid": (lambda a, b: TI.meshgrid(a, b, indexing="ij"), lambda a, b: torch.meshgrid(a, b, indexing="ij"),
                 [(3,), (4,)], {}),
    "meshgrid xy": (lambda a, b, c: TI.meshgrid(a, b, c, indexing="xy"),
                    lambda a, b, c: torch.meshgrid(a, b, c, indexing="xy"), [(3,), (4,), (2,)], {}),
    "cartesian_prod": (lambda a, b: TI.cartesian_prod(a, b), lambda a, b: torch.cartesian_prod(a, b),
                       [(3,), (2,)], {}),
    "block_diag": (lambda a, b, c: TI.block_diag(a, b, c), lambda a, b, c: torch.block_diag(a, b, c),
                   [(), (3,), (2, 2)], {}),
    "broadcast_to": (lambda x: TI.broadcast_to(x, (2, -1, 4)), lambda x: torch.broadcast_to(x, (2, -1, 4)),
                     [(3, 1)], {}),
    "broadcast_tensors": (lambda a, b: TI.broadcast_tensors(a, b), lambda a, b: torch.broadcast_tensors(a, b),
                          [(3, 1), (4,)], {}),
}


@pytest.mark.parametrize("name", list(CASES))
def test_matches_torch_values_and_gradients(name):
    fn, fn_torch, inputs, options = CASES[name]
    check_op(fn, None if fn_torch is NO_TORCH else fn_torch or fn, inputs, **options)


# Ties: the gradient's split is torch's, but central differences cannot check it (the op is not differentiable
# there), so these compare with torch only.
TIES = {
    "median all ties": (lambda x: x.median(), [I([[1.0, 2.0, 2.0], [3.0, 2.0, 0.0]])]),
    "amin ties": (lambda x: x.amin(1), [I([[1.0, 1.0, 2.0], [0.5, 3.0, 0.5]])]),
    "mode": (lambda x: x.mode(1), [I([[1.0, 2.0, 2.0, 1.0, 3.0, 3.0], [5.0, 5.0, 4.0, 4.0, 4.0, 0.0]])]),
    "mode dim0 keepdim": (lambda x: x.mode(0, keepdim=True), [I([[1.0, 2.0], [1.0, 3.0], [2.0, 3.0]])]),
    "cummax ties": (lambda x: x.cummax(1), [I([[3.0, 1.0, 3.0, 2.0, 3.0]])]),
    "cummin ties": (lambda x: x.cummin(0), [I([3.0, 1.0, 3.0, 1.0, 0.5])]),
    "median nan": (lambda x: x.median(1), [I([[1.0, np.nan, 2.0], [3.0, 2.0, 0.0]])]),
    "cummax nan": (lambda x: x.cummax(0), [I([1.0, np.nan, 3.0, np.nan, 0.0])]),
}


@pytest.mark.parametrize("name", list(TIES))
def test_ties_and_nans_pick_torchs_index_and_gradient(name):
    fn, inputs = TIES[name]
    check_op(fn, fn, inputs, gradcheck_=False)


def test_scatter_multiply_has_torchs_values_and_refuses_backward():
    x, tx = _pair(3, 4, requires_grad=True)
    idx = np.array([[0, 1, 0, 2], [0, 1, 2, 2]])
    src, tsrc = _pair(2, 4)
    y = x.scatter(0, seqlab.tensor(idx), src, reduce="multiply")
    with warnings.catch_warnings():  # torch's deprecation of reduce= (once per process)
        warnings.simplefilter("ignore")
        ty = tx.scatter(0, torch.tensor(idx), tsrc, reduce="multiply")
    same_as_torch(y, ty)
    with pytest.raises(RuntimeError, match="not implemented"):
        y.sum().backward()


def test_logsumexp_is_stable_and_handles_all_minus_inf():
    x, tx = seqlab.tensor([[1000.0, 1000.0], [-1000.0, -999.0]]), torch.tensor([[1000.0, 1000.0], [-1000.0, -999.0]])
    same_as_torch(x.logsumexp(1), tx.logsumexp(1))
    inf = seqlab.tensor([[-np.inf, -np.inf]]).logsumexp(1)
    assert inf.item() == -np.inf
    same_as_torch(seqlab.tensor([1, 2, 3]).logsumexp(0), torch.tensor([1, 2, 3]).logsumexp(0))  # ints: float32


def test_cumprod_of_integers_is_int64_and_gradient_at_a_single_zero():
    same_as_torch(seqlab.tensor([1, 2, 3], dtype=np.int32).cumprod(0), torch.tensor([1, 2, 3], dtype=torch.int32)
                  .cumprod(0))
    x = seqlab.tensor([2.0, 0.0, 3.0, 4.0], requires_grad=True)
    x.cumprod(0).sum().backward()
    # d/dx1 of x0 + x0x1 + x0x1x2 + x0x1x2x3 at x1 = 0: x0 + x0x2 + x0x2x3
    np.testing.assert_allclose(x.grad, [1.0, 2.0 + 6.0 + 24.0, 0.0, 0.0])


@pytest.mark.parametrize("call", ["cummax(1)", "cummin(0)", "median(1)", "nanmedian(0)", "kthvalue(2, 1)",
                                  "mode(1)", "aminmax(dim=0)"])
def test_named_results_as_torchs_return_types(call):
    a = RNG.standard_normal((3, 4))  # noqa: F841  (read by the eval'd calls)
    s, t = eval(f"seqlab.tensor(a).{call}"), eval(f"torch.tensor(a).{call}")
    names = ("min", "max") if call.startswith("aminmax") else ("values", "indices")
    for name in names:
        same_as_torch(getattr(s, name), getattr(t, name))
    assert f"return_types.{call.split('(')[0]}(" in repr(s)


# ---- 2. indices, counts and constructors: no gradient ----------------------------------------------------------
def _both(fn_s, fn_t, *arrays):
    """fn on seqlab tensors and on torch tensors of the same arrays; every output compared."""
    s = fn_s(*[seqlab.tensor(a) for a in arrays])
    t = fn_t(*[torch.tensor(a) for a in arrays])
    s, t = (s, t) if isinstance(t, (tuple, list)) else ((s,), (t,))
    assert len(s) == len(t)
    for a, b in zip(s, t):
        same_as_torch(a, b)


INT = I([[3, 0, 1], [0, 2, 3], [3, 1, 1]])
NOGRAD = {
    "nonzero": (lambda x: x.nonzero(), INT),
    "nonzero as_tuple": (lambda x: x.nonzero(as_tuple=True), INT),
    "nonzero 0-d": (lambda x: x.nonzero(), I(5.0)),
    "nonzero 0-d zero as_tuple": (lambda x: x.nonzero(as_tuple=True), I(0.0)),
    "argwhere": (lambda x: x.argwhere(), I([[0.0, 1.5], [2.0, 0.0]])),
    "unique": (lambda x: x.unique(), INT),
    "unique inverse counts": (lambda x: x.unique(return_inverse=True, return_counts=True), INT),
    "unique dim": (lambda x: x.unique(dim=0, return_inverse=True, return_counts=True),
                   I([[3, 1], [1, 2], [3, 1]])),
    "unique nan": (lambda x: x.unique(return_counts=True), I([2.0, np.nan, 1.0, np.nan, 2.0])),
    "count_nonzero": (lambda x: x.count_nonzero(), INT),
    "count_nonzero dims": (lambda x: x.count_nonzero((0, -1)), INT.reshape(3, 3, 1)),
    "count_nonzero dim": (lambda x: x.count_nonzero(1), INT),
    "bincount": (lambda x: x.bincount(), I([0, 1, 1, 4])),
    "bincount minlength": (lambda x: x.bincount(minlength=7), I([0, 1, 1, 4])),
    "bincount empty": (lambda x: x.bincount(minlength=3), I([], np.int64)),
    "histc": (lambda x: x.histc(bins=4, min=0, max=3), I([1.0, 2.0, 1.0, 3.0, -1.0, 0.1], np.float32)),
    "histc data range": (lambda x: x.histc(bins=5), I([0.0, 0.5, 1.0, 2.0, 4.0])),
    "median int": (lambda x: x.median(), I([4, 1, 3, 2])),
    "median int dim": (lambda x: x.median(0), INT),
    "diff bool": (lambda x: x.diff(), I([True, False, False, True])),
    "diff int": (lambda x: x.diff(dim=0), INT),
    "trace int": (lambda x: x.trace(), INT),
    "kron int": (lambda a: a.kron(a), I([[1, 2], [3, 4]])),
    "take int": (lambda a: a.take(torch.tensor([0, -1]) if isinstance(a, torch.Tensor) else seqlab.tensor([0, -1])),
                 INT),
}


@pytest.mark.parametrize("name", list(NOGRAD))
def test_indices_and_counts_equal_torchs(name):
    fn, array = NOGRAD[name]
    _both(fn, fn, array)


def test_bincount_weights_dtype_as_torch():
    x = I([0, 1, 1, 3])
    for w in (I([0.5, 1, 1, 2], np.float32), I([0.5, 1, 1, 2]), I([1, 2, 3, 4])):
        _both(lambda a, b: a.bincount(b), lambda a, b: a.bincount(b), x, w)


@pytest.mark.parametrize("right", [False, True])
def test_searchsorted_and_bucketize(right):
    seq, vals = I([1.0, 3.0, 3.0, 5.0]), I([[0.0, 3.0], [9.0, 5.0]])
    _both(lambda s, v: TI.searchsorted(s, v, right=right), lambda s, v: torch.searchsorted(s, v, right=right),
          seq, vals)
    rows = I([[1, 3, 5], [2, 4, 6]])
    _both(lambda s, v: TI.searchsorted(s, v, right=right, out_int32=True),
          lambda s, v: torch.searchsorted(s, v, right=right, out_int32=True), rows, I([[3, 0], [7, 4]]))
    _both(lambda v, b: TI.bucketize(v, b, right=right), lambda v, b: torch.bucketize(v, b, right=right),
          I([[1, 3], [5, 9]]), I([1, 3, 5]))
    same_as_torch(TI.searchsorted(seqlab.tensor(seq), 3.0, side="right"),
                  torch.searchsorted(torch.tensor(seq), 3.0, side="right"))
    order = I([2, 0, 1])
    _both(lambda s, o: TI.searchsorted(s, 4.0, sorter=o), lambda s, o: torch.searchsorted(s, 4.0, sorter=o),
          I([5.0, 1.0, 3.0]), order)


def test_linspace_and_logspace():
    same_as_torch(TI.linspace(0, 1, 5), torch.linspace(0, 1, 5))
    same_as_torch(TI.linspace(-2, 3.5, 7, dtype=np.float64), torch.linspace(-2, 3.5, 7, dtype=torch.float64))
    same_as_torch(TI.linspace(0, 10, 5, dtype=np.int64), torch.linspace(0, 10, 5, dtype=torch.int64))
    same_as_torch(TI.linspace(3, 3, 1), torch.linspace(3, 3, 1))
    same_as_torch(TI.logspace(0, 2, 3), torch.logspace(0, 2, 3))
    same_as_torch(TI.logspace(1, 3, 4, base=2.0, dtype=np.float64),
                  torch.logspace(1, 3, 4, base=2.0, dtype=torch.float64))
    assert TI.linspace(0, 1, 4, requires_grad=True).requires_grad


def test_top_level_functions_call_the_methods():
    x, tx = _pair(4, 6)
    i = np.array([3, 0])
    same_as_torch(TI.index_select(x, 1, seqlab.tensor(i)), torch.index_select(tx, 1, torch.tensor(i)))
    same_as_torch(TI.gather(x, 0, seqlab.tensor([[1, 2]])), torch.gather(tx, 0, torch.tensor([[1, 2]])))
    for s, t in zip(TI.split(x, 4, 1), torch.split(tx, 4, 1)):
        same_as_torch(s, t)
    for s, t in zip(TI.chunk(x, 3, 0), torch.chunk(tx, 3, 0)):
        same_as_torch(s, t)
    assert len(TI.unbind(x, 1)) == 6
    same_as_torch(TI.flip(x, (0,)), torch.flip(tx, (0,)))
    same_as_torch(TI.roll(x, 2, 1), torch.roll(tx, 2, 1))
    same_as_torch(TI.tile(x, (2,)), torch.tile(tx, (2,)))
    same_as_torch(TI.diff(x, 1, 0), torch.diff(tx, 1, 0))
    same_as_torch(TI.amax(x, 1), torch.amax(tx, 1))
    same_as_torch(TI.cumprod(x, 1), torch.cumprod(tx, 1))
    same_as_torch(TI.narrow(x, 0, 1, 2), torch.narrow(tx, 0, 1, 2))
    for name, args in (("tensor_split", (3, 1)), ("hsplit", ([2],)), ("vsplit", (2,)), ("swapaxes", (0, 1)),
                       ("swapdims", (1, 0)), ("ravel", ()), ("adjoint", ())):
        got, want = getattr(seqlab, name)(x, *args), getattr(torch, name)(tx, *args)
        for s, t in zip(*((got, want) if isinstance(want, tuple) else ((got,), (want,)))):
            same_as_torch(s, t)
    assert set(TI.TOPLEVEL) <= set(TI.__all__)
    missing = [n for n in TI.TOPLEVEL if not hasattr(torch, n)]
    assert not missing, missing  # every name is torch's
    with pytest.raises(TypeError, match="must be Tensor"):
        TI.trace([[1, 2], [3, 4]])


# ---- 3. in-place versions ---------------------------------------------------------------------------------------
INPLACE = {
    "scatter_": lambda x, m: x.scatter_(1, m.tensor([[0], [2], [1]]), m.tensor([[5.0], [6.0], [7.0]])),
    "scatter_ value": lambda x, m: x.scatter_(0, m.tensor([[2, 1, 0]]), 1.5),
    "scatter_add_": lambda x, m: x.scatter_add_(0, m.tensor([[0, 0, 1], [0, 2, 1]]), m.ones(2, 3)),
    "index_add_": lambda x, m: x.index_add_(0, m.tensor([2, 2]), m.ones(2, 3), alpha=2),
    "index_copy_": lambda x, m: x.index_copy_(1, m.tensor([2, 0]), m.zeros(3, 2)),
    "index_fill_": lambda x, m: x.index_fill_(1, m.tensor([1]), -1.0),
    "index_put_": lambda x, m: x.index_put_((m.tensor([0, 0]), m.tensor([1, 1])), m.tensor([1.0, 2.0]),
                                            accumulate=True),
    "put_": lambda x, m: x.put_(m.tensor([0, -1]), m.tensor([9.0, 8.0])),
    "masked_scatter_": lambda x, m: x.masked_scatter_(m.tensor([True, False, True]), m.arange(6.0)),
}


@pytest.mark.parametrize("name", list(INPLACE))
def test_in_place_versions_as_torch(name):
    a = RNG.standard_normal((3, 3)).astype(np.float32)
    s, t = seqlab.tensor(a.copy()), torch.tensor(a.copy())
    view = s[0]  # a view sees the change, as torch's
    out = INPLACE[name](s, seqlab)
    INPLACE[name](t, torch)
    assert out is s
    same_as_torch(s, t)
    np.testing.assert_array_equal(view.numpy(), t[0].numpy())


def test_in_place_refuses_graph_tensors_and_a_saved_array_changed_later():
    leaf = seqlab.randn(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="index_fill_"):
        leaf.index_fill_(0, seqlab.tensor([0]), 1.0)
    src = seqlab.randn(1, requires_grad=True)
    with pytest.raises(RuntimeError, match="the value requires grad"):
        seqlab.zeros(3).index_copy_(0, seqlab.tensor([1]), src)
    with seqlab.no_grad():
        leaf.index_fill_(0, seqlab.tensor([0]), 1.0)
    assert leaf.data[0] == 1.0
    w = seqlab.randn(3)
    y = (leaf * w).sum()  # Mul saved w
    w.scatter_(0, seqlab.tensor([1]), seqlab.tensor([0.0]))
    with pytest.raises(RuntimeError, match="changed in place"):
        y.backward()


@pytest.mark.parametrize("offset,dim1,dim2", [(0, 0, 1), (1, -1, 0), (-1, 1, 2), (4, 0, 2)])
def test_diagonal_is_a_view_and_diag_a_copy_as_torchs(offset, dim1, dim2):
    a = RNG.standard_normal((3, 4, 5)).astype(np.float32)
    s, t = seqlab.tensor(a.copy()), torch.tensor(a.copy())
    for lib, x in ((seqlab, s), (torch, t)):
        d = x.diagonal(offset, dim1, dim2)
        d.mul_(3)  # writes into x
        d[..., :1] = 7.0
        lib.diagonal(x[1:], offset, dim1, dim2).add_(1)
        x.permute(2, 0, 1).diagonal(offset).zero_()  # a view of a view
        m = x[0]
        m.diag(offset).fill_(-5)  # diag copies: x unchanged
    same_as_torch(s, t)
    assert not np.array_equal(s.numpy(), a)
    assert s.diagonal(offset + 9, dim1, dim2).shape == t.diagonal(offset + 9, dim1, dim2).shape  # empty
    leaf = seqlab.tensor(a, requires_grad=True)
    with pytest.raises(RuntimeError, match="fill_"):
        leaf.diagonal().fill_(0)  # as every view of a tensor in a graph (seqlab records no in-place ops)
    with seqlab.no_grad():
        leaf.diagonal(offset, dim1, dim2).fill_(0)
    with torch.no_grad():
        t = torch.tensor(a, requires_grad=True)
        t.diagonal(offset, dim1, dim2).fill_(0)
    same_as_torch(leaf, t)


def test_diagonal_of_an_array_saved_for_backward_is_caught_when_written():
    x = seqlab.randn(3, 3, requires_grad=True)
    w = seqlab.randn(3, 3)
    y = (x * w).sum()  # Mul saved w
    w.diagonal().fill_(0)
    with pytest.raises(RuntimeError, match="changed in place"):
        y.backward()


def test_copies_and_views_as_torchs():
    """flip and repeat copy, type_as to its own dtype is the tensor itself, ravel of a contiguous tensor and one
    element (a 0-d tensor, where NumPy would hand a copy) are views: a write into the result reaches the tensor
    exactly when torch's does."""
    a = RNG.standard_normal((1, 3, 4)).astype(np.float32)
    takes = {
        "flip": lambda x: x.flip(1), "flip 0-d": lambda x: x[0, 0, 0].flip(()), "fliplr": lambda x: x[0].fliplr(),
        "flipud": lambda x: x.flipud(), "repeat ones": lambda x: x.repeat(1, 1, 1),
        "repeat a size-1 dim": lambda x: x.repeat(2, 1, 1), "repeat new dim": lambda x: x.repeat(2, 1, 1, 1),
        "tile": lambda x: x.tile(1), "type_as": lambda x: x.type_as(x),
        "type_as float64": lambda x: x.type_as(x.double()), "ravel": lambda x: x.ravel(),
        "ravel of a transpose": lambda x: x[0].t().ravel(), "hsplit": lambda x: x.hsplit(3)[1],
        "one element": lambda x: x[0, 1, 2], "one element, row by row": lambda x: x[0][2][3],
        "one element of a view": lambda x: x.view(12)[5], "one element by numpy ints": lambda x: x[np.int64(0), 1, -1],
    }
    for name, take in takes.items():
        s, t = seqlab.tensor(a.copy()), torch.tensor(a.copy())
        for x in (s, t):
            take(x).fill_(7.0)
        same_as_torch(s, t)
        assert np.array_equal(s.numpy(), a) == np.array_equal(t.numpy(), a), name


def test_fill_diagonal_as_torchs():
    for shape, wrap in (((5, 3), True), ((5, 3), False), ((3, 5), False), ((3, 3, 3), False)):
        s, t = seqlab.zeros(*shape), torch.zeros(*shape)
        assert s.fill_diagonal_(2.5, wrap=wrap) is s
        t.fill_diagonal_(2.5, wrap=wrap)
        same_as_torch(s, t)
    with pytest.raises(ValueError, match="equal length"):
        seqlab.zeros(2, 3, 4).fill_diagonal_(1)
    with pytest.raises(RuntimeError, match="fill_diagonal_"):
        seqlab.zeros(2, 2, requires_grad=True).fill_diagonal_(1)
    with pytest.raises(ValueError, match="dimension 3 is not divisible by the split_size 2"):
        seqlab.zeros(2, 3).hsplit(2)
    with pytest.raises(ValueError, match="vsplit requires a tensor with at least 2 dimension"):
        seqlab.zeros(4).vsplit(2)
    with pytest.raises(ValueError, match="dsplit requires a tensor with at least 3"):
        seqlab.zeros(4, 2).dsplit([1])


# ---- 4. errors --------------------------------------------------------------------------------------------------
def test_errors_name_the_values():
    x = seqlab.randn(3, 4)
    with pytest.raises(IndexError, match="index_select.*out of range"):
        x.index_select(0, seqlab.tensor([3]))
    with pytest.raises(IndexError, match="index_select.*out of range"):
        x.index_select(1, seqlab.tensor([-1]))  # torch takes no negative index here
    with pytest.raises(TypeError, match="integers"):
        x.index_select(0, seqlab.tensor([0.0]))
    with pytest.raises(TypeError, match="integers"):
        x.scatter(0, seqlab.tensor([[True]]), 1.0)
    with pytest.raises(IndexError, match="index 5 is out of bounds for dimension 0 with size 3"):
        x.scatter(0, seqlab.tensor([[5]]), seqlab.ones(1, 1))
    with pytest.raises(ValueError, match="no larger than self"):
        x.scatter(0, seqlab.tensor([[0, 1, 0, 1, 2]]), seqlab.ones(1, 5))
    with pytest.raises(TypeError, match="same dtype"):
        x.scatter(0, seqlab.tensor([[0]]), seqlab.ones(1, 1, dtype=np.float64))
    with pytest.raises(IndexError, match="tried to access index 12 on a tensor of 12 elements"):
        x.take(seqlab.tensor([12]))
    with pytest.raises(IndexError, match=r"select\(\): index 4 out of range for tensor of size \[3, 4\]"):
        x.select(1, 4)
    with pytest.raises(ValueError, match=r"start \(2\) \+ length \(3\) exceeds dimension size \(4\)"):
        x.narrow(1, 2, 3)
    with pytest.raises(IndexError, match="Dimension out of range"):
        x.roll(1, 2)
    with pytest.raises(ValueError, match="shifts and dimensions must align"):
        x.roll((1, 2), 0)
    with pytest.raises(ValueError, match="1D or 2D"):
        seqlab.randn(2, 2, 2).diag()
    with pytest.raises(ValueError, match="expected a matrix"):
        seqlab.randn(3).trace()
    with pytest.raises(ValueError, match="cannot be identical"):
        x.diagonal(0, 1, -1)
    with pytest.raises(ValueError, match="expects 1-D tensors"):
        x.dot(x)
    with pytest.raises(TypeError, match="same dtype"):
        seqlab.randn(3).dot(seqlab.tensor([1, 2, 3]))
    with pytest.raises(ValueError, match=r"mv\(\): size mismatch"):
        x.mv(seqlab.randn(3))
    with pytest.raises(ValueError, match="must have length 3"):
        x.cross(x, dim=1)
    with pytest.raises(ValueError, match=r"index_add\(\): source has shape \(2, 4\)"):
        x.index_add(0, seqlab.tensor([0]), seqlab.ones(2, 4))
    with pytest.raises(ValueError, match="source has 1 elements"):
        x.masked_scatter(seqlab.tensor([True, True, False, False]), seqlab.ones(1))
    with pytest.raises(ValueError, match="maximum size for tensor at dimension 1 is 4 but size is 5"):
        x.unfold(1, 5, 1)
    with pytest.raises(ValueError, match="don't multiply up"):
        x.unflatten(1, (3, 2))
    with pytest.raises(ValueError, match="not expandable"):
        x.sum_to_size(2, 4)
    with pytest.raises(ValueError, match="kthvalue.*out of range"):
        x.kthvalue(5, 1)
    with pytest.raises(ValueError, match="non-negative integral"):
        seqlab.tensor([0, -1]).bincount()
    with pytest.raises(TypeError, match="floating point"):
        seqlab.tensor([1, 2]).nanmean()
    with pytest.raises(IndexError, match="too many indices"):
        seqlab.zeros(3).index_put_((seqlab.tensor([0]), seqlab.tensor([0])), seqlab.tensor(1.0))
    with pytest.raises(ValueError, match="cannot be broadcast"):
        x.index_put((seqlab.tensor([0, 1]),), seqlab.ones(3))
    with pytest.raises(ValueError, match="boundaries tensor must be 1 dimension"):
        TI.bucketize(seqlab.tensor([1]), seqlab.tensor([[1, 2]]))
    with pytest.raises(TypeError, match="same dtype"):
        TI.meshgrid(seqlab.tensor([1, 2]), seqlab.tensor([1.0]))


# ---- 5. the device path ------------------------------------------------------------------------------------------
def test_on_the_cupy_stand_in(monkeypatch):
    """'cuda' is tests/cupy_stand_in.py's CPU stand-in for CuPy: no NumPy-only call, no host array mixed in, and
    the same values and gradients as on the CPU. Index tensors given on the host, as users do."""
    cupy_stand_in.install(monkeypatch)
    a = RNG.standard_normal((4, 5))
    idx = np.array([[0, 1, 3, 2, 0]])

    def run(x):
        host = seqlab.tensor
        outs = [
            x.index_select(1, host([4, 0, 0])), x.masked_select(host([True, False, True, True, False])),
            x.masked_scatter(host([True, False, True, True, False]), x.flip(0)), x.take(host([[0, -1], [7, 3]])),
            x.take_along_dim(host([[1], [0], [4], [2]]), 1), x.scatter(0, host(idx), x * 2),
            x.scatter_add(0, host(idx), x), x.index_add(1, host([0, 0]), x[:, :2], alpha=2),
            x.index_copy(0, host([3, 1]), x[:2]), x.index_fill(1, host([1]), -1.0),
            x.index_put((host([0, 3]), host([1, 1])), x[0, :2], accumulate=True), x.put(host([2, 2]), x[1, :2]),
            x.roll((1, 2), (0, 1)), x.unfold(1, 3, 2), x.diagonal(1), x[0].diag(1), x.diag_embed(), x.tile(2),
            x.narrow(1, 1, 3), x.select(0, -1), x.ravel(), x.hsplit([2])[1], x.repeat(1, 1), x.mH,
            x.unflatten(1, (5, 1)), x.movedim(0, 1), x.sum_to_size(1, 5),
            x[:3, :3].trace(), x[0].outer(x[1]), x[0].dot(x[1]), x[:, :4].mv(x[0, :4]),
            x[:, :3].addmm(x[:, :2], x[:2, :3], beta=0.5), x[:, :3].cross(x[:, 1:4], dim=1), x[:2, :2].kron(x[0]),
            x.cumprod(1), x.cummax(0)[0], x.cummin(1)[0], x.logsumexp(1), x.nansum(0), x.nanmean(1), x.median(),
            x.median(1)[0], x.nanmedian(0)[0], x.kthvalue(2, 1)[0], x.mode(0)[0], x.amin(1), x.aminmax()[1],
            x.diff(2, 1, prepend=x[:, :1]), TI.var_mean(x, 1)[0], TI.block_diag(x[0], x[:2, :2]),
            TI.cartesian_prod(x[0, :2], x[1, :3]), TI.meshgrid(x[0], x[1])[1], TI.broadcast_to(x[0], (2, 5)),
        ]
        ints = [x.nonzero(), x.unique(return_inverse=True, return_counts=True)[1], x.count_nonzero(1),
                (x > 0).long().reshape(-1).bincount(), x.histc(5), TI.searchsorted(x[0].sort()[0], x[1]),
                TI.bucketize(x[1], host([-1.0, 0.0, 1.0])), x.cummax(1)[1], x.mode(1)[1], x.median(0)[1],
                x.unique(dim=1)]
        total = sum((o.sum() for o in outs), seqlab.tensor(0.0, dtype=np.float64, device=x.device))
        total.backward()
        return [o.data for o in outs + ints], x.grad

    cpu_outs, cpu_grad = run(seqlab.tensor(a, requires_grad=True))
    x = seqlab.tensor(a, requires_grad=True).to("cuda")
    x = seqlab.Tensor(x.data, requires_grad=True)  # a leaf on the device
    dev_outs, dev_grad = run(x)
    assert backend.device_of(dev_grad) == "cuda"
    for k, (c, d) in enumerate(zip(cpu_outs, dev_outs)):
        assert backend.device_of(d) == "cuda", k
        np.testing.assert_allclose(backend.to_numpy(d), c, rtol=1e-12, atol=1e-12, err_msg=str(k))
    np.testing.assert_allclose(backend.to_numpy(dev_grad), cpu_grad, rtol=1e-12, atol=1e-12)
    z = seqlab.zeros(2, 3, device="cuda")  # in place on the device, indices from the host
    z.index_put_((seqlab.tensor([1]), seqlab.tensor([2])), seqlab.tensor([5.0]))
    z.scatter_(1, seqlab.tensor([[0], [1]]), 2.0)
    np.testing.assert_array_equal(backend.to_numpy(z.data), [[2, 0, 0], [0, 2, 5]])
    assert TI.linspace(0, 1, 3, device="cuda").device == "cuda"
