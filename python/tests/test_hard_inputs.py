"""kvq.hard_inputs and the order kvq.verify names on a mismatch.

The kernels are NumPy NVFP4 kernels in TransformerEngine's two orders (elements times
1 / (SF * S_dec), or times S_enc / SF), with float32 arithmetic throughout. One of them
rounds e2m1 ties half away from zero: on random normal input it matches kvq (exact ties
never occur there), on kvq.hard_inputs it does not.
"""

import numpy as np
import pytest

import kvq

F32 = np.float32
E2M1 = np.array([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0], dtype=F32)


def e2m1_codes(v, ties_away):
    """Nearest e2m1 code of float32 v, saturating; ties to even code or away from zero."""
    a = np.abs(v)
    hi = np.clip(np.searchsorted(E2M1, a), 1, 7)  # first grid value >= a
    lo = hi - 1
    d_lo, d_hi = a - E2M1[lo], E2M1[hi] - a
    up = (d_hi < d_lo) | ((d_hi == d_lo) & (ties_away | (hi % 2 == 0)))
    code = np.where(up, hi, lo)
    code = np.where(a >= 6.0, 7, code)
    code = np.where(np.isnan(v), 7, code)
    return (code | np.where(np.signbit(v) & ~np.isnan(v), 8, 0)).astype(np.uint8)


def te_nvfp4(x, enc_div=False, ties_away=False):
    """TransformerEngine NVFP4: S_enc = 2688 / amax, SF = e4m3(block_amax * (S_enc * (1/6)))."""
    x = np.asarray(x, dtype=F32)
    amax = np.fmax.reduce(np.abs(x).ravel(), initial=F32(0))  # fmaxf: NaN ignored
    with np.errstate(divide="ignore"):
        s_enc = np.minimum(F32(2688) / amax, np.finfo(F32).max)
    if amax == 0 or s_enc == 0:
        s_enc = F32(1)
    s_dec = F32(1) / s_enc
    blocks = x.reshape(-1, 16)
    bamax = np.fmax.reduce(np.abs(blocks), axis=1, initial=F32(0))
    sf = kvq.encode(bamax * (s_enc * F32(1 / 6)), "e4m3")
    sff = kvq.decode(sf, "e4m3")
    with np.errstate(divide="ignore", invalid="ignore"):
        inv = s_enc / sff if enc_div else np.minimum(F32(1) / (sff * s_dec), np.finfo(F32).max)
        codes = e2m1_codes(blocks * inv[:, None].astype(F32), ties_away)
    return codes.reshape(x.shape), sf.reshape(x.shape[0], -1)


def test_hard_inputs_shape_determinism_and_refusals():
    x = kvq.hard_inputs("nvfp4_te", (2, 8, 64), seed=3)
    assert x.shape == (2, 8, 64) and x.dtype == np.float32
    assert np.array_equal(x.view(np.uint32), kvq.hard_inputs("nvfp4_te", (2, 8, 64), seed=3).view(np.uint32))
    assert not np.array_equal(x.view(np.uint32), kvq.hard_inputs("nvfp4_te", (2, 8, 64), seed=4).view(np.uint32))
    assert np.isnan(x).any() and not np.isinf(x).any()  # TE ignores NaN; an Inf would be the tensor amax
    with pytest.raises(ValueError, match="not a multiple of the block size 16"):
        kvq.hard_inputs("nvfp4_te", (4, 40))
    with pytest.raises(ValueError, match="unknown scheme 'nvfp5'"):
        kvq.hard_inputs("nvfp5", (4, 64))


def test_ties_away_kernel_passes_random_input_and_fails_the_hard_set():
    x = np.random.default_rng(0).standard_normal((64, 256)).astype(F32)
    codes, scales = te_nvfp4(x, ties_away=True)
    assert kvq.verify("nvfp4_te", x, codes, scales).ok  # random input has no exact ties

    x = kvq.hard_inputs("nvfp4_te", (64, 256))
    good_codes, good_scales = te_nvfp4(x)
    assert kvq.verify("nvfp4_te", x, good_codes, good_scales).ok
    codes, scales = te_nvfp4(x, ties_away=True)
    r = kvq.verify("nvfp4_te", x, codes, scales)
    assert not r.ok
    assert r.code_mismatches > 0 and r.scale_mismatches == 0
    assert r.matches == []  # no known order rounds ties away


@pytest.mark.parametrize("seed", range(4))
def test_readme_template_fails_a_ties_away_kernel_on_every_seed(seed):
    # python/README.md's pytest template: (256, 128) hard inputs per seed. A faithful
    # kernel passes it, the ties-away one fails it on every seed.
    x = kvq.hard_inputs("nvfp4_te", (256, 128), seed=seed)
    codes, scales = te_nvfp4(x)
    assert kvq.verify("nvfp4_te", x, codes, scales).ok
    codes, scales = te_nvfp4(x, ties_away=True)
    r = kvq.verify("nvfp4_te", x, codes, scales)
    assert not r.ok and r.code_mismatches > 0


def test_the_other_te_order_is_named():
    x = kvq.hard_inputs("nvfp4_te", (64, 256))
    codes, scales = te_nvfp4(x, enc_div=True)
    r = kvq.verify("nvfp4_te", x, codes, scales)
    assert not r.ok
    assert r.matches == ["nvfp4_te_enc_div"]
    assert "matches nvfp4_te_enc_div exactly" in str(r)
    assert "matches nvfp4_te_enc_div exactly" in repr(r)
    assert kvq.verify("nvfp4_te_enc_div", x, codes, scales).ok
    # and the other way round
    codes, scales = te_nvfp4(x)
    assert kvq.verify("nvfp4_te_enc_div", x, codes, scales).matches == ["nvfp4_te"]
