/// \file
/// kvq/block/nvfp4.hpp — NVFP4 recipes: e2m1 elements, 16-element blocks, one e4m3
/// (sign bit 0, i.e. ue4m3) scale byte per block, and the recipe's fp32 tensor value.
///
/// Four references compute the same format with different operation orders; each is
/// reproduced as written (float = IEEE binary32, RN; "e4m3(v)" = CUDA's
/// __nv_fp8_e4m3(v) = cvt.rn.satfinite.e4m3x2.f32; "e2m1(v)" = cvt.rn.satfinite.e2m1x2.f32):
///
/// nvfp4_te — TransformerEngine / cuBLAS recipe
/// ~~~
///   transformer_engine/common/cast/nvfp4/core_nvfp4.cuh
///     compute_global_encode_scaling_factor_FP4, compute_decoding_scaling_factor,
///     compute_scaling_coefficient<float>; quantize_transpose_nvfp4.cuh (S_dec = 1.0/S_enc);
///   test reference transformer_engine/pytorch/custom_recipes/reference_nvfp4.py
///   (_quantize_blockwise_reference, "fold the FP4 reciprocal into the global scale
///   multiplier, but keep the final reciprocal exact"); dequantize_nvfp4.cuh.
///     S_enc = 2688 / amax; S_enc = fminf(S_enc, FLT_MAX); S_enc = 1 if amax == 0 or S_enc == 0
///     S_dec = 1 / S_enc
///     SF    = e4m3(block_amax * (S_enc * fp32(1/6)))
///     inv   = fminf(1 / (float(SF) * S_dec), FLT_MAX)      [inverse_rule::rcp_of_product]
///           = S_enc / float(SF)  (__fdiv_rn, quantize_nvfp4.cuh)  [inverse_rule::enc_div_scale]
///     q_i   = e2m1(x_i * inv)
///   stored tensor value: the tensor amax (TE keeps `amax`, not S_enc).
///   dequantize: x = e2m1 * ((float(SF) * amax) * fp32(1/2688)).
///   Bad input (as TE): amax 0 or Inf -> S_enc = 1; amax subnormal -> S_enc = FLT_MAX;
///   block amax = fmaxf over |x| from 0, so NaN elements never set a scale; an Inf
///   element saturates SF to 448 and itself to ±6; a NaN element becomes e2m1(NaN)
///   (kvq::encode's NaN result); SF rounding to 0 with nonzero x gives inv = FLT_MAX,
///   so those x saturate to ±6 (an all-zero block gives SF 0 and codes 0).
/// ~~~
///
/// nvfp4_vllm<Instr> — vLLM NVFP4 KV-cache store
/// ~~~
///   csrc/libtorch_stable/nvfp4_kv_cache_kernels.cu (reshape_and_cache_nvfp4_kernel),
///   csrc/libtorch_stable/quantization/fp4/nvfp4_utils.cuh (cvt_warp_fp16_to_fp4):
///     global_scale = 1.0f / k_scale                          (IEEE division)
///     SFValue = global_scale * (amax16 * rcp(6))             rcp = rcp.approx.ftz.f32
///     SF = e4m3(SFValue);  SFf = float(SF)
///     outputScale = SFf != 0 ? rcp(SFf * rcp(global_scale)) : 0
///     q_i = e2m1(x_i * outputScale)
///   stored tensor value: k_scale (or v_scale). Dequantize (for analysis; the attention
///   kernels' order is theirs): x = (e2m1 * SFf) * k_scale.
///   amax16: __hmax2 tree over bf16/fp16 pairs: NaN only if all 16 are NaN.
///   Bad input: SF rounding to 0 gives outputScale 0, so the whole block stores 0
///   (unlike TE); k_scale 0 gives global_scale Inf and whatever IEEE gives from there.
/// ~~~
///
/// nvfp4_vllm_4over6<Instr> — the same store with NVFP4KVScaleSearch::FOUR_OVER_SIX
/// ~~~
///   (nvfp4_kv_cache_kernels.cu: nvfp4_candidate_scale, nvfp4_reconstruction_error,
///   cvt_warp_fp16_to_fp4_4over6): candidates with denominator 6 and 4 as above; for
///   each, dequantScale = os != 0 ? rcp(os) : 0 and over the 8 pairs in order
///     os == 0: err += x*x + y*y
///     else:    qx = round_to_nearest_e2m1(x*os) (software, ties to even, NaN -> ±6)
///              dx = qx*dq - x; dy = qy*dq - y; err += dx*dx + dy*dy
///   pick /4 iff err4 < err6 (ties keep /6). The 16-element single-thread order is the
///   CUDA >= 12.9 build (CVT_FP4_PACK16). nvcc contracts these expressions by default;
///   the multiply-adds go through Instr::mad (instr::ieee_fma = fused as nvcc emits
///   `x*x + y*y` -> fma(x, x, y*y) and `qx*dq - x` -> fma(qx, dq, -x); instr::ieee = not fused).
/// ~~~
///
/// nvfp4_torchao / nvfp4_torchao_two_level — torchao 0.18
/// ~~~
///   torchao/prototype/mx_formats/nvfp4_tensor.py (nvfp4_quantize, per_tensor_amax_to_scale,
///   NVFP4Tensor.get_hp_scales/dequantize):
///     block_scale = max_abs / 6          (PyTorch CUDA divides by a Python scalar as
///                                         max_abs * fp32(1/6): BinaryDivTrueKernel.cu)
///     single level: s = e4m3(clamp(block_scale, 2^-6, 448)); x * fp32(1 / float(s))
///     two level:    pts = amax * fp32(1/2688) (per_tensor_amax_to_scale on CUDA)
///                   s = e4m3(clamp(block_scale / pts, 2^-6, 448));
///                   x * fp32(fp32(1 / pts) / float(s))
///   The elements are multiplied by a reciprocal ("to match MSLK triton kernel numerics",
///   torchao 0.18); torchao before that divided, x / float(s), which resolves e2m1 ties
///   under a non-power-of-two scale differently. `1.0 / t` is PyTorch's reciprocal (an
///   IEEE division 1/t, then * 1.0); the tensor / tensor division is IEEE as well.
///     q_i = e2m1(clamp(scaled, -6, 6))  (f32_to_f4_unpacked: RNE, saturating)
///   max_abs is torch.amax (NaN propagates: the block scale becomes NaN code 0x7F).
///   The clamp at 2^-6 keeps every scale nonzero: an all-zero block stores 0x08 and
///   codes 0. pts = 0 (all-zero tensor) divides 0/0 into NaN exactly as torchao does.
///   torchao's fp4 cast has no NaN support; kvq stores kvq::encode's NaN result.
///   dequantize: single e2m1 * float(s); two level e2m1 * (pts * float(s)).
/// ~~~
#pragma once

