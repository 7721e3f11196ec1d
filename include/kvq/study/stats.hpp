/// \file
/// kvq/study/stats.hpp — small statistics the studies report: Wilson score intervals for
/// rates, Newcombe's interval for a difference of paired proportions and the sample size
/// of a paired comparison against a margin, Student-t intervals for means (and paired
/// differences), and Pareto frontiers.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <stdexcept>
#include <string>
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

/// A difference of two proportions measured on the same units, with its 95 % interval.
struct paired_difference {
  double diff;  ///< p1 - p2 = (first_only - second_only) / n (NaN when n is 0)
  double low;   ///< lower bound of the 95 % interval (-1 when n is 0)
  double high;  ///< upper bound of the 95 % interval (+1 when n is 0)
};

/// The 95 % interval for p1 - p2 from the paired 2x2 table of n units: `both` units with
/// the event under both conditions, `first_only` under the first only, `second_only`
/// under the second only, `neither` under neither. Newcombe's method 10 (R. G. Newcombe,
/// "Improved confidence intervals for the difference between binomial proportions based
/// on paired data", Statistics in Medicine 17:2635-2650, 1998, section 5): the Wilson
/// intervals (l1, u1), (l2, u2) of the two marginal rates p1 = (both + first_only) / n
/// and p2 = (both + second_only) / n are combined square-and-add, with the correlation
/// phi of the 2x2 table,
///   low  = diff - sqrt((p1 - l1)^2 - 2 phi (p1 - l1)(u2 - p2) + (u2 - p2)^2),
///   high = diff + sqrt((u1 - p1)^2 - 2 phi (u1 - p1)(p2 - l2) + (p2 - l2)^2),
/// where phi = C / sqrt((e+f)(g+h)(e+g)(f+h)) with B = e h - f g and C = B - n/2 when
/// B > n/2, 0 when 0 <= B <= n/2, B when B < 0 (Newcombe's continuity correction of a
/// positive phi), and phi = 0 when a margin is empty. Unlike the Wald interval it stays in
/// [-1, 1] and is informative when a discordant count is 0. Paired units that share the
/// outcome (the concordant pairs) narrow it through phi; the unpaired interval for two
/// independent proportions (Newcombe's method 10 of the companion paper, Stat Med
/// 17:873-890) ignores them and is wider when the outcomes are positively correlated.
/// Throws std::invalid_argument for a z that is not finite and positive.
inline paired_difference newcombe_paired(std::size_t both, std::size_t first_only, std::size_t second_only,
                                         std::size_t neither, double z = 1.959963984540054) {
  if (!(std::isfinite(z) && z > 0))
    throw std::invalid_argument("newcombe_paired: z " + std::to_string(z) + " is not a positive finite number");
  const std::size_t n = both + first_only + second_only + neither;
  if (n == 0) return {std::nan(""), -1.0, 1.0};
  const double nn = static_cast<double>(n);
  const double e = static_cast<double>(both), f = static_cast<double>(first_only),
               g = static_cast<double>(second_only), h = static_cast<double>(neither);
  const interval w1 = wilson(both + first_only, n, z), w2 = wilson(both + second_only, n, z);
  const double p1 = (e + f) / nn, p2 = (e + g) / nn;
  // The products reach 1e20 for 1e5 units: in double, not in size_t.
  const double a = (e + f) * (g + h) * (e + g) * (f + h);
  const double b = e * h - f * g;
  const double c = b > nn / 2 ? b - nn / 2 : (b >= 0 ? 0.0 : b);
  const double phi = a > 0 ? c / std::sqrt(a) : 0.0;
  const double dl1 = p1 - w1.low, du1 = w1.high - p1, dl2 = p2 - w2.low, du2 = w2.high - p2;
  // The radicands are >= (1 - |phi|) (x^2 + y^2) >= 0 up to rounding: clamp the rounding.
  const double dlow = std::sqrt(std::max(0.0, dl1 * dl1 - 2 * phi * dl1 * du2 + du2 * du2));
  const double dhigh = std::sqrt(std::max(0.0, du1 * du1 - 2 * phi * du1 * dl2 + dl2 * dl2));
  const double d = (f - g) / nn;  // = p1 - p2, without the rounding of the two rates
  return {d, std::max(-1.0, d - dlow), std::min(1.0, d + dhigh)};
}

/// The 80 % quantile of the standard normal distribution (the z of 80 % power).
inline constexpr double z_power80 = 0.8416212335729143;

