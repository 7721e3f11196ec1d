/// \file
/// kvq/metrics/weighted_tau.hpp — Vigna's weighted Kendall tau with hyperbolic weights,
/// the definition of scipy.stats.weightedtau with its defaults (rank=True,
/// weigher = 1/(r+1), additive=True).
///
/// Definition (S. Vigna, "A weighted correlation index for rankings with ties", WWW
/// 2015). Each element i has a rank r_i (0 = most important) and weight
/// w_i = 1 / (r_i + 1); a pair (i, j) weighs w_i + w_j ("additive"). Then
///   tau_w = sum_{i<j} sgn(x_i - x_j) sgn(y_i - y_j) (w_i + w_j)
///           / ( sqrt(sum_{i<j, x_i != x_j} (w_i + w_j)) * sqrt(sum_{i<j, y_i != y_j} (w_i + w_j)) ).
/// The ranks used by weighted_kendall_tau() are the "decreasing lexicographic" ranks:
/// rank 0 is the element with the largest x, ties in x broken by the larger y, and
/// elements tied in both x and y ranked by decreasing index (exactly what scipy's
/// reversed stable lexsort produces). The result is the mean of tau_w ranked by (x, y)
/// and tau_w ranked by (y, x) — so it is symmetric in its arguments, and the weight
/// falls on the elements that are large in either distribution, i.e. the top of the
/// attention ranking.
///
/// Algorithm: O(n log n) as in Vigna's paper: sort by (x, y), weigh the tie groups,
/// then a merge sort by y that accumulates the weight of the discordant pairs (for a
/// right-run element placed before the remaining left-run elements L:
/// |L| w_r + sum_{l in L} w_l, with the left-run suffix sums precomputed, no
/// subtractive update). Sums run sequentially in the (deterministic) sorted order.
/// The normalisation is one sqrt((tot - u)(tot - v)) (scipy: two roots in turn; the
/// results may differ in the last bit). NaN input, n = 1, or a constant x or y give
/// NaN; the result is clipped to [-1, 1].
#pragma once

#include <cstddef>
#include <cstdint>
#include <iterator>

#include <kvq/config.hpp>
#include <kvq/metrics/detail/check.hpp>
#include <kvq/metrics/detail/math.hpp>
#include <kvq/metrics/detail/sort.hpp>
#include <kvq/metrics/rank.hpp>
#include <kvq/metrics/workspace.hpp>

