"""torchao's own quantization functions (CPU) as oracles for kvq's torchao recipes:
NVFP4 (nvfp4_tensor.py nvfp4_quantize, single-level and with per_tensor_scale) and MX
(mx_tensor.py to_mx, FLOOR and RCEIL, every element format)."""

import numpy as np
import pytest

import kvq
from conftest import block_edge_rows

torch = pytest.importorskip("torch", reason="torch is not installed (pip install torch torchao)")
nvfp4 = pytest.importorskip("torchao.prototype.mx_formats.nvfp4_tensor", reason="torchao is not installed")
mx = pytest.importorskip("torchao.prototype.mx_formats.mx_tensor", reason="torchao is not installed")
from torchao.prototype.mx_formats.config import ScaleCalculationMode  # noqa: E402
from torchao.prototype.mx_formats.constants import DTYPE_FP6_E2M3, DTYPE_FP6_E3M2  # noqa: E402


def nvfp4_inputs(seed):
    rng = np.random.default_rng(seed)
    rows = [block_edge_rows(16, seed=seed, element_max=6.0).reshape(-1, 64)]
    rows.append(rng.standard_normal((64, 256)).astype(np.float32).reshape(-1, 64))
    rows.append((rng.standard_normal((32, 64)) * 1e-3).astype(np.float32))
    return np.concatenate(rows)


def finite_rows(x):
    return x[np.isfinite(x).all(axis=1)]


def unpack4(packed):
    p = np.asarray(packed, dtype=np.uint8).reshape(-1)
    return np.stack([p & 0xF, p >> 4], axis=-1).reshape(-1)


def split_blocks(x, codes, scales, block, bits, ordinary):
    """The blocks where `ordinary` holds and the rest, each as (x, codes, scales) with
    one block per row (codes one per byte)."""
    xb = x.reshape(-1, block)
    cb = (unpack4(codes) if bits == 4 else np.asarray(codes).reshape(-1)).reshape(-1, block)
    sb = np.asarray(scales).reshape(-1)
    return [(xb[m], cb[m], sb[m]) for m in (ordinary, ~ordinary)]


# torchao 0.18 differs from kvq's torchao recipes in blocks with non-finite values (and
# for MX in blocks whose scale clamps to 2^-127); the ordinary blocks must match bit for
# bit, the others are kept as strict xfails so a fix on either side is noticed.
EDGE_REASON = ("torchao 0.18 edge blocks: NVFP4 NaN block codes 0x4 (f32_to_f4_unpacked on NaN bits), "
               "MX NaN block scale 0xFF decoded as Inf so finite elements become 0, Inf block scale from the "
               "exponent field (FLOOR 0xF7.., RCEIL 0xFE), scale code 0 divides by 2^-126 (F32_MIN_NORMAL "
               "clamp); kvq models an earlier torchao")


def nvfp4_single(seed):
    x = nvfp4_inputs(seed)
    scales, data = nvfp4.nvfp4_quantize(torch.from_numpy(x), block_size=16)
    ordinary = np.isfinite(x.reshape(-1, 16)).all(axis=1)
    return split_blocks(x, data.numpy(), scales.view(torch.uint8).numpy(), 16, 4, ordinary)


@pytest.mark.parametrize("seed", [0, 1])
def test_nvfp4_single_level(seed):
    (x, c, s), _ = nvfp4_single(seed)
    r = kvq.verify("nvfp4_torchao", x, c, s)
    assert r.ok, r


@pytest.mark.xfail(strict=True, reason=EDGE_REASON)
def test_nvfp4_single_level_nan_blocks():
    _, (x, c, s) = nvfp4_single(0)
    assert len(x) > 0
    r = kvq.verify("nvfp4_torchao", x, c, s)
    assert r.ok, r


def scale_tie_rows():
    """Blocks whose e4m3 scale s is not a power of two and whose elements are m * s for an
    e2m1 midpoint m: x / s lands exactly on the tie, x * (1 / s) may not. torchao 0.18
    multiplies by the reciprocal (earlier torchao divided); kvq's recipe follows 0.18."""
    rows = []
    for s in [1.125, 1.25, 1.375, 1.625, 1.75, 1.875, 0.875, 0.6875, 1.375 * 2**5, 1.625 * 2**-7]:
        for m in [0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0]:
            r = np.full(16, m * s)
            r[0] = 6 * s  # block amax / 6 == s exactly
            rows += [r, -r]
    return np.stack(rows).astype(np.float32)


@pytest.mark.parametrize("two_level", [False, True])
def test_nvfp4_ties_under_non_power_of_two_scales(two_level):
    x = scale_tie_rows()
    # The rows separate the two orders: for some elements x / s and x * (1 / s) differ.
    s = (np.abs(x).max(axis=1, keepdims=True) / np.float32(6)).astype(np.float32)
    assert (x / s != x * (np.float32(1) / s)).any()
    t = torch.from_numpy(x)
    if two_level:
        pts = nvfp4.per_tensor_amax_to_scale(torch.max(torch.abs(t)))
        scales, data = nvfp4.nvfp4_quantize(t, block_size=16, per_tensor_scale=pts)
        r = kvq.verify("nvfp4_torchao_two_level", x, data.numpy(), scales.view(torch.uint8).numpy(),
                       tensor_value=float(pts))
    else:
        scales, data = nvfp4.nvfp4_quantize(t, block_size=16)
        r = kvq.verify("nvfp4_torchao", x, data.numpy(), scales.view(torch.uint8).numpy())
    assert r.ok, r


