#!/usr/bin/env python3
"""Test vectors for nvfp4_te_2d and nvfp4_te_per_token from TransformerEngine's
pure-PyTorch NVFP4 reference quantizer (NVFP4QuantizerRef in
transformer_engine/pytorch/custom_recipes/reference_nvfp4.py), run on the CPU.

Usage: gen_te_nvfp4_vectors.py TE_ROOT OUT_DIR

TE_ROOT is a TransformerEngine source tree (not installed: the reference file is loaded
by path, with minimal stand-ins for the three TE modules it imports; only
reference_nvfp4.py and reference_utils.py are executed). OUT_DIR receives one file per
case, `<case>.bin`, little-endian:
  u32 rows, u32 cols, u32 n_amax
  f32 x[rows*cols]                  (row-major input)
  f32 amax[n_amax]                  (TE's global_amax_row: 1 value, or one per row)
  u8  codes[rows*cols/2]            (TE's qx: element 2i in the low nibble)
  u8  scales[rows*cols/16]          (TE's sx as e4m3 bytes, one per row and 16 columns)

RHT cases, `<case>.bin` with a `rht_` prefix: TE's columnwise path with the random
Hadamard transform (NVFP4QuantizerRef(with_rht=True), rowwise=False, columnwise=True) on a
bf16 input x (rows x cols); y = _apply_rht(x^T) is cols x rows, bf16:
  u32 rows, u32 cols, u32 random_sign_mask (0 or 1)
  u16 x[rows*cols]                  (bf16 bits, row-major)
  u16 y[cols*rows]                  (bf16 bits of TE's _apply_rht(x.t()), row-major)
  f32 amax                          (TE's global_amax_col: max |y|)
  u8  codes_t[cols*rows/2], u8 scales_t[cols*rows/16]   (TE's qx_t, sx_t)
"""
import importlib.util
import pathlib
import struct
import sys
import types

import numpy as np
import torch


def load_reference(te_root: pathlib.Path):
    base = te_root / "transformer_engine" / "pytorch" / "custom_recipes"
    pkg_names = ["transformer_engine", "transformer_engine.pytorch",
                 "transformer_engine.pytorch.custom_recipes"]
    for n in pkg_names:
        sys.modules.setdefault(n, types.ModuleType(n))

    spec = importlib.util.spec_from_file_location(
        "transformer_engine.pytorch.custom_recipes.reference_utils", base / "reference_utils.py")
    ru = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ru)
    sys.modules[spec.name] = ru
    sys.modules["transformer_engine.pytorch.custom_recipes"].reference_utils = ru

    gemm = types.ModuleType("transformer_engine.pytorch.custom_recipes.gemm")

    class _Enum:  # only used in type annotations / defaults of qgemm
        FPROP = WGRAD = DGRAD = None

    gemm.GEMMType = _Enum
    gemm.MMParams = object
    sys.modules[gemm.__name__] = gemm
    sys.modules["transformer_engine.pytorch.custom_recipes"].gemm = gemm

    qt = types.ModuleType("transformer_engine.pytorch.quantized_tensor")

    class Quantizer:  # stand-in: the usage flags the reference reads
        def __init__(self, rowwise=True, columnwise=True):
            self.rowwise_usage = rowwise
            self.columnwise_usage = columnwise

    class QuantizedTensorStorage:
        pass

    qt.Quantizer = Quantizer
    qt.QuantizedTensorStorage = QuantizedTensorStorage
    sys.modules[qt.__name__] = qt

    spec = importlib.util.spec_from_file_location(
        "transformer_engine.pytorch.custom_recipes.reference_nvfp4", base / "reference_nvfp4.py")
    ref = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ref)
    return ref


E2M1 = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0]


def hard_matrix(rng, rows, cols):
    """Random magnitudes per 16x16 tile and per row, with e2m1 midpoints and grid
    points of the block scale planted so ties and near-ties occur."""
    x = np.empty((rows, cols), dtype=np.float32)
    for r in range(rows):
        for c0 in range(0, cols, 16):
            mag = np.float32(2.0 ** rng.integers(-12, 12)) * np.float32(rng.uniform(0.5, 1.0))
            blk = rng.standard_normal(16).astype(np.float32) * mag
            kind = rng.integers(0, 4)
            if kind == 1:  # grid points / midpoints times a common power of two
                p = np.float32(2.0 ** rng.integers(-8, 8))
                mids = np.array(E2M1 + [0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0], np.float32)
                blk = rng.choice(mids, 16).astype(np.float32) * p * rng.choice([-1, 1], 16)
            elif kind == 2:  # a block of zeros with one tiny value
                blk[:] = 0
                blk[rng.integers(0, 16)] = np.float32(2.0 ** -30)
            x[r, c0:c0 + 16] = blk
    # one all-zero 16x16 tile (2D) / all-zero row chunk
    x[0:16, 0:16] = 0
    return x


