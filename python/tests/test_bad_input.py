"""Bad input raises TypeError/ValueError naming the problem; nothing crashes."""

import numpy as np
import pytest

import kvq

X = np.random.default_rng(0).standard_normal((2, 64)).astype(np.float32)


@pytest.mark.parametrize("dtype", [np.int64, np.int8, np.float16, np.uint32, np.complex64, np.bool_])
def test_encode_wrong_dtype(dtype):
    with pytest.raises(TypeError, match="dtype"):
        kvq.encode(np.zeros(4, dtype), "e4m3")


def test_not_an_array():
    with pytest.raises(TypeError):
        kvq.encode([1.0, 2.0], "e4m3")
    with pytest.raises(TypeError):
        kvq.encode("x", "e4m3")


def test_unknown_names():
    with pytest.raises(ValueError, match="unknown format 'e9m9'"):
        kvq.encode(X, "e9m9")
    with pytest.raises(ValueError, match="unknown format"):
        kvq.decode(np.zeros(3, np.uint8), "nvfp4_te")
    with pytest.raises(ValueError, match="unknown rounding 'nearest'"):
        kvq.encode(X, "e4m3", rounding="nearest")
    with pytest.raises(ValueError, match="unknown overflow"):
        kvq.encode(X, "e4m3", overflow="clip")
    with pytest.raises(ValueError, match="unknown scheme 'nvfp5'"):
        kvq.quantize(X, "nvfp5")
    with pytest.raises(ValueError, match="unknown scheme"):
        kvq.describe("nope")
    with pytest.raises(ValueError, match="high-precision"):
        kvq.quantize(X, "bf16")
    with pytest.raises(ValueError, match="dtype must be"):
        kvq.decode(np.zeros(3, np.uint8), "e4m3", dtype="float16")


def test_decode_wrong_dtype():
    with pytest.raises(TypeError, match="codes has dtype int32, expected uint8"):
        kvq.decode(np.zeros(3, np.int32), "e4m3")


def test_stochastic_bits():
    with pytest.raises(ValueError, match="random_bits holds 3 values"):
        kvq.encode_stochastic(X, "e4m3", np.zeros(3, np.uint32))
    with pytest.raises(TypeError, match="random_bits has dtype int64"):
        kvq.encode_stochastic(X, "e4m3", np.zeros(X.shape, np.int64))
    with pytest.raises(TypeError, match="x has dtype float64"):
        kvq.encode_stochastic(X.astype(np.float64), "e4m3", np.zeros(X.shape, np.uint32))


def test_block_does_not_divide_row():
    with pytest.raises(ValueError, match="row length 40 .* not a multiple of the block size 32"):
        kvq.quantize(np.zeros((3, 40), np.float32), "mxfp8_e4m3_floor")
    with pytest.raises(ValueError, match="not a multiple of the block size 16"):
        kvq.quantize(np.float32(1.0).reshape(()), "nvfp4_te")
    with pytest.raises(ValueError, match="not a multiple"):
        kvq.bits_per_value("nvfp4_te", 24)
    with pytest.raises(ValueError, match="rows of length > 0"):
        kvq.quantize(np.zeros((3, 0), np.float32), "fp8_per_token_head")


def test_quantize_wrong_dtype():
    with pytest.raises(TypeError, match="x has dtype float64, expected float32"):
        kvq.quantize(X.astype(np.float64), "nvfp4_te")


def test_zero_point_schemes_are_refused_by_verify():
    codes, scales, zeros = kvq.quantize(X, "kivi_int4")
    with pytest.raises(ValueError, match="zero points"):
        kvq.verify("kivi_int4", X, codes, scales)
    with pytest.raises(ValueError, match="stores zero points; pass them"):
        kvq.dequantize(codes, scales, "kivi_int4")
    with pytest.raises(ValueError, match="zero points hold 3 values, 4 blocks expected"):
        kvq.dequantize(codes, scales, "kivi_int4", zeros.reshape(-1)[:3])
    with pytest.raises(TypeError, match="zero points"):
        kvq.dequantize(codes, scales, "kivi_int4", 1.0)


def test_dequantize_checks():
    codes, scales, tv = kvq.quantize(X, "nvfp4_te")
    with pytest.raises(ValueError, match="needs its tensor value"):
        kvq.dequantize(codes, scales, "nvfp4_te")
    with pytest.raises(ValueError, match="scales is required"):
        kvq.dequantize(codes, None, "nvfp4_te", tv)
    with pytest.raises(ValueError, match="scales holds 7 values, 8 blocks expected"):
        kvq.dequantize(codes, scales.reshape(-1)[:7], "nvfp4_te", tv)
    with pytest.raises(TypeError, match="scales has dtype float32, expected uint8"):
        kvq.dequantize(codes, scales.astype(np.float32), "nvfp4_te", tv)
    with pytest.raises(ValueError, match="not a multiple"):
        kvq.dequantize(codes[:, :5], scales, "nvfp4_te", tv)
    c8, _, tv8 = kvq.quantize(X, "fp8_e4m3")
    with pytest.raises(ValueError, match="no block scales"):
        kvq.dequantize(c8, scales, "fp8_e4m3", tv8)


def test_verify_checks():
    codes, scales, _ = kvq.quantize(X, "mxfp4_floor")
    with pytest.raises(ValueError, match="codes holds 63 bytes"):
        kvq.verify("mxfp4_floor", X, codes.reshape(-1)[:63], scales)
    with pytest.raises(ValueError, match="scales is required"):
        kvq.verify("mxfp4_floor", X, codes)
    with pytest.raises(ValueError, match="scales holds 3 values, 4 blocks expected"):
        kvq.verify("mxfp4_floor", X, codes, scales.reshape(-1)[:3])
    with pytest.raises(ValueError, match="has no scales"):
        kvq.verify("e4m3", X, kvq.encode(X, "e4m3"), scales)
    with pytest.raises(TypeError, match="codes has dtype int64"):
        kvq.verify("e4m3", X, np.zeros(X.shape, np.int64))


def test_no_crash_on_nonfinite_and_empty():
    x = np.array([np.nan, np.inf, -np.inf, 0.0] * 8, np.float32)
    for s in kvq.schemes():
        block = kvq.describe(s)["block_size"] or 32
        codes, scales, tv = kvq.quantize(x.reshape(-1, block) if 32 % block == 0 else x, s)
        kvq.dequantize(codes, scales, s, tv)
        kvq.quantize(np.zeros((0, block), np.float32), s)
