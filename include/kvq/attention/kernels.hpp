// kvq/attention/kernels.hpp — attention for one query over a context, in three
// precisions, as host/device functions on raw rows with caller-supplied scratch (no
// allocation, no exceptions). Memory per query is O(n + d log n): nothing quadratic in
// the context length is ever formed.
//
// Every sum is kvq's fixed pairwise tree (reduce.hpp) and every exponential kvq's own
// (math.hpp), so each kernel gives the same bits on every host, device and thread count.
// Products of float inputs are exact in double; in the float kernels each product is
// rounded to float before the tree sum (a GPU tensor core accumulates in its own order,
// which no CPU reproduces; these kernels define one deterministic order).
//
//  reference_query  double: s_t = (q.k_t) / sqrt(d); p = exp(s - max) / sum; o = sum p_t v_t
//  storage_query    fp32 (or bf16) math on K/V that went through a quantizer:
//                   s_t = fl(q.k_t) * scale; e_t = exp(s_t - max); fp32: p = e / Z, o = sum p v;
//                   bf16: P = bf16(e), o = bf16(fl(sum P v) * (1/Z)) (FlashAttention-2 order)
//  fa3_query        FlashAttention-3 FP8 forward (hopper/softmax.h, mainloop_fwd_sm90_tma_gmma_ws.hpp):
//                   KV blocks of block_n tokens, processed last-to-first (FA3) or first-to-last;
//                   per block: S = q.k (fp32), m = max(m_prev, max S),
//                   scores_scale = exp2((m_prev - m) * scale_log2), row_sum *= scores_scale,
//                   P = exp2(fma(S, scale_log2, -(fma(m, scale_log2, -max_offset)))),
//                   row_sum += sum P, P8 = fp8(P) (rn, satfinite), O = O * scores_scale + P8 . V;
//                   finally O *= (row_sum == 0 or NaN ? 0 : 1 / row_sum) * v_descale.
//                   max_offset = 8 scales P into [0, 256] (FA3's FP8 path: S = 256), 0 gives S = 1.
//                   The two fma's are what nvcc's default contraction makes of FA3's
//                   `x * scale - max_scaled` and `max * scale - max_offset`. The row max uses
//                   fmaxf semantics (a NaN operand is ignored), as CUDA's max does.
//
// Each kernel also writes the effective attention weights p_eff[t] (double): the weight
// with which v_t enters the output, so metrics compare the distribution the kernel really
// used (for fa3_query: P8_t times the later blocks' rescale factors times 1/row_sum, the
// products taken in double).
#pragma once

#include <cstddef>
#include <cstdint>

#include <kvq/config.hpp>
#include <kvq/core/math.hpp>
#include <kvq/core/reduce.hpp>
#include <kvq/core/float16.hpp>
#include <kvq/format/decode.hpp>
#include <kvq/format/encode.hpp>

