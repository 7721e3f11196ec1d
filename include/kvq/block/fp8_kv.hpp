/// \file
/// kvq/block/fp8_kv.hpp — FP8 / INT8 KV-cache recipes as vLLM stores them.
///
/// fp8_per_tensor<Elem, Instr> — vLLM `kv_cache_dtype=fp8|fp8_e4m3|fp8_e5m2`
/// ~~~
///   csrc/quantization/fp8/nvidia/quant_utils.cuh scaled_vec_conversion:
///     q = __nv_cvt_float_to_fp8(float(x) / scale, __NV_SATFINITE, fmt)
///   (IEEE division with nvcc's default -prec-div; the Triton store path
///   vllm/v1/attention/ops/triton_reshape_and_cache_flash.py divides with Triton's fp32
///   division: use a hardware instruction model there). Dequantize: float(q) * scale
///   (fp8 -> half -> float is exact). One fp32 tensor value (k_scale / v_scale), no block
///   scales. Per-head scales are this recipe applied per head with that head's scale
///   (the KV layer does that). The scale is 1.0 by default, or calibrated once from the
///   first batch and frozen (vllm attention layer calc_kv_scales):
///     k_scale = amax(|K|) / K_SCALE_CONSTANT (200), v_scale = amax(|V|) / V_SCALE_CONSTANT (100)
///   where the divisor is a CPU scalar tensor, so PyTorch's CUDA kernel computes
///   amax * fp32(1/200) (aten/src/ATen/native/cuda/BinaryDivTrueKernel.cu): vllm_calibrated_scale.
///   Bad input: scale 0 divides into ±Inf (-> ±max) and 0/0 = NaN (-> NaN code); NaN x -> NaN code
///   (e4m3 0x7F); Inf x -> ±max.
/// ~~~
///
/// per_token_head<Elem, Instr> — vLLM `kv_cache_dtype=fp8_per_token_head|int8_per_token_head`
/// ~~~
///   vllm/v1/attention/ops/triton_reshape_and_cache_flash.py _reshape_cache_per_token_head:
///     scale = max(amax(|x| over head_size) / QUANT_MAX, 1e-6)     (fp32, Triton division)
///     q     = clamp(x * (1.0 / scale), QUANT_MIN, QUANT_MAX) stored to the cache dtype
///   QUANT_MAX/MIN: e4m3 ±448, int8 127/-128. The store casts: fp8 round to nearest even;
///   int8 by Triton's float->int conversion, which truncates toward zero (fptosi).
///   One fp32 scale per (token, head) block of head_dim elements. Dequantize: q * scale.
///   Triton's tl.max / tl.maximum ignore NaN, so a NaN never sets the scale; an all-zero
///   head gets scale 1e-6 and codes 0; NaN elements store NaN (fp8) or 0 (int8).
///   Both divisions are Triton's fp32 division, so this recipe is exact only once a
///   hardware instruction model for it exists.
/// ~~~
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include <kvq/block/instr.hpp>
#include <kvq/block/io16.hpp>
#include <kvq/block/scheme.hpp>
#include <kvq/config.hpp>
#include <kvq/format.hpp>

namespace kvq {
namespace block {

/// Element tag for signed 8-bit integer codes (two's complement byte).
struct int8_element {
  /// Code width in bits.
  static constexpr int bits = 8;
};

/// vLLM first-batch calibration: amax * fp32(1/divisor) (K: 200, V: 100).
KVQ_HD inline float vllm_calibrated_scale(float amax, float divisor) noexcept {
  const float inv = 1.0f / divisor;
  return amax * inv;
}
/// vLLM's K_SCALE_CONSTANT: k_scale = amax(|K|) / 200.
inline constexpr float vllm_k_scale_constant = 200.0f;
/// vLLM's V_SCALE_CONSTANT: v_scale = amax(|V|) / 100.
inline constexpr float vllm_v_scale_constant = 100.0f;

/// vLLM FP8 KV cache with one fp32 tensor scale (k_scale / v_scale): q = fp8(x / scale)
/// with satfinite round to nearest even, x = float(q) * scale; block_size() 1, no block
/// scales (see the file comment for the reference and bad-input behaviour).
template <class Elem = fmt::e4m3, class Instr = instr::ieee>
struct fp8_per_tensor {
  /// Traits type of the element codes.
  using element_format = format_of_t<Elem>;
  /// Unused (no block scales); a byte so the generic API has a type.
  using scale_type = std::uint8_t;  // unused: no block scales
  /// Instruction model (kvq::instr) of the recipe's divisions, reciprocals and multiply-adds.
  using instruction_model = Instr;
  /// Bits one element code occupies in the packed buffer (4: two per byte, low nibble first; 2:
  /// four per byte; 8: one byte).
  static constexpr int storage_bits = 8;
  /// Bytes of one stored block scale (0: no block scales).
  static constexpr int scale_bytes = 0;
  /// True if each block also stores an fp32 zero point.
  static constexpr bool has_zero_point = false;
  /// What the recipe's single fp32 tensor value means.
  static constexpr tensor_kind tensor = tensor_kind::decode_scale;
  /// Whether kvq reproduces the reference kernel bit for bit with IEEE operations today.
  static constexpr exactness exact = exactness::bit_exact;
  /// NaN rule of the tensor amax from which the tensor value is calibrated.
  static constexpr amax_nan tensor_amax_rule = amax_nan::propagate;
  /// Recipe name, unique per recipe type (tables, reports, kv::format_name).
  static constexpr const char* name =
      std::is_same<element_format, fmt::e4m3>::value ? "fp8_e4m3_per_tensor_vllm" : "fp8_e5m2_per_tensor_vllm";
  /// The reference implementation the recipe reproduces (files and functions).
  static constexpr const char* source =
      "vLLM csrc/quantization/fp8/nvidia/quant_utils.cuh (scaled_vec_conversion); calc_kv_scales";

