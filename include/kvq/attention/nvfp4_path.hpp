/// \file
/// kvq/attention/nvfp4_path.hpp — attention over an NVFP4 KV cache as a Blackwell (sm_100)
/// kernel computes it: the path `sm100_nvfp4`, next to FlashAttention-3's sm_90 FP8 paths
/// (fa3_path.hpp).
///
/// What the real kernels do (read, with the commit read):
/// ~~~
///   trtllm-gen FMHA (sm_100/sm_103; the kernel FlashInfer's trtllm-gen backend and vLLM's
///   FlashInfer backend run for an NVFP4 KV cache; FlashInfer fb28d7242b35):
///     - Q is never FP4: TllmGenFmhaRunner accepts Q in E4M3, FP16, BF16 or INT8 only, K and V
///       in E4M3, E2M1 (NVFP4), FP16, BF16 (include/flashinfer/trtllm/fmha/fmhaRunner.cuh).
///     - K/V are transformed before the MMA whenever their type differs from Q's:
///       `transformsKv = mDataTypeK != mDataTypeQ`; for E2M1 KV with E4M3 Q (head_dim >= 128,
///       swapped-AB generation kernels) the transformed K/V are kept in tensor memory
///       (`storeTransformedKvInTmem`, include/flashinfer/trtllm/fmha/kernelParams.h). The
///       e4m3 block scales (one per 16 elements of a token's head_dim row) come in through
///       their own TMA descriptors (tmaKSf_, tmaVSf_).
///     - The per-tensor NVFP4 scales are not applied by the transform: FlashInfer sets
///       mScaleSfKv = 1 "which should be fused into bmm1_scale(k)/bmm2_scale(v/o)"
///       (csrc/trtllm_fmha_kernel_launcher.cu), and vLLM forms
///       bmm1_scale = q_scale * k_scale * softmax_scale, bmm2_scale = v_scale
///       (vllm/v1/attention/backends/flashinfer.py, vLLM PR #22703), and
///       scaleSoftmaxLog2 = bmm1_scale * M_LOG2E.
///     - "Math is in FP8": with an NVFP4 KV cache Q.K^T and P.V run as FP8 MMAs, and FP8
///       attention is required for it (TensorRT-LLM PR #6244, the NVFP4 KV cache PR, its
///       author's answers). On sm_100 an FP8 MMA is tcgen05.mma kind::f8f6f4.
///   XQA (FlashInfer csrc/xqa/mha.cu with ENABLE_4BIT_KV_CACHE, fb28d7242b35): e2m1 codes
///     are converted by cvt.rn.f16x2.e2m1x2 (utils.cuh) and multiplied by their block scales
///     converted to fp16/bf16 (exact: an e2m1 value times a ue4m3 scale has at most 5
///     significant bits), then fp16/bf16 mma.sync; not modelled here.
///   So no public kernel feeds an NVFP4 KV cache to kind::mxf4nvf4: V's block scales run
///   along head_dim (the N axis of P.V), not along the tokens P.V sums over, and Q is not
///   FP4. kind::mxf4nvf4 attention (Q.K^T with NVFP4 Q) is not modelled.
/// ~~~
///
/// The path (sm100_nvfp4_attention):
/// ~~~
///   store   K and V as vLLM's NVFP4 KV cache stores them (block::nvfp4_vllm: e2m1 codes, one
///           e4m3 scale per 16 elements of a token's row, tensor value k_scale = amax/2688
///           unless given).
///   operand K_op = e4m3_rn_satfinite(e2m1 * sf * 2^operand_shift) (same for V).   inferred
///           The transform is inside the trtllm-gen cubins. e2m1 * sf reaches 6 * 448 = 2688
///           with the usual tensor value amax/2688, beyond e4m3's 448, so the transform must
///           rescale; kvq takes the smallest power of two that fits (2^-3: 2688/8 = 336) and
///           folds 2^-operand_shift back into bmm1/bmm2 scales. e2m1 * sf has up to 5
///           significant bits, e4m3 4, so the cast rounds (6 * 448 / 8 = 336 -> 320).
///   q       Q_op = e4m3_rn_satfinite(q / q_scale) (vLLM's FP8 query quantization).
///   scores  q.k as chained tcgen05.mma kind::f8f6f4 steps of 32 products through the
///           recorded sm_100 e4m3 preset (kvq/mma/presets.hpp), never promoted; softmax,
///           P = exp2(S * scale_log2 - (m * scale_log2 - max_offset)) cast to e4m3 and the
///           P.V steps chained across KV tiles: fa3_query's machinery (kernels.hpp)
///           with the sm_100 preset.                                                inferred
///           scale_log2 = fl(double(softmax_scale) * q_scale * k_scale * 2^-operand_shift *
///           log2(e)) (bmm1_scale * M_LOG2E); the output is multiplied by
///           fl(fl(1 / row_sum) * fl(v_scale * 2^-operand_shift)) (bmm2_scale).
///           KV tile 128 tokens, first to last, P scaled by 2^8 before its cast:   inferred
///           (the cubins' tile sizes, KV order and P scaling are not public).
/// ~~~
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <kvq/attention/kernels.hpp>
#include <kvq/attention/variants.hpp>
#include <kvq/block/io16.hpp>
#include <kvq/block/nvfp4.hpp>
#include <kvq/core/error.hpp>
#include <kvq/core/matrix.hpp>
#include <kvq/format/formats.hpp>
#include <kvq/mma/api.hpp>