#include <cstddef>
#include <cstdint>

#include <kvq/block/instr.hpp>
#include <kvq/block/io16.hpp>
#include <kvq/block/scheme.hpp>
#include <kvq/config.hpp>
#include <kvq/format.hpp>

namespace kvq {
namespace block {
namespace detail {

KVQ_HD inline std::uint8_t e4m3_rn_sat(float v) noexcept {
  return kvq::encode<fmt::e4m3>(v, rounding::nearest_even, overflow::satfinite);
}
/// Write 16 e2m1 codes of x_i * s into 8 bytes, element 2i in the low nibble.
/// `scaled` (16 floats, may be null) receives the products that were cast.
template <class In>
KVQ_HD inline void store_e2m1_scaled(const typename In::storage* x, float s, std::uint8_t* out,
                                     float* scaled = nullptr) noexcept {
  for (int i = 0; i < 8; ++i) {
    const float a = In::load(x[2 * i]) * s;
    const float b = In::load(x[2 * i + 1]) * s;
    if (scaled) {
      scaled[2 * i] = a;
      scaled[2 * i + 1] = b;
    }
    out[i] = static_cast<std::uint8_t>(e2m1_rn(a) | (e2m1_rn(b) << 4));
  }
}

/// Decode 16 packed e2m1 codes times a scale.
KVQ_HD inline void load_e2m1_scaled(const std::uint8_t* codes, float s, float* out) noexcept {
  for (int i = 0; i < 8; ++i) {
    out[2 * i] = e2m1_value(static_cast<std::uint8_t>(codes[i] & 0x0Fu)) * s;
    out[2 * i + 1] = e2m1_value(static_cast<std::uint8_t>(codes[i] >> 4)) * s;
  }
}

/// torch.clamp(v, lo, hi) on floats: NaN stays NaN.
KVQ_HD constexpr float torch_clamp(float v, float lo, float hi) noexcept {
  return is_nan(v) ? v : (v < lo ? lo : (v > hi ? hi : v));
}

}  // namespace detail

/// Fields shared by every NVFP4 recipe.
struct nvfp4_layout {
  /// Traits type of the element codes.
  using element_format = fmt::e2m1;
  /// Format of the block scale code.
  using scale_format = fmt::e4m3;
  /// Type of one stored block scale: a code byte.
  using scale_type = std::uint8_t;
  /// Bits one element code occupies in the packed buffer (4: two per byte, low nibble first; 2:
  /// four per byte; 8: one byte).
  static constexpr int storage_bits = 4;
  /// Bytes of one stored block scale (0: no block scales).
  static constexpr int scale_bytes = 1;
  /// True if each block also stores an fp32 zero point.
  static constexpr bool has_zero_point = false;
  /// Elements per block.
  KVQ_HD constexpr std::size_t block_size() const noexcept { return 16; }
};

// ---------------------------------------------------------------------------------
/// TransformerEngine / cuBLAS NVFP4 recipe (core_nvfp4.cuh, quantize_transpose_nvfp4.cuh,
/// reference_nvfp4.py): tensor value = the tensor amax, S_enc = 2688 / amax, SF =
/// e4m3(block_amax * (S_enc * fp32(1/6))), q = e2m1(x * inv) (see the file comment).
struct nvfp4_te : nvfp4_layout {
  /// Recipe name, unique per recipe type (tables, reports, kv::format_name).
  static constexpr const char* name = "nvfp4_te";
  /// The reference implementation the recipe reproduces (files and functions).
  static constexpr const char* source =
      "TransformerEngine transformer_engine/common/cast/nvfp4/core_nvfp4.cuh, "
      "quantize_transpose_nvfp4.cuh; pytorch/custom_recipes/reference_nvfp4.py";
  /// What the recipe's single fp32 tensor value means.
  static constexpr tensor_kind tensor = tensor_kind::amax;
  /// Whether kvq reproduces the reference kernel bit for bit with IEEE operations today.
  static constexpr exactness exact = exactness::bit_exact;
  /// NaN rule of the tensor amax from which the tensor value is calibrated.
  static constexpr amax_nan tensor_amax_rule = amax_nan::ignore;