  /// Elements per block.
  KVQ_HD constexpr std::size_t block_size() const noexcept { return 1; }
  /// Encode-side constants of the tensor-level stage, made by prepare().
  struct params {
    /// The tensor scale (the divisor of the store, the multiplier of the load).
    float scale;
  };
  /// vLLM's calibrated k_scale for a first-batch amax (use vllm_v_scale_constant for V).
  KVQ_HD static float tensor_value_from_amax(float amax) noexcept {
    return vllm_calibrated_scale(amax, vllm_k_scale_constant);
  }
  /// The tensor value is the scale itself.
  KVQ_HD static constexpr params prepare(float scale) noexcept { return {scale}; }

  /// Quantizes one element of kind In: code = fp8(Instr::div(x, p.scale)) with satfinite
  /// round to nearest even; no block scale is written. When trace is given it receives
  /// |x|, the scale and the scaled value.
  template <class In>
  KVQ_HD void quantize_block(const typename In::storage* x, const params& p, std::uint8_t* codes, scale_type*,
                             float*, block_trace* trace = nullptr) const noexcept {
    const float scaled = Instr::div(In::load(x[0]), p.scale);
    if (trace) {  // one element per block: the tensor scale is the divisor
      const float v = In::load(x[0]);
      *trace = {detail::abs_bits(v), p.scale, p.scale, trace->scaled};
      if (trace->scaled) trace->scaled[0] = scaled;
    }
    codes[0] = kvq::encode<element_format>(scaled, rounding::nearest_even, overflow::satfinite);
  }
  /// Decodes one block's codes with its scale (and zero point) into out[0..block_size()).
  KVQ_HD void dequantize_block(const std::uint8_t* codes, scale_type, float, const params& p, float* out) const noexcept {
    // A NaN code keeps its own NaN, whatever the scale: x86 returns the first operand's
    // NaN when both are NaN, but the compiler may swap the operands of a multiply, and did
    // under -march=native (a NaN tensor scale then gave the scale's sign in one inlining
    // context and the code's in another).
    const float d = kvq::decode<element_format, float>(codes[0]);
    out[0] = d != d ? d : d * p.scale;
  }
};

/// vLLM per-token-head KV cache (fp8 or int8 with Elem = int8_element): one fp32 scale per
/// (token, head) block of head_dim elements, scale = max(amax / QUANT_MAX, 1e-6), codes
/// clamp(x * (1 / scale)) cast to the cache dtype (see the file comment).
template <class Elem = fmt::e4m3, class Instr = instr::ieee>
struct per_token_head {
  /// True for int8 codes (Elem = int8_element), false for fp8.
  static constexpr bool is_int8 = std::is_same<Elem, int8_element>::value;
  /// Traits type of the element codes.
  using element_format = typename std::conditional<is_int8, int8_element, format_of_t<Elem>>::type;
  /// Type of one stored block scale: an fp32 value.
  using scale_type = float;
  /// Instruction model (kvq::instr) of the recipe's divisions, reciprocals and multiply-adds.
  using instruction_model = Instr;
  /// Bits one element code occupies in the packed buffer (4: two per byte, low nibble first; 2:
  /// four per byte; 8: one byte).
  static constexpr int storage_bits = 8;
  /// Bytes of one stored block scale (0: no block scales).
  static constexpr int scale_bytes = 4;
  /// True if each block also stores an fp32 zero point.
  static constexpr bool has_zero_point = false;
  /// What the recipe's single fp32 tensor value means.
  static constexpr tensor_kind tensor = tensor_kind::none;
  /// Whether kvq reproduces the reference kernel bit for bit with IEEE operations today.
  static constexpr exactness exact = exactness::needs_instruction_model;
  /// The recipe divides through its instruction model (Instr::div: div.full.f32 for a
  /// GPU policy), so its results are verified only with a verified division model
  /// (kvq::instr::recipe_verified).
  static constexpr bool divides = true;
  /// NaN rule of the tensor amax from which the tensor value is calibrated.
  static constexpr amax_nan tensor_amax_rule = amax_nan::ignore;
  /// Recipe name, unique per recipe type (tables, reports, kv::format_name).
  static constexpr const char* name = is_int8 ? "int8_per_token_head_vllm" : "fp8_per_token_head_vllm";
  /// The reference implementation the recipe reproduces (files and functions).
  static constexpr const char* source =
      "vLLM vllm/v1/attention/ops/triton_reshape_and_cache_flash.py (_reshape_cache_per_token_head)";