namespace kvq {
namespace attention {

/// A read-only row-major block of rows x cols with a row stride (in elements).
template <class T>
struct rows_view {
  const T* data = nullptr;
  std::size_t rows = 0, cols = 0, stride = 0;
  KVQ_HD const T* row(std::size_t i) const { return data + i * stride; }
};

struct query_status {
  bool nonfinite_scores = false;  // a NaN or Inf reached the scores
  bool nonfinite_output = false;  // the output row holds a NaN or Inf
};

namespace detail {

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
// The weights alone: p = softmax(q.K^T / sqrt(d)) in double (n doubles); returns whether
// a score was not finite.
KVQ_HD inline bool reference_weights(const float* q, rows_view<float> K, double* p) {
  bool nonfinite = false;
  const std::size_t n = K.rows, d = K.cols;
  const double rsd = math::sqrt(static_cast<double>(d));
  for (std::size_t t = 0; t < n; ++t) {
    p[t] = reduce::tree_dot<double>(q, K.row(t), d) / rsd;
    if (!detail::finite(p[t])) nonfinite = true;
  }
  const double m = reduce::tree_max(p, n);
  for (std::size_t t = 0; t < n; ++t) p[t] = math::exp(p[t] - m);
  const double Z = reduce::tree_sum(p, n);
  for (std::size_t t = 0; t < n; ++t) p[t] = p[t] / Z;
  return nonfinite;
}

// Weights and output. Scratch: acc = pv_scratch(n, d) doubles, tmp = d doubles. p = n
// doubles, o = d doubles.
KVQ_HD inline query_status reference_query(const float* q, rows_view<float> K, rows_view<float> V, double* p,
                                           double* o, double* acc, double* tmp) {
  query_status st;
  const std::size_t d = K.cols, n = K.rows;
  st.nonfinite_scores = reference_weights(q, K, p);
  reduce::tree_vector_accumulator<double> pv(acc, d);
  for (std::size_t t = 0; t < n; ++t) pv.push_scaled(p[t], V.row(t), tmp);
  pv.result(o);
  st.nonfinite_output = !detail::all_finite(o, d);
  return st;
}

// ---------------------------------------------------------------------------
// Storage-only emulation: fp32 (or bf16) math over already dequantized K/V.
// In bf16 mode the caller passes q, K, V already rounded to bf16.
// Scratch: s = n floats, acc = pv_scratch(n, d) floats, tmp = d floats.
// The unnormalised fp32 softmax: s[t] = exp(q.k_t * scale - max) and Z = their tree sum;
// returns whether a score was not finite.
KVQ_HD inline bool storage_softmax(const float* q, rows_view<float> K, float scale, float* s, float& Z) {
  bool nonfinite = false;
  const std::size_t n = K.rows, d = K.cols;
  for (std::size_t t = 0; t < n; ++t) {
    s[t] = reduce::tree_dot<float>(q, K.row(t), d) * scale;
    if (!detail::finite(s[t])) nonfinite = true;
  }
  const float m = reduce::tree_max(s, n);
  for (std::size_t t = 0; t < n; ++t) s[t] = math::exp(s[t] - m);
  Z = reduce::tree_sum(s, n);
  return nonfinite;
}

// The fp32 weights alone, p[t] = s[t] / Z widened to double (scratch s: n floats), as
// storage_query computes them without bf16.
KVQ_HD inline bool storage_weights(const float* q, rows_view<float> K, float scale, float* s, double* p) {
  float Z = 0.0f;
  const bool nonfinite = storage_softmax(q, K, scale, s, Z);
  for (std::size_t t = 0; t < K.rows; ++t) p[t] = static_cast<double>(s[t] / Z);
  return nonfinite;
}

KVQ_HD inline query_status storage_query(const float* q, rows_view<float> K, rows_view<float> V, float scale,
                                         bool bf16, double* p_eff, float* o, float* s, float* acc, float* tmp) {
  query_status st;
  const std::size_t n = K.rows, d = K.cols;
  float Z = 0.0f;
  st.nonfinite_scores = storage_softmax(q, K, scale, s, Z);
  reduce::tree_vector_accumulator<float> pv(acc, d);
  if (!bf16) {
    for (std::size_t t = 0; t < n; ++t) {
      const float pt = s[t] / Z;
      p_eff[t] = static_cast<double>(pt);
      pv.push_scaled(pt, V.row(t), tmp);
    }
    pv.result(o);
  } else {
    const float invZ = 1.0f / Z;
    for (std::size_t t = 0; t < n; ++t) {
      const float pb = round_bf16(s[t]);
      p_eff[t] = static_cast<double>(pb) * static_cast<double>(invZ);
      pv.push_scaled(pb, V.row(t), tmp);
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
  KVQ_HD float operator()(float x) const { return math::exp2(x); }
};

struct fa3_config {
  float scale_log2 = 0.0f;   // softmax_scale * log2(e) * q_descale * k_descale (see fa3.hpp)
  float v_descale = 1.0f;
  float max_offset = 8.0f;   // 8: P in [0, 256] (FA3's FP8 path); 0: P in [0, 1]
  std::size_t block_n = 128;  // kBlockN
  bool reverse = true;       // FA3 iterates the KV blocks from the last to the first
};

/// Scratch elements of fa3_query (floats): s[block_n], block scales[nblocks],
/// acc[pv_scratch(block_n, d)], tmp[d], blk[d].
KVQ_HD constexpr std::size_t fa3_scratch(std::size_t n, std::size_t d, std::size_t block_n) {
  return block_n + (n + block_n - 1) / block_n + pv_scratch(block_n, d) + 2 * d;
}

/// q, K, V hold values of the FP8 format F (decoded to float, exact).
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
  const float inf = math::detail::inf_f();
  float m = -inf, row_sum = 0.0f;
  for (std::size_t j = 0; j < d; ++j) o[j] = 0.0f;
  for (std::size_t step = 0; step < nb; ++step) {
    const std::size_t b = c.reverse ? nb - 1 - step : step;
    const std::size_t t0 = b * bn, t1 = (t0 + bn < n) ? t0 + bn : n, len = t1 - t0;
    float bmax = -inf;
    for (std::size_t i = 0; i < len; ++i) {
      s[i] = reduce::tree_dot<float>(q, K.row(t0 + i), d);
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
    for (std::size_t j = 0; j < d; ++j) o[j] = o[j] * scores_scale + blk[j];
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
