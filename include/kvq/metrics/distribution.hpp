/// \file
/// kvq/metrics/distribution.hpp — distances between the reference distribution p and
/// the emulated p̂ over the same n keys (natural logarithms, i.e. nats).
///
///  - KL(p ‖ p̂) = sum_{p_i > 0} p_i log(p_i / p̂_i). Terms with p_i = 0 are 0. A key with
///    p_i > 0 and p̂_i = 0 makes KL = +inf; such keys are counted (kl_result::infinite_terms)
///    and the sum over the other keys is kept in kl_result::finite_part, so an aggregate
///    can report both without averaging an infinity in. The log of the ratio is computed
///    as log(p_i / p̂_i) when the ratio is a finite normal number, else as
///    log(p_i) - log(p̂_i) (ratios that over- or underflow).
///  - Jensen–Shannon JS = ½ KL(p ‖ m) + ½ KL(p̂ ‖ m), m = (p + p̂)/2 computed as (p_i + p̂_i) * 0.5
///    (exact halving, no underflow to 0 of tiny masses); always finite, at most log 2.
///  - total variation TV = ½ sum |p_i - p̂_i|.
///  - underflow: count of keys with p̂_i = 0 while p_i > 0, the number of keys with
///    p_i > 0, and their ratio (0 when no key has p_i > 0).
/// Inputs are used as given (not renormalised). A NaN or a negative entry in either input
/// gives NaN values (and the counts of what could be counted). All sums use the
/// fixed-shape tree; the logarithm is kvq's own (same bits on every backend).
#pragma once

#include <cstddef>
#include <cstdint>
#include <iterator>

#include <kvq/config.hpp>
#include <kvq/core/math_array.hpp>
#include <kvq/metrics/detail/check.hpp>
#include <kvq/metrics/detail/math.hpp>
#include <kvq/metrics/detail/sort.hpp>
#include <kvq/metrics/detail/tree_sum.hpp>

namespace kvq::metrics {

/// Kullback–Leibler divergence KL(p ‖ p̂) in nats, with its infinite part kept apart.
struct kl_result {
  /// KL(p ‖ p̂); +inf when infinite_terms > 0, NaN when an input has a NaN or negative entry.
  double value = 0.0;               // KL(p ‖ p̂); +inf when infinite_terms > 0
  /// The sum over the keys with p̂_i > 0 (finite even when `value` is +inf).
  double finite_part = 0.0;         // the sum over the keys with p̂_i > 0
  /// Number of keys with p_i > 0 and p̂_i = 0 (each makes KL infinite).
  std::size_t infinite_terms = 0;   // keys with p_i > 0 and p̂_i = 0
};

/// Keys whose emulated probability underflowed to 0 while the reference one is positive.
struct underflow_result {
  /// Number of keys with p̂_i = 0 and p_i > 0.
  std::size_t count = 0;     // keys with p̂_i = 0 and p_i > 0
  /// Number of keys with p_i > 0.
  std::size_t eligible = 0;  // keys with p_i > 0
  /// count / eligible, 0 when eligible = 0.
  double fraction = 0.0;     // count / eligible (0 if eligible = 0)
};

namespace detail {

template <class T>
KVQ_HD inline bool valid_probabilities(const T* x, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i)
    if (!(x[i] >= T(0))) return false;  // false for NaN and negatives
  return true;
}

KVQ_HD inline double pos_inf() { return from_bits(0x7ff0000000000000ULL); }

// log(a / b) for a, b > 0 finite.
KVQ_HD inline double log_ratio(double a, double b) {
  const double r = a / b;
  if (is_finite_d(r) && r >= 2.2250738585072014e-308) return log_d(r);
  return log_d(a) - log_d(b);
}

// out[j] = (a_j == 0 ? 0 : a_j * log_ratio(a_j, b_j)) for j < m, with a_j = a(j) and b_j =
// b(j) (doubles), m <= tree_sum_chunk: the ratios' logarithms by math::log_n (the bits of
// log_d per element), the rare ratio that is not a finite normal number by log_ratio.
// Host only (the device keeps one term at a time).
template <class A, class B>
inline void weighted_log_ratios(std::size_t m, A a, B b, double* out) {
  double r[tree_sum_chunk];
  for (std::size_t j = 0; j < m; ++j) r[j] = a(j) / b(j);
  kvq::math::log_n(r, out, m);
  for (std::size_t j = 0; j < m; ++j) {
    const double aj = a(j);
    if (aj == 0.0)
      out[j] = 0.0;
    else
      out[j] = aj * (is_finite_d(r[j]) && r[j] >= 2.2250738585072014e-308 ? out[j] : log_d(aj) - log_d(b(j)));
  }
}

}  // namespace detail

/// KL(p ‖ p̂) over n keys, p = reference, q = p̂ (emulated), in nats. Terms with p_i = 0
/// are 0; keys with p_i > 0 and q_i = 0 are counted in kl_result::infinite_terms. The log
/// of the ratio is taken as log(p_i / q_i) when that ratio is a finite normal number, else
/// as log(p_i) - log(q_i). Inputs are not renormalised; a NaN or negative entry in either
/// input gives NaN value and finite_part (infinite_terms is still counted).
template <class T, class U>
KVQ_HD inline kl_result kl_divergence(const T* p, const U* q, std::size_t n) {
  kl_result r;
  for (std::size_t i = 0; i < n; ++i)
    if (p[i] > T(0) && q[i] == U(0)) ++r.infinite_terms;
  if (!detail::valid_probabilities(p, n) || !detail::valid_probabilities(q, n)) {
    r.value = r.finite_part = detail::quiet_nan();
    return r;
  }
#if KVQ_DEVICE_PASS
  r.finite_part = detail::tree_sum(n, [=](std::size_t i) {
    const double a = static_cast<double>(p[i]);
    const double b = static_cast<double>(q[i]);
    if (a == 0.0 || b == 0.0) return 0.0;
    return a * detail::log_ratio(a, b);
  });
#else
  // The same terms, a chunk at a time (a zero b makes the term 0 as above).
  r.finite_part = detail::tree_sum_chunked(n, [=](std::size_t i0, std::size_t m, double* out) {
    detail::weighted_log_ratios(
        m,
        [=](std::size_t j) { return static_cast<double>(q[i0 + j]) == 0.0 ? 0.0 : static_cast<double>(p[i0 + j]); },
        [=](std::size_t j) { return static_cast<double>(q[i0 + j]); }, out);
  });
#endif
  r.value = r.infinite_terms > 0 ? detail::pos_inf() : r.finite_part;
  return r;
}