  /// Elements per (token, head): the head dimension.
  std::size_t head_dim = 128;
  /// Elements per block.
  KVQ_HD constexpr std::size_t block_size() const noexcept { return head_dim; }

  /// QUANT_MAX of the reference: 127 for int8, 448 for e4m3.
  static constexpr float quant_max = is_int8 ? 127.0f : 448.0f;
  /// QUANT_MIN of the reference: -128 for int8, -448 for e4m3.
  static constexpr float quant_min = is_int8 ? -128.0f : -448.0f;

  /// No encode-side constants: the recipe has no tensor-level stage.
  struct params {};
  /// No tensor value: always 1.
  KVQ_HD static constexpr float tensor_value_from_amax(float) noexcept { return 1.0f; }
  /// No tensor-level stage: empty params.
  KVQ_HD static constexpr params prepare(float) noexcept { return {}; }

  /// Quantizes one (token, head) block of head_dim inputs of kind In: *scale =
  /// max(amax / quant_max, 1e-6), codes of clamp(x * Instr::div(1, scale)) (fp8: round to
  /// nearest even; int8: truncation toward zero). When trace is given it receives the
  /// intermediate values (no output bit changes).
  template <class In>
  KVQ_HD void quantize_block(const typename In::storage* x, const params&, std::uint8_t* codes, scale_type* scale,
                             float*, block_trace* trace = nullptr) const noexcept {
    const float amax = block_amax<In>(x, head_dim, amax_nan::ignore);
    const float unrounded = Instr::div(amax, quant_max);
    const float s = detail::fmax_ign(unrounded, 1e-6f);
    *scale = s;
    const float inv = Instr::div(1.0f, s);
    if (trace) *trace = {amax, unrounded, inv, trace->scaled};
#if !defined(__CUDA_ARCH__)
    if constexpr (!is_int8) {
      if (trace == nullptr) {
        // On the host: the clamped products of a run of elements first, then the format's
        // bulk nearest-even encoder (kvq/format/bulk.hpp: the scalar encoder's bits, the
        // saturation unused after the clamp), instead of one scalar encode per element.
        constexpr std::size_t run = 64;
        float v[run];
        for (std::size_t i0 = 0; i0 < head_dim; i0 += run) {
          const std::size_t m = head_dim - i0 < run ? head_dim - i0 : run;
          for (std::size_t j = 0; j < m; ++j) {
            const float y = In::load(x[i0 + j]) * inv;
            v[j] = detail::is_nan(y) ? y : (y < quant_min ? quant_min : (y > quant_max ? quant_max : y));
          }
          kvq::detail::encode_rne_loop<element_format, overflow::satfinite>(v, m, codes + i0);
        }
        return;
      }
    }
#endif
    for (std::size_t i = 0; i < head_dim; ++i) {
      float v = In::load(x[i]) * inv;
      if (!detail::is_nan(v)) v = v < quant_min ? quant_min : (v > quant_max ? quant_max : v);
      if (trace && trace->scaled) trace->scaled[i] = v;
      if (is_int8) {
        codes[i] = static_cast<std::uint8_t>(static_cast<std::int8_t>(detail::cvt_rzi_s32(v)));
      } else {
        codes[i] = encode_elem(v);
      }
    }
  }

  /// Decodes one block's codes with its scale (and zero point) into out[0..block_size()).
  KVQ_HD void dequantize_block(const std::uint8_t* codes, scale_type scale, float, const params&,
                               float* out) const noexcept {
    for (std::size_t i = 0; i < head_dim; ++i) out[i] = code_value(codes[i]) * scale;
  }

  /// The value of one code before scaling (int8 as a signed byte, fp8 decoded exactly).
  KVQ_HD static float code_value(std::uint8_t c) noexcept {
    if constexpr (is_int8) {
      return static_cast<float>(static_cast<std::int8_t>(c));
    } else {
      return kvq::decode<element_format, float>(c);
    }
  }

 private:
  KVQ_HD static std::uint8_t encode_elem(float v) noexcept {
    if constexpr (is_int8) {
      return 0;
    } else {
      return kvq::encode<element_format>(v, rounding::nearest_even, overflow::satfinite);
    }
  }
};

}  // namespace block
}  // namespace kvq