namespace kvq {
namespace attention {

/// The canonical name of the NVFP4-KV sm_100 path ("sm100_nvfp4").
inline const char* sm100_nvfp4_path_name() { return "sm100_nvfp4"; }

/// Options of sm100_nvfp4_attention (see the file comment).
struct sm100_nvfp4_options {
  /// Softmax scale; 0: head_dim ** -0.5 in double (as vLLM passes it into bmm1_scale).
  float softmax_scale = 0.0f;
  /// Per-tensor FP8 scale of Q: the kernel sees e4m3(q / q_scale); > 0.
  float q_scale = 1.0f;
  /// \var k_scale
  /// NVFP4 tensor value of K (vLLM's k_scale, the dequantization multiplier); 0: amax(K) /
  /// 2688 from the data (nvfp4_vllm::tensor_value_from_amax, 1 for an all-zero K).
  /// \var v_scale
  /// The same for V.
  float k_scale = 0.0f, v_scale = 0.0f;
  /// The NVFP4 -> e4m3 operand transform multiplies e2m1 * sf by 2^operand_shift before the
  /// cast (inferred, see the file comment); -20 .. 20.
  int operand_shift = -3;
  /// KV tile length in tokens (> 0).
  std::size_t block_n = 128;
  /// true: KV tiles from the last to the first; false (default): first to last.
  bool reverse = false;
  /// P scaled by 2^max_offset before the e4m3 cast (8 or 0).
  int max_offset = 8;
  /// tensor_core (default): the sm_100 e4m3 preset, the path itself; ideal_fp32: the same
  /// operands summed in kvq's fp32 tree (the comparison that isolates the accumulator).
  fa3_accumulation accumulation = fa3_accumulation::tensor_core;
};

/// Attention of one head over an NVFP4 KV cache as an sm_100 kernel with FP8 math computes
/// it (path sm100_nvfp4, see the file comment): K and V are stored once as NVFP4 and
/// transformed to e4m3 operands; each query is cast to e4m3 and run through fa3_query with
/// the sm_100 e4m3 tensor-core preset.
class sm100_nvfp4_attention {
 public:
  /// Quantizes K and V and prepares the kernel configuration. Throws std::invalid_argument
  /// for the shape errors of reference_attention, head_dim not a multiple of 16, block_n
  /// = 0, q_scale not > 0, a negative or non-finite k_scale / v_scale, max_offset other
  /// than 0 or 8, or operand_shift outside -20 .. 20.
  sm100_nvfp4_attention(const matrix_f& K, const matrix_f& V, const sm100_nvfp4_options& opt = {}) : opt_(opt) {
    const char* where = "kvq::attention::sm100_nvfp4_attention";
    detail::check_kv(where, K, V);
    if (K.cols() % 16 != 0)
      kvq::detail::fail(where, "head_dim " + std::to_string(K.cols()) + " is not a multiple of 16 (NVFP4 blocks)");
    if (opt.block_n == 0) kvq::detail::fail(where, "block_n = 0");
    if (!(opt.q_scale > 0.0f) || !std::isfinite(opt.q_scale)) kvq::detail::fail(where, "q_scale must be finite and > 0");
    if (!(opt.k_scale >= 0.0f) || !std::isfinite(opt.k_scale) || !(opt.v_scale >= 0.0f) || !std::isfinite(opt.v_scale))
      kvq::detail::fail(where, "k_scale and v_scale must be finite and >= 0 (0: from the data)");
    if (opt.max_offset != 0 && opt.max_offset != 8) kvq::detail::fail(where, "max_offset must be 0 or 8");
    if (opt.operand_shift < -20 || opt.operand_shift > 20) kvq::detail::fail(where, "operand_shift outside -20 .. 20");
    k_scale_ = opt.k_scale > 0.0f ? opt.k_scale : scale_from_data(K);
    v_scale_ = opt.v_scale > 0.0f ? opt.v_scale : scale_from_data(V);
    K_ = operands(K, k_scale_);
    V_ = operands(V, v_scale_);
    // vLLM's models pass head_dim ** -0.5 as a Python float (a double, C pow).
    const double sm = opt.softmax_scale > 0.0f ? static_cast<double>(opt.softmax_scale)
                                               : std::pow(static_cast<double>(head_dim()), -0.5);
    const double unshift = std::ldexp(1.0, -opt.operand_shift);
    // bmm1_scale = q_scale * k_scale * softmax_scale (double), times M_LOG2E, stored as float.
    cfg_.scale_log2 = static_cast<float>(static_cast<double>(opt.q_scale) * (static_cast<double>(k_scale_) * unshift) *
                                         sm * math::detail::inv_ln2_hi);
    cfg_.v_descale = static_cast<float>(static_cast<double>(v_scale_) * unshift);  // bmm2_scale
    cfg_.max_offset = static_cast<float>(opt.max_offset);
    cfg_.block_n = opt.block_n;
    cfg_.reverse = opt.reverse;
    cfg_.accumulation = opt.accumulation;
    kvq::mma::preset_info pi{};
    kvq::mma::find_preset(kvq::mma::arch::sm_100, kvq::mma::input_format::e4m3, kvq::mma::output_format::fp32, pi);
    cfg_.mma = pi.params;
  }

