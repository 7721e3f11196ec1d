/// \file
/// kvq/core/float16.hpp — the 16-bit floats of KV caches and attention kernels: bfloat16
/// and IEEE binary16 (fp16), widened to float exactly and narrowed with round to nearest
/// even, as the GPU's cvt.rn.bf16.f32 / cvt.rn.f16.f32 (__float2bfloat16_rn,
/// __float2half_rn) and PyTorch's casts do. The one implementation of these conversions
/// in kvq: storage formats, attention paths, verifiers and device code all use it.
#pragma once

#include <cstdint>

#include <kvq/config.hpp>
#include <kvq/core/bits.hpp>

namespace kvq {

/// bf16 bits -> float (exact).
KVQ_HD constexpr float bf16_to_float(std::uint16_t h) noexcept {
  return bit_cast<float>(static_cast<std::uint32_t>(static_cast<std::uint32_t>(h) << 16));
}

/// float -> bf16 bits, round to nearest even; NaN -> quiet NaN with the input's sign.
KVQ_HD constexpr std::uint16_t float_to_bf16_rn(float f) noexcept {
  const std::uint32_t u = bit_cast<std::uint32_t>(f);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<std::uint16_t>((u >> 16) | 0x0040u);
  const std::uint32_t lsb = (u >> 16) & 1u;
  return static_cast<std::uint16_t>((u + 0x7FFFu + lsb) >> 16);
}

/// fp16 (IEEE binary16) bits -> float (exact, subnormals included).
KVQ_HD constexpr float fp16_to_float(std::uint16_t h) noexcept {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t exp = (h >> 10) & 0x1Fu;
  std::uint32_t man = h & 0x3FFu;
  if (exp == 0x1Fu) return bit_cast<float>(sign | 0x7F800000u | (man << 13));
  if (exp != 0) return bit_cast<float>(sign | ((exp + 112u) << 23) | (man << 13));
  if (man == 0) return bit_cast<float>(sign);
  // subnormal: normalise into a float normal
  int e = 113;  // 127 - 15 + 1
  while ((man & 0x400u) == 0) {
    man <<= 1;
    --e;
  }
  man &= 0x3FFu;
  return bit_cast<float>(sign | (static_cast<std::uint32_t>(e) << 23) | (man << 13));
}

/// float -> fp16 bits, round to nearest even; overflow -> Inf; NaN -> quiet NaN.
KVQ_HD constexpr std::uint16_t float_to_fp16_rn(float f) noexcept {
  const std::uint32_t u = bit_cast<std::uint32_t>(f);
  const std::uint16_t sign = static_cast<std::uint16_t>((u >> 16) & 0x8000u);
  const std::uint32_t a = u & 0x7FFFFFFFu;
  if (a > 0x7F800000u) return static_cast<std::uint16_t>(sign | 0x7E00u | ((a >> 13) & 0x3FFu));
  if (a >= 0x477FF000u) return static_cast<std::uint16_t>(sign | 0x7C00u);  // >= 65520 rounds to Inf
  const int e = static_cast<int>(a >> 23) - 127;
  if (e >= -14) {  // normal binade of fp16
    const std::uint32_t lsb = (a >> 13) & 1u;
    const std::uint32_t r = a + 0xFFFu + lsb;  // round the 13 dropped bits to even
    return static_cast<std::uint16_t>(sign | static_cast<std::uint16_t>(((r >> 13) - (112u << 10))));
  }
  if (e < -25) return sign;  // below half the smallest subnormal (2^-25 itself ties to 0)
  // subnormal result: value = m * 2^(e-23) with m = 1.man; fp16 subnormal unit 2^-24
  const std::uint32_t m = (a & 0x7FFFFFu) | 0x800000u;
  const int shift = -e - 14 + 13;  // bits dropped: from 2^(e-23) to 2^-24
  const std::uint32_t q = m >> shift;
  const std::uint32_t rem = m & ((1u << shift) - 1u);
  const std::uint32_t half = 1u << (shift - 1);
  const std::uint32_t up = (rem > half || (rem == half && (q & 1u))) ? 1u : 0u;
  return static_cast<std::uint16_t>(sign | static_cast<std::uint16_t>(q + up));
}

/// x rounded to the nearest bfloat16 (ties to even), as the float it represents.
/// NaN stays a quiet NaN; overflow rounds to +-inf.
KVQ_HD constexpr float round_bf16(float x) noexcept { return bf16_to_float(float_to_bf16_rn(x)); }

/// x rounded to the nearest binary16 (ties to even), as the float it represents.
KVQ_HD constexpr float round_fp16(float x) noexcept { return fp16_to_float(float_to_fp16_rn(x)); }

}  // namespace kvq