/// Jensen–Shannon divergence ½ KL(p ‖ m) + ½ KL(q ‖ m), m_i = (p_i + q_i) * 0.5, in nats:
/// finite and at most log 2 for valid inputs; NaN when either input has a NaN or negative
/// entry.
template <class T, class U>
KVQ_HD inline double js_divergence(const T* p, const U* q, std::size_t n) {
  if (!detail::valid_probabilities(p, n) || !detail::valid_probabilities(q, n)) return detail::quiet_nan();
#if KVQ_DEVICE_PASS
  const auto term = [](double a, double m) { return a == 0.0 ? 0.0 : a * detail::log_ratio(a, m); };
  const double kp = detail::tree_sum(n, [=](std::size_t i) {
    const double a = static_cast<double>(p[i]);
    const double b = static_cast<double>(q[i]);
    return term(a, (a + b) * 0.5);
  });
  const double kq = detail::tree_sum(n, [=](std::size_t i) {
    const double a = static_cast<double>(p[i]);
    const double b = static_cast<double>(q[i]);
    return term(b, (a + b) * 0.5);
  });
#else
  // The same terms, a chunk at a time.
  const auto mid = [=](std::size_t i) { return (static_cast<double>(p[i]) + static_cast<double>(q[i])) * 0.5; };
  const double kp = detail::tree_sum_chunked(n, [=](std::size_t i0, std::size_t m, double* out) {
    detail::weighted_log_ratios(
        m, [=](std::size_t j) { return static_cast<double>(p[i0 + j]); }, [=](std::size_t j) { return mid(i0 + j); },
        out);
  });
  const double kq = detail::tree_sum_chunked(n, [=](std::size_t i0, std::size_t m, double* out) {
    detail::weighted_log_ratios(
        m, [=](std::size_t j) { return static_cast<double>(q[i0 + j]); }, [=](std::size_t j) { return mid(i0 + j); },
        out);
  });
#endif
  return 0.5 * kp + 0.5 * kq;
}

/// Total variation ½ sum |p_i - q_i| (fixed-shape tree sum); NaN when either input has a
/// NaN.
template <class T, class U>
KVQ_HD inline double total_variation(const T* p, const U* q, std::size_t n) {
  if (detail::any_nan(p, n) || detail::any_nan(q, n)) return detail::quiet_nan();
  return 0.5 * detail::tree_sum(n, [=](std::size_t i) {
    return detail::abs_d(static_cast<double>(p[i]) - static_cast<double>(q[i]));
  });
}

/// Counts the keys with p_i > 0 (eligible) and among them those with q_i = 0.
template <class T, class U>
KVQ_HD inline underflow_result underflow(const T* p, const U* q, std::size_t n) {
  underflow_result r;
  for (std::size_t i = 0; i < n; ++i) {
    if (p[i] > T(0)) {
      ++r.eligible;
      if (q[i] == U(0)) ++r.count;
    }
  }
  r.fraction = r.eligible == 0 ? 0.0 : static_cast<double>(r.count) / static_cast<double>(r.eligible);
  return r;
}

// ---- host entry points for contiguous containers (check the sizes) --------------------

/// kl_divergence() of two contiguous containers of the same size.
/// \throws std::invalid_argument if the sizes differ.
template <class CP, class CQ>
auto kl_divergence(const CP& p, const CQ& q) -> decltype(std::data(p), std::data(q), kl_result()) {
  detail::check_same_size("kl_divergence", std::size(p), std::size(q));
  return kl_divergence(std::data(p), std::data(q), std::size(p));
}

/// js_divergence() of two contiguous containers of the same size.
/// \throws std::invalid_argument if the sizes differ.
template <class CP, class CQ>
auto js_divergence(const CP& p, const CQ& q) -> decltype(std::data(p), std::data(q), double()) {
  detail::check_same_size("js_divergence", std::size(p), std::size(q));
  return js_divergence(std::data(p), std::data(q), std::size(p));
}

/// total_variation() of two contiguous containers of the same size.
/// \throws std::invalid_argument if the sizes differ.
template <class CP, class CQ>
auto total_variation(const CP& p, const CQ& q) -> decltype(std::data(p), std::data(q), double()) {
  detail::check_same_size("total_variation", std::size(p), std::size(q));
  return total_variation(std::data(p), std::data(q), std::size(p));
}

/// underflow() of two contiguous containers of the same size.
/// \throws std::invalid_argument if the sizes differ.
template <class CP, class CQ>
auto underflow(const CP& p, const CQ& q) -> decltype(std::data(p), std::data(q), underflow_result()) {
  detail::check_same_size("underflow", std::size(p), std::size(q));
  return underflow(std::data(p), std::data(q), std::size(p));
}

}  // namespace kvq::metrics
