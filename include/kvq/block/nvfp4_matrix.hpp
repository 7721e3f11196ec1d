/// \file
/// kvq/block/nvfp4_matrix.hpp — TransformerEngine NVFP4 recipes whose scales are not
/// one tensor value plus per-row 16-element blocks: the 2D recipe (one scale per 16x16
/// tile) and the per-token (row-scaled) recipe (one tensor amax per row). Both are
/// functions over a row-major rows x cols fp32 matrix; the element and scale arithmetic
/// is nvfp4_te's (nvfp4.hpp), only the amax that sets each scale differs.
///
/// nvfp4_te_2d — TE's weight recipe (NVFP4BlockScaling with 2D quantization)
/// ~~~
///   transformer_engine/common/cast/nvfp4/quantize_transpose_nvfp4.cuh
///     (quantize_transpose_nvfp4_2D_kernel: block_amax_matrix = amax of each 16x16 tile,
///      fmaxf(thread_amax, fabsf(elt)) from 0, then the 1D scale computation);
///   test reference transformer_engine/pytorch/custom_recipes/reference_nvfp4.py
///     (_quantize_blockwise_reference with tile_len_x = tile_len_y = 16: vec_max = the
///      tile amax, repeated for the tile's 16 rows).
///   amax  = tensor amax (fmaxf over |x| from 0), S_enc, S_dec as nvfp4_te::prepare
///   T     = amax of the 16x16 tile holding x
///   SF    = e4m3(T * (S_enc * fp32(1/6)));  inv = fminf(1 / (float(SF) * S_dec), FLT_MAX)
///   q     = e2m1(x * inv);  dequantize x = e2m1 * ((float(SF) * amax) * fp32(1/2688))
///   scales: one byte per tile, tile (i, j) = rows 16i..16i+15, columns 16j..16j+15,
///   stored row-major as scales[i * (cols / 16) + j]. TE's own tensors hold the same
///   byte once per row (sx[r][j] = scales[(r / 16) * (cols / 16) + j]); kvq stores it once.
///   codes: row-major, two per byte, element 2k in the low nibble (as nvfp4_te).
///   rows and cols must be multiples of 16 (TE pads a ragged edge with zeros).
///   Not a KV-cache scheme: a tile spans 16 tokens, so a token cannot be stored until
///   the 15 after it exist, and the registry's schemes store one token row at a time.
/// ~~~
///
/// nvfp4_te_per_token — TE's row-scaled NVFP4 (NVFP4Quantizer row_scaled_nvfp4)
/// ~~~
///   transformer_engine/common/cast/dispatch/quantize.cuh (row_scaled_nvfp4:
///     nvfp4::compute_rowwise_amax, one amax per row), dequantize_nvfp4.cuh
///     (ROW_SCALED_NVFP4: amax = tensor_amax[y]);
///   test reference reference_nvfp4.py (_quantize with row_scaled_nvfp4 = True:
///     global_amax_row = max |x| of each row, global_encode_scale per row).
///   Row r is nvfp4_te's 1D recipe with the tensor amax replaced by row r's amax:
///   S_enc(r) = fminf(2688 / amax_r, FLT_MAX) (1 for amax_r 0 or Inf), 16-element blocks
///   along the row, and the row amax is the value stored per row.
///   Row amax NaN rule: nvfp4_te's (fmaxf from 0, NaN ignored); TE's reference uses
///   torch.max (NaN propagates) and the CUDA row-amax kernel a bf16/fp16 max tree; rows
///   with NaN are not part of the modelled contract.
/// ~~~
///
/// Both references map a scaled input of -0 differently: the PyTorch reference's
/// cast_to_fp4x2 gives code 0x0 (its `x < -0.0` test is false for -0), the CUDA kernels'
/// cvt.rn.satfinite.e2m1x2.f32 keeps the sign (0x8). kvq follows the CUDA kernels.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

#include <kvq/block/api.hpp>
#include <kvq/block/io16.hpp>
#include <kvq/block/nvfp4.hpp>
#include <kvq/block/scheme.hpp>
#include <kvq/config.hpp>
#include <kvq/core/error.hpp>

