/// \file
/// kvq/study/stats.hpp — small statistics the studies report: Wilson score intervals for
/// rates, and Pareto frontiers.
#pragma once

#include <cmath>
#include <cstddef>
#include <utility>
#include <vector>

namespace kvq::study {

/// Wilson score interval for k successes out of n at z = 1.96 (95 %):
///   center = (p + z^2/2n) / (1 + z^2/n),  half = z/(1 + z^2/n) * sqrt(p(1-p)/n + z^2/4n^2).
/// Unlike the normal approximation it stays inside [0, 1] and is informative at k = 0,
/// where the upper bound is z^2/(n + z^2): to show a rate below 0.2 % one needs n >= 1917.
struct interval {
  double rate;  ///< k / n (NaN when n is 0)
  double low;   ///< lower bound of the 95 % interval
  double high;  ///< upper bound of the 95 % interval
};

/// The Wilson score interval of k successes in n trials at `z` (default: 95 %).
inline interval wilson(std::size_t k, std::size_t n, double z = 1.959963984540054) {
  if (n == 0) return {std::nan(""), 0.0, 1.0};
  const double nn = static_cast<double>(n);
  const double p = static_cast<double>(k) / nn;
  const double z2 = z * z;
  const double denom = 1.0 + z2 / nn;
  const double center = (p + z2 / (2.0 * nn)) / denom;
  const double half = z / denom * std::sqrt(p * (1.0 - p) / nn + z2 / (4.0 * nn * nn));
  double lo = center - half, hi = center + half;
  if (k == 0) lo = 0.0;
  if (k == n) hi = 1.0;
  return {p, lo < 0 ? 0.0 : lo, hi > 1 ? 1.0 : hi};
}

/// Indices of the points on the lower-left Pareto frontier of (cost, loss): no other
/// point has cost <= and loss <= with one of them strictly smaller. Ties keep the first.
inline std::vector<bool> pareto_front(const std::vector<double>& cost, const std::vector<double>& loss) {
  const std::size_t n = cost.size();
  std::vector<bool> on(n, true);
  for (std::size_t i = 0; i < n; ++i) {
    if (!(loss[i] == loss[i])) {  // NaN loss never dominates and is never on the frontier
      on[i] = false;
      continue;
    }
    for (std::size_t j = 0; j < n && on[i]; ++j) {
      if (j == i || !(loss[j] == loss[j])) continue;
      const bool le = cost[j] <= cost[i] && loss[j] <= loss[i];
      const bool lt = cost[j] < cost[i] || loss[j] < loss[i];
      if (le && (lt || j < i)) on[i] = false;
    }
  }
  return on;
}

}  // namespace kvq::study