@pytest.mark.parametrize("seed", [0, 1])
def test_nvfp4_two_level(seed):
    x = finite_rows(nvfp4_inputs(seed))  # a NaN/Inf amax makes the whole tensor NaN
    amax = torch.max(torch.abs(torch.from_numpy(x)))
    pts = nvfp4.per_tensor_amax_to_scale(amax)
    scales, data = nvfp4.nvfp4_quantize(torch.from_numpy(x), block_size=16, per_tensor_scale=pts)
    r = kvq.verify("nvfp4_torchao_two_level", x, data.numpy(), scales.view(torch.uint8).numpy(),
                   tensor_value=float(pts))
    assert r.ok, r


def test_nvfp4_two_level_tensor_value_from_amax():
    # kvq computes per_tensor_scale = amax / 2688 as PyTorch's CUDA kernel does for a
    # division by a Python scalar: amax * fp32(1 / 2688). PyTorch on the CPU divides
    # exactly, which differs in the last bit for about a fifth of all amax values.
    amaxes = np.random.default_rng(8).uniform(0.01, 1000, 64).astype(np.float32)
    cpu_differs = 0
    for a in amaxes:
        x = np.zeros((1, 16), np.float32)
        x[0, 3] = a
        _, _, tv = kvq.quantize(x, "nvfp4_torchao_two_level")
        assert np.float32(tv) == a * np.float32(1.0 / 2688.0), (a, tv)
        pts = nvfp4.per_tensor_amax_to_scale(torch.tensor(a)).item()
        assert np.float32(pts) == np.float32(np.float64(a) / 2688.0)  # CPU: correctly rounded
        cpu_differs += np.float32(pts) != np.float32(tv)
    assert cpu_differs > 0


@pytest.mark.xfail(strict=True, reason="PyTorch on the CPU divides by a Python scalar exactly; CUDA (which kvq "
                   "models) multiplies by its fp32 reciprocal, so amax / 6 can cross an e4m3 tie differently")
def test_nvfp4_block_scale_division_on_cpu():
    # amax one float below 6 * 0.296875 (0.296875: the e4m3 midpoint between 0.28125 and
    # 0.3125): the exact quotient and the reciprocal product round to different sides.
    a = np.nextafter(np.float32(6 * 0.296875), np.float32(0))
    assert np.float32(np.float64(a) / 6) != a * np.float32(1.0 / 6.0)
    x = np.zeros((1, 16), np.float32)
    x[0, 0] = a
    scales, data = nvfp4.nvfp4_quantize(torch.from_numpy(x), block_size=16)
    r = kvq.verify("nvfp4_torchao", x, data.numpy(), scales.view(torch.uint8).numpy())
    assert r.ok, r


ELEMENTS = [
    ("e4m3", lambda: torch.float8_e4m3fn, "mxfp8_e4m3", 448.0),
    ("e5m2", lambda: torch.float8_e5m2, "mxfp8_e5m2", 57344.0),
    ("e3m2", lambda: DTYPE_FP6_E3M2, "mxfp6_e3m2", 28.0),
    ("e2m3", lambda: DTYPE_FP6_E2M3, "mxfp6_e2m3", 7.5),
    ("e2m1", lambda: torch.float4_e2m1fn_x2, "mxfp4", 6.0),
]


def element_codes(data_lp):
    if data_lp.dtype in (torch.float8_e4m3fn, torch.float8_e5m2):
        return data_lp.view(torch.uint8).numpy()
    return data_lp.numpy()  # FP6: one code per byte; FP4: packed, element 2i low


def mx_case(dtype, emax, mode):
    rng = np.random.default_rng(11)
    x = np.concatenate([block_edge_rows(32, seed=5, element_max=emax).reshape(-1, 128),
                        rng.standard_normal((64, 128)).astype(np.float32)])
    scale, data = mx.to_mx(torch.from_numpy(x), dtype(), 32, getattr(ScaleCalculationMode, mode))
    scale = scale.view(torch.uint8).numpy().reshape(-1)
    codes = element_codes(data)
    ordinary = np.isfinite(x.reshape(-1, 32)).all(axis=1) & (scale > 0) & (scale < 0xFF)
    bits = 4 if dtype() is torch.float4_e2m1fn_x2 else 8
    return split_blocks(x, codes, scale, 32, bits, ordinary)


MODES = [("FLOOR", "_floor"), ("RCEIL", "_rceil_torchao")]


@pytest.mark.parametrize("elem,dtype,prefix,emax", ELEMENTS, ids=[e[0] for e in ELEMENTS])
@pytest.mark.parametrize("mode,suffix", MODES)
def test_mx(elem, dtype, prefix, emax, mode, suffix):
    (x, c, s), _ = mx_case(dtype, emax, mode)
    assert len(x) > 100
    r = kvq.verify(prefix + suffix, x, c, s)
    assert r.ok, r


@pytest.mark.xfail(strict=True, reason=EDGE_REASON)
@pytest.mark.parametrize("elem,dtype,prefix,emax", ELEMENTS, ids=[e[0] for e in ELEMENTS])
@pytest.mark.parametrize("mode,suffix", MODES)
def test_mx_edge_blocks(elem, dtype, prefix, emax, mode, suffix):
    _, (x, c, s) = mx_case(dtype, emax, mode)
    assert len(x) > 0
    r = kvq.verify(prefix + suffix, x, c, s)
    assert r.ok, r
