/// \file
/// kvq/block/io16.hpp — the input kinds of the block quantizers (fp32, bf16, fp16
/// buffers; the 16-bit conversions themselves are in core/float16.hpp).
///
/// Kernels take K/V in bf16 or fp16. Widening either to float is exact, so a
/// recipe sees the same float values whichever way they arrive; the input kind only
/// matters where a reference computes *in* the 16-bit type (KIVI's torch ops on
/// fp16 tensors) or stores 16-bit values (mixed-precision KV spans). Narrowing is
/// IEEE round-to-nearest-even, as __float2bfloat16_rn / __float2half_rn.
#pragma once

#include <cstdint>

#include <kvq/config.hpp>
#include <kvq/core/float16.hpp>

namespace kvq {

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
  KVQ_HD static constexpr float round(float v) noexcept { return round_bf16(v); }
};
struct fp16_input {
  using storage = std::uint16_t;
  static constexpr const char* name = "fp16";
  static constexpr int bytes = 2;
  KVQ_HD static constexpr float load(std::uint16_t v) noexcept { return fp16_to_float(v); }
  KVQ_HD static constexpr float round(float v) noexcept { return round_fp16(v); }
};

}  // namespace block
}  // namespace kvq
