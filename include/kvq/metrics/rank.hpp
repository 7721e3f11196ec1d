/// \file
/// kvq/metrics/rank.hpp — rank correlations between a reference distribution p and an
/// emulated one p̂ over the same n keys: Kendall's tau-b and Spearman's rho.
///
/// Both are computed in O(n log n) with exact integer counting, so the result is the
/// same on every backend and for every thread count (the only floating-point steps are
/// the final conversions, two square roots and one division).
///
/// Conventions shared by both:
///  - ties are handled (tau-b corrections, average ranks), -0 and +0 are equal;
///  - a NaN in either input gives NaN; n = 1 or a constant input (all ties) gives NaN,
///    because the coefficient is 0/0 there (scipy.stats does the same);
///  - the result is clipped to [-1, 1] against rounding; the normalisation is a single
///    sqrt(A * B) (sqrt(a * a) == a in IEEE arithmetic, so identical inputs give exactly 1).
#pragma once

#include <cstddef>
#include <cstdint>
#include <iterator>

#include <kvq/config.hpp>
#include <kvq/metrics/detail/check.hpp>
#include <kvq/metrics/detail/math.hpp>
#include <kvq/metrics/detail/sort.hpp>
#include <kvq/metrics/workspace.hpp>

namespace kvq::metrics {

namespace detail {
KVQ_HD inline double clip_unit(double t) { return t > 1.0 ? 1.0 : (t < -1.0 ? -1.0 : t); }

// Sum over runs of equal keys (in sorted order `idx`) of t*(t-1)/2.
template <class Eq>
KVQ_HD inline std::uint64_t tied_pairs(const index_t* idx, std::size_t n, Eq eq) {
  std::uint64_t ties = 0;
  std::size_t first = 0;
  for (std::size_t i = 1; i <= n; ++i) {
    if (i == n || !eq(idx[first], idx[i])) {
      std::uint64_t t = i - first;
      ties += t * (t - 1) / 2;
      first = i;
    }
  }
  return ties;
}
// Kendall's tau-b from its pair counts (n1, n2: pairs tied in x / in y, n3: tied in
// both, nd: discordant pairs); the one final step shared by kendall_tau_b() and the
// evaluation against a prepared reference, so both round alike.
KVQ_HD inline double tau_b_from_counts(std::size_t n, std::uint64_t n1, std::uint64_t n2, std::uint64_t n3,
                                       std::uint64_t nd) {
  const std::uint64_t n0 = static_cast<std::uint64_t>(n) * (n - 1) / 2;
  if (n0 == n1 || n0 == n2) return quiet_nan();
  // n0 - n1 - n2 + n3 - 2 nd, in signed arithmetic (each term < 2^63 for n < 2^32).
  const std::int64_t num = static_cast<std::int64_t>(n0 - n1 - n2 + n3) - 2 * static_cast<std::int64_t>(nd);
  const double t = static_cast<double>(num) / sqrt_d(static_cast<double>(n0 - n1) * static_cast<double>(n0 - n2));
  return clip_unit(t);
}

// Spearman's rho from its exact integer sums (sum a^2, sum b^2, sum a b); shared like
// tau_b_from_counts().
KVQ_HD inline double rho_from_sums(std::uint64_t saa, std::uint64_t sbb, std::int64_t sab) {
  if (saa == 0 || sbb == 0) return quiet_nan();
  const double r = static_cast<double>(sab) / sqrt_d(static_cast<double>(saa) * static_cast<double>(sbb));
  return clip_unit(r);
}
}  // namespace detail

/// Kendall's tau-b:
///   tau_b = (n_c - n_d) / sqrt((n0 - n1) (n0 - n2)),
/// n0 = n(n-1)/2, n1 / n2 = pairs tied in x / in y, n_c / n_d = concordant / discordant
/// pairs (pairs tied in x or y count as neither). Knight's algorithm (JASA 61, 1966):
/// sort by (x, y), count the tie groups, merge-sort by y counting the exchanges
/// (= n_d), count the ties in y; then n_c - n_d = n0 - n1 - n2 + n3 - 2 n_d with n3 the
/// pairs tied in both. The last step is (n_c - n_d) / sqrt(double(n0 - n1) * double(n0 - n2))
/// (one square root, so identical rankings give exactly 1; scipy divides by the two
/// roots in turn and may differ in the last bit). Workspace: a, b (n indices each).
/// NaN when n = 0, n > ws.capacity, an input has a NaN, or x or y is constant (or n = 1).
template <class T, class U>
KVQ_HD inline double kendall_tau_b(const T* x, const U* y, std::size_t n, workspace_view ws) {
  if (n == 0 || n > ws.capacity || detail::any_nan(x, n) || detail::any_nan(y, n)) return detail::quiet_nan();
  index_t* idx = ws.a;
  index_t* tmp = ws.b;
  detail::iota(idx, n);
  detail::merge_sort(idx, tmp, n, [x, y](index_t i, index_t j) {
    return x[i] < x[j] || (x[i] == x[j] && y[i] < y[j]);
  });
  const std::uint64_t n1 = detail::tied_pairs(idx, n, [x](index_t i, index_t j) { return x[i] == x[j]; });
  const std::uint64_t n3 =
      detail::tied_pairs(idx, n, [x, y](index_t i, index_t j) { return x[i] == x[j] && y[i] == y[j]; });
  const std::uint64_t nd = detail::merge_sort(idx, tmp, n, [y](index_t i, index_t j) { return y[i] < y[j]; });
  const std::uint64_t n2 = detail::tied_pairs(idx, n, [y](index_t i, index_t j) { return y[i] == y[j]; });
  return detail::tau_b_from_counts(n, n1, n2, n3, nd);
}

/// Largest n for which spearman_rho's integer sums cannot overflow (n (n-1)^2 < 2^63).
inline constexpr std::size_t spearman_max_n = std::size_t{1} << 21;

/// Spearman's rho: the Pearson correlation of the average ranks (ties share the mean
/// of the ranks they span, 1-based). With a_i = 2 R(x_i) - (n + 1) and
/// b_i = 2 R(y_i) - (n + 1) (integers, because 2 R is an integer),
///   rho = sum a_i b_i / (sqrt(sum a_i^2) sqrt(sum b_i^2)),
/// the sums being exact 64-bit integer sums (n <= spearman_max_n; larger n gives NaN).
/// Workspace: a, b (indices), i64.
/// NaN when n = 0, n > ws.capacity, n > spearman_max_n, an input has a NaN, or x or y is
/// constant (or n = 1).
template <class T, class U>
KVQ_HD inline double spearman_rho(const T* x, const U* y, std::size_t n, workspace_view ws) {
  if (n == 0 || n > ws.capacity || n > spearman_max_n || detail::any_nan(x, n) || detail::any_nan(y, n))
    return detail::quiet_nan();
  index_t* idx = ws.a;
  index_t* tmp = ws.b;
  std::int64_t* a = ws.i64;
  const std::int64_t sn = static_cast<std::int64_t>(n);
  detail::iota(idx, n);
  detail::merge_sort(idx, tmp, n, [x](index_t i, index_t j) { return x[i] < x[j]; });
  std::uint64_t saa = 0;
  for (std::size_t first = 0, i = 1; i <= n; ++i) {
    if (i == n || !(x[idx[first]] == x[idx[i]])) {
      // positions first..i-1 (0-based) hold ranks first+1..i; 2R - (n+1) = first + i - n
      const std::int64_t v = static_cast<std::int64_t>(first + i) - sn;
      for (std::size_t t = first; t < i; ++t) a[idx[t]] = v;
      saa += static_cast<std::uint64_t>((i - first)) * static_cast<std::uint64_t>(v * v);
      first = i;
    }
  }
  detail::iota(idx, n);
  detail::merge_sort(idx, tmp, n, [y](index_t i, index_t j) { return y[i] < y[j]; });
  std::uint64_t sbb = 0;
  std::int64_t sab = 0;
  for (std::size_t first = 0, i = 1; i <= n; ++i) {
    if (i == n || !(y[idx[first]] == y[idx[i]])) {
      const std::int64_t v = static_cast<std::int64_t>(first + i) - sn;
      for (std::size_t t = first; t < i; ++t) sab += a[idx[t]] * v;
      sbb += static_cast<std::uint64_t>((i - first)) * static_cast<std::uint64_t>(v * v);
      first = i;
    }
  }
  return detail::rho_from_sums(saa, sbb, sab);
}

// ---- host entry points: check the arguments, allocate the workspace ----------------

/// Kendall's tau-b of x[0..n) and y[0..n) with a workspace allocated for the call.
/// \throws std::invalid_argument if n = 0, n > 2^32 - 1, or x or y is null.
template <class T, class U>
double kendall_tau_b(const T* x, const U* y, std::size_t n) {
  detail::check_keys("kendall_tau_b", x, y, n);
  workspace w(n);
  return kendall_tau_b(x, y, n, w.view());
}

/// Spearman's rho of x[0..n) and y[0..n) with a workspace allocated for the call.
/// \throws std::invalid_argument if n = 0, n > spearman_max_n, or x or y is null.
template <class T, class U>
double spearman_rho(const T* x, const U* y, std::size_t n) {
  detail::check_keys("spearman_rho", x, y, n);
  if (n > spearman_max_n)
    throw std::invalid_argument("spearman_rho: n = " + std::to_string(n) + " exceeds spearman_max_n = " +
                                std::to_string(spearman_max_n));
  workspace w(n);
  return spearman_rho(x, y, n, w.view());
}

/// Contiguous containers (std::vector, std::array, Eigen vectors with data()/size()).
/// \throws std::invalid_argument if the sizes differ, or as the pointer overload.
template <class CX, class CY>
auto kendall_tau_b(const CX& x, const CY& y) -> decltype(std::data(x), std::data(y), double()) {
  detail::check_same_size("kendall_tau_b", std::size(x), std::size(y));
  return kendall_tau_b(std::data(x), std::data(y), std::size(x));
}

/// spearman_rho() of two contiguous containers of the same size.
/// \throws std::invalid_argument if the sizes differ, or as the pointer overload.
template <class CX, class CY>
auto spearman_rho(const CX& x, const CY& y) -> decltype(std::data(x), std::data(y), double()) {
  detail::check_same_size("spearman_rho", std::size(x), std::size(y));
  return spearman_rho(std::data(x), std::data(y), std::size(x));
}

}  // namespace kvq::metrics
