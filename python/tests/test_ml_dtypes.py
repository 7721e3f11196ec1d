"""ml_dtypes casts from float32 as oracles, bit for bit, with the kvq policy that
reproduces each one (docs/formats.md, "Peers run as oracles", lists the same table)."""

import numpy as np
import pytest

import kvq
from conftest import format_edges, random_bits, scaled_normals

md = pytest.importorskip("ml_dtypes", reason="ml_dtypes is not installed (pip install ml_dtypes)")


def inputs(fmt):
    return np.concatenate([random_bits(200_000, seed=3), scaled_normals(100_000, seed=4), format_edges(fmt)])


def peer_codes(x, dtype_name):
    with np.errstate(invalid="ignore", over="ignore"):
        return x.astype(getattr(md, dtype_name)).view(np.uint8)


def show(x, want, got, mask):
    i = np.nonzero(mask)[0][:8]
    return [(hex(int(x.view(np.uint32)[j])), float(x[j]), hex(int(want[j])), hex(int(got[j]))) for j in i]


def check(x, want, got, where=None):
    mask = want != got if where is None else (want != got) & where
    assert not mask.any(), f"{mask.sum()} differ (bits, x, peer, kvq): {show(x, want, got, mask)}"


def sign(x):
    return (x.view(np.uint32) >> 31).astype(bool)


def test_e4m3fn_is_nosat_through_float64():
    # ml_dtypes keeps the sign of NaN and sends overflow and Inf to NaN (0x7F|sign):
    # kvq's float64 entry point with overflow=nosat, exactly.
    x = inputs("e4m3")
    want = peer_codes(x, "float8_e4m3fn")
    with np.errstate(invalid="ignore"):
        x64 = x.astype(np.float64)
    check(x, want, kvq.encode(x64, "e4m3", overflow="nosat"))
    # The float32 entry point canonicalises NaN to 0x7F (CUDA's float functions); only
    # negative NaNs differ.
    got32 = kvq.encode(x, "e4m3", overflow="nosat")
    check(x, want, got32, where=~np.isnan(x))
    nan = np.isnan(x)
    assert (want[nan] == np.where(sign(x[nan]), 0xFF, 0x7F)).all()
    assert (got32[nan] == 0x7F).all()


def test_e5m2_is_nosat_except_nan():
    x = inputs("e5m2")
    want = peer_codes(x, "float8_e5m2")
    got = kvq.encode(x, "e5m2", overflow="nosat")
    check(x, want, got, where=~np.isnan(x))
    # NaN: ml_dtypes gives 0x7E|sign whatever the payload; kvq gives CUDA's 0x7F.
    nan = np.isnan(x)
    assert (want[nan] == np.where(sign(x[nan]), 0xFE, 0x7E)).all()
    assert (got[nan] == 0x7F).all()


@pytest.mark.parametrize("dtype_name,fmt", [("float8_e4m3fnuz", "e4m3fnuz"), ("float8_e5m2fnuz", "e5m2fnuz"),
                                            ("float8_e4m3b11fnuz", "e4m3b11fnuz")])
def test_fnuz_is_nosat(dtype_name, fmt):
    x = inputs(fmt)
    check(x, peer_codes(x, dtype_name), kvq.encode(x, fmt, overflow="nosat"))


@pytest.mark.parametrize(
    "dtype_name,fmt,sign_bit",
    [("float6_e3m2fn", "e3m2", 0x20), ("float6_e2m3fn", "e2m3", 0x20), ("float4_e2m1fn", "e2m1", 0x08)],
)
@pytest.mark.parametrize("overflow", ["satfinite", "nosat"])
def test_fp6_fp4_saturate_except_nan(dtype_name, fmt, sign_bit, overflow):
    # Formats without Inf/NaN: ml_dtypes saturates like kvq (either overflow policy).
    x = inputs(fmt)
    want = peer_codes(x, dtype_name)
    got = kvq.encode(x, fmt, overflow=overflow)
    check(x, want, got, where=~np.isnan(x))
    # NaN has no code: ml_dtypes yields a zero of the opposite sign, CUDA (and kvq) +max.
    nan = np.isnan(x)
    assert (want[nan] == np.where(sign(x[nan]), 0, sign_bit)).all()
    assert (got[nan] == sign_bit - 1).all()


def test_e8m0fnu_is_nearest_nosat_on_positive_inputs():
    x = inputs("ue8m0")
    want = peer_codes(x, "float8_e8m0fnu")
    got = kvq.encode(x, "ue8m0", rounding="nearest_even", overflow="nosat")
    positive = (x > 0) | np.isnan(x)
    # In (2^-127, 1.5 * 2^-127) the nearest e8m0 value is 2^-127 (0x00): kvq gives 0x00.
    # ml_dtypes before 0.7 rounded the bits of a float32 subnormal as if it were normal
    # and went up to 2^-126 (0x01); 0.7 rounds them to 0x00 like kvq.
    band = (x > np.float32(2.0**-127)) & (x < np.float32(1.5 * 2.0**-127))
    assert band.sum() > 10
    assert (got[band] == 0x00).all()
    old_peer = tuple(int(p) for p in md.__version__.split(".")[:2]) < (0, 7)
    if old_peer:
        check(x, want, got, where=positive & ~band)
        assert (want[band] == 0x01).all()
    else:
        check(x, want, got, where=positive)
    # ml_dtypes maps 0, negatives and -Inf to NaN (0xFF); kvq takes |x| (CUDA's e8m0
    # conversions ignore the sign) and 0 -> 0x00 (2^-127).
    assert (want[x <= 0] == 0xFF).all()
    assert (got[x == 0] == 0x00).all()


def test_e8m0_ties_go_up():
    # With no mantissa bits every tie is between 2^k and 2^(k+1); both round it up.
    x = (np.exp2(np.arange(-126, 127, dtype=np.float64)) * 1.5).astype(np.float32)
    x = x[np.isfinite(x)]
    want = peer_codes(x, "float8_e8m0fnu")
    check(x, want, kvq.encode(x, "ue8m0", overflow="nosat"))
    check(x, want, kvq.encode(x, "ue8m0", rounding="nearest_away", overflow="nosat"))


@pytest.mark.parametrize(
    "dtype_name,fmt",
    [("float8_e4m3fn", "e4m3"), ("float8_e5m2", "e5m2"), ("float8_e4m3fnuz", "e4m3fnuz"),
     ("float8_e5m2fnuz", "e5m2fnuz"), ("float8_e4m3b11fnuz", "e4m3b11fnuz"), ("float6_e3m2fn", "e3m2"), ("float6_e2m3fn", "e2m3"),
     ("float4_e2m1fn", "e2m1"), ("float8_e8m0fnu", "ue8m0")],
)
def test_decode_matches_ml_dtypes(dtype_name, fmt):
    bits = next(f["bits"] for f in kvq.formats() if f["name"] == fmt)
    codes = np.arange(1 << bits, dtype=np.uint8)
    want = codes.view(getattr(md, dtype_name)).astype(np.float32)
    got = kvq.decode(codes, fmt)
    same = (want.view(np.uint32) == got.view(np.uint32)) | (np.isnan(want) & np.isnan(got))
    assert same.all(), [(hex(c), w, g) for c, w, g in zip(codes[~same], want[~same], got[~same])]
