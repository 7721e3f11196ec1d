/// \file
/// kvq/metrics/output.hpp — error of the attention output vector o = P·V of one query:
/// reference o against emulated ô, both of length d.
///
///  - relative L1 = sum |o_i - ô_i| / sum |o_i|   (0/0 -> NaN, x/0 -> +inf);
///  - cosine      = sum o_i ô_i / (sqrt(sum o_i^2) * sqrt(sum ô_i^2))   (a zero vector -> NaN);
///  - RMSE        = sqrt(sum (o_i - ô_i)^2 / d);
///  - nonfinite   = number of entries of ô that are NaN or ±inf (a nosat overflow that
///    reached the output). The three values above are then NaN or inf themselves; the
///    aggregation (kvq/metrics/aggregate.hpp) counts them instead of averaging them in.
/// Computed in double with the fixed-shape tree sums.
#pragma once

#include <cstddef>
#include <iterator>

#include <kvq/config.hpp>
#include <kvq/metrics/detail/check.hpp>
#include <kvq/metrics/detail/math.hpp>
#include <kvq/metrics/detail/sort.hpp>
#include <kvq/metrics/detail/tree_sum.hpp>

namespace kvq::metrics {

/// Error of one query's attention output ô against the reference o (see the file
/// description for the definitions).
struct output_error {
  /// sum |o_i - ô_i| / sum |o_i|; NaN for 0/0, +inf for x/0.
  double relative_l1 = 0.0;
  /// Cosine similarity of o and ô; NaN when either is the zero vector.
  double cosine = 0.0;
  /// sqrt(sum (o_i - ô_i)^2 / d).
  double rmse = 0.0;
  /// Number of entries of ô that are NaN or ±inf.
  std::size_t nonfinite = 0;
};

/// Output error of o (reference) against oh (emulated), both of length d, in double with
/// fixed-shape tree sums. d = 0 gives NaN values.
template <class T, class U>
KVQ_HD inline output_error output_metrics(const T* o, const U* oh, std::size_t d) {
  output_error r;
  if (d == 0) {
    r.relative_l1 = r.cosine = r.rmse = detail::quiet_nan();
    return r;
  }
  for (std::size_t i = 0; i < d; ++i)
    if (!detail::is_finite_d(static_cast<double>(oh[i]))) ++r.nonfinite;
  const auto a = [=](std::size_t i) { return static_cast<double>(o[i]); };
  const auto b = [=](std::size_t i) { return static_cast<double>(oh[i]); };
  const double l1_diff = detail::tree_sum(d, [=](std::size_t i) { return detail::abs_d(a(i) - b(i)); });
  const double l1_ref = detail::tree_sum(d, [=](std::size_t i) { return detail::abs_d(a(i)); });
  const double dot = detail::tree_sum(d, [=](std::size_t i) { return a(i) * b(i); });
  const double aa = detail::tree_sum(d, [=](std::size_t i) { return a(i) * a(i); });
  const double bb = detail::tree_sum(d, [=](std::size_t i) { return b(i) * b(i); });
  const double sq = detail::tree_sum(d, [=](std::size_t i) {
    const double e = a(i) - b(i);
    return e * e;
  });
  r.relative_l1 = l1_diff / l1_ref;  // IEEE: 0/0 = NaN, x/0 = inf
  const double den = detail::sqrt_d(aa) * detail::sqrt_d(bb);
  r.cosine = den == 0.0 ? detail::quiet_nan() : dot / den;
  r.rmse = detail::sqrt_d(sq / static_cast<double>(d));
  return r;
}

/// output_metrics() of two contiguous containers of the same, non-zero size.
/// \throws std::invalid_argument if the sizes differ or are 0.
template <class CO, class CH>
auto output_metrics(const CO& o, const CH& oh) -> decltype(std::data(o), std::data(oh), output_error()) {
  detail::check_same_size("output_metrics", std::size(o), std::size(oh));
  if (std::size(o) == 0) throw std::invalid_argument("output_metrics: empty output vectors (d = 0)");
  return output_metrics(std::data(o), std::data(oh), std::size(o));
}

}  // namespace kvq::metrics
