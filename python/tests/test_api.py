"""The package API: formats table, decode against an independent value formula, shapes
and layouts of quantize/dequantize, the verify report, FNV-1a hashes."""

from fractions import Fraction

import numpy as np
import pytest

import kvq
from conftest import random_bits

ALL = ["e4m3", "e5m2", "e3m2", "e2m3", "e2m1", "ue8m0", "ue4m3", "e4m3fnuz", "e5m2fnuz", "e4m3b11fnuz"]


def test_formats_table():
    f = {d["name"]: d for d in kvq.formats()}
    assert sorted(f) == sorted(ALL)
    assert f["e4m3"]["max_finite"] == 448 and f["e5m2"]["max_finite"] == 57344
    assert f["e2m1"]["max_finite"] == 6 and f["e3m2"]["max_finite"] == 28 and f["e2m3"]["max_finite"] == 7.5
    assert f["e4m3fnuz"]["max_finite"] == 240 and f["ue8m0"]["min_subnormal"] == 2.0**-127
    assert f["e4m3b11fnuz"]["max_finite"] == 30 and f["e4m3b11fnuz"]["min_subnormal"] == 2.0**-13
    assert (f["e2m1"]["sign_bits"], f["e2m1"]["exponent_bits"], f["e2m1"]["mantissa_bits"]) == (1, 2, 1)
    assert "| e4m3 |" in kvq.format_table()


def exact_value(code, fmt):
    """The value of a code from the format definition, as a Fraction (None for NaN,
    +-inf for Inf)."""
    d = next(x for x in kvq.formats() if x["name"] == fmt)
    s, e, m, bias = d["sign_bits"], d["exponent_bits"], d["mantissa_bits"], d["bias"]
    code &= (1 << (s + e + m)) - 1
    neg = bool(s and (code >> (e + m)) & 1)
    mag = code & ((1 << (e + m)) - 1)
    ef, mf = mag >> m, mag & ((1 << m) - 1)
    if fmt in ("e4m3fnuz", "e5m2fnuz", "e4m3b11fnuz") and code == 1 << (e + m):
        return None
    if fmt in ("e4m3", "ue4m3") and mag == (1 << (e + m)) - 1:
        return None
    if fmt == "ue8m0":
        return None if code == 0xFF else Fraction(2) ** (code - 127)
    if fmt == "e5m2" and ef == 31:
        return None if mf else (float("-inf") if neg else float("inf"))
    if ef == 0:
        v = Fraction(mf, 1 << m) * Fraction(2) ** (1 - bias)
    else:
        v = (1 + Fraction(mf, 1 << m)) * Fraction(2) ** (ef - bias)
    return -v if neg else v


@pytest.mark.parametrize("fmt", ALL)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_decode_every_code(fmt, dtype):
    codes = np.arange(256, dtype=np.uint8)
    got = kvq.decode(codes, fmt, dtype=dtype)
    assert got.dtype == np.dtype(dtype) and got.shape == (256,)
    for c, g in zip(codes, got):
        want = exact_value(int(c), fmt)
        if want is None:
            assert np.isnan(g), (fmt, hex(c), g)
        elif isinstance(want, float):
            assert g == want, (fmt, hex(c), g)
        else:
            assert Fraction(float(g)) == want, (fmt, hex(c), g, want)
            if want == 0:  # -0 codes decode to -0.0
                d = next(x for x in kvq.formats() if x["name"] == fmt)
                w = d["sign_bits"] + d["exponent_bits"] + d["mantissa_bits"]
                neg = d["sign_bits"] == 1 and (int(c) >> (w - 1)) & 1 == 1
                assert bool(np.signbit(g)) == neg, (fmt, hex(c), g)


@pytest.mark.parametrize("fmt", ALL)
def test_encode_round_trips_every_value(fmt):
    # encode(decode(c)) == c for every finite code (and -0 keeps its sign)
    d = next(x for x in kvq.formats() if x["name"] == fmt)
    codes = np.arange(1 << d["bits"], dtype=np.uint8)
    v = kvq.decode(codes, fmt)
    ok = np.isfinite(v)
    assert (kvq.encode(v[ok], fmt) == codes[ok]).all()


def test_encode_shape_dtype_and_layouts():
    x = random_bits(4 * 6 * 8).reshape(4, 6, 8)
    c = kvq.encode(x, "e4m3")
    assert c.dtype == np.uint8 and c.shape == (4, 6, 8)
    assert (kvq.encode(x[:, ::2, 1:5], "e4m3") == c[:, ::2, 1:5]).all()  # strided view
    assert (kvq.encode(x.T, "e4m3") == c.T).all()
    ro = x.copy()
    ro.flags.writeable = False
    assert (kvq.encode(ro, "e4m3") == c).all()
    assert kvq.encode(np.float32(1.0).reshape(()), "e4m3").shape == ()
    assert kvq.encode(np.zeros(0, np.float32), "e4m3").shape == (0,)


