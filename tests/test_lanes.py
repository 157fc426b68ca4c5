"""The short attention kernels' row passes on whole vectors (`_numba_kernels._lanes_*`, `_weights_row`) and
their read-ahead of a batch row's memory (`_span`, `_sweeps`, `_read_ahead`): each against NumPy in
float64, the lanes past a row's visible keys masked whatever they hold, nothing written outside the
chunks named, and the sweeps reading only memory of the arrays, merged where they share it, left out
where a span is mostly memory no array uses (a KV cache's spare room)."""
from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest

from seqlab import kernels

pytestmark = pytest.mark.skipif(kernels.library() != "numba", reason="the vector row passes need Numba")

if kernels.library() == "numba":
    from numba import njit

    from seqlab import _numba_kernels as K

    @njit
    def lanes_max(x, nv):
        return K._lanes_max(K._address(x), nv)

    @njit
    def lanes_exp(x, nv, nvp, mx):
        return K._lanes_exp(K._address(x), nv, nvp, mx)

    @njit
    def lanes_div(x, nv, nvp, total):
        K._lanes_div(K._address(x), nv, nvp, total)

    @njit
    def lanes_fill(x, lo, hi, value):
        K._lanes_fill(K._address(x), lo, hi, value)

    @njit
    def lanes_softmax_grad(p, dp, ds, nv, nvp, scale):
        K._lanes_softmax_grad(K._address(p), K._address(dp), K._address(ds), nv, nvp, scale)

    @njit
    def lanes_weights4(s, nv0, nv1, nv2, nv3, stats):
        K._lanes_weights4(K._address(s), s.shape[1], nv0, nv1, nv2, nv3, K._address(stats))

    @njit
    def lanes_weights4_given(s, nv0, nv1, nv2, nv3, stats):
        K._lanes_weights4_given(K._address(s), s.shape[1], nv0, nv1, nv2, nv3, K._address(stats))

LENGTHS = [0, 1, 5, 15, 16, 17, 31, 33, 48, 64]
SENTINEL = np.float32(123.0)


def _row(nv, rng, tail=np.nan):
    """A padded row of 80 float32: nv scores, then `tail` (what a row's hidden keys may hold) to the end."""
    x = np.full(80, tail, np.float32)
    x[:nv] = rng.standard_normal(nv) * 4
    return x


def _padded(nv):
    return (nv + 15) // 16 * 16


@pytest.mark.parametrize("nv", LENGTHS)
def test_weights_row_is_the_softmax_of_the_visible_keys(nv):
    rng = np.random.default_rng(nv)
    s = _row(nv, rng, tail=np.inf)
    want = s[:nv].astype(np.float64)
    nvp = _padded(nv)
    s[nvp:] = SENTINEL
    mx, total = K._weights_row(s, nv, np.zeros(1, np.bool_), False, np.float32(0), np.float32(1), False)
    if nv:
        e = np.exp(want - want.max())
        np.testing.assert_allclose(s[:nv], e / e.sum(), rtol=1e-6, atol=1e-7)
        assert mx == want.max()
        np.testing.assert_allclose(total, e.sum(), rtol=1e-6)
    else:
        assert (mx, total) == (0.0, 1.0), "a row with no visible key: the softmax kernels' 0 and 1"
    assert not s[nv:nvp].any(), "the hidden keys of the row's last chunk get weight 0"
    assert (s[nvp:] == SENTINEL).all(), "nothing past the row's last chunk is written"


@pytest.mark.parametrize("nv", [1, 17, 64])
def test_weights_row_again_from_the_stats_is_bitwise_the_first(nv):
    """Backward makes the weights again from the forward's row max and sum: the same bits."""
    rng = np.random.default_rng(100 + nv)
    s = _row(nv, rng)
    again = s.copy()
    mx, total = K._weights_row(s, nv, np.zeros(1, np.bool_), False, np.float32(0), np.float32(1), False)
    K._weights_row(again, nv, np.zeros(1, np.bool_), False, mx, total, True)
    np.testing.assert_array_equal(again[:_padded(nv)], s[:_padded(nv)])


def test_weights_row_masks_its_holes_and_a_row_with_none_visible():
    rng = np.random.default_rng(3)
    s = _row(20, rng)
    block = np.zeros(20, np.bool_)
    block[[0, 7, 19]] = True
    want = s[:20].astype(np.float64)
    want[block] = -np.inf
    K._weights_row(s, 20, block, True, np.float32(0), np.float32(1), False)
    e = np.exp(want - want.max())
    np.testing.assert_allclose(s[:20], e / e.sum(), rtol=1e-6, atol=1e-7)
    s = _row(20, rng)
    mx, total = K._weights_row(s, 20, np.ones(20, np.bool_), True, np.float32(0), np.float32(1), False)
    assert (mx, total) == (0.0, 1.0) and not s[:32].any()