/// The number of paired units for a two-sided 95 % interval of a paired difference to
/// exclude `margin` with the given power (default 80 %) when the true difference is `gap`
/// and the share of discordant units is `discordance` (p10 + p01, with gap = p10 - p01):
///   n = ((z_{0.975} + z_power) sigma / |margin - gap|)^2,  sigma^2 = discordance - gap^2,
/// the variance of one unit's difference (+1, -1 or 0) under the alternative (the normal
/// approximation of the paired test against a non-zero margin, e.g. Nam, Biometrics
/// 53:1422-1430, 1997, with the variance taken at the alternative rather than the
/// restricted estimate at the margin: the two agree to O(margin - gap) here). Infinity when
/// gap equals margin. Throws std::invalid_argument for a discordance outside [|gap|, 1] or
/// non-finite inputs.
inline double paired_units_for_power(double gap, double discordance, double margin, double z_power = z_power80,
                                     double z = 1.959963984540054) {
  if (!std::isfinite(gap) || !std::isfinite(discordance) || !std::isfinite(margin) || !std::isfinite(z_power))
    throw std::invalid_argument("paired_units_for_power: gap, discordance, margin and z_power must be finite");
  if (discordance < std::fabs(gap) || discordance > 1.0)
    throw std::invalid_argument("paired_units_for_power: discordance " + std::to_string(discordance) +
                                " is outside [|gap|, 1] (gap " + std::to_string(gap) + ")");
  if (gap == margin) return std::numeric_limits<double>::infinity();
  const double sd = std::sqrt(discordance - gap * gap);
  const double k = (z + z_power) * sd / std::fabs(margin - gap);
  return k * k;
}

/// P(|T| < t) for Student's t with nu >= 1 degrees of freedom: the finite sums of
/// Abramowitz & Stegun 26.7.3 (nu odd) and 26.7.4 (nu even) in theta = atan(t / sqrt(nu)).
inline double student_t_central(double t, std::size_t nu) {
  const double pi = 3.14159265358979323846;
  const double th = std::atan(t / std::sqrt(static_cast<double>(nu))), c = std::cos(th), c2 = c * c,
               sn = std::sin(th);
  if (nu % 2 == 0) {
    double term = 1.0, sum = 1.0;
    for (std::size_t k = 2; k + 2 <= nu; k += 2) {  // 1·3···(k-1) / (2·4···k) cos^k
      term *= c2 * static_cast<double>(k - 1) / static_cast<double>(k);
      sum += term;
    }
    return sn * sum;
  }
  if (nu == 1) return 2.0 * th / pi;
  double term = 1.0, sum = 1.0;
  for (std::size_t k = 3; k + 2 <= nu; k += 2) {  // 2·4···(k-1) / (1·3···k) cos^(k-1)
    term *= c2 * static_cast<double>(k - 1) / static_cast<double>(k);
    sum += term;
  }
  return 2.0 / pi * (th + sn * c * sum);
}

/// The 97.5 % quantile of Student's t distribution with nu >= 1 degrees of freedom (the
/// factor of a two-sided 95 % interval): Newton's method on student_t_central from the
/// Cornish-Fisher start (A&S 26.7.5), to double precision. nu = 0: NaN.
inline double student_t975(std::size_t nu) {
  if (nu == 0) return std::nan("");
  const double z = 1.959963984540054, z2 = z * z, n = static_cast<double>(nu);
  double t = z + (z2 * z + z) / (4.0 * n) + (5.0 * z2 * z2 * z + 16.0 * z2 * z + 3.0 * z) / (96.0 * n * n);
  if (nu == 1) t = 12.7;
  // d/dt P(|T| < t) = 2 pdf(t); pdf from lgamma
  const double lc = std::lgamma((n + 1.0) / 2.0) - std::lgamma(n / 2.0) - 0.5 * std::log(n * 3.14159265358979323846);
  for (int it = 0; it < 50; ++it) {
    const double f = student_t_central(t, nu) - 0.95;
    const double pdf = std::exp(lc - (n + 1.0) / 2.0 * std::log1p(t * t / n));
    const double step = f / (2.0 * pdf);
    t -= step;
    if (std::fabs(step) <= 1e-15 * t) break;
  }
  return t;
}

/// A mean with its two-sided 95 % Student-t interval.
struct mean_interval {
  double mean;    ///< mean of the finite values (NaN when there are none)
  double low;     ///< mean - t_{0.975, n-1} * s / sqrt(n) (NaN when fewer than 2 values)
  double high;    ///< mean + t_{0.975, n-1} * s / sqrt(n)
  std::size_t n;  ///< finite values used
};

/// The mean of the finite values of v and its 95 % t-interval (s: the sample standard
/// deviation, n - 1 in the denominator). Summed in index order: the same bits on every
/// run. For paired data pass the per-pair differences.
inline mean_interval mean_ci(const std::vector<double>& v) {
  double s = 0;
  std::size_t n = 0;
  for (double x : v)
    if (std::isfinite(x)) s += x, ++n;
  if (n == 0) return {std::nan(""), std::nan(""), std::nan(""), 0};
  const double m = s / static_cast<double>(n);
  if (n == 1) return {m, std::nan(""), std::nan(""), 1};
  double ss = 0;
  for (double x : v)
    if (std::isfinite(x)) ss += (x - m) * (x - m);
  const double half = student_t975(n - 1) * std::sqrt(ss / static_cast<double>(n - 1)) /
                      std::sqrt(static_cast<double>(n));
  return {m, m - half, m + half, n};
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
