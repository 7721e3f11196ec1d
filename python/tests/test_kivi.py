"""KIVI zero-point schemes through kvq.quantize / kvq.dequantize, against an independent
NumPy model of KIVI's group quantizer (jy-yuan/KIVI quant/new_pack.py: mn, mx per group,
scale = (mx - mn) / (2^bits - 1), q = round-half-even((x - mn) / scale) clamped, x' = q *
scale + mn), every operation rounded once to float32 (or float16 for the _fp16 variants)."""

import numpy as np
import pytest

import kvq


def kivi_numpy(x, bits, dt):
    g = x.reshape(*x.shape[:-1], -1, 32).astype(dt)
    mn = g.min(axis=-1, keepdims=True)
    mx = g.max(axis=-1, keepdims=True)
    inv = np.float32(1) / np.float32(2**bits - 1)  # PyTorch multiplies by fp32(1/(2^bits-1))
    scale = (mx - mn).astype(dt)
    scale = (scale.astype(np.float32) * inv).astype(dt)
    with np.errstate(invalid="ignore", divide="ignore"):
        q = ((g - mn).astype(dt) / scale).astype(dt)
    q = np.where(np.isnan(q), 0, np.rint(np.clip(q, 0, 2**bits - 1))).astype(np.uint8)
    deq = ((q.astype(dt) * scale).astype(dt) + mn).astype(dt)
    return q.reshape(x.shape), scale[..., 0].astype(np.float32), mn[..., 0].astype(np.float32), \
        deq.reshape(x.shape).astype(np.float32)


def unpack(codes, bits, n):
    per = 8 // bits
    out = np.zeros(codes.shape[:-1] + (n,), np.uint8)
    for i in range(n):
        out[..., i] = (codes[..., i // per] >> ((i % per) * bits)) & (2**bits - 1)
    return out


@pytest.mark.parametrize("bits", [2, 4, 8])
@pytest.mark.parametrize("fp16", [False, True])
def test_kivi_matches_numpy_model(bits, fp16):
    name = f"kivi_int{bits}" + ("_fp16" if fp16 else "")
    dt = np.float16 if fp16 else np.float32
    rng = np.random.default_rng(bits + 10 * fp16)
    x = (rng.standard_normal((3, 4, 128)) * rng.choice([0.1, 1, 30], (3, 4, 1))).astype(np.float32)
    x[0, 0, :32] = 0.75  # a constant group: scale 0, codes 0, decodes to the minimum
    codes, scales, zeros = kvq.quantize(x, name)
    assert codes.shape == (3, 4, 128 * bits // 8) and codes.dtype == np.uint8
    assert scales.shape == zeros.shape == (3, 4, 4) and scales.dtype == zeros.dtype == np.float32
    q, s, mn, deq = kivi_numpy(x, bits, dt)
    assert (unpack(codes, bits, 128) == q).all()
    assert (scales == s).all() and (zeros == mn).all()
    y = kvq.dequantize(codes, scales, name, zeros)
    assert y.shape == x.shape and (y.view(np.uint32) == deq.view(np.uint32)).all()
    assert (y[0, 0, :32] == np.float32(0.75)).all()


def test_kivi_names():
    everything = kvq.schemes(all=True)
    assert {"bf16", "fp32", "kivi_int2", "kivi_int4_fp16", "nvfp4_te"} <= set(everything)
    assert "kivi_int4" not in kvq.schemes() and set(kvq.schemes()) <= set(everything)
    with pytest.raises(ValueError, match="not a multiple of the block size 32"):
        kvq.quantize(np.zeros((2, 48), np.float32), "kivi_int4")


def test_calibrate_follows_the_registry_rule():
    x = np.array([[0.5, -3.0, 2.0, 1.0] * 16], np.float32)
    assert kvq.calibrate(x, "fp8_e4m3") == 1.0                     # vLLM default k_scale
    assert kvq.calibrate(x, "fp8_e4m3_cal", "key") == np.float32(3.0) * np.float32(1 / 200)
    assert kvq.calibrate(x, "fp8_e4m3_cal", "value") == np.float32(3.0) * np.float32(1 / 100)
    assert kvq.calibrate(x, "nvfp4_te") == 3.0                     # TE: the tensor amax
    assert kvq.calibrate(x, "mxfp4_rceil") is None and kvq.calibrate(x, "kivi_int4") is None
    with pytest.raises(ValueError, match="role must be"):
        kvq.calibrate(x, "fp8_e4m3_cal", "query")