def test_encode_rounding_modes():
    x = np.array([1.0625, -1.0625, 1.1875, 1.03], np.float32)  # ties and a non-tie in e4m3 (ulp 0.125)
    assert list(kvq.encode(x, "e4m3", rounding="nearest_even")) == [0x38, 0xB8, 0x3A, 0x38]
    assert list(kvq.encode(x, "e4m3", rounding="nearest_away")) == [0x39, 0xB9, 0x3A, 0x38]
    assert list(kvq.encode(x, "e4m3", rounding="toward_zero")) == [0x38, 0xB8, 0x39, 0x38]
    assert list(kvq.encode(x, "e4m3", rounding="up")) == [0x39, 0xB8, 0x3A, 0x39]
    assert list(kvq.encode(x, "e4m3", rounding="rd")) == [0x38, 0xB9, 0x39, 0x38]


def test_encode_float64_rounds_once():
    # 1 + 2^-4 + 2^-30 is above the e4m3 tie 1.0625 as a double; as a float32 it is the tie.
    x = np.array([1.0 + 2.0**-4 + 2.0**-30])
    assert kvq.encode(x, "e4m3")[0] == 0x39
    assert kvq.encode(x.astype(np.float32), "e4m3")[0] == 0x38


def test_encode_stochastic():
    x = np.full(4, 1.0 + 2.0**-5, np.float32)  # a quarter of the way from 1.0 to 1.125
    rb = np.array([0, 2**32 - 2**30 - 1, 2**32 - 2**30, 2**32 - 1], np.uint32)
    assert list(kvq.encode_stochastic(x, "e4m3", rb)) == [0x38, 0x38, 0x39, 0x39]


# ----------------------------------------------------------------------------- block schemes
def fnv1a64(b):
    h = 0xCBF29CE484222325
    for byte in bytes(b):
        h = ((h ^ byte) * 0x100000001B3) % 2**64
    return h


def test_schemes_and_describe():
    names = kvq.schemes()
    for n in ["nvfp4_te", "nvfp4_torchao", "nvfp4_torchao_two_level", "mxfp4_floor", "mxfp8_e4m3_rceil",
              "mxfp4_rceil_torchao", "fp8_e4m3", "fp8_per_token_head"]:
        assert n in names
    d = kvq.describe("nvfp4_te")
    assert d["block_size"] == 16 and d["storage_bits"] == 4 and d["element_format"] == "e2m1"
    assert d["scale_dtype"] == "uint8" and d["tensor_value"] == "amax"
    assert kvq.describe("mxfp8_e5m2_floor")["block_size"] == 32
    assert kvq.describe("fp8_per_token_head")["block_size"] is None
    assert kvq.bits_per_value("nvfp4_te") == 4.5 and kvq.bits_per_value("mxfp4_rceil") == 4.25
    assert kvq.bits_per_value("fp8_per_token_head", 128) == 8 + 32 / 128


def test_bits_per_value_one_rule():
    # By hand from the storage layouts: KIVI keeps one scale and one zero point per group
    # of 32 in its compute dtype (fp32 for kivi_int*, fp16 for kivi_int*_fp16); the
    # high-precision formats take their width; FP8 with one tensor scale takes 8.
    assert kvq.bits_per_value("kivi_int4", 128) == 4 + 2 * 32 / 32
    assert kvq.bits_per_value("kivi_int4_fp16", 128) == 4 + 2 * 16 / 32
    assert kvq.bits_per_value("kivi_int2_fp16", 64) == 2 + 2 * 16 / 32
    assert kvq.bits_per_value("bf16") == 16 and kvq.bits_per_value("fp32") == 32
    assert kvq.bits_per_value("fp8_e4m3") == 8
    with pytest.raises(ValueError, match="unknown scheme"):
        kvq.bits_per_value("nvfp5")
    assert kvq.describe("kivi_int2")["zero_point"] is True