def test_a_nan_score_gives_nan_weights_as_numpy():
    s = _row(10, np.random.default_rng(4))
    s[3] = np.nan
    K._weights_row(s, 10, np.zeros(1, np.bool_), False, np.float32(0), np.float32(1), False)
    assert np.isnan(s[:10]).all() and not s[10:16].any()


@pytest.mark.parametrize("nv", LENGTHS)
def test_lanes_max_ignores_the_hidden_lanes(nv):
    rng = np.random.default_rng(nv)
    x = _row(nv, rng, tail=np.float32(1e30))
    got = lanes_max(x, nv)
    assert got == (x[:nv].max() if nv else -np.inf)


def test_lanes_max_skips_nan():
    x = np.array([np.nan, -3.0, 2.0, np.nan] + [0.0] * 12, np.float32)
    assert lanes_max(x, 4) == 2.0
    assert lanes_max(np.full(16, np.nan, np.float32), 16) == -np.inf


def test_lanes_exp_within_two_ulp_over_its_range():
    """e^(x − mx) for x − mx in [−100, 0]: within 2 float32 ulp where it is a normal float, 0 below −87."""
    v = np.concatenate([np.linspace(-100, 0, 4096), [-87.0, -86.99, -1e-30, 0.0]]).astype(np.float32)
    x = np.concatenate([v, np.zeros(_padded(v.size) - v.size, np.float32)])
    total = lanes_exp(x, v.size, x.size, np.float32(0))
    want = np.exp(v.astype(np.float64))
    normal = v >= -87
    ulp = np.spacing(want[normal].astype(np.float32)).astype(np.float64)
    assert (np.abs(x[:v.size][normal] - want[normal]) <= 2 * ulp).all()
    assert not x[:v.size][~normal].any()
    np.testing.assert_allclose(total, x.astype(np.float64).sum(), rtol=1e-6)


@pytest.mark.parametrize("nv", LENGTHS)
def test_lanes_div_and_fill_write_only_their_chunks(nv):
    rng = np.random.default_rng(nv)
    nvp = _padded(nv)
    x = rng.standard_normal(80).astype(np.float32)
    want = x.copy()
    want[:nv] /= np.float32(3.0)
    want[nv:nvp] = 0.0
    lanes_div(x, nv, nvp, np.float32(3.0))
    np.testing.assert_array_equal(x, want)
    lanes_fill(x, nvp, 64, np.float32(-1.0))
    want[nvp:64] = -1.0
    np.testing.assert_array_equal(x, want)


@pytest.mark.parametrize("nv", LENGTHS)
def test_lanes_softmax_grad_matches_float64(nv):
    """dS = P ⊙ (dP − Σ dP ⊙ P) · scale over the visible keys, 0 on the chunk's hidden lanes even where dP
    holds NaN there; nothing written past the chunk."""
    rng = np.random.default_rng(nv)
    nvp = _padded(nv)
    p = np.zeros(80, np.float32)
    p[:nv] = rng.random(nv)
    dp = _row(nv, rng)
    ds = np.full(80, SENTINEL, np.float32)
    lanes_softmax_grad(p, dp, ds, nv, nvp, np.float32(0.25))
    p64, dp64 = p[:nv].astype(np.float64), dp[:nv].astype(np.float64)
    np.testing.assert_allclose(ds[:nv], p64 * (dp64 - (p64 * dp64).sum()) * 0.25, rtol=1e-5, atol=1e-6)
    assert not ds[nv:nvp].any() and (ds[nvp:] == SENTINEL).all()


def _packed(B=3, T=8, H=4, D=16):
    qkv = np.zeros((B, T, 3, H, D), np.float32)
    q, k, v = (qkv[:, :, i].swapaxes(1, 2) for i in range(3))
    return qkv, q, k, v


def test_span_of_strided_reversed_and_empty_arrays():
    x = np.zeros((4, 6), np.float32)
    base = x.ctypes.data
    assert K._span(x) == (base, base + 96, 96)
    assert K._span(x[1:3, ::2]) == (base + 24, base + 24 + 24 + 16 + 4, 24)
    assert K._span(x[::-1]) == (base, base + 96, 96)
    assert K._span(x[:0]) == (0, 0, 0)


def test_sweeps_merge_a_packed_batch_row_and_keep_separate_arrays_apart():
    qkv, q, k, v = _packed()
    out = np.zeros((3, 8, 4, 16), np.float32).swapaxes(1, 2)
    ranges = K._sweeps(q[1, 0:], k[1, 0:], v[1, 0:], out[1, 0:])
    want = sorted([(qkv[1].ctypes.data, qkv[1].ctypes.data + qkv[1].nbytes),
                   (out.base[1].ctypes.data, out.base[1].ctypes.data + out.base[1].nbytes)])
    assert [tuple(r) for r in ranges] == want, "q, k, v swept once as the batch row's block; out apart"
    again = K._sweeps(out[1, 0:], out[1, 0:], out[1, 0:], out[1, 0:])
    assert [tuple(r) for r in again] == [want[0] if want[0][0] == out.base[1].ctypes.data else want[1]]


