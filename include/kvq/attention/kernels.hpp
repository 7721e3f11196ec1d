/// \file
/// kvq/attention/kernels.hpp — attention for one query over a context, in three
/// precisions, as host/device functions on raw rows with caller-supplied scratch (no
/// allocation, no exceptions). Memory per query is O(n + d log n): nothing quadratic in
/// the context length is ever formed.
///
/// Every sum is kvq's fixed pairwise tree (reduce.hpp) and every exponential kvq's own
/// (math.hpp), so each kernel gives the same bits on every host, device and thread count.
/// Products of float inputs are exact in double; in the float kernels each product is
/// rounded to float before the tree sum (a GPU tensor core accumulates in its own order,
/// which no CPU reproduces; these kernels define one deterministic order).
///
/// ~~~
///  reference_query  double: s_t = (q.k_t) / sqrt(d) [+ beta_t]; p = exp(s - max) / sum; o = sum p_t v_t
///  storage_query    fp32 (or bf16) math on K/V that went through a quantizer:
///                   s_t = fl(q.k_t) * scale [+ beta_t]; e_t = exp(s_t - max); fp32: p = e / Z, o = sum p v;
///                   bf16: P = bf16(e), o = bf16(fl(sum P v) * (1/Z)) (FlashAttention-2 order)
///  fa3_query        FlashAttention-3 FP8 forward (hopper/softmax.h, mainloop_fwd_sm90_tma_gmma_ws.hpp):
///                   KV blocks of block_n tokens, processed last-to-first (FA3) or first-to-last;
///                   per block: S = q.k (fp32) [* k_block_descale] [+ score_bias_t],
///                   m = max(m_prev, max S),
///                   scores_scale = exp2((m_prev - m) * scale_log2), row_sum *= scores_scale,
///                   P = exp2(fma(S, scale_log2, -(fma(m, scale_log2, -max_offset)))),
///                   row_sum += sum P, P8 = fp8(P) (rn, satfinite), O = O * scores_scale + P8 . V;
///                   finally O *= (row_sum == 0 or NaN ? 0 : 1 / row_sum) * v_descale.
///                   max_offset = 8 scales P into [0, 256] (FA3's FP8 path: S = 256), 0 gives S = 1.
///                   Accumulation (fa3_accumulation): ideal_fp32 sums q.k and P8.V in kvq's
///                   fp32 tree (the default); tensor_core runs them as chained wgmma steps of
///                   32 products through a kvq::mma block-FMA model (sm_90 fp8: 13-bit
///                   accumulator), optionally promoted to an fp32 accumulator every N steps
///                   (two-level accumulation, see fa3_config).
///                   The two fma's are what nvcc's default contraction makes of FA3's
///                   `x * scale - max_scaled` and `max * scale - max_offset`. The row max uses
///                   fmaxf semantics (a NaN operand is ignored), as CUDA's max does.
/// ~~~
///
/// Per-key score biases (beta_t, e.g. the biases of a compacted cache, Zweiger et al.,
/// "Fast KV Compaction via Attention Matching", arXiv 2602.16284) are an optional pointer
/// of n floats; nullptr means none, and then the add is skipped, so a kernel without
/// biases computes exactly what it computed before biases existed (an add of +0.0 would
/// also be exact for every finite score except that it turns a -0.0 score into +0.0;
/// skipping it makes the guarantee trivial). Where the bias enters:
/// ~~~
///   reference_query  in double, after the division by sqrt(d): s_t = dot / sqrt(d) + double(beta_t)
///   storage_query    in fp32, after the scale multiply (two roundings, no fma):
///                    s_t = fl(fl(q.k_t) * scale) + beta_t  (bf16 mode: beta_t as given)
///   fa3_query        in fp32 on the raw score, before the row max (fa3_config::score_bias):
///                    S_t = fl(S_t + b_t) with b_t = beta_t / (softmax_scale * q_descale * k_descale)
///                    in raw-score units, the way FlashAttention-2 adds ALiBi (its slope is
///                    divided by scale_softmax, csrc/flash_attn/src/flash_fwd_kernel.h, and
///                    added to the unscaled scores in mask.h), so the online softmax, its
///                    max and rescale factors and the exp2 with log2(e) folded into
///                    scale_log2 are unchanged; fa3_fp8_attention does the conversion.
/// ~~~
///
/// Each kernel also writes the effective attention weights p_eff[t] (double): the weight
/// with which v_t enters the output, so metrics compare the distribution the kernel really
/// used (for fa3_query: P8_t times the later blocks' rescale factors times 1/row_sum, the
/// products taken in double).
#pragma once