@pytest.mark.parametrize("scheme", kvq.schemes())
def test_quantize_layout_and_round_trip(scheme):
    d = kvq.describe(scheme)
    rng = np.random.default_rng(5)
    x = rng.standard_normal((3, 5, 64)).astype(np.float32)
    codes, scales, tv = kvq.quantize(x, scheme)
    block = d["block_size"] or 64
    assert codes.dtype == np.uint8 and codes.shape == (3, 5, 64 * d["storage_bits"] // 8)
    if d["scale_dtype"] is None:
        assert scales is None
    else:
        assert scales.shape == (3, 5, 64 // block) and scales.dtype == np.dtype(d["scale_dtype"])
    assert (tv is None) == (d["tensor_value"] == "none")
    y = kvq.dequantize(codes, scales, scheme, tv)
    assert y.shape == x.shape and y.dtype == np.float32
    # dequantize(quantize(x)) re-quantizes to the same buffers (the grid is a fixed point)
    c2, s2, _ = kvq.quantize(y, scheme, tensor_value=tv)
    r = kvq.verify(scheme, y, c2, s2, tensor_value=tv)
    assert r.ok, r
    # every row is quantized independently of the others (a row-major layout)
    c_row, s_row, _ = kvq.quantize(x[1, 2], scheme, tensor_value=tv)
    assert (c_row == codes[1, 2]).all()
    if scales is not None:
        assert (s_row == scales[1, 2]).all()


def test_nvfp4_te_values():
    # One block with amax 6: TE's global scale 448*6/amax = 448, block scale e4m3(6/6*448/448)...
    # the decoded values are the input itself when it lies on the e2m1 grid times 1.
    x = np.array([[6, -4, 3, 2, 1.5, 1, 0.5, 0, -6, 4, -3, -2, -1.5, -1, -0.5, -0.0]], np.float32)
    codes, scales, tv = kvq.quantize(x, "nvfp4_te")
    assert tv == 6.0
    assert (kvq.dequantize(codes, scales, "nvfp4_te", tv) == x).all()
    lo, hi = codes[0] & 0xF, codes[0] >> 4
    assert list(lo[:4]) == [0x7, 0x5, 0x3, 0x1] and list(hi[:4]) == [0xE, 0x4, 0x2, 0x0]


def test_verify_report():
    rng = np.random.default_rng(9)
    x = rng.standard_normal((4, 64)).astype(np.float32)
    codes, scales, tv = kvq.quantize(x, "mxfp4_floor")
    r = kvq.verify("mxfp4_floor", x, codes, scales)
    assert r.ok and bool(r) and r.code_mismatches == 0 and r.scale_mismatches == 0 and r.tensor_value is None
    assert int(r.codes.expected_hash, 16) == fnv1a64(codes.tobytes())
    assert r.codes.expected_hash == r.codes.actual_hash
    assert int(r.scales.expected_hash, 16) == fnv1a64(scales.tobytes())
    bad = codes.copy()
    bad[2, 5] ^= 0x30  # element 2*5+1 of row 2 (high nibble)
    bad_s = scales.copy()
    bad_s[3, 1] += 1
    r = kvq.verify("mxfp4_floor", x, bad, bad_s)
    assert not r.ok and r.code_mismatches == 1 and r.scale_mismatches == 1
    m = r.codes.first[0]
    assert m.index == 2 * 64 + 11 and m.input == x[2, 11]
    assert m.expected_bits == codes[2, 5] >> 4 and m.actual_bits == bad[2, 5] >> 4
    assert m.expected_value == kvq.decode(np.array([m.expected_bits], np.uint8), "e2m1")[0]
    assert r.scales.first[0].index == 3 * 2 + 1 and r.scales.first[0].input is None
    assert int(r.codes.actual_hash, 16) == fnv1a64(bad.tobytes())
    text = str(r)
    assert "MISMATCH" in text and "1 of 256" in text and "(2, 11)" in text and "1 of 8" in text
    line = repr(r)  # what pytest shows for `assert r.ok, r`: one line, first mismatches first
    assert "\n" not in line and line.startswith("kvq.verify(mxfp4_floor): MISMATCH; codes 1 of 256 differ, first [139]")
    assert "(2, 11)" in line and "scales 1 of 8 differ, first [7] (3, 1)" in line
    # one code per byte is accepted too
    unpacked = np.stack([codes & 0xF, codes >> 4], axis=-1).reshape(4, 64)
    assert kvq.verify("mxfp4_floor", x, unpacked, scales).ok


def test_verify_element_format():
    x = random_bits(1000)
    c = kvq.encode(x, "e5m2", overflow="nosat")
    assert kvq.verify("e5m2", x, c, overflow="nosat").ok
    r = kvq.verify("e5m2", x, c)  # satfinite differs wherever x rounds past 57344 (from 61440 on)
    with np.errstate(invalid="ignore"):
        big = np.abs(x) >= 61440
    assert big.sum() > 100 and r.code_mismatches == int(big.sum())


def test_tensor_value_given():
    x = np.random.default_rng(2).standard_normal((2, 32)).astype(np.float32)
    _, _, tv = kvq.quantize(x, "nvfp4_te")
    assert np.float32(tv) == np.abs(x).max()
    c2, s2, tv2 = kvq.quantize(x, "nvfp4_te", tensor_value=2 * tv)
    assert tv2 == np.float32(2 * tv)
    assert kvq.verify("nvfp4_te", x, c2, s2, tensor_value=2 * tv).ok
    assert not kvq.verify("nvfp4_te", x, c2, s2).ok


@pytest.mark.parametrize("scheme", ["nvfp4_te", "nvfp4_torchao", "mxfp4_floor", "mxfp8_e4m3_rceil", "fp8_e4m3"])
def test_float16_input_is_its_float32_widening(scheme):
    # float16 goes through the recipe's fp16 input path; for these recipes the result is
    # that of the (exact) float32 widening.
    x = np.random.default_rng(3).standard_normal((4, 64)).astype(np.float16)
    c16, s16, t16 = kvq.quantize(x, scheme)
    c32, s32, t32 = kvq.quantize(x.astype(np.float32), scheme)
    assert (c16 == c32).all() and t16 == t32
    assert s16 is None or (s16 == s32).all()
    assert kvq.verify(scheme, x, c16, s16).ok
