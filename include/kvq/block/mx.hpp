/// \file
/// kvq/block/mx.hpp — OCP Microscaling (MX v1.0) recipes: 32-element blocks, one
/// UE8M0 scale byte (2^(e-127)) per block, elements e4m3/e5m2 (MXFP8), e3m2/e2m3
/// (MXFP6, one byte each, right-aligned) or e2m1 (MXFP4, two per byte, low nibble first).
///
/// Scale rules (amax = block max |x|; emax = floor(log2(element max)): 8, 15, 4, 2, 2):
/// ~~~
///  floor (OCP v1.0 section 6.3, torchao ScaleCalculationMode.FLOOR in
///   torchao/prototype/mx_formats/mx_tensor.py to_mx; microsoft/microxcaling mx/mx_ops.py
///   _quantize_mx with shared_exp_method "max"):
///     e = clamp(exponent_field(amax) - 127 - emax, -127, 128) + 127;  e = 0xFF if amax is NaN/Inf
///     (microxcaling's floor(log2(amax)) - emax clamped at -127 gives the same byte for
///     every finite amax, zero and subnormal amax included.)
///  rceil (round-up, cuBLAS "1D block quantization", CUTLASS, TransformerEngine
///   cast/mxfp8/quantize_mxfp8.cuh: ptx::float_to_e8m0(block_amax * max_norm_rcp) =
///   cvt.rp.satfinite.ue8m0x2.f32; torchao ScaleCalculationMode.RCEIL _to_mx_rceil):
///     e = ue8m0_round_up(amax * fp32(1/elem_max))
///     TE: satfinite (Inf -> 0xFE), amax by fmaxf (NaN ignored);
///     torchao: no satfinite (_f32_to_e8m0_rceil / cvt.rp.ue8m0x2.f32: NaN and Inf -> 0xFF),
///     amax by torch.amax (NaN propagates).
/// ~~~
/// Element step: q = cvt(x * inv), inv = 1/2^(e-127):
/// ~~~
///   exact power of two (torchao _e8m0_scale_to_reciprocal_fp32: e = 0 -> 2^127, e = 255 -> NaN);
///   TE exp2f_rcp (transformer_engine/common/util/ptx.cuh): e = 0 -> 1 (!), else the float
///   with bits (254-e)<<23 (e = 254 -> +0, e = 255 -> -Inf).
///   Elements round to nearest even and saturate (torch's saturating fp8 cast / clamp,
///   torchao f32_to_f6/f4_unpacked, __nv_fp8_e4m3 satfinite), except microxcaling whose
///   default round="nearest" rounds half away from zero (mx/elemwise_ops.py _round_mantissa).
/// ~~~
/// Dequantize: torchao to_dtype: decode(q) * 2^(e-127) (e = 255 -> NaN); TE
/// ~~~
///   dequantize_mxfp8: decode(q) * float(bits e<<23) (e = 0 -> 0, e = 255 -> Inf).
/// ~~~
/// Bad input: all-zero block -> floor e = 0 (2^-127) / rceil e = 0, codes 0. A NaN in
/// ~~~
///   the block: torchao/microxcaling scale 0xFF and every element NaN-coded; TE ignores it
///   for the scale and codes the NaN element alone. Inf: floor/torchao 0xFF; TE 0xFE, whose
///   exp2f_rcp inverse is +0, so the block flushes to 0 and the Inf element becomes
///   Inf * 0 = NaN. Denormal inputs are ordinary values here (no FTZ anywhere).
/// ~~~
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include <kvq/block/scheme.hpp>
#include <kvq/config.hpp>
#include <kvq/format.hpp>

