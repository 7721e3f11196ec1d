/// \file
/// kvq/block/rht.hpp — TransformerEngine's random Hadamard transform (RHT) before NVFP4
/// quantization, as TE's PyTorch reference computes it
/// (transformer_engine/pytorch/custom_recipes/reference_nvfp4.py: NVFP4QuantizerRef
/// with_rht, _build_hadamard_matrix, _apply_rht, get_wgrad_sign_vector).
///
/// ~~~
///   H      16x16 Sylvester Hadamard matrix, H[i][j] = (-1)^popcount(i & j)
///   s      TE's fixed sign vector (get_wgrad_sign_vector), or all +1 without the
///          random sign mask (with_random_sign_mask = False)
///   T      = diag(s) H * (1/sqrt(16)) = entries ±0.25, built in the input's dtype (exact)
///   y      = x_block @ T for each 16 consecutive elements x_block of a row of the
///            transform's input:  y_j = sum_i x_i * s_i * H[i][j] * 0.25
///   which  TE applies it to the columnwise (transposed) operand only: the input of the
///          transform is x^T, so each 16-element block runs along x's rows (tokens / M),
///          and NVFP4 quantizes y (cols x rows) with nvfp4_te's 1D recipe, its tensor
///          amax taken over y (with_post_rht_amax). The rowwise operand is not transformed.
/// ~~~
/// Precision: the reference computes `x_mat @ transform` in the input dtype (a bf16
/// matmul for bf16 input: fp32 accumulation, the result rounded to bf16). kvq
/// accumulates in fp32 in the order i = 0..15 (no FMA) and rounds the sum to the input
/// type (In::round). Each product x_i * ±0.25 is exact, so the result is the reference's
/// whenever the fp32 partial sums are exact, which holds for any summation order when
/// the 16 bf16 inputs of a block span at most 12 binades (8 significand bits + 4 bits of
/// carry for 16 terms fit fp32's 24). Outside that range the reference's CPU matmul sums
/// in its own (unspecified) order and kvq's fixed order can differ in the last bit
/// before the bf16 rounding (tests/block/test_rht.cpp measures how often on inputs spread
/// over 48 binades).
/// Not modelled: the CUDA kernels (hadamard_transform_cast_fusion.cu, bf16 MMA with fp32
/// accumulation) where their accumulation is inexact, and the kernel's 16-bit
/// random_sign_mask argument beyond the fixed sign vector of the reference.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include <kvq/block/api.hpp>
#include <kvq/block/io16.hpp>
#include <kvq/block/nvfp4.hpp>
#include <kvq/block/scheme.hpp>
#include <kvq/config.hpp>
#include <kvq/core/error.hpp>

namespace kvq {
namespace block {

/// TE's RHT sign vector (reference_nvfp4.py get_wgrad_sign_vector): true = -1.
KVQ_HD constexpr bool te_rht_sign_negative(int i) noexcept {
  // [1, 1, 1, -1, 1, -1, -1, -1, -1, -1, -1, 1, -1, 1, -1, -1]
  return ((0xD7E8u >> i) & 1u) != 0;
}

/// One 16-element RHT block as TE's reference (see the file comment): out[j] =
/// In::round(sum over i = 0..15 of x[i * stride] * s_i * H[i][j] * 0.25), the sum taken
/// in fp32 in increasing i. stride lets the block run down a column of a row-major
/// matrix (TE transforms x^T). random_sign = false uses s_i = +1.
template <class In>
KVQ_HD inline void te_rht16(const typename In::storage* x, std::size_t stride, float* out,
                            bool random_sign = true) noexcept {
  float xs[16];
  for (int i = 0; i < 16; ++i) {
    const float v = In::load(x[static_cast<std::size_t>(i) * stride]) * 0.25f;  // exact
    xs[i] = (random_sign && te_rht_sign_negative(i)) ? -v : v;
  }
  for (int j = 0; j < 16; ++j) {
    float acc = 0.0f;
    for (int i = 0; i < 16; ++i) {
      const int m = i & j;  // H[i][j] = (-1)^popcount(i & j), i, j < 16
      const bool neg = (((m >> 3) ^ (m >> 2) ^ (m >> 1) ^ m) & 1) != 0;
      acc = neg ? acc - xs[i] : acc + xs[i];
    }
    out[j] = In::round(acc);
  }
}

/// TE's NVFP4 with RHT, the columnwise operand (see the file comment): y = RHT(x^T)
/// (cols x rows, each row of y transformed in blocks of 16), *amax = fmaxf over |y|,
/// then nvfp4_te's 1D recipe on y with that amax: codes_t[cols * rows / 2] and
/// scales_t[cols * rows / 16] in y's row-major layout (TE's columnwise data and
/// scale_inv). y_out (cols * rows floats, may be null) receives y. An empty matrix
/// writes nothing. Throws std::invalid_argument, writing nothing, when rows is not a
/// multiple of 16, rows x cols overflows, or a buffer is null with a nonempty matrix.
template <class In = f32_input>
inline void nvfp4_te_rht_quantize(const typename In::storage* x, std::size_t rows, std::size_t cols,
                                  std::uint8_t* codes_t, std::uint8_t* scales_t, float* amax,
                                  bool random_sign = true, float* y_out = nullptr) {
  const std::string who = "kvq::block::nvfp4_te_rht_quantize: ";
  if (rows % 16 != 0)
    throw std::invalid_argument(who + "rows " + std::to_string(rows) +
                                " is not a multiple of 16 (the Hadamard size along the columnwise blocks)");
  const std::size_t n = kvq::detail::checked_mul(rows, cols, who + "rows x cols");
  if (n == 0) return;
  if (x == nullptr || codes_t == nullptr || scales_t == nullptr || amax == nullptr)
    throw std::invalid_argument(who + "null buffer");
  std::vector<float> y(n);
  for (std::size_t c = 0; c < cols; ++c)
    for (std::size_t b = 0; b < rows / 16; ++b)
      te_rht16<In>(x + b * 16 * cols + c, cols, y.data() + c * rows + b * 16, random_sign);
  const float a = tensor_amax<f32_input>(y.data(), n, amax_nan::ignore);
  *amax = a;
  const nvfp4_te recipe{};
  const nvfp4_te::params p = nvfp4_te::prepare(a);
  for (std::size_t k = 0; k < n / 16; ++k)
    recipe.quantize_block<f32_input>(y.data() + k * 16, p, codes_t + k * 8, scales_t + k, nullptr);
  if (y_out != nullptr)
    for (std::size_t i = 0; i < n; ++i) y_out[i] = y[i];
}

}  // namespace block
}  // namespace kvq
