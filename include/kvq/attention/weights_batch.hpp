/// \file
/// kvq/attention/weights_batch.hpp — the attention weights of a batch of queries over one
/// context, bit for bit reference_weights / storage_weights of each query
/// (kvq/attention/kernels.hpp), at the speed of the batched kernels. Host only.
///
/// The per-query kernels are what every backend runs; these are what a study runs when it
/// needs the whole weight vector of many queries on the same keys (rank metrics, top-k
/// tests). Each step is the per-query kernel's step with the same operation per element:
/// ~~~
///   scores   reduce::tree_dot_block (the batch shares each pass over K; same tree per pair)
///   scale    the same division (reference) or multiply (fp32) per element, then the bias
///   max      reduce::tree_max_blocked (the same tree)
///   exp      math::exp_n (the same bits as math::exp per element)
///   sum      reduce::tree_sum_blocked (the same tree)
///   divide   the same division per element
/// ~~~
/// so the bits cannot differ (tests/attention/test_weights_batch.cpp checks them against
/// the per-query kernels on contexts with ties, NaN, infinities and biases).
#pragma once

#include <cstddef>
#include <cstdint>

#include <kvq/attention/kernels.hpp>
#include <kvq/core/dot_block.hpp>
#include <kvq/core/math_array.hpp>