  /// How the element multiplier is formed from the block scale (two TE kernels differ).
  enum class inverse_rule : unsigned char {
    rcp_of_product,  ///< fminf(1/(SF*S_dec), FLT_MAX): quantize_transpose_nvfp4.cuh, reference_nvfp4.py
    enc_div_scale    ///< __fdiv_rn(S_enc, SF): quantize_nvfp4.cuh (rowwise + MXFP8 colwise kernel)
  };
  /// The inverse rule of this instance (default: the transpose kernel and the test reference).
  inverse_rule inverse = inverse_rule::rcp_of_product;

  /// Encode-side constants of the tensor-level stage, made by prepare().
  struct params {
    /// \var s_dec
    /// Decode scale S_dec = 1 / S_enc.

    /// \var amax
    /// The tensor amax (the stored tensor value).

    /// Encode scale S_enc = fminf(2688 / amax, FLT_MAX), 1 for amax 0 or Inf.
    float s_enc, s_dec, amax;
  };
  /// The tensor value TE stores for a tensor of this amax: the amax itself.
  KVQ_HD static constexpr float tensor_value_from_amax(float amax) noexcept { return amax; }

  /// S_enc and S_dec for a tensor amax, as TE computes them.
  KVQ_HD static params prepare(float amax) noexcept {
    float s_enc = 2688.0f / amax;  // fp8_max * fp4_max / global_amax (448*6 folded)
    s_enc = detail::fmin_ign(s_enc, detail::flt_max);
    if (amax == 0.0f || s_enc == 0.0f) s_enc = 1.0f;
    const float s_dec = 1.0f / s_enc;  // TE: 1.0 / S_enc in double, rounded to float: same bits
    return {s_enc, s_dec, amax};
  }

  /// Quantizes one block of block_size() inputs of kind In (f32_input, bf16_input, fp16_input):
  /// packed codes, *scale (and *zero where has_zero_point); when trace is given it receives the
  /// intermediate values (no output bit changes).
  template <class In>
  KVQ_HD void quantize_block(const typename In::storage* x, const params& p, std::uint8_t* codes,
                             scale_type* scale, float* /*zero*/, block_trace* trace = nullptr) const noexcept {
    quantize_block_amax<In>(x, block_amax<In>(x, 16, amax_nan::ignore), p, codes, scale, trace);
  }