namespace kvq {
namespace block {

/// Canonical name of TE's 2D (16x16-tile) NVFP4 recipe.
inline constexpr const char* nvfp4_te_2d_name = "nvfp4_te_2d";
/// Canonical name of TE's per-token (row-scaled) NVFP4 recipe.
inline constexpr const char* nvfp4_te_per_token_name = "nvfp4_te_per_token";

namespace detail {

inline std::size_t nvfp4_matrix_check(const char* fn, std::size_t rows, std::size_t cols, std::size_t row_multiple,
                                      const void* a, const void* b, const void* c, const void* d) {
  const std::string who = std::string("kvq::block::") + fn + ": ";
  if (cols % 16 != 0)
    throw std::invalid_argument(who + "cols " + std::to_string(cols) + " is not a multiple of 16");
  if (rows % row_multiple != 0)
    throw std::invalid_argument(who + "rows " + std::to_string(rows) + " is not a multiple of " +
                                std::to_string(row_multiple));
  const std::size_t n = kvq::detail::checked_mul(rows, cols, who + "rows x cols");
  if (n > 0 && (a == nullptr || b == nullptr || c == nullptr || d == nullptr))
    throw std::invalid_argument(who + "null buffer");
  return n;
}

}  // namespace detail

/// Bytes of codes (rows * cols / 2) and of scales of nvfp4_te_2d: one per 16x16 tile.
inline std::size_t nvfp4_te_2d_scale_count(std::size_t rows, std::size_t cols) noexcept {
  return (rows / 16) * (cols / 16);
}

/// TE's 2D NVFP4 (see the file comment): quantizes the row-major rows x cols matrix x
/// into codes[rows * cols / 2], scales[(rows / 16) * (cols / 16)] (one e4m3 byte per
/// 16x16 tile, row-major over tiles) and *amax (the tensor amax, fmaxf over |x|).
/// An empty matrix writes nothing. Throws std::invalid_argument, writing nothing, when
/// rows or cols is not a multiple of 16, rows x cols overflows, or a buffer is null
/// with a nonempty matrix.
inline void nvfp4_te_2d_quantize(const float* x, std::size_t rows, std::size_t cols, std::uint8_t* codes,
                                 std::uint8_t* scales, float* amax) {
  const std::size_t n = detail::nvfp4_matrix_check("nvfp4_te_2d_quantize", rows, cols, 16, x, codes, scales, amax);
  if (n == 0) return;
  const float a = tensor_amax<f32_input>(x, n, amax_nan::ignore);
  *amax = a;
  const nvfp4_te recipe{};
  const nvfp4_te::params p = nvfp4_te::prepare(a);
  const std::size_t tiles_x = cols / 16;
  for (std::size_t ti = 0; ti < rows / 16; ++ti) {
    for (std::size_t tj = 0; tj < tiles_x; ++tj) {
      float t = 0.0f;  // fmaxf(thread_amax, fabsf(elt)) from 0, as the 2D kernel
      for (std::size_t r = 0; r < 16; ++r)
        for (std::size_t c = 0; c < 16; ++c)
          t = detail::fmax_ign(t, detail::abs_bits(x[(ti * 16 + r) * cols + tj * 16 + c]));
      std::uint8_t sf = 0;
      for (std::size_t r = 0; r < 16; ++r) {
        const std::size_t off = (ti * 16 + r) * cols + tj * 16;
        recipe.quantize_block_amax<f32_input>(x + off, t, p, codes + off / 2, &sf);
      }
      scales[ti * tiles_x + tj] = sf;
    }
  }
}

/// Dequantizes nvfp4_te_2d codes and tile scales (layout as nvfp4_te_2d_quantize) with
/// the tensor amax into out[rows * cols]: x = e2m1 * ((float(SF) * amax) * fp32(1/2688))
/// (dequantize_nvfp4.cuh). Same size checks as nvfp4_te_2d_quantize.
inline void nvfp4_te_2d_dequantize(const std::uint8_t* codes, const std::uint8_t* scales, float amax,
                                   std::size_t rows, std::size_t cols, float* out) {
  detail::nvfp4_matrix_check("nvfp4_te_2d_dequantize", rows, cols, 16, codes, scales, out, out);
  const nvfp4_te recipe{};
  const nvfp4_te::params p = nvfp4_te::prepare(amax);
  const std::size_t tiles_x = cols / 16;
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t tj = 0; tj < tiles_x; ++tj) {
      const std::size_t off = r * cols + tj * 16;
      recipe.dequantize_block(codes + off / 2, scales[(r / 16) * tiles_x + tj], 0.0f, p, out + off);
    }
}

/// TE's row-scaled NVFP4 (see the file comment): row r of the row-major rows x cols
/// matrix x is quantized with nvfp4_te's 1D recipe under its own amax, stored in
/// row_amax[r]; codes[rows * cols / 2] and scales[rows * cols / 16] (one e4m3 byte per
/// 16 elements of a row, row-major) as nvfp4_te. Throws std::invalid_argument, writing
/// nothing, when cols is not a multiple of 16, rows x cols overflows, or a buffer is null
/// with a nonempty matrix.
inline void nvfp4_te_per_token_quantize(const float* x, std::size_t rows, std::size_t cols, std::uint8_t* codes,
                                        std::uint8_t* scales, float* row_amax) {
  detail::nvfp4_matrix_check("nvfp4_te_per_token_quantize", rows, cols, 1, x, codes, scales, row_amax);
  const nvfp4_te recipe{};
  for (std::size_t r = 0; r < rows; ++r) {
    const float* row = x + r * cols;
    const float a = tensor_amax<f32_input>(row, cols, amax_nan::ignore);
    row_amax[r] = a;
    const nvfp4_te::params p = nvfp4_te::prepare(a);
    for (std::size_t b = 0; b < cols / 16; ++b)
      recipe.quantize_block<f32_input>(row + b * 16, p, codes + (r * cols + b * 16) / 2, scales + r * (cols / 16) + b,
                                       nullptr);
  }
}

/// Dequantizes nvfp4_te_per_token codes and scales with the per-row amax row_amax[rows]
/// into out[rows * cols]: row r as nvfp4_te with tensor value row_amax[r]
/// (dequantize_nvfp4.cuh, ROW_SCALED_NVFP4). Same size checks as the quantizer.
inline void nvfp4_te_per_token_dequantize(const std::uint8_t* codes, const std::uint8_t* scales,
                                          const float* row_amax, std::size_t rows, std::size_t cols, float* out) {
  detail::nvfp4_matrix_check("nvfp4_te_per_token_dequantize", rows, cols, 1, codes, scales, row_amax, out);
  const nvfp4_te recipe{};
  for (std::size_t r = 0; r < rows; ++r) {
    const nvfp4_te::params p = nvfp4_te::prepare(row_amax[r]);
    for (std::size_t b = 0; b < cols / 16; ++b) {
      const std::size_t off = r * cols + b * 16;
      recipe.dequantize_block(codes + off / 2, scales[r * (cols / 16) + b], 0.0f, p, out + off);
    }
  }
}

}  // namespace block
}  // namespace kvq