namespace kvq {
namespace block {

/// How the UE8M0 scale byte follows from the block amax: the OCP floor rule or the
/// round-up (rceil) rule (see the file comment).
enum class mx_scale_rule : unsigned char { floor, rceil };
/// How the element multiplier 1/scale is formed: an exact power of two (torchao), or
/// TransformerEngine's exp2f_rcp bit construction (e = 0 gives 1).
enum class mx_inverse : unsigned char { exact_pow2, te_exp2f_rcp };

/// The OCP MX recipe family: 32-element blocks, one UE8M0 scale byte, elements of Elem.
/// The named recipes (mx_floor, mx_floor_microxcaling, mx_rceil_te, mx_rceil_torchao) fix
/// the scale rule, amax NaN rule, inverse, element rounding and scale saturation.
template <class Elem, mx_scale_rule Rule, amax_nan NanRule, mx_inverse Inv, rounding ElemRounding, bool ScaleSatfinite>
struct mx_recipe {
  /// Traits type of the element codes.
  using element_format = format_of_t<Elem>;
  /// Format of the block scale code.
  using scale_format = fmt::ue8m0;
  /// Type of one stored block scale: a code byte.
  using scale_type = std::uint8_t;
  /// Bits one element code occupies in the packed buffer (4: two per byte, low nibble first; 2:
  /// four per byte; 8: one byte).
  static constexpr int storage_bits = element_format::bits == 4 ? 4 : 8;
  /// Bytes of one stored block scale (0: no block scales).
  static constexpr int scale_bytes = 1;
  /// True if each block also stores an fp32 zero point.
  static constexpr bool has_zero_point = false;
  /// What the recipe's single fp32 tensor value means.
  static constexpr tensor_kind tensor = tensor_kind::none;
  /// Whether kvq reproduces the reference kernel bit for bit with IEEE operations today.
  static constexpr exactness exact = exactness::bit_exact;
  /// NaN rule of the tensor amax from which the tensor value is calibrated.
  static constexpr amax_nan tensor_amax_rule = NanRule;
  /// The scale rule.
  static constexpr mx_scale_rule scale_rule = Rule;
  /// emax of the element format, floor(log2(element max)): 8, 15, 4, 2, 2.
  static constexpr int elem_emax = element_format::emax;
  /// Rounding of the element casts (nearest_even, or nearest_away for microxcaling).
  static constexpr rounding element_rounding = ElemRounding;
  /// Marks the family for the host fast paths (block/bulk.hpp); a recipe deriving from
  /// mx_recipe must keep its quantize_block / dequantize_block.
  using mx_base = mx_recipe;

  /// Elements per block.
  KVQ_HD constexpr std::size_t block_size() const noexcept { return 32; }

  /// No encode-side constants: the recipe has no tensor-level stage.
  struct params {};
  /// No tensor value: always 1.
  KVQ_HD static constexpr float tensor_value_from_amax(float) noexcept { return 1.0f; }
  /// No tensor-level stage: empty params.
  KVQ_HD static constexpr params prepare(float) noexcept { return {}; }

  /// The scale byte for a block amax.
  KVQ_HD static std::uint8_t scale_for(float amax) noexcept {
    if (Rule == mx_scale_rule::floor) {
      const std::uint32_t bits = bit_cast<std::uint32_t>(amax);
      if ((bits & 0x7F800000u) == 0x7F800000u) return 0xFFu;  // NaN or Inf
      int e = static_cast<int>((bits >> 23) & 0xFFu) - 127 - elem_emax;
      e = e < -127 ? -127 : (e > 128 ? 128 : e);
      return static_cast<std::uint8_t>(e + 127);
    } else {
      const float inv_max = static_cast<float>(1.0 / element_format::max_finite());
      const float descale = amax * inv_max;
      return kvq::encode<fmt::ue8m0>(descale, rounding::up, ScaleSatfinite ? overflow::satfinite : overflow::nosat);
    }
  }

  /// 1 / scale as the reference computes it.
  KVQ_HD static float inverse_of(std::uint8_t e) noexcept {
    if (Inv == mx_inverse::te_exp2f_rcp) {
      if (e == 0) return 1.0f;
      const std::int32_t b = (254 - static_cast<std::int32_t>(e));
      return bit_cast<float>(static_cast<std::uint32_t>(b) << 23);
    }
    if (e == 0xFFu) return bit_cast<float>(0x7FC00000u);
    const int r = 254 - static_cast<int>(e);  // reciprocal exponent byte
    if (r == 0) return bit_cast<float>(0x00400000u);
    return bit_cast<float>(static_cast<std::uint32_t>(static_cast<std::uint32_t>(r) << 23));
  }

  /// The dequantization multiplier for a scale byte.
  KVQ_HD static float scale_value(std::uint8_t e) noexcept {
    if (Inv == mx_inverse::te_exp2f_rcp) return bit_cast<float>(static_cast<std::uint32_t>(static_cast<std::uint32_t>(e) << 23));
    return detail::e8m0_value(e);
  }

  /// 4-bit element code: the branch-free e2m1 encoder for round-to-nearest-even.
  KVQ_HD static std::uint8_t elem4(float v) noexcept {
    if constexpr (ElemRounding == rounding::nearest_even && std::is_same<element_format, fmt::e2m1>::value) {
      return detail::e2m1_rn(v);
    } else {
      return kvq::encode<element_format>(v, ElemRounding, overflow::satfinite);
    }
  }