#include <cstddef>
#include <cstdint>

#include <kvq/config.hpp>
#include <kvq/core/math.hpp>
#include <kvq/core/reduce.hpp>
#include <kvq/core/float16.hpp>
#include <kvq/format/decode.hpp>
#include <kvq/format/encode.hpp>
#include <kvq/format/formats.hpp>
#include <kvq/mma/block_fma.hpp>
#include <kvq/mma/fast.hpp>
#include <kvq/mma/params.hpp>

namespace kvq {
namespace attention {

/// A read-only row-major block of rows x cols with a row stride (in elements).
template <class T>
struct rows_view {
  /// First element of row 0.
  const T* data = nullptr;
  /// \var rows
  /// Number of rows (tokens).
  /// \var cols
  /// Elements per row (head_dim).
  /// \var stride
  /// Distance in elements between the starts of consecutive rows.
  std::size_t rows = 0, cols = 0, stride = 0;
  /// Pointer to row i (no bounds check).
  KVQ_HD const T* row(std::size_t i) const { return data + i * stride; }
};

/// What a per-query kernel saw; the driver's NaN/Inf guard acts on nonfinite_scores.
struct query_status {
  /// A NaN or Inf reached the scores (before the softmax).
  bool nonfinite_scores = false;  // a NaN or Inf reached the scores
  /// The output row holds a NaN or Inf.
  bool nonfinite_output = false;  // the output row holds a NaN or Inf
};

namespace detail {

/// out[t] = tree_dot<Acc>(q, K.row(t), K.cols) for every row: on the host several rows at
/// a time (reduce::tree_dot_rows, the same tree per row, so the same bits), on the device
/// one row per iteration (a thread's registers, not a batch's, are what is short there).
template <class Acc, class Out>
KVQ_HD inline void scores(const float* q, rows_view<float> K, Out* out) {
#if defined(__CUDA_ARCH__)
  for (std::size_t t = 0; t < K.rows; ++t) out[t] = reduce::tree_dot<Acc>(q, K.row(t), K.cols);
#else
  reduce::tree_dot_rows<Acc>(q, K.data, K.stride, K.rows, K.cols, out);
#endif
}

template <class T>
KVQ_HD inline bool finite(T x) {
  return math::detail::is_finite(x);
}

template <class T>
KVQ_HD inline bool all_finite(const T* x, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i)
    if (!finite(x[i])) return false;
  return true;
}

/// fmaxf: a NaN operand is ignored (CUDA max/fmaxf, IEEE maxNum).
KVQ_HD inline float fmax_nan_ignoring(float a, float b) {
  if (a != a) return b;
  if (b != b) return a;
  return a > b ? a : b;
}

}  // namespace detail

/// Scratch elements the vector accumulator of a P.V over `rows` rows of width d needs.
KVQ_HD constexpr std::size_t pv_scratch(std::size_t rows, std::size_t d) {
  return static_cast<std::size_t>(reduce::levels_needed(rows) + 1) * d;
}

// ---------------------------------------------------------------------------
// Double-precision reference.
/// The weights alone: p = softmax(q.K^T / sqrt(d) + beta) in double (n doubles; bias:
/// n floats or nullptr for none); returns whether a score was not finite.
KVQ_HD inline bool reference_weights(const float* q, rows_view<float> K, double* p, const float* bias = nullptr) {
  bool nonfinite = false;
  const std::size_t n = K.rows, d = K.cols;
  const double rsd = math::sqrt(static_cast<double>(d));
  detail::scores<double>(q, K, p);
  for (std::size_t t = 0; t < n; ++t) {
    p[t] = p[t] / rsd;
    if (bias != nullptr) p[t] = p[t] + static_cast<double>(bias[t]);
    if (!detail::finite(p[t])) nonfinite = true;
  }
  const double m = reduce::tree_max(p, n);
  for (std::size_t t = 0; t < n; ++t) p[t] = math::exp(p[t] - m);
  const double Z = reduce::tree_sum(p, n);
  for (std::size_t t = 0; t < n; ++t) p[t] = p[t] / Z;
  return nonfinite;
}

/// Weights and output. Scratch: acc = pv_scratch(n, d) doubles, tmp = d doubles. p = n
/// doubles, o = d doubles; bias: n floats or nullptr.
KVQ_HD inline query_status reference_query(const float* q, rows_view<float> K, rows_view<float> V, double* p,
                                           double* o, double* acc, double* tmp, const float* bias = nullptr) {
  query_status st;
  const std::size_t d = K.cols, n = K.rows;
  st.nonfinite_scores = reference_weights(q, K, p, bias);
  reduce::tree_vector_accumulator<double> pv(acc, d);
  std::size_t t = 0;
  for (; t + 1 < n; t += 2) pv.push_scaled_pair(p[t], V.row(t), p[t + 1], V.row(t + 1), tmp);
  if (t < n) pv.push_scaled(p[t], V.row(t), tmp);
  pv.result(o);
  st.nonfinite_output = !detail::all_finite(o, d);
  return st;
}

// ---------------------------------------------------------------------------
// Storage-only emulation: fp32 (or bf16) math over already dequantized K/V.
// In bf16 mode the caller passes q, K, V already rounded to bf16.
// Scratch: s = n floats, acc = pv_scratch(n, d) floats, tmp = d floats.
/// The unnormalised fp32 softmax: s[t] = exp(q.k_t * scale [+ beta_t] - max) and Z = their
/// tree sum (bias: n floats or nullptr); returns whether a score was not finite.
KVQ_HD inline bool storage_softmax(const float* q, rows_view<float> K, float scale, float* s, float& Z,
                                   const float* bias = nullptr) {
  bool nonfinite = false;
  const std::size_t n = K.rows;
  detail::scores<float>(q, K, s);
  for (std::size_t t = 0; t < n; ++t) {
    s[t] = s[t] * scale;
    if (bias != nullptr) s[t] = s[t] + bias[t];
    if (!detail::finite(s[t])) nonfinite = true;
  }
  const float m = reduce::tree_max(s, n);
  for (std::size_t t = 0; t < n; ++t) s[t] = math::exp(s[t] - m);
  Z = reduce::tree_sum(s, n);
  return nonfinite;
}

/// The fp32 weights alone, p[t] = s[t] / Z widened to double (scratch s: n floats), as
/// storage_query computes them without bf16.
KVQ_HD inline bool storage_weights(const float* q, rows_view<float> K, float scale, float* s, double* p,
                                   const float* bias = nullptr) {
  float Z = 0.0f;
  const bool nonfinite = storage_softmax(q, K, scale, s, Z, bias);
  for (std::size_t t = 0; t < K.rows; ++t) p[t] = static_cast<double>(s[t] / Z);
  return nonfinite;
}

/// Storage-only emulation of one query (see the file comment): storage_softmax, then
/// fp32: p = s / Z, o = sum p v; bf16 (bf16 = true): P = bf16(s),
/// o = bf16(fl(sum P v) * (1/Z)), the FlashAttention-2 order. In bf16 mode the caller
/// passes q, K and V already rounded to bf16. p_eff: n doubles (the effective
/// weights), o: d floats; scratch: s = n floats, acc = pv_scratch(n, d) floats,
/// tmp = d floats; bias: n floats or nullptr.
KVQ_HD inline query_status storage_query(const float* q, rows_view<float> K, rows_view<float> V, float scale,
                                         bool bf16, double* p_eff, float* o, float* s, float* acc, float* tmp,
                                         const float* bias = nullptr) {
  query_status st;
  const std::size_t n = K.rows, d = K.cols;
  float Z = 0.0f;
  st.nonfinite_scores = storage_softmax(q, K, scale, s, Z, bias);
  reduce::tree_vector_accumulator<float> pv(acc, d);
  // Rows in pairs (push_scaled_pair: the bits of two push_scaled calls).
  if (!bf16) {
    for (std::size_t t = 0; t < n; t += 2) {
      const float p0 = s[t] / Z;
      p_eff[t] = static_cast<double>(p0);
      if (t + 1 == n) {
        pv.push_scaled(p0, V.row(t), tmp);
        break;
      }
      const float p1 = s[t + 1] / Z;
      p_eff[t + 1] = static_cast<double>(p1);
      pv.push_scaled_pair(p0, V.row(t), p1, V.row(t + 1), tmp);
    }
    pv.result(o);
  } else {
    const float invZ = 1.0f / Z;
    for (std::size_t t = 0; t < n; t += 2) {
      const float b0 = round_bf16(s[t]);
      p_eff[t] = static_cast<double>(b0) * static_cast<double>(invZ);
      if (t + 1 == n) {
        pv.push_scaled(b0, V.row(t), tmp);
        break;
      }
      const float b1 = round_bf16(s[t + 1]);
      p_eff[t + 1] = static_cast<double>(b1) * static_cast<double>(invZ);
      pv.push_scaled_pair(b0, V.row(t), b1, V.row(t + 1), tmp);
    }
    pv.result(o);
    for (std::size_t c = 0; c < d; ++c) o[c] = round_bf16(o[c] * invZ);
  }
  st.nonfinite_output = !detail::all_finite(o, d);
  return st;
}

// ---------------------------------------------------------------------------
// FlashAttention-3 FP8 forward for one query.

/// The exp2 instruction model: kvq's correctly rounded-or-1-ulp exp2 (IEEE model). A
/// hardware model of ex2.approx.ftz.f32 can be plugged in with the same signature.
struct exp2_ieee {
  /// exp2(x) by kvq::math::exp2.
  KVQ_HD float operator()(float x) const { return math::exp2(x); }
};

/// How fa3_query forms q.k and P8.V.
enum class fa3_accumulation {
  /// kvq's fixed fp32 tree, every product rounded to float (exact for FP8 inputs), one
  /// rounding per addition.
  ideal_fp32,   // kvq's fixed fp32 tree, every product rounded to float (exact products
                // of FP8 values), one rounding per addition
  /// Chained tensor-core steps of fa3_config::mma (k = 32 products for the sm_90 fp8
  /// preset): d of one step is c of the next.
  tensor_core   // chained tensor-core steps of fa3_config::mma (k = 32 products for the
                // sm_90 fp8 preset): d of one step is c of the next
};

/// Configuration of fa3_query; fa3_fp8_attention builds it from fa3_options.
struct fa3_config {
  /// fl(softmax_scale * log2(e)) times fl(q_descale * k_descale) in fp32, as FA3's
  /// flash_api.cpp and FP8 kernel form it (fa3_fp8_attention computes it).
  float scale_log2 = 0.0f;   // softmax_scale * log2(e) * q_descale * k_descale (see fa3.hpp)
  /// Per-tensor descale of V: the final output is multiplied by fl(fl(1 / row_sum) * v_descale)
  /// (0 instead of 1 / row_sum when row_sum is 0 or NaN).
  float v_descale = 1.0f;
  /// P = exp2(S * scale_log2 - (m * scale_log2 - max_offset)): 8 gives P in [0, 256]
  /// (FA3's FP8 path), 0 gives P in [0, 1].
  float max_offset = 8.0f;   // 8: P in [0, 256] (FA3's FP8 path); 0: P in [0, 1]
  /// KV tile length in tokens (FA3's kBlockN); > 0.
  std::size_t block_n = 128;  // kBlockN
  /// true: KV blocks from the last to the first (FA3's order); false: first to last.
  bool reverse = true;       // FA3 iterates the KV blocks from the last to the first
  // --- accumulation model (the defaults keep the ideal fp32 behaviour) ---
  /// How q.k and P8.V are accumulated (ideal fp32 tree or tensor-core model).
  fa3_accumulation accumulation = fa3_accumulation::ideal_fp32;
  /// The block-FMA rule of one wgmma k-step; the default is the sm_90 fp8 preset
  /// (kvq/mma/presets.hpp). fa3_fp8_attention fills it from the preset of its format.
  mma::block_fma_params mma{32, 13, -133, mma::c_entry::aligned, mma::final_rounding::toward_zero,
                            mma::output_format::fp32, 13};
  /// Two-level accumulation: after every `*_promote_every` tensor-core steps the
  /// tensor-core accumulator is added (fp32, nearest even) into an fp32 accumulator and
  /// restarted from 0 (the DeepSeek-V3 §3.3.2 / CUTLASS "FP8 fast accumulation off"
  /// scheme; for P.V the one of flash-attention PRs #2250/#2323, vLLM flash-attention
  /// #104/#122). 0: never, everything stays chained in the tensor core, as FA3 does. The
  /// counter of P.V steps runs across KV blocks (a KV block holds block_n / 32 steps).
  std::size_t qk_promote_every = 0;
  /// The same for the P.V tensor-core steps (0: never); the counter runs across KV blocks.
  std::size_t pv_promote_every = 0;
  /// Optional per-block descales (FA3 paper §3.3 block quantization), one per KV block of
  /// block_n tokens, indexed by block number; null: the per-tensor factors folded into
  /// scale_log2 and v_descale. With k_block_descale, S of block b is multiplied (fp32) by
  /// k_block_descale[b] before the softmax; with v_block_descale, the block's P8.V is
  /// multiplied by v_block_descale[b] before it enters O (so in tensor-core mode the
  /// accumulator is promoted at least once per block). Host or device pointers, as the
  /// caller runs the kernel.
  const float* k_block_descale = nullptr;
  /// Per-block descales of V, one per KV block (see k_block_descale); null: v_descale.
  const float* v_block_descale = nullptr;
  /// Optional per-key score biases in raw-score units (n floats, indexed by token; null:
  /// none): S_t = fl(S_t + score_bias[t]) after the k_block_descale multiply and before
  /// the row max. A bias beta_t in natural units (s = q.k / sqrt(d) + beta) is
  /// beta_t / (softmax_scale * q_descale * k_descale) here (fa3_fp8_attention converts).
  const float* score_bias = nullptr;
};

/// The kvq::mma input format of an FP8 element format (e5m2 for E5M2, else E4M3).
template <class F>
struct fa3_mma_input {
  /// mma::input_format::e4m3.
  static constexpr mma::input_format value = mma::input_format::e4m3;
};
/// E5M2 elements enter the tensor core as mma::input_format::e5m2.
template <>
struct fa3_mma_input<kvq::fmt::e5m2> {
  /// mma::input_format::e5m2.
  static constexpr mma::input_format value = mma::input_format::e5m2;
};

/// Scratch elements of fa3_query (floats): s[block_n], block scales[nblocks],
/// acc[pv_scratch(block_n, d)], tmp[d], blk[d], tensor-core accumulator[d].
KVQ_HD constexpr std::size_t fa3_scratch(std::size_t n, std::size_t d, std::size_t block_n) {
  return block_n + (n + block_n - 1) / block_n + pv_scratch(block_n, d) + 3 * d;
}

namespace detail {

/// a[0..K) . b[0..K) as chained tensor-core steps starting from c = 0, promoted to an
/// fp32 accumulator every `every` steps (0: never).
KVQ_HD inline float tc_dot(const mma::block_fma_params& p, mma::input_format in, const float* a, const float* b,
                           std::size_t K, std::size_t every) {
  float tc = 0.0f, acc = 0.0f;
  std::size_t steps = 0;
  const std::size_t k = static_cast<std::size_t>(p.k);
  for (std::size_t i = 0; i < K; i += k) {
    const std::size_t len = K - i < k ? K - i : k;
    tc = mma::block_fma_fast(p, in, a + i, b + i, static_cast<int>(len), tc);  // block_fma's bits
    ++steps;
    if (every != 0 && steps % every == 0) {
      acc = acc + tc;
      tc = 0.0f;
    }
  }
  if (every == 0) return tc;
  return (steps % every == 0) ? acc : acc + tc;
}

}  // namespace detail

/// q, K, V hold values of the FP8 format F (decoded to float, exact).
/// Runs FA3's FP8 forward for one query (see the file comment) with configuration c:
/// p_eff receives the n effective weights (doubles), o the d outputs (floats); scratch
/// holds fa3_scratch(n, d, c.block_n) floats; exp2 is the exp2 model.
template <class F, class Exp2 = exp2_ieee>
KVQ_HD inline query_status fa3_query(const float* q, rows_view<float> K, rows_view<float> V, const fa3_config& c,
                                     double* p_eff, float* o, float* scratch, Exp2 exp2 = Exp2{}) {
  query_status st;
  const std::size_t n = K.rows, d = K.cols, bn = c.block_n;
  const std::size_t nb = (n + bn - 1) / bn;
  float* s = scratch;
  float* bscale = s + bn;
  float* acc = bscale + nb;
  float* tmp = acc + pv_scratch(bn, d);
  float* blk = tmp + d;
  float* tcacc = blk + d;  // tensor-core accumulator (tensor_core mode)
  const bool tc = c.accumulation == fa3_accumulation::tensor_core;
  const mma::input_format in = fa3_mma_input<F>::value;
  std::size_t pv_steps = 0;
  const float inf = math::detail::inf_f();
  float m = -inf, row_sum = 0.0f;
  for (std::size_t j = 0; j < d; ++j) o[j] = 0.0f;
  for (std::size_t j = 0; j < d; ++j) tcacc[j] = 0.0f;
  for (std::size_t step = 0; step < nb; ++step) {
    const std::size_t b = c.reverse ? nb - 1 - step : step;
    const std::size_t t0 = b * bn, t1 = (t0 + bn < n) ? t0 + bn : n, len = t1 - t0;
    float bmax = -inf;
    if (!tc) detail::scores<float>(q, rows_view<float>{K.row(t0), len, d, K.stride}, s);
    for (std::size_t i = 0; i < len; ++i) {
      float si = tc ? detail::tc_dot(c.mma, in, q, K.row(t0 + i), d, c.qk_promote_every) : s[i];
      if (c.k_block_descale != nullptr) si = si * c.k_block_descale[b];
      if (c.score_bias != nullptr) si = si + c.score_bias[t0 + i];
      s[i] = si;
      if (!detail::finite(s[i])) st.nonfinite_scores = true;
      bmax = detail::fmax_nan_ignoring(bmax, s[i]);
    }
    float scores_scale = 1.0f;
    if (step == 0) {
      m = bmax;
    } else {
      const float m_prev = m;
      m = detail::fmax_nan_ignoring(m_prev, bmax);
      const float m_cur = (m == -inf) ? 0.0f : m;  // Check_inf
      scores_scale = exp2((m_prev - m_cur) * c.scale_log2);
      row_sum = row_sum * scores_scale;
    }
    bscale[step] = scores_scale;
    const float max_scaled = (m == -inf) ? 0.0f : math::detail::fma_f(m, c.scale_log2, -c.max_offset);
    reduce::tree_accumulator<float> bsum;
    const float vd = c.v_block_descale != nullptr ? c.v_block_descale[b] : 1.0f;
    if (!tc) {
      reduce::tree_vector_accumulator<float> pv(acc, d);
      for (std::size_t i = 0; i < len; ++i) {
        const float P = exp2(math::detail::fma_f(s[i], c.scale_log2, -max_scaled));
        bsum.push(P);
        const float P8 = kvq::decode<F>(kvq::encode<F>(P));
        p_eff[t0 + i] = static_cast<double>(P8);
        pv.push_scaled(P8, V.row(t0 + i), tmp);
      }
      row_sum = row_sum + bsum.result(0.0f);
      pv.result(blk);
      if (c.v_block_descale == nullptr) {
        for (std::size_t j = 0; j < d; ++j) o[j] = o[j] * scores_scale + blk[j];
      } else {
        for (std::size_t j = 0; j < d; ++j) o[j] = o[j] * scores_scale + blk[j] * vd;
      }
    } else {
      for (std::size_t i = 0; i < len; ++i) {
        const float P = exp2(math::detail::fma_f(s[i], c.scale_log2, -max_scaled));
        bsum.push(P);
        const float P8 = kvq::decode<F>(kvq::encode<F>(P));
        p_eff[t0 + i] = static_cast<double>(P8);
        s[i] = P8;  // S of this block is no longer needed
      }
      row_sum = row_sum + bsum.result(0.0f);
      // softmax.rescale_o: both accumulators are rescaled by fp32 multiplies; the
      // tensor-core one is then the c operand of the block's first wgmma.
      for (std::size_t j = 0; j < d; ++j) {
        o[j] = o[j] * scores_scale;
        tcacc[j] = tcacc[j] * scores_scale;
      }
      const std::size_t k = static_cast<std::size_t>(c.mma.k);
      float col[mma::max_block];
      for (std::size_t i0 = 0; i0 < len; i0 += k) {
        const std::size_t m8 = len - i0 < k ? len - i0 : k;
        for (std::size_t j = 0; j < d; ++j) {
          for (std::size_t u = 0; u < m8; ++u) col[u] = V.row(t0 + i0 + u)[j];
          tcacc[j] = mma::block_fma_fast(c.mma, in, s + i0, col, static_cast<int>(m8), tcacc[j]);
        }
        ++pv_steps;
        if (c.pv_promote_every != 0 && pv_steps % c.pv_promote_every == 0 && c.v_block_descale == nullptr) {
          for (std::size_t j = 0; j < d; ++j) {
            o[j] = o[j] + tcacc[j];
            tcacc[j] = 0.0f;
          }
        }
      }
      if (c.v_block_descale != nullptr) {
        for (std::size_t j = 0; j < d; ++j) {
          o[j] = o[j] + tcacc[j] * vd;
          tcacc[j] = 0.0f;
        }
      }
    }
  }
  if (tc) {
    if (c.pv_promote_every == 0 && c.v_block_descale == nullptr) {
      for (std::size_t j = 0; j < d; ++j) o[j] = tcacc[j];
    } else if (c.v_block_descale == nullptr && pv_steps % c.pv_promote_every != 0) {
      for (std::size_t j = 0; j < d; ++j) o[j] = o[j] + tcacc[j];
    }
  }
  const float inv_sum = (row_sum == 0.0f || row_sum != row_sum) ? 0.0f : 1.0f / row_sum;
  const float fscale = inv_sum * c.v_descale;
  for (std::size_t j = 0; j < d; ++j) o[j] = o[j] * fscale;
  // effective weights: P8_t * (product of the later steps' scores_scale) * inv_sum
  double later = 1.0;
  for (std::size_t step = nb; step-- > 0;) {
    const std::size_t b = c.reverse ? nb - 1 - step : step;
    const std::size_t t0 = b * bn, t1 = (t0 + bn < n) ? t0 + bn : n;
    const double f = later * static_cast<double>(inv_sum);
    for (std::size_t t = t0; t < t1; ++t) p_eff[t] = p_eff[t] * f;
    later = later * static_cast<double>(bscale[step]);
  }
  st.nonfinite_output = !detail::all_finite(o, d);
  return st;
}

}  // namespace attention
}  // namespace kvq