  /// Context length n (rows of K).
  std::size_t tokens() const { return static_cast<std::size_t>(K_.rows()); }
  /// Head dimension d (columns of K).
  std::size_t head_dim() const { return static_cast<std::size_t>(K_.cols()); }
  /// Name of the path for reports.
  std::string name() const {
    return std::string(sm100_nvfp4_path_name()) + " (NVFP4 KV -> e4m3 x 2^" + std::to_string(opt_.operand_shift) +
           (opt_.accumulation == fa3_accumulation::tensor_core ? ", sm_100 e4m3 tensor core" : ", ideal fp32") +
           ", block " + std::to_string(opt_.block_n) +
           (opt_.reverse ? ", reverse)" : ", forward)");
  }
  /// The kernel configuration (fa3_query) of every query.
  const fa3_config& config() const { return cfg_; }
  /// The NVFP4 tensor value of K (given or amax / 2688).
  float k_scale() const { return k_scale_; }
  /// The NVFP4 tensor value of V.
  float v_scale() const { return v_scale_; }
  /// The e4m3 K operands (decoded, exact; tokens x head_dim): K ~ keys() * k_scale * 2^-operand_shift.
  const matrix_f& keys() const { return K_; }
  /// The e4m3 V operands (decoded, exact).
  const matrix_f& values() const { return V_; }