def run_case(ref, x, tile, row_scaled):
    q = ref.NVFP4QuantizerRef(dtype=ref.reference_utils.Fp4Formats.E2M1, rowwise=True,
                              columnwise=False, quant_tile_shape=tile,
                              row_scaled_nvfp4=row_scaled)
    qx, sx, _, _, amax_row, _ = q._quantize(torch.from_numpy(x))
    codes = qx.contiguous().numpy().astype(np.uint8)
    scales = sx.contiguous().view(torch.uint8).numpy().astype(np.uint8)
    amax = amax_row.contiguous().numpy().astype(np.float32).reshape(-1)
    return codes, scales, amax


def write(path, x, amax, codes, scales):
    rows, cols = x.shape
    assert codes.shape == (rows, cols // 2), codes.shape
    assert scales.shape == (rows, cols // 16), scales.shape
    with open(path, "wb") as f:
        f.write(struct.pack("<III", rows, cols, amax.size))
        f.write(x.astype("<f4").tobytes())
        f.write(amax.astype("<f4").tobytes())
        f.write(codes.tobytes())
        f.write(scales.tobytes())


def run_rht_case(ref, x_bf16, random_sign):
    q = ref.NVFP4QuantizerRef(dtype=ref.reference_utils.Fp4Formats.E2M1, rowwise=False,
                              columnwise=True, quant_tile_shape=(1, 16), with_rht=True,
                              with_random_sign_mask=random_sign)
    y = q._apply_rht(x_bf16.t().contiguous())
    _, _, qx_t, sx_t, _, amax_col = q._quantize(x_bf16)
    return (y.contiguous().view(torch.int16).numpy().view(np.uint16),
            amax_col.numpy().astype(np.float32).reshape(-1),
            qx_t.contiguous().numpy().astype(np.uint8),
            sx_t.contiguous().view(torch.uint8).numpy().astype(np.uint8))


def write_rht(path, x_bf16, random_sign, y, amax, codes, scales):
    rows, cols = x_bf16.shape
    assert y.shape == (cols, rows) and amax.size == 1
    assert codes.shape == (cols, rows // 2) and scales.shape == (cols, rows // 16)
    with open(path, "wb") as f:
        f.write(struct.pack("<III", rows, cols, 1 if random_sign else 0))
        f.write(x_bf16.contiguous().view(torch.int16).numpy().view(np.uint16).astype("<u2").tobytes())
        f.write(y.astype("<u2").tobytes())
        f.write(amax.astype("<f4").tobytes())
        f.write(codes.tobytes())
        f.write(scales.tobytes())


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        sys.exit(2)
    ref = load_reference(pathlib.Path(sys.argv[1]))
    out = pathlib.Path(sys.argv[2])
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(20261202)
    cases = [
        ("te_2d_48x64", hard_matrix(rng, 48, 64), (16, 16), False),
        ("te_2d_16x32", hard_matrix(rng, 16, 32) * np.float32(1e-3), (16, 16), False),
        ("te_per_token_24x64", hard_matrix(rng, 24, 64), (1, 16), True),
        ("te_per_token_40x32", hard_matrix(rng, 40, 32) * np.float32(300.0), (1, 16), True),
    ]
    for name, x, tile, row_scaled in cases:
        codes, scales, amax = run_case(ref, x, tile, row_scaled)
        write(out / f"{name}.bin", x, amax, codes, scales)
        print(name, x.shape, "amax values:", amax.size)
    gen = torch.Generator().manual_seed(20261202)
    wide = torch.randn((64, 48), generator=gen) * torch.exp2(
        torch.randint(-24, 24, (64, 48), generator=gen).float())
    rht_cases = [
        # TE's exact test draws torch.randn in bf16 (test_nvfp4_rht_quantize_exact.py)
        ("rht_randn_64x48", torch.randn((64, 48), generator=gen).to(torch.bfloat16), True),
        ("rht_randn_nosign_32x32", torch.randn((32, 32), generator=gen).to(torch.bfloat16), False),
        # magnitudes spread over 48 binades: fp32 partial sums are no longer exact
        ("rht_wide_64x48", wide.to(torch.bfloat16), True),
    ]
    for name, x, sign in rht_cases:
        y, amax, codes, scales = run_rht_case(ref, x, sign)
        write_rht(out / f"{name}.bin", x, sign, y, amax, codes, scales)
        print(name, tuple(x.shape))


if __name__ == "__main__":
    main()
