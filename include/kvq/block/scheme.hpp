/// \file
/// kvq/block/scheme.hpp — what every block-scaled scheme describes, and the small
/// exact helpers the recipes share.
///
/// A scheme is a small literal type (a "recipe") with:
/// ~~~
///   element_format / storage_bits   the element code and how many bits it occupies
///                                   in the packed buffer (4: two per byte, low nibble
///                                   first; 2: four per byte; 8: one byte each)
///   scale_type, scale_bytes         one scale per block, row-major: a std::uint8_t
///                                   code (e4m3 / ue8m0) or an fp32 value
///   has_zero_point                  one fp32 zero point (group minimum) per block
///   tensor_kind                     what the single fp32 tensor value means
///   block_size()                    elements per block (a constant, or a runtime
///                                   field for per-token-head / KIVI groups)
///   prepare(tensor_value)           the tensor-level stage: encode-side constants
///   quantize_block(x, params, codes, scale, zero[, trace])   one block, KVQ_HD, no
///                                   allocation; trace (block_trace*, may be null)
///                                   records the intermediate values
///   dequantize_block(codes, scale, zero, params, out)
/// ~~~
/// The recipes themselves live in nvfp4.hpp, mx.hpp, fp8_kv.hpp, int_group.hpp; each
/// documents its reference file, its exact operation order and its bad-input
/// behaviour. The generic quantize/dequantize over any scheme is in api.hpp.
#pragma once

#include <cstddef>
#include <cstdint>

#include <kvq/config.hpp>
#include <kvq/core/bits.hpp>