  /// quantize_block with the amax that sets the scale given: the 16 elements' own amax in
  /// the 1D recipe, the amax of the 16x16 tile holding them in TE's 2D recipe
  /// (nvfp4_te_2d, nvfp4_matrix.hpp; quantize_transpose_nvfp4_2D_kernel computes the tile
  /// amax and then the same scale as the 1D kernel).
  template <class In>
  KVQ_HD void quantize_block_amax(const typename In::storage* x, float bamax, const params& p, std::uint8_t* codes,
                                  scale_type* scale, block_trace* trace = nullptr) const noexcept {
    const float fp4_max_inv = 1.0f / 6.0f;  // constexpr in TE
    const float unrounded = bamax * (p.s_enc * fp4_max_inv);
    const std::uint8_t sf = detail::e4m3_rn_sat(unrounded);
    const float sff = detail::e4m3_value(sf);
    float inv;
    if (inverse == inverse_rule::rcp_of_product) {
      const float prod = sff * p.s_dec;
      inv = detail::fmin_ign(1.0f / prod, detail::flt_max);
    } else {
      inv = p.s_enc / sff;
    }
    *scale = sf;
    if (trace) *trace = {bamax, unrounded, inv, trace->scaled};
    detail::store_e2m1_scaled<In>(x, inv, codes, trace ? trace->scaled : nullptr);
  }

  /// Decodes one block's codes with its scale (and zero point) into out[0..block_size()).
  KVQ_HD void dequantize_block(const std::uint8_t* codes, scale_type scale, float /*zero*/, const params& p,
                               float* out) const noexcept {
    const float factor_inv = static_cast<float>(1.0 / (6.0 * 448.0));
    const float t = detail::e4m3_value(scale) * p.amax;
    detail::load_e2m1_scaled(codes, t * factor_inv, out);
  }
};

/// TransformerEngine's other NVFP4 order, as its own recipe: the element multiplier is
/// __fdiv_rn(S_enc, float(SF)) (transformer_engine/common/cast/nvfp4/quantize_nvfp4.cuh,
/// the rowwise kernel shared with the MXFP8 colwise path) instead of
/// fminf(1 / (float(SF) * S_dec), FLT_MAX) (quantize_transpose_nvfp4.cuh and
/// reference_nvfp4.py, nvfp4_te). Everything else (S_enc, SF, tensor value, dequantize,
/// bad input) is nvfp4_te's; SF = 0 gives S_enc / 0 = +Inf, so nonzero x saturate to ±6
/// as under nvfp4_te, and 0 * Inf = NaN stores e2m1(NaN) (kvq::encode's NaN result).
/// The two orders differ in the last bit of the multiplier for some (S_enc, SF) pairs,
/// which moves an element that lands on an e2m1 midpoint under one order off it under
/// the other.
struct nvfp4_te_enc_div : nvfp4_te {
  /// Recipe name, unique per recipe type (tables, reports, kv::format_name).
  static constexpr const char* name = "nvfp4_te_enc_div";
  /// The reference implementation the recipe reproduces (files and functions).
  static constexpr const char* source =
      "TransformerEngine transformer_engine/common/cast/nvfp4/quantize_nvfp4.cuh (S_enc / SF), core_nvfp4.cuh";
  /// The recipe with inverse_rule::enc_div_scale.
  KVQ_HD constexpr nvfp4_te_enc_div() noexcept : nvfp4_te{} { inverse = inverse_rule::enc_div_scale; }
};

// ---------------------------------------------------------------------------------
/// vLLM NVFP4 KV-cache store (nvfp4_kv_cache_kernels.cu, nvfp4_utils.cuh
/// cvt_warp_fp16_to_fp4), with its rcp.approx.ftz.f32 reciprocals taken from Instr;
/// tensor value = k_scale (or v_scale). See the file comment.
template <class Instr = instr::ieee>
struct nvfp4_vllm : nvfp4_layout {
  /// Instruction model (kvq::instr) of the recipe's divisions, reciprocals and multiply-adds.
  using instruction_model = Instr;
  /// Recipe name, unique per recipe type (tables, reports, kv::format_name).
  static constexpr const char* name = "nvfp4_vllm";
  /// The reference implementation the recipe reproduces (files and functions).
  static constexpr const char* source =
      "vLLM csrc/libtorch_stable/nvfp4_kv_cache_kernels.cu, "
      "csrc/libtorch_stable/quantization/fp4/nvfp4_utils.cuh (cvt_warp_fp16_to_fp4)";
  /// What the recipe's single fp32 tensor value means.
  static constexpr tensor_kind tensor = tensor_kind::decode_scale;
  /// Whether kvq reproduces the reference kernel bit for bit with IEEE operations today.
  static constexpr exactness exact = exactness::needs_instruction_model;
  /// NaN rule of the tensor amax from which the tensor value is calibrated.
  static constexpr amax_nan tensor_amax_rule = amax_nan::propagate;

