// kvq/block/io16.hpp — 16-bit float inputs (bf16, fp16) and the input kinds of
// the block quantizers.
//
// Kernels take K/V in bf16 or fp16. Widening either to float is exact, so a
// recipe sees the same float values whichever way they arrive; the input kind only
// matters where a reference computes *in* the 16-bit type (KIVI's torch ops on
// fp16 tensors) or stores 16-bit values (mixed-precision KV spans). Narrowing is
// IEEE round-to-nearest-even, as __float2bfloat16_rn / __float2half_rn.
#pragma once

#include <cstdint>

#include <kvq/config.hpp>
#include <kvq/format/bits.hpp>

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

namespace block {

/// Input kinds of the block quantizers: the element type of the raw input buffer,
/// how one element widens to float, and how a value computed *in* that type
/// (by references that compute in the input dtype, e.g. KIVI's torch ops on fp16)
/// is rounded back to it.
struct f32_input {
  using storage = float;
  static constexpr const char* name = "f32";
  static constexpr int bytes = 4;
  KVQ_HD static constexpr float load(float v) noexcept { return v; }
  KVQ_HD static constexpr float round(float v) noexcept { return v; }
};
struct bf16_input {
  using storage = std::uint16_t;
  static constexpr const char* name = "bf16";
  static constexpr int bytes = 2;
  KVQ_HD static constexpr float load(std::uint16_t v) noexcept { return bf16_to_float(v); }
  KVQ_HD static constexpr float round(float v) noexcept { return bf16_to_float(float_to_bf16_rn(v)); }
};
struct fp16_input {
  using storage = std::uint16_t;
  static constexpr const char* name = "fp16";
  static constexpr int bytes = 2;
  KVQ_HD static constexpr float load(std::uint16_t v) noexcept { return fp16_to_float(v); }
  KVQ_HD static constexpr float round(float v) noexcept { return fp16_to_float(float_to_fp16_rn(v)); }
};

}  // namespace block
}  // namespace kvq