  /// Quantizes one block of block_size() inputs of kind In (f32_input, bf16_input, fp16_input):
  /// packed codes, *scale (and *zero where has_zero_point); when trace is given it receives the
  /// intermediate values (no output bit changes).
  template <class In>
  KVQ_HD void quantize_block(const typename In::storage* x, const params&, std::uint8_t* codes, scale_type* scale,
                             float* /*zero*/, block_trace* trace = nullptr) const noexcept {
    const float amax = block_amax<In>(x, 32, NanRule);
    const std::uint8_t e = scale_for(amax);
    *scale = e;
    const float inv = inverse_of(e);
    if (trace) *trace = {amax, unrounded_scale(amax), inv, trace->scaled};
    float* scaled = trace ? trace->scaled : nullptr;
    if (storage_bits == 4) {
      for (int i = 0; i < 16; ++i) {
        const float a = In::load(x[2 * i]) * inv;
        const float b = In::load(x[2 * i + 1]) * inv;
        if (scaled) {
          scaled[2 * i] = a;
          scaled[2 * i + 1] = b;
        }
        codes[i] = static_cast<std::uint8_t>(elem4(a) | (elem4(b) << 4));
      }
    } else {
      for (int i = 0; i < 32; ++i) {
        const float a = In::load(x[i]) * inv;
        if (scaled) scaled[i] = a;
        codes[i] = kvq::encode<element_format>(a, ElemRounding, overflow::satfinite);
      }
    }
  }

  /// The fp32 value whose power of two is the scale (for explanations only): rceil casts
  /// amax / max_finite up to ue8m0; floor takes the exponent of amax less emax, i.e. the
  /// exponent of amax * 2^-emax (exact: a power-of-two multiply, floored by the cast).
  KVQ_HD static float unrounded_scale(float amax) noexcept {
    if (Rule == mx_scale_rule::floor) {
      float m = amax;
      for (int i = 0; i < elem_emax; ++i) m = m * 0.5f;
      return m;
    }
    const float inv_max = static_cast<float>(1.0 / element_format::max_finite());
    return amax * inv_max;
  }