namespace kvq {
namespace attention {

/// Steps 1-2 of reference_weights_batch: p[v * K.rows + t] = the logit q_v.k_t / sqrt(d)
/// (+ bias[t]) of every pair, in double; nonfinite (n_q bools, or nullptr): whether a
/// query's logits hold an infinity or NaN.
inline void reference_logits_batch(const float* q, std::size_t q_stride, std::size_t n_q, rows_view<float> K,
                                   double* p, bool* nonfinite = nullptr, const float* bias = nullptr) {
  const std::size_t n = K.rows, d = K.cols;
  reduce::tree_dot_block<double>(q, q_stride, n_q, K.data, K.stride, n, d, p, n);
  const double rsd = math::sqrt(static_cast<double>(d));
  for (std::size_t v = 0; v < n_q; ++v) {
    double* pv = p + v * n;
    bool bad = false;
    for (std::size_t t = 0; t < n; ++t) {
      double x = pv[t] / rsd;
      if (bias != nullptr) x = x + static_cast<double>(bias[t]);
      bad = bad | !detail::finite(x);
      pv[t] = x;
    }
    if (nonfinite != nullptr) nonfinite[v] = bad;
  }
}

/// Steps 3-6 of reference_weights_batch for one query: the logits pv[0..n) replaced by
/// their softmax (max, subtract, exp, sum, divide).
inline void reference_softmax_row(double* pv, std::size_t n) {
  const double m = reduce::tree_max_blocked(pv, n);
  for (std::size_t t = 0; t < n; ++t) pv[t] = pv[t] - m;
  math::exp_n(pv, pv, n);
  const double Z = reduce::tree_sum_blocked(pv, n);
  for (std::size_t t = 0; t < n; ++t) pv[t] = pv[t] / Z;
}

/// For queries v in [0, n_q) (row v of q at q + v * q_stride, K.cols elements):
/// p[v * K.rows .. + K.rows) = reference_weights(q_v, K, ., bias), bit for bit. p: n_q *
/// K.rows doubles; nonfinite (n_q bools, or nullptr): what reference_weights returned.
inline void reference_weights_batch(const float* q, std::size_t q_stride, std::size_t n_q, rows_view<float> K,
                                    double* p, bool* nonfinite = nullptr, const float* bias = nullptr) {
  reference_logits_batch(q, q_stride, n_q, K, p, nonfinite, bias);
  for (std::size_t v = 0; v < n_q; ++v) reference_softmax_row(p + v * K.rows, K.rows);
}

/// Steps 1-2 of storage_weights_batch: s[v * K.rows + t] = the fp32 logit (q_v.k_t) *
/// scale (+ bias[t]) of every pair; nonfinite as in reference_logits_batch.
inline void storage_logits_batch(const float* q, std::size_t q_stride, std::size_t n_q, rows_view<float> K,
                                 float scale, float* s, bool* nonfinite = nullptr, const float* bias = nullptr) {
  const std::size_t n = K.rows, d = K.cols;
  reduce::tree_dot_block<float>(q, q_stride, n_q, K.data, K.stride, n, d, s, n);
  for (std::size_t v = 0; v < n_q; ++v) {
    float* sv = s + v * n;
    bool bad = false;
    for (std::size_t t = 0; t < n; ++t) {
      float x = sv[t] * scale;
      if (bias != nullptr) x = x + bias[t];
      bad = bad | !detail::finite(x);
      sv[t] = x;
    }
    if (nonfinite != nullptr) nonfinite[v] = bad;
  }
}

/// Steps 3-6 of storage_weights_batch for one query: the softmax of the fp32 logits
/// sv[0..n) (sv is overwritten), widened to double into pv[0..n).
inline void storage_softmax_row(float* sv, std::size_t n, double* pv) {
  const float m = reduce::tree_max_blocked(sv, n);
  for (std::size_t t = 0; t < n; ++t) sv[t] = sv[t] - m;
  math::exp_n(sv, sv, n);
  const float Z = reduce::tree_sum_blocked(sv, n);
  for (std::size_t t = 0; t < n; ++t) pv[t] = static_cast<double>(sv[t] / Z);
}

/// For queries v in [0, n_q): p[v * K.rows .. + K.rows) = storage_weights(q_v, K, scale,
/// ., ., bias), bit for bit (the fp32 scores, softmax and division, widened to double).
/// s: n_q * K.rows floats of scratch; p: n_q * K.rows doubles; nonfinite: n_q bools or
/// nullptr.
inline void storage_weights_batch(const float* q, std::size_t q_stride, std::size_t n_q, rows_view<float> K,
                                  float scale, float* s, double* p, bool* nonfinite = nullptr,
                                  const float* bias = nullptr) {
  storage_logits_batch(q, q_stride, n_q, K, scale, s, nonfinite, bias);
  for (std::size_t v = 0; v < n_q; ++v) storage_softmax_row(s + v * K.rows, K.rows, p + v * K.rows);
}

namespace detail {

/// The P.V of a batch of queries over prefixes of the same V: query v pushes rows
/// 0 .. keys[v] - 1, each scaled by weight(v, t), into its own accumulator (storage
/// acc + v * levels, levels >= pv_scratch(keys[v], V.cols)), rows t and t + 1 together
/// (push_scaled_pair) while they are in cache for the whole batch. The pushes of each
/// query are those of its own loop over t, so its sums have the same bits. weight(v, t)
/// is called once per pair, in increasing t for each query. tmp: V.cols elements.
template <class T, class Weight>
inline void pv_batch(std::size_t n_q, const std::size_t* keys, rows_view<float> V, std::size_t n, T* acc,
                     std::size_t levels, T* tmp, Weight&& weight) {
  const std::size_t d = V.cols;
  for (std::size_t t = 0; t < n; t += 2) {
    const float* v0 = V.row(t);
    for (std::size_t v = 0; v < n_q; ++v) {
      const std::size_t nv = keys[v];
      if (t >= nv) continue;
      // The accumulator is its storage and its count, which is t here (rows 0 .. t - 1 pushed).
      reduce::tree_vector_accumulator<T> pv(acc + v * levels, d);
      pv.count = t;
      const T w0 = weight(v, t);
      if (t + 1 < nv) {
        const T w1 = weight(v, t + 1);
        pv.push_scaled_pair(w0, v0, w1, V.row(t + 1), tmp);
      } else {
        pv.push_scaled(w0, v0, tmp);
      }
    }
  }
}

/// The result of query v's accumulator after pv_batch: its keys[v] rows' column sums.
template <class T>
inline void pv_batch_result(T* acc, std::size_t d, std::size_t rows, T* out) {
  reduce::tree_vector_accumulator<T> pv(acc, d);
  pv.count = rows;
  pv.result(out);
}

}  // namespace detail

/// storage_query (kvq/attention/kernels.hpp) of n_q queries over prefixes of the same
/// stored K and V, bit for bit each query's own call: query v (row v of q at
/// q + v * q_stride, as storage_query takes it: rotated, quantized, bf16-rounded already)
/// attends to the first keys[v] rows (1 <= keys[v] <= K.rows, V.rows >= K.rows); its
/// effective weights go to p + v * p_stride (keys[v] doubles), its outputs to
/// o + v * o_stride (d floats), its status to st[v].
///   - scores: reduce::tree_dot_block over all K.rows rows (a pair's tree does not depend
///     on the other pairs, so the rows past a query's prefix are scored and not used);
///   - softmax: storage_softmax's operations over each query's prefix (the blocked max and
///     sum are the same trees, exp_n is math::exp per element);
///   - P.V: rows t and t + 1 of V are pushed (push_scaled_pair) into every query still
///     attending at t while they are in cache, each query into its own accumulator, in
///     its own row order.
/// So K and V are read once per batch rather than once per query. bias: K.rows floats or
/// nullptr. Scratch: s = n_q * K.rows floats, acc = n_q * pv_scratch(K.rows, d) floats,
/// tmp = d floats, Z = n_q floats.
inline void storage_query_batch(const float* q, std::size_t q_stride, std::size_t n_q, const std::size_t* keys,
                                rows_view<float> K, rows_view<float> V, float scale, bool bf16, double* p,
                                std::size_t p_stride, float* o, std::size_t o_stride, query_status* st, float* s,
                                float* acc, float* tmp, float* Z, const float* bias = nullptr) {
  const std::size_t n = K.rows, d = K.cols, levels = pv_scratch(n, d);
  reduce::tree_dot_block<float>(q, q_stride, n_q, K.data, K.stride, n, d, s, n);
  for (std::size_t v = 0; v < n_q; ++v) {
    float* sv = s + v * n;
    const std::size_t nv = keys[v];
    bool bad = false;
    for (std::size_t t = 0; t < nv; ++t) {
      float x = sv[t] * scale;
      if (bias != nullptr) x = x + bias[t];
      bad = bad | !detail::finite(x);
      sv[t] = x;
    }
    st[v] = query_status{};
    st[v].nonfinite_scores = bad;
    const float m = reduce::tree_max_blocked(sv, nv);
    for (std::size_t t = 0; t < nv; ++t) sv[t] = sv[t] - m;
    math::exp_n(sv, sv, nv);
    Z[v] = reduce::tree_sum_blocked(sv, nv);
    if (bf16) Z[v] = 1.0f / Z[v];  // storage_query's invZ
  }
  detail::pv_batch<float>(n_q, keys, V, n, acc, levels, tmp, [&](std::size_t v, std::size_t t) {
    const float* sv = s + v * n;
    double* pvv = p + v * p_stride;
    if (!bf16) {
      const float w = sv[t] / Z[v];
      pvv[t] = static_cast<double>(w);
      return w;
    }
    const float w = round_bf16(sv[t]);
    pvv[t] = static_cast<double>(w) * static_cast<double>(Z[v]);
    return w;
  });
  for (std::size_t v = 0; v < n_q; ++v) {
    float* ov = o + v * o_stride;
    detail::pv_batch_result(acc + v * levels, d, keys[v], ov);
    if (bf16)
      for (std::size_t c = 0; c < d; ++c) ov[c] = round_bf16(ov[c] * Z[v]);
    st[v].nonfinite_output = !detail::all_finite(ov, d);
  }
}

/// reference_query (kvq/attention/kernels.hpp) of n_q queries over prefixes of the same K
/// and V, bit for bit each query's own call, as storage_query_batch does for the fp32
/// path: query v (row v of q at q + v * q_stride) attends to the first keys[v] rows
/// (1 <= keys[v] <= K.rows, V.rows >= K.rows); its weights go to p + v * p_stride
/// (keys[v] doubles), its outputs to o + v * o_stride (d doubles), its status to st[v].
/// Scores by reduce::tree_dot_block in double, reference_weights' steps over each prefix
/// (reference_softmax_row), the P.V of the batch row by row (detail::pv_batch).
/// Scratch: s = n_q * K.rows doubles, acc = n_q * pv_scratch(K.rows, d) doubles, tmp = d
/// doubles; bias: K.rows floats or nullptr.
inline void reference_query_batch(const float* q, std::size_t q_stride, std::size_t n_q, const std::size_t* keys,
                                  rows_view<float> K, rows_view<float> V, double* p, std::size_t p_stride, double* o,
                                  std::size_t o_stride, query_status* st, double* s, double* acc, double* tmp,
                                  const float* bias = nullptr) {
  const std::size_t n = K.rows, d = K.cols, levels = pv_scratch(n, d);
  reduce::tree_dot_block<double>(q, q_stride, n_q, K.data, K.stride, n, d, s, n);
  const double rsd = math::sqrt(static_cast<double>(d));
  for (std::size_t v = 0; v < n_q; ++v) {
    double* sv = s + v * n;
    const std::size_t nv = keys[v];
    bool bad = false;
    for (std::size_t t = 0; t < nv; ++t) {
      double x = sv[t] / rsd;
      if (bias != nullptr) x = x + static_cast<double>(bias[t]);
      bad = bad | !detail::finite(x);
      sv[t] = x;
    }
    st[v] = query_status{};
    st[v].nonfinite_scores = bad;
    reference_softmax_row(sv, nv);
    double* pv = p + v * p_stride;
    for (std::size_t t = 0; t < nv; ++t) pv[t] = sv[t];
  }
  detail::pv_batch<double>(n_q, keys, V, n, acc, levels, tmp,
                           [&](std::size_t v, std::size_t t) { return s[v * n + t]; });
  for (std::size_t v = 0; v < n_q; ++v) {
    double* ov = o + v * o_stride;
    detail::pv_batch_result(acc + v * levels, d, keys[v], ov);
    st[v].nonfinite_output = !detail::all_finite(ov, d);
  }
}

}  // namespace attention
}  // namespace kvq