  /// The e4m3 operand of one query element: e4m3(x / q_scale), rn, satfinite.
  float query_operand(float x) const {
    return kvq::decode<kvq::fmt::e4m3>(
        kvq::encode<kvq::fmt::e4m3>(x / opt_.q_scale, kvq::rounding::nearest_even, kvq::overflow::satfinite));
  }
  /// The raw score the kernel forms for query operands q8 (head_dim() e4m3 values) and key
  /// t: the chained sm_100 e4m3 tensor-core inner product of q8 and keys() row t (what
  /// fa3_query computes before the softmax, whatever `accumulation` says). Throws std::invalid_argument if t >= tokens().
  float raw_score(const float* q8, std::size_t t) const {
    if (t >= tokens()) kvq::detail::fail("kvq::attention::sm100_nvfp4_attention::raw_score", "token out of range");
    return detail::tc_dot(cfg_.mma, kvq::mma::input_format::e4m3, q8, &K_(static_cast<Eigen::Index>(t), 0), head_dim(),
                          0);
  }

  /// Attention of one query q (head_dim() floats): p receives the tokens() effective
  /// weights (doubles), o the head_dim() outputs.
  query_status run(const float* q, double* p, float* o, workspace& ws) const { return run_with(q, tokens(), p, o, ws); }
  /// The same over the first `keys` tokens (2 to tokens(); a causal query at position
  /// keys - 1). Throws std::invalid_argument for another key count.
  query_status run_prefix(const float* q, std::size_t keys, double* p, float* o, workspace& ws) const {
    detail::check_prefix("kvq::attention::sm100_nvfp4_attention::run_prefix", keys, tokens());
    return run_with(q, keys, p, o, ws);
  }

 private:
  query_status run_with(const float* q, std::size_t n, double* p, float* o, workspace& ws) const {
    const std::size_t d = head_dim();
    float* qq = workspace::get(ws.q, d);
    for (std::size_t j = 0; j < d; ++j) qq[j] = query_operand(q[j]);
    float* scratch = workspace::get(ws.f0, fa3_scratch(n, d, cfg_.block_n));
    return fa3_query<kvq::fmt::e4m3>(qq, detail::view_prefix(K_, n), detail::view_prefix(V_, n), cfg_, p, o, scratch);
  }
  static float scale_from_data(const matrix_f& m) {
    float amax = 0.0f;
    for (Eigen::Index i = 0; i < m.size(); ++i) {
      const float a = std::fabs(m.data()[i]);
      if (a > amax) amax = a;
    }
    const float s = kvq::block::nvfp4_vllm<>::tensor_value_from_amax(amax);
    return s > 0.0f && std::isfinite(s) ? s : 1.0f;
  }
  // Each row's 16-element blocks stored by nvfp4_vllm with tensor value `scale`, then
  // e4m3(e2m1 * sf * 2^operand_shift).
  matrix_f operands(const matrix_f& m, float scale) const {
    const kvq::block::nvfp4_vllm<> rec;
    const auto prm = kvq::block::nvfp4_vllm<>::prepare(scale);
    matrix_f r(m.rows(), m.cols());
    float blk[16];
    std::uint8_t codes[8];
    std::uint8_t sf = 0;
    for (Eigen::Index i = 0; i < m.rows(); ++i)
      for (Eigen::Index j0 = 0; j0 < m.cols(); j0 += 16) {
        for (int u = 0; u < 16; ++u) blk[u] = m(i, j0 + u);
        rec.quantize_block<kvq::block::f32_input>(blk, prm, codes, &sf, nullptr);
        const float sff = kvq::block::detail::e4m3_value(sf);
        for (int u = 0; u < 16; ++u) {
          const std::uint8_t c = static_cast<std::uint8_t>(u % 2 == 0 ? codes[u / 2] & 0x0Fu : codes[u / 2] >> 4);
          // e2m1 * sf is exact in float (<= 5 significant bits); so is the power-of-two shift.
          const float x = std::ldexp(kvq::block::detail::e2m1_value(c) * sff, opt_.operand_shift);
          r(i, j0 + u) = kvq::decode<kvq::fmt::e4m3>(
              kvq::encode<kvq::fmt::e4m3>(x, kvq::rounding::nearest_even, kvq::overflow::satfinite));
        }
      }
    return r;
  }
  sm100_nvfp4_options opt_;
  fa3_config cfg_;
  float k_scale_ = 1.0f, v_scale_ = 1.0f;
  matrix_f K_, V_;
};

}  // namespace attention
}  // namespace kvq