  /// Decodes one block's codes with its scale (and zero point) into out[0..block_size()).
  KVQ_HD void dequantize_block(const std::uint8_t* codes, scale_type scale, float /*zero*/, const params&,
                               float* out) const noexcept {
    const float s = scale_value(scale);
    if (storage_bits == 4) {
      for (int i = 0; i < 16; ++i) {
        out[2 * i] = detail::e2m1_value(static_cast<std::uint8_t>(codes[i] & 0x0Fu)) * s;
        out[2 * i + 1] = detail::e2m1_value(static_cast<std::uint8_t>(codes[i] >> 4)) * s;
      }
    } else {
      for (int i = 0; i < 32; ++i) out[i] = kvq::decode<element_format, float>(codes[i]) * s;
    }
  }
};

/// Recipe names per element format: every recipe type has its own name.
template <class Elem>
struct mx_names;
/// Names of the MXFP8 E4M3 recipes.
template <>
struct mx_names<fmt::e4m3> {
  /// Name of mx_floor<Elem>.
  static constexpr const char* floor = "mxfp8_e4m3_floor";
  /// Name of mx_floor_microxcaling<Elem>.
  static constexpr const char* floor_microxcaling = "mxfp8_e4m3_floor_microxcaling";
  /// Name of mx_rceil_te<Elem>.
  static constexpr const char* rceil = "mxfp8_e4m3_rceil";
  /// Name of mx_rceil_torchao<Elem>.
  static constexpr const char* rceil_torchao = "mxfp8_e4m3_rceil_torchao";
};
/// Names of the MXFP8 E5M2 recipes.
template <>
struct mx_names<fmt::e5m2> {
  /// Name of mx_floor<Elem>.
  static constexpr const char* floor = "mxfp8_e5m2_floor";
  /// Name of mx_floor_microxcaling<Elem>.
  static constexpr const char* floor_microxcaling = "mxfp8_e5m2_floor_microxcaling";
  /// Name of mx_rceil_te<Elem>.
  static constexpr const char* rceil = "mxfp8_e5m2_rceil";
  /// Name of mx_rceil_torchao<Elem>.
  static constexpr const char* rceil_torchao = "mxfp8_e5m2_rceil_torchao";
};
/// Names of the MXFP6 E3M2 recipes.
template <>
struct mx_names<fmt::e3m2> {
  /// Name of mx_floor<Elem>.
  static constexpr const char* floor = "mxfp6_e3m2_floor";
  /// Name of mx_floor_microxcaling<Elem>.
  static constexpr const char* floor_microxcaling = "mxfp6_e3m2_floor_microxcaling";
  /// Name of mx_rceil_te<Elem>.
  static constexpr const char* rceil = "mxfp6_e3m2_rceil";
  /// Name of mx_rceil_torchao<Elem>.
  static constexpr const char* rceil_torchao = "mxfp6_e3m2_rceil_torchao";
};
/// Names of the MXFP6 E2M3 recipes.
template <>
struct mx_names<fmt::e2m3> {
  /// Name of mx_floor<Elem>.
  static constexpr const char* floor = "mxfp6_e2m3_floor";
  /// Name of mx_floor_microxcaling<Elem>.
  static constexpr const char* floor_microxcaling = "mxfp6_e2m3_floor_microxcaling";
  /// Name of mx_rceil_te<Elem>.
  static constexpr const char* rceil = "mxfp6_e2m3_rceil";
  /// Name of mx_rceil_torchao<Elem>.
  static constexpr const char* rceil_torchao = "mxfp6_e2m3_rceil_torchao";
};
/// Names of the MXFP4 recipes.
template <>
struct mx_names<fmt::e2m1> {
  /// Name of mx_floor<Elem>.
  static constexpr const char* floor = "mxfp4_floor";
  /// Name of mx_floor_microxcaling<Elem>.
  static constexpr const char* floor_microxcaling = "mxfp4_floor_microxcaling";
  /// Name of mx_rceil_te<Elem>.
  static constexpr const char* rceil = "mxfp4_rceil";
  /// Name of mx_rceil_torchao<Elem>.
  static constexpr const char* rceil_torchao = "mxfp4_rceil_torchao";
};

/// OCP floor rule as torchao's ScaleCalculationMode.FLOOR (the OCP-spec reference).
template <class Elem>
struct mx_floor : mx_recipe<Elem, mx_scale_rule::floor, amax_nan::propagate, mx_inverse::exact_pow2,
                            rounding::nearest_even, false> {
  /// Recipe name, unique per recipe type (tables, reports, kv::format_name).
  static constexpr const char* name = mx_names<format_of_t<Elem>>::floor;
  /// The reference implementation the recipe reproduces (files and functions).
  static constexpr const char* source = "OCP MX v1.0 6.3; torchao mx_formats/mx_tensor.py to_mx (FLOOR)";
};
/// OCP floor rule with microxcaling's default round-half-away elements.
template <class Elem>
struct mx_floor_microxcaling : mx_recipe<Elem, mx_scale_rule::floor, amax_nan::propagate, mx_inverse::exact_pow2,
                                         rounding::nearest_away, false> {
  /// Recipe name, unique per recipe type (tables, reports, kv::format_name).
  static constexpr const char* name = mx_names<format_of_t<Elem>>::floor_microxcaling;
  /// The reference implementation the recipe reproduces (files and functions).
  static constexpr const char* source = "microsoft/microxcaling mx/mx_ops.py _quantize_mx (round='nearest')";
};
/// Round-up rule as cuBLAS/CUTLASS/TransformerEngine compute it.
template <class Elem>
struct mx_rceil_te : mx_recipe<Elem, mx_scale_rule::rceil, amax_nan::ignore, mx_inverse::te_exp2f_rcp,
                               rounding::nearest_even, true> {
  /// Recipe name, unique per recipe type (tables, reports, kv::format_name).
  static constexpr const char* name = mx_names<format_of_t<Elem>>::rceil;
  /// The reference implementation the recipe reproduces (files and functions).
  static constexpr const char* source =
      "TransformerEngine cast/mxfp8/quantize_mxfp8.cuh, util/ptx.cuh (float_to_e8m0, exp2f_rcp)";
};
/// Round-up rule as torchao's ScaleCalculationMode.RCEIL.
template <class Elem>
struct mx_rceil_torchao : mx_recipe<Elem, mx_scale_rule::rceil, amax_nan::propagate, mx_inverse::exact_pow2,
                                    rounding::nearest_even, false> {
  /// Recipe name, unique per recipe type (tables, reports, kv::format_name).
  static constexpr const char* name = mx_names<format_of_t<Elem>>::rceil_torchao;
  /// The reference implementation the recipe reproduces (files and functions).
  static constexpr const char* source = "torchao mx_formats/mx_tensor.py _to_mx_rceil";
};

}  // namespace block
}  // namespace kvq
