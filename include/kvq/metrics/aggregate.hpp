/// \file
/// kvq/metrics/aggregate.hpp — summary of one metric over many queries (host only).
///
/// Non-finite values are never averaged in: NaN, +inf and -inf are counted separately
/// and every statistic is taken over the finite values only.
///  - mean: fixed-shape tree sum of the finite values in query order / their count;
///  - min, max, and worst = min when higher is better (tau, rho, recall, cosine), max when
///    lower is better (KL, JS, TV, flips, errors);
///  - quantiles by the linear-interpolation rule (Hyndman & Fan 1996 type 7, numpy's
///    default "linear"): sort the m finite values x_(0) <= ... <= x_(m-1), h = (m - 1) q,
///    Q(q) = x_(floor h) + (h - floor h) (x_(floor h + 1) - x_(floor h)); Q(0) = min,
///    Q(1) = max. The sort uses the IEEE total order, so -0 sorts before +0 and the result
///    does not depend on the sort algorithm.
/// With no finite value, mean/min/max/worst/quantiles are NaN.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <kvq/metrics/detail/math.hpp>
#include <kvq/metrics/detail/sort.hpp>
#include <kvq/metrics/detail/tree_sum.hpp>

namespace kvq::metrics {

/// Direction in which a metric improves; decides which extreme is summary::worst.
enum class better { higher, lower };

/// Statistics of one metric over many queries. Non-finite values are counted, never
/// averaged in: every statistic is taken over the `finite` values only, and is NaN when
/// there is none.
struct summary {
  /// Number of values given, finite or not.
  std::size_t count = 0;    // all values
  /// Number of finite values; the statistics below are taken over these.
  std::size_t finite = 0;   // values the statistics are taken over
  /// Number of NaN values.
  std::size_t nan = 0;
  /// Number of +inf values.
  std::size_t pos_inf = 0;
  /// Number of -inf values.
  std::size_t neg_inf = 0;
  /// Mean of the finite values: fixed-shape tree sum in query order divided by `finite`.
  double mean = 0.0;
  /// Smallest finite value.
  double min = 0.0;
  /// Largest finite value.
  double max = 0.0;
  /// `min` when higher is better, `max` when lower is better.
  double worst = 0.0;
  /// Requested quantile levels q, each in [0, 1], in the order given.
  std::vector<double> levels;     // requested quantile levels q in [0, 1]
  /// Type-7 quantile Q(q) of the finite values for each entry of `levels`.
  std::vector<double> quantiles;  // Q(q) for each level
  /// Number of non-finite values (NaN, +inf and -inf).
  std::size_t nonfinite() const { return nan + pos_inf + neg_inf; }
};

/// Type-7 quantile of sorted finite values x[0..m), m >= 1, q in [0, 1].
/// Linear interpolation between x[floor h] and x[floor h + 1], h = (m - 1) q; no checks.
inline double quantile_sorted(const double* x, std::size_t m, double q) {
  const double h = static_cast<double>(m - 1) * q;
  std::size_t lo = static_cast<std::size_t>(h);  // floor, h >= 0
  if (lo >= m - 1) return x[m - 1];
  const double frac = h - static_cast<double>(lo);
  return x[lo] + frac * (x[lo + 1] - x[lo]);
}

/// Summarises v[0..n): counts the non-finite values and takes mean, min, max, worst and
/// the type-7 quantiles at `levels` over the finite ones (IEEE total order for the sort,
/// so -0 sorts before +0).
/// \throws std::invalid_argument if a level is outside [0, 1] (or NaN), or if v is null
///         while n > 0.
inline summary aggregate(const double* v, std::size_t n, better b,
                         const std::vector<double>& levels = {0.5, 0.9, 0.99}) {
  for (double q : levels)
    if (!(q >= 0.0 && q <= 1.0))
      throw std::invalid_argument("aggregate: quantile level " + std::to_string(q) + " is outside [0, 1]");
  if (n > 0 && v == nullptr) throw std::invalid_argument("aggregate: null input pointer");
  summary s;
  s.count = n;
  s.levels = levels;
  std::vector<double> fin;
  fin.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    const double x = v[i];
    if (x != x)
      ++s.nan;
    else if (!detail::is_finite_d(x))
      ++(x > 0 ? s.pos_inf : s.neg_inf);
    else
      fin.push_back(x);
  }
  s.finite = fin.size();
  if (fin.empty()) {
    s.mean = s.min = s.max = s.worst = detail::quiet_nan();
    s.quantiles.assign(levels.size(), detail::quiet_nan());
    return s;
  }
  s.mean = detail::tree_sum(fin.size(), detail::array_term{fin.data()}) / static_cast<double>(fin.size());
  // IEEE totalOrder on finite values: compare the sign-magnitude bit patterns.
  const auto key = [](double x) {
    const std::uint64_t u = detail::bits_of(x);
    return (u >> 63) ? ~u : (u | 0x8000000000000000ULL);
  };
  std::sort(fin.begin(), fin.end(), [&](double a, double c) { return key(a) < key(c); });
  s.min = fin.front();
  s.max = fin.back();
  s.worst = b == better::higher ? s.min : s.max;
  for (double q : levels) s.quantiles.push_back(quantile_sorted(fin.data(), fin.size(), q));
  return s;
}

/// Summarises the values of `v`; see the pointer overload.
inline summary aggregate(const std::vector<double>& v, better b,
                         const std::vector<double>& levels = {0.5, 0.9, 0.99}) {
  return aggregate(v.data(), v.size(), b, levels);
}

/// Collects one value per query, then summarises.
/// Call add() once per query in query order, then result(); the mean's tree shape depends
/// only on that order.
class aggregator {
 public:
  /// Summaries will use direction `b` and quantile `levels` (checked in result()).
  explicit aggregator(better b, std::vector<double> levels = {0.5, 0.9, 0.99})
      : better_(b), levels_(std::move(levels)) {}
  /// Appends the value of the next query (any value, NaN and infinities included).
  void add(double x) { values_.push_back(x); }
  /// The values added so far, in order.
  const std::vector<double>& values() const { return values_; }
  /// aggregate() of the values added so far.
  /// \throws std::invalid_argument if a quantile level is outside [0, 1].
  summary result() const { return aggregate(values_, better_, levels_); }

 private:
  better better_;
  std::vector<double> levels_;
  std::vector<double> values_;
};

}  // namespace kvq::metrics