  /// Encode-side constants of the tensor-level stage, made by prepare().
  struct params {
    /// \var k_scale
    /// The tensor value, k_scale (or v_scale), the dequantization multiplier.

    /// global_scale = 1 / k_scale (IEEE division).
    float global_scale, k_scale;
  };
  /// ModelOpt-style checkpoint scale for a tensor amax: amax / (6 * 448), so that
  /// the largest block scale lands at 448. vLLM itself reads k_scale from the checkpoint.
  KVQ_HD static float tensor_value_from_amax(float amax) noexcept { return amax / 2688.0f; }

  /// global_scale = 1 / k_scale and the k_scale itself.
  KVQ_HD static params prepare(float k_scale) noexcept { return {1.0f / k_scale, k_scale}; }

  /// One candidate block scale: nvfp4_candidate_scale / the NVFP4 branch of cvt_warp_fp16_to_fp4.
  KVQ_HD static void candidate(float gs, float vmax, float denominator, std::uint8_t* sf, float* output_scale,
                               float* unrounded = nullptr) noexcept {
    const float sf_value = gs * (vmax * Instr::rcp(denominator));
    if (unrounded) *unrounded = sf_value;
    *sf = detail::e4m3_rn_sat(sf_value);
    const float sff = detail::e4m3_value(*sf);
    *output_scale = sff != 0.0f ? Instr::rcp(sff * Instr::rcp(gs)) : 0.0f;
  }

  /// Quantizes one block of block_size() inputs of kind In (f32_input, bf16_input, fp16_input):
  /// packed codes, *scale (and *zero where has_zero_point); when trace is given it receives the
  /// intermediate values (no output bit changes).
  template <class In>
  KVQ_HD void quantize_block(const typename In::storage* x, const params& p, std::uint8_t* codes,
                             scale_type* scale, float* /*zero*/, block_trace* trace = nullptr) const noexcept {
    const float vmax = block_amax<In>(x, 16, amax_nan::ignore_unless_all);
    float os, unrounded;
    candidate(p.global_scale, vmax, 6.0f, scale, &os, &unrounded);
    if (trace) *trace = {vmax, unrounded, os, trace->scaled};
    detail::store_e2m1_scaled<In>(x, os, codes, trace ? trace->scaled : nullptr);
  }

  /// Decodes one block's codes with its scale (and zero point) into out[0..block_size()).
  KVQ_HD void dequantize_block(const std::uint8_t* codes, scale_type scale, float /*zero*/, const params& p,
                               float* out) const noexcept {
    const float sff = detail::e4m3_value(scale);
    float tmp[16];
    detail::load_e2m1_scaled(codes, sff, tmp);
    for (int i = 0; i < 16; ++i) out[i] = tmp[i] * p.k_scale;
  }
};

// ---------------------------------------------------------------------------------
/// vLLM NVFP4 KV-cache store with the FOUR_OVER_SIX scale search: block scales with
/// denominators 6 and 4 are both tried and the one with the smaller reconstruction error
/// kept (ties keep 6); multiply-adds through Instr::mad (default fused, as nvcc emits).
template <class Instr = instr::ieee_fma>
struct nvfp4_vllm_4over6 : nvfp4_vllm<Instr> {
  /// The plain vLLM recipe (params, candidate scales, dequantization).
  using base = nvfp4_vllm<Instr>;
  using typename base::params;
  using typename base::scale_type;
  /// Recipe name, unique per recipe type (tables, reports, kv::format_name).
  static constexpr const char* name = "nvfp4_vllm_4over6";
  /// The reference implementation the recipe reproduces (files and functions).
  static constexpr const char* source =
      "vLLM csrc/libtorch_stable/nvfp4_kv_cache_kernels.cu (cvt_warp_fp16_to_fp4_4over6)";

