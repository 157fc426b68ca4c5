"""seqlab.testing.assert_close and make_tensor, held to torch.testing's on the same inputs: the same verdicts,
the same messages (with seqlab's names where torch writes torch.float32 or torch.Size)."""
import math

import numpy as np
import pytest
import torch

import seqlab
from seqlab.testing import assert_close, make_tensor

F32 = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], dtype=np.float32)


class NP:
    """Marks a NumPy array that both libraries get as it is (not as a tensor)."""

    def __init__(self, arr):
        self.arr = arr


def _convert(value, lib):
    if isinstance(value, NP):
        return value.arr.copy()
    if isinstance(value, np.ndarray):
        return seqlab.from_numpy(value.copy()) if lib is seqlab else torch.from_numpy(value.copy())
    if isinstance(value, (list, tuple)):
        return type(value)(_convert(v, lib) for v in value)
    if isinstance(value, dict):
        return {k: _convert(v, lib) for k, v in value.items()}
    return value


def _outcome(lib, check, actual, expected, kwargs):
    try:
        check(_convert(actual, lib), _convert(expected, lib), **kwargs)
    except (AssertionError, ValueError, TypeError) as e:
        msg = str(e)
        if lib is torch:
            msg = msg.replace("torch.Size(", "seqlab.Size(").replace("torch.", "seqlab.")
        return type(e), msg
    return None


def _bumped(arr, where, by):
    out = arr.copy()
    for idx in where:
        out[idx] += by
    return out


CASES = {
    "equal_f32": (F32, F32, {}),
    "within_default_tol": (F32 + np.float32(1e-6), F32, {}),
    "two_of_six": (_bumped(F32, [(0, 1), (1, 2)], 0.5), F32, {}),
    "relative_beats_absolute": (_bumped(F32, [(0, 0)], 0.5), _bumped(F32, [(1, 2)], 100.0), {}),
    "f64_tight": (F32.astype(np.float64) + 1e-6, F32.astype(np.float64), {}),
    "f64_ok": (F32.astype(np.float64) + 1e-8, F32.astype(np.float64), {}),
    "f16": (F32.astype(np.float16) + np.float16(0.01), F32.astype(np.float16), {}),
    "nan_vs_nan": (np.array([1.0, np.nan]), np.array([1.0, np.nan]), {}),
    "nan_equal_nan": (np.array([1.0, np.nan]), np.array([1.0, np.nan]), {"equal_nan": True}),
    "nan_vs_number": (np.array([1.0, np.nan, 3.0]), np.array([1.0, 2.0, 3.0]), {}),
    "inf_same": (np.array([np.inf, -np.inf]), np.array([np.inf, -np.inf]), {}),
    "inf_vs_big": (np.array([np.inf, 1.0]), np.array([1e300, 1.0]), {}),
    "zero_expected": (np.array([0.5, 0.0], np.float32), np.array([0.0, 0.0], np.float32), {}),
    "int64": (np.array([1, 2, 3]), np.array([1, 5, 3]), {}),
    "int64_rel": (np.array([[1, 2], [4, 10]]), np.array([[1, 3], [4, 7]]), {}),
    "int32_ok": (np.array([1, 2], np.int32), np.array([1, 2], np.int32), {}),
    "bool": (np.array([True, False, True]), np.array([True, True, True]), {}),
    "scalar_f32": (np.array(1.5, np.float32), np.array(1.0, np.float32), {}),
    "scalar_int": (np.array(3), np.array(7), {}),
    "dtype_mismatch": (F32, F32.astype(np.float64), {}),
    "dtype_unchecked": (F32, F32.astype(np.float64), {"check_dtype": False}),
    "dtype_unchecked_fail": (F32 + np.float32(0.1), F32.astype(np.float64), {"check_dtype": False}),
    "int_float_unchecked": (np.array([1, 2]), np.array([1.0, 2.5], np.float32), {"check_dtype": False}),
    "shape_mismatch": (F32, F32.T.copy(), {}),
    "custom_tol_pass": (F32 + np.float32(0.01), F32, {"rtol": 0.0, "atol": 0.02}),
    "custom_tol_fail": (F32 + np.float32(0.01), F32, {"rtol": 1e-3, "atol": 1e-3}),
    "exact": (F32 + np.float32(1e-6), F32, {"rtol": 0, "atol": 0}),
    "rtol_only": (F32, F32, {"rtol": 1e-3}),
    "atol_only": (F32, F32, {"atol": 1e-3}),
    "list_of_tensors": ([F32, F32], [F32, _bumped(F32, [(1, 1)], 1.0)], {}),
    "nested_dict": ({"a": F32, "b": [F32, np.array([1, 2])]}, {"a": F32, "b": [F32, np.array([1, 3])]}, {}),
    "dict_keys": ({"a": F32, "c": F32}, {"a": F32, "b": F32}, {}),
    "length": ([F32, F32], [F32], {}),
    "length_beats_earlier_failure": ([F32 + 1, [F32]], [F32, [F32, F32]], {}),
    "python_floats": (1.0, 1.0 + 1e-3, {}),
    "python_floats_ok": (1.0, 1.0 + 1e-8, {}),
    "python_int_float": (1, 1.0, {}),
    "python_int_float_unchecked": (1, 1.0, {"check_dtype": False}),
    "python_ints": (3, 4, {}),
    "python_nan": (math.nan, math.nan, {"equal_nan": True}),
    "numpy_scalars": (np.float64(2.0), np.float64(2.5), {}),
    "numpy_arrays": (NP(F32), NP(_bumped(F32, [(0, 2)], 1.0)), {}),
    "numpy_arrays_ok": (NP(F32), NP(F32.copy()), {}),
    "bools": (True, False, {}),
    "none": (None, 1.0, {}),
    "nones": (None, None, {}),
    "msg_str": (F32 + 1, F32, {"msg": "custom"}),
    "msg_callable": ([F32 + 1], [F32], {"msg": lambda m: f"Header\n\n{m}\n\nFooter"}),
    "msg_str_nested": ([F32 + 1], [F32], {"msg": "plain"}),
    "empty": (np.zeros((0, 3), np.float32), np.zeros((0, 3), np.float32), {}),
}