def test_sweeps_leave_out_a_kv_cache_with_room_to_spare():
    """Keys of 10 positions in a cache with room for 100: each head's rows are followed by 90 unused ones,
    so their span is ten times their size; once the cache is 60% full the span is swept."""
    cache = np.zeros((2, 4, 100, 16), np.float32)
    out = np.zeros((2, 4, 1, 16), np.float32)
    ranges = K._sweeps(out[0], cache[0, :, :10], cache[0, :, :10], out[0])
    assert [tuple(r) for r in ranges] == [(out[0].ctypes.data, out[0].ctypes.data + out[0].nbytes)]
    ranges = K._sweeps(out[0], cache[0, :, :60], cache[0, :, :60], out[0])
    assert len(ranges) == 2


def test_read_ahead_reads_nothing_past_its_arrays():
    """Arrays ending at the end of a mapping with no page after it: the sweeps stay inside (a read past
    the end would kill the child process)."""
    code = textwrap.dedent("""
        import ctypes
        import mmap
        import numpy as np
        from seqlab import _numba_kernels as K
        libc = ctypes.CDLL(None, use_errno=True)
        libc.mmap.restype = ctypes.c_void_p
        libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                              ctypes.c_long]
        page = mmap.PAGESIZE
        at = libc.mmap(None, 2 * page, mmap.PROT_READ | mmap.PROT_WRITE, mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS,
                       -1, 0)
        assert at not in (None, ctypes.c_void_p(-1).value)
        assert libc.mprotect(ctypes.c_void_p(at + page), ctypes.c_size_t(page), 0) == 0  # PROT_NONE
        x = np.ctypeslib.as_array((ctypes.c_float * (page // 4)).from_address(at))
        for n in (1, 15, 16, 17, 1000, page // 4):
            a = x[x.size - n:]
            K._read_ahead(a, a, a, a)
            K._read_ahead(a[::-1], a, a[1:], a[:0])
        # a float32 view at an odd address overlapping one that ends at the page's end: the sweep starts at
        # the odd address, and its last line's word must not cross into the protected page
        raw = np.ctypeslib.as_array((ctypes.c_uint8 * page).from_address(at))
        odd, last = raw[page - 67:page - 3].view(np.float32), raw[page - 64:].view(np.float32)
        K._read_ahead(odd, last, last, odd)
        print("ok")
    """)
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0 and res.stdout.strip() == "ok", res.stderr


@pytest.mark.parametrize("nvs", [(1, 2, 3, 4), (0, 0, 0, 0), (0, 17, 5, 64), (33, 16, 48, 15), (64, 64, 64, 64)])
def test_four_rows_at_once_are_bitwise_weights_row_on_each(nvs):
    """`_lanes_weights4` (the forward's four rows of a tile) and `_lanes_weights4_given` (backward's, from the
    forward's max and sum): each row's weights, max and sum are `_weights_row`'s bits; every lane up to the
    longest row's last chunk is written (0 past a row's keys), nothing past it."""
    rng = np.random.default_rng(sum(nvs))
    s = np.stack([_row(nv, rng) for nv in nvs])  # (4, 80): NaN past each row's keys
    s[2, 3] = np.nan if nvs[2] > 3 else s[2, 3]  # a NaN score: that row's weights NaN, the others untouched
    want, again = s.copy(), s.copy()
    stats = np.empty(8, np.float32)
    lanes_weights4(s, *nvs, stats)
    reach = _padded(max(nvs))
    for r, nv in enumerate(nvs):
        mx, total = K._weights_row(want[r], nv, np.zeros(1, np.bool_), False, np.float32(0), np.float32(1), False)
        np.testing.assert_array_equal(stats[[r, 4 + r]], np.array([mx, total], np.float32))  # NaN sum: NaN
        np.testing.assert_array_equal(s[r, :_padded(nv)], want[r, :_padded(nv)])
        assert not s[r, _padded(nv):reach].any()
        np.testing.assert_array_equal(s[r, reach:], again[r, reach:])
    lanes_weights4_given(again, *nvs, stats)
    np.testing.assert_array_equal(again[:, :reach], s[:, :reach])


@pytest.mark.parametrize("t, d", [(64, 32), (45, 32), (16, 16), (7, 16), (33, 20), (1, 48)])
def test_transpose_into_by_vector_blocks_and_value_by_value(t, d):
    """A head's keys (rows of a packed q/k/v, far apart) transposed: 16 × 16 blocks on vectors where D is a
    multiple of 16, the rest value by value; nothing past the T columns written."""
    rng = np.random.default_rng(t * d)
    packed = rng.standard_normal((t, 3, d + 5)).astype(np.float32)
    x = packed[:, 1, :d]
    out = np.full((d, t + 9), SENTINEL, np.float32)
    K._transpose_into(x, out)
    np.testing.assert_array_equal(out[:, :t], x.T)
    assert (out[:, t:] == SENTINEL).all()
