/// \file
/// kvq/compact/reference.hpp — the reference (double) attention of queries over a
/// cache with per-key biases, and the effective weights of a compacted cache scattered
/// back onto the original tokens.
///
/// The evaluation order is the contract (so that an independent straightforward
/// implementation reproduces it bit for bit), for one query q and keys k_0..k_{n-1}:
///
///     dot_t = sum_{c=0}^{d-1} double(q_c) * double(k_tc)      (ascending c, no fma)
///     s_t   = dot_t / sqrt(double(d)) + double(beta_t)         (beta_t = 0 without biases)
///     M     = max_t s_t
///     e_t   = exp(s_t - M),   Z = sum_{t=0}^{n-1} e_t           (ascending t)
///     p_t   = e_t / Z
///     o_c   = sum_{t=0}^{n-1} p_t * double(v_tc)               (ascending t)
///
/// exp is the host libm's double exp: this evaluator and the fits are host-side
/// reference procedures in double, not a path that must match a device backend; the
/// float/emulated-precision attention of the attention layer is what kernels match.
#pragma once

#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include <kvq/compact/budget.hpp>
#include <kvq/compact/types.hpp>
#include <kvq/core/math.hpp>

namespace kvq {
namespace compact {

/// Scores s (m x n) of every query against every key, with optional biases (beta
/// empty: none; otherwise one per key), in the contract's order.
/// \throws std::invalid_argument if queries and keys disagree on head_dim, or beta is
///         non-empty with a size other than keys.rows().
inline matrix_d attention_scores(const matrix_f& queries, const matrix_f& keys,
                                   const std::vector<float>& beta = {}) {
  if (queries.cols() != keys.cols())
    throw std::invalid_argument("compact: queries and keys disagree on head_dim (" + std::to_string(queries.cols()) +
                                " vs " + std::to_string(keys.cols()) + ")");
  if (!beta.empty() && static_cast<Eigen::Index>(beta.size()) != keys.rows())
    throw std::invalid_argument("compact: " + std::to_string(beta.size()) + " biases for " +
                                std::to_string(keys.rows()) + " keys");
  const Eigen::Index m = queries.rows(), n = keys.rows(), d = keys.cols();
  const double sqrt_d = std::sqrt(static_cast<double>(d));
  matrix_d s(m, n);
  // Raw row pointers (all three matrices are row-major): the same order as element
  // access, without Eigen's per-element call overhead in unoptimised builds.
  for (Eigen::Index i = 0; i < m; ++i) {
    const float* qi = queries.data() + i * d;
    double* si = s.data() + i * n;
    for (Eigen::Index t = 0; t < n; ++t) {
      const float* kt = keys.data() + t * d;
      double dot = 0.0;
      for (Eigen::Index c = 0; c < d; ++c) dot += static_cast<double>(qi[c]) * static_cast<double>(kt[c]);
      const double b = beta.empty() ? 0.0 : static_cast<double>(beta[static_cast<std::size_t>(t)]);
      si[t] = dot / sqrt_d + b;
    }
  }
  return s;
}

/// Row-wise max of a score matrix (the shift M of the contract).
inline fit_vector row_max(const matrix_d& s) {
  fit_vector mx(s.rows());
  for (Eigen::Index i = 0; i < s.rows(); ++i) {
    double v = s(i, 0);
    for (Eigen::Index t = 1; t < s.cols(); ++t)
      if (s(i, t) > v) v = s(i, t);
    mx(i) = v;
  }
  return mx;
}

/// exp(s - shift_i) row by row (the unnormalised, shifted attention masses).
inline matrix_d shifted_exp(const matrix_d& s, const fit_vector& shift) {
  matrix_d e(s.rows(), s.cols());
  const Eigen::Index n = s.cols();
  for (Eigen::Index i = 0; i < s.rows(); ++i) {
    const double* si = s.data() + i * n;
    double* ei = e.data() + i * n;
    const double sh = shift(i);
    for (Eigen::Index t = 0; t < n; ++t) ei[t] = kvq::math::exp(si[t] - sh);  // kvq's exp: the same bits on every platform
  }
  return e;
}

/// Row sums in ascending column order.
inline fit_vector row_sums(const matrix_d& e) {
  fit_vector z(e.rows());
  for (Eigen::Index i = 0; i < e.rows(); ++i) {
    double acc = 0.0;
    for (Eigen::Index t = 0; t < e.cols(); ++t) acc += e(i, t);
    z(i) = acc;
  }
  return z;
}

/// Softmax weights p (m x n) of a score matrix, in the contract's order.
inline matrix_d softmax_weights(const matrix_d& s) {
  const matrix_d e = shifted_exp(s, row_max(s));
  const fit_vector z = row_sums(e);
  matrix_d p(e.rows(), e.cols());
  for (Eigen::Index i = 0; i < e.rows(); ++i)
    for (Eigen::Index t = 0; t < e.cols(); ++t) p(i, t) = e(i, t) / z(i);
  return p;
}

/// Outputs o = p V (m x d) in ascending token order.
/// \throws std::invalid_argument if p.cols() != values.rows().
inline matrix_d weighted_values(const matrix_d& p, const matrix_f& values) {
  if (p.cols() != values.rows())
    throw std::invalid_argument("compact: " + std::to_string(p.cols()) + " weights per query for " +
                                std::to_string(values.rows()) + " values");
  const Eigen::Index m = p.rows(), n = p.cols(), d = values.cols();
  matrix_d o(m, d);
  for (Eigen::Index i = 0; i < m; ++i) {
    const double* pi = p.data() + i * n;
    for (Eigen::Index c = 0; c < d; ++c) {
      const float* vc = values.data() + c;
      double acc = 0.0;
      for (Eigen::Index t = 0; t < n; ++t) acc += pi[t] * static_cast<double>(vc[t * d]);
      o(i, c) = acc;
    }
  }
  return o;
}

/// Reference attention outputs (m x d) of `queries` over keys/values with optional
/// per-key biases.
/// \throws std::invalid_argument if the cache is empty, K and V disagree or are not
///         finite, or as attention_scores().
inline matrix_d reference_attention(const matrix_f& queries, const matrix_f& keys, const matrix_f& values,
                                      const std::vector<float>& beta = {}) {
  detail::check_cache(keys, values);
  return weighted_values(softmax_weights(attention_scores(queries, keys, beta)), values);
}

/// Reference attention outputs (m x d) of `queries` over a compacted cache.
inline matrix_d compacted_attention(const matrix_f& queries, const compaction_result& c) {
  return reference_attention(queries, c.keys, c.values, c.beta);
}

/// Effective attention weights of `queries` (m x n_original) over a compacted cache,
/// scattered back onto the original token indices; evicted tokens get weight 0, so
/// rank metrics over the original n tokens apply.
/// \throws std::invalid_argument if a kept token is outside [0, n_original), or as
///         attention_scores().
inline matrix_d effective_weights(const matrix_f& queries, const compaction_result& c, Eigen::Index n_original) {
  for (const token_index t : c.kept)
    if (t < 0 || t >= n_original)
      throw std::invalid_argument("compact: kept token " + std::to_string(t) + " outside the original " +
                                  std::to_string(n_original) + " tokens");
  const matrix_d p = softmax_weights(attention_scores(queries, c.keys, c.beta));
  matrix_d w = matrix_d::Zero(queries.rows(), n_original);
  for (Eigen::Index i = 0; i < p.rows(); ++i)
    for (Eigen::Index j = 0; j < p.cols(); ++j) w(i, c.kept[static_cast<std::size_t>(j)]) = p(i, j);
  return w;
}

}  // namespace compact
}  // namespace kvq