namespace kvq::metrics {

namespace detail {

KVQ_HD inline double hyperbolic_weight(index_t rank) { return 1.0 / (static_cast<double>(rank) + 1.0); }

// Weight sum over the runs of equal keys (sorted order `idx`) of W_group * (size - 1),
// where W_group is the sum of the group's element weights: the additive weight of the
// pairs inside each group.
template <class Eq>
KVQ_HD inline double tied_weight(const index_t* idx, const index_t* rank, std::size_t n, Eq eq,
                                 std::size_t* groups) {
  double total = 0.0;
  double s = 0.0;
  std::size_t first = 0;
  *groups = 0;
  for (std::size_t i = 0; i <= n; ++i) {
    if (i == n || (i > first && !eq(idx[first], idx[i]))) {
      total += s * static_cast<double>(i - first - 1);
      ++*groups;
      first = i;
      s = 0.0;
    }
    if (i < n) s += hyperbolic_weight(rank[idx[i]]);
  }
  return total;
}

// tau_w of (x, y) with the given ranks, perm holding the keys sorted by (x, y, index)
// (as a stable sort by (x, y) of 0..n-1 leaves them). tmp: index scratch; suffix: double
// scratch. The merge sort by y also counts the exchanges (*inversions: Kendall's
// discordant pairs of the same sequence) and leaves the keys sorted by (y, x, index) in
// *sorted (perm or tmp): the order weighted_kendall_tau's second half starts from. Both
// outputs may be null. The weights are summed in the merge order, so the value depends
// only on the inputs, not on who calls.
template <class T, class U>
KVQ_HD inline double weighted_tau_sorted(const T* x, const U* y, const index_t* rank, std::size_t n, index_t* perm,
                                         index_t* tmp, double* suffix, std::uint64_t* inversions, index_t** sorted) {
  std::size_t gx = 0, gy = 0, gxy = 0;
  const double t = tied_weight(perm, rank, n, [x, y](index_t i, index_t j) { return x[i] == x[j] && y[i] == y[j]; }, &gxy);
  const double u = tied_weight(perm, rank, n, [x](index_t i, index_t j) { return x[i] == x[j]; }, &gx);
  // A constant x gives NaN; the merge still runs so that the outputs are filled.
  const bool x_constant = gx == 1;

  // Merge sort by y, accumulating the weight of the discordant pairs.
  std::uint64_t exchanges = 0;
  double discordant = 0.0;
  index_t* src = perm;
  index_t* dst = tmp;
  for (std::size_t width = 1; width < n; width *= 2) {
    for (std::size_t lo = 0; lo < n; lo += 2 * width) {
      const std::size_t mid = lo + width < n ? lo + width : n;
      const std::size_t hi = lo + 2 * width < n ? lo + 2 * width : n;
      if (mid < hi && y[src[mid]] < y[src[mid - 1]]) {  // some exchange will happen
        double acc = 0.0;
        for (std::size_t i = mid; i-- > lo;) {
          acc = acc + hyperbolic_weight(rank[src[i]]);
          suffix[i] = acc;
        }
      }
      std::size_t i = lo, j = mid, k = lo;
      while (i < mid && j < hi) {
        if (y[src[j]] < y[src[i]]) {
          exchanges += static_cast<std::uint64_t>(mid - i);
          discordant += hyperbolic_weight(rank[src[j]]) * static_cast<double>(mid - i) + suffix[i];
          dst[k++] = src[j++];
        } else {
          dst[k++] = src[i++];
        }
      }
      while (i < mid) dst[k++] = src[i++];
      while (j < hi) dst[k++] = src[j++];
    }
    index_t* sw = src;
    src = dst;
    dst = sw;
  }
  if (inversions) *inversions = exchanges;
  if (sorted) *sorted = src;
  if (x_constant) return quiet_nan();
  const double v = tied_weight(src, rank, n, [y](index_t i, index_t j) { return y[i] == y[j]; }, &gy);
  if (gy == 1) return quiet_nan();
  double s = 0.0;
  for (std::size_t i = 0; i < n; ++i) s += hyperbolic_weight(rank[src[i]]);
  const double tot = s * static_cast<double>(n - 1);
  const double tau = ((tot - (v + u - t)) - 2.0 * discordant) / sqrt_d((tot - u) * (tot - v));
  return clip_unit(tau);
}

// tau_w of (x, y) with the given ranks. perm, tmp: index scratch; suffix: double scratch.
template <class T, class U>
KVQ_HD inline double weighted_tau_ranked(const T* x, const U* y, const index_t* rank, std::size_t n,
                                         index_t* perm, index_t* tmp, double* suffix) {
  iota(perm, n);
  merge_sort(perm, tmp, n, [x, y](index_t i, index_t j) { return x[i] < x[j] || (x[i] == x[j] && y[i] < y[j]); });
  return weighted_tau_sorted(x, y, rank, n, perm, tmp, suffix, nullptr, nullptr);
}

// Decreasing lexicographic rank by (x, y): rank[perm[n-1-i]] = i for perm sorted
// ascending by (x, y), ties in both by increasing index.
template <class T, class U>
KVQ_HD inline void lexicographic_rank(const T* x, const U* y, std::size_t n, index_t* rank, index_t* perm,
                                      index_t* tmp) {
  iota(perm, n);
  merge_sort(perm, tmp, n, [x, y](index_t i, index_t j) { return x[i] < x[j] || (x[i] == x[j] && y[i] < y[j]); });
  for (std::size_t i = 0; i < n; ++i) rank[perm[n - 1 - i]] = static_cast<index_t>(i);
}

}  // namespace detail

/// Weighted tau of (x, y) with caller-given ranks (rank[i] = 0 for the most important
/// element; weights 1/(rank+1)). Matches scipy.stats.weightedtau(x, y, rank=rank).
/// Workspace: a, b (indices), f64.
/// NaN when n = 0, n > ws.capacity or an input has a NaN.
template <class T, class U>
KVQ_HD inline double weighted_kendall_tau_ranked(const T* x, const U* y, const index_t* rank, std::size_t n,
                                                 workspace_view ws) {
  if (n == 0 || n > ws.capacity || detail::any_nan(x, n) || detail::any_nan(y, n)) return detail::quiet_nan();
  return detail::weighted_tau_ranked(x, y, rank, n, ws.a, ws.b, ws.f64);
}

/// The symmetric default: mean of the (x, y)- and (y, x)-ranked values, as
/// scipy.stats.weightedtau(x, y) computes it. Workspace: a, b, c (indices), f64.
/// NaN when n = 0, n > ws.capacity, an input has a NaN, or x or y is constant.
template <class T, class U>
KVQ_HD inline double weighted_kendall_tau(const T* x, const U* y, std::size_t n, workspace_view ws) {
  if (n == 0 || n > ws.capacity || detail::any_nan(x, n) || detail::any_nan(y, n)) return detail::quiet_nan();
  detail::lexicographic_rank(x, y, n, ws.c, ws.a, ws.b);
  const double t1 = detail::weighted_tau_ranked(x, y, ws.c, n, ws.a, ws.b, ws.f64);
  detail::lexicographic_rank(y, x, n, ws.c, ws.a, ws.b);
  const double t2 = detail::weighted_tau_ranked(y, x, ws.c, n, ws.a, ws.b, ws.f64);
  return (t1 + t2) / 2.0;
}

/// weighted_kendall_tau() with a workspace allocated for the call.
/// \throws std::invalid_argument if n = 0, n > 2^32 - 1, or x or y is null.
template <class T, class U>
double weighted_kendall_tau(const T* x, const U* y, std::size_t n) {
  detail::check_keys("weighted_kendall_tau", x, y, n);
  workspace w(n);
  return weighted_kendall_tau(x, y, n, w.view());
}

/// weighted_kendall_tau() of two contiguous containers of the same size.
/// \throws std::invalid_argument if the sizes differ, or as the pointer overload.
template <class CX, class CY>
auto weighted_kendall_tau(const CX& x, const CY& y) -> decltype(std::data(x), std::data(y), double()) {
  detail::check_same_size("weighted_kendall_tau", std::size(x), std::size(y));
  return weighted_kendall_tau(std::data(x), std::data(y), std::size(x));
}

}  // namespace kvq::metrics