  /// round_to_nearest_e2m1 of the reference (software, returns the value).
  KVQ_HD static float round_to_nearest_e2m1(float x) noexcept {
    const float ax = detail::abs_bits(x);
    float q;
    if (ax <= 0.25f) q = 0.0f;
    else if (ax < 0.75f) q = 0.5f;
    else if (ax <= 1.25f) q = 1.0f;
    else if (ax < 1.75f) q = 1.5f;
    else if (ax <= 2.5f) q = 2.0f;
    else if (ax < 3.5f) q = 3.0f;
    else if (ax <= 5.0f) q = 4.0f;
    else q = 6.0f;  // also NaN: every comparison above is false
    const std::uint32_t sign = bit_cast<std::uint32_t>(x) & 0x80000000u;
    return bit_cast<float>(static_cast<std::uint32_t>(bit_cast<std::uint32_t>(q) | sign));
  }

  /// nvfp4_reconstruction_error of the reference: the sum over the 8 element pairs of the
  /// squared error of the round trip with output scale os, in the kernel's order.
  template <class In>
  KVQ_HD static float reconstruction_error(const typename In::storage* x, float os) noexcept {
    float error = 0.0f;
    const float dq = os != 0.0f ? Instr::rcp(os) : 0.0f;
    for (int i = 0; i < 8; ++i) {
      const float vx = In::load(x[2 * i]);
      const float vy = In::load(x[2 * i + 1]);
      float e;
      if (os == 0.0f) {
        e = Instr::mad(vx, vx, vy * vy);
      } else {
        const float qx = round_to_nearest_e2m1(vx * os);
        const float qy = round_to_nearest_e2m1(vy * os);
        const float dx = Instr::mad(qx, dq, -vx);
        const float dy = Instr::mad(qy, dq, -vy);
        e = Instr::mad(dx, dx, dy * dy);
      }
      error = error + e;
    }
    return error;
  }

  /// Quantizes one block of block_size() inputs of kind In (f32_input, bf16_input, fp16_input):
  /// packed codes, *scale (and *zero where has_zero_point); when trace is given it receives the
  /// intermediate values (no output bit changes).
  template <class In>
  KVQ_HD void quantize_block(const typename In::storage* x, const params& p, std::uint8_t* codes,
                             scale_type* scale, float* /*zero*/, block_trace* trace = nullptr) const noexcept {
    const float vmax = block_amax<In>(x, 16, amax_nan::ignore_unless_all);
    std::uint8_t sf6 = 0, sf4 = 0;
    float os6 = 0.0f, os4 = 0.0f, un6 = 0.0f, un4 = 0.0f;
    base::candidate(p.global_scale, vmax, 6.0f, &sf6, &os6, &un6);
    base::candidate(p.global_scale, vmax, 4.0f, &sf4, &os4, &un4);
    const float err6 = reconstruction_error<In>(x, os6);
    const float err4 = reconstruction_error<In>(x, os4);
    const bool use4 = err4 < err6;
    *scale = use4 ? sf4 : sf6;
    if (trace) *trace = {vmax, use4 ? un4 : un6, use4 ? os4 : os6, trace->scaled};  // the chosen candidate
    detail::store_e2m1_scaled<In>(x, use4 ? os4 : os6, codes, trace ? trace->scaled : nullptr);
  }
};

// ---------------------------------------------------------------------------------
/// torchao NVFP4 (torchao/prototype/mx_formats/nvfp4_tensor.py): block scale
/// e4m3(clamp(max_abs / 6, 2^-6, 448)), elements scaled by that block scale in torchao's
/// operation order, then e2m1(clamp(., -6, 6)); TwoLevel adds the per_tensor_scale
/// amax * fp32(1/2688). The exact order is in the file comment. Use nvfp4_torchao /
/// nvfp4_torchao_two_level.
template <bool TwoLevel>
struct nvfp4_torchao_recipe : nvfp4_layout {
  /// Recipe name, unique per recipe type (tables, reports, kv::format_name).
  static constexpr const char* name = TwoLevel ? "nvfp4_torchao_two_level" : "nvfp4_torchao";
  /// The reference implementation the recipe reproduces (files and functions).
  static constexpr const char* source = "torchao 0.18 torchao/prototype/mx_formats/nvfp4_tensor.py (nvfp4_quantize)";
  /// What the recipe's single fp32 tensor value means.
  static constexpr tensor_kind tensor = TwoLevel ? tensor_kind::decode_scale : tensor_kind::none;
  /// Whether kvq reproduces the reference kernel bit for bit with IEEE operations today.
  static constexpr exactness exact = exactness::bit_exact;
  /// NaN rule of the tensor amax from which the tensor value is calibrated.
  static constexpr amax_nan tensor_amax_rule = amax_nan::propagate;