namespace kvq {
namespace block {

/// Meaning of a scheme's fp32 tensor-level value.
enum class tensor_kind : unsigned char {
  none,          ///< no tensor-level value (MX, single-level torchao, KIVI, per-token-head)
  amax,          ///< the tensor amax; the recipe derives its scales from it (TransformerEngine NVFP4)
  decode_scale,  ///< a dequantization multiplier given or calibrated by the caller
                 ///< (vLLM k_scale/v_scale, torchao per_tensor_scale)
};

/// Whether kvq reproduces the reference GPU kernel bit for bit today.
enum class exactness : unsigned char {
  bit_exact,               ///< IEEE-only operations: exact with the IEEE instruction model
  needs_instruction_model  ///< uses rcp.approx / Triton division: exact once a hardware
                           ///< instruction model replaces instr::ieee
};

/// "none", "amax" or "decode_scale".
inline constexpr const char* to_string(tensor_kind k) noexcept {
  return k == tensor_kind::none ? "none" : k == tensor_kind::amax ? "amax" : "decode_scale";
}
/// "bit_exact" or "needs_instruction_model".
inline constexpr const char* to_string(exactness e) noexcept {
  return e == exactness::bit_exact ? "bit_exact" : "needs_instruction_model";
}

/// What a recipe computed for one block on its way to the stored bits, for the
/// verifier's mismatch explanations (kvq/verify/explain.hpp). quantize_block takes an
/// optional pointer to one; when it is given the recipe records its intermediate
/// values here without changing a single output bit (the recorded `scaled` values are
/// the very floats that went into the element cast).
struct block_trace {
  float amax = 0.0f;             ///< the block amax as the recipe computed it
  float unrounded_scale = 0.0f;  ///< the fp32 value the recipe cast to its scale format
                                 ///< (the stored fp32 scale for float-scale recipes)
  float inverse = 0.0f;          ///< the multiplier (or divisor) applied to the elements
  float* scaled = nullptr;       ///< block_size() floats, or null: the element before its cast
};

/// How the tensor-level value reaches the quantizer: computed from the data being
/// quantized (TE's amax, torchao's per_tensor_amax_to_scale, vLLM's first-batch
/// calibration), or given (a checkpoint k_scale, or a frozen calibrated scale).
struct tensor_value {
  /// True: compute the value from the data being quantized; false: use `value`.
  bool from_data = true;
  /// The given tensor value (used when from_data is false).
  float value = 1.0f;
  /// Computed from the data.
  static constexpr tensor_value computed() noexcept { return {true, 1.0f}; }
  /// Given: v.
  static constexpr tensor_value given(float v) noexcept { return {false, v}; }
};

namespace detail {

inline constexpr float flt_max = 3.40282346638528859811704183484516925e+38f;

using kvq::is_nan;

/// |x| by clearing the sign bit (fabsf / torch.abs / __habs2 semantics, NaN kept).
KVQ_HD constexpr float abs_bits(float x) noexcept {
  return bit_cast<float>(static_cast<std::uint32_t>(bit_cast<std::uint32_t>(x) & 0x7FFFFFFFu));
}

/// C fmaxf / fminf: a NaN operand is ignored (PTX max/min without .NaN).
KVQ_HD constexpr float fmax_ign(float a, float b) noexcept {
  return is_nan(a) ? b : is_nan(b) ? a : (a > b ? a : b);
}
KVQ_HD constexpr float fmin_ign(float a, float b) noexcept {
  return is_nan(a) ? b : is_nan(b) ? a : (a < b ? a : b);
}

/// Round a float in [0, 2^22] to the nearest integer, ties to even (torch.round /
/// cvt.rni). Exact with IEEE single arithmetic; requires no FP contraction.
KVQ_HD inline float rne_nonneg(float v) noexcept {
  const float big = 8388608.0f;  // 2^23
  const float t = v + big;
  return t - big;
}

/// CUDA float -> int conversion (cvt.rzi.s32.f32): truncation, NaN -> 0, saturating.
KVQ_HD inline int cvt_rzi_s32(float v) noexcept {
  if (is_nan(v)) return 0;
  if (v >= 2147483648.0f) return 2147483647;
  if (v <= -2147483648.0f) return (-2147483647 - 1);
  return static_cast<int>(v);
}

/// exp2f-style exact power of two from a biased e8m0 exponent: 2^(e-127) (e = 0 ->
/// 2^-127, a float subnormal; e = 255 -> NaN).
KVQ_HD inline float e8m0_value(std::uint8_t e) noexcept {
  if (e == 0xFFu) return bit_cast<float>(0x7FC00000u);
  if (e == 0) return bit_cast<float>(0x00400000u);
  return bit_cast<float>(static_cast<std::uint32_t>(static_cast<std::uint32_t>(e) << 23));
}

/// e2m1 round-to-nearest-even with saturation, as kvq::encode<fmt::e2m1>(v) (and
/// cvt.rn.satfinite.e2m1x2.f32), written as the threshold comparisons of the grid
/// 0, 0.5, 1, 1.5, 2, 3, 4, 6 so it is branch-free: a midpoint goes to the even code
/// (`>` where the lower neighbour is even, `>=` where the upper one is). NaN -> 0x7 (+6),
/// -0 and negatives below 0.25 -> 0x8 (-0). tests/block checks it against kvq::encode.
KVQ_HD inline std::uint8_t e2m1_rn(float v) noexcept {
  const float a = abs_bits(v);
  const int mag = (a > 0.25f) + (a >= 0.75f) + (a > 1.25f) + (a >= 1.75f) + (a > 2.5f) + (a >= 3.5f) + (a > 5.0f);
  if (is_nan(v)) return 0x7u;
  const std::uint8_t sign = (bit_cast<std::uint32_t>(v) >> 31) ? 0x8u : 0x0u;
  return static_cast<std::uint8_t>(mag | sign);
}
/// Exact values of e2m1 and e4m3 codes (= kvq::decode), from bits.
KVQ_HD inline float e2m1_value(std::uint8_t c) noexcept {
  const std::uint32_t e = (c >> 1) & 0x3u, m = c & 0x1u, s = static_cast<std::uint32_t>(c & 0x8u) << 28;
  // e = 0: 0 or 0.5 (subnormal); else 2^(e-1) * (1 + m/2)
  const std::uint32_t mag = e ? (((e + 126u) << 23) | (m << 22)) : (m ? 0x3F000000u : 0u);
  return bit_cast<float>(s | mag);
}
KVQ_HD inline float e4m3_value(std::uint8_t c) noexcept {
  const std::uint32_t s = static_cast<std::uint32_t>(c & 0x80u) << 24;
  const std::uint32_t e = (c >> 3) & 0xFu, m = c & 0x7u;
  if ((c & 0x7Fu) == 0x7Fu) return bit_cast<float>(s | 0x7FC00000u);
  if (e == 0) {
    const float v = static_cast<float>(m) * 0.001953125f;  // m * 2^-9, exact
    return s ? -v : v;
  }
  return bit_cast<float>(s | ((e + 120u) << 23) | (m << 20));
}

}  // namespace detail

/// Block amax under the NaN rules of the references.
enum class amax_nan : unsigned char {
  ignore,            ///< fmaxf from 0 (TransformerEngine): NaN elements never win
  ignore_unless_all, ///< __hmax2 tree (vLLM): NaN only if every element is NaN
  propagate          ///< torch.amax / torch.max (torchao, microxcaling, KIVI): any NaN -> NaN
};

/// Maximum of |x[0..n)| (widened from input kind In) starting from +0, with the NaN rule of
/// the reference: ignore (never NaN), ignore_unless_all (NaN if n > 0 and every element is
/// NaN), propagate (NaN if any element is NaN). NaN results are the quiet NaN 0x7FC00000.
template <class In>
KVQ_HD inline float block_amax(const typename In::storage* x, std::size_t n, amax_nan rule) noexcept {
  float m = 0.0f;
  bool any_nan = false, all_nan = true;
  for (std::size_t i = 0; i < n; ++i) {  // branch-free: a NaN never compares greater
    const float a = detail::abs_bits(In::load(x[i]));
    const bool nan = detail::is_nan(a);
    any_nan = any_nan | nan;
    all_nan = all_nan & nan;
    m = a > m ? a : m;
  }
  const float qnan = bit_cast<float>(0x7FC00000u);
  if (rule == amax_nan::propagate && any_nan) return qnan;
  if (rule == amax_nan::ignore_unless_all && n > 0 && all_nan) return qnan;
  return m;
}

}  // namespace block
}  // namespace kvq
