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
/// fp32 input (no rounding: computing in float is the reference's own arithmetic).
struct f32_input {
  /// Element type of the input buffer.
  using storage = float;
  /// Name of the input kind.
  static constexpr const char* name = "f32";
  /// Bytes per element.
  static constexpr int bytes = 4;
  /// The element as a float (itself).
  KVQ_HD static constexpr float load(float v) noexcept { return v; }
  /// A value computed in this type: float already, unchanged.
  KVQ_HD static constexpr float round(float v) noexcept { return v; }
};
/// bf16 input (raw std::uint16_t bits); round() is round to nearest even to bf16.
struct bf16_input {
  /// Element type of the input buffer (the bf16 bits).
  using storage = std::uint16_t;
  /// Name of the input kind.
  static constexpr const char* name = "bf16";
  /// Bytes per element.
  static constexpr int bytes = 2;
  /// The element widened to float (exact).
  KVQ_HD static constexpr float load(std::uint16_t v) noexcept { return bf16_to_float(v); }
  /// v rounded to bf16 (nearest even) and widened back.
  KVQ_HD static constexpr float round(float v) noexcept { return round_bf16(v); }
};
/// fp16 input (raw std::uint16_t bits); round() is round to nearest even to fp16.
struct fp16_input {
  /// Element type of the input buffer (the fp16 bits).
  using storage = std::uint16_t;
  /// Name of the input kind.
  static constexpr const char* name = "fp16";
  /// Bytes per element.
  static constexpr int bytes = 2;
  /// The element widened to float (exact).
  KVQ_HD static constexpr float load(std::uint16_t v) noexcept { return fp16_to_float(v); }
  /// v rounded to fp16 (nearest even) and widened back.
  KVQ_HD static constexpr float round(float v) noexcept { return round_fp16(v); }
};

}  // namespace block
}  // namespace kvq
