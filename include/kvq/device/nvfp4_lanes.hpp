/// \file
/// kvq/device/nvfp4_lanes.hpp — the per-lane steps of the warp-level NVFP4 quantize
/// kernel (kvq/device/nvfp4_kernel.cuh), TransformerEngine recipe (kvq::block::nvfp4_te).
///
/// The kernel gives each lane 8 consecutive elements, so two lanes share one 16-element
/// block and a warp covers 16 blocks. A block's amax is the maximum of its two lanes'
/// partial maxima (one shuffle): maxima of non-NaN values do not depend on order, so
/// this equals kvq::block::block_amax(..., amax_nan::ignore) bit for bit. The scale and
/// the inverse follow nvfp4_te::quantize_block's operation order exactly (see
/// kvq/block/nvfp4.hpp for the reference files); the element conversions go through
/// kvq/device/cvt.hpp, i.e. the hardware cvt instructions where the target has them.
///
/// The steps are KVQ_HD functions without CUDA intrinsics so that tests/device can run
/// the whole lane decomposition on the CPU (two simulated lanes per block) against the
/// block layer's recipe: if the recipe's operation order changes, that test fails.
#pragma once

#include <cstdint>

#include <kvq/block/nvfp4.hpp>
#include <kvq/block/scheme.hpp>
#include <kvq/config.hpp>
#include <kvq/device/cvt.hpp>
#include <kvq/core/bits.hpp>

namespace kvq {
namespace device {
/// The per-lane steps of the warp-level NVFP4 (TransformerEngine recipe) quantize kernel,
/// KVQ_HD and free of CUDA intrinsics so the lane decomposition can run on the CPU.
namespace nvfp4_lane {

/// Partial amax of a lane's 8 elements: fmaxf over |x| from 0 (NaN never wins).
KVQ_HD inline float partial_amax(const float (&v)[8]) noexcept {
  float m = 0.0f;
  for (int i = 0; i < 8; ++i) {
    const float a = kvq::block::detail::abs_bits(v[i]);
    if (!kvq::block::detail::is_nan(a)) m = a > m ? a : m;
  }
  return m;
}

/// Combines two partial maxima (neither is NaN).
KVQ_HD inline float combine_amax(float a, float b) noexcept { return a > b ? a : b; }

/// The block scale code: e4m3(block_amax * (S_enc * fp32(1/6))), rn.satfinite.
KVQ_HD inline std::uint8_t scale_code(float block_amax, const kvq::block::nvfp4_te::params& p) noexcept {
  const float fp4_max_inv = 1.0f / 6.0f;
  const float v = block_amax * (p.s_enc * fp4_max_inv);
  return static_cast<std::uint8_t>(hw::e4m3x2_rn_satfinite(v, 0.0f) & 0xFFu);
}

/// The element multiplier for a scale code, by the recipe's inverse rule.
KVQ_HD inline float inverse(std::uint8_t sf, const kvq::block::nvfp4_te& s,
                            const kvq::block::nvfp4_te::params& p) noexcept {
  const float sff = kvq::decode<fmt::e4m3, float>(sf);
  if (s.inverse == kvq::block::nvfp4_te::inverse_rule::rcp_of_product) {
    const float prod = sff * p.s_dec;
    return kvq::block::detail::fmin_ign(1.0f / prod, kvq::block::detail::flt_max);
  }
  return p.s_enc / sff;
}

/// 8 elements times the multiplier -> 4 bytes of packed e2m1 (element 2i in the low
/// nibble of byte i), as a little-endian 32-bit word.
KVQ_HD inline std::uint32_t encode8(const float (&v)[8], float inv) noexcept {
  std::uint32_t w = 0;
  for (int i = 0; i < 4; ++i) {
    const float lo = v[2 * i] * inv;
    const float hi = v[2 * i + 1] * inv;
    w |= static_cast<std::uint32_t>(hw::e2m1x2_rn_satfinite(lo, hi)) << (8 * i);
  }
  return w;
}

}  // namespace nvfp4_lane
}  // namespace device
}  // namespace kvq
