// kvq/attention/rounding.hpp — float -> bfloat16 rounding (round to nearest even, as
// the GPU's cvt.rn.bf16.f32 and PyTorch's float->bfloat16 cast do), returned as the
// float it represents. NaN stays a (quiet) NaN; overflow rounds to +-inf.
#pragma once

#include <cstdint>

#include <kvq/config.hpp>
#include <kvq/format/bits.hpp>

namespace kvq {
namespace attention {

KVQ_HD inline std::uint16_t bf16_bits_rn(float x) {
  const std::uint32_t u = kvq::bit_cast<std::uint32_t>(x);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((u >> 16) | 0x40u);  // quiet NaN
  const std::uint32_t lsb = (u >> 16) & 1u;
  return static_cast<std::uint16_t>((u + 0x7fffu + lsb) >> 16);
}

KVQ_HD inline float bf16_to_float(std::uint16_t b) {
  return kvq::bit_cast<float>(static_cast<std::uint32_t>(b) << 16);
}

/// x rounded to the nearest bfloat16 (ties to even), as a float.
KVQ_HD inline float round_bf16(float x) { return bf16_to_float(bf16_bits_rn(x)); }

}  // namespace attention
}  // namespace kvq
