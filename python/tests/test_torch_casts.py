"""PyTorch's own float32 -> float8 / e8m0 / fp4 casts (CPU) as oracles, bit for bit."""

import numpy as np
import pytest

import kvq
from conftest import format_edges, random_bits, scaled_normals

torch = pytest.importorskip("torch", reason="torch is not installed (pip install torch)")


def inputs(fmt):
    return np.concatenate([random_bits(200_000, seed=5), scaled_normals(100_000, seed=6), format_edges(fmt)])


def torch_codes(x, dtype_name):
    d = getattr(torch, dtype_name, None)
    if d is None:
        pytest.skip(f"torch {torch.__version__} has no torch.{dtype_name}")
    return torch.from_numpy(x).to(d).view(torch.uint8).numpy()


def sign(x):
    return (x.view(np.uint32) >> 31).astype(bool)


def check(x, want, got, where=None):
    mask = want != got if where is None else (want != got) & where
    i = np.nonzero(mask)[0][:8]
    detail = [(hex(int(x.view(np.uint32)[j])), float(x[j]), hex(int(want[j])), hex(int(got[j]))) for j in i]
    assert not mask.any(), f"{mask.sum()} differ (bits, x, torch, kvq): {detail}"


def test_float8_e4m3fn_saturates_and_keeps_nan_sign():
    # torch saturates overflow and Inf to +-448 and keeps the sign of NaN: kvq's float64
    # entry point (sign-keeping NaN, as cuda_fp8.hpp's double path) with satfinite.
    x = inputs("e4m3")
    want = torch_codes(x, "float8_e4m3fn")
    with np.errstate(invalid="ignore"):
        x64 = x.astype(np.float64)
    check(x, want, kvq.encode(x64, "e4m3", overflow="satfinite"))
    check(x, want, kvq.encode(x, "e4m3", overflow="satfinite"), where=~np.isnan(x))


def test_float8_e5m2_is_nosat_except_nan_sign():
    x = inputs("e5m2")
    want = torch_codes(x, "float8_e5m2")
    got = kvq.encode(x, "e5m2", overflow="nosat")
    check(x, want, got, where=~np.isnan(x))
    nan = np.isnan(x)
    assert (want[nan] == np.where(sign(x[nan]), 0xFF, 0x7F)).all()  # torch: 0x7F | sign
    assert (got[nan] == 0x7F).all()


@pytest.mark.parametrize("dtype_name,fmt", [("float8_e4m3fnuz", "e4m3fnuz"), ("float8_e5m2fnuz", "e5m2fnuz")])
def test_float8_fnuz_is_nosat(dtype_name, fmt):
    x = inputs(fmt)
    check(x, torch_codes(x, dtype_name), kvq.encode(x, fmt, overflow="nosat"))


def test_float8_e8m0fnu_is_nearest_nosat_on_abs():
    x = inputs("ue8m0")
    want = torch_codes(x, "float8_e8m0fnu")
    got = kvq.encode(x, "ue8m0", rounding="nearest_even", overflow="nosat")
    # Like ml_dtypes, torch rounds a float32 subnormal's bits as if it were normal:
    # |x| in (2^-127, 1.5 * 2^-127) goes to 2^-126 (0x01) although 2^-127 is nearer.
    a = np.abs(x)
    band = (a > np.float32(2.0**-127)) & (a < np.float32(1.5 * 2.0**-127))
    assert band.sum() > 10
    check(x, want, got, where=~band)
    assert (want[band] == 0x01).all() and (got[band] == 0x00).all()


def test_float4_e2m1fn_x2():
    if not hasattr(torch, "float4_e2m1fn_x2"):
        pytest.skip(f"torch {torch.__version__} has no float4_e2m1fn_x2")
    x = inputs("e2m1")
    x = x[: len(x) // 2 * 2]
    try:
        want = torch.from_numpy(x).to(torch.float4_e2m1fn_x2)
    except (NotImplementedError, RuntimeError) as e:
        pytest.skip(f"torch {torch.__version__} has no float32 -> float4_e2m1fn_x2 cast ({type(e).__name__})")
    packed = want.view(torch.uint8).numpy()
    lo, hi = packed & 0xF, packed >> 4
    got = kvq.encode(x, "e2m1")
    check(x[0::2], lo, got[0::2], where=~np.isnan(x[0::2]))
    check(x[1::2], hi, got[1::2], where=~np.isnan(x[1::2]))


def test_dlpack_tensor_input_is_read_in_place():
    # A float32 CPU tensor goes in through DLPack; the result equals the NumPy path.
    t = torch.randn(64, 128)
    x = t.numpy()
    assert (kvq.encode(t, "e4m3") == kvq.encode(x, "e4m3")).all()
    c, s, tv = kvq.quantize(t, "nvfp4_te")
    c2, s2, tv2 = kvq.quantize(x, "nvfp4_te")
    assert (c == c2).all() and (s == s2).all() and tv == tv2
    # a transposed (non-contiguous) tensor is gathered, not rejected
    assert (kvq.encode(t.T, "e5m2") == kvq.encode(np.ascontiguousarray(x.T), "e5m2")).all()


@pytest.mark.parametrize("scheme", ["nvfp4_te", "mxfp8_e4m3_floor", "fp8_per_token_head"])
def test_bfloat16_tensor_input(scheme):
    # bfloat16 CPU tensors arrive through DLPack and take the recipe's bf16 input path.
    t = torch.randn(8, 64, generator=torch.Generator().manual_seed(0)).to(torch.bfloat16)
    cb, sb, tb = kvq.quantize(t, scheme)
    c32, s32, t32 = kvq.quantize(t.float(), scheme)
    assert (cb == c32).all() and (sb == s32).all() and tb == t32
    assert kvq.verify(scheme, t, cb, sb).ok