@pytest.mark.parametrize("name", list(CASES))
def test_same_verdict_and_message_as_torch(name):
    actual, expected, kwargs = CASES[name]
    ours = _outcome(seqlab, assert_close, actual, expected, kwargs)
    theirs = _outcome(torch, torch.testing.assert_close, actual, expected, kwargs)
    assert ours == theirs


def test_the_documented_message():
    actual = seqlab.tensor([[1.0, 2.5, 3.0], [4.0, 5.0, 6.5]])
    with pytest.raises(AssertionError) as err:
        assert_close(actual, seqlab.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]))
    assert str(err.value) == ("Tensor-likes are not close!\n\nMismatched elements: 2 / 6 (33.3%)\n"
                              "Greatest absolute difference: 0.5 at index (0, 1) (up to 1e-05 allowed)\n"
                              "Greatest relative difference: 0.25 at index (0, 1) (up to 1.3e-06 allowed)")


def test_types_that_do_not_pair():
    with pytest.raises(TypeError, match=r"^No comparison pair was able to handle inputs of type "
                                        r"<class 'seqlab\.autograd\.tensor\.Tensor'> and <class 'numpy\.ndarray'>\.$"):
        assert_close(seqlab.ones(2), np.ones(2, np.float32))
    with pytest.raises(TypeError, match="^No comparison pair"):
        assert_close(seqlab.ones(2), [1.0, 1.0])
    p = seqlab.nn.Parameter(seqlab.ones(2))
    assert_close(p, seqlab.ones(2))  # a subclass pairs with its base class ...
    with pytest.raises(TypeError, match="^No comparison pair"):
        assert_close(p, seqlab.ones(2), allow_subclasses=False)  # ... unless told not to


def test_stride_and_requires_grad():
    a = seqlab.from_numpy(np.ascontiguousarray(F32.T))
    b = seqlab.from_numpy(F32).t()
    assert_close(a, b)
    with pytest.raises(AssertionError, match=r"^The values for attribute 'stride\(\)' do not match: \(2, 1\) != "
                                             r"\(1, 3\)\.$"):
        assert_close(a, b, check_stride=True)
    ta, tb = torch.from_numpy(np.ascontiguousarray(F32.T)), torch.from_numpy(F32).t()
    with pytest.raises(AssertionError, match=r"\(2, 1\) != \(1, 3\)"):
        torch.testing.assert_close(ta, tb, check_stride=True)
    assert_close(seqlab.ones(2, requires_grad=True), seqlab.ones(2))  # requires_grad is not compared (torch)


# ---- make_tensor -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype, low, high", [(seqlab.float32, -9, 9), (seqlab.float64, -9, 9),
                                              (seqlab.int64, -9, 10), (seqlab.uint8, 0, 10), (seqlab.bool, 0, 2)])
def test_make_tensor_default_ranges(dtype, low, high):
    t = make_tensor(40, 50, dtype=dtype, device="cpu")
    assert t.shape == (40, 50) and t.dtype == dtype and not t.requires_grad
    values = t.numpy().astype(np.float64)
    assert values.min() >= low and values.max() < high
    assert values.max() - values.min() >= (high - 1 - low) * 0.8  # spread over the range


def test_make_tensor_options():
    seqlab.manual_seed(3)
    a = make_tensor((2, 3), dtype=seqlab.float64, device="cpu", low=-1, high=1, requires_grad=True)
    seqlab.manual_seed(3)
    b = make_tensor(2, 3, dtype=seqlab.float64, device="cpu", low=-1, high=1)
    assert a.requires_grad and a.is_leaf and np.array_equal(a.numpy(), b.numpy())
    assert (a.numpy() >= -1).all() and (a.numpy() < 1).all()
    nc = make_tensor(3, 4, dtype=seqlab.float32, device="cpu", noncontiguous=True)
    assert nc.shape == (3, 4) and not nc.is_contiguous()
    assert make_tensor(1, dtype=seqlab.float32, device="cpu", noncontiguous=True).is_contiguous()  # one element
    z = make_tensor(200, dtype=seqlab.int64, device="cpu", low=0, high=2, exclude_zero=True)
    assert (z.numpy() == 1).all()
    zf = make_tensor(5, dtype=seqlab.float32, device="cpu", low=0, high=1e-45, exclude_zero=True)
    assert (zf.numpy() > 0).all()
    assert make_tensor(dtype=seqlab.float32, device="cpu").shape == ()


def test_make_tensor_errors_as_torch():
    for lib, make in ((seqlab, make_tensor), (torch, torch.testing.make_tensor)):
        with pytest.raises(ValueError, match="^`requires_grad=True` is not supported for boolean and integral"):
            make(2, dtype=lib.int64, device="cpu", requires_grad=True)
        with pytest.raises(ValueError, match="^`low` must be less than `high`, but got 3 >= 1$"):
            make(2, dtype=lib.int64, device="cpu", low=3, high=1)
        with pytest.raises(ValueError, match="^`low` and `high` cannot be NaN"):
            make(2, dtype=lib.float32, device="cpu", low=math.nan)
        with pytest.raises(ValueError, match=r"^The value interval specified by `low` and `high` is \[-5, -1\), "
                                             r"but (torch|seqlab)\.uint8 only supports \[0, 256\)$"):
            make(2, dtype=lib.uint8, device="cpu", low=-5, high=-1)