  /// Encode-side constants of the tensor-level stage, made by prepare().
  struct params {
    /// per_tensor_scale of the two-level recipe (1 for the single-level one).
    float per_tensor_scale;
  };
  /// per_tensor_amax_to_scale: amax / (448 * 6), a tensor / Python-scalar division
  /// that PyTorch's CUDA kernel computes as amax * fp32(1/2688).
  KVQ_HD static float tensor_value_from_amax(float amax) noexcept {
    const float inv = 1.0f / 2688.0f;
    return amax * inv;
  }
  /// per_tensor_scale = v for the two-level recipe, 1 for the single-level one.
  KVQ_HD static params prepare(float v) noexcept { return {TwoLevel ? v : 1.0f}; }

  /// Quantizes one block of block_size() inputs of kind In (f32_input, bf16_input, fp16_input):
  /// packed codes, *scale (and *zero where has_zero_point); when trace is given it receives the
  /// intermediate values (no output bit changes).
  template <class In>
  KVQ_HD void quantize_block(const typename In::storage* x, const params& p, std::uint8_t* codes,
                             scale_type* scale, float* /*zero*/, block_trace* trace = nullptr) const noexcept {
    const float e4m3_eps = 0.015625f;  // torch.finfo(float8_e4m3fn).tiny
    const float max_abs = block_amax<In>(x, 16, amax_nan::propagate);
    const float inv6 = 1.0f / 6.0f;
    const float block_scale = max_abs * inv6;
    float reciprocal, unrounded;
    if (TwoLevel) {
      const float sbs = block_scale / p.per_tensor_scale;
      unrounded = detail::torch_clamp(sbs, e4m3_eps, 448.0f);
      *scale = detail::e4m3_rn_sat(unrounded);
      // reciprocal_scale = (1.0 / per_tensor_scale) / scaled_block_scales_fp32
      reciprocal = (1.0f / p.per_tensor_scale) / detail::e4m3_value(*scale);
    } else {
      unrounded = detail::torch_clamp(block_scale, e4m3_eps, 448.0f);
      *scale = detail::e4m3_rn_sat(unrounded);
      reciprocal = 1.0f / detail::e4m3_value(*scale);  // (1.0 / block_scale_fp32)
    }
    if (trace) *trace = {max_abs, unrounded, reciprocal, trace->scaled};
    for (int i = 0; i < 8; ++i) {
      const float a = detail::torch_clamp(In::load(x[2 * i]) * reciprocal, -6.0f, 6.0f);
      const float b = detail::torch_clamp(In::load(x[2 * i + 1]) * reciprocal, -6.0f, 6.0f);
      if (trace && trace->scaled) {
        trace->scaled[2 * i] = a;
        trace->scaled[2 * i + 1] = b;
      }
      codes[i] = static_cast<std::uint8_t>(detail::e2m1_rn(a) | (detail::e2m1_rn(b) << 4));
    }
  }

  /// Decodes one block's codes with its scale (and zero point) into out[0..block_size()).
  KVQ_HD void dequantize_block(const std::uint8_t* codes, scale_type scale, float /*zero*/, const params& p,
                               float* out) const noexcept {
    const float s = TwoLevel ? p.per_tensor_scale * detail::e4m3_value(scale) : detail::e4m3_value(scale);
    detail::load_e2m1_scaled(codes, s, out);
  }
};
/// torchao NVFP4, single level (no tensor value).
using nvfp4_torchao = nvfp4_torchao_recipe<false>;
/// torchao NVFP4 with per_tensor_scale.
using nvfp4_torchao_two_level = nvfp4_torchao_recipe<true>;

}  // namespace block
}  // namespace kvq
