"""out= and threads= of encode, decode, quantize and dequantize.

out= writes into the caller's array and returns that same object; the bits are those of
the allocating call, and for E4M3 those of ml_dtypes' own cast (an independent oracle).
threads= splits the blocks over threads; the bits must not depend on the count (the
tensor amax of the two-level recipes is combined across threads). Every malformed out
(dtype, shape, layout, read-only, overlapping the input, wrong tuple) is a ValueError
that names the problem, and the caller's array is left untouched."""

import ml_dtypes
import numpy as np
import pytest

import kvq
from conftest import random_bits


def test_encode_out_writes_in_place_and_matches_ml_dtypes():
    rng = np.random.default_rng(1)
    x = (rng.standard_normal((64, 33)) * 100).astype(np.float32)
    out = np.full(x.shape, 0xAB, dtype=np.uint8)
    r = kvq.encode(x, "e4m3", out=out)
    assert r is out
    want = x.astype(ml_dtypes.float8_e4m3fn).view(np.uint8)
    # ml_dtypes has no satfinite: compare where |x| <= 448 (saturation is tested elsewhere).
    fin = np.abs(x) <= 448
    assert np.array_equal(out[fin], want[fin])
    assert np.array_equal(out, kvq.encode(x, "e4m3"))
    # float64 input and every format/rounding: the same bits as the allocating call.
    xd = x.astype(np.float64) * 1.0000001
    for fmt in ("e5m2", "e2m1", "ue8m0", "e4m3fnuz"):
        o = np.empty(x.shape, np.uint8)
        assert kvq.encode(xd, fmt, "toward_zero", out=o) is o
        assert np.array_equal(o, kvq.encode(xd, fmt, "toward_zero"))


def test_decode_out_both_dtypes():
    codes = np.arange(256, dtype=np.uint8).reshape(16, 16)
    for dt in (np.float32, np.float64):
        out = np.zeros(codes.shape, dt)
        r = kvq.decode(codes, "e5m2", dtype=np.dtype(dt).name, out=out)
        assert r is out
        want = codes.view(ml_dtypes.float8_e5m2).astype(dt)
        assert np.array_equal(out, want, equal_nan=True)


def test_encode_decode_out_errors_leave_the_array_untouched():
    x = random_bits(1000, seed=3).reshape(10, 100)
    good = np.full(x.shape, 7, np.uint8)
    cases = [
        (np.zeros(x.shape, np.int8), "dtype int8"),
        (np.zeros((10, 99), np.uint8), "shape (10, 99)"),
        (np.zeros((100, 10), np.uint8).T, "not C-contiguous"),
        (np.zeros((10, 200), np.uint8)[:, ::2], "not C-contiguous"),
        ([0] * 1000, "must be a writable"),
    ]
    for bad, words in cases:
        before = bad.copy() if isinstance(bad, np.ndarray) else None
        with pytest.raises(ValueError, match=words.replace("(", r"\(").replace(")", r"\)")):
            kvq.encode(x, "e4m3", out=bad)
        if before is not None:
            assert np.array_equal(bad, before)
    ro = good.copy()
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="writable"):
        kvq.encode(x, "e4m3", out=ro)
    # out over the input's own bytes.
    buf = np.zeros(4000, np.uint8)
    xin = buf.view(np.float32)
    xin[:] = 1.5
    with pytest.raises(ValueError, match="overlaps the input"):
        kvq.encode(xin, "e4m3", out=buf[:1000])
    assert np.all(xin == 1.5)
    with pytest.raises(ValueError, match="dtype float64, expected float32"):
        kvq.decode(good, "e4m3", out=np.zeros(x.shape, np.float64))


@pytest.mark.parametrize("scheme", ["nvfp4_te", "nvfp4_torchao_two_level", "nvfp4_vllm", "mxfp8_e4m3_rceil",
                                    "mxfp4_floor", "fp8_e4m3", "fp8_e4m3_cal", "fp8_per_token_head",
                                    "int8_per_token_head", "kivi_int4"])
def test_quantize_dequantize_out_and_threads(scheme):
    rng = np.random.default_rng(7)
    # 2 * 4 * 700 rows of 64: enough blocks for several 64-block chunks per thread; one
    # large value far from the start so that the tensor amax lives in one thread's chunk.
    x = rng.standard_normal((2, 4, 700, 64)).astype(np.float32)
    x[1, 3, 650, 17] = 900.0
    ref = kvq.quantize(x, scheme)
    for threads in (2, 3, 8):
        got = kvq.quantize(x, scheme, threads=threads)
        for a, b in zip(ref, got):
            if a is None:
                assert b is None
            else:
                assert np.array_equal(np.asarray(a), np.asarray(b)), (scheme, threads)
    codes, scales, tv = ref
    zero_point = scheme.startswith("kivi")
    out_codes = np.empty_like(codes)
    out_scales = None if scales is None else np.empty_like(scales)
    outs = (out_codes, out_scales, np.empty_like(tv)) if zero_point else (out_codes, out_scales)
    got = kvq.quantize(x, scheme, out=outs, threads=2)
    assert got[0] is out_codes and got[1] is out_scales
    assert np.array_equal(out_codes, codes)
    if scales is not None:
        assert np.array_equal(out_scales, scales)
    if zero_point:
        assert got[2] is outs[2] and np.array_equal(outs[2], tv)
    else:
        assert got[2] == tv or (tv is None and got[2] is None)
    y = kvq.dequantize(codes, scales, scheme, tv)
    for threads in (1, 4):
        o = np.full(x.shape, np.nan, np.float32)
        r = kvq.dequantize(codes, scales, scheme, tv, out=o, threads=threads)
        assert r is o and np.array_equal(o, y, equal_nan=True)


def test_quantize_out_errors():
    x = np.ones((8, 32), np.float32)
    codes, scales, tv = kvq.quantize(x, "nvfp4_te")
    with pytest.raises(ValueError, match=r"tuple of \(codes, scales\)"):
        kvq.quantize(x, "nvfp4_te", out=np.empty_like(codes))
    with pytest.raises(ValueError, match=r"out\[1\] \(scales\) has shape"):
        kvq.quantize(x, "nvfp4_te", out=(np.empty_like(codes), np.empty((8, 3), np.uint8)))
    with pytest.raises(ValueError, match="no block scales; out\\[1\\] must be None"):
        kvq.quantize(x, "fp8_e4m3", out=(np.empty((8, 32), np.uint8), np.empty((8, 1), np.uint8)))
    shared = np.empty(8 * 16 + 8 * 2, np.uint8)
    with pytest.raises(ValueError, match="overlaps"):
        kvq.quantize(x, "nvfp4_te", out=(shared[:128].reshape(8, 16), shared[120:136].reshape(8, 2)))
    with pytest.raises(ValueError, match="threads must be >= 1"):
        kvq.quantize(x, "nvfp4_te", threads=0)
    with pytest.raises(ValueError, match="threads must be >= 1"):
        kvq.dequantize(codes, scales, "nvfp4_te", tv, threads=0)
    with pytest.raises(ValueError, match="out has shape"):
        kvq.dequantize(codes, scales, "nvfp4_te", tv, out=np.empty((8, 31), np.float32))
